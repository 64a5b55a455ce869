/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The wire of the Ethernet ports as a capture (--pcap FILE): each RoCE
 * packet a message and its answer take, framed as the adapter frames it,
 * so that an outside judge (Wireshark's dissectors, tshark) can read the
 * simulated wire.
 *
 * The daemon moves whole messages; here each becomes its packets: split at
 * the path MTU, with the opcodes of its first, middle and last packets, the
 * extended headers each carries (RETH, AtomicETH, ImmDt, IETH, DETH,
 * XRCETH, AETH, AtomicAckETH), its payload read back from the sender, its
 * pad, and the ICRC.  RoCE v1 is a GRH under EtherType 0x8915; RoCE v2 an
 * IPv4 or IPv6 header and UDP to port 4791.  The kind follows the source
 * GID's type, as on the adapter.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>

#include "fabric.h"
#include "../host/opcode.h"
#include "roce.h"

static FILE *capture;

int pcap_open(const char *path)
{
	struct {
		uint32_t magic;
		uint16_t major, minor;
		int32_t zone;
		uint32_t sigfigs, snaplen, linktype;
	} head = { 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1 /* Ethernet */ };

	capture = fopen(path, "we");
	if (!capture)
		return -errno;
	fwrite(&head, sizeof(head), 1, capture);
	return 0;
}

void pcap_close(void)
{
	if (capture)
		fclose(capture);
	capture = NULL;
}

static void emit(const struct roce_path *a, const struct roce_packet *pkt)
{
	uint8_t frame[ROCE_MAX_FRAME];
	size_t len;

	if (!capture)
		return;
	len = roce_build(a, pkt, frame);
	if (len)
		pcap_frame(frame, len);
}

/* A raw packet QP's frame, as it went on the wire. */
void pcap_frame(const uint8_t *frame, size_t len)
{
	struct timeval tv;
	uint32_t rec[4];

	if (!capture)
		return;
	gettimeofday(&tv, NULL);
	rec[0] = tv.tv_sec;
	rec[1] = tv.tv_usec;
	rec[2] = rec[3] = len;
	fwrite(rec, sizeof(rec), 1, capture);
	fwrite(frame, len, 1, capture);
}

/*
 * A connection manager's MAD (cm.c) between two Ethernet ports: a UD
 * SEND to the GSI's QP 1 from QP 1, with the GSI's well-known Q_Key, as
 * the kernel's MAD layer sends it, RoCE v1 or v2 by the GID type.
 */
void pcap_mad(const struct sim_port *from, const struct sim_port *to,
	      const uint8_t sgid[16], const uint8_t dgid[16], bool v2,
	      const uint8_t *mad, size_t len)
{
	static uint32_t psn;
	struct roce_packet pkt = {
		.opcode = TRANSPORT_UD | SEND_ONLY, .dqpn = 1, .psn = psn++,
		.ext_len = 8, .payload = mad, .len = len,
	};
	struct roce_path a = { .v2 = v2, .hop_limit = 64,
			       .udp_sport = 0xc001 };

	if (!capture)
		return;
	memcpy(a.smac, from->mac, 6);
	memcpy(a.dmac, to->mac, 6);
	memcpy(a.sgid, sgid, 16);
	memcpy(a.dgid, dgid, 16);
	a.ipv4 = v2 && gid_is_ipv4(sgid);
	roce_put32(pkt.ext, 0x80010000);		/* IB_QP1_QKEY */
	roce_put32(pkt.ext + 4, 1);
	emit(&a, &pkt);
}

static bool ethernet(const struct sim_qp *qp)
{
	const struct sim_port *port = hca_port(qp->hca, qp->port);

	return port && port->link_layer == IBV_LINK_LAYER_ETHERNET;
}

static const uint8_t *qp_mac(const struct sim_qp *qp)
{
	return hca_port(qp->hca, qp->port)->mac;
}

/* The request packets of @msg from @src to @dst. */
void pcap_request(const struct sim_qp *src, const struct sim_qp *dst,
		  const struct sim_message *msg)
{
	const struct sim_opcode *op = opcode_get(msg->opcode);
	static uint8_t data[1u << 16];
	struct roce_packet pkt = { .dqpn = dst->qpn };
	uint32_t mtu = 256u << (src->mtu - 1), n;
	struct roce_path a;

	if (!capture || !ethernet(src) || src->type == IBV_QPT_RAW_PACKET)
		return;
	if (src->type == IBV_QPT_UD)
		roce_datagram_path(src, qp_mac(dst), msg, &a);
	else
		roce_connected_path(src, &a);
	if (op->kind == OP_READ || op->kind == OP_ATOMIC) {
		roce_first_ext(src, msg, &pkt);
		pkt.psn = msg->psn;
		if (op->kind == OP_READ) {
			pkt.opcode = roce_transport(src->type) | READ_REQUEST;
			pkt.ext_len += roce_put_reth(pkt.ext + pkt.ext_len, msg);
		} else {
			pkt.opcode = roce_transport(src->type) |
				(msg->opcode == MLX4_OPCODE_ATOMIC_CS ?
				 CMP_SWAP : FETCH_ADD);
			roce_atomic_eth(msg, &pkt);
		}
		emit(&a, &pkt);
		return;
	}
	/* The payload, read back from the sender (only while capturing). */
	if (msg->length > sizeof(data))
		return;
	if (msg->inline_data)
		memcpy(data, msg->inline_data, msg->length);
	else if (msg->length &&
		 dma_readv(msg->src_pid, msg->src, msg->nsrc, data))
		return;
	if (src->type == IBV_QPT_UD)
		mtu = msg->length ? msg->length : 1;
	n = msg->length ? (msg->length + mtu - 1) / mtu : 1;
	for (uint32_t i = 0; i < n; i++) {
		roce_first_ext(src, msg, &pkt);
		pkt.opcode = roce_transport(src->type) |
			     roce_request_opcode(op, msg, i, n, &pkt);
		pkt.solicited = msg->solicited && i == n - 1;
		pkt.psn = msg->psn + i;
		pkt.payload = data + (size_t)i * mtu;
		pkt.len = i == n - 1 ? msg->length - (size_t)i * mtu : mtu;
		emit(&a, &pkt);
	}
}

/* The responder's answer to @msg: an ACK or NAK, read data, an atomic's value. */
void pcap_answer(const struct sim_qp *src, struct sim_qp *dst,
		 const struct sim_message *msg, enum resp_status st)
{
	const struct sim_opcode *op = opcode_get(msg->opcode);
	static uint8_t data[1u << 16];
	struct roce_packet pkt = { .dqpn = src->qpn };
	uint32_t mtu = 256u << (dst->mtu - 1), n, aeth;
	struct roce_path a;

	if (!capture || !ethernet(dst) || st == RESP_DROP ||
	    src->type == IBV_QPT_UD || src->type == IBV_QPT_UC ||
	    src->type == IBV_QPT_RAW_PACKET)
		return;
	roce_connected_path(dst, &a);
	/* The MSN counts the messages the responder has completed. */
	if (st == RESP_ACK)
		dst->wire_msn++;
	aeth = (uint32_t)roce_aeth_syndrome(st, msg->min_rnr_timer) << 24 |
	       (dst->wire_msn & NUM24_MASK);
	pkt.psn = msg->psn + msg->npkts - 1;
	if (st == RESP_ACK && op->kind == OP_READ) {
		if (msg->length > sizeof(data) ||
		    (msg->length &&
		     dma_read(msg->read_pid, msg->read_addr, data, msg->length)))
			return;
		n = msg->length ? (msg->length + mtu - 1) / mtu : 1;
		for (uint32_t i = 0; i < n; i++) {
			bool with_aeth = i == 0 || i == n - 1;

			pkt.opcode = roce_transport(src->type) |
				(n == 1 ? READ_RESP_ONLY : i == 0 ? READ_RESP_FIRST :
				 i == n - 1 ? READ_RESP_LAST : READ_RESP_MIDDLE);
			pkt.psn = msg->psn + i;
			pkt.ext_len = with_aeth ? 4 : 0;
			roce_put32(pkt.ext, aeth);
			pkt.payload = data + (size_t)i * mtu;
			pkt.len = i == n - 1 ? msg->length - (size_t)i * mtu : mtu;
			emit(&a, &pkt);
		}
		return;
	}
	roce_put32(pkt.ext, aeth);
	pkt.ext_len = 4;
	pkt.opcode = roce_transport(src->type) | ACKNOWLEDGE;
	if (st == RESP_ACK && op->kind == OP_ATOMIC) {
		pkt.opcode = roce_transport(src->type) | ATOMIC_ACKNOWLEDGE;
		roce_put64(pkt.ext + 4, msg->atomic_orig);
		pkt.ext_len = 12;
	}
	emit(&a, &pkt);
}
