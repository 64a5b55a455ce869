/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The trace (mlx4simd --trace FILE): one text line for each thing a
 * driver says to the device or the device does in its memory, so that two
 * drivers running the same program can be compared line by line.
 *
 * Every line starts with the process ("p<pid>"), then what happened:
 *
 *   open uverbsN cmd=ARGV...       a process opened the device file
 *   close                          and its file is gone
 *   cmd NAME in=N out=N ret=R core_in=HEX core_out=HEX drv_in=HEX drv_out=HEX
 *                                  a uverbs command: the sizes of the core
 *                                  request and response, then the core's
 *                                  and the driver's data both ways
 *   ioctl OBJECT.METHOD len=N drv=D attrs=ID:LEN[/FLAGS][=HEX],... ret=R
 *                                  a verbs ioctl: the header's length and
 *                                  driver id, each attribute read (a value
 *                                  the method takes in the attribute, in
 *                                  hex; no address), what it returned;
 *                                  "ioctl unreadable" when the header
 *                                  could not be read; a method the daemon
 *                                  does not serve is OBJECT_ID.METHOD_ID
 *   db uar send=VALUE              the send doorbell register
 *   db uar cq=WORD0,WORD1          the CQ doorbell register
 *   bf uar+OFFSET wqe=SEGMENTS     a BlueFlame write, with its bytes
 *   sq qp=QPN i=INDEX wqe=SEGMENTS a send WQE the device read
 *   rq qp=QPN i=INDEX wqe=SEGMENTS a receive WQE it took
 *   srq srq=SRQN i=INDEX wqe=...   an SRQ WQE it took
 *   cqe cq=CQN i=INDEX [ts] HEX    a CQE it wrote (the 32 bytes of
 *                                  struct mlx4_cqe, owner bit included;
 *                                  "ts" if it carries a timestamp)
 *
 * WQE bytes are printed whole, in hex, cut where their segments begin
 * (ctrl, raddr, atomic, bind, inval, dgram, data, inl, next, pad), so a
 * reader can tell an address from a key without knowing the format.
 * Register values are as the device reads them (host order).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


#include "host.h"
#include "opcode.h"

FILE *sim_trace;

#define TRACE_BUFFER	(1 << 20)

int trace_open(const char *path)
{
	sim_trace = fopen(path, "we");
	if (!sim_trace)
		return -1;
	/* A big buffer: the data path should not wait for the disk. */
	setvbuf(sim_trace, NULL, _IOFBF, TRACE_BUFFER);
	return 0;
}

void trace_close(void)
{
	if (sim_trace)
		fclose(sim_trace);
	sim_trace = NULL;
}

void trace_hex(const void *buf, size_t len)
{
	const uint8_t *p = buf;

	for (size_t i = 0; i < len; i++)
		fprintf(sim_trace, "%02x", p[i]);
}

static void segment(const char *name, const uint8_t *p, size_t len,
		    bool *first)
{
	fprintf(sim_trace, "%s%s:", *first ? "" : ",", name);
	trace_hex(p, len);
	*first = false;
}

/* ------------------------------------------------------------------ */
/* Processes and commands                                              */
/* ------------------------------------------------------------------ */

void trace_open_file(const struct sim_ctx *ctx, uint32_t index)
{
	char path[64], argv[512];
	ssize_t n = 0;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)ctx->pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, argv, sizeof(argv) - 1);
		close(fd);
	}
	if (n < 0)
		n = 0;
	argv[n] = 0;
	/* The arguments, blank-separated, to the end of the line. */
	for (ssize_t i = 0; i < n; i++)
		if (argv[i] == 0 || argv[i] == '\n')
			argv[i] = i == n - 1 ? 0 : ' ';
	fprintf(sim_trace, "p%d open uverbs%u cmd=%s\n", (int)ctx->pid, index,
		argv);
}

void trace_close_file(const struct sim_ctx *ctx)
{
	fprintf(sim_trace, "p%d close\n", (int)ctx->pid);
}

/* ------------------------------------------------------------------ */
/* Doorbells                                                           */
/* ------------------------------------------------------------------ */

void trace_send_doorbell(const struct sim_ctx *ctx, uint32_t value)
{
	fprintf(sim_trace, "p%d db uar send=0x%08x\n", (int)ctx->pid, value);
}

void trace_cq_doorbell(const struct sim_ctx *ctx, uint32_t word0,
		       uint32_t word1)
{
	fprintf(sim_trace, "p%d db uar cq=0x%08x,0x%08x\n", (int)ctx->pid,
		word0, word1);
}

static void send_wqe_segments(enum ibv_qp_type type, const uint8_t *wqe,
			      size_t size);

