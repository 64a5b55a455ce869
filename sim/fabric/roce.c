/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * RoCE packets as bytes: built for the capture and the uplink, and read
 * back from the uplink.  The kind follows the source GID's type, as on the
 * adapter; the IP and UDP fields are those a ConnectX-3 Pro sets (IPv4
 * with don't-fragment and ID 0, no UDP checksum over IPv4, the UDP source
 * port from the QP number).
 */
#include <string.h>

#include "roce.h"

uint8_t *roce_put16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v;
	return p + 2;
}

uint8_t *roce_put32(uint8_t *p, uint32_t v)
{
	p = roce_put16(p, v >> 16);
	return roce_put16(p, v);
}

uint8_t *roce_put64(uint8_t *p, uint64_t v)
{
	p = roce_put32(p, v >> 32);
	return roce_put32(p, v);
}

uint32_t roce_get32(const uint8_t *p)
{
	return (uint32_t)get16(p) << 16 | get16(p + 2);
}

uint64_t roce_get64(const uint8_t *p)
{
	return (uint64_t)roce_get32(p) << 32 | roce_get32(p + 4);
}

/*
 * CRC-32 as Ethernet and the ICRC use it, without the final inversion:
 * eight table look-ups for 8 bytes (slicing by 8), as every packet on the
 * uplink is summed at both ends (perf had the bit-at-a-time loop at a
 * fifth of the receiving daemon's time, slicing by 4 still at a fifth
 * at twice the rate).
 */
static uint32_t crc_table[8][256];

static void crc_tables(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = c >> 1 ^ (0xedb88320 & -(c & 1));
		crc_table[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int t = 1; t < 8; t++)
			crc_table[t][i] = crc_table[t - 1][i] >> 8 ^
				crc_table[0][crc_table[t - 1][i] & 0xff];
}

static uint32_t crc32_update(uint32_t crc, const uint8_t *p, size_t len)
{
	if (!crc_table[0][1])
		crc_tables();
	for (; len >= 8; len -= 8, p += 8) {
		uint32_t lo = crc ^ ((uint32_t)p[0] | p[1] << 8 | p[2] << 16 |
				     (uint32_t)p[3] << 24);
		uint32_t hi = (uint32_t)p[4] | p[5] << 8 | p[6] << 16 |
			      (uint32_t)p[7] << 24;

		crc = crc_table[7][lo & 0xff] ^ crc_table[6][lo >> 8 & 0xff] ^
		      crc_table[5][lo >> 16 & 0xff] ^ crc_table[4][lo >> 24] ^
		      crc_table[3][hi & 0xff] ^ crc_table[2][hi >> 8 & 0xff] ^
		      crc_table[1][hi >> 16 & 0xff] ^ crc_table[0][hi >> 24];
	}
	while (len--)
		crc = crc >> 8 ^ crc_table[0][(crc ^ *p++) & 0xff];
	return crc;
}

/*
 * UDP over IPv6 must carry its checksum (over a pseudo-header of the
 * addresses, the length and the next header); over IPv4, RoCE v2 sends 0.
 */
static void udp6_checksum(const uint8_t *ip6, uint8_t *udp, size_t len)
{
	uint8_t pseudo[8] = { 0 };
	uint16_t sum;

	roce_put32(pseudo, len);
	pseudo[7] = 17;
	sum = inet_fold(inet_sum(inet_sum(inet_sum(0, ip6 + 8, 32), pseudo, 8), udp, len));
	roce_put16(udp + 6, sum ? sum : 0xffff);
}

/*
 * The ICRC: a CRC-32 over the packet from the network header on, with the
 * fields a router may change masked to ones, as if after a masked LRH.
 */
static uint32_t icrc(bool v2, bool ipv4, const uint8_t *net, size_t net_len,
		     const uint8_t *rest, size_t rest_len)
{
	static const uint8_t lrh[8] = { 0xff, 0xff, 0xff, 0xff,
					0xff, 0xff, 0xff, 0xff };
	uint8_t masked[40 + 8 + 12];
	uint32_t crc = crc32_update(0xffffffff, lrh, sizeof(lrh));
	size_t head = net_len + (v2 ? 8 : 0) + 12;

	memcpy(masked, net, head);
	if (v2 && ipv4) {
		masked[1] = 0xff;			/* TOS */
		masked[8] = 0xff;			/* TTL */
		masked[10] = masked[11] = 0xff;		/* checksum */
	} else {
		masked[0] |= 0x0f;			/* traffic class, */
		masked[1] = masked[2] = masked[3] = 0xff;	/* flow label */
		masked[7] = 0xff;			/* hop limit */
	}
	if (v2)
		masked[net_len + 6] = masked[net_len + 7] = 0xff; /* UDP sum */
	masked[head - 12 + 4] = 0xff;			/* BTH resv8a */
	crc = crc32_update(crc, masked, head);
	crc = crc32_update(crc, rest, rest_len);
	return ~crc;
}

