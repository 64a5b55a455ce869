/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The provider on a device: the verbs that pingpong programs and perftest
 * leave out.  Two RC QPs of one context, connected to each other, carry
 * messages while the test resizes the CQ under outstanding completions,
 * polls through the extended CQ interface (completion timestamps too),
 * takes a QP through RESET and back, posts to a shared receive queue,
 * changes its limit, and feeds each data verb requests it must refuse.
 *
 * Run on the simulator by tests/verbs/provider-verbs.sh (provider-verbs-project.tap,
 * provider-verbs-system.tap), with either provider.
 *
 * Usage: provider-verbs [project|system|common] [--list | NAME...]: the
 * provider (common, the default, leaves out what the two differ on) then
 * the cases (tests/cases.h).
 */
#include <config.h>

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "../cases.h"
#include "../device.h"
#include "../inet.h"
#include "../qp-connect.h"
#include "../tap.h"

enum { MSG = 64, NBUF = 64 };

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_mr *mr;
static uint8_t *buf;
static uint16_t lid;
static int roce;		/* port 1 is an Ethernet port */

static void die(const char *what)
{
	bail(what);
}

static struct ibv_qp *typed_qp(struct ibv_cq *scq, struct ibv_cq *rcq,
			       struct ibv_srq *srq, enum ibv_qp_type type)
{
	struct ibv_qp_init_attr attr = {
		.send_cq = scq, .recv_cq = rcq, .srq = srq,
		.cap = { .max_send_wr = 32, .max_recv_wr = 32,
			 .max_send_sge = 2, .max_recv_sge = 2,
			 .max_inline_data = 64 },
		.qp_type = type,
	};
	struct ibv_qp *qp = ibv_create_qp(pd, &attr);

	if (!qp)
		die("ibv_create_qp");
	return qp;
}

static struct ibv_qp *rc_qp(struct ibv_cq *scq, struct ibv_cq *rcq,
			    struct ibv_srq *srq)
{
	return typed_qp(scq, rcq, srq, IBV_QPT_RC);
}

static int to_rts(struct ibv_qp *qp, uint32_t dest)
{
	const struct qp_path path = {
		.remote_qpn = dest, .dlid = lid,
		.access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
		.rd_atomic = 1, .min_rnr_timer = 12,
		.timeout = 14, .retry_cnt = 7, .rnr_retry = 7,
	};
	const char *step;

	return qp_connect(qp, &path, &step);
}

/*
 * Two RC QPs, a sending to b, on @cq (b's receives on @srq, if any),
 * connected: the CHECK says they are.
 */
static void connect_pair(struct ibv_cq *cq, struct ibv_srq *srq,
			 struct ibv_qp **a, struct ibv_qp **b)
{
	*a = rc_qp(cq, cq, NULL);
	*b = rc_qp(cq, cq, srq);
	CHECK(!to_rts(*a, (*b)->qp_num) && !to_rts(*b, (*a)->qp_num), "connect");
}

static int post_recv(struct ibv_qp *qp, uint64_t id, int slot)
{
	struct ibv_sge sge = { (uintptr_t)(buf + slot * MSG), MSG, mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad;

	return ibv_post_recv(qp, &wr, &bad);
}

static int post_send(struct ibv_qp *qp, uint64_t id, int slot, int flags)
{
	struct ibv_sge sge = { (uintptr_t)(buf + slot * MSG), MSG, mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = id, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED | flags,
	};
	struct ibv_send_wr *bad;

	return ibv_post_send(qp, &wr, &bad);
}

/*
 * Four SENDs from @a to four receives of @b (wr_ids 20 to 23 and 10 to
 * 13): eight completions to come, @gap_us apart or not.
 */
static void four_sends(struct ibv_qp *a, struct ibv_qp *b, unsigned int gap_us)
{
	for (int i = 0; i < 4; i++)
		post_recv(b, 10 + i, i);
	for (int i = 0; i < 4; i++) {
		post_send(a, 20 + i, 4 + i, 0);
		if (gap_us)
			usleep(gap_us);
	}
}

/* Poll @n completions into @wc, waiting up to five seconds. */
static int poll_n(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	time_t end = time(NULL) + 5;
	int got = 0;

	while (got < n && time(NULL) < end) {
		int r = ibv_poll_cq(cq, n - got, wc + got);

		if (r < 0)
			return r;
		got += r;
	}
	return got;
}

/* Wait until the device has produced at least @n CQEs, without polling. */
static void settle(void)
{
	struct timespec ts = { 0, 200 * 1000 * 1000 };

	nanosleep(&ts, NULL);
}

static void test_resize(void)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 15, NULL, NULL, 0);
	struct ibv_wc wc[32];
	struct ibv_qp *a, *b;
	int i, n, ordered = 1;

	if (!cq)
		die("ibv_create_cq");
	CHECK(cq->cqe >= 15, "cqe %d", cq->cqe);
	connect_pair(cq, NULL, &a, &b);

	/* Six messages: twelve completions wait in a CQ of 16. */
	for (i = 0; i < 6; i++)
		CHECK(!post_recv(b, 100 + i, i), "post_recv");
	for (i = 0; i < 6; i++)
		CHECK(!post_send(a, 200 + i, 8 + i, 0), "post_send");
	settle();

	/* Grow it with all twelve outstanding: none lost, order kept. */
	CHECK(!ibv_resize_cq(cq, 100), "resize to 100");
	CHECK(cq->cqe >= 100, "cqe %d after resize", cq->cqe);
	n = poll_n(cq, 12, wc);
	CHECK(n == 12, "%d completions after resize", n);
	{
		uint64_t next_send = 200, next_recv = 100;

		for (i = 0; i < n; i++) {
			if (wc[i].status != IBV_WC_SUCCESS)
				ordered = 0;
			else if (wc[i].opcode == IBV_WC_SEND)
				ordered &= wc[i].wr_id == next_send++;
			else
				ordered &= wc[i].wr_id == next_recv++;
		}
		CHECK(ordered && next_send == 206 && next_recv == 106,
		      "completions in order, each once");
	}

	/* The resized CQ keeps working, across its own wrap too. */
	for (i = 0; i < 80; i++) {
		CHECK(!post_recv(b, 300 + i, i % NBUF), "post_recv");
		CHECK(!post_send(a, 400 + i, i % NBUF, i & 1 ? IBV_SEND_INLINE : 0),
		      "post_send");
		n = poll_n(cq, 2, wc);
		if (n != 2 || wc[0].status || wc[1].status) {
			CHECK(0, "message %d: %d completions", i, n);
			break;
		}
	}

	/* Shrink with one message waiting; same size is a no-op. */
	CHECK(!post_recv(b, 500, 0) && !post_send(a, 501, 1, 0), "post");
	settle();
	CHECK(!ibv_resize_cq(cq, 20), "shrink to 20");
	CHECK(!ibv_resize_cq(cq, 20), "same size again");
	n = poll_n(cq, 2, wc);
	CHECK(n == 2 && !wc[0].status && !wc[1].status, "%d after shrink", n);
	CHECK(ibv_resize_cq(cq, 0) != 0, "resize to 0 refused");

	ibv_destroy_qp(a);
	ibv_destroy_qp(b);
	CHECK(!ibv_destroy_cq(cq), "destroy cq");
}

/*
 * Up to @want completions of @cq through ibv_start_poll/ibv_next_poll,
 * within 5 s, each handed to @visit with its index; returns how many came.
 */
static int lazy_poll(struct ibv_cq_ex *cq, int want,
		     void (*visit)(struct ibv_cq_ex *cq, int i, void *arg),
		     void *arg)
{
	struct ibv_poll_cq_attr pattr = {};
	time_t end = time(NULL) + 5;
	int n = 0, ret;

	while (n < want && time(NULL) < end) {
		ret = ibv_start_poll(cq, &pattr);
		if (ret == ENOENT)
			continue;
		CHECK(ret == 0, "start_poll %d", ret);
		if (ret)
			break;
		do
			visit(cq, n++, arg);
		while (n < want && ibv_next_poll(cq) == 0);
		ibv_end_poll(cq);
	}
	return n;
}

/* test_cq_ex's completions: A's four SENDs and B's four receives. */
struct cq_ex_pair {
	struct ibv_qp *a, *b;
	int sends, recvs;
};

static void check_cq_ex_wc(struct ibv_cq_ex *cq, int i, void *arg)
{
	struct cq_ex_pair *p = arg;

	CHECK(cq->status == IBV_WC_SUCCESS, "status %d", cq->status);
	if (ibv_wc_read_opcode(cq) == IBV_WC_RECV) {
		CHECK(cq->wr_id == 10 + (uint64_t)p->recvs, "recv wr_id");
		CHECK(ibv_wc_read_byte_len(cq) == MSG, "byte_len");
		CHECK(ibv_wc_read_qp_num(cq) == p->b->qp_num, "qp_num");
		CHECK(ibv_wc_read_src_qp(cq) == p->a->qp_num, "src_qp");
		CHECK(ibv_wc_read_slid(cq) == lid, "slid");
		p->recvs++;
	} else {
		CHECK(cq->wr_id == 20 + (uint64_t)p->sends, "send wr_id");
		p->sends++;
	}
}

static void test_cq_ex(void)
{
	struct ibv_cq_init_attr_ex cattr = {
		.cqe = 64,
		.wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_QP_NUM |
			    IBV_WC_EX_WITH_SRC_QP | IBV_WC_EX_WITH_IMM |
			    IBV_WC_EX_WITH_SLID,
	};
	struct ibv_cq_ex *cq = ibv_create_cq_ex(ctx, &cattr);
	struct cq_ex_pair p = {};

	CHECK(cq != NULL, "ibv_create_cq_ex: %s", strerror(errno));
	if (!cq)
		return;
	connect_pair(ibv_cq_ex_to_cq(cq), NULL, &p.a, &p.b);

	four_sends(p.a, p.b, 0);
	lazy_poll(cq, 8, check_cq_ex_wc, &p);
	CHECK(p.sends == 4 && p.recvs == 4, "%d sends, %d receives", p.sends,
	      p.recvs);

	ibv_destroy_qp(p.a);
	ibv_destroy_qp(p.b);
	ibv_destroy_cq(ibv_cq_ex_to_cq(cq));
}

