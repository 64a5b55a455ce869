/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ib_umad: the files /dev/infiniband/umadN and issmN, one pair for each
 * port of each adapter, numbered in order (mlx4_0 port 1 is umad0).
 *
 * A umad file's descriptor, in the process, is one end of a socket pair
 * whose other end the daemon holds: each MAD the file receives is one
 * datagram there, the header and the MAD as read(2) returns them, so
 * that poll(), select() and epoll see the file readable when the
 * kernel's would be.  The preload library turns a read into a look at
 * the next datagram first (a buffer too small for it is EINVAL, and the
 * MAD stays), and write(2) and the ioctls into requests on the
 * connection (protocol.h), answered here as user_mad.c answers them.
 *
 * An issm file has no read or write: holding it open sets the port's
 * IsSM capability bit, and only one process holds it at a time.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../host/protocol.h"
#include "umad.h"

#define UMAD_SOCKET_BUFFER	(1 << 20)	/* about 3000 MADs queued */

struct list_node umad_files = LIST_INIT(umad_files);
static uint32_t next_hi_tid;

size_t umad_hdr_size(const struct umad_file *f)
{
	return f->use_pkey_index ? sizeof(struct ib_user_mad_hdr) :
				   sizeof(struct ib_user_mad_hdr_old);
}

/*
 * umadN and issmN: the Nth port of @host (the opener's), every link layer
 * counted.
 */
struct sim_port *umad_port_of_minor(int host, uint32_t minor)
{
	uint32_t n = minor % UMAD_ISSM_MINOR0;

	if (minor >= 2 * UMAD_ISSM_MINOR0)
		return NULL;
	for (int h = 0; h < sim.opt.nhcas; h++) {
		if (sim.hca[h].host != host)
			continue;
		if (n < (uint32_t)sim.hca[h].nports)
			return &sim.hca[h].port[n];
		n -= sim.hca[h].nports;
	}
	return NULL;
}

/*
 * A MAD for the process: one datagram, never waited for.  A process that
 * does not read its file loses what does not fit, as a MAD lost on the
 * wire, and harms no one else.
 */
