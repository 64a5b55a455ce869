/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The queue pair's control verbs: creation (sizing the receive queue,
 * allocating the buffer both queues share, the kernel's CREATE_QP for
 * every QP type), opening an XRC target, state changes, queries and
 * destruction.  What a WQE looks like is in wqe.h, how the send queue
 * is sized and the data path in qp.c and wr.c.
 */
#include <config.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "annotate.h"
#include "mlx4.h"

/* ---------------------------------------------------------------------
 * Creation
 */

struct mlx4_create_qp {
	struct ibv_create_qp		ibv_cmd;
	struct mlx4_ib_create_qp	drv;
};

struct mlx4_create_qp_ex {
	struct ibv_create_qp_ex		ibv_cmd;
	struct mlx4_ib_create_qp	drv;
};

static int qp_has_rq(struct ibv_qp_init_attr_ex *attr)
{
	return !attr->srq && attr->qp_type != IBV_QPT_XRC_SEND &&
	       attr->qp_type != IBV_QPT_XRC_RECV;
}

/* The receive queue, sized as the kernel sizes it. */
void mlx4_calc_rq_size(struct mlx4_qp *qp, struct ibv_qp_cap *cap,
		       uint32_t inl_recv_sz)
{
	unsigned int wqe_size;

	qp->rq.wqe_cnt = mlx4_roundup_pow2(cap->max_recv_wr);
	qp->rq.max_gs = mlx4_roundup_pow2(cap->max_recv_sge);
	wqe_size = qp->rq.max_gs * sizeof(struct mlx4_wqe_data_seg);
	if (inl_recv_sz > wqe_size)
		wqe_size = mlx4_roundup_pow2(inl_recv_sz);
	qp->rq.wqe_shift = mlx4_ilog2(wqe_size);
	qp->rq.mask = qp->rq.wqe_cnt - 1;
	qp->rq.max_post = qp->rq.wqe_cnt;
}

/*
 * Without a parent domain's allocator: the context's, if the application
 * gave one (mlx4dv_set_context_attr), else ours.
 */
static int alloc_default_qp_buf(struct mlx4_qp *qp, size_t size, int page_size)
{
	struct mlx4_context *ctx = qp->ctx;
	int ret;

	if (!ctx->extern_alloc.alloc)
		return mlx4_alloc_buf(&qp->buf, size, page_size);
	ret = mlx4_alloc_buf_extern(ctx, &qp->buf, size);
	if (!ret)
		qp->buf_is_extern = 1;
	return ret;
}

/*
 * The buffer of both queues, laid out as the device finds them: the
 * queue with the larger stride first, the send queue first on a tie.
 * It comes from the allocator of qp->domain, the parent domain, if that
 * gives one; @resource_type tells it a QP's from a WQ's.
 */
int mlx4_alloc_qp_buf(struct mlx4_qp *qp, int page_size,
		      uint64_t resource_type)
{
	size_t sq_size = (size_t)qp->sq.wqe_cnt << qp->sq.wqe_shift;
	size_t rq_size = (size_t)qp->rq.wqe_cnt << qp->rq.wqe_shift;
	size_t size = sq_size + rq_size;
	int ret = ENOMEM;

	qp->sq.wrid = malloc(qp->sq.wqe_cnt * sizeof(uint64_t));
	if (!qp->sq.wrid)
		return ENOMEM;
	if (qp->rq.wqe_cnt) {
		qp->rq.wrid = malloc(qp->rq.wqe_cnt * sizeof(uint64_t));
		if (!qp->rq.wrid)
			goto err_wrid;
	}

	ret = mlx4_alloc_domain_mem(qp->domain, &qp->buf,
				    mlx4_page_align(size, page_size),
				    page_size, resource_type);
	if (!ret && !qp->buf.buf)
		ret = alloc_default_qp_buf(qp, size, page_size);
	if (ret)
		goto err_wrid;
	memset(qp->buf.buf, 0, size);

	/* The queue with the larger stride goes first. */
	if (qp->rq.wqe_shift > qp->sq.wqe_shift) {
		qp->rq.offset = 0;
		qp->sq.offset = rq_size;
	} else {
		qp->sq.offset = 0;
		qp->rq.offset = sq_size;
	}
	qp->sq.buf = (char *)qp->buf.buf + qp->sq.offset;
	qp->rq.buf = (char *)qp->buf.buf + qp->rq.offset;
	qp->sq_bytes = sq_size;
	qp->sq_end = (char *)qp->sq.buf + sq_size;
	qp->sq_stamp_offset = (size_t)qp->sq_spare_wqes << qp->sq.wqe_shift;
	return 0;

err_wrid:
	free(qp->rq.wrid);
	free(qp->sq.wrid);
	qp->rq.wrid = qp->sq.wrid = NULL;
	return ret;
}

