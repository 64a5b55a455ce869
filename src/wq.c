/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Receive work queues, the members of an RSS indirection table.
 *
 * To the device a WQ is a QP that only receives, and its completions
 * name it by QP number; so a WQ is a struct mlx4_qp with just a receive
 * queue, found by the CQ through the QP table like any other.
 */
#include <config.h>

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "annotate.h"
#include "mlx4.h"

struct mlx4_create_wq {
	struct ibv_create_wq		ibv_cmd;
	struct mlx4_ib_create_wq	drv;
};

struct mlx4_modify_wq {
	struct ibv_modify_wq		ibv_cmd;
	struct mlx4_ib_modify_wq	drv;
};

/*
 * mlx4_ib gives a WQ the layout of a QP whose send queue is a single,
 * never used, 64-byte entry, and pins both queues: the receive queue
 * starts after that entry unless its stride is the larger.
 */
static int alloc_wq_queues(struct mlx4_qp *qp, struct ibv_wq_init_attr *attr,
			   int page_size)
{
	struct ibv_qp_cap cap = {
		.max_recv_wr = attr->max_wr ? attr->max_wr : 1,
		.max_recv_sge = attr->max_sge ? attr->max_sge : 1,
	};
	int ret;

	mlx4_calc_rq_size(qp, &cap, 0);
	qp->sq.wqe_cnt = 1;
	qp->sq.wqe_shift = MLX4_MIN_SQ_STRIDE;
	qp->sq.mask = 0;
	ret = mlx4_alloc_qp_buf(qp, page_size, MLX4DV_RES_TYPE_RWQ);
	if (ret)
		return ret;
	mlx4_init_sq_ownership(qp);
	return 0;
}

/*
 * The one creation flag mlx4_ib's create_rq takes: keeping a frame's FCS
 * (IBV_RAW_PACKET_CAP_SCATTER_FCS, where the firmware has it; the kernel
 * refuses the WQ itself otherwise).
 */
static bool wq_flags_ok(const struct ibv_wq_init_attr *attr)
{
	if (attr->comp_mask & ~(uint32_t)IBV_WQ_INIT_ATTR_FLAGS)
		return false;
	return !(attr->comp_mask & IBV_WQ_INIT_ATTR_FLAGS) ||
	       !(attr->create_flags & ~(uint32_t)IBV_WQ_FLAGS_SCATTER_FCS);
}

struct ibv_wq *mlx4_create_wq(struct ibv_context *context,
			      struct ibv_wq_init_attr *attr)
{
	struct mlx4_context *ctx = to_mctx(context);
	struct ib_uverbs_ex_create_wq_resp resp = {};
	struct mlx4_create_wq cmd = {};
	struct mlx4_rwq *rwq;
	struct mlx4_qp *qp;
	int ret;

	if (attr->wq_type != IBV_WQT_RQ || !wq_flags_ok(attr)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (attr->max_wr > (uint32_t)ctx->max_qp_wr ||
	    attr->max_wr > MLX4_MAX_RQ_WQES ||
	    attr->max_sge > (uint32_t)ctx->max_sge || !attr->cq || !attr->pd) {
		errno = EINVAL;
		return NULL;
	}

	rwq = calloc(1, sizeof(*rwq));
	if (!rwq) {
		errno = ENOMEM;
		return NULL;
	}
	qp = &rwq->qp;
	qp->ctx = ctx;
	qp->domain = mlx4_hold_parent_domain(attr->pd);
	mlx4_lock_init(&qp->rq.lock, mlx4_domain_single_threaded(qp->domain));

	ret = alloc_wq_queues(qp, attr, mlx4_page_size(context));
	if (ret)
		goto err_free;

	ret = mlx4_alloc_queue_db(ctx, qp->domain, &qp->dbr, &qp->db);
	if (ret)
		goto err_buf;

	cmd.drv.buf_addr = (uintptr_t)qp->buf.buf;
	cmd.drv.db_addr = (uintptr_t)qp->db;
	cmd.drv.log_range_size = ctx->log_wqs_range_sz;

	ret = ibv_cmd_create_wq(context, attr, &rwq->wq, &cmd.ibv_cmd,
				sizeof(cmd), &resp, sizeof(resp));
	if (ret)
		goto err_db;
	mlx4_mark_defined(&resp, sizeof(resp));

	qp->qpn = rwq->wq.wq_num;
	ret = mlx4_table_insert(&ctx->qp_table, qp->qpn, qp);
	if (ret) {
		ibv_cmd_destroy_wq(&rwq->wq);
		goto err_db;
	}

	/*
	 * The range was this WQ's to open: the kernel refuses another range
	 * while it has numbers left, and the WQs that follow take them.
	 */
	ctx->log_wqs_range_sz = 0;
	qp->rq.cq = to_mcq(attr->cq);
	rwq->wq.post_recv = mlx4_post_wq_recv;
	attr->max_wr = qp->rq.wqe_cnt;
	attr->max_sge = qp->rq.max_gs;
	return &rwq->wq;

err_db:
	mlx4_free_queue_db(ctx, qp->db, &qp->dbr);
err_buf:
	mlx4_free_qp_buf(qp);
err_free:
	mlx4_release_parent_domain(qp->domain);
	free(rwq);
	errno = ret;
	return NULL;
}

int mlx4_modify_wq(struct ibv_wq *ibwq, struct ibv_wq_attr *attr)
{
	struct mlx4_qp *qp = &to_mrwq(ibwq)->qp;
	struct mlx4_modify_wq cmd = {};
	int ret;

	ret = ibv_cmd_modify_wq(ibwq, attr, &cmd.ibv_cmd, sizeof(cmd));
	if (ret)
		return ret;

	if ((attr->attr_mask & IBV_WQ_ATTR_STATE) &&
	    attr->wq_state == IBV_WQS_RESET) {
		mlx4_qp_clean_cqs(qp, NULL, ibwq->cq);
		mlx4_lock(&qp->rq.lock);
		qp->rq.head = qp->rq.tail = 0;
		*qp->db = 0;
		mlx4_unlock(&qp->rq.lock);
	}
	return 0;
}

int mlx4_destroy_wq(struct ibv_wq *ibwq)
{
	struct mlx4_rwq *rwq = to_mrwq(ibwq);
	struct mlx4_qp *qp = &rwq->qp;
	int ret;

	ret = ibv_cmd_destroy_wq(ibwq);
	if (ret)
		return ret;

	mlx4_qp_clean_cqs(qp, NULL, ibwq->cq);
	mlx4_table_remove(&qp->ctx->qp_table, qp->qpn);
	mlx4_free_queue_db(qp->ctx, qp->db, &qp->dbr);
	mlx4_free_qp_buf(qp);
	mlx4_release_parent_domain(qp->domain);
	free(rwq);
	return 0;
}