void umad_queue(struct umad_file *f, uint32_t agent,
		const struct ib_user_mad_hdr *hdr, const uint8_t *mad,
		size_t len)
{
	struct ib_user_mad_hdr h = *hdr;
	struct iovec iov[2] = {
		{ &h, umad_hdr_size(f) },
		{ (void *)mad, len },
	};
	struct msghdr msg = { .msg_iov = iov, .msg_iovlen = 2 };

	h.id = agent;
	if (sendmsg(f->peer, &msg, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
		f->dropped++;
	sim.work_done = true;
}

/* ------------------------------------------------------------------ */
/* Agents: the ioctls                                                  */
/* ------------------------------------------------------------------ */

static bool is_vendor2(uint8_t mgmt_class)
{
	return mgmt_class >= MAD_CLASS_VENDOR2_FIRST &&
	       mgmt_class <= MAD_CLASS_VENDOR2_LAST;
}

bool mad_class_is_rmpp(uint8_t mgmt_class)
{
	return mgmt_class == MAD_CLASS_SUBN_ADM ||
	       mgmt_class == MAD_CLASS_DEVICE_MGMT ||
	       mgmt_class == MAD_CLASS_DEVICE_ADM ||
	       mgmt_class == MAD_CLASS_BIS || is_vendor2(mgmt_class);
}

/*
 * ib_register_mad_agent's checks of what the agent asks for: the class
 * and its version in range, a vendor class of the second range with its
 * OUI, RMPP only for the classes that have it, the subnet management
 * classes on QP0 and only there, QP0 only where the port has one, and
 * no method another agent of the port already serves.
 */
static int agent_check(const struct umad_file *f, const struct umad_agent *a)
{
	if (a->rmpp_version && a->rmpp_version != UMAD_RMPP_VERSION)
		return -EINVAL;
	if (a->mgmt_class) {
		bool smp = a->mgmt_class == MAD_CLASS_SUBN_LID ||
			   a->mgmt_class == MAD_CLASS_SUBN_DR;

		if (a->class_version >= UMAD_MAX_VERSION)
			return -EINVAL;
		if (a->mgmt_class >= UMAD_MAX_CLASS &&
		    a->mgmt_class != MAD_CLASS_SUBN_DR)
			return -EINVAL;
		if (is_vendor2(a->mgmt_class) && !a->oui)
			return -EINVAL;
		if (!mad_class_is_rmpp(a->mgmt_class) && a->rmpp_version)
			return -EINVAL;
		if (smp != (a->qpn == 0))
			return -EINVAL;
	} else if (a->flags & IB_USER_MAD_USER_RMPP) {
		return -EINVAL;
	}
	if (a->qpn == 0 && f->port->link_layer != IBV_LINK_LAYER_INFINIBAND)
		return -EPROTONOSUPPORT;
	if (a->mgmt_class && mad_method_in_use(f, a))
		return -EINVAL;
	return 0;
}

static int agent_slot(const struct umad_file *f)
{
	for (int id = 0; id < UMAD_MAX_AGENTS; id++)
		if (!f->agent[id].used)
			return id;
	return -ENOMEM;
}

static int agent_add(struct umad_file *f, struct umad_agent *a, uint32_t *id)
{
	int slot = agent_slot(f), err;

	if (slot < 0)
		return slot;
	err = agent_check(f, a);
	if (err)
		return err;
	a->used = true;
	a->hi_tid = ++next_hi_tid;
	f->agent[slot] = *a;
	f->already_used = true;
	*id = slot;
	return 0;
}

/* The ioctl's structure, as the library read it: EFAULT if it could not. */
static int copy_arg(void *req, size_t size, const uint8_t *arg, size_t len)
{
	if (len != size)
		return -EFAULT;
	memcpy(req, arg, size);
	return 0;
}

/*
 * What both register ioctls ask, once each has read its structure: the
 * agent registered, its number in *id.
 */
static int register_common(struct umad_file *f, struct umad_agent *a,
			   uint8_t mgmt_class, uint8_t version, uint32_t oui,
			   const void *methods, uint32_t *id)
{
	if (a->qpn != 0 && a->qpn != 1)
		return -EINVAL;
	if (mgmt_class) {
		a->mgmt_class = mgmt_class;
		a->class_version = version;
		a->oui = oui;
		memcpy(a->methods, methods, sizeof(a->methods));
	}
	return agent_add(f, a, id);
}

/*
 * IB_USER_MAD_REGISTER_AGENT: the method mask as the kernel's longs.
 * The agent's number is written back (*back: the bytes to copy back).
 */
static int register_agent(struct umad_file *f, uint8_t *arg, size_t len,
			  size_t *back)
{
	struct ib_user_mad_reg_req req;
	struct umad_agent a = {};
	int err = copy_arg(&req, sizeof(req), arg, len);

	if (err)
		return err;
	a.qpn = req.qpn;
	a.rmpp_version = req.rmpp_version;
	err = register_common(f, &a, req.mgmt_class, req.mgmt_class_version,
			      req.oui[0] << 16 | req.oui[1] << 8 | req.oui[2],
			      req.method_mask, &req.id);
	if (err)
		return err;
	memcpy(arg, &req.id, sizeof(req.id));
	*back = sizeof(req.id);
	return 0;
}

/*
 * IB_USER_MAD_REGISTER_AGENT2 (its QPN checked after the flags, both
 * EINVAL): unknown flags are EINVAL, and the flags the kernel knows are
 * written back for the caller to see; so is the agent's number, and from
 * then on the file's header has the P_Key index.
 */
static int register_agent2(struct umad_file *f, uint8_t *arg, size_t len,
			   size_t *back)
{
	struct umad_agent a = {};
	struct ib_user_mad_reg_req2 req;
	int err = copy_arg(&req, sizeof(req), arg, len);

	if (err)
		return err;
	*back = sizeof(req);
	if (req.flags & ~IB_USER_MAD_REG_FLAGS_CAP) {
		req.flags = IB_USER_MAD_REG_FLAGS_CAP;
		memcpy(arg, &req, sizeof(req));
		return -EINVAL;
	}
	*back = 0;
	if (agent_slot(f) < 0)
		return -ENOMEM;
	if (req.mgmt_class && (req.oui & 0xff000000))
		return -EINVAL;
	a.qpn = req.qpn > 1 ? 2 : req.qpn;
	a.rmpp_version = req.rmpp_version;
	a.flags = req.flags;
	err = register_common(f, &a, req.mgmt_class, req.mgmt_class_version,
			      req.oui, req.method_mask, &req.id);
	if (err)
		return err;
	f->use_pkey_index = true;
	memcpy(arg, &req, sizeof(req));
	*back = sizeof(req);
	return 0;
}

static int unregister_agent(struct umad_file *f, const uint8_t *arg,
			    size_t len)
{
	uint32_t id;

	if (copy_arg(&id, sizeof(id), arg, len))
		return -EFAULT;
	if (id >= UMAD_MAX_AGENTS || !f->agent[id].used)
		return -EINVAL;
	mad_agent_gone(f, id);
	memset(&f->agent[id], 0, sizeof(f->agent[id]));
	return 0;
}

/*
 * An ioctl: @cmd as the process gave it, @arg the structure it points
 * to (the library copied it, and copies back the first *back bytes).
 */
static int umad_ioctl(struct umad_file *f, uint32_t cmd, uint8_t *arg,
		      size_t len, size_t *back)
{
	*back = 0;
	if (f->issm)
		return -ENOTTY;
	switch (cmd) {
	case IB_USER_MAD_REGISTER_AGENT:
		return register_agent(f, arg, len, back);
	case IB_USER_MAD_UNREGISTER_AGENT:
		return unregister_agent(f, arg, len);
	case IB_USER_MAD_ENABLE_PKEY:
		if (f->already_used)
			return -EINVAL;
		f->use_pkey_index = true;
		return 0;
	case IB_USER_MAD_REGISTER_AGENT2:
		return register_agent2(f, arg, len, back);
	default:
		return -ENOTTY;
	}
}

/* ------------------------------------------------------------------ */
/* write(2): a MAD to send                                             */
/* ------------------------------------------------------------------ */

static int umad_write(struct umad_file *f, const uint8_t *buf, size_t count)
{
	struct ib_user_mad_hdr hdr = {};
	size_t hsize = umad_hdr_size(f);
	int err;

	if (f->issm)
		return -EINVAL;
	if (count < hsize + MAD_RMPP_HDR_LEN)
		return -EINVAL;
	memcpy(&hdr, buf, hsize);
	if (hdr.id >= UMAD_MAX_AGENTS || !f->agent[hdr.id].used)
		return -EINVAL;
	if (count - hsize > UMAD_MAX_SEND)
		return -ENOMEM;
	err = mad_send(f, hdr.id, &hdr, (uint8_t *)buf + hsize, count - hsize);
	return err ? err : (int)count;
}

/* ------------------------------------------------------------------ */
/* open and close                                                      */
/* ------------------------------------------------------------------ */

static void issm_set(struct sim_port *port, bool on)
{
	port->is_sm = on;
	sysfs_port_state(port);
}

/*
 * The umad and issm files are root's, mode 0600 (rdma-core's udev rules
 * give them no other): what the process is, its socket says.
 */
static bool opened_by_root(const struct sim_ctx *ctx)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	return !getsockopt(ctx->sock, SOL_SOCKET, SO_PEERCRED, &cred, &len) &&
	       cred.uid == 0;
}

/*
 * UMAD_OPEN: the file of @minor (umadN, or issmN at 64 + N).  The reply
 * passes the process's end of the file's socket pair.  An issm file
 * held by another is EAGAIN (the library waits, for a blocking open).
 */
static int umad_open(struct sim_ctx *ctx, uint32_t minor)
{
	struct sim_port *port = umad_port_of_minor(ctx->host, minor);
	struct umad_file *f;
	int sv[2], err;

	if (ctx->hca || ctx->control || ctx->umad)
		return ctx_reply(ctx, -EINVAL, NULL, 0, -1);
	if (!port)
		return ctx_reply(ctx, -ENXIO, NULL, 0, -1);
	if (!opened_by_root(ctx))
		return ctx_reply(ctx, -EACCES, NULL, 0, -1);
	if (minor >= UMAD_ISSM_MINOR0 && port->is_sm)
		return ctx_reply(ctx, -EAGAIN, NULL, 0, -1);
	f = calloc(1, sizeof(*f));
	if (!f)
		return ctx_reply(ctx, -ENOMEM, NULL, 0, -1);
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv)) {
		free(f);
		return ctx_reply(ctx, -errno, NULL, 0, -1);
	}
	/* The daemon only writes its end: what the process writes is refused. */
	shutdown(sv[0], SHUT_RD);
	setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &(int){ UMAD_SOCKET_BUFFER },
		   sizeof(int));
	f->ctx = ctx;
	f->port = port;
	f->minor = minor;
	f->issm = minor >= UMAD_ISSM_MINOR0;
	f->peer = sv[0];
	list_init(&f->sends);
	list_add_tail(&umad_files, &f->link);
	ctx->umad = f;
	if (f->issm)
		issm_set(port, true);
	err = ctx_reply(ctx, 0, NULL, 0, sv[1]);
	close(sv[1]);
	return err;
}

