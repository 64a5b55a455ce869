/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libmlx4 internals: the provider's objects and what the files that
 * implement them share.
 */
#ifndef MLX4_H
#define MLX4_H

#include <endian.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>
#include <rdma/mlx4-abi.h>

#include "driver.h"
#include "lock.h"
#include "mmio.h"
#include "mlx4dv.h"

#define likely(x)	__builtin_expect(!!(x), 1)
#define unlikely(x)	__builtin_expect(!!(x), 0)

#define container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

/* A big-endian constant, usable in static initializers. */
#if __BYTE_ORDER == __LITTLE_ENDIAN
#define MLX4_BE32(x)	__builtin_bswap32(x)
#else
#define MLX4_BE32(x)	(x)
#endif

enum {
	MLX4_PORTS_NUM		= 2,
	/* Device limits the kernel enforces on user queues. */
	MLX4_MAX_WQE_SIZE	= 1008,	/* max_sq_desc_sz */
	/* LSO headers: a WQE less its control and one data segment. */
	MLX4_MAX_TSO_HEADER	= 1008 - 16 - 16 - 4,
	MLX4_MIN_SQ_STRIDE	= 6,
	MLX4_MAX_SQ_STRIDE	= 10,
	MLX4_MAX_SQ_WQES	= 16384,
	/* The device's, as the kernel checks it (max_qp_wr is below). */
	MLX4_MAX_RQ_WQES	= 16384,
	MLX4_SRQ_MIN_STRIDE	= 5,
	/* Receive CQEs of XRC target QPs carry this bit in their QPN. */
	MLX4_XRC_QPN_BIT	= 1 << 23,
	/* The HCA clock page follows the UAR and BlueFlame pages. */
	MLX4_CLOCK_PAGE_INDEX	= 3,
	/* Static rates are encoded with this offset in the address vector. */
	MLX4_STAT_RATE_OFFSET	= 5,
	/*
	 * RoCE address vector: port_pd bits for a VLAN tag (the datagram
	 * segment's vlan is used) and a multicast destination.
	 */
	MLX4_AV_ETH_VLAN	= 1 << 29,
	MLX4_AV_ETH_MCAST	= 1U << 31,
};

/* ---------------------------------------------------------------------
 * Device and context
 */

struct mlx4_device {
	struct verbs_device	verbs_dev;
	int			page_size;
	int			abi_version;
};

/*
 * Sparse map from a 24-bit QP or SRQ number to its object: a directory
 * of 4096 leaves of 4096 slots, leaves allocated on first use.  Lookups
 * on the completion path take no lock: an object is inserted before the
 * device can report on it and removed after its CQEs are gone.
 */
enum {
	MLX4_TABLE_SHIFT	= 12,
	MLX4_TABLE_LEAF		= 1 << MLX4_TABLE_SHIFT,
	MLX4_TABLE_MASK		= MLX4_TABLE_LEAF - 1,
	MLX4_TABLE_DIR		= 1 << (24 - MLX4_TABLE_SHIFT),
};

struct mlx4_table {
	pthread_mutex_t		mutex;
	struct {
		void		**slot;
		int		used;
	} dir[MLX4_TABLE_DIR];
};

struct mlx4_db_page;

struct mlx4_context {
	struct verbs_context	ibv_ctx;

	void		       *uar;		/* doorbell page */
	void		       *bf_page;	/* BlueFlame page, or NULL */
	int			bf_buf_size;	/* half a BlueFlame register */
	unsigned int		bf_offset;	/* which half is next */
	struct mlx4_lock	bf_lock;
#if !MLX4_MMIO_STORE64
	struct mlx4_lock	uar_lock;	/* 64-bit doorbells in halves */
#endif

	int			cqe_size;	/* 32 or 64 */
	int			qp_tab_size;

