/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Thread domains and parent domains, which live in the provider only.
 *
 * A thread domain (TD) is the application's promise that one thread at
 * a time uses the objects created under it.  A parent domain puts a
 * protection domain together with, optionally, a TD and allocators of
 * queue memory; it is a struct ibv_pd with the PD's handle and number,
 * so the kernel, memory registration and address handles see the PD.
 * QPs, WQs and CQs created on a parent domain with a TD take no lock on
 * the data path (lock.h); QPs, WQs, CQs and SRQs created on one with
 * allocators take their buffers and doorbell records from them (buf.c).
 *
 * Counted references keep the pieces in order: a parent domain holds
 * its PD and its TD, each queue created on it holds the parent domain,
 * and freeing any of them while held fails with EBUSY.
 */
#include <config.h>

#include <errno.h>
#include <stdlib.h>

#include "mlx4.h"

static void hold(unsigned int *users)
{
	__atomic_add_fetch(users, 1, __ATOMIC_RELAXED);
}

static void release(unsigned int *users)
{
	__atomic_sub_fetch(users, 1, __ATOMIC_RELAXED);
}

static int held(unsigned int *users)
{
	return __atomic_load_n(users, __ATOMIC_RELAXED) != 0;
}

/* ---------------------------------------------------------------------
 * Thread domains
 */

struct ibv_td *mlx4_alloc_td(struct ibv_context *context,
			     struct ibv_td_init_attr *attr)
{
	struct mlx4_td *td;

	if (attr->comp_mask) {
		errno = EINVAL;
		return NULL;
	}
	td = calloc(1, sizeof(*td));
	if (!td) {
		errno = ENOMEM;
		return NULL;
	}
	td->ibv_td.context = context;
	return &td->ibv_td;
}

int mlx4_dealloc_td(struct ibv_td *ibtd)
{
	struct mlx4_td *td = to_mtd(ibtd);

	if (held(&td->users))
		return EBUSY;
	free(td);
	return 0;
}

/* ---------------------------------------------------------------------
 * Parent domains
 */

enum {
	MLX4_PARENT_DOMAIN_COMP_MASK = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS |
				       IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT,
};

/* A PD (not a parent domain) and a TD, if any, of @context. */
static int parent_domain_attr_ok(struct ibv_context *context,
				 const struct ibv_parent_domain_init_attr *attr)
{
	if (attr->comp_mask & ~(uint32_t)MLX4_PARENT_DOMAIN_COMP_MASK)
		return 0;
	if (!attr->pd || attr->pd->context != context ||
	    mlx4_is_parent_domain(to_mpd(attr->pd)))
		return 0;
	if (attr->td && attr->td->context != context)
		return 0;
	/* Memory from one must be able to go back through the other. */
	if ((attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS) &&
	    (!attr->alloc || !attr->free))
		return 0;
	return 1;
}

struct ibv_pd *mlx4_alloc_parent_domain(struct ibv_context *context,
					struct ibv_parent_domain_init_attr *attr)
{
	struct mlx4_pd *pd = to_mpd(attr->pd);
	struct mlx4_pd *domain;

	if (!parent_domain_attr_ok(context, attr)) {
		errno = EINVAL;
		return NULL;
	}
	domain = calloc(1, sizeof(*domain));
	if (!domain) {
		errno = ENOMEM;
		return NULL;
	}

	domain->ibv_pd.context = context;
	domain->ibv_pd.handle = pd->ibv_pd.handle;
	domain->pdn = pd->pdn;
	domain->protection_domain = pd;
	hold(&pd->users);
	if (attr->td) {
		domain->td = to_mtd(attr->td);
		hold(&domain->td->users);
	}
	if (attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS) {
		domain->alloc = attr->alloc;
		domain->free = attr->free;
	}
	if (attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT)
		domain->pd_context = attr->pd_context;
	return &domain->ibv_pd;
}

/* ibv_dealloc_pd() of a parent domain: the kernel never knew it. */
int mlx4_dealloc_parent_domain(struct mlx4_pd *domain)
{
	if (held(&domain->users))
		return EBUSY;
	if (domain->td)
		release(&domain->td->users);
	release(&domain->protection_domain->users);
	free(domain);
	return 0;
}

/*
 * The parent domain of a CQ (IBV_CQ_INIT_ATTR_MASK_PD), held, in
 * *@domain; NULL without one.  A PD there is a mistake: EINVAL.
 */
int mlx4_hold_cq_parent_domain(struct ibv_context *context,
			       const struct ibv_cq_init_attr_ex *attr,
			       struct mlx4_pd **domain)
{
	struct ibv_pd *pd = attr->parent_domain;

	*domain = NULL;
	if (!(attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD))
		return 0;
	if (!pd || pd->context != context ||
	    !mlx4_is_parent_domain(to_mpd(pd)))
		return EINVAL;
	*domain = mlx4_hold_parent_domain(pd);
	return 0;
}

/*
 * For a queue created on @pd: the parent domain @pd is, held until
 * mlx4_release_parent_domain(); NULL for a PD (or no PD).
 */
struct mlx4_pd *mlx4_hold_parent_domain(struct ibv_pd *pd)
{
	struct mlx4_pd *domain = pd ? to_mpd(pd) : NULL;

	if (!domain || !mlx4_is_parent_domain(domain))
		return NULL;
	hold(&domain->users);
	return domain;
}

void mlx4_release_parent_domain(struct mlx4_pd *domain)
{
	if (domain)
		release(&domain->users);
}
