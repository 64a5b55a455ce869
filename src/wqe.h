/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Building send WQEs, for the two send paths: ibv_post_send (qp.c) and
 * the ibv_wr_* calls (wr.c).  What each verbs opcode becomes, the send
 * queue's slots and stamps, the segments, inline data, the control
 * segment and the doorbells.  Private to the provider, and all static:
 * each path compiles the pieces into its own calls.  Most are inline;
 * stamp_later_blocks(), set_bind_seg() and set_local_inv_seg(), off the
 * fast paths, are left to the compiler.
 *
 * A send WQE is a control segment, the segments its transport and opcode
 * need, then data segments or inline data, in a power-of-two stride of
 * 64 to 1024 bytes.  A WQE belongs to the device once its owner bit
 * matches the pass of the producer counter over the ring; the doorbell
 * only tells the device to look.
 */
#ifndef MLX4_WQE_H
#define MLX4_WQE_H

#include <string.h>

#include "annotate.h"
#include "mlx4.h"
#include "mmio.h"

/* ---------------------------------------------------------------------
 * What each verbs opcode becomes
 */

enum {
	SEG_NONE,		/* data follows the control segment */
	SEG_RADDR,		/* remote address */
	SEG_ATOMIC,		/* remote address, then the operands */
	SEG_BIND_MW,
	SEG_LOCAL_INV,
};

enum {
	IMM_NONE,
	IMM_DATA,		/* wr->imm_data, already big-endian */
	IMM_INVAL_RKEY,		/* wr->invalidate_rkey */
};

/* What the gather list of a request is for. */
enum {
	PAYLOAD_NONE,		/* nothing: it is not looked at */
	PAYLOAD_OUT,		/* the bytes sent, which may go inline */
	PAYLOAD_IN,		/* where the response lands: max_sge_rd */
};

#define QPT_CONNECTED	(MLX4_QPT_BIT_RC | MLX4_QPT_BIT_XRC)
#define QPT_WRITABLE	(QPT_CONNECTED | MLX4_QPT_BIT_UC)
#define QPT_ALL		(QPT_WRITABLE | MLX4_QPT_BIT_UD)
#define QPT_DATAGRAM	(MLX4_QPT_BIT_UD | MLX4_QPT_BIT_RAW)
#define RAW_DMAC_LEN	6	/* a raw frame starts with its destination */
#define SGE_QP_MAX	0xff	/* max_sge: as many as the QP takes */

/*
 * Each verbs opcode, once: what its WQE holds and which QPs take it.
 * The send queue's stride (sq_header_size()), the per-QP tables
 * (qp->sge_limit[], qp->inline_limit[], qp->fast_op[]:
 * mlx4_set_sq_limits()), the opcodes ibv_create_qp_ex() may ask for
 * (check_send_ops()) and the ibv_wr_* calls a QP refuses
 * (wr_refuse_untaken()) are made from it.  A new opcode is a row here
 * (its IBV_QP_EX_WITH_* flag goes by the same name), its ibv_wr_* call
 * in wr.c, and the device's side in sim/opcode.c.
 */
