/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * domains: thread domains and parent domains, and CQs created
 * single-threaded.  An RC pair and its CQs on a parent domain with a
 * thread domain and allocators that keep a ledger of every call: the
 * queues' memory is seen to come from the ledger (mlx4dv_init_obj) and
 * to go back to it, SENDs and RDMA WRITEs (ibv_post_send, ibv_wr_*)
 * arrive whole, completions are read by ibv_poll_cq and the extended
 * interface.  Refusals: bad masks (EINVAL), domains freed while used
 * (EBUSY), an allocator that fails or misaligns.  An allocator that
 * answers IBV_ALLOCATOR_USE_DEFAULT leaves the memory to the provider.
 *
 * Usage: domains project|system.  rdma-core's mlx4 has no thread or
 * parent domains: with "system" the test checks that it refuses both
 * with EOPNOTSUPP, and runs the single-threaded CQ, which it takes.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#include "mlx4dv.h"
#include "../cases.h"
#include "../device.h"
#include "../qp-connect.h"
#include "../tap.h"
#include "../wait.h"

#define BUF_SIZE	8192
#define TEST_PSN	0x1a2b3c
#define WRID(n)		(0x0102030405060000ULL + (n))

/* Does @call fail with @err?  errno is cleared first. */
#define REFUSED(call, err)	(errno = 0, !(call) && errno == (err))

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static uint16_t lid;
static long page_size;

/* ---------------------------------------------------------------------
 * The application's allocator: a ledger of what it gave and got back
 */

enum ledger_mode {
	GIVE,		/* page-aligned memory of its own */
	USE_DEFAULT,	/* IBV_ALLOCATOR_USE_DEFAULT */
	REFUSE,		/* NULL */
	MISALIGN,	/* memory 64 bytes past an alignment */
};

struct grant {
	char *ptr;
	char *base;	/* what posix_memalign gave */
	size_t size;
	uint64_t type;
	bool live;
};

struct ledger {
	enum ledger_mode mode;
	struct grant grants[32];
	int allocs, frees;
	int wrong_pd, wrong_free;	/* calls that named something else */
	struct ibv_pd *domain;		/* what the calls must name */
};

static void *ledger_alloc(struct ibv_pd *ibpd, void *pd_context, size_t size,
			  size_t alignment, uint64_t type)
{
	struct ledger *l = pd_context;
	struct grant *g;
	void *base;

	l->allocs++;
	if (ibpd != l->domain)
		l->wrong_pd++;
	if (l->mode == USE_DEFAULT)
		return IBV_ALLOCATOR_USE_DEFAULT;
	if (l->mode == REFUSE || l->allocs > 32)
		return NULL;
	if (posix_memalign(&base, alignment, size + alignment))
		return NULL;
	g = &l->grants[l->allocs - 1];
	g->base = base;
	g->ptr = (char *)base + (l->mode == MISALIGN ? 64 : 0);
	g->size = size;
	g->type = type;
	g->live = true;
	/* Not zeroed: the provider must not count on that. */
	memset(g->ptr, 0xa5, size);
	return g->ptr;
}

static void ledger_free(struct ibv_pd *ibpd, void *pd_context, void *ptr,
			uint64_t type)
{
	struct ledger *l = pd_context;
	int i;

	l->frees++;
	if (ibpd != l->domain)
		l->wrong_pd++;
	for (i = 0; i < l->allocs && i < 32; i++) {
		struct grant *g = &l->grants[i];

		if (g->live && g->ptr == ptr && g->type == type) {
			g->live = false;
			free(g->base);
			return;
		}
	}
	l->wrong_free++;
}

/* The live grant of @type holding [p, p + len), or NULL. */
static struct grant *grant_holding(struct ledger *l, const void *p,
				   size_t len, uint64_t type)
{
	const char *c = p;
	int i;

	for (i = 0; i < l->allocs && i < 32; i++) {
		struct grant *g = &l->grants[i];

		if (g->live && g->type == type && c >= g->ptr &&
		    c + len <= g->ptr + g->size)
			return g;
	}
	return NULL;
}

static int live_grants(struct ledger *l)
{
	int i, n = 0;

	for (i = 0; i < l->allocs && i < 32; i++)
		n += l->grants[i].live;
	return n;
}

