/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Doorbells: the UAR and BlueFlame pages each context shares with the
 * device.
 *
 * On hardware these are registers, and every write is an event.  A shared
 * page keeps only the last value, so here a doorbell means "look at this
 * context's queues": the device takes each doorbell word with an atomic
 * exchange, so a write that lands after the exchange is seen next time,
 * and then asks every send queue of the context what is new (the owner
 * bits say).  A BlueFlame write carries a WQE, which the driver also
 * leaves in the ring; it is a doorbell too.
 */
#include <stdlib.h>
#include <string.h>

#include "adapter.h"
#include "queue.h"

#define BF_CHUNK	256	/* the smallest BlueFlame buffer half */

static uint32_t take32(volatile uint8_t *p)
{
	volatile uint32_t *w = (volatile uint32_t *)p;

	return *w ? __atomic_exchange_n(w, 0, __ATOMIC_ACQ_REL) : 0;
}

static uint64_t take64(volatile uint8_t *p)
{
	volatile uint64_t *w = (volatile uint64_t *)p;

	return *w ? __atomic_exchange_n(w, 0, __ATOMIC_ACQ_REL) : 0;
}

/* The QPs whose doorbells rang in one look at a context's pages. */
struct rung {
	int n;
	struct sim_qp *qp[1 + SIM_PAGE_SIZE / BF_CHUNK];
};

static void ring(struct sim_ctx *ctx, struct rung *rung, uint32_t qpn,
		 const char *what)
{
	struct sim_qp *qp = qp_by_num(ctx->hca, qpn);

	if (!qp || qp->ctx != ctx || !qp->sq.wqe_cnt) {
		breach(ctx, "%s names QP 0x%x, not a send queue of this context's",
		       what, qpn);
		return;
	}
	qp->doorbells++;
	rung->qp[rung->n++] = qp;
}

/*
 * The trace's check of BlueFlame copies.  The device runs a send queue
 * from its ring; a BlueFlame copy must hold the same WQE, and when the
 * trace is on, each is compared with the ring's.  Hardware takes such a
 * write whole, but here the device may look while the driver is still
 * copying (preempted halfway), so a copy unlike the ring's is watched
 * until it matches; only when its context closes, with every copy done,
 * is one still unlike the ring's a wrong copy.  One that the next copy
 * into its buffer overtakes cannot be judged.
 */
#define BF_BUFFERS	(SIM_PAGE_SIZE / BF_CHUNK)

struct bf_watch {
	bool live;
	uint64_t head;			/* the first 8 bytes, as taken */
	enum ibv_qp_type type;		/* its QP's, to name the segments */
	size_t size;			/* the WQE's bytes, at most BF_CHUNK */
	uint8_t ring[BF_CHUNK];		/* the ring's copy */
};

/* The copy's bytes in @out: the head as taken, the rest as it is now. */
static void bf_bytes(struct sim_ctx *ctx, int buffer,
		     const struct bf_watch *w, uint8_t *out)
{
	volatile uint8_t *bf = ctx_page(ctx, SIM_PAGE_BF) + buffer * BF_CHUNK;

	memcpy(out, &w->head, sizeof(w->head));
	for (size_t i = sizeof(w->head); i < w->size; i++)
		out[i] = bf[i];
}

/*
 * Whether the copy holds the ring's WQE.  The WQE index (bytes 1-2) and
 * the QPN (bytes 4-6) are the BlueFlame write's own: the ring may or may
 * not hold them.
 */
static bool bf_same(const struct bf_watch *w, const uint8_t *copy)
{
	static const int own[] = { 1, 2, 4, 5, 6 };
	uint8_t a[8], b[8];

	memcpy(a, copy, 8);
	memcpy(b, w->ring, 8);
	for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++)
		a[own[i]] = b[own[i]] = 0;
	return !memcmp(a, b, 8) && !memcmp(copy + 8, w->ring + 8, w->size - 8);
}

/* Trace the watched copy in @buffer with @verdict; the watch ends. */
static void bf_watch_done(struct sim_ctx *ctx, int buffer, const char *verdict)
{
	struct bf_watch *w = &ctx->bf_watch[buffer];
	uint8_t copy[BF_CHUNK];

	bf_bytes(ctx, buffer, w, copy);
	trace_blueflame(ctx, SIM_PAGE_SIZE + buffer * BF_CHUNK, verdict,
			w->type, copy, w->size);
	w->live = false;
}

