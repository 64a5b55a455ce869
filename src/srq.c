/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Shared receive queues, plain and XRC.
 *
 * An SRQ's WQEs are consumed in whatever order messages arrive, so its
 * buffer is a linked free list: each WQE starts with a next segment
 * naming the following WQE.  Posting takes the WQE at head; a
 * completion returns its WQE behind tail.  head == tail means only the
 * spare WQE is left, and the queue is full.
 */
#include <config.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "annotate.h"
#include "mlx4.h"
#include "mmio.h"

static inline struct mlx4_wqe_srq_next_seg *get_srq_wqe(struct mlx4_srq *srq,
							 unsigned int n)
{
	return (struct mlx4_wqe_srq_next_seg *)
		((char *)srq->wqe_base + (n << srq->wqe_shift));
}

/* Called from the CQ with the completed WQE's index. */
void mlx4_free_srq_wqe(struct mlx4_srq *srq, unsigned int ind)
{
	mlx4_lock(&srq->lock);
	get_srq_wqe(srq, srq->tail)->next_wqe_index = htobe16(ind);
	srq->tail = ind;
	mlx4_unlock(&srq->lock);
}

int mlx4_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
		       struct ibv_recv_wr **bad_wr)
{
	struct mlx4_srq *srq = to_msrq(ibsrq);
	unsigned int nreq;
	int ret = 0;

	mlx4_lock(&srq->lock);

	for (nreq = 0; wr; ++nreq, wr = wr->next) {
		struct mlx4_wqe_srq_next_seg *next;
		struct mlx4_wqe_data_seg *dseg;
		unsigned int ind;
		int i;

		if (unlikely((unsigned int)wr->num_sge > srq->max_gs)) {
			ret = ENOMEM;
			*bad_wr = wr;
			break;
		}
		if (unlikely(srq->head == srq->tail)) {
			ret = ENOMEM;
			*bad_wr = wr;
			break;
		}

		ind = srq->head;
		next = get_srq_wqe(srq, ind);
		srq->head = be16toh(next->next_wqe_index);
		srq->wrid[ind] = wr->wr_id;

		dseg = (struct mlx4_wqe_data_seg *)(next + 1);
		for (i = 0; i < wr->num_sge; i++) {
			dseg[i].byte_count = htobe32(wr->sg_list[i].length);
			dseg[i].lkey = htobe32(wr->sg_list[i].lkey);
			dseg[i].addr = htobe64(wr->sg_list[i].addr);
		}
		if ((unsigned int)i < srq->max_gs) {
			dseg[i].byte_count = 0;
			dseg[i].lkey = htobe32(MLX4_INVALID_LKEY);
			dseg[i].addr = 0;
		}
	}

	if (nreq) {
		srq->counter += nreq;
		/* The WQEs are in place before the record counts them. */
		udma_to_device_barrier();
		*srq->db = htobe32(srq->counter);
	}

	mlx4_unlock(&srq->lock);
	return ret;
}

/*
 * Buffer and free list: WQE i links to i + 1, the last back to 0.  Every
 * scatter entry starts with the invalid lkey, as rdma-core's do: a WQE
 * the device reads is cut short there even before its first post.
 */
static int srq_init_buf(struct mlx4_srq *srq, struct mlx4_context *ctx)
{
	int page_size = mlx4_page_size(&ctx->ibv_ctx.context);
	size_t size = (size_t)srq->max << srq->wqe_shift;
	unsigned int entries = ((1U << srq->wqe_shift) -
				sizeof(struct mlx4_wqe_srq_next_seg)) /
			       sizeof(struct mlx4_wqe_data_seg);
	unsigned int j;
	int i, ret;

	srq->wrid = calloc(srq->max, sizeof(uint64_t));
	if (!srq->wrid)
		return ENOMEM;

	ret = mlx4_alloc_queue_buf(ctx, srq->domain, &srq->buf, size, page_size,
				   MLX4DV_RES_TYPE_SRQ);
	if (ret) {
		free(srq->wrid);
		srq->wrid = NULL;
		return ret;
	}
	memset(srq->buf.buf, 0, size);
	srq->wqe_base = srq->buf.buf;

	for (i = 0; i < srq->max; i++) {
		struct mlx4_wqe_srq_next_seg *next = get_srq_wqe(srq, i);
		struct mlx4_wqe_data_seg *dseg = (void *)(next + 1);

		next->next_wqe_index = htobe16((i + 1) & (srq->max - 1));
		for (j = 0; j < entries; j++)
			dseg[j].lkey = htobe32(MLX4_INVALID_LKEY);
	}

	srq->head = 0;
	srq->tail = srq->max - 1;
	srq->counter = 0;
	return 0;
}

