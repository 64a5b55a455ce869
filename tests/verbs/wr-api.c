/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * wr-api: the extended QP post interface (ibv_wr_*), seen from both
 * ends: every opcode an RC QP and a UD QP take, with the data checked
 * where it lands; a batch rung once; wr_abort, also after a setter's
 * error and on a UD request lacking its address; an error inside a
 * batch; inline data lists crossing a 64-byte block; a fenced request
 * whose data comes from wr_set_sge_list; an XRC QP sending to an SRQ by
 * number; opcodes refused when the QP is created.  (Raw packet QPs'
 * ibv_wr_* are tests/verbs/raw-eth's: they need Ethernet ports.)
 *
 * A provider without the interface (rdma-core's mlx4) refuses the first
 * QP: the test then skips, naming the errno.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>
#include <endian.h>
#include <infiniband/verbs.h>

#include "../buffer.h"
#include "../cases.h"
#include "../device.h"
#include "../qp-connect.h"
#include "../tap.h"
#include "../wait.h"

#define BUF_SIZE	4096
#define TEST_PSN	0x1a2b3c
#define TEST_QKEY	0x11223344
#define TEST_IMM	0x00c0ffee
#define WRID(n)		(0x0102030405060000ULL + (n))

#define RC_OPS	(IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM | \
		 IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | \
		 IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | \
		 IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | IBV_QP_EX_WITH_BIND_MW | \
		 IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_SEND_WITH_INV)

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static uint16_t lid;

struct end {
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_qp_ex *qpx;
	struct ibv_mr *mr;
	uint8_t *buf;
};

static struct ibv_qp *create_qp_ex(struct ibv_cq *cq, enum ibv_qp_type type,
				   uint64_t ops)
{
	struct ibv_qp_init_attr_ex init = {
		.qp_type = type, .send_cq = cq, .recv_cq = cq,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16,
			 .max_send_sge = 2, .max_recv_sge = 1,
			 .max_inline_data = 64 },
		.comp_mask = IBV_QP_INIT_ATTR_PD |
			     IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = pd, .send_ops_flags = ops,
	};

	return ibv_create_qp_ex(ctx, &init);
}

static void make_end(struct end *e, enum ibv_qp_type type, uint64_t ops)
{
	e->cq = ibv_create_cq(ctx, 32, NULL, NULL, 0);
	if (!e->cq)
		bail("ibv_create_cq");
	e->qp = create_qp_ex(e->cq, type, ops);
	if (!e->qp)
		bail("ibv_create_qp_ex");
	e->qpx = ibv_qp_to_qp_ex(e->qp);
	if (!e->qpx)
		bail("ibv_qp_to_qp_ex");
	e->buf = registered_buffer(pd, BUF_SIZE, ACCESS_ALL, &e->mr);
}

static void free_end(struct end *e)
{
	if (ibv_destroy_qp(e->qp) || ibv_dereg_mr(e->mr) ||
	    ibv_destroy_cq(e->cq))
		bail("teardown");
	free(e->buf);
}

/* @e's QP to RTS, connected to @remote_qpn (RC, UC) or not (UD). */
static void bring_up(struct end *e, uint32_t remote_qpn)
{
	const struct qp_path path = {
		.remote_qpn = remote_qpn, .dlid = lid,
		.rq_psn = TEST_PSN, .sq_psn = TEST_PSN, .qkey = TEST_QKEY,
		.access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			  IBV_ACCESS_REMOTE_ATOMIC,
		.rd_atomic = 4, .min_rnr_timer = 1,
		.timeout = 10, .retry_cnt = 2, .rnr_retry = 7,
	};
	const char *step;

	if (qp_connect(e->qp, &path, &step))
		bail(step);
}

