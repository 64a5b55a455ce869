/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libmlx4sim: the view of a host with ConnectX-3 adapters, for a process
 * started by mlx4sim.
 *
 * It stands at the system calls a process makes on /dev/infiniband: the
 * device files exist (stat, open, fstat), write() carries uverbs commands
 * to the daemon and their responses back, ioctl() answers ENOTTY (so
 * libibverbs uses the write interface), mmap() maps the pages the daemon
 * shares, and reads of the event files the commands created return their
 * events.  RDMA netlink is absent, so libibverbs reads the simulated sysfs
 * tree (SYSFS_PATH).  Every other call passes through untouched.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/netlink.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>
#include <rdma/ib_user_verbs.h>

#include "protocol.h"

#define EXPORT __attribute__((visibility("default")))
#define UVERBS_PATH "/dev/infiniband/uverbs"

/* ------------------------------------------------------------------ */
/* The real calls                                                      */
/* ------------------------------------------------------------------ */

static struct {
	int (*open)(const char *, int, ...);
	int (*openat)(int, const char *, int, ...);
	int (*close)(int);
	ssize_t (*read)(int, void *, size_t);
	ssize_t (*write)(int, const void *, size_t);
	int (*ioctl)(int, unsigned long, ...);
	void *(*mmap)(void *, size_t, int, int, int, off_t);
	int (*socket)(int, int, int);
	int (*stat)(const char *, struct stat *);
	int (*lstat)(const char *, struct stat *);
	int (*fstat)(int, struct stat *);
	int (*dup)(int);
	int (*dup2)(int, int);
	int (*dup3)(int, int, int);
} real;

/* Short enough for a socket address beneath it. */
static char run_dir[96];
static bool active;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void resolve(void)
{
	const char *dir = getenv(MLX4SIM_ENV_DIR);

#define REAL(name) real.name = dlsym(RTLD_NEXT, #name)
	REAL(open);
	REAL(openat);
	REAL(close);
	REAL(read);
	REAL(write);
	REAL(ioctl);
	REAL(mmap);
	REAL(socket);
	REAL(stat);
	REAL(lstat);
	REAL(fstat);
	REAL(dup);
	REAL(dup2);
	REAL(dup3);
#undef REAL
	if (dir && *dir && strlen(dir) < sizeof(run_dir)) {
		strcpy(run_dir, dir);
		active = true;
	}
}

static inline void init(void)
{
	pthread_once(&once, resolve);
}

/* ------------------------------------------------------------------ */
/* Descriptors that are ours                                           */
/* ------------------------------------------------------------------ */

/* One open of a uverbs device: a connection to the daemon. */
struct conn {
	int sock;
	bool closed;
	int refs;
	pthread_mutex_t lock;
};

enum fd_kind { FD_NONE, FD_UVERBS, FD_EVENT };

struct fd_entry {
	enum fd_kind kind;
	struct conn *conn;
	uint32_t id;			/* uverbsN, or the daemon's event file */
};

/*
 * Two levels of 256 entries cover descriptors below 65536; pages are
 * never freed, so lookups need no lock.
 */
#define FD_PAGE		256
#define FD_PAGES	256
static struct fd_entry *fd_pages[FD_PAGES];
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;

static struct fd_entry *fd_lookup(int fd)
{
	struct fd_entry *page;

	if (fd < 0 || fd >= FD_PAGE * FD_PAGES)
		return NULL;
	page = __atomic_load_n(&fd_pages[fd / FD_PAGE], __ATOMIC_ACQUIRE);
	if (!page || page[fd % FD_PAGE].kind == FD_NONE)
		return NULL;
	return &page[fd % FD_PAGE];
}

static int fd_register(int fd, enum fd_kind kind, struct conn *conn,
		       uint32_t id)
{
	struct fd_entry *page;

	if (fd < 0 || fd >= FD_PAGE * FD_PAGES)
		return -EMFILE;
	pthread_mutex_lock(&table_lock);
	page = fd_pages[fd / FD_PAGE];
	if (!page) {
		page = calloc(FD_PAGE, sizeof(*page));
		if (!page) {
			pthread_mutex_unlock(&table_lock);
			return -ENOMEM;
		}
		__atomic_store_n(&fd_pages[fd / FD_PAGE], page, __ATOMIC_RELEASE);
	}
	page[fd % FD_PAGE] = (struct fd_entry){ kind, conn, id };
	conn->refs++;
	pthread_mutex_unlock(&table_lock);
	return 0;
}

