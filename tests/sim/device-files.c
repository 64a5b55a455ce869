/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * device-files: what a program sees of /dev/infiniband and the device's
 * sysfs through the file system calls other than open, on a host with two
 * ConnectX-3 adapters (run it on mlx4sim --hcas 2): every answer is the
 * one a real host gives.  The uverbs files are character devices 231:192+N,
 * mode 0666, with rdma_cm, the misc device 10:58, in a directory that
 * lists them; there is no uverbs2.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "../tap.h"
#include "../cases.h"

#define DIR_PATH	"/dev/infiniband"
#define DEV0		DIR_PATH "/uverbs0"
#define DEV1		DIR_PATH "/uverbs1"
#define NO_DEV		DIR_PATH "/uverbs2"

/* @failed, the outcome of a call, and the errno it left. */
#define FAILS(failed, err, what) do {					\
	bool failed_;							\
	int errno_;							\
									\
	errno = 0;							\
	failed_ = (failed);						\
	errno_ = errno;							\
	check(failed_ && errno_ == (err), "%s fails with %s (%s)", what,	\
	      strerrorname_np(err), failed_ ? strerror(errno_) : "it succeeds"); \
} while (0)

static bool is_uverbs(const struct stat *st, unsigned int n)
{
	return S_ISCHR(st->st_mode) && (st->st_mode & 07777) == 0666 &&
	       major(st->st_rdev) == 231 && minor(st->st_rdev) == 192 + n;
}

static void access_family(void)
{
	check(access(DEV0, F_OK) == 0, "access(uverbs0, F_OK)");
	check(access(DEV1, R_OK | W_OK) == 0, "access(uverbs1, R_OK | W_OK)");
	if (getuid() == 0)
		FAILS(access(DEV0, X_OK) == -1, EACCES,
		      "access(uverbs0, X_OK), no execute bit even for root,");
	FAILS(access(NO_DEV, F_OK) == -1, ENOENT, "access(uverbs2)");
	FAILS(access(DEV0 "/", F_OK) == -1, ENOTDIR, "access(uverbs0/)");
	check(access(DIR_PATH, R_OK | X_OK) == 0, "access(/dev/infiniband)");
	check(faccessat(AT_FDCWD, DEV0, R_OK | W_OK, 0) == 0,
	      "faccessat(uverbs0)");
	check(faccessat(AT_FDCWD, DEV0, R_OK | W_OK, AT_EACCESS) == 0,
	      "faccessat(uverbs0, AT_EACCESS)");
	FAILS(faccessat(AT_FDCWD, NO_DEV, F_OK, 0) == -1, ENOENT,
	      "faccessat(uverbs2)");
	check(eaccess(DEV0, R_OK | W_OK) == 0, "eaccess(uverbs0)");
	check(euidaccess(DEV1, R_OK | W_OK) == 0, "euidaccess(uverbs1)");
}

/*
 * The stat entry points of glibc before 2.33, as programs built then call
 * them: by their versioned names (x86-64's; elsewhere not checked).
 */
#ifdef __x86_64__
int old_xstat(int ver, const char *path, struct stat *st);
int old_lxstat(int ver, const char *path, struct stat *st);
int old_fxstatat(int ver, int dirfd, const char *path, struct stat *st,
		 int flags);
__asm__(".symver old_xstat, __xstat@GLIBC_2.2.5");
__asm__(".symver old_lxstat, __lxstat@GLIBC_2.2.5");
__asm__(".symver old_fxstatat, __fxstatat@GLIBC_2.4");

static void old_stat_abi(void)
{
	struct stat st;

	check(old_xstat(1, DEV0, &st) == 0 && is_uverbs(&st, 0),
	      "__xstat(uverbs0)");
	check(old_lxstat(1, DEV1, &st) == 0 && is_uverbs(&st, 1),
	      "__lxstat(uverbs1)");
	check(old_fxstatat(1, AT_FDCWD, DEV0, &st, 0) == 0 && is_uverbs(&st, 0),
	      "__fxstatat(uverbs0)");
}
#else
static void old_stat_abi(void)
{
}
#endif

