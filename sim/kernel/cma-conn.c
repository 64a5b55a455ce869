/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rdma_cm's connections (cma.c has ids, ports, bind and listen): the
 * active side's REQ or SIDR_REQ, the passive side's connection request,
 * accept, reject and disconnect, and the events ib_cm's messages bring
 * (cma_ib_handler(), cma_ib_req_handler(), cma_sidr_rep_handler()).
 *
 * The private data of a REQ or SIDR_REQ starts with cma's header: its
 * version, the IP version, the active side's port and both addresses,
 * from which the passive side's new id learns them; the process's data
 * follows it.
 */
#include <errno.h>
#include <string.h>

#include "cma.h"

#define CMA_VERSION		0x00
#define CMA_HDR_SIZE		36	/* struct cma_hdr */

/* ------------------------------------------------------------------ */
/* cma's header                                                        */
/* ------------------------------------------------------------------ */

static void hdr_addr(uint8_t *at, const struct sockaddr_storage *a)
{
	if (a->ss_family == AF_INET)
		memcpy(at + 12, &((const struct sockaddr_in *)a)->sin_addr, 4);
	else
		memcpy(at, &((const struct sockaddr_in6 *)a)->sin6_addr, 16);
}

/* cma_format_hdr() */
static void format_hdr(uint8_t *hdr, const struct cma_id *id)
{
	const struct sockaddr *src = (const void *)&id->src;

	hdr[0] = CMA_VERSION;
	hdr[1] = (src->sa_family == AF_INET ? 4 : 6) << 4;
	memcpy(hdr + 2, src->sa_family == AF_INET ?
	       (const void *)&((const struct sockaddr_in *)src)->sin_port :
	       (const void *)&((const struct sockaddr_in6 *)src)->sin6_port, 2);
	hdr_addr(hdr + 4, &id->src);
	hdr_addr(hdr + 20, &id->dst);
}

/*
 * cma_save_ip_info(): the new id's addresses from the header, its own
 * port the listener's.  -EINVAL for a header of another version,
 * -EAFNOSUPPORT for another IP version.
 */
static int save_ip_info(struct cma_id *id, const uint8_t *hdr,
			uint16_t local_port)
{
	int version = hdr[1] >> 4;

	if (hdr[0] != CMA_VERSION)
		return -EINVAL;
	memset(&id->src, 0, sizeof(id->src));
	memset(&id->dst, 0, sizeof(id->dst));
	if (version == 4) {
		struct sockaddr_in *s = (void *)&id->src, *d = (void *)&id->dst;

		s->sin_family = d->sin_family = AF_INET;
		memcpy(&s->sin_addr, hdr + 20 + 12, 4);
		memcpy(&d->sin_addr, hdr + 4 + 12, 4);
		s->sin_port = htobe16(local_port);
		memcpy(&d->sin_port, hdr + 2, 2);
	} else if (version == 6) {
		struct sockaddr_in6 *s = (void *)&id->src, *d = (void *)&id->dst;

		s->sin6_family = d->sin6_family = AF_INET6;
		memcpy(&s->sin6_addr, hdr + 20, 16);
		memcpy(&d->sin6_addr, hdr + 4, 16);
		s->sin6_port = htobe16(local_port);
		memcpy(&d->sin6_port, hdr + 2, 2);
	} else {
		return -EAFNOSUPPORT;
	}
	return 0;
}

/* cma_match_private_data(): does the request name the listener's address? */
static bool match_hdr(const struct cma_id *id, const uint8_t *hdr)
{
	const struct sockaddr *addr = (const void *)&id->src;
	int version = hdr[1] >> 4;

	if (cma_any_addr(addr) && !id->afonly)
		return true;
	if (addr->sa_family == AF_INET) {
		if (version != 4)
			return false;
		return cma_any_addr(addr) ||
		       !memcmp(hdr + 20 + 12,
			       &((const struct sockaddr_in *)addr)->sin_addr, 4);
	}
	if (version != 6)
		return false;
	return cma_any_addr(addr) ||
	       !memcmp(hdr + 20, &((const struct sockaddr_in6 *)addr)->sin6_addr,
		       16);
}

/* ------------------------------------------------------------------ */
/* Event parameters                                                    */
/* ------------------------------------------------------------------ */

static void conn_data(struct rdma_ucm_conn_param *p, const uint8_t *data,
		      size_t len)
{
	if (data && len)
		memcpy(p->private_data, data, len);
	p->private_data_len = len;
}

static void ud_data(struct rdma_ucm_ud_param *p, const uint8_t *data,
		    size_t len)
{
	if (data && len)
		memcpy(p->private_data, data, len);
	p->private_data_len = len;
}

