/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Protection domains, XRC domains and address handles: objects that only
 * tie others together.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "uverbs.h"

int cmd_alloc_pd(struct sim_cmd *cmd)
{
	struct ib_uverbs_alloc_pd_resp resp = {};
	struct mlx4_ib_alloc_pd_resp drv = {};
	struct sim_hca *hca = cmd->ctx->hca;
	struct sim_pd *pd;

	if (hca->npds >= CX3_MAX_PD)
		return -ENOMEM;
	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return -ENOMEM;
	if (uobj_add(cmd->ctx, &pd->uobj, SIM_OBJ_PD)) {
		free(pd);
		return -ENOMEM;
	}
	pd->hca = hca;
	pd->pdn = hca->next_pdn++ & NUM24_MASK;
	hca->npds++;
	resp.pd_handle = pd->uobj.handle;
	drv.pdn = pd->pdn;
	cmd_out(cmd, &resp, sizeof(resp));
	cmd_drv_out(cmd, &drv, sizeof(drv));
	return 0;
}

void pd_release(struct sim_pd *pd)
{
	pd->hca->npds--;
	uobj_remove(&pd->uobj);
	free(pd);
}

int cmd_dealloc_pd(struct sim_cmd *cmd)
{
	struct ib_uverbs_dealloc_pd req;
	struct sim_pd *pd;
	int err;

	cmd_in(cmd, &req, sizeof(req));
	pd = uobj_get_destroy(cmd->ctx, req.pd_handle, SIM_OBJ_PD,
			      offsetof(struct sim_pd, users), &err);
	if (!pd)
		return err;
	pd_release(pd);
	return 0;
}

/* ------------------------------------------------------------------ */
/* XRC domains                                                         */
/* ------------------------------------------------------------------ */

struct sim_xrcd *xrcd_get(struct sim_xrcd *xrcd)
{
	xrcd->refs++;
	return xrcd;
}

void xrcd_put(struct sim_xrcd *xrcd)
{
	if (--xrcd->refs)
		return;
	list_del(&xrcd->link);
	free(xrcd);
}

/* The file a descriptor of the process refers to, as the kernel sees it. */
static int fd_inode(pid_t pid, uint32_t fd, dev_t *dev, ino_t *ino)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d/fd/%u", (int)pid, fd);
	if (stat(path, &st))
		return -EBADF;
	*dev = st.st_dev;
	*ino = st.st_ino;
	return 0;
}

static struct sim_xrcd *xrcd_find(dev_t dev, ino_t ino)
{
	struct sim_xrcd *xrcd;

	list_for_each(&sim.xrcds, xrcd, struct sim_xrcd, link)
		if (xrcd->has_inode && xrcd->dev == dev && xrcd->ino == ino)
			return xrcd;
	return NULL;
}

int cmd_open_xrcd(struct sim_cmd *cmd)
{
	struct ib_uverbs_open_xrcd req;
	struct ib_uverbs_open_xrcd_resp resp = {};
	struct sim_xrcd *xrcd = NULL;
	struct sim_xrcd_handle *h;
	dev_t dev = 0;
	ino_t ino = 0;
	int err;

	cmd_in(cmd, &req, sizeof(req));
	if (req.fd != (uint32_t)-1) {
		err = fd_inode(cmd->ctx->pid, req.fd, &dev, &ino);
		if (err)
			return err;
		xrcd = xrcd_find(dev, ino);
		if (!xrcd && !(req.oflags & O_CREAT))
			return -EAGAIN;
		if (xrcd && (req.oflags & O_EXCL))
			return -EINVAL;
	}
	h = calloc(1, sizeof(*h));
	if (!h || uobj_add(cmd->ctx, &h->uobj, SIM_OBJ_XRCD)) {
		free(h);
		return -ENOMEM;
	}
	if (!xrcd) {
		xrcd = calloc(1, sizeof(*xrcd));
		if (!xrcd) {
			uobj_remove(&h->uobj);
			free(h);
			return -ENOMEM;
		}
		xrcd->has_inode = req.fd != (uint32_t)-1;
		xrcd->dev = dev;
		xrcd->ino = ino;
		xrcd->xrcdn = ++sim.next_xrcdn;
		list_add_tail(&sim.xrcds, &xrcd->link);
	}
	h->xrcd = xrcd_get(xrcd);
	resp.xrcd_handle = h->uobj.handle;
	cmd_out(cmd, &resp, sizeof(resp));
	return 0;
}

void xrcd_handle_release(struct sim_xrcd_handle *h)
{
	xrcd_put(h->xrcd);
	uobj_remove(&h->uobj);
	free(h);
}

int cmd_close_xrcd(struct sim_cmd *cmd)
{
	struct ib_uverbs_close_xrcd req;
	struct sim_xrcd_handle *h;
	int err;

	cmd_in(cmd, &req, sizeof(req));
	/* uverbs keeps the handle while SRQs or QPs made through it live. */
	h = uobj_get_destroy(cmd->ctx, req.xrcd_handle, SIM_OBJ_XRCD,
			     offsetof(struct sim_xrcd_handle, users), &err);
	if (!h)
		return err;
	xrcd_handle_release(h);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Address handles (kept for completeness: mlx4 builds IB AHs itself)  */
/* ------------------------------------------------------------------ */

int cmd_create_ah(struct sim_cmd *cmd)
{
	struct ib_uverbs_create_ah req;
	struct ib_uverbs_create_ah_resp resp = {};
	struct sim_pd *pd;
	struct sim_ah *ah;

	cmd_in(cmd, &req, sizeof(req));
	pd = uobj_get(cmd->ctx, req.pd_handle, SIM_OBJ_PD);
	if (!pd || !hca_port(cmd->ctx->hca, req.attr.port_num))
		return -EINVAL;
	ah = calloc(1, sizeof(*ah));
	if (!ah)
		return -ENOMEM;
	if (uobj_add(cmd->ctx, &ah->uobj, SIM_OBJ_AH)) {
		free(ah);
		return -ENOMEM;
	}
	ah->uobj.user_handle = req.user_handle;
	ah->pd = pd;
	ah->path.dlid = req.attr.dlid;
	ah->path.sl = req.attr.sl;
	ah->path.port_num = req.attr.port_num;
	ah->path.is_global = req.attr.is_global;
	memcpy(ah->path.dgid, req.attr.grh.dgid, 16);
	resp.ah_handle = ah->uobj.handle;
	cmd_out(cmd, &resp, sizeof(resp));
	return 0;
}

int cmd_destroy_ah(struct sim_cmd *cmd)
{
	struct ib_uverbs_destroy_ah req;
	struct sim_ah *ah;
	int err;

	cmd_in(cmd, &req, sizeof(req));
	ah = uobj_get_destroy(cmd->ctx, req.ah_handle, SIM_OBJ_AH,
			      UOBJ_NEVER_BUSY, &err);
	if (!ah)
		return err;
	uobj_remove(&ah->uobj);
	free(ah);
	return 0;
}
