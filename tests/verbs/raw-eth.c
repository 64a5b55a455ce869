/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Raw packet QPs on the simulator's Ethernet ports: frames sent by one QP
 * reach the QP whose flow rule matches them, byte for byte, and only it,
 * also when no port owns their destination MAC (the switch floods them);
 * rule priorities decide between rules that both match; the adapter fills
 * in the IPv4 and UDP/TCP checksums of IBV_SEND_IP_CSUM sends and reports
 * IBV_WC_IP_CSUM_OK for a frame whose checksums hold, and not for one
 * whose do not; an RSS QP over four WQs receives thousands of flows, each
 * on the WQ its Toeplitz hash names.  Needs CAP_NET_RAW (root), as the
 * kernel does.
 *
 * An LSO send leaves as TCP segments, each whole and checked, also with
 * its payload in several gather entries and with headers at the QP's
 * limit (libmlx4; the distribution's provider refuses IBV_WR_TSO).
 * ibv_wr_* on a raw QP, and a WQ on a parent domain (libmlx4 only); the
 * checksum verdict through an extended CQ; a WQ through RESET and back.
 *
 * Usage: raw-eth project|system|common [--list | NAME...] (on `mlx4sim
 * run --link-layer=eth`; common: what both providers do alike, for
 * tests/verbs/difftrace)
 */
#include <arpa/inet.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <linux/capability.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/mlx4dv.h>

#include "../tap.h"
#include "../cases.h"
#include "../device.h"
#include "../inet.h"
#include "../wait.h"

/* libmlx4's resource type of a WQ's ring (src/mlx4dv.h). */
#ifndef MLX4DV_RES_TYPE_RWQ
#define MLX4DV_RES_TYPE_RWQ	((uint64_t)RDMA_DRIVER_MLX4 << 32 | 2)
#endif

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

/* A raw QP on @port in RTS, its receive slots posted; @r->cq, if set, its CQ. */
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
	if (!r->cq)	/* else the caller's */
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

/* @qp, a raw QP, through INIT (on @port), RTR and RTS: 0 or an errno. */
static int raw_qp_up(struct ibv_qp *qp, int port)
{
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_INIT, .port_num = port };
	int ret = ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PORT);

	attr.qp_state = IBV_QPS_RTR;
	ret = ret ? ret : ibv_modify_qp(qp, &attr, IBV_QP_STATE);
	attr.qp_state = IBV_QPS_RTS;
	return ret ? ret : ibv_modify_qp(qp, &attr, IBV_QP_STATE);
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

/*
 * The IPv4 header checksum of @ip, and the TCP or UDP (@proto) checksum,
 * at @at in the @l4_len bytes at @l4, over the pseudo-header and them.
 */
static void fill_sums(uint8_t *ip, uint8_t *l4, uint8_t proto,
		      size_t l4_len, size_t at)
{
	uint32_t pseudo;
	uint16_t sum;

	ip[10] = ip[11] = 0;
	sum = inet_csum(ip, 20, 0);
	ip[10] = sum >> 8, ip[11] = sum;
	pseudo = (ip[12] << 8 | ip[13]) + (ip[14] << 8 | ip[15]) +
		 (ip[16] << 8 | ip[17]) + (ip[18] << 8 | ip[19]) +
		 proto + l4_len;
	l4[at] = l4[at + 1] = 0;
	sum = inet_csum(l4, l4_len, pseudo);
	l4[at] = sum >> 8, l4[at + 1] = sum;
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
	if (good_sums || bad_sums)
		fill_sums(ip, udp, 17, 8 + payload, 6);
	if (bad_sums)
		udp[7] ^= 0x5a;
	return 14 + 20 + 8 + payload;
}

/*
 * One completion of @cq within 10 seconds (a busy machine may keep the
 * simulator away for a while): 1, or 0 when none came.  The wait is by
 * the clock: a count of polls ends too soon on a fast machine.
 */
static int poll_one(struct ibv_cq *cq, struct ibv_wc *wc)
{
	return poll_cq_within(cq, wc, 10000);
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
	int n;

	if (ibv_post_send(r->qp, &wr, &bad))
		return -1;
	n = poll_one(r->cq, &wc);
	return n == 1 && wc.status == IBV_WC_SUCCESS &&
	       wc.opcode == IBV_WC_SEND ? 0 : -1;
}

/* The next receive of @r within 10 seconds: its slot, or -1. */
static int receive(struct raw_qp *r, struct ibv_wc *wc)
{
	if (poll_one(r->cq, wc) != 1)
		return -1;
	return wc->status == IBV_WC_SUCCESS && wc->opcode == IBV_WC_RECV ?
	       (int)wc->wr_id : -1;
}

/* Whether @r receives the @len bytes at @f within 10 seconds, byte for byte. */
static bool got(struct raw_qp *r, const uint8_t *f, size_t len)
{
	struct ibv_wc wc;
	int slot = receive(r, &wc);
	bool same = slot >= 0 && wc.byte_len == len &&
		    !memcmp(r->buf + slot * FRAME_MAX, f, len);

	if (slot >= 0)
		post_recv_slot(r, slot);
	return same;
}

static bool nothing_arrives(struct raw_qp *r)
{
	struct ibv_wc wc;

	usleep(20000);
	return ibv_poll_cq(r->cq, 1, &wc) == 0;
}

/* `mlx4sim fault @args` (raw-eth.sh names the command): 0 when accepted. */
static int fault(const char *mlx4sim, const char *args)
{
	char cmd[1024];
	int st;

	snprintf(cmd, sizeof(cmd), "'%s' fault %s", mlx4sim, args);
	st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/*
 * A port that is down carries nothing, either way: a frame a raw QP sends
 * from it completes and is lost, as a UD datagram is (faults.c).  @rx's
 * rule takes @tx's frames to port 2's MAC and UDP port 4000.
 */
static void test_port_down(struct raw_qp *tx, struct raw_qp *rx)
{
	const char *mlx4sim = getenv("MLX4SIM");
	uint8_t *out = tx->buf + RECV_SLOTS * FRAME_MAX;
	size_t len;

	if (!mlx4sim)
		return;		/* difftrace's run: no fault command */
	len = build_frame(out, port_mac[2], port_mac[1], 4000, 64, 60, true,
			  false);
	check(!fault(mlx4sim, "port-down --port 1") &&
	      !send_frame(tx, len, false) && nothing_arrives(rx),
	      "port 1 down: a frame sent from it completes and reaches no QP");
	check(!fault(mlx4sim, "port-up --port 1") &&
	      !send_frame(tx, len, false) && got(rx, out, len),
	      "port 1 up: its frames arrive again");
}

/* ------------------------------------------------------------------ */
/* Rule types and flags: defaults, sniffers, DONT_TRAP                  */
/* ------------------------------------------------------------------ */

/*
 * A rule of @type and @flags at @priority on @r's port: with no
 * specification, or, given @mac, an Ethernet one for that destination
 * under @mask.  NULL and errno when refused.
 */
static struct ibv_flow *typed_rule(struct raw_qp *r, uint32_t type,
				   uint32_t flags, uint16_t priority,
				   const uint8_t *mac, const uint8_t *mask)
{
	struct {
		struct ibv_flow_attr attr;
		struct ibv_flow_spec_eth eth;
	} __attribute__((packed)) rule = {
		.attr = { .type = type, .flags = flags, .priority = priority,
			  .size = sizeof(rule.attr), .port = r->port },
		.eth = { .type = IBV_FLOW_SPEC_ETH,
			 .size = sizeof(struct ibv_flow_spec_eth) },
	};

	if (mac) {
		memcpy(rule.eth.val.dst_mac, mac, 6);
		memcpy(rule.eth.mask.dst_mac, mask, 6);
		rule.attr.size = sizeof(rule);
		rule.attr.num_of_specs = 1;
	}
	errno = 0;
	return ibv_create_flow(r->qp, &rule.attr);
}

/* 0 if the rule is made (and destroyed again), else its errno. */
static int rule_errno(struct raw_qp *r, uint32_t type, uint32_t flags,
		      uint16_t priority, const uint8_t *mac,
		      const uint8_t *mask)
{
	struct ibv_flow *flow = typed_rule(r, type, flags, priority, mac, mask);

	if (!flow)
		return errno ? errno : -1;
	return ibv_destroy_flow(flow) ? -1 : 0;
}

/* CAP_NET_RAW in or out of this thread's effective set: 0 on success. */
static int set_net_raw(bool on)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct data[2];

	if (syscall(SYS_capget, &hdr, data))
		return -1;
	if (on)
		data[0].effective |= 1u << CAP_NET_RAW;
	else
		data[0].effective &= ~(1u << CAP_NET_RAW);
	return syscall(SYS_capset, &hdr, data) ? -1 : 0;
}

