/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The libibverbs provider interface, private ABI version 34 or 65.
 *
 * rdma-core builds its providers in-tree and installs no header for the
 * interface they share with libibverbs, so an out-of-tree provider has
 * to declare it.  Everything here keeps libibverbs' own struct, member
 * and function names; the layouts are those of rdma-core 34 to 56
 * (symbol version IBVERBS_PRIVATE_34) or of rdma-core 65
 * (IBVERBS_PRIVATE_65), as configure found (MLX4_PABI_VERSION), and are
 * checked member by member against measured offsets by tests/unit/abi.
 *
 * Public types (struct ibv_context, verbs_context, ibv_cq_ex, ...) come
 * from <infiniband/verbs.h>; the kernel command payloads from
 * <rdma/ib_user_verbs.h>.
 */
#ifndef MLX4_DRIVER_H
#define MLX4_DRIVER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/ib_user_ioctl_verbs.h>

#if MLX4_PABI_VERSION != 34 && MLX4_PABI_VERSION != 65
#error "MLX4_PABI_VERSION must be 34 or 65 (configure sets it)"
#endif

/*
 * What only version 65 has: PABI65(...) stands for its arguments there
 * and for nothing in version 34.
 */
#if MLX4_PABI_VERSION >= 65
#define PABI65(...)	__VA_ARGS__
#else
#define PABI65(...)
#endif

/* Opaque to providers that only use the write() command helpers. */
struct ibv_command_buffer;
struct verbs_ex_private;

/* A node of libibverbs' intrusive lists (ccan/list). */
struct list_node {
	struct list_node *next, *prev;
};

/* ---------------------------------------------------------------------
 * Device discovery and matching
 */

enum {
	VERBS_MATCH_SENTINEL	= 0,
	VERBS_MATCH_PCI		= 1,
	VERBS_MATCH_MODALIAS	= 2,
	VERBS_MATCH_DRIVER_ID	= 3,
};

struct verbs_match_ent {
	void *driver_data;
	union {
		const char *modalias;
		uint64_t driver_id;
	} u;
	uint16_t vendor;
	uint16_t device;
	uint8_t kind;
};

#define VERBS_PCI_MATCH(_vendor, _device, _data)			\
	{ .driver_data = (void *)(_data), .vendor = (_vendor),		\
	  .device = (_device), .kind = VERBS_MATCH_PCI }
#define VERBS_DRIVER_ID(_id)						\
	{ .u.driver_id = (_id), .kind = VERBS_MATCH_DRIVER_ID }

/* What libibverbs learnt about a device from sysfs / netlink. */
struct verbs_sysfs_dev {
	struct list_node entry;
	void *provider_data;
	const struct verbs_match_ent *match;
	unsigned int flags;
	char sysfs_name[IBV_SYSFS_NAME_MAX];
	dev_t sysfs_cdev;
	char ibdev_name[IBV_SYSFS_NAME_MAX];
	char ibdev_path[IBV_SYSFS_PATH_MAX];
	char modalias[512];
	uint64_t node_guid;
	uint32_t driver_id;
	enum ibv_node_type node_type;
	int ibdev_idx;
	uint32_t num_ports;
	uint32_t abi_ver;
	struct timespec time_created;
};

struct verbs_device;

struct verbs_device_ops {
	const char *name;

	uint32_t match_min_abi_version;
	uint32_t match_max_abi_version;
	const struct verbs_match_ent *match_table;
	const struct verbs_device_ops **static_providers;

	bool (*match_device)(struct verbs_sysfs_dev *sysfs_dev);

	struct verbs_context *(*alloc_context)(struct ibv_device *device,
					       int cmd_fd,
					       void *private_data);
	struct verbs_context *(*import_context)(struct ibv_device *device,
						int cmd_fd);

	struct verbs_device *(*alloc_device)(struct verbs_sysfs_dev *sysfs_dev);
	void (*uninit_device)(struct verbs_device *device);
};

/* A provider's device object embeds this one. */
struct verbs_device {
	struct ibv_device device;
	const struct verbs_device_ops *ops;
	atomic_int refcount;
	struct list_node entry;
	struct verbs_sysfs_dev *sysfs;
	uint64_t core_support;
};

#if MLX4_PABI_VERSION >= 65
void verbs_register_driver_65(const struct verbs_device_ops *ops);
#define verbs_register_driver	verbs_register_driver_65
#else
void verbs_register_driver_34(const struct verbs_device_ops *ops);
#define verbs_register_driver	verbs_register_driver_34
#endif