/* Geometry, as the kernel computes it: one spare WQE, strides >= 32. */
static int calc_srq_size(struct mlx4_srq *srq, struct mlx4_context *ctx,
			 struct ibv_srq_attr *attr)
{
	unsigned int desc;

	if (attr->max_wr > (uint32_t)ctx->max_srq_wr ||
	    attr->max_sge > (uint32_t)ctx->max_srq_sge)
		return EINVAL;

	srq->max = mlx4_roundup_pow2(attr->max_wr + 1);
	srq->mask = srq->max - 1;
	desc = mlx4_roundup_pow2(sizeof(struct mlx4_wqe_srq_next_seg) +
				 attr->max_sge *
				 sizeof(struct mlx4_wqe_data_seg));
	if (desc < 1U << MLX4_SRQ_MIN_STRIDE)
		desc = 1U << MLX4_SRQ_MIN_STRIDE;
	srq->wqe_shift = mlx4_ilog2(desc);
	srq->max_gs = (desc - sizeof(struct mlx4_wqe_srq_next_seg)) /
		      sizeof(struct mlx4_wqe_data_seg);
	return 0;
}

/*
 * Buffer, free list and doorbell record for @attr's sizes, from the
 * allocator of srq->domain, the parent domain, if it has one.  The lock
 * stays even under a thread domain: the QPs that share an SRQ and the
 * CQs whose polls give its WQEs back need not be of one thread.
 */
int mlx4_srq_alloc_queue(struct mlx4_srq *srq, struct mlx4_context *ctx,
			 struct ibv_srq_attr *attr)
{
	int ret;

	mlx4_lock_init(&srq->lock, 0);
	ret = calc_srq_size(srq, ctx, attr);
	if (ret)
		return ret;

	ret = srq_init_buf(srq, ctx);
	if (ret)
		return ret;

	ret = mlx4_alloc_queue_db(ctx, srq->domain, &srq->dbr, &srq->db);
	if (ret) {
		mlx4_free_buf(&srq->buf);
		free(srq->wrid);
		srq->wrid = NULL;
		return ret;
	}
	return 0;
}

void mlx4_srq_free_queue(struct mlx4_srq *srq, struct mlx4_context *ctx)
{
	mlx4_free_queue_db(ctx, srq->db, &srq->dbr);
	srq->db = NULL;
	mlx4_free_buf(&srq->buf);
	free(srq->wrid);
	srq->wrid = NULL;
}

struct mlx4_create_srq {
	struct ibv_create_srq		ibv_cmd;
	struct mlx4_ib_create_srq	drv;
};

struct mlx4_create_xsrq {
	struct ibv_create_xsrq		ibv_cmd;
	struct mlx4_ib_create_srq	drv;
};

struct mlx4_create_srq_resp {
	struct ib_uverbs_create_srq_resp ibv_resp;
	struct mlx4_ib_create_srq_resp	drv;
};

static int create_srq_cmd(struct mlx4_srq *srq, struct ibv_context *context,
			  struct ibv_srq_init_attr_ex *attr)
{
	struct mlx4_create_srq_resp resp = {};
	int ret;

	if (srq->is_xrc) {
		struct mlx4_create_xsrq cmd = {};

		cmd.drv.buf_addr = (uintptr_t)srq->buf.buf;
		cmd.drv.db_addr = (uintptr_t)srq->db;
		ret = ibv_cmd_create_srq_ex(context, &srq->verbs_srq, attr,
					    &cmd.ibv_cmd, sizeof(cmd),
					    &resp.ibv_resp, sizeof(resp));
	} else {
		struct mlx4_create_srq cmd = {};
		struct ibv_srq_init_attr basic;

		/* libibverbs copies it whole, padding included. */
		memset(&basic, 0, sizeof(basic));
		basic.srq_context = attr->srq_context;
		basic.attr = attr->attr;

		cmd.drv.buf_addr = (uintptr_t)srq->buf.buf;
		cmd.drv.db_addr = (uintptr_t)srq->db;
		ret = ibv_cmd_create_srq(attr->pd, &srq->verbs_srq.srq, &basic,
					 &cmd.ibv_cmd, sizeof(cmd),
					 &resp.ibv_resp, sizeof(resp));
	}
	if (ret)
		return ret;

	mlx4_mark_defined(&resp, sizeof(resp));
	srq->srqn = resp.ibv_resp.srqn ? resp.ibv_resp.srqn : resp.drv.srqn;
	return 0;
}

static struct ibv_srq *create_srq(struct ibv_context *context,
				  struct ibv_srq_init_attr_ex *attr)
{
	struct mlx4_context *ctx = to_mctx(context);
	struct mlx4_srq *srq;
	int ret;

