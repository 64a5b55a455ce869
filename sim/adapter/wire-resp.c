/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The responder across the wire (--uplink): RoCE packets from the
 * uplink reach the QP their BTH names on the port whose MAC they were
 * sent to.  A request in sequence is taken: a SEND's or WRITE's packets
 * gather until the last, then the message is executed as any other
 * (resp.c) and acknowledged with the MSN; a READ is answered with its
 * response packets and an atomic with its acknowledgement, and both are
 * recorded, max_dest_rd_atomic of them, so that a duplicate is answered
 * from the record and an atomic never runs twice.  A duplicate SEND or
 * WRITE is acknowledged again; a packet ahead of the expected PSN gets
 * one sequence NAK a gap; an RNR NAK names the QP's min_rnr_timer and
 * the message's first PSN.  Answers go to the requester (wire-req.c);
 * datagrams to their UD QP, with the IP header in the GRH's place.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "wire.h"

/* The extended headers of a request, taken off its packet. */
struct req_headers {
	uint32_t xrc_srqn;
	uint64_t raddr;
	uint32_t rkey, dma_len;
	uint64_t swap_add, compare;
	uint32_t imm;			/* as it travelled (big-endian) */
	uint32_t qkey, src_qpn;		/* DETH */
};

static bool take_bytes(struct roce_packet *pkt, size_t n, const uint8_t **at)
{
	if (pkt->len < n)
		return false;
	*at = pkt->payload;
	pkt->payload += n;
	pkt->len -= n;
	return true;
}

static bool has_reth(uint8_t op)
{
	return op == WRITE_FIRST || op == WRITE_ONLY || op == WRITE_ONLY_IMM ||
	       op == READ_REQUEST;
}

static bool has_imm(uint8_t op)
{
	return op == SEND_LAST_IMM || op == SEND_ONLY_IMM ||
	       op == WRITE_LAST_IMM || op == WRITE_ONLY_IMM ||
	       op == SEND_LAST_INV || op == SEND_ONLY_INV;
}

/* Split @pkt's headers off into @h; false when it is too short. */
static bool split(struct roce_packet *pkt, struct req_headers *h)
{
	uint8_t op = pkt->opcode & 0x1f;
	const uint8_t *p;

	memset(h, 0, sizeof(*h));
	if ((pkt->opcode & 0xe0) == TRANSPORT_XRC) {
		if (!take_bytes(pkt, 4, &p))
			return false;
		h->xrc_srqn = roce_get32(p) & NUM24_MASK;
	}
	if ((pkt->opcode & 0xe0) == TRANSPORT_UD) {
		if (!take_bytes(pkt, 8, &p))
			return false;
		h->qkey = roce_get32(p);
		h->src_qpn = roce_get32(p + 4) & NUM24_MASK;
	}
	if (has_reth(op)) {
		if (!take_bytes(pkt, 16, &p))
			return false;
		h->raddr = roce_get64(p);
		h->rkey = roce_get32(p + 8);
		h->dma_len = roce_get32(p + 12);
	}
	if (op == CMP_SWAP || op == FETCH_ADD) {
		if (!take_bytes(pkt, 28, &p))
			return false;
		h->raddr = roce_get64(p);
		h->rkey = roce_get32(p + 8);
		h->swap_add = roce_get64(p + 12);
		h->compare = roce_get64(p + 20);
	}
	if (has_imm(op)) {
		if (!take_bytes(pkt, 4, &p))
			return false;
		memcpy(&h->imm, p, 4);
	}
	return true;
}

