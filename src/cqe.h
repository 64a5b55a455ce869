/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Reading CQEs, for the two ways of polling a CQ: ibv_poll_cq (cq.c) and
 * the extended interface, ibv_start_poll and its readers (cq_ex.c).  The
 * ring and its consumer index, the kind of a CQE, what a completion
 * reports by its last byte, retiring the WQE it completes and the QP
 * cached for the fast paths.  Private to the provider, and all static,
 * as wqe.h is for the send paths: each file compiles the pieces into its
 * own calls.
 *
 * A CQ is a power-of-two ring of 32- or 64-byte entries that the device
 * fills; the CQE proper is the last 32 bytes of each entry.  Entry n
 * belongs to software when its owner bit equals !!(n & entries), the
 * parity of the pass the consumer index is on.
 */
#ifndef MLX4_CQE_H
#define MLX4_CQE_H

#include "annotate.h"
#include "mlx4.h"
#include "mmio.h"

enum {
	CQ_OK		=  0,
	CQ_EMPTY	= -1,
	CQ_POLL_ERR	= -2,
};

static inline struct mlx4_cqe *get_cqe(struct mlx4_cq *cq, uint32_t n)
{
	return (struct mlx4_cqe *)((char *)cq->cqe_base +
				   ((n & cq->mask) << cq->cqe_shift));
}

/* The CQE after @cqe, and *owner for it. */
static inline struct mlx4_cqe *cqe_after(struct mlx4_cq *cq,
					 struct mlx4_cqe *cqe, uint8_t *owner)
{
	cqe = (struct mlx4_cqe *)((char *)cqe + cq->cqe_size);
	if (likely(cqe != cq->cqe_end))
		return cqe;
	/* The ring wraps: a new pass, the other owner bit. */
	*owner ^= MLX4_CQE_OWNER_MASK;
	return cq->cqe_base;
}

/*
 * The CQE at the consumer index is consumed: the index, its CQE and its
 * owner bit move on; the owner bit is stored only when the ring wraps.
 */
static inline uint32_t step_ci(struct mlx4_cq *cq)
{
	cq->ci_cqe = cqe_after(cq, cq->ci_cqe, &cq->ci_owner);
	return ++cq->cons_index;
}

/*
 * The kind of @cqe: its last byte with the owner bit of software's pass
 * (@owner) taken out.  MLX4_CQE_OWNER_MASK set: the CQE is the device's
 * still; else the IS_SEND bit, bit 5 and the opcode, what it completes.
 * One byte that one compare each sorts: the common completions are the
 * kinds up to LAST_RECV_KIND and those from MLX4_CQE_IS_SEND_MASK to
 * LAST_SEND_KIND.
 */
static inline uint8_t cqe_kind(struct mlx4_cqe *cqe, uint8_t owner)
{
	return cqe->owner_sr_opcode ^ owner;
}

enum {
	/* Successful receives: the receive opcodes, 0 to 3. */
	LAST_RECV_KIND	= MLX4_RECV_OPCODE_SEND_INVAL,
	/*
	 * Successful sends: all opcodes below the error CQE's.  Bit 5 set,
	 * or an opcode beyond (the error CQE's), takes the long way.
	 */
	LAST_SEND_KIND	= MLX4_CQE_IS_SEND_MASK | (MLX4_CQE_OPCODE_ERROR - 1),
};

/*
 * @cqe was seen to be software's by its owner bit: its body may be read
 * from now on, not before (the device writes the owner bit last).
 */
static inline void cqe_body_ready(struct mlx4_cqe *cqe)
{
	udma_from_device_barrier();
	mlx4_mark_defined(cqe, sizeof(*cqe));
}

/* Tell the device we consumed up to @ci, once the CQEs were read. */
static inline void write_cons_index(struct mlx4_cq *cq, uint32_t ci)
{
	udma_to_device_barrier();
	*cq->set_ci_db = htobe32(ci & 0xffffff);
}

static inline void update_cons_index(struct mlx4_cq *cq)
{
	write_cons_index(cq, cq->cons_index);
}

/* ---------------------------------------------------------------------
 * Decoding a CQE
 */

