/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libmlx4sim: /dev/infiniband as a directory that opendir, readdir,
 * scandir and glob list.  Its entries are those of a real directory in
 * the run directory, made when it is opened, with an empty file for each
 * uverbs device sysfs lists: the C library reads it as any directory,
 * and readdir() gives its entries the device files' type and inodes.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "preload.h"

#define LISTING_MAX	(sizeof(run_dir) + 32)

/*
 * An empty file in @dir for each device of sysfs's class @class whose
 * name starts with one of @prefixes (NULL-ended).
 */
static void list_class(const char *dir, const char *class,
		       const char *const *prefixes)
{
	char sysfs[PATH_MAX], file[LISTING_MAX + 256];
	struct dirent *d;
	DIR *devices;
	int fd;

	snprintf(sysfs, sizeof(sysfs), "%s/%s/class/%s", run_dir,
		 MLX4SIM_SYSFS_NAME, class);
	devices = real.opendir(sysfs);
	if (!devices)
		return;
	while ((d = real.readdir(devices))) {
		const char *const *p;

		for (p = prefixes; *p && strncmp(d->d_name, *p, strlen(*p)); p++)
			;
		if (!*p)
			continue;
		snprintf(file, sizeof(file), "%s/%s", dir, d->d_name);
		fd = real.open(file, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
		if (fd >= 0)
			real.close(fd);
	}
	real.closedir(devices);
}

/* The umad and issm files, ib_umad's (the class infiniband_mad). */
static void list_umad(const char *dir)
{
	static const char *const prefixes[] = { "umad", "issm", NULL };

	list_class(dir, "infiniband_mad", prefixes);
}

/* rdma_cm, ucma's misc device. */
static void list_rdma_cm(const char *dir)
{
	static const char *const name[] = { "rdma_cm", NULL };

	list_class(dir, "misc", name);
}

/*
 * The directory's entries are those of a real directory in the run
 * directory (@dir, LISTING_MAX bytes), which holds an empty file for each
 * device file the host has; readdir() gives them the device files' type
 * and inode.
 */
static const char *listing_dir(char *dir)
{
	static const char *const uverbs[] = { "uverbs", NULL };

	snprintf(dir, LISTING_MAX, "%s/dev-infiniband", run_dir);
	if (mkdir(dir, 0755) && errno != EEXIST)
		return dir;
	list_class(dir, "infiniband_verbs", uverbs);
	list_umad(dir);
	list_rdma_cm(dir);
	return dir;
}

/* An entry of the listing as the real directory would give it. */
static void dev_dir_entry(struct dirent *d)
{
	unsigned int index;
	int end = 0;

	if (!strcmp(d->d_name, ".")) {
		d->d_ino = DEV_DIR_INO;
	} else if (sscanf(d->d_name, "uverbs%u%n", &index, &end) == 1 &&
		   !d->d_name[end]) {
		d->d_ino = uverbs_ino(MLX4SIM_UVERBS_MINOR0 + index);
		d->d_type = DT_CHR;
	} else {
		umad_entry(d);
		rdmacm_entry(d);
	}
}

/* /dev/infiniband as a descriptor, for programs that list it that way. */
int dev_dir_open(int flags)
{
	char listing[LISTING_MAX];
	int fd = real.open(listing_dir(listing), flags, 0);
	int err;

	if (fd < 0)
		return fd;
	err = fd_register(fd, FD_DEV_DIR, NULL, 0);
	if (err) {
		real.close(fd);
		return fail(err);
	}
	return fd;
}

/* ------------------------------------------------------------------ */
/* Listing /dev/infiniband                                             */
/* ------------------------------------------------------------------ */

EXPORT DIR *opendir(const char *path)
{
	char listing[LISTING_MAX];
	struct dev_name name;
	DIR *dir;
	int err;

	name_of(AT_FDCWD, path, &name);
	if (name.kind == NAME_HOST)
		return real.opendir(name.host);
	if (name.kind == NAME_UVERBS)
		err = -ENOTDIR;
	else
		err = name_error(&name);
	if (err) {
		errno = -err;
		return NULL;
	}
	dir = real.opendir(listing_dir(listing));
	if (dir) {
		err = fd_register(dirfd(dir), FD_DEV_DIR, NULL, 0);
		if (err) {
			real.closedir(dir);
			errno = -err;
			return NULL;
		}
	}
	return dir;
}

/* fdopendir() needs nothing: its descriptor is known already. */
EXPORT int closedir(DIR *dir)
{
	init();
	fd_forget(dirfd(dir));
	return real.closedir(dir);
}

EXPORT struct dirent *readdir(DIR *dir)
{
	struct dirent *d;

	init();
	d = real.readdir(dir);
	if (d && is_dev_dir_fd(dirfd(dir)))
		dev_dir_entry(d);
	return d;
}

/* struct dirent64 is struct dirent where off_t is 64-bit. */
EXPORT struct dirent64 *readdir64(DIR *dir)
{
	struct dirent64 *d;

	init();
	d = real.readdir64(dir);
	if (d && is_dev_dir_fd(dirfd(dir)))
		dev_dir_entry((struct dirent *)d);
	return d;
}

struct order {
	int (*compare)(const struct dirent **, const struct dirent **);
};

static int by_order(const void *a, const void *b, void *order)
{
	const struct dirent *da = *(struct dirent *const *)a;
	const struct dirent *db = *(struct dirent *const *)b;

	return ((struct order *)order)->compare(&da, &db);
}

/*
 * scandir() of the directory, over our readdir(): glibc's own reads the
 * entries where we cannot give them the devices' type.
 */
static int dev_dir_scan(struct dirent ***list,
			int (*select)(const struct dirent *),
			struct order *order)
{
	struct dirent **v = NULL, **more, *d;
	size_t n = 0, cap = 0, size;
	DIR *dir = opendir(DEV_DIR);
	int saved;

	if (!dir)
		return -1;
	while ((d = readdir(dir))) {
		if (select && !select(d))
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 8;
			more = realloc(v, cap * sizeof(*v));
			if (!more)
				goto nomem;
			v = more;
		}
		size = offsetof(struct dirent, d_name) + strlen(d->d_name) + 1;
		v[n] = malloc(size);
		if (!v[n])
			goto nomem;
		memcpy(v[n++], d, size);
	}
	closedir(dir);
	if (order->compare)
		qsort_r(v, n, sizeof(*v), by_order, order);
	*list = v;
	return n;
nomem:
	saved = ENOMEM;
	closedir(dir);
	while (n)
		free(v[--n]);
	free(v);
	errno = saved;
	return -1;
}

