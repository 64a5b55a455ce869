/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Completions as the device writes them, crafted byte by byte, and every
 * ibv_wc field the provider makes of them: sends and receives, immediate
 * data, UD addressing, each error syndrome, 32- and 64-byte CQEs, SRQ
 * and XRC receives, ownership across passes; arming, resizing, cleaning
 * and the extended polling interface.
 */
#include <config.h>

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "provider-fake.h"

/*
 * CQE layout, for reading the hex below:
 *   0 vlan_my_qpn   4 immed_rss_invalid   8 g_mlpath_rqpn
 *  12 sl_vid  14 rlid   16 status   20 byte_cnt
 *  24 wqe_index  26 checksum (errors: 26 vendor_err, 27 syndrome)
 *  28 reserved  29 ts  30 ts  31 owner_sr_opcode (owner, is_send, opcode)
 */

static struct mlx4_cqe *cqe_at(struct mlx4_cq *cq, unsigned int n)
{
	return (struct mlx4_cqe *)((uint8_t *)cq->cqe_base +
				   ((n & cq->mask) << cq->cqe_shift));
}

static int hexval(int c)
{
	return isdigit(c) ? c - '0' : tolower(c) - 'a' + 10;
}

/*
 * Write the 32 bytes of @hex as the CQE at index @n, its owner bit set
 * as the device sets it for that index: the parity of the pass.
 */
static void put_cqe(struct mlx4_cq *cq, unsigned int n, const char *hex)
{
	uint8_t bytes[32];
	int i = 0;

	for (; *hex && i < 32; hex++) {
		if (isspace((unsigned char)*hex))
			continue;
		bytes[i++] = hexval(hex[0]) << 4 | hexval(hex[1]);
		hex++;
	}
	if (i != 32)
		abort();
	bytes[31] = (bytes[31] & 0x7f) | ((n & (cq->mask + 1)) ? 0x80 : 0);
	memcpy(cqe_at(cq, n), bytes, 32);
}

static int poll(struct mlx4_cq *cq, int ne, struct ibv_wc *wc)
{
	memset(wc, 0xa5, ne * sizeof(*wc));	/* catch unwritten fields */
	return mlx4_poll_cq(&cq->verbs_cq.cq, ne, wc);
}

/* A fresh copy each time: fake_qp() writes back what the QP holds. */
#define SMALL_CAP (&(struct ibv_qp_cap){ .max_send_wr = 8, .max_recv_wr = 8, \
					 .max_send_sge = 1, .max_recv_sge = 1 })

/* A signalled SEND at WQE 0. */
static void sends_signalled(struct mlx4_cq *cq, struct mlx4_qp *qp)
{
	struct ibv_wc wc[4];

	put_cqe(cq, 0, "00012345 00000000 00000000 00000000"
		       "00000000 00000000 00000000 0000004a");
	CHECK_EQ(poll(cq, 4, wc), 1);
	CHECK_EQ(wc[0].wr_id, 0x1000);
	CHECK_EQ(wc[0].status, IBV_WC_SUCCESS);
	CHECK_EQ(wc[0].opcode, IBV_WC_SEND);
	CHECK_EQ(wc[0].qp_num, 0x12345);
	CHECK_EQ(wc[0].wc_flags, 0);
	CHECK_EQ(wc[0].vendor_err, 0);
	CHECK_EQ(qp->sq.tail, 1);
	CHECK_BYTES(cq->set_ci_db, "00000001");
	CHECK_EQ(poll(cq, 4, wc), 0);
}

/* WQEs 1 and 2 were unsignalled: a CQE for WQE 3 retires them. */
static void sends_unsignalled(struct mlx4_cq *cq, struct mlx4_qp *qp)
{
	struct ibv_wc wc[4];

	put_cqe(cq, 1, "00012345 00000000 00000000 00000000"
		       "00000000 00000040 00030000 00000050");
	CHECK_EQ(poll(cq, 4, wc), 1);
	CHECK_EQ(wc[0].wr_id, 0x1003);
	CHECK_EQ(wc[0].opcode, IBV_WC_RDMA_READ);
	CHECK_EQ(wc[0].byte_len, 0x40);
	CHECK_EQ(qp->sq.tail, 4);
}

/* Several at once, ne limits how many. */
static void sends_several(struct mlx4_cq *cq, struct mlx4_qp *qp)
{
	struct ibv_wc wc[4];
	int i;

	qp->sq.head = 12;
	for (i = 0; i < 12; i++)
		qp->sq.wrid[i] = 0x2000 + i;
	put_cqe(cq, 2, "00012345 00000000 00000000 00000000"
		       "00000000 00000000 00040000 00000049");	/* write imm */
	put_cqe(cq, 3, "00012345 00000000 00000000 00000000"
		       "00000000 00000008 00050000 00000051");	/* CAS */
	put_cqe(cq, 4, "00012345 00000000 00000000 00000000"
		       "00000000 00000008 00060000 00000052");	/* FAA */
	put_cqe(cq, 5, "00012345 00000000 00000000 00000000"
		       "00000000 00000000 00070000 0000004b");	/* send imm */
	put_cqe(cq, 6, "00012345 00000000 00000000 00000000"
		       "00000000 00000000 00080000 00000058");	/* bind */
	put_cqe(cq, 7, "00012345 00000000 00000000 00000000"
		       "00000000 00000000 00090000 0000005b");	/* local inv */
	CHECK_EQ(poll(cq, 3, wc), 3);
	CHECK_EQ(wc[0].wr_id, 0x2004);
	CHECK_EQ(wc[0].opcode, IBV_WC_RDMA_WRITE);
	CHECK_EQ(wc[0].wc_flags, IBV_WC_WITH_IMM);
	CHECK_EQ(wc[1].wr_id, 0x2005);
	CHECK_EQ(wc[1].opcode, IBV_WC_COMP_SWAP);
	CHECK_EQ(wc[1].byte_len, 8);
	CHECK_EQ(wc[2].opcode, IBV_WC_FETCH_ADD);
	CHECK_BYTES(cq->set_ci_db, "00000005");
	CHECK_EQ(poll(cq, 4, wc), 3);
	CHECK_EQ(wc[0].opcode, IBV_WC_SEND);
	CHECK_EQ(wc[0].wc_flags, IBV_WC_WITH_IMM);
	CHECK_EQ(wc[1].opcode, IBV_WC_BIND_MW);
	CHECK_EQ(wc[1].wr_id, 0x2008);
	CHECK_EQ(wc[2].wr_id, 0x2009);
	CHECK_EQ(wc[2].opcode, IBV_WC_LOCAL_INV);
	CHECK_EQ(qp->sq.tail, 10);
	CHECK_BYTES(cq->set_ci_db, "00000008");
}

