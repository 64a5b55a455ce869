/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * mlx4sim: one daemon models one InfiniBand subnet: a switch with its
 * subnet manager, and ConnectX-3 adapters whose mlx4_ib kernel driver it
 * also plays.  Processes reach it through the preload library (preload.c);
 * this header is the daemon's state, object by object, in the order a
 * process meets them: adapter and port, context, then the verbs objects.
 *
 * The hardware formats (WQEs, CQEs, doorbells) are those of the installed
 * <infiniband/mlx4dv.h>: the simulator's independent definition of the
 * device, deliberately not the provider's copy.
 */
#ifndef MLX4SIM_SIM_H
#define MLX4SIM_SIM_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <endian.h>
#include <infiniband/verbs.h>
#include <infiniband/mlx4dv.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/mlx4-abi.h>

#include "list.h"
#include "table.h"

#define SIM_PAGE_SIZE		4096
#define SIM_MAX_SHARES		8	/* ranges one command asks to share */

/* ------------------------------------------------------------------ */
/* What a ConnectX-3 (Pro) with firmware 2.42.5000 reports and enforces */
/* ------------------------------------------------------------------ */
/*
 * The two models (--model): a ConnectX-3 (MT4099, PCI device 0x1003)
 * and a ConnectX-3 Pro (MT4103, 0x1007), the default.  Of what mlx4_ib
 * passes on, their firmware differs in RoCE v2: only the Pro's reports
 * MLX4_DEV_CAP_FLAG2_ROCE_V1_V2, so only its Ethernet ports have RoCE v2
 * GIDs (the kernel's GID cache adds the types the port supports).
 */
struct sim_model {
	const char *name;
	uint16_t pci_device;		/* also query_device's vendor_part_id */
	bool roce_v2;
};
const struct sim_model *sim_model_by_name(const char *name);
/*
 * Two vendor numbers: the PCI vendor (sysfs) and the IEEE OUI the
 * adapter's NodeInfo reports, which mlx4_ib passes on as query_device's
 * vendor_id (ibv_devinfo shows 0x02c9 on a ConnectX-3).
 */
#define CX3_PCI_VENDOR_ID	0x15b3
#define CX3_VENDOR_ID		0x02c9
#define CX3_VENDOR_PART_ID	(sim.opt.model->pci_device)
#define CX3_PCI_DEVICE		(sim.opt.model->pci_device)
#define CX3_HW_VER		0x1
#define CX3_FW_VER		((2ULL << 32) | (42ULL << 16) | 5000)
#define CX3_FW_VER_STR		"2.42.5000"
#define CX3_BOARD_ID		"MT_1090120019"
#define CX3_MAX_PORTS		2
#define CX3_MAX_WQES		16384	/* per work queue, spares included */
#define CX3_SQ_MAX_SPARE	33	/* headroom the driver keeps */
#define CX3_MAX_QP_WR		(CX3_MAX_WQES - CX3_SQ_MAX_SPARE)
#define CX3_MAX_SGE		32
#define CX3_MAX_SGE_RD		30
#define CX3_MAX_SQ_DESC		1008	/* bytes in one send WQE */
#define CX3_MIN_SQ_STRIDE_LOG	6
#define CX3_MAX_SQ_STRIDE_LOG	10
#define CX3_MAX_QP		393144
#define CX3_MAX_CQ		65408
#define CX3_MAX_CQE		4194303
#define CX3_MAX_MR		524032
#define CX3_MAX_PD		32764
#define CX3_MAX_QP_RD_ATOM	16
#define CX3_MAX_RES_RD_ATOM	6290304
#define CX3_MAX_QP_INIT_RD_ATOM	128
#define CX3_MAX_MCAST_GRP	8192
#define CX3_MAX_MCAST_QP_ATTACH	248
#define CX3_MAX_SRQ		65472
#define CX3_MAX_SRQ_WQES	16384
#define CX3_MAX_SRQ_SGE		31
#define CX3_MAX_MW		524032
#define CX3_PKEY_TBL_LEN	128
#define CX3_GID_TBL_LEN		128
#define CX3_MAX_MSG_SZ		0x40000000
#define CX3_MAX_GSO_SIZE	65536	/* LSO: the most one WQE sends */
#define CX3_LOCAL_ACK_DELAY	15
#define CX3_PORT_CAP_FLAGS	0x02514868
#define CX3_ETH_PORT_CAP_FLAGS	0x00010000	/* mlx4_ib on RoCE: CM only */
#define CX3_CORE_CLOCK_KHZ	427000
#define CX3_BF_REG_SIZE		512
#define CX3_BF_REGS_PER_PAGE	8
#define CX3_QPN_XRC_BIT		(1u << 23)	/* set in XRC target QPNs */
#define CX3_FIRST_QPN		0x48	/* below: the firmware's own QPs */
/* Receive inline: at most the bytes of a full scatter list (max_rq_sg). */
#define CX3_MAX_INL_RECV	(CX3_MAX_SGE * sizeof(struct mlx4_wqe_data_seg))
#define CX3_MAX_RSS_TBL_SZ	256	/* WQs an RSS indirection table spans */

