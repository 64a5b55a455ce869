/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rdma-semantics: what an RC connection does when things go wrong, and
 * what RDMA reads and atomics do when they go right, seen from both ends.
 *
 * Runs on the first RDMA device with any provider (under mlx4sim: `mlx4sim
 * run --provider=system -- tests/rdma-semantics`) and prints TAP.  Each
 * case uses a fresh pair of QPs connected to each other through port 1.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <infiniband/verbs.h>

#include "device.h"
#include "tap.h"

#define BUF_SIZE	4096
#define TIMEOUT_MS	5000

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static uint16_t lid;

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000ULL + ts.tv_nsec / 1000000;
}

/* One completion, or 0 with wc->status set to -1 after the timeout. */
static int poll_one(struct ibv_cq *cq, struct ibv_wc *wc)
{
	uint64_t end = now_ms() + TIMEOUT_MS;
	int n;

	do {
		n = ibv_poll_cq(cq, 1, wc);
		if (n)
			return n;
	} while (now_ms() < end);
	wc->status = (enum ibv_wc_status)-1;
	return 0;
}

static const char *status_str(const struct ibv_wc *wc)
{
	return (int)wc->status == -1 ? "no completion" :
	       ibv_wc_status_str(wc->status);
}

/* The next async event, or -1 after the timeout. */
static int next_async_event(struct ibv_async_event *ev)
{
	struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };

	if (poll(&pfd, 1, TIMEOUT_MS) != 1)
		return -1;
	return ibv_get_async_event(ctx, ev);
}

/*
 * Wait for an async event of @type about the QP or SRQ @about, acking it
 * and any other on the way.
 */
static bool await_async_event(enum ibv_event_type type, const void *about)
{
	struct ibv_async_event ev;
	bool got = false;

	while (!got && next_async_event(&ev) == 0) {
		got = ev.event_type == type &&
		      (type == IBV_EVENT_SRQ_LIMIT_REACHED ?
		       (const void *)ev.element.srq : (const void *)ev.element.qp) == about;
		ibv_ack_async_event(&ev);
	}
	return got;
}

/*
 * Ack what a case left queued.  The device queues a responder's events
 * before the requester's completion, so what is due is there already.
 */
static void drain_async_events(void)
{
	struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };
	struct ibv_async_event ev;

	while (poll(&pfd, 1, 100) == 1 && ibv_get_async_event(ctx, &ev) == 0)
		ibv_ack_async_event(&ev);
}

/* ------------------------------------------------------------------ */
/* A pair of connected RC QPs, each with its CQ and a registered buffer */
/* ------------------------------------------------------------------ */

struct end {
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf;
};

struct pair {
	struct end a, b;
};

struct pair_opts {
	int cqe;
	uint8_t rnr_retry;
	uint8_t min_rnr_timer;
	struct ibv_comp_channel *channel;
};

