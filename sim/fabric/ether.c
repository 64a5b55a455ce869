/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Ethernet ports: what a host gives a ConnectX-3 port in Ethernet mode.
 *
 * On a real host mlx4_en makes a network interface for each Ethernet port,
 * and the kernel's RoCE GID cache fills the port's GID table from that
 * interface: the two default GIDs from its MAC, then a RoCE v1 and a RoCE
 * v2 entry for each IP address.  libibverbs reaches a peer through the
 * host's network stack: it asks the kernel's neighbour table, over netlink,
 * for the MAC of an IP-based GID.
 *
 * To give programs a network stack that knows the simulated interfaces, the
 * daemon makes a network namespace of its own (with a user namespace when
 * it is not root, which gives it the right to configure one): a veth
 * interface per Ethernet port, with the port's MAC and an IPv4 address, all
 * plugged into one bridge, the Ethernet switch.  Every program that uses
 * the simulator joins that namespace as it starts (preload.c), so ARP,
 * neighbour look-ups, routes, and the TCP connections programs make among
 * themselves, all work there.  The RoCE packets themselves never cross the
 * veth interfaces: the wire between the ports is the daemon's, as on
 * InfiniBand.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/capability.h>

#include "fabric.h"

#define SWITCH_NAME	"mlx4sw"
#define IPV4_PREFIX	"192.168.77."	/* a /24 the switch serves */
#define IPV6_PREFIX	"fd00:77::"	/* and a /64 of unique local ones */

bool ether_ports(void)
{
	for (int p = 0; p < sim.opt.nports; p++)
		if (sim.opt.link_layer[p] == IBV_LINK_LAYER_ETHERNET)
			return true;
	return false;
}

/* The n-th Ethernet port of the subnet, counting from 0, or -1. */
static int ether_index(const struct sim_port *port)
{
	return port->hca->index * sim.opt.nports + port->num - 1;
}

/* Its host number in the subnet's addresses: after --host-id's. */
static int ether_host(const struct sim_port *port)
{
	return sim.opt.host_id + ether_index(port) + 1;
}

/*
 * A network namespace for the daemon, the Ethernet ports' network and the
 * InfiniBand ports' IP interfaces (ipoib.c); made once.
 */
int sim_make_netns(void)
{
	int err;

	if (sim.netns)
		return 0;
	err = geteuid() == 0 ? 0 : sim_own_user_namespace();
	if (!err && unshare(CLONE_NEWNET))
		err = -errno;
	sim.netns = !err;
	return err;
}

/*
 * ip(8), run as a child, keeps CAP_NET_ADMIN across exec as an ambient
 * capability: a user namespace's capabilities are not passed to a program
 * of a non-root user otherwise.
 */
static void keep_net_admin(void)
{
	struct __user_cap_header_struct head = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct data[2];

	if (geteuid() == 0 || syscall(SYS_capget, &head, data))
		return;
	data[CAP_NET_ADMIN / 32].inheritable |= 1u << (CAP_NET_ADMIN % 32);
	syscall(SYS_capset, &head, data);
	prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_NET_ADMIN, 0, 0);
}

/*
 * Run "ip -batch -" (with @family, "-4" or "-6", unless NULL) with
 * @script on its input; 0 if it succeeded.
 */
int sim_run_ip(const char *family, const char *script)
{
	int in[2], status;
	pid_t pid;

	if (pipe2(in, O_CLOEXEC))
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		dup2(in[0], STDIN_FILENO);
		keep_net_admin();
		if (family)
			execlp("ip", "ip", family, "-batch", "-", (char *)NULL);
		else
			execlp("ip", "ip", "-batch", "-", (char *)NULL);
		fprintf(stderr, "mlx4simd: Ethernet ports need ip(8) (iproute2): %m\n");
		_exit(127);
	}
	close(in[0]);
	if (write(in[1], script, strlen(script)) != (ssize_t)strlen(script))
		status = -EIO;
	close(in[1]);
	if (waitpid(pid, &status, 0) < 0)
		return -errno;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -EIO;
}

static void mac_text(const uint8_t mac[6], char text[18])
{
	snprintf(text, 18, "%02x:%02x:%02x:%02x:%02x:%02x",
		 mac[0], mac[1], mac[2], mac[3], mac[4], mac[5]);
}

/*
 * The network's settings of the namespace the daemon is in: the one
 * host's, or with --hosts each host's in turn.
 */
