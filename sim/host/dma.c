/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * DMA: the device reads and writes the memory of the processes it serves.
 * Everything goes through process_vm_readv/writev, so an address that is
 * not mapped fails cleanly instead of touching anything else; whether the
 * device may use an address at all (keys, PD, access rights) is decided by
 * the callers before they get here.
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

#define DMA_IOV_MAX	DMA_PIECES_MAX	/* pieces in one transfer */
#define DMA_CHUNK	(1u << 20)	/* bounce buffer for process-to-process */

/*
 * What must happen before any other transfer: the adapter writes CQEs in
 * batches (adapter/cq.c), and registers their flush here so that the
 * device's reads and writes keep their order.  A callback, because the
 * host layer knows nothing of CQs.
 */
static void (*before_transfer)(void);

void dma_set_before_transfer(void (*fn)(void))
{
	before_transfer = fn;
}

/*
 * One transfer.  The CQEs waiting in batches go first (unless
 * @after_batch: a read of a work queue, which the device never writes, or
 * a batch's own write), so that the device's reads and writes keep their
 * order.
 */
static int transfer_as(pid_t pid, bool write, bool after_batch,
		       const struct iovec *local, int nlocal,
		       const struct iovec *remote, int nremote, size_t len)
{
	ssize_t n;

	if (!after_batch && before_transfer)
		before_transfer();
	if (!len)
		return 0;
	if (write)
		n = process_vm_writev(pid, local, nlocal, remote, nremote, 0);
	else
		n = process_vm_readv(pid, local, nlocal, remote, nremote, 0);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EFAULT;
}

static int transfer(pid_t pid, bool write, const struct iovec *local,
		    int nlocal, const struct iovec *remote, int nremote,
		    size_t len)
{
	return transfer_as(pid, write, false, local, nlocal, remote, nremote,
			   len);
}

/*
 * Pieces in order.  A driver writes a WQE's body before its owner bit,
 * and reads a CQE's body after its owner bit; the device must read and
 * write likewise, or see half-made entries.  Each piece of one system
 * call is a copy of its own, so where the CPU keeps loads and stores in
 * program order (x86) one call keeps the order; elsewhere each piece
 * takes a call, and the system calls order them.
 */
#if defined(__x86_64__) || defined(__i386__)
#define ONE_CALL_KEEPS_ORDER	1
#else
#define ONE_CALL_KEEPS_ORDER	0
#endif

static int pieces(pid_t pid, bool write, bool after_batch,
		  const struct dma_piece *p, int n)
{
	struct iovec local[DMA_IOV_MAX], remote[DMA_IOV_MAX];
	size_t total = 0;

	if (n > DMA_IOV_MAX)
		return -EINVAL;
	if (!ONE_CALL_KEEPS_ORDER && n > 1) {
		for (int i = 0; i < n; i++) {
			int err = pieces(pid, write, after_batch, &p[i], 1);

			if (err)
				return err;
			/* The kernel's copies on this CPU, in order. */
			__atomic_thread_fence(__ATOMIC_SEQ_CST);
		}
		return 0;
	}
	for (int i = 0; i < n; i++) {
		local[i] = (struct iovec){ p[i].buf, p[i].len };
		remote[i] = (struct iovec){ (void *)(uintptr_t)p[i].addr, p[i].len };
		total += p[i].len;
	}
	return transfer_as(pid, write, after_batch, local, n, remote, n, total);
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
	struct iovec l = { buf, len };
	struct iovec r = { (void *)(uintptr_t)addr, len };

	return transfer(pid, false, &l, 1, &r, 1, len);
}

int dma_write(pid_t pid, uint64_t addr, const void *buf, size_t len)
{
	struct iovec l = { (void *)buf, len };
	struct iovec r = { (void *)(uintptr_t)addr, len };

	return transfer(pid, true, &l, 1, &r, 1, len);
}

/*
 * The window [off, off + len) of a scatter/gather list as iovecs.
 * Returns the number of iovecs, or -1 if the list is shorter.
 */
static int window(const struct dma_seg *seg, int nseg, uint64_t off,
		  size_t len, struct iovec *iov)
{
	int n = 0;

	for (int i = 0; i < nseg && len; i++) {
		size_t take;

		if (off >= seg[i].len) {
			off -= seg[i].len;
			continue;
		}
		take = MIN(seg[i].len - off, len);
		if (n == DMA_IOV_MAX)
			return -1;
		iov[n].iov_base = (void *)(uintptr_t)(seg[i].addr + off);
		iov[n].iov_len = take;
		n++;
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
	struct iovec remote[DMA_IOV_MAX];
	size_t len = seg_total(seg, nseg);
	struct iovec local = { buf, len };
	int n = window(seg, nseg, 0, len, remote);

	if (n < 0)
		return -EINVAL;
	return transfer(pid, false, &local, 1, remote, n, len);
}

int dma_writev(pid_t pid, const struct dma_seg *seg, int nseg,
	       const void *buf, size_t len)
{
	struct iovec remote[DMA_IOV_MAX];
	struct iovec local = { (void *)buf, len };
	int n = window(seg, nseg, 0, len, remote);

	if (n < 0)
		return -EINVAL;
	return transfer(pid, true, &local, 1, remote, n, len);
}

/*
 * Copy between processes.  -EFAULT when the source cannot be read, -EIO
 * when the destination cannot be written: the two ends answer for
 * different errors.
 */
int dma_copy(pid_t src_pid, const struct dma_seg *src, int nsrc,
	     pid_t dst_pid, const struct dma_seg *dst, int ndst, size_t len)
{
	static uint8_t *bounce;
	struct iovec siov[DMA_IOV_MAX], diov[DMA_IOV_MAX];

	if (!bounce) {
		bounce = malloc(DMA_CHUNK);
		if (!bounce)
			return -ENOMEM;
	}
	for (uint64_t off = 0; off < len; off += DMA_CHUNK) {
		size_t n = MIN(len - off, DMA_CHUNK);
		struct iovec local = { bounce, n };
		int ns = window(src, nsrc, off, n, siov);
		int nd = window(dst, ndst, off, n, diov);

		if (ns < 0 || nd < 0)
			return -EINVAL;
		if (transfer(src_pid, false, &local, 1, siov, ns, n))
			return -EFAULT;
		if (transfer(dst_pid, true, &local, 1, diov, nd, n))
			return -EIO;
	}
	return 0;
}

/*
 * Whether [addr, addr + len) is mapped in the process, readable, and
 * writable if asked: what pinning the pages at registration would check.
 */
bool dma_range_mapped(pid_t pid, uint64_t addr, uint64_t len, bool write)
{
	char path[64], line[512];
	uint64_t want = addr, end = addr + len;
	FILE *f;

	if (!len || end < addr)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (want < end && fgets(line, sizeof(line), f)) {
		uint64_t lo, hi;
		char perms[8];

		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s", &lo, &hi,
			   perms) != 3)
			continue;
		if (hi <= want)
			continue;
		if (lo > want)
			break;		/* a hole */
		if (perms[0] != 'r' || (write && perms[1] != 'w'))
			break;
		want = hi;
	}
	fclose(f);
	return want >= end;
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