/*
 * Second pass: index 8 is slot 0 again.  The stale CQE there has owner
 * 0, which now means "device's"; one with owner 1 is ours.
 */
static void sends_second_pass(struct mlx4_cq *cq, struct mlx4_qp *qp)
{
	struct ibv_wc wc[4];

	CHECK_EQ(poll(cq, 4, wc), 0);
	put_cqe(cq, 8, "00012345 00000000 00000000 00000000"
		       "00000000 00000000 000a0000 0000004a");
	CHECK_EQ(cqe_at(cq, 8)->owner_sr_opcode, 0xca);
	CHECK_EQ(poll(cq, 4, wc), 1);
	CHECK_EQ(qp->sq.tail, 11);
}

/*
 * Past 2^16 WQEs: a CQE names its WQE by the counter's 16 bits, and the
 * queue's room is counted modulo 2^16.  WQEs 0xfffe to 0x10004
 * outstanding, a CQE for 0x10001 (slot 1).
 */
static void sends_past_2_16(struct mlx4_cq *cq, struct mlx4_qp *qp)
{
	struct ibv_wc wc[4];

	qp->sq.head = 0x10005;
	qp->sq.tail = 0xfffe;
	qp->sq.wrid[1] = 0x3001;
	put_cqe(cq, 9, "00012345 00000000 00000000 00000000"
		       "00000000 00000000 00010000 0000004a");
	CHECK_EQ(poll(cq, 4, wc), 1);
	CHECK_EQ(wc[0].wr_id, 0x3001);
	CHECK_EQ((uint16_t)(qp->sq.head - qp->sq.tail), 3);
}

static void test_sends(int cqe_size)
{
	struct fake_env env;
	struct mlx4_cq *cq;
	struct mlx4_qp *qp;
	struct ibv_wc wc[4];
	int i;

	fake_env_init(&env, cqe_size, 0);
	cq = fake_cq(&env, 8, 0x45);
	qp = fake_qp(&env, IBV_QPT_RC, SMALL_CAP, cq, cq, NULL, 0x12345, 0);

	/* The 64-byte format keeps the CQE in its second half. */
	CHECK(cq->cqe_base == (uint8_t *)cq->buf.buf + cqe_size - 32,
	      "CQE offset");
	if (cqe_size == 64)
		memset(cq->buf.buf, 0x5a, 32);	/* first half: never read */

	/* A new CQ belongs to the device. */
	CHECK_EQ(poll(cq, 4, wc), 0);

	for (i = 0; i < 5; i++)
		qp->sq.wrid[i] = 0x1000 + i;
	qp->sq.head = 5;

	sends_signalled(cq, qp);
	sends_unsignalled(cq, qp);
	sends_several(cq, qp);
	sends_second_pass(cq, qp);
	sends_past_2_16(cq, qp);

	fake_qp_free(qp);
	fake_cq_free(cq);
	fake_env_cleanup(&env);
}

static void test_receives(int cqe_size)
{
	struct fake_env env;
	struct mlx4_cq *cq;
	struct mlx4_qp *ud;
	struct ibv_wc wc[2];
	int i;

	fake_env_init(&env, cqe_size, 0);
	cq = fake_cq(&env, 8, 0x46);
	ud = fake_qp(&env, IBV_QPT_UD, SMALL_CAP, cq, cq, NULL, 0x222, 0);
	for (i = 0; i < 8; i++)
		ud->rq.wrid[i] = 0x3000 + i;
	ud->rq.head = 8;

	/*
	 * UD SEND with a GRH: pkey index 0x25, GRH bit, path bits 5, source
	 * QP 0x0abcde, SL 7, source LID 0x42, 0x100 bytes.
	 */
	put_cqe(cq, 0, "00000222 00000025 850abcde 70000042"
		       "00000000 00000100 00000000 00000001");
	CHECK_EQ(poll(cq, 2, wc), 1);
	CHECK_EQ(wc[0].wr_id, 0x3000);
	CHECK_EQ(wc[0].status, IBV_WC_SUCCESS);
	CHECK_EQ(wc[0].opcode, IBV_WC_RECV);
	CHECK_EQ(wc[0].byte_len, 0x100);
	CHECK_EQ(wc[0].qp_num, 0x222);
	CHECK_EQ(wc[0].src_qp, 0x0abcde);
	CHECK_EQ(wc[0].wc_flags, IBV_WC_GRH);
	CHECK_EQ(wc[0].pkey_index, 0x25);
	CHECK_EQ(wc[0].slid, 0x42);
	CHECK_EQ(wc[0].sl, 7);
	CHECK_EQ(wc[0].dlid_path_bits, 5);
	CHECK_EQ(wc[0].imm_data, 0);
	CHECK_EQ(wc[0].vendor_err, 0);

	/* SEND with immediate, no GRH: imm is raw, pkey index not there. */
	put_cqe(cq, 1, "00000222 cafef00d 00000077 f0000003"
		       "00000000 00000010 00010000 00000002");
	CHECK_EQ(poll(cq, 2, wc), 1);
	CHECK_EQ(wc[0].wr_id, 0x3001);
	CHECK_EQ(wc[0].opcode, IBV_WC_RECV);
	CHECK_EQ(wc[0].wc_flags, IBV_WC_WITH_IMM);
	CHECK_EQ(be32toh(wc[0].imm_data), 0xcafef00d);
	CHECK_EQ(wc[0].pkey_index, 0);
	CHECK_EQ(wc[0].sl, 15);
	CHECK_EQ(wc[0].slid, 3);
	CHECK_EQ(wc[0].src_qp, 0x77);
	CHECK_EQ(wc[0].dlid_path_bits, 0);

	/* RDMA write with immediate. */
	put_cqe(cq, 2, "00000222 01020304 00000000 00000000"
		       "00000000 00000400 00020000 00000000");
	CHECK_EQ(poll(cq, 2, wc), 1);
	CHECK_EQ(wc[0].opcode, IBV_WC_RECV_RDMA_WITH_IMM);
	CHECK_EQ(wc[0].wc_flags, IBV_WC_WITH_IMM);
	CHECK_EQ(be32toh(wc[0].imm_data), 0x01020304);
	CHECK_EQ(wc[0].byte_len, 0x400);

	/* SEND with invalidate: the rkey in host order. */
	put_cqe(cq, 3, "00000222 00abcdef 00000000 00000000"
		       "00000000 00000000 00030000 00000003");
	CHECK_EQ(poll(cq, 2, wc), 1);
	CHECK_EQ(wc[0].opcode, IBV_WC_RECV);
	CHECK_EQ(wc[0].wc_flags, IBV_WC_WITH_INV);
	CHECK_EQ(wc[0].invalidated_rkey, 0x00abcdef);
	CHECK_EQ(ud->rq.tail, 4);

	fake_qp_free(ud);
	fake_cq_free(cq);
	fake_env_cleanup(&env);
}

