/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The wire of the Ethernet ports as a capture (--pcap FILE): each RoCE
 * packet a message and its answer take, framed as the adapter frames it,
 * so that an outside judge (Wireshark's dissectors, tshark) can read the
 * simulated wire.
 *
 * The daemon moves whole messages; here each becomes its packets: split at
 * the path MTU, with the opcodes of its first, middle and last packets, the
 * extended headers each carries (RETH, AtomicETH, ImmDt, IETH, DETH,
 * XRCETH, AETH, AtomicAckETH), its payload read back from the sender, its
 * pad, and the ICRC.  RoCE v1 is a GRH under EtherType 0x8915; RoCE v2 an
 * IPv4 or IPv6 header and UDP to port 4791.  The kind follows the source
 * GID's type, as on the adapter.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>

#include "fabric.h"
#include "../host/opcode.h"
#include "wire.h"

#define ROCE_V2_PORT	4791
#define MAX_FRAME	(14 + 4 + 40 + 8 + 12 + 4 + 28 + 4096 + 4 + 4)

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

static FILE *capture;

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
	uint32_t dqpn, psn;
	uint8_t ext[64];
	size_t ext_len;
	const uint8_t *payload;
	size_t len;
};

int pcap_open(const char *path)
{
	struct {
		uint32_t magic;
		uint16_t major, minor;
		int32_t zone;
		uint32_t sigfigs, snaplen, linktype;
	} head = { 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1 /* Ethernet */ };

	capture = fopen(path, "we");
	if (!capture)
		return -errno;
	fwrite(&head, sizeof(head), 1, capture);
	return 0;
}

void pcap_close(void)
{
	if (capture)
		fclose(capture);
	capture = NULL;
}

/* CRC-32 as Ethernet and the ICRC use it, without the final inversion. */
static uint32_t crc32_update(uint32_t crc, const uint8_t *p, size_t len)
{
	while (len--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = crc >> 1 ^ (0xedb88320 & -(crc & 1));
	}
	return crc;
}

static uint8_t *put16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v;
	return p + 2;
}

static uint8_t *put32(uint8_t *p, uint32_t v)
{
	p = put16(p, v >> 16);
	return put16(p, v);
}

static uint8_t *put64(uint8_t *p, uint64_t v)
{
	p = put32(p, v >> 32);
	return put32(p, v);
}


/*
 * UDP over IPv6 must carry its checksum (over a pseudo-header of the
 * addresses, the length and the next header); over IPv4, RoCE v2 sends 0.
 */
static void udp6_checksum(const uint8_t *ip6, uint8_t *udp, size_t len)
{
	uint8_t pseudo[8] = { 0 };
	uint16_t sum;

	put32(pseudo, len);
	pseudo[7] = 17;
	sum = inet_fold(inet_sum(inet_sum(inet_sum(0, ip6 + 8, 32), pseudo, 8), udp, len));
	put16(udp + 6, sum ? sum : 0xffff);
}

/*
 * The ICRC: a CRC-32 over the packet from the network header on, with the
 * fields a router may change masked to ones, as if after a masked LRH.
 */
static uint32_t icrc(const struct roce_path *a, const uint8_t *net,
		     size_t net_len, const uint8_t *rest, size_t rest_len)
{
	static const uint8_t lrh[8] = { 0xff, 0xff, 0xff, 0xff,
					0xff, 0xff, 0xff, 0xff };
	uint8_t masked[40 + 8 + 12];
	uint32_t crc = crc32_update(0xffffffff, lrh, sizeof(lrh));
	size_t head = net_len + (a->v2 ? 8 : 0) + 12;

	memcpy(masked, net, head);
	if (a->v2 && a->ipv4) {
		masked[1] = 0xff;			/* TOS */
		masked[8] = 0xff;			/* TTL */
		masked[10] = masked[11] = 0xff;		/* checksum */
	} else {
		masked[0] |= 0x0f;			/* traffic class, */
		masked[1] = masked[2] = masked[3] = 0xff;	/* flow label */
		masked[7] = 0xff;			/* hop limit */
	}
	if (a->v2)
		masked[net_len + 6] = masked[net_len + 7] = 0xff; /* UDP sum */
	masked[head - 12 + 4] = 0xff;			/* BTH resv8a */
	crc = crc32_update(crc, masked, head);
	crc = crc32_update(crc, rest, rest_len);
	return ~crc;
}