/* cma_cm_event_handler() for a connection's event, ucma's copy of it. */
static void conn_event(struct cma_id *id, uint32_t event, int status,
		       const uint8_t *data, size_t len)
{
	union {
		struct rdma_ucm_conn_param conn;
		struct rdma_ucm_ud_param ud;
	} p;

	memset(&p, 0, sizeof(p));
	if (id->qp_type == IBV_QPT_UD)
		ud_data(&p.ud, data, len);
	else
		conn_data(&p.conn, data, len);
	ucma_event(id, event, status, &p, sizeof(p), NULL);
}

/* ------------------------------------------------------------------ */
/* The passive side                                                    */
/* ------------------------------------------------------------------ */

/* cma_find_listener(): the listening id a request is for, or NULL. */
static struct cma_id *find_listener(const struct cm_req_info *req,
				    bool sidr)
{
	struct cma_id *id;
	struct cma_bind *b;

	b = cma_bind_of(req->service_id);
	if (!b)
		return NULL;
	list_for_each(&b->owners, id, struct cma_id, bind_link) {
		if (id->state != CMA_LISTEN ||
		    (id->port && id->port->hca != req->port->hca) ||
		    !port_on_host(req->port, cma_id_host(id)) ||
		    !match_hdr(id, req->private_data))
			continue;
		if (sidr ? id->qp_type == IBV_QPT_UD :
			   id->qp_type == req->qp_type || !id->qp_type)
			return id;
	}
	return NULL;
}

/*
 * What a request must be for the port it reached: a header cma knows,
 * for an address of that port's interface (validate_net_dev()).
 */
static struct cma_id *request_listener(const struct cm_req_info *req,
				       bool sidr)
{
	struct sockaddr_storage dst = {};
	const uint8_t *hdr = req->private_data;

	if (hdr[0] != CMA_VERSION)
		return NULL;
	if (hdr[1] >> 4 == 4) {
		struct sockaddr_in *in = (void *)&dst;

		in->sin_family = AF_INET;
		memcpy(&in->sin_addr, hdr + 20 + 12, 4);
	} else if (hdr[1] >> 4 == 6) {
		struct sockaddr_in6 *in6 = (void *)&dst;

		in6->sin6_family = AF_INET6;
		memcpy(&in6->sin6_addr, hdr + 20, 16);
	} else {
		return NULL;
	}
	if (!port_has_ip(req->port, (struct sockaddr *)&dst))
		return NULL;
	return find_listener(req, sidr);
}

/*
 * The new id of a request, in the listener's file (ucma_conn_id()); NULL
 * when the listener cannot take it.  Its addresses come from the header,
 * its device and path from where and how the request came.
 */
static struct cma_id *new_conn(struct cma_id *listener, struct cm_id *cm,
			       const struct cm_req_info *req)
{
	struct cma_id *conn = ucma_conn_id(listener);

	if (!conn)
		return NULL;
	conn->qp_type = req->qp_type;
	conn->afonly = listener->afonly;
	conn->tos = listener->tos;
	conn->tos_set = listener->tos_set;
	if (save_ip_info(conn, req->private_data,
			 cma_port((struct sockaddr *)&listener->src)) ||
	    cma_acquire_for_req(conn, req)) {
		ucma_conn_failed(conn);
		return NULL;
	}
	conn->cm = cm;
	cm->owner = conn;
	conn->state = CMA_CONNECT;
	return conn;
}

/* cma_ib_req_handler(), for a REQ: CONNECT_REQUEST on the listener. */
void cma_req_received(struct cm_id *cm, const struct cm_req_info *req)
{
	struct rdma_ucm_conn_param p = {};
	struct cma_id *listener = request_listener(req, false);
	struct cma_id *conn;

	if (!listener) {
		cm_send_rej(cm, CM_REJ_CONSUMER_DEFINED, NULL, 0);
		cm_drop(cm);
		return;
	}
	conn = new_conn(listener, cm, req);
	if (!conn) {
		cm_drop(cm);		/* -ENOMEM: the REQ is dropped */
		return;
	}
	conn->num_paths = 1;
	conn_data(&p, req->private_data + CMA_HDR_SIZE,
		  CM_REQ_PRIVATE_SIZE - CMA_HDR_SIZE);
	p.responder_resources = req->responder_resources;
	p.initiator_depth = req->initiator_depth;
	p.flow_control = req->flow_control;
	p.retry_count = req->retry_count;
	p.rnr_retry_count = req->rnr_retry_count;
	p.srq = req->srq;
	p.qp_num = req->remote_qpn;
	/* cma_ib_req_handler(): a connection (not UD) may take its time. */
	cm_prepare_mra(cm);
	ucma_conn_request(listener, conn, &p, sizeof(p), NULL);
}

