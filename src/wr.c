/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The ibv_wr_* interface (struct ibv_qp_ex): a batch of requests built
 * call by call into the send queue, handed over by ibv_wr_complete().
 * The WQE pieces are wqe.h's, the same as ibv_post_send's (qp.c).
 */
#include <config.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "annotate.h"
#include "mlx4.h"
#include "mmio.h"
#include "wqe.h"

/* ---------------------------------------------------------------------
 * The ibv_wr_* interface (ibv_qp_ex).  Each call writes its part of the
 * request's WQE in place, at the queue's next index: the opcode call the
 * control segment and the opcode's own segments, wr_set_ud_addr() the
 * datagram segment, the data setters the data or inline segments and the
 * WQE's size.  The opcode call writes the opcode into the WQE's first
 * word too, but keeps the owner bit the slot had from its last pass:
 * the device still reads the WQE as not its own.  Only wr_complete()
 * flips the owner bits, which hands the WQEs over, and rings once:
 * wr_abort() and an error in the batch leave nothing the device could
 * take.  (rdma-core's mlx5 builds its WQEs in place too; it gates them
 * with its doorbell record, mlx4 with the owner bits.)
 *
 * Flipping is enough, as every slot's owner bit is that of the last
 * pass that posted into it: mlx4_init_sq_ownership() sets the bit of
 * the pass before the first, and each post, by post_send or wr_*, hands
 * its WQE over with the bit of its own pass (owner_bit()), the next.
 */

/*
 * What a request cannot go without (b->need); wr_complete() refuses it
 * (EINVAL).  A raw request's opcode call sets WR_NEED_FRAME, and refuses
 * the request if the one before still lacks its frame.  A UD request's
 * adds WR_NEED_AH, which wr_set_ud_addr() clears: a request left without
 * its address leaves the bit set, and the next addition carries it
 * higher, where no setter clears it, so the opcode call tests nothing.
 * It adds once per request, and fewer than 2^15 requests of a batch go
 * unrefused (the others fail it anyway): b->need never wraps to 0.
 */
enum {
	WR_NEED_AH	= 1 << 0,	/* UD: wr_set_ud_addr() */
	WR_NEED_FRAME	= 1 << 1,	/* raw: a frame from a data setter */
};

_Static_assert(MLX4_MAX_SQ_WQES < 1 << 15,
	       "b->need counts a batch's UD requests without wrapping");

/*
 * What a batch needs beyond the QP's struct mlx4_wr_state: where a
 * refused request is written, so that its setters need not test for it
 * (one stride, aligned as the ring, for inline segments).
 */
struct mlx4_wr_batch {
	struct mlx4_wqe_ctrl_seg *scratch;
};

/* The owner bit in a WQE's big-endian owner_opcode. */
#define WQE_OWNER_BIT	MLX4_BE32(1U << 31)

static inline struct mlx4_qp *qpx_to_mqp(struct ibv_qp_ex *qpx)
{
	return to_mqp(&qpx->qp_base);
}

/*
 * An error fails the batch at wr_complete(), which rolls it back: the
 * requests after it may still take WQEs, as nothing is handed over.
 */
static inline void wr_set_err(struct mlx4_wr_state *b, int err)
{
	if (!b->err)
		b->err = err;
}

/*
 * The head at which @wq looks full, modulo 2^16 as its tail: its
 * unlocked tail (read as wq_looks_full() reads it) + max_post.
 */
static inline uint16_t wq_stop(struct mlx4_wq *wq)
{
	return wq->tail + wq->max_post;
}

/*
 * Why the request of @opcode and @flags may not have WQE @ind, or 0: the
 * opcode call's unlikely case (a failed batch, a request before it that
 * lacks a setter, a queue that looks full, what the QP refuses).
 */
static int __attribute__((noinline))
wr_refusal(struct mlx4_qp *qp, struct mlx4_wr_state *b, unsigned int opcode,
	   unsigned int flags, unsigned int ind)
{
	if (b->err)
		return b->err;
	if (b->need || !qp->sge_limit[opcode])
		return EINVAL;
	if ((qp->qpt_bit & QPT_DATAGRAM) && (flags & IBV_SEND_IP_CSUM) &&
	    !qp->csum)
		return EINVAL;
	if (wq_looks_full(&qp->sq, ind) && mlx4_wq_overflow(&qp->sq, ind))
		return ENOMEM;
	return 0;
}

/*
 * Take WQE @ind for the request: its wrid, and its opcode behind the
 * owner bit of the slot's last pass (the WQE counter of a BlueFlame post
 * then cleared).
 */
static inline struct mlx4_wqe_ctrl_seg *
wr_claim_wqe(struct ibv_qp_ex *qpx, const struct mlx4_send_op *op,
	     unsigned int ind)
{
	struct mlx4_qp *qp = qpx_to_mqp(qpx);
	unsigned int slot = ind & qp->sq.mask;
	struct mlx4_wqe_ctrl_seg *ctrl = get_send_wqe(qp, slot);

	qp->sq.wrid[slot] = qpx->wr_id;
	ctrl->owner_opcode = (ctrl->owner_opcode & WQE_OWNER_BIT) |
			     op->opcode_be;
	qp->sq.head = ind + 1;
	return ctrl;
}

/*
 * The control segment of a request of @opcode at @ctrl and what its
 * setters need; returns where the opcode's own segments go.  @qpt: see
 * wr_begin().
 */
