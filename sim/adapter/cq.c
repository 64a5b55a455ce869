/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The device's side of a completion queue: CQEs written into the
 * process's buffer, the consumer index read from its doorbell record,
 * and arming.  The kernel's side (creation, resize, destruction) is in
 * kernel/cq.c.
 *
 * The owner bit of entry n is valid for software when it equals the pass
 * parity !!(n & nent).  A CQE is written body first and owner byte last,
 * so that software which sees the owner flip also sees the body.
 *
 * Arming: the driver writes arm_db (sequence number, command, consumer
 * index), then rings the CQ doorbell in its UAR page.
 */
#include <stdlib.h>
#include <string.h>

#include "adapter.h"

/* An arm record's command, beside its consumer index. */
#define ARM_CMD(v)	((v) & (0xfU << 24))

/* The consumer index, as the driver last published it. */
uint32_t cq_read_ci(struct sim_cq *cq)
{
	const uint8_t *here = dma_pins_find(&cq->db_pins, cq->db, 4);
	uint32_t db;

	/* A load where the record is shared, unless a batch may write it. */
	if (here && !cq_batched(cq->ctx->pid)) {
		memcpy(&db, here, sizeof(db));
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
	} else if (dma_read(cq->ctx->pid, cq->db, &db, sizeof(db))) {
		breach(cq->ctx, "CQ 0x%x: doorbell record at 0x%llx unreadable",
		       cq->cqn, (unsigned long long)cq->db);
		return cq->ci;
	}
	return be32toh(db) & NUM24_MASK;
}

/*
 * Whether @cq is full enough that its consumer index is worth reading
 * beside other reads of its process (queue.c), before a CQE needs it.
 */
bool cq_nearly_full(const struct sim_cq *cq)
{
	return cq_outstanding(cq) * 2 >= cq->nent;
}

/* The consumer index @ci, as read: a breach if ahead of the producer. */
void cq_note_ci(struct sim_cq *cq, uint32_t ci)
{
	uint32_t old = cq->ci;

	cq->ci = ci;
	if (cq_outstanding(cq) > cq->nent) {
		breach(cq->ctx, "CQ 0x%x: consumer index 0x%x ahead of producer 0x%x",
		       cq->cqn, ci, cq->prod & NUM24_MASK);
		cq->ci = old;
	}
}

/* Refresh cq->ci from its doorbell record. */
void cq_refresh_ci(struct sim_cq *cq)
{
	cq_note_ci(cq, cq_read_ci(cq));
}

static void fire(struct sim_cq *cq)
{
	cq->arm = CQ_DISARMED;
	adapter_comp_event(cq);
}

void cq_arm(struct sim_cq *cq, enum sim_cq_arm how, uint32_t ci)
{
	if (how > cq->arm)
		cq->arm = how;
	/* CQEs the driver has not consumed yet are news already. */
	if (cq->arm == CQ_ARMED_NEXT && ((cq->prod - ci) & NUM24_MASK))
		fire(cq);
}

/* Act on a new arm request in @cq's arm_db record, if there is one. */
static void check_arm_record(struct sim_cq *cq)
{
	uint32_t v;

	if (dma_read(cq->ctx->pid, cq->db + 4, &v, sizeof(v))) {
		breach(cq->ctx, "CQ 0x%x: arm record unreadable", cq->cqn);
		return;
	}
	v = be32toh(v);
	if (v == cq->armed_db)
		return;
	cq->armed_db = v;
	if (((cq->prod - v) & NUM24_MASK) > cq->nent) {
		breach(cq->ctx, "CQ 0x%x: arm with consumer index 0x%x ahead of producer 0x%x",
		       cq->cqn, v & NUM24_MASK, cq->prod & NUM24_MASK);
		return;
	}
	switch (ARM_CMD(v)) {
	case MLX4_CQ_DB_REQ_NOT_SOL:
		cq_arm(cq, CQ_ARMED_SOLICITED, v & NUM24_MASK);
		break;
	case MLX4_CQ_DB_REQ_NOT:
		cq_arm(cq, CQ_ARMED_NEXT, v & NUM24_MASK);
		break;
	default:
		breach(cq->ctx, "CQ 0x%x: arm record 0x%08x has no command",
		       cq->cqn, v);
	}
}

