/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Queue pairs' work queues: the send queue's geometry, and the classic
 * data path that fills the queues (post_send, post_recv).  The WQE
 * building both send paths share is in wqe.h, the ibv_wr_* calls in
 * wr.c, creation and the other control verbs in qp_verbs.c.
 *
 * One buffer holds both work queues; the queue with the larger stride
 * comes first.
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
 * Send queue geometry
 */

/* The MLX4_QPT_BIT_* of a QP type (0: none that posts sends). */
static unsigned int qpt_bit_of(enum ibv_qp_type type)
{
	switch (type) {
	case IBV_QPT_RC:
		return MLX4_QPT_BIT_RC;
	case IBV_QPT_UC:
		return MLX4_QPT_BIT_UC;
	case IBV_QPT_UD:
		return MLX4_QPT_BIT_UD;
	case IBV_QPT_XRC_SEND:
		return MLX4_QPT_BIT_XRC;
	case IBV_QPT_RAW_PACKET:
		return MLX4_QPT_BIT_RAW;
	default:
		return 0;
	}
}

/*
 * Bytes in front of the payload: the control segment, a UD QP's
 * datagram segment, and the longest of the segments its type's opcodes
 * put there, of those with a gather list as long as the QP's (an
 * atomic's one 8-byte buffer and a key operation's none fit any stride).
 */
static int sq_header_size(enum ibv_qp_type type)
{
	unsigned int qpt_bit = qpt_bit_of(type), op, segs = 0;

	for (op = 0; op < MLX4_WR_OPCODES; op++) {
		const struct mlx4_send_op *o = &send_ops[op];

		if ((o->qpt_mask & qpt_bit) && o->payload != PAYLOAD_NONE &&
		    o->max_sge == SGE_QP_MAX && o->hdr_size > segs)
			segs = o->hdr_size;
	}
	if (qpt_bit == MLX4_QPT_BIT_UD)
		segs += sizeof(struct mlx4_wqe_datagram_seg);
	return sizeof(struct mlx4_wqe_ctrl_seg) + segs;
}

/*
 * Inline payload that fits from @start to @end of a WQE: an inline
 * segment never crosses a 64-byte boundary, so each 64-byte block the
 * payload touches costs one 4-byte segment header.
 */
static int inline_capacity(int start, int end)
{
	int blocks = (end + MLX4_INLINE_ALIGN - 1) / MLX4_INLINE_ALIGN -
		     start / MLX4_INLINE_ALIGN;

	return end - start - blocks * (int)sizeof(struct mlx4_wqe_inline_seg);
}

/* Inline bytes a 64-byte block holds after its segment header. */
#define INLINE_BLOCK_ROOM \
	(MLX4_INLINE_ALIGN - (int)sizeof(struct mlx4_wqe_inline_seg))

static inline int min_int(int a, int b)
{
	return a < b ? a : b;
}

/*
 * Scatter/gather entries and inline bytes a stride holds, after @extra
 * bytes of LSO segment (a raw QP made for LSO).
 */
static void sq_stride_limits(enum ibv_qp_type type, int extra, int wqe_shift,
			     int *max_gs, int *max_inline)
{
	int end = min_int(1 << wqe_shift, MLX4_MAX_WQE_SIZE);
	int start = sq_header_size(type) + extra;

	*max_gs = (end - start) / (int)sizeof(struct mlx4_wqe_data_seg);
	*max_inline = inline_capacity(start, end);
}

/*
 * Pick the smallest stride that holds max_send_sge entries and
 * max_inline_data bytes, and the ring size that leaves max_send_wr
 * WQEs usable besides the spare ones the device's prefetcher may read.
 */
int mlx4_calc_sq_size(struct mlx4_qp *qp, enum ibv_qp_type type,
		      struct ibv_qp_cap *cap)
{
	unsigned int shift, spare, cnt;
	int max_gs, max_inline;

	for (shift = MLX4_MIN_SQ_STRIDE; shift <= MLX4_MAX_SQ_STRIDE; shift++) {
		sq_stride_limits(type, qp->tso_room, shift, &max_gs,
				 &max_inline);
		if (max_gs >= (int)cap->max_send_sge &&
		    max_inline >= (int)cap->max_inline_data)
			break;
	}
	if (shift > MLX4_MAX_SQ_STRIDE)
		return EINVAL;

	spare = (2048 >> shift) + 1;
	cnt = mlx4_roundup_pow2(cap->max_send_wr + spare);
	if (cnt > MLX4_MAX_SQ_WQES)
		return EINVAL;

	qp->sq.wqe_shift = shift;
	qp->sq.wqe_cnt = cnt;
	qp->sq.mask = cnt - 1;
	qp->sq_spare_wqes = spare;
	qp->sq.max_post = cnt - spare;
	qp->owner_shift = 31 - mlx4_ilog2(cnt);
	qp->sq_stamp = 0;
	return 0;
}

/*
 * The fast path's recipe for opcode @op on @qp (its qpt_bit and
 * sge_limit[] set), and the payloads its lone inline path takes, up to
 * @max_inline bytes.  An opcode whose WQE is not fixed headers then data
 * gets none: its fast_op's opcode_be of 0 means "take the slow path".
 */
