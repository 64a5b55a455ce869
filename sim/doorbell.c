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
#include "sim.h"
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
	for (int off = 0; off < SIM_PAGE_SIZE; off += BF_CHUNK) {
		uint64_t head = take64(bf + off);

		/*
		 * The first eight bytes of the control segment: owner_opcode,
		 * then the QPN in the three bytes before fence_size.
		 */
		if (!head)
			continue;
		TRACE(trace_blueflame(ctx, SIM_PAGE_SIZE + off, head, bf + off,
				      BF_CHUNK));
		/*
		 * Hardware takes a BlueFlame write whole; here a driver may
		 * still be copying.  Cleared, the rest of the buffer shows
		 * a copy taken early as zeros, not as an older WQE's bytes.
		 */
		for (int i = 8; i < BF_CHUNK; i += 8)
			*(volatile uint64_t *)(bf + off + i) = 0;
		ring(ctx, rung, be32toh((uint32_t)(head >> 32)) >> 8,
		     "a BlueFlame write");
	}
}

/*
 * Each doorbell announces at least one WQE.  A QP that rang more often
 * than it handed WQEs over has owner bits out of step with its ring (the
 * device cannot see its WQEs), or rang for nothing.
 */
static void check_doorbells(struct sim_qp *qp)
{
	uint32_t handed = qp->sq.head;

	if (qp->doorbells > handed)
		handed += sq_ready(qp);
	if (qp->doorbells <= handed)
		return;
	breach(qp->ctx, "QP 0x%x: %u doorbells, %u WQEs handed over: owner bits out of step with the ring?",
	       qp->qpn, qp->doorbells, handed);
	qp->doorbells = handed;
}

/* Act on what @ctx's pages say: arm CQs, run send queues. */
void ctx_doorbells(struct sim_ctx *ctx)
{
	struct rung rung;
	struct sim_qp *qp;

	/* A disassociated file's pages reach no device. */
	if (!ctx->pages || ctx->fatal)
		return;
	take_doorbells(ctx, &rung);
	if (!rung.n)
		return;
	sim.work_done = true;
	list_for_each(&ctx->qps, qp, struct sim_qp, ctx_link)
		req_run(qp);
	for (int i = 0; i < rung.n; i++)
		check_doorbells(rung.qp[i]);
}

void doorbells_scan(void)
{
	struct sim_ctx *ctx;

	list_for_each(&sim.ctxs, ctx, struct sim_ctx, link)
		ctx_doorbells(ctx);
}