static void make_end(struct end *e, const struct pair_opts *o)
{
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp_attr attr = {
		.qp_state = IBV_QPS_INIT,
		.port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_REMOTE_ATOMIC,
	};

	e->cq = ibv_create_cq(ctx, o->cqe, e, o->channel, 0);
	if (!e->cq)
		bail("ibv_create_cq");
	init.send_cq = init.recv_cq = e->cq;
	e->qp = ibv_create_qp(pd, &init);
	if (!e->qp)
		bail("ibv_create_qp");
	if (ibv_modify_qp(e->qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		bail("modify to INIT");
	e->buf = aligned_alloc(4096, BUF_SIZE);
	if (!e->buf)
		bail("aligned_alloc");
	memset(e->buf, 0, BUF_SIZE);
	e->mr = ibv_reg_mr(pd, e->buf, BUF_SIZE, IBV_ACCESS_LOCAL_WRITE |
			   IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			   IBV_ACCESS_REMOTE_ATOMIC);
	if (!e->mr)
		bail("ibv_reg_mr");
}

static void connect_end(struct end *e, uint32_t remote_qpn,
			const struct pair_opts *o)
{
	struct ibv_qp_attr attr = {
		.qp_state = IBV_QPS_RTR,
		.path_mtu = IBV_MTU_1024,
		.dest_qp_num = remote_qpn,
		.rq_psn = 0,
		.max_dest_rd_atomic = 4,
		.min_rnr_timer = o->min_rnr_timer,
		.ah_attr = { .dlid = lid, .port_num = 1 },
	};

	if (ibv_modify_qp(e->qp, &attr, IBV_QP_STATE | IBV_QP_AV |
			  IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		bail("modify to RTR");
	attr.qp_state = IBV_QPS_RTS;
	attr.timeout = 10;
	attr.retry_cnt = 2;
	attr.rnr_retry = o->rnr_retry;
	attr.sq_psn = 0;
	attr.max_rd_atomic = 4;
	if (ibv_modify_qp(e->qp, &attr, IBV_QP_STATE | IBV_QP_TIMEOUT |
			  IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
			  IBV_QP_MAX_QP_RD_ATOMIC))
		bail("modify to RTS");
}

static void make_pair(struct pair *p, const struct pair_opts *o)
{
	make_end(&p->a, o);
	make_end(&p->b, o);
	connect_end(&p->a, p->b.qp->qp_num, o);
	connect_end(&p->b, p->a.qp->qp_num, o);
}

static void free_end(struct end *e)
{
	if (ibv_destroy_qp(e->qp) || ibv_dereg_mr(e->mr) ||
	    ibv_destroy_cq(e->cq))
		bail("teardown");
	free(e->buf);
}

static void free_pair(struct pair *p)
{
	free_end(&p->a);
	free_end(&p->b);
}

static const struct pair_opts defaults = { 16, 7, 1, NULL };

static int post_send(struct end *e, enum ibv_wr_opcode op, uint32_t offset,
		     uint32_t len, uint64_t raddr, uint32_t rkey, uint64_t wr_id)
{
	struct ibv_sge sge = {
		(uintptr_t)e->buf + offset, len, e->mr->lkey
	};
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return ibv_post_send(e->qp, &wr, &bad);
}

static int post_recv(struct end *e, uint32_t offset, uint32_t len,
		     uint64_t wr_id)
{
	struct ibv_sge sge = {
		(uintptr_t)e->buf + offset, len, e->mr->lkey
	};
	struct ibv_recv_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1,
	}, *bad;

	return ibv_post_recv(e->qp, &wr, &bad);
}

static enum ibv_qp_state qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_attr attr;
	struct ibv_qp_init_attr init;

	if (ibv_query_qp(qp, &attr, IBV_QP_STATE, &init))
		bail("ibv_query_qp");
	return attr.qp_state;
}

static bool all_bytes(const uint8_t *p, int c, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != c)
			return false;
	return true;
}

/* ------------------------------------------------------------------ */
/* The cases                                                           */
/* ------------------------------------------------------------------ */

static void bad_rkey(void)
{
	struct ibv_async_event ev;
	struct ibv_wc wc;
	struct pair p;

	make_pair(&p, &defaults);
	memset(p.a.buf, 0xaa, 64);
	memset(p.b.buf, 0x5a, BUF_SIZE);
	post_send(&p.a, IBV_WR_RDMA_WRITE, 0, 64, (uintptr_t)p.b.buf,
		  p.b.mr->rkey ^ 0x80, 1);
	poll_one(p.a.cq, &wc);
	check(wc.status == IBV_WC_REM_ACCESS_ERR && wc.wr_id == 1,
	      "RDMA WRITE with a bad rkey: requester gets REM_ACCESS_ERR (%s)",
	      status_str(&wc));
	check(all_bytes(p.b.buf, 0x5a, BUF_SIZE),
	      "RDMA WRITE with a bad rkey leaves the target memory untouched");
	check(qp_state(p.a.qp) == IBV_QPS_ERR && qp_state(p.b.qp) == IBV_QPS_ERR,
	      "both QPs are in the error state after a remote access error");
	check(next_async_event(&ev) == 0 &&
	      ev.event_type == IBV_EVENT_QP_ACCESS_ERR &&
	      ev.element.qp == p.b.qp,
	      "the responder gets IBV_EVENT_QP_ACCESS_ERR");
	ibv_ack_async_event(&ev);
	free_pair(&p);
}

static void out_of_bounds(void)
{
	struct ibv_wc wc;
	struct pair p;

	make_pair(&p, &defaults);
	memset(p.b.buf, 0x5a, BUF_SIZE);
	post_send(&p.a, IBV_WR_RDMA_WRITE, 0, 64,
		  (uintptr_t)p.b.buf + BUF_SIZE - 32, p.b.mr->rkey, 2);
	poll_one(p.a.cq, &wc);
	check(wc.status == IBV_WC_REM_ACCESS_ERR,
	      "RDMA WRITE past the end of the region: REM_ACCESS_ERR (%s)",
	      status_str(&wc));
	check(all_bytes(p.b.buf, 0x5a, BUF_SIZE),
	      "and the region is untouched");
	drain_async_events();
	free_pair(&p);
}

static void rnr_retry_exceeded(void)
{
	struct pair_opts o = defaults;
	struct ibv_wc wc;
	struct pair p;

	o.rnr_retry = 0;
	make_pair(&p, &o);
	post_send(&p.a, IBV_WR_SEND, 0, 16, 0, 0, 3);
	poll_one(p.a.cq, &wc);
	check(wc.status == IBV_WC_RNR_RETRY_EXC_ERR && wc.wr_id == 3,
	      "SEND with no receive posted and rnr_retry 0: RNR_RETRY_EXC_ERR (%s)",
	      status_str(&wc));
	free_pair(&p);
}

static void rnr_then_receive(void)
{
	struct ibv_wc wc;
	struct pair p;

	/* rnr_retry 7 retries for ever: a late receive still gets it. */
	make_pair(&p, &defaults);
	memcpy(p.a.buf, "late but delivered", 19);
	post_send(&p.a, IBV_WR_SEND, 0, 19, 0, 0, 4);
	check(ibv_poll_cq(p.a.cq, 1, &wc) == 0,
	      "SEND with no receive posted does not complete while retrying");
	post_recv(&p.b, 0, 64, 5);
	poll_one(p.b.cq, &wc);
	check(wc.status == IBV_WC_SUCCESS && wc.wr_id == 5 &&
	      wc.byte_len == 19 && !memcmp(p.b.buf, "late but delivered", 19),
	      "a receive posted later gets the message (%s)", status_str(&wc));
	poll_one(p.a.cq, &wc);
	check(wc.status == IBV_WC_SUCCESS && wc.wr_id == 4,
	      "and the SEND then completes (%s)", status_str(&wc));
	free_pair(&p);
}

static void flush(void)
{
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_ERR };
	struct ibv_wc wc;
	struct pair p;
	int flushed = 0;

	make_pair(&p, &defaults);
	for (int i = 0; i < 3; i++)
		post_recv(&p.b, i * 64, 64, 100 + i);
	if (ibv_modify_qp(p.b.qp, &attr, IBV_QP_STATE))
		bail("modify to ERR");
	for (int i = 0; i < 3; i++) {
		poll_one(p.b.cq, &wc);
		flushed += wc.status == IBV_WC_WR_FLUSH_ERR &&
			   wc.wr_id == 100u + i;
	}
	check(flushed == 3,
	      "a QP moved to ERROR flushes its 3 receives, in order");
	post_recv(&p.b, 0, 64, 200);
	poll_one(p.b.cq, &wc);
	check(wc.status == IBV_WC_WR_FLUSH_ERR && wc.wr_id == 200,
	      "a receive posted in ERROR is flushed (%s)", status_str(&wc));
	post_send(&p.b, IBV_WR_SEND, 0, 8, 0, 0, 201);
	poll_one(p.b.cq, &wc);
	check(wc.status == IBV_WC_WR_FLUSH_ERR && wc.wr_id == 201,
	      "a send posted in ERROR is flushed (%s)", status_str(&wc));
	free_pair(&p);
}

