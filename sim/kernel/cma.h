/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The kernel's connection manager as the daemon plays it, in three layers
 * as the kernel has them:
 *
 *   ucma.c     /dev/infiniband/rdma_cm (rdma_ucm): files, the command
 *              table with ucma's checks, ids by handle, the event queue
 *   cma.c      rdma_cm: an id's states from IDLE to DISCONNECT, ports of
 *              the four port spaces, listening, connecting, accepting,
 *              INIT_QP_ATTR; cma-addr.c: IP addresses to ports and GIDs,
 *              the route, the address and route events
 *   cm.c       ib_cm: the CM MADs (REQ, REP, RTU, REJ, DREQ, DREP, SIDR)
 *              between ports through the simulated fabric, the
 *              communication ids' states, retries and timewait, and the
 *              daemon's timers (cm-timer.c)
 *
 * Every layer keeps the kernel's rules and errnos; what the simulator
 * leaves out is said where it would be.
 */
#ifndef MLX4SIM_CMA_H
#define MLX4SIM_CMA_H

#include <netinet/in.h>
#include <sys/socket.h>
#include <rdma/rdma_user_cm.h>

#include "kernel.h"

/* enum rdma_cm_event_type: the numbers the ABI carries. */
enum cma_event_type {
	CMA_EV_ADDR_RESOLVED,
	CMA_EV_ADDR_ERROR,
	CMA_EV_ROUTE_RESOLVED,
	CMA_EV_ROUTE_ERROR,
	CMA_EV_CONNECT_REQUEST,
	CMA_EV_CONNECT_RESPONSE,
	CMA_EV_CONNECT_ERROR,
	CMA_EV_UNREACHABLE,
	CMA_EV_REJECTED,
	CMA_EV_ESTABLISHED,
	CMA_EV_DISCONNECTED,
	CMA_EV_DEVICE_REMOVAL,
	CMA_EV_MULTICAST_JOIN,
	CMA_EV_MULTICAST_ERROR,
	CMA_EV_ADDR_CHANGE,
	CMA_EV_TIMEWAIT_EXIT,
};

/* ib_cm's reject reasons (enum ib_cm_rej_reason) the model sends. */
#define CM_REJ_TIMEOUT			2
#define CM_REJ_INVALID_SERVICE_ID	8
#define CM_REJ_CONSUMER_DEFINED		28
#define CM_REJ_STALE_CONN		30
#define CM_REJ_VENDOR_OPTION_NOT_SUPPORTED 35

/* enum ib_cm_sidr_status */
#define CM_SIDR_SUCCESS		0
#define CM_SIDR_UNSUPPORTED	1
#define CM_SIDR_REJECT		2

#define RDMA_UDP_QKEY		0x01234567u

/* ------------------------------------------------------------------ */
/* Timers of the loop (cm-timer.c)                                     */
/* ------------------------------------------------------------------ */
struct sim_timer {
	struct list_node link;
	uint64_t when;			/* monotonic ns */
	bool armed;
	void (*fire)(struct sim_timer *timer);
};

void timer_arm(struct sim_timer *timer, uint64_t delay_ns);
void timer_cancel(struct sim_timer *timer);
void timers_run(uint64_t now, uint64_t *deadline);

/* ------------------------------------------------------------------ */
/* A path: what a connection's QPs and its CM MADs travel by           */
/* ------------------------------------------------------------------ */
struct cm_path {
	struct sim_port *port;		/* the local port */
	uint16_t slid, dlid;		/* 0xffff on RoCE: permissive */
	uint8_t sgid[16], dgid[16];
	uint8_t sgid_index;
	uint8_t gid_type;		/* RoCE: IBV_GID_TYPE_ROCE_V1 or _V2 */
	bool grh;
	uint8_t sl, hop_limit, traffic_class, rate;
	uint32_t flow_label;
	uint8_t mtu;			/* enum ibv_mtu */
	uint8_t packet_life_time;
	uint16_t pkey;
};