/*
 * A write to the CQ doorbell of @ctx's UAR: its first word names the CQ
 * and the command (the second repeats the consumer index of the arm
 * record).  The page keeps only the last write, so an arm of another CQ
 * may have been overwritten: the records of all the context's CQs say
 * what was asked.
 */
void cq_doorbell(struct sim_ctx *ctx, uint32_t word0)
{
	uint32_t cqn = word0 & NUM24_MASK;
	struct sim_cq *cq = table_get(&ctx->hca->cqs, cqn);

	if (!cq || cq->ctx != ctx)
		breach(ctx, "CQ doorbell 0x%08x for CQ 0x%x, not one of this context's",
		       word0, cqn);
	else if (ARM_CMD(word0) != MLX4_CQ_DB_REQ_NOT_SOL &&
		 ARM_CMD(word0) != MLX4_CQ_DB_REQ_NOT)
		breach(ctx, "CQ 0x%x: doorbell 0x%08x has no arm command",
		       cqn, word0);
	list_for_each(&ctx->cqs, cq, struct sim_cq, ctx_link)
		check_arm_record(cq);
}

void cq_error(struct sim_cq *cq)
{
	if (cq->overrun)
		return;
	cq->overrun = true;
	sim_log("pid %d: CQ 0x%x overrun: %u entries, all unpolled",
		(int)cq->ctx->pid, cq->cqn, cq->nent);
	adapter_async_event(cq->ctx, cq->uobj.user_handle, IBV_EVENT_CQ_ERR,
			 &cq->async_events_reported, cq);
}

/*
 * CQs created for timestamps carry them where sl and slid would be.
 * When the low 16 bits are 0 the top 32 are one behind, as the
 * adapter's are: mlx4_en adds !lo back (mlx4_en_get_cqe_ts()).
 */
static void timestamp(struct mlx4_cqe *cqe)
{
	uint64_t ticks = (now_ns() - sim.start_ns) * CX3_CORE_CLOCK_KHZ /
			 1000000;

	cqe->ts_47_16 = htobe32((ticks >> 16) - !(ticks & 0xffff));
	cqe->ts_15_8 = ticks >> 8;
	cqe->ts_7_0 = ticks;
}

/*
 * CQEs written together.  A transfer costs about 2 us however little it
 * carries, so a stream of messages to one process paid that for each.  A
 * CQE, with the data it reports, now waits in a batch of one process's
 * writes until the device's memory traffic must be seen: before any other
 * transfer (dma.c writes the batches first, so what the device writes and
 * reads keeps its order), a CQE for another process, an armed CQ's event,
 * a command's reply, and at the end of every run of a send queue and of
 * every pass of the loop.  The CQ's producer counts the CQE at once.
 * (A CQE into a CQ whose pages the daemon maps costs no transfer: it is
 * stored at once, unless a batch holds CQEs of its process; cqe_direct.)
 *
 * The batch is one transfer: all the data first, then the CQEs.  Each
 * piece costs about 0.5 us more (the kernel pins its pages), so CQEs
 * that follow each other in a CQ go as one run, in two pieces: the run
 * with every owner bit still the device's, then the same bytes from the
 * first owner byte on, with the owner bits handed over.  A copy may store
 * its bytes in any order, but the first piece is all stored before the
 * second starts, so a CQE's body is in place before its owner bit flips.
 * A run covers the reserved first half of 64-byte entries too, with
 * zeros, as the adapter writes whole entries.
 *
 * A batch that cannot be written whole is written CQE by CQE; where the
 * data a CQE reports cannot be written, the receive completes in error
 * in the CQE's place and its QP goes to the error state, as when the
 * write fails at once (but its requester was answered already: memory a
 * real adapter writes is pinned and cannot fail it so late).  The flush
 * can come in the middle of anything (a transfer, a CQE being pushed
 * for another process), so the QP goes to the error state later, at
 * the end of the pass or of the command (cq_settle()): its flush CQEs
 * then never land in a batch being written, nor move a CQ's producer
 * under a push that has read it.
 */
