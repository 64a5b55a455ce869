/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Shared receive queues, basic and XRC: the kernel's side.  The device's
 * (the SRQ table, the limit event) is adapter/srq.c.
 *
 * The SRQ buffer holds WQEs linked through their next segments; the
 * device starts at WQE 0 and follows the links, one WQE per message,
 * while its count of WQEs taken stays behind the counter the driver
 * publishes in the doorbell record.
 */
#include <errno.h>
#include <stdlib.h>

#include "uverbs.h"

struct srq_params {
	uint64_t user_handle;
	uint32_t srq_type, pd_handle, max_wr, max_sge;
	uint32_t xrcd_handle, cq_handle;
};

static int create_srq(struct sim_cmd *cmd, const struct srq_params *p)
{
	struct sim_ctx *ctx = cmd->ctx;
	struct sim_hca *hca = ctx->hca;
	struct ib_uverbs_create_srq_resp resp = {};
	struct mlx4_ib_create_srq_resp drv_resp = {};
	struct mlx4_ib_create_srq drv;
	struct sim_xrcd_handle *x = NULL;
	struct sim_cq *cq = NULL;
	struct sim_srq *srq;
	struct sim_pd *pd;
	uint32_t desc;
	int err;

	pd = uobj_get(ctx, p->pd_handle, SIM_OBJ_PD);
	if (!pd || cmd->drv_in_len < sizeof(drv))
		return -EINVAL;
	if (p->srq_type == IBV_SRQT_XRC) {
		x = uobj_get(ctx, p->xrcd_handle, SIM_OBJ_XRCD);
		cq = uobj_get(ctx, p->cq_handle, SIM_OBJ_CQ);
		if (!x || !cq)
			return -EINVAL;
	} else if (p->srq_type != IBV_SRQT_BASIC) {
		return -EINVAL;		/* no tag matching on a ConnectX-3 */
	}
	if (p->max_wr >= CX3_MAX_SRQ_WQES || p->max_sge > CX3_MAX_SRQ_SGE ||
	    hca->nsrqs >= CX3_MAX_SRQ)
		return -EINVAL;
	cmd_drv_in(cmd, &drv, sizeof(drv));

	srq = calloc(1, sizeof(*srq));
	if (!srq)
		return -ENOMEM;
	srq->wqe_cnt = roundup_pow2(p->max_wr + 1);
	srq->max_gs = p->max_sge;
	desc = MAX(32u, roundup_pow2(sizeof(struct mlx4_wqe_srq_next_seg) +
				     srq->max_gs * sizeof(struct mlx4_wqe_data_seg)));
	srq->wqe_shift = ilog2_u32(desc);
	err = umem_may_pin_queue(ctx, drv.buf_addr,
				 (uint64_t)srq->wqe_cnt << srq->wqe_shift,
				 drv.db_addr, 4);
	if (err) {
		free(srq);
		return err;
	}
	do
		srq->srqn = hca->next_srqn++ & NUM24_MASK;
	while (table_get(&hca->srqs, srq->srqn));
	if (table_put(&hca->srqs, srq->srqn, srq) ||
	    uobj_add(ctx, &srq->uobj, SIM_OBJ_SRQ)) {
		table_del(&hca->srqs, srq->srqn);
		free(srq);
		return -ENOMEM;
	}
	hca->nsrqs++;
	srq->uobj.user_handle = p->user_handle;
	srq->hca = hca;
	srq->ctx = ctx;
	srq->pd = pd;
	pd->users++;
	srq->type = p->srq_type;
	if (x) {
		srq->xrcd = xrcd_get(x->xrcd);
		srq->xrcd_handle = x;
		x->users++;
	}
	srq->cq = cq;
	if (cq)
		cq->users++;
	srq->buf = drv.buf_addr;
	srq->db = drv.db_addr;
	umem_pin(ctx, &srq->buf_pins, srq->buf,
		 (uint64_t)srq->wqe_cnt << srq->wqe_shift, true);
	umem_pin_db(ctx, &srq->db_pins, srq->db, 4);

	resp.srq_handle = srq->uobj.handle;
	resp.max_wr = srq->wqe_cnt - 1;	/* one WQE is always spare */
	resp.max_sge = srq->max_gs;
	resp.srqn = srq->srqn;
	drv_resp.srqn = srq->srqn;
	cmd_out(cmd, &resp, sizeof(resp));
	cmd_drv_out(cmd, &drv_resp, sizeof(drv_resp));
	return 0;
}