	/* Device limits, from query_device at open. */
	int			max_qp_wr;
	int			max_sge;
	int			max_sge_rd;	/* of an RDMA READ */
	int			max_cqe;
	int			max_srq_wr;
	int			max_srq_sge;
	uint32_t		max_inl_recv_sz;
	uint8_t			ud_ip_csum;	/* IBV_DEVICE_UD_IP_CSUM */
	uint8_t			raw_ip_csum;	/* IBV_DEVICE_RAW_IP_CSUM */

	uint8_t			link_layer[MLX4_PORTS_NUM];
	uint32_t		port_cap_flags[MLX4_PORTS_NUM];

	struct mlx4_table	qp_table;	/* QPN -> struct mlx4_qp */
	struct mlx4_table	xsrq_table;	/* SRQN -> XRC struct mlx4_srq */

	pthread_mutex_t		db_mutex;
	struct mlx4_db_page    *db_pages;

	void		       *hca_clock_page;
	const void	       *hca_core_clock;	/* big-endian 64-bit counter */
	uint64_t		hca_clock_khz;	/* its rate */

	uint8_t			log_wqs_range_sz;
	struct mlx4dv_ctx_allocators extern_alloc;
};

/*
 * A thread domain: the application's promise that one thread at a time
 * uses what is created under it.  Nothing of it reaches the kernel.
 */
struct mlx4_td {
	struct ibv_td		ibv_td;
	unsigned int		users;		/* parent domains on it */
};

/*
 * A protection domain, or a parent domain (domain.c): a PD of the
 * application's own making around a PD of the kernel's, with the same
 * handle and number, so it stands for that PD everywhere.
 */
struct mlx4_pd {
	struct ibv_pd		ibv_pd;
	uint32_t		pdn;
	/* A PD's parent domains; a parent domain's queues. */
	unsigned int		users;

	/* A parent domain's: its PD (NULL in a PD), TD, allocators. */
	struct mlx4_pd	       *protection_domain;
	struct mlx4_td	       *td;
	void		     *(*alloc)(struct ibv_pd *pd, void *pd_context,
				       size_t size, size_t alignment,
				       uint64_t resource_type);
	void		      (*free)(struct ibv_pd *pd, void *pd_context,
				      void *ptr, uint64_t resource_type);
	void		       *pd_context;
};

/* ---------------------------------------------------------------------
 * Queue memory and doorbell records
 */

struct mlx4_buf {
	void		       *buf;
	size_t			length;
	/* The parent domain whose allocator gave it, or NULL: ours. */
	struct mlx4_pd	       *domain;
	uint64_t		resource_type;	/* MLX4DV_RES_TYPE_* */
};

/* ---------------------------------------------------------------------
 * Completion queues
 */

struct mlx4_qp;
struct mlx4_srq;

/*
 * The adapter's clock and the system's real-time clock read together:
 * a CQE's time in ticks becomes nanoseconds of wall-clock time from the
 * nearest such pair (mlx4_ticks_to_wallclock_ns).
 */
#define MLX4_TICKS_MASK	((1ULL << 48) - 1)	/* what a CQE carries */

struct mlx4_clock_anchor {
	uint64_t		ticks;		/* 48 bits, as CQEs carry */
	uint64_t		ns;		/* CLOCK_REALTIME then */
};

struct mlx4_cq {
	struct verbs_cq		verbs_cq;

	/* Hot: what poll_cq touches. */
	struct mlx4_lock	lock;
	uint8_t			ci_owner;	/* ci_cqe's when software's */
	uint32_t		cons_index;	/* mlx4_cq_set_cons_index() */
	struct mlx4_cqe	       *ci_cqe;		/* the CQE at cons_index */
	uint32_t		mask;		/* entries - 1 */
	int			cqe_shift;	/* log2 of cqe_size */
	void		       *cqe_base;	/* struct mlx4_cqe of entry 0 */
	void		       *cqe_end;	/* ... of entry mask + 1: wraps */
	__be32		       *set_ci_db;
	struct mlx4_context    *ctx;
	/* Of the last completion (NULL: unknown, or an XRC SRQ's). */
	struct mlx4_qp	       *last_qp;
	/*
	 * last_qp's number as its CQEs hold it, if the fast paths take its
	 * sends (send_qpn) or its receives (recv_qpn: not on an SRQ); else
	 * a value no CQE holds.  cq.c: cache_qp().
	 */
	__be32			send_qpn;
	__be32			recv_qpn;
	uint8_t			timestamped;	/* CQEs: a time, no SL/SLID */
	uint8_t			dv_owned;	/* exposed by mlx4dv_init_obj */