/* Settle the watched copy in @buffer if it now matches the ring's. */
static void bf_watch_check(struct sim_ctx *ctx, int buffer)
{
	struct bf_watch *w = &ctx->bf_watch[buffer];
	uint8_t copy[BF_CHUNK];

	if (!w->live)
		return;
	bf_bytes(ctx, buffer, w, copy);
	if (bf_same(w, copy))
		bf_watch_done(ctx, buffer, "same");
}

/* A copy with @head was taken from the buffer at @off: watch it. */
static void bf_watch_start(struct sim_ctx *ctx, int off, uint64_t head)
{
	uint32_t ctrl = be32toh((uint32_t)head);
	struct sim_qp *qp = qp_by_num(ctx->hca,
				      be32toh((uint32_t)(head >> 32)) >> 8);
	int buffer = off / BF_CHUNK;
	struct bf_watch *w;

	if (!ctx->bf_watch) {
		ctx->bf_watch = calloc(BF_BUFFERS, sizeof(*ctx->bf_watch));
		if (!ctx->bf_watch)
			return;
	}
	w = &ctx->bf_watch[buffer];
	if (w->live)
		bf_watch_done(ctx, buffer, "overtaken");
	if (!qp || qp->ctx != ctx || !qp->sq.wqe_cnt)
		return;
	w->head = head;
	w->type = qp->type;
	w->size = MIN((size_t)(((const uint8_t *)&head)[7] & 0x3f) * 16,
		      MIN((size_t)BF_CHUNK, (size_t)1 << qp->sq.wqe_shift));
	w->size = MAX(w->size, sizeof(head));
	/* The ring's WQE of that index (bytes 1-2), handed over this pass. */
	if (sq_peek(qp, (ctrl >> 8) & 0xffff, w->ring, w->size))
		return;
	w->live = true;
	bf_watch_check(ctx, buffer);
}

/* Trace the copies still watched: the context's driver is done. */
void bf_watch_end(struct sim_ctx *ctx)
{
	if (!ctx->bf_watch)
		return;
	for (int i = 0; i < BF_BUFFERS; i++) {
		bf_watch_check(ctx, i);
		if (ctx->bf_watch[i].live)
			bf_watch_done(ctx, i, "unlike");
	}
	free(ctx->bf_watch);
	ctx->bf_watch = NULL;
}

/*
 * Whether a BlueFlame buffer holds a write: a load of each, no exchange
 * (most looks find none, and a pass looks at every context's page).
 */
static bool bf_written(volatile uint8_t *bf)
{
	uint64_t any = 0;

	for (int off = 0; off < SIM_PAGE_SIZE; off += BF_CHUNK)
		any |= *(volatile uint64_t *)(bf + off);
	return any;
}

/* Take the doorbells of @ctx's pages; which QPs rang goes to @rung. */
static void take_doorbells(struct sim_ctx *ctx, struct rung *rung)
{
	volatile uint8_t *uar = ctx_page(ctx, SIM_PAGE_UAR);
	volatile uint8_t *bf = ctx_page(ctx, SIM_PAGE_BF);
	uint32_t db;
	uint64_t cq;

	rung->n = 0;
	db = take32(uar + MLX4_SEND_DOORBELL);
	if (db) {
		TRACE(trace_send_doorbell(ctx, be32toh(db)));
		ring(ctx, rung, be32toh(db) >> 8, "the send doorbell");
	}
	cq = take64(uar + MLX4_CQ_DOORBELL);
	if (cq) {
		TRACE(trace_cq_doorbell(ctx, be32toh((uint32_t)cq),
					be32toh((uint32_t)(cq >> 32))));
		sim.work_done = true;
		cq_doorbell(ctx, be32toh((uint32_t)cq));
	}
	if (!bf_written(bf))
		return;
	for (int off = 0; off < SIM_PAGE_SIZE; off += BF_CHUNK) {
		uint64_t head = take64(bf + off);

		/*
		 * The first eight bytes of the control segment: owner_opcode,
		 * then the QPN in the three bytes before fence_size.
		 */
		if (!head)
			continue;
		TRACE(bf_watch_start(ctx, off, head));
		ring(ctx, rung, be32toh((uint32_t)(head >> 32)) >> 8,
		     "a BlueFlame write");
	}
}

