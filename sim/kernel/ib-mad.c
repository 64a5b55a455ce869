/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ib_mad: what happens to a MAD an agent sends, as the kernel's mad.c
 * and smi.c have it, with the fabric between the ports.
 *
 * A request leaves its port by its route (fabric/switch.c: directed or
 * by LID); where it arrives, the switch's SMA, the adapter's firmware
 * (adapter/mad-agents.c: its SMA and PMA) or the agent registered for its
 * class, version and method takes it.  A Get or Set nobody takes is
 * answered "unsupported" (generate_unmatched_resp).  A response goes to
 * the agent whose TID it carries, and only while that agent still waits
 * for it: a request sent with a timeout waits, is sent again when the
 * timeout ends, as many times as its retries say, then comes back to its
 * file with status ETIMEDOUT.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "umad.h"

#define LID_PERMISSIVE	0xffff

/*
 * No request waits past this: the loop looks at the requests only then
 * (it may be early, after an answer came; never late).
 */
static uint64_t next_due = UINT64_MAX;
#define VENDOR_OUI	37		/* of a vendor MAD of the second range */

static uint64_t tid_of(const uint8_t *mad)
{
	return mad_get64(mad + MAD_TID);
}

static bool serves(const struct umad_agent *a, uint8_t method)
{
	return method < 128 && (a->methods[method / 64] >> (method % 64) & 1);
}

/* Whether two agents would take the same MADs (they share a class). */
static bool same_class(const struct umad_agent *a, const struct umad_agent *b)
{
	return a->mgmt_class == b->mgmt_class &&
	       a->class_version == b->class_version &&
	       (a->mgmt_class < MAD_CLASS_VENDOR2_FIRST ||
		a->mgmt_class > MAD_CLASS_VENDOR2_LAST || a->oui == b->oui);
}

bool mad_method_in_use(const struct umad_file *f, const struct umad_agent *a)
{
	struct umad_file *g;

	/* ib_cm's agent on every port (cm_add_one): version 2's SEND. */
	if (a->mgmt_class == MAD_CLASS_CM && a->class_version == 2 &&
	    serves(a, MAD_METHOD_SEND))
		return true;
	list_for_each(&umad_files, g, struct umad_file, link) {
		if (g->port != f->port)
			continue;
		for (int id = 0; id < UMAD_MAX_AGENTS; id++) {
			const struct umad_agent *b = &g->agent[id];

			if (b->used && b->mgmt_class && same_class(a, b) &&
			    ((a->methods[0] & b->methods[0]) ||
			     (a->methods[1] & b->methods[1])))
				return true;
		}
	}
	return false;
}

static void send_free(struct umad_file *f, struct umad_send *s)
{
	list_del(&s->link);
	f->nsends--;
	free(s);
}

/* ------------------------------------------------------------------ */
/* Arrival                                                             */
/* ------------------------------------------------------------------ */

static void arrive(const struct mad_node *to, const uint8_t *mad, size_t len,
		   const struct mad_source *src);

/* The header an agent reads with a MAD from @src. */
static void recv_header(const struct umad_file *f, const struct mad_source *src,
			size_t len, struct ib_user_mad_hdr *hdr)
{
	memset(hdr, 0, sizeof(*hdr));
	hdr->length = umad_hdr_size(f) + len;
	hdr->qpn = htobe32(src->qpn);
	hdr->lid = htobe16(src->slid);
	hdr->sl = src->sl;
}

/*
 * A response reaches @port: the agent whose TID it carries takes it if
 * its request still waits (ib_find_send_mad: the TID and the class);
 * any other response is dropped.
 */
