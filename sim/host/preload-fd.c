/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libmlx4sim: the descriptors that are the library's own.  A table says
 * which of the process's descriptors are device files, event files,
 * /dev/infiniband open as a directory, or the sockets of the connections
 * to the daemon (which the program never sees).  It must stay true
 * across every call that copies or closes a descriptor -- close, dup,
 * dup2, dup3, fcntl(F_DUPFD), close_range, closefrom -- because the
 * kernel hands a closed number out again, and the file it then names is
 * not ours.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "preload.h"

/* The table: FD_PAGES pointers to pages of FD_PAGE entries. */
static struct fd_entry *fd_pages[FD_PAGES];
pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;

struct fd_entry *fd_lookup(int fd)
{
	struct fd_entry *page;

	if (fd < 0 || fd >= FD_PAGE * FD_PAGES)
		return NULL;
	page = __atomic_load_n(&fd_pages[fd / FD_PAGE], __ATOMIC_ACQUIRE);
	if (!page || page[fd % FD_PAGE].kind == FD_NONE)
		return NULL;
	return &page[fd % FD_PAGE];
}

/* Under table_lock. */
int entry_set(int fd, enum fd_kind kind, struct conn *conn, uint32_t id)
{
	struct fd_entry *page;

	if (fd < 0 || fd >= FD_PAGE * FD_PAGES)
		return -EMFILE;
	page = fd_pages[fd / FD_PAGE];
	if (!page) {
		page = calloc(FD_PAGE, sizeof(*page));
		if (!page)
			return -ENOMEM;
		__atomic_store_n(&fd_pages[fd / FD_PAGE], page, __ATOMIC_RELEASE);
	}
	page[fd % FD_PAGE] = (struct fd_entry){ kind, conn, id };
	if (conn)
		conn->refs++;
	if (is_device_kind(kind))
		conn->files++;
	return 0;
}

int fd_register(int fd, enum fd_kind kind, struct conn *conn, uint32_t id)
{
	int err;

	pthread_mutex_lock(&table_lock);
	err = entry_set(fd, kind, conn, id);
	pthread_mutex_unlock(&table_lock);
	return err;
}

/* Under table_lock: one reference to @conn less, and it goes with the last. */
static void conn_put_locked(struct conn *conn)
{
	if (--conn->refs == 0) {
		pthread_mutex_destroy(&conn->lock);
		free(conn);
	}
}

/* Under table_lock: an entry gone, and its connection when the last. */
void entry_clear(struct fd_entry *e)
{
	struct conn *conn = e->conn;

	e->kind = FD_NONE;
	e->conn = NULL;
	if (conn)
		conn_put_locked(conn);
}

/*
 * The kernel's fdget(): a call on one of the program's device or event
 * files works on a copy of @fd's entry in @held, whose connection stays
 * while the call uses it, though another thread closes the descriptor
 * meanwhile (a call that waits then finds conn->closed).  False for any
 * other descriptor, or one closed first.
 */
bool fd_get(int fd, struct fd_entry *held)
{
	struct fd_entry *e = fd_lookup(fd);
	bool ours;

	if (!e)
		return false;
	pthread_mutex_lock(&table_lock);
	ours = e->kind != FD_CONN && e->conn;
	if (ours) {
		*held = *e;
		held->conn->refs++;
	}
	pthread_mutex_unlock(&table_lock);
	return ours;
}

/* The call is done with @held (fdput()). */
void fd_put(struct fd_entry *held)
{
	pthread_mutex_lock(&table_lock);
	conn_put_locked(held->conn);
	pthread_mutex_unlock(&table_lock);
}

/*
 * @fd, an async event file, becomes an empty eventfd with the same status
 * and descriptor flags: never ready, a read blocks or fails with EAGAIN.
 */
static bool make_silent(int fd)
{
	int status = real.fcntl(fd, F_GETFL), flags = real.fcntl(fd, F_GETFD);
	int quiet = eventfd(0, EFD_CLOEXEC |
			    (status >= 0 && (status & O_NONBLOCK) ? EFD_NONBLOCK : 0));
	bool done;

	if (quiet < 0)
		return false;
	done = real.dup3(quiet, fd, flags >= 0 && (flags & FD_CLOEXEC) ?
			 O_CLOEXEC : 0) == fd;
	real.close(quiet);
	return done;
}

/*
 * Under table_lock: the async event files of a device the program closed.
 * uverbs leaves such a file open and silent until it is closed itself
 * (uverbs_async_event_destroy_uobj posts DEVICE_FATAL only when the
 * driver goes), while ours would hang up as the daemon drops the context:
 * an epoll loop would spin on it (DPDK's mlx4 PMD closes the device
 * before it stops watching the file).  So each becomes the program's own
 * silent file.
 */
static void silence_async_files(struct conn *conn)
{
	for (int p = 0; p < FD_PAGES; p++) {
		struct fd_entry *page = fd_pages[p];

		for (int i = 0; page && i < FD_PAGE; i++) {
			struct fd_entry *e = &page[i];

			if (e->kind == FD_EVENT && e->async && e->conn == conn &&
			    make_silent(p * FD_PAGE + i))
				entry_clear(e);
		}
	}
}

/*
 * Under table_lock, when the program closed its last descriptor of the
 * device: the connection closes, as the device file would be released.
 * Returns the socket for the caller to close after the lock.
 */
static int conn_release(struct conn *conn)
{
	int sock = conn->sock;

	pthread_mutex_lock(&conn->lock);	/* after a request in flight */
	conn->closed = true;
	pthread_mutex_unlock(&conn->lock);
	silence_async_files(conn);
	entry_clear(fd_lookup(sock));
	return sock;
}

