/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Pinned pages, shared.  The kernel pins the pages of what a process
 * registers (memory regions, the queues and doorbell records of CQs, QPs,
 * SRQs and WQs) for the device.  Here the preload library moves such
 * pages onto a memfd mapped at the same addresses in the process, and the
 * daemon maps that file once: a window.  DMA into a window is a copy with
 * plain loads and stores (dma.c); everywhere else it goes through
 * process_vm_readv/writev.
 *
 * A window belongs to one process, at the addresses the pages had when
 * they were pinned, and holds one file whole.  Objects hold the windows
 * under their pages (struct sim_pins); the last one to let go unmaps it.
 * Since the daemon keeps its own mapping, the device goes on reaching the
 * pinned pages whatever the process later does to its own (munmap,
 * mremap, MADV_DONTNEED), as a device reaches pinned pages on a real host.
 *
 * A descriptor comes from a client, so it is hostile until checked: it
 * must be a memfd (tmpfs, sealable) open for writing, of exactly the size
 * asked, sealed against shrinking and growing (the daemon seals it if the
 * client did not), not sealed against writes, and mapped shared at those
 * addresses, offset for offset, in the process that sent it.  Only then
 * does the daemon map it, and it never maps more than the file holds, so
 * no later act of the client (ftruncate, munmap, another mapping) can
 * make a load or store of the daemon's fault.  A client that lies about
 * its own memory fools only itself: a window holds nothing but the file
 * that client gave.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <linux/magic.h>

#include "host.h"

/*
 * Bounds, so that one process cannot take from the others what the
 * daemon has: its mappings (vm.max_map_count is 65530 by default) and its
 * address space.  Past them, pages stay where they are and the device
 * reaches them through process_vm_*.
 */
#define WINDOWS_MAX		32768
#define WINDOWS_MAX_PROCESS	8192
#define BYTES_MAX		(1ULL << 45)	/* of 128 TiB */
#define BYTES_MAX_PROCESS	(1ULL << 40)

/*
 * The windows a lookup found last: a message touches a few (the send
 * queue, the two regions, the receive queue, the CQ), in turn.
 */
#define RECENT	4

/* One process's windows, sorted by address, never overlapping. */
struct dma_space {
	pid_t pid;
	uint32_t n, cap;
	struct dma_window **win;
	struct dma_window *recent[RECENT];
	uint32_t next_recent;
	uint64_t bytes;
};

static struct {
	struct dma_space **spaces;
	uint32_t n, cap;
	struct dma_space *last;
	uint32_t windows;
	uint64_t bytes;
} shared;

static struct dma_space *space_of(pid_t pid)
{
	if (shared.last && shared.last->pid == pid)
		return shared.last;
	for (uint32_t i = 0; i < shared.n; i++)
		if (shared.spaces[i]->pid == pid)
			return shared.last = shared.spaces[i];
	return NULL;
}

static struct dma_space *space_new(pid_t pid)
{
	struct dma_space *s;

