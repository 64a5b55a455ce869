/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * kernel-rules: what mlx4_ib (and uverbs in front of it) refuses, and how
 * it lays out the queues it hands to the device, seen through any mlx4
 * provider.  A table of rules, each with the errno the kernel returns
 * (those a provider checks before the kernel sees them are sent as uverbs
 * write commands), then the layouts: a WQ's receive WQEs where the device reads them, a
 * receive-inline QP whose stride the kernel takes, and a type 2 memory
 * window whose key is gone.  Prints TAP.  Each rule is a case of its own
 * (tests/cases.h), named as its row of kernel-rules.txt.
 *
 * The mlx4 direct verbs are taken from whichever provider libibverbs
 * loaded, so that the same program checks the distribution's and ours.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <net/if.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <endian.h>
#include <infiniband/verbs.h>
#include <infiniband/mlx4dv.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/mlx4-abi.h>

#include "../device.h"
#include "../tap.h"
#include "../cases.h"
#include "../wait.h"

static struct ibv_context *ctx;
static struct ibv_device_attr dev;
static uint32_t rss_tbl_max;	/* 0: no RSS, as on InfiniBand ports */
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static uint16_t lid;
static union ibv_gid gid0;	/* on an Ethernet port, the address */
static bool ethernet;

/* The direct verbs of the loaded provider. */
static struct {
	struct ibv_qp *(*create_qp)(struct ibv_context *,
				    struct ibv_qp_init_attr_ex *,
				    struct mlx4dv_qp_init_attr *);
	int (*init_obj)(struct mlx4dv_obj *, uint64_t);
	int (*set_context_attr)(struct ibv_context *,
				enum mlx4dv_set_ctx_attr_type, void *);
} dv;

static int find_provider(struct dl_phdr_info *info, size_t size, void *out)
{
	(void)size;
	if (!strstr(info->dlpi_name, "libmlx4-rdmav"))
		return 0;
	*(void **)out = dlopen(info->dlpi_name, RTLD_NOW | RTLD_NOLOAD);
	return *(void **)out != NULL;
}

static void load_dv(void)
{
	void *lib = NULL;

	dl_iterate_phdr(find_provider, &lib);
	if (!lib)
		bail("find the mlx4 provider");
	dv.create_qp = dlsym(lib, "mlx4dv_create_qp");
	dv.init_obj = dlsym(lib, "mlx4dv_init_obj");
	dv.set_context_attr = dlsym(lib, "mlx4dv_set_context_attr");
	if (!dv.create_qp || !dv.init_obj || !dv.set_context_attr)
		bail("the mlx4 direct verbs");
}

static int set_wq_range(uint8_t log_size)
{
	return dv.set_context_attr(ctx, MLX4DV_SET_CTX_ATTR_LOG_WQS_RANGE_SZ,
				   &log_size);
}

/* 0 if @obj was made (and is freed again), else the errno it failed with. */
static int made(void *obj, int (*destroy)(void *))
{
	if (!obj)
		return errno ? errno : -1;
	return destroy(obj) ? -1 : 0;
}

static int destroy_cq(void *p) { return ibv_destroy_cq(p); }
static int destroy_qp(void *p) { return ibv_destroy_qp(p); }
static int destroy_wq(void *p) { return ibv_destroy_wq(p); }
static int destroy_tbl(void *p) { return ibv_destroy_rwq_ind_table(p); }

static struct ibv_wq *make_wq(uint32_t max_wr, uint32_t max_sge)
{
	struct ibv_wq_init_attr attr = {
		.wq_type = IBV_WQT_RQ, .max_wr = max_wr, .max_sge = max_sge,
		.pd = pd, .cq = cq,
	};

	errno = 0;
	return ibv_create_wq(ctx, &attr);
}

static struct ibv_rwq_ind_table *make_table(struct ibv_wq **wqs, int log)
{
	struct ibv_rwq_ind_table_init_attr attr = {
		.log_ind_tbl_size = log, .ind_tbl = wqs,
	};

	errno = 0;
	return ibv_create_rwq_ind_table(ctx, &attr);
}

/* ------------------------------------------------------------------ */
/* The rules                                                           */
/* ------------------------------------------------------------------ */

static int cq_on_vector(int vector)
{
	errno = 0;
	return made(ibv_create_cq(ctx, 16, NULL, NULL, vector), destroy_cq);
}

static int cq_vector_past_last(void)
{
	return cq_on_vector(ctx->num_comp_vectors);
}

static int cq_vector_last(void)
{
	return cq_on_vector(ctx->num_comp_vectors - 1);
}

static int cq_too_many_cqes(void)
{
	errno = 0;
	return made(ibv_create_cq(ctx, dev.max_cqe + 1, NULL, NULL, 0),
		    destroy_cq);
}

static int cq_rounded(void)
{
	struct ibv_cq *c = ibv_create_cq(ctx, 100, NULL, NULL, 0);
	int cqe = c ? c->cqe : -1;

	if (!c || ibv_destroy_cq(c))
		return errno;
	/* roundup_pow_of_two(100 + 1) entries, one kept empty */
	return cqe == 127 ? 0 : ERANGE;
}

static int qp_to_port(uint8_t port)
{
	struct ibv_qp_init_attr init = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp_attr attr = {
		.qp_state = IBV_QPS_INIT, .port_num = port,
	};
	struct ibv_qp *qp = ibv_create_qp(pd, &init);
	int ret;

	if (!qp)
		return errno;
	ret = ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			    IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	if (ibv_destroy_qp(qp))
		return -1;
	return ret;
}

static int qp_port_zero(void) { return qp_to_port(0); }
static int qp_port_past_last(void) { return qp_to_port(dev.phys_port_cnt + 1); }
static int qp_port_last(void) { return qp_to_port(dev.phys_port_cnt); }

/* The path to ourselves on port 1: by LID, and by GID on RoCE. */
static struct ibv_ah_attr own_path(void)
{
	struct ibv_ah_attr ah = { .dlid = lid, .port_num = 1 };

	if (ethernet) {
		ah.is_global = 1;
		ah.grh.dgid = gid0;
		ah.grh.hop_limit = 1;
	}
	return ah;
}

/*
 * An RC QP to RTR with an alternate path on port 1 (the primary's):
 * _ib_modify_qp bans alternate paths unless both ports run InfiniBand.
 */
static int qp_alt_path(void)
{
	struct ibv_qp_init_attr init = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_INIT, .port_num = 1 };
	struct ibv_qp *qp = ibv_create_qp(pd, &init);
	int ret;

	if (!qp)
		return -1;
	ret = ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			    IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) ? -1 : 0;
	attr = (struct ibv_qp_attr){
		.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024,
		.dest_qp_num = qp->qp_num, .max_dest_rd_atomic = 1,
		.min_rnr_timer = 1, .ah_attr = own_path(),
		.alt_ah_attr = own_path(), .alt_port_num = 1,
		.alt_timeout = 14,
	};
	if (!ret)
		ret = ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_AV |
				    IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				    IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
				    IBV_QP_MIN_RNR_TIMER | IBV_QP_ALT_PATH);
	if (ibv_destroy_qp(qp))
		return -1;
	return ret;
}

static struct ibv_qp *inline_recv_qp(struct ibv_cq *c, struct ibv_srq *srq,
				     uint32_t *inl_recv_sz)
{
	struct ibv_qp_init_attr_ex init = {
		.send_cq = c, .recv_cq = c, .srq = srq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 8, .max_recv_wr = srq ? 0 : 8,
			 .max_send_sge = 1, .max_recv_sge = srq ? 0 : 1 },
		.comp_mask = IBV_QP_INIT_ATTR_PD, .pd = pd,
	};
	struct mlx4dv_qp_init_attr mlx4 = {
		.comp_mask = MLX4DV_QP_INIT_ATTR_MASK_INL_RECV,
		.inl_recv_sz = *inl_recv_sz,
	};
	struct ibv_qp *qp;

	errno = 0;
	qp = dv.create_qp(ctx, &init, &mlx4);
	*inl_recv_sz = mlx4.inl_recv_sz;
	return qp;
}

static int inline_recv(uint32_t size)
{
	return made(inline_recv_qp(cq, NULL, &size), destroy_qp);
}

static int inline_recv_past_max(void)
{
	/* max_rq_sg (32) data segments of 16 bytes */
	return inline_recv(513);
}

static int inline_recv_odd(void)
{
	return inline_recv(100);
}

static int inline_recv_without_rq(void)
{
	struct ibv_srq_init_attr attr = { .attr = { .max_wr = 4, .max_sge = 1 } };
	struct ibv_srq *srq = ibv_create_srq(pd, &attr);
	uint32_t size = 64;
	int ret;

	if (!srq)
		return -1;
	ret = made(inline_recv_qp(cq, srq, &size), destroy_qp);
	ibv_destroy_srq(srq);
	return ret;
}

/*
 * A WQ exists only where mlx4_ib_add() set its ops: RSS and a port on
 * Ethernet.  Elsewhere the command's slot is uverbs' notsupp_method,
 * which ib_uverbs_write checks as a legacy command: the extended
 * command's header fails that (EINVAL), whatever libibverbs sends.
 */
static int wq_plain(void)
{
	return made(make_wq(4, 1), destroy_wq);
}

static int wq_range_past_max(void)
{
	int ret;

	/* ilog2(max_rss_tbl_sz): 256 WQs */
	set_wq_range(9);
	ret = made(make_wq(4, 1), destroy_wq);
	set_wq_range(0);
	return ret;
}

/* A second range asked for while the first still has free numbers. */
static int wq_range_while_open(void)
{
	struct ibv_wq *first, *second;
	int ret;

	set_wq_range(1);
	first = make_wq(4, 1);
	if (!first)
		return -1;
	set_wq_range(1);
	second = make_wq(4, 1);
	ret = made(second, destroy_wq);
	set_wq_range(0);
	ibv_destroy_wq(first);
	return ret;
}

/*
 * A range one of whose WQs is gone takes no more (mlx4_ib_release_wqn
 * marks it dirty): the next WQ opens a new range, even of 2 while the
 * old one still has a WQ and free numbers.
 */
static int wq_range_after_destroy(void)
{
	struct ibv_wq *a, *b, *c;
	int ret;

	set_wq_range(2);
	a = make_wq(4, 1);
	b = a ? make_wq(4, 1) : NULL;
	if (!b) {
		ret = errno;
		if (a)
			ibv_destroy_wq(a);
		set_wq_range(0);
		return ret ? ret : -1;
	}
	ibv_destroy_wq(a);
	set_wq_range(1);
	c = make_wq(4, 1);
	ret = c ? 0 : errno;
	if (c && (c->wq_num % 2 || (c->wq_num & ~3u) == (b->wq_num & ~3u)))
		ret = ERANGE;
	set_wq_range(0);
	if (c)
		ibv_destroy_wq(c);
	ibv_destroy_wq(b);
	return ret;
}

/*
 * Four WQs from one range into @wqs: 0 when their numbers are
 * consecutive and aligned to four, ERANGE when not (the four are made
 * all the same), else the errno of the one that failed (none is left).
 */
static int range_of_four(struct ibv_wq *wqs[4])
{
	int i;

	set_wq_range(2);
	for (i = 0; i < 4; i++) {
		wqs[i] = make_wq(4, 1);
		if (!wqs[i])
			break;
	}
	if (i < 4) {
		int err = errno;

		while (i--) {
			ibv_destroy_wq(wqs[i]);
			wqs[i] = NULL;
		}
		set_wq_range(0);
		return err;
	}
	for (i = 1; i < 4; i++)
		if (wqs[i]->wq_num != wqs[0]->wq_num + i)
			return ERANGE;
	return wqs[0]->wq_num % 4 ? ERANGE : 0;
}

static void free_four(struct ibv_wq *wqs[4])
{
	for (int i = 0; i < 4; i++)
		if (wqs[i])
			ibv_destroy_wq(wqs[i]);
}

static int wq_range_of_four(void)
{
	struct ibv_wq *wqs[4] = {};
	int ret = range_of_four(wqs);

	free_four(wqs);
	return ret;
}

/*
 * @use's answer over four WQs of one range, made for it (and gone after):
 * -1 when they cannot be made (wq_range_of_four says why).  @use may
 * destroy one, leaving NULL in its place.
 */
static int over_range_of_four(int (*use)(struct ibv_wq *wqs[4]))
{
	struct ibv_wq *wqs[4] = {};
	int ret;

	range_of_four(wqs);
	ret = wqs[0] ? use(wqs) : -1;
	free_four(wqs);
	return ret;
}

static int table_over_two(struct ibv_wq *wqs[4])
{
	return made(make_table(wqs, 2), destroy_tbl);
}

static int table_of_four(void)
{
	return over_range_of_four(table_over_two);
}

static int table_from_second(struct ibv_wq *wqs[4])
{
	return made(make_table(wqs + 1, 1), destroy_tbl);
}

static int table_unaligned(void)
{
	return over_range_of_four(table_from_second);
}

static int table_first_and_third(struct ibv_wq *wqs[4])
{
	struct ibv_wq *pair[2] = { wqs[0], wqs[2] };

	return made(make_table(pair, 1), destroy_tbl);
}

static int table_not_consecutive(void)
{
	return over_range_of_four(table_first_and_third);
}

static int table_of_512(struct ibv_wq *wqs[4])
{
	struct ibv_wq *all[512];

	for (int i = 0; i < 512; i++)
		all[i] = wqs[i % 4];
	return made(make_table(all, 9), destroy_tbl);
}

static int table_too_big(void)
{
	return over_range_of_four(table_of_512);
}

static int destroy_first_in_table(struct ibv_wq *wqs[4])
{
	struct ibv_rwq_ind_table *tbl = make_table(wqs, 2);
	int ret;

	if (!tbl)
		return -1;
	ret = ibv_destroy_wq(wqs[0]);
	if (!ret)
		wqs[0] = NULL;
	if (ibv_destroy_rwq_ind_table(tbl))
		return -1;
	return ret;
}

static int wq_in_table_destroyed(void)
{
	return over_range_of_four(destroy_first_in_table);
}

