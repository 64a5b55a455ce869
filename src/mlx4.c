/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libmlx4: registration with libibverbs, the device and its contexts,
 * and the direct-verbs entry points that work on a context.
 */
#include <config.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#if defined(__s390x__)
#include <sys/auxv.h>
#ifndef HWCAP_S390_PCI_MIO
#define HWCAP_S390_PCI_MIO	(1 << 21)	/* the kernel's; glibc 2.32 */
#endif
#endif

#include "annotate.h"
#include "mlx4.h"

/* ---------------------------------------------------------------------
 * Which devices are ours
 */

#define MLX4_PCI(dev)	VERBS_PCI_MATCH(0x15b3, dev, NULL)

static const struct verbs_match_ent mlx4_match_table[] = {
	VERBS_DRIVER_ID(RDMA_DRIVER_MLX4),
	/* ConnectX and ConnectX-2 */
	MLX4_PCI(0x6340), MLX4_PCI(0x634a), MLX4_PCI(0x6354),
	MLX4_PCI(0x6732), MLX4_PCI(0x673c), MLX4_PCI(0x6368),
	MLX4_PCI(0x6750), MLX4_PCI(0x6372), MLX4_PCI(0x675a),
	MLX4_PCI(0x6764), MLX4_PCI(0x6746), MLX4_PCI(0x676e),
	MLX4_PCI(0x1002),	/* ConnectX-2 virtual function */
	MLX4_PCI(0x1003),	/* ConnectX-3 */
	MLX4_PCI(0x1004),	/* ConnectX-3 virtual function */
	/* ConnectX-3 Pro and the rest of the family */
	MLX4_PCI(0x1005), MLX4_PCI(0x1006), MLX4_PCI(0x1007),
	MLX4_PCI(0x1008), MLX4_PCI(0x1009), MLX4_PCI(0x100a),
	MLX4_PCI(0x100b), MLX4_PCI(0x100c), MLX4_PCI(0x100d),
	MLX4_PCI(0x100e), MLX4_PCI(0x100f), MLX4_PCI(0x1010),
	{}
};

/* ---------------------------------------------------------------------
 * The lock's slow path
 */

void mlx4_lock_contended(struct mlx4_lock *lock)
{
	do {
		while (__atomic_load_n(&lock->locked, __ATOMIC_RELAXED))
			mlx4_cpu_relax();
	} while (__atomic_exchange_n(&lock->locked, 1, __ATOMIC_ACQUIRE));
}

/* ---------------------------------------------------------------------
 * Number -> object tables
 */

int mlx4_table_init(struct mlx4_table *table)
{
	memset(table->dir, 0, sizeof(table->dir));
	return pthread_mutex_init(&table->mutex, NULL);
}

void mlx4_table_cleanup(struct mlx4_table *table)
{
	int i;

	for (i = 0; i < MLX4_TABLE_DIR; i++)
		free(table->dir[i].slot);
	pthread_mutex_destroy(&table->mutex);
}

int mlx4_table_insert(struct mlx4_table *table, uint32_t num, void *obj)
{
	int d = (num & 0xffffff) >> MLX4_TABLE_SHIFT;
	int ret = 0;

	pthread_mutex_lock(&table->mutex);
	if (!table->dir[d].slot) {
		table->dir[d].slot = calloc(MLX4_TABLE_LEAF, sizeof(void *));
		if (!table->dir[d].slot) {
			ret = ENOMEM;
			goto out;
		}
	}
	if (table->dir[d].slot[num & MLX4_TABLE_MASK]) {
		ret = EEXIST;
		goto out;
	}
	table->dir[d].slot[num & MLX4_TABLE_MASK] = obj;
	table->dir[d].used++;
out:
	pthread_mutex_unlock(&table->mutex);
	return ret;
}

void mlx4_table_remove(struct mlx4_table *table, uint32_t num)
{
	int d = (num & 0xffffff) >> MLX4_TABLE_SHIFT;

	pthread_mutex_lock(&table->mutex);
	if (table->dir[d].slot && table->dir[d].slot[num & MLX4_TABLE_MASK]) {
		table->dir[d].slot[num & MLX4_TABLE_MASK] = NULL;
		if (--table->dir[d].used == 0) {
			free(table->dir[d].slot);
			table->dir[d].slot = NULL;
		}
	}
	pthread_mutex_unlock(&table->mutex);
}

