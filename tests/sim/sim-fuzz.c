/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sim-fuzz: throws malformed input at the mlx4sim daemon for a while.
 *
 *   sim-fuzz fuzz SECONDS    uverbs commands (random, and valid ones
 *                            mutated: sizes, handles, fields, truncated
 *                            and oversized writes, mmap and event reads)
 *                            on connections of its own to the daemon,
 *                            with doorbells for the rings those made
 *                            over garbage; and garbage WQEs and doorbells
 *                            in real QP and SRQ rings of a device opened
 *                            through libibverbs
 *   sim-fuzz victim SECONDS  an honest client on the same subnet: RC sends
 *                            and RDMA READs between two QPs, every byte
 *                            and every completion checked
 *
 * The seed is printed; MLX4SIM_FUZZ_SEED=N replays a run (as far as the
 * daemon's timing lets it).  Both modes print their figures and exit
 * non-zero when the daemon stopped answering or died, and the victim when
 * a message was lost or corrupted.  The fuzzer's own breaches of the
 * protocol are its own business: the daemon logs them against its pid.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>
#include <infiniband/mlx4dv.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/mlx4-abi.h>

#include "../../sim/host/protocol.h"
#include "../../sim/host/uverbs-cmds.h"
#include "../wait.h"
#include "loopback.h"

#ifndef MIN
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#endif

/* ------------------------------------------------------------------ */
/* Randomness, time, the daemon                                        */
/* ------------------------------------------------------------------ */

static uint64_t rng_state;

static uint64_t rnd64(void)
{
	/* xorshift64*: small, and the same sequence for the same seed. */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dULL;
}

static uint32_t rnd(uint32_t n)
{
	return n ? rnd64() % n : 0;
}

static bool chance(uint32_t percent)
{
	return rnd(100) < percent;
}

/* A value a field should not hold, or one at the edge of what it may. */
static uint32_t nasty32(void)
{
	static const uint32_t v[] = {
		0, 1, 2, 3, 7, 8, 15, 16, 31, 32, 63, 64, 255, 256, 4095,
		4096, 65535, 65536, 0x7fffffff, 0x80000000, 0xfffffffe,
		0xffffffff, 0x00ffffff, 0x01000000,
	};

	return chance(70) ? v[rnd(sizeof(v) / sizeof(v[0]))] : (uint32_t)rnd64();
}

static pid_t simd;

static bool daemon_alive(void)
{
	return simd > 0 && kill(simd, 0) == 0;
}

static void seed_from_env(const char *who)
{
	const char *s = getenv("MLX4SIM_FUZZ_SEED");
	uint64_t seed = s ? strtoull(s, NULL, 0) :
		(uint64_t)time(NULL) * 1000003 ^ (uint64_t)getpid() << 20;

	if (!seed)
		seed = 1;
	rng_state = seed;
	printf("%s: seed %" PRIu64 " (replay with MLX4SIM_FUZZ_SEED=%" PRIu64 ")\n",
	       who, seed, seed);
	fflush(stdout);
}

/* ------------------------------------------------------------------ */
/* Commands on connections of our own                                  */
/* ------------------------------------------------------------------ */

#define POOL 64

static struct {
	uint64_t sent, answered, accepted, refused, closed, fds, connections;
	uint64_t stalls, doorbells;
} cmds;

/* Handles by the kind of object they name; H_ANY holds them all. */
enum kind { H_ANY, H_PD, H_CQ, H_QP, H_SRQ, H_OTHER, H_KINDS };

struct conn {
	int fd;
	uint32_t handles[H_KINDS][POOL];
	int nhandles[H_KINDS];
	uint32_t qpns[POOL], cqns[POOL];
	int nqpns, ncqns;
	bool opened;		/* a device file, not a bare connection */
	volatile uint8_t *uar;	/* its UAR page, mapped */
};

/* Memory the daemon is told holds our rings: ours, and never anything else. */
#define ARENA_SIZE (512 * 1024)
static uint8_t *arena;

/* An address for a buffer: in the arena mostly, else surely not mapped. */
static uint64_t some_addr(uint32_t align)
{
	static const uint64_t bad[] = {
		0, 0x1000, 0xfff, 0x00007ffffffff000ULL, 0xffff800000000000ULL,
		0x8000000000000000ULL, 0xfffffffffffff000ULL,
	};

	if (chance(90)) {
		uint64_t off = rnd(ARENA_SIZE - 65536);

		if (chance(90))
			off &= ~(uint64_t)(align - 1);
		return (uintptr_t)arena + off;
	}
	return bad[rnd(sizeof(bad) / sizeof(bad[0]))];
}

static void conn_open(struct conn *c)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };

	memset(c, 0, sizeof(*c));
	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s/%s",
		 getenv(MLX4SIM_ENV_DIR), MLX4SIM_SOCKET_NAME);
	c->fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (c->fd < 0 || connect(c->fd, (struct sockaddr *)&addr,
				 sizeof(addr))) {
		perror("sim-fuzz: connect");
		c->fd = -1;
		return;
	}
	cmds.connections++;
}

static void conn_close(struct conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	if (c->uar)
		munmap((void *)c->uar, 4096);
	c->uar = NULL;
}

/* Mostly one of @kind, sometimes one of another kind: types are checked. */
static uint32_t some_handle(const struct conn *c, enum kind kind)
{
	if (kind != H_ANY && c->nhandles[kind] && chance(85))
		return c->handles[kind][rnd(c->nhandles[kind])];
	if (c->nhandles[H_ANY] && chance(85))
		return c->handles[H_ANY][rnd(c->nhandles[H_ANY])];
	return chance(50) ? rnd(8) : nasty32();
}

static void remember(uint32_t *pool, int *n, uint32_t v)
{
	if (*n < POOL)
		pool[(*n)++] = v;
	else
		pool[rnd(POOL)] = v;
}

/*
 * Send one request and take its answer.  Returns the reply's ret, or
 * INT32_MIN when the daemon closed the connection or did not answer.
 */
static int32_t request_fd(struct conn *c, uint32_t op, uint32_t arg,
			  const void *payload, size_t len, uint8_t *resp,
			  size_t *resp_len, int *keep_fd)
{
	static uint8_t buf[MLX4SIM_MAX_MSG + 8192];
	struct mlx4sim_request req = { .op = op, .arg = arg };
	char control[CMSG_SPACE(sizeof(int) * 4)];
	struct iovec iov = { buf, sizeof(buf) };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = control, .msg_controllen = sizeof(control),
	};
	struct pollfd p = { .fd = c->fd, .events = POLLIN };
	struct mlx4sim_reply reply;
	struct cmsghdr *cm;
	ssize_t n;

	if (len > sizeof(buf) - sizeof(req))
		len = sizeof(buf) - sizeof(req);
	memcpy(buf, &req, sizeof(req));
	if (len)
		memcpy(buf + sizeof(req), payload, len);
	cmds.sent++;
	if (send(c->fd, buf, sizeof(req) + len, MSG_NOSIGNAL) < 0) {
		/* Larger than the socket takes: the daemon never saw it. */
		if (errno == EMSGSIZE)
			return -EMSGSIZE;
		goto gone;
	}
	if (poll(&p, 1, 10000) != 1) {
		fprintf(stderr, "sim-fuzz: no answer in 10 s to op %u arg %u (%zu bytes)\n",
			op, arg, len);
		cmds.stalls++;
		goto gone;
	}
	n = recvmsg(c->fd, &msg, MSG_CMSG_CLOEXEC);
	for (cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		for (size_t i = 0; i < (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(fd));
			cmds.fds++;
			if (keep_fd && *keep_fd < 0)
				*keep_fd = fd;
			else
				close(fd);
		}
	}
	if (n < (ssize_t)sizeof(reply))
		goto gone;
	memcpy(&reply, buf, sizeof(reply));
	cmds.answered++;
	if (resp) {
		*resp_len = MIN((size_t)n - sizeof(reply), (size_t)4096);
		memcpy(resp, buf + sizeof(reply), *resp_len);
	}
	return reply.ret;