/* What mlx4_ib and uverbs refuse of a rule's type and flags. */
static void test_flow_refusals(struct raw_qp *r)
{
	static const uint8_t full[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	const uint32_t trap = IBV_FLOW_ATTR_FLAGS_DONT_TRAP;
	int err;

	check(rule_errno(r, IBV_FLOW_ATTR_ALL_DEFAULT, trap, 0, NULL, NULL) ==
	      EINVAL, "ALL_DEFAULT with DONT_TRAP: EINVAL (ib_uverbs_ex_create_flow)");
	check(rule_errno(r, IBV_FLOW_ATTR_MC_DEFAULT, trap, 0, NULL, NULL) ==
	      EINVAL, "MC_DEFAULT with DONT_TRAP: EINVAL (ib_uverbs_ex_create_flow)");
	check(rule_errno(r, IBV_FLOW_ATTR_SNIFFER, trap, 0, NULL, NULL) ==
	      EOPNOTSUPP, "SNIFFER with DONT_TRAP: EOPNOTSUPP (mlx4_ib_create_flow)");
	check(rule_errno(r, IBV_FLOW_ATTR_NORMAL, 1u << 3, 0, NULL, NULL) ==
	      EINVAL, "flag 1 << 3 (IB_FLOW_ATTR_FLAGS_RESERVED): EINVAL (ib_uverbs_ex_create_flow)");
	check(rule_errno(r, IBV_FLOW_ATTR_NORMAL, IBV_FLOW_ATTR_FLAGS_EGRESS, 0,
			 NULL, NULL) == EOPNOTSUPP,
	      "flag EGRESS: EOPNOTSUPP (mlx4_ib_create_flow knows DONT_TRAP alone)");
	check(rule_errno(r, IBV_FLOW_ATTR_NORMAL, 1, 0, NULL, NULL) ==
	      EOPNOTSUPP, "flag 1 << 0: EOPNOTSUPP (mlx4_ib_create_flow)");
	check(rule_errno(r, IBV_FLOW_ATTR_SNIFFER + 1, 0, 0, NULL, NULL) ==
	      EINVAL, "type 4: EINVAL (mlx4_ib_create_flow)");
	check(rule_errno(r, IBV_FLOW_ATTR_NORMAL, trap, 1, NULL, NULL) ==
	      EOPNOTSUPP, "DONT_TRAP at priority 1: EOPNOTSUPP (mlx4_ib_add_dont_trap_rule)");
	check(rule_errno(r, IBV_FLOW_ATTR_NORMAL, trap, 0, port_mac[2], full) ==
	      EINVAL, "DONT_TRAP for one MAC: EINVAL (mlx4_ib_add_dont_trap_rule: the multicast bit alone)");
	if (set_net_raw(false)) {
		check(0, "dropping CAP_NET_RAW: %s", strerror(errno));
		return;
	}
	err = rule_errno(r, IBV_FLOW_ATTR_NORMAL, 0, 0, port_mac[2], full);
	if (set_net_raw(true))
		bail("CAP_NET_RAW back");
	check(err == EPERM, "a rule without CAP_NET_RAW: %s (EPERM: ib_uverbs_ex_create_flow)",
	      err > 0 ? strerror(err) : "made");
}

/* @tx sends a UDP frame to @dst's port @dport; 0 when it is sent. */
static int send_to(struct raw_qp *tx, const uint8_t dst[6], uint16_t dport,
		   uint32_t tag, size_t *len)
{
	uint8_t *out = tx->buf + RECV_SLOTS * FRAME_MAX;

	*len = build_frame(out, dst, port_mac[tx->port], dport, 64, tag, true,
			   false);
	return send_frame(tx, *len, false);
}

static void free_raw_qp(struct raw_qp *r)
{
	ibv_destroy_qp(r->qp);
	ibv_dereg_mr(r->mr);
	ibv_destroy_cq(r->cq);
	free(r->buf);
}

/*
 * The default rules take what no normal rule takes, and mlx4_en's own
 * (the port's MAC, broadcast) do not: MC_DEFAULT a multicast frame,
 * ALL_DEFAULT any.  @tx is on port 1, @rx on port 2 with the rule for
 * port 2's MAC and UDP port 4000.
 */
static void test_default_rules(struct raw_qp *tx, struct raw_qp *rx)
{
	static const uint8_t stranger[6] = { 0x02, 0, 0, 0, 0, 0x77 };
	static const uint8_t group[6] = { 0x01, 0x00, 0x5e, 0x01, 0x02, 0x03 };
	uint8_t *out = tx->buf + RECV_SLOTS * FRAME_MAX;
	struct raw_qp all = {}, mc = {};
	struct ibv_flow *all_rule, *mc_rule;
	size_t len;

	make_raw_qp(&all, 2);
	make_raw_qp(&mc, 2);
	all_rule = typed_rule(&all, IBV_FLOW_ATTR_ALL_DEFAULT, 0, 0, NULL, NULL);
	mc_rule = typed_rule(&mc, IBV_FLOW_ATTR_MC_DEFAULT, 0, 0, NULL, NULL);
	check(all_rule && mc_rule, "ALL_DEFAULT and MC_DEFAULT rules on port 2 (%s)",
	      all_rule && mc_rule ? "made" : strerror(errno));
	check(!send_to(tx, stranger, 6000, 1, &len) && got(&all, out, len) &&
	      nothing_arrives(&mc),
	      "a frame to a MAC no rule names: to ALL_DEFAULT");
	check(!send_to(tx, port_mac[2], 4000, 2, &len) && got(rx, out, len) &&
	      nothing_arrives(&all),
	      "a frame a normal rule takes: not to ALL_DEFAULT");
	check(!send_to(tx, port_mac[2], 6001, 3, &len) && nothing_arrives(&all),
	      "a frame to port 2's MAC no verbs rule takes: mlx4_en's, not ALL_DEFAULT's");
	check(!send_to(tx, group, 6000, 4, &len) && got(&mc, out, len) &&
	      nothing_arrives(&all), "a multicast frame: to MC_DEFAULT");
	check(mc_rule && !ibv_destroy_flow(mc_rule) &&
	      !send_to(tx, group, 6000, 5, &len) && got(&all, out, len),
	      "without MC_DEFAULT: to ALL_DEFAULT");
	check(all_rule && !ibv_destroy_flow(all_rule) &&
	      !send_to(tx, stranger, 6000, 6, &len) && nothing_arrives(&all),
	      "without ALL_DEFAULT: nowhere");
	free_raw_qp(&all);
	free_raw_qp(&mc);
}

/*
 * A SNIFFER rule's QP gets a copy of what its port receives and sends; a
 * DONT_TRAP rule's a copy of what the port receives of its kind, while
 * the rule that takes the frame still gets it.
 */
static void test_sniffer_rules(struct raw_qp *tx, struct raw_qp *rx)
{
	static const uint8_t mc_bit[6] = { 0x01 };
	static const uint8_t group[6] = { 0x01, 0x00, 0x5e, 0x01, 0x02, 0x03 };
	uint8_t *out = tx->buf + RECV_SLOTS * FRAME_MAX;
	uint8_t *out_rx = rx->buf + RECV_SLOTS * FRAME_MAX;
	struct raw_qp snif = {};
	struct ibv_flow *rule;
	size_t len;

	make_raw_qp(&snif, 2);
	rule = typed_rule(&snif, IBV_FLOW_ATTR_SNIFFER, 0, 0, NULL, NULL);
	check(rule != NULL, "a SNIFFER rule on port 2 (%s)",
	      rule ? "made" : strerror(errno));
	check(!send_to(tx, port_mac[2], 4000, 7, &len) && got(rx, out, len) &&
	      got(&snif, out, len),
	      "a frame port 2 receives: to its rule's QP, and a copy to the sniffer");
	check(!send_to(rx, port_mac[1], 6000, 8, &len) && got(&snif, out_rx, len) &&
	      nothing_arrives(&snif), "a frame port 2 sends: one copy to the sniffer");
	check(rule && !ibv_destroy_flow(rule), "the SNIFFER rule goes");

	rule = typed_rule(&snif, IBV_FLOW_ATTR_NORMAL,
			  IBV_FLOW_ATTR_FLAGS_DONT_TRAP, 0, NULL, NULL);
	check(rule != NULL, "a DONT_TRAP rule of no specification on port 2 (%s)",
	      rule ? "made" : strerror(errno));
	check(!send_to(tx, port_mac[2], 4000, 9, &len) && got(rx, out, len) &&
	      got(&snif, out, len),
	      "a frame port 2 receives: to its rule's QP, and a copy to the DONT_TRAP QP");
	check(!send_to(rx, port_mac[1], 6000, 10, &len) && nothing_arrives(&snif),
	      "a frame port 2 sends: none to the DONT_TRAP QP");
	check(rule && !ibv_destroy_flow(rule), "the DONT_TRAP rule goes");

	rule = typed_rule(&snif, IBV_FLOW_ATTR_NORMAL,
			  IBV_FLOW_ATTR_FLAGS_DONT_TRAP, 0, group, mc_bit);
	check(rule && !send_to(tx, port_mac[2], 4000, 11, &len) &&
	      got(rx, out, len) && nothing_arrives(&snif) &&
	      !send_to(tx, group, 6000, 12, &len) && got(&snif, out, len),
	      "a DONT_TRAP rule for multicast: a copy of a multicast frame, none of a unicast one");
	if (rule)
		ibv_destroy_flow(rule);
	free_raw_qp(&snif);
}

/* ------------------------------------------------------------------ */
/* RSS: frames spread over WQs by the Toeplitz hash                    */
/* ------------------------------------------------------------------ */

#define RSS_WQS		4
#define RSS_FLOWS	3000
#define RSS_SLOTS	32

/* The key of Microsoft's RSS specification, with its verification values. */
static const uint8_t ms_key[40] = {
	0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67,
	0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0, 0xd0, 0xca, 0x2b, 0xcb,
	0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30,
	0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa,
};

static uint32_t toeplitz(const uint8_t *in, size_t n)
{
	uint32_t hash = 0;
	uint64_t window = 0;

	for (int i = 0; i < 8; i++)
		window = window << 8 | ms_key[i];
	for (size_t i = 0; i < n; i++) {
		for (int bit = 7; bit >= 0; bit--) {
			if (in[i] >> bit & 1)
				hash ^= (uint32_t)(window >> 32);
			window <<= 1;
		}
		window |= i + 8 < 40 ? ms_key[i + 8] : 0;
	}
	return hash;
}

struct rss_wq {
	struct ibv_wq *wq;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t *buf;
	unsigned int got;
};

static void post_wq_slot(struct rss_wq *w, int slot)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(w->buf + slot * FRAME_MAX),
		.length = FRAME_MAX, .lkey = w->mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = slot, .sg_list = &sge,
				  .num_sge = 1 }, *bad;

	if (ibv_post_wq_recv(w->wq, &wr, &bad))
		bail("ibv_post_wq_recv");
}

/*
 * A WQ in RDY on @wq_pd, its slots posted; @w->cq, if set, its CQ;
 * @flags: its creation flags.
 */
static void make_rss_wq_flags(struct rss_wq *w, struct ibv_pd *wq_pd,
			      uint32_t flags)
{
	struct ibv_wq_init_attr init = {
		.wq_type = IBV_WQT_RQ, .max_wr = RSS_SLOTS, .max_sge = 1,
		.pd = wq_pd, .create_flags = flags,
		.comp_mask = flags ? IBV_WQ_INIT_ATTR_FLAGS : 0,
	};
	struct ibv_wq_attr attr = { .attr_mask = IBV_WQ_ATTR_STATE,
				    .wq_state = IBV_WQS_RDY };

	if (!w->cq)
		w->cq = ibv_create_cq(ctx, 2 * RSS_SLOTS, NULL, NULL, 0);
	init.cq = w->cq;
	w->wq = w->cq ? ibv_create_wq(ctx, &init) : NULL;
	w->buf = calloc(RSS_SLOTS, FRAME_MAX);
	w->mr = w->buf ? ibv_reg_mr(pd, w->buf, RSS_SLOTS * FRAME_MAX,
				    IBV_ACCESS_LOCAL_WRITE) : NULL;
	if (!w->wq || !w->mr)
		bail("a WQ");
	if (ibv_modify_wq(w->wq, &attr))
		bail("WQ to RDY");
	for (int i = 0; i < RSS_SLOTS; i++)
		post_wq_slot(w, i);
}

static void make_rss_wq(struct rss_wq *w, struct ibv_pd *wq_pd)
{
	make_rss_wq_flags(w, wq_pd, 0);
}

/* The WQ index where a frame arrived, or -1 after 10 seconds. */
static int rss_receive(struct rss_wq *w, uint8_t **frame, uint32_t *len)
{
	struct timespec start, now;
	struct ibv_wc wc;

	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		for (int i = 0; i < RSS_WQS; i++) {
			if (ibv_poll_cq(w[i].cq, 1, &wc) != 1)
				continue;
			if (wc.status != IBV_WC_SUCCESS)
				return -1;
			*frame = w[i].buf + wc.wr_id * FRAME_MAX;
			*len = wc.byte_len;
			post_wq_slot(&w[i], wc.wr_id);
			return i;
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec - start.tv_sec >= 10)
			return -1;
		usleep(1);
	}
}

/* An RSS QP over @tbl: Toeplitz over IPv4 addresses and UDP ports. */
static struct ibv_qp *make_rss_qp(struct ibv_rwq_ind_table *tbl)
{
	struct ibv_qp_init_attr_ex attr = {
		.qp_type = IBV_QPT_RAW_PACKET,
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_IND_TABLE |
			     IBV_QP_INIT_ATTR_RX_HASH,
		.pd = pd,
		.rwq_ind_tbl = tbl,
		.rx_hash_conf = {
			.rx_hash_function = IBV_RX_HASH_FUNC_TOEPLITZ,
			.rx_hash_key_len = sizeof(ms_key),
			.rx_hash_key = (uint8_t *)ms_key,
			.rx_hash_fields_mask = IBV_RX_HASH_SRC_IPV4 |
				IBV_RX_HASH_DST_IPV4 | IBV_RX_HASH_SRC_PORT_UDP |
				IBV_RX_HASH_DST_PORT_UDP,
		},
	};

	errno = 0;
	return tbl ? ibv_create_qp_ex(ctx, &attr) : NULL;
}

/*
 * An RSS QP's states, by mlx4_ib: INIT on a port, RTR with nothing else
 * (_mlx4_ib_modify_qp, rdma-core's _mlx4_modify_qp_rss), never RTS nor
 * back to RESET; it answers no query (mlx4_ib_query_qp).
 */
static void rss_qp_states(struct ibv_qp *qp)
{
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_INIT, .port_num = 2 };
	struct ibv_qp_init_attr init_got;
	struct ibv_qp_attr got;

	if (ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PORT))
		bail("RSS QP to INIT");
	attr.qp_state = IBV_QPS_RTR;
	check(ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_QKEY) ==
	      EOPNOTSUPP, "an RSS QP takes the state and port alone (EOPNOTSUPP)");
	if (ibv_modify_qp(qp, &attr, IBV_QP_STATE))
		bail("RSS QP to RTR");
	check(ibv_query_qp(qp, &got, IBV_QP_STATE, &init_got) == EOPNOTSUPP,
	      "an RSS QP is not queried (EOPNOTSUPP)");
	attr.qp_state = IBV_QPS_RTS;
	check(ibv_modify_qp(qp, &attr, IBV_QP_STATE) == EOPNOTSUPP,
	      "an RSS QP goes no further than RTR (EOPNOTSUPP)");
	attr.qp_state = IBV_QPS_RESET;
	check(ibv_modify_qp(qp, &attr, IBV_QP_STATE) == EOPNOTSUPP,
	      "nor back to RESET (EOPNOTSUPP)");
}

/*
 * RSS_FLOWS flows from @tx to UDP port 8000, each with its own source
 * address and port: each frame arrives once, whole, on the WQ of @w its
 * Toeplitz hash names, and every WQ takes a share.
 */
