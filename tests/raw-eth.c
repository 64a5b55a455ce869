/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Raw packet QPs on the simulator's Ethernet ports: frames sent by one QP
 * reach the QP whose flow rule matches them, byte for byte, and only it;
 * rule priorities decide between rules that both match; the adapter fills
 * in the IPv4 and UDP/TCP checksums of IBV_SEND_IP_CSUM sends and reports
 * IBV_WC_IP_CSUM_OK for a frame whose checksums hold, and not for one
 * whose do not.  Needs CAP_NET_RAW (root), as the kernel does.
 *
 * Usage: raw-eth (on `mlx4sim run --link-layer=eth`)
 */
#include <arpa/inet.h>
#include <stdbool.h>
#include <stdint.h>
#include <unistd.h>

#include "tap.h"
#include "device.h"

#define FRAME_MAX	1514
#define RECV_SLOTS	64

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static uint8_t port_mac[3][6];		/* by port number */

/* A raw QP on @port with its own CQ and buffer of receive slots. */
struct raw_qp {
	struct ibv_qp *qp;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t *buf;			/* RECV_SLOTS frames, then one to send */
	int port;
};

static bool read_mac(int port, uint8_t mac[6])
{
	char path[512];
	unsigned int m[6];
	const char *sysfs = getenv("SYSFS_PATH");
	FILE *f;
	int n;

	snprintf(path, sizeof(path),
		 "%s/class/infiniband/%s/device/net/eth%d/address",
		 sysfs ? sysfs : "/sys", ibv_get_device_name(ctx->device),
		 port - 1);
	f = fopen(path, "r");
	if (!f)
		return false;
	n = fscanf(f, "%x:%x:%x:%x:%x:%x", &m[0], &m[1], &m[2], &m[3], &m[4],
		   &m[5]);
	fclose(f);
	for (int i = 0; i < 6; i++)
		mac[i] = m[i];
	return n == 6;
}

static void post_recv_slot(struct raw_qp *r, int slot)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(r->buf + slot * FRAME_MAX),
		.length = FRAME_MAX, .lkey = r->mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = slot, .sg_list = &sge,
				  .num_sge = 1 }, *bad;

	if (ibv_post_recv(r->qp, &wr, &bad))
		bail("ibv_post_recv");
}

static void make_raw_qp(struct raw_qp *r, int port)
{
	struct ibv_qp_init_attr init = {
		.cap = { .max_send_wr = 64, .max_recv_wr = RECV_SLOTS,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RAW_PACKET,
	};
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_INIT,
				    .port_num = port };

	r->port = port;
	r->cq = ibv_create_cq(ctx, 2 * RECV_SLOTS, NULL, NULL, 0);
	init.send_cq = init.recv_cq = r->cq;
	r->qp = r->cq ? ibv_create_qp(pd, &init) : NULL;
	if (!r->qp)
		bail("a raw packet QP");
	r->buf = calloc(RECV_SLOTS + 1, FRAME_MAX);
	r->mr = ibv_reg_mr(pd, r->buf, (RECV_SLOTS + 1) * FRAME_MAX,
			   IBV_ACCESS_LOCAL_WRITE);
	if (!r->buf || !r->mr)
		bail("a raw QP's buffer");
	if (ibv_modify_qp(r->qp, &attr, IBV_QP_STATE | IBV_QP_PORT))
		bail("raw QP to INIT");
	for (int i = 0; i < RECV_SLOTS; i++)
		post_recv_slot(r, i);
	attr.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(r->qp, &attr, IBV_QP_STATE))
		bail("raw QP to RTR");
	attr.qp_state = IBV_QPS_RTS;
	if (ibv_modify_qp(r->qp, &attr, IBV_QP_STATE))
		bail("raw QP to RTS");
}

/* A rule: frames to @mac, IPv4, UDP to @udp_port (0: any), at @priority. */
static struct ibv_flow *steer(struct raw_qp *r, const uint8_t mac[6],
			      uint16_t udp_port, uint16_t priority)
{
	struct {
		struct ibv_flow_attr attr;
		struct ibv_flow_spec_eth eth;
		struct ibv_flow_spec_ipv4 ipv4;
		struct ibv_flow_spec_tcp_udp udp;
	} __attribute__((packed)) rule = {
		.attr = { .type = IBV_FLOW_ATTR_NORMAL, .size = sizeof(rule),
			  .priority = priority, .num_of_specs = udp_port ? 3 : 1,
			  .port = r->port },
		.eth = { .type = IBV_FLOW_SPEC_ETH,
			 .size = sizeof(struct ibv_flow_spec_eth) },
		.ipv4 = { .type = IBV_FLOW_SPEC_IPV4,
			  .size = sizeof(struct ibv_flow_spec_ipv4) },
		.udp = { .type = IBV_FLOW_SPEC_UDP,
			 .size = sizeof(struct ibv_flow_spec_tcp_udp),
			 .val.dst_port = htons(udp_port),
			 .mask.dst_port = 0xffff },
	};

	memcpy(rule.eth.val.dst_mac, mac, 6);
	memset(rule.eth.mask.dst_mac, 0xff, 6);
	if (!udp_port)
		rule.attr.size = sizeof(rule.attr) + sizeof(rule.eth);
	return ibv_create_flow(r->qp, &rule.attr);
}