static const struct mlx4_send_op {
	uint32_t opcode_be;	/* owner_opcode without the owner bit */
	uint8_t qpt_mask;	/* QP types that may post it */
	uint8_t segs;		/* SEG_*: what follows the control segment */
	uint8_t hdr_size;	/* bytes of it, before any payload */
	uint8_t imm;		/* IMM_*: what goes into ctrl->imm */
	uint8_t payload;	/* PAYLOAD_*: what the gather list is */
	uint8_t max_sge;	/* below the QP's own limit, if any */
	uint16_t qp_ex_flag;	/* IBV_QP_EX_WITH_*: ibv_wr_* may build it */
} send_ops[MLX4_WR_OPCODES] = {
#define OP(wr, hw, types, seg, size, imm_kind, data, sge)		\
	[IBV_WR_##wr] = { MLX4_BE32(MLX4_OPCODE_##hw), types, seg, size,	\
			  imm_kind, data, sge, IBV_QP_EX_WITH_##wr }
	OP(RDMA_WRITE,		RDMA_WRITE,	QPT_WRITABLE,
	   SEG_RADDR, 16, IMM_NONE, PAYLOAD_OUT, SGE_QP_MAX),
	OP(RDMA_WRITE_WITH_IMM,	RDMA_WRITE_IMM,	QPT_WRITABLE,
	   SEG_RADDR, 16, IMM_DATA, PAYLOAD_OUT, SGE_QP_MAX),
	OP(SEND,		SEND,		QPT_ALL | MLX4_QPT_BIT_RAW,
	   SEG_NONE, 0, IMM_NONE, PAYLOAD_OUT, SGE_QP_MAX),
	OP(SEND_WITH_IMM,	SEND_IMM,	QPT_ALL,
	   SEG_NONE, 0, IMM_DATA, PAYLOAD_OUT, SGE_QP_MAX),
	OP(RDMA_READ,		RDMA_READ,	QPT_CONNECTED,
	   SEG_RADDR, 16, IMM_NONE, PAYLOAD_IN, SGE_QP_MAX),
	/* An atomic returns 8 bytes into one local buffer. */
	OP(ATOMIC_CMP_AND_SWP,	ATOMIC_CS,	QPT_CONNECTED,
	   SEG_ATOMIC, 32, IMM_NONE, PAYLOAD_IN, 1),
	OP(ATOMIC_FETCH_AND_ADD, ATOMIC_FA,	QPT_CONNECTED,
	   SEG_ATOMIC, 32, IMM_NONE, PAYLOAD_IN, 1),
	/*
	 * No payload.  UC takes the key operations and SEND with invalidate
	 * as RC does (the kernel's _mlx4_ib_post_send, rdma-core's
	 * mlx4_post_send).
	 */
	OP(LOCAL_INV,		LOCAL_INVAL,	QPT_WRITABLE,
	   SEG_LOCAL_INV, 32, IMM_NONE, PAYLOAD_NONE, SGE_QP_MAX),
	OP(BIND_MW,		BIND_MW,	QPT_WRITABLE,
	   SEG_BIND_MW, 32, IMM_NONE, PAYLOAD_NONE, SGE_QP_MAX),
	OP(SEND_WITH_INV,	SEND_INVAL,	QPT_WRITABLE,
	   SEG_NONE, 0, IMM_INVAL_RKEY, PAYLOAD_OUT, SGE_QP_MAX),
#undef OP
};

/* Whether the opcode's payload may go inline (IBV_SEND_INLINE). */
static inline int payload_may_go_inline(const struct mlx4_send_op *op)
{
	return op->payload == PAYLOAD_OUT;
}

/*
 * qp->ctrl_of_flags[] is indexed by IBV_SEND_FENCE, IBV_SEND_SIGNALED,
 * IBV_SEND_SOLICITED and IBV_SEND_IP_CSUM as they are: one mask.
 */
#define CTRL_INDEX(flags)	((flags) & CTRL_FLAGS)
#define CTRL_FLAGS		(IBV_SEND_FENCE | IBV_SEND_SIGNALED | \
				 IBV_SEND_SOLICITED | IBV_SEND_IP_CSUM)
_Static_assert(CTRL_FLAGS == 0x17 && MLX4_CTRL_OF_FLAGS == CTRL_FLAGS + 1,
	       "send flags the control segment index takes");

/* srcrb_flags for IBV_SEND_SIGNALED (bit 1) and IBV_SEND_SOLICITED (bit 2). */
static const uint32_t srcrb_of_flags[4] = {
	[0] = 0,
	[1] = MLX4_BE32(MLX4_WQE_CTRL_CQ_UPDATE),
	[2] = MLX4_BE32(MLX4_WQE_CTRL_SOLICIT),
	[3] = MLX4_BE32(MLX4_WQE_CTRL_CQ_UPDATE | MLX4_WQE_CTRL_SOLICIT),
};

