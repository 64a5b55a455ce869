/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What `mlx4sim fault` asks, as the kernel would see it happen: a port
 * going down or up (its sysfs state and every context's async event), a
 * QP or the whole adapter failing.  A request for packets (lose,
 * duplicate, reorder, delay) becomes a rule of the fabric's
 * (fabric/fault.c), which each packet meets.  A control connection
 * hands over one request; it is checked field by field, as any
 * client's bytes are.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../host/protocol.h"
#include "kernel.h"

#define MAX_DELAY_MS	60000	/* a minute: longer is a test that hangs */

/* Every context of @hca hears of its port, as mlx4_ib's port events. */
void port_event(struct sim_port *port, uint32_t type)
{
	struct sim_ctx *ctx;

	list_for_each(&sim.ctxs, ctx, struct sim_ctx, link)
		if (ctx->hca == port->hca && ctx->has_ucontext && !ctx->fatal)
			event_post_async(ctx, port->num, type, NULL, NULL);
}

/*
 * A link down, or up again.  Up, a port is ACTIVE again at once under
 * the built-in SM; an external SM finds it in INIT (the switch's trap
 * tells it) and must bring it up, which raises PORT_ACTIVE then.
 */
static void set_port(struct sim_port *port, bool down)
{
	bool was_active = port_active(port);

	if (port->down == down)
		return;
	port->down = down;
	if (!down && sim.opt.external_sm &&
	    port->link_layer == IBV_LINK_LAYER_INFINIBAND)
		port->state = IBV_PORT_INIT;
	sysfs_port_state(port);
	if (was_active != port_active(port))
		port_event(port, down ? IBV_EVENT_PORT_ERR :
					IBV_EVENT_PORT_ACTIVE);
	mad_link_changed(port);
	sim_log("fault: port %d of %s %s", port->num, port->hca->name,
		down ? "down" : "up");
}

static void ports(const struct mlx4sim_fault *f, bool down)
{
	for (int h = 0; h < sim.opt.nhcas; h++) {
		struct sim_hca *hca = &sim.hca[h];

		if ((f->match & MLX4SIM_FAULT_MATCH_HCA) && f->hca != (uint32_t)h)
			continue;
		for (int p = 0; p < hca->nports; p++)
			if (!(f->match & MLX4SIM_FAULT_MATCH_PORT) ||
			    f->port == hca->port[p].num)
				set_port(&hca->port[p], down);
	}
}

/* The QP goes to ERROR with its work flushed, as after a catastrophe. */
static int qp_fatal(const struct mlx4sim_fault *f)
{
	for (int h = 0; h < sim.opt.nhcas; h++) {
		struct sim_qp *qp;

		if ((f->match & MLX4SIM_FAULT_MATCH_HCA) && f->hca != (uint32_t)h)
			continue;
		qp = qp_by_num(&sim.hca[h], f->qpn);
		if (!qp)
			continue;
		if (qp->uobj.ctx)
			event_post_async(qp->uobj.ctx, qp->uobj.user_handle,
					 IBV_EVENT_QP_FATAL,
					 &qp->events_reported, qp);
		qp_to_error(qp);
		sim_log("fault: QP 0x%x fatal", qp->qpn);
		return 0;
	}
	return -ENOENT;
}

/*
 * A catastrophic error of the adapter: mlx4_ib reports DEVICE_FATAL and
 * the device is disassociated from its open files: their objects are
 * gone, every command fails with EIO, and the event files give what they
 * hold, then EIO.  Files opened later reach the adapter as reset.  rdma_cm's
 * ids on it hear DEVICE_REMOVAL, as the reset unregisters the device.
 */
static void fatal(const struct mlx4sim_fault *f)
{
	struct sim_ctx *ctx;

	list_for_each(&sim.ctxs, ctx, struct sim_ctx, link) {
		if (!ctx->hca || ctx->fatal ||
		    ((f->match & MLX4SIM_FAULT_MATCH_HCA) &&
		     f->hca != (uint32_t)ctx->hca->index))
			continue;
		ctx_disassociate(ctx);
		sim_log("fault: %s fatal for process %d", ctx->hca->name,
			(int)ctx->pid);
	}
	/* The reset takes the device away from rdma_cm's ids too. */
	for (int h = 0; h < sim.opt.nhcas; h++)
		if (!(f->match & MLX4SIM_FAULT_MATCH_HCA) || f->hca == (uint32_t)h)
			ucma_device_removal(&sim.hca[h]);
}

static void clear(void)
{
	struct mlx4sim_fault all = { .match = 0 };

	fault_rules_clear();
	ports(&all, false);
}

/* ------------------------------------------------------------------ */
/* The request                                                         */
/* ------------------------------------------------------------------ */

/* Every field as hostile as any client's: -EINVAL unless it all fits. */
static int check(const struct mlx4sim_fault *f)
{
	bool packets = fault_is_packet_kind(f->kind);

	if (f->magic != MLX4SIM_FAULT_MAGIC || f->reserved ||
	    f->kind < MLX4SIM_FAULT_CLEAR || f->kind >= MLX4SIM_FAULT_KIND_END ||
	    (f->match & ~(MLX4SIM_FAULT_MATCH_HCA | MLX4SIM_FAULT_MATCH_PORT |
			  MLX4SIM_FAULT_MATCH_QPN)))
		return -EINVAL;
	if (((f->match & MLX4SIM_FAULT_MATCH_HCA) ? f->hca : 0) != f->hca ||
	    ((f->match & MLX4SIM_FAULT_MATCH_PORT) ? f->port : 0) != f->port ||
	    ((f->match & MLX4SIM_FAULT_MATCH_QPN) ? f->qpn : 0) != f->qpn)
		return -EINVAL;
	if ((f->match & MLX4SIM_FAULT_MATCH_HCA) && f->hca >= (uint32_t)sim.opt.nhcas)
		return -ENODEV;
	if ((f->match & MLX4SIM_FAULT_MATCH_PORT) &&
	    (f->port < 1 || f->port > (uint32_t)sim.opt.nports))
		return -ENXIO;
	if ((f->match & MLX4SIM_FAULT_MATCH_QPN) && f->qpn > NUM24_MASK)
		return -EINVAL;
	if (packets ? (!f->next == !f->rate_ppm || f->rate_ppm > FAULT_PPM) :
		      (f->next || f->rate_ppm))
		return -EINVAL;
	if ((f->kind == MLX4SIM_FAULT_DELAY) !=
	    (f->delay_ms >= 1 && f->delay_ms <= MAX_DELAY_MS) ||
	    (f->kind != MLX4SIM_FAULT_DELAY && f->delay_ms))
		return -EINVAL;
	switch (f->kind) {
	case MLX4SIM_FAULT_RNR:
	case MLX4SIM_FAULT_QP_FATAL:
		if (!(f->match & MLX4SIM_FAULT_MATCH_QPN))
			return -EINVAL;
		break;
	case MLX4SIM_FAULT_PORT_DOWN:
	case MLX4SIM_FAULT_PORT_UP:
	case MLX4SIM_FAULT_FATAL:
	case MLX4SIM_FAULT_CLEAR:
	case MLX4SIM_FAULT_STATUS:
		if (f->match & MLX4SIM_FAULT_MATCH_QPN)
			return -EINVAL;
		if ((f->kind == MLX4SIM_FAULT_CLEAR ||
		     f->kind == MLX4SIM_FAULT_STATUS) && f->match)
			return -EINVAL;
		break;
	default:
		break;
	}
	return 0;
}

/* Only the daemon's own user injects faults. */
static bool same_user(int sock)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	return !getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cred, &len) &&
	       cred.uid == geteuid();
}

