/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Faults injected with `mlx4sim fault` (the command is $MLX4SIM), and what
 * each end of a connection sees: RC retransmits what was lost, within
 * retry_cnt and the ACK timeout, and fails with RETRY_EXC_ERR or
 * RNR_RETRY_EXC_ERR when they run out; duplicates are answered and not
 * executed again; UD and UC lose silently; port, QP and device failures
 * arrive as async events.  Every case asserts that its fault fired (the
 * daemon's counts, or a retransmission's delay), so that a simulator that
 * ignored the fault fails it.
 */
#define _GNU_SOURCE
#include <endian.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../tap.h"
#include "../cases.h"
#include "../buffer.h"
#include "../device.h"
#include "../qp-connect.h"
#include "../wait.h"
#include "../../sim/host/protocol.h"

#define BUF_SIZE	8192
#define SEND_OFF	0
#define RECV_OFF	2048
#define ATOMIC_OFF	4096
#define RESULT_OFF	4104
#define MSG_LEN		200
#define QUIET_MS	30	/* how long "nothing more arrives" is watched */

static const char *mlx4sim;

/* ------------------------------------------------------------------ */
/* The fault command                                                   */
/* ------------------------------------------------------------------ */

static __attribute__((format(printf, 1, 2))) int fault(const char *fmt, ...)
{
	char args[256], cmd[1024];
	va_list ap;
	int st;

	va_start(ap, fmt);
	vsnprintf(args, sizeof(args), fmt, ap);
	va_end(ap);
	snprintf(cmd, sizeof(cmd), "'%s' fault %s", mlx4sim, args);
	st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* One of the counts `mlx4sim fault status` prints. */
static long long fault_count(const char *name)
{
	char cmd[512], key[32];
	long long v, found = -1;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "'%s' fault status", mlx4sim);
	f = popen(cmd, "r");
	if (!f)
		return -1;
	while (fscanf(f, "%31s %lld", key, &v) == 2)
		if (!strcmp(key, name))
			found = v;
	pclose(f);
	return found;
}

/* Fault timings are checked to a fraction of a millisecond. */
static double fine_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* ------------------------------------------------------------------ */
/* Two QPs of one context, connected through port 1                    */
/* ------------------------------------------------------------------ */

struct side {
	struct ibv_qp *qp;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t *buf;
};

struct conn {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	enum ibv_qp_type type;
	struct side a, b;		/* a requests, b responds */
	uint16_t lid;
};

struct params {
	enum ibv_qp_type type;
	uint8_t timeout, retry_cnt, rnr_retry, min_rnr_timer;
	uint32_t a_sq_psn, b_rq_psn;
};

#define QKEY	0x1a2b3c4d	/* reads differently byte-swapped */

static void make_side(struct conn *c, struct side *s)
{
	struct ibv_qp_init_attr init = {
		.qp_type = c->type,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};

	s->buf = registered_buffer(c->pd, BUF_SIZE, ACCESS_ALL, &s->mr);
	s->cq = ibv_create_cq(c->ctx, 16, NULL, NULL, 0);
	if (!s->cq)
		bail("create_cq");
	init.send_cq = init.recv_cq = s->cq;
	s->qp = ibv_create_qp(c->pd, &init);
	if (!s->qp)
		bail("create_qp");
}

static void to_rts(struct conn *c, struct side *s, uint32_t dest_qpn,
		   const struct params *p, uint32_t sq_psn, uint32_t rq_psn)
{
	const struct qp_path path = {
		.remote_qpn = dest_qpn, .dlid = c->lid,
		.rq_psn = rq_psn, .sq_psn = sq_psn, .qkey = QKEY,
		.access = c->type == IBV_QPT_UC ? IBV_ACCESS_REMOTE_WRITE :
			  IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			  IBV_ACCESS_REMOTE_ATOMIC,
		.rd_atomic = 1, .min_rnr_timer = p->min_rnr_timer,
		.timeout = p->timeout, .retry_cnt = p->retry_cnt,
		.rnr_retry = p->rnr_retry,
	};
	const char *step;

	if (qp_connect(s->qp, &path, &step))
		bail(step);
}

/* The device, a PD and both sides, not yet connected. */
static void conn_create(struct conn *c, enum ibv_qp_type type)
{
	struct ibv_port_attr port;

	memset(c, 0, sizeof(*c));
	c->type = type;
	c->ctx = open_first_device("faults");
	c->pd = ibv_alloc_pd(c->ctx);
	if (!c->pd || ibv_query_port(c->ctx, 1, &port))
		bail("alloc_pd/query_port");
	c->lid = port.lid;
	make_side(c, &c->a);
	make_side(c, &c->b);
}

/* Both sides, each connected to the other. */
static void conn_open(struct conn *c, const struct params *p)
{
	conn_create(c, p->type);
	to_rts(c, &c->a, c->b.qp->qp_num, p, p->a_sq_psn, 0);
	to_rts(c, &c->b, c->a.qp->qp_num, p, 0, p->b_rq_psn);
}

static void side_close(struct side *s)
{
	ibv_destroy_qp(s->qp);
	ibv_destroy_cq(s->cq);
	ibv_dereg_mr(s->mr);
	free(s->buf);
}

static void conn_close(struct conn *c)
{
	side_close(&c->a);
	side_close(&c->b);
	ibv_dealloc_pd(c->pd);
	ibv_close_device(c->ctx);
}

static void post_recv(struct side *s, uint64_t wr_id)
{
	struct ibv_sge sge = {
		(uintptr_t)s->buf + RECV_OFF + (wr_id % 4) * 512, 512,
		s->mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge,
				  .num_sge = 1 }, *bad;

	if (ibv_post_recv(s->qp, &wr, &bad))
		bail("post_recv");
}

/* Receives wr_id 1 to @count, each in its own 512 bytes. */
static void post_recvs(struct side *s, int count)
{
	for (int i = 1; i <= count; i++)
		post_recv(s, i);
}