gone:
	cmds.closed++;
	conn_close(c);
	return INT32_MIN;
}

static int32_t request(struct conn *c, uint32_t op, uint32_t arg,
		       const void *payload, size_t len, uint8_t *resp,
		       size_t *resp_len)
{
	return request_fd(c, op, arg, payload, len, resp, resp_len, NULL);
}

/*
 * Map the context's UAR page as a driver does, so that the rings of
 * this connection's QPs and CQs (all in the arena) can be rung.
 */
static void map_uar(struct conn *c)
{
	struct mlx4sim_mmap m = { 4096, PROT_READ | PROT_WRITE, MAP_SHARED };
	int fd = -1;
	int32_t page = request_fd(c, MLX4SIM_OP_MMAP, 0, &m, sizeof(m),
				  NULL, NULL, &fd);
	void *p;

	if (page >= 0 && page != INT32_MIN && fd >= 0) {
		p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
			 (off_t)page * 4096);
		if (p != MAP_FAILED)
			c->uar = p;
	}
	if (fd >= 0)
		close(fd);
}

/*
 * Garbage where this connection's rings are (the arena), then a doorbell
 * for one of its QPs or CQs: WQEs of every size the commands chose.
 */
static void scribble_and_ring(struct conn *c)
{
	uint32_t off = rnd(ARENA_SIZE - 1024) & ~15u;
	uint32_t n = 16 * (1 + rnd(32));

	for (uint32_t i = 0; i < n; i++)
		arena[off + i] = chance(50) ? 0 : rnd(256);
	/* An owner bit that says "hardware's" here and there. */
	for (uint32_t i = 0; i < n; i += 64)
		if (chance(50))
			arena[off + i] ^= 0x80;
	cmds.doorbells++;
	if (chance(70) && c->nqpns) {
		uint32_t qpn = c->qpns[rnd(c->nqpns)];

		*(volatile uint32_t *)(c->uar + MLX4_SEND_DOORBELL) =
			htobe32(qpn << 8);
	} else {
		uint32_t db[2] = {
			htobe32((1u + rnd(3)) << 24 | (chance(90) && c->ncqns ?
				c->cqns[rnd(c->ncqns)] : nasty32() & 0xffffff)),
			htobe32(rnd(256)),
		};
		uint64_t v;

		memcpy(&v, db, sizeof(v));
		*(volatile uint64_t *)(c->uar + MLX4_CQ_DOORBELL) = v;
	}
}

/* What a uverbs command is made of, for building valid ones. */
struct shape {
	uint32_t command;
	bool ex;
	uint16_t core;		/* request, after the headers */
	uint16_t resp;		/* core response */
	uint16_t drv_in, drv_out;
	enum kind kind;		/* its response starts with a handle of this */
};