	if (shared.n == shared.cap) {
		uint32_t cap = shared.cap ? shared.cap * 2 : 8;
		struct dma_space **grown = realloc(shared.spaces,
						   cap * sizeof(*grown));

		if (!grown)
			return NULL;
		shared.spaces = grown;
		shared.cap = cap;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->pid = pid;
	shared.spaces[shared.n++] = s;
	return s;
}

static void space_free(struct dma_space *s)
{
	for (uint32_t i = 0; i < shared.n; i++) {
		if (shared.spaces[i] != s)
			continue;
		shared.spaces[i] = shared.spaces[--shared.n];
		break;
	}
	if (shared.last == s)
		shared.last = NULL;
	free(s->win);
	free(s);
}

/* The index of the last window that starts at or below @addr, or -1. */
static int window_below(const struct dma_space *s, uint64_t addr)
{
	int lo = 0, hi = (int)s->n - 1, found = -1;

	while (lo <= hi) {
		int mid = lo + (hi - lo) / 2;

		if (s->win[mid]->addr <= addr) {
			found = mid;
			lo = mid + 1;
		} else {
			hi = mid - 1;
		}
	}
	return found;
}

static bool window_holds(const struct dma_window *w, uint64_t addr)
{
	return w && addr - w->addr < w->len;	/* below it wraps */
}

/*
 * Where @addr of @pid is in a window: the daemon's address of it, with
 * *@run the bytes the window holds from there.  Otherwise NULL, with
 * *@run the bytes up to the next window (UINT64_MAX - @addr if none).
 */
uint8_t *dma_window_find(pid_t pid, uint64_t addr, uint64_t *run)
{
	struct dma_space *s = space_of(pid);
	struct dma_window *w = NULL;
	int i;

	*run = UINT64_MAX - addr;
	if (!s)
		return NULL;
	for (i = 0; i < RECENT; i++)
		if (window_holds(s->recent[i], addr)) {
			w = s->recent[i];
			break;
		}
	if (!w) {
		i = window_below(s, addr);
		w = i >= 0 ? s->win[i] : NULL;
		if (!window_holds(w, addr)) {
			if (i + 1 < (int)s->n)
				*run = s->win[i + 1]->addr - addr;
			return NULL;
		}
		s->recent[s->next_recent++ % RECENT] = w;
	}
	*run = w->len - (addr - w->addr);
	return w->base + (addr - w->addr);
}

/* Whether [@addr, @addr + @len) of @pid is in one window. */
bool dma_in_window(pid_t pid, uint64_t addr, uint64_t len)
{
	uint64_t run;

	return dma_window_find(pid, addr, &run) && run >= len;
}

/* Windows the daemon has mapped, for its stats. */
uint32_t dma_windows(void)
{
	return shared.windows;
}

static int pins_add(struct sim_pins *pins, struct dma_window *w)
{
	struct dma_window **grown = realloc(pins->win,
					    (pins->n + 1) * sizeof(*grown));

	if (!grown)
		return -ENOMEM;
	pins->win = grown;
	pins->win[pins->n++] = w;
	w->refs++;
	return 0;
}

static void window_unmap(struct dma_window *w)
{
	struct dma_space *s = w->space;
	int i = window_below(s, w->addr);

	memmove(&s->win[i], &s->win[i + 1], (s->n - i - 1) * sizeof(*s->win));
	s->n--;
	s->bytes -= w->len;
	for (int k = 0; k < RECENT; k++)
		if (s->recent[k] == w)
			s->recent[k] = NULL;
	shared.windows--;
	shared.bytes -= w->len;
	munmap(w->base, w->len);
	free(w);
	if (!s->n)
		space_free(s);
}

void dma_pins_release(struct sim_pins *pins)
{
	for (uint32_t i = 0; i < pins->n; i++)
		if (!--pins->win[i]->refs)
			window_unmap(pins->win[i]);
	free(pins->win);
	pins->win = NULL;
	pins->n = 0;
}

/*
 * Hold the windows of @pid over [@lo, @hi) in @pins, and return the gaps
 * between them, up to @max, in @gaps: the pages still to be shared.
 * Returns the count of gaps.
 */
int dma_pins_hold(pid_t pid, struct sim_pins *pins, uint64_t lo, uint64_t hi,
		  struct dma_range *gaps, int max)
{
	struct dma_space *s = space_of(pid);
	uint64_t at = lo;
	int n = 0, i;