static void test_errors(void)
{
	static const struct {
		uint8_t syndrome;
		enum ibv_wc_status status;
	} map[] = {
		{ 0x01, IBV_WC_LOC_LEN_ERR },
		{ 0x02, IBV_WC_LOC_QP_OP_ERR },
		{ 0x04, IBV_WC_LOC_PROT_ERR },
		{ 0x05, IBV_WC_WR_FLUSH_ERR },
		{ 0x06, IBV_WC_MW_BIND_ERR },
		{ 0x10, IBV_WC_BAD_RESP_ERR },
		{ 0x11, IBV_WC_LOC_ACCESS_ERR },
		{ 0x12, IBV_WC_REM_INV_REQ_ERR },
		{ 0x13, IBV_WC_REM_ACCESS_ERR },
		{ 0x14, IBV_WC_REM_OP_ERR },
		{ 0x15, IBV_WC_RETRY_EXC_ERR },
		{ 0x16, IBV_WC_RNR_RETRY_EXC_ERR },
		{ 0x22, IBV_WC_REM_ABORT_ERR },
		{ 0x3f, IBV_WC_GENERAL_ERR },
	};
	struct fake_env env;
	struct mlx4_cq *cq;
	struct mlx4_qp *qp;
	struct ibv_wc wc;
	unsigned int i, n = 0;
	char hex[80];

	fake_env_init(&env, 32, 0);
	cq = fake_cq(&env, 64, 0x47);
	qp = fake_qp(&env, IBV_QPT_RC, SMALL_CAP, cq, cq, NULL, 0x333, 0);

	for (i = 0; i < ARRAY_SIZE(map); i++) {
		int is_send = i & 1;
		struct mlx4_wq *wq = is_send ? &qp->sq : &qp->rq;

		wq->wrid[wq->head & wq->mask] = 0x4000 + i;
		sprintf(hex, "00000333 00000000 00000000 00000000"
			     "00000000 00000000 %04x%02x%02x 000000%02x",
			wq->head & 0xffff, 0x80 + i, map[i].syndrome,
			is_send ? 0x5e : 0x1e);
		wq->head++;
		put_cqe(cq, n++, hex);

		CHECK_EQ(poll(cq, 1, &wc), 1);
		CHECK_EQ(wc.status, map[i].status);
		CHECK_EQ(wc.vendor_err, 0x80 + i);
		CHECK_EQ(wc.wr_id, 0x4000 + i);
		CHECK_EQ(wc.qp_num, 0x333);
	}

	/* A CQE for a QP this context does not know: consumed, reported. */
	put_cqe(cq, n++, "00000999 00000000 00000000 00000000"
			 "00000000 00000000 00000000 0000004a");
	CHECK_EQ(poll(cq, 1, &wc), -1);
	CHECK_EQ(cq->cons_index, n);
	CHECK_EQ(poll(cq, 1, &wc), 0);

	fake_qp_free(qp);
	fake_cq_free(cq);
	fake_env_cleanup(&env);
}

/*
 * A plain receive queue completes in order: its CQEs retire the tail,
 * whatever their wqe_index says (a flush CQE's means nothing).
 */
static void test_recv_in_order(void)
{
	static const char *index_hex[] = { "ffff", "0002", "1234" };
	struct fake_env env;
	struct mlx4_cq *cq;
	struct mlx4_qp *qp;
	struct ibv_wc wc;
	char hex[80];
	int i;

	fake_env_init(&env, 32, 0);
	cq = fake_cq(&env, 8, 0x48);
	qp = fake_qp(&env, IBV_QPT_RC, SMALL_CAP, cq, cq, NULL, 0x444, 0);
	for (i = 0; i < 3; i++)
		qp->rq.wrid[i] = 0x6000 + i;
	qp->rq.head = 3;

	for (i = 0; i < 3; i++) {
		/* Receive flush: syndrome 5, vendor 0xf9, opcode 0x1e. */
		sprintf(hex, "00000444 00000000 00000000 00000000"
			     "00000000 00000000 %sf905 0000001e", index_hex[i]);
		put_cqe(cq, i, hex);
		CHECK_EQ(poll(cq, 1, &wc), 1);
		CHECK_EQ(wc.status, IBV_WC_WR_FLUSH_ERR);
		CHECK_EQ(wc.wr_id, 0x6000 + i);
	}
	CHECK_EQ(qp->rq.tail, 3);

	fake_qp_free(qp);
	fake_cq_free(cq);
	fake_env_cleanup(&env);
}

