/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rdma_ucm's commands that act on an id (ucma.c has the files, the
 * table and the rest): each copies its structure from the process as the
 * kernel does (the whole structure, whatever the header's length says,
 * but CONNECT and ACCEPT, which take what in says), checks what ucma
 * checks before it looks the id up, and leaves the rest to rdma_cm
 * (cma.c).
 */
#define _GNU_SOURCE
#include <errno.h>
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

int ucma_bind_ip(struct ucma_cmd *c)
{
	struct rdma_ucm_bind_ip cmd;
	struct cma_id *id;
	int err;

	err = ucma_copy_in(c, c->in, &cmd, sizeof(cmd));
	if (err)
		return err;
	if (!size_in6(&cmd.addr))
		return -EINVAL;
	id = ucma_get_id(c, cmd.id, &err);
	return id ? cma_bind(id, (struct sockaddr *)&cmd.addr) : err;
}

int ucma_bind(struct ucma_cmd *c)
{
	struct rdma_ucm_bind cmd;
	struct cma_id *id;
	int err;

	err = ucma_copy_in(c, c->in, &cmd, sizeof(cmd));
	if (err)
		return err;
	if (cmd.reserved || !cmd.addr_size ||
	    cmd.addr_size != cma_addr_size((struct sockaddr *)&cmd.addr))
		return -EINVAL;
	id = ucma_get_id(c, cmd.id, &err);
	return id ? cma_bind(id, (struct sockaddr *)&cmd.addr) : err;
}

int ucma_resolve_ip(struct ucma_cmd *c)
{
	struct rdma_ucm_resolve_ip cmd;
	struct cma_id *id;
	int err;

	err = ucma_copy_in(c, c->in, &cmd, sizeof(cmd));
	if (err)
		return err;
	if ((cmd.src_addr.sin6_family && !size_in6(&cmd.src_addr)) ||
	    !size_in6(&cmd.dst_addr))
		return -EINVAL;
	id = ucma_get_id(c, cmd.id, &err);
	if (!id)
		return err;
	return cma_resolve_addr(id, (struct sockaddr *)&cmd.src_addr,
				(struct sockaddr *)&cmd.dst_addr,
				cmd.timeout_ms);
}

int ucma_resolve_addr(struct ucma_cmd *c)
{
	struct rdma_ucm_resolve_addr cmd;
	struct sockaddr *src, *dst;
	struct cma_id *id;
	int err;

	err = ucma_copy_in(c, c->in, &cmd, sizeof(cmd));
	if (err)
		return err;
	src = (struct sockaddr *)&cmd.src_addr;
	dst = (struct sockaddr *)&cmd.dst_addr;
	if (cmd.reserved ||
	    (cmd.src_size && cmd.src_size != cma_addr_size(src)) ||
	    !cmd.dst_size || cmd.dst_size != cma_addr_size(dst))
		return -EINVAL;
	id = ucma_get_id(c, cmd.id, &err);
	return id ? cma_resolve_addr(id, src, dst, cmd.timeout_ms) : err;
}

int ucma_resolve_route(struct ucma_cmd *c)
{
	struct rdma_ucm_resolve_route cmd;
	struct cma_id *id;
	int err;

	err = ucma_copy_in(c, c->in, &cmd, sizeof(cmd));
	if (err)
		return err;
	id = ucma_get_id_dev(c, cmd.id, &err);
	return id ? cma_resolve_route(id, cmd.timeout_ms) : err;
}

int ucma_connect(struct ucma_cmd *c)
{
	struct rdma_ucm_connect cmd = {};
	struct rdma_ucm_ece ece = {};
	struct cma_id *id;
	size_t size;
	int err;

	if (c->in_len < (int)offsetofend(struct rdma_ucm_connect, reserved))
		return -EINVAL;
	size = MIN((size_t)c->in_len, sizeof(cmd));
	err = ucma_copy_in(c, c->in, &cmd, size);
	if (err)
		return err;
	if (!cmd.conn_param.valid)
		return -EINVAL;
	id = ucma_get_id_dev(c, cmd.id, &err);
	if (!id)
		return err;
	if (offsetofend(struct rdma_ucm_connect, ece) <= size)
		ece = cmd.ece;
	return cma_connect(id, &cmd.conn_param, &ece);
}

int ucma_listen(struct ucma_cmd *c)
{
	struct rdma_ucm_listen cmd;
	struct cma_id *id;
	int err;

	err = ucma_copy_in(c, c->in, &cmd, sizeof(cmd));
	if (err)
		return err;
	id = ucma_get_id(c, cmd.id, &err);
	if (!id)
		return err;
	if ((int)cmd.backlog <= 0 || cmd.backlog > UCMA_MAX_BACKLOG)
		cmd.backlog = UCMA_MAX_BACKLOG;
	id->backlog = cmd.backlog;
	return cma_listen(id, cmd.backlog);
}

int ucma_accept(struct ucma_cmd *c)
{
	struct rdma_ucm_accept cmd = {};
	struct rdma_ucm_ece ece = {};
	struct cma_id *id;
	size_t size;
	int err;

	if (c->in_len < (int)offsetofend(struct rdma_ucm_accept, reserved))
		return -EINVAL;
	size = MIN((size_t)c->in_len, sizeof(cmd));
	err = ucma_copy_in(c, c->in, &cmd, size);
	if (err)
		return err;
	id = ucma_get_id_dev(c, cmd.id, &err);
	if (!id)
		return err;
	if (offsetofend(struct rdma_ucm_accept, ece) <= size)
		ece = cmd.ece;
	if (!cmd.conn_param.valid)
		return cma_accept(id, NULL, &ece);
	err = cma_accept(id, &cmd.conn_param, &ece);
	if (!err)
		id->uid = cmd.uid;
	return err;
}

