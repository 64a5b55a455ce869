/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Completion queues: creation, ibv_poll_cq, arming, resizing, and
 * removing the completions of a queue that goes away.  Reading CQEs,
 * which ibv_poll_cq shares with the extended interface's polling
 * (cq_ex.c), is cqe.h's, which says what a CQ's ring is.
 */
#include <config.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "annotate.h"
#include "cqe.h"
#include "mlx4.h"
#include "mmio.h"

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
 * ibv_poll_cq: each CQE decoded into an ibv_wc
 */

/* A successful send's ibv_wc, but wr_id and qp_num; @kind its CQE's. */
static inline void fill_send_wc(struct mlx4_cqe *cqe, unsigned long kind,
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
				   unsigned long kind, struct ibv_wc *wc)
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
		   struct mlx4_cqe *cqe, unsigned long kind)
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
 * (see bench/README).  @kind is a word here, as for poll_cq_first_recv(),
 * poll_send_common() and fill_send_wc(): it indexes cqe_wc[] as it comes,
 * with no widening.
 */
static int __attribute__((noinline))
poll_cq_locked(struct mlx4_cq *cq, int ne, struct ibv_wc *wc,
	       struct mlx4_cqe *cqe, unsigned long kind)
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
	return mlx4_alloc_queue_buf(cq->domain, buf,
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
