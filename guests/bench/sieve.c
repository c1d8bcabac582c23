/*
 * sieve.c - the sieve of Eratosthenes up to 2,000,000 over a byte array.
 *
 * Stresses: byte stores with a large, variable stride (cache and TLB
 * misses, guest memory access translation), short inner loops with a
 * loop-carried index, and a final linear scan with a data-dependent
 * branch.
 *
 * Usage: sieve [N]   N sieves (default 150).  Self-check, every
 * iteration: 148933 primes below 2,000,000, the largest 1999993, and their
 * sum 142913828922.
 */
#include "bench.h"

#define LIMIT 2000000u
#define DEFAULT_ITERS 150

static uint8_t composite[LIMIT];

int main(int argc, char **argv)
{
	uint32_t n = bench_iters(argc, argv, DEFAULT_ITERS), it, sum = 0;
	uint32_t count = 0, last = 0;
	uint64_t total = 0;

	for (it = 0; it < n; it++) {
		uint32_t i, j;

		memset(composite, 0, sizeof composite);
		for (i = 2; i * i < LIMIT; i++)
			if (!composite[i])
				for (j = i * i; j < LIMIT; j += i)
					composite[j] = 1;
		count = 0;
		total = 0;
		for (i = 2; i < LIMIT; i++) {
			if (!composite[i]) {
				count++;
				last = i;
				total += i;
			}
		}
		if (count != 148933 || last != 1999993 || total != 142913828922ull)
			bench_fail("sieve", "wrong primes below 2000000", it);
		sum = bench_mix(sum, count ^ (uint32_t)total ^ it);
	}
	printf("sieve: %u x primes below %u: %u, largest %u, sum %llu, checksum %08x\n", n, LIMIT,
	       count, last, (unsigned long long)total, sum);
	return 0;
}