/* ---------------------------------------------------------------------
 * The send queue's slots, and stamping
 */

/*
 * qp->sq_stamp for a ring stamped whole: 0, as stamps beyond a 64-byte
 * WQE stay put until a longer one comes; but a UD QP's WQEs are 80 bytes
 * with any data, so that set_datagram_seg() need not say so.  A UD QP
 * with neither gather entries nor inline data has a 64-byte stride
 * (control and datagram segments fill it): its WQEs never reach a
 * second block, and a stamp there would land on the next slot.
 */
static unsigned int sq_stamp_at_start(const struct mlx4_qp *qp)
{
	return qp->qpt_bit == MLX4_QPT_BIT_UD && qp->sq.wqe_shift > 6 ?
	       128 : 0;
}

static inline void *get_send_wqe(struct mlx4_qp *qp, unsigned int n)
{
	return (char *)qp->sq.buf + ((n & qp->sq.mask) << qp->sq.wqe_shift);
}

/* Stamp every 64-byte block of the slot at @wqe but its first. */
static void stamp_later_blocks(struct mlx4_qp *qp, void *wqe)
{
	unsigned int i, stride = 1U << qp->sq.wqe_shift;

	for (i = 64; i < stride; i += 64)
		*(uint32_t *)((char *)wqe + i) = 0xffffffff;
}

/*
 * Stamp the slot 'spare' WQEs after the one at @ctrl, which we just
 * posted, once WQEs beyond 64 bytes are about (qp->sq_stamp).  That slot
 * is free: each block of it but the first that a WQE since the QP's
 * creation may have written (below qp->sq_stamp; the blocks above still
 * hold their stamps from then) is stamped, whatever the size of the WQE
 * last there, which saves reading that size.  A UD QP's 80-byte WQEs in
 * a stride of 256 bytes: one store, not a stamp of the whole stride (see
 * bench/README).
 */
static inline void stamp_ahead_of(struct mlx4_qp *qp, void *ctrl)
{
	char *slot = (char *)ctrl + qp->sq_stamp_offset;
	unsigned int i, end;

	if (slot >= qp->sq_end)
		slot -= qp->sq_bytes;
	*(uint32_t *)(slot + 64) = 0xffffffff;
	/*
	 * Read again here, not kept from the caller's test, which then
	 * needs no register (see bench/README).
	 */
	end = *(volatile uint16_t *)&qp->sq_stamp;
	for (i = 128; unlikely(i < end); i += 64)
		*(uint32_t *)(slot + i) = 0xffffffff;
}

/*
 * A WQE of @bytes was written: if it reaches beyond its first block and
 * beyond any before it, stamping has more work to do from now on.
 */
static inline void wqe_spans(struct mlx4_qp *qp, unsigned int bytes)
{
	bytes = (bytes + 63) & ~63U;
	if (bytes > 64 && bytes > qp->sq_stamp)
		qp->sq_stamp = bytes;
}

/* ---------------------------------------------------------------------
 * Building send WQEs
 */

static inline void set_raddr_seg(struct mlx4_wqe_raddr_seg *rseg,
				 uint64_t remote_addr, uint32_t rkey)
{
	rseg->raddr = htobe64(remote_addr);
	rseg->rkey = htobe32(rkey);
	rseg->reserved = 0;
}

/* A compare-and-swap's operands, or a fetch-and-add's addend and 0. */
static inline void set_atomic_seg(struct mlx4_wqe_atomic_seg *aseg,
				  uint64_t swap_add, uint64_t compare)
{
	aseg->swap_add = htobe64(swap_add);
	aseg->compare = htobe64(compare);
}

