/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Queue pairs: creation with the mlx4_ib sizing rules for user QPs, the
 * verbs state machine with its attribute rules, queries, multicast
 * attachment, and destruction.  What the device does with the queues is
 * in adapter/: req.c (send queue), resp.c (receive side), comp.c
 * (completions), qp.c (the state changes the device makes).
 */
#include <errno.h>
#include <stdlib.h>

#include <linux/capability.h>

#include "uverbs.h"
#include "../adapter/queue.h"

static bool has_rq(enum ibv_qp_type type, bool is_srq)
{
	return type != IBV_QPT_XRC_SEND && type != IBV_QPT_XRC_RECV && !is_srq;
}

/* ------------------------------------------------------------------ */
/* Creation                                                            */
/* ------------------------------------------------------------------ */

struct qp_params {
	uint64_t user_handle;
	uint32_t pd_handle, send_cq_handle, recv_cq_handle, srq_handle;
	uint32_t max_send_wr, max_recv_wr, max_send_sge, max_recv_sge;
	uint32_t max_inline_data;
	uint8_t sq_sig_all, qp_type, is_srq;
	uint32_t create_flags;
};

/*
 * A user receive queue as mlx4_ib sizes it (set_rq_size), for QPs and
 * WQs.  A receive inline size widens the stride to the power of two at or
 * BELOW it: the kernel takes ilog2, so a driver that rounds up and says
 * so unrounded gets a stride other than the one it writes with.
 */
int size_user_rq(struct sim_wq *rq, uint32_t max_wr, uint32_t max_sge,
		 uint32_t inl_recv_sz)
{
	uint32_t wqe_size;

	if (max_wr > CX3_MAX_QP_WR || max_sge > CX3_MAX_SGE)
		return -EINVAL;
	/* The hardware needs at least one entry with one gather entry. */
	if (!max_wr || !max_sge || inl_recv_sz > CX3_MAX_INL_RECV)
		return -EINVAL;
	rq->wqe_cnt = roundup_pow2(max_wr);
	rq->max_gs = roundup_pow2(max_sge);
	wqe_size = rq->max_gs * sizeof(struct mlx4_wqe_data_seg);
	rq->wqe_shift = ilog2_u32(MAX(wqe_size, inl_recv_sz));
	return 0;
}

static int size_rq(struct sim_qp *qp, const struct qp_params *p,
		   uint32_t inl_recv_sz)
{
	int err;

	if (p->max_recv_wr > CX3_MAX_QP_WR || p->max_recv_sge > CX3_MAX_SGE)
		return -EINVAL;
	if (!has_rq(p->qp_type, p->is_srq)) {
		if (p->max_recv_wr || inl_recv_sz)
			return -EINVAL;
		return 0;
	}
	err = size_user_rq(&qp->rq, p->max_recv_wr, p->max_recv_sge,
			   inl_recv_sz);
	if (err)
		return err;
	qp->cap.max_recv_wr = qp->rq.wqe_cnt;
	qp->cap.max_recv_sge = qp->rq.max_gs;
	return 0;
}

/*
 * The SQ as the driver laid it out (set_user_sq_size): the kernel takes
 * the log sizes it is given, within the device's limits, and neither
 * checks nor uses the caller's send capabilities, which it hands back
 * unchanged.
 */
static int size_sq(struct sim_qp *qp, const struct qp_params *p,
		   const struct mlx4_ib_create_qp *drv)
{
	if (drv->log_sq_bb_count > 14 ||
	    (1u << drv->log_sq_bb_count) > CX3_MAX_WQES ||
	    drv->log_sq_stride > CX3_MAX_SQ_STRIDE_LOG ||
	    drv->log_sq_stride < CX3_MIN_SQ_STRIDE_LOG)
		return -EINVAL;
	qp->sq.wqe_cnt = 1u << drv->log_sq_bb_count;
	qp->sq.wqe_shift = drv->log_sq_stride;
	qp->cap.max_send_wr = p->max_send_wr;
	qp->cap.max_send_sge = p->max_send_sge;
	qp->cap.max_inline_data = p->max_inline_data;
	return 0;
}

/*
 * Where the device finds the queues in a QP's buffer: the one with the
 * larger stride first, the send queue first when they are equal.  Returns
 * the buffer's size, which the kernel pins.
 */
uint64_t place_queues(struct sim_wq *sq, struct sim_wq *rq)
{
	uint64_t rq_size = (uint64_t)rq->wqe_cnt << rq->wqe_shift;
	uint64_t sq_size = (uint64_t)sq->wqe_cnt << sq->wqe_shift;

	if (rq->wqe_shift > sq->wqe_shift) {
		rq->offset = 0;
		sq->offset = rq_size;
	} else {
		rq->offset = sq_size;
		sq->offset = 0;
	}
	return rq_size + sq_size;
}

static int alloc_qpn(struct sim_hca *hca, struct sim_qp *qp)
{
	uint32_t flag = qp->type == IBV_QPT_XRC_RECV ? CX3_QPN_XRC_BIT : 0;

	if (hca->nqps >= CX3_MAX_QP)
		return -ENOMEM;
	do {
		qp->qpn = (hca->next_qpn++ & (CX3_QPN_XRC_BIT - 1)) | flag;
	} while (qp->qpn < CX3_FIRST_QPN || table_get(&hca->qps, qp->qpn));
	if (table_put(&hca->qps, qp->qpn, qp))
		return -ENOMEM;
	hca->nqps++;
	return 0;
}

/* Look up and check the objects a new QP uses. */
static int qp_bind_objects(struct sim_ctx *ctx, struct sim_qp *qp,
			   const struct qp_params *p)
{
	if (qp->type == IBV_QPT_XRC_RECV) {
		struct sim_xrcd_handle *x = uobj_get(ctx, p->pd_handle,
						     SIM_OBJ_XRCD);

		if (!x)
			return -EINVAL;
		qp->xrcd = x->xrcd;
		qp->xrcd_handle = x;
		return 0;
	}
	qp->pd = uobj_get(ctx, p->pd_handle, SIM_OBJ_PD);
	qp->send_cq = uobj_get(ctx, p->send_cq_handle, SIM_OBJ_CQ);
	if (!qp->pd || !qp->send_cq)
		return -EINVAL;
	if (qp->type != IBV_QPT_XRC_SEND) {
		qp->recv_cq = uobj_get(ctx, p->recv_cq_handle, SIM_OBJ_CQ);
		if (!qp->recv_cq)
			return -EINVAL;
	}
	if (p->is_srq) {
		if (qp->type == IBV_QPT_XRC_SEND)
			return -EINVAL;
		qp->srq = uobj_get(ctx, p->srq_handle, SIM_OBJ_SRQ);
		if (!qp->srq || qp->srq->type != IBV_SRQT_BASIC)
			return -EINVAL;
	}
	return 0;
}

