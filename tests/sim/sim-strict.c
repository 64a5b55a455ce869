/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sim-strict: a driver that breaks the ConnectX-3 protocol on purpose, one
 * way per run, so that tests can check mlx4sim's strict mode notices.
 *
 * It sets up an RC QP looped back to itself with the distribution's mlx4
 * provider, then reaches under it through mlx4dv to misbehave at the
 * hardware level.  `sim-strict none` behaves, and must pass;
 * `sim-strict --list` names the breaches, `--help` says what each does.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <infiniband/verbs.h>
#include <infiniband/mlx4dv.h>

#include "../qp-connect.h"

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static struct ibv_qp *qp;
static struct mlx4dv_qp dvqp;
static struct mlx4dv_cq dvcq;

static void die(const char *what)
{
	fprintf(stderr, "sim-strict: %s failed\n", what);
	exit(1);
}

static void setup(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8,
			 .max_send_sge = 1, .max_recv_sge = 1,
			 .max_inline_data = 128 },
	};
	struct qp_path path = {
		.access = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE,
		.rd_atomic = 1, .min_rnr_timer = 1,
		.timeout = 8, .retry_cnt = 1, .rnr_retry = 1,
	};
	struct ibv_port_attr port;
	struct mlx4dv_obj obj;
	const char *step;

	if (!list || !list[0] || !(ctx = ibv_open_device(list[0])))
		die("open device");
	ibv_free_device_list(list);
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	if (!pd || !cq || ibv_query_port(ctx, 1, &port))
		die("PD, CQ");
	init.send_cq = init.recv_cq = cq;
	qp = ibv_create_qp(pd, &init);
	if (!qp)
		die("QP");
	/* Connected to itself. */
	path.remote_qpn = qp->qp_num;
	path.dlid = port.lid;
	if (qp_connect(qp, &path, &step))
		die(step);
	obj.qp.in = qp;
	obj.qp.out = &dvqp;
	obj.cq.in = cq;
	obj.cq.out = &dvcq;
	dvcq.comp_mask = MLX4DV_CQ_MASK_UAR;
	if (mlx4dv_init_obj(&obj, MLX4DV_OBJ_QP | MLX4DV_OBJ_CQ))
		die("mlx4dv_init_obj");
}

/* One 64-bit store of two big-endian words, as a driver arms a CQ. */
static void cq_doorbell(uint32_t word0, uint32_t word1)
{
	uint32_t db[2] = { htobe32(word0), htobe32(word1) };
	uint64_t v;

	memcpy(&v, db, sizeof(v));
	*(volatile uint64_t *)((char *)dvcq.cq_uar + MLX4_CQ_DOORBELL) = v;
}

static struct mlx4_wqe_ctrl_seg *first_wqe(void)
{
	return (void *)((char *)dvqp.buf.buf + dvqp.sq.offset);
}

/* Hand WQE 0 to the device (owner bit 0 is valid on the first pass). */
static void ring(struct mlx4_wqe_ctrl_seg *ctrl, uint32_t opcode, uint8_t ds)
{
	ctrl->fence_size = ds;
	ctrl->srcrb_flags = htobe32(MLX4_WQE_CTRL_CQ_UPDATE);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	ctrl->owner_opcode = htobe32(opcode);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	*(volatile uint32_t *)dvqp.sdb = dvqp.doorbell_qpn;
}

/* Make WQE @ctrl, without handing it over yet. */
static void fill(struct mlx4_wqe_ctrl_seg *ctrl, uint32_t opcode, uint8_t ds)
{
	ctrl->fence_size = ds;
	ctrl->srcrb_flags = htobe32(MLX4_WQE_CTRL_CQ_UPDATE);
	ctrl->owner_opcode = htobe32(opcode);
}

/*
 * An RDMA READ that carries an inline segment where its scatter list
 * should be: the device has nowhere to put the data, and must complete it
 * in error without writing anywhere.  A proper READ into @victim runs just
 * before it: a device that left the inline READ's list of local buffers
 * unset found the previous WQE's list there, and wrote into @victim.
 */