static int wq_to(struct ibv_wq *wq, enum ibv_wq_state state)
{
	struct ibv_wq_attr attr = {
		.attr_mask = IBV_WQ_ATTR_STATE, .wq_state = state,
	};

	return ibv_modify_wq(wq, &attr);
}

/*
 * A new WQ moved to each of @n @states in turn: the moves before the last
 * must succeed (-1 if one does not), the last one's result is the case's.
 */
static int wq_moves(const enum ibv_wq_state *states, int n)
{
	struct ibv_wq *wq = make_wq(4, 1);
	int ret = 0;

	if (!wq)
		return -1;
	for (int i = 0; i < n && !ret; i++) {
		ret = wq_to(wq, states[i]);
		if (ret && i < n - 1)
			ret = -1;
	}
	return ibv_destroy_wq(wq) ? -1 : ret;
}

static int wq_reset_to_err(void)
{
	static const enum ibv_wq_state moves[] = { IBV_WQS_ERR };

	return wq_moves(moves, 1);
}

static int wq_err_to_rdy(void)
{
	static const enum ibv_wq_state moves[] = {
		IBV_WQS_RDY, IBV_WQS_ERR, IBV_WQS_RDY,
	};

	return wq_moves(moves, 3);
}

static int wq_rdy_err_reset(void)
{
	static const enum ibv_wq_state moves[] = {
		IBV_WQS_RDY, IBV_WQS_ERR, IBV_WQS_RESET,
	};

	return wq_moves(moves, 3);
}

static struct ibv_xrcd *open_xrcd(void)
{
	struct ibv_xrcd_init_attr attr = {
		.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
		.fd = -1, .oflags = O_CREAT,
	};

	return ibv_open_xrcd(ctx, &attr);
}

static int close_xrcd_with_srq(void)
{
	struct ibv_xrcd *xrcd = open_xrcd();
	struct ibv_srq_init_attr_ex attr = {
		.attr = { .max_wr = 4, .max_sge = 1 },
		.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
			     IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ,
		.srq_type = IBV_SRQT_XRC, .pd = pd, .xrcd = xrcd, .cq = cq,
	};
	struct ibv_srq *srq = xrcd ? ibv_create_srq_ex(ctx, &attr) : NULL;
	int ret;

	if (!srq)
		return -1;
	ret = ibv_close_xrcd(xrcd);
	if (ibv_destroy_srq(srq) || ibv_close_xrcd(xrcd))
		return -1;
	return ret;
}

static int close_xrcd_with_qp(void)
{
	struct ibv_xrcd *xrcd = open_xrcd();
	struct ibv_qp_init_attr_ex attr = {
		.qp_type = IBV_QPT_XRC_RECV,
		.comp_mask = IBV_QP_INIT_ATTR_XRCD, .xrcd = xrcd,
	};
	struct ibv_qp *qp = xrcd ? ibv_create_qp_ex(ctx, &attr) : NULL;
	int ret;

	if (!qp)
		return -1;
	ret = ibv_close_xrcd(xrcd);
	if (ibv_destroy_qp(qp) || ibv_close_xrcd(xrcd))
		return -1;
	return ret;
}

/*
 * A QP made with the uverbs write command itself: its queues in @buf, its
 * doorbell record at @db, the send queue sized by @log_count entries of
 * 1 << @log_stride bytes and the caller asking for @max_send_wr; one
 * receive WQE of one gather entry (16 bytes, after the send queue).  What
 * mlx4_ib checks of a user QP, whatever a provider checks first.  0 or
 * the errno; the QP is destroyed again.
 */
static int raw_create_qp(void *buf, void *db, uint32_t max_send_wr,
			 uint8_t log_count, uint8_t log_stride)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_create_qp cmd;
		struct mlx4_ib_create_qp drv;
	} create = {};
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_destroy_qp cmd;
	} destroy = {};
	struct ib_uverbs_create_qp_resp resp = {};
	struct ib_uverbs_destroy_qp_resp dresp;

	create.hdr.command = IB_USER_VERBS_CMD_CREATE_QP;
	create.hdr.in_words = sizeof(create) / 4;
	create.hdr.out_words = sizeof(resp) / 4;
	create.cmd = (struct ib_uverbs_create_qp){
		.response = (uintptr_t)&resp, .pd_handle = pd->handle,
		.send_cq_handle = cq->handle, .recv_cq_handle = cq->handle,
		.max_send_wr = max_send_wr, .max_recv_wr = 1,
		.max_send_sge = 1, .max_recv_sge = 1, .qp_type = IBV_QPT_RC,
	};
	create.drv = (struct mlx4_ib_create_qp){
		.buf_addr = (uintptr_t)buf, .db_addr = (uintptr_t)db,
		.log_sq_bb_count = log_count, .log_sq_stride = log_stride,
	};
	if (write(ctx->cmd_fd, &create, sizeof(create)) != sizeof(create))
		return errno;
	destroy.hdr.command = IB_USER_VERBS_CMD_DESTROY_QP;
	destroy.hdr.in_words = sizeof(destroy) / 4;
	destroy.hdr.out_words = sizeof(dresp) / 4;
	destroy.cmd.response = (uintptr_t)&dresp;
	destroy.cmd.qp_handle = resp.qp_handle;
	if (write(ctx->cmd_fd, &destroy, sizeof(destroy)) != sizeof(destroy))
		return -1;
	return 0;
}

/* The same in memory to spare. */
static int raw_qp(uint32_t max_send_wr, uint8_t log_count, uint8_t log_stride)
{
	size_t len = 2 * 16384 + 4096;
	uint8_t *buf = aligned_alloc(4096, len);
	int ret;

	if (!buf)
		return -1;
	memset(buf, 0, len);
	ret = raw_create_qp(buf, buf + len - 4096, max_send_wr, log_count,
			    log_stride);
	free(buf);
	return ret;
}

/*
 * The same with a send queue of 4 entries of 64 bytes and only @mapped
 * bytes of its buffer before an inaccessible page: mlx4_ib pins both
 * queues, 4 * 64 + 16 bytes.
 */
static int raw_qp_mapped(size_t mapped)
{
	size_t page = sysconf(_SC_PAGESIZE);
	char *map = mmap(NULL, 3 * page, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int ret;

	if (map == MAP_FAILED)
		return -1;
	if (mprotect(map + 2 * page, page, PROT_NONE)) {
		munmap(map, 3 * page);
		return -1;
	}
	ret = raw_create_qp(map + 2 * page - mapped, map, 4, 2, 6);
	munmap(map, 3 * page);
	return ret;
}

static int raw_qp_buffer_whole(void)
{
	return raw_qp_mapped(4 * 64 + 16);
}

static int raw_qp_buffer_short(void)
{
	/* the send queue alone */
	return raw_qp_mapped(4 * 64);
}

static int raw_qp_as_providers_make_it(void)
{
	return raw_qp(1, 2, 6);
}

/* The kernel sizes a user SQ from the driver's log sizes alone. */
static int raw_qp_send_wr_past_max(void)
{
	return raw_qp(dev.max_qp_wr + 1, 2, 6);
}

static int raw_qp_stride_below_64(void)
{
	return raw_qp(1, 2, 5);
}

static int raw_qp_stride_past_desc(void)
{
	/* roundup_pow_of_two(max_sq_desc_sz 1008) is 1024 */
	return raw_qp(1, 2, 11);
}

static int raw_qp_count_past_max(void)
{
	/* max_wqes: 16384 */
	return raw_qp(1, 15, 6);
}

/*
 * mlx4_ib does not know a user QP's send queue as the provider sized it:
 * QUERY_QP answers 0 for the send capabilities and the receive queue's
 * real size.  0 if so, ERANGE if not.
 */
static int raw_query_qp_caps(void)
{
	struct ibv_qp_init_attr init = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 8, .max_recv_wr = 5,
			 .max_send_sge = 2, .max_recv_sge = 3,
			 .max_inline_data = 32 },
	};
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_query_qp cmd;
	} query = {};
	struct ib_uverbs_query_qp_resp resp = {};
	struct ibv_qp *qp = ibv_create_qp(pd, &init);
	int ret = 0;

	if (!qp)
		return -1;
	query.hdr.command = IB_USER_VERBS_CMD_QUERY_QP;
	query.hdr.in_words = sizeof(query) / 4;
	query.hdr.out_words = sizeof(resp) / 4;
	query.cmd.response = (uintptr_t)&resp;
	query.cmd.qp_handle = qp->handle;
	query.cmd.attr_mask = IBV_QP_CAP;
	if (write(ctx->cmd_fd, &query, sizeof(query)) != sizeof(query))
		ret = errno;
	else if (resp.max_send_wr || resp.max_send_sge ||
		 resp.max_inline_data || resp.max_recv_wr != 8 ||
		 resp.max_recv_sge != 4)
		ret = ERANGE;
	if (ibv_destroy_qp(qp))
		return -1;
	return ret;
}

/* ------------------------------------------------------------------ */
/* GIDs: the verbs ioctl's QUERY_GID_TABLE and QUERY_GID_ENTRY         */
/* ------------------------------------------------------------------ */

/* A file of a port's GID entry in sysfs (its first line); "" if none. */
static void gid_file(uint8_t port, const char *dir, int index, char *buf,
		     size_t len)
{
	const char *root = getenv("SYSFS_PATH");
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/class/infiniband/%s/ports/%u/%s/%d",
		 root ? root : "/sys", ibv_get_device_name(ctx->device),
		 port, dir, index);
	buf[0] = 0;
	f = fopen(path, "r");
	if (f && !fgets(buf, len, f))
		buf[0] = 0;
	if (f)
		fclose(f);
	buf[strcspn(buf, "\n")] = 0;
}

/*
 * The entry sysfs shows for GID @index of @port, where the kernel writes
 * the same GID cache the ioctl reads; false for an empty entry.
 */
static bool sysfs_gid(uint8_t port, int index, struct ibv_gid_entry *e)
{
	static const uint8_t zero[16];
	char text[64];
	unsigned int w[8];

	memset(e, 0, sizeof(*e));
	gid_file(port, "gids", index, text, sizeof(text));
	if (sscanf(text, "%x:%x:%x:%x:%x:%x:%x:%x", &w[0], &w[1], &w[2],
		   &w[3], &w[4], &w[5], &w[6], &w[7]) != 8)
		return false;
	for (int i = 0; i < 8; i++) {
		e->gid.raw[2 * i] = w[i] >> 8;
		e->gid.raw[2 * i + 1] = w[i];
	}
	if (!memcmp(e->gid.raw, zero, sizeof(zero)))
		return false;
	e->gid_index = index;
	e->port_num = port;
	gid_file(port, "gid_attrs/types", index, text, sizeof(text));
	e->gid_type = !strcmp(text, "RoCE v2") ? IBV_GID_TYPE_ROCE_V2 :
		      *text ? IBV_GID_TYPE_ROCE_V1 : IBV_GID_TYPE_IB;
	gid_file(port, "gid_attrs/ndevs", index, text, sizeof(text));
	e->ndev_ifindex = *text ? if_nametoindex(text) : 0;
	return true;
}

static bool same_entry(const struct ibv_gid_entry *a,
		       const struct ibv_gid_entry *b)
{
	return !memcmp(a->gid.raw, b->gid.raw, 16) &&
	       a->gid_index == b->gid_index && a->port_num == b->port_num &&
	       a->gid_type == b->gid_type &&
	       a->ndev_ifindex == b->ndev_ifindex;
}

#define GIDS_MAX	256	/* two ports of 128 */

/* Every port's entries, in order, as sysfs shows them. */
static int sysfs_gid_table(struct ibv_gid_entry *e)
{
	struct ibv_port_attr attr;
	int n = 0;

	for (uint8_t p = 1; p <= dev.phys_port_cnt; p++) {
		if (ibv_query_port(ctx, p, &attr))
			return -1;
		for (int i = 0; i < attr.gid_tbl_len && n < GIDS_MAX; i++)
			n += sysfs_gid(p, i, &e[n]);
	}
	return n;
}

/* ERANGE when the table differs from sysfs, the errno when refused. */
static int gid_table_whole(void)
{
	struct ibv_gid_entry want[GIDS_MAX], got[GIDS_MAX];
	int n = sysfs_gid_table(want);
	ssize_t ret = ibv_query_gid_table(ctx, got, GIDS_MAX, 0);

	if (ret < 0)
		return -ret;
	if (n < 1 || ret != n)
		return ERANGE;
	for (int i = 0; i < n; i++)
		if (!same_entry(&want[i], &got[i]) ||
		    (ethernet && want[i].port_num == 1 && !got[i].ndev_ifindex))
			return ERANGE;
	return 0;
}

static int gid_table_short(void)
{
	struct ibv_gid_entry want[GIDS_MAX], got[GIDS_MAX];
	int n = sysfs_gid_table(want);
	ssize_t ret = ibv_query_gid_table(ctx, got, n - 1, 0);

	return n < 1 ? -1 : ret < 0 ? -ret : 0;
}

static int gid_entry_first(void)
{
	struct ibv_gid_entry want, got;
	int ret;

	if (!sysfs_gid(1, 0, &want))
		return -1;
	ret = ibv_query_gid_ex(ctx, 1, 0, &got, 0);
	return ret ? ret : same_entry(&want, &got) ? 0 : ERANGE;
}

/* The first index of port 1 that sysfs shows empty. */
static int gid_entry_empty(void)
{
	struct ibv_gid_entry e;
	int i = 0;

	while (i < GIDS_MAX && sysfs_gid(1, i, &e))
		i++;
	return ibv_query_gid_ex(ctx, 1, i, &e, 0);
}

static int gid_entry_past_table(void)
{
	struct ibv_port_attr attr;
	struct ibv_gid_entry e;

	if (ibv_query_port(ctx, 1, &attr))
		return -1;
	return ibv_query_gid_ex(ctx, 1, attr.gid_tbl_len, &e, 0);
}

static int gid_entry_flags(void)
{
	struct ibv_gid_entry e;

	return ibv_query_gid_ex(ctx, 1, 0, &e, 1);
}

#define NOT_APPLICABLE	(-2)
#define SUCCEEDS	(-3)	/* expect_on_roce: success there */