/* ------------------------------------------------------------------ */
/* ib_cm (cm.c)                                                        */
/* ------------------------------------------------------------------ */
enum cm_state {
	CM_IDLE,
	CM_REQ_SENT,
	CM_MRA_REQ_RCVD,		/* the passive side asked for time */
	CM_REQ_RCVD,
	CM_MRA_REQ_SENT,		/* an MRA ready for a repeated REQ */
	CM_REP_SENT,
	CM_REP_RCVD,
	CM_ESTABLISHED,
	CM_DREQ_SENT,
	CM_DREQ_RCVD,
	CM_TIMEWAIT,
	CM_SIDR_REQ_SENT,
	CM_SIDR_REQ_RCVD,
};

struct cma_id;

struct cm_id {
	struct list_node link;		/* every cm id, by local comm id */
	struct cma_id *owner;		/* NULL once it is left to timewait */
	enum cm_state state;
	uint32_t local_id, remote_id;	/* communication ids */
	uint64_t service_id;
	uint64_t tid;
	uint8_t qp_type;
	uint32_t local_qpn, remote_qpn;
	uint32_t sq_psn, rq_psn;
	uint8_t responder_resources, initiator_depth;
	uint8_t retry_count, rnr_retry_count;
	uint8_t path_mtu;
	uint8_t ack_timeout;		/* the QP's local ACK timeout */
	bool srq;
	uint32_t qkey;			/* SIDR */
	uint16_t pkey;
	uint64_t remote_ca_guid;
	struct cm_path av;
	struct sim_port *reply_to;	/* SIDR: the port the REQ came from */
	/* the MAD in flight, sent again at its timeout */
	uint8_t mad[256];
	struct sim_port *mad_to;
	int retries_left;
	uint64_t timeout_ns;
	struct sim_timer timer;
};

/* What a received REQ or SIDR_REQ tells the rdma_cm above. */
struct cm_req_info {
	struct sim_port *port;		/* where it arrived */
	uint64_t service_id;
	const uint8_t *private_data;	/* REQ: 92 bytes, SIDR_REQ: 216 */
	struct cm_path path;		/* the REQ's primary path, from here */
	uint32_t remote_qpn;
	uint8_t responder_resources, initiator_depth;
	uint8_t retry_count, rnr_retry_count, flow_control;
	bool srq;
	uint8_t qp_type;
	uint16_t pkey;
};

#define CM_REQ_PRIVATE_SIZE	92
#define CM_REP_PRIVATE_SIZE	196
#define CM_REJ_PRIVATE_SIZE	148
#define CM_RTU_PRIVATE_SIZE	224
#define CM_DREQ_PRIVATE_SIZE	220
#define CM_DREP_PRIVATE_SIZE	224
#define CM_SIDR_REQ_PRIVATE_SIZE 216
#define CM_SIDR_REP_PRIVATE_SIZE 136

/* The parameters of REQ and REP, from rdma_connect() and rdma_accept(). */
struct cm_conn_param {
	uint32_t qp_num;
	uint32_t starting_psn;
	uint8_t responder_resources, initiator_depth;
	uint8_t retry_count, rnr_retry_count, flow_control;
	bool srq;
	const uint8_t *private_data;
	uint8_t private_data_len;
};

int cm_send_req(struct cma_id *id, const struct cm_conn_param *p);
int cm_send_rep(struct cm_id *cm, const struct cm_conn_param *p);
int cm_send_rtu(struct cm_id *cm);
void cm_prepare_mra(struct cm_id *cm);
int cm_send_rej(struct cm_id *cm, uint16_t reason, const void *data,
		uint8_t len);
int cm_send_dreq(struct cm_id *cm);
int cm_send_drep(struct cm_id *cm);
int cm_establish(struct cm_id *cm);
int cm_send_sidr_req(struct cma_id *id, const void *data, uint8_t len);
int cm_send_sidr_rep(struct cm_id *cm, uint8_t status, uint32_t qpn,
		     uint32_t qkey, const void *data, uint8_t len);