/* The device's clock, as ibv_query_rt_values_ex() reads it; 0 on error. */
static uint64_t raw_clock(void)
{
	struct ibv_values_ex v = { .comp_mask = IBV_VALUES_MASK_RAW_CLOCK };

	if (ibv_query_rt_values_ex(ctx, &v))
		return 0;
	return v.raw_clock.tv_nsec;
}

static uint64_t monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/*
 * Completion timestamps: a CQ created for them reports, per completion,
 * the adapter's clock when it wrote the CQE.  They are nonzero, never go
 * back, and share their clock with ibv_query_rt_values_ex(): its value
 * before the first post is not after the first timestamp, and the clock
 * soon reaches the last one without running ahead of the wall clock.
 * (The simulator refreshes its clock page only when it wakes, every few
 * milliseconds at the least: the bounds allow 10 ms, and a second for
 * the upper one.)  SLID and SL share the CQE's room with the timestamp:
 * asking for both is refused.
 */
/* A completion's time in ticks, into @arg's array at @i. */
static void read_ticks(struct ibv_cq_ex *cq, int i, void *arg)
{
	uint64_t *ticks = arg;

	CHECK(cq->status == IBV_WC_SUCCESS, "status %d", cq->status);
	ticks[i] = ibv_wc_read_completion_ts(cq);
}

static void test_cq_timestamps(void)
{
	struct ibv_cq_init_attr_ex cattr = {
		.cqe = 64,
		.wc_flags = IBV_WC_EX_WITH_BYTE_LEN |
			    IBV_WC_EX_WITH_COMPLETION_TIMESTAMP,
	};
	struct ibv_device_attr_ex dattr = {};
	uint64_t ts[8], khz, slack, clock0, clock1, wall0, wall1, wait_end;
	struct ibv_cq_ex *cq, *refused;
	struct ibv_qp *a, *b;
	int n, ordered = 1, nonzero = 1;

	cattr.wc_flags |= IBV_WC_EX_WITH_SLID;
	refused = ibv_create_cq_ex(ctx, &cattr);
	CHECK(!refused && errno == EOPNOTSUPP,
	      "timestamps with SLID: %s", refused ? "created" : strerror(errno));
	if (refused)
		ibv_destroy_cq(ibv_cq_ex_to_cq(refused));
	cattr.wc_flags &= ~(uint64_t)IBV_WC_EX_WITH_SLID;

	cq = ibv_create_cq_ex(ctx, &cattr);
	CHECK(cq != NULL, "ibv_create_cq_ex with timestamps: %s",
	      strerror(errno));
	if (!cq)
		return;
	CHECK(!ibv_query_device_ex(ctx, NULL, &dattr), "query_device_ex");
	khz = dattr.hca_core_clock;
	CHECK(khz != 0, "hca_core_clock");
	slack = khz * 10;	/* 10 ms of ticks */

	connect_pair(ibv_cq_ex_to_cq(cq), NULL, &a, &b);

	wall0 = monotonic_ns();
	clock0 = raw_clock();
	CHECK(clock0 != 0, "the clock");
	four_sends(a, b, 0);

	n = lazy_poll(cq, 8, read_ticks, ts);
	CHECK(n == 8, "%d completions", n);
	for (int i = 0; i < n; i++) {
		nonzero &= ts[i] != 0;
		ordered &= !i || ts[i] >= ts[i - 1];
	}
	CHECK(nonzero, "a zero timestamp");
	CHECK(ordered, "timestamps out of order");

	if (n == 8 && khz) {
		CHECK(clock0 <= ts[0] + slack,
		      "clock 0x%llx before the post, first completion at 0x%llx",
		      (unsigned long long)clock0, (unsigned long long)ts[0]);

		/* The clock page catches up with the last completion. */
		wait_end = monotonic_ns() + 2000000000ULL;
		do
			clock1 = raw_clock();
		while (clock1 + slack < ts[7] && monotonic_ns() < wait_end);
		wall1 = monotonic_ns();
		CHECK(clock1 + slack >= ts[7],
		      "clock 0x%llx, last completion at 0x%llx",
		      (unsigned long long)clock1, (unsigned long long)ts[7]);
		/* ... and has not run ahead of the time that passed. */
		CHECK(clock1 - clock0 <= (wall1 - wall0 + 1000000000ULL) *
					 khz / 1000000,
		      "clock ran 0x%llx ticks in %llu ns",
		      (unsigned long long)(clock1 - clock0),
		      (unsigned long long)(wall1 - wall0));
	}

	ibv_destroy_qp(a);
	ibv_destroy_qp(b);
	ibv_destroy_cq(ibv_cq_ex_to_cq(cq));
}

static uint64_t realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/*
 * Completion times in wall-clock nanoseconds (libmlx4 only: rdma-core's
 * mlx4 refuses the flag).  Each lies between the real time before the
 * posts and after the polls (give or take the 10 ms by which the
 * simulator's clock page may lag), and two of them are as far apart as
 * their times in ticks say.
 */
/* A completion's time in ticks and in wall-clock ns, at @i. */
static void read_both_times(struct ibv_cq_ex *cq, int i, void *arg)
{
	uint64_t **times = arg;

	times[0][i] = ibv_wc_read_completion_ts(cq);
	times[1][i] = ibv_wc_read_completion_wallclock_ns(cq);
}

static void test_cq_wallclock(int project)
{
	struct ibv_cq_init_attr_ex cattr = {
		.cqe = 64,
		.wc_flags = IBV_WC_EX_WITH_COMPLETION_TIMESTAMP |
			    IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK,
	};
	struct ibv_device_attr_ex dattr = {};
	uint64_t ticks[8], ns[8], khz, before, after, slack = 20000000;
	uint64_t *times[2] = { ticks, ns };
	int n, within = 1, spaced = 1;
	struct ibv_cq_ex *cq;
	struct ibv_qp *a, *b;

	cq = ibv_create_cq_ex(ctx, &cattr);
	if (!project) {
		CHECK(!cq && errno == EOPNOTSUPP,
		      "rdma-core's mlx4: wall-clock times refused: %s",
		      cq ? "created" : strerror(errno));
		if (cq)
			ibv_destroy_cq(ibv_cq_ex_to_cq(cq));
		return;
	}
	CHECK(cq != NULL, "ibv_create_cq_ex with wall-clock times: %s",
	      strerror(errno));
	if (!cq)
		return;
	cattr.wc_flags |= IBV_WC_EX_WITH_SL;
	{
		struct ibv_cq_ex *refused = ibv_create_cq_ex(ctx, &cattr);

		CHECK(!refused && errno == EOPNOTSUPP,
		      "wall-clock times with SL: %s",
		      refused ? "created" : strerror(errno));
		if (refused)
			ibv_destroy_cq(ibv_cq_ex_to_cq(refused));
	}
	CHECK(!ibv_query_device_ex(ctx, NULL, &dattr), "query_device_ex");
	khz = dattr.hca_core_clock;

	connect_pair(ibv_cq_ex_to_cq(cq), NULL, &a, &b);
	before = realtime_ns();
	four_sends(a, b, 2000);	/* completions some ticks apart */
	n = lazy_poll(cq, 8, read_both_times, times);
	after = realtime_ns();
	CHECK(n == 8, "%d completions", n);
	for (int i = 0; i < n; i++) {
		int64_t dns = (int64_t)(ns[i] - ns[0]);
		int64_t dticks = (int64_t)(ticks[i] - ticks[0]);

		within &= ns[i] + slack >= before && ns[i] <= after + slack;
		if (khz && llabs(dns - dticks * 1000000 / (int64_t)khz) > 1000)
			spaced = 0;
	}
	CHECK(within, "wall-clock times within the run: first %llu, run %llu..%llu",
	      (unsigned long long)ns[0], (unsigned long long)before,
	      (unsigned long long)after);
	CHECK(spaced && khz, "wall-clock times as far apart as the ticks (%llu kHz)",
	      (unsigned long long)khz);
	ibv_destroy_qp(a);
	ibv_destroy_qp(b);
	ibv_destroy_cq(ibv_cq_ex_to_cq(cq));
}

static void test_reset(void)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_RESET };
	struct ibv_wc wc[8];
	struct ibv_qp *a, *b;
	int i, n;

	connect_pair(cq, NULL, &a, &b);

	/* Receives left in b and their completions vanish with RESET. */
	for (i = 0; i < 3; i++)
		post_recv(b, 1 + i, i);
	post_send(a, 9, 4, 0);
	settle();
	CHECK(!ibv_modify_qp(b, &attr, IBV_QP_STATE), "b to RESET");
	n = poll_n(cq, 8, wc);
	CHECK(n == 1 && wc[0].wr_id == 9 && wc[0].status == IBV_WC_SUCCESS,
	      "only a's send remains: %d", n);

	/* Back to RTS, from scratch, and working again. */
	CHECK(!to_rts(b, a->qp_num), "b to RTS again");
	CHECK(!ibv_modify_qp(a, &attr, IBV_QP_STATE) && !to_rts(a, b->qp_num),
	      "a through RESET");
	for (i = 0; i < 40; i++) {
		post_recv(b, 100 + i, 0);
		post_send(a, 200 + i, 1, 0);
		n = poll_n(cq, 2, wc);
		if (n != 2 || wc[0].status || wc[1].status) {
			CHECK(0, "message %d after RESET: %d", i, n);
			break;
		}
	}
	ibv_destroy_qp(a);
	ibv_destroy_qp(b);
	ibv_destroy_cq(cq);
}