static void host_sysctls(void)
{
	/* Addresses usable at once, with no duplicate detection to wait for. */
	proc_write_text("/proc/sys/net/ipv6/conf/all/accept_dad", "0\n");
	proc_write_text("/proc/sys/net/ipv6/conf/default/accept_dad", "0\n");
	/*
	 * Ports talk to ports of the same host (route_by_interface): an
	 * interface answers ARP for its own addresses only, and takes
	 * packets from addresses of the host.
	 */
	for (int i = 0; i < 2; i++) {
		char path[96];
		const char *conf = i ? "default" : "all";

		snprintf(path, sizeof(path), "/proc/sys/net/ipv4/conf/%s/arp_ignore", conf);
		proc_write_text(path, "1\n");
		snprintf(path, sizeof(path), "/proc/sys/net/ipv4/conf/%s/accept_local", conf);
		proc_write_text(path, "1\n");
		snprintf(path, sizeof(path), "/proc/sys/net/ipv4/conf/%s/rp_filter", conf);
		proc_write_text(path, "0\n");
	}
}

/* The lines that give @port's interface its addresses and VLANs. */
static size_t address_lines(char *script, size_t size,
			    const struct sim_port *port)
{
	int n = ether_host(port);
	size_t len;

	len = snprintf(script, size,
		"addr add " IPV4_PREFIX "%d/24 dev %s\n"
		"addr add " IPV6_PREFIX "%x/64 dev %s nodad\n"
		"link set %s up\n",
		n, port->ifname, n, port->ifname, port->ifname);
	/* VLAN v: 10.v/256.v%256.0/24, as many as asked. */
	for (int v = 0; v < sim.opt.nvlans && len < size; v++) {
		unsigned int id = sim.opt.vlans[v];

		len += snprintf(script + len, size - len,
			"link add link %s name %s.%u type vlan id %u\n"
			"addr add 10.%u.%u.%d/24 dev %s.%u\n"
			"link set %s.%u up\n",
			port->ifname, port->ifname, id, id,
			id >> 8, id & 0xff, n,
			port->ifname, id, port->ifname, id);
	}
	return len;
}

/*
 * The interfaces: the switch, then a veth pair for each Ethernet port;
 * with --hosts the port's end goes to its host, which gives it its
 * addresses (configure_host).
 */
static int make_interfaces(void)
{
	char script[8192], mac[18];
	size_t len = 0;

	host_sysctls();
	len += snprintf(script + len, sizeof(script) - len,
			"link set lo up\n"
			"link add " SWITCH_NAME " type bridge\n"
			"link set " SWITCH_NAME " up\n");
	for (int h = 0; h < sim.opt.nhcas; h++)
		for (int p = 0; p < sim.hca[h].nports; p++) {
			struct sim_port *port = &sim.hca[h].port[p];
			int n = ether_index(port);

			if (port->link_layer != IBV_LINK_LAYER_ETHERNET)
				continue;
			mac_text(port->mac, mac);
			len += snprintf(script + len, sizeof(script) - len,
				"link add %s address %s type veth peer name sw%d\n"
				"link set sw%d master " SWITCH_NAME "\n"
				"link set sw%d up\n",
				port->ifname, mac, n, n, n);
			if (len >= sizeof(script))
				break;
			if (sim.opt.nhosts)
				len += snprintf(script + len, sizeof(script) - len,
					"link set %s netns %d\n", port->ifname,
					(int)host_keeper_pid(port->hca->host));
			else
				len += address_lines(script + len,
						     sizeof(script) - len, port);
		}
	if (len >= sizeof(script))
		return -E2BIG;
	return sim_run_ip(NULL, script);
}

/*
 * One host holds every port, so each port's peers are addresses of its
 * own: the local routing table would answer a look-up for a peer with
 * "local", and libibverbs would resolve every IP-based GID to the
 * sender's own MAC.  Each interface gets a routing table of its own
 * (its subnet on the wire, its own address local), chosen before the
 * local table by the outgoing interface (libibverbs asks for the route
 * from the source GID's interface) or, for what this host sends, by the
 * source address (libibverbs' probe that starts ARP is bound to the
 * source GID's address): a peer is then a neighbour on the switch, found
 * by ARP or neighbour discovery as on a network of hosts.  An interface
 * answers ARP for its own addresses only.
 */
