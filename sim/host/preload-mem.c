/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libmlx4sim: pinned pages, shared with the daemon.
 *
 * When a command pins pages (ibv_reg_mr; the queues and doorbell records
 * of ibv_create_cq, _qp, _srq, _wq), the daemon's reply asks for them
 * (protocol.h, MLX4SIM_OP_SHARE).  The library moves each range onto a
 * memfd of its own (MLX4SIM_SHARE_NAME), mapped shared at the same
 * addresses with the same protection, and hands the file to the daemon,
 * which maps it once: the device then reads and writes those pages with
 * plain loads and stores.  Only private anonymous memory moves (the heap,
 * malloc's and mmap's pages), and pages this library moved before; a
 * range with anything else in it (a file, hugetlb, shared memory, the
 * main stack, pages with no read access) stays where it is, and the
 * device reaches it through process_vm_* (sim/README, "Pinned memory").
 *
 * On a real host the pages stay the device's whatever the process does
 * to its mappings; here the daemon's own mapping keeps the file, so
 * munmap and a mapping over the pages leave the device writing pages the
 * process no longer sees, and mremap moves the pages with the mapping,
 * as there.  What would differ from private memory is made to match it:
 * madvise (MADV_DONTNEED gives the process zeroed pages, and the device
 * keeps the old ones; MADV_FREE and MADV_REMOVE act as on private
 * memory; MADV_DONTFORK and MADV_WIPEONFORK are kept across the move),
 * mremap (growing gives zeroed pages, not a file's end; a range of several
 * mappings moves as the one mapping it was) and fork (the child gets a
 * copy, see after_fork_child).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "preload.h"
#include "vma.h"

#define PAGE		4096ULL
#define MIN(a, b)	((a) < (b) ? (a) : (b))
#define MAX(a, b)	((a) > (b) ? (a) : (b))
#define MAX_VMAS	64	/* mappings one move may span */

/* ------------------------------------------------------------------ */
/* Sets of address ranges                                              */
/* ------------------------------------------------------------------ */

struct span {
	uint64_t lo, hi;
};

/* Sorted, disjoint, not adjacent. */
struct span_set {
	struct span *s;
	size_t n, cap;
};

/*
 * What this library moved (a quick test: a range that meets none of it
 * holds none of our pages), and what the program marked MADV_DONTFORK or
 * MADV_WIPEONFORK, to mark again after a move.
 */
static struct span_set moved, dontfork, wipeonfork;
static pthread_mutex_t mem_lock = PTHREAD_MUTEX_INITIALIZER;

static bool set_meets(const struct span_set *set, uint64_t lo, uint64_t hi)
{
	for (size_t i = 0; i < set->n && set->s[i].lo < hi; i++)
		if (set->s[i].hi > lo)
			return true;
	return false;
}

static bool set_room(struct span_set *set, size_t more)
{
	struct span *grown;
	size_t cap;

	if (set->n + more <= set->cap)
		return true;
	cap = set->cap ? set->cap * 2 : 16;
	while (cap < set->n + more)
		cap *= 2;
	grown = realloc(set->s, cap * sizeof(*grown));
	if (!grown)
		return false;
	set->s = grown;
	set->cap = cap;
	return true;
}

static void set_remove(struct span_set *set, uint64_t lo, uint64_t hi)
{
	size_t i = 0;

	while (i < set->n) {
		struct span *s = &set->s[i];

		if (s->hi <= lo || s->lo >= hi) {
			i++;
		} else if (s->lo < lo && s->hi > hi) {
			/* Split in two, when there is room for a second. */
			if (!set_room(set, 1)) {
				set->s[i].hi = lo;
				return;
			}
			s = &set->s[i];
			memmove(s + 2, s + 1, (set->n - i - 1) * sizeof(*s));
			s[1] = (struct span){ hi, s->hi };
			s->hi = lo;
			set->n++;
			return;
		} else if (s->lo < lo) {
			s->hi = lo;
			i++;
		} else if (s->hi > hi) {
			s->lo = hi;
			i++;
		} else {
			memmove(s, s + 1, (set->n - i - 1) * sizeof(*s));
			set->n--;
		}
	}
}