/* The request checked, then acted on: 0 or -errno. */
static int act(struct sim_ctx *ctx, const void *payload, size_t len)
{
	struct mlx4sim_fault f;
	int err;

	if (ctx->hca)
		return -EPERM;		/* a device's file, not a control one */
	if (!same_user(ctx->sock))
		return -EACCES;
	if (len != sizeof(f))
		return -EINVAL;
	memcpy(&f, payload, sizeof(f));
	err = check(&f);
	if (err)
		return err;
	ctx->control = true;
	sim.work_done = true;
	switch (f.kind) {
	case MLX4SIM_FAULT_CLEAR:
		clear();
		return 0;
	case MLX4SIM_FAULT_PORT_DOWN:
	case MLX4SIM_FAULT_PORT_UP:
		ports(&f, f.kind == MLX4SIM_FAULT_PORT_DOWN);
		return 0;
	case MLX4SIM_FAULT_QP_FATAL:
		return qp_fatal(&f);
	case MLX4SIM_FAULT_FATAL:
		fatal(&f);
		return 0;
	case MLX4SIM_FAULT_STATUS:
		return 0;
	default:
		return fault_rules_add(&f);
	}
}

/* A FAULT request on @ctx: 0 or -errno, for the reply, and the counts. */
int fault_request(struct sim_ctx *ctx, const void *payload, size_t len,
		  struct mlx4sim_fault_counts *out)
{
	int err = act(ctx, payload, len);

	fault_counts(out);
	return err;
}
