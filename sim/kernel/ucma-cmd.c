/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rdma_ucm's commands that act on an id (ucma.c has the files, the
 * table and the rest): each copies its structure from the process as the
 * kernel does (the whole structure, whatever the header's length says,
 * but CONNECT and ACCEPT, which take what in says), checks what ucma
 * checks before it looks the id up, and leaves the rest to rdma_cm
 * (cma.c): one table row (run()) and one action each.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "ucma.h"

/* rdma_addr_size() of an address in a sockaddr_in6 (0: not one). */
static socklen_t size_in6(const struct sockaddr_in6 *addr)
{
	socklen_t size = cma_addr_size((const struct sockaddr *)addr);

	return size <= sizeof(*addr) ? size : 0;
}

/* ------------------------------------------------------------------ */
/* What ucma checks before it looks the id up                          */
/* ------------------------------------------------------------------ */

static int check_bind_ip(const void *p)
{
	const struct rdma_ucm_bind_ip *cmd = p;

	return size_in6(&cmd->addr) ? 0 : -EINVAL;
}

static int check_bind(const void *p)
{
	const struct rdma_ucm_bind *cmd = p;

	return cmd->reserved || !cmd->addr_size ||
	       cmd->addr_size != cma_addr_size((struct sockaddr *)&cmd->addr) ?
	       -EINVAL : 0;
}

static int check_resolve_ip(const void *p)
{
	const struct rdma_ucm_resolve_ip *cmd = p;

	return (cmd->src_addr.sin6_family && !size_in6(&cmd->src_addr)) ||
	       !size_in6(&cmd->dst_addr) ? -EINVAL : 0;
}

static int check_resolve_addr(const void *p)
{
	const struct rdma_ucm_resolve_addr *cmd = p;
	const struct sockaddr *src = (const void *)&cmd->src_addr;
	const struct sockaddr *dst = (const void *)&cmd->dst_addr;

	return cmd->reserved ||
	       (cmd->src_size && cmd->src_size != cma_addr_size(src)) ||
	       !cmd->dst_size || cmd->dst_size != cma_addr_size(dst) ?
	       -EINVAL : 0;
}

static int check_connect(const void *p)
{
	const struct rdma_ucm_connect *cmd = p;

	return cmd->conn_param.valid ? 0 : -EINVAL;
}

/* A reason of 0 is the consumer's; only two may be given. */
static int check_reject(const void *p)
{
	const struct rdma_ucm_reject *cmd = p;

	return !cmd->reason || cmd->reason == CM_REJ_CONSUMER_DEFINED ||
	       cmd->reason == CM_REJ_VENDOR_OPTION_NOT_SUPPORTED ? 0 : -EINVAL;
}

static int check_qp_state(const void *p)
{
	const struct rdma_ucm_init_qp_attr *cmd = p;

	return cmd->qp_state > IBV_QPS_ERR ? -EINVAL : 0;
}

/*
 * KMALLOC_MAX_SIZE on x86-64: the most memdup_user() copies; any length
 * below it is taken (a short option is refused by its level).
 */
#define UCMA_OPTLEN_MAX		(4u << 20)

static int check_optlen(const void *p)
{
	const struct rdma_ucm_set_option *cmd = p;

	return cmd->optlen > UCMA_OPTLEN_MAX ? -EINVAL : 0;
}

/* ------------------------------------------------------------------ */
/* What each does with its id                                          */
/* ------------------------------------------------------------------ */

static int act_bind_ip(struct ucma_cmd *c, struct cma_id *id, void *p)
{
	struct rdma_ucm_bind_ip *cmd = p;

	(void)c;
	return cma_bind(id, (struct sockaddr *)&cmd->addr);
}

static int act_bind(struct ucma_cmd *c, struct cma_id *id, void *p)
{
	struct rdma_ucm_bind *cmd = p;

	(void)c;
	return cma_bind(id, (struct sockaddr *)&cmd->addr);
}

/* RESOLVE_IP's addresses are sockaddr_in6, RESOLVE_ADDR's any size. */
static int act_resolve_ip(struct ucma_cmd *c, struct cma_id *id, void *p)
{
	struct rdma_ucm_resolve_ip *r = p;

	(void)c;
	return cma_resolve_addr(id, (void *)&r->src_addr, (void *)&r->dst_addr,
				r->timeout_ms);
}

static int act_resolve_addr(struct ucma_cmd *c, struct cma_id *id, void *p)
{
	struct rdma_ucm_resolve_addr *a = p;

	(void)c;
	return cma_resolve_addr(id, (void *)&a->src_addr, (void *)&a->dst_addr,
				a->timeout_ms);
}

static int act_resolve_route(struct ucma_cmd *c, struct cma_id *id, void *p)
{
	(void)c;
	return cma_resolve_route(id,
		((struct rdma_ucm_resolve_route *)p)->timeout_ms);
}

