/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libmlx4sim: /dev/infiniband/rdma_cm, the kernel's ucma, whose commands
 * the daemon serves (sim/ucma.c).  The file exists where the simulated
 * sysfs has class/misc/rdma_cm; open() connects to the daemon, which
 * passes back the program's descriptor: a socket it keeps readable while
 * the file has events, so that poll(), select() and epoll see the file
 * as ucma_poll() makes them see it.  write() hands the daemon where the
 * command lies; the daemon reads it, and writes the responses, in the
 * process's memory, as the kernel copies them.  Only GET_EVENT waits:
 * while the file has no event the daemon answers EAGAIN, which is the
 * answer for an O_NONBLOCK file, and for another the library waits for
 * the descriptor to become readable (a signal ends the wait with EINTR,
 * as wait_event_interruptible() does) and asks again.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <rdma/rdma_user_cm.h>

#include "preload.h"

#define RDMA_CM_PATH	DEV_DIR "/rdma_cm"
#define RDMA_CM_NAME	"rdma_cm"

dev_t rdmacm_rdev(void)
{
	dev_t rdev;

	if (class_dev_number("misc", RDMA_CM_NAME, &rdev))
		rdev = makedev(MLX4SIM_MISC_MAJOR, MLX4SIM_RDMA_CM_MINOR);
	return rdev;
}

/* Its minor if @path (canonical) is the file and sysfs lists it, or -1. */
int rdmacm_name(const char *path, dev_t *rdev)
{
	if (strcmp(path, RDMA_CM_PATH) ||
	    class_dev_number("misc", RDMA_CM_NAME, rdev))
		return -1;
	return minor(*rdev);
}

/* Its entry as devtmpfs lists it: a character device, its inode. */
void rdmacm_entry(struct dirent *d)
{
	if (strcmp(d->d_name, RDMA_CM_NAME))
		return;
	d->d_ino = uverbs_ino(minor(rdmacm_rdev()));
	d->d_type = DT_CHR;
}

/*
 * open(): the daemon's first answer on a connection of its own passes
 * the file's descriptor, and names the file for MIGRATE_ID.  Only O_RDWR,
 * as librdmacm opens it: the descriptor, a socket, keeps no other access
 * mode for write() to refuse with EBADF as the VFS would.
 */
int rdmacm_open(int flags)
{
	struct mlx4sim_reply reply;
	struct conn *conn;
	int err, file;

	conn = device_connect(MLX4SIM_OP_UCMA_OPEN, 0, flags, &reply, &file,
			      &err);
	if (!conn)
		return fail(err);
	return conn_register(conn, file, err, FD_RDMA_CM,
			     err ? 0 : reply.event_file);
}

/*
 * ucma has no ioctl method: the VFS's own ioctls work on its file (they
 * act on the descriptor, here the socket), any other is ENOTTY.
 */
bool rdmacm_vfs_ioctl(const struct fd_entry *e, unsigned long request)
{
	if (e->kind != FD_RDMA_CM)
		return false;
	return request == FIONBIO || request == FIOCLEX ||
	       request == FIONCLEX || request == FIOASYNC;
}

/*
 * MIGRATE_ID: the file the id leaves, named by a descriptor of this
 * process; the daemon gets its id among the rdma_cm files, or whether
 * the descriptor is some other file or none.
 */
static uint32_t migrate_source(const void *buf, size_t count)
{
	struct rdma_ucm_cmd_hdr hdr;
	struct fd_entry *e;
	uint32_t fd;

	if (count < sizeof(hdr) || copy_checked(&hdr, buf, sizeof(hdr)) ||
	    hdr.cmd != RDMA_USER_CM_CMD_MIGRATE_ID ||
	    copy_checked(&fd, (const uint8_t *)buf + sizeof(hdr) +
			 offsetof(struct rdma_ucm_migrate_id, fd), sizeof(fd)))
		return MLX4SIM_UCMA_NO_FILE;
	e = fd_lookup((int)fd);
	if (e && e->kind == FD_RDMA_CM)
		return e->id;
	if (fd > INT32_MAX || real.fcntl((int)fd, F_GETFD) < 0 ||
	    (e && e->kind == FD_CONN))
		return MLX4SIM_UCMA_NO_FILE;
	return MLX4SIM_UCMA_NOT_UCMA;
}