static void receive_too_small(void)
{
	struct ibv_wc wc;
	struct pair p;

	make_pair(&p, &defaults);
	post_recv(&p.b, 0, 8, 6);
	post_send(&p.a, IBV_WR_SEND, 0, 64, 0, 0, 7);
	poll_one(p.b.cq, &wc);
	check(wc.status == IBV_WC_LOC_LEN_ERR && wc.wr_id == 6,
	      "a receive buffer too small: the receiver gets LOC_LEN_ERR (%s)",
	      status_str(&wc));
	poll_one(p.a.cq, &wc);
	check(wc.status == IBV_WC_REM_INV_REQ_ERR && wc.wr_id == 7,
	      "and the sender REM_INV_REQ_ERR (%s)", status_str(&wc));
	drain_async_events();
	free_pair(&p);
}

static void cq_overrun(void)
{
	struct pair_opts o = defaults;
	struct ibv_async_event ev;
	struct ibv_wc wc;
	struct pair p;
	bool got = false;

	/* The smallest CQ: the provider rounds 1 up, the device has 2^n. */
	o.cqe = 1;
	make_pair(&p, &o);
	for (int i = 0; i < 8; i++)
		post_recv(&p.b, i * 64, 64, i);
	for (int i = 0; i < 8; i++)
		post_send(&p.a, IBV_WR_SEND, 0, 8, 0, 0, i);
	while (!got && next_async_event(&ev) == 0) {
		got = ev.event_type == IBV_EVENT_CQ_ERR &&
		      (ev.element.cq == p.a.cq || ev.element.cq == p.b.cq);
		ibv_ack_async_event(&ev);
	}
	check(got, "completions beyond a CQ's size raise IBV_EVENT_CQ_ERR");
	while (ibv_poll_cq(p.a.cq, 1, &wc) > 0 || ibv_poll_cq(p.b.cq, 1, &wc) > 0)
		;
	free_pair(&p);
}

