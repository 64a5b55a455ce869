/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Receive side scaling as the device runs it: the Toeplitz hash over the
 * fields an RSS QP names picks the receive queue of a frame.  The
 * indirection tables and WQs themselves are the kernel's (kernel/rss.c).
 */
#include "adapter.h"

/* The Toeplitz hash of @n bytes (at most 36) under a 40-byte key. */
static uint32_t toeplitz(const uint8_t key[40], const uint8_t *in, size_t n)
{
	uint32_t hash = 0;
	uint32_t window = (uint32_t)key[0] << 24 | key[1] << 16 |
			  key[2] << 8 | key[3];

	for (size_t i = 0; i < n; i++)
		for (int bit = 7; bit >= 0; bit--) {
			if (in[i] >> bit & 1)
				hash ^= window;
			window = window << 1 | (key[i + 4] >> bit & 1);
		}
	return hash;
}

/*
 * The bytes the adapter hashes for @frame: source and destination
 * address, then source and destination port; 0 bytes when none apply.
 */
static size_t hash_input(uint64_t fields, const uint8_t *f, size_t len,
			 uint8_t in[36])
{
	size_t l3 = 14, l4, n;
	uint16_t type;
	uint8_t proto;

	if (len < 14)
		return 0;
	type = f[12] << 8 | f[13];
	if (type == 0x8100 && len >= 18) {
		l3 += 4;
		type = f[16] << 8 | f[17];
	}
	if (type == 0x0800 && (fields & FIELDS_IPV4) && len >= l3 + 20) {
		memcpy(in, f + l3 + 12, 8);
		n = 8;
		proto = f[l3 + 9];
		l4 = l3 + (f[l3] & 0x0f) * 4;
		if (f[l3 + 6] & 0x3f || f[l3 + 7])	/* a fragment */
			return n;
	} else if (type == 0x86dd && (fields & FIELDS_IPV6) && len >= l3 + 40) {
		memcpy(in, f + l3 + 8, 32);
		n = 32;
		proto = f[l3 + 6];
		l4 = l3 + 40;
	} else {
		return 0;
	}
	if (len >= l4 + 4 && ((proto == 6 && (fields & FIELDS_TCP)) ||
			      (proto == 17 && (fields & FIELDS_UDP)))) {
		memcpy(in + n, f + l4, 4);
		n += 4;
	}
	return n;
}

/*
 * The WQ's QP the RSS QP @qp gives @frame to, with the frame's hash; NULL
 * when the QP or that WQ cannot take it (the frame is dropped).
 */
struct sim_qp *rss_pick(struct sim_qp *qp, const uint8_t *frame, size_t len,
			uint32_t *hash)
{
	struct sim_ind_tbl *tbl = qp->rss_tbl;
	uint8_t in[36];
	size_t n = hash_input(qp->rss_fields, frame, len, in);
	struct sim_wq_obj *wq;

	if (!qp_can_receive(qp))
		return NULL;
	*hash = n ? toeplitz(qp->rss_key, in, n) : 0;
	wq = tbl->wqs[*hash & (tbl->size - 1)];
	/* The device's state: the verbs' reaches it only under an RSS QP. */
	return wq->dev.state == IBV_QPS_RTR ? &wq->dev : NULL;
}