	__be32		       *arm_db;
	uint32_t		arm_sn;
	uint32_t		cqn;
	int			cqe_size;
	struct mlx4_buf		buf;

	/* Extended polling: the CQE being read (its QP: last_qp). */
	struct mlx4_cqe	       *cur_cqe;
	uint64_t		wc_flags;	/* IBV_WC_EX_WITH_* asked for */
	struct mlx4_clock_anchor wallclock;	/* for _WALLCLOCK times */

	struct mlx4_pd	       *domain;		/* its parent domain, held */
	struct mlx4_buf		dbr;		/* set_ci_db if the domain's */
};

/* ---------------------------------------------------------------------
 * Work queues, QPs, SRQs
 */

struct mlx4_wq {
	uint64_t	       *wrid;
	struct mlx4_cq	       *cq;		/* where its completions go */
	void		       *buf;		/* WQE 0 */
	struct mlx4_lock	lock;
	unsigned int		head;		/* producer counter */
	/*
	 * The consumer counter; its low 16 bits only are compared with the
	 * head's (wq_looks_full()), as a queue holds fewer WQEs: a send
	 * CQE, which names the WQE it completes by those 16 bits, retires
	 * it in one store.
	 */
	unsigned int		tail;
	uint16_t		max_post;	/* WQEs it may hold */
	unsigned int		mask;		/* wqe_cnt - 1 */
	unsigned int		max_gs;
	int			wqe_shift;
	unsigned int		wqe_cnt;
	int			offset;		/* of buf in the QP buffer */
};

_Static_assert(MLX4_MAX_SQ_WQES < 1 << 16 && MLX4_MAX_RQ_WQES < 1 << 16,
	       "a work queue's head and tail modulo 2^16 tell full from empty");

/* QP types as bits, for the per-opcode "allowed on" masks. */
enum {
	MLX4_QPT_BIT_RC		= 1 << 0,
	MLX4_QPT_BIT_UC		= 1 << 1,
	MLX4_QPT_BIT_UD		= 1 << 2,
	MLX4_QPT_BIT_XRC	= 1 << 3,	/* XRC_SEND */
	MLX4_QPT_BIT_RAW	= 1 << 4,
};

enum {
	MLX4_WR_OPCODES		= IBV_WR_SEND_WITH_INV + 1,
	MLX4_CTRL_OF_FLAGS	= 0x18,		/* qp->ctrl_of_flags[] */
};

/*
 * How the fast path builds the WQE of one verbs opcode on one QP: fixed
 * headers, then a single data segment.  All fields precomputed.
 */
struct mlx4_fast_op {
	__be32			opcode_be;	/* 0: not on the fast path */
	__be32			size_be;	/* ctrl dword 1: the WQE size */
	uint32_t		imm_mask;	/* ~0: ctrl->imm = wr->imm_data */
	uint8_t			data_offset;	/* of the data segment */
	uint8_t			segs;		/* remote segments to write */
	uint8_t			inline_room;	/* its bytes in the first block */
};

/* Where an ibv_wr_* request's setters write. */
struct mlx4_wr_place {
	struct mlx4_wqe_ctrl_seg *ctrl;
	void		       *data;		/* where its payload goes */
};

/*
 * The ibv_wr_* request being set up and its batch (wr.c), in the QP so
 * that each call reaches them without a load.
 */