/* Every command mlx4_ib serves, from the daemon's list of them. */
#define LEG(c, fn, req, rsp, din, dout, kind) \
	{ IB_USER_VERBS_CMD_##c, false, sizeof(req), rsp, din, dout, kind },
#define EXT(c, fn, req, req_end, rsp_min, rsp, din, dout, kind) \
	{ IB_USER_VERBS_EX_CMD_##c, true, sizeof(req), rsp, din, dout, kind },
#define UNSERVED(c)

static const struct shape all_shapes[] = {
	UVERBS_LEGACY_CMDS(LEG, UNSERVED)
	UVERBS_EX_CMDS(EXT)
};

#undef LEG
#undef EXT

/* GET_CONTEXT, the first, is the one get_context() sends: fuzz the rest. */
#define ROW(c, ...) ROW_##c,
enum { UVERBS_LEGACY_CMDS(ROW, UNSERVED) };
#undef ROW
#undef UNSERVED
_Static_assert(ROW_GET_CONTEXT == 0, "GET_CONTEXT is the first command");

static const struct shape *const shapes = all_shapes + 1;

#define NSHAPES (sizeof(all_shapes) / sizeof(all_shapes[0]) - 1)

/* Plausible words: small numbers, handles we hold, access flags. */
static void fill_words(struct conn *c, const struct shape *s, uint8_t *core)
{
	for (size_t off = 0; off + 4 <= s->core; off += 4) {
		uint32_t v;

		/* Zero most: comp_mask and reserved words must be. */
		switch (rnd(10)) {
		case 0: case 1: case 2: case 3: v = 0; break;
		case 4: v = rnd(4); break;
		case 5: v = rnd(256); break;
		case 6: case 7: v = some_handle(c, H_ANY); break;
		case 8: v = rnd(2) ? IBV_ACCESS_LOCAL_WRITE |
				     IBV_ACCESS_REMOTE_WRITE |
				     IBV_ACCESS_REMOTE_READ : 1;
			break;
		default: v = nasty32();
		}
		memcpy(core + off, &v, 4);
	}
}

/* A region in the arena, mostly of a sane length, on one of our PDs. */
static void fill_reg_mr(struct conn *c, struct ib_uverbs_reg_mr *r)
{
	r->start = some_addr(4096);
	r->length = chance(80) ? 1 + rnd(65536) : nasty32();
	r->hca_va = chance(80) ? r->start : rnd64();
	r->pd_handle = some_handle(c, H_PD);
}

static void fill_create_srq(struct conn *c, struct ib_uverbs_create_srq *q)
{
	q->pd_handle = some_handle(c, H_PD);
	q->max_wr = rnd(128);
	q->max_sge = rnd(4);
	q->srq_limit = 0;
}

static void fill_create_cq(struct ib_uverbs_create_cq *q)
{
	q->cqe = chance(90) ? 1 + rnd(256) : nasty32();
	q->comp_channel = chance(90) ? -1 : (int32_t)rnd(8);
	q->comp_vector = chance(90) ? 0 : rnd(4);
}

/* A QP of a type mlx4_ib makes, mostly, on our PD, CQs and SRQ. */
static void fill_create_qp(struct conn *c, struct ib_uverbs_create_qp *q)
{
	static const uint8_t types[] = { IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD,
					 IBV_QPT_XRC_SEND, IBV_QPT_XRC_RECV };

	q->pd_handle = some_handle(c, H_PD);
	q->send_cq_handle = some_handle(c, H_CQ);
	q->recv_cq_handle = some_handle(c, H_CQ);
	q->srq_handle = some_handle(c, H_SRQ);
	q->max_send_wr = rnd(64);
	q->max_recv_wr = rnd(64);
	q->max_send_sge = rnd(4);
	q->max_recv_sge = rnd(4);
	q->max_inline_data = rnd(2) ? 0 : rnd(256);
	q->qp_type = chance(90) ? types[rnd(sizeof(types))] : rnd(256);
	q->is_srq = rnd(2);
}

/* The next step of the usual walk, with the mask it takes. */
static void next_qp_state(struct ib_uverbs_modify_qp *m)
{
	static const uint32_t masks[] = {
		[IBV_QPS_INIT] = IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				 IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
		[IBV_QPS_RTR] = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				IBV_QP_MAX_DEST_RD_ATOMIC |
				IBV_QP_MIN_RNR_TIMER,
		[IBV_QPS_RTS] = IBV_QP_STATE | IBV_QP_TIMEOUT |
				IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC,
	};

	m->qp_state = IBV_QPS_INIT + rnd(3);
	m->attr_mask = masks[m->qp_state] | (chance(10) ? 1u << rnd(21) : 0);
	m->port_num = 1;
	m->pkey_index = 0;
	m->path_mtu = 1 + rnd(5);
	m->dest.dlid = rnd(4);
	m->dest.port_num = 1;
	m->dest.is_global = chance(10);
	m->max_rd_atomic = rnd(8);
	m->max_dest_rd_atomic = rnd(8);
	m->timeout = rnd(32);
	m->retry_cnt = rnd(8);
	m->rnr_retry = rnd(8);
	m->min_rnr_timer = rnd(32);
}

static void fill_modify_qp(struct conn *c, struct ib_uverbs_modify_qp *m)
{
	m->qp_handle = some_handle(c, H_QP);
	m->qp_state = rnd(8);
	m->port_num = rnd(4);
	m->path_mtu = rnd(7);
	if (chance(60))
		next_qp_state(m);
	/*
	 * Connected traffic goes only to our own QPs: on a real subnet a
	 * process that guesses another's QPN and PSN could inject into its
	 * connection, and no device stops that.
	 */
	m->dest_qp_num = c->nqpns ? c->qpns[rnd(c->nqpns)] : 0;
}

/*
 * Plausible fields: small numbers, handles we hold, addresses in the
 * arena; then the fields a command needs right to get anywhere.
 */
static void fill_core(struct conn *c, const struct shape *s, uint8_t *core)
{
	fill_words(c, s, core);
	if (!s->ex)	/* the legacy response pointer: the preload's business */
		memset(core, 0, 8);
	if (!s->ex && s->command == IB_USER_VERBS_CMD_REG_MR)
		fill_reg_mr(c, (void *)core);
	if (!s->ex && s->command == IB_USER_VERBS_CMD_CREATE_SRQ)
		fill_create_srq(c, (void *)core);
	if (!s->ex && s->command == IB_USER_VERBS_CMD_CREATE_CQ)
		fill_create_cq((void *)core);
	if (!s->ex && s->command == IB_USER_VERBS_CMD_CREATE_QP)
		fill_create_qp(c, (void *)core);
	if (s->command == IB_USER_VERBS_CMD_MODIFY_QP && !s->ex)
		fill_modify_qp(c, (void *)core);
	if (s->ex && s->command == IB_USER_VERBS_EX_CMD_MODIFY_QP)
		fill_modify_qp(c, &((struct ib_uverbs_ex_modify_qp *)core)->base);
}

static void fill_driver(const struct shape *s, uint8_t *drv)
{
	for (size_t off = 0; off + 4 <= s->drv_in; off += 4) {
		uint32_t v = rnd(2) ? rnd(16) : nasty32();

		memcpy(drv + off, &v, 4);
	}
	if (s->drv_in >= 16) {
		/* buf_addr and db_addr lead the driver data of every ring. */
		uint64_t buf = some_addr(4096), db = some_addr(8);

		memcpy(drv, &buf, 8);
		memcpy(drv + 8, &db, 8);
	}
	if (s->command == IB_USER_VERBS_CMD_CREATE_QP && !s->ex) {
		struct mlx4_ib_create_qp *q = (void *)drv;

		q->log_sq_bb_count = rnd(8);
		q->log_sq_stride = 6 + rnd(3);
		q->sq_no_prefetch = 0;
		q->inl_recv_sz = 0;
	}
}

/* Build a command of shape @s into @buf; returns its length. */
static size_t build(struct conn *c, const struct shape *s, uint8_t *buf)
{
	struct ib_uverbs_cmd_hdr *hdr = (void *)buf;
	size_t len;

	memset(buf, 0, 1024);
	hdr->command = s->command;
	if (s->ex) {
		struct ib_uverbs_ex_cmd_hdr *ex = (void *)(hdr + 1);
		uint8_t *core = (uint8_t *)(ex + 1);
		size_t core_len = (s->core + 7) & ~7u;

		hdr->command |= IB_USER_VERBS_CMD_FLAG_EXTENDED;
		hdr->in_words = core_len / 8;
		hdr->out_words = (s->resp + 7) / 8;
		ex->provider_in_words = (s->drv_in + 7) / 8;
		ex->provider_out_words = (s->drv_out + 7) / 8;
		ex->response = hdr->out_words || ex->provider_out_words ?
			       0x1000 : 0;
		fill_core(c, s, core);
		fill_driver(s, core + core_len);
		len = sizeof(*hdr) + sizeof(*ex) + core_len +
		      ex->provider_in_words * 8;
	} else {
		uint8_t *core = (uint8_t *)(hdr + 1);

		fill_core(c, s, core);
		fill_driver(s, core + s->core);
		len = sizeof(*hdr) + s->core + s->drv_in;
		len = (len + 3) & ~3u;
		hdr->in_words = len / 4;
		hdr->out_words = (s->resp + s->drv_out + 3) / 4;
	}
	return len;
}

/* Break a built command in one to four ways. */
static size_t mutate(struct conn *c, uint8_t *buf, size_t len, size_t cap)
{
	struct ib_uverbs_cmd_hdr *hdr = (void *)buf;

	for (int i = 1 + rnd(4); i > 0; i--) {
		uint32_t v;

		switch (rnd(8)) {
		case 0:		/* a bit */
			buf[rnd(len)] ^= 1 << rnd(8);
			break;
		case 1:		/* a field */
			v = chance(50) ? nasty32() : some_handle(c, H_ANY);
			if (len >= 4)
				memcpy(buf + (rnd(len / 4) * 4), &v, 4);
			break;
		case 2:		/* truncated */
			len = rnd(len + 1);
			break;
		case 3:		/* longer than it says */
			v = chance(90) ? rnd(256) : rnd(cap - len);
			for (uint32_t k = 0; k < v && len < cap; k++)
				buf[len++] = rnd(256);
			break;
		case 4:		/* what it says of its sizes */
			if (len >= sizeof(*hdr)) {
				hdr->in_words = chance(50) ? hdr->in_words + rnd(5) - 2
							   : rnd(65536);
				if (chance(50))
					hdr->out_words = chance(50) ?
						hdr->out_words + rnd(5) - 2 :
						rnd(65536);
			}
			break;
		case 5:		/* another command's number */
			if (len >= 4)
				hdr->command = chance(50) ? rnd(64) |
					(chance(30) ? IB_USER_VERBS_CMD_FLAG_EXTENDED : 0)
					: nasty32();
			break;
		case 6:		/* a handle at every word */
			for (size_t off = 8; off + 4 <= len; off += 4)
				if (chance(20)) {
					v = some_handle(c, H_ANY);
					memcpy(buf + off, &v, 4);
				}
			break;
		default:	/* the extended header's words */
			if (len >= 16)
				buf[8 + rnd(8)] = rnd(256);
		}
	}
	return len;
}

static void take_answer(struct conn *c, const struct shape *s, int32_t ret,
			const uint8_t *resp, size_t resp_len)
{
	uint32_t w[2];

	if (ret == INT32_MIN)
		return;
	if (ret < 0) {
		cmds.refused++;
		return;
	}
	cmds.accepted++;
	if (!s || s->kind == H_ANY || resp_len < 8)
		return;
	memcpy(w, resp, sizeof(w));
	remember(c->handles[H_ANY], &c->nhandles[H_ANY], w[0]);
	remember(c->handles[s->kind], &c->nhandles[s->kind], w[0]);
	if (s->command == IB_USER_VERBS_CMD_CREATE_QP ||
	    s->command == IB_USER_VERBS_CMD_OPEN_QP)
		remember(c->qpns, &c->nqpns, w[1]);
	/* mlx4's answer after the core one: the CQN, for its doorbells. */
	if (!s->ex && s->command == IB_USER_VERBS_CMD_CREATE_CQ &&
	    resp_len >= sizeof(struct ib_uverbs_create_cq_resp) + 4) {
		memcpy(w, resp + sizeof(struct ib_uverbs_create_cq_resp), 4);
		remember(c->cqns, &c->ncqns, w[0]);
	}
}

/* A get-context as libibverbs sends it, so that the commands after it run. */
static void get_context(struct conn *c)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_get_context core;
	} cmd = {
		.hdr = {
			.command = IB_USER_VERBS_CMD_GET_CONTEXT,
			.in_words = sizeof(cmd) / 4,
			.out_words = (sizeof(struct ib_uverbs_get_context_resp) +
				      sizeof(struct mlx4_ib_alloc_ucontext_resp)) / 4,
		},
	};

	take_answer(c, NULL, request(c, MLX4SIM_OP_WRITE, 0, &cmd, sizeof(cmd),
				     NULL, NULL), NULL, 0);
}

