/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ib_cm's receive side: a CM MAD that landed on a port, parsed field by
 * field, and what cm.c's handlers do with it in each state of the id it
 * names.  A MAD that names no id, or comes in a state that has no use for
 * it, is dropped as the kernel drops it; one the port cannot take (not a
 * CM MAD of class version 2) likewise.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cm-mad.h"

static const char *attr_name(uint16_t attr_id)
{
	static const char *const names[] = {
		"REQ", "MRA", "REJ", "REP", "RTU", "DREQ", "DREP",
		"SIDR_REQ", "SIDR_REP",
	};

	if (attr_id >= CM_REQ_ATTR_ID && attr_id <= CM_SIDR_REP_ATTR_ID)
		return names[attr_id - CM_REQ_ATTR_ID];
	return "?";
}

/*
 * The trace: "p0 cm mlx4_0/1>mlx4_1/1 REQ mad=HEX" (the whole MAD; the
 * process is the daemon's own, p0, as no process sends it; "lost" when
 * nothing is at the path's end).
 */
void cm_trace_mad(const struct sim_port *from, const struct sim_port *to,
		  const uint8_t *mad)
{
	fprintf(sim_trace, "p0 cm %s/%u>", from->hca->name, from->num);
	if (to)
		fprintf(sim_trace, "%s/%u", to->hca->name, to->num);
	else
		fputs("lost", sim_trace);
	fprintf(sim_trace, " %s mad=", attr_name(mad_get16(mad + MAD_ATTR_ID)));
	for (int i = 0; i < MAD_SIZE; i++)
		fprintf(sim_trace, "%02x", mad[i]);
	fputc('\n', sim_trace);
}

/* ------------------------------------------------------------------ */
/* REQ                                                                 */
/* ------------------------------------------------------------------ */

static uint8_t req_qp_type(const uint8_t *d)
{
	switch ((d[REQ_REMOTE_CM_TIMEOUT] >> 1) & 3) {
	case 0:
		return IBV_QPT_RC;
	case 1:
		return IBV_QPT_UC;
	default:
		return 0;		/* RD, or XRC: not served */
	}
}

/*
 * cm_format_paths_from_req(): the REQ's primary path as the receiver
 * uses it, the sender's local end its remote one.
 */
static void path_from_req(const uint8_t *d, struct sim_port *port,
			  uint8_t gid_type, struct cm_path *p)
{
	uint8_t timeout = d[REQ_PRIMARY_ACK_TIMEOUT] >> 3;

	memset(p, 0, sizeof(*p));
	p->port = port;
	p->dlid = mad_get16(d + REQ_PRIMARY_LOCAL_LID);
	p->slid = mad_get16(d + REQ_PRIMARY_REMOTE_LID);
	memcpy(p->dgid, d + REQ_PRIMARY_LOCAL_GID, 16);
	memcpy(p->sgid, d + REQ_PRIMARY_REMOTE_GID, 16);
	p->flow_label = mad_get32(d + REQ_PRIMARY_FLOW_LABEL) >> 12;
	p->rate = d[REQ_PRIMARY_FLOW_LABEL + 3] & 0x3f;
	p->traffic_class = d[REQ_PRIMARY_TRAFFIC_CLASS];
	p->hop_limit = d[REQ_PRIMARY_HOP_LIMIT];
	p->sl = d[REQ_PRIMARY_SL] >> 4;
	p->grh = !(d[REQ_PRIMARY_SL] & 8) ||
		 port->link_layer == IBV_LINK_LAYER_ETHERNET;
	p->packet_life_time = timeout - (timeout > 0);
	p->mtu = d[REQ_PATH_MTU] >> 4;
	p->pkey = mad_get16(d + REQ_PKEY);
	p->gid_type = gid_type;
}

/*
 * cm_dup_req_handler(): a REQ already taken, sent again.  Ignored while
 * rdma_cm has not reported it; an MRA once it has (the process takes its
 * time to accept); a REJ, stale connection, from an id in timewait.
 */
