/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rdma_cm (drivers/infiniband/core/cma.c) over ib_cm (cm.c): an id's
 * states, its port number in its port space, listening, and the requests,
 * replies and rejections of connections (RC, by REQ, REP and RTU) and of
 * UD ids (by SIDR), with what each event tells the process (ucma.c).
 * Address and route resolution, QP attributes and multicast are in
 * cma-addr.c.
 *
 * What the kernel's rdma_cm does for a consumer's QP of its own is left
 * out: every id here is a process's, whose QP the process moves itself
 * (with INIT_QP_ATTR).  AF_IB addresses are refused (EAFNOSUPPORT): the
 * model serves the IP port spaces, and librdmacm, refused at its first
 * AF_IB bind, uses the IP commands.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>

#include "ucma.h"

#define CMA_VERSION		0x00
#define CMA_HDR_SIZE		36	/* struct cma_hdr, in private data */
#define PROT_SOCK		1024
#define LOCAL_PORT_LOW		32768	/* ip_local_port_range's default */
#define LOCAL_PORT_HIGH		60999
#define SIM_AF_IB		27

static struct list_node binds = LIST_INIT(binds);
static uint16_t last_used_port;

/* ------------------------------------------------------------------ */
/* Addresses                                                           */
/* ------------------------------------------------------------------ */

static const uint8_t *in6_bytes(const struct sockaddr *a)
{
	return ((const struct sockaddr_in6 *)a)->sin6_addr.s6_addr;
}

static uint32_t in4_addr(const struct sockaddr *a)
{
	return be32toh(((const struct sockaddr_in *)a)->sin_addr.s_addr);
}

/* cma_zero_addr() || cma_loopback_addr() */
bool cma_any_addr(const struct sockaddr *addr)
{
	static const uint8_t zero[16], loop6[16] = { [15] = 1 };

	switch (addr->sa_family) {
	case AF_INET:
		return !in4_addr(addr) || in4_addr(addr) >> 24 == 127;
	case AF_INET6:
		return !memcmp(in6_bytes(addr), zero, 16) ||
		       !memcmp(in6_bytes(addr), loop6, 16);
	default:
		return false;
	}
}

/* rdma_addr_size() */
socklen_t cma_addr_size(const struct sockaddr *addr)
{
	switch (addr->sa_family) {
	case AF_INET:
		return sizeof(struct sockaddr_in);
	case AF_INET6:
		return sizeof(struct sockaddr_in6);
	case SIM_AF_IB:
		return 48;		/* struct sockaddr_ib */
	default:
		return 0;
	}
}

uint16_t cma_port(const struct sockaddr *addr)
{
	switch (addr->sa_family) {
	case AF_INET:
		return be16toh(((const struct sockaddr_in *)addr)->sin_port);
	case AF_INET6:
		return be16toh(((const struct sockaddr_in6 *)addr)->sin6_port);
	default:
		return 0;
	}
}

static void set_port(struct sockaddr *addr, uint16_t port)
{
	if (addr->sa_family == AF_INET)
		((struct sockaddr_in *)addr)->sin_port = htobe16(port);
	else if (addr->sa_family == AF_INET6)
		((struct sockaddr_in6 *)addr)->sin6_port = htobe16(port);
}

/* cma_addr_cmp(): 0 when the two name the same address. */
static int addr_cmp(const struct sockaddr *a, const struct sockaddr *b)
{
	if (a->sa_family != b->sa_family)
		return -1;
	if (a->sa_family == AF_INET)
		return in4_addr(a) != in4_addr(b);
	return memcmp(in6_bytes(a), in6_bytes(b), 16) != 0;
}

/* rdma_get_service_id(): the port space, then the port. */
uint64_t cma_service_id(const struct cma_id *id, const struct sockaddr *a)
{
	return ((uint64_t)id->ps << 16) + cma_port(a);
}

bool cma_on_roce(const struct cma_id *id)
{
	return id->port && id->port->link_layer == IBV_LINK_LAYER_ETHERNET;
}

/* ------------------------------------------------------------------ */
/* Ids                                                                 */
/* ------------------------------------------------------------------ */

struct cma_id *cma_create(uint16_t ps, uint8_t qp_type)
{
	struct cma_id *id = malloc(sizeof(*id));

	if (!id)
		return NULL;
	*id = (struct cma_id){
		.state = CMA_IDLE, .ps = ps, .qp_type = qp_type,
		.seq_num = random() & PSN_MASK,	/* a random starting PSN */
	};
	list_init(&id->mcs);
	list_init(&id->bind_link);
	list_init(&id->file_link);
	id->timer.fire = cma_resolve_fire;
	return id;
}

