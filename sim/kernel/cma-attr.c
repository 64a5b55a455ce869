/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rdma_cm's answers in the ABI's formats: the QP attributes a process
 * moves its QP with (rdma_init_qp_attr(), ib_copy_qp_attr_to_user()), an
 * address vector (ib_init_ah_attr_from_path(), ib_copy_ah_attr_to_user()),
 * a path record (ib_copy_path_rec_to_user(), ib_sa_pack_path() and its
 * unpacking for RDMA_OPTION_IB_PATH), and the id's options.
 */
#include <errno.h>
#include <string.h>
#include <rdma/ib_user_sa.h>

#include "cma.h"

#define SA_SELECTOR_EXACTLY	2

static bool on_ethernet(const struct cm_path *path)
{
	return path->port->link_layer == IBV_LINK_LAYER_ETHERNET;
}

void cma_ah_attr(const struct cm_path *path, struct ib_uverbs_ah_attr *ah)
{
	bool roce;

	memset(ah, 0, sizeof(*ah));
	if (!path->port)
		return;
	roce = on_ethernet(path);
	ah->dlid = roce ? 0 : path->dlid;
	ah->sl = path->sl;
	ah->static_rate = path->rate;
	ah->port_num = path->port->num;
	if (!roce && !path->grh)
		return;
	ah->is_global = 1;
	memcpy(ah->grh.dgid, path->dgid, 16);
	ah->grh.flow_label = path->flow_label;
	ah->grh.sgid_index = path->sgid_index;
	ah->grh.hop_limit = path->hop_limit;
	ah->grh.traffic_class = path->traffic_class;
}

void cma_path_to_user(const struct cm_path *path,
		      struct ib_user_path_rec *rec)
{
	bool roce = on_ethernet(path);

	memset(rec, 0, sizeof(*rec));
	memcpy(rec->dgid, path->dgid, 16);
	memcpy(rec->sgid, path->sgid, 16);
	rec->dlid = htobe16(roce ? 0 : path->dlid);
	rec->slid = htobe16(roce ? 0 : path->slid);
	rec->flow_label = htobe32(path->flow_label);
	rec->pkey = htobe16(path->pkey);
	rec->hop_limit = path->hop_limit;
	rec->traffic_class = path->traffic_class;
	rec->reversible = 1;
	rec->numb_path = 1;
	rec->sl = path->sl;
	rec->mtu_selector = SA_SELECTOR_EXACTLY;
	rec->mtu = path->mtu;
	rec->rate_selector = SA_SELECTOR_EXACTLY;
	rec->rate = path->rate;
	rec->packet_life_time_selector = SA_SELECTOR_EXACTLY;
	rec->packet_life_time = path->packet_life_time;
}

/* The SA's PathRecord attribute, 64 bytes big-endian (ib_sa_pack_path). */
void cma_pack_path(const struct cma_id *id, const struct cm_path *path,
		   uint8_t rec[64])
{
	uint64_t sid = htobe64(cma_service_id(id,
				(const struct sockaddr *)&id->dst));
	uint32_t flow_hop = htobe32(path->flow_label << 8 | path->hop_limit);
	uint16_t v;

	memset(rec, 0, 64);
	memcpy(rec, &sid, 8);
	memcpy(rec + 8, path->dgid, 16);
	memcpy(rec + 24, path->sgid, 16);
	v = htobe16(on_ethernet(path) ? 0 : path->dlid);
	memcpy(rec + 40, &v, 2);
	v = htobe16(on_ethernet(path) ? 0 : path->slid);
	memcpy(rec + 42, &v, 2);
	memcpy(rec + 44, &flow_hop, 4);
	rec[48] = path->traffic_class;
	rec[49] = 0x80 | 1;		/* reversible, one path */
	v = htobe16(path->pkey);
	memcpy(rec + 50, &v, 2);
	v = htobe16(path->sl & 0xf);
	memcpy(rec + 52, &v, 2);
	rec[54] = SA_SELECTOR_EXACTLY << 6 | path->mtu;
	rec[55] = SA_SELECTOR_EXACTLY << 6 | path->rate;
	rec[56] = SA_SELECTOR_EXACTLY << 6 | path->packet_life_time;
}

static void unpack_path(const uint8_t rec[64], struct cm_path *path)
{
	uint32_t flow_hop;
	uint16_t v;

	memcpy(path->dgid, rec + 8, 16);
	memcpy(path->sgid, rec + 24, 16);
	memcpy(&v, rec + 40, 2);
	path->dlid = be16toh(v);
	memcpy(&v, rec + 42, 2);
	path->slid = be16toh(v);
	memcpy(&flow_hop, rec + 44, 4);
	flow_hop = be32toh(flow_hop);
	path->flow_label = (flow_hop >> 8) & 0xfffff;
	path->hop_limit = flow_hop;
	path->traffic_class = rec[48];
	memcpy(&v, rec + 50, 2);
	path->pkey = be16toh(v);
	path->sl = rec[53] & 0xf;
	path->mtu = rec[54] & 0x3f;
	path->rate = rec[55] & 0x3f;
	path->packet_life_time = rec[56] & 0x3f;
	path->grh = path->hop_limit > 1;
}