static void qp_hold_objects(struct sim_qp *qp)
{
	if (qp->pd)
		qp->pd->users++;
	if (qp->send_cq)
		qp->send_cq->users++;
	if (qp->recv_cq)
		qp->recv_cq->users++;
	if (qp->srq)
		qp->srq->users++;
	if (qp->xrcd)
		xrcd_get(qp->xrcd);
	if (qp->xrcd_handle)
		qp->xrcd_handle->users++;
	if (qp->rss_tbl)
		qp->rss_tbl->users++;
}

static void qp_drop_objects(struct sim_qp *qp)
{
	if (qp->pd)
		qp->pd->users--;
	if (qp->send_cq)
		qp->send_cq->users--;
	if (qp->recv_cq)
		qp->recv_cq->users--;
	if (qp->srq)
		qp->srq->users--;
	if (qp->xrcd)
		xrcd_put(qp->xrcd);
	if (qp->rss_tbl)
		qp->rss_tbl->users--;
}

/*
 * A new QP, its objects bound, gets its number and handle, and starts in
 * RESET on port 1, holding what it uses.
 */
static int qp_register(struct sim_ctx *ctx, struct sim_qp *qp,
		       uint64_t user_handle)
{
	int err = alloc_qpn(ctx->hca, qp);

	if (err)
		return err;
	if (uobj_add(ctx, &qp->uobj, SIM_OBJ_QP)) {
		table_del(&ctx->hca->qps, qp->qpn);
		ctx->hca->nqps--;
		return -ENOMEM;
	}
	qp->uobj.user_handle = user_handle;
	qp->hca = ctx->hca;
	qp->ctx = ctx;
	qp->state = IBV_QPS_RESET;
	qp->port = 1;
	qp->mtu = IBV_MTU_4096;
	list_add_tail(&ctx->qps, &qp->ctx_link);
	list_init(&qp->wait_link);
	list_init(&qp->busy_link);
	list_init(&qp->fail_link);
	list_init(&qp->error_link);
	qp_hold_objects(qp);
	return 0;
}

/* Whether the process may send raw frames: CAP_NET_RAW in its status. */
/* Whether the process has @cap among its effective capabilities. */
bool has_capability(pid_t pid, int cap)
{
	char path[64], line[128];
	unsigned long long caps = 0;
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		found = sscanf(line, "CapEff: %llx", &caps) == 1;
	fclose(f);
	return found && (caps >> cap & 1);
}

bool has_cap_net_raw(pid_t pid)
{
	return has_capability(pid, CAP_NET_RAW);
}

static int create_qp(struct sim_cmd *cmd, const struct qp_params *p,
		     struct ib_uverbs_create_qp_resp *resp)
{
	struct sim_ctx *ctx = cmd->ctx;
	struct mlx4_ib_create_qp drv;
	struct sim_qp *qp;
	uint64_t size = 0;
	int err;

	switch (p->qp_type) {
	case IBV_QPT_RC:
	case IBV_QPT_UC:
	case IBV_QPT_UD:
	case IBV_QPT_XRC_SEND:
	case IBV_QPT_XRC_RECV:
		break;
	case IBV_QPT_RAW_PACKET:
		/* uverbs: raw frames are for the privileged. */
		if (!has_cap_net_raw(ctx->pid))
			return -EPERM;
		break;
	default:
		return -EINVAL;
	}
	/* Multicast loopback blocking is the only creation flag here. */
	if (p->create_flags & ~IBV_QP_CREATE_BLOCK_SELF_MCAST_LB)
		return -EINVAL;
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return -ENOMEM;
	qp->type = p->qp_type;
	/* mlx4_ib keeps it for the QP's multicast attaches. */
	qp->block_self_mcast = p->create_flags &
			       IBV_QP_CREATE_BLOCK_SELF_MCAST_LB;
	err = qp_bind_objects(ctx, qp, p);
	if (err)
		goto fail;

	if (qp->type != IBV_QPT_XRC_RECV) {
		if (cmd->drv_in_len < offsetofend(struct mlx4_ib_create_qp,
						  reserved)) {
			err = -EINVAL;
			goto fail;
		}
		cmd_drv_in(cmd, &drv, sizeof(drv));
		err = size_rq(qp, p, drv.inl_recv_sz);
		if (!err)
			err = size_sq(qp, p, &drv);
		if (err)
			goto fail;
		size = place_queues(&qp->sq, &qp->rq);
		err = umem_may_pin_queue(ctx, drv.buf_addr, size, drv.db_addr,
					 qp->rq.wqe_cnt ? 4 : 0);
		if (err)
			goto fail;
		qp->buf = drv.buf_addr;
		qp->db = drv.db_addr;
	}
	err = qp_register(ctx, qp, p->user_handle);
	if (err)
		goto fail;
	qp->sq_sig_all = p->sq_sig_all;
	if (qp->type != IBV_QPT_XRC_RECV) {
		umem_pin(ctx, &qp->buf_pins, qp->buf, size, true);
		if (qp->rq.wqe_cnt)
			umem_pin_db(ctx, &qp->db_pins, qp->db, 4);
	}

	resp->qp_handle = qp->uobj.handle;
	resp->qpn = qp->qpn;
	resp->max_send_wr = qp->cap.max_send_wr;
	resp->max_recv_wr = qp->cap.max_recv_wr;
	resp->max_send_sge = qp->cap.max_send_sge;
	resp->max_recv_sge = qp->cap.max_recv_sge;
	resp->max_inline_data = qp->cap.max_inline_data;
	return 0;
fail:
	free(qp);
	return err;
}

int cmd_create_qp(struct sim_cmd *cmd)
{
	struct ib_uverbs_create_qp req;
	struct ib_uverbs_create_qp_resp resp = {};
	struct qp_params p;
	int err;

	cmd_in(cmd, &req, sizeof(req));
	p = (struct qp_params){
		req.user_handle, req.pd_handle, req.send_cq_handle,
		req.recv_cq_handle, req.srq_handle, req.max_send_wr,
		req.max_recv_wr, req.max_send_sge, req.max_recv_sge,
		req.max_inline_data, req.sq_sig_all, req.qp_type, req.is_srq, 0
	};
	err = create_qp(cmd, &p, &resp);
	if (!err)
		cmd_out(cmd, &resp, sizeof(resp));
	return err;
}