void mlx4_free_qp_buf(struct mlx4_qp *qp)
{
	if (qp->buf_is_extern)
		mlx4_free_buf_extern(qp->ctx, &qp->buf);
	else
		mlx4_free_buf(&qp->buf);
	free(qp->rq.wrid);
	free(qp->sq.wrid);
}

static void init_qp_indices(struct mlx4_qp *qp)
{
	qp->sq.head = qp->sq.tail = 0;
	qp->rq.head = qp->rq.tail = 0;
}

static int check_qp_caps(struct mlx4_context *ctx, struct ibv_qp_cap *cap,
			 int has_rq)
{
	if (cap->max_send_wr > (uint32_t)ctx->max_qp_wr ||
	    cap->max_send_sge > (uint32_t)ctx->max_sge)
		return EINVAL;
	if (has_rq && (cap->max_recv_wr > (uint32_t)ctx->max_qp_wr ||
		       cap->max_recv_wr > MLX4_MAX_RQ_WQES ||
		       cap->max_recv_sge > (uint32_t)ctx->max_sge))
		return EINVAL;
	if (cap->max_inline_data > MLX4_MAX_WQE_SIZE)
		return EINVAL;
	return 0;
}

/*
 * Size both work queues for @attr and allocate them: all that comes
 * before asking the kernel.  @attr's receive caps become what the
 * kernel is told (at least one WQE and one SGE, or none without RQ).
 * qp->domain, the parent domain if any, says where the memory comes
 * from and whether the queues are locked.
 */
int mlx4_qp_alloc_queues(struct mlx4_qp *qp, struct ibv_qp_init_attr_ex *attr)
{
	struct mlx4_context *ctx = qp->ctx;
	int single_threaded = mlx4_domain_single_threaded(qp->domain);
	int has_rq = qp_has_rq(attr);
	int ret;

	ret = check_qp_caps(ctx, &attr->cap, has_rq);
	if (ret)
		return ret;

	mlx4_lock_init(&qp->sq.lock, single_threaded);
	mlx4_lock_init(&qp->rq.lock, single_threaded);

	ret = mlx4_calc_sq_size(qp, attr->qp_type, &attr->cap);
	if (ret)
		return ret;

	if (has_rq) {
		if (!attr->cap.max_recv_wr)
			attr->cap.max_recv_wr = 1;
		if (!attr->cap.max_recv_sge)
			attr->cap.max_recv_sge = 1;
		mlx4_calc_rq_size(qp, &attr->cap, qp->inl_recv_sz);
		/*
		 * The kernel sets the stride to the power of two at or below
		 * the size it is told: tell it the stride written with.
		 */
		if (qp->inl_recv_sz)
			qp->inl_recv_sz = 1u << qp->rq.wqe_shift;
	} else {
		attr->cap.max_recv_wr = 0;
		attr->cap.max_recv_sge = 0;
	}

	ret = mlx4_alloc_qp_buf(qp, mlx4_page_size(&ctx->ibv_ctx.context),
				MLX4DV_RES_TYPE_QP);
	if (ret)
		return ret;
	mlx4_init_sq_ownership(qp);

	if (has_rq) {
		ret = mlx4_alloc_queue_db(ctx, qp->domain, &qp->dbr, &qp->db);
		if (ret) {
			mlx4_free_qp_buf(qp);
			return ret;
		}
	}
	return 0;
}