	i = s ? window_below(s, lo) : -1;
	if (i < 0 || s->win[i]->addr + s->win[i]->len <= lo)
		i++;
	while (at < hi) {
		struct dma_window *w = s && i < (int)s->n ? s->win[i] : NULL;
		uint64_t gap_end = w && w->addr < hi ? w->addr : hi;

		if (gap_end > at && n < max)
			gaps[n++] = (struct dma_range){ at, gap_end - at };
		if (!w || w->addr >= hi)
			break;
		/* Without room to note it, the window is not held: no harm. */
		pins_add(pins, w);
		at = w->addr + w->len;
		i++;
	}
	return n;
}

struct share_walk {
	const struct stat *file;
	uint64_t addr;		/* the window's start: the file's offset 0 */
	uint64_t want;		/* the first address not yet seen mapped */
};

static bool shared_on(const struct vma_span *v, void *arg)
{
	struct share_walk *w = arg;

	if (v->lo > w->want || !v->shared || v->inode != w->file->st_ino ||
	    v->dev != w->file->st_dev ||
	    v->offset + (w->want - v->lo) != w->want - w->addr)
		return false;
	w->want = v->hi;
	return true;
}

/*
 * Whether /proc/<pid>/maps shows [@addr, @addr + @len) mapped shared from
 * the file @st, at offset 0 at @addr and on from there.
 */
static bool mapped_from(pid_t pid, const struct stat *st, uint64_t addr,
			uint64_t len)
{
	struct share_walk w = { .file = st, .addr = addr, .want = addr };

	vma_each(pid, addr, addr + len, shared_on, &w);
	return w.want >= addr + len;
}

/* The checks of a client's descriptor (see the top of this file). */
static int check_memfd(pid_t pid, int fd, uint64_t addr, uint64_t len)
{
	const int size_seals = F_SEAL_SHRINK | F_SEAL_GROW;
	struct statfs fs;
	struct stat st;
	int seals, flags;

	if (fstatfs(fd, &fs) || fs.f_type != TMPFS_MAGIC)
		return -EINVAL;		/* not shmem: hugetlbfs, a socket ... */
	flags = fcntl(fd, F_GETFL);
	if (flags < 0 || (flags & O_ACCMODE) != O_RDWR)
		return -EACCES;
	seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0)
		return -EINVAL;
	if ((seals & size_seals) != size_seals &&
	    fcntl(fd, F_ADD_SEALS, size_seals))
		return -EPERM;		/* sealing was not allowed */
	seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0 || (seals & size_seals) != size_seals ||
	    (seals & (F_SEAL_WRITE | F_SEAL_FUTURE_WRITE)))
		return -EPERM;
	/* The size, now that it can no longer change. */
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_size != len)
		return -EINVAL;
	if (!mapped_from(pid, &st, addr, len))
		return -EINVAL;
	return 0;
}

static int space_insert(struct dma_space *s, struct dma_window *w)
{
	int i = window_below(s, w->addr) + 1;

	if (s->n == s->cap) {
		uint32_t cap = s->cap ? s->cap * 2 : 16;
		struct dma_window **grown = realloc(s->win,
						    cap * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		s->win = grown;
		s->cap = cap;
	}
	memmove(&s->win[i + 1], &s->win[i], (s->n - i) * sizeof(*s->win));
	s->win[i] = w;
	s->n++;
	s->bytes += w->len;
	shared.windows++;
	shared.bytes += w->len;
	w->space = s;
	return 0;
}

/* Whether [addr, addr + len) meets no window of @s. */
static bool space_free_at(const struct dma_space *s, uint64_t addr,
			  uint64_t len)
{
	int i = window_below(s, addr + len - 1);

	return i < 0 || s->win[i]->addr + s->win[i]->len <= addr;
}

static int within_bounds(const struct dma_space *s, uint64_t len)
{
	if (shared.windows >= WINDOWS_MAX || shared.bytes + len > BYTES_MAX)
		return -ENOSPC;
	if (s && (s->n >= WINDOWS_MAX_PROCESS ||
		  s->bytes + len > BYTES_MAX_PROCESS))
		return -ENOSPC;
	return 0;
}

/*
 * The memfd @fd, which @pid says now holds its pages [@addr, @addr +
 * @len), checked, mapped and held by @pins.  0 or -errno; the descriptor
 * stays the caller's.
 */
int dma_window_add(pid_t pid, int fd, uint64_t addr, uint64_t len,
		   struct sim_pins *pins)
{
	struct dma_space *s = space_of(pid);
	struct dma_window *w;
	int err;

	if (!len || (addr | len) & (SIM_PAGE_SIZE - 1) || addr + len < addr)
		return -EINVAL;
	if (s && !space_free_at(s, addr, len))
		return -EEXIST;
	err = within_bounds(s, len);
	if (!err)
		err = check_memfd(pid, fd, addr, len);
	if (err)
		return err;
	w = calloc(1, sizeof(*w));
	if (!w || (!s && !(s = space_new(pid)))) {
		free(w);
		return -ENOMEM;
	}
	w->addr = addr;
	w->len = len;
	w->base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (w->base == MAP_FAILED) {
		err = -errno;
		goto fail;
	}
	/* A program the daemon starts (ip) gets none of it. */
	madvise(w->base, len, MADV_DONTFORK);
	err = space_insert(s, w);
	if (err) {
		munmap(w->base, len);
		goto fail;
	}
	if (pins_add(pins, w)) {
		window_unmap(w);
		return -ENOMEM;
	}
	return 0;
fail:
	free(w);
	if (!s->n)
		space_free(s);
	return err;
}
