/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Faults on demand, as the fabric applies them: the rules that
 * `mlx4sim fault` installs (kernel/fault-request.c checks the request)
 * and that the requester and the responder consult for each packet:
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
#include "fabric.h"

#define MAX_RULES	16

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
	return (uint32_t)((rng_state * 0x2545f4914f6cdd1dULL) >> 32) % FAULT_PPM;
}

bool fault_is_packet_kind(uint32_t kind)
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

		if (!fault_is_packet_kind(kind) || !rule_matches(r, qp, port))
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

int fault_rules_add(const struct mlx4sim_fault *f)
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


void fault_rules_clear(void)
{
	nrules = 0;
}

/* What happened so far, for the reply to every request. */
void fault_counts(struct mlx4sim_fault_counts *out)
{
	counts.rules = nrules;
	*out = counts;
}
