/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Queue pairs: sizing, creation, state changes, destruction, and the
 * data path that fills their work queues (post_send, post_recv).
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

static const struct mlx4_send_op {
	uint8_t hw_opcode;
	uint8_t qpt_mask;	/* QP types that may post it */
	uint8_t segs;		/* SEG_*: what follows the control segment */
	uint8_t imm;		/* IMM_*: what goes into ctrl->imm */
	uint8_t inline_ok;	/* carries a payload that may go inline */
	uint8_t max_sge;	/* below the QP's own limit, if any */
	/* segs >= SEG_BIND_MW: no data segments follow */
} send_ops[] = {
	[IBV_WR_RDMA_WRITE] = {
		MLX4_OPCODE_RDMA_WRITE, QPT_WRITABLE, SEG_RADDR, IMM_NONE, 1, 0xff },
	[IBV_WR_RDMA_WRITE_WITH_IMM] = {
		MLX4_OPCODE_RDMA_WRITE_IMM, QPT_WRITABLE, SEG_RADDR, IMM_DATA, 1, 0xff },
	[IBV_WR_SEND] = {
		MLX4_OPCODE_SEND, QPT_ALL, SEG_NONE, IMM_NONE, 1, 0xff },
	[IBV_WR_SEND_WITH_IMM] = {
		MLX4_OPCODE_SEND_IMM, QPT_ALL, SEG_NONE, IMM_DATA, 1, 0xff },
	[IBV_WR_RDMA_READ] = {
		MLX4_OPCODE_RDMA_READ, QPT_CONNECTED, SEG_RADDR, IMM_NONE, 0, 0xff },
	/* An atomic returns 8 bytes into one local buffer. */
	[IBV_WR_ATOMIC_CMP_AND_SWP] = {
		MLX4_OPCODE_ATOMIC_CS, QPT_CONNECTED, SEG_ATOMIC, IMM_NONE, 0, 1 },
	[IBV_WR_ATOMIC_FETCH_AND_ADD] = {
		MLX4_OPCODE_ATOMIC_FA, QPT_CONNECTED, SEG_ATOMIC, IMM_NONE, 0, 1 },
	/* No payload: the gather list is not looked at. */
	[IBV_WR_LOCAL_INV] = {
		MLX4_OPCODE_LOCAL_INVAL, QPT_CONNECTED, SEG_LOCAL_INV, IMM_NONE, 0, 0xff },
	[IBV_WR_BIND_MW] = {
		MLX4_OPCODE_BIND_MW, QPT_CONNECTED, SEG_BIND_MW, IMM_NONE, 0, 0xff },
	[IBV_WR_SEND_WITH_INV] = {
		MLX4_OPCODE_SEND_INVAL, QPT_CONNECTED, SEG_NONE, IMM_INVAL_RKEY, 1, 0xff },
};

#define MLX4_NUM_WR_OPCODES	ARRAY_SIZE(send_ops)

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

