/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Work queue entries as the provider writes them, compared byte by byte
 * with WQEs worked out by hand from the ConnectX-3 formats: send opcodes
 * on each transport, inline data split at 64-byte boundaries, owner bits
 * on later passes, stamping, BlueFlame, doorbells, receive and SRQ WQEs,
 * and the work requests that must be refused without touching the ring.
 */
#include <config.h>

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "provider-fake.h"

static struct fake_env env;
static struct mlx4_cq *cq;

static uint8_t *send_wqe(struct mlx4_qp *qp, unsigned int n)
{
	return (uint8_t *)qp->sq.buf + ((n & qp->sq.mask) << qp->sq.wqe_shift);
}

static uint8_t *recv_wqe(struct mlx4_qp *qp, unsigned int n)
{
	return (uint8_t *)qp->rq.buf + ((n & qp->rq.mask) << qp->rq.wqe_shift);
}

static uint32_t uar_send_doorbell(void)
{
	uint32_t v;

	memcpy(&v, env.uar + MLX4_SEND_DOORBELL, 4);
	return v;
}

static void clear_doorbells(void)
{
	memset(env.uar, 0, 4096);
	if (env.bf)
		memset(env.bf, 0, 4096);
}

static struct mlx4_qp *rc_qp(uint32_t qpn, uint32_t max_sge, uint32_t max_inline)
{
	struct ibv_qp_cap cap = {
		.max_send_wr = 4, .max_recv_wr = 4,
		.max_send_sge = max_sge, .max_recv_sge = 1,
		.max_inline_data = max_inline,
	};

	return fake_qp(&env, IBV_QPT_RC, &cap, cq, cq, NULL, qpn, 0);
}

static int post1(struct mlx4_qp *qp, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad = NULL;
	int ret = mlx4_post_send(&qp->verbs_qp.qp, wr, &bad);

	CHECK(ret || !bad, "bad_wr set on success");
	return ret;
}

static void test_rc_send(void)
{
	struct ibv_qp_cap cap = {
		.max_send_wr = 4, .max_recv_wr = 4,
		.max_send_sge = 1, .max_recv_sge = 1,
	};
	struct ibv_sge sge = { 0x1122334455667788ULL, 100, 0xabcd };
	struct ibv_send_wr wr = {
		.wr_id = 0x1111, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
	};
	struct mlx4_qp *qp;

	qp = fake_qp(&env, IBV_QPT_RC, &cap, cq, cq, NULL, 0x12345, 0);

	/* 64-byte stride: 33 spare WQEs, a ring of 64, 31 usable. */
	CHECK_EQ(qp->sq.wqe_shift, 6);
	CHECK_EQ(qp->sq.wqe_cnt, 64);
	CHECK_EQ(qp->sq_spare_wqes, 33);
	CHECK_EQ(cap.max_send_wr, 31);
	CHECK_EQ(cap.max_send_sge, 2);
	CHECK_EQ(cap.max_inline_data, 28);
	CHECK_EQ(cap.max_recv_wr, 4);
	CHECK_EQ(cap.max_recv_sge, 1);
	/* SQ stride 64 > RQ stride 16: the SQ comes first. */
	CHECK_EQ(qp->sq.offset, 0);
	CHECK_EQ(qp->rq.offset, 64 * 64);
	CHECK_EQ(qp->rq.wqe_shift, 4);

	/* Before the first pass: owner bit set, i.e. not valid yet. */
	CHECK_BYTES(send_wqe(qp, 0), "80000000 00000000");
	CHECK_BYTES(send_wqe(qp, 63), "80000000 00000000");

	clear_doorbells();
	CHECK_EQ(post1(qp, &wr), 0);
	CHECK_BYTES(send_wqe(qp, 0),
		    "0000000a 00000002 0000000c 00000000"
		    "00000064 0000abcd 11223344 55667788"
		    "00000000 00000000 00000000 00000000"
		    "00000000 00000000 00000000 00000000");
	CHECK_BYTES(env.uar + MLX4_SEND_DOORBELL, "01234500");
	CHECK_BYTES(env.bf, "00000000 00000000");	/* not inline: no BlueFlame */
	CHECK_EQ(qp->sq.head, 1);
	CHECK_EQ(qp->sq.wrid[0], 0x1111);

	/* Second pass over the ring: the owner bit is now 1. */
	qp->sq.head = qp->sq.tail = 64;
	wr.send_flags = 0;
	wr.wr_id = 0x2222;
	CHECK_EQ(post1(qp, &wr), 0);
	CHECK_BYTES(send_wqe(qp, 0),
		    "8000000a 00000002 00000000 00000000"
		    "00000064 0000abcd 11223344 55667788");
	CHECK_EQ(qp->sq.wrid[0], 0x2222);

	/* The counter runs past 16 bits: parity comes from bit 6 still. */
	qp->sq.head = qp->sq.tail = 0xffff;
	CHECK_EQ(post1(qp, &wr), 0);
	CHECK_BYTES(send_wqe(qp, 63), "8000000a 00000002");
	CHECK_EQ(post1(qp, &wr), 0);
	CHECK_BYTES(send_wqe(qp, 0), "0000000a 00000002");
	CHECK_EQ(qp->sq.head, 0x10001);

	fake_qp_free(qp);
}

/*
 * @qp's WQEs 3 and 4: compare-and-swap, then fetch-and-add, from @wr as
 * the WQEs before left it (a copy: the steps' CHECKs print as before).
 */
static void rc_atomic_wqes(struct mlx4_qp *qp, struct ibv_send_wr wr)
{
	wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
	wr.wr.atomic.remote_addr = 0xa0a0b0b0c0c0d0d0ULL;
	wr.wr.atomic.rkey = 0x1234;
	wr.wr.atomic.compare_add = 0x5555666677778888ULL;
	wr.wr.atomic.swap = 0x1111222233334444ULL;
	CHECK_EQ(post1(qp, &wr), 0);
	CHECK_BYTES(send_wqe(qp, 3),
		    "00000011 00000004 0000000c 00000000"
		    "a0a0b0b0 c0c0d0d0 00001234 00000000"
		    "11112222 33334444 55556666 77778888"
		    "00000008 00000042 00000000 00001000");

	wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	wr.wr.atomic.compare_add = 0x10;
	CHECK_EQ(post1(qp, &wr), 0);
	CHECK_BYTES(send_wqe(qp, 4),
		    "00000012 00000004 0000000c 00000000"
		    "a0a0b0b0 c0c0d0d0 00001234 00000000"
		    "00000000 00000010 00000000 00000000"
		    "00000008 00000042 00000000 00001000");
}

/*
 * @qp's WQEs 5 to 8: the key operations (SEND with invalidate, local
 * invalidate, a window's bind) and a SEND of a zero-length SGE.
 */
static void rc_key_wqes(struct mlx4_qp *qp, struct ibv_send_wr wr)
{
	struct ibv_mr mr = { .lkey = 0x3344 };
	struct ibv_mw mw = { .type = IBV_MW_TYPE_2, .rkey = 0x500 };

	/* Send with invalidate: the rkey goes big-endian into imm. */
	wr.opcode = IBV_WR_SEND_WITH_INV;
	wr.invalidate_rkey = 0x00c0ffee;
	CHECK_EQ(post1(qp, &wr), 0);
	CHECK_BYTES(send_wqe(qp, 5),
		    "00000001 00000002 0000000c 00c0ffee"
		    "00000008 00000042 00000000 00001000");

	/* Local invalidate: no data, the key in the second dword pair. */
	wr.opcode = IBV_WR_LOCAL_INV;
	wr.invalidate_rkey = 0x00abcdef;
	CHECK_EQ(post1(qp, &wr), 0);
	CHECK_BYTES(send_wqe(qp, 6),
		    "0000001b 00000003 0000008c 00000000"
		    "00000000 00000000 00abcdef 00000000"
		    "00000000 00000000 00000000 00000000");

	/* A zero-length SGE is the inline bit with no bytes. */
	wr.sg_list->length = 0;
	wr.opcode = IBV_WR_SEND;
	CHECK_EQ(post1(qp, &wr), 0);
	CHECK_BYTES(send_wqe(qp, 7) + 16, "80000000 00000042 00000000 00001000");
	CHECK_EQ(qp->sq.head, 8);

	/*
	 * Bind a type 2 window, remote read and write: flags, new rkey,
	 * the region's lkey, address and length.  Like the invalidate, it
	 * waits for the WQEs before it (strong ordering, bit 7).
	 */
	wr.opcode = IBV_WR_BIND_MW;
	wr.bind_mw.mw = &mw;
	wr.bind_mw.rkey = 0x501;
	wr.bind_mw.bind_info = (struct ibv_mw_bind_info){
		.mr = &mr, .addr = 0x10000, .length = 0x2000,
		.mw_access_flags = IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_REMOTE_WRITE,
	};
	CHECK_EQ(post1(qp, &wr), 0);
	CHECK_BYTES(send_wqe(qp, 8),
		    "00000018 00000003 0000008c 00000000"
		    "60000000 80000000 00000501 00003344"
		    "00000000 00010000 00000000 00002000");
}

static void test_rc_opcodes(void)
{
	struct ibv_sge sge = { 0x1000, 8, 0x42 };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1 };
	struct mlx4_qp *qp = rc_qp(0x12345, 1, 0);

	/* RDMA write with immediate, solicited, fenced. */
	wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	wr.imm_data = htobe32(0xdeadbeef);
	wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_SOLICITED | IBV_SEND_FENCE;
	wr.wr.rdma.remote_addr = 0x0102030405060708ULL;
	wr.wr.rdma.rkey = 0x99887766;
	CHECK_EQ(post1(qp, &wr), 0);
	CHECK_BYTES(send_wqe(qp, 0),
		    "00000009 00000043 0000000e deadbeef"
		    "01020304 05060708 99887766 00000000"
		    "00000008 00000042 00000000 00001000");

	/* IBV_SEND_IP_CSUM means nothing to an RC QP (rdma-core ignores it). */
	wr.send_flags |= IBV_SEND_IP_CSUM;
	CHECK(!post1(qp, &wr) &&
	      !memcmp(send_wqe(qp, 0) + 8, send_wqe(qp, 1) + 8, 4) &&
	      !(send_wqe(qp, 1)[11] & 0x30), "RC: no checksum bits");
	wr.send_flags &= ~IBV_SEND_IP_CSUM;
	qp->sq.head--;		/* post WQE 1 again below */

	/* Plain RDMA write: imm must not leak from the previous WQE. */
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.send_flags = 0;
	CHECK_EQ(post1(qp, &wr), 0);
	CHECK_BYTES(send_wqe(qp, 1),
		    "00000008 00000003 00000000 00000000"
		    "01020304 05060708 99887766 00000000"
		    "00000008 00000042 00000000 00001000");

	wr.opcode = IBV_WR_RDMA_READ;
	wr.send_flags = IBV_SEND_SIGNALED;
	CHECK_EQ(post1(qp, &wr), 0);
	CHECK_BYTES(send_wqe(qp, 2),
		    "00000010 00000003 0000000c 00000000"
		    "01020304 05060708 99887766 00000000"
		    "00000008 00000042 00000000 00001000");

	rc_atomic_wqes(qp, wr);
	rc_key_wqes(qp, wr);

	fake_qp_free(qp);
}

/*
 * Inline requests of no bytes on @qp (its WQEs 4 and 5), from @wr as the
 * WQEs before left it (a copy: the CHECKs print as before).
 */
static void empty_inline_at_uar(struct mlx4_qp *qp, struct ibv_send_wr wr)
{
	/*
	 * Inline with no bytes at all: no inline segment, and a one-unit
	 * WQE: rung at the UAR, not through BlueFlame (rdma-core's rule).
	 */
	memset(env.uar, 0, 4096);
	wr.num_sge = 0;
	CHECK_EQ(post1(qp, &wr), 0);
	CHECK_BYTES(send_wqe(qp, 4), "0000000a 00000001 0000000c 00000000");
	CHECK_BYTES(env.uar + MLX4_SEND_DOORBELL, "00010200");
	CHECK_BYTES(env.bf, "00000000");
	CHECK_EQ(env.ctx->bf_offset, 0);

	/* The same with one empty SGE, the lone inline request. */
	memset(env.uar, 0, 4096);
	wr.num_sge = 1;
	wr.sg_list[0].length = 0;
	CHECK_EQ(post1(qp, &wr), 0);
	CHECK_BYTES(send_wqe(qp, 5), "0000000a 00000001 0000000c 00000000");
	CHECK_BYTES(env.uar + MLX4_SEND_DOORBELL, "00010200");
	CHECK_BYTES(env.bf, "00000000");
	CHECK_EQ(env.ctx->bf_offset, 0);
}