/*
 * An RSS QP (uverbs' create with an indirection table): a raw packet QP
 * with no queues of its own, whose frames go to the table's WQs by a
 * hash.  uverbs refuses receive attributes beside a table; mlx4_ib
 * refuses anything but a raw packet QP, creation flags, a send queue, and
 * a hash it cannot compute (rss_check_hash).
 */
static int create_rss_qp(struct sim_cmd *cmd,
			 const struct ib_uverbs_ex_create_qp *req,
			 struct ib_uverbs_ex_create_qp_resp *resp)
{
	struct sim_ctx *ctx = cmd->ctx;
	struct mlx4_ib_create_qp_rss drv;
	struct sim_ind_tbl *tbl;
	struct sim_qp *qp;
	int err;

	tbl = uobj_get(ctx, req->rwq_ind_tbl_handle, SIM_OBJ_IND_TBL);
	if (!tbl || req->recv_cq_handle || req->srq_handle ||
	    req->max_recv_wr || req->max_recv_sge || req->is_srq)
		return -EINVAL;
	if (req->qp_type != IBV_QPT_RAW_PACKET || req->create_flags)
		return -EOPNOTSUPP;
	if (!has_cap_net_raw(ctx->pid))
		return -EPERM;
	if (req->max_send_wr || req->max_send_sge || req->max_inline_data)
		return -EINVAL;
	if (cmd->drv_in_len < offsetofend(struct mlx4_ib_create_qp_rss,
					  reserved1))
		return -EINVAL;
	cmd_drv_in(cmd, &drv, sizeof(drv));
	err = rss_check_hash(&drv);
	if (err)
		return err;
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return -ENOMEM;
	qp->type = IBV_QPT_RAW_PACKET;
	qp->pd = uobj_get(ctx, req->pd_handle, SIM_OBJ_PD);
	qp->rss_tbl = tbl;
	qp->rss_fields = drv.rx_hash_fields_mask;
	memcpy(qp->rss_key, drv.rx_hash_key, sizeof(qp->rss_key));
	err = qp->pd ? qp_register(ctx, qp, req->user_handle) : -EINVAL;
	if (err)
		goto fail;
	resp->base.qp_handle = qp->uobj.handle;
	resp->base.qpn = qp->qpn;
	resp->response_length = MIN(sizeof(*resp), cmd->out_cap);
	cmd_out(cmd, resp, sizeof(*resp));
	return 0;
fail:
	free(qp);
	return err;
}

int cmd_ex_create_qp(struct sim_cmd *cmd)
{
	struct ib_uverbs_ex_create_qp req;
	struct ib_uverbs_ex_create_qp_resp resp = {};
	struct qp_params p;
	int err;

	cmd_in(cmd, &req, sizeof(req));
	if ((req.comp_mask & ~IB_UVERBS_CREATE_QP_MASK_IND_TABLE) ||
	    req.reserved)
		return -EINVAL;
	/* create_qp (uverbs) judges the type before it looks at a table. */
	if (req.qp_type == IBV_QPT_RAW_PACKET && !has_cap_net_raw(cmd->ctx->pid))
		return -EPERM;
	if (req.comp_mask & IB_UVERBS_CREATE_QP_MASK_IND_TABLE)
		return create_rss_qp(cmd, &req, &resp);
	p = (struct qp_params){
		req.user_handle, req.pd_handle, req.send_cq_handle,
		req.recv_cq_handle, req.srq_handle, req.max_send_wr,
		req.max_recv_wr, req.max_send_sge, req.max_recv_sge,
		req.max_inline_data, req.sq_sig_all, req.qp_type, req.is_srq,
		req.create_flags
	};
	err = create_qp(cmd, &p, &resp.base);
	if (err)
		return err;
	resp.response_length = MIN(sizeof(resp), cmd->out_cap);
	cmd_out(cmd, &resp, sizeof(resp));
	return 0;
}

int cmd_open_qp(struct sim_cmd *cmd)
{
	struct ib_uverbs_open_qp req;
	struct ib_uverbs_create_qp_resp resp = {};
	struct sim_xrcd_handle *x;
	struct sim_qp_open *open;
	struct sim_qp *qp;

	cmd_in(cmd, &req, sizeof(req));
	x = uobj_get(cmd->ctx, req.pd_handle, SIM_OBJ_XRCD);
	if (!x || req.qp_type != IBV_QPT_XRC_RECV)
		return -EINVAL;
	qp = qp_by_num(cmd->ctx->hca, req.qpn);
	if (!qp || qp->type != IBV_QPT_XRC_RECV || qp->xrcd != x->xrcd)
		return -EINVAL;
	open = calloc(1, sizeof(*open));
	if (!open)
		return -ENOMEM;
	if (uobj_add(cmd->ctx, &open->uobj, SIM_OBJ_QP_OPEN)) {
		free(open);
		return -ENOMEM;
	}
	open->uobj.user_handle = req.user_handle;
	open->qp = qp;
	open->xrcd_handle = x;
	x->users++;
	qp->opens++;
	resp.qp_handle = open->uobj.handle;
	resp.qpn = qp->qpn;
	cmd_out(cmd, &resp, sizeof(resp));
	return 0;
}

/* The QP behind a handle, whether the caller created or opened it. */
static struct sim_qp *qp_get(struct sim_ctx *ctx, uint32_t handle)
{
	struct sim_qp_open *open;
	struct sim_qp *qp = uobj_get(ctx, handle, SIM_OBJ_QP);

	if (qp)
		return qp;
	open = uobj_get(ctx, handle, SIM_OBJ_QP_OPEN);
	return open ? open->qp : NULL;
}

/* ------------------------------------------------------------------ */
/* The state machine                                                   */
/* ------------------------------------------------------------------ */

enum { T_UD, T_UC, T_RC, T_XI, T_XT, T_RAW, T_COUNT };

struct transition {
	bool valid;
	uint32_t req[T_COUNT];
	uint32_t opt[T_COUNT];
};

#define S(x) IBV_QPS_##x
#define A(x) IBV_QP_##x