static bool req_duplicate(struct cm_wire *w, const uint8_t *d)
{
	struct cm_id *cm = cm_find_remote(mad_get32(d + REQ_LOCAL_COMM_ID),
					  mad_get64(d + REQ_LOCAL_CA_GUID));
	uint8_t mad[MAD_SIZE];

	if (!cm)
		return false;
	if (cm->state == CM_MRA_REQ_SENT) {
		cm_mra_mad(mad, cm);
		cm_wire_reply(w, mad);
	} else if (cm->state == CM_TIMEWAIT) {
		cm_rej_mad(mad, cm->tid, cm->local_id, cm->remote_id,
			   CM_MSG_OTHER, CM_REJ_STALE_CONN);
		cm_wire_reply(w, mad);
	}
	return true;
}

static void req_reply_rej(struct cm_wire *w, const uint8_t *d,
			  uint16_t reason)
{
	uint8_t mad[MAD_SIZE];

	cm_rej_mad(mad, mad_get64(w->mad + MAD_TID), 0, mad_get32(d + REQ_LOCAL_COMM_ID),
		   CM_MSG_REQ, reason);
	cm_wire_reply(w, mad);
}

static void req_info(const struct cm_id *cm, const uint8_t *d,
		     struct cm_req_info *req)
{
	memset(req, 0, sizeof(*req));
	req->port = cm->av.port;
	req->service_id = cm->service_id;
	req->private_data = d + REQ_PRIVATE_DATA;
	req->path = cm->av;
	req->remote_qpn = cm->remote_qpn;
	req->responder_resources = cm->responder_resources;
	req->initiator_depth = cm->initiator_depth;
	req->retry_count = cm->retry_count;
	req->rnr_retry_count = cm->rnr_retry_count;
	req->flow_control = d[REQ_REMOTE_CM_TIMEOUT] & 1;
	req->srq = cm->srq;
	req->qp_type = cm->qp_type;
	req->pkey = cm->pkey;
}

static void sidr_reply(struct cm_wire *w, const uint8_t *d, uint8_t status);

/*
 * The id of a REQ or SIDR_REQ for @service_id; NULL when nothing listens
 * for it on the port's adapter (a REJ, or a SIDR_REP, says so) or no
 * memory is left (the sender tries again).
 */
static struct cm_id *request_id(struct cm_wire *w, const uint8_t *d,
				uint64_t service_id, bool sidr)
{
	if (cma_has_listener(w->to, service_id))
		return cm_new(NULL);
	if (sidr)
		sidr_reply(w, d, CM_SIDR_UNSUPPORTED);
	else
		req_reply_rej(w, d, CM_REJ_INVALID_SERVICE_ID);
	return NULL;
}

/* cm_req_handler(): a listener's, or a REJ that says there is none. */
static void recv_req(struct cm_wire *w, const uint8_t *d)
{
	uint64_t service_id = mad_get64(d + REQ_SERVICE_ID);
	struct cm_req_info req;
	struct cm_id *cm;

	if (req_duplicate(w, d))
		return;
	cm = request_id(w, d, service_id, false);
	if (!cm)
		return;
	path_from_req(d, w->to, w->gid_type, &cm->av);
	cm->remote_id = mad_get32(d + REQ_LOCAL_COMM_ID);
	cm->remote_ca_guid = mad_get64(d + REQ_LOCAL_CA_GUID);
	cm->service_id = service_id;
	cm->tid = mad_get64(w->mad + MAD_TID);
	cm->qp_type = req_qp_type(d);
	cm->remote_qpn = cm_get24(d + REQ_LOCAL_QPN);
	cm->initiator_depth = d[REQ_RESPONDER_RESOURCES];
	cm->responder_resources = d[REQ_INITIATOR_DEPTH];
	cm->sq_psn = cm_get24(d + REQ_STARTING_PSN);
	cm->retry_count = d[REQ_LOCAL_CM_TIMEOUT] & 7;
	cm->rnr_retry_count = d[REQ_PATH_MTU] & 7;
	cm->srq = (d[REQ_MAX_CM_RETRIES] >> 3) & 1;
	cm->path_mtu = cm->av.mtu;
	cm->pkey = cm->av.pkey;
	cm->ack_timeout = cm_ack_timeout(CM_CA_ACK_DELAY,
					 cm->av.packet_life_time);
	cm->state = CM_REQ_RCVD;
	req_info(cm, d, &req);
	cma_req_received(cm, &req);
}