static uint16_t csum16(const uint8_t *p, size_t len, uint32_t sum)
{
	for (size_t i = 0; i + 1 < len; i += 2)
		sum += p[i] << 8 | p[i + 1];
	if (len & 1)
		sum += p[len - 1] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return ~sum;
}

/*
 * An Ethernet + IPv4 + UDP frame of @payload bytes to @dst from @src, UDP
 * port @dport; the payload's bytes say which frame it is (@tag).  With
 * @good_sums the checksums are computed here, else left zero (for the
 * adapter to fill) or, with @bad_sums, wrong.
 */
static size_t build_frame(uint8_t *f, const uint8_t dst[6],
			  const uint8_t src[6], uint16_t dport,
			  size_t payload, uint32_t tag, bool good_sums,
			  bool bad_sums)
{
	uint8_t *ip = f + 14, *udp = ip + 20, *data = udp + 8;
	uint32_t pseudo;
	uint16_t sum;

	memcpy(f, dst, 6);
	memcpy(f + 6, src, 6);
	f[12] = 0x08;
	f[13] = 0x00;
	memset(ip, 0, 20);
	ip[0] = 0x45;
	ip[2] = (20 + 8 + payload) >> 8;
	ip[3] = 20 + 8 + payload;
	ip[8] = 64;
	ip[9] = 17;
	ip[12] = 10, ip[15] = 1;		/* 10.0.0.1 */
	ip[16] = 10, ip[19] = 2;		/* 10.0.0.2 */
	udp[0] = 0x30, udp[1] = 0x39;		/* from port 12345 */
	udp[2] = dport >> 8, udp[3] = dport;
	udp[4] = (8 + payload) >> 8, udp[5] = 8 + payload;
	udp[6] = udp[7] = 0;
	for (size_t i = 0; i < payload; i++)
		data[i] = (uint8_t)(tag * 7 + i * 13 + (i >> 8));
	if (good_sums || bad_sums) {
		sum = csum16(ip, 20, 0);
		ip[10] = sum >> 8, ip[11] = sum;
		pseudo = (ip[12] << 8 | ip[13]) + (ip[14] << 8 | ip[15]) +
			 (ip[16] << 8 | ip[17]) + (ip[18] << 8 | ip[19]) +
			 17 + 8 + payload;
		sum = csum16(udp, 8 + payload, pseudo);
		udp[6] = sum >> 8, udp[7] = sum;
		if (bad_sums)
			udp[7] ^= 0x5a;
	}
	return 14 + 20 + 8 + payload;
}

static int send_frame(struct raw_qp *r, size_t len, bool offload)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(r->buf + RECV_SLOTS * FRAME_MAX),
		.length = len, .lkey = r->mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = 0x5e4d, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED |
			      (offload ? IBV_SEND_IP_CSUM : 0),
	}, *bad;
	struct ibv_wc wc;
	int n, tries = 0;

	if (ibv_post_send(r->qp, &wr, &bad))
		return -1;
	while ((n = ibv_poll_cq(r->cq, 1, &wc)) == 0 && ++tries < 2000000)
		;
	return n == 1 && wc.status == IBV_WC_SUCCESS &&
	       wc.opcode == IBV_WC_SEND ? 0 : -1;
}

/* The next receive of @r within a second: its slot, or -1. */
static int receive(struct raw_qp *r, struct ibv_wc *wc)
{
	for (int i = 0; i < 100000; i++) {
		int n = ibv_poll_cq(r->cq, 1, wc);

		if (n < 0)
			return -1;
		if (n == 1)
			return wc->status == IBV_WC_SUCCESS &&
			       wc->opcode == IBV_WC_RECV ? (int)wc->wr_id : -1;
		usleep(10);
	}
	return -1;
}

static bool nothing_arrives(struct raw_qp *r)
{
	struct ibv_wc wc;

	usleep(20000);
	return ibv_poll_cq(r->cq, 1, &wc) == 0;
}

