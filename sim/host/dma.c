/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * DMA: the device reads and writes the memory of the processes it serves.
 * Pages the kernel pinned and the library shared (dma-share.c) are
 * windows the daemon maps: there a transfer is a copy.  Everything else
 * goes through process_vm_readv/writev, so an address that is not mapped
 * fails cleanly instead of touching anything else.  Whether the device
 * may use an address at all (keys, PD, access rights) is decided by the
 * callers before they get here.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "host.h"

#define DMA_IOV_MAX	DMA_PIECES_MAX	/* pieces in one system call */
#define DMA_CHUNK	(1u << 20)	/* bounce buffer for process-to-process */
#define DMA_STORE_BLOCK	64		/* dma_store()'s, a cache line */

/*
 * What must happen before any other transfer: the adapter writes CQEs in
 * batches (adapter/cq.c), and registers their flush here so that the
 * device's reads and writes keep their order.  A callback, because the
 * host layer knows nothing of CQs.
 */
static dma_before_fn *before_transfer;

void dma_set_before_transfer(dma_before_fn *fn)
{
	before_transfer = fn;
}

/*
 * Pieces in order.  A driver writes a WQE's body before its owner bit,
 * and reads a CQE's body after its owner bit; the device must read and
 * write likewise, or see half-made entries.  A piece in a window is a
 * copy followed by a fence (release after a write, acquire after a
 * read).  Each piece of one system call is a copy of its own, so where
 * the CPU keeps loads and stores in program order (x86) one call keeps
 * the order; elsewhere each piece takes a call, and the system calls
 * order them.
 */
#if defined(__x86_64__) || defined(__i386__)
#define ONE_CALL_KEEPS_ORDER	1
#else
#define ONE_CALL_KEEPS_ORDER	0
#endif

/* One transfer under way: the pieces outside windows not yet made. */
struct xfer {
	pid_t pid;
	bool write;
	int n;
	size_t len;
	struct iovec local[DMA_IOV_MAX], remote[DMA_IOV_MAX];
};

static int xfer_flush(struct xfer *x)
{
	size_t len = x->len;
	ssize_t n;

	if (!x->n)
		return 0;
	if (x->write)
		n = process_vm_writev(x->pid, x->local, x->n, x->remote, x->n,
				      0);
	else
		n = process_vm_readv(x->pid, x->local, x->n, x->remote, x->n,
				     0);
	x->n = 0;
	x->len = 0;
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EFAULT;
}

/*
 * Fewer than DMA_STORE_BLOCK bytes, in no order among themselves: two
 * moves of a constant size that overlap in the middle, as glibc's
 * memcpy() does for short lengths.  A memcpy() of a length the compiler
 * knows only to be short becomes a loop of 8-byte moves (35
 * instructions for 63 bytes).
 */
static inline void store_short(uint8_t *d, const uint8_t *s, size_t len)
{
	if (len >= 32) {
		memcpy(d, s, 32);
		memcpy(d + len - 32, s + len - 32, 32);
	} else if (len >= 16) {
		memcpy(d, s, 16);
		memcpy(d + len - 16, s + len - 16, 16);
	} else if (len >= 8) {
		memcpy(d, s, 8);
		memcpy(d + len - 8, s + len - 8, 8);
	} else if (len >= 4) {
		memcpy(d, s, 4);
		memcpy(d + len - 4, s + len - 4, 4);
	} else {
		for (size_t i = 0; i < len; i++)
			d[i] = s[i];
	}
}

/*
 * The device's write of @len bytes into a program's memory, in address
 * order.  An adapter sends a message's bytes from the first to the last,
 * and PCIe's posted writes reach memory in the order sent, so a program
 * may poll a buffer's last byte for the next message and then read the
 * rest: Open MPI's openib BTL does, for its eager RDMA fragments.
 * memcpy() keeps no order (glibc stores a long copy's first bytes last,
 * and rep movsb's stores may be seen in any order), and a reader on
 * another CPU saw a fragment's last byte before its first (tests/sim/
 * write-order).  So: blocks of 64 bytes, each seen before the next (a
 * release fence: no instruction on x86, whose stores keep their order,
 * a barrier elsewhere), and the last byte last; each block a memcpy()
 * of constant size, which the compiler makes a few vector moves (a
 * memmove() there was a call a block, and cost ib_write_bw a third).
 * Ranges that overlap (a QP writing where it sends from, which the
 * specification leaves undefined; a message is read before it is
 * written, so the result is memmove()'s) take memmove() whole, whose
 * order is its own.
 */
