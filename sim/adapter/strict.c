/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Strict mode: a breach of the hardware protocol by a driver is what real
 * hardware would answer with undefined behaviour, a silent hang or a
 * catastrophic error.  Here each one is logged, naming the process and the
 * object, and counted; `mlx4sim run` fails when any occurred.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "adapter.h"

/* include/linux/sched.h: the task is in do_exit(). */
#define PF_EXITING	0x00000004

/*
 * Whether @pid is past the point of running its own code: gone, a
 * zombie, or exiting (PF_EXITING in /proc/PID/stat's flags).  A process
 * killed mid-run leaves queues half-used and memory that vanishes under
 * the device; that is an ending, not a driver breaking the protocol.
 */
static bool process_ending(pid_t pid)
{
	char path[64], line[1024];
	const char *after_comm;
	unsigned int flags;
	char state;
	FILE *f;
	bool ok;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return true;
	ok = fgets(line, sizeof(line), f) != NULL;
	fclose(f);
	/* The command name may hold anything: the fields follow its ')'. */
	after_comm = ok ? strrchr(line, ')') : NULL;
	if (!after_comm ||
	    sscanf(after_comm + 1, " %c %*d %*d %*d %*d %*d %u", &state,
		   &flags) != 2)
		return true;
	return state == 'Z' || state == 'X' || (flags & PF_EXITING);
}

void breach(struct sim_ctx *ctx, const char *fmt, ...)
{
	char tag[64];
	va_list ap;

	/* A look ahead (req.c's prefetch): the real look reports it. */
	if (sim.speculating || (ctx && process_ending(ctx->pid)))
		return;
	sim.breaches++;
	if (!sim.opt.strict)
		return;
	snprintf(tag, sizeof(tag), "strict: pid %d: ", ctx ? (int)ctx->pid : 0);
	va_start(ap, fmt);
	sim_vlog(tag, fmt, ap);
	va_end(ap);
}