struct mlx4_wr_state {
	/* The request being set up: in the scratch WQE if refused. */
	union {
		struct {
			struct mlx4_wqe_ctrl_seg *ctrl;
			void		*data;
		};
		struct mlx4_wr_place place;
	};
	/*
	 * bf_qpn without payload, big-endian: the 16-byte units before it
	 * and the fence bit, for wr_set_sge() (UD QPs' wr_set_sge_ud()
	 * needs none).  The units, with the payload's, are at most 63:
	 * adding the payload's big-endian never carries out of them.
	 */
	uint32_t		size_be;
	union {
		struct {
			uint8_t	sge_limit;	/* qp->sge_limit[], 0: none */
			uint8_t	opcode;
		};
		uint32_t	sge_limit_opcode;	/* both, for one store */
	};

	/*
	 * The batch: its requests are WQEs [head, qp->sq.head).  What
	 * keeps wr_complete() off its lone-request path, one word tested
	 * once, is 0 between batches: what ends a batch clears it, so that
	 * wr_start() need not.
	 */
	union {
		struct {
			uint8_t	err;		/* the first error (errno) */
			uint8_t	bf_blocks;	/* BlueFlame, lone request */
			uint16_t need;		/* WR_NEED_* (wr.c) */
		};
		uint32_t	pending;
	};
	unsigned int		head;		/* qp->sq.head at wr_start() */
	/*
	 * qp->sq.head at which the queue looks full, modulo 2^16 as the
	 * tail it comes from, read at wr_start(): the one test of the
	 * opcode calls' likely case.
	 */
	uint16_t		stop;
	/* The scratch WQE's place: the setters' between batches. */
	struct mlx4_wr_place	idle;
};

struct mlx4_qp {
	struct verbs_qp		verbs_qp;

	/* Send side: what post_send reads. */
	struct mlx4_wq		sq;
	void		       *sdb;		/* UAR send doorbell */
	__be32			doorbell_qpn;	/* be32(qpn << 8) */
	uint32_t		sq_signal_bits;	/* CQ_UPDATE if sq_sig_all */
	unsigned int		owner_shift;	/* counter's pass bit -> 31 */
	unsigned int		sq_spare_wqes;
	size_t			sq_stamp_offset; /* spare WQEs, in bytes */
	size_t			sq_bytes;
	char		       *sq_end;
	int			max_inline_data;
	uint16_t		max_tso_header;	/* raw QPs: LSO header bytes */
	uint16_t		tso_room;	/* the LSO segment's WQE bytes */
	unsigned int		bf_max_size;	/* 16-byte units; 0: no BF */
	uint8_t			qpt_bit;	/* MLX4_QPT_BIT_* */
	/*
	 * 0 until a WQE beyond 64 bytes is written, then the bytes of the
	 * longest, in whole 64-byte blocks: the blocks stamping restores.
	 */
	uint16_t		sq_stamp;
	/* Per verbs opcode: 0 if not allowed on this QP, else max SGEs + 1. */
	uint8_t			sge_limit[MLX4_WR_OPCODES];
	/*
	 * Per verbs opcode: the lone inline path takes payloads of 1 to
	 * this many bytes (0: none).  Not in fast_op[], which stays 16 bytes.
	 */
	uint16_t		inline_limit[MLX4_WR_OPCODES];
	/*
	 * By IBV_SEND_FENCE/SIGNALED/SOLICITED/IP_CSUM (CTRL_INDEX() in
	 * wqe.h): control segment words, sq_sig_all and the checksum offload
	 * folded in.
	 */
	union mlx4_ctrl_of_flags {
		struct {
			__be32	bf_qpn;		/* its fence bit */
			__be32	srcrb_flags;
		};
		uint64_t	words;	/* both, as in the segment: one store */
	}			ctrl_of_flags[MLX4_CTRL_OF_FLAGS];
	struct mlx4_fast_op	fast_op[MLX4_WR_OPCODES];
	struct mlx4_context    *ctx;
	struct mlx4_wr_state	wr;		/* ibv_wr_*, if asked */