/* ------------------------------------------------------------------ */
/* REP, RTU, REJ                                                       */
/* ------------------------------------------------------------------ */

/* cm_rep_handler(): the passive side's answer to our REQ. */
static void recv_rep(const uint8_t *d)
{
	struct cm_id *cm = cm_find(mad_get32(d + REP_REMOTE_COMM_ID));

	if (!cm || (cm->state != CM_REQ_SENT && cm->state != CM_MRA_REQ_RCVD))
		return;			/* a duplicate REP, or a stray */
	timer_cancel(&cm->timer);
	cm->remote_id = mad_get32(d + REP_LOCAL_COMM_ID);
	cm->remote_ca_guid = mad_get64(d + REP_LOCAL_CA_GUID);
	cm->remote_qpn = cm_get24(d + REP_LOCAL_QPN);
	cm->sq_psn = cm_get24(d + REP_STARTING_PSN);
	cm->initiator_depth = d[REP_RESPONDER_RESOURCES];
	cm->responder_resources = d[REP_INITIATOR_DEPTH];
	cm->rnr_retry_count = d[REP_RNR_RETRY_COUNT] >> 5;
	cm->srq = (d[REP_RNR_RETRY_COUNT] >> 4) & 1;
	cm->state = CM_REP_RCVD;
	if (cm->owner)
		cma_rep_received(cm->owner, d);
}

/*
 * cm_mra_handler(), for our REQ: the passive side needs time; the REQ
 * waits for its answer the service timeout asked for plus the path's
 * ACK timeout (ib_modify_mad()), then is sent again as before.
 */
static void recv_mra(const uint8_t *d)
{
	struct cm_id *cm = cm_find(mad_get32(d + MRA_REMOTE_COMM_ID));
	uint64_t ms;

	if (!cm || d[MRA_MESSAGE_MRAED] >> 6 != CM_MSG_REQ ||
	    cm->state != CM_REQ_SENT)
		return;			/* a duplicate MRA, or a stray */
	ms = cm_iba_time_ms(d[MRA_SERVICE_TIMEOUT] >> 3) +
	     cm_iba_time_ms(cm->av.packet_life_time + 1);
	cm->state = CM_MRA_REQ_RCVD;
	cm->timeout_ns = ms * 1000000ull;
	timer_arm(&cm->timer, cm->timeout_ns);
}

/* cm_rtu_handler(): the connection is up on the passive side. */
static void recv_rtu(const uint8_t *d)
{
	struct cm_id *cm = cm_find(mad_get32(d + 4));

	if (!cm || cm->remote_id != mad_get32(d + 0) || cm->state != CM_REP_SENT)
		return;
	timer_cancel(&cm->timer);
	cm->state = CM_ESTABLISHED;
	if (cm->owner)
		cma_cm_event(cm->owner, CMA_EV_ESTABLISHED, 0, NULL, 0);
}

/*
 * cm_rej_handler(): the request or reply refused.  A REJ answering a REQ
 * names us only by its remote comm id (the sender may have no id of its
 * own, as when nothing listens).
 */
