/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Data-path cost of an mlx4 provider, measured in instructions.
 *
 * Two RC QPs on the first port of the first device are connected to each
 * other, and two UD QPs address each other.  Each operation under test is called through a wrapper that is
 * never inlined, so that `valgrind --tool=callgrind --toggle-collect=
 * bench_<op>` counts exactly the instructions of the ibv_* call (the
 * jump through the context's ops table included) and nothing of the
 * set-up, draining or polling around it.  bench/run.sh runs this for
 * each operation and provider and divides by the number of calls, which
 * this program prints.
 *
 *   mlx4-bench OP [ITERATIONS]
 *   OP: post_recv          a receive, 1 SGE
 *       post_send          an RC SEND, 1 SGE
 *       post_send_inline   an RC SEND, 64 bytes inline
 *       post_send_write    an RC RDMA WRITE, 1 SGE
 *       post_send_ud       a UD SEND, 1 SGE
 *       poll_cq_empty      a poll of an empty CQ
 *       poll_cq_one        a poll for one CQE, one waiting each time
 *                          (a send's completion)
 *       poll_cq_batch      polls for 16 receive CQEs, all waiting: the
 *                          figure is per CQE
 *   and the same work through the extended verbs (libmlx4 only; bench/
 *   run.sh compares them with the distribution's calls above):
 *       wr_send, wr_send_inline, wr_rdma_write, wr_send_ud
 *                          ibv_wr_start, the request and its data,
 *                          ibv_wr_complete: one WQE
 *       lazy_poll_empty, lazy_poll_one, lazy_poll_batch
 *                          ibv_start_poll (ibv_next_poll), reading
 *                          wr_id, status, opcode and byte_len of each
 *                          CQE, ibv_end_poll
 */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <infiniband/verbs.h>

enum {
	BATCH = 128,
	MSG = 64,
	GRH = 40,		/* a UD receive's first bytes */
	POLL_BATCH = 16,
};

#define NOINLINE __attribute__((noinline, noclone))

/*
 * The measured calls: one each, nothing else inside.  Each phase has a
 * wrapper of its own, bench_PHASE, because callgrind collects by function
 * (--toggle-collect=bench_PHASE).
 */
NOINLINE int bench_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
			     struct ibv_recv_wr **bad)
{
	return ibv_post_recv(qp, wr, bad);
}

#define BENCH_POST_SEND(phase)						\
NOINLINE int bench_##phase(struct ibv_qp *qp, struct ibv_send_wr *wr,	\
			   struct ibv_send_wr **bad)			\
{									\
	return ibv_post_send(qp, wr, bad);				\
}
BENCH_POST_SEND(post_send)
BENCH_POST_SEND(post_send_inline)
BENCH_POST_SEND(post_send_write)
BENCH_POST_SEND(post_send_ud)

#define BENCH_POLL_CQ(phase)						\
NOINLINE int bench_##phase(struct ibv_cq *cq, int ne, struct ibv_wc *wc) \
{									\
	return ibv_poll_cq(cq, ne, wc);					\
}
BENCH_POLL_CQ(poll_cq_empty)
BENCH_POLL_CQ(poll_cq_one)
BENCH_POLL_CQ(poll_cq_batch)

/*
 * One WQE through the ibv_wr_* calls: the kinds of request of the
 * post_send phases.  @ah non-NULL: a UD SEND to @remote_qpn.
 */
NOINLINE int bench_wr_send(struct ibv_qp_ex *qpx, const struct ibv_sge *sge)
{
	ibv_wr_start(qpx);
	qpx->wr_id = 1;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(qpx);
	ibv_wr_set_sge(qpx, sge->lkey, sge->addr, sge->length);
	return ibv_wr_complete(qpx);
}

NOINLINE int bench_wr_send_inline(struct ibv_qp_ex *qpx,
				  const struct ibv_sge *sge)
{
	ibv_wr_start(qpx);
	qpx->wr_id = 1;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(qpx);
	ibv_wr_set_inline_data(qpx, (void *)(uintptr_t)sge->addr, sge->length);
	return ibv_wr_complete(qpx);
}

NOINLINE int bench_wr_rdma_write(struct ibv_qp_ex *qpx,
				 const struct ibv_sge *sge, uint32_t rkey,
				 uint64_t raddr)
{
	ibv_wr_start(qpx);
	qpx->wr_id = 1;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(qpx, rkey, raddr);
	ibv_wr_set_sge(qpx, sge->lkey, sge->addr, sge->length);
	return ibv_wr_complete(qpx);
}

NOINLINE int bench_wr_send_ud(struct ibv_qp_ex *qpx, const struct ibv_sge *sge,
			      struct ibv_ah *ah, uint32_t remote_qpn,
			      uint32_t qkey)
{
	ibv_wr_start(qpx);
	qpx->wr_id = 1;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(qpx);
	ibv_wr_set_ud_addr(qpx, ah, remote_qpn, qkey);
	ibv_wr_set_sge(qpx, sge->lkey, sge->addr, sge->length);
	return ibv_wr_complete(qpx);
}

/* What a lazy poll reads of each CQE: what poll_cq's users look at. */
struct lazy_wc {
	uint64_t wr_id;
	int status;
	int opcode;
	uint32_t byte_len;
};

static inline void lazy_read(struct ibv_cq_ex *cq, struct lazy_wc *wc)
{
	wc->wr_id = cq->wr_id;
	wc->status = cq->status;
	wc->opcode = ibv_wc_read_opcode(cq);
	wc->byte_len = ibv_wc_read_byte_len(cq);
}

/* Up to @ne CQEs by ibv_start_poll/ibv_next_poll; how many. */
static inline int lazy_poll(struct ibv_cq_ex *cq, int ne, struct lazy_wc *wc)
{
	struct ibv_poll_cq_attr attr = {};
	int n = 0;

	if (ibv_start_poll(cq, &attr))
		return 0;
	do
		lazy_read(cq, &wc[n++]);
	while (n < ne && !ibv_next_poll(cq));
	ibv_end_poll(cq);
	return n;
}

NOINLINE int bench_lazy_poll_empty(struct ibv_cq_ex *cq, struct lazy_wc *wc)
{
	return lazy_poll(cq, 1, wc);
}

NOINLINE int bench_lazy_poll_one(struct ibv_cq_ex *cq, struct lazy_wc *wc)
{
	return lazy_poll(cq, 1, wc);
}

NOINLINE int bench_lazy_poll_batch(struct ibv_cq_ex *cq, int ne,
				   struct lazy_wc *wc)
{
	return lazy_poll(cq, ne, wc);
}

struct bench {
	int extended;			/* the wr_ and lazy_ phases */
	struct ibv_cq_ex *send_cqx, *recv_cqx, *idle_cqx;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct ibv_cq *send_cq, *recv_cq, *idle_cq;
	struct ibv_qp *a, *b;		/* a sends to b */
	struct ibv_qp *ud_a, *ud_b;	/* the same, by UD */
	struct ibv_ah *ah;		/* ud_a's address of ud_b */
	uint8_t *buf;
	struct ibv_sge sge, ud_sge;
	struct ibv_recv_wr rwr;
	struct ibv_send_wr swr;
};

/* A Q_Key that reads differently byte-swapped. */
#define BENCH_QKEY	0x1a2b3c4d

static void die(const char *what)
{
	fprintf(stderr, "mlx4-bench: %s: %s\n", what, strerror(errno));
	exit(1);
}

static struct ibv_qp *create_qp(struct bench *b, enum ibv_qp_type type)
{
	struct ibv_qp_init_attr attr = {
		.send_cq = b->send_cq,
		.recv_cq = b->recv_cq,
		.cap = {
			.max_send_wr = BATCH, .max_recv_wr = BATCH,
			.max_send_sge = 1, .max_recv_sge = 1,
			.max_inline_data = MSG,
		},
		.qp_type = type,
	};
	struct ibv_qp_init_attr_ex ex = {
		.send_cq = attr.send_cq, .recv_cq = attr.recv_cq,
		.cap = attr.cap, .qp_type = type, .pd = b->pd,
		.comp_mask = IBV_QP_INIT_ATTR_PD |
			     IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.send_ops_flags = IBV_QP_EX_WITH_SEND |
				  (type == IBV_QPT_RC ? IBV_QP_EX_WITH_RDMA_WRITE : 0),
	};
	struct ibv_qp *qp = b->extended ? ibv_create_qp_ex(b->ctx, &ex) :
					  ibv_create_qp(b->pd, &attr);

	if (!qp)
		die(b->extended ? "ibv_create_qp_ex with send_ops_flags" :
				  "ibv_create_qp");
	return qp;
}

/* A CQ of @cqe entries; an extended one for the extended phases. */
static struct ibv_cq *create_cq(struct bench *b, int cqe,
				struct ibv_cq_ex **cqx)
{
	struct ibv_cq_init_attr_ex attr = {
		.cqe = cqe, .wc_flags = IBV_WC_EX_WITH_BYTE_LEN,
	};

	*cqx = NULL;
	if (!b->extended)
		return ibv_create_cq(b->ctx, cqe, NULL, NULL, 0);
	*cqx = ibv_create_cq_ex(b->ctx, &attr);
	return *cqx ? ibv_cq_ex_to_cq(*cqx) : NULL;
}

static void connect_qp(struct ibv_qp *qp, uint32_t dest_qpn, uint16_t lid)
{
	struct ibv_qp_attr attr = {
		.qp_state = IBV_QPS_INIT,
		.port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE,
	};

	if (ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		die("modify to INIT");

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_RTR;
	attr.path_mtu = IBV_MTU_1024;
	attr.dest_qp_num = dest_qpn;
	attr.rq_psn = 0;
	attr.max_dest_rd_atomic = 1;
	attr.min_rnr_timer = 12;
	attr.ah_attr.dlid = lid;
	attr.ah_attr.port_num = 1;
	if (ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_AV |
			  IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		die("modify to RTR");

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_RTS;
	attr.timeout = 14;
	attr.retry_cnt = 7;
	attr.rnr_retry = 7;
	attr.sq_psn = 0;
	attr.max_rd_atomic = 1;
	if (ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_TIMEOUT |
			  IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
			  IBV_QP_MAX_QP_RD_ATOMIC))
		die("modify to RTS");
}

/* A UD QP through INIT, RTR and RTS. */
static void ready_ud_qp(struct ibv_qp *qp)
{
	struct ibv_qp_attr attr = {
		.qp_state = IBV_QPS_INIT,
		.port_num = 1,
		.qkey = BENCH_QKEY,
	};

	if (ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_QKEY))
		die("modify UD to INIT");
	attr.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(qp, &attr, IBV_QP_STATE))
		die("modify UD to RTR");
	attr.qp_state = IBV_QPS_RTS;
	attr.sq_psn = 0;
	if (ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_SQ_PSN))
		die("modify UD to RTS");
}

