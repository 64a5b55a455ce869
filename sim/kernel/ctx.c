/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Contexts: the kernel's side of an open /dev/infiniband/uverbsN.
 *
 * Each connection from the preload library is one open file.  Requests on
 * it are the system calls a process makes on that file: write (a uverbs
 * command, checked and dispatched like the kernel's uverbs core does),
 * mmap (the UAR, BlueFlame and clock pages) and read (of the event files
 * the commands created).  When the connection ends, because the process
 * closed the file or died, everything it created is released.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../host/protocol.h"
#include "uverbs.h"
#include "../host/uverbs-cmds.h"

/* ------------------------------------------------------------------ */
/* Handles                                                             */
/* ------------------------------------------------------------------ */

int uobj_add(struct sim_ctx *ctx, struct sim_uobj *uobj, enum sim_obj_type type)
{
	uint32_t h;

	/* Handle 0 is never used, so a zeroed field never names an object. */
	for (h = 1; h < ctx->nhandles; h++)
		if (!ctx->handles[h])
			break;
	if (h >= ctx->nhandles) {
		uint32_t n = ctx->nhandles ? ctx->nhandles * 2 : 64;
		struct sim_uobj **grown = realloc(ctx->handles,
						  n * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		memset(grown + ctx->nhandles, 0,
		       (n - ctx->nhandles) * sizeof(*grown));
		ctx->handles = grown;
		ctx->nhandles = n;
	}
	uobj->type = type;
	uobj->handle = h;
	uobj->ctx = ctx;
	ctx->handles[h] = uobj;
	return 0;
}

void uobj_remove(struct sim_uobj *uobj)
{
	struct sim_ctx *ctx = uobj->ctx;

	if (ctx && uobj->handle < ctx->nhandles &&
	    ctx->handles[uobj->handle] == uobj)
		ctx->handles[uobj->handle] = NULL;
	uobj->ctx = NULL;
}

void *uobj_get(struct sim_ctx *ctx, uint32_t handle, enum sim_obj_type type)
{
	struct sim_uobj *uobj;

	if (handle >= ctx->nhandles)
		return NULL;
	uobj = ctx->handles[handle];
	return uobj && uobj->type == type ? uobj : NULL;
}

/*
 * uverbs' lookup of a handle for a command that must have it whole
 * (uobj_get_write, uobj_get_destroy: rdma_lookup_get_uobject): a handle
 * that names nothing is -ENOENT (lookup_get_idr_uobject), one that names
 * an object of another type -EINVAL.  The commands that only read an
 * object (uobj_get_obj_read) turn either into -EINVAL themselves.
 */
int uobj_lookup_err(struct sim_ctx *ctx, uint32_t handle)
{
	return handle < ctx->nhandles && ctx->handles[handle] ? -EINVAL :
								-ENOENT;
}

/*
 * The start every destroy command shares, uverbs' uobj_get_destroy(): the
 * object of @type that @handle names, or NULL with *err -ENOENT or
 * -EINVAL (uobj_lookup_err).  What
 * keeps an object from going is its own: @busy_off is where it counts
 * what still holds it (an int; UOBJ_NEVER_BUSY if nothing can), and while
 * that count is not zero the object stays and *err is -EBUSY.
 */
void *uobj_get_destroy(struct sim_ctx *ctx, uint32_t handle,
		       enum sim_obj_type type, size_t busy_off, int *err)
{
	uint8_t *obj = uobj_get(ctx, handle, type);
	int busy = 0;

	if (!obj) {
		*err = uobj_lookup_err(ctx, handle);
		return NULL;
	}
	if (busy_off != UOBJ_NEVER_BUSY)
		memcpy(&busy, obj + busy_off, sizeof(busy));
	if (busy) {
		*err = -EBUSY;
		return NULL;
	}
	*err = 0;
	return obj;
}

/* ------------------------------------------------------------------ */
/* The uverbs write() interface                                        */
/* ------------------------------------------------------------------ */

struct method {
	bool ex;
	uint16_t req_size;	/* core request the kernel requires */
	uint16_t resp_size;	/* core response the kernel requires */
	int (*handler)(struct sim_cmd *cmd);
};

/* The tables, from the one list of commands (uverbs-cmds.h). */
#define LEGACY(name, fn, req, resp, drv_in, drv_out, kind) \
	[IB_USER_VERBS_CMD_##name] = { false, sizeof(req), resp, fn },
#define EXTENDED(name, fn, req, req_end, resp_min, resp, drv_in, drv_out,   \
		 kind)							    \
	[IB_USER_VERBS_EX_CMD_##name] = { true, offsetofend(req, req_end),  \
					  resp_min, fn },
#define NONE(name)

static const struct method legacy_methods[] = {
	UVERBS_LEGACY_CMDS(LEGACY, NONE)
};

static const struct method ex_methods[] = {
	UVERBS_EX_CMDS(EXTENDED)
};

#undef LEGACY
#undef EXTENDED
#undef NONE

/*
 * The WQ and indirection table commands: mlx4_ib_add() sets their ops
 * (mlx4_ib_dev_wq_ops) only when the device has RSS and port 1 or 2 runs
 * Ethernet, and uverbs disables a write method whose op is missing.
 */
static bool needs_wq_ops(uint32_t ex_command)
{
	switch (ex_command) {
	case IB_USER_VERBS_EX_CMD_CREATE_WQ:
	case IB_USER_VERBS_EX_CMD_MODIFY_WQ:
	case IB_USER_VERBS_EX_CMD_DESTROY_WQ:
	case IB_USER_VERBS_EX_CMD_CREATE_RWQ_IND_TBL:
	case IB_USER_VERBS_EX_CMD_DESTROY_RWQ_IND_TBL:
		return true;
	default:
		return false;
	}
}

/*
 * uapi_get_method(): flags past the extended one are -EINVAL, a number
 * past the table -EOPNOTSUPP.  Within the table, a number with no method
 * for this device (none defined, or disabled: uapi_finalize_disable
 * drops it) is the NULL handler here, uapi_finalize's notsupp_method.
 */
static const struct method *find_method(uint32_t command,
					const struct sim_hca *hca, int *err)
{
	static const struct method notsupp;
	uint32_t n = command & IB_USER_VERBS_CMD_COMMAND_MASK;
	const struct method *m;

	*err = -EINVAL;
	if (command & ~(IB_USER_VERBS_CMD_FLAG_EXTENDED |
			IB_USER_VERBS_CMD_COMMAND_MASK))
		return NULL;
	*err = -EOPNOTSUPP;
	if (command & IB_USER_VERBS_CMD_FLAG_EXTENDED) {
		if (n >= ARRAY_SIZE(ex_methods))
			return NULL;
		m = &ex_methods[n];
		if (needs_wq_ops(n) && !hca_has_eth_port(hca))
			return &notsupp;
	} else {
		if (n >= ARRAY_SIZE(legacy_methods))
			return NULL;
		m = &legacy_methods[n];
	}
	return m->handler ? m : &notsupp;
}

/*
 * notsupp_method is not extended, whatever its number: ib_uverbs_write's
 * verify_hdr() checks the header as a legacy command's of no request
 * (in_words counts the whole write in 4-byte words, so a well-formed
 * extended command fails it: -EINVAL), then ib_uverbs_notsupp() refuses.
 */
static int notsupp_write(const struct ib_uverbs_cmd_hdr *hdr, size_t count)
{
	return hdr->in_words * 4 != count ? -EINVAL : -EOPNOTSUPP;
}

/*
 * Check the headers as the kernel's uverbs core does and lay the command
 * out for its handler.  Returns 0, or -errno for write(2) to return.
 */
static int parse_command(struct sim_cmd *cmd, const uint8_t *buf, size_t count,
			 uint8_t *out)
{
	const struct ib_uverbs_cmd_hdr *hdr = (const void *)buf;
	const struct method *m;
	size_t out_total;
	int err;

	if (count < sizeof(*hdr))
		return -EINVAL;
	cmd->command = hdr->command & IB_USER_VERBS_CMD_COMMAND_MASK;
	m = find_method(hdr->command, cmd->ctx->hca, &err);
	if (!m)
		return err;
	if (!m->handler)
		return notsupp_write(hdr, count);
	cmd->extended = m->ex;
	cmd->handler = m->handler;

	if (m->ex) {
		const struct ib_uverbs_ex_cmd_hdr *ex = (const void *)(hdr + 1);
		size_t head = sizeof(*hdr) + sizeof(*ex);

		if (count < head ||
		    (hdr->in_words + ex->provider_in_words) * 8 != count - head)
			return -EINVAL;
		if (hdr->in_words * 8 < m->req_size)
			return -ENOSPC;
		if (ex->cmd_hdr_reserved)
			return -EINVAL;
		if (ex->response) {
			if (!hdr->out_words && !ex->provider_out_words)
				return -EINVAL;
			if (hdr->out_words * 8 < m->resp_size)
				return -ENOSPC;
		} else if (hdr->out_words || ex->provider_out_words) {
			return -EINVAL;
		}
		cmd->in = buf + head;
		cmd->in_len = hdr->in_words * 8;
		cmd->drv_in = cmd->in + cmd->in_len;
		cmd->drv_in_len = ex->provider_in_words * 8;
		out_total = ex->response ?
			(hdr->out_words + ex->provider_out_words) * 8 : 0;
		cmd->out_cap = hdr->out_words * 8;
	} else {
		if (hdr->in_words * 4 != count)
			return -EINVAL;
		if (count < m->req_size + sizeof(*hdr))
			return -ENOSPC;
		if (hdr->out_words * 4 < m->resp_size)
			return -ENOSPC;
		cmd->in = buf + sizeof(*hdr);
		cmd->in_len = m->req_size;
		cmd->drv_in = cmd->in + m->req_size;
		cmd->drv_in_len = count - sizeof(*hdr) - m->req_size;
		out_total = hdr->out_words * 4;
		cmd->out_cap = m->resp_size;
	}
	if (out_total > MLX4SIM_MAX_MSG - sizeof(struct mlx4sim_reply))
		return -EINVAL;
	memset(out, 0, out_total);
	cmd->out = out;
	cmd->drv_out = out + cmd->out_cap;
	cmd->drv_out_cap = out_total - cmd->out_cap;
	return 0;
}

/*
 * What the kernel copies back: the core response (for extended commands
 * all the room the caller gave it, zero-filled), then the driver's part.
 */
static size_t response_length(const struct sim_cmd *cmd)
{
	if (cmd->drv_out_len)
		return cmd->out_cap + cmd->drv_out_len;
	return cmd->extended ? cmd->out_cap : cmd->out_len;
}

/* ------------------------------------------------------------------ */
/* Replies                                                             */
/* ------------------------------------------------------------------ */

int send_reply(struct sim_ctx *ctx, struct mlx4sim_reply *reply,
	       const void *data, size_t len, int fd)
{
	char control[CMSG_SPACE(sizeof(int))];
	struct iovec iov[2] = {
		{ reply, sizeof(*reply) },
		{ (void *)data, len },
	};
	struct msghdr msg = { .msg_iov = iov, .msg_iovlen = 2 };

	/* The shares a WRITE reply asks for follow its response. */
	reply->resp_len = len - reply->shares * sizeof(struct mlx4sim_share);
	if (fd >= 0)
		mlx4sim_pass_fd(&msg, control, fd);
	/*
	 * Never wait for a client: one that does not read its replies
	 * would stall the device for every other process.  A client
	 * running the protocol has at most one reply outstanding, so a
	 * full socket means a client that stopped playing by it; the
	 * error closes its context.  The CQEs the command made come first.
	 */
	cq_flush();
	if (sendmsg(ctx->sock, &msg, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
		return -errno;
	return 0;
}

/* A reply of @ret, with @len bytes of @data and the descriptor @fd. */
int ctx_reply(struct sim_ctx *ctx, int32_t ret, const void *data, size_t len,
	      int fd)
{
	struct mlx4sim_reply reply = { .ret = ret, .fd_offset = -1 };

	return send_reply(ctx, &reply, data, len, fd);
}

static int reply_errno(struct sim_ctx *ctx, int err)
{
	struct mlx4sim_reply reply = { .ret = err, .fd_offset = -1 };

	return send_reply(ctx, &reply, NULL, 0, -1);
}

static int handle_write(struct sim_ctx *ctx, const uint8_t *buf, size_t count,
			uint32_t arg)
{
	static uint8_t out[MLX4SIM_MAX_MSG + sizeof(struct mlx4sim_share) *
			   MLX4SIM_MAX_SHARES];
	struct mlx4sim_share shares[MLX4SIM_MAX_SHARES];
	struct mlx4sim_reply reply = { .fd_offset = -1 };
	struct sim_cmd cmd = { .ctx = ctx, .arg = arg, .pass_fd = -1 };
	size_t len;
	int err;

	sim.progress++;
	err = parse_command(&cmd, buf, count, out);
	/* Before GET_CONTEXT there is no context to act on. */
	if (!err && !ctx->has_ucontext &&
	    cmd.command != IB_USER_VERBS_CMD_GET_CONTEXT)
		err = -EINVAL;
	if (!err)
		err = cmd.handler(&cmd);
	TRACE(trace_command(&cmd, err));
	if (err) {
		umem_shares_end(ctx);
		return reply_errno(ctx, err);
	}

	reply.ret = count;
	if (cmd.pass_fd >= 0) {
		reply.fd_offset = cmd.fd_offset;
		reply.event_file = cmd.event_file;
	}
	len = response_length(&cmd);
	reply.shares = umem_shares(ctx, shares);
	memcpy(out + len, shares, reply.shares * sizeof(shares[0]));
	len += reply.shares * sizeof(shares[0]);
	return send_reply(ctx, &reply, out, len, cmd.pass_fd);
}

/* ------------------------------------------------------------------ */
/* mmap: the pages a context shares with the device                   */
/* ------------------------------------------------------------------ */

/*
 * The pages live in a file whose name /proc/<pid>/fd shows the process
 * ("/memfd:uverbs0"): the device file is this file there.
 */
static int ctx_map_pages(struct sim_ctx *ctx, uint32_t index)
{
	size_t len = SIM_CTX_PAGES * SIM_PAGE_SIZE;
	char name[32];

	snprintf(name, sizeof(name), "uverbs%u", index);
	ctx->memfd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (ctx->memfd < 0)
		return -errno;
	/*
	 * The process holds the file too: sealed at its size, so that no
	 * ftruncate() of its can pull the pages from under the daemon.
	 */
	if (ftruncate(ctx->memfd, len) ||
	    fcntl(ctx->memfd, F_ADD_SEALS,
		  F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL))
		return -errno;
	ctx->pages = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED,
			  ctx->memfd, 0);
	if (ctx->pages == MAP_FAILED) {
		ctx->pages = NULL;
		return -errno;
	}
	return 0;
}

static int handle_mmap(struct sim_ctx *ctx, uint32_t page, const void *payload,
		       size_t len)
{
	struct mlx4sim_reply reply = { .fd_offset = -1 };
	struct mlx4sim_mmap req;

	if (len < sizeof(req) || !ctx->has_ucontext)
		return reply_errno(ctx, -EINVAL);
	memcpy(&req, payload, sizeof(req));
	if (req.length != SIM_PAGE_SIZE || !(req.flags & MAP_SHARED))
		return reply_errno(ctx, -EINVAL);
	switch (page) {
	case SIM_PAGE_UAR:
	case SIM_PAGE_BF:
		break;
	case SIM_PAGE_CLOCK:
		/* The device's clock is read-only to processes. */
		if (req.prot & PROT_WRITE)
			return reply_errno(ctx, -EPERM);
		break;
	default:
		return reply_errno(ctx, -EINVAL);
	}
	reply.ret = page;
	return send_reply(ctx, &reply, NULL, 0, -1);
}

/* ------------------------------------------------------------------ */
/* read() of an event file                                             */
/* ------------------------------------------------------------------ */

static int handle_event(struct sim_ctx *ctx, uint32_t id, const void *payload,
			size_t len)
{
	struct sim_event_file *file = event_file_find(ctx, id);
	struct mlx4sim_reply reply = { .fd_offset = -1 };
	uint8_t buf[sizeof(struct ib_uverbs_async_event_desc)];
	struct mlx4sim_event req;

	if (!file || len < sizeof(req))
		return reply_errno(ctx, -EINVAL);
	memcpy(&req, payload, sizeof(req));
	reply.ret = event_pop(file, buf, req.count);
	return send_reply(ctx, &reply, buf, reply.ret > 0 ? reply.ret : 0, -1);
}

/* ------------------------------------------------------------------ */
/* Requests                                                            */
/* ------------------------------------------------------------------ */

static int handle_open(struct sim_ctx *ctx, uint32_t index)
{
	struct mlx4sim_reply reply = { .fd_offset = -1 };

	struct sim_hca *hca = hca_of_host(ctx->host, index);

	if (ctx->hca)
		reply.ret = -EINVAL;
	else if (!hca)
		reply.ret = -ENODEV;
	else
		reply.ret = ctx_map_pages(ctx, index);
	if (reply.ret)
		return send_reply(ctx, &reply, NULL, 0, -1);
	ctx->hca = hca;
	TRACE(trace_open_file(ctx, index));
	/*
	 * The process's descriptor of the device file is the file of its
	 * pages: the kernel itself maps them at the offsets mlx4_ib serves,
	 * whichever way the process calls mmap().
	 */
	return send_reply(ctx, &reply, NULL, 0, ctx->memfd);
}

/* `mlx4sim fault`: the fault acts, then the counts go back. */
static int handle_fault(struct sim_ctx *ctx, const void *payload, size_t len)
{
	struct mlx4sim_reply reply = { .fd_offset = -1 };
	struct mlx4sim_fault_counts counts;

	reply.ret = fault_request(ctx, payload, len, &counts);
	return send_reply(ctx, &reply, &counts, reply.ret ? 0 : sizeof(counts),
			  -1);
}

/* Whether the process closed its end (a zero-length read can be either). */
static bool peer_gone(int sock)
{
	struct pollfd p = { .fd = sock, .events = POLLRDHUP };

	return poll(&p, 1, 0) != 0;
}

/*
 * One datagram, and the descriptor that came with it (else -1): at most
 * one is taken, the kernel drops any more.
 */
static ssize_t receive(int sock, uint8_t *buf, size_t size, int *fd)
{
	char control[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { buf, size };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = control, .msg_controllen = sizeof(control),
	};
	struct cmsghdr *cm;
	ssize_t n;

	*fd = -1;
	n = recvmsg(sock, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (n < 0)
		return n;
	for (cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm))
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS &&
		    cm->cmsg_len >= CMSG_LEN(sizeof(int)) && *fd < 0)
			memcpy(fd, CMSG_DATA(cm), sizeof(int));
	return n;
}

static int dispatch(struct sim_ctx *ctx, const struct mlx4sim_request *req,
		    const uint8_t *payload, size_t len, int fd);

/* Returns -1 when the connection is gone and the context must close. */
int ctx_handle_request(struct sim_ctx *ctx)
{
	static uint8_t buf[MLX4SIM_MAX_MSG];
	const struct mlx4sim_request *req = (const void *)buf;
	ssize_t n;
	int fd, ret;

	n = receive(ctx->sock, buf, sizeof(buf), &fd);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (n < 0)
		return -1;
	/* An empty datagram reads like the end of the connection. */
	if (n == 0)
		ret = peer_gone(ctx->sock) ? -1 : 0;
	else if ((size_t)n < sizeof(*req))
		ret = reply_errno(ctx, -EINVAL) ? -1 : 0;
	else
		ret = dispatch(ctx, req, buf + sizeof(*req), n - sizeof(*req),
			       fd);
	if (fd >= 0)
		close(fd);
	return ret;
}

static int dispatch(struct sim_ctx *ctx, const struct mlx4sim_request *req,
		    const uint8_t *payload, size_t len, int fd)
{
	ssize_t n;

	sim.work_done = true;
	/* What the last command asked to share, only SHAREs take. */
	if (req->op != MLX4SIM_OP_SHARE)
		umem_shares_end(ctx);
	/* /dev/infiniband/rdma_cm: a file of its own kind (ucma.c). */
	if (ctx->ucma || (req->op == MLX4SIM_OP_UCMA_OPEN && !ctx->control))
		return ucma_request(ctx, req->op, payload, len) ? -1 : 0;
	/* The umad and issm files have requests of their own (umad.c). */
	if (ctx->umad || (req->op >= MLX4SIM_OP_UMAD_OPEN &&
			  req->op <= MLX4SIM_OP_UMAD_IOCTL))
		return umad_request(ctx, req->op, req->arg, payload, len) ? -1 : 0;
	if (req->op == MLX4SIM_OP_FAULT)
		return handle_fault(ctx, payload, len) ? -1 : 0;
	/* A control connection is never a device's file. */
	if (ctx->control)
		return reply_errno(ctx, -EBADF) ? -1 : 0;
	if (!ctx->hca && req->op != MLX4SIM_OP_OPEN)
		return reply_errno(ctx, -EBADF) ? -1 : 0;
	/* A disassociated file: uverbs answers its writes and mmaps so. */
	if (ctx->fatal && req->op != MLX4SIM_OP_EVENT)
		return reply_errno(ctx, -EIO) ? -1 : 0;

	switch (req->op) {
	case MLX4SIM_OP_OPEN:
		n = handle_open(ctx, req->arg);
		break;
	case MLX4SIM_OP_WRITE:
		/*
		 * The process rang its doorbells before it made this call:
		 * the device sees them first, as it would on the bus.
		 */
		ctx_doorbells(ctx);
		n = handle_write(ctx, payload, len, req->arg);
		break;
	case MLX4SIM_OP_MMAP:
		n = handle_mmap(ctx, req->arg, payload, len);
		break;
	case MLX4SIM_OP_EVENT:
		n = handle_event(ctx, req->arg, payload, len);
		break;
	case MLX4SIM_OP_IOCTL:
		n = reply_errno(ctx, ioctl_request(ctx, payload, len));
		break;
	case MLX4SIM_OP_SHARE:
		n = reply_errno(ctx, umem_share(ctx, payload, len, fd));
		break;
	default:
		n = reply_errno(ctx, -EINVAL);
	}
	return n ? -1 : 0;
}

/* ------------------------------------------------------------------ */
/* Lifetime                                                            */
/* ------------------------------------------------------------------ */

struct sim_ctx *ctx_new(int sock, pid_t pid)
{
	struct sim_ctx *ctx = calloc(1, sizeof(*ctx));

	if (!ctx)
		return NULL;
	ctx->sock = sock;
	ctx->pid = pid;
	/* Its host is the network namespace it is in, not what it says. */
	ctx->host = host_of_pid(pid);
	ctx->memfd = -1;
	list_init(&ctx->event_files);
	list_init(&ctx->qps);
	list_init(&ctx->cqs);
	list_add_tail(&sim.ctxs, &ctx->link);
	return ctx;
}

static void release_all(struct sim_ctx *ctx, enum sim_obj_type type)
{
	for (uint32_t h = 1; h < ctx->nhandles; h++) {
		struct sim_uobj *uobj = ctx->handles[h];

		if (!uobj || uobj->type != type)
			continue;
		switch (type) {
		case SIM_OBJ_PD:	pd_release((void *)uobj); break;
		case SIM_OBJ_XRCD:	xrcd_handle_release((void *)uobj); break;
		case SIM_OBJ_MR:
		case SIM_OBJ_MW:	mr_release((void *)uobj); break;
		case SIM_OBJ_CQ:	cq_release((void *)uobj); break;
		case SIM_OBJ_QP:	qp_release((void *)uobj); break;
		case SIM_OBJ_QP_OPEN:	qp_open_release((void *)uobj); break;
		case SIM_OBJ_SRQ:	srq_release((void *)uobj); break;
		case SIM_OBJ_AH:	uobj_remove(uobj); free(uobj); break;
		case SIM_OBJ_FLOW:	flow_release((void *)uobj); break;
		case SIM_OBJ_WQ:	wq_release((void *)uobj); break;
		case SIM_OBJ_IND_TBL:	ind_tbl_release((void *)uobj); break;
		}
	}
}

/* Everything the process created goes, users before what they use. */
static void release_objects(struct sim_ctx *ctx)
{
	static const enum sim_obj_type order[] = {
		SIM_OBJ_FLOW, SIM_OBJ_QP_OPEN, SIM_OBJ_QP, SIM_OBJ_IND_TBL,
		SIM_OBJ_WQ, SIM_OBJ_SRQ, SIM_OBJ_CQ, SIM_OBJ_MW, SIM_OBJ_MR,
		SIM_OBJ_AH, SIM_OBJ_PD, SIM_OBJ_XRCD,
	};

	for (size_t i = 0; i < ARRAY_SIZE(order); i++)
		release_all(ctx, order[i]);
}

/*
 * The device is disassociated from the file after a fatal error, as
 * uverbs does when mlx4_ib goes: the objects are destroyed, the pages
 * reach nothing, DEVICE_FATAL is the async file's last event, and every
 * event file wakes its readers, which then get EIO (event_pop).
 */
void ctx_disassociate(struct sim_ctx *ctx)
{
	struct sim_event_file *file;

	release_objects(ctx);
	ctx->fatal = true;
	event_post_async(ctx, 0, IBV_EVENT_DEVICE_FATAL, NULL, NULL);
	/* One byte more than the events: the reads that find none. */
	list_for_each(&ctx->event_files, file, struct sim_event_file, link)
		event_file_count(file);
}

void ctx_close(struct sim_ctx *ctx)
{
	struct sim_event_file *file, *tmp;

	bf_watch_end(ctx);
	umad_close(ctx);
	ucma_close(ctx);
	if (ctx->hca)
		TRACE(trace_close_file(ctx));
	release_objects(ctx);
	list_for_each_safe(&ctx->event_files, file, tmp, struct sim_event_file,
			   link)
		event_file_free(file);
	if (ctx->pages)
		munmap(ctx->pages, SIM_CTX_PAGES * SIM_PAGE_SIZE);
	if (ctx->memfd >= 0)
		close(ctx->memfd);
	close(ctx->sock);
	list_del(&ctx->link);
	free(ctx->handles);
	free(ctx->db_pages);
	free(ctx);
}