static void read_and_atomics(void)
{
	uint64_t counter, orig;
	struct ibv_wc wc;
	struct pair p;

	make_pair(&p, &defaults);
	memcpy(p.b.buf + 256, "read me from the other side", 28);
	post_send(&p.a, IBV_WR_RDMA_READ, 512, 28, (uintptr_t)p.b.buf + 256,
		  p.b.mr->rkey, 8);
	poll_one(p.a.cq, &wc);
	check(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RDMA_READ &&
	      !memcmp(p.a.buf + 512, "read me from the other side", 28),
	      "RDMA READ brings the remote bytes (%s)", status_str(&wc));

	/* ConnectX-3 atomics see the 64-bit target as big-endian. */
	counter = htobe64(40);
	memcpy(p.b.buf + 1024, &counter, 8);
	for (int i = 0; i < 2; i++) {
		struct ibv_sge sge = { (uintptr_t)p.a.buf + 1024 + 8 * i, 8,
				       p.a.mr->lkey };
		struct ibv_send_wr wr = {
			.wr_id = 9 + i, .sg_list = &sge, .num_sge = 1,
			.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
			.send_flags = IBV_SEND_SIGNALED,
		}, *bad;

		wr.wr.atomic.remote_addr = (uintptr_t)p.b.buf + 1024;
		wr.wr.atomic.rkey = p.b.mr->rkey;
		wr.wr.atomic.compare_add = 1;
		ibv_post_send(p.a.qp, &wr, &bad);
		poll_one(p.a.cq, &wc);
	}
	memcpy(&counter, p.b.buf + 1024, 8);
	memcpy(&orig, p.a.buf + 1032, 8);
	check(wc.status == IBV_WC_SUCCESS && be64toh(counter) == 42 &&
	      be64toh(orig) == 41,
	      "fetch-and-add twice: 40 becomes 42, the second fetch sees 41 (%" PRIu64 ", %" PRIu64 ")",
	      be64toh(counter), be64toh(orig));
	{
		struct ibv_sge sge = { (uintptr_t)p.a.buf + 1040, 8,
				       p.a.mr->lkey };
		struct ibv_send_wr wr = {
			.wr_id = 11, .sg_list = &sge, .num_sge = 1,
			.opcode = IBV_WR_ATOMIC_CMP_AND_SWP,
			.send_flags = IBV_SEND_SIGNALED,
		}, *bad;

		wr.wr.atomic.remote_addr = (uintptr_t)p.b.buf + 1024;
		wr.wr.atomic.rkey = p.b.mr->rkey;
		wr.wr.atomic.compare_add = 42;
		wr.wr.atomic.swap = 7;
		ibv_post_send(p.a.qp, &wr, &bad);
		poll_one(p.a.cq, &wc);
	}
	memcpy(&counter, p.b.buf + 1024, 8);
	memcpy(&orig, p.a.buf + 1040, 8);
	check(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_COMP_SWAP &&
	      be64toh(counter) == 7 && be64toh(orig) == 42,
	      "compare-and-swap 42 -> 7 swaps and returns 42 (%s)",
	      status_str(&wc));
	free_pair(&p);
}