static void emit(const struct roce_path *a, const struct roce_packet *pkt)
{
	uint8_t frame[MAX_FRAME], *p = frame, *net, *bth;
	size_t pad = -pkt->len & 3;
	size_t ib_len = 12 + pkt->ext_len + pkt->len + pad + 4;
	struct timeval tv;
	uint32_t rec[4], crc;
	size_t net_len;

	if (!capture || pkt->ext_len + pkt->len > MAX_FRAME - 18 - 40 - 8 - 12 - 8)
		return;
	memcpy(p, a->dmac, 6);
	memcpy(p + 6, a->smac, 6);
	p += 12;
	if (a->has_vlan) {
		p = put16(p, 0x8100);
		p = put16(p, a->vlan_tci);
	}
	put16(p, !a->v2 ? 0x8915 : a->ipv4 ? 0x0800 : 0x86dd);
	net = p + 2;
	net_len = roce_net_header(net, a->v2, a->ipv4, a->sgid, a->dgid,
				  a->tclass, a->flow_label, a->hop_limit,
				  ib_len);
	p = net + net_len;
	if (a->v2) {
		put16(p, a->udp_sport);
		put16(p + 2, ROCE_V2_PORT);
		put16(p + 4, 8 + ib_len);
		put16(p + 6, 0);		/* no UDP checksum */
		p += 8;
	}
	bth = p;
	p[0] = pkt->opcode;
	p[1] = (pkt->solicited ? 0x80 : 0) | pad << 4;
	put16(p + 2, 0xffff);			/* the default P_Key */
	put32(p + 4, pkt->dqpn & NUM24_MASK);
	put32(p + 8, pkt->psn & NUM24_MASK);
	p += 12;
	memcpy(p, pkt->ext, pkt->ext_len);
	p += pkt->ext_len;
	if (pkt->len)
		memcpy(p, pkt->payload, pkt->len);
	p += pkt->len;
	memset(p, 0, pad);
	p += pad;
	crc = icrc(a, net, net_len, bth + 12, p - (bth + 12));
	/* The ICRC goes on the wire least significant byte first. */
	p[0] = crc;
	p[1] = crc >> 8;
	p[2] = crc >> 16;
	p[3] = crc >> 24;
	p += 4;
	if (a->v2 && !a->ipv4)
		udp6_checksum(net, net + net_len, p - (net + net_len));

	gettimeofday(&tv, NULL);
	rec[0] = tv.tv_sec;
	rec[1] = tv.tv_usec;
	rec[2] = rec[3] = p - frame;
	fwrite(rec, sizeof(rec), 1, capture);
	fwrite(frame, p - frame, 1, capture);
}

/* A raw packet QP's frame, as it went on the wire. */
void pcap_frame(const uint8_t *frame, size_t len)
{
	struct timeval tv;
	uint32_t rec[4];

	if (!capture)
		return;
	gettimeofday(&tv, NULL);
	rec[0] = tv.tv_sec;
	rec[1] = tv.tv_usec;
	rec[2] = rec[3] = len;
	fwrite(rec, sizeof(rec), 1, capture);
	fwrite(frame, len, 1, capture);
}

/*
 * A connection manager's MAD (cm.c) between two Ethernet ports: a UD
 * SEND to the GSI's QP 1 from QP 1, with the GSI's well-known Q_Key, as
 * the kernel's MAD layer sends it, RoCE v1 or v2 by the GID type.
 */