static int act_connect(struct ucma_cmd *c, struct cma_id *id, void *p)
{
	struct rdma_ucm_connect *cmd = p;

	(void)c;
	return cma_connect(id, &cmd->conn_param, &cmd->ece);
}

/* ucma_listen(): a backlog of none or past the sysctl is the sysctl's. */
static int act_listen(struct ucma_cmd *c, struct cma_id *id, void *p)
{
	struct rdma_ucm_listen *cmd = p;

	(void)c;
	if ((int)cmd->backlog <= 0 || cmd->backlog > UCMA_MAX_BACKLOG)
		cmd->backlog = UCMA_MAX_BACKLOG;
	id->backlog = cmd->backlog;
	return cma_listen(id, cmd->backlog);
}

/* An accepted connection's events carry the uid ACCEPT gives. */
static int act_accept(struct ucma_cmd *c, struct cma_id *id, void *p)
{
	struct rdma_ucm_accept *cmd = p;
	int err;

	(void)c;
	if (!cmd->conn_param.valid)
		return cma_accept(id, NULL, &cmd->ece);
	err = cma_accept(id, &cmd->conn_param, &cmd->ece);
	if (!err)
		id->uid = cmd->uid;
	return err;
}

static int act_reject(struct ucma_cmd *c, struct cma_id *id, void *p)
{
	struct rdma_ucm_reject *cmd = p;

	(void)c;
	return cma_reject(id, cmd->private_data, cmd->private_data_len,
			  cmd->reason ? cmd->reason : CM_REJ_CONSUMER_DEFINED);
}

static int act_disconnect(struct ucma_cmd *c, struct cma_id *id, void *p)
{
	(void)c;
	(void)p;
	return cma_disconnect(id);
}

static int act_init_qp_attr(struct ucma_cmd *c, struct cma_id *id, void *p)
{
	struct rdma_ucm_init_qp_attr *cmd = p;
	struct ib_uverbs_qp_attr resp;
	int err;

	memset(&resp, 0, sizeof(resp));
	err = cma_init_qp_attr(id, cmd->qp_state, &resp);
	return err ? err : ucma_copy_out(c, cmd->response, &resp, sizeof(resp));
}

static int act_set_option(struct ucma_cmd *c, struct cma_id *id, void *p)
{
	struct rdma_ucm_set_option *cmd = p;
	void *val = malloc(cmd->optlen ? cmd->optlen : 1);
	int err;

	if (!val)
		return -ENOMEM;
	err = ucma_copy_in(c, cmd->optval, val, cmd->optlen);
	if (!err)
		err = cma_set_option(id, cmd->level, cmd->optname, val,
				     cmd->optlen);
	free(val);
	return err;
}

static int act_notify(struct ucma_cmd *c, struct cma_id *id, void *p)
{
	(void)c;
	return id->port ? cma_notify(id, ((struct rdma_ucm_notify *)p)->event) :
			  -EINVAL;
}

/* ------------------------------------------------------------------ */
/* Queries                                                             */
/* ------------------------------------------------------------------ */

static void copy_addr(struct sockaddr_in6 *to, const struct sockaddr_storage *a)
{
	memcpy(to, a, a->ss_family == AF_INET ? sizeof(struct sockaddr_in) :
						sizeof(struct sockaddr_in6));
}

/*
 * The route as ucma_copy_ib_route() and ucma_copy_iboe_route() give it:
 * the paths once the route is resolved, before that only the GIDs (an
 * InfiniBand port's from the address resolution, a RoCE port's from the
 * addresses) and the P_Key.
 */
static void route_resp(const struct cma_id *id,
		       struct rdma_ucm_query_route_resp *resp)
{
	resp->num_paths = id->num_paths;
	if (id->num_paths) {
		cma_path_to_user(&id->path, &resp->ib_route[0]);
		return;
	}
	if (cma_on_roce(id)) {
		cma_ip2gid((const struct sockaddr *)&id->dst,
			   resp->ib_route[0].dgid);
		cma_ip2gid((const struct sockaddr *)&id->src,
			   resp->ib_route[0].sgid);
		resp->ib_route[0].pkey = htobe16(0xffff);
		return;
	}
	memcpy(resp->ib_route[0].dgid, id->dgid, 16);
	memcpy(resp->ib_route[0].sgid, id->sgid, 16);
	resp->ib_route[0].pkey = htobe16(id->pkey);
}

