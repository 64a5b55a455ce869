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
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "host.h"

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
#define MAPS_VMA_SHARED		0x08
#define MAPS_COVERING_OR_NEXT	0x10

/* 1 when the kernel answered, 0 at the end, -ENOTTY without the ioctl. */
static int query_next(int fd, uint64_t at, struct vma_span *v)
{
	struct maps_query q = {
		.size = sizeof(q),
		.query_flags = MAPS_COVERING_OR_NEXT,
		.query_addr = at,
	};

	if (ioctl(fd, MAPS_QUERY, &q))
		return errno == ENOTTY || errno == EINVAL ? -ENOTTY : 0;
	*v = (struct vma_span){
		.lo = q.vma_start, .hi = q.vma_end, .offset = q.vma_offset,
		.inode = q.inode, .dev = makedev(q.dev_major, q.dev_minor),
		.read = q.vma_flags & MAPS_VMA_READ,
		.write = q.vma_flags & MAPS_VMA_WRITE,
		.shared = q.vma_flags & MAPS_VMA_SHARED,
	};
	return 1;
}

static bool parse_line(const char *line, struct vma_span *v)
{
	unsigned int maj, mnr;
	char perms[8];

	if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %x:%x %"
		   SCNu64, &v->lo, &v->hi, perms, &v->offset, &maj, &mnr,
		   &v->inode) != 7)
		return false;
	v->dev = makedev(maj, mnr);
	v->read = perms[0] == 'r';
	v->write = perms[1] == 'w';
	v->shared = perms[3] == 's';
	return true;
}

static void parse_each(int fd, uint64_t lo, uint64_t hi, vma_fn *each,
		       void *arg)
{
	FILE *f = fdopen(fd, "re");
	char line[512];
	struct vma_span v;

	if (!f) {
		close(fd);
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
 * Each mapping of @pid that meets [lo, hi), in address order, to @each
 * until it returns false.  None when the maps cannot be read.
 */
void vma_each(pid_t pid, uint64_t lo, uint64_t hi, vma_fn *each, void *arg)
{
	char path[64];
	struct vma_span v;
	uint64_t at = lo;
	int fd, got = 0;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
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
	close(fd);
}
