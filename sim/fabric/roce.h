/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * RoCE packets as bytes (roce.c): the one definition of their frames,
 * which the capture (pcap.c) writes and the uplink (uplink.c) sends and
 * takes.  RoCE v1 is a GRH under EtherType 0x8915; RoCE v2 an IPv4 or
 * IPv6 header and UDP to port 4791; then the BTH, the extended headers,
 * the payload, its pad and the ICRC.
 */
#ifndef MLX4SIM_ROCE_H
#define MLX4SIM_ROCE_H

#include "wire.h"
#include "../host/opcode.h"

#define ROCE_V2_PORT	4791
/* The largest frame: Ethernet, a tag, IPv6, UDP, BTH, headers, 4 KiB. */
#define ROCE_MAX_FRAME	(14 + 4 + 40 + 8 + 12 + 4 + 28 + 4096 + 4 + 4)

/* IBA transport opcodes: the transport in the top 3 bits, then the op. */
enum {
	TRANSPORT_RC = 0x00, TRANSPORT_UC = 0x20, TRANSPORT_UD = 0x60,
	TRANSPORT_XRC = 0xa0,
	SEND_FIRST = 0x00, SEND_MIDDLE = 0x01, SEND_LAST = 0x02,
	SEND_LAST_IMM = 0x03, SEND_ONLY = 0x04, SEND_ONLY_IMM = 0x05,
	WRITE_FIRST = 0x06, WRITE_MIDDLE = 0x07, WRITE_LAST = 0x08,
	WRITE_LAST_IMM = 0x09, WRITE_ONLY = 0x0a, WRITE_ONLY_IMM = 0x0b,
	READ_REQUEST = 0x0c, READ_RESP_FIRST = 0x0d, READ_RESP_MIDDLE = 0x0e,
	READ_RESP_LAST = 0x0f, READ_RESP_ONLY = 0x10, ACKNOWLEDGE = 0x11,
	ATOMIC_ACKNOWLEDGE = 0x12, CMP_SWAP = 0x13, FETCH_ADD = 0x14,
	SEND_LAST_INV = 0x16, SEND_ONLY_INV = 0x17,
};

/* AETH syndromes */
#define AETH_ACK		0x1f	/* ACK, no credit count */
#define AETH_RNR_NAK		0x20
#define AETH_NAK		0x60

/* Both ends of a packet, and what its network header says. */
struct roce_path {
	bool v2;
	bool ipv4;
	uint8_t smac[6], dmac[6];
	uint8_t sgid[16], dgid[16];
	uint8_t tclass, hop_limit;
	uint32_t flow_label;
	uint16_t udp_sport;
	bool has_vlan;
	uint16_t vlan_tci;		/* an 802.1Q tag's priority and VID */
};

/* A packet: its BTH and extended headers, then its payload. */
struct roce_packet {
	uint8_t opcode;
	bool solicited;
	bool ack_req;
	uint32_t dqpn, psn;
	uint8_t ext[64];
	size_t ext_len;
	const uint8_t *payload;
	size_t len;
};

uint8_t *roce_put16(uint8_t *p, uint16_t v);
uint8_t *roce_put32(uint8_t *p, uint32_t v);
uint8_t *roce_put64(uint8_t *p, uint64_t v);
uint32_t roce_get32(const uint8_t *p);
uint64_t roce_get64(const uint8_t *p);

/* The frame of @pkt along @a into @frame (ROCE_MAX_FRAME): its length, or 0. */
size_t roce_build(const struct roce_path *a, const struct roce_packet *pkt,
		  uint8_t *frame);
/*
 * A frame taken from a wire: whether it is RoCE (v2, or v1 under
 * EtherType 0x8915) with good lengths and a good ICRC; then @a and @pkt say what it carries (@pkt's payload and
 * extended headers point into @frame; ext_len is what follows the BTH).
 */
bool roce_parse(const uint8_t *frame, size_t len, struct roce_path *a,
		struct roce_packet *pkt);

/* The packets of connected @qp along its path, and of a datagram. */
void roce_connected_path(const struct sim_qp *qp, struct roce_path *a);
void roce_datagram_path(const struct sim_qp *src, const uint8_t dmac[6],
			const struct sim_message *msg, struct roce_path *a);
uint8_t roce_transport(enum ibv_qp_type type);
size_t roce_put_reth(uint8_t *p, const struct sim_message *msg);
uint8_t roce_request_opcode(const struct sim_opcode *op,
			    const struct sim_message *msg, uint32_t i,
			    uint32_t n, struct roce_packet *pkt);
void roce_first_ext(const struct sim_qp *src, const struct sim_message *msg,
		    struct roce_packet *pkt);
void roce_atomic_eth(const struct sim_message *msg, struct roce_packet *pkt);
uint8_t roce_aeth_syndrome(enum resp_status st, uint8_t min_rnr_timer);

#endif
