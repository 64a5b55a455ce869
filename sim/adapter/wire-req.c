/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The requester across the wire (--uplink): a connected QP whose peer is
 * beyond the switch sends its WQEs as RoCE v2 packets, several WQEs
 * outstanding at once, and completes them as the responder's ACKs, read
 * responses and atomic acknowledgements come back, in order.  What the
 * IB specification has a requester do, it does: a sequence NAK sends
 * again from the PSN the responder expects, an RNR NAK after the timer
 * it names (rnr_retry times, 7 for ever), silence after the local ACK
 * timeout (4.096 us << timeout) from the oldest unacknowledged PSN,
 * retry_cnt times, then IBV_WC_RETRY_EXC_ERR; a NAK for an invalid
 * request, a remote access or a remote operation error completes the
 * WQE in error and the QP goes to ERROR.  READs and atomics outstanding
 * are bounded by max_rd_atomic; a fenced WQE waits for them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "wire.h"

static struct list_node wire_qps = LIST_INIT(wire_qps);

struct wire_qp *wire_of(struct sim_qp *qp)
{
	if (!qp->wire) {
		qp->wire = calloc(1, sizeof(*qp->wire));
		if (!qp->wire)
			return NULL;
		qp->wire->qp = qp;
		list_add_tail(&wire_qps, &qp->wire->link);
	}
	return qp->wire;
}

void wire_free(struct sim_qp *qp)
{
	if (!qp->wire)
		return;
	list_del(&qp->wire->link);
	free(qp->wire->buf);
	free(qp->wire);
	qp->wire = NULL;
}

bool wire_remote(const struct sim_qp *qp, const uint8_t dmac[6])
{
	const struct sim_port *port = hca_port(qp->hca, qp->port);

	return uplink_active() && port &&
	       port->link_layer == IBV_LINK_LAYER_ETHERNET &&
	       !(dmac[0] & 1) && !port_by_mac(dmac);
}

void wire_emit(struct sim_qp *qp, const struct roce_path *a,
	       const struct roce_packet *pkt)
{
	static uint8_t frame[ROCE_MAX_FRAME];
	size_t len = roce_build(a, pkt, frame);

	if (len)
		uplink_send(qp, qp->port, frame, len);
}

static struct wire_wqe *oldest(struct wire_qp *wq)
{
	return wq->count ? &wq->wqe[wq->first] : NULL;
}

static uint64_t ack_timeout_ns(const struct sim_qp *qp)
{
	return qp->timeout ? 4096ULL << qp->timeout : 0;
}

static void arm_timer(struct wire_qp *wq)
{
	uint64_t t = ack_timeout_ns(wq->qp);

	wq->ack_due = wq->count && t ? now_ns() + t : 0;
}

/* Packet @i's payload of @e into @buf: its length, or -1. */
static int payload(const struct wire_wqe *e, uint32_t off, uint32_t len,
		   uint8_t *buf)
{
	struct dma_seg slice[CX3_MAX_SGE];
	int n;

	if (!len)
		return 0;
	if (e->has_inline) {
		memcpy(buf, e->inline_data + off, len);
		return len;
	}
	n = dma_slice(e->seg, e->nseg, off, len, slice);
	return n < 0 || dma_readv(e->pid, slice, n, buf) ? -1 : (int)len;
}

/* A READ request or an atomic, from response packet @from of @e. */
static void send_read_atomic(struct sim_qp *qp, const struct wire_wqe *e,
			     const struct roce_path *a, uint32_t from)
{
	uint32_t mtu = mtu_bytes(qp->mtu);
	struct sim_message m = {
		.raddr = e->raddr + (uint64_t)from * mtu, .rkey = e->rkey,
		.length = e->length - from * mtu, .swap_add = e->swap_add,
		.compare = e->compare, .opcode = e->opcode,
		.xrc_srqn = e->xrc_srqn,
	};
	struct roce_packet pkt = { .dqpn = qp->dest_qpn,
				   .psn = e->psn + from, .ack_req = true };

	roce_first_ext(qp, &m, &pkt);
	if (e->op->kind == OP_READ) {
		pkt.opcode = roce_transport(qp->type) | READ_REQUEST;
		pkt.ext_len += roce_put_reth(pkt.ext + pkt.ext_len, &m);
	} else {
		pkt.opcode = roce_transport(qp->type) |
			(e->opcode == MLX4_OPCODE_ATOMIC_CS ? CMP_SWAP : FETCH_ADD);
		roce_atomic_eth(&m, &pkt);
	}
	wire_emit(qp, a, &pkt);
}

