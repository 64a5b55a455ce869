/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Control verbs that need no queue of their own: device and port
 * queries, protection domains (parent domains: domain.c), XRC domains,
 * memory regions and windows, address handles, multicast, steering
 * flows.
 */
#include <config.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "annotate.h"
#include "mlx4.h"

/* ---------------------------------------------------------------------
 * Device, port
 */

struct mlx4_query_device_ex_resp {
	struct ib_uverbs_ex_query_device_resp	ibv_resp;
	struct mlx4_uverbs_ex_query_device_resp	drv;
};

int mlx4_query_device_ex(struct ibv_context *context,
			 const struct ibv_query_device_ex_input *input,
			 struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct mlx4_context *ctx = to_mctx(context);
	struct mlx4_query_device_ex_resp resp = {};
	size_t resp_size = sizeof(resp);
	uint64_t fw;
	int ret;

	ret = ibv_cmd_query_device_any(context, input, attr, attr_size,
				       &resp.ibv_resp, &resp_size);
	if (ret)
		return ret;
	mlx4_mark_defined(&resp, sizeof(resp));

	fw = resp.ibv_resp.base.fw_ver;
	snprintf(attr->orig_attr.fw_ver, sizeof(attr->orig_attr.fw_ver),
		 "%d.%d.%03d", (int)(fw >> 32) & 0xffff,
		 (int)(fw >> 16) & 0xffff, (int)fw & 0xffff);

	/* The limits that creating queues checks against. */
	ctx->max_qp_wr = attr->orig_attr.max_qp_wr;
	ctx->max_sge = attr->orig_attr.max_sge;
	ctx->max_sge_rd = attr->orig_attr.max_sge_rd;
	ctx->max_cqe = attr->orig_attr.max_cqe;
	ctx->max_srq_wr = attr->orig_attr.max_srq_wr;
	ctx->max_srq_sge = attr->orig_attr.max_srq_sge;
	ctx->ud_ip_csum = !!(attr->orig_attr.device_cap_flags &
			     IBV_DEVICE_UD_IP_CSUM);
	ctx->raw_ip_csum = !!(attr->orig_attr.device_cap_flags &
			      IBV_DEVICE_RAW_IP_CSUM);

	/*
	 * The driver part stays zero unless the extended command answered
	 * (the legacy one has none); its response_length says how much of
	 * it the kernel knew to fill.
	 */
	if ((resp.drv.comp_mask & MLX4_IB_QUERY_DEV_RESP_MASK_CORE_CLOCK_OFFSET) &&
	    resp.drv.response_length >=
	    offsetof(struct mlx4_uverbs_ex_query_device_resp, max_inl_recv_sz))
		mlx4_map_hca_clock(ctx, resp.drv.hca_core_clock_offset);
	if (attr_size >= offsetof(struct ibv_device_attr_ex, hca_core_clock) +
			 sizeof(attr->hca_core_clock))
		ctx->hca_clock_khz = attr->hca_core_clock;

	if (resp.drv.response_length >=
	    offsetof(struct mlx4_uverbs_ex_query_device_resp, reserved))
		ctx->max_inl_recv_sz = resp.drv.max_inl_recv_sz;

	/*
	 * The hash function and fields of RSS and the TSO limits come in
	 * the driver's part only (rdma-core passes them on the same way).
	 */
	if (attr_size >= offsetof(struct ibv_device_attr_ex, rss_caps) +
			 sizeof(attr->rss_caps)) {
		attr->rss_caps.rx_hash_fields_mask =
			resp.drv.rss_caps.rx_hash_fields_mask;
		attr->rss_caps.rx_hash_function =
			resp.drv.rss_caps.rx_hash_function;
	}
	if (attr_size >= offsetof(struct ibv_device_attr_ex, tso_caps) +
			 sizeof(attr->tso_caps)) {
		attr->tso_caps.max_tso = resp.drv.tso_caps.max_tso;
		attr->tso_caps.supported_qpts = resp.drv.tso_caps.supported_qpts;
	}
	return 0;
}

int mlx4_query_port(struct ibv_context *context, uint8_t port,
		    struct ibv_port_attr *attr)
{
	struct mlx4_context *ctx = to_mctx(context);
	struct ibv_query_port cmd = {};
	int ret;

	ret = ibv_cmd_query_port(context, port, attr, &cmd, sizeof(cmd));
	if (ret)
		return ret;

	if (port >= 1 && port <= MLX4_PORTS_NUM) {
		ctx->port_cap_flags[port - 1] = attr->port_cap_flags;
		ctx->link_layer[port - 1] =
			attr->link_layer == IBV_LINK_LAYER_ETHERNET ?
			IBV_LINK_LAYER_ETHERNET : IBV_LINK_LAYER_INFINIBAND;
	}
	return 0;
}