static uint8_t *put_bth(uint8_t *p, const struct roce_packet *pkt, size_t pad)
{
	p[0] = pkt->opcode;
	p[1] = (pkt->solicited ? 0x80 : 0) | pad << 4;
	roce_put16(p + 2, 0xffff);		/* the default P_Key */
	roce_put32(p + 4, pkt->dqpn & NUM24_MASK);
	roce_put32(p + 8, (pkt->ack_req ? 0x80000000u : 0) |
			  (pkt->psn & NUM24_MASK));
	return p + 12;
}

size_t roce_build(const struct roce_path *a, const struct roce_packet *pkt,
		  uint8_t *frame)
{
	uint8_t *p = frame, *net, *bth;
	size_t pad = -pkt->len & 3;
	size_t ib_len = 12 + pkt->ext_len + pkt->len + pad + 4;
	uint32_t crc;
	size_t net_len;

	if (pkt->ext_len + pkt->len > ROCE_MAX_FRAME - 18 - 40 - 8 - 12 - 8)
		return 0;
	memcpy(p, a->dmac, 6);
	memcpy(p + 6, a->smac, 6);
	p += 12;
	if (a->has_vlan) {
		p = roce_put16(p, 0x8100);
		p = roce_put16(p, a->vlan_tci);
	}
	roce_put16(p, !a->v2 ? 0x8915 : a->ipv4 ? 0x0800 : 0x86dd);
	net = p + 2;
	net_len = roce_net_header(net, a->v2, a->ipv4, a->sgid, a->dgid,
				  a->tclass, a->flow_label, a->hop_limit,
				  ib_len);
	p = net + net_len;
	if (a->v2) {
		roce_put16(p, a->udp_sport);
		roce_put16(p + 2, ROCE_V2_PORT);
		roce_put16(p + 4, 8 + ib_len);
		roce_put16(p + 6, 0);		/* no UDP checksum */
		p += 8;
	}
	bth = p;
	p = put_bth(p, pkt, pad);
	memcpy(p, pkt->ext, pkt->ext_len);
	p += pkt->ext_len;
	if (pkt->len)
		memcpy(p, pkt->payload, pkt->len);
	p += pkt->len;
	memset(p, 0, pad);
	p += pad;
	crc = icrc(a->v2, a->ipv4, net, net_len, bth + 12, p - (bth + 12));
	/* The ICRC goes on the wire least significant byte first. */
	p[0] = crc;
	p[1] = crc >> 8;
	p[2] = crc >> 16;
	p[3] = crc >> 24;
	p += 4;
	if (a->v2 && !a->ipv4)
		udp6_checksum(net, net + net_len, p - (net + net_len));
	return p - frame;
}

/*
 * The network header at @net: a RoCE v2 frame's IP header or a RoCE v1
 * frame's GRH (next header: IBA transport); its length, or 0.
 */
static size_t parse_ip(const uint8_t *net, size_t left, uint16_t type,
		       struct roce_path *a, size_t *ip_total)
{
	memset(a->sgid, 0, 16);
	memset(a->dgid, 0, 16);
	if (type == 0x0800) {
		if (left < 20 || net[0] != 0x45 || net[9] != 17 ||
		    inet_fold(inet_sum(0, net, 20)))
			return 0;
		a->ipv4 = true;
		a->sgid[10] = a->sgid[11] = a->dgid[10] = a->dgid[11] = 0xff;
		memcpy(a->sgid + 12, net + 12, 4);
		memcpy(a->dgid + 12, net + 16, 4);
		a->tclass = net[1];
		a->hop_limit = net[8];
		*ip_total = get16(net + 2);
		return 20;
	}
	if ((type != 0x86dd && type != 0x8915) || left < 40 ||
	    net[0] >> 4 != 6 || net[6] != (type == 0x8915 ? 0x1b : 17))
		return 0;
	a->ipv4 = false;
	memcpy(a->sgid, net + 8, 16);
	memcpy(a->dgid, net + 24, 16);
	a->tclass = (net[0] << 4 | net[1] >> 4) & 0xff;
	a->flow_label = (net[1] & 0x0f) << 16 | net[2] << 8 | net[3];
	a->hop_limit = net[7];
	*ip_total = 40 + get16(net + 4);
	return 40;
}

bool roce_parse(const uint8_t *frame, size_t len, struct roce_path *a,
		struct roce_packet *pkt)
{
	const uint8_t *p = frame + 12, *net, *bth, *end;
	size_t net_len, ip_total, pad;
	uint16_t type;
	uint32_t crc;