/* ---------------------------------------------------------------------
 * Objects that libibverbs and the provider share
 */

enum ibv_mr_type {
	IBV_MR_TYPE_MR,
	IBV_MR_TYPE_NULL_MR,
	IBV_MR_TYPE_IMPORTED_MR,
	IBV_MR_TYPE_DMABUF_MR,
};

struct verbs_mr {
	struct ibv_mr ibv_mr;
	enum ibv_mr_type mr_type;
	int access;
};

struct verbs_xrcd {
	struct ibv_xrcd xrcd;
	uint32_t comp_mask;
	uint32_t handle;
};

struct verbs_srq {
	struct ibv_srq srq;
	enum ibv_srq_type srq_type;
	struct verbs_xrcd *xrcd;
	struct ibv_cq *cq;
	uint32_t srq_num;
};

/* verbs_qp.comp_mask: VERBS_QP_EX makes ibv_qp_to_qp_ex() answer. */
enum verbs_qp_mask {
	VERBS_QP_XRCD = 1 << 0,
	VERBS_QP_EX = 1 << 1,
};

struct verbs_qp {
	union {
		struct ibv_qp qp;
		struct ibv_qp_ex qp_ex;
	};
	uint32_t comp_mask;
	struct verbs_xrcd *xrcd;
};

struct verbs_cq {
	union {
		struct ibv_cq cq;
		struct ibv_cq_ex cq_ex;
	};
};

enum ibv_flow_action_type {
	IBV_FLOW_ACTION_UNSPECIFIED,
	IBV_FLOW_ACTION_ESP = 1,
};

struct verbs_flow_action {
	struct ibv_flow_action action;
	uint32_t handle;
	enum ibv_flow_action_type type;
};

struct verbs_dm {
	struct ibv_dm dm;
	uint32_t handle;
};

struct verbs_counters {
	struct ibv_counters counters;
	uint32_t handle;
};

#if MLX4_PABI_VERSION >= 65
/* A buffer libibverbs allocated for a provider, or the user handed in. */
struct ibv_buf {
	void *addr;
	size_t size;
	struct ibv_pd *pd;
	int dmabuf_fd;
};

/* Memory the caller gives a CQ (CREATE_CQ_CMD_FLAGS_WITH_MEM_*). */
struct verbs_create_cq_prov_attr {
	struct {
		uint64_t length;
		union {
			uint8_t *ptr;
			struct {
				uint64_t offset;
				int fd;
			} dmabuf;
		};
	} buffer;
};

struct verbs_dmah {
	struct ibv_dmah dmah;
	uint32_t handle;
};
#endif

/* ---------------------------------------------------------------------
 * The provider's operations.  verbs_set_ops() copies the non-NULL ones;
 * libibverbs answers EOPNOTSUPP for the rest.  Alphabetical, as upstream.
 */
