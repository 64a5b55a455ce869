/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Pinning: ib_umem_get() of the kernel, which takes the pages of what a
 * process registers for the device.  Here the pages become shared with
 * the daemon (host/dma-share.c): a command pins its object's pages by
 * holding the windows already over them, and asks the library, in its
 * reply, to share the rest; the library moves those pages onto memfds and
 * sends one SHARE request per range before the write() returns.  A range
 * the library could not move, or whose file fails the checks, stays
 * unshared: the device reaches it through process_vm_* as before.
 *
 * What is asked is remembered on the context until the next request of
 * another kind, and only what was asked is taken, in order: a SHARE that
 * names anything else is EINVAL.
 */
#include <errno.h>
#include <unistd.h>

#include "../host/protocol.h"
#include "uverbs.h"

_Static_assert(SIM_MAX_SHARES == MLX4SIM_MAX_SHARES,
	       "one bound for the daemon and the library");

static uint64_t page_down(uint64_t v)
{
	return v & ~(uint64_t)(SIM_PAGE_SIZE - 1);
}

static uint64_t page_up(uint64_t v)
{
	return page_down(v + SIM_PAGE_SIZE - 1);
}

/* Whether [addr, addr + len) meets a range this command already asks for. */
static bool asked(const struct sim_ctx *ctx, uint64_t addr, uint64_t len)
{
	for (int i = 0; i < ctx->sharing.n; i++)
		if (addr < ctx->sharing.range[i].addr + ctx->sharing.range[i].len &&
		    ctx->sharing.range[i].addr < addr + len)
			return true;
	return false;
}

/*
 * Pin [@addr, @addr + @len) of the command's process for @pins.  Queue
 * memory (@whole_pages) is pinned page by page, as ib_umem_get() pins it:
 * the providers give queues and doorbell records pages of their own.  A
 * memory region shares only the pages wholly inside it: the rest of a
 * page it begins or ends in is the program's other memory, which another
 * thread may be writing while the pages move (see sim/README).
 */
void umem_pin(struct sim_ctx *ctx, struct sim_pins *pins, uint64_t addr,
	      uint64_t len, bool whole_pages)
{
	struct dma_range gaps[SIM_MAX_SHARES];
	uint64_t lo, hi;
	int room = SIM_MAX_SHARES - ctx->sharing.n, n;

	if (!len || addr + len < addr)
		return;
	lo = whole_pages ? page_down(addr) : page_up(addr);
	hi = whole_pages ? page_up(addr + len) : page_down(addr + len);
	if (hi <= lo)
		return;
	n = dma_pins_hold(ctx->pid, pins, lo, hi, gaps, room);
	for (int i = 0; i < n; i++) {
		int k;

		/* Two objects in one page (a client's choice): asked once. */
		if (asked(ctx, gaps[i].addr, gaps[i].len))
			continue;
		k = ctx->sharing.n++;

		ctx->sharing.range[k].pins = pins;
		ctx->sharing.range[k].addr = gaps[i].addr;
		ctx->sharing.range[k].len = gaps[i].len;
	}
}

/*
 * Let go of the pages of @pins (destroy, dereg, a failed create), and
 * forget what was asked for them.
 */
void umem_unpin(struct sim_ctx *ctx, struct sim_pins *pins)
{
	if (ctx)
		for (int i = 0; i < ctx->sharing.n; i++)
			if (ctx->sharing.range[i].pins == pins)
				ctx->sharing.range[i].pins = NULL;
	dma_pins_release(pins);
}

/* What the reply to the command asks to share; then SHAREs may follow. */
int umem_shares(struct sim_ctx *ctx, struct mlx4sim_share *out)
{
	int n = 0;

	for (int i = 0; i < ctx->sharing.n; i++) {
		if (!ctx->sharing.range[i].pins)
			continue;
		ctx->sharing.range[n] = ctx->sharing.range[i];
		out[n].addr = ctx->sharing.range[n].addr;
		out[n].len = ctx->sharing.range[n].len;
		n++;
	}
	ctx->sharing.n = n;
	ctx->sharing.next = 0;
	return n;
}

/* A request of another kind: nothing more is shared for that command. */
void umem_shares_end(struct sim_ctx *ctx)
{
	ctx->sharing.n = 0;
	ctx->sharing.next = 0;
}

/*
 * A SHARE request: the next range asked, and the memfd it now lives on
 * (@fd, or -1: the library could not move it).  0 or -errno.
 */
int umem_share(struct sim_ctx *ctx, const void *payload, size_t len, int fd)
{
	struct mlx4sim_share share;
	int k = ctx->sharing.next;

	if (len != sizeof(share) || k >= ctx->sharing.n)
		return -EINVAL;
	memcpy(&share, payload, sizeof(share));
	if (share.addr != ctx->sharing.range[k].addr ||
	    share.len != ctx->sharing.range[k].len)
		return -EINVAL;
	ctx->sharing.next++;
	if (fd < 0)
		return 0;
	/* Its object was destroyed meanwhile (a fault disassociated it). */
	if (!ctx->sharing.range[k].pins)
		return -ENOENT;
	return dma_window_add(ctx->pid, fd, share.addr, share.len,
			      ctx->sharing.range[k].pins);
}