void cm_destroy(struct cm_id *cm);
void cm_drop(struct cm_id *cm);
int cm_init_qp_attr(const struct cm_id *cm, uint32_t state,
		    struct ib_uverbs_qp_attr *attr);

/* ------------------------------------------------------------------ */
/* rdma_cm (cma.c, cma-addr.c)                                         */
/* ------------------------------------------------------------------ */
enum cma_state {
	CMA_IDLE,
	CMA_ADDR_QUERY,
	CMA_ADDR_RESOLVED,
	CMA_ROUTE_QUERY,
	CMA_ROUTE_RESOLVED,
	CMA_CONNECT,
	CMA_DISCONNECT,
	CMA_ADDR_BOUND,
	CMA_LISTEN,
	CMA_DEVICE_REMOVAL,
	CMA_DESTROYING,
};

struct ucma_file;

/* A port number of a port space and the ids bound to it (rdma_bind_list). */
struct cma_bind {
	struct list_node link;		/* in binds */
	uint16_t ps;
	uint16_t port;
	struct list_node owners;	/* struct cma_id, by bind_link */
};


/* A multicast group an id joined. */
struct cma_mc {
	struct list_node link;		/* in its id's mcs */
	struct cma_id *id;
	uint32_t handle;		/* ucma's multicast id */
	uint64_t uid;
	int events_reported;
	uint8_t join_state;
	struct sockaddr_storage addr;
	uint8_t mgid[16];
	uint16_t mlid;
	struct sim_timer timer;		/* the join's answer */
};

/* An rdma_cm_id with ucma's context of it: one object, as they live and die
 * together for a process's ids. */
struct cma_id {
	struct list_node file_link;	/* in its file's ids */
	struct list_node bind_link;	/* in its port number's owners */
	struct ucma_file *file;
	uint32_t handle;		/* ucma's id */
	bool published;			/* its handle finds it */
	bool closed;			/* its device gone: DESTROY_ID only */
	uint64_t uid;
	int events_reported;
	int backlog;			/* CONNECT_REQUESTs it may still queue */
	uint16_t ps;
	uint8_t qp_type;
	enum cma_state state;
	struct sockaddr_storage src, dst;
	struct cma_bind *bind;		/* its port number */
	bool reuseaddr, afonly, afonly_set;
	/* the device: set by a bind to an address, or address resolution */
	struct sim_port *port;
	uint8_t sgid[16], dgid[16];
	uint16_t pkey;
	uint8_t gid_type;		/* RoCE: the default, v2 where offered */
	uint32_t seq_num;
	uint32_t qp_num;
	bool srq;
	uint32_t qkey;
	uint8_t tos;
	bool tos_set;
	uint8_t ack_timeout;
	bool ack_timeout_set;
	int num_paths;
	struct cm_path path;
	struct cm_id *cm;
	struct list_node mcs;
	struct sim_timer timer;		/* address or route resolution */
	uint32_t timer_event;		/* what it brings */
	int timer_status;
	struct rdma_ucm_ece ece;
};

/* ucma.c: events to the id's file; the ids of a CONNECT_REQUEST */
void ucma_event(struct cma_id *id, uint32_t event, int status,
		const void *param, size_t param_len,
		const struct rdma_ucm_ece *ece);
void ucma_mc_event(struct cma_mc *mc, uint32_t event, int status,
		   const struct rdma_ucm_ud_param *ud);
struct cma_id *ucma_conn_id(struct cma_id *listener);
void ucma_conn_request(struct cma_id *listener, struct cma_id *conn,
		       const void *param, size_t param_len,
		       const struct rdma_ucm_ece *ece);
void ucma_conn_failed(struct cma_id *conn);