static void test_inline_and_blueflame(void)
{
	uint8_t payload[64], small[4] = { 0xa1, 0xa2, 0xa3, 0xa4 };
	struct ibv_sge sge[2] = {
		{ (uintptr_t)payload, 30, 0 },
		{ (uintptr_t)(payload + 30), 34, 0 },
	};
	struct ibv_send_wr wr = {
		.sg_list = sge, .num_sge = 2, .opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE,
	};
	struct ibv_qp_cap cap = {
		.max_send_wr = 4, .max_send_sge = 1, .max_inline_data = 64,
	};
	struct ibv_send_wr wr2;
	struct mlx4_qp *qp;
	char expect[600];
	int i;

	for (i = 0; i < 64; i++)
		payload[i] = i;

	qp = fake_qp(&env, IBV_QPT_RC, &cap, cq, cq, NULL, 0x102, 0);

	/* 64 inline bytes need two blocks: a 128-byte stride. */
	CHECK_EQ(qp->sq.wqe_shift, 7);
	CHECK_EQ(qp->sq_spare_wqes, 17);
	CHECK_EQ(qp->sq.wqe_cnt, 32);
	CHECK_EQ(cap.max_send_wr, 15);
	CHECK_EQ(cap.max_inline_data, 88);
	CHECK_EQ(cap.max_send_sge, 6);
	/* First pass: the second block of every WQE is stamped. */
	CHECK_BYTES(send_wqe(qp, 5), "80000000 00000000");
	CHECK_BYTES(send_wqe(qp, 5) + 64, "ffffffff");

	clear_doorbells();
	env.ctx->bf_offset = 0;
	CHECK_EQ(post1(qp, &wr), 0);

	/*
	 * 44 bytes fit behind the first header (bytes 20..63), the other 20
	 * go behind a second header at the 64-byte boundary: 88 bytes, six
	 * 16-byte units.  BlueFlame put the QPN in bytes 4..6.
	 */
	strcpy(expect, "0000000a 00010206 0000000c 00000000 8000002c");
	for (i = 0; i < 44; i++)
		sprintf(expect + strlen(expect), "%02x", i);
	strcat(expect, "80000014");
	for (i = 44; i < 64; i++)
		sprintf(expect + strlen(expect), "%02x", i);
	strcat(expect, "00000000 00000000 00000000 00000000 00000000"
		       "00000000 00000000 00000000 00000000 00000000");
	CHECK_BYTES(send_wqe(qp, 0), expect);
	/* The same 128 bytes went to the BlueFlame register... */
	CHECK(!memcmp(env.bf, send_wqe(qp, 0), 128), "BlueFlame copy differs");
	CHECK_EQ(env.ctx->bf_offset, 256);
	/* ... which rang instead of the UAR doorbell. */
	CHECK_EQ(uar_send_doorbell(), 0);
	CHECK_EQ(qp->sq.head, 1);

	/* Next BlueFlame WQE: the other half, the WQE counter in bits 8..23. */
	sge[0].addr = (uintptr_t)small;
	sge[0].length = 4;
	wr.num_sge = 1;
	CHECK_EQ(post1(qp, &wr), 0);
	CHECK_BYTES(send_wqe(qp, 1),
		    "0000010a 00010202 0000000c 00000000 80000004 a1a2a3a4");
	CHECK(!memcmp(env.bf + 256, send_wqe(qp, 1), 64), "second BlueFlame copy");
	CHECK_BYTES(env.bf + 256 + 64, "00000000");	/* 64 bytes only */
	CHECK_EQ(env.ctx->bf_offset, 0);
	CHECK_EQ(uar_send_doorbell(), 0);

	/* Two WQEs in one call: ring copies, then one UAR doorbell. */
	memset(env.bf, 0, 4096);
	wr2 = wr;
	wr.next = &wr2;
	CHECK_EQ(post1(qp, &wr), 0);
	wr.next = NULL;
	CHECK_BYTES(send_wqe(qp, 2), "0000000a 00000002");
	CHECK_BYTES(send_wqe(qp, 3), "0000000a 00000002");
	CHECK_BYTES(env.uar + MLX4_SEND_DOORBELL, "00010200");
	CHECK_BYTES(env.bf, "00000000");
	CHECK_EQ(env.ctx->bf_offset, 0);

	empty_inline_at_uar(qp, wr);

	fake_qp_free(qp);
}

static void dump_bytes(const char *what, const uint8_t *p, unsigned int len)
{
	unsigned int i;

	printf("# %-10s", what);
	for (i = 0; i < len; i++)
		printf("%s%02x", i % 16 ? (i % 4 ? "" : " ") : "\n#   ", p[i]);
	printf("\n");
}

/*
 * What a lone inline request of @len bytes from @src must leave in its
 * WQE, worked out independently of the provider: headers, then inline
 * segments that start a new header at every 64-byte boundary, each
 * header holding its segment's length.  Returns where the data ends.
 */
static unsigned int expected_inline_wqe(uint8_t *wqe, unsigned int data_offset,
					const uint8_t *src, unsigned int len)
{
	unsigned int pos = data_offset, hdr = data_offset, seg = 0, i;
	uint32_t be;

	if (!len)
		return data_offset;
	pos += 4;
	for (i = 0; i < len; i++) {
		if (pos % 64 == 0) {
			be = htobe32(MLX4_INLINE_SEG | seg);
			memcpy(wqe + hdr, &be, 4);
			hdr = pos;
			pos += 4;
			seg = 0;
		}
		wqe[pos++] = src[i];
		seg++;
	}
	be = htobe32(MLX4_INLINE_SEG | seg);
	memcpy(wqe + hdr, &be, 4);
	return pos;
}

struct inline_case {
	const char *name;
	enum ibv_qp_type type;
	enum ibv_wr_opcode opcode;
	unsigned int send_flags;
	uint32_t max_inline;
	unsigned int data_offset;	/* after ctrl and remote segments */
};

/* A QP of an inline_case, and what each of its WQEs' headers holds. */
struct lone_qp {
	const struct inline_case *t;
	struct mlx4_qp *qp;
	uint32_t qpn, srcrb, imm, fence;
	unsigned int max_inline;	/* what the QP takes */
};

/*
 * The QP of @t, number @qpn, and @wr, the request posted on it (the
 * remote address, and @ah's datagram fields on UD).
 */
static void lone_qp_make(struct lone_qp *l, const struct inline_case *t,
			 uint32_t qpn, struct ibv_send_wr *wr, struct ibv_ah *ah)
{
	struct ibv_qp_cap cap = {
		.max_send_wr = 4, .max_send_sge = 1,
		.max_inline_data = t->max_inline,
	};

	*l = (struct lone_qp){ .t = t, .qpn = qpn };
	l->qp = fake_qp(&env, t->type, &cap, cq,
			t->type == IBV_QPT_XRC_SEND ? NULL : cq, NULL, qpn, 0);
	l->max_inline = cap.max_inline_data;
	wr->wr.rdma.remote_addr = 0x0102030405060708ULL;
	wr->wr.rdma.rkey = 0x0a0b0c0d;
	if (t->type == IBV_QPT_UD) {
		wr->wr.ud.ah = ah;
		wr->wr.ud.remote_qpn = 0x1234;
		wr->wr.ud.remote_qkey = 0x5678;
	}
	if (t->type == IBV_QPT_XRC_SEND) {
		wr->qp_type.xrc.remote_srqn = 0x4321;
		l->srcrb = 0x4321 << 8;
	}
	if (t->send_flags & IBV_SEND_SIGNALED)
		l->srcrb |= MLX4_WQE_CTRL_CQ_UPDATE;
	if (t->send_flags & IBV_SEND_SOLICITED)
		l->srcrb |= MLX4_WQE_CTRL_SOLICIT;
	if (t->opcode == IBV_WR_RDMA_WRITE_WITH_IMM ||
	    t->opcode == IBV_WR_SEND_WITH_IMM)
		l->imm = htobe32(0x0badcafe);
	l->fence = t->send_flags & IBV_SEND_FENCE ? MLX4_WQE_CTRL_FENCE : 0;
}

/*
 * The WQE in slot @ind of a lone inline request of @len bytes from @src,
 * into @expect: its headers, then the data.  @wqe is the ring's slot,
 * whose UD address vector test_ud_send() checks.  Returns where it ends.
 */
static unsigned int lone_expected(const struct lone_qp *l,
				  const struct ibv_send_wr *wr,
				  unsigned int ind, const uint8_t *src,
				  unsigned int len, const uint8_t *wqe,
				  uint8_t *expect)
{
	const struct inline_case *t = l->t;
	unsigned int end, size;
	uint32_t be;

	end = expected_inline_wqe(expect, t->data_offset, src, len);
	size = (end + 15) / 16;
	/*
	 * BlueFlame (WQE counter and QPN in the control segment) only with
	 * a payload: a WQE with none is rung at the UAR, as rdma-core does.
	 */
	be = htobe32((ind & l->qp->sq.wqe_cnt ? 1U << 31 : 0) |
		     (len ? (ind & 0xffff) << 8 : 0) |
		     be32toh(l->qp->fast_op[t->opcode].opcode_be));
	memcpy(expect, &be, 4);
	be = htobe32((len ? l->qpn << 8 : 0) | l->fence | size);
	memcpy(expect + 4, &be, 4);
	be = htobe32(l->srcrb);
	memcpy(expect + 8, &be, 4);
	memcpy(expect + 12, &l->imm, 4);
	if (t->data_offset == 32) {
		uint64_t raddr = htobe64(wr->wr.rdma.remote_addr);

		memcpy(expect + 16, &raddr, 8);
		be = htobe32(wr->wr.rdma.rkey);
		memcpy(expect + 24, &be, 4);
	} else if (t->type == IBV_QPT_UD) {
		/* The address vector as test_ud_send() has it. */
		memcpy(expect + 16, wqe + 16, 32);
		be = htobe32(0x1234);
		memcpy(expect + 48, &be, 4);
		be = htobe32(0x5678);
		memcpy(expect + 52, &be, 4);
	}
	return end;
}

/*
 * What differs after the lone request of @len bytes in slot @ind was
 * posted: the ring against @expect up to @end, BlueFlame's copy at @bf
 * (or none, and the UAR doorbell, without a payload), the head and wr_id,
 * the stamp of the slot @ahead.  Returns how many differ.
 */
static unsigned int lone_misses(const struct lone_qp *l, unsigned int ind,
				unsigned int len, const uint8_t *expect,
				unsigned int end, const uint8_t *bf,
				const uint8_t *ahead)
{
	struct mlx4_qp *qp = l->qp;
	const uint8_t *wqe = send_wqe(qp, ind);
	unsigned int bytes = (end + 63) & ~63U, bad = 0;

	bad += memcmp(wqe, expect, end) != 0;
	if (len) {
		bad += memcmp(bf, wqe, bytes) != 0;
		bad += env.ctx->bf_offset != (unsigned int)
		       (bf == env.bf ? 256 : 0);
		bad += uar_send_doorbell() != 0;
	} else {
		bad += memcmp(bf, "\0\0\0\0\0\0\0\0", 8) != 0;
		bad += env.ctx->bf_offset != (unsigned int)
		       (bf == env.bf ? 0 : 256);
		bad += uar_send_doorbell() != htobe32(l->qpn << 8);
	}
	bad += qp->sq.head != ind + 1;
	bad += qp->sq.wrid[ind & qp->sq.mask] != len;
	/* Stamped ahead by the lone path: a payload. */
	if (qp->sq_stamp && len)
		bad += memcmp(ahead + 64, "\xff\xff\xff\xff", 4) != 0;
	return bad;
}

/*
 * @wr posted alone with every length of inline data @l's QP takes, from
 * @payload: how many things differed (it stops at the first length that
 * differs, showing its bytes).
 */
static unsigned int lone_inline_lengths(const struct lone_qp *l,
					struct ibv_send_wr *wr,
					const uint8_t *payload)
{
	struct mlx4_qp *qp = l->qp;
	unsigned int stride = 1 << qp->sq.wqe_shift, len, bad = 0;
	uint8_t expect[1024];

	for (len = 0; len <= l->max_inline; len++) {
		unsigned int ind = qp->sq.head, end, bytes;
		uint8_t *wqe = send_wqe(qp, ind);
		uint8_t *bf = env.bf + env.ctx->bf_offset;
		uint8_t *ahead = send_wqe(qp, ind + qp->sq_spare_wqes);
		const uint8_t *src = payload + len % 3;

		/* Odd lengths and addresses: the copies take any. */
		wr->sg_list->addr = (uintptr_t)src;
		wr->sg_list->length = len;
		wr->wr_id = len;
		qp->sq.tail = ind;	/* as if all were completed */
		/*
		 * With 128-byte WQEs the second block is stamped whatever it
		 * holds; larger strides keep every block past a WQE's end
		 * stamped, so there is nothing to plant.
		 */
		if (stride == 128)
			memset(ahead + 64, 0x5a, 4);
		clear_doorbells();
		if (post1(qp, wr)) {
			bad++;
			continue;
		}
		memset(expect, 0, sizeof(expect));
		end = lone_expected(l, wr, ind, src, len, wqe, expect);
		bad += lone_misses(l, ind, len, expect, end, bf, ahead);
		if (bad) {
			bytes = (end + 63) & ~63U;
			printf("# %s, %u bytes:\n", l->t->name, len);
			dump_bytes("expected", expect, end);
			dump_bytes("ring", wqe, bytes);
			dump_bytes("BlueFlame", bf, bytes);
			break;
		}
	}
	return bad;
}

/*
 * A lone one-SGE inline request of every length the QP takes, on each
 * transport: the ring holds exactly the WQE worked out by hand, the same
 * bytes, rounded up to 64, went to the BlueFlame register, and the slot
 * 'spare' WQEs ahead got its second block stamped.  Payloads of one, two
 * and more blocks take different paths in the provider.
 */
