/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libmlx4sim: the device files, /dev/infiniband/uverbsN.  open() of one
 * connects to the daemon, which passes back the file of the context's
 * pages: that is the program's descriptor.  write() (the uverbs
 * commands), ioctl() (the verbs ioctl) and mmap() on it become requests
 * on the connection (protocol.h), one request and its reply at a time,
 * and fail as the kernel's calls fail.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/rdma_user_ioctl_cmds.h>	/* RDMA_VERBS_IOCTL */

#include "preload.h"

/* ------------------------------------------------------------------ */
/* Talking to the daemon                                               */
/* ------------------------------------------------------------------ */

/*
 * One request and its reply; the caller holds the connection's lock.  A
 * descriptor may go with the request (x->send_fd), and one that comes
 * with the reply lands in x->fd (else -1).
 */
int exchange_locked(struct conn *conn, struct exchange *x)
{
	struct mlx4sim_request req = { x->op, x->arg };
	struct iovec out[2] = { { &req, sizeof(req) },
				{ (void *)x->payload, x->len } };
	struct iovec in[2] = { { x->reply, sizeof(*x->reply) },
			       { x->data, x->cap } };
	char scontrol[MLX4SIM_FD_CONTROL], control[MLX4SIM_FD_CONTROL];
	struct msghdr smsg = { .msg_iov = out, .msg_iovlen = 2 };
	struct msghdr rmsg = {
		.msg_iov = in, .msg_iovlen = 2,
		.msg_control = control, .msg_controllen = sizeof(control),
	};
	struct cmsghdr *cm;
	ssize_t n;

	x->fd = -1;
	x->got = 0;
	if (conn->closed)
		return -EBADF;
	if (x->send_fd >= 0)
		mlx4sim_pass_fd(&smsg, scontrol, x->send_fd);
	do
		n = sendmsg(conn->sock, &smsg, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EMSGSIZE ? -EINVAL : -EIO;
	do
		n = recvmsg(conn->sock, &rmsg, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < (ssize_t)sizeof(*x->reply))
		return -EIO;		/* the daemon is gone */
	x->got = n - sizeof(*x->reply);
	for (cm = CMSG_FIRSTHDR(&rmsg); cm; cm = CMSG_NXTHDR(&rmsg, cm))
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS)
			memcpy(&x->fd, CMSG_DATA(cm), sizeof(int));
	return 0;
}

/*
 * One request, one reply, under the connection's lock.  A descriptor
 * that comes with the reply lands in *fd (else -1).
 */
int transact(struct conn *conn, uint32_t op, uint32_t arg,
	     const void *payload, size_t len, struct mlx4sim_reply *reply,
	     void *data, size_t cap, int *fd)
{
	struct exchange x = {
		.op = op, .arg = arg, .payload = payload, .len = len,
		.send_fd = -1, .reply = reply, .data = data, .cap = cap,
	};
	int err;

	pthread_mutex_lock(&conn->lock);
	err = exchange_locked(conn, &x);
	pthread_mutex_unlock(&conn->lock);
	*fd = x.fd;
	return err;
}

/*
 * A copy to or from the caller's memory that fails like the kernel's
 * (EFAULT, not a crash): a read of our own memory into a local buffer,
 * which also tells valgrind's memcheck that the destination was written.
 */
int copy_checked(void *to, const void *from, size_t len)
{
	struct iovec local = { to, len }, remote = { (void *)from, len };

	return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) ==
	       (ssize_t)len ? 0 : -EFAULT;
}

/* ------------------------------------------------------------------ */
/* open                                                                */
/* ------------------------------------------------------------------ */

/*
 * A connection's socket lives at a high number, as far from the program's
 * as the limit allows: the program's numbers must be those a kernel
 * would hand out with the device file alone (the lowest free one for
 * the device, and the same one again after it is closed).
 */