EXPORT int scandir(const char *path, struct dirent ***list,
		   int (*select)(const struct dirent *),
		   int (*compare)(const struct dirent **,
				  const struct dirent **))
{
	struct order order = { compare };
	struct dev_name name;

	name_of(AT_FDCWD, path, &name);
	switch (name.kind) {
	case NAME_HOST:
		return real.scandir(name.host, list, select, compare);
	case NAME_DIR:
		return dev_dir_scan(list, select, &order);
	case NAME_UVERBS:
		return fail(-ENOTDIR);
	default:
		return fail(name_error(&name));
	}
}

/* Where struct dirent64 is struct dirent, scandir64 is scandir. */
typedef void (*any_fn)(void);

EXPORT int scandir64(const char *path, struct dirent64 ***list,
		     int (*select)(const struct dirent64 *),
		     int (*compare)(const struct dirent64 **,
				    const struct dirent64 **))
{
	_Static_assert(sizeof(struct dirent) == sizeof(struct dirent64),
		       "dirent64 is dirent");
	return scandir(path, (struct dirent ***)list,
		       (int (*)(const struct dirent *))(any_fn)select,
		       (int (*)(const struct dirent **,
				const struct dirent **))(any_fn)compare);
}

/*
 * glob() of the C library reads directories and stats names with its
 * own functions, where ours cannot stand: it is handed ours (unless the
 * caller gave it its own), for any pattern, which may name the devices
 * relative to the working directory.
 */
static void *glob_opendir(const char *path)
{
	return opendir(path);
}

static void glob_closedir(void *dir)
{
	closedir(dir);
}

static struct dirent *glob_readdir(void *dir)
{
	return readdir(dir);
}

static struct dirent64 *glob_readdir64(void *dir)
{
	return readdir64(dir);
}

static int glob_stat(const char *path, struct stat *st)
{
	return fstatat_common(AT_FDCWD, path, st, 0);
}

static int glob_lstat(const char *path, struct stat *st)
{
	return fstatat_common(AT_FDCWD, path, st, AT_SYMLINK_NOFOLLOW);
}

static int glob_stat64(const char *path, struct stat64 *st)
{
	return glob_stat(path, (struct stat *)st);
}

static int glob_lstat64(const char *path, struct stat64 *st)
{
	return glob_lstat(path, (struct stat *)st);
}

static bool glob_ours(int *flags)
{
	init();
	if (!active || (*flags & GLOB_ALTDIRFUNC))
		return false;
	*flags |= GLOB_ALTDIRFUNC;
	return true;
}

EXPORT int glob(const char *pattern, int flags,
		int (*errfunc)(const char *, int), glob_t *g)
{
	if (glob_ours(&flags)) {
		g->gl_opendir = glob_opendir;
		g->gl_readdir = glob_readdir;
		g->gl_closedir = glob_closedir;
		g->gl_stat = glob_stat;
		g->gl_lstat = glob_lstat;
	}
	return real.glob(pattern, flags, errfunc, g);
}

EXPORT int glob64(const char *pattern, int flags,
		  int (*errfunc)(const char *, int), glob64_t *g)
{
	if (glob_ours(&flags)) {
		g->gl_opendir = glob_opendir;
		g->gl_readdir = glob_readdir64;
		g->gl_closedir = glob_closedir;
		g->gl_stat = glob_stat64;
		g->gl_lstat = glob_lstat64;
	}
	return real.glob64(pattern, flags, errfunc, g);
}
