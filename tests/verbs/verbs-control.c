/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * verbs-control: the control path's rules, and the errors bad input gets.
 *
 * The QP state machine and its attribute table, the device's limits at
 * creation, memory registration, objects in use, and the work requests a
 * provider must refuse.  Runs on the first RDMA device with any provider;
 * under mlx4sim it also checks that failed creations leave nothing behind
 * in the device.  The work requests a provider must refuse are checked
 * with --post-checks.  Prints TAP.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#include "../device.h"
#include "../cases.h"

static struct ibv_context *ctx;
static struct ibv_device_attr dev;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static uint16_t lid;

/* What the device holds, if it is mlx4sim; -1 otherwise. */
static long device_objects(void)
{
	const char *dir = getenv("MLX4SIM_DIR");
	char path[512], name[32];
	long total = 0, n;
	FILE *f;
	int pid;

	if (!dir)
		return -1;
	snprintf(path, sizeof(path), "%s/pid", dir);
	f = fopen(path, "r");
	if (!f || fscanf(f, "%d", &pid) != 1)
		return -1;
	fclose(f);
	snprintf(path, sizeof(path), "%s/stats", dir);
	unlink(path);
	kill(pid, SIGUSR1);
	for (int i = 0; i < 200 && !(f = fopen(path, "r")); i++)
		usleep(10000);
	if (!f)
		return -1;
	while (fscanf(f, "%31s %ld", name, &n) == 2)
		if (strcmp(name, "breaches") && strcmp(name, "contexts"))
			total += n;
	fclose(f);
	return total;
}

static struct ibv_qp *make_qp(enum ibv_qp_type type, uint32_t send_wr,
			      uint32_t sge, uint32_t inline_data)
{
	struct ibv_qp_init_attr init = {
		.send_cq = cq, .recv_cq = cq, .qp_type = type,
		.cap = { .max_send_wr = send_wr, .max_recv_wr = 4,
			 .max_send_sge = sge, .max_recv_sge = 1,
			 .max_inline_data = inline_data },
	};

	return ibv_create_qp(pd, &init);
}

static int to_init(struct ibv_qp *qp)
{
	struct ibv_qp_attr attr = {
		.qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = 0x1234,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE,
	};

	return ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			     IBV_QP_PORT | (qp->qp_type == IBV_QPT_UD ?
					    IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS));
}

#define RTR_MASK (IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | \
		  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | \
		  IBV_QP_MIN_RNR_TIMER)
#define RTS_MASK (IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | \
		  IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC)

static struct ibv_qp_attr rtr_attr(uint32_t dest)
{
	return (struct ibv_qp_attr){
		.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_2048,
		.dest_qp_num = dest, .rq_psn = 0x123456,
		.max_dest_rd_atomic = 4, .min_rnr_timer = 12,
		.ah_attr = { .dlid = lid, .sl = 3, .port_num = 1 },
	};
}

static struct ibv_qp_attr rts_attr(void)
{
	return (struct ibv_qp_attr){
		.qp_state = IBV_QPS_RTS, .timeout = 14, .retry_cnt = 6,
		.rnr_retry = 5, .sq_psn = 0x654321, .max_rd_atomic = 2,
	};
}