static void post_recv(struct end *e, uint32_t off, uint32_t len, uint64_t id)
{
	struct ibv_sge sge = { (uintptr_t)e->buf + off, len, e->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad;

	if (ibv_post_recv(e->qp, &wr, &bad))
		bail("ibv_post_recv");
}

static bool completes(struct end *e, uint64_t id, enum ibv_wc_opcode op,
		      struct ibv_wc *wc)
{
	return poll_cq_within(e->cq, wc, 5000) == 1 &&
	       wc->status == IBV_WC_SUCCESS &&
	       wc->wr_id == id && wc->opcode == op;
}

/* The next WR of a batch: its @id and @flags, then its verb. */
static void wr_next(struct ibv_qp_ex *x, uint64_t id, unsigned int flags)
{
	x->wr_id = id;
	x->wr_flags = flags;
}

/* A new batch, its first WR's @id and @flags set: its verb comes next. */
static void wr_begin(struct ibv_qp_ex *x, uint64_t id, unsigned int flags)
{
	ibv_wr_start(x);
	wr_next(x, id, flags);
}

/* The WR's one gather entry: @len bytes at @off in @e's buffer. */
static void set_sge(struct ibv_qp_ex *x, struct end *e, uint32_t off,
		    uint32_t len)
{
	ibv_wr_set_sge(x, e->mr->lkey, (uintptr_t)e->buf + off, len);
}

static void fill(uint8_t *p, size_t len, unsigned int seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (uint8_t)(i * 7 + seed);
}

static void rc_opcodes(struct end *a, struct end *b)
{
	struct ibv_qp_ex *x = a->qpx;
	uint64_t *atom = (uint64_t *)(b->buf + 2048);
	struct ibv_wc wc;
	uint8_t inl[40];
	int ret;

	/* SEND from two SGEs. */
	fill(a->buf, 100, 1);
	post_recv(b, 1024, 200, WRID(100));
	wr_begin(x, WRID(1), IBV_SEND_SIGNALED);
	ibv_wr_send(x);
	{
		struct ibv_sge sg[2] = {
			{ (uintptr_t)a->buf, 60, a->mr->lkey },
			{ (uintptr_t)a->buf + 60, 40, a->mr->lkey },
		};
		ibv_wr_set_sge_list(x, 2, sg);
	}
	ret = ibv_wr_complete(x);
	check(!ret && completes(a, WRID(1), IBV_WC_SEND, &wc),
	      "wr_send, 2 SGEs: sender's completion");
	check(completes(b, WRID(100), IBV_WC_RECV, &wc) && wc.byte_len == 100 &&
	      !memcmp(b->buf + 1024, a->buf, 100),
	      "wr_send, 2 SGEs: the 100 bytes arrive");

	/* SEND with immediate, inline from a list; the buffer reused at once. */
	fill(inl, sizeof(inl), 2);
	post_recv(b, 1024, 200, WRID(101));
	wr_begin(x, WRID(2), IBV_SEND_SIGNALED | IBV_SEND_SOLICITED);
	ibv_wr_send_imm(x, htonl(TEST_IMM));
	{
		struct ibv_data_buf d[2] = { { inl, 25 }, { inl + 25, 15 } };

		ibv_wr_set_inline_data_list(x, 2, d);
	}
	memset(inl, 0, sizeof(inl));
	ret = ibv_wr_complete(x);
	fill(inl, sizeof(inl), 2);
	check(!ret && completes(a, WRID(2), IBV_WC_SEND, &wc),
	      "wr_send_imm inline: sender's completion");
	check(completes(b, WRID(101), IBV_WC_RECV, &wc) && wc.byte_len == 40 &&
	      (wc.wc_flags & IBV_WC_WITH_IMM) && ntohl(wc.imm_data) == TEST_IMM &&
	      !memcmp(b->buf + 1024, inl, 40),
	      "wr_send_imm inline: immediate and the bytes copied at the call");

	/* RDMA WRITE, then WRITE with immediate. */
	fill(a->buf + 200, 300, 3);
	wr_begin(x, WRID(3), IBV_SEND_SIGNALED);
	ibv_wr_rdma_write(x, b->mr->rkey, (uintptr_t)b->buf + 3000);
	set_sge(x, a, 200, 300);
	ret = ibv_wr_complete(x);
	check(!ret && completes(a, WRID(3), IBV_WC_RDMA_WRITE, &wc) &&
	      !memcmp(b->buf + 3000, a->buf + 200, 300),
	      "wr_rdma_write: 300 bytes land at the remote address");

	post_recv(b, 0, 0, WRID(102));
	fill(a->buf + 200, 50, 4);
	wr_begin(x, WRID(4), IBV_SEND_SIGNALED);
	ibv_wr_rdma_write_imm(x, b->mr->rkey, (uintptr_t)b->buf + 3500,
			      htonl(TEST_IMM + 1));
	set_sge(x, a, 200, 50);
	ret = ibv_wr_complete(x);
	check(!ret && completes(a, WRID(4), IBV_WC_RDMA_WRITE, &wc) &&
	      completes(b, WRID(102), IBV_WC_RECV_RDMA_WITH_IMM, &wc) &&
	      ntohl(wc.imm_data) == TEST_IMM + 1 &&
	      !memcmp(b->buf + 3500, a->buf + 200, 50),
	      "wr_rdma_write_imm: data and immediate");

	/* RDMA READ. */
	fill(b->buf + 1500, 128, 5);
	wr_begin(x, WRID(5), IBV_SEND_SIGNALED);
	ibv_wr_rdma_read(x, b->mr->rkey, (uintptr_t)b->buf + 1500);
	set_sge(x, a, 1500, 128);
	ret = ibv_wr_complete(x);
	check(!ret && completes(a, WRID(5), IBV_WC_RDMA_READ, &wc) &&
	      !memcmp(a->buf + 1500, b->buf + 1500, 128),
	      "wr_rdma_read: 128 bytes read back");

	/* Atomics, one batch: compare-and-swap then fetch-and-add. */
	*atom = htobe64(0x1122334455667700ULL);
	wr_begin(x, WRID(6), IBV_SEND_SIGNALED);
	ibv_wr_atomic_cmp_swp(x, b->mr->rkey, (uintptr_t)atom,
			      0x1122334455667700ULL, 0x8877665544332211ULL);
	set_sge(x, a, 2048, 8);
	wr_next(x, WRID(7), IBV_SEND_SIGNALED | IBV_SEND_FENCE);
	ibv_wr_atomic_fetch_add(x, b->mr->rkey, (uintptr_t)atom,
				0x0000000100000001ULL);
	set_sge(x, a, 2056, 8);
	ret = ibv_wr_complete(x);
	check(!ret && completes(a, WRID(6), IBV_WC_COMP_SWAP, &wc) &&
	      completes(a, WRID(7), IBV_WC_FETCH_ADD, &wc),
	      "wr_atomic_cmp_swp + wr_atomic_fetch_add in one batch complete");
	/* The device reads and writes the words big-endian. */
	check(be64toh(*(uint64_t *)(a->buf + 2048)) == 0x1122334455667700ULL &&
	      be64toh(*(uint64_t *)(a->buf + 2056)) == 0x8877665544332211ULL &&
	      be64toh(*atom) == 0x8877665544332211ULL + 0x0000000100000001ULL,
	      "atomics: old values returned, remote word swapped then added");
}

/* Three SENDs rung once, unsignalled but the last; then wr_abort. */
static void batch_and_abort(struct end *a, struct end *b)
{
	struct ibv_qp_ex *x = a->qpx;
	struct ibv_wc wc;
	int i, ret, ok = 1;

	for (i = 0; i < 3; i++)
		post_recv(b, 100 * i, 100, WRID(200 + i));
	fill(a->buf, 300, 9);
	ibv_wr_start(x);
	for (i = 0; i < 3; i++) {
		wr_next(x, WRID(10 + i), i == 2 ? IBV_SEND_SIGNALED : 0);
		ibv_wr_send(x);
		set_sge(x, a, 100 * i, 100);
	}
	ret = ibv_wr_complete(x);
	check(!ret && completes(a, WRID(12), IBV_WC_SEND, &wc) &&
	      poll_cq_within(a->cq, &wc, 100) == 0,
	      "batch of 3: one completion, the signalled last one");
	for (i = 0; i < 3; i++)
		ok &= completes(b, WRID(200 + i), IBV_WC_RECV, &wc) &&
		      wc.byte_len == 100;
	check(ok && !memcmp(b->buf, a->buf, 300),
	      "batch of 3: all three arrive, in order");

	/* Aborted: nothing leaves; the next batch takes the same slots. */
	memset(b->buf, 0, 300);
	post_recv(b, 0, 100, WRID(210));
	wr_begin(x, WRID(20), IBV_SEND_SIGNALED);
	ibv_wr_send(x);
	set_sge(x, a, 0, 100);
	ibv_wr_send(x);
	set_sge(x, a, 0, 100);
	ibv_wr_abort(x);
	check(poll_cq_within(a->cq, &wc, 200) == 0 &&
	      poll_cq_within(b->cq, &wc, 10) == 0,
	      "wr_abort: no completion on either end");
	wr_begin(x, WRID(21), IBV_SEND_SIGNALED);
	ibv_wr_send(x);
	set_sge(x, a, 100, 50);
	ret = ibv_wr_complete(x);
	check(!ret && completes(a, WRID(21), IBV_WC_SEND, &wc) &&
	      completes(b, WRID(210), IBV_WC_RECV, &wc) && wc.byte_len == 50 &&
	      !memcmp(b->buf, a->buf + 100, 50),
	      "after wr_abort: the next batch's one SEND is all that arrives");

	/* An error in the batch: wr_complete says so, nothing is sent. */
	post_recv(b, 0, 100, WRID(220));
	wr_begin(x, WRID(30), IBV_SEND_SIGNALED);
	ibv_wr_send(x);
	set_sge(x, a, 0, 10);
	{
		struct ibv_sge sg[32];

		for (i = 0; i < 32; i++)
			sg[i] = (struct ibv_sge){ (uintptr_t)a->buf, 1,
						  a->mr->lkey };
		ibv_wr_send(x);
		ibv_wr_set_sge_list(x, 32, sg);
	}
	ret = ibv_wr_complete(x);
	check(ret == EINVAL, "too many SGEs in a batch: wr_complete %d (%s)",
	      ret, strerror(ret));
	check(poll_cq_within(a->cq, &wc, 200) == 0 &&
	      poll_cq_within(b->cq, &wc, 10) == 0,
	      "failed batch: nothing sent, not even the good first WR");

	wr_begin(x, WRID(31), IBV_SEND_SIGNALED);
	ibv_wr_send(x);
	ibv_wr_set_inline_data(x, a->buf, 2000);	/* past any inline room */
	ret = ibv_wr_complete(x);
	check(ret == ENOMEM && poll_cq_within(a->cq, &wc, 200) == 0,
	      "inline too long: wr_complete %d (%s), nothing sent",
	      ret, strerror(ret));

	/* A batch longer than the queue. */
	ibv_wr_start(x);
	for (i = 0; i < 64; i++) {
		wr_next(x, WRID(40 + i), 0);
		ibv_wr_send(x);
		set_sge(x, a, 0, 1);
	}
	ret = ibv_wr_complete(x);
	check(ret == ENOMEM && poll_cq_within(b->cq, &wc, 200) == 0,
	      "a batch past the queue's end: wr_complete %d (%s), nothing sent",
	      ret, strerror(ret));
	wr_begin(x, WRID(60), IBV_SEND_SIGNALED);
	ibv_wr_send(x);
	set_sge(x, a, 7, 33);
	ret = ibv_wr_complete(x);
	check(!ret && completes(a, WRID(60), IBV_WC_SEND, &wc) &&
	      completes(b, WRID(220), IBV_WC_RECV, &wc) && wc.byte_len == 33 &&
	      !memcmp(b->buf, a->buf + 7, 33),
	      "after the failed batches the queue works");
}

/*
 * b binds a type 2 window on its buffer, a writes through it; b
 * invalidates it locally; b binds it again and a's SEND with
 * invalidate names it.
 */
static void windows(struct end *a, struct end *b)
{
	struct ibv_mw *mw = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
	struct ibv_mw_bind_info info = {
		.addr = 0, .length = 256,
		.mw_access_flags = IBV_ACCESS_REMOTE_WRITE,
	};
	struct ibv_qp_ex *x = b->qpx;
	struct ibv_wc wc;
	uint32_t rkey;
	int ret;

	if (!mw) {
		check(0, "ibv_alloc_mw type 2: %s", strerror(errno));
		return;
	}
	ibv_dereg_mr(b->mr);
	b->mr = ibv_reg_mr(pd, b->buf, BUF_SIZE, ACCESS_ALL | IBV_ACCESS_MW_BIND);
	if (!b->mr)
		bail("ibv_reg_mr with MW_BIND");
	info.mr = b->mr;
	info.addr = (uintptr_t)b->buf + 1024;

	rkey = ibv_inc_rkey(mw->rkey);
	wr_begin(x, WRID(80), IBV_SEND_SIGNALED);
	ibv_wr_bind_mw(x, mw, rkey, &info);
	ret = ibv_wr_complete(x);
	check(!ret && completes(b, WRID(80), IBV_WC_BIND_MW, &wc),
	      "wr_bind_mw: the bind completes");
	fill(a->buf, 64, 0x31);
	wr_begin(a->qpx, WRID(81), IBV_SEND_SIGNALED);
	ibv_wr_rdma_write(a->qpx, rkey, (uintptr_t)b->buf + 1024);
	set_sge(a->qpx, a, 0, 64);
	ret = ibv_wr_complete(a->qpx);
	check(!ret && completes(a, WRID(81), IBV_WC_RDMA_WRITE, &wc) &&
	      !memcmp(b->buf + 1024, a->buf, 64),
	      "an RDMA WRITE through the bound window's rkey lands");

	wr_begin(x, WRID(82), IBV_SEND_SIGNALED);
	ibv_wr_local_inv(x, rkey);
	ret = ibv_wr_complete(x);
	check(!ret && completes(b, WRID(82), IBV_WC_LOCAL_INV, &wc),
	      "wr_local_inv: completes");

	rkey = ibv_inc_rkey(rkey);
	wr_begin(x, WRID(83), IBV_SEND_SIGNALED);
	ibv_wr_bind_mw(x, mw, rkey, &info);
	ret = ibv_wr_complete(x);
	check(!ret && completes(b, WRID(83), IBV_WC_BIND_MW, &wc),
	      "wr_bind_mw again, a new rkey");
	post_recv(b, 0, 100, WRID(180));
	wr_begin(a->qpx, WRID(84), IBV_SEND_SIGNALED);
	ibv_wr_send_inv(a->qpx, rkey);
	set_sge(a->qpx, a, 0, 20);
	ret = ibv_wr_complete(a->qpx);
	check(!ret && completes(a, WRID(84), IBV_WC_SEND, &wc),
	      "wr_send_inv: sender's completion");
	check(completes(b, WRID(180), IBV_WC_RECV, &wc) &&
	      (wc.wc_flags & IBV_WC_WITH_INV) && wc.invalidated_rkey == rkey &&
	      !memcmp(b->buf, a->buf, 20),
	      "wr_send_inv: the receiver is told which rkey went");
	ibv_dealloc_mw(mw);
}

/*
 * A setter's error, then wr_abort() instead of wr_complete(): the batch
 * goes with its error, and the next batch starts clean and is sent.
 */
static void abort_after_error(struct end *a, struct end *b)
{
	struct ibv_qp_ex *x = a->qpx;
	struct ibv_sge sg[32];
	struct ibv_wc wc;
	int i, ret;

	for (i = 0; i < 32; i++)
		sg[i] = (struct ibv_sge){ (uintptr_t)a->buf, 1, a->mr->lkey };
	wr_begin(x, WRID(500), IBV_SEND_SIGNALED);
	ibv_wr_send(x);
	ibv_wr_set_sge_list(x, 32, sg);		/* too many: EINVAL */
	ibv_wr_abort(x);
	wr_begin(x, WRID(501), IBV_SEND_SIGNALED);
	ibv_wr_send(x);
	ibv_wr_set_inline_data(x, a->buf, 2000);	/* too long: ENOMEM */
	ibv_wr_abort(x);
	check(poll_cq_within(a->cq, &wc, 100) == 0,
	      "two batches with a setter's error, aborted: nothing completes");

	post_recv(b, 0, 100, WRID(502));
	fill(a->buf, 40, 0x41);
	wr_begin(x, WRID(503), IBV_SEND_SIGNALED);
	ibv_wr_send(x);
	set_sge(x, a, 0, 40);
	ret = ibv_wr_complete(x);
	check(!ret && completes(a, WRID(503), IBV_WC_SEND, &wc),
	      "the next batch completes (wr_complete %d: %s)", ret,
	      strerror(ret));
	check(completes(b, WRID(502), IBV_WC_RECV, &wc) && wc.byte_len == 40 &&
	      !memcmp(b->buf, a->buf, 40),
	      "and only its SEND arrives");
}

/*
 * Inline data from lists whose bytes cross the WQE's first 64-byte
 * block: the provider splits them into one inline segment per block,
 * wherever the block ends (inside a buffer or between two).  A SEND's
 * data starts 20 bytes in (44 in the block), an RDMA WRITE's 36 (28).
 */
static void inline_lists(struct end *a, struct end *b)
{
	static const struct {
		enum ibv_wr_opcode op;
		unsigned int n, len[3];
	} shapes[] = {
		{ IBV_WR_SEND, 3, { 20, 40, 4 } },	/* inside the second */
		{ IBV_WR_SEND, 3, { 44, 16, 4 } },	/* between the first two */
		{ IBV_WR_RDMA_WRITE, 3, { 28, 32, 4 } },	/* between the first two */
		{ IBV_WR_RDMA_WRITE, 3, { 30, 30, 4 } },	/* inside the first */
	};
	struct ibv_qp_ex *x = a->qpx;
	struct ibv_wc wc;

	for (unsigned int s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
		struct ibv_data_buf d[3];
		uint8_t src[64];
		unsigned int off = 0, i;
		bool send = shapes[s].op == IBV_WR_SEND, ok;
		uint8_t *dst = b->buf + (send ? 1024 : 3000);
		int ret;

		fill(src, sizeof(src), 0x50 + s);
		for (i = 0; i < shapes[s].n; off += shapes[s].len[i++])
			d[i] = (struct ibv_data_buf){ src + off,
						      shapes[s].len[i] };
		memset(dst, 0, 64);
		if (send)
			post_recv(b, 1024, 100, WRID(510 + s));
		wr_begin(x, WRID(520 + s), IBV_SEND_SIGNALED | IBV_SEND_INLINE);
		if (send)
			ibv_wr_send(x);
		else
			ibv_wr_rdma_write(x, b->mr->rkey, (uintptr_t)dst);
		ibv_wr_set_inline_data_list(x, shapes[s].n, d);
		ret = ibv_wr_complete(x);
		ok = !ret && completes(a, WRID(520 + s), send ? IBV_WC_SEND :
				       IBV_WC_RDMA_WRITE, &wc);
		if (send)
			ok = ok && completes(b, WRID(510 + s), IBV_WC_RECV,
					     &wc) && wc.byte_len == off;
		check(ok && !memcmp(dst, src, off),
		      "inline %s of %u bytes from buffers of %u, %u%s: the bytes arrive in order",
		      send ? "SEND" : "WRITE", off, shapes[s].len[0],
		      shapes[s].len[1], shapes[s].n == 3 ? " and 4" : "");
	}
}

/*
 * A READ and, in the same batch, a fenced SEND whose two gather entries
 * (wr_set_sge_list) cover the buffer the READ fills: the SEND carries
 * the READ's bytes.  The fence bit lives in the WQE's size word, which
 * the list setter rewrites; lost, the simulator's strict mode reports
 * the SEND gathering from where the READ lands.
 */
static void fenced_sge_list(struct end *a, struct end *b)
{
	struct ibv_qp_ex *x = a->qpx;
	struct ibv_sge sg[2] = {
		{ (uintptr_t)a->buf + 600, 14, a->mr->lkey },
		{ (uintptr_t)a->buf + 614, 14, a->mr->lkey },
	};
	struct ibv_wc wc;
	int ret;

	memset(a->buf + 600, 0, 28);
	memcpy(b->buf + 300, "fenced: sent after it landed", 28);
	post_recv(b, 2048, 64, WRID(530));
	wr_begin(x, WRID(531), IBV_SEND_SIGNALED);
	ibv_wr_rdma_read(x, b->mr->rkey, (uintptr_t)b->buf + 300);
	set_sge(x, a, 600, 28);
	wr_next(x, WRID(532), IBV_SEND_SIGNALED | IBV_SEND_FENCE);
	ibv_wr_send(x);
	ibv_wr_set_sge_list(x, 2, sg);
	ret = ibv_wr_complete(x);
	check(!ret && completes(a, WRID(531), IBV_WC_RDMA_READ, &wc) &&
	      completes(a, WRID(532), IBV_WC_SEND, &wc),
	      "a READ and a fenced SEND from an SGE list, one batch: both complete");
	check(completes(b, WRID(530), IBV_WC_RECV, &wc) && wc.byte_len == 28 &&
	      !memcmp(b->buf + 2048, "fenced: sent after it landed", 28),
	      "the fenced SEND carries the bytes the READ brought");
}

/*
 * A UD request left without its address: wr_complete() refuses it;
 * aborted instead, it leaves nothing behind, and the next request (inline
 * data from a list that crosses its WQE's second 64-byte block, the
 * first being the control and datagram segments) goes.
 */
static void ud_lacking_address(struct end *s, struct end *r,
			       struct ibv_ah *ah)
{
	uint8_t src[64];
	struct ibv_data_buf d[3] = {
		{ src, 10 }, { src + 10, 30 }, { src + 40, 24 },
	};
	struct ibv_wc wc;
	int ret;

	wr_begin(s->qpx, WRID(72), IBV_SEND_SIGNALED);
	ibv_wr_send(s->qpx);
	set_sge(s->qpx, s, 0, 16);
	ret = ibv_wr_complete(s->qpx);
	check(ret == EINVAL && poll_cq_within(s->cq, &wc, 100) == 0,
	      "UD without wr_set_ud_addr: wr_complete %d (%s), nothing sent",
	      ret, strerror(ret));
	wr_begin(s->qpx, WRID(73), IBV_SEND_SIGNALED);
	ibv_wr_send(s->qpx);
	set_sge(s->qpx, s, 0, 16);
	ibv_wr_abort(s->qpx);

	fill(src, sizeof(src), 0x61);
	post_recv(r, 0, 40 + 64, WRID(302));
	wr_begin(s->qpx, WRID(74), IBV_SEND_SIGNALED | IBV_SEND_INLINE);
	ibv_wr_send(s->qpx);
	ibv_wr_set_ud_addr(s->qpx, ah, r->qp->qp_num, TEST_QKEY);
	ibv_wr_set_inline_data_list(s->qpx, 3, d);
	ret = ibv_wr_complete(s->qpx);
	check(!ret && completes(s, WRID(74), IBV_WC_SEND, &wc),
	      "after the aborted UD request the next completes (%d: %s)", ret,
	      strerror(ret));
	check(completes(r, WRID(302), IBV_WC_RECV, &wc) &&
	      wc.byte_len == 40 + 64 && !memcmp(r->buf + 40, src, 64),
	      "UD inline from 3 buffers of 10, 30, 24 across a block: the 64 bytes arrive");
	check(poll_cq_within(r->cq, &wc, 100) == 0, "and nothing more");
}

static void ud(void)
{
	struct end s, r;
	struct ibv_ah_attr ah_attr = { .dlid = lid, .port_num = 1 };
	struct ibv_ah *ah;
	struct ibv_wc wc;
	int ret;

	make_end(&s, IBV_QPT_UD, IBV_QP_EX_WITH_SEND |
		 IBV_QP_EX_WITH_SEND_WITH_IMM);
	make_end(&r, IBV_QPT_UD, IBV_QP_EX_WITH_SEND);
	bring_up(&s, 0);
	bring_up(&r, 0);
	ah = ibv_create_ah(pd, &ah_attr);
	if (!ah)
		bail("ibv_create_ah");

	post_recv(&r, 0, 40 + 200, WRID(300));
	fill(s.buf, 200, 11);
	wr_begin(s.qpx, WRID(70), IBV_SEND_SIGNALED);
	ibv_wr_send_imm(s.qpx, htonl(TEST_IMM));
	ibv_wr_set_ud_addr(s.qpx, ah, r.qp->qp_num, TEST_QKEY);
	set_sge(s.qpx, &s, 0, 200);
	ret = ibv_wr_complete(s.qpx);
	check(!ret && completes(&s, WRID(70), IBV_WC_SEND, &wc),
	      "UD wr_send_imm + wr_set_ud_addr: sender's completion");
	check(completes(&r, WRID(300), IBV_WC_RECV, &wc) &&
	      wc.byte_len == 240 && wc.src_qp == s.qp->qp_num &&
	      ntohl(wc.imm_data) == TEST_IMM &&
	      !memcmp(r.buf + 40, s.buf, 200),
	      "UD: 200 bytes behind the GRH room, from the right QP, with imm");

	post_recv(&r, 0, 40 + 64, WRID(301));
	wr_begin(s.qpx, WRID(71), IBV_SEND_SIGNALED | IBV_SEND_INLINE);
	ibv_wr_send(s.qpx);
	ibv_wr_set_ud_addr(s.qpx, ah, r.qp->qp_num, TEST_QKEY);
	ibv_wr_set_inline_data(s.qpx, s.buf + 5, 64);
	ret = ibv_wr_complete(s.qpx);
	check(!ret && completes(&s, WRID(71), IBV_WC_SEND, &wc) &&
	      completes(&r, WRID(301), IBV_WC_RECV, &wc) &&
	      wc.byte_len == 104 && !memcmp(r.buf + 40, s.buf + 5, 64),
	      "UD inline 64 bytes arrive");
	ud_lacking_address(&s, &r, ah);

	ibv_destroy_ah(ah);
	free_end(&s);
	free_end(&r);
}

/* UC: SEND and RDMA WRITE with immediate, one batch. */
static void uc(void)
{
	uint64_t ops = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM;
	struct end a, b;
	struct ibv_wc wc;
	int ret;

	make_end(&a, IBV_QPT_UC, ops);
	make_end(&b, IBV_QPT_UC, ops);
	bring_up(&a, b.qp->qp_num);
	bring_up(&b, a.qp->qp_num);
	post_recv(&b, 0, 100, WRID(400));
	post_recv(&b, 0, 0, WRID(401));
	fill(a.buf, 200, 13);
	wr_begin(a.qpx, WRID(90), 0);
	ibv_wr_send(a.qpx);
	set_sge(a.qpx, &a, 0, 100);
	wr_next(a.qpx, WRID(91), IBV_SEND_SIGNALED);
	ibv_wr_rdma_write_imm(a.qpx, b.mr->rkey, (uintptr_t)b.buf + 2000,
			      htonl(TEST_IMM + 2));
	set_sge(a.qpx, &a, 100, 100);
	ret = ibv_wr_complete(a.qpx);
	check(!ret && completes(&a, WRID(91), IBV_WC_RDMA_WRITE, &wc),
	      "UC batch: SEND + WRITE_IMM, the signalled one completes");
	check(completes(&b, WRID(400), IBV_WC_RECV, &wc) &&
	      !memcmp(b.buf, a.buf, 100) &&
	      completes(&b, WRID(401), IBV_WC_RECV_RDMA_WITH_IMM, &wc) &&
	      ntohl(wc.imm_data) == TEST_IMM + 2 &&
	      !memcmp(b.buf + 2000, a.buf + 100, 100),
	      "UC: both land, immediate included");
	free_end(&a);
	free_end(&b);
}

/* ------------------------------------------------------------------ */
/* XRC                                                                 */
/* ------------------------------------------------------------------ */

/* An XRC domain's receiving side: its SRQ (with its CQ) and target QP. */
struct xrc_target {
	struct ibv_xrcd *xrcd;
	struct ibv_cq *cq;
	struct ibv_srq *srq;
	struct ibv_qp *qp;
	uint32_t srqn;
};

/*
 * An XRC QP to RTR on port 1, facing @remote_qpn: the target (@target)
 * takes remote writes and stops there; the sender goes on to RTS.
 */
static int xrc_qp_up(struct ibv_qp *qp, uint32_t remote_qpn, bool target)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .port_num = 1,
		.qp_access_flags = target ? IBV_ACCESS_REMOTE_WRITE : 0,
	};
	int rtr_mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
		       IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		return -1;
	a = (struct ibv_qp_attr){
		.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024,
		.dest_qp_num = remote_qpn, .rq_psn = TEST_PSN,
		.max_dest_rd_atomic = 1, .min_rnr_timer = 1,
		.ah_attr = { .dlid = lid, .port_num = 1 },
	};
	if (target)
		rtr_mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	if (ibv_modify_qp(qp, &a, rtr_mask))
		return -1;
	if (target)
		return 0;
	a = (struct ibv_qp_attr){
		.qp_state = IBV_QPS_RTS, .sq_psn = TEST_PSN, .timeout = 10,
		.retry_cnt = 2, .rnr_retry = 7, .max_rd_atomic = 1,
	};
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN |
			     IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			     IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
}