static void take_response(struct sim_port *port, const uint8_t *mad,
			  size_t len, const struct mad_source *src)
{
	uint32_t hi_tid = tid_of(mad) >> 32;
	struct ib_user_mad_hdr hdr;
	struct umad_send *s;
	struct umad_file *f;

	list_for_each(&umad_files, f, struct umad_file, link) {
		if (f->port != port)
			continue;
		list_for_each(&f->sends, s, struct umad_send, link) {
			if (f->agent[s->agent].hi_tid != hi_tid ||
			    tid_of(s->mad) != tid_of(mad) ||
			    s->mad[MAD_CLASS] != mad[MAD_CLASS])
				continue;
			recv_header(f, src, len, &hdr);
			umad_queue(f, s->agent, &hdr, mad, len);
			send_free(f, s);
			return;
		}
	}
}

/* The agent of @port registered for this request, on the QP it came to. */
static struct umad_file *find_agent(struct sim_port *port, const uint8_t *mad,
				    uint32_t qpn, uint32_t *id)
{
	struct umad_agent want = {
		.mgmt_class = mad[MAD_CLASS],
		.class_version = mad[MAD_CLASS_VERSION],
		.oui = mad[VENDOR_OUI] << 16 | mad[VENDOR_OUI + 1] << 8 |
		       mad[VENDOR_OUI + 2],
	};
	struct umad_file *f;

	list_for_each(&umad_files, f, struct umad_file, link) {
		if (f->port != port)
			continue;
		for (int i = 0; i < UMAD_MAX_AGENTS; i++) {
			const struct umad_agent *a = &f->agent[i];

			if (a->used && a->qpn == qpn && a->mgmt_class &&
			    same_class(a, &want) && serves(a, mad[MAD_METHOD])) {
				*id = i;
				return f;
			}
		}
	}
	return NULL;
}

/* generate_unmatched_resp: a Get or Set nobody takes, refused. */
static bool unmatched_response(const uint8_t *in, size_t len, uint8_t *out)
{
	uint16_t status = MAD_STATUS_METHOD_ATTR_UNSUPPORTED;

	if (in[MAD_METHOD] != MAD_METHOD_GET && in[MAD_METHOD] != MAD_METHOD_SET)
		return false;
	memcpy(out, in, MIN(len, (size_t)MAD_SIZE));
	out[MAD_METHOD] = MAD_METHOD_GET_RESP;
	if (in[MAD_CLASS] == MAD_CLASS_SUBN_DR)
		status |= SMP_DIRECTION;
	mad_put16(out + MAD_STATUS, status);
	return true;
}

/* An answer made where @to is goes back to the sender, @src. */
static void answer(const struct mad_node *to, const uint8_t *resp,
		   const struct mad_source *src)
{
	struct mad_source from = {
		.port = to->port,
		.slid = to->port ? to->port->lid : switch_lid_now(),
		.qpn = src->qpn,
	};
	struct mad_node back = { src->port, src->port->num };

	if (resp[MAD_CLASS] == MAD_CLASS_SUBN_DR)
		from.slid = LID_PERMISSIVE;
	if (to->port != src->port)
		port_count(to->port, src->port, MAD_SIZE, 1);
	arrive(&back, resp, MAD_SIZE, &from);
}

static void arrive_at_switch(const struct mad_node *to, const uint8_t *mad,
			     size_t len, const struct mad_source *src)
{
	uint8_t out[MAD_SIZE];

	if (mad_is_response(mad))
		return;		/* the built-in SM asked nothing */
	if (mad_is_smp(mad) ? switch_smp(to->in_port, mad, out) :
			      unmatched_response(mad, len, out))
		answer(to, out, src);
}

/* What an SM's PortInfo Set may change of an adapter's ports. */
struct port_view {
	uint16_t lid, sm_lid;
	uint8_t sm_sl, state;
};

static void look(const struct sim_hca *hca, struct port_view *v)
{
	for (int p = 0; p < hca->nports; p++)
		v[p] = (struct port_view){ hca->port[p].lid, hca->port[p].sm_lid,
					   hca->port[p].sm_sl,
					   hca->port[p].state };
}