/* Requests that are not uverbs commands: mmap, event reads, strangers. */
static void odd_request(struct conn *c)
{
	uint8_t payload[64];
	size_t len = rnd(sizeof(payload) + 1);
	uint32_t op = chance(80) ? MLX4SIM_OP_MMAP + rnd(2) : nasty32();
	uint32_t arg = chance(70) ? rnd(8) : nasty32();
	struct mlx4sim_mmap *m = (void *)payload;

	for (size_t i = 0; i < sizeof(payload); i++)
		payload[i] = rnd(256);
	if (op == MLX4SIM_OP_MMAP && chance(60)) {
		m->length = chance(70) ? 4096 : nasty32();
		m->prot = rnd(8);
		m->flags = rnd(4);
		len = sizeof(*m);
	} else if (op == MLX4SIM_OP_EVENT && chance(60)) {
		struct mlx4sim_event e = { .count = chance(50) ? 16 : nasty32() };

		memcpy(payload, &e, sizeof(e));
		len = sizeof(e);
	}
	/* A SHARE no command asked for, or after one (pinned pages). */
	if (chance(10)) {
		struct mlx4sim_share share = { some_addr(4096),
					       chance(50) ? 4096 : nasty32() };

		op = MLX4SIM_OP_SHARE;
		memcpy(payload, &share, sizeof(share));
		len = chance(90) ? sizeof(share) : rnd(sizeof(payload) + 1);
	}
	/* An OPEN on an open connection, a FAULT from a device connection. */
	if (chance(5))
		op = chance(50) ? MLX4SIM_OP_OPEN : MLX4SIM_OP_FAULT;
	take_answer(c, NULL, request(c, op, arg, payload, len, NULL, NULL),
		    NULL, 0);
}

