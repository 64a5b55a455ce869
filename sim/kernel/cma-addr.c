/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rdma_cm's addresses and routes (cma.c, addr.c and sa_query.c in the
 * kernel): which port an IP address leads to, its GIDs, the path between
 * two ports, and the QP attributes and address vectors made from it.
 *
 * One network namespace holds every port's interface (ether.c, ipoib.c),
 * so every address of the simulated subnet is the host's own.  The kernel
 * resolves a destination of its own host through the loopback device to
 * the port that owns the address, and takes that address as the source:
 * so does this, and an id that is bound to an address leaves from its
 * port.  A destination in one of the ports' subnets that no port has
 * gets no answer to ARP: ADDR_ERROR, ETIMEDOUT, when the time asked for
 * is up.  One outside them has no route: RESOLVE_IP fails, ENETUNREACH.
 * Routes are the subnet manager's path records on InfiniBand (LIDs, MTU
 * 4096, 56 Gb/s, packet lifetime 18) and rdma_cm's own on RoCE (MTU 1024
 * for the 1500-byte interfaces, packet lifetime 16, hop limit 64).
 */
#include <errno.h>
#include <string.h>
#include <rdma/ib_user_sa.h>

#include "cma.h"

#define SA_PACKET_LIFE_TIME	18	/* opensm's default */
#define SA_RATE_56_GBPS		12	/* enum ib_rate: FDR 4X */
#define IBOE_PACKET_LIFE_TIME	16	/* CMA_IBOE_PACKET_LIFETIME */
#define IBOE_HOP_LIMIT		64	/* the IPv4 and IPv6 default */
#define IPOIB_QKEY		0x0b1bu	/* the IPoIB broadcast group's */

/* rdma_ip2gid(): an IPv4 address as a v4-mapped GID, IPv6 as it is. */
void cma_ip2gid(const struct sockaddr *addr, uint8_t gid[16])
{
	memset(gid, 0, 16);
	if (addr->sa_family == AF_INET) {
		gid[10] = gid[11] = 0xff;
		memcpy(gid + 12, &((const struct sockaddr_in *)addr)->sin_addr,
		       4);
	} else if (addr->sa_family == AF_INET6) {
		memcpy(gid, ((const struct sockaddr_in6 *)addr)->sin6_addr.s6_addr,
		       16);
	}
}

static bool on_ethernet(const struct sim_port *port)
{
	return port->link_layer == IBV_LINK_LAYER_ETHERNET;
}

/* cma_dev->default_gid_type: RoCE v2 where the firmware offers it. */
static uint8_t default_gid_type(const struct sim_port *port)
{
	if (!on_ethernet(port))
		return 0;
	return sim.opt.model->roce_v2 ? IBV_GID_TYPE_ROCE_V2 :
					IBV_GID_TYPE_ROCE_V1;
}

/* The GID table index of @gid of @type on @port, or -1. */
static int gid_index(const struct sim_port *port, const uint8_t gid[16],
		     uint8_t type)
{
	uint8_t g[16];

	if (!on_ethernet(port)) {
		port_gid(port, 0, g);
		return memcmp(g, gid, 16) ? -1 : 0;
	}
	for (int i = 0; i < port->ngids; i++)
		if (port->gids[i].type == type &&
		    !memcmp(port->gids[i].gid, gid, 16))
			return i;
	return -1;
}

/* The device an id is bound to: its port, GID type, source GID, P_Key. */
static void attach(struct cma_id *id, struct sim_port *port)
{
	id->port = port;
	id->gid_type = default_gid_type(port);
	id->pkey = 0xffff;
	if (on_ethernet(port))
		cma_ip2gid((struct sockaddr *)&id->src, id->sgid);
	else
		port_gid(port, 0, id->sgid);
}

/* rdma_translate_ip() and cma_acquire_dev_by_src_ip(), for a bind. */
int cma_acquire_by_addr(struct cma_id *id, const struct sockaddr *addr)
{
	struct sim_port *port = port_by_ip(addr);

	if (!port || !port_on_host(port, cma_id_host(id)))
		return -EADDRNOTAVAIL;
	attach(id, port);
	return 0;
}

/*
 * cma_ib_acquire_dev(): a request's new id takes the port the request
 * reached, which must have a GID for the id's source address.
 */