static void set_bind_seg(struct mlx4_wqe_bind_seg *bseg,
			 const struct ibv_mw *mw, uint32_t rkey,
			 const struct ibv_mw_bind_info *info)
{
	int access = info->mw_access_flags;
	uint32_t flags1 = 0, flags2 = 0;

	if (access & IBV_ACCESS_REMOTE_ATOMIC)
		flags1 |= MLX4_WQE_MW_ATOMIC;
	if (access & IBV_ACCESS_REMOTE_WRITE)
		flags1 |= MLX4_WQE_MW_REMOTE_WRITE;
	if (access & IBV_ACCESS_REMOTE_READ)
		flags1 |= MLX4_WQE_MW_REMOTE_READ;
	if (mw->type == IBV_MW_TYPE_2)
		flags2 |= MLX4_WQE_BIND_TYPE_2;
	if (access & IBV_ACCESS_ZERO_BASED)
		flags2 |= MLX4_WQE_BIND_ZERO_BASED;

	bseg->flags1 = htobe32(flags1);
	bseg->flags2 = htobe32(flags2);
	bseg->new_rkey = htobe32(rkey);
	bseg->lkey = htobe32(info->mr ? info->mr->lkey : 0);
	bseg->addr = htobe64(info->addr);
	bseg->length = htobe64(info->length);
}

static void set_local_inv_seg(struct mlx4_wqe_local_inval_seg *iseg,
			      uint32_t rkey)
{
	memset(iseg, 0, sizeof(*iseg));
	iseg->mem_key = htobe32(rkey);
}

_Static_assert(offsetof(struct mlx4_wqe_datagram_seg, vlan) + 2 ==
	       offsetof(struct mlx4_wqe_datagram_seg, mac) &&
	       sizeof(struct mlx4_wqe_datagram_seg) == 48,
	       "the AH's l2 bytes end the datagram segment");

/*
 * A UD request's destination.  Its WQE is 80 bytes with one gather
 * entry, which sq_stamp_at_start() counted (a longer one says so
 * itself).
 */
static inline void set_datagram_seg(struct mlx4_wqe_datagram_seg *dseg,
				    struct ibv_ah *ibah, uint32_t remote_qpn,
				    uint32_t remote_qkey)
{
	struct mlx4_ah *ah = to_mah(ibah);

	/* First: post_send's loads of them may not pass the copies. */
	dseg->dqpn = htobe32(remote_qpn);
	dseg->qkey = htobe32(remote_qkey);
	memcpy(&dseg->av, &ah->av, sizeof(dseg->av));
	memcpy(&dseg->vlan, &ah->l2, sizeof(ah->l2));
}

/* XRC: the SRQ on the far side that takes the message, in srcrb_flags. */
static inline uint32_t xrc_srqn_bits(uint32_t remote_srqn)
{
	return htobe32(remote_srqn << 8);
}

/*
 * A data segment the device may prefetch as soon as its 64-byte block
 * is written: byte_count, the block's first dword when the segment
 * starts one, goes last.  A zero length would mean 2 GB; the inline bit
 * with no bytes says "nothing".
 */
static inline void set_data_seg(struct mlx4_wqe_data_seg *dseg,
				const struct ibv_sge *sg)
{
	uint32_t length = sg->length;

	dseg->lkey = htobe32(sg->lkey);
	dseg->addr = htobe64(sg->addr);
	udma_to_device_barrier();
	dseg->byte_count = htobe32(length | (uint32_t)!length << 31);
}

/*
 * The longest message a ConnectX-3 port takes (max_msg_sz: its firmware's
 * log_max_msg is 30).  A longer gather entry is refused: past 2 GB its
 * bit 31 would make the device read the segment as inline data, the lkey
 * and address sent as payload.
 */
#define MLX4_MAX_MSG_SZ		(1u << 30)

static inline int sge_length_ok(uint32_t length)
{
	return length <= MLX4_MAX_MSG_SZ;
}

/* The fast path's data segment: 1 byte to 1 GB, send_wr_is_plain(). */
static inline void set_plain_data_seg(struct mlx4_wqe_data_seg *dseg,
				      const struct ibv_sge *sg)
{
	dseg->lkey = htobe32(sg->lkey);
	dseg->addr = htobe64(sg->addr);
	udma_to_device_barrier();
	dseg->byte_count = htobe32(sg->length);
}