int ucma_reject(struct ucma_cmd *c)
{
	struct rdma_ucm_reject cmd;
	struct cma_id *id;
	int err;

	err = ucma_copy_in(c, c->in, &cmd, sizeof(cmd));
	if (err)
		return err;
	if (!cmd.reason)
		cmd.reason = CM_REJ_CONSUMER_DEFINED;
	if (cmd.reason != CM_REJ_CONSUMER_DEFINED &&
	    cmd.reason != CM_REJ_VENDOR_OPTION_NOT_SUPPORTED)
		return -EINVAL;
	id = ucma_get_id_dev(c, cmd.id, &err);
	if (!id)
		return err;
	return cma_reject(id, cmd.private_data, cmd.private_data_len,
			  cmd.reason);
}

int ucma_disconnect(struct ucma_cmd *c)
{
	struct rdma_ucm_disconnect cmd;
	struct cma_id *id;
	int err;

	err = ucma_copy_in(c, c->in, &cmd, sizeof(cmd));
	if (err)
		return err;
	id = ucma_get_id_dev(c, cmd.id, &err);
	return id ? cma_disconnect(id) : err;
}

int ucma_init_qp_attr(struct ucma_cmd *c)
{
	struct rdma_ucm_init_qp_attr cmd;
	struct ib_uverbs_qp_attr resp;
	struct cma_id *id;
	int err;

	if (c->out_len < (int)sizeof(resp))
		return -ENOSPC;
	err = ucma_copy_in(c, c->in, &cmd, sizeof(cmd));
	if (err)
		return err;
	if (cmd.qp_state > IBV_QPS_ERR)
		return -EINVAL;
	id = ucma_get_id_dev(c, cmd.id, &err);
	if (!id)
		return err;
	memset(&resp, 0, sizeof(resp));
	err = cma_init_qp_attr(id, cmd.qp_state, &resp);
	if (err)
		return err;
	return ucma_copy_out(c, cmd.response, &resp, sizeof(resp));
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

int ucma_query_route(struct ucma_cmd *c)
{
	struct rdma_ucm_query_route_resp resp;
	struct rdma_ucm_query cmd;
	struct cma_id *id;
	int err;

	if (c->out_len < (int)offsetof(struct rdma_ucm_query_route_resp,
				       ibdev_index))
		return -ENOSPC;
	err = ucma_copy_in(c, c->in, &cmd, sizeof(cmd));
	if (err)
		return err;
	id = ucma_get_id(c, cmd.id, &err);
	if (!id)
		return err;
	memset(&resp, 0, sizeof(resp));
	copy_addr(&resp.src_addr, &id->src);
	copy_addr(&resp.dst_addr, &id->dst);
	if (id->port) {
		resp.node_guid = htobe64(id->port->hca->node_guid);
		resp.ibdev_index = id->port->hca->index;
		resp.port_num = id->port->num;
		route_resp(id, &resp);
	}
	return ucma_copy_out(c, cmd.response, &resp,
			     MIN((size_t)c->out_len, sizeof(resp)));
}

static void device_addr(const struct cma_id *id,
			struct rdma_ucm_query_addr_resp *resp)
{
	if (!id->port)
		return;
	resp->node_guid = htobe64(id->port->hca->node_guid);
	resp->ibdev_index = id->port->hca->index;
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

int ucma_query(struct ucma_cmd *c)
{
	struct rdma_ucm_query cmd;
	struct cma_id *id;
	int err;

	err = ucma_copy_in(c, c->in, &cmd, sizeof(cmd));
	if (err)
		return err;
	id = ucma_get_id(c, cmd.id, &err);
	if (!id)
		return err;
	switch (cmd.option) {
	case RDMA_USER_CM_QUERY_ADDR:
		return query_addr(c, id, cmd.response);
	case RDMA_USER_CM_QUERY_PATH:
		return query_path(c, id, cmd.response);
	case RDMA_USER_CM_QUERY_GID:
		return query_gid(c, id, cmd.response);
	default:
		return -ENOSYS;
	}
}

/* ------------------------------------------------------------------ */
/* Options and notices                                                 */
/* ------------------------------------------------------------------ */

/*
 * KMALLOC_MAX_SIZE on x86-64: the most memdup_user() copies; any length
 * below it is taken (a short option is refused by its level).
 */
#define UCMA_OPTLEN_MAX		(4u << 20)

int ucma_set_option(struct ucma_cmd *c)
{
	struct rdma_ucm_set_option cmd;
	struct cma_id *id;
	void *val;
	int err;

	err = ucma_copy_in(c, c->in, &cmd, sizeof(cmd));
	if (err)
		return err;
	if (cmd.optlen > UCMA_OPTLEN_MAX)
		return -EINVAL;
	id = ucma_get_id(c, cmd.id, &err);
	if (!id)
		return err;
	val = malloc(cmd.optlen ? cmd.optlen : 1);
	if (!val)
		return -ENOMEM;
	err = ucma_copy_in(c, cmd.optval, val, cmd.optlen);
	if (!err)
		err = cma_set_option(id, cmd.level, cmd.optname, val,
				     cmd.optlen);
	free(val);
	return err;
}

int ucma_notify(struct ucma_cmd *c)
{
	struct rdma_ucm_notify cmd;
	struct cma_id *id;
	int err;

	err = ucma_copy_in(c, c->in, &cmd, sizeof(cmd));
	if (err)
		return err;
	id = ucma_get_id(c, cmd.id, &err);
	if (!id)
		return err;
	return id->port ? cma_notify(id, cmd.event) : -EINVAL;
}