void mlx4_qp_free_queues(struct mlx4_qp *qp)
{
	mlx4_free_queue_db(qp->ctx, qp->db, &qp->dbr);
	qp->db = NULL;
	mlx4_free_qp_buf(qp);
}

/*
 * The kernel gave the QP its number: derive the doorbell values, make
 * the QP findable by its completions, and tell the caller in @cap what
 * the queues really hold.
 */
int mlx4_qp_ready(struct mlx4_qp *qp, struct ibv_qp_init_attr_ex *attr,
		  struct ibv_qp_cap *cap)
{
	struct mlx4_context *ctx = qp->ctx;
	int ret;

	qp->qpn = qp->verbs_qp.qp.qp_num;
	qp->doorbell_qpn = htobe32(qp->qpn << 8);
	qp->sdb = (char *)ctx->uar + MLX4_SEND_DOORBELL;
	qp->sq_signal_bits = attr->sq_sig_all ?
			     htobe32(MLX4_WQE_CTRL_CQ_UPDATE) : 0;
	/*
	 * The context's one BlueFlame register is shared by all its QPs
	 * under a lock: a thread domain's QPs, which take none, ring the
	 * doorbell instead.
	 */
	qp->bf_max_size = ctx->bf_page &&
			  !mlx4_domain_single_threaded(qp->domain) ?
			  ctx->bf_buf_size / 16 : 0;
	if (qp->verbs_qp.qp.send_cq)
		qp->sq.cq = to_mcq(qp->verbs_qp.qp.send_cq);
	if (qp->verbs_qp.qp.recv_cq)
		qp->rq.cq = to_mcq(qp->verbs_qp.qp.recv_cq);
	init_qp_indices(qp);

	ret = mlx4_table_insert(&ctx->qp_table, qp->qpn, qp);
	if (ret)
		return ret;

	mlx4_set_sq_limits(qp, attr->qp_type, cap);
	cap->max_recv_wr = qp->db ? qp->rq.wqe_cnt : 0;
	cap->max_recv_sge = qp->db ? qp->rq.max_gs : 0;
	return 0;
}

/* A QP without queues of ours (the kernel's or the WQs' hold them). */
static struct mlx4_qp *queueless_qp(struct ibv_context *context)
{
	struct mlx4_qp *qp = calloc(1, sizeof(*qp));

	if (!qp) {
		errno = ENOMEM;
		return NULL;
	}
	qp->ctx = to_mctx(context);
	qp->no_queues = 1;
	return qp;
}

/* The end of queueless_qp()'s QP: the kernel's answer @ret, @resp. */
static struct ibv_qp *queueless_qp_made(struct mlx4_qp *qp, int ret,
					void *resp, size_t resp_size)
{
	if (ret) {
		free(qp);
		errno = ret;
		return NULL;
	}
	mlx4_mark_defined(resp, resp_size);
	qp->qpn = qp->verbs_qp.qp.qp_num;
	return &qp->verbs_qp.qp;
}

/*
 * A QP that lives in the kernel only, with no queues of ours: an XRC
 * target QP, created from @create, or opened by number from @open.
 */
static struct ibv_qp *kernel_only_qp(struct ibv_context *context,
				     struct ibv_qp_init_attr_ex *create,
				     struct ibv_qp_open_attr *open)
{
	struct ib_uverbs_create_qp_resp resp = {};
	struct mlx4_qp *qp;
	int ret;

	qp = queueless_qp(context);
	if (!qp)
		return NULL;

