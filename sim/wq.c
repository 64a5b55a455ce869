/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Flow steering rules, receive work queues and RSS indirection tables.
 *
 * A ConnectX-3 uses them to spread and steer Ethernet traffic.  The
 * simulated ports are InfiniBand, so no packet ever matches a rule or
 * lands in a WQ: the objects are created, checked and destroyed as the
 * kernel would, and carry no data path.
 */
#include <errno.h>
#include <stdlib.h>

#include "uverbs.h"

SIM_HANDLER(cmd_ex_create_flow)
{
	struct ib_uverbs_create_flow req;
	struct ib_uverbs_create_flow_resp resp = {};
	struct sim_flow *flow;
	struct sim_qp *qp;

	cmd_in(cmd, &req, sizeof(req));
	qp = uobj_get(cmd->ctx, req.qp_handle, SIM_OBJ_QP);
	if (!qp || req.comp_mask || req.flow_attr.reserved[0] ||
	    req.flow_attr.reserved[1] ||
	    !hca_port(cmd->ctx->hca, req.flow_attr.port) ||
	    req.flow_attr.size > cmd->in_len - offsetof(struct ib_uverbs_create_flow, flow_attr))
		return -EINVAL;
	if (qp->type != IBV_QPT_UD)
		return -EINVAL;
	flow = calloc(1, sizeof(*flow));
	if (!flow)
		return -ENOMEM;
	if (uobj_add(cmd->ctx, &flow->uobj, SIM_OBJ_FLOW)) {
		free(flow);
		return -ENOMEM;
	}
	flow->qp = qp;
	resp.flow_handle = flow->uobj.handle;
	cmd_out(cmd, &resp, sizeof(resp));
	return 0;
}

void flow_release(struct sim_flow *flow)
{
	uobj_remove(&flow->uobj);
	free(flow);
}

SIM_HANDLER(cmd_ex_destroy_flow)
{
	struct ib_uverbs_destroy_flow req;
	struct sim_flow *flow;

	cmd_in(cmd, &req, sizeof(req));
	flow = uobj_get(cmd->ctx, req.flow_handle, SIM_OBJ_FLOW);
	if (!flow || req.comp_mask)
		return -EINVAL;
	flow_release(flow);
	return 0;
}

SIM_HANDLER(cmd_ex_create_wq)
{
	struct ib_uverbs_ex_create_wq req;
	struct ib_uverbs_ex_create_wq_resp resp = {};
	struct mlx4_ib_create_wq drv;
	struct sim_wq_obj *wq;
	struct sim_pd *pd;
	struct sim_cq *cq;

	cmd_in(cmd, &req, sizeof(req));
	pd = uobj_get(cmd->ctx, req.pd_handle, SIM_OBJ_PD);
	cq = uobj_get(cmd->ctx, req.cq_handle, SIM_OBJ_CQ);
	if (!pd || !cq || req.comp_mask || req.wq_type != IBV_WQT_RQ ||
	    !req.max_wr || req.max_wr > CX3_MAX_QP_WR ||
	    !req.max_sge || req.max_sge > CX3_MAX_SGE ||
	    cmd->drv_in_len < offsetofend(struct mlx4_ib_create_wq, db_addr))
		return -EINVAL;
	cmd_drv_in(cmd, &drv, sizeof(drv));
	if (!dma_range_mapped(cmd->ctx->pid, drv.db_addr, 4, true))
		return -EFAULT;
	wq = calloc(1, sizeof(*wq));
	if (!wq)
		return -ENOMEM;
	if (uobj_add(cmd->ctx, &wq->uobj, SIM_OBJ_WQ)) {
		free(wq);
		return -ENOMEM;
	}
	wq->uobj.user_handle = req.user_handle;
	wq->pd = pd;
	wq->cq = cq;
	pd->users++;
	cq->users++;
	wq->wqn = cmd->ctx->hca->next_qpn++ & (CX3_QPN_XRC_BIT - 1);
	wq->state = IBV_WQS_RESET;
	resp.response_length = MIN(sizeof(resp), cmd->out_cap);
	resp.wq_handle = wq->uobj.handle;
	resp.max_wr = roundup_pow2(req.max_wr);
	resp.max_sge = roundup_pow2(req.max_sge);
	resp.wqn = wq->wqn;
	cmd_out(cmd, &resp, sizeof(resp));
	return 0;
}