static int inline_read(void)
{
	struct mlx4_wqe_ctrl_seg *ctrl = first_wqe();
	/* Read differently byte-swapped: a READ in the wrong order shows. */
	static uint64_t source[2] = { 0x1122334455667788ULL,
				      0x8877665544332211ULL };
	static uint64_t victim;
	struct mlx4_wqe_ctrl_seg *next = (void *)((char *)ctrl +
						 (1 << dvqp.sq.wqe_shift));
	struct mlx4_wqe_raddr_seg *raddr = (void *)(ctrl + 1);
	struct mlx4_wqe_data_seg *data = (void *)(raddr + 1);
	uint32_t *inl;
	struct ibv_mr *src_mr, *victim_mr;
	struct ibv_wc wc[2];
	int n = 0;

	src_mr = ibv_reg_mr(pd, source, sizeof(source), IBV_ACCESS_LOCAL_WRITE |
			    IBV_ACCESS_REMOTE_READ);
	victim_mr = ibv_reg_mr(pd, &victim, sizeof(victim),
			       IBV_ACCESS_LOCAL_WRITE);
	if (!src_mr || !victim_mr)
		die("reg_mr");
	raddr->raddr = htobe64((uintptr_t)&source[0]);
	raddr->rkey = htobe32(src_mr->rkey);
	data->byte_count = htobe32(sizeof(victim));
	data->lkey = htobe32(victim_mr->lkey);
	data->addr = htobe64((uintptr_t)&victim);
	fill(ctrl, MLX4_OPCODE_RDMA_READ, 3);

	raddr = (void *)(next + 1);
	raddr->raddr = htobe64((uintptr_t)&source[1]);
	raddr->rkey = htobe32(src_mr->rkey);
	inl = (uint32_t *)(raddr + 1);
	inl[0] = htobe32(MLX4_INLINE_SEG | 8);
	memset(inl + 1, 0xab, 8);
	fill(next, MLX4_OPCODE_RDMA_READ, 3);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	*(volatile uint32_t *)dvqp.sdb = dvqp.doorbell_qpn;

	for (int i = 0; i < 1000 && n < 2; i++) {
		int got = ibv_poll_cq(cq, 2 - n, wc + n);

		if (got < 0)
			die("poll_cq");
		n += got;
		if (n < 2)
			usleep(1000);
	}
	if (n != 2) {
		fprintf(stderr, "sim-strict: %d completions of 2\n", n);
		return 1;
	}
	printf("READ: %s; inline READ: %s; victim 0x%016llx\n",
	       ibv_wc_status_str(wc[0].status), ibv_wc_status_str(wc[1].status),
	       (unsigned long long)victim);
	if (wc[0].status != IBV_WC_SUCCESS ||
	    wc[1].status != IBV_WC_LOC_PROT_ERR || victim != source[0]) {
		fprintf(stderr, "sim-strict: expected success, a local protection error, and 0x%016llx in the victim\n",
			(unsigned long long)source[0]);
		return 1;
	}
	return 0;
}

/*
 * A memory window that was deallocated: its rkey must name nothing.  An
 * RDMA WRITE to it completes with a remote access error.  (A simulator
 * that forgot to clear the window's entry in the key table found the
 * freed window there: MemorySanitizer cannot see that, AddressSanitizer
 * does; tests/sim/sanitizers.tap runs this case on such a daemon.)
 */
static int stale_window(void)
{
	static uint64_t buf[8];
	struct ibv_sge sge = { 0, sizeof(buf[0]), 0 };
	struct ibv_send_wr wr = {
		.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;
	struct ibv_mr *mr;
	struct ibv_mw *mw;
	struct ibv_wc wc;
	uint32_t rkey;
	int n = 0;

	mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_MW_BIND);
	mw = mr ? ibv_alloc_mw(pd, IBV_MW_TYPE_2) : NULL;
	if (!mw)
		die("reg_mr, alloc_mw");
	rkey = mw->rkey;
	if (ibv_dealloc_mw(mw))
		die("dealloc_mw");
	sge.addr = (uintptr_t)&buf[0];
	sge.lkey = mr->lkey;
	wr.wr.rdma.remote_addr = (uintptr_t)&buf[1];
	wr.wr.rdma.rkey = rkey;
	if (ibv_post_send(qp, &wr, &bad))
		die("post_send");
	for (int i = 0; i < 1000 && !n; i++) {
		n = ibv_poll_cq(cq, 1, &wc);
		if (!n)
			usleep(1000);
	}
	if (n != 1) {
		fprintf(stderr, "sim-strict: no completion for the WRITE\n");
		return 1;
	}
	printf("WRITE through a deallocated window's rkey 0x%x: %s\n", rkey,
	       ibv_wc_status_str(wc.status));
	ibv_dereg_mr(mr);
	return wc.status == IBV_WC_REM_ACCESS_ERR ? 0 : 1;
}