static void rss_flows(struct raw_qp *tx, struct rss_wq *w)
{
	uint8_t *out = tx->buf + RECV_SLOTS * FRAME_MAX, in[12], *frame;
	unsigned int misplaced = 0, lost = 0, per_wq[RSS_WQS] = {};
	uint32_t len;

	for (uint32_t i = 0; i < RSS_FLOWS; i++) {
		size_t n = build_frame(out, port_mac[2], port_mac[1], 8000,
				       32, i, true, false);
		uint8_t *ip = out + 14, *udp = ip + 20;
		int at;

		/* Flow i: its own source address and port. */
		ip[13] = i >> 8;
		ip[14] = i;
		ip[10] = ip[11] = 0;
		udp[0] = 0x80 | (i * 131 >> 8 & 0x3f), udp[1] = i * 131;
		udp[6] = udp[7] = 0;
		memcpy(in, ip + 12, 8);
		memcpy(in + 8, udp, 4);
		if (send_frame(tx, n, true)) {
			lost++;
			continue;
		}
		at = rss_receive(w, &frame, &len);
		if (at < 0 || len != n || memcmp(frame + 42, out + 42, 32)) {
			lost++;
			continue;
		}
		per_wq[at]++;
		if ((unsigned int)at != (toeplitz(in, 12) & (RSS_WQS - 1)))
			misplaced++;
	}
	check(!lost, "%d flows, each frame received once, whole (%u lost)",
	      RSS_FLOWS, lost);
	check(!misplaced, "each on the WQ the Toeplitz hash names (%u elsewhere; per WQ %u %u %u %u)",
	      misplaced, per_wq[0], per_wq[1], per_wq[2], per_wq[3]);
	check(per_wq[0] && per_wq[1] && per_wq[2] && per_wq[3],
	      "all four WQs take a share");
	for (int i = 0; i < RSS_WQS; i++) {
		struct ibv_wc wc;

		if (ibv_poll_cq(w[i].cq, 1, &wc))
			misplaced++;
	}
	check(!misplaced, "and nothing more arrives");
}

static void test_rss(struct raw_qp *tx)
{
	/* The specification's example: 66.9.149.187:2794 -> 161.142.100.80:1766 */
	static const uint8_t example[12] = { 66, 9, 149, 187, 161, 142, 100, 80,
					     0x0a, 0xea, 0x06, 0xe6 };
	struct rss_wq w[RSS_WQS] = {};
	struct ibv_wq *wqs[RSS_WQS];
	struct ibv_rwq_ind_table *tbl;
	struct ibv_rwq_ind_table_init_attr tbl_attr = {
		.log_ind_tbl_size = 2, .ind_tbl = wqs,
	};
	struct raw_qp rss = { .port = 2 };
	struct ibv_flow *flow;
	uint8_t log_range = 2;

	/* WQs of one table take consecutive numbers from one range. */
	if (mlx4dv_set_context_attr(ctx, MLX4DV_SET_CTX_ATTR_LOG_WQS_RANGE_SZ,
				    &log_range))
		bail("mlx4dv_set_context_attr(LOG_WQS_RANGE_SZ)");
	check(toeplitz(example, 12) == 0x51ccc178 &&
	      toeplitz(example, 8) == 0x323e8fc2,
	      "the test's Toeplitz hash gives the specification's values");
	for (int i = 0; i < RSS_WQS; i++) {
		make_rss_wq(&w[i], pd);
		wqs[i] = w[i].wq;
	}
	tbl = ibv_create_rwq_ind_table(ctx, &tbl_attr);
	rss.qp = make_rss_qp(tbl);
	check(tbl && rss.qp, "an RSS QP over 4 WQs, Toeplitz over IPv4 addresses and UDP ports (%s)",
	      rss.qp ? "made" : strerror(errno));
	if (!rss.qp)
		return;
	rss_qp_states(rss.qp);
	flow = steer(&rss, port_mac[2], 8000, 0);
	check(flow != NULL, "a rule: UDP port 8000 on port 2 to the RSS QP");
	rss_flows(tx, w);
	check(ibv_destroy_rwq_ind_table(tbl) == EBUSY,
	      "the table an RSS QP spreads over is busy");
	check(!ibv_destroy_flow(flow) && !ibv_destroy_qp(rss.qp) &&
	      !ibv_destroy_rwq_ind_table(tbl),
	      "rule, RSS QP, table go, in that order");
	for (int i = 0; i < RSS_WQS; i++)
		ibv_destroy_wq(w[i].wq);
}

static int wq_to(struct ibv_wq *wq, enum ibv_wq_state state)
{
	struct ibv_wq_attr attr = { .attr_mask = IBV_WQ_ATTR_STATE,
				    .wq_state = state };

	return ibv_modify_wq(wq, &attr);
}

static int rss_qp_to_init(struct ibv_qp *qp, uint8_t port)
{
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_INIT,
				    .port_num = port };

	return ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PORT);
}

/* The flush completions @cq gives within a second. */
static int flushes(struct ibv_cq *cq)
{
	struct ibv_wc wc;
	int n = 0;

	while (poll_cq_within(cq, &wc, 1000) == 1)
		if (wc.status == IBV_WC_WR_FLUSH_ERR)
			n++;
	return n;
}

static void free_rss_wq(struct rss_wq *w)
{
	ibv_destroy_wq(w->wq);
	ibv_dereg_mr(w->mr);
	ibv_destroy_cq(w->cq);
	free(w->buf);
}

/*
 * mlx4_ib hands a WQ's state to the device only while an RSS QP uses the
 * WQ (mlx4_ib_modify_wq, rss_usecnt), as the WQ takes the RSS QP's port:
 * a WQ no RSS QP uses flushes nothing when it goes to ERR; one an RSS QP
 * uses flushes every receive.  An RSS QP ties its WQs to its port
 * (bringup_rss_rwqs): another RSS QP over them on the other port is
 * EINVAL, on the same port it goes to INIT.
 */
static void test_rss_wq_states(void)
{
	struct rss_wq w[RSS_WQS] = {};
	struct ibv_wq *wqs[RSS_WQS];
	struct ibv_rwq_ind_table_init_attr tbl_attr = {
		.log_ind_tbl_size = 2, .ind_tbl = wqs,
	};
	struct ibv_rwq_ind_table *tbl;
	struct ibv_qp *a, *b;
	uint8_t log_range = 2;
	int n;

	/* The providers ask for a range for the next WQ only. */
	if (mlx4dv_set_context_attr(ctx, MLX4DV_SET_CTX_ATTR_LOG_WQS_RANGE_SZ,
				    &log_range))
		bail("mlx4dv_set_context_attr(LOG_WQS_RANGE_SZ)");
	for (int i = 0; i < RSS_WQS; i++) {
		make_rss_wq(&w[i], pd);
		wqs[i] = w[i].wq;
	}
	tbl = ibv_create_rwq_ind_table(ctx, &tbl_attr);
	if (!tbl)
		bail("an indirection table over 4 WQs");
	n = wq_to(w[0].wq, IBV_WQS_ERR) ? -1 : flushes(w[0].cq);
	check(n == 0, "a WQ no RSS QP uses goes to ERR: nothing flushed (%d of %d)",
	      n, RSS_SLOTS);
	a = make_rss_qp(tbl);
	check(a && !rss_qp_to_init(a, 2), "an RSS QP over the table to INIT on port 2");
	n = wq_to(w[1].wq, IBV_WQS_ERR) ? -1 : flushes(w[1].cq);
	check(n == RSS_SLOTS, "a WQ it uses goes to ERR: its %d receives flushed (%d)",
	      RSS_SLOTS, n);
	b = make_rss_qp(tbl);
	n = b ? rss_qp_to_init(b, 1) : -1;
	check(n == EINVAL, "a second RSS QP over the same WQs to INIT on port 1: %s (EINVAL: they are port 2's)",
	      n > 0 ? strerror(n) : n ? "not made" : "succeeded");
	check(b && !rss_qp_to_init(b, 2), "to INIT on port 2: made");
	check(b && a && !ibv_destroy_qp(b) && !ibv_destroy_qp(a) &&
	      !ibv_destroy_rwq_ind_table(tbl), "both RSS QPs and the table go");
	for (int i = 0; i < RSS_WQS; i++)
		free_rss_wq(&w[i]);
}

/* The Ethernet FCS of @len bytes: CRC-32, least significant byte first. */
static uint32_t fcs_of(const uint8_t *f, size_t len)
{
	uint32_t crc = 0xffffffff;

	for (size_t i = 0; i < len; i++) {
		crc ^= f[i];
		for (int bit = 0; bit < 8; bit++)
			crc = (crc >> 1) ^ (crc & 1 ? 0xedb88320 : 0);
	}
	return ~crc;
}

/*
 * A WQ made with IBV_WQ_FLAGS_SCATTER_FCS (mlx4_ib's create_rq, where the
 * device reports IBV_RAW_PACKET_CAP_SCATTER_FCS) receives each frame with
 * its FCS after it, counted in byte_len; any other creation flag is
 * refused (EOPNOTSUPP, the providers' check).
 */
static void test_wq_scatter_fcs(struct raw_qp *tx)
{
	struct ibv_device_attr_ex dev_attr;
	struct ibv_wq_init_attr bad = {
		.wq_type = IBV_WQT_RQ, .max_wr = 4, .max_sge = 1, .pd = pd,
		.cq = tx->cq, .comp_mask = IBV_WQ_INIT_ATTR_FLAGS,
		.create_flags = IBV_WQ_FLAGS_CVLAN_STRIPPING,
	};
	uint8_t *out = tx->buf + RECV_SLOTS * FRAME_MAX, *frame;
	struct ibv_rwq_ind_table_init_attr tbl_attr = { .log_ind_tbl_size = 0 };
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_INIT, .port_num = 2 };
	struct raw_qp rss = { .port = 2 };
	struct ibv_rwq_ind_table *tbl;
	struct ibv_flow *flow;
	struct rss_wq w = {};
	struct ibv_wq *wq;
	struct ibv_wc wc;
	uint32_t len, fcs;
	bool got_one;
	size_t n;

	check(!ibv_query_device_ex(ctx, NULL, &dev_attr) &&
	      (dev_attr.raw_packet_caps & IBV_RAW_PACKET_CAP_SCATTER_FCS),
	      "the device offers IBV_RAW_PACKET_CAP_SCATTER_FCS");
	errno = 0;
	wq = ibv_create_wq(ctx, &bad);
	check(!wq && errno == EOPNOTSUPP,
	      "a WQ with IBV_WQ_FLAGS_CVLAN_STRIPPING: %s (EOPNOTSUPP)",
	      wq ? "made" : strerror(errno));
	if (wq)
		ibv_destroy_wq(wq);
	make_rss_wq_flags(&w, pd, IBV_WQ_FLAGS_SCATTER_FCS);
	tbl_attr.ind_tbl = &w.wq;
	tbl = ibv_create_rwq_ind_table(ctx, &tbl_attr);
	rss.qp = make_rss_qp(tbl);
	if (!rss.qp || ibv_modify_qp(rss.qp, &attr, IBV_QP_STATE | IBV_QP_PORT))
		bail("an RSS QP over a WQ that keeps the FCS");
	attr.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(rss.qp, &attr, IBV_QP_STATE))
		bail("RSS QP to RTR");
	flow = steer(&rss, port_mac[2], 8002, 0);
	n = build_frame(out, port_mac[2], port_mac[1], 8002, 100, 1, true,
			false);
	fcs = fcs_of(out, n);
	got_one = flow && !send_frame(tx, n, false) && poll_one(w.cq, &wc) == 1 &&
		  wc.status == IBV_WC_SUCCESS;
	frame = w.buf + (got_one ? wc.wr_id : 0) * FRAME_MAX;
	len = got_one ? wc.byte_len : 0;
	check(got_one && len == n + 4 && !memcmp(frame, out, n) &&
	      frame[n] == (uint8_t)fcs &&
	      frame[n + 1] == (uint8_t)(fcs >> 8) &&
	      frame[n + 2] == (uint8_t)(fcs >> 16) &&
	      frame[n + 3] == (uint8_t)(fcs >> 24),
	      "IBV_WQ_FLAGS_SCATTER_FCS: the frame of %zu bytes arrives with its FCS (%u bytes)",
	      n, len);
	check(flow && !ibv_destroy_flow(flow) && !ibv_destroy_qp(rss.qp) &&
	      !ibv_destroy_rwq_ind_table(tbl), "rule, RSS QP, table go");
	free_rss_wq(&w);
}

/* ------------------------------------------------------------------ */
/* LSO: one WQE, many TCP segments                                     */
/* ------------------------------------------------------------------ */

#define LSO_MSS		1000
#define LSO_PAYLOAD	9500		/* 9 whole segments and a half */
#define LSO_HDR		(14 + 20 + 20)

