/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Completion queues: creation, polling (ibv_poll_cq and the extended
 * start/next/end interface), arming, resizing, and removing the
 * completions of a queue that goes away.
 *
 * A CQ is a power-of-two ring of 32- or 64-byte entries that the device
 * fills; the CQE proper is the last 32 bytes of each entry.  Entry n
 * belongs to software when its owner bit equals !!(n & entries), the
 * parity of the pass the consumer index is on.
 */
#include <config.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

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

static inline int cqe_is_sw_owned(struct mlx4_cqe *cqe, uint32_t n,
				  uint32_t nent)
{
	return !((cqe->owner_sr_opcode >> 7) ^ !!(n & nent));
}

/* The owner bit of the CQEs of index @n's pass when they are software's. */
static inline uint8_t sw_owner_bit(struct mlx4_cq *cq, uint32_t n)
{
	return (n & (cq->mask + 1)) ? MLX4_CQE_OWNER_MASK : 0;
}

/*
 * The consumer index is @ci: with it, @cqe, the CQE there, and @owner,
 * the owner bit that says it is software's, so that a poll which finds
 * nothing loads one pointer and tests one byte (see bench/README).
 */
static inline void set_ci_state(struct mlx4_cq *cq, uint32_t ci,
				struct mlx4_cqe *cqe, uint8_t owner)
{
	cq->cons_index = ci;
	cq->ci_cqe = cqe;
	cq->ci_owner = owner;
}