static void stat_family(void)
{
	struct stat st, st2;
	struct stat64 st64;
	struct statx stx;

	check(stat(DEV0, &st) == 0 && is_uverbs(&st, 0), "stat(uverbs0)");
	check(lstat(DEV1, &st) == 0 && is_uverbs(&st, 1), "lstat(uverbs1)");
	check(stat64(DEV1, &st64) == 0 && S_ISCHR(st64.st_mode) &&
	      minor(st64.st_rdev) == 193, "stat64(uverbs1)");
	check(fstatat(AT_FDCWD, DEV0, &st, 0) == 0 && is_uverbs(&st, 0),
	      "fstatat(uverbs0)");
	check(fstatat(AT_FDCWD, DEV1, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	      is_uverbs(&st, 1), "fstatat(uverbs1, AT_SYMLINK_NOFOLLOW)");
	check(fstatat64(AT_FDCWD, DEV0, &st64, 0) == 0 &&
	      S_ISCHR(st64.st_mode), "fstatat64(uverbs0)");
	check(statx(AT_FDCWD, DEV1, 0, STATX_BASIC_STATS, &stx) == 0 &&
	      S_ISCHR(stx.stx_mode) && (stx.stx_mode & 07777) == 0666 &&
	      stx.stx_rdev_major == 231 && stx.stx_rdev_minor == 193 &&
	      (stx.stx_mask & STATX_TYPE), "statx(uverbs1)");
	FAILS(stat(NO_DEV, &st) == -1, ENOENT, "stat(uverbs2)");
	FAILS(statx(AT_FDCWD, NO_DEV, 0, STATX_BASIC_STATS, &stx) == -1,
	      ENOENT, "statx(uverbs2)");
	/* The kernel's names only: no sign, no leading zero. */
	FAILS(stat(DIR_PATH "/uverbs+0", &st) == -1, ENOENT, "stat(uverbs+0)");
	FAILS(stat(DIR_PATH "/uverbs00", &st) == -1, ENOENT, "stat(uverbs00)");
	check(stat(DIR_PATH "/rdma_cm", &st) == 0 && S_ISCHR(st.st_mode) &&
	      (st.st_mode & 07777) == 0666 && major(st.st_rdev) == 10 &&
	      minor(st.st_rdev) == 58, "stat(rdma_cm): the misc device 10:58");
	FAILS(stat(DIR_PATH "/rdma_cm/", &st) == -1, ENOTDIR, "stat(rdma_cm/)");
	FAILS(stat(DEV1 "/", &st) == -1, ENOTDIR, "stat(uverbs1/)");
	FAILS(stat(DEV1 "/..", &st) == -1, ENOTDIR, "stat(uverbs1/..)");
	check(stat(DIR_PATH, &st) == 0 && S_ISDIR(st.st_mode),
	      "stat(/dev/infiniband) is a directory");
	check(stat(DIR_PATH "/", &st) == 0 && S_ISDIR(st.st_mode),
	      "stat(/dev/infiniband/) is a directory");
	check(stat(DIR_PATH "/..", &st) == 0 && S_ISDIR(st.st_mode) &&
	      stat("/dev", &st2) == 0 && st.st_ino == st2.st_ino &&
	      st.st_dev == st2.st_dev, "stat(/dev/infiniband/..) is /dev");
	old_stat_abi();
}

/* The devices by the type readdir gives, as a real /dev lists them. */
static int char_devices(const struct dirent *d)
{
	return d->d_type == DT_CHR;
}

/* A device file of this host: two adapters of two ports. */
static bool expected_device(const char *name)
{
	static const char *const names[] = {
		"uverbs0", "uverbs1", "umad0", "umad1", "umad2", "umad3",
		"issm0", "issm1", "issm2", "issm3", "rdma_cm",
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(name, names[i]))
			return true;
	return false;
}

/* readdir's entries for the devices: their names, type and inodes. */
static void listing(DIR *dir, const char *how)
{
	struct dirent *d;
	struct stat st;
	int found = 0, other = 0, wrong = 0;

	while ((d = readdir(dir))) {
		if (!strcmp(d->d_name, ".") || !strcmp(d->d_name, ".."))
			continue;
		if (!expected_device(d->d_name)) {
			other++;
			continue;
		}
		found++;
		if (fstatat(dirfd(dir), d->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
		    d->d_type != DT_CHR || d->d_ino != st.st_ino ||
		    !S_ISCHR(st.st_mode))
			wrong++;
	}
	check(found == 11 && !other && !wrong,
	      "%s: rdma_cm, uverbs0-1, umad0-3 and issm0-3 only, character devices whose inodes stat gives (%d, %d others, %d wrong)",
	      how, found, other, wrong);
}

static void free_list(struct dirent **list, int n)
{
	for (int i = 0; i < n; i++)
		free(list[i]);
	if (n >= 0)
		free(list);
}

static void directory(void)
{
	struct dirent **list;
	struct stat st;
	DIR *dir;
	int n, fd;

	dir = opendir(DIR_PATH);
	check(dir != NULL, "opendir(/dev/infiniband)");
	if (dir) {
		listing(dir, "readdir");
		closedir(dir);
	}
	fd = open(DIR_PATH, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	check(fd >= 0 && !fstat(fd, &st) && S_ISDIR(st.st_mode),
	      "open(/dev/infiniband, O_DIRECTORY), fstat: a directory");
	if (fd >= 0) {
		int dev = openat(fd, "uverbs1", O_RDWR | O_CLOEXEC);

		check(dev >= 0 && !fstat(dev, &st) && S_ISCHR(st.st_mode) &&
		      minor(st.st_rdev) == 193, "openat(that, uverbs1)");
		if (dev >= 0)
			close(dev);
		dir = fdopendir(fd);
		check(dir != NULL, "fdopendir of it");
		if (dir) {
			listing(dir, "readdir after fdopendir");
			closedir(dir);
		} else {
			close(fd);
		}
	}
	FAILS(opendir(DEV0) == NULL, ENOTDIR, "opendir(uverbs0)");
	FAILS(opendir(NO_DEV) == NULL, ENOENT, "opendir(uverbs2)");
	n = scandir(DIR_PATH, &list, char_devices, alphasort);
	check(n == 11 && !strcmp(list[0]->d_name, "issm0") &&
	      !strcmp(list[4]->d_name, "rdma_cm") &&
	      !strcmp(list[5]->d_name, "umad0") &&
	      !strcmp(list[9]->d_name, "uverbs0") &&
	      !strcmp(list[10]->d_name, "uverbs1"),
	      "scandir, character devices: issm0-3, rdma_cm, umad0-3, uverbs0, uverbs1 (%d)", n);
	free_list(list, n);
	n = scandir64(DIR_PATH, (struct dirent64 ***)&list, NULL, NULL);
	check(n == 13, "scandir64 finds ., .. and the eleven devices (%d)", n);
	free_list(list, n);
}

/* Names relative to the working directory. */
static void relative(void)
{
	char cwd[PATH_MAX];
	struct stat st;

	if (!getcwd(cwd, sizeof(cwd)) || chdir("/dev")) {
		check(0, "chdir(/dev)");
		return;
	}
	check(stat("infiniband/uverbs1", &st) == 0 && is_uverbs(&st, 1),
	      "stat(infiniband/uverbs1) in /dev");
	check(access("./infiniband", X_OK) == 0, "access(./infiniband) in /dev");
	if (chdir(cwd))
		check(0, "chdir back");
}

/* ls -l asks for ACLs and security labels: devtmpfs has none here. */
static void xattrs(void)
{
	char buf[256];

	FAILS(lgetxattr(DEV0, "system.posix_acl_access", buf, sizeof(buf)) == -1,
	      ENODATA, "lgetxattr(uverbs0, system.posix_acl_access)");
	FAILS(getxattr(DIR_PATH, "security.selinux", buf, sizeof(buf)) == -1,
	      ENODATA, "getxattr(/dev/infiniband, security.selinux)");
	check(listxattr(DEV1, buf, sizeof(buf)) == 0, "listxattr(uverbs1) is empty");
	FAILS(llistxattr(NO_DEV, buf, sizeof(buf)) == -1, ENOENT,
	      "llistxattr(uverbs2)");
}

static void paths(void)
{
	char buf[PATH_MAX], *p;

	p = realpath(DEV0, buf);
	check(p && !strcmp(buf, DEV0), "realpath(uverbs0) is itself (%s)",
	      p ? buf : strerror(errno));
	p = realpath(DIR_PATH "/../infiniband/./uverbs1", NULL);
	check(p && !strcmp(p, DEV1), "realpath of a roundabout path to uverbs1 (%s)",
	      p ? p : strerror(errno));
	free(p);
	p = canonicalize_file_name(DEV1);
	check(p && !strcmp(p, DEV1), "canonicalize_file_name(uverbs1)");
	free(p);
	FAILS(!realpath(NO_DEV, buf), ENOENT, "realpath(uverbs2)");
	FAILS(!realpath(DEV0 "/.", buf), ENOTDIR, "realpath(uverbs0/.)");
	p = realpath(DIR_PATH "/../null", buf);
	check(p && !strcmp(buf, "/dev/null"), "realpath(/dev/infiniband/../null)");
	FAILS(readlink(DEV0, buf, sizeof(buf)) == -1, EINVAL,
	      "readlink(uverbs0), not a link,");
}

/* The device's sysfs: the class links lead to the adapter's PCI function. */
static void sysfs(void)
{
	const char *root = getenv("SYSFS_PATH");
	char path[PATH_MAX + 16], link[PATH_MAX], a[PATH_MAX], b[PATH_MAX];
	char vendor[32] = "";
	ssize_t n;
	FILE *f;

	if (!root) {
		check(0, "SYSFS_PATH is set");
		return;
	}
	snprintf(path, sizeof(path), "%s/class/infiniband_verbs/uverbs0/device",
		 root);
	n = readlink(path, link, sizeof(link) - 1);
	if (n >= 0)
		link[n] = 0;
	check(n > 0 && strstr(link, "0000:01:00.0"),
	      "readlink(infiniband_verbs/uverbs0/device) names a PCI function (%s)",
	      n > 0 ? link : strerror(errno));
	check(realpath(path, a) != NULL, "it resolves");
	snprintf(path, sizeof(path), "%s/class/infiniband/mlx4_0/device", root);
	check(realpath(path, b) && !strcmp(a, b),
	      "infiniband/mlx4_0/device resolves to the same directory");
	snprintf(path, sizeof(path), "%s/vendor", a);
	f = fopen(path, "r");
	if (f) {
		if (!fgets(vendor, sizeof(vendor), f))
			vendor[0] = 0;
		fclose(f);
	}
	check(!strcmp(vendor, "0x15b3\n"), "whose vendor is Mellanox");
	snprintf(path, sizeof(path), "%s/class/infiniband/mlx4_1/device", root);
	check(realpath(path, b) && strcmp(a, b),
	      "mlx4_1 is another PCI function");
}

/* glob() of the C library, which reads directories its own way. */
static void globbing(void)
{
	glob_t g;
	int ret;

	ret = glob(DIR_PATH "/uverbs[0-9]", GLOB_ERR, NULL, &g);
	check(ret == 0 && g.gl_pathc == 2 && !strcmp(g.gl_pathv[0], DEV0) &&
	      !strcmp(g.gl_pathv[1], DEV1),
	      "glob(/dev/infiniband/uverbs[0-9]) finds uverbs0, uverbs1 (%d, %zu)",
	      ret, ret ? 0 : g.gl_pathc);
	if (!ret)
		globfree(&g);
	ret = glob(DIR_PATH "/*", GLOB_MARK | GLOB_ONLYDIR, NULL, &g);
	check(ret == GLOB_NOMATCH, "no directory in /dev/infiniband (%d)", ret);
	if (!ret)
		globfree(&g);
	ret = glob(DIR_PATH, GLOB_MARK, NULL, &g);
	check(ret == 0 && g.gl_pathc == 1 && !strcmp(g.gl_pathv[0], DIR_PATH "/"),
	      "glob(/dev/infiniband, GLOB_MARK) marks the directory (%d)", ret);
	if (!ret)
		globfree(&g);
}

/*
 * Copies and bulk closes of a device's descriptor: a copy is the device,
 * and a number closed in bulk and handed out again is the new file's.
 */
static bool is_null(int fd)
{
	struct stat st;

	return !fstat(fd, &st) && S_ISCHR(st.st_mode) &&
	       major(st.st_rdev) == 1 && minor(st.st_rdev) == 3;
}

static void descriptors(void)
{
	struct stat st;
	int fd, copy, again;

	fd = open(DEV0, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		check(0, "open(uverbs0): %s", strerror(errno));
		return;
	}
	copy = fcntl(fd, F_DUPFD_CLOEXEC, 100);
	check(copy >= 100 && !fstat(copy, &st) && is_uverbs(&st, 0),
	      "fcntl(F_DUPFD_CLOEXEC) of uverbs0 is uverbs0");
	if (copy >= 0)
		close(copy);
	check(close_range(fd, fd, 0) == 0, "close_range(uverbs0)");
	again = open("/dev/null", O_RDONLY | O_CLOEXEC);
	check(again == fd && is_null(again),
	      "its number, handed out again, is the new file's (/dev/null)");
	if (again >= 0)
		close(again);

	fd = open(DEV1, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		check(0, "open(uverbs1): %s", strerror(errno));
		return;
	}
	closefrom(fd);
	again = open("/dev/null", O_RDONLY | O_CLOEXEC);
	check(again == fd && is_null(again),
	      "after closefrom, its number is the new file's (/dev/null)");
	if (again >= 0)
		close(again);
}

/* The cases, in the order a full run takes them; none leaves anything open. */
static const struct test_case cases[] = {
	{ "access_family", access_family,
	  "access, faccessat, eaccess, euidaccess on the device files" },
	{ "stat_family", stat_family,
	  "stat, lstat, fstatat, statx (and glibc's old entry points): 231:192+N" },
	{ "directory", directory,
	  "/dev/infiniband opened, read and scanned: the two devices" },
	{ "relative", relative, "names relative to the working directory" },
	{ "xattrs", xattrs, "no ACLs or security labels (as devtmpfs here)" },
	{ "paths", paths, "realpath, canonicalize_file_name, readlink: the kernel's answers" },
	{ "globbing", globbing, "glob() of the C library finds them" },
	{ "sysfs", sysfs,
	  "the class links lead to the adapter's PCI function" },
	{ "descriptors", descriptors,
	  "copies and bulk closes of a device's descriptor" },
};

/* Usage: device-files [--list | NAME...] */
int main(int argc, char **argv)
{
	int ret = cases_select(cases, CASES_N(cases), argc, argv, 1);

	if (ret >= 0)
		return ret;
	cases_run(cases, CASES_N(cases));
	return tap_finish();
}
