/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The extended CQ's polling (struct ibv_cq_ex): ibv_start_poll,
 * ibv_next_poll and ibv_end_poll, which consume one CQE a call, and the
 * readers of its fields, chosen when the CQ is made
 * (mlx4_cq_fill_ex_ops()).  The CQE reading both ways of polling share
 * is cqe.h's; ibv_poll_cq, creation and the rest of the CQ's life are in
 * cq.c.
 */
#include <config.h>

#include <errno.h>

#include "annotate.h"
#include "cqe.h"
#include "mlx4.h"
#include "mmio.h"

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
 * ibv_start_poll found nothing: unlock.  Out of line, as the empty
 * case's jump can go straight here: inline, the unlock had GCC compute
 * the lock's address into a register ahead of the lock (see
 * bench/README).
 */
static int __attribute__((noinline))
start_poll_empty(struct mlx4_cq *cq)
{
	mlx4_unlock(&cq->lock);
	return ENOENT;
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
			return start_poll_empty(cq);
		return ENOENT;
	}
	cqe_body_ready(cqe);
	step_ci(cq);
	cq->cur_cqe = cqe;

	/*
	 * A successful receive by one compare, a send by a range compare
	 * after it, rather than a test of the direction and then of each
	 * range (see bench/README).
	 */
	if (kind <= LAST_RECV_KIND) {
		if (unlikely(cqe_qpn_be(cqe) != cq->recv_qpn))
			return poll_one_ex_rare(cq, cqe, starting);
		ibcq->wr_id = retire_recv(&cq->last_qp->rq);
	} else {
		if (unlikely((uint8_t)(kind - MLX4_CQE_IS_SEND_MASK) >
			     LAST_SEND_KIND - MLX4_CQE_IS_SEND_MASK ||
			     cqe_qpn_be(cqe) != cq->send_qpn))
			return poll_one_ex_rare(cq, cqe, starting);
		ibcq->wr_id = retire_send(&cq->last_qp->sq,
					  be16toh(cqe->wqe_index));
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
