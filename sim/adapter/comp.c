/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Completions: the CQEs the device writes for finished, failed and
 * flushed work requests, in the ConnectX-3 format.
 */
#include <string.h>

#include "adapter.h"
#include "../host/opcode.h"
#include "queue.h"
#include "../fabric/wire.h"

/* Vendor syndromes a ConnectX-3 reports beside the IB one. */
static uint8_t vendor_err(uint8_t syndrome)
{
	switch (syndrome) {
	case MLX4_CQE_SYNDROME_WR_FLUSH_ERR:		return 0xf9;
	case MLX4_CQE_SYNDROME_LOCAL_LENGTH_ERR:	return 0x69;
	case MLX4_CQE_SYNDROME_LOCAL_QP_OP_ERR:		return 0x68;
	case MLX4_CQE_SYNDROME_LOCAL_PROT_ERR:		return 0x65;
	case MLX4_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR:	return 0x81;
	case MLX4_CQE_SYNDROME_RNR_RETRY_EXC_ERR:	return 0x82;
	case MLX4_CQE_SYNDROME_REMOTE_ACCESS_ERR:	return 0x88;
	case MLX4_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR:	return 0x8a;
	case MLX4_CQE_SYNDROME_REMOTE_OP_ERR:		return 0x89;
	default:					return 0x70;
	}
}

/* An error CQE, its owner bit clear. */
void comp_error_cqe(struct mlx4_cqe *cqe, uint32_t qpn, uint32_t wqe_index,
		    uint8_t syndrome, bool is_send)
{
	struct mlx4_err_cqe err;

	memset(&err, 0, sizeof(err));
	err.vlan_my_qpn = htobe32(qpn);
	err.wqe_index = htobe16(wqe_index);
	err.vendor_err = vendor_err(syndrome);
	err.syndrome = syndrome;
	err.owner_sr_opcode = MLX4_CQE_OPCODE_ERROR |
			      (is_send ? MLX4_CQE_IS_SEND_MASK : 0);
	_Static_assert(sizeof(err) == sizeof(struct mlx4_cqe), "CQE size");
	memcpy(cqe, &err, sizeof(err));
}

static void push_error(struct sim_cq *cq, uint32_t qpn, uint32_t wqe_index,
		       uint8_t syndrome, bool is_send)
{
	struct mlx4_cqe cqe;

	comp_error_cqe(&cqe, qpn, wqe_index, syndrome, is_send);
	cq_push(cq, &cqe, false);
}

void comp_send(struct sim_qp *qp, uint32_t wqe_index, uint8_t opcode,
	       uint32_t byte_len)
{
	struct mlx4_cqe cqe;

	memset(&cqe, 0, sizeof(cqe));
	cqe.vlan_my_qpn = htobe32(qp->qpn);
	cqe.byte_cnt = htobe32(byte_len);
	cqe.wqe_index = htobe16(wqe_index);
	cqe.owner_sr_opcode = MLX4_CQE_IS_SEND_MASK | opcode;
	cq_push(qp->send_cq, &cqe, false);
}

void comp_send_error(struct sim_qp *qp, uint32_t wqe_index, uint8_t syndrome)
{
	push_error(qp->send_cq, qp->qpn, wqe_index, syndrome, true);
}

void comp_recv(struct sim_cq *cq, uint32_t qpn, uint32_t wqe_index,
	       const struct sim_message *msg, uint32_t byte_len,
	       uint16_t pkey_index)
{
	if (comp_recv_after(cq, qpn, wqe_index, msg, byte_len, pkey_index,
			    NULL, 0))
		breach(cq->ctx, "CQ 0x%x: buffer at 0x%llx unwritable",
		       cq->cqn, (unsigned long long)cq->buf);
}

/* comp_recv(), the data it reports written in the same transfer. */
int comp_recv_after(struct sim_cq *cq, uint32_t qpn, uint32_t wqe_index,
		    const struct sim_message *msg, uint32_t byte_len,
		    uint16_t pkey_index, const struct dma_piece *data, int n)
{
	const struct sim_opcode *op = opcode_get(msg->opcode);
	struct mlx4_cqe cqe;
	uint32_t rqpn = msg->xrc_srqn ? msg->xrc_srqn : msg->src_qpn;

	memset(&cqe, 0, sizeof(cqe));
	cqe.vlan_my_qpn = htobe32(qpn);
	if (op->flags & (OPF_IMM | OPF_INVAL_KEY))
		cqe.immed_rss_invalid = msg->imm;
	else if (msg->rss_hash)
		cqe.immed_rss_invalid = htobe32(msg->rss_hash);
	else
		cqe.immed_rss_invalid = htobe32(pkey_index);
	/* XRC receives name their SRQ where others name the sender. */
	cqe.g_mlpath_rqpn = htobe32((msg->has_grh ? 1u << 31 : 0) |
				    (uint32_t)(msg->path_bits & 0x7f) << 24 |
				    (rqpn & MLX4_CQE_QPN_MASK));
	cqe.sl_vid = htobe16((uint16_t)msg->sl << (msg->ethernet ? 13 : 12));
	if (msg->has_vlan) {
		cqe.vlan_my_qpn |= htobe32(MLX4_CQE_VLAN_PRESENT_MASK);
		cqe.sl_vid = htobe16(msg->vlan_tci);
	}
	cqe.rlid = htobe16(msg->slid);
	cqe.status = htobe32(msg->csum_status);
	if (msg->csum_status & MLX4_CQE_STATUS_TCP_UDP_CSUM_OK)
		cqe.checksum = 0xffff;
	cqe.byte_cnt = htobe32(byte_len);
	cqe.wqe_index = htobe16(wqe_index);
	cqe.owner_sr_opcode = op->recv_opcode;
	return cq_push_after(cq, &cqe, msg->solicited, data, n);
}

void comp_recv_error(struct sim_cq *cq, uint32_t qpn, uint32_t wqe_index,
		     uint8_t syndrome)
{
	push_error(cq, qpn, wqe_index, syndrome, false);
}

/* Every WQE the driver handed over and the device did not finish. */
void comp_flush_sq(struct sim_qp *qp)
{
	int n;

	if (!qp->sq.wqe_cnt)
		return;
	while ((n = sq_ready(qp)) > 0) {
		for (int i = 0; i < n; i++) {
			comp_send_error(qp, qp->sq.head & 0xffff,
					MLX4_CQE_SYNDROME_WR_FLUSH_ERR);
			qp->sq.head++;
		}
	}
}

void comp_flush_rq(struct sim_qp *qp)
{
	if (!qp->rq.wqe_cnt)
		return;
	for (uint16_t n = rq_untaken(qp); n; n--) {
		/*
		 * The adapter's wqe_index of a receive flush is not the
		 * flushed WQE's (mlx4_ib and rdma-core retire the RQ tail
		 * instead): here it is the one before, so that a driver
		 * trusting it reports the wrong wr_id.
		 */
		comp_recv_error(qp->recv_cq, qp->qpn,
				(qp->rq.head - 1) & 0xffff,
				MLX4_CQE_SYNDROME_WR_FLUSH_ERR);
		qp->rq.head++;
	}
}