void pcap_mad(const struct sim_port *from, const struct sim_port *to,
	      const uint8_t sgid[16], const uint8_t dgid[16], bool v2,
	      const uint8_t *mad, size_t len)
{
	static uint32_t psn;
	struct roce_packet pkt = {
		.opcode = TRANSPORT_UD | SEND_ONLY, .dqpn = 1, .psn = psn++,
		.ext_len = 8, .payload = mad, .len = len,
	};
	struct roce_path a = { .v2 = v2, .hop_limit = 64,
			       .udp_sport = 0xc001 };

	if (!capture)
		return;
	memcpy(a.smac, from->mac, 6);
	memcpy(a.dmac, to->mac, 6);
	memcpy(a.sgid, sgid, 16);
	memcpy(a.dgid, dgid, 16);
	a.ipv4 = v2 && gid_is_ipv4(sgid);
	put32(pkt.ext, 0x80010000);		/* IB_QP1_QKEY */
	put32(pkt.ext + 4, 1);
	emit(&a, &pkt);
}

static struct sim_port *qp_port(const struct sim_qp *qp)
{
	return hca_port(qp->hca, qp->port);
}

static bool ethernet(const struct sim_qp *qp)
{
	const struct sim_port *port = qp_port(qp);

	return port && port->link_layer == IBV_LINK_LAYER_ETHERNET;
}

/* A connected QP's packets, from its port along its path. */
static void connected_path(const struct sim_qp *qp, struct roce_path *a)
{
	const struct sim_port *port = qp_port(qp);
	const struct sim_path *path = &qp->path;
	int index = path->sgid_index < port->ngids ? path->sgid_index : 0;

	memset(a, 0, sizeof(*a));
	memcpy(a->smac, port->mac, 6);
	memcpy(a->dmac, path->dmac, 6);
	memcpy(a->sgid, port->gids[index].gid, 16);
	memcpy(a->dgid, path->dgid, 16);
	a->v2 = port->gids[index].type == IBV_GID_TYPE_ROCE_V2;
	a->ipv4 = a->v2 && gid_is_ipv4(a->sgid);
	a->tclass = path->traffic_class;
	a->hop_limit = path->hop_limit ? path->hop_limit : 64;
	a->flow_label = path->flow_label;
	a->udp_sport = 0xc000 | (qp->qpn & 0x3fff);
	a->has_vlan = path->vlan != NO_VLAN;
	a->vlan_tci = path->vlan | (path->sl & 7) << 13;
}

/* A datagram's packet: the addresses are those its GRH was built with. */
static void datagram_path(const struct sim_qp *src, const struct sim_qp *dst,
			  const struct sim_message *msg, struct roce_path *a)
{
	const uint8_t *grh = msg->grh;

	memset(a, 0, sizeof(*a));
	memcpy(a->smac, qp_port(src)->mac, 6);
	memcpy(a->dmac, qp_port(dst)->mac, 6);
	if (grh[20] == 0x45 && grh[0] == 0) {		/* RoCE v2, IPv4 */
		a->v2 = a->ipv4 = true;
		a->sgid[10] = a->sgid[11] = a->dgid[10] = a->dgid[11] = 0xff;
		memcpy(a->sgid + 12, grh + 32, 4);
		memcpy(a->dgid + 12, grh + 36, 4);
		a->tclass = grh[21];
		a->hop_limit = grh[28];
	} else {
		a->v2 = grh[6] == 17;
		memcpy(a->sgid, grh + 8, 16);
		memcpy(a->dgid, grh + 24, 16);
		a->tclass = (grh[0] << 4 | grh[1] >> 4) & 0xff;
		a->flow_label = (grh[1] & 0x0f) << 16 | grh[2] << 8 | grh[3];
		a->hop_limit = grh[7];
	}
	a->udp_sport = 0xc000 | (src->qpn & 0x3fff);
	a->has_vlan = msg->has_vlan;
	a->vlan_tci = msg->vlan_tci;
}

static uint8_t transport(const struct sim_qp *qp)
{
	switch (qp->type) {
	case IBV_QPT_UC:	return TRANSPORT_UC;
	case IBV_QPT_UD:	return TRANSPORT_UD;
	case IBV_QPT_XRC_SEND:	return TRANSPORT_XRC;
	default:		return TRANSPORT_RC;
	}
}