/*
 * mlx4_ib's smp_snoop, after the firmware took a PortInfo Set: the
 * port's sysfs files, and its events to every context of the adapter:
 * LID_CHANGE, SM_CHANGE, CLIENT_REREGISTER when the SM asked, and
 * PORT_ACTIVE or PORT_ERR as the logical state reaches or leaves ACTIVE.
 */
static void snoop(struct sim_hca *hca, const uint8_t *mad,
		  const struct port_view *was)
{
	if (mad[MAD_METHOD] != MAD_METHOD_SET ||
	    mad_get16(mad + MAD_ATTR_ID) != SMP_ATTR_PORT_INFO)
		return;
	for (int p = 0; p < hca->nports; p++) {
		struct sim_port *port = &hca->port[p];

		if (port->lid != was[p].lid)
			port_event(port, IBV_EVENT_LID_CHANGE);
		if (port->sm_lid != was[p].sm_lid || port->sm_sl != was[p].sm_sl)
			port_event(port, IBV_EVENT_SM_CHANGE);
		if ((port->state == PORT_STATE_ACTIVE) !=
		    (was[p].state == PORT_STATE_ACTIVE))
			port_event(port, port->state == PORT_STATE_ACTIVE ?
				   IBV_EVENT_PORT_ACTIVE : IBV_EVENT_PORT_ERR);
		if (memcmp(&was[p], &(struct port_view){ port->lid,
			   port->sm_lid, port->sm_sl, port->state },
			   sizeof(was[p])))
			sysfs_port_state(port);
	}
	if (mad[SMP_DATA + PI_SUBNET_TIMEOUT] & PI_CLIENT_REREG) {
		uint32_t mod = mad_get32(mad + MAD_ATTR_MOD);
		struct sim_port *port = hca_port(hca, mod);

		if (mod == 0 || port)
			port_event(port ? port : &hca->port[0],
				   IBV_EVENT_CLIENT_REREGISTER);
	}
}

static void arrive(const struct mad_node *to, const uint8_t *mad, size_t len,
		   const struct mad_source *src)
{
	struct port_view was[CX3_MAX_PORTS];
	struct ib_user_mad_hdr hdr;
	uint8_t out[MAD_SIZE];
	struct umad_file *f;
	uint32_t id;

	/* validate_mad: the IB base version, SMPs on QP0 and only there. */
	if (mad[MAD_BASE_VERSION] != 1 || mad_is_smp(mad) != (src->qpn == 0))
		return;
	if (!to->port) {
		arrive_at_switch(to, mad, len, src);
		return;
	}
	if (mad_is_response(mad)) {
		take_response(to->port, mad, len, src);
		return;
	}
	look(to->port->hca, was);
	switch (adapter_mad_ifc(to->port, mad, out)) {
	case MAD_IFC_REPLY:
		if (!(mad_get16(out + MAD_STATUS) & ~SMP_DIRECTION))
			snoop(to->port->hca, mad, was);
		answer(to, out, src);
		return;
	case MAD_IFC_CONSUMED:
		return;
	case MAD_IFC_PASS:
		break;
	}
	f = find_agent(to->port, mad, src->qpn, &id);
	if (f) {
		recv_header(f, src, len, &hdr);
		umad_queue(f, id, &hdr, mad, len);
	} else if (unmatched_response(mad, len, out)) {
		answer(to, out, src);
	}
}

/* ------------------------------------------------------------------ */
/* Sending                                                             */
/* ------------------------------------------------------------------ */

/*
 * Where a MAD from @port goes: along its directed route, or by LID.  A
 * directed route the sender may not send is EINVAL for write(2) (as
 * ib_post_send_mad's check); 1 when it is lost on the way.  A directed
 * route that starts or ends LID-routed (DrSLID, DrDLID not permissive)
 * is not modelled: lost.
 */