	/* Receive side. */
	struct mlx4_wq		rq;
	__be32		       *db;		/* receive doorbell record */

	uint32_t		qpn;
	uint8_t			link_layer;
	uint8_t			csum;		/* mlx4_qp_update_csum() */
	uint8_t			no_queues;	/* XRC target, RSS: kernel-only */
	uint8_t			buf_is_extern;	/* from mlx4dv allocators */
	struct mlx4_buf		buf;
	uint32_t		inl_recv_sz;
	struct mlx4_wr_batch   *wrb;		/* ibv_wr_* state, if asked */
	struct mlx4_pd	       *domain;		/* its parent domain, held */
	struct mlx4_buf		dbr;		/* db if the domain's */
};

struct mlx4_srq {
	struct verbs_srq	verbs_srq;
	struct mlx4_lock	lock;
	void		       *wqe_base;
	int			wqe_shift;
	unsigned int		mask;
	unsigned int		max_gs;
	unsigned int		head;		/* next free WQE */
	unsigned int		tail;		/* last free WQE */
	uint16_t		counter;	/* WQEs posted */
	__be32		       *db;
	uint64_t	       *wrid;
	struct mlx4_buf		buf;
	int			max;		/* WQEs in the buffer */
	uint32_t		srqn;
	uint8_t			is_xrc;
	struct mlx4_pd	       *domain;		/* its parent domain, held */
	struct mlx4_buf		dbr;		/* db if the domain's */
};

struct mlx4_ah {
	struct ibv_ah		ibv_ah;
	struct mlx4_av		av;
	/* The datagram segment's last 8 bytes, as a WQE has them. */
	struct {
		__be16		vlan;		/* VLAN ID, priority from SL */
		uint8_t		mac[6];
	} l2;
};

/* A receive WQ is a QP without a send queue to the device. */
struct mlx4_rwq {
	struct mlx4_qp		qp;
	struct ibv_wq		wq;
};

/* ---------------------------------------------------------------------
 * Casts
 */

static inline struct mlx4_device *to_mdev(struct ibv_device *ibdev)
{
	return container_of(ibdev, struct mlx4_device, verbs_dev.device);
}

static inline struct mlx4_context *to_mctx(struct ibv_context *ibctx)
{
	return container_of(ibctx, struct mlx4_context, ibv_ctx.context);
}

static inline struct mlx4_pd *to_mpd(struct ibv_pd *ibpd)
{
	return container_of(ibpd, struct mlx4_pd, ibv_pd);
}

static inline struct mlx4_td *to_mtd(struct ibv_td *ibtd)
{
	return container_of(ibtd, struct mlx4_td, ibv_td);
}

static inline struct mlx4_cq *to_mcq(struct ibv_cq *ibcq)
{
	return container_of(ibcq, struct mlx4_cq, verbs_cq.cq);
}

static inline struct mlx4_cq *to_mcq_ex(struct ibv_cq_ex *ibcq)
{
	return container_of(ibcq, struct mlx4_cq, verbs_cq.cq_ex);
}

static inline struct mlx4_qp *to_mqp(struct ibv_qp *ibqp)
{
	return container_of(ibqp, struct mlx4_qp, verbs_qp.qp);
}

static inline struct mlx4_srq *to_msrq(struct ibv_srq *ibsrq)
{
	return container_of(ibsrq, struct mlx4_srq, verbs_srq.srq);
}

static inline struct mlx4_ah *to_mah(struct ibv_ah *ibah)
{
	return container_of(ibah, struct mlx4_ah, ibv_ah);
}

static inline struct mlx4_rwq *to_mrwq(struct ibv_wq *ibwq)
{
	return container_of(ibwq, struct mlx4_rwq, wq);
}

