/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the device knows of each send WQE opcode: the QPs that may post
 * it, the segments between the control segment and the data, what it
 * does, what it makes the responder complete and what its own CQE says.
 * One table (opcode.c), indexed by the WQE's 5-bit opcode; the opcodes
 * are those of the installed <infiniband/mlx4dv.h>.
 */
#ifndef MLX4SIM_OPCODE_H
#define MLX4SIM_OPCODE_H

#include "../sim.h"

#define WQE_OPCODE_MASK	0x1f	/* of the control segment's owner_opcode */

enum sim_op_kind {
	OP_INVALID,		/* no opcode a ConnectX-3 runs from a user QP */
	OP_NOP,
	OP_SEND,
	OP_WRITE,
	OP_READ,
	OP_ATOMIC,
	OP_BIND,		/* bind a memory window */
	OP_LOCAL_INV,		/* invalidate a local key */
};

/* The segments a WQE carries between its control segment and its data. */
enum sim_op_seg {
	SEG_RADDR	= 1 << 0,	/* struct mlx4_wqe_raddr_seg */
	SEG_ATOMIC	= 1 << 1,	/* struct mlx4_wqe_atomic_seg */
	SEG_BIND	= 1 << 2,	/* struct mlx4_wqe_bind_seg */
	SEG_INVAL	= 1 << 3,	/* struct mlx4_wqe_local_inval_seg */
	SEG_DATAGRAM	= 1 << 4,	/* struct mlx4_wqe_datagram_seg */
};

enum sim_op_flag {
	OPF_IMM		= 1 << 0,	/* the control segment's imm is data */
	OPF_INVAL_KEY	= 1 << 1,	/* ... or the rkey the responder invalidates */
	OPF_RECV	= 1 << 2,	/* consumes a receive WQE at the responder */
	OPF_ORDERED	= 1 << 3,	/* changes a key: needs strong ordering */
};

struct sim_opcode {
	uint16_t qp_types;		/* 1 << enum ibv_qp_type, for each */
	uint8_t kind;			/* enum sim_op_kind */
	uint8_t segs;			/* enum sim_op_seg, on a connected QP */
	uint8_t flags;			/* enum sim_op_flag */
	uint8_t recv_opcode;		/* MLX4_RECV_OPCODE_*, with OPF_RECV */
	uint8_t cqe_opcode;		/* of the requester's completion */
};

/* The table, by opcode: every WQE looks there, so the look is inline. */
extern const struct sim_opcode sim_opcodes[WQE_OPCODE_MASK + 1];

/* Never NULL: an opcode outside the table has no QP type and kind. */
static inline const struct sim_opcode *opcode_get(uint8_t opcode)
{
	return &sim_opcodes[opcode & WQE_OPCODE_MASK];
}

static inline bool opcode_allowed(const struct sim_opcode *op,
				  enum ibv_qp_type type)
{
	return type < 16 && (op->qp_types & (1u << type));
}

/* On a UD QP every WQE carries the address vector, and nothing else. */
static inline unsigned int opcode_segs(const struct sim_opcode *op,
				       enum ibv_qp_type type)
{
	return type == IBV_QPT_UD ? SEG_DATAGRAM : op->segs;
}

size_t opcode_segs_size(unsigned int segs);

/* Each segment a WQE may carry there, in the order the device reads them. */
#define OP_SEGS	5
struct sim_op_seg_layout {
	unsigned int seg;		/* enum sim_op_seg */
	const char *name;		/* for the trace */
	size_t size;
};
extern const struct sim_op_seg_layout op_seg_layout[OP_SEGS];

#endif