/*
 * Each doorbell announces at least one WQE.  A QP that rang more often
 * than it handed WQEs over has owner bits out of step with its ring (the
 * device cannot see its WQEs), or rang for nothing.  Judged when the
 * device has run what was handed over: not while the QP is busy.  (The
 * head counts blocks: a WQE of several counts for as many.)
 */
static void check_doorbells(struct sim_qp *qp)
{
	uint32_t handed = qp->sq.head;

	if (qp->busy || qp->doorbells <= handed)
		return;
	handed += sq_ready(qp, NULL);
	if (qp->doorbells <= handed)
		return;
	breach(qp->ctx, "QP 0x%x: %u doorbells, %u WQEs handed over: owner bits out of step with the ring?",
	       qp->qpn, qp->doorbells, handed);
	qp->doorbells = handed;
}

/*
 * Send queues with work left, which every pass runs, each its share
 * (req_run: one fetch, at most SQ_BATCH WQEs and SQ_PASS_BYTES of
 * payload), in turn, the longest waiting first.
 */
void sq_busy(struct sim_qp *qp)
{
	if (qp->busy)
		return;
	qp->busy = true;
	list_add_tail(&sim.busy_sqs, &qp->busy_link);
}

void sq_idle(struct sim_qp *qp)
{
	if (!qp->busy)
		return;
	qp->busy = false;
	list_del(&qp->busy_link);
}

/* One turn of @qp: its share, then to the back of the list or off it. */
static void sq_turn(struct sim_qp *qp)
{
	list_del(&qp->busy_link);
	qp->busy = false;
	if (!req_run(qp) && !qp->waiting)
		check_doorbells(qp);
}

/*
 * Whether the driver has handed a WQE over at @qp's head (its owner
 * word): a doorbell word holds the last QP that rang, so when two of a
 * context's QPs rang between two looks, the other is found so.
 */
static bool sq_handed(struct sim_qp *qp)
{
	return qp->sq.wqe_cnt && sq_ready_one(qp);
}

/*
 * Take @ctx's doorbells and make busy the send queues with WQEs handed
 * over: those that rang, and any other whose head owner word says so.
 */
static void ctx_take(struct sim_ctx *ctx)
{
	struct rung rung;
	struct sim_qp *qp;

	/* Pages reach a device only under a context, and not once disassociated. */
	if (!ctx->has_ucontext || ctx->fatal)
		return;
	if (ctx->bf_watch)
		for (int i = 0; i < BF_BUFFERS; i++)
			bf_watch_check(ctx, i);
	take_doorbells(ctx, &rung);
	if (!rung.n)
		return;
	sim.work_done = true;
	for (int i = 0; i < rung.n; i++)
		sq_busy(rung.qp[i]);
	list_for_each(&ctx->qps, qp, struct sim_qp, ctx_link)
		if (!qp->busy && sq_handed(qp))
			sq_busy(qp);
	for (int i = 0; i < rung.n; i++)
		check_doorbells(rung.qp[i]);
}

/*
 * What @ctx's pages say, acted on at once: before a command of its
 * process, whose doorbells came first.  Its busy send queues run their
 * share.
 */
void ctx_doorbells(struct sim_ctx *ctx)
{
	struct sim_qp *qp, *tmp;
	struct list_node mine;

	ctx_take(ctx);
	list_init(&mine);
	list_for_each_safe(&sim.busy_sqs, qp, tmp, struct sim_qp, busy_link)
		if (qp->ctx == ctx) {
			list_del(&qp->busy_link);
			list_add_tail(&mine, &qp->busy_link);
		}
	while (!list_empty(&mine))
		sq_turn(list_entry(mine.next, struct sim_qp, busy_link));
}

/*
 * A pass: every context's doorbells, then each busy send queue its
 * share, once.  A queue that stays busy (more handed over than a share)
 * goes to the back and runs again next pass: no queue delays another's
 * by more than a share a pass.
 */
void doorbells_scan(void)
{
	struct sim_ctx *ctx;
	struct sim_qp *qp;
	size_t turns = 0;

	list_for_each(&sim.ctxs, ctx, struct sim_ctx, link)
		ctx_take(ctx);
	list_for_each(&sim.busy_sqs, qp, struct sim_qp, busy_link)
		turns++;
	if (turns)
		sim.work_done = true;
	/* Those busy now: one that runs again goes behind them. */
	while (turns-- && !list_empty(&sim.busy_sqs))
		sq_turn(list_entry(sim.busy_sqs.next, struct sim_qp,
				   busy_link));
}