/* Pages of a context's device file, by mmap page offset. */
enum sim_page {
	SIM_PAGE_UAR	= 0,
	SIM_PAGE_BF	= 1,
	SIM_PAGE_CLOCK	= 3,
	SIM_CTX_PAGES	= 4,
};
#define SIM_CLOCK_OFFSET	0	/* of the counter in the clock page */

/* ------------------------------------------------------------------ */
/* The subnet                                                          */
/* ------------------------------------------------------------------ */
struct sim_hca;

/* A GID table entry of an Ethernet port, as the kernel's GID cache has it. */
struct sim_gid {
	uint8_t gid[16];
	uint8_t type;			/* IBV_GID_TYPE_ROCE_V1 or _V2 */
	uint16_t vlan;			/* its interface's VLAN ID, or NO_VLAN */
	char ndev[24];			/* its interface */
};

#define NO_VLAN		0xffff
#define SIM_MAX_VLANS	4
#define SIM_MAX_HOSTS	16	/* --hosts */

struct sim_port {
	struct sim_hca *hca;
	uint8_t num;
	uint8_t link_layer;		/* IBV_LINK_LAYER_* */
	uint16_t lid;			/* 0 on Ethernet */
	uint64_t guid;
	uint32_t qkey_violations;
	bool down;			/* `mlx4sim fault port-down` */
	/* Management (adapter/mad.c): what the SMA and PMA report */
	uint8_t state;			/* the logical state the SM set */
	uint16_t sm_lid;
	uint8_t sm_sl;
	bool is_sm;			/* an issm file is open: IsSM */
	struct sim_port_counters {	/* what the port carried */
		uint64_t xmit_data, rcv_data;	/* in 4-byte words */
		uint64_t xmit_pkts, rcv_pkts;
	} counters;
	/* Ethernet only: the port's network interface and RoCE GIDs. */
	uint8_t mac[6];
	char ifname[16];
	int ngids;
	struct sim_gid gids[CX3_GID_TBL_LEN];
};

struct sim_hca {
	int index;			/* mlx4_<index>, uverbs<index> */
	int host;			/* --hosts: its host, from 0; else 0 */
	int local;			/* its index on its host (the name's) */
	char name[16];
	char node_desc[64];		/* NodeDescription, sysfs node_desc */
	uint64_t node_guid;
	uint64_t sys_image_guid;
	int nports;
	struct sim_port port[CX3_MAX_PORTS];
	struct sim_table qps;		/* QPN -> struct sim_qp */
	struct sim_table cqs;		/* CQN -> struct sim_cq */
	struct sim_table srqs;		/* SRQN -> struct sim_srq */
	struct sim_table mrs;		/* MPT index (key >> 8) -> sim_mr */
	uint32_t next_qpn, next_cqn, next_srqn, next_pdn, next_mpt;
	uint8_t key_tag;
	uint32_t nqps, ncqs, nsrqs, nmrs, npds;
};

#define SIM_SM_LID		1	/* the switch, where the SM runs */
#define SIM_LID_UNICAST_END	0xc000	/* multicast LIDs from here */
#define SIM_SUBNET_PREFIX	0xfe80000000000000ULL

/* ------------------------------------------------------------------ */
/* Contexts: one per open of /dev/infiniband/uverbsN                   */
/* ------------------------------------------------------------------ */
struct sim_event_file;
struct umad_file;

/*
 * The pages the kernel pinned for an object, where the daemon maps them:
 * the windows it holds (host/dma-share.c, kernel/umem.c).
 */
