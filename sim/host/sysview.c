/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * /sys as a process on the simulated host sees it.  Programs read sysfs
 * by its literal path too (UCX resolves /sys/class/infiniband/<dev>/device
 * to find the PCI function; DPDK scans /sys/bus/pci/devices), whatever
 * SYSFS_PATH says.  So the daemon makes a mount namespace of its own in
 * which /sys is the host's with the simulated tree laid over it: a tmpfs
 * at /sys, and in it each entry of the host's /sys and of the tree bound
 * to where it belongs; a directory both have (class, bus/pci/devices,
 * devices/pci0000:00) is made the same way one level down, and where
 * both have a file the tree's wins.  Binds are live: the files the
 * daemon rewrites (a port's state) read new at once.  Processes join the
 * namespace as they load (preload.c); a host with no mount namespaces
 * for the daemon (not root and no user namespace, or a chroot) keeps
 * SYSFS_PATH alone.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host.h"

/* Make @dst, of @src's kind, where @src is then bound (a link is copied). */
static int place(const char *dst, const char *src)
{
	char text[PATH_MAX];
	struct stat st;
	ssize_t n;
	int fd;

	if (lstat(src, &st))
		return -errno;
	if (S_ISLNK(st.st_mode)) {
		n = readlink(src, text, sizeof(text) - 1);
		if (n < 0)
			return -errno;
		text[n] = 0;
		return symlink(text, dst) ? -errno : 0;
	}
	if (S_ISDIR(st.st_mode)) {
		if (mkdir(dst, st.st_mode & 07777))
			return -errno;
	} else {
		fd = open(dst, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0444);
		if (fd < 0)
			return -errno;
		close(fd);
	}
	return mount(src, dst, NULL, MS_BIND | MS_REC, NULL) ? -errno : 0;
}

static bool is_dir(const char *path)
{
	struct stat st;

	return !lstat(path, &st) && S_ISDIR(st.st_mode);
}

static bool exists(const char *path)
{
	struct stat st;

	return !lstat(path, &st);
}

static int join_path(char *buf, const char *dir, const char *name)
{
	int n = snprintf(buf, PATH_MAX, "%s/%s", dir, name);

	return n < 0 || n >= PATH_MAX ? -ENAMETOOLONG : 0;
}

/*
 * Fill the empty directory @dst with @host's entries and @tree's: what
 * only one has is bound, what both have as directories is merged.
 */
static int merge(const char *dst, const char *host, const char *tree)
{
	char d[PATH_MAX], h[PATH_MAX], t[PATH_MAX];
	struct dirent *e;
	int err = 0;
	DIR *dir;

	for (int pass = 0; pass < 2 && !err; pass++) {
		dir = opendir(pass ? tree : host);
		if (!dir)
			return -errno;
		while (!err && (e = readdir(dir))) {
			if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
				continue;
			err = join_path(d, dst, e->d_name) ?:
			      join_path(h, host, e->d_name) ?:
			      join_path(t, tree, e->d_name);
			if (err)
				break;
			if (!pass && is_dir(h) && is_dir(t)) {
				err = mkdir(d, 0755) ? -errno : merge(d, h, t);
			} else if (!pass && !exists(t)) {
				err = place(d, h);
			} else if (pass && !exists(d)) {
				err = place(d, t);	/* the tree's wins */
			}
		}
		closedir(dir);
	}
	return err;
}

/*
 * Whether this process is chrooted into a directory: its root is then no
 * mount's root, and joining a mount namespace, which takes a process to
 * the namespace's root, would undo the chroot.
 */
static bool chrooted(void)
{
	struct statx stx = {};	/* (MSan does not see statx() write it) */

	if (statx(AT_FDCWD, "/", 0, 0, &stx) ||
	    !(stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT))
		return true;	/* cannot tell: as if */
	return !(stx.stx_attributes & STATX_ATTR_MOUNT_ROOT);
}

static int lay_over(const char *tree, const char *staging)
{
	int err;

	/* Nothing done here reaches the host's namespace. */
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		return -errno;
	if (mkdir(staging, 0700) ||
	    mount("/sys", staging, NULL, MS_BIND | MS_REC, NULL))
		return -errno;
	if (mount("mlx4sim-sys", "/sys", "tmpfs", MS_NOSUID | MS_NODEV |
		  MS_NOEXEC, "mode=0755"))
		err = -errno;
	else
		err = merge("/sys", staging, tree);
	umount2(staging, MNT_DETACH);
	rmdir(staging);
	return err;
}

/*
 * Lay @tree over /sys in a mount namespace of the daemon's; 0 when
 * processes can join it.  @staging: an unused path for the host's /sys
 * while the view is built.
 */
int sysview_create(const char *tree, const char *staging)
{
	int err;

	if (chrooted())
		return -EPERM;
	if (geteuid() != 0 && sim_own_user_namespace())
		return -EPERM;
	if (unshare(CLONE_NEWNS))
		return -errno;
	err = lay_over(tree, staging);
	if (err)
		sim_log("sysfs: cannot lay the simulated tree over /sys: %s",
			strerror(-err));
	return err;
}