/* The send WQE opcode a request's BTH opcode stands for. */
static uint8_t wqe_opcode(uint8_t op)
{
	switch (op) {
	case SEND_LAST_IMM: case SEND_ONLY_IMM:	return MLX4_OPCODE_SEND_IMM;
	case SEND_LAST_INV: case SEND_ONLY_INV:	return MLX4_OPCODE_SEND_INVAL;
	case WRITE_FIRST: case WRITE_MIDDLE: case WRITE_LAST: case WRITE_ONLY:
		return MLX4_OPCODE_RDMA_WRITE;
	case WRITE_LAST_IMM: case WRITE_ONLY_IMM:
		return MLX4_OPCODE_RDMA_WRITE_IMM;
	case READ_REQUEST:	return MLX4_OPCODE_RDMA_READ;
	case CMP_SWAP:		return MLX4_OPCODE_ATOMIC_CS;
	case FETCH_ADD:		return MLX4_OPCODE_ATOMIC_FA;
	default:		return MLX4_OPCODE_SEND;
	}
}

static bool is_write(uint8_t op)
{
	return op >= WRITE_FIRST && op <= WRITE_ONLY_IMM;
}

static bool first_of(uint8_t op)
{
	return op == SEND_FIRST || op == SEND_ONLY || op == SEND_ONLY_IMM ||
	       op == SEND_ONLY_INV || op == WRITE_FIRST || op == WRITE_ONLY ||
	       op == WRITE_ONLY_IMM;
}

static bool last_of(uint8_t op)
{
	return op == SEND_LAST || op == SEND_LAST_IMM || op == SEND_LAST_INV ||
	       op == SEND_ONLY || op == SEND_ONLY_IMM || op == SEND_ONLY_INV ||
	       op == WRITE_LAST || op == WRITE_LAST_IMM || op == WRITE_ONLY ||
	       op == WRITE_ONLY_IMM;
}

/* An ACK, or a NAK of @st, for @psn, with the MSN. */
static void acknowledge(struct wire_qp *wq, uint32_t psn, enum resp_status st,
			uint8_t min_rnr_timer)
{
	struct sim_qp *qp = wq->qp;
	struct roce_packet pkt = { .dqpn = qp->dest_qpn, .psn = psn,
				   .ext_len = 4 };
	struct roce_path a;

	if (qp->type == IBV_QPT_UC)
		return;
	roce_connected_path(qp, &a);
	pkt.opcode = roce_transport(qp->type) | ACKNOWLEDGE;
	roce_put32(pkt.ext, (uint32_t)roce_aeth_syndrome(st, min_rnr_timer) << 24 |
			    (wq->msn & NUM24_MASK));
	wire_emit(qp, &a, &pkt);
}

/* A READ's response packets from packet @from, read from memory now. */
static void read_response(struct wire_qp *wq, const struct wire_record *r,
			  uint32_t from)
{
	static uint8_t data[4096];
	struct sim_qp *qp = wq->qp;
	uint32_t mtu = mtu_bytes(qp->mtu);
	struct roce_packet pkt = { .dqpn = qp->dest_qpn };
	struct roce_path a;

	roce_connected_path(qp, &a);
	for (uint32_t i = from; i < r->npkts; i++) {
		uint32_t off = i * mtu;
		uint32_t len = i == r->npkts - 1 ? r->length - off : mtu;
		bool first = i == 0, last = i == r->npkts - 1;

		if (len && dma_read(r->pid, r->addr + off, data, len))
			return;		/* the memory went: the requester retries */
		pkt.opcode = roce_transport(qp->type) |
			(r->npkts == 1 ? READ_RESP_ONLY : first ? READ_RESP_FIRST :
			 last ? READ_RESP_LAST : READ_RESP_MIDDLE);
		pkt.psn = (r->psn + i) & PSN_MASK;
		pkt.ext_len = first || last ? 4 : 0;
		roce_put32(pkt.ext, (uint32_t)AETH_ACK << 24 | (wq->msn & NUM24_MASK));
		pkt.payload = data;
		pkt.len = len;
		wire_emit(qp, &a, &pkt);
	}
}

static void atomic_ack(struct wire_qp *wq, const struct wire_record *r)
{
	struct sim_qp *qp = wq->qp;
	struct roce_packet pkt = { .dqpn = qp->dest_qpn, .psn = r->psn,
				   .ext_len = 12 };
	struct roce_path a;

	roce_connected_path(qp, &a);
	pkt.opcode = roce_transport(qp->type) | ATOMIC_ACKNOWLEDGE;
	roce_put32(pkt.ext, (uint32_t)AETH_ACK << 24 | (wq->msn & NUM24_MASK));
	roce_put64(pkt.ext + 4, r->atomic_orig);
	wire_emit(qp, &a, &pkt);
}

