/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The adapter as a process first meets it: the context it opens, the
 * attributes it queries, the completion channels it creates.  The values
 * are those of a ConnectX-3 or ConnectX-3 Pro (--model) with firmware
 * 2.42.5000, as mlx4_ib reports them.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "uverbs.h"

static const struct sim_model models[] = {
	{ "cx3", 0x1003, false },
	{ "cx3pro", 0x1007, true },
};

/* The model of that name (--model), or NULL. */
const struct sim_model *sim_model_by_name(const char *name)
{
	for (size_t i = 0; i < sizeof(models) / sizeof(models[0]); i++)
		if (!strcmp(models[i].name, name))
			return &models[i];
	return NULL;
}

#define CX3_DEVICE_CAP_FLAGS	0x057e9c76u
#define CX3_PAGE_SIZE_CAP	0xfffffe00u
#define CX3_QP_TAB_SIZE		(1u << 19)
#define CX3_MAX_CQ_MODERATION	0xffff

int cmd_get_context(struct sim_cmd *cmd)
{
	struct sim_ctx *ctx = cmd->ctx;
	struct ib_uverbs_get_context_resp resp = {};
	struct mlx4_ib_alloc_ucontext_resp drv = {};

	if (ctx->has_ucontext)
		return -EINVAL;
	/* What the process wrote to its pages before has reached nothing. */
	memset(ctx->pages, 0, SIM_CTX_PAGES * SIM_PAGE_SIZE);
	ctx->async = event_file_new(ctx, true);
	if (!ctx->async)
		return -ENOMEM;

	resp.num_comp_vectors = hca_comp_vectors();
	drv.dev_caps = sim.opt.cqe_size == 64 ? MLX4_USER_DEV_CAP_LARGE_CQE : 0;
	drv.qp_tab_size = CX3_QP_TAB_SIZE;
	drv.bf_reg_size = CX3_BF_REG_SIZE;
	drv.bf_regs_per_page = CX3_BF_REGS_PER_PAGE;
	drv.cqe_size = sim.opt.cqe_size;
	cmd_out(cmd, &resp, sizeof(resp));
	cmd_drv_out(cmd, &drv, sizeof(drv));
	cmd_pass_fd(cmd, ctx->async->efd,
		    offsetof(struct ib_uverbs_get_context_resp, async_fd),
		    ctx->async->id);
	ctx->has_ucontext = true;
	return 0;
}

static void device_attr(struct sim_hca *hca,
			struct ib_uverbs_query_device_resp *r)
{
	r->fw_ver = CX3_FW_VER;
	r->node_guid = htobe64(hca->node_guid);
	r->sys_image_guid = htobe64(hca->sys_image_guid);
	r->max_mr_size = ~0ULL;
	r->page_size_cap = CX3_PAGE_SIZE_CAP;
	r->vendor_id = CX3_VENDOR_ID;
	r->vendor_part_id = CX3_VENDOR_PART_ID;
	r->hw_ver = CX3_HW_VER;
	r->max_qp = CX3_MAX_QP;
	r->max_qp_wr = CX3_MAX_QP_WR;
	r->device_cap_flags = CX3_DEVICE_CAP_FLAGS;
	r->max_sge = CX3_MAX_SGE;
	r->max_sge_rd = CX3_MAX_SGE_RD;
	r->max_cq = CX3_MAX_CQ;
	r->max_cqe = CX3_MAX_CQE;
	r->max_mr = CX3_MAX_MR;
	r->max_pd = CX3_MAX_PD;
	r->max_qp_rd_atom = CX3_MAX_QP_RD_ATOM;
	r->max_res_rd_atom = CX3_MAX_RES_RD_ATOM;
	r->max_qp_init_rd_atom = CX3_MAX_QP_INIT_RD_ATOM;
	r->atomic_cap = IBV_ATOMIC_HCA;
	r->max_mw = CX3_MAX_MW;
	r->max_mcast_grp = CX3_MAX_MCAST_GRP;
	r->max_mcast_qp_attach = CX3_MAX_MCAST_QP_ATTACH;
	r->max_total_mcast_qp_attach = CX3_MAX_MCAST_GRP *
				       CX3_MAX_MCAST_QP_ATTACH;
	r->max_ah = 0x7fffffff;
	r->max_srq = CX3_MAX_SRQ;
	r->max_srq_wr = CX3_MAX_SRQ_WQES - 1;
	r->max_srq_sge = CX3_MAX_SRQ_SGE;
	r->max_pkeys = CX3_PKEY_TBL_LEN;
	r->local_ca_ack_delay = CX3_LOCAL_ACK_DELAY;
	r->phys_port_cnt = hca->nports;
}