/*
 * A BlueFlame copy of @size bytes at @offset of the context's pages, and
 * whether it held the ring's WQE (doorbell.c): "same", "unlike", or
 * "overtaken" by the next copy before it could be judged.
 */
void trace_blueflame(const struct sim_ctx *ctx, unsigned int offset,
		     const char *verdict, enum ibv_qp_type type,
		     const uint8_t *wqe, size_t size)
{
	fprintf(sim_trace, "p%d bf uar+0x%x %s wqe=", (int)ctx->pid, offset,
		verdict);
	send_wqe_segments(type, wqe, size);
	fputc('\n', sim_trace);
}

/* ------------------------------------------------------------------ */
/* WQEs                                                                */
/* ------------------------------------------------------------------ */

/* The opcode-specific segments between control and data, by name. */
static void middle_segments(enum ibv_qp_type type, uint8_t opcode,
			    const uint8_t *p, size_t room, size_t *off,
			    bool *first)
{
	unsigned int segs = opcode_segs(opcode_get(opcode), type);

	for (int i = 0; i < OP_SEGS; i++) {
		size_t len = MIN(op_seg_layout[i].size, room - *off);

		if (!(segs & op_seg_layout[i].seg))
			continue;
		segment(op_seg_layout[i].name, p + *off, len, first);
		*off += len;
	}
}

/*
 * Data segments: a byte count with bit 31 set starts an inline segment,
 * padded to 16 bytes; anything else is a 16-byte gather entry.  An empty
 * inline segment (a gather entry of no length) shows its first word
 * only: the device reads nothing of the other twelve bytes.
 */
static void data_segments(const uint8_t *p, size_t off, size_t size,
			  bool *first)
{
	while (off < size) {
		uint32_t word = be32toh(*(const uint32_t *)(p + off));
		size_t len = 16;

		if (word != 0xffffffff && (word & MLX4_INLINE_SEG)) {
			len = ((4 + (word & ~MLX4_INLINE_SEG)) + 15) & ~15u;
			segment("inl", p + off, MIN(word == MLX4_INLINE_SEG ?
						    4 : len, size - off),
				first);
		} else {
			segment("data", p + off, MIN(len, size - off), first);
		}
		off += len;
	}
}

static void send_wqe_segments(enum ibv_qp_type type, const uint8_t *wqe,
			      size_t size)
{
	uint8_t opcode = wqe[3] & 0x1f;
	bool first = true;
	size_t off;

	segment("ctrl", wqe, MIN(size, 16), &first);
	off = MIN(size, 16);
	if (off < size)
		middle_segments(type, opcode, wqe, size, &off, &first);
	data_segments(wqe, off, size, &first);
}

void trace_send_wqe(const struct sim_qp *qp, uint32_t index,
		    const uint8_t *wqe)
{
	size_t stride = 1u << qp->sq.wqe_shift;
	size_t size = MIN((size_t)(wqe[7] & 0x3f) * 16, stride);

	fprintf(sim_trace, "p%d sq qp=0x%x i=%u wqe=", (int)qp->ctx->pid,
		qp->qpn, index);
	send_wqe_segments(qp->type, wqe, MAX(size, 16));
	fputc('\n', sim_trace);
}

/* A receive WQE is gather entries to the end of its stride. */
void trace_recv_wqe(const struct sim_qp *qp, uint32_t index,
		    const uint8_t *wqe, size_t size)
{
	bool first = true;

	fprintf(sim_trace, "p%d rq qp=0x%x i=%u wqe=", (int)qp->ctx->pid,
		qp->qpn, index);
	for (size_t off = 0; off < size; off += 16)
		segment("data", wqe + off, MIN(16, size - off), &first);
	fputc('\n', sim_trace);
}

void trace_srq_wqe(const struct sim_srq *srq, uint32_t index,
		   const uint8_t *wqe, size_t size)
{
	bool first = true;

	fprintf(sim_trace, "p%d srq srq=0x%x i=%u wqe=", (int)srq->ctx->pid,
		srq->srqn, index);
	for (size_t off = 0; off < size; off += 16)
		segment(off ? "data" : "next", wqe + off, MIN(16, size - off),
			&first);
	fputc('\n', sim_trace);
}

/* ------------------------------------------------------------------ */
/* CQEs                                                                */
/* ------------------------------------------------------------------ */

void trace_cqe(const struct sim_cq *cq, uint32_t index,
	       const struct mlx4_cqe *cqe)
{
	/* "ts": the CQE carries a completion time, which no two runs share. */
	fprintf(sim_trace, "p%d cqe cq=0x%x i=%u %s", (int)cq->ctx->pid,
		cq->cqn, index, cq->timestamped ? "ts " : "");
	trace_hex(cqe, sizeof(*cqe));
	fputc('\n', sim_trace);
}