/* A request that came again: answered, never executed again. */
static void duplicate(struct wire_qp *wq, const struct roce_packet *pkt)
{
	uint8_t op = pkt->opcode & 0x1f;
	int slots = MIN(MAX(wq->qp->max_dest_rd_atomic, 1), WIRE_RECORDS);

	/* A SEND or WRITE: its last packet (ACK requested) is acknowledged. */
	if (op != READ_REQUEST && op != CMP_SWAP && op != FETCH_ADD) {
		if (pkt->ack_req)
			acknowledge(wq, wq->qp->rq_psn - 1, RESP_ACK, 0);
		return;
	}
	for (int i = 0; i < slots; i++) {
		const struct wire_record *r = &wq->rec[i];
		int32_t in = psn_diff(pkt->psn, r->psn);

		if (!r->valid || in < 0 || in >= (int32_t)r->npkts)
			continue;
		if (op == READ_REQUEST && r->kind == OP_READ)
			read_response(wq, r, in);
		else if (op != READ_REQUEST && r->kind == OP_ATOMIC && !in)
			atomic_ack(wq, r);
		return;
	}
	/* Older than every record: not answered (the requester times out). */
}

/* The payload of a SEND or WRITE so far, grown as a message needs. */
static bool gather(struct wire_qp *wq, const uint8_t *p, size_t len)
{
	if (wq->got + len > wq->buf_size) {
		size_t size = MAX(wq->got + len, 2 * wq->buf_size);
		uint8_t *buf = realloc(wq->buf, size);

		if (!buf)
			return false;
		wq->buf = buf;
		wq->buf_size = size;
	}
	memcpy(wq->buf + wq->got, p, len);
	wq->got += len;
	return true;
}

/* A READ or an atomic in sequence: executed, recorded, answered. */
static enum resp_status read_atomic(struct wire_qp *wq,
				    const struct roce_packet *pkt,
				    const struct req_headers *h)
{
	struct sim_qp *qp = wq->qp;
	uint8_t op = pkt->opcode & 0x1f;
	int slots = MIN(MAX(qp->max_dest_rd_atomic, 1), WIRE_RECORDS);
	struct sim_message msg = {
		.opcode = wqe_opcode(op), .psn = pkt->psn, .raddr = h->raddr,
		.rkey = h->rkey, .swap_add = h->swap_add,
		.compare = h->compare, .xrc_srqn = h->xrc_srqn,
		.length = op == READ_REQUEST ? h->dma_len : 8, .ethernet = true,
	};
	struct wire_record *r = &wq->rec[wq->rec_next];
	enum resp_status st = resp_execute(qp, &msg);
	uint32_t mtu = mtu_bytes(qp->mtu);

	if (st != RESP_ACK)
		return st;
	wq->rec_next = (wq->rec_next + 1) % slots;
	r->valid = true;
	r->kind = op == READ_REQUEST ? OP_READ : OP_ATOMIC;
	r->psn = pkt->psn;
	r->npkts = r->kind == OP_READ && msg.length ?
		   (msg.length + mtu - 1) / mtu : 1;
	r->pid = msg.read_pid;
	r->addr = msg.read_addr;
	r->length = r->kind == OP_READ ? msg.length : 0;
	r->atomic_orig = msg.atomic_orig;
	qp->rq_psn = (qp->rq_psn + r->npkts) & PSN_MASK;
	wq->msn++;
	resp_established(qp);
	if (r->kind == OP_READ)
		read_response(wq, r, 0);
	else
		atomic_ack(wq, r);
	return RESP_ACK;
}

