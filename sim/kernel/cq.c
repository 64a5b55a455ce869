/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Completion queues: the kernel's side (creation, resize, notification
 * requests, destruction).  The device's side, writing CQEs and reading
 * the doorbell record, is adapter/cq.c.
 *
 * The CQ buffer and its doorbell record (set_ci_db, then arm_db) are in the
 * process's memory.  The device owns every entry until it writes a CQE:
 * the owner bit of entry n is valid for software when it equals the pass
 * parity !!(n & nent), so at creation (and in a resize's new buffer) the
 * device marks every entry with the other parity.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "uverbs.h"

#define CQ_CHUNK	(64 * 1024)	/* buffer initialisation, in pieces */

/*
 * Mark entries hardware-owned for a consumer that will next read index
 * @from: entry n (from <= n < from + nent) gets the parity opposite to
 * the one valid at n.
 */
static int init_ownership(pid_t pid, uint64_t buf, uint32_t nent,
			  uint32_t cqe_size, uint32_t from)
{
	static uint8_t chunk[CQ_CHUNK];
	uint32_t per_chunk = CQ_CHUNK / cqe_size;

	for (uint32_t first = 0; first < nent; first += per_chunk) {
		uint32_t count = MIN(per_chunk, nent - first);

		memset(chunk, 0, (size_t)count * cqe_size);
		for (uint32_t i = 0; i < count; i++) {
			uint32_t slot = first + i;
			uint32_t n = from + ((slot - from) & (nent - 1));

			chunk[(i + 1) * cqe_size - 1] =
				n & nent ? 0 : MLX4_CQE_OWNER_MASK;
		}
		if (dma_write(pid, buf + (uint64_t)first * cqe_size, chunk,
			      (size_t)count * cqe_size))
			return -EFAULT;
	}
	return 0;
}

/* mlx4_core gives completions one event queue per online CPU. */
uint32_t hca_comp_vectors(void)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	return cpus > 0 ? cpus : 1;
}

struct cq_params {
	uint64_t user_handle;
	uint32_t cqe;
	uint32_t comp_vector;
	int32_t comp_channel;
	uint32_t flags;
};

static int create_cq(struct sim_cmd *cmd, const struct cq_params *p,
		     struct ib_uverbs_create_cq_resp *resp)
{
	struct sim_ctx *ctx = cmd->ctx;
	struct sim_hca *hca = ctx->hca;
	struct mlx4_ib_create_cq drv;
	struct mlx4_ib_create_cq_resp drv_resp = {};
	struct sim_event_file *channel = NULL;
	uint32_t nent, cqe_size = sim.opt.cqe_size;
	struct sim_cq *cq;
	int err;

	/*
	 * uverbs refuses a vector the device does not have, then a channel
	 * that is not a completion channel's file (ufd_get_read: not open,
	 * or another file, the async one included: EBADF), then mlx4_ib a
	 * size outside 1..max_cqe.
	 */
	if (p->comp_vector >= hca_comp_vectors())
		return -EINVAL;
	if (p->comp_channel >= 0) {
		channel = cmd->arg ? event_file_find(ctx, cmd->arg - 1) : NULL;
		if (!channel || channel->async)
			return -EBADF;
	}
	if (p->cqe < 1 || p->cqe > CX3_MAX_CQE || hca->ncqs >= CX3_MAX_CQ)
		return -EINVAL;
	if (cmd->drv_in_len < sizeof(drv))
		return -EINVAL;
	cmd_drv_in(cmd, &drv, sizeof(drv));
	nent = roundup_pow2(p->cqe + 1);
	err = umem_may_pin_queue(ctx, drv.buf_addr, (uint64_t)nent * cqe_size,
				 drv.db_addr, 8);
	if (err)
		return err;
	err = init_ownership(ctx->pid, drv.buf_addr, nent, cqe_size, 0);
	if (err)
		return err;

	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return -ENOMEM;
	do
		cq->cqn = hca->next_cqn++ & NUM24_MASK;
	while (table_get(&hca->cqs, cq->cqn));
	if (table_put(&hca->cqs, cq->cqn, cq) ||
	    uobj_add(ctx, &cq->uobj, SIM_OBJ_CQ)) {
		table_del(&hca->cqs, cq->cqn);
		free(cq);
		return -ENOMEM;
	}
	hca->ncqs++;
	cq->uobj.user_handle = p->user_handle;
	cq->hca = hca;
	cq->ctx = ctx;
	cq->nent = nent;
	cq->cqe_size = cqe_size;
	cq->buf = drv.buf_addr;
	cq->db = drv.db_addr;
	cq->channel = channel;
	cq->timestamped = p->flags & IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION;
	list_add_tail(&ctx->cqs, &cq->ctx_link);
	umem_pin(ctx, &cq->buf_pins, cq->buf, (uint64_t)nent * cqe_size, true);
	umem_pin_db(ctx, &cq->db_pins, cq->db, 8);