/* A raw datagram: empty, shorter than a request header, or oversized. */
static void raw_datagram(struct conn *c)
{
	static uint8_t big[MLX4SIM_MAX_MSG + 4096];
	size_t len;

	switch (rnd(3)) {
	case 0: len = 0; break;
	case 1: len = 1 + rnd(7); break;
	default: len = MLX4SIM_MAX_MSG + rnd(4096); break;
	}
	for (size_t i = 0; i < 16; i++)
		big[i] = rnd(256);
	cmds.sent++;
	if (send(c->fd, big, len, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
		return;
	if (len) {
		/* Anything but the empty one is answered (or ends us). */
		struct pollfd p = { .fd = c->fd, .events = POLLIN };
		uint8_t r[256];

		if (poll(&p, 1, 10000) != 1 || recv(c->fd, r, sizeof(r), 0) <= 0) {
			cmds.closed++;
			conn_close(c);
			return;
		}
		cmds.answered++;
	}
}

static void fuzz_commands(struct conn *c, int count)
{
	static uint8_t buf[MLX4SIM_MAX_MSG + 4096];
	uint8_t resp[4096];

	for (int i = 0; i < count; i++) {
		const struct shape *s = &shapes[rnd(NSHAPES)];
		size_t len, resp_len = 0;
		int32_t ret;

		if (c->fd < 0) {
			conn_open(c);
			if (c->fd < 0)
				return;
			if (chance(95))
				c->opened = !request(c, MLX4SIM_OP_OPEN,
						     chance(95) ? 0 : nasty32(),
						     NULL, 0, NULL, NULL);
			if (c->opened && chance(95)) {
				get_context(c);
				if (c->fd >= 0 && chance(90))
					map_uar(c);
			}
			continue;
		}
		if (chance(c->opened ? 1 : 20)) {
			/* Away with everything it holds. */
			conn_close(c);
			continue;
		}
		if (chance(5)) {
			odd_request(c);
			continue;
		}
		if (c->uar && chance(10)) {
			scribble_and_ring(c);
			continue;
		}
		if (chance(2)) {
			raw_datagram(c);
			continue;
		}
		len = build(c, s, buf);
		if (chance(50))
			len = mutate(c, buf, len, sizeof(buf));
		ret = request(c, MLX4SIM_OP_WRITE, chance(90) ? 0 : nasty32(),
			      buf, len, resp, &resp_len);
		take_answer(c, s, ret, resp, resp_len);
	}
}

/* ------------------------------------------------------------------ */
/* Garbage in real rings                                               */
/* ------------------------------------------------------------------ */

static struct {
	uint64_t wqes, recv_wqes, srq_wqes, doorbells, completions, rounds;
	uint64_t setups, setup_failures;
	uint64_t outside;	/* regions whose neighbours the daemon wrote */
} rings;

#define SCRATCH_SIZE (256 * 1024)
#define CANARY_SIZE 4096	/* each side of the scratch region */
#define CANARY 0x5a

struct ring_qp {
	struct ibv_qp *qp;
	struct mlx4dv_qp dv;
	uint32_t sq_pi, rq_pi;
};

static struct {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_srq *srq;
	struct mlx4dv_srq dvsrq;
	struct mlx4dv_cq dvcq;
	struct ibv_mr *mr;
	uint8_t *scratch;
	struct ring_qp qp[3];	/* RC and RC on the SRQ, looped; UD */
	bool clean;		/* these rings get only nearly valid WQEs */
	uint16_t srq_db;
	uint16_t lid;
} dev;

static bool to_rts(struct ibv_qp *qp, uint32_t dest)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = 0x1234,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_REMOTE_ATOMIC,
	};
	bool ud = qp->qp_type == IBV_QPT_UD;

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | (ud ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS)))
		return false;
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dest;
	a.ah_attr.dlid = dev.lid;
	a.ah_attr.port_num = 1;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 1;
	if (ibv_modify_qp(qp, &a, ud ? IBV_QP_STATE :
			  IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		return false;
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 1;
	a.retry_cnt = 1;
	a.rnr_retry = 1;
	a.max_rd_atomic = 4;
	return !ibv_modify_qp(qp, &a, ud ? IBV_QP_STATE | IBV_QP_SQ_PSN :
			      IBV_QP_STATE | IBV_QP_TIMEOUT |
			      IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			      IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

static void rings_down(void)
{
	for (int i = 0; i < 3; i++)
		if (dev.qp[i].qp)
			ibv_destroy_qp(dev.qp[i].qp);
	if (dev.srq)
		ibv_destroy_srq(dev.srq);
	if (dev.cq)
		ibv_destroy_cq(dev.cq);
	if (dev.mr)
		ibv_dereg_mr(dev.mr);
	if (dev.pd)
		ibv_dealloc_pd(dev.pd);
	if (dev.ctx)
		ibv_close_device(dev.ctx);
	if (dev.scratch) {
		uint8_t *below = dev.scratch - CANARY_SIZE;
		uint8_t *above = dev.scratch + SCRATCH_SIZE;

		for (size_t i = 0; i < CANARY_SIZE; i++)
			if (below[i] != CANARY || above[i] != CANARY) {
				fprintf(stderr, "sim-fuzz: the bytes next to a registered region changed (%zu bytes %s it): the daemon wrote outside a region\n",
					below[i] != CANARY ? CANARY_SIZE - i : i + 1,
					below[i] != CANARY ? "below" : "above");
				rings.outside++;
				break;
			}
		munmap(below, SCRATCH_SIZE + 2 * CANARY_SIZE);
	}
	memset(&dev, 0, sizeof(dev));
}

static bool rings_up(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 64, .max_sge = 2 } };
	struct ibv_port_attr port;
	struct mlx4dv_obj obj = {};

	rings.setups++;
	if (!list || !list[0] || !(dev.ctx = ibv_open_device(list[0])))
		goto fail;
	ibv_free_device_list(list);
	list = NULL;
	if (ibv_query_port(dev.ctx, 1, &port))
		goto fail;
	dev.lid = port.lid;
	dev.pd = ibv_alloc_pd(dev.ctx);
	dev.cq = ibv_create_cq(dev.ctx, 256, NULL, NULL, 0);
	dev.srq = dev.pd ? ibv_create_srq(dev.pd, &sa) : NULL;
	/*
	 * The region the garbage WQEs name, between bytes no key opens: they
	 * must be as they were when the region goes.
	 */
	dev.scratch = mmap(NULL, SCRATCH_SIZE + 2 * CANARY_SIZE,
			   PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			   -1, 0);
	if (dev.scratch == MAP_FAILED) {
		dev.scratch = NULL;
	} else {
		memset(dev.scratch, CANARY, SCRATCH_SIZE + 2 * CANARY_SIZE);
		dev.scratch += CANARY_SIZE;
	}
	if (!dev.pd || !dev.cq || !dev.srq || !dev.scratch)
		goto fail;
	dev.mr = ibv_reg_mr(dev.pd, dev.scratch, SCRATCH_SIZE,
			    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			    IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
	if (!dev.mr)
		goto fail;
	for (int i = 0; i < 3; i++) {
		struct ibv_qp_init_attr qa = {
			.send_cq = dev.cq, .recv_cq = dev.cq,
			.srq = i == 1 ? dev.srq : NULL,
			.qp_type = i == 2 ? IBV_QPT_UD : IBV_QPT_RC,
			.cap = { .max_send_wr = 16, .max_recv_wr = 16,
				 .max_send_sge = 4, .max_recv_sge = 2,
				 .max_inline_data = 64 },
		};

		dev.qp[i].qp = ibv_create_qp(dev.pd, &qa);
		if (!dev.qp[i].qp)
			goto fail;
		obj.qp.in = dev.qp[i].qp;
		obj.qp.out = &dev.qp[i].dv;
		if (mlx4dv_init_obj(&obj, MLX4DV_OBJ_QP))
			goto fail;
	}
	for (int i = 0; i < 3; i++)
		if (!to_rts(dev.qp[i].qp, dev.qp[i < 2 ? i ^ 1 : i].qp->qp_num))
			goto fail;
	/* Half the rings live long enough for the data to move. */
	dev.clean = chance(50);
	obj.srq.in = dev.srq;
	obj.srq.out = &dev.dvsrq;
	obj.cq.in = dev.cq;
	obj.cq.out = &dev.dvcq;
	dev.dvcq.comp_mask = MLX4DV_CQ_MASK_UAR;
	if (mlx4dv_init_obj(&obj, MLX4DV_OBJ_SRQ | MLX4DV_OBJ_CQ))
		goto fail;
	return true;
fail:
	if (list)
		ibv_free_device_list(list);
	rings.setup_failures++;
	rings_down();
	return false;
}

static uint32_t some_key(void)
{
	if (chance(70))
		return chance(50) ? dev.mr->lkey : dev.mr->rkey;
	return chance(50) ? dev.mr->lkey ^ (1u << rnd(32)) : nasty32();
}

static uint64_t some_scratch_addr(void)
{
	if (chance(85))
		return (uintptr_t)dev.scratch + rnd(SCRATCH_SIZE);
	return chance(50) ? rnd64() : (uintptr_t)dev.scratch - 1 - rnd(64);
}

static uint32_t some_length(void)
{
	return chance(85) ? rnd(8192) : nasty32();
}

/*
 * Segments after the control segment: sensible kinds, senseless values.
 * Returns the bytes they take.
 */
static size_t garbage_segments(uint8_t *seg, size_t room, bool ud)
{
	size_t off = 0;

	if (ud && room >= sizeof(struct mlx4_wqe_datagram_seg) && chance(80)) {
		struct mlx4_wqe_datagram_seg *d = (void *)seg;

		for (size_t i = 0; i < sizeof(*d); i++)
			seg[i] = rnd(256);
		d->av.port_pd = htobe32((chance(80) ? 1u : rnd(4)) << 24 |
					(chance(80) ? 0 : rnd(64)));
		d->av.dlid = htobe16(chance(80) ? dev.lid : rnd(8));
		d->av.g_slid &= chance(80) ? 0 : 0xff;
		/* Near our own QPNs: other processes' QPs are there too. */
		d->dqpn = htobe32(dev.qp[rnd(3)].qp->qp_num + rnd(16) - 8);
		d->qkey = htobe32(chance(60) ? 0x1234 : nasty32());
		off = sizeof(*d);
	}
	if (chance(50) && off + 16 <= room) {
		struct mlx4_wqe_raddr_seg *r = (void *)(seg + off);

		r->raddr = htobe64(some_scratch_addr());
		r->rkey = htobe32(some_key());
		off += 16;
		if (chance(30) && off + 16 <= room) {
			struct mlx4_wqe_atomic_seg *a = (void *)(seg + off);

			a->swap_add = htobe64(rnd64());
			a->compare = htobe64(rnd64());
			off += 16;
		}
	}
	bool inl = chance(25);

	while (off + 16 <= room && chance(75)) {
		if (chance(5))
			inl = !inl;
		if (inl) {
			uint32_t len = chance(85) ? rnd(60) : nasty32() & 0x7fffffff;
			uint32_t word = htobe32(MLX4_INLINE_SEG | len);

			memcpy(seg + off, &word, 4);
			for (uint32_t i = 0; i < MIN(len, 60u) &&
					     off + 4 + i < room; i++)
				seg[off + 4 + i] = rnd(256);
			off += (4 + MIN(len, 60u) + 15) & ~15u;
		} else {
			struct mlx4_wqe_data_seg *d = (void *)(seg + off);

			d->byte_count = htobe32(chance(3) ? 0xffffffff : some_length());
			d->lkey = htobe32(some_key());
			d->addr = htobe64(some_scratch_addr());
			off += 16;
		}
	}
	return off;
}

/*
 * An RC WQE as a driver makes it, with one field (an address, a length,
 * a key) at the edge or past it: the QP lives on, and the data path runs.
 * Returns the opcode.  (A UD one would need the PD's number, which the
 * verbs do not tell.)
 */
static uint32_t nearly_valid_send(struct ring_qp *q, uint8_t *wqe,
				  bool sends)
{
	static const uint8_t rc_ops[] = {
		MLX4_OPCODE_SEND, MLX4_OPCODE_SEND_IMM, MLX4_OPCODE_RDMA_WRITE,
		MLX4_OPCODE_RDMA_WRITE_IMM, MLX4_OPCODE_RDMA_READ,
		MLX4_OPCODE_ATOMIC_CS, MLX4_OPCODE_ATOMIC_FA,
	};
	struct mlx4_wqe_ctrl_seg *ctrl = (void *)wqe;
	/* The first two are sends: they need a receive at the other end. */
	uint32_t opcode = rc_ops[sends ? rnd(sizeof(rc_ops)) :
				 2 + rnd(sizeof(rc_ops) - 2)];
	bool atomic = opcode == MLX4_OPCODE_ATOMIC_CS ||
		      opcode == MLX4_OPCODE_ATOMIC_FA;
	uint32_t stride = 1u << q->dv.sq.wqe_shift;
	/* On clean rings, one WQE in twenty is off the edge. */
	bool edge = !dev.clean || chance(5);
	size_t off = 16;

	memset(wqe + 4, 0, stride - 4);
	if (opcode == MLX4_OPCODE_RDMA_WRITE ||
	    opcode == MLX4_OPCODE_RDMA_WRITE_IMM ||
	    opcode == MLX4_OPCODE_RDMA_READ || atomic) {
		struct mlx4_wqe_raddr_seg *r = (void *)(wqe + off);

		r->raddr = htobe64(atomic || !edge ?
				   ((uintptr_t)dev.scratch + rnd(SCRATCH_SIZE - 8192)) & ~7ULL :
				   some_scratch_addr());
		r->rkey = htobe32(!edge || chance(90) ? dev.mr->rkey : some_key());
		off += sizeof(*r);
	}
	if (atomic) {
		struct mlx4_wqe_atomic_seg *a = (void *)(wqe + off);

		a->swap_add = htobe64(rnd64());
		a->compare = htobe64(rnd64());
		off += sizeof(*a);
	}
	for (int n = atomic ? 1 : 1 + rnd(3); n > 0 && off + 16 <= stride; n--) {
		struct mlx4_wqe_data_seg *d = (void *)(wqe + off);
		uint32_t len = atomic ? 8 : !edge || chance(90) ? rnd(2048) : some_length();

		d->byte_count = htobe32(len);
		d->lkey = htobe32(!edge || chance(95) ? dev.mr->lkey : some_key());
		/* Near the region's ends, sometimes past them. */
		d->addr = htobe64(!edge || chance(80) ? (uintptr_t)dev.scratch + rnd(SCRATCH_SIZE - 4096) :
				  chance(50) ? (uintptr_t)dev.scratch + SCRATCH_SIZE - rnd(2 * len + 1) :
					       some_scratch_addr());
		off += 16;
	}
	ctrl->fence_size = off / 16;
	ctrl->srcrb_flags = htobe32(MLX4_WQE_CTRL_CQ_UPDATE);
	ctrl->imm = rnd64();
	return opcode;
}

static void garbage_recv(struct ring_qp *q, bool valid);

static void garbage_send(struct ring_qp *q)
{
	static const uint8_t ops[] = {
		MLX4_OPCODE_NOP, MLX4_OPCODE_SEND_INVAL, MLX4_OPCODE_RDMA_WRITE,
		MLX4_OPCODE_RDMA_WRITE_IMM, MLX4_OPCODE_SEND,
		MLX4_OPCODE_SEND_IMM, MLX4_OPCODE_LSO, MLX4_OPCODE_RDMA_READ,
		MLX4_OPCODE_ATOMIC_CS, MLX4_OPCODE_ATOMIC_FA,
		MLX4_OPCODE_MASKED_ATOMIC_CS, MLX4_OPCODE_MASKED_ATOMIC_FA,
		MLX4_OPCODE_BIND_MW, MLX4_OPCODE_FMR, MLX4_OPCODE_LOCAL_INVAL,
		MLX4_OPCODE_CONFIG_CMD,
	};
	uint32_t stride = 1u << q->dv.sq.wqe_shift, cnt = q->dv.sq.wqe_cnt;
	uint8_t *wqe = (uint8_t *)q->dv.buf.buf + q->dv.sq.offset +
		       (q->sq_pi & (cnt - 1)) * stride;
	struct mlx4_wqe_ctrl_seg *ctrl = (void *)wqe;
	uint32_t owner = q->sq_pi & cnt ? 1u << 31 : 0;
	uint32_t opcode = chance(90) ? ops[rnd(sizeof(ops))] : rnd(32);

	if (dev.clean) {
		/* QP 1 sends to QP 0's RQ (QP 1's receives are the SRQ's). */
		opcode = nearly_valid_send(q, wqe, q == &dev.qp[1]);
		if (q == &dev.qp[1])
			garbage_recv(&dev.qp[0], true);
	} else if (q->qp->qp_type == IBV_QPT_RC && chance(60)) {
		opcode = nearly_valid_send(q, wqe, q == &dev.qp[1]);
	} else if (chance(10)) {
		for (uint32_t i = 4; i < stride; i++)
			wqe[i] = rnd(256);
	} else {
		size_t used;

		memset(wqe + 4, 0, stride - 4);
		used = garbage_segments(wqe + 16, stride - 16,
					q->qp->qp_type == IBV_QPT_UD);
		/* Mostly the size it has, so that the values get looked at. */
		if (chance(85))
			ctrl->fence_size = 1 + used / 16;
		else
			ctrl->fence_size = chance(90) ? 1 + rnd(stride / 16) :
						       rnd(256);
		ctrl->srcrb_flags = htobe32((chance(90) ? MLX4_WQE_CTRL_CQ_UPDATE : rnd(16)) |
					    (chance(60) ? MLX4_WQE_CTRL_STRONG_ORDER : 0) |
					    (chance(10) ? rnd(1u << 24) << 8 : 0));
		ctrl->imm = rnd64();
	}
	if (!dev.clean && chance(3))
		owner ^= 1u << 31;
	__atomic_thread_fence(__ATOMIC_RELEASE);
	ctrl->owner_opcode = htobe32(owner | opcode |
				     (!dev.clean && chance(5) ? rnd(1u << 26) << 5 : 0));
	q->sq_pi++;
	rings.wqes++;
}

static void garbage_recv(struct ring_qp *q, bool valid)
{
	uint32_t stride = 1u << q->dv.rq.wqe_shift;
	uint8_t *wqe;

	if (!q->dv.rq.wqe_cnt)
		return;
	wqe = (uint8_t *)q->dv.buf.buf + q->dv.rq.offset +
	      (q->rq_pi & (q->dv.rq.wqe_cnt - 1)) * stride;
	memset(wqe, 0, stride);
	if (valid || chance(70)) {
		/* One scatter entry as a driver posts it, near the region's end. */
		struct mlx4_wqe_data_seg *d = (void *)wqe;
		bool edge = !valid || chance(5);
		uint32_t len = 8192;

		d->byte_count = htobe32(len);
		d->lkey = htobe32(!edge || chance(95) ? dev.mr->lkey : some_key());
		d->addr = htobe64(!edge || chance(80) ? (uintptr_t)dev.scratch + rnd(SCRATCH_SIZE - 8192) :
				  (uintptr_t)dev.scratch + SCRATCH_SIZE - rnd(2 * len));
		if (stride >= 32)
			d[1].lkey = htobe32(MLX4_INVALID_LKEY);
	} else {
		garbage_segments(wqe, stride, false);
	}
	q->rq_pi++;
	rings.recv_wqes++;
	__atomic_thread_fence(__ATOMIC_RELEASE);
	*q->dv.rdb = htobe32(valid || chance(90) ? q->rq_pi & 0xffff : nasty32());
}

static void garbage_srq(void)
{
	uint32_t stride = 1u << dev.dvsrq.wqe_shift;
	uint32_t n = dev.dvsrq.buf.length / stride;
	uint8_t *wqe = (uint8_t *)dev.dvsrq.buf.buf + rnd(n) * stride;
	struct mlx4_wqe_srq_next_seg *next = (void *)wqe;

	garbage_segments(wqe + sizeof(*next), stride - sizeof(*next), false);
	if (chance(20))
		next->next_wqe_index = htobe16(rnd(65536));
	dev.srq_db += chance(90) ? 1 : rnd(65536);
	rings.srq_wqes++;
	__atomic_thread_fence(__ATOMIC_RELEASE);
	*dev.dvsrq.db = htobe32(dev.srq_db);
}

static void ring_doorbell(struct ring_qp *q)
{
	uint32_t v = q->dv.doorbell_qpn;

	if (!dev.clean && chance(5))
		v = htobe32(nasty32());
	rings.doorbells++;
	*(volatile uint32_t *)q->dv.sdb = v;
}

static void cq_garbage(void)
{
	uint32_t db[2];
	uint64_t v;

	/* An arm or a consumer index the CQ never saw. */
	db[0] = htobe32((chance(50) ? 1u : rnd(4)) << 24 |
			(chance(80) ? dev.dvcq.cqn : nasty32() & 0xffffff));
	db[1] = htobe32(nasty32());
	memcpy(&v, db, sizeof(v));
	rings.doorbells++;
	*(volatile uint64_t *)((char *)dev.dvcq.cq_uar + MLX4_CQ_DOORBELL) = v;
	if (chance(30))
		*dev.dvcq.set_ci_db = htobe32(nasty32());
}

static void fuzz_rings(int rounds)
{
	struct ibv_wc wc[32];
	int n;

	for (int r = 0; r < rounds; r++) {
		struct ring_qp *q;

		if (!dev.ctx && !rings_up())
			return;
		q = &dev.qp[dev.clean ? (chance(30) ? 0 : 1) : rnd(3)];
		rings.rounds++;
		for (int i = 1 + rnd(4); i > 0; i--)
			garbage_send(q);
		if (!dev.clean) {
			if (chance(70))
				garbage_recv(&dev.qp[chance(50) ? 0 : 2], false);
			if (chance(30))
				garbage_srq();
			if (chance(5))
				cq_garbage();
		}
		if (dev.clean || chance(95))
			ring_doorbell(q);
		while ((n = ibv_poll_cq(dev.cq, 32, wc)) > 0)
			rings.completions += n;
		/* Fresh rings now and then: stalled and broken ones are dull. */
		if (chance(3))
			rings_down();
	}
}

static int fuzz(int seconds)
{
	uint64_t start = now_ms(), end = start + seconds * 1000ULL;
	struct conn c = { .fd = -1 };
	int ret = 0;

	seed_from_env("sim-fuzz");
	simd = sim_daemon_pid();
	/*
	 * Inaccessible pages on both sides: a ring that runs past the arena
	 * must not reach memory of ours that is mapped, as a device would
	 * (the kernel pins what a process names, whatever it is).
	 */
	arena = mmap(NULL, ARENA_SIZE + 2 * 65536, PROT_NONE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (arena != MAP_FAILED) {
		arena += 65536;
		if (mprotect(arena, ARENA_SIZE, PROT_READ | PROT_WRITE))
			arena = MAP_FAILED;
	}
	if (!simd || arena == MAP_FAILED) {
		fprintf(stderr, "sim-fuzz: no daemon pid in $%s/pid, or no memory\n",
			MLX4SIM_ENV_DIR);
		return 1;
	}
	while (now_ms() < end && daemon_alive() && !cmds.stalls) {
		fuzz_commands(&c, 200);
		fuzz_rings(20);
	}
	conn_close(&c);
	rings_down();
	printf("sim-fuzz: %.1f s: %" PRIu64 " requests on %" PRIu64 " connections (%" PRIu64 " answered: %" PRIu64 " accepted, %" PRIu64 " refused; %" PRIu64 " files passed; %" PRIu64 " connections ended by the daemon); %" PRIu64 " doorbells on their rings\n",
	       (now_ms() - start) / 1000.0, cmds.sent, cmds.connections,
	       cmds.answered, cmds.accepted, cmds.refused, cmds.fds, cmds.closed,
	       cmds.doorbells);
	printf("sim-fuzz: %" PRIu64 " send WQEs, %" PRIu64 " receive WQEs, %" PRIu64 " SRQ WQEs, %" PRIu64 " doorbells in %" PRIu64 " rounds on %" PRIu64 " sets of rings (%" PRIu64 " failed to set up); %" PRIu64 " completions\n",
	       rings.wqes, rings.recv_wqes, rings.srq_wqes, rings.doorbells,
	       rings.rounds, rings.setups, rings.setup_failures,
	       rings.completions);
	if (!daemon_alive()) {
		printf("sim-fuzz: daemon deaths: 1\n");
		ret = 1;
	} else {
		printf("sim-fuzz: daemon deaths: 0\n");
	}
	if (cmds.stalls) {
		printf("sim-fuzz: the daemon stopped answering\n");
		ret = 1;
	}
	printf("sim-fuzz: writes outside a registered region: %" PRIu64 "\n",
	       rings.outside);
	if (rings.outside)
		ret = 1;
	return ret;
}

/* ------------------------------------------------------------------ */
/* The victim: an honest client, every byte checked                    */
/* ------------------------------------------------------------------ */

#define MSG_SIZE 3000	/* three packets at the 1024 MTU */
#define DEPTH 16

static uint8_t pattern(uint64_t seq, size_t i)
{
	return (uint8_t)(seq * 131 + i * 7 + (i >> 8));
}

/* The victim's pair of QPs on dev's PD and CQ, its buffers, its counts. */
struct victim {
	struct ibv_device **list;
	uint8_t *sbuf, *rbuf;
	struct ibv_mr *smr, *rmr;
	struct ibv_qp *qp[2];
	uint64_t sent, received, lost, corrupted, reads;
};

/* The device, two RC QPs connected to each other: false when not. */
static bool victim_up(struct victim *v)
{
	struct ibv_port_attr port;

	v->list = ibv_get_device_list(NULL);
	if (!v->list || !v->list[0] || !(dev.ctx = ibv_open_device(v->list[0]))) {
		fprintf(stderr, "sim-fuzz victim: no device\n");
		return false;
	}
	if (ibv_query_port(dev.ctx, 1, &port))
		return false;
	dev.lid = port.lid;
	dev.pd = ibv_alloc_pd(dev.ctx);
	dev.cq = ibv_create_cq(dev.ctx, 4 * DEPTH, NULL, NULL, 0);
	v->sbuf = calloc(DEPTH, MSG_SIZE);
	v->rbuf = calloc(DEPTH, MSG_SIZE);
	if (!dev.pd || !dev.cq || !v->sbuf || !v->rbuf)
		return false;
	v->smr = ibv_reg_mr(dev.pd, v->sbuf, DEPTH * MSG_SIZE,
			    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	v->rmr = ibv_reg_mr(dev.pd, v->rbuf, DEPTH * MSG_SIZE,
			    IBV_ACCESS_LOCAL_WRITE);
	if (!v->smr || !v->rmr)
		return false;
	for (int i = 0; i < 2; i++) {
		struct ibv_qp_init_attr qa = {
			.send_cq = dev.cq, .recv_cq = dev.cq, .qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = DEPTH, .max_recv_wr = DEPTH,
				 .max_send_sge = 1, .max_recv_sge = 1 },
		};

		v->qp[i] = ibv_create_qp(dev.pd, &qa);
		if (!v->qp[i])
			return false;
	}
	for (int i = 0; i < 2; i++)
		if (!to_rts(v->qp[i], v->qp[i ^ 1]->qp_num)) {
			fprintf(stderr, "sim-fuzz victim: QP setup failed\n");
			return false;
		}
	return true;
}

/* Message @seq's SEND and receive completions, within 5 s: false if not. */
static bool victim_completions(struct victim *v, uint64_t seq)
{
	uint64_t deadline = now_ms() + 5000;
	struct ibv_wc wc[DEPTH];
	int want = 2, got = 0;

	while (got < want && now_ms() < deadline) {
		int n = ibv_poll_cq(dev.cq, DEPTH, wc);

		for (int i = 0; i < n; i++) {
			if (wc[i].status != IBV_WC_SUCCESS ||
			    wc[i].wr_id != seq) {
				fprintf(stderr, "sim-fuzz victim: message %" PRIu64 ": completion %s, wr_id %" PRIu64 "\n",
					seq, ibv_wc_status_str(wc[i].status),
					(uint64_t)wc[i].wr_id);
				v->corrupted++;
			}
			if (wc[i].opcode == IBV_WC_RECV) {
				if (wc[i].byte_len != MSG_SIZE)
					v->corrupted++;
			}
		}
		got += n > 0 ? n : 0;
	}
	if (got < want)
		fprintf(stderr, "sim-fuzz victim: message %" PRIu64 ": %d completions of %d in 5 s\n",
			seq, got, want);
	return got >= want;
}

/*
 * Message @seq from QP 0 to QP 1, checked byte by byte: false when it
 * was lost (the victim stops).
 */
static bool victim_send(struct victim *v, uint64_t seq)
{
	size_t slot = seq % DEPTH;
	uint8_t *s = v->sbuf + slot * MSG_SIZE, *r = v->rbuf + slot * MSG_SIZE;
	struct ibv_sge rsge = { (uintptr_t)r, MSG_SIZE, v->rmr->lkey };
	struct ibv_recv_wr rwr = { .wr_id = seq, .sg_list = &rsge, .num_sge = 1 }, *bad_r;
	struct ibv_sge ssge = { (uintptr_t)s, MSG_SIZE, v->smr->lkey };
	struct ibv_send_wr swr = {
		.wr_id = seq, .sg_list = &ssge, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
	}, *bad_s;

	for (size_t i = 0; i < MSG_SIZE; i++)
		s[i] = pattern(seq, i);
	memset(r, 0, MSG_SIZE);
	if (ibv_post_recv(v->qp[1], &rwr, &bad_r) ||
	    ibv_post_send(v->qp[0], &swr, &bad_s)) {
		fprintf(stderr, "sim-fuzz victim: post failed at message %" PRIu64 "\n", seq);
		v->lost++;
		return false;
	}
	v->sent++;
	if (!victim_completions(v, seq)) {
		v->lost++;
		return false;
	}
	if (memcmp(s, r, MSG_SIZE)) {
		size_t i = 0;

		while (s[i] == r[i])
			i++;
		fprintf(stderr, "sim-fuzz victim: message %" PRIu64 ": byte %zu is 0x%02x, not 0x%02x\n",
			seq, i, r[i], s[i]);
		v->corrupted++;
	}
	v->received++;
	return true;
}

/*
 * QP 1 READs message @seq back from the sender's buffer, checked: false
 * when it cannot post the READ.
 */
static bool victim_read_back(struct victim *v, uint64_t seq)
{
	size_t slot = seq % DEPTH;
	uint8_t *s = v->sbuf + slot * MSG_SIZE, *r = v->rbuf + slot * MSG_SIZE;
	struct ibv_sge rsge = { (uintptr_t)r, MSG_SIZE, v->rmr->lkey };
	struct ibv_send_wr rd = {
		.wr_id = seq, .sg_list = &rsge, .num_sge = 1,
		.opcode = IBV_WR_RDMA_READ, .send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { (uintptr_t)s, v->smr->rkey },
	}, *bad;
	uint64_t deadline = now_ms() + 5000;
	struct ibv_wc wc;
	int n = 0;

	memset(r, 0, MSG_SIZE);
	if (ibv_post_send(v->qp[1], &rd, &bad))
		return false;
	while (!n && now_ms() < deadline)
		n = ibv_poll_cq(dev.cq, 1, &wc);
	if (n != 1 || wc.status != IBV_WC_SUCCESS || memcmp(s, r, MSG_SIZE)) {
		fprintf(stderr, "sim-fuzz victim: READ of message %" PRIu64 " failed or differs\n",
			seq);
		v->corrupted++;
	}
	v->reads++;
	return true;
}

static void victim_down(struct victim *v)
{
	ibv_destroy_qp(v->qp[0]);
	ibv_destroy_qp(v->qp[1]);
	ibv_dereg_mr(v->smr);
	ibv_dereg_mr(v->rmr);
	ibv_destroy_cq(dev.cq);
	ibv_dealloc_pd(dev.pd);
	ibv_close_device(dev.ctx);
	ibv_free_device_list(v->list);
	free(v->sbuf);
	free(v->rbuf);
}

static int victim(int seconds)
{
	uint64_t end = now_ms() + seconds * 1000ULL;
	struct victim v = {};

	seed_from_env("sim-fuzz victim");
	simd = sim_daemon_pid();
	if (!victim_up(&v))
		return 1;
	/* QP 0 sends to QP 1 and READs back what it sent, one at a time. */
	while (now_ms() < end) {
		uint64_t seq = v.sent;

		if (!victim_send(&v, seq))
			break;
		/* Every eighth: READ it back from the sender's buffer. */
		if (seq % 8 == 0 && !victim_read_back(&v, seq))
			return 1;
	}
	printf("sim-fuzz victim: %" PRIu64 " messages sent, %" PRIu64 " received, %" PRIu64 " READs; lost %" PRIu64 ", corrupted %" PRIu64 "\n",
	       v.sent, v.received, v.reads, v.lost, v.corrupted);
	victim_down(&v);
	return v.lost || v.corrupted || !v.received ? 1 : 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!getenv(MLX4SIM_ENV_DIR)) {
		fprintf(stderr, "sim-fuzz: %s is not set: run it on a simulator\n",
			MLX4SIM_ENV_DIR);
		return 1;
	}
	if (argc == 3 && !strcmp(argv[1], "fuzz"))
		return fuzz(atoi(argv[2]));
	if (argc == 3 && !strcmp(argv[1], "victim"))
		return victim(atoi(argv[2]));
	fprintf(stderr, "usage: sim-fuzz fuzz|victim SECONDS\n");
	return 2;
}