/* The last packet of a SEND or WRITE: the message is executed. */
static void finish_message(struct wire_qp *wq, const struct roce_packet *pkt,
			   const struct req_headers *h)
{
	struct sim_qp *qp = wq->qp;
	struct sim_message *msg = &wq->msg;
	enum resp_status st = RESP_NAK_INV_REQ;

	wq->in_msg = false;
	msg->imm = h->imm;
	msg->opcode = wqe_opcode(pkt->opcode & 0x1f);
	msg->solicited = pkt->solicited;
	msg->length = wq->got;
	msg->inline_data = wq->buf;
	msg->psn = wq->msg_psn;
	msg->npkts = psn_diff(pkt->psn, wq->msg_psn) + 1;
	if (!is_write(pkt->opcode & 0x1f) || msg->length == wq->dma_len)
		st = resp_execute(qp, msg);
	if (st == RESP_ACK) {
		wq->msn++;
		resp_established(qp);
		acknowledge(wq, pkt->psn, RESP_ACK, 0);
	} else if (st == RESP_RNR) {
		/* The whole message again, after the timer. */
		qp->rq_psn = wq->msg_psn;
		wq->nak_sent = true;
		acknowledge(wq, wq->msg_psn, st, msg->min_rnr_timer);
	} else if (st != RESP_DROP) {
		wq->nak_sent = true;
		acknowledge(wq, pkt->psn, st, 0);
	}
	resp_finish(qp);
}

/* A SEND's or WRITE's packet in sequence. */
static enum resp_status send_write(struct wire_qp *wq,
				   const struct roce_packet *pkt,
				   const struct req_headers *h)
{
	struct sim_qp *qp = wq->qp;
	uint8_t op = pkt->opcode & 0x1f;
	uint32_t mtu = mtu_bytes(qp->mtu);

	if (first_of(op)) {
		if (wq->in_msg && qp->type != IBV_QPT_UC)
			return RESP_NAK_INV_REQ;
		memset(&wq->msg, 0, sizeof(wq->msg));
		wq->in_msg = true;
		wq->msg_psn = pkt->psn;
		wq->got = 0;
		wq->msg.raddr = h->raddr;
		wq->msg.rkey = h->rkey;
		wq->dma_len = h->dma_len;
		wq->msg_write = is_write(op);
		wq->msg.xrc_srqn = h->xrc_srqn;
		wq->msg.ethernet = true;
		wq->msg.src_qpn = qp->dest_qpn;
	} else if (!wq->in_msg ||
		   is_write(op) != wq->msg_write) {
		return RESP_NAK_INV_REQ;
	}
	/* No more than the RETH said, or than a message may be. */
	if (pkt->len > mtu || (!last_of(op) && pkt->len != mtu) ||
	    wq->got + pkt->len > (wq->msg_write ? wq->dma_len : CX3_MAX_MSG_SZ) ||
	    !gather(wq, pkt->payload, pkt->len))
		return RESP_NAK_INV_REQ;
	qp->rq_psn = (qp->rq_psn + 1) & PSN_MASK;
	if (last_of(op))
		finish_message(wq, pkt, h);
	else if (pkt->ack_req)
		acknowledge(wq, pkt->psn, RESP_ACK, 0);
	return RESP_ACK;
}

static void in_sequence(struct wire_qp *wq, struct roce_packet *pkt)
{
	struct sim_qp *qp = wq->qp;
	uint8_t op = pkt->opcode & 0x1f;
	struct req_headers h;
	enum resp_status st = RESP_NAK_INV_REQ;

	wq->nak_sent = false;
	if (split(pkt, &h)) {
		if (op == READ_REQUEST || op == CMP_SWAP || op == FETCH_ADD)
			st = qp->type == IBV_QPT_UC ? RESP_NAK_INV_REQ :
			     read_atomic(wq, pkt, &h);
		else if (op <= WRITE_ONLY_IMM || op == SEND_LAST_INV ||
			 op == SEND_ONLY_INV)
			st = send_write(wq, pkt, &h);
	}
	if (st == RESP_ACK || st == RESP_DROP)
		return;
	/* An invalid request: the responder's error, as resp.c has it. */
	wq->in_msg = false;
	wq->nak_sent = true;
	acknowledge(wq, pkt->psn, st, 0);
	if (qp->type != IBV_QPT_UC)
		qp_to_error(qp);
}