static void immediate_and_events(void)
{
	struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
	struct pair_opts o = defaults;
	struct ibv_cq *ev_cq;
	struct pollfd pfd;
	struct ibv_wc wc;
	void *cq_ctx;
	struct pair p;

	if (!ch)
		bail("ibv_create_comp_channel");
	o.channel = ch;
	make_pair(&p, &o);
	ibv_req_notify_cq(p.b.cq, 0);
	post_recv(&p.b, 0, 64, 12);
	{
		struct ibv_sge sge = { (uintptr_t)p.a.buf, 4, p.a.mr->lkey };
		struct ibv_send_wr wr = {
			.wr_id = 13, .sg_list = &sge, .num_sge = 1,
			.opcode = IBV_WR_SEND_WITH_IMM,
			.send_flags = IBV_SEND_SIGNALED | IBV_SEND_SOLICITED,
			.imm_data = htobe32(0xc0ffee),
		}, *bad;

		ibv_post_send(p.a.qp, &wr, &bad);
	}
	pfd = (struct pollfd){ .fd = ch->fd, .events = POLLIN };
	check(poll(&pfd, 1, TIMEOUT_MS) == 1,
	      "an armed CQ's channel becomes readable on a completion");
	check(ibv_get_cq_event(ch, &ev_cq, &cq_ctx) == 0 && ev_cq == p.b.cq &&
	      cq_ctx == &p.b, "ibv_get_cq_event names the CQ and its context");
	ibv_ack_cq_events(p.b.cq, 1);
	poll_one(p.b.cq, &wc);
	check(wc.status == IBV_WC_SUCCESS && (wc.wc_flags & IBV_WC_WITH_IMM) &&
	      be32toh(wc.imm_data) == 0xc0ffee && wc.opcode == IBV_WC_RECV &&
	      wc.byte_len == 4 && wc.qp_num == p.b.qp->qp_num &&
	      wc.src_qp == p.a.qp->qp_num && wc.slid == lid,
	      "SEND with immediate: imm_data, byte_len, qp_num, src_qp, slid");
	poll_one(p.a.cq, &wc);
	check(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_SEND &&
	      wc.wr_id == 13, "the sender's completion (%s)", status_str(&wc));
	pfd.revents = 0;
	check(poll(&pfd, 1, 100) == 0,
	      "no further event: the CQ was armed once");
	free_pair(&p);
	check(ibv_destroy_comp_channel(ch) == 0,
	      "the channel is destroyed once its CQs are gone");
}