#define BATCH_BYTES	(64 * 1024)
#define BATCH_CQES	64
#define CQE_BYTES	((int)sizeof(struct mlx4_cqe))

struct batch_cqe {
	struct sim_cq *cq;
	uint32_t index;			/* the CQ's producer count for it */
	struct mlx4_cqe cqe;
	int first, ndata;		/* its data pieces */
};

/* CQEs of one CQ that follow each other in its buffer. */
struct batch_run {
	struct sim_cq *cq;
	uint32_t next;			/* the producer count after it */
	uint64_t addr;			/* of its first CQE */
	size_t off, len;		/* its bytes in image */
};

struct cqe_batch {
	pid_t pid;
	int ndata, ncqe, nrun;
	size_t used;
	struct dma_piece data[DMA_PIECES_MAX];
	uint8_t bytes[BATCH_BYTES];
	struct batch_cqe cqe[BATCH_CQES];
	struct batch_run run[DMA_PIECES_MAX / 2];
	size_t image_used;
	uint8_t image[BATCH_CQES * 64];	/* the runs, owner bits handed over */
};

/*
 * Two batches, written in this order: a requester's completions (send
 * CQEs) wait apart from the other process's CQEs, and are written after
 * them.  In a stream one process sends and another receives: with one
 * batch each send CQE between the receive CQEs wrote the batch, as it was
 * another process's (more than half of ib_send_bw's writes).  A send CQE
 * may come later than CQEs pushed after it, so it is only late; never
 * earlier than a CQE pushed before it, as the other batch is written
 * whenever the send batch is.  A send CQE joins the other batch when that
 * holds its own process's CQEs: a CQ shared by sends and receives then
 * keeps one run.  (Else a CQE after it in its CQ may land first, within
 * the pass; the program's poll waits at the send CQE, as for any CQE
 * not yet written.)
 */
enum { BATCH_OTHER, BATCH_SEND, BATCHES };
static struct cqe_batch batches[BATCHES];

/* Which batch CQE @cqe of @cq waits in (see above). */
static int batch_for(const struct sim_cq *cq, const struct mlx4_cqe *cqe)
{
	const struct cqe_batch *other = &batches[BATCH_OTHER];

	if (!(cqe->owner_sr_opcode & MLX4_CQE_IS_SEND_MASK) ||
	    (other->ncqe && other->pid == cq->ctx->pid))
		return BATCH_OTHER;
	return BATCH_SEND;
}

/* Whether a batch holds CQEs of @pid's, to be written. */
bool cq_batched(pid_t pid)
{
	for (int i = 0; i < BATCHES; i++)
		if (batches[i].ncqe && batches[i].pid == pid)
			return true;
	return false;
}

/*
 * A CQE straight into its CQ's pages where the daemon maps them (Pinned
 * memory in sim/README): its body, then its owner byte, as a batch
 * writes them.  Not while a batch holds CQEs of the process (they come
 * first): false, and the CQE joins the batch.
 */
static bool cqe_direct(struct sim_cq *cq, uint32_t index,
		       const struct mlx4_cqe *cqe)
{
	uint8_t *here;

	if (cq_batched(cq->ctx->pid))
		return false;
	here = dma_pins_find(&cq->buf_pins, cq_entry_addr(cq, index),
			     CQE_BYTES);
	if (!here)
		return false;
	memcpy(here, cqe, CQE_BYTES - 1);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	__atomic_store_n(here + CQE_BYTES - 1, cqe->owner_sr_opcode,
			 __ATOMIC_RELAXED);
	return true;
}