struct dma_window;
struct sim_pins {
	struct dma_window **win;
	uint32_t n;
	uint64_t locked;	/* pages counted in its process's pinned_vm */
	uint64_t db_page;	/* a doorbell record's page, else 0 */
};

/* A page of doorbell records a context pinned once for all (kernel/umem.c). */
struct sim_db_page {
	uint64_t addr;
	uint32_t users;
};

struct sim_ctx {
	struct list_node link;		/* in sim.ctxs */
	int sock;
	pid_t pid;			/* whose memory the device reaches */
	struct sim_hca *hca;
	int host;			/* the host of its process, or -1 */
	bool has_ucontext;		/* GET_CONTEXT done */
	int memfd;			/* the pages processes mmap */
	uint8_t *pages;			/* the same, mapped here */
	struct sim_uobj **handles;
	uint32_t nhandles;
	struct sim_event_file *async;
	struct list_node event_files;
	struct list_node qps;		/* QPs whose doorbells ring here */
	struct list_node cqs;		/* CQs armed through this UAR */
	struct sim_wqn_range *wqn_range;	/* the one WQs are numbered from */
	bool control;			/* `mlx4sim fault`, not a device file */
	bool fatal;			/* disassociated by a fatal error */
	struct umad_file *umad;		/* an open umadN or issmN instead */
	/*
	 * The pages the last command pinned that the library is asked to
	 * share, in order, and whose pins take them (kernel/umem.c).
	 */
	struct {
		int n, next;
		struct {
			struct sim_pins *pins;
			uint64_t addr, len;
		} range[SIM_MAX_SHARES];
	} sharing;
	struct bf_watch *bf_watch;	/* BlueFlame copies checked (trace) */
	uint64_t pinned;		/* pages its commands pinned (umem.c) */
	struct sim_db_page *db_pages;	/* mlx4_ib_db_map_user's list */
	uint32_t n_db_pages;
	struct ucma_file *ucma;		/* an rdma_cm file, not a device's */
};

static inline volatile uint8_t *ctx_page(struct sim_ctx *ctx, enum sim_page p)
{
	return ctx->pages + p * SIM_PAGE_SIZE;
}

/* ------------------------------------------------------------------ */
/* Verbs objects                                                       */
/* ------------------------------------------------------------------ */
enum sim_obj_type {
	SIM_OBJ_PD = 1,
	SIM_OBJ_MR,
	SIM_OBJ_MW,
	SIM_OBJ_CQ,
	SIM_OBJ_QP,
	SIM_OBJ_QP_OPEN,		/* a handle on another's XRC target QP */
	SIM_OBJ_SRQ,
	SIM_OBJ_AH,
	SIM_OBJ_XRCD,
	SIM_OBJ_FLOW,
	SIM_OBJ_WQ,
	SIM_OBJ_IND_TBL,
};

/* What every handle-named object starts with. */
struct sim_uobj {
	enum sim_obj_type type;
	uint32_t handle;
	uint64_t user_handle;
	struct sim_ctx *ctx;
};

struct sim_pd {
	struct sim_uobj uobj;
	struct sim_hca *hca;
	uint32_t pdn;
	int users;
};

/* An XRC domain: shared by every process that opens the same file. */
struct sim_xrcd {
	struct list_node link;		/* in sim.xrcds */
	dev_t dev;
	ino_t ino;
	bool has_inode;
	uint32_t xrcdn;
	int refs;			/* handles and objects */
};

struct sim_xrcd_handle {
	struct sim_uobj uobj;
	struct sim_xrcd *xrcd;
	int users;			/* SRQs and QPs made or opened by it */
};

/* Memory regions and windows share the key space (the MPT). */
struct sim_mr {
	struct sim_uobj uobj;
	struct sim_hca *hca;
	struct sim_pd *pd;
	pid_t pid;
	uint64_t iova;			/* what keys address */
	uint64_t addr;			/* where it is in the process */
	uint64_t length;
	uint32_t access;		/* IBV_ACCESS_* */
	uint32_t lkey, rkey;
	bool is_mw;
	uint8_t mw_type;
	bool bound;			/* windows: open to remote access */
	struct sim_mr *parent;		/* windows: the region bound to */
	int windows;			/* regions: windows bound to it */
	struct sim_pins pins;		/* regions: its pages */
};

enum sim_cq_arm {
	CQ_DISARMED,
	CQ_ARMED_SOLICITED,
	CQ_ARMED_NEXT,
};

