/*
 * crc32.c - table-driven CRC-32 (the reflected 0xedb88320 polynomial, one
 * table lookup per byte) over a generated 1 MiB buffer.
 *
 * Stresses: a tight loop with a serial dependency through a byte load, an
 * indexed table load, shifts and xors; the block is tiny and runs
 * millions of times, so it measures how good the translated code of one
 * hot loop is.
 *
 * Usage: crc32 [N]   N passes over the buffer (default 420); after each
 * pass one byte of the buffer is changed so that no two passes compute the
 * same CRC.  Self-check: the CRC of "123456789" must be cbf43926, and the
 * CRC of the first 4 KiB of the final buffer must be the same through the
 * slow bitwise algorithm.
 */
#include "bench.h"

#define BUF_BYTES (1u << 20)
#define CHECK_BYTES (1u << 12)
#define DEFAULT_ITERS 420

static uint8_t buf[BUF_BYTES];
static uint32_t table[256];

static void crc_init(void)
{
	uint32_t i, c;
	int k;

	for (i = 0; i < 256; i++) {
		c = i;
		for (k = 0; k < 8; k++)
			c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
		table[i] = c;
	}
}

static uint32_t crc32(const uint8_t *p, size_t n)
{
	uint32_t c = 0xffffffffu;

	while (n--)
		c = table[(c ^ *p++) & 0xff] ^ (c >> 8);
	return ~c;
}

static uint32_t crc32_bitwise(const uint8_t *p, size_t n)
{
	uint32_t c = 0xffffffffu;
	int k;

	while (n--) {
		c ^= *p++;
		for (k = 0; k < 8; k++)
			c = (c >> 1) ^ (0xedb88320u & -(c & 1));
	}
	return ~c;
}

int main(int argc, char **argv)
{
	uint32_t n = bench_iters(argc, argv, DEFAULT_ITERS), it, seed = 0x12345678u, sum = 0, c = 0;
	uint32_t i;

	crc_init();
	if (crc32((const uint8_t *)"123456789", 9) != 0xcbf43926u)
		bench_fail("crc32", "check value of \"123456789\"", 0);
	for (i = 0; i < BUF_BYTES; i += 4) {
		uint32_t r = xs32(&seed);

		memcpy(buf + i, &r, 4);
	}
	for (it = 0; it < n; it++) {
		c = crc32(buf, BUF_BYTES);
		sum = bench_mix(sum, c);
		buf[c & (BUF_BYTES - 1)] ^= (uint8_t)(it | 1);
	}
	if (crc32(buf, CHECK_BYTES) != crc32_bitwise(buf, CHECK_BYTES))
		bench_fail("crc32", "table and bitwise CRC differ", n);
	printf("crc32: %u x %u bytes, last %08x, checksum %08x\n", n, BUF_BYTES, c, sum);
	return 0;
}