/* Every grant of the right size and alignment for its type. */
static bool grants_sane(struct ledger *l)
{
	int i;

	for (i = 0; i < l->allocs && i < 32; i++) {
		struct grant *g = &l->grants[i];
		size_t align = g->type == MLX4DV_RES_TYPE_DBR ? 8 : page_size;

		if (!g->size || g->size % align ||
		    (uintptr_t)g->ptr % align)
			return false;
	}
	return true;
}

static struct ibv_pd *parent_domain(struct ibv_td *td, struct ledger *l,
				    enum ledger_mode mode)
{
	struct ibv_parent_domain_init_attr attr = {
		.pd = pd, .td = td,
		.comp_mask = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS |
			     IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT,
		.alloc = ledger_alloc, .free = ledger_free, .pd_context = l,
	};

	memset(l, 0, sizeof(*l));
	l->mode = mode;
	l->domain = ibv_alloc_parent_domain(ctx, &attr);
	return l->domain;
}

/* ---------------------------------------------------------------------
 * An RC pair
 */

struct end {
	struct ibv_cq_ex *cqx;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf;
};

static struct ibv_cq_ex *create_cq_ex(struct ibv_pd *domain, uint32_t flags)
{
	struct ibv_cq_init_attr_ex attr = {
		.cqe = 64,
		.wc_flags = IBV_WC_EX_WITH_BYTE_LEN,
		.comp_mask = flags ? IBV_CQ_INIT_ATTR_MASK_FLAGS : 0,
		.flags = flags,
	};

	if (domain) {
		attr.comp_mask |= IBV_CQ_INIT_ATTR_MASK_PD;
		attr.parent_domain = domain;
	}
	return ibv_create_cq_ex(ctx, &attr);
}

static struct ibv_qp *create_rc_qp(struct ibv_pd *on, struct ibv_cq *cq,
				   uint64_t send_ops)
{
	struct ibv_qp_init_attr_ex attr = {
		.qp_type = IBV_QPT_RC, .send_cq = cq, .recv_cq = cq,
		.cap = { .max_send_wr = 32, .max_recv_wr = 32,
			 .max_send_sge = 1, .max_recv_sge = 1,
			 .max_inline_data = 64 },
		.comp_mask = IBV_QP_INIT_ATTR_PD |
			     (send_ops ? IBV_QP_INIT_ATTR_SEND_OPS_FLAGS : 0),
		.pd = on, .send_ops_flags = send_ops,
	};

	return ibv_create_qp_ex(ctx, &attr);
}

/* @on: the QP's PD or parent domain; @cqx: its CQ, already made. */
static bool make_end(struct end *e, struct ibv_pd *on, struct ibv_cq_ex *cqx,
		     uint64_t send_ops)
{
	memset(e, 0, sizeof(*e));
	e->cqx = cqx;
	e->cq = cqx ? ibv_cq_ex_to_cq(cqx) : NULL;
	e->qp = e->cq ? create_rc_qp(on, e->cq, send_ops) : NULL;
	e->buf = aligned_alloc(4096, BUF_SIZE);
	e->mr = e->buf ? ibv_reg_mr(on, e->buf, BUF_SIZE,
				    IBV_ACCESS_LOCAL_WRITE |
				    IBV_ACCESS_REMOTE_WRITE) : NULL;
	return e->qp && e->mr;
}

static void free_end(struct end *e)
{
	if ((e->qp && ibv_destroy_qp(e->qp)) ||
	    (e->mr && ibv_dereg_mr(e->mr)) ||
	    (e->cq && ibv_destroy_cq(e->cq)))
		bail("teardown");
	free(e->buf);
	memset(e, 0, sizeof(*e));
}

/* RESET to RTS, connected to @remote_qpn through port 1. */
static void connect_to(struct end *e, uint32_t remote_qpn)
{
	const struct qp_path path = {
		.remote_qpn = remote_qpn, .dlid = lid,
		.rq_psn = TEST_PSN, .sq_psn = TEST_PSN,
		.access = IBV_ACCESS_REMOTE_WRITE, .rd_atomic = 1,
		.min_rnr_timer = 1, .timeout = 10, .retry_cnt = 2,
		.rnr_retry = 7,
	};
	const char *step;

	if (qp_connect(e->qp, &path, &step))
		bail(step);
}