static int route_by_interface(int host)
{
	static const char *const families[] = { "-4", "-6" };
	char script[8192];

	for (int f = 0; f < 2; f++) {
		size_t len = 0;
		int table = 100;

		len += snprintf(script, sizeof(script),
				"rule del pref 0\n"
				"rule add pref 32000 lookup local\n");
		for (int h = 0; h < sim.opt.nhcas; h++)
			for (int p = 0; p < sim.hca[h].nports; p++) {
				struct sim_port *port = &sim.hca[h].port[p];
				if (port->link_layer != IBV_LINK_LAYER_ETHERNET ||
				    port->hca->host != host)
					continue;
				char self[48];

				snprintf(self, sizeof(self),
					 f ? IPV6_PREFIX "%x" : IPV4_PREFIX "%d",
					 ether_host(port));
				len += snprintf(script + len, sizeof(script) - len,
					"rule add pref 100 oif %s lookup %d\n"
					"rule add pref 100 from %s iif lo lookup %d\n"
					"route add %s dev %s table %d\n"
					"route add local %s dev %s table %d\n",
					port->ifname, table, self, table,
					f ? IPV6_PREFIX "/64" : IPV4_PREFIX "0/24",
					port->ifname, table, self,
					port->ifname, table);
				table++;
				for (int v = 0; v < sim.opt.nvlans && !f; v++) {
					unsigned int id = sim.opt.vlans[v];

					len += snprintf(script + len, sizeof(script) - len,
						"rule add pref 100 oif %s.%u lookup %d\n"
						"route add 10.%u.%u.0/24 dev %s.%u table %d\n",
						port->ifname, id, table,
						id >> 8, id & 0xff, port->ifname,
						id, table);
					table++;
				}
			}
		if (len >= sizeof(script))
			return -E2BIG;
		if (sim_run_ip(families[f], script))
			return -EIO;
	}
	return 0;
}

/*
 * With --hosts, host @host's interfaces get their addresses in its own
 * network namespace; then, as without, each its routing table.
 */
static int configure_host(int host)
{
	char script[8192];
	size_t len = 0;
	int err;

	if (!sim.opt.nhosts)
		return route_by_interface(host);
	err = hosts_enter_net(host);
	if (err) {
		hosts_leave_net();
		return err;
	}
	host_sysctls();
	len = snprintf(script, sizeof(script), "link set lo up\n");
	for (int h = 0; h < sim.opt.nhcas; h++)
		for (int p = 0; p < sim.hca[h].nports && len < sizeof(script); p++)
			if (sim.hca[h].host == host &&
			    sim.hca[h].port[p].link_layer == IBV_LINK_LAYER_ETHERNET)
				len += address_lines(script + len,
						     sizeof(script) - len,
						     &sim.hca[h].port[p]);
	err = len >= sizeof(script) ? -E2BIG : sim_run_ip(NULL, script);
	if (!err)
		err = route_by_interface(host);
	hosts_leave_net();
	return err;
}

/* The modified EUI-64 link-local address a MAC gives. */
static void link_local_gid(const uint8_t mac[6], uint8_t gid[16])
{
	memset(gid, 0, 16);
	gid[0] = 0xfe;
	gid[1] = 0x80;
	memcpy(gid + 8, mac, 3);
	gid[8] ^= 2;
	gid[11] = 0xff;
	gid[12] = 0xfe;
	memcpy(gid + 13, mac + 3, 3);
}

/*
 * A RoCE v1 entry for @gid of interface @ndev, and a v2 one where the
 * firmware has RoCE v2 (the model's), once.
 */
static void add_gid_entries(struct sim_port *port, const uint8_t gid[16],
			 const char *ndev, uint16_t vlan)
{
	int last = sim.opt.model->roce_v2 ? IBV_GID_TYPE_ROCE_V2 :
					    IBV_GID_TYPE_ROCE_V1;

	for (int i = 0; i < port->ngids; i++)
		if (!memcmp(port->gids[i].gid, gid, 16) &&
		    !strcmp(port->gids[i].ndev, ndev))
			return;		/* the cache holds it already */
	if (port->ngids + last - IBV_GID_TYPE_ROCE_V1 + 1 > CX3_GID_TBL_LEN)
		return;
	for (int type = IBV_GID_TYPE_ROCE_V1; type <= last; type++) {
		struct sim_gid *g = &port->gids[port->ngids++];

		memcpy(g->gid, gid, 16);
		g->type = type;
		g->vlan = vlan;
		snprintf(g->ndev, sizeof(g->ndev), "%s", ndev);
	}
}

/* The entries of interface @ndev's addresses of @family. */
static void add_addresses(struct sim_port *port, struct ifaddrs *addrs,
			  const char *ndev, uint16_t vlan, int family)
{
	uint8_t gid[16];

	for (struct ifaddrs *a = addrs; a; a = a->ifa_next) {
		if (!a->ifa_addr || a->ifa_addr->sa_family != family ||
		    strcmp(a->ifa_name, ndev))
			continue;
		if (family == AF_INET) {
			const struct sockaddr_in *in = (void *)a->ifa_addr;

			memset(gid, 0, 10);
			gid[10] = gid[11] = 0xff;
			memcpy(gid + 12, &in->sin_addr, 4);
		} else {
			const struct sockaddr_in6 *in6 = (void *)a->ifa_addr;

			memcpy(gid, in6->sin6_addr.s6_addr, 16);
		}
		add_gid_entries(port, gid, ndev, vlan);
	}
}

