/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The device's view of the work queues in the client's memory: the send
 * queue it reads by owner bits, the receive queues and SRQs it takes
 * from by their doorbell records.  What it reads here, it reads in the
 * order the driver writes (see dma.c's ordered transfers).
 */
#ifndef MLX4SIM_QUEUE_H
#define MLX4SIM_QUEUE_H

#include "adapter.h"

#define SQ_BATCH	64	/* send WQEs looked at in one transfer */
#define SQ_READY_MAX	16	/* owner words looked at alone (sq_ready) */
#define RQ_FETCH_BYTES	4096	/* receive WQEs fetched in one transfer, at most */
#define MAX_STRIDE	(1u << CX3_MAX_SQ_STRIDE_LOG)	/* of a send WQE */
#define SQ_FETCH_BYTES	8192	/* at most, in one look (one WQE at least) */
#define SQ_PASS_BYTES	65536	/* payload a send queue starts in a pass */

/* A receive WQE, taken from its queue. */
struct sim_recv {
	struct sim_cq *cq;
	uint32_t qpn;			/* for the CQE */
	uint32_t wqe_index;
	struct sim_pd *pd;
	int nseg;
	struct dma_seg seg[CX3_MAX_SGE];	/* translated, in the owner */
	pid_t pid;
	uint64_t total;
	bool bad_key;			/* a scatter entry the key does not open */
	/*
	 * Where each segment is mapped here, when every one is in pinned
	 * pages the daemon maps (its region holds them while it lives).
	 */
	bool shared;
	uint8_t *here[CX3_MAX_SGE];
};

/*
 * The blocks of the WQE whose control segment is at @ctrl: 1 for a size
 * the device refuses (parse_wqe says why), so that what follows is not
 * skipped.
 */
static inline unsigned int sq_wqe_blocks(const struct sim_qp *qp,
					 const uint8_t *ctrl)
{
	size_t size = (size_t)(ctrl[7] & 0x3f) * 16;
	size_t stride = 1u << qp->sq.wqe_shift;
	unsigned int blocks = (size + stride - 1) / stride;

	if (!blocks || size > CX3_MAX_SQ_DESC || blocks > qp->sq.wqe_cnt)
		return 1;
	return blocks;
}

int sq_fetch(struct sim_qp *qp, uint8_t *raw, bool *more);
int sq_ready(struct sim_qp *qp, uint8_t *blocks);
bool sq_ready_one(struct sim_qp *qp);
int sq_peek(struct sim_qp *qp, uint32_t index, uint8_t *raw, size_t len);

int rq_take(struct sim_qp *qp, struct sim_recv *r);
int srq_take(struct sim_srq *srq, struct sim_recv *r);
uint16_t rq_untaken(struct sim_qp *qp);
void rq_cache_drop(struct sim_qp *qp);

#endif
