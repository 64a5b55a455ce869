/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * For the programs of tests/sim: the simulator's daemon (its pid, from
 * the run directory), and a device opened with a PD and one CQ on which
 * RC QPs connect to each other through port 1, so that one QP's RDMA
 * WRITEs are the device writing the program's memory.
 */
#ifndef TESTS_SIM_LOOPBACK_H
#define TESTS_SIM_LOOPBACK_H

#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>
#include <infiniband/verbs.h>

#include "../../sim/host/protocol.h"
#include "../buffer.h"
#include "../device.h"
#include "../qp-connect.h"
#include "../tap.h"

/* The daemon's pid ($MLX4SIM_DIR/pid), or 0. */
static inline pid_t sim_daemon_pid(void)
{
	const char *dir = getenv(MLX4SIM_ENV_DIR);
	char path[4096];
	FILE *f;
	int pid = 0;

	if (!dir)
		return 0;
	snprintf(path, sizeof(path), "%s/pid", dir);
	f = fopen(path, "re");
	if (f) {
		if (fscanf(f, "%d", &pid) != 1)
			pid = 0;
		fclose(f);
	}
	return pid;
}

struct loopback {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;		/* every QP's, both ways */
	uint16_t lid;			/* port 1's */
};

/* The first device, a PD, and a CQ of @cqe entries; bails if not. */
static inline void loopback_open(struct loopback *lb, const char *prog,
				 int cqe)
{
	struct ibv_port_attr port;

	lb->ctx = open_first_device(prog);
	lb->pd = ibv_alloc_pd(lb->ctx);
	lb->cq = lb->pd ? ibv_create_cq(lb->ctx, cqe, NULL, NULL, 0) : NULL;
	if (!lb->cq || ibv_query_port(lb->ctx, 1, &port))
		bail("set-up");
	lb->lid = port.lid;
}

static inline void loopback_close(struct loopback *lb)
{
	ibv_destroy_cq(lb->cq);
	ibv_dealloc_pd(lb->pd);
	ibv_close_device(lb->ctx);
}

/* An RC QP of @send_wr sends, taking remote WRITEs and READs. */
static inline struct ibv_qp *loopback_qp(struct loopback *lb,
					 uint32_t send_wr)
{
	struct ibv_qp_init_attr init = {
		.send_cq = lb->cq, .recv_cq = lb->cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = send_wr, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp *qp = ibv_create_qp(lb->pd, &init);

	if (!qp)
		bail("ibv_create_qp");
	return qp;
}

/* @a and @b connected to each other, through RTS. */
static inline void loopback_connect(struct loopback *lb, struct ibv_qp *a,
				    struct ibv_qp *b)
{
	struct qp_path path = {
		.dlid = lb->lid, .rd_atomic = 1, .timeout = 14,
		.retry_cnt = 7, .rnr_retry = 7,
		.access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			  IBV_ACCESS_REMOTE_READ,
	};
	const char *step;

	path.remote_qpn = b->qp_num;
	if (qp_connect(a, &path, &step))
		bail(step);
	path.remote_qpn = a->qp_num;
	if (qp_connect(b, &path, &step))
		bail(step);
}

/*
 * A QP of RC, and the peer its WRITEs go to, with its memory: @len bytes
 * each side, zeroed, registered for local and remote writes.
 */
#define SENDER_ACCESS	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE)

struct sender {
	struct ibv_qp *qp, *peer;
	uint8_t *src, *dst;
	struct ibv_mr *src_mr, *dst_mr;
};

static inline void sender_up(struct loopback *lb, struct sender *s,
			     uint32_t depth, size_t len)
{
	s->qp = loopback_qp(lb, depth);
	s->peer = loopback_qp(lb, 1);
	loopback_connect(lb, s->qp, s->peer);
	s->src = registered_buffer(lb->pd, len, SENDER_ACCESS, &s->src_mr);
	s->dst = registered_buffer(lb->pd, len, SENDER_ACCESS, &s->dst_mr);
}

static inline void sender_down(struct sender *s)
{
	ibv_destroy_qp(s->qp);
	ibv_destroy_qp(s->peer);
	ibv_dereg_mr(s->src_mr);
	ibv_dereg_mr(s->dst_mr);
	free(s->src);
	free(s->dst);
}

#endif