static inline unsigned int mlx4_roundup_pow2(unsigned int n)
{
	return n <= 1 ? 1 : 1U << (32 - __builtin_clz(n - 1));
}

static inline int mlx4_ilog2(unsigned int n)
{
	return 31 - __builtin_clz(n);
}

/* ---------------------------------------------------------------------
 * Shared by the files that implement the objects
 */

static inline size_t mlx4_page_align(size_t size, int page_size)
{
	return (size + page_size - 1) & ~((size_t)page_size - 1);
}

/* buf.c */
int mlx4_alloc_buf(struct mlx4_buf *buf, size_t size, int page_size);
void mlx4_free_buf(struct mlx4_buf *buf);
int mlx4_alloc_domain_mem(struct mlx4_pd *domain, struct mlx4_buf *buf,
			  size_t length, size_t alignment,
			  uint64_t resource_type);
int mlx4_alloc_queue_buf(struct mlx4_pd *domain, struct mlx4_buf *buf,
			 size_t size, int page_size, uint64_t resource_type);
int mlx4_alloc_buf_extern(struct mlx4_context *ctx, struct mlx4_buf *buf,
			  size_t size);
void mlx4_free_buf_extern(struct mlx4_context *ctx, struct mlx4_buf *buf);

/* dbrec.c */
__be32 *mlx4_alloc_db(struct mlx4_context *ctx);
void mlx4_free_db(struct mlx4_context *ctx, __be32 *db);
void mlx4_free_db_pages(struct mlx4_context *ctx);
int mlx4_alloc_queue_db(struct mlx4_context *ctx, struct mlx4_pd *domain,
			struct mlx4_buf *dbr, __be32 **db);
void mlx4_free_queue_db(struct mlx4_context *ctx, __be32 *db,
			struct mlx4_buf *dbr);

/* domain.c */
struct ibv_td *mlx4_alloc_td(struct ibv_context *context,
			     struct ibv_td_init_attr *attr);
int mlx4_dealloc_td(struct ibv_td *td);
struct ibv_pd *mlx4_alloc_parent_domain(struct ibv_context *context,
					struct ibv_parent_domain_init_attr *attr);
int mlx4_dealloc_parent_domain(struct mlx4_pd *domain);
int mlx4_hold_cq_parent_domain(struct ibv_context *context,
			       const struct ibv_cq_init_attr_ex *attr,
			       struct mlx4_pd **domain);
struct mlx4_pd *mlx4_hold_parent_domain(struct ibv_pd *pd);
void mlx4_release_parent_domain(struct mlx4_pd *domain);

static inline int mlx4_is_parent_domain(const struct mlx4_pd *pd)
{
	return pd->protection_domain != NULL;
}

/* Queues created on a parent domain with a thread domain take no lock. */
static inline int mlx4_domain_single_threaded(const struct mlx4_pd *domain)
{
	return domain && domain->td;
}

/* mlx4.c */
int mlx4_table_init(struct mlx4_table *table);
void mlx4_table_cleanup(struct mlx4_table *table);
int mlx4_table_insert(struct mlx4_table *table, uint32_t num, void *obj);
void mlx4_table_remove(struct mlx4_table *table, uint32_t num);

static inline void *mlx4_table_find(struct mlx4_table *table, uint32_t num)
{
	void **slot = table->dir[(num & 0xffffff) >> MLX4_TABLE_SHIFT].slot;

	return slot ? slot[num & MLX4_TABLE_MASK] : NULL;
}

static inline int mlx4_page_size(struct ibv_context *ibctx)
{
	return to_mdev(ibctx->device)->page_size;
}

/* verbs.c */
int mlx4_query_device_ex(struct ibv_context *context,
			 const struct ibv_query_device_ex_input *input,
			 struct ibv_device_attr_ex *attr, size_t attr_size);
int mlx4_query_port(struct ibv_context *context, uint8_t port,
		    struct ibv_port_attr *attr);
int mlx4_query_rt_values(struct ibv_context *context,
			 struct ibv_values_ex *values);
