/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the kernel pins for a process is held to its RLIMIT_MEMLOCK unless
 * it has CAP_IPC_LOCK (ib_umem_get: mm->pinned_vm): with a limit of 0 no
 * region and no queue (EPERM); past the limit ENOMEM, counting every page
 * a range touches, a re-registration's old pages gone first, and a page
 * of doorbell records once however many queues keep records in it
 * (mlx4_ib_db_map_user).  The program drops CAP_IPC_LOCK from its
 * effective set for the cases and takes it back for the last one.
 * Usage: memlock [--list | NAME...]
 */
#define _GNU_SOURCE
#include <linux/capability.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <infiniband/mlx4dv.h>

#include "../cases.h"
#include "../device.h"

#define PAGE		4096
#define BUF_PAGES	40

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static uint8_t *buf;		/* BUF_PAGES pages, page-aligned */
static struct rlimit original;

/* CAP_IPC_LOCK in or out of the effective set: 0, or -1 if not held. */
static int ipc_lock_effective(bool on)
{
	struct __user_cap_header_struct head = {
		.version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2];

	if (syscall(SYS_capget, &head, data))
		return -1;
	if (!(data[0].permitted & 1u << CAP_IPC_LOCK))
		return on ? -1 : 0;
	if (on)
		data[0].effective |= 1u << CAP_IPC_LOCK;
	else
		data[0].effective &= ~(1u << CAP_IPC_LOCK);
	return syscall(SYS_capset, &head, data) ? -1 : 0;
}

static void limit_pages(uint64_t pages)
{
	struct rlimit r = { pages * PAGE, original.rlim_max };

	if (setrlimit(RLIMIT_MEMLOCK, &r))
		bail("setrlimit(RLIMIT_MEMLOCK)");
}

static void limit_restore(void)
{
	if (setrlimit(RLIMIT_MEMLOCK, &original))
		bail("setrlimit(RLIMIT_MEMLOCK)");
}

/* ibv_reg_mr of @pages pages from @offset bytes into buf: the MR, or NULL. */
static struct ibv_mr *reg(size_t offset, size_t pages)
{
	return ibv_reg_mr(pd, buf + offset, pages * PAGE,
			  IBV_ACCESS_LOCAL_WRITE);
}

/* errno of a verb that returned @obj, or 0 when it made one. */
static int err_of(void *obj)
{
	return obj ? 0 : errno;
}

static void limit_zero(void)
{
	struct ibv_mr *mr;
	struct ibv_cq *cq;

	limit_pages(0);
	mr = reg(0, 1);
	CHECK(!mr && errno == EPERM,
	      "RLIMIT_MEMLOCK 0: ibv_reg_mr fails, EPERM (%s)",
	      strerror(err_of(mr)));
	cq = ibv_create_cq(ctx, 1, NULL, NULL, 0);
	CHECK(!cq && errno == EPERM,
	      "RLIMIT_MEMLOCK 0: ibv_create_cq fails, EPERM (%s)",
	      strerror(err_of(cq)));
	limit_restore();
	if (mr)
		ibv_dereg_mr(mr);
	if (cq)
		ibv_destroy_cq(cq);
}

static void region_pages(void)
{
	struct ibv_mr *a, *b, *c;

	limit_pages(16);
	a = reg(0, 16);
	CHECK(a != NULL, "a limit of 16 pages: a region of 16 (%s)",
	      strerror(err_of(a)));
	b = reg(16 * PAGE, 1);
	CHECK(!b && errno == ENOMEM, "and one page more: ENOMEM (%s)",
	      strerror(err_of(b)));
	if (a)
		ibv_dereg_mr(a);
	c = ibv_reg_mr(pd, buf + 100, 16 * PAGE, IBV_ACCESS_LOCAL_WRITE);
	CHECK(!c && errno == ENOMEM,
	      "16 pages' length from offset 100 touches 17: ENOMEM (%s)",
	      strerror(err_of(c)));
	if (c)
		ibv_dereg_mr(c);
	c = ibv_reg_mr(pd, buf + 100, 15 * PAGE, IBV_ACCESS_LOCAL_WRITE);
	CHECK(c != NULL, "15 pages' length from offset 100 touches 16 (%s)",
	      strerror(err_of(c)));
	if (c)
		ibv_dereg_mr(c);
	if (b)
		ibv_dereg_mr(b);
	limit_restore();
}

static void rereg_releases_first(void)
{
	struct ibv_mr *mr;
	int ret;

	limit_pages(16);
	mr = reg(0, 10);
	CHECK(mr != NULL, "a limit of 16 pages: a region of 10 (%s)",
	      strerror(err_of(mr)));
	if (!mr) {
		limit_restore();
		return;
	}
	errno = 0;
	ret = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL,
			   buf + 20 * PAGE, 16 * PAGE, 0);
	CHECK(ret == 0, "moved to 16 other pages: its 10 go first (%d, %s)",
	      ret, strerror(errno));
	errno = 0;
	ret = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL,
			   buf + 20 * PAGE, 17 * PAGE, 0);
	CHECK(ret != 0 && errno == ENOMEM,
	      "moved to 17 pages: ENOMEM (%d, %s)", ret, strerror(errno));
	limit_restore();
	ibv_dereg_mr(mr);
}

