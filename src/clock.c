/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The adapter's clock: a free-running 64-bit counter the kernel lets a
 * process map read-only (after the UAR and BlueFlame pages), ticking at
 * hca_core_clock kHz.  CQEs of a CQ created for timestamps carry its low
 * 48 bits; ibv_query_rt_values_ex() reads it whole; and a CQE's time in
 * wall-clock nanoseconds is the ticks since an anchor, a reading of this
 * counter and of CLOCK_REALTIME taken together.
 */
#include <config.h>

#include <errno.h>
#include <sys/mman.h>
#include <time.h>

#include "mlx4.h"

/* Map the clock page; without it, there is no clock to offer. */
void mlx4_map_hca_clock(struct mlx4_context *ctx, uint64_t offset)
{
	struct ibv_context *ibctx = &ctx->ibv_ctx.context;
	int page_size = mlx4_page_size(ibctx);
	void *page;

	if (ctx->hca_clock_page)
		return;
	page = mmap(NULL, page_size, PROT_READ, MAP_SHARED, ibctx->cmd_fd,
		    (off_t)page_size * MLX4_CLOCK_PAGE_INDEX);
	if (page == MAP_FAILED)
		return;
	ctx->hca_clock_page = page;
	ctx->hca_core_clock = (char *)page + (offset & (page_size - 1));
}

/* The counter now: big-endian, high word first, read again if it moved. */
static uint64_t read_hca_clock(const struct mlx4_context *ctx)
{
	const volatile uint32_t *clock = ctx->hca_core_clock;
	uint32_t hi, lo, again;
	int tries = 0;

	do {
		hi = be32toh(clock[0]);
		lo = be32toh(clock[1]);
		again = be32toh(clock[0]);
	} while (hi != again && ++tries < 8);
	return (uint64_t)hi << 32 | lo;
}

int mlx4_query_rt_values(struct ibv_context *context,
			 struct ibv_values_ex *values)
{
	struct mlx4_context *ctx = to_mctx(context);

	if (!ctx->hca_core_clock)
		return EOPNOTSUPP;
	if (values->comp_mask & ~(uint32_t)IBV_VALUES_MASK_RAW_CLOCK)
		return EINVAL;
	if (!(values->comp_mask & IBV_VALUES_MASK_RAW_CLOCK))
		return 0;
	values->raw_clock.tv_sec = 0;
	values->raw_clock.tv_nsec = read_hca_clock(ctx);
	values->comp_mask = IBV_VALUES_MASK_RAW_CLOCK;
	return 0;
}

/* Whether CQEs' times can be told in wall-clock nanoseconds. */
int mlx4_has_wallclock(const struct mlx4_context *ctx)
{
	return ctx->hca_core_clock && ctx->hca_clock_khz;
}

/*
 * Read both clocks: the real-time clock between two readings of the
 * adapter's, which is taken as their midpoint.
 */
void mlx4_clock_anchor_set(const struct mlx4_context *ctx,
			   struct mlx4_clock_anchor *anchor)
{
	struct timespec now;
	uint64_t before, after;

	before = read_hca_clock(ctx);
	clock_gettime(CLOCK_REALTIME, &now);
	after = read_hca_clock(ctx);
	anchor->ticks = (before + (after - before) / 2) & MLX4_TICKS_MASK;
	anchor->ns = (uint64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

/* Signed ticks from @from to @to, both 48-bit counter values. */
static int64_t ticks_between(uint64_t from, uint64_t to)
{
	uint64_t d = (to - from) & MLX4_TICKS_MASK;

	return d & (1ULL << 47) ? (int64_t)d - (int64_t)(1ULL << 48) :
				  (int64_t)d;
}

/* @ticks at @khz in nanoseconds, without overflow on 32-bit CPUs too. */
static int64_t ticks_to_ns(int64_t ticks, uint64_t khz)
{
	uint64_t t = ticks < 0 ? -(uint64_t)ticks : (uint64_t)ticks;
	uint64_t ns = t / khz * 1000000 + t % khz * 1000000 / khz;

	return ticks < 0 ? -(int64_t)ns : (int64_t)ns;
}

/*
 * A CQE's time @ticks in wall-clock nanoseconds.  The two clocks drift
 * apart (crystals, NTP), so an anchor serves for a second of ticks
 * around it and is then taken again: a CQE's time is then as good as
 * the adapter's clock over a second.  The CQ's lock (or its single
 * poller) guards @anchor.
 */
uint64_t mlx4_ticks_to_wallclock_ns(const struct mlx4_context *ctx,
				    struct mlx4_clock_anchor *anchor,
				    uint64_t ticks)
{
	int64_t since = ticks_between(anchor->ticks, ticks);
	int64_t second = (int64_t)ctx->hca_clock_khz * 1000;

	if (since > second || since < -second) {
		mlx4_clock_anchor_set(ctx, anchor);
		since = ticks_between(anchor->ticks, ticks);
	}
	return anchor->ns + ticks_to_ns(since, ctx->hca_clock_khz);
}