/*
 * Attribute sets several transitions share: what INIT needs (required
 * from RESET, optional from INIT), and what a move to RTS may change (from
 * RTR, RTS and SQD).
 */
#define INIT_ATTRS {							\
	[T_UD] = A(PKEY_INDEX) | A(PORT) | A(QKEY),			\
	[T_UC] = A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS),		\
	[T_RC] = A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS),		\
	[T_XI] = A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS),		\
	[T_XT] = A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS),		\
	[T_RAW] = A(PORT),						\
}
#define TO_RTS_OPT_ATTRS {						\
	[T_UD] = A(CUR_STATE) | A(QKEY),				\
	[T_UC] = A(CUR_STATE) | A(ALT_PATH) | A(ACCESS_FLAGS) |		\
		 A(PATH_MIG_STATE),					\
	[T_RC] = A(CUR_STATE) | A(ALT_PATH) | A(ACCESS_FLAGS) |		\
		 A(MIN_RNR_TIMER) | A(PATH_MIG_STATE),			\
	[T_XI] = A(CUR_STATE) | A(ALT_PATH) | A(ACCESS_FLAGS) |		\
		 A(PATH_MIG_STATE),					\
	[T_XT] = A(CUR_STATE) | A(ALT_PATH) | A(ACCESS_FLAGS) |		\
		 A(MIN_RNR_TIMER) | A(PATH_MIG_STATE),			\
}

/* The IB specification's table of transitions and their attributes. */
static const struct transition transitions[IBV_QPS_ERR + 1][IBV_QPS_ERR + 1] = {
	[S(RESET)] = {
		[S(RESET)] = { .valid = true },
		[S(ERR)] = { .valid = true },
		[S(INIT)] = { .valid = true, .req = INIT_ATTRS },
	},
	[S(INIT)] = {
		[S(RESET)] = { .valid = true },
		[S(ERR)] = { .valid = true },
		[S(INIT)] = { .valid = true, .opt = INIT_ATTRS },
		[S(RTR)] = { .valid = true, .req = {
			[T_UC] = A(AV) | A(PATH_MTU) | A(DEST_QPN) | A(RQ_PSN),
			[T_RC] = A(AV) | A(PATH_MTU) | A(DEST_QPN) | A(RQ_PSN) |
				 A(MAX_DEST_RD_ATOMIC) | A(MIN_RNR_TIMER),
			[T_XI] = A(AV) | A(PATH_MTU) | A(DEST_QPN) | A(RQ_PSN),
			[T_XT] = A(AV) | A(PATH_MTU) | A(DEST_QPN) | A(RQ_PSN) |
				 A(MAX_DEST_RD_ATOMIC) | A(MIN_RNR_TIMER),
		}, .opt = {
			[T_UD] = A(PKEY_INDEX) | A(QKEY),
			[T_UC] = A(ALT_PATH) | A(ACCESS_FLAGS) | A(PKEY_INDEX),
			[T_RC] = A(ALT_PATH) | A(ACCESS_FLAGS) | A(PKEY_INDEX),
			[T_XI] = A(ALT_PATH) | A(ACCESS_FLAGS) | A(PKEY_INDEX),
			[T_XT] = A(ALT_PATH) | A(ACCESS_FLAGS) | A(PKEY_INDEX),
		} },
	},
	[S(RTR)] = {
		[S(RESET)] = { .valid = true },
		[S(ERR)] = { .valid = true },
		[S(RTS)] = { .valid = true, .req = {
			[T_UD] = A(SQ_PSN),
			[T_UC] = A(SQ_PSN),
			[T_RC] = A(TIMEOUT) | A(RETRY_CNT) | A(RNR_RETRY) |
				 A(SQ_PSN) | A(MAX_QP_RD_ATOMIC),
			[T_XI] = A(TIMEOUT) | A(RETRY_CNT) | A(RNR_RETRY) |
				 A(SQ_PSN) | A(MAX_QP_RD_ATOMIC),
			[T_XT] = A(TIMEOUT) | A(SQ_PSN),
		}, .opt = TO_RTS_OPT_ATTRS },
	},
	[S(RTS)] = {
		[S(RESET)] = { .valid = true },
		[S(ERR)] = { .valid = true },
		[S(RTS)] = { .valid = true, .opt = TO_RTS_OPT_ATTRS },
		[S(SQD)] = { .valid = true, .opt = {
			[T_UD] = A(EN_SQD_ASYNC_NOTIFY),
			[T_UC] = A(EN_SQD_ASYNC_NOTIFY),
			[T_RC] = A(EN_SQD_ASYNC_NOTIFY),
			[T_XI] = A(EN_SQD_ASYNC_NOTIFY),
			[T_XT] = A(EN_SQD_ASYNC_NOTIFY),
		} },
	},
	[S(SQD)] = {
		[S(RESET)] = { .valid = true },
		[S(ERR)] = { .valid = true },
		[S(RTS)] = { .valid = true, .opt = TO_RTS_OPT_ATTRS },
		[S(SQD)] = { .valid = true, .opt = {
			[T_UD] = A(PKEY_INDEX) | A(QKEY),
			[T_UC] = A(AV) | A(ALT_PATH) | A(ACCESS_FLAGS) |
				 A(PKEY_INDEX) | A(PATH_MIG_STATE),
			[T_RC] = A(PORT) | A(AV) | A(TIMEOUT) | A(RETRY_CNT) |
				 A(RNR_RETRY) | A(MAX_QP_RD_ATOMIC) |
				 A(MAX_DEST_RD_ATOMIC) | A(ALT_PATH) |
				 A(ACCESS_FLAGS) | A(PKEY_INDEX) |
				 A(MIN_RNR_TIMER) | A(PATH_MIG_STATE),
			[T_XI] = A(PORT) | A(AV) | A(TIMEOUT) | A(RETRY_CNT) |
				 A(RNR_RETRY) | A(MAX_QP_RD_ATOMIC) |
				 A(ALT_PATH) | A(ACCESS_FLAGS) | A(PKEY_INDEX) |
				 A(PATH_MIG_STATE),
			[T_XT] = A(PORT) | A(AV) | A(TIMEOUT) |
				 A(MAX_DEST_RD_ATOMIC) | A(ALT_PATH) |
				 A(ACCESS_FLAGS) | A(PKEY_INDEX) |
				 A(MIN_RNR_TIMER) | A(PATH_MIG_STATE),
		} },
	},
	[S(SQE)] = {
		[S(RESET)] = { .valid = true },
		[S(ERR)] = { .valid = true },
		[S(RTS)] = { .valid = true, .opt = {
			[T_UD] = A(CUR_STATE) | A(QKEY),
			[T_UC] = A(CUR_STATE) | A(ACCESS_FLAGS),
		} },
	},
	[S(ERR)] = {
		[S(RESET)] = { .valid = true },
		[S(ERR)] = { .valid = true },
	},
};