/* ------------------------------------------------------------------ */
/* The audit's rows: each command's checks (tests/verbs/kernel-rules.txt) */
/* ------------------------------------------------------------------ */

/*
 * A write command as libibverbs sends it, @req (whose first word is the
 * response's address, where it has one) of @len bytes: legacy, or
 * extended (IB_USER_VERBS_EX_CMD_*, @ex) with its second header and
 * @resp_len bytes of response at @resp.  0, or the errno of write().
 */
static int cmd_write(uint32_t command, bool ex, void *req, size_t len,
		     void *resp, size_t resp_len)
{
	uint8_t buf[512];
	struct ib_uverbs_cmd_hdr *hdr = (void *)buf;
	size_t head = sizeof(*hdr);

	memset(buf, 0, sizeof(buf));
	if (ex) {
		struct ib_uverbs_ex_cmd_hdr *exh = (void *)(hdr + 1);

		head += sizeof(*exh);
		hdr->command = IB_USER_VERBS_CMD_FLAG_EXTENDED | command;
		hdr->in_words = len / 8;
		hdr->out_words = resp_len / 8;
		exh->response = (uintptr_t)resp;
	} else {
		hdr->command = command;
		hdr->in_words = (head + len) / 4;
		hdr->out_words = resp_len / 4;
	}
	if (head + len > sizeof(buf))
		return -1;
	memcpy(buf + head, req, len);
	if (write(ctx->cmd_fd, buf, head + len) != (ssize_t)(head + len))
		return errno;
	return 0;
}

/* A handle no object has: uverbs' table holds nothing there. */
#define NO_HANDLE	0x7ffffff0u

/* Each destroy command on a handle naming nothing, and on a PD's. */
#define DESTROY_ROWS(cmdname, type, field, ex, has_resp)		\
static int cmdname##_handle(uint32_t handle)				\
{									\
	type req = { .field = handle };					\
	uint64_t resp[4];						\
	uint64_t r = (uintptr_t)resp;					\
									\
	/* The legacy ones with a response name it first. */		\
	if (has_resp && !ex)						\
		memcpy(&req, &r, sizeof(r));				\
	return cmd_write(cmdname##_CMD, ex, &req, sizeof(req),		\
			 has_resp ? resp : NULL,			\
			 has_resp ? sizeof(resp) : 0);			\
}									\
static int cmdname##_nothing(void) { return cmdname##_handle(NO_HANDLE); } \
static __attribute__((unused)) int cmdname##_pd(void)			\
{									\
	return cmdname##_handle(pd->handle);				\
}

#define dealloc_pd_CMD		IB_USER_VERBS_CMD_DEALLOC_PD
#define destroy_ah_CMD		IB_USER_VERBS_CMD_DESTROY_AH
#define dereg_mr_CMD		IB_USER_VERBS_CMD_DEREG_MR
#define dealloc_mw_CMD		IB_USER_VERBS_CMD_DEALLOC_MW
#define destroy_cq_CMD		IB_USER_VERBS_CMD_DESTROY_CQ
#define destroy_qp_CMD		IB_USER_VERBS_CMD_DESTROY_QP
#define destroy_srq_CMD		IB_USER_VERBS_CMD_DESTROY_SRQ
#define close_xrcd_CMD		IB_USER_VERBS_CMD_CLOSE_XRCD
#define destroy_flow_CMD	IB_USER_VERBS_EX_CMD_DESTROY_FLOW
#define destroy_wq_CMD		IB_USER_VERBS_EX_CMD_DESTROY_WQ
#define destroy_tbl_CMD		IB_USER_VERBS_EX_CMD_DESTROY_RWQ_IND_TBL

DESTROY_ROWS(dealloc_pd, struct ib_uverbs_dealloc_pd, pd_handle, false, false)
DESTROY_ROWS(destroy_ah, struct ib_uverbs_destroy_ah, ah_handle, false, false)
DESTROY_ROWS(dereg_mr, struct ib_uverbs_dereg_mr, mr_handle, false, false)
DESTROY_ROWS(dealloc_mw, struct ib_uverbs_dealloc_mw, mw_handle, false, false)
DESTROY_ROWS(destroy_cq, struct ib_uverbs_destroy_cq, cq_handle, false, true)
DESTROY_ROWS(destroy_qp, struct ib_uverbs_destroy_qp, qp_handle, false, true)
DESTROY_ROWS(destroy_srq, struct ib_uverbs_destroy_srq, srq_handle, false, true)
DESTROY_ROWS(close_xrcd, struct ib_uverbs_close_xrcd, xrcd_handle, false, false)
DESTROY_ROWS(destroy_flow, struct ib_uverbs_destroy_flow, flow_handle, true, false)
DESTROY_ROWS(destroy_wq, struct ib_uverbs_ex_destroy_wq, wq_handle, true, true)
DESTROY_ROWS(destroy_tbl, struct ib_uverbs_ex_destroy_rwq_ind_table,
	     ind_tbl_handle, true, false)

/* The WQ and table destroy commands with a comp_mask: EOPNOTSUPP. */
static int destroy_wq_comp_mask(void)
{
	struct ib_uverbs_ex_destroy_wq req = { .comp_mask = 1,
					       .wq_handle = NO_HANDLE };
	struct ib_uverbs_ex_destroy_wq_resp resp;

	return cmd_write(destroy_wq_CMD, true, &req, sizeof(req), &resp,
			 sizeof(resp));
}

static int destroy_tbl_comp_mask(void)
{
	struct ib_uverbs_ex_destroy_rwq_ind_table req = {
		.comp_mask = 1, .ind_tbl_handle = NO_HANDLE };

	return cmd_write(destroy_tbl_CMD, true, &req, sizeof(req), NULL, 0);
}

/* A table of 2 whose request stops before its handles. */
static int table_handles_missing(void)
{
	struct ib_uverbs_ex_create_rwq_ind_table req = {
		.log_ind_tbl_size = 1 };
	struct ib_uverbs_ex_create_rwq_ind_table_resp resp;

	return cmd_write(IB_USER_VERBS_EX_CMD_CREATE_RWQ_IND_TBL, true, &req,
			 sizeof(req), &resp, sizeof(resp));
}

/* A second GET_CONTEXT on the file that has one. */
static int get_context_again(void)
{
	struct ib_uverbs_get_context_resp resp;
	struct ib_uverbs_get_context req = { .response = (uintptr_t)&resp };

	return cmd_write(IB_USER_VERBS_CMD_GET_CONTEXT, false, &req,
			 sizeof(req), &resp, sizeof(resp));
}

/* A command on a file with no context yet: the device opened anew. */
static int command_before_context(void)
{
	struct ib_uverbs_query_device_resp resp;
	struct ib_uverbs_query_device req = { .response = (uintptr_t)&resp };
	char path[128];
	int fd, saved = ctx->cmd_fd, ret;

	snprintf(path, sizeof(path), "/dev/infiniband/%s",
		 ctx->device->dev_name);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ctx->cmd_fd = fd;
	ret = cmd_write(IB_USER_VERBS_CMD_QUERY_DEVICE, false, &req,
			sizeof(req), &resp, sizeof(resp));
	ctx->cmd_fd = saved;
	close(fd);
	return ret;
}

static int query_port(uint8_t port)
{
	struct ibv_port_attr attr;

	return ibv_query_port(ctx, port, &attr);
}

static int query_port_zero(void) { return query_port(0); }
static int query_port_past_last(void)
{
	return query_port(dev.phys_port_cnt + 1);
}

static int ex_query_device_comp_mask(void)
{
	struct ib_uverbs_ex_query_device req = { .comp_mask = 1 };
	struct ib_uverbs_ex_query_device_resp resp;

	return cmd_write(IB_USER_VERBS_EX_CMD_QUERY_DEVICE, true, &req,
			 sizeof(req), &resp, sizeof(resp));
}

/* REREG_MR of @mr_handle with @flags, to @start and @iova. */
static int rereg(uint32_t mr_handle, uint32_t flags, void *start,
		 uint64_t iova)
{
	struct ib_uverbs_rereg_mr_resp resp;
	struct ib_uverbs_rereg_mr req = {
		.response = (uintptr_t)&resp, .mr_handle = mr_handle,
		.flags = flags, .start = (uintptr_t)start, .length = 4096,
		.hca_va = iova, .pd_handle = pd->handle,
		.access_flags = IBV_ACCESS_LOCAL_WRITE,
	};

	return cmd_write(IB_USER_VERBS_CMD_REREG_MR, false, &req, sizeof(req),
			 &resp, sizeof(resp));
}

static void *page;		/* one registered page for the MR rows */
static struct ibv_mr *page_mr;

static int rereg_no_flags(void) { return rereg(page_mr->handle, 0, page, 0); }
static int rereg_unknown_flag(void)
{
	return rereg(page_mr->handle, 8, page, 0);
}
static int rereg_offset_differs(void)
{
	return rereg(page_mr->handle, IBV_REREG_MR_CHANGE_TRANSLATION, page,
		     (uintptr_t)page + 8);
}
static int rereg_nothing(void)
{
	return rereg(NO_HANDLE, IBV_REREG_MR_CHANGE_ACCESS, page, 0);
}
static int rereg_access(void)
{
	return rereg(page_mr->handle, IBV_REREG_MR_CHANGE_ACCESS, page, 0);
}

static int reg_access(unsigned int access)
{
	errno = 0;
	return made(ibv_reg_mr(pd, page, 4096, access),
		    (int (*)(void *))ibv_dereg_mr);
}

static int reg_on_demand(void)
{
	return reg_access(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND);
}
static int reg_remote_write_alone(void)
{
	return reg_access(IBV_ACCESS_REMOTE_WRITE);
}
static int reg_unknown_flag(void)
{
	return reg_access(IBV_ACCESS_LOCAL_WRITE | (1u << 15));
}

static int alloc_mw_type(uint8_t type)
{
	struct ib_uverbs_alloc_mw_resp resp;
	struct ib_uverbs_alloc_mw req = {
		.response = (uintptr_t)&resp, .pd_handle = pd->handle,
		.mw_type = type,
	};
	struct ib_uverbs_dealloc_mw d;
	int ret = cmd_write(IB_USER_VERBS_CMD_ALLOC_MW, false, &req,
			    sizeof(req), &resp, sizeof(resp));

	if (ret)
		return ret;
	d.mw_handle = resp.mw_handle;
	return cmd_write(IB_USER_VERBS_CMD_DEALLOC_MW, false, &d, sizeof(d),
			 NULL, 0) ? -1 : 0;
}

static int alloc_mw_type_3(void) { return alloc_mw_type(3); }
static int alloc_mw_bad_pd(void)
{
	struct ib_uverbs_alloc_mw_resp resp;
	struct ib_uverbs_alloc_mw req = {
		.response = (uintptr_t)&resp, .pd_handle = cq->handle,
		.mw_type = 1,
	};

	return cmd_write(IB_USER_VERBS_CMD_ALLOC_MW, false, &req, sizeof(req),
			 &resp, sizeof(resp));
}

static int create_ah_port(uint8_t port)
{
	struct ib_uverbs_create_ah_resp resp;
	struct ib_uverbs_create_ah req = {
		.response = (uintptr_t)&resp, .pd_handle = pd->handle,
		.attr = { .dlid = lid, .port_num = port },
	};

	return cmd_write(IB_USER_VERBS_CMD_CREATE_AH, false, &req, sizeof(req),
			 &resp, sizeof(resp));
}

static int create_ah_port_zero(void) { return create_ah_port(0); }

/* CREATE_CQ naming @fd as its channel (refused before the driver data). */
static int cq_channel_fd(int fd)
{
	struct ib_uverbs_create_cq_resp resp;
	struct ib_uverbs_create_cq req = {
		.response = (uintptr_t)&resp, .cqe = 1, .comp_channel = fd,
	};

	return cmd_write(IB_USER_VERBS_CMD_CREATE_CQ, false, &req, sizeof(req),
			 &resp, sizeof(resp));
}

static int cq_channel_async(void) { return cq_channel_fd(ctx->async_fd); }
static int cq_channel_closed(void)
{
	int fd = dup(0);

	if (fd < 0)
		return -1;
	close(fd);
	return cq_channel_fd(fd);
}

static int ex_create_cq(uint32_t comp_mask, uint32_t flags)
{
	struct ib_uverbs_ex_create_cq_resp resp;
	struct ib_uverbs_ex_create_cq req = {
		.cqe = 1, .comp_channel = -1, .comp_mask = comp_mask,
		.flags = flags,
	};

	return cmd_write(IB_USER_VERBS_EX_CMD_CREATE_CQ, true, &req,
			 sizeof(req), &resp, sizeof(resp));
}

static int ex_create_cq_comp_mask(void) { return ex_create_cq(1, 0); }
static int ex_create_cq_flag(void) { return ex_create_cq(0, 2); }

static int modify_cq(uint32_t mask)
{
	struct ib_uverbs_ex_modify_cq req = {
		.cq_handle = cq->handle, .attr_mask = mask,
		.attr = { .cq_count = 1, .cq_period = 1 },
	};

	return cmd_write(IB_USER_VERBS_EX_CMD_MODIFY_CQ, true, &req,
			 sizeof(req), NULL, 0);
}

static int modify_cq_nothing(void) { return modify_cq(0); }
static int modify_cq_past_moderate(void) { return modify_cq(2); }
static int modify_cq_moderate(void) { return modify_cq(1); }

static int notify_cq_pd(void)
{
	struct ib_uverbs_req_notify_cq req = { .cq_handle = pd->handle };

	return cmd_write(IB_USER_VERBS_CMD_REQ_NOTIFY_CQ, false, &req,
			 sizeof(req), NULL, 0);
}

/* CREATE_QP (legacy) of @type on our PD and CQ, no driver data. */
static int create_qp_type(uint8_t type)
{
	struct ib_uverbs_create_qp_resp resp;
	struct ib_uverbs_create_qp req = {
		.response = (uintptr_t)&resp, .pd_handle = pd->handle,
		.send_cq_handle = cq->handle, .recv_cq_handle = cq->handle,
		.max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1,
		.max_recv_sge = 1, .qp_type = type,
	};

	return cmd_write(IB_USER_VERBS_CMD_CREATE_QP, false, &req, sizeof(req),
			 &resp, sizeof(resp));
}