int cmd_query_device(struct sim_cmd *cmd)
{
	struct ib_uverbs_query_device_resp resp = {};

	device_attr(cmd->ctx->hca, &resp);
	cmd_out(cmd, &resp, sizeof(resp));
	return 0;
}

/*
 * mlx4_ib offers RSS and TSO only when a port runs Ethernet (RSS from
 * the device's RSS capability, TSO from its max_gso_sz): an adapter with
 * InfiniBand ports only reports neither, in the common response or the
 * driver's.
 */
bool hca_has_eth_port(const struct sim_hca *hca)
{
	for (int p = 0; p < hca->nports; p++)
		if (hca->port[p].link_layer == IBV_LINK_LAYER_ETHERNET)
			return true;
	return false;
}

int cmd_ex_query_device(struct sim_cmd *cmd)
{
	struct ib_uverbs_ex_query_device_resp resp = {};
	struct mlx4_uverbs_ex_query_device_resp drv = {};
	struct ib_uverbs_ex_query_device req;

	cmd_in(cmd, &req, sizeof(req));
	if (req.comp_mask || req.reserved)
		return -EINVAL;
	device_attr(cmd->ctx->hca, &resp.base);
	resp.response_length = MIN(sizeof(resp), cmd->out_cap);
	resp.timestamp_mask = (1ULL << 48) - 1;
	resp.hca_core_clock = CX3_CORE_CLOCK_KHZ;
	resp.device_cap_flags_ex = CX3_DEVICE_CAP_FLAGS;
	if (hca_has_eth_port(cmd->ctx->hca)) {
		resp.rss_caps.supported_qpts = 1 << IBV_QPT_RAW_PACKET;
		resp.rss_caps.max_rwq_indirection_tables = CX3_MAX_QP;
		resp.rss_caps.max_rwq_indirection_table_size =
			CX3_MAX_RSS_TBL_SZ;
		resp.max_wq_type_rq = CX3_MAX_QP;
		/* The firmware keeps the FCS on request (FCS_KEEP). */
		resp.raw_packet_caps = IBV_RAW_PACKET_CAP_SCATTER_FCS;
	}
	resp.cq_moderation_caps.max_cq_moderation_count = CX3_MAX_CQ_MODERATION;
	resp.cq_moderation_caps.max_cq_moderation_period = CX3_MAX_CQ_MODERATION;
	cmd_out(cmd, &resp, sizeof(resp));

	drv.comp_mask = MLX4_IB_QUERY_DEV_RESP_MASK_CORE_CLOCK_OFFSET;
	drv.response_length = sizeof(drv);
	drv.hca_core_clock_offset = SIM_CLOCK_OFFSET;
	drv.max_inl_recv_sz = CX3_MAX_INL_RECV;
	if (hca_has_eth_port(cmd->ctx->hca)) {
		/* No VXLAN offload mode: no inner-header hashing. */
		drv.rss_caps.rx_hash_function = MLX4_IB_RX_HASH_FUNC_TOEPLITZ;
		drv.rss_caps.rx_hash_fields_mask =
			MLX4_IB_RX_HASH_SRC_IPV4 | MLX4_IB_RX_HASH_DST_IPV4 |
			MLX4_IB_RX_HASH_SRC_IPV6 | MLX4_IB_RX_HASH_DST_IPV6 |
			MLX4_IB_RX_HASH_SRC_PORT_TCP |
			MLX4_IB_RX_HASH_DST_PORT_TCP |
			MLX4_IB_RX_HASH_SRC_PORT_UDP |
			MLX4_IB_RX_HASH_DST_PORT_UDP;
		/* LSO: the device's max_gso_sz, for raw packet QPs. */
		drv.tso_caps.max_tso = CX3_MAX_GSO_SIZE;
		drv.tso_caps.supported_qpts = 1 << IBV_QPT_RAW_PACKET;
	}
	cmd_drv_out(cmd, &drv, sizeof(drv));
	return 0;
}