/* ---------------------------------------------------------------------
 * Contexts
 */

static void mlx4_free_context(struct ibv_context *ibctx);

static const struct verbs_context_ops mlx4_ctx_ops = {
	.query_device_ex	= mlx4_query_device_ex,
	.query_port		= mlx4_query_port,
	.query_rt_values	= mlx4_query_rt_values,
	.free_context		= mlx4_free_context,

	.alloc_pd		= mlx4_alloc_pd,
	.dealloc_pd		= mlx4_dealloc_pd,
	.alloc_td		= mlx4_alloc_td,
	.dealloc_td		= mlx4_dealloc_td,
	.alloc_parent_domain	= mlx4_alloc_parent_domain,
	.open_xrcd		= mlx4_open_xrcd,
	.close_xrcd		= mlx4_close_xrcd,

	.reg_mr			= mlx4_reg_mr,
	.rereg_mr		= mlx4_rereg_mr,
	.dereg_mr		= mlx4_dereg_mr,
	.alloc_mw		= mlx4_alloc_mw,
	.dealloc_mw		= mlx4_dealloc_mw,
	.bind_mw		= mlx4_bind_mw,

	.create_cq		= mlx4_create_cq,
	.create_cq_ex		= mlx4_create_cq_ex,
	.poll_cq		= mlx4_poll_cq,
	.req_notify_cq		= mlx4_arm_cq,
	.cq_event		= mlx4_cq_event,
	.resize_cq		= mlx4_resize_cq,
	.modify_cq		= mlx4_modify_cq,
	.destroy_cq		= mlx4_destroy_cq,

	.create_srq		= mlx4_create_srq,
	.create_srq_ex		= mlx4_create_srq_ex,
	.modify_srq		= mlx4_modify_srq,
	.query_srq		= mlx4_query_srq,
	.destroy_srq		= mlx4_destroy_srq,
	.post_srq_recv		= mlx4_post_srq_recv,
	.get_srq_num		= mlx4_get_srq_num,

	.create_qp		= mlx4_create_qp,
	.create_qp_ex		= mlx4_create_qp_ex,
	.open_qp		= mlx4_open_qp,
	.query_qp		= mlx4_query_qp,
	.modify_qp		= mlx4_modify_qp,
	.destroy_qp		= mlx4_destroy_qp,
	.post_send		= mlx4_post_send,
	.post_recv		= mlx4_post_recv,

	.create_ah		= mlx4_create_ah,
	.destroy_ah		= mlx4_destroy_ah,
	.attach_mcast		= mlx4_attach_mcast,
	.detach_mcast		= mlx4_detach_mcast,

	.create_wq		= mlx4_create_wq,
	.modify_wq		= mlx4_modify_wq,
	.destroy_wq		= mlx4_destroy_wq,
	.create_rwq_ind_table	= mlx4_create_rwq_ind_table,
	.destroy_rwq_ind_table	= mlx4_destroy_rwq_ind_table,
	.create_flow		= mlx4_create_flow,
	.destroy_flow		= mlx4_destroy_flow,
};

struct mlx4_alloc_ucontext_resp {
	struct ib_uverbs_get_context_resp	ibv_resp;
	struct mlx4_ib_alloc_ucontext_resp	drv;
};

struct mlx4_alloc_ucontext_resp_v3 {
	struct ib_uverbs_get_context_resp	ibv_resp;
	struct mlx4_ib_alloc_ucontext_resp_v3	drv;
};

/*
 * GET_CONTEXT, and what the driver part of the answer says.  Replies of
 * ABI 3 lack dev_caps and cqe_size: those kernels only have 32-byte CQEs.
 */
