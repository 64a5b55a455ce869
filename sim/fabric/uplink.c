/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The uplink (--uplink IFACE): the Ethernet ports on a real wire.
 *
 * A packet socket on IFACE, opened in the namespace `mlx4sim run` was
 * started in before the daemon makes its own, carries two kinds of frame.
 * RoCE frames (v2: UDP 4791; v1: EtherType 0x8915) are the adapter's: those it sends to a MAC no
 * port of the run owns leave here, and those that arrive for a port's MAC
 * go to the adapter's wire engine (adapter/wire-*.c), never to a kernel,
 * which would answer them with ICMP port unreachable.  Every other frame
 * (ARP, neighbour discovery, the TCP connections programs make to
 * exchange their addresses) is the kernels': the daemon's namespace gets
 * one more port on its switch, a veth pair whose far end only the daemon
 * holds, and the daemon copies frames between that end and IFACE.
 *
 * Runs that share a segment take distinct addresses: --host-id N moves
 * the ports' IPv4 and IPv6 host numbers, MACs and GUIDs; without it, a
 * run with an uplink picks N at random and probes the IPv4 addresses that
 * gives with ARP (RFC 5227: a probe has sender address 0), picking again
 * while anyone answers or probes for them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <linux/ethtool.h>
#include <linux/if_packet.h>
#include <linux/sockios.h>
#include <linux/if_ether.h>
#include <linux/neighbour.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#include "fabric.h"
#include "roce.h"

#define INNER_SWITCH_END	"upl0"	/* the switch's port */
#define INNER_DAEMON_END	"upl1"	/* the daemon's end */
#define FRAMES_A_PASS		256
#define DRAIN_BATCH		32
#define SEND_BATCH		64
#define HELD_MAX		64
#define REORDER_MAX_NS		(10 * 1000000ULL)
#define PROBES			3
#define PROBE_GAP_NS		(100 * 1000000ULL)

static int wire_fd = -1, inner_fd = -1;
static int wire_ifindex;
static uint8_t wire_mac[6];
static uplink_rx_fn *receiver, *raw_receiver;
static bool resolving;		/* in uplink_neigh(): a command waits */

/* Frames a fault holds back (`mlx4sim fault delay`, `reorder`). */
static struct held_frame {
	bool used, until_next;
	uint64_t due;
	size_t len;
	uint8_t frame[ROCE_MAX_FRAME];
} held[HELD_MAX];

bool uplink_active(void)
{
	return wire_fd >= 0;
}

void uplink_set_receivers(uplink_rx_fn *roce, uplink_rx_fn *raw)
{
	receiver = roce;
	raw_receiver = raw;
}

int uplink_fds(int fds[2])
{
	fds[0] = wire_fd;
	fds[1] = inner_fd;
	return wire_fd >= 0 ? 2 : 0;
}

/* A packet socket on @ifindex taking every frame, the others' too. */
static int packet_socket(int ifindex)
{
	struct sockaddr_ll sll = {
		.sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_ALL),
		.sll_ifindex = ifindex,
	};
	struct packet_mreq mr = { .mr_ifindex = ifindex,
				  .mr_type = PACKET_MR_PROMISC };
	int one = 1, bufsize = 16 << 20, fd;

	fd = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC,
		    htons(ETH_P_ALL));
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sll, sizeof(sll)) ||
	    setsockopt(fd, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &mr, sizeof(mr))) {
		int err = -errno;

		close(fd);
		return err;
	}
	/* A window of every QP's packets must fit while the daemon works. */
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &bufsize, sizeof(bufsize)))
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bufsize, sizeof(bufsize));
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &bufsize, sizeof(bufsize)))
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bufsize, sizeof(bufsize));
	/* What we send ourselves is not to be taken back (Linux 4.20). */
	setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one));
	return fd;
}

static int ether_count(void)
{
	int n = 0;

	for (int p = 0; p < sim.opt.nports; p++)
		n += sim.opt.link_layer[p] == IBV_LINK_LAYER_ETHERNET;
	return n * sim.opt.nhcas;
}

static void arp_probe(uint32_t ip)
{
	uint8_t f[42] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	uint8_t *arp = f + 14;

	memcpy(f + 6, wire_mac, 6);
	f[12] = 0x08, f[13] = 0x06;
	arp[1] = 1;				/* Ethernet */
	arp[2] = 0x08;				/* IPv4 */
	arp[4] = 6, arp[5] = 4;
	arp[7] = 1;				/* request */
	memcpy(arp + 8, wire_mac, 6);		/* sender IP stays 0 */
	roce_put32(arp + 24, ip);
	send(wire_fd, f, sizeof(f), 0);
}

