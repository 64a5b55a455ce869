/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rdma-semantics: what an RC connection does when things go wrong, and
 * what RDMA reads and atomics do when they go right, seen from both ends.
 *
 * Runs on the first RDMA device with any provider (under mlx4sim: `mlx4sim
 * run --provider=system -- tests/verbs/rdma-semantics`) and prints TAP.  Each
 * case uses a fresh pair of QPs connected to each other through port 1.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <infiniband/verbs.h>

#include "../buffer.h"
#include "../cases.h"
#include "../device.h"
#include "../qp-connect.h"
#include "../tap.h"
#include "../wait.h"

#define BUF_SIZE	4096
#define TIMEOUT_MS	5000

/*
 * What the test chooses and the provider or the device carries reads
 * differently byte-swapped, so that a value sent in the wrong byte order
 * is caught: PSNs, Q_Keys, immediates, atomic operands, WR ids.
 */
#define TEST_PSN	0x1a2b3c
#define TEST_QKEY	0x11223344
#define TEST_IMM	0x00c0ffee
#define TEST_SL		5
#define WRID(n)		(0x0102030405060000ULL + (n))
#define ATOMIC_START	0x1122334455667700ULL
#define ATOMIC_ADD	0x0000000100000001ULL
#define ATOMIC_SWAP	0x8877665544332211ULL

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static uint16_t lid;

/*
 * One completion, or 0 with wc->status set to -1 after the timeout: a
 * stuck queue fails its case in seconds, and says so.
 */
static int poll_one(struct ibv_cq *cq, struct ibv_wc *wc)
{
	int n = poll_cq_within(cq, wc, TIMEOUT_MS);

	if (n)
		return n;
	printf("# CQ %u: no completion in %d s\n", cq->handle,
	       TIMEOUT_MS / 1000);
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
	struct ibv_cq_ex *cq_ex;	/* the same CQ, when extended */
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
	uint32_t send_sge;		/* 0: 1 */
	uint32_t recv_sge;		/* 0: 1 */
	uint32_t inline_size;
	uint64_t ex_wc_flags;		/* an extended CQ reading these */
	struct ibv_cq *cq;		/* both ends' CQ, instead of their own */
};

/* @qp to INIT, its remote access @access. */
static void init_end(struct ibv_qp *qp, unsigned int access)
{
	const struct qp_path path = { .access = access };

	if (qp_to_init(qp, &path))
		bail("modify to INIT");
}

static void make_end(struct end *e, const struct pair_opts *o)
{
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	if (o->cq) {
		e->cq = o->cq;
	} else if (o->ex_wc_flags) {
		struct ibv_cq_init_attr_ex cq_attr = {
			.cqe = o->cqe, .cq_context = e, .channel = o->channel,
			.wc_flags = o->ex_wc_flags,
		};
		e->cq_ex = ibv_create_cq_ex(ctx, &cq_attr);
		e->cq = e->cq_ex ? ibv_cq_ex_to_cq(e->cq_ex) : NULL;
	} else {
		e->cq = ibv_create_cq(ctx, o->cqe, e, o->channel, 0);
	}
	if (!e->cq)
		bail("ibv_create_cq");
	init.send_cq = init.recv_cq = e->cq;
	if (o->send_sge)
		init.cap.max_send_sge = o->send_sge;
	if (o->recv_sge)
		init.cap.max_recv_sge = o->recv_sge;
	init.cap.max_inline_data = o->inline_size;
	e->qp = ibv_create_qp(pd, &init);
	if (!e->qp)
		bail("ibv_create_qp");
	init_end(e->qp, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
		 IBV_ACCESS_REMOTE_ATOMIC);
	e->buf = registered_buffer(pd, BUF_SIZE, ACCESS_ALL, &e->mr);
}

static void connect_end(struct end *e, uint32_t remote_qpn,
			const struct pair_opts *o)
{
	const struct qp_path path = {
		.remote_qpn = remote_qpn, .dlid = lid,
		.rq_psn = TEST_PSN, .sq_psn = TEST_PSN,
		.access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			  IBV_ACCESS_REMOTE_ATOMIC,
		.rd_atomic = 4, .min_rnr_timer = o->min_rnr_timer,
		.timeout = 10, .retry_cnt = 2, .rnr_retry = o->rnr_retry,
	};

	if (qp_to_rtr(e->qp, &path))
		bail("modify to RTR");
	if (qp_to_rts(e->qp, &path))
		bail("modify to RTS");
}

/*
 * A pair whose end b has a new QP: end a goes back through RESET, and
 * both are brought up with @access.
 */
static void reconnect_pair(struct pair *p, unsigned int access,
			   const struct pair_opts *o)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };

	ibv_modify_qp(p->a.qp, &a, IBV_QP_STATE);
	init_end(p->a.qp, access);
	init_end(p->b.qp, access);
	connect_end(&p->a, p->b.qp->qp_num, o);
	connect_end(&p->b, p->a.qp->qp_num, o);
}

static void make_pair(struct pair *p, const struct pair_opts *o)
{
	make_end(&p->a, o);
	make_end(&p->b, o);
	connect_end(&p->a, p->b.qp->qp_num, o);
	connect_end(&p->b, p->a.qp->qp_num, o);
}

