/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The device's side of a shared receive queue: its entry in the SRQ
 * table and the limit event it raises when the driver has armed one.
 */
#include "adapter.h"

struct sim_srq *srq_by_num(struct sim_hca *hca, uint32_t srqn)
{
	return table_get(&hca->srqs, srqn & NUM24_MASK);
}

/*
 * The limit event: armed by modify_srq, it fires once, when the device
 * takes a WQE and fewer than the limit remain posted.
 */
void srq_check_limit(struct sim_srq *srq)
{
	uint32_t db;
	uint16_t avail;

	if (!srq->limit)
		return;
	if (!dma_read(srq->ctx->pid, srq->db, &db, sizeof(db)))
		srq->posted = be32toh(db);
	avail = srq->posted - srq->consumed;
	if (avail >= srq->limit)
		return;
	srq->limit = 0;
	adapter_async_event(srq->ctx, srq->uobj.user_handle,
			 IBV_EVENT_SRQ_LIMIT_REACHED, &srq->events_reported,
			 srq);
}
