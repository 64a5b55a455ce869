/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libmlx4sim's own declarations, shared by its files and by nothing else.
 * The library exports only the C library's calls it stands in for
 * (EXPORT); every name here is hidden (-fvisibility=hidden), so none of
 * them can meet a program's.  Each file includes it after defining
 * _GNU_SOURCE.
 */
#ifndef MLX4SIM_PRELOAD_H
#define MLX4SIM_PRELOAD_H

#include <dirent.h>
#include <errno.h>
#include <glob.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "protocol.h"

#define EXPORT __attribute__((visibility("default")))

/* ------------------------------------------------------------------ */
/* The real calls, and whether this process runs on a simulator        */
/* ------------------------------------------------------------------ */

/* The C library's own functions, behind ours (dlsym(RTLD_NEXT)). */
struct real_calls {
	int (*open)(const char *, int, ...);
	int (*openat)(int, const char *, int, ...);
	int (*close)(int);
	ssize_t (*read)(int, void *, size_t);
	ssize_t (*write)(int, const void *, size_t);
	int (*ioctl)(int, unsigned long, ...);
	void *(*mmap)(void *, size_t, int, int, int, off_t);
	int (*munmap)(void *, size_t);
	void *(*mremap)(void *, size_t, size_t, int, ...);
	int (*madvise)(void *, size_t, int);
	int (*socket)(int, int, int);
	int (*fstat)(int, struct stat *);
	int (*fstatat)(int, const char *, struct stat *, int);
	int (*statx)(int, const char *, int, unsigned int, struct statx *);
	int (*dup)(int);
	int (*dup2)(int, int);
	int (*dup3)(int, int, int);
	int (*fcntl)(int, int, ...);
	int (*close_range)(unsigned int, unsigned int, int);
	int (*faccessat)(int, const char *, int, int);
	DIR *(*opendir)(const char *);
	int (*closedir)(DIR *);
	struct dirent *(*readdir)(DIR *);
	struct dirent64 *(*readdir64)(DIR *);
	int (*scandir)(const char *, struct dirent ***,
		       int (*)(const struct dirent *),
		       int (*)(const struct dirent **, const struct dirent **));
	int (*scandir64)(const char *, struct dirent64 ***,
			 int (*)(const struct dirent64 *),
			 int (*)(const struct dirent64 **,
				 const struct dirent64 **));
	char *(*realpath)(const char *, char *);
	int (*glob)(const char *, int, int (*)(const char *, int), glob_t *);
	int (*glob64)(const char *, int, int (*)(const char *, int),
		      glob64_t *);
	ssize_t (*readlinkat)(int, const char *, char *, size_t);
	ssize_t (*getxattr)(const char *, const char *, void *, size_t);
	ssize_t (*lgetxattr)(const char *, const char *, void *, size_t);
	ssize_t (*fgetxattr)(int, const char *, void *, size_t);
	ssize_t (*listxattr)(const char *, char *, size_t);
	ssize_t (*llistxattr)(const char *, char *, size_t);
	ssize_t (*flistxattr)(int, char *, size_t);
};

extern struct real_calls real;

/* Short enough for a socket address beneath it. */
#define RUN_DIR_SIZE	96
extern char run_dir[RUN_DIR_SIZE];	/* MLX4SIM_DIR, when active */
extern bool active;			/* this process runs on a simulator */

/* Every wrapper's first step: the real calls found, active decided. */
void init(void);

/* Calls fail as the kernel's do: -1 with errno, from a -errno. */
static inline int fail(int err)
{
	errno = -err;
	return -1;
}

/* ------------------------------------------------------------------ */
/* Descriptors that are ours                                           */
/* ------------------------------------------------------------------ */

/*
 * One open of a uverbs device: a connection to the daemon.  The program's
 * descriptor of the device is the file of the context's pages (the daemon
 * passes it), so that the kernel maps them on any mmap() path; the socket
 * that carries the commands is ours alone, closed with the last copy of
 * the program's descriptor.
 */
struct conn {
	int sock;
	bool closed;
	bool fatal_reported;	/* the daemon is gone and the app was told */
	int refs;		/* table entries naming it, calls using it */
	int files;		/* of them, the program's device descriptors */
	bool umad_pkey;		/* umad: the header with the P_Key index */
	pthread_mutex_t lock;
};

/*
 * FD_DEV_DIR: /dev/infiniband, open as a directory (no connection).
 * FD_CONN: a connection's socket, which the program does not know of:
 * its close() and bulk closes pass it by, and a dup2() onto its number
 * moves it first.
 */
enum fd_kind { FD_NONE, FD_UVERBS, FD_EVENT, FD_DEV_DIR, FD_CONN, FD_UMAD,
	       FD_RDMA_CM };

/* The kinds that are a program's device file, each with its connection. */
static inline bool is_device_kind(enum fd_kind kind)
{
	return kind == FD_UVERBS || kind == FD_UMAD || kind == FD_RDMA_CM;
}

struct fd_entry {
	enum fd_kind kind;
	struct conn *conn;
	uint32_t id;			/* uverbsN, the daemon's event file,
					 * a umad file's minor or the
					 * daemon's rdma_cm file */
	bool async;			/* the context's async event file */
};