static void test_lone_inline_layout(void)
{
	static const struct inline_case cases[] = {
		{ "RC SEND", IBV_QPT_RC, IBV_WR_SEND,
		  IBV_SEND_SIGNALED, 88, 16 },
		{ "RC WRITE_IMM fenced", IBV_QPT_RC, IBV_WR_RDMA_WRITE_WITH_IMM,
		  IBV_SEND_FENCE | IBV_SEND_SOLICITED, 88, 32 },
		{ "RC SEND, 256-byte stride", IBV_QPT_RC, IBV_WR_SEND,
		  IBV_SEND_SIGNALED, 200, 16 },
		{ "UC SEND", IBV_QPT_UC, IBV_WR_SEND, 0, 40, 16 },
		{ "UD SEND", IBV_QPT_UD, IBV_WR_SEND, IBV_SEND_SIGNALED, 120, 64 },
		{ "XRC SEND_IMM", IBV_QPT_XRC_SEND, IBV_WR_SEND_WITH_IMM,
		  IBV_SEND_SIGNALED, 88, 16 },
	};
	struct ibv_ah_attr ah_attr = { .dlid = 0x21, .port_num = 1 };
	struct ibv_ah *ah = mlx4_create_ah(&env.pd.ibv_pd, &ah_attr);
	uint8_t payload[260];
	unsigned int c, i;

	for (i = 0; i < sizeof(payload); i++)
		payload[i] = 0x80 ^ i;

	for (c = 0; c < ARRAY_SIZE(cases); c++) {
		const struct inline_case *t = &cases[c];
		struct ibv_sge sge = { 0, 0, 0x77 };
		struct ibv_send_wr wr = {
			.sg_list = &sge, .num_sge = 1, .opcode = t->opcode,
			.send_flags = t->send_flags | IBV_SEND_INLINE,
			.imm_data = htobe32(0x0badcafe),
		};
		struct lone_qp l;
		unsigned int bad;

		lone_qp_make(&l, t, 0x900 + c, &wr, ah);
		bad = lone_inline_lengths(&l, &wr, payload);
		CHECK(!bad, "%s: a lone inline WQE differs", t->name);
		CHECK(!l.qp->sq_stamp == ((1 << l.qp->sq.wqe_shift) == 64),
		      "%s: stamping", t->name);
		fake_qp_free(l.qp);
	}
	mlx4_destroy_ah(ah);
}

static void test_stamping(void)
{
	struct ibv_sge sge[4] = {
		{ 0x1000, 8, 0x42 }, { 0x1000, 8, 0x42 },
		{ 0x1000, 8, 0x42 }, { 0x1000, 8, 0x42 },
	};
	struct ibv_send_wr wr2 = {
		.sg_list = sge, .num_sge = 1, .opcode = IBV_WR_SEND,
	};
	struct ibv_send_wr wr1 = wr2;
	struct mlx4_qp *qp = rc_qp(0x400, 4, 0);	/* 80 bytes: stride 128 */
	int slot;

	wr1.next = &wr2;
	CHECK_EQ(qp->sq.wqe_shift, 7);

	/* Pretend slots 17..21 hold 128-byte WQEs of an earlier pass. */
	for (slot = 17; slot <= 21; slot++) {
		send_wqe(qp, slot)[7] = 8;
		memcpy(send_wqe(qp, slot) + 64, "\x12\x34\x56\x78", 4);
	}

	/*
	 * Only WQEs of one block so far: every slot's second block still
	 * holds its stamp from creation, so there is nothing to stamp.
	 */
	CHECK_EQ(qp->sq_stamp, 0);
	CHECK_EQ(post1(qp, &wr1), 0);
	CHECK_BYTES(send_wqe(qp, 17) + 64, "12345678");
	CHECK_BYTES(send_wqe(qp, 0), "0000000a 00000002");
	CHECK_BYTES(send_wqe(qp, 0) + 64, "ffffffff");

	/*
	 * An 80-byte WQE (four SGEs) reaches the second block: stamping on,
	 * of that block only.
	 */
	wr1.num_sge = 4;
	CHECK_EQ(post1(qp, &wr1), 0);
	CHECK_EQ(qp->sq_stamp, 128);
	CHECK_BYTES(send_wqe(qp, 2), "0000000a 00000005");
	/* WQE 2 stamps slot 2 + 17, WQE 3 slot 20; 21 is left alone. */
	CHECK_BYTES(send_wqe(qp, 19) + 64, "ffffffff");
	CHECK_BYTES(send_wqe(qp, 20) + 64, "ffffffff");
	CHECK_BYTES(send_wqe(qp, 21) + 64, "12345678");
	/* The 80-byte WQE wrote its fourth SGE where the stamp was. */
	CHECK_BYTES(send_wqe(qp, 2) + 64, "00000008 00000042 00000000 00001000");

	fake_qp_free(qp);
}

/*
 * Stamping restores the blocks the longest WQE so far may have written,
 * no more: 80-byte WQEs in a 256-byte stride stamp one block of the slot
 * ahead, a 192-byte one two from then on.
 */
static void test_stamping_longest(void)
{
	struct ibv_sge sge[11];
	struct ibv_send_wr wr = {
		.sg_list = sge, .num_sge = 4, .opcode = IBV_WR_SEND,
	};
	struct mlx4_qp *qp = rc_qp(0x401, 11, 0);	/* stride 256 */
	int i, slot;

	for (i = 0; i < 11; i++)
		sge[i] = (struct ibv_sge){ 0x1000, 8, 0x42 };
	CHECK_EQ(qp->sq.wqe_shift, 8);
	CHECK_EQ(qp->sq_spare_wqes, 9);
	/* Pretend slots 9 and 10 hold 256-byte WQEs of an earlier pass. */
	for (slot = 9; slot <= 10; slot++)
		for (i = 64; i < 256; i += 64)
			memcpy(send_wqe(qp, slot) + i, "\x12\x34\x56\x78", 4);

	CHECK_EQ(post1(qp, &wr), 0);		/* 80 bytes */
	CHECK_EQ(qp->sq_stamp, 128);
	CHECK_BYTES(send_wqe(qp, 9) + 64, "ffffffff");
	CHECK_BYTES(send_wqe(qp, 9) + 128, "12345678");
	CHECK_BYTES(send_wqe(qp, 9) + 192, "12345678");

	wr.num_sge = 11;
	CHECK_EQ(post1(qp, &wr), 0);		/* 192 bytes */
	CHECK_EQ(qp->sq_stamp, 192);
	CHECK_BYTES(send_wqe(qp, 10) + 64, "ffffffff");
	CHECK_BYTES(send_wqe(qp, 10) + 128, "ffffffff");
	CHECK_BYTES(send_wqe(qp, 10) + 192, "12345678");

	fake_qp_free(qp);
}

/*
 * A UD QP with neither gather entries nor inline data: its control and
 * datagram segments fill a 64-byte stride, and no stamp may land in a
 * slot's second block, which is the next slot's owner word.  The wr_*
 * calls it refuses write their headers (up to 96 bytes) into the
 * scratch WQE, which holds them (memcheck: no overrun).
 */
static void test_ud_small_stride(void)
{
	struct ibv_ah_attr ah_attr = { .dlid = 0x1234, .port_num = 1 };
	struct ibv_qp_cap cap = { .max_send_wr = 4, .max_recv_wr = 4,
				  .max_recv_sge = 1 };
	struct ibv_send_wr wr = { .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED };
	struct mlx4_qp *qp = fake_qp(&env, IBV_QPT_UD, &cap, cq, cq, NULL,
				     0x201, 0);
	struct ibv_ah *ah = mlx4_create_ah(&env.pd.ibv_pd, &ah_attr);
	struct ibv_qp_ex *x = &qp->verbs_qp.qp_ex;
	unsigned int i, n;

	CHECK_EQ(qp->sq.wqe_shift, 6);
	CHECK(ah != NULL, "create_ah");
	wr.wr.ud.ah = ah;
	for (n = 0; n < qp->sq.max_post; n++)
		CHECK_EQ(post1(qp, &wr), 0);
	for (i = n; i < qp->sq.wqe_cnt; i++)
		CHECK(!memcmp(send_wqe(qp, i), "\x80\0\0\0", 4) ||
		      !memcmp(send_wqe(qp, i), "\0\0\0\0", 4),
		      "free slot %u's owner word is the device's: %02x%02x%02x%02x",
		      i, send_wqe(qp, i)[0], send_wqe(qp, i)[1],
		      send_wqe(qp, i)[2], send_wqe(qp, i)[3]);

	CHECK_EQ(mlx4_qp_init_wr_api(qp, IBV_QP_EX_WITH_SEND), 0);
	ibv_wr_start(x);
	ibv_wr_atomic_fetch_add(x, 0x99, 0x5000, 1);
	ibv_wr_rdma_write_imm(x, 0x99, 0x5000, htobe32(7));
	CHECK_EQ(ibv_wr_complete(x), EINVAL);
	CHECK_EQ(qp->sq.head, n);

	mlx4_destroy_ah(ah);
	fake_qp_free(qp);
}

static void test_ud_send(void)
{
	struct ibv_ah_attr ah_attr = {
		.grh = {
			.dgid.raw = { 0xfe, 0x80, [15] = 0x01 },
			.flow_label = 0x34567, .sgid_index = 2,
			.hop_limit = 64, .traffic_class = 0x12,
		},
		.dlid = 0x1234, .sl = 5, .src_path_bits = 3,
		.is_global = 1, .port_num = 1,
	};
	struct ibv_qp_cap cap = {
		.max_send_wr = 4, .max_recv_wr = 4,
		.max_send_sge = 1, .max_recv_sge = 1,
	};
	struct ibv_sge sge = { 0x2000, 16, 0x55 };
	struct ibv_send_wr wr = {
		.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND_WITH_IMM,
		.send_flags = IBV_SEND_SIGNALED, .imm_data = htobe32(0x01020304),
	};
	struct mlx4_qp *qp;
	struct ibv_ah *ah;

	qp = fake_qp(&env, IBV_QPT_UD, &cap, cq, cq, NULL, 0x200, 0);
	CHECK_EQ(qp->sq.wqe_shift, 7);		/* 16 + 48 + 16 bytes */
	CHECK_EQ(cap.max_inline_data, 60);

	ah = mlx4_create_ah(&env.pd.ibv_pd, &ah_attr);
	CHECK(ah != NULL, "create_ah");
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = 0xabcde;
	wr.wr.ud.remote_qkey = 0x1a2b3c4d;

	CHECK_EQ(post1(qp, &wr), 0);
	CHECK_BYTES(send_wqe(qp, 0),
		    "0000000b 00000005 0000000c 01020304"
		    "01000077 00831234 00020040 51234567"
		    "fe800000 00000000 00000000 00000001"
		    "000abcde 1a2b3c4d 00000000 00000000"
		    "00000010 00000055 00000000 00002000");

	/* No address handle: refused before anything is written. */
	wr.wr.ud.ah = NULL;
	{
		struct ibv_send_wr *bad = NULL;

		CHECK_EQ(mlx4_post_send(&qp->verbs_qp.qp, &wr, &bad), EINVAL);
		CHECK(bad == &wr, "bad_wr");
		CHECK_BYTES(send_wqe(qp, 1), "80000000");
		CHECK_EQ(qp->sq.head, 1);
	}
	wr.wr.ud.ah = ah;

	/*
	 * IBV_SEND_IP_CSUM on UD over InfiniBand: the IP header (bit 4) and
	 * TCP/UDP (bit 5) checksums, on the fast path, the lone inline one
	 * and the general one (a chain of two).
	 */
	wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_IP_CSUM;
	CHECK_EQ(post1(qp, &wr), 0);
	CHECK_BYTES(send_wqe(qp, 1), "0000000b 00000005 0000003c 01020304");
	wr.send_flags = IBV_SEND_IP_CSUM | IBV_SEND_INLINE;
	sge.addr = (uintptr_t)"0123456789abcdef";
	CHECK_EQ(post1(qp, &wr), 0);
	CHECK_BYTES(send_wqe(qp, 2), "0000020b 00020006 00000030 01020304");
	{
		struct ibv_send_wr wr2 = wr;

		wr.next = &wr2;
		wr2.send_flags = IBV_SEND_IP_CSUM | IBV_SEND_SOLICITED;
		CHECK_EQ(post1(qp, &wr), 0);
		CHECK_BYTES(send_wqe(qp, 3), "0000000b 00000006 00000030 01020304");
		CHECK_BYTES(send_wqe(qp, 4), "0000000b 00000005 00000032 01020304");
		wr.next = NULL;
	}

	/* Without the offload (a RoCE port): refused, nothing written. */
	qp->link_layer = IBV_LINK_LAYER_ETHERNET;
	mlx4_qp_update_csum(qp);
	wr.send_flags = IBV_SEND_IP_CSUM;
	{
		struct ibv_send_wr *bad = NULL;

		CHECK_EQ(mlx4_post_send(&qp->verbs_qp.qp, &wr, &bad), EINVAL);
		CHECK(bad == &wr, "bad_wr");
		wr.send_flags = IBV_SEND_IP_CSUM | IBV_SEND_INLINE;
		CHECK_EQ(mlx4_post_send(&qp->verbs_qp.qp, &wr, &bad), EINVAL);
		CHECK_BYTES(send_wqe(qp, 5), "80000000");
		CHECK_EQ(qp->sq.head, 5);
	}
	sge.addr = 0x2000;
	qp->link_layer = IBV_LINK_LAYER_INFINIBAND;
	mlx4_qp_update_csum(qp);

	mlx4_destroy_ah(ah);
	fake_qp_free(qp);
}

/*
 * Raw packet QPs: the frame's destination MAC repeated in the control
 * segment (srcrb_flags' first two bytes, then the immediate) with the
 * solicit bit (no ICRC), checksum offload on an Ethernet port; and an LSO
 * WQE: opcode 0x0e, the MSS and header size word, the headers padded to
 * 16 bytes, then the payload's data segment, checksum bits always.
 */