struct sim_cq {
	struct sim_uobj uobj;
	struct list_node ctx_link;
	struct sim_hca *hca;
	struct sim_ctx *ctx;
	uint32_t cqn;
	uint32_t nent;			/* power of two */
	uint32_t cqe_size;		/* 32 or 64 */
	uint64_t buf;			/* in the owner's memory */
	uint64_t db;			/* set_ci_db, then arm_db */
	uint32_t prod;			/* CQEs produced */
	uint32_t ci;			/* consumer index last read */
	struct sim_event_file *channel;
	enum sim_cq_arm arm;
	uint32_t armed_db;		/* arm_db record last acted on */
	bool overrun;
	bool timestamped;		/* CQEs carry completion times */
	uint32_t comp_events_reported;
	uint32_t async_events_reported;
	int users;
	struct sim_pins buf_pins, db_pins;
};

struct sim_srq {
	struct sim_uobj uobj;
	struct sim_hca *hca;
	struct sim_ctx *ctx;
	struct sim_pd *pd;
	uint32_t srqn;
	enum ibv_srq_type type;
	struct sim_xrcd *xrcd;
	struct sim_xrcd_handle *xrcd_handle;	/* the one it was made by */
	struct sim_cq *cq;
	uint64_t buf, db;
	uint32_t wqe_cnt, wqe_shift, max_gs;
	uint32_t limit;
	uint16_t next_wqe;		/* index the device takes next */
	uint16_t consumed;		/* WQEs taken, against the counter */
	uint16_t posted;		/* doorbell counter last read */
	bool error;
	uint32_t events_reported;
	int users;
	struct sim_pins buf_pins, db_pins;
};

/* An address vector as the device uses it, from modify_qp or a UD WQE. */
struct sim_path {
	uint16_t dlid;
	uint8_t sl;
	uint8_t src_path_bits;
	uint8_t static_rate;
	uint8_t is_global;
	uint8_t port_num;
	uint8_t sgid_index;
	uint8_t hop_limit;
	uint8_t traffic_class;
	uint32_t flow_label;
	uint8_t dgid[16];
	uint8_t dmac[6];		/* RoCE: the peer's MAC, the kernel's find */
	uint16_t vlan;			/* RoCE: the source GID's VLAN, or NO_VLAN */
};

/* A work queue inside a QP buffer, and how far the device has taken it. */
struct sim_wq {
	uint32_t wqe_cnt;
	uint32_t wqe_shift;
	uint32_t offset;
	uint32_t max_gs;
	uint32_t head;			/* WQE counter the device takes next */
};

/*
 * The device numbers its queues and protection domains (QPN, CQN, SRQN,
 * PDN, MPT index) in 24 bits, as IB numbers its packets (PSN); a CQ's
 * consumer index travels in 24 bits too.
 */
#define NUM24_MASK		0xffffff
#define PSN_MASK		NUM24_MASK

struct sim_qp {
	struct sim_uobj uobj;
	struct list_node ctx_link;
	struct sim_hca *hca;
	struct sim_ctx *ctx;
	uint32_t qpn;
	enum ibv_qp_type type;
	enum ibv_qp_state state;
	struct sim_pd *pd;
	struct sim_cq *send_cq, *recv_cq;
	struct sim_srq *srq;
	struct sim_xrcd *xrcd;
	struct sim_xrcd_handle *xrcd_handle;	/* the one it was made by */
	uint64_t buf, db;
	bool sq_sig_all;
	bool block_self_mcast;		/* IBV_QP_CREATE_BLOCK_SELF_MCAST_LB */
	struct sim_wq sq, rq;
	uint16_t rq_posted;		/* doorbell record last read */
	struct sim_rq_cache *rq_cache;	/* receive WQEs fetched ahead */
	uint32_t doorbells;		/* rung since RESET */
	struct ibv_qp_cap cap;		/* as the create reply reported */

