/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libmlx4sim: what a path names on the simulated host.  A name that may
 * concern /dev/infiniband is made absolute (from the working directory
 * or a directory descriptor) and spelled canonically, "." and ".." taken
 * lexically: no directory on the way there is a link on a host that has
 * one.  The directory holds the uverbs, umad and issm files sysfs lists
 * and nothing else, each a character device with sysfs's numbers, as
 * devtmpfs and rdma-core's udev rules make them: uverbs mode 0666, umad
 * and issm root's alone (0600); every other path is the real host's.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "preload.h"

#define UVERBS_PATH "/dev/infiniband/uverbs"

/*
 * The device numbers sysfs gives class/@class/@file (its "dev"), if the
 * simulated host has that device: 0, or -1.
 */
int class_dev_number(const char *class, const char *file, dev_t *rdev)
{
	char path[PATH_MAX], text[32];
	unsigned int major, minor;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/%s/class/%s/%s/dev", run_dir,
		 MLX4SIM_SYSFS_NAME, class, file);
	fd = real.open(path, O_RDONLY | O_CLOEXEC);
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
	return 0;
}

/* Which uverbsN @path names, if the simulated host has it. */
static int uverbs_index(const char *path, dev_t *rdev)
{
	char file[32];
	const char *p;
	char *end;
	long index;

	init();
	if (!active || !path || strncmp(path, UVERBS_PATH, strlen(UVERBS_PATH)))
		return -1;
	p = path + strlen(UVERBS_PATH);
	/* The kernel's spelling only: no sign, space or leading zero. */
	if (*p < '0' || *p > '9' || (*p == '0' && p[1]))
		return -1;
	index = strtol(p, &end, 10);
	if (*end || index > 255)
		return -1;
	snprintf(file, sizeof(file), "uverbs%ld", index);
	return class_dev_number("infiniband_verbs", file, rdev) ? -1 : index;
}

ino_t uverbs_ino(unsigned int minor)
{
	return 1000 + minor;
}

void device_stat(dev_t rdev, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_dev = makedev(0, 5);
	st->st_ino = uverbs_ino(minor(rdev));
	/* umad and issm are root's; uverbs and rdma_cm everyone's. */
	st->st_mode = S_IFCHR |
		      (major(rdev) == MLX4SIM_UVERBS_MAJOR &&
		       minor(rdev) < MLX4SIM_UVERBS_MINOR0 ? 0600 : 0666);
	st->st_nlink = 1;
	st->st_rdev = rdev;
	st->st_blksize = 4096;
}

/*
 * @path made absolute into @out, if it may concern /dev/infiniband: a
 * relative name needs the directory it is relative to, and only names
 * that mention infiniband (or start from the directory) are worth that.
 */
static bool absolute(int dirfd, const char *path, char *out, size_t size)
{
	char base[PATH_MAX], link[32];
	ssize_t n;

	if (!*path)
		return false;	/* ENOENT, as the host says */
	if (path[0] == '/')
		return strstr(path, "infiniband") &&
		       snprintf(out, size, "%s", path) < (int)size;
	if (is_dev_dir_fd(dirfd)) {
		strcpy(base, DEV_DIR);
	} else if (!strstr(path, "infiniband")) {
		return false;
	} else if (dirfd == AT_FDCWD) {
		if (!getcwd(base, sizeof(base)))
			return false;
	} else {
		snprintf(link, sizeof(link), "/proc/self/fd/%d", dirfd);
		n = real.readlinkat(AT_FDCWD, link, base, sizeof(base) - 1);
		if (n <= 0)
			return false;
		base[n] = 0;
	}
	return snprintf(out, size, "%s/%s", base, path) < (int)size;
}

/* Whether @out[0, @len) is a name inside /dev/infiniband. */
static bool in_dev_dir(const char *out, size_t len)
{
	return len > DEV_DIR_LEN + 1 && !memcmp(out, DEV_DIR "/", DEV_DIR_LEN + 1);
}

/*
 * Spell @path (absolute) canonically into @name->canon, component by
 * component: no directory on the way to /dev/infiniband is a link on a
 * host that has one, so ".." is lexical.  Stops at a name inside
 * /dev/infiniband that something follows (even "/" or "."): *followed.
 * *via_dir: the walk went through /dev/infiniband.
 */
static bool walk(const char *path, struct dev_name *name, bool *followed,
		 bool *via_dir)
{
	char *out = name->canon;
	size_t len = 0, n;

	*followed = *via_dir = false;
	for (;;) {
		if (*path && in_dev_dir(out, len)) {
			*followed = true;
			break;
		}
		while (*path == '/')
			path++;
		if (!*path)
			break;
		n = strcspn(path, "/");
		if (n == 2 && path[0] == '.' && path[1] == '.') {
			while (len > 0 && out[--len] != '/')
				;
		} else if (n != 1 || path[0] != '.') {
			if (len + 1 + n + 1 > sizeof(name->canon))
				return false;
			out[len++] = '/';
			memcpy(out + len, path, n);
			len += n;
		}
		path += n;
		if (len == DEV_DIR_LEN && !memcmp(out, DEV_DIR, len))
			*via_dir = true;
	}
	if (len == 0)
		out[len++] = '/';
	out[len] = 0;
	return true;
}

void name_of(int dirfd, const char *path, struct dev_name *name)
{
	char full[PATH_MAX];
	bool followed, via_dir;

	init();
	name->kind = NAME_HOST;
	name->host = path;
	if (!active || !path || !absolute(dirfd, path, full, sizeof(full)) ||
	    !walk(full, name, &followed, &via_dir))
		return;
	if (!strcmp(name->canon, DEV_DIR)) {
		name->kind = NAME_DIR;
	} else if (in_dev_dir(name->canon, strlen(name->canon))) {
		name->file = DEV_UVERBS;
		name->index = uverbs_index(name->canon, &name->rdev);
		if (name->index < 0) {
			name->file = DEV_UMAD;
			name->index = umad_name(name->canon, &name->rdev);
		}
		if (name->index < 0) {
			name->file = DEV_RDMA_CM;
			name->index = rdmacm_name(name->canon, &name->rdev);
		}
		if (name->index < 0)
			name->kind = NAME_ABSENT;
		else
			name->kind = followed ? NAME_NOTDIR : NAME_UVERBS;
	} else if (via_dir) {
		/* Out of /dev/infiniband again, by "..": the host's. */
		name->host = name->canon;
	}
}

/* 0 for the directory and the device files, else -errno. */
int name_error(const struct dev_name *name)
{
	switch (name->kind) {
	case NAME_NOTDIR:
		return -ENOTDIR;
	case NAME_ABSENT:
		return -ENOENT;
	default:
		return 0;
	}
}

void dir_stat(struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_dev = makedev(0, 5);
	st->st_ino = DEV_DIR_INO;
	st->st_mode = S_IFDIR | 0755;
	st->st_nlink = 2;
	st->st_size = 80;
	st->st_blksize = 4096;
}

/* 0, -errno, or 1 for a host path (@name->host). */
int name_stat(const struct dev_name *name, struct stat *st)
{
	switch (name->kind) {
	case NAME_UVERBS:
		device_stat(name->rdev, st);
		return 0;
	case NAME_DIR:
		dir_stat(st);
		return 0;
	case NAME_HOST:
		return 1;
	default:
		return name_error(name);
	}
}