/*
 * Wait until the file has an event or the daemon is gone (its end of the
 * connection hangs up); a signal ends the wait.
 */
static int event_wait(int fd, struct conn *conn)
{
	struct pollfd p[2] = { { fd, POLLIN, 0 }, { conn->sock, 0, 0 } };

	if (poll(p, 2, -1) < 0)
		return -errno;
	if (p[1].revents & (POLLHUP | POLLERR))
		return -EIO;
	return 0;
}

static bool blocking(int fd)
{
	int flags = real.fcntl(fd, F_GETFL);

	return flags >= 0 && !(flags & O_NONBLOCK);
}

static bool readable_now(int fd)
{
	struct pollfd p = { fd, POLLIN, 0 };

	return poll(&p, 1, 0) == 1;
}

/* Whether the command in @buf is a GET_EVENT: the only one that waits. */
static bool is_get_event(const void *buf, size_t count,
			 struct rdma_ucm_cmd_hdr *hdr)
{
	return count >= sizeof(*hdr) && !copy_checked(hdr, buf, sizeof(*hdr)) &&
	       hdr->cmd == RDMA_USER_CM_CMD_GET_EVENT;
}

/*
 * A GET_EVENT the daemon need not be asked about yet: its header and
 * command sound (ucma's ENOSPC and EFAULT come first), and no event there
 * (the descriptor holds a byte while there is one).  Then an O_NONBLOCK
 * file's answer is EAGAIN at once, as ucma's, and another's a wait: a
 * program polling for events costs the daemon nothing.
 */
static bool no_event_yet(int fd, const void *buf, size_t count)
{
	const size_t min = sizeof(struct rdma_ucm_event_resp) - sizeof(uint32_t) -
			   sizeof(struct rdma_ucm_ece);
	struct rdma_ucm_get_event cmd;
	struct rdma_ucm_cmd_hdr hdr;

	return is_get_event(buf, count, &hdr) &&
	       hdr.in + sizeof(hdr) <= count && hdr.out >= min &&
	       !copy_checked(&cmd, (const uint8_t *)buf + sizeof(hdr),
			     sizeof(cmd)) &&
	       !readable_now(fd);
}

/*
 * A GET_EVENT that waited while another thread closed the file (rping's
 * connection thread, as its main thread tears down): the kernel keeps
 * such a call waiting on the file, which lives until the call ends, and
 * an event can reach it only through an id the file still has.  Here
 * the connection is gone with the close, so none can come: the call
 * waits until the process ends, as the kernel's would with no id left.
 */
static void wait_on_closed_file(void)
{
	for (;;)
		pause();
}

/* @e: held by the caller (fd_get()), so its connection stays. */
ssize_t rdmacm_write(int fd, struct fd_entry *e, const void *buf,
		     size_t count)
{
	struct conn *conn = e->conn;
	struct mlx4sim_ucma_write req = {
		.buf = (uintptr_t)buf, .count = count,
		.migrate_from = migrate_source(buf, count),
	};
	struct mlx4sim_reply reply;
	struct rdma_ucm_cmd_hdr hdr;
	bool waited = false;
	int err, unused;

	if (no_event_yet(fd, buf, count)) {
		if (!blocking(fd))
			return fail(-EAGAIN);
		err = event_wait(fd, conn);
		if (err)
			return fail(err);
		waited = true;
	}
	for (;;) {
		if (waited && __atomic_load_n(&conn->closed, __ATOMIC_ACQUIRE))
			wait_on_closed_file();
		err = transact(conn, MLX4SIM_OP_UCMA_WRITE, 0, &req,
			       sizeof(req), &reply, NULL, 0, &unused);
		if (unused >= 0)
			real.close(unused);
		if (err)
			return fail(err);
		/* Another command's EAGAIN is its answer (RESOLVE_ROUTE's). */
		if (reply.ret != -EAGAIN || !is_get_event(buf, count, &hdr) ||
		    !blocking(fd))
			break;
		err = event_wait(fd, conn);
		if (err)
			return fail(err);
		waited = true;
	}
	return reply.ret < 0 ? fail(reply.ret) : (ssize_t)count;
}