static inline __attribute__((always_inline))
void *wr_set_ctrl(struct ibv_qp_ex *qpx, struct mlx4_wr_state *b,
		  struct mlx4_wqe_ctrl_seg *ctrl, enum ibv_wr_opcode opcode,
		  uint32_t imm, unsigned int qpt)
{
	const struct mlx4_send_op *op = &send_ops[opcode];
	struct mlx4_qp *qp = qpx_to_mqp(qpx);
	unsigned int flags = qpx->wr_flags;
	unsigned int hdr = sizeof(struct mlx4_wqe_ctrl_seg) + op->hdr_size;
	uint32_t size_be;
	uint64_t words;

	if (qpt == MLX4_QPT_BIT_UD)
		hdr += sizeof(struct mlx4_wqe_datagram_seg);
	words = ctrl_words_of(qp, flags) |
		ctrl_words(htobe32(hdr / 16), strong_order_bit(op));
	set_ctrl_words(ctrl, words, imm);
	size_be = bf_qpn_of(words);
	if (qpt != MLX4_QPT_BIT_UD)	/* (wr_set_sge_ud() needs none) */
		b->size_be = size_be;
	b->ctrl = ctrl;
	b->data = (char *)ctrl + hdr;
	/* No data setter after a bind or an invalidation: the WQE holds none. */
	b->sge_limit = op->segs < SEG_BIND_MW ? qp->sge_limit[opcode] : 0;
	b->opcode = opcode;
	if (qpt == MLX4_QPT_BIT_UD)
		b->need += WR_NEED_AH;
	else if (qpt == MLX4_QPT_BIT_RAW)
		b->need = WR_NEED_FRAME;	/* (other QPs' is always 0) */
	return (char *)ctrl + hdr - op->hdr_size;
}

/*
 * The opcode call's unlikely case, out of line so that the likely one
 * saves no registers (each opcode call tail-calls it, with what it needs
 * to write its own segments): a request refused goes into the scratch
 * WQE.  Returns where the opcode's own segments go.
 */
static void * __attribute__((noinline))
wr_begin_slow(struct ibv_qp_ex *qpx, enum ibv_wr_opcode opcode, uint32_t imm)
{
	struct mlx4_qp *qp = qpx_to_mqp(qpx);
	struct mlx4_wr_state *b = &qp->wr;
	struct mlx4_wqe_ctrl_seg *ctrl = qp->wrb->scratch;
	int err = wr_refusal(qp, b, opcode, qpx->wr_flags, qp->sq.head);

	if (err) {
		b->err = err;
	} else {
		ctrl = wr_claim_wqe(qpx, &send_ops[opcode], qp->sq.head);
		b->stop = wq_stop(&qp->sq);
	}
	return wr_set_ctrl(qpx, b, ctrl, opcode, imm,
			   qp->qpt_bit & (MLX4_QPT_BIT_UD | MLX4_QPT_BIT_RAW));
}

static void __attribute__((noinline))
wr_rdma_slow(struct ibv_qp_ex *qpx, enum ibv_wr_opcode opcode, uint32_t imm,
	     uint32_t rkey, uint64_t remote_addr)
{
	set_raddr_seg(wr_begin_slow(qpx, opcode, imm), remote_addr, rkey);
}

static void __attribute__((noinline))
wr_atomic_slow(struct ibv_qp_ex *qpx, enum ibv_wr_opcode opcode,
	       uint32_t rkey, uint64_t remote_addr, uint64_t swap_add,
	       uint64_t compare)
{
	struct mlx4_wqe_raddr_seg *rseg = wr_begin_slow(qpx, opcode, 0);

	set_raddr_seg(rseg, remote_addr, rkey);
	set_atomic_seg((void *)(rseg + 1), swap_add, compare);
}

/*
 * Does every QP that has this copy of an opcode call take @opcode, so
 * that the copy need not look at qp->sge_limit[]?  @qpt: see wr_begin();
 * the copies for 0 are RC, UC and XRC QPs' (a UD or raw QP has the
 * *_refused() call of each such opcode it lacks: wr_refuse_untaken()).
 */
static inline int wr_op_taken_by_all(enum ibv_wr_opcode opcode,
				     unsigned int qpt)
{
	unsigned int types = qpt ? qpt : QPT_WRITABLE;

	return (send_ops[opcode].qpt_mask & types) == types;
}

/*
 * Does the opcode call have to take its unlikely case: a queue that
 * looks full, an opcode its QP refuses (wr_op_taken_by_all() says when
 * none does), a raw request with a request before it that lacks its
 * frame (a UD request's lack is carried, see WR_NEED_AH), or a UD or raw
 * request asking for checksums?  @qpt: see wr_begin().
 */
static inline int wr_begin_unlikely(struct ibv_qp_ex *qpx,
				    enum ibv_wr_opcode opcode,
				    unsigned int qpt)
{
	struct mlx4_qp *qp = qpx_to_mqp(qpx);
	struct mlx4_wr_state *b = &qp->wr;

	return (uint16_t)qp->sq.head == b->stop ||
	       (!wr_op_taken_by_all(opcode, qpt) && !qp->sge_limit[opcode]) ||
	       (qpt == MLX4_QPT_BIT_RAW && b->need) ||
	       ((qpt & QPT_DATAGRAM) && (qpx->wr_flags & IBV_SEND_IP_CSUM));
}

/*
 * The opcode call, once wr_begin_unlikely() said no: a new request of
 * @opcode in the next WQE, with the wr_id and flags the caller set.
 * @qpt is the QP's type if UD or raw, else 0 (each has its own copy:
 * they need setters, and refuse checksum offload they lack).  Writes the
 * control segment and the WQE's size without payload; returns where the
 * opcode's own segments go.
 */
