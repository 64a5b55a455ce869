/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The memory protection table as the device consults it: every access
 * through a key checks the key, the PD, the access right and the bounds
 * (mr_check); binding and invalidating a window change an entry from a
 * WQE.  Registration, which fills the table, is the kernel's (kernel/mr.c).
 */
#include "adapter.h"

static bool allows(const struct sim_mr *mr, enum mr_use use)
{
	switch (use) {
	case MR_LOCAL_READ:	return !mr->is_mw;
	case MR_LOCAL_WRITE:	return !mr->is_mw &&
				       (mr->access & IBV_ACCESS_LOCAL_WRITE);
	case MR_REMOTE_READ:	return mr->access & IBV_ACCESS_REMOTE_READ;
	case MR_REMOTE_WRITE:	return mr->access & IBV_ACCESS_REMOTE_WRITE;
	case MR_REMOTE_ATOMIC:	return mr->access & IBV_ACCESS_REMOTE_ATOMIC;
	}
	return false;
}

/*
 * The region @key opens for @len bytes at @va with @use, in @pd; where
 * those bytes are in the owner's memory goes to @addr.  NULL if the key,
 * the PD, the right or the bounds do not allow it.
 */
struct sim_mr *mr_check(struct sim_hca *hca, uint32_t key, struct sim_pd *pd,
			uint64_t va, uint64_t len, enum mr_use use,
			uint64_t *addr)
{
	struct sim_mr *mr = table_get(&hca->mrs, key >> 8);
	bool remote = use >= MR_REMOTE_READ;

	if (!mr || (remote ? mr->rkey : mr->lkey) != key)
		return NULL;
	if (mr->pd != pd || !allows(mr, use))
		return NULL;
	if (mr->is_mw && !mr->bound)
		return NULL;
	if (va < mr->iova || len > mr->length || va - mr->iova > mr->length - len)
		return NULL;
	*addr = mr->addr + (va - mr->iova);
	return mr;
}

/*
 * Bind a window to a region (a BIND_MW work request).  The window is named
 * by the index of its new key; type 1 windows keep their key tag as the
 * provider chose it.  Returns 0 or a CQE syndrome.
 */
int mw_bind(struct sim_qp *qp, uint32_t new_rkey, uint32_t mr_lkey,
	    uint64_t va, uint64_t len, uint32_t access)
{
	struct sim_hca *hca = qp->hca;
	struct sim_mr *mw = table_get(&hca->mrs, new_rkey >> 8);
	struct sim_mr *mr;
	uint64_t addr;

	if (!mw || !mw->is_mw || mw->pd != qp->pd)
		return MLX4_CQE_SYNDROME_MW_BIND_ERR;
	if (mw->mw_type == IBV_MW_TYPE_2 && mw->bound)
		return MLX4_CQE_SYNDROME_MW_BIND_ERR;
	if (len) {
		mr = mr_check(hca, mr_lkey, qp->pd, va, len, MR_LOCAL_READ,
			      &addr);
		if (!mr || !(mr->access & IBV_ACCESS_MW_BIND))
			return MLX4_CQE_SYNDROME_MW_BIND_ERR;
		if ((access & (IBV_ACCESS_REMOTE_WRITE |
			       IBV_ACCESS_REMOTE_ATOMIC)) &&
		    !(mr->access & IBV_ACCESS_LOCAL_WRITE))
			return MLX4_CQE_SYNDROME_MW_BIND_ERR;
	} else {
		mr = NULL;
		addr = 0;
	}
	if (mw->parent)
		mw->parent->windows--;
	mw->parent = mr;
	if (mr)
		mr->windows++;
	mw->rkey = new_rkey;
	mw->iova = access & IBV_ACCESS_ZERO_BASED ? 0 : va;
	mw->addr = addr;
	mw->length = len;
	mw->pid = mr ? mr->pid : mw->pid;
	mw->access = access;
	mw->bound = len != 0;
	return 0;
}

/* Invalidate a type 2 window (LOCAL_INV, SEND_WITH_INV). 0 or syndrome. */
int mw_invalidate(struct sim_hca *hca, struct sim_pd *pd, uint32_t rkey)
{
	struct sim_mr *mw = table_get(&hca->mrs, rkey >> 8);

	if (!mw || !mw->is_mw || mw->rkey != rkey || mw->pd != pd ||
	    mw->mw_type != IBV_MW_TYPE_2)
		return MLX4_CQE_SYNDROME_MW_BIND_ERR;
	if (mw->parent)
		mw->parent->windows--;
	mw->parent = NULL;
	mw->bound = false;
	return 0;
}