static void make_xrc_target(struct xrc_target *t)
{
	struct ibv_xrcd_init_attr xattr = {
		.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
		.fd = -1, .oflags = O_CREAT,
	};
	struct ibv_srq_init_attr_ex sattr = {
		.attr = { .max_wr = 8, .max_sge = 1 },
		.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_XRCD |
			     IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_PD,
		.srq_type = IBV_SRQT_XRC, .pd = pd,
	};
	struct ibv_qp_init_attr_ex qattr = {
		.qp_type = IBV_QPT_XRC_RECV,
		.comp_mask = IBV_QP_INIT_ATTR_XRCD,
	};

	t->xrcd = ibv_open_xrcd(ctx, &xattr);
	t->cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	if (!t->xrcd || !t->cq)
		bail("an XRC domain and CQ");
	sattr.xrcd = qattr.xrcd = t->xrcd;
	sattr.cq = t->cq;
	t->srq = ibv_create_srq_ex(ctx, &sattr);
	t->qp = ibv_create_qp_ex(ctx, &qattr);
	if (!t->srq || !t->qp || ibv_get_srq_num(t->srq, &t->srqn))
		bail("an XRC SRQ and target QP");
}

static void free_xrc_target(struct xrc_target *t)
{
	if (ibv_destroy_qp(t->qp) || ibv_destroy_srq(t->srq) ||
	    ibv_destroy_cq(t->cq) || ibv_close_xrcd(t->xrcd))
		bail("XRC teardown");
}

