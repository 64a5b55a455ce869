/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The responder: a message arrives at a QP.
 *
 * It checks what the IB specification has a responder check (state,
 * connection, PSN, Q_Key, access rights, keys and bounds), takes a receive
 * WQE where the message consumes one (from the QP's RQ, its SRQ or, for
 * XRC, the SRQ the message names), places the data, completes the WQE and
 * answers the requester.  Errors a responder detects move it to the error
 * state with the async event the specification names; errors in its own
 * receive WQE complete that WQE in error.
 */
#include <errno.h>
#include <string.h>

#include "adapter.h"
#include "../host/opcode.h"
#include "queue.h"
#include "../fabric/wire.h"

#define SMALL_RECV	4096	/* a receive that lands with its CQE */

/* UD and UC answer nothing: what their responder cannot take, it drops. */
static bool unacknowledged(const struct sim_qp *qp)
{
	return qp->type == IBV_QPT_UD || qp->type == IBV_QPT_UC;
}

/* The SRQ an XRC message names, if in the target QP's XRC domain. */
static struct sim_srq *xrc_srq(struct sim_qp *dst,
			       const struct sim_message *msg)
{
	struct sim_srq *srq = srq_by_num(dst->hca, msg->xrc_srqn);

	return srq && srq->type == IBV_SRQT_XRC && srq->xrcd == dst->xrcd ?
	       srq : NULL;
}

/*
 * The responder goes to ERROR once the requester has completed the WQE
 * that caused it (resp_finish): when a QP talks to itself, that WQE must
 * complete before the rest of its queue is flushed.
 */
static void error_after(struct sim_qp *dst)
{
	dst->error_pending = true;
}

void resp_finish(struct sim_qp *dst)
{
	if (!dst->error_pending)
		return;
	dst->error_pending = false;
	qp_to_error(dst);
}

/* The responder's own failure, as it reports it. */
static enum resp_status responder_error(struct sim_qp *dst, uint32_t event,
					enum resp_status st)
{
	if (unacknowledged(dst))
		return RESP_DROP;
	adapter_async_event(dst->uobj.ctx ? dst->uobj.ctx : dst->ctx,
			    dst->uobj.user_handle, event,
			    &dst->events_reported, dst);
	error_after(dst);
	return st;
}

/* A receive WQE that cannot take the message completes in error. */
static enum resp_status recv_error(struct sim_qp *dst, struct sim_recv *r,
				   uint8_t syndrome)
{
	comp_recv_error(r->cq, r->qpn, r->wqe_index, syndrome);
	error_after(dst);
	if (unacknowledged(dst))
		return RESP_DROP;
	return syndrome == MLX4_CQE_SYNDROME_LOCAL_LENGTH_ERR ?
	       RESP_NAK_INV_REQ : RESP_NAK_OP;
}

/*
 * Take the receive WQE a message consumes: from the QP's RQ, its SRQ or,
 * for XRC, the SRQ the message names.  RESP_ACK when @r holds it, else
 * the answer to the requester.
 */
static enum resp_status take_recv(struct sim_qp *dst,
				  const struct sim_message *msg,
				  struct sim_recv *r)
{
	struct sim_srq *srq = dst->srq;

	r->qpn = dst->qpn;
	r->cq = dst->recv_cq;
	if (dst->type == IBV_QPT_XRC_RECV) {
		srq = xrc_srq(dst, msg);
		if (!srq)
			return responder_error(dst, IBV_EVENT_QP_REQ_ERR,
					       RESP_NAK_INV_REQ);
		r->cq = srq->cq;
	}
	r->pd = srq ? srq->pd : dst->pd;
	/* `mlx4sim fault rnr`: the queue reads empty, whatever it holds. */
	if (fault_rnr(dst) || (srq ? srq_take(srq, r) : rq_take(dst, r)))
		return unacknowledged(dst) ? RESP_DROP : RESP_RNR;
	return RESP_ACK;
}

/*
 * Move the payload into @seg, in the memory of @pid: -EFAULT when the
 * sender's memory failed, -EIO when the receiver's did.
 */