static void setup(struct bench *b)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_port_attr port;

	if (!list || !list[0])
		die("no RDMA device");
	b->ctx = ibv_open_device(list[0]);
	if (!b->ctx)
		die("ibv_open_device");
	ibv_free_device_list(list);

	b->pd = ibv_alloc_pd(b->ctx);
	b->buf = calloc(1, 2 * MSG + GRH);
	if (!b->pd || !b->buf)
		die("ibv_alloc_pd");
	b->mr = ibv_reg_mr(b->pd, b->buf, 2 * MSG + GRH,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	b->send_cq = create_cq(b, 2 * BATCH, &b->send_cqx);
	b->recv_cq = create_cq(b, 2 * BATCH, &b->recv_cqx);
	b->idle_cq = create_cq(b, 16, &b->idle_cqx);
	if (!b->mr || !b->send_cq || !b->recv_cq || !b->idle_cq)
		die("ibv_reg_mr / ibv_create_cq");

	b->a = create_qp(b, IBV_QPT_RC);
	b->b = create_qp(b, IBV_QPT_RC);
	if (ibv_query_port(b->ctx, 1, &port))
		die("ibv_query_port");
	connect_qp(b->a, b->b->qp_num, port.lid);
	connect_qp(b->b, b->a->qp_num, port.lid);

	b->ud_a = create_qp(b, IBV_QPT_UD);
	b->ud_b = create_qp(b, IBV_QPT_UD);
	ready_ud_qp(b->ud_a);
	ready_ud_qp(b->ud_b);
	b->ah = ibv_create_ah(b->pd, &(struct ibv_ah_attr){
		.dlid = port.lid, .port_num = 1 });
	if (!b->ah)
		die("ibv_create_ah");
	/* A UD receive takes the GRH's room first. */
	b->ud_sge.addr = (uintptr_t)b->buf;
	b->ud_sge.length = MSG + GRH;
	b->ud_sge.lkey = b->mr->lkey;

	b->sge.addr = (uintptr_t)b->buf;
	b->sge.length = MSG;
	b->sge.lkey = b->mr->lkey;
	b->rwr.sg_list = &b->sge;
	b->rwr.num_sge = 1;
	b->swr.sg_list = &b->sge;
	b->swr.num_sge = 1;
	b->swr.opcode = IBV_WR_SEND;
	b->swr.send_flags = IBV_SEND_SIGNALED;
}

