/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The mappings of a process over a range of addresses, as the kernel's
 * /proc/<pid>/maps shows them: what pinning a process's pages checks
 * (dma.c) and what a shared window must be (dma-share.c).
 *
 * Where the kernel has it (Linux 6.11 on), the PROCMAP_QUERY ioctl of the
 * maps file asks for one mapping at an address: a tree lookup.  Reading
 * the text instead costs the kernel a line for every mapping below the
 * range, and a process with thousands of QPs has thousands of mappings
 * (each ring its own), so making the N-th QP cost O(N) and the whole set
 * O(N^2): 4096 QPs took minutes.  Older kernels answer ENOTTY and get the
 * text, read only as far as the range.
 *
 * Built into the daemon and into the preload library (for its own
 * mappings, preload-mem.c): it makes its system calls itself, so that
 * the library's wrappers of open, ioctl and close stay out of it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "vma.h"

/* The kernel's ABI (include/uapi/linux/fs.h), absent from older headers. */
struct maps_query {
	uint64_t size;
	uint64_t query_flags;
	uint64_t query_addr;
	uint64_t vma_start;
	uint64_t vma_end;
	uint64_t vma_flags;
	uint64_t vma_page_size;
	uint64_t vma_offset;
	uint64_t inode;
	uint32_t dev_major;
	uint32_t dev_minor;
	uint32_t vma_name_size;
	uint32_t build_id_size;
	uint64_t vma_name_addr;
	uint64_t build_id_addr;
};
#define MAPS_QUERY		_IOWR('f', 17, struct maps_query)
#define MAPS_VMA_READ		0x01
#define MAPS_VMA_WRITE		0x02
#define MAPS_VMA_EXEC		0x04
#define MAPS_VMA_SHARED		0x08
#define MAPS_COVERING_OR_NEXT	0x10

/*
 * The mapping at or after @at in @v, with its name ("" for an anonymous
 * one, and for a name too long for v->name: a file's).  1 when the kernel
 * answered, 0 at the end, -ENOTTY without the ioctl.
 */
static int query_next(int fd, uint64_t at, struct vma_span *v)
{
	struct maps_query q = {
		.size = sizeof(q),
		.query_flags = MAPS_COVERING_OR_NEXT,
		.query_addr = at,
		.vma_name_size = sizeof(v->name),
		.vma_name_addr = (uintptr_t)v->name,
	};

	long err = syscall(SYS_ioctl, fd, MAPS_QUERY, &q);

	if (err && errno == ENAMETOOLONG) {
		q.vma_name_size = 0;
		err = syscall(SYS_ioctl, fd, MAPS_QUERY, &q);
	}
	if (err)	/* ENOENT: no mapping from @at on */
		return errno == ENOTTY || errno == EINVAL ? -ENOTTY : 0;
	if (!q.vma_name_size)
		v->name[0] = 0;
	v->lo = q.vma_start;
	v->hi = q.vma_end;
	v->offset = q.vma_offset;
	v->inode = q.inode;
	v->dev = makedev(q.dev_major, q.dev_minor);
	v->read = q.vma_flags & MAPS_VMA_READ;
	v->write = q.vma_flags & MAPS_VMA_WRITE;
	v->exec = q.vma_flags & MAPS_VMA_EXEC;
	v->shared = q.vma_flags & MAPS_VMA_SHARED;
	return 1;
}

static bool parse_line(char *line, struct vma_span *v)
{
	unsigned int maj, mnr;
	char perms[8];
	int name = 0;

	line[strcspn(line, "\n")] = 0;
	if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %x:%x %"
		   SCNu64 " %n", &v->lo, &v->hi, perms, &v->offset, &maj, &mnr,
		   &v->inode, &name) < 7 || !name)
		return false;
	snprintf(v->name, sizeof(v->name), "%s", line + name);
	v->dev = makedev(maj, mnr);
	v->read = perms[0] == 'r';
	v->write = perms[1] == 'w';
	v->exec = perms[2] == 'x';
	v->shared = perms[3] == 's';
	return true;
}

static void parse_each(int fd, uint64_t lo, uint64_t hi, vma_fn *each,
		       void *arg)
{
	FILE *f = fdopen(fd, "re");
	char line[sizeof(((struct vma_span *)0)->name) + 128];
	struct vma_span v;

	if (!f) {
		syscall(SYS_close, fd);
		return;
	}
	while (fgets(line, sizeof(line), f)) {
		if (!parse_line(line, &v) || v.hi <= lo)
			continue;
		if (v.lo >= hi || !each(&v, arg))
			break;
	}
	fclose(f);
}

/*
 * Each mapping of @pid (0: the calling process) that meets [lo, hi), in
 * address order, to @each until it returns false.  None when the maps
 * cannot be read.
 */
void vma_each(pid_t pid, uint64_t lo, uint64_t hi, vma_fn *each, void *arg)
{
	char path[64];
	static __thread struct vma_span v;	/* a name is 4 KiB */
	uint64_t at = lo;
	int fd, got = 0;

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	else
		snprintf(path, sizeof(path), "/proc/self/maps");
	fd = syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	while (at < hi && (got = query_next(fd, at, &v)) > 0) {
		if (v.lo >= hi || !each(&v, arg))
			break;
		at = v.hi;
	}
	if (at == lo && got == -ENOTTY) {
		parse_each(fd, lo, hi, each, arg);
		return;
	}
	syscall(SYS_close, fd);
}