void dma_store(void *to, const void *from, size_t len)
{
	const uint8_t *s = from;
	uint8_t *d = to;
	size_t off = 0;

	if (!len)
		return;
	if ((uintptr_t)d < (uintptr_t)s + len &&
	    (uintptr_t)s < (uintptr_t)d + len) {
		memmove(d, s, len);
		return;
	}
	for (; len - off > DMA_STORE_BLOCK; off += DMA_STORE_BLOCK) {
		memcpy(d + off, s + off, DMA_STORE_BLOCK);
		__atomic_thread_fence(__ATOMIC_RELEASE);
	}
	store_short(d + off, s + off, len - off - 1);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	d[len - 1] = s[len - 1];
}

static void window_copy(bool write, uint8_t *here, uint8_t *buf, size_t len)
{
	if (write) {
		dma_store(here, buf, len);
		__atomic_thread_fence(__ATOMIC_RELEASE);
	} else {
		memcpy(buf, here, len);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
	}
}

/*
 * Add the piece [@addr, @addr + @len) <-> @buf: the parts in windows
 * copied now (after the pieces before them), the rest to a system call.
 */
static int xfer_piece(struct xfer *x, uint64_t addr, uint8_t *buf, size_t len)
{
	while (len) {
		uint64_t run;
		uint8_t *here = dma_window_find(x->pid, addr, &run);
		size_t take = MIN((uint64_t)len, run);
		int err;

		if (here || x->n == DMA_IOV_MAX) {
			err = xfer_flush(x);
			if (err)
				return err;
		}
		if (here) {
			window_copy(x->write, here, buf, take);
		} else {
			x->local[x->n] = (struct iovec){ buf, take };
			x->remote[x->n] = (struct iovec){
				(void *)(uintptr_t)addr, take };
			x->n++;
			x->len += take;
		}
		addr += take;
		buf += take;
		len -= take;
	}
	return ONE_CALL_KEEPS_ORDER ? 0 : xfer_flush(x);
}

/*
 * One transfer of pieces, in order.  The CQEs waiting in batches go first
 * (unless @after_batch: a read of a work queue, which the device never
 * writes, or a batch's own write), so that the device's reads and writes
 * keep their order.
 */
static int pieces(pid_t pid, bool write, bool after_batch,
		  const struct dma_piece *p, int n)
{
	struct xfer x;		/* its arrays filled as needed: 2 KiB */
	int err = 0;

	x.pid = pid;
	x.write = write;
	x.n = 0;
	x.len = 0;
	if (n > DMA_PIECES_MAX)
		return -EINVAL;
	if (!after_batch && before_transfer)
		before_transfer(pid, write, p, n);
	for (int i = 0; i < n && !err; i++)
		err = xfer_piece(&x, p[i].addr, p[i].buf, p[i].len);
	return err ? err : xfer_flush(&x);
}

int dma_read_ordered(pid_t pid, const struct dma_piece *p, int n)
{
	return pieces(pid, false, false, p, n);
}

/* dma_read_ordered() of a work queue: the CQEs waiting go on waiting. */
int dma_read_queue(pid_t pid, const struct dma_piece *p, int n)
{
	return pieces(pid, false, true, p, n);
}

int dma_write_ordered(pid_t pid, const struct dma_piece *p, int n)
{
	return pieces(pid, true, false, p, n);
}

/*
 * dma_write_ordered() of a CQE batch's own (cq.c), which the batches'
 * writing orders itself: no batch is written before it.
 */
int dma_write_batch(pid_t pid, const struct dma_piece *p, int n)
{
	return pieces(pid, true, true, p, n);
}

int dma_read(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct dma_piece p = { addr, buf, len };

	return pieces(pid, false, false, &p, 1);
}

int dma_write(pid_t pid, uint64_t addr, const void *buf, size_t len)
{
	struct dma_piece p = { addr, (void *)buf, len };

	return pieces(pid, true, false, &p, 1);
}

/*
 * The window [off, off + len) of a scatter/gather list, as pieces over
 * @buf.  Returns the number of pieces, or -1 if the list is shorter or
 * needs more than DMA_PIECES_MAX.
 */
static int window(const struct dma_seg *seg, int nseg, uint64_t off,
		  size_t len, uint8_t *buf, struct dma_piece *p)
{
	int n = 0;

	for (int i = 0; i < nseg && len; i++) {
		size_t take;

		if (off >= seg[i].len) {
			off -= seg[i].len;
			continue;
		}
		take = MIN(seg[i].len - off, len);
		if (n == DMA_PIECES_MAX)
			return -1;
		p[n++] = (struct dma_piece){ seg[i].addr + off, buf, take };
		buf += take;
		len -= take;
		off = 0;
	}
	return len ? -1 : n;
}

static size_t seg_total(const struct dma_seg *seg, int nseg)
{
	size_t total = 0;

	for (int i = 0; i < nseg; i++)
		total += seg[i].len;
	return total;
}

int dma_readv(pid_t pid, const struct dma_seg *seg, int nseg, void *buf)
{
	struct dma_piece p[DMA_PIECES_MAX];
	int n = window(seg, nseg, 0, seg_total(seg, nseg), buf, p);

	return n < 0 ? -EINVAL : pieces(pid, false, false, p, n);
}