SIM_HANDLER(cmd_ex_modify_wq)
{
	struct ib_uverbs_ex_modify_wq req;
	struct sim_wq_obj *wq;

	cmd_in(cmd, &req, sizeof(req));
	wq = uobj_get(cmd->ctx, req.wq_handle, SIM_OBJ_WQ);
	if (!wq || (req.attr_mask & ~(IBV_WQ_ATTR_STATE | IBV_WQ_ATTR_CURR_STATE)))
		return -EINVAL;
	if ((req.attr_mask & IBV_WQ_ATTR_CURR_STATE) &&
	    req.curr_wq_state != wq->state)
		return -EINVAL;
	if (req.attr_mask & IBV_WQ_ATTR_STATE) {
		if (req.wq_state > IBV_WQS_ERR)
			return -EINVAL;
		wq->state = req.wq_state;
	}
	return 0;
}

void wq_release(struct sim_wq_obj *wq)
{
	event_forget(wq->uobj.ctx, wq);
	wq->pd->users--;
	wq->cq->users--;
	uobj_remove(&wq->uobj);
	free(wq);
}

SIM_HANDLER(cmd_ex_destroy_wq)
{
	struct ib_uverbs_ex_destroy_wq req;
	struct ib_uverbs_ex_destroy_wq_resp resp = {};
	struct sim_wq_obj *wq;

	cmd_in(cmd, &req, sizeof(req));
	wq = uobj_get(cmd->ctx, req.wq_handle, SIM_OBJ_WQ);
	if (!wq || req.comp_mask)
		return -EINVAL;
	if (wq->users)
		return -EBUSY;
	resp.response_length = MIN(sizeof(resp), cmd->out_cap);
	resp.events_reported = wq->events_reported;
	wq_release(wq);
	cmd_out(cmd, &resp, sizeof(resp));
	return 0;
}

SIM_HANDLER(cmd_ex_create_ind_tbl)
{
	struct ib_uverbs_ex_create_rwq_ind_table req;
	struct ib_uverbs_ex_create_rwq_ind_table_resp resp = {};
	const uint32_t *handles;
	struct sim_ind_tbl *tbl;
	uint32_t size;

	cmd_in(cmd, &req, sizeof(req));
	if (req.comp_mask || req.log_ind_tbl_size > IB_USER_VERBS_MAX_LOG_IND_TBL_SIZE)
		return -EINVAL;
	size = 1u << req.log_ind_tbl_size;
	if (cmd->in_len < sizeof(req) + size * sizeof(uint32_t))
		return -EINVAL;
	handles = (const uint32_t *)(cmd->in + sizeof(req));
	tbl = calloc(1, sizeof(*tbl));
	if (tbl)
		tbl->wqs = calloc(size, sizeof(*tbl->wqs));
	if (!tbl || !tbl->wqs) {
		if (tbl)
			free(tbl);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < size; i++) {
		tbl->wqs[i] = uobj_get(cmd->ctx, handles[i], SIM_OBJ_WQ);
		if (!tbl->wqs[i]) {
			free(tbl->wqs);
			free(tbl);
			return -EINVAL;
		}
	}
	if (uobj_add(cmd->ctx, &tbl->uobj, SIM_OBJ_IND_TBL)) {
		free(tbl->wqs);
		free(tbl);
		return -ENOMEM;
	}
	tbl->size = size;
	for (uint32_t i = 0; i < size; i++)
		tbl->wqs[i]->users++;
	tbl->num = tbl->uobj.handle;
	resp.response_length = MIN(sizeof(resp), cmd->out_cap);
	resp.ind_tbl_handle = tbl->uobj.handle;
	resp.ind_tbl_num = tbl->num;
	cmd_out(cmd, &resp, sizeof(resp));
	return 0;
}

void ind_tbl_release(struct sim_ind_tbl *tbl)
{
	for (uint32_t i = 0; i < tbl->size; i++)
		tbl->wqs[i]->users--;
	uobj_remove(&tbl->uobj);
	free(tbl->wqs);
	free(tbl);
}

SIM_HANDLER(cmd_ex_destroy_ind_tbl)
{
	struct ib_uverbs_ex_destroy_rwq_ind_table req;
	struct sim_ind_tbl *tbl;

	cmd_in(cmd, &req, sizeof(req));
	tbl = uobj_get(cmd->ctx, req.ind_tbl_handle, SIM_OBJ_IND_TBL);
	if (!tbl || req.comp_mask)
		return -EINVAL;
	ind_tbl_release(tbl);
	return 0;
}