static void set_fast_op(struct mlx4_qp *qp, unsigned int op, int max_inline)
{
	const struct mlx4_send_op *o = &send_ops[op];
	struct mlx4_fast_op *f = &qp->fast_op[op];
	unsigned int data = sizeof(struct mlx4_wqe_ctrl_seg) + o->hdr_size;

	memset(f, 0, sizeof(*f));
	qp->inline_limit[op] = 0;
	/* A raw frame takes the general path, which sets its MAC. */
	if (qp->sge_limit[op] < 2 || o->segs >= SEG_BIND_MW ||
	    o->imm == IMM_INVAL_RKEY || qp->qpt_bit == MLX4_QPT_BIT_RAW)
		return;
	if (qp->qpt_bit == MLX4_QPT_BIT_UD)
		data += sizeof(struct mlx4_wqe_datagram_seg);
	f->opcode_be = o->opcode_be;
	f->size_be = htobe32(data / 16 + 1);
	f->imm_mask = o->imm == IMM_DATA ? ~0U : 0;
	f->data_offset = data;
	f->segs = o->segs;
	f->inline_room = MLX4_INLINE_ALIGN -
			 (data + sizeof(struct mlx4_wqe_inline_seg)) %
			 MLX4_INLINE_ALIGN;
	/* The lone inline path fills two blocks at most. */
	if (payload_may_go_inline(o))
		qp->inline_limit[op] = min_int(max_inline,
					       f->inline_room +
					       INLINE_BLOCK_ROOM);
}

/*
 * qp->sge_limit[] for a QP of @max_gs gather entries: one byte per
 * opcode, 0 if not allowed, else max SGEs + 1.
 */
static void set_sge_limit(struct mlx4_qp *qp, unsigned int op, int max_gs)
{
	const struct mlx4_send_op *o = &send_ops[op];
	int limit = max_gs < o->max_sge ? max_gs : o->max_sge;

	/* A response scatters into at most max_sge_rd entries. */
	if (o->payload == PAYLOAD_IN && qp->ctx->max_sge_rd &&
	    limit > qp->ctx->max_sge_rd)
		limit = qp->ctx->max_sge_rd;
	qp->sge_limit[op] = (o->qpt_mask & qp->qpt_bit) ? limit + 1 : 0;
}

/* What the send queue actually holds, for the caps the user sees. */
void mlx4_set_sq_limits(struct mlx4_qp *qp, enum ibv_qp_type type,
			struct ibv_qp_cap *cap)
{
	int max_gs, max_inline;
	int max_sge = qp->ctx->max_sge;
	unsigned int op;

	sq_stride_limits(type, qp->tso_room, qp->sq.wqe_shift, &max_gs,
			 &max_inline);
	if (max_gs > max_sge)
		max_gs = max_sge;
	qp->sq.max_gs = max_gs;
	qp->max_inline_data = max_inline;

	cap->max_send_wr = qp->sq.max_post;
	cap->max_send_sge = max_gs;
	cap->max_inline_data = max_inline;

	qp->qpt_bit = qpt_bit_of(type);
	qp->sq_stamp = sq_stamp_at_start(qp);	/* nothing posted yet */
	for (op = 0; op < MLX4_WR_OPCODES; op++) {
		set_sge_limit(qp, op, max_gs);
		set_fast_op(qp, op, max_inline);
	}
	mlx4_qp_update_csum(qp);
}

/*
 * Checksum offload, as rdma-core decides it: a UD QP on an InfiniBand
 * port, or a raw packet QP on an Ethernet port, of a device that offers
 * it computes the IP and TCP/UDP checksums of IBV_SEND_IP_CSUM sends and
 * reports IBV_WC_IP_CSUM_OK.  Other QPs send such requests without (UD
 * and raw: refused).  qp->ctrl_of_flags[], which folds it in with
 * sq_sig_all, is filled here.
 */
void mlx4_qp_update_csum(struct mlx4_qp *qp)
{
	uint32_t bits = MLX4_BE32(MLX4_WQE_CTRL_IP_HDR_CSUM |
				  MLX4_WQE_CTRL_TCP_UDP_CSUM);
	unsigned int i;

	qp->csum = (qp->qpt_bit == MLX4_QPT_BIT_UD && qp->ctx->ud_ip_csum &&
		    qp->link_layer == IBV_LINK_LAYER_INFINIBAND) ||
		   (qp->qpt_bit == MLX4_QPT_BIT_RAW && qp->ctx->raw_ip_csum &&
		    qp->link_layer == IBV_LINK_LAYER_ETHERNET);
	for (i = 0; i < MLX4_CTRL_OF_FLAGS; i++) {
		union mlx4_ctrl_of_flags *c = &qp->ctrl_of_flags[i];

		c->srcrb_flags = qp->sq_signal_bits |
				 srcrb_of_flags[(i & (IBV_SEND_SIGNALED |
						      IBV_SEND_SOLICITED)) >> 1];
		if ((i & IBV_SEND_IP_CSUM) && qp->csum)
			c->srcrb_flags |= bits;
		c->bf_qpn = i & IBV_SEND_FENCE ?
			   MLX4_BE32(MLX4_WQE_CTRL_FENCE) : 0;
	}
}

static inline void *get_recv_wqe(struct mlx4_wq *rq, unsigned int n)
{
	return (char *)rq->buf + ((n & rq->mask) << rq->wqe_shift);
}