static int type_index(enum ibv_qp_type type)
{
	switch (type) {
	case IBV_QPT_UD:	return T_UD;
	case IBV_QPT_UC:	return T_UC;
	case IBV_QPT_RC:	return T_RC;
	case IBV_QPT_XRC_SEND:	return T_XI;
	case IBV_QPT_RAW_PACKET:	return T_RAW;
	default:		return T_XT;
	}
}

static bool transition_ok(enum ibv_qp_type type, enum ibv_qp_state cur,
			  enum ibv_qp_state next, uint32_t mask)
{
	const struct transition *t;
	uint32_t req, opt;

	if (cur > IBV_QPS_ERR || next > IBV_QPS_ERR)
		return false;
	if ((mask & IBV_QP_CUR_STATE) && cur != IBV_QPS_RTR &&
	    cur != IBV_QPS_RTS && cur != IBV_QPS_SQD && cur != IBV_QPS_SQE)
		return false;
	t = &transitions[cur][next];
	if (!t->valid)
		return false;
	req = t->req[type_index(type)];
	opt = t->opt[type_index(type)];
	return (mask & req) == req && !(mask & ~(req | opt | IBV_QP_STATE));
}

static void path_from_dest(struct sim_path *path,
			   const struct ib_uverbs_qp_dest *d)
{
	path->dlid = d->dlid;
	path->sl = d->sl;
	path->src_path_bits = d->src_path_bits;
	path->static_rate = d->static_rate;
	path->is_global = d->is_global;
	path->port_num = d->port_num;
	path->sgid_index = d->sgid_index;
	path->hop_limit = d->hop_limit;
	path->traffic_class = d->traffic_class;
	path->flow_label = d->flow_label;
	memcpy(path->dgid, d->dgid, 16);
}

static void dest_from_path(struct ib_uverbs_qp_dest *d,
			   const struct sim_path *path)
{
	d->dlid = path->dlid;
	d->sl = path->sl;
	d->src_path_bits = path->src_path_bits;
	d->static_rate = path->static_rate;
	d->is_global = path->is_global;
	d->port_num = path->port_num;
	d->sgid_index = path->sgid_index;
	d->hop_limit = path->hop_limit;
	d->traffic_class = path->traffic_class;
	d->flow_label = path->flow_label;
	memcpy(d->dgid, path->dgid, 16);
}

static bool port_is_ib(struct sim_hca *hca, uint8_t num)
{
	struct sim_port *port = hca_port(hca, num);

	return port && port->link_layer == IBV_LINK_LAYER_INFINIBAND;
}

/*
 * An alternate path: uverbs' modify_qp wants alt_port_num and the path's
 * own port one valid port; _ib_modify_qp takes it only when that port
 * and the QP's run InfiniBand (APM is banned on RoCE); __mlx4_ib_modify_qp
 * checks its P_Key index and mlx4_set_alt_path its timeout.
 */
static bool alt_path_ok(struct sim_qp *qp, const struct ib_uverbs_modify_qp *m)
{
	uint8_t port = m->attr_mask & IBV_QP_PORT ? m->port_num : qp->port;

	return m->alt_dest.port_num == m->alt_port_num &&
	       port_is_ib(qp->hca, m->alt_port_num) &&
	       port_is_ib(qp->hca, port) &&
	       m->alt_pkey_index < CX3_PKEY_TBL_LEN && m->alt_timeout <= 31;
}

/* The values mlx4_ib checks beyond the transition table. */
static int check_values(struct sim_qp *qp, const struct ib_uverbs_modify_qp *m)
{
	uint32_t mask = m->attr_mask;
	const uint32_t access_ok = IBV_ACCESS_LOCAL_WRITE |
		IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
		IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND;

	if ((mask & IBV_QP_PORT) && !hca_port(qp->hca, m->port_num))
		return -EINVAL;
	/* Raw frames leave only through an Ethernet port. */
	if ((mask & IBV_QP_PORT) && qp->type == IBV_QPT_RAW_PACKET &&
	    hca_port(qp->hca, m->port_num)->link_layer != IBV_LINK_LAYER_ETHERNET)
		return -EINVAL;
	if ((mask & IBV_QP_PKEY_INDEX) && m->pkey_index >= CX3_PKEY_TBL_LEN)
		return -EINVAL;
	if ((mask & IBV_QP_ALT_PATH) && !alt_path_ok(qp, m))
		return -EINVAL;
	if ((mask & IBV_QP_MAX_QP_RD_ATOMIC) &&
	    m->max_rd_atomic > CX3_MAX_QP_INIT_RD_ATOM)
		return -EINVAL;
	if ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) &&
	    m->max_dest_rd_atomic > CX3_MAX_QP_RD_ATOM)
		return -EINVAL;
	if ((mask & IBV_QP_PATH_MTU) &&
	    (m->path_mtu < IBV_MTU_256 || m->path_mtu > IBV_MTU_4096))
		return -EINVAL;
	if ((mask & IBV_QP_TIMEOUT) && m->timeout > 31)
		return -EINVAL;
	if ((mask & IBV_QP_RETRY_CNT) && m->retry_cnt > 7)
		return -EINVAL;
	if ((mask & IBV_QP_RNR_RETRY) && m->rnr_retry > 7)
		return -EINVAL;
	if ((mask & IBV_QP_MIN_RNR_TIMER) && m->min_rnr_timer > 31)
		return -EINVAL;
	if ((mask & IBV_QP_ACCESS_FLAGS) && (m->qp_access_flags & ~access_ok))
		return -EINVAL;
	if ((mask & IBV_QP_DEST_QPN) && m->dest_qp_num > NUM24_MASK)
		return -EINVAL;
	if ((mask & IBV_QP_AV) && m->dest.is_global &&
	    m->dest.sgid_index >= CX3_GID_TBL_LEN)
		return -EINVAL;
	if ((mask & IBV_QP_PATH_MIG_STATE) && m->path_mig_state > IBV_MIG_ARMED)
		return -EINVAL;
	return 0;
}

