/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The adapter layer: what a ConnectX-3 does on its own once its objects
 * exist.  Doorbells, the queues, the requester, responder and completer,
 * CQEs, key checks, QP state changes the device makes.  It calls the
 * fabric and host layers; what the kernel must hear of (async events)
 * reaches it through the handlers the kernel registers.
 */
#ifndef MLX4SIM_ADAPTER_H
#define MLX4SIM_ADAPTER_H

#include "../fabric/fabric.h"
#include "../fabric/wire.h"

/*
 * What the adapter tells the kernel: on hardware an event queue entry
 * and an interrupt, which mlx4_ib's handlers turn into a completion
 * channel's event or an async event.  The kernel registers its handlers
 * at start (eq.c); the adapter never calls up into it.
 */
struct adapter_event_handlers {
	void (*completion)(struct sim_cq *cq);
	void (*async)(struct sim_ctx *ctx, uint64_t element, uint32_t type,
		      uint32_t *reported, const void *about);
};
void adapter_set_event_handlers(const struct adapter_event_handlers *h);
void adapter_comp_event(struct sim_cq *cq);
void adapter_async_event(struct sim_ctx *ctx, uint64_t element, uint32_t type,
			 uint32_t *reported, const void *about);

/* mr.c: key checks, as the device makes them on each access */
enum mr_use {
	MR_LOCAL_READ,		/* gather for a send or write */
	MR_LOCAL_WRITE,		/* scatter a receive or a read response */
	MR_REMOTE_READ,
	MR_REMOTE_WRITE,
	MR_REMOTE_ATOMIC,
};
struct sim_mr *mr_check(struct sim_hca *hca, uint32_t key, struct sim_pd *pd,
			uint64_t va, uint64_t len, enum mr_use use,
			uint64_t *addr);
int mw_bind(struct sim_qp *qp, uint32_t new_rkey, uint32_t mr_lkey,
	    uint64_t va, uint64_t len, uint32_t access);
int mw_invalidate(struct sim_hca *hca, struct sim_pd *pd, uint32_t rkey);

/* mad-agents.c: the MADs the firmware answers (MAD_IFC): the SMA and the PMA */
enum mad_ifc {
	MAD_IFC_PASS,		/* not the firmware's: to the kernel's agents */
	MAD_IFC_REPLY,		/* answered */
	MAD_IFC_CONSUMED,	/* taken, no answer */
};
enum mad_ifc adapter_mad_ifc(struct sim_port *port, const uint8_t *in,
			     uint8_t *out);
