/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * icrc-check FILE.pcap: the ICRC of every RoCE v2 frame (UDP to port
 * 4791, over IPv4 or IPv6, tagged or not) of a capture, checked as the
 * InfiniBand specification (annex A16/A17) defines it: a CRC-32 over 8
 * bytes of ones (the masked LRH), the IP header with its variant fields
 * (IPv4 TOS, TTL, checksum; IPv6 traffic class, flow label, hop limit)
 * set to ones, the UDP header with its checksum set to ones, the BTH with
 * its reserved byte set to ones, and the rest up to the ICRC, which
 * follows least significant byte first (printed as the bytes go, as
 * Wireshark shows it).  Written apart from the
 * simulator's builder, to judge it.  Prints "FRAME ICRC good|bad" for
 * each, then "good N bad M"; exits 1 when a frame is bad or none was
 * found, 2 on a file it cannot read.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static uint32_t crc32_ieee(uint32_t crc, const uint8_t *p, size_t len)
{
	while (len--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1)));
	}
	return crc;
}

static unsigned int be16(const uint8_t *p)
{
	return p[0] << 8 | p[1];
}

/* -1: not RoCE v2; else whether its ICRC holds (*icrc: what it carries). */
static int check_frame(const uint8_t *f, size_t len, uint32_t *icrc)
{
	static const uint8_t ones[8] = { 0xff, 0xff, 0xff, 0xff,
					 0xff, 0xff, 0xff, 0xff };
	uint8_t head[40 + 8 + 12];
	size_t off = 12, ip_len, total, hlen;
	unsigned int type;
	uint32_t crc;
	const uint8_t *ip, *end;

	if (len < 14)
		return -1;
	type = be16(f + off);
	if (type == 0x8100) {
		off += 4;
		type = be16(f + off);
	}
	ip = f + off + 2;
	if (type == 0x0800 && len >= off + 2 + 20 + 8 + 12 + 4 &&
	    ip[0] == 0x45 && ip[9] == 17) {
		ip_len = 20;
		total = be16(ip + 2);
	} else if (type == 0x86dd && len >= off + 2 + 40 + 8 + 12 + 4 &&
		   ip[6] == 17) {
		ip_len = 40;
		total = 40 + be16(ip + 4);
	} else {
		return -1;
	}
	if (be16(ip + ip_len + 2) != 4791)
		return -1;
	if (total > len - (off + 2) || total < ip_len + 8 + 12 + 4)
		return 0;
	hlen = ip_len + 8 + 12;
	memcpy(head, ip, hlen);
	if (ip_len == 20) {
		head[1] = head[8] = head[10] = head[11] = 0xff;
	} else {
		head[0] |= 0x0f;
		head[1] = head[2] = head[3] = head[7] = 0xff;
	}
	head[ip_len + 6] = head[ip_len + 7] = 0xff;
	head[ip_len + 8 + 4] = 0xff;
	end = ip + total - 4;
	crc = crc32_ieee(0xffffffffu, ones, sizeof(ones));
	crc = crc32_ieee(crc, head, hlen);
	crc = ~crc32_ieee(crc, ip + hlen, end - (ip + hlen));
	*icrc = end[0] | end[1] << 8 | end[2] << 16 | (uint32_t)end[3] << 24;
	return crc == *icrc;
}

int main(int argc, char **argv)
{
	static uint8_t frame[65536];
	uint32_t global[6], rec[4], icrc = 0;
	unsigned long n = 0, good = 0, bad = 0;
	FILE *f;

	if (argc != 2 || !(f = fopen(argv[1], "rb")) ||
	    fread(global, sizeof(global), 1, f) != 1 ||
	    global[0] != 0xa1b2c3d4u) {
		fprintf(stderr, "usage: icrc-check FILE.pcap (a little-endian pcap)\n");
		return 2;
	}
	while (fread(rec, sizeof(rec), 1, f) == 1) {
		int r;

		n++;
		if (rec[2] > sizeof(frame) || fread(frame, rec[2], 1, f) != 1)
			return 2;
		r = check_frame(frame, rec[2], &icrc);
		if (r < 0)
			continue;
		printf("%lu 0x%08x %s\n", n, __builtin_bswap32(icrc),
		       r ? "good" : "bad");
		if (r)
			good++;
		else
			bad++;
	}
	printf("good %lu bad %lu\n", good, bad);
	return bad || !good;
}
