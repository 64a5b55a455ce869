/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Flow steering rules, receive work queues and RSS indirection tables.
 *
 * A ConnectX-3 uses them to spread and steer Ethernet traffic.  Rules
 * steer raw Ethernet frames to raw packet QPs (raw.c), and an RSS QP
 * spreads them over the WQs of its table (rss.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "uverbs.h"
#include "../adapter/queue.h"

#define FLOW_MAX_PRIORITY	0xfff	/* mlx4_ib: 12 bits of rule priority */
#define FLOW_FLAGS_RESERVED	(1u << 3)	/* IB_FLOW_ATTR_FLAGS_RESERVED */
/*
 * sizeof(struct ib_uverbs_flow_spec), uverbs' union of the specifications
 * it knows: the largest, IPv6's, a header and two 40-byte filters.
 */
#define UVERBS_FLOW_SPEC_MAX	88

/*
 * The specifications of a rule, after its attributes: each a header
 * (type, size) and its value and mask.  What mlx4_ib can steer by is
 * kept (Ethernet: the destination MAC and VLAN, which is all it takes,
 * other masks ignored; IPv4 addresses; TCP and UDP ports); any other
 * type (IPv6, tunnels, actions) it refuses.
 */
static int parse_specs(const uint8_t *p, size_t len, int count,
		       struct sim_flow *flow)
{
	for (int i = 0; i < count; i++) {
		struct ib_uverbs_flow_spec_hdr hdr;
		struct sim_flow_spec *spec;
		size_t filter;

		if (len < sizeof(hdr))
			return -EINVAL;
		memcpy(&hdr, p, sizeof(hdr));
		if (hdr.size < sizeof(hdr) || hdr.size > len)
			return -EINVAL;
		switch (hdr.type) {
		case IBV_FLOW_SPEC_ETH:
			filter = sizeof(struct ib_uverbs_flow_eth_filter);
			break;
		case IBV_FLOW_SPEC_IPV4:
			filter = sizeof(struct ib_uverbs_flow_ipv4_filter);
			break;
		case IBV_FLOW_SPEC_TCP:
		case IBV_FLOW_SPEC_UDP:
			filter = sizeof(struct ib_uverbs_flow_tcp_udp_filter);
			break;
		default:
			return -EINVAL;	/* mlx4_ib parses no other */
		}
		if (filter) {
			/*
			 * Value and mask halve what follows the header; a
			 * filter shorter than the kernel's (IPv4's first
			 * version: the addresses only) reads as zeros
			 * beyond, as uverbs has it.
			 */
			size_t half = (hdr.size - sizeof(hdr)) / 2;

			if (!half || flow->nspecs == SIM_FLOW_SPECS)
				return -EINVAL;
			spec = &flow->specs[flow->nspecs++];
			memset(spec, 0, sizeof(*spec));
			spec->type = hdr.type;
			memcpy(&spec->val, p + sizeof(hdr), MIN(half, filter));
			memcpy(&spec->mask, p + sizeof(hdr) + half,
			       MIN(half, filter));
			/*
			 * IPv4 past the addresses: parse_flow_attr's
			 * ENOTSUPP, which __mlx4_ib_create_flow turns into
			 * EINVAL, as any error of it.
			 */
			if (hdr.type == IBV_FLOW_SPEC_IPV4 &&
			    (spec->mask.ipv4.proto || spec->mask.ipv4.tos ||
			     spec->mask.ipv4.ttl || spec->mask.ipv4.flags))
				return -EINVAL;
		}
		p += hdr.size;
		len -= hdr.size;
	}
	return 0;
}

/*
 * ib_uverbs_ex_create_flow's own checks, in its order, before it looks at
 * the QP: CAP_NET_RAW (capable(): EPERM), flags it does not know, a
 * DONT_TRAP default rule, more specifications than it takes, room for
 * them, the reserved words and the port.
 */
static int flow_attr_check(struct sim_cmd *cmd,
			   const struct ib_uverbs_create_flow *req)
{
	const struct ib_uverbs_flow_attr *a = &req->flow_attr;

	if (req->comp_mask)
		return -EINVAL;
	if (!has_cap_net_raw(cmd->ctx->pid))
		return -EPERM;
	if (a->flags >= FLOW_FLAGS_RESERVED)
		return -EINVAL;
	if ((a->flags & IBV_FLOW_ATTR_FLAGS_DONT_TRAP) &&
	    (a->type == IBV_FLOW_ATTR_ALL_DEFAULT ||
	     a->type == IBV_FLOW_ATTR_MC_DEFAULT))
		return -EINVAL;
	if (a->num_of_specs > SIM_FLOW_SPECS ||
	    a->size > a->num_of_specs * UVERBS_FLOW_SPEC_MAX ||
	    a->size > cmd->in_len - sizeof(*req))
		return -EINVAL;
	if (a->reserved[0] || a->reserved[1] ||
	    !hca_port(cmd->ctx->hca, a->port))
		return -EINVAL;
	return 0;
}

/*
 * mlx4_ib_create_flow's checks: the one flag it knows, DONT_TRAP, on a
 * normal rule only (EOPNOTSUPP), the four types (EINVAL), and for a
 * DONT_TRAP rule mlx4_ib_add_dont_trap_rule's: priority 0 and at most one
 * specification (EOPNOTSUPP; the device's UC and MC sniffer rules, which
 * the simulated firmware offers); then each hardware rule's priority
 * (__mlx4_ib_create_flow).
 */
static int mlx4_flow_check(const struct ib_uverbs_flow_attr *a)
{
	if (a->flags & ~(uint32_t)IBV_FLOW_ATTR_FLAGS_DONT_TRAP)
		return -EOPNOTSUPP;
	if ((a->flags & IBV_FLOW_ATTR_FLAGS_DONT_TRAP) &&
	    a->type != IBV_FLOW_ATTR_NORMAL)
		return -EOPNOTSUPP;
	if (a->type > IBV_FLOW_ATTR_SNIFFER)
		return -EINVAL;
	if ((a->flags & IBV_FLOW_ATTR_FLAGS_DONT_TRAP) &&
	    (a->num_of_specs > 1 || a->priority))
		return -EOPNOTSUPP;
	return a->priority > FLOW_MAX_PRIORITY ? -EINVAL : 0;
}

/*
 * A DONT_TRAP rule's one specification, if any, is Ethernet, and its
 * destination mask is empty (unicast and multicast) or the multicast bit
 * alone (which of the two its MAC's bit says): mlx4_ib_add_dont_trap_rule.
 */
static int dont_trap_spec_check(const struct sim_flow *flow)
{
	static const uint8_t zero[6], mc_bit[6] = { 0x01 };
	const uint8_t *mask;

	if (!flow->nspecs)
		return 0;
	if (flow->specs[0].type != IBV_FLOW_SPEC_ETH)
		return -EINVAL;
	mask = flow->specs[0].mask.eth.dst_mac;
	return memcmp(mask, zero, 6) && memcmp(mask, mc_bit, 6) ? -EINVAL : 0;
}

int cmd_ex_create_flow(struct sim_cmd *cmd)
{
	struct ib_uverbs_create_flow req;
	struct ib_uverbs_create_flow_resp resp = {};
	struct sim_flow *flow;
	struct sim_qp *qp;
	int err;

	cmd_in(cmd, &req, sizeof(req));
	err = flow_attr_check(cmd, &req);
	if (err)
		return err;
	qp = uobj_get(cmd->ctx, req.qp_handle, SIM_OBJ_QP);
	if (!qp || (qp->type != IBV_QPT_UD && qp->type != IBV_QPT_RAW_PACKET))
		return -EINVAL;
	err = mlx4_flow_check(&req.flow_attr);
	if (err)
		return err;
	flow = calloc(1, sizeof(*flow));
	if (!flow)
		return -ENOMEM;
	err = parse_specs(cmd->in + sizeof(req), req.flow_attr.size,
			  req.flow_attr.num_of_specs, flow);
	if (!err && (req.flow_attr.flags & IBV_FLOW_ATTR_FLAGS_DONT_TRAP))
		err = dont_trap_spec_check(flow);
	if (!err && uobj_add(cmd->ctx, &flow->uobj, SIM_OBJ_FLOW))
		err = -ENOMEM;
	if (err) {
		free(flow);
		return err;
	}
	flow->qp = qp;
	flow->hca = cmd->ctx->hca;
	flow->port = req.flow_attr.port;
	flow->type = req.flow_attr.type;
	flow->dont_trap = req.flow_attr.flags & IBV_FLOW_ATTR_FLAGS_DONT_TRAP;
	flow->priority = req.flow_attr.priority;
	qp->flows++;
	list_add_tail(&sim.flows, &flow->link);
	resp.flow_handle = flow->uobj.handle;
	cmd_out(cmd, &resp, sizeof(resp));
	return 0;
}

void flow_release(struct sim_flow *flow)
{
	list_del(&flow->link);
	flow->qp->flows--;
	uobj_remove(&flow->uobj);
	free(flow);
}

int cmd_ex_destroy_flow(struct sim_cmd *cmd)
{
	struct ib_uverbs_destroy_flow req;
	struct sim_flow *flow;
	int err;

	cmd_in(cmd, &req, sizeof(req));
	if (req.comp_mask)
		return -EINVAL;
	flow = uobj_get_destroy(cmd->ctx, req.flow_handle, SIM_OBJ_FLOW,
				UOBJ_NEVER_BUSY, &err);
	if (!flow)
		return err;
	flow_release(flow);
	return 0;
}

/*
 * The WQ's number, from the context's open range (mlx4_ib_alloc_wqn).  A
 * new range, aligned to its size, opens when there is none, when it is
 * full or when one of its WQs has gone; asking for a range of more than
 * one while one is open is refused.
 */
static int wqn_take(struct sim_ctx *ctx, uint32_t size, struct sim_wq_obj *wq)
{
	struct sim_wqn_range *r = ctx->wqn_range;
	struct sim_hca *hca = ctx->hca;

	if (!r || r->refs == r->size || r->dirty) {
		r = calloc(1, sizeof(*r));
		if (!r)
			return -ENOMEM;
		r->size = size;
		r->base = ALIGN_UP(hca->next_qpn, size);
		if (r->base + size >= CX3_QPN_XRC_BIT)
			r->base = ALIGN_UP(CX3_FIRST_QPN, size);
		hca->next_qpn = r->base + size;
		ctx->wqn_range = r;
	} else if (size != 1) {
		return -EINVAL;
	}
	wq->range = r;
	wq->wqn = r->base + r->refs++;
	return 0;
}

/* A WQ gives its number back; its range closes to new WQs. */
static void wqn_put(struct sim_ctx *ctx, struct sim_wq_obj *wq)
{
	struct sim_wqn_range *r = wq->range;

	if (--r->refs) {
		r->dirty = true;
		return;
	}
	if (ctx && ctx->wqn_range == r)
		ctx->wqn_range = NULL;
	free(r);
}

/*
 * The queue as mlx4_ib's create_rq sizes it: the receive queue of a user
 * QP, and a dummy send queue of one 64-byte entry in the same buffer.
 */
static int wq_size(struct sim_wq_obj *wq,
		   const struct ib_uverbs_ex_create_wq *req, uint64_t *size)
{
	int err = size_user_rq(&wq->rq, req->max_wr, req->max_sge, 0);

	if (err)
		return err;
	wq->sq.wqe_cnt = 1;
	wq->sq.wqe_shift = CX3_MIN_SQ_STRIDE_LOG;
	*size = place_queues(&wq->sq, &wq->rq);
	return 0;
}

int cmd_ex_create_wq(struct sim_cmd *cmd)
{
	struct ib_uverbs_ex_create_wq req;
	struct ib_uverbs_ex_create_wq_resp resp = {};
	struct mlx4_ib_create_wq drv;
	struct sim_wq_obj *wq;
	struct sim_pd *pd;
	struct sim_cq *cq;
	uint64_t size;
	int err;

	cmd_in(cmd, &req, sizeof(req));
	if (req.comp_mask)
		return -EOPNOTSUPP;
	pd = uobj_get(cmd->ctx, req.pd_handle, SIM_OBJ_PD);
	cq = uobj_get(cmd->ctx, req.cq_handle, SIM_OBJ_CQ);
	if (!pd || !cq)
		return -EINVAL;
	if (cmd->drv_in_len < offsetofend(struct mlx4_ib_create_wq, comp_mask))
		return -EINVAL;
	/*
	 * mlx4_ib_create_wq: a driver request longer than its structure is
	 * zero past it, and there is no driver response to ask room for.
	 */
	if (!cmd_drv_in_clear(cmd, sizeof(drv)) || cmd->drv_out_cap)
		return -EOPNOTSUPP;
	cmd_drv_in(cmd, &drv, sizeof(drv));
	if (req.wq_type != IBV_WQT_RQ || drv.comp_mask || drv.reserved[0] ||
	    drv.reserved[1] || drv.reserved[2] ||
	    (req.create_flags & ~IBV_WQ_FLAGS_SCATTER_FCS) ||
	    drv.log_range_size > ilog2_u32(CX3_MAX_RSS_TBL_SZ))
		return -EOPNOTSUPP;
	wq = calloc(1, sizeof(*wq));
	if (!wq)
		return -ENOMEM;
	err = wq_size(wq, &req, &size);
	if (err)
		goto fail;
	/* The kernel pins the receive queue and the dummy send queue. */
	err = umem_may_pin_queue(cmd->ctx, drv.buf_addr, size, drv.db_addr, 4);
	if (err)
		goto fail;
	err = wqn_take(cmd->ctx, 1u << drv.log_range_size, wq);
	if (err)
		goto fail;
	if (uobj_add(cmd->ctx, &wq->uobj, SIM_OBJ_WQ)) {
		wqn_put(cmd->ctx, wq);
		err = -ENOMEM;
		goto fail;
	}
	wq->uobj.user_handle = req.user_handle;
	wq->pd = pd;
	wq->cq = cq;
	pd->users++;
	cq->users++;
	wq->buf = drv.buf_addr;
	wq->db = drv.db_addr;
	umem_pin(cmd->ctx, &wq->buf_pins, wq->buf, size, true);
	umem_pin_db(cmd->ctx, &wq->db_pins, wq->db, 4);
	wq->state = IBV_WQS_RESET;
	rss_wq_init(wq, cmd->ctx);
	/* create_rq: the QP context's "keep FCS" bit. */
	wq->dev.scatter_fcs = req.create_flags & IBV_WQ_FLAGS_SCATTER_FCS;
	resp.response_length = MIN(sizeof(resp), cmd->out_cap);
	resp.wq_handle = wq->uobj.handle;
	resp.max_wr = wq->rq.wqe_cnt;
	resp.max_sge = wq->rq.max_gs;
	resp.wqn = wq->wqn;
	cmd_out(cmd, &resp, sizeof(resp));
	return 0;
fail:
	free(wq);
	return err;
}

/*
 * uverbs takes the current state from the caller when it names one, and
 * mlx4_ib refuses to leave ERR for RDY or RESET for ERR.  The new state
 * reaches the device only while an RSS QP uses the WQ (mlx4_ib_modify_wq:
 * rss_usecnt), since the WQ's port is the RSS QP's: a WQ no RSS QP uses
 * flushes nothing when it goes to ERR.
 */
int cmd_ex_modify_wq(struct sim_cmd *cmd)
{
	const uint32_t known = IBV_WQ_ATTR_STATE | IBV_WQ_ATTR_CURR_STATE |
			       IBV_WQ_ATTR_FLAGS;
	struct ib_uverbs_ex_modify_wq req;
	struct mlx4_ib_modify_wq drv;
	enum ibv_wq_state cur, next;
	struct sim_wq_obj *wq;
	int err;

	cmd_in(cmd, &req, sizeof(req));
	if (!req.attr_mask || (req.attr_mask & ~known))
		return -EINVAL;
	wq = uobj_get(cmd->ctx, req.wq_handle, SIM_OBJ_WQ);
	if (!wq)
		return -EINVAL;
	cur = req.attr_mask & IBV_WQ_ATTR_CURR_STATE ? req.curr_wq_state :
						       wq->state;
	next = req.attr_mask & IBV_WQ_ATTR_STATE ? req.wq_state : cur;
	if (cur > IBV_WQS_ERR || next > IBV_WQS_ERR)
		return -EINVAL;
	if (cmd->drv_in_len < sizeof(drv))
		return -EINVAL;
	cmd_drv_in(cmd, &drv, sizeof(drv));
	if (drv.comp_mask || drv.reserved || (req.attr_mask & IBV_WQ_ATTR_FLAGS))
		return -EOPNOTSUPP;
	if ((next == IBV_WQS_RDY && cur == IBV_WQS_ERR) ||
	    (next == IBV_WQS_ERR && cur == IBV_WQS_RESET))
		return -EINVAL;
	if (wq->rss_users) {
		err = rss_wq_apply(wq, next);
		if (err)
			return err;
	}
	wq->state = next;
	return 0;
}

void wq_release(struct sim_wq_obj *wq)
{
	list_del(&wq->dev.error_link);
	qp_set_state(&wq->dev, IBV_QPS_RESET);
	rq_cache_drop(&wq->dev);
	event_forget(wq->uobj.ctx, wq);
	wq->pd->users--;
	wq->cq->users--;
	wqn_put(wq->uobj.ctx, wq);
	umem_unpin(wq->uobj.ctx, &wq->buf_pins);
	umem_unpin(wq->uobj.ctx, &wq->db_pins);
	uobj_remove(&wq->uobj);
	free(wq);
}

int cmd_ex_destroy_wq(struct sim_cmd *cmd)
{
	struct ib_uverbs_ex_destroy_wq req;
	struct ib_uverbs_ex_destroy_wq_resp resp = {};
	struct sim_wq_obj *wq;
	int err;

	cmd_in(cmd, &req, sizeof(req));
	if (req.comp_mask)
		return -EOPNOTSUPP;	/* ib_uverbs_ex_destroy_wq */
	wq = uobj_get_destroy(cmd->ctx, req.wq_handle, SIM_OBJ_WQ,
			      offsetof(struct sim_wq_obj, users), &err);
	if (!wq)
		return err;
	resp.response_length = MIN(sizeof(resp), cmd->out_cap);
	resp.events_reported = wq->events_reported;
	wq_release(wq);
	cmd_out(cmd, &resp, sizeof(resp));
	return 0;
}

/*
 * mlx4_ib's rule for an indirection table: the device knows it by its
 * first WQ number and its size, so the WQs must be numbered consecutively
 * from a multiple of the size, and the size may not pass the device's.
 */
static bool wqs_spannable(struct sim_wq_obj **wqs, uint32_t size)
{
	if (size > CX3_MAX_RSS_TBL_SZ || wqs[0]->wqn % size)
		return false;
	for (uint32_t i = 1; i < size; i++)
		if (wqs[i]->wqn != wqs[0]->wqn + i)
			return false;
	return true;
}

int cmd_ex_create_ind_tbl(struct sim_cmd *cmd)
{
	struct ib_uverbs_ex_create_rwq_ind_table req;
	struct ib_uverbs_ex_create_rwq_ind_table_resp resp = {};
	const uint32_t *handles;
	struct sim_ind_tbl *tbl;
	uint32_t size;

	cmd_in(cmd, &req, sizeof(req));
	if (req.comp_mask)
		return -EOPNOTSUPP;
	if (req.log_ind_tbl_size > IB_USER_VERBS_MAX_LOG_IND_TBL_SIZE)
		return -EINVAL;
	size = 1u << req.log_ind_tbl_size;
	if (cmd->in_len < sizeof(req) + size * sizeof(uint32_t))
		return -ENOSPC;		/* uverbs_request_next */
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
		if (!tbl->wqs[i])
			break;
	}
	/*
	 * uverbs looks the WQs up; mlx4_ib_create_rwq_ind_table wants no
	 * driver request but zeros (its response's minimum, 8 bytes, is
	 * one word: never short), then WQs it can span.
	 */
	if (!tbl->wqs[size - 1] || !cmd_drv_in_clear(cmd, 0) ||
	    !wqs_spannable(tbl->wqs, size)) {
		int err = !tbl->wqs[size - 1] || cmd_drv_in_clear(cmd, 0) ?
			  -EINVAL : -EOPNOTSUPP;

		free(tbl->wqs);
		free(tbl);
		return err;
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

int cmd_ex_destroy_ind_tbl(struct sim_cmd *cmd)
{
	struct ib_uverbs_ex_destroy_rwq_ind_table req;
	struct sim_ind_tbl *tbl;
	int err;

	cmd_in(cmd, &req, sizeof(req));
	if (req.comp_mask)
		return -EOPNOTSUPP;	/* ib_uverbs_ex_destroy_rwq_ind_table */
	/* Busy while an RSS QP spreads over it. */
	tbl = uobj_get_destroy(cmd->ctx, req.ind_tbl_handle, SIM_OBJ_IND_TBL,
			       offsetof(struct sim_ind_tbl, users), &err);
	if (!tbl)
		return err;
	ind_tbl_release(tbl);
	return 0;
}