static void fd_forget(int fd)
{
	struct fd_entry *e = fd_lookup(fd);
	struct conn *conn;

	if (!e)
		return;
	pthread_mutex_lock(&table_lock);
	conn = e->conn;
	if (e->kind == FD_UVERBS)
		conn->closed = true;	/* the socket is this descriptor */
	e->kind = FD_NONE;
	e->conn = NULL;
	if (--conn->refs == 0) {
		pthread_mutex_destroy(&conn->lock);
		free(conn);
	}
	pthread_mutex_unlock(&table_lock);
}

static void fd_copy(int from, int to)
{
	struct fd_entry *e = fd_lookup(from);

	if (e)
		fd_register(to, e->kind, e->conn, e->id);
}

/* ------------------------------------------------------------------ */
/* The devices                                                         */
/* ------------------------------------------------------------------ */

/* Which uverbsN @path names, if the simulated host has it. */
static int uverbs_index(const char *path, dev_t *rdev)
{
	char file[PATH_MAX], text[32];
	unsigned int major, minor;
	const char *p;
	char *end;
	long index;
	ssize_t n;
	int fd;

	init();
	if (!active || !path || strncmp(path, UVERBS_PATH, strlen(UVERBS_PATH)))
		return -1;
	p = path + strlen(UVERBS_PATH);
	index = strtol(p, &end, 10);
	if (end == p || *end || index < 0 || index > 255)
		return -1;
	snprintf(file, sizeof(file), "%s/%s/class/infiniband_verbs/uverbs%ld/dev",
		 run_dir, MLX4SIM_SYSFS_NAME, index);
	fd = real.open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = real.read(fd, text, sizeof(text) - 1);
	real.close(fd);
	if (n <= 0)
		return -1;
	text[n] = 0;
	if (sscanf(text, "%u:%u", &major, &minor) != 2)
		return -1;
	if (rdev)
		*rdev = makedev(major, minor);
	return index;
}

static void device_stat(dev_t rdev, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_dev = makedev(0, 5);
	st->st_ino = 1000 + minor(rdev);
	st->st_mode = S_IFCHR | 0666;
	st->st_nlink = 1;
	st->st_rdev = rdev;
	st->st_blksize = 4096;
}

/* ------------------------------------------------------------------ */
/* Talking to the daemon                                               */
/* ------------------------------------------------------------------ */

/*
 * One request, one reply, under the connection's lock.  A descriptor
 * that comes with the reply lands in *fd (else -1).
 */
static int transact(struct conn *conn, uint32_t op, uint32_t arg,
		    const void *payload, size_t len,
		    struct mlx4sim_reply *reply, void *data, size_t cap,
		    int *fd)
{
	struct mlx4sim_request req = { op, arg };
	struct iovec out[2] = { { &req, sizeof(req) }, { (void *)payload, len } };
	struct iovec in[2] = { { reply, sizeof(*reply) }, { data, cap } };
	char control[CMSG_SPACE(sizeof(int))];
	struct msghdr smsg = { .msg_iov = out, .msg_iovlen = 2 };
	struct msghdr rmsg = {
		.msg_iov = in, .msg_iovlen = 2,
		.msg_control = control, .msg_controllen = sizeof(control),
	};
	struct cmsghdr *cm;
	ssize_t n;
	int err = 0;

	*fd = -1;
	pthread_mutex_lock(&conn->lock);
	if (conn->closed) {
		err = -EBADF;
		goto out;
	}
	do
		n = sendmsg(conn->sock, &smsg, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		err = errno == EMSGSIZE ? -EINVAL : -EIO;
		goto out;
	}
	do
		n = recvmsg(conn->sock, &rmsg, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < (ssize_t)sizeof(*reply)) {
		err = -EIO;		/* the daemon is gone */
		goto out;
	}
	for (cm = CMSG_FIRSTHDR(&rmsg); cm; cm = CMSG_NXTHDR(&rmsg, cm))
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS)
			memcpy(fd, CMSG_DATA(cm), sizeof(int));
out:
	pthread_mutex_unlock(&conn->lock);
	return err;
}

/*
 * A copy to or from the caller's memory that fails like the kernel's
 * (EFAULT, not a crash): a read of our own memory into a local buffer,
 * which also tells valgrind's memcheck that the destination was written.
 */
static int copy_checked(void *to, const void *from, size_t len)
{
	struct iovec local = { to, len }, remote = { (void *)from, len };

	return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) ==
	       (ssize_t)len ? 0 : -EFAULT;
}

static int fail(int err)
{
	errno = -err;
	return -1;
}

/* ------------------------------------------------------------------ */
/* open, stat                                                          */
/* ------------------------------------------------------------------ */