/* The port's link layer, asked once; -1 for a port that is not there. */
int mlx4_port_link_layer(struct mlx4_context *ctx, uint8_t port)
{
	struct ibv_port_attr attr;

	if (port < 1 || port > MLX4_PORTS_NUM)
		return -1;
	if (!ctx->link_layer[port - 1] &&
	    mlx4_query_port(&ctx->ibv_ctx.context, port, &attr))
		return -1;
	return ctx->link_layer[port - 1];
}

/* ---------------------------------------------------------------------
 * Protection and XRC domains
 */

struct mlx4_alloc_pd_resp {
	struct ib_uverbs_alloc_pd_resp	ibv_resp;
	struct mlx4_ib_alloc_pd_resp	drv;
};

struct ibv_pd *mlx4_alloc_pd(struct ibv_context *context)
{
	struct mlx4_alloc_pd_resp resp = {};
	struct ibv_alloc_pd cmd = {};
	struct mlx4_pd *pd;
	int ret;

	pd = calloc(1, sizeof(*pd));
	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}

	ret = ibv_cmd_alloc_pd(context, &pd->ibv_pd, &cmd, sizeof(cmd),
			       &resp.ibv_resp, sizeof(resp));
	if (ret) {
		free(pd);
		errno = ret;
		return NULL;
	}
	mlx4_mark_defined(&resp, sizeof(resp));

	/* Address vectors name the PD: keep its number. */
	pd->pdn = resp.drv.pdn;
	return &pd->ibv_pd;
}

int mlx4_dealloc_pd(struct ibv_pd *pd)
{
	struct mlx4_pd *mpd = to_mpd(pd);
	int ret;

	if (mlx4_is_parent_domain(mpd))
		return mlx4_dealloc_parent_domain(mpd);
	/* Its parent domains would be left standing for nothing. */
	if (__atomic_load_n(&mpd->users, __ATOMIC_RELAXED))
		return EBUSY;
	ret = ibv_cmd_dealloc_pd(pd);
	if (ret)
		return ret;
	free(to_mpd(pd));
	return 0;
}

struct ibv_xrcd *mlx4_open_xrcd(struct ibv_context *context,
				struct ibv_xrcd_init_attr *attr)
{
	struct ib_uverbs_open_xrcd_resp resp = {};
	struct ibv_open_xrcd cmd = {};
	struct verbs_xrcd *xrcd;
	int ret;

	xrcd = calloc(1, sizeof(*xrcd));
	if (!xrcd) {
		errno = ENOMEM;
		return NULL;
	}

	ret = ibv_cmd_open_xrcd(context, xrcd, sizeof(*xrcd), attr, &cmd,
				sizeof(cmd), &resp, sizeof(resp));
	if (ret) {
		free(xrcd);
		errno = ret;
		return NULL;
	}
	return &xrcd->xrcd;
}

int mlx4_close_xrcd(struct ibv_xrcd *ib_xrcd)
{
	struct verbs_xrcd *xrcd = container_of(ib_xrcd, struct verbs_xrcd, xrcd);
	int ret;

	ret = ibv_cmd_close_xrcd(xrcd);
	if (ret)
		return ret;
	free(xrcd);
	return 0;
}

/* ---------------------------------------------------------------------
 * Memory regions and windows
 */

struct ibv_mr *mlx4_reg_mr(struct ibv_pd *pd, void *addr, size_t length,
			   uint64_t hca_va, int access)
{
	struct ib_uverbs_reg_mr_resp resp;
	struct ibv_reg_mr cmd;
	struct verbs_mr *vmr;
	int ret;

	vmr = calloc(1, sizeof(*vmr));
	if (!vmr) {
		errno = ENOMEM;
		return NULL;
	}

	ret = ibv_cmd_reg_mr(pd, addr, length, hca_va, access, vmr, &cmd,
			     sizeof(cmd), &resp, sizeof(resp));
	if (ret) {
		free(vmr);
		errno = ret;
		return NULL;
	}
	return &vmr->ibv_mr;
}

int mlx4_rereg_mr(struct verbs_mr *vmr, int flags, struct ibv_pd *pd,
		  void *addr, size_t length, int access)
{
	struct ib_uverbs_rereg_mr_resp resp;
	struct ibv_rereg_mr cmd;

	return ibv_cmd_rereg_mr(vmr, flags, addr, length, (uintptr_t)addr,
				access, pd, &cmd, sizeof(cmd), &resp,
				sizeof(resp));
}

int mlx4_dereg_mr(struct verbs_mr *vmr)
{
	int ret;

	ret = ibv_cmd_dereg_mr(vmr);
	if (ret)
		return ret;
	free(vmr);
	return 0;
}