/*
 * IBV_WC_IP_CSUM_OK: on a UD QP with checksum offload (InfiniBand), when
 * the CQE's status says IPv4, IP header checksum good and TCP/UDP
 * checksum good (bits 22, 28, 2); never on an RC QP.  ibv_poll_cq and
 * the extended interface alike.
 */
static void test_rx_csum(void)
{
	static const struct {
		const char *status;
		int ok;
	} cases[] = {
		{ "10400004", 1 }, { "10400000", 0 }, { "00400004", 0 },
		{ "10000004", 0 }, { "ffffffff", 1 },
	};
	struct ibv_poll_cq_attr pattr = {};
	struct fake_env env;
	struct mlx4_cq *cq;
	struct mlx4_qp *ud, *rc;
	struct ibv_cq_ex *ex;
	struct ibv_wc wc;
	unsigned int i, n = 0;
	char hex[80];

	fake_env_init(&env, 32, 0);
	cq = fake_cq(&env, 16, 0x4c);
	ud = fake_qp(&env, IBV_QPT_UD, SMALL_CAP, cq, cq, NULL, 0x77, 0);
	rc = fake_qp(&env, IBV_QPT_RC, SMALL_CAP, cq, cq, NULL, 0x78, 0);
	ud->rq.head = rc->rq.head = 8;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		sprintf(hex, "00000077 00000000 00000000 00000000"
			     "%s 00000040 00000000 00000001", cases[i].status);
		put_cqe(cq, n++, hex);
		CHECK_EQ(poll(cq, 1, &wc), 1);
		CHECK_EQ(wc.wc_flags, cases[i].ok ? IBV_WC_IP_CSUM_OK : 0);
	}
	put_cqe(cq, n++, "00000078 00000000 00000000 00000000"
			 "10400004 00000040 00000000 00000001");
	CHECK_EQ(poll(cq, 1, &wc), 1);
	CHECK_EQ(wc.qp_num, 0x78);
	CHECK_EQ(wc.wc_flags, 0);

	mlx4_cq_fill_ex_ops(cq, 0);
	ex = &cq->verbs_cq.cq_ex;
	put_cqe(cq, n++, "00000077 00000000 00000000 00000000"
			 "10400004 00000040 00000000 00000001");
	CHECK_EQ(ex->start_poll(ex, &pattr), 0);
	CHECK_EQ(ex->read_wc_flags(ex), IBV_WC_IP_CSUM_OK);
	ex->end_poll(ex);

	fake_qp_free(rc);
	fake_qp_free(ud);
	fake_cq_free(cq);
	fake_env_cleanup(&env);
}

static void test_srq_and_xrc(void)
{
	struct fake_env env;
	struct mlx4_cq *cq;
	struct mlx4_srq *srq, *xsrq;
	struct mlx4_qp *qp;
	struct ibv_wc wc;

	fake_env_init(&env, 32, 0);
	cq = fake_cq(&env, 8, 0x48);
	srq = fake_srq(&env, 7, 1, 0x50, 0, NULL);
	xsrq = fake_srq(&env, 7, 1, 0x51, 1, cq);
	qp = fake_qp(&env, IBV_QPT_RC, SMALL_CAP, cq, cq, srq, 0x444, 0);

	/* SRQ receive: wqe_index is the WQE's place, freed behind tail. */
	srq->wrid[5] = 0x5005;
	put_cqe(cq, 0, "00000444 00000000 00000000 00000000"
		       "00000000 00000020 00050000 00000001");
	CHECK_EQ(poll(cq, 1, &wc), 1);
	CHECK_EQ(wc.wr_id, 0x5005);
	CHECK_EQ(wc.opcode, IBV_WC_RECV);
	CHECK_EQ(wc.byte_len, 0x20);
	CHECK_EQ(srq->tail, 5);
	CHECK_EQ(be16toh(((struct mlx4_wqe_srq_next_seg *)
			  ((uint8_t *)srq->buf.buf + (7 << srq->wqe_shift)))
			 ->next_wqe_index), 5);

	/*
	 * XRC target: the QPN has bit 23 and is none of ours; the SRQ
	 * number is in the low 24 bits of g_mlpath_rqpn.
	 */
	xsrq->wrid[2] = 0x5102;
	put_cqe(cq, 1, "00800123 00000000 00000051 00000000"
		       "00000000 00000040 00020000 00000001");
	CHECK_EQ(poll(cq, 1, &wc), 1);
	CHECK_EQ(wc.wr_id, 0x5102);
	CHECK_EQ(wc.qp_num, 0x800123);
	CHECK_EQ(wc.byte_len, 0x40);
	CHECK_EQ(xsrq->tail, 2);

	/* An XRC SRQ number nobody created. */
	put_cqe(cq, 2, "00800123 00000000 00000052 00000000"
		       "00000000 00000040 00020000 00000001");
	CHECK_EQ(poll(cq, 1, &wc), -1);

	fake_qp_free(qp);
	fake_srq_free(&env, xsrq);
	fake_srq_free(&env, srq);
	fake_cq_free(cq);
	fake_env_cleanup(&env);
}

/* A new ring is the device's wherever the consumer meets it next. */
static void test_init_owner(void)
{
	uint8_t ring[8 * 32];
	int i;

	/* From index 0: every owner bit set. */
	mlx4_cq_init_buf(ring, 8, 32, 0);
	for (i = 0; i < 8; i++)
		CHECK_EQ(ring[i * 32 + 31], 0x80);

	/*
	 * From index 13 (slot 5, second pass): slots 5..7 are met at 13..15,
	 * on a pass of parity 1, so owner 0 is the device's; slots 0..4 at
	 * 16..20, parity 0, owner 1.
	 */
	mlx4_cq_init_buf(ring, 8, 32, 13);
	for (i = 0; i < 8; i++)
		CHECK_EQ(ring[i * 32 + 31], i >= 5 ? 0 : 0x80);
}