/*
 * A connected QP's path on a RoCE port: the GID is the address, so the
 * core wants a GRH and a source GID that exists (whose interface gives the
 * packets their VLAN), and finds the peer's MAC
 * (from a multicast GID by the IP mapping, from any other by the neighbour
 * table: here, the ports on the switch), which mlx4_ib puts in the QP
 * context.  Nothing to do on InfiniBand.
 */
static int resolve_roce_path(struct sim_qp *qp,
			     const struct ib_uverbs_modify_qp *m,
			     uint8_t dmac[6], uint16_t *vlan)
{
	uint8_t num = m->attr_mask & IBV_QP_PORT ? m->port_num : qp->port;
	struct sim_port *port = hca_port(qp->hca, num), *peer;
	const uint8_t *dgid = m->dest.dgid;

	if (!port || port->link_layer != IBV_LINK_LAYER_ETHERNET)
		return 0;
	if (!m->dest.is_global || m->dest.sgid_index >= port->ngids)
		return -EINVAL;
	*vlan = port->gids[m->dest.sgid_index].vlan;
	if (dgid[0] == 0xff) {
		dmac[0] = dmac[1] = 0x33;
		memcpy(dmac + 2, dgid + 12, 4);
		return 0;
	}
	peer = port_by_gid(dgid);
	/* Beyond the switch, on the uplink: the neighbour table knows it. */
	if (!peer)
		return uplink_neigh(port, dgid, dmac);
	memcpy(dmac, peer->mac, 6);
	return 0;
}

static void apply(struct sim_qp *qp, const struct ib_uverbs_modify_qp *m)
{
	uint32_t mask = m->attr_mask;

	if (mask & IBV_QP_PORT)
		qp->port = m->port_num;
	if (mask & IBV_QP_PKEY_INDEX)
		qp->pkey_index = m->pkey_index;
	if (mask & IBV_QP_QKEY)
		qp->qkey = m->qkey;
	if (mask & IBV_QP_ACCESS_FLAGS)
		qp->access = m->qp_access_flags;
	if (mask & IBV_QP_AV)
		path_from_dest(&qp->path, &m->dest);
	if (mask & IBV_QP_ALT_PATH) {
		path_from_dest(&qp->alt_path, &m->alt_dest);
		qp->alt_pkey_index = m->alt_pkey_index;
		qp->alt_port = m->alt_port_num;
		qp->alt_timeout = m->alt_timeout;
	}
	if (mask & IBV_QP_PATH_MTU)
		qp->mtu = m->path_mtu;
	if (mask & IBV_QP_DEST_QPN)
		qp->dest_qpn = m->dest_qp_num;
	if (mask & IBV_QP_RQ_PSN)
		qp->rq_psn = m->rq_psn & PSN_MASK;
	if (mask & IBV_QP_SQ_PSN)
		qp->sq_psn = m->sq_psn & PSN_MASK;
	if (mask & IBV_QP_TIMEOUT)
		qp->timeout = m->timeout;
	if (mask & IBV_QP_RETRY_CNT)
		qp->retry_cnt = m->retry_cnt;
	if (mask & IBV_QP_RNR_RETRY)
		qp->rnr_retry = m->rnr_retry;
	if (mask & IBV_QP_MIN_RNR_TIMER)
		qp->min_rnr_timer = m->min_rnr_timer;
	if (mask & IBV_QP_MAX_QP_RD_ATOMIC)
		qp->max_rd_atomic = m->max_rd_atomic;
	if (mask & IBV_QP_MAX_DEST_RD_ATOMIC)
		qp->max_dest_rd_atomic = m->max_dest_rd_atomic;
	if (mask & IBV_QP_PATH_MIG_STATE)
		qp->mig_state = m->path_mig_state;
	if (mask & IBV_QP_EN_SQD_ASYNC_NOTIFY)
		qp->en_sqd_async_notify = m->en_sqd_async_notify;
}

/*
 * Take @qp off the daemon's lists of QPs with work pending (WQEs to
 * run, a retry, a flush, a failure to come) and drop its receive WQEs read ahead: what
 * a reset or the end of the QP ends.
 */
static void qp_drop_pending(struct sim_qp *qp)
{
	sq_idle(qp);
	req_stop_waiting(qp);
	list_del(&qp->error_link);
	list_del(&qp->fail_link);
	rq_cache_drop(qp);
}

/* Back to RESET: the queues are empty again and start from index 0. */
static void qp_reset(struct sim_qp *qp)
{
	qp_drop_pending(qp);
	qp->sq.head = 0;
	qp->rq.head = 0;
	qp->rq_posted = 0;
	qp->doorbells = 0;
	qp->comm_established = false;
	qp->last.valid = false;		/* a new connection's PSNs */
	qp->retry_armed = false;
	qp->ack_lost = false;
	qp->late.valid = false;
	wire_free(qp);			/* a new connection's packets */
}

/*
 * An RSS QP only receives, through its table's WQs: it goes from RESET
 * to INIT and from INIT to RTR, with the state and port attributes
 * alone (_mlx4_ib_modify_qp: EOPNOTSUPP).
 */
static bool rss_transition_ok(enum ibv_qp_state cur, enum ibv_qp_state next,
			      uint32_t attr_mask)
{
	return ((cur == IBV_QPS_RESET && next == IBV_QPS_INIT) ||
		(cur == IBV_QPS_INIT && next == IBV_QPS_RTR)) &&
	       !(attr_mask & ~(uint32_t)(IBV_QP_STATE | IBV_QP_PORT));
}

/*
 * What uverbs' modify_qp() checks of the ports before the core and the
 * driver see the command: each port it names exists; at INIT to RTR the
 * path's port is the QP's own (set at RESET to INIT); otherwise (SQD to
 * SQD) a path and a port agree, and a path alone brings its port along.
 */