static void state_machine(void)
{
	struct ibv_qp *qp = make_qp(IBV_QPT_RC, 16, 1, 0);
	struct ibv_qp *ud = make_qp(IBV_QPT_UD, 16, 1, 0);
	struct ibv_qp_attr attr, got;
	struct ibv_qp_init_attr init;

	if (!qp || !ud)
		bail("ibv_create_qp");
	attr = rtr_attr(qp->qp_num);
	check(ibv_modify_qp(qp, &attr, RTR_MASK) == EINVAL,
	      "RESET to RTR is not a transition: EINVAL");
	attr = (struct ibv_qp_attr){ .qp_state = IBV_QPS_INIT, .pkey_index = 0 };
	check(ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			    IBV_QP_ACCESS_FLAGS) == EINVAL,
	      "RESET to INIT without the port: EINVAL");
	attr.port_num = 3;
	check(ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			    IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) == EINVAL,
	      "port 3 of a two-port adapter: EINVAL");
	attr.port_num = 1;
	attr.pkey_index = 128;
	check(ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			    IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) == EINVAL,
	      "P_Key index 128 of a 128-entry table: EINVAL");
	attr = (struct ibv_qp_attr){ .qp_state = IBV_QPS_INIT, .port_num = 1 };
	check(ibv_modify_qp(ud, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			    IBV_QP_PORT) == EINVAL,
	      "a UD QP to INIT without a Q_Key: EINVAL");
	check(ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			    IBV_QP_PORT | IBV_QP_QKEY | IBV_QP_ACCESS_FLAGS) == EINVAL,
	      "an RC QP given a Q_Key: EINVAL");
	check(to_init(qp) == 0 && to_init(ud) == 0, "RESET to INIT, done right");

	attr = rtr_attr(qp->qp_num);
	check(ibv_modify_qp(qp, &attr, RTR_MASK & ~IBV_QP_MIN_RNR_TIMER) == EINVAL,
	      "RC INIT to RTR without the RNR timer: EINVAL");
	attr.max_dest_rd_atomic = 17;
	check(ibv_modify_qp(qp, &attr, RTR_MASK) == EINVAL,
	      "max_dest_rd_atomic 17, beyond the device's 16: EINVAL");
	attr = rtr_attr(qp->qp_num);
	check(ibv_modify_qp(qp, &attr, RTR_MASK) == 0, "INIT to RTR");
	attr = rts_attr();
	check(ibv_modify_qp(qp, &attr, RTS_MASK | IBV_QP_AV) == EINVAL,
	      "RTR to RTS may not change the path: EINVAL");
	attr.timeout = 32;
	check(ibv_modify_qp(qp, &attr, RTS_MASK) == EINVAL,
	      "a timeout of 32: EINVAL");
	attr = rts_attr();
	check(ibv_modify_qp(qp, &attr, RTS_MASK) == 0, "RTR to RTS");

	memset(&got, 0, sizeof(got));
	check(ibv_query_qp(qp, &got, IBV_QP_STATE | IBV_QP_PATH_MTU |
			   IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_SQ_PSN |
			   IBV_QP_AV | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			   IBV_QP_RNR_RETRY | IBV_QP_MIN_RNR_TIMER |
			   IBV_QP_ACCESS_FLAGS, &init) == 0 &&
	      got.qp_state == IBV_QPS_RTS && got.path_mtu == IBV_MTU_2048 &&
	      got.dest_qp_num == qp->qp_num && got.rq_psn == 0x123456 &&
	      got.sq_psn == 0x654321 && got.ah_attr.dlid == lid &&
	      got.ah_attr.sl == 3 && got.timeout == 14 && got.retry_cnt == 6 &&
	      got.rnr_retry == 5 && got.min_rnr_timer == 12 &&
	      got.qp_access_flags == IBV_ACCESS_REMOTE_WRITE,
	      "ibv_query_qp returns what modify set");
	attr = (struct ibv_qp_attr){ .qp_state = IBV_QPS_INIT };
	check(ibv_modify_qp(qp, &attr, IBV_QP_STATE) == EINVAL,
	      "RTS back to INIT: EINVAL");
	attr = (struct ibv_qp_attr){ .qp_state = IBV_QPS_SQD };
	check(ibv_modify_qp(qp, &attr, IBV_QP_STATE) == 0, "RTS to SQD");
	attr = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS };
	check(ibv_modify_qp(qp, &attr, IBV_QP_STATE) == 0, "SQD back to RTS");
	attr = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RESET };
	check(ibv_modify_qp(qp, &attr, IBV_QP_STATE) == 0 &&
	      ibv_query_qp(qp, &got, IBV_QP_STATE, &init) == 0 &&
	      got.qp_state == IBV_QPS_RESET, "any state to RESET");
	check(ibv_destroy_qp(qp) == 0 && ibv_destroy_qp(ud) == 0,
	      "QPs destroyed");
}