static void test_srq(void)
{
	struct ibv_srq_init_attr sattr = { .attr = { .max_wr = 16, .max_sge = 1 } };
	struct ibv_cq *cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	struct ibv_srq *srq = ibv_create_srq(pd, &sattr);
	struct ibv_srq_attr attr;
	struct ibv_wc wc[4];
	struct ibv_qp *a, *b;
	int i, n, ok = 1;

	CHECK(srq != NULL, "ibv_create_srq");
	if (!srq)
		return;
	CHECK(sattr.attr.max_wr >= 16, "max_wr %u", sattr.attr.max_wr);
	connect_pair(cq, srq, &a, &b);

	attr.srq_limit = 4;
	CHECK(!ibv_modify_srq(srq, &attr, IBV_SRQ_LIMIT), "modify limit");
	CHECK(!ibv_query_srq(srq, &attr) && attr.srq_limit == 4,
	      "query: limit %u", attr.srq_limit);

	/* Many more messages than WQEs: the free list turns over. */
	for (i = 0; i < 8; i++) {
		struct ibv_sge sge = { (uintptr_t)(buf + i * MSG), MSG, mr->lkey };
		struct ibv_recv_wr wr = { .wr_id = 1000 + i, .sg_list = &sge,
					  .num_sge = 1 };
		struct ibv_recv_wr *bad;

		ok &= !ibv_post_srq_recv(srq, &wr, &bad);
	}
	for (i = 0; i < 100 && ok; i++) {
		struct ibv_sge sge = { (uintptr_t)(buf + (i % 8) * MSG), MSG,
				       mr->lkey };
		struct ibv_recv_wr wr = { .sg_list = &sge, .num_sge = 1 };
		struct ibv_recv_wr *bad;
		int r;

		post_send(a, i, 10, 0);
		n = poll_n(cq, 2, wc);
		if (n != 2 || wc[0].status || wc[1].status) {
			ok = 0;
			break;
		}
		r = wc[0].opcode == IBV_WC_RECV ? 0 : 1;
		wr.wr_id = wc[r].wr_id;
		ok &= !ibv_post_srq_recv(srq, &wr, &bad);
	}
	CHECK(ok, "100 messages through an SRQ of 8 posted WQEs");

	ibv_destroy_qp(a);
	ibv_destroy_qp(b);
	CHECK(!ibv_destroy_srq(srq), "destroy srq");
	ibv_destroy_cq(cq);
}

/* Requests to refuse: errno, bad_wr, and nothing posted. */
static void test_refusals(void)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	struct ibv_sge sge[4];
	struct ibv_send_wr swr[2], *sbad;
	struct ibv_recv_wr rwr, *rbad;
	struct ibv_qp_init_attr qattr;
	struct ibv_wc wc[4];
	struct ibv_qp *a, *b;
	int i, ret;

	connect_pair(cq, NULL, &a, &b);
	ibv_query_qp(a, &(struct ibv_qp_attr){}, IBV_QP_CAP, &qattr);

	for (i = 0; i < 4; i++)
		sge[i] = (struct ibv_sge){ (uintptr_t)buf, 8, mr->lkey };
	memset(swr, 0, sizeof(swr));
	swr[0].wr_id = 1;
	swr[0].sg_list = sge;
	swr[0].num_sge = 1;
	swr[0].opcode = IBV_WR_RDMA_WRITE;
	swr[0].send_flags = IBV_SEND_SIGNALED;
	swr[0].wr.rdma.remote_addr = (uintptr_t)buf + 512;
	swr[0].wr.rdma.rkey = mr->rkey;
	swr[0].next = &swr[1];
	swr[1] = swr[0];
	swr[1].wr_id = 2;
	swr[1].next = NULL;

	swr[1].num_sge = qattr.cap.max_send_sge + 1;
	ret = ibv_post_send(a, swr, &sbad);
	CHECK(ret && sbad == &swr[1], "too many SGEs: %d (%s)", ret, strerror(ret));
	CHECK(poll_n(cq, 4, wc) == 1 && wc[0].wr_id == 1, "the first WR went alone");

	swr[1].num_sge = 1;
	swr[1].opcode = 77;
	ret = ibv_post_send(a, &swr[1], &sbad);
	CHECK(ret == EINVAL && sbad == &swr[1], "opcode 77: %d", ret);

	swr[1].opcode = IBV_WR_RDMA_WRITE;
	swr[1].send_flags = IBV_SEND_INLINE;
	sge[0].length = qattr.cap.max_inline_data + 1;
	ret = ibv_post_send(a, &swr[1], &sbad);
	CHECK(ret && sbad == &swr[1], "inline beyond max_inline_data: %d", ret);
	sge[0].length = 8;

	rwr = (struct ibv_recv_wr){ .wr_id = 5, .sg_list = sge, .num_sge = 3 };
	ret = ibv_post_recv(b, &rwr, &rbad);
	CHECK(ret && rbad == &rwr, "recv with too many SGEs: %d", ret);

	/* A full queue refuses, completions make room. */
	swr[1].send_flags = 0;
	for (i = 0; i < 1000; i++) {
		ret = ibv_post_send(a, &swr[1], &sbad);
		if (ret)
			break;
	}
	CHECK(ret == ENOMEM && i == (int)qattr.cap.max_send_wr,
	      "full after %d WRs (max_send_wr %u): %d", i,
	      qattr.cap.max_send_wr, ret);
	swr[1].send_flags = IBV_SEND_SIGNALED;
	ret = ibv_post_send(a, &swr[1], &sbad);
	CHECK(ret == ENOMEM, "still full: %d", ret);

	ibv_destroy_qp(a);
	ibv_destroy_qp(b);
	ibv_destroy_cq(cq);
}

/* A page that memory windows may be bound to, written through them. */
static struct ibv_mr *window_mr(uint8_t *target)
{
	return target ? ibv_reg_mr(pd, target, 4096, IBV_ACCESS_LOCAL_WRITE |
				   IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_MW_BIND) : NULL;
}

/* Memory windows: bound by ibv_bind_mw (type 1) or a BIND_MW WR (2). */
static void test_mw(void)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	uint8_t *target = calloc(1, 4096);
	struct ibv_mr *tmr = window_mr(target);
	struct ibv_mw *mw1 = ibv_alloc_mw(pd, IBV_MW_TYPE_1);
	struct ibv_mw *mw2 = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
	struct ibv_sge sge = { (uintptr_t)buf, 16, mr->lkey };
	struct ibv_send_wr wr = {}, *bad;
	struct ibv_mw_bind bind = {};
	struct ibv_wc wc[2];
	struct ibv_qp *a, *b;
	uint32_t rkey2;
	int n;

	CHECK(tmr && mw1 && mw2, "alloc: %s", strerror(errno));
	if (!tmr || !mw1 || !mw2)
		return;
	connect_pair(cq, NULL, &a, &b);
	memset(buf, 0x5a, 16);

	/* Type 1: bound through b's send queue, then a writes through it. */
	bind.wr_id = 71;
	bind.send_flags = IBV_SEND_SIGNALED;
	bind.bind_info.mr = tmr;
	bind.bind_info.addr = (uintptr_t)target + 256;
	bind.bind_info.length = 512;
	bind.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE;
	CHECK(!ibv_bind_mw(b, mw1, &bind), "ibv_bind_mw");
	n = poll_n(cq, 1, wc);
	CHECK(n == 1 && wc[0].wr_id == 71 && !wc[0].status &&
	      wc[0].opcode == IBV_WC_BIND_MW, "bind completion (%d, %s)", n,
	      n == 1 ? ibv_wc_status_str(wc[0].status) : "-");

	wr.wr_id = 72;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = (uintptr_t)target + 300;
	wr.wr.rdma.rkey = mw1->rkey;
	CHECK(!ibv_post_send(a, &wr, &bad), "write through window 1");
	n = poll_n(cq, 1, wc);
	CHECK(n == 1 && !wc[0].status && target[300] == 0x5a &&
	      target[315] == 0x5a && target[316] == 0,
	      "written through type 1 window");

	/* Type 2: a BIND_MW request with a new key, then a write. */
	rkey2 = ibv_inc_rkey(mw2->rkey);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 73;
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.bind_mw.mw = mw2;
	wr.bind_mw.rkey = rkey2;
	wr.bind_mw.bind_info = bind.bind_info;
	CHECK(!ibv_post_send(b, &wr, &bad), "post BIND_MW");
	n = poll_n(cq, 1, wc);
	CHECK(n == 1 && wc[0].wr_id == 73 && !wc[0].status,
	      "type 2 bind completion");

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 74;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = (uintptr_t)target + 600;
	wr.wr.rdma.rkey = rkey2;
	CHECK(!ibv_post_send(a, &wr, &bad), "write through window 2");
	n = poll_n(cq, 1, wc);
	CHECK(n == 1 && !wc[0].status && target[600] == 0x5a,
	      "written through type 2 window");

	/* And invalidated locally. */
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 75;
	wr.opcode = IBV_WR_LOCAL_INV;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.invalidate_rkey = rkey2;
	CHECK(!ibv_post_send(b, &wr, &bad), "post LOCAL_INV");
	n = poll_n(cq, 1, wc);
	CHECK(n == 1 && wc[0].wr_id == 75 && !wc[0].status &&
	      wc[0].opcode == IBV_WC_LOCAL_INV, "local invalidate completion");

	ibv_destroy_qp(a);
	ibv_destroy_qp(b);
	CHECK(!ibv_dealloc_mw(mw1) && !ibv_dealloc_mw(mw2), "dealloc mw");
	ibv_dereg_mr(tmr);
	ibv_destroy_cq(cq);
	free(target);
}

/* A key operation @wr posted on @qp completes, as @opcode. */
static void key_op_completes(struct ibv_cq *cq, struct ibv_qp *qp,
			     struct ibv_send_wr *wr, enum ibv_wc_opcode opcode,
			     const char *what)
{
	struct ibv_send_wr *bad;
	struct ibv_wc wc;
	int n;

	CHECK(!ibv_post_send(qp, wr, &bad), "UC: post %s", what);
	n = poll_n(cq, 1, &wc);
	CHECK(n == 1 && wc.wr_id == wr->wr_id && !wc.status &&
	      wc.opcode == opcode, "UC: %s completes (%s)", what,
	      n == 1 ? ibv_wc_status_str(wc.status) : "-");
}

/*
 * UC takes the key operations and SEND with invalidate as RC does: the
 * kernel's _mlx4_ib_post_send and rdma-core's mlx4_post_send build them
 * for both.  A type 2 window bound on b, invalidated by a's SEND, bound
 * again and invalidated locally.
 */