/* _destroy_id(): what it was doing stops, its peer hears (cm_destroy). */
/* What an id holds below it: its timer, its ib_cm id (@end), its port. */
static void release(struct cma_id *id, void (*end)(struct cm_id *cm))
{
	timer_cancel(&id->timer);
	if (id->cm) {
		end(id->cm);
		id->cm = NULL;
	}
	cma_release_port(id);
}

void cma_destroy(struct cma_id *id)
{
	id->state = CMA_DESTROYING;
	release(id, cm_destroy);
	free(id);
}

/*
 * The id's device is gone (cma_process_remove(), then ucma's close_work):
 * what rdma_destroy_id() releases goes now, with no word to the peer (a
 * dead device sends no MAD); the id stays for its process to destroy.
 */
void cma_device_gone(struct cma_id *id)
{
	id->state = CMA_DEVICE_REMOVAL;
	release(id, cm_drop);
}

/* ------------------------------------------------------------------ */
/* Port numbers                                                        */
/* ------------------------------------------------------------------ */

static struct cma_bind *bind_find(uint16_t ps, uint16_t port)
{
	struct cma_bind *b;

	list_for_each(&binds, b, struct cma_bind, link)
		if (b->ps == ps && b->port == port)
			return b;
	return NULL;
}

static void bind_to(struct cma_bind *b, struct cma_id *id)
{
	set_port((struct sockaddr *)&id->src, b->port);
	id->bind = b;
	list_add_tail(&b->owners, &id->bind_link);
}

static int alloc_port(uint16_t ps, struct cma_id *id, uint16_t port)
{
	struct cma_bind *b = calloc(1, sizeof(*b));

	if (!b)
		return -ENOMEM;
	b->ps = ps;
	b->port = port;
	list_init(&b->owners);
	list_add_tail(&binds, &b->link);
	bind_to(b, id);
	return 0;
}

void cma_release_port(struct cma_id *id)
{
	struct cma_bind *b = id->bind;

	if (!b)
		return;
	list_del(&id->bind_link);
	id->bind = NULL;
	if (list_empty(&b->owners)) {
		list_del(&b->link);
		free(b);
	}
}

/* cma_port_is_unique(): an ephemeral port another id may share. */
static int port_is_unique(struct cma_bind *b, const struct cma_id *id)
{
	const struct sockaddr *da = (const void *)&id->dst;
	const struct sockaddr *sa = (const void *)&id->src;
	struct cma_id *cur;

	list_for_each(&b->owners, cur, struct cma_id, bind_link) {
		const struct sockaddr *cda = (const void *)&cur->dst;
		const struct sockaddr *csa = (const void *)&cur->src;

		if (cma_port(da) && cma_port(cda) &&
		    cma_port(da) != cma_port(cda))
			continue;
		if (!cma_any_addr(sa) && !cma_any_addr(csa) &&
		    addr_cmp(sa, csa))
			continue;
		if (!cma_any_addr(da) && !cma_any_addr(cda) &&
		    addr_cmp(da, cda))
			continue;
		return -EADDRNOTAVAIL;
	}
	return 0;
}

/* cma_alloc_any_port(): the next ephemeral port that fits. */
static int alloc_any_port(uint16_t ps, struct cma_id *id)
{
	int remaining = LOCAL_PORT_HIGH - LOCAL_PORT_LOW + 1;
	unsigned int rover = LOCAL_PORT_LOW +
			     random() % (unsigned int)remaining;

	for (; remaining; remaining--) {
		struct cma_bind *b = bind_find(ps, rover);
		int err;

		if (last_used_port != rover) {
			err = b ? port_is_unique(b, id) : alloc_port(ps, id, rover);
			if (!err && b)
				bind_to(b, id);
			if (!err)
				last_used_port = rover;
			if (err != -EADDRNOTAVAIL)
				return err;
		}
		if (++rover > LOCAL_PORT_HIGH)
			rover = LOCAL_PORT_LOW;
	}
	return -EADDRNOTAVAIL;
}

