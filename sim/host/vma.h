/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * vma.c: a process's mappings, as /proc/<pid>/maps shows them; used by the
 * daemon (host.h) and by the preload library (preload-mem.c).
 */
#ifndef MLX4SIM_VMA_H
#define MLX4SIM_VMA_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct vma_span {
	uint64_t lo, hi, offset, inode;
	dev_t dev;
	bool read, write, exec, shared;
	char name[4096 + 16];	/* a path, [heap], [anon:...], or "" */
};
typedef bool vma_fn(const struct vma_span *v, void *arg);
void vma_each(pid_t pid, uint64_t lo, uint64_t hi, vma_fn *each, void *arg);

#endif