static void test_raw_send(void)
{
	static const uint8_t frame[64] = {
		0x00, 0x02, 0xc9, 0xa1, 0xb2, 0x02,
		0x00, 0x02, 0xc9, 0xa1, 0xb2, 0x01, 0x08, 0x00,
	};
	struct ibv_qp_cap cap = {
		.max_send_wr = 4, .max_recv_wr = 4,
		.max_send_sge = 1, .max_recv_sge = 1,
	};
	struct ibv_sge sge = { (uintptr_t)frame, 60, 0x77 };
	struct ibv_send_wr wr = {
		.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
	};
	struct mlx4_qp *qp;

	env.ctx->raw_ip_csum = 1;
	qp = fake_qp(&env, IBV_QPT_RAW_PACKET, &cap, cq, cq, NULL, 0x220, 0);
	qp->link_layer = IBV_LINK_LAYER_ETHERNET;
	mlx4_qp_update_csum(qp);
	CHECK_EQ(post1(qp, &wr), 0);
	CHECK_BYTES(send_wqe(qp, 0),
		    "0000000a 00000002 0002000e c9a1b202 0000003c 00000077");
	wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_IP_CSUM;
	CHECK_EQ(post1(qp, &wr), 0);
	CHECK_BYTES(send_wqe(qp, 1), "0000000a 00000002 0002003e c9a1b202");
	/* Inline: the MAC still from the frame. */
	wr.send_flags = IBV_SEND_INLINE;
	sge.length = 16;
	CHECK_EQ(post1(qp, &wr), 0);
	CHECK_BYTES(send_wqe(qp, 2), "0000020a 00022003 00020002 c9a1b202 80000010 0002c9a1");
	/* A frame shorter than its destination MAC: refused. */
	sge.length = 5;
	wr.send_flags = 0;
	{
		struct ibv_send_wr *bad = NULL;

		CHECK_EQ(mlx4_post_send(&qp->verbs_qp.qp, &wr, &bad), EINVAL);
		CHECK_EQ(qp->sq.head, 3);
	}
	fake_qp_free(qp);

	/* LSO: a QP whose stride has room for 64 bytes of headers. */
	cap.max_send_sge = 7;
	qp = fake_qp(&env, IBV_QPT_RAW_PACKET, &cap, cq, cq, NULL, 0x221, 0);
	CHECK(qp->sq.wqe_shift >= 7, "an LSO WQE fits the stride");
	qp->max_tso_header = 64;
	qp->tso_room = 80;
	qp->link_layer = IBV_LINK_LAYER_ETHERNET;
	mlx4_qp_update_csum(qp);
	wr.opcode = IBV_WR_TSO;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.tso.hdr = (void *)frame;
	wr.tso.hdr_sz = 54;
	wr.tso.mss = 1000;
	sge = (struct ibv_sge){ 0x9000, 9500, 0x78 };
	CHECK_EQ(post1(qp, &wr), 0);
	CHECK_BYTES(send_wqe(qp, 0),
		    "0000004e 00000006 0002003e c9a1b202"
		    "03e80036 0002c9a1 b2020002 c9a1b201");
	CHECK_BYTES((char *)send_wqe(qp, 0) + 80,
		    "0000251c 00000078 00000000 00009000");
	/* Headers beyond max_tso_header, or no MSS: refused. */
	{
		struct ibv_send_wr *bad = NULL;

		wr.tso.hdr_sz = 65;
		CHECK_EQ(mlx4_post_send(&qp->verbs_qp.qp, &wr, &bad), EINVAL);
		wr.tso.hdr_sz = 54;
		wr.tso.mss = 0;
		CHECK_EQ(mlx4_post_send(&qp->verbs_qp.qp, &wr, &bad), EINVAL);
		CHECK_EQ(qp->sq.head, 1);
	}
	fake_qp_free(qp);
	env.ctx->raw_ip_csum = 0;
}

#ifdef MLX4_UNIT_BARRIER_HOOK
/*
 * What the device's prefetcher may see of a WQE being written, checked
 * at each barrier: every 64-byte block after the first still starts
 * with its stamp, or holds what it holds once the WQE is done.
 */
static struct {
	const uint8_t *wqe;		/* the WQE being written */
	const uint8_t *done;		/* the same WQE, finished */
	unsigned int bytes;		/* its length */
	int torn;			/* barriers that saw a torn block */
} prefetch;

static void prefetch_check(void)
{
	static const uint8_t stamp[4] = { 0xff, 0xff, 0xff, 0xff };
	unsigned int off, len;

	for (off = 64; off < prefetch.bytes; off += 64) {
		len = prefetch.bytes - off < 64 ? prefetch.bytes - off : 64;
		if (memcmp(prefetch.wqe + off, stamp, 4) &&
		    memcmp(prefetch.wqe + off, prefetch.done + off, len))
			prefetch.torn++;
	}
}

/*
 * LSO headers past the first block (kernel: build_lso_seg; DPDK:
 * mlx4_tx_burst_fill_tso_hdr): the word of each later block's start is
 * written once the block's data segments are in, after a barrier.
 */
static void test_lso_long_headers(void)
{
	struct ibv_qp_cap cap = { .max_send_wr = 4, .max_send_sge = 14 };
	struct ibv_sge sge[2] = { { 0x9000, 3000, 0x78 },
				  { 0xa000, 5000, 0x79 } };
	struct ibv_send_wr wr = {
		.sg_list = sge, .num_sge = 2, .opcode = IBV_WR_TSO,
	};
	uint8_t hdr[120], done[256];
	struct mlx4_qp *qp;
	unsigned int i;

	for (i = 0; i < sizeof(hdr); i++)
		hdr[i] = i + 1;
	hdr[64 - 20] = 0xff;	/* block 1's first word: not a stamp... */
	hdr[128 - 20] = 0x00;	/* ...nor block 2's */
	qp = fake_qp(&env, IBV_QPT_RAW_PACKET, &cap, cq, cq, NULL, 0x222, 0);
	qp->max_tso_header = 120;
	qp->tso_room = 128;
	qp->link_layer = IBV_LINK_LAYER_ETHERNET;
	mlx4_qp_update_csum(qp);
	wr.tso.hdr = hdr;
	wr.tso.hdr_sz = sizeof(hdr);
	wr.tso.mss = 1400;

	CHECK_EQ(post1(qp, &wr), 0);
	CHECK_BYTES(send_wqe(qp, 0), "0000004e 0000000b");
	CHECK_BYTES(send_wqe(qp, 0) + 16, "05780078 01020304");
	CHECK_BYTES(send_wqe(qp, 0) + 64, "ff2e2f30");
	CHECK_BYTES(send_wqe(qp, 0) + 128, "006e6f70 71727374 75767778 00000000"
		    "00000bb8 00000078 00000000 00009000"
		    "00001388 00000079 00000000 0000a000");
	memcpy(done, send_wqe(qp, 0), sizeof(done));

	prefetch.wqe = send_wqe(qp, 1);
	prefetch.done = done;
	prefetch.bytes = 176;
	prefetch.torn = 0;
	mlx4_unit_barrier_hook = prefetch_check;
	CHECK_EQ(post1(qp, &wr), 0);
	mlx4_unit_barrier_hook = NULL;
	CHECK(prefetch.torn == 0,
	      "no barrier sees a block of the LSO headers begun (%d did)",
	      prefetch.torn);
	CHECK(!memcmp(send_wqe(qp, 1) + 64, done + 64, 176 - 64),
	      "the second WQE is the first's");
	fake_qp_free(qp);
}
#endif

static void test_xrc_and_sig_all(void)
{
	struct ibv_qp_cap cap = { .max_send_wr = 4, .max_send_sge = 1 };
	struct ibv_sge sge = { 0x3000, 4, 0x66 };
	struct ibv_send_wr wr = {
		.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
	};
	struct mlx4_qp *qp;

	/* XRC: the remote SRQ number rides in srcrb_flags' top 24 bits. */
	qp = fake_qp(&env, IBV_QPT_XRC_SEND, &cap, cq, NULL, NULL, 0x300, 0);
	CHECK(qp->db == NULL, "XRC_SEND has no receive queue");
	CHECK_EQ(cap.max_recv_wr, 0);
	wr.qp_type.xrc.remote_srqn = 0xabcd;
	wr.send_flags = IBV_SEND_SIGNALED;
	CHECK_EQ(post1(qp, &wr), 0);
	CHECK_BYTES(send_wqe(qp, 0), "0000000a 00000002 00abcd0c 00000000");
	fake_qp_free(qp);

	/* sq_sig_all: every WQE asks for a completion. */
	qp = fake_qp(&env, IBV_QPT_UC, &cap, cq, cq, NULL, 0x301, 1);
	wr.send_flags = 0;
	CHECK_EQ(post1(qp, &wr), 0);
	CHECK_BYTES(send_wqe(qp, 0), "0000000a 00000002 0000000c 00000000");
	fake_qp_free(qp);
}

/* A refused work request leaves the ring and the counters as they were. */
static void check_refused(struct mlx4_qp *qp, struct ibv_send_wr *wr,
			  struct ibv_send_wr *expect_bad, int expect_err,
			  unsigned int expect_posted)
{
	size_t ring = (size_t)qp->sq.wqe_cnt << qp->sq.wqe_shift;
	unsigned int head = qp->sq.head;
	struct ibv_send_wr *bad = NULL;
	uint8_t *before = malloc(ring);
	uint32_t db_before;
	unsigned int n;
	int ret;

	clear_doorbells();
	db_before = uar_send_doorbell();
	memcpy(before, qp->sq.buf, ring);

	ret = mlx4_post_send(&qp->verbs_qp.qp, wr, &bad);
	CHECK_EQ(ret, expect_err);
	CHECK(bad == expect_bad, "bad_wr %p, expected %p", (void *)bad,
	      (void *)expect_bad);
	CHECK_EQ(qp->sq.head, head + expect_posted);

	/* Only the WQEs before the bad one changed. */
	for (n = 0; n < qp->sq.wqe_cnt; n++) {
		size_t off = (size_t)((head + n) & qp->sq.mask) << qp->sq.wqe_shift;
		int changed = memcmp(before + off, (uint8_t *)qp->sq.buf + off,
				     1 << qp->sq.wqe_shift) != 0;

		if (n < expect_posted)
			CHECK(changed, "WQE %u not written", n);
		else if (n >= expect_posted + qp->sq_spare_wqes || !qp->sq_stamp)
			CHECK(!changed, "WQE %u written", n);
	}
	if (expect_posted) {
		static const uint8_t zero[64];

		CHECK(uar_send_doorbell() == qp->doorbell_qpn ||
		      memcmp(env.bf, zero, 64) || memcmp(env.bf + 256, zero, 64),
		      "no doorbell");
	} else {
		CHECK_EQ(uar_send_doorbell(), db_before);
	}
	free(before);
}

/* A READ scatters into at most max_sge_rd (30) of the 32 SGEs. */
static void read_scatter_limit(struct ibv_send_wr *wrs, struct ibv_sge *sges)
{
	struct ibv_qp_cap big = { .max_send_wr = 4, .max_send_sge = 32 };
	struct ibv_sge many[31];
	struct mlx4_qp *qp = fake_qp(&env, IBV_QPT_RC, &big, cq, cq, NULL,
				     0x504, 0);
	int i;

	for (i = 0; i < 31; i++)
		many[i] = sges[0];
	wrs[0].sg_list = many;
	wrs[0].opcode = IBV_WR_RDMA_READ;
	wrs[0].num_sge = 31;
	check_refused(qp, &wrs[0], &wrs[0], ENOMEM, 0);
	wrs[0].num_sge = 30;
	check_refused(qp, &wrs[0], NULL, 0, 1);
	wrs[0].opcode = IBV_WR_SEND;
	wrs[0].num_sge = 31;
	check_refused(qp, &wrs[0], NULL, 0, 1);
	wrs[0].sg_list = sges;
	wrs[0].num_sge = 1;
	fake_qp_free(qp);
}

/*
 * A gather length beyond the port's max_msg_sz (1 GB) is EINVAL,
 * nothing written, on the fast path (one WR) and the general one (the
 * second of two); with bit 31 set the device would read the segment as
 * inline data, its lkey and address sent as payload.  @wrs and @sges are
 * left for SENDs of one SGE again, @rc's queue emptied.
 */
static void gather_length_limits(struct mlx4_qp *rc, struct ibv_send_wr *wrs,
				 struct ibv_sge *sges)
{
	wrs[0].opcode = IBV_WR_RDMA_WRITE;
	wrs[0].next = NULL;
	sges[0].length = 0x8000000c;
	check_refused(rc, &wrs[0], &wrs[0], EINVAL, 0);
	sges[0].length = 0x80000000;	/* 2 GB: not a pointer's length */
	check_refused(rc, &wrs[0], &wrs[0], EINVAL, 0);
	sges[0].length = 0x40000001;	/* 1 GB + 1 */
	check_refused(rc, &wrs[0], &wrs[0], EINVAL, 0);
	sges[0].length = 8;
	wrs[0].next = &wrs[1];
	wrs[1].next = NULL;
	wrs[1].sg_list = sges + 2;
	sges[2].length = 0xfffffff0;
	check_refused(rc, &wrs[0], &wrs[1], EINVAL, 1);
	sges[2].length = 0x40000001;
	check_refused(rc, &wrs[0], &wrs[1], EINVAL, 1);
	/* A SEND of the longest message the port takes, then of none. */
	sges[2].length = 0x40000000;
	wrs[0].next = NULL;
	check_refused(rc, &wrs[1], NULL, 0, 1);
	CHECK_BYTES(send_wqe(rc, rc->sq.head - 1) + 16, "40000000");
	sges[2].length = 0;
	check_refused(rc, &wrs[1], NULL, 0, 1);
	CHECK_BYTES(send_wqe(rc, rc->sq.head - 1) + 16, "80000000");
	sges[2].length = 13;
	wrs[1].sg_list = sges;
	wrs[1].next = &wrs[2];
	wrs[0].next = NULL;
	wrs[0].opcode = IBV_WR_SEND;
	rc->sq.tail = rc->sq.head;
}