/*
 * Packets @from to @upto of @e; their payload read in one transfer where
 * it fits the staging buffer, packet by packet otherwise.  Every
 * WIRE_ACK_EVERY-th packet asks for an ACK, so that a long message's
 * window moves on before its last packet.
 */
static void send_packets(struct sim_qp *qp, const struct wire_wqe *e,
			 uint32_t from, uint32_t upto)
{
	static uint8_t data[1u << 16];
	uint32_t mtu = mtu_bytes(qp->mtu), base = from * mtu;
	uint32_t end = upto == e->npkts ? e->length : upto * mtu;
	bool staged = end - base <= sizeof(data);
	struct sim_message m = {
		.raddr = e->raddr, .rkey = e->rkey, .length = e->length,
		.imm = e->imm, .xrc_srqn = e->xrc_srqn,
	};
	struct roce_packet pkt = { .dqpn = qp->dest_qpn };
	struct roce_path a;

	roce_connected_path(qp, &a);
	if (staged && payload(e, base, end - base, data) < 0)
		return;			/* the sender's memory: the timer tells */
	for (uint32_t i = from; i < upto; i++) {
		uint32_t off = i * mtu;
		uint32_t len = i == e->npkts - 1 ? e->length - off : mtu;

		if (!staged && payload(e, off, len, data) < 0)
			return;
		roce_first_ext(qp, &m, &pkt);
		pkt.opcode = roce_transport(qp->type) |
			     roce_request_opcode(e->op, &m, i, e->npkts, &pkt);
		pkt.solicited = e->solicited && i == e->npkts - 1;
		pkt.ack_req = i == e->npkts - 1 || i % WIRE_ACK_EVERY ==
						       WIRE_ACK_EVERY - 1;
		pkt.psn = (e->psn + i) & PSN_MASK;
		pkt.payload = staged ? data + (off - base) : data;
		pkt.len = len;
		wire_emit(qp, &a, &pkt);
	}
}

static bool read_or_atomic(const struct wire_wqe *e)
{
	return e->op->kind == OP_READ || e->op->kind == OP_ATOMIC;
}

/*
 * Send what the window lets: WIRE_PKTS PSNs past the first one the
 * responder has not acknowledged, the WQEs in order, each from the packet
 * it has sent up to.  A READ's request goes when its responses' PSNs fit.
 * UC has no acknowledgements, and no window: a WQE goes whole.
 */
static void pump(struct wire_qp *wq)
{
	for (int k = 0; k < wq->count; k++) {
		struct wire_wqe *e = &wq->wqe[(wq->first + k) % WIRE_WQES];
		int32_t room = WIRE_PKTS - psn_diff(e->psn + e->sent, wq->acked);
		uint32_t upto;

		if (e->sent == e->npkts)
			continue;
		if (wq->qp->type == IBV_QPT_UC)
			room = e->npkts;
		if (room <= 0 || (read_or_atomic(e) && k && room < (int32_t)e->npkts))
			return;
		if (read_or_atomic(e)) {
			struct roce_path a;

			roce_connected_path(wq->qp, &a);
			send_read_atomic(wq->qp, e, &a, e->got);
			e->sent = e->npkts;
			continue;
		}
		upto = MIN(e->npkts, e->sent + (uint32_t)room);
		send_packets(wq->qp, e, e->sent, upto);
		e->sent = upto;
		if (upto < e->npkts)
			return;
	}
}

/* The responder has everything before @psn. */
static void acked_to(struct wire_qp *wq, uint32_t psn)
{
	if (psn_diff(psn, wq->acked) > 0)
		wq->acked = psn & PSN_MASK;
}

/* Send again from @psn: the WQE that holds it from there, and all after. */
static void resend_from(struct wire_qp *wq, uint32_t psn)
{
	for (int k = 0; k < wq->count; k++) {
		struct wire_wqe *e = &wq->wqe[(wq->first + k) % WIRE_WQES];
		int32_t in = psn_diff(psn, e->psn);

		if (in >= (int32_t)e->npkts)
			continue;
		e->sent = in > 0 && !read_or_atomic(e) ? in : 0;
	}
	pump(wq);
	arm_timer(wq);
}

