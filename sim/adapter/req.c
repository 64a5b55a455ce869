/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The requester: executing a QP's send queue.
 *
 * The WQEs the driver has handed over (queue.c) run in order from the
 * head.  Each is parsed (malformed ones are strict-mode breaches), its
 * local memory checked, and the message delivered to the responder at once;
 * the answer completes the WQE, or leaves it at the head to retry after a
 * receiver-not-ready or ACK timeout, or moves the QP to the error state.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <sys/uio.h>

#include "adapter.h"
#include "../host/opcode.h"
#include "queue.h"
#include "../fabric/wire.h"

#define CTRL_DS_MASK	0x3f	/* fence_size: the WQE's size in 16 bytes */

/* A send WQE, parsed. */
struct sim_wqe {
	uint32_t index;
	unsigned int blocks;		/* of the ring it takes (queue.c) */
	uint8_t opcode;
	const struct sim_opcode *op;
	bool signaled, solicited;
	bool fenced;			/* waits for the READs and atomics before */
	uint32_t imm;
	uint32_t remote_srqn;
	uint64_t raddr;
	uint32_t rkey;
	uint64_t swap_add, compare;
	struct mlx4_wqe_datagram_seg dgram;
	struct mlx4_wqe_bind_seg bind;
	uint32_t inval_key;
	uint32_t flags;			/* srcrb_flags, host order */
	uint8_t ctrl_mac[6];		/* raw packet QPs: the frame's DMAC */
	uint16_t vlan_tci;		/* raw: a tag to insert, with ... */
	bool ins_vlan;			/* ... the control segment's bit */
	uint16_t mss, hdr_len;		/* LSO: segment size, headers ... */
	uint8_t hdr[CX3_MAX_SQ_DESC];	/* ... and the headers */
	int nsge;
	struct {
		uint32_t lkey;
		uint64_t addr;
		uint32_t len;
	} sge[CX3_MAX_SGE];
	bool is_inline;
	uint64_t length;	/* a sum of client-chosen lengths: no wrap */
	uint8_t inline_data[CX3_MAX_SQ_DESC];
};

#define GATHER_ZERO_LENGTH	0x80000000u	/* 2 GB */

enum exec_result {
	EXEC_DONE,
	EXEC_WAIT,		/* stays at the head for a retry */
	EXEC_ERROR,		/* completed in error, QP now in ERROR (SQE) */
};

/* ------------------------------------------------------------------ */
/* Parsing                                                             */
/* ------------------------------------------------------------------ */

static void parse_middle(const uint8_t *seg, unsigned int segs,
			 struct sim_wqe *w)
{
	if (segs & SEG_DATAGRAM)
		memcpy(&w->dgram, seg, sizeof(w->dgram));
	if (segs & SEG_RADDR) {
		const struct mlx4_wqe_raddr_seg *raddr = (const void *)seg;

		w->raddr = be64toh(raddr->raddr);
		w->rkey = be32toh(raddr->rkey);
		seg += sizeof(*raddr);
	}
	if (segs & SEG_ATOMIC) {
		const struct mlx4_wqe_atomic_seg *atomic = (const void *)seg;

		w->swap_add = be64toh(atomic->swap_add);
		w->compare = be64toh(atomic->compare);
	}
	if (segs & SEG_BIND)
		memcpy(&w->bind, seg, sizeof(w->bind));
	if (segs & SEG_INVAL)
		w->inval_key = be32toh(((const struct mlx4_wqe_local_inval_seg *)
					seg)->mem_key);
}

/*
 * Data segments, or inline segments: an inline segment is a byte count
 * with bit 31 set, then the data, and never crosses a 64-byte boundary
 * of the WQE; a stamp (0xffffffff) inside the WQE fails that test.
 */
static int parse_data(struct sim_qp *qp, const uint8_t *wqe, size_t off,
		      size_t end, struct sim_wqe *w)
{
	while (off < end) {
		uint32_t word = be32toh(*(const uint32_t *)(wqe + off));
		bool inline_seg = word & MLX4_INLINE_SEG;

		/*
		 * The inline bit with no bytes: an empty segment, which is
		 * how drivers write a gather entry of no length (a byte
		 * count of 0 would mean 2 GB).  It mixes with anything.
		 */
		if (word == MLX4_INLINE_SEG) {
			off += 16;
			continue;
		}

		if (word == 0xffffffff) {
			breach(qp->ctx, "QP 0x%x WQE 0x%x: stamp 0xffffffff at offset %zu, inside the WQE's %zu bytes",
			       qp->qpn, w->index, off, end);
			return -EINVAL;
		}
		/*
		 * Refuse the mix before using the segment: w->length sums
		 * gather lengths the client chose, so it must never index
		 * the inline buffer.
		 */
		if ((inline_seg && w->nsge) || (!inline_seg && w->is_inline)) {
			breach(qp->ctx, "QP 0x%x WQE 0x%x: inline and gather segments mixed",
			       qp->qpn, w->index);
			return -EINVAL;
		}
		if (inline_seg) {
			uint32_t len = word & ~MLX4_INLINE_SEG;

			if ((off & (MLX4_INLINE_ALIGN - 1)) + 4 + len > MLX4_INLINE_ALIGN ||
			    off + 4 + len > end) {
				breach(qp->ctx, "QP 0x%x WQE 0x%x: inline segment of %u bytes at offset %zu crosses a 64-byte boundary or the WQE",
				       qp->qpn, w->index, len, off);
				return -EINVAL;
			}
			memcpy(w->inline_data + w->length, wqe + off + 4, len);
			w->length += len;
			w->is_inline = true;
			off += (4 + len + 15) & ~15u;
			continue;
		}
		if (w->nsge == CX3_MAX_SGE || off + 16 > end) {
			breach(qp->ctx, "QP 0x%x WQE 0x%x: more data segments than fit",
			       qp->qpn, w->index);
			return -EINVAL;
		}
		const struct mlx4_wqe_data_seg *d = (const void *)(wqe + off);

		/* A ConnectX-3 reads a gather byte count of 0 as 2 GB. */
		w->sge[w->nsge].len = word ? word : GATHER_ZERO_LENGTH;
		w->sge[w->nsge].lkey = be32toh(d->lkey);
		w->sge[w->nsge].addr = be64toh(d->addr);
		w->length += w->sge[w->nsge].len;
		w->nsge++;
		off += 16;
	}
	return 0;
}

/*
 * An LSO WQE: after the control segment, the segment size and the
 * headers' length in one word, the headers, then (at the next 16 bytes)
 * the data segments of the payload.
 */
static int parse_lso(struct sim_qp *qp, const uint8_t *raw, size_t size,
		     struct sim_wqe *w)
{
	uint32_t word = be32toh(*(const uint32_t *)(raw + 16));
	size_t data;

	w->mss = word >> 16;
	w->hdr_len = word & 0xffff;
	data = 16 + ((4 + w->hdr_len + 15) & ~15u);
	if (data > size) {
		breach(qp->ctx, "QP 0x%x WQE 0x%x: LSO headers of %u bytes beyond the WQE's %zu",
		       qp->qpn, w->index, w->hdr_len, size);
		return -EINVAL;
	}
	memcpy(w->hdr, raw + 20, w->hdr_len);
	return parse_data(qp, raw, data, size, w);
}