static int conn_socket_aside(int sock)
{
	struct rlimit lim;
	rlim_t base = 64;
	int moved;

	if (!getrlimit(RLIMIT_NOFILE, &lim) && lim.rlim_cur / 2 > base)
		base = lim.rlim_cur / 2;
	if (base > FD_PAGE * FD_PAGES / 2)
		base = FD_PAGE * FD_PAGES / 2;
	moved = real.fcntl(sock, F_DUPFD_CLOEXEC, (int)base);
	if (moved < 0)
		return sock;	/* the limit is low: where it is, then */
	real.close(sock);
	return moved;
}

/* A new connection to the daemon, its socket set aside; NULL with *err. */
struct conn *conn_open(int *err)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	struct conn *conn;
	int sock;

	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s/%s", run_dir,
		 MLX4SIM_SOCKET_NAME);
	sock = real.socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (sock < 0) {
		*err = -errno;
		return NULL;
	}
	if (connect(sock, (void *)&addr, sizeof(addr))) {
		real.close(sock);
		*err = -ENODEV;	/* the simulator is not running */
		return NULL;
	}
	sock = conn_socket_aside(sock);
	conn = calloc(1, sizeof(*conn));
	if (!conn) {
		real.close(sock);
		*err = -ENOMEM;
		return NULL;
	}
	conn->sock = sock;
	pthread_mutex_init(&conn->lock, NULL);
	return conn;
}

/*
 * The device file the daemon passed (@file) becomes the program's
 * descriptor of kind @kind, with the connection's socket beside it.
 * After an error (@err, or no file) both close and the connection is
 * freed.  Returns the descriptor, or -1 with errno.
 */
int conn_register(struct conn *conn, int file, int err, enum fd_kind kind,
		  uint32_t id)
{
	int sock = conn->sock;

	if (!err && file < 0)
		err = -EIO;

	pthread_mutex_lock(&table_lock);
	if (!err)
		err = entry_set(sock, FD_CONN, conn, id);
	if (!err) {
		err = entry_set(file, kind, conn, id);
		if (err)
			entry_clear(fd_lookup(sock));	/* frees conn */
	} else {
		pthread_mutex_destroy(&conn->lock);
		free(conn);
	}
	pthread_mutex_unlock(&table_lock);
	if (err) {
		if (file >= 0)
			real.close(file);
		real.close(sock);
		return fail(err);
	}
	return file;
}

/*
 * The open of a device file that takes O_RDWR only: a connection whose
 * first request @op (with @arg) the daemon answers with the file
 * (*@file) in *@reply, the file given the program's O_CLOEXEC and
 * O_NONBLOCK.  NULL (with *@err) if there is no connection; otherwise
 * conn_register() makes the descriptor or, after *@err, undoes it all.
 */
struct conn *device_connect(uint32_t op, uint32_t arg, int flags,
			    struct mlx4sim_reply *reply, int *file, int *err)
{
	struct conn *conn;

	*file = -1;
	if ((flags & O_ACCMODE) != O_RDWR) {
		*err = -EINVAL;
		return NULL;
	}
	conn = conn_open(err);
	if (!conn)
		return NULL;
	*err = transact(conn, op, arg, NULL, 0, reply, NULL, 0, file);
	if (!*err)
		*err = reply->ret;
	/* It came close-on-exec; the program's flags decide. */
	if (!*err && *file >= 0 && !(flags & O_CLOEXEC) &&
	    real.fcntl(*file, F_SETFD, 0))
		*err = -errno;
	if (!*err && *file >= 0 && (flags & O_NONBLOCK) &&
	    real.fcntl(*file, F_SETFL, O_NONBLOCK))
		*err = -errno;
	return conn;
}

static int uverbs_open(int index, int flags)
{
	struct mlx4sim_reply reply;
	struct conn *conn;
	int err, file;

	conn = device_connect(MLX4SIM_OP_OPEN, index, flags, &reply, &file,
			      &err);
	if (!conn)
		return fail(err);
	return conn_register(conn, file, err, FD_UVERBS, index);
}