struct verbs_context_ops {
	int (*advise_mr)(struct ibv_pd *pd,
			 enum ib_uverbs_advise_mr_advice advice,
			 uint32_t flags, struct ibv_sge *sg_list,
			 uint32_t num_sges);
	PABI65(void *(*alloc_buf)(struct ibv_pd *pd, size_t size,
				  struct ibv_buf **buf);)
	struct ibv_dm *(*alloc_dm)(struct ibv_context *context,
				   struct ibv_alloc_dm_attr *attr);
	PABI65(struct ibv_dmah *(*alloc_dmah)(struct ibv_context *context,
					      struct ibv_dmah_init_attr *attr);)
	struct ibv_mw *(*alloc_mw)(struct ibv_pd *pd, enum ibv_mw_type type);
	struct ibv_mr *(*alloc_null_mr)(struct ibv_pd *pd);
	struct ibv_pd *(*alloc_parent_domain)(
		struct ibv_context *context,
		struct ibv_parent_domain_init_attr *attr);
	struct ibv_pd *(*alloc_pd)(struct ibv_context *context);
	struct ibv_td *(*alloc_td)(struct ibv_context *context,
				   struct ibv_td_init_attr *init_attr);
	void (*async_event)(struct ibv_context *context,
			    struct ibv_async_event *event);
	int (*attach_counters_point_flow)(struct ibv_counters *counters,
					  struct ibv_counter_attach_attr *attr,
					  struct ibv_flow *flow);
	int (*attach_mcast)(struct ibv_qp *qp, const union ibv_gid *gid,
			    uint16_t lid);
	int (*bind_mw)(struct ibv_qp *qp, struct ibv_mw *mw,
		       struct ibv_mw_bind *mw_bind);
	int (*close_xrcd)(struct ibv_xrcd *xrcd);
	void (*cq_event)(struct ibv_cq *cq);
	struct ibv_ah *(*create_ah)(struct ibv_pd *pd,
				    struct ibv_ah_attr *attr);
	PABI65(struct ibv_comp_cntr *(*create_comp_cntr)(
		struct ibv_context *context,
		struct ibv_comp_cntr_init_attr *attr);)
	struct ibv_counters *(*create_counters)(
		struct ibv_context *context,
		struct ibv_counters_init_attr *init_attr);
	struct ibv_cq *(*create_cq)(struct ibv_context *context, int cqe,
				    struct ibv_comp_channel *channel,
				    int comp_vector);
	struct ibv_cq_ex *(*create_cq_ex)(
		struct ibv_context *context,
		struct ibv_cq_init_attr_ex *init_attr);
	struct ibv_flow *(*create_flow)(struct ibv_qp *qp,
					struct ibv_flow_attr *flow_attr);
	struct ibv_flow_action *(*create_flow_action_esp)(
		struct ibv_context *context,
		struct ibv_flow_action_esp_attr *attr);
	struct ibv_qp *(*create_qp)(struct ibv_pd *pd,
				    struct ibv_qp_init_attr *attr);
	struct ibv_qp *(*create_qp_ex)(
		struct ibv_context *context,
		struct ibv_qp_init_attr_ex *qp_init_attr_ex);
	struct ibv_rwq_ind_table *(*create_rwq_ind_table)(
		struct ibv_context *context,
		struct ibv_rwq_ind_table_init_attr *init_attr);
	struct ibv_srq *(*create_srq)(struct ibv_pd *pd,
				      struct ibv_srq_init_attr *srq_init_attr);
	struct ibv_srq *(*create_srq_ex)(
		struct ibv_context *context,
		struct ibv_srq_init_attr_ex *srq_init_attr_ex);
	struct ibv_wq *(*create_wq)(struct ibv_context *context,
				    struct ibv_wq_init_attr *wq_init_attr);
	PABI65(int (*dealloc_dmah)(struct ibv_dmah *dmah);)
	int (*dealloc_mw)(struct ibv_mw *mw);
	int (*dealloc_pd)(struct ibv_pd *pd);
	int (*dealloc_td)(struct ibv_td *td);
	int (*dereg_mr)(struct verbs_mr *vmr);
	int (*destroy_ah)(struct ibv_ah *ah);
	PABI65(int (*destroy_comp_cntr)(struct ibv_comp_cntr *comp_cntr);)
	int (*destroy_counters)(struct ibv_counters *counters);
	int (*destroy_cq)(struct ibv_cq *cq);
	int (*destroy_flow)(struct ibv_flow *flow);
	int (*destroy_flow_action)(struct ibv_flow_action *action);
	int (*destroy_qp)(struct ibv_qp *qp);
	int (*destroy_rwq_ind_table)(struct ibv_rwq_ind_table *rwq_ind_table);
	int (*destroy_srq)(struct ibv_srq *srq);
	int (*destroy_wq)(struct ibv_wq *wq);
	int (*detach_mcast)(struct ibv_qp *qp, const union ibv_gid *gid,
			    uint16_t lid);
	PABI65(int (*dm_export_dmabuf_fd)(struct ibv_dm *dm);)
	PABI65(void (*free_buf)(struct ibv_buf *buf);)
	void (*free_context)(struct ibv_context *context);
	int (*free_dm)(struct ibv_dm *dm);
	int (*get_srq_num)(struct ibv_srq *srq, uint32_t *srq_num);
	struct ibv_dm *(*import_dm)(struct ibv_context *context,
				    uint32_t dm_handle);
	struct ibv_mr *(*import_mr)(struct ibv_pd *pd, uint32_t mr_handle);
	struct ibv_pd *(*import_pd)(struct ibv_context *context,
				    uint32_t pd_handle);
	PABI65(int (*inc_comp_cntr)(struct ibv_comp_cntr *comp_cntr,
				    uint64_t amount);)
	PABI65(int (*inc_err_comp_cntr)(struct ibv_comp_cntr *comp_cntr,
					uint64_t amount);)
	int (*modify_cq)(struct ibv_cq *cq, struct ibv_modify_cq_attr *attr);
	int (*modify_flow_action_esp)(struct ibv_flow_action *action,
				      struct ibv_flow_action_esp_attr *attr);
	int (*modify_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			 int attr_mask);
	int (*modify_qp_rate_limit)(struct ibv_qp *qp,
				    struct ibv_qp_rate_limit_attr *attr);
	int (*modify_srq)(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr,
			  int srq_attr_mask);
	int (*modify_wq)(struct ibv_wq *wq, struct ibv_wq_attr *wq_attr);
	struct ibv_qp *(*open_qp)(struct ibv_context *context,
				  struct ibv_qp_open_attr *attr);
	struct ibv_xrcd *(*open_xrcd)(
		struct ibv_context *context,
		struct ibv_xrcd_init_attr *xrcd_init_attr);
	int (*poll_cq)(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc);
	int (*post_recv)(struct ibv_qp *qp, struct ibv_recv_wr *wr,
			 struct ibv_recv_wr **bad_wr);
	int (*post_send)(struct ibv_qp *qp, struct ibv_send_wr *wr,
			 struct ibv_send_wr **bad_wr);
	int (*post_srq_ops)(struct ibv_srq *srq, struct ibv_ops_wr *op,
			    struct ibv_ops_wr **bad_op);
	int (*post_srq_recv)(struct ibv_srq *srq, struct ibv_recv_wr *recv_wr,
			     struct ibv_recv_wr **bad_recv_wr);
	PABI65(int (*qp_attach_comp_cntr)(
		struct ibv_qp *qp, struct ibv_comp_cntr *comp_cntr,
		struct ibv_qp_attach_comp_cntr_attr *attr);)
	PABI65(int (*query_comp_cntr_caps)(struct ibv_context *context,
					   struct ibv_comp_cntr_caps *caps,
					   size_t caps_size);)
	int (*query_device_ex)(struct ibv_context *context,
			       const struct ibv_query_device_ex_input *input,
			       struct ibv_device_attr_ex *attr,
			       size_t attr_size);
	int (*query_ece)(struct ibv_qp *qp, struct ibv_ece *ece);
	int (*query_port)(struct ibv_context *context, uint8_t port_num,
			  struct ibv_port_attr *port_attr);
	PABI65(int (*query_port_speed)(struct ibv_context *context,
				       uint32_t port_num, uint64_t *speed);)
	int (*query_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			int attr_mask, struct ibv_qp_init_attr *init_attr);
	int (*query_qp_data_in_order)(struct ibv_qp *qp,
				      enum ibv_wr_opcode op, uint32_t flags);
	int (*query_rt_values)(struct ibv_context *context,
			       struct ibv_values_ex *values);
	int (*query_srq)(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr);
	PABI65(int (*read_comp_cntr)(struct ibv_comp_cntr *comp_cntr,
				     uint64_t *value);)
	int (*read_counters)(struct ibv_counters *counters,
			     uint64_t *counters_value, uint32_t ncounters,
			     uint32_t flags);
	PABI65(int (*read_err_comp_cntr)(struct ibv_comp_cntr *comp_cntr,
					 uint64_t *value);)
	struct ibv_mr *(*reg_dm_mr)(struct ibv_pd *pd, struct ibv_dm *dm,
				    uint64_t dm_offset, size_t length,
				    unsigned int access);
	struct ibv_mr *(*reg_dmabuf_mr)(struct ibv_pd *pd, uint64_t offset,
					size_t length, uint64_t iova, int fd,
					int access);
	struct ibv_mr *(*reg_mr)(struct ibv_pd *pd, void *addr, size_t length,
				 uint64_t hca_va, int access);
	PABI65(struct ibv_mr *(*reg_mr_ex)(struct ibv_pd *pd,
				   struct ibv_mr_init_attr *mr_init_attr);)
	int (*req_notify_cq)(struct ibv_cq *cq, int solicited_only);
	int (*rereg_mr)(struct verbs_mr *vmr, int flags, struct ibv_pd *pd,
			void *addr, size_t length, int access);
	int (*resize_cq)(struct ibv_cq *cq, int cqe);
	PABI65(int (*set_comp_cntr)(struct ibv_comp_cntr *comp_cntr,
				    uint64_t value);)
	int (*set_ece)(struct ibv_qp *qp, struct ibv_ece *ece);
	PABI65(int (*set_err_comp_cntr)(struct ibv_comp_cntr *comp_cntr,
					uint64_t value);)
	void (*unimport_dm)(struct ibv_dm *dm);
	void (*unimport_mr)(struct ibv_mr *mr);
	void (*unimport_pd)(struct ibv_pd *pd);
};