/* cma_ib_req_handler(), for a SIDR_REQ: the UD id's CONNECT_REQUEST. */
void cma_sidr_req_received(struct cm_id *cm, const struct cm_req_info *req)
{
	struct rdma_ucm_ud_param p = {};
	struct cma_id *listener = request_listener(req, true);
	struct cma_id *conn;

	if (!listener) {
		cm_destroy(cm);		/* a SIDR_REP that rejects */
		return;
	}
	conn = new_conn(listener, cm, req);
	if (!conn) {
		cm_drop(cm);
		return;
	}
	ud_data(&p, req->private_data + CMA_HDR_SIZE,
		CM_SIDR_REQ_PRIVATE_SIZE - CMA_HDR_SIZE);
	ucma_conn_request(listener, conn, &p, sizeof(p), NULL);
}

/* ------------------------------------------------------------------ */
/* The active side                                                     */
/* ------------------------------------------------------------------ */

/* The private data of a REQ or SIDR_REQ: cma's header, then the user's. */
static int request_data(const struct cma_id *id,
			const struct rdma_ucm_conn_param *p, uint8_t *buf,
			uint8_t *len)
{
	if (CMA_HDR_SIZE + p->private_data_len > 255)
		return -EINVAL;		/* check_add_overflow() of a u8 */
	memset(buf, 0, 256);
	format_hdr(buf, id);
	memcpy(buf + CMA_HDR_SIZE, p->private_data, p->private_data_len);
	*len = CMA_HDR_SIZE + p->private_data_len;
	return 0;
}

/* What a REQ or REP says of the id's QP and of the process's wishes. */
static struct cm_conn_param cm_param(const struct cma_id *id,
				     const struct rdma_ucm_conn_param *p,
				     const uint8_t *data, uint8_t len)
{
	return (struct cm_conn_param){
		.qp_num = id->qp_num,
		.starting_psn = id->seq_num,
		.responder_resources = p->responder_resources,
		.initiator_depth = p->initiator_depth,
		.retry_count = MIN(7, p->retry_count),
		.rnr_retry_count = MIN(7, p->rnr_retry_count),
		.flow_control = p->flow_control,
		.srq = id->srq,
		.private_data = data,
		.private_data_len = len,
	};
}

/* rdma_connect(): a REQ, or a SIDR_REQ for a UD id. */
int cma_connect(struct cma_id *id, const struct rdma_ucm_conn_param *p,
		const struct rdma_ucm_ece *ece)
{
	uint8_t data[256], len;
	int err;

	if (id->state != CMA_ROUTE_RESOLVED)
		return -EINVAL;
	id->state = CMA_CONNECT;
	id->ece = *ece;
	id->qp_num = p->qp_num & PSN_MASK;
	id->srq = p->srq;
	err = request_data(id, p, data, &len);
	if (!err && id->qp_type == IBV_QPT_UD) {
		err = cm_send_sidr_req(id, data, len);
	} else if (!err) {
		struct cm_conn_param req = cm_param(id, p, data, len);

		err = cm_send_req(id, &req);
	}
	if (err)
		id->state = CMA_ROUTE_RESOLVED;
	return err;
}

/* cma_ib_handler(), REP_RECEIVED: the process moves its QP, then ACCEPTs. */
void cma_rep_received(struct cma_id *id, const uint8_t *rep)
{
	struct rdma_ucm_conn_param p = {};

	if (id->state != CMA_CONNECT)
		return;
	conn_data(&p, rep + 36, CM_REP_PRIVATE_SIZE);
	p.responder_resources = rep[25];	/* its initiator depth */
	p.initiator_depth = rep[24];		/* its responder resources */
	p.flow_control = rep[26] & 1;
	p.rnr_retry_count = rep[27] >> 5;
	p.srq = (rep[27] >> 4) & 1;
	p.qp_num = (uint32_t)rep[12] << 16 | rep[13] << 8 | rep[14];
	ucma_event(id, CMA_EV_CONNECT_RESPONSE, 0, &p, sizeof(p), NULL);
}

/* cma_sidr_rep_handler(); status 0xff: the SIDR_REQ's retries ran out. */
void cma_sidr_rep_received(struct cma_id *id, uint8_t status, uint32_t qpn,
			   uint32_t qkey, const uint8_t *data)
{
	struct rdma_ucm_ud_param p = {};

	if (id->state != CMA_CONNECT)
		return;
	if (status == 0xff) {
		ucma_event(id, CMA_EV_UNREACHABLE, -ETIMEDOUT, &p, sizeof(p),
			   NULL);
		return;
	}
	ud_data(&p, data, CM_SIDR_REP_PRIVATE_SIZE);
	if (status != CM_SIDR_SUCCESS) {
		ucma_event(id, CMA_EV_UNREACHABLE, status, &p, sizeof(p), NULL);
		return;
	}
	if (!qkey || (id->qkey && id->qkey != qkey)) {
		ucma_event(id, CMA_EV_ADDR_ERROR, -EINVAL, &p, sizeof(p), NULL);
		return;
	}
	id->qkey = qkey;
	cma_ah_attr(&id->path, &p.ah_attr);
	p.qp_num = qpn;
	p.qkey = qkey;
	ucma_event(id, CMA_EV_ESTABLISHED, 0, &p, sizeof(p), NULL);
}