/* The CQE of @b alone, after its data, or in error if the data fails. */
static void write_one(pid_t pid, struct batch_cqe *b,
		      const struct dma_piece *data)
{
	uint32_t qpn = be32toh(b->cqe.vlan_my_qpn) & MLX4_CQE_QPN_MASK;
	uint64_t addr = cq_entry_addr(b->cq, b->index);
	struct dma_piece own[2] = {
		{ addr, &b->cqe, CQE_BYTES - 1 },
		{ addr + CQE_BYTES - 1, &b->cqe.owner_sr_opcode, 1 },
	};
	struct sim_qp *qp;

	if (b->ndata && dma_write_batch(pid, data, b->ndata)) {
		comp_error_cqe(&b->cqe, qpn, be16toh(b->cqe.wqe_index),
			       MLX4_CQE_SYNDROME_LOCAL_PROT_ERR, false);
		b->cqe.owner_sr_opcode |= b->index & b->cq->nent ?
					  MLX4_CQE_OWNER_MASK : 0;
		qp = qp_by_num(b->cq->hca, qpn);
		if (qp)
			qp_fail_later(qp);
	}
	if (dma_write_batch(pid, own, 2))
		breach(b->cq->ctx, "CQ 0x%x: buffer at 0x%llx unwritable",
		       b->cq->cqn, (unsigned long long)b->cq->buf);
}

/*
 * The batch's data as pieces into @p; their count.  A piece that goes on
 * where the one before ends, in the process and in the batch, joins it:
 * a stream of receives into one buffer, each after the last, is one
 * piece, and the kernel walks and pins its pages once.  The data reach
 * the process in any order among themselves (only the CQEs must come
 * after them), and pieces that only touch do not overlap, so no byte
 * lands otherwise.
 */
static int batch_data_pieces(const struct cqe_batch *b, struct dma_piece *p)
{
	int n = 0;

	for (int i = 0; i < b->ndata; i++) {
		const struct dma_piece *d = &b->data[i];
		struct dma_piece *last = n ? &p[n - 1] : NULL;

		if (last && last->addr + last->len == d->addr &&
		    (uint8_t *)last->buf + last->len == d->buf)
			last->len += d->len;
		else
			p[n++] = *d;
	}
	return n;
}

/* The batch's pieces (see above) into @p; their count. */
static int batch_pieces(const struct cqe_batch *b, struct dma_piece *p)
{
	static uint8_t held[sizeof(b->image)];
	int n = batch_data_pieces(b, p);

	memcpy(held, b->image, b->image_used);
	for (int i = 0; i < b->nrun; i++) {
		const struct batch_run *r = &b->run[i];

		for (size_t o = CQE_BYTES - 1; o < r->len; o += r->cq->cqe_size)
			held[r->off + o] ^= MLX4_CQE_OWNER_MASK;
		p[n++] = (struct dma_piece){ r->addr, held + r->off, r->len };
	}
	for (int i = 0; i < b->nrun; i++) {
		const struct batch_run *r = &b->run[i];

		p[n++] = (struct dma_piece){ r->addr + CQE_BYTES - 1,
					     (uint8_t *)b->image + r->off +
					     CQE_BYTES - 1,
					     r->len - (CQE_BYTES - 1) };
	}
	return n;
}

/* Write what batch @b holds (see above). */
static void batch_write(struct cqe_batch *b)
{
	struct dma_piece p[DMA_PIECES_MAX];
	int n;

	if (!b->ncqe)
		return;
	n = batch_pieces(b, p);
	if (dma_write_batch(b->pid, p, n))
		for (int i = 0; i < b->ncqe; i++)
			write_one(b->pid, &b->cqe[i], &b->data[b->cqe[i].first]);
	b->ncqe = b->ndata = b->nrun = 0;
	b->used = b->image_used = 0;
}

/* Write batch @which and those written before it (see above). */
static void batches_write(int which)
{
	for (int i = 0; i <= which; i++)
		batch_write(&batches[i]);
}

void cq_flush(void)
{
	batches_write(BATCHES - 1);
}

