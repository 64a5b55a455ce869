/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * wire-peer server | wire-peer client SERVER_IP: RC between two hosts, as
 * the wire test runs it across an uplink (wire.sh).  The two exchange
 * their QPs, keys and GIDs (index 3, RoCE v2 over IPv4) over TCP, then
 * the client checks, on four connections:
 *   0: a READ of many packets, every byte; a WRITE read back, every byte;
 *      FETCH_ADDs and a COMPARE_SWAP, each value they return;
 *   1: a SEND the server has no receive for: RNR NAKs, then
 *      IBV_WC_RNR_RETRY_EXC_ERR after rnr_retry;
 *   2: a WRITE with a wrong rkey: IBV_WC_REM_ACCESS_ERR;
 *   3: a WRITE to a QP the server moved to ERROR, which answers nothing:
 *      IBV_WC_RETRY_EXC_ERR after retry_cnt retransmissions.
 * One line a check; exit status 0 when all held.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#define NQP		4
#define BUF_SIZE	(256 * 1024)
#define READ_LEN	200000		/* 196 packets of 1 KiB */
#define WRITE_LEN	100000
#define COUNTER		(BUF_SIZE - 64)	/* where the atomics act */
#define TCP_PORT	18740

struct peer {
	uint32_t qpn[NQP], psn[NQP];
	uint32_t rkey;
	uint64_t addr;
	uint8_t gid[16];
};

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static struct ibv_mr *mr;
static struct ibv_qp *qp[NQP];
static uint8_t *buf;
static int failures;

static void say(int good, const char *what)
{
	printf("%s: %s\n", good ? "ok" : "FAILED", what);
	failures += !good;
}

static int tcp_link(const char *server_ip)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons(TCP_PORT) };
	int one = 1, fd = socket(AF_INET, SOCK_STREAM, 0), c;

	if (!server_ip) {
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, (void *)&a, sizeof(a)) || listen(fd, 1))
			return -1;
		c = accept(fd, NULL, NULL);
		close(fd);
		return c;
	}
	inet_pton(AF_INET, server_ip, &a.sin_addr);
	if (connect(fd, (void *)&a, sizeof(a))) {
		perror("couldn't connect");
		return -1;
	}
	return fd;
}