static void recv_rej(const uint8_t *d)
{
	struct cm_id *cm = cm_find(mad_get32(d + REJ_REMOTE_COMM_ID));
	uint16_t reason = mad_get16(d + REJ_REASON);

	/* cm_acquire_rejected_id(): a timed-out REQ's sender, by its CA. */
	if (!cm && reason == CM_REJ_TIMEOUT && d[REJ_INFO_LENGTH] >> 1 >= 8)
		cm = cm_find_remote(mad_get32(d + REJ_LOCAL_COMM_ID),
				    mad_get64(d + REJ_ARI));
	if (!cm)
		return;
	switch (cm->state) {
	case CM_REQ_SENT:
	case CM_MRA_REQ_RCVD:
	case CM_REP_SENT:
		timer_cancel(&cm->timer);
		/* fall through */
	case CM_REQ_RCVD:
	case CM_MRA_REQ_SENT:
		cm->state = CM_IDLE;
		break;
	case CM_DREQ_SENT:
		timer_cancel(&cm->timer);
		/* fall through */
	case CM_REP_RCVD:
	case CM_ESTABLISHED:
		cm_enter_timewait(cm);
		break;
	default:
		return;
	}
	if (cm->owner)
		cma_cm_event(cm->owner, CMA_EV_REJECTED, reason,
			     d + REJ_PRIVATE_DATA, CM_REJ_PRIVATE_SIZE);
}

/* ------------------------------------------------------------------ */
/* DREQ, DREP                                                          */
/* ------------------------------------------------------------------ */

static void resend_drep(struct cm_id *cm)
{
	uint8_t mad[MAD_SIZE], *d = mad + MAD_HDR_LEN;

	cm_mad_header(mad, CM_DREP_ATTR_ID, cm->tid);
	mad_put32(d + 0, cm->local_id);
	mad_put32(d + 4, cm->remote_id);
	cm_send(cm, mad);
}

/* cm_dreq_handler(): the peer disconnects. */
static void recv_dreq(struct cm_wire *w, const uint8_t *d)
{
	struct cm_id *cm = cm_find(mad_get32(d + DREQ_REMOTE_COMM_ID));

	if (!cm || cm->remote_id != mad_get32(d + DREQ_LOCAL_COMM_ID) ||
	    cm->local_qpn != cm_get24(d + DREQ_REMOTE_QPN))
		return;
	switch (cm->state) {
	case CM_REP_SENT:
	case CM_DREQ_SENT:
		timer_cancel(&cm->timer);
		break;
	case CM_ESTABLISHED:
		break;
	case CM_TIMEWAIT:
		cm->tid = mad_get64(w->mad + MAD_TID);
		resend_drep(cm);	/* our DREP was lost */
		return;
	default:
		return;
	}
	cm->tid = mad_get64(w->mad + MAD_TID);
	cm->state = CM_DREQ_RCVD;
	if (cm->owner)
		cma_cm_event(cm->owner, CMA_EV_DISCONNECTED, 0,
			     d + DREQ_PRIVATE_DATA, CM_DREQ_PRIVATE_SIZE);
	else
		cm_send_drep(cm);
}

/* cm_drep_handler(): our DREQ answered. */
static void recv_drep(const uint8_t *d)
{
	struct cm_id *cm = cm_find(mad_get32(d + 4));

	if (!cm || cm->remote_id != mad_get32(d + 0))
		return;
	if (cm->state != CM_DREQ_SENT && cm->state != CM_DREQ_RCVD)
		return;
	timer_cancel(&cm->timer);
	cm_enter_timewait(cm);
	if (cm->owner)
		cma_cm_event(cm->owner, CMA_EV_DISCONNECTED, 0,
			     d + DREP_PRIVATE_DATA, CM_DREP_PRIVATE_SIZE);
}

/* ------------------------------------------------------------------ */
/* SIDR                                                                */
/* ------------------------------------------------------------------ */