static int open_common(int dirfd, const char *path, int flags, mode_t mode)
{
	struct dev_name name;

	name_of(dirfd, path, &name);
	switch (name.kind) {
	case NAME_UVERBS:
		if (name.file == DEV_RDMA_CM)
			return rdmacm_open(flags);
		if (name.file == DEV_UMAD)
			return umad_open(name.index, flags);
		return uverbs_open(name.index, flags);
	case NAME_DIR:
		return dev_dir_open(flags);
	case NAME_HOST:
		return real.openat(dirfd, name.host, flags, mode);
	default:
		return fail(name_error(&name));
	}
}

static mode_t mode_arg(int flags, va_list ap)
{
	return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ?
	       va_arg(ap, mode_t) : 0;
}

EXPORT int open(const char *path, int flags, ...)
{
	va_list ap;
	mode_t mode;

	va_start(ap, flags);
	mode = mode_arg(flags, ap);
	va_end(ap);
	return open_common(AT_FDCWD, path, flags, mode);
}

/* Off_t is 64-bit here: the *64 variants are the same calls. */
EXPORT int open64(const char *path, int flags, ...)
	__attribute__((alias("open")));

EXPORT int __open_2(const char *path, int flags)
{
	return open_common(AT_FDCWD, path, flags, 0);
}

EXPORT int __open64_2(const char *path, int flags)
	__attribute__((alias("__open_2")));

EXPORT int openat(int dirfd, const char *path, int flags, ...)
{
	va_list ap;
	mode_t mode;

	va_start(ap, flags);
	mode = mode_arg(flags, ap);
	va_end(ap);
	return open_common(dirfd, path, flags, mode);
}

EXPORT int openat64(int dirfd, const char *path, int flags, ...)
	__attribute__((alias("openat")));

EXPORT int __openat_2(int dirfd, const char *path, int flags)
{
	return open_common(dirfd, path, flags, 0);
}

EXPORT int __openat64_2(int dirfd, const char *path, int flags)
	__attribute__((alias("__openat_2")));

/* ------------------------------------------------------------------ */
/* write: uverbs commands                                              */
/* ------------------------------------------------------------------ */

/* Where the caller wants the response, and how much room it gave. */
static void response_buffer(const uint8_t *cmd, size_t count, uint64_t *addr,
			    size_t *size)
{
	const struct ib_uverbs_cmd_hdr *hdr = (const void *)cmd;
	const struct ib_uverbs_ex_cmd_hdr *ex = (const void *)(hdr + 1);

	*addr = 0;
	*size = 0;
	if (hdr->command & IB_USER_VERBS_CMD_FLAG_EXTENDED) {
		if (count >= sizeof(*hdr) + sizeof(*ex)) {
			*addr = ex->response;
			*size = (hdr->out_words + ex->provider_out_words) * 8;
		}
	} else if (hdr->out_words && count >= sizeof(*hdr) + sizeof(uint64_t)) {
		memcpy(addr, cmd + sizeof(*hdr), sizeof(*addr));
		*size = hdr->out_words * 4;
	}
}

/*
 * CREATE_CQ names its completion channel by descriptor, which only this
 * process can resolve: the daemon gets the channel's event file.
 */
static uint32_t channel_of(const uint8_t *cmd, size_t count)
{
	const struct ib_uverbs_cmd_hdr *hdr = (const void *)cmd;
	size_t off;
	int32_t fd;
	struct fd_entry *e;

	if (hdr->command == IB_USER_VERBS_CMD_CREATE_CQ)
		off = sizeof(*hdr) + offsetof(struct ib_uverbs_create_cq,
					      comp_channel);
	else if (hdr->command == (IB_USER_VERBS_CMD_FLAG_EXTENDED |
				  IB_USER_VERBS_EX_CMD_CREATE_CQ))
		off = sizeof(*hdr) + sizeof(struct ib_uverbs_ex_cmd_hdr) +
		      offsetof(struct ib_uverbs_ex_create_cq, comp_channel);
	else
		return 0;
	if (count < off + sizeof(fd))
		return 0;
	memcpy(&fd, cmd + off, sizeof(fd));
	e = fd_lookup(fd);
	return e && e->kind == FD_EVENT ? e->id + 1 : 0;
}

