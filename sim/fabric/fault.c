/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Faults on demand: what `mlx4sim fault` asks of the subnet, for tests of
 * error paths.  A control connection (protocol.h) hands over one request;
 * it is checked field by field, as any client's bytes are, and acts at
 * once (events, port states, a QP or an adapter failing) or becomes a
 * rule that the requester and the responder consult for each packet:
 * lose it, send it twice, let the next one overtake it, hold it back.
 *
 * A packet is one message of a QP (a request) or its answer (the ACK,
 * the read data, the atomic's value), whatever number of MTUs it spans.
 * A rule matches the packets a QP sends: the filters name the sending
 * end (its adapter, its port, its QPN), so that `--qpn` of a requester
 * loses requests and `--qpn` of a responder loses the answers.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../host/protocol.h"
#include "../sim.h"

#define MAX_RULES	16
#define MAX_DELAY_MS	60000	/* a minute: longer is a test that hangs */
#define PPM		1000000u

struct fault_rule {
	enum mlx4sim_fault_kind kind;
	uint32_t match;
	uint32_t hca, port, qpn;
	uint32_t next;			/* packets left, or 0: by rate */
	uint32_t rate_ppm;
	uint32_t delay_ms;
};

static struct fault_rule rules[MAX_RULES];
static int nrules;
static struct mlx4sim_fault_counts counts;
/* Fixed seed: a run with --rate is the same run each time. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint32_t rng_ppm(void)
{
	/* xorshift64*: plenty for choosing packets. */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (uint32_t)((rng_state * 0x2545f4914f6cdd1dULL) >> 32) % PPM;
}

static bool is_packet_kind(uint32_t kind)
{
	return kind == MLX4SIM_FAULT_DROP || kind == MLX4SIM_FAULT_DUPLICATE ||
	       kind == MLX4SIM_FAULT_REORDER || kind == MLX4SIM_FAULT_DELAY;
}

static bool rule_matches(const struct fault_rule *r, const struct sim_qp *qp,
			 uint8_t port)
{
	if ((r->match & MLX4SIM_FAULT_MATCH_HCA) &&
	    r->hca != (uint32_t)qp->hca->index)
		return false;
	if ((r->match & MLX4SIM_FAULT_MATCH_PORT) && r->port != port)
		return false;
	if ((r->match & MLX4SIM_FAULT_MATCH_QPN) && r->qpn != qp->qpn)
		return false;
	return true;
}

/* Keep the others in order: the first rule that matches decides. */
static void rule_remove(int i)
{
	memmove(&rules[i], &rules[i + 1], (--nrules - i) * sizeof(rules[0]));
}

/*
 * What happens to the packet @qp sends now, through its port @port: the
 * first rule that matches and fires decides.  A rule of --next N is used
 * up after N packets.
 */
enum fault_action fault_packet(const struct sim_qp *qp, uint8_t port,
			       uint32_t *delay_ms)
{
	for (int i = 0; i < nrules; i++) {
		struct fault_rule *r = &rules[i];
		enum mlx4sim_fault_kind kind = r->kind;

		if (!is_packet_kind(kind) || !rule_matches(r, qp, port))
			continue;
		if (r->next) {
			*delay_ms = r->delay_ms;
			if (!--r->next)
				rule_remove(i);
		} else if (rng_ppm() < r->rate_ppm) {
			*delay_ms = r->delay_ms;
		} else {
			continue;
		}
		switch (kind) {
		case MLX4SIM_FAULT_DROP:
			counts.dropped++;
			return FAULT_DROP;
		case MLX4SIM_FAULT_DUPLICATE:
			counts.duplicated++;
			return FAULT_DUPLICATE;
		case MLX4SIM_FAULT_REORDER:
			counts.reordered++;
			return FAULT_REORDER;
		default:
			counts.delayed++;
			return FAULT_DELAY;
		}
	}
	return FAULT_NONE;
}

/* Whether the receive queue of @qp is to read as empty (RNR). */
bool fault_rnr(const struct sim_qp *qp)
{
	for (int i = 0; i < nrules; i++) {
		if (rules[i].kind == MLX4SIM_FAULT_RNR &&
		    rule_matches(&rules[i], qp, qp->port)) {
			counts.rnr++;
			return true;
		}
	}
	return false;
}

/* A packet lost on a link that is down. */
void fault_count_drop(void)
{
	counts.dropped++;
}

/* ------------------------------------------------------------------ */
/* Faults that act at once                                             */
/* ------------------------------------------------------------------ */

/* Every context of @hca hears of its port, as mlx4_ib's port events. */
static void port_event(struct sim_port *port, uint32_t type)
{
	struct sim_ctx *ctx;

	list_for_each(&sim.ctxs, ctx, struct sim_ctx, link)
		if (ctx->hca == port->hca && ctx->has_ucontext && !ctx->fatal)
			event_post_async(ctx, port->num, type, NULL, NULL);
}

static void set_port(struct sim_port *port, bool down)
{
	if (port->down == down)
		return;
	port->down = down;
	sysfs_port_state(port);
	port_event(port, down ? IBV_EVENT_PORT_ERR : IBV_EVENT_PORT_ACTIVE);
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
 * hold, then EIO.  Files opened later reach the adapter as reset.
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
}

static void clear(void)
{
	struct mlx4sim_fault all = { .match = 0 };

	nrules = 0;
	ports(&all, false);
}

/* ------------------------------------------------------------------ */
/* The request                                                         */
/* ------------------------------------------------------------------ */

/* Every field as hostile as any client's: -EINVAL unless it all fits. */
static int check(const struct mlx4sim_fault *f)
{
	bool packets = is_packet_kind(f->kind);

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
	if (packets ? (!f->next == !f->rate_ppm || f->rate_ppm > PPM) :
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

static int add_rule(const struct mlx4sim_fault *f)
{
	if (nrules == MAX_RULES)
		return -ENOSPC;
	rules[nrules++] = (struct fault_rule){
		.kind = f->kind, .match = f->match, .hca = f->hca,
		.port = f->port, .qpn = f->qpn, .next = f->next,
		.rate_ppm = f->rate_ppm, .delay_ms = f->delay_ms,
	};
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
		return add_rule(&f);
	}
}

/* A FAULT request on @ctx: 0 or -errno, for the reply, and the counts. */
int fault_request(struct sim_ctx *ctx, const void *payload, size_t len,
		  struct mlx4sim_fault_counts *out)
{
	int err = act(ctx, payload, len);

	counts.rules = nrules;
	*out = counts;
	return err;
}