struct ibv_mw *mlx4_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	struct ib_uverbs_alloc_mw_resp resp;
	struct ibv_alloc_mw cmd = {};
	struct ibv_mw *mw;
	int ret;

	mw = calloc(1, sizeof(*mw));
	if (!mw) {
		errno = ENOMEM;
		return NULL;
	}

	ret = ibv_cmd_alloc_mw(pd, type, mw, &cmd, sizeof(cmd), &resp,
			       sizeof(resp));
	if (ret) {
		free(mw);
		errno = ret;
		return NULL;
	}
	return mw;
}

int mlx4_dealloc_mw(struct ibv_mw *mw)
{
	int ret;

	ret = ibv_cmd_dealloc_mw(mw);
	if (ret)
		return ret;
	free(mw);
	return 0;
}

/* A type 1 window is bound through the send queue, like a type 2. */
int mlx4_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw,
		 struct ibv_mw_bind *mw_bind)
{
	const struct ibv_mw_bind_info *info = &mw_bind->bind_info;
	struct ibv_send_wr wr = {}, *bad_wr;
	int ret;

	if (mw->type != IBV_MW_TYPE_1)
		return EINVAL;
	if (info->length) {
		if (!info->mr)
			return EINVAL;
		if (info->mr->pd != mw->pd)
			return EPERM;
	}

	wr.wr_id = mw_bind->wr_id;
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = mw_bind->send_flags;
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
	wr.bind_mw.bind_info = *info;

	ret = mlx4_post_send(qp, &wr, &bad_wr);
	if (ret)
		return ret;

	mw->rkey = wr.bind_mw.rkey;
	return 0;
}

/* ---------------------------------------------------------------------
 * Address handles: built here, never seen by the kernel
 */

/* The VLAN a GID of the old RoCE scheme carries in bytes 11-12, if any. */
static uint16_t gid_vlan(const uint8_t *gid)
{
	uint16_t vid = gid[11] << 8 | gid[12];

	return vid < 0x1000 ? vid : 0xffff;
}

/*
 * RoCE on a port without IP-based GIDs: the MAC (and VLAN) of a
 * link-local GID are in it, a multicast GID maps to 33:33 and the
 * source GID's VLAN; anything else has no layer-2 address we can know.
 */
static int gid_to_l2(struct ibv_pd *pd, struct mlx4_ah *ah,
		     const struct ibv_ah_attr *attr, uint16_t *vid)
{
	static const uint8_t link_local[8] = { 0xfe, 0x80 };
	const uint8_t *gid = attr->grh.dgid.raw;
	union ibv_gid sgid;

	if (gid[0] == 0xff) {
		if (ibv_query_gid(pd->context, attr->port_num,
				  attr->grh.sgid_index, &sgid))
			return EINVAL;
		ah->l2.mac[0] = 0x33;
		ah->l2.mac[1] = 0x33;
		memcpy(ah->l2.mac + 2, gid + 12, 4);
		ah->av.port_pd |= MLX4_BE32(MLX4_AV_ETH_MCAST);
		*vid = gid_vlan(sgid.raw);
		return 0;
	}
	if (!memcmp(gid, link_local, sizeof(link_local))) {
		ah->l2.mac[0] = gid[8] ^ 2;
		ah->l2.mac[1] = gid[9];
		ah->l2.mac[2] = gid[10];
		ah->l2.mac[3] = gid[13];
		ah->l2.mac[4] = gid[14];
		ah->l2.mac[5] = gid[15];
		*vid = gid_vlan(gid);
		return 0;
	}
	return EOPNOTSUPP;
}

/*
 * RoCE: the destination MAC and VLAN.  With IP-based GIDs (IPv4-mapped
 * or global addresses) libibverbs asks the kernel's neighbour table, as
 * rdma-core's mlx4 does.  A VLAN goes into the datagram segment with the
 * priority in its top 3 bits, and the address vector says it is there.
 */
static int roce_resolve_l2(struct mlx4_context *ctx, struct ibv_pd *pd,
			   struct mlx4_ah *ah, struct ibv_ah_attr *attr)
{
	uint16_t vid = 0xffff;
	int ret;

	if (ctx->port_cap_flags[attr->port_num - 1] & IBV_PORT_IP_BASED_GIDS) {
		ret = ibv_resolve_eth_l2_from_gid(pd->context, attr, ah->l2.mac,
						  &vid);
		if (ret)
			return ret < 0 ? -ret : ret;
	} else {
		ret = gid_to_l2(pd, ah, attr, &vid);
		if (ret)
			return ret;
	}
	/*
	 * A multicast destination needs a multicast LID, which the device
	 * does not otherwise use on RoCE (the kernel's create_iboe_ah():
	 * "HW requires multicast LID"); rdma-core's mlx4 sets it only
	 * without IP-based GIDs.
	 */
	if (attr->grh.dgid.raw[0] == 0xff)
		ah->av.dlid = htobe16(0xc000);

