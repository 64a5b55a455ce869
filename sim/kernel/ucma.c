/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * /dev/infiniband/rdma_cm: the kernel's rdma_ucm (drivers/infiniband/core
 * /ucma.c) over the daemon's rdma_cm (cma.c).
 *
 * Each open of the file is one connection from the preload library
 * (preload-rdmacm.c).  A write(2) reaches the daemon as where its bytes
 * lie in the process: the command is read there and the responses are
 * written there, as the kernel's copy_from_user() and copy_to_user() do,
 * so that a command shorter than its structure, a response pointer into
 * nothing, every length the header claims, act as on the kernel.  Ids and
 * multicast ids are numbered among every file, lowest free first, as
 * ucma's xarrays number them; a file finds only its own (EINVAL for
 * another's, ENOENT for none).  Events wait on the file's list; the
 * process's descriptor is a socket that holds a byte while the list is
 * not empty (and one more for each event, so that an edge-triggered epoll
 * wakes for each), and GET_EVENT takes them in order.
 *
 * When the file closes, or its process dies, every id it holds is
 * destroyed as ucma_close() destroys them, with what that sends to their
 * peers (cma.c, cm.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../host/protocol.h"
#include "ucma.h"

struct ucma_event {
	struct list_node link;
	struct cma_id *id;		/* the id it is reported for */
	struct cma_mc *mc;		/* a multicast event's group */
	struct cma_id *conn;		/* CONNECT_REQUEST: the new id */
	struct rdma_ucm_event_resp resp;
};

static struct list_node files = LIST_INIT(files);
static uint32_t next_file_id;

/* ------------------------------------------------------------------ */
/* Handles: ucma's ctx_table and multicast_table                       */
/* ------------------------------------------------------------------ */

struct handles {
	void **slot;
	uint32_t size;
};

static struct handles id_handles, mc_handles;

/* The lowest free number, as xa_alloc() gives it; -ENOMEM if none. */
static int handle_alloc(struct handles *h, void *obj, uint32_t *out)
{
	uint32_t n;

	for (n = 0; n < h->size; n++)
		if (!h->slot[n])
			break;
	if (n == h->size) {
		uint32_t size = h->size ? h->size * 2 : 64;
		void **grown = realloc(h->slot, size * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		memset(grown + h->size, 0, (size - h->size) * sizeof(*grown));
		h->slot = grown;
		h->size = size;
	}
	h->slot[n] = obj;
	*out = n;
	return 0;
}

static void *handle_get(const struct handles *h, uint32_t n)
{
	return n < h->size ? h->slot[n] : NULL;
}

static void handle_free(struct handles *h, uint32_t n)
{
	if (n < h->size)
		h->slot[n] = NULL;
}

/* ------------------------------------------------------------------ */
/* The process's memory: the kernel's copies from and to the user      */
/* ------------------------------------------------------------------ */

int ucma_copy_in(const struct ucma_cmd *c, uint64_t addr, void *buf,
		 size_t len)
{
	return dma_read(c->file->ctx->pid, addr, buf, len) ? -EFAULT : 0;
}

int ucma_copy_out(const struct ucma_cmd *c, uint64_t addr, const void *buf,
		  size_t len)
{
	return dma_write(c->file->ctx->pid, addr, buf, len) ? -EFAULT : 0;
}

/* ------------------------------------------------------------------ */
/* Events                                                              */
/* ------------------------------------------------------------------ */

/* The descriptor's bytes say whether the list has events. */
static void events_signal(struct ucma_file *file)
{
	char byte = 'e';

	send(file->notify, &byte, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
}

static void events_drained(struct ucma_file *file)
{
	char buf[256];

	if (!list_empty(&file->events))
		return;
	while (recv(file->drain, buf, sizeof(buf), MSG_DONTWAIT) > 0)
		;
}

static void event_queue(struct ucma_file *file, struct ucma_event *ev)
{
	list_add_tail(&file->events, &ev->link);
	events_signal(file);
	sim.work_done = true;
}

static struct ucma_event *event_new(struct cma_id *id, uint32_t event,
				    int status, const void *param,
				    size_t param_len,
				    const struct rdma_ucm_ece *ece)
{
	struct ucma_event *ev = calloc(1, sizeof(*ev));

	if (!ev)
		return NULL;
	ev->id = id;
	ev->resp.uid = id->uid;
	ev->resp.id = id->handle;
	ev->resp.event = event;
	ev->resp.status = status;
	memcpy(&ev->resp.param, param,
	       MIN(param_len, sizeof(ev->resp.param)));
	if (ece)
		ev->resp.ece = *ece;
	return ev;
}

/*
 * ucma_event_handler(): an event for @id.  A new connection's id has no
 * uid until the process accepts it, and its events are dropped until
 * then (the accept will fail instead).
 */
void ucma_event(struct cma_id *id, uint32_t event, int status,
		const void *param, size_t param_len,
		const struct rdma_ucm_ece *ece)
{
	struct ucma_event *ev;

	if (!id->uid || !id->file)
		return;
	ev = event_new(id, event, status, param, param_len, ece);
	if (ev)
		event_queue(id->file, ev);
}

/* A multicast group's event: reported with the group's uid and id. */
void ucma_mc_event(struct cma_mc *mc, uint32_t event, int status,
		   const struct rdma_ucm_ud_param *ud)
{
	struct ucma_event *ev;

	if (!mc->id->file)
		return;
	ev = event_new(mc->id, event, status, ud, sizeof(*ud), NULL);
	if (!ev)
		return;
	ev->mc = mc;
	ev->resp.uid = mc->uid;
	ev->resp.id = mc->handle;
	event_queue(mc->id->file, ev);
}

/*
 * ucma_connect_event_handler(), first half: the id of a connection
 * request, in the listener's file, published at once (its handle finds
 * it before the process reads the event).  NULL when the listener's
 * backlog is full: the request is then dropped, and the active side
 * tries again.
 */
struct cma_id *ucma_conn_id(struct cma_id *listener)
{
	struct cma_id *conn;

	if (listener->backlog <= 0 || !listener->file)
		return NULL;
	conn = cma_create(listener->ps, listener->qp_type);
	if (!conn)
		return NULL;
	if (handle_alloc(&id_handles, conn, &conn->handle)) {
		cma_destroy(conn);
		return NULL;
	}
	conn->published = true;
	conn->file = listener->file;
	list_add_tail(&listener->file->ids, &conn->file_link);
	return conn;
}

/* The second half: the event, on the listener, naming the new id. */
void ucma_conn_request(struct cma_id *listener, struct cma_id *conn,
		       const void *param, size_t param_len,
		       const struct rdma_ucm_ece *ece)
{
	struct ucma_event *ev = event_new(listener, CMA_EV_CONNECT_REQUEST, 0,
					  param, param_len, ece);

	if (!ev) {
		ucma_conn_failed(conn);
		return;
	}
	listener->backlog--;
	ev->conn = conn;
	ev->resp.id = conn->handle;
	event_queue(listener->file, ev);
}

/* A connection's id that could not be reported: gone again. */
void ucma_conn_failed(struct cma_id *conn)
{
	handle_free(&id_handles, conn->handle);
	list_del(&conn->file_link);
	conn->published = false;
	conn->file = NULL;
	cma_destroy(conn);
}

/* ------------------------------------------------------------------ */
/* Destroying ids: ucma_destroy_private_ctx()                          */
/* ------------------------------------------------------------------ */

static void id_destroy(struct cma_id *id);

/*
 * Events not yet read go with their id; a listener's pending connection
 * requests take their new ids with them (which rejects them).  Destroying
 * one of those may take events of its own off the list (a process may
 * accept an id before it reads its request): the walk starts again.
 */
static int id_cleanup_events(struct cma_id *id)
{
	struct ucma_event *ev;
	bool again = true;

	while (again) {
		again = false;
		list_for_each(&id->file->events, ev, struct ucma_event, link) {
			if (ev->id != id)
				continue;
			list_del(&ev->link);
			if (ev->conn && ev->conn->published)
				id_destroy(ev->conn);
			free(ev);
			again = true;
			break;
		}
	}
	events_drained(id->file);
	return id->events_reported;
}

/* ucma_cleanup_mc_events(): a group's events go with it. */
static void id_cleanup_mc_events(struct cma_mc *mc)
{
	struct ucma_file *file = mc->id->file;
	struct ucma_event *ev, *tmp;

	list_for_each_safe(&file->events, ev, tmp, struct ucma_event, link) {
		if (ev->mc != mc)
			continue;
		list_del(&ev->link);
		free(ev);
	}
	events_drained(file);
}

static void mc_free(struct cma_mc *mc)
{
	handle_free(&mc_handles, mc->handle);
	list_del(&mc->link);
	free(mc);
}

static void id_destroy(struct cma_id *id)
{
	struct cma_mc *mc, *tmp;

	handle_free(&id_handles, id->handle);
	id->published = false;
	list_for_each_safe(&id->mcs, mc, tmp, struct cma_mc, link)
		cma_leave(mc);
	id_cleanup_events(id);
	list_for_each_safe(&id->mcs, mc, tmp, struct cma_mc, link)
		mc_free(mc);
	list_del(&id->file_link);
	id->file = NULL;
	cma_destroy(id);
}

/*
 * The adapter reset after a catastrophic error: mlx4_core unregisters its
 * device, and cma_process_remove() gives every id on it DEVICE_REMOVAL
 * (reported if the process has the id's uid), after which ucma's
 * close_work destroys the rdma_cm id under the process's handle, which
 * only DESTROY_ID still takes.  Ids listening on every device have none.
 */
void ucma_device_removal(const struct sim_hca *hca)
{
	struct rdma_ucm_conn_param p = {};
	struct ucma_file *file;
	struct cma_id *id;
	struct cma_mc *mc;

	list_for_each(&files, file, struct ucma_file, link)
		list_for_each(&file->ids, id, struct cma_id, file_link) {
			if (!id->port || id->port->hca != hca || id->closed)
				continue;
			ucma_event(id, CMA_EV_DEVICE_REMOVAL, 0, &p, sizeof(p),
				   NULL);
			list_for_each(&id->mcs, mc, struct cma_mc, link)
				cma_leave(mc);
			cma_device_gone(id);
			id->closed = true;
		}
}

/* ------------------------------------------------------------------ */
/* The commands                                                        */
/* ------------------------------------------------------------------ */

/* _ucma_find_context(): ENOENT for none, EINVAL for another file's. */
static struct cma_id *find_id(const struct ucma_cmd *c, uint32_t handle,
			      int *err)
{
	struct cma_id *id = handle_get(&id_handles, handle);

	*err = !id ? -ENOENT : id->file != c->file ? -EINVAL : 0;
	return *err ? NULL : id;
}

/* ucma_get_ctx(): an id of this file, ENXIO once its device went. */
struct cma_id *ucma_get_id(const struct ucma_cmd *c, uint32_t handle,
			   int *err)
{
	struct cma_id *id = find_id(c, handle, err);

	if (id && id->closed) {
		*err = -ENXIO;
		return NULL;
	}
	return id;
}

/* ucma_get_ctx_dev(): one that is bound to a device as well. */
struct cma_id *ucma_get_id_dev(const struct ucma_cmd *c, uint32_t handle,
			       int *err)
{
	struct cma_id *id = ucma_get_id(c, handle, err);

	if (id && !id->port) {
		*err = -EINVAL;
		return NULL;
	}
	return id;
}

static int qp_type_of(const struct rdma_ucm_create_id *cmd, uint8_t *type)
{
	switch (cmd->ps) {
	case RDMA_PS_TCP:
		*type = IBV_QPT_RC;
		return 0;
	case RDMA_PS_UDP:
	case RDMA_PS_IPOIB:
		*type = IBV_QPT_UD;
		return 0;
	case RDMA_PS_IB:
		*type = cmd->qp_type;
		return 0;
	default:
		return -EINVAL;
	}
}

static int ucma_create_id(struct ucma_cmd *c)
{
	struct rdma_ucm_create_id cmd;
	struct rdma_ucm_create_id_resp resp;
	struct cma_id *id;
	uint8_t type;
	int err;

	if (c->out_len < (int)sizeof(resp))
		return -ENOSPC;
	err = ucma_copy_in(c, c->in, &cmd, sizeof(cmd));
	if (!err)
		err = qp_type_of(&cmd, &type);
	if (err)
		return err;
	id = cma_create(cmd.ps, type);
	if (!id)
		return -ENOMEM;
	if (handle_alloc(&id_handles, id, &id->handle)) {
		cma_destroy(id);
		return -ENOMEM;
	}
	id->uid = cmd.uid;
	resp.id = id->handle;
	err = ucma_copy_out(c, cmd.response, &resp, sizeof(resp));
	if (err) {
		handle_free(&id_handles, id->handle);
		cma_destroy(id);
		return err;
	}
	id->file = c->file;
	id->published = true;
	list_add_tail(&c->file->ids, &id->file_link);
	return 0;
}

/* DESTROY_ID and LEAVE_MCAST: room for events_reported, then the command. */
static int destroy_cmd(struct ucma_cmd *c, struct rdma_ucm_destroy_id *cmd)
{
	if (c->out_len < (int)sizeof(struct rdma_ucm_destroy_id_resp))
		return -ENOSPC;
	return ucma_copy_in(c, c->in, cmd, sizeof(*cmd));
}

static int ucma_destroy_id(struct ucma_cmd *c)
{
	struct rdma_ucm_destroy_id cmd;
	struct rdma_ucm_destroy_id_resp resp;
	struct cma_id *id;
	int err = destroy_cmd(c, &cmd);

	if (err)
		return err;
	id = find_id(c, cmd.id, &err);
	if (!id)
		return err;
	resp.events_reported = id->events_reported;
	id_destroy(id);
	return ucma_copy_out(c, cmd.response, &resp, sizeof(resp));
}

static int ucma_get_event(struct ucma_cmd *c)
{
	struct rdma_ucm_get_event cmd;
	struct ucma_file *file = c->file;
	struct ucma_event *ev;
	size_t min = sizeof(ev->resp) - sizeof(ev->resp.reserved) -
		     sizeof(ev->resp.ece);
	int err;

	/* Old 32-bit libraries leave out the padding: ucma allows them. */
	if (c->out_len < (int)min)
		return -ENOSPC;
	err = ucma_copy_in(c, c->in, &cmd, sizeof(cmd));
	if (err)
		return err;
	if (list_empty(&file->events))
		return -EAGAIN;		/* the library waits, or returns it */
	ev = list_entry(file->events.next, struct ucma_event, link);
	err = ucma_copy_out(c, cmd.response, &ev->resp,
		       MIN((size_t)c->out_len, sizeof(ev->resp)));
	if (err)
		return err;
	list_del(&ev->link);
	ev->id->events_reported++;
	if (ev->mc)
		ev->mc->events_reported++;
	if (ev->resp.event == CMA_EV_CONNECT_REQUEST)
		ev->id->backlog++;
	free(ev);
	events_drained(file);
	return 0;
}


/*
 * ucma_migrate_id(): an id moves to this file from the one the command
 * names by descriptor (the library resolved it: migrate_from), with its
 * events, in order.  A file of another process is no descriptor of this
 * one: ENOENT, as fdget() finds none.
 */
static struct ucma_file *file_by_id(uint32_t id, pid_t pid)
{
	struct ucma_file *file;

	list_for_each(&files, file, struct ucma_file, link)
		if (file->id == id && file->ctx->pid == pid)
			return file;
	return NULL;
}

static void move_events(struct cma_id *id, struct ucma_file *from,
			struct ucma_file *to)
{
	struct ucma_event *ev, *tmp;

	list_for_each_safe(&from->events, ev, tmp, struct ucma_event, link) {
		if (ev->id != id)
			continue;
		list_del(&ev->link);
		event_queue(to, ev);
	}
	events_drained(from);
}

static int ucma_migrate_id(struct ucma_cmd *c)
{
	struct rdma_ucm_migrate_id cmd;
	struct rdma_ucm_migrate_resp resp;
	struct ucma_file *from;
	struct cma_id *id;
	int err;

	err = ucma_copy_in(c, c->in, &cmd, sizeof(cmd));
	if (err)
		return err;
	if (c->migrate_from == MLX4SIM_UCMA_NOT_UCMA)
		return -EINVAL;
	from = file_by_id(c->migrate_from, c->file->ctx->pid);
	if (!from)
		return -ENOENT;
	id = handle_get(&id_handles, cmd.id);
	if (!id)
		return -ENOENT;
	if (id->file != from)
		return -EINVAL;
	if (from != c->file) {
		list_del(&id->file_link);
		list_add_tail(&c->file->ids, &id->file_link);
		id->file = c->file;
		move_events(id, from, c->file);
	}
	resp.events_reported = id->events_reported;
	return ucma_copy_out(c, cmd.response, &resp, sizeof(resp));
}

/* ucma_process_join(): a multicast group for a UD id, numbered. */
static int process_join(struct ucma_cmd *c, struct rdma_ucm_join_mcast *cmd)
{
	struct rdma_ucm_create_id_resp resp;
	struct sockaddr *addr = (struct sockaddr *)&cmd->addr;
	struct cma_mc *mc;
	struct cma_id *id;
	int err;

	if (c->out_len < (int)sizeof(resp))
		return -ENOSPC;
	if (cmd->addr_size != cma_addr_size(addr))
		return -EINVAL;
	if (cmd->join_flags != RDMA_MC_JOIN_FLAG_FULLMEMBER &&
	    cmd->join_flags != RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER)
		return -EINVAL;
	id = ucma_get_id_dev(c, cmd->id, &err);
	if (!id)
		return err;
	mc = calloc(1, sizeof(*mc));
	if (!mc)
		return -ENOMEM;
	if (handle_alloc(&mc_handles, mc, &mc->handle)) {
		free(mc);
		return -ENOMEM;
	}
	mc->id = id;
	mc->uid = cmd->uid;
	mc->join_state = 1u << cmd->join_flags;
	memcpy(&mc->addr, addr, cmd->addr_size);
	list_add_tail(&id->mcs, &mc->link);
	err = cma_join(mc);
	if (err) {
		mc_free(mc);
		return err;
	}
	resp.id = mc->handle;
	err = ucma_copy_out(c, cmd->response, &resp, sizeof(resp));
	if (err) {
		cma_leave(mc);
		id_cleanup_mc_events(mc);
		mc_free(mc);
	}
	return err;
}

static int ucma_join_ip_mcast(struct ucma_cmd *c)
{
	struct rdma_ucm_join_ip_mcast cmd;
	struct rdma_ucm_join_mcast join = {};
	socklen_t size;
	int err;

	err = ucma_copy_in(c, c->in, &cmd, sizeof(cmd));
	if (err)
		return err;
	size = cma_addr_size((struct sockaddr *)&cmd.addr);
	if (!size || size > sizeof(cmd.addr))
		return -EINVAL;
	join.response = cmd.response;
	join.uid = cmd.uid;
	join.id = cmd.id;
	join.addr_size = size;
	join.join_flags = RDMA_MC_JOIN_FLAG_FULLMEMBER;
	memcpy(&join.addr, &cmd.addr, size);
	return process_join(c, &join);
}

static int ucma_join_mcast(struct ucma_cmd *c)
{
	struct rdma_ucm_join_mcast cmd;
	int err;

	err = ucma_copy_in(c, c->in, &cmd, sizeof(cmd));
	if (err)
		return err;
	if (!cma_addr_size((struct sockaddr *)&cmd.addr))
		return -EINVAL;
	return process_join(c, &cmd);
}

static int ucma_leave_mcast(struct ucma_cmd *c)
{
	struct rdma_ucm_destroy_id cmd;
	struct rdma_ucm_destroy_id_resp resp;
	int err = destroy_cmd(c, &cmd);
	struct cma_mc *mc = err ? NULL : handle_get(&mc_handles, cmd.id);

	if (err)
		return err;
	if (!mc || mc->id->file != c->file)
		return mc ? -EINVAL : -ENOENT;
	if (mc->id->closed)
		return -ENXIO;
	cma_leave(mc);
	id_cleanup_mc_events(mc);
	resp.events_reported = mc->events_reported;
	mc_free(mc);
	return ucma_copy_out(c, cmd.response, &resp, sizeof(resp));
}

/* ------------------------------------------------------------------ */
/* The table and a write                                               */
/* ------------------------------------------------------------------ */

/* ------------------------------------------------------------------ */
/* The trace: "p<pid> open rdma_cm", "p<pid> ucma COMMAND ret=R"       */
/* ------------------------------------------------------------------ */

static const char *const cmd_names[] = {
	"CREATE_ID", "DESTROY_ID", "BIND_IP", "RESOLVE_IP", "RESOLVE_ROUTE",
	"QUERY_ROUTE", "CONNECT", "LISTEN", "ACCEPT", "REJECT", "DISCONNECT",
	"INIT_QP_ATTR", "GET_EVENT", "GET_OPTION", "SET_OPTION", "NOTIFY",
	"JOIN_IP_MCAST", "LEAVE_MCAST", "MIGRATE_ID", "QUERY", "BIND",
	"RESOLVE_ADDR", "JOIN_MCAST",
};

static void trace_ucma(const struct sim_ctx *ctx, uint32_t cmd, int err)
{
	fprintf(sim_trace, "p%d ucma %s ret=%d\n", (int)ctx->pid,
		cmd < ARRAY_SIZE(cmd_names) ? cmd_names[cmd] : "?", err);
}

static void trace_ucma_open(const struct sim_ctx *ctx)
{
	fprintf(sim_trace, "p%d open rdma_cm\n", (int)ctx->pid);
}

typedef int (*ucma_handler)(struct ucma_cmd *c);

static const ucma_handler handlers[] = {
	[RDMA_USER_CM_CMD_CREATE_ID]	= ucma_create_id,
	[RDMA_USER_CM_CMD_DESTROY_ID]	= ucma_destroy_id,
	[RDMA_USER_CM_CMD_BIND_IP]	= ucma_bind_ip,
	[RDMA_USER_CM_CMD_RESOLVE_IP]	= ucma_resolve_ip,
	[RDMA_USER_CM_CMD_RESOLVE_ROUTE] = ucma_resolve_route,
	[RDMA_USER_CM_CMD_QUERY_ROUTE]	= ucma_query_route,
	[RDMA_USER_CM_CMD_CONNECT]	= ucma_connect,
	[RDMA_USER_CM_CMD_LISTEN]	= ucma_listen,
	[RDMA_USER_CM_CMD_ACCEPT]	= ucma_accept,
	[RDMA_USER_CM_CMD_REJECT]	= ucma_reject,
	[RDMA_USER_CM_CMD_DISCONNECT]	= ucma_disconnect,
	[RDMA_USER_CM_CMD_INIT_QP_ATTR]	= ucma_init_qp_attr,
	[RDMA_USER_CM_CMD_GET_EVENT]	= ucma_get_event,
	[RDMA_USER_CM_CMD_GET_OPTION]	= NULL,	/* ucma has none: ENOSYS */
	[RDMA_USER_CM_CMD_SET_OPTION]	= ucma_set_option,
	[RDMA_USER_CM_CMD_NOTIFY]	= ucma_notify,
	[RDMA_USER_CM_CMD_JOIN_IP_MCAST] = ucma_join_ip_mcast,
	[RDMA_USER_CM_CMD_LEAVE_MCAST]	= ucma_leave_mcast,
	[RDMA_USER_CM_CMD_MIGRATE_ID]	= ucma_migrate_id,
	[RDMA_USER_CM_CMD_QUERY]	= ucma_query,
	[RDMA_USER_CM_CMD_BIND]		= ucma_bind,
	[RDMA_USER_CM_CMD_RESOLVE_ADDR]	= ucma_resolve_addr,
	[RDMA_USER_CM_CMD_JOIN_MCAST]	= ucma_join_mcast,
};

/* ucma_write(): the header's checks, then the command; 0 or -errno. */
static int ucma_write(struct ucma_file *file,
			  const struct mlx4sim_ucma_write *w)
{
	struct rdma_ucm_cmd_hdr hdr;
	struct ucma_cmd c = { .file = file, .migrate_from = w->migrate_from };
	int err;

	if (w->count < sizeof(hdr))
		return -EINVAL;
	if (dma_read(file->ctx->pid, w->buf, &hdr, sizeof(hdr)))
		return -EFAULT;
	if (hdr.cmd >= ARRAY_SIZE(handlers))
		return -EINVAL;
	if (hdr.in + sizeof(hdr) > w->count)
		return -EINVAL;
	if (!handlers[hdr.cmd]) {
		TRACE(trace_ucma(file->ctx, hdr.cmd, -ENOSYS));
		return -ENOSYS;
	}
	c.in = w->buf + sizeof(hdr);
	c.in_len = hdr.in;
	c.out_len = hdr.out;
	err = handlers[hdr.cmd](&c);
	/* (A GET_EVENT that will wait is the kernel's blocked read: no line.) */
	if (hdr.cmd != RDMA_USER_CM_CMD_GET_EVENT || err != -EAGAIN)
		TRACE(trace_ucma(file->ctx, hdr.cmd, err));
	return err;
}

/* ------------------------------------------------------------------ */
/* Opening and closing the file                                        */
/* ------------------------------------------------------------------ */

static void file_free(struct ucma_file *file)
{
	if (file->notify >= 0)
		close(file->notify);
	if (file->drain >= 0)
		close(file->drain);
	free(file);
}

/*
 * The process's descriptor: one end of a socket pair (left blocking: its
 * O_NONBLOCK is the program's), the other ours to write a byte per event.
 * We keep its end too, to take the bytes back when the list empties.
 */
static struct ucma_file *file_new(struct sim_ctx *ctx)
{
	struct ucma_file *file = calloc(1, sizeof(*file));
	int sv[2];

	if (!file)
		return NULL;
	file->notify = file->drain = -1;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)) {
		file_free(file);
		return NULL;
	}
	file->notify = sv[0];
	file->drain = sv[1];
	file->ctx = ctx;
	file->id = next_file_id++;
	list_init(&file->ids);
	list_init(&file->events);
	list_add_tail(&files, &file->link);
	return file;
}

static int ucma_open(struct sim_ctx *ctx)
{
	struct mlx4sim_reply reply = { .fd_offset = -1 };

	if (ctx->hca || ctx->ucma || ctx->umad) {
		reply.ret = -EINVAL;
		return send_reply(ctx, &reply, NULL, 0, -1);
	}
	ctx->ucma = file_new(ctx);
	if (!ctx->ucma) {
		reply.ret = -ENOMEM;
		return send_reply(ctx, &reply, NULL, 0, -1);
	}
	TRACE(trace_ucma_open(ctx));
	reply.event_file = ctx->ucma->id;
	return send_reply(ctx, &reply, NULL, 0, ctx->ucma->drain);
}

/* ucma_close(): every id of the file destroyed, as on its last close. */
void ucma_close(struct sim_ctx *ctx)
{
	struct ucma_file *file = ctx->ucma;

	if (!file)
		return;
	while (!list_empty(&file->ids))
		id_destroy(list_entry(file->ids.next, struct cma_id,
				      file_link));
	list_del(&file->link);
	file_free(file);
	ctx->ucma = NULL;
}

/* A request on an rdma_cm connection (ctx.c hands them all here). */
int ucma_request(struct sim_ctx *ctx, uint32_t op, const void *payload,
		 size_t len)
{
	struct mlx4sim_reply reply = { .fd_offset = -1 };
	struct mlx4sim_ucma_write w;

	if (op == MLX4SIM_OP_UCMA_OPEN)
		return ucma_open(ctx);
	if (!ctx->ucma)
		reply.ret = -EBADF;
	else if (op == MLX4SIM_OP_FAULT)
		reply.ret = -EPERM;	/* a device's file, not a control one */
	else if (op != MLX4SIM_OP_UCMA_WRITE || len != sizeof(w))
		reply.ret = -EINVAL;
	else {
		memcpy(&w, payload, sizeof(w));
		sim.progress++;
		reply.ret = ucma_write(ctx->ucma, &w);
	}
	return send_reply(ctx, &reply, NULL, 0, -1);
}