/* The same, from @ci alone. */
void mlx4_cq_set_cons_index(struct mlx4_cq *cq, uint32_t ci)
{
	set_ci_state(cq, ci, get_cqe(cq, ci), sw_owner_bit(cq, ci));
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

/*
 * Mark the @nent entries of a new ring device-owned for the pass on which
 * the consumer, starting at index @first, will meet each of them.  The
 * device does the same when it takes the buffer; doing it here as well
 * keeps a stale page from ever passing for a completion.
 */
void mlx4_cq_init_buf(void *buf, uint32_t nent, int cqe_size, uint32_t first)
{
	uint8_t *entry = buf;
	uint32_t i;

	memset(buf, 0, (size_t)nent * cqe_size);
	for (i = 0; i < nent; i++) {
		uint32_t n = first + i;

		entry[(size_t)(n & (nent - 1)) * cqe_size + cqe_size - 1] =
			(n & nent) ? 0 : MLX4_CQE_OWNER_MASK;
	}
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
 * retire with it.
 */
static inline uint64_t retire_send(struct mlx4_wq *wq, unsigned int wqe_index)
{
	uint32_t tail = wq->tail + (uint16_t)(wqe_index - wq->tail);

	wq->tail = tail + 1;
	return wq->wrid[tail & wq->mask];
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

/* A successful send's ibv_wc, but wr_id and qp_num; @kind its CQE's. */
static inline void fill_send_wc(struct mlx4_cqe *cqe, uint8_t kind,
				struct ibv_wc *wc)
{
	wc->status = IBV_WC_SUCCESS;
	wc->vendor_err = 0;
	wc->opcode = cqe_wc[kind].opcode;
	wc->wc_flags = cqe_wc[kind].flags;
	wc->byte_len = be32toh(cqe->byte_cnt);
}

/*
 * The fields of a receive with immediate data or an invalidated rkey,
 * which a plain SEND does not have, by the CQE's @op; its wc_flags.
 */
static inline unsigned int fill_recv_data(struct mlx4_cqe *cqe,
					  unsigned int op, struct ibv_wc *wc)
{
	wc->opcode = cqe_wc[op & 3].opcode;
	wc->pkey_index = 0;
	switch (op) {
	case MLX4_RECV_OPCODE_RDMA_WRITE_IMM:
	case MLX4_RECV_OPCODE_SEND_IMM:
		wc->imm_data = cqe->immed_rss_invalid;
		break;
	case MLX4_RECV_OPCODE_SEND_INVAL:
		wc->invalidated_rkey = be32toh(cqe->immed_rss_invalid);
		break;
	default:
		/* Without immediate data the field holds the P_Key index. */
		wc->imm_data = 0;
		wc->pkey_index = be32toh(cqe->immed_rss_invalid) & 0x7f;
		break;
	}
	return cqe_wc[op & 3].flags;
}

/* RoCE carries a 3-bit priority where IB has a 4-bit SL. */
static inline unsigned int sl_shift(struct mlx4_qp *qp)
{
	return qp && qp->link_layer == IBV_LINK_LAYER_ETHERNET ? 13 : 12;
}

/*
 * What a successful receive's ibv_wc holds whatever its queue: all but
 * wr_id, qp_num, slid and sl, and IBV_WC_IP_CSUM_OK in wc_flags, which
 * are returned.  Every field is written, from what the CQE holds
 * whatever the QP type (a UD QP's source QP, an RC QP's peer).
 */
static inline unsigned int fill_recv_common(struct mlx4_cqe *cqe,
					    unsigned int op, struct ibv_wc *wc)
{
	uint32_t g_mlpath_rqpn = be32toh(cqe->g_mlpath_rqpn);
	/* The G bit, bit 31; IBV_WC_GRH is 1: a shift, no branch. */
	unsigned int flags = (g_mlpath_rqpn >> 31) * IBV_WC_GRH;

	wc->vendor_err = 0;
	wc->byte_len = be32toh(cqe->byte_cnt);
	if (likely(op == MLX4_RECV_OPCODE_SEND)) {
		/* Two constants side by side: one 64-bit store, in a run. */
		wc->status = IBV_WC_SUCCESS;
		wc->opcode = IBV_WC_RECV;
		wc->imm_data = 0;
		wc->pkey_index = be32toh(cqe->immed_rss_invalid) & 0x7f;
	} else {
		wc->status = IBV_WC_SUCCESS;
		flags |= fill_recv_data(cqe, op, wc);
	}
	wc->src_qp = g_mlpath_rqpn & 0xffffff;
	wc->dlid_path_bits = (g_mlpath_rqpn >> 24) & 0x7f;
	return flags;
}

/*
 * A receive's ibv_wc, but wr_id and qp_num; @op is its CQE's opcode.
 * @qp is NULL for an XRC SRQ's.
 */
static inline void fill_recv_wc(struct mlx4_cq *cq, struct mlx4_cqe *cqe,
				unsigned int op, struct mlx4_qp *qp,
				struct ibv_wc *wc)
{
	wc->wc_flags = fill_recv_common(cqe, op, wc) | csum_ok(qp, cqe);
	if (unlikely(cq->timestamped)) {
		/* The completion time is where they would be: unknown. */
		wc->slid = 0;
		wc->sl = 0;
		return;
	}
	wc->slid = be16toh(cqe->rlid);
	wc->sl = be16toh(cqe->sl_vid) >> sl_shift(qp);
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

/*
 * Fill @wc from @cqe, whatever it is: an error, an XRC receive, the
 * completion of any QP.  cq->last_qp caches the QP of the last one.
 */
static int poll_one_any(struct mlx4_cq *cq, struct mlx4_cqe *cqe,
			struct ibv_wc *wc)
{
	struct mlx4_err_cqe *ecqe = (struct mlx4_err_cqe *)cqe;
	uint32_t qpn = be32toh(cqe->vlan_my_qpn) & MLX4_CQE_QPN_MASK;
	struct mlx4_qp *qp;
	int err;

	err = retire_any_wqe(cq, cqe, qpn, &wc->wr_id, &qp);
	if (err)
		return err;
	wc->qp_num = qpn;

	if ((cqe->owner_sr_opcode & MLX4_CQE_OPCODE_MASK) ==
	    MLX4_CQE_OPCODE_ERROR) {
		wc->status = syndrome_to_status(ecqe->syndrome);
		wc->vendor_err = ecqe->vendor_err;
		wc->wc_flags = 0;
		wc->byte_len = 0;
	} else if (cqe->owner_sr_opcode & MLX4_CQE_IS_SEND_MASK) {
		fill_send_wc(cqe, cqe->owner_sr_opcode, wc);
	} else {
		fill_recv_wc(cq, cqe, cqe->owner_sr_opcode &
			     MLX4_CQE_OPCODE_MASK, qp, wc);
	}
	return CQ_OK;
}

/* poll_one_any() for the CQEs that poll_one() leaves: out of line. */
static int __attribute__((noinline, cold))
poll_one_rare(struct mlx4_cq *cq, struct mlx4_cqe *cqe, struct ibv_wc *wc)
{
	return poll_one_any(cq, cqe, wc);
}

/*
 * Fill @wc from @cqe, which software owns and whose body may be read
 * (@kind: cqe_kind(), a send's), if it is the common case: a successful
 * send of the QP of the last completion.  Zero, and nothing done, for
 * any other CQE.
 */
static inline int poll_send_common(struct mlx4_cq *cq, struct mlx4_cqe *cqe,
				   uint8_t kind, struct ibv_wc *wc)
{
	struct mlx4_qp *qp;

	if (unlikely(kind > LAST_SEND_KIND || cqe_qpn_be(cqe) != cq->send_qpn))
		return 0;
	qp = cq->last_qp;
	wc->wr_id = retire_send(&qp->sq, be16toh(cqe->wqe_index));
	fill_send_wc(cqe, kind, wc);
	wc->qp_num = qp->qpn;
	return 1;
}

/* The same for a successful receive (@kind: a receive's) not on an SRQ. */
static inline int poll_recv_common(struct mlx4_cq *cq, struct mlx4_cqe *cqe,
				   uint8_t kind, struct ibv_wc *wc)
{
	struct mlx4_qp *qp;

	if (unlikely(kind > LAST_RECV_KIND || cqe_qpn_be(cqe) != cq->recv_qpn))
		return 0;
	qp = cq->last_qp;
	wc->wr_id = retire_recv(&qp->rq);
	fill_recv_wc(cq, cqe, kind, qp, wc);
	wc->qp_num = qp->qpn;
	return 1;
}

/* Fill @wc from @cqe, of @kind, whatever it is. */
static inline int poll_one(struct mlx4_cq *cq, struct mlx4_cqe *cqe,
			   uint8_t kind, struct ibv_wc *wc)
{
	if (likely(kind & MLX4_CQE_IS_SEND_MASK ?
		   poll_send_common(cq, cqe, kind, wc) :
		   poll_recv_common(cq, cqe, kind, wc)))
		return CQ_OK;
	return poll_one_rare(cq, cqe, wc);
}

/*
 * Whether take_recv_run() may start at @cqe, of @kind, its body ready: a
 * successful receive of cq->last_qp (its QPN recv_qpn), whose receives
 * it decodes without the checks that these make.
 */
static inline __attribute__((always_inline))
int recv_run_starts(struct mlx4_cq *cq, struct mlx4_cqe *cqe, uint8_t kind)
{
	return kind <= LAST_RECV_KIND && cqe_qpn_be(cqe) == cq->recv_qpn &&
	       !cq->last_qp->csum && !cq->timestamped;
}

/*
 * How many CQEs a run from @cqe takes at the most: @room, or those up to
 * the ring's end, after which the ring wraps.
 */
static inline uint32_t run_length(struct mlx4_cq *cq, struct mlx4_cqe *cqe,
				  uint32_t room)
{
	uint32_t left = ((char *)cq->cqe_end - (char *)cqe) >> cq->cqe_shift;

	return room < left ? room : left;
}

/*
 * A run of successful receives of cq->last_qp, the bulk of a receive
 * CQ, into @wc, @room entries at the most: the decisions poll_one()
 * takes per CQE taken once, the ring walked by pointer.  *@cqe, of
 * *@kind, starts it, read (a receive's kind, its QPN recv_qpn,
 * recv_run_starts()).  The run ends after @room CQEs, or at a CQE that is
 * not software's, not a successful receive or not that QP's: *@cqe and
 * *@kind are then that CQE and its kind, *@owner its owner bit; returns
 * how many it took.  Fewer instructions per CQE than no run at all, or
 * than a run that stopped at the ring's end and left its caller to find
 * where it stopped (see bench/README).
 */
static inline __attribute__((always_inline)) uint32_t
take_recv_run(struct mlx4_cq *cq, struct ibv_wc *wc, uint32_t room,
	      struct mlx4_cqe **cqe_p, uint8_t *owner_p, uint8_t *kind_p)
{
	struct mlx4_qp *qp = cq->last_qp;
	struct ibv_wc *first = wc, *end = wc + room;
	struct mlx4_cqe *cqe = *cqe_p;
	uint8_t kind = *kind_p;
	uint8_t owner = *owner_p;
	__be32 qpn_be = cq->recv_qpn;
	uint32_t qpn = qp->qpn;
	/* SL and source LID are one big-endian word: sl_vid, rlid. */
	unsigned int sl_shift16 = 16 + sl_shift(qp);
	uint64_t *wrid = qp->rq.wrid;
	uint32_t tail = qp->rq.tail, mask = qp->rq.mask;
	struct ibv_wc *stop = wc + run_length(cq, cqe, room);

	for (;;) {
		__be32 sl_vid_rlid;

		wc->wr_id = wrid[tail++ & mask];
		wc->qp_num = qpn;
		wc->wc_flags = fill_recv_common(cqe, kind, wc);
		memcpy(&sl_vid_rlid, &cqe->sl_vid, sizeof(sl_vid_rlid));
		wc->slid = be32toh(sl_vid_rlid);
		wc->sl = be32toh(sl_vid_rlid) >> sl_shift16;

		if (likely(++wc != stop)) {
			/* The size read each time: a register fewer to keep. */
			cqe = (struct mlx4_cqe *)((char *)cqe + cq->cqe_size);
		} else {
			/* At the ring's end, or at @end. */
			cqe = cqe_after(cq, cqe, &owner);
			if (wc == end)
				break;
			stop = wc + run_length(cq, cqe, end - wc);
		}
		kind = cqe_kind(cqe, owner);
		if (kind > LAST_RECV_KIND)
			break;
		cqe_body_ready(cqe);
		if (cqe_qpn_be(cqe) != qpn_be)
			break;
	}
	qp->rq.tail = tail;
	*cqe_p = cqe;
	*owner_p = owner;
	*kind_p = kind;
	return wc - first;
}

/*
 * The end of a poll: the consumer index @ci, at CQE @cqe software's with
 * @owner, the device told; unlocked.
 */
static inline void poll_done(struct mlx4_cq *cq, uint32_t ci,
			     struct mlx4_cqe *cqe, uint8_t owner)
{
	set_ci_state(cq, ci, cqe, owner);
	write_cons_index(cq, ci);
	mlx4_unlock(&cq->lock);
}

/*
 * Poll with the CQ locked, @ne > 0, @npolled of the caller's @ne entries
 * filled, @wc the next one and @cqe, the CQE at the consumer index, seen
 * to be software's by @kind; unlocks.  The QP of the last completion is
 * cached in the CQ across calls (mlx4_cq_clean() drops it with its QP).
 *
 * The consumer index is a local here: stores to the caller's ibv_wc
 * could alias the CQ's fields, and the compiler would reload and store
 * it again for every CQE.
 */
static int __attribute__((noinline))
poll_cq_loop(struct mlx4_cq *cq, int ne, int npolled, struct ibv_wc *wc,
	     struct mlx4_cqe *cqe, uint8_t kind)
{
	struct ibv_wc *first = wc - npolled, *end = first + ne;
	uint32_t ci = cq->cons_index;
	uint8_t owner = cq->ci_owner;
	int err;

	do {
		cqe_body_ready(cqe);
		/* A receive: more of that QP's are likely to follow. */
		if (recv_run_starts(cq, cqe, kind)) {
			uint32_t n = take_recv_run(cq, wc, end - wc, &cqe,
						   &owner, &kind);

			ci += n;
			wc += n;
			if (wc == end)
				break;
			continue;
		}
		err = poll_one(cq, cqe, kind, wc);
		/* A CQE of an unknown queue is consumed too, or the CQ would jam. */
		cqe = cqe_after(cq, cqe, &owner);
		++ci;
		if (unlikely(err != CQ_OK)) {
			/* Report the error if it is all there is. */
			if (wc == first)
				goto failed;
			break;
		}
		if (++wc == end)
			break;
		kind = cqe_kind(cqe, owner);
	} while (!(kind & MLX4_CQE_OWNER_MASK));
	poll_done(cq, ci, cqe, owner);
	return wc - first;

failed:
	poll_done(cq, ci, cqe, owner);
	return -1;
}

/*
 * The first CQE of a poll, @cqe, at the consumer index, is in @wc:
 * consume it, and go on with the loop if the caller wants more and there
 * are.
 */
static inline int poll_first_done(struct mlx4_cq *cq, int ne,
				  struct ibv_wc *wc)
{
	uint32_t ci = step_ci(cq);
	uint8_t kind;

	if (ne > 1) {
		kind = cqe_kind(cq->ci_cqe, cq->ci_owner);
		if (!(kind & MLX4_CQE_OWNER_MASK))
			return poll_cq_loop(cq, ne, 1, wc + 1, cq->ci_cqe, kind);
	}
	write_cons_index(cq, ci);
	mlx4_unlock(&cq->lock);
	return 1;
}

/* Whether the CQE after @cqe, at the consumer index, is software's. */
static inline int next_cqe_is_sw(struct mlx4_cq *cq, struct mlx4_cqe *cqe)
{
	uint8_t owner = cq->ci_owner;

	cqe = cqe_after(cq, cqe, &owner);
	return !(cqe_kind(cqe, owner) & MLX4_CQE_OWNER_MASK);
}

/*
 * Poll for @ne > 1 CQEs from @cqe, of @kind, a receive, with the CQ
 * locked; unlocks.  A run of one QP's receives, the common case, takes
 * them here, where fewer values are live than in the loop, which takes
 * what follows if the run stops short (see bench/README).
 */
static int __attribute__((noinline))
poll_cq_recvs(struct mlx4_cq *cq, int ne, struct ibv_wc *wc,
	      struct mlx4_cqe *cqe, uint8_t kind)
{
	uint8_t owner = cq->ci_owner;
	uint32_t n, ci;

	cqe_body_ready(cqe);
	if (!recv_run_starts(cq, cqe, kind))
		return poll_cq_loop(cq, ne, 0, wc, cqe, kind);

	n = take_recv_run(cq, wc, ne, &cqe, &owner, &kind);
	ci = cq->cons_index + n;
	if (n < (uint32_t)ne && !(kind & MLX4_CQE_OWNER_MASK)) {
		set_ci_state(cq, ci, cqe, owner);
		return poll_cq_loop(cq, ne, n, wc + n, cqe, kind);
	}
	poll_done(cq, ci, cqe, owner);
	return n;
}

/*
 * poll_cq_locked() for a first CQE that is a receive.  If another one
 * follows, and the caller has room, poll_cq_recvs() takes them, in a run,
 * for fewer instructions per CQE than one at a time (see bench/README).
 */
static int __attribute__((noinline))
poll_cq_first_recv(struct mlx4_cq *cq, int ne, struct ibv_wc *wc,
		   struct mlx4_cqe *cqe, unsigned int kind)
{
	if (ne > 1 && next_cqe_is_sw(cq, cqe))
		return poll_cq_recvs(cq, ne, wc, cqe, kind);
	cqe_body_ready(cqe);
	if (!poll_recv_common(cq, cqe, kind, wc))
		return poll_cq_loop(cq, ne, 0, wc, cqe, kind);
	return poll_first_done(cq, ne, wc);
}

/*
 * Poll with the CQ locked and @cqe, the one at the consumer index, seen
 * to be software's by @kind; unlocks.  Most polls that find anything
 * find one CQE (a loop waiting for each completion): the first, if it is
 * a common one, is decoded here, with no call but tail calls, and the
 * loop, which has calls and thus a stack frame, takes the others.  A
 * receive's decoding takes more registers than the caller-saved ones:
 * in a function of its own, it does not give a send's a frame either
 * (see bench/README).
 */
static int __attribute__((noinline))
poll_cq_locked(struct mlx4_cq *cq, int ne, struct ibv_wc *wc,
	       struct mlx4_cqe *cqe, unsigned int kind)
{
	if (unlikely(ne <= 0)) {
		mlx4_unlock(&cq->lock);
		return 0;
	}
	if (!(kind & MLX4_CQE_IS_SEND_MASK))
		return poll_cq_first_recv(cq, ne, wc, cqe, kind);
	cqe_body_ready(cqe);
	if (!poll_send_common(cq, cqe, kind, wc))
		return poll_cq_loop(cq, ne, 0, wc, cqe, kind);
	return poll_first_done(cq, ne, wc);
}

/* The CQE at the consumer index if software's (*@kind: its kind). */
static inline struct mlx4_cqe *ci_cqe_sw(struct mlx4_cq *cq,
					 uint8_t *kind)
{
	struct mlx4_cqe *cqe = cq->ci_cqe;

	*kind = cqe_kind(cqe, cq->ci_owner);
	return *kind & MLX4_CQE_OWNER_MASK ? NULL : cqe;
}

static int __attribute__((noinline, cold))
poll_cq_contended(struct mlx4_cq *cq, int ne, struct ibv_wc *wc)
{
	struct mlx4_cqe *cqe;
	uint8_t kind;

	mlx4_lock_contended(&cq->lock);
	cqe = ci_cqe_sw(cq, &kind);
	if (!cqe) {
		mlx4_unlock(&cq->lock);
		return 0;
	}
	return poll_cq_locked(cq, ne, wc, cqe, kind);
}

int mlx4_poll_cq(struct ibv_cq *ibcq, int ne, struct ibv_wc *wc)
{
	struct mlx4_cq *cq = to_mcq(ibcq);
	struct mlx4_cqe *cqe;
	uint8_t kind;

	if (unlikely(!mlx4_trylock(&cq->lock)))
		return poll_cq_contended(cq, ne, wc);

	/* Polling an empty CQ is the common case: keep it short. */
	cqe = ci_cqe_sw(cq, &kind);
	if (!cqe) {
		mlx4_unlock(&cq->lock);
		return 0;
	}
	return poll_cq_locked(cq, ne, wc, cqe, kind);
}

/* ---------------------------------------------------------------------
 * Extended polling: ibv_start_poll / ibv_next_poll / ibv_end_poll
 */

/*
 * No end_poll follows a failed start_poll: the CQE it consumed (of an
 * unknown queue) told to the device, the CQ unlocked.
 */
static void poll_ex_failed(struct mlx4_cq *cq)
{
	update_cons_index(cq);
	mlx4_unlock(&cq->lock);
}

/*
 * The CQE poll_one_ex() leaves, out of line: an error, an XRC receive, an
 * SRQ's, a QP not in the cache.
 */
static int poll_one_ex_any(struct mlx4_cq *cq, struct mlx4_cqe *cqe)
{
	struct ibv_cq_ex *ibcq = &cq->verbs_cq.cq_ex;
	uint32_t qpn = be32toh(cqe->vlan_my_qpn) & MLX4_CQE_QPN_MASK;
	struct mlx4_qp *qp;

	if (retire_any_wqe(cq, cqe, qpn, &ibcq->wr_id, &qp))
		return EINVAL;

	if ((cqe->owner_sr_opcode & MLX4_CQE_OPCODE_MASK) ==
	    MLX4_CQE_OPCODE_ERROR) {
		ibcq->status = syndrome_to_status(
			((struct mlx4_err_cqe *)cqe)->syndrome);
		/* The fast paths set no status: cache_qp(). */
		close_fast_paths(cq);
	} else {
		ibcq->status = IBV_WC_SUCCESS;
	}
	return 0;
}

/* poll_one_ex_any(); for ibv_start_poll (@starting), a failure ends the poll. */
static int __attribute__((noinline, cold))
poll_one_ex_rare(struct mlx4_cq *cq, struct mlx4_cqe *cqe, int starting)
{
	int err = poll_one_ex_any(cq, cqe);

	if (err && starting)
		poll_ex_failed(cq);
	return err;
}

/*
 * Consume the next CQE: wr_id and status in the ibv_cq_ex, the CQE in
 * cq->cur_cqe and its QP in cq->last_qp (NULL for an XRC SRQ's) for the
 * getters.  The QP stays cached across polls: mlx4_cq_clean() drops it.
 * Inline, the common case: a success of that QP, not on an SRQ.  For
 * ibv_start_poll (@starting), a failure ends the poll; the rare cases
 * are tail calls, so that the common one takes no stack frame.
 */
static inline __attribute__((always_inline))
int poll_one_ex(struct mlx4_cq *cq, int starting)
{
	struct ibv_cq_ex *ibcq = &cq->verbs_cq.cq_ex;
	struct mlx4_cqe *cqe;
	uint8_t kind;

	cqe = ci_cqe_sw(cq, &kind);
	if (!cqe) {
		if (starting)
			mlx4_unlock(&cq->lock);
		return ENOENT;
	}
	cqe_body_ready(cqe);
	step_ci(cq);
	cq->cur_cqe = cqe;

	if (kind & MLX4_CQE_IS_SEND_MASK) {
		if (unlikely(kind > LAST_SEND_KIND ||
			     cqe_qpn_be(cqe) != cq->send_qpn))
			return poll_one_ex_rare(cq, cqe, starting);
		ibcq->wr_id = retire_send(&cq->last_qp->sq,
					  be16toh(cqe->wqe_index));
	} else {
		if (unlikely(kind > LAST_RECV_KIND ||
			     cqe_qpn_be(cqe) != cq->recv_qpn))
			return poll_one_ex_rare(cq, cqe, starting);
		ibcq->wr_id = retire_recv(&cq->last_qp->rq);
	}
	/* ibcq->status is IBV_WC_SUCCESS already: cache_qp(). */
	return 0;
}

static int __attribute__((noinline, cold))
start_poll_contended(struct mlx4_cq *cq)
{
	mlx4_lock_contended(&cq->lock);
	return poll_one_ex(cq, 1);
}

/*
 * ibv_start_poll of a CQ whose lock is taken (@locked), or not: the
 * lock's mode, chosen when the CQ is made, chooses the function
 * with no test of the mode on the way (see bench/README).
 */
static inline __attribute__((always_inline))
int start_poll(struct ibv_cq_ex *ibcq, struct ibv_poll_cq_attr *attr,
	       int locked)
{
	struct mlx4_cq *cq = to_mcq_ex(ibcq);

	if (unlikely(attr->comp_mask))
		return EINVAL;

	/* Waiting for the lock is a call: out of line, with no frame here. */
	if (locked && unlikely(mlx4_lock_taken(&cq->lock)))
		return start_poll_contended(cq);
	return poll_one_ex(cq, 1);
}

static int mlx4_start_poll(struct ibv_cq_ex *ibcq, struct ibv_poll_cq_attr *attr)
{
	return start_poll(ibcq, attr, 1);
}

/* For a CQ one thread at a time polls (mlx4_lock_init()). */
static int mlx4_start_poll_single(struct ibv_cq_ex *ibcq,
				  struct ibv_poll_cq_attr *attr)
{
	return start_poll(ibcq, attr, 0);
}

static int mlx4_next_poll(struct ibv_cq_ex *ibcq)
{
	return poll_one_ex(to_mcq_ex(ibcq), 0);
}

static void mlx4_end_poll(struct ibv_cq_ex *ibcq)
{
	struct mlx4_cq *cq = to_mcq_ex(ibcq);

	update_cons_index(cq);
	mlx4_unlock(&cq->lock);
}

static enum ibv_wc_opcode mlx4_cq_read_opcode(struct ibv_cq_ex *ibcq)
{
	struct mlx4_cqe *cqe = to_mcq_ex(ibcq)->cur_cqe;

	return cqe_wc[cqe->owner_sr_opcode].opcode;
}

static uint32_t mlx4_cq_read_vendor_err(struct ibv_cq_ex *ibcq)
{
	struct mlx4_cqe *cqe = to_mcq_ex(ibcq)->cur_cqe;

	if ((cqe->owner_sr_opcode & MLX4_CQE_OPCODE_MASK) !=
	    MLX4_CQE_OPCODE_ERROR)
		return 0;
	return ((struct mlx4_err_cqe *)cqe)->vendor_err;
}

static uint32_t mlx4_cq_read_byte_len(struct ibv_cq_ex *ibcq)
{
	return be32toh(to_mcq_ex(ibcq)->cur_cqe->byte_cnt);
}

static __be32 mlx4_cq_read_imm_data(struct ibv_cq_ex *ibcq)
{
	struct mlx4_cqe *cqe = to_mcq_ex(ibcq)->cur_cqe;

	/* A send with invalidate reports the rkey, host order, here. */
	if ((cqe->owner_sr_opcode & MLX4_CQE_OPCODE_MASK) ==
	    MLX4_RECV_OPCODE_SEND_INVAL &&
	    !(cqe->owner_sr_opcode & MLX4_CQE_IS_SEND_MASK))
		return be32toh(cqe->immed_rss_invalid);
	return cqe->immed_rss_invalid;
}

static uint32_t mlx4_cq_read_qp_num(struct ibv_cq_ex *ibcq)
{
	return be32toh(to_mcq_ex(ibcq)->cur_cqe->vlan_my_qpn) &
	       MLX4_CQE_QPN_MASK;
}

static uint32_t mlx4_cq_read_src_qp(struct ibv_cq_ex *ibcq)
{
	return be32toh(to_mcq_ex(ibcq)->cur_cqe->g_mlpath_rqpn) & 0xffffff;
}

static unsigned int mlx4_cq_read_wc_flags(struct ibv_cq_ex *ibcq)
{
	struct mlx4_cqe *cqe = to_mcq_ex(ibcq)->cur_cqe;
	unsigned int opcode = cqe->owner_sr_opcode & MLX4_CQE_OPCODE_MASK;
	unsigned int flags;

	if (cqe->owner_sr_opcode & MLX4_CQE_IS_SEND_MASK)
		return cqe_wc[cqe->owner_sr_opcode].flags;
	flags = cqe_wc[opcode & 3].flags | csum_ok(to_mcq_ex(ibcq)->last_qp, cqe);
	if (be32toh(cqe->g_mlpath_rqpn) & 0x80000000)
		flags |= IBV_WC_GRH;
	return flags;
}

static uint32_t mlx4_cq_read_slid(struct ibv_cq_ex *ibcq)
{
	return be16toh(to_mcq_ex(ibcq)->cur_cqe->rlid);
}

static uint8_t mlx4_cq_read_sl(struct ibv_cq_ex *ibcq)
{
	struct mlx4_cq *cq = to_mcq_ex(ibcq);
	uint16_t sl_vid = be16toh(cq->cur_cqe->sl_vid);

	if (cq->last_qp && cq->last_qp->link_layer == IBV_LINK_LAYER_ETHERNET)
		return sl_vid >> 13;
	return sl_vid >> 12;
}

static uint8_t mlx4_cq_read_dlid_path_bits(struct ibv_cq_ex *ibcq)
{
	return (be32toh(to_mcq_ex(ibcq)->cur_cqe->g_mlpath_rqpn) >> 24) &
	       0x7f;
}

/*
 * The adapter's 48-bit clock when it wrote the CQE, in the place of SL
 * and SLID: a CQ asks for it at creation.  The same clock as the one
 * ibv_query_rt_values_ex() reads, in the same ticks.  When the low 16
 * bits are 0 the adapter's top 32 lag one behind, the carry not yet
 * in: mlx4_en adds it back (mlx4_en_get_cqe_ts(), en_clock.c), and so
 * must we, or that time goes 65536 ticks back (rdma-core's mlx4 reads
 * the bits as they are).
 */
static uint64_t mlx4_cq_read_completion_ts(struct ibv_cq_ex *ibcq)
{
	struct mlx4_cqe *cqe = to_mcq_ex(ibcq)->cur_cqe;
	uint32_t lo = (uint32_t)cqe->ts_15_8 << 8 | cqe->ts_7_0;

	/* The carry of the clock's wrap leaves the 48 bits: time 0. */
	return (((uint64_t)be32toh(cqe->ts_47_16) + !lo) << 16 | lo) &
	       MLX4_TICKS_MASK;
}

/* The same time in wall-clock nanoseconds (src/clock.c). */
static uint64_t mlx4_cq_read_completion_wallclock_ns(struct ibv_cq_ex *ibcq)
{
	struct mlx4_cq *cq = to_mcq_ex(ibcq);

	return mlx4_ticks_to_wallclock_ns(cq->ctx, &cq->wallclock,
					  mlx4_cq_read_completion_ts(ibcq));
}

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

/* An extended CQ: the readers of the fields @wc_flags asks for. */
void mlx4_cq_fill_ex_ops(struct mlx4_cq *cq, uint64_t wc_flags)
{
	struct ibv_cq_ex *ibcq = &cq->verbs_cq.cq_ex;

	cq->wc_flags = wc_flags;
	cq->timestamped = !!(wc_flags & MLX4_CQ_WITH_TIME);

	ibcq->start_poll = cq->lock.single_threaded ? mlx4_start_poll_single :
						      mlx4_start_poll;
	ibcq->next_poll = mlx4_next_poll;
	ibcq->end_poll = mlx4_end_poll;
	ibcq->read_opcode = mlx4_cq_read_opcode;
	ibcq->read_vendor_err = mlx4_cq_read_vendor_err;
	ibcq->read_wc_flags = mlx4_cq_read_wc_flags;
	if (wc_flags & IBV_WC_EX_WITH_BYTE_LEN)
		ibcq->read_byte_len = mlx4_cq_read_byte_len;
	if (wc_flags & IBV_WC_EX_WITH_IMM)
		ibcq->read_imm_data = mlx4_cq_read_imm_data;
	if (wc_flags & IBV_WC_EX_WITH_QP_NUM)
		ibcq->read_qp_num = mlx4_cq_read_qp_num;
	if (wc_flags & IBV_WC_EX_WITH_SRC_QP)
		ibcq->read_src_qp = mlx4_cq_read_src_qp;
	if (wc_flags & IBV_WC_EX_WITH_SLID)
		ibcq->read_slid = mlx4_cq_read_slid;
	if (wc_flags & IBV_WC_EX_WITH_SL)
		ibcq->read_sl = mlx4_cq_read_sl;
	if (wc_flags & IBV_WC_EX_WITH_DLID_PATH_BITS)
		ibcq->read_dlid_path_bits = mlx4_cq_read_dlid_path_bits;
	if (wc_flags & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP)
		ibcq->read_completion_ts = mlx4_cq_read_completion_ts;
	if (wc_flags & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK) {
		ibcq->read_completion_wallclock_ns =
			mlx4_cq_read_completion_wallclock_ns;
		mlx4_clock_anchor_set(cq->ctx, &cq->wallclock);
	}
}

/* ---------------------------------------------------------------------
 * Arming and events
 */

/*
 * The arm doorbell is one 64-bit word.  A 32-bit CPU stores it in two
 * halves, and the device pairs each second half with the last first half
 * on the UAR: two threads arming CQs of one context must not interleave
 * theirs.  The lock holder's stores reach the device before the next one's.
 */
static inline void write_cq_doorbell(struct mlx4_context *ctx, uint64_t value)
{
	void *db = (char *)ctx->uar + MLX4_CQ_DOORBELL;

#if MLX4_MMIO_STORE64
	mmio_write64_raw(db, value);
#else
	mlx4_lock_shared(&ctx->uar_lock);
	mmio_write64_raw(db, value);
	mmio_flush_writes();
	mlx4_unlock(&ctx->uar_lock);
#endif
}

int mlx4_arm_cq(struct ibv_cq *ibcq, int solicited)
{
	struct mlx4_cq *cq = to_mcq(ibcq);
	uint32_t sn = cq->arm_sn & 3;
	uint32_t ci = cq->cons_index & 0xffffff;
	uint32_t cmd = solicited ? MLX4_CQ_DB_REQ_NOT_SOL : MLX4_CQ_DB_REQ_NOT;
	__be32 doorbell[2];
	uint64_t value;

	*cq->arm_db = htobe32(sn << 28 | cmd | ci);

	/* The device reads the arm record when it sees the doorbell. */
	udma_to_device_barrier();

	doorbell[0] = htobe32(sn << 28 | cmd | cq->cqn);
	doorbell[1] = htobe32(ci);
	memcpy(&value, doorbell, sizeof(value));
	write_cq_doorbell(cq->ctx, value);
	return 0;
}

void mlx4_cq_event(struct ibv_cq *ibcq)
{
	/* The next arm is a new request: the device tells them apart. */
	to_mcq(ibcq)->arm_sn++;
}

/* ---------------------------------------------------------------------
 * Creation and destruction
 */

struct mlx4_create_cq {
	struct ibv_create_cq		ibv_cmd;
	struct mlx4_ib_create_cq	drv;
};

struct mlx4_create_cq_ex {
	struct ibv_create_cq_ex		ibv_cmd;
	struct mlx4_ib_create_cq	drv;
};

struct mlx4_create_cq_resp {
	struct ib_uverbs_create_cq_resp	ibv_resp;
	struct mlx4_ib_create_cq_resp	drv;
};

struct mlx4_create_cq_resp_ex {
	struct ib_uverbs_ex_create_cq_resp ibv_resp;
	struct mlx4_ib_create_cq_resp	drv;
};

static int create_cq_cmd(struct mlx4_cq *cq, struct ibv_context *context,
			 struct ibv_cq_init_attr_ex *attr, int nent,
			 int extended)
{
	int ret;

	if (!extended) {
		struct mlx4_create_cq cmd = {};
		struct mlx4_create_cq_resp resp = {};

		cmd.drv.buf_addr = (uintptr_t)cq->buf.buf;
		cmd.drv.db_addr = (uintptr_t)cq->set_ci_db;
		ret = ibv_cmd_create_cq(context, nent - 1, attr->channel,
					attr->comp_vector,
					&cq->verbs_cq.cq, &cmd.ibv_cmd,
					sizeof(cmd), &resp.ibv_resp,
					sizeof(resp));
		if (ret)
			return ret;
		mlx4_mark_defined(&resp, sizeof(resp));
		cq->cqn = resp.drv.cqn;
	} else {
		struct mlx4_create_cq_ex cmd = {};
		struct mlx4_create_cq_resp_ex resp = {};
		struct ibv_cq_init_attr_ex cmd_attr = *attr;

		/*
		 * libibverbs fills the command in from cmd_attr; its
		 * wc_flags with IBV_WC_EX_WITH_COMPLETION_TIMESTAMP become
		 * the kernel's IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION,
		 * which has the adapter write times into the CQEs.
		 */
		cmd_attr.cqe = nent - 1;
		if (attr->wc_flags & MLX4_CQ_WITH_TIME)
			cmd_attr.wc_flags |= IBV_WC_EX_WITH_COMPLETION_TIMESTAMP;
		/* The parent domain is ours alone; uverbs knows no such CQ attribute. */
		cmd_attr.comp_mask &= ~(uint32_t)IBV_CQ_INIT_ATTR_MASK_PD;
		cmd.drv.buf_addr = (uintptr_t)cq->buf.buf;
		cmd.drv.db_addr = (uintptr_t)cq->set_ci_db;
		ret = ibv_cmd_create_cq_ex(context, &cmd_attr, PABI65(NULL,)
					   &cq->verbs_cq,
					   &cmd.ibv_cmd, sizeof(cmd),
					   &resp.ibv_resp, sizeof(resp), 0);
		if (ret)
			return ret;
		mlx4_mark_defined(&resp, sizeof(resp));
		cq->cqn = resp.drv.cqn;
	}
	return 0;
}

/* A ring of @nent entries, from the CQ's parent domain if it gives one. */
static int alloc_cq_buf(struct mlx4_cq *cq, struct mlx4_buf *buf,
			uint32_t nent)
{
	return mlx4_alloc_queue_buf(cq->ctx, cq->domain, buf,
				    (size_t)nent * cq->cqe_size,
				    mlx4_page_size(&cq->ctx->ibv_ctx.context),
				    MLX4DV_RES_TYPE_CQ);
}

/*
 * The ring of @nent entries and its doorbell record, ready to poll; from
 * the allocator of cq->domain, the CQ's parent domain, if it has one.
 */
int mlx4_cq_alloc_ring(struct mlx4_cq *cq, struct mlx4_context *ctx, int nent)
{
	int ret;

	cq->ctx = ctx;
	cq->cqe_size = ctx->cqe_size;
	cq->cqe_shift = ctx->cqe_size == 64 ? 6 : 5;

	ret = alloc_cq_buf(cq, &cq->buf, nent);
	if (ret)
		return ret;
	mlx4_cq_init_buf(cq->buf.buf, nent, cq->cqe_size, 0);

	ret = mlx4_alloc_queue_db(ctx, cq->domain, &cq->dbr, &cq->set_ci_db);
	if (ret) {
		mlx4_free_buf(&cq->buf);
		return ret;
	}
	cq->arm_db = cq->set_ci_db + 1;

	cq->arm_sn = 1;
	cq->mask = nent - 1;
	cq->cqe_base = (char *)cq->buf.buf + cq->cqe_size -
		       sizeof(struct mlx4_cqe);
	cq->cqe_end = (char *)cq->cqe_base + (size_t)nent * cq->cqe_size;
	mlx4_cq_set_cons_index(cq, 0);
	cache_qp(cq, NULL);
	return 0;
}

void mlx4_cq_free_ring(struct mlx4_cq *cq)
{
	mlx4_free_queue_db(cq->ctx, cq->set_ci_db, &cq->dbr);
	cq->set_ci_db = cq->arm_db = NULL;
	mlx4_free_buf(&cq->buf);
}

enum {
	MLX4_CREATE_CQ_COMP_MASK = IBV_CQ_INIT_ATTR_MASK_FLAGS |
				   IBV_CQ_INIT_ATTR_MASK_PD,
};

/*
 * One thread at a time polls the CQ, by the application's word: it
 * was created single-threaded, or on a parent domain with a TD.
 */
static int cq_single_threaded(const struct ibv_cq_init_attr_ex *attr,
			      const struct mlx4_pd *domain)
{
	return ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
		(attr->flags & IBV_CREATE_CQ_ATTR_SINGLE_THREADED)) ||
	       mlx4_domain_single_threaded(domain);
}

static struct mlx4_cq *create_cq(struct ibv_context *context,
				 struct ibv_cq_init_attr_ex *attr,
				 int extended)
{
	struct mlx4_context *ctx = to_mctx(context);
	struct mlx4_cq *cq;
	int nent, ret;

	if (attr->comp_mask & ~(uint32_t)MLX4_CREATE_CQ_COMP_MASK) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
	    (attr->flags & ~(uint32_t)IBV_CREATE_CQ_ATTR_SINGLE_THREADED)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if ((attr->wc_flags & ~(uint64_t)MLX4_CQ_SUPPORTED_WC_FLAGS) ||
	    ((attr->wc_flags & MLX4_CQ_WITH_TIME) &&
	     (attr->wc_flags & MLX4_CQ_NOT_WITH_TIMESTAMP)) ||
	    ((attr->wc_flags & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK) &&
	     !mlx4_has_wallclock(ctx))) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (attr->cqe < 1 || attr->cqe > (uint32_t)ctx->max_cqe) {
		errno = EINVAL;
		return NULL;
	}

	cq = calloc(1, sizeof(*cq));
	if (!cq) {
		errno = ENOMEM;
		return NULL;
	}
	ret = mlx4_hold_cq_parent_domain(context, attr, &cq->domain);
	if (ret)
		goto err_free;
	mlx4_lock_init(&cq->lock, cq_single_threaded(attr, cq->domain));

	nent = mlx4_roundup_pow2(attr->cqe + 1);
	ret = mlx4_cq_alloc_ring(cq, ctx, nent);
	if (ret)
		goto err_domain;

	ret = create_cq_cmd(cq, context, attr, nent, extended);
	if (ret)
		goto err_ring;

	cq->verbs_cq.cq.cqe = nent - 1;
	return cq;

err_ring:
	mlx4_cq_free_ring(cq);
err_domain:
	mlx4_release_parent_domain(cq->domain);
err_free:
	free(cq);
	errno = ret;
	return NULL;
}

struct ibv_cq *mlx4_create_cq(struct ibv_context *context, int cqe,
			      struct ibv_comp_channel *channel,
			      int comp_vector)
{
	struct ibv_cq_init_attr_ex attr = {
		.cqe = cqe < 0 ? 0 : cqe,
		.channel = channel,
		.comp_vector = comp_vector,
	};
	struct mlx4_cq *cq;

	if (cqe < 0) {
		errno = EINVAL;
		return NULL;
	}
	cq = create_cq(context, &attr, 0);
	return cq ? &cq->verbs_cq.cq : NULL;
}

struct ibv_cq_ex *mlx4_create_cq_ex(struct ibv_context *context,
				    struct ibv_cq_init_attr_ex *attr)
{
	struct mlx4_cq *cq;

	cq = create_cq(context, attr, 1);
	if (!cq)
		return NULL;

	/*
	 * No verbs_init_cq() here: libibverbs calls it when this returns,
	 * and a second call would count the completion channel twice
	 * (ibv_destroy_comp_channel then fails with EBUSY for good).
	 */
	mlx4_cq_fill_ex_ops(cq, attr->wc_flags);
	return &cq->verbs_cq.cq_ex;
}

int mlx4_modify_cq(struct ibv_cq *ibcq, struct ibv_modify_cq_attr *attr)
{
	struct ibv_modify_cq cmd = {};

	return ibv_cmd_modify_cq(ibcq, attr, &cmd, sizeof(cmd));
}

int mlx4_destroy_cq(struct ibv_cq *ibcq)
{
	struct mlx4_cq *cq = to_mcq(ibcq);
	int ret;

	ret = ibv_cmd_destroy_cq(ibcq);
	if (ret)
		return ret;

	mlx4_cq_free_ring(cq);
	mlx4_release_parent_domain(cq->domain);
	free(cq);
	return 0;
}

/* ---------------------------------------------------------------------
 * Resizing
 */

/* CQEs the device produced that software has not consumed yet. */
static uint32_t outstanding_cqes(struct mlx4_cq *cq)
{
	uint32_t nent = cq->mask + 1;
	uint32_t n;

	for (n = 0; n < nent; n++)
		if (!cqe_is_sw_owned(get_cqe(cq, cq->cons_index + n),
				     cq->cons_index + n, nent))
			break;
	return n;
}

/*
 * After RESIZE_CQ the device writes a RESIZE CQE into the old buffer at
 * its producer index and continues in the new buffer at the next index.
 * Move what sits before the RESIZE CQE one index forward into the new
 * buffer, then consume the RESIZE CQE itself: the consumer index then
 * points at the first moved CQE, and the device's next one follows the
 * last.  A CQE moves with its whole entry; its owner bit is recomputed
 * for its new place.
 */
int mlx4_cq_resize_copy_cqes(struct mlx4_cq *cq, void *new_buf,
			     uint32_t new_nent)
{
	uint32_t old_nent = cq->mask + 1;
	uint32_t ci = cq->cons_index;
	uint32_t n, i, shift;
	struct mlx4_cqe *cqe, *dst;
	int found = 0;

	for (n = 0; n < old_nent; n++) {
		cqe = get_cqe(cq, ci + n);
		if (!cqe_is_sw_owned(cqe, ci + n, old_nent))
			break;
		cqe_body_ready(cqe);
		if ((cqe->owner_sr_opcode & MLX4_CQE_OPCODE_MASK) ==
		    MLX4_CQE_OPCODE_RESIZE) {
			found = 1;
			break;
		}
	}

	/* No RESIZE CQE: the device kept the indexes, so do we. */
	shift = found ? 1 : 0;

	for (i = 0; i < n; i++) {
		uint32_t to = ci + i + shift;
		uint8_t owner = (to & new_nent) ? MLX4_CQE_OWNER_MASK : 0;

		cqe = get_cqe(cq, ci + i);
		dst = (struct mlx4_cqe *)((char *)new_buf +
					  ((size_t)(to & (new_nent - 1)) <<
					   cq->cqe_shift));
		memcpy(dst, (char *)cqe + sizeof(*cqe) - cq->cqe_size,
		       cq->cqe_size);
		dst = (struct mlx4_cqe *)((char *)dst + cq->cqe_size -
					  sizeof(*cqe));
		dst->owner_sr_opcode = owner |
			(dst->owner_sr_opcode & ~MLX4_CQE_OWNER_MASK);
	}

	cq->cons_index += shift;
	return found ? 0 : ENOENT;
}

/*
 * After mlx4_cq_resize_copy_cqes(): poll the @nent entries of @new_buf
 * from now on, the old ring freed.
 */
void mlx4_cq_switch_ring(struct mlx4_cq *cq, struct mlx4_buf *new_buf,
			 uint32_t nent)
{
	mlx4_free_buf(&cq->buf);
	cq->buf = *new_buf;
	cq->mask = nent - 1;
	cq->cqe_base = (char *)cq->buf.buf + cq->cqe_size -
		       sizeof(struct mlx4_cqe);
	cq->cqe_end = (char *)cq->cqe_base + (size_t)nent * cq->cqe_size;
	mlx4_cq_set_cons_index(cq, cq->cons_index);
}

struct mlx4_resize_cq {
	struct ibv_resize_cq		ibv_cmd;
	struct mlx4_ib_resize_cq	drv;
};

int mlx4_resize_cq(struct ibv_cq *ibcq, int cqe)
{
	struct mlx4_cq *cq = to_mcq(ibcq);
	struct ib_uverbs_resize_cq_resp resp;
	struct mlx4_resize_cq cmd = {};
	struct mlx4_buf new_buf;
	uint32_t nent;
	int ret;

	if (cqe < 1 || cqe > cq->ctx->max_cqe)
		return EINVAL;

	mlx4_lock(&cq->lock);

	nent = mlx4_roundup_pow2(cqe + 1);
	if (nent == cq->mask + 1) {
		ret = 0;
		goto out;
	}

	/* Whatever is waiting to be polled must fit the new ring. */
	if (nent < outstanding_cqes(cq) + 1) {
		ret = EINVAL;
		goto out;
	}

	ret = alloc_cq_buf(cq, &new_buf, nent);
	if (ret)
		goto out;
	/* After the RESIZE CQE the consumer goes on at the next index. */
	mlx4_cq_init_buf(new_buf.buf, nent, cq->cqe_size, cq->cons_index + 1);

	cmd.drv.buf_addr = (uintptr_t)new_buf.buf;
	ret = ibv_cmd_resize_cq(ibcq, nent - 1, &cmd.ibv_cmd, sizeof(cmd),
				&resp, sizeof(resp));
	if (ret) {
		mlx4_free_buf(&new_buf);
		goto out;
	}

	mlx4_cq_resize_copy_cqes(cq, new_buf.buf, nent);
	mlx4_cq_switch_ring(cq, &new_buf, nent);
	ibcq->cqe = nent - 1;
	update_cons_index(cq);
out:
	mlx4_unlock(&cq->lock);
	return ret;
}

/* ---------------------------------------------------------------------
 * Cleaning up after a QP or XRC SRQ
 */

static int cqe_belongs(struct mlx4_cqe *cqe, uint32_t qpn,
		       struct mlx4_srq *srq)
{
	int is_send = cqe->owner_sr_opcode & MLX4_CQE_IS_SEND_MASK;

	if (srq && srq->is_xrc)
		return !is_send &&
		       (be32toh(cqe->vlan_my_qpn) & MLX4_XRC_QPN_BIT) &&
		       (be32toh(cqe->g_mlpath_rqpn) & MLX4_CQE_QPN_MASK) ==
		       srq->srqn;
	return (be32toh(cqe->vlan_my_qpn) & MLX4_CQE_QPN_MASK) == qpn;
}

/*
 * Drop the completions of QP @qpn (or of XRC SRQ @srq) that wait in @cq,
 * returning their SRQ WQEs to @srq.  Called with the CQ locked, when the
 * device no longer produces for that queue.  The survivors slide towards
 * the producer end so that the ring stays contiguous.
 */
void mlx4_cq_clean(struct mlx4_cq *cq, uint32_t qpn, struct mlx4_srq *srq)
{
	uint32_t nent = cq->mask + 1;
	uint32_t prod, nfreed = 0;
	struct mlx4_cqe *cqe, *dst;
	uint8_t owner;

	/* The QP goes away: poll must look the next one up afresh. */
	cache_qp(cq, NULL);
	/*
	 * A CQ the application drives itself has a consumer index we do
	 * not know: its CQEs are its own business (rdma-core's rule).
	 */
	if (cq->dv_owned)
		return;

	for (prod = cq->cons_index; prod - cq->cons_index < nent; prod++)
		if (!cqe_is_sw_owned(get_cqe(cq, prod), prod, nent))
			break;
	udma_from_device_barrier();

	while (prod-- != cq->cons_index) {
		cqe = get_cqe(cq, prod);
		mlx4_mark_defined(cqe, sizeof(*cqe));
		if (cqe_belongs(cqe, qpn, srq)) {
			if (srq && !(cqe->owner_sr_opcode &
				     MLX4_CQE_IS_SEND_MASK))
				mlx4_free_srq_wqe(srq,
						  be16toh(cqe->wqe_index) &
						  srq->mask);
			nfreed++;
		} else if (nfreed) {
			dst = get_cqe(cq, prod + nfreed);
			owner = dst->owner_sr_opcode & MLX4_CQE_OWNER_MASK;
			memcpy((char *)dst + sizeof(*dst) - cq->cqe_size,
			       (char *)cqe + sizeof(*cqe) - cq->cqe_size,
			       cq->cqe_size);
			dst->owner_sr_opcode = owner |
				(dst->owner_sr_opcode & ~MLX4_CQE_OWNER_MASK);
		}
	}

	if (nfreed) {
		mlx4_cq_set_cons_index(cq, cq->cons_index + nfreed);
		update_cons_index(cq);
	}
}

void mlx4_lock_cqs(struct mlx4_cq *a, struct mlx4_cq *b)
{
	if (!b || a == b) {
		if (a)
			mlx4_lock(&a->lock);
		return;
	}
	if (!a) {
		mlx4_lock(&b->lock);
		return;
	}
	/* Always in CQN order, so two destroyers cannot deadlock. */
	if (a->cqn < b->cqn) {
		mlx4_lock(&a->lock);
		mlx4_lock(&b->lock);
	} else {
		mlx4_lock(&b->lock);
		mlx4_lock(&a->lock);
	}
}

void mlx4_unlock_cqs(struct mlx4_cq *a, struct mlx4_cq *b)
{
	if (a)
		mlx4_unlock(&a->lock);
	if (b && b != a)
		mlx4_unlock(&b->lock);
}