/* A receive on the XRC SRQ: @len bytes at @off of @e's buffer. */
static void post_srq_recv(struct xrc_target *t, struct end *e, uint32_t off,
			  uint32_t len, uint64_t id)
{
	struct ibv_sge sge = { (uintptr_t)e->buf + off, len, e->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad;

	if (ibv_post_srq_recv(t->srq, &wr, &bad))
		bail("ibv_post_srq_recv");
}

/*
 * An XRC sending QP, through ibv_wr_*: a batch of a SEND to the SRQ
 * that wr_set_xrc_srqn() names and an RDMA WRITE with immediate; the
 * SRQ's CQ sees both, the data lands.
 */
static void xrc(void)
{
	struct xrc_target t;
	struct end s, mem, rcv;
	struct ibv_wc wc;
	int ret;

	make_xrc_target(&t);
	make_end(&s, IBV_QPT_XRC_SEND, IBV_QP_EX_WITH_SEND |
		 IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM);
	rcv.cq = t.cq;
	mem.buf = registered_buffer(pd, BUF_SIZE, ACCESS_ALL, &mem.mr);
	if (xrc_qp_up(t.qp, s.qp->qp_num, true) ||
	    xrc_qp_up(s.qp, t.qp->qp_num, false))
		bail("XRC QPs to RTR and RTS");

	post_srq_recv(&t, &mem, 0, 200, WRID(600));
	post_srq_recv(&t, &mem, 0, 0, WRID(601));
	fill(s.buf, 300, 0x71);
	wr_begin(s.qpx, WRID(602), 0);
	ibv_wr_send(s.qpx);
	ibv_wr_set_xrc_srqn(s.qpx, t.srqn);
	set_sge(s.qpx, &s, 0, 200);
	wr_next(s.qpx, WRID(603), IBV_SEND_SIGNALED);
	ibv_wr_rdma_write_imm(s.qpx, mem.mr->rkey, (uintptr_t)mem.buf + 2000,
			      htonl(TEST_IMM + 3));
	ibv_wr_set_xrc_srqn(s.qpx, t.srqn);
	set_sge(s.qpx, &s, 200, 100);
	ret = ibv_wr_complete(s.qpx);
	check(!ret && completes(&s, WRID(603), IBV_WC_RDMA_WRITE, &wc),
	      "XRC batch: SEND + WRITE_IMM to SRQ 0x%x, the signalled one completes (wr_complete: %s)",
	      t.srqn, strerror(ret));
	check(completes(&rcv, WRID(600), IBV_WC_RECV, &wc) &&
	      wc.byte_len == 200 && !memcmp(mem.buf, s.buf, 200),
	      "XRC: the SEND's 200 bytes land on the SRQ's receive");
	check(completes(&rcv, WRID(601), IBV_WC_RECV_RDMA_WITH_IMM, &wc) &&
	      ntohl(wc.imm_data) == TEST_IMM + 3 &&
	      !memcmp(mem.buf + 2000, s.buf + 200, 100),
	      "XRC: the WRITE's bytes and immediate");
	free_end(&s);
	ibv_dereg_mr(mem.mr);
	free(mem.buf);
	free_xrc_target(&t);
}

/* What the QP type or the device cannot do: refused at creation. */
static void refused(void)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
	struct ibv_qp *qp;

	if (!cq)
		bail("ibv_create_cq");
	errno = 0;
	qp = create_qp_ex(cq, IBV_QPT_UD, IBV_QP_EX_WITH_RDMA_WRITE);
	check(!qp && errno == EINVAL, "UD with RDMA WRITE refused: %s",
	      strerror(errno));
	errno = 0;
	qp = create_qp_ex(cq, IBV_QPT_UC, IBV_QP_EX_WITH_RDMA_READ);
	check(!qp && errno == EINVAL, "UC with RDMA READ refused: %s",
	      strerror(errno));
	errno = 0;
	qp = create_qp_ex(cq, IBV_QPT_RC, IBV_QP_EX_WITH_TSO);
	check(!qp && errno == EOPNOTSUPP, "TSO refused: %s", strerror(errno));
	qp = create_qp_ex(cq, IBV_QPT_UC, IBV_QP_EX_WITH_SEND |
			  IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM);
	check(qp && ibv_qp_to_qp_ex(qp), "UC with SEND and WRITE_IMM created");
	if (qp)
		ibv_destroy_qp(qp);
	/* The key operations and SEND with invalidate: RC's and UC's. */
	qp = create_qp_ex(cq, IBV_QPT_UC, IBV_QP_EX_WITH_SEND_WITH_INV |
			  IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_BIND_MW);
	check(qp != NULL, "UC with SEND_WITH_INV, LOCAL_INV, BIND_MW created: %s",
	      qp ? "yes" : strerror(errno));
	if (qp)
		ibv_destroy_qp(qp);
	ibv_destroy_cq(cq);
}