/* Frames to @mac with TCP destination port @port, to @r. */
static struct ibv_flow *steer_tcp(struct raw_qp *r, const uint8_t mac[6],
				  uint16_t port)
{
	struct {
		struct ibv_flow_attr attr;
		struct ibv_flow_spec_eth eth;
		struct ibv_flow_spec_ipv4 ipv4;
		struct ibv_flow_spec_tcp_udp tcp;
	} __attribute__((packed)) rule = {
		.attr = { .type = IBV_FLOW_ATTR_NORMAL, .size = sizeof(rule),
			  .num_of_specs = 3, .port = r->port },
		.eth = { .type = IBV_FLOW_SPEC_ETH,
			 .size = sizeof(struct ibv_flow_spec_eth) },
		.ipv4 = { .type = IBV_FLOW_SPEC_IPV4,
			  .size = sizeof(struct ibv_flow_spec_ipv4) },
		.tcp = { .type = IBV_FLOW_SPEC_TCP,
			 .size = sizeof(struct ibv_flow_spec_tcp_udp),
			 .val.dst_port = htons(port), .mask.dst_port = 0xffff },
	};

	memcpy(rule.eth.val.dst_mac, mac, 6);
	memset(rule.eth.mask.dst_mac, 0xff, 6);
	return ibv_create_flow(r->qp, &rule.attr);
}

/* The headers of the LSO send: Ethernet, IPv4 (ID 0x1234), TCP (PSH). */
static void lso_headers(uint8_t *h)
{
	uint8_t *ip = h + 14, *tcp = ip + 20;

	memset(h, 0, LSO_HDR);
	memcpy(h, port_mac[2], 6);
	memcpy(h + 6, port_mac[1], 6);
	h[12] = 0x08;
	ip[0] = 0x45, ip[4] = 0x12, ip[5] = 0x34, ip[6] = 0x40;
	ip[8] = 64, ip[9] = 6;
	ip[12] = 10, ip[15] = 1, ip[16] = 10, ip[19] = 2;
	tcp[0] = 0x1f, tcp[1] = 0x90;		/* from port 8080 */
	tcp[2] = 0x23, tcp[3] = 0x28;		/* to port 9000 */
	tcp[4] = 0x7f, tcp[5] = 0xff, tcp[6] = 0xfe, tcp[7] = 0x00;
	tcp[12] = 5 << 4;
	tcp[13] = 0x18;				/* ACK, PSH */
	tcp[14] = 0xff, tcp[15] = 0xff;
}

/*
 * Receive on @rx the segments of LSO_PAYLOAD bytes of @payload behind
 * lso_headers() of @hdr_len bytes whose IPv4 header is @ihl long:
 * how many were wrong (one lost ends the count), and how many came.
 */
static int lso_segments_wrong(struct raw_qp *rx, const uint8_t *payload,
			      int hdr_len, int ihl, int *segments)
{
	struct ibv_wc wc;
	int wrong = 0;

	*segments = 0;
	for (int off = 0; off < LSO_PAYLOAD; off += LSO_MSS, (*segments)++) {
		int n = LSO_PAYLOAD - off < LSO_MSS ? LSO_PAYLOAD - off : LSO_MSS;
		bool last = off + n == LSO_PAYLOAD;
		int slot = receive(rx, &wc);
		uint8_t *f, *ip, *tcp;
		uint32_t seq;

		if (slot < 0)
			return wrong + 1;
		f = rx->buf + slot * FRAME_MAX;
		ip = f + 14;
		tcp = ip + ihl;
		seq = (uint32_t)tcp[4] << 24 | tcp[5] << 16 | tcp[6] << 8 | tcp[7];
		if (wc.byte_len != (uint32_t)(hdr_len + n) ||
		    (ip[2] << 8 | ip[3]) != hdr_len - 14 + n ||
		    (ip[4] << 8 | ip[5]) != 0x1234 + *segments ||
		    seq != 0x7ffffe00u + off ||
		    !!(tcp[13] & 0x08) != last ||
		    !(wc.wc_flags & IBV_WC_IP_CSUM_OK) ||
		    memcmp(f + hdr_len, payload + off, n))
			wrong++;
		post_recv_slot(rx, slot);
	}
	return wrong;
}

static void test_lso(struct raw_qp *rx, bool project)
{
	struct ibv_qp_init_attr_ex init = {
		.cap = { .max_send_wr = 8, .max_recv_wr = 1,
			 .max_send_sge = 2, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RAW_PACKET,
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_MAX_TSO_HEADER,
		.pd = pd, .max_tso_header = 64,
	};
	struct ibv_device_attr_ex dev = {};
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_INIT, .port_num = 1 };
	static uint8_t hdr[LSO_HDR], payload[LSO_PAYLOAD];
	struct ibv_sge sge;
	struct ibv_send_wr wr = {
		.wr_id = 0x150, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_TSO, .send_flags = IBV_SEND_SIGNALED,
	}, *bad;
	struct ibv_mr *mr;
	struct ibv_flow *flow;
	struct ibv_qp *qp;
	struct ibv_cq *cq;
	struct ibv_wc wc;
	int wrong, segments, ret;

	ret = ibv_query_device_ex(ctx, NULL, &dev);
	check(!ret && dev.tso_caps.max_tso >= 65536 &&
	      (dev.tso_caps.supported_qpts & (1u << IBV_QPT_RAW_PACKET)),
	      "the device offers LSO to raw packet QPs (max_tso %u)",
	      dev.tso_caps.max_tso);
	cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	init.send_cq = init.recv_cq = cq;
	qp = cq ? ibv_create_qp_ex(ctx, &init) : NULL;
	if (!qp) {
		check(!project, "a raw QP for LSO headers of 64 bytes: %s (%s)",
		      strerror(errno), project ? "libmlx4 makes one" :
		      "the distribution's provider has no LSO");
		return;
	}
	if (ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PORT))
		bail("LSO QP to INIT");
	attr.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(qp, &attr, IBV_QP_STATE))
		bail("LSO QP to RTR");
	attr.qp_state = IBV_QPS_RTS;
	if (ibv_modify_qp(qp, &attr, IBV_QP_STATE))
		bail("LSO QP to RTS");
	for (int i = 0; i < LSO_PAYLOAD; i++)
		payload[i] = (uint8_t)(i * 29 + (i >> 9));
	mr = ibv_reg_mr(pd, payload, sizeof(payload), 0);
	flow = steer_tcp(rx, port_mac[2], 9000);
	if (!mr || !flow)
		bail("LSO buffer and rule");
	lso_headers(hdr);
	sge = (struct ibv_sge){ (uintptr_t)payload, LSO_PAYLOAD, mr->lkey };
	wr.tso.hdr = hdr;
	wr.tso.hdr_sz = LSO_HDR;
	wr.tso.mss = LSO_MSS;
	ret = ibv_post_send(qp, &wr, &bad);
	if (!project) {
		check(ret == EINVAL, "IBV_WR_TSO: %s (the distribution's provider has no LSO)",
		      ret ? strerror(ret) : "posted");
		goto out;
	}
	check(!ret, "IBV_WR_TSO of %d bytes, MSS %d, posted", LSO_PAYLOAD,
	      LSO_MSS);
	wrong = lso_segments_wrong(rx, payload, LSO_HDR, 20, &segments);
	check(!wrong && segments == 10,
	      "10 TCP segments arrive, each with its length, IPv4 ID, sequence number, checksums and data, PSH on the last (%d wrong)",
	      wrong);
	check(ibv_poll_cq(cq, 1, &wc) == 1 && wc.status == IBV_WC_SUCCESS &&
	      wc.wr_id == 0x150 && nothing_arrives(rx),
	      "one send completion for the WQE, and no segment more");
out:
	ibv_destroy_flow(flow);
	ibv_destroy_qp(qp);
	ibv_dereg_mr(mr);
	ibv_destroy_cq(cq);
}

/*
 * The longest headers a TCP segment in IPv4 has: each header with 40
 * bytes of options (no-operations), 134 bytes in all.
 */
#define LSO_HDR_LONG	(14 + 60 + 60)

static void lso_headers_long(uint8_t *h)
{
	uint8_t short_hdr[LSO_HDR], *ip = h + 14, *tcp = ip + 60;

	lso_headers(short_hdr);
	memcpy(h, short_hdr, 14 + 20);
	memset(ip + 20, 1, 40);
	ip[0] = 0x4f;
	memcpy(tcp, short_hdr + 14 + 20, 20);
	memset(tcp + 20, 1, 40);
	tcp[12] = 15 << 4;
}

/*
 * A raw QP on port 1 in RTS made for LSO headers of @max_hdr bytes and
 * @max_sge gather entries, on @cq; NULL (errno set) when refused.
 */