static void request(struct sim_qp *qp, struct roce_packet *pkt)
{
	struct wire_qp *wq = wire_of(qp);
	int32_t ahead;

	if (!wq || !qp_can_receive(qp))
		return;
	ahead = psn_diff(pkt->psn, qp->rq_psn);
	if (qp->type == IBV_QPT_UC && ahead) {
		/* UC drops the message it was in and starts at a first packet. */
		wq->in_msg = false;
		if (!first_of(pkt->opcode & 0x1f))
			return;
		qp->rq_psn = pkt->psn;
		ahead = 0;
	}
	if (ahead < 0) {
		duplicate(wq, pkt);
	} else if (ahead > 0) {
		if (!wq->nak_sent)
			acknowledge(wq, qp->rq_psn, RESP_NAK_SEQ, 0);
		wq->nak_sent = true;
	} else {
		in_sequence(wq, pkt);
	}
}

/* A datagram: the receive gets the IP header where a GRH would be. */
static void datagram(struct sim_qp *qp, const struct roce_path *a,
		     struct roce_packet *pkt)
{
	uint8_t op = pkt->opcode & 0x1f;
	struct req_headers h;
	struct sim_message msg = { .npkts = 1, .ethernet = true,
				   .has_grh = true };
	size_t ib_len;

	if (qp->type != IBV_QPT_UD || !qp_can_receive(qp) ||
	    (op != SEND_ONLY && op != SEND_ONLY_IMM) || !split(pkt, &h))
		return;
	if (h.qkey != qp->qkey) {
		struct sim_port *port = hca_port(qp->hca, qp->port);

		if (port)
			port->qkey_violations++;
		return;
	}
	msg.opcode = wqe_opcode(op);
	msg.imm = h.imm;
	msg.solicited = pkt->solicited;
	msg.length = pkt->len;
	msg.inline_data = pkt->payload;
	msg.src_qpn = h.src_qpn;
	msg.qkey = h.qkey;
	msg.has_vlan = a->has_vlan;
	msg.vlan_tci = a->vlan_tci;
	msg.sl = a->has_vlan ? a->vlan_tci >> 13 : 0;
	ib_len = 12 + 8 + (op == SEND_ONLY_IMM ? 4 : 0) + pkt->len +
		 (-pkt->len & 3) + 4;
	roce_net_header(a->ipv4 ? msg.grh + 20 : msg.grh, a->v2, a->ipv4,
			a->sgid, a->dgid, a->tclass, a->flow_label,
			a->hop_limit, ib_len);
	resp_execute(qp, &msg);
	resp_finish(qp);
}

/*
 * A RoCE frame from the uplink for @port: a request, an answer or a
 * datagram for one of its QPs.  A packet whose ICRC fails, or for no QP
 * of the port, or not from a connected QP's peer, is dropped.
 */
void wire_receive(struct sim_port *port, const uint8_t *frame, size_t len)
{
	struct roce_path a;
	struct roce_packet pkt;
	struct sim_qp *qp;
	uint8_t op;

	sim.work_done = true;
	if (!roce_parse(frame, len, &a, &pkt) || !port_active(port)) {
		fault_count_drop();
		return;
	}
	qp = qp_by_num(port->hca, pkt.dqpn);
	if (!qp || hca_port(qp->hca, qp->port) != port)
		return;
	if ((pkt.opcode & 0xe0) == TRANSPORT_UD) {
		datagram(qp, &a, &pkt);
		return;
	}
	if (qp->type == IBV_QPT_UD || qp->type == IBV_QPT_RAW_PACKET ||
	    memcmp(a.sgid, qp->path.dgid, 16))
		return;
	op = pkt.opcode & 0x1f;
	if (op >= READ_RESP_FIRST && op <= ATOMIC_ACKNOWLEDGE) {
		if (qp->wire)
			wire_answer(qp->wire, &pkt);
		return;
	}
	request(qp, &pkt);
}