/* Room for a response and the shares after it. */
#define REPLY_ROOM	(MLX4SIM_MAX_MSG + \
			 MLX4SIM_MAX_SHARES * sizeof(struct mlx4sim_share))

/*
 * The pages the command pinned, which the reply asks to share (after
 * the response): each moved onto a memfd (preload-mem.c) and handed to
 * the daemon, or, where it cannot move, the range named without one.
 */
static void share_pinned(struct conn *conn, const struct mlx4sim_reply *reply,
			 const uint8_t *data, size_t got)
{
	size_t at = reply->resp_len;

	for (uint32_t i = 0; i < reply->shares && i < MLX4SIM_MAX_SHARES &&
	     at + sizeof(struct mlx4sim_share) <= got; i++) {
		struct mlx4sim_share share;
		struct mlx4sim_reply answer;
		struct exchange x = {
			.op = MLX4SIM_OP_SHARE, .payload = &share,
			.len = sizeof(share), .reply = &answer,
		};
		int err;

		memcpy(&share, data + at, sizeof(share));
		at += sizeof(share);
		x.send_fd = pinned_move(share.addr, share.len);
		err = exchange_locked(conn, &x);
		if (x.send_fd >= 0)
			real.close(x.send_fd);
		if (x.fd >= 0)
			real.close(x.fd);
		if (err)
			break;
	}
}

/*
 * A command and its reply, then the pages it pinned shared, all under
 * the connection's lock: the write() returns once the device has them.
 */
static int write_command(struct conn *conn, const uint8_t *cmd, size_t count,
			 struct mlx4sim_reply *reply, uint8_t *resp, int *fd)
{
	struct exchange x = {
		.op = MLX4SIM_OP_WRITE, .arg = channel_of(cmd, count),
		.payload = cmd, .len = count, .send_fd = -1,
		.reply = reply, .data = resp, .cap = REPLY_ROOM,
	};
	int err;

	pthread_mutex_lock(&conn->lock);
	err = exchange_locked(conn, &x);
	*fd = x.fd;
	if (!err && reply->ret >= 0 && reply->shares &&
	    reply->resp_len <= x.got)
		share_pinned(conn, reply, resp, x.got);
	pthread_mutex_unlock(&conn->lock);
	return err;
}

static ssize_t uverbs_write(struct fd_entry *e, const void *buf, size_t count)
{
	struct mlx4sim_reply reply;
	uint64_t resp_addr;
	size_t resp_size, len;
	uint8_t *cmd, *resp;
	int err, fd = -1;

	if (count < sizeof(struct ib_uverbs_cmd_hdr) ||
	    count > MLX4SIM_MAX_MSG - sizeof(struct mlx4sim_request))
		return fail(-EINVAL);
	cmd = malloc(MLX4SIM_MAX_MSG + REPLY_ROOM);
	if (!cmd)
		return fail(-ENOMEM);
	resp = cmd + MLX4SIM_MAX_MSG;
	err = copy_checked(cmd, buf, count);
	if (!err) {
		response_buffer(cmd, count, &resp_addr, &resp_size);
		err = write_command(e->conn, cmd, count, &reply, resp, &fd);
	}
	if (!err && reply.ret < 0)
		err = reply.ret;
	if (err)
		goto out;
	len = reply.resp_len < resp_size ? reply.resp_len : resp_size;
	if (fd >= 0) {
		uint32_t number = fd;

		if (reply.fd_offset >= 0 && reply.fd_offset + 4 <= (int32_t)len)
			memcpy(resp + reply.fd_offset, &number, sizeof(number));
		err = fd_register(fd, FD_EVENT, e->conn, reply.event_file);
		if (err)
			goto out;
		fd_lookup(fd)->async = ((struct ib_uverbs_cmd_hdr *)cmd)->command ==
				       IB_USER_VERBS_CMD_GET_CONTEXT;
		fd = -1;
	}
	if (len && copy_checked((void *)(uintptr_t)resp_addr, resp, len))
		err = -EFAULT;
out:
	if (fd >= 0)
		real.close(fd);
	free(cmd);
	return err ? fail(err) : reply.ret;
}