/*
 * rc_opcodes, batch_and_abort and windows take turns on one connected RC
 * pair, which main() makes before any case and frees after the last:
 * each posts its own receives and checks its own completions, so a case
 * run alone, on a fresh pair, checks what it checks in the full run.
 */
static struct end rc_a, rc_b;

static void rc_opcodes_case(void)
{
	rc_opcodes(&rc_a, &rc_b);
}

static void batch_and_abort_case(void)
{
	batch_and_abort(&rc_a, &rc_b);
}

static void abort_after_error_case(void)
{
	abort_after_error(&rc_a, &rc_b);
}

static void inline_lists_case(void)
{
	inline_lists(&rc_a, &rc_b);
}

static void fenced_sge_list_case(void)
{
	fenced_sge_list(&rc_a, &rc_b);
}

static void windows_case(void)
{
	windows(&rc_a, &rc_b);
}

/* The cases, in the order a full run takes them. */
static const struct test_case cases[] = {
	{ "rc_opcodes", rc_opcodes_case,
	  "every opcode an RC QP takes, the data checked where it lands" },
	{ "batch_and_abort", batch_and_abort_case,
	  "three SENDs rung once; wr_abort; an error inside a batch" },
	{ "abort_after_error", abort_after_error_case,
	  "wr_abort after a setter's error: the next batch goes clean" },
	{ "inline_lists", inline_lists_case,
	  "inline data lists crossing the WQE's first 64-byte block" },
	{ "fenced_sge_list", fenced_sge_list_case,
	  "a READ and a fenced SEND whose data is from wr_set_sge_list" },
	{ "windows", windows_case,
	  "a type 2 window bound, written through, invalidated (RC)" },
	{ "uc", uc, "UC: SEND and RDMA WRITE with immediate, one batch" },
	{ "ud", ud,
	  "UD datagrams through ibv_wr_*; a request lacking its address" },
	{ "xrc", xrc, "XRC: SEND and WRITE with immediate to an SRQ by number" },
	{ "refused", refused,
	  "opcodes the QP type or the device cannot do: refused at creation" },
};