static enum ibv_wc_status syndrome_to_status(uint8_t syndrome)
{
	switch (syndrome) {
	case MLX4_CQE_SYNDROME_LOCAL_LENGTH_ERR:
		return IBV_WC_LOC_LEN_ERR;
	case MLX4_CQE_SYNDROME_LOCAL_QP_OP_ERR:
		return IBV_WC_LOC_QP_OP_ERR;
	case MLX4_CQE_SYNDROME_LOCAL_PROT_ERR:
		return IBV_WC_LOC_PROT_ERR;
	case MLX4_CQE_SYNDROME_WR_FLUSH_ERR:
		return IBV_WC_WR_FLUSH_ERR;
	case MLX4_CQE_SYNDROME_MW_BIND_ERR:
		return IBV_WC_MW_BIND_ERR;
	case MLX4_CQE_SYNDROME_BAD_RESP_ERR:
		return IBV_WC_BAD_RESP_ERR;
	case MLX4_CQE_SYNDROME_LOCAL_ACCESS_ERR:
		return IBV_WC_LOC_ACCESS_ERR;
	case MLX4_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR:
		return IBV_WC_REM_INV_REQ_ERR;
	case MLX4_CQE_SYNDROME_REMOTE_ACCESS_ERR:
		return IBV_WC_REM_ACCESS_ERR;
	case MLX4_CQE_SYNDROME_REMOTE_OP_ERR:
		return IBV_WC_REM_OP_ERR;
	case MLX4_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR:
		return IBV_WC_RETRY_EXC_ERR;
	case MLX4_CQE_SYNDROME_RNR_RETRY_EXC_ERR:
		return IBV_WC_RNR_RETRY_EXC_ERR;
	case MLX4_CQE_SYNDROME_REMOTE_ABORTED_ERR:
		return IBV_WC_REM_ABORT_ERR;
	default:
		return IBV_WC_GENERAL_ERR;
	}
}

#define SEND_CQE(op)	(MLX4_CQE_IS_SEND_MASK | (op))

/* A bit of a CQE's last byte that neither the owner nor the opcode take. */
#define CQE_SPARE_BIT	0x20

/*
 * The entry of cqe_wc for the CQEs of @kind (IS_SEND and the opcode),
 * under each of the four values of the bits that do not say what a CQE
 * completes: the owner bit and the spare one.
 */
#define CQE_WC(kind, wc_opcode, wc_flags)				\
	[kind] = { wc_opcode, wc_flags },				\
	[(kind) | CQE_SPARE_BIT] = { wc_opcode, wc_flags },		\
	[(kind) | MLX4_CQE_OWNER_MASK] = { wc_opcode, wc_flags },	\
	[(kind) | CQE_SPARE_BIT | MLX4_CQE_OWNER_MASK] = { wc_opcode, wc_flags }

/*
 * What a completion reports, by the last byte of its CQE: a send by the
 * opcode of its WQE, a receive by the opcode of the incoming message.
 * One table, indexed by the whole byte, so that reading a CQE's opcode
 * needs no branch and no mask (see bench/README).  An error CQE has no
 * opcode: a receive's reads as IBV_WC_RECV, a send's as 0.
 */
static const struct {
	uint8_t opcode;		/* enum ibv_wc_opcode */
	uint8_t flags;		/* enum ibv_wc_flags */
} cqe_wc[256] = {
	CQE_WC(SEND_CQE(MLX4_OPCODE_NOP), IBV_WC_SEND, 0),
	CQE_WC(SEND_CQE(MLX4_OPCODE_SEND), IBV_WC_SEND, 0),
	CQE_WC(SEND_CQE(MLX4_OPCODE_SEND_INVAL), IBV_WC_SEND, 0),
	CQE_WC(SEND_CQE(MLX4_OPCODE_SEND_IMM), IBV_WC_SEND, IBV_WC_WITH_IMM),
	CQE_WC(SEND_CQE(MLX4_OPCODE_RDMA_WRITE), IBV_WC_RDMA_WRITE, 0),
	CQE_WC(SEND_CQE(MLX4_OPCODE_RDMA_WRITE_IMM), IBV_WC_RDMA_WRITE,
	       IBV_WC_WITH_IMM),
	CQE_WC(SEND_CQE(MLX4_OPCODE_RDMA_READ), IBV_WC_RDMA_READ, 0),
	CQE_WC(SEND_CQE(MLX4_OPCODE_ATOMIC_CS), IBV_WC_COMP_SWAP, 0),
	CQE_WC(SEND_CQE(MLX4_OPCODE_ATOMIC_FA), IBV_WC_FETCH_ADD, 0),
	CQE_WC(SEND_CQE(MLX4_OPCODE_BIND_MW), IBV_WC_BIND_MW, 0),
	CQE_WC(SEND_CQE(MLX4_OPCODE_LOCAL_INVAL), IBV_WC_LOCAL_INV, 0),
	CQE_WC(MLX4_RECV_OPCODE_RDMA_WRITE_IMM, IBV_WC_RECV_RDMA_WITH_IMM,
	       IBV_WC_WITH_IMM),
	CQE_WC(MLX4_RECV_OPCODE_SEND, IBV_WC_RECV, 0),
	CQE_WC(MLX4_RECV_OPCODE_SEND_IMM, IBV_WC_RECV, IBV_WC_WITH_IMM),
	CQE_WC(MLX4_RECV_OPCODE_SEND_INVAL, IBV_WC_RECV, IBV_WC_WITH_INV),
	CQE_WC(MLX4_CQE_OPCODE_ERROR, IBV_WC_RECV, 0),
};