/* 16 (8, 4) bytes from @src to @dst, each a plain load and store. */
#define COPY_N(dst, src, n) do {					\
	uint8_t tmp_[n];						\
	memcpy(tmp_, src, n);						\
	memcpy(dst, tmp_, n);						\
} while (0)

/*
 * Copy a piece of inline payload: at most 60 bytes, the room between
 * two segment headers.  Overlapping 16-, 8- and 4-byte moves do it in a
 * handful of instructions, without a call into libc.
 */
static inline void copy_payload(char *dst, const char *src, unsigned int len)
{
	if (len >= 32) {
		COPY_N(dst, src, 16);
		COPY_N(dst + 16, src + 16, 16);
		COPY_N(dst + len - 32, src + len - 32, 16);
		COPY_N(dst + len - 16, src + len - 16, 16);
	} else if (len >= 16) {
		COPY_N(dst, src, 16);
		COPY_N(dst + len - 16, src + len - 16, 16);
	} else if (len >= 8) {
		COPY_N(dst, src, 8);
		COPY_N(dst + len - 8, src + len - 8, 8);
	} else if (len >= 4) {
		COPY_N(dst, src, 4);
		COPY_N(dst + len - 4, src + len - 4, 4);
	} else if (len) {
		/* 1 to 3 bytes: the first, middle and last cover them. */
		dst[0] = src[0];
		dst[len / 2] = src[len / 2];
		dst[len - 1] = src[len - 1];
	}
}

/*
 * Inline payload, written into a WQE as inline segments, each confined
 * to its 64-byte block, from any number of buffers (post_send's gather
 * list, wr_set_inline_data_list()'s buffers).  Each segment's header is
 * written after its data (barrier between), so a prefetched block never
 * shows a valid header over stale bytes.
 */
struct inline_writer {
	struct mlx4_wqe_inline_seg *hdr;	/* the open segment's */
	char *dst;				/* where the next byte goes */
	unsigned int room;			/* bytes left in its block */
	unsigned int seg_len;			/* bytes in it so far */
};

static inline void inline_start(struct inline_writer *w, void *seg)
{
	w->hdr = seg;
	w->dst = (char *)(w->hdr + 1);
	w->room = MLX4_INLINE_ALIGN -
		  ((uintptr_t)w->dst & (MLX4_INLINE_ALIGN - 1));
	w->seg_len = 0;
}

static inline __attribute__((always_inline))
void inline_put(struct inline_writer *w, const char *src, unsigned int len)
{
	while (len > w->room) {
		copy_payload(w->dst, src, w->room);
		src += w->room;
		len -= w->room;
		w->dst += w->room;
		w->seg_len += w->room;

		udma_to_device_barrier();
		w->hdr->byte_count = htobe32(MLX4_INLINE_SEG | w->seg_len);

		w->hdr = (struct mlx4_wqe_inline_seg *)w->dst;
		w->dst += sizeof(*w->hdr);
		w->room = MLX4_INLINE_ALIGN - sizeof(*w->hdr);
		w->seg_len = 0;
	}
	copy_payload(w->dst, src, len);
	w->dst += len;
	w->room -= len;
	w->seg_len += len;
}

/* Close the last segment; returns where the data ends. */
static inline void *inline_end(struct inline_writer *w)
{
	if (!w->seg_len)
		return w->hdr;	/* no payload at all: no segment */

	udma_to_device_barrier();
	w->hdr->byte_count = htobe32(MLX4_INLINE_SEG | w->seg_len);
	return w->dst;
}

/*
 * The unlocked first look: wrong only in saying "full" too early.  The
 * tail, which the CQ's poller moves under its lock, is read plainly (an
 * aligned word, read whole): whatever value the compiler reads, then or
 * earlier, is one the poller wrote, at or behind the true tail.  (Read
 * as volatile or atomic, it took a load of its own before the
 * subtraction: see bench/README.)
 */
static inline int wq_looks_full(struct mlx4_wq *wq, unsigned int ind)
{
	return (uint16_t)(ind - wq->tail) >= wq->max_post;
}