/* 0, or -EINVAL for a WQE the device cannot execute (a breach). */
static int parse_wqe(struct sim_qp *qp, const uint8_t *raw, struct sim_wqe *w)
{
	const struct mlx4_wqe_ctrl_seg *ctrl = (const void *)raw;
	uint32_t flags = be32toh(ctrl->srcrb_flags);
	size_t size = (ctrl->fence_size & CTRL_DS_MASK) * 16;
	unsigned int segs;
	size_t middle;

	w->blocks = sq_wqe_blocks(qp, raw);
	w->opcode = be32toh(ctrl->owner_opcode) & WQE_OPCODE_MASK;
	w->op = opcode_get(w->opcode);
	w->imm = ctrl->imm;
	w->signaled = (flags & MLX4_WQE_CTRL_CQ_UPDATE) == MLX4_WQE_CTRL_CQ_UPDATE;
	w->solicited = flags & MLX4_WQE_CTRL_SOLICIT;
	w->fenced = ctrl->fence_size & MLX4_WQE_CTRL_FENCE;
	w->remote_srqn = flags >> 8;
	w->flags = flags;
	memcpy(w->ctrl_mac, &ctrl->srcrb_flags, 2);
	memcpy(w->ctrl_mac + 2, &ctrl->imm, 4);
	/*
	 * Bytes 4-6 name a VLAN tag to insert and the insert bit (byte 6),
	 * in a WQE rung through the UAR; a BlueFlame WQE has its QPN there
	 * (mlx4_en sends no tagged frame by BlueFlame).
	 */
	w->vlan_tci = raw[4] << 8 | raw[5];
	w->ins_vlan = qp->type == IBV_QPT_RAW_PACKET &&
		      (raw[6] & CTRL_INS_CVLAN) &&
		      (uint32_t)(raw[4] << 16 | raw[5] << 8 | raw[6]) != qp->qpn;
	w->nsge = 0;
	w->length = 0;
	w->is_inline = false;

	/* A WQE larger than the stride takes several blocks (queue.c). */
	if (size < 16 || size > CX3_MAX_SQ_DESC ||
	    size > ((size_t)qp->sq.wqe_cnt << qp->sq.wqe_shift)) {
		breach(qp->ctx, "QP 0x%x WQE 0x%x: size %zu bytes, not 16 to %u, in a ring of %u blocks of %u",
		       qp->qpn, w->index, size, CX3_MAX_SQ_DESC,
		       qp->sq.wqe_cnt, 1u << qp->sq.wqe_shift);
		return -EINVAL;
	}
	if ((flags & MLX4_WQE_CTRL_CQ_UPDATE) &&
	    (flags & MLX4_WQE_CTRL_CQ_UPDATE) != MLX4_WQE_CTRL_CQ_UPDATE) {
		breach(qp->ctx, "QP 0x%x WQE 0x%x: reserved completion mode %u",
		       qp->qpn, w->index, (flags >> 2) & 3);
		return -EINVAL;
	}
	if (!opcode_allowed(w->op, qp->type))
		return 0;	/* completes with a local QP operation error */
	/*
	 * The adapter runs WQEs in a pipeline: a key change without strong
	 * ordering may overtake the WQEs before it that use the key.
	 */
	if ((w->op->flags & OPF_ORDERED) &&
	    !(flags & MLX4_WQE_CTRL_STRONG_ORDER))
		breach(qp->ctx, "QP 0x%x WQE 0x%x: opcode 0x%x without strong ordering",
		       qp->qpn, w->index, w->opcode);
	segs = opcode_segs(w->op, qp->type);
	middle = opcode_segs_size(segs);
	if (w->opcode == MLX4_OPCODE_LSO)
		return parse_lso(qp, raw, size, w);
	if (16 + middle > size) {
		breach(qp->ctx, "QP 0x%x WQE 0x%x: %zu bytes too short for opcode 0x%x",
		       qp->qpn, w->index, size, w->opcode);
		return -EINVAL;
	}
	parse_middle(raw + 16, segs, w);
	return parse_data(qp, raw, 16 + middle, size, w);
}

/* ------------------------------------------------------------------ */
/* Execution                                                           */
/* ------------------------------------------------------------------ */

/*
 * The WQE's local memory as the device may reach it; with @here, where
 * each piece is mapped here (NULL for one outside the pinned pages the
 * daemon maps).
 */
static int local_segs(struct sim_qp *qp, const struct sim_wqe *w,
		      enum mr_use use, struct dma_seg *seg, uint8_t **here,
		      int *nseg)
{
	*nseg = 0;
	for (int i = 0; i < w->nsge; i++) {
		struct sim_mr *mr;
		uint64_t addr;

		if (!w->sge[i].len)
			continue;
		mr = mr_check(qp->hca, w->sge[i].lkey, qp->pd, w->sge[i].addr,
			      w->sge[i].len, use, &addr);
		if (!mr)
			return -EACCES;
		seg[*nseg].addr = addr;
		seg[*nseg].len = w->sge[i].len;
		if (here)
			here[*nseg] = dma_pins_find(&mr->pins, addr,
						    w->sge[i].len);
		(*nseg)++;
	}
	return 0;
}

/* @here, when every one of its @n pieces is mapped here; else NULL. */
static uint8_t *const *all_here(uint8_t *const *here, int n)
{
	for (int i = 0; i < n; i++)
		if (!here[i])
			return NULL;
	return here;
}

static uint32_t packets(uint32_t len, enum ibv_mtu mtu)
{
	uint32_t bytes = mtu_bytes(mtu);

	return len ? (len + bytes - 1) / bytes : 1;
}

/* The IB RNR timer encoding, in microseconds (wire-req.c's too). */
uint64_t rnr_timer_us(uint8_t code)
{
	static const uint32_t us[32] = {
		655360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640,
		960, 1280, 1920, 2560, 3840, 5120, 7680, 10240, 15360, 20480,
		30720, 40960, 61440, 81920, 122880, 163840, 245760, 327680,
		491520,
	};

	return us[code & 31];
}

/* A timer that never ends: the QP waits for a late answer or a reset. */
#define WAIT_FOREVER	UINT64_MAX

static void wait_for(struct sim_qp *qp, uint64_t ns)
{
	qp->waiting = true;
	qp->wait_until = ns == WAIT_FOREVER ? WAIT_FOREVER : now_ns() + ns;
	list_add_tail(&sim.waiting, &qp->wait_link);
}

void req_stop_waiting(struct sim_qp *qp)
{
	if (!qp->waiting)
		return;
	list_del(&qp->wait_link);
	qp->waiting = false;
}

static enum exec_result fail(struct sim_qp *qp, const struct sim_wqe *w,
			     uint8_t syndrome)
{
	comp_send_error(qp, w->index & 0xffff, syndrome);
	qp->sq.head += w->blocks;
	qp->retry_armed = false;
	qp->ack_lost = false;
	qp->late.valid = false;
	if (qp->type == IBV_QPT_UD || qp->type == IBV_QPT_UC)
		qp_to_sqe(qp);
	else
		qp_to_error(qp);
	return EXEC_ERROR;
}

