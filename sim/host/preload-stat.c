/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libmlx4sim: the calls that ask about a name or a descriptor -- the
 * stat family (with glibc's older __xstat entry points and statx),
 * access, realpath, readlink and the extended attributes -- answered for
 * /dev/infiniband and its device files as the kernel answers for
 * devtmpfs's, and passed to the C library for every other path.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "preload.h"

/* ------------------------------------------------------------------ */
/* The stat family                                                     */
/* ------------------------------------------------------------------ */

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
	if (e && e->kind == FD_UMAD) {
		device_stat(makedev(MLX4SIM_UVERBS_MAJOR, e->id), st);
		return 0;
	}
	if (e && e->kind == FD_RDMA_CM) {
		device_stat(rdmacm_rdev(), st);
		return 0;
	}
	if (e && e->kind == FD_DEV_DIR) {
		dir_stat(st);
		return 0;
	}
	return real.fstat(fd, st);
}

EXPORT int fstat(int fd, struct stat *st)
{
	return fstat_common(fd, st);
}

EXPORT int fstat64(int fd, struct stat64 *st)
	__attribute__((alias("fstat")));

int fstatat_common(int dirfd, const char *path, struct stat *st, int flags)
{
	struct dev_name name;
	int ret;

	if ((flags & AT_EMPTY_PATH) && path && !*path)
		return fstat_common(dirfd, st);
	name_of(dirfd, path, &name);
	ret = name_stat(&name, st);
	if (ret <= 0)
		return ret ? fail(ret) : 0;
	return real.fstatat(dirfd, name.host, st, flags);
}

EXPORT int stat(const char *path, struct stat *st)
{
	return fstatat_common(AT_FDCWD, path, st, 0);
}

EXPORT int stat64(const char *path, struct stat64 *st)
	__attribute__((alias("stat")));

EXPORT int lstat(const char *path, struct stat *st)
{
	return fstatat_common(AT_FDCWD, path, st, AT_SYMLINK_NOFOLLOW);
}

EXPORT int lstat64(const char *path, struct stat64 *st)
	__attribute__((alias("lstat")));

EXPORT int fstatat(int dirfd, const char *path, struct stat *st, int flags)
{
	return fstatat_common(dirfd, path, st, flags);
}

EXPORT int fstatat64(int dirfd, const char *path, struct stat64 *st,
		     int flags)
	__attribute__((alias("fstatat")));

static void statx_of(const struct stat *st, struct statx *stx)
{
	memset(stx, 0, sizeof(*stx));
	stx->stx_mask = STATX_BASIC_STATS;
	stx->stx_blksize = st->st_blksize;
	stx->stx_nlink = st->st_nlink;
	stx->stx_uid = st->st_uid;
	stx->stx_gid = st->st_gid;
	stx->stx_mode = st->st_mode;
	stx->stx_ino = st->st_ino;
	stx->stx_size = st->st_size;
	stx->stx_rdev_major = major(st->st_rdev);
	stx->stx_rdev_minor = minor(st->st_rdev);
	stx->stx_dev_major = major(st->st_dev);
	stx->stx_dev_minor = minor(st->st_dev);
}

EXPORT int statx(int dirfd, const char *path, int flags, unsigned int mask,
		 struct statx *stx)
{
	struct dev_name name;
	struct stat st;
	int ret;

	init();
	if ((flags & AT_EMPTY_PATH) && !*path) {
		struct fd_entry *e = fd_lookup(dirfd);

		if (!e || e->kind == FD_EVENT)
			return real.statx(dirfd, path, flags, mask, stx);
		ret = fstat_common(dirfd, &st);
	} else {
		name_of(dirfd, path, &name);
		ret = name_stat(&name, &st);
		if (ret > 0)
			return real.statx(dirfd, name.host, flags, mask, stx);
	}
	if (ret < 0)
		return fail(ret);
	statx_of(&st, stx);
	return 0;
}

/*
 * The stat entry points of glibc before 2.33, which programs built then
 * still call.  Their version argument names the layout of struct stat:
 * on x86-64 the only one is the kernel's, which fstatat fills.
 */
EXPORT int __xstat(int ver, const char *path, struct stat *st)
{
	(void)ver;
	return fstatat_common(AT_FDCWD, path, st, 0);
}

EXPORT int __xstat64(int ver, const char *path, struct stat64 *st)
	__attribute__((alias("__xstat")));

EXPORT int __lxstat(int ver, const char *path, struct stat *st)
{
	(void)ver;
	return fstatat_common(AT_FDCWD, path, st, AT_SYMLINK_NOFOLLOW);
}

EXPORT int __lxstat64(int ver, const char *path, struct stat64 *st)
	__attribute__((alias("__lxstat")));

EXPORT int __fxstat(int ver, int fd, struct stat *st)
{
	(void)ver;
	return fstat_common(fd, st);
}

EXPORT int __fxstat64(int ver, int fd, struct stat64 *st)
	__attribute__((alias("__fxstat")));

EXPORT int __fxstatat(int ver, int dirfd, const char *path, struct stat *st,
		      int flags)
{
	(void)ver;
	return fstatat_common(dirfd, path, st, flags);
}

EXPORT int __fxstatat64(int ver, int dirfd, const char *path,
			struct stat64 *st, int flags)
	__attribute__((alias("__fxstatat")));

/* ------------------------------------------------------------------ */
/* access                                                              */
/* ------------------------------------------------------------------ */

/*
 * What the files' permissions grant (they are root's): root may read and
 * write anything, and execute where any execute bit is set; others get
 * the "other" bits.
 */
