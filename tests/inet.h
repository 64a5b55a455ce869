/* SPDX-License-Identifier: BSD-2-Clause */
/* The Internet checksum (RFC 1071), for the tests that check frames. */
#ifndef TESTS_INET_H
#define TESTS_INET_H

#include <stddef.h>
#include <stdint.h>

/* The one's-complement checksum of @len bytes at @p, on top of @sum. */
static inline uint16_t inet_csum(const uint8_t *p, size_t len, uint32_t sum)
{
	for (size_t i = 0; i + 1 < len; i += 2)
		sum += p[i] << 8 | p[i + 1];
	if (len & 1)
		sum += p[len - 1] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return ~sum & 0xffff;
}

#endif