static int place(const struct sim_message *msg, pid_t pid,
		 const struct dma_seg *seg, int nseg)
{
	if (!msg->length)
		return 0;
	if (msg->inline_data)
		return dma_writev(pid, seg, nseg, msg->inline_data,
				  msg->length) ? -EIO : 0;
	return dma_copy(msg->src_pid, msg->src, msg->nsrc, pid, seg, nseg,
			msg->length);
}

/* Pieces for @len bytes at @buf, scattered as @slice says. */
static int pieces_of(const struct dma_seg *slice, int nslice,
		     const uint8_t *buf, struct dma_piece *piece, int n)
{
	for (int i = 0; i < nslice; i++) {
		if (n == DMA_PIECES_MAX - 2)
			return -E2BIG;	/* and the CQE's two */
		piece[n++] = (struct dma_piece){ slice[i].addr, (void *)buf,
						 slice[i].len };
		buf += slice[i].len;
	}
	return n;
}

/*
 * A small receive lands with its CQE in one transfer: the GRH, the
 * payload (the sender's, read first, or inline) and the CQE go to the
 * receiver's memory as ordered pieces, the CQE's owner byte last; one
 * system call where the long way takes three.  0 when done; otherwise
 * nothing was counted, and the long way says what failed.
 */
static int land_small(struct sim_qp *dst, const struct sim_message *msg,
		      const struct sim_opcode *op, const struct sim_recv *r,
		      uint32_t grh)
{
	static uint8_t stage[SMALL_RECV];
	struct dma_seg slice[CX3_MAX_SGE + 1];
	struct dma_piece piece[DMA_PIECES_MAX];
	const uint8_t *data = msg->inline_data;
	int n = 0, ns;

	if (msg->length > sizeof(stage))
		return -E2BIG;
	if (msg->length && !data) {
		if (dma_readv(msg->src_pid, msg->src, msg->nsrc, stage))
			return -EFAULT;
		data = stage;
	}
	if (grh && msg->has_grh) {
		ns = dma_slice(r->seg, r->nseg, 0, GRH_LEN, slice);
		n = ns < 0 ? ns : pieces_of(slice, ns, msg->grh, piece, n);
	}
	if (n >= 0 && msg->length) {
		ns = dma_slice(r->seg, r->nseg, grh, msg->length, slice);
		n = ns < 0 ? ns : pieces_of(slice, ns, data, piece, n);
	}
	if (n < 0 || comp_recv_after(r->cq, r->qpn, r->wqe_index, msg,
				     grh + msg->length, dst->pkey_index,
				     piece, n))
		return -EAGAIN;
	if (op->flags & OPF_INVAL_KEY)
		mw_invalidate(dst->hca, r->pd, be32toh(msg->imm));
	return 0;
}

/*
 * @len bytes from @src into the receive's segments, from byte @off of
 * them on (which @r holds: checked before), in address order as the
 * device writes (dma_store).  A QP that sends to itself may send from
 * where it receives.
 */
static void scatter_here(const struct sim_recv *r, uint64_t off,
			 const uint8_t *src, uint64_t len)
{
	for (int i = 0; i < r->nseg && len; i++) {
		uint64_t take;

		if (off >= r->seg[i].len) {
			off -= r->seg[i].len;
			continue;
		}
		take = MIN(r->seg[i].len - off, len);
		dma_store(r->here[i] + off, src, take);
		src += take;
		len -= take;
		off = 0;
	}
}

/*
 * A receive whose payload and scatter list are all in pinned pages the
 * daemon maps (Pinned memory in sim/README), as in a stream between two
 * programs: the data is copied once, from the sender's pages to the
 * receiver's, then the CQE follows (cq.c writes it into shared pages at
 * once).  Not while a batch holds CQEs of either process (their data
 * lands first): -EAGAIN, and the way of any other receive.
 */
static int land_direct(struct sim_qp *dst, const struct sim_message *msg,
		       const struct sim_opcode *op, const struct sim_recv *r,
		       uint32_t grh)
{
	uint64_t off = grh;

	if (!r->shared ||
	    (msg->length && !msg->inline_data && !msg->src_here) ||
	    cq_batched(r->pid) || cq_batched(msg->src_pid))
		return -EAGAIN;
	if (grh && msg->has_grh)
		scatter_here(r, 0, msg->grh, GRH_LEN);
	if (msg->length && msg->inline_data)
		scatter_here(r, off, msg->inline_data, msg->length);
	else if (msg->length)
		for (int i = 0; i < msg->nsrc; i++) {
			scatter_here(r, off, msg->src_here[i], msg->src[i].len);
			off += msg->src[i].len;
		}
	if (op->flags & OPF_INVAL_KEY)
		mw_invalidate(dst->hca, r->pd, be32toh(msg->imm));
	comp_recv(r->cq, r->qpn, r->wqe_index, msg, grh + msg->length,
		  dst->pkey_index);
	return 0;
}