static inline uint32_t fence_bit(struct mlx4_qp *qp, uint32_t send_flags)
{
	return qp->ctrl_of_flags[CTRL_INDEX(send_flags)].bf_qpn;
}

/*
 * A raw frame's control segment: the frame's destination MAC, by which
 * the adapter loops a frame back to its own ports, in srcrb_flags' first
 * two bytes and the immediate; the solicit bit asks for no ICRC.  Raw
 * frames take post_send's general path only (no recipe in
 * qp->fast_op[]), and the wr_* calls of raw QPs their own data setters,
 * so the fast paths carry no trace of them.
 */
void mlx4_set_raw_ctrl(struct mlx4_wqe_ctrl_seg *ctrl, const void *frame,
		       uint32_t srcrb);

/*
 * post_send's control segment but its first 8 bytes (struct wqe_head
 * below): @srcrb is qp->ctrl_of_flags[] for the request's flags
 * (srcrb_of()), with the strong-order bit or an XRC request's remote
 * SRQN ORed in.
 */
static inline uint32_t srcrb_of(struct mlx4_qp *qp, unsigned int send_flags)
{
	return qp->ctrl_of_flags[CTRL_INDEX(send_flags)].srcrb_flags;
}

static inline void set_ctrl_seg(struct mlx4_wqe_ctrl_seg *ctrl,
				uint32_t srcrb, uint32_t imm)
{
	ctrl->srcrb_flags = srcrb;
	ctrl->imm = imm;
}

/*
 * The wr_* opcode calls' control segment: bf_qpn and srcrb_flags, bytes
 * 4 to 11, as one word, read from qp->ctrl_of_flags[] at once for the
 * request's flags (ctrl_words_of()), with the WQE's size and the
 * strong-order bit ORed in (ctrl_words()), and written by one store
 * (set_ctrl_words()), where each half took a load and a store of its
 * own (see bench/README).  (post_send writes bf_qpn last, when it hands
 * the WQE over.)
 */
static inline uint64_t ctrl_words(uint32_t bf_qpn, uint32_t srcrb)
{
	union mlx4_ctrl_of_flags w = { .bf_qpn = bf_qpn, .srcrb_flags = srcrb };

	return w.words;
}

static inline uint64_t ctrl_words_of(struct mlx4_qp *qp,
				     unsigned int send_flags)
{
	return qp->ctrl_of_flags[CTRL_INDEX(send_flags)].words;
}

/* The bf_qpn half of @words. */
static inline uint32_t bf_qpn_of(uint64_t words)
{
	union mlx4_ctrl_of_flags w = { .words = words };

	return w.bf_qpn;
}

static inline void set_ctrl_words(struct mlx4_wqe_ctrl_seg *ctrl,
				  uint64_t words, uint32_t imm)
{
	memcpy((char *)ctrl + offsetof(struct mlx4_wqe_ctrl_seg, bf_qpn),
	       &words, sizeof(words));
	ctrl->imm = imm;
}

_Static_assert(offsetof(struct mlx4_wqe_ctrl_seg, srcrb_flags) ==
	       offsetof(struct mlx4_wqe_ctrl_seg, bf_qpn) + 4,
	       "bf_qpn and srcrb_flags side by side, as in ctrl_of_flags[]");

/*
 * The device may start a later WQE before an earlier one is done; a
 * change to a key waits for the WQEs before it to finish.
 */
static inline uint32_t strong_order_bit(const struct mlx4_send_op *op)
{
	return op->segs >= SEG_BIND_MW ?
	       MLX4_BE32(MLX4_WQE_CTRL_STRONG_ORDER) : 0;
}

/*
 * The first 8 bytes of a send WQE, as a builder leaves them to
 * hand_over_wqe(): known only once the rest is built, and written last.
 */
struct wqe_head {
	uint32_t owner_opcode;	/* the opcode and the owner bit */
	uint32_t size_fence;	/* bf_qpn: size, fence; no QPN */
};