/* Wait for @n completions on @cq (not measured). */
static void drain(struct ibv_cq *cq, int n)
{
	struct ibv_wc wc[16];
	long spins = 0;

	while (n > 0) {
		int got = ibv_poll_cq(cq, 16, wc);
		int i;

		if (got < 0)
			die("ibv_poll_cq");
		for (i = 0; i < got; i++)
			if (wc[i].status != IBV_WC_SUCCESS) {
				fprintf(stderr, "mlx4-bench: completion %s\n",
					ibv_wc_status_str(wc[i].status));
				exit(1);
			}
		n -= got;
		if (!got && ++spins > 2000000000L) {
			fprintf(stderr, "mlx4-bench: no completion\n");
			exit(1);
		}
	}
}

static void post_recvs(struct bench *b, struct ibv_qp *qp, int n,
		       int measured)
{
	struct ibv_recv_wr wr = b->rwr, *bad;
	int i;

	if (qp == b->ud_b)
		wr.sg_list = &b->ud_sge;
	for (i = 0; i < n; i++) {
		int ret = measured ? bench_post_recv(qp, &wr, &bad) :
				     ibv_post_recv(qp, &wr, &bad);
		if (ret) {
			errno = ret;
			die("ibv_post_recv");
		}
	}
}

/* The send requests of the phases, by name; all signaled. */
enum send_kind { SEND, SEND_INLINE, WRITE, UD_SEND };

