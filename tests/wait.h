/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Waiting in the tests: a monotonic clock in milliseconds, and a
 * completion polled for until a deadline, so that a stuck queue fails its
 * case in seconds instead of hanging the test; a process's or thread's
 * scheduler state, to wait until it sleeps or stops.
 */
#ifndef TESTS_WAIT_H
#define TESTS_WAIT_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <time.h>
#include <infiniband/verbs.h>

/*
 * The state letter of process or thread @id (/proc/ID/stat: R, S, T...),
 * '?' when unreadable.
 */
static inline char proc_state(pid_t id)
{
	char path[64], state = '?';
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)id);
	f = fopen(path, "r");
	if (f) {
		if (fscanf(f, "%*d (%*[^)]) %c", &state) != 1)
			state = '?';
		fclose(f);
	}
	return state;
}

static inline uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000ULL + ts.tv_nsec / 1000000;
}

/*
 * One completion of @cq into @wc within @ms: 1, or 0 when none came, or
 * ibv_poll_cq()'s negative answer.
 */
static inline int poll_cq_within(struct ibv_cq *cq, struct ibv_wc *wc,
				 unsigned int ms)
{
	uint64_t end = now_ms() + ms;
	int n;

	do {
		n = ibv_poll_cq(cq, 1, wc);
		if (n)
			return n;
	} while (now_ms() < end);
	return 0;
}

#endif /* TESTS_WAIT_H */