static enum exec_result done(struct sim_qp *qp, const struct sim_wqe *w,
			     uint32_t byte_len)
{
	if (w->signaled)
		comp_send(qp, w->index & 0xffff, w->op->cqe_opcode, byte_len);
	qp->sq.head += w->blocks;
	qp->retry_armed = false;
	qp->ack_lost = false;
	qp->late.valid = false;
	return EXEC_DONE;
}

/* What an RC requester does with the responder's answer. */
static enum exec_result answer(struct sim_qp *qp, const struct sim_wqe *w,
			       const struct sim_message *msg,
			       enum resp_status st)
{
	bool reliable = qp->type != IBV_QPT_UC;

	if (!qp->retry_armed) {
		qp->retries_left = qp->retry_cnt;
		qp->rnr_retries_left = qp->rnr_retry;
		qp->retry_armed = true;
	}
	switch (st) {
	case RESP_ACK:
		qp->sq_psn = (qp->sq_psn + msg->npkts) & PSN_MASK;
		return EXEC_DONE;
	case RESP_DROP:
		if (!reliable) {
			qp->sq_psn = (qp->sq_psn + msg->npkts) & PSN_MASK;
			return EXEC_DONE;
		}
		/*
		 * No ACK: when the local ACK timer ends, retransmit, or fail
		 * if retry_cnt retransmissions went unanswered too
		 * (retransmit_or_fail).  A timeout of 0 is the IB
		 * specification's infinite timer: no retransmission, ever.
		 */
		qp->ack_lost = true;
		wait_for(qp, qp->timeout ? 4096ULL << qp->timeout : WAIT_FOREVER);
		return EXEC_WAIT;
	case RESP_RNR:
		if (qp->rnr_retry != 7) {
			if (!qp->rnr_retries_left)
				return fail(qp, w, MLX4_CQE_SYNDROME_RNR_RETRY_EXC_ERR);
			qp->rnr_retries_left--;
		}
		wait_for(qp, rnr_timer_us(msg->min_rnr_timer) * 1000);
		return EXEC_WAIT;
	case RESP_NAK_SEQ:
		/*
		 * Retransmit from the PSN the responder expects, at once:
		 * here that is this message again.  A sequence NAK counts
		 * against retry_cnt as a timeout does.
		 */
		if (!qp->retries_left)
			return fail(qp, w, MLX4_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR);
		qp->retries_left--;
		wait_for(qp, 0);
		return EXEC_WAIT;
	case RESP_NAK_INV_REQ:
		return fail(qp, w, MLX4_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR);
	case RESP_NAK_ACCESS:
		return fail(qp, w, MLX4_CQE_SYNDROME_REMOTE_ACCESS_ERR);
	case RESP_NAK_OP:
		return fail(qp, w, MLX4_CQE_SYNDROME_REMOTE_OP_ERR);
	}
	return EXEC_ERROR;
}

/* A link whose port is down, or not yet ACTIVE, carries nothing. */
static bool link_up(const struct sim_qp *qp, const struct sim_port *to)
{
	const struct sim_port *from = hca_port(qp->hca, qp->port);

	if (from && port_active(from) && to && port_active(to))
		return true;
	fault_count_drop();
	return false;
}

/*
 * A connected message crosses the subnet to @dst, and its answer comes
 * back: either may be lost on the way (mlx4sim fault), and the request may
 * arrive twice, the second time as a duplicate.  UC answers nothing.
 */
static enum resp_status transmit(struct sim_qp *qp, struct sim_port *port,
				 struct sim_qp *dst, struct sim_message *msg)
{
	enum fault_action fault;
	enum resp_status st;
	uint32_t delay_ms;

	if (!dst || !link_up(qp, port))
		return RESP_DROP;
	fault = fault_packet(qp, qp->port, &delay_ms);
	if (fault == FAULT_DROP)
		return RESP_DROP;
	/* Held back: for now, as good as lost (flight.c). */
	if (fault == FAULT_DELAY || fault == FAULT_REORDER) {
		flight_hold(qp, dst, msg, false, RESP_DROP,
			    fault == FAULT_DELAY ? delay_ms : 0);
		return RESP_DROP;
	}
	st = resp_deliver(qp, dst, msg);
	flight_passed(qp);
	if (fault == FAULT_DUPLICATE) {
		struct sim_message again = *msg;

		/* Its answer is one the requester no longer waits for. */
		resp_deliver(qp, dst, &again);
	}
	if (qp->type == IBV_QPT_UC || st == RESP_DROP)
		return st;
	fault = fault_packet(dst, dst->port, &delay_ms);
	if (fault == FAULT_DROP)
		return RESP_DROP;	/* the answer was lost */
	if (fault == FAULT_DELAY || fault == FAULT_REORDER) {
		flight_hold(qp, dst, msg, true, st,
			    fault == FAULT_DELAY ? delay_ms : 0);
		return RESP_DROP;
	}
	return st;
}

/*
 * An answer that was held back (flight.c) reaches the requester: it
 * completes the WQE if the requester still waits for that PSN, and is
 * ignored otherwise (the WQE was retransmitted and answered meanwhile).
 */
void req_late_answer(struct sim_qp *qp, const struct sim_message *msg,
		     enum resp_status st)
{
	if (!qp->waiting || !qp->ack_lost || msg->psn != qp->sq_psn ||
	    !qp_can_send(qp))
		return;
	qp->late.valid = true;
	qp->late.psn = msg->psn;
	qp->late.status = st;
	qp->late.min_rnr_timer = msg->min_rnr_timer;
	qp->late.read_pid = msg->read_pid;
	qp->late.read_addr = msg->read_addr;
	qp->late.atomic_orig = msg->atomic_orig;
	qp->ack_lost = false;
	req_stop_waiting(qp);
	req_run(qp);
}

/* The answer for @msg: one that came late, or the message's own trip. */
static enum resp_status exchange(struct sim_qp *qp, struct sim_port *port,
				 struct sim_qp *dst, struct sim_message *msg)
{
	if (!qp->late.valid || qp->late.psn != msg->psn)
		return transmit(qp, port, dst, msg);
	qp->late.valid = false;
	msg->min_rnr_timer = qp->late.min_rnr_timer;
	msg->read_pid = qp->late.read_pid;
	msg->read_addr = qp->late.read_addr;
	msg->atomic_orig = qp->late.atomic_orig;
	return qp->late.status;
}

static const uint8_t *prefetched(const struct sim_qp *qp,
				 const struct sim_wqe *w,
				 const struct dma_seg *seg, int nseg);

/*
 * What every message from @qp carries: the WQE's payload (its bytes when
 * inline or read ahead, where its @seg are mapped here when @here has
 * them all), and who sent it.
 */
static void message(struct sim_qp *qp, const struct sim_wqe *w,
		    const struct dma_seg *seg, uint8_t *const *here, int nseg,
		    struct sim_message *msg)
{
	struct sim_port *port = hca_port(qp->hca, qp->port);

