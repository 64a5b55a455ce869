/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ib_cm (drivers/infiniband/core/cm.c): the communication manager's MADs
 * between ports, and each communication id's states.
 *
 * Messages are CM MADs laid out as IBTA volume 1 chapter 12 has them
 * (the kernel's ibta_vol1_c12.h gives the same offsets), built whole and
 * sent on the fabric: the trace shows each, and it reaches the port the
 * path names on the next pass of the loop, where it is parsed back, so
 * nothing passes between the two ends but the MAD.  A REQ, REP, DREQ or
 * SIDR_REQ waits for its answer for the kernel's timeout and is sent
 * again, max_cm_retries times (a full listener's backlog drops REQs, as
 * the kernel's does); a connection that ends waits out timewait, then
 * the id hears TIMEWAIT_EXIT.  The states and what each message does in
 * each are cm.c's, without MRA, LAP and APR (the simulator never delays
 * an answer or migrates a path) and without the stale-connection checks
 * (no two ends reuse a communication id: ids are the daemon's).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cma.h"
#include "cm-mad.h"

static struct sim_table cm_ids;		/* local comm id -> struct cm_id */
static struct list_node all_ids = LIST_INIT(all_ids);
static uint32_t next_local_id;
static uint64_t next_tid;

/* cm_convert_to_ms(): 4.096 us << iba_time, in ms, rounded as cm.c. */
uint64_t cm_iba_time_ms(uint8_t iba_time)
{
	return 1ull << (iba_time > 8 ? iba_time - 8 : 0);
}

/* cm_ack_timeout(): the QP's timeout from the CA's ACK delay and the path. */
uint8_t cm_ack_timeout(uint8_t ca_ack_delay, uint8_t packet_life_time)
{
	int timeout = packet_life_time + 1;

	if (timeout >= ca_ack_delay)
		timeout += ca_ack_delay >= (timeout - 1);
	else
		timeout = ca_ack_delay + (timeout >= ca_ack_delay - 1);
	return MIN(31, timeout);
}

/* ------------------------------------------------------------------ */
/* Ids                                                                 */
/* ------------------------------------------------------------------ */

static void cm_timeout(struct sim_timer *timer);

struct cm_id *cm_new(struct cma_id *owner)
{
	struct cm_id *cm = calloc(1, sizeof(*cm));

	if (!cm)
		return NULL;
	/* Numbered as the kernel's (a counter under a random operand). */
	do
		cm->local_id = (next_local_id++ ^ 0x5a3c0000u) | 1;
	while (table_get(&cm_ids, cm->local_id));
	if (table_put(&cm_ids, cm->local_id, cm)) {
		free(cm);
		return NULL;
	}
	cm->owner = owner;
	cm->timer.fire = cm_timeout;
	list_add_tail(&all_ids, &cm->link);
	return cm;
}

void cm_free(struct cm_id *cm)
{
	timer_cancel(&cm->timer);
	table_del(&cm_ids, cm->local_id);
	list_del(&cm->link);
	free(cm);
}

struct cm_id *cm_find(uint32_t local_id)
{
	return local_id ? table_get(&cm_ids, local_id) : NULL;
}

/* The id that took a REQ of this remote id and CA (cm_insert_remote_id). */
struct cm_id *cm_find_remote(uint32_t remote_id, uint64_t remote_ca_guid)
{
	struct cm_id *cm;

	list_for_each(&all_ids, cm, struct cm_id, link)
		if (cm->remote_id == remote_id &&
		    cm->remote_ca_guid == remote_ca_guid &&
		    cm->state != CM_IDLE)
			return cm;
	return NULL;
}

/* ------------------------------------------------------------------ */
/* The fabric                                                          */
/* ------------------------------------------------------------------ */

static void wire_land(struct sim_timer *timer)
{
	struct cm_wire *w = container_of(timer, struct cm_wire, timer);

	sim.work_done = true;
	cm_recv(w);
	free(w);
}

/*
 * The port a path leads to: by LID on InfiniBand, by GID on Ethernet
 * (the kernel resolved the MAC from it).  NULL: nothing there, and the
 * MAD is lost.
 */
static struct sim_port *path_target(const struct cm_path *path)
{
	if (path->port->link_layer == IBV_LINK_LAYER_ETHERNET)
		return port_by_gid(path->dgid);
	return port_by_lid(path->dlid);
}

void cm_wire_send(struct sim_port *from, struct sim_port *to,
		  uint8_t gid_type, const uint8_t *sgid, const uint8_t *dgid,
		  const uint8_t *mad)
{
	struct cm_wire *w;

	if (sim_trace)
		cm_trace_mad(from, to, mad);
	if (!to || !port_active(from) || !port_active(to))
		return;			/* lost: its sender's timer will tell */
	port_count(from, to, MAD_SIZE, 1);	/* the PMA's, as any GMP */
	if (from->link_layer == IBV_LINK_LAYER_ETHERNET)
		pcap_mad(from, to, sgid, dgid,
			 gid_type == IBV_GID_TYPE_ROCE_V2, mad, MAD_SIZE);
	w = calloc(1, sizeof(*w));
	if (!w)
		return;
	w->from = from;
	w->to = to;
	w->gid_type = gid_type;
	memcpy(w->sgid, sgid, 16);
	memcpy(w->dgid, dgid, 16);
	memcpy(w->mad, mad, MAD_SIZE);
	w->timer.fire = wire_land;
	timer_arm(&w->timer, 0);
}

void cm_send(struct cm_id *cm, const uint8_t *mad)
{
	struct sim_port *to = cm->reply_to ? cm->reply_to :
					     path_target(&cm->av);

	cm_wire_send(cm->av.port, to, cm->av.gid_type, cm->av.sgid,
		     cm->av.dgid, mad);
}

/* An answer to a MAD that names no id of ours: back the way it came. */
void cm_wire_reply(const struct cm_wire *w, const uint8_t *mad)
{
	cm_wire_send(w->to, w->from, w->gid_type, w->dgid, w->sgid, mad);
}

/*
 * A MAD that wants an answer: kept, and sent again at each timeout until
 * its retries are spent (cm_process_send_error then tells the id).
 */
static void cm_send_waiting(struct cm_id *cm, const uint8_t *mad,
			    uint64_t timeout_ms)
{
	memcpy(cm->mad, mad, MAD_SIZE);
	cm->retries_left = CMA_MAX_CM_RETRIES;
	cm->timeout_ns = timeout_ms * 1000000ull;
	cm_send(cm, mad);
	timer_arm(&cm->timer, cm->timeout_ns);
}

/* ------------------------------------------------------------------ */
/* States                                                              */
/* ------------------------------------------------------------------ */

static void cm_timewait_exit(struct cm_id *cm)
{
	struct cma_id *owner = cm->owner;

	cm->state = CM_IDLE;
	if (!owner) {
		cm_free(cm);		/* its id went: it only waited */
		return;
	}
	cma_timewait_exit(owner);
}

/*
 * cm_enter_timewait(): the connection's QPs may still hear late packets
 * for about the time of one ACK timeout; then the id is IDLE again.
 */
void cm_enter_timewait(struct cm_id *cm)
{
	cm->state = CM_TIMEWAIT;
	cm->timeout_ns = cm_iba_time_ms(cm->ack_timeout) * 1000000ull;
	cm->retries_left = 0;
	timer_arm(&cm->timer, cm->timeout_ns);
}

/* A waiting MAD's retries are spent: what cm_process_send_error() says. */
static void cm_send_error(struct cm_id *cm)
{
	switch (cm->state) {
	case CM_REQ_SENT:
	case CM_MRA_REQ_RCVD:
	case CM_REP_SENT:
		cm->state = CM_IDLE;
		if (cm->owner)
			cma_cm_event(cm->owner, CMA_EV_UNREACHABLE, -ETIMEDOUT,
				     NULL, 0);
		break;
	case CM_DREQ_SENT:
		cm_enter_timewait(cm);
		if (cm->owner)
			cma_cm_event(cm->owner, CMA_EV_DISCONNECTED, -ETIMEDOUT,
				     NULL, 0);
		break;
	case CM_SIDR_REQ_SENT:
		cm->state = CM_IDLE;
		if (cm->owner)
			cma_sidr_rep_received(cm->owner, 0xff, 0, 0, NULL);
		break;
	default:
		break;
	}
}

static void cm_timeout(struct sim_timer *timer)
{
	struct cm_id *cm = container_of(timer, struct cm_id, timer);

	if (cm->state == CM_TIMEWAIT) {
		cm_timewait_exit(cm);
		return;
	}
	if (cm->retries_left-- <= 0) {
		cm_send_error(cm);
		return;
	}
	cm_send(cm, cm->mad);
	timer_arm(&cm->timer, cm->timeout_ns);
}

/* ------------------------------------------------------------------ */
/* Sending                                                             */
/* ------------------------------------------------------------------ */

void cm_mad_header(uint8_t *mad, uint16_t attr_id, uint64_t tid)
{
	memset(mad, 0, MAD_SIZE);
	mad[MAD_BASE_VERSION] = 1;
	mad[MAD_CLASS] = MAD_CLASS_CM;
	mad[MAD_CLASS_VERSION] = CM_CLASS_VERSION;
	mad[MAD_METHOD] = MAD_METHOD_SEND;
	mad_put64(mad + MAD_TID, tid);
	mad_put16(mad + MAD_ATTR_ID, attr_id);
}

static uint64_t new_tid(const struct cm_id *cm)
{
	return (++next_tid << 32) | cm->local_id;
}

/* The REQ's primary path: the sender's view of it (cm_format_req). */
static void req_path(uint8_t *d, const struct cm_id *cm)
{
	const struct cm_path *p = &cm->av;

	mad_put16(d + REQ_PRIMARY_LOCAL_LID, p->slid);
	mad_put16(d + REQ_PRIMARY_REMOTE_LID, p->dlid);
	memcpy(d + REQ_PRIMARY_LOCAL_GID, p->sgid, 16);
	memcpy(d + REQ_PRIMARY_REMOTE_GID, p->dgid, 16);
	mad_put32(d + REQ_PRIMARY_FLOW_LABEL, p->flow_label << 12 | p->rate);
	d[REQ_PRIMARY_TRAFFIC_CLASS] = p->traffic_class;
	d[REQ_PRIMARY_HOP_LIMIT] = p->hop_limit;
	d[REQ_PRIMARY_SL] = p->sl << 4 | (!p->grh) << 3;
	d[REQ_PRIMARY_ACK_TIMEOUT] = cm_ack_timeout(CM_CA_ACK_DELAY,
						 p->packet_life_time) << 3;
}

static uint8_t transport_of(uint8_t qp_type)
{
	return qp_type == IBV_QPT_UC ? 1 : 0;	/* RC 0, UC 1 */
}

int cm_send_req(struct cma_id *id, const struct cm_conn_param *p)
{
	uint8_t mad[MAD_SIZE], *d = mad + MAD_HDR_LEN;
	struct cm_id *cm;

	if (p->private_data_len > CM_REQ_PRIVATE_SIZE)
		return -EINVAL;
	cm = cm_new(id);
	if (!cm)
		return -ENOMEM;
	cm->av = id->path;
	cm->service_id = cma_service_id(id, (struct sockaddr *)&id->dst);
	cm->qp_type = id->qp_type;
	cm->local_qpn = p->qp_num;
	cm->rq_psn = p->starting_psn;
	cm->responder_resources = p->responder_resources;
	cm->initiator_depth = p->initiator_depth;
	cm->retry_count = p->retry_count;
	cm->rnr_retry_count = p->rnr_retry_count;
	cm->srq = p->srq;
	cm->path_mtu = id->path.mtu;
	cm->pkey = id->path.pkey;
	cm->ack_timeout = cm_ack_timeout(CM_CA_ACK_DELAY,
				      id->path.packet_life_time);
	cm->tid = new_tid(cm);
	cm_mad_header(mad, CM_REQ_ATTR_ID, cm->tid);
	mad_put32(d + REQ_LOCAL_COMM_ID, cm->local_id);
	mad_put64(d + REQ_SERVICE_ID, cm->service_id);
	mad_put64(d + REQ_LOCAL_CA_GUID, cm->av.port->hca->node_guid);
	cm_put24(d + REQ_LOCAL_QPN, cm->local_qpn);
	d[REQ_RESPONDER_RESOURCES] = cm->responder_resources;
	d[REQ_INITIATOR_DEPTH] = cm->initiator_depth;
	d[REQ_REMOTE_CM_TIMEOUT] = CMA_CM_RESPONSE_TIMEOUT << 3 |
				   transport_of(cm->qp_type) << 1 |
				   (p->flow_control & 1);
	cm_put24(d + REQ_STARTING_PSN, cm->rq_psn);
	d[REQ_LOCAL_CM_TIMEOUT] = CMA_CM_RESPONSE_TIMEOUT << 3 |
				  (cm->retry_count & 7);
	mad_put16(d + REQ_PKEY, cm->pkey);
	d[REQ_PATH_MTU] = cm->path_mtu << 4 | (cm->rnr_retry_count & 7);
	d[REQ_MAX_CM_RETRIES] = CMA_MAX_CM_RETRIES << 4 | cm->srq << 3;
	req_path(d, cm);
	memcpy(d + REQ_PRIVATE_DATA, p->private_data, p->private_data_len);
	cm->state = CM_REQ_SENT;
	id->cm = cm;
	cm_send_waiting(cm, mad, 2 * cm_iba_time_ms(cm->av.packet_life_time) +
			cm_iba_time_ms(CMA_CM_RESPONSE_TIMEOUT));
	return 0;
}

int cm_send_rep(struct cm_id *cm, const struct cm_conn_param *p)
{
	uint8_t mad[MAD_SIZE], *d = mad + MAD_HDR_LEN;

	if (p->private_data_len > CM_REP_PRIVATE_SIZE)
		return -EINVAL;
	if (cm->state != CM_REQ_RCVD && cm->state != CM_MRA_REQ_SENT)
		return -EINVAL;
	cm->local_qpn = p->qp_num;
	cm->rq_psn = p->starting_psn;
	cm->initiator_depth = p->initiator_depth;
	cm->responder_resources = p->responder_resources;
	cm->rnr_retry_count = p->rnr_retry_count;
	cm->srq = p->srq;
	cm_mad_header(mad, CM_REP_ATTR_ID, cm->tid);
	mad_put32(d + REP_LOCAL_COMM_ID, cm->local_id);
	mad_put32(d + REP_REMOTE_COMM_ID, cm->remote_id);
	cm_put24(d + REP_LOCAL_QPN, cm->local_qpn);
	cm_put24(d + REP_STARTING_PSN, cm->rq_psn);
	d[REP_RESPONDER_RESOURCES] = p->responder_resources;
	d[REP_INITIATOR_DEPTH] = p->initiator_depth;
	d[REP_TARGET_ACK_DELAY] = CM_CA_ACK_DELAY << 3 | (p->flow_control & 1);
	d[REP_RNR_RETRY_COUNT] = (p->rnr_retry_count & 7) << 5 | p->srq << 4;
	mad_put64(d + REP_LOCAL_CA_GUID, cm->av.port->hca->node_guid);
	memcpy(d + REP_PRIVATE_DATA, p->private_data, p->private_data_len);
	cm->state = CM_REP_SENT;
	cm_send_waiting(cm, mad, 2 * cm_iba_time_ms(cm->av.packet_life_time) +
			cm_iba_time_ms(CMA_CM_RESPONSE_TIMEOUT));
	return 0;
}

/* A MAD of two comm ids and private data (RTU, DREP). */
static void send_simple(struct cm_id *cm, uint16_t attr_id, uint64_t tid)
{
	uint8_t mad[MAD_SIZE], *d = mad + MAD_HDR_LEN;

	cm_mad_header(mad, attr_id, tid);
	mad_put32(d + 0, cm->local_id);
	mad_put32(d + 4, cm->remote_id);
	cm_send(cm, mad);
}

int cm_send_rtu(struct cm_id *cm)
{
	if (cm->state != CM_REP_RCVD)
		return -EINVAL;
	cm->state = CM_ESTABLISHED;
	send_simple(cm, CM_RTU_ATTR_ID, cm->tid);
	return 0;
}

/*
 * ib_prepare_cm_mra(), as rdma_cm asks it for a connection's request it
 * reported: no MRA yet (IB_CM_MRA_FLAG_DELAY), but one answers the REQ if
 * it comes again while the process takes its time.
 */
void cm_prepare_mra(struct cm_id *cm)
{
	if (cm->state == CM_REQ_RCVD)
		cm->state = CM_MRA_REQ_SENT;
}

/* cm_format_mra(): the REQ acknowledged, the time asked for. */
void cm_mra_mad(uint8_t *mad, const struct cm_id *cm)
{
	uint8_t *d = mad + MAD_HDR_LEN;

	cm_mad_header(mad, CM_MRA_ATTR_ID, cm->tid);
	mad_put32(d + MRA_LOCAL_COMM_ID, cm->local_id);
	mad_put32(d + MRA_REMOTE_COMM_ID, cm->remote_id);
	d[MRA_MESSAGE_MRAED] = CM_MSG_REQ << 6;
	d[MRA_SERVICE_TIMEOUT] = CM_MRA_SERVICE_TIMEOUT << 3;
}

/* What a REJ says it rejects, by the state it leaves (cm_send_rej). */
static uint8_t rejected_msg(enum cm_state state)
{
	switch (state) {
	case CM_REQ_RCVD:
	case CM_MRA_REQ_SENT:
		return CM_MSG_REQ;
	case CM_REP_RCVD:
		return CM_MSG_REP;
	default:
		return CM_MSG_OTHER;
	}
}

void cm_rej_mad(uint8_t *mad, uint64_t tid, uint32_t local, uint32_t remote,
		uint8_t msg, uint16_t reason)
{
	uint8_t *d = mad + MAD_HDR_LEN;

	cm_mad_header(mad, CM_REJ_ATTR_ID, tid);
	mad_put32(d + REJ_LOCAL_COMM_ID, local);
	mad_put32(d + REJ_REMOTE_COMM_ID, remote);
	d[REJ_MESSAGE_REJECTED] = msg << 6;
	mad_put16(d + REJ_REASON, reason);
}

int cm_send_rej(struct cm_id *cm, uint16_t reason, const void *data,
		uint8_t len)
{
	uint8_t mad[MAD_SIZE];

	if (len > CM_REJ_PRIVATE_SIZE)
		return -EINVAL;
	switch (cm->state) {
	case CM_REQ_SENT:
	case CM_MRA_REQ_RCVD:
	case CM_REQ_RCVD:
	case CM_MRA_REQ_SENT:
	case CM_REP_RCVD:
	case CM_REP_SENT:
		break;
	default:
		return -EINVAL;
	}
	cm_rej_mad(mad, cm->tid, cm->local_id, cm->remote_id,
		rejected_msg(cm->state), reason);
	if (data && len)
		memcpy(mad + MAD_HDR_LEN + REJ_PRIVATE_DATA, data, len);
	/*
	 * A request that timed out names its sender by the CA GUID as well
	 * (its peer knows no comm id of ours yet).
	 */
	if (reason == CM_REJ_TIMEOUT) {
		mad[MAD_HDR_LEN + REJ_INFO_LENGTH] = 8 << 1;
		mad_put64(mad + MAD_HDR_LEN + REJ_ARI, cm->av.port->hca->node_guid);
	}
	timer_cancel(&cm->timer);
	if (cm->state == CM_REP_SENT)
		cm_enter_timewait(cm);
	else
		cm->state = CM_IDLE;
	cm_send(cm, mad);
	return 0;
}

int cm_send_dreq(struct cm_id *cm)
{
	uint8_t mad[MAD_SIZE], *d = mad + MAD_HDR_LEN;

	if (cm->state != CM_ESTABLISHED)
		return -EINVAL;
	cm->tid = new_tid(cm);
	cm_mad_header(mad, CM_DREQ_ATTR_ID, cm->tid);
	mad_put32(d + DREQ_LOCAL_COMM_ID, cm->local_id);
	mad_put32(d + DREQ_REMOTE_COMM_ID, cm->remote_id);
	cm_put24(d + DREQ_REMOTE_QPN, cm->remote_qpn);
	cm->state = CM_DREQ_SENT;
	cm_send_waiting(cm, mad, 2 * cm_iba_time_ms(cm->av.packet_life_time) +
			cm_iba_time_ms(CMA_CM_RESPONSE_TIMEOUT));
	return 0;
}

int cm_send_drep(struct cm_id *cm)
{
	if (cm->state != CM_DREQ_RCVD)
		return -EINVAL;
	cm_enter_timewait(cm);
	send_simple(cm, CM_DREP_ATTR_ID, cm->tid);
	return 0;
}

/* rdma_notify(COMM_EST): data came before the RTU (cm_establish()). */
int cm_establish(struct cm_id *cm)
{
	if (cm->state == CM_ESTABLISHED)
		return -EISCONN;
	if (cm->state != CM_REP_SENT)
		return -EINVAL;
	timer_cancel(&cm->timer);
	cm->state = CM_ESTABLISHED;
	if (cm->owner)
		cma_cm_event(cm->owner, CMA_EV_ESTABLISHED, 0, NULL, 0);
	return 0;
}

int cm_send_sidr_req(struct cma_id *id, const void *data, uint8_t len)
{
	uint8_t mad[MAD_SIZE], *d = mad + MAD_HDR_LEN;
	struct cm_id *cm;

	if (len > CM_SIDR_REQ_PRIVATE_SIZE)
		return -EINVAL;
	cm = cm_new(id);
	if (!cm)
		return -ENOMEM;
	cm->av = id->path;
	cm->qp_type = IBV_QPT_UD;
	cm->service_id = cma_service_id(id, (struct sockaddr *)&id->dst);
	cm->pkey = id->path.pkey;
	cm->tid = new_tid(cm);
	cm_mad_header(mad, CM_SIDR_REQ_ATTR_ID, cm->tid);
	mad_put32(d + SIDR_REQ_REQUEST_ID, cm->local_id);
	mad_put16(d + SIDR_REQ_PKEY, cm->pkey);
	mad_put64(d + SIDR_REQ_SERVICE_ID, cm->service_id);
	memcpy(d + SIDR_REQ_PRIVATE_DATA, data, len);
	cm->state = CM_SIDR_REQ_SENT;
	id->cm = cm;
	/* cma_resolve_ib_udp(): 1 << (CMA_CM_RESPONSE_TIMEOUT - 8) ms */
	cm_send_waiting(cm, mad, cm_iba_time_ms(CMA_CM_RESPONSE_TIMEOUT));
	return 0;
}

int cm_send_sidr_rep(struct cm_id *cm, uint8_t status, uint32_t qpn,
		     uint32_t qkey, const void *data, uint8_t len)
{
	uint8_t mad[MAD_SIZE], *d = mad + MAD_HDR_LEN;

	if (len > CM_SIDR_REP_PRIVATE_SIZE)
		return -EINVAL;
	if (cm->state != CM_SIDR_REQ_RCVD)
		return -EINVAL;
	cm_mad_header(mad, CM_SIDR_REP_ATTR_ID, cm->tid);
	mad_put32(d + SIDR_REP_REQUEST_ID, cm->remote_id);
	d[SIDR_REP_STATUS] = status;
	cm_put24(d + SIDR_REP_QPN, status == CM_SIDR_SUCCESS ? qpn : 0);
	mad_put64(d + SIDR_REP_SERVICE_ID, cm->service_id);
	mad_put32(d + SIDR_REP_QKEY, status == CM_SIDR_SUCCESS ? qkey : 0);
	if (data && len)
		memcpy(d + SIDR_REP_PRIVATE_DATA, data, len);
	cm->state = CM_IDLE;
	cm_send(cm, mad);
	return 0;
}

/*
 * ib_destroy_cm_id(): the peer hears of it as the state says (a REJ, a
 * DREQ or DREP, a SIDR reject); a connection that was up waits out
 * timewait without its owner.
 */
void cm_destroy(struct cm_id *cm)
{
	cm->owner = NULL;
	switch (cm->state) {
	case CM_REQ_SENT:
	case CM_MRA_REQ_RCVD:
		cm_send_rej(cm, CM_REJ_TIMEOUT, NULL, 0);
		break;
	case CM_REQ_RCVD:
	case CM_MRA_REQ_SENT:
	case CM_REP_RCVD:
	case CM_REP_SENT:
		cm_send_rej(cm, CM_REJ_CONSUMER_DEFINED, NULL, 0);
		break;
	case CM_ESTABLISHED:
		cm_send_dreq(cm);
		timer_cancel(&cm->timer);
		cm_enter_timewait(cm);
		break;
	case CM_DREQ_SENT:
		timer_cancel(&cm->timer);
		cm_enter_timewait(cm);
		break;
	case CM_DREQ_RCVD:
		cm_send_drep(cm);
		break;
	case CM_SIDR_REQ_RCVD:
		cm_send_sidr_rep(cm, CM_SIDR_REJECT, 0, 0, NULL, 0);
		break;
	default:
		break;
	}
	if (cm->state != CM_TIMEWAIT)
		cm_free(cm);
}

/*
 * An id the rdma_cm above could not take: gone with no word to the peer
 * (a full backlog: the peer's REQ is dropped, and sent again).
 */
void cm_drop(struct cm_id *cm)
{
	cm_free(cm);
}

/* ------------------------------------------------------------------ */
/* QP attributes: ib_cm_init_qp_attr()                                 */
/* ------------------------------------------------------------------ */

static bool state_in(enum cm_state s, const enum cm_state *set, int n)
{
	for (int i = 0; i < n; i++)
		if (s == set[i])
			return true;
	return false;
}

static const enum cm_state init_states[] = {
	CM_REQ_SENT, CM_MRA_REQ_RCVD, CM_REQ_RCVD, CM_MRA_REQ_SENT,
	CM_REP_RCVD, CM_REP_SENT, CM_ESTABLISHED,
};
static const enum cm_state rtr_states[] = {
	CM_REQ_RCVD, CM_MRA_REQ_SENT, CM_REP_RCVD, CM_REP_SENT, CM_ESTABLISHED,
};

static void init_attr(const struct cm_id *cm, struct ib_uverbs_qp_attr *a)
{
	a->qp_attr_mask = IBV_QP_STATE | IBV_QP_ACCESS_FLAGS |
			  IBV_QP_PKEY_INDEX | IBV_QP_PORT;
	a->qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
	if (cm->responder_resources)
		a->qp_access_flags |= IBV_ACCESS_REMOTE_READ |
				      IBV_ACCESS_REMOTE_ATOMIC;
	a->pkey_index = 0;
	a->port_num = cm->av.port->num;
}

static void rtr_attr(const struct cm_id *cm, struct ib_uverbs_qp_attr *a)
{
	a->qp_attr_mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
	cma_ah_attr(&cm->av, &a->ah_attr);
	a->path_mtu = cm->path_mtu;
	a->dest_qp_num = cm->remote_qpn;
	a->rq_psn = cm->rq_psn;
	if (cm->qp_type == IBV_QPT_RC) {
		a->qp_attr_mask |= IBV_QP_MAX_DEST_RD_ATOMIC |
				   IBV_QP_MIN_RNR_TIMER;
		a->max_dest_rd_atomic = cm->responder_resources;
		a->min_rnr_timer = 0;
	}
}

static void rts_attr(const struct cm_id *cm, struct ib_uverbs_qp_attr *a)
{
	a->qp_attr_mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
	a->sq_psn = cm->sq_psn;
	if (cm->qp_type != IBV_QPT_RC)
		return;
	a->qp_attr_mask |= IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			   IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_TIMEOUT;
	a->retry_cnt = cm->retry_count;
	a->rnr_retry = cm->rnr_retry_count;
	a->max_rd_atomic = cm->initiator_depth;
	a->timeout = cm->ack_timeout;
}

int cm_init_qp_attr(const struct cm_id *cm, uint32_t state,
		    struct ib_uverbs_qp_attr *attr)
{
	switch (state) {
	case IBV_QPS_INIT:
		if (!state_in(cm->state, init_states, ARRAY_SIZE(init_states)))
			return -EINVAL;
		init_attr(cm, attr);
		return 0;
	case IBV_QPS_RTR:
	case IBV_QPS_RTS:
		/* RTS is allowed before the REP is sent, as RTR is. */
		if (!state_in(cm->state, rtr_states, ARRAY_SIZE(rtr_states)))
			return -EINVAL;
		if (state == IBV_QPS_RTR)
			rtr_attr(cm, attr);
		else
			rts_attr(cm, attr);
		return 0;
	default:
		return -EINVAL;
	}
}
