/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The daemon's user namespace, when it is not root: the one that owns
 * the network namespace of the Ethernet ports (fabric/ether.c) and the
 * mount namespace of /sys (sysview.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "host.h"

int proc_write_text(const char *path, const char *text)
{
	return write_text(path, text, 0);
}

/* One write of @text to @path, opened with @flags too (O_CREAT: 0644). */
int write_text(const char *path, const char *text, int flags)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC | flags, 0644);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, text, strlen(text));
	close(fd);
	return n == (ssize_t)strlen(text) ? 0 : -EIO;
}

/*
 * A user namespace for a daemon that is not root, where its own user and
 * group map to themselves, so files and other processes see it as
 * before; it owns the network and mount namespaces the daemon makes
 * (here and in sysview.c).  Made once.
 */
int sim_own_user_namespace(void)
{
	static int made = 1;	/* 1: not yet; then 0 or -errno */
	char map[64];

	if (made <= 0)
		return made;
	snprintf(map, sizeof(map), "%u %u 1\n", getuid(), getuid());
	if (unshare(CLONE_NEWUSER))
		return made = -errno;
	if (proc_write_text("/proc/self/setgroups", "deny\n") ||
	    proc_write_text("/proc/self/uid_map", map))
		return made = -EPERM;
	snprintf(map, sizeof(map), "%u %u 1\n", getgid(), getgid());
	return made = proc_write_text("/proc/self/gid_map", map);
}