static enum resp_status do_send(struct sim_qp *dst,
				const struct sim_message *msg,
				const struct sim_opcode *op)
{
	uint32_t grh = dst->type == IBV_QPT_UD ? GRH_LEN : 0;
	struct dma_seg slice[CX3_MAX_SGE + 1];
	enum resp_status st;
	struct sim_recv r;
	int err, n;

	st = take_recv(dst, msg, &r);
	if (st != RESP_ACK)
		return st;
	if (r.bad_key)
		return recv_error(dst, &r, MLX4_CQE_SYNDROME_LOCAL_PROT_ERR);
	if (grh + (uint64_t)msg->length > r.total)
		return recv_error(dst, &r, MLX4_CQE_SYNDROME_LOCAL_LENGTH_ERR);
	if (!land_direct(dst, msg, op, &r, grh) ||
	    !land_small(dst, msg, op, &r, grh))
		return RESP_ACK;

	if (grh && msg->has_grh) {
		n = dma_slice(r.seg, r.nseg, 0, GRH_LEN, slice);
		if (n < 0 || dma_writev(r.pid, slice, n, msg->grh, GRH_LEN))
			return recv_error(dst, &r, MLX4_CQE_SYNDROME_LOCAL_PROT_ERR);
	}
	n = dma_slice(r.seg, r.nseg, grh, msg->length, slice);
	err = n < 0 ? -EINVAL : place(msg, r.pid, slice, n);
	if (err == -EFAULT && msg->length)
		return RESP_NAK_OP;	/* the sender's memory went away */
	if (err)
		return recv_error(dst, &r, MLX4_CQE_SYNDROME_LOCAL_PROT_ERR);
	if (op->flags & OPF_INVAL_KEY)
		mw_invalidate(dst->hca, r.pd, be32toh(msg->imm));
	comp_recv(r.cq, r.qpn, r.wqe_index, msg, grh + msg->length,
		  dst->pkey_index);
	return RESP_ACK;
}

/* The PD that remote keys of this message must belong to. */
static struct sim_pd *target_pd(struct sim_qp *dst,
				const struct sim_message *msg)
{
	struct sim_srq *srq;

	if (dst->type != IBV_QPT_XRC_RECV)
		return dst->pd;
	srq = xrc_srq(dst, msg);
	return srq ? srq->pd : NULL;
}

static enum resp_status do_write(struct sim_qp *dst,
				 const struct sim_message *msg,
				 const struct sim_opcode *op)
{
	struct sim_pd *pd = target_pd(dst, msg);
	struct dma_seg target;
	struct sim_recv r;
	struct sim_mr *mr = NULL;
	int err;

	if (!(dst->access & IBV_ACCESS_REMOTE_WRITE) || !pd)
		return responder_error(dst, IBV_EVENT_QP_REQ_ERR,
				       RESP_NAK_INV_REQ);
	if (msg->length) {
		mr = mr_check(dst->hca, msg->rkey, pd, msg->raddr, msg->length,
			      MR_REMOTE_WRITE, &target.addr);
		if (!mr)
			return responder_error(dst, IBV_EVENT_QP_ACCESS_ERR,
					       RESP_NAK_ACCESS);
		target.len = msg->length;
	}
	/* The immediate needs a receive WQE before any data lands. */
	if (op->flags & OPF_RECV) {
		enum resp_status st = take_recv(dst, msg, &r);

		if (st != RESP_ACK)
			return st;
	}
	if (mr) {
		err = place(msg, mr->pid, &target, 1);
		if (err == -EFAULT)
			return RESP_NAK_OP;
		if (err)
			return responder_error(dst, IBV_EVENT_QP_ACCESS_ERR,
					       RESP_NAK_ACCESS);
	}
	if (op->flags & OPF_RECV)
		comp_recv(r.cq, r.qpn, r.wqe_index, msg, msg->length,
			  dst->pkey_index);
	return RESP_ACK;
}