static int act_query_route(struct ucma_cmd *c, struct cma_id *id, void *p)
{
	struct rdma_ucm_query_route_resp resp;
	struct rdma_ucm_query *cmd = p;

	memset(&resp, 0, sizeof(resp));
	copy_addr(&resp.src_addr, &id->src);
	copy_addr(&resp.dst_addr, &id->dst);
	if (id->port) {
		resp.node_guid = htobe64(id->port->hca->node_guid);
		resp.ibdev_index = id->port->hca->local;
		resp.port_num = id->port->num;
		route_resp(id, &resp);
	}
	return ucma_copy_out(c, cmd->response, &resp,
			     MIN((size_t)c->out_len, sizeof(resp)));
}

static void device_addr(const struct cma_id *id,
			struct rdma_ucm_query_addr_resp *resp)
{
	if (!id->port)
		return;
	resp->node_guid = htobe64(id->port->hca->node_guid);
	resp->ibdev_index = id->port->hca->local;
	resp->port_num = id->port->num;
	resp->pkey = htobe16(id->pkey);
}

static int query_addr(struct ucma_cmd *c, const struct cma_id *id,
		      uint64_t response)
{
	struct rdma_ucm_query_addr_resp resp;

	if (c->out_len < (int)offsetof(struct rdma_ucm_query_addr_resp,
				       ibdev_index))
		return -ENOSPC;
	memset(&resp, 0, sizeof(resp));
	resp.src_size = cma_addr_size((const struct sockaddr *)&id->src);
	memcpy(&resp.src_addr, &id->src, resp.src_size);
	resp.dst_size = cma_addr_size((const struct sockaddr *)&id->dst);
	memcpy(&resp.dst_addr, &id->dst, resp.dst_size);
	device_addr(id, &resp);
	return ucma_copy_out(c, response, &resp,
			     MIN((size_t)c->out_len, sizeof(resp)));
}

/* The path records, packed as the SA sends them (ib_sa_pack_path). */
static int query_path(struct ucma_cmd *c, const struct cma_id *id,
		      uint64_t response)
{
	struct {
		struct rdma_ucm_query_path_resp head;
		struct ib_path_rec_data data[1];
	} resp;
	int n = 0;

	if (c->out_len < (int)sizeof(resp.head))
		return -ENOSPC;
	memset(&resp, 0, sizeof(resp));
	resp.head.num_paths = id->num_paths;
	if (id->num_paths &&
	    c->out_len - sizeof(resp.head) > sizeof(resp.data[0])) {
		resp.data[0].flags = IB_PATH_GMP | IB_PATH_PRIMARY |
				     IB_PATH_BIDIRECTIONAL;
		cma_pack_path(id, &id->path,
			      (uint8_t *)resp.data[0].path_rec);
		n = 1;
	}
	return ucma_copy_out(c, response, &resp,
			     sizeof(resp.head) + n * sizeof(resp.data[0]));
}

/* struct sockaddr_ib, which the simulator's ids never use themselves. */
struct sim_sockaddr_ib {
	uint16_t sib_family;
	uint16_t sib_pkey;
	uint32_t sib_flowinfo;
	uint8_t sib_addr[16];
	uint64_t sib_sid;
	uint64_t sib_sid_mask;
	uint64_t sib_scope_id;
};

#define SIM_AF_IB	27

/* The GIDs and service ids as AF_IB addresses (ucma_query_gid()). */
static int query_gid(struct ucma_cmd *c, const struct cma_id *id,
		     uint64_t response)
{
	struct rdma_ucm_query_addr_resp resp;
	struct sim_sockaddr_ib *sib;

	if (c->out_len < (int)offsetof(struct rdma_ucm_query_addr_resp,
				       ibdev_index))
		return -ENOSPC;
	memset(&resp, 0, sizeof(resp));
	device_addr(id, &resp);
	sib = (struct sim_sockaddr_ib *)&resp.src_addr;
	resp.src_size = sizeof(*sib);
	sib->sib_family = SIM_AF_IB;
	sib->sib_pkey = resp.pkey;
	cma_read_gids(id, sib->sib_addr, NULL);
	sib->sib_sid = htobe64(cma_service_id(id,
				(const struct sockaddr *)&id->src));
	sib = (struct sim_sockaddr_ib *)&resp.dst_addr;
	resp.dst_size = sizeof(*sib);
	sib->sib_family = SIM_AF_IB;
	sib->sib_pkey = resp.pkey;
	cma_read_gids(id, NULL, sib->sib_addr);
	sib->sib_sid = htobe64(cma_service_id(id,
				(const struct sockaddr *)&id->dst));
	return ucma_copy_out(c, response, &resp,
			     MIN((size_t)c->out_len, sizeof(resp)));
}

static int act_query(struct ucma_cmd *c, struct cma_id *id, void *p)
{
	struct rdma_ucm_query *cmd = p;

	switch (cmd->option) {
	case RDMA_USER_CM_QUERY_ADDR:
		return query_addr(c, id, cmd->response);
	case RDMA_USER_CM_QUERY_PATH:
		return query_path(c, id, cmd->response);
	case RDMA_USER_CM_QUERY_GID:
		return query_gid(c, id, cmd->response);
	default:
		return -ENOSYS;
	}
}