static int create_qp_unknown_type(void) { return create_qp_type(99); }

static int ex_create_qp(uint32_t comp_mask, uint32_t create_flags)
{
	struct ib_uverbs_ex_create_qp_resp resp;
	struct ib_uverbs_ex_create_qp req = {
		.pd_handle = pd->handle, .send_cq_handle = cq->handle,
		.recv_cq_handle = cq->handle, .max_send_wr = 1,
		.max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1,
		.qp_type = IBV_QPT_RC, .comp_mask = comp_mask,
		.create_flags = create_flags,
	};

	return cmd_write(IB_USER_VERBS_EX_CMD_CREATE_QP, true, &req,
			 sizeof(req), &resp, sizeof(resp));
}

static int ex_create_qp_comp_mask(void) { return ex_create_qp(4, 0); }
static int ex_create_qp_flag(void) { return ex_create_qp(0, 1u << 30); }

/* An RC QP brought to INIT on port 1, or NULL. */
static struct ibv_qp *rc_in_init(void)
{
	struct ibv_qp_init_attr init = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_INIT, .port_num = 1 };
	struct ibv_qp *qp = ibv_create_qp(pd, &init);

	if (qp && ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) {
		ibv_destroy_qp(qp);
		return NULL;
	}
	return qp;
}

/* INIT to RTR with the path's port @port (the QP is on port 1). */
static int rtr_path_port(uint8_t port)
{
	struct ibv_qp *qp = rc_in_init();
	struct ibv_qp_attr attr = {
		.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024,
		.max_dest_rd_atomic = 1, .min_rnr_timer = 1,
		.ah_attr = own_path(),
	};
	int ret;

	if (!qp)
		return -1;
	attr.dest_qp_num = qp->qp_num;
	attr.ah_attr.port_num = port;
	ret = ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_AV |
			    IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			    IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
			    IBV_QP_MIN_RNR_TIMER);
	if (ibv_destroy_qp(qp))
		return -1;
	return ret;
}

static int rtr_path_port_zero(void) { return rtr_path_port(0); }
static int rtr_path_port_other(void)
{
	return rtr_path_port(dev.phys_port_cnt > 1 ? 2 : 0);
}
static int rtr_path_port_own(void) { return rtr_path_port(1); }

/* MODIFY_QP of a fresh RC QP, RESET to INIT with @extra in the mask. */
static int raw_modify(bool ex, uint32_t extra, uint32_t reserved)
{
	struct ibv_qp_init_attr init = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp *qp = ibv_create_qp(pd, &init);
	struct ib_uverbs_ex_modify_qp_resp resp;
	struct ib_uverbs_ex_modify_qp req = {
		.base = {
			.qp_handle = qp ? qp->handle : 0,
			.attr_mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				     IBV_QP_PORT | IBV_QP_ACCESS_FLAGS | extra,
			.qp_state = IBV_QPS_INIT, .port_num = 1,
		},
		.reserved = reserved,
	};
	int ret;

	if (!qp)
		return -1;
	ret = ex ? cmd_write(IB_USER_VERBS_EX_CMD_MODIFY_QP, true, &req,
			     sizeof(req), &resp, sizeof(resp)) :
		   cmd_write(IB_USER_VERBS_CMD_MODIFY_QP, false, &req.base,
			     sizeof(req.base), NULL, 0);
	if (ibv_destroy_qp(qp))
		return -1;
	return ret;
}

static int modify_qp_past_standard(void)
{
	return raw_modify(false, 1u << 21, 0);
}
static int modify_qp_legacy_rate_limit(void)
{
	return raw_modify(false, IBV_QP_RATE_LIMIT, 0);
}
static int ex_modify_qp_rate_limit(void)
{
	return raw_modify(true, IBV_QP_RATE_LIMIT, 0);
}
static int ex_modify_qp_reserved(void) { return raw_modify(true, 0, 7); }
static int modify_qp_state_past_err(void)
{
	struct ibv_qp *qp = rc_in_init();
	struct ib_uverbs_modify_qp req = {
		.qp_handle = qp ? qp->handle : 0,
		.attr_mask = IBV_QP_STATE, .qp_state = IBV_QPS_ERR + 1,
	};
	int ret;

	if (!qp)
		return -1;
	ret = cmd_write(IB_USER_VERBS_CMD_MODIFY_QP, false, &req, sizeof(req),
			NULL, 0);
	if (ibv_destroy_qp(qp))
		return -1;
	return ret;
}

/* A UD QP (in RESET) attaching to a multicast GID with LID @mlid. */
static int attach_lid(uint16_t mlid, bool multicast_gid)
{
	struct ibv_qp_init_attr init = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	union ibv_gid gid = { .raw = { 0xff, 0x12, 0x40, 0x1b, [15] = 7 } };
	struct ibv_qp *qp = ibv_create_qp(pd, &init);
	int ret;

	if (!qp)
		return -1;
	if (!multicast_gid)
		gid.raw[0] = 0xfe;
	ret = ibv_attach_mcast(qp, &gid, mlid);
	if (!ret && ibv_detach_mcast(qp, &gid, mlid))
		ret = -1;
	if (ibv_destroy_qp(qp))
		return -1;
	return ret;
}

static int attach_unicast_lid(void) { return attach_lid(0x1234, true); }
static int attach_permissive_lid(void) { return attach_lid(0xffff, true); }
static int attach_multicast_lid(void) { return attach_lid(0xc001, true); }
static int attach_unicast_gid(void) { return attach_lid(0xc001, false); }
static int attach_rc(void)
{
	union ibv_gid gid = { .raw = { 0xff, 0x12, [15] = 9 } };
	struct ibv_qp *qp = rc_in_init();
	int ret;

	if (!qp)
		return -1;
	ret = ibv_attach_mcast(qp, &gid, 0xc002);
	if (ibv_destroy_qp(qp))
		return -1;
	return ret;
}

static int detach_unattached(void)
{
	struct ibv_qp_init_attr init = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	union ibv_gid gid = { .raw = { 0xff, 0x12, [15] = 8 } };
	struct ibv_qp *qp = ibv_create_qp(pd, &init);
	int ret;

	if (!qp)
		return -1;
	ret = ibv_detach_mcast(qp, &gid, 0xc003);
	if (ibv_destroy_qp(qp))
		return -1;
	return ret;
}

static int query_qp_pd(void)
{
	struct ib_uverbs_query_qp_resp resp;
	struct ib_uverbs_query_qp req = {
		.response = (uintptr_t)&resp, .qp_handle = pd->handle,
	};

	return cmd_write(IB_USER_VERBS_CMD_QUERY_QP, false, &req, sizeof(req),
			 &resp, sizeof(resp));
}

/* OPEN_XRCD on @fd (-1: none) with @oflags; the domain closed again. */
static int open_xrcd_fd(int fd, int oflags)
{
	struct ibv_xrcd_init_attr attr = {
		.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
		.fd = fd, .oflags = oflags,
	};

	errno = 0;
	return made(ibv_open_xrcd(ctx, &attr),
		    (int (*)(void *))ibv_close_xrcd);
}

static int xrcd_file(void)
{
	char path[] = "/tmp/kernel-rules-xrcd-XXXXXX";
	int fd = mkstemp(path);

	if (fd >= 0)
		unlink(path);
	return fd;
}

static int open_xrcd_closed_fd(void)
{
	int fd = dup(0);

	if (fd < 0)
		return -1;
	close(fd);
	return open_xrcd_fd(fd, O_CREAT);
}

static int open_xrcd_new_without_creat(void)
{
	int fd = xrcd_file(), ret;

	if (fd < 0)
		return -1;
	ret = open_xrcd_fd(fd, 0);
	close(fd);
	return ret;
}

static int open_xrcd_existing_excl(void)
{
	struct ibv_xrcd_init_attr attr = {
		.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
		.oflags = O_CREAT,
	};
	struct ibv_xrcd *first;
	int fd = xrcd_file(), ret;

	if (fd < 0)
		return -1;
	attr.fd = fd;
	first = ibv_open_xrcd(ctx, &attr);
	ret = first ? open_xrcd_fd(fd, O_CREAT | O_EXCL) : -1;
	if (first && ibv_close_xrcd(first))
		ret = -1;
	close(fd);
	return ret;
}

static int open_qp_unknown(void)
{
	struct ibv_xrcd *xrcd = open_xrcd();
	struct ibv_qp_open_attr attr = {
		.comp_mask = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD |
			     IBV_QP_OPEN_ATTR_TYPE,
		.qp_num = 0xfffffe, .xrcd = xrcd, .qp_type = IBV_QPT_XRC_RECV,
	};
	int ret;

	if (!xrcd)
		return -1;
	errno = 0;
	ret = made(ibv_open_qp(ctx, &attr), destroy_qp);
	if (ibv_close_xrcd(xrcd))
		return -1;
	return ret;
}

static struct ibv_srq *basic_srq(void)
{
	struct ibv_srq_init_attr attr = { .attr = { .max_wr = 8,
						    .max_sge = 1 } };

	return ibv_create_srq(pd, &attr);
}

static int srq_modify(enum ibv_srq_attr_mask mask, uint32_t max_wr,
		      uint32_t limit)
{
	struct ibv_srq *srq = basic_srq();
	struct ibv_srq_attr attr = { .max_wr = max_wr, .srq_limit = limit };
	int ret;

	if (!srq)
		return -1;
	ret = ibv_modify_srq(srq, &attr, mask);
	if (ibv_destroy_srq(srq))
		return -1;
	return ret;
}

static int srq_resize(void) { return srq_modify(IBV_SRQ_MAX_WR, 64, 0); }
static int srq_limit_past_size(void)
{
	return srq_modify(IBV_SRQ_LIMIT, 0, 1000);
}
static int srq_limit_within(void) { return srq_modify(IBV_SRQ_LIMIT, 0, 2); }
static int srq_modify_nothing(void) { return srq_modify(0, 0, 1000); }
static int srq_modify_unknown_bit(void)
{
	return srq_modify(1u << 2, 0, 1000);
}

static int srq_busy(void)
{
	struct ibv_srq *srq = basic_srq();
	struct ibv_qp_init_attr init = {
		.send_cq = cq, .recv_cq = cq, .srq = srq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 1, .max_send_sge = 1 },
	};
	struct ibv_qp *qp = srq ? ibv_create_qp(pd, &init) : NULL;
	int ret;

	if (!qp)
		return -1;
	ret = ibv_destroy_srq(srq);
	if (ibv_destroy_qp(qp) || ibv_destroy_srq(srq))
		return -1;
	return ret;
}

static int srq_query_pd(void)
{
	struct ib_uverbs_query_srq_resp resp;
	struct ib_uverbs_query_srq req = {
		.response = (uintptr_t)&resp, .srq_handle = pd->handle,
	};

	return cmd_write(IB_USER_VERBS_CMD_QUERY_SRQ, false, &req, sizeof(req),
			 &resp, sizeof(resp));
}

static int modify_wq_nothing(void)
{
	struct ib_uverbs_ex_modify_wq req = { .attr_mask = 0,
					      .wq_handle = NO_HANDLE };

	return cmd_write(IB_USER_VERBS_EX_CMD_MODIFY_WQ, true, &req,
			 sizeof(req), NULL, 0);
}

static int create_wq_comp_mask(void)
{
	struct ib_uverbs_ex_create_wq_resp resp;
	struct ib_uverbs_ex_create_wq req = {
		.comp_mask = 1, .pd_handle = pd->handle, .cq_handle = cq->handle,
		.max_wr = 1, .max_sge = 1,
	};

	return cmd_write(IB_USER_VERBS_EX_CMD_CREATE_WQ, true, &req,
			 sizeof(req), &resp, sizeof(resp));
}

/* write() of @len bytes of @buf, as it is: 0 or the errno. */
static int raw_write(const void *buf, size_t len)
{
	return write(ctx->cmd_fd, buf, len) == (ssize_t)len ? 0 : errno;
}

/* A legacy header of @command with @in_words and @out_words, nothing else
 * but @extra zero bytes. */
static int legacy_hdr(uint32_t command, uint16_t in_words, uint16_t out_words,
		      size_t extra)
{
	uint8_t buf[64] = {};
	struct ib_uverbs_cmd_hdr *hdr = (void *)buf;

	hdr->command = command;
	hdr->in_words = in_words;
	hdr->out_words = out_words;
	return raw_write(buf, sizeof(*hdr) + extra);
}

static int write_shorter_than_header(void)
{
	return raw_write("\0\0\0\0", 4);
}
static int write_in_words_differ(void)
{
	return legacy_hdr(IB_USER_VERBS_CMD_ALLOC_PD, 6, 2, 8);
}
static int write_command_flag(void)
{
	return legacy_hdr(IB_USER_VERBS_CMD_ALLOC_PD | 1u << 8, 4, 2, 8);
}
static int write_command_past_table(void)
{
	return legacy_hdr(200, 2, 0, 0);
}
static int write_request_short(void)
{
	/* ALLOC_PD's request is its response pointer: 8 bytes, none sent. */
	return legacy_hdr(IB_USER_VERBS_CMD_ALLOC_PD, 2, 2, 0);
}
static int write_response_short(void)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_query_device cmd;
	} w = { { IB_USER_VERBS_CMD_QUERY_DEVICE, sizeof(w) / 4, 1 }, {} };
	struct ib_uverbs_query_device_resp resp;

	w.cmd.response = (uintptr_t)&resp;
	return raw_write(&w, sizeof(w));
}

/* EX_QUERY_DEVICE with its second header as given. */
static int ex_hdr_shaped(uint64_t response, uint16_t out_words,
			 uint32_t reserved)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_ex_cmd_hdr ex;
		struct ib_uverbs_ex_query_device cmd;
	} w = {};

	w.hdr.command = IB_USER_VERBS_CMD_FLAG_EXTENDED |
			IB_USER_VERBS_EX_CMD_QUERY_DEVICE;
	w.hdr.in_words = sizeof(w.cmd) / 8;
	w.hdr.out_words = out_words;
	w.ex.response = response;
	w.ex.cmd_hdr_reserved = reserved;
	return raw_write(&w, sizeof(w));
}