/* cma_check_port(): may @id have this port (to bind, or to listen)? */
static int check_port(struct cma_bind *b, const struct cma_id *id,
		      bool reuseaddr)
{
	const struct sockaddr *addr = (const void *)&id->src;
	struct cma_id *cur;

	list_for_each(&b->owners, cur, struct cma_id, bind_link) {
		const struct sockaddr *ca = (const void *)&cur->src;

		if (cur == id || (reuseaddr && cur->reuseaddr))
			continue;
		/* Each host's port spaces are its own (--hosts). */
		if (cma_id_host(cur) != cma_id_host(id))
			continue;
		if (id->afonly && cur->afonly &&
		    addr->sa_family != ca->sa_family)
			continue;
		if (cma_any_addr(addr) || cma_any_addr(ca))
			return -EADDRNOTAVAIL;
		if (!addr_cmp(addr, ca))
			return -EADDRINUSE;
	}
	return 0;
}

/* cma_use_port(): the port asked for; below 1024 only with the right. */
static int use_port(uint16_t ps, struct cma_id *id)
{
	uint16_t port = cma_port((struct sockaddr *)&id->src);
	struct cma_bind *b;
	int err;

	if (port < PROT_SOCK &&
	    !has_capability(id->file->ctx->pid, CAP_NET_BIND_SERVICE))
		return -EACCES;
	b = bind_find(ps, port);
	if (!b)
		return alloc_port(ps, id, port);
	err = check_port(b, id, id->reuseaddr);
	if (!err)
		bind_to(b, id);
	return err;
}

static int get_port(struct cma_id *id)
{
	switch (id->ps) {
	case RDMA_PS_TCP:
	case RDMA_PS_UDP:
	case RDMA_PS_IPOIB:
	case RDMA_PS_IB:
		break;
	default:
		return -EPROTONOSUPPORT;
	}
	if (!cma_port((struct sockaddr *)&id->src))
		return alloc_any_port(id->ps, id);
	return use_port(id->ps, id);
}

/* ------------------------------------------------------------------ */
/* Bind and listen                                                     */
/* ------------------------------------------------------------------ */

/* cma_check_linklocal(): a link-local IPv6 address needs its interface. */
static int check_linklocal(const struct sockaddr *addr)
{
	const struct sockaddr_in6 *sin6 = (const void *)addr;

	if (addr->sa_family != AF_INET6 ||
	    !IN6_IS_ADDR_LINKLOCAL(&sin6->sin6_addr))
		return 0;
	return sin6->sin6_scope_id ? 0 : -EINVAL;
}

/* rdma_bind_addr_dst() */
int cma_bind(struct cma_id *id, const struct sockaddr *addr)
{
	int family = addr->sa_family;
	int err;

	if (family != AF_INET && family != AF_INET6)
		return -EAFNOSUPPORT;	/* AF_IB too: see the top */
	if (id->state != CMA_IDLE)
		return -EINVAL;
	id->state = CMA_ADDR_BOUND;
	err = check_linklocal(addr);
	if (err)
		goto fail;
	memcpy(&id->src, addr, cma_addr_size(addr));
	if (!cma_any_addr(addr)) {
		err = cma_acquire_by_addr(id, addr);
		if (err)
			goto fail;
	}
	if (!id->afonly_set)
		id->afonly = family == AF_INET;	/* bindv6only is 0 */
	id->dst.ss_family = family;
	err = get_port(id);
	if (!err)
		return 0;
	id->port = NULL;
fail:
	id->state = CMA_IDLE;
	return err;
}

int cma_listen(struct cma_id *id, int backlog)
{
	struct sockaddr_in any = { .sin_family = AF_INET };
	int err;

	(void)backlog;		/* ucma counts it (cma_id->backlog) */
	if (id->state != CMA_ADDR_BOUND) {
		err = cma_bind(id, (struct sockaddr *)&any);
		if (err)
			return err;
	}
	/* A listening id may not share its port with another, reused or not. */
	if (id->reuseaddr) {
		err = check_port(id->bind, id, false);
		if (err)
			return err;
		id->reuseaddr = false;
	}
	id->state = CMA_LISTEN;
	return 0;
}

/* The port number a service id names, if any id holds it. */
struct cma_bind *cma_bind_of(uint64_t service_id)
{
	if (service_id >> 32)
		return NULL;
	return bind_find(service_id >> 16, service_id & 0xffff);
}

/* Whether ib_cm has a listener for @service_id on @port's device. */
bool cma_has_listener(const struct sim_port *port, uint64_t service_id)
{
	struct cma_bind *b;
	struct cma_id *id;

	b = cma_bind_of(service_id);
	if (!b)
		return false;
	list_for_each(&b->owners, id, struct cma_id, bind_link)
		if (id->state == CMA_LISTEN &&
		    port_on_host(port, cma_id_host(id)) &&
		    (!id->port || id->port->hca == port->hca))
			return true;
	return false;
}