static inline __attribute__((always_inline))
void *wr_begin(struct ibv_qp_ex *qpx, enum ibv_wr_opcode opcode,
	       uint32_t imm, unsigned int qpt)
{
	struct mlx4_qp *qp = qpx_to_mqp(qpx);
	struct mlx4_wr_state *b = &qp->wr;

	return wr_set_ctrl(qpx, b, wr_claim_wqe(qpx, &send_ops[opcode],
						qp->sq.head),
			   opcode, imm, qpt);
}

/* An opcode call without segments of its own. */
static inline __attribute__((always_inline))
void wr_begin_plain(struct ibv_qp_ex *qpx, enum ibv_wr_opcode opcode,
		    uint32_t imm, unsigned int qpt)
{
	if (unlikely(wr_begin_unlikely(qpx, opcode, qpt)))
		wr_begin_slow(qpx, opcode, imm);
	else
		wr_begin(qpx, opcode, imm, qpt);
}

static void wr_send(struct ibv_qp_ex *qpx)
{
	wr_begin_plain(qpx, IBV_WR_SEND, 0, 0);
}

static void wr_send_ud(struct ibv_qp_ex *qpx)
{
	wr_begin_plain(qpx, IBV_WR_SEND, 0, MLX4_QPT_BIT_UD);
}

static void wr_send_raw(struct ibv_qp_ex *qpx)
{
	wr_begin_plain(qpx, IBV_WR_SEND, 0, MLX4_QPT_BIT_RAW);
}

static void wr_send_imm(struct ibv_qp_ex *qpx, __be32 imm_data)
{
	wr_begin_plain(qpx, IBV_WR_SEND_WITH_IMM, imm_data, 0);
}

static void wr_send_imm_ud(struct ibv_qp_ex *qpx, __be32 imm_data)
{
	wr_begin_plain(qpx, IBV_WR_SEND_WITH_IMM, imm_data, MLX4_QPT_BIT_UD);
}

/*
 * The *_refused() calls: an opcode call of a QP that does not take the
 * opcode, though RC, UC and XRC QPs all do (wr_refuse_untaken()).  The
 * unlikely case refuses it.
 */
static void wr_send_imm_refused(struct ibv_qp_ex *qpx, __be32 imm_data)
{
	wr_begin_slow(qpx, IBV_WR_SEND_WITH_IMM, imm_data);
}

static void wr_send_inv(struct ibv_qp_ex *qpx, uint32_t invalidate_rkey)
{
	wr_begin_plain(qpx, IBV_WR_SEND_WITH_INV, htobe32(invalidate_rkey), 0);
}

static void wr_send_inv_refused(struct ibv_qp_ex *qpx,
				uint32_t invalidate_rkey)
{
	wr_begin_slow(qpx, IBV_WR_SEND_WITH_INV, htobe32(invalidate_rkey));
}

/* An RDMA opcode call: the remote address segment. */
static inline __attribute__((always_inline))
void wr_begin_rdma(struct ibv_qp_ex *qpx, enum ibv_wr_opcode opcode,
		   uint32_t imm, uint32_t rkey, uint64_t remote_addr)
{
	if (unlikely(wr_begin_unlikely(qpx, opcode, 0)))
		return wr_rdma_slow(qpx, opcode, imm, rkey, remote_addr);
	set_raddr_seg(wr_begin(qpx, opcode, imm, 0), remote_addr, rkey);
}

static void wr_rdma_write(struct ibv_qp_ex *qpx, uint32_t rkey,
			  uint64_t remote_addr)
{
	wr_begin_rdma(qpx, IBV_WR_RDMA_WRITE, 0, rkey, remote_addr);
}

static void wr_rdma_write_imm(struct ibv_qp_ex *qpx, uint32_t rkey,
			      uint64_t remote_addr, __be32 imm_data)
{
	wr_begin_rdma(qpx, IBV_WR_RDMA_WRITE_WITH_IMM, imm_data, rkey,
		      remote_addr);
}

static void wr_rdma_write_refused(struct ibv_qp_ex *qpx, uint32_t rkey,
				  uint64_t remote_addr)
{
	wr_rdma_slow(qpx, IBV_WR_RDMA_WRITE, 0, rkey, remote_addr);
}

static void wr_rdma_write_imm_refused(struct ibv_qp_ex *qpx, uint32_t rkey,
				      uint64_t remote_addr, __be32 imm_data)
{
	wr_rdma_slow(qpx, IBV_WR_RDMA_WRITE_WITH_IMM, imm_data, rkey,
		     remote_addr);
}

static void wr_rdma_read(struct ibv_qp_ex *qpx, uint32_t rkey,
			 uint64_t remote_addr)
{
	wr_begin_rdma(qpx, IBV_WR_RDMA_READ, 0, rkey, remote_addr);
}

/* An atomic opcode call: the remote address and the operands. */
static inline __attribute__((always_inline))
void wr_begin_atomic(struct ibv_qp_ex *qpx, enum ibv_wr_opcode opcode,
		     uint32_t rkey, uint64_t remote_addr, uint64_t swap_add,
		     uint64_t compare)
{
	struct mlx4_wqe_raddr_seg *rseg;

	if (unlikely(wr_begin_unlikely(qpx, opcode, 0)))
		return wr_atomic_slow(qpx, opcode, rkey, remote_addr,
				      swap_add, compare);
	rseg = wr_begin(qpx, opcode, 0, 0);
	set_raddr_seg(rseg, remote_addr, rkey);
	set_atomic_seg((void *)(rseg + 1), swap_add, compare);
}