static enum resp_status do_read(struct sim_qp *dst, struct sim_message *msg)
{
	struct sim_pd *pd = target_pd(dst, msg);
	struct sim_mr *mr;

	if (!(dst->access & IBV_ACCESS_REMOTE_READ) || !pd)
		return responder_error(dst, IBV_EVENT_QP_REQ_ERR,
				       RESP_NAK_INV_REQ);
	if (!msg->length)
		return RESP_ACK;
	mr = mr_check(dst->hca, msg->rkey, pd, msg->raddr, msg->length,
		      MR_REMOTE_READ, &msg->read_addr);
	if (!mr)
		return responder_error(dst, IBV_EVENT_QP_ACCESS_ERR,
				       RESP_NAK_ACCESS);
	msg->read_pid = mr->pid;
	return RESP_ACK;
}

/*
 * Atomics act on the 64-bit value at the target as big-endian, as a
 * ConnectX-3 does, and return the value they found.  The device runs one
 * operation at a time, so each is atomic with respect to the others.
 */
static enum resp_status do_atomic(struct sim_qp *dst, struct sim_message *msg)
{
	struct sim_pd *pd = target_pd(dst, msg);
	uint64_t addr, old, new;
	struct sim_mr *mr;

	if (!(dst->access & IBV_ACCESS_REMOTE_ATOMIC) || !pd ||
	    (msg->raddr & 7))
		return responder_error(dst, IBV_EVENT_QP_REQ_ERR,
				       RESP_NAK_INV_REQ);
	mr = mr_check(dst->hca, msg->rkey, pd, msg->raddr, 8,
		      MR_REMOTE_ATOMIC, &addr);
	if (!mr)
		return responder_error(dst, IBV_EVENT_QP_ACCESS_ERR,
				       RESP_NAK_ACCESS);
	if (dma_read(mr->pid, addr, &old, 8))
		return RESP_NAK_OP;
	old = be64toh(old);
	if (msg->opcode == MLX4_OPCODE_ATOMIC_CS)
		new = old == msg->compare ? msg->swap_add : old;
	else
		new = old + msg->swap_add;
	new = htobe64(new);
	if (dma_write(mr->pid, addr, &new, 8))
		return RESP_NAK_OP;
	msg->atomic_orig = old;
	return RESP_ACK;
}

/* Whether a message from @src is for @dst at all; else it is dropped. */
/* No PSNs, no acknowledgements: UD and raw Ethernet. */
static bool datagram(enum ibv_qp_type type)
{
	return type == IBV_QPT_UD || type == IBV_QPT_RAW_PACKET;
}

static bool accepts(struct sim_qp *src, struct sim_qp *dst,
		    const struct sim_message *msg)
{
	if (!qp_can_receive(dst))
		return false;
	switch (src->type) {
	case IBV_QPT_UD:
		if (dst->type != IBV_QPT_UD)
			return false;
		if (msg->qkey != dst->qkey) {
			struct sim_port *port = hca_port(dst->hca, dst->port);

			if (port)
				port->qkey_violations++;
			return false;
		}
		return true;
	case IBV_QPT_XRC_SEND:
		if (dst->type != IBV_QPT_XRC_RECV)
			return false;
		break;
	case IBV_QPT_RAW_PACKET:
		return dst->type == IBV_QPT_RAW_PACKET;	/* steered */
	default:
		if (dst->type != src->type)
			return false;
	}
	return dst->dest_qpn == src->qpn;
}

/* The PSN must be the one expected: else the packet is out of sequence. */
static bool in_sequence(struct sim_qp *dst, const struct sim_message *msg)
{
	if (msg->psn == dst->rq_psn)
		return true;
	if (dst->type == IBV_QPT_UC) {
		dst->rq_psn = msg->psn;		/* UC resynchronises */
		return true;
	}
	return false;
}

/* A PSN in the half of the PSN space behind the expected one: a duplicate. */
static bool is_duplicate(const struct sim_qp *dst, uint32_t psn)
{
	uint32_t behind = (dst->rq_psn - psn) & PSN_MASK;

	return behind && behind <= PSN_MASK / 2;
}