	memset(a, 0, sizeof(*a));
	if (len < 14 + 20 + 8 + 12 + 4)
		return false;
	memcpy(a->dmac, frame, 6);
	memcpy(a->smac, frame + 6, 6);
	type = get16(p);
	if (type == 0x8100) {
		a->has_vlan = true;
		a->vlan_tci = get16(p + 2);
		p += 4;
		type = get16(p);
	}
	net = p + 2;
	net_len = parse_ip(net, frame + len - net, type, a, &ip_total);
	a->v2 = type != 0x8915;
	bth = net + net_len + (a->v2 ? 8 : 0);
	if (!net_len || ip_total > (size_t)(frame + len - net) ||
	    ip_total < (size_t)(bth - net) + 12 + 4)
		return false;
	p = net + net_len;
	if (a->v2 && (get16(p + 2) != ROCE_V2_PORT ||
		      get16(p + 4) != ip_total - net_len))
		return false;
	a->udp_sport = a->v2 ? get16(p) : 0;
	end = net + ip_total - 4;		/* where the ICRC is */
	crc = icrc(a->v2, a->ipv4, net, net_len, bth + 12, end - (bth + 12));
	if (crc != ((uint32_t)end[0] | end[1] << 8 | end[2] << 16 |
		    (uint32_t)end[3] << 24))
		return false;
	memset(pkt, 0, sizeof(*pkt));
	pkt->opcode = bth[0];
	pkt->solicited = bth[1] & 0x80;
	pad = bth[1] >> 4 & 3;
	pkt->dqpn = roce_get32(bth + 4) & NUM24_MASK;
	pkt->ack_req = bth[8] & 0x80;
	pkt->psn = roce_get32(bth + 8) & NUM24_MASK;
	/* The caller splits the rest into its headers and the payload. */
	pkt->payload = bth + 12;
	pkt->len = end - (bth + 12);
	if (pkt->len < pad)
		return false;
	pkt->len -= pad;
	return true;
}

static struct sim_port *qp_port(const struct sim_qp *qp)
{
	return hca_port(qp->hca, qp->port);
}

/* A connected QP's packets, from its port along its path. */
void roce_connected_path(const struct sim_qp *qp, struct roce_path *a)
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
void roce_datagram_path(const struct sim_qp *src, const uint8_t dmac[6],
			const struct sim_message *msg, struct roce_path *a)
{
	const uint8_t *grh = msg->grh;

	memset(a, 0, sizeof(*a));
	memcpy(a->smac, qp_port(src)->mac, 6);
	memcpy(a->dmac, dmac, 6);
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

uint8_t roce_transport(enum ibv_qp_type type)
{
	switch (type) {
	case IBV_QPT_UC:	return TRANSPORT_UC;
	case IBV_QPT_UD:	return TRANSPORT_UD;
	case IBV_QPT_XRC_SEND:	return TRANSPORT_XRC;
	default:		return TRANSPORT_RC;
	}
}

size_t roce_put_reth(uint8_t *p, const struct sim_message *msg)
{
	roce_put64(p, msg->raddr);
	roce_put32(p + 8, msg->rkey);
	roce_put32(p + 12, msg->length);
	return 16;
}

/*
 * The opcode of packet @i of @n of a message of @kind, and the extended
 * headers it carries after the XRCETH or DETH.
 */
uint8_t roce_request_opcode(const struct sim_opcode *op,
			    const struct sim_message *msg, uint32_t i,
			    uint32_t n, struct roce_packet *pkt)
{
	bool first = i == 0, last = i == n - 1;
	uint8_t *ext = pkt->ext + pkt->ext_len;
	size_t len = 0;
	uint8_t code;

	if (op->kind == OP_WRITE) {
		if (first)
			len += roce_put_reth(ext, msg);
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

/* The header every request of @src carries first: XRCETH or DETH. */
void roce_first_ext(const struct sim_qp *src, const struct sim_message *msg,
		    struct roce_packet *pkt)
{
	pkt->ext_len = 0;
	if (src->type == IBV_QPT_XRC_SEND) {
		roce_put32(pkt->ext, msg->xrc_srqn);
		pkt->ext_len = 4;
	} else if (src->type == IBV_QPT_UD) {
		roce_put32(pkt->ext, msg->qkey);
		roce_put32(pkt->ext + 4, src->qpn);
		pkt->ext_len = 8;
	}
}

/* An atomic request's AtomicETH, after what @pkt carries already. */
void roce_atomic_eth(const struct sim_message *msg, struct roce_packet *pkt)
{
	uint8_t *e = pkt->ext + pkt->ext_len;

	roce_put64(e, msg->raddr);
	roce_put32(e + 8, msg->rkey);
	roce_put64(e + 12, msg->swap_add);
	roce_put64(e + 20, msg->compare);
	pkt->ext_len += 28;
}

uint8_t roce_aeth_syndrome(enum resp_status st, uint8_t min_rnr_timer)
{
	switch (st) {
	case RESP_RNR:		return AETH_RNR_NAK | (min_rnr_timer & 0x1f);
	case RESP_NAK_SEQ:	return AETH_NAK | 0;
	case RESP_NAK_INV_REQ:	return AETH_NAK | 1;
	case RESP_NAK_ACCESS:	return AETH_NAK | 2;
	case RESP_NAK_OP:	return AETH_NAK | 3;
	default:		return AETH_ACK;
	}
}