/*
 * RDMA_OPTION_IB_PATH (ucma_set_ib_path(), rdma_set_ib_path()): the route
 * from the process (librdmacm's, from ibacm), the first record that is
 * the primary bidirectional one; ROUTE_RESOLVED at once.
 */
static int set_ib_path(struct cma_id *id, const uint8_t *val, size_t len)
{
	const struct ib_path_rec_data *rec = (const void *)val;
	struct rdma_ucm_conn_param p = {};
	struct cm_path path = { .port = id->port };

	if (len % sizeof(*rec))
		return -EINVAL;
	for (; len; len -= sizeof(*rec), rec++)
		if (rec->flags == (IB_PATH_GMP | IB_PATH_PRIMARY |
				   IB_PATH_BIDIRECTIONAL))
			break;
	if (!len || !id->port)
		return -EINVAL;
	if (id->state != CMA_ADDR_RESOLVED)
		return -EINVAL;
	unpack_path((const uint8_t *)rec->path_rec, &path);
	path.gid_type = id->gid_type;
	if (on_ethernet(&path)) {
		path.grh = true;
		path.slid = path.dlid = 0xffff;
	}
	id->path = path;
	id->num_paths = 1;
	id->state = CMA_ROUTE_RESOLVED;
	ucma_event(id, CMA_EV_ROUTE_RESOLVED, 0, &p, sizeof(p), NULL);
	return 0;
}

/* ------------------------------------------------------------------ */
/* QP attributes                                                       */
/* ------------------------------------------------------------------ */

/* cma_ib_init_qp_attr(): an id with no connection, or a UD one. */
static int ib_init_attr(struct cma_id *id, struct ib_uverbs_qp_attr *attr)
{
	uint16_t pkey = id->port->link_layer == IBV_LINK_LAYER_ETHERNET ?
			0xffff : id->pkey;

	if (pkey != 0xffff)
		return -ENOENT;		/* only the default partition's */
	attr->pkey_index = 0;
	attr->port_num = id->port->num;
	attr->qp_attr_mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
	if (id->qp_type == IBV_QPT_UD) {
		cma_default_qkey(id);
		attr->qkey = id->qkey;
		attr->qp_attr_mask |= IBV_QP_QKEY;
	} else {
		attr->qp_access_flags = 0;
		attr->qp_attr_mask |= IBV_QP_ACCESS_FLAGS;
	}
	return 0;
}

int cma_init_qp_attr(struct cma_id *id, uint32_t state,
		     struct ib_uverbs_qp_attr *attr)
{
	int err;

	attr->qp_state = state;
	if (!id->cm || id->qp_type == IBV_QPT_UD)
		err = ib_init_attr(id, attr);
	else
		err = cm_init_qp_attr(id->cm, state, attr);
	if (err)
		return err;
	if (state == IBV_QPS_RTR)
		attr->rq_psn = id->seq_num;
	if ((attr->qp_attr_mask & IBV_QP_TIMEOUT) && id->ack_timeout_set)
		attr->timeout = id->ack_timeout;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Options                                                             */
/* ------------------------------------------------------------------ */

static int get_int(const uint8_t *val, size_t len, int *out)
{
	if (len != sizeof(int))
		return -EINVAL;
	memcpy(out, val, sizeof(int));
	return 0;
}

/* ucma_set_option_id() and rdma_set_*() */
static int set_option_id(struct cma_id *id, uint32_t name, const uint8_t *val,
			 size_t len)
{
	int v, err;

	switch (name) {
	case RDMA_OPTION_ID_TOS:
		if (len != 1)
			return -EINVAL;
		id->tos = val[0];
		id->tos_set = true;
		return 0;
	case RDMA_OPTION_ID_REUSEADDR:
		err = get_int(val, len, &v);
		if (err)
			return err;
		if (!((v && id->state != CMA_LISTEN) || id->state == CMA_IDLE))
			return -EINVAL;
		id->reuseaddr = v != 0;
		return 0;
	case RDMA_OPTION_ID_AFONLY:
		err = get_int(val, len, &v);
		if (err)
			return err;
		if (id->state != CMA_IDLE && id->state != CMA_ADDR_BOUND)
			return -EINVAL;
		id->afonly_set = true;
		id->afonly = v != 0;
		return 0;
	case RDMA_OPTION_ID_ACK_TIMEOUT:
		if (len != 1)
			return -EINVAL;
		if (id->qp_type != IBV_QPT_RC && id->qp_type != IBV_QPT_XRC_SEND)
			return -EINVAL;
		id->ack_timeout = val[0];
		id->ack_timeout_set = true;
		return 0;
	default:
		return -ENOSYS;
	}
}

int cma_set_option(struct cma_id *id, uint32_t level, uint32_t name,
		   const void *val, size_t len)
{
	switch (level) {
	case RDMA_OPTION_ID:
		return set_option_id(id, name, val, len);
	case RDMA_OPTION_IB:
		return name == RDMA_OPTION_IB_PATH ? set_ib_path(id, val, len) :
						     -ENOSYS;
	default:
		return -ENOSYS;
	}
}