/*
 * Two levels of 256 entries cover descriptors below 65536; pages are
 * never freed, so lookups need no lock.
 */
#define FD_PAGE		256
#define FD_PAGES	256

/* Held to change the table (entry_set, entry_clear). */
extern pthread_mutex_t table_lock;

struct fd_entry *fd_lookup(int fd);
int entry_set(int fd, enum fd_kind kind, struct conn *conn, uint32_t id);
void entry_clear(struct fd_entry *e);
bool fd_get(int fd, struct fd_entry *held);
void fd_put(struct fd_entry *held);
int fd_register(int fd, enum fd_kind kind, struct conn *conn, uint32_t id);
void fd_forget(int fd);
bool is_dev_dir_fd(int fd);

/* ------------------------------------------------------------------ */
/* The names under /dev/infiniband                                     */
/* ------------------------------------------------------------------ */

/*
 * What a path names on the simulated host.  /dev/infiniband is a
 * directory that holds the uverbs, umad and issm files the host has and
 * nothing else (no rdma_cm here); below a device file there is nothing
 * (ENOTDIR).  Every other path is the real host's.  NAME_UVERBS is any
 * of the device files; which one, @file says.
 */
enum name_kind { NAME_HOST, NAME_DIR, NAME_UVERBS, NAME_NOTDIR, NAME_ABSENT };
enum dev_file { DEV_UVERBS, DEV_UMAD, DEV_RDMA_CM };

struct dev_name {
	enum name_kind kind;
	enum dev_file file;
	int index;		/* N of uverbsN, the minor of umadN, issmN */
	dev_t rdev;
	const char *host;	/* NAME_HOST: the path for the real call */
	char canon[PATH_MAX];	/* the absolute path without ".", "..", "//" */
};

#define DEV_DIR		"/dev/infiniband"
#define DEV_DIR_LEN	(sizeof(DEV_DIR) - 1)
#define DEV_DIR_INO	999

void name_of(int dirfd, const char *path, struct dev_name *name);
int class_dev_number(const char *class, const char *file, dev_t *rdev);
int name_error(const struct dev_name *name);
int name_stat(const struct dev_name *name, struct stat *st);
ino_t uverbs_ino(unsigned int minor);
void device_stat(dev_t rdev, struct stat *st);
void dir_stat(struct stat *st);

/* The stat family, for glob()'s own functions. */
int fstatat_common(int dirfd, const char *path, struct stat *st, int flags);

/* /dev/infiniband as a descriptor (open, openat). */
int dev_dir_open(int flags);

/* ------------------------------------------------------------------ */
/* The daemon                                                          */
/* ------------------------------------------------------------------ */

int transact(struct conn *conn, uint32_t op, uint32_t arg,
	     const void *payload, size_t len, struct mlx4sim_reply *reply,
	     void *data, size_t cap, int *fd);

/* One request and its reply, the connection's lock held. */
struct exchange {
	uint32_t op, arg;
	const void *payload;
	size_t len;
	int send_fd;			/* passed with the request, or -1 */
	struct mlx4sim_reply *reply;
	void *data;			/* what follows the reply */
	size_t cap;
	size_t got;			/* bytes of it received */
	int fd;				/* passed with the reply, or -1 */
};
int exchange_locked(struct conn *conn, struct exchange *x);

/* ------------------------------------------------------------------ */
/* Pinned pages, shared with the daemon (preload-mem.c)                */
/* ------------------------------------------------------------------ */

int pinned_move(uint64_t addr, uint64_t len);
void pinned_forget(uint64_t addr, uint64_t len);
int copy_checked(void *to, const void *from, size_t len);
struct conn *conn_open(int *err);
struct conn *device_connect(uint32_t op, uint32_t arg, int flags,
			    struct mlx4sim_reply *reply, int *file, int *err);
int conn_register(struct conn *conn, int file, int err, enum fd_kind kind,
		  uint32_t id);

/* ------------------------------------------------------------------ */
/* The umad and issm files (preload-umad.c)                            */
/* ------------------------------------------------------------------ */

int umad_name(const char *path, dev_t *rdev);
void umad_entry(struct dirent *d);
int umad_open(int minor, int flags);
ssize_t umad_read(int fd, struct fd_entry *e, void *buf, size_t count);
ssize_t umad_write(struct fd_entry *e, const void *buf, size_t count);
int umad_ioctl(struct fd_entry *e, unsigned long request, void *arg);
void umad_close_wait(int sock);

/* ------------------------------------------------------------------ */
/* /dev/infiniband/rdma_cm (preload-rdmacm.c)                          */
/* ------------------------------------------------------------------ */

int rdmacm_name(const char *path, dev_t *rdev);
int rdmacm_open(int flags);
dev_t rdmacm_rdev(void);
void rdmacm_entry(struct dirent *d);
ssize_t rdmacm_write(int fd, struct fd_entry *e, const void *buf,
		     size_t count);
bool rdmacm_vfs_ioctl(const struct fd_entry *e, unsigned long request);

#endif /* MLX4SIM_PRELOAD_H */