/* ---------------------------------------------------------------------
 * Command buffers.  Each is the uverbs header followed by the core
 * payload, reachable both as one struct (core_payload) and member by
 * member; a provider appends its driver data after the whole struct.
 */

struct ex_hdr {
	struct ib_uverbs_cmd_hdr hdr;
	struct ib_uverbs_ex_cmd_hdr ex_hdr;
};

struct ibv_get_context {
	struct ib_uverbs_cmd_hdr hdr;
	union {
		struct ib_uverbs_get_context core_payload;
		struct {
			__u64 response;
		};
	};
};

struct ibv_query_port {
	struct ib_uverbs_cmd_hdr hdr;
	union {
		struct ib_uverbs_query_port core_payload;
		struct {
			__u64 response;
			__u8 port_num;
			__u8 reserved[7];
		};
	};
};

struct ibv_alloc_pd {
	struct ib_uverbs_cmd_hdr hdr;
	union {
		struct ib_uverbs_alloc_pd core_payload;
		struct {
			__u64 response;
		};
	};
};

struct ibv_open_xrcd {
	struct ib_uverbs_cmd_hdr hdr;
	union {
		struct ib_uverbs_open_xrcd core_payload;
		struct {
			__u64 response;
			__u32 fd;
			__u32 oflags;
		};
	};
};