/*
 * Before the first pass every WQE is invalid: owner bit set (pass 0
 * expects it clear) and every later 64-byte block stamped.
 */
void mlx4_init_sq_ownership(struct mlx4_qp *qp)
{
	unsigned int n;

	qp->sq_stamp = sq_stamp_at_start(qp);
	for (n = 0; n < qp->sq.wqe_cnt; n++) {
		struct mlx4_wqe_ctrl_seg *ctrl = get_send_wqe(qp, n);

		ctrl->owner_opcode = htobe32(1U << 31);
		ctrl->bf_qpn = 0;
		stamp_later_blocks(qp, ctrl);
	}
}

/* ---------------------------------------------------------------------
 * ibv_post_send: each request checked, then built from wqe.h's pieces
 */

/* Sum of the gather list, for the inline limit. */
static inline uint64_t sge_total(const struct ibv_send_wr *wr)
{
	uint64_t total = 0;
	int i;

	for (i = 0; i < wr->num_sge; i++)
		total += wr->sg_list[i].length;
	return total;
}

/* The gather list of @wr as inline payload at @seg; returns its end. */
static inline __attribute__((always_inline))
void *set_inline_data(void *seg, const struct ibv_send_wr *wr)
{
	struct inline_writer w;
	int i;

	inline_start(&w, seg);
	for (i = 0; i < wr->num_sge; i++)
		inline_put(&w, (const char *)(uintptr_t)wr->sg_list[i].addr,
			   wr->sg_list[i].length);
	return inline_end(&w);
}

/*
 * Is WQE @ind beyond the queue's room?  tail moves under the CQ's lock
 * as completions are polled, so a queue that looks full is looked at
 * again under that lock before the post fails.
 */
int mlx4_wq_overflow(struct mlx4_wq *wq, unsigned int ind)
{
	unsigned int used;

	mlx4_lock(&wq->cq->lock);
	used = (uint16_t)(ind - wq->tail);
	mlx4_unlock(&wq->cq->lock);
	return used >= wq->max_post;
}

/* The owner bit of WQE @ind in its big-endian owner_opcode: the pass. */
static inline uint32_t owner_bit(struct mlx4_qp *qp, unsigned int ind)
{
	return htobe32(ind << qp->owner_shift) & MLX4_BE32(1U << 31);
}

/*
 * A UD request needs its address handle, a raw frame its destination MAC
 * in its first segment (the control segment repeats it), and checksums
 * their offload.
 */
static int __attribute__((noinline))
raw_wr_ok(struct mlx4_qp *qp, const struct ibv_send_wr *wr)
{
	return wr->num_sge >= 1 && wr->sg_list[0].length >= RAW_DMAC_LEN &&
	       (!(wr->send_flags & IBV_SEND_IP_CSUM) || qp->csum);
}

static inline int datagram_wr_ok(struct mlx4_qp *qp,
				 const struct ibv_send_wr *wr)
{
	if (qp->qpt_bit == MLX4_QPT_BIT_RAW)
		return raw_wr_ok(qp, wr);
	return wr->wr.ud.ah &&
	       (!(wr->send_flags & IBV_SEND_IP_CSUM) || qp->csum);
}

/*
 * What build_plain_wqe() takes, if the request asks for no inline data
 * (the caller's test): one SGE of 1 byte to max_msg_sz (one test: no
 * empty segment to encode, no length the port refuses), an opcode with a
 * recipe in qp->fast_op[] (allowed here; fixed headers, then the data).
 */
static inline int send_wr_is_plain(struct mlx4_qp *qp, struct ibv_send_wr *wr)
{
	return (unsigned int)wr->opcode < MLX4_WR_OPCODES &&
	       qp->fast_op[wr->opcode].opcode_be && wr->num_sge == 1 &&
	       wr->sg_list->length - 1 < MLX4_MAX_MSG_SZ &&
	       (likely(qp->qpt_bit != MLX4_QPT_BIT_UD) ||
		datagram_wr_ok(qp, wr));
}

static inline int wr_is_inline(const struct ibv_send_wr *wr)
{
	return (wr->send_flags & IBV_SEND_INLINE) &&
	       payload_may_go_inline(&send_ops[wr->opcode]);
}

/*
 * An LSO request needs a raw QP made for LSO (max_tso_header), headers
 * that fit it and hold the destination MAC, a segment size, and its
 * payload in scatter/gather entries, not inline.
 */
static int tso_wr_refused(struct mlx4_qp *qp, const struct ibv_send_wr *wr)
{
	if (qp->qpt_bit != MLX4_QPT_BIT_RAW || !qp->tso_room ||
	    !wr->tso.hdr || wr->tso.hdr_sz < RAW_DMAC_LEN ||
	    wr->tso.hdr_sz > qp->max_tso_header || !wr->tso.mss ||
	    (wr->send_flags & IBV_SEND_INLINE))
		return EINVAL;
	if ((unsigned int)wr->num_sge > (unsigned int)qp->sq.max_gs)
		return ENOMEM;
	return 0;
}

/*
 * Why the general path refuses @wr, checked before anything is written.
 * The errno values are rdma-core's: ENOMEM for what does not fit.
 */
