/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Strict mode: a breach of the hardware protocol by a driver is what real
 * hardware would answer with undefined behaviour, a silent hang or a
 * catastrophic error.  Here each one is logged, naming the process and the
 * object, and counted; `mlx4sim run` fails when any occurred.
 */
#include <stdarg.h>
#include <stdio.h>

#include "sim.h"

static void vlog(const char *tag, const char *fmt, va_list ap)
{
	fprintf(stderr, "mlx4sim: %s", tag);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void sim_log(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog("", fmt, ap);
	va_end(ap);
}

void breach(struct sim_ctx *ctx, const char *fmt, ...)
{
	char tag[64];
	va_list ap;

	sim.breaches++;
	if (!sim.opt.strict)
		return;
	snprintf(tag, sizeof(tag), "strict: pid %d: ", ctx ? (int)ctx->pid : 0);
	va_start(ap, fmt);
	vlog(tag, fmt, ap);
	va_end(ap);
}