	msg->opcode = w->opcode;
	msg->solicited = w->solicited;
	msg->imm = w->imm;
	msg->length = w->length;
	msg->inline_data = w->is_inline ? w->inline_data :
					  prefetched(qp, w, seg, nseg);
	msg->src_pid = qp->ctx->pid;
	msg->src = seg;
	msg->src_here = here ? all_here(here, nseg) : NULL;
	msg->nsrc = nseg;
	msg->src_qpn = qp->qpn;
	msg->slid = port ? port->lid : 0;
}

/* The results of a READ or an atomic, into the WQE's local buffers. */
static int land_results(struct sim_qp *qp, const struct sim_wqe *w,
			const struct dma_seg *seg, int nseg,
			const struct sim_message *msg)
{
	if (w->op->kind == OP_READ) {
		struct dma_seg remote = { msg->read_addr, w->length };

		return dma_copy(msg->read_pid, &remote, 1, qp->ctx->pid, seg,
				nseg, w->length);
	}
	if (w->op->kind == OP_ATOMIC) {
		uint64_t orig = htobe64(msg->atomic_orig);

		return dma_writev(qp->ctx->pid, seg, nseg, &orig, sizeof(orig));
	}
	return 0;
}

/* The ACK timer ended: false when the WQE failed for good. */
static bool retransmit_or_fail(struct sim_qp *qp, const struct sim_wqe *w)
{
	if (!qp->ack_lost)
		return true;
	qp->ack_lost = false;
	if (!qp->retries_left) {
		fail(qp, w, MLX4_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR);
		return false;
	}
	qp->retries_left--;
	return true;
}

static bool ether_port(const struct sim_qp *qp)
{
	const struct sim_port *port = hca_port(qp->hca, qp->port);

	return port && port->link_layer == IBV_LINK_LAYER_ETHERNET;
}

/*
 * Where a connected QP's packets go: to the LID of its path on
 * InfiniBand, to the MAC the kernel resolved for it on Ethernet.
 */
static struct sim_port *peer_port(const struct sim_qp *qp)
{
	return ether_port(qp) ? port_by_mac(qp->path.dmac) :
				port_by_lid(qp->path.dlid);
}

/*
 * A peer beyond the uplink: the WQE goes out as packets (wire-req.c) and
 * completes when they are answered; it waits at the head while the QP has
 * as much outstanding as it may.
 */
static enum exec_result wire_exec(struct sim_qp *qp, struct sim_wqe *w,
				  const struct dma_seg *seg, int nseg,
				  const struct sim_message *msg)
{
	struct wire_post p = { w->index, w->signaled, w->fenced, w->op,
			       seg, nseg };

	if (wire_post(qp, &p, msg))
		return EXEC_WAIT;
	qp->sq.head += w->blocks;
	return EXEC_DONE;
}

static enum exec_result exec_connected(struct sim_qp *qp, struct sim_wqe *w)
{
	struct dma_seg seg[CX3_MAX_SGE];
	uint8_t *here[CX3_MAX_SGE];
	struct sim_message msg = {};
	bool atomic = w->op->kind == OP_ATOMIC;
	bool writes_local = atomic || w->op->kind == OP_READ;
	struct sim_port *port;
	struct sim_qp *dst;
	enum exec_result r;
	int nseg = 0;

	if (!retransmit_or_fail(qp, w))
		return EXEC_ERROR;
	if (w->length > CX3_MAX_MSG_SZ)
		return fail(qp, w, MLX4_CQE_SYNDROME_LOCAL_LENGTH_ERR);
	if (atomic && w->length != 8)
		return fail(qp, w, MLX4_CQE_SYNDROME_LOCAL_LENGTH_ERR);
	if (!w->is_inline &&
	    local_segs(qp, w, writes_local ? MR_LOCAL_WRITE : MR_LOCAL_READ,
		       seg, here, &nseg))
		return fail(qp, w, MLX4_CQE_SYNDROME_LOCAL_PROT_ERR);

	message(qp, w, seg, here, nseg, &msg);
	msg.psn = qp->sq_psn;
	msg.npkts = atomic ? 1 : packets(w->length, qp->mtu);
	msg.raddr = w->raddr;
	msg.rkey = w->rkey;
	msg.swap_add = w->swap_add;
	msg.compare = w->compare;
	msg.sl = qp->path.sl;
	msg.ethernet = ether_port(qp);
	if (msg.ethernet && qp->path.vlan != NO_VLAN) {
		msg.has_vlan = true;
		msg.vlan_tci = qp->path.vlan | (qp->path.sl & 7) << 13;
	}
	msg.path_bits = qp->path.src_path_bits;
	msg.xrc_srqn = qp->type == IBV_QPT_XRC_SEND ? w->remote_srqn : 0;

	port = peer_port(qp);
	if (!port && msg.ethernet && wire_remote(qp, qp->path.dmac))
		return wire_exec(qp, w, seg, nseg, &msg);
	dst = port ? qp_by_num(port->hca, qp->dest_qpn) : NULL;
	r = answer(qp, w, &msg, exchange(qp, port, dst, &msg));
	if (r == EXEC_DONE)
		r = land_results(qp, w, seg, nseg, &msg) ?
		    fail(qp, w, MLX4_CQE_SYNDROME_LOCAL_PROT_ERR) :
		    done(qp, w, w->length);
	if (dst)
		resp_finish(dst);
	return r;
}

/*
 * The 40 bytes a UD receive gets ahead of the payload: the GRH on
 * InfiniBand and RoCE v1; on RoCE v2 the IP header, IPv6 with UDP as its
 * next header, or IPv4 in the last 20 bytes (the first 20 are zero).
 */
static void build_grh(struct sim_qp *qp, const struct mlx4_av *av,
		      const struct sim_wqe *w, uint8_t grh[GRH_LEN])
{
	struct sim_port *port = hca_port(qp->hca, qp->port);
	uint32_t tclass_flow = be32toh(av->sl_tclass_flowlabel) & 0x0fffffff;
	/*
	 * What follows the network header, as the packet carries it: BTH,
	 * DETH, ImmDt, the payload padded to 4 bytes, ICRC.
	 */
	uint16_t transport = 12 + 8 + (w->op->flags & OPF_IMM ? 4 : 0) +
			     w->length + (-w->length & 3) + 4;
	bool v2 = port->link_layer == IBV_LINK_LAYER_ETHERNET &&
		  av->gid_index < port->ngids &&
		  port->gids[av->gid_index].type == IBV_GID_TYPE_ROCE_V2;
	bool ipv4 = v2 && gid_is_ipv4(av->dgid);
	uint8_t sgid[16];

	port_gid(port, av->gid_index, sgid);
	memset(grh, 0, GRH_LEN);
	roce_net_header(ipv4 ? grh + 20 : grh, v2, ipv4, sgid, av->dgid,
			tclass_flow >> 20, tclass_flow & 0xfffff,
			av->hop_limit, transport);
}

/*
 * Whether a datagram goes to a multicast group: on InfiniBand by its
 * multicast DLID, on Ethernet by its group MAC (the low bit of the first
 * byte), which the switch floods to every port.
 */