static int check_send_wr(struct mlx4_qp *qp, struct ibv_send_wr *wr)
{
	if (wr->opcode == IBV_WR_TSO)
		return tso_wr_refused(qp, wr);
	if ((unsigned int)wr->opcode >= MLX4_WR_OPCODES ||
	    !qp->sge_limit[wr->opcode])
		return EINVAL;	/* no such WQE on this transport */
	if ((unsigned int)wr->num_sge >= qp->sge_limit[wr->opcode])
		return ENOMEM;	/* more SGEs than the WQE holds */
	if ((qp->qpt_bit & QPT_DATAGRAM) && !datagram_wr_ok(qp, wr))
		return EINVAL;
	if (wr->opcode == IBV_WR_BIND_MW && !wr->bind_mw.mw)
		return EINVAL;
	if (wr_is_inline(wr)) {
		if (sge_total(wr) > (uint64_t)qp->max_inline_data)
			return ENOMEM;
	} else if (send_ops[wr->opcode].segs < SEG_BIND_MW) {
		int i;

		for (i = 0; i < wr->num_sge; i++)
			if (!sge_length_ok(wr->sg_list[i].length))
				return EINVAL;
	}
	return 0;
}

/* The remote address and atomic segments, right after the control. */
static inline void set_remote_segs(void *seg, struct ibv_send_wr *wr,
				   unsigned int segs)
{
	if (segs == SEG_NONE)
		return;
	if (segs == SEG_RADDR) {
		set_raddr_seg(seg, wr->wr.rdma.remote_addr, wr->wr.rdma.rkey);
	} else if (segs == SEG_ATOMIC) {
		struct mlx4_wqe_atomic_seg *aseg = (void *)((char *)seg +
					sizeof(struct mlx4_wqe_raddr_seg));

		set_raddr_seg(seg, wr->wr.atomic.remote_addr,
			      wr->wr.atomic.rkey);
		if (wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP)
			set_atomic_seg(aseg, wr->wr.atomic.swap,
				       wr->wr.atomic.compare_add);
		else
			set_atomic_seg(aseg, wr->wr.atomic.compare_add, 0);
	}
}

/*
 * post_send's control segment, and for UD the datagram segment behind
 * it, from @wr.  @strong is the strong-order bit or 0.  @qpt_bit is
 * qp->qpt_bit, or a constant in a copy made for one transport.  Returns
 * where the opcode's own segments start.
 */
static inline __attribute__((always_inline))
void *set_wr_ctrl_segs(struct mlx4_qp *qp, struct mlx4_wqe_ctrl_seg *ctrl,
		       const struct ibv_send_wr *wr, unsigned int qpt_bit,
		       uint32_t strong, uint32_t imm)
{
	uint32_t srcrb = srcrb_of(qp, wr->send_flags) | strong;
	void *seg = ctrl + 1;

	if (unlikely(qpt_bit & (MLX4_QPT_BIT_UD | MLX4_QPT_BIT_XRC))) {
		if (qpt_bit == MLX4_QPT_BIT_UD) {
			set_datagram_seg(seg, wr->wr.ud.ah,
					 wr->wr.ud.remote_qpn,
					 wr->wr.ud.remote_qkey);
			seg = (char *)seg + sizeof(struct mlx4_wqe_datagram_seg);
		} else {
			srcrb |= xrc_srqn_bits(wr->qp_type.xrc.remote_srqn);
		}
	}
	set_ctrl_seg(ctrl, srcrb, imm);
	return seg;
}

/* What goes into ctrl->imm for an opcode of the general path. */
static inline uint32_t wqe_imm(const struct mlx4_send_op *op,
			       const struct ibv_send_wr *wr)
{
	if (op->imm == IMM_DATA)
		return wr->imm_data;
	if (op->imm == IMM_INVAL_RKEY)
		return htobe32(wr->invalidate_rkey);
	return 0;
}

/*
 * A plain request (send_wr_is_plain()) from its QP's recipe, into the
 * WQE at @ctrl.  Returns its head, for hand_over_wqe().
 */
static inline __attribute__((always_inline))
struct wqe_head build_plain_wqe(struct mlx4_qp *qp, struct ibv_send_wr *wr,
			 struct mlx4_wqe_ctrl_seg *ctrl, unsigned int ind)
{
	const struct mlx4_fast_op *op = &qp->fast_op[wr->opcode];
	void *seg;

	seg = set_wr_ctrl_segs(qp, ctrl, wr, qp->qpt_bit, 0,
			       wr->imm_data & op->imm_mask);
	set_remote_segs(seg, wr, op->segs);
	set_plain_data_seg((void *)((char *)ctrl + op->data_offset),
			   wr->sg_list);

	qp->sq.wrid[ind & qp->sq.mask] = wr->wr_id;
	return wqe_head(qp, op->opcode_be | owner_bit(qp, ind), op->size_be,
			wr->send_flags);
}

/* A raw frame's control segment (wqe.h says what goes where). */
void mlx4_set_raw_ctrl(struct mlx4_wqe_ctrl_seg *ctrl, const void *frame,
		       uint32_t srcrb)
{
	const char *dmac = frame;

	srcrb |= MLX4_BE32(MLX4_WQE_CTRL_SOLICIT);
	memcpy(&srcrb, dmac, 2);
	ctrl->srcrb_flags = srcrb;
	memcpy(&ctrl->imm, dmac + 2, 4);
}