	srq = calloc(1, sizeof(*srq));
	if (!srq) {
		errno = ENOMEM;
		return NULL;
	}
	srq->is_xrc = attr->srq_type == IBV_SRQT_XRC;
	srq->domain = mlx4_hold_parent_domain(attr->pd);

	ret = mlx4_srq_alloc_queue(srq, ctx, &attr->attr);
	if (ret)
		goto err_free;

	ret = create_srq_cmd(srq, context, attr);
	if (ret)
		goto err_queue;

	if (srq->is_xrc) {
		srq->verbs_srq.srq_type = IBV_SRQT_XRC;
		srq->verbs_srq.srq_num = srq->srqn;
		srq->verbs_srq.cq = attr->cq;
		srq->verbs_srq.xrcd = container_of(attr->xrcd, struct verbs_xrcd,
						   xrcd);
		ret = mlx4_table_insert(&ctx->xsrq_table, srq->srqn, srq);
		if (ret) {
			ibv_cmd_destroy_srq(&srq->verbs_srq.srq);
			goto err_queue;
		}
	}

	attr->attr.max_wr = srq->max - 1;
	attr->attr.max_sge = srq->max_gs;
	return &srq->verbs_srq.srq;

err_queue:
	mlx4_srq_free_queue(srq, ctx);
err_free:
	mlx4_release_parent_domain(srq->domain);
	free(srq);
	errno = ret;
	return NULL;
}

struct ibv_srq *mlx4_create_srq(struct ibv_pd *pd,
				struct ibv_srq_init_attr *attr)
{
	struct ibv_srq_init_attr_ex attr_ex = {
		.srq_context = attr->srq_context,
		.attr = attr->attr,
		.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD,
		.srq_type = IBV_SRQT_BASIC,
		.pd = pd,
	};
	struct ibv_srq *srq;

	srq = create_srq(pd->context, &attr_ex);
	if (srq)
		attr->attr = attr_ex.attr;
	return srq;
}

enum {
	MLX4_CREATE_SRQ_COMP_MASK = IBV_SRQ_INIT_ATTR_TYPE |
				    IBV_SRQ_INIT_ATTR_PD |
				    IBV_SRQ_INIT_ATTR_XRCD |
				    IBV_SRQ_INIT_ATTR_CQ,
};

struct ibv_srq *mlx4_create_srq_ex(struct ibv_context *context,
				   struct ibv_srq_init_attr_ex *attr)
{
	enum ibv_srq_type type = IBV_SRQT_BASIC;

	if (attr->comp_mask & ~(uint32_t)MLX4_CREATE_SRQ_COMP_MASK) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE)
		type = attr->srq_type;
	if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) || !attr->pd) {
		errno = EINVAL;
		return NULL;
	}

	switch (type) {
	case IBV_SRQT_BASIC:
		attr->srq_type = IBV_SRQT_BASIC;
		break;
	case IBV_SRQT_XRC:
		if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_XRCD) || !attr->xrcd ||
		    !(attr->comp_mask & IBV_SRQ_INIT_ATTR_CQ) || !attr->cq) {
			errno = EINVAL;
			return NULL;
		}
		break;
	default:
		errno = EOPNOTSUPP;
		return NULL;
	}
	return create_srq(context, attr);
}

int mlx4_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr, int mask)
{
	struct ibv_modify_srq cmd = {};

	return ibv_cmd_modify_srq(srq, attr, mask, &cmd, sizeof(cmd));
}

int mlx4_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr)
{
	struct ibv_query_srq cmd = {};

	return ibv_cmd_query_srq(srq, attr, &cmd, sizeof(cmd));
}

int mlx4_get_srq_num(struct ibv_srq *srq, uint32_t *srq_num)
{
	*srq_num = to_msrq(srq)->srqn;
	return 0;
}

int mlx4_destroy_srq(struct ibv_srq *ibsrq)
{
	struct mlx4_srq *srq = to_msrq(ibsrq);
	struct mlx4_context *ctx = to_mctx(ibsrq->context);
	struct mlx4_cq *cq;
	int ret;

	ret = ibv_cmd_destroy_srq(ibsrq);
	if (ret)
		return ret;

	if (srq->is_xrc) {
		/* Its completions carry no QP of ours: drop them here. */
		cq = srq->verbs_srq.cq ? to_mcq(srq->verbs_srq.cq) : NULL;
		mlx4_lock_cqs(cq, NULL);
		if (cq)
			mlx4_cq_clean(cq, 0, srq);
		mlx4_table_remove(&ctx->xsrq_table, srq->srqn);
		mlx4_unlock_cqs(cq, NULL);
	}

	mlx4_srq_free_queue(srq, ctx);
	mlx4_release_parent_domain(srq->domain);
	free(srq);
	return 0;
}