static int qp_up(struct ibv_qp *q, uint32_t rqpn, uint32_t rpsn,
		 uint32_t psn, const uint8_t *gid, uint8_t rnr_retry,
		 uint8_t timeout, uint8_t retry_cnt)
{
	struct ibv_qp_attr init = {
		.qp_state = IBV_QPS_INIT, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_ATOMIC,
	};
	struct ibv_qp_attr rtr = {
		.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024,
		.dest_qp_num = rqpn, .rq_psn = rpsn, .max_dest_rd_atomic = 4,
		.min_rnr_timer = 1,
		.ah_attr = { .is_global = 1, .port_num = 1,
			     .grh = { .sgid_index = 3, .hop_limit = 64 } },
	};
	struct ibv_qp_attr rts = {
		.qp_state = IBV_QPS_RTS, .sq_psn = psn, .timeout = timeout,
		.retry_cnt = retry_cnt, .rnr_retry = rnr_retry,
		.max_rd_atomic = 4,
	};

	memcpy(rtr.ah_attr.grh.dgid.raw, gid, 16);
	if (ibv_modify_qp(q, &init, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) ||
	    ibv_modify_qp(q, &rtr, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		return -1;
	return ibv_modify_qp(q, &rts, IBV_QP_STATE | IBV_QP_SQ_PSN |
			     IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			     IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
}

/* Post one WR on @q and wait for its completion: its status. */
static int run(struct ibv_qp *q, enum ibv_wr_opcode op, uint64_t local,
	       uint32_t len, uint64_t raddr, uint32_t rkey, uint64_t a1,
	       uint64_t a2)
{
	struct ibv_sge sge = { (uintptr_t)buf + local, len, mr->lkey };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1, .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_wc wc;
	time_t until = time(NULL) + 60;
	int n;

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD || op == IBV_WR_ATOMIC_CMP_AND_SWP) {
		wr.wr.atomic.remote_addr = raddr;
		wr.wr.atomic.rkey = rkey;
		wr.wr.atomic.compare_add = a1;
		wr.wr.atomic.swap = a2;
	}
	if (ibv_post_send(q, &wr, &bad))
		return -1;
	while ((n = ibv_poll_cq(cq, 1, &wc)) == 0 && time(NULL) < until)
		;
	return n == 1 ? (int)wc.status : -1;
}

static uint8_t pattern(size_t i, int seed)
{
	return (uint8_t)(i * 7 + seed + (i >> 10));
}

static void client_checks(const struct peer *s)
{
	uint64_t v;
	size_t i;
	int st, bad = 0;

	memset(buf, 0, BUF_SIZE);
	st = run(qp[0], IBV_WR_RDMA_READ, 0, READ_LEN, s->addr, s->rkey, 0, 0);
	for (i = 0; i < READ_LEN && !st; i++)
		bad += buf[i] != pattern(i, 1);
	say(!st && !bad, "a READ of 196 packets: every byte");
	for (i = 0; i < WRITE_LEN; i++)
		buf[i] = pattern(i, 2);
	st = run(qp[0], IBV_WR_RDMA_WRITE, 0, WRITE_LEN, s->addr, s->rkey, 0, 0);
	memset(buf, 0, WRITE_LEN);
	if (!st)
		st = run(qp[0], IBV_WR_RDMA_READ, 0, WRITE_LEN, s->addr,
			 s->rkey, 0, 0);
	for (i = 0, bad = 0; i < WRITE_LEN && !st; i++)
		bad += buf[i] != pattern(i, 2);
	say(!st && !bad, "a WRITE of 98 packets, read back: every byte");
	for (i = 0, bad = 0; i < 100; i++) {
		st = run(qp[0], IBV_WR_ATOMIC_FETCH_AND_ADD, BUF_SIZE - 8, 8,
			 s->addr + COUNTER, s->rkey, 3, 0);
		memcpy(&v, buf + BUF_SIZE - 8, 8);
		bad += st || be64toh(v) != 1000 + 3 * i;
	}
	say(!bad, "100 FETCH_ADDs: each returns the value before it");
	st = run(qp[0], IBV_WR_ATOMIC_CMP_AND_SWP, BUF_SIZE - 8, 8,
		 s->addr + COUNTER, s->rkey, 1300, 42);
	memcpy(&v, buf + BUF_SIZE - 8, 8);
	if (!st && be64toh(v) == 1300)
		st = run(qp[0], IBV_WR_RDMA_READ, BUF_SIZE - 8, 8,
			 s->addr + COUNTER, s->rkey, 0, 0);
	memcpy(&v, buf + BUF_SIZE - 8, 8);
	say(!st && be64toh(v) == 42, "a COMPARE_SWAP swaps, and a READ sees it");
	st = run(qp[1], IBV_WR_SEND, 0, 64, 0, 0, 0, 0);
	say(st == IBV_WC_RNR_RETRY_EXC_ERR,
	    "a SEND with no receive posted: IBV_WC_RNR_RETRY_EXC_ERR");
	st = run(qp[2], IBV_WR_RDMA_WRITE, 0, 64, s->addr, s->rkey + 1, 0, 0);
	say(st == IBV_WC_REM_ACCESS_ERR,
	    "a WRITE with a wrong rkey: IBV_WC_REM_ACCESS_ERR");
	st = run(qp[3], IBV_WR_RDMA_WRITE, 0, 64, s->addr, s->rkey, 0, 0);
	say(st == IBV_WC_RETRY_EXC_ERR,
	    "a WRITE nobody answers: IBV_WC_RETRY_EXC_ERR");
}

static int setup(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};

	if (!list || !list[0] || !(ctx = ibv_open_device(list[0])))
		return -1;
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	buf = aligned_alloc(4096, BUF_SIZE);
	if (!pd || !cq || !buf)
		return -1;
	mr = ibv_reg_mr(pd, buf, BUF_SIZE, IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE |
			IBV_ACCESS_REMOTE_ATOMIC);
	init.send_cq = init.recv_cq = cq;
	for (int i = 0; i < NQP; i++)
		if (!(qp[i] = ibv_create_qp(pd, &init)))
			return -1;
	return mr ? 0 : -1;
}

int main(int argc, char **argv)
{
	const char *server_ip = argc > 2 ? argv[2] : NULL;
	struct peer me = {}, them;
	union ibv_gid gid;
	uint64_t start = htobe64(1000);	/* the device's atomics: big-endian */
	char done;
	int fd;

	if (argc < 2 || setup() || ibv_query_gid(ctx, 1, 3, &gid)) {
		fprintf(stderr, "usage: wire-peer server | client SERVER (a RoCE device)\n");
		return 2;
	}
	for (int i = 0; i < NQP; i++) {
		me.qpn[i] = qp[i]->qp_num;
		me.psn[i] = (lrand48() ^ getpid() ^ i) & 0xffffff;
	}
	me.rkey = mr->rkey;
	me.addr = (uintptr_t)buf;
	memcpy(me.gid, gid.raw, 16);
	for (size_t i = 0; i < BUF_SIZE; i++)
		buf[i] = pattern(i, 1);
	memcpy(buf + COUNTER, &start, 8);
	fd = tcp_link(server_ip);
	if (fd < 0 || write(fd, &me, sizeof(me)) != sizeof(me) ||
	    read(fd, &them, sizeof(them)) != sizeof(them))
		return 2;
	for (int i = 0; i < NQP; i++)
		if (qp_up(qp[i], them.qpn[i], them.psn[i], me.psn[i], them.gid,
			  i == 1 ? 1 : 7, i == 3 ? 10 : 14, i == 3 ? 2 : 7)) {
			perror("modify_qp");
			return 2;
		}
	if (!server_ip) {		/* the server's QP 3 answers nothing */
		struct ibv_qp_attr err = { .qp_state = IBV_QPS_ERR };

		ibv_modify_qp(qp[3], &err, IBV_QP_STATE);
	}
	/* Ready: the client starts, the server waits for its word. */
	if (write(fd, "r", 1) != 1 || read(fd, &done, 1) != 1)
		return 2;
	if (server_ip)
		client_checks(&them);
	if (write(fd, "d", 1) != 1 || read(fd, &done, 1) != 1)
		return 2;
	return failures ? 1 : 0;
}
