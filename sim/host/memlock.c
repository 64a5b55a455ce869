/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * How much a process may pin.  The kernel's ib_umem_get() holds the pages
 * a process pins for the device (mm->pinned_vm) to its RLIMIT_MEMLOCK,
 * unless it has CAP_IPC_LOCK in the initial user namespace; with a limit
 * of 0 and no such capability it refuses at once (can_do_mlock).  A daemon
 * that is not root runs its processes in a user namespace of its own
 * (userns.c), where what they hold grants nothing outside: there no
 * process has the capability.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <sys/resource.h>
#include <unistd.h>

#include "host.h"

#define CAP_IPC_LOCK_BIT	14

static bool may_lock_any(pid_t pid)
{
	unsigned long long effective = 0;
	char path[64], line[256];
	FILE *f;

	if (geteuid() != 0)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %llx", &effective) == 1)
			break;
	fclose(f);
	return effective >> CAP_IPC_LOCK_BIT & 1;
}

/*
 * The bytes process @pid may keep pinned: its RLIMIT_MEMLOCK, or
 * UINT64_MAX when it holds CAP_IPC_LOCK, has no limit, or is gone (its
 * commands are then moot).
 */
uint64_t proc_lock_limit(pid_t pid)
{
	struct rlimit limit;

	if (may_lock_any(pid) ||
	    prlimit(pid, RLIMIT_MEMLOCK, NULL, &limit) ||
	    limit.rlim_cur == RLIM_INFINITY)
		return UINT64_MAX;
	return limit.rlim_cur;
}
