/* SPDX-License-Identifier: BSD-2-Clause */
/* A provider without a device: see provider-fake.h. */
#include <config.h>

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "provider-fake.h"


static void *page_alloc(void)
{
	void *p;

	if (posix_memalign(&p, 4096, 4096))
		abort();
	memset(p, 0, 4096);
	return p;
}

#ifdef MLX4_UNIT_BARRIER_HOOK
void (*mlx4_unit_barrier_hook)(void);
#endif

void fake_env_init(struct fake_env *env, int cqe_size, int bf_reg_size)
{
	struct mlx4_context *ctx;

	memset(env, 0, sizeof(*env));
	env->dev.page_size = 4096;
	env->dev.abi_version = MLX4_IB_UVERBS_ABI_VERSION;

	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		abort();
	ctx->ibv_ctx.context.device = &env->dev.verbs_dev.device;
	ctx->ibv_ctx.context.ops.post_send = mlx4_post_send;
	ctx->ibv_ctx.context.ops.post_recv = mlx4_post_recv;
	ctx->ibv_ctx.context.ops.post_srq_recv = mlx4_post_srq_recv;
	ctx->ibv_ctx.context.ops.poll_cq = mlx4_poll_cq;
	ctx->ibv_ctx.context.ops.req_notify_cq = mlx4_arm_cq;

	env->uar = page_alloc();
	ctx->uar = env->uar;
	if (bf_reg_size) {
		env->bf = page_alloc();
		ctx->bf_page = env->bf;
		ctx->bf_buf_size = bf_reg_size / 2;
	}
	ctx->cqe_size = cqe_size;

	/* ConnectX-3 limits, as query_device reports them. */
	ctx->max_qp_wr = 16351;
	ctx->max_sge = 32;
	ctx->max_sge_rd = 30;
	ctx->max_cqe = 4194303;
	ctx->max_srq_wr = 16383;
	ctx->max_srq_sge = 31;
	ctx->ud_ip_csum = 1;		/* IBV_DEVICE_UD_IP_CSUM */
	ctx->link_layer[0] = IBV_LINK_LAYER_INFINIBAND;
	ctx->link_layer[1] = IBV_LINK_LAYER_INFINIBAND;

	mlx4_table_init(&ctx->qp_table);
	mlx4_table_init(&ctx->xsrq_table);
	pthread_mutex_init(&ctx->db_mutex, NULL);

	env->pd.ibv_pd.context = &ctx->ibv_ctx.context;
	env->pd.pdn = 0x77;
	env->ctx = ctx;
}

void fake_env_cleanup(struct fake_env *env)
{
	mlx4_free_db_pages(env->ctx);
	mlx4_table_cleanup(&env->ctx->qp_table);
	mlx4_table_cleanup(&env->ctx->xsrq_table);
	free(env->ctx);
	free(env->uar);
	free(env->bf);
}

struct mlx4_cq *fake_cq(struct fake_env *env, int nent, uint32_t cqn)
{
	struct mlx4_cq *cq = calloc(1, sizeof(*cq));

	if (!cq || mlx4_cq_alloc_ring(cq, env->ctx, nent))
		abort();
	mlx4_lock_init(&cq->lock, 0);
	cq->cqn = cqn;
	cq->verbs_cq.cq.context = &env->ctx->ibv_ctx.context;
	cq->verbs_cq.cq.cqe = nent - 1;
	return cq;
}

void fake_cq_free(struct mlx4_cq *cq)
{
	mlx4_cq_free_ring(cq);
	free(cq);
}

struct mlx4_srq *fake_srq(struct fake_env *env, uint32_t max_wr,
			  uint32_t max_sge, uint32_t srqn, int xrc,
			  struct mlx4_cq *cq)
{
	struct ibv_srq_attr attr = { .max_wr = max_wr, .max_sge = max_sge };
	struct mlx4_srq *srq = calloc(1, sizeof(*srq));