/*
 * The GID table as the kernel's RoCE GID cache fills it: the default GIDs
 * at 0 (RoCE v1) and 1 (v2), then a v1 and a v2 entry for each address of
 * the interface (IPv4 as an IPv4-mapped IPv6 address), then those of its
 * VLAN interfaces, whose link-local address is an entry of its own: the
 * same GID through another interface.
 */
static void fill_gid_table(struct sim_port *port, struct ifaddrs *addrs)
{
	uint8_t gid[16];
	char ndev[24];

	link_local_gid(port->mac, gid);
	port->ngids = 0;
	add_gid_entries(port, gid, port->ifname, NO_VLAN);
	add_addresses(port, addrs, port->ifname, NO_VLAN, AF_INET);
	add_addresses(port, addrs, port->ifname, NO_VLAN, AF_INET6);
	for (int v = 0; v < sim.opt.nvlans; v++) {
		snprintf(ndev, sizeof(ndev), "%s.%u", port->ifname,
			 sim.opt.vlans[v]);
		add_addresses(port, addrs, ndev, sim.opt.vlans[v], AF_INET);
		add_addresses(port, addrs, ndev, sim.opt.vlans[v], AF_INET6);
	}
}

/*
 * Give each Ethernet port its MAC and interface name; called by
 * subnet_init() once the ports exist.  The MAC continues the Mellanox OUI
 * with the low bytes of the port GUID, so it is unique on the subnet.
 */
void ether_port_init(struct sim_port *port)
{
	port->link_layer = sim.opt.link_layer[port->num - 1];
	if (port->link_layer != IBV_LINK_LAYER_ETHERNET)
		return;
	port->lid = 0;
	port->mac[0] = 0x00;
	port->mac[1] = 0x02;
	port->mac[2] = 0xc9;
	port->mac[3] = port->guid >> 16;
	port->mac[4] = port->guid >> 8;
	port->mac[5] = port->guid;
	snprintf(port->ifname, sizeof(port->ifname), "eth%d",
		 ether_index(port));
}

int ether_init(void)
{
	struct ifaddrs *addrs;
	int err;

	if (!ether_ports())
		return 0;
	err = sim_make_netns();
	if (err) {
		fprintf(stderr, "mlx4simd: Ethernet ports need a network namespace of their own: %s\n",
			strerror(-err));
		return err;
	}
	err = make_interfaces();
	for (int host = 0; host < MAX(sim.opt.nhosts, 1) && !err; host++)
		err = configure_host(host);
	if (!err)
		err = uplink_attach();
	if (err) {
		fprintf(stderr, "mlx4simd: cannot make the Ethernet ports' interfaces: they need the kernel's bridge and veth interfaces and IPv6%s\n",
			sim.opt.nvlans ? "; --vlan needs its 802.1Q VLAN support, module 8021q" : "");
		return err;
	}
	for (int host = 0; host < MAX(sim.opt.nhosts, 1); host++) {
		err = hosts_enter_net(host);
		if (err || getifaddrs(&addrs)) {
			hosts_leave_net();
			return err ?: -errno;
		}
		for (int h = 0; h < sim.opt.nhcas; h++)
			for (int p = 0; p < sim.hca[h].nports; p++)
				if (sim.hca[h].host == host &&
				    sim.hca[h].port[p].link_layer ==
				    IBV_LINK_LAYER_ETHERNET)
					fill_gid_table(&sim.hca[h].port[p],
						       addrs);
		freeifaddrs(addrs);
		hosts_leave_net();
	}
	return 0;
}

struct sim_port *port_by_mac(const uint8_t mac[6])
{
	for (int h = 0; h < sim.opt.nhcas; h++)
		for (int p = 0; p < sim.hca[h].nports; p++) {
			struct sim_port *port = &sim.hca[h].port[p];

			if (port->link_layer == IBV_LINK_LAYER_ETHERNET &&
			    !memcmp(port->mac, mac, 6))
				return port;
		}
	return NULL;
}

/*
 * The Ethernet port that owns @gid, as the kernel finds a RoCE peer's MAC
 * when a connected QP is given its path: by its neighbour table, which
 * here knows exactly the ports of the switch.
 */
struct sim_port *port_by_gid(const uint8_t gid[16])
{
	for (int h = 0; h < sim.opt.nhcas; h++)
		for (int p = 0; p < sim.hca[h].nports; p++) {
			struct sim_port *port = &sim.hca[h].port[p];

			for (int i = 0; i < port->ngids; i++)
				if (!memcmp(port->gids[i].gid, gid, 16))
					return port;
		}
	return NULL;
}