/*
 * IBV_WC_IP_CSUM_OK of a receive on a QP with checksum offload: an IPv4
 * packet whose IP header and TCP/UDP checksums the device found good.
 */
static inline unsigned int csum_ok(struct mlx4_qp *qp, struct mlx4_cqe *cqe)
{
	uint32_t ok = MLX4_BE32(MLX4_CQE_STATUS_IPV4_CSUM_OK);

	return qp && qp->csum && (cqe->status & ok) == ok ?
	       IBV_WC_IP_CSUM_OK : 0;
}

/*
 * Retiring the WQE a CQE completes, which gives its wr_id.  A send's
 * wqe_index counts WQEs modulo 2^16: the unsignalled ones before it
 * retire with it, the tail, counted modulo 2^16 too (struct mlx4_wq),
 * taking it as it comes (see bench/README).
 */
static inline uint64_t retire_send(struct mlx4_wq *wq, unsigned int wqe_index)
{
	wq->tail = wqe_index + 1;
	return wq->wrid[wqe_index & wq->mask];
}

/*
 * A receive queue completes in order, and the wqe_index of its flush
 * CQEs means nothing: retire the tail.
 */
static inline uint64_t retire_recv(struct mlx4_wq *wq)
{
	return wq->wrid[wq->tail++ & wq->mask];
}

/* For an SRQ, wqe_index is the WQE's place in the buffer. */
static inline uint64_t retire_srq_wqe(struct mlx4_srq *srq, uint16_t wqe_index)
{
	uint64_t wr_id;

	wqe_index &= srq->mask;
	wr_id = srq->wrid[wqe_index];
	mlx4_free_srq_wqe(srq, wqe_index);
	return wr_id;
}

/* The WQE of @qp that @cqe completes: retired, its wr_id returned. */
static inline uint64_t retire_wqe(struct mlx4_qp *qp, struct mlx4_cqe *cqe)
{
	if (cqe->owner_sr_opcode & MLX4_CQE_IS_SEND_MASK)
		return retire_send(&qp->sq, be16toh(cqe->wqe_index));
	if (unlikely(qp->verbs_qp.qp.srq))
		return retire_srq_wqe(to_msrq(qp->verbs_qp.qp.srq),
				      be16toh(cqe->wqe_index));
	return retire_recv(&qp->rq);
}

/*
 * An XRC receive names an SRQ, not one of our QPs: the WQE it completes,
 * retired.  Nonzero if the SRQ is unknown.
 */
static int retire_xrc_wqe(struct mlx4_cq *cq, struct mlx4_cqe *cqe,
			  uint64_t *wr_id)
{
	struct mlx4_srq *srq;

	srq = mlx4_table_find(&cq->ctx->xsrq_table,
			      be32toh(cqe->g_mlpath_rqpn) & MLX4_CQE_QPN_MASK);
	if (unlikely(!srq))
		return CQ_POLL_ERR;
	*wr_id = retire_srq_wqe(srq, be16toh(cqe->wqe_index));
	return CQ_OK;
}

/* The QPN field of @cqe as the CQE holds it: big-endian. */
static inline __be32 cqe_qpn_be(struct mlx4_cqe *cqe)
{
	return cqe->vlan_my_qpn & MLX4_BE32(MLX4_CQE_QPN_MASK);
}

/* A send_qpn or recv_qpn that no CQE's QPN field equals. */
#define NO_QPN	MLX4_BE32(~(uint32_t)MLX4_CQE_QPN_MASK)

/* No CQE takes the fast paths until cache_qp() opens them again. */
static void close_fast_paths(struct mlx4_cq *cq)
{
	cq->send_qpn = NO_QPN;
	cq->recv_qpn = NO_QPN;
}