static int check_ports(struct sim_qp *qp, struct ib_uverbs_modify_qp *m)
{
	if ((m->attr_mask & IBV_QP_PORT) && !hca_port(qp->hca, m->port_num))
		return -EINVAL;
	if (m->attr_mask & IBV_QP_AV) {
		if (!hca_port(qp->hca, m->dest.port_num))
			return -EINVAL;
		if ((m->attr_mask & IBV_QP_STATE) &&
		    m->qp_state == IBV_QPS_RTR) {
			if (m->dest.port_num != qp->port)
				return -EINVAL;
		} else if (m->attr_mask & IBV_QP_PORT) {
			if (m->port_num != m->dest.port_num)
				return -EINVAL;
		} else {
			m->attr_mask |= IBV_QP_PORT;
			m->port_num = m->dest.port_num;
		}
	}
	if ((m->attr_mask & IBV_QP_ALT_PATH) &&
	    (!hca_port(qp->hca, m->alt_port_num) ||
	     m->alt_port_num != m->alt_dest.port_num))
		return -EINVAL;
	if (((m->attr_mask & IBV_QP_CUR_STATE) &&
	     m->cur_qp_state > IBV_QPS_ERR) ||
	    ((m->attr_mask & IBV_QP_STATE) && m->qp_state > IBV_QPS_ERR))
		return -EINVAL;
	return 0;
}

/* IB_QP_ATTR_STANDARD_BITS: IB_QP_STATE through IB_QP_DEST_QPN. */
#define QP_ATTR_STANDARD_BITS	((1u << 21) - 1)

static int modify_qp(struct sim_cmd *cmd, const struct ib_uverbs_modify_qp *req)
{
	struct sim_qp *qp = qp_get(cmd->ctx, req->qp_handle);
	struct ib_uverbs_modify_qp copy = *req;
	const struct ib_uverbs_modify_qp *m = &copy;
	enum ibv_qp_state cur, next;
	uint8_t dmac[6] = {};
	uint16_t vlan = NO_VLAN;
	int err;

	if (!qp)
		return -EINVAL;
	err = check_ports(qp, &copy);
	if (err)
		return err;
	/* mlx4_ib_modify_qp: no rate limit (packet pacing) on mlx4. */
	if (m->attr_mask & IBV_QP_RATE_LIMIT)
		return -EOPNOTSUPP;
	cur = m->attr_mask & IBV_QP_CUR_STATE ? m->cur_qp_state : qp->state;
	next = m->attr_mask & IBV_QP_STATE ? m->qp_state : cur;
	if (cur != qp->state)
		return -EINVAL;
	if (!transition_ok(qp->type, cur, next, m->attr_mask))
		return -EINVAL;
	if (qp->rss_tbl && !rss_transition_ok(cur, next, m->attr_mask))
		return -EOPNOTSUPP;
	err = check_values(qp, m);
	if (!err && (m->attr_mask & IBV_QP_AV))
		err = resolve_roce_path(qp, m, dmac, &vlan);
	/* _mlx4_ib_modify_qp ties the table's WQs to the port first. */
	if (!err && qp->rss_tbl && next == IBV_QPS_INIT)
		err = rss_bringup(qp->rss_tbl, m->port_num);
	if (err)
		return err;
	apply(qp, m);
	if (m->attr_mask & IBV_QP_AV) {
		memcpy(qp->path.dmac, dmac, 6);
		qp->path.vlan = vlan;
	}

	if (next == qp->state)
		return 0;
	if (next == IBV_QPS_ERR) {
		qp_to_error(qp);
		return 0;
	}
	if (next == IBV_QPS_RESET)
		qp_reset(qp);
	qp_set_state(qp, next);
	if (next == IBV_QPS_RTS)
		req_run(qp);		/* WQEs posted before RTS start now */
	if (next == IBV_QPS_SQD && qp->en_sqd_async_notify)
		event_post_async(qp->uobj.ctx, qp->uobj.user_handle,
				 IBV_EVENT_SQ_DRAINED, &qp->events_reported, qp);
	return 0;
}

int cmd_modify_qp(struct sim_cmd *cmd)
{
	struct ib_uverbs_modify_qp req;

	cmd_in(cmd, &req, sizeof(req));
	/* ib_uverbs_modify_qp: attributes past the standard ones. */
	if (req.attr_mask & ~QP_ATTR_STANDARD_BITS)
		return -EOPNOTSUPP;
	return modify_qp(cmd, &req);
}

int cmd_ex_modify_qp(struct sim_cmd *cmd)
{
	struct ib_uverbs_ex_modify_qp req;
	struct ib_uverbs_ex_modify_qp_resp resp = {};
	int err;

	cmd_in(cmd, &req, sizeof(req));
	/*
	 * ib_uverbs_ex_modify_qp: attributes past the standard ones and the
	 * rate limit (which mlx4_ib refuses in turn); the reserved word is
	 * not looked at.
	 */
	if (req.base.attr_mask & ~(QP_ATTR_STANDARD_BITS | IBV_QP_RATE_LIMIT))
		return -EOPNOTSUPP;
	err = modify_qp(cmd, &req.base);
	if (err)
		return err;
	resp.response_length = MIN(sizeof(resp), cmd->out_cap);
	cmd_out(cmd, &resp, sizeof(resp));
	return 0;
}

int cmd_query_qp(struct sim_cmd *cmd)
{
	struct ib_uverbs_query_qp req;
	struct ib_uverbs_query_qp_resp resp = {};
	struct sim_qp *qp;

	cmd_in(cmd, &req, sizeof(req));
	qp = qp_get(cmd->ctx, req.qp_handle);
	if (!qp)
		return -EINVAL;
	if (qp->rss_tbl)
		return -EOPNOTSUPP;	/* mlx4_ib_query_qp */
	dest_from_path(&resp.dest, &qp->path);
	dest_from_path(&resp.alt_dest, &qp->alt_path);
	/*
	 * mlx4_ib knows the receive queue it sized, not what the driver
	 * made of the send queue: it answers 0 for a user QP's send
	 * capabilities and its inline size.
	 */
	resp.max_recv_wr = qp->cap.max_recv_wr;
	resp.max_recv_sge = qp->cap.max_recv_sge;
	resp.qkey = qp->qkey;
	resp.rq_psn = qp->rq_psn;
	resp.sq_psn = qp->sq_psn;
	resp.dest_qp_num = qp->dest_qpn;
	resp.qp_access_flags = qp->access;
	resp.pkey_index = qp->pkey_index;
	resp.alt_pkey_index = qp->alt_pkey_index;
	resp.qp_state = qp->state;
	resp.cur_qp_state = qp->state;
	resp.path_mtu = qp->mtu;
	resp.path_mig_state = qp->mig_state;
	resp.sq_draining = 0;
	resp.max_rd_atomic = qp->max_rd_atomic;
	resp.max_dest_rd_atomic = qp->max_dest_rd_atomic;
	resp.min_rnr_timer = qp->min_rnr_timer;
	resp.port_num = qp->port;
	resp.timeout = qp->timeout;
	resp.retry_cnt = qp->retry_cnt;
	resp.rnr_retry = qp->rnr_retry;
	resp.alt_port_num = qp->alt_port;
	resp.alt_timeout = qp->alt_timeout;
	resp.sq_sig_all = qp->sq_sig_all;
	cmd_out(cmd, &resp, sizeof(resp));
	return 0;
}