/* cma.c: what ucma's commands ask, and ib_cm's events */
struct cma_id *cma_create(uint16_t ps, uint8_t qp_type);
void cma_destroy(struct cma_id *id);
void cma_device_gone(struct cma_id *id);
int cma_bind(struct cma_id *id, const struct sockaddr *addr);
int cma_listen(struct cma_id *id, int backlog);
int cma_connect(struct cma_id *id, const struct rdma_ucm_conn_param *p,
		const struct rdma_ucm_ece *ece);
int cma_accept(struct cma_id *id, const struct rdma_ucm_conn_param *p,
	       const struct rdma_ucm_ece *ece);
int cma_reject(struct cma_id *id, const void *data, uint8_t len,
	       uint8_t reason);
int cma_disconnect(struct cma_id *id);
int cma_notify(struct cma_id *id, uint32_t event);
int cma_init_qp_attr(struct cma_id *id, uint32_t state,
		     struct ib_uverbs_qp_attr *attr);
int cma_set_option(struct cma_id *id, uint32_t level, uint32_t name,
		   const void *val, size_t len);
int cma_join(struct cma_mc *mc);
void cma_leave(struct cma_mc *mc);
bool cma_any_addr(const struct sockaddr *addr);
socklen_t cma_addr_size(const struct sockaddr *addr);
uint16_t cma_port(const struct sockaddr *addr);
uint64_t cma_service_id(const struct cma_id *id, const struct sockaddr *a);
void cma_release_port(struct cma_id *id);
struct cma_bind *cma_bind_of(uint64_t service_id);
bool cma_on_roce(const struct cma_id *id);

void cma_req_received(struct cm_id *cm, const struct cm_req_info *req);
void cma_sidr_req_received(struct cm_id *cm, const struct cm_req_info *req);
bool cma_has_listener(const struct sim_port *port, uint64_t service_id);
void cma_rep_received(struct cma_id *id, const uint8_t *msg);
void cma_sidr_rep_received(struct cma_id *id, uint8_t status, uint32_t qpn,
			   uint32_t qkey, const uint8_t *data);
void cma_cm_event(struct cma_id *id, uint32_t event, int status,
		  const uint8_t *data, uint8_t data_len);
void cma_timewait_exit(struct cma_id *id);

/* cma-addr.c: addresses, the device behind them, the route */
void cma_resolve_fire(struct sim_timer *timer);
int cma_acquire_by_addr(struct cma_id *id, const struct sockaddr *addr);
int cma_acquire_for_req(struct cma_id *id, const struct cm_req_info *req);
int cma_default_qkey(struct cma_id *id);
void cma_read_gids(const struct cma_id *id, uint8_t *sgid, uint8_t *dgid);
void cma_pack_path(const struct cma_id *id, const struct cm_path *path,
		   uint8_t rec[64]);
int cma_resolve_addr(struct cma_id *id, const struct sockaddr *src,
		     const struct sockaddr *dst, uint32_t timeout_ms);
int cma_resolve_route(struct cma_id *id, uint32_t timeout_ms);
int cma_set_ib_path(struct cma_id *id, const void *path_rec);
void cma_route_from_req(struct cma_id *id, const struct cm_path *req_path);
void cma_ip2gid(const struct sockaddr *addr, uint8_t gid[16]);
void cma_ah_attr(const struct cm_path *path, struct ib_uverbs_ah_attr *ah);
void cma_path_to_user(const struct cm_path *path,
		      struct ib_user_path_rec *rec);

/* ipoib.c: the InfiniBand ports' IP interfaces */
struct sim_port *port_by_ip(const struct sockaddr *addr);
/* hosts-net.c: --hosts, each host's addresses and routes */
int cma_id_host(const struct cma_id *id);
bool port_on_host(const struct sim_port *port, int host);
struct sim_port *host_route(int host, const struct sockaddr *dst,
			    const struct sim_port *to,
			    struct sockaddr_storage *src);
struct sim_port *host_first_port(int host);
bool port_has_ip(const struct sim_port *port, const struct sockaddr *addr);

#endif