/*
 * An RDMA READ into a buffer, then, posted with it, an RDMA WRITE from
 * that buffer: with @fence the WRITE waits for the READ's data (no
 * breach); without, the adapter may send the bytes from before it.
 */
static int read_then_write(int fence)
{
	static uint8_t buf[64];
	struct ibv_sge read_sge = { (uintptr_t)buf, 16, 0 },
		       write_sge = { (uintptr_t)buf, 16, 0 };
	struct ibv_send_wr write = {
		.sg_list = &write_sge, .num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE,
		.send_flags = IBV_SEND_SIGNALED | fence,
	}, read = {
		.sg_list = &read_sge, .num_sge = 1, .next = &write,
		.opcode = IBV_WR_RDMA_READ,
	}, *bad;
	struct ibv_mr *mr;
	struct ibv_wc wc;
	int n = 0;

	mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE);
	if (!mr)
		die("reg_mr");
	memcpy(buf + 32, "fresh bytes, 16.", 16);
	read_sge.lkey = write_sge.lkey = mr->lkey;
	read.wr.rdma.remote_addr = (uintptr_t)buf + 32;
	read.wr.rdma.rkey = mr->rkey;
	write.wr.rdma.remote_addr = (uintptr_t)buf + 48;
	write.wr.rdma.rkey = mr->rkey;
	if (ibv_post_send(qp, &read, &bad))
		die("post_send");
	for (int i = 0; i < 1000 && !n; i++) {
		n = ibv_poll_cq(cq, 1, &wc);
		if (!n)
			usleep(1000);
	}
	ibv_dereg_mr(mr);
	if (n != 1 || wc.status != IBV_WC_SUCCESS) {
		fprintf(stderr, "sim-strict: the WRITE did not complete\n");
		return 1;
	}
	return memcmp(buf + 48, "fresh bytes, 16.", 16) ? 1 : 0;
}

static int read_then_write_unfenced(void)
{
	return read_then_write(0);
}

static int read_fence_write(void)
{
	return read_then_write(IBV_SEND_FENCE);
}

/* The breaches made by the WQE or doorbell alone: the device looks after. */
static int looked_at(void)
{
	usleep(200 * 1000);	/* before the process goes */
	return 0;
}

/* A NOP, properly made: nothing to report. */
static int none(void)
{
	ring(first_wqe(), MLX4_OPCODE_NOP, 1);
	return looked_at();
}

static int foreign_doorbell(void)
{
	*(volatile uint32_t *)dvqp.sdb =
		htobe32((be32toh(dvqp.doorbell_qpn) >> 8 ^ 0x1000) << 8);
	return looked_at();
}

static int oversized_wqe(void)
{
	ring(first_wqe(), MLX4_OPCODE_SEND, 63);
	return looked_at();
}

/* 60 bytes inline right after the control segment. */
static int inline_across_64(void)
{
	struct mlx4_wqe_ctrl_seg *ctrl = first_wqe();

	*(uint32_t *)(ctrl + 1) = htobe32(MLX4_INLINE_SEG | 60);
	ring(ctrl, MLX4_OPCODE_SEND, 5);
	return looked_at();
}

/* A stamp where a data segment should start. */
static int stamp_inside_wqe(void)
{
	struct mlx4_wqe_ctrl_seg *ctrl = first_wqe();
	struct mlx4_wqe_data_seg *d = (void *)(ctrl + 1);

	d->byte_count = htobe32(0xffffffff);
	ring(ctrl, MLX4_OPCODE_SEND, 2);
	return looked_at();
}

/*
 * A gather entry of nearly 2 GiB, then an inline segment: a device that
 * added the gather length before refusing the mix would copy the inline
 * bytes far past its buffer.
 */