static void sidr_reply(struct cm_wire *w, const uint8_t *d, uint8_t status)
{
	uint8_t mad[MAD_SIZE], *r = mad + MAD_HDR_LEN;

	cm_mad_header(mad, CM_SIDR_REP_ATTR_ID, mad_get64(w->mad + MAD_TID));
	mad_put32(r + SIDR_REP_REQUEST_ID, mad_get32(d + SIDR_REQ_REQUEST_ID));
	r[SIDR_REP_STATUS] = status;
	mad_put64(r + SIDR_REP_SERVICE_ID, mad_get64(d + SIDR_REQ_SERVICE_ID));
	cm_wire_reply(w, mad);
}

/*
 * cm_sidr_req_handler(): a UD id's question.  The answer goes back to the
 * port it came from, as the kernel answers by the work completion.
 */
static void recv_sidr_req(struct cm_wire *w, const uint8_t *d)
{
	uint64_t service_id = mad_get64(d + SIDR_REQ_SERVICE_ID);
	struct cm_req_info req;
	struct cm_id *cm;

	cm = request_id(w, d, service_id, true);
	if (!cm)
		return;
	cm->av.port = w->to;
	cm->reply_to = w->from;
	cm->av.gid_type = w->gid_type;
	memcpy(cm->av.sgid, w->dgid, 16);
	memcpy(cm->av.dgid, w->sgid, 16);
	cm->remote_id = mad_get32(d + SIDR_REQ_REQUEST_ID);
	cm->service_id = service_id;
	cm->tid = mad_get64(w->mad + MAD_TID);
	cm->qp_type = IBV_QPT_UD;
	cm->pkey = mad_get16(d + SIDR_REQ_PKEY);
	cm->state = CM_SIDR_REQ_RCVD;
	memset(&req, 0, sizeof(req));
	req.port = w->to;
	req.service_id = service_id;
	req.private_data = d + SIDR_REQ_PRIVATE_DATA;
	req.qp_type = IBV_QPT_UD;
	req.pkey = cm->pkey;
	cma_sidr_req_received(cm, &req);
}

/* cm_sidr_rep_handler(): the answer to our SIDR_REQ. */
static void recv_sidr_rep(const uint8_t *d)
{
	struct cm_id *cm = cm_find(mad_get32(d + SIDR_REP_REQUEST_ID));

	if (!cm || cm->state != CM_SIDR_REQ_SENT)
		return;
	timer_cancel(&cm->timer);
	cm->state = CM_IDLE;
	if (cm->owner)
		cma_sidr_rep_received(cm->owner, d[SIDR_REP_STATUS],
				      cm_get24(d + SIDR_REP_QPN),
				      mad_get32(d + SIDR_REP_QKEY),
				      d + SIDR_REP_PRIVATE_DATA);
}

/* ------------------------------------------------------------------ */
/* cm_recv_handler()                                                   */
/* ------------------------------------------------------------------ */

void cm_recv(struct cm_wire *w)
{
	const uint8_t *d = w->mad + MAD_HDR_LEN;

	if (w->mad[MAD_CLASS] != MAD_CLASS_CM ||
	    w->mad[MAD_CLASS_VERSION] != CM_CLASS_VERSION)
		return;
	switch (mad_get16(w->mad + MAD_ATTR_ID)) {
	case CM_REQ_ATTR_ID:
		recv_req(w, d);
		break;
	case CM_MRA_ATTR_ID:
		recv_mra(d);
		break;
	case CM_REP_ATTR_ID:
		recv_rep(d);
		break;
	case CM_RTU_ATTR_ID:
		recv_rtu(d);
		break;
	case CM_REJ_ATTR_ID:
		recv_rej(d);
		break;
	case CM_DREQ_ATTR_ID:
		recv_dreq(w, d);
		break;
	case CM_DREP_ATTR_ID:
		recv_drep(d);
		break;
	case CM_SIDR_REQ_ATTR_ID:
		recv_sidr_req(w, d);
		break;
	case CM_SIDR_REP_ATTR_ID:
		recv_sidr_rep(d);
		break;
	default:
		break;			/* LAP, APR: never sent here */
	}
}
