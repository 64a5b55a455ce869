/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A QP's state on the wire (wire-req.c, wire-resp.c): across the uplink
 * an RC connection is what the IB specification makes it, packets with
 * PSNs, acknowledged, retransmitted and answered again from the
 * responder's records, where between the simulator's own ports a message
 * crosses whole.
 */
#ifndef MLX4SIM_ADAPTER_WIRE_H
#define MLX4SIM_ADAPTER_WIRE_H

#include "adapter.h"
#include "../fabric/roce.h"

#define WIRE_WQES	32	/* WQEs a QP keeps outstanding */
#define WIRE_PKTS	256	/* PSNs sent past the last acknowledged */
#define WIRE_ACK_EVERY	64	/* a packet in so many asks for an ACK */
#define WIRE_INLINE	1024	/* a payload kept with its WQE */
#define WIRE_RECORDS	16	/* responder resources: max_dest_rd_atomic */

/* A WQE sent and not yet acknowledged, with what sending it again takes. */
struct wire_wqe {
	uint32_t index;
	bool signaled, solicited;
	const struct sim_opcode *op;
	uint8_t opcode;
	uint32_t imm, xrc_srqn;
	uint32_t psn, npkts;
	uint32_t length;
	uint64_t raddr;
	uint32_t rkey;
	uint64_t swap_add, compare;
	pid_t pid;
	int nseg;
	struct dma_seg seg[CX3_MAX_SGE];
	bool has_inline;
	uint8_t inline_data[WIRE_INLINE];
	uint32_t sent;			/* packets sent (READ: asked for) */
	uint32_t got;			/* READ: response packets taken */
};

/* The responder's record of a READ or an atomic, to answer it again. */
struct wire_record {
	bool valid;
	uint8_t kind;			/* enum sim_op_kind */
	uint32_t psn, npkts;
	pid_t pid;
	uint64_t addr;
	uint32_t length;
	uint64_t atomic_orig;
};

struct wire_qp {
	struct sim_qp *qp;
	struct list_node link;		/* all of them, for their timers */

	/* requester */
	struct wire_wqe wqe[WIRE_WQES];
	int first, count;
	uint32_t acked;			/* the first PSN not acknowledged */
	int rd_atomic;			/* READs and atomics outstanding */
	uint64_t ack_due;		/* the local ACK timer; 0: off */
	uint64_t resend_at;		/* after an RNR NAK; 0: none */
	uint32_t resend_psn;
	uint8_t retries_left, rnr_retries_left;
	bool read_gap;			/* a READ asked for again, from a gap */

	/* responder */
	uint32_t msn;
	bool nak_sent;			/* a sequence NAK, once a gap */
	bool in_msg;			/* a SEND or WRITE between packets */
	uint32_t msg_psn;		/* its first PSN */
	bool msg_write;			/* a WRITE, of ... */
	uint32_t dma_len;		/* ... the length its RETH said */
	struct sim_message msg;
	uint8_t *buf;			/* its payload so far */
	size_t buf_size, got;
	struct wire_record rec[WIRE_RECORDS];
	int rec_next;
};

struct wire_qp *wire_of(struct sim_qp *qp);
void wire_emit(struct sim_qp *qp, const struct roce_path *a,
	       const struct roce_packet *pkt);
void wire_answer(struct wire_qp *wq, const struct roce_packet *pkt);

static inline int32_t psn_diff(uint32_t a, uint32_t b)
{
	return (int32_t)((a - b) << 8) >> 8;
}

#endif