static void test_arm(void)
{
	struct fake_env env;
	struct mlx4_cq *cq;

	fake_env_init(&env, 32, 0);
	cq = fake_cq(&env, 8, 0x45);
	mlx4_cq_set_cons_index(cq, 3);

	/* sn 1, "solicited only", CI 3: record, then one 64-bit write. */
	CHECK_EQ(mlx4_arm_cq(&cq->verbs_cq.cq, 1), 0);
	CHECK_BYTES(cq->arm_db, "11000003");
	CHECK_BYTES(env.uar + MLX4_CQ_DOORBELL, "11000045 00000003");

	/* An event moves the sequence number on. */
	mlx4_cq_event(&cq->verbs_cq.cq);
	mlx4_cq_set_cons_index(cq, 0x1000005);	/* only 24 bits go to the device */
	CHECK_EQ(mlx4_arm_cq(&cq->verbs_cq.cq, 0), 0);
	CHECK_BYTES(cq->arm_db, "22000005");
	CHECK_BYTES(env.uar + MLX4_CQ_DOORBELL, "22000045 00000005");

	fake_cq_free(cq);
	fake_env_cleanup(&env);
}

static void test_resize_copy(int cqe_size)
{
	struct fake_env env;
	struct mlx4_cq *cq;
	struct mlx4_qp *qp;
	struct mlx4_buf new_buf;
	struct ibv_wc wc[4];
	uint8_t *new_cqe;

	fake_env_init(&env, cqe_size, 0);
	cq = fake_cq(&env, 4, 0x49);
	qp = fake_qp(&env, IBV_QPT_RC, SMALL_CAP, cq, cq, NULL, 0x555, 0);
	qp->sq.head = 8;
	qp->sq.wrid[2] = 0x602;
	qp->sq.wrid[3] = 0x603;
	qp->sq.wrid[4] = 0x604;

	/* Consumer at 2; CQEs at 2 and 3; the device's RESIZE CQE at 4. */
	mlx4_cq_set_cons_index(cq, 2);
	qp->sq.tail = 2;
	put_cqe(cq, 2, "00000555 00000000 00000000 00000000"
		       "00000000 00000000 00020000 0000004a");
	put_cqe(cq, 3, "00000555 00000000 00000000 00000000"
		       "00000000 00000000 00030000 0000004a");
	put_cqe(cq, 4, "00000000 00000000 00000000 00000000"
		       "00000000 00000000 00000000 00000016");

	CHECK_EQ(mlx4_alloc_buf(&new_buf, 16 * cqe_size, 4096), 0);
	mlx4_cq_init_buf(new_buf.buf, 16, cqe_size, cq->cons_index + 1);
	CHECK_EQ(mlx4_cq_resize_copy_cqes(cq, new_buf.buf, 16), 0);
	/* The RESIZE CQE is consumed: the next index is 3. */
	CHECK_EQ(cq->cons_index, 3);

	/* Old 2 and 3 now sit at 3 and 4, owner bits for a ring of 16. */
	new_cqe = (uint8_t *)new_buf.buf + 3 * cqe_size + cqe_size - 32;
	CHECK_BYTES(new_cqe, "00000555 00000000 00000000 00000000"
			     "00000000 00000000 00020000 0000004a");
	CHECK_BYTES(new_cqe + cqe_size,
		    "00000555 00000000 00000000 00000000"
		    "00000000 00000000 00030000 0000004a");
	CHECK_EQ(new_cqe[2 * cqe_size + 31], 0x80);	/* 5: device's */

	/* Switch over as mlx4_resize_cq does, then poll in order. */
	mlx4_cq_switch_ring(cq, &new_buf, 16);
	put_cqe(cq, 5, "00000555 00000000 00000000 00000000"
		       "00000000 00000000 00040000 0000004a");
	CHECK_EQ(poll(cq, 4, wc), 3);
	CHECK_EQ(wc[0].wr_id, 0x602);
	CHECK_EQ(wc[1].wr_id, 0x603);
	CHECK_EQ(wc[2].wr_id, 0x604);
	CHECK_BYTES(cq->set_ci_db, "00000006");

	fake_qp_free(qp);
	fake_cq_free(cq);
	fake_env_cleanup(&env);
}

static void test_clean(void)
{
	struct fake_env env;
	struct mlx4_cq *cq;
	struct mlx4_qp *a, *b;
	struct ibv_wc wc[8];
	char hex[80];
	int i;

	fake_env_init(&env, 32, 0);
	cq = fake_cq(&env, 8, 0x4a);
	a = fake_qp(&env, IBV_QPT_RC, SMALL_CAP, cq, cq, NULL, 0xa, 0);
	b = fake_qp(&env, IBV_QPT_RC, SMALL_CAP, cq, cq, NULL, 0xb, 0);
	a->sq.head = b->sq.head = 8;
	for (i = 0; i < 8; i++)
		b->sq.wrid[i] = 0xb00 + i;

	/*
	 * Consumer at 6 (so the ring wraps): a b a b b a at 6..11.  Slots
	 * 0..5 hold consumed CQEs of the first pass, owner bit 0.
	 */
	for (i = 0; i < 6; i++)
		cqe_at(cq, i)->owner_sr_opcode = 0;
	mlx4_cq_set_cons_index(cq, 6);
	for (i = 0; i < 6; i++) {
		int is_b = (0x1a >> i) & 1;	/* 0 1 0 1 1 0 */
		static int nb;

		sprintf(hex, "0000000%c 00000000 00000000 00000000"
			     "00000000 00000000 %04x0000 0000004a",
			is_b ? 'b' : 'a', is_b ? nb++ : 0);
		put_cqe(cq, 6 + i, hex);
	}

	mlx4_cq_clean(cq, 0xa, NULL);
	/* Three of a's went: the consumer skips them, b's keep their order. */
	CHECK_EQ(cq->cons_index, 9);
	CHECK_BYTES(cq->set_ci_db, "00000009");
	CHECK_EQ(poll(cq, 8, wc), 3);
	CHECK_EQ(wc[0].wr_id, 0xb00);
	CHECK_EQ(wc[1].wr_id, 0xb01);
	CHECK_EQ(wc[2].wr_id, 0xb02);
	CHECK_EQ(wc[2].qp_num, 0xb);
	CHECK_EQ(poll(cq, 8, wc), 0);

	fake_qp_free(a);
	fake_qp_free(b);
	fake_cq_free(cq);
	fake_env_cleanup(&env);
}