/* Opcodes the QP type does not allow; @cap for its QPs. */
static void type_opcodes(struct ibv_qp_cap *cap, struct ibv_send_wr *wrs)
{
	struct mlx4_qp *ud = fake_qp(&env, IBV_QPT_UD, cap, cq, cq, NULL,
				     0x501, 0);
	struct mlx4_qp *uc = fake_qp(&env, IBV_QPT_UC, cap, cq, cq, NULL,
				     0x502, 0);

	wrs[0].opcode = IBV_WR_RDMA_WRITE;
	check_refused(ud, &wrs[0], &wrs[0], EINVAL, 0);
	wrs[0].opcode = IBV_WR_RDMA_READ;
	check_refused(uc, &wrs[0], &wrs[0], EINVAL, 0);
	wrs[0].opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
	check_refused(uc, &wrs[0], &wrs[0], EINVAL, 0);
	/* SEND with invalidate is UC's too (kernel, rdma-core). */
	wrs[0].opcode = IBV_WR_SEND_WITH_INV;
	check_refused(uc, &wrs[0], NULL, 0, 1);
	wrs[0].opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	check_refused(uc, &wrs[0], NULL, 0, 1);
	wrs[0].opcode = IBV_WR_SEND;
	fake_qp_free(ud);
	fake_qp_free(uc);
}

static void test_send_errors(void)
{
	struct ibv_qp_cap cap = {
		.max_send_wr = 4, .max_recv_wr = 4,
		.max_send_sge = 1, .max_recv_sge = 1,
	};
	uint8_t data[64] = { 0 };
	struct ibv_sge sges[3] = {
		{ (uintptr_t)data, 8, 1 }, { (uintptr_t)data, 8, 1 },
		{ (uintptr_t)data, 13, 1 },
	};
	struct ibv_send_wr wrs[40];
	struct mlx4_qp *rc = rc_qp(0x500, 1, 0);
	int i;

	for (i = 0; i < 40; i++) {
		memset(&wrs[i], 0, sizeof(wrs[i]));
		wrs[i].wr_id = i;
		wrs[i].sg_list = sges;
		wrs[i].num_sge = 1;
		wrs[i].opcode = IBV_WR_SEND;
		wrs[i].next = i < 39 ? &wrs[i + 1] : NULL;
	}

	/* Too many SGEs (the stride holds 2): the first WR still goes. */
	wrs[1].num_sge = 3;
	wrs[1].next = NULL;
	check_refused(rc, &wrs[0], &wrs[1], ENOMEM, 1);
	wrs[1].num_sge = 1;

	/* Inline beyond max_inline_data (28 bytes). */
	wrs[0].next = NULL;
	wrs[0].send_flags = IBV_SEND_INLINE;
	wrs[0].num_sge = 2;
	wrs[0].sg_list = sges + 1;	/* 8 + 21 = 29 */
	sges[2].length = 21;
	check_refused(rc, &wrs[0], &wrs[0], ENOMEM, 0);
	sges[2].length = 20;		/* 28: fits */
	check_refused(rc, &wrs[0], NULL, 0, 1);
	wrs[0].sg_list = sges;
	wrs[0].send_flags = 0;
	wrs[0].num_sge = 1;

	/* Opcodes the hardware has no WQE for. */
	wrs[0].opcode = 99;
	check_refused(rc, &wrs[0], &wrs[0], EINVAL, 0);
	wrs[0].opcode = IBV_WR_TSO;
	check_refused(rc, &wrs[0], &wrs[0], EINVAL, 0);

	read_scatter_limit(wrs, sges);
	gather_length_limits(rc, wrs, sges);

	/* An atomic returns into exactly one buffer. */
	wrs[0].opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	wrs[0].num_sge = 2;
	check_refused(rc, &wrs[0], &wrs[0], ENOMEM, 0);
	wrs[0].num_sge = 1;

	type_opcodes(&cap, wrs);

	/* A full queue: 31 of a chain of 32 go, the 32nd comes back. */
	fake_qp_free(rc);
	rc = rc_qp(0x503, 1, 0);
	wrs[0].next = &wrs[1];
	wrs[1].next = &wrs[2];
	wrs[31].next = NULL;
	check_refused(rc, &wrs[0], &wrs[31], ENOMEM, 31);
	/* Completions free room again. */
	rc->sq.tail = 10;
	check_refused(rc, &wrs[31], NULL, 0, 1);
	fake_qp_free(rc);
}

static void test_post_recv(void)
{
	struct ibv_qp_cap cap = {
		.max_send_wr = 1, .max_recv_wr = 3,
		.max_send_sge = 1, .max_recv_sge = 2,
	};
	struct ibv_sge sge[3] = {
		{ 0x3000, 0x40, 0x11 }, { 0x4000, 0x80, 0x22 }, { 0, 0, 0 },
	};
	struct ibv_recv_wr wr = { .wr_id = 7, .sg_list = sge, .num_sge = 1 };
	struct ibv_recv_wr *bad;
	struct mlx4_qp *qp;
	int i;

	qp = fake_qp(&env, IBV_QPT_RC, &cap, cq, cq, NULL, 0x600, 0);
	CHECK_EQ(qp->rq.wqe_cnt, 4);
	CHECK_EQ(qp->rq.max_gs, 2);
	CHECK_EQ(qp->rq.wqe_shift, 5);
	CHECK_EQ(cap.max_recv_wr, 4);
	CHECK_EQ(cap.max_recv_sge, 2);

	/* One SGE of two: an invalid-lkey entry ends the list. */
	CHECK_EQ(mlx4_post_recv(&qp->verbs_qp.qp, &wr, &bad), 0);
	CHECK_BYTES(recv_wqe(qp, 0),
		    "00000040 00000011 00000000 00003000"
		    "00000000 00000100 00000000 00000000");
	CHECK_BYTES(qp->db, "00000001");
	CHECK_EQ(qp->rq.wrid[0], 7);

	wr.num_sge = 2;
	wr.wr_id = 8;
	CHECK_EQ(mlx4_post_recv(&qp->verbs_qp.qp, &wr, &bad), 0);
	CHECK_BYTES(recv_wqe(qp, 1),
		    "00000040 00000011 00000000 00003000"
		    "00000080 00000022 00000000 00004000");
	CHECK_BYTES(qp->db, "00000002");

	/* Too many SGEs: ENOMEM, as rdma-core says. */
	wr.num_sge = 3;
	bad = NULL;
	CHECK_EQ(mlx4_post_recv(&qp->verbs_qp.qp, &wr, &bad), ENOMEM);
	CHECK(bad == &wr, "bad_wr");
	CHECK_EQ(qp->rq.head, 2);
	CHECK_BYTES(recv_wqe(qp, 2), "00000000 00000000 00000000 00000000");

	/* Two more fill the ring of 4; a fifth does not fit. */
	wr.num_sge = 1;
	for (i = 0; i < 2; i++)
		CHECK_EQ(mlx4_post_recv(&qp->verbs_qp.qp, &wr, &bad), 0);
	bad = NULL;
	CHECK_EQ(mlx4_post_recv(&qp->verbs_qp.qp, &wr, &bad), ENOMEM);
	CHECK(bad == &wr, "bad_wr");
	CHECK_BYTES(qp->db, "00000004");

	/* The doorbell record carries the counter's low 16 bits. */
	qp->rq.head = qp->rq.tail = 0xffff;
	CHECK_EQ(mlx4_post_recv(&qp->verbs_qp.qp, &wr, &bad), 0);
	CHECK_BYTES(qp->db, "00000000");
	CHECK_EQ(qp->rq.head, 0x10000);

	fake_qp_free(qp);
}

static void test_srq(void)
{
	/* Three entries: one request below posts three SGEs. */
	struct ibv_sge sge[3] = {
		{ 0x5000, 0x100, 0x33 }, { 0x6000, 8, 0x34 }, { 0x7000, 4, 0x35 },
	};
	struct ibv_recv_wr wr[5];
	struct ibv_recv_wr *bad;
	struct mlx4_srq *srq;
	int i;

	for (i = 0; i < 5; i++) {
		memset(&wr[i], 0, sizeof(wr[i]));
		wr[i].wr_id = 100 + i;
		wr[i].sg_list = sge;
		wr[i].num_sge = 1;
		wr[i].next = i < 4 ? &wr[i + 1] : NULL;
	}

	/* max_wr 3 + one spare: 4 WQEs of 32 bytes, one SGE each. */
	srq = fake_srq(&env, 3, 1, 0x70, 0, NULL);
	CHECK_EQ(srq->max, 4);
	CHECK_EQ(srq->wqe_shift, 5);
	CHECK_EQ(srq->max_gs, 1);
	CHECK_EQ(srq->head, 0);
	CHECK_EQ(srq->tail, 3);
	/* The free list links each WQE to the next, the last to WQE 0. */
	CHECK_BYTES(srq->buf.buf, "00000001");
	CHECK_BYTES((uint8_t *)srq->buf.buf + 3 * 32, "00000000");

	/* Three go in, the fourth finds only the spare left. */
	bad = NULL;
	CHECK_EQ(mlx4_post_srq_recv(&srq->verbs_srq.srq, &wr[0], &bad), ENOMEM);
	CHECK(bad == &wr[3], "bad_wr");
	CHECK_BYTES(srq->buf.buf,
		    "00000001 00000000 00000000 00000000"
		    "00000100 00000033 00000000 00005000");
	CHECK_BYTES(srq->db, "00000003");
	CHECK_EQ(srq->wrid[2], 102);
	CHECK_EQ(srq->head, 3);

	/* WQE 1 completes: it goes behind the tail, and room opens. */
	mlx4_free_srq_wqe(srq, 1);
	CHECK_EQ(srq->tail, 1);
	CHECK_BYTES((uint8_t *)srq->buf.buf + 3 * 32, "00000001");
	wr[3].next = NULL;
	CHECK_EQ(mlx4_post_srq_recv(&srq->verbs_srq.srq, &wr[3], &bad), 0);
	CHECK_EQ(srq->wrid[3], 103);
	CHECK_EQ(srq->head, 1);
	CHECK_BYTES(srq->db, "00000004");
	bad = NULL;
	CHECK_EQ(mlx4_post_srq_recv(&srq->verbs_srq.srq, &wr[4], &bad), ENOMEM);
	CHECK(bad == &wr[4], "bad_wr");
	fake_srq_free(&env, srq);

	/* Two SGEs asked: 64-byte WQEs hold three; one used, then the end. */
	srq = fake_srq(&env, 3, 2, 0x71, 0, NULL);
	CHECK_EQ(srq->wqe_shift, 6);
	CHECK_EQ(srq->max_gs, 3);
	wr[0].next = NULL;
	CHECK_EQ(mlx4_post_srq_recv(&srq->verbs_srq.srq, &wr[0], &bad), 0);
	CHECK_BYTES(srq->buf.buf,
		    "00000001 00000000 00000000 00000000"
		    "00000100 00000033 00000000 00005000"
		    "00000000 00000100 00000000 00000000");
	wr[0].num_sge = 3;
	bad = NULL;
	CHECK_EQ(mlx4_post_srq_recv(&srq->verbs_srq.srq, &wr[0], &bad), 0);
	wr[0].num_sge = 4;
	CHECK_EQ(mlx4_post_srq_recv(&srq->verbs_srq.srq, &wr[0], &bad), ENOMEM);
	CHECK(bad == &wr[0], "bad_wr");
	fake_srq_free(&env, srq);
}

static void test_create_limits(void)
{
	struct ibv_qp_cap cap = { .max_send_wr = 16351, .max_recv_wr = 16351,
				  .max_send_sge = 1, .max_recv_sge = 1 };
	struct mlx4_qp *qp;

	/* The largest queue: 16351 + 33 spare = 16384 WQEs. */
	qp = fake_qp(&env, IBV_QPT_RC, &cap, cq, cq, NULL, 0x700, 0);
	CHECK(qp != NULL, "max_qp_wr");
	if (qp) {
		CHECK_EQ(qp->sq.wqe_cnt, 16384);
		fake_qp_free(qp);
	}

	cap.max_send_wr = 16352;
	CHECK(!fake_qp(&env, IBV_QPT_RC, &cap, cq, cq, NULL, 0x701, 0),
	      "max_send_wr beyond the device");
	cap.max_send_wr = 1;
	cap.max_recv_wr = 16352;
	CHECK(!fake_qp(&env, IBV_QPT_RC, &cap, cq, cq, NULL, 0x702, 0),
	      "max_recv_wr beyond the device");
	cap.max_recv_wr = 1;
	cap.max_send_sge = 33;
	CHECK(!fake_qp(&env, IBV_QPT_RC, &cap, cq, cq, NULL, 0x703, 0),
	      "max_send_sge beyond the device");
	cap.max_send_sge = 1;
	cap.max_inline_data = 913;	/* 1008-byte WQE: 912 inline at most */
	CHECK(!fake_qp(&env, IBV_QPT_RC, &cap, cq, cq, NULL, 0x704, 0),
	      "max_inline_data beyond a WQE");
	cap.max_inline_data = 912;
	qp = fake_qp(&env, IBV_QPT_RC, &cap, cq, cq, NULL, 0x705, 0);
	CHECK(qp != NULL, "912 inline bytes");
	if (qp) {
		CHECK_EQ(qp->sq.wqe_shift, 10);
		CHECK_EQ(qp->sq_spare_wqes, 3);
		fake_qp_free(qp);
	}

	/* No receive queue without RQ: SRQ users send 0/0 to the kernel. */
	{
		struct mlx4_srq *srq = fake_srq(&env, 16, 1, 0x72, 0, NULL);

		cap.max_inline_data = 0;
		cap.max_recv_wr = 100;
		qp = fake_qp(&env, IBV_QPT_RC, &cap, cq, cq, srq, 0x706, 0);
		CHECK(qp && !qp->db && qp->rq.wqe_cnt == 0, "no RQ with an SRQ");
		CHECK_EQ(cap.max_recv_wr, 0);
		if (qp)
			fake_qp_free(qp);
		fake_srq_free(&env, srq);
	}
}

/*
 * Four threads post to one QP at once, three on its send queue and one
 * on its receive queue: every request lands in a WQE of its own, whole.
 */
enum { THREAD_POSTS = 3000, SEND_THREADS = 3 };

static struct mlx4_qp *shared_qp;