static struct ib_uverbs_ex_query_device_resp ex_resp;

static int ex_hdr_reserved(void)
{
	return ex_hdr_shaped((uintptr_t)&ex_resp, sizeof(ex_resp) / 8, 1);
}
static int ex_response_without_room(void)
{
	return ex_hdr_shaped((uintptr_t)&ex_resp, 0, 0);
}
static int ex_room_without_response(void)
{
	return ex_hdr_shaped(0, sizeof(ex_resp) / 8, 0);
}
static int ex_response_short(void)
{
	return ex_hdr_shaped((uintptr_t)&ex_resp, 1, 0);
}
static int write_unserved_modify_ah(void)
{
	return legacy_hdr(IB_USER_VERBS_CMD_MODIFY_AH, 2, 0, 0);
}

/*
 * An extended command with driver data: @req of @len bytes, @drv of
 * @drv_len (a multiple of 8), @resp_len bytes of core response at @resp
 * and @drv_out_len of the driver's after it.  0 or the errno.
 */
static int cmd_write_drv(uint32_t command, const void *req, size_t len,
			 const void *drv, size_t drv_len, void *resp,
			 size_t resp_len, size_t drv_out_len)
{
	uint8_t buf[512] = {};
	struct ib_uverbs_cmd_hdr *hdr = (void *)buf;
	struct ib_uverbs_ex_cmd_hdr *exh = (void *)(hdr + 1);
	size_t head = sizeof(*hdr) + sizeof(*exh);

	hdr->command = IB_USER_VERBS_CMD_FLAG_EXTENDED | command;
	hdr->in_words = len / 8;
	hdr->out_words = resp_len / 8;
	exh->provider_in_words = drv_len / 8;
	exh->provider_out_words = drv_out_len / 8;
	exh->response = (uintptr_t)resp;
	memcpy(buf + head, req, len);
	memcpy(buf + head + len, drv, drv_len);
	return raw_write(buf, head + len + drv_len);
}

/* EX_CREATE_WQ of one entry, its driver data @drv of @drv_len bytes. */
static int create_wq_drv(const void *drv, size_t drv_len, size_t drv_out)
{
	struct ib_uverbs_ex_create_wq req = {
		.wq_type = IBV_WQT_RQ, .pd_handle = pd->handle,
		.cq_handle = cq->handle, .max_wr = 1, .max_sge = 1,
	};
	uint64_t resp[8];

	return cmd_write_drv(IB_USER_VERBS_EX_CMD_CREATE_WQ, &req, sizeof(req),
			     drv, drv_len, resp,
			     sizeof(struct ib_uverbs_ex_create_wq_resp),
			     drv_out);
}

/* Both refused before the queue's memory is looked at. */
static int create_wq_driver_response(void)
{
	struct mlx4_ib_create_wq drv = {};

	return create_wq_drv(&drv, sizeof(drv), 8);
}

static int create_wq_driver_tail(void)
{
	uint8_t drv[sizeof(struct mlx4_ib_create_wq) + 8] = {};

	drv[sizeof(drv) - 1] = 1;
	return create_wq_drv(drv, sizeof(drv), 0);
}

/* A table of one WQ with 8 bytes of driver request, @byte the last. */
static int table_driver_data(uint8_t byte)
{
	struct ibv_wq *wq = make_wq(1, 1);
	struct {
		struct ib_uverbs_ex_create_rwq_ind_table cmd;
		uint32_t handle, pad;
	} req = { .cmd = { .log_ind_tbl_size = 0 } };
	uint8_t drv[8] = { [7] = byte };
	struct ib_uverbs_ex_create_rwq_ind_table_resp resp = {};
	struct ib_uverbs_ex_destroy_rwq_ind_table d = {};
	int ret;

	if (!wq)
		return -1;
	req.handle = wq->handle;
	ret = cmd_write_drv(IB_USER_VERBS_EX_CMD_CREATE_RWQ_IND_TBL, &req,
			    sizeof(req), drv, sizeof(drv), &resp, sizeof(resp),
			    0);
	d.ind_tbl_handle = resp.ind_tbl_handle;
	if (!ret && cmd_write(IB_USER_VERBS_EX_CMD_DESTROY_RWQ_IND_TBL, true,
			      &d, sizeof(d), NULL, 0))
		ret = -1;
	if (ibv_destroy_wq(wq))
		return -1;
	return ret;
}

static int table_driver_nonzero(void) { return table_driver_data(1); }
static int table_driver_zero(void) { return table_driver_data(0); }

/* ---- handles of the wrong kind, and fields the core checks ---- */

static int rereg_pd_not_pd(void)
{
	struct ib_uverbs_rereg_mr_resp resp;
	struct ib_uverbs_rereg_mr req = {
		.response = (uintptr_t)&resp, .mr_handle = page_mr->handle,
		.flags = IBV_REREG_MR_CHANGE_PD, .pd_handle = cq->handle,
	};

	return cmd_write(IB_USER_VERBS_CMD_REREG_MR, false, &req, sizeof(req),
			 &resp, sizeof(resp));
}

static int resize_cq_pd(void)
{
	struct ib_uverbs_resize_cq_resp resp;
	struct ib_uverbs_resize_cq req = {
		.response = (uintptr_t)&resp, .cq_handle = pd->handle,
		.cqe = 16,
	};

	return cmd_write(IB_USER_VERBS_CMD_RESIZE_CQ, false, &req, sizeof(req),
			 &resp, sizeof(resp));
}

static int modify_cq_pd(void)
{
	struct ib_uverbs_ex_modify_cq req = {
		.cq_handle = pd->handle, .attr_mask = 1,
		.attr = { .cq_count = 1, .cq_period = 1 },
	};

	return cmd_write(IB_USER_VERBS_EX_CMD_MODIFY_CQ, true, &req,
			 sizeof(req), NULL, 0);
}

/* EX_CREATE_QP of @type with @pd_handle, @recv_cq and the SRQ @srq. */
static int ex_create_qp_handles(uint8_t type, uint32_t pd_handle,
				uint32_t recv_cq, uint32_t srq,
				uint32_t comp_mask, uint32_t tbl)
{
	struct ib_uverbs_ex_create_qp_resp resp;
	struct ib_uverbs_ex_create_qp req = {
		.pd_handle = pd_handle, .send_cq_handle = cq->handle,
		.recv_cq_handle = recv_cq, .srq_handle = srq,
		.is_srq = srq != 0, .max_send_wr = 1, .max_recv_wr = srq ? 0 : 1,
		.max_send_sge = 1, .max_recv_sge = srq ? 0 : 1,
		.qp_type = type, .comp_mask = comp_mask,
		.rwq_ind_tbl_handle = tbl,
	};

	return cmd_write(IB_USER_VERBS_EX_CMD_CREATE_QP, true, &req,
			 sizeof(req), &resp, sizeof(resp));
}

static int create_qp_pd_not_pd(void)
{
	return ex_create_qp_handles(IBV_QPT_RC, cq->handle, cq->handle, 0, 0, 0);
}
static int create_qp_recv_cq_not_cq(void)
{
	return ex_create_qp_handles(IBV_QPT_RC, pd->handle, pd->handle, 0, 0, 0);
}
static int create_qp_srq_not_srq(void)
{
	return ex_create_qp_handles(IBV_QPT_RC, pd->handle, cq->handle,
				    cq->handle, 0, 0);
}
static int create_qp_xrcd_not_xrcd(void)
{
	return ex_create_qp_handles(IBV_QPT_XRC_RECV, pd->handle, 0, 0, 0, 0);
}
static int create_qp_table_not_table(void)
{
	return ex_create_qp_handles(IBV_QPT_RC, pd->handle, 0, 0,
				    IB_UVERBS_CREATE_QP_MASK_IND_TABLE,
				    pd->handle);
}

static int open_qp_xrcd_not_xrcd(void)
{
	struct ib_uverbs_create_qp_resp resp;
	struct ib_uverbs_open_qp req = {
		.response = (uintptr_t)&resp, .pd_handle = pd->handle,
		.qpn = 0x40, .qp_type = IBV_QPT_XRC_RECV,
	};

	return cmd_write(IB_USER_VERBS_CMD_OPEN_QP, false, &req, sizeof(req),
			 &resp, sizeof(resp));
}

static int create_srq_pd_not_pd(void)
{
	struct ib_uverbs_create_srq_resp resp;
	struct ib_uverbs_create_srq req = {
		.response = (uintptr_t)&resp, .pd_handle = cq->handle,
		.max_wr = 4, .max_sge = 1,
	};

	return cmd_write(IB_USER_VERBS_CMD_CREATE_SRQ, false, &req,
			 sizeof(req), &resp, sizeof(resp));
}

static int create_xsrq_xrcd_not_xrcd(void)
{
	struct ib_uverbs_create_srq_resp resp;
	struct ib_uverbs_create_xsrq req = {
		.response = (uintptr_t)&resp, .srq_type = IBV_SRQT_XRC,
		.pd_handle = pd->handle, .xrcd_handle = pd->handle,
		.cq_handle = cq->handle, .max_wr = 4, .max_sge = 1,
	};

	return cmd_write(IB_USER_VERBS_CMD_CREATE_XSRQ, false, &req,
			 sizeof(req), &resp, sizeof(resp));
}

static int destroy_flow_comp_mask(void)
{
	struct ib_uverbs_destroy_flow req = { .comp_mask = 1,
					      .flow_handle = NO_HANDLE };

	return cmd_write(IB_USER_VERBS_EX_CMD_DESTROY_FLOW, true, &req,
			 sizeof(req), NULL, 0);
}

static int ex_modify_qp_past_rate_limit(void)
{
	return raw_modify(true, 1u << 26, 0);
}

/* An RC QP in INIT given CUR_STATE: allowed only from RTR on. */
static int modify_qp_cur_state_in_init(void)
{
	struct ibv_qp *qp = rc_in_init();
	struct ib_uverbs_modify_qp req = {
		.qp_handle = qp ? qp->handle : 0,
		.attr_mask = IBV_QP_STATE | IBV_QP_CUR_STATE,
		.qp_state = IBV_QPS_INIT, .cur_qp_state = IBV_QPS_INIT,
	};
	int ret;

	if (!qp)
		return -1;
	ret = cmd_write(IB_USER_VERBS_CMD_MODIFY_QP, false, &req, sizeof(req),
			NULL, 0);
	if (ibv_destroy_qp(qp))
		return -1;
	return ret;
}

/* INIT to RTR with @mask's extra attribute set by @set. */
static int rtr_with(void (*set)(struct ibv_qp_attr *), int extra)
{
	struct ibv_qp *qp = rc_in_init();
	struct ibv_qp_attr attr = {
		.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024,
		.max_dest_rd_atomic = 1, .min_rnr_timer = 1,
		.ah_attr = own_path(),
	};
	int ret;

	if (!qp)
		return -1;
	attr.dest_qp_num = qp->qp_num;
	set(&attr);
	ret = ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_AV |
			    IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			    IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
			    IBV_QP_MIN_RNR_TIMER | extra);
	if (ibv_destroy_qp(qp))
		return -1;
	return ret;
}

static void mtu_past_4096(struct ibv_qp_attr *a) { a->path_mtu = 6; }
static void alt_ports_differ(struct ibv_qp_attr *a)
{
	a->alt_ah_attr = own_path();
	a->alt_ah_attr.port_num = dev.phys_port_cnt > 1 ? 2 : 0;
	a->alt_port_num = 1;
	a->alt_timeout = 14;
}
static void dest_rd_atomic_past(struct ibv_qp_attr *a)
{
	a->max_dest_rd_atomic = 255;
}

static int rtr_mtu_past_4096(void) { return rtr_with(mtu_past_4096, 0); }
static int rtr_alt_ports_differ(void)
{
	return rtr_with(alt_ports_differ, IBV_QP_ALT_PATH);
}
static int rtr_dest_rd_atomic_past(void)
{
	return rtr_with(dest_rd_atomic_past, 0);
}

static int table_comp_mask(void)
{
	struct {
		struct ib_uverbs_ex_create_rwq_ind_table cmd;
		uint32_t handle, pad;
	} req = { .cmd = { .comp_mask = 1 }, .handle = NO_HANDLE };
	struct ib_uverbs_ex_create_rwq_ind_table_resp resp;

	return cmd_write(IB_USER_VERBS_EX_CMD_CREATE_RWQ_IND_TBL, true, &req,
			 sizeof(req), &resp, sizeof(resp));
}

static int table_handle_not_wq(void)
{
	struct {
		struct ib_uverbs_ex_create_rwq_ind_table cmd;
		uint32_t handle, pad;
	} req = { .handle = 0 };
	struct ib_uverbs_ex_create_rwq_ind_table_resp resp;

	req.handle = pd->handle;
	return cmd_write(IB_USER_VERBS_EX_CMD_CREATE_RWQ_IND_TBL, true, &req,
			 sizeof(req), &resp, sizeof(resp));
}

static int modify_wq_pd(void)
{
	struct ib_uverbs_ex_modify_wq req = {
		.attr_mask = IBV_WQ_ATTR_STATE, .wq_handle = pd->handle,
		.wq_state = IBV_WQS_RDY,
	};

	return cmd_write(IB_USER_VERBS_EX_CMD_MODIFY_WQ, true, &req,
			 sizeof(req), NULL, 0);
}

/* mlx4_ib reports RSS exactly where it registers the WQ ops. */
static bool have_wqs(void)
{
	return rss_tbl_max != 0;
}

static void skip_without_wqs(const char *what)
{
	printf("ok %d - %s # SKIP no WQs: no Ethernet port\n", ++tap_count,
	       what);
}

/*
 * A rule, the kernel function that makes it, and the errno it returns;
 * for a rule about WQs or indirection tables, also what a device with
 * neither returns, or NOT_APPLICABLE (mlx4_ib_add() gives them a device
 * only when a port runs Ethernet).
 */
struct rule {
	const char *name;	/* the row of kernel-rules.txt that names it */
	const char *what;
	const char *source;
	int expect;
	int (*try)(void);
	int expect_without_wqs;
	int expect_on_roce;	/* when port 1 runs Ethernet, if not 0 */
};