	if (!srq || mlx4_srq_alloc_queue(srq, env->ctx, &attr))
		abort();
	srq->verbs_srq.srq.context = &env->ctx->ibv_ctx.context;
	srq->srqn = srqn;
	srq->is_xrc = xrc;
	if (xrc) {
		srq->verbs_srq.cq = &cq->verbs_cq.cq;
		mlx4_table_insert(&env->ctx->xsrq_table, srqn, srq);
	}
	return srq;
}

void fake_srq_free(struct fake_env *env, struct mlx4_srq *srq)
{
	if (srq->is_xrc)
		mlx4_table_remove(&env->ctx->xsrq_table, srq->srqn);
	mlx4_srq_free_queue(srq, env->ctx);
	free(srq);
}

struct mlx4_qp *fake_qp(struct fake_env *env, enum ibv_qp_type type,
			struct ibv_qp_cap *cap, struct mlx4_cq *send_cq,
			struct mlx4_cq *recv_cq, struct mlx4_srq *srq,
			uint32_t qpn, int sq_sig_all)
{
	struct ibv_qp_init_attr_ex attr = {
		.qp_type = type,
		.cap = *cap,
		.srq = srq ? &srq->verbs_srq.srq : NULL,
		.sq_sig_all = sq_sig_all,
		.pd = env->qp_pd,
	};
	struct mlx4_qp *qp = calloc(1, sizeof(*qp));
	struct ibv_qp *ibqp = &qp->verbs_qp.qp;

	if (!qp)
		abort();
	qp->ctx = env->ctx;
	/* As create_qp does: the parent domain, if any, is held. */
	qp->domain = mlx4_hold_parent_domain(attr.pd);
	if (mlx4_qp_alloc_queues(qp, &attr)) {
		mlx4_release_parent_domain(qp->domain);
		free(qp);
		return NULL;
	}

	ibqp->context = &env->ctx->ibv_ctx.context;
	ibqp->qp_type = type;
	ibqp->qp_num = qpn;
	ibqp->send_cq = send_cq ? &send_cq->verbs_cq.cq : NULL;
	ibqp->recv_cq = recv_cq ? &recv_cq->verbs_cq.cq : NULL;
	ibqp->srq = attr.srq;
	if (mlx4_qp_ready(qp, &attr, cap))
		abort();
	/* As a modify to INIT on port 1 (InfiniBand) leaves it. */
	qp->link_layer = IBV_LINK_LAYER_INFINIBAND;
	mlx4_qp_update_csum(qp);
	return qp;
}

void fake_qp_free(struct mlx4_qp *qp)
{
	/* As destroy does: its CQEs, and the CQs' memory of it, go. */
	mlx4_qp_clean_cqs(qp, qp->verbs_qp.qp.send_cq, qp->verbs_qp.qp.recv_cq);
	mlx4_table_remove(&qp->ctx->qp_table, qp->qpn);
	mlx4_qp_free_queues(qp);
	mlx4_release_parent_domain(qp->domain);
	free(qp->wrb);
	free(qp);
}

static int hexval(int c)
{
	return isdigit(c) ? c - '0' : tolower(c) - 'a' + 10;
}

int bytes_match(const void *actual, const char *hex)
{
	const uint8_t *a = actual;
	int n = 0, bad = -1, i;
	const char *p;

	for (p = hex; *p; ) {
		if (isspace((unsigned char)*p)) {
			p++;
			continue;
		}
		if (p[0] == '.' && p[1] == '.') {
			p += 2;
			n++;
			continue;
		}
		if (bad < 0 && a[n] != (hexval(p[0]) << 4 | hexval(p[1])))
			bad = n;
		p += 2;
		n++;
	}

	if (bad < 0)
		return 1;
	printf("# differs at byte %d\n# expected: %s\n# actual:  ", bad, hex);
	for (i = 0; i < n; i++)
		printf("%s%02x", i % 4 ? "" : " ", a[i]);
	printf("\n");
	return 0;
}