static struct ibv_qp *send_qp(struct bench *b, enum send_kind kind)
{
	return kind == UD_SEND ? b->ud_a : b->a;
}

static struct ibv_send_wr send_wr(struct bench *b, enum send_kind kind)
{
	struct ibv_send_wr wr = b->swr;

	wr.send_flags = IBV_SEND_SIGNALED;
	if (kind == SEND_INLINE)
		wr.send_flags |= IBV_SEND_INLINE;
	if (kind == WRITE) {
		wr.opcode = IBV_WR_RDMA_WRITE;
		wr.wr.rdma.remote_addr = (uintptr_t)b->buf + MSG;
		wr.wr.rdma.rkey = b->mr->rkey;
	}
	if (kind == UD_SEND) {
		wr.wr.ud.ah = b->ah;
		wr.wr.ud.remote_qpn = b->ud_b->qp_num;
		wr.wr.ud.remote_qkey = BENCH_QKEY;
	}
	return wr;
}

/* The measured request of @kind, through the ibv_wr_* calls. */
static int post_by_wr(struct bench *b, enum send_kind kind, struct ibv_qp *qp)
{
	struct ibv_qp_ex *qpx = ibv_qp_to_qp_ex(qp);

	switch (kind) {
	case SEND_INLINE:
		return bench_wr_send_inline(qpx, &b->sge);
	case WRITE:
		return bench_wr_rdma_write(qpx, &b->sge, b->mr->rkey,
					   (uintptr_t)b->buf + MSG);
	case UD_SEND:
		return bench_wr_send_ud(qpx, &b->sge, b->ah, b->ud_b->qp_num,
					BENCH_QKEY);
	default:
		return bench_wr_send(qpx, &b->sge);
	}
}

