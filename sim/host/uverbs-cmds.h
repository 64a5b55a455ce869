/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The uverbs write commands, once: the daemon's dispatcher (ctx.c), the
 * names the trace prints (trace.c) and the fuzzer's command shapes
 * (tests/sim/sim-fuzz.c) are all made from these lists.  Each user
 * defines the row macros it needs, takes what it uses of a row and
 * ignores the rest, so a column one of them does not know (the fuzzer's
 * handle kinds, the mlx4 driver structures) is never expanded by the
 * others.
 *
 * UVERBS_LEGACY_CMDS(CMD, UNSERVED), in the kernel's numbering
 * (enum ib_uverbs_write_cmds):
 *
 *   CMD(NAME, handler, req, resp, drv_in, drv_out, kind)
 *	a command mlx4_ib serves: IB_USER_VERBS_CMD_NAME, its handler, the
 *	core request's struct (the kernel requires all of it), the size of
 *	the core response (0: none), the sizes of the driver's request and
 *	response the fuzzer builds, and the kind of handle the response
 *	starts with (the fuzzer's enum kind)
 *   UNSERVED(NAME)
 *	a command number the kernel has and mlx4_ib does not serve: only
 *	its name, for the trace; write() is what uverbs answers for a
 *	method it lacks (ctx.c, notsupp_write)
 *
 * UVERBS_EX_CMDS(EX), the extended commands (IB_USER_VERBS_EX_CMD_*):
 *
 *   EX(NAME, handler, req, req_end, resp_min, resp, drv_in, drv_out, kind)
 *	as CMD, but the kernel requires the core request only up to its
 *	field req_end and the response to be resp_min bytes, where the
 *	fuzzer builds resp bytes (0 and 0: no response)
 *
 * GET_CONTEXT is the first row: the fuzzer sends it itself when it opens
 * a file and fuzzes the rows after it.
 */
#ifndef MLX4SIM_UVERBS_CMDS_H
#define MLX4SIM_UVERBS_CMDS_H

#include <rdma/ib_user_verbs.h>

#define UVERBS_LEGACY_CMDS(CMD, UNSERVED)				\
	CMD(GET_CONTEXT, cmd_get_context, struct ib_uverbs_get_context,	\
	    sizeof(struct ib_uverbs_get_context_resp), 0, 0, H_ANY)	\
	CMD(QUERY_DEVICE, cmd_query_device,				\
	    struct ib_uverbs_query_device,				\
	    sizeof(struct ib_uverbs_query_device_resp), 0, 0, H_ANY)	\
	CMD(QUERY_PORT, cmd_query_port, struct ib_uverbs_query_port,	\
	    sizeof(struct ib_uverbs_query_port_resp), 0, 0, H_ANY)	\
	CMD(ALLOC_PD, cmd_alloc_pd, struct ib_uverbs_alloc_pd,		\
	    sizeof(struct ib_uverbs_alloc_pd_resp), 0,			\
	    sizeof(struct mlx4_ib_alloc_pd_resp), H_PD)			\
	CMD(DEALLOC_PD, cmd_dealloc_pd, struct ib_uverbs_dealloc_pd,	\
	    0, 0, 0, H_ANY)						\
	CMD(CREATE_AH, cmd_create_ah, struct ib_uverbs_create_ah,	\
	    sizeof(struct ib_uverbs_create_ah_resp), 0, 0, H_OTHER)	\
	UNSERVED(MODIFY_AH)						\
	UNSERVED(QUERY_AH)						\
	CMD(DESTROY_AH, cmd_destroy_ah, struct ib_uverbs_destroy_ah,	\
	    0, 0, 0, H_ANY)						\
	CMD(REG_MR, cmd_reg_mr, struct ib_uverbs_reg_mr,		\
	    sizeof(struct ib_uverbs_reg_mr_resp), 0, 0, H_OTHER)	\
	UNSERVED(REG_SMR)						\
	CMD(REREG_MR, cmd_rereg_mr, struct ib_uverbs_rereg_mr,		\
	    sizeof(struct ib_uverbs_rereg_mr_resp), 0, 0, H_ANY)	\
	UNSERVED(QUERY_MR)						\
	CMD(DEREG_MR, cmd_dereg_mr, struct ib_uverbs_dereg_mr,		\
	    0, 0, 0, H_ANY)						\
	CMD(ALLOC_MW, cmd_alloc_mw, struct ib_uverbs_alloc_mw,		\
	    sizeof(struct ib_uverbs_alloc_mw_resp), 0, 0, H_OTHER)	\
	UNSERVED(BIND_MW)						\
	CMD(DEALLOC_MW, cmd_dealloc_mw, struct ib_uverbs_dealloc_mw,	\
	    0, 0, 0, H_ANY)						\
	CMD(CREATE_COMP_CHANNEL, cmd_create_comp_channel,		\
	    struct ib_uverbs_create_comp_channel,			\
	    sizeof(struct ib_uverbs_create_comp_channel_resp), 0, 0,	\
	    H_ANY)							\
	CMD(CREATE_CQ, cmd_create_cq, struct ib_uverbs_create_cq,	\
	    sizeof(struct ib_uverbs_create_cq_resp),			\
	    sizeof(struct mlx4_ib_create_cq),				\
	    sizeof(struct mlx4_ib_create_cq_resp), H_CQ)		\
	CMD(RESIZE_CQ, cmd_resize_cq, struct ib_uverbs_resize_cq,	\
	    sizeof(struct ib_uverbs_resize_cq_resp),			\
	    sizeof(struct mlx4_ib_resize_cq), 0, H_ANY)			\
	CMD(DESTROY_CQ, cmd_destroy_cq, struct ib_uverbs_destroy_cq,	\
	    sizeof(struct ib_uverbs_destroy_cq_resp), 0, 0, H_ANY)	\
	UNSERVED(POLL_CQ)						\
	UNSERVED(PEEK_CQ)						\
	CMD(REQ_NOTIFY_CQ, cmd_req_notify_cq,				\
	    struct ib_uverbs_req_notify_cq, 0, 0, 0, H_ANY)		\
	CMD(CREATE_QP, cmd_create_qp, struct ib_uverbs_create_qp,	\
	    sizeof(struct ib_uverbs_create_qp_resp),			\
	    sizeof(struct mlx4_ib_create_qp), 0, H_QP)			\
	CMD(QUERY_QP, cmd_query_qp, struct ib_uverbs_query_qp,		\
	    sizeof(struct ib_uverbs_query_qp_resp), 0, 0, H_ANY)	\
	CMD(MODIFY_QP, cmd_modify_qp, struct ib_uverbs_modify_qp,	\
	    0, 0, 0, H_ANY)						\
	CMD(DESTROY_QP, cmd_destroy_qp, struct ib_uverbs_destroy_qp,	\
	    sizeof(struct ib_uverbs_destroy_qp_resp), 0, 0, H_ANY)	\
	UNSERVED(POST_SEND)						\
	UNSERVED(POST_RECV)						\
	CMD(ATTACH_MCAST, cmd_attach_mcast,				\
	    struct ib_uverbs_attach_mcast, 0, 0, 0, H_ANY)		\
	CMD(DETACH_MCAST, cmd_detach_mcast,				\
	    struct ib_uverbs_detach_mcast, 0, 0, 0, H_ANY)		\
	CMD(CREATE_SRQ, cmd_create_srq, struct ib_uverbs_create_srq,	\
	    sizeof(struct ib_uverbs_create_srq_resp),			\
	    sizeof(struct mlx4_ib_create_srq),				\
	    sizeof(struct mlx4_ib_create_srq_resp), H_SRQ)		\
	CMD(MODIFY_SRQ, cmd_modify_srq, struct ib_uverbs_modify_srq,	\
	    0, 0, 0, H_ANY)						\
	CMD(QUERY_SRQ, cmd_query_srq, struct ib_uverbs_query_srq,	\
	    sizeof(struct ib_uverbs_query_srq_resp), 0, 0, H_ANY)	\
	CMD(DESTROY_SRQ, cmd_destroy_srq, struct ib_uverbs_destroy_srq,	\
	    sizeof(struct ib_uverbs_destroy_srq_resp), 0, 0, H_ANY)	\
	UNSERVED(POST_SRQ_RECV)						\
	CMD(OPEN_XRCD, cmd_open_xrcd, struct ib_uverbs_open_xrcd,	\
	    sizeof(struct ib_uverbs_open_xrcd_resp), 0, 0, H_OTHER)	\
	CMD(CLOSE_XRCD, cmd_close_xrcd, struct ib_uverbs_close_xrcd,	\
	    0, 0, 0, H_ANY)						\
	CMD(CREATE_XSRQ, cmd_create_xsrq, struct ib_uverbs_create_xsrq,	\
	    sizeof(struct ib_uverbs_create_srq_resp),			\
	    sizeof(struct mlx4_ib_create_srq),				\
	    sizeof(struct mlx4_ib_create_srq_resp), H_SRQ)		\
	CMD(OPEN_QP, cmd_open_qp, struct ib_uverbs_open_qp,		\
	    sizeof(struct ib_uverbs_create_qp_resp), 0, 0, H_QP)

#define UVERBS_EX_CMDS(EX)						\
	EX(QUERY_DEVICE, cmd_ex_query_device,				\
	   struct ib_uverbs_ex_query_device, reserved,			\
	   offsetofend(struct ib_uverbs_ex_query_device_resp,		\
		       response_length),				\
	   sizeof(struct ib_uverbs_ex_query_device_resp), 0,		\
	   sizeof(struct mlx4_uverbs_ex_query_device_resp), H_ANY)	\
	EX(CREATE_CQ, cmd_ex_create_cq, struct ib_uverbs_ex_create_cq,	\
	   reserved,							\
	   offsetofend(struct ib_uverbs_ex_create_cq_resp,		\
		       response_length),				\
	   sizeof(struct ib_uverbs_ex_create_cq_resp),			\
	   sizeof(struct mlx4_ib_create_cq),				\
	   sizeof(struct mlx4_ib_create_cq_resp), H_CQ)		\
	EX(CREATE_QP, cmd_ex_create_qp, struct ib_uverbs_ex_create_qp,	\
	   comp_mask,							\
	   offsetofend(struct ib_uverbs_ex_create_qp_resp,		\
		       response_length),				\
	   sizeof(struct ib_uverbs_ex_create_qp_resp),			\
	   sizeof(struct mlx4_ib_create_qp), 0, H_QP)			\
	EX(MODIFY_QP, cmd_ex_modify_qp, struct ib_uverbs_ex_modify_qp,	\
	   base,							\
	   offsetofend(struct ib_uverbs_ex_modify_qp_resp,		\
		       response_length),				\
	   sizeof(struct ib_uverbs_ex_modify_qp_resp), 0, 0, H_ANY)	\
	EX(CREATE_FLOW, cmd_ex_create_flow, struct ib_uverbs_create_flow,	\
	   flow_attr,							\
	   offsetofend(struct ib_uverbs_create_flow_resp, flow_handle),	\
	   sizeof(struct ib_uverbs_create_flow_resp), 0, 0, H_ANY)	\
	EX(DESTROY_FLOW, cmd_ex_destroy_flow,				\
	   struct ib_uverbs_destroy_flow, flow_handle, 0, 0, 0, 0, H_ANY) \
	EX(CREATE_WQ, cmd_ex_create_wq, struct ib_uverbs_ex_create_wq,	\
	   max_sge,							\
	   offsetofend(struct ib_uverbs_ex_create_wq_resp, wqn),	\
	   sizeof(struct ib_uverbs_ex_create_wq_resp),			\
	   sizeof(struct mlx4_ib_create_wq), 0, H_ANY)			\
	EX(MODIFY_WQ, cmd_ex_modify_wq, struct ib_uverbs_ex_modify_wq,	\
	   curr_wq_state, 0, 0, sizeof(struct mlx4_ib_modify_wq), 0,	\
	   H_ANY)							\
	EX(DESTROY_WQ, cmd_ex_destroy_wq, struct ib_uverbs_ex_destroy_wq,	\
	   wq_handle,							\
	   offsetofend(struct ib_uverbs_ex_destroy_wq_resp, reserved),	\
	   sizeof(struct ib_uverbs_ex_destroy_wq_resp), 0, 0, H_ANY)	\
	EX(CREATE_RWQ_IND_TBL, cmd_ex_create_ind_tbl,			\
	   struct ib_uverbs_ex_create_rwq_ind_table, log_ind_tbl_size,	\
	   offsetofend(struct ib_uverbs_ex_create_rwq_ind_table_resp,	\
		       ind_tbl_num),					\
	   sizeof(struct ib_uverbs_ex_create_rwq_ind_table_resp), 0,	\
	   sizeof(struct mlx4_ib_create_rwq_ind_tbl_resp), H_ANY)	\
	EX(DESTROY_RWQ_IND_TBL, cmd_ex_destroy_ind_tbl,			\
	   struct ib_uverbs_ex_destroy_rwq_ind_table, ind_tbl_handle,	\
	   0, 0, 0, 0, H_ANY)						\
	EX(MODIFY_CQ, cmd_ex_modify_cq, struct ib_uverbs_ex_modify_cq,	\
	   reserved, 0, 0, 0, 0, H_ANY)

#endif
