/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rdma_cm's multicast joins (rdma_join_multicast()): a UD id's group, its
 * MGID made from the IP address as the kernel maps it, on InfiniBand the
 * MLID the subnet manager gives the group (one per MGID, from 0xc001),
 * and MULTICAST_JOIN with the address vector a process sends to the
 * group by, on the next pass of the loop (the SA's answer).  The process
 * attaches its QP itself (librdmacm does, on the event).
 */
#include <errno.h>
#include <string.h>

#include "cma.h"

#define ENOTSUPP		524	/* the kernel's, for RoCE v2 and IPv6 */
#define MLID_FIRST		0xc001
#define IPOIB_SCOPE_LINK	2

struct mc_group {
	uint8_t mgid[16];
	uint16_t mlid;
	int users;
};

static struct mc_group groups[256];

/* The SM's MLID for @mgid: the group's, made at its first join. */
static int group_join(const uint8_t mgid[16], uint16_t *mlid)
{
	struct mc_group *free_slot = NULL;

	for (size_t i = 0; i < ARRAY_SIZE(groups); i++) {
		if (groups[i].users && !memcmp(groups[i].mgid, mgid, 16)) {
			groups[i].users++;
			*mlid = groups[i].mlid;
			return 0;
		}
		if (!groups[i].users && !free_slot)
			free_slot = &groups[i];
	}
	if (!free_slot)
		return -ENOMEM;
	memcpy(free_slot->mgid, mgid, 16);
	free_slot->mlid = MLID_FIRST + (free_slot - groups);
	free_slot->users = 1;
	*mlid = free_slot->mlid;
	return 0;
}

static void group_leave(const uint8_t mgid[16])
{
	for (size_t i = 0; i < ARRAY_SIZE(groups); i++)
		if (groups[i].users && !memcmp(groups[i].mgid, mgid, 16)) {
			groups[i].users--;
			return;
		}
}

/*
 * cma_set_mgid(): an InfiniBand MGID for an IP group, as IPoIB maps one
 * (ip_ib_mc_map(), ipv6_ib_mc_map(): link-local scope, the default P_Key),
 * with rdma_cm's signature for the UDP port space; an IPv6 address that
 * is an SA-assigned MGID already is taken as it is.
 */
static void ib_mgid(const struct cma_id *id, const struct sockaddr *addr,
		    uint8_t mgid[16])
{
	const struct sockaddr_in6 *sin6 = (const void *)addr;

	memset(mgid, 0, 16);
	if (addr->sa_family == AF_INET6 &&
	    (be32toh(*(const uint32_t *)sin6->sin6_addr.s6_addr) &
	     0xfff0ffff) == 0xff10a01b) {
		memcpy(mgid, sin6->sin6_addr.s6_addr, 16);
		return;
	}
	mgid[0] = 0xff;
	mgid[1] = 0x10 | IPOIB_SCOPE_LINK;
	mgid[2] = addr->sa_family == AF_INET ? 0x40 : 0x60;
	mgid[3] = id->ps == RDMA_PS_UDP ? 0x01 : 0x1b;
	mgid[4] = mgid[5] = 0xff;		/* P_Key */
	if (addr->sa_family == AF_INET) {
		uint32_t ip = be32toh(((const struct sockaddr_in *)addr)->sin_addr.s_addr);

		mgid[12] = (ip >> 24) & 0x0f;
		mgid[13] = ip >> 16;
		mgid[14] = ip >> 8;
		mgid[15] = ip;
	} else {
		memcpy(mgid + 6, sin6->sin6_addr.s6_addr + 6, 10);
	}
}

/* cma_iboe_set_mgid(): RoCE's group GID. */
static void iboe_mgid(const struct sockaddr *addr, uint8_t gid_type,
		      uint8_t mgid[16])
{
	if (addr->sa_family == AF_INET6) {
		memcpy(mgid, ((const struct sockaddr_in6 *)addr)->sin6_addr.s6_addr,
		       16);
		return;
	}
	memset(mgid, 0, 16);
	if (gid_type != IBV_GID_TYPE_ROCE_V2) {
		mgid[0] = 0xff;
		mgid[1] = 0x0e;
	}
	mgid[10] = mgid[11] = 0xff;
	memcpy(mgid + 12, &((const struct sockaddr_in *)addr)->sin_addr, 4);
}

static void join_fire(struct sim_timer *timer)
{
	struct cma_mc *mc = container_of(timer, struct cma_mc, timer);
	struct cma_id *id = mc->id;
	struct rdma_ucm_ud_param p = {};
	struct cm_path path = { .port = id->port, .grh = true };

	memcpy(path.dgid, mc->mgid, 16);
	path.dlid = mc->mlid;
	if (id->port->link_layer == IBV_LINK_LAYER_ETHERNET) {
		path.sgid_index = id->path.sgid_index;
		path.hop_limit = id->gid_type == IBV_GID_TYPE_ROCE_V2 &&
				 mc->addr.ss_family == AF_INET ? 64 : 1;
	}
	cma_ah_attr(&path, &p.ah_attr);
	p.qp_num = 0xffffff;
	p.qkey = id->qkey;
	ucma_mc_event(mc, CMA_EV_MULTICAST_JOIN, 0, &p);
}

static int iboe_join(struct cma_mc *mc)
{
	const struct sockaddr *addr = (const void *)&mc->addr;
	struct cma_id *id = mc->id;
	uint8_t sgid[16];

	if (cma_any_addr(addr) && addr->sa_family == AF_INET &&
	    !((const struct sockaddr_in *)addr)->sin_addr.s_addr)
		return -EINVAL;
	if (addr->sa_family == AF_INET6 &&
	    id->gid_type == IBV_GID_TYPE_ROCE_V2)
		return -ENOTSUPP;
	iboe_mgid(addr, id->gid_type, mc->mgid);
	cma_ip2gid((const struct sockaddr *)&id->src, sgid);
	id->path.sgid_index = 0;
	for (int i = 0; i < id->port->ngids; i++)
		if (id->port->gids[i].type == id->gid_type &&
		    !memcmp(id->port->gids[i].gid, sgid, 16)) {
			id->path.sgid_index = i;
			break;
		}
	mc->mlid = 0;
	return 0;
}

int cma_join(struct cma_mc *mc)
{
	struct cma_id *id = mc->id;
	int err;

	if (!id->port || (id->state != CMA_ADDR_BOUND &&
			  id->state != CMA_ADDR_RESOLVED))
		return -EINVAL;
	if (id->qp_type != IBV_QPT_UD)
		return -EINVAL;
	if (!id->qkey)
		cma_default_qkey(id);
	if (id->port->link_layer == IBV_LINK_LAYER_ETHERNET) {
		err = iboe_join(mc);
	} else {
		ib_mgid(id, (const struct sockaddr *)&mc->addr, mc->mgid);
		err = group_join(mc->mgid, &mc->mlid);
	}
	if (err)
		return err;
	mc->timer.fire = join_fire;
	timer_arm(&mc->timer, 0);
	return 0;
}

void cma_leave(struct cma_mc *mc)
{
	timer_cancel(&mc->timer);
	if (mc->mlid)
		group_leave(mc->mgid);
	mc->mlid = 0;
}