static int uverbs_open(int index, int flags)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	struct mlx4sim_reply reply;
	struct conn *conn;
	int sock, err, unused;

	if ((flags & O_ACCMODE) != O_RDWR)
		return fail(-EINVAL);
	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s/%s", run_dir,
		 MLX4SIM_SOCKET_NAME);
	sock = real.socket(AF_UNIX, SOCK_SEQPACKET |
			   (flags & O_CLOEXEC ? SOCK_CLOEXEC : 0), 0);
	if (sock < 0)
		return -1;
	if (connect(sock, (void *)&addr, sizeof(addr))) {
		real.close(sock);
		return fail(-ENODEV);	/* the simulator is not running */
	}
	conn = calloc(1, sizeof(*conn));
	if (!conn) {
		real.close(sock);
		return fail(-ENOMEM);
	}
	conn->sock = sock;
	pthread_mutex_init(&conn->lock, NULL);
	err = transact(conn, MLX4SIM_OP_OPEN, index, NULL, 0, &reply, NULL, 0,
		       &unused);
	if (!err)
		err = reply.ret;
	if (!err)
		err = fd_register(sock, FD_UVERBS, conn, index);
	if (err) {
		pthread_mutex_destroy(&conn->lock);
		free(conn);
		real.close(sock);
		return fail(err);
	}
	return sock;
}

static int open_common(const char *path, int flags, mode_t mode)
{
	int index = uverbs_index(path, NULL);

	if (index >= 0)
		return uverbs_open(index, flags);
	return real.open(path, flags, mode);
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
	init();
	return open_common(path, flags, mode);
}

/* Off_t is 64-bit here: the *64 variants are the same calls. */
EXPORT int open64(const char *path, int flags, ...)
	__attribute__((alias("open")));

EXPORT int __open_2(const char *path, int flags)
{
	init();
	return open_common(path, flags, 0);
}

EXPORT int __open64_2(const char *path, int flags)
	__attribute__((alias("__open_2")));

EXPORT int openat(int dirfd, const char *path, int flags, ...)
{
	int index = uverbs_index(path, NULL);
	va_list ap;
	mode_t mode;

	va_start(ap, flags);
	mode = mode_arg(flags, ap);
	va_end(ap);
	if (index >= 0)
		return uverbs_open(index, flags);
	return real.openat(dirfd, path, flags, mode);
}

EXPORT int openat64(int dirfd, const char *path, int flags, ...)
	__attribute__((alias("openat")));

static int stat_common(const char *path, struct stat *st, bool follow)
{
	dev_t rdev;

	if (uverbs_index(path, &rdev) >= 0) {
		device_stat(rdev, st);
		return 0;
	}
	return follow ? real.stat(path, st) : real.lstat(path, st);
}

EXPORT int stat(const char *path, struct stat *st)
{
	init();
	return stat_common(path, st, true);
}

EXPORT int stat64(const char *path, struct stat64 *st)
{
	init();
	return stat_common(path, (struct stat *)st, true);
}

EXPORT int lstat(const char *path, struct stat *st)
{
	init();
	return stat_common(path, st, false);
}

EXPORT int lstat64(const char *path, struct stat64 *st)
{
	init();
	return stat_common(path, (struct stat *)st, false);
}

static int fstat_common(int fd, struct stat *st)
{
	struct fd_entry *e;

	init();
	e = fd_lookup(fd);
	if (e && e->kind == FD_UVERBS) {
		/* uverbsN, by the minor the connection was opened for. */
		device_stat(makedev(MLX4SIM_UVERBS_MAJOR,
				    MLX4SIM_UVERBS_MINOR0 + e->id), st);
		return 0;
	}
	return real.fstat(fd, st);
}

EXPORT int fstat(int fd, struct stat *st)
{
	return fstat_common(fd, st);
}

EXPORT int fstat64(int fd, struct stat64 *st)
{
	return fstat_common(fd, (struct stat *)st);
}

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
	cmd = malloc(2 * MLX4SIM_MAX_MSG);
	if (!cmd)
		return fail(-ENOMEM);
	resp = cmd + MLX4SIM_MAX_MSG;
	err = copy_checked(cmd, buf, count);
	if (!err) {
		response_buffer(cmd, count, &resp_addr, &resp_size);
		err = transact(e->conn, MLX4SIM_OP_WRITE,
			       channel_of(cmd, count), cmd, count, &reply,
			       resp, MLX4SIM_MAX_MSG, &fd);
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
	struct fd_entry *e;

	init();
	e = fd_lookup(fd);
	if (e && e->kind == FD_UVERBS)
		return uverbs_write(e, buf, count);
	return real.write(fd, buf, count);
}

/* ------------------------------------------------------------------ */
/* read: events                                                        */
/* ------------------------------------------------------------------ */