	resp->cq_handle = cq->uobj.handle;
	resp->cqe = nent - 1;
	drv_resp.cqn = cq->cqn;
	cmd_drv_out(cmd, &drv_resp, sizeof(drv_resp));
	return 0;
}

int cmd_create_cq(struct sim_cmd *cmd)
{
	struct ib_uverbs_create_cq req;
	struct ib_uverbs_create_cq_resp resp = {};
	struct cq_params p;
	int err;

	cmd_in(cmd, &req, sizeof(req));
	p = (struct cq_params){ req.user_handle, req.cqe, req.comp_vector,
				req.comp_channel, 0 };
	err = create_cq(cmd, &p, &resp);
	if (!err)
		cmd_out(cmd, &resp, sizeof(resp));
	return err;
}

int cmd_ex_create_cq(struct sim_cmd *cmd)
{
	struct ib_uverbs_ex_create_cq req;
	struct ib_uverbs_ex_create_cq_resp resp = {};
	struct cq_params p;
	int err;

	cmd_in(cmd, &req, sizeof(req));
	if (req.comp_mask || req.reserved ||
	    (req.flags & ~(IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION)))
		return -EINVAL;
	p = (struct cq_params){ req.user_handle, req.cqe, req.comp_vector,
				req.comp_channel, req.flags };
	err = create_cq(cmd, &p, &resp.base);
	if (err)
		return err;
	resp.response_length = MIN(sizeof(resp), cmd->out_cap);
	cmd_out(cmd, &resp, sizeof(resp));
	return 0;
}