static void pop(struct wire_qp *wq)
{
	struct wire_wqe *e = oldest(wq);

	if (e->op->kind == OP_READ || e->op->kind == OP_ATOMIC)
		wq->rd_atomic--;
	wq->first = (wq->first + 1) % WIRE_WQES;
	wq->count--;
}

/* The oldest WQE done: its CQE if signaled, and room for more. */
static void complete(struct wire_qp *wq)
{
	struct wire_wqe *e = oldest(wq);

	if (e->signaled)
		comp_send(wq->qp, e->index & 0xffff, e->op->cqe_opcode,
			  e->length);
	pop(wq);
	wq->retries_left = wq->qp->retry_cnt;
	wq->rnr_retries_left = wq->qp->rnr_retry;
}

/* Every outstanding WQE completes flushed, as the QP leaves RTS. */
void wire_flush(struct sim_qp *qp)
{
	struct wire_qp *wq = qp->wire;

	if (!wq)
		return;
	while (wq->count) {
		comp_send_error(qp, oldest(wq)->index & 0xffff,
				MLX4_CQE_SYNDROME_WR_FLUSH_ERR);
		pop(wq);
	}
	wq->ack_due = wq->resend_at = 0;
}

/* The oldest WQE fails: its error CQE, the others flushed, the QP in ERROR. */
static void fail(struct wire_qp *wq, uint8_t syndrome)
{
	comp_send_error(wq->qp, oldest(wq)->index & 0xffff, syndrome);
	pop(wq);
	wire_flush(wq->qp);
	qp_to_error(wq->qp);
}

static bool room(struct wire_qp *wq, const struct wire_post *p)
{
	bool rd = p->op->kind == OP_READ || p->op->kind == OP_ATOMIC;

	if (!wq->count)
		return true;
	if (wq->count == WIRE_WQES)
		return false;
	if (rd && wq->rd_atomic >= MAX(wq->qp->max_rd_atomic, 1))
		return false;
	return !(p->fenced && wq->rd_atomic);
}

static void keep(struct wire_wqe *e, const struct wire_post *p,
		 const struct sim_message *msg, pid_t pid)
{
	e->index = p->index;
	e->signaled = p->signaled;
	e->solicited = msg->solicited;
	e->op = p->op;
	e->opcode = msg->opcode;
	e->imm = msg->imm;
	e->xrc_srqn = msg->xrc_srqn;
	e->length = msg->length;
	e->raddr = msg->raddr;
	e->rkey = msg->rkey;
	e->swap_add = msg->swap_add;
	e->compare = msg->compare;
	e->pid = pid;
	e->nseg = p->nseg;
	memcpy(e->seg, p->seg, p->nseg * sizeof(*p->seg));
	e->has_inline = msg->inline_data && msg->length <= WIRE_INLINE;
	if (e->has_inline)
		memcpy(e->inline_data, msg->inline_data, msg->length);
	e->got = 0;
}

/*
 * A WQE for the wire: sent now, completed when answered.  -EAGAIN when
 * the QP has as much outstanding as it may: it waits at the head of its
 * queue until an answer makes room (and runs the queue again).
 */
int wire_post(struct sim_qp *qp, const struct wire_post *p,
	      const struct sim_message *msg)
{
	struct wire_qp *wq = wire_of(qp);
	struct wire_wqe *e;

	if (!wq)
		return -EAGAIN;
	if (!room(wq, p))
		return -EAGAIN;
	e = &wq->wqe[(wq->first + wq->count) % WIRE_WQES];
	keep(e, p, msg, msg->src_pid);
	e->psn = qp->sq_psn;
	e->npkts = msg->npkts;
	e->sent = 0;
	qp->sq_psn = (qp->sq_psn + msg->npkts) & PSN_MASK;
	if (!wq->count) {
		wq->retries_left = qp->retry_cnt;
		wq->rnr_retries_left = qp->rnr_retry;
		wq->acked = e->psn;
	}
	wq->count++;
	if (e->op->kind == OP_READ || e->op->kind == OP_ATOMIC)
		wq->rd_atomic++;
	pump(wq);
	/* UC: nothing answers; sent is done. */
	if (qp->type == IBV_QPT_UC)
		complete(wq);
	else if (!wq->ack_due)
		arm_timer(wq);
	return 0;
}