static ssize_t event_read(int fd, struct fd_entry *e, void *buf, size_t count)
{
	uint8_t event[sizeof(struct ib_uverbs_async_event_desc)];
	struct mlx4sim_reply reply;
	struct mlx4sim_event want = { count > UINT32_MAX ? UINT32_MAX : count };
	uint64_t token, one = 1;
	int err, unused;

	for (;;) {
		/* One count of the eventfd stands for one queued event. */
		if (real.read(fd, &token, sizeof(token)) < 0)
			return -1;
		err = transact(e->conn, MLX4SIM_OP_EVENT, e->id, &want,
			       sizeof(want), &reply, event, sizeof(event),
			       &unused);
		if (!err && reply.ret < 0)
			err = reply.ret;
		if (err) {
			real.write(fd, &one, sizeof(one));
			return fail(err);
		}
		if (reply.ret == 0)
			continue;	/* its object was destroyed meanwhile */
		if (copy_checked(buf, event, reply.ret))
			return fail(-EFAULT);
		return reply.ret;
	}
}

EXPORT ssize_t read(int fd, void *buf, size_t count)
{
	struct fd_entry *e;

	init();
	e = fd_lookup(fd);
	if (e && e->kind == FD_EVENT)
		return event_read(fd, e, buf, count);
	if (e)
		return fail(-EINVAL);
	return real.read(fd, buf, count);
}

/* ------------------------------------------------------------------ */
/* ioctl, mmap                                                         */
/* ------------------------------------------------------------------ */

EXPORT int ioctl(int fd, unsigned long request, ...)
{
	va_list ap;
	void *arg;

	va_start(ap, request);
	arg = va_arg(ap, void *);
	va_end(ap);
	init();
	/* The write interface only, as on kernels without uverbs ioctl. */
	if (fd_lookup(fd))
		return fail(-ENOTTY);
	return real.ioctl(fd, request, arg);
}

static void *uverbs_mmap(struct fd_entry *e, void *addr, size_t len, int prot,
			 int flags, off_t off)
{
	struct mlx4sim_mmap req = { len, prot, flags };
	struct mlx4sim_reply reply;
	void *p;
	int err, fd;

	if (off < 0 || (off & (sysconf(_SC_PAGESIZE) - 1))) {
		errno = EINVAL;
		return MAP_FAILED;
	}
	err = transact(e->conn, MLX4SIM_OP_MMAP, off / sysconf(_SC_PAGESIZE),
		       &req, sizeof(req), &reply, NULL, 0, &fd);
	if (!err && reply.ret < 0)
		err = reply.ret;
	if (!err && fd < 0)
		err = -EIO;
	if (err) {
		if (fd >= 0)
			real.close(fd);
		errno = -err;
		return MAP_FAILED;
	}
	p = real.mmap(addr, len, prot, flags, fd,
		      (off_t)reply.ret * sysconf(_SC_PAGESIZE));
	real.close(fd);
	return p;
}

EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd,
		  off_t off)
{
	struct fd_entry *e;

	init();
	e = fd_lookup(fd);
	if (e && e->kind == FD_UVERBS)
		return uverbs_mmap(e, addr, len, prot, flags, off);
	return real.mmap(addr, len, prot, flags, fd, off);
}

EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd,
		    off_t off) __attribute__((alias("mmap")));

/* ------------------------------------------------------------------ */
/* close, dup: keep the table true                                     */
/* ------------------------------------------------------------------ */

EXPORT int close(int fd)
{
	init();
	fd_forget(fd);
	return real.close(fd);
}

EXPORT int dup(int fd)
{
	int copy;

	init();
	copy = real.dup(fd);
	if (copy >= 0)
		fd_copy(fd, copy);
	return copy;
}

EXPORT int dup2(int fd, int to)
{
	int ret;

	init();
	if (fd != to)
		fd_forget(to);
	ret = real.dup2(fd, to);
	if (ret >= 0 && fd != to)
		fd_copy(fd, to);
	return ret;
}

EXPORT int dup3(int fd, int to, int flags)
{
	int ret;

	init();
	fd_forget(to);
	ret = real.dup3(fd, to, flags);
	if (ret >= 0)
		fd_copy(fd, to);
	return ret;
}

/* ------------------------------------------------------------------ */
/* socket: no RDMA netlink, so libibverbs reads sysfs                  */
/* ------------------------------------------------------------------ */

EXPORT int socket(int domain, int type, int protocol)
{
	init();
	if (active && domain == AF_NETLINK && protocol == NETLINK_RDMA)
		return fail(-EPROTONOSUPPORT);
	return real.socket(domain, type, protocol);
}