static int gather_then_inline(void)
{
	struct mlx4_wqe_ctrl_seg *ctrl = first_wqe();
	uint8_t *seg = (uint8_t *)(ctrl + 1);
	struct mlx4_wqe_data_seg *d = (void *)seg;

	d->byte_count = htobe32(0x7ffffff0);
	d->lkey = htobe32(0x1234);
	d->addr = htobe64(0x10000);
	*(uint32_t *)(seg + 16) = htobe32(MLX4_INLINE_SEG | 12);
	ring(ctrl, MLX4_OPCODE_SEND, 3);
	return looked_at();
}

static int foreign_cq_doorbell(void)
{
	cq_doorbell(2u << 24 | (dvcq.cqn ^ 0x1000), 0);
	return looked_at();
}

/* Consumer index 5 on a CQ that produced nothing. */
static int ci_ahead(void)
{
	*dvcq.set_ci_db = htobe32(5);
	*dvcq.arm_db = htobe32(2u << 24 | 5);
	cq_doorbell(2u << 24 | dvcq.cqn, 5);
	return looked_at();
}

/* A NOP with the second pass's owner bit on the first pass. */
static int owner_out_of_step(void)
{
	ring(first_wqe(), MLX4_OPCODE_NOP | 1u << 31, 1);
	return looked_at();
}

/* Say twice the ring is posted, then send to ourselves. */
static int rq_overrun(void)
{
	*dvqp.rdb = htobe32(2 * dvqp.rq.wqe_cnt);
	ring(first_wqe(), MLX4_OPCODE_SEND, 1);
	return looked_at();
}

/* One way to misbehave a run, by name; what each does. */
static const struct {
	const char *name;
	int (*run)(void);	/* the run's exit status */
	const char *what;
} breaches[] = {
	{ "none", none, "a NOP, properly made: no breach" },
	{ "foreign-doorbell", foreign_doorbell,
	  "the send doorbell rung for a QP of no one's" },
	{ "oversized-wqe", oversized_wqe, "a WQE of 63 16-byte units" },
	{ "inline-across-64", inline_across_64,
	  "an inline segment across a 64-byte boundary" },
	{ "stamp-inside-wqe", stamp_inside_wqe,
	  "a stamp where a data segment should start" },
	{ "gather-then-inline", gather_then_inline,
	  "a gather entry of nearly 2 GiB, then an inline segment" },
	{ "inline-read", inline_read,
	  "an RDMA READ carrying inline data: an error, nothing written" },
	{ "stale-window", stale_window,
	  "an RDMA WRITE to a deallocated window's rkey: an access error" },
	{ "read-then-write", read_then_write_unfenced,
	  "an RDMA WRITE from where an unfenced READ lands" },
	{ "read-fence-write", read_fence_write,
	  "the same WRITE fenced: it sends the READ's bytes" },
	{ "foreign-cq-doorbell", foreign_cq_doorbell,
	  "a CQ doorbell for a CQ of no one's" },
	{ "ci-ahead", ci_ahead,
	  "a consumer index ahead of what the CQ produced" },
	{ "owner-out-of-step", owner_out_of_step,
	  "a WQE with the next pass's owner bit" },
	{ "rq-overrun", rq_overrun,
	  "a receive doorbell record beyond the ring" },
};

#define NBREACHES (sizeof(breaches) / sizeof(breaches[0]))

/*
 * Usage: sim-strict [--list | --help | NAME], one breach a run ("none"
 * when none is named).  An unknown name: a message, exit status 2.
 */
int main(int argc, char **argv)
{
	const char *how = argc > 1 ? argv[1] : "none";
	size_t i;

	if (argc > 2) {
		fprintf(stderr, "sim-strict: one breach a run (sim-strict --help)\n");
		return 2;
	}
	if (!strcmp(how, "--list")) {
		for (i = 0; i < NBREACHES; i++)
			printf("%s\n", breaches[i].name);
		return 0;
	}
	if (!strcmp(how, "--help") || !strcmp(how, "-h")) {
		printf("usage: sim-strict [--list | NAME]\n"
		       "One breach of the protocol a run, by name (none by default):\n");
		for (i = 0; i < NBREACHES; i++)
			printf("  %-22s %s\n", breaches[i].name,
			       breaches[i].what);
		return 0;
	}
	for (i = 0; i < NBREACHES && strcmp(breaches[i].name, how); i++)
		;
	if (i == NBREACHES) {
		fprintf(stderr, "sim-strict: unknown breach '%s' (sim-strict --list names them)\n",
			how);
		return 2;
	}
	setup();
	return breaches[i].run();
}