/*
 * A request that came again: a SEND or WRITE is acknowledged and not
 * executed again; a READ or an atomic is answered from the responder's
 * record of it (an atomic is never executed twice).  One message is
 * outstanding at a time here, so the record of the last one suffices; a
 * READ or atomic older than that is not answered.
 */
static enum resp_status duplicate(const struct sim_qp *dst,
				  struct sim_message *msg,
				  const struct sim_opcode *op)
{
	if (op->kind != OP_READ && op->kind != OP_ATOMIC)
		return RESP_ACK;
	if (!dst->last.valid || dst->last.psn != msg->psn ||
	    dst->last.kind != op->kind)
		return RESP_DROP;
	msg->read_pid = dst->last.read_pid;
	msg->read_addr = dst->last.read_addr;
	msg->atomic_orig = dst->last.atomic_orig;
	return RESP_ACK;
}

static void remember(struct sim_qp *dst, const struct sim_message *msg,
		     const struct sim_opcode *op)
{
	dst->last.valid = true;
	dst->last.psn = msg->psn;
	dst->last.kind = op->kind;
	dst->last.read_pid = msg->read_pid;
	dst->last.read_addr = msg->read_addr;
	dst->last.atomic_orig = msg->atomic_orig;
}

/*
 * What a message in sequence asks of @dst, done: the answer is the status,
 * and for a READ or an atomic the fields of @msg that say where the data
 * is.  The wire's packets (wire-resp.c) come here once whole.
 */
enum resp_status resp_execute(struct sim_qp *dst, struct sim_message *msg)
{
	const struct sim_opcode *op = opcode_get(msg->opcode);

	msg->min_rnr_timer = dst->min_rnr_timer;
	switch (op->kind) {
	case OP_WRITE:
		return do_write(dst, msg, op);
	case OP_READ:
		return do_read(dst, msg);
	case OP_ATOMIC:
		return do_atomic(dst, msg);
	default:
		return do_send(dst, msg, op);
	}
}

/* The first message a connected QP takes establishes it. */
void resp_established(struct sim_qp *dst)
{
	if (dst->comm_established)
		return;
	dst->comm_established = true;
	if (dst->state == IBV_QPS_RTR)
		adapter_async_event(dst->uobj.ctx, dst->uobj.user_handle,
				    IBV_EVENT_COMM_EST, &dst->events_reported,
				    dst);
}

/*
 * The message arrives at @dst: the answer is the status, and for a READ
 * or an atomic the fields of @msg that say where the data is.
 */
static enum resp_status deliver(struct sim_qp *src, struct sim_qp *dst,
				struct sim_message *msg)
{
	const struct sim_opcode *op = opcode_get(msg->opcode);
	enum resp_status st;

	sim.work_done = true;
	if (!accepts(src, dst, msg))
		return RESP_DROP;
	if (!datagram(dst->type) && !in_sequence(dst, msg)) {
		if (is_duplicate(dst, msg->psn))
			return duplicate(dst, msg, op);
		/* Ahead of the expected PSN: packets were lost before it. */
		return RESP_NAK_SEQ;
	}
	st = resp_execute(dst, msg);
	if (st == RESP_ACK && !datagram(dst->type)) {
		dst->rq_psn = (dst->rq_psn + msg->npkts) & PSN_MASK;
		remember(dst, msg, op);
		resp_established(dst);
	}
	return st;
}

enum resp_status resp_deliver(struct sim_qp *src, struct sim_qp *dst,
			      struct sim_message *msg)
{
	enum resp_status st;

	port_count(hca_port(src->hca, src->port), hca_port(dst->hca, dst->port),
		   msg->length, msg->npkts);
	if (sim.opt.pcap)
		pcap_request(src, dst, msg);
	st = deliver(src, dst, msg);
	if (sim.opt.pcap)
		pcap_answer(src, dst, msg, st);
	return st;
}

/* Receives posted to a QP in the error state are flushed. */
void resp_flush_errors(void)
{
	struct sim_qp *qp;

	list_for_each(&sim.error_qps, qp, struct sim_qp, error_link)
		comp_flush_rq(qp);
}
