/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Packets in flight: the ones `mlx4sim fault delay` holds back for a
 * while and `mlx4sim fault reorder` lets the next packet of the same QP
 * overtake.  Everything else crosses the subnet at once (adapter/req.c).
 *
 * A held packet is handed, when its time comes, to the lander the adapter
 * registered (adapter/req.c, packet_lands): a request reaches its
 * responder and its answer, if any, goes back to the requester, which
 * takes it if it still waits for that PSN; a held answer goes back the
 * same way.  The requester meanwhile runs its ACK timer as for a lost
 * packet, so a delay longer than the timeout shows as a retransmission
 * and then a duplicate.  No one sleeps: the daemon's loop looks at the
 * packets each time it looks at its retry timers.
 */
#include <stdlib.h>
#include <string.h>

#include "fabric.h"
#include "wire.h"

/* A reordered packet that nothing overtakes goes after this long. */
#define REORDER_MAX_NS	(10 * 1000000ULL)
/*
 * The payload of a datagram (UD, UC) is copied when it is sent, as the
 * sender may reuse its buffer once the send completes; a longer UC
 * message held back is lost.  RC payloads stay in the sender's memory,
 * which the device owns until the WQE completes.
 */
#define COPY_MAX	(1u << 20)
/*
 * The switch's buffers: a delay on a flood of datagrams must not take
 * the daemon's memory.  Packets beyond this many in flight are lost.
 */
#define MAX_FLIGHTS	4096

struct flight {
	struct list_node link;
	uint64_t due;
	bool until_next;		/* reordered: goes after the next */
	struct sim_held held;
	struct dma_seg src[CX3_MAX_SGE];
	uint8_t *copy;			/* payload copied at send time */
};

static struct list_node flights = { &flights, &flights };
static unsigned int nflights;

static sim_land_fn *lander;

void flight_set_lander(sim_land_fn *land)
{
	lander = land;
}

/*
 * The payload the held packet carries: a copy of a datagram's (or of
 * inline data, which lives in the WQE), else the sender's segments.
 */
static int take_payload(struct flight *f, const struct sim_message *msg,
			bool datagram)
{
	if (!msg->length)
		return 0;
	if (datagram || msg->inline_data) {
		if (msg->length > COPY_MAX)
			return -1;
		f->copy = malloc(msg->length);
		if (!f->copy)
			return -1;
		if (msg->inline_data)
			memcpy(f->copy, msg->inline_data, msg->length);
		else if (dma_readv(msg->src_pid, msg->src, msg->nsrc, f->copy))
			return -1;
		f->held.msg.inline_data = f->copy;
		return 0;
	}
	memcpy(f->src, msg->src, MIN(msg->nsrc, CX3_MAX_SGE) * sizeof(f->src[0]));
	f->held.msg.src = f->src;
	return 0;
}

/*
 * Hold @msg, from @src to @dst (an answer when @answer, then from the
 * responder @dst back to @src), for @delay_ms, or until the next packet
 * @src sends when @delay_ms is 0.  False when it cannot be held: lost.
 */
bool flight_hold(struct sim_qp *src, struct sim_qp *dst,
		 const struct sim_message *msg, bool answer,
		 enum resp_status status, uint32_t delay_ms)
{
	bool datagram = src->type == IBV_QPT_UD || src->type == IBV_QPT_UC;
	struct flight *f;

	f = nflights < MAX_FLIGHTS ? calloc(1, sizeof(*f)) : NULL;
	if (!f) {
		fault_count_drop();
		return false;
	}
	f->held = (struct sim_held){
		.answer = answer, .status = status,
		.src_hca = src->hca->index, .src_qpn = src->qpn,
		.dst_hca = dst->hca->index, .dst_qpn = dst->qpn, .msg = *msg,
	};
	f->held.msg.src_here = NULL;	/* the sender's pins may go meanwhile */
	f->until_next = !delay_ms;
	f->due = now_ns() + (delay_ms ? delay_ms * 1000000ULL : REORDER_MAX_NS);
	if (!answer && take_payload(f, msg, datagram)) {
		free(f->copy);
		free(f);
		fault_count_drop();
		return false;
	}
	list_add_tail(&flights, &f->link);
	nflights++;
	return true;
}

static void release(struct flight *f)
{
	list_del(&f->link);
	nflights--;
	if (lander)
		lander(&f->held);
	free(f->copy);
	free(f);
}

/* @src sent a packet that overtook the ones it reordered: they go now. */
void flight_passed(const struct sim_qp *src)
{
	struct flight *f, *tmp;

	list_for_each_safe(&flights, f, tmp, struct flight, link)
		if (f->until_next && !f->held.answer &&
		    f->held.src_hca == src->hca->index &&
		    f->held.src_qpn == src->qpn)
			f->due = 0;
}

/*
 * Land what is due, in the order held.  Landing may run a requester,
 * which may hold more packets: each pass starts over.
 */
void flight_run(uint64_t now, uint64_t *deadline)
{
	struct flight *f, *due;

	do {
		due = NULL;
		list_for_each(&flights, f, struct flight, link) {
			if (f->due <= now) {
				due = f;
				break;
			}
		}
		if (due) {
			sim.work_done = true;
			release(due);
		}
	} while (due);
	list_for_each(&flights, f, struct flight, link)
		*deadline = MIN(*deadline, f->due);
}