/* A message of MSG_LEN bytes, each the byte @fill. */
static void post_send(struct conn *c, uint64_t wr_id, uint8_t fill)
{
	struct ibv_sge sge = { (uintptr_t)c->a.buf + SEND_OFF + (wr_id % 4) * 256,
			       MSG_LEN, c->a.mr->lkey };
	struct ibv_send_wr wr = { .wr_id = wr_id, .sg_list = &sge,
				  .num_sge = 1, .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_ah_attr ah = { .dlid = c->lid, .port_num = 1 };
	struct ibv_ah *av = NULL;

	memset(c->a.buf + SEND_OFF + (wr_id % 4) * 256, fill, MSG_LEN);
	if (c->type == IBV_QPT_UD) {
		av = ibv_create_ah(c->pd, &ah);
		if (!av)
			bail("create_ah");
		wr.wr.ud.ah = av;
		wr.wr.ud.remote_qpn = c->b.qp->qp_num;
		wr.wr.ud.remote_qkey = QKEY;
	}
	if (ibv_post_send(c->a.qp, &wr, &bad))
		bail("post_send");
	/* The device took the AV with the WQE: the AH may go. */
	if (av)
		ibv_destroy_ah(av);
}

static void post_rdma(struct conn *c, enum ibv_wr_opcode op, uint64_t add)
{
	bool atomic = op == IBV_WR_ATOMIC_FETCH_AND_ADD;
	struct ibv_sge sge = { (uintptr_t)c->a.buf + (atomic ? RESULT_OFF : RECV_OFF),
			       atomic ? 8 : MSG_LEN, c->a.mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 7, .sg_list = &sge, .num_sge = 1,
				  .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;

	if (atomic) {
		wr.wr.atomic.remote_addr = (uintptr_t)c->b.buf + ATOMIC_OFF;
		wr.wr.atomic.rkey = c->b.mr->rkey;
		wr.wr.atomic.compare_add = add;
	} else {
		wr.wr.rdma.remote_addr = (uintptr_t)c->b.buf + SEND_OFF;
		wr.wr.rdma.rkey = c->b.mr->rkey;
	}
	if (ibv_post_send(c->a.qp, &wr, &bad))
		bail("post_send");
}

/* The next completion within @ms: 1, or 0 when none came. */
static int poll_one(struct ibv_cq *cq, int ms, struct ibv_wc *wc)
{
	int n = poll_cq_within(cq, wc, ms);

	if (n < 0)
		bail("poll_cq");
	return n;
}

/* How many completions arrive on @cq within @ms; the first in @first. */
static int drain(struct ibv_cq *cq, int ms, struct ibv_wc *first)
{
	struct ibv_wc wc;
	int n = 0;

	while (poll_one(cq, ms, &wc))
		if (!n++ && first)
			*first = wc;
	return n;
}

static bool filled(const uint8_t *p, uint8_t fill, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != fill)
			return false;
	return true;
}

static enum ibv_qp_state qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr init;

	return ibv_query_qp(qp, &a, IBV_QP_STATE, &init) ? (enum ibv_qp_state)-1 :
	       a.qp_state;
}

/* The next async event within @ms; -1 when none. */
static int next_event(struct ibv_context *ctx, int ms,
		      struct ibv_async_event *ev)
{
	struct pollfd p = { ctx->async_fd, POLLIN, 0 };
	int flags = fcntl(ctx->async_fd, F_GETFL);

	fcntl(ctx->async_fd, F_SETFL, flags | O_NONBLOCK);
	if (poll(&p, 1, ms) != 1 || ibv_get_async_event(ctx, ev)) {
		fcntl(ctx->async_fd, F_SETFL, flags);
		return -1;
	}
	fcntl(ctx->async_fd, F_SETFL, flags);
	ibv_ack_async_event(ev);
	return 0;
}

/* ACK timeout of a QP with this timeout attribute, in ms. */
static double ack_timeout_ms(uint8_t timeout)
{
	return 4.096e-3 * (1u << timeout);
}

/* A completion's status for a description: "none" when none came. */
static const char *status_str(int n, const struct ibv_wc *wc)
{
	return n ? ibv_wc_status_str(wc->status) : "none";
}

/* An RC QP's ACK timeout, retry_cnt and rnr_retry; RNR NAKs ask for 0.01 ms. */
#define RC_QP(timeout_, retry_cnt_, rnr_retry_) \
	{ IBV_QPT_RC, .timeout = (timeout_), .retry_cnt = (retry_cnt_), \
	  .rnr_retry = (rnr_retry_), .min_rnr_timer = 1 }

static const struct params rc_params = RC_QP(14, 3, 3);	/* 67 ms */

/* ------------------------------------------------------------------ */
/* SENDs under faults: scenarios, each a case, one runner            */
/* ------------------------------------------------------------------ */

enum end { REQUESTER, RESPONDER };

/*
 * A scenario: a connection, the faults set on it, its SENDs, and what
 * each end must see.  A fill byte of 0 ends a list.
 */
struct send_scenario {
	const char *what;
	struct params qp;
	struct {
		const char *rule;	/* `mlx4sim fault` arguments, less --qpn */
		enum end on;		/* whose QP it matches */
	} faults[3];
	uint8_t sends[2];		/* each SEND's fill byte, wr_id 10, 11 */
	enum ibv_wc_status status[2];	/* each SEND's completion */
	/* When the first completes: in ACK timeouts and in ms, 0 unbounded. */
	double min_timeouts, max_timeouts, min_ms, max_ms;
	const char *when;		/* that window, for the description */
	unsigned int settle_ms;		/* waited before the responder is read */
	uint8_t arrivals[2];		/* the fills received, receive 1 first */
	struct {
		const char *name;	/* a count of `mlx4sim fault status` */
		long long fired;	/* its growth */
	} counts[2];
};

static const struct send_scenario rc_send_lost = {
	.what = "RC SEND lost once",
	.qp = RC_QP(14, 3, 3),
	.faults = { { "drop --next 1", REQUESTER } },
	.sends = { 0x5a }, .status = { IBV_WC_SUCCESS },
	.min_timeouts = 1, .when = "after the ACK timeout (retransmitted)",
	.arrivals = { 0x5a }, .counts = { { "dropped", 1 } },
};

static const struct send_scenario rc_ack_lost = {
	.what = "RC SEND whose ACK is lost",
	.qp = RC_QP(14, 3, 3),
	.faults = { { "drop --next 1", RESPONDER } },
	.sends = { 0x5a }, .status = { IBV_WC_SUCCESS },
	.min_timeouts = 1, .when = "after the ACK timeout (retransmitted)",
	.arrivals = { 0x5a }, .counts = { { "dropped", 1 } },
};

/* Faults stack, and the first that matches a packet decides. */
static const struct send_scenario rc_faults_stacked = {
	.what = "RC SEND under drop, drop, duplicate",
	.qp = RC_QP(10, 3, 3),	/* ACK timeout 4.2 ms */
	.faults = { { "drop --next 1", REQUESTER },
		    { "drop --next 1", REQUESTER },
		    { "duplicate --next 5", REQUESTER } },
	.sends = { 0x5b }, .status = { IBV_WC_SUCCESS },
	.min_timeouts = 2, .when = "after two retransmissions",
	.arrivals = { 0x5b },
	.counts = { { "dropped", 2 }, { "duplicated", 1 } },
};

/* Every request lost: RETRY_EXC_ERR, then the next is flushed. */
static const struct send_scenario rc_send_always_lost = {
	.what = "RC SEND always lost",
	.qp = RC_QP(10, 2, 3),	/* ACK timeout 4.2 ms */
	.faults = { { "drop --rate 1", REQUESTER } },
	.sends = { 1, 2 },
	.status = { IBV_WC_RETRY_EXC_ERR, IBV_WC_WR_FLUSH_ERR },
	.min_timeouts = 1 + 2, .when = "after 1 + retry_cnt ACK timeouts",
	.counts = { { "dropped", 1 + 2 } },	/* 1 + retry_cnt */
};

/* The requester's PSN ahead: sequence NAKs, not timeouts. */
static const struct send_scenario rc_psn_ahead = {
	.what = "RC PSN ahead of the responder's",
	.qp = { IBV_QPT_RC, .timeout = 16 /* 268 ms */, .retry_cnt = 3,
		.rnr_retry = 3, .min_rnr_timer = 1, .a_sq_psn = 100 },
	.sends = { 1 }, .status = { IBV_WC_RETRY_EXC_ERR },
	.max_timeouts = 1, .when = "at once, NAKed, not timed out",
};

/* The requester's PSN behind: a duplicate, acknowledged. */
static const struct send_scenario rc_psn_behind = {
	.what = "RC SEND with a PSN already received",
	.qp = { IBV_QPT_RC, .timeout = 14, .retry_cnt = 3,
		.rnr_retry = 3, .min_rnr_timer = 1,
		.a_sq_psn = 40, .b_rq_psn = 50 },
	.sends = { 1 }, .status = { IBV_WC_SUCCESS },
};