struct ibv_reg_mr {
	struct ib_uverbs_cmd_hdr hdr;
	union {
		struct ib_uverbs_reg_mr core_payload;
		struct {
			__u64 response;
			__u64 start;
			__u64 length;
			__u64 hca_va;
			__u32 pd_handle;
			__u32 access_flags;
		};
	};
};

struct ibv_rereg_mr {
	struct ib_uverbs_cmd_hdr hdr;
	union {
		struct ib_uverbs_rereg_mr core_payload;
		struct {
			__u64 response;
			__u32 mr_handle;
			__u32 flags;
			__u64 start;
			__u64 length;
			__u64 hca_va;
			__u32 pd_handle;
			__u32 access_flags;
		};
	};
};

struct ibv_alloc_mw {
	struct ib_uverbs_cmd_hdr hdr;
	union {
		struct ib_uverbs_alloc_mw core_payload;
		struct {
			__u64 response;
			__u32 pd_handle;
			__u8 mw_type;
			__u8 reserved[3];
		};
	};
};

struct ibv_create_cq {
	struct ib_uverbs_cmd_hdr hdr;
	union {
		struct ib_uverbs_create_cq core_payload;
		struct {
			__u64 response;
			__u64 user_handle;
			__u32 cqe;
			__u32 comp_vector;
			__s32 comp_channel;
			__u32 reserved;
		};
	};
};

struct ibv_create_cq_ex {
	struct ex_hdr hdr;
	union {
		struct ib_uverbs_ex_create_cq core_payload;
		struct {
			__u64 user_handle;
			__u32 cqe;
			__u32 comp_vector;
			__s32 comp_channel;
			__u32 comp_mask;
			__u32 flags;
			__u32 reserved;
		};
	};
};

struct ibv_resize_cq {
	struct ib_uverbs_cmd_hdr hdr;
	union {
		struct ib_uverbs_resize_cq core_payload;
		struct {
			__u64 response;
			__u32 cq_handle;
			__u32 cqe;
		};
	};
};

struct ibv_modify_cq {
	struct ex_hdr hdr;
	union {
		struct ib_uverbs_ex_modify_cq core_payload;
		struct {
			__u32 cq_handle;
			__u32 attr_mask;
			struct ib_uverbs_cq_moderation attr;
			__u32 reserved;
		};
	};
};

struct ibv_create_srq {
	struct ib_uverbs_cmd_hdr hdr;
	union {
		struct ib_uverbs_create_srq core_payload;
		struct {
			__u64 response;
			__u64 user_handle;
			__u32 pd_handle;
			__u32 max_wr;
			__u32 max_sge;
			__u32 srq_limit;
		};
	};
};

struct ibv_create_xsrq {
	struct ib_uverbs_cmd_hdr hdr;
	union {
		struct ib_uverbs_create_xsrq core_payload;
		struct {
			__u64 response;
			__u64 user_handle;
			__u32 srq_type;
			__u32 pd_handle;
			__u32 max_wr;
			__u32 max_sge;
			__u32 srq_limit;
			__u32 max_num_tags;
			__u32 xrcd_handle;
			__u32 cq_handle;
		};
	};
};

