/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sim/host/vma.c reads a process's mappings two ways: the PROCMAP_QUERY
 * ioctl (Linux 6.11 on) or, where the kernel answers ENOTTY, the text of
 * /proc/PID/maps.  A machine runs only one of them, so this program runs
 * both on its own mappings and wants the same spans from each: vma.c is
 * built in here with its ioctl made to fail on demand.  Mappings of every
 * kind pinning looks at (private and shared, read-only and writable,
 * anonymous, a memfd, a file), ranges that start and end inside them.
 * Where the kernel has no ioctl both runs take the text, and agree.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../tap.h"

static bool text_only;		/* the ioctl answers ENOTTY, as before 6.11 */
static int answers;		/* ioctls the kernel answered */

static long vma_syscall(long nr, ...);
#define syscall vma_syscall
#include "../../sim/host/vma.c"
#undef syscall

/*
 * vma.c's system calls (openat, ioctl, close) take three arguments at
 * the most, integers or pointers, each a word.
 */
static long vma_syscall(long nr, ...)
{
	va_list ap;
	long a, b, c, ret;

	va_start(ap, nr);
	a = va_arg(ap, long);
	b = va_arg(ap, long);
	c = va_arg(ap, long);
	va_end(ap);

	if (nr == SYS_ioctl && text_only) {
		errno = ENOTTY;
		return -1;
	}
	ret = syscall(nr, a, b, c);
	answers += nr == SYS_ioctl && !ret;
	return ret;
}

#define SPANS	64
#define PAGE	4096

struct spans {
	int n;
	struct vma_span v[SPANS];
};

static bool collect(const struct vma_span *v, void *arg)
{
	struct spans *s = arg;

	if (s->n == SPANS)
		return false;
	s->v[s->n++] = *v;
	return true;
}

static void spans_of(uint64_t lo, uint64_t hi, bool text, struct spans *s)
{
	s->n = 0;
	text_only = text;
	vma_each(0, lo, hi, collect, s);
}

/* The first field the two lists differ in, or NULL. */
static const char *differ(const struct spans *a, const struct spans *b)
{
	if (a->n != b->n)
		return "the number of spans";
	for (int i = 0; i < a->n; i++) {
		const struct vma_span *x = &a->v[i], *y = &b->v[i];

		if (x->lo != y->lo || x->hi != y->hi)
			return "bounds";
		if (x->offset != y->offset || x->inode != y->inode ||
		    x->dev != y->dev)
			return "offset, inode or device";
		if (x->read != y->read || x->write != y->write ||
		    x->exec != y->exec || x->shared != y->shared)
			return "permissions";
		if (strcmp(x->name, y->name))
			return "name";
	}
	return NULL;
}

/*
 * One region of 12 pages, laid out page by page as the kinds of mapping
 * pinning meets: private read-write and read-only anonymous pages, a
 * shared memfd, a private mapping of this program's file, and a page
 * left unmapped between them.
 */
static uint8_t *lay_out(void)
{
	uint8_t *r = mmap(NULL, 12 * PAGE, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int memfd = memfd_create("vma-paths", 0);
	FILE *self = fopen("/proc/self/exe", "r");

	if (r == MAP_FAILED || memfd < 0 || !self || ftruncate(memfd, 2 * PAGE))
		bail("the region's mappings");
	if (mprotect(r + 2 * PAGE, PAGE, PROT_READ) ||
	    mmap(r + 4 * PAGE, 2 * PAGE, PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_FIXED, memfd, 0) == MAP_FAILED ||
	    mmap(r + 7 * PAGE, PAGE, PROT_READ, MAP_PRIVATE | MAP_FIXED,
		 fileno(self), 0) == MAP_FAILED ||
	    munmap(r + 9 * PAGE, PAGE))
		bail("the region's mappings");
	fclose(self);
	close(memfd);
	return r;
}

int main(void)
{
	static struct spans by_query, by_text;
	uint8_t *r = lay_out();
	uint64_t base = (uintptr_t)r;
	/*
	 * Whole, from and to page boundaries inside, from and to bytes
	 * inside, the unmapped page alone, one byte: the mappings each meets.
	 */
	static const struct { unsigned int lo, hi; int spans; } ranges[] = {
		{ 0, 12 * PAGE, 8 }, { 3 * PAGE, 8 * PAGE, 4 },
		{ 5 * PAGE + 1, 10 * PAGE - 1, 4 }, { 9 * PAGE, 10 * PAGE, 0 },
		{ 2 * PAGE, 2 * PAGE + 1, 1 },
	};
	const char *diff;

	spans_of(base, base + 12 * PAGE, true, &by_text);
	check(by_text.n == 8,
	      "the text path: the region as 8 mappings, the unmapped page left out (%d)",
	      by_text.n);
	for (size_t i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++) {
		uint64_t lo = base + ranges[i].lo, hi = base + ranges[i].hi;

		spans_of(lo, hi, false, &by_query);
		spans_of(lo, hi, true, &by_text);
		diff = differ(&by_query, &by_text);
		check(!diff && by_text.n == ranges[i].spans,
		      "bytes 0x%x to 0x%x of the region: %d mappings, the ioctl's %d the text's %d%s%s",
		      ranges[i].lo, ranges[i].hi, ranges[i].spans, by_query.n,
		      by_text.n, diff ? ", but for " : "", diff ? diff : "");
	}
	printf("# the kernel %s PROCMAP_QUERY\n", answers ? "answers" : "has no");
	return tap_finish();
}