static const struct send_scenario rc_rnr_retry_exceeded = {
	.what = "RC SEND to withheld receives, rnr_retry 2",
	.qp = RC_QP(14, 3, 2),
	.faults = { { "rnr", RESPONDER } },
	.sends = { 1 }, .status = { IBV_WC_RNR_RETRY_EXC_ERR },
	.counts = { { "rnr", 1 + 2 } },		/* 1 + rnr_retry */
};

/* Held back less than the ACK timeout: late, not retransmitted. */
static const struct send_scenario rc_send_delayed = {
	.what = "RC SEND delayed 20 ms",
	.qp = RC_QP(16, 3, 3),	/* ACK timeout 268 ms */
	.faults = { { "delay 20 --next 1", REQUESTER } },
	.sends = { 0x3c }, .status = { IBV_WC_SUCCESS },
	.min_ms = 19, .max_timeouts = 1,
	.when = "after the delay, before the ACK timeout",
	.arrivals = { 0x3c }, .counts = { { "delayed", 1 } },
};

static const struct send_scenario rc_ack_delayed = {
	.what = "RC SEND whose ACK is delayed 20 ms",
	.qp = RC_QP(16, 3, 3),	/* ACK timeout 268 ms */
	.faults = { { "delay 20 --next 1", RESPONDER } },
	.sends = { 0x3c }, .status = { IBV_WC_SUCCESS },
	.min_ms = 19, .max_timeouts = 1,
	.when = "after the delay, before the ACK timeout",
	.arrivals = { 0x3c }, .counts = { { "delayed", 1 } },
};

/*
 * Held back beyond the ACK timeout: the retransmission completes it, and
 * the original, arriving after, is a duplicate (settle_ms waits for it).
 */
static const struct send_scenario rc_delayed_past_timeout = {
	.what = "RC SEND delayed past the ACK timeout",
	.qp = RC_QP(12, 3, 3),	/* ACK timeout 16.8 ms */
	.faults = { { "delay 300 --next 1", REQUESTER } },
	.sends = { 0x3d }, .status = { IBV_WC_SUCCESS },
	.min_timeouts = 1, .max_ms = 250,
	.when = "after the ACK timeout, before the 300 ms delay",
	.settle_ms = 350,
	.arrivals = { 0x3d }, .counts = { { "delayed", 1 } },
};

/* A datagram overtaken by the next one. */
static const struct send_scenario ud_reordered = {
	.what = "UD SEND reordered",
	.qp = { IBV_QPT_UD },
	.faults = { { "reorder --next 1", REQUESTER } },
	.sends = { 0x11, 0x22 },
	.status = { IBV_WC_SUCCESS, IBV_WC_SUCCESS },
	.arrivals = { 0x22, 0x11 }, .counts = { { "reordered", 1 } },
};

/* UD and UC lose silently. */
static const struct send_scenario ud_send_lost = {
	.what = "UD SEND lost",
	.qp = { IBV_QPT_UD },
	.faults = { { "drop --next 1", REQUESTER } },
	.sends = { 0x11, 0x22 },
	.status = { IBV_WC_SUCCESS, IBV_WC_SUCCESS },
	.arrivals = { 0x22 }, .counts = { { "dropped", 1 } },
};

static const struct send_scenario uc_send_lost = {
	.what = "UC SEND lost",
	.qp = { IBV_QPT_UC },
	.faults = { { "drop --next 1", REQUESTER } },
	.sends = { 0x11, 0x22 },
	.status = { IBV_WC_SUCCESS, IBV_WC_SUCCESS },
	.arrivals = { 0x22 }, .counts = { { "dropped", 1 } },
};

#define NELEMS(a) (sizeof(a) / sizeof((a)[0]))

/* How many entries of a fill list (a 0 or its end ends it). */
static int fills(const uint8_t *list, int max)
{
	int n = 0;

	while (n < max && list[n])
		n++;
	return n;
}

/*
 * Sets the scenario's faults, in order; true when `mlx4sim fault`
 * accepted them all.  Their arguments go to @args, for a description.
 */
static bool set_faults(const struct send_scenario *s, const struct conn *c,
		       char *args, size_t size)
{
	bool ok = true;

	args[0] = 0;
	for (size_t i = 0; i < NELEMS(s->faults) && s->faults[i].rule; i++) {
		struct ibv_qp *qp = s->faults[i].on == REQUESTER ? c->a.qp : c->b.qp;

		ok &= fault("%s --qpn 0x%x", s->faults[i].rule, qp->qp_num) == 0;
		snprintf(args + strlen(args), size - strlen(args), "%s%s",
			 i ? ", " : "", s->faults[i].rule);
	}
	return ok;
}

/*
 * The requester's completions, in the order of its SENDs, with the
 * statuses the scenario expects; the time to the first in *@took.
 */
static void check_requester(const struct send_scenario *s, struct conn *c,
			    double t0, double *took)
{
	char got[128] = "";
	bool ok = true;
	int i, n;

	for (i = 0; i < fills(s->sends, NELEMS(s->sends)); i++) {
		struct ibv_wc wc;

		n = poll_one(c->a.cq, 5000, &wc);
		if (!i)
			*took = fine_now_ms() - t0;
		ok &= n == 1 && wc.wr_id == 10u + i && wc.status == s->status[i];
		snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%s",
			 i ? ", " : "", status_str(n, &wc));
	}
	check(ok, "%s: the requester completes %d SEND%s with %s%s%s (%s)",
	      s->what, i, i > 1 ? "s" : "", ibv_wc_status_str(s->status[0]),
	      i > 1 ? ", then " : "",
	      i > 1 ? ibv_wc_status_str(s->status[1]) : "", got);
}

/* The first completion's time, against the scenario's window. */
static void check_when(const struct send_scenario *s, double took)
{
	double timeout = ack_timeout_ms(s->qp.timeout);
	double least = s->min_timeouts * timeout * 0.9;
	double most = s->max_timeouts ? s->max_timeouts * timeout : INFINITY;

	if (s->min_ms > least)
		least = s->min_ms;
	if (s->max_ms && s->max_ms < most)
		most = s->max_ms;
	check(took >= least && took < most,
	      "%s: completes %s: %.1f ms (%.1f to %.1f ms expected)",
	      s->what, s->when, took, least, most);
}

/*
 * The responder receives the scenario's arrivals, in order, each once and
 * intact (a UD receive starts with the GRH's 40 bytes), and stays in RTS.
 */
static void check_responder(const struct send_scenario *s, struct conn *c)
{
	uint32_t grh = c->type == IBV_QPT_UD ? 40 : 0;
	int want = fills(s->arrivals, NELEMS(s->arrivals));
	bool ok = true;
	struct ibv_wc wc;
	int got = 0;

	usleep(s->settle_ms * 1000);
	for (int i = 0; i < want; i++) {
		const uint8_t *data = c->b.buf + RECV_OFF + (i + 1) * 512 + grh;

		got += poll_one(c->b.cq, 5000, &wc);
		ok &= got == i + 1 && wc.status == IBV_WC_SUCCESS &&
		      wc.wr_id == i + 1u && wc.byte_len == MSG_LEN + grh &&
		      filled(data, s->arrivals[i], MSG_LEN);
	}
	got += drain(c->b.cq, QUIET_MS, NULL);
	check(ok && got == want && qp_state(c->b.qp) == IBV_QPS_RTS,
	      "%s: the responder receives %s and stays in RTS (%d completions)",
	      s->what, !want ? "nothing" : want == 1 ? "it once, intact" :
	      "each once, intact, in the order expected", got);
}