/*
 * A RoCE port as mlx4_ib reports it: no LIDs or subnet manager, one P_Key,
 * 40GbE as 4X QDR, and the largest IB MTU a 1500-byte Ethernet frame holds
 * with the RoCE headers; the core adds that its GIDs are IP-based.
 */
static void ether_port_attr(const struct sim_port *port,
			    struct ib_uverbs_query_port_resp *resp)
{
	resp->port_cap_flags = CX3_ETH_PORT_CAP_FLAGS | IBV_PORT_IP_BASED_GIDS;
	resp->pkey_tbl_len = 1;
	resp->lid = 0;
	resp->sm_lid = 0;
	resp->active_mtu = IBV_MTU_1024;
	resp->max_vl_num = 2;
	resp->subnet_timeout = 0;
	resp->active_speed = 4;		/* QDR */
	resp->phys_state = port->down ? 3 : 5;	/* Disabled or LinkUp */
	resp->link_layer = IBV_LINK_LAYER_ETHERNET;
}

int cmd_query_port(struct sim_cmd *cmd)
{
	struct ib_uverbs_query_port req;
	struct ib_uverbs_query_port_resp resp = {};
	struct sim_port *port;

	cmd_in(cmd, &req, sizeof(req));
	port = hca_port(cmd->ctx->hca, req.port_num);
	if (!port)
		return -EINVAL;
	resp.port_cap_flags = port_cap_mask(port);
	resp.max_msg_sz = CX3_MAX_MSG_SZ;
	resp.qkey_viol_cntr = port->qkey_violations;
	resp.gid_tbl_len = CX3_GID_TBL_LEN;
	resp.pkey_tbl_len = CX3_PKEY_TBL_LEN;
	resp.lid = port->lid;
	resp.sm_lid = port->sm_lid;
	resp.sm_sl = port->sm_sl;
	resp.state = port->down ? IBV_PORT_DOWN : port->state;
	resp.max_mtu = IBV_MTU_4096;
	resp.active_mtu = IBV_MTU_4096;
	resp.max_vl_num = 4;		/* VL0-7 */
	resp.subnet_timeout = 18;
	resp.active_width = 2;		/* 4X */
	resp.active_speed = 16;		/* FDR, 14.0625 Gb/s a lane */
	resp.phys_state = port->down ? 2 : 5;	/* Polling or LinkUp */
	resp.link_layer = IBV_LINK_LAYER_INFINIBAND;
	if (port->link_layer == IBV_LINK_LAYER_ETHERNET)
		ether_port_attr(port, &resp);
	cmd_out(cmd, &resp, sizeof(resp));
	return 0;
}

int cmd_create_comp_channel(struct sim_cmd *cmd)
{
	struct ib_uverbs_create_comp_channel_resp resp = {};
	struct sim_event_file *file = event_file_new(cmd->ctx, false);

	if (!file)
		return -ENOMEM;
	cmd_out(cmd, &resp, sizeof(resp));
	cmd_pass_fd(cmd, file->efd,
		    offsetof(struct ib_uverbs_create_comp_channel_resp, fd),
		    file->id);
	return 0;
}
