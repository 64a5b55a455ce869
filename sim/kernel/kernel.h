/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The kernel layer: mlx4_ib and ib_uverbs.  The device file's contexts,
 * the uverbs commands and the objects they make, the event files, sysfs.
 * It calls every layer below it.
 */
#ifndef MLX4SIM_KERNEL_H
#define MLX4SIM_KERNEL_H

#include "../adapter/adapter.h"

/* sysfs.c */
int sysfs_create(const char *root);
void sysfs_port_state(const struct sim_port *port);

/* ioctl.c: the uverbs ioctl; 0 or -errno */
int ioctl_request(struct sim_ctx *ctx, const void *payload, size_t len);
bool ioctl_attr_is_value(uint16_t object, uint16_t method, uint16_t id);

/* ctx.c: connections, handles, process teardown */
struct sim_ctx *ctx_new(int sock, pid_t pid);
void ctx_close(struct sim_ctx *ctx);
void ctx_disassociate(struct sim_ctx *ctx);
int ctx_handle_request(struct sim_ctx *ctx);
struct mlx4sim_reply;
int send_reply(struct sim_ctx *ctx, struct mlx4sim_reply *reply,
	       const void *data, size_t len, int fd);
int ctx_reply(struct sim_ctx *ctx, int32_t ret, const void *data, size_t len,
	      int fd);
int uobj_add(struct sim_ctx *ctx, struct sim_uobj *uobj, enum sim_obj_type type);
void uobj_remove(struct sim_uobj *uobj);
void *uobj_get(struct sim_ctx *ctx, uint32_t handle, enum sim_obj_type type);
int uobj_lookup_err(struct sim_ctx *ctx, uint32_t handle);
#define UOBJ_NEVER_BUSY	SIZE_MAX
void *uobj_get_destroy(struct sim_ctx *ctx, uint32_t handle,
		       enum sim_obj_type type, size_t busy_off, int *err);

/* umad.c, ib-mad.c: the umad and issm files, their agents, their MADs */
int umad_request(struct sim_ctx *ctx, uint32_t op, uint32_t arg,
		 const void *payload, size_t len);
void umad_close(struct sim_ctx *ctx);
void umad_timers(uint64_t now, uint64_t *deadline);
/* qp.c: whether the process has @cap among its effective capabilities */
bool has_capability(pid_t pid, int cap);
/* ucma.c: /dev/infiniband/rdma_cm's files (cma.h has the rest) */
int ucma_request(struct sim_ctx *ctx, uint32_t op, const void *payload,
		 size_t len);
void ucma_close(struct sim_ctx *ctx);
void ucma_device_removal(const struct sim_hca *hca);
/* cm-timer.c: the connection manager's timers, from the loop */
void timers_run(uint64_t now, uint64_t *deadline);
/* hosts-net.c: --hosts, each host's adapters */
struct sim_hca *hca_of_host(int host, uint32_t index);
int hosts_file_write(const char *path);
/* ipoib.c: the InfiniBand ports' IP interfaces */
int ipoib_init(void);
const char *ipoib_ifname(const struct sim_port *port);
void ipoib_hwaddr(const struct sim_port *port, uint8_t hw[20]);
void mad_link_changed(struct sim_port *port);
/* fault-request.c: a port's event to every context of its adapter */
void port_event(struct sim_port *port, uint32_t type);
/* event.c */
struct sim_event_file *event_file_new(struct sim_ctx *ctx, bool async);
void event_file_free(struct sim_event_file *file);
struct sim_event_file *event_file_find(struct sim_ctx *ctx, uint32_t id);
void event_post_async(struct sim_ctx *ctx, uint64_t element, uint32_t type,
		      uint32_t *reported, const void *about);
void event_post_comp(struct sim_cq *cq);
int event_pop(struct sim_event_file *file, void *buf, size_t len);
void event_file_count(struct sim_event_file *file);
void event_forget(struct sim_ctx *ctx, const void *about);
void event_listen_to_adapter(void);