	/* attributes set by modify_qp */
	uint8_t port;
	uint16_t pkey_index;
	uint32_t qkey;
	uint32_t access;
	uint32_t dest_qpn;
	uint32_t sq_psn;		/* next PSN the requester sends */
	uint32_t rq_psn;		/* next PSN the responder expects */
	enum ibv_mtu mtu;
	struct sim_path path, alt_path;
	uint32_t wire_msn;		/* --pcap: the responder's MSN */
	int flows;			/* flow rules that steer to it */
	/* An RSS QP: the table it spreads over, by a Toeplitz hash (rss.c) */
	struct sim_ind_tbl *rss_tbl;
	uint64_t rss_fields;		/* MLX4_IB_RX_HASH_* */
	uint8_t rss_key[40];
	bool scatter_fcs;		/* a WQ's: frames keep their FCS (raw.c) */
	uint16_t alt_pkey_index;
	uint8_t alt_port, alt_timeout;
	enum ibv_mig_state mig_state;
	uint8_t timeout, retry_cnt, rnr_retry, min_rnr_timer;
	uint8_t max_rd_atomic, max_dest_rd_atomic;
	uint8_t en_sqd_async_notify;

	/* requester: WQEs handed over that a pass has yet to run */
	struct list_node busy_link;	/* in sim.busy_sqs */
	bool busy;

	/* requester: a WQE waiting for an RNR or ack-timeout retry */
	struct list_node wait_link;	/* in sim.waiting */
	bool waiting;
	uint64_t wait_until;		/* monotonic ns */
	uint8_t retries_left, rnr_retries_left;
	bool retry_armed;		/* counters loaded for the head WQE */
	bool ack_lost;			/* no answer: retransmit when the timer ends */
	struct {			/* an answer that came late (flight.c) */
		bool valid;
		uint32_t psn;
		uint8_t status;		/* enum resp_status */
		uint8_t min_rnr_timer;
		pid_t read_pid;
		uint64_t read_addr;
		uint64_t atomic_orig;
	} late;

	/*
	 * responder: the last request executed, to answer it again when
	 * it comes twice (its ACK lost, or the packet duplicated) without
	 * executing it again
	 */
	struct {
		bool valid;
		uint32_t psn;
		uint8_t kind;		/* enum sim_op_kind */
		pid_t read_pid;
		uint64_t read_addr;
		uint64_t atomic_orig;
	} last;

	bool error_pending;		/* responder: ERROR after this WQE */
	struct list_node fail_link;	/* in sim.failing_qps */
	struct list_node error_link;	/* in sim.error_qps while in ERROR */
	uint32_t events_reported;
	int opens;			/* open_qp handles on it */
	bool comm_established;
	struct sim_pins buf_pins, db_pins;
	struct wire_qp *wire;		/* its packets on the uplink (wire-*.c) */
};

struct sim_qp_open {
	struct sim_uobj uobj;
	struct sim_qp *qp;
	struct sim_xrcd_handle *xrcd_handle;	/* the one it was opened by */
	uint32_t events_reported;
};

struct sim_ah {
	struct sim_uobj uobj;
	struct sim_pd *pd;
	struct sim_path path;
};

/* A QP attached to a multicast group. */
struct sim_mcast {
	struct list_node link;		/* in sim.mcast */
	uint8_t gid[16];
	uint16_t mlid;
	struct sim_qp *qp;
};

/* One specification of a flow rule: the fields it compares, under a mask. */
struct sim_flow_spec {
	uint32_t type;			/* IBV_FLOW_SPEC_ETH, _IPV4, _TCP, _UDP */
	union {
		struct ib_uverbs_flow_eth_filter eth;
		struct ib_uverbs_flow_ipv4_filter ipv4;
		struct ib_uverbs_flow_tcp_udp_filter tcp_udp;
	} val, mask;
};

#define SIM_FLOW_SPECS	10		/* IB_FLOW_SPEC_SUPPORT_LAYERS */

/* A flow steering rule: which frames of a port go to a QP (raw.c). */
struct sim_flow {
	struct sim_uobj uobj;
	struct list_node link;		/* in sim.flows */
	struct sim_qp *qp;
	struct sim_hca *hca;
	uint8_t port;
	uint8_t type;			/* IBV_FLOW_ATTR_* */
	bool dont_trap;			/* a copy, the frame goes on (raw.c) */
	uint16_t priority;		/* the lowest value wins */
	int nspecs;
	struct sim_flow_spec specs[SIM_FLOW_SPECS];
};

/*
 * A block of WQ numbers, aligned to its size, that mlx4_ib reserves for a
 * context so that an indirection table can span consecutive WQs.  WQs
 * take its numbers in turn until it is full or one of them is destroyed.
 */
struct sim_wqn_range {
	uint32_t base;
	uint32_t size;
	uint32_t refs;			/* numbers taken, while none is freed */
	bool dirty;			/* one was freed: take no more */
};