int cma_acquire_for_req(struct cma_id *id, const struct cm_req_info *req)
{
	int index;

	attach(id, req->port);
	index = gid_index(req->port, id->sgid, id->gid_type);
	if (index < 0 && id->qp_type != IBV_QPT_UD)
		return -ENODEV;
	id->pkey = on_ethernet(req->port) ? 0xffff : req->pkey;
	if (id->qp_type != IBV_QPT_UD) {
		id->path = req->path;
		id->path.sgid_index = index;
		id->path.gid_type = id->gid_type;
		memcpy(id->dgid, req->path.dgid, 16);
	}
	return 0;
}

/* cma_set_default_qkey() */
int cma_default_qkey(struct cma_id *id)
{
	if (id->ps == RDMA_PS_UDP || id->ps == RDMA_PS_IB)
		id->qkey = RDMA_UDP_QKEY;
	else if (id->ps == RDMA_PS_IPOIB)
		id->qkey = IPOIB_QKEY;	/* (the kernel asks the SA for it) */
	return 0;
}

void cma_read_gids(const struct cma_id *id, uint8_t *sgid, uint8_t *dgid)
{
	if (!id->port) {
		if (sgid)
			memset(sgid, 0, 16);
		if (dgid)
			memset(dgid, 0, 16);
	} else if (on_ethernet(id->port)) {
		if (sgid)
			cma_ip2gid((const struct sockaddr *)&id->src, sgid);
		if (dgid)
			cma_ip2gid((const struct sockaddr *)&id->dst, dgid);
	} else {
		if (sgid)
			memcpy(sgid, id->sgid, 16);
		if (dgid)
			memcpy(dgid, id->dgid, 16);
	}
}

/* ------------------------------------------------------------------ */
/* Address resolution                                                  */
/* ------------------------------------------------------------------ */

/* An IPv4 (224/4) or IPv6 (ff00::/8) multicast address. */
static bool multicast(const struct sockaddr *addr)
{
	uint8_t gid[16];

	cma_ip2gid(addr, gid);
	return addr->sa_family == AF_INET ? (gid[12] & 0xf0) == 0xe0 :
					    gid[0] == 0xff;
}

/*
 * The subnets the ports' interfaces are on, and multicast, which leaves
 * by the id's port: anything else has no route.
 */
static bool routable(const struct sockaddr *dst)
{
	uint8_t gid[16];

	if (multicast(dst) || cma_any_addr(dst))
		return true;
	cma_ip2gid(dst, gid);
	if (dst->sa_family == AF_INET)
		return (gid[12] == 192 && gid[13] == 168 &&
			(gid[14] == 77 || gid[14] == 78)) || gid[12] == 10;
	/* fd00:77::/64, fd00:78::/64, fe80::/64 */
	return (gid[0] == 0xfd && gid[1] == 0 && gid[2] == 0 &&
		(gid[3] == 0x77 || gid[3] == 0x78)) ||
	       (gid[0] == 0xfe && gid[1] == 0x80);
}

static void schedule(struct cma_id *id, uint32_t event, int status,
		     uint64_t delay_ms)
{
	id->timer_event = event;
	id->timer_status = status;
	timer_arm(&id->timer, delay_ms * 1000000ull);
}

/* cma_bind_loopback(): the first active port, by its GID 0. */
static int bind_loopback(struct cma_id *id)
{
	struct sim_port *first = host_first_port(cma_id_host(id));

	if (!first)
		return -ENODEV;
	/* cma_set_loopback(): the source is the loopback address. */
	if (id->src.ss_family == AF_INET)
		((struct sockaddr_in *)&id->src)->sin_addr.s_addr =
			htobe32(0x7f000001);
	else
		((struct sockaddr_in6 *)&id->src)->sin6_addr = in6addr_loopback;
	attach(id, first);
	port_gid(first, 0, id->sgid);
	return 0;
}

/* resolve_prepare_src(): bound (to any address, if none), then querying. */
static int prepare_src(struct cma_id *id, const struct sockaddr *src,
		       const struct sockaddr *dst)
{
	struct sockaddr_storage any = { .ss_family = dst->sa_family };
	int err;

	if (id->state == CMA_ADDR_BOUND) {
		memcpy(&id->dst, dst, cma_addr_size(dst));
	} else {
		if (dst->sa_family == AF_INET6)
			((struct sockaddr_in6 *)&any)->sin6_scope_id =
				((const struct sockaddr_in6 *)dst)->sin6_scope_id;
		err = cma_bind(id, src && src->sa_family ? src :
				   (struct sockaddr *)&any);
		if (err)
			return err;
		memcpy(&id->dst, dst, cma_addr_size(dst));
	}
	if (id->src.ss_family != dst->sa_family)
		return -EINVAL;
	id->state = CMA_ADDR_QUERY;
	return 0;
}