void fd_forget(int fd)
{
	struct fd_entry *e = fd_lookup(fd);
	int sock = -1;
	bool umad;

	if (!e || e->kind == FD_CONN)
		return;
	pthread_mutex_lock(&table_lock);
	umad = e->kind == FD_UMAD;
	if (is_device_kind(e->kind) && --e->conn->files == 0)
		sock = conn_release(e->conn);
	entry_clear(e);
	pthread_mutex_unlock(&table_lock);
	if (sock >= 0 && umad)
		umad_close_wait(sock);
	if (sock >= 0)
		real.close(sock);
}

/* A copy the program made of one of its descriptors. */
static void fd_copy(int from, int to)
{
	struct fd_entry *e = fd_lookup(from);

	if (e && e->kind != FD_CONN &&
	    !fd_register(to, e->kind, e->conn, e->id))
		fd_lookup(to)->async = e->async;
}

static bool is_conn(int fd)
{
	struct fd_entry *e = fd_lookup(fd);

	return e && e->kind == FD_CONN;
}

/*
 * The program is about to put a file at @fd, which to it is free: a
 * connection's socket there moves to another number first.
 */
static void conn_move_from(int fd)
{
	struct fd_entry *e;
	struct conn *conn;
	int moved = -1;

	pthread_mutex_lock(&table_lock);
	e = fd_lookup(fd);
	if (e && e->kind == FD_CONN) {
		conn = e->conn;
		pthread_mutex_lock(&conn->lock);
		moved = real.fcntl(fd, F_DUPFD_CLOEXEC, 0);
		if (moved >= 0 && !entry_set(moved, FD_CONN, conn, e->id)) {
			conn->sock = moved;
			entry_clear(e);
		} else if (moved >= 0) {
			real.close(moved);
			moved = -1;
		}
		pthread_mutex_unlock(&conn->lock);
	}
	pthread_mutex_unlock(&table_lock);
	/* Else the program's call fails as the kernel makes it (EMFILE). */
	if (moved >= 0)
		real.close(fd);
}

bool is_dev_dir_fd(int fd)
{
	struct fd_entry *e = fd_lookup(fd);

	return e && e->kind == FD_DEV_DIR;
}

/* ------------------------------------------------------------------ */
/* close, dup: keep the table true                                     */
/* ------------------------------------------------------------------ */

EXPORT int close(int fd)
{
	init();
	if (is_conn(fd))
		return fail(-EBADF);	/* not a descriptor of the program's */
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

/*
 * Before the program puts a copy of @fd at @to: a number of ours is no
 * descriptor of the program's, and whatever sat at @to goes (a socket of
 * ours moves out of the way first).
 */
static int before_dup(int fd, int to)
{
	init();
	if (is_conn(fd))
		return fail(-EBADF);
	if (fd != to) {
		conn_move_from(to);
		fd_forget(to);
	}
	return 0;
}

EXPORT int dup2(int fd, int to)
{
	int ret = before_dup(fd, to) ?: real.dup2(fd, to);

	if (ret >= 0 && fd != to)
		fd_copy(fd, to);
	return ret;
}

/* (dup3 onto itself is EINVAL: no copy is made.) */
EXPORT int dup3(int fd, int to, int flags)
{
	int ret = before_dup(fd, to) ?: real.dup3(fd, to, flags);

	if (ret >= 0)
		fd_copy(fd, to);
	return ret;
}

/* F_DUPFD makes copies too; every other command passes through. */
EXPORT int fcntl(int fd, int cmd, ...)
{
	va_list ap;
	void *arg;
	int ret;

	va_start(ap, cmd);
	arg = va_arg(ap, void *);
	va_end(ap);
	init();
	ret = real.fcntl(fd, cmd, arg);
	if (ret >= 0 && (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC))
		fd_copy(fd, ret);
	return ret;
}

/* With 64-bit off_t, fcntl64 is fcntl. */
EXPORT int fcntl64(int fd, int cmd, ...) __attribute__((alias("fcntl")));

/*
 * Descriptors closed in bulk are forgotten first, as close() forgets
 * them: a number the kernel hands out again must not stay ours.  The
 * connections' sockets are not the program's to close: the real call
 * closes the spans between them.
 */
static int close_spans(unsigned int first, unsigned int last, int flags)
{
	unsigned int start = first;
	int ret = 0;

	for (unsigned int fd = first;
	     fd <= last && fd < FD_PAGE * FD_PAGES; fd++) {
		if (fd % FD_PAGE == 0 &&
		    !__atomic_load_n(&fd_pages[fd / FD_PAGE], __ATOMIC_ACQUIRE)) {
			fd += FD_PAGE - 1;	/* a page never used */
			continue;
		}
		if (is_conn(fd)) {
			if (start < fd && real.close_range(start, fd - 1, flags))
				ret = -1;
			start = fd + 1;
		} else if (!(flags & CLOSE_RANGE_CLOEXEC)) {
			fd_forget(fd);
		}
	}
	if (start <= last && real.close_range(start, last, flags))
		ret = -1;
	return ret;
}

EXPORT int close_range(unsigned int first, unsigned int last, int flags)
{
	init();
	if (first > last)
		return real.close_range(first, last, flags);	/* EINVAL */
	return close_spans(first, last, flags);
}

EXPORT void closefrom(int first)
{
	init();
	if (first >= 0)
		close_spans(first, UINT_MAX, 0);
}