static void wr_atomic_cmp_swp(struct ibv_qp_ex *qpx, uint32_t rkey,
			      uint64_t remote_addr, uint64_t compare,
			      uint64_t swap)
{
	wr_begin_atomic(qpx, IBV_WR_ATOMIC_CMP_AND_SWP, rkey, remote_addr,
			swap, compare);
}

static void wr_atomic_fetch_add(struct ibv_qp_ex *qpx, uint32_t rkey,
				uint64_t remote_addr, uint64_t add)
{
	wr_begin_atomic(qpx, IBV_WR_ATOMIC_FETCH_AND_ADD, rkey, remote_addr,
			add, 0);
}

/* Key changes, rarer: their unlikely case is no tail call. */
static void *wr_begin_key(struct ibv_qp_ex *qpx, enum ibv_wr_opcode opcode)
{
	if (unlikely(wr_begin_unlikely(qpx, opcode, 0)))
		return wr_begin_slow(qpx, opcode, 0);
	return wr_begin(qpx, opcode, 0, 0);
}

static void wr_bind_mw(struct ibv_qp_ex *qpx, struct ibv_mw *mw,
		       uint32_t rkey, const struct ibv_mw_bind_info *info)
{
	void *seg = wr_begin_key(qpx, IBV_WR_BIND_MW);

	if (!mw) {
		wr_set_err(&qpx_to_mqp(qpx)->wr, EINVAL);
		return;
	}
	set_bind_seg(seg, mw, rkey, info);
}

static void wr_bind_mw_refused(struct ibv_qp_ex *qpx, struct ibv_mw *mw,
			       uint32_t rkey,
			       const struct ibv_mw_bind_info *info)
{
	wr_begin_slow(qpx, IBV_WR_BIND_MW, 0);
}

static void wr_local_inv(struct ibv_qp_ex *qpx, uint32_t invalidate_rkey)
{
	set_local_inv_seg(wr_begin_key(qpx, IBV_WR_LOCAL_INV), invalidate_rkey);
}

static void wr_local_inv_refused(struct ibv_qp_ex *qpx,
				 uint32_t invalidate_rkey)
{
	wr_begin_slow(qpx, IBV_WR_LOCAL_INV, 0);
}

/* The request's WQE ends at @end: its size. */
static inline void wr_set_size(struct mlx4_qp *qp, struct mlx4_wr_state *b,
			       void *end)
{
	unsigned int bytes = (char *)end - (char *)b->ctrl;

	b->ctrl->bf_qpn = htobe32((bytes + 15) / 16) |
			  (b->ctrl->bf_qpn & MLX4_BE32(MLX4_WQE_CTRL_FENCE));
	wqe_spans(qp, bytes);
}

/*
 * A gather list the request's WQE does not hold: ignored after a bind
 * or an invalidation (as post_send ignores theirs), else as post_send
 * refuses it.
 */
static void __attribute__((noinline))
wr_gather_refused(struct mlx4_qp *qp, struct mlx4_wr_state *b, size_t num_sge)
{
	if (send_ops[b->opcode].segs >= SEG_BIND_MW)
		return;
	wr_set_err(b, num_sge > qp->sq.max_gs ? EINVAL : ENOMEM);
}

static void wr_set_sge_list(struct ibv_qp_ex *qpx, size_t num_sge,
			    const struct ibv_sge *sg_list)
{
	struct mlx4_qp *qp = qpx_to_mqp(qpx);
	struct mlx4_wr_state *b = &qp->wr;
	struct mlx4_wqe_data_seg *dseg = b->data;
	int i;

	if (unlikely(num_sge >= b->sge_limit)) {
		wr_gather_refused(qp, b, num_sge);
		return;
	}
	/* Last first: the first segment's block goes valid last. */
	for (i = num_sge - 1; i >= 0; i--) {
		if (unlikely(!sge_length_ok(sg_list[i].length)))
			wr_set_err(b, EINVAL);
		set_data_seg(dseg + i, sg_list + i);
	}
	wr_set_size(qp, b, dseg + num_sge);
}

static void __attribute__((noinline))
wr_set_other_sge(struct ibv_qp_ex *qpx, uint32_t lkey, uint64_t addr,
		 uint32_t length)
{
	struct ibv_sge sge = { .addr = addr, .length = length, .lkey = lkey };

	wr_set_sge_list(qpx, 1, &sge);
}

/*
 * One entry of 1 byte to max_msg_sz into a WQE that holds it (anything
 * else: wr_set_other_sge()).  Its WQE is one block at most, but for UD,
 * whose 80 bytes sq_stamp_at_start() counted.
 */
static void wr_set_sge(struct ibv_qp_ex *qpx, uint32_t lkey, uint64_t addr,
		       uint32_t length)
{
	struct mlx4_wr_state *b = &qpx_to_mqp(qpx)->wr;
	struct ibv_sge sge = { .addr = addr, .length = length, .lkey = lkey };

	if (unlikely(b->sge_limit < 2 || length - 1 >= MLX4_MAX_MSG_SZ))
		return wr_set_other_sge(qpx, lkey, addr, length);
	set_plain_data_seg(b->data, &sge);
	b->ctrl->bf_qpn = b->size_be + htobe32(1);
}

