/*
 * sieve_crc.c - a CPU-bound workload used both as a correctness check
 * and, with a repeat count, as a benchmark: the sieve of Eratosthenes up
 * to 2,000,000, a table-driven CRC-32 of a 1 MiB pseudo-random buffer, a
 * heap sort of 100,000 pseudo-random integers, and a 64-bit integer
 * mixing loop (exercising the libgcc 64-bit division helpers).
 *
 * Usage: sieve_crc [N]   runs everything N times (default 1); the
 * printed checksums do not depend on N except for the final combined one.
 */
#include "rt.h"

#define SIEVE_N 2000000
#define CRC_BYTES (1 << 20)
#define SORT_N 100000

static uint32_t sieve(uint8_t *composite, uint32_t n, uint32_t *last)
{
	uint32_t i, j, count = 0;

	memset(composite, 0, n + 1);
	for (i = 2; i * i <= n; i++)
		if (!composite[i])
			for (j = i * i; j <= n; j += i)
				composite[j] = 1;
	for (i = 2; i <= n; i++) {
		if (!composite[i]) {
			count++;
			*last = i;
		}
	}
	return count;
}

static uint32_t crc_table[256];

static void crc_init(void)
{
	uint32_t i, c;
	int k;

	for (i = 0; i < 256; i++) {
		c = i;
		for (k = 0; k < 8; k++)
			c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
		crc_table[i] = c;
	}
}

static uint32_t crc32(const uint8_t *p, size_t n)
{
	uint32_t c = 0xffffffffu;

	while (n--)
		c = crc_table[(c ^ *p++) & 0xff] ^ (c >> 8);
	return c ^ 0xffffffffu;
}

static void sift_down(int32_t *a, size_t start, size_t end)
{
	size_t root = start;

	while (2 * root + 1 <= end) {
		size_t child = 2 * root + 1, swap = root;
		int32_t t;

		if (a[swap] < a[child])
			swap = child;
		if (child + 1 <= end && a[swap] < a[child + 1])
			swap = child + 1;
		if (swap == root)
			return;
		t = a[root];
		a[root] = a[swap];
		a[swap] = t;
		root = swap;
	}
}

static void heap_sort(int32_t *a, size_t n)
{
	size_t start, end;
	int32_t t;

	for (start = (n - 2) / 2 + 1; start-- > 0;)
		sift_down(a, start, n - 1);
	for (end = n - 1; end > 0; end--) {
		t = a[end];
		a[end] = a[0];
		a[0] = t;
		sift_down(a, 0, end - 1);
	}
}

static uint64_t mix64(uint32_t rounds)
{
	uint64_t x = 0x0123456789abcdefull, acc = 0;
	uint32_t i;

	for (i = 1; i <= rounds; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		acc += x / (i | 1) + x % (uint64_t)(i * 2654435761u | 1);
		acc ^= (uint64_t)((int64_t)x / -(int64_t)(i + 3));
	}
	return acc;
}

int main(int argc, char **argv)
{
	unsigned reps = argc > 1 ? (unsigned)atoi(argv[1]) : 1, r;
	uint8_t *composite = malloc(SIEVE_N + 1), *buf = malloc(CRC_BYTES);
	int32_t *arr = malloc(SORT_N * sizeof(int32_t));
	uint32_t primes = 0, last = 0, crc = 0, sorted_hash = 0, combined = 0;
	uint64_t mix = 0;

	if (!composite || !buf || !arr) {
		printf("out of memory\n");
		return 1;
	}
	if (reps == 0)
		reps = 1;
	crc_init();
	for (r = 0; r < reps; r++) {
		uint32_t seed = 2463534242u, i;
		int ok = 1;

		primes = sieve(composite, SIEVE_N, &last);
		for (i = 0; i < CRC_BYTES; i++) {
			seed ^= seed << 13;
			seed ^= seed >> 17;
			seed ^= seed << 5;
			buf[i] = (uint8_t)seed;
		}
		crc = crc32(buf, CRC_BYTES);
		for (i = 0; i < SORT_N; i++) {
			seed = seed * 1103515245u + 12345u;
			arr[i] = (int32_t)seed;
		}
		heap_sort(arr, SORT_N);
		for (i = 1; i < SORT_N; i++)
			if (arr[i - 1] > arr[i])
				ok = 0;
		sorted_hash = ok ? fnv1a(arr, SORT_N * sizeof(int32_t)) : 0;
		mix = mix64(20000);
		combined = combined * 31 + (primes ^ crc ^ sorted_hash ^ (uint32_t)mix);
	}
	printf("primes below %u: %u, largest %u\n", SIEVE_N, primes, last);
	printf("crc32 of %u bytes: %08x\n", CRC_BYTES, crc);
	printf("crc32(\"123456789\") = %08x\n", crc32((const uint8_t *)"123456789", 9));
	printf("heap sort of %u ints: hash %08x (min %d, max %d)\n", SORT_N, sorted_hash, arr[0],
	       arr[SORT_N - 1]);
	printf("64-bit mix: %016llx\n", (unsigned long long)mix);
	printf("repetitions %u, combined %08x\n", reps, combined);
	free(arr);
	free(buf);
	free(composite);
	return 0;
}