static void resize_cq(void)
{
	struct ibv_wc wc;
	struct pair p;
	int in_order = 0, ret;

	make_pair(&p, &defaults);
	for (int i = 0; i < 6; i++)
		post_recv(&p.b, i * 64, 64, 300 + i);
	for (int i = 0; i < 3; i++)
		post_send(&p.a, IBV_WR_SEND, 0, 8, 0, 0, 400 + i);
	/* Three receive completions wait in b's CQ while it grows. */
	for (uint64_t end = now_ms() + 200; now_ms() < end;)
		;
	ret = ibv_resize_cq(p.b.cq, 200);
	check(ret == 0 && p.b.cq->cqe >= 200,
	      "ibv_resize_cq to 200 entries (now %d)", p.b.cq->cqe);
	for (int i = 3; i < 6; i++)
		post_send(&p.a, IBV_WR_SEND, 0, 8, 0, 0, 400 + i);
	for (int i = 0; i < 6; i++) {
		poll_one(p.b.cq, &wc);
		in_order += wc.status == IBV_WC_SUCCESS && wc.wr_id == 300u + i;
	}
	check(in_order == 6,
	      "completions from before and after the resize arrive in order (%d of 6)",
	      in_order);
	ret = ibv_resize_cq(p.b.cq, 8);
	check(ret == 0 && p.b.cq->cqe >= 8 && p.b.cq->cqe < 200,
	      "and it shrinks back (now %d)", p.b.cq->cqe);
	for (int i = 0; i < 6; i++)
		poll_one(p.a.cq, &wc);
	post_recv(&p.b, 0, 64, 500);
	post_send(&p.a, IBV_WR_SEND, 0, 8, 0, 0, 501);
	poll_one(p.b.cq, &wc);
	check(wc.status == IBV_WC_SUCCESS && wc.wr_id == 500,
	      "the shrunk CQ still completes (%s)", status_str(&wc));
	poll_one(p.a.cq, &wc);
	free_pair(&p);
}

static void srq_events(void)
{
	struct ibv_srq_init_attr init = { .attr = { .max_wr = 16, .max_sge = 1 } };
	struct ibv_srq_attr attr = { .srq_limit = 3 };
	struct ibv_qp_init_attr qinit = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 8, .max_send_sge = 1 },
	};
	struct ibv_qp_attr to_err = { .qp_state = IBV_QPS_ERR };
	struct ibv_srq *srq;
	struct ibv_qp *qp;
	struct ibv_wc wc;
	struct pair p;
	int ret;

	make_pair(&p, &defaults);
	srq = ibv_create_srq(pd, &init);
	if (!srq)
		bail("ibv_create_srq");
	qinit.send_cq = qinit.recv_cq = p.b.cq;
	qinit.srq = srq;
	qp = ibv_create_qp(pd, &qinit);
	if (!qp)
		bail("ibv_create_qp with an SRQ");
	/* b's QP gives way to one that receives through the SRQ. */
	ibv_destroy_qp(p.b.qp);
	p.b.qp = qp;
	{
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };

		ibv_modify_qp(p.a.qp, &a, IBV_QP_STATE);
		a.qp_state = IBV_QPS_INIT;
		a.port_num = 1;
		if (ibv_modify_qp(p.a.qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) ||
		    ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
			bail("modify to INIT");
		connect_end(&p.a, qp->qp_num, &defaults);
		connect_end(&p.b, p.a.qp->qp_num, &defaults);
	}
	for (int i = 0; i < 5; i++) {
		struct ibv_sge sge = { (uintptr_t)p.b.buf + 64 * i, 64,
				       p.b.mr->lkey };
		struct ibv_recv_wr wr = { .wr_id = 600 + i, .sg_list = &sge,
					  .num_sge = 1 }, *bad;

		if (ibv_post_srq_recv(srq, &wr, &bad))
			bail("ibv_post_srq_recv");
	}
	check(ibv_modify_srq(srq, &attr, IBV_SRQ_LIMIT) == 0,
	      "arm the SRQ limit at 3 with 5 receives posted");
	for (int i = 0; i < 3; i++) {
		post_send(&p.a, IBV_WR_SEND, 0, 8, 0, 0, 700 + i);
		poll_one(p.b.cq, &wc);
		poll_one(p.a.cq, &wc);
	}
	check(await_async_event(IBV_EVENT_SRQ_LIMIT_REACHED, srq),
	      "fewer than 3 left: IBV_EVENT_SRQ_LIMIT_REACHED");
	attr.srq_limit = 99;
	attr.max_wr = 0;
	ret = ibv_query_srq(srq, &attr);
	check(ret == 0 && attr.srq_limit == 0 && attr.max_wr >= 16,
	      "the limit disarms itself (query: limit %u, max_wr %u)",
	      attr.srq_limit, attr.max_wr);
	ibv_modify_qp(qp, &to_err, IBV_QP_STATE);
	check(await_async_event(IBV_EVENT_QP_LAST_WQE_REACHED, qp),
	      "an SRQ's QP moved to ERROR: IBV_EVENT_QP_LAST_WQE_REACHED");
	free_pair(&p);
	check(ibv_destroy_srq(srq) == 0, "the SRQ is destroyed after its QP");
}