/* Whether an ARP frame says someone holds, or probes for, @ip. */
static bool arp_claims(const uint8_t *f, ssize_t len, uint32_t lo, uint32_t hi)
{
	const uint8_t *arp = f + 14;
	uint32_t sender, target;

	if (len < 42 || f[12] != 0x08 || f[13] != 0x06)
		return false;
	sender = roce_get32(arp + 14);
	target = roce_get32(arp + 24);
	if (sender >= lo && sender <= hi)
		return true;
	return !sender && target >= lo && target <= hi &&
	       memcmp(arp + 8, wire_mac, 6);
}

/* Whether anyone on the wire has an address of lo..hi (host order). */
static bool addresses_taken(uint32_t lo, uint32_t hi)
{
	uint8_t f[2048];

	for (int probe = 0; probe < PROBES; probe++) {
		uint64_t until = now_ns() + PROBE_GAP_NS;

		for (uint32_t ip = lo; ip <= hi; ip++)
			arp_probe(ip);
		while (now_ns() < until) {
			ssize_t len = recv(wire_fd, f, sizeof(f), 0);

			if (len < 0) {
				struct timespec ts = { 0, 2000000 };

				nanosleep(&ts, NULL);
				continue;
			}
			if (arp_claims(f, len, lo, hi))
				return true;
		}
	}
	return false;
}

/* --host-id unless given: at random, until no one answers the probes. */
static void choose_host_id(void)
{
	int n = ether_count(), span = UPLINK_MAX_HOST_ID - n;
	uint32_t base = 192u << 24 | 168 << 16 | 77 << 8;

	for (int tries = 0; sim.opt.host_id < 0 && tries < 20; tries++) {
		unsigned int r;

		if (getrandom(&r, sizeof(r), 0) != sizeof(r))
			r = getpid() ^ now_ns();
		sim.opt.host_id = 1 + r % span;
		if (addresses_taken(base + sim.opt.host_id + 1,
				    base + sim.opt.host_id + n)) {
			sim_log("uplink: host id %d is taken, choosing again",
				sim.opt.host_id);
			sim.opt.host_id = -1;
		}
	}
	if (sim.opt.host_id < 0)
		sim.opt.host_id = 0;
}

int uplink_init(void)
{
	struct ifreq ifr = {};
	int fd;

	if (!sim.opt.uplink) {
		if (sim.opt.host_id < 0)
			sim.opt.host_id = 0;
		return 0;
	}
	wire_ifindex = if_nametoindex(sim.opt.uplink);
	if (!wire_ifindex) {
		fprintf(stderr, "mlx4simd: --uplink %s: no such interface\n",
			sim.opt.uplink);
		return -ENODEV;
	}
	fd = packet_socket(wire_ifindex);
	if (fd < 0) {
		fprintf(stderr, "mlx4simd: --uplink %s: cannot open a packet socket on it (it needs CAP_NET_RAW, root): %s\n",
			sim.opt.uplink, strerror(-fd));
		return fd;
	}
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", sim.opt.uplink);
	if (!ioctl(fd, SIOCGIFHWADDR, &ifr))
		memcpy(wire_mac, ifr.ifr_hwaddr.sa_data, 6);
	wire_fd = fd;
	choose_host_id();
	sim_log("uplink: %s, host id %d", sim.opt.uplink, sim.opt.host_id);
	return 0;
}

/*
 * The kernel leaves the checksums of what an interface sends to the
 * interface when it offers to fill them in (a veth does), and hands it
 * whole TCP segments of up to 64 KiB: frames that would leave so, unfit
 * for a wire.  The ports' interfaces offer neither.
 */
static void no_offloads(const char *ifname)
{
	static const uint32_t cmds[] = { ETHTOOL_STXCSUM, ETHTOOL_SSG,
					 ETHTOOL_STSO, ETHTOOL_SGSO };
	struct ifreq ifr = {};
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		struct ethtool_value v = { .cmd = cmds[i], .data = 0 };

		ifr.ifr_data = (void *)&v;
		ioctl(fd, SIOCETHTOOL, &ifr);
	}
	close(fd);
}