	if (create) {
		struct ibv_create_qp cmd = {};

		ret = ibv_cmd_create_qp_ex(context, &qp->verbs_qp, create,
					   &cmd, sizeof(cmd),
					   &resp, sizeof(resp));
	} else {
		struct ibv_open_qp cmd = {};

		ret = ibv_cmd_open_qp(context, &qp->verbs_qp,
				      sizeof(qp->verbs_qp), open, &cmd,
				      sizeof(cmd), &resp, sizeof(resp));
	}
	return queueless_qp_made(qp, ret, &resp, sizeof(resp));
}

static int create_qp_cmd(struct mlx4_qp *qp, struct ibv_context *context,
			 struct ibv_qp_init_attr_ex *attr)
{
	struct mlx4_ib_create_qp drv = {
		.buf_addr = (uintptr_t)qp->buf.buf,
		.db_addr = (uintptr_t)qp->db,
		.log_sq_bb_count = mlx4_ilog2(qp->sq.wqe_cnt),
		.log_sq_stride = qp->sq.wqe_shift,
		.inl_recv_sz = qp->inl_recv_sz,
	};
	int ret;

	if (attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) {
		struct mlx4_create_qp_ex cmd = {};
		struct ib_uverbs_ex_create_qp_resp resp = {};

		cmd.drv = drv;
		ret = ibv_cmd_create_qp_ex2(context, &qp->verbs_qp, attr,
					    &cmd.ibv_cmd, sizeof(cmd),
					    &resp, sizeof(resp) PABI65(, NULL));
		mlx4_mark_defined(&resp, sizeof(resp));
	} else {
		struct mlx4_create_qp cmd = {};
		struct ib_uverbs_create_qp_resp resp = {};

		cmd.drv = drv;
		ret = ibv_cmd_create_qp_ex(context, &qp->verbs_qp, attr,
					   &cmd.ibv_cmd, sizeof(cmd),
					   &resp, sizeof(resp));
		mlx4_mark_defined(&resp, sizeof(resp));
	}
	return ret;
}

/*
 * An RSS QP spreads received packets over the WQs of an indirection
 * table; it has no queues of its own.
 */
struct mlx4_create_qp_rss {
	struct ibv_create_qp_ex		ibv_cmd;
	struct mlx4_ib_create_qp_rss	drv;
};

static struct ibv_qp *create_rss_qp(struct ibv_context *context,
				    struct ibv_qp_init_attr_ex *attr)
{
	struct ib_uverbs_ex_create_qp_resp resp = {};
	struct mlx4_create_qp_rss cmd = {};
	struct ibv_rx_hash_conf *conf = &attr->rx_hash_conf;
	struct mlx4_qp *qp;
	int ret;

	if (attr->qp_type != IBV_QPT_RAW_PACKET ||
	    !(attr->comp_mask & IBV_QP_INIT_ATTR_RX_HASH) ||
	    !(attr->comp_mask & IBV_QP_INIT_ATTR_IND_TABLE) ||
	    conf->rx_hash_function != IBV_RX_HASH_FUNC_TOEPLITZ ||
	    conf->rx_hash_key_len != sizeof(cmd.drv.rx_hash_key) ||
	    !conf->rx_hash_key) {
		errno = EINVAL;
		return NULL;
	}

	qp = queueless_qp(context);
	if (!qp)
		return NULL;

	cmd.drv.rx_hash_fields_mask = conf->rx_hash_fields_mask;
	cmd.drv.rx_hash_function = MLX4_IB_RX_HASH_FUNC_TOEPLITZ;
	memcpy(cmd.drv.rx_hash_key, conf->rx_hash_key,
	       sizeof(cmd.drv.rx_hash_key));

	ret = ibv_cmd_create_qp_ex2(context, &qp->verbs_qp, attr, &cmd.ibv_cmd,
				    sizeof(cmd), &resp, sizeof(resp)
				    PABI65(, NULL));
	return queueless_qp_made(qp, ret, &resp, sizeof(resp));
}