EXPORT ssize_t write(int fd, const void *buf, size_t count)
{
	struct fd_entry e;
	ssize_t n;

	init();
	if (!fd_get(fd, &e))
		return real.write(fd, buf, count);
	if (e.kind == FD_UVERBS)
		n = uverbs_write(&e, buf, count);
	else if (e.kind == FD_RDMA_CM)
		n = rdmacm_write(fd, &e, buf, count);
	else if (e.kind == FD_UMAD)
		n = umad_write(&e, buf, count);
	else
		n = real.write(fd, buf, count);
	fd_put(&e);
	return n;
}

/* ------------------------------------------------------------------ */
/* ioctl, mmap                                                         */
/* ------------------------------------------------------------------ */

/* RDMA_VERBS_IOCTL: the daemon reads the header at @arg here (ioctl.c). */
static int uverbs_ioctl(struct fd_entry *e, unsigned long request,
			uint64_t arg)
{
	struct mlx4sim_reply reply;
	int err, unused;

	if (e->kind != FD_UVERBS || request != RDMA_VERBS_IOCTL)
		return fail(-ENOTTY);
	err = transact(e->conn, MLX4SIM_OP_IOCTL, 0, &arg, sizeof(arg),
		       &reply, NULL, 0, &unused);
	return err || reply.ret ? fail(err ?: reply.ret) : 0;
}

EXPORT int ioctl(int fd, unsigned long request, ...)
{
	struct fd_entry e;
	uint64_t arg;
	va_list ap;
	int n;

	va_start(ap, request);
	arg = (uintptr_t)va_arg(ap, void *);
	va_end(ap);
	init();
	if (!fd_get(fd, &e))
		return real.ioctl(fd, request, (void *)(uintptr_t)arg);
	if (rdmacm_vfs_ioctl(&e, request))
		n = real.ioctl(fd, request, (void *)(uintptr_t)arg);
	else if (e.kind == FD_UMAD)
		n = umad_ioctl(&e, request, (void *)(uintptr_t)arg);
	else
		n = uverbs_ioctl(&e, request, arg);
	fd_put(&e);
	return n;
}

/*
 * The daemon checks the call as mlx4_ib would; the kernel then maps the
 * program's own descriptor, the file of the context's pages (a call that
 * bypasses this wrapper, a raw system call or a memory hook's, maps the
 * same pages unchecked).
 */
static void *uverbs_mmap(int fd, struct fd_entry *e, void *addr, size_t len,
			 int prot, int flags, off_t off)
{
	struct mlx4sim_mmap req = { len, prot, flags };
	struct mlx4sim_reply reply;
	int err, unused;

	if (off < 0 || (off & (sysconf(_SC_PAGESIZE) - 1))) {
		errno = EINVAL;
		return MAP_FAILED;
	}
	err = transact(e->conn, MLX4SIM_OP_MMAP, off / sysconf(_SC_PAGESIZE),
		       &req, sizeof(req), &reply, NULL, 0, &unused);
	if (!err && reply.ret < 0)
		err = reply.ret;
	if (unused >= 0)
		real.close(unused);
	if (err) {
		errno = -err;
		return MAP_FAILED;
	}
	return real.mmap(addr, len, prot, flags, fd,
			 (off_t)reply.ret * sysconf(_SC_PAGESIZE));
}

EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd,
		  off_t off)
{
	struct fd_entry e;
	void *p;

	init();
	if (fd_get(fd, &e)) {
		if (e.kind == FD_UVERBS)
			p = uverbs_mmap(fd, &e, addr, len, prot, flags, off);
		else
			p = real.mmap(addr, len, prot, flags, fd, off);
		fd_put(&e);
		return p;
	}
	p = real.mmap(addr, len, prot, flags, fd, off);
	/* A new mapping over pages the library moved: they are not ours. */
	if (p != MAP_FAILED && (flags & (MAP_FIXED | MAP_FIXED_NOREPLACE)))
		pinned_forget((uintptr_t)p, len);
	return p;
}

EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd,
		    off_t off) __attribute__((alias("mmap")));