static bool meets(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen)
{
	return a < b + blen && b < a + alen;
}

/* Whether piece @p of @pid meets bytes batch @b holds. */
static bool batch_meets(const struct cqe_batch *b, pid_t pid,
			const struct dma_piece *p)
{
	if (!b->ncqe || b->pid != pid)
		return false;
	for (int i = 0; i < b->ndata; i++)
		if (meets(p->addr, p->len, b->data[i].addr, b->data[i].len))
			return true;
	for (int i = 0; i < b->nrun; i++)
		if (meets(p->addr, p->len, b->run[i].addr, b->run[i].len))
			return true;
	return false;
}

/* Whether a read of piece @p of @pid may see bytes a batch holds. */
static bool read_meets_batches(pid_t pid, const struct dma_piece *p)
{
	if (!dma_in_window(pid, p->addr, p->len))
		return true;	/* maybe shared with another process */
	for (int i = 0; i < BATCHES; i++)
		if (batch_meets(&batches[i], pid, p))
			return true;
	return false;
}

/*
 * Before a transfer of @pid's (dma.c): the batches are written first,
 * as the device's writes come before its later reads and writes.  A read
 * that meets none of their bytes cannot tell whether they were written,
 * so it does not wait for them: a stream's payload reads wrote the
 * batches once a message (a quarter of the daemon's instructions).  Pages
 * outside windows may be another process's too: a read of them writes
 * the batches.
 */
void cq_flush_before(pid_t pid, bool write, const struct dma_piece *p, int n)
{
	if (!batches[BATCH_OTHER].ncqe && !batches[BATCH_SEND].ncqe)
		return;
	for (int i = 0; i < n && !write; i++)
		write = read_meets_batches(pid, &p[i]);
	if (write)
		cq_flush();
}

/*
 * The batch written and the QPs whose data it failed to write in the
 * error state, whose flush CQEs go into a new batch, and so on: where
 * nothing is being pushed or walked (the loop, between passes and
 * commands).  Ends, as each QP goes to the error state once.
 */
void cq_settle(void)
{
	do
		cq_flush();
	while (qp_fail_pending());
}

/* Whether CQE @index of @cq follows on batch @b's last run. */
static bool extends_run(const struct cqe_batch *b, const struct sim_cq *cq,
			uint32_t index)
{
	const struct batch_run *r;

	if (!b->nrun)
		return false;
	r = &b->run[b->nrun - 1];
	return r->cq == cq && r->next == index && (index & (cq->nent - 1));
}

/* Whether batch @b has room for a CQE reporting @n pieces of @bytes. */
static bool batch_room(const struct cqe_batch *b, const struct sim_cq *cq,
		       uint32_t index, int n, size_t bytes)
{
	int runs = b->nrun + !extends_run(b, cq, index);

	return b->ncqe < BATCH_CQES &&
	       b->ndata + n + 2 * runs <= DMA_PIECES_MAX &&
	       b->used + bytes <= BATCH_BYTES &&
	       b->image_used + 2 * cq->cqe_size <= sizeof(b->image);
}

/* Add CQE @index of @cq to batch @b's runs. */
static void batch_run_add(struct cqe_batch *b, struct sim_cq *cq,
			  uint32_t index, const struct mlx4_cqe *cqe)
{
	struct batch_run *r;
	size_t gap = cq->cqe_size - CQE_BYTES;

	if (extends_run(b, cq, index)) {
		r = &b->run[b->nrun - 1];
		memset(b->image + b->image_used, 0, gap);
		b->image_used += gap;
		r->len += gap;
	} else {
		r = &b->run[b->nrun++];
		*r = (struct batch_run){ cq, index, cq_entry_addr(cq, index),
					 b->image_used, 0 };
	}
	memcpy(b->image + b->image_used, cqe, CQE_BYTES);
	b->image_used += CQE_BYTES;
	r->len += CQE_BYTES;
	r->next = index + 1;
}