void mlx4_map_hca_clock(struct mlx4_context *ctx, uint64_t offset);
int mlx4_has_wallclock(const struct mlx4_context *ctx);
void mlx4_clock_anchor_set(const struct mlx4_context *ctx,
			   struct mlx4_clock_anchor *anchor);
uint64_t mlx4_ticks_to_wallclock_ns(const struct mlx4_context *ctx,
				    struct mlx4_clock_anchor *anchor,
				    uint64_t ticks);
int mlx4_port_link_layer(struct mlx4_context *ctx, uint8_t port);
struct ibv_pd *mlx4_alloc_pd(struct ibv_context *context);
int mlx4_dealloc_pd(struct ibv_pd *pd);
struct ibv_xrcd *mlx4_open_xrcd(struct ibv_context *context,
				struct ibv_xrcd_init_attr *attr);
int mlx4_close_xrcd(struct ibv_xrcd *xrcd);
struct ibv_mr *mlx4_reg_mr(struct ibv_pd *pd, void *addr, size_t length,
			   uint64_t hca_va, int access);
int mlx4_rereg_mr(struct verbs_mr *vmr, int flags, struct ibv_pd *pd,
		  void *addr, size_t length, int access);
int mlx4_dereg_mr(struct verbs_mr *vmr);
struct ibv_mw *mlx4_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type);
int mlx4_dealloc_mw(struct ibv_mw *mw);
int mlx4_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw,
		 struct ibv_mw_bind *mw_bind);
struct ibv_ah *mlx4_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr);
int mlx4_destroy_ah(struct ibv_ah *ah);
int mlx4_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid,
		      uint16_t lid);
int mlx4_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid,
		      uint16_t lid);
struct ibv_flow *mlx4_create_flow(struct ibv_qp *qp,
				  struct ibv_flow_attr *flow_attr);
int mlx4_destroy_flow(struct ibv_flow *flow);
struct ibv_rwq_ind_table *mlx4_create_rwq_ind_table(
	struct ibv_context *context,
	struct ibv_rwq_ind_table_init_attr *init_attr);
int mlx4_destroy_rwq_ind_table(struct ibv_rwq_ind_table *table);

/* cq.c */
struct ibv_cq *mlx4_create_cq(struct ibv_context *context, int cqe,
			      struct ibv_comp_channel *channel,
			      int comp_vector);
struct ibv_cq_ex *mlx4_create_cq_ex(struct ibv_context *context,
				    struct ibv_cq_init_attr_ex *attr);
int mlx4_modify_cq(struct ibv_cq *cq, struct ibv_modify_cq_attr *attr);
int mlx4_resize_cq(struct ibv_cq *cq, int cqe);
int mlx4_destroy_cq(struct ibv_cq *cq);
int mlx4_poll_cq(struct ibv_cq *cq, int ne, struct ibv_wc *wc);
int mlx4_arm_cq(struct ibv_cq *cq, int solicited);
void mlx4_cq_event(struct ibv_cq *cq);
void mlx4_cq_clean(struct mlx4_cq *cq, uint32_t qpn, struct mlx4_srq *srq);
void mlx4_cq_init_buf(void *buf, uint32_t nent, int cqe_size, uint32_t first);
void mlx4_cq_fill_ex_ops(struct mlx4_cq *cq, uint64_t wc_flags);
int mlx4_cq_alloc_ring(struct mlx4_cq *cq, struct mlx4_context *ctx, int nent);
void mlx4_cq_set_cons_index(struct mlx4_cq *cq, uint32_t ci);
void mlx4_cq_switch_ring(struct mlx4_cq *cq, struct mlx4_buf *new_buf,
			 uint32_t nent);
void mlx4_cq_free_ring(struct mlx4_cq *cq);
int mlx4_cq_resize_copy_cqes(struct mlx4_cq *cq, void *new_buf,
			     uint32_t new_nent);