/* The counts of `mlx4sim fault status` the scenario names, before it. */
static void counts_before(const struct send_scenario *s, long long *before)
{
	for (size_t i = 0; i < NELEMS(s->counts) && s->counts[i].name; i++)
		before[i] = fault_count(s->counts[i].name);
}

/* Each of those counts grew by what the scenario says: its faults fired. */
static void check_counts(const struct send_scenario *s, const long long *before)
{
	char got[128] = "";
	bool ok = true;

	for (size_t i = 0; i < NELEMS(s->counts) && s->counts[i].name; i++) {
		long long grew = fault_count(s->counts[i].name) - before[i];

		ok &= grew == s->counts[i].fired;
		snprintf(got + strlen(got), sizeof(got) - strlen(got),
			 "%s%s %lld (%lld expected)", i ? ", " : "",
			 s->counts[i].name, grew, s->counts[i].fired);
	}
	check(ok, "%s: the faults fired: %s", s->what, got);
}

static void run_send_scenario(const struct send_scenario *s)
{
	bool failed = s->status[0] != IBV_WC_SUCCESS;
	long long before[NELEMS(s->counts)];
	double t0, took = 0;
	char args[128];
	struct conn c;

	conn_open(&c, &s->qp);
	post_recvs(&c.b, 2);
	counts_before(s, before);
	if (s->faults[0].rule)
		check(set_faults(s, &c, args, sizeof(args)),
		      "%s: fault %s accepted", s->what, args);
	t0 = fine_now_ms();
	for (int i = 0; i < fills(s->sends, NELEMS(s->sends)); i++)
		post_send(&c, 10 + i, s->sends[i]);
	check_requester(s, &c, t0, &took);
	if (s->when)
		check_when(s, took);
	check_responder(s, &c);
	check(drain(c.a.cq, QUIET_MS, NULL) == 0 &&
	      qp_state(c.a.qp) == (failed ? IBV_QPS_ERR : IBV_QPS_RTS),
	      "%s: the requester completes nothing more; its QP is in %s",
	      s->what, failed ? "ERROR" : "RTS");
	if (s->counts[0].name)
		check_counts(s, before);
	if (s->faults[0].rule)
		check(fault("clear") == 0 && fault_count("rules") == 0,
		      "%s: fault clear removes what is left", s->what);
	conn_close(&c);
}

/* ------------------------------------------------------------------ */
/* Scenarios of their own: READs, atomics, RNR, self, flood           */
/* ------------------------------------------------------------------ */

/* A READ or an atomic whose answer is lost: answered from the records. */
static void rc_lost_answer(enum ibv_wr_opcode op)
{
	bool atomic = op == IBV_WR_ATOMIC_FETCH_AND_ADD;
	const char *what = atomic ? "RC fetch-add whose answer is lost" :
				    "RC READ whose answer is lost";
	uint64_t *target, *result;
	struct ibv_wc wc;
	struct conn c;
	long long before;
	double t0, took;
	int n;

	conn_open(&c, &rc_params);
	memset(c.b.buf + SEND_OFF, 0xc3, MSG_LEN);
	target = (uint64_t *)(c.b.buf + ATOMIC_OFF);
	result = (uint64_t *)(c.a.buf + RESULT_OFF);
	*target = htobe64(1000);	/* the device's atomics are big-endian */
	before = fault_count("dropped");
	check(fault("drop --next 1 --qpn 0x%x", c.b.qp->qp_num) == 0,
	      "%s: fault accepted", what);
	t0 = fine_now_ms();
	post_rdma(&c, op, 5);
	n = poll_one(c.a.cq, 5000, &wc);
	took = fine_now_ms() - t0;
	check(n == 1 && wc.status == IBV_WC_SUCCESS,
	      "%s: requester completes it (status %s)", what,
	      status_str(n, &wc));
	check(took >= ack_timeout_ms(rc_params.timeout) * 0.9,
	      "%s: after the ACK timeout, %.1f ms", what, took);
	if (atomic) {
		check(be64toh(*target) == 1005,
		      "%s: executed once at the responder (target %" PRIu64 ", 1005 expected)",
		      what, be64toh(*target));
		check(be64toh(*result) == 1000,
		      "%s: requester gets the value before it (%" PRIu64 ")",
		      what, be64toh(*result));
	} else {
		check(filled(c.a.buf + RECV_OFF, 0xc3, MSG_LEN),
		      "%s: the data read is intact", what);
	}
	check(drain(c.a.cq, QUIET_MS, NULL) == 0 && drain(c.b.cq, 1, NULL) == 0,
	      "%s: nothing else completes on either end", what);
	check(fault_count("dropped") == before + 1,
	      "%s: the fault fired once", what);
	conn_close(&c);
}

/*
 * One receive and a SEND (wr_id 10, filled with 0x77) under `mlx4sim fault
 * RULE` on @on's packets: nothing may complete on either end within @ms.
 * Returns the fault count @count from before the rule was set.
 */
static long long send_stalled(struct conn *c, const char *what,
			      const char *rule, struct ibv_qp *on,
			      const char *count, int ms, const char *while_)
{
	long long before;

	post_recv(&c->b, 1);
	before = fault_count(count);
	check(fault("%s --qpn 0x%x", rule, on->qp_num) == 0,
	      "%s: fault %s accepted", what, rule);
	post_send(c, 10, 0x77);
	check(drain(c->a.cq, ms, NULL) == 0 && drain(c->b.cq, 1, NULL) == 0,
	      "%s: nothing completes %s", what, while_);
	return before;
}

/*
 * A Local ACK Timeout of 0 is an infinite timer in the IB specification
 * (mlx4_ib passes the attribute into the QP context's ackto as it is): a
 * request whose packet is lost is never retransmitted, and waits until
 * the QP is moved to ERROR, which flushes it.
 */
static void ack_timeout_infinite(void)
{
	const char *what = "RC SEND lost, ACK timeout 0 (infinite)";
	struct params p = RC_QP(0, 3, 3);
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_ERR };
	struct ibv_wc wc;
	struct conn c;
	long long before;
	int n;

	conn_open(&c, &p);
	before = send_stalled(&c, what, "drop --next 1", c.a.qp, "dropped",
			      400, "in 400 ms: never retransmitted");
	check(fault_count("dropped") == before + 1,
	      "%s: the one packet was dropped (%lld)", what,
	      fault_count("dropped") - before);
	check(ibv_modify_qp(c.a.qp, &attr, IBV_QP_STATE) == 0,
	      "%s: the requester moved to ERROR", what);
	n = poll_one(c.a.cq, 5000, &wc);
	check(n == 1 && wc.status == IBV_WC_WR_FLUSH_ERR && wc.wr_id == 10,
	      "%s: then flushed (%s)", what, status_str(n, &wc));
	conn_close(&c);
}

