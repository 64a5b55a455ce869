/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libibverbs' verbs_init_cq(), for the cross-built unit tests, which
 * have no libibverbs of their CPU (every other libibverbs function they
 * reach is a stub that aborts: tests/unit/cross.tap).  unit-poll creates CQs
 * through the provider's create_cq_ex, which calls it; what it does is
 * fill in the CQ's verbs fields.
 */
#include <pthread.h>

#include <infiniband/verbs.h>

void verbs_init_cq(struct ibv_cq *cq, struct ibv_context *context,
		   struct ibv_comp_channel *channel, void *cq_context);

void verbs_init_cq(struct ibv_cq *cq, struct ibv_context *context,
		   struct ibv_comp_channel *channel, void *cq_context)
{
	cq->context = context;
	cq->channel = channel;
	cq->cq_context = cq_context;
	cq->comp_events_completed = 0;
	cq->async_events_completed = 0;
	pthread_mutex_init(&cq->mutex, NULL);
	pthread_cond_init(&cq->cond, NULL);
}