/* The process closed the file, or died: its agents and sends go. */
void umad_close(struct sim_ctx *ctx)
{
	struct umad_file *f = ctx->umad;

	if (!f)
		return;
	for (uint32_t id = 0; id < UMAD_MAX_AGENTS; id++)
		if (f->agent[id].used)
			mad_agent_gone(f, id);
	if (f->issm)
		issm_set(f->port, false);
	list_del(&f->link);
	close(f->peer);
	free(f);
	ctx->umad = NULL;
}

/* A request on a connection that opens, or has opened, a umad file. */
int umad_request(struct sim_ctx *ctx, uint32_t op, uint32_t arg,
		 const void *payload, size_t len)
{
	static uint8_t buf[MLX4SIM_MAX_MSG];
	struct umad_file *f = ctx->umad;
	size_t back;
	int ret;

	if (op == MLX4SIM_OP_UMAD_OPEN)
		return umad_open(ctx, arg);
	if (!f)
		return ctx_reply(ctx, -EBADF, NULL, 0, -1);
	memcpy(buf, payload, len);
	switch (op) {
	case MLX4SIM_OP_UMAD_WRITE:
		ret = umad_write(f, buf, len);
		return ctx_reply(ctx, ret, NULL, 0, -1);
	case MLX4SIM_OP_UMAD_IOCTL:
		ret = umad_ioctl(f, arg, buf, len, &back);
		/* What the kernel writes back, even with some errors. */
		return ctx_reply(ctx, ret, buf, back, -1);
	default:
		return ctx_reply(ctx, -EINVAL, NULL, 0, -1);
	}
}
