/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Queue pairs' work queues: what each verbs opcode becomes, the send
 * queue's geometry, and the data path that fills the queues (post_send,
 * post_recv).  Creation and the other control verbs are in qp_verbs.c.
 *
 * One buffer holds both work queues; the queue with the larger stride
 * comes first.  A send WQE is a control segment, the segments its
 * transport and opcode need, then data segments or inline data, in a
 * power-of-two stride of 64 to 1024 bytes.  A WQE belongs to the device
 * once its owner bit matches the pass of the producer counter over the
 * ring; the doorbell only tells the device to look.
 */
#include <config.h>

#include <errno.h>
#include <stdlib.h>
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

#define QPT_CONNECTED	(MLX4_QPT_BIT_RC | MLX4_QPT_BIT_XRC)
#define QPT_WRITABLE	(QPT_CONNECTED | MLX4_QPT_BIT_UC)
#define QPT_ALL		(QPT_WRITABLE | MLX4_QPT_BIT_UD)
#define QPT_DATAGRAM	(MLX4_QPT_BIT_UD | MLX4_QPT_BIT_RAW)
#define RAW_DMAC_LEN	6	/* a raw frame starts with its destination */

static const struct mlx4_send_op {
	uint32_t opcode_be;	/* owner_opcode without the owner bit */
	uint8_t qpt_mask;	/* QP types that may post it */
	uint8_t segs;		/* SEG_*: what follows the control segment */
	uint8_t hdr_size;	/* bytes of it, before any payload */
	uint8_t imm;		/* IMM_*: what goes into ctrl->imm */
	uint8_t inline_ok;	/* carries a payload that may go inline */
	uint8_t max_sge;	/* below the QP's own limit, if any */
} send_ops[MLX4_WR_OPCODES] = {
#define OP(wr, hw, types, seg, size, imm_kind, inl, sge)		\
	[IBV_WR_##wr] = { MLX4_BE32(MLX4_OPCODE_##hw), types, seg, size,	\
			  imm_kind, inl, sge }
	OP(RDMA_WRITE,		RDMA_WRITE,	QPT_WRITABLE,
	   SEG_RADDR, 16, IMM_NONE, 1, 0xff),
	OP(RDMA_WRITE_WITH_IMM,	RDMA_WRITE_IMM,	QPT_WRITABLE,
	   SEG_RADDR, 16, IMM_DATA, 1, 0xff),
	OP(SEND,		SEND,		QPT_ALL | MLX4_QPT_BIT_RAW,
	   SEG_NONE, 0, IMM_NONE, 1, 0xff),
	OP(SEND_WITH_IMM,	SEND_IMM,	QPT_ALL,
	   SEG_NONE, 0, IMM_DATA, 1, 0xff),
	OP(RDMA_READ,		RDMA_READ,	QPT_CONNECTED,
	   SEG_RADDR, 16, IMM_NONE, 0, 0xff),
	/* An atomic returns 8 bytes into one local buffer. */
	OP(ATOMIC_CMP_AND_SWP,	ATOMIC_CS,	QPT_CONNECTED,
	   SEG_ATOMIC, 32, IMM_NONE, 0, 1),
	OP(ATOMIC_FETCH_AND_ADD, ATOMIC_FA,	QPT_CONNECTED,
	   SEG_ATOMIC, 32, IMM_NONE, 0, 1),
	/*
	 * No payload: the gather list is not looked at.  UC takes the key
	 * operations and SEND with invalidate as RC does (the kernel's
	 * _mlx4_ib_post_send, rdma-core's mlx4_post_send).
	 */
	OP(LOCAL_INV,		LOCAL_INVAL,	QPT_WRITABLE,
	   SEG_LOCAL_INV, 32, IMM_NONE, 0, 0xff),
	OP(BIND_MW,		BIND_MW,	QPT_WRITABLE,
	   SEG_BIND_MW, 32, IMM_NONE, 0, 0xff),
	OP(SEND_WITH_INV,	SEND_INVAL,	QPT_WRITABLE,
	   SEG_NONE, 0, IMM_INVAL_RKEY, 1, 0xff),
#undef OP
};


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
 * Send queue geometry
 */

/* Bytes in front of the payload: control segment plus the largest of
 * what the QP type's opcodes put there (bind and invalidate segments
 * carry no payload, atomics one 8-byte buffer: they fit any stride). */