static void test_poll_ex(void)
{
	struct ibv_cq_init_attr_ex attr = {
		.wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM |
			    IBV_WC_EX_WITH_QP_NUM | IBV_WC_EX_WITH_SRC_QP |
			    IBV_WC_EX_WITH_SLID | IBV_WC_EX_WITH_SL |
			    IBV_WC_EX_WITH_DLID_PATH_BITS,
	};
	struct ibv_poll_cq_attr pattr = {};
	struct fake_env env;
	struct mlx4_cq *cq;
	struct mlx4_qp *qp;
	struct ibv_cq_ex *ex;

	fake_env_init(&env, 64, 0);
	cq = fake_cq(&env, 8, 0x4b);
	qp = fake_qp(&env, IBV_QPT_UD, SMALL_CAP, cq, cq, NULL, 0x66, 0);
	mlx4_cq_fill_ex_ops(cq, attr.wc_flags);
	ex = &cq->verbs_cq.cq_ex;
	qp->rq.head = 2;
	qp->rq.wrid[0] = 0x700;
	qp->rq.wrid[1] = 0x701;
	qp->sq.head = 1;
	qp->sq.wrid[0] = 0x800;

	CHECK_EQ(ex->start_poll(ex, &pattr), ENOENT);

	put_cqe(cq, 0, "00000066 12345678 83000099 30000011"
		       "00000000 00000200 00000000 00000002");
	put_cqe(cq, 1, "00000066 00000000 00000000 00000000"
		       "00000000 00000000 00002213 0000005e");	/* error */
	CHECK_EQ(ex->start_poll(ex, &pattr), 0);
	CHECK_EQ(ex->wr_id, 0x700);
	CHECK_EQ(ex->status, IBV_WC_SUCCESS);
	CHECK_EQ(ex->read_opcode(ex), IBV_WC_RECV);
	CHECK_EQ(ex->read_byte_len(ex), 0x200);
	CHECK_EQ(be32toh(ex->read_imm_data(ex)), 0x12345678);
	CHECK_EQ(ex->read_qp_num(ex), 0x66);
	CHECK_EQ(ex->read_src_qp(ex), 0x99);
	CHECK_EQ(ex->read_wc_flags(ex), IBV_WC_WITH_IMM | IBV_WC_GRH);
	CHECK_EQ(ex->read_slid(ex), 0x11);
	CHECK_EQ(ex->read_sl(ex), 3);
	CHECK_EQ(ex->read_dlid_path_bits(ex), 3);
	CHECK_EQ(ex->read_vendor_err(ex), 0);

	CHECK_EQ(ex->next_poll(ex), 0);
	CHECK_EQ(ex->wr_id, 0x800);
	CHECK_EQ(ex->status, IBV_WC_REM_ACCESS_ERR);
	CHECK_EQ(ex->read_vendor_err(ex), 0x22);

	CHECK_EQ(ex->next_poll(ex), ENOENT);
	ex->end_poll(ex);
	CHECK_BYTES(cq->set_ci_db, "00000002");
	CHECK_EQ(cq->lock.locked, 0);

	/*
	 * After an error, the status of a success reads as one again,
	 * whether the CQE before it was polled by start_poll or by
	 * ibv_poll_cq; sends of WQEs 1 to 4, WQE 2's an error.
	 */
	qp->sq.head = 5;
	qp->sq.wrid[1] = 0x801;
	qp->sq.wrid[2] = 0x802;
	qp->sq.wrid[3] = 0x803;
	qp->sq.wrid[4] = 0x804;
	put_cqe(cq, 2, "00000066 00000000 00000000 00000000"
		       "00000000 00000000 00010000 0000004a");
	put_cqe(cq, 3, "00000066 00000000 00000000 00000000"
		       "00000000 00000000 00022213 0000005e");	/* error */
	put_cqe(cq, 4, "00000066 00000000 00000000 00000000"
		       "00000000 00000000 00030000 0000004a");
	put_cqe(cq, 5, "00000066 00000000 00000000 00000000"
		       "00000000 00000000 00040000 0000004a");
	CHECK(ex->start_poll(ex, &pattr) == 0 && ex->wr_id == 0x801 &&
	      ex->status == IBV_WC_SUCCESS, "a success after an error");
	CHECK(ex->next_poll(ex) == 0 && ex->wr_id == 0x802 &&
	      ex->status == IBV_WC_REM_ACCESS_ERR, "then an error");
	ex->end_poll(ex);
	{
		struct ibv_wc wc;

		CHECK(poll(cq, 1, &wc) == 1 && wc.wr_id == 0x803 &&
		      wc.status == IBV_WC_SUCCESS,
		      "a success by ibv_poll_cq after it");
	}
	CHECK(ex->start_poll(ex, &pattr) == 0 && ex->wr_id == 0x804 &&
	      ex->status == IBV_WC_SUCCESS, "and one by start_poll after that");
	ex->end_poll(ex);
	CHECK_BYTES(cq->set_ci_db, "00000006");

	fake_qp_free(qp);
	fake_cq_free(cq);
	fake_env_cleanup(&env);
}

/*
 * A CQ created for completion timestamps: the adapter writes its 48-bit
 * clock where SL and SLID would be, bits 47..16 big-endian in bytes
 * 12..15, bits 15..8 and 7..0 in bytes 29 and 30.  The extended reader
 * puts them together; ibv_poll_cq() reports no SL or SLID for them; a CQ
 * cannot have both.
 */