static int mlx4_get_context(struct mlx4_context *ctx, int abi_version,
			    int *bf_reg_size)
{
	struct ibv_get_context cmd;
	int ret;

	if (abi_version <= MLX4_IB_UVERBS_NO_DEV_CAPS_ABI_VERSION) {
		struct mlx4_alloc_ucontext_resp_v3 resp;

		ret = ibv_cmd_get_context(&ctx->ibv_ctx, &cmd, sizeof(cmd),
					  PABI65(NULL,)
					  &resp.ibv_resp, sizeof(resp));
		if (ret)
			return ret;
		mlx4_mark_defined(&resp, sizeof(resp));
		ctx->qp_tab_size = resp.drv.qp_tab_size;
		*bf_reg_size = resp.drv.bf_reg_size;
		ctx->cqe_size = 32;
	} else {
		struct mlx4_alloc_ucontext_resp resp;

		ret = ibv_cmd_get_context(&ctx->ibv_ctx, &cmd, sizeof(cmd),
					  PABI65(NULL,)
					  &resp.ibv_resp, sizeof(resp));
		if (ret)
			return ret;
		mlx4_mark_defined(&resp, sizeof(resp));
		ctx->qp_tab_size = resp.drv.qp_tab_size;
		*bf_reg_size = resp.drv.bf_reg_size;
		if ((resp.drv.dev_caps & MLX4_USER_DEV_CAP_LARGE_CQE) &&
		    resp.drv.cqe_size == 64)
			ctx->cqe_size = 64;
		else
			ctx->cqe_size = 32;
	}
	return 0;
}

/* Map the doorbell page, and the BlueFlame page if the device has one. */
static int mlx4_map_uar(struct mlx4_context *ctx, int page_size,
			int bf_reg_size)
{
	int fd = ctx->ibv_ctx.context.cmd_fd;

	ctx->uar = mmap(NULL, page_size, PROT_WRITE, MAP_SHARED, fd, 0);
	if (ctx->uar == MAP_FAILED) {
		ctx->uar = NULL;
		return errno;
	}

	ctx->bf_page = NULL;
	ctx->bf_buf_size = 0;
	if (bf_reg_size) {
		void *page = mmap(NULL, page_size, PROT_WRITE, MAP_SHARED, fd,
				  page_size);

		/* Without BlueFlame every post rings the UAR doorbell. */
		if (page != MAP_FAILED) {
			ctx->bf_page = page;
			ctx->bf_buf_size = bf_reg_size / 2;
		}
	}
	ctx->bf_offset = 0;
	mlx4_lock_init(&ctx->bf_lock, 0);
#if !MLX4_MMIO_STORE64
	mlx4_lock_init(&ctx->uar_lock, 0);
#endif
	return 0;
}

static void mlx4_unmap(struct mlx4_context *ctx, int page_size)
{
	if (ctx->uar)
		munmap(ctx->uar, page_size);
	if (ctx->bf_page)
		munmap(ctx->bf_page, page_size);
	if (ctx->hca_clock_page)
		munmap(ctx->hca_clock_page, page_size);
}

static struct verbs_context *mlx4_alloc_context(struct ibv_device *ibdev,
						int cmd_fd,
						void *private_data)
{
	struct mlx4_device *dev = to_mdev(ibdev);
	struct ibv_device_attr_ex attr;
	struct mlx4_context *ctx;
	int bf_reg_size = 0;
	int ret;

	ctx = verbs_init_and_alloc_context(ibdev, cmd_fd, struct mlx4_context,
					   ibv_ctx, RDMA_DRIVER_MLX4);
	if (!ctx)
		return NULL;

	ret = mlx4_get_context(ctx, dev->abi_version, &bf_reg_size);
	if (ret)
		goto err_free;

	if (mlx4_table_init(&ctx->qp_table))
		goto err_free;
	if (mlx4_table_init(&ctx->xsrq_table))
		goto err_qp_table;
	pthread_mutex_init(&ctx->db_mutex, NULL);

	ret = mlx4_map_uar(ctx, dev->page_size, bf_reg_size);
	if (ret)
		goto err_tables;

	verbs_set_ops(&ctx->ibv_ctx, &mlx4_ctx_ops);

	/* The queue limits that create_* checks, and the clock page. */
	ret = mlx4_query_device_ex(&ctx->ibv_ctx.context, NULL, &attr,
				   sizeof(attr));
	if (ret)
		goto err_unmap;

	return &ctx->ibv_ctx;

err_unmap:
	mlx4_unmap(ctx, dev->page_size);
err_tables:
	pthread_mutex_destroy(&ctx->db_mutex);
	mlx4_table_cleanup(&ctx->xsrq_table);
err_qp_table:
	mlx4_table_cleanup(&ctx->qp_table);
err_free:
	verbs_uninit_context(&ctx->ibv_ctx);
	free(ctx);
	errno = ret ? ret : ENOMEM;
	return NULL;
}