int cma_resolve_addr(struct cma_id *id, const struct sockaddr *src,
		     const struct sockaddr *dst, uint32_t timeout_ms)
{
	struct sim_port *owner;
	int err = prepare_src(id, src, dst);

	if (err)
		return err;
	if (!routable(dst)) {
		id->state = CMA_ADDR_BOUND;
		return -ENETUNREACH;
	}
	/*
	 * The host's own "any" address (cma_resolve_loopback()), and a
	 * multicast group, whose MAC is its address's: no neighbour to ask.
	 */
	if (cma_any_addr(dst) || multicast(dst)) {
		if (!id->port && bind_loopback(id)) {
			id->state = CMA_ADDR_BOUND;
			return -ENODEV;	/* a process of no host's */
		}
		memcpy(id->dgid, id->sgid, 16);
		schedule(id, CMA_EV_ADDR_RESOLVED, 0, 0);
		return 0;
	}
	owner = port_by_ip(dst);
	if (!owner || owner->down)
		schedule(id, CMA_EV_ADDR_ERROR, -ETIMEDOUT, timeout_ms);
	else
		schedule(id, CMA_EV_ADDR_RESOLVED, 0, 0);
	return 0;
}

/*
 * addr_handler(): the destination found.  An id bound to no address
 * leaves from the destination's own port (the loopback route), its
 * source address the destination's.
 */
static int addr_resolved(struct cma_id *id)
{
	const struct sockaddr *dst = (const void *)&id->dst;
	struct sim_port *to = port_by_ip(dst);
	uint16_t port = cma_port((struct sockaddr *)&id->src);

	if (!to)
		return -ETIMEDOUT;	/* its interface went meanwhile */
	if (id->port && id->port->link_layer != to->link_layer)
		return -ENETUNREACH;
	if (!id->port && !port_on_host(to, cma_id_host(id))) {
		/* Another host's: through our interface on its subnet. */
		struct sim_port *via = host_route(cma_id_host(id), dst, to,
						  &id->src);

		if (!via)
			return -ENETUNREACH;
		((struct sockaddr_in *)&id->src)->sin_port = htobe16(port);
		attach(id, via);
	} else if (!id->port) {
		memcpy(&id->src, dst, cma_addr_size(dst));
		/* (sin_port and sin6_port lie at the same place) */
		((struct sockaddr_in *)&id->src)->sin_port = htobe16(port);
		attach(id, to);
	}
	if (on_ethernet(to))
		cma_ip2gid(dst, id->dgid);
	else
		port_gid(to, 0, id->dgid);
	return 0;
}

static void addr_event(struct cma_id *id, uint32_t event, int status)
{
	struct rdma_ucm_conn_param p = {};

	if (id->state != CMA_ADDR_QUERY)
		return;
	if (event == CMA_EV_ADDR_RESOLVED && !cma_any_addr((void *)&id->dst) &&
	    !multicast((void *)&id->dst))
		status = addr_resolved(id);
	if (status) {
		id->state = CMA_ADDR_BOUND;
		event = CMA_EV_ADDR_ERROR;
	} else {
		id->state = CMA_ADDR_RESOLVED;
	}
	ucma_event(id, event, status, &p, sizeof(p), NULL);
}

/* ------------------------------------------------------------------ */
/* Route resolution                                                    */
/* ------------------------------------------------------------------ */

/* The SA's path record between two InfiniBand ports, both ACTIVE. */
static int ib_route(struct cma_id *id, struct cm_path *p)
{
	uint64_t guid;
	struct sim_port *to;

	memcpy(&guid, id->dgid + 8, 8);
	to = NULL;
	for (int h = 0; h < sim.opt.nhcas && !to; h++)
		for (int i = 0; i < sim.hca[h].nports && !to; i++)
			if (htobe64(sim.hca[h].port[i].guid) == guid &&
			    !on_ethernet(&sim.hca[h].port[i]) &&
			    port_active(&sim.hca[h].port[i]))
				to = &sim.hca[h].port[i];
	if (!to)
		return -EHOSTUNREACH;
	p->slid = id->port->lid;
	p->dlid = to->lid;
	p->mtu = IBV_MTU_4096;
	p->rate = SA_RATE_56_GBPS;
	p->packet_life_time = SA_PACKET_LIFE_TIME;
	p->pkey = id->pkey;
	p->grh = false;
	return 0;
}

