/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Named cases for the TAP test programs: a table of cases, each a name,
 * a function and a line saying what it checks.  With no argument a
 * program runs them all, in the table's order; "PROG --list" prints the
 * names, one a line; "PROG NAME [NAME...]" runs only those (in the
 * table's order, each once); "PROG --help" says so and lists them with
 * what they check.  An unknown name or option is a message on stderr and
 * exit status 2, before anything runs.
 *
 *	static const struct test_case cases[] = {
 *		{ "rc_send", test_rc_send, "an RC SEND's WQE and doorbell" },
 *		...
 *	};
 *
 *	int main(int argc, char **argv)
 *	{
 *		int ret = cases_select(cases, CASES_N(cases), argc, argv, 1);
 *
 *		if (ret >= 0)
 *			return ret;
 *		...set-up...
 *		cases_run(cases, CASES_N(cases));
 *		...tear-down...
 *		return tap_finish();
 *	}
 *
 * A program with arguments of its own (a provider, --post-checks) passes
 * the index of the first argument after them.  A case may be a row of
 * the program's own table (a scenario, a rule): its run is NULL, and
 * run_row is called with the row,
 *
 *		{ "rc_send_lost", NULL, "an RC SEND lost once", send_case,
 *		  &rc_send_lost },
 *
 * and a table whose rows have names can be turned into cases at run time.  The TAP lines of a full run are the program's own:
 * the runner adds none, so a case run alone prints its checks numbered
 * from 1 and the plan after them.
 */
#ifndef TESTS_CASES_H
#define TESTS_CASES_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"

struct test_case {
	const char *name;
	void (*run)(void);
	const char *what;	/* one line: what the case checks */
	/* Or, when run is NULL, a row of the program's table: run_row(row). */
	void (*run_row)(const void *row);
	const void *row;
};

#define CASES_N(table) (sizeof(table) / sizeof((table)[0]))

/* Which cases run: NULL for all of them, else one flag a case. */
static unsigned char *cases_chosen;

static inline const char *cases_prog(const char *argv0)
{
	const char *slash = argv0 ? strrchr(argv0, '/') : NULL;

	return slash ? slash + 1 : argv0 ? argv0 : "test";
}

/*
 * @argc and @argv are main()'s; the names, or --list, start at
 * argv[@first], after the program's own arguments.  Returns -1 when the
 * program is to go on and run the chosen cases, else the status to exit
 * with: 0 after --list or --help, 2 for an unknown name or option.
 */
static inline int cases_select(const struct test_case *cases, size_t n,
			       int argc, char **argv, int first)
{
	const char *prog = cases_prog(argc > 0 ? argv[0] : NULL);
	size_t i;
	int a;

	argc -= first;
	argv += first;

	cases_chosen = NULL;
	if (argc == 1 && !strcmp(argv[0], "--list")) {
		for (i = 0; i < n; i++)
			printf("%s\n", cases[i].name);
		return 0;
	}
	if (argc == 1 && (!strcmp(argv[0], "--help") || !strcmp(argv[0], "-h"))) {
		printf("usage: %s [--list | NAME...]\n"
		       "With no NAME, every case in this order; "
		       "with names, only those:\n", prog);
		for (i = 0; i < n; i++)
			printf("  %-28s %s\n", cases[i].name,
			       cases[i].what ? cases[i].what : "");
		return 0;
	}
	if (argc <= 0)
		return -1;
	cases_chosen = calloc(n, 1);
	if (!cases_chosen) {
		fprintf(stderr, "%s: out of memory\n", prog);
		return 2;
	}
	for (a = 0; a < argc; a++) {
		for (i = 0; i < n && strcmp(cases[i].name, argv[a]); i++)
			;
		if (i == n) {
			if (!strcmp(argv[a], "--list") ||
			    !strcmp(argv[a], "--help") || !strcmp(argv[a], "-h"))
				fprintf(stderr, "%s: %s is the only argument "
					"when given\n", prog, argv[a]);
			else if (argv[a][0] == '-')
				fprintf(stderr, "%s: unknown option '%s' "
					"(%s --help says what it takes)\n",
					prog, argv[a], prog);
			else
				fprintf(stderr, "%s: no case named '%s' "
					"(%s --list names them)\n",
					prog, argv[a], prog);
			free(cases_chosen);
			cases_chosen = NULL;
			return 2;
		}
		cases_chosen[i] = 1;
	}
	return -1;
}

/* Whether case @i of the table runs (cases_select chose it, or all run). */
static inline int case_chosen(size_t i)
{
	return !cases_chosen || cases_chosen[i];
}

/* The chosen cases, in the table's order. */
static inline void cases_run(const struct test_case *cases, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (!case_chosen(i))
			continue;
		if (cases[i].run)
			cases[i].run();
		else
			cases[i].run_row(cases[i].row);
	}
	free(cases_chosen);
	cases_chosen = NULL;
}

#endif
