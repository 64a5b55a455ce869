/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What crosses the simulated wire: a message from a requester QP to a
 * responder QP, with everything the responder needs and the answer it
 * gives back (the ACK or NAK of an RC connection, the read data's place,
 * the original value of an atomic).
 */
#ifndef MLX4SIM_WIRE_H
#define MLX4SIM_WIRE_H

#include "sim.h"

#define GRH_LEN		40
/* An address vector's port_pd: the port in the top byte's low bits. */
#define MLX4_AV_PORT_MASK	0x3
#define MLX4_AV_VLAN_PRESENT	(1u << 29)

enum resp_status {
	RESP_ACK,		/* executed */
	RESP_DROP,		/* never arrived or silently discarded */
	RESP_RNR,		/* receiver not ready: no receive WQE */
	RESP_NAK_INV_REQ,	/* invalid request */
	RESP_NAK_ACCESS,	/* remote access error */
	RESP_NAK_OP,		/* remote operation error */
	RESP_NAK_SEQ,		/* PSN sequence error: a PSN ahead of the expected */
};

struct sim_message {
	uint8_t opcode;			/* MLX4_OPCODE_* of the send WQE */
	bool solicited;
	uint32_t imm;			/* as the WQE carries it (big-endian) */
	uint32_t length;
	uint32_t psn;
	uint32_t npkts;			/* PSNs the message takes */

	/* The payload: inline bytes, or gathered from the sender. */
	const uint8_t *inline_data;
	pid_t src_pid;
	const struct dma_seg *src;
	int nsrc;

	/* RDMA and atomics */
	uint64_t raddr;
	uint32_t rkey;
	uint64_t swap_add, compare;

	/* Who sent it, for the receive CQE */
	uint16_t slid;
	uint8_t sl;
	uint8_t path_bits;		/* of the destination LID */
	uint32_t src_qpn;

	/* UD */
	uint32_t qkey;
	bool has_grh;
	bool ethernet;			/* RoCE: the SL travels as a 3-bit priority */
	bool has_vlan;			/* RoCE: an 802.1Q tag, with ... */
	uint16_t vlan_tci;		/* ... its priority and VLAN ID */
	uint32_t csum_status;		/* raw, IPoIB: MLX4_CQE_STATUS_* checks */
	uint32_t rss_hash;		/* ... and the RSS hash, spread ones */
	bool no_loopback;		/* raw: not back to the sender's port */
	uint8_t grh[GRH_LEN];

	/* XRC: the SRQ at the target */
	uint32_t xrc_srqn;

	/* Answers */
	uint8_t min_rnr_timer;		/* with RESP_RNR */
	pid_t read_pid;			/* RDMA READ: where the data is */
	uint64_t read_addr;
	uint64_t atomic_orig;		/* atomics: the value before */
};

/*
 * resp.c: a message arrives at a QP; an error of its responder takes
 * effect once the requester has completed the WQE (resp_finish).
 */
enum resp_status resp_deliver(struct sim_qp *src, struct sim_qp *dst,
			      struct sim_message *msg);
void resp_finish(struct sim_qp *dst);

/* raw.c: raw Ethernet frames, the switch and flow steering */
uint32_t inet_sum(uint32_t sum, const uint8_t *p, size_t len);
uint16_t inet_fold(uint32_t sum);
bool gid_is_ipv4(const uint8_t gid[16]);
size_t roce_net_header(uint8_t *h, bool v2, bool ipv4,
		       const uint8_t sgid[16], const uint8_t dgid[16],
		       uint8_t tclass, uint32_t flow_label, uint8_t hop_limit,
		       uint16_t ib_len);
void ipoib_fill_checksums(uint8_t *p, size_t len, bool ip, bool l4);
uint32_t ipoib_checksum_status(const uint8_t *p, size_t len);
#define RAW_MAX_FRAME	(14 + 4 + 1500)	/* a tagged frame, no FCS */
#define IPOIB_MAX_DATAGRAM	4096	/* a UD message on InfiniBand: the MTU */
#define CTRL_INS_CVLAN	(1u << 6)	/* control segment byte 6: insert a tag */
void raw_fill_checksums(uint8_t *frame, size_t len, bool ip, bool l4);
size_t raw_lso_segment(const uint8_t *hdr, size_t hdr_len,
		       const uint8_t *chunk, size_t n, uint32_t offset,
		       uint16_t index, bool last, uint8_t *frame);
void raw_transmit(struct sim_qp *src, struct sim_message *msg,
		  const uint8_t *frame, size_t len);

/* pcap.c: the packets of a message and of its answer, on Ethernet */
void pcap_frame(const uint8_t *frame, size_t len);
void pcap_request(const struct sim_qp *src, const struct sim_qp *dst,
		  const struct sim_message *msg);
void pcap_answer(const struct sim_qp *src, struct sim_qp *dst,
		 const struct sim_message *msg, enum resp_status st);

/* req.c: an answer that was held back reaches the requester */
void req_late_answer(struct sim_qp *qp, const struct sim_message *msg,
		     enum resp_status st);

/* flight.c: packets held back by `mlx4sim fault delay` and `reorder` */
bool flight_hold(struct sim_qp *src, struct sim_qp *dst,
		 const struct sim_message *msg, bool answer,
		 enum resp_status status, uint32_t delay_ms);
void flight_passed(const struct sim_qp *src);

/* comp.c: receive completions */
void comp_recv(struct sim_cq *cq, uint32_t qpn, uint32_t wqe_index,
	       const struct sim_message *msg, uint32_t byte_len,
	       uint16_t pkey_index);
int comp_recv_after(struct sim_cq *cq, uint32_t qpn, uint32_t wqe_index,
		    const struct sim_message *msg, uint32_t byte_len,
		    uint16_t pkey_index, const struct dma_piece *data, int n);
void comp_recv_error(struct sim_cq *cq, uint32_t qpn, uint32_t wqe_index,
		     uint8_t syndrome);

#endif