static struct ibv_qp *lso_qp(struct ibv_cq *cq, uint32_t max_hdr,
			     uint32_t max_sge)
{
	struct ibv_qp_init_attr_ex init = {
		.cap = { .max_send_wr = 8, .max_recv_wr = 1,
			 .max_send_sge = max_sge, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RAW_PACKET, .send_cq = cq, .recv_cq = cq,
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_MAX_TSO_HEADER,
		.pd = pd, .max_tso_header = max_hdr,
	};
	struct ibv_qp *qp = ibv_create_qp_ex(ctx, &init);

	if (qp && raw_qp_up(qp, 1))
		bail("LSO QP to RTS");
	return qp;
}

/* One LSO request of @qp: headers @hdr of @hdr_sz, the payload in @sge. */
static int post_lso(struct ibv_qp *qp, uint8_t *hdr, int hdr_sz,
		    struct ibv_sge *sge, int num_sge)
{
	struct ibv_send_wr wr = {
		.wr_id = 0x151, .sg_list = sge, .num_sge = num_sge,
		.opcode = IBV_WR_TSO, .send_flags = IBV_SEND_SIGNALED,
	}, *bad;

	wr.tso.hdr = hdr;
	wr.tso.hdr_sz = hdr_sz;
	wr.tso.mss = LSO_MSS;
	return ibv_post_send(qp, &wr, &bad);
}

/* An LSO request of @qp, and its segments on @rx: whether all is well. */
static bool lso_lands(struct ibv_qp *qp, struct ibv_cq *cq,
		      struct raw_qp *rx, uint8_t *hdr, int hdr_sz, int ihl,
		      const uint8_t *payload, struct ibv_sge *sge, int num_sge)
{
	struct ibv_wc wc;
	int segments;

	if (!qp || post_lso(qp, hdr, hdr_sz, sge, num_sge))
		return false;
	return !lso_segments_wrong(rx, payload, hdr_sz, ihl, &segments) &&
	       segments == 10 && poll_one(cq, &wc) == 1 &&
	       wc.status == IBV_WC_SUCCESS && nothing_arrives(rx);
}

/*
 * LSO requests of other shapes (libmlx4): the payload in three gather
 * entries; the longest TCP/IPv4 headers at a QP's limit exactly (one
 * byte more is refused); a QP made for the device's limit (the headers
 * of the largest WQE, one data segment: 1008 - 16 - 16 - 4 bytes), and
 * refused one byte beyond.  No Ethernet, IP and TCP headers add up to
 * those 972 bytes (the adapter cuts TCP segments, and needs them whole),
 * so the device's QP sends the longest there are.
 */
static void test_lso_shapes(struct raw_qp *rx)
{
	static uint8_t hdr[LSO_HDR_LONG + 1], payload[LSO_PAYLOAD];
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	struct ibv_flow *flow = steer_tcp(rx, port_mac[2], 9000);
	struct ibv_mr *mr = ibv_reg_mr(pd, payload, sizeof(payload), 0);
	struct ibv_sge three[3], one;
	struct ibv_qp *qp;

	if (!cq || !flow || !mr)
		bail("LSO shapes: CQ, rule, buffer");
	for (int i = 0; i < LSO_PAYLOAD; i++)
		payload[i] = (uint8_t)(i * 31 + (i >> 8));
	three[0] = (struct ibv_sge){ (uintptr_t)payload, 3000, mr->lkey };
	three[1] = (struct ibv_sge){ (uintptr_t)payload + 3000, 4000, mr->lkey };
	three[2] = (struct ibv_sge){ (uintptr_t)payload + 7000, 2500, mr->lkey };
	one = (struct ibv_sge){ (uintptr_t)payload, LSO_PAYLOAD, mr->lkey };

	qp = lso_qp(cq, 64, 3);
	lso_headers(hdr);
	check(lso_lands(qp, cq, rx, hdr, LSO_HDR, 20, payload, three, 3),
	      "LSO with the payload in 3 gather entries: 10 segments, each whole");
	if (qp)
		ibv_destroy_qp(qp);

	qp = lso_qp(cq, LSO_HDR_LONG, 1);
	lso_headers_long(hdr);
	check(lso_lands(qp, cq, rx, hdr, LSO_HDR_LONG, 60, payload, &one, 1),
	      "LSO headers of %d bytes on a QP made for %d: 10 segments, each whole",
	      LSO_HDR_LONG, LSO_HDR_LONG);
	check(qp && post_lso(qp, hdr, LSO_HDR_LONG + 1, &one, 1) == EINVAL &&
	      nothing_arrives(rx), "one byte more: EINVAL");
	if (qp)
		ibv_destroy_qp(qp);

	qp = lso_qp(cq, 972, 1);
	check(lso_lands(qp, cq, rx, hdr, LSO_HDR_LONG, 60, payload, &one, 1),
	      "a QP made for the device's limit of 972 bytes of headers: %s, its LSO sends arrive",
	      qp ? "made" : strerror(errno));
	if (qp)
		ibv_destroy_qp(qp);
	errno = 0;
	qp = lso_qp(cq, 973, 1);
	check(!qp && errno == EINVAL, "973 bytes: %s",
	      qp ? "made" : strerror(errno));
	if (qp)
		ibv_destroy_qp(qp);
	ibv_destroy_flow(flow);
	ibv_dereg_mr(mr);
	ibv_destroy_cq(cq);
}

/* ------------------------------------------------------------------ */
/* VLAN insertion: a WQE written through the direct verbs              */
/* ------------------------------------------------------------------ */

#define TEST_VLAN	0x2123		/* priority 1, VID 0x123 */

/*
 * A raw send of @len bytes at @frame built by hand, as DPDK's mlx4
 * driver does, as the first WQE of @tx's send queue, rung through the
 * UAR: control segment bytes 0-1 and 8-11 the destination MAC when
 * @name_mac (for the adapter's loopback), else zero; with @vlan, bytes
 * 4-5 a tag to insert and byte 6 the insert bit (1 << 6), the route on
 * which those bytes mean this; byte 7 the size.  Returns what poll_one
 * does, the completion in @wc.
 */
static int post_by_hand(struct raw_qp *tx, const uint8_t *frame, size_t len,
			bool name_mac, uint16_t vlan, struct ibv_wc *wc)
{
	struct mlx4dv_qp dv;
	struct mlx4dv_obj obj = { .qp = { .in = tx->qp, .out = &dv } };
	struct mlx4_wqe_data_seg *d;
	uint32_t flags;
	uint8_t *wqe;

	if (mlx4dv_init_obj(&obj, MLX4DV_OBJ_QP))
		bail("mlx4dv_init_obj");
	wqe = (uint8_t *)dv.buf.buf + dv.sq.offset;
	memset(wqe, 0, 32);
	flags = htobe32(MLX4_WQE_CTRL_CQ_UPDATE | MLX4_WQE_CTRL_SOLICIT);
	memcpy(wqe + 8, &flags, 4);
	if (name_mac) {
		memcpy(wqe + 8, frame, 2);
		memcpy(wqe + 12, frame + 2, 4);
	}
	if (vlan) {
		wqe[4] = vlan >> 8;
		wqe[5] = vlan & 0xff;
		wqe[6] = 1 << 6;
	}
	wqe[7] = 2;				/* 32 bytes */
	d = (void *)(wqe + 16);
	d->byte_count = htobe32(len);
	d->lkey = htobe32(tx->mr->lkey);
	d->addr = htobe64((uintptr_t)frame);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	*(volatile uint32_t *)wqe = htobe32(MLX4_OPCODE_SEND);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	*(volatile uint32_t *)((char *)dv.sdb) = dv.doorbell_qpn;
	return poll_one(tx->cq, wc);
}

/*
 * Write at block @block of @dv's send queue a raw send of @len bytes at
 * @frame in @pieces gather entries (each the next slice, placed from
 * @place on in @tx's buffer, @gap bytes apart), the control segment
 * naming the destination MAC for the adapter's loopback.  The owner word
 * is left for the caller: WQEs written, then handed over.  Returns the
 * WQE's size in bytes.
 */
static size_t write_raw_wqe(struct raw_qp *tx, struct mlx4dv_qp *dv,
			    int block, const uint8_t *frame, size_t len,
			    size_t place, int pieces, size_t gap)
{
	uint8_t *wqe = (uint8_t *)dv->buf.buf + dv->sq.offset +
		       (size_t)block * (1u << dv->sq.wqe_shift);
	size_t size = 16 + 16 * (size_t)pieces, done = 0;
	uint32_t flags = htobe32(MLX4_WQE_CTRL_CQ_UPDATE);

	memset(wqe + 4, 0, size - 4);
	memcpy(wqe + 8, &flags, 4);
	memcpy(wqe + 8, frame, 2);
	memcpy(wqe + 12, frame + 2, 4);
	wqe[7] = size / 16;
	for (int i = 0; i < pieces; i++) {
		struct mlx4_wqe_data_seg *d = (void *)(wqe + 16 + 16 * i);
		size_t n = i + 1 < pieces ? len / pieces : len - done;
		uint8_t *at = tx->buf + RECV_SLOTS * FRAME_MAX + place +
			      i * gap;

		memcpy(at, frame + done, n);
		d->byte_count = htobe32(n);
		d->lkey = htobe32(tx->mr->lkey);
		d->addr = htobe64((uintptr_t)at);
		done += n;
	}
	return size;
}

/* The wqe_index of CQE @n of @cq, a CQ no poll has wrapped. */
static unsigned int cqe_wqe_index(struct mlx4dv_cq *cq, unsigned int n)
{
	uint8_t *cqe = (uint8_t *)cq->buf.buf + (size_t)n * cq->cqe_size;
	struct mlx4_cqe *c = (void *)(cqe + (cq->cqe_size == 64 ? 32 : 0));

	return be16toh(c->wqe_index);
}

/*
 * A WQE larger than the send queue's stride, as DPDK's mlx4 driver
 * writes its LSO WQEs on a 64-byte stride: the device runs it over as
 * many basic blocks as the size in its control segment says, the next
 * WQE begins at the block after, and each CQE names its WQE's first
 * block (mlx4_en's ring works so).  Two WQEs rung at once: a frame
 * gathered from stride / 16 pieces (16 bytes more than a block), then a
 * frame in one block.
 */
static void test_multi_block_wqe(struct raw_qp *rx)
{
	struct raw_qp blk = {};
	struct mlx4dv_qp dv;
	struct mlx4dv_cq dvcq;
	struct mlx4dv_obj obj = { .qp = { .out = &dv }, .cq = { .out = &dvcq } };
	uint8_t big[400], small[120];
	uint8_t *wqe;
	size_t big_len, small_len, size;
	struct ibv_wc wc[2];
	int blocks, n = 0, pieces;

	make_raw_qp(&blk, 1);
	obj.qp.in = blk.qp;
	obj.cq.in = blk.cq;
	if (mlx4dv_init_obj(&obj, MLX4DV_OBJ_QP | MLX4DV_OBJ_CQ))
		bail("mlx4dv_init_obj");
	pieces = (1u << dv.sq.wqe_shift) / 16;
	big_len = build_frame(big, port_mac[2], port_mac[1], 4000, 300, 91,
			      true, false);
	small_len = build_frame(small, port_mac[2], port_mac[1], 4000, 60, 92,
				true, false);
	size = write_raw_wqe(&blk, &dv, 0, big, big_len, 0, pieces, 100);
	blocks = (size + (1u << dv.sq.wqe_shift) - 1) / (1u << dv.sq.wqe_shift);
	write_raw_wqe(&blk, &dv, blocks, small, small_len, 1000, 1, 0);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	wqe = (uint8_t *)dv.buf.buf + dv.sq.offset;
	*(volatile uint32_t *)(wqe + (size_t)blocks * (1u << dv.sq.wqe_shift)) =
		htobe32(MLX4_OPCODE_SEND);
	*(volatile uint32_t *)wqe = htobe32(MLX4_OPCODE_SEND);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	*(volatile uint32_t *)((char *)dv.sdb) = dv.doorbell_qpn;
	for (int i = 0; i < 2 && poll_one(blk.cq, &wc[i]) == 1; i++)
		n += wc[i].status == IBV_WC_SUCCESS;
	check(blocks == 2 && n == 2,
	      "a %zu-byte WQE on a %u-byte stride, then a one-block WQE: both complete (%d of 2)",
	      size, (1u << dv.sq.wqe_shift), n);
	check(n == 2 && cqe_wqe_index(&dvcq, 0) == 0 &&
	      cqe_wqe_index(&dvcq, 1) == (unsigned int)blocks,
	      "their CQEs name their first blocks, 0 and %d (%u, %u)", blocks,
	      cqe_wqe_index(&dvcq, 0), cqe_wqe_index(&dvcq, 1));
	check(got(rx, big, big_len) && got(rx, small, small_len),
	      "both frames arrive, byte for byte, the first gathered from %d pieces",
	      pieces);
	free_raw_qp(&blk);
}

/* A hand-built WQE asking for VLAN insertion. */
static void test_vlan_insert(struct raw_qp *rx)
{
	struct raw_qp tx = {};
	struct ibv_flow *flow = NULL;
	uint8_t *frame, *got;
	struct ibv_wc wc;
	size_t len;
	int slot, n = 0;

	make_raw_qp(&tx, 1);
	{
		struct {
			struct ibv_flow_attr attr;
			struct ibv_flow_spec_eth eth;
		} __attribute__((packed)) rule = {
			.attr = { .type = IBV_FLOW_ATTR_NORMAL,
				  .size = sizeof(rule), .num_of_specs = 1,
				  .port = 2 },
			.eth = { .type = IBV_FLOW_SPEC_ETH,
				 .size = sizeof(struct ibv_flow_spec_eth),
				 .val.vlan_tag = htons(TEST_VLAN & 0xfff),
				 .mask.vlan_tag = htons(0xfff) },
		};

		memcpy(rule.eth.val.dst_mac, port_mac[2], 6);
		memset(rule.eth.mask.dst_mac, 0xff, 6);
		flow = ibv_create_flow(rx->qp, &rule.attr);
	}
	frame = tx.buf + RECV_SLOTS * FRAME_MAX;
	len = build_frame(frame, port_mac[2], port_mac[1], 4000, 200, 77,
			  true, false);
	n = post_by_hand(&tx, frame, len, true, TEST_VLAN, &wc);
	slot = receive(rx, &wc);
	got = slot >= 0 ? rx->buf + slot * FRAME_MAX : NULL;
	check(flow && n == 1 && wc.status == IBV_WC_SUCCESS && got &&
	      wc.byte_len == len + 4 && got[12] == 0x81 && got[13] == 0 &&
	      (got[14] << 8 | got[15]) == TEST_VLAN &&
	      !memcmp(got, frame, 12) && !memcmp(got + 16, frame + 12, len - 12),
	      "a WQE asking for VLAN insertion: the frame arrives tagged (0x%04x), on the rule for its VLAN",
	      TEST_VLAN);
	if (slot >= 0)
		post_recv_slot(rx, slot);
	if (flow)
		ibv_destroy_flow(flow);
	ibv_destroy_qp(tx.qp);
}

/*
 * A TCP segment in IPv4 to port 2, its checksums good or, with @bad, the
 * TCP one wrong: the receiver reports IBV_WC_IP_CSUM_OK for the first
 * only (the adapter checks TCP as it does UDP).
 */
static void test_tcp_checksums(struct raw_qp *tx, struct raw_qp *rx)
{
	uint8_t *f = tx->buf + RECV_SLOTS * FRAME_MAX, *ip = f + 14;
	uint8_t *tcp = ip + 20;
	struct ibv_flow *flow = steer(rx, port_mac[rx->port], 0, 3);
	size_t payload = 100, len = 14 + 20 + 20 + payload;
	struct ibv_wc wc;
	int slot, ok[2] = { 0, 0 };

	for (int bad = 0; bad < 2; bad++) {
		len = build_frame(f, port_mac[rx->port], port_mac[tx->port],
				  4000, payload + 12, 60 + bad, false, false);
		ip[2] = (20 + 20 + payload) >> 8, ip[3] = 20 + 20 + payload;
		ip[9] = 6;
		memset(tcp, 0, 20);
		tcp[0] = 0x30, tcp[1] = 0x39;		/* 12345 to 80 */
		tcp[3] = 80;
		tcp[7] = 1;				/* sequence 1 */
		tcp[12] = 5 << 4;			/* 5 words */
		tcp[13] = 0x18;				/* PSH, ACK */
		tcp[14] = 0xff, tcp[15] = 0xff;		/* window */
		fill_sums(ip, tcp, 6, 20 + payload, 16);
		tcp[17] ^= bad ? 0x5a : 0;
		if (!flow || send_frame(tx, len, false))
			continue;
		slot = receive(rx, &wc);
		ok[bad] = slot >= 0 && wc.byte_len == len &&
			  !!(wc.wc_flags & IBV_WC_IP_CSUM_OK) == !bad;
		if (slot >= 0)
			post_recv_slot(rx, slot);
	}
	check(ok[0], "a TCP segment whose checksums hold: IBV_WC_IP_CSUM_OK");
	check(ok[1], "a TCP checksum that does not hold: no IBV_WC_IP_CSUM_OK");
	if (flow)
		ibv_destroy_flow(flow);
}

/*
 * The rule of issue 29: one ETH specification of destination MAC @dst,
 * source MAC @src under a full mask, and ethertype IPv4.
 */
static struct ibv_flow *eth_rule(struct raw_qp *r, const uint8_t dst[6],
				 const uint8_t src[6])
{
	struct {
		struct ibv_flow_attr attr;
		struct ibv_flow_spec_eth eth;
	} __attribute__((packed)) rule = {
		.attr = { .type = IBV_FLOW_ATTR_NORMAL, .size = sizeof(rule),
			  .num_of_specs = 1, .port = r->port },
		.eth = { .type = IBV_FLOW_SPEC_ETH,
			 .size = sizeof(struct ibv_flow_spec_eth),
			 .val.ether_type = htons(0x0800),
			 .mask.ether_type = 0xffff },
	};

	memcpy(rule.eth.val.dst_mac, dst, 6);
	memset(rule.eth.mask.dst_mac, 0xff, 6);
	memcpy(rule.eth.val.src_mac, src, 6);
	memset(rule.eth.mask.src_mac, 0xff, 6);
	return ibv_create_flow(r->qp, &rule.attr);
}

/*
 * A rule of one ETH specification that also names the source MAC (full
 * mask) and the ethertype: mlx4_ib's parse_flow_attr() gives the
 * hardware rule only the destination MAC and the VLAN (the other masks
 * lie before LAST_ETH_FIELD, so FIELDS_NOT_SUPPORTED() passes them), so
 * the rule is made, its frames arrive, and so do those from another
 * source or of another ethertype.
 */
static void test_eth_fields(struct raw_qp *tx, struct raw_qp *rx)
{
	static const uint8_t stranger[6] = { 0x02, 0x11, 0x22, 0x33, 0x44, 0x55 };
	uint8_t *out = tx->buf + RECV_SLOTS * FRAME_MAX;
	struct ibv_flow *flow;
	int arrived = 0;
	size_t len;

	flow = eth_rule(rx, port_mac[rx->port], port_mac[tx->port]);
	check(flow != NULL, "a rule of destination MAC, source MAC (full mask) and ethertype IPv4 is made (%s)",
	      flow ? "made" : strerror(errno));
	if (!flow)
		return;
	for (int i = 0; i < 3; i++) {
		len = build_frame(out, port_mac[rx->port],
				  i == 1 ? stranger : port_mac[tx->port],
				  6000, 64, 30 + i, true, false);
		if (i == 2)
			out[12] = 0x88, out[13] = 0xb5;	/* local experimental */
		if (!send_frame(tx, len, false) && got(rx, out, len))
			arrived++;
	}
	check(arrived == 3, "its frames arrive byte for byte, and those from another source or of another ethertype too (%d of 3)",
	      arrived);
	ibv_destroy_flow(flow);
}

/*
 * Frames to MACs that no port owns (issue 29).  The switch floods a
 * unicast frame whose destination no port owns, and a port keeps it
 * when one of its rules names the MAC: on another port, or on the
 * sender's own (the adapter's loopback), as with a group MAC (rdma-core's
 * tests steer their raw frames by 01:50:56:19:20:a7 between two QPs of
 * one port).  A frame to a MAC that no rule names reaches no QP.  The
 * switch learns no raw frame's source MAC: a frame from a MAC that a rule
 * on another port names must not pull that MAC's frames away from it
 * (one client would take another's).
 */
static void test_unknown_macs(struct raw_qp *tx, struct raw_qp *rx_a,
			      struct raw_qp *rx_b)
{
	static const uint8_t made_up[6] = { 0x02, 0x5a, 0, 0, 0x29, 1 };
	static const uint8_t made_up2[6] = { 0x02, 0x5a, 0, 0, 0x29, 2 };
	static const uint8_t nobodys[6] = { 0x02, 0x5a, 0, 0, 0x29, 3 };
	static const uint8_t moved[6] = { 0x02, 0x5a, 0, 0, 0x29, 4 };
	static const uint8_t group[6] = { 0x01, 0x50, 0x56, 0x19, 0x20, 0xa7 };
	const uint8_t *src = port_mac[tx->port];
	uint8_t *out = tx->buf + RECV_SLOTS * FRAME_MAX;
	uint8_t *out_b = rx_b->buf + RECV_SLOTS * FRAME_MAX;
	struct ibv_flow *rule[5];
	struct raw_qp lo = {};
	size_t len;

	make_raw_qp(&lo, tx->port);
	rule[0] = eth_rule(rx_b, made_up, src);
	len = build_frame(out, made_up, src, 4000, 64, 50, true, false);
	check(rule[0] && !send_frame(tx, len, false) && got(rx_b, out, len) &&
	      nothing_arrives(rx_a) && nothing_arrives(&lo),
	      "a frame to a MAC no port owns reaches the rule naming it on another port, and no other QP");
	rule[1] = eth_rule(&lo, made_up2, src);
	len = build_frame(out, made_up2, src, 4000, 64, 51, true, false);
	check(rule[1] && !send_frame(tx, len, false) && got(&lo, out, len) &&
	      nothing_arrives(rx_b),
	      "one whose rule is on the sender's own port reaches it there (the adapter's loopback)");
	rule[2] = eth_rule(&lo, group, src);
	len = build_frame(out, group, src, 4000, 64, 52, true, false);
	check(rule[2] && !send_frame(tx, len, false) && got(&lo, out, len) &&
	      nothing_arrives(rx_a) && nothing_arrives(rx_b),
	      "so does a frame to a group MAC that a rule of the sender's port names");
	len = build_frame(out, nobodys, src, 4000, 64, 53, true, false);
	check(!send_frame(tx, len, false) && nothing_arrives(&lo) &&
	      nothing_arrives(rx_a) && nothing_arrives(rx_b),
	      "a frame to a MAC that no rule names reaches no QP");

	/* Port 1 sends from the MAC that rules on both ports name. */
	rule[3] = eth_rule(&lo, moved, src);
	rule[4] = eth_rule(rx_a, moved, src);
	len = build_frame(out, nobodys, moved, 4000, 64, 54, true, false);
	check(rule[3] && rule[4] && !send_frame(tx, len, false),
	      "port 1 sends a frame from a made-up MAC that a rule on port 2 names");
	len = build_frame(out_b, moved, src, 4000, 64, 55, true, false);
	check(!send_frame(rx_b, len, false) && got(rx_a, out_b, len) &&
	      got(&lo, out_b, len),
	      "frames to that MAC still reach port 2's rule (the switch learnt nothing), and port 1's");
	for (int i = 0; i < 5; i++)
		if (rule[i])
			ibv_destroy_flow(rule[i]);
	ibv_destroy_qp(lo.qp);
	ibv_dereg_mr(lo.mr);
	ibv_destroy_cq(lo.cq);
	free(lo.buf);
}

/*
 * A WQE whose control segment leaves the destination MAC zero asks for
 * no loopback (DPDK's mlx4 PMD on a physical function, mlx4_en without
 * its loopback flag): the frame leaves, reaching a rule on the other
 * port, but not one on the sender's own port, and it is no breach of
 * the protocol (mlx4sim run fails this test on one).
 */
static void test_zero_ctrl_mac(struct raw_qp *rx_b)
{
	static const uint8_t made_up[6] = { 0x02, 0x5a, 0, 0, 0x29, 5 };
	struct raw_qp tx = {}, lo = {};
	struct ibv_flow *rule[2];
	struct ibv_wc wc;
	uint8_t *frame;
	size_t len;
	int n;

	make_raw_qp(&tx, 1);
	make_raw_qp(&lo, 1);
	rule[0] = eth_rule(&lo, made_up, port_mac[1]);
	rule[1] = eth_rule(rx_b, made_up, port_mac[1]);
	frame = tx.buf + RECV_SLOTS * FRAME_MAX;
	len = build_frame(frame, made_up, port_mac[1], 4000, 64, 56, true,
			  false);
	n = post_by_hand(&tx, frame, len, false, 0, &wc);
	check(rule[0] && rule[1] && n == 1 && wc.status == IBV_WC_SUCCESS &&
	      got(rx_b, frame, len) && nothing_arrives(&lo),
	      "a WQE with no MAC in its control segment: its frame reaches port 2's rule, not the sender's port (no loopback)");
	for (int i = 0; i < 2; i++)
		if (rule[i])
			ibv_destroy_flow(rule[i]);
	free_raw_qp(&lo);
	free_raw_qp(&tx);
}

/* ------------------------------------------------------------------ */
/* ibv_wr_* on a raw packet QP; IBV_WC_IP_CSUM_OK on an extended CQ    */
/* ------------------------------------------------------------------ */


/*
 * Four frames to port 2's MAC and UDP port 4000 (@rx's rule), one batch
 * of ibv_wr_*, each request's frame from another data setter: one
 * gather entry; two (the headers, then the payload), with the checksums
 * left to the adapter; inline; inline from two buffers.  They arrive in
 * order, byte for byte.  A request no data setter gave its frame is
 * refused by wr_complete().  The distribution's provider has no
 * ibv_wr_*: it refuses the QP.
 */
static void test_wr_raw(struct raw_qp *rx, bool project)
{
	struct ibv_qp_init_attr_ex init = {
		.qp_type = IBV_QPT_RAW_PACKET,
		.cap = { .max_send_wr = 16, .max_recv_wr = 1,
			 .max_send_sge = 2, .max_recv_sge = 1,
			 .max_inline_data = 128 },
		.comp_mask = IBV_QP_INIT_ATTR_PD |
			     IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = pd, .send_ops_flags = IBV_QP_EX_WITH_SEND,
	};
	static uint8_t f[4][FRAME_MAX], want[4][FRAME_MAX];
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	size_t len[4], wrong = 0;
	struct ibv_qp_ex *x;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	struct ibv_wc wc;
	int ret;

	init.send_cq = init.recv_cq = cq;
	qp = cq ? ibv_create_qp_ex(ctx, &init) : NULL;
	x = qp ? ibv_qp_to_qp_ex(qp) : NULL;
	if (!project) {
		check(!x, "a raw QP for ibv_wr_*: %s (the distribution's provider has none)",
		      x ? "made" : strerror(errno));
		goto out;
	}
	mr = ibv_reg_mr(pd, f, sizeof(f), 0);
	if (!x || !mr || raw_qp_up(qp, 1))
		bail("a raw QP for ibv_wr_*");
	for (int i = 0; i < 4; i++) {
		len[i] = build_frame(want[i], port_mac[2], port_mac[1], 4000,
				     i < 2 ? 300 + i : 40 + i, 90 + i, true,
				     false);
		build_frame(f[i], port_mac[2], port_mac[1], 4000,
			    i < 2 ? 300 + i : 40 + i, 90 + i, i != 1, false);
	}
	ibv_wr_start(x);
	x->wr_id = 0x5a0, x->wr_flags = 0;
	ibv_wr_send(x);
	ibv_wr_set_sge(x, mr->lkey, (uintptr_t)f[0], len[0]);
	x->wr_id = 0x5a1, x->wr_flags = IBV_SEND_IP_CSUM;
	ibv_wr_send(x);
	ibv_wr_set_sge_list(x, 2, (struct ibv_sge[]){
		{ (uintptr_t)f[1], 42, mr->lkey },
		{ (uintptr_t)f[1] + 42, len[1] - 42, mr->lkey } });
	x->wr_id = 0x5a2, x->wr_flags = IBV_SEND_INLINE;
	ibv_wr_send(x);
	ibv_wr_set_inline_data(x, f[2], len[2]);
	x->wr_id = 0x5a3, x->wr_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED;
	ibv_wr_send(x);
	ibv_wr_set_inline_data_list(x, 2, (struct ibv_data_buf[]){
		{ f[3], 14 }, { f[3] + 14, len[3] - 14 } });
	ret = ibv_wr_complete(x);
	if (!ret)
		ret = poll_one(cq, &wc) == 1 && !wc.status &&
		      wc.wr_id == 0x5a3 ? 0 : EIO;
	check(!ret,
	      "ibv_wr_* on a raw QP: a batch of 4 frames, the last signalled, completes (%s)",
	      strerror(ret));
	for (int i = 0; i < 4; i++)
		wrong += !got(rx, want[i], len[i]);
	check(!wrong && nothing_arrives(rx),
	      "they arrive in order, byte for byte, the checksums of the two-entry one filled in (%zu wrong)",
	      wrong);

	ibv_wr_start(x);
	x->wr_id = 0x5a4, x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(x);
	ret = ibv_wr_complete(x);
	check(ret == EINVAL && nothing_arrives(rx) &&
	      ibv_poll_cq(cq, 1, &wc) == 0,
	      "a raw request without a frame: wr_complete %d (%s), nothing sent",
	      ret, strerror(ret));
	ibv_dereg_mr(mr);
out:
	if (qp)
		ibv_destroy_qp(qp);
	if (cq)
		ibv_destroy_cq(cq);
}

/* Up to @n completions of @cq into flags[] and lens[], within 10 s. */
static int poll_ex(struct ibv_cq_ex *cq, int n, unsigned int *flags,
		   uint32_t *lens)
{
	struct ibv_poll_cq_attr pattr = {};
	uint64_t end = now_ms() + 10000;
	int got_n = 0;

	while (got_n < n && now_ms() < end) {
		if (ibv_start_poll(cq, &pattr))
			continue;
		do {
			flags[got_n] = cq->status == IBV_WC_SUCCESS ?
				       ibv_wc_read_wc_flags(cq) : ~0u;
			lens[got_n++] = ibv_wc_read_byte_len(cq);
		} while (got_n < n && !ibv_next_poll(cq));
		ibv_end_poll(cq);
	}
	return got_n;
}

/*
 * The checksum verdict through an extended CQ's read_wc_flags: a frame
 * whose checksums the adapter filled in is IBV_WC_IP_CSUM_OK there, one
 * with a wrong UDP checksum is not.
 */
static void test_csum_cq_ex(struct raw_qp *tx)
{
	struct ibv_cq_init_attr_ex cattr = {
		.cqe = 2 * RECV_SLOTS, .wc_flags = IBV_WC_EX_WITH_BYTE_LEN,
	};
	struct ibv_cq_ex *cq = ibv_create_cq_ex(ctx, &cattr);
	uint8_t *out = tx->buf + RECV_SLOTS * FRAME_MAX;
	struct raw_qp rx = { .cq = cq ? ibv_cq_ex_to_cq(cq) : NULL };
	struct ibv_flow *flow;
	unsigned int flags[2] = { 0, 0 };
	uint32_t lens[2] = { 0, 0 };
	size_t len[2];
	int n;

	if (!cq)
		bail("ibv_create_cq_ex");
	make_raw_qp(&rx, 2);
	flow = steer(&rx, port_mac[2], 4100, 0);
	len[0] = build_frame(out, port_mac[2], port_mac[1], 4100, 200, 21,
			     false, false);
	n = flow && !send_frame(tx, len[0], true);
	len[1] = build_frame(out, port_mac[2], port_mac[1], 4100, 200, 22,
			     false, true);
	n += !send_frame(tx, len[1], false);
	n = n == 2 ? poll_ex(cq, 2, flags, lens) : 0;
	check(n == 2 && lens[0] == len[0] && lens[1] == len[1],
	      "two frames through an extended CQ (%d, %u and %u bytes)", n,
	      lens[0], lens[1]);
	check(flags[0] != ~0u && (flags[0] & IBV_WC_IP_CSUM_OK),
	      "read_wc_flags: IBV_WC_IP_CSUM_OK for the frame the adapter summed (0x%x)",
	      flags[0]);
	check(flags[1] != ~0u && !(flags[1] & IBV_WC_IP_CSUM_OK),
	      "and not for one with a wrong UDP checksum (0x%x)", flags[1]);
	if (flow)
		ibv_destroy_flow(flow);
	ibv_destroy_qp(rx.qp);
	ibv_dereg_mr(rx.mr);
	ibv_destroy_cq(rx.cq);
	free(rx.buf);
}

/* ------------------------------------------------------------------ */
/* A WQ through RESET and back; a WQ on a parent domain                */
/* ------------------------------------------------------------------ */

/* An RSS QP on port 2 spreading over @w alone, fed by the rule for UDP @udp. */
struct one_wq_rss {
	struct ibv_rwq_ind_table *tbl;
	struct raw_qp rss;
	struct ibv_flow *flow;
};

static bool one_wq_rss_up(struct one_wq_rss *o, struct rss_wq *w, uint16_t udp)
{
	struct ibv_rwq_ind_table_init_attr tbl_attr = {
		.log_ind_tbl_size = 0, .ind_tbl = &w->wq,
	};
	struct ibv_qp_init_attr_ex qp_attr = {
		.qp_type = IBV_QPT_RAW_PACKET,
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_IND_TABLE |
			     IBV_QP_INIT_ATTR_RX_HASH,
		.pd = pd,
		.rx_hash_conf = {
			.rx_hash_function = IBV_RX_HASH_FUNC_TOEPLITZ,
			.rx_hash_key_len = sizeof(ms_key),
			.rx_hash_key = (uint8_t *)ms_key,
			.rx_hash_fields_mask = IBV_RX_HASH_SRC_IPV4 |
					       IBV_RX_HASH_DST_IPV4,
		},
	};
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_INIT, .port_num = 2 };

	o->rss.port = 2;
	o->tbl = ibv_create_rwq_ind_table(ctx, &tbl_attr);
	qp_attr.rwq_ind_tbl = o->tbl;
	o->rss.qp = o->tbl ? ibv_create_qp_ex(ctx, &qp_attr) : NULL;
	if (!o->rss.qp || ibv_modify_qp(o->rss.qp, &attr,
					IBV_QP_STATE | IBV_QP_PORT))
		return false;
	attr.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(o->rss.qp, &attr, IBV_QP_STATE))
		return false;
	o->flow = steer(&o->rss, port_mac[2], udp, 0);
	return o->flow;
}