/*
 * @qp (NULL: none) is the QP of the last completion.  The fast paths
 * take the next CQE if its QPN field is send_qpn or recv_qpn, by the
 * CQE's direction: one compare, with no byte swap nor test of NULL or of
 * an SRQ, with cqe_kind() (see bench/README).
 *
 * The extended interface's fast paths leave the ibv_cq_ex's status as
 * they find it, a success: it is set here, where they open, and an error
 * closes them (poll_one_ex_any()), so that the CQE after it takes the
 * long way, which sets it again: the fast paths then store no status
 * (see bench/README).
 */
static void cache_qp(struct mlx4_cq *cq, struct mlx4_qp *qp)
{
	cq->last_qp = qp;
	if (!qp) {
		close_fast_paths(cq);
		return;
	}
	cq->send_qpn = htobe32(qp->qpn);
	cq->recv_qpn = qp->verbs_qp.qp.srq ? NO_QPN : htobe32(qp->qpn);
	cq->verbs_cq.cq_ex.status = IBV_WC_SUCCESS;
}

/*
 * The QP of @qpn, cached for the CQEs that follow; but not one whose
 * number has MLX4_XRC_QPN_BIT: a receive CQE with that bit names an XRC
 * SRQ, and the fast paths, which compare a CQE's QPN with the cached
 * QP's only, need not tell the two apart.
 */
static struct mlx4_qp *lookup_qp(struct mlx4_cq *cq, uint32_t qpn)
{
	struct mlx4_qp *qp = mlx4_table_find(&cq->ctx->qp_table, qpn);

	cache_qp(cq, (qpn & MLX4_XRC_QPN_BIT) ? NULL : qp);
	return qp;
}

/* Whether @cqe, of @qpn, completes a receive on an XRC SRQ. */
static inline int cqe_is_xrc_recv(struct mlx4_cqe *cqe, uint32_t qpn)
{
	return (qpn & MLX4_XRC_QPN_BIT) &&
	       !(cqe->owner_sr_opcode & MLX4_CQE_IS_SEND_MASK);
}

/*
 * The WQE that @cqe, of @qpn, completes, whatever its queue, retired:
 * its wr_id in *@wr_id, its QP (NULL for an XRC SRQ's) in *@qp and in
 * cq->last_qp.  CQ_POLL_ERR for a CQE of no queue we know.
 */
static int retire_any_wqe(struct mlx4_cq *cq, struct mlx4_cqe *cqe,
			  uint32_t qpn, uint64_t *wr_id, struct mlx4_qp **qp)
{
	if (cqe_is_xrc_recv(cqe, qpn)) {
		*qp = NULL;
		cache_qp(cq, NULL);
		return retire_xrc_wqe(cq, cqe, wr_id);
	}
	*qp = cq->last_qp;
	if (!*qp || (*qp)->qpn != qpn) {
		*qp = lookup_qp(cq, qpn);
		if (unlikely(!*qp))
			return CQ_POLL_ERR;
	} else {
		/* After an error that closed them. */
		cache_qp(cq, *qp);
	}
	*wr_id = retire_wqe(*qp, cqe);
	return CQ_OK;
}

/* The CQE at the consumer index if software's (*@kind: its kind). */
static inline struct mlx4_cqe *ci_cqe_sw(struct mlx4_cq *cq,
					 uint8_t *kind)
{
	struct mlx4_cqe *cqe = cq->ci_cqe;

	*kind = cqe_kind(cqe, cq->ci_owner);
	return *kind & MLX4_CQE_OWNER_MASK ? NULL : cqe;
}

/* The fields of a completion an extended CQ may be asked for. */
enum {
	MLX4_CQ_SUPPORTED_WC_FLAGS = IBV_WC_EX_WITH_BYTE_LEN |
				     IBV_WC_EX_WITH_IMM |
				     IBV_WC_EX_WITH_QP_NUM |
				     IBV_WC_EX_WITH_SRC_QP |
				     IBV_WC_EX_WITH_SLID |
				     IBV_WC_EX_WITH_SL |
				     IBV_WC_EX_WITH_DLID_PATH_BITS |
				     IBV_WC_EX_WITH_COMPLETION_TIMESTAMP |
				     IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK,
	MLX4_CQ_WITH_TIME = IBV_WC_EX_WITH_COMPLETION_TIMESTAMP |
			    IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK,
	/* A timestamped CQE has no room left for these. */
	MLX4_CQ_NOT_WITH_TIMESTAMP = IBV_WC_EX_WITH_SLID | IBV_WC_EX_WITH_SL,
};

#endif /* MLX4_CQE_H */
