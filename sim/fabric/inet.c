/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The Internet side of the wire: the one's-complement checksum and the
 * network header (GRH, or IPv4/IPv6 and UDP for RoCE v2) a RoCE packet
 * carries, as both the adapter and the capture build them.
 */
#include <string.h>

#include "wire.h"

/* The Internet checksum's running sum over @len bytes (odd: zero pad). */
uint32_t inet_sum(uint32_t sum, const uint8_t *p, size_t len)
{
	for (size_t i = 0; i + 1 < len; i += 2)
		sum += get16(p + i);
	if (len & 1)
		sum += p[len - 1] << 8;
	return sum;
}

/* ... and the checksum it makes. */
uint16_t inet_fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return ~sum & 0xffff;
}

/* Whether @gid is an IPv4 address (IPv4-mapped IPv6): RoCE v2 over IPv4. */
bool gid_is_ipv4(const uint8_t gid[16])
{
	static const uint8_t prefix[12] = { [10] = 0xff, [11] = 0xff };

	return !memcmp(gid, prefix, 12);
}

/*
 * The network header of a RoCE packet whose IB transport part (BTH to
 * ICRC) takes @ib_len bytes: RoCE v1's GRH, or RoCE v2's IPv6 header (next
 * header UDP) or IPv4 header with its checksum.  Returns its length.
 */
size_t roce_net_header(uint8_t *h, bool v2, bool ipv4,
		       const uint8_t sgid[16], const uint8_t dgid[16],
		       uint8_t tclass, uint32_t flow_label, uint8_t hop_limit,
		       uint16_t ib_len)
{
	uint16_t n;

	if (v2 && ipv4) {
		memset(h, 0, 20);
		h[0] = 0x45;			/* version 4, 5 words */
		h[1] = tclass;
		n = 20 + 8 + ib_len;
		h[2] = n >> 8, h[3] = n;
		h[6] = 0x40;			/* don't fragment */
		h[8] = hop_limit;
		h[9] = 17;			/* UDP */
		memcpy(h + 12, sgid + 12, 4);
		memcpy(h + 16, dgid + 12, 4);
		n = inet_fold(inet_sum(0, h, 20));
		h[10] = n >> 8, h[11] = n;
		return 20;
	}
	h[0] = 6 << 4 | tclass >> 4;
	h[1] = (tclass & 0x0f) << 4 | (flow_label >> 16 & 0x0f);
	h[2] = flow_label >> 8, h[3] = flow_label;
	n = ib_len + (v2 ? 8 : 0);
	h[4] = n >> 8, h[5] = n;
	h[6] = v2 ? 17 : 0x1b;		/* UDP, or IBA transport */
	h[7] = hop_limit;
	memcpy(h + 8, sgid, 16);
	memcpy(h + 24, dgid, 16);
	return 40;
}