int cmd_create_srq(struct sim_cmd *cmd)
{
	struct ib_uverbs_create_srq req;
	struct srq_params p;

	cmd_in(cmd, &req, sizeof(req));
	p = (struct srq_params){ req.user_handle, IBV_SRQT_BASIC,
				 req.pd_handle, req.max_wr, req.max_sge, 0, 0 };
	return create_srq(cmd, &p);
}

int cmd_create_xsrq(struct sim_cmd *cmd)
{
	struct ib_uverbs_create_xsrq req;
	struct srq_params p;

	cmd_in(cmd, &req, sizeof(req));
	p = (struct srq_params){ req.user_handle, req.srq_type, req.pd_handle,
				 req.max_wr, req.max_sge, req.xrcd_handle,
				 req.cq_handle };
	return create_srq(cmd, &p);
}

int cmd_modify_srq(struct sim_cmd *cmd)
{
	struct ib_uverbs_modify_srq req;
	struct sim_srq *srq;

	cmd_in(cmd, &req, sizeof(req));
	srq = uobj_get(cmd->ctx, req.srq_handle, SIM_OBJ_SRQ);
	if (!srq)
		return -EINVAL;
	/*
	 * mlx4_ib_modify_srq: a ConnectX-3 cannot resize an SRQ; a limit
	 * must be below its size; any other bit, or none, changes nothing.
	 */
	if (req.attr_mask & IBV_SRQ_MAX_WR)
		return -EINVAL;
	if (!(req.attr_mask & IBV_SRQ_LIMIT))
		return 0;
	if (req.srq_limit >= srq->wqe_cnt)
		return -EINVAL;
	srq->limit = req.srq_limit;
	return 0;
}

int cmd_query_srq(struct sim_cmd *cmd)
{
	struct ib_uverbs_query_srq req;
	struct ib_uverbs_query_srq_resp resp = {};
	struct sim_srq *srq;

	cmd_in(cmd, &req, sizeof(req));
	srq = uobj_get(cmd->ctx, req.srq_handle, SIM_OBJ_SRQ);
	if (!srq)
		return -EINVAL;
	resp.max_wr = srq->wqe_cnt - 1;
	resp.max_sge = srq->max_gs;
	resp.srq_limit = srq->limit;
	cmd_out(cmd, &resp, sizeof(resp));
	return 0;
}

void srq_release(struct sim_srq *srq)
{
	event_forget(srq->uobj.ctx, srq);
	table_del(&srq->hca->srqs, srq->srqn);
	srq->hca->nsrqs--;
	srq->pd->users--;
	if (srq->cq)
		srq->cq->users--;
	if (srq->xrcd)
		xrcd_put(srq->xrcd);
	if (srq->xrcd_handle)
		srq->xrcd_handle->users--;
	umem_unpin(srq->ctx, &srq->buf_pins);
	umem_unpin(srq->ctx, &srq->db_pins);
	uobj_remove(&srq->uobj);
	free(srq);
}

int cmd_destroy_srq(struct sim_cmd *cmd)
{
	struct ib_uverbs_destroy_srq req;
	struct ib_uverbs_destroy_srq_resp resp = {};
	struct sim_srq *srq;
	int err;

	cmd_in(cmd, &req, sizeof(req));
	srq = uobj_get_destroy(cmd->ctx, req.srq_handle, SIM_OBJ_SRQ,
			       offsetof(struct sim_srq, users), &err);
	if (!srq)
		return err;
	resp.events_reported = srq->events_reported;
	srq_release(srq);
	cmd_out(cmd, &resp, sizeof(resp));
	return 0;
}