static const struct rule rules[] = {
	{ "cq_vector_past_last", "CQ on the vector past the last", "uverbs create_cq",
	  EINVAL, cq_vector_past_last },
	{ "cq_vector_last", "CQ on the last vector", "uverbs create_cq", 0, cq_vector_last },
	{ "cq_too_many_cqes", "CQ of max_cqe + 1 entries", "mlx4_ib_create_cq",
	  EINVAL, cq_too_many_cqes },
	{ "cq_rounded", "CQ of 100 gets 127", "mlx4_ib_create_cq", 0, cq_rounded },
	{ "qp_port_zero", "QP to port 0", "_mlx4_ib_modify_qp", EINVAL, qp_port_zero },
	{ "qp_port_past_last", "QP to port phys_port_cnt + 1", "_mlx4_ib_modify_qp",
	  EINVAL, qp_port_past_last },
	{ "qp_port_last", "QP to port phys_port_cnt", "_mlx4_ib_modify_qp",
	  0, qp_port_last },
	{ "qp_alt_path", "RC QP to RTR with an alternate path", "_ib_modify_qp",
	  0, qp_alt_path, 0, EINVAL },
	{ "raw_qp_as_providers", "raw QP: SQ of 4 WQEs of 64 bytes", "create_qp_common",
	  0, raw_qp_as_providers_make_it },
	{ "raw_qp_buffer_whole", "raw QP: its 272 bytes before unmapped memory", "create_qp_common",
	  0, raw_qp_buffer_whole },
	{ "raw_qp_buffer_short", "raw QP: 256 of its 272 bytes before unmapped memory",
	  "create_qp_common (ib_umem_get)", EFAULT, raw_qp_buffer_short },
	{ "raw_qp_send_wr_past_max", "raw QP: max_send_wr past max_qp_wr, SQ of 4", "set_user_sq_size",
	  0, raw_qp_send_wr_past_max },
	{ "raw_qp_stride_below_64", "raw QP: send stride of 32 bytes", "set_user_sq_size",
	  EINVAL, raw_qp_stride_below_64 },
	{ "raw_qp_stride_past_desc", "raw QP: send stride of 2048 bytes", "set_user_sq_size",
	  EINVAL, raw_qp_stride_past_desc },
	{ "raw_qp_count_past_max", "raw QP: 32768 send WQEs", "set_user_sq_size",
	  EINVAL, raw_qp_count_past_max },
	{ "raw_query_qp_caps", "raw QUERY_QP: no send capabilities, the RQ as sized",
	  "mlx4_ib_query_qp", 0, raw_query_qp_caps },
	{ "inline_recv_past_max", "receive inline of 513 bytes", "set_rq_size",
	  EINVAL, inline_recv_past_max },
	{ "inline_recv_odd", "receive inline of 100 bytes", "set_rq_size", 0, inline_recv_odd },
	{ "inline_recv_without_rq", "receive inline on a QP with an SRQ", "set_rq_size",
	  EINVAL, inline_recv_without_rq },
	{ "wq_plain", "a WQ (none where no port runs Ethernet)",
	  "mlx4_ib_add, ib_uverbs_write", 0, wq_plain, EINVAL },
	{ "wq_range_past_max", "WQ range of 512", "create_rq", EOPNOTSUPP, wq_range_past_max,
	  NOT_APPLICABLE },
	{ "wq_range_while_open", "WQ range of 2 while one is open", "mlx4_ib_alloc_wqn",
	  EINVAL, wq_range_while_open, NOT_APPLICABLE },
	{ "wq_range_after_destroy", "after a WQ of an open range goes, a range of 2 opens",
	  "mlx4_ib_release_wqn", 0, wq_range_after_destroy, NOT_APPLICABLE },
	{ "wq_range_of_four", "four WQs from a range of 4: consecutive, aligned",
	  "mlx4_ib_alloc_wqn", 0, wq_range_of_four, NOT_APPLICABLE },
	{ "table_of_four", "indirection table over them", "mlx4_ib_create_rwq_ind_table",
	  0, table_of_four, NOT_APPLICABLE },
	{ "table_unaligned", "table of 2 from an odd WQ number", "mlx4_ib_create_rwq_ind_table",
	  EINVAL, table_unaligned, NOT_APPLICABLE },
	{ "table_not_consecutive", "table of 2 over WQs n and n + 2", "mlx4_ib_create_rwq_ind_table",
	  EINVAL, table_not_consecutive, NOT_APPLICABLE },
	{ "table_too_big", "table of 512", "mlx4_ib_create_rwq_ind_table",
	  EINVAL, table_too_big, NOT_APPLICABLE },
	{ "wq_in_table_destroyed", "destroy a WQ a table uses", "uverbs destroy_wq",
	  EBUSY, wq_in_table_destroyed, NOT_APPLICABLE },
	{ "wq_reset_to_err", "WQ from RESET to ERR", "mlx4_ib_modify_wq",
	  EINVAL, wq_reset_to_err, NOT_APPLICABLE },
	{ "wq_err_to_rdy", "WQ from ERR back to RDY", "mlx4_ib_modify_wq",
	  EINVAL, wq_err_to_rdy, NOT_APPLICABLE },
	{ "wq_rdy_err_reset", "WQ to RDY, ERR, RESET", "mlx4_ib_modify_wq", 0, wq_rdy_err_reset,
	  NOT_APPLICABLE },
	{ "gid_table_whole", "GID table: every port's entries, as sysfs shows them",
	  "rdma_query_gid_table", 0, gid_table_whole },
	{ "gid_table_short", "GID table one entry short", "rdma_query_gid_table",
	  EINVAL, gid_table_short },
	{ "gid_entry_first", "GID entry 0 of port 1, as sysfs shows it",
	  "UVERBS_METHOD_QUERY_GID_ENTRY", 0, gid_entry_first },
	{ "gid_entry_empty", "GID entry of an empty index", "rdma_get_gid_attr",
	  ENODATA, gid_entry_empty },
	{ "gid_entry_past_table", "GID entry at gid_tbl_len", "rdma_get_gid_attr",
	  EINVAL, gid_entry_past_table },
	{ "gid_entry_flags", "GID entry with a flag", "uverbs_get_flags32",
	  EINVAL, gid_entry_flags },
	{ "close_xrcd_with_srq", "close an XRC domain an SRQ uses", "uverbs_free_xrcd",
	  EBUSY, close_xrcd_with_srq },
	{ "close_xrcd_with_qp", "close an XRC domain a target QP uses", "uverbs_free_xrcd",
	  EBUSY, close_xrcd_with_qp },
	/* The audit's rows (kernel-rules.txt): raw commands where a
	 * provider would check first, the verbs where both pass it on. */
	/* ib_uverbs_write and verify_hdr: the headers. */
	{ "write_shorter_than_header", "a write shorter than the header",
	  "ib_uverbs_write", EINVAL, write_shorter_than_header },
	{ "write_in_words_differ", "in_words other than the write's length",
	  "verify_hdr", EINVAL, write_in_words_differ },
	{ "write_command_flag", "a command with a bit past the mask",
	  "uapi_get_method", EINVAL, write_command_flag },
	{ "write_command_past_table", "command 200", "uapi_get_method",
	  EOPNOTSUPP, write_command_past_table },
	{ "write_unserved_modify_ah", "MODIFY_AH, which uverbs has not",
	  "ib_uverbs_notsupp", EOPNOTSUPP, write_unserved_modify_ah },
	{ "write_request_short", "ALLOC_PD with no request", "verify_hdr",
	  ENOSPC, write_request_short },
	{ "write_response_short", "QUERY_DEVICE with 4 bytes of response",
	  "verify_hdr", ENOSPC, write_response_short },
	{ "ex_hdr_reserved", "an extended header's reserved word set",
	  "verify_hdr", EINVAL, ex_hdr_reserved },
	{ "ex_response_without_room", "a response with no words for it",
	  "verify_hdr", EINVAL, ex_response_without_room },
	{ "ex_room_without_response", "response words with no response",
	  "verify_hdr", EINVAL, ex_room_without_response },
	{ "ex_response_short", "an extended response short of its minimum",
	  "verify_hdr", ENOSPC, ex_response_short },
	{ "get_context_again", "a second GET_CONTEXT on the file",
	  "ib_init_ucontext", EINVAL, get_context_again },
	{ "command_before_context", "QUERY_DEVICE before GET_CONTEXT",
	  "ib_uverbs_get_ucontext", EINVAL, command_before_context },
	{ "query_port_zero", "QUERY_PORT of port 0", "ib_query_port",
	  EINVAL, query_port_zero },
	{ "query_port_past_last", "QUERY_PORT of phys_port_cnt + 1",
	  "ib_query_port", EINVAL, query_port_past_last },
	{ "ex_query_device_comp_mask", "EX_QUERY_DEVICE with a comp_mask",
	  "ib_uverbs_ex_query_device", EINVAL, ex_query_device_comp_mask },
	{ "dealloc_pd_nothing", "DEALLOC_PD of a handle naming nothing",
	  "lookup_get_idr_uobject", ENOENT, dealloc_pd_nothing },
	{ "destroy_ah_nothing", "DESTROY_AH of a handle naming nothing",
	  "lookup_get_idr_uobject", ENOENT, destroy_ah_nothing },
	{ "destroy_ah_pd", "DESTROY_AH of a PD's handle",
	  "rdma_lookup_get_uobject", EINVAL, destroy_ah_pd },
	{ "dereg_mr_nothing", "DEREG_MR of a handle naming nothing",
	  "lookup_get_idr_uobject", ENOENT, dereg_mr_nothing },
	{ "dereg_mr_pd", "DEREG_MR of a PD's handle",
	  "rdma_lookup_get_uobject", EINVAL, dereg_mr_pd },
	{ "dealloc_mw_nothing", "DEALLOC_MW of a handle naming nothing",
	  "lookup_get_idr_uobject", ENOENT, dealloc_mw_nothing },
	{ "dealloc_mw_pd", "DEALLOC_MW of a PD's handle",
	  "rdma_lookup_get_uobject", EINVAL, dealloc_mw_pd },
	{ "destroy_cq_nothing", "DESTROY_CQ of a handle naming nothing",
	  "lookup_get_idr_uobject", ENOENT, destroy_cq_nothing },
	{ "destroy_cq_pd", "DESTROY_CQ of a PD's handle",
	  "rdma_lookup_get_uobject", EINVAL, destroy_cq_pd },
	{ "destroy_qp_nothing", "DESTROY_QP of a handle naming nothing",
	  "lookup_get_idr_uobject", ENOENT, destroy_qp_nothing },
	{ "destroy_qp_pd", "DESTROY_QP of a PD's handle",
	  "rdma_lookup_get_uobject", EINVAL, destroy_qp_pd },
	{ "destroy_srq_nothing", "DESTROY_SRQ of a handle naming nothing",
	  "lookup_get_idr_uobject", ENOENT, destroy_srq_nothing },
	{ "destroy_srq_pd", "DESTROY_SRQ of a PD's handle",
	  "rdma_lookup_get_uobject", EINVAL, destroy_srq_pd },
	{ "close_xrcd_nothing", "CLOSE_XRCD of a handle naming nothing",
	  "lookup_get_idr_uobject", ENOENT, close_xrcd_nothing },
	{ "close_xrcd_pd", "CLOSE_XRCD of a PD's handle",
	  "rdma_lookup_get_uobject", EINVAL, close_xrcd_pd },
	{ "destroy_flow_nothing", "DESTROY_FLOW of a handle naming nothing",
	  "lookup_get_idr_uobject", ENOENT, destroy_flow_nothing },
	{ "destroy_flow_pd", "DESTROY_FLOW of a PD's handle",
	  "rdma_lookup_get_uobject", EINVAL, destroy_flow_pd },
	{ "destroy_wq_pd", "DESTROY_WQ of a PD's handle",
	  "rdma_lookup_get_uobject", EINVAL, destroy_wq_pd, 
	  NOT_APPLICABLE },
	{ "destroy_tbl_pd", "DESTROY_RWQ_IND_TBL of a PD's handle",
	  "rdma_lookup_get_uobject", EINVAL, destroy_tbl_pd, 
	  NOT_APPLICABLE },
	{ "destroy_wq_nothing", "DESTROY_WQ of a handle naming nothing",
	  "lookup_get_idr_uobject", ENOENT, destroy_wq_nothing, 
	  NOT_APPLICABLE },
	{ "destroy_wq_comp_mask", "DESTROY_WQ with a comp_mask",
	  "ib_uverbs_ex_destroy_wq", EOPNOTSUPP, destroy_wq_comp_mask,
	  NOT_APPLICABLE },
	{ "destroy_tbl_nothing", "DESTROY_RWQ_IND_TBL of a handle naming nothing",
	  "lookup_get_idr_uobject", ENOENT, destroy_tbl_nothing, 
	  NOT_APPLICABLE },
	{ "destroy_tbl_comp_mask", "DESTROY_RWQ_IND_TBL with a comp_mask",
	  "ib_uverbs_ex_destroy_rwq_ind_table", EOPNOTSUPP,
	  destroy_tbl_comp_mask, NOT_APPLICABLE },
	{ "table_handles_missing", "CREATE_RWQ_IND_TBL of 2 with no handles",
	  "uverbs_request_next", ENOSPC, table_handles_missing,
	  NOT_APPLICABLE },
	{ "create_wq_comp_mask", "CREATE_WQ with a comp_mask",
	  "ib_uverbs_ex_create_wq", EOPNOTSUPP, create_wq_comp_mask,
	  NOT_APPLICABLE },
	{ "create_wq_driver_response", "CREATE_WQ with room for a driver response",
	  "mlx4_ib_create_wq", EOPNOTSUPP, create_wq_driver_response,
	  NOT_APPLICABLE },
	{ "create_wq_driver_tail", "CREATE_WQ with driver data past its structure",
	  "mlx4_ib_create_wq", EOPNOTSUPP, create_wq_driver_tail,
	  NOT_APPLICABLE },
	{ "table_driver_nonzero", "a table of one WQ with driver data",
	  "mlx4_ib_create_rwq_ind_table", EOPNOTSUPP, table_driver_nonzero,
	  NOT_APPLICABLE },
	{ "table_driver_zero", "a table of one WQ with zero driver data",
	  "mlx4_ib_create_rwq_ind_table", 0, table_driver_zero,
	  NOT_APPLICABLE },
	{ "modify_wq_nothing", "MODIFY_WQ of no attribute",
	  "ib_uverbs_ex_modify_wq", EINVAL, modify_wq_nothing,
	  NOT_APPLICABLE },
	{ "reg_remote_write_alone", "REG_MR: remote write without local",
	  "ib_check_mr_access", EINVAL, reg_remote_write_alone },
	{ "reg_unknown_flag", "REG_MR: an access flag the core has not",
	  "ib_check_mr_access", EINVAL, reg_unknown_flag },
	{ "reg_on_demand", "REG_MR: on-demand paging",
	  "ib_check_mr_access", EOPNOTSUPP, reg_on_demand },
	{ "rereg_no_flags", "REREG_MR with no flags", "ib_uverbs_rereg_mr",
	  EINVAL, rereg_no_flags },
	{ "rereg_unknown_flag", "REREG_MR with a flag past the three",
	  "ib_uverbs_rereg_mr", EOPNOTSUPP, rereg_unknown_flag },
	{ "rereg_offset_differs", "REREG_MR: address and iova offsets differ",
	  "ib_uverbs_rereg_mr", EINVAL, rereg_offset_differs },
	{ "rereg_nothing", "REREG_MR of a handle naming nothing",
	  "uobj_get_write", ENOENT, rereg_nothing },
	{ "rereg_access", "REREG_MR of the access rights",
	  "mlx4_ib_rereg_user_mr", 0, rereg_access },
	{ "alloc_mw_type_3", "ALLOC_MW of type 3", "ib_uverbs_alloc_mw",
	  EINVAL, alloc_mw_type_3 },
	{ "alloc_mw_bad_pd", "ALLOC_MW on a CQ's handle as the PD",
	  "ib_uverbs_alloc_mw", EINVAL, alloc_mw_bad_pd },
	{ "create_ah_port_zero", "CREATE_AH on port 0", "ib_uverbs_create_ah",
	  EINVAL, create_ah_port_zero },
	{ "cq_channel_async", "CREATE_CQ with the async file as its channel",
	  "lookup_get_fd_uobject", EBADF, cq_channel_async },
	{ "cq_channel_closed", "CREATE_CQ with a closed descriptor as channel",
	  "lookup_get_fd_uobject", EBADF, cq_channel_closed },
	{ "ex_create_cq_comp_mask", "EX_CREATE_CQ with a comp_mask",
	  "ib_uverbs_ex_create_cq", EINVAL, ex_create_cq_comp_mask },
	{ "ex_create_cq_flag", "EX_CREATE_CQ with a flag past the timestamp",
	  "mlx4_ib_create_cq", EINVAL, ex_create_cq_flag },
	{ "modify_cq_nothing", "MODIFY_CQ of no attribute",
	  "ib_uverbs_ex_modify_cq", EINVAL, modify_cq_nothing },
	{ "modify_cq_past_moderate", "MODIFY_CQ of an attribute past moderation",
	  "ib_uverbs_ex_modify_cq", EOPNOTSUPP, modify_cq_past_moderate },
	{ "modify_cq_moderate", "MODIFY_CQ of the moderation",
	  "mlx4_ib_modify_cq", 0, modify_cq_moderate },
	{ "notify_cq_pd", "REQ_NOTIFY_CQ of a PD's handle",
	  "ib_uverbs_req_notify_cq", EINVAL, notify_cq_pd },
	{ "create_qp_unknown_type", "CREATE_QP of type 99", "create_qp",
	  EINVAL, create_qp_unknown_type },
	{ "ex_create_qp_comp_mask", "EX_CREATE_QP with an unknown comp_mask bit",
	  "ib_uverbs_ex_create_qp", EINVAL, ex_create_qp_comp_mask },
	{ "ex_create_qp_flag", "EX_CREATE_QP with an unknown creation flag",
	  "create_qp", EINVAL, ex_create_qp_flag },
	{ "rtr_path_port_zero", "INIT to RTR with the path on port 0",
	  "modify_qp (uverbs)", EINVAL, rtr_path_port_zero },
	{ "rtr_path_port_other", "INIT to RTR with the path on another port",
	  "modify_qp (uverbs)", EINVAL, rtr_path_port_other },
	{ "rtr_path_port_own", "INIT to RTR with the path on the QP's port",
	  "modify_qp (uverbs)", 0, rtr_path_port_own },
	{ "modify_qp_state_past_err", "MODIFY_QP to a state past ERR",
	  "modify_qp (uverbs)", EINVAL, modify_qp_state_past_err },
	{ "modify_qp_past_standard", "MODIFY_QP with attribute bit 21",
	  "ib_uverbs_modify_qp", EOPNOTSUPP, modify_qp_past_standard },
	{ "modify_qp_legacy_rate_limit", "MODIFY_QP (legacy) of the rate limit",
	  "ib_uverbs_modify_qp", EOPNOTSUPP, modify_qp_legacy_rate_limit },
	{ "ex_modify_qp_rate_limit", "EX_MODIFY_QP of the rate limit",
	  "mlx4_ib_modify_qp", EOPNOTSUPP, ex_modify_qp_rate_limit },
	{ "ex_modify_qp_reserved", "EX_MODIFY_QP with its reserved word set",
	  "ib_uverbs_ex_modify_qp", 0, ex_modify_qp_reserved },
	{ "query_qp_pd", "QUERY_QP of a PD's handle", "ib_uverbs_query_qp",
	  EINVAL, query_qp_pd },
	{ "attach_unicast_lid", "ATTACH_MCAST with LID 0x1234",
	  "is_valid_mcast_lid", EINVAL, attach_unicast_lid, 0, SUCCEEDS },
	{ "attach_permissive_lid", "ATTACH_MCAST with LID 0xffff",
	  "is_valid_mcast_lid", EINVAL, attach_permissive_lid, 0,
	  SUCCEEDS },
	{ "attach_multicast_lid", "ATTACH_MCAST with LID 0xc001 (and DETACH)",
	  "ib_attach_mcast", 0, attach_multicast_lid },
	{ "attach_unicast_gid", "ATTACH_MCAST to a unicast GID",
	  "ib_attach_mcast", EINVAL, attach_unicast_gid },
	{ "attach_rc", "ATTACH_MCAST of an RC QP", "ib_attach_mcast",
	  EINVAL, attach_rc },
	{ "detach_unattached", "DETACH_MCAST of a group never attached",
	  "ib_uverbs_detach_mcast", EINVAL, detach_unattached },
	{ "open_xrcd_closed_fd", "OPEN_XRCD on a closed descriptor",
	  "ib_uverbs_open_xrcd", EBADF, open_xrcd_closed_fd },
	{ "open_xrcd_new_without_creat", "OPEN_XRCD of a new file, no O_CREAT",
	  "ib_uverbs_open_xrcd", EAGAIN, open_xrcd_new_without_creat },
	{ "open_xrcd_existing_excl", "OPEN_XRCD O_EXCL of a file that has one",
	  "ib_uverbs_open_xrcd", EINVAL, open_xrcd_existing_excl },
	{ "open_qp_unknown", "OPEN_QP of a number no target QP has",
	  "ib_open_qp", EINVAL, open_qp_unknown },
	{ "srq_resize", "MODIFY_SRQ of max_wr", "mlx4_ib_modify_srq",
	  EINVAL, srq_resize },
	{ "srq_limit_past_size", "MODIFY_SRQ limit past the SRQ",
	  "mlx4_ib_modify_srq", EINVAL, srq_limit_past_size },
	{ "srq_limit_within", "MODIFY_SRQ limit within it",
	  "mlx4_ib_modify_srq", 0, srq_limit_within },
	{ "srq_modify_nothing", "MODIFY_SRQ of no attribute",
	  "mlx4_ib_modify_srq", 0, srq_modify_nothing },
	{ "srq_modify_unknown_bit", "MODIFY_SRQ of a bit past LIMIT (ignored)",
	  "mlx4_ib_modify_srq", 0, srq_modify_unknown_bit },
	{ "srq_query_pd", "QUERY_SRQ of a PD's handle", "ib_uverbs_query_srq",
	  EINVAL, srq_query_pd },
	{ "rereg_pd_not_pd", "REREG_MR to a CQ's handle as the PD",
	  "ib_uverbs_rereg_mr", EINVAL, rereg_pd_not_pd },
	{ "resize_cq_pd", "RESIZE_CQ of a PD's handle", "ib_uverbs_resize_cq",
	  EINVAL, resize_cq_pd },
	{ "modify_cq_pd", "MODIFY_CQ of a PD's handle",
	  "ib_uverbs_ex_modify_cq", EINVAL, modify_cq_pd },
	{ "create_qp_pd_not_pd", "CREATE_QP on a CQ's handle as the PD",
	  "create_qp (uverbs)", EINVAL, create_qp_pd_not_pd },
	{ "create_qp_recv_cq_not_cq", "CREATE_QP with a PD's handle as recv CQ",
	  "create_qp (uverbs)", EINVAL, create_qp_recv_cq_not_cq },
	{ "create_qp_srq_not_srq", "CREATE_QP with a CQ's handle as its SRQ",
	  "create_qp (uverbs)", EINVAL, create_qp_srq_not_srq },
	{ "create_qp_xrcd_not_xrcd", "CREATE_QP XRC_TGT on a PD's handle",
	  "create_qp (uverbs)", EINVAL, create_qp_xrcd_not_xrcd },
	{ "create_qp_table_not_table", "CREATE_QP on a PD's handle as its table",
	  "create_qp (uverbs)", EINVAL, create_qp_table_not_table },
	{ "open_qp_xrcd_not_xrcd", "OPEN_QP on a PD's handle as the domain",
	  "ib_uverbs_open_qp", EINVAL, open_qp_xrcd_not_xrcd },
	{ "create_srq_pd_not_pd", "CREATE_SRQ on a CQ's handle as the PD",
	  "__uverbs_create_xsrq", EINVAL, create_srq_pd_not_pd },
	{ "create_xsrq_xrcd_not_xrcd", "CREATE_XSRQ on a PD's handle as domain",
	  "__uverbs_create_xsrq", EINVAL, create_xsrq_xrcd_not_xrcd },
	{ "destroy_flow_comp_mask", "DESTROY_FLOW with a comp_mask",
	  "ib_uverbs_ex_destroy_flow", EINVAL, destroy_flow_comp_mask },
	{ "ex_modify_qp_past_rate_limit", "EX_MODIFY_QP with attribute bit 26",
	  "ib_uverbs_ex_modify_qp", EOPNOTSUPP, ex_modify_qp_past_rate_limit },
	{ "modify_qp_cur_state_in_init", "CUR_STATE given in INIT",
	  "ib_modify_qp_is_ok", EINVAL, modify_qp_cur_state_in_init },
	{ "rtr_mtu_past_4096", "INIT to RTR with path MTU 6",
	  "__mlx4_ib_modify_qp", EINVAL, rtr_mtu_past_4096 },
	{ "rtr_alt_ports_differ", "an alternate path whose two ports differ",
	  "modify_qp (uverbs)", EINVAL, rtr_alt_ports_differ },
	{ "rtr_dest_rd_atomic_past", "max_dest_rd_atomic 255",
	  "_mlx4_ib_modify_qp", EINVAL, rtr_dest_rd_atomic_past },
	{ "table_comp_mask", "CREATE_RWQ_IND_TBL with a comp_mask",
	  "ib_uverbs_ex_create_rwq_ind_table", EOPNOTSUPP, table_comp_mask,
	  NOT_APPLICABLE },
	{ "table_handle_not_wq", "CREATE_RWQ_IND_TBL of a PD's handle",
	  "ib_uverbs_ex_create_rwq_ind_table", EINVAL, table_handle_not_wq,
	  NOT_APPLICABLE },
	{ "modify_wq_pd", "MODIFY_WQ of a PD's handle",
	  "ib_uverbs_ex_modify_wq", EINVAL, modify_wq_pd, NOT_APPLICABLE },
	{ "srq_busy", "DESTROY_SRQ of an SRQ a QP uses", "ib_destroy_srq_user",
	  EBUSY, srq_busy },
};

