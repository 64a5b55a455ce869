/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * TAP output for the test programs, on a device or not: one line per
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

/* One TAP line: "ok N - " or "not ok N - ", then @fmt. */
static inline void tap_line(int ok, const char *fmt, va_list ap)
{
	printf("%sok %d - ", ok ? "" : "not ", ++tap_count);
	vprintf(fmt, ap);
	putchar('\n');
	tap_failures += !ok;
}

static inline __attribute__((format(printf, 2, 3)))
void check(int ok, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	tap_line(ok, fmt, ap);
	va_end(ap);
	fflush(stdout);
}

static inline __attribute__((noreturn)) void bail(const char *what)
{
	printf("Bail out! %s: %s\n", what, strerror(errno));
	exit(1);
}

/*
 * A check that, failing, also names its condition and where it is:
 * CHECK(cond, "what it checks, or saw: %d", value).
 */
#define CHECK(cond, ...) \
	check_at(!!(cond), __FILE__, __LINE__, #cond, __VA_ARGS__)

static inline __attribute__((format(printf, 5, 6)))
void check_at(int ok, const char *file, int line, const char *cond,
	      const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	tap_line(ok, fmt, ap);
	va_end(ap);
	if (!ok)
		printf("# %s:%d: %s\n", file, line, cond);
	fflush(stdout);
}

/* The plan, and the exit status. */
static inline int tap_finish(void)
{
	printf("1..%d\n", tap_count);
	return tap_failures ? 1 : 0;
}

#endif
