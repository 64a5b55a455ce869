/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The mlx4 direct verbs on a device: what mlx4dv_init_obj() exposes of a
 * QP, CQ and SRQ must describe the queues the provider really drives.
 * The test posts through the verbs and reads the results through the
 * exposed pointers: the SEND WQE in the ring, the receive doorbell record,
 * the CQE and the consumer index.
 *
 * Linked with this tree's libmlx4; run on the simulator with it.
 */
#include <config.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <infiniband/verbs.h>
#include "mlx4dv.h"

#include "../device.h"
#include "../tap.h"
#include "../cases.h"

static int is_pow2(uint32_t n)
{
	return n && !(n & (n - 1));
}

/* CQE @n of an exposed CQ once the device handed it over, or NULL. */
static struct mlx4_cqe *dv_cqe_wait(struct mlx4dv_cq *dvcq, uint32_t n)
{
	struct mlx4_cqe *cqe = (void *)((uint8_t *)dvcq->buf.buf +
					(size_t)(n & (dvcq->cqe_cnt - 1)) *
					dvcq->cqe_size + dvcq->cqe_size - 32);
	struct timespec ts = { 0, 1000000 };

	for (int i = 0; i < 2000; i++) {
		if (!!mlx4dv_get_cqe_owner(cqe) == !!(n & dvcq->cqe_cnt))
			return cqe;
		nanosleep(&ts, NULL);
	}
	return NULL;
}

/*
 * A CQ handed out by mlx4dv_init_obj is the application's to consume:
 * destroying a QP must leave its CQEs and consumer index alone (the
 * provider's own index is stale).  Two QPs in ERROR flush receives into
 * one CQ, A B A; the application consumes all three itself; A goes.
 */
