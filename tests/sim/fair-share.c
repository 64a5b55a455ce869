/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fair-share: the daemon runs each busy send queue its share a pass (at
 * most 64 WQEs, and WQEs until 64 KiB of payload), so one QP's stream
 * holds back another's WQE by about a share, not by the stream
 * (sim/README, Timing).  Two QPs complete into one CQ, whose order is
 * the device's; the daemon is stopped (SIGSTOP) while the second QP
 * posts, so that what is counted does not depend on when this program
 * runs.
 *
 * Runs on the simulator with either provider (tests/on-sim.sh); named
 * cases (tests/cases.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#include "../cases.h"
#include "../wait.h"
#include "loopback.h"

/*
 * A share ends at the WQE that reaches 64 KiB of payload, so each of the
 * stream's WRITEs is a share.  They are big so that the stream lasts
 * long (4 GiB: a fraction of a second however fast the daemon is, a
 * daemon ahead of this program on the CPUs included): the daemon must
 * still be at it when this program, after its first completion, stops it.
 */
#define BIG		(1 << 20)
#define STREAM		4096	/* WRITEs in the busy QP's stream */

static struct loopback lb;
static pid_t sim_daemon;

/* @n signalled RDMA WRITEs of @len bytes, src to dst, in one list. */
static void post_writes(struct sender *s, int n, size_t len)
{
	static struct ibv_send_wr wr[STREAM];
	struct ibv_sge sge = { (uintptr_t)s->src, len, s->src_mr->lkey };
	struct ibv_send_wr *bad;

	for (int i = 0; i < n; i++)
		wr[i] = (struct ibv_send_wr){
			.wr_id = i, .sg_list = &sge, .num_sge = 1,
			.opcode = IBV_WR_RDMA_WRITE,
			.send_flags = IBV_SEND_SIGNALED,
			.next = i + 1 < n ? &wr[i + 1] : NULL,
			.wr.rdma = { (uintptr_t)s->dst, s->dst_mr->rkey },
		};
	if (ibv_post_send(s->qp, wr, &bad))
		bail("ibv_post_send");
}

/* Whatever happens to this program, the daemon goes on. */
static void daemon_continue(void)
{
	kill(sim_daemon, SIGCONT);
}

/* The daemon stopped, for sure, before this returns. */
static void daemon_stop(void)
{
	uint64_t end = now_ms() + 5000;

	atexit(daemon_continue);
	if (kill(sim_daemon, SIGSTOP))
		bail("SIGSTOP");
	while (proc_state(sim_daemon) != 'T' && proc_state(sim_daemon) != 't' &&
	       now_ms() < end)
		usleep(1000);
}

/*
 * A QP streams big WRITEs; once it is under way, the daemon stops, the
 * other QP posts one small WRITE, the daemon goes on.  How many of the
 * stream's WRITEs complete between that post and its completion, or -1
 * when the stream was over before the daemon stopped (this program was
 * kept off the CPU that long).  *@all: every WRITE completed.
 */
static int stream_and_one(struct sender *busy, struct sender *one, bool *all)
{
	int ahead = 0, before = 0, done = 0;
	bool one_done = false;
	struct ibv_wc wc;

	post_writes(busy, STREAM, BIG);
	while (!before && poll_cq_within(lb.cq, &wc, 5000) == 1)
		before++;
	daemon_stop();
	while (ibv_poll_cq(lb.cq, 1, &wc) == 1)
		before++;
	if (before < STREAM)
		post_writes(one, 1, 8);
	daemon_continue();
	while (before < STREAM && done < STREAM + 1 - before &&
	       poll_cq_within(lb.cq, &wc, 10000) == 1) {
		done++;
		if (wc.qp_num == one->qp->qp_num)
			one_done = wc.status == IBV_WC_SUCCESS;
		else if (!one_done)
			ahead++;
	}
	*all = before == STREAM || (one_done && done == STREAM + 1 - before);
	return before == STREAM ? -1 : one_done ? ahead : STREAM;
}

static void test_stream_and_one(void)
{
	struct sender busy, one;
	bool all = false;
	int ahead = -1;

	sender_up(&lb, &busy, STREAM, BIG);
	sender_up(&lb, &one, 1, 8);
	for (int tries = 0; tries < 3 && ahead < 0; tries++)
		ahead = stream_and_one(&busy, &one, &all);
	CHECK(ahead >= 0, "a stream of %d WRITEs of %d bytes was under way when another QP posted",
	      STREAM, BIG);
	CHECK(ahead >= 0 && ahead <= 2,
	      "that QP's WRITE completes with at most 2 of the stream's before it (%d)",
	      ahead);
	CHECK(all, "and every WRITE completes");
	sender_down(&busy);
	sender_down(&one);
}

static const struct test_case cases[] = {
	{ "stream_and_one", test_stream_and_one,
	  "a QP's stream of big WRITEs holds another QP's WRITE back by at most two shares" },
};

int main(int argc, char **argv)
{
	int ret = cases_select(cases, CASES_N(cases), argc, argv, 1);

	/* The cases stop and go on the daemon: it must be there. */
	sim_daemon = sim_daemon_pid();
	if (ret >= 0)
		return ret;
	if (!sim_daemon)
		bail("no simulator (MLX4SIM_DIR/pid)");
	loopback_open(&lb, "fair-share", 2 * STREAM);
	cases_run(cases, CASES_N(cases));
	loopback_close(&lb);
	return tap_finish();
}