/* In the daemon's namespace: the switch's port whose far end is ours. */
int uplink_attach(void)
{
	char script[512];
	int ifindex;

	if (wire_fd < 0)
		return 0;
	snprintf(script, sizeof(script),
		 "link add " INNER_SWITCH_END " type veth peer name " INNER_DAEMON_END "\n"
		 "link set " INNER_SWITCH_END " master mlx4sw\n"
		 "link set " INNER_SWITCH_END " up\n"
		 "link set " INNER_DAEMON_END " up\n");
	if (sim_run_ip(NULL, script))
		return -EIO;
	for (int h = 0; h < sim.opt.nhcas; h++)
		for (int p = 0; p < sim.hca[h].nports; p++) {
			struct sim_port *port = &sim.hca[h].port[p];
			char ifname[IFNAMSIZ + 8];

			if (port->link_layer != IBV_LINK_LAYER_ETHERNET)
				continue;
			no_offloads(port->ifname);
			for (int v = 0; v < sim.opt.nvlans; v++) {
				snprintf(ifname, sizeof(ifname), "%s.%u",
					 port->ifname, sim.opt.vlans[v]);
				no_offloads(ifname);
			}
		}
	ifindex = if_nametoindex(INNER_DAEMON_END);
	inner_fd = ifindex ? packet_socket(ifindex) : -ENODEV;
	if (inner_fd < 0) {
		fprintf(stderr, "mlx4simd: --uplink: cannot open the switch's port: %s\n",
			strerror(-inner_fd));
		return inner_fd;
	}
	return 0;
}

/* The EtherType after the MACs and any 802.1Q tag; @off where its payload is. */
static uint16_t ether_type(const uint8_t *f, size_t len, size_t *off)
{
	uint16_t type;

	*off = 14;
	if (len < 14)
		return 0;
	type = get16(f + 12);
	if (type == 0x8100 && len >= 18) {
		type = get16(f + 16);
		*off = 18;
	}
	return type;
}

/*
 * Whether a frame is RoCE: v2, UDP to port 4791 over IPv4 or IPv6, or
 * v1, a GRH under its own EtherType.
 */
static bool roce_frame(const uint8_t *f, size_t len)
{
	size_t off;
	uint16_t type = ether_type(f, len, &off);

	if (type == 0x8915)
		return true;
	if (type == 0x0800 && len >= off + 28)
		return f[off + 9] == 17 &&
		       get16(f + off + (f[off] & 0x0f) * 4 + 2) == ROCE_V2_PORT;
	if (type == 0x86dd && len >= off + 48)
		return f[off + 6] == 17 && get16(f + off + 42) == ROCE_V2_PORT;
	return false;
}

/*
 * Frames to send wait in a batch, sent with one system call when it is
 * full and at each pass's uplink_poll() (perf had a send() a packet at a
 * third of the sending daemon's time).
 */
static struct {
	int n;
	size_t len[SEND_BATCH];
	uint8_t frame[SEND_BATCH][ROCE_MAX_FRAME];
} batch;

static void flush_batch(void)
{
	static struct iovec iov[SEND_BATCH];
	static struct mmsghdr m[SEND_BATCH];
	int done = 0, n;

	for (int i = 0; i < batch.n; i++) {
		iov[i] = (struct iovec){ batch.frame[i], batch.len[i] };
		m[i].msg_hdr = (struct msghdr){ .msg_iov = &iov[i],
						.msg_iovlen = 1 };
	}
	while (done < batch.n) {
		n = sendmmsg(wire_fd, m + done, batch.n - done, MSG_DONTWAIT);
		if (n <= 0) {
			/* The interface would not take it: lost on the wire. */
			fault_count_drop();
			n = 1;
		}
		done += n;
	}
	batch.n = 0;
}

static void wire_out(const uint8_t *frame, size_t len)
{
	if (batch.n == SEND_BATCH)
		flush_batch();
	memcpy(batch.frame[batch.n], frame, len);
	batch.len[batch.n++] = len;
	if (sim.opt.pcap && roce_frame(frame, len))
		pcap_frame(frame, len);
}

static void hold(const uint8_t *frame, size_t len, uint64_t due,
		 bool until_next)
{
	for (int i = 0; i < HELD_MAX; i++) {
		if (held[i].used)
			continue;
		held[i].used = true;
		held[i].until_next = until_next;
		held[i].due = due;
		held[i].len = len;
		memcpy(held[i].frame, frame, len);
		return;
	}
	fault_count_drop();		/* more held than the wire keeps */
}

/* Reordered frames go after the one that overtook them. */
static void overtaken(void)
{
	for (int i = 0; i < HELD_MAX; i++)
		if (held[i].used && held[i].until_next) {
			held[i].used = false;
			wire_out(held[i].frame, held[i].len);
		}
}