/*
 * owner_opcode's "big LSO header" bit: the kernel's build_lso_seg() sets
 * it (blh) when the LSO segment reaches past the WQE's first 64 bytes;
 * mlx4_en (mlx4_en_xmit) and DPDK's mlx4 (mlx4_tx_burst, MLX4_WQE_CTRL_RR)
 * set it on every LSO WQE, as raw frames are what they send: so do we.
 */
#define MLX4_WQE_CTRL_BIG_LSO_HDR	(1U << 6)

/* WQE offset of the headers in an LSO WQE: control, then mss_hdr_size. */
#define LSO_HDR_START	(sizeof(struct mlx4_wqe_ctrl_seg) + \
			 sizeof(struct mlx4_wqe_lso_seg))

/*
 * The headers, padded to @end (WQE offset, a multiple of 16), into the
 * WQE at @wqe, but the first word of each 64-byte block after the first:
 * that word is the block's stamp, which keeps the device's prefetcher
 * off the block until its data segments are in too
 * (set_lso_block_words(); DPDK's mlx4_tx_burst_fill_tso_hdr() holds
 * them back the same way).
 */
static void set_lso_headers(char *wqe, const char *padded, unsigned int end)
{
	unsigned int off, next;

	for (off = LSO_HDR_START; off < end; off = next + 4) {
		next = (off & ~63U) + 64;
		if (next > end)
			next = end;
		memcpy(wqe + off, padded + off - LSO_HDR_START, next - off);
	}
}

/* The words set_lso_headers() held back, once everything else is in. */
static void set_lso_block_words(char *wqe, const char *padded,
				unsigned int end)
{
	unsigned int off;

	udma_to_device_barrier();
	for (off = 64; off < end; off += 64)
		memcpy(wqe + off, padded + off - LSO_HDR_START, 4);
}

/*
 * An LSO request (IBV_WR_TSO) on a raw packet QP: the adapter cuts the
 * payload into segments of tso.mss bytes, each sent behind a copy of the
 * headers, which go in the WQE after their size word; it updates the
 * lengths, IDs, sequence numbers and checksums, so the checksum bits are
 * set whatever the request's flags.
 */
static struct wqe_head build_tso_wqe(struct mlx4_qp *qp,
				     struct ibv_send_wr *wr,
				     struct mlx4_wqe_ctrl_seg *ctrl,
				     unsigned int ind)
{
	struct mlx4_wqe_lso_seg *lso = (void *)(ctrl + 1);
	unsigned int room = (sizeof(*lso) + wr->tso.hdr_sz + 15) & ~15U;
	unsigned int end = sizeof(*ctrl) + room;
	struct mlx4_wqe_data_seg *dseg = (void *)((char *)ctrl + end);
	unsigned int size = end / 16 + wr->num_sge;
	char padded[MLX4_MAX_TSO_HEADER + 16];
	int i;

	memcpy(padded, wr->tso.hdr, wr->tso.hdr_sz);
	memset(padded + wr->tso.hdr_sz, 0, room - sizeof(*lso) - wr->tso.hdr_sz);
	set_ctrl_seg(ctrl, srcrb_of(qp, wr->send_flags), 0);
	mlx4_set_raw_ctrl(ctrl, wr->tso.hdr, ctrl->srcrb_flags |
		     MLX4_BE32(MLX4_WQE_CTRL_IP_HDR_CSUM |
			       MLX4_WQE_CTRL_TCP_UDP_CSUM));
	lso->mss_hdr_size = htobe32((uint32_t)wr->tso.mss << 16 |
				    wr->tso.hdr_sz);
	set_lso_headers((char *)ctrl, padded, end);
	for (i = wr->num_sge - 1; i >= 0; i--)
		set_data_seg(dseg + i, wr->sg_list + i);
	set_lso_block_words((char *)ctrl, padded, end);
	wqe_spans(qp, size * 16);
	qp->sq.wrid[ind & qp->sq.mask] = wr->wr_id;
	return wqe_head(qp, MLX4_BE32(MLX4_OPCODE_LSO |
				      MLX4_WQE_CTRL_BIG_LSO_HDR) |
			owner_bit(qp, ind), htobe32(size), wr->send_flags);
}

/*
 * Any request that passed check_send_wr(), into the WQE at @ctrl.
 * Returns its head; *@bf_bytes gets its length in whole blocks
 * if it carries inline bytes and fits the BlueFlame buffer (BlueFlame
 * only for a payload: rdma-core's rule too), else 0.
 */