/*
 * wr_set_sge() of a UD QP whose WQEs hold a gather entry.  It takes
 * SENDs only, with or without immediate (the other opcodes are refused
 * into the scratch WQE, which has room for the segment too): their data
 * segment always follows the datagram segment, and needs no test of
 * b->sge_limit.  The WQE's 4 units of headers become 5 by an OR, which
 * writes the same if the setter is called again (ibv_wr_post(3): once
 * per request).
 */
static void wr_set_sge_ud(struct ibv_qp_ex *qpx, uint32_t lkey,
			  uint64_t addr, uint32_t length)
{
	struct mlx4_wqe_ctrl_seg *ctrl = qpx_to_mqp(qpx)->wr.ctrl;
	struct ibv_sge sge = { .addr = addr, .length = length, .lkey = lkey };

	if (unlikely(length - 1 >= MLX4_MAX_MSG_SZ))
		return wr_set_other_sge(qpx, lkey, addr, length);
	set_plain_data_seg((void *)((char *)(ctrl + 1) +
				    sizeof(struct mlx4_wqe_datagram_seg)),
			   &sge);
	ctrl->bf_qpn |= htobe32(1);
}

/* The request's inline payload ends at @end: its size, and BlueFlame's. */
static inline void wr_end_inline(struct mlx4_qp *qp, struct mlx4_wr_state *b,
				 void *end)
{
	unsigned int bytes = (char *)end - (char *)b->ctrl;

	wr_set_size(qp, b, end);
	/* No payload takes no BlueFlame, as a one-unit WQE never does. */
	if (end != b->data && (bytes + 15) / 16 <= qp->bf_max_size)
		b->bf_blocks = (bytes + 63) / 64;
}

/*
 * The bytes are copied now, as the caller may reuse its buffers once the
 * call returns.  Inline data is for SEND and RDMA WRITE only; after a
 * bind or an invalidation it is ignored, as their gather lists are.
 */
static void wr_set_inline_data_list(struct ibv_qp_ex *qpx, size_t num_buf,
				    const struct ibv_data_buf *buf_list)
{
	struct mlx4_qp *qp = qpx_to_mqp(qpx);
	struct mlx4_wr_state *b = &qp->wr;
	struct inline_writer w;
	size_t i, len = 0;

	if (!b->sge_limit)
		return;	/* no payload, or refused (b->err is set) */
	if (!payload_may_go_inline(&send_ops[b->opcode])) {
		wr_set_err(b, EINVAL);
		return;
	}
	for (i = 0; i < num_buf; i++) {
		if (buf_list[i].length > (size_t)qp->max_inline_data - len) {
			wr_set_err(b, ENOMEM);
			return;
		}
		len += buf_list[i].length;
	}

	inline_start(&w, b->data);
	for (i = 0; i < num_buf; i++)
		inline_put(&w, buf_list[i].addr, buf_list[i].length);
	wr_end_inline(qp, b, inline_end(&w));
}

/*
 * One buffer as wr_set_inline_data_list() takes it: out of line, so
 * that wr_set_inline_data() keeps no frame for it.
 */
static void __attribute__((noinline))
wr_set_other_inline(struct ibv_qp_ex *qpx, void *addr, size_t length)
{
	struct ibv_data_buf buf = { .addr = addr, .length = length };

	wr_set_inline_data_list(qpx, 1, &buf);
}

/*
 * 1 byte to the opcode's inline_limit[], what post_lone_inline() takes,
 * the same way (anything else: wr_set_other_inline()).
 */
static void wr_set_inline_data(struct ibv_qp_ex *qpx, void *addr,
			       size_t length)
{
	struct mlx4_qp *qp = qpx_to_mqp(qpx);
	struct mlx4_wr_state *b = &qp->wr;
	unsigned int room;

	if (unlikely(length - 1 >= qp->inline_limit[b->opcode]))
		return wr_set_other_inline(qpx, addr, length);
	room = MLX4_INLINE_ALIGN -
	       ((uintptr_t)b->data + sizeof(struct mlx4_wqe_inline_seg)) %
	       MLX4_INLINE_ALIGN;
	wr_end_inline(qp, b, set_inline_payload(b->data, room, addr, length));
}

/*
 * A raw QP's data setters: the frame starts with the destination MAC,
 * which the control segment repeats.
 */
static void wr_set_frame(struct mlx4_wr_state *b, const void *frame,
			 size_t length)
{
	if (length < RAW_DMAC_LEN) {
		wr_set_err(b, EINVAL);
		return;
	}
	mlx4_set_raw_ctrl(b->ctrl, frame, b->ctrl->srcrb_flags);
	b->need &= ~WR_NEED_FRAME;
}

static void wr_set_sge_raw(struct ibv_qp_ex *qpx, uint32_t lkey,
			   uint64_t addr, uint32_t length)
{
	wr_set_sge(qpx, lkey, addr, length);
	wr_set_frame(&qpx_to_mqp(qpx)->wr, (void *)(uintptr_t)addr, length);
}

static void wr_set_sge_list_raw(struct ibv_qp_ex *qpx, size_t num_sge,
				const struct ibv_sge *sg_list)
{
	wr_set_sge_list(qpx, num_sge, sg_list);
	wr_set_frame(&qpx_to_mqp(qpx)->wr,
		     num_sge ? (void *)(uintptr_t)sg_list[0].addr : NULL,
		     num_sge ? sg_list[0].length : 0);
}

/* The frame as the WQE's first inline segment has it. */
static void wr_set_inline_frame(struct mlx4_wr_state *b, size_t length)
{
	wr_set_frame(b, (char *)b->data + sizeof(struct mlx4_wqe_inline_seg),
		     length);
}