static int route(struct sim_port *port, uint8_t *mad, uint16_t dlid,
		 struct mad_node *to)
{
	if (mad[MAD_CLASS] != MAD_CLASS_SUBN_DR)
		return fabric_lid_route(port, dlid, to);
	if (mad_get16(mad + MAD_STATUS) & SMP_DIRECTION)
		return 1;	/* a response of ours on the way back */
	if (mad_get16(mad + SMP_DR_SLID) != LID_PERMISSIVE ||
	    mad_get16(mad + SMP_DR_DLID) != LID_PERMISSIVE)
		return mad[MAD_HOP_CNT] > SMP_MAX_HOPS ? -EINVAL : 1;
	return fabric_dr_route(port, mad, to);
}

/*
 * The MAD leaves the port of @f, to @to.  Only an SMP (VL15) crosses a
 * link that is not yet ACTIVE: a GMP is lost there, at either end.
 */
static void travel(struct umad_file *f, uint32_t agent,
		   const struct mad_node *to, const uint8_t *mad, size_t len,
		   uint8_t sl)
{
	struct mad_source src = {
		.port = f->port,
		.slid = f->port->lid,
		.qpn = f->agent[agent].qpn,
		.sl = sl,
	};

	if (!mad_is_smp(mad) &&
	    (!port_active(f->port) || (to->port && !port_active(to->port))))
		return;
	if (to->port != f->port)
		port_count(f->port, to->port, len, 1);
	arrive(to, mad, len, &src);
}

/* is_duplicate: a request whose TID and class already wait. */
static bool duplicate(const struct umad_file *f, const uint8_t *mad)
{
	struct umad_send *s;

	list_for_each(&f->sends, s, struct umad_send, link)
		if (tid_of(s->mad) == tid_of(mad) &&
		    s->mad[MAD_CLASS] == mad[MAD_CLASS])
			return true;
	return false;
}

/*
 * A request that waits for its answer.  The kernel's only limit is its
 * memory; here a file may keep UMAD_MAX_WAITING of them (ENOMEM past
 * that), so that no client makes the daemon hold what it will not read.
 */
static int add_send(struct umad_file *f, uint32_t agent,
		    const struct ib_user_mad_hdr *hdr, const uint8_t *mad,
		    size_t len)
{
	struct umad_send *s;

	if (f->nsends >= UMAD_MAX_WAITING)
		return -ENOMEM;
	s = calloc(1, sizeof(*s) + len);
	if (!s)
		return -ENOMEM;
	f->nsends++;
	next_due = MIN(next_due, now_ns() + hdr->timeout_ms * 1000000ULL);
	s->agent = agent;
	s->hdr = *hdr;
	s->deadline = now_ns() + hdr->timeout_ms * 1000000ULL;
	s->retries_left = hdr->retries;
	s->len = len;
	memcpy(s->mad, mad, len);
	list_add_tail(&f->sends, &s->link);
	return 0;
}

/* The source GID a GRH names must be one of the port's (create_ah). */
static bool sgid_valid(const struct sim_port *port, uint8_t index)
{
	static const uint8_t zero[16];
	uint8_t gid[16];

	port_gid(port, index, gid);
	return index < CX3_GID_TBL_LEN && memcmp(gid, zero, sizeof(gid));
}

/*
 * What ib_umad_write() and ib_post_send_mad() do with a MAD written to a
 * file: the address checked, RMPP segmentation only for an agent the
 * kernel does it for (otherwise one MAD, zero-padded to 256 bytes), a
 * request's TID given its agent's top half, a request whose TID already
 * waits refused, and the MAD on its way.  0 or -errno.
 */