int dma_writev(pid_t pid, const struct dma_seg *seg, int nseg,
	       const void *buf, size_t len)
{
	struct dma_piece p[DMA_PIECES_MAX];
	int n = window(seg, nseg, 0, len, (void *)buf, p);

	return n < 0 ? -EINVAL : pieces(pid, true, false, p, n);
}

/* Whether every byte of the pieces is in a window of @pid. */
static bool in_windows(pid_t pid, const struct dma_piece *p, int n)
{
	for (int i = 0; i < n; i++) {
		uint64_t addr = p[i].addr, end = p[i].addr + p[i].len, run;

		while (addr < end) {
			if (!dma_window_find(pid, addr, &run))
				return false;
			addr += MIN(run, end - addr);
		}
	}
	return true;
}

/*
 * Window to window, when both ends are wholly in windows: the pieces of
 * @s and @d cover the same bytes, each list in order.
 */
static void copy_windows(pid_t src_pid, const struct dma_piece *s, int ns,
			 pid_t dst_pid, const struct dma_piece *d, int nd)
{
	size_t soff = 0, doff = 0;
	int i = 0, j = 0;

	while (i < ns && j < nd) {
		uint64_t srun, drun;
		uint8_t *from = dma_window_find(src_pid, s[i].addr + soff, &srun);
		uint8_t *to = dma_window_find(dst_pid, d[j].addr + doff, &drun);
		size_t take = MIN(s[i].len - soff, d[j].len - doff);

		take = MIN(take, MIN(srun, drun));
		/* Both may be the same pages (a loopback to itself). */
		dma_store(to, from, take);
		soff += take;
		doff += take;
		if (soff == s[i].len) {
			i++;
			soff = 0;
		}
		if (doff == d[j].len) {
			j++;
			doff = 0;
		}
	}
	__atomic_thread_fence(__ATOMIC_RELEASE);
}

/*
 * Copy between processes.  -EFAULT when the source cannot be read, -EIO
 * when the destination cannot be written: the two ends answer for
 * different errors.
 */
int dma_copy(pid_t src_pid, const struct dma_seg *src, int nsrc,
	     pid_t dst_pid, const struct dma_seg *dst, int ndst, size_t len)
{
	static struct dma_piece sp[DMA_PIECES_MAX], dp[DMA_PIECES_MAX];
	static uint8_t *bounce;

	if (!bounce) {
		bounce = malloc(DMA_CHUNK);
		if (!bounce)
			return -ENOMEM;
	}
	for (uint64_t off = 0; off < len; off += DMA_CHUNK) {
		size_t n = MIN(len - off, DMA_CHUNK);
		int ns = window(src, nsrc, off, n, bounce, sp);
		int nd = window(dst, ndst, off, n, bounce, dp);

		if (ns < 0 || nd < 0)
			return -EINVAL;
		if (before_transfer)
			before_transfer(dst_pid, true, dp, nd);
		if (in_windows(src_pid, sp, ns) && in_windows(dst_pid, dp, nd)) {
			copy_windows(src_pid, sp, ns, dst_pid, dp, nd);
			continue;
		}
		if (pieces(src_pid, false, true, sp, ns))
			return -EFAULT;
		if (pieces(dst_pid, true, true, dp, nd))
			return -EIO;
	}
	return 0;
}

struct mapped_walk {
	uint64_t want;		/* the first address not yet seen mapped */
	bool write;
};

static bool mapped_on(const struct vma_span *v, void *arg)
{
	struct mapped_walk *w = arg;

	if (v->lo > w->want || !v->read || (w->write && !v->write))
		return false;	/* a hole, or pages the device may not use */
	w->want = v->hi;
	return true;
}

/*
 * Whether [addr, addr + len) is mapped in the process, readable, and
 * writable if asked: what pinning the pages at registration would check.
 */
bool dma_range_mapped(pid_t pid, uint64_t addr, uint64_t len, bool write)
{
	struct mapped_walk w = { .want = addr, .write = write };

	if (!len || addr + len < addr)
		return false;
	vma_each(pid, addr, addr + len, mapped_on, &w);
	return w.want >= addr + len;
}

/*
 * The part [off, off + len) of a scatter/gather list, as a list.
 * Returns its length, or -1 if the list is shorter.
 */
int dma_slice(const struct dma_seg *seg, int nseg, uint64_t off, uint64_t len,
	      struct dma_seg *out)
{
	int n = 0;

	for (int i = 0; i < nseg && len; i++) {
		uint64_t take;

		if (off >= seg[i].len) {
			off -= seg[i].len;
			continue;
		}
		take = MIN(seg[i].len - off, len);
		out[n].addr = seg[i].addr + off;
		out[n].len = take;
		n++;
		len -= take;
		off = 0;
	}
	return len ? -1 : n;
}