enum {
	MLX4_CREATE_QP_COMP_MASK = IBV_QP_INIT_ATTR_PD |
				   IBV_QP_INIT_ATTR_XRCD |
				   IBV_QP_INIT_ATTR_CREATE_FLAGS |
				   IBV_QP_INIT_ATTR_SEND_OPS_FLAGS |
				   IBV_QP_INIT_ATTR_MAX_TSO_HEADER,
	MLX4_CREATE_QP_FLAGS = IBV_QP_CREATE_BLOCK_SELF_MCAST_LB,
};

/*
 * Why @attr is refused before anything is made, or 0: what this provider
 * does not know, a QP type it cannot make, an XRC target QP without its
 * XRC domain, another QP without its PD.
 */
static int create_qp_refused(const struct ibv_qp_init_attr_ex *attr)
{
	if (attr->comp_mask & ~(uint32_t)MLX4_CREATE_QP_COMP_MASK)
		return EOPNOTSUPP;
	if ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) &&
	    (attr->create_flags & ~(uint32_t)MLX4_CREATE_QP_FLAGS))
		return EOPNOTSUPP;

	switch (attr->qp_type) {
	case IBV_QPT_XRC_RECV:
		if (!(attr->comp_mask & IBV_QP_INIT_ATTR_XRCD) || !attr->xrcd)
			return EINVAL;
		return 0;
	case IBV_QPT_RC:
	case IBV_QPT_UC:
	case IBV_QPT_UD:
	case IBV_QPT_XRC_SEND:
	case IBV_QPT_RAW_PACKET:	/* the kernel asks for CAP_NET_RAW */
		break;
	default:
		return EOPNOTSUPP;
	}
	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd)
		return EINVAL;
	return 0;
}

/*
 * LSO (raw packet QPs): each WQE keeps room for the LSO segment, a
 * 4-byte word and the packet headers, to the next 16 bytes.
 */
static int set_tso_room(struct mlx4_qp *qp, struct ibv_qp_init_attr_ex *attr)
{
	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_MAX_TSO_HEADER))
		return 0;
	if (attr->qp_type != IBV_QPT_RAW_PACKET ||
	    attr->max_tso_header > MLX4_MAX_TSO_HEADER)
		return EINVAL;
	qp->max_tso_header = attr->max_tso_header;
	qp->tso_room = (sizeof(struct mlx4_wqe_lso_seg) +
			attr->max_tso_header + 15) & ~15;
	/* The WQE size says it all; uverbs has no such attribute. */
	attr->comp_mask &= ~(uint32_t)IBV_QP_INIT_ATTR_MAX_TSO_HEADER;
	return 0;
}

static struct ibv_qp *create_qp(struct ibv_context *context,
				struct ibv_qp_init_attr_ex *user_attr,
				uint32_t inl_recv_sz)
{
	struct mlx4_context *ctx = to_mctx(context);
	struct ibv_qp_init_attr_ex attr = *user_attr;
	struct mlx4_qp *qp;
	int ret;

	if (attr.comp_mask & (IBV_QP_INIT_ATTR_RX_HASH |
			      IBV_QP_INIT_ATTR_IND_TABLE))
		return create_rss_qp(context, &attr);
	ret = create_qp_refused(&attr);
	if (ret) {
		errno = ret;
		return NULL;
	}
	if (attr.qp_type == IBV_QPT_XRC_RECV)
		return kernel_only_qp(context, &attr, NULL);
	if (inl_recv_sz &&
	    (!qp_has_rq(&attr) || inl_recv_sz > ctx->max_inl_recv_sz)) {
		errno = EINVAL;
		return NULL;
	}

	qp = calloc(1, sizeof(*qp));
	if (!qp) {
		errno = ENOMEM;
		return NULL;
	}
	qp->ctx = ctx;
	qp->inl_recv_sz = inl_recv_sz;
	qp->domain = mlx4_hold_parent_domain(attr.pd);
	ret = set_tso_room(qp, &attr);
	if (ret)
		goto err_free;

	ret = mlx4_qp_alloc_queues(qp, &attr);
	if (ret)
		goto err_free;

	ret = create_qp_cmd(qp, context, &attr);
	if (ret)
		goto err_queues;

	ret = mlx4_qp_ready(qp, &attr, &user_attr->cap);
	if (ret)
		goto err_destroy;
	if (attr.comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) {
		ret = mlx4_qp_init_wr_api(qp, attr.send_ops_flags);
		if (ret)
			goto err_destroy;
	}
	return &qp->verbs_qp.qp;

err_destroy:
	ibv_cmd_destroy_qp(&qp->verbs_qp.qp);
err_queues:
	mlx4_qp_free_queues(qp);
err_free:
	mlx4_release_parent_domain(qp->domain);
	free(qp);
	errno = ret;
	return NULL;
}

