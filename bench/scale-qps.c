/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Holds N connected RC QPs open, for bench/scale.sh to read what they
 * cost the daemon (its resident memory before and after).
 *
 *   scale-qps N
 *
 * Opens the first device, makes one CQ and N RC QPs (perftest's default
 * queue sizes: 128 sends, 512 receives), each connected to itself on
 * port 1 and moved to RTS, so that the daemon holds the whole state of
 * an active QP.  It prints "open" once the device, PD and CQ are made
 * and waits for a line on its standard input before making the QPs; then
 * prints "ready N SECONDS" (the seconds the N QPs took to make) and waits
 * until its standard input ends; it then destroys them and exits 0.  Exits 1 with a message on any failure.
 */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <infiniband/verbs.h>

enum {
	SEND_DEPTH = 128,
	RECV_DEPTH = 512,
	MAX_QPS = 65536,
};

static void die(const char *what)
{
	fprintf(stderr, "scale-qps: %s failed\n", what);
	exit(1);
}

static int to_init(struct ibv_qp *qp)
{
	struct ibv_qp_attr attr = {
		.qp_state = IBV_QPS_INIT,
		.port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE,
	};

	return ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			     IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
}

#define RTR_MASK (IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | \
		  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | \
		  IBV_QP_MIN_RNR_TIMER)
#define RTS_MASK (IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | \
		  IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC)

/* INIT, RTR (to itself, through the port's LID) and RTS. */
static void connect_to_self(struct ibv_qp *qp, uint16_t lid)
{
	struct ibv_qp_attr rtr = {
		.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024,
		.dest_qp_num = qp->qp_num, .max_dest_rd_atomic = 1,
		.min_rnr_timer = 12, .ah_attr = { .dlid = lid, .port_num = 1 },
	}, rts = {
		.qp_state = IBV_QPS_RTS, .timeout = 14, .retry_cnt = 7,
		.rnr_retry = 7, .max_rd_atomic = 1,
	};

	if (to_init(qp) || ibv_modify_qp(qp, &rtr, RTR_MASK) ||
	    ibv_modify_qp(qp, &rts, RTS_MASK))
		die("moving a QP to RTS");
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	struct ibv_qp_init_attr init = {
		.cap = { .max_send_wr = SEND_DEPTH, .max_recv_wr = RECV_DEPTH,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	struct ibv_device **list;
	struct ibv_context *ctx;
	struct ibv_port_attr port;
	struct ibv_qp **qps;
	struct ibv_pd *pd;
	double start;
	char line[16];
	long i, n;

	n = argc == 2 ? strtol(argv[1], NULL, 0) : 0;
	if (n < 1 || n > MAX_QPS) {
		fprintf(stderr, "usage: scale-qps N (1 to %d)\n", MAX_QPS);
		return 2;
	}
	list = ibv_get_device_list(NULL);
	if (!list || !list[0])
		die("finding a device");
	ctx = ibv_open_device(list[0]);
	if (!ctx || ibv_query_port(ctx, 1, &port))
		die("opening the device");
	pd = ibv_alloc_pd(ctx);
	init.send_cq = ibv_create_cq(ctx, SEND_DEPTH, NULL, NULL, 0);
	init.recv_cq = init.send_cq;
	qps = calloc(n, sizeof(*qps));
	if (!pd || !init.send_cq || !qps)
		die("allocating a PD, a CQ");
	printf("open\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 0;
	start = now();
	for (i = 0; i < n; i++) {
		qps[i] = ibv_create_qp(pd, &init);
		if (!qps[i])
			die("ibv_create_qp");
		connect_to_self(qps[i], port.lid);
	}
	printf("ready %ld %.2f\n", n, now() - start);
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin))
		;
	for (i = 0; i < n; i++)
		if (ibv_destroy_qp(qps[i]))
			die("ibv_destroy_qp");
	free(qps);
	ibv_destroy_cq(init.send_cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	return 0;
}
