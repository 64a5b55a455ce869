/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The event queue: how the adapter reports completions on armed CQs and
 * asynchronous events (a QP, SRQ or CQ in error, a port's state) to the
 * kernel.  The kernel's handlers are registered once at start; an event
 * before that has no one to hear it, as on hardware before mlx4_ib has
 * set up its EQs.
 */
#include "adapter.h"

static struct adapter_event_handlers handlers;

void adapter_set_event_handlers(const struct adapter_event_handlers *h)
{
	handlers = *h;
}

void adapter_comp_event(struct sim_cq *cq)
{
	if (handlers.completion)
		handlers.completion(cq);
}

void adapter_async_event(struct sim_ctx *ctx, uint64_t element, uint32_t type,
			 uint32_t *reported, const void *about)
{
	if (handlers.async)
		handlers.async(ctx, element, type, reported, about);
}