struct ibv_qp *mlx4_create_qp_ex(struct ibv_context *context,
				 struct ibv_qp_init_attr_ex *attr)
{
	return create_qp(context, attr, 0);
}

struct ibv_qp *mlx4_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	struct ibv_qp_init_attr_ex attr_ex = {
		.qp_context = attr->qp_context,
		.send_cq = attr->send_cq,
		.recv_cq = attr->recv_cq,
		.srq = attr->srq,
		.cap = attr->cap,
		.qp_type = attr->qp_type,
		.sq_sig_all = attr->sq_sig_all,
		.comp_mask = IBV_QP_INIT_ATTR_PD,
		.pd = pd,
	};
	struct ibv_qp *qp;

	qp = create_qp(pd->context, &attr_ex, 0);
	if (qp)
		attr->cap = attr_ex.cap;
	return qp;
}

struct ibv_qp *mlx4dv_create_qp(struct ibv_context *context,
				struct ibv_qp_init_attr_ex *attr,
				struct mlx4dv_qp_init_attr *mlx4_attr)
{
	uint32_t inl_recv_sz = 0;
	struct ibv_qp *qp;

	if (mlx4_attr->comp_mask & ~(uint64_t)MLX4DV_QP_INIT_ATTR_MASK_INL_RECV) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (mlx4_attr->comp_mask & MLX4DV_QP_INIT_ATTR_MASK_INL_RECV)
		inl_recv_sz = mlx4_attr->inl_recv_sz;
	qp = create_qp(context, attr, inl_recv_sz);
	/* What a receive WQE really holds inline: its stride. */
	if (qp && inl_recv_sz)
		mlx4_attr->inl_recv_sz = to_mqp(qp)->inl_recv_sz;
	return qp;
}

struct ibv_qp *mlx4_open_qp(struct ibv_context *context,
			    struct ibv_qp_open_attr *attr)
{
	return kernel_only_qp(context, NULL, attr);
}

/* ---------------------------------------------------------------------
 * State changes, queries, destruction
 */

/* Drop the QP's completions from its CQs: it will produce no more. */
void mlx4_qp_clean_cqs(struct mlx4_qp *qp, struct ibv_cq *ib_send_cq,
		       struct ibv_cq *ib_recv_cq)
{
	struct ibv_srq *ibsrq = qp->verbs_qp.qp.srq;
	struct mlx4_cq *send_cq = ib_send_cq ? to_mcq(ib_send_cq) : NULL;
	struct mlx4_cq *recv_cq = ib_recv_cq ? to_mcq(ib_recv_cq) : NULL;
	struct mlx4_srq *srq = ibsrq ? to_msrq(ibsrq) : NULL;

	mlx4_lock_cqs(send_cq, recv_cq);
	if (recv_cq)
		mlx4_cq_clean(recv_cq, qp->qpn, srq);
	if (send_cq && send_cq != recv_cq)
		mlx4_cq_clean(send_cq, qp->qpn, NULL);
	mlx4_unlock_cqs(send_cq, recv_cq);
}

static void qp_clean_cqs(struct mlx4_qp *qp)
{
	mlx4_qp_clean_cqs(qp, qp->verbs_qp.qp.send_cq, qp->verbs_qp.qp.recv_cq);
}