static void connect_pair(struct end *a, struct end *b)
{
	connect_to(a, b->qp->qp_num);
	connect_to(b, a->qp->qp_num);
}

/* The next completion of @e's CQ by ibv_poll_cq, within 5 s. */
static bool next_wc(struct end *e, struct ibv_wc *wc)
{
	return poll_cq_within(e->cq, wc, 5000) == 1;
}

static bool completed(struct end *e, uint64_t id, enum ibv_wc_opcode op,
		      uint32_t *byte_len)
{
	struct ibv_wc wc;

	if (!next_wc(e, &wc) || wc.status != IBV_WC_SUCCESS ||
	    wc.wr_id != id || wc.opcode != op)
		return false;
	if (byte_len)
		*byte_len = wc.byte_len;
	return true;
}

/* The same by the extended interface: start_poll, then end_poll. */
static bool completed_ex(struct end *e, uint64_t id, enum ibv_wc_opcode op,
			 uint32_t *byte_len)
{
	struct ibv_poll_cq_attr attr = {};
	uint64_t end = now_ms() + 5000;
	bool ok;
	int ret;

	while ((ret = ibv_start_poll(e->cqx, &attr)) == ENOENT &&
	       now_ms() < end)
		;
	if (ret)
		return false;
	ok = e->cqx->status == IBV_WC_SUCCESS && e->cqx->wr_id == id &&
	     ibv_wc_read_opcode(e->cqx) == op;
	if (byte_len)
		*byte_len = ibv_wc_read_byte_len(e->cqx);
	ibv_end_poll(e->cqx);
	return ok;
}

static void fill(uint8_t *p, size_t len, unsigned int seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (uint8_t)(i * 13 + seed);
}

