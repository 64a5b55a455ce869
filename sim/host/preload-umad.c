/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libmlx4sim: the umad and issm files, /dev/infiniband/umadN and issmN,
 * as ib_umad serves them (kernel/umad.c has the daemon's side).
 *
 * open() of one connects to the daemon, which passes back the file's
 * descriptor: a socket on which each MAD the file receives is one
 * datagram, the header and the MAD as read() returns them, so that poll,
 * select and epoll see it as they see the kernel's file.  read() looks
 * at the next datagram first: a buffer too small for it is EINVAL and
 * the MAD stays, as user_mad.c requeues it.  write() and the ioctls are
 * requests on the connection.  An issm file has no read or write.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <rdma/ib_user_mad.h>

#include "preload.h"

#define UMAD_PATH	DEV_DIR "/umad"
#define ISSM_PATH	DEV_DIR "/issm"
#define ISSM_MINOR0	64		/* issmN is minor 64 + N */
#define MAD_LEN		256
#define RMPP_HDR_LEN	36		/* a MAD's headers with RMPP's */
#define ISSM_RETRY_US	50000		/* a blocking open of a held issm */
#define CLOSE_WAIT_MS	1000		/* for the daemon to release a file */

/* The N of @prefix N, spelt as the kernel spells it; -1 if not that. */
static int number_after(const char *path, const char *prefix)
{
	const char *p;
	char *end;
	long n;

	if (strncmp(path, prefix, strlen(prefix)))
		return -1;
	p = path + strlen(prefix);
	if (*p < '0' || *p > '9' || (*p == '0' && p[1]))
		return -1;
	n = strtol(p, &end, 10);
	return *end || n >= ISSM_MINOR0 ? -1 : (int)n;
}

/* The minor of the umadN or issmN @path names, if sysfs lists it. */
int umad_name(const char *path, dev_t *rdev)
{
	int n = number_after(path, UMAD_PATH), minor = n;

	if (n < 0) {
		n = number_after(path, ISSM_PATH);
		minor = ISSM_MINOR0 + n;
	}
	if (n < 0 || class_dev_number("infiniband_mad", path + DEV_DIR_LEN + 1,
				      rdev))
		return -1;
	return minor;
}

/* A listing's entry for umadN or issmN: the device's type and inode. */
void umad_entry(struct dirent *d)
{
	char path[PATH_MAX];
	int minor;

	snprintf(path, sizeof(path), "%s/%s", DEV_DIR, d->d_name);
	minor = number_after(path, UMAD_PATH);
	if (minor < 0 && number_after(path, ISSM_PATH) >= 0)
		minor = ISSM_MINOR0 + number_after(path, ISSM_PATH);
	if (minor < 0)
		return;
	d->d_ino = uverbs_ino(minor);
	d->d_type = DT_CHR;
}

/* ------------------------------------------------------------------ */
/* open                                                                */
/* ------------------------------------------------------------------ */

/*
 * ib_umad_sm_open: an issm file another process holds makes a blocking
 * open wait for it, and a non-blocking one fail with EAGAIN.
 */
static int open_request(struct conn *conn, int minor, int flags, int *file)
{
	struct mlx4sim_reply reply;
	int err;

	for (;;) {
		err = transact(conn, MLX4SIM_OP_UMAD_OPEN, minor, NULL, 0,
			       &reply, NULL, 0, file);
		if (!err)
			err = reply.ret;
		if (err != -EAGAIN || (flags & O_NONBLOCK) || minor < ISSM_MINOR0)
			return err;
		if (*file >= 0)
			real.close(*file);
		usleep(ISSM_RETRY_US);
	}
}

int umad_open(int minor, int flags)
{
	struct conn *conn;
	int err, file;

	/* The file is root's, mode 0600 (the daemon checks it too). */
	if (geteuid() != 0)
		return fail(-EACCES);
	conn = conn_open(&err);
	if (!conn)
		return fail(err);
	err = open_request(conn, minor, flags, &file);
	if (!err && file >= 0 && !(flags & O_CLOEXEC) &&
	    real.fcntl(file, F_SETFD, 0))
		err = -errno;
	if (!err && file >= 0 && (flags & O_NONBLOCK) &&
	    real.fcntl(file, F_SETFL, O_NONBLOCK))
		err = -errno;
	return conn_register(conn, file, err, FD_UMAD, minor);
}

/* ------------------------------------------------------------------ */
/* read                                                                */
/* ------------------------------------------------------------------ */

/* One reader at a time takes a MAD: a look, then the taking. */
static pthread_mutex_t read_lock = PTHREAD_MUTEX_INITIALIZER;

static size_t hdr_size(const struct fd_entry *e)
{
	return __atomic_load_n(&e->conn->umad_pkey, __ATOMIC_RELAXED) ?
	       sizeof(struct ib_user_mad_hdr) :
	       sizeof(struct ib_user_mad_hdr_old);
}

/*
 * The next MAD, if one is there: its size, EAGAIN when none is, EIO when
 * the daemon is gone.  A buffer too small for it is EINVAL; one that
 * holds the first 256 bytes of a longer (RMPP) message gets them and
 * ENOSPC, as copy_recv_mad does; the MAD stays for the next read.
 */
static ssize_t take_mad(int fd, const struct fd_entry *e, void *buf,
			size_t count)
{
	size_t first = hdr_size(e) + MAD_LEN;
	ssize_t n, got;

	n = recv(fd, NULL, 0, MSG_PEEK | MSG_TRUNC | MSG_DONTWAIT);
	if (n < 0)
		return -errno;
	if (n == 0)
		return -EIO;
	if ((size_t)n > count) {
		if (count < first || (size_t)n <= first)
			return -EINVAL;
		got = recv(fd, buf, first, MSG_PEEK | MSG_DONTWAIT);
		return got < 0 ? -errno : -ENOSPC;
	}
	/* Copied while it stays queued: a bad buffer loses nothing. */
	got = recv(fd, buf, count, MSG_PEEK | MSG_DONTWAIT);
	if (got < 0)
		return -errno;
	recv(fd, NULL, 0, MSG_DONTWAIT | MSG_TRUNC);
	return got;
}

ssize_t umad_read(int fd, struct fd_entry *e, void *buf, size_t count)
{
	struct pollfd p = { fd, POLLIN, 0 };
	int flags = real.fcntl(fd, F_GETFL);
	ssize_t got;

	if (e->id >= ISSM_MINOR0 || count < hdr_size(e))
		return fail(-EINVAL);
	for (;;) {
		pthread_mutex_lock(&read_lock);
		got = take_mad(fd, e, buf, count);
		pthread_mutex_unlock(&read_lock);
		if (got != -EAGAIN)
			return got < 0 ? fail(got) : got;
		if (flags >= 0 && (flags & O_NONBLOCK))
			return fail(-EAGAIN);
		if (poll(&p, 1, -1) < 0)
			return -1;
	}
}

/* ------------------------------------------------------------------ */
/* write and the ioctls                                                */
/* ------------------------------------------------------------------ */

ssize_t umad_write(struct fd_entry *e, const void *buf, size_t count)
{
	struct mlx4sim_reply reply;
	uint8_t *copy;
	int err, unused;

	if (e->id >= ISSM_MINOR0 || count < hdr_size(e) + RMPP_HDR_LEN)
		return fail(-EINVAL);
	if (count > MLX4SIM_MAX_MSG - sizeof(struct mlx4sim_request))
		return fail(-ENOMEM);
	copy = malloc(count);
	if (!copy)
		return fail(-ENOMEM);
	err = copy_checked(copy, buf, count);
	if (!err)
		err = transact(e->conn, MLX4SIM_OP_UMAD_WRITE, 0, copy, count,
			       &reply, NULL, 0, &unused);
	free(copy);
	if (!err && reply.ret < 0)
		err = reply.ret;
	return err ? fail(err) : reply.ret;
}

/* The structure each ioctl's argument points to. */
static size_t ioctl_size(unsigned long request)
{
	switch (request) {
	case IB_USER_MAD_REGISTER_AGENT:
		return sizeof(struct ib_user_mad_reg_req);
	case IB_USER_MAD_REGISTER_AGENT2:
		return sizeof(struct ib_user_mad_reg_req2);
	case IB_USER_MAD_UNREGISTER_AGENT:
		return sizeof(uint32_t);
	default:
		return 0;
	}
}

/*
 * The argument goes to the daemon and what it gives back comes back to
 * it.  An agent registered whose number cannot be written back is
 * unregistered again, and the call is EFAULT, as in the kernel.
 */
int umad_ioctl(struct fd_entry *e, unsigned long request, void *arg)
{
	struct ib_user_mad_reg_req2 in, out;	/* the largest */
	size_t size = ioctl_size(request);
	struct mlx4sim_reply reply;
	int err, unused;

	if (request > UINT32_MAX)
		return fail(-ENOTTY);
	if (size && copy_checked(&in, arg, size))
		return fail(-EFAULT);
	err = transact(e->conn, MLX4SIM_OP_UMAD_IOCTL, request, &in, size,
		       &reply, &out, sizeof(out), &unused);
	if (err)
		return fail(err);
	if (reply.resp_len > size)
		return fail(-EIO);
	if (reply.resp_len && copy_checked(arg, &out, reply.resp_len)) {
		if (!reply.ret && request != IB_USER_MAD_UNREGISTER_AGENT) {
			transact(e->conn, MLX4SIM_OP_UMAD_IOCTL,
				 IB_USER_MAD_UNREGISTER_AGENT, &out.id,
				 sizeof(out.id), &reply, NULL, 0, &unused);
		}
		return fail(-EFAULT);
	}
	if (reply.ret)
		return fail(reply.ret);
	/* The header gains the P_Key index (IB_USER_MAD_ENABLE_PKEY, _AGENT2). */
	if (request == IB_USER_MAD_ENABLE_PKEY ||
	    request == IB_USER_MAD_REGISTER_AGENT2)
		__atomic_store_n(&e->conn->umad_pkey, true, __ATOMIC_RELAXED);
	return 0;
}

/*
 * The last close of a umad or issm file: its agents are gone, and an
 * issm file's IsSM bit clear, when close() returns, as the kernel's
 * release does it before.  The daemon closes its end once it has.
 */
void umad_close_wait(int sock)
{
	struct pollfd p = { sock, POLLIN, 0 };
	char byte;

	if (shutdown(sock, SHUT_WR))
		return;
	while (poll(&p, 1, CLOSE_WAIT_MS) == 1 &&
	       recv(sock, &byte, 1, MSG_DONTWAIT) > 0)
		;
}