static void test_uc_key_ops(void)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	uint8_t *target = calloc(1, 4096);
	struct ibv_mr *tmr = window_mr(target);
	struct ibv_mw *mw = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
	struct ibv_sge sge = { (uintptr_t)buf, 16, mr->lkey };
	struct ibv_send_wr bind = {}, wr, *bad;
	struct ibv_qp *a, *b;
	struct ibv_wc wc[2], *recv;
	int n;

	CHECK(cq && tmr && mw, "UC: alloc: %s", strerror(errno));
	if (!cq || !tmr || !mw)
		return;
	a = typed_qp(cq, cq, NULL, IBV_QPT_UC);
	b = typed_qp(cq, cq, NULL, IBV_QPT_UC);
	CHECK(!to_rts(a, b->qp_num) && !to_rts(b, a->qp_num), "UC: connect");

	bind.wr_id = 91;
	bind.opcode = IBV_WR_BIND_MW;
	bind.send_flags = IBV_SEND_SIGNALED;
	bind.bind_mw.mw = mw;
	bind.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
	bind.bind_mw.bind_info.mr = tmr;
	bind.bind_mw.bind_info.addr = (uintptr_t)target;
	bind.bind_mw.bind_info.length = 256;
	bind.bind_mw.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE;
	key_op_completes(cq, b, &bind, IBV_WC_BIND_MW, "BIND_MW");

	CHECK(!post_recv(b, 92, 0), "UC: post_recv");
	wr = (struct ibv_send_wr){ .wr_id = 93, .sg_list = &sge, .num_sge = 1,
				   .opcode = IBV_WR_SEND_WITH_INV,
				   .send_flags = IBV_SEND_SIGNALED,
				   .invalidate_rkey = ibv_inc_rkey(mw->rkey) };
	CHECK(!ibv_post_send(a, &wr, &bad), "UC: post SEND_WITH_INV");
	n = poll_n(cq, 2, wc);
	recv = n == 2 && wc[0].wr_id == 93 ? &wc[1] : &wc[0];
	CHECK(n == 2 && recv->wr_id == 92 && !recv->status &&
	      (recv->wc_flags & IBV_WC_WITH_INV) &&
	      recv->invalidated_rkey == ibv_inc_rkey(mw->rkey),
	      "UC: the SEND invalidates the window's key at b (%d, %s)", n,
	      ibv_wc_status_str(recv->status));

	bind.wr_id = 94;
	bind.bind_mw.rkey = ibv_inc_rkey(bind.bind_mw.rkey);
	key_op_completes(cq, b, &bind, IBV_WC_BIND_MW, "BIND_MW again");
	wr = (struct ibv_send_wr){ .wr_id = 95, .opcode = IBV_WR_LOCAL_INV,
				   .send_flags = IBV_SEND_SIGNALED,
				   .invalidate_rkey = bind.bind_mw.rkey };
	key_op_completes(cq, b, &wr, IBV_WC_LOCAL_INV, "LOCAL_INV");

	ibv_destroy_qp(a);
	ibv_destroy_qp(b);
	ibv_dealloc_mw(mw);
	ibv_dereg_mr(tmr);
	ibv_destroy_cq(cq);
	free(target);
}

/*
 * Windows' rights, as the responder checks them: a type 2 window on
 * target[256, 768), bound by b for a's requests, with a remote READ, a
 * zero-based WRITE, a FETCH_ADD, and a WRITE it has no right to.
 */
struct window_bench {
	struct ibv_cq *cq;
	struct ibv_qp *a, *b;	/* b takes atomics */
	struct ibv_mw *mw;
	struct ibv_mr *tmr;
	uint8_t *target;	/* byte i is target_byte(i) until written */
	struct ibv_sge sge;	/* a's: buf */
};

static uint8_t target_byte(int i)
{
	return (uint8_t)(i * 11 + 3);
}

/*
 * Bind @w's window with @access by a BIND_MW request carrying its next
 * key: the key, or 0 when the bind failed (the CHECK says so).
 */