void uplink_send(const struct sim_qp *qp, uint8_t port, const uint8_t *frame,
		 size_t len)
{
	uint32_t delay_ms = 0;
	enum fault_action fault = fault_packet(qp, port, &delay_ms);

	if (wire_fd < 0 || len > ROCE_MAX_FRAME)
		return;
	switch (fault) {
	case FAULT_DROP:
		return;
	case FAULT_DELAY:
		hold(frame, len, now_ns() + delay_ms * 1000000ULL, false);
		return;
	case FAULT_REORDER:
		hold(frame, len, now_ns() + REORDER_MAX_NS, true);
		return;
	case FAULT_DUPLICATE:
		wire_out(frame, len);
		break;
	case FAULT_NONE:
		break;
	}
	wire_out(frame, len);
	overtaken();
}

static void release_held(uint64_t now, uint64_t *deadline)
{
	for (int i = 0; i < HELD_MAX; i++) {
		if (!held[i].used)
			continue;
		if (held[i].due <= now) {
			held[i].used = false;
			wire_out(held[i].frame, held[i].len);
		} else {
			*deadline = MIN(*deadline, held[i].due);
		}
	}
}

/*
 * A frame from the wire: RoCE for a port to the adapter's engine; any
 * other to its flow steering (raw packet QPs) and, for a port or a group,
 * to the kernels of the namespace.
 */
static void from_wire(const uint8_t *f, size_t len)
{
	struct sim_port *port = f[0] & 1 ? NULL : port_by_mac(f);

	if (port && roce_frame(f, len)) {
		if (sim.opt.pcap)
			pcap_frame(f, len);
		/* Not while a command waits: the requester sends again. */
		if (receiver && !resolving)
			receiver(port, f, len);
		return;
	}
	if (raw_receiver && !resolving)
		raw_receiver(port, f, len);
	/* Another host's unicast stays off the switch. */
	if (!port && !(f[0] & 1))
		return;
	send(inner_fd, f, len, MSG_DONTWAIT);
}

/* A frame the kernels of the namespace sent: out, unless for a port. */
static void from_inner(const uint8_t *f, size_t len)
{
	if (len >= 14 && !port_by_mac(f))
		send(wire_fd, f, len, MSG_DONTWAIT);
}

/*
 * What a socket holds, FRAMES_A_PASS frames at the most, taken a batch
 * of DRAIN_BATCH at a time (one system call for a batch: perf had the
 * receiving daemon's recvfrom() calls at a quarter of its time).
 */
static void drain(int fd, void (*take)(const uint8_t *, size_t))
{
	static uint8_t f[DRAIN_BATCH][ROCE_MAX_FRAME + 64];
	static struct sockaddr_ll from[DRAIN_BATCH];
	static struct iovec iov[DRAIN_BATCH];
	static struct mmsghdr m[DRAIN_BATCH];

	for (int n = 0; n < FRAMES_A_PASS; n += DRAIN_BATCH) {
		int got;

		for (int i = 0; i < DRAIN_BATCH; i++) {
			iov[i] = (struct iovec){ f[i], sizeof(f[i]) };
			m[i].msg_hdr = (struct msghdr){
				.msg_name = &from[i], .msg_namelen = sizeof(from[i]),
				.msg_iov = &iov[i], .msg_iovlen = 1,
			};
		}
		got = recvmmsg(fd, m, DRAIN_BATCH, MSG_DONTWAIT, NULL);
		if (got <= 0)
			return;
		sim.work_done = true;
		for (int i = 0; i < got; i++)
			if (from[i].sll_pkttype != PACKET_OUTGOING &&
			    !(m[i].msg_hdr.msg_flags & MSG_TRUNC))
				take(f[i], m[i].msg_len);
		if (got < DRAIN_BATCH)
			return;
	}
}

void uplink_poll(uint64_t now, uint64_t *deadline)
{
	if (wire_fd < 0)
		return;
	release_held(now, deadline);
	flush_batch();
	drain(wire_fd, from_wire);
	if (inner_fd >= 0)
		drain(inner_fd, from_inner);
	flush_batch();		/* the answers to what came */
}