static void limits(void)
{
	long before = device_objects();
	struct ibv_srq_init_attr srq_init = {
		.attr = { .max_wr = dev.max_srq_wr + 1, .max_sge = 1 } };
	struct ibv_qp *qp;
	struct ibv_cq *big;
	struct ibv_srq *srq;

	errno = 0;
	qp = make_qp(IBV_QPT_RC, dev.max_qp_wr + 1, 1, 0);
	check(!qp && (errno == EINVAL || errno == ENOMEM),
	      "a QP with max_send_wr %d, one beyond the device's: fails (%s)",
	      dev.max_qp_wr + 1, strerror(errno));
	errno = 0;
	qp = make_qp(IBV_QPT_RC, 16, dev.max_sge + 1, 0);
	check(!qp && (errno == EINVAL || errno == ENOMEM),
	      "a QP with %d SGEs: fails (%s)", dev.max_sge + 1, strerror(errno));
	errno = 0;
	qp = make_qp(IBV_QPT_RC, 16, 1, 4096);
	check(!qp && (errno == EINVAL || errno == ENOMEM),
	      "a QP with 4096 bytes of inline data: fails (%s)", strerror(errno));
	errno = 0;
	big = ibv_create_cq(ctx, dev.max_cqe + 1, NULL, NULL, 0);
	check(!big && (errno == EINVAL || errno == ENOMEM),
	      "a CQ of %d entries: fails (%s)", dev.max_cqe + 1, strerror(errno));
	errno = 0;
	srq = ibv_create_srq(pd, &srq_init);
	check(!srq && (errno == EINVAL || errno == ENOMEM),
	      "an SRQ of %d WRs: fails (%s)", dev.max_srq_wr + 1, strerror(errno));
	if (before >= 0)
		check(device_objects() == before,
		      "the failed creations left nothing in the device");
	qp = make_qp(IBV_QPT_RC, dev.max_qp_wr, 1, 0);
	check(qp && ibv_destroy_qp(qp) == 0,
	      "a QP of exactly max_qp_wr (%d) WRs works", dev.max_qp_wr);
}

static void memory(void)
{
	size_t page = sysconf(_SC_PAGESIZE);
	void *hole = mmap(NULL, 4 * page, PROT_NONE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *buf = aligned_alloc(page, 4 * page);
	struct ibv_mr *mr;

	errno = 0;
	mr = ibv_reg_mr(pd, hole, 4 * page, IBV_ACCESS_LOCAL_WRITE);
	check(!mr && errno == EFAULT,
	      "registering memory that is not there: EFAULT (%s)", strerror(errno));
	errno = 0;
	mr = ibv_reg_mr(pd, buf, 4 * page, IBV_ACCESS_REMOTE_WRITE);
	check(!mr && errno == EINVAL,
	      "remote write without local write: EINVAL (%s)", strerror(errno));
	mr = ibv_reg_mr(pd, buf, 4 * page, IBV_ACCESS_LOCAL_WRITE);
	check(mr && mr->lkey && mr->addr == buf && mr->length == 4 * page,
	      "a good registration gives a key, the address and the length");
	check(mr && ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
				 IBV_ACCESS_LOCAL_WRITE |
				 IBV_ACCESS_REMOTE_READ) == 0,
	      "ibv_rereg_mr changes the access rights");
	check(ibv_dealloc_pd(pd) == EBUSY, "a PD still in use: EBUSY");
	check(mr && ibv_dereg_mr(mr) == 0, "deregistered");
	munmap(hole, 4 * page);
	free(buf);
}

static int post(struct ibv_qp *qp, struct ibv_send_wr *wr,
		struct ibv_send_wr **bad)
{
	*bad = NULL;
	return ibv_post_send(qp, wr, bad);
}