/*
 * Add CQE @index of @cq to its batch, after the @n pieces it reports;
 * false when it does not fit in an empty batch either.  A batch that
 * holds another process's CQEs, or has no room left, is written first.
 */
static bool batch_add(struct sim_cq *cq, uint32_t index,
		      const struct mlx4_cqe *cqe, const struct dma_piece *data,
		      int n)
{
	int which = batch_for(cq, cqe);
	struct cqe_batch *b = &batches[which];
	size_t bytes = 0;

	for (int i = 0; i < n; i++)
		bytes += data[i].len;
	if (n + 2 > DMA_PIECES_MAX || bytes > BATCH_BYTES)
		return false;
	if (b->ncqe && (b->pid != cq->ctx->pid ||
			!batch_room(b, cq, index, n, bytes)))
		batches_write(which);
	b->pid = cq->ctx->pid;
	b->cqe[b->ncqe++] = (struct batch_cqe){ cq, index, *cqe, b->ndata, n };
	for (int i = 0; i < n; i++) {
		memcpy(b->bytes + b->used, data[i].buf, data[i].len);
		b->data[b->ndata++] = (struct dma_piece){
			data[i].addr, b->bytes + b->used, data[i].len };
		b->used += data[i].len;
	}
	batch_run_add(b, cq, index, cqe);
	return true;
}

/* Write one CQE (into the batch: see above). */
void cq_push(struct sim_cq *cq, const struct mlx4_cqe *in, bool solicited)
{
	if (cq_push_after(cq, in, solicited, NULL, 0))
		breach(cq->ctx, "CQ 0x%x: buffer at 0x%llx unwritable", cq->cqn,
		       (unsigned long long)cq->buf);
}

/*
 * cq_push(), with the @n pieces the CQE reports (a small receive's data)
 * written first in the same ordered transfer.  -EFAULT when a transfer
 * made at once failed (nothing counted: the caller may do it the long
 * way, which says which part failed).  A full CQ writes the pieces, then
 * fails the CQ, as the long way would.
 */
int cq_push_after(struct sim_cq *cq, const struct mlx4_cqe *in,
		  bool solicited, const struct dma_piece *data, int n)
{
	struct dma_piece piece[DMA_PIECES_MAX];
	struct mlx4_cqe cqe = *in;
	uint64_t addr;
	bool error, fires;

	if (cq->overrun)
		return 0;
	if (cq_outstanding(cq) >= cq->nent) {
		cq_refresh_ci(cq);
		if (cq_outstanding(cq) >= cq->nent) {
			if (n && dma_write_ordered(cq->ctx->pid, data, n))
				return -EFAULT;
			cq_error(cq);
			return 0;
		}
	}
	if (cq->timestamped)
		timestamp(&cqe);
	addr = cq_entry_addr(cq, cq->prod);
	cqe.owner_sr_opcode |= cq->prod & cq->nent ? MLX4_CQE_OWNER_MASK : 0;
	if ((n || !cqe_direct(cq, cq->prod, &cqe)) &&
	    !batch_add(cq, cq->prod, &cqe, data, n)) {
		if (n)
			memcpy(piece, data, n * sizeof(*piece));
		piece[n++] = (struct dma_piece){ addr, &cqe, sizeof(cqe) - 1 };
		piece[n++] = (struct dma_piece){ addr + sizeof(cqe) - 1,
						 &cqe.owner_sr_opcode, 1 };
		if (dma_write_ordered(cq->ctx->pid, piece, n))
			return -EFAULT;
	}
	TRACE(trace_cqe(cq, cq->prod, &cqe));
	cq->prod++;
	sim.progress++;

	error = (cqe.owner_sr_opcode & MLX4_CQE_OPCODE_MASK) ==
		MLX4_CQE_OPCODE_ERROR;
	fires = cq->arm == CQ_ARMED_NEXT ||
		(cq->arm == CQ_ARMED_SOLICITED && (solicited || error));
	if (fires) {
		cq_flush();	/* the event comes after the CQE */
		fire(cq);
	}
	return 0;
}