/* Whether the oldest WQE is one an ACK of @psn completes. */
static bool acked(struct wire_qp *wq, uint32_t psn)
{
	struct wire_wqe *e = oldest(wq);

	return e && psn_diff(psn, e->psn + e->npkts - 1) >= 0;
}

/*
 * An ACK of @psn: the SENDs and WRITEs up to it are done.  A READ or an
 * atomic it passes lost its response: that is sent for again.
 */
static void take_ack(struct wire_qp *wq, uint32_t psn)
{
	acked_to(wq, psn + 1);
	while (acked(wq, psn)) {
		struct wire_wqe *e = oldest(wq);

		if (read_or_atomic(e)) {
			resend_from(wq, e->psn + e->got);
			return;
		}
		complete(wq);
	}
	pump(wq);
	arm_timer(wq);
}

/* Everything before @psn was taken (an answer for @psn came). */
static void implied(struct wire_qp *wq, uint32_t psn)
{
	struct wire_wqe *e;

	acked_to(wq, psn);
	while ((e = oldest(wq)) && !read_or_atomic(e) &&
	       psn_diff(psn, e->psn + e->npkts - 1) > 0)
		complete(wq);
}

/*
 * An answer for @psn beyond the oldest unacknowledged PSN is progress:
 * the retry counters start again (they count the attempts that made
 * none).
 */
static void progress(struct wire_qp *wq, uint32_t psn)
{
	struct wire_wqe *e = oldest(wq);

	if (e && psn_diff(psn, e->psn + e->got) > 0) {
		wq->retries_left = wq->qp->retry_cnt;
		wq->rnr_retries_left = wq->qp->rnr_retry;
	}
}

static void take_nak(struct wire_qp *wq, uint32_t psn, uint8_t syndrome)
{
	progress(wq, psn);
	implied(wq, psn);
	if (!oldest(wq))
		return;
	if ((syndrome & 0xe0) == AETH_RNR_NAK) {
		if (wq->qp->rnr_retry != 7 && !wq->rnr_retries_left--) {
			fail(wq, MLX4_CQE_SYNDROME_RNR_RETRY_EXC_ERR);
			return;
		}
		wq->resend_at = now_ns() + rnr_timer_us(syndrome) * 1000;
		wq->resend_psn = psn;
		wq->ack_due = 0;
		return;
	}
	switch (syndrome & 0x1f) {
	case 0:				/* PSN sequence error */
		if (!wq->retries_left--) {
			fail(wq, MLX4_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR);
			return;
		}
		resend_from(wq, psn);
		return;
	case 1:
		fail(wq, MLX4_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR);
		return;
	case 2:
		fail(wq, MLX4_CQE_SYNDROME_REMOTE_ACCESS_ERR);
		return;
	default:
		fail(wq, MLX4_CQE_SYNDROME_REMOTE_OP_ERR);
	}
}

/* A read response packet: its data lands, in order. */
static void take_read(struct wire_qp *wq, const struct roce_packet *pkt,
		      const uint8_t *data, size_t len)
{
	struct wire_wqe *e;
	struct dma_seg slice[CX3_MAX_SGE];
	uint32_t mtu = mtu_bytes(wq->qp->mtu);
	int n;

	implied(wq, pkt->psn);
	e = oldest(wq);
	if (!e || e->op->kind != OP_READ)
		return;
	if (psn_diff(pkt->psn, e->psn + e->got) != 0) {
		/* A response lost: ask again from it, once a gap. */
		if (psn_diff(pkt->psn, e->psn + e->got) > 0 && !wq->read_gap) {
			struct roce_path a;

			wq->read_gap = true;
			roce_connected_path(wq->qp, &a);
			send_read_atomic(wq->qp, e, &a, e->got);
		}
		return;
	}
	wq->read_gap = false;
	if ((uint64_t)e->got * mtu + len > e->length) {
		fail(wq, MLX4_CQE_SYNDROME_LOCAL_LENGTH_ERR);
		return;
	}
	n = dma_slice(e->seg, e->nseg, (uint64_t)e->got * mtu, len, slice);
	if (len && (n < 0 || dma_writev(e->pid, slice, n, data, len))) {
		fail(wq, MLX4_CQE_SYNDROME_LOCAL_PROT_ERR);
		return;
	}
	e->got++;
	acked_to(wq, pkt->psn + 1);
	wq->retries_left = wq->qp->retry_cnt;	/* progress */
	arm_timer(wq);
	if (e->got == e->npkts)
		complete(wq);
}