static void bad_work_requests(void)
{
	struct ibv_qp *rc = make_qp(IBV_QPT_RC, 4, 2, 64);
	struct ibv_qp *ud = make_qp(IBV_QPT_UD, 4, 1, 0);
	char *buf = aligned_alloc(4096, 8192);
	struct ibv_mr *mr = ibv_reg_mr(pd, buf, 8192, IBV_ACCESS_LOCAL_WRITE |
				       IBV_ACCESS_REMOTE_WRITE);
	struct ibv_sge sge[3] = {
		{ (uintptr_t)buf, 8, mr ? mr->lkey : 0 },
		{ (uintptr_t)buf + 8, 8, mr ? mr->lkey : 0 },
		{ (uintptr_t)buf + 16, 8, mr ? mr->lkey : 0 },
	};
	struct ibv_send_wr wr[3], *bad;
	struct ibv_qp_attr attr;
	struct ibv_qp_init_attr init;
	struct ibv_wc wc;
	int ret, n;

	if (!rc || !ud || !mr)
		bail("QPs for bad work requests");
	to_init(rc);
	attr = rtr_attr(rc->qp_num);
	ibv_modify_qp(rc, &attr, RTR_MASK);
	attr = rts_attr();
	attr.sq_psn = 0x123456;		/* talks to itself */
	ibv_modify_qp(rc, &attr, RTS_MASK);
	ibv_query_qp(rc, &attr, IBV_QP_CAP, &init);

	/* Three WRs; the second has too many SGEs. */
	memset(wr, 0, sizeof(wr));
	for (int i = 0; i < 3; i++) {
		wr[i].wr_id = i;
		wr[i].opcode = IBV_WR_RDMA_WRITE;
		wr[i].sg_list = sge;
		wr[i].num_sge = 1;
		wr[i].wr.rdma.remote_addr = (uintptr_t)buf + 4096;
		wr[i].wr.rdma.rkey = mr->rkey;
		wr[i].send_flags = IBV_SEND_SIGNALED;
		wr[i].next = i < 2 ? &wr[i + 1] : NULL;
	}
	wr[1].num_sge = init.cap.max_send_sge + 1;
	ret = post(rc, wr, &bad);
	check((ret == EINVAL || ret == ENOMEM) && bad == &wr[1],
	      "too many SGEs: an errno, bad_wr at that WR (%s)", strerror(ret));
	n = 0;
	for (int i = 0; i < 50; i++) {
		usleep(2000);
		while (ibv_poll_cq(cq, 1, &wc) > 0)
			n += wc.status == IBV_WC_SUCCESS && wc.wr_id == 0 ? 1 : 100;
	}
	check(n == 1, "only the WR before it was posted, and it completes (%d)",
	      n);

	wr[1].num_sge = 1;
	wr[1].send_flags |= IBV_SEND_INLINE;
	sge[2].length = init.cap.max_inline_data + 1;
	wr[1].sg_list = &sge[2];
	ret = post(rc, &wr[1], &bad);
	check((ret == EINVAL || ret == ENOMEM) && bad == &wr[1],
	      "inline data beyond max_inline_data (%u): an errno (%s)",
	      init.cap.max_inline_data, strerror(ret));

	memset(wr, 0, sizeof(wr));
	wr[0].opcode = IBV_WR_RDMA_READ;
	wr[0].sg_list = sge;
	wr[0].num_sge = 1;
	ret = post(ud, wr, &bad);
	check(ret == EINVAL && bad == &wr[0],
	      "RDMA READ on a UD QP: EINVAL (%s)", strerror(ret));

	/* Fill the send queue without ringing the device's attention to it. */
	attr = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RESET };
	ibv_modify_qp(rc, &attr, IBV_QP_STATE);
	to_init(rc);
	memset(wr, 0, sizeof(wr));
	wr[0].opcode = IBV_WR_SEND;
	wr[0].sg_list = sge;
	wr[0].num_sge = 1;
	n = 0;
	while ((ret = post(rc, wr, &bad)) == 0 && n < 100000)
		n++;
	check(ret == ENOMEM && n == (int)init.cap.max_send_wr,
	      "a full send queue: ENOMEM after max_send_wr (%u) WRs (%d, %s)",
	      init.cap.max_send_wr, n, strerror(ret));

	ibv_destroy_qp(rc);
	ibv_destroy_qp(ud);
	ibv_dereg_mr(mr);
	free(buf);
	while (ibv_poll_cq(cq, 1, &wc) > 0)
		;
}

