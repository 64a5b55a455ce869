/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * TAP output for the test programs that run on a device: one line per
 * check, the plan at the end (tap_finish), "Bail out!" when set-up fails.
 */
#ifndef TESTS_TAP_H
#define TESTS_TAP_H

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int tap_count, tap_failures;

static inline __attribute__((format(printf, 2, 3)))
void check(int ok, const char *fmt, ...)
{
	va_list ap;

	printf("%sok %d - ", ok ? "" : "not ", ++tap_count);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
	tap_failures += !ok;
}

static inline __attribute__((noreturn)) void bail(const char *what)
{
	printf("Bail out! %s: %s\n", what, strerror(errno));
	exit(1);
}

/* The plan, and the exit status. */
static inline int tap_finish(void)
{
	printf("1..%d\n", tap_count);
	return tap_failures ? 1 : 0;
}

#endif