static size_t put_reth(uint8_t *p, const struct sim_message *msg)
{
	put64(p, msg->raddr);
	put32(p + 8, msg->rkey);
	put32(p + 12, msg->length);
	return 16;
}

/*
 * The opcode of packet @i of @n of a message of @kind, and the extended
 * headers it carries after the XRCETH or DETH.
 */
static uint8_t request_opcode(const struct sim_opcode *op,
			      const struct sim_message *msg, uint32_t i,
			      uint32_t n, struct roce_packet *pkt)
{
	bool first = i == 0, last = i == n - 1;
	uint8_t *ext = pkt->ext + pkt->ext_len;
	size_t len = 0;
	uint8_t code;

	if (op->kind == OP_WRITE) {
		if (first)
			len += put_reth(ext, msg);
		code = n == 1 ? WRITE_ONLY : first ? WRITE_FIRST :
		       last ? WRITE_LAST : WRITE_MIDDLE;
		if (last && (op->flags & OPF_IMM)) {
			memcpy(ext + len, &msg->imm, 4);
			len += 4;
			code = n == 1 ? WRITE_ONLY_IMM : WRITE_LAST_IMM;
		}
	} else {
		code = n == 1 ? SEND_ONLY : first ? SEND_FIRST :
		       last ? SEND_LAST : SEND_MIDDLE;
		if (last && (op->flags & (OPF_IMM | OPF_INVAL_KEY))) {
			memcpy(ext + len, &msg->imm, 4);
			len += 4;
			code = op->flags & OPF_IMM ?
			       (n == 1 ? SEND_ONLY_IMM : SEND_LAST_IMM) :
			       (n == 1 ? SEND_ONLY_INV : SEND_LAST_INV);
		}
	}
	pkt->ext_len += len;
	return code;
}

/* The header every request of @src to @dst carries first. */
static void first_ext(const struct sim_qp *src, const struct sim_message *msg,
		      struct roce_packet *pkt)
{
	pkt->ext_len = 0;
	if (src->type == IBV_QPT_XRC_SEND) {
		put32(pkt->ext, msg->xrc_srqn);
		pkt->ext_len = 4;
	} else if (src->type == IBV_QPT_UD) {
		put32(pkt->ext, msg->qkey);
		put32(pkt->ext + 4, src->qpn);
		pkt->ext_len = 8;
	}
}

/* The request packets of @msg from @src to @dst. */
void pcap_request(const struct sim_qp *src, const struct sim_qp *dst,
		  const struct sim_message *msg)
{
	const struct sim_opcode *op = opcode_get(msg->opcode);
	static uint8_t data[1u << 16];
	struct roce_packet pkt = { .dqpn = dst->qpn };
	uint32_t mtu = 256u << (src->mtu - 1), n;
	struct roce_path a;

	if (!capture || !ethernet(src) || src->type == IBV_QPT_RAW_PACKET)
		return;
	if (src->type == IBV_QPT_UD)
		datagram_path(src, dst, msg, &a);
	else
		connected_path(src, &a);
	if (op->kind == OP_READ || op->kind == OP_ATOMIC) {
		first_ext(src, msg, &pkt);
		pkt.psn = msg->psn;
		if (op->kind == OP_READ) {
			pkt.opcode = transport(src) | READ_REQUEST;
			pkt.ext_len += put_reth(pkt.ext + pkt.ext_len, msg);
		} else {
			uint8_t *e = pkt.ext + pkt.ext_len;

			pkt.opcode = transport(src) |
				(msg->opcode == MLX4_OPCODE_ATOMIC_CS ?
				 CMP_SWAP : FETCH_ADD);
			put64(e, msg->raddr);
			put32(e + 8, msg->rkey);
			put64(e + 12, msg->swap_add);
			put64(e + 20, msg->compare);
			pkt.ext_len += 28;
		}
		emit(&a, &pkt);
		return;
	}
	/* The payload, read back from the sender (only while capturing). */
	if (msg->length > sizeof(data))
		return;
	if (msg->inline_data)
		memcpy(data, msg->inline_data, msg->length);
	else if (msg->length &&
		 dma_readv(msg->src_pid, msg->src, msg->nsrc, data))
		return;
	if (src->type == IBV_QPT_UD)
		mtu = msg->length ? msg->length : 1;
	n = msg->length ? (msg->length + mtu - 1) / mtu : 1;
	for (uint32_t i = 0; i < n; i++) {
		first_ext(src, msg, &pkt);
		pkt.opcode = transport(src) |
			     request_opcode(op, msg, i, n, &pkt);
		pkt.solicited = msg->solicited && i == n - 1;
		pkt.psn = msg->psn + i;
		pkt.payload = data + (size_t)i * mtu;
		pkt.len = i == n - 1 ? msg->length - (size_t)i * mtu : mtu;
		emit(&a, &pkt);
	}
}