static void dv_cq_survives_qp_destroy(struct ibv_context *ctx,
				      struct ibv_pd *pd, struct ibv_mr *mr,
				      uint8_t *buf)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	struct ibv_qp_init_attr qattr = {
		.cap = { .max_send_wr = 1, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	struct ibv_qp_attr err = { .qp_state = IBV_QPS_ERR };
	struct ibv_sge sge = { (uintptr_t)buf, 64, mr->lkey };
	struct ibv_recv_wr rwr = { .sg_list = &sge, .num_sge = 1 }, *rbad;
	struct mlx4dv_cq dvcq = {};
	struct mlx4dv_obj obj = { .cq = { cq, &dvcq } };
	struct ibv_qp *qp[2] = { NULL, NULL };
	static uint8_t before[4096];
	int ok = 1;

	if (!cq) {
		CHECK(0, "create_cq: %s", strerror(errno));
		return;
	}
	qattr.send_cq = qattr.recv_cq = cq;
	for (int i = 0; i < 2; i++) {
		qp[i] = ibv_create_qp(pd, &qattr);
		ok = ok && qp[i] && !ibv_modify_qp(qp[i], &err, IBV_QP_STATE);
	}
	CHECK(ok, "two QPs in ERROR: %s", strerror(errno));
	CHECK(!mlx4dv_init_obj(&obj, MLX4DV_OBJ_CQ) &&
	      dvcq.buf.length <= sizeof(before), "init_obj CQ: %zu bytes",
	      dvcq.buf.length);
	if (!ok || dvcq.buf.length > sizeof(before))
		goto out;

	for (int i = 0; i < 3; i++) {
		rwr.wr_id = i;
		ok = ok && !ibv_post_recv(qp[i & 1], &rwr, &rbad) &&
		     dv_cqe_wait(&dvcq, i);
	}
	CHECK(ok, "three flush CQEs in the exposed ring");
	*dvcq.set_ci_db = htobe32(3);	/* consumed by the application */
	memcpy(before, dvcq.buf.buf, dvcq.buf.length);

	CHECK(!ibv_destroy_qp(qp[0]), "destroy QP A");
	qp[0] = NULL;
	CHECK(be32toh(*dvcq.set_ci_db) == 3,
	      "the application's consumer index stays 3 (now %u)",
	      be32toh(*dvcq.set_ci_db));
	CHECK(!memcmp(before, dvcq.buf.buf, dvcq.buf.length),
	      "the application's CQEs stay as the device wrote them");
out:
	for (int i = 0; i < 2; i++)
		if (qp[i])
			ibv_destroy_qp(qp[i]);
	ibv_destroy_cq(cq);
}

/*
 * main()'s objects, which every case shares: an RC QP (in RESET until
 * receive_in_ring), its CQ, an SRQ, a registered buffer, and what
 * mlx4dv_init_obj() says of the three queues.
 */
static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static struct ibv_srq *srq;
static struct ibv_qp *qp;
static struct ibv_mr *mr;
static uint8_t buf[256];
static struct mlx4dv_qp dvqp = { .comp_mask = MLX4DV_QP_MASK_UAR_MMAP_OFFSET };
static struct mlx4dv_cq dvcq = { .comp_mask = MLX4DV_CQ_MASK_UAR };
static struct mlx4dv_srq dvsrq;

/* Asks mlx4dv_init_obj() for the views of the QP, CQ and SRQ: its return. */
static int init_views(void)
{
	struct mlx4dv_obj obj = {
		.qp = { qp, &dvqp }, .cq = { cq, &dvcq }, .srq = { srq, &dvsrq },
	};

	return mlx4dv_init_obj(&obj, MLX4DV_OBJ_QP | MLX4DV_OBJ_CQ |
			       MLX4DV_OBJ_SRQ);
}

static void query_device(void)
{
	struct mlx4dv_context dvctx = {};

	CHECK(!mlx4dv_query_device(ctx, &dvctx), "mlx4dv_query_device");
}

static void init_obj(void)
{
	struct mlx4dv_obj obj = { .qp = { qp, &dvqp } };

	CHECK(!init_views(), "mlx4dv_init_obj");
	CHECK(mlx4dv_init_obj(&obj, 1 << 10) == EOPNOTSUPP, "unknown type");
}

/* The QP's geometry. */
static void qp_layout(void)
{
	CHECK(is_pow2(dvqp.sq.wqe_cnt) && dvqp.sq.wqe_shift >= 6 &&
	      is_pow2(dvqp.rq.wqe_cnt) && dvqp.rq.wqe_cnt >= 8,
	      "sq %u << %d, rq %u << %d", dvqp.sq.wqe_cnt, dvqp.sq.wqe_shift,
	      dvqp.rq.wqe_cnt, dvqp.rq.wqe_shift);
	CHECK(dvqp.buf.buf && dvqp.buf.length >=
	      ((size_t)dvqp.sq.wqe_cnt << dvqp.sq.wqe_shift) +
	      ((size_t)dvqp.rq.wqe_cnt << dvqp.rq.wqe_shift), "qp buffer");
	CHECK(dvqp.doorbell_qpn == htobe32(qp->qp_num << 8), "doorbell_qpn");
	CHECK(dvqp.rdb && dvqp.sdb, "doorbells");
	CHECK((dvqp.comp_mask & MLX4DV_QP_MASK_UAR_MMAP_OFFSET) &&
	      dvqp.uar_mmap_offset == 0, "uar mmap offset");
}

/* The CQ's. */
static void cq_layout(void)
{
	CHECK(is_pow2(dvcq.cqe_cnt) && dvcq.cqe_cnt >= 33 &&
	      (dvcq.cqe_size == 32 || dvcq.cqe_size == 64) &&
	      dvcq.buf.length >= (size_t)dvcq.cqe_cnt * dvcq.cqe_size,
	      "cq %u x %d", dvcq.cqe_cnt, dvcq.cqe_size);
	CHECK(dvcq.set_ci_db && dvcq.arm_db == dvcq.set_ci_db + 1 &&
	      (dvcq.comp_mask & MLX4DV_CQ_MASK_UAR) && dvcq.cq_uar, "cq doorbells");
}

/* The SRQ's free list as mlx4dv_srq describes it. */
static void srq_layout(void)
{
	CHECK(dvsrq.buf.buf && dvsrq.wqe_shift >= 5 && dvsrq.head == 0 &&
	      dvsrq.db, "srq head %d tail %d shift %d", dvsrq.head, dvsrq.tail,
	      dvsrq.wqe_shift);
}

/* A receive through the verbs shows in the exposed record and ring. */
static void receive_in_ring(void)
{
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_INIT, .port_num = 1 };
	struct ibv_sge sge = { (uintptr_t)buf, 64, mr->lkey };
	struct ibv_recv_wr rwr = { .sg_list = &sge, .num_sge = 1 }, *rbad;
	uint8_t *wqe;

	if (ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		CHECK(0, "modify to INIT");
	CHECK(!ibv_post_recv(qp, &rwr, &rbad), "post_recv");
	CHECK(be32toh(*dvqp.rdb) == 1, "receive doorbell record %u",
	      be32toh(*dvqp.rdb));
	wqe = (uint8_t *)dvqp.buf.buf + dvqp.rq.offset;
	CHECK(be32toh(((struct mlx4_wqe_data_seg *)wqe)->lkey) == mr->lkey &&
	      be64toh(((struct mlx4_wqe_data_seg *)wqe)->addr) ==
	      (uintptr_t)buf, "receive WQE in the exposed ring");
}

/* Send WQEs start invalid: owner bit set before the first pass. */
static void send_owner_bit(void)
{
	uint8_t *wqe = (uint8_t *)dvqp.buf.buf + dvqp.sq.offset;

	CHECK(wqe[0] & 0x80, "send WQE 0 owner bit before the first pass");
}

static void cq_survives_qp_destroy(void)
{
	dv_cq_survives_qp_destroy(ctx, pd, mr, buf);
}

/* The cases, in the order a full run takes them. */
static const struct test_case cases[] = {
	{ "query_device", query_device, "mlx4dv_query_device succeeds" },
	{ "init_obj", init_obj,
	  "mlx4dv_init_obj on a QP, CQ and SRQ; an unknown type: EOPNOTSUPP" },
	{ "qp_layout", qp_layout,
	  "the QP's rings, buffer, doorbells and UAR offset as exposed" },
	{ "cq_layout", cq_layout, "the CQ's ring and doorbells as exposed" },
	{ "srq_layout", srq_layout, "the SRQ's free list as exposed" },
	{ "receive_in_ring", receive_in_ring,
	  "a receive posted through the verbs: its doorbell record and WQE" },
	{ "send_owner_bit", send_owner_bit,
	  "send WQEs start with the owner bit set" },
	{ "cq_survives_qp_destroy", cq_survives_qp_destroy,
	  "destroying a QP leaves an exposed CQ's CQEs and index alone" },
};

/* Usage: provider-dv [--list | NAME...] */
int main(int argc, char **argv)
{
	struct ibv_srq_init_attr sattr = { .attr = { .max_wr = 8, .max_sge = 1 } };
	struct ibv_qp_init_attr qattr = {
		.cap = { .max_send_wr = 8, .max_recv_wr = 8,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	int ret = cases_select(cases, CASES_N(cases), argc, argv, 1);

	if (ret >= 0)
		return ret;
	ctx = open_first_device("provider-dv");
	pd = ibv_alloc_pd(ctx);
	cq = pd ? ibv_create_cq(ctx, 32, NULL, NULL, 0) : NULL;
	srq = cq ? ibv_create_srq(pd, &sattr) : NULL;
	if (!srq)
		bail("set-up");
	qattr.send_cq = qattr.recv_cq = cq;
	qp = ibv_create_qp(pd, &qattr);
	mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	CHECK(qp && mr, "create_qp / reg_mr: %s", strerror(errno));
	if (qp && mr) {
		init_views();	/* init_obj checks what it returns */
		cases_run(cases, CASES_N(cases));
	}

	if (qp)
		ibv_destroy_qp(qp);
	if (mr)
		ibv_dereg_mr(mr);
	ibv_destroy_srq(srq);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return tap_finish();
}