/*
 * An event ib_cm brings to a connection (cma_ib_handler()): only while
 * connecting or connected, TIMEWAIT_EXIT only once disconnected, and one
 * DISCONNECTED.
 */
void cma_cm_event(struct cma_id *id, uint32_t event, int status,
		  const uint8_t *data, uint8_t data_len)
{
	if (event == CMA_EV_TIMEWAIT_EXIT ? id->state != CMA_DISCONNECT :
					    id->state != CMA_CONNECT)
		return;
	if (event == CMA_EV_DISCONNECTED)
		id->state = CMA_DISCONNECT;
	conn_event(id, event, status, data, data_len);
}

void cma_timewait_exit(struct cma_id *id)
{
	cma_cm_event(id, CMA_EV_TIMEWAIT_EXIT, 0, NULL, 0);
}

/* ------------------------------------------------------------------ */
/* Accept, reject, disconnect, notify                                  */
/* ------------------------------------------------------------------ */

/* cma_set_qkey(): a UD id keeps the first Q_Key it is given. */
static int set_qkey(struct cma_id *id, uint32_t qkey)
{
	if (!qkey || (id->qkey && id->qkey != qkey))
		return -EINVAL;
	id->qkey = qkey;
	return 0;
}

static int send_sidr_rep(struct cma_id *id, uint8_t status, uint32_t qkey,
			 const void *data, uint8_t len)
{
	int err;

	if (status == CM_SIDR_SUCCESS) {
		err = qkey ? set_qkey(id, qkey) : cma_default_qkey(id);
		if (err)
			return err;
	}
	return cm_send_sidr_rep(id->cm, status, id->qp_num, id->qkey, data,
				len);
}

static int accept_ib(struct cma_id *id, const struct rdma_ucm_conn_param *p)
{
	struct cm_conn_param rep = cm_param(id, p, p->private_data,
					    p->private_data_len);

	return cm_send_rep(id->cm, &rep);
}

/*
 * rdma_accept(): the passive side's REP (or a UD id's SIDR_REP); with no
 * parameters, the active side's RTU after its CONNECT_RESPONSE.  Refused,
 * the connection is rejected.
 */
int cma_accept(struct cma_id *id, const struct rdma_ucm_conn_param *p,
	       const struct rdma_ucm_ece *ece)
{
	int err;

	if (id->state != CMA_CONNECT || !id->cm)
		return -EINVAL;
	id->ece = *ece;
	if (p) {
		id->qp_num = p->qp_num & PSN_MASK;
		id->srq = p->srq;
	}
	if (id->qp_type == IBV_QPT_UD)
		err = p ? send_sidr_rep(id, CM_SIDR_SUCCESS, 0,
					p->private_data, p->private_data_len) :
			  send_sidr_rep(id, CM_SIDR_SUCCESS, 0, NULL, 0);
	else
		err = p ? accept_ib(id, p) : cm_send_rtu(id->cm);
	if (err)
		cma_reject(id, NULL, 0, CM_REJ_CONSUMER_DEFINED);
	return err;
}

int cma_reject(struct cma_id *id, const void *data, uint8_t len,
	       uint8_t reason)
{
	if (!id->cm)
		return -EINVAL;
	if (id->qp_type == IBV_QPT_UD)
		return send_sidr_rep(id, CM_SIDR_REJECT, 0, data, len);
	return cm_send_rej(id->cm, reason, data, len);
}

/* rdma_disconnect(): a DREQ, or the DREP to the peer's; never an error. */
int cma_disconnect(struct cma_id *id)
{
	if (!id->cm)
		return -EINVAL;
	if (cm_send_dreq(id->cm))
		cm_send_drep(id->cm);
	return 0;
}

/* rdma_notify() and ib_cm_notify(): COMM_EST (data before the RTU). */
int cma_notify(struct cma_id *id, uint32_t event)
{
	if (!id->cm)
		return -EINVAL;
	switch (event) {
	case IBV_EVENT_COMM_EST:
		return cm_establish(id->cm);
	case IBV_EVENT_PATH_MIG:
		/* cm_migrate(): only an established connection */
		return id->cm->state == CM_ESTABLISHED ? 0 : -EINVAL;
	default:
		return -EINVAL;
	}
}