static int sq_header_size(enum ibv_qp_type type)
{
	int size = sizeof(struct mlx4_wqe_ctrl_seg);

	switch (type) {
	case IBV_QPT_UD:
		return size + sizeof(struct mlx4_wqe_datagram_seg);
	case IBV_QPT_RC:
	case IBV_QPT_UC:
	case IBV_QPT_XRC_SEND:
		return size + sizeof(struct mlx4_wqe_raddr_seg);
	default:
		return size;
	}
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

	switch (type) {
	case IBV_QPT_RC:
		qp->qpt_bit = MLX4_QPT_BIT_RC;
		break;
	case IBV_QPT_UC:
		qp->qpt_bit = MLX4_QPT_BIT_UC;
		break;
	case IBV_QPT_UD:
		qp->qpt_bit = MLX4_QPT_BIT_UD;
		break;
	case IBV_QPT_XRC_SEND:
		qp->qpt_bit = MLX4_QPT_BIT_XRC;
		break;
	case IBV_QPT_RAW_PACKET:
		qp->qpt_bit = MLX4_QPT_BIT_RAW;
		break;
	default:
		qp->qpt_bit = 0;
		break;
	}
	qp->sq_stamp = sq_stamp_at_start(qp);	/* nothing posted yet */

	/*
	 * One byte per opcode: 0 if not allowed, else max SGEs + 1; and for
	 * the opcodes whose WQE is fixed headers then data, the fast path's
	 * recipe (an opcode_be of 0 means "take the slow path").
	 */
	for (op = 0; op < MLX4_WR_OPCODES; op++) {
		const struct mlx4_send_op *o = &send_ops[op];
		struct mlx4_fast_op *f = &qp->fast_op[op];
		int limit = max_gs < o->max_sge ? max_gs : o->max_sge;
		unsigned int data = sizeof(struct mlx4_wqe_ctrl_seg) +
				    o->hdr_size;

		/* A READ scatters into at most max_sge_rd entries. */
		if (op == IBV_WR_RDMA_READ && qp->ctx->max_sge_rd &&
		    limit > qp->ctx->max_sge_rd)
			limit = qp->ctx->max_sge_rd;

		qp->sge_limit[op] = (o->qpt_mask & qp->qpt_bit) ? limit + 1 : 0;

		memset(f, 0, sizeof(*f));
		qp->inline_limit[op] = 0;
		/* A raw frame takes the general path, which sets its MAC. */
		if (qp->sge_limit[op] < 2 || o->segs >= SEG_BIND_MW ||
		    o->imm == IMM_INVAL_RKEY || qp->qpt_bit == MLX4_QPT_BIT_RAW)
			continue;
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
		if (o->inline_ok)
			qp->inline_limit[op] = min_int(max_inline,
						       f->inline_room +
						       INLINE_BLOCK_ROOM);
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
		struct mlx4_ctrl_of_flags *c = &qp->ctrl_of_flags[i];

		c->srcrb_flags = qp->sq_signal_bits |
				 srcrb_of_flags[(i & (IBV_SEND_SIGNALED |
						      IBV_SEND_SOLICITED)) >> 1];
		if ((i & IBV_SEND_IP_CSUM) && qp->csum)
			c->srcrb_flags |= bits;
		c->fence = i & IBV_SEND_FENCE ?
			   MLX4_BE32(MLX4_WQE_CTRL_FENCE) : 0;
	}
}

static inline void *get_send_wqe(struct mlx4_qp *qp, unsigned int n)
{
	return (char *)qp->sq.buf + ((n & qp->sq.mask) << qp->sq.wqe_shift);
}

