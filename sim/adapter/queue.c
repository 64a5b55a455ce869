/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The device's side of the work queues.
 *
 * Send queue: the device takes send WQEs in order from its head counter.
 * A WQE is the driver's when its owner bit (bit 31 of the control
 * segment's first dword) equals the pass parity of its index; the driver
 * writes the WQE, then that bit.  So the device reads the owner words
 * first and the WQEs after: what the first shows handed over, the second
 * reads complete.
 *
 * The ring is in basic blocks of the QP's stride, and a WQE takes as many
 * as its size (the control segment's DS count) needs: the head and the
 * indexes count blocks, and the next WQE starts after the last block of
 * this one.  libibverbs providers choose a stride that holds their
 * largest WQE; mlx4_en and DPDK's PMD write on a 64-byte stride, a WQE
 * of several blocks for an LSO or a gather list (mlx4_en counts its ring
 * in TXBBs, the CQE's wqe_index naming a WQE's first).  Only the first
 * block's first dword is an owner word: the others' hold the WQE's bytes.
 *
 * Receive queues and SRQs: the driver writes the WQE, then the counter in
 * the doorbell record, so the device reads the record first and the WQE
 * after, unless the record read last time already counts that WQE.
 */
#include <errno.h>

#include <stdlib.h>
#include <string.h>

#include "queue.h"

static uint64_t wqe_addr(const struct sim_qp *qp, uint32_t index)
{
	return qp->buf + qp->sq.offset +
	       ((uint64_t)(index & (qp->sq.wqe_cnt - 1)) << qp->sq.wqe_shift);
}

/*
 * The ring's bytes from WQE @index on, @count WQEs, as at most two pieces
 * (the window may wrap at the ring's end) into @buf.  Returns the count
 * of pieces added at @p.
 */
static int sq_window(const struct sim_qp *qp, uint32_t index, int count,
		     uint8_t *buf, struct dma_piece *p)
{
	uint32_t first = index & (qp->sq.wqe_cnt - 1);
	uint32_t before_end = MIN((uint32_t)count, qp->sq.wqe_cnt - first);
	int shift = qp->sq.wqe_shift;

	p[0] = (struct dma_piece){ wqe_addr(qp, index), buf,
				   (size_t)before_end << shift };
	if (before_end == (uint32_t)count)
		return 1;
	p[1] = (struct dma_piece){ wqe_addr(qp, index + before_end),
				   buf + ((size_t)before_end << shift),
				   (size_t)(count - before_end) << shift };
	return 2;
}

/* Whether the owner word @owner (as read) hands WQE @index over. */
static bool owner_handed(const struct sim_qp *qp, uint32_t index,
			 uint32_t owner)
{
	return !!(be32toh(owner) >> 31) == !!(index & qp->sq.wqe_cnt);
}

/*
 * How many WQEs from the head are handed over, their owner words read
 * into @owners and their control segments into @bodies, a block every
 * @step bytes, @slots blocks in all; each one's blocks into @blocks
 * (unless NULL).  *@full is set when the look ended at its last block,
 * not at a WQE still the driver's: more may follow.
 */
static int handed_over(const struct sim_qp *qp, const uint8_t *owners,
		       const uint8_t *bodies, size_t step, int slots,
		       uint8_t *blocks, bool *full)
{
	int n = 0, s = 0;

	*full = false;
	while (s < slots) {
		uint32_t owner;
		unsigned int b;

		memcpy(&owner, owners + s * step, sizeof(owner));
		if (!owner_handed(qp, qp->sq.head + s, owner))
			return n;
		b = sq_wqe_blocks(qp, bodies + s * step);
		if (s + (int)b > slots)
			break;		/* not all read: the next look's */
		if (blocks)
			blocks[n] = b;
		n++;
		s += b;
	}
	*full = true;
	return n;
}

/* Read the send queue's @pieces in order; a breach if they cannot be. */
static int sq_read(struct sim_qp *qp, const struct dma_piece *p, int pieces)
{
	if (!dma_read_ordered(qp->ctx->pid, p, pieces))
		return 0;
	breach(qp->ctx, "QP 0x%x: send queue at 0x%llx unreadable",
	       qp->qpn, (unsigned long long)qp->buf);
	return -1;
}

/*
 * sq_fetch() of a ring in pinned pages the daemon maps, as handed_over()
 * reads it: each owner word a load, and only then that WQE's blocks
 * copied, so that a look costs what it finds (a copy of the whole window
 * was 8 KiB for a latency test's one WQE).  -1 when the ring is not
 * mapped here whole, or a batch holds CQEs of the process (which may
 * write the ring: the long way writes them first).
 */
static int sq_fetch_here(struct sim_qp *qp, uint8_t *raw, int max,
			 bool *full)
{
	size_t stride = 1u << qp->sq.wqe_shift;
	uint32_t mask = qp->sq.wqe_cnt - 1;
	const uint8_t *ring = dma_pins_find(&qp->buf_pins,
					    qp->buf + qp->sq.offset,
					    (uint64_t)qp->sq.wqe_cnt * stride);
	int n = 0, s = 0;

	if (!ring || cq_batched(qp->ctx->pid))
		return -1;
	*full = false;
	while (s < max) {
		uint32_t owner;
		unsigned int b;

		memcpy(&owner, ring + ((qp->sq.head + s) & mask) * stride,
		       sizeof(owner));
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (!owner_handed(qp, qp->sq.head + s, owner))
			return n;
		memcpy(raw + s * stride,
		       ring + ((qp->sq.head + s) & mask) * stride, stride);
		b = sq_wqe_blocks(qp, raw + s * stride);
		if (s + (int)b > max)
			break;		/* not all read: the next look's */
		for (unsigned int k = 1; k < b; k++)
			memcpy(raw + (s + k) * stride,
			       ring + ((qp->sq.head + s + k) & mask) * stride,
			       stride);
		n++;
		s += b;
	}
	*full = true;
	return n;
}

/*
 * Read the ring from the head into @raw, block after block, and return
 * how many WQEs are handed over (their owner bits say so); *@more is set
 * when all that were looked at are, so that more may follow.
 *
 * The driver writes a WQE, then its owner word; the device reads owner
 * words first and bodies after, so that a WQE shown handed over is read
 * complete.  Here the window of WQEs is read twice in one ordered
 * transfer (see dma.c): the first copy for the owner words, the second for
 * the bodies.  A piece for each owner word and each body would order the
 * same, but the kernel walks and pins the pages of every piece, about a
 * microsecond each on the machine this was measured on: 16 WQEs were 32
 * pieces, and are now 2 (4 when the window wraps).
 */
int sq_fetch(struct sim_qp *qp, uint8_t *raw, bool *more)
{
	static uint8_t owners[SQ_FETCH_BYTES];
	struct dma_piece p[5];
	size_t stride = 1u << qp->sq.wqe_shift;
	int max = MIN(SQ_BATCH, (int)qp->sq.wqe_cnt), pieces;
	struct sim_cq *cq = qp->send_cq;
	bool with_ci;
	uint32_t ci;

	*more = false;
	if (max <= 0)
		return 0;
	/* Bounded bytes per look: big strides take fewer at a time. */
	max = MAX(1, MIN(max, (int)(SQ_FETCH_BYTES / stride)));
	pieces = sq_fetch_here(qp, raw, max, more);
	if (pieces >= 0)
		return pieces;
	pieces = sq_window(qp, qp->sq.head, max, owners, p);
	pieces += sq_window(qp, qp->sq.head, max, raw, p + pieces);
	/*
	 * A send CQ nearly full (a latency test's CQ of two entries is so
	 * after every CQE) needs its consumer index read before its next
	 * CQE: a piece here, a transfer of its own there.
	 */
	with_ci = cq && cq->ctx == qp->ctx && cq_nearly_full(cq);
	if (with_ci)
		p[pieces++] = (struct dma_piece){ cq->db, &ci, sizeof(ci) };
	if (with_ci && dma_read_ordered(qp->ctx->pid, p, pieces)) {
		with_ci = false;	/* the long way says what failed */
		pieces--;
	}
	if (!with_ci && sq_read(qp, p, pieces))
		return 0;
	if (with_ci)
		cq_note_ci(cq, be32toh(ci) & NUM24_MASK);
	return handed_over(qp, owners, raw, stride, max, NULL, more);
}

/*
 * Read @len bytes of the send WQE numbered @index (its low 16 bits, as a
 * BlueFlame write names it), if it is in the ring within a lap of the
 * head, before or after it, and its owner bit says it was handed over on
 * its own lap.  Returns 0, or -1.
 */
int sq_peek(struct sim_qp *qp, uint32_t index, uint8_t *raw, size_t len)
{
	int lap = (int)qp->sq.wqe_cnt;
	int ahead = (int16_t)(index - qp->sq.head);
	uint32_t n = qp->sq.head + ahead, owner;

	if (len > (1u << qp->sq.wqe_shift) || ahead >= lap || ahead <= -lap ||
	    dma_read(qp->ctx->pid, wqe_addr(qp, n), raw, len))
		return -1;
	memcpy(&owner, raw, sizeof(owner));
	return owner_handed(qp, n, owner) ? 0 : -1;
}

/*
 * How many WQEs from the head the driver has handed over (in the next 16
 * blocks), by their owner words and sizes alone, each one's blocks into
 * @blocks unless NULL: a piece for each block, since a window of big WQEs
 * would be many bytes for 16 words (a rare look: a doorbell check, a
 * flush).  The size shares the owner word's 8 bytes, written before it.
 */
int sq_ready(struct sim_qp *qp, uint8_t *blocks)
{
	struct dma_piece p[SQ_READY_MAX];
	uint64_t ctrl[SQ_READY_MAX];
	int max = MIN(SQ_READY_MAX, (int)qp->sq.wqe_cnt);
	bool full;

	if (max <= 0)
		return 0;
	for (int i = 0; i < max; i++)
		p[i] = (struct dma_piece){ wqe_addr(qp, qp->sq.head + i),
					   &ctrl[i], sizeof(ctrl[i]) };
	if (sq_read(qp, p, max))
		return 0;
	return handed_over(qp, (const uint8_t *)ctrl, (const uint8_t *)ctrl,
			   sizeof(ctrl[0]), max, blocks, &full);
}

/*
 * Whether the driver has handed over the WQE at the head, by its owner
 * word alone: a load where the QP's pages are shared (every queue of a
 * context is looked at so on each of its doorbells), a transfer where
 * not.  An unreadable queue says no here (its run says why).
 */
bool sq_ready_one(struct sim_qp *qp)
{
	uint64_t addr = wqe_addr(qp, qp->sq.head);
	const uint8_t *here = dma_pins_find(&qp->buf_pins, addr, 4);
	uint32_t owner;
	struct dma_piece p = { addr, &owner, sizeof(owner) };

	/* (memcpy: a client may have put its queue anywhere.) */
	if (here)
		memcpy(&owner, here, sizeof(owner));
	else if (dma_read_queue(qp->ctx->pid, &p, 1))
		return false;
	return owner_handed(qp, qp->sq.head, owner);
}

/* The scatter list of a receive WQE, checked against the keys. */
static void parse_scatter(struct sim_hca *hca, const uint8_t *wqe,
			  uint32_t max, struct sim_recv *r)
{
	const struct mlx4_wqe_data_seg *d = (const void *)wqe;

	r->nseg = 0;
	r->total = 0;
	r->pid = 0;
	r->bad_key = false;
	r->shared = true;
	for (uint32_t i = 0; i < max; i++) {
		uint32_t lkey = be32toh(d[i].lkey);
		uint32_t len = be32toh(d[i].byte_count);
		uint64_t addr;
		struct sim_mr *mr;

		if (lkey == MLX4_INVALID_LKEY)
			break;
		if (!len)
			continue;
		mr = mr_check(hca, lkey, r->pd, be64toh(d[i].addr), len,
			      MR_LOCAL_WRITE, &addr);
		if (!mr) {
			r->bad_key = true;
			continue;
		}
		r->pid = mr->pid;
		r->seg[r->nseg].addr = addr;
		r->seg[r->nseg].len = len;
		r->here[r->nseg] = dma_pins_find(&mr->pins, addr, len);
		r->shared &= r->here[r->nseg] != NULL;
		r->nseg++;
		r->total += len;
	}
}

/*
 * A receive WQE at @addr, after the doorbell record at @db_addr when @db
 * is given, in one ordered transfer.
 */
static int read_recv(pid_t pid, uint64_t db_addr, uint32_t *db,
		     uint64_t addr, void *wqe, size_t len)
{
	struct dma_piece p[2];
	int n = 0;

	if (db)
		p[n++] = (struct dma_piece){ db_addr, db, sizeof(*db) };
	p[n++] = (struct dma_piece){ addr, wqe, len };
	return dma_read_queue(pid, p, n);
}

/*
 * The RQ's doorbell record, as read: its counter is what the driver has
 * posted, and a breach when that is more than the ring holds.
 */
static bool rq_doorbell(struct sim_qp *qp, uint32_t db)
{
	qp->rq_posted = be32toh(db);
	if ((uint16_t)(qp->rq_posted - qp->rq.head) <= qp->rq.wqe_cnt)
		return true;
	breach(qp->ctx, "QP 0x%x: receive doorbell 0x%x beyond the ring (head 0x%x, %u entries)",
	       qp->qpn, qp->rq_posted, qp->rq.head & 0xffff, qp->rq.wqe_cnt);
	return false;
}

/*
 * Receive WQEs fetched ahead, as the adapter prefetches: once the
 * doorbell record counts them posted they are the device's, and the
 * driver does not touch them again.  A fetch reads as many as
 * RQ_FETCH_BYTES hold, to the end of the ring, in one transfer (a
 * transfer costs about 2 us, and 16 WQEs a fetch were a read for every
 * 16 messages of a stream); when the record must be read too, it comes
 * first in the same ordered transfer, and the WQEs it counts are kept.
 */
struct sim_rq_cache {
	uint32_t first;			/* the RQ counter of wqe[0] */
	uint32_t n;
	uint8_t wqe[RQ_FETCH_BYTES];
};

void rq_cache_drop(struct sim_qp *qp)
{
	free(qp->rq_cache);
	qp->rq_cache = NULL;
}

/*
 * @k WQEs from the head into @wqe, after the doorbell record into @db
 * when it is given, in one ordered transfer.  The ring past what is
 * posted may be memory the process has since unmapped (an adapter reads
 * pages pinned at creation): then the head alone, as a fetch of one WQE
 * read it.  Returns how many WQEs were read, 0 when none could be.
 */
static uint32_t rq_read(struct sim_qp *qp, uint8_t *wqe, uint32_t k,
			uint32_t *db)
{
	size_t stride = 1u << qp->rq.wqe_shift;
	uint64_t addr = qp->buf + qp->rq.offset +
		((uint64_t)(qp->rq.head & (qp->rq.wqe_cnt - 1)) <<
		 qp->rq.wqe_shift);

	if (!read_recv(qp->ctx->pid, qp->db, db, addr, wqe, k * stride))
		return k;
	if (k > 1 && !read_recv(qp->ctx->pid, qp->db, db, addr, wqe, stride))
		return 1;
	return 0;
}

/*
 * Fetch the WQEs from the head into @c, at most @max: those known
 * posted, or when none is the doorbell record first and then those it
 * counts.  Returns 0, -EAGAIN when none is posted, or -EFAULT.
 */
static int rq_fetch(struct sim_qp *qp, struct sim_rq_cache *c, uint32_t max)
{
	uint32_t head = qp->rq.head;
	bool known = (uint16_t)head != qp->rq_posted;
	uint32_t k = MIN(max, qp->rq.wqe_cnt - (head & (qp->rq.wqe_cnt - 1)));
	uint32_t db;

	c->n = 0;
	if (known)
		k = MIN(k, (uint16_t)(qp->rq_posted - head));
	k = rq_read(qp, c->wqe, k, known ? NULL : &db);
	if (!k)
		return -EFAULT;
	if (!known) {
		if (!rq_doorbell(qp, db)) {
			qp->rq_posted = head;
			return -EAGAIN;
		}
		k = MIN(k, (uint16_t)(qp->rq_posted - head));
		if (!k)
			return -EAGAIN;
	}
	c->first = head;
	c->n = k;
	return 0;
}

/*
 * The WQE at the head: from the WQEs fetched ahead, or fetched now (only
 * the head, into a buffer of the moment, when there is no memory to
 * fetch ahead into).  NULL when the driver has not posted it, or it
 * cannot be read.
 */
static const uint8_t *rq_head_wqe(struct sim_qp *qp)
{
	static struct sim_rq_cache one;	/* read before the next call */
	struct sim_rq_cache *c = qp->rq_cache;
	uint32_t head = qp->rq.head, max = RQ_FETCH_BYTES >> qp->rq.wqe_shift;
	int err;

	if (c && head - c->first < c->n)
		return c->wqe + ((head - c->first) << qp->rq.wqe_shift);
	if (!c && !(c = qp->rq_cache = calloc(1, sizeof(*c)))) {
		c = &one;
		max = 1;
	}
	err = rq_fetch(qp, c, max);
	if (err == -EFAULT)
		breach(qp->ctx, "QP 0x%x: receive queue or its doorbell record unreadable",
		       qp->qpn);
	return err ? NULL : c->wqe;
}

/* The receive WQE at the head, if the driver has posted it. */
int rq_take(struct sim_qp *qp, struct sim_recv *r)
{
	const uint8_t *wqe = rq_head_wqe(qp);

	if (!wqe)
		return -EAGAIN;
	r->wqe_index = qp->rq.head & 0xffff;
	TRACE(trace_recv_wqe(qp, r->wqe_index, wqe, 1u << qp->rq.wqe_shift));
	qp->rq.head++;
	parse_scatter(qp->hca, wqe, qp->rq.max_gs, r);
	return 0;
}

/*
 * The receive WQEs the driver has posted and the device not taken, by the
 * doorbell record as it is now (for a flush).  Past a counter beyond the
 * ring, the device goes on from that counter.
 */
uint16_t rq_untaken(struct sim_qp *qp)
{
	uint32_t db;

	rq_cache_drop(qp);		/* the queue starts over after this */
	if (dma_read(qp->ctx->pid, qp->db, &db, sizeof(db)))
		return 0;
	if (!rq_doorbell(qp, db)) {
		qp->rq.head = qp->rq_posted;
		return 0;
	}
	return qp->rq_posted - qp->rq.head;
}

/* The next SRQ WQE, read like an RQ's: counter and WQE in order. */
int srq_take(struct sim_srq *srq, struct sim_recv *r)
{
	uint8_t wqe[16 + CX3_MAX_SRQ_SGE * sizeof(struct mlx4_wqe_data_seg)];
	size_t stride = MIN((size_t)1 << srq->wqe_shift, sizeof(wqe));
	bool known = srq->consumed != srq->posted;
	uint32_t db;
	uint16_t next;

	if (read_recv(srq->ctx->pid, srq->db, known ? NULL : &db,
		      srq->buf + ((uint64_t)srq->next_wqe << srq->wqe_shift),
		      wqe, stride)) {
		breach(srq->ctx, "SRQ 0x%x: buffer or doorbell record unreadable",
		       srq->srqn);
		return -EAGAIN;
	}
	if (!known) {
		srq->posted = be32toh(db);
		if ((uint16_t)(srq->posted - srq->consumed) >= srq->wqe_cnt) {
			breach(srq->ctx, "SRQ 0x%x: counter 0x%x beyond the ring (taken 0x%x, %u entries)",
			       srq->srqn, srq->posted, srq->consumed,
			       srq->wqe_cnt);
			srq->posted = srq->consumed;
			return -EAGAIN;
		}
		if (srq->consumed == srq->posted)
			return -EAGAIN;
	}
	next = be16toh(((struct mlx4_wqe_srq_next_seg *)wqe)->next_wqe_index);
	if (next >= srq->wqe_cnt) {
		breach(srq->ctx, "SRQ 0x%x WQE 0x%x: next index 0x%x out of the ring",
		       srq->srqn, srq->next_wqe, next);
		return -EAGAIN;
	}
	r->wqe_index = srq->next_wqe;
	TRACE(trace_srq_wqe(srq, r->wqe_index, wqe, stride));
	srq->next_wqe = next;
	srq->consumed++;
	parse_scatter(srq->hca, wqe + 16, srq->max_gs, r);
	srq_check_limit(srq);
	return 0;
}