/*
 * A completion channel counts the CQs it serves, once each, made either
 * way (libibverbs counts an extended CQ itself, after the provider's
 * create_cq_ex returns): busy while one lives, free when they are gone.
 */
static void channel_counts(void)
{
	struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
	struct ibv_cq_init_attr_ex attr = { .cqe = 8, .wc_flags = IBV_WC_STANDARD_FLAGS };
	struct ibv_cq_ex *cq_ex;
	struct ibv_cq *plain;

	if (!ch) {
		check(0, "ibv_create_comp_channel: %s", strerror(errno));
		return;
	}
	attr.channel = ch;
	cq_ex = ibv_create_cq_ex(ctx, &attr);
	plain = ibv_create_cq(ctx, 8, NULL, ch, 0);
	check(cq_ex && plain, "a CQ and an extended CQ on one channel");
	check(ibv_destroy_comp_channel(ch) == EBUSY,
	      "the channel is busy while they live: EBUSY");
	check((!cq_ex || !ibv_destroy_cq(ibv_cq_ex_to_cq(cq_ex))) &&
	      (!plain || !ibv_destroy_cq(plain)), "both destroyed");
	check(ibv_destroy_comp_channel(ch) == 0,
	      "then the channel is destroyed (each CQ was counted once)");
}

static void busy_objects(void)
{
	struct ibv_qp *qp = make_qp(IBV_QPT_RC, 4, 1, 0);

	check(qp && ibv_destroy_cq(cq) == EBUSY, "a CQ still in use: EBUSY");
	check(qp && ibv_destroy_qp(qp) == 0, "its QP destroyed first");
	channel_counts();
}

/*
 * Work requests a provider must refuse: rdma-core's own mlx4 posts an
 * RDMA READ to a UD QP and crashes on it, so these are asked for, by
 * --post-checks or by name.
 */
static bool post_checks;

static void bad_work_requests_asked(void)
{
	if (post_checks || cases_chosen)
		bad_work_requests();
}

/*
 * The cases, in the order a full run takes them.  They share the device,
 * its PD and its CQ (main() opens them before any case, and checks after
 * the last that all of it is torn down); each makes and destroys its own
 * QPs, MRs and the rest, so each runs alone as in the full run.
 */
static const struct test_case cases[] = {
	{ "state_machine", state_machine,
	  "the QP state machine and its attribute table" },
	{ "limits", limits, "the device's limits at creation" },
	{ "memory", memory, "memory registration" },
	{ "bad_work_requests", bad_work_requests_asked,
	  "work requests a provider must refuse (--post-checks, or by name)" },
	{ "busy_objects", busy_objects,
	  "objects in use cannot be destroyed, nor a channel with CQs" },
};

/* Usage: verbs-control [--post-checks] [--list | NAME...] */
int main(int argc, char **argv)
{
	struct ibv_port_attr port;
	int ret;

	post_checks = argc > 1 && !strcmp(argv[1], "--post-checks");
	ret = cases_select(cases, CASES_N(cases), argc, argv, 1 + post_checks);
	if (ret >= 0)
		return ret;

	ctx = open_first_device("verbs-control");
	if (ibv_query_device(ctx, &dev) || ibv_query_port(ctx, 1, &port))
		bail("open the device");
	lid = port.lid;
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	if (!pd || !cq)
		bail("PD and CQ");

	cases_run(cases, CASES_N(cases));

	check(ibv_destroy_cq(cq) == 0 && ibv_dealloc_pd(pd) == 0 &&
	      ibv_close_device(ctx) == 0, "everything torn down");
	return tap_finish();
}