static void rnr_forever(void)
{
	const char *what = "RC SEND to withheld receives, rnr_retry 7";
	struct params p = RC_QP(14, 3, 7);
	struct ibv_wc wc;
	struct conn c;
	long long before;
	int n;

	p.min_rnr_timer = 12;		/* 0.64 ms between tries */
	conn_open(&c, &p);
	before = send_stalled(&c, what, "rnr", c.b.qp, "rnr", 100,
			      "while receives are withheld");
	check(fault_count("rnr") > before + 7,
	      "%s: retried beyond 7 times (%lld RNR NAKs)", what,
	      fault_count("rnr") - before);
	check(fault("clear") == 0, "%s: fault clear", what);
	n = poll_one(c.a.cq, 5000, &wc);
	check(n == 1 && wc.status == IBV_WC_SUCCESS,
	      "%s: completes once the receives are back (%s)", what,
	      status_str(n, &wc));
	n = poll_one(c.b.cq, 1000, &wc);
	check(n == 1 && wc.status == IBV_WC_SUCCESS &&
	      filled(c.b.buf + RECV_OFF + 512, 0x77, MSG_LEN),
	      "%s: the responder receives it, data intact", what);
	conn_close(&c);
}

static void rc_duplicated(void)
{
	const char *what = "RC SEND and fetch-add duplicated";
	uint64_t *target;
	struct ibv_wc wc;
	struct conn c;
	long long before;
	int n, rn;

	conn_open(&c, &rc_params);
	target = (uint64_t *)(c.b.buf + ATOMIC_OFF);
	*target = htobe64(7);
	post_recvs(&c.b, 2);
	before = fault_count("duplicated");
	check(fault("duplicate --next 2 --qpn 0x%x", c.a.qp->qp_num) == 0,
	      "%s: fault duplicate --next 2 accepted", what);
	post_send(&c, 10, 0x42);
	n = poll_one(c.a.cq, 5000, &wc);
	check(n == 1 && wc.status == IBV_WC_SUCCESS,
	      "%s: the SEND completes (%s)", what,
	      status_str(n, &wc));
	rn = drain(c.b.cq, QUIET_MS, NULL);
	check(rn == 1, "%s: the responder receives the SEND once (%d)", what, rn);
	post_rdma(&c, IBV_WR_ATOMIC_FETCH_AND_ADD, 3);
	n = poll_one(c.a.cq, 5000, &wc);
	check(n == 1 && wc.status == IBV_WC_SUCCESS &&
	      be64toh(*(uint64_t *)(c.a.buf + RESULT_OFF)) == 7,
	      "%s: the fetch-add completes with the value before it", what);
	check(be64toh(*target) == 10,
	      "%s: the atomic is executed once (target %" PRIu64 ", 10 expected)",
	      what, be64toh(*target));
	check(drain(c.a.cq, QUIET_MS, NULL) == 0,
	      "%s: each completes once at the requester", what);
	check(fault_count("duplicated") == before + 2,
	      "%s: the fault fired twice", what);
	conn_close(&c);
}

/*
 * A QP connected to itself, whose delayed WRITE the responder refuses:
 * the WQE completes with the NAK's error before the QP's error flushes
 * the rest, as without the delay.
 */
static void rc_self_delayed_error(void)
{
	const char *what = "RC WRITE to itself with a bad rkey, delayed";
	struct ibv_wc wc;
	struct conn c;
	int n;

	conn_create(&c, IBV_QPT_RC);
	to_rts(&c, &c.a, c.a.qp->qp_num, &rc_params, 0, 0);
	check(fault("delay 5 --next 1 --qpn 0x%x", c.a.qp->qp_num) == 0,
	      "%s: fault delay accepted", what);
	{
		struct ibv_sge sge = { (uintptr_t)c.a.buf, 64, c.a.mr->lkey };
		struct ibv_send_wr wr = {
			.wr_id = 1, .sg_list = &sge, .num_sge = 1,
			.opcode = IBV_WR_RDMA_WRITE,
			.send_flags = IBV_SEND_SIGNALED,
			.wr.rdma = { (uintptr_t)c.a.buf + 4096,
				     c.a.mr->rkey ^ 0x100 },
		}, *bad;

		if (ibv_post_send(c.a.qp, &wr, &bad))
			bail("post_send");
	}
	n = poll_one(c.a.cq, 5000, &wc);
	check(n == 1 && wc.wr_id == 1 && wc.status == IBV_WC_REM_ACCESS_ERR,
	      "%s: REM_ACCESS_ERR, not flushed (%s)", what,
	      status_str(n, &wc));
	check(qp_state(c.a.qp) == IBV_QPS_ERR, "%s: the QP is in ERROR", what);
	conn_close(&c);
}

/* A flood held back: the switch's buffers fill, the rest is lost. */
static void ud_delay_flood(void)
{
	const char *what = "UD flood delayed 1 s";
	struct params p = { IBV_QPT_UD };
	struct ibv_wc wc;
	struct conn c;
	long long dropped, delayed;
	int sent = 0, done = 0;

	conn_open(&c, &p);
	dropped = fault_count("dropped");
	delayed = fault_count("delayed");
	check(fault("delay 1000 --rate 1 --qpn 0x%x", c.a.qp->qp_num) == 0,
	      "%s: fault delay --rate 1 accepted", what);
	while (done < 4200) {
		if (sent - done < 8 && sent < 4200)
			post_send(&c, sent++, 0x44);
		if (ibv_poll_cq(c.a.cq, 1, &wc) == 1) {
			if (wc.status != IBV_WC_SUCCESS)
				break;
			done++;
		}
	}
	check(done == 4200, "%s: the sender completes all 4200", what);
	check(fault_count("delayed") == delayed + 4200 &&
	      fault_count("dropped") == dropped + 4200 - 4096,
	      "%s: 4096 held back, the rest lost (%lld, %lld)", what,
	      fault_count("delayed") - delayed,
	      fault_count("dropped") - dropped);
	check(fault("clear") == 0, "%s: fault clear", what);
	conn_close(&c);
}

