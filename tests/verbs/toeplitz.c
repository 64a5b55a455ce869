/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * toeplitz KEY: for each line "SRC DST [SPORT DPORT]" on the standard
 * input (IPv4 addresses, TCP or UDP ports), the Toeplitz hash of those
 * fields (network order, source first) under KEY (40 bytes in hex), in
 * hex: the hash an adapter doing RSS over them computes.  dpdk.sh checks
 * the hashes the mlx4 PMD reports against it.  "toeplitz -t" exits 0
 * when it gives the values of Microsoft's RSS specification.
 */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static const char spec_key[] =
	"6d5a56da255b0ec24167253d43a38fb0d0ca2bcbae7b30b477cb2da38030f20c6a42b73bbeac01fa";

static int parse_key(const char *hex, uint8_t key[40])
{
	if (strlen(hex) != 80)
		return -1;
	for (int i = 0; i < 40; i++)
		if (sscanf(hex + 2 * i, "%2hhx", &key[i]) != 1)
			return -1;
	return 0;
}

/* The 32 bits of @key that start at bit @at (0: the first byte's top). */
static uint32_t key_bits(const uint8_t key[40], unsigned int at)
{
	uint64_t w = 0;

	for (unsigned int i = 0; i < 5; i++)
		w = w << 8 | key[at / 8 + i];
	return (uint32_t)(w >> (8 - at % 8));
}

/* The hash of @n bytes: each set bit of the input adds its key bits. */
static uint32_t toeplitz(const uint8_t key[40], const uint8_t *in, size_t n)
{
	uint32_t hash = 0;

	for (unsigned int at = 0; at < 8 * n; at++)
		if (in[at / 8] & 0x80 >> at % 8)
			hash ^= key_bits(key, at);
	return hash;
}

/*
 * The hash of a line: two IPv4 addresses, then, when the line has them,
 * two ports; -1 for a line that is not that.
 */
static int64_t of_line(const uint8_t key[40], const char *line)
{
	char src[64], dst[64];
	unsigned int sport, dport;
	uint8_t in[12];
	int n = sscanf(line, "%63s %63s %u %u", src, dst, &sport, &dport);

	if ((n != 2 && n != 4) || inet_pton(AF_INET, src, in) != 1 ||
	    inet_pton(AF_INET, dst, in + 4) != 1 ||
	    (n == 4 && (sport > 0xffff || dport > 0xffff)))
		return -1;
	in[8] = sport >> 8, in[9] = sport;
	in[10] = dport >> 8, in[11] = dport;
	return toeplitz(key, in, n == 4 ? 12 : 8);
}

/*
 * The specification's examples: from 66.9.149.187 port 2794 to
 * 161.142.100.80 port 1766, without and with the ports.
 */
static int self_test(void)
{
	uint8_t key[40];

	parse_key(spec_key, key);
	return of_line(key, "66.9.149.187 161.142.100.80") == 0x323e8fc2 &&
	       of_line(key, "66.9.149.187 161.142.100.80 2794 1766") ==
	       0x51ccc178 ? 0 : 1;
}

int main(int argc, char **argv)
{
	char line[256];
	uint8_t key[40];

	if (argc == 2 && !strcmp(argv[1], "-t"))
		return self_test();
	if (argc != 2 || parse_key(argv[1], key)) {
		fprintf(stderr, "usage: toeplitz KEY (80 hex digits) < lines\n");
		return 2;
	}
	while (fgets(line, sizeof(line), stdin)) {
		int64_t hash = of_line(key, line);

		if (hash < 0) {
			fprintf(stderr, "toeplitz: not two IPv4 addresses (and two ports): %s",
				line);
			return 1;
		}
		printf("%08x\n", (unsigned int)hash);
	}
	return 0;
}