/* Command handlers (device.c, pd.c, mr.c, cq.c, qp.c, srq.c, wq.c) */
struct sim_cmd;
int cmd_get_context(struct sim_cmd *cmd);
int cmd_query_device(struct sim_cmd *cmd);
int cmd_ex_query_device(struct sim_cmd *cmd);
int cmd_query_port(struct sim_cmd *cmd);
int cmd_alloc_pd(struct sim_cmd *cmd);
int cmd_dealloc_pd(struct sim_cmd *cmd);
int cmd_open_xrcd(struct sim_cmd *cmd);
int cmd_close_xrcd(struct sim_cmd *cmd);
int cmd_create_ah(struct sim_cmd *cmd);
int cmd_destroy_ah(struct sim_cmd *cmd);
int cmd_reg_mr(struct sim_cmd *cmd);
int cmd_rereg_mr(struct sim_cmd *cmd);
int cmd_dereg_mr(struct sim_cmd *cmd);
int cmd_alloc_mw(struct sim_cmd *cmd);
int cmd_dealloc_mw(struct sim_cmd *cmd);
int cmd_create_comp_channel(struct sim_cmd *cmd);
int cmd_create_cq(struct sim_cmd *cmd);
int cmd_ex_create_cq(struct sim_cmd *cmd);
int cmd_resize_cq(struct sim_cmd *cmd);
int cmd_destroy_cq(struct sim_cmd *cmd);
int cmd_ex_modify_cq(struct sim_cmd *cmd);
int cmd_req_notify_cq(struct sim_cmd *cmd);
int cmd_create_qp(struct sim_cmd *cmd);
int cmd_ex_create_qp(struct sim_cmd *cmd);
int cmd_open_qp(struct sim_cmd *cmd);
int cmd_query_qp(struct sim_cmd *cmd);
int cmd_modify_qp(struct sim_cmd *cmd);
int cmd_ex_modify_qp(struct sim_cmd *cmd);
int cmd_destroy_qp(struct sim_cmd *cmd);
int cmd_attach_mcast(struct sim_cmd *cmd);
int cmd_detach_mcast(struct sim_cmd *cmd);
int cmd_create_srq(struct sim_cmd *cmd);
int cmd_create_xsrq(struct sim_cmd *cmd);
int cmd_modify_srq(struct sim_cmd *cmd);
int cmd_query_srq(struct sim_cmd *cmd);
int cmd_destroy_srq(struct sim_cmd *cmd);
int cmd_ex_create_flow(struct sim_cmd *cmd);
int cmd_ex_destroy_flow(struct sim_cmd *cmd);
int cmd_ex_create_wq(struct sim_cmd *cmd);
int cmd_ex_modify_wq(struct sim_cmd *cmd);
int cmd_ex_destroy_wq(struct sim_cmd *cmd);
int cmd_ex_create_ind_tbl(struct sim_cmd *cmd);
int cmd_ex_destroy_ind_tbl(struct sim_cmd *cmd);

/* umem.c: the pages the kernel pins, shared with the daemon */
struct mlx4sim_share;
void umem_pin(struct sim_ctx *ctx, struct sim_pins *pins, uint64_t addr,
	      uint64_t len, bool whole_pages);
void umem_pin_db(struct sim_ctx *ctx, struct sim_pins *pins, uint64_t addr,
		 uint64_t len);
void umem_unpin(struct sim_ctx *ctx, struct sim_pins *pins);
uint64_t umem_pages(uint64_t addr, uint64_t len);
uint64_t umem_db_pages(const struct sim_ctx *ctx, uint64_t addr);
int umem_may_pin(const struct sim_ctx *ctx, uint64_t pages, uint64_t released);
int umem_may_pin_queue(const struct sim_ctx *ctx, uint64_t buf, uint64_t len,
		       uint64_t db, uint64_t db_len);
int umem_shares(struct sim_ctx *ctx, struct mlx4sim_share *out);
void umem_shares_end(struct sim_ctx *ctx);
int umem_share(struct sim_ctx *ctx, const void *payload, size_t len, int fd);

/* Teardown of objects when their process goes (ctx.c calls these). */
void pd_release(struct sim_pd *pd);
void xrcd_handle_release(struct sim_xrcd_handle *h);
void mr_release(struct sim_mr *mr);
void cq_release(struct sim_cq *cq);
void qp_release(struct sim_qp *qp);
void qp_open_release(struct sim_qp_open *open);
void srq_release(struct sim_srq *srq);
void flow_release(struct sim_flow *flow);
void wq_release(struct sim_wq_obj *wq);
void ind_tbl_release(struct sim_ind_tbl *tbl);

/* device.c: whether mlx4_ib offers the Ethernet-only features (RSS, TSO) */
bool hca_has_eth_port(const struct sim_hca *hca);

/* rss.c */
int rss_check_hash(const struct mlx4_ib_create_qp_rss *drv);
void rss_wq_init(struct sim_wq_obj *wq, struct sim_ctx *ctx);
int rss_wq_apply(struct sim_wq_obj *wq, enum ibv_wq_state state);
int rss_bringup(struct sim_ind_tbl *tbl, uint8_t port);
void rss_release(struct sim_ind_tbl *tbl);

/* fault-request.c: what `mlx4sim fault` asks */
struct mlx4sim_fault_counts;
int fault_request(struct sim_ctx *ctx, const void *payload, size_t len,
		  struct mlx4sim_fault_counts *counts);

/* pd.c */
struct sim_xrcd *xrcd_get(struct sim_xrcd *xrcd);
void xrcd_put(struct sim_xrcd *xrcd);

/* trace-cmd.c: the trace lines of commands and ioctls */
struct sim_cmd;
void trace_command(const struct sim_cmd *cmd, int err);
struct ib_uverbs_ioctl_hdr;
struct ib_uverbs_attr;
void trace_ioctl(const struct sim_ctx *ctx,
		 const struct ib_uverbs_ioctl_hdr *hdr,
		 const struct ib_uverbs_attr *attrs, int nattrs, int err);

#endif