static int post_recv(struct end *e, uint32_t off, uint32_t len, uint64_t id)
{
	struct ibv_sge sge = { (uintptr_t)e->buf + off, len, e->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad;

	return ibv_post_recv(e->qp, &wr, &bad);
}

/* SEND (@to NULL) or RDMA WRITE of @len bytes at @off to @to's @off. */
static int post_send(struct end *e, struct end *to, uint32_t off,
		     uint32_t len, uint64_t id, unsigned int flags)
{
	struct ibv_sge sge = { (uintptr_t)e->buf + off, len, e->mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = id, .sg_list = &sge, .num_sge = 1,
		.opcode = to ? IBV_WR_RDMA_WRITE : IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED | flags,
	};
	struct ibv_send_wr *bad;

	if (to) {
		wr.wr.rdma.remote_addr = (uintptr_t)to->buf + off;
		wr.wr.rdma.rkey = to->mr->rkey;
	}
	return ibv_post_send(e->qp, &wr, &bad);
}

/* A SEND from @a to @b: the bytes, both completions. */
static bool send_arrives(struct end *a, struct end *b, uint32_t len,
			 unsigned int flags, unsigned int seed, bool extended)
{
	uint32_t got = 0;

	fill(a->buf, len, seed);
	memset(b->buf + 4096, 0, len);
	if (post_recv(b, 4096, 4096, WRID(seed)) ||
	    post_send(a, NULL, 0, len, WRID(seed + 1000), flags))
		return false;
	return (extended ?
		completed_ex(a, WRID(seed + 1000), IBV_WC_SEND, NULL) &&
		completed_ex(b, WRID(seed), IBV_WC_RECV, &got) :
		completed(a, WRID(seed + 1000), IBV_WC_SEND, NULL) &&
		completed(b, WRID(seed), IBV_WC_RECV, &got)) &&
	       got == len && !memcmp(b->buf + 4096, a->buf, len);
}

/* An RDMA WRITE from @a to the same place in @b. */
static bool write_lands(struct end *a, struct end *b, uint32_t off,
			uint32_t len, unsigned int seed)
{
	fill(a->buf + off, len, seed);
	memset(b->buf + off, 0, len);
	return !post_send(a, b, off, len, WRID(seed), 0) &&
	       completed(a, WRID(seed), IBV_WC_RDMA_WRITE, NULL) &&
	       !memcmp(b->buf + off, a->buf + off, len);
}

/* A SEND by ibv_wr_* from @a to @b. */
static bool wr_send_arrives(struct end *a, struct end *b, uint32_t len,
			    unsigned int seed)
{
	struct ibv_qp_ex *x = ibv_qp_to_qp_ex(a->qp);
	uint32_t got = 0;

	fill(a->buf, len, seed);
	memset(b->buf + 4096, 0, len);
	if (!x || post_recv(b, 4096, 4096, WRID(seed)))
		return false;
	ibv_wr_start(x);
	x->wr_id = WRID(seed + 1000);
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(x);
	ibv_wr_set_sge(x, a->mr->lkey, (uintptr_t)a->buf, len);
	return !ibv_wr_complete(x) &&
	       completed(a, WRID(seed + 1000), IBV_WC_SEND, NULL) &&
	       completed(b, WRID(seed), IBV_WC_RECV, &got) && got == len &&
	       !memcmp(b->buf + 4096, a->buf, len);
}

/*
 * A type 1 window of @b's parent domain, bound by @b's QP to a region of
 * it that allows binding; @a writes through it.
 */
static bool window_lands(struct end *a, struct end *b)
{
	struct ibv_mw *mw = ibv_alloc_mw(b->mr->pd, IBV_MW_TYPE_1);
	struct ibv_mr *mr = ibv_reg_mr(b->mr->pd, b->buf, BUF_SIZE,
				       IBV_ACCESS_LOCAL_WRITE |
				       IBV_ACCESS_REMOTE_WRITE |
				       IBV_ACCESS_MW_BIND);
	struct ibv_mw_bind bind = {
		.wr_id = WRID(50), .send_flags = IBV_SEND_SIGNALED,
		.bind_info = { mr, (uintptr_t)b->buf + 1024, 256,
			       IBV_ACCESS_REMOTE_WRITE },
	};
	struct ibv_sge sge = { (uintptr_t)a->buf, 64, a->mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = WRID(51), .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { (uintptr_t)b->buf + 1024, 0 },
	};
	struct ibv_send_wr *bad;
	bool ok;

	fill(a->buf, 64, 9);
	memset(b->buf + 1024, 0, 64);
	ok = mw && mr && !ibv_bind_mw(b->qp, mw, &bind) &&
	     completed(b, WRID(50), IBV_WC_BIND_MW, NULL);
	wr.wr.rdma.rkey = mw ? mw->rkey : 0;
	ok = ok && !ibv_post_send(a->qp, &wr, &bad) &&
	     completed(a, WRID(51), IBV_WC_RDMA_WRITE, NULL) &&
	     !memcmp(b->buf + 1024, a->buf, 64);
	if ((mw && ibv_dealloc_mw(mw)) || (mr && ibv_dereg_mr(mr)))
		bail("window teardown");
	return ok;
}

/* SENDs of several sizes (inline too) and RDMA WRITEs, both ways. */
static bool traffic(struct end *a, struct end *b)
{
	return send_arrives(a, b, 1, 0, 1, false) &&
	       send_arrives(a, b, 40, IBV_SEND_INLINE, 2, false) &&
	       send_arrives(b, a, 3000, 0, 3, false) &&
	       send_arrives(a, b, 600, 0, 4, true) &&
	       write_lands(a, b, 100, 2000, 5) &&
	       write_lands(b, a, 2500, 1500, 6);
}

/* ---------------------------------------------------------------------
 * The cases
 */

static void refusals_by_debian(void)
{
	struct ibv_td_init_attr td_attr = {};
	struct ibv_parent_domain_init_attr pd_attr = { .pd = pd };
	struct ibv_td *td;
	struct ibv_pd *domain;

	errno = 0;
	td = ibv_alloc_td(ctx, &td_attr);
	check(!td && errno == EOPNOTSUPP,
	      "system provider: ibv_alloc_td refused with EOPNOTSUPP (%s)",
	      td ? "allocated" : strerror(errno));
	errno = 0;
	domain = ibv_alloc_parent_domain(ctx, &pd_attr);
	check(!domain && errno == EOPNOTSUPP,
	      "system provider: ibv_alloc_parent_domain refused with EOPNOTSUPP (%s)",
	      domain ? "allocated" : strerror(errno));
}

static void bad_attributes(struct ibv_td *td)
{
	struct ibv_td_init_attr td_attr = { .comp_mask = 1 };
	struct ibv_parent_domain_init_attr attr = { .pd = pd, .td = td };
	struct ibv_pd *domain;

	check(REFUSED(ibv_alloc_td(ctx, &td_attr), EINVAL),
	      "ibv_alloc_td with an unknown comp_mask bit: EINVAL");
	attr.comp_mask = 1 << 2;
	check(REFUSED(ibv_alloc_parent_domain(ctx, &attr), EINVAL),
	      "parent domain with an unknown comp_mask bit: EINVAL");
	attr.comp_mask = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS;
	attr.alloc = ledger_alloc;
	check(REFUSED(ibv_alloc_parent_domain(ctx, &attr), EINVAL),
	      "parent domain with an alloc and no free: EINVAL");
	attr.comp_mask = 0;
	attr.pd = NULL;
	check(REFUSED(ibv_alloc_parent_domain(ctx, &attr), EINVAL),
	      "parent domain without a PD: EINVAL");

	attr.pd = pd;
	domain = ibv_alloc_parent_domain(ctx, &attr);
	attr.pd = domain;
	check(domain && REFUSED(ibv_alloc_parent_domain(ctx, &attr), EINVAL),
	      "parent domain on a parent domain: EINVAL");
	check(REFUSED(create_cq_ex(pd, 0), EINVAL),
	      "CQ whose parent domain is a plain PD: EINVAL");
	check(domain && !ibv_dealloc_pd(domain),
	      "parent domain without allocators freed");
}

/* The QP's buffer and doorbell record, and the CQ's ring, in the ledger. */
static void memory_from_ledger(struct ledger *l, struct end *e,
			       struct ibv_cq *spare_cq)
{
	struct mlx4dv_qp dq = {};
	struct mlx4dv_cq dc = {};
	struct mlx4dv_obj obj = {
		.qp = { e->qp, &dq }, .cq = { spare_cq, &dc },
	};
	int ret = mlx4dv_init_obj(&obj, MLX4DV_OBJ_QP | MLX4DV_OBJ_CQ);

	check(!ret && grant_holding(l, dq.buf.buf, dq.buf.length,
				    MLX4DV_RES_TYPE_QP),
	      "QP buffer %p (%zu bytes) lies in an allocation of the application",
	      dq.buf.buf, dq.buf.length);
	check(!ret && grant_holding(l, dq.rdb, 4, MLX4DV_RES_TYPE_DBR),
	      "QP receive doorbell record from the application's allocator");
	check(!ret && grant_holding(l, dc.buf.buf, dc.buf.length,
				    MLX4DV_RES_TYPE_CQ) &&
	      grant_holding(l, dc.set_ci_db, 8, MLX4DV_RES_TYPE_DBR),
	      "CQ ring and doorbell record from the application's allocator");
}

/* The busy answers, in the order the references run. */
static void frees_in_order(struct ibv_td *td, struct ibv_pd *domain)
{
	check(ibv_dealloc_td(td) == EBUSY,
	      "ibv_dealloc_td of a TD a parent domain uses: EBUSY");
	check(ibv_dealloc_pd(pd) == EBUSY,
	      "ibv_dealloc_pd of a PD a parent domain uses: EBUSY");
	check(ibv_dealloc_pd(domain) == EBUSY,
	      "ibv_dealloc_pd of a parent domain with queues on it: EBUSY");
}

static void thread_and_parent_domain(void)
{
	struct ibv_td_init_attr td_attr = {};
	struct ibv_cq_ex *spare;
	struct ibv_pd *domain;
	struct ledger l;
	struct end a, b;
	struct ibv_td *td;
	int ret;

	td = ibv_alloc_td(ctx, &td_attr);
	check(td != NULL, "ibv_alloc_td (%s)", td ? "ok" : strerror(errno));
	if (!td)
		return;
	bad_attributes(td);

	domain = parent_domain(td, &l, GIVE);
	check(domain && domain->context == ctx && domain->handle == pd->handle,
	      "parent domain with a TD and allocators: a PD of this context "
	      "with the PD's handle");
	if (!domain)
		return;

	spare = create_cq_ex(domain, 0);
	if (!make_end(&a, domain, create_cq_ex(domain, 0),
		      IBV_QP_EX_WITH_SEND) ||
	    !make_end(&b, domain, create_cq_ex(domain, 0), 0) || !spare)
		bail("queues on the parent domain");
	check(l.allocs == 10 && !l.wrong_pd && grants_sane(&l),
	      "alloc called for 2 QPs, 3 CQs, 5 doorbell records (%d calls), "
	      "with the parent domain and its pd_context, page-aligned whole "
	      "pages (records: 8 bytes)", l.allocs);
	memory_from_ledger(&l, &a, ibv_cq_ex_to_cq(spare));

	connect_pair(&a, &b);
	check(traffic(&a, &b),
	      "RC on the parent domain: SENDs (1, 40 inline, 3000, 600 "
	      "bytes) and RDMA WRITEs both ways, bytes checked, completions "
	      "by ibv_poll_cq and start/end_poll");
	check(wr_send_arrives(&a, &b, 700, 7),
	      "RC on the parent domain: a SEND by ibv_wr_* arrives whole");
	check(window_lands(&a, &b),
	      "a memory window on the parent domain, bound by its QP: an "
	      "RDMA WRITE through it lands");

	frees_in_order(td, domain);
	ibv_destroy_cq(ibv_cq_ex_to_cq(spare));
	free_end(&a);
	free_end(&b);
	check(l.frees == l.allocs && !live_grants(&l) && !l.wrong_free &&
	      !l.wrong_pd,
	      "every allocation went back through free, with its type (%d of %d)",
	      l.frees, l.allocs);
	ret = ibv_dealloc_pd(domain);
	check(!ret, "parent domain freed once its queues are gone");
	check(!ibv_dealloc_td(td), "TD freed once its parent domain is gone");
}

/* A parent domain whose allocator says "yours": the provider's memory. */
static void allocator_use_default(void)
{
	struct ledger l;
	struct ibv_pd *domain = parent_domain(NULL, &l, USE_DEFAULT);
	struct end a, b;

	if (!domain ||
	    !make_end(&a, domain, create_cq_ex(domain, 0), 0) ||
	    !make_end(&b, domain, create_cq_ex(domain, 0), 0))
		bail("queues on a USE_DEFAULT parent domain");
	connect_pair(&a, &b);
	check(l.allocs == 8 && traffic(&a, &b),
	      "allocator answering IBV_ALLOCATOR_USE_DEFAULT (%d calls): RC "
	      "traffic checked", l.allocs);
	free_end(&a);
	free_end(&b);
	check(!l.frees && !ibv_dealloc_pd(domain),
	      "nothing given back to it; parent domain freed");
}

/* Allocators that fail: the creation fails, and nothing is kept. */
static void allocator_failures(void)
{
	struct ibv_cq_ex *cq = create_cq_ex(NULL, 0);
	struct ledger l;
	struct ibv_pd *domain;

	domain = parent_domain(NULL, &l, REFUSE);
	check(domain && cq &&
	      REFUSED(create_rc_qp(domain, ibv_cq_ex_to_cq(cq), 0), ENOMEM) &&
	      l.allocs == 1,
	      "allocator returning NULL: QP refused with ENOMEM");
	check(REFUSED(create_cq_ex(domain, 0), ENOMEM),
	      "allocator returning NULL: CQ refused with ENOMEM");
	check(domain && !ibv_dealloc_pd(domain),
	      "that parent domain is not held by what failed");

	domain = parent_domain(NULL, &l, MISALIGN);
	check(domain && cq &&
	      REFUSED(create_rc_qp(domain, ibv_cq_ex_to_cq(cq), 0), EINVAL) &&
	      l.frees == l.allocs && !live_grants(&l),
	      "allocator returning misaligned memory: EINVAL, memory given back");
	check(domain && !ibv_dealloc_pd(domain) && cq &&
	      !ibv_destroy_cq(ibv_cq_ex_to_cq(cq)),
	      "that parent domain and the CQ freed");
}

/* An SRQ on a parent domain with allocators: its memory, a receive. */
static void srq_on_parent_domain(void)
{
	struct ibv_srq_init_attr attr = { .attr = { .max_wr = 16,
						    .max_sge = 1 } };
	struct ledger l;
	struct ibv_pd *domain = parent_domain(NULL, &l, GIVE);
	struct ibv_srq *srq = domain ? ibv_create_srq(domain, &attr) : NULL;
	struct mlx4dv_srq ds = {};
	struct mlx4dv_obj obj = { .srq = { srq, &ds } };

	check(srq && !mlx4dv_init_obj(&obj, MLX4DV_OBJ_SRQ) &&
	      grant_holding(&l, ds.buf.buf, ds.buf.length, MLX4DV_RES_TYPE_SRQ) &&
	      grant_holding(&l, ds.db, 4, MLX4DV_RES_TYPE_DBR),
	      "SRQ on the parent domain: buffer and record from its allocator");
	check(srq && !ibv_destroy_srq(srq) && l.frees == l.allocs &&
	      !ibv_dealloc_pd(domain), "SRQ destroyed, its memory given back");
}

/* A CQ created IBV_CREATE_CQ_ATTR_SINGLE_THREADED, with a plain PD. */
static void single_threaded_cq(void)
{
	struct end a, b;

	if (!make_end(&a, pd,
		      create_cq_ex(NULL, IBV_CREATE_CQ_ATTR_SINGLE_THREADED), 0) ||
	    !make_end(&b, pd,
		      create_cq_ex(NULL, IBV_CREATE_CQ_ATTR_SINGLE_THREADED), 0)) {
		check(0, "CQs created single-threaded (%s)", strerror(errno));
		return;
	}
	connect_pair(&a, &b);
	check(traffic(&a, &b),
	      "CQs created single-threaded: RC traffic and completions checked");
	free_end(&a);
	free_end(&b);
}

/*
 * The cases, in the order a full run takes them: ours with our provider,
 * Debian's with the distribution's, which has no domains (its refusals
 * are the test).  Each makes and frees its own objects on the shared PD.
 */
static const struct test_case ours[] = {
	{ "thread_and_parent_domain", thread_and_parent_domain,
	  "an RC pair, CQs and a window on a parent domain, data both ways" },
	{ "allocator_use_default", allocator_use_default,
	  "IBV_ALLOCATOR_USE_DEFAULT gives the provider's own memory" },
	{ "allocator_failures", allocator_failures,
	  "an allocator that fails fails the creation, cleanly" },
	{ "srq_on_parent_domain", srq_on_parent_domain,
	  "an SRQ on a parent domain, its memory from the allocator" },
	{ "single_threaded_cq", single_threaded_cq,
	  "CQs created single-threaded" },
};

static const struct test_case debians[] = {
	{ "refusals_by_debian", refusals_by_debian,
	  "the distribution's provider refuses the domains (EOPNOTSUPP)" },
	{ "single_threaded_cq", single_threaded_cq,
	  "CQs created single-threaded" },
};

/* Usage: domains [project|system] [--list | NAME...] */
int main(int argc, char **argv)
{
	bool system = argc > 1 && !strcmp(argv[1], "system");
	bool named = system || (argc > 1 && !strcmp(argv[1], "project"));
	const struct test_case *cases = system ? debians : ours;
	size_t n = system ? CASES_N(debians) : CASES_N(ours);
	struct ibv_port_attr port;
	int ret = cases_select(cases, n, argc, argv, named ? 2 : 1);

	if (ret >= 0)
		return ret;
	page_size = sysconf(_SC_PAGESIZE);
	ctx = open_first_device("domains");
	pd = ibv_alloc_pd(ctx);
	if (!pd || ibv_query_port(ctx, 1, &port))
		bail("setup");
	lid = port.lid;

	cases_run(cases, n);

	if (ibv_dealloc_pd(pd))
		bail("ibv_dealloc_pd");
	ibv_close_device(ctx);
	return tap_finish();
}