static void memory_window(void)
{
	struct ibv_mw *mw = ibv_alloc_mw(pd, IBV_MW_TYPE_1);
	struct ibv_mw_bind bind = { .wr_id = 800, .send_flags = IBV_SEND_SIGNALED };
	struct ibv_wc wc;
	struct pair p;

	if (!mw) {
		check(0, "ibv_alloc_mw type 1");
		return;
	}
	make_pair(&p, &defaults);
	ibv_dereg_mr(p.b.mr);
	p.b.mr = ibv_reg_mr(pd, p.b.buf, BUF_SIZE, IBV_ACCESS_LOCAL_WRITE |
			    IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_MW_BIND);
	if (!p.b.mr)
		bail("ibv_reg_mr with MW_BIND");
	bind.bind_info.mr = p.b.mr;
	bind.bind_info.addr = (uintptr_t)p.b.buf + 1024;
	bind.bind_info.length = 256;
	bind.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE;
	check(ibv_bind_mw(p.b.qp, mw, &bind) == 0, "ibv_bind_mw posts the bind");
	poll_one(p.b.cq, &wc);
	check(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_BIND_MW &&
	      wc.wr_id == 800, "the bind completes (%s)", status_str(&wc));
	memset(p.a.buf, 0x77, 64);
	post_send(&p.a, IBV_WR_RDMA_WRITE, 0, 64, (uintptr_t)p.b.buf + 1024,
		  mw->rkey, 801);
	poll_one(p.a.cq, &wc);
	check(wc.status == IBV_WC_SUCCESS && all_bytes(p.b.buf + 1024, 0x77, 64),
	      "an RDMA WRITE through the window's rkey lands (%s)",
	      status_str(&wc));
	post_send(&p.a, IBV_WR_RDMA_WRITE, 0, 64, (uintptr_t)p.b.buf + 1280,
		  mw->rkey, 802);
	poll_one(p.a.cq, &wc);
	check(wc.status == IBV_WC_REM_ACCESS_ERR && all_bytes(p.b.buf + 1280, 0, 64),
	      "one past the window is refused and writes nothing (%s)",
	      status_str(&wc));
	drain_async_events();
	check(ibv_dereg_mr(p.b.mr) != 0,
	      "a region with a window bound to it cannot be deregistered");
	check(ibv_dealloc_mw(mw) == 0, "the window is freed");
	free_pair(&p);
}