/*
 * Give the WQE at @ctrl to the device: everything else in it reaches
 * memory before its first word, whose owner bit says whose it is.
 */
static inline void hand_over_wqe(struct mlx4_wqe_ctrl_seg *ctrl,
				 struct wqe_head head)
{
	ctrl->bf_qpn = head.size_fence;
	udma_to_device_barrier();
	ctrl->owner_opcode = head.owner_opcode;
}

static inline struct wqe_head wqe_head(struct mlx4_qp *qp,
				       uint32_t owner_opcode,
				       uint32_t size_be, uint32_t send_flags)
{
	return (struct wqe_head){ owner_opcode,
				  size_be | fence_bit(qp, send_flags) };
}

/* Have the device look at the WQEs handed over, by one 32-bit UAR write. */
static inline void ring_uar_doorbell(struct mlx4_qp *qp)
{
	/* Every owner bit is written before the doorbell. */
	udma_to_device_barrier();
	mmio_write32_be(qp->sdb, qp->doorbell_qpn);
}

/*
 * Hand the call's last WQE, @ctrl, number @ind, over and ring: the
 * device then owns every WQE before qp->sq.head.  If @use_bf (the call's only WQE, with inline
 * data, no longer than the BlueFlame buffer: @bf_bytes in whole 64-byte
 * blocks) and no other QP of the context is writing that buffer, the
 * WQE goes there whole, with the WQE counter in owner_opcode and the QPN
 * in bytes 4..6: that delivers it and rings at once.  Otherwise one
 * 32-bit UAR write rings, and those bytes stay 0 (on an Ethernet QP they
 * would read as a VLAN tag to insert).  The caller stamps ahead.
 */
static inline __attribute__((always_inline))
void ring_send_doorbell(struct mlx4_qp *qp, struct mlx4_wqe_ctrl_seg *ctrl,
			struct wqe_head head, unsigned int ind,
			int use_bf, unsigned int bf_bytes)
{
	struct mlx4_context *ctx = qp->ctx;

	if (use_bf && likely(mlx4_trylock_shared(&ctx->bf_lock))) {
		head.owner_opcode |= htobe32((ind & 0xffff) << 8);
		head.size_fence |= qp->doorbell_qpn;
		hand_over_wqe(ctrl, head);
		/*
		 * The ring copy is whole before the device may read it, and
		 * the last holder's BlueFlame stores go first.
		 */
		mmio_wc_start();
		mmio_wc_copy64((char *)ctx->bf_page + ctx->bf_offset, ctrl,
			       bf_bytes);
		mmio_flush_writes();
		ctx->bf_offset ^= ctx->bf_buf_size;
		mlx4_unlock(&ctx->bf_lock);
	} else {
		hand_over_wqe(ctrl, head);
		ring_uar_doorbell(qp);
	}
}

/* One inline segment of @len bytes, 1 to 60, behind its header @hdr. */
static inline char *set_inline_seg(struct mlx4_wqe_inline_seg *hdr,
				   const char *src, unsigned int len)
{
	char *dst = (char *)(hdr + 1);

	copy_payload(dst, src, len);
	udma_to_device_barrier();
	hdr->byte_count = htobe32(MLX4_INLINE_SEG | len);
	return dst + len;
}

/*
 * The inline payload of a lone request: @len bytes, 1 to @room + 60, in
 * the segment behind @hdr, @room bytes to the first 64-byte boundary,
 * and if need be in a second segment in the next block.  Returns where
 * the data ends.
 */
static inline __attribute__((always_inline))
char *set_inline_payload(struct mlx4_wqe_inline_seg *hdr, unsigned int room,
			 const char *src, unsigned int len)
{
	if (len <= room)
		return set_inline_seg(hdr, src, len);
	hdr = (struct mlx4_wqe_inline_seg *)set_inline_seg(hdr, src, room);
	return set_inline_seg(hdr, src + room, len - room);
}

#endif /* MLX4_WQE_H */