/* ------------------------------------------------------------------ */
/* The commands                                                        */
/* ------------------------------------------------------------------ */

/*
 * A command that acts on an id: the room its response needs (ENOSPC
 * first, as ucma checks it before it copies), its structure (CONNECT and
 * ACCEPT copy what in says, at least down to their reserved field, and
 * their ECE, last, only when it is there whole), ucma's checks before the
 * look-up, whether the id must be bound to a device (ucma_get_ctx_dev),
 * what it does.
 */
struct id_cmd {
	size_t min_out;
	size_t size;
	size_t least;			/* 0: the whole structure */
	size_t id_off;
	bool dev;
	int (*check)(const void *cmd);
	int (*act)(struct ucma_cmd *c, struct cma_id *id, void *cmd);
};

#define ID_CMD(type, min_out, least, dev, check, act) \
	{ min_out, sizeof(type), least, offsetof(type, id), dev, check, act }

/* Room for any of them. */
union id_cmds {
	struct rdma_ucm_bind_ip bind_ip;
	struct rdma_ucm_bind bind;
	struct rdma_ucm_resolve_ip resolve_ip;
	struct rdma_ucm_resolve_addr resolve_addr;
	struct rdma_ucm_connect connect;
	struct rdma_ucm_accept accept;
	struct rdma_ucm_reject reject;
	struct rdma_ucm_init_qp_attr init_qp_attr;
	struct rdma_ucm_set_option set_option;
};

static int run(struct ucma_cmd *c, const struct id_cmd *d)
{
	union id_cmds cmd;
	size_t size = d->size;
	uint32_t handle;
	struct cma_id *id;
	int err;

	if (c->out_len < (int)d->min_out)
		return -ENOSPC;
	if (d->least) {
		if (c->in_len < (int)d->least)
			return -EINVAL;
		if ((size_t)c->in_len < d->size)
			size = d->least;
	}
	memset(&cmd, 0, sizeof(cmd));
	err = ucma_copy_in(c, c->in, &cmd, size);
	if (!err && d->check)
		err = d->check(&cmd);
	if (err)
		return err;
	memcpy(&handle, (uint8_t *)&cmd + d->id_off, sizeof(handle));
	id = d->dev ? ucma_get_id_dev(c, handle, &err) :
		      ucma_get_id(c, handle, &err);
	return id ? d->act(c, id, &cmd) : err;
}

#define EXPORT_CMD(name, type, min_out, least, dev, check)		\
	int ucma_##name(struct ucma_cmd *c)				\
	{								\
		static const struct id_cmd d = ID_CMD(type, min_out,	\
			least, dev, check, act_##name);			\
		return run(c, &d);					\
	}

EXPORT_CMD(bind_ip, struct rdma_ucm_bind_ip, 0, 0, false, check_bind_ip)
EXPORT_CMD(bind, struct rdma_ucm_bind, 0, 0, false, check_bind)
EXPORT_CMD(resolve_ip, struct rdma_ucm_resolve_ip, 0, 0, false,
	   check_resolve_ip)
EXPORT_CMD(resolve_addr, struct rdma_ucm_resolve_addr, 0, 0, false,
	   check_resolve_addr)
EXPORT_CMD(resolve_route, struct rdma_ucm_resolve_route, 0, 0, true, NULL)
EXPORT_CMD(query_route, struct rdma_ucm_query,
	   offsetof(struct rdma_ucm_query_route_resp, ibdev_index), 0, false,
	   NULL)
EXPORT_CMD(query, struct rdma_ucm_query, 0, 0, false, NULL)
EXPORT_CMD(connect, struct rdma_ucm_connect, 0,
	   offsetofend(struct rdma_ucm_connect, reserved), true, check_connect)
EXPORT_CMD(listen, struct rdma_ucm_listen, 0, 0, false, NULL)
EXPORT_CMD(accept, struct rdma_ucm_accept, 0,
	   offsetofend(struct rdma_ucm_accept, reserved), true, NULL)
EXPORT_CMD(reject, struct rdma_ucm_reject, 0, 0, true, check_reject)
EXPORT_CMD(disconnect, struct rdma_ucm_disconnect, 0, 0, true, NULL)
EXPORT_CMD(init_qp_attr, struct rdma_ucm_init_qp_attr,
	   sizeof(struct ib_uverbs_qp_attr), 0, true, check_qp_state)
EXPORT_CMD(set_option, struct rdma_ucm_set_option, 0, 0, false,
	   check_optlen)
EXPORT_CMD(notify, struct rdma_ucm_notify, 0, 0, false, NULL)