/* A datagram to a multicast group that the one member's QP joined. */
static void post_mcast(struct conn *c, const union ibv_gid *mgid,
		       uint64_t wr_id, uint8_t fill)
{
	struct ibv_ah_attr attr = {
		.dlid = 0xc001, .port_num = 1, .is_global = 1,
		.grh = { .dgid = *mgid, .sgid_index = 0, .hop_limit = 1 },
	};
	struct ibv_sge sge = { (uintptr_t)c->a.buf + SEND_OFF, MSG_LEN,
			       c->a.mr->lkey };
	struct ibv_send_wr wr = { .wr_id = wr_id, .sg_list = &sge,
				  .num_sge = 1, .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_ah *ah = ibv_create_ah(c->pd, &attr);
	struct ibv_wc wc;

	if (!ah)
		bail("create_ah");
	memset(c->a.buf + SEND_OFF, fill, MSG_LEN);
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = 0xffffff;
	wr.wr.ud.remote_qkey = QKEY;
	if (ibv_post_send(c->a.qp, &wr, &bad))
		bail("post_send");
	/* Sent is done for a datagram: the buffer is free again after. */
	if (!poll_one(c->a.cq, 5000, &wc) || wc.status != IBV_WC_SUCCESS)
		bail("multicast send");
	ibv_destroy_ah(ah);
}

static void ud_multicast(void)
{
	const char *what = "UD multicast";
	union ibv_gid mgid = { .raw = { 0xff, 0x0e, [15] = 0x42 } };
	struct params p = { IBV_QPT_UD };
	struct ibv_wc wc = {};	/* drain() fills it only when one arrives */
	struct conn c;
	long long dropped, duplicated;
	int n;

	conn_open(&c, &p);
	if (ibv_attach_mcast(c.b.qp, &mgid, 0xc001))
		bail("attach_mcast");
	post_recvs(&c.b, 3);
	dropped = fault_count("dropped");
	duplicated = fault_count("duplicated");
	check(fault("drop --next 1 --qpn 0x%x", c.a.qp->qp_num) == 0,
	      "%s: fault drop accepted", what);
	post_mcast(&c, &mgid, 10, 0x11);
	post_mcast(&c, &mgid, 11, 0x22);
	n = drain(c.b.cq, QUIET_MS, &wc);
	check(n == 1 && wc.wr_id == 1 &&
	      filled(c.b.buf + RECV_OFF + 512 + 40, 0x22, MSG_LEN),
	      "%s lost: the member gets only the second (%d)", what, n);
	check(fault("duplicate --next 1 --qpn 0x%x", c.a.qp->qp_num) == 0,
	      "%s: fault duplicate accepted", what);
	post_mcast(&c, &mgid, 12, 0x33);
	n = drain(c.b.cq, QUIET_MS, NULL);
	check(n == 2, "%s duplicated: the member gets it twice (%d)", what, n);
	check(fault_count("dropped") == dropped + 1 &&
	      fault_count("duplicated") == duplicated + 1,
	      "%s: each fault fired once", what);
	ibv_detach_mcast(c.b.qp, &mgid, 0xc001);
	conn_close(&c);
}

/* ------------------------------------------------------------------ */
/* Events: ports, QPs, the device                                      */
/* ------------------------------------------------------------------ */

static bool sysfs_state(const char *want)
{
	char path[512], text[64] = "";
	const char *root = getenv("SYSFS_PATH");
	FILE *f;

	snprintf(path, sizeof(path), "%s/class/infiniband/mlx4_0/ports/1/state",
		 root ? root : "/sys");
	f = fopen(path, "r");
	if (!f)
		return false;
	if (!fgets(text, sizeof(text), f))
		text[0] = 0;
	fclose(f);
	return !strncmp(text, want, strlen(want));
}

/* Port 1 went @state: its async event, and query_port and sysfs agree. */
static void check_port(struct ibv_context *ctx, const char *what,
		       enum ibv_event_type event, enum ibv_port_state state,
		       const char *sysfs)
{
	struct ibv_async_event ev;
	struct ibv_port_attr attr;

	check(!next_event(ctx, 2000, &ev) &&
	      ev.event_type == event && ev.element.port_num == 1,
	      "%s: %s event for port 1", what, ibv_event_type_str(event));
	check(!ibv_query_port(ctx, 1, &attr) && attr.state == state,
	      "%s: query_port says %s", what, ibv_port_state_str(state));
	check(sysfs_state(sysfs), "%s: sysfs says %s", what, sysfs);
}

static void port_down_up(void)
{
	const char *what = "port 1 down";
	struct params p = RC_QP(8, 1, 3);
	struct ibv_wc wc;
	struct conn c;
	int n;

	conn_open(&c, &p);
	post_recv(&c.b, 1);
	check(fault("port-down --port 1") == 0, "%s: fault port-down accepted", what);
	check_port(c.ctx, what, IBV_EVENT_PORT_ERR, IBV_PORT_DOWN, "1: DOWN");
	post_send(&c, 10, 1);
	n = poll_one(c.a.cq, 5000, &wc);
	check(n == 1 && wc.status == IBV_WC_RETRY_EXC_ERR,
	      "%s: an RC SEND over it fails with RETRY_EXC_ERR (%s)", what,
	      status_str(n, &wc));
	check(drain(c.b.cq, QUIET_MS, NULL) == 0,
	      "%s: the responder receives nothing", what);
	check(fault("port-up --hca 0 --port 1") == 0, "port 1 up: fault port-up accepted");
	check_port(c.ctx, "port 1 up", IBV_EVENT_PORT_ACTIVE, IBV_PORT_ACTIVE,
		   "4: ACTIVE");
	conn_close(&c);

	/* Datagrams over a down port are lost silently; after, they flow. */
	p.type = IBV_QPT_UD;
	conn_open(&c, &p);
	post_recvs(&c.b, 2);
	check(fault("port-down --port 1") == 0, "%s: again", what);
	post_send(&c, 10, 0x61);
	n = poll_one(c.a.cq, 5000, &wc);
	check(n == 1 && wc.status == IBV_WC_SUCCESS,
	      "%s: a UD SEND over it completes at the sender", what);
	check(drain(c.b.cq, QUIET_MS, NULL) == 0,
	      "%s: and is lost silently", what);
	check(fault("port-up --port 1") == 0, "port 1 up: again");
	post_send(&c, 11, 0x62);
	n = poll_one(c.b.cq, 5000, &wc);
	check(n == 1 && wc.status == IBV_WC_SUCCESS && wc.wr_id == 1 &&
	      filled(c.b.buf + RECV_OFF + 512 + 40, 0x62, MSG_LEN),
	      "port 1 up: a UD SEND arrives again");
	check(drain(c.a.cq, QUIET_MS, NULL) == 1, "port 1 up: the sender completes it");
	conn_close(&c);
}

static void qp_fatal(void)
{
	const char *what = "QP fatal";
	struct params p = RC_QP(8, 1, 3);
	struct ibv_async_event ev;
	struct ibv_wc wc;
	struct conn c;
	int n, flushed = 0;

	conn_open(&c, &p);
	post_recvs(&c.b, 2);
	check(fault("qp-fatal --qpn 0x%x", c.b.qp->qp_num) == 0,
	      "%s: fault qp-fatal accepted", what);
	check(!next_event(c.ctx, 2000, &ev) &&
	      ev.event_type == IBV_EVENT_QP_FATAL && ev.element.qp == c.b.qp,
	      "%s: IBV_EVENT_QP_FATAL for the QP", what);
	check(qp_state(c.b.qp) == IBV_QPS_ERR, "%s: the QP is in ERROR", what);
	while (poll_one(c.b.cq, QUIET_MS, &wc))
		flushed += wc.status == IBV_WC_WR_FLUSH_ERR;
	check(flushed == 2, "%s: its 2 receives are flushed (%d)", what, flushed);
	post_send(&c, 10, 1);
	n = poll_one(c.a.cq, 5000, &wc);
	check(n == 1 && wc.status == IBV_WC_RETRY_EXC_ERR,
	      "%s: its peer's SEND fails with RETRY_EXC_ERR (%s)", what,
	      status_str(n, &wc));
	conn_close(&c);
}

struct waiter {
	struct ibv_comp_channel *channel;
	int ret;
	bool done;
};

static void *wait_cq_event(void *arg)
{
	struct waiter *w = arg;
	struct ibv_cq *cq;
	void *cq_ctx;

	w->ret = ibv_get_cq_event(w->channel, &cq, &cq_ctx);
	__atomic_store_n(&w->done, true, __ATOMIC_RELEASE);
	return NULL;
}

/* A CQ armed on @w's new channel, and a thread waiting for its event. */
static struct ibv_cq *start_cq_waiter(struct ibv_context *ctx,
				      struct waiter *w, pthread_t *thread)
{
	struct ibv_cq *cq;

	w->channel = ibv_create_comp_channel(ctx);
	cq = w->channel ? ibv_create_cq(ctx, 4, NULL, w->channel, 0) : NULL;
	if (!cq || ibv_req_notify_cq(cq, 0))
		bail("create_cq");
	if (pthread_create(thread, NULL, wait_cq_event, w))
		bail("pthread_create");
	return cq;
}

/* Whether @w's thread has come back, within 5 s. */
static bool cq_waiter_woke(struct waiter *w)
{
	double end = fine_now_ms() + 5000;

	while (!__atomic_load_n(&w->done, __ATOMIC_ACQUIRE) &&
	       fine_now_ms() < end)
		usleep(1000);
	return __atomic_load_n(&w->done, __ATOMIC_ACQUIRE);
}

/* @w's thread joined if it came back (else left blocked); @cq, channel gone. */
static void stop_cq_waiter(struct ibv_cq *cq, struct waiter *w,
			   pthread_t thread)
{
	if (__atomic_load_n(&w->done, __ATOMIC_ACQUIRE))
		pthread_join(thread, NULL);
	ibv_destroy_cq(cq);
	ibv_destroy_comp_channel(w->channel);
}

static void device_fatal(void)
{
	const char *what = "device fatal";
	struct ibv_async_event ev;
	struct ibv_port_attr attr;
	struct waiter w = {};
	struct ibv_context *ctx;
	struct ibv_cq *cq;
	struct ibv_pd *pd;
	pthread_t thread;

	ctx = open_first_device("faults");
	cq = start_cq_waiter(ctx, &w, &thread);
	usleep(20000);		/* the thread blocks in ibv_get_cq_event */
	check(fault("fatal --hca 0") == 0, "%s: fault fatal accepted", what);
	check(cq_waiter_woke(&w) && w.ret == -1,
	      "%s: a thread blocked in ibv_get_cq_event wakes with an error", what);
	check(!next_event(ctx, 2000, &ev) &&
	      ev.event_type == IBV_EVENT_DEVICE_FATAL,
	      "%s: IBV_EVENT_DEVICE_FATAL", what);
	check(next_event(ctx, 200, &ev) == -1 && errno == EIO,
	      "%s: the async file then fails with EIO", what);
	errno = 0;
	pd = ibv_alloc_pd(ctx);
	check(!pd && errno == EIO, "%s: alloc_pd fails with EIO (%s)", what,
	      strerror(errno));
	check(ibv_query_port(ctx, 1, &attr) == EIO,
	      "%s: query_port fails with EIO", what);
	/*
	 * The CQ doorbell lands in a page that reaches no device: no
	 * strict-mode breach (which would fail this run's exit status).
	 */
	ibv_req_notify_cq(cq, 0);
	usleep(10000);
	stop_cq_waiter(cq, &w, thread);
	ibv_close_device(ctx);

	/* A file opened after the reset reaches a working adapter. */
	ctx = open_first_device("faults");
	pd = ibv_alloc_pd(ctx);
	check(pd != NULL, "%s: a device opened afterwards works", what);
	if (pd)
		ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
}

/*
 * A thread blocked in ibv_get_cq_event while another closes the
 * channel's descriptor (the program's slip): the kernel's read holds the
 * file, so the device's reset still wakes it with an error, as it wakes
 * one whose descriptor is open.
 */
static void device_fatal_channel_closed(void)
{
	const char *what = "device fatal, the channel closed under a waiter";
	struct waiter w = {};
	struct ibv_context *ctx;
	struct ibv_cq *cq;
	pthread_t thread;

	ctx = open_first_device("faults");
	cq = start_cq_waiter(ctx, &w, &thread);
	usleep(100000);		/* the thread blocks in ibv_get_cq_event */
	close(w.channel->fd);
	check(fault("fatal --hca 0") == 0, "%s: fault fatal accepted", what);
	check(cq_waiter_woke(&w) && w.ret == -1,
	      "%s: the waiter wakes with an error", what);
	stop_cq_waiter(cq, &w, thread);
	ibv_close_device(ctx);
}

/* ------------------------------------------------------------------ */
/* The command refuses what makes no sense                             */
/* ------------------------------------------------------------------ */

static void bad_arguments(void)
{
	static const char *const bad[] = {
		"", "bogus", "drop", "drop --rate 0", "drop --rate 1.5",
		"drop --next 0", "drop --next 1 --rate 0.5", "drop --next x",
		"delay --next 1", "delay 0 --next 1", "rnr", "qp-fatal",
		"port-down --port 3", "port-down --qpn 5", "drop --next 1 --hca 9",
		"fatal --port 1", "clear --hca 0", "qp-fatal --qpn 0xfffff0",
		"drop --next 1 --qpn 0x1000000",
	};

	for (size_t i = 0; i < NELEMS(bad); i++)
		check(fault("%s 2>/dev/null", bad[i]) == 2,
		      "fault %s: refused with exit status 2", bad[i]);
	check(fault_count("rules") == 0, "refused faults leave no rule");
	{
		char cmd[512];
		int st;

		snprintf(cmd, sizeof(cmd),
			 "env -u MLX4SIM_DIR '%s' fault clear 2>/dev/null", mlx4sim);
		st = system(cmd);
		check(WIFEXITED(st) && WEXITSTATUS(st) == 2,
		      "fault without MLX4SIM_DIR: refused with exit status 2");
	}
}

/* ------------------------------------------------------------------ */
/* The control request, as a hostile client would send it              */
/* ------------------------------------------------------------------ */

static int control_socket(void)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	const char *dir = getenv(MLX4SIM_ENV_DIR);
	int sock;

	if (!dir)
		return -1;
	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s/%s", dir,
		 MLX4SIM_SOCKET_NAME);
	sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (sock >= 0 && connect(sock, (void *)&addr, sizeof(addr))) {
		close(sock);
		return -1;
	}
	return sock;
}