static struct wqe_head build_send_wqe(struct mlx4_qp *qp,
				      struct ibv_send_wr *wr,
				      struct mlx4_wqe_ctrl_seg *ctrl,
				      unsigned int ind, unsigned int *bf_bytes)
{
	const struct mlx4_send_op *op;
	unsigned int size;
	void *seg;

	*bf_bytes = 0;
	if (unlikely(wr->opcode == IBV_WR_TSO))
		return build_tso_wqe(qp, wr, ctrl, ind);
	op = &send_ops[wr->opcode];

	seg = set_wr_ctrl_segs(qp, ctrl, wr, qp->qpt_bit,
			       strong_order_bit(op), wqe_imm(op, wr));
	if (unlikely(qp->qpt_bit == MLX4_QPT_BIT_RAW))
		mlx4_set_raw_ctrl(ctrl, (void *)(uintptr_t)wr->sg_list[0].addr,
			     ctrl->srcrb_flags);
	if (op->segs == SEG_BIND_MW)
		set_bind_seg(seg, wr->bind_mw.mw, wr->bind_mw.rkey,
			     &wr->bind_mw.bind_info);
	else if (op->segs == SEG_LOCAL_INV)
		set_local_inv_seg(seg, wr->invalidate_rkey);
	else
		set_remote_segs(seg, wr, op->segs);
	seg = (char *)seg + op->hdr_size;

	if (wr_is_inline(wr)) {
		void *end = set_inline_data(seg, wr);

		size = ((uintptr_t)end - (uintptr_t)ctrl + 15) / 16;
		if (end != seg && size <= qp->bf_max_size)
			*bf_bytes = (size * 16 + 63) & ~63U;
	} else {
		struct mlx4_wqe_data_seg *dseg = seg;
		int i, n = op->segs < SEG_BIND_MW ? wr->num_sge : 0;

		/* Last first: the first segment's block goes valid last. */
		for (i = n - 1; i >= 0; i--)
			set_data_seg(dseg + i, wr->sg_list + i);
		size = ((uintptr_t)seg - (uintptr_t)ctrl) / 16 + n;
	}
	wqe_spans(qp, size * 16);

	qp->sq.wrid[ind & qp->sq.mask] = wr->wr_id;
	return wqe_head(qp, op->opcode_be | owner_bit(qp, ind), htobe32(size),
			wr->send_flags);
}

/*
 * The steps of post_send_list().  Why @wr may not go in as WQE @ind (0:
 * it may), with nothing written.
 */
static int send_wr_refused(struct mlx4_qp *qp, struct ibv_send_wr *wr,
			   unsigned int ind)
{
	if (wq_looks_full(&qp->sq, ind) && mlx4_wq_overflow(&qp->sq, ind))
		return ENOMEM;
	return check_send_wr(qp, wr);
}

/*
 * Build @wr, refused by nothing, into WQE @ind; returns its head.  A
 * plain request takes build_plain_wqe() here too, the shorter way to
 * build it (see bench/README).
 */
static inline struct wqe_head build_listed_wqe(struct mlx4_qp *qp,
					       struct ibv_send_wr *wr,
					       struct mlx4_wqe_ctrl_seg *ctrl,
					       unsigned int ind,
					       unsigned int *bf_bytes)
{
	if (!(wr->send_flags & IBV_SEND_INLINE) && send_wr_is_plain(qp, wr)) {
		*bf_bytes = 0;
		return build_plain_wqe(qp, wr, ctrl, ind);
	}
	return build_send_wqe(qp, wr, ctrl, ind, bf_bytes);
}

/* A WQE with another after it in its call: hand it over, stamp ahead. */
static inline void hand_over_listed_wqe(struct mlx4_qp *qp,
					struct mlx4_wqe_ctrl_seg *ctrl,
					struct wqe_head head)
{
	hand_over_wqe(ctrl, head);
	if (qp->sq_stamp)
		stamp_ahead_of(qp, ctrl);
}

/*
 * The call's last WQE, @ctrl, number @ind - 1: hand it over and ring
 * for all up to it (by BlueFlame if @use_bf), then stamp ahead.
 */
static inline void ring_listed_wqes(struct mlx4_qp *qp,
				    struct mlx4_wqe_ctrl_seg *ctrl,
				    struct wqe_head head, unsigned int ind,
				    int use_bf, unsigned int bf_bytes)
{
	qp->sq.head = ind;
	ring_send_doorbell(qp, ctrl, head, ind - 1, use_bf, bf_bytes);
	if (qp->sq_stamp)
		stamp_ahead_of(qp, ctrl);
}

/*
 * The posting loop, for everything the two special cases below do not
 * take.  Entered with the SQ locked; unlocks.  Each WQE is handed over
 * once the next is known to be good; the last by ring_send_doorbell(),
 * which may send it by BlueFlame when it is the only one.
 */
static int __attribute__((noinline))
post_send_list(struct mlx4_qp *qp, struct ibv_send_wr *wr,
	       struct ibv_send_wr **bad_wr)
{
	unsigned int head = qp->sq.head, ind = head, bf_bytes = 0;
	struct mlx4_wqe_ctrl_seg *ctrl = NULL;
	struct wqe_head last = { 0, 0 };
	int ret = 0;

	for (; wr; wr = wr->next, ind++) {
		ret = send_wr_refused(qp, wr, ind);
		if (ret)
			break;
		if (ctrl)
			hand_over_listed_wqe(qp, ctrl, last);
		ctrl = get_send_wqe(qp, ind);
		last = build_listed_wqe(qp, wr, ctrl, ind, &bf_bytes);
	}

	if (ret)
		*bad_wr = wr;
	if (ctrl)
		ring_listed_wqes(qp, ctrl, last, ind,
				 ind - head == 1 && !ret && bf_bytes, bf_bytes);
	mlx4_unlock(&qp->sq.lock);
	return ret;
}