static void set_add(struct span_set *set, uint64_t lo, uint64_t hi)
{
	size_t i = 0;

	set_remove(set, lo, hi);
	if (!set_room(set, 1))
		return;
	while (i < set->n && set->s[i].lo < lo)
		i++;
	memmove(&set->s[i + 1], &set->s[i], (set->n - i) * sizeof(*set->s));
	set->s[i] = (struct span){ lo, hi };
	set->n++;
	/* Join the neighbours it touches. */
	if (i + 1 < set->n && set->s[i + 1].lo == hi) {
		set->s[i].hi = set->s[i + 1].hi;
		memmove(&set->s[i + 1], &set->s[i + 2],
			(set->n - i - 2) * sizeof(*set->s));
		set->n--;
	}
	if (i > 0 && set->s[i - 1].hi == lo) {
		set->s[i - 1].hi = set->s[i].hi;
		memmove(&set->s[i], &set->s[i + 1],
			(set->n - i - 1) * sizeof(*set->s));
		set->n--;
	}
}

/* What of [lo, hi) is in @set moves to @to on. */
static void set_shift(struct span_set *set, uint64_t lo, uint64_t hi,
		      uint64_t to)
{
	struct span part[MAX_VMAS];
	int n = 0;

	for (size_t i = 0; i < set->n && n < MAX_VMAS; i++)
		if (set->s[i].lo < hi && set->s[i].hi > lo)
			part[n++] = (struct span){ MAX(set->s[i].lo, lo),
						   MIN(set->s[i].hi, hi) };
	set_remove(set, lo, hi);
	for (int i = 0; i < n; i++)
		set_add(set, part[i].lo - lo + to, part[i].hi - lo + to);
}

static void forget_locked(uint64_t lo, uint64_t hi)
{
	set_remove(&moved, lo, hi);
	set_remove(&dontfork, lo, hi);
	set_remove(&wipeonfork, lo, hi);
}

/* Pages unmapped or mapped over: whatever was ours there is gone. */
void pinned_forget(uint64_t addr, uint64_t len)
{
	if (!active || !len)
		return;
	pthread_mutex_lock(&mem_lock);
	forget_locked(addr & ~(PAGE - 1), addr + len);
	pthread_mutex_unlock(&mem_lock);
}

/* ------------------------------------------------------------------ */
/* The process's mappings                                              */
/* ------------------------------------------------------------------ */

enum vma_kind { VMA_PRIVATE_ANON, VMA_OURS, VMA_OTHER };

struct vma {
	uint64_t lo, hi;
	int prot;
	enum vma_kind kind;
};

static enum vma_kind kind_of(const struct vma_span *v)
{
	if (v->shared)
		return strcmp(v->name, "/memfd:" MLX4SIM_SHARE_NAME " (deleted)") ?
		       VMA_OTHER : VMA_OURS;
	/* The heap, malloc's and mmap's pages, named or not: not the stack. */
	if (!v->name[0] || !strcmp(v->name, "[heap]") ||
	    !strncmp(v->name, "[anon:", 6))
		return VMA_PRIVATE_ANON;
	return VMA_OTHER;
}

struct vmas_walk {
	uint64_t lo, hi, want;
	bool all;		/* every mapping, holes or not */
	struct vma *out;
	int n, max;
};

static bool vma_note(const struct vma_span *s, void *arg)
{
	struct vmas_walk *w = arg;

	if ((!w->all && s->lo > w->want) || w->n == w->max) {
		w->n = -1;
		return false;
	}
	w->out[w->n++] = (struct vma){
		.lo = MAX(s->lo, w->lo),
		.hi = MIN(s->hi, w->hi),
		.prot = (s->read ? PROT_READ : 0) |
			(s->write ? PROT_WRITE : 0) |
			(s->exec ? PROT_EXEC : 0),
		.kind = kind_of(s),
	};
	w->want = s->hi;
	return true;
}

/*
 * The mappings over [lo, hi), clipped to it, in @out.  Returns their
 * count, or -1 when the range has a hole or more than @max of them.
 * With @lo == 0 and @hi == UINT64_MAX, every mapping (no hole test).
 */
static int vmas_of(uint64_t lo, uint64_t hi, struct vma *out, int max)
{
	struct vmas_walk w = {
		.lo = lo, .hi = hi, .want = lo, .out = out, .max = max,
		.all = !lo && hi == UINT64_MAX,
	};

	vma_each(0, lo, hi, vma_note, &w);
	return w.n >= 0 && (w.all || w.want >= hi) ? w.n : -1;
}

/* ------------------------------------------------------------------ */
/* Moving pages onto a memfd                                           */
/* ------------------------------------------------------------------ */

static void after_fork_prepare(void)
{
	pthread_mutex_lock(&mem_lock);
}

static void after_fork_parent(void)
{
	pthread_mutex_unlock(&mem_lock);
}

static void after_fork_child(void);

static void watch_forks(void)
{
	pthread_atfork(after_fork_prepare, after_fork_parent,
		       after_fork_child);
}