static uint8_t aeth_syndrome(enum resp_status st, const struct sim_message *msg)
{
	switch (st) {
	case RESP_RNR:		return AETH_RNR_NAK | (msg->min_rnr_timer & 0x1f);
	case RESP_NAK_SEQ:	return AETH_NAK | 0;
	case RESP_NAK_INV_REQ:	return AETH_NAK | 1;
	case RESP_NAK_ACCESS:	return AETH_NAK | 2;
	case RESP_NAK_OP:	return AETH_NAK | 3;
	default:		return AETH_ACK;
	}
}

/* The responder's answer to @msg: an ACK or NAK, read data, an atomic's value. */
void pcap_answer(const struct sim_qp *src, struct sim_qp *dst,
		 const struct sim_message *msg, enum resp_status st)
{
	const struct sim_opcode *op = opcode_get(msg->opcode);
	static uint8_t data[1u << 16];
	struct roce_packet pkt = { .dqpn = src->qpn };
	uint32_t mtu = 256u << (dst->mtu - 1), n, aeth;
	struct roce_path a;

	if (!capture || !ethernet(dst) || st == RESP_DROP ||
	    src->type == IBV_QPT_UD || src->type == IBV_QPT_UC ||
	    src->type == IBV_QPT_RAW_PACKET)
		return;
	connected_path(dst, &a);
	/* The MSN counts the messages the responder has completed. */
	if (st == RESP_ACK)
		dst->wire_msn++;
	aeth = (uint32_t)aeth_syndrome(st, msg) << 24 |
	       (dst->wire_msn & NUM24_MASK);
	pkt.psn = msg->psn + msg->npkts - 1;
	if (st == RESP_ACK && op->kind == OP_READ) {
		if (msg->length > sizeof(data) ||
		    (msg->length &&
		     dma_read(msg->read_pid, msg->read_addr, data, msg->length)))
			return;
		n = msg->length ? (msg->length + mtu - 1) / mtu : 1;
		for (uint32_t i = 0; i < n; i++) {
			bool with_aeth = i == 0 || i == n - 1;

			pkt.opcode = transport(src) |
				(n == 1 ? READ_RESP_ONLY : i == 0 ? READ_RESP_FIRST :
				 i == n - 1 ? READ_RESP_LAST : READ_RESP_MIDDLE);
			pkt.psn = msg->psn + i;
			pkt.ext_len = with_aeth ? 4 : 0;
			put32(pkt.ext, aeth);
			pkt.payload = data + (size_t)i * mtu;
			pkt.len = i == n - 1 ? msg->length - (size_t)i * mtu : mtu;
			emit(&a, &pkt);
		}
		return;
	}
	put32(pkt.ext, aeth);
	pkt.ext_len = 4;
	pkt.opcode = transport(src) | ACKNOWLEDGE;
	if (st == RESP_ACK && op->kind == OP_ATOMIC) {
		pkt.opcode = transport(src) | ATOMIC_ACKNOWLEDGE;
		put64(pkt.ext + 4, msg->atomic_orig);
		pkt.ext_len = 12;
	}
	emit(&a, &pkt);
}