/* Back to RESET: the queues start over, empty and invalid. */
static void qp_reset_queues(struct mlx4_qp *qp)
{
	qp_clean_cqs(qp);

	mlx4_lock(&qp->sq.lock);
	mlx4_lock(&qp->rq.lock);
	init_qp_indices(qp);
	mlx4_init_sq_ownership(qp);
	if (qp->db)
		*qp->db = 0;
	mlx4_unlock(&qp->rq.lock);
	mlx4_unlock(&qp->sq.lock);
}

/*
 * An RSS QP (a raw packet QP without queues) takes the state and the
 * port, up to RTR: rdma-core's _mlx4_modify_qp_rss() refuses the rest
 * before asking the kernel, whose _mlx4_ib_modify_qp() allows RESET to
 * INIT and INIT to RTR only.
 */
static int rss_modify_refused(struct mlx4_qp *qp, struct ibv_qp_attr *attr,
			      int attr_mask)
{
	if (!qp->no_queues || qp->verbs_qp.qp.qp_type != IBV_QPT_RAW_PACKET)
		return 0;
	if ((attr_mask & ~(IBV_QP_STATE | IBV_QP_PORT)) ||
	    ((attr_mask & IBV_QP_STATE) && attr->qp_state > IBV_QPS_RTR))
		return EOPNOTSUPP;
	return 0;
}

int mlx4_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int attr_mask)
{
	struct mlx4_qp *qp = to_mqp(ibqp);
	struct ibv_modify_qp cmd = {};
	int link_layer = -1;
	int ret;

	ret = rss_modify_refused(qp, attr, attr_mask);
	if (ret)
		return ret;
	if (attr_mask & IBV_QP_PORT) {
		link_layer = mlx4_port_link_layer(qp->ctx, attr->port_num);
		if (link_layer < 0)
			return EINVAL;
	}

	ret = ibv_cmd_modify_qp(ibqp, attr, attr_mask, &cmd, sizeof(cmd));
	if (ret)
		return ret;

	if (link_layer >= 0) {
		qp->link_layer = link_layer;
		mlx4_qp_update_csum(qp);
	}

	if (!qp->no_queues && (attr_mask & IBV_QP_STATE) &&
	    attr->qp_state == IBV_QPS_RESET)
		qp_reset_queues(qp);
	return 0;
}

int mlx4_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int attr_mask,
		  struct ibv_qp_init_attr *init_attr)
{
	struct mlx4_qp *qp = to_mqp(ibqp);
	struct ibv_query_qp cmd = {};
	int ret;

	ret = ibv_cmd_query_qp(ibqp, attr, attr_mask, init_attr, &cmd,
			       sizeof(cmd));
	if (ret)
		return ret;
	if (qp->no_queues)
		return 0;

	/* The kernel does not know our sizes; report what we built. */
	attr->cap.max_send_wr = qp->sq.max_post;
	attr->cap.max_send_sge = qp->sq.max_gs;
	attr->cap.max_inline_data = qp->max_inline_data;
	attr->cap.max_recv_wr = qp->db ? qp->rq.wqe_cnt : 0;
	attr->cap.max_recv_sge = qp->db ? qp->rq.max_gs : 0;
	init_attr->cap = attr->cap;
	return 0;
}

int mlx4_destroy_qp(struct ibv_qp *ibqp)
{
	struct mlx4_qp *qp = to_mqp(ibqp);
	int ret;

	ret = ibv_cmd_destroy_qp(ibqp);
	if (ret)
		return ret;

	if (!qp->no_queues) {
		qp_clean_cqs(qp);
		mlx4_table_remove(&qp->ctx->qp_table, qp->qpn);
		mlx4_qp_free_queues(qp);
	}
	mlx4_release_parent_domain(qp->domain);
	free(qp->wrb);
	free(qp);
	return 0;
}