/* The program's marks on the pages, as they were before the move. */
static void mark_again(uint64_t lo, uint64_t hi)
{
	for (size_t i = 0; i < dontfork.n; i++)
		if (dontfork.s[i].lo < hi && dontfork.s[i].hi > lo)
			real.madvise((void *)(uintptr_t)MAX(dontfork.s[i].lo, lo),
				     MIN(dontfork.s[i].hi, hi) -
				     MAX(dontfork.s[i].lo, lo), MADV_DONTFORK);
}

/* All of [@buf, @buf + @len) written to @fd at @off, or -1. */
static int write_all(int fd, const uint8_t *buf, size_t len, off_t off)
{
	while (len) {
		ssize_t n = pwrite(fd, buf, len, off);

		if (n <= 0)
			return -1;
		buf += n;
		len -= n;
		off += n;
	}
	return 0;
}

/*
 * Copy the chunk [@at, @at + @len) into the file at @off, then map the
 * file over it: a chunk at a time, so that the old pages go as the new
 * ones come, and a move costs a chunk of memory more, not its size.
 */
static int move_chunk(int fd, uint8_t *at, size_t len, off_t off, int prot)
{
	if (write_all(fd, at, len, off))
		return -1;
	if (real.mmap(at, len, prot, MAP_SHARED | MAP_FIXED, fd, off) != MAP_FAILED)
		return 0;
	/* A failed MAP_FIXED may leave nothing: private pages again. */
	if (real.mmap(at, len, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != MAP_FAILED &&
	    pread(fd, at, len, off) == (ssize_t)len)
		mprotect(at, len, prot);
	return -1;
}

#define MOVE_CHUNK	(16u << 20)

static int move_locked(uint64_t lo, uint64_t len)
{
	static pthread_once_t forks_watched = PTHREAD_ONCE_INIT;
	struct vma v[MAX_VMAS];
	int n, fd, err = 0;

	n = vmas_of(lo, lo + len, v, MAX_VMAS);
	if (n <= 0)
		return -1;
	for (int i = 0; i < n; i++)
		if (v[i].kind == VMA_OTHER || !(v[i].prot & PROT_READ))
			return -1;
	fd = memfd_create(MLX4SIM_SHARE_NAME, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -1;
	if (ftruncate(fd, len) ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL))
		goto fail;
	pthread_once(&forks_watched, watch_forks);
	for (int i = 0; i < n && err >= 0; i++)
		for (uint64_t at = v[i].lo; at < v[i].hi && err >= 0;
		     at += MOVE_CHUNK)
			err = move_chunk(fd, (uint8_t *)(uintptr_t)at,
					 MIN(v[i].hi - at, MOVE_CHUNK), at - lo,
					 v[i].prot);
	/* What moved before a failure is ours too, unshared. */
	mark_again(lo, lo + len);
	set_add(&moved, lo, lo + len);
	if (!err)
		return fd;
fail:
	real.close(fd);
	return -1;
}

/*
 * Move the pages [@addr, @addr + @len) onto a memfd of their own, mapped
 * where they were: its descriptor, or -1 when they cannot move (the
 * device then reaches them through process_vm_*).  A store another thread
 * makes to these pages while they move is lost: the daemon asks only for
 * the pages of a new queue or wholly inside a registered region, which
 * no other thread should be writing then.
 */
int pinned_move(uint64_t addr, uint64_t len)
{
	int fd;

	if (!len || (addr | len) & (PAGE - 1) || addr + len < addr)
		return -1;
	pthread_mutex_lock(&mem_lock);
	fd = move_locked(addr, len);
	pthread_mutex_unlock(&mem_lock);
	return fd;
}

/* ------------------------------------------------------------------ */
/* fork: the child's copy                                              */
/* ------------------------------------------------------------------ */

/*
 * Give the child private pages where it inherited ours, with their
 * contents, or zeroed under MADV_WIPEONFORK.  Linux (5.13 on) copies the
 * pages a device has pinned into the child at fork, so that the parent
 * keeps them and the child never shares them with the device; under
 * MADV_DONTFORK (ibv_fork_init) the child has no page there at all,
 * which the kernel did already.  The pages the device writes between the
 * fork and this copy are the one difference: none of them are ours.
 */
static void make_private(const struct vma *v)
{
	size_t len = v->hi - v->lo;
	void *at = (void *)(uintptr_t)v->lo;
	uint8_t *mine;

	mine = real.mmap(NULL, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mine == MAP_FAILED)
		return;
	if (!(v->prot & PROT_READ))
		mprotect(at, len, PROT_READ);
	memcpy(mine, at, len);
	for (size_t i = 0; i < wipeonfork.n; i++) {
		uint64_t lo = MAX(wipeonfork.s[i].lo, v->lo);
		uint64_t hi = MIN(wipeonfork.s[i].hi, v->hi);

		if (lo < hi)
			memset(mine + (lo - v->lo), 0, hi - lo);
	}
	mprotect(mine, len, v->prot);
	if (real.mremap(mine, len, len, MREMAP_MAYMOVE | MREMAP_FIXED,
			at) == MAP_FAILED)
		real.munmap(mine, len);
}

static void after_fork_child(void)
{
	struct vma *v;
	int n;

	pthread_mutex_init(&mem_lock, NULL);
	if (!moved.n)
		return;
	v = malloc(sizeof(*v) * 65536);
	n = v ? vmas_of(0, UINT64_MAX, v, 65536) : -1;
	for (int i = 0; i < n; i++)
		if (v[i].kind == VMA_OURS)
			make_private(&v[i]);
	free(v);
	moved.n = 0;
}

/* ------------------------------------------------------------------ */
/* madvise, munmap, mremap                                             */
/* ------------------------------------------------------------------ */

static uint64_t page_end(uint64_t addr, size_t len)
{
	return (addr + len + PAGE - 1) & ~(PAGE - 1);
}

/* The marks fork reads: kept, to be marked again after a move. */
static int fork_advice(void *addr, size_t len, int advice)
{
	uint64_t lo = (uintptr_t)addr, hi = page_end(lo, len);
	int ret = 0;

	pthread_mutex_lock(&mem_lock);
	/* Our pages are shared: the child's copy is wiped at the fork. */
	if (advice != MADV_WIPEONFORK || !set_meets(&moved, lo, hi))
		ret = real.madvise(addr, len, advice);
	if (!ret) {
		if (advice == MADV_DONTFORK)
			set_add(&dontfork, lo, hi);
		else if (advice == MADV_DOFORK)
			set_remove(&dontfork, lo, hi);
		else if (advice == MADV_WIPEONFORK)
			set_add(&wipeonfork, lo, hi);
		else
			set_remove(&wipeonfork, lo, hi);
	}
	pthread_mutex_unlock(&mem_lock);
	return ret;
}

/*
 * Advice that discards pages, on a range with pages of ours: as on
 * private memory.  MADV_DONTNEED leaves the process zeroed pages (the
 * device keeps the pinned ones, as on a host), MADV_FREE keeps ours as
 * they are (which it may), MADV_REMOVE is refused.
 */
static int discard_locked(uint64_t lo, uint64_t hi, int advice)
{
	struct vma v[MAX_VMAS];
	int n = vmas_of(lo, hi, v, MAX_VMAS);

	if (n < 0)
		return real.madvise((void *)(uintptr_t)lo, hi - lo, advice);
	for (int i = 0; i < n; i++) {
		void *at = (void *)(uintptr_t)v[i].lo;
		size_t len = v[i].hi - v[i].lo;

		if (v[i].kind != VMA_OURS) {
			if (advice != MADV_REMOVE && real.madvise(at, len, advice))
				return -1;
			continue;
		}
		if (advice == MADV_REMOVE)
			return fail(-EINVAL);
		if (advice == MADV_FREE)
			continue;
		if (real.mmap(at, len, v[i].prot,
			      MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
			      0) == MAP_FAILED)
			return -1;
		set_remove(&moved, v[i].lo, v[i].hi);
	}
	return advice == MADV_REMOVE ? real.madvise((void *)(uintptr_t)lo,
						    hi - lo, advice) : 0;
}

EXPORT int madvise(void *addr, size_t len, int advice)
{
	uint64_t lo = (uintptr_t)addr, hi = page_end(lo, len);
	int ret;

	init();
	if (!active)
		return real.madvise(addr, len, advice);
	switch (advice) {
	case MADV_DONTFORK:
	case MADV_DOFORK:
	case MADV_WIPEONFORK:
	case MADV_KEEPONFORK:
		return fork_advice(addr, len, advice);
	case MADV_DONTNEED:
	case MADV_FREE:
	case MADV_REMOVE:
		pthread_mutex_lock(&mem_lock);
		if (!(lo & (PAGE - 1)) && set_meets(&moved, lo, hi))
			ret = discard_locked(lo, hi, advice);
		else
			ret = real.madvise(addr, len, advice);
		pthread_mutex_unlock(&mem_lock);
		return ret;
	default:
		return real.madvise(addr, len, advice);
	}
}

EXPORT int munmap(void *addr, size_t len)
{
	int ret;

	init();
	ret = real.munmap(addr, len);
	if (!ret)
		pinned_forget((uintptr_t)addr, len);
	return ret;
}

/* The marks of [lo, lo + old_len) follow its pages to @to. */
static void marks_follow(uint64_t lo, size_t old_len, size_t new_len,
			 uint64_t to)
{
	uint64_t keep = page_end(0, MIN(old_len, new_len));

	forget_locked(lo + keep, page_end(lo, old_len));
	if (to == lo)
		return;
	set_shift(&moved, lo, lo + keep, to);
	set_shift(&dontfork, lo, lo + keep, to);
	set_shift(&wipeonfork, lo, lo + keep, to);
}

/* Zeroed private pages at [at, at + len), where nothing is mapped yet. */
static bool grow_at(uint64_t at, size_t len, int prot, bool replace)
{
	void *p = real.mmap((void *)(uintptr_t)at, len, prot,
			    MAP_PRIVATE | MAP_ANONYMOUS |
			    (replace ? MAP_FIXED : MAP_FIXED_NOREPLACE), -1, 0);

	if (p == MAP_FAILED)
		return false;
	if ((uintptr_t)p == at)
		return true;
	real.munmap(p, len);	/* a kernel without MAP_FIXED_NOREPLACE */
	return false;
}

/*
 * mremap of a range holding pages of ours that the kernel cannot do as
 * it would on private memory: it grows one of our mappings (a file's end,
 * where a private mapping has zeroed pages) or spans several mappings
 * (a private mapping the move split).  Each mapping moves on its own, in
 * place of the one the program asked for.
 */
static void *remap_pieces(uint64_t lo, size_t old_len, size_t new_len,
			  int flags, uint64_t want)
{
	struct vma v[MAX_VMAS];
	int n = vmas_of(lo, lo + old_len, v, MAX_VMAS);
	uint64_t keep = MIN(old_len, new_len), to = want;

	if (n <= 0)
		return fail(-EFAULT), MAP_FAILED;
	if (!(flags & MREMAP_FIXED)) {
		if (grow_at(lo + old_len, new_len - old_len, v[n - 1].prot,
			    false))
			return (void *)(uintptr_t)lo;
		if (!(flags & MREMAP_MAYMOVE))
			return fail(-ENOMEM), MAP_FAILED;
		to = (uintptr_t)real.mmap(NULL, new_len, PROT_NONE,
					  MAP_PRIVATE | MAP_ANONYMOUS |
					  MAP_NORESERVE, -1, 0);
		if ((void *)(uintptr_t)to == MAP_FAILED)
			return MAP_FAILED;
	} else if (to < lo + old_len && lo < to + new_len) {
		return fail(-EINVAL), MAP_FAILED;
	}
	for (int i = 0; i < n && v[i].lo < lo + keep; i++) {
		uint64_t end = MIN(v[i].hi, lo + keep);

		if (real.mremap((void *)(uintptr_t)v[i].lo, end - v[i].lo,
				end - v[i].lo, MREMAP_MAYMOVE | MREMAP_FIXED,
				(void *)(uintptr_t)(to + v[i].lo - lo)) ==
		    MAP_FAILED)
			return MAP_FAILED;
	}
	if (new_len > old_len &&
	    !grow_at(to + old_len, new_len - old_len, v[n - 1].prot, true))
		return MAP_FAILED;
	if (keep < old_len)
		real.munmap((void *)(uintptr_t)(lo + keep), old_len - keep);
	return (void *)(uintptr_t)to;
}

EXPORT void *mremap(void *old, size_t old_len, size_t new_len, int flags, ...)
{
	uint64_t lo = (uintptr_t)old, want = 0;
	struct vma v[2];
	void *p;
	va_list ap;

	if (flags & MREMAP_FIXED) {
		va_start(ap, flags);
		want = (uintptr_t)va_arg(ap, void *);
		va_end(ap);
	}
	init();
	if (!active)
		return real.mremap(old, old_len, new_len, flags, want);
	pthread_mutex_lock(&mem_lock);
	if (old_len && !(flags & MREMAP_DONTUNMAP) &&
	    (new_len > old_len || (flags & MREMAP_FIXED)) &&
	    set_meets(&moved, lo, lo + old_len) &&
	    (vmas_of(lo, lo + old_len, v, 1) != 1 ||
	     (v[0].kind == VMA_OURS && new_len > old_len)))
		p = remap_pieces(lo, old_len, new_len, flags, want);
	else
		p = real.mremap(old, old_len, new_len, flags, want);
	if (p != MAP_FAILED && !(flags & MREMAP_DONTUNMAP))
		marks_follow(lo, old_len, new_len, (uintptr_t)p);
	pthread_mutex_unlock(&mem_lock);
	return p;
}
