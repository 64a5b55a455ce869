/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Memory regions and windows: the keys through which the device may reach
 * process memory.  Registration checks what pinning would (the range is
 * mapped, writable if the region may be written) and fills the adapter's
 * table; every DMA checks the key, the PD, the access right and the
 * bounds there (adapter/mpt.c).
 */
#include <errno.h>
#include <stdlib.h>

#include "uverbs.h"

#define ACCESS_KNOWN	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
			 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC | \
			 IBV_ACCESS_MW_BIND | IBV_ACCESS_ZERO_BASED | \
			 IBV_ACCESS_HUGETLB)
/* Flags the core knows, for capabilities this device has not. */
#define ACCESS_UNOFFERED (IBV_ACCESS_ON_DEMAND | (1u << 8) | (1u << 9))
/* Flags a device may ignore (relaxed ordering and its neighbours). */
#define ACCESS_OPTIONAL	(((1u << 10) - 1) << 20)
#define ACCESS_WRITES	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
			 IBV_ACCESS_REMOTE_ATOMIC)
#define REREG_TRANS	1
#define REREG_PD	2
#define REREG_ACCESS	4
#define FIRST_MPT	0x80

static int check_access(uint32_t access)
{
	/* Remote writers need local write too (IB spec o10-34). */
	if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & IBV_ACCESS_LOCAL_WRITE))
		return -EINVAL;
	if (access & ~(ACCESS_KNOWN | ACCESS_UNOFFERED | ACCESS_OPTIONAL))
		return -EINVAL;
	/*
	 * ib_check_mr_access: flags the core knows that need a capability
	 * a ConnectX-3 lacks (on-demand paging, the flush rights).
	 */
	if (access & ACCESS_UNOFFERED)
		return -EOPNOTSUPP;
	return 0;
}

/* A fresh key for MPT entry @index; the low byte varies between uses. */
static uint32_t new_key(struct sim_hca *hca, uint32_t index)
{
	return index << 8 | hca->key_tag++;
}

static int mpt_add(struct sim_hca *hca, struct sim_mr *mr)
{
	uint32_t index;

	if (hca->nmrs >= CX3_MAX_MR)
		return -ENOMEM;
	/* Entries below FIRST_MPT are the firmware's. */
	do
		index = hca->next_mpt++ & NUM24_MASK;
	while (index < FIRST_MPT || table_get(&hca->mrs, index));
	if (table_put(&hca->mrs, index, mr))
		return -ENOMEM;
	mr->lkey = mr->rkey = new_key(hca, index);
	mr->hca = hca;
	hca->nmrs++;
	return 0;
}

static void mpt_del(struct sim_mr *mr)
{
	/* The rkey: a window has no lkey, and its binds keep the index. */
	table_del(&mr->hca->mrs, mr->rkey >> 8);
	mr->hca->nmrs--;
}

/*
 * A region's range, in the order ib_umem_get() looks at it: its bounds,
 * whether the process may pin at all (EPERM), a length, the pages it may
 * pin (ENOMEM: with @pinning, once @released pinned pages have gone),
 * then the pages themselves (EFAULT).
 */
static int check_range(struct sim_ctx *ctx, uint64_t start, uint64_t length,
		       uint64_t hca_va, uint32_t access, bool pinning,
		       uint64_t released)
{
	int limit = 0;

	if ((start ^ hca_va) & (SIM_PAGE_SIZE - 1) || start + length < start)
		return -EINVAL;
	if (pinning)
		limit = umem_may_pin(ctx, length ? umem_pages(start, length) : 0,
				     released);
	if (limit == -EPERM)
		return limit;
	if (!length)
		return -EINVAL;
	if (limit)
		return limit;
	if (!dma_range_mapped(ctx->pid, start, length, access & ACCESS_WRITES))
		return -EFAULT;
	return 0;
}

int cmd_reg_mr(struct sim_cmd *cmd)
{
	struct ib_uverbs_reg_mr req;
	struct ib_uverbs_reg_mr_resp resp = {};
	struct sim_pd *pd;
	struct sim_mr *mr;
	int err;

	cmd_in(cmd, &req, sizeof(req));
	pd = uobj_get(cmd->ctx, req.pd_handle, SIM_OBJ_PD);
	if (!pd)
		return -EINVAL;
	err = check_access(req.access_flags);
	if (!err)
		err = check_range(cmd->ctx, req.start, req.length, req.hca_va,
				  req.access_flags, true, 0);
	if (err)
		return err;
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return -ENOMEM;
	err = mpt_add(cmd->ctx->hca, mr);
	if (!err && uobj_add(cmd->ctx, &mr->uobj, SIM_OBJ_MR)) {
		mpt_del(mr);
		err = -ENOMEM;
	}
	if (err) {
		free(mr);
		return err;
	}
	mr->pd = pd;
	pd->users++;
	mr->pid = cmd->ctx->pid;
	mr->addr = req.start;
	mr->iova = req.hca_va;
	mr->length = req.length;
	mr->access = req.access_flags;
	umem_pin(cmd->ctx, &mr->pins, mr->addr, mr->length, false);
	resp.mr_handle = mr->uobj.handle;
	resp.lkey = mr->lkey;
	resp.rkey = mr->rkey;
	cmd_out(cmd, &resp, sizeof(resp));
	return 0;
}

