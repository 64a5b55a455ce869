/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libmlx4sim: read() on the event files, the async file GET_CONTEXT gives
 * and the completion channels.  An event file is one end of a socket
 * pair whose other end only the daemon holds, with a byte for each
 * queued event, so that poll(), select() and epoll see it as they see
 * uverbs's: a read waits for a byte, takes it, then asks the daemon for
 * the event.  A read of the device file itself is EINVAL, as uverbs has
 * no read method.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>
#include <rdma/ib_user_verbs.h>
#include <infiniband/verbs.h>	/* IBV_EVENT_*: the kernel's ib_event_type */

#include "preload.h"

/*
 * The daemon is the device: when it is gone (its end of the connection
 * hangs up), the device is gone, and the event files answer as uverbs's
 * do for a device that was disassociated after a fatal error: the async
 * file gives IB_EVENT_DEVICE_FATAL once, then every read fails with EIO.
 */
static ssize_t device_gone(struct fd_entry *e, void *buf, size_t count)
{
	struct ib_uverbs_async_event_desc fatal = {
		.event_type = IBV_EVENT_DEVICE_FATAL,
	};
	bool report;

	if (e->async && count < sizeof(fatal))
		return fail(-EINVAL);
	pthread_mutex_lock(&e->conn->lock);
	report = e->async && !e->conn->fatal_reported;
	e->conn->fatal_reported |= report;
	pthread_mutex_unlock(&e->conn->lock);
	if (!report)
		return fail(-EIO);
	if (copy_checked(buf, &fatal, sizeof(fatal)))
		return fail(-EFAULT);
	return sizeof(fatal);
}

/*
 * A read after the program closed the device file.  uverbs destroyed the
 * context's objects then: a completion channel's queue is closed with
 * them (its readers get EIO), but the async file's is not, and nothing
 * more is posted to it (uverbs_async_event_destroy_uobj posts
 * DEVICE_FATAL only when the driver goes): it stays silent until it is
 * closed itself.  DPDK's mlx4 PMD closes the device before it stops
 * watching the async file.
 */
static ssize_t after_close(int fd, struct fd_entry *e)
{
	int flags = fcntl(fd, F_GETFL);

	if (!e->async)
		return fail(-EIO);
	if (flags >= 0 && (flags & O_NONBLOCK))
		return fail(-EAGAIN);
	for (;;)
		if (poll(NULL, 0, -1) < 0)
			return -1;	/* a signal: EINTR */
}

/*
 * Wait for an event's byte on the event file, or for the daemon to go
 * (the file hangs up then too, once its bytes are read).  1 when the
 * daemon is gone, 0 when a byte may be there (or the file does not
 * block), -errno.  A signal ends the wait with EINTR.
 */
static int event_wait(int fd, struct conn *conn)
{
	struct pollfd p[2] = { { fd, POLLIN, 0 }, { conn->sock, 0, 0 } };
	int flags = fcntl(fd, F_GETFL);

	/* An app that closed the device has no connection left to watch. */
	if (__atomic_load_n(&conn->closed, __ATOMIC_RELAXED))
		return 0;
	if (poll(p, 2, flags >= 0 && (flags & O_NONBLOCK) ? 0 : -1) < 0)
		return -errno;
	return !!(p[1].revents & (POLLHUP | POLLERR));
}

/* The daemon's end hung up: the device went, or the program closed it. */
static ssize_t ended(int fd, struct fd_entry *e, void *buf, size_t count)
{
	if (__atomic_load_n(&e->conn->closed, __ATOMIC_RELAXED))
		return after_close(fd, e);
	return device_gone(e, buf, count);
}

static ssize_t event_read(int fd, struct fd_entry *e, void *buf, size_t count)
{
	uint8_t event[sizeof(struct ib_uverbs_async_event_desc)];
	struct mlx4sim_reply reply;
	struct mlx4sim_event want = { count > UINT32_MAX ? UINT32_MAX : count };
	ssize_t got;
	char token;
	int err, unused;

	for (;;) {
		err = event_wait(fd, e->conn);
		if (err < 0)
			return fail(err);
		if (err)
			return ended(fd, e, buf, count);
		/* One byte stands for one queued event; none: the daemon went. */
		got = real.read(fd, &token, 1);
		if (got < 0)
			return -1;
		if (got == 0)
			return ended(fd, e, buf, count);
		err = transact(e->conn, MLX4SIM_OP_EVENT, e->id, &want,
			       sizeof(want), &reply, event, sizeof(event),
			       &unused);
		if (err == -EIO)
			return ended(fd, e, buf, count);
		if (!err && reply.ret < 0)
			err = reply.ret;
		/* (The daemon gave the byte back for a read it refused.) */
		if (err)
			return fail(err);
		if (reply.ret == 0)
			continue;	/* its object was destroyed meanwhile */
		if (copy_checked(buf, event, reply.ret))
			return fail(-EFAULT);
		return reply.ret;
	}
}

EXPORT ssize_t read(int fd, void *buf, size_t count)
{
	struct fd_entry e;
	ssize_t n;

	init();
	if (!fd_get(fd, &e))
		return real.read(fd, buf, count);
	if (e.kind == FD_EVENT)
		n = event_read(fd, &e, buf, count);
	else if (e.kind == FD_UVERBS || e.kind == FD_RDMA_CM)
		n = fail(-EINVAL);	/* neither has a read method */
	else if (e.kind == FD_UMAD)
		n = umad_read(fd, &e, buf, count);
	else
		n = real.read(fd, buf, count);
	fd_put(&e);
	return n;
}
