/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * IP interfaces for the InfiniBand ports, as ib_ipoib gives a host one
 * for each: rdma_cm reaches an InfiniBand port by an address of its
 * interface, and programs exchange what they need over TCP between those
 * addresses.
 *
 * The kernel cannot make an IPoIB interface without an InfiniBand port of
 * its own, so each is a veth interface, ib<n> for the subnet's port n
 * (counting every port of every adapter, as eth<n> does), in the daemon's
 * network namespace (ether.c makes it; here too when no port is an
 * Ethernet one), plugged into a bridge of its own, with 192.168.78.<n+1>/24
 * and fd00:78::<n+1>/64 and IPoIB's datagram-mode MTU, 2044.  What runs
 * over it is ordinary IP (an Ethernet frame on the veth, not an IPoIB
 * one); what rdma_cm needs of IPoIB, the port and GID behind an address,
 * the daemon knows itself (cma-addr.c).  sysfs shows each as ib_ipoib
 * would (sysfs.c): a 20-byte hardware address (the QPN of its UD QP, then
 * the port's GID), type 32, the port's P_Key.
 *
 * Without a network namespace (no user namespaces here) the ports have
 * no interfaces, and rdma_cm finds no address on them.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cma.h"

#define IPOIB_BRIDGE	"mlx4ipoib"
#define IPOIB_V4	"192.168.78."
#define IPOIB_V6	"fd00:78::"
#define IPOIB_MTU	2044
#define IPOIB_QPN_BASE	0x40	/* below the first QPN a process gets */

struct ipoib_if {
	struct sim_port *port;
	char name[IFNAMSIZ];
	struct in_addr v4;
	struct in6_addr v6;
};

static struct ipoib_if ifs[16 * CX3_MAX_PORTS];
static int nifs;

static int port_index(const struct sim_port *port)
{
	return port->hca->index * sim.opt.nports + port->num - 1;
}

static bool ib_ports(void)
{
	for (int p = 0; p < sim.opt.nports; p++)
		if (sim.opt.link_layer[p] == IBV_LINK_LAYER_INFINIBAND)
			return true;
	return false;
}


static size_t address_lines(char *script, size_t size,
			    const struct ipoib_if *i)
{
	int n = port_index(i->port);

	return snprintf(script, size,
			"addr add " IPOIB_V4 "%d/24 dev %s\n"
			"addr add " IPOIB_V6 "%x/64 dev %s nodad\n"
			"link set %s up\n",
			n + 1, i->name, n + 1, i->name, i->name);
}

/* --hosts: host @host's interfaces get their addresses in its namespace. */
static int configure_host(int host)
{
	char script[8192];
	size_t len = 0;
	int err = hosts_enter_net(host);

	for (int i = 0; i < nifs && !err && len < sizeof(script); i++)
		if (ifs[i].port->hca->host == host)
			len += address_lines(script + len, sizeof(script) - len,
					     &ifs[i]);
	if (!err && len)
		err = len >= sizeof(script) ? -E2BIG : sim_run_ip(NULL, script);
	hosts_leave_net();
	return err;
}

/* The interfaces, their bridge and addresses, in one ip(8) batch. */
static int make_interfaces(void)
{
	char script[8192];
	size_t len = 0;
	int err;

	len += snprintf(script, sizeof(script),
			"link set lo up\n"
			"link add " IPOIB_BRIDGE " type bridge\n"
			"link set " IPOIB_BRIDGE " up\n");
	for (int i = 0; i < nifs && len < sizeof(script); i++) {
		const char *name = ifs[i].name;
		int n = port_index(ifs[i].port);

		len += snprintf(script + len, sizeof(script) - len,
			"link add %s mtu %d type veth peer name ibsw%d mtu %d\n"
			"link set ibsw%d master " IPOIB_BRIDGE "\n"
			"link set ibsw%d up\n",
			name, IPOIB_MTU, n, IPOIB_MTU, n, n);
		if (len >= sizeof(script))
			break;
		/* --hosts: the interface is its host's, configured there. */
		if (sim.opt.nhosts)
			len += snprintf(script + len, sizeof(script) - len,
				"link set %s netns %d\n", name,
				(int)host_keeper_pid(ifs[i].port->hca->host));
		else
			len += address_lines(script + len, sizeof(script) - len,
					     &ifs[i]);
	}
	if (len >= sizeof(script))
		return -E2BIG;
	err = sim_run_ip(NULL, script);
	for (int host = 0; host < sim.opt.nhosts && !err; host++)
		err = configure_host(host);
	return err;
}

int ipoib_init(void)
{
	int err;

	if (!ib_ports())
		return 0;
	for (int h = 0; h < sim.opt.nhcas; h++)
		for (int p = 0; p < sim.hca[h].nports; p++) {
			struct sim_port *port = &sim.hca[h].port[p];
			struct ipoib_if *i = &ifs[nifs];
			char text[64];

			if (port->link_layer != IBV_LINK_LAYER_INFINIBAND)
				continue;
			i->port = port;
			snprintf(i->name, sizeof(i->name), "ib%d",
				 port_index(port));
			snprintf(text, sizeof(text), IPOIB_V4 "%d",
				 port_index(port) + 1);
			inet_pton(AF_INET, text, &i->v4);
			snprintf(text, sizeof(text), IPOIB_V6 "%x",
				 port_index(port) + 1);
			inet_pton(AF_INET6, text, &i->v6);
			nifs++;
		}
	err = sim_make_netns();
	if (!err) {
		/* TCP on localhost even where the interfaces fail. */
		host_loopback_up();
		err = make_interfaces();
	}
	if (err) {
		sim_log("the InfiniBand ports have no IP interfaces (no network namespace, or ip(8) failed: %s): rdma_cm finds no address on them",
			strerror(-err));
		nifs = 0;
	}
	return 0;
}

/* The interface of an InfiniBand port, or NULL. */
const char *ipoib_ifname(const struct sim_port *port)
{
	for (int i = 0; i < nifs; i++)
		if (ifs[i].port == port)
			return ifs[i].name;
	return NULL;
}

/* Its IPoIB hardware address: flags and QPN, then the port's GID. */
void ipoib_hwaddr(const struct sim_port *port, uint8_t hw[20])
{
	uint32_t qpn = IPOIB_QPN_BASE + port_index(port);

	hw[0] = 0x80;		/* connected mode offered */
	hw[1] = qpn >> 16;
	hw[2] = qpn >> 8;
	hw[3] = qpn;
	port_gid(port, 0, hw + 4);
}

/* An RoCE port's address is one of its GIDs' (ether.c built them). */
static bool ether_has_ip(const struct sim_port *port, const uint8_t gid[16])
{
	for (int i = 0; i < port->ngids; i++)
		if (!memcmp(port->gids[i].gid, gid, 16))
			return true;
	return false;
}

static bool ipoib_has_ip(const struct ipoib_if *i, const struct sockaddr *a)
{
	if (a->sa_family == AF_INET)
		return !memcmp(&((const struct sockaddr_in *)a)->sin_addr,
			       &i->v4, 4);
	if (a->sa_family == AF_INET6)
		return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
			       &i->v6, 16);
	return false;
}

bool port_has_ip(const struct sim_port *port, const struct sockaddr *addr)
{
	uint8_t gid[16];

	if (port->link_layer == IBV_LINK_LAYER_ETHERNET) {
		if (addr->sa_family != AF_INET && addr->sa_family != AF_INET6)
			return false;
		cma_ip2gid(addr, gid);
		return ether_has_ip(port, gid);
	}
	for (int i = 0; i < nifs; i++)
		if (ifs[i].port == port && ipoib_has_ip(&ifs[i], addr))
			return true;
	return false;
}

/* The port whose interface has @addr: what ip_dev_find() finds. */
struct sim_port *port_by_ip(const struct sockaddr *addr)
{
	for (int h = 0; h < sim.opt.nhcas; h++)
		for (int p = 0; p < sim.hca[h].nports; p++)
			if (port_has_ip(&sim.hca[h].port[p], addr))
				return &sim.hca[h].port[p];
	return NULL;
}