/* A pair made as @o says, its CQs reporting to a new completion channel. */
static struct ibv_comp_channel *make_pair_with_events(struct pair *p,
						      struct pair_opts o)
{
	o.channel = ibv_create_comp_channel(ctx);
	if (!o.channel)
		bail("ibv_create_comp_channel");
	make_pair(p, &o);
	return o.channel;
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

/* Give b of @p a QP that receives through @srq, and reconnect the pair. */
static void attach_srq(struct pair *p, struct ibv_srq *srq)
{
	struct ibv_qp_init_attr qinit = {
		.qp_type = IBV_QPT_RC, .send_cq = p->b.cq, .recv_cq = p->b.cq,
		.srq = srq, .cap = { .max_send_wr = 8, .max_send_sge = 1 },
	};

	ibv_destroy_qp(p->b.qp);
	p->b.qp = ibv_create_qp(pd, &qinit);
	if (!p->b.qp)
		bail("ibv_create_qp with an SRQ");
	reconnect_pair(p, 0, &defaults);
}

static int post_send(struct end *e, enum ibv_wr_opcode op, uint32_t offset,
		     uint32_t len, uint64_t raddr, uint32_t rkey, uint64_t wr_id)
{
	struct ibv_sge sge = {
		(uintptr_t)e->buf + offset, len, e->mr->lkey
	};
	struct ibv_send_wr wr = {
		.wr_id = WRID(wr_id), .sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return ibv_post_send(e->qp, &wr, &bad);
}

/*
 * An atomic from a on the 8 bytes at @remote_off of b's buffer; the value
 * before it lands at @offset of a's.
 */
static int post_atomic(struct pair *p, enum ibv_wr_opcode op, uint32_t offset,
		       uint32_t remote_off, uint64_t compare_add,
		       uint64_t swap, uint64_t wr_id)
{
	struct ibv_sge sge = {
		(uintptr_t)p->a.buf + offset, 8, p->a.mr->lkey
	};
	struct ibv_send_wr wr = {
		.wr_id = WRID(wr_id), .sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;

	wr.wr.atomic.remote_addr = (uintptr_t)p->b.buf + remote_off;
	wr.wr.atomic.rkey = p->b.mr->rkey;
	wr.wr.atomic.compare_add = compare_add;
	wr.wr.atomic.swap = swap;
	return ibv_post_send(p->a.qp, &wr, &bad);
}

static int post_recv(struct end *e, uint32_t offset, uint32_t len,
		     uint64_t wr_id)
{
	struct ibv_sge sge = {
		(uintptr_t)e->buf + offset, len, e->mr->lkey
	};
	struct ibv_recv_wr wr = {
		.wr_id = WRID(wr_id), .sg_list = &sge, .num_sge = 1,
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

/* Payload whose every byte differs from its neighbours, per @seed. */
static uint8_t pattern_byte(size_t i, unsigned int seed)
{
	return (uint8_t)(seed + i * 7 + (i >> 8));
}

static void fill(uint8_t *p, size_t len, unsigned int seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = pattern_byte(i, seed);
}

static bool is_filled(const uint8_t *p, size_t len, unsigned int seed)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != pattern_byte(i, seed))
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
	check(wc.status == IBV_WC_REM_ACCESS_ERR && wc.wr_id == WRID(1),
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
	check(wc.status == IBV_WC_RNR_RETRY_EXC_ERR && wc.wr_id == WRID(3),
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
	check(wc.status == IBV_WC_SUCCESS && wc.wr_id == WRID(5) &&
	      wc.byte_len == 19 && !memcmp(p.b.buf, "late but delivered", 19),
	      "a receive posted later gets the message (%s)", status_str(&wc));
	poll_one(p.a.cq, &wc);
	check(wc.status == IBV_WC_SUCCESS && wc.wr_id == WRID(4),
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
			   wc.wr_id == WRID(100 + i);
	}
	check(flushed == 3,
	      "a QP moved to ERROR flushes its 3 receives, in order");
	post_recv(&p.b, 0, 64, 200);
	poll_one(p.b.cq, &wc);
	check(wc.status == IBV_WC_WR_FLUSH_ERR && wc.wr_id == WRID(200),
	      "a receive posted in ERROR is flushed (%s)", status_str(&wc));
	post_send(&p.b, IBV_WR_SEND, 0, 8, 0, 0, 201);
	poll_one(p.b.cq, &wc);
	check(wc.status == IBV_WC_WR_FLUSH_ERR && wc.wr_id == WRID(201),
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
	check(wc.status == IBV_WC_LOC_LEN_ERR && wc.wr_id == WRID(6),
	      "a receive buffer too small: the receiver gets LOC_LEN_ERR (%s)",
	      status_str(&wc));
	poll_one(p.a.cq, &wc);
	check(wc.status == IBV_WC_REM_INV_REQ_ERR && wc.wr_id == WRID(7),
	      "and the sender REM_INV_REQ_ERR (%s)", status_str(&wc));
	drain_async_events();
	free_pair(&p);
}

/*
 * A receive whose buffer the device cannot write completes in error, and
 * its QP goes to ERROR.  Only a simulator sees such memory: a real device
 * writes the pages it pinned, even once the process unmapped them, and
 * mlx4sim does so too where it shares the pages with the process
 * (sim/README, "Pinned memory").  A file the program mapped shared is
 * not shared that way: the device reaches it through process_vm_*, which
 * fails once it is unmapped.
 *
 * The device finds it out writing a batch of  The device finds it out writing a batch of
 * CQEs, which can be in the middle of pushing another CQE (the batch
 * full: four gather entries a receive, two CQs): every receive must
 * still complete once, in order, none lost or doubled.
 */
static void receive_unwritable(void)
{
	enum { RECVS = 16, ENTRY = 16 };
	struct pair_opts o = defaults;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	int done = 0, flushed = 0, in_order = 1, after_flush_ok = 0;
	struct ibv_mr *mr;
	struct ibv_wc wc;
	struct pair p;
	uint8_t *hole;
	int fd;

	o.recv_sge = 4;
	make_pair(&p, &o);
	fd = memfd_create("hole", MFD_CLOEXEC);
	if (fd < 0 || ftruncate(fd, page))
		bail("memfd_create");
	hole = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (hole == MAP_FAILED)
		bail("mmap");
	close(fd);
	mr = ibv_reg_mr(pd, hole, page, IBV_ACCESS_LOCAL_WRITE);
	if (!mr)
		bail("ibv_reg_mr");
	munmap(hole, page);
	for (int i = 0; i < RECVS; i++) {
		struct ibv_sge sge[4];
		struct ibv_recv_wr wr = {
			.wr_id = WRID(300 + i), .sg_list = sge, .num_sge = 4,
		}, *bad;

		for (int j = 0; j < 4; j++)
			sge[j] = i ? (struct ibv_sge){
				(uintptr_t)p.b.buf + (i * 4 + j) * ENTRY,
				ENTRY, p.b.mr->lkey }
			: (struct ibv_sge){ (uintptr_t)hole + j * ENTRY,
					    ENTRY, mr->lkey };
		if (ibv_post_recv(p.b.qp, &wr, &bad))
			bail("ibv_post_recv");
	}
	/* One list, one doorbell: the device runs all in one pass. */
	{
		struct ibv_sge sge = { (uintptr_t)p.a.buf, 4 * ENTRY,
				       p.a.mr->lkey };
		struct ibv_send_wr wr[RECVS], *bad;

		for (int i = 0; i < RECVS; i++)
			wr[i] = (struct ibv_send_wr){ .wr_id = WRID(400 + i),
				.sg_list = &sge, .num_sge = 1,
				.opcode = IBV_WR_SEND,
				.send_flags = IBV_SEND_SIGNALED,
				.next = i + 1 < RECVS ? &wr[i + 1] : NULL };
		if (ibv_post_send(p.a.qp, wr, &bad))
			bail("ibv_post_send");
	}
	while (done < RECVS && poll_one(p.b.cq, &wc)) {
		in_order &= wc.wr_id == WRID(300 + done);
		if (!done)
			check(wc.status == IBV_WC_LOC_PROT_ERR,
			      "a receive into unwritable memory: LOC_PROT_ERR (%s)",
			      status_str(&wc));
		else if (wc.status == IBV_WC_WR_FLUSH_ERR)
			flushed++;
		else if (wc.status == IBV_WC_SUCCESS)
			after_flush_ok += flushed > 0;
		else
			in_order = 0;
		done++;
	}
	check(done == RECVS && in_order && !after_flush_ok,
	      "the %d receives all complete, once and in order, successes then flushes (%d came, %d flushed)",
	      RECVS, done, flushed);
	check(ibv_poll_cq(p.b.cq, 1, &wc) == 0 && qp_state(p.b.qp) == IBV_QPS_ERR,
	      "no completion more, and the QP is in ERROR (%d)",
	      (int)qp_state(p.b.qp));
	for (int i = 0; i < RECVS; i++)
		if (!poll_one(p.a.cq, &wc))
			break;
	drain_async_events();
	ibv_dereg_mr(mr);
	free_pair(&p);
}

static void cq_overrun(void)
{
	struct pair_opts o = defaults;
	struct ibv_async_event ev;
	struct ibv_wc wc;
	struct pair p;
	bool got = false;
	int n;

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
	/*
	 * What the two CQs of 2 entries still hold, a few: a provider that
	 * took stale CQEs for new ones would go round the rings forever.
	 */
	for (n = 0; n < 64 && (ibv_poll_cq(p.a.cq, 1, &wc) > 0 ||
			       ibv_poll_cq(p.b.cq, 1, &wc) > 0); n++)
		;
	check(n < 64, "the overrun CQs drain: no stale CQE polled again (%d)", n);
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
	      wc.byte_len == 28 &&
	      !memcmp(p.a.buf + 512, "read me from the other side", 28),
	      "RDMA READ brings the remote bytes, byte_len 28 (%s, %u)",
	      status_str(&wc), wc.byte_len);

	/*
	 * A READ and, posted with it, a SEND of the buffer the READ fills,
	 * fenced: the SEND carries the READ's bytes.  (Unfenced, the
	 * adapter may send the bytes from before: the simulator's strict
	 * mode says so, and this run would fail.)
	 */
	{
		struct ibv_sge read_sge = { (uintptr_t)p.a.buf + 600, 28,
					    p.a.mr->lkey },
			       send_sge = read_sge;
		struct ibv_send_wr send = {
			.wr_id = WRID(12), .sg_list = &send_sge, .num_sge = 1,
			.opcode = IBV_WR_SEND,
			.send_flags = IBV_SEND_SIGNALED | IBV_SEND_FENCE,
		}, read = {
			.wr_id = WRID(13), .sg_list = &read_sge, .num_sge = 1,
			.opcode = IBV_WR_RDMA_READ, .next = &send,
		}, *bad;

		memcpy(p.b.buf + 300, "fenced: sent after it landed", 28);
		read.wr.rdma.remote_addr = (uintptr_t)p.b.buf + 300;
		read.wr.rdma.rkey = p.b.mr->rkey;
		post_recv(&p.b, 2048, 64, 14);
		check(!ibv_post_send(p.a.qp, &read, &bad),
		      "a READ and a fenced SEND of its buffer, posted together");
		poll_one(p.a.cq, &wc);
		poll_one(p.b.cq, &wc);
		check(wc.status == IBV_WC_SUCCESS && wc.byte_len == 28 &&
		      !memcmp(p.b.buf + 2048, "fenced: sent after it landed", 28),
		      "the fenced SEND carries the bytes the READ brought (%s)",
		      status_str(&wc));
	}

	/*
	 * A SEND and, posted with it, a fetch-and-add on the receive buffer
	 * the SEND fills: a responder runs a QP's requests in order, so the
	 * atomic fetches the SEND's bytes and adds to them.  (The simulator
	 * holds a small receive's bytes back with its CQE where it does not
	 * share the receiver's pages, as memory mapped shared: its later
	 * reads must see them.)
	 */
	{
		uint8_t *held = mmap(NULL, BUF_SIZE, PROT_READ | PROT_WRITE,
				     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		struct end target = p.b;
		uint64_t sent = htobe64(ATOMIC_SWAP), stale = htobe64(7), got;
		struct ibv_sge sge[2] = {
			{ (uintptr_t)p.a.buf + 700, 8, p.a.mr->lkey },
			{ (uintptr_t)p.a.buf + 800, 8, p.a.mr->lkey },
		};
		struct ibv_send_wr wr[2] = {}, *bad;

		if (held == MAP_FAILED)
			bail("mmap");
		target.buf = held;
		target.mr = ibv_reg_mr(pd, held, BUF_SIZE, ACCESS_ALL);
		if (!target.mr)
			bail("ibv_reg_mr");
		for (int i = 0; i < 2; i++) {
			wr[i].wr_id = WRID(15 + i);
			wr[i].sg_list = &sge[i];
			wr[i].num_sge = 1;
			wr[i].send_flags = IBV_SEND_SIGNALED;
		}
		wr[0].opcode = IBV_WR_SEND;
		wr[0].next = &wr[1];
		wr[1].opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
		wr[1].wr.atomic.remote_addr = (uintptr_t)held + 2304;
		wr[1].wr.atomic.compare_add = ATOMIC_ADD;
		wr[1].wr.atomic.rkey = target.mr->rkey;
		memcpy(p.a.buf + 700, &sent, 8);
		memcpy(held + 2304, &stale, 8);
		post_recv(&target, 2304, 64, 17);
		check(!ibv_post_send(p.a.qp, wr, &bad),
		      "a SEND and a fetch-and-add on the buffer it fills, posted together");
		for (int i = 0; i < 3; i++)
			poll_one(i < 2 ? p.a.cq : p.b.cq, &wc);
		memcpy(&got, p.a.buf + 800, 8);
		memcpy(&counter, held + 2304, 8);
		check(be64toh(got) == ATOMIC_SWAP &&
		      be64toh(counter) == ATOMIC_SWAP + ATOMIC_ADD,
		      "the atomic fetches the SEND's bytes and adds to them (0x%" PRIx64 ", 0x%" PRIx64 ")",
		      be64toh(got), be64toh(counter));
		ibv_dereg_mr(target.mr);
		munmap(held, BUF_SIZE);
	}

	/* ConnectX-3 atomics see the 64-bit target as big-endian. */
	counter = htobe64(ATOMIC_START);
	memcpy(p.b.buf + 1024, &counter, 8);
	for (int i = 0; i < 2; i++) {
		post_atomic(&p, IBV_WR_ATOMIC_FETCH_AND_ADD, 1024 + 8 * i, 1024,
			    ATOMIC_ADD, 0, 9 + i);
		poll_one(p.a.cq, &wc);
	}
	memcpy(&counter, p.b.buf + 1024, 8);
	memcpy(&orig, p.a.buf + 1032, 8);
	check(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_FETCH_ADD &&
	      be64toh(counter) == ATOMIC_START + 2 * ATOMIC_ADD &&
	      be64toh(orig) == ATOMIC_START + ATOMIC_ADD,
	      "fetch-and-add twice: the target gains twice the addend, the second fetch sees it once (0x%" PRIx64 ", 0x%" PRIx64 ")",
	      be64toh(counter), be64toh(orig));
	post_atomic(&p, IBV_WR_ATOMIC_CMP_AND_SWP, 1040, 1024,
		    ATOMIC_START + 2 * ATOMIC_ADD, ATOMIC_SWAP, 11);
	poll_one(p.a.cq, &wc);
	memcpy(&counter, p.b.buf + 1024, 8);
	memcpy(&orig, p.a.buf + 1040, 8);
	check(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_COMP_SWAP &&
	      be64toh(counter) == ATOMIC_SWAP &&
	      be64toh(orig) == ATOMIC_START + 2 * ATOMIC_ADD,
	      "compare-and-swap swaps and returns the old value (%s)",
	      status_str(&wc));
	free_pair(&p);
}

/*
 * Gather entries of no length: a ConnectX-3 reads a byte count of 0 as
 * 2 GB, so a driver must write such an entry another way.  A SEND whose
 * first entry is empty carries the second's bytes; a SEND of one empty
 * entry is a message of no bytes.
 */
static void zero_length_gather(void)
{
	struct pair_opts opts = defaults;
	struct ibv_wc wc;
	struct pair p;

	opts.send_sge = 2;
	make_pair(&p, &opts);
	memcpy(p.a.buf + 64, "after an empty entry", 20);
	for (int entries = 2; entries >= 1; entries--) {
		struct ibv_sge sge[2] = {
			{ (uintptr_t)p.a.buf, 0, p.a.mr->lkey },
			{ (uintptr_t)p.a.buf + 64, 20, p.a.mr->lkey },
		};
		struct ibv_send_wr wr = {
			.wr_id = WRID(20 + entries), .sg_list = sge,
			.num_sge = entries, .opcode = IBV_WR_SEND,
			.send_flags = IBV_SEND_SIGNALED,
		}, *bad;

		post_recv(&p.b, 1024, 64, 22);
		memset(p.b.buf + 1024, 0xee, 64);
		if (ibv_post_send(p.a.qp, &wr, &bad))
			bail("post_send");
		poll_one(p.a.cq, &wc);
		check(wc.status == IBV_WC_SUCCESS,
		      "a SEND of %d gather entries, the first empty: sent (%s)",
		      entries, status_str(&wc));
		poll_one(p.b.cq, &wc);
		check(wc.status == IBV_WC_SUCCESS &&
		      wc.byte_len == (entries == 2 ? 20u : 0u) &&
		      (entries == 2 ?
		       !memcmp(p.b.buf + 1024, "after an empty entry", 20) :
		       all_bytes(p.b.buf + 1024, 0xee, 64)),
		      "... received: %u bytes, as sent (%s)", wc.byte_len,
		      status_str(&wc));
	}
	free_pair(&p);
}

/*
 * An RDMA WRITE whose source and destination overlap in one region, 37
 * bytes apart each way (a's QP gathers from b's region, in the same PD).
 * A message smaller than the MTU is read whole before it is written, so
 * the bytes land as memmove() would put them.
 */
static void overlapping_write(void)
{
	static const uint32_t len = 200, shift = 37;
	uint8_t want[256];
	struct ibv_wc wc;
	struct pair p;

	make_pair(&p, &defaults);
	for (int up = 0; up <= 1; up++) {
		uint32_t from = up ? 64 : 64 + shift, to = up ? 64 + shift : 64;
		struct ibv_sge sge = {
			(uintptr_t)p.b.buf + from, len, p.b.mr->lkey
		};
		struct ibv_send_wr wr = {
			.wr_id = WRID(30 + up), .sg_list = &sge, .num_sge = 1,
			.opcode = IBV_WR_RDMA_WRITE,
			.send_flags = IBV_SEND_SIGNALED,
		}, *bad;

		fill(p.b.buf, 512, 30 + up);
		memcpy(want, p.b.buf + 64, sizeof(want));
		memmove(want + (to - 64), want + (from - 64), len);
		wr.wr.rdma.remote_addr = (uintptr_t)p.b.buf + to;
		wr.wr.rdma.rkey = p.b.mr->rkey;
		if (ibv_post_send(p.a.qp, &wr, &bad))
			bail("post_send");
		poll_one(p.a.cq, &wc);
		check(wc.status == IBV_WC_SUCCESS &&
		      !memcmp(p.b.buf + 64, want, sizeof(want)),
		      "an RDMA WRITE of %u bytes onto its own source, %u bytes %s: as memmove() (%s)",
		      len, shift, up ? "higher" : "lower", status_str(&wc));
	}
	free_pair(&p);
}

static void immediate_and_events(void)
{
	struct ibv_comp_channel *ch;
	struct ibv_cq *ev_cq;
	struct pollfd pfd;
	struct ibv_wc wc;
	void *cq_ctx;
	struct pair p;

	ch = make_pair_with_events(&p, defaults);
	ibv_req_notify_cq(p.b.cq, 0);
	post_recv(&p.b, 0, 64, 12);
	{
		struct ibv_sge sge = { (uintptr_t)p.a.buf, 4, p.a.mr->lkey };
		struct ibv_send_wr wr = {
			.wr_id = WRID(13), .sg_list = &sge, .num_sge = 1,
			.opcode = IBV_WR_SEND_WITH_IMM,
			.send_flags = IBV_SEND_SIGNALED | IBV_SEND_SOLICITED,
			.imm_data = htobe32(TEST_IMM),
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
	      be32toh(wc.imm_data) == TEST_IMM && wc.opcode == IBV_WC_RECV &&
	      wc.byte_len == 4 && wc.qp_num == p.b.qp->qp_num &&
	      wc.src_qp == p.a.qp->qp_num && wc.slid == lid,
	      "SEND with immediate: imm_data, byte_len, qp_num, src_qp, slid");
	poll_one(p.a.cq, &wc);
	check(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_SEND &&
	      wc.wr_id == WRID(13), "the sender's completion (%s)",
	      status_str(&wc));
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
	/*
	 * Past the first pass over b's ring of 32: the CQEs the resize moves
	 * then sit where the old and the new size give different owner bits.
	 */
	for (int i = 0; i < 40; i++) {
		post_recv(&p.b, 0, 64, 290);
		post_send(&p.a, IBV_WR_SEND, 0, 8, 0, 0, 291);
		poll_one(p.b.cq, &wc);
		poll_one(p.a.cq, &wc);
	}
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
		in_order += wc.status == IBV_WC_SUCCESS && wc.wr_id == WRID(300 + i);
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
	check(wc.status == IBV_WC_SUCCESS && wc.wr_id == WRID(500),
	      "the shrunk CQ still completes (%s)", status_str(&wc));
	poll_one(p.a.cq, &wc);
	free_pair(&p);
}

static void srq_events(void)
{
	struct ibv_srq_init_attr init = { .attr = { .max_wr = 16, .max_sge = 1 } };
	struct ibv_srq_attr attr = { .srq_limit = 3 };
	struct ibv_qp_attr to_err = { .qp_state = IBV_QPS_ERR };
	struct ibv_srq *srq;
	struct ibv_wc wc;
	struct pair p;
	int ret;

	make_pair(&p, &defaults);
	srq = ibv_create_srq(pd, &init);
	if (!srq)
		bail("ibv_create_srq");
	attach_srq(&p, srq);
	for (int i = 0; i < 5; i++) {
		struct ibv_sge sge = { (uintptr_t)p.b.buf + 64 * i, 64,
				       p.b.mr->lkey };
		struct ibv_recv_wr wr = { .wr_id = WRID(600 + i), .sg_list = &sge,
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
	ibv_modify_qp(p.b.qp, &to_err, IBV_QP_STATE);
	check(await_async_event(IBV_EVENT_QP_LAST_WQE_REACHED, p.b.qp),
	      "an SRQ's QP moved to ERROR: IBV_EVENT_QP_LAST_WQE_REACHED");
	free_pair(&p);
	check(ibv_destroy_srq(srq) == 0, "the SRQ is destroyed after its QP");
}

static void memory_window(void)
{
	struct ibv_mw *mw = ibv_alloc_mw(pd, IBV_MW_TYPE_1);
	struct ibv_mw_bind bind = {
		.wr_id = WRID(800), .send_flags = IBV_SEND_SIGNALED
	};
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
	      wc.wr_id == WRID(800), "the bind completes (%s)", status_str(&wc));
	fill(p.a.buf, 64, 0x77);
	post_send(&p.a, IBV_WR_RDMA_WRITE, 0, 64, (uintptr_t)p.b.buf + 1024,
		  mw->rkey, 801);
	poll_one(p.a.cq, &wc);
	check(wc.status == IBV_WC_SUCCESS && is_filled(p.b.buf + 1024, 64, 0x77),
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
		.qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = TEST_QKEY,
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
		struct ibv_recv_wr wr = { .wr_id = WRID(900 + i), .sg_list = &sge,
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
			.wr_id = WRID(902), .sg_list = &sge, .num_sge = 1,
			.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
		}, *bad;

		wr.wr.ud.ah = ah;
		wr.wr.ud.remote_qpn = 0xffffff;
		wr.wr.ud.remote_qkey = TEST_QKEY;
		ibv_post_send(tx, &wr, &bad);
	}
	for (int i = 0; i < 3; i++) {
		poll_one(cq, &wc);
		if (wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV &&
		    (wc.wc_flags & IBV_WC_GRH) && wc.byte_len == 40 + 13 &&
		    wc.src_qp == tx->qp_num &&
		    !memcmp(buf + 512 * (wc.wr_id - WRID(900)) + 40, "to the group", 13) &&
		    !memcmp(buf + 512 * (wc.wr_id - WRID(900)) + 24, mgid.raw, 16))
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

/*
 * Re-armed after an event without polling in between, the CQ must wake
 * again: the arm carries a new sequence number, so the device takes it
 * for a new request rather than the one it already answered.
 */
static void rearm_unpolled(void)
{
	struct ibv_comp_channel *ch;
	struct ibv_cq *ev_cq;
	struct ibv_wc wc;
	void *cq_ctx;
	struct pair p;
	int woke = 0;

	ch = make_pair_with_events(&p, defaults);
	post_recv(&p.b, 0, 64, 4100);
	post_recv(&p.b, 64, 64, 4101);
	for (int i = 0; i < 2; i++) {
		struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };

		ibv_req_notify_cq(p.b.cq, 0);
		post_send(&p.a, IBV_WR_SEND, 0, 8, 0, 0, 4102 + i);
		poll_one(p.a.cq, &wc);
		if (poll(&pfd, 1, TIMEOUT_MS) == 1 &&
		    ibv_get_cq_event(ch, &ev_cq, &cq_ctx) == 0) {
			ibv_ack_cq_events(ev_cq, 1);
			woke++;
		}
	}
	check(woke == 2, "a CQ re-armed after its event, not polled in between, wakes again (%d of 2 events)",
	      woke);
	while (ibv_poll_cq(p.b.cq, 1, &wc) > 0)
		;
	free_pair(&p);
	ibv_destroy_comp_channel(ch);
}

/*
 * A QP destroyed with completions waiting in a CQ it shares: they go,
 * and the other QP's completion behind them is the next one polled.
 */
static void destroy_with_completions(void)
{
	struct pair_opts o = defaults;
	struct ibv_wc wc;
	struct pair p, q;
	int n, others = 0;

	make_pair(&p, &defaults);
	o.cq = p.b.cq;
	make_pair(&q, &o);
	/* q's four completions, then one of p's, all in p.b's CQ. */
	for (int i = 0; i < 2; i++) {
		post_recv(&q.b, 64 * i, 64, 4200 + i);
		post_send(&q.a, IBV_WR_SEND, 0, 8, 0, 0, 4210 + i);
	}
	for (uint64_t end = now_ms() + 200; now_ms() < end;)
		;
	post_recv(&p.b, 0, 64, 4220);
	post_send(&p.a, IBV_WR_SEND, 0, 8, 0, 0, 4221);
	poll_one(p.a.cq, &wc);
	if (ibv_destroy_qp(q.a.qp) || ibv_destroy_qp(q.b.qp) ||
	    ibv_dereg_mr(q.a.mr) || ibv_dereg_mr(q.b.mr))
		bail("teardown of q");
	free(q.a.buf);
	free(q.b.buf);
	n = poll_one(p.b.cq, &wc);
	while (ibv_poll_cq(p.b.cq, 1, &wc) > 0)
		others++;
	check(n == 1 && wc.status == IBV_WC_SUCCESS &&
	      wc.wr_id == WRID(4220) && wc.qp_num == p.b.qp->qp_num &&
	      !others,
	      "a QP destroyed with 4 completions waiting in a shared CQ: the next polled is the other QP's (%s, %d more)",
	      status_str(&wc), others);
	free_pair(&p);
}

/*
 * An SRQ WQE of fewer gather entries than the SRQ allows ends its list
 * with the invalid lkey: the device must not scatter on into entries an
 * earlier WQE left in the same slot.  With one WR (two slots), the third
 * post reuses the first's slot: two entries then, one now, and a message
 * longer than that one is a local length error.
 */
static void srq_stale_entries(void)
{
	struct ibv_srq_init_attr init = { .attr = { .max_wr = 1, .max_sge = 2 } };
	struct ibv_srq *srq;
	struct ibv_wc wc;
	struct pair p;
	int done = 0;

	make_pair(&p, &defaults);
	srq = ibv_create_srq(pd, &init);
	if (!srq)
		bail("ibv_create_srq");
	attach_srq(&p, srq);
	for (int i = 0; i < 3; i++) {
		struct ibv_sge sge[2] = {
			{ (uintptr_t)p.b.buf + 512 * i, 32, p.b.mr->lkey },
			{ (uintptr_t)p.b.buf + 512 * i + 256, 32, p.b.mr->lkey },
		};
		struct ibv_recv_wr wr = {
			.wr_id = WRID(4300 + i), .sg_list = sge,
			.num_sge = i == 0 ? 2 : 1,
		}, *bad;

		if (ibv_post_srq_recv(srq, &wr, &bad))
			bail("ibv_post_srq_recv");
		fill(p.a.buf, 64, 0x71 + i);
		post_send(&p.a, IBV_WR_SEND, 0, i == 2 ? 64 : 32, 0, 0, 4310 + i);
		poll_one(p.b.cq, &wc);
		if (i < 2)
			done += wc.status == IBV_WC_SUCCESS &&
				wc.wr_id == WRID(4300 + i) &&
				is_filled(p.b.buf + 512 * i, 32, 0x71 + i);
		poll_one(p.a.cq, &wc);
	}
	check(done == 2 && wc.status == IBV_WC_REM_INV_REQ_ERR &&
	      !p.b.buf[256],
	      "an SRQ slot reused with fewer gather entries: a longer message is refused, the stale entry unwritten (%s)",
	      status_str(&wc));
	drain_async_events();
	ibv_destroy_qp(p.b.qp);
	p.b.qp = NULL;
	if (ibv_destroy_srq(srq))
		bail("ibv_destroy_srq");
	free_end(&p.a);
	if (ibv_dereg_mr(p.b.mr) || ibv_destroy_cq(p.b.cq))
		bail("teardown");
	free(p.b.buf);
}

/*
 * Receives of two scatter entries through every slot of b's receive
 * queue (a 48-byte message lands 32 + 16: each entry's key and length
 * must be right), then one of a single 32-byte entry, posted alone or
 * behind a two-entry one in a list (two paths in a provider): a 48-byte
 * message is a local length error, the stale second entry of the slot's
 * last WQE unwritten (a WQE shorter than the queue allows ends its list
 * with the invalid lkey).
 */
static void rq_stale_entries(void)
{
	for (int list = 0; list < 2; list++) {
		struct pair_opts o = defaults;
		struct ibv_wc wc;
		struct pair p;
		int good = 0;

		o.recv_sge = 2;
		make_pair(&p, &o);
		fill(p.a.buf, 48, 0x91);
		for (int i = 0; i < 64 + 1 + list; i++) {
			bool last = i == 64 + list;
			struct ibv_sge sge[2] = {
				{ (uintptr_t)p.b.buf, 32, p.b.mr->lkey },
				{ (uintptr_t)p.b.buf + 1024, 32, p.b.mr->lkey },
			};
			struct ibv_recv_wr wr[2] = {
				{ .wr_id = WRID(4400 + i), .sg_list = sge,
				  .num_sge = 2 },
				{ .wr_id = WRID(4401 + i), .sg_list = sge,
				  .num_sge = 1 },
			}, *bad, *post = &wr[0];

			memset(p.b.buf, 0, 2048);
			if (list && i == 64)
				wr[0].next = &wr[1];
			else if (last)
				post = &wr[1];
			/* The list's second receive takes the last message. */
			if (!(list && last) && ibv_post_recv(p.b.qp, post, &bad))
				bail("ibv_post_recv");
			post_send(&p.a, IBV_WR_SEND, 0, 48, 0, 0, 4600 + i);
			poll_one(p.b.cq, &wc);
			if (!last)
				good += wc.status == IBV_WC_SUCCESS &&
					wc.wr_id == WRID(4400 + i) &&
					wc.byte_len == 48 &&
					is_filled(p.b.buf, 32, 0x91) &&
					!memcmp(p.b.buf + 1024, p.a.buf + 32, 16);
			poll_one(p.a.cq, &wc);
		}
		check(good == 64 + list,
		      "%d receives of two scatter entries: a message lands across both (%d)",
		      64 + list, good);
		check(wc.status == IBV_WC_REM_INV_REQ_ERR &&
		      all_bytes(p.b.buf + 1024, 0, 16),
		      "then a slot reused with one entry, posted %s: a longer message is refused, the stale entry unwritten (%s)",
		      list ? "behind a two-entry receive" : "alone",
		      status_str(&wc));
		drain_async_events();
		free_pair(&p);
	}
}

/*
 * A new QP's receive queue is empty, even when its doorbell record is
 * the one a destroyed QP left with five receives counted in it: a SEND
 * to it finds no receive (RNR, and rnr_retry 0 ends it).
 */
static void reused_record(void)
{
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct pair_opts o = defaults;
	struct ibv_wc wc;
	struct pair p;

	o.rnr_retry = 0;
	make_pair(&p, &o);
	for (int i = 0; i < 5; i++)
		post_recv(&p.b, 64 * i, 64, 4700 + i);
	if (ibv_destroy_qp(p.b.qp))
		bail("ibv_destroy_qp");
	init.send_cq = init.recv_cq = p.b.cq;
	p.b.qp = ibv_create_qp(pd, &init);
	if (!p.b.qp)
		bail("ibv_create_qp");
	reconnect_pair(&p, IBV_ACCESS_REMOTE_WRITE, &o);
	post_send(&p.a, IBV_WR_SEND, 0, 16, 0, 0, 4710);
	poll_one(p.a.cq, &wc);
	check(wc.status == IBV_WC_RNR_RETRY_EXC_ERR && wc.wr_id == WRID(4710),
	      "a new QP on a destroyed one's doorbell record has no receives: RNR (%s)",
	      status_str(&wc));
	drain_async_events();
	free_pair(&p);
}

/*
 * Two QPs share an SRQ, each with its own CQ, receives posted two in a
 * list.  Completions polled in
 * another order than the device took their WQEs hand the WQEs back in
 * that order, and later WQEs go to slots in no order a counter could
 * predict: each completion must still carry its own WR's wr_id.
 */
static void srq_out_of_order(void)
{
	struct ibv_srq_init_attr init = { .attr = { .max_wr = 3, .max_sge = 1 } };
	struct pair *ends[2], p, q;
	struct ibv_srq *srq;
	struct ibv_wc wc;
	int good = 0, n = 0;

	make_pair(&p, &defaults);
	make_pair(&q, &defaults);
	srq = ibv_create_srq(pd, &init);
	if (!srq)
		bail("ibv_create_srq");
	attach_srq(&p, srq);
	attach_srq(&q, srq);
	ends[0] = &p;
	ends[1] = &q;
	for (int round = 0; round < 6; round++) {
		/*
		 * Two receives in one list (the doorbell record counts both),
		 * a message to each QP, polled q first.
		 */
		struct ibv_sge sge[2];
		struct ibv_recv_wr wr[2], *bad;

		for (int i = 0; i < 2; i++) {
			sge[i] = (struct ibv_sge){
				(uintptr_t)p.b.buf + 64 * (n % 8), 64, p.b.mr->lkey
			};
			wr[i] = (struct ibv_recv_wr){
				.wr_id = WRID(4800 + n), .sg_list = &sge[i],
				.num_sge = 1, .next = i ? NULL : &wr[1],
			};
			n++;
		}
		if (ibv_post_srq_recv(srq, wr, &bad))
			bail("ibv_post_srq_recv");
		for (int i = 0; i < 2; i++) {
			post_send(&ends[i]->a, IBV_WR_SEND, 0, 8, 0, 0, 4900);
			poll_one(ends[i]->a.cq, &wc);
		}
		for (int i = 1; i >= 0; i--) {
			poll_one(ends[i]->b.cq, &wc);
			/* p took the first of the two, q the second. */
			good += wc.status == IBV_WC_SUCCESS &&
				wc.wr_id == WRID(4800 + n - 2 + i);
		}
	}
	check(good == 12, "an SRQ shared by two QPs, completions polled out of order: each names its WR (%d of 12)",
	      good);
	free_pair(&q);
	free_pair(&p);
	if (ibv_destroy_srq(srq))
		bail("ibv_destroy_srq");
}

/*
 * The extended CQ's readers: each field of a receive with immediate
 * data, through ibv_start_poll and the read_* functions.
 */
/* start_poll on @cq until a completion comes or the time is up. */
static int start_poll_within(struct ibv_cq_ex *cq)
{
	struct ibv_poll_cq_attr attr = {};
	int ret = ENOENT;

	for (uint64_t end = now_ms() + TIMEOUT_MS;
	     ret == ENOENT && now_ms() < end;)
		ret = ibv_start_poll(cq, &attr);
	return ret;
}

static void extended_cq(void)
{
	struct pair_opts o = defaults;
	struct ibv_cq_ex *cq;
	struct ibv_wc wc;
	struct pair p;
	int ret;

	o.ex_wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM |
			IBV_WC_EX_WITH_QP_NUM | IBV_WC_EX_WITH_SRC_QP |
			IBV_WC_EX_WITH_SLID | IBV_WC_EX_WITH_SL |
			IBV_WC_EX_WITH_DLID_PATH_BITS;
	make_pair(&p, &o);
	cq = p.b.cq_ex;
	post_recv(&p.b, 0, 64, 4000);
	fill(p.a.buf, 24, 0x41);
	{
		struct ibv_sge sge = { (uintptr_t)p.a.buf, 24, p.a.mr->lkey };
		struct ibv_send_wr wr = {
			.wr_id = WRID(4001), .sg_list = &sge, .num_sge = 1,
			.opcode = IBV_WR_SEND_WITH_IMM,
			.send_flags = IBV_SEND_SIGNALED,
			.imm_data = htobe32(TEST_IMM),
		}, *bad;

		ibv_post_send(p.a.qp, &wr, &bad);
	}
	poll_one(p.a.cq, &wc);
	ret = start_poll_within(cq);
	check(ret == 0 && cq->status == IBV_WC_SUCCESS &&
	      cq->wr_id == WRID(4000) && ibv_wc_read_opcode(cq) == IBV_WC_RECV,
	      "an extended CQ: the receive's status, wr_id and opcode (%d)", ret);
	if (ret)
		goto out;
	check(ibv_wc_read_byte_len(cq) == 24 &&
	      ibv_wc_read_imm_data(cq) == htobe32(TEST_IMM) &&
	      (ibv_wc_read_wc_flags(cq) & IBV_WC_WITH_IMM) &&
	      ibv_wc_read_qp_num(cq) == p.b.qp->qp_num &&
	      ibv_wc_read_src_qp(cq) == p.a.qp->qp_num &&
	      ibv_wc_read_slid(cq) == lid && ibv_wc_read_sl(cq) == 0 &&
	      ibv_wc_read_dlid_path_bits(cq) == 0,
	      "and its byte_len, imm_data, flags, qp_num, src_qp, slid, sl, path bits (%u, 0x%x)",
	      ibv_wc_read_byte_len(cq), be32toh(ibv_wc_read_imm_data(cq)));
	check(ibv_next_poll(cq) == ENOENT, "then the CQ is empty");
	ibv_end_poll(cq);
out:
	free_pair(&p);
}

/* ------------------------------------------------------------------ */
/* Each send path of a provider: one gather entry, several, inline     */
/* ------------------------------------------------------------------ */

/*
 * A provider builds a WQE of one gather entry, of several, and of inline
 * data in different code (rdma-core's and ours do): each case goes down
 * all three, so that a flag or a field one path forgets fails here.
 */
enum send_path { ONE_SGE, TWO_SGES, INLINE, NPATHS };
static const char *const path_name[NPATHS] = {
	"one gather entry", "two gather entries", "inline",
};

/* The QPs of @p allow two gather entries and some inline data. */
static const struct pair_opts path_opts = {
	.cqe = 64, .rnr_retry = 7, .min_rnr_timer = 1, .send_sge = 2,
	.inline_size = 64,
};

/*
 * Post @wr, its @len bytes at @offset of @e's buffer, down @path
 * (@len of 2 or more for TWO_SGES).
 */
static int post_by(struct end *e, enum send_path path, struct ibv_send_wr *wr,
		   uint32_t offset, uint32_t len)
{
	struct ibv_sge sge[2] = {
		{ (uintptr_t)e->buf + offset, len, e->mr->lkey },
		{ (uintptr_t)e->buf + offset + len / 2, len - len / 2,
		  e->mr->lkey },
	};
	struct ibv_send_wr *bad;

	wr->sg_list = sge;
	wr->num_sge = 1;
	if (path == TWO_SGES) {
		sge[0].length = len / 2;
		wr->num_sge = 2;
	} else if (path == INLINE) {
		wr->send_flags |= IBV_SEND_INLINE;
	}
	return ibv_post_send(e->qp, wr, &bad);
}

/*
 * A CQ armed for solicited completions only wakes for a SEND that asks
 * for it, signalled or not, whichever path built the SEND, and for no
 * other.  The SENDs carry immediate data, which each path must pass on
 * as it is (network order).
 */
static void solicited_events(void)
{
	static const struct {
		unsigned int flags;
		bool wakes;
		const char *what;
	} kinds[] = {
		{ IBV_SEND_SIGNALED, false, "plain" },
		{ IBV_SEND_SIGNALED | IBV_SEND_SOLICITED, true, "solicited" },
		{ IBV_SEND_SOLICITED, true, "unsignalled solicited" },
	};
	struct ibv_comp_channel *ch;
	struct ibv_cq *ev_cq;
	struct ibv_wc wc;
	void *cq_ctx;
	struct pair p;

	ch = make_pair_with_events(&p, path_opts);
	for (int path = 0; path < NPATHS; path++) {
		for (int k = 0; k < 3; k++) {
			struct ibv_send_wr wr = {
				.wr_id = WRID(1000 + 3 * path + k),
				.opcode = IBV_WR_SEND_WITH_IMM,
				.send_flags = kinds[k].flags,
				.imm_data = htobe32(TEST_IMM + path),
			};
			struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
			bool woke;

			ibv_req_notify_cq(p.b.cq, 1);
			post_recv(&p.b, 0, 64, 1010);
			fill(p.a.buf + 128, 16, 0x31 + path);
			post_by(&p.a, path, &wr, 128, 16);
			if (kinds[k].flags & IBV_SEND_SIGNALED)
				poll_one(p.a.cq, &wc);
			poll_one(p.b.cq, &wc);
			woke = poll(&pfd, 1, kinds[k].wakes ? TIMEOUT_MS : 100) == 1;
			if (woke && ibv_get_cq_event(ch, &ev_cq, &cq_ctx) == 0)
				ibv_ack_cq_events(ev_cq, 1);
			check(wc.status == IBV_WC_SUCCESS &&
			      woke == kinds[k].wakes &&
			      (wc.wc_flags & IBV_WC_WITH_IMM) &&
			      be32toh(wc.imm_data) == (uint32_t)(TEST_IMM + path) &&
			      is_filled(p.b.buf, 16, 0x31 + path),
			      "%s: a CQ armed for solicited completions %s for a %s SEND with immediate (%s)",
			      path_name[path], kinds[k].wakes ? "wakes" : "sleeps",
			      kinds[k].what, status_str(&wc));
		}
	}
	free_pair(&p);
	ibv_destroy_comp_channel(ch);
}

/*
 * Over three passes over the send queue down each path, and in lists of
 * three one-entry WRs (the list path), one WR in three signalled: the
 * device sees each WQE when its owner bit turns for the pass (a WQE the
 * driver forgot to hand over stops the queue), and each completion names
 * its own WR, the unsignalled ones before it retired silently.  A send
 * queue of 16 WRs has up to 64 WQEs (the spare ones for prefetching).
 */
static void send_queue_passes(void)
{
	enum { PER_PATH = 201, SLOTS = 100 };
	struct ibv_wc wc;
	struct pair p;

	make_pair(&p, &path_opts);
	for (int path = 0; path <= NPATHS; path++) {
		bool list = path == NPATHS;
		struct ibv_send_wr wrs[3] = {};
		struct ibv_sge sge[3];
		int good = 0, landed = 0;

		for (int i = 0; i < PER_PATH; i++) {
			uint32_t off = 32 * (i % SLOTS);
			bool signalled = i % 3 == 2;
			struct ibv_send_wr *bad, wr = {
				.wr_id = WRID(2000 + 1000 * path + i),
				.opcode = IBV_WR_RDMA_WRITE,
				.send_flags = signalled ? IBV_SEND_SIGNALED : 0,
			};

			fill(p.a.buf + off, 32, 3 * i + path);
			wr.wr.rdma.remote_addr = (uintptr_t)p.b.buf + off;
			wr.wr.rdma.rkey = p.b.mr->rkey;
			if (list) {
				/* WRs i-2, i-1 and i, in one call. */
				sge[i % 3] = (struct ibv_sge){
					(uintptr_t)p.a.buf + off, 32, p.a.mr->lkey
				};
				wrs[i % 3] = wr;
				wrs[i % 3].sg_list = &sge[i % 3];
				wrs[i % 3].num_sge = 1;
				if (!signalled)
					continue;
				wrs[0].next = &wrs[1];
				wrs[1].next = &wrs[2];
				if (ibv_post_send(p.a.qp, wrs, &bad))
					break;
			} else if (post_by(&p.a, path, &wr, off, 32)) {
				break;
			}
			if (!signalled)
				continue;
			/* A stuck queue: one timeout, not one per WR. */
			if (!poll_one(p.a.cq, &wc))
				break;
			good += wc.status == IBV_WC_SUCCESS &&
				wc.opcode == IBV_WC_RDMA_WRITE &&
				wc.wr_id == WRID(2000 + 1000 * path + i);
		}
		for (int i = PER_PATH - SLOTS; i < PER_PATH; i++)
			landed += is_filled(p.b.buf + 32 * (i % SLOTS), 32,
					    3 * i + path);
		check(good == PER_PATH / 3 && landed == SLOTS,
		      "%s: %d RDMA WRITEs, three passes over the send queue: %d of %d completions name their WR, %d of the last %d land",
		      list ? "lists of three" : path_name[path], PER_PATH,
		      good, PER_PATH / 3, landed, SLOTS);
		memset(p.b.buf, 0, 32 * SLOTS);
	}
	free_pair(&p);
}

/*
 * Inline data of every length up to the QP's limit, in a SEND and an
 * RDMA WRITE (whose headers end at different places of the first 64
 * bytes): an inline segment may not cross a 64-byte boundary, so longer
 * data is cut in pieces, and each piece's length must be right.
 */
static void inline_lengths(void)
{
	struct pair_opts o = path_opts;
	struct ibv_qp_attr attr;
	struct ibv_qp_init_attr init;
	uint32_t max, bad_send = 0, bad_write = 0;
	struct ibv_wc wc;
	struct pair p;

	o.inline_size = 256;
	make_pair(&p, &o);
	if (ibv_query_qp(p.a.qp, &attr, IBV_QP_CAP, &init))
		bail("ibv_query_qp");
	max = init.cap.max_inline_data < 1024 ? init.cap.max_inline_data : 1024;
	for (uint32_t len = 1; len <= max; len++) {
		struct ibv_send_wr wr = {
			.wr_id = WRID(len), .opcode = IBV_WR_SEND,
			.send_flags = IBV_SEND_SIGNALED,
		};

		fill(p.a.buf, len, len);
		memset(p.b.buf, 0, len + 1);
		post_recv(&p.b, 0, 1024, len);
		post_by(&p.a, INLINE, &wr, 0, len);
		poll_one(p.a.cq, &wc);
		poll_one(p.b.cq, &wc);
		if (!bad_send && (wc.status != IBV_WC_SUCCESS ||
				  wc.byte_len != len ||
				  !is_filled(p.b.buf, len, len) || p.b.buf[len]))
			bad_send = len;

		wr = (struct ibv_send_wr){
			.wr_id = WRID(len), .opcode = IBV_WR_RDMA_WRITE,
			.send_flags = IBV_SEND_SIGNALED,
		};
		wr.wr.rdma.remote_addr = (uintptr_t)p.b.buf + 2048;
		wr.wr.rdma.rkey = p.b.mr->rkey;
		memset(p.b.buf + 2048, 0, len + 1);
		post_by(&p.a, INLINE, &wr, 0, len);
		poll_one(p.a.cq, &wc);
		if (!bad_write && (wc.status != IBV_WC_SUCCESS ||
				   !is_filled(p.b.buf + 2048, len, len) ||
				   p.b.buf[2048 + len]))
			bad_write = len;
		if (bad_send && bad_write)
			break;
	}
	check(max >= 64 && !bad_send,
	      "inline SENDs of 1 to %u bytes arrive whole (first wrong: %u)",
	      max, bad_send);
	check(max >= 64 && !bad_write,
	      "inline RDMA WRITEs of 1 to %u bytes land whole (first wrong: %u)",
	      max, bad_write);
	free_pair(&p);
}

/* A UD QP of Q_Key TEST_QKEY, ready to send and receive. */
static struct ibv_qp *ud_qp(struct ibv_cq *cq)
{
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_UD, .send_cq = cq, .recv_cq = cq,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16,
			 .max_send_sge = 2, .max_recv_sge = 1,
			 .max_inline_data = 128 },
	};
	const struct qp_path path = { .qkey = TEST_QKEY, .sq_psn = TEST_PSN };
	struct ibv_qp *qp = ibv_create_qp(pd, &init);
	const char *step;

	if (!qp)
		bail("UD QP");
	if (qp_connect(qp, &path, &step))
		bail(step);
	return qp;
}

/* A UD end: its CQ and QP, a registered buffer. */
static void ud_end(struct end *e)
{
	e->cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	if (!e->cq)
		bail("ibv_create_cq");
	e->qp = ud_qp(e->cq);
	e->buf = registered_buffer(pd, BUF_SIZE, IBV_ACCESS_LOCAL_WRITE, &e->mr);
}

/*
 * Send @len bytes from @tx down @path to @rx's QP with @qkey; true when
 * the datagram arrived whole.
 */
static bool datagram(struct end *tx, struct end *rx, struct ibv_ah *ah,
		     enum send_path path, uint32_t qkey, uint32_t len,
		     unsigned int seed)
{
	struct ibv_send_wr wr = {
		.wr_id = WRID(3000 + len), .opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
	};
	struct ibv_wc wc;

	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = rx->qp->qp_num;
	wr.wr.ud.remote_qkey = qkey;
	fill(tx->buf, len, seed);
	memset(rx->buf, 0, 40 + len + 1);
	post_by(tx, path, &wr, 0, len);
	poll_one(tx->cq, &wc);
	if (wc.status != IBV_WC_SUCCESS || wc.wr_id != WRID(3000 + len))
		return false;
	/* Nothing else to wait for: a dropped datagram never completes. */
	for (uint64_t end = now_ms() + 100; now_ms() < end;)
		if (ibv_poll_cq(rx->cq, 1, &wc))
			return wc.status == IBV_WC_SUCCESS &&
			       wc.opcode == IBV_WC_RECV &&
			       wc.wr_id == WRID(3100) &&
			       wc.byte_len == 40 + len &&
			       wc.src_qp == tx->qp->qp_num &&
			       wc.sl == TEST_SL && wc.slid == lid &&
			       is_filled(rx->buf + 40, len, seed) &&
			       !rx->buf[40 + len];
	return false;
}

/*
 * UD down each path to a QP of an asymmetric Q_Key, from an address
 * handle with a service level: the datagram arrives with that SL, and
 * with its Q_Key byte-swapped the receiver drops it.  Then
 * inline datagrams of every length, whose data start after the 48-byte
 * datagram segment.
 */
static void ud_paths(void)
{
	struct ibv_ah_attr ah_attr = { .dlid = lid, .sl = TEST_SL, .port_num = 1 };
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr attr;
	uint32_t max, bad_len = 0;
	struct end tx = {}, rx = {};
	struct ibv_ah *ah;

	ud_end(&tx);
	ud_end(&rx);
	ah = ibv_create_ah(pd, &ah_attr);
	if (!ah)
		bail("ibv_create_ah");
	post_recv(&rx, 0, 1024, 3100);
	for (int path = 0; path < NPATHS; path++) {
		check(!datagram(&tx, &rx, ah, path, __builtin_bswap32(TEST_QKEY),
				24, 0x51 + path),
		      "%s: a datagram with the Q_Key byte-swapped is dropped",
		      path_name[path]);
		check(datagram(&tx, &rx, ah, path, TEST_QKEY, 24, 0x61 + path),
		      "%s: a datagram to Q_Key 0x%x arrives whole, with SL %d",
		      path_name[path], TEST_QKEY, TEST_SL);
		post_recv(&rx, 0, 1024, 3100);
	}

	if (ibv_query_qp(tx.qp, &attr, IBV_QP_CAP, &init))
		bail("ibv_query_qp");
	max = init.cap.max_inline_data < 512 ? init.cap.max_inline_data : 512;
	for (uint32_t len = 1; len <= max && !bad_len; len++) {
		if (!datagram(&tx, &rx, ah, INLINE, TEST_QKEY, len, len))
			bad_len = len;
		post_recv(&rx, 0, 1024, 3100);
	}
	check(max >= 64 && !bad_len,
	      "inline datagrams of 1 to %u bytes arrive whole (first wrong: %u)",
	      max, bad_len);

	ibv_destroy_ah(ah);
	free_end(&tx);
	free_end(&rx);
}

/* The status and wr_id of @tx's next completion, through its extended CQ. */
static bool next_is(struct end *tx, enum ibv_wc_status status, uint64_t wr_id)
{
	bool is;

	if (start_poll_within(tx->cq_ex))
		return false;
	is = tx->cq_ex->status == status && tx->cq_ex->wr_id == wr_id;
	ibv_end_poll(tx->cq_ex);
	return is;
}

/*
 * A send error on a UD QP puts it in SQE, not ERROR (the IB
 * specification's rule for every type but RC): the request after it is
 * flushed, the receive queue works on, and a modify back to RTS sends
 * again.  Its CQ is extended: the receive's success, read after the
 * errors through start_poll, must read as one.
 */
static void ud_send_error(void)
{
	struct ibv_cq_init_attr_ex cq_attr = {
		.cqe = 64, .wc_flags = IBV_WC_EX_WITH_BYTE_LEN,
	};
	struct ibv_ah_attr ah_attr = { .dlid = lid, .sl = TEST_SL, .port_num = 1 };
	struct ibv_qp_attr rts = { .qp_state = IBV_QPS_RTS };
	struct end tx = {}, rx = {};
	struct ibv_send_wr wr[2], *bad;
	struct ibv_sge sge[2];
	struct ibv_wc wc;
	struct ibv_ah *ah;

	tx.cq_ex = ibv_create_cq_ex(ctx, &cq_attr);
	if (!tx.cq_ex)
		bail("ibv_create_cq_ex");
	tx.cq = ibv_cq_ex_to_cq(tx.cq_ex);
	tx.qp = ud_qp(tx.cq);
	tx.buf = registered_buffer(pd, BUF_SIZE, IBV_ACCESS_LOCAL_WRITE, &tx.mr);
	ud_end(&rx);
	ah = ibv_create_ah(pd, &ah_attr);
	if (!ah)
		bail("ibv_create_ah");
	post_recv(&tx, 0, 1024, 3100);
	for (int i = 0; i < 2; i++) {
		sge[i] = (struct ibv_sge){ (uintptr_t)tx.buf, 16,
					   i ? tx.mr->lkey : tx.mr->lkey ^ 0x5a00 };
		wr[i] = (struct ibv_send_wr){ .wr_id = WRID(3300 + i),
			.sg_list = &sge[i], .num_sge = 1, .opcode = IBV_WR_SEND,
			.send_flags = IBV_SEND_SIGNALED, .next = i ? NULL : &wr[1] };
		wr[i].wr.ud.ah = ah;
		wr[i].wr.ud.remote_qpn = rx.qp->qp_num;
		wr[i].wr.ud.remote_qkey = TEST_QKEY;
	}
	if (ibv_post_send(tx.qp, wr, &bad))
		bail("ibv_post_send");
	check(next_is(&tx, IBV_WC_LOC_PROT_ERR, WRID(3300)) &&
	      next_is(&tx, IBV_WC_WR_FLUSH_ERR, WRID(3301)),
	      "UD: a send with a bad lkey LOC_PROT_ERR, the next flushed");
	check(qp_state(tx.qp) == IBV_QPS_SQE,
	      "UD: a send error puts the QP in SQE (%d)", (int)qp_state(tx.qp));
	wr[1].wr.ud.remote_qpn = tx.qp->qp_num;
	sge[1] = (struct ibv_sge){ (uintptr_t)rx.buf, 24, rx.mr->lkey };
	if (ibv_post_send(rx.qp, &wr[1], &bad))
		bail("ibv_post_send");
	poll_one(rx.cq, &wc);
	check(wc.status == IBV_WC_SUCCESS &&
	      next_is(&tx, IBV_WC_SUCCESS, WRID(3100)),
	      "UD: in SQE its receive queue works on, its success read as one");
	check(!ibv_modify_qp(tx.qp, &rts, IBV_QP_STATE) &&
	      qp_state(tx.qp) == IBV_QPS_RTS, "UD: SQE back to RTS");
	post_recv(&rx, 0, 1024, 3100);
	check(datagram(&tx, &rx, ah, ONE_SGE, TEST_QKEY, 24, 0x72),
	      "UD: back in RTS it sends again");

	ibv_destroy_ah(ah);
	free_end(&tx);
	free_end(&rx);
}

/*
 * The cases, in the order a full run takes them.  They share the device
 * and its PD (main() opens them before any case); each makes and
 * destroys its own QPs, CQs, MRs and the rest, and acks the async
 * events it waits for, so each runs alone as in the full run.
 */
static const struct test_case cases[] = {
	{ "bad_rkey", bad_rkey,
	  "an RDMA WRITE with a bad rkey: REM_ACCESS_ERR, both QPs in ERROR" },
	{ "out_of_bounds", out_of_bounds,
	  "an RDMA WRITE past the end of the region: REM_ACCESS_ERR" },
	{ "rnr_retry_exceeded", rnr_retry_exceeded,
	  "a SEND with no receive and rnr_retry 0: RNR_RETRY_EXC_ERR" },
	{ "rnr_then_receive", rnr_then_receive,
	  "a SEND retried on RNR lands in a receive posted later" },
	{ "flush", flush,
	  "a QP in ERROR flushes its receives and sends, in order" },
	{ "receive_too_small", receive_too_small,
	  "a receive too small: LOC_LEN_ERR and REM_INV_REQ_ERR" },
	{ "receive_unwritable", receive_unwritable,
	  "receives into unwritable memory: each completes once, in order" },
	{ "cq_overrun", cq_overrun,
	  "completions beyond a CQ's size: IBV_EVENT_CQ_ERR, no stale CQE" },
	{ "read_and_atomics", read_and_atomics,
	  "RDMA READ, compare-and-swap, fetch-and-add; a fenced SEND" },
	{ "zero_length_gather", zero_length_gather,
	  "gather entries of no length" },
	{ "overlapping_write", overlapping_write,
	  "an RDMA WRITE onto its own source, each way" },
	{ "immediate_and_events", immediate_and_events,
	  "SEND with immediate; a completion channel's events" },
	{ "resize_cq", resize_cq,
	  "ibv_resize_cq up and down, completions kept in order" },
	{ "srq_events", srq_events,
	  "an SRQ's limit event" },
	{ "memory_window", memory_window,
	  "a type 1 memory window bound and used" },
	{ "multicast", multicast,
	  "UD QPs in a multicast group" },
	{ "solicited_events", solicited_events,
	  "a CQ armed for solicited completions, down each send path" },
	{ "send_queue_passes", send_queue_passes,
	  "three passes over the send queue down each path" },
	{ "inline_lengths", inline_lengths,
	  "inline data of every length in a SEND and an RDMA WRITE" },
	{ "ud_paths", ud_paths,
	  "UD down each path: SL, an asymmetric Q_Key, inline datagrams" },
	{ "ud_send_error", ud_send_error,
	  "a UD send error: SQE, not ERROR, and back to RTS" },
	{ "extended_cq", extended_cq,
	  "an extended CQ's fields for a receive" },
	{ "rearm_unpolled", rearm_unpolled,
	  "a CQ re-armed without polling wakes again" },
	{ "destroy_with_completions", destroy_with_completions,
	  "a QP destroyed with completions in a shared CQ" },
	{ "srq_stale_entries", srq_stale_entries,
	  "an SRQ WQE's list ends where it does, whatever its slot held" },
	{ "rq_stale_entries", rq_stale_entries,
	  "a receive WQE's list ends where it does, whatever its slot held" },
	{ "reused_record", reused_record,
	  "a new QP's receive queue is empty on a reused doorbell record" },
	{ "srq_out_of_order", srq_out_of_order,
	  "SRQ completions polled out of order keep their wr_ids" },
};

/* Usage: rdma-semantics [--list | NAME...] */
int main(int argc, char **argv)
{
	struct ibv_port_attr port;
	int ret = cases_select(cases, CASES_N(cases), argc, argv, 1);

	if (ret >= 0)
		return ret;

	ctx = open_first_device("rdma-semantics");
	pd = ibv_alloc_pd(ctx);
	if (!pd || ibv_query_port(ctx, 1, &port))
		bail("setup");
	lid = port.lid;
	cases_run(cases, CASES_N(cases));
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return tap_finish();
}