static bool to_group(const struct sim_qp *qp, const struct sim_wqe *w,
		     uint16_t dlid)
{
	return ether_port(qp) ? w->dgram.mac[0] & 1 : lid_is_multicast(dlid);
}

/* The subnet and the Ethernet switch are apart: each has its groups. */
/*
 * Whether member @m gets @from's packet to @dgid: not when it is the
 * sender and blocks its own multicast (mlx4_ib attaches such a QP with
 * loopback blocked: mlx4_multicast_attach's block_mcast_loopback).
 */
static bool group_member(const struct sim_mcast *m, const struct sim_qp *from,
			 const uint8_t *dgid)
{
	return !memcmp(m->gid, dgid, 16) &&
	       ether_port(m->qp) == ether_port(from) &&
	       !(m->qp == from && from->block_self_mcast);
}

/* A multicast packet reaches one member, as @fault has it. */
static void deliver_copy(struct sim_qp *qp, struct sim_qp *dst,
			 struct sim_message *msg, enum fault_action fault,
			 uint32_t delay_ms)
{
	if (fault == FAULT_DELAY || fault == FAULT_REORDER) {
		flight_hold(qp, dst, msg, false, RESP_DROP,
			    fault == FAULT_DELAY ? delay_ms : 0);
		return;
	}
	resp_deliver(qp, dst, msg);
	if (fault == FAULT_DUPLICATE)
		resp_deliver(qp, dst, msg);
}

/* The first two bytes of a WQE's payload, read as the device fetches it. */
static int payload_head(struct sim_qp *qp, const struct dma_seg *seg,
			int nseg, const struct sim_message *msg, uint8_t head[2])
{
	struct dma_seg part[CX3_MAX_SGE];
	int n;

	if (msg->inline_data) {
		memcpy(head, msg->inline_data, 2);
		return 0;
	}
	n = dma_slice(seg, nseg, 0, 2, part);
	return n < 0 ? -1 : dma_readv(qp->ctx->pid, part, n, head);
}

/*
 * An IPoIB datagram on an InfiniBand port (IB_DEVICE_UD_IP_CSUM, as
 * mlx4_ib advertises it where the firmware has IPoIB checksums): the
 * device fills in the checksums the WQE asks for, and the receiver's CQE
 * says whether the IPv4 header's and the TCP/UDP checksums hold.  It
 * goes by the encapsulation header's ethertype: any other datagram
 * passes as it is.  0, or the syndrome of a payload it cannot read.
 */
static uint8_t ud_ipoib(struct sim_qp *qp, const struct sim_wqe *w,
			const struct dma_seg *seg, int nseg,
			struct sim_message *msg)
{
	static uint8_t payload[IPOIB_MAX_DATAGRAM];
	bool ip = w->flags & MLX4_WQE_CTRL_IP_HDR_CSUM;
	bool l4 = w->flags & MLX4_WQE_CTRL_TCP_UDP_CSUM;
	uint8_t head[2];

	if (w->length < 4)
		return 0;
	if (payload_head(qp, seg, nseg, msg, head))
		return MLX4_CQE_SYNDROME_LOCAL_PROT_ERR;
	if (!(head[0] == 0x08 && head[1] == 0x00) &&
	    !(head[0] == 0x86 && head[1] == 0xdd && (ip || l4)))
		return 0;
	if (msg->inline_data)
		memcpy(payload, msg->inline_data, w->length);
	else if (dma_readv(qp->ctx->pid, seg, nseg, payload))
		return MLX4_CQE_SYNDROME_LOCAL_PROT_ERR;
	ipoib_fill_checksums(payload, w->length, ip, l4);
	msg->csum_status = ipoib_checksum_status(payload, w->length);
	msg->inline_data = payload;
	return 0;
}

static enum exec_result exec_ud(struct sim_qp *qp, struct sim_wqe *w)
{
	const struct mlx4_av *av = &w->dgram.av;
	uint32_t port_pd = be32toh(av->port_pd);
	uint16_t dlid = be16toh(av->dlid);
	struct dma_seg seg[CX3_MAX_SGE];
	uint8_t *here[CX3_MAX_SGE];
	struct sim_message msg = {};
	int nseg = 0;

	/* The port byte also holds the RoCE VLAN and multicast bits. */
	if ((port_pd & NUM24_MASK) != qp->pd->pdn ||
	    (port_pd >> 24 & MLX4_AV_PORT_MASK) != qp->port)
		return fail(qp, w, MLX4_CQE_SYNDROME_LOCAL_QP_OP_ERR);
	if (w->length > mtu_bytes(IBV_MTU_4096))
		return fail(qp, w, MLX4_CQE_SYNDROME_LOCAL_LENGTH_ERR);
	if (!w->is_inline &&
	    local_segs(qp, w, MR_LOCAL_READ, seg, here, &nseg))
		return fail(qp, w, MLX4_CQE_SYNDROME_LOCAL_PROT_ERR);

	message(qp, w, seg, here, nseg, &msg);
	if (ether_port(qp)) {
		/* RoCE: a 3-bit priority, and no LIDs or path bits. */
		msg.ethernet = true;
		msg.sl = be32toh(av->sl_tclass_flowlabel) >> 29;
		/* The address handle's VLAN: its tag in the datagram segment. */
		if (port_pd & MLX4_AV_VLAN_PRESENT) {
			msg.has_vlan = true;
			msg.vlan_tci = be16toh(w->dgram.vlan);
		}
	} else {
		uint8_t syndrome = ud_ipoib(qp, w, seg, nseg, &msg);

		if (syndrome)
			return fail(qp, w, syndrome);
		msg.sl = be32toh(av->sl_tclass_flowlabel) >> 28;
		msg.path_bits = av->g_slid & 0x7f;
	}
	msg.qkey = be32toh(w->dgram.qkey);
	/* A Q_Key with the high bit set means "the QP's own". */
	if (msg.qkey & 0x80000000)
		msg.qkey = qp->qkey;
	msg.has_grh = av->g_slid & 0x80;
	if (msg.has_grh)
		build_grh(qp, av, w, msg.grh);

