/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What every layer of the simulator shares: its state (one struct, as a
 * device model keeps it), the clock it runs on and its log.  Nothing here
 * calls into a layer.
 */
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "sim.h"

struct sim sim;

uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

void sim_vlog(const char *tag, const char *fmt, va_list ap)
{
	fprintf(stderr, "mlx4sim: %s", tag);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void sim_log(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	sim_vlog("", fmt, ap);
	va_end(ap);
}