static inline void *get_recv_wqe(struct mlx4_wq *rq, unsigned int n)
{
	return (char *)rq->buf + ((n & rq->mask) << rq->wqe_shift);
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
 * a stride of 256 bytes: one store (bench/run.sh post_send_ud: 5
 * instructions less than stamping the stride).
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
	 * needs no register (bench/run.sh: 1 instruction less per post).
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

/* Sum of the gather list, for the inline limit. */
static inline uint64_t sge_total(const struct ibv_send_wr *wr)
{
	uint64_t total = 0;
	int i;

	for (i = 0; i < wr->num_sge; i++)
		total += wr->sg_list[i].length;
	return total;
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
	used = ind - wq->tail;
	mlx4_unlock(&wq->cq->lock);
	return used >= wq->max_post;
}

/* The unlocked first look: wrong only in saying "full" too early. */
static inline int wq_looks_full(struct mlx4_wq *wq, unsigned int ind)
{
	return ind - *(volatile unsigned int *)&wq->tail >= wq->max_post;
}

/* The owner bit of WQE @ind in its big-endian owner_opcode: the pass. */
static inline uint32_t owner_bit(struct mlx4_qp *qp, unsigned int ind)
{
	return htobe32(ind << qp->owner_shift) & MLX4_BE32(1U << 31);
}

static inline uint32_t fence_bit(struct mlx4_qp *qp, uint32_t send_flags)
{
	return qp->ctrl_of_flags[CTRL_INDEX(send_flags)].fence;
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
	       send_ops[wr->opcode].inline_ok;
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
 * A raw frame's control segment: the frame's destination MAC, by which
 * the adapter loops a frame back to its own ports, in srcrb_flags' first
 * two bytes and the immediate; the solicit bit asks for no ICRC.  Raw
 * frames take post_send's general path only (no recipe in
 * qp->fast_op[]), and the wr_* calls of raw QPs their own data setters,
 * so the fast paths carry no trace of them.
 */
static void __attribute__((noinline))
set_raw_ctrl(struct mlx4_wqe_ctrl_seg *ctrl, const void *frame,
	     uint32_t srcrb)
{
	const char *dmac = frame;

	srcrb |= MLX4_BE32(MLX4_WQE_CTRL_SOLICIT);
	memcpy(&srcrb, dmac, 2);
	ctrl->srcrb_flags = srcrb;
	memcpy(&ctrl->imm, dmac + 2, 4);
}

/*
 * The control segment but its first 8 bytes (struct wqe_head below),
 * for post_send and the wr_* opcode calls alike: @srcrb is
 * qp->ctrl_of_flags[] for the request's flags (srcrb_of()), with the
 * strong-order bit or an XRC request's remote SRQN ORed in.
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

/*
 * The device may start a later WQE before an earlier one is done; a
 * change to a key waits for the WQEs before it to finish.
 */
static inline uint32_t strong_order_bit(const struct mlx4_send_op *op)
{
	return op->segs >= SEG_BIND_MW ?
	       MLX4_BE32(MLX4_WQE_CTRL_STRONG_ORDER) : 0;
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
	set_raw_ctrl(ctrl, wr->tso.hdr, ctrl->srcrb_flags |
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
		set_raw_ctrl(ctrl, (void *)(uintptr_t)wr->sg_list[0].addr,
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
 * plain request takes build_plain_wqe() here too: bench/run.sh's
 * post_send through post_send_list() costs 159 instructions with it,
 * 197 without.
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

/*
 * Special case 2: a lone one-SGE request with inline data, the latency
 * case, from its QP's recipe, by BlueFlame.  Entered with the SQ locked;
 * unlocks.  Anything unusual goes to post_send_list() before anything is
 * written.  @qpt_bit is the QP's if it is UD or XRC, else 0: each kind of
 * QP gets its own copy, RC and UC theirs without the datagram and XRC
 * branches.  bench/run.sh's post_send_inline: 187 instructions here, 310
 * through post_send_list().
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
 * queue with room, built from its QP's recipe and rung by the UAR.
 * bench/run.sh's post_send: 96 instructions here, 159 through
 * post_send_list().
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
 * set up for a second request (bench/run.sh post_recv: 52 -> 48).
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

/* The head at which @wq looks full: its unlocked tail + max_post. */
static inline unsigned int wq_stop(struct mlx4_wq *wq)
{
	return *(volatile unsigned int *)&wq->tail + wq->max_post;
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

	if (qpt == MLX4_QPT_BIT_UD)
		hdr += sizeof(struct mlx4_wqe_datagram_seg);
	set_ctrl_seg(ctrl, srcrb_of(qp, flags) | strong_order_bit(op), imm);
	size_be = htobe32(hdr / 16) | fence_bit(qp, flags);
	ctrl->bf_qpn = size_be;
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
 * the copies for 0 are RC, UC and XRC QPs' (UD and raw QPs have the
 * *_refused() calls for the opcodes of those that they lack).
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

	return qp->sq.head == b->stop ||
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

/* Raw QPs take no SEND with immediate: the unlikely case refuses it. */
static void wr_send_imm_refused(struct ibv_qp_ex *qpx, __be32 imm_data)
{
	wr_begin_slow(qpx, IBV_WR_SEND_WITH_IMM, imm_data);
}

static void wr_send_inv(struct ibv_qp_ex *qpx, uint32_t invalidate_rkey)
{
	wr_begin_plain(qpx, IBV_WR_SEND_WITH_INV, htobe32(invalidate_rkey), 0);
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

/* UD and raw QPs take no RDMA write: the unlikely case refuses it. */
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

static void wr_local_inv(struct ibv_qp_ex *qpx, uint32_t invalidate_rkey)
{
	set_local_inv_seg(wr_begin_key(qpx, IBV_WR_LOCAL_INV), invalidate_rkey);
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
	if (!send_ops[b->opcode].inline_ok) {
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
	set_raw_ctrl(b->ctrl, frame, b->ctrl->srcrb_flags);
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

static void wr_start(struct ibv_qp_ex *qpx)
{
	struct mlx4_qp *qp = qpx_to_mqp(qpx);

	if (unlikely(!mlx4_trylock(&qp->sq.lock)))
		return wr_start_contended(qp);
	wr_start_batch(qp);
}

/*
 * Between batches, and so before a batch's first opcode call, a setter
 * (a misuse) does nothing: it writes into the scratch WQE and takes no
 * data, as after a bind.  The state pointed at the batch's last WQE,
 * which the device owns now.  Each end of a batch calls this.
 */
static inline void wr_idle(struct mlx4_wr_state *b)
{
	b->place = b->idle;
	b->sge_limit = 0;
	b->opcode = IBV_WR_BIND_MW;
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
 * flipped, and the WQE counter).
 */
static int wr_complete_bf(struct mlx4_qp *qp, struct mlx4_wr_state *b)
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
 * wr_complete() but for a lone request without BlueFlame: a failed
 * batch (rolled back), a lone request by BlueFlame, an empty batch, or
 * several requests.  Out of line, so that the doorbell path saves no
 * registers.
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
	if (qp->sq.head - b->head == 1 && b->bf_blocks)
		return wr_complete_bf(qp, b);
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

/* Hand the batch over and ring once. */
static inline __attribute__((always_inline))
int wr_complete_stamping(struct ibv_qp_ex *qpx, enum wr_stamping stamping)
{
	struct mlx4_qp *qp = qpx_to_mqp(qpx);
	struct mlx4_wr_state *b = &qp->wr;
	struct mlx4_wqe_ctrl_seg *ctrl;

	/* One test: a lone request, and nothing pending. */
	if (unlikely((qp->sq.head - b->head - 1) | b->pending))
		return wr_complete_slow(qp, b);
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

/* Which verbs opcode each IBV_QP_EX_WITH_* flag asks for. */
static const struct {
	uint64_t flag;
	enum ibv_wr_opcode opcode;
} wr_ops_of_flags[] = {
	{ IBV_QP_EX_WITH_RDMA_WRITE, IBV_WR_RDMA_WRITE },
	{ IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM, IBV_WR_RDMA_WRITE_WITH_IMM },
	{ IBV_QP_EX_WITH_SEND, IBV_WR_SEND },
	{ IBV_QP_EX_WITH_SEND_WITH_IMM, IBV_WR_SEND_WITH_IMM },
	{ IBV_QP_EX_WITH_RDMA_READ, IBV_WR_RDMA_READ },
	{ IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP, IBV_WR_ATOMIC_CMP_AND_SWP },
	{ IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD, IBV_WR_ATOMIC_FETCH_AND_ADD },
	{ IBV_QP_EX_WITH_LOCAL_INV, IBV_WR_LOCAL_INV },
	{ IBV_QP_EX_WITH_BIND_MW, IBV_WR_BIND_MW },
	{ IBV_QP_EX_WITH_SEND_WITH_INV, IBV_WR_SEND_WITH_INV },
};

/*
 * Creation time: may this QP (its transport set in qp->sge_limit[])
 * take every opcode in @flags?  EOPNOTSUPP for a flag this device has
 * no WQE for (TSO, memory-window-less...), EINVAL for an opcode its
 * transport refuses, as rdma-core's mlx5 answers.
 */
static int check_send_ops(struct mlx4_qp *qp, uint64_t flags)
{
	uint64_t known = 0;
	size_t i;

	for (i = 0; i < sizeof(wr_ops_of_flags) / sizeof(wr_ops_of_flags[0]);
	     i++)
		known |= wr_ops_of_flags[i].flag;
	if (flags & ~known)
		return EOPNOTSUPP;
	for (i = 0; i < sizeof(wr_ops_of_flags) / sizeof(wr_ops_of_flags[0]);
	     i++)
		if ((flags & wr_ops_of_flags[i].flag) &&
		    !qp->sge_limit[wr_ops_of_flags[i].opcode])
			return EINVAL;
	return 0;
}

/*
 * Give the QP its ibv_qp_ex calls, once its queues are known: those of
 * its type (UD and raw QPs need their own setters, others ignore them).
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

	qpx->wr_start = wr_start;
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

	switch (qp->qpt_bit) {
	case MLX4_QPT_BIT_UD:
		qpx->wr_send = wr_send_ud;
		qpx->wr_send_imm = wr_send_imm_ud;
		qpx->wr_rdma_write = wr_rdma_write_refused;
		qpx->wr_rdma_write_imm = wr_rdma_write_imm_refused;
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
		qpx->wr_send_imm = wr_send_imm_refused;
		qpx->wr_rdma_write = wr_rdma_write_refused;
		qpx->wr_rdma_write_imm = wr_rdma_write_imm_refused;
		qpx->wr_set_sge = wr_set_sge_raw;
		qpx->wr_set_sge_list = wr_set_sge_list_raw;
		qpx->wr_set_inline_data = wr_set_inline_data_raw;
		qpx->wr_set_inline_data_list = wr_set_inline_data_list_raw;
		break;
	}
	qp->verbs_qp.comp_mask |= VERBS_QP_EX;
	return 0;
}