static void multicast(void)
{
	union ibv_gid mgid = { .raw = { 0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 0, 0,
					0, 0, 0, 0, 0, 0, 0x12, 0x34 } };
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp_attr attr = {
		.qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = 0x11111111,
	};
	struct ibv_ah_attr ah_attr = {
		.is_global = 1, .dlid = 0xc001, .port_num = 1,
		.grh = { .dgid = mgid, .hop_limit = 1 },
	};
	struct ibv_qp *rx[2], *tx = NULL;
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	uint8_t *buf = aligned_alloc(4096, BUF_SIZE);
	struct ibv_mr *mr;
	struct ibv_ah *ah;
	struct ibv_wc wc;
	int got = 0;

	if (!cq || !buf || !(mr = ibv_reg_mr(pd, buf, BUF_SIZE,
					     IBV_ACCESS_LOCAL_WRITE)))
		bail("multicast setup");
	init.send_cq = init.recv_cq = cq;
	for (int i = 0; i < 3; i++) {
		struct ibv_qp *qp = ibv_create_qp(pd, &init);

		if (!qp || ibv_modify_qp(qp, &attr, IBV_QP_STATE |
					 IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					 IBV_QP_QKEY))
			bail("UD QP");
		attr.qp_state = IBV_QPS_RTR;
		ibv_modify_qp(qp, &attr, IBV_QP_STATE);
		attr.qp_state = IBV_QPS_RTS;
		ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_SQ_PSN);
		attr.qp_state = IBV_QPS_INIT;
		if (i < 2)
			rx[i] = qp;
		else
			tx = qp;
	}
	for (int i = 0; i < 2; i++) {
		struct ibv_sge sge = { (uintptr_t)buf + 512 * i, 512, mr->lkey };
		struct ibv_recv_wr wr = { .wr_id = 900 + i, .sg_list = &sge,
					  .num_sge = 1 }, *bad;

		ibv_post_recv(rx[i], &wr, &bad);
	}
	check(ibv_attach_mcast(rx[0], &mgid, 0xc001) == 0 &&
	      ibv_attach_mcast(rx[1], &mgid, 0xc001) == 0,
	      "two UD QPs join a multicast group");
	ah = ibv_create_ah(pd, &ah_attr);
	if (!ah)
		bail("ibv_create_ah");
	memcpy(buf + 2048, "to the group", 13);
	{
		struct ibv_sge sge = { (uintptr_t)buf + 2048, 13, mr->lkey };
		struct ibv_send_wr wr = {
			.wr_id = 902, .sg_list = &sge, .num_sge = 1,
			.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
		}, *bad;

		wr.wr.ud.ah = ah;
		wr.wr.ud.remote_qpn = 0xffffff;
		wr.wr.ud.remote_qkey = 0x11111111;
		ibv_post_send(tx, &wr, &bad);
	}
	for (int i = 0; i < 3; i++) {
		poll_one(cq, &wc);
		if (wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV &&
		    (wc.wc_flags & IBV_WC_GRH) && wc.byte_len == 40 + 13 &&
		    wc.src_qp == tx->qp_num &&
		    !memcmp(buf + 512 * (wc.wr_id - 900) + 40, "to the group", 13) &&
		    !memcmp(buf + 512 * (wc.wr_id - 900) + 24, mgid.raw, 16))
			got++;
	}
	check(got == 2, "a datagram to the group reaches both, with its GRH (%d)",
	      got);
	check(ibv_detach_mcast(rx[1], &mgid, 0xc001) == 0,
	      "one member leaves the group");
	check(ibv_detach_mcast(rx[1], &mgid, 0xc001) != 0,
	      "leaving twice is an error");
	ibv_destroy_ah(ah);
	for (int i = 0; i < 2; i++)
		ibv_destroy_qp(rx[i]);
	ibv_destroy_qp(tx);
	ibv_dereg_mr(mr);
	ibv_destroy_cq(cq);
	free(buf);
}

int main(void)
{
	struct ibv_port_attr port;

	ctx = open_first_device("rdma-semantics");
	pd = ibv_alloc_pd(ctx);
	if (!pd || ibv_query_port(ctx, 1, &port))
		bail("setup");
	lid = port.lid;
	bad_rkey();
	out_of_bounds();
	rnr_retry_exceeded();
	rnr_then_receive();
	flush();
	receive_too_small();
	cq_overrun();
	read_and_atomics();
	immediate_and_events();
	resize_cq();
	srq_events();
	memory_window();
	multicast();
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return tap_finish();
}
