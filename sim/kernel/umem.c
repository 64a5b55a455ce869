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
 *
 * ib_umem_get() also counts what it pins in the process's pinned_vm,
 * held to RLIMIT_MEMLOCK (host/memlock.c): every page an object's range
 * touches, and each page of doorbell records once per context, however
 * many objects keep their records there (mlx4_ib_db_map_user).  The
 * commands ask umem_may_pin() where the kernel calls ib_umem_get(), after
 * their own checks and before the pages are looked at (EFAULT).
 */
#include <errno.h>
#include <stdlib.h>
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

/* ib_umem_num_pages(): every page [@addr, @addr + @len) touches. */
uint64_t umem_pages(uint64_t addr, uint64_t len)
{
	return (page_up(addr + len) - page_down(addr)) / SIM_PAGE_SIZE;
}

static struct sim_db_page *db_page_of(const struct sim_ctx *ctx,
				      uint64_t addr)
{
	for (uint32_t i = 0; i < ctx->n_db_pages; i++)
		if (ctx->db_pages[i].addr == page_down(addr))
			return &ctx->db_pages[i];
	return NULL;
}

/* The pages a doorbell record at @addr adds: none if its page is held. */
uint64_t umem_db_pages(const struct sim_ctx *ctx, uint64_t addr)
{
	return db_page_of(ctx, addr) ? 0 : 1;
}

/* mm->pinned_vm: what every context of @pid's process holds. */
static uint64_t pinned_by_process(pid_t pid)
{
	struct sim_ctx *c;
	uint64_t n = 0;

	list_for_each(&sim.ctxs, c, struct sim_ctx, link)
		if (c->pid == pid)
			n += c->pinned;
	return n;
}

/*
 * ib_umem_get()'s limit: the pages the process may still pin once
 * @released of its pinned pages have gone (a re-registration lets the old
 * pages go first), into *@room (UINT64_MAX: no bound).  -EPERM with a
 * limit of 0 (can_do_mlock), else 0.  The limit is read once a command.
 */
static int pin_room(const struct sim_ctx *ctx, uint64_t released,
		    uint64_t *room)
{
	uint64_t limit = proc_lock_limit(ctx->pid), held;

	*room = UINT64_MAX;
	if (limit == UINT64_MAX)
		return 0;
	if (!limit)
		return -EPERM;
	held = pinned_by_process(ctx->pid);
	held -= MIN(held, released);
	limit /= SIM_PAGE_SIZE;
	*room = held < limit ? limit - held : 0;
	return 0;
}

/* Whether @pages more may be pinned: 0, -EPERM or -ENOMEM (pin_room). */
int umem_may_pin(const struct sim_ctx *ctx, uint64_t pages, uint64_t released)
{
	uint64_t room;
	int err = pin_room(ctx, released, &room);

	return err ? err : pages > room ? -ENOMEM : 0;
}

/*
 * The pinning of a queue as the commands that make one do it: its ring
 * at @buf (@len bytes) through ib_umem_get(), then, unless @db_len is 0,
 * its doorbell record at @db through mlx4_ib_db_map_user().  0, or the
 * errno of the first step that fails: the limit, then pages not there.
 */
int umem_may_pin_queue(const struct sim_ctx *ctx, uint64_t buf, uint64_t len,
		       uint64_t db, uint64_t db_len)
{
	uint64_t room, pages = umem_pages(buf, len);
	int err = pin_room(ctx, 0, &room);

	if (err)
		return err;
	if (pages > room)
		return -ENOMEM;
	if (!buf || !dma_range_mapped(ctx->pid, buf, len, true))
		return -EFAULT;
	if (!db_len)
		return 0;
	if (pages + umem_db_pages(ctx, db) > room)
		return -ENOMEM;
	return db && dma_range_mapped(ctx->pid, db, db_len, true) ? 0 : -EFAULT;
}

/*
 * Hold the pages of [@addr, @addr + @len) for @pins, and ask the library
 * to share those not yet shared.  Queue memory (@whole_pages) is pinned
 * page by page, as ib_umem_get() pins it: the providers give queues and
 * doorbell records pages of their own.  A memory region shares only the
 * pages wholly inside it: the rest of a page it begins or ends in is the
 * program's other memory, which another thread may be writing while the
 * pages move (see sim/README).
 */
static void share_pages(struct sim_ctx *ctx, struct sim_pins *pins,
			uint64_t addr, uint64_t len, bool whole_pages)
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

/* Pin [@addr, @addr + @len) of the command's process for @pins. */
void umem_pin(struct sim_ctx *ctx, struct sim_pins *pins, uint64_t addr,
	      uint64_t len, bool whole_pages)
{
	if (len && addr + len >= addr) {
		pins->locked = umem_pages(addr, len);
		ctx->pinned += pins->locked;
	}
	share_pages(ctx, pins, addr, len, whole_pages);
}

/*
 * Pin the doorbell record at @addr (@len bytes) for @pins: its page
 * counts once for the context, until the last record in it goes.  A
 * context that cannot grow its list (no memory) counts the page anew.
 */
void umem_pin_db(struct sim_ctx *ctx, struct sim_pins *pins, uint64_t addr,
		 uint64_t len)
{
	struct sim_db_page *page = db_page_of(ctx, addr), *more;

	if (page) {
		page->users++;
		pins->db_page = page->addr;
	} else if ((more = realloc(ctx->db_pages, (ctx->n_db_pages + 1) *
					       sizeof(*more)))) {
		ctx->db_pages = more;
		more[ctx->n_db_pages++] = (struct sim_db_page){
			.addr = page_down(addr), .users = 1 };
		pins->db_page = page_down(addr);
		ctx->pinned++;
	} else {
		pins->locked = 1;
		ctx->pinned++;
	}
	share_pages(ctx, pins, addr, len, true);
}

static void unpin_db_page(struct sim_ctx *ctx, uint64_t addr)
{
	struct sim_db_page *page = db_page_of(ctx, addr);

	if (!page || --page->users)
		return;
	*page = ctx->db_pages[--ctx->n_db_pages];
	ctx->pinned--;
}

/*
 * Let go of the pages of @pins (destroy, dereg, a failed create), and
 * forget what was asked for them.
 */
void umem_unpin(struct sim_ctx *ctx, struct sim_pins *pins)
{
	if (ctx) {
		for (int i = 0; i < ctx->sharing.n; i++)
			if (ctx->sharing.range[i].pins == pins)
				ctx->sharing.range[i].pins = NULL;
		if (pins->db_page)
			unpin_db_page(ctx, pins->db_page);
		ctx->pinned -= MIN(ctx->pinned, pins->locked);
	}
	pins->db_page = 0;
	pins->locked = 0;
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