/* cma_get_roce_udp_flow_label(): from the ports, as the kernel hashes. */
static uint32_t roce_flow_label(const struct cma_id *id)
{
	uint32_t sport = cma_port((const struct sockaddr *)&id->src);
	uint32_t dport = cma_port((const struct sockaddr *)&id->dst);
	const struct sockaddr_in6 *s6 = (const void *)&id->src;
	uint32_t fl = 0;

	if (id->src.ss_family == AF_INET6)
		fl = be32toh(s6->sin6_flowinfo) & 0xfffff;
	return fl ? fl : (sport * 31 + dport) & 0xfffff;
}

/* cma_resolve_iboe_route(): a RoCE path rdma_cm makes itself. */
static int iboe_route(struct cma_id *id, struct cm_path *p)
{
	uint8_t tos = id->tos_set ? id->tos : 0;

	cma_ip2gid((struct sockaddr *)&id->src, p->sgid);
	cma_ip2gid((struct sockaddr *)&id->dst, p->dgid);
	if (gid_index(id->port, p->sgid, id->gid_type) < 0)
		return -ENODEV;
	p->sgid_index = gid_index(id->port, p->sgid, id->gid_type);
	p->slid = p->dlid = 0xffff;
	p->grh = true;
	p->hop_limit = IBOE_HOP_LIMIT;
	p->traffic_class = tos;
	p->sl = 0;
	p->mtu = IBV_MTU_1024;
	p->rate = 0;			/* IB_RATE_PORT_CURRENT */
	p->pkey = 0xffff;
	p->packet_life_time = id->ack_timeout_set && id->ack_timeout ?
			      id->ack_timeout - 1 : IBOE_PACKET_LIFE_TIME;
	if (id->gid_type == IBV_GID_TYPE_ROCE_V2)
		p->flow_label = roce_flow_label(id);
	return 0;
}

int cma_resolve_route(struct cma_id *id, uint32_t timeout_ms)
{
	struct cm_path p = { .port = id->port };
	int err;

	if (!timeout_ms || id->state != CMA_ADDR_RESOLVED)
		return -EINVAL;
	memcpy(p.sgid, id->sgid, 16);
	memcpy(p.dgid, id->dgid, 16);
	p.gid_type = id->gid_type;
	if (on_ethernet(id->port)) {
		err = iboe_route(id, &p);
		if (err)
			return err;
		id->path = p;
		id->num_paths = 1;
		id->state = CMA_ROUTE_QUERY;
		schedule(id, CMA_EV_ROUTE_RESOLVED, 0, 0);
		return 0;
	}
	/* ib_sa has no address for the SM of a port not ACTIVE (send_mad). */
	if (!port_active(id->port))
		return -EAGAIN;
	id->state = CMA_ROUTE_QUERY;
	err = ib_route(id, &p);
	if (err) {
		schedule(id, CMA_EV_ROUTE_ERROR, err, 0);
		return 0;
	}
	id->path = p;
	schedule(id, CMA_EV_ROUTE_RESOLVED, 0, 0);
	return 0;
}

static void route_event(struct cma_id *id, uint32_t event, int status)
{
	struct rdma_ucm_conn_param p = {};

	if (id->state != CMA_ROUTE_QUERY)
		return;
	if (status) {
		id->state = CMA_ADDR_RESOLVED;
	} else {
		id->state = CMA_ROUTE_RESOLVED;
		id->num_paths = 1;
	}
	ucma_event(id, event, status, &p, sizeof(p), NULL);
}

/* The id's timer: what address or route resolution found. */
void cma_resolve_fire(struct sim_timer *timer)
{
	struct cma_id *id = container_of(timer, struct cma_id, timer);

	switch (id->timer_event) {
	case CMA_EV_ADDR_RESOLVED:
	case CMA_EV_ADDR_ERROR:
		addr_event(id, id->timer_event, id->timer_status);
		break;
	default:
		route_event(id, id->timer_event, id->timer_status);
		break;
	}
}