	if (vid < 0x1000) {
		ah->av.port_pd |= MLX4_BE32(MLX4_AV_ETH_VLAN);
		ah->l2.vlan = htobe16(vid | (attr->sl & 7) << 13);
	}
	return 0;
}

struct ibv_ah *mlx4_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	struct mlx4_context *ctx = to_mctx(pd->context);
	uint32_t sl_tclass_flowlabel;
	struct mlx4_ah *ah;
	int link_layer;

	link_layer = mlx4_port_link_layer(ctx, attr->port_num);
	if (link_layer < 0 || attr->sl > 15 ||
	    (link_layer == IBV_LINK_LAYER_ETHERNET && !attr->is_global)) {
		errno = EINVAL;
		return NULL;
	}

	ah = calloc(1, sizeof(*ah));
	if (!ah) {
		errno = ENOMEM;
		return NULL;
	}

	ah->av.port_pd = htobe32((uint32_t)attr->port_num << 24 |
				 to_mpd(pd)->pdn);
	if (attr->static_rate)
		ah->av.stat_rate = attr->static_rate + MLX4_STAT_RATE_OFFSET;
	if (link_layer == IBV_LINK_LAYER_ETHERNET) {
		/* No LIDs; a 3-bit priority, one bit higher than an SL. */
		sl_tclass_flowlabel = (uint32_t)(attr->sl & 7) << 29;
	} else {
		ah->av.g_slid = attr->src_path_bits & 0x7f;
		ah->av.dlid = htobe16(attr->dlid);
		sl_tclass_flowlabel = (uint32_t)attr->sl << 28;
	}

	if (attr->is_global) {
		ah->av.g_slid |= 0x80;
		ah->av.gid_index = attr->grh.sgid_index;
		ah->av.hop_limit = attr->grh.hop_limit;
		sl_tclass_flowlabel |= (uint32_t)attr->grh.traffic_class << 20 |
				       (attr->grh.flow_label & 0xfffff);
		memcpy(ah->av.dgid, attr->grh.dgid.raw, sizeof(ah->av.dgid));
	}
	ah->av.sl_tclass_flowlabel = htobe32(sl_tclass_flowlabel);

	if (link_layer == IBV_LINK_LAYER_ETHERNET) {
		int ret = roce_resolve_l2(ctx, pd, ah, attr);

		if (ret) {
			free(ah);
			errno = ret;
			return NULL;
		}
	}
	return &ah->ibv_ah;
}

int mlx4_destroy_ah(struct ibv_ah *ah)
{
	free(to_mah(ah));
	return 0;
}

/* ---------------------------------------------------------------------
 * Multicast, steering
 */

int mlx4_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid,
		      uint16_t lid)
{
	return ibv_cmd_attach_mcast(qp, gid, lid);
}

int mlx4_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid,
		      uint16_t lid)
{
	return ibv_cmd_detach_mcast(qp, gid, lid);
}

struct ibv_flow *mlx4_create_flow(struct ibv_qp *qp,
				  struct ibv_flow_attr *flow_attr)
{
	struct ibv_flow *flow;
	int ret;

	flow = calloc(1, sizeof(*flow));
	if (!flow) {
		errno = ENOMEM;
		return NULL;
	}

	ret = ibv_cmd_create_flow(qp, flow, flow_attr, NULL, 0);
	if (ret) {
		free(flow);
		errno = ret;
		return NULL;
	}
	return flow;
}

int mlx4_destroy_flow(struct ibv_flow *flow)
{
	int ret;

	ret = ibv_cmd_destroy_flow(flow);
	if (ret)
		return ret;
	free(flow);
	return 0;
}

struct mlx4_create_rwq_ind_table_resp {
	struct ib_uverbs_ex_create_rwq_ind_table_resp	ibv_resp;
	struct mlx4_ib_create_rwq_ind_tbl_resp		drv;
};

struct ibv_rwq_ind_table *mlx4_create_rwq_ind_table(
	struct ibv_context *context,
	struct ibv_rwq_ind_table_init_attr *init_attr)
{
	struct mlx4_create_rwq_ind_table_resp resp = {};
	struct ibv_rwq_ind_table *table;
	int ret;

	table = calloc(1, sizeof(*table));
	if (!table) {
		errno = ENOMEM;
		return NULL;
	}

	ret = ibv_cmd_create_rwq_ind_table(context, init_attr, table,
					   &resp.ibv_resp, sizeof(resp));
	if (ret) {
		free(table);
		errno = ret;
		return NULL;
	}
	return table;
}

int mlx4_destroy_rwq_ind_table(struct ibv_rwq_ind_table *table)
{
	int ret;

	ret = ibv_cmd_destroy_rwq_ind_table(table);
	if (ret)
		return ret;
	free(table);
	return 0;
}