static void post_sends(struct bench *b, enum send_kind kind, int n,
		       int measured)
{
	struct ibv_send_wr wr = send_wr(b, kind), *bad;
	struct ibv_qp *qp = send_qp(b, kind);
	int i;

	for (i = 0; i < n; i++) {
		int ret;

		if (!measured)
			ret = ibv_post_send(qp, &wr, &bad);
		else if (b->extended)
			ret = post_by_wr(b, kind, qp);
		else if (kind == SEND_INLINE)
			ret = bench_post_send_inline(qp, &wr, &bad);
		else if (kind == WRITE)
			ret = bench_post_send_write(qp, &wr, &bad);
		else if (kind == UD_SEND)
			ret = bench_post_send_ud(qp, &wr, &bad);
		else
			ret = bench_post_send(qp, &wr, &bad);
		if (ret) {
			errno = ret;
			die("ibv_post_send");
		}
	}
}

/* BATCH of @kind through, the sends measured, all completions drained. */
static long round_of_sends(struct bench *b, enum send_kind kind)
{
	int recvs = kind != WRITE;

	if (recvs)
		post_recvs(b, kind == UD_SEND ? b->ud_b : b->b, BATCH, 0);
	post_sends(b, kind, BATCH, 1);
	drain(b->send_cq, BATCH);
	if (recvs)
		drain(b->recv_cq, BATCH);
	return BATCH;
}

static long round_of_recvs(struct bench *b)
{
	post_recvs(b, b->b, BATCH, 1);
	post_sends(b, SEND, BATCH, 0);
	drain(b->send_cq, BATCH);
	drain(b->recv_cq, BATCH);
	return BATCH;
}

/* BATCH completions waiting on @cq (receives or sends), none polled. */
static void completions_waiting(struct bench *b, struct ibv_cq *cq)
{
	struct timespec ts = { 0, 20 * 1000 * 1000 };

	post_recvs(b, b->b, BATCH, 0);
	post_sends(b, SEND, BATCH, 0);
	drain(cq == b->send_cq ? b->recv_cq : b->send_cq, BATCH);
	/* Let every completion of @cq arrive before measuring. */
	nanosleep(&ts, NULL);
}

/* Polls for one CQE, one waiting each time: the calls, empty ones too. */
static long round_of_polls_one(struct bench *b)
{
	struct ibv_wc wc;
	long calls = 0;
	int i;

	completions_waiting(b, b->send_cq);
	for (i = 0; i < BATCH; ) {
		struct lazy_wc lwc;
		int r, status;

		if (b->extended) {
			r = bench_lazy_poll_one(b->send_cqx, &lwc);
			status = lwc.status;
		} else {
			r = bench_poll_cq_one(b->send_cq, 1, &wc);
			status = wc.status;
		}
		if (r < 0 || (r == 1 && status))
			die("poll_cq_one");
		i += r;
		calls++;
	}
	return calls;
}

/* Polls for POLL_BATCH receive CQEs: the figure is per CQE polled. */
static long round_of_polls_batch(struct bench *b)
{
	struct ibv_wc wc[POLL_BATCH];
	int i, j;

	completions_waiting(b, b->recv_cq);
	for (i = 0; i < BATCH; ) {
		struct lazy_wc lwc[POLL_BATCH];
		int r;

		if (b->extended) {
			r = bench_lazy_poll_batch(b->recv_cqx, POLL_BATCH, lwc);
			for (j = 0; j < r; j++)
				if (lwc[j].status || lwc[j].byte_len != MSG)
					die("lazy_poll_batch: a wrong completion");
		} else {
			r = bench_poll_cq_batch(b->recv_cq, POLL_BATCH, wc);
			if (r < 0)
				die("poll_cq_batch");
			for (j = 0; j < r; j++)
				if (wc[j].status || wc[j].byte_len != MSG)
					die("poll_cq_batch: a wrong completion");
		}
		i += r;
	}
	return BATCH;
}

