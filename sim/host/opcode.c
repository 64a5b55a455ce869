/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The send WQE opcodes a ConnectX-3 runs for a user QP, and their rules.
 *
 * Raw packet QPs send frames (SEND); UD QPs post sends only; UC adds RDMA WRITE, SEND with invalidate and
 * the local key operations; RC (and XRC, on its initiator side) adds the
 * operations that need an answer carrying data: RDMA READ and atomics.
 * A send completion names the WQE's own opcode.  Opcodes missing here
 * (LSO, masked atomics, FMR, CONFIG_CMD) no user QP of this device may
 * post: they complete with a local QP operation error.  LSO is a raw
 * packet QP's.
 */
#include "opcode.h"

#define QPT(t)		(1u << IBV_QPT_##t)
#define ANY_QP		(QPT(RC) | QPT(UC) | QPT(UD) | QPT(XRC_SEND))
#define ANY_OR_RAW	(ANY_QP | QPT(RAW_PACKET))
#define CONNECTED	(QPT(RC) | QPT(UC) | QPT(XRC_SEND))
#define RELIABLE	(QPT(RC) | QPT(XRC_SEND))

#define OP(code, types, k, s, f, recv)					\
	[MLX4_OPCODE_##code] = { .qp_types = (types), .kind = (k),	\
				 .segs = (s), .flags = (f),		\
				 .recv_opcode = (recv),			\
				 .cqe_opcode = MLX4_OPCODE_##code }

const struct sim_opcode sim_opcodes[WQE_OPCODE_MASK + 1] = {
	OP(NOP,		   ANY_OR_RAW, OP_NOP,	    0, 0, 0),
	OP(SEND,	   ANY_OR_RAW, OP_SEND,	    0, OPF_RECV,
	   MLX4_RECV_OPCODE_SEND),
	OP(SEND_IMM,	   ANY_QP,    OP_SEND,	    0, OPF_RECV | OPF_IMM,
	   MLX4_RECV_OPCODE_SEND_IMM),
	OP(SEND_INVAL,	   CONNECTED, OP_SEND,	    0, OPF_RECV | OPF_INVAL_KEY,
	   MLX4_RECV_OPCODE_SEND_INVAL),
	OP(RDMA_WRITE,	   CONNECTED, OP_WRITE,	    SEG_RADDR, 0, 0),
	OP(RDMA_WRITE_IMM, CONNECTED, OP_WRITE,	    SEG_RADDR, OPF_RECV | OPF_IMM,
	   MLX4_RECV_OPCODE_RDMA_WRITE_IMM),
	OP(RDMA_READ,	   RELIABLE,  OP_READ,	    SEG_RADDR, 0, 0),
	OP(ATOMIC_CS,	   RELIABLE,  OP_ATOMIC,    SEG_RADDR | SEG_ATOMIC, 0, 0),
	OP(ATOMIC_FA,	   RELIABLE,  OP_ATOMIC,    SEG_RADDR | SEG_ATOMIC, 0, 0),
	OP(BIND_MW,	   CONNECTED, OP_BIND,	    SEG_BIND, OPF_ORDERED, 0),
	OP(LOCAL_INVAL,	   CONNECTED, OP_LOCAL_INV, SEG_INVAL, OPF_ORDERED, 0),
	/* Segments of a TCP payload behind copies of its headers (req.c). */
	OP(LSO,		   QPT(RAW_PACKET), OP_SEND, 0, OPF_RECV, MLX4_RECV_OPCODE_SEND),
};

const struct sim_op_seg_layout op_seg_layout[OP_SEGS] = {
	{ SEG_DATAGRAM,	"dgram",  sizeof(struct mlx4_wqe_datagram_seg) },
	{ SEG_RADDR,	"raddr",  sizeof(struct mlx4_wqe_raddr_seg) },
	{ SEG_ATOMIC,	"atomic", sizeof(struct mlx4_wqe_atomic_seg) },
	{ SEG_BIND,	"bind",   sizeof(struct mlx4_wqe_bind_seg) },
	{ SEG_INVAL,	"inval",  sizeof(struct mlx4_wqe_local_inval_seg) },
};

/* Summed once for each set of segments: every WQE asks. */
size_t opcode_segs_size(unsigned int segs)
{
	static size_t sizes[1 << OP_SEGS];
	static bool summed;

	if (!summed) {
		for (unsigned int set = 0; set < ARRAY_SIZE(sizes); set++)
			for (int i = 0; i < OP_SEGS; i++)
				if (set & op_seg_layout[i].seg)
					sizes[set] += op_seg_layout[i].size;
		summed = true;
	}
	return sizes[segs & (ARRAY_SIZE(sizes) - 1)];
}