struct ibv_modify_srq {
	struct ib_uverbs_cmd_hdr hdr;
	union {
		struct ib_uverbs_modify_srq core_payload;
		struct {
			__u32 srq_handle;
			__u32 attr_mask;
			__u32 max_wr;
			__u32 srq_limit;
		};
	};
};

struct ibv_query_srq {
	struct ib_uverbs_cmd_hdr hdr;
	union {
		struct ib_uverbs_query_srq core_payload;
		struct {
			__u64 response;
			__u32 srq_handle;
			__u32 reserved;
		};
	};
};

/* The request fields CREATE_QP and EX_CREATE_QP share, after user_handle. */
#define CREATE_QP_FIELDS						\
	__u32 pd_handle;						\
	__u32 send_cq_handle;						\
	__u32 recv_cq_handle;						\
	__u32 srq_handle;						\
	__u32 max_send_wr;						\
	__u32 max_recv_wr;						\
	__u32 max_send_sge;						\
	__u32 max_recv_sge;						\
	__u32 max_inline_data;						\
	__u8 sq_sig_all;						\
	__u8 qp_type;							\
	__u8 is_srq;							\
	__u8 reserved;

struct ibv_create_qp {
	struct ib_uverbs_cmd_hdr hdr;
	union {
		struct ib_uverbs_create_qp core_payload;
		struct {
			__u64 response;
			__u64 user_handle;
			CREATE_QP_FIELDS
		};
	};
};

struct ibv_create_qp_ex {
	struct ex_hdr hdr;
	union {
		struct ib_uverbs_ex_create_qp core_payload;
		struct {
			__u64 user_handle;
			CREATE_QP_FIELDS
			__u32 comp_mask;
			__u32 create_flags;
			__u32 rwq_ind_tbl_handle;
			__u32 source_qpn;
		};
	};
};

struct ibv_open_qp {
	struct ib_uverbs_cmd_hdr hdr;
	union {
		struct ib_uverbs_open_qp core_payload;
		struct {
			__u64 response;
			__u64 user_handle;
			__u32 pd_handle;
			__u32 qpn;
			__u8 qp_type;
			__u8 reserved[7];
		};
	};
};

struct ibv_query_qp {
	struct ib_uverbs_cmd_hdr hdr;
	union {
		struct ib_uverbs_query_qp core_payload;
		struct {
			__u64 response;
			__u32 qp_handle;
			__u32 attr_mask;
		};
	};
};

struct ibv_modify_qp {
	struct ib_uverbs_cmd_hdr hdr;
	union {
		struct ib_uverbs_modify_qp core_payload;
		struct {
			struct ib_uverbs_qp_dest dest;
			struct ib_uverbs_qp_dest alt_dest;
			__u32 qp_handle;
			__u32 attr_mask;
			__u32 qkey;
			__u32 rq_psn;
			__u32 sq_psn;
			__u32 dest_qp_num;
			__u32 qp_access_flags;
			__u16 pkey_index;
			__u16 alt_pkey_index;
			__u8 qp_state;
			__u8 cur_qp_state;
			__u8 path_mtu;
			__u8 path_mig_state;
			__u8 en_sqd_async_notify;
			__u8 max_rd_atomic;
			__u8 max_dest_rd_atomic;
			__u8 min_rnr_timer;
			__u8 port_num;
			__u8 timeout;
			__u8 retry_cnt;
			__u8 rnr_retry;
			__u8 alt_port_num;
			__u8 alt_timeout;
			__u8 reserved[2];
			__u64 driver_data[0];
		};
	};
};

struct ibv_modify_qp_ex {
	struct ex_hdr hdr;
	union {
		struct ib_uverbs_ex_modify_qp core_payload;
		struct {
			struct ib_uverbs_modify_qp base;
			__u32 rate_limit;
			__u32 reserved;
		};
	};
};

struct ibv_create_wq {
	struct ex_hdr hdr;
	union {
		struct ib_uverbs_ex_create_wq core_payload;
		struct {
			__u32 comp_mask;
			__u32 wq_type;
			__u64 user_handle;
			__u32 pd_handle;
			__u32 cq_handle;
			__u32 max_wr;
			__u32 max_sge;
			__u32 create_flags;
			__u32 reserved;
		};
	};
};

struct ibv_modify_wq {
	struct ex_hdr hdr;
	union {
		struct ib_uverbs_ex_modify_wq core_payload;
		struct {
			__u32 attr_mask;
			__u32 wq_handle;
			__u32 wq_state;
			__u32 curr_wq_state;
			__u32 flags;
			__u32 flags_mask;
		};
	};
};

