/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * write-order: the device writes a message into memory in address order,
 * as a PCIe adapter's posted writes arrive, so a program that polls the
 * last byte of a buffer for the next message (Open MPI's openib BTL does,
 * for its eager RDMA fragments) finds every byte before it already
 * there.  A thread polls the last byte of each RDMA WRITE's target while
 * the daemon, on the other CPU, writes it; the sizes take every path a
 * copy has (a few bytes, vectors, blocks, long strings).
 *
 * Runs on the simulator with either provider (tests/on-sim.sh); named
 * cases (tests/cases.h).  Needs two CPUs: with one, the poller never
 * runs while the daemon writes and nothing could fail.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#include "../cases.h"
#include "../wait.h"
#include "loopback.h"

#define MAX_LEN		65536
#define ROUNDS		60000

static const uint32_t sizes[] = {
	1, 7, 9, 31, 33, 63, 65, 100, 129, 255, 257, 500, 1000, 2047, 2049,
	3000, 4096, 4100, 8192, 12000, 16384, 40000, MAX_LEN,
};
#define NSIZES		(sizeof(sizes) / sizeof(sizes[0]))

static struct loopback lb;

/* What the poller is told (round, len) and tells back (done, torn). */
static struct {
	int round;			/* 1.. posted; 0: none yet, -1: end */
	uint32_t len;
	int done;			/* the last round the poller saw */
	int torn;			/* rounds seen with a stale byte */
	int first_torn_len;
	long first_torn_at;
} talk;

static uint8_t *dst;			/* the WRITEs' target (zeroed) */

/* Round @k's byte: never 0 (the buffer's start), never the round before's. */
static uint8_t round_byte(int k)
{
	return (uint8_t)(k % 255 + 1);
}

static void *poller(void *arg)
{
	(void)arg;
	for (;;) {
		int k = __atomic_load_n(&talk.round, __ATOMIC_ACQUIRE);
		uint32_t len;
		uint8_t v;

		if (k < 0)
			return NULL;
		if (k == 0 || k == __atomic_load_n(&talk.done, __ATOMIC_ACQUIRE))
			continue;
		len = talk.len;
		v = round_byte(k);
		while (__atomic_load_n(&dst[len - 1], __ATOMIC_ACQUIRE) != v)
			if (__atomic_load_n(&talk.round, __ATOMIC_ACQUIRE) < 0)
				return NULL;
		for (uint32_t i = 0; i < len - 1; i++)
			if (dst[i] != v) {
				if (!talk.torn++) {
					talk.first_torn_len = len;
					talk.first_torn_at = i;
				}
				break;
			}
		__atomic_store_n(&talk.done, k, __ATOMIC_RELEASE);
	}
}

/* Round @k: a WRITE of @len bytes of round_byte(k), seen by the poller. */
static bool write_round(struct sender *w, int k, uint32_t len)
{
	struct ibv_sge sge = { (uintptr_t)w->src, len, w->src_mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = k, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { (uintptr_t)w->dst, w->dst_mr->rkey },
	}, *bad;
	uint64_t end;
	struct ibv_wc wc;

	memset(w->src, round_byte(k), len);
	talk.len = len;
	__atomic_store_n(&talk.round, k, __ATOMIC_RELEASE);
	if (ibv_post_send(w->qp, &wr, &bad))
		return false;
	/* The poller's CPU, while the daemon writes, as much as we can. */
	end = now_ms() + 10000;
	while (__atomic_load_n(&talk.done, __ATOMIC_ACQUIRE) != k) {
		if (now_ms() > end)
			return false;
		sched_yield();
	}
	return poll_cq_within(lb.cq, &wc, 10000) == 1 &&
	       wc.status == IBV_WC_SUCCESS;
}

static void test_last_byte_last(void)
{
	struct sender w;
	pthread_t thread;
	char torn[128] = "";
	int k = 1;

	sender_up(&lb, &w, 1, MAX_LEN);
	dst = w.dst;
	if (pthread_create(&thread, NULL, poller, NULL))
		bail("pthread_create");
	for (; k <= ROUNDS; k++)
		if (!write_round(&w, k, sizes[k % NSIZES]))
			break;
	__atomic_store_n(&talk.round, -1, __ATOMIC_RELEASE);
	pthread_join(thread, NULL);
	CHECK(k > ROUNDS, "%d RDMA WRITEs of 1 to %d bytes completed, each seen by a thread polling its last byte",
	      ROUNDS, MAX_LEN);
	if (talk.torn)
		snprintf(torn, sizeof(torn),
			 " (not in %d; the first a WRITE of %d bytes, stale at byte %ld)",
			 talk.torn, talk.first_torn_len, talk.first_torn_at);
	CHECK(!talk.torn,
	      "when a WRITE's last byte was there, every byte before it was too%s",
	      torn);
	sender_down(&w);
}

static const struct test_case cases[] = {
	{ "last_byte_last", test_last_byte_last,
	  "a program polling an RDMA WRITE's last byte finds the bytes before it written" },
};

int main(int argc, char **argv)
{
	int ret = cases_select(cases, CASES_N(cases), argc, argv, 1);

	if (ret >= 0)
		return ret;
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
		printf("1..0 # SKIP needs two CPUs (the poller runs while the daemon writes)\n");
		return 0;
	}
	loopback_open(&lb, "write-order", 4);
	cases_run(cases, CASES_N(cases));
	loopback_close(&lb);
	return tap_finish();
}
