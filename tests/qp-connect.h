/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A test's QP from RESET to RTS: the attributes and the mask each
 * transport (RC, UC, UD) takes at INIT, RTR and RTS, written once.  What the tests
 * vary (the peer, PSNs, timers, retries, atomics) is a struct qp_path.
 */
#ifndef TESTS_QP_CONNECT_H
#define TESTS_QP_CONNECT_H

#include <string.h>
#include <infiniband/verbs.h>

struct qp_path {
	uint32_t remote_qpn;		/* RC and UC */
	uint16_t dlid;			/* RC and UC: the peer's port */
	uint32_t rq_psn, sq_psn;
	uint32_t qkey;			/* UD */
	unsigned int access;		/* qp_access_flags (RC and UC) */
	uint8_t rd_atomic;		/* RC: READs and atomics in flight */
	uint8_t min_rnr_timer;		/* RC */
	uint8_t timeout, retry_cnt, rnr_retry;	/* RC */
};

static inline int qp_to_init(struct ibv_qp *qp, const struct qp_path *p)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .port_num = 1,
		.qp_access_flags = p->access, .qkey = p->qkey,
	};

	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			     IBV_QP_PORT | (qp->qp_type == IBV_QPT_UD ?
					    IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS));
}

static inline int qp_to_rtr(struct ibv_qp *qp, const struct qp_path *p)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024,
		.dest_qp_num = p->remote_qpn, .rq_psn = p->rq_psn,
		.max_dest_rd_atomic = p->rd_atomic,
		.min_rnr_timer = p->min_rnr_timer,
		.ah_attr = { .dlid = p->dlid, .port_num = 1 },
	};
	int mask = IBV_QP_STATE;

	if (qp->qp_type != IBV_QPT_UD)
		mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			IBV_QP_RQ_PSN;
	if (qp->qp_type == IBV_QPT_RC)
		mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	return ibv_modify_qp(qp, &a, mask);
}

static inline int qp_to_rts(struct ibv_qp *qp, const struct qp_path *p)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTS, .sq_psn = p->sq_psn,
		.timeout = p->timeout, .retry_cnt = p->retry_cnt,
		.rnr_retry = p->rnr_retry, .max_rd_atomic = p->rd_atomic,
	};
	int mask = IBV_QP_STATE | IBV_QP_SQ_PSN;

	if (qp->qp_type == IBV_QPT_RC)
		mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			IBV_QP_MAX_QP_RD_ATOMIC;
	return ibv_modify_qp(qp, &a, mask);
}

/*
 * All three; 0, or the errno of the step that failed, whose state's
 * name goes to *@step.
 */
static inline int qp_connect(struct ibv_qp *qp, const struct qp_path *p,
			     const char **step)
{
	int ret;

	*step = "INIT";
	ret = qp_to_init(qp, p);
	if (!ret) {
		*step = "RTR";
		ret = qp_to_rtr(qp, p);
	}
	if (!ret) {
		*step = "RTS";
		ret = qp_to_rts(qp, p);
	}
	return ret;
}

#endif