int main(void)
{
	struct raw_qp tx, rx_a, rx_b;
	uint8_t *out, expect[FRAME_MAX];
	struct ibv_flow *to_a, *to_b, *any, *high;
	struct ibv_wc wc;
	size_t len;
	int slot, wrong = 0;

	ctx = open_first_device("raw-eth");
	pd = ibv_alloc_pd(ctx);
	if (!pd)
		bail("ibv_alloc_pd");
	if (!read_mac(1, port_mac[1]) || !read_mac(2, port_mac[2])) {
		printf("Bail out! raw-eth: the ports' MACs are not in sysfs (are the ports Ethernet?)\n");
		return 1;
	}
	make_raw_qp(&tx, 1);
	make_raw_qp(&rx_a, 2);
	make_raw_qp(&rx_b, 2);
	out = tx.buf + RECV_SLOTS * FRAME_MAX;

	to_a = steer(&rx_a, port_mac[2], 4000, 1);
	to_b = steer(&rx_b, port_mac[2], 5000, 1);
	check(to_a && to_b, "flow rules: port 2's MAC with UDP port 4000 to QP A, 5000 to QP B (%s)",
	      to_a && to_b ? "made" : strerror(errno));
	if (!to_a || !to_b)
		return tap_finish();

	/* Each frame reaches the QP of its UDP port, whole. */
	for (uint32_t i = 0; i < 40; i++) {
		struct raw_qp *want = i % 2 ? &rx_b : &rx_a;
		size_t payload = 1 + (i * 37) % 1400;

		len = build_frame(out, port_mac[2], port_mac[1],
				  i % 2 ? 5000 : 4000, payload, i, true, false);
		memcpy(expect, out, len);
		if (send_frame(&tx, len, false)) {
			wrong++;
			continue;
		}
		slot = receive(want, &wc);
		if (slot < 0 || wc.byte_len != len ||
		    memcmp(want->buf + slot * FRAME_MAX, expect, len))
			wrong++;
		if (slot >= 0)
			post_recv_slot(want, slot);
	}
	check(!wrong, "40 frames of 43 to 1442 bytes, each on the QP its rule names, byte for byte (%d wrong)",
	      wrong);
	check(nothing_arrives(&rx_a) && nothing_arrives(&rx_b),
	      "and no frame twice");

	len = build_frame(out, port_mac[2], port_mac[1], 6000, 64, 99, true,
			  false);
	check(!send_frame(&tx, len, false) && nothing_arrives(&rx_a) &&
	      nothing_arrives(&rx_b),
	      "a frame no rule matches reaches no QP (the send completes)");
	len = build_frame(out, port_mac[1], port_mac[1], 4000, 64, 98, true,
			  false);
	check(!send_frame(&tx, len, false) && nothing_arrives(&rx_a),
	      "a frame to another port's MAC does not reach port 2's rules");

	/* Priorities: a rule of a lower value wins over a matching one. */
	any = steer(&rx_b, port_mac[2], 0, 2);
	high = steer(&rx_b, port_mac[2], 4000, 0);
	len = build_frame(out, port_mac[2], port_mac[1], 4000, 100, 7, true,
			  false);
	check(any && high && !send_frame(&tx, len, false) &&
	      (slot = receive(&rx_b, &wc)) >= 0 && nothing_arrives(&rx_a),
	      "UDP 4000 with a priority 0 rule to QP B: B gets it, A (priority 1) not");
	if (slot >= 0)
		post_recv_slot(&rx_b, slot);
	if (high)
		ibv_destroy_flow(high);
	len = build_frame(out, port_mac[2], port_mac[1], 7000, 100, 8, true,
			  false);
	check(!send_frame(&tx, len, false) &&
	      (slot = receive(&rx_b, &wc)) >= 0 && nothing_arrives(&rx_a),
	      "UDP 7000: only the MAC-only rule (priority 2) matches, QP B");
	if (slot >= 0)
		post_recv_slot(&rx_b, slot);
	if (any)
		ibv_destroy_flow(any);

	/* Checksums: the adapter's, and its verdict on arrival. */
	len = build_frame(out, port_mac[2], port_mac[1], 4000, 333, 11, false,
			  false);
	check(!send_frame(&tx, len, true) &&
	      (slot = receive(&rx_a, &wc)) >= 0 &&
	      (wc.wc_flags & IBV_WC_IP_CSUM_OK),
	      "IBV_SEND_IP_CSUM: the adapter fills in the checksums, the receiver reports IBV_WC_IP_CSUM_OK");
	if (slot >= 0) {
		uint8_t *f = rx_a.buf + slot * FRAME_MAX;

		check(csum16(f + 14, 20, 0) == 0 && (f[40] | f[41]),
		      "the frame arrives with a valid IPv4 header checksum and a UDP checksum");
		post_recv_slot(&rx_a, slot);
	}
	len = build_frame(out, port_mac[2], port_mac[1], 4000, 333, 12, false,
			  true);
	check(!send_frame(&tx, len, false) &&
	      (slot = receive(&rx_a, &wc)) >= 0 &&
	      !(wc.wc_flags & IBV_WC_IP_CSUM_OK),
	      "a UDP checksum that does not hold: no IBV_WC_IP_CSUM_OK");
	if (slot >= 0)
		post_recv_slot(&rx_a, slot);

	check(ibv_destroy_qp(rx_a.qp) == EBUSY,
	      "destroying a QP a flow rule steers to: EBUSY");
	check(!ibv_destroy_flow(to_a) && !ibv_destroy_flow(to_b),
	      "the rules go");
	check(!ibv_destroy_qp(rx_a.qp) && !ibv_destroy_qp(rx_b.qp) &&
	      !ibv_destroy_qp(tx.qp), "then the QPs");
	return tap_finish();
}
