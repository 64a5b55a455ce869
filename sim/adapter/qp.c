/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The device's side of a queue pair: its entry in the adapter's QP
 * table, and the state changes the device makes on its own (a send
 * error on an unreliable QP, an error that takes the QP to ERROR).  The
 * verbs state machine the kernel runs on modify_qp is in kernel/qp.c.
 */
#include "adapter.h"

/*
 * The states in which the device runs a send queue (RTS; SQD and SQE to
 * drain or flush it) or flushes receives (ERROR).  In the others a
 * doorbell starts nothing, so while no QP is in one the daemon need not
 * look at the doorbell pages often: only a command can change that, and
 * a command wakes it.
 */
static bool active_state(enum ibv_qp_state state)
{
	return state == IBV_QPS_RTS || state == IBV_QPS_SQD ||
	       state == IBV_QPS_SQE || state == IBV_QPS_ERR;
}

/* Every change of a QP's state, so that sim.active_qps counts them. */
void qp_set_state(struct sim_qp *qp, enum ibv_qp_state next)
{
	sim.active_qps += active_state(next);
	sim.active_qps -= active_state(qp->state);
	qp->state = next;
}

/*
 * A send error on a UD or UC QP (the IB specification's unreliable
 * types; an RC or XRC QP goes to ERROR): the send queue stops and its
 * WQEs, and those posted later, complete flushed; the receive queue
 * works on, and the QP may be modified back to RTS.
 */
void qp_to_sqe(struct sim_qp *qp)
{
	req_stop_waiting(qp);
	qp_set_state(qp, IBV_QPS_SQE);
	wire_flush(qp);		/* the WQEs on the wire are older */
	comp_flush_sq(qp);
}

void qp_to_error(struct sim_qp *qp)
{
	if (qp->state == IBV_QPS_ERR)
		return;
	req_stop_waiting(qp);
	qp_set_state(qp, IBV_QPS_ERR);
	wire_flush(qp);		/* the WQEs on the wire are older */
	comp_flush_sq(qp);
	comp_flush_rq(qp);
	/* Receives posted later are flushed too: keep an eye on the RQ. */
	list_add_tail(&sim.error_qps, &qp->error_link);
	if (qp->srq)
		adapter_async_event(qp->uobj.ctx, qp->uobj.user_handle,
				    IBV_EVENT_QP_LAST_WQE_REACHED,
				    &qp->events_reported, qp);
}

/*
 * The QP goes to the error state at the next cq_settle(), not now: a CQE
 * batch's flush found that it could not write a receive's data.
 */
void qp_fail_later(struct sim_qp *qp)
{
	if (!list_empty(&qp->fail_link) || qp->state == IBV_QPS_ERR ||
	    qp->state == IBV_QPS_RESET)	/* reset since: nothing to fail */
		return;
	list_add_tail(&sim.failing_qps, &qp->fail_link);
}

/* The QPs qp_fail_later() named to the error state; whether there were. */
bool qp_fail_pending(void)
{
	bool any = !list_empty(&sim.failing_qps);

	while (!list_empty(&sim.failing_qps)) {
		struct sim_qp *qp = list_entry(sim.failing_qps.next,
					       struct sim_qp, fail_link);

		list_del(&qp->fail_link);
		qp_to_error(qp);
	}
	return any;
}