static uint32_t bind_window(struct window_bench *w, int access)
{
	struct ibv_send_wr wr = {
		.wr_id = 61, .opcode = IBV_WR_BIND_MW,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;
	struct ibv_wc wc;
	int n;

	wr.bind_mw.mw = w->mw;
	wr.bind_mw.rkey = ibv_inc_rkey(w->mw->rkey);
	wr.bind_mw.bind_info = (struct ibv_mw_bind_info){
		.mr = w->tmr, .addr = (uintptr_t)w->target + 256,
		.length = 512, .mw_access_flags = access,
	};
	n = ibv_post_send(w->b, &wr, &bad) ? 0 : poll_n(w->cq, 1, &wc);
	CHECK(n == 1 && !wc.status && wc.opcode == IBV_WC_BIND_MW,
	      "bind a window with access 0x%x (%s)", access,
	      n == 1 ? ibv_wc_status_str(wc.status) : "not posted");
	if (n != 1 || wc.status)
		return 0;
	w->mw->rkey = wr.bind_mw.rkey;
	return w->mw->rkey;
}

/* Unbind the window (LOCAL_INV of @key), for the next bind. */
static void unbind_window(struct window_bench *w, uint32_t key)
{
	struct ibv_send_wr wr = {
		.wr_id = 63, .opcode = IBV_WR_LOCAL_INV,
		.send_flags = IBV_SEND_SIGNALED, .invalidate_rkey = key,
	}, *bad;
	struct ibv_wc wc;

	CHECK(key && !ibv_post_send(w->b, &wr, &bad) &&
	      poll_n(w->cq, 1, &wc) == 1 && !wc.status, "unbind the window");
}

/*
 * a's request @wr through key @key (0: none, the bind failed), @len
 * bytes of buf: its completion's status, or -1.
 */
static int window_op(struct window_bench *w, struct ibv_send_wr *wr,
		     uint32_t key, uint32_t len)
{
	struct ibv_send_wr *bad;
	struct ibv_wc wc;

	if (!key)
		return -1;
	w->sge.length = len;
	wr->wr_id = 62;
	wr->sg_list = &w->sge;
	wr->num_sge = 1;
	wr->send_flags = IBV_SEND_SIGNALED;
	if (wr->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD)
		wr->wr.atomic.rkey = key;
	else
		wr->wr.rdma.rkey = key;
	if (ibv_post_send(w->a, wr, &bad) || poll_n(w->cq, 1, &wc) != 1)
		return -1;
	return wc.status;
}

static const char *status_str(int st)
{
	return st >= 0 ? ibv_wc_status_str(st) : "not completed";
}

static void window_read(struct window_bench *w)
{
	uint32_t key = bind_window(w, IBV_ACCESS_REMOTE_READ);
	struct ibv_send_wr wr = { .opcode = IBV_WR_RDMA_READ };
	int st;

	memset(buf, 0, 32);
	wr.wr.rdma.remote_addr = (uintptr_t)w->target + 300;
	st = window_op(w, &wr, key, 32);
	CHECK(st == IBV_WC_SUCCESS && !memcmp(buf, w->target + 300, 32),
	      "READ through a window bound for remote read (%s)",
	      status_str(st));
	unbind_window(w, key);
}

/* Remote address 44 of a zero-based window is target + 256 + 44. */
static void window_zero_based(struct window_bench *w)
{
	uint32_t key = bind_window(w, IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_ZERO_BASED);
	struct ibv_send_wr wr = { .opcode = IBV_WR_RDMA_WRITE };
	int st;

	memset(buf, 0xc3, 32);
	wr.wr.rdma.remote_addr = 44;
	st = window_op(w, &wr, key, 32);
	CHECK(st == IBV_WC_SUCCESS && !memcmp(w->target + 300, buf, 32) &&
	      w->target[299] == target_byte(299) &&
	      w->target[44] == target_byte(44),
	      "WRITE at 44 in a zero-based window lands 44 bytes into it (%s)",
	      status_str(st));
	unbind_window(w, key);
}

/* The device reads and writes the word big-endian. */
static void window_atomic(struct window_bench *w)
{
	uint32_t key = bind_window(w, IBV_ACCESS_REMOTE_ATOMIC);
	uint64_t *word = (uint64_t *)(w->target + 512);
	struct ibv_send_wr wr = { .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD };
	int st;

	*word = htobe64(0x100000001ULL);
	wr.wr.atomic.remote_addr = (uintptr_t)word;
	wr.wr.atomic.compare_add = 0x20;
	st = window_op(w, &wr, key, 8);
	CHECK(st == IBV_WC_SUCCESS &&
	      be64toh(*(uint64_t *)buf) == 0x100000001ULL &&
	      be64toh(*word) == 0x100000021ULL,
	      "FETCH_ADD through a window bound for atomics (%s)",
	      status_str(st));
	unbind_window(w, key);
}

/* Last: the error moves both QPs to the error state. */
static void window_write_refused(struct window_bench *w)
{
	uint32_t key = bind_window(w, IBV_ACCESS_REMOTE_READ);
	struct ibv_send_wr wr = { .opcode = IBV_WR_RDMA_WRITE };
	int st;

	memset(buf, 0x99, 32);
	wr.wr.rdma.remote_addr = (uintptr_t)w->target + 400;
	st = window_op(w, &wr, key, 32);
	CHECK(st == IBV_WC_REM_ACCESS_ERR &&
	      w->target[400] == target_byte(400),
	      "WRITE through a window bound without remote write: a remote access error (%s), memory untouched",
	      status_str(st));
}

/* a and b connected, b's QP taking atomics as well. */
static void connect_atomic_pair(struct window_bench *w)
{
	struct qp_path path = {
		.dlid = lid, .rd_atomic = 1, .min_rnr_timer = 12,
		.timeout = 14, .retry_cnt = 7, .rnr_retry = 7,
		.access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			  IBV_ACCESS_REMOTE_ATOMIC,
	};
	const char *step = "";
	int ret;

	w->a = rc_qp(w->cq, w->cq, NULL);
	w->b = rc_qp(w->cq, w->cq, NULL);
	path.remote_qpn = w->b->qp_num;
	ret = qp_connect(w->a, &path, &step);
	path.remote_qpn = w->a->qp_num;
	ret = ret ? ret : qp_connect(w->b, &path, &step);
	CHECK(!ret, "connect: %s", step);
}

static void test_mw_rights(void)
{
	struct window_bench w = {
		.cq = ibv_create_cq(ctx, 16, NULL, NULL, 0),
		.target = aligned_alloc(4096, 4096),
		.mw = ibv_alloc_mw(pd, IBV_MW_TYPE_2),
		.sge = { (uintptr_t)buf, 32, mr->lkey },
	};

	w.tmr = window_mr(w.target);
	CHECK(w.cq && w.tmr && w.mw, "alloc: %s",
	      w.cq && w.tmr && w.mw ? "done" : strerror(errno));
	if (!w.cq || !w.tmr || !w.mw)
		return;
	connect_atomic_pair(&w);
	for (int i = 0; i < 4096; i++)
		w.target[i] = target_byte(i);

	window_read(&w);
	window_zero_based(&w);
	window_atomic(&w);
	window_write_refused(&w);

	ibv_destroy_qp(w.a);
	ibv_destroy_qp(w.b);
	ibv_dealloc_mw(w.mw);
	ibv_dereg_mr(w.tmr);
	ibv_destroy_cq(w.cq);
	free(w.target);
}

/*
 * What a receive of a SEND with invalidate tells an extended CQ: the
 * IBV_WC_WITH_INV flag, and through ibv_wc_read_invalidated_rkey() (the
 * immediate's reader) the key, in host order.
 */
struct inv_seen {
	uint32_t flags, rkey;
	int recvs;
};

static void read_inv(struct ibv_cq_ex *cq, int i, void *arg)
{
	struct inv_seen *seen = arg;

	CHECK(cq->status == IBV_WC_SUCCESS, "completion %d: status %d", i,
	      cq->status);
	if (ibv_wc_read_opcode(cq) != IBV_WC_RECV)
		return;
	seen->recvs++;
	seen->flags = ibv_wc_read_wc_flags(cq);
	seen->rkey = ibv_wc_read_invalidated_rkey(cq);
}

static void test_cq_ex_invalidate(void)
{
	struct ibv_cq_init_attr_ex cattr = {
		.cqe = 16, .wc_flags = IBV_WC_EX_WITH_IMM,
	};
	struct ibv_cq_ex *cq = ibv_create_cq_ex(ctx, &cattr);
	struct window_bench w = {
		.target = aligned_alloc(4096, 4096),
		.mw = ibv_alloc_mw(pd, IBV_MW_TYPE_2),
		.sge = { (uintptr_t)buf, 16, mr->lkey },
	};
	struct ibv_send_wr wr = {
		.wr_id = 64, .sg_list = &w.sge, .num_sge = 1,
		.opcode = IBV_WR_SEND_WITH_INV, .send_flags = IBV_SEND_SIGNALED,
	}, *bad;
	struct inv_seen seen = {};
	uint32_t key;
	int n;

	w.tmr = window_mr(w.target);
	CHECK(cq && w.tmr && w.mw, "alloc: %s",
	      cq && w.tmr && w.mw ? "done" : strerror(errno));
	if (!cq || !w.tmr || !w.mw)
		return;
	w.cq = ibv_cq_ex_to_cq(cq);
	connect_pair(w.cq, NULL, &w.a, &w.b);
	key = bind_window(&w, IBV_ACCESS_REMOTE_WRITE);
	CHECK(!post_recv(w.b, 65, 0), "post_recv");
	wr.invalidate_rkey = key;
	CHECK(key && !ibv_post_send(w.a, &wr, &bad), "post SEND_WITH_INV");
	n = lazy_poll(cq, 2, read_inv, &seen);
	CHECK(n == 2 && seen.recvs == 1, "%d completions, %d receives", n,
	      seen.recvs);
	CHECK(seen.flags & IBV_WC_WITH_INV,
	      "read_wc_flags: IBV_WC_WITH_INV (0x%x)", seen.flags);
	CHECK(seen.rkey == key,
	      "ibv_wc_read_invalidated_rkey: 0x%x, the window's key 0x%x",
	      seen.rkey, key);

	ibv_destroy_qp(w.a);
	ibv_destroy_qp(w.b);
	ibv_dealloc_mw(w.mw);
	ibv_dereg_mr(w.tmr);
	ibv_destroy_cq(w.cq);
	free(w.target);
}

/* A completion's wall-clock time, into @arg's array at @i. */
static void read_wallclock(struct ibv_cq_ex *cq, int i, void *arg)
{
	uint64_t *ns = arg;

	CHECK(cq->status == IBV_WC_SUCCESS, "status %d", cq->status);
	ns[i] = ibv_wc_read_completion_wallclock_ns(cq);
}

/*
 * A CQ asked for wall-clock times alone, without the raw timestamps
 * (libmlx4 only): the device must still be told to stamp its CQEs, and
 * each time lies within the run, none before the one polled earlier.
 */
static void test_cq_wallclock_alone(int project)
{
	struct ibv_cq_init_attr_ex cattr = {
		.cqe = 64,
		.wc_flags = IBV_WC_EX_WITH_BYTE_LEN |
			    IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK,
	};
	struct ibv_cq_ex *cq = ibv_create_cq_ex(ctx, &cattr);
	uint64_t ns[8], before, after, slack = 20000000;
	int n, within = 1, ordered = 1;
	struct ibv_qp *a, *b;

	if (!project) {
		CHECK(!cq && errno == EOPNOTSUPP,
		      "rdma-core's mlx4: wall-clock times alone refused: %s",
		      cq ? "created" : strerror(errno));
		if (cq)
			ibv_destroy_cq(ibv_cq_ex_to_cq(cq));
		return;
	}
	CHECK(cq != NULL, "ibv_create_cq_ex with wall-clock times alone: %s",
	      cq ? "created" : strerror(errno));
	if (!cq)
		return;
	connect_pair(ibv_cq_ex_to_cq(cq), NULL, &a, &b);
	before = realtime_ns();
	four_sends(a, b, 2000);
	n = lazy_poll(cq, 8, read_wallclock, ns);
	after = realtime_ns();
	CHECK(n == 8, "%d completions", n);
	for (int i = 0; i < n; i++) {
		within &= ns[i] + slack >= before && ns[i] <= after + slack;
		ordered &= !i || ns[i] >= ns[i - 1];
	}
	CHECK(within && ordered,
	      "wall-clock times within the run, in order: first %llu, last %llu, run %llu..%llu",
	      (unsigned long long)ns[0], (unsigned long long)ns[n ? n - 1 : 0],
	      (unsigned long long)before, (unsigned long long)after);
	ibv_destroy_qp(a);
	ibv_destroy_qp(b);
	ibv_destroy_cq(ibv_cq_ex_to_cq(cq));
}

/*
 * A QP on an SRQ destroyed with its receive completions unpolled: the
 * provider, dropping them from the CQ, gives their WQEs back to the SRQ,
 * which then takes max_wr receives again (and no more), and a new QP's
 * messages consume them all.
 */
static int fill_srq(struct ibv_srq *srq, int max, uint64_t first_id)
{
	struct ibv_sge sge = { (uintptr_t)buf, MSG, mr->lkey };
	struct ibv_recv_wr wr = { .sg_list = &sge, .num_sge = 1 }, *bad;
	int i;

	for (i = 0; i < max + 1; i++) {
		wr.wr_id = first_id + i;
		if (ibv_post_srq_recv(srq, &wr, &bad))
			break;
	}
	return i;
}

static void test_srq_destroyed_qp(void)
{
	struct ibv_srq_init_attr sattr = { .attr = { .max_wr = 16, .max_sge = 1 } };
	struct ibv_cq *acq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	struct ibv_cq *bcq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	struct ibv_srq *srq = ibv_create_srq(pd, &sattr);
	int max = sattr.attr.max_wr, n, i;
	struct ibv_wc wc[64];
	struct ibv_qp *a, *b;

	CHECK(acq && bcq && srq && max <= 48, "SRQ of %d", max);
	if (!acq || !bcq || !srq || max > 48)
		return;
	n = fill_srq(srq, max, 1000);
	CHECK(n == max, "the new SRQ takes %d receives, max_wr %d", n, max);
	a = rc_qp(acq, acq, NULL);
	b = rc_qp(bcq, bcq, srq);
	CHECK(!to_rts(a, b->qp_num) && !to_rts(b, a->qp_num), "connect");
	for (i = 0; i < 6; i++)
		post_send(a, 20 + i, 8, 0);
	n = poll_n(acq, 6, wc);
	CHECK(n == 6 && !wc[0].status && !wc[5].status,
	      "six SENDs consume six SRQ WQEs (%d completions)", n);
	CHECK(!ibv_destroy_qp(b), "destroy the receiver, its six completions unpolled");
	n = fill_srq(srq, max, 2000);
	CHECK(n == 6, "the SRQ takes back 6 receives, no more: %d", n);

	/* And the slots are live: a new receiver consumes all max_wr. */
	b = rc_qp(bcq, bcq, srq);
	ibv_destroy_qp(a);
	a = rc_qp(acq, acq, NULL);
	CHECK(!to_rts(a, b->qp_num) && !to_rts(b, a->qp_num), "connect again");
	for (i = 0; i < max; i++)
		post_send(a, 100 + i, 8, 0);
	n = poll_n(bcq, max, wc);
	for (i = 0; i < n && !wc[i].status && wc[i].qp_num == b->qp_num; i++)
		;
	CHECK(n == max && i == n,
	      "a new QP on the SRQ receives %d messages (%d, first bad %d)",
	      max, n, i);
	ibv_destroy_qp(a);
	ibv_destroy_qp(b);
	CHECK(!ibv_destroy_srq(srq), "destroy srq");
	ibv_destroy_cq(acq);
	ibv_destroy_cq(bcq);
}

/* A UD QP in RTS, made with @create_flags (0: by ibv_create_qp). */
static struct ibv_qp *ud_qp_flags(struct ibv_cq *cq, uint32_t create_flags)
{
	struct ibv_qp_init_attr_ex attr = {
		.send_cq = cq, .recv_cq = cq,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_UD, .pd = pd, .create_flags = create_flags,
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS,
	};
	struct ibv_qp *qp = create_flags ? ibv_create_qp_ex(ctx, &attr) :
			    ibv_create_qp(pd, (struct ibv_qp_init_attr *)&attr);
	const struct qp_path path = { .qkey = 0x1a2b3c4d };
	const char *step;

	if (!qp)
		die("ibv_create_qp UD");
	if (qp_connect(qp, &path, &step))
		die(step);
	return qp;
}

static struct ibv_qp *ud_qp(struct ibv_cq *cq)
{
	return ud_qp_flags(cq, 0);
}

/* A signalled SEND of 16 bytes from @qp to the group of @ah. */
static int post_to_group(struct ibv_qp *qp, struct ibv_ah *ah, uint64_t wr_id)
{
	struct ibv_send_wr swr = {
		.wr_id = wr_id, .num_sge = 1, .opcode = IBV_WR_SEND,
		.sg_list = &(struct ibv_sge){ (uintptr_t)buf + 512, 16, mr->lkey },
		.send_flags = IBV_SEND_SIGNALED,
		.wr.ud = { .ah = ah, .remote_qpn = 0xffffff,
			   .remote_qkey = 0x1a2b3c4d },
	}, *bad;

	return ibv_post_send(qp, &swr, &bad);
}

/*
 * A UD message to a multicast group one QP joined.  On RoCE the address
 * handle's multicast bit (and the VLAN bit, on a VLAN) share the address
 * vector's port byte: the device takes the port from its low bits.
 */
static void test_mcast(void)
{
	union ibv_gid mgid = { .raw = { 0xff, 0x12, 0x40, 0x1b, [15] = 0x42 } };
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	struct ibv_qp *a = ud_qp(cq), *b = ud_qp(cq);
	struct ibv_ah_attr ah_attr = {
		.grh = { .dgid = mgid, .hop_limit = 1 },
		.dlid = 0xc042, .is_global = 1, .port_num = 1,
	};
	struct ibv_sge sge = { (uintptr_t)buf, 40 + 16, mr->lkey };
	struct ibv_recv_wr rwr = { .wr_id = 81, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *rbad;
	struct ibv_wc wc[2];
	struct ibv_ah *ah;
	int n, i, got_recv = 0;

	CHECK(!ibv_attach_mcast(b, &mgid, 0xc042), "attach");
	ah = ibv_create_ah(pd, &ah_attr);
	CHECK(ah != NULL, "create_ah");
	if (!ah)
		return;

	CHECK(!ibv_post_recv(b, &rwr, &rbad), "post_recv");
	CHECK(!post_to_group(a, ah, 82), "post_send to the group");
	n = poll_n(cq, 2, wc);
	for (i = 0; i < n; i++) {
		if (wc[i].wr_id == 82)
			CHECK(!wc[i].status, "the send to the group: %s",
			      ibv_wc_status_str(wc[i].status));
		if (wc[i].wr_id != 81)
			continue;
		got_recv = 1;
		CHECK(!wc[i].status && (wc[i].wc_flags & IBV_WC_GRH) &&
		      wc[i].byte_len == 40 + 16 && wc[i].src_qp == a->qp_num,
		      "multicast receive: %s, flags %x, %u bytes",
		      ibv_wc_status_str(wc[i].status), wc[i].wc_flags,
		      wc[i].byte_len);
	}
	CHECK(n == 2 && got_recv, "%d completions", n);
	CHECK(!ibv_detach_mcast(b, &mgid, 0xc042), "detach");

	ibv_destroy_ah(ah);
	ibv_destroy_qp(a);
	ibv_destroy_qp(b);
	ibv_destroy_cq(cq);
}

/*
 * The GRH's traffic class and flow label, and the service level, other
 * than 0, on every kind of GID: RoCE v1, v2 over IPv6, v2 over IPv4
 * (on InfiniBand ports, GID 0).  A UD datagram's receiver finds them in
 * the GRH room of its buffer (v2 over IPv4: the IPv4 header in its last
 * 20 bytes, the traffic class as its TOS byte); an RC pair whose path
 * has them sends a message.  tests/verbs/roce.sh runs this case under a
 * capture and reads the same values off the wire, RC's and UD's, from
 * grh_tclass() and grh_flow_label().
 */
enum { GRH_SL = 5 };

static uint8_t grh_tclass(int gid_index, bool rc)
{
	return (rc ? 0xa0 : 0x60) | gid_index << 2;	/* DSCP, ECN 0 */
}

static uint32_t grh_flow_label(int gid_index, bool rc)
{
	return (rc ? 0xabc00 : 0x12340) + gid_index;
}

static void grh_of(int gid_index, bool rc, struct ibv_global_route *grh)
{
	memset(grh, 0, sizeof(*grh));
	if (ibv_query_gid(ctx, 1, gid_index, &grh->dgid))
		die("ibv_query_gid");
	grh->sgid_index = gid_index;
	grh->hop_limit = 64;
	grh->traffic_class = grh_tclass(gid_index, rc);
	grh->flow_label = grh_flow_label(gid_index, rc);
}

/* Whether the GRH room @g of a UD receive holds @gid_index's UD values. */
static bool grh_room_holds(const uint8_t *g, int gid_index, bool ipv4)
{
	uint32_t word = (uint32_t)g[0] << 24 | g[1] << 16 | g[2] << 8 | g[3];

	if (ipv4)
		return g[20] == 0x45 && g[21] == grh_tclass(gid_index, false);
	return word == (6u << 28 | (uint32_t)grh_tclass(gid_index, false) << 20 |
			grh_flow_label(gid_index, false));
}

/*
 * A datagram of 15 bytes with immediate data sent by @swr's QP @a to @b:
 * the lengths in the receiver's GRH room are the packet's, the ImmDt
 * and the pad to 4 bytes counted (BTH 12, DETH 8, ImmDt 4, 15 + 1, ICRC
 * 4): the GRH's payload length, v2's UDP header besides, and over IPv4
 * the IPv4 header too, its total length.
 */
static void grh_ud_length(struct ibv_cq *cq, struct ibv_qp *a,
			  struct ibv_qp *b, struct ibv_send_wr *swr,
			  int gid_index, bool ipv4)
{
	struct ibv_sge sge = { (uintptr_t)buf, 40 + 16, mr->lkey };
	struct ibv_recv_wr rwr = { .wr_id = 87, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *rbad;
	struct ibv_send_wr *sbad;
	bool v2 = roce && gid_index != 0;
	unsigned int want = 44 + (v2 ? 8 : 0) + (ipv4 ? 20 : 0), got;
	struct ibv_wc wc[2];
	int n;

	swr->opcode = IBV_WR_SEND_WITH_IMM;
	swr->imm_data = htobe32(0x1234);
	swr->sg_list->length = 15;
	memset(buf, 0, 40);
	n = !ibv_post_recv(b, &rwr, &rbad) && !ibv_post_send(a, swr, &sbad) ?
	    poll_n(cq, 2, wc) : 0;
	got = ipv4 ? buf[22] << 8 | buf[23] : buf[4] << 8 | buf[5];
	CHECK(n == 2 && !wc[0].status && !wc[1].status && got == want,
	      "UD on GID %d, 15 bytes and immediate data: the receiver's GRH room gives the %s as the packet's, %u (%u)",
	      gid_index, ipv4 ? "IPv4 total length" : v2 ?
	      "IPv6 payload length" : "GRH's payload length", want, got);
}

static void grh_ud(struct ibv_cq *cq, int gid_index, bool ipv4)
{
	struct ibv_ah_attr ah_attr = {
		.is_global = 1, .sl = GRH_SL, .port_num = 1, .dlid = lid,
	};
	struct ibv_qp *a = ud_qp(cq), *b = ud_qp(cq);
	struct ibv_sge sge = { (uintptr_t)buf, 40 + 16, mr->lkey };
	struct ibv_recv_wr rwr = { .wr_id = 85, .sg_list = &sge, .num_sge = 1 };
	struct ibv_send_wr swr = {
		.wr_id = 86, .num_sge = 1, .opcode = IBV_WR_SEND,
		.sg_list = &(struct ibv_sge){ (uintptr_t)buf + 512, 16, mr->lkey },
		.send_flags = IBV_SEND_SIGNALED,
	}, *sbad;
	struct ibv_recv_wr *rbad;
	struct ibv_wc wc[2];
	struct ibv_ah *ah;
	int n;

	grh_of(gid_index, false, &ah_attr.grh);
	ah = ibv_create_ah(pd, &ah_attr);
	memset(buf, 0, 40);
	swr.wr.ud = (typeof(swr.wr.ud)){ .ah = ah, .remote_qpn = b->qp_num,
					 .remote_qkey = 0x1a2b3c4d };
	n = ah && !ibv_post_recv(b, &rwr, &rbad) &&
	    !ibv_post_send(a, &swr, &sbad) ? poll_n(cq, 2, wc) : 0;
	CHECK(n == 2 && !wc[0].status && !wc[1].status &&
	      grh_room_holds(buf, gid_index, ipv4),
	      "UD on GID %d, traffic class 0x%x, flow label 0x%x, SL %d: the receiver's GRH room holds them (%d completions)",
	      gid_index, grh_tclass(gid_index, false),
	      grh_flow_label(gid_index, false), GRH_SL, n);
	if (ah)
		grh_ud_length(cq, a, b, &swr, gid_index, ipv4);
	if (ah)
		ibv_destroy_ah(ah);
	ibv_destroy_qp(a);
	ibv_destroy_qp(b);
}

/* @qp to RTS towards @dest on a path through GID @gid_index, with RC's values. */
static int grh_connect(struct ibv_qp *qp, uint32_t dest, int gid_index)
{
	struct ibv_qp_attr attr = {
		.qp_state = IBV_QPS_INIT, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE,
	};
	int ret = ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);

	attr = (struct ibv_qp_attr){
		.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024,
		.dest_qp_num = dest, .max_dest_rd_atomic = 1,
		.min_rnr_timer = 12,
		.ah_attr = { .is_global = 1, .sl = GRH_SL, .port_num = 1,
			     .dlid = lid },
	};
	grh_of(gid_index, true, &attr.ah_attr.grh);
	ret = ret ? ret : ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_AV |
					IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
					IBV_QP_RQ_PSN |
					IBV_QP_MAX_DEST_RD_ATOMIC |
					IBV_QP_MIN_RNR_TIMER);
	attr = (struct ibv_qp_attr){
		.qp_state = IBV_QPS_RTS, .timeout = 14, .retry_cnt = 7,
		.rnr_retry = 7, .max_rd_atomic = 1,
	};
	return ret ? ret : ibv_modify_qp(qp, &attr, IBV_QP_STATE |
					 IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
					 IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
					 IBV_QP_MAX_QP_RD_ATOMIC);
}

static void grh_rc(struct ibv_cq *cq, int gid_index)
{
	struct ibv_qp *a = rc_qp(cq, cq, NULL), *b = rc_qp(cq, cq, NULL);
	struct ibv_qp_attr got;
	struct ibv_qp_init_attr init;
	struct ibv_wc wc[2];
	int n = 0;

	if (!grh_connect(a, b->qp_num, gid_index) &&
	    !grh_connect(b, a->qp_num, gid_index) && !post_recv(b, 87, 0) &&
	    !post_send(a, 88, 1, 0))
		n = poll_n(cq, 2, wc);
	CHECK(n == 2 && !wc[0].status && !wc[1].status,
	      "RC on GID %d, traffic class 0x%x, flow label 0x%x, SL %d: a SEND arrives (%d completions)",
	      gid_index, grh_tclass(gid_index, true),
	      grh_flow_label(gid_index, true), GRH_SL, n);
	memset(&got, 0, sizeof(got));
	n = ibv_query_qp(a, &got, IBV_QP_AV, &init);
	CHECK(!n &&
	      got.ah_attr.grh.traffic_class == grh_tclass(gid_index, true) &&
	      got.ah_attr.grh.flow_label == grh_flow_label(gid_index, true) &&
	      got.ah_attr.sl == GRH_SL,
	      "the QP's path keeps them (tclass 0x%x, flow label 0x%x, SL %d)",
	      got.ah_attr.grh.traffic_class, got.ah_attr.grh.flow_label,
	      got.ah_attr.sl);
	ibv_destroy_qp(a);
	ibv_destroy_qp(b);
}

static void test_grh_fields(void)
{
	/* RoCE: v1, v2 over IPv6 (link-local), v2 over IPv4 (sysfs's order). */
	static const int roce_gids[] = { 0, 1, 3 };
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	int n = roce ? 3 : 1;

	if (!cq)
		die("ibv_create_cq");
	for (int i = 0; i < n; i++) {
		grh_ud(cq, roce_gids[i], roce_gids[i] == 3);
		grh_rc(cq, roce_gids[i]);
	}
	ibv_destroy_cq(cq);
}

/*
 * A QP made with IBV_QP_CREATE_BLOCK_SELF_MCAST_LB receives nothing it
 * sends to a group it joined; another member does.  mlx4_ib keeps the
 * flag (MLX4_IB_QP_BLOCK_MULTICAST_LOOPBACK) and attaches the QP to a
 * group with loopback blocked (mlx4_multicast_attach).
 */
static void test_mcast_block_self(void)
{
	union ibv_gid mgid = { .raw = { 0xff, 0x12, 0x40, 0x1b, [15] = 0x43 } };
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	struct ibv_qp *a = ud_qp_flags(cq, IBV_QP_CREATE_BLOCK_SELF_MCAST_LB);
	struct ibv_qp *b = ud_qp(cq);
	struct ibv_ah_attr ah_attr = {
		.grh = { .dgid = mgid, .hop_limit = 1 },
		.dlid = 0xc043, .is_global = 1, .port_num = 1,
	};
	struct ibv_sge sge = { (uintptr_t)buf, 40 + 16, mr->lkey };
	struct ibv_recv_wr ra = { .wr_id = 71, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr rb = { .wr_id = 72, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *rbad;
	struct ibv_ah *ah = ibv_create_ah(pd, &ah_attr);
	struct ibv_wc wc[3];
	int n;

	CHECK(ah && !ibv_attach_mcast(a, &mgid, 0xc043) &&
	      !ibv_attach_mcast(b, &mgid, 0xc043) &&
	      !ibv_post_recv(a, &ra, &rbad) && !ibv_post_recv(b, &rb, &rbad) &&
	      !post_to_group(a, ah, 73),
	      "two members, one blocking its own multicast, which sends");
	n = poll_n(cq, 2, wc);
	usleep(50000);
	n += ibv_poll_cq(cq, 1, wc + n);
	CHECK(n == 2 && wc[0].wr_id + wc[1].wr_id == 72 + 73 && !wc[0].status &&
	      !wc[1].status,
	      "the other member receives, the sender only completes its send (%d completions, first %llu)",
	      n, n > 0 ? (unsigned long long)wc[0].wr_id : 0ULL);
	ibv_detach_mcast(a, &mgid, 0xc043);
	ibv_detach_mcast(b, &mgid, 0xc043);
	if (ah)
		ibv_destroy_ah(ah);
	ibv_destroy_qp(a);
	ibv_destroy_qp(b);
	ibv_destroy_cq(cq);
}

enum { IPOIB_UDP = 4 + 20 + 8 + 32 };	/* an IPoIB datagram of UDP */

/*
 * An IPoIB datagram: the encapsulation header (ethertype IPv4), an IPv4
 * header, UDP and 32 bytes; with @sums its checksums are computed here,
 * else left zero.
 */
static void ipoib_udp(uint8_t *d, bool sums)
{
	uint8_t *ip = d + 4, *udp = ip + 20;
	uint16_t sum;

	memset(d, 0, IPOIB_UDP);
	d[0] = 0x08;
	ip[0] = 0x45;
	ip[3] = IPOIB_UDP - 4;
	ip[8] = 64;
	ip[9] = 17;
	ip[12] = 10, ip[15] = 1;
	ip[16] = 10, ip[19] = 2;
	udp[0] = 0x30, udp[1] = 0x39;
	udp[2] = 0x1f, udp[3] = 0x90;
	udp[5] = 8 + 32;
	for (int i = 0; i < 32; i++)
		udp[8 + i] = 0x11 * i + 7;
	if (!sums)
		return;
	sum = inet_csum(ip, 20, 0);
	ip[10] = sum >> 8, ip[11] = sum;
	/* over the pseudo-header (addresses, protocol, length) and UDP */
	sum = inet_csum(udp, 8 + 32,
			(uint32_t)(inet_csum(ip + 12, 8, 17 + 8 + 32) ^ 0xffff));
	udp[6] = sum >> 8, udp[7] = sum;
}

/*
 * One UD datagram of @len bytes at @out from @a to @b through @ah, with
 * @flags; @in receives it (after the GRH's 40 bytes).  The receive's
 * wc_flags, or -1 when it did not arrive.
 */
static int ud_exchange(struct ibv_qp *a, struct ibv_qp *b, struct ibv_ah *ah,
		       struct ibv_mr *m, uint8_t *out, uint8_t *in,
		       size_t len, unsigned int flags)
{
	struct ibv_sge rsge = { (uintptr_t)in, 40 + len, m->lkey };
	struct ibv_sge ssge = { (uintptr_t)out, len, m->lkey };
	struct ibv_recv_wr rwr = { .wr_id = 1, .sg_list = &rsge, .num_sge = 1 };
	struct ibv_send_wr swr = {
		.wr_id = 2, .sg_list = &ssge, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED | flags,
		.wr.ud = { .ah = ah, .remote_qpn = b->qp_num,
			   .remote_qkey = 0x1a2b3c4d },
	}, *sbad;
	struct ibv_recv_wr *rbad;
	struct ibv_wc wc[2];
	int ret = -1;

	if (ibv_post_recv(b, &rwr, &rbad) || ibv_post_send(a, &swr, &sbad) ||
	    poll_n(a->send_cq, 2, wc) != 2)
		return -1;
	for (int i = 0; i < 2; i++)
		if (wc[i].wr_id == 1 && !wc[i].status && wc[i].byte_len == 40 + len)
			ret = wc[i].wc_flags;
	return ret;
}

/*
 * UD checksum offload on InfiniBand, which mlx4_ib advertises
 * (IBV_DEVICE_UD_IP_CSUM: the firmware's IPoIB checksums): the device
 * fills in an IPoIB datagram's IPv4 header and UDP checksums when the
 * send asks (IBV_SEND_IP_CSUM), and the receive says IBV_WC_IP_CSUM_OK
 * when they hold, and not when they do not or the datagram is not IP.
 */
static void test_ud_csum(void)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	struct ibv_qp *a = ud_qp(cq), *b = ud_qp(cq);
	struct ibv_ah_attr ah_attr = { .dlid = lid, .port_num = 1 };
	struct ibv_ah *ah = ibv_create_ah(pd, &ah_attr);
	uint8_t *area = calloc(1, 1024), *out = area, *in = area + 512;
	uint8_t want[IPOIB_UDP];
	struct ibv_mr *m = area ? ibv_reg_mr(pd, area, 1024,
					     IBV_ACCESS_LOCAL_WRITE) : NULL;
	int flags;

	if (!ah || !m)
		die("an address handle and a buffer for UD");
	ipoib_udp(want, true);
	ipoib_udp(out, false);
	flags = ud_exchange(a, b, ah, m, out, in, IPOIB_UDP, IBV_SEND_IP_CSUM);
	CHECK(flags >= 0 && !memcmp(in + 40, want, IPOIB_UDP),
	      "IBV_SEND_IP_CSUM: the IPv4 and UDP checksums filled in");
	CHECK(flags >= 0 && (flags & IBV_WC_IP_CSUM_OK),
	      "and the receive says IBV_WC_IP_CSUM_OK (flags 0x%x)", flags);
	ipoib_udp(out, true);
	flags = ud_exchange(a, b, ah, m, out, in, IPOIB_UDP, 0);
	CHECK(flags >= 0 && (flags & IBV_WC_IP_CSUM_OK) &&
	      !memcmp(in + 40, want, IPOIB_UDP),
	      "sums computed by the sender: IBV_WC_IP_CSUM_OK (flags 0x%x)",
	      flags);
	out[4 + 20 + 7] ^= 0x5a;
	flags = ud_exchange(a, b, ah, m, out, in, IPOIB_UDP, 0);
	CHECK(flags >= 0 && !(flags & IBV_WC_IP_CSUM_OK),
	      "a UDP checksum that does not hold: no IBV_WC_IP_CSUM_OK (flags 0x%x)",
	      flags);
	ipoib_udp(out, true);
	out[1] = 0x06;			/* ARP */
	flags = ud_exchange(a, b, ah, m, out, in, IPOIB_UDP, 0);
	CHECK(flags >= 0 && !(flags & IBV_WC_IP_CSUM_OK),
	      "a datagram that is not IP: no IBV_WC_IP_CSUM_OK (flags 0x%x)",
	      flags);
	ibv_dereg_mr(m);
	free(area);
	ibv_destroy_ah(ah);
	ibv_destroy_qp(a);
	ibv_destroy_qp(b);
	ibv_destroy_cq(cq);
}

/* An XRC target QP, and the same QP opened by number. */
static void test_xrc_open(void)
{
	struct ibv_xrcd_init_attr xattr = {
		.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
		.fd = -1, .oflags = O_CREAT,
	};
	struct ibv_xrcd *xrcd = ibv_open_xrcd(ctx, &xattr);
	struct ibv_qp_init_attr_ex qattr = {
		.qp_type = IBV_QPT_XRC_RECV,
		.comp_mask = IBV_QP_INIT_ATTR_XRCD,
		.xrcd = xrcd,
	};
	struct ibv_qp_open_attr oattr = {
		.comp_mask = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD |
			     IBV_QP_OPEN_ATTR_TYPE,
		.qp_type = IBV_QPT_XRC_RECV,
		.xrcd = xrcd,
	};
	struct ibv_qp *tgt, *opened;

	CHECK(xrcd != NULL, "open_xrcd: %s", strerror(errno));
	if (!xrcd)
		return;
	tgt = ibv_create_qp_ex(ctx, &qattr);
	CHECK(tgt != NULL, "XRC target QP: %s", strerror(errno));
	if (tgt) {
		oattr.qp_num = tgt->qp_num;
		opened = ibv_open_qp(ctx, &oattr);
		CHECK(opened && opened->qp_num == tgt->qp_num, "open_qp: %s",
		      strerror(errno));
		if (opened)
			CHECK(!ibv_destroy_qp(opened), "close the opened QP");
		CHECK(!ibv_destroy_qp(tgt), "destroy the target QP");
	}
	CHECK(!ibv_close_xrcd(xrcd), "close_xrcd");
}

static void test_rt_values(void)
{
	struct ibv_values_ex v1 = { .comp_mask = IBV_VALUES_MASK_RAW_CLOCK };
	struct ibv_values_ex v2 = { .comp_mask = IBV_VALUES_MASK_RAW_CLOCK };
	int ret = ibv_query_rt_values_ex(ctx, &v1);

	/* mlx4_ib offers the clock page; so does the simulator. */
	CHECK(!ret && !ibv_query_rt_values_ex(ctx, &v2), "query_rt_values: %s",
	      strerror(ret));
	CHECK(v2.raw_clock.tv_nsec >= v1.raw_clock.tv_nsec, "the clock runs on");
}

/*
 * The extended device attributes as mlx4_ib reports them for a
 * ConnectX-3 whose ports are all InfiniBand: RSS and TSO are offered on
 * Ethernet ports only, so every field of theirs is zero, in the common
 * response and in the driver's part the provider passes on.
 */
static void test_device_ex(void)
{
	struct ibv_device_attr_ex attr;

	memset(&attr, 0xa5, sizeof(attr));
	CHECK(!ibv_query_device_ex(ctx, NULL, &attr), "query_device_ex");
	CHECK(!attr.rss_caps.supported_qpts &&
	      !attr.rss_caps.max_rwq_indirection_tables &&
	      !attr.rss_caps.max_rwq_indirection_table_size &&
	      !attr.max_wq_type_rq, "no RSS on InfiniBand: qpts 0x%x, "
	      "%u tables of %u, %u WQs", attr.rss_caps.supported_qpts,
	      attr.rss_caps.max_rwq_indirection_tables,
	      attr.rss_caps.max_rwq_indirection_table_size,
	      attr.max_wq_type_rq);
	CHECK(!attr.rss_caps.rx_hash_fields_mask &&
	      !attr.rss_caps.rx_hash_function,
	      "no hashing: fields 0x%llx, function 0x%x",
	      (unsigned long long)attr.rss_caps.rx_hash_fields_mask,
	      attr.rss_caps.rx_hash_function);
	CHECK(!attr.tso_caps.max_tso && !attr.tso_caps.supported_qpts,
	      "no TSO: %u bytes, qpts 0x%x", attr.tso_caps.max_tso,
	      attr.tso_caps.supported_qpts);
	CHECK(!attr.raw_packet_caps, "raw packet caps 0x%x",
	      attr.raw_packet_caps);
	CHECK(attr.orig_attr.device_cap_flags & IBV_DEVICE_UD_IP_CSUM,
	      "UD checksum offload offered");
}

/*
 * Usage: provider-verbs [project|system]: which provider runs it, for
 * the features only libmlx4 has; with neither, only what both have
 * (tests/verbs/difftrace.tap compares the two running that).
 */
static const char *provider = "common";

/*
 * Whether a case for InfiniBand ports runs: on Ethernet ports
 * (provider-verbs-eth-*) only the RoCE cases do; one named there says
 * why it prints nothing.
 */
static bool ib_case(const char *name)
{
	if (roce && cases_chosen)
		printf("# %s: InfiniBand ports only (port 1 is Ethernet)\n",
		       name);
	return !roce;
}

#define IB_CASE(fn)							\
	static void fn##_ib(void)					\
	{								\
		if (ib_case(#fn + sizeof("test_") - 1))					\
			fn();						\
	}
IB_CASE(test_resize)
IB_CASE(test_cq_ex)
IB_CASE(test_cq_timestamps)
IB_CASE(test_reset)
IB_CASE(test_srq)
IB_CASE(test_refusals)
IB_CASE(test_mw)
IB_CASE(test_uc_key_ops)
IB_CASE(test_mw_rights)
IB_CASE(test_cq_ex_invalidate)
IB_CASE(test_srq_destroyed_qp)
IB_CASE(test_xrc_open)
IB_CASE(test_rt_values)
IB_CASE(test_device_ex)
IB_CASE(test_ud_csum)

/* What the providers differ on: not for a run naming neither. */
static void test_cq_wallclock_ib(void)
{
	if (!ib_case("cq_wallclock"))
		return;
	if (strcmp(provider, "common"))
		test_cq_wallclock(!strcmp(provider, "project"));
	else if (cases_chosen)
		printf("# cq_wallclock: needs the provider, project or "
		       "system, as the first argument\n");
}

static void test_cq_wallclock_alone_ib(void)
{
	if (!ib_case("cq_wallclock_alone"))
		return;
	if (strcmp(provider, "common"))
		test_cq_wallclock_alone(!strcmp(provider, "project"));
	else if (cases_chosen)
		printf("# cq_wallclock_alone: needs the provider, project or "
		       "system, as the first argument\n");
}

/*
 * The cases, in the order a full run takes them: on InfiniBand ports all
 * of them, on Ethernet ports the RoCE ones (mcast, mcast_block_self,
 * grh_fields).
 * They share the device, its PD and a registered buffer (main() sets them up before any case); each makes
 * its own CQs and QPs and writes the buffer slots it sends, so each runs
 * alone as in the full run.
 */
static const struct test_case cases[] = {
	{ "resize", test_resize_ib,
	  "ibv_resize_cq under outstanding completions" },
	{ "cq_ex", test_cq_ex_ib,
	  "polling through the extended CQ interface" },
	{ "cq_timestamps", test_cq_timestamps_ib,
	  "completion timestamps against the HCA clock" },
	{ "cq_wallclock", test_cq_wallclock_ib,
	  "completion times in wall-clock ns (with a provider named)" },
	{ "cq_wallclock_alone", test_cq_wallclock_alone_ib,
	  "a CQ asked for wall-clock times alone (with a provider named)" },
	{ "reset", test_reset_ib, "a QP through RESET and back" },
	{ "srq", test_srq_ib, "a shared receive queue and its limit" },
	{ "refusals", test_refusals_ib,
	  "requests each data verb must refuse: errno, bad_wr, nothing posted" },
	{ "mw", test_mw_ib,
	  "memory windows of type 1 and 2, bound and invalidated" },
	{ "mw_rights", test_mw_rights_ib,
	  "windows' rights: READ, zero-based, atomic, a WRITE refused" },
	{ "cq_ex_invalidate", test_cq_ex_invalidate_ib,
	  "ibv_wc_read_invalidated_rkey after a SEND with invalidate" },
	{ "srq_destroyed_qp", test_srq_destroyed_qp_ib,
	  "a QP destroyed with SRQ completions unpolled gives the slots back" },
	{ "uc_key_ops", test_uc_key_ops_ib,
	  "UC's key operations and SEND with invalidate" },
	{ "mcast", test_mcast,
	  "a UD message to a multicast group (RoCE too)" },
	{ "mcast_block_self", test_mcast_block_self,
	  "IBV_QP_CREATE_BLOCK_SELF_MCAST_LB (RoCE too)" },
	{ "grh_fields", test_grh_fields,
	  "traffic class, flow label and SL other than 0, UD and RC (RoCE too)" },
	{ "xrc_open", test_xrc_open_ib,
	  "an XRC target QP, and the same QP opened by number" },
	{ "rt_values", test_rt_values_ib, "ibv_query_rt_values_ex" },
	{ "device_ex", test_device_ex_ib,
	  "the extended device attributes of an InfiniBand ConnectX-3" },
	{ "ud_csum", test_ud_csum_ib,
	  "UD checksum offload of IPoIB datagrams: filled in, IBV_WC_IP_CSUM_OK" },
};

/* The provider argument, if any, is one of these; the case names follow. */
static bool is_provider(const char *arg)
{
	return !strcmp(arg, "project") || !strcmp(arg, "system") ||
	       !strcmp(arg, "common");
}

int main(int argc, char **argv)
{
	struct ibv_port_attr port;
	int first = 1, ret;

	if (argc > 1 && is_provider(argv[1]))
		provider = argv[first++];
	ret = cases_select(cases, CASES_N(cases), argc, argv, first);
	if (ret >= 0)
		return ret;

	setvbuf(stdout, NULL, _IONBF, 0);
	ctx = open_first_device("provider-verbs");
	if (ibv_query_port(ctx, 1, &port))
		die("ibv_query_port");
	roce = port.link_layer == IBV_LINK_LAYER_ETHERNET;
	lid = port.lid;
	pd = ibv_alloc_pd(ctx);
	buf = calloc(NBUF, MSG);
	if (!pd || !buf)
		die("ibv_alloc_pd");
	mr = ibv_reg_mr(pd, buf, NBUF * MSG, IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	if (!mr)
		die("ibv_reg_mr");

	cases_run(cases, CASES_N(cases));

	ibv_dereg_mr(mr);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	free(buf);
	return tap_finish();
}