/* A row of rules[] as a case: the errno its attempt gets is the kernel's. */
static void check_rule(const void *row)
{
	const struct rule *r = row;
	int expect = r->expect;
	int got;

	if (r->expect_without_wqs && !have_wqs())
		expect = r->expect_without_wqs;
	if (r->expect_on_roce && ethernet)
		expect = r->expect_on_roce == SUCCEEDS ? 0 : r->expect_on_roce;
	if (expect == NOT_APPLICABLE) {
		skip_without_wqs(r->what);
		return;
	}
	got = r->try();
	check(got == expect, "%s: %s (%s): %s, expected %s", r->name,
	      r->what, r->source, got ? strerror(got) : "succeeded",
	      expect ? strerror(expect) : "success");
}

/* ------------------------------------------------------------------ */
/* Layouts                                                             */
/* ------------------------------------------------------------------ */

/*
 * The kernel tells the device a WQ is a QP with a one-entry, 64-byte send
 * queue; the device puts the queue with the larger stride first, the send
 * queue on a tie.  So receive WQE i is at 64 + i * stride for strides up
 * to 64, and at i * stride above.
 */
static void wq_layout(uint32_t max_sge)
{
	uint32_t stride = 16, offset;
	struct ibv_sge sge[4];
	struct ibv_recv_wr wr[4], *bad;
	struct mlx4dv_rwq rwq;
	struct mlx4dv_obj obj = { .rwq = { .in = NULL, .out = &rwq } };
	struct ibv_wq *wq = make_wq(4, max_sge);
	bool placed = true;

	while (stride < max_sge * 16)
		stride <<= 1;
	offset = stride > 64 ? 0 : 64;
	if (!wq) {
		check(0, "WQ of %u SGEs: %s", max_sge, strerror(errno));
		return;
	}
	obj.rwq.in = wq;
	for (int i = 0; i < 4; i++) {
		sge[i] = (struct ibv_sge){ .addr = 0x1000 * (i + 1),
					   .length = 100 + i,
					   .lkey = 0x4000 + i };
		wr[i] = (struct ibv_recv_wr){ .wr_id = i, .sg_list = &sge[i],
					      .num_sge = 1,
					      .next = i < 3 ? &wr[i + 1] : NULL };
	}
	if (dv.init_obj(&obj, MLX4DV_OBJ_RWQ) || ibv_post_wq_recv(wq, wr, &bad)) {
		check(0, "WQ of %u SGEs: direct verbs and posting", max_sge);
		ibv_destroy_wq(wq);
		return;
	}
	for (int i = 0; i < 4; i++) {
		struct mlx4_wqe_data_seg *d = (void *)((char *)rwq.buf.buf +
						       offset + i * stride);

		placed &= be64toh(d->addr) == sge[i].addr &&
			  be32toh(d->lkey) == sge[i].lkey &&
			  be32toh(d->byte_count) == sge[i].length;
	}
	check(placed, "WQ of %u SGEs: receive WQE i at %u + i * %u, where the device reads it",
	      max_sge, offset, stride);
	ibv_destroy_wq(wq);
}

