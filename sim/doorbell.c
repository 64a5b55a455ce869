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

static bool owns_qp(struct sim_ctx *ctx, uint32_t qpn)
{
	struct sim_qp *qp = qp_by_num(ctx->hca, qpn);

	if (qp)
		return qp->ctx == ctx && qp->sq.wqe_cnt;
	return ctx_forgot(ctx->gone_qpn, ctx->gone_qps, qpn);
}

static bool ctx_doorbells(struct sim_ctx *ctx)
{
	volatile uint8_t *uar = ctx_page(ctx, SIM_PAGE_UAR);
	volatile uint8_t *bf = ctx_page(ctx, SIM_PAGE_BF);
	bool send = false;
	uint32_t db;
	uint64_t cq;

	db = take32(uar + MLX4_SEND_DOORBELL);
	if (db) {
		send = true;
		if (!owns_qp(ctx, be32toh(db) >> 8))
			breach(ctx, "send doorbell 0x%08x names QP 0x%x, not one of this context's",
			       be32toh(db), be32toh(db) >> 8);
	}
	cq = take64(uar + MLX4_CQ_DOORBELL);
	if (cq)
		cq_doorbell(ctx, be32toh((uint32_t)cq), be32toh(cq >> 32));
	for (int off = 0; off < SIM_PAGE_SIZE; off += BF_CHUNK) {
		uint64_t head = take64(bf + off);
		uint32_t qpn;

		if (!head)
			continue;
		send = true;
		/*
		 * The first eight bytes of the control segment: owner_opcode,
		 * then the QPN in the three bytes before fence_size.
		 */
		qpn = be32toh((uint32_t)(head >> 32)) >> 8;
		if (!owns_qp(ctx, qpn))
			breach(ctx, "BlueFlame write at offset %d names QP 0x%x, not one of this context's",
			       off, qpn);
	}
	return send;
}

void doorbells_scan(void)
{
	struct sim_ctx *ctx;
	struct sim_qp *qp;

	list_for_each(&sim.ctxs, ctx, struct sim_ctx, link) {
		if (!ctx->pages || !ctx_doorbells(ctx))
			continue;
		sim.work_done = true;
		list_for_each(&ctx->qps, qp, struct sim_qp, ctx_link)
			req_run(qp);
	}
}