/*
 * Special case 2: a lone one-SGE request with inline data, the latency
 * case, from its QP's recipe, by BlueFlame.  Entered with the SQ locked;
 * unlocks.  Anything unusual goes to post_send_list() before anything is
 * written.  @qpt_bit is the QP's if it is UD or XRC, else 0: each kind of
 * QP gets its own copy, RC and UC theirs without the datagram and XRC
 * branches, far shorter than post_send_list() (see bench/README).
 */
static inline __attribute__((always_inline))
int post_lone_inline(struct mlx4_qp *qp, struct ibv_send_wr *wr,
		     struct ibv_send_wr **bad_wr, unsigned int qpt_bit)
{
	unsigned int ind = qp->sq.head;
	unsigned int opcode = wr->opcode;
	const struct ibv_sge *sg = wr->sg_list;
	const struct mlx4_fast_op *op;
	struct mlx4_wqe_ctrl_seg *ctrl;
	unsigned int size, bytes;
	char *end;
	void *seg;

	if (unlikely(opcode >= MLX4_WR_OPCODES ||
		     wq_looks_full(&qp->sq, ind)))
		return post_send_list(qp, wr, bad_wr);
	/*
	 * Inline allowed, 1 byte to two blocks: else the long way.  No
	 * payload takes no BlueFlame, as a one-unit WQE never does.
	 */
	if (unlikely(sg->length - 1 >= qp->inline_limit[opcode]) ||
	    (qpt_bit == MLX4_QPT_BIT_UD && unlikely(!datagram_wr_ok(qp, wr))))
		return post_send_list(qp, wr, bad_wr);

	op = &qp->fast_op[opcode];
	ctrl = get_send_wqe(qp, ind);
	/* Now, so that fewer values live across the payload's barriers. */
	qp->sq.wrid[ind & qp->sq.mask] = wr->wr_id;
	qp->sq.head = ind + 1;
	seg = set_wr_ctrl_segs(qp, ctrl, wr, qpt_bit, 0,
			       wr->imm_data & op->imm_mask);
	set_remote_segs(seg, wr, op->segs);
	end = set_inline_payload((void *)((char *)ctrl + op->data_offset),
				 op->inline_room,
				 (const char *)(uintptr_t)sg->addr, sg->length);

	size = ((uintptr_t)end - (uintptr_t)ctrl + 15) / 16;
	bytes = ((uintptr_t)end - (uintptr_t)ctrl + 63) & ~63U;

	ring_send_doorbell(qp, ctrl,
			   wqe_head(qp, op->opcode_be | owner_bit(qp, ind),
				    htobe32(size), wr->send_flags),
			   ind, size <= qp->bf_max_size, bytes);
	wqe_spans(qp, bytes);
	if (qp->sq_stamp)
		stamp_ahead_of(qp, ctrl);
	mlx4_unlock(&qp->sq.lock);
	return 0;
}

static int __attribute__((noinline))
post_lone_inline_rc_uc(struct mlx4_qp *qp, struct ibv_send_wr *wr,
		       struct ibv_send_wr **bad_wr)
{
	return post_lone_inline(qp, wr, bad_wr, 0);
}

static int __attribute__((noinline))
post_lone_inline_ud(struct mlx4_qp *qp, struct ibv_send_wr *wr,
		    struct ibv_send_wr **bad_wr)
{
	return post_lone_inline(qp, wr, bad_wr, MLX4_QPT_BIT_UD);
}

static int __attribute__((noinline))
post_lone_inline_xrc(struct mlx4_qp *qp, struct ibv_send_wr *wr,
		     struct ibv_send_wr **bad_wr)
{
	return post_lone_inline(qp, wr, bad_wr, MLX4_QPT_BIT_XRC);
}

/* The SQ lock is taken: wait for it, then take the general path. */
static int __attribute__((noinline))
post_send_contended(struct mlx4_qp *qp, struct ibv_send_wr *wr,
		    struct ibv_send_wr **bad_wr)
{
	mlx4_lock_contended(&qp->sq.lock);
	return post_send_list(qp, wr, bad_wr);
}

/*
 * ibv_post_send().  Special case 1, here: a lone plain request into a
 * queue with room, built from its QP's recipe and rung by the UAR, far
 * shorter than post_send_list() (see bench/README).
 */
int mlx4_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		   struct ibv_send_wr **bad_wr)
{
	struct mlx4_qp *qp = to_mqp(ibqp);
	struct mlx4_wqe_ctrl_seg *ctrl;
	unsigned int ind;

	if (unlikely(!mlx4_trylock(&qp->sq.lock)))
		return post_send_contended(qp, wr, bad_wr);
	if (unlikely(!wr))
		return post_send_list(qp, wr, bad_wr);
	if (wr->send_flags & IBV_SEND_INLINE) {
		if (wr->num_sge != 1 || wr->next)
			return post_send_list(qp, wr, bad_wr);
		if (likely(!(qp->qpt_bit & (QPT_DATAGRAM |
					    MLX4_QPT_BIT_XRC))))
			return post_lone_inline_rc_uc(qp, wr, bad_wr);
		if (qp->qpt_bit == MLX4_QPT_BIT_UD)
			return post_lone_inline_ud(qp, wr, bad_wr);
		if (qp->qpt_bit == MLX4_QPT_BIT_XRC)
			return post_lone_inline_xrc(qp, wr, bad_wr);
		return post_send_list(qp, wr, bad_wr);	/* a raw frame */
	}

	ind = qp->sq.head;
	if (unlikely(wr->next || wq_looks_full(&qp->sq, ind) ||
		     !send_wr_is_plain(qp, wr)))
		return post_send_list(qp, wr, bad_wr);

	ctrl = get_send_wqe(qp, ind);
	qp->sq.head = ind + 1;
	ring_send_doorbell(qp, ctrl, build_plain_wqe(qp, wr, ctrl, ind),
			   ind, 0, 0);
	if (unlikely(qp->sq_stamp))
		stamp_ahead_of(qp, ctrl);
	mlx4_unlock(&qp->sq.lock);
	return 0;
}