/* One request on @sock: the reply's ret, or 1 when none came. */
static int request(int sock, uint32_t op, uint32_t arg, const void *payload,
		   size_t len)
{
	uint8_t buf[256], reply[256];
	struct mlx4sim_request req = { op, arg };
	struct mlx4sim_reply r;

	memcpy(buf, &req, sizeof(req));
	memcpy(buf + sizeof(req), payload, len);
	if (send(sock, buf, sizeof(req) + len, MSG_NOSIGNAL) < 0 ||
	    recv(sock, reply, sizeof(reply), 0) < (ssize_t)sizeof(r))
		return 1;
	memcpy(&r, reply, sizeof(r));
	return r.ret;
}

static int fault_bytes(const struct mlx4sim_fault *f, size_t len)
{
	int sock = control_socket(), ret;

	if (sock < 0)
		return 1;
	ret = request(sock, MLX4SIM_OP_FAULT, 0, f, len);
	close(sock);
	return ret;
}

static void hostile_requests(void)
{
	const struct mlx4sim_fault good = {
		.magic = MLX4SIM_FAULT_MAGIC, .kind = MLX4SIM_FAULT_DROP,
		.match = MLX4SIM_FAULT_MATCH_QPN, .qpn = 0xabcdef, .next = 1,
	};
	struct mlx4sim_fault f;
	uint32_t open_arg = 0;
	int sock;

	f = good;
	f.magic ^= 1;
	check(fault_bytes(&f, sizeof(f)) == -EINVAL, "control: a wrong magic is refused");
	f = good;
	check(fault_bytes(&f, sizeof(f) - 1) == -EINVAL &&
	      fault_bytes(&f, 0) == -EINVAL,
	      "control: a short request is refused");
	f = good;
	f.kind = MLX4SIM_FAULT_KIND_END;
	check(fault_bytes(&f, sizeof(f)) == -EINVAL, "control: an unknown kind is refused");
	f = good;
	f.match |= 1u << 7;
	check(fault_bytes(&f, sizeof(f)) == -EINVAL, "control: unknown filter bits are refused");
	f = good;
	f.hca = 3;		/* not selected by match */
	check(fault_bytes(&f, sizeof(f)) == -EINVAL, "control: an unused filter must be 0");
	f = good;
	f.reserved = 1;
	check(fault_bytes(&f, sizeof(f)) == -EINVAL, "control: reserved must be 0");
	f = good;
	f.rate_ppm = 2000000;
	f.next = 0;
	check(fault_bytes(&f, sizeof(f)) == -EINVAL, "control: a rate above 1 is refused");
	f = good;
	f.delay_ms = 5;
	check(fault_bytes(&f, sizeof(f)) == -EINVAL, "control: a delay on a drop is refused");
	f = good;
	f.kind = MLX4SIM_FAULT_DELAY;
	f.delay_ms = 0xffffffff;
	check(fault_bytes(&f, sizeof(f)) == -EINVAL, "control: a delay of 49 days is refused");

	/* A device's file never injects faults, nor a control one opens a device. */
	sock = control_socket();
	check(sock >= 0 && request(sock, MLX4SIM_OP_OPEN, 0, NULL, 0) == 0 &&
	      request(sock, MLX4SIM_OP_FAULT, 0, &good, sizeof(good)) == -EPERM,
	      "control: a connection that opened a device cannot inject a fault");
	if (sock >= 0)
		close(sock);
	sock = control_socket();
	f = good;
	f.kind = MLX4SIM_FAULT_STATUS;
	f.match = f.qpn = f.next = 0;
	check(sock >= 0 && request(sock, MLX4SIM_OP_FAULT, 0, &f, sizeof(f)) == 0 &&
	      request(sock, MLX4SIM_OP_OPEN, open_arg, NULL, 0) == -EBADF,
	      "control: a control connection cannot open a device");
	if (sock >= 0)
		close(sock);
	check(fault_count("rules") == 0, "control: refused requests leave no rule");
}