static void wr_set_inline_data_raw(struct ibv_qp_ex *qpx, void *addr,
				   size_t length)
{
	wr_set_inline_data(qpx, addr, length);
	wr_set_inline_frame(&qpx_to_mqp(qpx)->wr, length);
}

static void wr_set_inline_data_list_raw(struct ibv_qp_ex *qpx, size_t num_buf,
					const struct ibv_data_buf *buf_list)
{
	size_t i, length = 0;

	wr_set_inline_data_list(qpx, num_buf, buf_list);
	for (i = 0; i < num_buf; i++)
		length += buf_list[i].length;
	wr_set_inline_frame(&qpx_to_mqp(qpx)->wr, length);
}

static void wr_set_ud_addr(struct ibv_qp_ex *qpx, struct ibv_ah *ah,
			   uint32_t remote_qpn, uint32_t remote_qkey)
{
	struct mlx4_wr_state *b = &qpx_to_mqp(qpx)->wr;

	if (unlikely(!ah))
		return;	/* still WR_NEED_AH */
	set_datagram_seg((void *)(b->ctrl + 1), ah, remote_qpn, remote_qkey);
	b->need &= ~WR_NEED_AH;
}

static void wr_set_xrc_srqn(struct ibv_qp_ex *qpx, uint32_t remote_srqn)
{
	struct mlx4_wqe_ctrl_seg *ctrl = qpx_to_mqp(qpx)->wr.ctrl;

	ctrl->srcrb_flags = (ctrl->srcrb_flags & ~xrc_srqn_bits(0xffffff)) |
			    xrc_srqn_bits(remote_srqn);
}

/* A QP of another type has no destination to set: as post_send, ignored. */
static void wr_ignore_ud_addr(struct ibv_qp_ex *qpx, struct ibv_ah *ah,
			      uint32_t remote_qpn, uint32_t remote_qkey)
{
}

static void wr_ignore_xrc_srqn(struct ibv_qp_ex *qpx, uint32_t remote_srqn)
{
}

/* A new batch, the SQ locked. */
static inline void wr_start_batch(struct mlx4_qp *qp)
{
	struct mlx4_wr_state *b = &qp->wr;

	b->head = qp->sq.head;
	b->stop = wq_stop(&qp->sq);
}

static void __attribute__((noinline))
wr_start_contended(struct mlx4_qp *qp)
{
	mlx4_lock_contended(&qp->sq.lock);
	wr_start_batch(qp);
}

/*
 * wr_start() of a QP whose send queue's lock is taken: the lock's mode,
 * chosen when the QP is made, chooses the function (wr_start_single()
 * for a thread domain's), with no test of the mode on the way (see
 * bench/README).
 */
static void wr_start(struct ibv_qp_ex *qpx)
{
	struct mlx4_qp *qp = qpx_to_mqp(qpx);

	if (unlikely(mlx4_lock_taken(&qp->sq.lock)))
		return wr_start_contended(qp);
	wr_start_batch(qp);
}

static void wr_start_single(struct ibv_qp_ex *qpx)
{
	wr_start_batch(qpx_to_mqp(qpx));
}

/*
 * Between batches, and so before a batch's first opcode call, a setter
 * (a misuse) does nothing: it writes into the scratch WQE and takes no
 * data, as after a bind.  The state pointed at the batch's last WQE,
 * which the device owns now.  Each end of a batch calls this.
 */
static inline void wr_idle(struct mlx4_wr_state *b)
{
	struct mlx4_wr_state idle = { .sge_limit = 0, .opcode = IBV_WR_BIND_MW };

	b->place = b->idle;
	/* One store: two, the compiler would load them as a vector. */
	b->sge_limit_opcode = idle.sge_limit_opcode;
}

/*
 * Forget the batch.  Its WQEs' owner bits were never flipped; their
 * later blocks get back the stamps the data overwrote.  (Their wrid
 * entries are dead: each slot's next request writes its own before the
 * device can complete it.  qp->sq_stamp stays as the batch left it:
 * stamping a free slot is harmless.)
 */
static void wr_rollback(struct mlx4_qp *qp, struct mlx4_wr_state *b)
{
	unsigned int n;

	for (n = b->head; n != qp->sq.head; n++)
		stamp_later_blocks(qp, get_send_wqe(qp, n));
	qp->sq.head = b->head;
	b->pending = 0;
	wr_idle(b);
}

static void wr_abort(struct ibv_qp_ex *qpx)
{
	struct mlx4_qp *qp = qpx_to_mqp(qpx);

	wr_rollback(qp, &qp->wr);
	mlx4_unlock(&qp->sq.lock);
}

/*
 * Give a WQE of the batch, all written, to the device: the owner bit of
 * the slot's last pass becomes this pass's.
 */
static inline void wr_hand_over(struct mlx4_wqe_ctrl_seg *ctrl)
{
	ctrl->owner_opcode ^= WQE_OWNER_BIT;
}

/*
 * The batch's WQEs all written: one barrier, then their owner bits, in
 * order.  The doorbell, rung after a barrier of its own, has the device
 * look at them all.
 */
static void wr_hand_over_batch(struct mlx4_qp *qp, struct mlx4_wr_state *b)
{
	unsigned int n;

	udma_to_device_barrier();
	for (n = b->head; n != qp->sq.head; n++)
		wr_hand_over(get_send_wqe(qp, n));
}