static void mlx4_free_context(struct ibv_context *ibctx)
{
	struct mlx4_context *ctx = to_mctx(ibctx);

	mlx4_unmap(ctx, mlx4_page_size(ibctx));
	mlx4_free_db_pages(ctx);
	pthread_mutex_destroy(&ctx->db_mutex);
	mlx4_table_cleanup(&ctx->xsrq_table);
	mlx4_table_cleanup(&ctx->qp_table);
	verbs_uninit_context(&ctx->ibv_ctx);
	free(ctx);
}

/* ---------------------------------------------------------------------
 * Devices
 */

static struct verbs_device *mlx4_alloc_device(struct verbs_sysfs_dev *sysfs)
{
	struct mlx4_device *dev;

	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return NULL;

	dev->page_size = sysconf(_SC_PAGESIZE);
	dev->abi_version = sysfs->abi_ver;
	return &dev->verbs_dev;
}

static void mlx4_uninit_device(struct verbs_device *verbs_dev)
{
	free(container_of(verbs_dev, struct mlx4_device, verbs_dev));
}

static const struct verbs_device_ops mlx4_dev_ops = {
	.name			= "mlx4",
	.match_min_abi_version	= MLX4_IB_UVERBS_ABI_VERSION - 2,
	.match_max_abi_version	= MLX4_IB_UVERBS_ABI_VERSION,
	.match_table		= mlx4_match_table,
	.alloc_device		= mlx4_alloc_device,
	.uninit_device		= mlx4_uninit_device,
	.alloc_context		= mlx4_alloc_context,
};

#if defined(__s390x__)
int mlx4_s390_mio;
#endif

static __attribute__((constructor)) void mlx4_register_driver(void)
{
#if defined(__s390x__)
	/* PCI stores from user space: z15 and later, if the kernel allows. */
	mlx4_s390_mio = !!(getauxval(AT_HWCAP) & HWCAP_S390_PCI_MIO);
#endif
	verbs_register_driver(&mlx4_dev_ops);
}

/* ---------------------------------------------------------------------
 * Direct verbs on a context
 */

/* Direct verbs reach into provider objects: refuse other providers'. */
static int is_mlx4_context(struct ibv_context *ibctx)
{
	struct verbs_device *vdev =
		container_of(ibctx->device, struct verbs_device, device);

	return vdev->ops == &mlx4_dev_ops;
}

int mlx4dv_query_device(struct ibv_context *ctx_in,
			struct mlx4dv_context *attrs_out)
{
	if (!is_mlx4_context(ctx_in))
		return EOPNOTSUPP;

	attrs_out->version = 0;
	attrs_out->comp_mask = 0;
	attrs_out->max_inl_recv_sz = to_mctx(ctx_in)->max_inl_recv_sz;
	return 0;
}

int mlx4dv_set_context_attr(struct ibv_context *context,
			    enum mlx4dv_set_ctx_attr_type attr_type,
			    void *attr)
{
	struct mlx4_context *ctx;

	if (!is_mlx4_context(context))
		return EOPNOTSUPP;
	ctx = to_mctx(context);

	switch (attr_type) {
	case MLX4DV_SET_CTX_ATTR_LOG_WQS_RANGE_SZ:
		ctx->log_wqs_range_sz = *(uint8_t *)attr;
		return 0;
	case MLX4DV_SET_CTX_ATTR_BUF_ALLOCATORS:
		ctx->extern_alloc = *(struct mlx4dv_ctx_allocators *)attr;
		return 0;
	default:
		return EOPNOTSUPP;
	}
}