	if (to_group(qp, w, dlid)) {
		struct sim_mcast *m;
		uint32_t delay_ms;
		/* The switch copies the packet: a fault acts on every copy. */
		enum fault_action fault = fault_packet(qp, qp->port, &delay_ms);

		if (msg.has_grh && fault != FAULT_DROP)
			list_for_each(&sim.mcast, m, struct sim_mcast, link)
				if (group_member(m, qp, av->dgid) &&
				    link_up(qp, hca_port(m->qp->hca, m->qp->port)))
					deliver_copy(qp, m->qp, &msg, fault,
						     delay_ms);
		if (fault == FAULT_NONE || fault == FAULT_DUPLICATE)
			flight_passed(qp);
		done(qp, w, w->length);
		list_for_each(&sim.mcast, m, struct sim_mcast, link)
			resp_finish(m->qp);
	} else {
		struct sim_port *port = ether_port(qp) ?
			port_by_mac(w->dgram.mac) : port_by_lid(dlid);
		struct sim_qp *dst = port ?
			qp_by_num(port->hca, be32toh(w->dgram.dqpn)) : NULL;
		uint32_t delay_ms;
		enum fault_action fault = FAULT_NONE;

		if (!port && ether_port(qp) && wire_remote(qp, w->dgram.mac))
			wire_send_ud(qp, w->dgram.mac, be32toh(w->dgram.dqpn),
				     &msg);
		if (dst && link_up(qp, port))
			fault = fault_packet(qp, qp->port, &delay_ms);
		else
			dst = NULL;
		if (dst && (fault == FAULT_DELAY || fault == FAULT_REORDER)) {
			flight_hold(qp, dst, &msg, false, RESP_DROP,
				    fault == FAULT_DELAY ? delay_ms : 0);
			dst = NULL;
		}
		/* Datagrams have no PSN check: a duplicate arrives twice. */
		if (dst && fault != FAULT_DROP) {
			resp_deliver(qp, dst, &msg);
			flight_passed(qp);
		}
		if (dst && fault == FAULT_DUPLICATE)
			resp_deliver(qp, dst, &msg);
		done(qp, w, w->length);
		if (dst)
			resp_finish(dst);
	}
	/* Datagrams are not acknowledged: sent is done. */
	return EXEC_DONE;
}

static enum exec_result exec_local(struct sim_qp *qp, struct sim_wqe *w)
{
	uint32_t access = 0, flags1 = be32toh(w->bind.flags1);
	uint8_t syndrome;

	if (w->op->kind == OP_NOP)
		return done(qp, w, 0);
	if (w->op->kind == OP_LOCAL_INV) {
		syndrome = mw_invalidate(qp->hca, qp->pd, w->inval_key);
		return syndrome ? fail(qp, w, syndrome) : done(qp, w, 0);
	}
	if (flags1 & MLX4_WQE_MW_REMOTE_READ)
		access |= IBV_ACCESS_REMOTE_READ;
	if (flags1 & MLX4_WQE_MW_REMOTE_WRITE)
		access |= IBV_ACCESS_REMOTE_WRITE;
	if (flags1 & MLX4_WQE_MW_ATOMIC)
		access |= IBV_ACCESS_REMOTE_ATOMIC;
	if (be32toh(w->bind.flags2) & MLX4_WQE_BIND_ZERO_BASED)
		access |= IBV_ACCESS_ZERO_BASED;
	syndrome = mw_bind(qp, be32toh(w->bind.new_rkey),
			   be32toh(w->bind.lkey), be64toh(w->bind.addr),
			   be64toh(w->bind.length), access);
	return syndrome ? fail(qp, w, syndrome) : done(qp, w, 0);
}

/*
 * A raw WQE's bytes, gathered into @buf: 0, or the syndrome.  The driver
 * names the frame's destination MAC (@dmac: the frame's, or the LSO
 * headers') in the control segment too (bytes 0-1 of srcrb_flags, then
 * the immediate), which the adapter uses to loop a frame back to its own
 * ports: two MACs that differ steer a frame wrong.  A driver that wants
 * no loopback leaves the MAC zero (mlx4_en without its HW loopback flag,
 * DPDK's mlx4 PMD on a physical function): that is no breach.
 */
static bool ctrl_mac_zero(const struct sim_wqe *w)
{
	static const uint8_t zero[6];

	return !memcmp(w->ctrl_mac, zero, sizeof(zero));
}

static uint8_t gather_raw(struct sim_qp *qp, struct sim_wqe *w, uint8_t *buf,
			  const uint8_t *dmac)
{
	struct dma_seg seg[CX3_MAX_SGE];
	int nseg = 0;

	if (w->is_inline)
		memcpy(buf, w->inline_data, w->length);
	else if (local_segs(qp, w, MR_LOCAL_READ, seg, NULL, &nseg) ||
		 dma_readv(qp->ctx->pid, seg, nseg, buf))
		return MLX4_CQE_SYNDROME_LOCAL_PROT_ERR;
	if (!ctrl_mac_zero(w) && memcmp(w->ctrl_mac, dmac, 6))
		breach(qp->ctx, "QP 0x%x WQE 0x%x: the control segment's MAC %02x:%02x:%02x:%02x:%02x:%02x is not the frame's",
		       qp->qpn, w->index, w->ctrl_mac[0], w->ctrl_mac[1],
		       w->ctrl_mac[2], w->ctrl_mac[3], w->ctrl_mac[4],
		       w->ctrl_mac[5]);
	return 0;
}

/* One frame of a raw QP onto the wire. */
static void send_frame(struct sim_qp *qp, struct sim_wqe *w,
		       const uint8_t *frame, size_t len)
{
	struct sim_message msg = {};

	message(qp, w, NULL, NULL, 0, &msg);
	msg.length = len;
	msg.inline_data = frame;
	msg.ethernet = true;
	msg.no_loopback = ctrl_mac_zero(w);
	raw_transmit(qp, &msg, frame, len);
}

/* A raw packet QP's send: the gathered bytes are an Ethernet frame. */
static enum exec_result exec_raw(struct sim_qp *qp, struct sim_wqe *w)
{
	static uint8_t frame[RAW_MAX_FRAME];
	uint8_t syndrome;

	if (w->length < 14 || w->length > RAW_MAX_FRAME)
		return fail(qp, w, MLX4_CQE_SYNDROME_LOCAL_LENGTH_ERR);
	syndrome = gather_raw(qp, w, frame, frame);
	if (syndrome)
		return fail(qp, w, syndrome);
	if (w->ins_vlan) {
		if (w->length + 4 > RAW_MAX_FRAME)
			return fail(qp, w, MLX4_CQE_SYNDROME_LOCAL_LENGTH_ERR);
		memmove(frame + 16, frame + 12, w->length - 12);
		frame[12] = 0x81, frame[13] = 0x00;
		frame[14] = w->vlan_tci >> 8, frame[15] = w->vlan_tci;
		w->length += 4;
	}
	raw_fill_checksums(frame, w->length,
			   w->flags & MLX4_WQE_CTRL_IP_HDR_CSUM,
			   w->flags & MLX4_WQE_CTRL_TCP_UDP_CSUM);
	send_frame(qp, w, frame, w->length);
	return done(qp, w, w->length);
}

/*
 * An LSO send: the payload, cut in segments of w->mss bytes, each behind
 * its copy of the headers (raw_lso_segment), as frames of their own.
 * Headers that are not TCP over IP, or a payload past the device's limit,
 * fail the WQE.
 */
static enum exec_result exec_lso(struct sim_qp *qp, struct sim_wqe *w)
{
	static uint8_t payload[CX3_MAX_GSO_SIZE], frame[RAW_MAX_FRAME];
	uint32_t off = 0;
	uint16_t index = 0;
	uint8_t syndrome;