/*
 * Stamp ahead of the batch's WQEs as post_send does after each, but
 * only where the slot 'spare' WQEs ahead lies beyond the batch: one
 * inside holds a WQE of the batch, which a stamp would break (it lay
 * beyond the device's prefetch until handed over, and needs none).
 */
static void wr_stamp_ahead(struct mlx4_qp *qp, struct mlx4_wr_state *b)
{
	unsigned int n = b->head;

	if (qp->sq.head - b->head > qp->sq_spare_wqes)
		n = qp->sq.head - qp->sq_spare_wqes;
	for (; n != qp->sq.head; n++)
		stamp_ahead_of(qp, get_send_wqe(qp, n));
}

/*
 * wr_complete() for a lone request with inline data that fits: by
 * BlueFlame, as post_send's goes (its first word with the owner bit
 * flipped, and the WQE counter).  Out of line, as the copy takes
 * registers.
 */
static int __attribute__((noinline))
wr_complete_bf(struct mlx4_qp *qp, struct mlx4_wr_state *b)
{
	struct mlx4_wqe_ctrl_seg *ctrl = b->ctrl;

	ring_send_doorbell(qp, ctrl,
			   (struct wqe_head){
				   ctrl->owner_opcode ^ WQE_OWNER_BIT,
				   ctrl->bf_qpn },
			   qp->sq.head - 1, 1, b->bf_blocks * 64);
	b->bf_blocks = 0;
	if (qp->sq_stamp)
		stamp_ahead_of(qp, b->ctrl);
	wr_idle(b);
	mlx4_unlock(&qp->sq.lock);
	return 0;
}

/*
 * wr_complete() but for a lone request: a failed batch (rolled back),
 * an empty batch, or several requests.  Out of line, so that the
 * doorbell path saves no registers.
 */
static int __attribute__((noinline))
wr_complete_slow(struct mlx4_qp *qp, struct mlx4_wr_state *b)
{
	int err = b->err;

	if (err || b->need) {
		wr_rollback(qp, b);
		mlx4_unlock(&qp->sq.lock);
		return err ? err : EINVAL;	/* else a setter lacked */
	}
	if (qp->sq.head != b->head) {
		wr_hand_over_batch(qp, b);
		ring_uar_doorbell(qp);
		b->bf_blocks = 0;
		if (qp->sq_stamp)
			wr_stamp_ahead(qp, b);
		/* A second wr_complete() (a misuse) finds nothing to flip. */
		b->head = qp->sq.head;
	}
	wr_idle(b);
	mlx4_unlock(&qp->sq.lock);
	return 0;
}

/*
 * Whether a lone request's wr_complete() need test qp->sq_stamp before
 * stamping ahead, fixed per QP at creation: a UD QP whose WQEs may reach
 * a second block has an sq_stamp of 128 at least from the start
 * (sq_stamp_at_start()), and never 0.
 */
enum wr_stamping {
	WR_STAMP_IF_LONG_WQES,
	WR_STAMP_ALWAYS,
};

/* b->pending with b->bf_blocks only, whatever the byte order. */
static inline uint32_t wr_pending_bf(void)
{
	struct mlx4_wr_state s = { .bf_blocks = 0xff };

	return s.pending;
}

/*
 * wr_complete() when its one test fails: a lone request by BlueFlame
 * (inline data, no error), or wr_complete_slow()'s cases.  Tail calls
 * only, so that neither way pays for the other's registers.
 */
static int __attribute__((noinline))
wr_complete_other(struct mlx4_qp *qp, struct mlx4_wr_state *b)
{
	if (!((qp->sq.head - b->head - 1) | (b->pending & ~wr_pending_bf())))
		return wr_complete_bf(qp, b);
	return wr_complete_slow(qp, b);
}

/* Hand the batch over and ring once. */
static inline __attribute__((always_inline))
int wr_complete_stamping(struct ibv_qp_ex *qpx, enum wr_stamping stamping)
{
	struct mlx4_qp *qp = qpx_to_mqp(qpx);
	struct mlx4_wr_state *b = &qp->wr;
	struct mlx4_wqe_ctrl_seg *ctrl;

	/* One test: a lone request, and nothing pending. */
	if (unlikely((qp->sq.head - b->head - 1) | b->pending))
		return wr_complete_other(qp, b);
	ctrl = b->ctrl;	/* read once: after a barrier, it would be again */
	udma_to_device_barrier();
	wr_hand_over(ctrl);
	ring_uar_doorbell(qp);
	if (stamping == WR_STAMP_ALWAYS || qp->sq_stamp)
		stamp_ahead_of(qp, ctrl);
	wr_idle(b);
	mlx4_unlock(&qp->sq.lock);
	return 0;
}

static int wr_complete(struct ibv_qp_ex *qpx)
{
	return wr_complete_stamping(qpx, WR_STAMP_IF_LONG_WQES);
}

static int wr_complete_stamped(struct ibv_qp_ex *qpx)
{
	return wr_complete_stamping(qpx, WR_STAMP_ALWAYS);
}

/*
 * Creation time: may this QP (its transport set in qp->sge_limit[])
 * take every opcode in @flags?  EOPNOTSUPP for a flag this device has
 * no WQE for (TSO, memory-window-less...), EINVAL for an opcode its
 * transport refuses, as rdma-core's mlx5 answers.
 */
static int check_send_ops(struct mlx4_qp *qp, uint64_t flags)
{
	uint64_t known = 0;
	unsigned int op;

	for (op = 0; op < MLX4_WR_OPCODES; op++)
		known |= send_ops[op].qp_ex_flag;
	if (flags & ~known)
		return EOPNOTSUPP;
	for (op = 0; op < MLX4_WR_OPCODES; op++)
		if ((flags & send_ops[op].qp_ex_flag) && !qp->sge_limit[op])
			return EINVAL;
	return 0;
}