uint32_t port_cap_mask(const struct sim_port *port);
/* strict.c: breaches of the hardware protocol by a driver */
void breach(struct sim_ctx *ctx, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* rss.c: the hash that picks a receive queue */
#define FIELDS_IPV4	(MLX4_IB_RX_HASH_SRC_IPV4 | MLX4_IB_RX_HASH_DST_IPV4)
#define FIELDS_IPV6	(MLX4_IB_RX_HASH_SRC_IPV6 | MLX4_IB_RX_HASH_DST_IPV6)
#define FIELDS_TCP	(MLX4_IB_RX_HASH_SRC_PORT_TCP | MLX4_IB_RX_HASH_DST_PORT_TCP)
#define FIELDS_UDP	(MLX4_IB_RX_HASH_SRC_PORT_UDP | MLX4_IB_RX_HASH_DST_PORT_UDP)
struct sim_qp *rss_pick(struct sim_qp *qp, const uint8_t *frame, size_t len,
			uint32_t *hash);

/* cq.c: the device side of a CQ */
static inline uint64_t cq_entry_addr(const struct sim_cq *cq, uint32_t n)
{
	return cq->buf + (uint64_t)(n & (cq->nent - 1)) * cq->cqe_size +
	       (cq->cqe_size == 64 ? 32 : 0);
}

/* CQEs written and not yet consumed, as far as the device knows. */
static inline uint32_t cq_outstanding(const struct sim_cq *cq)
{
	return (cq->prod - cq->ci) & NUM24_MASK;
}

uint32_t cq_read_ci(struct sim_cq *cq);
void cq_refresh_ci(struct sim_cq *cq);
void cq_arm(struct sim_cq *cq, enum sim_cq_arm how, uint32_t ci);
uint32_t hca_comp_vectors(void);
void cq_push(struct sim_cq *cq, const struct mlx4_cqe *cqe, bool solicited);
int cq_push_after(struct sim_cq *cq, const struct mlx4_cqe *cqe,
		  bool solicited, const struct dma_piece *data, int n);
void cq_doorbell(struct sim_ctx *ctx, uint32_t word0);
void cq_error(struct sim_cq *cq);
void cq_flush(void);
bool cq_batched(pid_t pid);
void cq_flush_before(pid_t pid, bool write, const struct dma_piece *p, int n);
void cq_settle(void);
bool cq_nearly_full(const struct sim_cq *cq);
void cq_note_ci(struct sim_cq *cq, uint32_t ci);

/* qp.c, and what every message asks of a QP (inline) */
static inline struct sim_qp *qp_by_num(struct sim_hca *hca, uint32_t qpn)
{
	return table_get(&hca->qps, qpn & NUM24_MASK);
}

static inline uint32_t mtu_bytes(enum ibv_mtu mtu)
{
	return 128u << mtu;
}

static inline bool qp_can_send(const struct sim_qp *qp)
{
	return qp->state == IBV_QPS_RTS;
}

static inline bool qp_can_receive(const struct sim_qp *qp)
{
	return qp->state == IBV_QPS_RTR || qp->state == IBV_QPS_RTS ||
	       qp->state == IBV_QPS_SQD || qp->state == IBV_QPS_SQE;
}

int size_user_rq(struct sim_wq *rq, uint32_t max_wr, uint32_t max_sge,
		 uint32_t inl_recv_sz);
uint64_t place_queues(struct sim_wq *sq, struct sim_wq *rq);
void qp_set_state(struct sim_qp *qp, enum ibv_qp_state next);
void qp_to_error(struct sim_qp *qp);
void qp_to_sqe(struct sim_qp *qp);
void qp_fail_later(struct sim_qp *qp);
bool qp_fail_pending(void);
bool has_cap_net_raw(pid_t pid);

/* srq.c */
struct sim_srq *srq_by_num(struct sim_hca *hca, uint32_t srqn);
void srq_check_limit(struct sim_srq *srq);

/* doorbell.c */
void ctx_doorbells(struct sim_ctx *ctx);
void bf_watch_end(struct sim_ctx *ctx);
void doorbells_scan(void);
void sq_busy(struct sim_qp *qp);
void sq_idle(struct sim_qp *qp);

/* req.c: the requester, executing a QP's send queue */
bool req_run(struct sim_qp *qp);
void req_run_waiting(uint64_t now, uint64_t *next_deadline);
void req_stop_waiting(struct sim_qp *qp);
uint64_t rnr_timer_us(uint8_t code);

/* flight.c: packets held back by faults, landed from the loop */
void flight_run(uint64_t now, uint64_t *deadline);

/* resp.c: the responder (its messages: wire.h) */
void resp_flush_errors(void);

/* comp.c: completions and flushes */
void comp_send(struct sim_qp *qp, uint32_t wqe_index, uint8_t opcode,
	       uint32_t byte_len);
void comp_send_error(struct sim_qp *qp, uint32_t wqe_index, uint8_t syndrome);
void comp_error_cqe(struct mlx4_cqe *cqe, uint32_t qpn, uint32_t wqe_index,
		    uint8_t syndrome, bool is_send);
void comp_flush_sq(struct sim_qp *qp);
void comp_flush_rq(struct sim_qp *qp);

/*
 * resp.c: a message arrives at a QP; an error of its responder takes
 * effect once the requester has completed the WQE (resp_finish).
 */
enum resp_status resp_deliver(struct sim_qp *src, struct sim_qp *dst,
			      struct sim_message *msg);
void resp_finish(struct sim_qp *dst);

/* raw.c: raw Ethernet frames, the switch and flow steering */
void ipoib_fill_checksums(uint8_t *p, size_t len, bool ip, bool l4);
uint32_t ipoib_checksum_status(const uint8_t *p, size_t len);
#define RAW_MAX_FRAME	(14 + 4 + 1500)	/* a tagged frame, no FCS */
#define IPOIB_MAX_DATAGRAM	4096	/* a UD message on InfiniBand: the MTU */
#define CTRL_INS_CVLAN	(1u << 6)	/* control segment byte 6: insert a tag */
void raw_fill_checksums(uint8_t *frame, size_t len, bool ip, bool l4);
size_t raw_lso_segment(const uint8_t *hdr, size_t hdr_len,
		       const uint8_t *chunk, size_t n, uint32_t offset,
		       uint16_t index, bool last, uint8_t *frame);
void raw_transmit(struct sim_qp *src, struct sim_message *msg,
		  const uint8_t *frame, size_t len);
void raw_from_wire(struct sim_port *to, const uint8_t *frame, size_t len);

/* req.c: an answer that was held back reaches the requester */
void req_late_answer(struct sim_qp *qp, const struct sim_message *msg,
		     enum resp_status st);
void packet_lands(struct sim_held *held);

/* comp.c: receive completions */
void comp_recv(struct sim_cq *cq, uint32_t qpn, uint32_t wqe_index,
	       const struct sim_message *msg, uint32_t byte_len,
	       uint16_t pkey_index);
int comp_recv_after(struct sim_cq *cq, uint32_t qpn, uint32_t wqe_index,
		    const struct sim_message *msg, uint32_t byte_len,
		    uint16_t pkey_index, const struct dma_piece *data, int n);
void comp_recv_error(struct sim_cq *cq, uint32_t qpn, uint32_t wqe_index,
		     uint8_t syndrome);

/* resp.c: what a message in sequence asks, for the wire's messages */
enum resp_status resp_execute(struct sim_qp *dst, struct sim_message *msg);
void resp_established(struct sim_qp *dst);

/*
 * wire-req.c, wire-resp.c: connected QPs and datagrams across the
 * uplink, packet by packet as the IB specification has them.
 */
struct wire_post {
	uint32_t index;			/* the WQE's, for its CQE */
	bool signaled, fenced;
	const struct sim_opcode *op;
	const struct dma_seg *seg;	/* its local buffers, translated */
	int nseg;
};
bool wire_remote(const struct sim_qp *qp, const uint8_t dmac[6]);
int wire_post(struct sim_qp *qp, const struct wire_post *p,
	      const struct sim_message *msg);
void wire_send_ud(struct sim_qp *qp, const uint8_t dmac[6], uint32_t dqpn,
		  const struct sim_message *msg);
void wire_receive(struct sim_port *port, const uint8_t *frame, size_t len);
void wire_timers(uint64_t now, uint64_t *deadline);
void wire_flush(struct sim_qp *qp);
void wire_free(struct sim_qp *qp);

#endif
