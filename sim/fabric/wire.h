/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What crosses the simulated wire: a message from a requester QP to a
 * responder QP, with everything the responder needs and the answer it
 * gives back (the ACK or NAK of an RC connection, the read data's place,
 * the original value of an atomic).
 */
#ifndef MLX4SIM_WIRE_H
#define MLX4SIM_WIRE_H

#include "fabric.h"

#define GRH_LEN		40

/* A big-endian 16-bit field of a header. */
static inline uint16_t get16(const uint8_t *p)
{
	return p[0] << 8 | p[1];
}
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
	/*
	 * Where each of those is mapped here, when every one is in pinned
	 * pages the daemon maps; NULL otherwise.  For the trip the sender
	 * makes at once only: a packet held back has it NULL.
	 */
	uint8_t *const *src_here;

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

/* inet.c: checksums and RoCE network headers */
uint32_t inet_sum(uint32_t sum, const uint8_t *p, size_t len);
uint16_t inet_fold(uint32_t sum);
bool gid_is_ipv4(const uint8_t gid[16]);
size_t roce_net_header(uint8_t *h, bool v2, bool ipv4,
		       const uint8_t sgid[16], const uint8_t dgid[16],
		       uint8_t tclass, uint32_t flow_label, uint8_t hop_limit,
		       uint16_t ib_len);

/* pcap.c: the packets of a message and of its answer, on Ethernet */
void pcap_frame(const uint8_t *frame, size_t len);
void pcap_request(const struct sim_qp *src, const struct sim_qp *dst,
		  const struct sim_message *msg);
void pcap_answer(const struct sim_qp *src, struct sim_qp *dst,
		 const struct sim_message *msg, enum resp_status st);

/*
 * flight.c: packets held back by `mlx4sim fault delay` and `reorder`.
 * When one is due the fabric hands it to the lander the adapter
 * registered: the fabric carries packets, the adapter knows QPs.
 */
struct sim_held {
	bool answer;			/* responder to requester */
	enum resp_status status;	/* of an answer */
	int src_hca, dst_hca;
	uint32_t src_qpn, dst_qpn;
	struct sim_message msg;
};
typedef void sim_land_fn(struct sim_held *held);
void flight_set_lander(sim_land_fn *land);
bool flight_hold(struct sim_qp *src, struct sim_qp *dst,
		 const struct sim_message *msg, bool answer,
		 enum resp_status status, uint32_t delay_ms);
void flight_passed(const struct sim_qp *src);

#endif