int mad_send(struct umad_file *f, uint32_t agent,
	     const struct ib_user_mad_hdr *hdr, uint8_t *mad, size_t len)
{
	static uint8_t msg[UMAD_MAX_SEND];
	const struct umad_agent *a = &f->agent[agent];
	bool rmpp = false, response;
	struct mad_node to;
	int err, lost;
	size_t size;

	if (hdr->grh_present && !sgid_valid(f->port, hdr->gid_index))
		return -EINVAL;
	if (mad_class_is_rmpp(mad[MAD_CLASS]) && a->rmpp_version &&
	    !(a->flags & IB_USER_MAD_USER_RMPP))
		rmpp = mad[RMPP_FLAGS] & RMPP_FLAG_ACTIVE;
	if (!rmpp && len > MAD_SIZE)
		return -EINVAL;
	size = MAX(len, (size_t)MAD_SIZE);
	memset(msg, 0, size);
	memcpy(msg, mad, len);
	response = mad_is_response(msg);
	if (!response)
		mad_put64(msg + MAD_TID, (uint64_t)a->hi_tid << 32 |
					 (tid_of(msg) & 0xffffffff));
	if (!response && duplicate(f, msg))
		return -EINVAL;
	lost = route(f->port, msg, be16toh(hdr->lid), &to);
	if (lost < 0)
		return lost;
	if (!response && hdr->timeout_ms) {
		err = add_send(f, agent, hdr, msg, size);
		if (err)
			return err;
	}
	/* A MAD on the wrong QP for its class goes, and is dropped there. */
	if (!lost && (mad_is_smp(msg) || be32toh(hdr->qpn) == 1))
		travel(f, agent, &to, msg, size, hdr->sl);
	return 0;
}

/* An agent unregistered, or its file closed: its requests wait no more. */
void mad_agent_gone(struct umad_file *f, uint32_t agent)
{
	struct umad_send *s, *tmp;

	list_for_each_safe(&f->sends, s, tmp, struct umad_send, link) {
		if (s->agent != agent)
			continue;
		send_free(f, s);
	}
}

/* ------------------------------------------------------------------ */
/* Timeouts                                                            */
/* ------------------------------------------------------------------ */

/*
 * A request's timeout ended: sent again while it has retries, else back
 * to its file with status ETIMEDOUT and only its MAD header (the
 * kernel's send_handler for IB_WC_RESP_TIMEOUT_ERR).
 */
static void expire(struct umad_file *f, struct umad_send *s, uint64_t now)
{
	struct mad_node to;

	if (s->retries_left) {
		s->retries_left--;
		s->deadline = now + s->hdr.timeout_ms * 1000000ULL;
		next_due = MIN(next_due, s->deadline);
		if (!route(f->port, s->mad, be16toh(s->hdr.lid), &to))
			travel(f, s->agent, &to, s->mad, s->len, s->hdr.sl);
		return;
	}
	s->hdr.status = ETIMEDOUT;
	umad_queue(f, s->agent, &s->hdr, s->mad, MAD_HDR_LEN);
	send_free(f, s);
}

/* The loop's look at the requests that wait: the next deadline. */
void umad_timers(uint64_t now, uint64_t *deadline)
{
	struct umad_send *s;
	struct umad_file *f;

	if (now < next_due) {
		*deadline = MIN(*deadline, next_due);
		return;
	}
again:
	next_due = UINT64_MAX;
	list_for_each(&umad_files, f, struct umad_file, link) {
		list_for_each(&f->sends, s, struct umad_send, link) {
			if (s->deadline <= now) {
				/* A send again may answer others: look anew. */
				expire(f, s, now);
				goto again;
			}
			next_due = MIN(next_due, s->deadline);
		}
	}
	*deadline = MIN(*deadline, next_due);
}

/*
 * A link went down or came up (`mlx4sim fault`): the switch at its other
 * end notices, and tells its SM with Trap 128 if it has one, from its
 * LID by its forwarding table, as to any agent on QP0.
 */
void mad_link_changed(struct sim_port *port)
{
	struct mad_source src = { .qpn = 0 };
	uint8_t trap[MAD_SIZE];
	struct mad_node to;
	uint16_t dlid;

	if (port->link_layer != IBV_LINK_LAYER_INFINIBAND ||
	    !switch_link_changed(port, trap, &dlid))
		return;
	src.slid = switch_lid_now();
	if (!switch_route(dlid, &to) && to.port->lid == dlid) {
		port_count(NULL, to.port, MAD_SIZE, 1);
		arrive(&to, trap, MAD_SIZE, &src);
	}
}
