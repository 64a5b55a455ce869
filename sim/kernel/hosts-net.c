/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * --hosts: what each host's kernel sees of the subnet.  A host's kernel
 * has its own adapters only (a process's uverbs0 and umad0 are its
 * host's first), its own addresses (a bind to another host's address is
 * EADDRNOTAVAIL, as ip_dev_find() finds none) and its own port spaces;
 * another host's address is reached through the interface on its subnet,
 * whose address is then the source.  Without --hosts every process is on
 * host 0, which has every adapter: nothing changes.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cma.h"
#include "ucma.h"

/* The @index-th adapter of @host (uverbs<index> there), or NULL. */
struct sim_hca *hca_of_host(int host, uint32_t index)
{
	for (int h = 0; h < sim.opt.nhcas; h++)
		if (sim.hca[h].host == host &&
		    sim.hca[h].local == (int)index)
			return &sim.hca[h];
	return NULL;
}

/* The host of an rdma_cm id: its file's process's. */
int cma_id_host(const struct cma_id *id)
{
	return id->file && id->file->ctx ? id->file->ctx->host : 0;
}

bool port_on_host(const struct sim_port *port, int host)
{
	return port->hca->host == host;
}

/*
 * The address of @port's interface in the subnet of @dst: @dst with the
 * port's host part, as every subnet of the run numbers a port's
 * interfaces alike (192.168.77.<n+1>, fd00:78::<n+1>, 10.x.y.<n+1>),
 * if the port has it.
 */
static bool address_towards(const struct sim_port *port,
			    const struct sockaddr *dst,
			    struct sockaddr_storage *src)
{
	int n = port->hca->index * sim.opt.nports + port->num;

	memset(src, 0, sizeof(*src));
	if (dst->sa_family == AF_INET) {
		struct sockaddr_in *in = (void *)src;

		*in = *(const struct sockaddr_in *)dst;
		((uint8_t *)&in->sin_addr)[3] = n;
	} else if (dst->sa_family == AF_INET6) {
		struct sockaddr_in6 *in6 = (void *)src;

		*in6 = *(const struct sockaddr_in6 *)dst;
		in6->sin6_addr.s6_addr[14] = n >> 8;
		in6->sin6_addr.s6_addr[15] = n;
	} else {
		return false;
	}
	return port_has_ip(port, (struct sockaddr *)src);
}

/*
 * The route from @host to @dst, which another host's port @to has: the
 * first port of @host with an address in @dst's subnet, its address
 * into @src.  NULL when @host has none (no route: ENETUNREACH).
 */
struct sim_port *host_route(int host, const struct sockaddr *dst,
			    const struct sim_port *to,
			    struct sockaddr_storage *src)
{
	for (int h = 0; h < sim.opt.nhcas; h++)
		for (int p = 0; p < sim.hca[h].nports; p++) {
			struct sim_port *port = &sim.hca[h].port[p];

			if (sim.hca[h].host == host &&
			    port->link_layer == to->link_layer &&
			    address_towards(port, dst, src))
				return port;
		}
	return NULL;
}

/* The first port of @host that is up, for a loopback address. */
struct sim_port *host_first_port(int host)
{
	struct sim_port *first = NULL;

	for (int h = 0; h < sim.opt.nhcas; h++)
		for (int p = 0; p < sim.hca[h].nports; p++) {
			struct sim_port *port = &sim.hca[h].port[p];

			if (sim.hca[h].host != host)
				continue;
			if (!port->down)
				return port;
			if (!first)
				first = port;
		}
	return first;
}

/*
 * /etc/hosts for every host of the run: each host by the IPv4 address
 * of its first port's interface, as a cluster's name service gives it.
 */
int hosts_file_write(const char *path)
{
	FILE *f = fopen(path, "w");
	char text[INET6_ADDRSTRLEN];

	if (!f)
		return -errno;
	fprintf(f, "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n");
	for (int host = 0; host < sim.opt.nhosts; host++) {
		struct sim_hca *hca = hca_of_host(host, 0);
		struct sockaddr_storage src;
		struct sockaddr_in dst = { .sin_family = AF_INET };
		struct sim_port *port = &hca->port[0];

		inet_pton(AF_INET, port->link_layer == IBV_LINK_LAYER_ETHERNET ?
			  "192.168.77.0" : "192.168.78.0", &dst.sin_addr);
		if (!address_towards(port, (struct sockaddr *)&dst, &src))
			continue;
		inet_ntop(AF_INET, &((struct sockaddr_in *)&src)->sin_addr,
			  text, sizeof(text));
		fprintf(f, "%s\tnode%d\n", text, host + 1);
	}
	return fclose(f) ? -errno : 0;
}