/*
 * A receive WQ: to the device a QP with a one-entry, 64-byte send queue
 * that is never used, laid out in the buffer like any QP's.
 */
struct sim_wq_obj {
	struct sim_uobj uobj;
	struct sim_pd *pd;
	struct sim_cq *cq;
	uint32_t wqn;
	struct sim_wqn_range *range;
	uint64_t buf, db;
	struct sim_wq sq, rq;
	enum ibv_wq_state state;	/* as the verbs see it */
	uint32_t events_reported;
	int users;
	int rss_users;			/* RSS QPs past RESET over it */
	struct sim_pins buf_pins, db_pins;
	/*
	 * The QP the device sees: what an RSS QP hands frames to (rss.c).
	 * Its state is the device's, which follows the WQ's only while an
	 * RSS QP uses the WQ.
	 */
	struct sim_qp dev;
};

struct sim_ind_tbl {
	struct sim_uobj uobj;
	uint32_t num;
	uint32_t size;
	struct sim_wq_obj **wqs;
	int users;			/* RSS QPs over it */
};

/* ------------------------------------------------------------------ */
/* Event files: the async file of a context, and completion channels   */
/* ------------------------------------------------------------------ */
struct sim_event {
	struct list_node link;
	struct ib_uverbs_async_event_desc desc;	/* comp: cq_handle only */
	uint32_t *reported;		/* bumped when the process reads it */
	const void *about;		/* the object, to drop it on destroy */
};

struct sim_event_file {
	struct list_node link;		/* in ctx->event_files */
	struct sim_ctx *ctx;
	uint32_t id;
	bool async;
	int efd;			/* the process's end: a byte per event */
	int count_fd;			/* ours, that writes the bytes */
	struct list_node events;
};

/* ------------------------------------------------------------------ */
/* The daemon                                                          */
/* ------------------------------------------------------------------ */
struct sim_options {
	const struct sim_model *model;
	int nhcas;			/* on the subnet, every host's */
	int nhosts;			/* --hosts: 0 for one host with all */
	int hcas_per_host;		/* --hcas: nhcas / nhosts */
	int nports;
	uint8_t link_layer[CX3_MAX_PORTS];	/* per port number - 1 */
	uint16_t vlans[SIM_MAX_VLANS];	/* VLAN interfaces of Ethernet ports */
	int nvlans;
	uint32_t cqe_size;
	bool strict;
	bool external_sm;		/* --sm external: no built-in SM */
	const char *dir;
	const char *trace;		/* file for the trace, or NULL */
	const char *pcap;		/* capture of the Ethernet wire, or NULL */
	const char *uplink;		/* --uplink: the interface to a real wire */
	int host_id;			/* --host-id: addresses on a shared segment */
};

struct sim {
	struct sim_options opt;
	struct sim_hca *hca;
	struct list_node ctxs;
	struct list_node xrcds;
	struct list_node mcast;
	struct list_node flows;		/* struct sim_flow, oldest first */
	struct list_node waiting;	/* QPs with a retry timer */
	struct list_node busy_sqs;	/* send queues with work left */
	struct list_node error_qps;	/* QPs in ERROR whose receives flush */
	struct list_node failing_qps;	/* see qp_fail_later() */
	uint64_t breaches;
	uint64_t progress;		/* commands, WQE fetches and CQEs */
	uint32_t fetched;		/* WQEs fetched since the last nap */
	uint32_t active_qps;		/* see qp_set_state() */
	uint32_t next_event_file;
	uint32_t next_xrcdn;
	uint64_t start_ns;
	bool work_done;			/* the loop's "something happened" */
	bool speculating;		/* a look ahead, which reports no breach */
	bool netns;			/* the daemon made a network namespace */
};

extern struct sim sim;

/* sim.c: the clock and the log */
uint64_t now_ns(void);

void sim_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void sim_vlog(const char *tag, const char *fmt, va_list ap);

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#define ALIGN_UP(v, pow2) (((v) + (pow2) - 1) & ~((pow2) - 1))

static inline uint32_t roundup_pow2(uint32_t v)
{
	uint32_t r = 1;

	while (r < v)
		r <<= 1;
	return r;
}

static inline uint32_t ilog2_u32(uint32_t v)
{
	uint32_t r = 0;

	while (v >>= 1)
		r++;
	return r;
}

#endif