int cmd_resize_cq(struct sim_cmd *cmd)
{
	struct ib_uverbs_resize_cq req;
	struct ib_uverbs_resize_cq_resp resp = {};
	struct mlx4_ib_resize_cq drv;
	struct mlx4_err_cqe resize = {};
	struct sim_ctx *ctx = cmd->ctx;
	uint32_t nent;
	struct sim_cq *cq;
	uint8_t owner;
	int err;

	cmd_in(cmd, &req, sizeof(req));
	cq = uobj_get(ctx, req.cq_handle, SIM_OBJ_CQ);
	if (!cq || req.cqe < 1 || req.cqe > CX3_MAX_CQE ||
	    cmd->drv_in_len < sizeof(drv))
		return -EINVAL;
	cmd_drv_in(cmd, &drv, sizeof(drv));
	nent = roundup_pow2(req.cqe + 1);
	if (nent == cq->nent)
		goto out;
	cq_refresh_ci(cq);
	/* Room for what is outstanding, and in the old one for the marker. */
	if (cq_outstanding(cq) + 1 > nent || cq_outstanding(cq) >= cq->nent)
		return -EINVAL;
	/* mlx4_ib_resize_cq: the new ring is pinned before the old goes. */
	err = umem_may_pin_queue(ctx, drv.buf_addr,
				 (uint64_t)nent * cq->cqe_size, 0, 0);
	if (err)
		return err;
	err = init_ownership(ctx->pid, drv.buf_addr, nent, cq->cqe_size,
			     cq->prod + 1);
	if (err)
		return err;

	/*
	 * The RESIZE CQE ends the old buffer: the driver moves what comes
	 * before it into the new one and continues there, one index on.
	 */
	resize.vlan_my_qpn = 0;
	owner = cq->prod & cq->nent ? MLX4_CQE_OWNER_MASK : 0;
	resize.owner_sr_opcode = MLX4_CQE_OPCODE_RESIZE | owner;
	if (dma_write_ordered(ctx->pid, (struct dma_piece[]){
			{ cq_entry_addr(cq, cq->prod), &resize, 31 },
			{ cq_entry_addr(cq, cq->prod) + 31, &resize.owner_sr_opcode, 1 },
		}, 2))
		return -EFAULT;
	cq->prod++;
	cq->buf = drv.buf_addr;
	cq->nent = nent;
	/* mlx4_ib_resize_cq: the old buffer's pages go, the new one's stay. */
	umem_unpin(ctx, &cq->buf_pins);
	umem_pin(ctx, &cq->buf_pins, cq->buf, (uint64_t)nent * cq->cqe_size,
		 true);
out:
	resp.cqe = cq->nent - 1;
	cmd_out(cmd, &resp, sizeof(resp));
	return 0;
}

void cq_release(struct sim_cq *cq)
{
	cq_flush();	/* the batches may hold CQEs of this CQ */
	event_forget(cq->uobj.ctx, cq);
	table_del(&cq->hca->cqs, cq->cqn);
	cq->hca->ncqs--;
	list_del(&cq->ctx_link);
	umem_unpin(cq->ctx, &cq->buf_pins);
	umem_unpin(cq->ctx, &cq->db_pins);
	uobj_remove(&cq->uobj);
	free(cq);
}

int cmd_req_notify_cq(struct sim_cmd *cmd)
{
	struct ib_uverbs_req_notify_cq req;
	struct sim_cq *cq;

	cmd_in(cmd, &req, sizeof(req));
	cq = uobj_get(cmd->ctx, req.cq_handle, SIM_OBJ_CQ);
	if (!cq)
		return -EINVAL;
	cq_arm(cq, req.solicited_only ? CQ_ARMED_SOLICITED : CQ_ARMED_NEXT,
	       cq_read_ci(cq));
	return 0;
}

int cmd_destroy_cq(struct sim_cmd *cmd)
{
	struct ib_uverbs_destroy_cq req;
	struct ib_uverbs_destroy_cq_resp resp = {};
	struct sim_cq *cq;
	int err;

	cmd_in(cmd, &req, sizeof(req));
	cq = uobj_get_destroy(cmd->ctx, req.cq_handle, SIM_OBJ_CQ,
			      offsetof(struct sim_cq, users), &err);
	if (!cq)
		return err;
	resp.comp_events_reported = cq->comp_events_reported;
	resp.async_events_reported = cq->async_events_reported;
	cq_release(cq);
	cmd_out(cmd, &resp, sizeof(resp));
	return 0;
}

int cmd_ex_modify_cq(struct sim_cmd *cmd)
{
	struct ib_uverbs_ex_modify_cq req;

	cmd_in(cmd, &req, sizeof(req));
	/*
	 * ib_uverbs_ex_modify_cq: no attribute or a reserved field, then an
	 * attribute past IB_CQ_MODERATE (EOPNOTSUPP), then the handle.
	 */
	if (!req.attr_mask || req.reserved)
		return -EINVAL;
	if (req.attr_mask > 1)
		return -EOPNOTSUPP;
	if (!uobj_get(cmd->ctx, req.cq_handle, SIM_OBJ_CQ))
		return -EINVAL;
	/* Moderation only delays events; events here are never late. */
	return 0;
}