static void test_timestamps(void)
{
	struct ibv_cq_init_attr_ex attr = {
		.cqe = 8,
		.wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_QP_NUM |
			    IBV_WC_EX_WITH_COMPLETION_TIMESTAMP,
	};
	struct ibv_poll_cq_attr pattr = {};
	struct fake_env env;
	struct mlx4_cq *cq;
	struct mlx4_qp *qp;
	struct ibv_cq_ex *ex;
	struct ibv_wc wc[2];

	fake_env_init(&env, 32, 0);

	/* Refused before the kernel is asked. */
	attr.wc_flags |= IBV_WC_EX_WITH_SL;
	errno = 0;
	CHECK(!mlx4_create_cq_ex(&env.ctx->ibv_ctx.context, &attr) &&
	      errno == EOPNOTSUPP, "timestamps and SL: errno %d", errno);
	attr.wc_flags ^= IBV_WC_EX_WITH_SL | IBV_WC_EX_WITH_SLID;
	errno = 0;
	CHECK(!mlx4_create_cq_ex(&env.ctx->ibv_ctx.context, &attr) &&
	      errno == EOPNOTSUPP, "timestamps and SLID: errno %d", errno);
	attr.wc_flags &= ~(uint64_t)IBV_WC_EX_WITH_SLID;

	cq = fake_cq(&env, 8, 0x4c);
	qp = fake_qp(&env, IBV_QPT_RC, SMALL_CAP, cq, cq, NULL, 0x77, 0);
	mlx4_cq_fill_ex_ops(cq, attr.wc_flags);
	ex = &cq->verbs_cq.cq_ex;
	CHECK(ex->read_completion_ts != NULL, "read_completion_ts");
	CHECK(ex->read_slid == NULL && ex->read_sl == NULL, "no SLID, SL");
	qp->rq.head = 2;
	qp->rq.wrid[0] = 0x900;
	qp->rq.wrid[1] = 0x901;
	qp->sq.head = 2;
	qp->sq.wrid[0] = 0xa00;
	qp->sq.wrid[1] = 0xa01;

	/*
	 * A receive, then a send whose time has bit 47 set, then one whose
	 * low 16 bits are 0: the adapter's top 32 bits then lag by one
	 * (mlx4_en's mlx4_en_get_cqe_ts() adds !lo).
	 */
	put_cqe(cq, 0, "00000077 00000000 00000000 12345678"
		       "00000000 00000040 00000000 009abc01");
	put_cqe(cq, 1, "00000077 00000000 00000000 fedcba98"
		       "00000000 00000000 00000000 0076544a");
	CHECK_EQ(ex->start_poll(ex, &pattr), 0);
	CHECK_EQ(ex->wr_id, 0x900);
	CHECK_EQ(ex->read_byte_len(ex), 0x40);
	CHECK_EQ(ex->read_completion_ts(ex), 0x123456789abcULL);
	CHECK_EQ(ex->next_poll(ex), 0);
	CHECK_EQ(ex->wr_id, 0xa00);
	CHECK_EQ(ex->read_opcode(ex), IBV_WC_SEND);
	CHECK_EQ(ex->read_completion_ts(ex), 0xfedcba987654ULL);
	put_cqe(cq, 2, "00000077 00000000 00000000 00012344"
		       "00000000 00000000 00010000 0000004a");
	CHECK_EQ(ex->next_poll(ex), 0);
	CHECK_EQ(ex->wr_id, 0xa01);
	CHECK_EQ(ex->read_completion_ts(ex), 0x123450000ULL);
	CHECK_EQ(ex->next_poll(ex), ENOENT);
	ex->end_poll(ex);

	/* The same CQ through ibv_poll_cq(): the time is no SLID or SL. */
	put_cqe(cq, 3, "00000077 00000000 00000000 f2345678"
		       "00000000 00000020 00010000 009abc01");
	CHECK_EQ(poll(cq, 2, wc), 1);
	CHECK_EQ(wc[0].wr_id, 0x901);
	CHECK_EQ(wc[0].opcode, IBV_WC_RECV);
	CHECK_EQ(wc[0].byte_len, 0x20);
	CHECK_EQ(wc[0].slid, 0);
	CHECK_EQ(wc[0].sl, 0);

	/*
	 * The 48-bit clock's wrap: top bits all ones and low 16 bits 0
	 * read as time 0 (the carry leaves the 48 bits), not 2^48.
	 */
	qp->sq.head = 3;
	qp->sq.wrid[2] = 0xa02;
	put_cqe(cq, 4, "00000077 00000000 00000000 ffffffff"
		       "00000000 00000000 00020000 0000004a");
	CHECK_EQ(ex->start_poll(ex, &pattr), 0);
	CHECK_EQ(ex->wr_id, 0xa02);
	CHECK_EQ(ex->read_completion_ts(ex), 0);
	ex->end_poll(ex);

	fake_qp_free(qp);
	fake_cq_free(cq);
	fake_env_cleanup(&env);
}

/*
 * The kernel's part of creating and destroying a CQ, doubled, so that
 * mlx4_create_cq_ex() runs whole: it answers yes and keeps the comp_mask
 * it was passed.
 */
static uint32_t kernel_cq_comp_mask;

int ibv_cmd_create_cq_ex(struct ibv_context *context,
			 const struct ibv_cq_init_attr_ex *cq_attr,
			 PABI65(struct verbs_create_cq_prov_attr *prov_attr,)
			 struct verbs_cq *cq, struct ibv_create_cq_ex *cmd,
			 size_t cmd_size,
			 struct ib_uverbs_ex_create_cq_resp *resp,
			 size_t resp_size, uint32_t cmd_flags)
{
	(void)cmd;
	(void)cmd_size;
	(void)resp;
	(void)resp_size;
	(void)cmd_flags;
	PABI65((void)prov_attr;)
	kernel_cq_comp_mask = cq_attr->comp_mask;
	cq->cq.context = context;
	return 0;
}

int ibv_cmd_destroy_cq(struct ibv_cq *cq)
{
	(void)cq;
	return 0;
}

/*
 * With its lock word held, as by another thread, a CQ one thread polls
 * still gives its completions, by ibv_poll_cq and by start_poll: a
 * lock taken would spin until the alarm ends the test.
 */
