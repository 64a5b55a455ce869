/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Receive-side scaling: an RSS QP spreads the frames its flow rules give
 * it over the WQs of its indirection table, by a Toeplitz hash of the
 * fields it names.
 *
 * The adapter hashes (adapter/rss.c), per frame, what the QP's fields and the frame have
 * in common: the addresses of an IPv4 (or IPv6) packet, and with them its
 * TCP or UDP ports when those are named too.  A frame with nothing to
 * hash gets hash 0.  The table's WQs have consecutive numbers (mlx4_ib's
 * rule), so the hash's low bits, as many as the table's size takes, name
 * the WQ.  To the device a WQ is a QP with a one-entry send queue: each
 * WQ carries that QP (wq->dev), which takes receives as any QP does.
 */
#include <errno.h>
#include <string.h>

#include "kernel.h"
#include "../adapter/queue.h"

/* A pair of fields goes together or not at all. */
static bool half_pair(uint64_t fields, uint64_t pair)
{
	return (fields & pair) && (fields & pair) != pair;
}

/*
 * mlx4_ib's checks of an RSS QP's hash: Toeplitz only, known fields only
 * (no inner headers: this device offloads no tunnels), addresses and
 * ports in pairs, ports only with addresses.
 */
int rss_check_hash(const struct mlx4_ib_create_qp_rss *drv)
{
	uint64_t f = drv->rx_hash_fields_mask;

	if (drv->comp_mask || drv->reserved1 ||
	    drv->rx_hash_function != MLX4_IB_RX_HASH_FUNC_TOEPLITZ)
		return -EOPNOTSUPP;
	if (f & ~(uint64_t)(FIELDS_IPV4 | FIELDS_IPV6 | FIELDS_TCP | FIELDS_UDP))
		return -EOPNOTSUPP;
	if (half_pair(f, FIELDS_IPV4) || half_pair(f, FIELDS_IPV6) ||
	    half_pair(f, FIELDS_TCP) || half_pair(f, FIELDS_UDP))
		return -EOPNOTSUPP;
	if ((f & (FIELDS_TCP | FIELDS_UDP)) && !(f & (FIELDS_IPV4 | FIELDS_IPV6)))
		return -EOPNOTSUPP;
	return 0;
}

/* The QP the device sees for a new WQ, in its buffer and with its CQ. */
void rss_wq_init(struct sim_wq_obj *wq, struct sim_ctx *ctx)
{
	struct sim_qp *dev = &wq->dev;

	dev->hca = ctx->hca;
	dev->ctx = ctx;
	dev->qpn = wq->wqn;
	dev->type = IBV_QPT_RAW_PACKET;
	dev->state = IBV_QPS_RESET;
	dev->pd = wq->pd;
	dev->recv_cq = wq->cq;
	dev->buf = wq->buf;
	dev->db = wq->db;
	dev->rq = wq->rq;		/* its send queue the device never reads */
	dev->port = 1;
	list_init(&dev->ctx_link);
	list_init(&dev->wait_link);
	list_init(&dev->fail_link);
	list_init(&dev->error_link);
}

/* mlx4_ib's ib_wq2qp_state: the device state each WQ state asks for. */
static enum ibv_qp_state wq_to_qp_state(enum ibv_wq_state state)
{
	switch (state) {
	case IBV_WQS_RESET:	return IBV_QPS_RESET;
	case IBV_WQS_RDY:	return IBV_QPS_RTR;
	default:		return IBV_QPS_ERR;
	}
}

/* Back to RESET: the ring starts over, nothing read ahead is kept. */
static void wq_dev_reset(struct sim_qp *dev)
{
	list_del(&dev->error_link);
	qp_set_state(dev, IBV_QPS_RESET);
	dev->rq.head = 0;
	dev->rq_posted = 0;
	rq_cache_drop(dev);
}

/*
 * The device takes the WQ to @state (_mlx4_ib_modify_wq): RDY receives,
 * ERR flushes what is posted as a QP in error does, RESET starts the
 * ring over.  mlx4_ib brings a WQ to RDY by RST2INIT and INIT2RTR, which
 * the firmware refuses for a QP it holds in ERR (the WQ went there under
 * an RSS QP and back to RESET under none): EINVAL.
 */
int rss_wq_apply(struct sim_wq_obj *wq, enum ibv_wq_state state)
{
	struct sim_qp *dev = &wq->dev;
	enum ibv_qp_state next = wq_to_qp_state(state);

	if (next == dev->state)
		return 0;
	switch (next) {
	case IBV_QPS_RTR:
		if (dev->state != IBV_QPS_RESET)
			return -EINVAL;
		qp_set_state(dev, IBV_QPS_RTR);
		break;
	case IBV_QPS_ERR:
		qp_to_error(dev);
		break;
	default:
		wq_dev_reset(dev);
	}
	return 0;
}

/* One RSS QP less over @wq; the last takes a WQ it brought up down. */
static void wq_put_rss(struct sim_wq_obj *wq)
{
	if (wq->rss_users == 1 && wq->state == IBV_WQS_RDY)
		rss_wq_apply(wq, IBV_WQS_RESET);
	wq->rss_users--;
}

/*
 * An RSS QP goes to INIT on @port (bringup_rss_rwqs): each WQ of its
 * table is tied to that port, and one that another RSS QP already ties
 * to another port is EINVAL.  The first RSS QP over a WQ hands it to the
 * device in the state the verbs gave it, if that is RDY.  On failure the
 * WQs taken so far are given back.
 */
int rss_bringup(struct sim_ind_tbl *tbl, uint8_t port)
{
	uint32_t i;
	int err = 0;

	for (i = 0; i < tbl->size; i++) {
		struct sim_wq_obj *wq = tbl->wqs[i];

		if (wq->rss_users && wq->dev.port != port) {
			err = -EINVAL;
			break;
		}
		wq->dev.port = port;
		if (!wq->rss_users && wq->state == IBV_WQS_RDY)
			err = rss_wq_apply(wq, IBV_WQS_RDY);
		if (err)
			break;
		wq->rss_users++;
	}
	while (err && i--)
		wq_put_rss(tbl->wqs[i]);
	return err;
}

/*
 * An RSS QP past RESET is destroyed (destroy_qp_rss): its WQs count one
 * user less, and stay in the device as they are.
 */
void rss_release(struct sim_ind_tbl *tbl)
{
	for (uint32_t i = 0; i < tbl->size; i++)
		tbl->wqs[i]->rss_users--;
}