static int init_dv_qp(struct ibv_qp *ibqp, struct mlx4dv_qp *out)
{
	struct mlx4_qp *qp = to_mqp(ibqp);
	uint64_t mask_in = out->comp_mask;

	if (!is_mlx4_context(ibqp->context) || qp->no_queues)
		return EINVAL;

	out->comp_mask = 0;
	out->rdb = qp->db;
	out->sdb = (uint32_t *)qp->sdb;
	out->doorbell_qpn = qp->doorbell_qpn;
	out->sq.wqe_cnt = qp->sq.wqe_cnt;
	out->sq.wqe_shift = qp->sq.wqe_shift;
	out->sq.offset = qp->sq.offset;
	out->rq.wqe_cnt = qp->rq.wqe_cnt;
	out->rq.wqe_shift = qp->rq.wqe_shift;
	out->rq.offset = qp->rq.offset;
	out->buf.buf = qp->buf.buf;
	out->buf.length = qp->buf.length;
	if (mask_in & MLX4DV_QP_MASK_UAR_MMAP_OFFSET) {
		/* The UAR is the first page of the command file. */
		out->uar_mmap_offset = 0;
		out->comp_mask |= MLX4DV_QP_MASK_UAR_MMAP_OFFSET;
	}
	return 0;
}

static int init_dv_cq(struct ibv_cq *ibcq, struct mlx4dv_cq *out)
{
	struct mlx4_cq *cq = to_mcq(ibcq);
	uint64_t mask_in = out->comp_mask;

	if (!is_mlx4_context(ibcq->context))
		return EINVAL;

	out->comp_mask = 0;
	out->buf.buf = cq->buf.buf;
	out->buf.length = cq->buf.length;
	out->cqe_cnt = cq->mask + 1;
	out->cqn = cq->cqn;
	out->set_ci_db = cq->set_ci_db;
	out->arm_db = cq->arm_db;
	out->arm_sn = cq->arm_sn;
	out->cqe_size = cq->cqe_size;
	/* From now on the application may consume CQEs behind our back. */
	cq->dv_owned = 1;
	if (mask_in & MLX4DV_CQ_MASK_UAR) {
		out->cq_uar = cq->ctx->uar;
		out->comp_mask |= MLX4DV_CQ_MASK_UAR;
	}
	return 0;
}

static int init_dv_srq(struct ibv_srq *ibsrq, struct mlx4dv_srq *out)
{
	struct mlx4_srq *srq = to_msrq(ibsrq);

	if (!is_mlx4_context(ibsrq->context))
		return EINVAL;

	out->comp_mask = 0;
	out->buf.buf = srq->buf.buf;
	out->buf.length = srq->buf.length;
	out->wqe_shift = srq->wqe_shift;
	out->head = srq->head;
	out->tail = srq->tail;
	out->db = srq->db;
	return 0;
}

static int init_dv_rwq(struct ibv_wq *ibwq, struct mlx4dv_rwq *out)
{
	struct mlx4_rwq *rwq = to_mrwq(ibwq);

	if (!is_mlx4_context(ibwq->context))
		return EINVAL;

	out->comp_mask = 0;
	out->rdb = rwq->qp.db;
	out->rq.wqe_cnt = rwq->qp.rq.wqe_cnt;
	out->rq.wqe_shift = rwq->qp.rq.wqe_shift;
	out->rq.offset = rwq->qp.rq.offset;
	out->buf.buf = rwq->qp.buf.buf;
	out->buf.length = rwq->qp.buf.length;
	return 0;
}

int mlx4dv_init_obj(struct mlx4dv_obj *obj, uint64_t obj_type)
{
	int ret = 0;

	if (obj_type & ~(uint64_t)(MLX4DV_OBJ_QP | MLX4DV_OBJ_CQ |
				   MLX4DV_OBJ_SRQ | MLX4DV_OBJ_RWQ))
		return EOPNOTSUPP;

	if (obj_type & MLX4DV_OBJ_QP)
		ret = init_dv_qp(obj->qp.in, obj->qp.out);
	if (!ret && (obj_type & MLX4DV_OBJ_CQ))
		ret = init_dv_cq(obj->cq.in, obj->cq.out);
	if (!ret && (obj_type & MLX4DV_OBJ_SRQ))
		ret = init_dv_srq(obj->srq.in, obj->srq.out);
	if (!ret && (obj_type & MLX4DV_OBJ_RWQ))
		ret = init_dv_rwq(obj->rwq.in, obj->rwq.out);
	return ret;
}