	if (w->length > sizeof(payload) || !w->mss || w->hdr_len < 14 ||
	    w->hdr_len + w->mss > RAW_MAX_FRAME)
		return fail(qp, w, MLX4_CQE_SYNDROME_LOCAL_LENGTH_ERR);
	syndrome = gather_raw(qp, w, payload, w->hdr);
	if (syndrome)
		return fail(qp, w, syndrome);
	do {
		uint32_t n = MIN(w->mss, w->length - off);
		size_t len = raw_lso_segment(w->hdr, w->hdr_len, payload + off,
					     n, off, index++,
					     off + n == w->length, frame);

		if (!len)
			return fail(qp, w, MLX4_CQE_SYNDROME_LOCAL_QP_OP_ERR);
		send_frame(qp, w, frame, len);
		off += n;
	} while (off < w->length);
	return done(qp, w, w->length);
}

static enum exec_result execute(struct sim_qp *qp, struct sim_wqe *w)
{
	if (!opcode_allowed(w->op, qp->type))
		return fail(qp, w, MLX4_CQE_SYNDROME_LOCAL_QP_OP_ERR);
	switch (w->op->kind) {
	case OP_NOP:
	case OP_BIND:
	case OP_LOCAL_INV:
		return exec_local(qp, w);
	default:
		break;
	}
	if (qp->type == IBV_QPT_UD)
		return exec_ud(qp, w);
	if (w->opcode == MLX4_OPCODE_LSO)
		return exec_lso(qp, w);
	if (qp->type == IBV_QPT_RAW_PACKET)
		return exec_raw(qp, w);
	return exec_connected(qp, w);
}

/*
 * The local buffers of RDMA READs and atomics still in flight.  The
 * adapter runs a QP's WQEs in a pipeline: one after a READ or an atomic
 * goes out without waiting for its answer unless it is fenced, so if it
 * gathers from where the answer lands, it sends what was there before.
 * Here a READ lands before the next WQE runs, so the rule is checked
 * instead: among WQEs handed over together (the driver posted the later
 * before the earlier could complete), an unfenced one may not gather
 * from what an earlier READ or atomic scatters to.
 */
static struct in_flight {
	int n;
	struct {
		uint64_t addr, len;
		uint32_t index;
	} buf[SQ_BATCH * CX3_MAX_SGE];
} in_flight;

static bool overlap(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen)
{
	return a < b + blen && b < a + alen;
}

static bool gathers_local(const struct sim_wqe *w)
{
	return !w->is_inline &&
	       (w->op->kind == OP_SEND || w->op->kind == OP_WRITE);
}

static void check_fence(struct sim_qp *qp, const struct sim_wqe *w)
{
	if (w->fenced) {
		in_flight.n = 0;
		return;
	}
	if (!gathers_local(w))
		return;
	for (int i = 0; i < w->nsge; i++)
		for (int j = 0; j < in_flight.n; j++)
			if (overlap(w->sge[i].addr, w->sge[i].len,
				    in_flight.buf[j].addr, in_flight.buf[j].len)) {
				breach(qp->ctx, "QP 0x%x WQE 0x%x: gathers from where the RDMA READ or atomic of WQE 0x%x lands, with no fence: the adapter may send the bytes from before it",
				       qp->qpn, w->index, in_flight.buf[j].index);
				return;
			}
}

/* A READ or an atomic ran: its answer is in flight for the WQEs after. */
static void note_in_flight(const struct sim_wqe *w)
{
	if (w->op->kind != OP_READ && w->op->kind != OP_ATOMIC)
		return;
	for (int i = 0; i < w->nsge; i++) {
		if (in_flight.n == (int)ARRAY_SIZE(in_flight.buf))
			return;
		in_flight.buf[in_flight.n].addr = w->sge[i].addr;
		in_flight.buf[in_flight.n].len = w->sge[i].len;
		in_flight.buf[in_flight.n++].index = w->index;
	}
}

/*
 * Payloads read ahead.  A small payload read from the sender's memory is
 * a transfer of its own (about 2 us on the machine measured, half the
 * device's cost of a message in a stream); the WQEs of one fetch were all
 * handed over before any of them completed, so the device may read their
 * payloads together, as the adapter's pipeline does: in one transfer,
 * where a buffer sent again and again is read once (a payload at the
 * same memory as the last one read shares its bytes: comparing with every
 * earlier one cost 500 instructions a message in a fetch of 64) and
 * memory that follows on is one piece.  The look ahead stops at a WQE
 * that is not a plain SEND or WRITE (a READ or an atomic lands in local
 * memory, a bind or an invalidation changes keys) or that does not
 * parse, and reports nothing: each WQE is parsed and checked again when
 * it runs, and uses the bytes read ahead only if its memory is the same.
 */
#define PREFETCH_MAX_MSG	4096	/* of one WQE */

struct prefetch_entry {
	int nseg;			/* -1: nothing read for this WQE */
	struct dma_seg seg[CX3_MAX_SGE];
	uint32_t off;			/* of its payload in data */
};

static struct prefetch {
	const struct sim_qp *qp;	/* NULL: nothing read ahead */
	uint32_t first;		/* the head; entry[k]: the WQE k blocks on */
	int n;
	struct prefetch_entry entry[SQ_BATCH];
	uint8_t data[SQ_BATCH * PREFETCH_MAX_MSG];
} prefetch;

static bool same_segs(const struct dma_seg *a, int na,
		      const struct dma_seg *b, int nb)
{
	if (na != nb)
		return false;
	for (int i = 0; i < na; i++)
		if (a[i].addr != b[i].addr || a[i].len != b[i].len)
			return false;
	return true;
}

/* The payload of @w read ahead from @seg, or NULL. */
static const uint8_t *prefetched(const struct sim_qp *qp,
				 const struct sim_wqe *w,
				 const struct dma_seg *seg, int nseg)
{
	uint32_t k = w->index - prefetch.first;

	if (prefetch.qp != qp || k >= (uint32_t)prefetch.n || !nseg ||
	    !same_segs(prefetch.entry[k].seg, prefetch.entry[k].nseg, seg,
		       nseg))
		return NULL;
	return prefetch.data + prefetch.entry[k].off;
}

/*
 * Add the payload of @w, at its entry's segments, to the look ahead's
 * @piece list, or share the bytes of entry @last (the last one read
 * ahead, -1 for none) when its memory is the same; false when it does not
 * fit.
 */
static bool prefetch_add(int k, int last, const struct sim_wqe *w,
			 uint32_t *used, struct dma_piece *piece, int *pieces)
{
	struct prefetch_entry *e = &prefetch.entry[k];

	if (last >= 0 && same_segs(prefetch.entry[last].seg,
				   prefetch.entry[last].nseg, e->seg, e->nseg)) {
		e->off = prefetch.entry[last].off;
		return true;
	}
	if (*used + w->length > sizeof(prefetch.data) ||
	    *pieces + e->nseg > DMA_PIECES_MAX)
		return false;
	e->off = *used;
	for (int i = 0; i < e->nseg; i++) {
		struct dma_piece *last = *pieces ? &piece[*pieces - 1] : NULL;

		/* The local bytes follow on always: the remote ones may. */
		if (last && last->addr + last->len == e->seg[i].addr)
			last->len += e->seg[i].len;
		else
			piece[(*pieces)++] = (struct dma_piece){
				e->seg[i].addr, prefetch.data + *used,
				e->seg[i].len };
		*used += e->seg[i].len;
	}
	return true;
}