/*
 * The opcode calls of RC, UC and XRC QPs build the opcodes all three
 * take without a test (wr_op_taken_by_all()): a QP that does not take
 * one of those (qp->sge_limit[], from send_ops[]) gets the call that
 * refuses it.
 */
static void wr_refuse_untaken(struct mlx4_qp *qp, struct ibv_qp_ex *qpx)
{
#define REFUSE_UNTAKEN(call, opcode)					\
	do {								\
		if (!qp->sge_limit[opcode])				\
			qpx->call = call##_refused;			\
	} while (0)
	REFUSE_UNTAKEN(wr_send_imm, IBV_WR_SEND_WITH_IMM);
	REFUSE_UNTAKEN(wr_send_inv, IBV_WR_SEND_WITH_INV);
	REFUSE_UNTAKEN(wr_rdma_write, IBV_WR_RDMA_WRITE);
	REFUSE_UNTAKEN(wr_rdma_write_imm, IBV_WR_RDMA_WRITE_WITH_IMM);
	REFUSE_UNTAKEN(wr_bind_mw, IBV_WR_BIND_MW);
	REFUSE_UNTAKEN(wr_local_inv, IBV_WR_LOCAL_INV);
#undef REFUSE_UNTAKEN
}

/*
 * Give the QP its ibv_qp_ex calls, once its queues are known: those of
 * its type (UD and raw QPs need their own setters, others ignore them),
 * and for the opcodes it does not take, those that refuse them.
 */
int mlx4_qp_init_wr_api(struct mlx4_qp *qp, uint64_t send_ops_flags)
{
	struct ibv_qp_ex *qpx = &qp->verbs_qp.qp_ex;
	/*
	 * The scratch WQE holds the headers of any refused request too, up
	 * to control, datagram, remote address and atomic segments (112
	 * bytes), beyond a small stride.
	 */
	unsigned int scratch_shift =
		qp->sq.wqe_shift > 7 ? qp->sq.wqe_shift : 7;
	struct mlx4_wr_batch *b;
	uintptr_t scratch;
	int ret;

	ret = check_send_ops(qp, send_ops_flags);
	if (ret)
		return ret;
	b = calloc(1, sizeof(*b) + MLX4_INLINE_ALIGN - 1 +
		   ((size_t)1 << scratch_shift));
	if (!b)
		return ENOMEM;
	scratch = (uintptr_t)(b + 1);
	scratch = (scratch + MLX4_INLINE_ALIGN - 1) & ~(uintptr_t)
		  (MLX4_INLINE_ALIGN - 1);
	b->scratch = (struct mlx4_wqe_ctrl_seg *)scratch;
	qp->wrb = b;
	memset(&qp->wr, 0, sizeof(qp->wr));
	qp->wr.idle.ctrl = b->scratch;
	qp->wr.idle.data = b->scratch + 1;
	wr_idle(&qp->wr);	/* no batch yet */

	qpx->wr_complete = wr_complete;
	qpx->wr_abort = wr_abort;
	qpx->wr_send = wr_send;
	qpx->wr_send_imm = wr_send_imm;
	qpx->wr_send_inv = wr_send_inv;
	qpx->wr_rdma_write = wr_rdma_write;
	qpx->wr_rdma_write_imm = wr_rdma_write_imm;
	qpx->wr_rdma_read = wr_rdma_read;
	qpx->wr_atomic_cmp_swp = wr_atomic_cmp_swp;
	qpx->wr_atomic_fetch_add = wr_atomic_fetch_add;
	qpx->wr_bind_mw = wr_bind_mw;
	qpx->wr_local_inv = wr_local_inv;
	qpx->wr_set_sge = wr_set_sge;
	qpx->wr_set_sge_list = wr_set_sge_list;
	qpx->wr_set_inline_data = wr_set_inline_data;
	qpx->wr_set_inline_data_list = wr_set_inline_data_list;
	qpx->wr_set_ud_addr = wr_ignore_ud_addr;
	qpx->wr_set_xrc_srqn = wr_ignore_xrc_srqn;
	qpx->wr_start = qp->sq.lock.single_threaded ? wr_start_single :
						      wr_start;

	switch (qp->qpt_bit) {
	case MLX4_QPT_BIT_UD:
		qpx->wr_send = wr_send_ud;
		qpx->wr_send_imm = wr_send_imm_ud;
		qpx->wr_set_ud_addr = wr_set_ud_addr;
		if (sq_stamp_at_start(qp))
			qpx->wr_complete = wr_complete_stamped;
		if (qp->sq.max_gs)
			qpx->wr_set_sge = wr_set_sge_ud;
		break;
	case MLX4_QPT_BIT_XRC:
		qpx->wr_set_xrc_srqn = wr_set_xrc_srqn;
		break;
	case MLX4_QPT_BIT_RAW:
		qpx->wr_send = wr_send_raw;
		qpx->wr_set_sge = wr_set_sge_raw;
		qpx->wr_set_sge_list = wr_set_sge_list_raw;
		qpx->wr_set_inline_data = wr_set_inline_data_raw;
		qpx->wr_set_inline_data_list = wr_set_inline_data_list_raw;
		break;
	}
	wr_refuse_untaken(qp, qpx);
	qp->verbs_qp.comp_mask |= VERBS_QP_EX;
	return 0;
}
