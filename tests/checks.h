/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Counted checks for the provider's programs on the simulator: a failing
 * check prints its line and what it saw; the program ends with a line
 * "N passed, N failed" that tests/provider-verbs.sh adds up.
 */
#ifndef TESTS_CHECKS_H
#define TESTS_CHECKS_H

#include <stdio.h>

static int passed, failed;

#define CHECK(cond, ...) do {						\
	if (cond) {							\
		passed++;						\
	} else {							\
		failed++;						\
		printf("FAIL line %d: %s: ", __LINE__, #cond);		\
		printf(__VA_ARGS__);					\
		printf("\n");						\
	}								\
} while (0)

#endif