void mlx4_lock_cqs(struct mlx4_cq *a, struct mlx4_cq *b);
void mlx4_unlock_cqs(struct mlx4_cq *a, struct mlx4_cq *b);

/* qp.c: the send queue's geometry and the classic data path */
int mlx4_calc_sq_size(struct mlx4_qp *qp, enum ibv_qp_type type,
		      struct ibv_qp_cap *cap);
void mlx4_set_sq_limits(struct mlx4_qp *qp, enum ibv_qp_type type,
			struct ibv_qp_cap *cap);
void mlx4_qp_update_csum(struct mlx4_qp *qp);
void mlx4_init_sq_ownership(struct mlx4_qp *qp);
int mlx4_wq_overflow(struct mlx4_wq *wq, unsigned int ind);
int mlx4_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
		   struct ibv_send_wr **bad_wr);
int mlx4_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
		   struct ibv_recv_wr **bad_wr);
int mlx4_post_wq_recv(struct ibv_wq *wq, struct ibv_recv_wr *wr,
		      struct ibv_recv_wr **bad_wr);

/* wr.c: the ibv_wr_* calls */
int mlx4_qp_init_wr_api(struct mlx4_qp *qp, uint64_t send_ops_flags);

/* qp_verbs.c: the QP's control verbs */
struct ibv_qp *mlx4_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr);
struct ibv_qp *mlx4_create_qp_ex(struct ibv_context *context,
				 struct ibv_qp_init_attr_ex *attr);
struct ibv_qp *mlx4_open_qp(struct ibv_context *context,
			    struct ibv_qp_open_attr *attr);
int mlx4_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask);
int mlx4_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask,
		  struct ibv_qp_init_attr *init_attr);
int mlx4_destroy_qp(struct ibv_qp *qp);
int mlx4_qp_alloc_queues(struct mlx4_qp *qp, struct ibv_qp_init_attr_ex *attr);
void mlx4_qp_free_queues(struct mlx4_qp *qp);
int mlx4_qp_ready(struct mlx4_qp *qp, struct ibv_qp_init_attr_ex *attr,
		  struct ibv_qp_cap *cap);
int mlx4_alloc_qp_buf(struct mlx4_qp *qp, int page_size,
		      uint64_t resource_type);
void mlx4_free_qp_buf(struct mlx4_qp *qp);
void mlx4_calc_rq_size(struct mlx4_qp *qp, struct ibv_qp_cap *cap,
		       uint32_t inl_recv_sz);
void mlx4_qp_clean_cqs(struct mlx4_qp *qp, struct ibv_cq *send_cq,
		       struct ibv_cq *recv_cq);

/* wq.c */
struct ibv_wq *mlx4_create_wq(struct ibv_context *context,
			      struct ibv_wq_init_attr *attr);
int mlx4_modify_wq(struct ibv_wq *wq, struct ibv_wq_attr *attr);
int mlx4_destroy_wq(struct ibv_wq *wq);

/* srq.c */
struct ibv_srq *mlx4_create_srq(struct ibv_pd *pd,
				struct ibv_srq_init_attr *attr);
struct ibv_srq *mlx4_create_srq_ex(struct ibv_context *context,
				   struct ibv_srq_init_attr_ex *attr);
int mlx4_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr, int mask);
int mlx4_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr);
int mlx4_destroy_srq(struct ibv_srq *srq);
int mlx4_get_srq_num(struct ibv_srq *srq, uint32_t *srq_num);
int mlx4_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
		       struct ibv_recv_wr **bad_wr);
int mlx4_srq_alloc_queue(struct mlx4_srq *srq, struct mlx4_context *ctx,
			 struct ibv_srq_attr *attr);
void mlx4_srq_free_queue(struct mlx4_srq *srq, struct mlx4_context *ctx);
void mlx4_free_srq_wqe(struct mlx4_srq *srq, unsigned int ind);

#endif /* MLX4_H */