/* ---------------------------------------------------------------------
 * libibverbs services (IBVERBS_PRIVATE_34 or _65)
 *
 * Where version 65 added a parameter, the provider passes what gives
 * version 34's behaviour: PABI65(NULL,) and friends at the call.
 */

/*
 * Exported by libibverbs (IBVERBS_1.1) for providers, though no installed
 * header declares them: keep queue pages out of fork()'s copy-on-write.
 */
int ibv_dontfork_range(void *base, size_t size);
int ibv_dofork_range(void *base, size_t size);

void *_verbs_init_and_alloc_context(struct ibv_device *device, int cmd_fd,
				    size_t alloc_size,
				    struct verbs_context *context_offset,
				    uint32_t driver_id);

/*
 * Allocate and initialise the provider context @type whose struct
 * verbs_context is @member.
 */
#define verbs_init_and_alloc_context(ibdev, cmd_fd, type, member, drv_id) \
	((type *)_verbs_init_and_alloc_context(				\
		ibdev, cmd_fd, sizeof(type),				\
		(struct verbs_context *)offsetof(type, member), drv_id))

void verbs_uninit_context(struct verbs_context *context);
void verbs_set_ops(struct verbs_context *vctx,
		   const struct verbs_context_ops *ops);
void verbs_init_cq(struct ibv_cq *cq, struct ibv_context *context,
		   struct ibv_comp_channel *channel, void *cq_context);

int ibv_cmd_get_context(struct verbs_context *context,
			struct ibv_get_context *cmd, size_t cmd_size,
			PABI65(struct ibv_fd_arr *fd_arr,)
			struct ib_uverbs_get_context_resp *resp,
			size_t resp_size);
int ibv_cmd_query_device_any(struct ibv_context *context,
			     const struct ibv_query_device_ex_input *input,
			     struct ibv_device_attr_ex *attr, size_t attr_size,
			     struct ib_uverbs_ex_query_device_resp *resp,
			     size_t *resp_size);
int ibv_cmd_query_port(struct ibv_context *context, uint8_t port_num,
		       struct ibv_port_attr *port_attr,
		       struct ibv_query_port *cmd, size_t cmd_size);

int ibv_cmd_alloc_pd(struct ibv_context *context, struct ibv_pd *pd,
		     struct ibv_alloc_pd *cmd, size_t cmd_size,
		     struct ib_uverbs_alloc_pd_resp *resp, size_t resp_size);
int ibv_cmd_dealloc_pd(struct ibv_pd *pd);

int ibv_cmd_open_xrcd(struct ibv_context *context, struct verbs_xrcd *xrcd,
		      int vxrcd_size, struct ibv_xrcd_init_attr *attr,
		      struct ibv_open_xrcd *cmd, size_t cmd_size,
		      struct ib_uverbs_open_xrcd_resp *resp, size_t resp_size);
int ibv_cmd_close_xrcd(struct verbs_xrcd *xrcd);

int ibv_cmd_reg_mr(struct ibv_pd *pd, void *addr, size_t length,
		   uint64_t hca_va, int access, struct verbs_mr *vmr,
		   struct ibv_reg_mr *cmd, size_t cmd_size,
		   struct ib_uverbs_reg_mr_resp *resp, size_t resp_size);
int ibv_cmd_rereg_mr(struct verbs_mr *vmr, uint32_t flags, void *addr,
		     size_t length, uint64_t hca_va, int access,
		     struct ibv_pd *pd, struct ibv_rereg_mr *cmd,
		     size_t cmd_sz, struct ib_uverbs_rereg_mr_resp *resp,
		     size_t resp_sz);
int ibv_cmd_dereg_mr(struct verbs_mr *vmr);

int ibv_cmd_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type,
		     struct ibv_mw *mw, struct ibv_alloc_mw *cmd,
		     size_t cmd_size, struct ib_uverbs_alloc_mw_resp *resp,
		     size_t resp_size);
int ibv_cmd_dealloc_mw(struct ibv_mw *mw);

int ibv_cmd_create_cq(struct ibv_context *context, int cqe,
		      struct ibv_comp_channel *channel, int comp_vector,
		      struct ibv_cq *cq, struct ibv_create_cq *cmd,
		      size_t cmd_size, struct ib_uverbs_create_cq_resp *resp,
		      size_t resp_size);
int ibv_cmd_create_cq_ex(struct ibv_context *context,
			 const struct ibv_cq_init_attr_ex *cq_attr,
			 PABI65(struct verbs_create_cq_prov_attr *prov_attr,)
			 struct verbs_cq *cq, struct ibv_create_cq_ex *cmd,
			 size_t cmd_size,
			 struct ib_uverbs_ex_create_cq_resp *resp,
			 size_t resp_size, uint32_t cmd_flags);