/*
 * Read ahead the payloads of the @n WQEs fetched into @raw.  Not for a
 * process whose pinned pages the daemon maps (its send queue is): there
 * each payload is a copy, which reading ahead would only make twice.
 */
static void prefetch_payloads(struct sim_qp *qp, const uint8_t *raw, int n)
{
	static struct sim_wqe w;
	struct dma_piece piece[DMA_PIECES_MAX];
	size_t stride = 1u << qp->sq.wqe_shift;
	uint32_t used = 0;
	int pieces = 0, last = -1, i, k;

	prefetch.qp = NULL;
	if (qp->type == IBV_QPT_RAW_PACKET ||
	    dma_pins_find(&qp->buf_pins, qp->buf + qp->sq.offset, stride))
		return;
	sim.speculating = true;
	/* An entry for each WQE, at its first block's offset from the head. */
	for (i = 0, k = 0; i < n; i++, k += w.blocks) {
		struct prefetch_entry *e = &prefetch.entry[k];

		w.index = qp->sq.head + k;
		if (parse_wqe(qp, raw + k * stride, &w) ||
		    !opcode_allowed(w.op, qp->type) ||
		    (w.op->kind != OP_SEND && w.op->kind != OP_WRITE))
			break;
		e->nseg = -1;
		if (w.is_inline || !w.length || w.length > PREFETCH_MAX_MSG)
			continue;
		if (local_segs(qp, &w, MR_LOCAL_READ, e->seg, NULL, &e->nseg) ||
		    !prefetch_add(k, last, &w, &used, piece, &pieces))
			break;
		last = k;
	}
	sim.speculating = false;
	if (!pieces || dma_read_ordered(qp->ctx->pid, piece, pieces))
		return;
	prefetch.qp = qp;
	prefetch.first = qp->sq.head;
	prefetch.n = k;
}

enum run_end {
	RUN_ALL,		/* every WQE fetched ran (or the QP cannot send) */
	RUN_STOPPED,		/* an error, a wait for a retry */
	RUN_SHARE,		/* the pass's share of payload is used */
};

/*
 * Run the @n WQEs fetched into @raw, as far as a pass's share of payload
 * goes: a WQE that starts below SQ_PASS_BYTES runs whole.
 */
static enum run_end run_fetched(struct sim_qp *qp, const uint8_t *raw, int n)
{
	static struct sim_wqe w;
	size_t stride = 1u << qp->sq.wqe_shift;
	const uint8_t *wqe = raw;
	uint64_t bytes = 0;

	in_flight.n = 0;
	for (int i = 0; i < n && qp_can_send(qp); i++, wqe += w.blocks * stride) {
		if (bytes >= SQ_PASS_BYTES)
			return RUN_SHARE;
		w.index = qp->sq.head;
		TRACE(trace_send_wqe(qp, w.index, wqe,
				     sq_wqe_blocks(qp, wqe) * stride));
		if (parse_wqe(qp, wqe, &w)) {
			fail(qp, &w, MLX4_CQE_SYNDROME_LOCAL_QP_OP_ERR);
			return RUN_STOPPED;
		}
		check_fence(qp, &w);
		if (execute(qp, &w) != EXEC_DONE)
			return RUN_STOPPED;
		note_in_flight(&w);
		bytes += w.length;
	}
	return RUN_ALL;
}

/*
 * Run one fetch of the send queue, as long as the QP can send and waits
 * for no retry: a send queue's share of a pass (at most SQ_BATCH WQEs
 * and SQ_PASS_BYTES of payload).  A client that posts as fast as the
 * device runs its queue must not keep the device from everyone else's:
 * what the share left, if the fetch found its window full or the
 * payload ran out, waits for the next pass, the QP busy (doorbell.c).
 * In ERROR, what the driver posts is flushed.  Returns whether the QP
 * is left busy.
 *
 * A window not full was empty past its WQEs: one handed over after that
 * look comes with a doorbell rung after it (the driver writes the WQE,
 * then rings), which the next scan takes.  Looking again at once would
 * cost a transfer for each doorbell.
 */
bool req_run(struct sim_qp *qp)
{
	static uint8_t raw[SQ_FETCH_BYTES];
	bool more = false;
	int n;

	if (!qp->sq.wqe_cnt)
		return false;
	if (qp->state == IBV_QPS_ERR || qp->state == IBV_QPS_SQE) {
		comp_flush_sq(qp);
		return false;
	}
	if (qp_can_send(qp) && !qp->waiting &&
	    (n = sq_fetch(qp, raw, &more)) > 0) {
		sim.work_done = true;
		sim.progress++;		/* a run of big WRITEs writes no CQE */
		sim.fetched += n;
		prefetch_payloads(qp, raw, n);
		/* (A run that stopped early stopped for a reason of its own.) */
		switch (run_fetched(qp, raw, n)) {
		case RUN_STOPPED:
			more = false;
			break;
		case RUN_SHARE:
			more = true;
			break;
		case RUN_ALL:
			break;
		}
		prefetch.qp = NULL;	/* read for this fetch only */
	}
	cq_flush();
	if (more)
		sq_busy(qp);
	return more;
}

/*
 * Retry what waited long enough.  Running one QP may take others off the
 * list (a responder that fails), so each expired QP is looked up afresh.
 */
void req_run_waiting(uint64_t now, uint64_t *next_deadline)
{
	struct sim_qp *qp, *expired;

	flight_run(now, next_deadline);
	do {
		expired = NULL;
		list_for_each(&sim.waiting, qp, struct sim_qp, wait_link) {
			if (qp->wait_until <= now) {
				expired = qp;
				break;
			}
		}
		if (expired) {
			req_stop_waiting(expired);
			req_run(expired);
		}
	} while (expired);
	list_for_each(&sim.waiting, qp, struct sim_qp, wait_link)
		*next_deadline = MIN(*next_deadline, qp->wait_until);
}

static struct sim_qp *qp_at(int hca, uint32_t qpn)
{
	return hca >= 0 && hca < sim.opt.nhcas ? qp_by_num(&sim.hca[hca], qpn) :
						 NULL;
}

/*
 * A packet the fabric held back (fabric/flight.c) arrives: a request at
 * its responder, whose answer goes back at once; an answer at its
 * requester.  A packet whose QP is gone is lost.
 */
void packet_lands(struct sim_held *f)
{
	struct sim_qp *src = qp_at(f->src_hca, f->src_qpn);
	struct sim_qp *dst = qp_at(f->dst_hca, f->dst_qpn);
	enum resp_status st;

	if (!src || !dst)
		return;			/* its QP is gone: lost */
	if (f->answer) {
		req_late_answer(src, &f->msg, f->status);
		return;
	}
	st = resp_deliver(src, dst, &f->msg);
	/*
	 * The requester completes the WQE before an error of the
	 * responder flushes it, as when they are one QP (resp_finish).
	 */
	if (src->type != IBV_QPT_UD && src->type != IBV_QPT_UC &&
	    st != RESP_DROP)
		req_late_answer(src, &f->msg, st);
	resp_finish(dst);
}