static void one_wq_rss_down(struct one_wq_rss *o)
{
	if (o->flow)
		ibv_destroy_flow(o->flow);
	if (o->rss.qp)
		ibv_destroy_qp(o->rss.qp);
	if (o->tbl)
		ibv_destroy_rwq_ind_table(o->tbl);
}

/* @n frames from @tx to UDP @udp, each arriving whole on @w: how many did. */
static int frames_to_wq(struct raw_qp *tx, struct rss_wq *w, uint16_t udp,
			int n, uint32_t tag)
{
	uint8_t *out = tx->buf + RECV_SLOTS * FRAME_MAX;
	struct ibv_wc wc;
	int ok = 0;

	for (int i = 0; i < n; i++) {
		size_t len = build_frame(out, port_mac[2], port_mac[1], udp,
					 100 + i, tag + i, true, false);

		if (send_frame(tx, len, false) || poll_one(w->cq, &wc) != 1 ||
		    wc.status != IBV_WC_SUCCESS)
			continue;
		ok += wc.byte_len == len &&
		      !memcmp(w->buf + wc.wr_id * FRAME_MAX, out, len);
		post_wq_slot(w, wc.wr_id);
	}
	return ok;
}

/* The WQ's CQ has a completion, waited for by its event, not polled. */
static bool completion_waits(struct ibv_comp_channel *ch, struct ibv_cq *cq)
{
	struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
	struct ibv_cq *ev_cq;
	void *ev_ctx;

	if (poll(&pfd, 1, 10000) != 1 || ibv_get_cq_event(ch, &ev_cq, &ev_ctx))
		return false;
	ibv_ack_cq_events(ev_cq, 1);
	return ev_cq == cq;
}