/* ---------------------------------------------------------------------
 * Receive queue
 */

/* A scatter list shorter than the WQE ends with an invalid-lkey entry. */
static inline void set_recv_terminator(struct mlx4_wqe_data_seg *dseg)
{
	dseg->byte_count = 0;
	dseg->lkey = htobe32(MLX4_INVALID_LKEY);
	dseg->addr = 0;
}

static inline __attribute__((always_inline))
void build_recv_wqe(struct mlx4_wq *rq, struct ibv_recv_wr *wr,
		    unsigned int head)
{
	struct mlx4_wqe_data_seg *dseg = get_recv_wqe(rq, head);
	unsigned int n = wr->num_sge;
	unsigned int i;

	if (likely(n == 1)) {
		dseg->byte_count = htobe32(wr->sg_list->length);
		dseg->lkey = htobe32(wr->sg_list->lkey);
		dseg->addr = htobe64(wr->sg_list->addr);
	} else {
		for (i = 0; i < n; i++) {
			dseg[i].byte_count = htobe32(wr->sg_list[i].length);
			dseg[i].lkey = htobe32(wr->sg_list[i].lkey);
			dseg[i].addr = htobe64(wr->sg_list[i].addr);
		}
	}
	if (n < rq->max_gs)
		set_recv_terminator(dseg + n);

	rq->wrid[head & rq->mask] = wr->wr_id;
}

/* The WQEs are in place before the record announces them. */
static inline void ring_recv_doorbell(struct mlx4_qp *qp, unsigned int head)
{
	qp->rq.head = head;
	udma_to_device_barrier();
	*qp->db = htobe32(head & 0xffff);
}

/* The general case, with the RQ locked and [rq->head, head) built. */
static int __attribute__((noinline))
post_recv_slow(struct mlx4_qp *qp, struct ibv_recv_wr *wr,
	       struct ibv_recv_wr **bad_wr, unsigned int head)
{
	struct mlx4_wq *rq = &qp->rq;
	int ret = 0;

	for (; wr; wr = wr->next, head++) {
		if (wq_looks_full(rq, head) && mlx4_wq_overflow(rq, head)) {
			ret = ENOMEM;
			break;
		}
		if ((unsigned int)wr->num_sge > rq->max_gs) {
			ret = ENOMEM;	/* rdma-core's answer too */
			break;
		}
		build_recv_wqe(rq, wr, head);
	}

	if (ret)
		*bad_wr = wr;
	if (head != rq->head)
		ring_recv_doorbell(qp, head);

	mlx4_unlock(&rq->lock);
	return ret;
}

static int __attribute__((noinline))
post_recv_contended(struct mlx4_qp *qp, struct ibv_recv_wr *wr,
		    struct ibv_recv_wr **bad_wr)
{
	mlx4_lock_contended(&qp->rq.lock);
	return post_recv_slow(qp, wr, bad_wr, qp->rq.head);
}

/*
 * The fast path: one single-SGE request into a queue with room; anything
 * else (a list too) goes to post_recv_slow().  Without a loop, nothing is
 * set up for a second request (see bench/README).
 */
static inline __attribute__((always_inline))
int post_recv(struct mlx4_qp *qp, struct ibv_recv_wr *wr,
	      struct ibv_recv_wr **bad_wr)
{
	struct mlx4_wq *rq = &qp->rq;
	struct mlx4_wqe_data_seg *dseg;
	unsigned int head;

	if (unlikely(!mlx4_trylock(&rq->lock)))
		return post_recv_contended(qp, wr, bad_wr);

	head = rq->head;
	if (unlikely(!wr || wr->next || wq_looks_full(rq, head) ||
		     wr->num_sge != 1))
		return post_recv_slow(qp, wr, bad_wr, head);

	dseg = get_recv_wqe(rq, head);
	dseg->byte_count = htobe32(wr->sg_list->length);
	dseg->lkey = htobe32(wr->sg_list->lkey);
	dseg->addr = htobe64(wr->sg_list->addr);
	if (rq->max_gs > 1)
		set_recv_terminator(dseg + 1);
	rq->wrid[head & rq->mask] = wr->wr_id;

	ring_recv_doorbell(qp, head + 1);
	mlx4_unlock(&rq->lock);
	return 0;
}

int mlx4_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		   struct ibv_recv_wr **bad_wr)
{
	return post_recv(to_mqp(ibqp), wr, bad_wr);
}

int mlx4_post_wq_recv(struct ibv_wq *ibwq, struct ibv_recv_wr *wr,
		      struct ibv_recv_wr **bad_wr)
{
	return post_recv(&to_mrwq(ibwq)->qp, wr, bad_wr);
}