static void *send_thread(void *arg)
{
	uint64_t t = (uintptr_t)arg;
	struct ibv_sge sge = { 0x1000 + t, 8, 0x42 };
	struct ibv_send_wr wr = {
		.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
	}, *bad;
	int i;

	for (i = 0; i < THREAD_POSTS; i++) {
		wr.wr_id = t << 32 | i;
		if (mlx4_post_send(&shared_qp->verbs_qp.qp, &wr, &bad))
			return (void *)1;
	}
	return NULL;
}

static void *recv_thread(void *arg)
{
	struct ibv_sge sge = { 0x9000, 64, 0x43 };
	struct ibv_recv_wr wr = { .sg_list = &sge, .num_sge = 1 }, *bad;
	int i;

	for (i = 0; i < THREAD_POSTS; i++) {
		wr.wr_id = 1000000 + i;
		if (mlx4_post_recv(&shared_qp->verbs_qp.qp, &wr, &bad))
			return (void *)1;
	}
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void test_threads(void)
{
	struct ibv_qp_cap cap = {
		.max_send_wr = SEND_THREADS * THREAD_POSTS,
		.max_recv_wr = THREAD_POSTS, .max_send_sge = 1, .max_recv_sge = 1,
	};
	unsigned int n = SEND_THREADS * THREAD_POSTS, i, whole = 1;
	pthread_t th[SEND_THREADS + 1];
	uint64_t *ids;
	void *ret;

	shared_qp = fake_qp(&env, IBV_QPT_RC, &cap, cq, cq, NULL, 0x800, 0);
	for (i = 0; i < SEND_THREADS; i++)
		pthread_create(&th[i], NULL, send_thread, (void *)(uintptr_t)i);
	pthread_create(&th[i], NULL, recv_thread, NULL);
	for (i = 0; i <= SEND_THREADS; i++) {
		pthread_join(th[i], &ret);
		CHECK(ret == NULL, "thread %u failed to post", i);
	}

	CHECK_EQ(shared_qp->sq.head, n);
	CHECK_EQ(shared_qp->rq.head, THREAD_POSTS);
	CHECK_BYTES(shared_qp->db, "00000bb8");	/* 3000 */

	/* Each WQE whole: opcode, size, and the lkey of one thread's SGE. */
	for (i = 0; i < n; i++) {
		uint8_t *wqe = send_wqe(shared_qp, i);
		uint64_t t = shared_qp->sq.wrid[i] >> 32;

		whole &= !memcmp(wqe, "\x00\x00\x00\x0a\x00\x00\x00\x02", 8) &&
			 be64toh(*(uint64_t *)(wqe + 24)) == 0x1000 + t;
	}
	CHECK(whole, "a WQE was torn between threads");

	/* Every wr_id exactly once. */
	ids = malloc(n * sizeof(*ids));
	memcpy(ids, shared_qp->sq.wrid, n * sizeof(*ids));
	qsort(ids, n, sizeof(*ids), cmp_u64);
	for (i = 0; i < n; i++)
		if (ids[i] != ((uint64_t)(i / THREAD_POSTS) << 32 | i % THREAD_POSTS))
			break;
	CHECK(i == n, "wr_id %u of %u out of place", i, n);
	free(ids);

	fake_qp_free(shared_qp);
}

/*
 * Test doubles for libibverbs' fork protection: the provider's calls
 * resolve to these, which log the last range each was given.
 */
static struct {
	void *base;
	size_t size;
	int calls;
} dontfork, dofork;

int ibv_dontfork_range(void *base, size_t size)
{
	dontfork.base = base;
	dontfork.size = size;
	dontfork.calls++;
	return 0;
}

int ibv_dofork_range(void *base, size_t size)
{
	dofork.base = base;
	dofork.size = size;
	dofork.calls++;
	return 0;
}

/*
 * The uverbs answer of a ConnectX-3 with an Ethernet port: RSS hashing
 * and TSO in the driver's part, which the provider passes on.
 */
int ibv_cmd_query_device_any(struct ibv_context *context,
			     const struct ibv_query_device_ex_input *input,
			     struct ibv_device_attr_ex *attr, size_t attr_size,
			     struct ib_uverbs_ex_query_device_resp *resp,
			     size_t *resp_size)
{
	struct mlx4_uverbs_ex_query_device_resp *drv = (void *)(resp + 1);

	(void)context;
	(void)input;
	memset(attr, 0, attr_size);
	attr->orig_attr.max_qp_wr = 16351;
	attr->orig_attr.max_sge = 32;
	drv->response_length = sizeof(*drv);
	drv->rss_caps.rx_hash_function = MLX4_IB_RX_HASH_FUNC_TOEPLITZ;
	drv->rss_caps.rx_hash_fields_mask = 0xff;
	drv->tso_caps.max_tso = 0x3ffff;
	drv->tso_caps.supported_qpts = 1 << IBV_QPT_RAW_PACKET;
	*resp_size = sizeof(*resp) + sizeof(*drv);
	return 0;
}

static void test_query_device_ex(void)
{
	struct fake_env e;
	struct ibv_device_attr_ex attr;
	size_t short_size = offsetof(struct ibv_device_attr_ex, tso_caps);

	fake_env_init(&e, 32, 0);
	CHECK_EQ(mlx4_query_device_ex(&e.ctx->ibv_ctx.context, NULL, &attr,
				      sizeof(attr)), 0);
	CHECK_EQ(attr.rss_caps.rx_hash_function, MLX4_IB_RX_HASH_FUNC_TOEPLITZ);
	CHECK_EQ(attr.rss_caps.rx_hash_fields_mask, 0xff);
	CHECK_EQ(attr.tso_caps.max_tso, 0x3ffff);
	CHECK_EQ(attr.tso_caps.supported_qpts, 1 << IBV_QPT_RAW_PACKET);

	/* An older caller's shorter attributes: nothing written past them. */
	memset(&attr, 0xa5, sizeof(attr));
	CHECK_EQ(mlx4_query_device_ex(&e.ctx->ibv_ctx.context, NULL, &attr,
				      short_size), 0);
	CHECK_EQ(attr.rss_caps.rx_hash_function, 0xa5);
	CHECK_EQ(attr.tso_caps.max_tso, 0xa5a5a5a5);
	fake_env_cleanup(&e);
}

/*
 * libibverbs' neighbour lookup for RoCE, as a table: 192.168.1.2 is on
 * VLAN 0x123, 192.168.1.3 on none, anything else does not answer.
 */
static int resolve_calls;

int ibv_resolve_eth_l2_from_gid(struct ibv_context *context,
				struct ibv_ah_attr *attr,
				uint8_t eth_mac[6], uint16_t *vid)
{
	static const uint8_t v4mapped[12] = { [10] = 0xff, [11] = 0xff };
	const uint8_t *gid = attr->grh.dgid.raw;

	(void)context;
	resolve_calls++;
	if (gid[0] == 0xff) {		/* IPv6 multicast: 33:33 and its end */
		memcpy(eth_mac, "\x33\x33", 2);
		memcpy(eth_mac + 2, gid + 12, 4);
		*vid = 0xffff;
		return 0;
	}
	if (memcmp(gid, v4mapped, 12) || gid[12] != 192 || gid[13] != 168 ||
	    gid[14] != 1 || (gid[15] != 2 && gid[15] != 3))
		return -EHOSTUNREACH;
	memcpy(eth_mac, "\x02\x11\x22\x33\x44\x55", 6);
	eth_mac[5] += gid[15];
	*vid = gid[15] == 2 ? 0x123 : 0xffff;
	return 0;
}

/*
 * RoCE address handles on an Ethernet port 2 with IP-based GIDs: the
 * MAC and VLAN from the neighbour lookup, the VLAN and the priority (SL
 * 5 in the top 3 bits) in the datagram segment, bit 29 of port_pd saying
 * so, the priority at bit 29 of sl_tclass_flowlabel, no LID but a
 * multicast group's 0xc000.  Then the old scheme: a link-local GID
 * carries its MAC and VLAN.
 */
static void test_roce_ah(void)
{
	struct ibv_ah_attr attr = {
		.grh = {
			.dgid.raw = { [10] = 0xff, [11] = 0xff,
				      192, 168, 1, 2 },
			.flow_label = 0x34567, .sgid_index = 1,
			.hop_limit = 64, .traffic_class = 0x12,
		},
		.dlid = 0x1234, .sl = 5, .src_path_bits = 3,
		.is_global = 1, .port_num = 2,
	};
	struct ibv_qp_cap cap = {
		.max_send_wr = 4, .max_recv_wr = 4,
		.max_send_sge = 1, .max_recv_sge = 1,
	};
	struct ibv_sge sge = { 0x2000, 16, 0x55 };
	struct ibv_send_wr wr = {
		.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
		.wr.ud = { .remote_qpn = 0xabcde, .remote_qkey = 0x1a2b3c4d },
	};
	struct mlx4_qp *qp;
	struct ibv_ah *ah;

	env.ctx->link_layer[1] = IBV_LINK_LAYER_ETHERNET;
	env.ctx->port_cap_flags[1] = IBV_PORT_IP_BASED_GIDS;
	qp = fake_qp(&env, IBV_QPT_UD, &cap, cq, cq, NULL, 0x210, 0);

	ah = mlx4_create_ah(&env.pd.ibv_pd, &attr);
	CHECK(ah != NULL, "create_ah, IPv4-mapped GID: %s", strerror(errno));
	CHECK_EQ(resolve_calls, 1);
	if (ah) {
		wr.wr.ud.ah = ah;
		CHECK_EQ(post1(qp, &wr), 0);
		CHECK_BYTES(send_wqe(qp, 0) + 16,
			    "22000077 00800000 00010040 a1234567"
			    "00000000 00000000 0000ffff c0a80102"
			    "000abcde 1a2b3c4d a123 021122334457");
		mlx4_destroy_ah(ah);
	}

	/* No VLAN: neither the flag nor a tag. */
	attr.grh.dgid.raw[15] = 3;
	attr.sl = 2;
	ah = mlx4_create_ah(&env.pd.ibv_pd, &attr);
	CHECK(ah != NULL, "create_ah without VLAN: %s", strerror(errno));
	if (ah) {
		wr.wr.ud.ah = ah;
		CHECK_EQ(post1(qp, &wr), 0);
		CHECK_BYTES(send_wqe(qp, 1) + 16,
			    "02000077 00800000 00010040 41234567"
			    "00000000 00000000 0000ffff c0a80103"
			    "000abcde 1a2b3c4d 0000 021122334458");
		mlx4_destroy_ah(ah);
	}

	/* No neighbour: no address handle, and the reason. */
	attr.grh.dgid.raw[15] = 9;
	errno = 0;
	ah = mlx4_create_ah(&env.pd.ibv_pd, &attr);
	CHECK(!ah && errno == EHOSTUNREACH, "unresolved: %s", strerror(errno));

	/* A multicast group: its MAC, and the multicast LID the device needs. */
	memcpy(attr.grh.dgid.raw, "\xff\x0e\0\0\0\0\0\0"
	       "\0\0\0\0\x01\x02\x03\x04", 16);
	ah = mlx4_create_ah(&env.pd.ibv_pd, &attr);
	CHECK(ah != NULL, "create_ah, multicast GID: %s", strerror(errno));
	if (ah) {
		wr.wr.ud.ah = ah;
		CHECK_EQ(post1(qp, &wr), 0);
		CHECK_BYTES(send_wqe(qp, 2) + 16,
			    "02000077 0080c000 00010040 41234567"
			    "ff0e0000 00000000 00000000 01020304"
			    "000abcde 1a2b3c4d 0000 333301020304");
		mlx4_destroy_ah(ah);
	}

	/* The old scheme: MAC and VLAN 0x5 in a link-local GID. */
	env.ctx->port_cap_flags[1] = 0;
	memcpy(attr.grh.dgid.raw, "\xfe\x80\0\0\0\0\0\0"
	       "\x00\x25\x90\x00\x05\x01\x02\x03", 16);
	attr.sl = 7;
	ah = mlx4_create_ah(&env.pd.ibv_pd, &attr);
	CHECK(ah != NULL, "create_ah, link-local GID: %s", strerror(errno));
	CHECK_EQ(resolve_calls, 4);
	if (ah) {
		wr.wr.ud.ah = ah;
		CHECK_EQ(post1(qp, &wr), 0);
		CHECK_BYTES(send_wqe(qp, 3) + 16,
			    "22000077 00800000 00010040 e1234567"
			    "fe800000 00000000 00259000 05010203"
			    "000abcde 1a2b3c4d e005 022590010203");
		mlx4_destroy_ah(ah);
	}

	fake_qp_free(qp);
	env.ctx->link_layer[1] = IBV_LINK_LAYER_INFINIBAND;
}

static void *extern_mem;
static int extern_frees;

static void *test_alloc(size_t size, void *data)
{
	CHECK(data == &extern_mem, "allocator's private data");
	if (posix_memalign(&extern_mem, 4096, size))
		return NULL;
	return extern_mem;
}

static void test_free(void *ptr, void *data)
{
	CHECK(data == &extern_mem && ptr == extern_mem, "freed what it gave");
	extern_frees++;
	free(ptr);
}

/*
 * A QP buffer from the application's allocator is kept out of a forked
 * child, like the provider's own, and given back to fork() when freed.
 */
static void test_extern_buf_dontfork(void)
{
	struct ibv_qp_cap cap = {
		.max_send_wr = 4, .max_recv_wr = 4,
		.max_send_sge = 1, .max_recv_sge = 1,
	};
	struct mlx4_qp *qp;
	void *mem;
	size_t len;

	env.ctx->extern_alloc = (struct mlx4dv_ctx_allocators){
		test_alloc, test_free, &extern_mem,
	};
	memset(&dontfork, 0, sizeof(dontfork));
	memset(&dofork, 0, sizeof(dofork));
	qp = fake_qp(&env, IBV_QPT_RC, &cap, cq, cq, NULL, 0x700, 0);
	mem = qp->buf.buf;
	len = qp->buf.length;
	CHECK(mem == extern_mem && len, "the QP buffer is the allocator's");
	CHECK(dontfork.base == mem && dontfork.size == len,
	      "dontfork of %p+%zu, the buffer is %p+%zu", dontfork.base,
	      dontfork.size, mem, len);
	fake_qp_free(qp);
	CHECK(dofork.base == mem && dofork.size == len,
	      "dofork of %p+%zu, the buffer was %p+%zu", dofork.base,
	      dofork.size, mem, len);
	CHECK_EQ(extern_frees, 1);
	memset(&env.ctx->extern_alloc, 0, sizeof(env.ctx->extern_alloc));
}

/* A parent domain's allocator: one grant per call, in a small ledger. */
static struct {
	void *ptr[4];
	size_t size[4];
	uint64_t type[4];
	int allocs, frees;
} ledger;

static void *ledger_alloc(struct ibv_pd *pd, void *pd_context, size_t size,
			  size_t alignment, uint64_t type)
{
	void *p;

	CHECK(pd_context == &ledger, "alloc: the parent domain's pd_context");
	CHECK(pd && to_mpd(pd)->protection_domain == &env.pd,
	      "alloc: the parent domain");
	if (ledger.allocs == 4 || posix_memalign(&p, alignment, size))
		return NULL;
	ledger.ptr[ledger.allocs] = p;
	ledger.size[ledger.allocs] = size;
	ledger.type[ledger.allocs++] = type;
	return p;
}

static void ledger_free(struct ibv_pd *pd, void *pd_context, void *ptr,
			uint64_t type)
{
	int i;

	(void)pd;
	CHECK(pd_context == &ledger, "free: the parent domain's pd_context");
	for (i = 0; i < ledger.allocs; i++)
		if (ledger.ptr[i] == ptr && ledger.type[i] == type)
			break;
	CHECK(i < ledger.allocs, "free of %p, type %#llx: not given", ptr,
	      (unsigned long long)type);
	ledger.frees++;
	free(ptr);
}

/* A parent domain on env's PD with @td and the ledger's allocators. */
static struct ibv_pd *ledger_domain(struct ibv_td *td)
{
	struct ibv_parent_domain_init_attr attr = {
		.pd = &env.pd.ibv_pd, .td = td,
		.comp_mask = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS |
			     IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT,
		.alloc = ledger_alloc, .free = ledger_free,
		.pd_context = &ledger,
	};

	memset(&ledger, 0, sizeof(ledger));
	return mlx4_alloc_parent_domain(&env.ctx->ibv_ctx.context, &attr);
}

/*
 * A QP on a parent domain with a thread domain takes no lock: with its
 * queues' lock words held, as by another thread, posts still go through
 * (a lock taken would spin until the alarm ends the test).  It never
 * uses the context's BlueFlame register, whose lock all QPs share.  Its
 * memory comes from the domain's allocator, kept from fork() like ours.
 */
static void test_thread_domain_qp(void)
{
	struct ibv_td_init_attr td_attr = {};
	struct ibv_td *td = mlx4_alloc_td(&env.ctx->ibv_ctx.context, &td_attr);
	struct ibv_pd *domain = ledger_domain(td);
	struct ibv_qp_cap cap = {
		.max_send_wr = 4, .max_recv_wr = 4,
		.max_send_sge = 1, .max_recv_sge = 1, .max_inline_data = 32,
	};
	uint8_t payload[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	struct ibv_sge sge = { (uintptr_t)payload, 8, 0x77 };
	struct ibv_send_wr wr = {
		.wr_id = 0x51, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
	};
	struct ibv_recv_wr rwr = { .wr_id = 0x52, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad;
	struct mlx4_qp *qp;
	void *buf;
	size_t len;

	CHECK(td && domain, "TD and parent domain without a kernel");
	memset(&dontfork, 0, sizeof(dontfork));
	env.qp_pd = domain;
	qp = fake_qp(&env, IBV_QPT_RC, &cap, cq, cq, NULL, 0x710, 0);
	env.qp_pd = NULL;
	buf = qp->buf.buf;
	len = qp->buf.length;

	CHECK(ledger.allocs == 2 && buf == ledger.ptr[0] &&
	      ledger.type[0] == MLX4DV_RES_TYPE_QP && len == ledger.size[0] &&
	      len % 4096 == 0 && (void *)qp->db == ledger.ptr[1] &&
	      ledger.type[1] == MLX4DV_RES_TYPE_DBR && ledger.size[1] == 8,
	      "QP buffer (%zu bytes) and doorbell record from the allocator",
	      len);
	CHECK(dontfork.base == ledger.ptr[1] && dontfork.calls == 2,
	      "both kept from fork()");
	CHECK(qp->sq.lock.single_threaded && qp->rq.lock.single_threaded &&
	      !qp->bf_max_size, "unlocked queues, no BlueFlame");
	CHECK(mlx4_dealloc_pd(domain) == EBUSY && mlx4_dealloc_td(td) == EBUSY,
	      "the QP holds its parent domain, which holds the TD");

	qp->sq.lock.locked = 1;
	qp->rq.lock.locked = 1;
	alarm(10);
	clear_doorbells();
	CHECK_EQ(post1(qp, &wr), 0);
	CHECK_BYTES(send_wqe(qp, 0), "0000000a 00000002");
	CHECK_BYTES(env.uar + MLX4_SEND_DOORBELL, "00071000");
	wr.send_flags |= IBV_SEND_INLINE;
	CHECK_EQ(post1(qp, &wr), 0);
	CHECK_BYTES(send_wqe(qp, 1), "0000000a 00000002 0000000c 00000000"
				     "80000008 01020304 05060708");
	CHECK_BYTES(env.bf, "00000000 00000000");	/* rung by the UAR */
	qp->rq.lock.locked = 1;
	CHECK_EQ(mlx4_post_recv(&qp->verbs_qp.qp, &rwr, &bad), 0);
	CHECK_BYTES(qp->db, "00000001");
	alarm(0);

	memset(&dofork, 0, sizeof(dofork));
	fake_qp_free(qp);
	CHECK(ledger.frees == 2 && dofork.calls == 2 && dofork.base == buf,
	      "the QP's memory went back to the allocator, back to fork()");
	CHECK(!mlx4_dealloc_pd(domain) && !mlx4_dealloc_td(td),
	      "parent domain, then TD, freed");
}

/*
 * wr_abort: the ring as the device reads it, head unmoved, no doorbell.
 * The wr_* calls wrote the WQE in place, its opcode too; what the device
 * looks at in a slot it does not own, the owner bit and the stamp that
 * opens each later block, reads as before.  @a and @b: QPs alike, three
 * WQEs posted on each, @b's by ibv_wr_*.
 */
static void wr_abort_leaves_slot(struct mlx4_qp *a, struct mlx4_qp *b,
				 char *payload)
{
	struct ibv_qp_ex *x = &b->verbs_qp.qp_ex;
	unsigned int i;

	clear_doorbells();
	ibv_wr_start(x);
	ibv_wr_send(x);
	ibv_wr_set_inline_data(x, payload, 100);
	ibv_wr_abort(x);
	CHECK_EQ(b->sq.head, 3);
	CHECK_EQ(uar_send_doorbell(), 0);
	CHECK(!((send_wqe(a, 3)[0] ^ send_wqe(b, 3)[0]) & 0x80),
	      "the aborted slot's owner bit reads as before");
	for (i = 64; i < 1U << b->sq.wqe_shift; i += 64)
		CHECK(!memcmp(send_wqe(a, 3) + i, send_wqe(b, 3) + i, 4),
		      "the aborted slot's block %u reads as before (stamp)",
		      i / 64);
}

/*
 * The ibv_wr_* calls build the WQEs ibv_post_send builds: two QPs alike,
 * one fed a list, the other the same requests as one wr_* batch; the
 * rings must match byte for byte, and each ring its doorbell once.
 */
static void test_wr_api_same_wqes(void)
{
	struct ibv_qp_cap cap = {
		.max_send_wr = 8, .max_recv_wr = 4,
		.max_send_sge = 2, .max_recv_sge = 1, .max_inline_data = 100,
	};
	struct mlx4_qp *a = fake_qp(&env, IBV_QPT_RC, &cap, cq, cq, NULL,
				    0x777, 0);
	struct mlx4_qp *b = fake_qp(&env, IBV_QPT_RC, &cap, cq, cq, NULL,
				    0x778, 0);
	static char payload[100];
	struct ibv_sge sg[2] = { { 0x1000, 8, 0x42 }, { 0x2000, 24, 0x43 } };
	struct ibv_sge inl = { (uintptr_t)payload, 100, 0 };
	struct ibv_send_wr wr[4] = {}, *bad;
	struct ibv_qp_ex *x = &b->verbs_qp.qp_ex;
	uint32_t db_list, db_wr;
	unsigned int i;

	for (i = 0; i < sizeof(payload); i++)
		payload[i] = (char)(i * 3 + 1);
	CHECK_EQ(mlx4_qp_init_wr_api(b, IBV_QP_EX_WITH_SEND |
				     IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
				     IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP), 0);
	CHECK(b->verbs_qp.comp_mask & VERBS_QP_EX, "VERBS_QP_EX set");

	wr[0] = (struct ibv_send_wr){ .wr_id = 1, .next = &wr[1],
		.sg_list = sg, .num_sge = 2, .opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
		.imm_data = htobe32(0xdeadbeef), .send_flags = IBV_SEND_SIGNALED |
		IBV_SEND_SOLICITED | IBV_SEND_FENCE };
	wr[0].wr.rdma.remote_addr = 0x0102030405060708ULL;
	wr[0].wr.rdma.rkey = 0x99887766;
	wr[1] = (struct ibv_send_wr){ .wr_id = 2, .next = &wr[2],
		.sg_list = &inl, .num_sge = 1, .opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_INLINE };
	wr[2] = (struct ibv_send_wr){ .wr_id = 3, .sg_list = sg, .num_sge = 1,
		.opcode = IBV_WR_ATOMIC_CMP_AND_SWP,
		.send_flags = IBV_SEND_SIGNALED };
	wr[2].wr.atomic.remote_addr = 0x1122334455667788ULL;
	wr[2].wr.atomic.rkey = 0x5555;
	wr[2].wr.atomic.compare_add = 0xa1a2a3a4a5a6a7a8ULL;
	wr[2].wr.atomic.swap = 0xb1b2b3b4b5b6b7b8ULL;

	clear_doorbells();
	CHECK_EQ(mlx4_post_send(&a->verbs_qp.qp, wr, &bad), 0);
	db_list = uar_send_doorbell();

	clear_doorbells();
	ibv_wr_start(x);
	x->wr_id = 1;
	x->wr_flags = wr[0].send_flags;
	ibv_wr_rdma_write_imm(x, 0x99887766, 0x0102030405060708ULL,
			      htobe32(0xdeadbeef));
	ibv_wr_set_sge_list(x, 2, sg);
	x->wr_id = 2;
	x->wr_flags = 0;
	ibv_wr_send(x);
	ibv_wr_set_inline_data(x, payload, 100);
	x->wr_id = 3;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_atomic_cmp_swp(x, 0x5555, 0x1122334455667788ULL,
			      0xa1a2a3a4a5a6a7a8ULL, 0xb1b2b3b4b5b6b7b8ULL);
	ibv_wr_set_sge(x, 0x42, 0x1000, 8);
	CHECK_EQ(ibv_wr_complete(x), 0);
	db_wr = uar_send_doorbell();
	/*
	 * Setters after wr_complete, and wr_complete again (misuses), touch
	 * no WQE: checked below (a second hand-over would flip the owner
	 * bits back).
	 */
	ibv_wr_set_sge(x, 0x99, 0x9999, 99);
	ibv_wr_set_inline_data(x, payload, 10);
	clear_doorbells();
	mlx4_lock(&b->sq.lock);	/* (wr_complete unlocks it) */
	ibv_wr_complete(x);

	CHECK_EQ(a->sq.head, 3);
	CHECK_EQ(b->sq.head, 3);
	CHECK(db_list == htobe32(0x777 << 8) && db_wr == htobe32(0x778 << 8),
	      "one UAR doorbell each, its QPN: %08x %08x", db_list, db_wr);
	CHECK(!memcmp(a->sq.buf, b->sq.buf, a->sq_bytes),
	      "the wr_* ring equals the post_send ring");
	for (i = 0; i < 3; i++)
		CHECK_EQ(a->sq.wrid[i], b->sq.wrid[i]);

	wr_abort_leaves_slot(a, b, payload);

	fake_qp_free(a);
	fake_qp_free(b);
}

/* The first slot whose first @bytes differ in @a's and @b's rings. */
static unsigned int first_slot_differing(struct mlx4_qp *a, struct mlx4_qp *b,
					 size_t bytes)
{
	unsigned int i;

	for (i = 0; i < b->sq.wqe_cnt; i++)
		if (memcmp(send_wqe(a, i), send_wqe(b, i), bytes))
			break;
	return i;
}

/*
 * Two UD QPs built alike: a is driven by ibv_post_send, b by ibv_wr_*,
 * and their rings must stay equal.
 */
struct ud_pair {
	struct mlx4_qp *a, *b;
	struct ibv_qp_ex *x;
	struct ibv_ah *ah;
	struct ibv_sge sg[24];
	struct ibv_send_wr wr[24];
	unsigned int head;	/* b's head after the last accepted batch */
};

static void check_rings_equal(struct ud_pair *p, const char *what)
{
	unsigned int i = first_slot_differing(p->a, p->b, 128);

	CHECK(i == p->b->sq.wqe_cnt, "%s (slot %u differs)", what, i);
}

/*
 * A UD batch longer than the spare WQEs, stamping on: the wr_* ring
 * equals the post_send ring, the stamps ahead of the first WQEs land on
 * none of the later ones (their data segment opens the second block).
 */
static void ud_long_batch(struct ud_pair *p)
{
	struct ibv_send_wr *bad;
	unsigned int i, n = 24;

	CHECK_EQ(p->b->sq.wqe_shift, 7);
	CHECK(n > p->b->sq_spare_wqes, "%u WQEs, %u spare", n,
	      p->b->sq_spare_wqes);
	for (i = 0; i < n; i++) {
		p->sg[i] = (struct ibv_sge){ 0x1000 + i, 10 + i, 0x40 + i };
		p->wr[i] = (struct ibv_send_wr){ .wr_id = i,
			.sg_list = &p->sg[i], .num_sge = 1,
			.opcode = IBV_WR_SEND,
			.next = i + 1 < n ? &p->wr[i + 1] : NULL };
		p->wr[i].wr.ud.ah = p->ah;
		p->wr[i].wr.ud.remote_qpn = 0x100 + i;
		p->wr[i].wr.ud.remote_qkey = 0x1a2b3c4d;
	}
	CHECK_EQ(mlx4_post_send(&p->a->verbs_qp.qp, p->wr, &bad), 0);
	ibv_wr_start(p->x);
	for (i = 0; i < n; i++) {
		p->x->wr_id = i;
		p->x->wr_flags = 0;
		ibv_wr_send(p->x);
		ibv_wr_set_sge(p->x, p->sg[i].lkey, p->sg[i].addr,
			       p->sg[i].length);
		ibv_wr_set_ud_addr(p->x, p->ah, 0x100 + i, 0x1a2b3c4d);
	}
	CHECK_EQ(ibv_wr_complete(p->x), 0);
	CHECK_EQ(p->b->sq.head, n);
	check_rings_equal(p, "the wr_* ring equals the post_send ring");
}

/*
 * Lone requests, a wr_complete() each, for a whole pass: the same ring,
 * the stamps ahead of each included (they land on slots the batch and
 * the pass wrote data into), and the owner bits, which each request
 * aborted in the slot first left as they were.
 */
static void ud_lone_requests(struct ud_pair *p)
{
	struct ibv_qp_ex *x = p->x;
	struct ibv_send_wr *bad;
	unsigned int i;

	for (i = 0; i < p->b->sq.wqe_cnt; i++) {
		p->wr[0].next = NULL;
		p->wr[0].wr_id = i;
		CHECK_EQ(mlx4_post_send(&p->a->verbs_qp.qp, p->wr, &bad), 0);
		ibv_wr_start(x);
		ibv_wr_send_imm(x, htobe32(i));
		ibv_wr_abort(x);
		ibv_wr_start(x);
		x->wr_id = i;
		x->wr_flags = 0;
		ibv_wr_send(x);
		ibv_wr_set_ud_addr(x, p->ah, 0x100, 0x1a2b3c4d);
		ibv_wr_set_sge(x, p->sg[0].lkey, p->sg[0].addr,
			       p->sg[0].length);
		CHECK_EQ(ibv_wr_complete(x), 0);
		p->a->sq.tail = p->a->sq.head;	/* as if completed */
		p->b->sq.tail = p->b->sq.head;
	}
	check_rings_equal(p, "lone wr_* requests' ring equals post_send's");
	p->head = p->b->sq.head;
}

/*
 * Setters before a batch's first opcode call (a misuse) touch no WQE:
 * not the last one handed to the device, which the state of the batch
 * before still pointed at.
 */
static void ud_setters_before_opcode(struct ud_pair *p)
{
	ibv_wr_start(p->x);
	ibv_wr_set_ud_addr(p->x, p->ah, 0x999, 0x5a5a5a5a);
	ibv_wr_set_sge(p->x, 0x77, 0x7000, 7);
	CHECK_EQ(ibv_wr_complete(p->x), 0);
	CHECK_EQ(p->b->sq.head, p->head);
	check_rings_equal(p, "setters before an opcode call left the ring");
}

/*
 * A UD QP takes no RDMA write, with or without immediate; nor SEND with
 * invalidate, nor the key operations, which every RC, UC and XRC QP
 * takes: a UD QP's calls refuse them, where those QPs' calls would
 * build them without a datagram segment.
 */
static void ud_refused_opcodes(struct ud_pair *p)
{
	struct ibv_qp_ex *x = p->x;
	struct ibv_mw mw = { .type = IBV_MW_TYPE_2 };
	struct ibv_mw_bind_info bind = { .addr = 0x1000, .length = 64,
		.mw_access_flags = IBV_ACCESS_REMOTE_READ };

	ibv_wr_start(x);
	ibv_wr_rdma_write(x, 0x99, 0x5000);
	ibv_wr_set_sge(x, 0x40, 0x1000, 8);
	CHECK_EQ(ibv_wr_complete(x), EINVAL);
	ibv_wr_start(x);
	ibv_wr_rdma_write_imm(x, 0x99, 0x5000, htobe32(7));
	CHECK_EQ(ibv_wr_complete(x), EINVAL);
	CHECK_EQ(p->b->sq.head, p->head);
	ibv_wr_start(x);
	ibv_wr_send_inv(x, 0x1234);
	ibv_wr_set_ud_addr(x, p->ah, 0x100, 0x1a2b3c4d);
	ibv_wr_set_sge(x, 0x40, 0x1000, 8);
	CHECK_EQ(ibv_wr_complete(x), EINVAL);
	ibv_wr_start(x);
	ibv_wr_local_inv(x, 0x1234);
	CHECK_EQ(ibv_wr_complete(x), EINVAL);
	ibv_wr_start(x);
	ibv_wr_bind_mw(x, &mw, 0x1234, &bind);
	CHECK_EQ(ibv_wr_complete(x), EINVAL);
	CHECK_EQ(p->b->sq.head, p->head);
	check_rings_equal(p, "refused opcode calls left the ring");
}

/*
 * A UD request without its address (none, or a NULL AH) fails its
 * batch, wherever it stands, the batch's other requests addressed or
 * not; an address set twice is no lack.  Case i: the request lacking
 * its address is i / 3 (3: none), and i % 3 says how: 0 no call, 1 a
 * NULL AH, 2 set twice (so none lacks).
 */
static void ud_batch_of_three(struct ud_pair *p, unsigned int i)
{
	unsigned int k, lacking = i / 3;
	struct ibv_qp_ex *x = p->x;

	ibv_wr_start(x);
	for (k = 0; k < 3; k++) {
		ibv_wr_send(x);
		ibv_wr_set_sge(x, 0x40, 0x1000, 8);
		if (k != lacking)
			ibv_wr_set_ud_addr(x, p->ah, 0x100, 0x1a2b3c4d);
		else if (i % 3 == 1)
			ibv_wr_set_ud_addr(x, NULL, 0x100, 0x1a2b3c4d);
		if (i % 3 == 2)
			ibv_wr_set_ud_addr(x, p->ah, 0x101, 0x1a2b3c4d);
	}
	if (lacking < 3 && i % 3 != 2) {
		CHECK(ibv_wr_complete(x) == EINVAL && p->b->sq.head == p->head,
		      "request %u of 3 without its address (%s): EINVAL",
		      lacking, i % 3 ? "NULL AH" : "no call");
		return;
	}
	CHECK(ibv_wr_complete(x) == 0 && p->b->sq.head == p->head + 3,
	      "3 requests with their addresses (%s) go",
	      i % 3 == 2 ? "some set twice" : "once each");
	p->head = p->b->sq.head;
	p->b->sq.tail = p->head;	/* as if completed */
}

static void test_wr_api_long_ud_batch(void)
{
	struct ibv_qp_cap cap = { .max_send_wr = 32, .max_send_sge = 1 };
	struct ibv_ah_attr ah_attr = { .dlid = 0x21, .port_num = 1 };
	struct ud_pair p = { 0 };
	unsigned int i;

	p.a = fake_qp(&env, IBV_QPT_UD, &cap, cq, cq, NULL, 0x781, 0);
	p.b = fake_qp(&env, IBV_QPT_UD, &cap, cq, cq, NULL, 0x782, 0);
	p.x = &p.b->verbs_qp.qp_ex;
	p.ah = mlx4_create_ah(&env.pd.ibv_pd, &ah_attr);
	CHECK(p.ah != NULL, "create_ah");
	CHECK_EQ(mlx4_qp_init_wr_api(p.b, IBV_QP_EX_WITH_SEND), 0);

	ud_long_batch(&p);
	ud_lone_requests(&p);
	ud_setters_before_opcode(&p);
	ud_refused_opcodes(&p);
	for (i = 0; i < 4 * 3; i++)
		ud_batch_of_three(&p, i);

	mlx4_destroy_ah(p.ah);
	fake_qp_free(p.a);
	fake_qp_free(p.b);
}

/* XRC through wr_*: the remote SRQN in the same place; refused opcodes. */
static void test_wr_api_xrc(void)
{
	struct ibv_qp_cap cap = { .max_send_wr = 4, .max_send_sge = 1 };
	struct mlx4_qp *qp;
	struct ibv_qp_ex *x;

	qp = fake_qp(&env, IBV_QPT_XRC_SEND, &cap, cq, NULL, NULL, 0x310, 0);
	CHECK_EQ(mlx4_qp_init_wr_api(qp, IBV_QP_EX_WITH_TSO), EOPNOTSUPP);
	CHECK(!qp->wrb, "a refused QP keeps no wr_* state");
	CHECK_EQ(mlx4_qp_init_wr_api(qp, IBV_QP_EX_WITH_SEND |
				     IBV_QP_EX_WITH_RDMA_READ), 0);
	x = &qp->verbs_qp.qp_ex;
	ibv_wr_start(x);
	x->wr_id = 5;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(x);
	ibv_wr_set_xrc_srqn(x, 0xabcd);
	ibv_wr_set_sge(x, 0x66, 0x3000, 4);
	CHECK_EQ(ibv_wr_complete(x), 0);
	CHECK_BYTES(send_wqe(qp, 0), "0000000a 00000002 00abcd0c 00000000");
	CHECK_EQ(qp->sq.wrid[0], 5);
	fake_qp_free(qp);

	qp = fake_qp(&env, IBV_QPT_UD, &cap, cq, cq, NULL, 0x311, 0);
	CHECK_EQ(mlx4_qp_init_wr_api(qp, IBV_QP_EX_WITH_RDMA_WRITE), EINVAL);
	CHECK_EQ(mlx4_qp_init_wr_api(qp, IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD),
		 EINVAL);
	CHECK_EQ(mlx4_qp_init_wr_api(qp, IBV_QP_EX_WITH_BIND_MW), EINVAL);
	fake_qp_free(qp);
}

/*
 * The cases, in the order a full run takes them.  Each makes its own QPs,
 * SRQs and CQs on the shared context and CQ (set up in main() before any
 * runs), so each runs alone as it does in the full run.
 */
static const struct test_case cases[] = {
	{ "rc_send", test_rc_send, "an RC SEND's WQE, doorbell and owner bits" },
	{ "rc_opcodes", test_rc_opcodes, "each RC opcode's WQE" },
	{ "inline_and_blueflame", test_inline_and_blueflame,
	  "inline data across 64-byte blocks, BlueFlame copies" },
	{ "lone_inline_layout", test_lone_inline_layout,
	  "a lone inline request of every length, each transport" },
	{ "stamping", test_stamping, "stamping of the WQEs ahead" },
	{ "stamping_longest", test_stamping_longest,
	  "stamping covers the longest WQE so far, no more" },
	{ "ud_send", test_ud_send, "UD WQEs and their datagram segment" },
	{ "ud_small_stride", test_ud_small_stride,
	  "a UD QP in a 64-byte stride" },
	{ "raw_send", test_raw_send, "raw packet QPs, checksum offload, LSO" },
#ifdef MLX4_UNIT_BARRIER_HOOK
	{ "lso_long_headers", test_lso_long_headers,
	  "LSO headers past the first block, behind a barrier" },
#endif
	{ "xrc_and_sig_all", test_xrc_and_sig_all,
	  "XRC sends, IBV_QP_INIT_ATTR sq_sig_all" },
	{ "send_errors", test_send_errors,
	  "refused send requests leave the ring alone" },
	{ "post_recv", test_post_recv, "receive WQEs and their doorbell" },
	{ "srq", test_srq, "SRQ WQEs and the free list" },
	{ "create_limits", test_create_limits, "queue sizes refused and granted" },
	{ "threads", test_threads, "four threads posting to one QP" },
	{ "extern_buf_dontfork", test_extern_buf_dontfork,
	  "an application-allocated QP buffer is kept from fork()" },
	{ "query_device_ex", test_query_device_ex, "ibv_query_device_ex" },
	{ "roce_ah", test_roce_ah, "RoCE address handles: MAC, VLAN, priority" },
	{ "wr_api_same_wqes", test_wr_api_same_wqes,
	  "ibv_wr_* batches build ibv_post_send's WQEs" },
	{ "wr_api_long_ud_batch", test_wr_api_long_ud_batch,
	  "a UD wr_* batch longer than the spare WQEs" },
	{ "wr_api_xrc", test_wr_api_xrc, "XRC through ibv_wr_*" },
	{ "thread_domain_qp", test_thread_domain_qp,
	  "a thread domain's QP posts with its lock words held" },
};

int main(int argc, char **argv)
{
	int ret = cases_select(cases, CASES_N(cases), argc, argv, 1);

	if (ret >= 0)
		return ret;
	fake_env_init(&env, 32, 512);
	cq = fake_cq(&env, 256, 0x45);

	cases_run(cases, CASES_N(cases));

	fake_cq_free(cq);
	fake_env_cleanup(&env);
	return tap_finish();
}