/*
 * A WQ under an RSS QP, through RESET and back to RDY: frames arrive
 * before; a completion left unpolled goes with RESET (the provider
 * cleans the CQ), as do the receives still posted; after RDY the WQ
 * takes its max_wr receives afresh and frames arrive again.
 */
static void test_wq_reset(struct raw_qp *tx)
{
	struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
	struct rss_wq w = { .cq = ch ? ibv_create_cq(ctx, 2 * RSS_SLOTS,
						     NULL, ch, 0) : NULL };
	struct ibv_wq_attr attr = { .attr_mask = IBV_WQ_ATTR_STATE };
	struct one_wq_rss o = {};
	struct ibv_recv_wr *bad;
	struct ibv_wc wc;
	int posted = 0;

	make_rss_wq(&w, pd);
	check(one_wq_rss_up(&o, &w, 8200) && frames_to_wq(tx, &w, 8200, 3, 30) == 3,
	      "an RSS QP over one WQ: 3 frames arrive");
	ibv_req_notify_cq(w.cq, 0);
	{
		uint8_t *out = tx->buf + RECV_SLOTS * FRAME_MAX;
		size_t len = build_frame(out, port_mac[2], port_mac[1], 8200,
					 64, 33, true, false);

		check(!send_frame(tx, len, false) && completion_waits(ch, w.cq),
		      "a fourth arrives, its completion left unpolled");
	}
	attr.wq_state = IBV_WQS_RESET;
	check(!ibv_modify_wq(w.wq, &attr) && ibv_poll_cq(w.cq, 1, &wc) == 0,
	      "the WQ to RESET: its completion goes with it");
	attr.wq_state = IBV_WQS_RDY;
	check(!ibv_modify_wq(w.wq, &attr), "and back to RDY");
	for (int i = 0; i < RSS_SLOTS; i++) {
		struct ibv_sge sge = { (uintptr_t)(w.buf + i * FRAME_MAX),
				       FRAME_MAX, w.mr->lkey };
		struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &sge,
					  .num_sge = 1 };

		posted += !ibv_post_wq_recv(w.wq, &wr, &bad);
	}
	check(posted == RSS_SLOTS, "it takes %d receives afresh (%d)",
	      RSS_SLOTS, posted);
	check(frames_to_wq(tx, &w, 8200, 3, 40) == 3 &&
	      ibv_poll_cq(w.cq, 1, &wc) == 0,
	      "3 frames arrive after RESET and RDY, and nothing more");
	one_wq_rss_down(&o);
	ibv_destroy_wq(w.wq);
	ibv_destroy_cq(w.cq);
	ibv_dereg_mr(w.mr);
	free(w.buf);
	ibv_destroy_comp_channel(ch);
}

/* What a parent domain's allocator was asked for, by resource type. */
struct wq_ledger {
	int allocs, frees, rwq;
};

static void *ledger_alloc(struct ibv_pd *pd, void *pd_context, size_t size,
			  size_t alignment, uint64_t resource_type)
{
	struct wq_ledger *l = pd_context;
	void *p;

	l->allocs++;
	l->rwq += resource_type == MLX4DV_RES_TYPE_RWQ;
	return posix_memalign(&p, alignment, size) ? NULL : p;
}

static void ledger_free(struct ibv_pd *pd, void *pd_context, void *ptr,
			uint64_t resource_type)
{
	struct wq_ledger *l = pd_context;

	l->frees++;
	free(ptr);
}

/*
 * A WQ made on a parent domain with allocators (libmlx4): its ring comes
 * from the application, asked for as an RWQ; the domain is busy while the
 * WQ lives; frames arrive on it under an RSS QP; destroyed, it gives the
 * memory back.  The distribution's provider has no parent domains.
 */
static void test_wq_parent_domain(struct raw_qp *tx, bool project)
{
	struct wq_ledger l = {};
	struct ibv_parent_domain_init_attr pattr = {
		.pd = pd, .comp_mask = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS |
				       IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT,
		.alloc = ledger_alloc, .free = ledger_free, .pd_context = &l,
	};
	struct ibv_pd *domain = ibv_alloc_parent_domain(ctx, &pattr);
	struct rss_wq w = {};
	struct one_wq_rss o = {};

	if (!project) {
		check(!domain && errno == EOPNOTSUPP,
		      "a parent domain: %s (the distribution's provider has none)",
		      domain ? "made" : strerror(errno));
		if (domain)
			ibv_dealloc_pd(domain);
		return;
	}
	if (!domain)
		bail("ibv_alloc_parent_domain");
	make_rss_wq(&w, domain);
	check(l.rwq == 1 && l.allocs >= 1,
	      "a WQ on a parent domain: its ring from the domain's allocator, as an RWQ (%d RWQ of %d)",
	      l.rwq, l.allocs);
	check(ibv_dealloc_pd(domain) == EBUSY, "the domain is busy while the WQ lives");
	check(one_wq_rss_up(&o, &w, 8300) && frames_to_wq(tx, &w, 8300, 3, 50) == 3,
	      "3 frames arrive on it under an RSS QP");
	one_wq_rss_down(&o);
	check(!ibv_destroy_wq(w.wq), "destroy the WQ");
	check(l.frees == l.allocs,
	      "destroyed, the WQ gives the domain's memory back (%d of %d)",
	      l.frees, l.allocs);
	check(!ibv_dealloc_pd(domain), "then the domain goes");
	ibv_destroy_cq(w.cq);
	ibv_dereg_mr(w.mr);
	free(w.buf);
}

/* ------------------------------------------------------------------ */
/* The cases                                                           */
/* ------------------------------------------------------------------ */

/*
 * main()'s set-up, which every case shares: a sender on port 1, two
 * receivers on port 2 and the rules taking port 2's MAC with UDP port
 * 4000 to rx_a, 5000 to rx_b.  A case gives back the receive slots it
 * took and takes down the rules it made.
 */
static struct raw_qp tx, rx_a, rx_b;

/*
 * Which provider runs the program (project, system), for what the two
 * do differently; common (or none): only what both do alike, as
 * tests/verbs/difftrace.tap compares them.
 */