/* A scenario as a case of the table below. */
static void send_case(const void *scenario)
{
	run_send_scenario(scenario);
}

static void rc_read_answer_lost(void)
{
	rc_lost_answer(IBV_WR_RDMA_READ);
}

static void rc_atomic_answer_lost(void)
{
	rc_lost_answer(IBV_WR_ATOMIC_FETCH_AND_ADD);
}

/*
 * The cases, in the order a full run takes them.  Each makes its own
 * connection (device, PD, CQs, QPs) and clears the faults it set.
 */
static const struct test_case cases[] = {
	{ "bad_arguments", bad_arguments,
	  "`mlx4sim fault` refuses arguments that make no sense (status 2)" },
	{ "hostile_requests", hostile_requests,
	  "the daemon refuses malformed fault requests on its socket" },
	{ "rc_send_lost", NULL,
	  "an RC SEND lost once: retransmitted after the ACK timeout",
	  send_case, &rc_send_lost },
	{ "rc_ack_lost", NULL,
	  "an RC SEND whose ACK is lost: retransmitted, received once",
	  send_case, &rc_ack_lost },
	{ "rc_faults_stacked", NULL,
	  "drop, drop, duplicate on one QP: the first rule that matches decides",
	  send_case, &rc_faults_stacked },
	{ "rc_send_always_lost", NULL,
	  "an RC SEND always lost: RETRY_EXC_ERR after retry_cnt, then a flush",
	  send_case, &rc_send_always_lost },
	{ "rc_psn_ahead", NULL,
	  "a requester's PSN ahead: NAKed at once, RETRY_EXC_ERR",
	  send_case, &rc_psn_ahead },
	{ "rc_psn_behind", NULL,
	  "a requester's PSN behind: a duplicate, acknowledged",
	  send_case, &rc_psn_behind },
	{ "rc_rnr_retry_exceeded", NULL,
	  "receives withheld: RNR_RETRY_EXC_ERR after rnr_retry",
	  send_case, &rc_rnr_retry_exceeded },
	{ "rc_send_delayed", NULL,
	  "an RC SEND delayed less than the ACK timeout: late, not resent",
	  send_case, &rc_send_delayed },
	{ "rc_ack_delayed", NULL,
	  "an RC SEND's ACK delayed less than the ACK timeout",
	  send_case, &rc_ack_delayed },
	{ "rc_delayed_past_timeout", NULL,
	  "an RC SEND delayed past the ACK timeout: resent, the late one a duplicate",
	  send_case, &rc_delayed_past_timeout },
	{ "ud_reordered", NULL, "a UD datagram overtaken by the next one",
	  send_case, &ud_reordered },
	{ "ud_send_lost", NULL, "a UD SEND lost silently",
	  send_case, &ud_send_lost },
	{ "uc_send_lost", NULL, "a UC SEND lost silently",
	  send_case, &uc_send_lost },
	{ "rc_read_answer_lost", rc_read_answer_lost,
	  "an RDMA READ whose answer is lost: answered again, data intact" },
	{ "rc_atomic_answer_lost", rc_atomic_answer_lost,
	  "a fetch-add whose answer is lost: executed once, answered again" },
	{ "rnr_forever", rnr_forever,
	  "rnr_retry 7 retries for ever, completes when receives return" },
	{ "ack_timeout_infinite", ack_timeout_infinite,
	  "ACK timeout 0: a lost SEND is never resent, flushed in ERROR" },
	{ "rc_duplicated", rc_duplicated,
	  "a duplicated SEND and fetch-add: each executed and completed once" },
	{ "rc_self_delayed_error", rc_self_delayed_error,
	  "a delayed bad WRITE to itself: the NAK's error, not a flush" },
	{ "ud_delay_flood", ud_delay_flood,
	  "a UD flood held back: 4096 wait in the switch, the rest are lost" },
	{ "ud_multicast", ud_multicast,
	  "a multicast datagram dropped, then duplicated" },
	{ "port_down_up", port_down_up,
	  "port 1 down and up: events, query_port, sysfs, RC and UD traffic" },
	{ "qp_fatal", qp_fatal,
	  "IBV_EVENT_QP_FATAL: the QP in ERROR, its receives flushed" },
	{ "device_fatal", device_fatal,
	  "a device reset: blocked waiters wake, EIO, a new open works" },
	{ "device_fatal_channel_closed", device_fatal_channel_closed,
	  "a device reset wakes a waiter whose channel was closed under it" },
};

/* Usage: faults [--list | NAME...] (MLX4SIM names the mlx4sim command) */
int main(int argc, char **argv)
{
	int ret = cases_select(cases, CASES_N(cases), argc, argv, 1);

	if (ret >= 0)
		return ret;
	mlx4sim = getenv("MLX4SIM");
	if (!mlx4sim) {
		printf("Bail out! MLX4SIM (the mlx4sim command) is not set\n");
		return 1;
	}
	alarm(120);
	cases_run(cases, CASES_N(cases));
	return tap_finish();
}