/*
 * Queue memory that ends where the process's memory does: each buffer
 * the provider asks for is placed against an inaccessible page, so that
 * the kernel can pin no byte beyond it.
 */
static struct {
	void *buf;
	char *map;
	size_t len;
} guarded[16];
static int guarded_allocs;

static void *guarded_alloc(size_t size, void *data)
{
	size_t page = sysconf(_SC_PAGESIZE);
	size_t len = (size + page - 1) / page * page + page;
	char *map;
	int i;

	(void)data;
	for (i = 0; i < 16 && guarded[i].buf; i++)
		;
	if (i == 16)
		return NULL;
	map = mmap(NULL, len, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED)
		return NULL;
	mprotect(map + len - page, page, PROT_NONE);
	guarded[i].map = map;
	guarded[i].len = len;
	guarded[i].buf = map + len - page - size;
	guarded_allocs++;
	return guarded[i].buf;
}

static void guarded_free(void *buf, void *data)
{
	(void)data;
	for (int i = 0; i < 16; i++) {
		if (guarded[i].buf == buf) {
			munmap(guarded[i].map, guarded[i].len);
			guarded[i].buf = NULL;
		}
	}
}

/*
 * mlx4_ib pins a WQ's receive queue and the 64-byte send WQE before it:
 * a buffer of the receive queue alone, against the end of memory, would
 * be refused (EFAULT).  The allocator given for QP memory provides it.
 */
static void wq_buffer_pinned(void)
{
	struct mlx4dv_ctx_allocators alloc = {
		.alloc = guarded_alloc, .free = guarded_free,
	};
	struct mlx4dv_ctx_allocators none = {};
	struct ibv_wq *wq;
	int before;

	if (dv.set_context_attr(ctx, MLX4DV_SET_CTX_ATTR_BUF_ALLOCATORS,
				&alloc)) {
		check(0, "set the buffer allocators");
		return;
	}
	before = guarded_allocs;
	/* 256 receive WQEs of 16 bytes: exactly a page, plus 64 bytes */
	wq = make_wq(256, 1);
	check(wq && guarded_allocs > before,
	      "WQ in memory that ends at its buffer: made (%s), its buffer from the allocator (%d)",
	      wq ? "yes" : strerror(errno), guarded_allocs - before);
	if (wq)
		ibv_destroy_wq(wq);
	dv.set_context_attr(ctx, MLX4DV_SET_CTX_ATTR_BUF_ALLOCATORS, &none);
}

static void wq_layouts(void)
{
	if (!have_wqs()) {
		skip_without_wqs("WQ layouts of 1, 4 and 8 SGEs");
		skip_without_wqs("WQ in memory that ends at its buffer");
		return;
	}
	wq_layout(1);
	wq_layout(4);
	wq_layout(8);
	wq_buffer_pinned();
}

struct end {
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	uint8_t *buf;
	struct ibv_mr *mr;
};

#define BUF_SIZE 4096

static bool connect_to(struct ibv_qp *qp, uint32_t remote)
{
	struct ibv_qp_attr attr = {
		.qp_state = IBV_QPS_INIT, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE,
	};

	if (ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		return false;
	attr = (struct ibv_qp_attr){
		.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024,
		.dest_qp_num = remote, .max_dest_rd_atomic = 1,
		.min_rnr_timer = 1, .ah_attr = own_path(),
	};

	if (ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_AV |
			  IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		return false;
	attr = (struct ibv_qp_attr){
		.qp_state = IBV_QPS_RTS, .timeout = 10, .retry_cnt = 2,
		.rnr_retry = 1, .max_rd_atomic = 1,
	};
	return !ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_TIMEOUT |
			      IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			      IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

/* Both ends' QPs made by @make, connected to each other. */
static void make_ends(struct end e[2],
		      struct ibv_qp *(*make)(struct ibv_cq *))
{
	for (int i = 0; i < 2; i++) {
		e[i].cq = ibv_create_cq(ctx, 32, NULL, NULL, 0);
		e[i].qp = e[i].cq ? make(e[i].cq) : NULL;
		e[i].buf = aligned_alloc(4096, BUF_SIZE);
		if (!e[i].qp || !e[i].buf)
			bail("an end");
		memset(e[i].buf, 0, BUF_SIZE);
		e[i].mr = ibv_reg_mr(pd, e[i].buf, BUF_SIZE,
				     IBV_ACCESS_LOCAL_WRITE |
				     IBV_ACCESS_REMOTE_WRITE |
				     IBV_ACCESS_MW_BIND);
		if (!e[i].mr)
			bail("ibv_reg_mr");
	}
	if (!connect_to(e[0].qp, e[1].qp->qp_num) ||
	    !connect_to(e[1].qp, e[0].qp->qp_num))
		bail("connect");
}

static void free_ends(struct end e[2])
{
	for (int i = 0; i < 2; i++) {
		ibv_destroy_qp(e[i].qp);
		ibv_dereg_mr(e[i].mr);
		ibv_destroy_cq(e[i].cq);
		free(e[i].buf);
	}
}

static int post(struct end *e, enum ibv_wr_opcode op, uint32_t offset,
		uint32_t len, uint64_t remote, uint32_t rkey)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)e->buf + offset, .length = len,
		.lkey = e->mr->lkey,
	};
	struct ibv_send_wr wr = {
		.sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
		.wr = { .rdma = { .remote_addr = remote, .rkey = rkey } },
	}, *bad;

	return ibv_post_send(e->qp, &wr, &bad);
}

static uint32_t inline_size;

static struct ibv_qp *make_inline_qp(struct ibv_cq *c)
{
	uint32_t size = 100;
	struct ibv_qp *qp = inline_recv_qp(c, NULL, &size);

	inline_size = size;
	return qp;
}

/*
 * A receive-inline size that is not a power of two: the kernel gives the
 * RQ the stride ilog2 of what it is told, and the device reads receive
 * WQEs (and places the queues) by that stride.
 */
static void inline_recv_layout(void)
{
	struct end e[2];
	struct ibv_wc wc;
	int good = 0;

	make_ends(e, make_inline_qp);
	check(inline_size == 128,
	      "receive inline of 100 bytes: the caller is told %u (128, the stride)",
	      inline_size);
	for (int i = 0; i < 3; i++) {
		struct ibv_sge sge = {
			.addr = (uintptr_t)e[1].buf + 1024 * i, .length = 1000,
			.lkey = e[1].mr->lkey,
		};
		struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &sge,
					  .num_sge = 1 }, *bad;

		if (ibv_post_recv(e[1].qp, &wr, &bad))
			bail("post_recv");
	}
	/* Every byte different, so that a piece out of place shows. */
	for (int i = 0; i < 64 * 3; i++)
		e[0].buf[i] = (uint8_t)(i * 7 + 1);
	for (int i = 0; i < 3; i++)
		if (post(&e[0], IBV_WR_SEND, 64 * i, 64, 0, 0))
			bail("post_send");
	for (int i = 0; i < 3; i++) {
		bool ok = poll_cq_within(e[1].cq, &wc, 5000) == 1 &&
			  wc.status == IBV_WC_SUCCESS && wc.byte_len == 64 &&
			  wc.wr_id < 3 &&
			  !memcmp(e[1].buf + 1024 * wc.wr_id,
				  e[0].buf + 64 * wc.wr_id, 64);

		good += ok;
	}
	check(good == 3, "receive inline of 100 bytes: 3 messages land in 3 receive WQEs (%d)",
	      good);
	free_ends(e);
}

static struct ibv_qp *make_rc_qp(struct ibv_cq *c)
{
	struct ibv_qp_init_attr init = {
		.send_cq = c, .recv_cq = c, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};

	return ibv_create_qp(pd, &init);
}

/*
 * A type 2 window, bound, invalidated and deallocated: its key opens
 * nothing, so a write with it is a remote access error.
 */
static void dead_window(void)
{
	struct end e[2];
	struct ibv_mw *mw;
	struct ibv_send_wr wr = {}, *bad;
	struct ibv_wc wc;
	uint32_t rkey;
	bool bound, written, invalidated, refused;

	make_ends(e, make_rc_qp);
	mw = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
	if (!mw)
		bail("ibv_alloc_mw");
	rkey = ibv_inc_rkey(mw->rkey);
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = rkey;
	wr.bind_mw.bind_info = (struct ibv_mw_bind_info){
		.mr = e[1].mr, .addr = (uintptr_t)e[1].buf,
		.length = BUF_SIZE, .mw_access_flags = IBV_ACCESS_REMOTE_WRITE,
	};
	bound = !ibv_post_send(e[1].qp, &wr, &bad) &&
		poll_cq_within(e[1].cq, &wc, 5000) == 1 &&
		wc.status == IBV_WC_SUCCESS;
	memset(e[0].buf, 0x5a, 16);
	written = !post(&e[0], IBV_WR_RDMA_WRITE, 0, 16,
			(uintptr_t)e[1].buf + 256, rkey) &&
		  poll_cq_within(e[0].cq, &wc, 5000) == 1 &&
		  wc.status == IBV_WC_SUCCESS &&
		  e[1].buf[256] == 0x5a;
	wr = (struct ibv_send_wr){ .opcode = IBV_WR_LOCAL_INV,
				   .send_flags = IBV_SEND_SIGNALED,
				   .invalidate_rkey = rkey };
	invalidated = !ibv_post_send(e[1].qp, &wr, &bad) &&
		      poll_cq_within(e[1].cq, &wc, 5000) == 1 &&
		      wc.status == IBV_WC_SUCCESS;
	check(bound && written && invalidated && !ibv_dealloc_mw(mw),
	      "type 2 window: bound, written through, invalidated, deallocated");
	refused = !post(&e[0], IBV_WR_RDMA_WRITE, 0, 16,
			(uintptr_t)e[1].buf + 512, rkey) &&
		  poll_cq_within(e[0].cq, &wc, 5000) == 1;
	check(refused && wc.status == IBV_WC_REM_ACCESS_ERR &&
	      e[1].buf[512] == 0,
	      "a write with the dead window's key: remote access error (%s)",
	      refused ? ibv_wc_status_str(wc.status) : "no completion");
	free_ends(e);
}

/* After the rules: the layouts the device reads, and a dead window. */
static const struct test_case layouts[] = {
	{ "wq_layouts", wq_layouts,
	  "WQs of 1, 4 and 8 SGEs where the device reads them; a pinned buffer" },
	{ "inline_recv_layout", inline_recv_layout,
	  "a receive-inline size not a power of two: the stride the kernel takes" },
	{ "dead_window", dead_window,
	  "a type 2 window invalidated and deallocated opens nothing" },
};

/*
 * The cases: each row of rules[] (named as in kernel-rules.txt), then
 * the layouts.  Each makes and frees its own objects on main's PD, CQ
 * and registered page.
 */
static struct test_case *make_cases(size_t *n)
{
	size_t nrules = sizeof(rules) / sizeof(rules[0]);
	struct test_case *cases;

	*n = nrules + CASES_N(layouts);
	cases = calloc(*n, sizeof(*cases));
	if (!cases)
		bail("calloc");
	for (size_t i = 0; i < nrules; i++)
		cases[i] = (struct test_case){
			.name = rules[i].name, .what = rules[i].what,
			.run_row = check_rule, .row = &rules[i],
		};
	memcpy(cases + nrules, layouts, sizeof(layouts));
	return cases;
}

/* Usage: kernel-rules [--list | NAME...] */
int main(int argc, char **argv)
{
	struct ibv_device_attr_ex dev_ex;
	struct ibv_port_attr port;
	size_t ncases;
	struct test_case *cases = make_cases(&ncases);
	int ret = cases_select(cases, ncases, argc, argv, 1);

	if (ret >= 0)
		return ret;
	ctx = open_first_device("kernel-rules");
	if (ibv_query_device(ctx, &dev) || ibv_query_port(ctx, 1, &port))
		bail("open the device");
	lid = port.lid;
	ethernet = port.link_layer == IBV_LINK_LAYER_ETHERNET;
	if (ethernet && ibv_query_gid(ctx, 1, 0, &gid0))
		bail("ibv_query_gid");
	if (!ibv_query_device_ex(ctx, NULL, &dev_ex))
		rss_tbl_max = dev_ex.rss_caps.max_rwq_indirection_table_size;
	printf("# indirection tables of up to %u WQs\n", rss_tbl_max);
	load_dv();
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	page = aligned_alloc(4096, 4096);
	page_mr = page ? ibv_reg_mr(pd, page, 4096, IBV_ACCESS_LOCAL_WRITE) :
			 NULL;
	if (!pd || !cq || !page_mr)
		bail("PD, CQ and a registered page");

	cases_run(cases, ncases);
	free(cases);

	check(ibv_dereg_mr(page_mr) == 0 && ibv_destroy_cq(cq) == 0 &&
	      ibv_dealloc_pd(pd) == 0 &&
	      ibv_close_device(ctx) == 0, "everything torn down");
	return tap_finish();
}