/* ------------------------------------------------------------------ */
/* Multicast                                                           */
/* ------------------------------------------------------------------ */

static struct sim_mcast *mcast_find(const uint8_t gid[16], struct sim_qp *qp)
{
	struct sim_mcast *m;

	list_for_each(&sim.mcast, m, struct sim_mcast, link)
		if (m->qp == qp && !memcmp(m->gid, gid, 16))
			return m;
	return NULL;
}

static int group_size(const uint8_t gid[16])
{
	struct sim_mcast *m;
	int n = 0;

	list_for_each(&sim.mcast, m, struct sim_mcast, link)
		n += !memcmp(m->gid, gid, 16);
	return n;
}

/*
 * ib_attach_mcast's is_valid_mcast_lid(): on InfiniBand a multicast LID
 * is 0xc000..0xfffe.  A QP in INIT or later is judged by its port; one
 * in RESET by the device, where any Ethernet port (whose annex says the
 * LID is ignored) lets every LID through.
 */
static bool mcast_lid_ok(const struct sim_qp *qp, uint16_t lid)
{
	struct sim_port *port = qp->state != IBV_QPS_RESET ?
				hca_port(qp->hca, qp->port) : NULL;

	if (port ? port->link_layer == IBV_LINK_LAYER_ETHERNET :
		   hca_has_eth_port(qp->hca))
		return true;
	return lid >= 0xc000 && lid != 0xffff;
}

/*
 * rdma_is_multicast_addr(): an IPv6 multicast GID, or an IPv4-mapped one
 * of an IPv4 multicast address (RoCE v2's groups, as rdma_cm makes them).
 */
static bool multicast_gid(const uint8_t gid[16])
{
	static const uint8_t v4mapped[12] = { [10] = 0xff, [11] = 0xff };

	if (!memcmp(gid, v4mapped, sizeof(v4mapped)))
		return (gid[12] & 0xf0) == 0xe0;
	return gid[0] == 0xff;
}

int cmd_attach_mcast(struct sim_cmd *cmd)
{
	struct ib_uverbs_attach_mcast req;
	struct sim_mcast *m;
	struct sim_qp *qp;

	cmd_in(cmd, &req, sizeof(req));
	qp = qp_get(cmd->ctx, req.qp_handle);
	if (!qp)
		return -EINVAL;
	/* uverbs answers an attach it already has before the core looks. */
	if (mcast_find(req.gid, qp))
		return 0;
	if (qp->type != IBV_QPT_UD || !multicast_gid(req.gid) ||
	    !mcast_lid_ok(qp, req.mlid))
		return -EINVAL;
	if (group_size(req.gid) >= CX3_MAX_MCAST_QP_ATTACH)
		return -ENOMEM;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	memcpy(m->gid, req.gid, 16);
	m->mlid = req.mlid;
	m->qp = qp;
	list_add_tail(&sim.mcast, &m->link);
	return 0;
}

int cmd_detach_mcast(struct sim_cmd *cmd)
{
	struct ib_uverbs_detach_mcast req;
	struct sim_mcast *m;
	struct sim_qp *qp;

	cmd_in(cmd, &req, sizeof(req));
	qp = qp_get(cmd->ctx, req.qp_handle);
	m = qp ? mcast_find(req.gid, qp) : NULL;
	if (!m)
		return -EINVAL;
	list_del(&m->link);
	free(m);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Destruction                                                         */
/* ------------------------------------------------------------------ */

static void qp_free(struct sim_qp *qp)
{
	struct sim_mcast *m, *tmp;

	list_for_each_safe(&sim.mcast, m, tmp, struct sim_mcast, link) {
		if (m->qp == qp) {
			list_del(&m->link);
			free(m);
		}
	}
	qp_drop_pending(qp);
	wire_free(qp);
	if (qp->rss_tbl && qp->state != IBV_QPS_RESET)
		rss_release(qp->rss_tbl);
	qp_set_state(qp, IBV_QPS_RESET);
	table_del(&qp->hca->qps, qp->qpn);
	qp->hca->nqps--;
	qp_drop_objects(qp);
	free(qp);
}

/*
 * An XRC target QP outlives its creator's handle while others have it
 * open, as it belongs to the XRC domain.
 */
void qp_release(struct sim_qp *qp)
{
	event_forget(qp->uobj.ctx, qp);
	list_del(&qp->ctx_link);
	list_init(&qp->ctx_link);
	/* The handle it was made by counts the QP's handle, not the QP. */
	if (qp->xrcd_handle)
		qp->xrcd_handle->users--;
	qp->xrcd_handle = NULL;
	umem_unpin(qp->ctx, &qp->buf_pins);
	umem_unpin(qp->ctx, &qp->db_pins);
	uobj_remove(&qp->uobj);
	if (!qp->opens)
		qp_free(qp);
}

void qp_open_release(struct sim_qp_open *open)
{
	struct sim_qp *qp = open->qp;

	event_forget(open->uobj.ctx, qp);
	open->xrcd_handle->users--;
	uobj_remove(&open->uobj);
	free(open);
	if (!--qp->opens && !qp->uobj.ctx)
		qp_free(qp);
}

int cmd_destroy_qp(struct sim_cmd *cmd)
{
	struct ib_uverbs_destroy_qp req;
	struct ib_uverbs_destroy_qp_resp resp = {};
	struct sim_qp_open *open;
	struct sim_qp *qp;

	cmd_in(cmd, &req, sizeof(req));
	qp = uobj_get(cmd->ctx, req.qp_handle, SIM_OBJ_QP);
	if (qp && qp->flows)
		return -EBUSY;		/* a flow rule still steers to it */
	if (qp) {
		resp.events_reported = qp->events_reported;
		qp_release(qp);
	} else {
		open = uobj_get(cmd->ctx, req.qp_handle, SIM_OBJ_QP_OPEN);
		if (!open)
			return uobj_lookup_err(cmd->ctx, req.qp_handle);
		resp.events_reported = open->events_reported;
		qp_open_release(open);
	}
	cmd_out(cmd, &resp, sizeof(resp));
	return 0;
}