static long round_of_polls_empty(struct bench *b)
{
	struct ibv_wc wc;
	int i;

	for (i = 0; i < BATCH; i++) {
		struct lazy_wc lwc;

		if (b->extended ? bench_lazy_poll_empty(b->idle_cqx, &lwc) :
				  bench_poll_cq_empty(b->idle_cq, 1, &wc))
			die("poll of an idle CQ found a completion");
	}
	return BATCH;
}

/* Each phase: BATCH operations a round; returns the measured units. */
static long run_round(struct bench *b, const char *op)
{
	static const struct {
		const char *name;
		enum send_kind kind;
	} sends[] = {
		{ "post_send", SEND },
		{ "post_send_inline", SEND_INLINE },
		{ "post_send_write", WRITE },
		{ "post_send_ud", UD_SEND },
		{ "wr_send", SEND },
		{ "wr_send_inline", SEND_INLINE },
		{ "wr_rdma_write", WRITE },
		{ "wr_send_ud", UD_SEND },
	};
	size_t i;

	for (i = 0; i < sizeof(sends) / sizeof(sends[0]); i++)
		if (!strcmp(op, sends[i].name))
			return round_of_sends(b, sends[i].kind);
	if (!strcmp(op, "post_recv"))
		return round_of_recvs(b);
	if (!strcmp(op, "poll_cq_one") || !strcmp(op, "lazy_poll_one"))
		return round_of_polls_one(b);
	if (!strcmp(op, "poll_cq_batch") || !strcmp(op, "lazy_poll_batch"))
		return round_of_polls_batch(b);
	if (!strcmp(op, "poll_cq_empty") || !strcmp(op, "lazy_poll_empty"))
		return round_of_polls_empty(b);
	return -1;
}

int main(int argc, char **argv)
{
	const char *op = argc > 1 ? argv[1] : "";
	long iters = argc > 2 ? atol(argv[2]) : 4096;
	long done, calls = 0;	/* units of the measured wrapper */
	struct bench b = {};

	if (iters < BATCH || iters % BATCH) {
		fprintf(stderr, "mlx4-bench: iterations: a multiple of %d\n", BATCH);
		return 2;
	}
	b.extended = !strncmp(op, "wr_", 3) || !strncmp(op, "lazy_", 5);
	setup(&b);

	for (done = 0; done < iters; done += BATCH) {
		long units = run_round(&b, op);

		if (units < 0) {
			fprintf(stderr, "usage: mlx4-bench post_recv|post_send|"
				"post_send_inline|post_send_write|post_send_ud|"
				"poll_cq_empty|poll_cq_one|poll_cq_batch|"
				"wr_send|wr_send_inline|wr_rdma_write|wr_send_ud|"
				"lazy_poll_empty|lazy_poll_one|lazy_poll_batch "
				"[ITERATIONS]\n");
			return 2;
		}
		calls += units;
	}

	/* poll_cq_one counts the empty polls of a late completion too. */
	printf("calls %ld\n", calls);

	ibv_destroy_qp(b.a);
	ibv_destroy_qp(b.b);
	ibv_destroy_qp(b.ud_a);
	ibv_destroy_qp(b.ud_b);
	ibv_destroy_ah(b.ah);
	ibv_destroy_cq(b.send_cq);
	ibv_destroy_cq(b.recv_cq);
	ibv_destroy_cq(b.idle_cq);
	ibv_dereg_mr(b.mr);
	ibv_dealloc_pd(b.pd);
	ibv_close_device(b.ctx);
	free(b.buf);
	return 0;
}