/* The pages of @cq's ring. */
static uint64_t ring_pages(struct ibv_cq *cq)
{
	struct mlx4dv_cq dv;
	struct mlx4dv_obj obj = { .cq = { .in = cq, .out = &dv } };

	if (mlx4dv_init_obj(&obj, MLX4DV_OBJ_CQ))
		bail("mlx4dv_init_obj");
	return (dv.buf.length + PAGE - 1) / PAGE;
}

/*
 * Two CQs: their rings and one page of doorbell records.  With the limit
 * at exactly that, the second comes; a third does not, until one goes.
 */
static void doorbell_page_once(void)
{
	struct ibv_cq *a, *b, *c;
	uint64_t ring;

	a = ibv_create_cq(ctx, 1, NULL, NULL, 0);
	if (!a)
		bail("ibv_create_cq");
	ring = ring_pages(a);
	ibv_destroy_cq(a);
	limit_pages(2 * ring + 1);
	a = ibv_create_cq(ctx, 1, NULL, NULL, 0);
	b = ibv_create_cq(ctx, 1, NULL, NULL, 0);
	CHECK(a && b,
	      "a limit of 2 rings of %llu pages and 1: two CQs, their doorbell records in one page (%s)",
	      (unsigned long long)ring, strerror(err_of(a && b ? a : NULL)));
	c = ibv_create_cq(ctx, 1, NULL, NULL, 0);
	CHECK(!c && errno == ENOMEM, "a third CQ: ENOMEM (%s)",
	      strerror(err_of(c)));
	if (b)
		ibv_destroy_cq(b);
	if (!c)
		c = ibv_create_cq(ctx, 1, NULL, NULL, 0);
	CHECK(c != NULL, "once the second goes, the third comes (%s)",
	      strerror(err_of(c)));
	limit_restore();
	if (a)
		ibv_destroy_cq(a);
	if (c)
		ibv_destroy_cq(c);
}

/* A QP whose ring the limit has no room for. */
static void queue_past_limit(void)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
	struct ibv_mr *fill;
	struct ibv_qp_init_attr init = {
		.cap = { .max_send_wr = 64, .max_recv_wr = 64,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	struct ibv_qp *qp;

	if (!cq)
		bail("ibv_create_cq");
	init.send_cq = init.recv_cq = cq;
	limit_pages(BUF_PAGES + 2);	/* the CQ's ring and doorbells */
	fill = reg(0, BUF_PAGES - 1);
	qp = ibv_create_qp(pd, &init);
	CHECK(fill && !qp && errno == ENOMEM,
	      "a QP's ring past the limit: ENOMEM (%s)", strerror(err_of(qp)));
	if (qp)
		ibv_destroy_qp(qp);
	if (fill)
		ibv_dereg_mr(fill);
	qp = ibv_create_qp(pd, &init);
	CHECK(qp != NULL, "with the region gone, the QP comes (%s)",
	      strerror(err_of(qp)));
	limit_restore();
	if (qp)
		ibv_destroy_qp(qp);
	ibv_destroy_cq(cq);
}

static void cap_ipc_lock(void)
{
	struct ibv_mr *mr;

	if (ipc_lock_effective(true)) {
		printf("ok %d - # SKIP CAP_IPC_LOCK: not permitted to this process (not root)\n",
		       ++tap_count);
		return;
	}
	limit_pages(0);
	mr = reg(0, BUF_PAGES);
	CHECK(mr != NULL,
	      "CAP_IPC_LOCK: %d pages with RLIMIT_MEMLOCK 0 (%s)", BUF_PAGES,
	      strerror(err_of(mr)));
	limit_restore();
	if (mr)
		ibv_dereg_mr(mr);
	ipc_lock_effective(false);
}

static const struct test_case cases[] = {
	{ "limit_zero", limit_zero,
	  "RLIMIT_MEMLOCK 0: no region, no CQ (EPERM)" },
	{ "region_pages", region_pages,
	  "regions within and past the limit, every page a range touches" },
	{ "rereg_releases_first", rereg_releases_first,
	  "a re-registration's old pages go before its new are counted" },
	{ "doorbell_page_once", doorbell_page_once,
	  "a page of doorbell records counts once for the CQs in it" },
	{ "queue_past_limit", queue_past_limit,
	  "a QP's ring past the limit: ENOMEM" },
	{ "cap_ipc_lock", cap_ipc_lock,
	  "CAP_IPC_LOCK: no limit (root only)" },
};

int main(int argc, char **argv)
{
	int ret = cases_select(cases, CASES_N(cases), argc, argv, 1);

	if (ret >= 0)
		return ret;
	setvbuf(stdout, NULL, _IONBF, 0);
	ctx = open_first_device("memlock");
	pd = ibv_alloc_pd(ctx);
	if (!pd || posix_memalign((void **)&buf, PAGE, BUF_PAGES * PAGE))
		bail("a PD and a buffer");
	memset(buf, 0, BUF_PAGES * PAGE);
	if (getrlimit(RLIMIT_MEMLOCK, &original))
		bail("getrlimit(RLIMIT_MEMLOCK)");
	if (ipc_lock_effective(false))
		bail("CAP_IPC_LOCK out of the effective set");
	cases_run(cases, CASES_N(cases));
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	free(buf);
	return tap_finish();
}