/* Usage: wr-api [--list | NAME...] */
int main(int argc, char **argv)
{
	struct ibv_port_attr port;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	int ret = cases_select(cases, CASES_N(cases), argc, argv, 1);

	if (ret >= 0)
		return ret;

	ctx = open_first_device("wr-api");
	pd = ibv_alloc_pd(ctx);
	if (!pd || ibv_query_port(ctx, 1, &port))
		bail("setup");
	lid = port.lid;

	/* A provider without the interface: say so and stop, before any case. */
	cq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
	if (!cq)
		bail("ibv_create_cq");
	qp = create_qp_ex(cq, IBV_QPT_RC, RC_OPS);
	if (!qp || !ibv_qp_to_qp_ex(qp)) {
		printf("1..0 # SKIP this provider has no ibv_wr_* API (%s)\n",
		       qp ? "no qp_ex" : strerror(errno));
		return 0;
	}
	ibv_destroy_qp(qp);
	ibv_destroy_cq(cq);

	make_end(&rc_a, IBV_QPT_RC, RC_OPS);
	make_end(&rc_b, IBV_QPT_RC, RC_OPS);
	bring_up(&rc_a, rc_b.qp->qp_num);
	bring_up(&rc_b, rc_a.qp->qp_num);
	cases_run(cases, CASES_N(cases));
	free_end(&rc_a);
	free_end(&rc_b);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return tap_finish();
}