static const char *provider = "common";

/* The frame tx sends from. */
static uint8_t *tx_frame(void)
{
	return tx.buf + RECV_SLOTS * FRAME_MAX;
}

/* Each frame reaches the QP of its UDP port, whole. */
static void frames_by_udp_port(void)
{
	uint8_t *out = tx_frame(), expect[FRAME_MAX];
	struct ibv_wc wc;
	int slot, wrong = 0;
	size_t len;

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
}

static void port_down(void)
{
	test_port_down(&tx, &rx_a);
}

static void unmatched_frames(void)
{
	uint8_t *out = tx_frame();
	size_t len;

	len = build_frame(out, port_mac[2], port_mac[1], 6000, 64, 99, true,
			  false);
	check(!send_frame(&tx, len, false) && nothing_arrives(&rx_a) &&
	      nothing_arrives(&rx_b),
	      "a frame no rule matches reaches no QP (the send completes)");
	len = build_frame(out, port_mac[1], port_mac[1], 4000, 64, 98, true,
			  false);
	check(!send_frame(&tx, len, false) && nothing_arrives(&rx_a),
	      "a frame to another port's MAC does not reach port 2's rules");
}

/* What mlx4_ib cannot steer by: refused. */
static void ipv6_rule(void)
{
	struct {
		struct ibv_flow_attr attr;
		struct ibv_flow_spec_ipv6 ipv6;
	} __attribute__((packed)) rule = {
		.attr = { .type = IBV_FLOW_ATTR_NORMAL,
			  .size = sizeof(rule), .num_of_specs = 1,
			  .port = 2 },
		.ipv6 = { .type = IBV_FLOW_SPEC_IPV6,
			  .size = sizeof(struct ibv_flow_spec_ipv6) },
	};
	struct ibv_flow *f = ibv_create_flow(rx_a.qp, &rule.attr);

	check(!f && errno == EINVAL,
	      "a rule with an IPv6 specification: EINVAL (%s)",
	      f ? "made" : strerror(errno));
	if (f)
		ibv_destroy_flow(f);
}

/* Priorities: a rule of a lower value wins over a matching one. */
static void priorities(void)
{
	struct ibv_flow *any = steer(&rx_b, port_mac[2], 0, 2);
	struct ibv_flow *high = steer(&rx_b, port_mac[2], 4000, 0);
	uint8_t *out = tx_frame();
	struct ibv_wc wc;
	int slot = -1;
	size_t len;

	len = build_frame(out, port_mac[2], port_mac[1], 4000, 100, 7, true,
			  false);
	check(any && high && !send_frame(&tx, len, false) &&
	      (slot = receive(&rx_b, &wc)) >= 0 && nothing_arrives(&rx_a),
	      "UDP 4000 with a priority 0 rule to QP B: B gets it, A (priority 1) not");
	if (slot >= 0)
		post_recv_slot(&rx_b, slot);
	if (high)
		ibv_destroy_flow(high);
	slot = -1;
	len = build_frame(out, port_mac[2], port_mac[1], 7000, 100, 8, true,
			  false);
	check(!send_frame(&tx, len, false) &&
	      (slot = receive(&rx_b, &wc)) >= 0 && nothing_arrives(&rx_a),
	      "UDP 7000: only the MAC-only rule (priority 2) matches, QP B");
	if (slot >= 0)
		post_recv_slot(&rx_b, slot);
	if (any)
		ibv_destroy_flow(any);
}

static void vlan_insert(void)
{
	test_vlan_insert(&rx_b);
}

static void eth_fields(void)
{
	test_eth_fields(&tx, &rx_b);
}

static void unknown_macs(void)
{
	test_unknown_macs(&tx, &rx_a, &rx_b);
}

static void zero_ctrl_mac(void)
{
	test_zero_ctrl_mac(&rx_b);
}

static void multi_block_wqe(void)
{
	test_multi_block_wqe(&rx_a);
}

/* A frame the adapter checksums (IBV_SEND_IP_CSUM) arrives as computed here. */
static void ip_checksum_offload(void)
{
	uint8_t *out = tx_frame(), expect[FRAME_MAX], *f;
	struct ibv_wc wc;
	int slot = -1;
	size_t len;

	len = build_frame(out, port_mac[2], port_mac[1], 4000, 333, 11, false,
			  false);
	check(!send_frame(&tx, len, true) &&
	      (slot = receive(&rx_a, &wc)) >= 0 &&
	      (wc.wc_flags & IBV_WC_IP_CSUM_OK),
	      "IBV_SEND_IP_CSUM: the adapter fills in the checksums, the receiver reports IBV_WC_IP_CSUM_OK");
	if (slot < 0)
		return;
	f = rx_a.buf + slot * FRAME_MAX;
	build_frame(expect, port_mac[2], port_mac[1], 4000, 333, 11, true,
		    false);
	check(!memcmp(f, expect, len),
	      "the frame arrives with the IPv4 header and UDP checksums computed here (%02x%02x %02x%02x, want %02x%02x %02x%02x)",
	      f[24], f[25], f[40], f[41], expect[24], expect[25], expect[40],
	      expect[41]);
	post_recv_slot(&rx_a, slot);
}

/* The receiver's verdict on checksums that do not hold: not IP_CSUM_OK. */
static void bad_ip_checksums(void)
{
	uint8_t *out = tx_frame();
	struct ibv_wc wc;
	int slot = -1;
	size_t len;

	len = build_frame(out, port_mac[2], port_mac[1], 4000, 333, 12, false,
			  true);
	check(!send_frame(&tx, len, false) &&
	      (slot = receive(&rx_a, &wc)) >= 0 &&
	      !(wc.wc_flags & IBV_WC_IP_CSUM_OK),
	      "a UDP checksum that does not hold: no IBV_WC_IP_CSUM_OK");
	if (slot >= 0)
		post_recv_slot(&rx_a, slot);
	slot = -1;
	len = build_frame(out, port_mac[2], port_mac[1], 4000, 333, 13, true,
			  false);
	out[24] ^= 0x5a;		/* the IPv4 header's checksum */
	check(!send_frame(&tx, len, false) &&
	      (slot = receive(&rx_a, &wc)) >= 0 &&
	      !(wc.wc_flags & IBV_WC_IP_CSUM_OK),
	      "an IPv4 header checksum that does not hold (UDP's does): no IBV_WC_IP_CSUM_OK");
	if (slot >= 0)
		post_recv_slot(&rx_a, slot);
}

static void tcp_checksums(void)
{
	test_tcp_checksums(&tx, &rx_b);
}

static void flow_refusals(void)
{
	test_flow_refusals(&rx_b);
}

static void default_rules(void)
{
	test_default_rules(&tx, &rx_a);
}

static void sniffer_rules(void)
{
	test_sniffer_rules(&tx, &rx_a);
}

static void rss(void)
{
	test_rss(&tx);
}

static void wq_scatter_fcs(void)
{
	test_wq_scatter_fcs(&tx);
}

/*
 * Whether a case where the two providers differ runs: not in the
 * differential trace's run (common); one named there says why it
 * prints nothing.
 */
static bool providers_case(const char *name, bool project_only)
{
	bool runs = project_only ? !strcmp(provider, "project") :
				   strcmp(provider, "common") != 0;

	if (!runs && cases_chosen)
		printf("# %s: with %s only\n", name,
		       project_only ? "project (libmlx4)" : "project or system");
	return runs;
}

static bool project(void)
{
	return !strcmp(provider, "project");
}

static void lso(void)
{
	if (providers_case("lso", false))
		test_lso(&rx_a, project());
}

static void lso_shapes(void)
{
	if (providers_case("lso_shapes", true))
		test_lso_shapes(&rx_a);
}

static void wr_raw(void)
{
	if (providers_case("wr_raw", false))
		test_wr_raw(&rx_a, project());
}

static void wq_parent_domain(void)
{
	if (providers_case("wq_parent_domain", false))
		test_wq_parent_domain(&tx, project());
}

/* Alike in both providers, but new to the differential trace. */
static void csum_cq_ex(void)
{
	if (providers_case("csum_cq_ex", false))
		test_csum_cq_ex(&tx);
}

static void wq_reset(void)
{
	if (providers_case("wq_reset", false))
		test_wq_reset(&tx);
}

/* The cases, in the order a full run takes them. */
static const struct test_case cases[] = {
	{ "frames_by_udp_port", frames_by_udp_port,
	  "40 frames, each on the QP its UDP port's rule names, byte for byte" },
	{ "port_down", port_down,
	  "a port down carries nothing; up, its frames arrive again" },
	{ "unmatched_frames", unmatched_frames,
	  "frames no rule of the port matches reach no QP" },
	{ "ipv6_rule", ipv6_rule, "a rule with an IPv6 specification: EINVAL" },
	{ "priorities", priorities,
	  "a rule of a lower priority value wins over one that also matches" },
	{ "vlan_insert", vlan_insert,
	  "a VLAN tag the adapter inserts in a WQE built by hand (mlx4dv)" },
	{ "eth_fields", eth_fields,
	  "a rule naming source MAC and ethertype steers by destination and VLAN" },
	{ "unknown_macs", unknown_macs,
	  "frames to MACs no port owns: flooded, kept where a rule names them" },
	{ "zero_ctrl_mac", zero_ctrl_mac,
	  "a WQE with no MAC in its control segment: no loopback, no breach" },
	{ "multi_block_wqe", multi_block_wqe,
	  "a WQE over two blocks of a 64-byte stride, then a one-block WQE" },
	{ "ip_checksum_offload", ip_checksum_offload,
	  "IBV_SEND_IP_CSUM: the adapter's IPv4 and UDP checksums" },
	{ "bad_ip_checksums", bad_ip_checksums,
	  "checksums that do not hold: no IBV_WC_IP_CSUM_OK" },
	{ "tcp_checksums", tcp_checksums,
	  "TCP in IPv4: IBV_WC_IP_CSUM_OK for good checksums only" },
	{ "flow_refusals", flow_refusals,
	  "rule types and flags mlx4_ib and uverbs refuse" },
	{ "default_rules", default_rules,
	  "MC_DEFAULT and ALL_DEFAULT rules take what no other rule takes" },
	{ "sniffer_rules", sniffer_rules, "SNIFFER and DONT_TRAP rules get copies; the steered frame still arrives" },
	{ "rss", rss,
	  "an RSS QP over four WQs: each flow on the WQ its Toeplitz hash names" },
	{ "rss_wq_states", test_rss_wq_states,
	  "a WQ's state reaches the device only under an RSS QP, on its port" },
	{ "wq_scatter_fcs", wq_scatter_fcs,
	  "IBV_WQ_FLAGS_SCATTER_FCS: each frame with its FCS; other flags refused" },
	{ "lso", lso, "an LSO send leaves as TCP segments (project or system)" },
	{ "lso_shapes", lso_shapes,
	  "LSO from several gather entries, headers at the QP's limit (project)" },
	{ "wr_raw", wr_raw, "ibv_wr_* on a raw packet QP (project or system)" },
	{ "wq_parent_domain", wq_parent_domain,
	  "a WQ on a parent domain with allocators (project or system)" },
	{ "csum_cq_ex", csum_cq_ex,
	  "the checksum verdict through an extended CQ (project or system)" },
	{ "wq_reset", wq_reset, "a WQ through RESET and back (project or system)" },
};

/* Usage: raw-eth [project|system|common] [--list | NAME...] */
int main(int argc, char **argv)
{
	struct ibv_flow *to_a, *to_b;
	int first = 1, ret;

	if (argc > 1 && (!strcmp(argv[1], "project") ||
			 !strcmp(argv[1], "system") ||
			 !strcmp(argv[1], "common")))
		provider = argv[first++];
	ret = cases_select(cases, CASES_N(cases), argc, argv, first);
	if (ret >= 0)
		return ret;

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
	to_a = steer(&rx_a, port_mac[2], 4000, 1);
	to_b = steer(&rx_b, port_mac[2], 5000, 1);
	check(to_a && to_b, "flow rules: port 2's MAC with UDP port 4000 to QP A, 5000 to QP B (%s)",
	      to_a && to_b ? "made" : strerror(errno));
	if (!to_a || !to_b)
		return tap_finish();

	cases_run(cases, CASES_N(cases));

	check(ibv_destroy_qp(rx_a.qp) == EBUSY,
	      "destroying a QP a flow rule steers to: EBUSY");
	check(!ibv_destroy_flow(to_a) && !ibv_destroy_flow(to_b),
	      "the rules go");
	check(!ibv_destroy_qp(rx_a.qp) && !ibv_destroy_qp(rx_b.qp) &&
	      !ibv_destroy_qp(tx.qp), "then the QPs");
	return tap_finish();
}