int ibv_cmd_resize_cq(struct ibv_cq *cq, int cqe, struct ibv_resize_cq *cmd,
		      size_t cmd_size, struct ib_uverbs_resize_cq_resp *resp,
		      size_t resp_size);
int ibv_cmd_modify_cq(struct ibv_cq *cq, struct ibv_modify_cq_attr *attr,
		      struct ibv_modify_cq *cmd, size_t cmd_size);
int ibv_cmd_destroy_cq(struct ibv_cq *cq);

int ibv_cmd_create_srq(struct ibv_pd *pd, struct ibv_srq *srq,
		       struct ibv_srq_init_attr *attr,
		       struct ibv_create_srq *cmd, size_t cmd_size,
		       struct ib_uverbs_create_srq_resp *resp,
		       size_t resp_size);
int ibv_cmd_create_srq_ex(struct ibv_context *context,
			  struct verbs_srq *srq,
			  struct ibv_srq_init_attr_ex *attr_ex,
			  struct ibv_create_xsrq *cmd, size_t cmd_size,
			  struct ib_uverbs_create_srq_resp *resp,
			  size_t resp_size);
int ibv_cmd_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr,
		       int srq_attr_mask, struct ibv_modify_srq *cmd,
		       size_t cmd_size);
int ibv_cmd_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr,
		      struct ibv_query_srq *cmd, size_t cmd_size);
int ibv_cmd_destroy_srq(struct ibv_srq *srq);

int ibv_cmd_create_qp_ex(struct ibv_context *context,
			 struct verbs_qp *qp,
			 struct ibv_qp_init_attr_ex *attr_ex,
			 struct ibv_create_qp *cmd, size_t cmd_size,
			 struct ib_uverbs_create_qp_resp *resp,
			 size_t resp_size);
int ibv_cmd_create_qp_ex2(struct ibv_context *context,
			  struct verbs_qp *qp,
			  struct ibv_qp_init_attr_ex *qp_attr,
			  struct ibv_create_qp_ex *cmd, size_t cmd_size,
			  struct ib_uverbs_ex_create_qp_resp *resp,
			  size_t resp_size
			  PABI65(, struct ibv_command_buffer *driver));
int ibv_cmd_open_qp(struct ibv_context *context, struct verbs_qp *qp,
		    int vqp_sz, struct ibv_qp_open_attr *attr,
		    struct ibv_open_qp *cmd, size_t cmd_size,
		    struct ib_uverbs_create_qp_resp *resp, size_t resp_size);
int ibv_cmd_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
		      int attr_mask, struct ibv_modify_qp *cmd,
		      size_t cmd_size);
int ibv_cmd_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
		     int attr_mask, struct ibv_qp_init_attr *qp_init_attr,
		     struct ibv_query_qp *cmd, size_t cmd_size);
int ibv_cmd_destroy_qp(struct ibv_qp *qp);

int ibv_cmd_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid,
			 uint16_t lid);
int ibv_cmd_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid,
			 uint16_t lid);

int ibv_cmd_create_wq(struct ibv_context *context,
		      struct ibv_wq_init_attr *wq_init_attr,
		      struct ibv_wq *wq, struct ibv_create_wq *cmd,
		      size_t cmd_size,
		      struct ib_uverbs_ex_create_wq_resp *resp,
		      size_t resp_size);
int ibv_cmd_modify_wq(struct ibv_wq *wq, struct ibv_wq_attr *attr,
		      struct ibv_modify_wq *cmd, size_t cmd_size);
int ibv_cmd_destroy_wq(struct ibv_wq *wq);
int ibv_cmd_create_rwq_ind_table(
	struct ibv_context *context,
	struct ibv_rwq_ind_table_init_attr *init_attr,
	struct ibv_rwq_ind_table *rwq_ind_table,
	struct ib_uverbs_ex_create_rwq_ind_table_resp *resp,
	size_t resp_size);
int ibv_cmd_destroy_rwq_ind_table(struct ibv_rwq_ind_table *rwq_ind_table);
int ibv_cmd_create_flow(struct ibv_qp *qp, struct ibv_flow *flow_id,
			struct ibv_flow_attr *flow_attr, void *ucmd,
			size_t ucmd_size);
int ibv_cmd_destroy_flow(struct ibv_flow *flow_id);

#endif /* MLX4_DRIVER_H */
