/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tcp-source [--csum] PORT DMAC SPORT SIZE...: sends from a raw packet QP on PORT
 * of the first device one TCP segment of each SIZE bytes of payload, in
 * order, to the MAC DMAC: one connection, 198.18.1.1:SPORT to
 * 198.18.1.2:5001, its sequence numbers following each other, each
 * segment's IPv4 ID 256 times its number, the payload a pattern of the
 * stream's offset.  Both
 * checksums are left zero, as a sender that offloads them leaves them,
 * or with --csum the adapter fills them in (IBV_SEND_IP_CSUM):
 * dpdk.sh has testpmd's csum engine forward these segments with the
 * checksums and TSO offloaded to the adapter, which testpmd's generators
 * cannot (they make UDP only), and checks what the adapter sent.
 * Exits 0 once every send completed.  Needs CAP_NET_RAW, as the kernel
 * does for a raw packet QP.
 */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../device.h"

#define ETH_HLEN	14
#define HDR_LEN		(ETH_HLEN + 20 + 20)
#define PAYLOAD_MAX	1500
#define FIRST_SEQ	0x10000000u

static const uint8_t src_mac[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x20 };

static void die(const char *what)
{
	fprintf(stderr, "tcp-source: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v;
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, v >> 16);
	put16(p + 2, v);
}

/* Segment @k, @size bytes from stream offset @off, into @f: its length. */
static size_t build_segment(uint8_t *f, const uint8_t dmac[6],
			    uint16_t sport, int k, size_t size, uint32_t off)
{
	uint8_t *ip = f + ETH_HLEN, *tcp = ip + 20;

	memset(f, 0, HDR_LEN);
	memcpy(f, dmac, 6);
	memcpy(f + 6, src_mac, 6);
	put16(f + 12, 0x0800);
	ip[0] = 0x45;
	put16(ip + 2, 40 + size);
	put16(ip + 4, 256 * k);
	put16(ip + 6, 0x4000);			/* don't fragment */
	ip[8] = 64;
	ip[9] = 6;				/* TCP */
	put32(ip + 12, 198u << 24 | 18 << 16 | 1 << 8 | 1);
	put32(ip + 16, 198u << 24 | 18 << 16 | 1 << 8 | 2);
	put16(tcp, sport);
	put16(tcp + 2, 5001);
	put32(tcp + 4, FIRST_SEQ + off);
	put32(tcp + 8, 1);
	tcp[12] = 5 << 4;			/* 20 bytes of header */
	tcp[13] = 0x18;				/* PSH, ACK */
	put16(tcp + 14, 65535);
	for (size_t i = 0; i < size; i++)
		f[HDR_LEN + i] = (off + i) * 7 + (off + i) / 251;
	return HDR_LEN + size;
}

static struct ibv_qp *raw_qp(struct ibv_pd *pd, struct ibv_cq *cq, int port)
{
	struct ibv_qp_init_attr init = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RAW_PACKET,
		.cap = { .max_send_wr = 1, .max_send_sge = 1,
			 .max_recv_wr = 1, .max_recv_sge = 1 },
	};
	static const enum ibv_qp_state up[] = {
		IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS,
	};
	struct ibv_qp_attr attr = { .port_num = port };
	struct ibv_qp *qp = ibv_create_qp(pd, &init);

	if (!qp)
		die("a raw packet QP");
	/* The port is named on the way to INIT only. */
	for (int i = 0; i < 3; i++) {
		attr.qp_state = up[i];
		if (ibv_modify_qp(qp, &attr, IBV_QP_STATE |
				  (up[i] == IBV_QPS_INIT ? IBV_QP_PORT : 0)))
			die("the raw QP's way to RTS");
	}
	return qp;
}

/* One frame, sent and completed (10 s at the most). */
static void send_frame(struct ibv_qp *qp, struct ibv_cq *cq,
		       struct ibv_mr *mr, size_t len, unsigned int flags)
{
	struct ibv_sge sge = { .addr = (uintptr_t)mr->addr, .length = len,
			       .lkey = mr->lkey };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED | flags },
			   *bad;
	struct ibv_wc wc;
	long spins = 0;
	int n;

	if (ibv_post_send(qp, &wr, &bad))
		die("a send");
	while ((n = ibv_poll_cq(cq, 1, &wc)) == 0 && ++spins < 10000000)
		if (spins > 1000)
			usleep(1);
	if (n != 1 || wc.status != IBV_WC_SUCCESS) {
		fprintf(stderr, "tcp-source: the send %s\n",
			n == 1 ? ibv_wc_status_str(wc.status) : "did not complete");
		exit(1);
	}
}

int main(int argc, char **argv)
{
	static uint8_t frame[HDR_LEN + PAYLOAD_MAX];
	unsigned int m[6];
	uint8_t dmac[6];
	unsigned int flags = 0;
	uint32_t off = 0;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	struct ibv_qp *qp;

	if (argc > 1 && !strcmp(argv[1], "--csum")) {
		flags = IBV_SEND_IP_CSUM;
		argv++;
		argc--;
	}
	if (argc < 5 || sscanf(argv[2], "%x:%x:%x:%x:%x:%x", &m[0], &m[1],
			       &m[2], &m[3], &m[4], &m[5]) != 6) {
		fprintf(stderr, "usage: tcp-source [--csum] PORT DMAC SPORT SIZE...\n");
		return 2;
	}
	for (int i = 0; i < 6; i++)
		dmac[i] = m[i];
	ctx = open_first_device("tcp-source");
	pd = ibv_alloc_pd(ctx);
	cq = pd ? ibv_create_cq(ctx, 2, NULL, NULL, 0) : NULL;
	mr = cq ? ibv_reg_mr(pd, frame, sizeof(frame), 0) : NULL;
	if (!mr)
		die("a PD, CQ and MR");
	qp = raw_qp(pd, cq, atoi(argv[1]));
	for (int k = 4; k < argc; k++) {
		size_t size = strtoul(argv[k], NULL, 0);

		if (size < 1 || size > PAYLOAD_MAX - 40) {
			fprintf(stderr, "tcp-source: a payload of %s bytes\n",
				argv[k]);
			return 2;
		}
		send_frame(qp, cq, mr, build_segment(frame, dmac, atoi(argv[3]),
						     k - 3, size, off), flags);
		off += size;
	}
	ibv_destroy_qp(qp);
	ibv_dereg_mr(mr);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return 0;
}