static void poll_with_lock_held(struct fake_env *env, struct ibv_cq_ex *ex)
{
	struct mlx4_cq *cq = to_mcq_ex(ex);
	struct mlx4_qp *qp = fake_qp(env, IBV_QPT_RC, SMALL_CAP, cq, cq, NULL,
				     0x31, 0);
	struct ibv_poll_cq_attr pattr = {};
	struct ibv_wc wc;

	qp->sq.head = 2;
	qp->sq.wrid[0] = 0x610;
	qp->sq.wrid[1] = 0x611;
	put_cqe(cq, 0, "00000031 00000000 00000000 00000000"
		       "00000000 00000000 00000000 0000004a");
	put_cqe(cq, 1, "00000031 00000000 00000000 00000000"
		       "00000000 00000000 00010000 0000004a");
	alarm(10);
	cq->lock.locked = 1;
	CHECK(poll(cq, 1, &wc) == 1 && wc.wr_id == 0x610,
	      "ibv_poll_cq with the lock word held");
	cq->lock.locked = 1;
	CHECK(ex->start_poll(ex, &pattr) == 0 && ex->wr_id == 0x611,
	      "start_poll with the lock word held");
	ex->end_poll(ex);
	alarm(0);
	fake_qp_free(qp);
}

/*
 * CQs created single-threaded, or on a parent domain with a thread
 * domain, take no lock; others do.  The parent domain stays the
 * provider's: the kernel is not told of it.
 */
static void test_single_threaded_cqs(void)
{
	struct ibv_td_init_attr td_attr = {};
	struct ibv_cq_init_attr_ex plain = { .cqe = 7 };
	struct ibv_cq_init_attr_ex flagged = {
		.cqe = 7, .comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS,
		.flags = IBV_CREATE_CQ_ATTR_SINGLE_THREADED,
	};
	struct ibv_cq_init_attr_ex on_td = {
		.cqe = 7, .comp_mask = IBV_CQ_INIT_ATTR_MASK_PD,
	};
	struct ibv_parent_domain_init_attr pd_attr = {};
	struct ibv_context *ibctx;
	struct ibv_cq_ex *cq[3];
	struct fake_env env;
	struct ibv_td *td;
	int i;

	fake_env_init(&env, 32, 0);
	ibctx = &env.ctx->ibv_ctx.context;
	td = mlx4_alloc_td(ibctx, &td_attr);
	pd_attr.pd = &env.pd.ibv_pd;
	pd_attr.td = td;
	on_td.parent_domain = mlx4_alloc_parent_domain(ibctx, &pd_attr);

	cq[0] = mlx4_create_cq_ex(ibctx, &plain);
	cq[1] = mlx4_create_cq_ex(ibctx, &flagged);
	kernel_cq_comp_mask = ~0U;
	cq[2] = mlx4_create_cq_ex(ibctx, &on_td);
	CHECK(cq[0] && cq[1] && cq[2], "CQs created");
	if (!cq[0] || !cq[1] || !cq[2])
		return;
	CHECK_EQ(kernel_cq_comp_mask, 0);
	CHECK(!to_mcq_ex(cq[0])->lock.single_threaded &&
	      to_mcq_ex(cq[1])->lock.single_threaded &&
	      to_mcq_ex(cq[2])->lock.single_threaded,
	      "locked: the plain CQ only");
	CHECK_EQ(mlx4_dealloc_pd(on_td.parent_domain), EBUSY);

	poll_with_lock_held(&env, cq[1]);
	poll_with_lock_held(&env, cq[2]);

	for (i = 0; i < 3; i++)
		CHECK_EQ(mlx4_destroy_cq(ibv_cq_ex_to_cq(cq[i])), 0);
	CHECK_EQ(mlx4_dealloc_pd(on_td.parent_domain), 0);
	CHECK_EQ(mlx4_dealloc_td(td), 0);
	fake_env_cleanup(&env);
}

static void test_sends_cqe32(void) { test_sends(32); }
static void test_sends_cqe64(void) { test_sends(64); }
static void test_receives_cqe32(void) { test_receives(32); }
static void test_receives_cqe64(void) { test_receives(64); }
static void test_resize_copy_cqe32(void) { test_resize_copy(32); }
static void test_resize_copy_cqe64(void) { test_resize_copy(64); }

/*
 * The cases, in the order a full run takes them.  Each sets up its own
 * context, queues and CQs, so each runs alone as it does in the full run.
 */
static const struct test_case cases[] = {
	{ "sends_cqe32", test_sends_cqe32, "send completions, 32-byte CQEs" },
	{ "sends_cqe64", test_sends_cqe64, "send completions, 64-byte CQEs" },
	{ "receives_cqe32", test_receives_cqe32,
	  "receive completions, 32-byte CQEs" },
	{ "receives_cqe64", test_receives_cqe64,
	  "receive completions, 64-byte CQEs" },
	{ "errors", test_errors, "each error syndrome's status" },
	{ "recv_in_order", test_recv_in_order,
	  "a receive queue's CQEs retire its tail in order" },
	{ "rx_csum", test_rx_csum, "IBV_WC_IP_CSUM_OK" },
	{ "srq_and_xrc", test_srq_and_xrc, "SRQ and XRC receives" },
	{ "init_owner", test_init_owner, "a new ring's owner bits" },
	{ "arm", test_arm, "arming a CQ: the doorbell record and register" },
	{ "resize_copy_cqe32", test_resize_copy_cqe32,
	  "resize copies the CQEs, 32-byte CQEs" },
	{ "resize_copy_cqe64", test_resize_copy_cqe64,
	  "resize copies the CQEs, 64-byte CQEs" },
	{ "clean", test_clean, "a destroyed QP's CQEs cleaned from a CQ" },
	{ "poll_ex", test_poll_ex, "the extended polling interface" },
	{ "timestamps", test_timestamps, "completion timestamps" },
	{ "single_threaded_cqs", test_single_threaded_cqs,
	  "single-threaded CQs polled with their lock held" },
};

int main(int argc, char **argv)
{
	int ret = cases_select(cases, CASES_N(cases), argc, argv, 1);

	if (ret >= 0)
		return ret;
	cases_run(cases, CASES_N(cases));
	return tap_finish();
}