/* @gid's entry in the neighbour table of the daemon's namespace. */
static int neigh_lookup(int family, const uint8_t *addr, uint8_t mac[6])
{
	struct {
		struct nlmsghdr nh;
		struct ndmsg nd;
	} req = {
		.nh = { .nlmsg_len = sizeof(req), .nlmsg_type = RTM_GETNEIGH,
			.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP },
		.nd = { .ndm_family = family },
	};
	static uint8_t buf[32768];
	size_t alen = family == AF_INET ? 4 : 16;
	int fd, found = -ENOENT;
	bool done = false;

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (fd < 0)
		return -errno;
	if (send(fd, &req, sizeof(req), 0) < 0)
		done = true;
	while (!done) {
		ssize_t len = recv(fd, buf, sizeof(buf), 0);
		struct nlmsghdr *nh = (void *)buf;

		if (len <= 0)
			break;
		for (; NLMSG_OK(nh, len); nh = NLMSG_NEXT(nh, len)) {
			struct ndmsg *nd = NLMSG_DATA(nh);
			struct rtattr *rta = (void *)((char *)nd + NLMSG_ALIGN(sizeof(*nd)));
			int rlen = nh->nlmsg_len - NLMSG_LENGTH(sizeof(*nd));
			const uint8_t *dst = NULL, *lladdr = NULL;

			if (nh->nlmsg_type == NLMSG_DONE || nh->nlmsg_type == NLMSG_ERROR) {
				done = true;
				break;
			}
			if (!(nd->ndm_state & (NUD_REACHABLE | NUD_STALE | NUD_DELAY |
					       NUD_PROBE | NUD_PERMANENT)))
				continue;
			for (; RTA_OK(rta, rlen); rta = RTA_NEXT(rta, rlen)) {
				if (rta->rta_type == NDA_DST && RTA_PAYLOAD(rta) == alen)
					dst = RTA_DATA(rta);
				if (rta->rta_type == NDA_LLADDR && RTA_PAYLOAD(rta) == 6)
					lladdr = RTA_DATA(rta);
			}
			if (dst && lladdr && !memcmp(dst, addr, alen)) {
				memcpy(mac, lladdr, 6);
				found = 0;
			}
		}
	}
	close(fd);
	return found;
}

/* Make the kernel resolve @gid on @port's interface: a datagram to it. */
static void neigh_solicit(const struct sim_port *port, int family,
			  const uint8_t *addr)
{
	struct sockaddr_in6 in6 = { .sin6_family = AF_INET6, .sin6_port = htons(9) };
	struct sockaddr_in in = { .sin_family = AF_INET, .sin_port = htons(9) };
	int fd = socket(family, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return;
	setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, port->ifname,
		   strlen(port->ifname));
	if (family == AF_INET) {
		memcpy(&in.sin_addr, addr, 4);
		sendto(fd, "", 0, MSG_DONTWAIT, (struct sockaddr *)&in, sizeof(in));
	} else {
		memcpy(&in6.sin6_addr, addr, 16);
		sendto(fd, "", 0, MSG_DONTWAIT, (struct sockaddr *)&in6, sizeof(in6));
	}
	close(fd);
}

/*
 * As the kernel's address resolution does for a RoCE path: the neighbour
 * table's entry, or, after a datagram that makes the kernel ask (ARP,
 * neighbour solicitation), the answer, carried in by the daemon while it
 * waits, for up to a second.
 */
int uplink_neigh(const struct sim_port *port, const uint8_t gid[16],
		 uint8_t mac[6])
{
	bool v4 = gid_is_ipv4(gid);
	int family = v4 ? AF_INET : AF_INET6;
	const uint8_t *addr = v4 ? gid + 12 : gid;
	uint64_t until = now_ns() + 1000000000ULL;
	int err = -EHOSTUNREACH;

	if (wire_fd < 0)
		return -EHOSTUNREACH;
	/* A link-local GID holds its MAC (ib_core's rdma_get_ll_mac()). */
	if (gid[0] == 0xfe && gid[1] == 0x80 && gid[11] == 0xff &&
	    gid[12] == 0xfe) {
		memcpy(mac, gid + 8, 3);
		mac[0] ^= 2;
		memcpy(mac + 3, gid + 13, 3);
		return 0;
	}
	if (!neigh_lookup(family, addr, mac))
		return 0;
	neigh_solicit(port, family, addr);
	resolving = true;
	while (now_ns() < until) {
		struct timespec ts = { 0, 1000000 };
		uint64_t deadline = UINT64_MAX;

		nanosleep(&ts, NULL);
		uplink_poll(now_ns(), &deadline);
		if (!neigh_lookup(family, addr, mac)) {
			err = 0;
			break;
		}
	}
	resolving = false;
	return err;
}
