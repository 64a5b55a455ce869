/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Raw Ethernet frames: what a raw packet QP sends, the switch between the
 * Ethernet ports, and the adapter's receive side, which steers each frame
 * by the flow rules of its port to one QP.
 *
 * On send the adapter may fill in the IPv4 header checksum and the TCP or
 * UDP checksum (the WQE's checksum flags); on receive it checks both and
 * says so in the CQE's status.  The switch floods what is not for
 * a port's own MAC (below, raw_transmit).  At a port, among the rules
 * whose specifications all match, the one of the lowest priority value wins (the oldest on a tie);
 * a frame no rule takes goes to the host's network stack, not to a QP:
 * here, nowhere.  With device-managed flow steering those rules are the
 * port's receive filter: mlx4_en registers the port's own MAC as one
 * (mlx4_en_uc_steer_add: an ETH rule of the MAC under a full mask), and
 * mlx4_ib hands a verbs rule to the firmware as it is
 * (MLX4_QP_FLOW_STEERING_ATTACH), registering no MAC of its own, so a
 * port takes a frame for any MAC one of its rules names, and no other.
 */
#include <string.h>

#include "adapter.h"
#include "../host/opcode.h"
#include "../fabric/wire.h"

#define ETH_HLEN	14
#define VLAN_HLEN	4

/* Where a frame's layers start, and what they are. */
struct frame_layout {
	size_t l3;			/* offset of the IP header, or 0 */
	size_t l4;			/* offset of the TCP/UDP header, or 0 */
	uint16_t ethertype;
	uint16_t vlan;			/* the tag's VID and priority, or 0 */
	bool has_vlan;
	uint8_t proto;			/* IPPROTO_TCP or _UDP, or 0 */
	bool ipv4, ipv6;
};

/* The IP packet of @ethertype at @off, and its TCP or UDP segment. */
static void layout_ip(const uint8_t *f, size_t len, size_t off,
		      struct frame_layout *l)
{
	if (l->ethertype == 0x0800 && len >= off + 20 && (f[off] >> 4) == 4) {
		size_t ihl = (f[off] & 0x0f) * 4;

		l->ipv4 = true;
		l->l3 = off;
		if (ihl >= 20 && len >= off + ihl + 8 &&
		    !(get16(f + off + 6) & 0x3fff)) {	/* not a fragment */
			l->proto = f[off + 9];
			l->l4 = off + ihl;
		}
	} else if (l->ethertype == 0x86dd && len >= off + 48 &&
		   (f[off] >> 4) == 6) {
		l->ipv6 = true;
		l->l3 = off;
		l->proto = f[off + 6];
		l->l4 = off + 40;
	}
	if (l->proto != 6 && l->proto != 17)
		l->l4 = 0;
}

static void layout(const uint8_t *f, size_t len, struct frame_layout *l)
{
	size_t off = 12;

	memset(l, 0, sizeof(*l));
	if (len < ETH_HLEN)
		return;
	l->ethertype = get16(f + off);
	if (l->ethertype == 0x8100 && len >= ETH_HLEN + VLAN_HLEN) {
		l->has_vlan = true;
		l->vlan = get16(f + off + 2);
		off += VLAN_HLEN;
		l->ethertype = get16(f + off);
	}
	layout_ip(f, len, off + 2, l);
}

/*
 * An IPoIB datagram: a 4-byte encapsulation header (the ethertype, two
 * reserved bytes), then the IP packet.
 */
static void layout_ipoib(const uint8_t *p, size_t len, struct frame_layout *l)
{
	memset(l, 0, sizeof(*l));
	if (len < 4)
		return;
	l->ethertype = get16(p);
	layout_ip(p, len, 4, l);
}

/* The length of the IP payload the frame holds (the IP header says). */
static size_t l4_length(const uint8_t *f, size_t len,
			const struct frame_layout *l)
{
	size_t total = l->ipv4 ? get16(f + l->l3 + 2) - (l->l4 - l->l3) :
				 get16(f + l->l3 + 4);

	return l->l4 + total <= len ? total : len - l->l4;
}

/* The TCP or UDP checksum over the pseudo-header and the segment. */
static uint16_t l4_checksum(const uint8_t *f, size_t len,
			    const struct frame_layout *l)
{
	size_t n = l4_length(f, len, l);
	uint8_t pseudo[4] = { 0, 0, 0, l->proto };
	uint32_t sum;

	sum = l->ipv4 ? inet_sum(0, f + l->l3 + 12, 8) :
			inet_sum(0, f + l->l3 + 8, 32);
	sum += n;
	sum = inet_sum(sum, pseudo, 4);
	return inet_fold(inet_sum(sum, f + l->l4, n));
}

static size_t l4_csum_offset(const struct frame_layout *l)
{
	return l->l4 + (l->proto == 6 ? 16 : 6);
}

/* The send side's checksum offload, as the WQE's flags ask. */
static void fill_checksums(uint8_t *f, size_t len,
			   const struct frame_layout *l, bool ip, bool l4)
{
	if (ip && l->ipv4) {
		size_t ihl = (f[l->l3] & 0x0f) * 4;
		uint16_t sum;

		f[l->l3 + 10] = f[l->l3 + 11] = 0;
		sum = inet_fold(inet_sum(0, f + l->l3, ihl));
		f[l->l3 + 10] = sum >> 8;
		f[l->l3 + 11] = sum;
	}
	if (l4 && l->l4) {
		size_t at = l4_csum_offset(l);
		uint16_t sum;

		if (at + 2 > len)
			return;
		f[at] = f[at + 1] = 0;
		sum = l4_checksum(f, len, l);
		if (l->proto == 17 && sum == 0)
			sum = 0xffff;		/* UDP's "no checksum" is 0 */
		f[at] = sum >> 8;
		f[at + 1] = sum;
	}
}

void raw_fill_checksums(uint8_t *f, size_t len, bool ip, bool l4)
{
	struct frame_layout l;

	layout(f, len, &l);
	fill_checksums(f, len, &l, ip, l4);
}

void ipoib_fill_checksums(uint8_t *p, size_t len, bool ip, bool l4)
{
	struct frame_layout l;

	layout_ipoib(p, len, &l);
	fill_checksums(p, len, &l, ip, l4);
}

/*
 * Segment @index of an LSO send, into @frame: the headers, then @n bytes
 * of payload found @offset bytes into it, with the IP length, the IPv4
 * ID and the TCP sequence number moved on, FIN and PSH on the last
 * segment only, and both checksums computed.  Returns the frame's length,
 * or 0 when the headers are not Ethernet, IP and TCP, whole.
 */
size_t raw_lso_segment(const uint8_t *hdr, size_t hdr_len,
		       const uint8_t *chunk, size_t n, uint32_t offset,
		       uint16_t index, bool last, uint8_t *frame)
{
	struct frame_layout l;
	uint8_t *ip, *tcp;
	uint32_t seq;

	layout(hdr, hdr_len, &l);
	if (!l.l4 || l.proto != 6 || hdr_len < l.l4 + 20 ||
	    hdr_len != l.l4 + (hdr[l.l4 + 12] >> 4) * 4)
		return 0;
	memcpy(frame, hdr, hdr_len);
	memcpy(frame + hdr_len, chunk, n);
	ip = frame + l.l3;
	tcp = frame + l.l4;
	if (l.ipv4) {
		uint16_t total = hdr_len - l.l3 + n;
		uint16_t id = get16(ip + 4) + index;

		ip[2] = total >> 8, ip[3] = total;
		ip[4] = id >> 8, ip[5] = id;
	} else {
		uint16_t payload = hdr_len - l.l3 - 40 + n;

		ip[4] = payload >> 8, ip[5] = payload;
	}
	seq = (uint32_t)get16(tcp + 4) << 16 | get16(tcp + 6);
	seq += offset;
	tcp[4] = seq >> 24, tcp[5] = seq >> 16, tcp[6] = seq >> 8, tcp[7] = seq;
	if (!last)
		tcp[13] &= ~0x09;		/* FIN and PSH */
	raw_fill_checksums(frame, hdr_len + n, true, true);
	return hdr_len + n;
}

/* What the receive side's checks say, as the CQE's status bits. */
static uint32_t status_of(const uint8_t *f, size_t len,
			  const struct frame_layout *l)
{
	uint32_t status = 0;

	if (l->ipv4) {
		status |= MLX4_CQE_STATUS_IPV4_PKT;
		if (inet_fold(inet_sum(0, f + l->l3, (f[l->l3] & 0x0f) * 4)) == 0)
			status |= MLX4_CQE_STATUS_IP_HDR_CSUM_OK;
	}
	if (l->l4 && l4_checksum(f, len, l) == 0)
		status |= MLX4_CQE_STATUS_TCP_UDP_CSUM_OK;
	return status;
}

static uint32_t checksum_status(const uint8_t *f, size_t len)
{
	struct frame_layout l;

	layout(f, len, &l);
	return status_of(f, len, &l);
}

uint32_t ipoib_checksum_status(const uint8_t *p, size_t len)
{
	struct frame_layout l;

	layout_ipoib(p, len, &l);
	return status_of(p, len, &l);
}

/* Whether @len bytes at @val equal @want where @mask has bits. */
static bool masked_equal(const uint8_t *val, const uint8_t *want,
			 const uint8_t *mask, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if ((val[i] ^ want[i]) & mask[i])
			return false;
	return true;
}

static bool spec_matches(const struct sim_flow_spec *s, const uint8_t *f,
			 size_t len, const struct frame_layout *l)
{
	uint8_t field[4];

	switch (s->type) {
	case IBV_FLOW_SPEC_ETH:
		/*
		 * mlx4_ib's parse_flow_attr() copies only these two into
		 * the hardware rule: the source MAC and ethertype, even
		 * under a full mask, match any frame.
		 */
		field[0] = l->vlan >> 8;
		field[1] = l->vlan;
		return masked_equal(f, s->val.eth.dst_mac, s->mask.eth.dst_mac, 6) &&
		       masked_equal(field, (const uint8_t *)&s->val.eth.vlan_tag,
				    (const uint8_t *)&s->mask.eth.vlan_tag, 2);
	case IBV_FLOW_SPEC_IPV4:
		return l->ipv4 &&
		       masked_equal(f + l->l3 + 12,
				    (const uint8_t *)&s->val.ipv4.src_ip,
				    (const uint8_t *)&s->mask.ipv4.src_ip, 4) &&
		       masked_equal(f + l->l3 + 16,
				    (const uint8_t *)&s->val.ipv4.dst_ip,
				    (const uint8_t *)&s->mask.ipv4.dst_ip, 4);
	case IBV_FLOW_SPEC_TCP:
	case IBV_FLOW_SPEC_UDP:
		return l->l4 && l->proto == (s->type == IBV_FLOW_SPEC_TCP ? 6 : 17) &&
		       l->l4 + 4 <= len &&
		       masked_equal(f + l->l4,
				    (const uint8_t *)&s->val.tcp_udp.src_port,
				    (const uint8_t *)&s->mask.tcp_udp.src_port, 2) &&
		       masked_equal(f + l->l4 + 2,
				    (const uint8_t *)&s->val.tcp_udp.dst_port,
				    (const uint8_t *)&s->mask.tcp_udp.dst_port, 2);
	default:
		return false;
	}
}

static bool flow_matches(const struct sim_flow *flow, const uint8_t *f,
			 size_t len, const struct frame_layout *l)
{
	for (int i = 0; i < flow->nspecs; i++)
		if (!spec_matches(&flow->specs[i], f, len, l))
			return false;
	return true;
}

/* Whether @flow is a rule of @port that may give the frame to its QP. */
static bool flow_on(const struct sim_flow *flow, const struct sim_port *port,
		    const uint8_t *f, size_t len, const struct frame_layout *l)
{
	return flow->hca == port->hca && flow->port == port->num &&
	       flow->qp->type == IBV_QPT_RAW_PACKET &&
	       flow_matches(flow, f, len, l);
}

/* Of @port's rules of @type that match, the one of lowest priority value. */
static struct sim_flow *best_rule(const struct sim_port *port, uint8_t type,
				  const uint8_t *f, size_t len,
				  const struct frame_layout *l)
{
	struct sim_flow *flow, *best = NULL;

	list_for_each(&sim.flows, flow, struct sim_flow, link) {
		if (flow->type != type || flow->dont_trap ||
		    !flow_on(flow, port, f, len, l))
			continue;
		if (!best || flow->priority < best->priority)
			best = flow;
	}
	return best;
}

/*
 * The QP the port's rules give the frame to, or NULL.  A normal rule
 * takes it first.  Failing one, mlx4_en's own rules (its MAC and the
 * broadcast address) keep it for the network interface; the default rules
 * take what is left: a multicast frame an MC_DEFAULT rule, any frame an
 * ALL_DEFAULT rule (mlx4_en's promiscuous and all-multicast modes are
 * such rules; mlx4_ib_create_flow makes them for the verbs).
 */
static struct sim_qp *steer(const struct sim_port *port, const uint8_t *f,
			    size_t len, const struct frame_layout *l)
{
	static const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	struct sim_flow *rule = best_rule(port, IBV_FLOW_ATTR_NORMAL, f, len, l);

	if (rule)
		return rule->qp;
	if (!memcmp(f, port->mac, 6) || !memcmp(f, bcast, 6))
		return NULL;
	if (f[0] & 1)
		rule = best_rule(port, IBV_FLOW_ATTR_MC_DEFAULT, f, len, l);
	if (!rule)
		rule = best_rule(port, IBV_FLOW_ATTR_ALL_DEFAULT, f, len, l);
	return rule ? rule->qp : NULL;
}

/* The Ethernet FCS: IEEE 802.3's CRC-32 of the frame. */
static uint32_t ether_crc32(const uint8_t *f, size_t len)
{
	uint32_t crc = 0xffffffff;

	for (size_t i = 0; i < len; i++) {
		crc ^= f[i];
		for (int bit = 0; bit < 8; bit++)
			crc = crc >> 1 ^ (0xedb88320 & -(crc & 1));
	}
	return ~crc;
}

/*
 * A WQ made with IBV_WQ_FLAGS_SCATTER_FCS receives the frame with its
 * 4-byte FCS after it, as it came off the wire (least significant byte
 * first), and counts it in the length.  The simulated wire pads no short
 * frame: the FCS covers the bytes sent.
 */
static void deliver_with_fcs(struct sim_qp *src, struct sim_qp *dst,
			     const struct sim_message *msg, const uint8_t *f,
			     size_t len)
{
	static uint8_t frame[RAW_MAX_FRAME + 4];
	struct sim_message copy = *msg;
	uint32_t fcs = ether_crc32(f, len);

	memcpy(frame, f, len);
	for (int i = 0; i < 4; i++)
		frame[len + i] = fcs >> (8 * i);
	copy.inline_data = frame;
	copy.length = len + 4;
	resp_deliver(src, dst, &copy);
}

/* The frame to @dst, through its RSS table if it has one. */
static void hand_to(struct sim_qp *src, struct sim_qp *dst,
		    struct sim_message *msg, const uint8_t *f, size_t len)
{
	msg->rss_hash = 0;		/* one copy's hash is not another's */
	if (dst->rss_tbl)
		dst = rss_pick(dst, f, len, &msg->rss_hash);
	if (!dst)
		return;
	msg->csum_status = checksum_status(f, len);
	if (dst->scatter_fcs)
		deliver_with_fcs(src, dst, msg, f, len);
	else
		resp_deliver(src, dst, msg);
	resp_finish(dst);
}

/*
 * Copies of the frame for the rules that take none: a SNIFFER rule's QP
 * sees what the port receives and sends (mlx4_ib: the device's port
 * mirror rules, RX and SX), a DONT_TRAP rule's QP what the port receives
 * of its kind (unicast, multicast or both), whoever takes it.  Which of
 * the two kinds of rule to serve: @sniffers, @dont_trap.
 */
static void copy_to_sniffers(struct sim_qp *src, const struct sim_port *port,
			     struct sim_message *msg, const uint8_t *f,
			     size_t len, bool sniffers, bool dont_trap)
{
	struct sim_flow *flow;
	struct frame_layout l;

	layout(f, len, &l);
	list_for_each(&sim.flows, flow, struct sim_flow, link) {
		bool copy = flow->dont_trap ? dont_trap :
			    flow->type == IBV_FLOW_ATTR_SNIFFER && sniffers;

		if (copy && flow_on(flow, port, f, len, &l))
			hand_to(src, flow->qp, msg, f, len);
	}
}

/*
 * The frame reaches @port.  A port's sniffers saw the frames it sends as
 * they left: one looped back to the sender's own port is not seen twice.
 */
static void deliver_at(struct sim_qp *src, struct sim_port *port,
		       struct sim_message *msg, const uint8_t *f, size_t len)
{
	struct frame_layout l;
	struct sim_qp *dst;

	if (port->down)
		return;
	layout(f, len, &l);
	dst = steer(port, f, len, &l);
	if (dst)
		hand_to(src, dst, msg, f, len);
	copy_to_sniffers(src, port, msg, f, len,
			 port != hca_port(src->hca, src->port), true);
}

/*
 * The switch.  A unicast frame to a port's own MAC goes to that port only;
 * one to any other MAC, a broadcast and a multicast one go to every
 * Ethernet port.  It learns no source MAC, as an 802.1D bridge would: any
 * client may send from any MAC, and a frame from a MAC that a rule on
 * another port names would pull that MAC's frames to the sender's port,
 * away from the other client's rule, for the ageing time (300 s).
 * Flooding loses nothing: each port keeps only what its rules take
 * (steer), so a frame reaches every rule that names its MAC, on any port.
 * The adapter loops a frame back to its own port's rules (the driver names
 * the destination MAC in the WQE so that it can: "This allows loopback in
 * eSwitch", mlx4_en's xmit), so the sender's port is among the flooded;
 * a WQE without the MAC asks for no loopback, and the switch, as any
 * bridge, sends nothing back where it came from.
 */
void raw_transmit(struct sim_qp *src, struct sim_message *msg,
		  const uint8_t *f, size_t len)
{
	struct sim_port *from = hca_port(src->hca, src->port);
	struct sim_port *to = f[0] & 1 ? NULL : port_by_mac(f);

	/* A port that is down carries nothing (req.c's link_up). */
	if (from->down) {
		fault_count_drop();
		return;
	}
	if (sim.opt.pcap)
		pcap_frame(f, len);
	copy_to_sniffers(src, from, msg, f, len, true, false);
	if (to) {
		if (to != from || !msg->no_loopback)
			deliver_at(src, to, msg, f, len);
		return;
	}
	/* Beyond the switch (--uplink): the frame leaves there too. */
	if (uplink_active())
		uplink_send(src, src->port, f, len);
	for (int h = 0; h < sim.opt.nhcas; h++)
		for (int p = 0; p < sim.hca[h].nports; p++) {
			struct sim_port *port = &sim.hca[h].port[p];

			if (port->link_layer == IBV_LINK_LAYER_ETHERNET &&
			    (port != from || !msg->no_loopback))
				deliver_at(src, port, msg, f, len);
		}
}

/*
 * A frame from the uplink (fabric/uplink.c) for @to, or, NULL, for a MAC
 * no port owns, a broadcast or a multicast: each port keeps what its
 * rules take, as from the switch.  The sender is another host: a raw QP
 * of no port stands for it.
 */
void raw_from_wire(struct sim_port *to, const uint8_t *f, size_t len)
{
	struct sim_qp host = { .type = IBV_QPT_RAW_PACKET, .hca = sim.hca };
	struct sim_message msg = { .length = len, .inline_data = f,
				   .ethernet = true, .npkts = 1 };

	if (list_empty(&sim.flows) || len < 14)
		return;
	if (to) {
		deliver_at(&host, to, &msg, f, len);
		return;
	}
	for (int h = 0; h < sim.opt.nhcas; h++)
		for (int p = 0; p < sim.hca[h].nports; p++)
			if (sim.hca[h].port[p].link_layer == IBV_LINK_LAYER_ETHERNET)
				deliver_at(&host, &sim.hca[h].port[p], &msg, f, len);
}