static void take_atomic(struct wire_qp *wq, uint32_t psn, uint64_t orig)
{
	struct wire_wqe *e;
	uint64_t be = htobe64(orig);

	implied(wq, psn);
	e = oldest(wq);
	if (!e || e->op->kind != OP_ATOMIC || e->psn != psn)
		return;
	if (dma_writev(e->pid, e->seg, e->nseg, &be, sizeof(be))) {
		fail(wq, MLX4_CQE_SYNDROME_LOCAL_PROT_ERR);
		return;
	}
	complete(wq);
	arm_timer(wq);
}

/* An answer from the responder reaches requester @wq. */
void wire_answer(struct wire_qp *wq, const struct roce_packet *pkt)
{
	uint8_t op = pkt->opcode & 0x1f;
	const uint8_t *p = pkt->payload;
	size_t len = pkt->len;
	bool aeth = op != READ_RESP_MIDDLE;
	uint8_t syndrome = AETH_ACK;

	if (!qp_can_send(wq->qp) || !wq->count)
		return;
	if (aeth) {
		if (len < 4)
			return;
		syndrome = p[0];
		p += 4, len -= 4;
	}
	if ((syndrome & 0x60) != 0)	/* an RNR NAK or a NAK */
		take_nak(wq, pkt->psn, syndrome);
	else if (op == ACKNOWLEDGE)
		take_ack(wq, pkt->psn);
	else if (op == ATOMIC_ACKNOWLEDGE && len >= 8)
		take_atomic(wq, pkt->psn, roce_get64(p));
	else if (op >= READ_RESP_FIRST && op <= READ_RESP_ONLY)
		take_read(wq, pkt, p, len);
	/* Room again: the window and the queue run on. */
	if (qp_can_send(wq->qp)) {
		pump(wq);
		req_run(wq->qp);
	}
}

/* A QP's timers: the local ACK timeout, and an RNR NAK's wait. */
static void timers_of(struct wire_qp *wq, uint64_t now, uint64_t *deadline)
{
	if (wq->resend_at && wq->resend_at <= now) {
		wq->resend_at = 0;
		resend_from(wq, wq->resend_psn);
	}
	if (wq->ack_due && wq->ack_due <= now && wq->count) {
		struct wire_wqe *e = oldest(wq);

		if (!wq->retries_left--) {
			fail(wq, MLX4_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR);
			return;
		}
		resend_from(wq, psn_diff(wq->acked, e->psn) > 0 ?
				wq->acked : e->psn + e->got);
	}
	if (wq->resend_at)
		*deadline = MIN(*deadline, wq->resend_at);
	if (wq->ack_due && wq->count)
		*deadline = MIN(*deadline, wq->ack_due);
}

void wire_timers(uint64_t now, uint64_t *deadline)
{
	struct wire_qp *wq, *next;

	list_for_each_safe(&wire_qps, wq, next, struct wire_qp, link)
		if (qp_can_send(wq->qp))
			timers_of(wq, now, deadline);
}

/*
 * A datagram to a MAC beyond the switch: one packet, unacknowledged.  Its
 * addresses are those of the GRH the address handle built, RoCE v1 or v2.
 */
void wire_send_ud(struct sim_qp *qp, const uint8_t dmac[6], uint32_t dqpn,
		  const struct sim_message *msg)
{
	static uint8_t data[4096];
	struct roce_packet pkt = { .dqpn = dqpn, .psn = qp->sq_psn };
	const uint8_t *p = msg->inline_data;
	struct roce_path a;

	if (msg->length > sizeof(data) || !msg->has_grh)
		return;
	roce_datagram_path(qp, dmac, msg, &a);
	if (!p && msg->length) {
		if (dma_readv(msg->src_pid, msg->src, msg->nsrc, data))
			return;
		p = data;
	}
	roce_first_ext(qp, msg, &pkt);
	pkt.opcode = TRANSPORT_UD |
		     roce_request_opcode(opcode_get(msg->opcode), msg, 0, 1, &pkt);
	pkt.solicited = msg->solicited;
	pkt.payload = p;
	pkt.len = msg->length;
	qp->sq_psn = (qp->sq_psn + 1) & PSN_MASK;
	wire_emit(qp, &a, &pkt);
}