int cmd_rereg_mr(struct sim_cmd *cmd)
{
	struct ib_uverbs_rereg_mr req;
	struct ib_uverbs_rereg_mr_resp resp = {};
	struct sim_pd *pd = NULL;
	uint32_t access;
	struct sim_mr *mr;
	int err;

	cmd_in(cmd, &req, sizeof(req));
	/*
	 * ib_uverbs_rereg_mr: no flags, then flags it does not know
	 * (EOPNOTSUPP), then a new address whose page offset differs from
	 * the new iova, before it looks the region up (uobj_get_write).
	 */
	if (!req.flags)
		return -EINVAL;
	if (req.flags & ~(REREG_TRANS | REREG_PD | REREG_ACCESS))
		return -EOPNOTSUPP;
	if ((req.flags & REREG_TRANS) &&
	    ((req.start ^ req.hca_va) & (SIM_PAGE_SIZE - 1)))
		return -EINVAL;
	mr = uobj_get(cmd->ctx, req.mr_handle, SIM_OBJ_MR);
	if (!mr)
		return uobj_lookup_err(cmd->ctx, req.mr_handle);
	if (mr->windows)
		return -EBUSY;
	access = req.flags & REREG_ACCESS ? req.access_flags : mr->access;
	err = check_access(access);
	if (err)
		return err;
	if (req.flags & REREG_PD) {
		pd = uobj_get(cmd->ctx, req.pd_handle, SIM_OBJ_PD);
		if (!pd)
			return -EINVAL;
	}
	if (req.flags & REREG_TRANS)
		err = check_range(cmd->ctx, req.start, req.length, req.hca_va,
				  access, true, mr->pins.locked);
	else if (access & ~mr->access & ACCESS_WRITES)
		err = check_range(cmd->ctx, mr->addr, mr->length, mr->iova,
				  access, false, 0);
	if (err)
		return err;

	if (req.flags & REREG_TRANS) {
		mr->addr = req.start;
		mr->iova = req.hca_va;
		mr->length = req.length;
		/* mlx4_ib_rereg_user_mr: the old pages go, the new are pinned. */
		umem_unpin(cmd->ctx, &mr->pins);
		umem_pin(cmd->ctx, &mr->pins, mr->addr, mr->length, false);
	}
	if (pd) {
		mr->pd->users--;
		mr->pd = pd;
		pd->users++;
	}
	mr->access = access;
	resp.lkey = mr->lkey;
	resp.rkey = mr->rkey;
	cmd_out(cmd, &resp, sizeof(resp));
	return 0;
}

void mr_release(struct sim_mr *mr)
{
	if (mr->is_mw && mr->parent)
		mr->parent->windows--;
	mr->pd->users--;
	mpt_del(mr);
	umem_unpin(mr->uobj.ctx, &mr->pins);
	uobj_remove(&mr->uobj);
	free(mr);
}

int cmd_dereg_mr(struct sim_cmd *cmd)
{
	struct ib_uverbs_dereg_mr req;
	struct sim_mr *mr;
	int err;

	cmd_in(cmd, &req, sizeof(req));
	mr = uobj_get_destroy(cmd->ctx, req.mr_handle, SIM_OBJ_MR,
			      offsetof(struct sim_mr, windows), &err);
	if (!mr)
		return err;
	mr_release(mr);
	return 0;
}

int cmd_alloc_mw(struct sim_cmd *cmd)
{
	struct ib_uverbs_alloc_mw req;
	struct ib_uverbs_alloc_mw_resp resp = {};
	struct sim_pd *pd;
	struct sim_mr *mw;
	int err;

	cmd_in(cmd, &req, sizeof(req));
	pd = uobj_get(cmd->ctx, req.pd_handle, SIM_OBJ_PD);
	if (!pd || (req.mw_type != IBV_MW_TYPE_1 &&
		    req.mw_type != IBV_MW_TYPE_2))
		return -EINVAL;
	mw = calloc(1, sizeof(*mw));
	if (!mw)
		return -ENOMEM;
	err = mpt_add(cmd->ctx->hca, mw);
	if (!err && uobj_add(cmd->ctx, &mw->uobj, SIM_OBJ_MW)) {
		mpt_del(mw);
		err = -ENOMEM;
	}
	if (err) {
		free(mw);
		return err;
	}
	mw->is_mw = true;
	mw->mw_type = req.mw_type;
	mw->pd = pd;
	pd->users++;
	mw->pid = cmd->ctx->pid;
	mw->lkey = 0;			/* windows have no local key */
	resp.mw_handle = mw->uobj.handle;
	resp.rkey = mw->rkey;
	cmd_out(cmd, &resp, sizeof(resp));
	return 0;
}

int cmd_dealloc_mw(struct sim_cmd *cmd)
{
	struct ib_uverbs_dealloc_mw req;
	struct sim_mr *mw;
	int err;

	cmd_in(cmd, &req, sizeof(req));
	mw = uobj_get_destroy(cmd->ctx, req.mw_handle, SIM_OBJ_MW,
			      UOBJ_NEVER_BUSY, &err);
	if (!mw)
		return err;
	mr_release(mw);
	return 0;
}

/* ------------------------------------------------------------------ */
/* What the device checks on each access                               */
/* ------------------------------------------------------------------ */