/* Scatter/gather entries and inline bytes a stride holds. */
static void sq_stride_limits(enum ibv_qp_type type, int wqe_shift,
			     int *max_gs, int *max_inline)
{
	int end = 1 << wqe_shift;
	int start = sq_header_size(type);

	if (end > MLX4_MAX_WQE_SIZE)
		end = MLX4_MAX_WQE_SIZE;
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
	int shift, max_gs, max_inline;
	unsigned int spare, cnt;

	for (shift = MLX4_MIN_SQ_STRIDE; shift <= MLX4_MAX_SQ_STRIDE; shift++) {
		sq_stride_limits(type, shift, &max_gs, &max_inline);
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
	qp->sq_stamp = shift > 6;
	return 0;
}

/* What the send queue actually holds, for the caps the user sees. */
void mlx4_set_sq_limits(struct mlx4_qp *qp, enum ibv_qp_type type,
			struct ibv_qp_cap *cap)
{
	int max_gs, max_inline;
	int max_sge = qp->ctx->max_sge;
	unsigned int op;

	sq_stride_limits(type, qp->sq.wqe_shift, &max_gs, &max_inline);
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
	default:
		qp->qpt_bit = 0;
		break;
	}

	/* One byte per opcode: 0 if not allowed, else max SGEs + 1. */
	for (op = 0; op < MLX4_NUM_WR_OPCODES; op++) {
		const struct mlx4_send_op *o = &send_ops[op];
		int limit = max_gs < o->max_sge ? max_gs : o->max_sge;

		qp->sge_limit[op] = (o->qpt_mask & qp->qpt_bit) ? limit + 1 : 0;
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

/*
 * Make WQE @n invalid to a prefetching device: the first dword of every
 * 64-byte block after the first, as far as the WQE last written there
 * reached, becomes 0xffffffff.
 */
static inline void stamp_send_wqe(struct mlx4_qp *qp, unsigned int n)
{
	struct mlx4_wqe_ctrl_seg *ctrl = get_send_wqe(qp, n);
	uint32_t *wqe = (uint32_t *)ctrl;
	int size = (ctrl->fence_size & 0x3f) << 4;
	int i;

	for (i = 64; i < size; i += 64)
		wqe[i / 4] = 0xffffffff;
}

/*
 * Before the first pass every WQE is invalid: owner bit set (pass 0
 * expects it clear) and every later 64-byte block stamped.
 */
void mlx4_init_sq_ownership(struct mlx4_qp *qp)
{
	int stride = 1 << qp->sq.wqe_shift;
	unsigned int n;
	int i;

	for (n = 0; n < qp->sq.wqe_cnt; n++) {
		struct mlx4_wqe_ctrl_seg *ctrl = get_send_wqe(qp, n);
		uint32_t *wqe = (uint32_t *)ctrl;

		ctrl->owner_opcode = htobe32(1U << 31);
		ctrl->bf_qpn = 0;
		for (i = 64; i < stride; i += 64)
			wqe[i / 4] = 0xffffffff;
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

static inline void set_atomic_seg(struct mlx4_wqe_atomic_seg *aseg,
				  struct ibv_send_wr *wr)
{
	if (wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP) {
		aseg->swap_add = htobe64(wr->wr.atomic.swap);
		aseg->compare = htobe64(wr->wr.atomic.compare_add);
	} else {
		aseg->swap_add = htobe64(wr->wr.atomic.compare_add);
		aseg->compare = 0;
	}
}

static void set_bind_seg(struct mlx4_wqe_bind_seg *bseg,
			 struct ibv_send_wr *wr)
{
	const struct ibv_mw_bind_info *info = &wr->bind_mw.bind_info;
	int access = info->mw_access_flags;
	uint32_t flags1 = 0, flags2 = 0;

	if (access & IBV_ACCESS_REMOTE_ATOMIC)
		flags1 |= MLX4_WQE_MW_ATOMIC;
	if (access & IBV_ACCESS_REMOTE_WRITE)
		flags1 |= MLX4_WQE_MW_REMOTE_WRITE;
	if (access & IBV_ACCESS_REMOTE_READ)
		flags1 |= MLX4_WQE_MW_REMOTE_READ;
	if (wr->bind_mw.mw->type == IBV_MW_TYPE_2)
		flags2 |= MLX4_WQE_BIND_TYPE_2;
	if (access & IBV_ACCESS_ZERO_BASED)
		flags2 |= MLX4_WQE_BIND_ZERO_BASED;

	bseg->flags1 = htobe32(flags1);
	bseg->flags2 = htobe32(flags2);
	bseg->new_rkey = htobe32(wr->bind_mw.rkey);
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

static inline void set_datagram_seg(struct mlx4_wqe_datagram_seg *dseg,
				    struct ibv_send_wr *wr)
{
	struct mlx4_ah *ah = to_mah(wr->wr.ud.ah);

	memcpy(&dseg->av, &ah->av, sizeof(dseg->av));
	dseg->dqpn = htobe32(wr->wr.ud.remote_qpn);
	dseg->qkey = htobe32(wr->wr.ud.remote_qkey);
	dseg->vlan = htobe16(ah->vlan);
	memcpy(dseg->mac, ah->mac, sizeof(dseg->mac));
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
	dseg->lkey = htobe32(sg->lkey);
	dseg->addr = htobe64(sg->addr);
	udma_to_device_barrier();
	dseg->byte_count = sg->length ? htobe32(sg->length) :
					htobe32(MLX4_INLINE_SEG);
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

/*
 * Copy the payload of @wr into the WQE at @seg as inline segments, each
 * confined to its 64-byte block, and return where the data ends.  Each
 * segment's header is written after its data (barrier between), so a
 * prefetched block never shows a valid header over stale bytes.
 */
static inline void *set_inline_data(void *seg, const struct ibv_send_wr *wr)
{
	struct mlx4_wqe_inline_seg *hdr = seg;
	char *dst = (char *)(hdr + 1);
	unsigned int room = MLX4_INLINE_ALIGN -
			    ((uintptr_t)dst & (MLX4_INLINE_ALIGN - 1));
	unsigned int seg_len = 0;
	int i;

	for (i = 0; i < wr->num_sge; i++) {
		const char *src = (const char *)(uintptr_t)wr->sg_list[i].addr;
		unsigned int len = wr->sg_list[i].length;

		while (unlikely(len > room)) {
			memcpy(dst, src, room);
			src += room;
			len -= room;
			dst += room;
			seg_len += room;

			udma_to_device_barrier();
			hdr->byte_count = htobe32(MLX4_INLINE_SEG | seg_len);

			hdr = (struct mlx4_wqe_inline_seg *)dst;
			dst += sizeof(*hdr);
			room = MLX4_INLINE_ALIGN - sizeof(*hdr);
			seg_len = 0;
		}
		memcpy(dst, src, len);
		dst += len;
		room -= len;
		seg_len += len;
	}

	if (!seg_len)
		return hdr;	/* no payload at all: no segment */

	udma_to_device_barrier();
	hdr->byte_count = htobe32(MLX4_INLINE_SEG | seg_len);
	return dst;
}

/* BlueFlame: the WQE itself goes to the device, 64 bits at a time. */
static inline void bf_copy(void *bf, const void *wqe, unsigned int bytes)
{
	volatile uint64_t *dst = bf;
	const uint64_t *src = wqe;

	do {
		dst[0] = src[0];
		dst[1] = src[1];
		dst[2] = src[2];
		dst[3] = src[3];
		dst[4] = src[4];
		dst[5] = src[5];
		dst[6] = src[6];
		dst[7] = src[7];
		dst += 8;
		src += 8;
		bytes -= 64;
	} while (bytes);
}

/*
 * Is the queue full?  tail moves under the CQ's lock as completions are
 * polled, so a queue that looks full is checked again under that lock.
 */
int mlx4_wq_overflow(struct mlx4_wq *wq, unsigned int nreq, struct mlx4_cq *cq)
{
	unsigned int used;

	mlx4_lock(&cq->lock);
	used = wq->head + nreq - wq->tail;
	mlx4_unlock(&cq->lock);
	return used >= wq->max_post;
}

static inline int wq_full(struct mlx4_wq *wq, unsigned int nreq,
			  struct ibv_cq *ibcq)
{
	unsigned int tail = __atomic_load_n(&wq->tail, __ATOMIC_RELAXED);

	if (likely(wq->head + nreq - tail < wq->max_post))
		return 0;
	return mlx4_wq_overflow(wq, nreq, to_mcq(ibcq));
}

/* Why a work request was refused before anything was written. */
static int bad_send_wr_errno(struct mlx4_qp *qp, struct ibv_send_wr *wr)
{
	(void)qp;
	(void)wr;
	return EINVAL;	/* unknown opcode, not for this QP, too many SGEs */
}

int mlx4_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		   struct ibv_send_wr **bad_wr)
{
	struct mlx4_qp *qp = to_mqp(ibqp);
	struct mlx4_wqe_ctrl_seg *ctrl = NULL;
	unsigned int ind, nreq, size = 0;
	int inl = 0, ret = 0;

	mlx4_lock(&qp->sq.lock);

	ind = qp->sq.head;
	for (nreq = 0; wr; ++nreq, ++ind, wr = wr->next) {
		const struct mlx4_send_op *op;
		uint32_t flags = wr->send_flags;
		uint32_t srcrb;
		void *seg;

		if (unlikely(wq_full(&qp->sq, nreq, ibqp->send_cq))) {
			ret = ENOMEM;
			goto bad;
		}
		if (unlikely((unsigned int)wr->opcode >= MLX4_NUM_WR_OPCODES ||
			     (unsigned int)wr->num_sge >=
			     qp->sge_limit[wr->opcode])) {
			ret = bad_send_wr_errno(qp, wr);
			goto bad;
		}
		op = &send_ops[wr->opcode];

		inl = (flags & IBV_SEND_INLINE) && op->inline_ok;
		if (unlikely(inl && sge_total(wr) > (uint64_t)qp->max_inline_data)) {
			ret = ENOMEM;
			goto bad;
		}

		ctrl = get_send_wqe(qp, ind);
		qp->sq.wrid[ind & qp->sq.mask] = wr->wr_id;
		seg = ctrl + 1;

		srcrb = (flags & IBV_SEND_SIGNALED ? MLX4_WQE_CTRL_CQ_UPDATE : 0) |
			(flags & IBV_SEND_SOLICITED ? MLX4_WQE_CTRL_SOLICIT : 0);

		if (qp->qpt_bit == MLX4_QPT_BIT_UD) {
			if (unlikely(!wr->wr.ud.ah)) {
				ret = EINVAL;
				goto bad;
			}
			set_datagram_seg(seg, wr);
			seg = (char *)seg + sizeof(struct mlx4_wqe_datagram_seg);
		} else if (qp->qpt_bit == MLX4_QPT_BIT_XRC) {
			srcrb |= wr->qp_type.xrc.remote_srqn << 8;
		}

		switch (op->segs) {
		case SEG_RADDR:
			set_raddr_seg(seg, wr->wr.rdma.remote_addr,
				      wr->wr.rdma.rkey);
			seg = (char *)seg + sizeof(struct mlx4_wqe_raddr_seg);
			break;
		case SEG_ATOMIC:
			set_raddr_seg(seg, wr->wr.atomic.remote_addr,
				      wr->wr.atomic.rkey);
			seg = (char *)seg + sizeof(struct mlx4_wqe_raddr_seg);
			set_atomic_seg(seg, wr);
			seg = (char *)seg + sizeof(struct mlx4_wqe_atomic_seg);
			break;
		case SEG_BIND_MW:
			if (unlikely(!wr->bind_mw.mw)) {
				ret = EINVAL;
				goto bad;
			}
			set_bind_seg(seg, wr);
			seg = (char *)seg + sizeof(struct mlx4_wqe_bind_seg);
			break;
		case SEG_LOCAL_INV:
			set_local_inv_seg(seg, wr->invalidate_rkey);
			seg = (char *)seg +
			      sizeof(struct mlx4_wqe_local_inval_seg);
			break;
		}

		if (inl) {
			seg = set_inline_data(seg, wr);
			size = ((char *)seg - (char *)ctrl + 15) / 16;
		} else if (op->segs < SEG_BIND_MW) {
			struct mlx4_wqe_data_seg *dseg = seg;
			int i;

			/* Last first: the first segment's block goes valid last. */
			for (i = wr->num_sge - 1; i >= 0; i--)
				set_data_seg(dseg + i, wr->sg_list + i);
			size = ((char *)seg - (char *)ctrl) / 16 + wr->num_sge;
		} else {
			size = ((char *)seg - (char *)ctrl) / 16;
		}

		ctrl->srcrb_flags = qp->sq_signal_bits | htobe32(srcrb);
		switch (op->imm) {
		case IMM_DATA:
			ctrl->imm = wr->imm_data;
			break;
		case IMM_INVAL_RKEY:
			ctrl->imm = htobe32(wr->invalidate_rkey);
			break;
		default:
			ctrl->imm = 0;
			break;
		}
		/* Bytes 4..6 are the BlueFlame QPN: zero them here. */
		ctrl->bf_qpn = htobe32(size |
				       (flags & IBV_SEND_FENCE ?
					MLX4_WQE_CTRL_FENCE : 0));

		/* The whole WQE is in place before the device may own it. */
		udma_to_device_barrier();
		ctrl->owner_opcode = htobe32(op->hw_opcode |
					     ((ind & qp->sq.wqe_cnt) <<
					      qp->owner_shift));

		/* Keep the prefetcher off the WQE 'spare' ahead.  The last
		 * one waits until the doorbell has rung. */
		if (qp->sq_stamp && wr->next)
			stamp_send_wqe(qp, ind + qp->sq_spare_wqes);
	}

out:
	if (likely(nreq)) {
		struct mlx4_context *ctx = qp->ctx;

		if (nreq == 1 && inl && size <= (unsigned int)ctx->bf_buf_size / 16) {
			/* BlueFlame: the write carries the WQE and rings. */
			ctrl->owner_opcode |= htobe32((qp->sq.head & 0xffff) << 8);
			ctrl->bf_qpn |= qp->doorbell_qpn;
			qp->sq.head++;
			udma_to_device_barrier();

			mlx4_lock(&ctx->bf_lock);
			bf_copy((char *)ctx->bf_page + ctx->bf_offset, ctrl,
				(size * 16 + 63) & ~63U);
			mmio_flush_writes();
			ctx->bf_offset ^= ctx->bf_buf_size;
			mlx4_unlock(&ctx->bf_lock);
		} else {
			qp->sq.head += nreq;
			/* Every owner bit is written before the doorbell. */
			udma_to_device_barrier();
			mmio_write32_be(qp->sdb, qp->doorbell_qpn);
		}

		if (qp->sq_stamp)
			stamp_send_wqe(qp, ind - 1 + qp->sq_spare_wqes);
	}

	mlx4_unlock(&qp->sq.lock);
	return ret;

bad:
	*bad_wr = wr;
	inl = 0;	/* BlueFlame only for a call that posted one WQE, all of it */
	goto out;
}

/* ---------------------------------------------------------------------
 * Receive queue
 */

static inline int post_recv(struct mlx4_qp *qp, struct ibv_cq *cq,
			    struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
	struct mlx4_wq *rq = &qp->rq;
	unsigned int head, nreq;
	int ret = 0;

	mlx4_lock(&rq->lock);

	head = rq->head;
	for (nreq = 0; wr; ++nreq, ++head, wr = wr->next) {
		struct mlx4_wqe_data_seg *dseg;
		int i;

		if (unlikely(wq_full(rq, nreq, cq))) {
			ret = ENOMEM;
			*bad_wr = wr;
			break;
		}
		if (unlikely((unsigned int)wr->num_sge > rq->max_gs)) {
			ret = EINVAL;
			*bad_wr = wr;
			break;
		}

		dseg = get_recv_wqe(rq, head);
		for (i = 0; i < wr->num_sge; i++) {
			dseg[i].byte_count = htobe32(wr->sg_list[i].length);
			dseg[i].lkey = htobe32(wr->sg_list[i].lkey);
			dseg[i].addr = htobe64(wr->sg_list[i].addr);
		}
		/* A shorter list ends with an invalid-lkey entry. */
		if ((unsigned int)i < rq->max_gs) {
			dseg[i].byte_count = 0;
			dseg[i].lkey = htobe32(MLX4_INVALID_LKEY);
			dseg[i].addr = 0;
		}

		rq->wrid[head & rq->mask] = wr->wr_id;
	}

	if (likely(nreq)) {
		rq->head = head;
		/* The WQEs are in place before the record announces them. */
		udma_to_device_barrier();
		*qp->db = htobe32(head & 0xffff);
	}

	mlx4_unlock(&rq->lock);
	return ret;
}

int mlx4_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		   struct ibv_recv_wr **bad_wr)
{
	return post_recv(to_mqp(ibqp), ibqp->recv_cq, wr, bad_wr);
}

int mlx4_post_wq_recv(struct ibv_wq *ibwq, struct ibv_recv_wr *wr,
		      struct ibv_recv_wr **bad_wr)
{
	struct mlx4_rwq *rwq = container_of(ibwq, struct mlx4_rwq, wq);

	return post_recv(&rwq->qp, ibwq->cq, wr, bad_wr);
}

/* ---------------------------------------------------------------------
 * Creation
 */

struct mlx4_create_qp {
	struct ibv_create_qp		ibv_cmd;
	struct mlx4_ib_create_qp	drv;
};

struct mlx4_create_qp_ex {
	struct ibv_create_qp_ex		ibv_cmd;
	struct mlx4_ib_create_qp	drv;
};

static int qp_has_rq(struct ibv_qp_init_attr_ex *attr)
{
	return !attr->srq && attr->qp_type != IBV_QPT_XRC_SEND &&
	       attr->qp_type != IBV_QPT_XRC_RECV;
}

/* The receive queue, sized as the kernel sizes it. */
void mlx4_calc_rq_size(struct mlx4_qp *qp, struct ibv_qp_cap *cap,
		       uint32_t inl_recv_sz)
{
	unsigned int wqe_size;

	qp->rq.wqe_cnt = mlx4_roundup_pow2(cap->max_recv_wr);
	qp->rq.max_gs = mlx4_roundup_pow2(cap->max_recv_sge);
	wqe_size = qp->rq.max_gs * sizeof(struct mlx4_wqe_data_seg);
	if (inl_recv_sz > wqe_size)
		wqe_size = mlx4_roundup_pow2(inl_recv_sz);
	qp->rq.wqe_shift = mlx4_ilog2(wqe_size);
	qp->rq.mask = qp->rq.wqe_cnt - 1;
	qp->rq.max_post = qp->rq.wqe_cnt;
}

static int alloc_qp_buf(struct mlx4_qp *qp, int page_size)
{
	struct mlx4_context *ctx = qp->ctx;
	size_t sq_size = (size_t)qp->sq.wqe_cnt << qp->sq.wqe_shift;
	size_t rq_size = (size_t)qp->rq.wqe_cnt << qp->rq.wqe_shift;
	size_t size = sq_size + rq_size;

	qp->sq.wrid = malloc(qp->sq.wqe_cnt * sizeof(uint64_t));
	if (!qp->sq.wrid)
		return ENOMEM;
	if (qp->rq.wqe_cnt) {
		qp->rq.wrid = malloc(qp->rq.wqe_cnt * sizeof(uint64_t));
		if (!qp->rq.wrid)
			goto err_wrid;
	}

	if (ctx->extern_alloc.alloc) {
		qp->buf.buf = ctx->extern_alloc.alloc(size, ctx->extern_alloc.data);
		if (!qp->buf.buf)
			goto err_wrid;
		qp->buf.length = size;
		qp->buf_is_extern = 1;
	} else if (mlx4_alloc_buf(&qp->buf, size, page_size)) {
		goto err_wrid;
	}
	memset(qp->buf.buf, 0, size);

	/* The queue with the larger stride goes first. */
	if (qp->rq.wqe_shift > qp->sq.wqe_shift) {
		qp->rq.offset = 0;
		qp->sq.offset = rq_size;
	} else {
		qp->sq.offset = 0;
		qp->rq.offset = sq_size;
	}
	qp->sq.buf = (char *)qp->buf.buf + qp->sq.offset;
	qp->rq.buf = (char *)qp->buf.buf + qp->rq.offset;
	return 0;

err_wrid:
	free(qp->rq.wrid);
	free(qp->sq.wrid);
	qp->rq.wrid = qp->sq.wrid = NULL;
	return ENOMEM;
}

static void free_qp_buf(struct mlx4_qp *qp)
{
	if (qp->buf_is_extern)
		qp->ctx->extern_alloc.free(qp->buf.buf, qp->ctx->extern_alloc.data);
	else
		mlx4_free_buf(&qp->buf);
	free(qp->rq.wrid);
	free(qp->sq.wrid);
}

static void init_qp_indices(struct mlx4_qp *qp)
{
	qp->sq.head = qp->sq.tail = 0;
	qp->rq.head = qp->rq.tail = 0;
}

static int check_qp_caps(struct mlx4_context *ctx, struct ibv_qp_cap *cap,
			 int has_rq)
{
	if (cap->max_send_wr > (uint32_t)ctx->max_qp_wr ||
	    cap->max_send_sge > (uint32_t)ctx->max_sge)
		return EINVAL;
	if (has_rq && (cap->max_recv_wr > (uint32_t)ctx->max_qp_wr ||
		       cap->max_recv_sge > (uint32_t)ctx->max_sge))
		return EINVAL;
	if (cap->max_inline_data > MLX4_MAX_WQE_SIZE)
		return EINVAL;
	return 0;
}

/*
 * Size both work queues for @attr and allocate them: all that comes
 * before asking the kernel.  @attr's receive caps become what the
 * kernel is told (at least one WQE and one SGE, or none without RQ).
 */
int mlx4_qp_alloc_queues(struct mlx4_qp *qp, struct ibv_qp_init_attr_ex *attr)
{
	struct mlx4_context *ctx = qp->ctx;
	int has_rq = qp_has_rq(attr);
	int ret;

	ret = check_qp_caps(ctx, &attr->cap, has_rq);
	if (ret)
		return ret;

	mlx4_lock_init(&qp->sq.lock);
	mlx4_lock_init(&qp->rq.lock);

	ret = mlx4_calc_sq_size(qp, attr->qp_type, &attr->cap);
	if (ret)
		return ret;

	if (has_rq) {
		if (!attr->cap.max_recv_wr)
			attr->cap.max_recv_wr = 1;
		if (!attr->cap.max_recv_sge)
			attr->cap.max_recv_sge = 1;
		mlx4_calc_rq_size(qp, &attr->cap, qp->inl_recv_sz);
	} else {
		attr->cap.max_recv_wr = 0;
		attr->cap.max_recv_sge = 0;
	}

	ret = alloc_qp_buf(qp, mlx4_page_size(&ctx->ibv_ctx.context));
	if (ret)
		return ret;
	mlx4_init_sq_ownership(qp);

	if (has_rq) {
		qp->db = mlx4_alloc_db(ctx);
		if (!qp->db) {
			free_qp_buf(qp);
			return ENOMEM;
		}
	}
	return 0;
}

void mlx4_qp_free_queues(struct mlx4_qp *qp)
{
	mlx4_free_db(qp->ctx, qp->db);
	qp->db = NULL;
	free_qp_buf(qp);
}

/*
 * The kernel gave the QP its number: derive the doorbell values, make
 * the QP findable by its completions, and tell the caller in @cap what
 * the queues really hold.
 */
int mlx4_qp_ready(struct mlx4_qp *qp, struct ibv_qp_init_attr_ex *attr,
		  struct ibv_qp_cap *cap)
{
	struct mlx4_context *ctx = qp->ctx;
	int ret;

	qp->qpn = qp->verbs_qp.qp.qp_num;
	qp->doorbell_qpn = htobe32(qp->qpn << 8);
	qp->sdb = (char *)ctx->uar + MLX4_SEND_DOORBELL;
	qp->sq_signal_bits = attr->sq_sig_all ?
			     htobe32(MLX4_WQE_CTRL_CQ_UPDATE) : 0;
	init_qp_indices(qp);

	ret = mlx4_table_insert(&ctx->qp_table, qp->qpn, qp);
	if (ret)
		return ret;

	mlx4_set_sq_limits(qp, attr->qp_type, cap);
	cap->max_recv_wr = qp->db ? qp->rq.wqe_cnt : 0;
	cap->max_recv_sge = qp->db ? qp->rq.max_gs : 0;
	return 0;
}

/* An XRC target QP lives in the kernel: no queues of ours. */
static struct ibv_qp *create_xrc_tgt_qp(struct ibv_context *context,
					struct ibv_qp_init_attr_ex *attr)
{
	struct ib_uverbs_create_qp_resp resp = {};
	struct ibv_create_qp cmd = {};
	struct mlx4_qp *qp;
	int ret;

	qp = calloc(1, sizeof(*qp));
	if (!qp) {
		errno = ENOMEM;
		return NULL;
	}
	qp->ctx = to_mctx(context);
	qp->no_queues = 1;

	ret = ibv_cmd_create_qp_ex(context, &qp->verbs_qp, attr, &cmd,
				   sizeof(cmd), &resp, sizeof(resp));
	if (ret) {
		free(qp);
		errno = ret;
		return NULL;
	}
	mlx4_mark_defined(&resp, sizeof(resp));
	qp->qpn = qp->verbs_qp.qp.qp_num;
	return &qp->verbs_qp.qp;
}

static int create_qp_cmd(struct mlx4_qp *qp, struct ibv_context *context,
			 struct ibv_qp_init_attr_ex *attr)
{
	struct mlx4_ib_create_qp drv = {
		.buf_addr = (uintptr_t)qp->buf.buf,
		.db_addr = (uintptr_t)qp->db,
		.log_sq_bb_count = mlx4_ilog2(qp->sq.wqe_cnt),
		.log_sq_stride = qp->sq.wqe_shift,
		.inl_recv_sz = qp->inl_recv_sz,
	};
	int ret;

	if (attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) {
		struct mlx4_create_qp_ex cmd = {};
		struct ib_uverbs_ex_create_qp_resp resp = {};

		cmd.drv = drv;
		ret = ibv_cmd_create_qp_ex2(context, &qp->verbs_qp, attr,
					    &cmd.ibv_cmd, sizeof(cmd),
					    &resp, sizeof(resp));
		mlx4_mark_defined(&resp, sizeof(resp));
	} else {
		struct mlx4_create_qp cmd = {};
		struct ib_uverbs_create_qp_resp resp = {};

		cmd.drv = drv;
		ret = ibv_cmd_create_qp_ex(context, &qp->verbs_qp, attr,
					   &cmd.ibv_cmd, sizeof(cmd),
					   &resp, sizeof(resp));
		mlx4_mark_defined(&resp, sizeof(resp));
	}
	return ret;
}

/*
 * An RSS QP spreads received packets over the WQs of an indirection
 * table; it has no queues of its own.
 */
struct mlx4_create_qp_rss {
	struct ibv_create_qp_ex		ibv_cmd;
	struct mlx4_ib_create_qp_rss	drv;
};

static struct ibv_qp *create_rss_qp(struct ibv_context *context,
				    struct ibv_qp_init_attr_ex *attr)
{
	struct ib_uverbs_ex_create_qp_resp resp = {};
	struct mlx4_create_qp_rss cmd = {};
	struct ibv_rx_hash_conf *conf = &attr->rx_hash_conf;
	struct mlx4_qp *qp;
	int ret;

	if (attr->qp_type != IBV_QPT_RAW_PACKET ||
	    !(attr->comp_mask & IBV_QP_INIT_ATTR_RX_HASH) ||
	    !(attr->comp_mask & IBV_QP_INIT_ATTR_IND_TABLE) ||
	    conf->rx_hash_function != IBV_RX_HASH_FUNC_TOEPLITZ ||
	    conf->rx_hash_key_len != sizeof(cmd.drv.rx_hash_key) ||
	    !conf->rx_hash_key) {
		errno = EINVAL;
		return NULL;
	}

	qp = calloc(1, sizeof(*qp));
	if (!qp) {
		errno = ENOMEM;
		return NULL;
	}
	qp->ctx = to_mctx(context);
	qp->no_queues = 1;

	cmd.drv.rx_hash_fields_mask = conf->rx_hash_fields_mask;
	cmd.drv.rx_hash_function = MLX4_IB_RX_HASH_FUNC_TOEPLITZ;
	memcpy(cmd.drv.rx_hash_key, conf->rx_hash_key,
	       sizeof(cmd.drv.rx_hash_key));

	ret = ibv_cmd_create_qp_ex2(context, &qp->verbs_qp, attr, &cmd.ibv_cmd,
				    sizeof(cmd), &resp, sizeof(resp));
	if (ret) {
		free(qp);
		errno = ret;
		return NULL;
	}
	mlx4_mark_defined(&resp, sizeof(resp));
	qp->qpn = qp->verbs_qp.qp.qp_num;
	return &qp->verbs_qp.qp;
}

enum {
	MLX4_CREATE_QP_COMP_MASK = IBV_QP_INIT_ATTR_PD |
				   IBV_QP_INIT_ATTR_XRCD |
				   IBV_QP_INIT_ATTR_CREATE_FLAGS,
	MLX4_CREATE_QP_FLAGS = IBV_QP_CREATE_BLOCK_SELF_MCAST_LB,
};

static struct ibv_qp *create_qp(struct ibv_context *context,
				struct ibv_qp_init_attr_ex *user_attr,
				uint32_t inl_recv_sz)
{
	struct mlx4_context *ctx = to_mctx(context);
	struct ibv_qp_init_attr_ex attr = *user_attr;
	struct mlx4_qp *qp;
	int has_rq, ret;

	if (attr.comp_mask & (IBV_QP_INIT_ATTR_RX_HASH |
			      IBV_QP_INIT_ATTR_IND_TABLE))
		return create_rss_qp(context, &attr);
	if (attr.comp_mask & ~(uint32_t)MLX4_CREATE_QP_COMP_MASK) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if ((attr.comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) &&
	    (attr.create_flags & ~(uint32_t)MLX4_CREATE_QP_FLAGS)) {
		errno = EOPNOTSUPP;
		return NULL;
	}

	switch (attr.qp_type) {
	case IBV_QPT_XRC_RECV:
		if (!(attr.comp_mask & IBV_QP_INIT_ATTR_XRCD) || !attr.xrcd) {
			errno = EINVAL;
			return NULL;
		}
		return create_xrc_tgt_qp(context, &attr);
	case IBV_QPT_RC:
	case IBV_QPT_UC:
	case IBV_QPT_UD:
	case IBV_QPT_XRC_SEND:
		break;
	default:
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!(attr.comp_mask & IBV_QP_INIT_ATTR_PD) || !attr.pd) {
		errno = EINVAL;
		return NULL;
	}

	has_rq = qp_has_rq(&attr);
	if (inl_recv_sz && (!has_rq || inl_recv_sz > ctx->max_inl_recv_sz)) {
		errno = EINVAL;
		return NULL;
	}

	qp = calloc(1, sizeof(*qp));
	if (!qp) {
		errno = ENOMEM;
		return NULL;
	}
	qp->ctx = ctx;
	qp->inl_recv_sz = inl_recv_sz;

	ret = mlx4_qp_alloc_queues(qp, &attr);
	if (ret)
		goto err_free;

	ret = create_qp_cmd(qp, context, &attr);
	if (ret)
		goto err_queues;

	ret = mlx4_qp_ready(qp, &attr, &user_attr->cap);
	if (ret)
		goto err_destroy;
	return &qp->verbs_qp.qp;

err_destroy:
	ibv_cmd_destroy_qp(&qp->verbs_qp.qp);
err_queues:
	mlx4_qp_free_queues(qp);
err_free:
	free(qp);
	errno = ret;
	return NULL;
}

struct ibv_qp *mlx4_create_qp_ex(struct ibv_context *context,
				 struct ibv_qp_init_attr_ex *attr)
{
	return create_qp(context, attr, 0);
}

struct ibv_qp *mlx4_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	struct ibv_qp_init_attr_ex attr_ex = {
		.qp_context = attr->qp_context,
		.send_cq = attr->send_cq,
		.recv_cq = attr->recv_cq,
		.srq = attr->srq,
		.cap = attr->cap,
		.qp_type = attr->qp_type,
		.sq_sig_all = attr->sq_sig_all,
		.comp_mask = IBV_QP_INIT_ATTR_PD,
		.pd = pd,
	};
	struct ibv_qp *qp;

	qp = create_qp(pd->context, &attr_ex, 0);
	if (qp)
		attr->cap = attr_ex.cap;
	return qp;
}

struct ibv_qp *mlx4dv_create_qp(struct ibv_context *context,
				struct ibv_qp_init_attr_ex *attr,
				struct mlx4dv_qp_init_attr *mlx4_attr)
{
	uint32_t inl_recv_sz = 0;

	if (mlx4_attr->comp_mask & ~(uint64_t)MLX4DV_QP_INIT_ATTR_MASK_INL_RECV) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (mlx4_attr->comp_mask & MLX4DV_QP_INIT_ATTR_MASK_INL_RECV)
		inl_recv_sz = mlx4_attr->inl_recv_sz;
	return create_qp(context, attr, inl_recv_sz);
}

struct ibv_qp *mlx4_open_qp(struct ibv_context *context,
			    struct ibv_qp_open_attr *attr)
{
	struct ib_uverbs_create_qp_resp resp = {};
	struct ibv_open_qp cmd = {};
	struct mlx4_qp *qp;
	int ret;

	qp = calloc(1, sizeof(*qp));
	if (!qp) {
		errno = ENOMEM;
		return NULL;
	}
	qp->ctx = to_mctx(context);
	qp->no_queues = 1;

	ret = ibv_cmd_open_qp(context, &qp->verbs_qp, sizeof(qp->verbs_qp),
			      attr, &cmd, sizeof(cmd), &resp, sizeof(resp));
	if (ret) {
		free(qp);
		errno = ret;
		return NULL;
	}
	mlx4_mark_defined(&resp, sizeof(resp));
	qp->qpn = qp->verbs_qp.qp.qp_num;
	return &qp->verbs_qp.qp;
}

/* ---------------------------------------------------------------------
 * State changes, queries, destruction
 */

/* Drop the QP's completions from its CQs: it will produce no more. */
void mlx4_qp_clean_cqs(struct mlx4_qp *qp, struct ibv_cq *ib_send_cq,
		       struct ibv_cq *ib_recv_cq)
{
	struct ibv_srq *ibsrq = qp->verbs_qp.qp.srq;
	struct mlx4_cq *send_cq = ib_send_cq ? to_mcq(ib_send_cq) : NULL;
	struct mlx4_cq *recv_cq = ib_recv_cq ? to_mcq(ib_recv_cq) : NULL;
	struct mlx4_srq *srq = ibsrq ? to_msrq(ibsrq) : NULL;

	mlx4_lock_cqs(send_cq, recv_cq);
	if (recv_cq)
		mlx4_cq_clean(recv_cq, qp->qpn, srq);
	if (send_cq && send_cq != recv_cq)
		mlx4_cq_clean(send_cq, qp->qpn, NULL);
	mlx4_unlock_cqs(send_cq, recv_cq);
}

static void qp_clean_cqs(struct mlx4_qp *qp)
{
	mlx4_qp_clean_cqs(qp, qp->verbs_qp.qp.send_cq, qp->verbs_qp.qp.recv_cq);
}

/* Back to RESET: the queues start over, empty and invalid. */
static void qp_reset_queues(struct mlx4_qp *qp)
{
	qp_clean_cqs(qp);

	mlx4_lock(&qp->sq.lock);
	mlx4_lock(&qp->rq.lock);
	init_qp_indices(qp);
	mlx4_init_sq_ownership(qp);
	if (qp->db)
		*qp->db = 0;
	mlx4_unlock(&qp->rq.lock);
	mlx4_unlock(&qp->sq.lock);
}

int mlx4_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int attr_mask)
{
	struct mlx4_qp *qp = to_mqp(ibqp);
	struct ibv_modify_qp cmd = {};
	int link_layer = -1;
	int ret;

	if (attr_mask & IBV_QP_PORT) {
		link_layer = mlx4_port_link_layer(qp->ctx, attr->port_num);
		if (link_layer < 0)
			return EINVAL;
	}

	ret = ibv_cmd_modify_qp(ibqp, attr, attr_mask, &cmd, sizeof(cmd));
	if (ret)
		return ret;

	if (link_layer >= 0)
		qp->link_layer = link_layer;

	if (!qp->no_queues && (attr_mask & IBV_QP_STATE) &&
	    attr->qp_state == IBV_QPS_RESET)
		qp_reset_queues(qp);
	return 0;
}

int mlx4_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int attr_mask,
		  struct ibv_qp_init_attr *init_attr)
{
	struct mlx4_qp *qp = to_mqp(ibqp);
	struct ibv_query_qp cmd = {};
	int ret;

	ret = ibv_cmd_query_qp(ibqp, attr, attr_mask, init_attr, &cmd,
			       sizeof(cmd));
	if (ret)
		return ret;
	if (qp->no_queues)
		return 0;

	/* The kernel does not know our sizes; report what we built. */
	attr->cap.max_send_wr = qp->sq.max_post;
	attr->cap.max_send_sge = qp->sq.max_gs;
	attr->cap.max_inline_data = qp->max_inline_data;
	attr->cap.max_recv_wr = qp->db ? qp->rq.wqe_cnt : 0;
	attr->cap.max_recv_sge = qp->db ? qp->rq.max_gs : 0;
	init_attr->cap = attr->cap;
	return 0;
}

int mlx4_destroy_qp(struct ibv_qp *ibqp)
{
	struct mlx4_qp *qp = to_mqp(ibqp);
	int ret;

	ret = ibv_cmd_destroy_qp(ibqp);
	if (ret)
		return ret;

	if (!qp->no_queues) {
		qp_clean_cqs(qp);
		mlx4_table_remove(&qp->ctx->qp_table, qp->qpn);
		mlx4_qp_free_queues(qp);
	}
	free(qp);
	return 0;
}