static bool allows(const struct stat *st, int mode, uid_t uid)
{
	mode_t other = st->st_mode & 07;

	if (mode == F_OK)
		return true;
	if (uid == 0)
		return !(mode & X_OK) || (st->st_mode & 0111);
	return !((mode & R_OK) && !(other & 04)) &&
	       !((mode & W_OK) && !(other & 02)) &&
	       !((mode & X_OK) && !(other & 01));
}

static int access_common(int dirfd, const char *path, int mode, int flags)
{
	struct dev_name name;
	struct stat st = { 0 };	/* filled when name_stat() returns 0 */
	int ret;

	name_of(dirfd, path, &name);
	ret = name_stat(&name, &st);
	if (ret > 0)
		return real.faccessat(dirfd, name.host, mode, flags);
	if (ret < 0)
		return fail(ret);
	if (mode & ~(R_OK | W_OK | X_OK))
		return fail(-EINVAL);
	if (!allows(&st, mode, flags & AT_EACCESS ? geteuid() : getuid()))
		return fail(-EACCES);
	return 0;
}

EXPORT int access(const char *path, int mode)
{
	return access_common(AT_FDCWD, path, mode, 0);
}

EXPORT int eaccess(const char *path, int mode)
{
	return access_common(AT_FDCWD, path, mode, AT_EACCESS);
}

EXPORT int euidaccess(const char *path, int mode)
	__attribute__((alias("eaccess")));

/* faccessat2 is the system call beneath glibc's faccessat. */
EXPORT int faccessat(int dirfd, const char *path, int mode, int flags)
{
	return access_common(dirfd, path, mode, flags);
}

/* ------------------------------------------------------------------ */
/* realpath, readlink, extended attributes                             */
/* ------------------------------------------------------------------ */

static char *realpath_common(const char *path, char *resolved, size_t size)
{
	struct dev_name name;

	name_of(AT_FDCWD, path, &name);
	switch (name.kind) {
	case NAME_HOST:
		return real.realpath(name.host, resolved);
	case NAME_DIR:
	case NAME_UVERBS:
		if (!resolved)
			return strdup(name.canon);
		if (strlen(name.canon) >= size) {
			errno = ENAMETOOLONG;
			return NULL;
		}
		return strcpy(resolved, name.canon);
	default:
		errno = -name_error(&name);
		return NULL;
	}
}

EXPORT char *realpath(const char *path, char *resolved)
{
	return realpath_common(path, resolved, PATH_MAX);
}

EXPORT char *__realpath_chk(const char *path, char *resolved, size_t size)
{
	return realpath_common(path, resolved, size);
}

EXPORT char *canonicalize_file_name(const char *path)
{
	return realpath_common(path, NULL, PATH_MAX);
}

/* The device files and their directory are not links. */
EXPORT ssize_t readlinkat(int dirfd, const char *path, char *buf, size_t size)
{
	struct dev_name name;

	name_of(dirfd, path, &name);
	switch (name.kind) {
	case NAME_HOST:
		return real.readlinkat(dirfd, name.host, buf, size);
	case NAME_DIR:
	case NAME_UVERBS:
		return fail(-EINVAL);
	default:
		return fail(name_error(&name));
	}
}

EXPORT ssize_t readlink(const char *path, char *buf, size_t size)
{
	return readlinkat(AT_FDCWD, path, buf, size);
}

/*
 * devtmpfs keeps no extended attributes on these files: none to list,
 * and ENODATA for any name (ls -l asks for ACLs and security labels).
 */
static ssize_t xattr_get(const char *path, const char *attr, void *value,
			 size_t size, bool follow)
{
	struct dev_name name;

	name_of(AT_FDCWD, path, &name);
	if (name.kind != NAME_HOST)
		return fail(name_error(&name) ?: -ENODATA);
	return follow ? real.getxattr(name.host, attr, value, size) :
			real.lgetxattr(name.host, attr, value, size);
}

EXPORT ssize_t getxattr(const char *path, const char *attr, void *value,
			size_t size)
{
	return xattr_get(path, attr, value, size, true);
}

EXPORT ssize_t lgetxattr(const char *path, const char *attr, void *value,
			 size_t size)
{
	return xattr_get(path, attr, value, size, false);
}

EXPORT ssize_t fgetxattr(int fd, const char *attr, void *value, size_t size)
{
	struct fd_entry *e;

	init();
	e = fd_lookup(fd);
	if (e && e->kind != FD_EVENT)
		return fail(-ENODATA);
	return real.fgetxattr(fd, attr, value, size);
}

static ssize_t xattr_list(const char *path, char *list, size_t size,
			  bool follow)
{
	struct dev_name name;

	name_of(AT_FDCWD, path, &name);
	if (name.kind != NAME_HOST) {
		int err = name_error(&name);

		return err ? fail(err) : 0;
	}
	return follow ? real.listxattr(name.host, list, size) :
			real.llistxattr(name.host, list, size);
}

EXPORT ssize_t listxattr(const char *path, char *list, size_t size)
{
	return xattr_list(path, list, size, true);
}

EXPORT ssize_t llistxattr(const char *path, char *list, size_t size)
{
	return xattr_list(path, list, size, false);
}

EXPORT ssize_t flistxattr(int fd, char *list, size_t size)
{
	struct fd_entry *e;

	init();
	e = fd_lookup(fd);
	if (e && e->kind != FD_EVENT)
		return 0;
	return real.flistxattr(fd, list, size);
}
