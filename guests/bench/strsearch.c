/*
 * strsearch.c - substring search in 1 MiB of generated text, with both
 * Boyer-Moore-Horspool and the naive algorithm.
 *
 * Stresses: byte loads and compares, short data-dependent inner loops with
 * early exits, a skip-table lookup per step (Horspool), and frequent
 * mispredicted branches (naive search's first-byte test).
 *
 * Usage: strsearch [N]   N rounds of 4 patterns (default 160), each a
 * 3..14-byte substring of the text at a pseudo-random position, counted
 * over the whole text by both algorithms.  Self-check, every pattern: both
 * counts agree and are at least 1.
 */
#include "bench.h"

#define TEXT_BYTES (1u << 20)
#define PATTERNS_PER_ITER 4
#define DEFAULT_ITERS 160

static uint8_t text[TEXT_BYTES];

/*
 * "words" of lower-case letters with English-like letter frequencies: each
 * byte of a 32-bit random number picks one of 64 characters, 10 of which
 * end a word
 */
static void gen_text(void)
{
	static const char chars[] = "eeeeeeettttaaaaooooiiinnnssshhhrrdllcumwfgypbvkjxqzrdt"
				    "         \n";
	uint32_t seed = 0x6b8b4567u, i, k;

	_Static_assert(sizeof chars - 1 == 64, "64 characters");
	for (i = 0; i < TEXT_BYTES; i += 4) {
		uint32_t r = xs32(&seed);

		for (k = 0; k < 4; k++, r >>= 8)
			text[i + k] = (uint8_t)chars[r & 63];
	}
}

static uint32_t search_horspool(const uint8_t *t, uint32_t tn, const uint8_t *p, uint32_t m)
{
	uint32_t skip[256], i, pos = 0, count = 0;

	for (i = 0; i < 256; i++)
		skip[i] = m;
	for (i = 0; i + 1 < m; i++)
		skip[p[i]] = m - 1 - i;
	while (pos + m <= tn) {
		uint8_t last = t[pos + m - 1];

		if (last == p[m - 1]) {
			for (i = 0; i + 1 < m && t[pos + i] == p[i]; i++)
				;
			if (i + 1 >= m)
				count++;
		}
		pos += skip[last];
	}
	return count;
}

static uint32_t search_naive(const uint8_t *t, uint32_t tn, const uint8_t *p, uint32_t m)
{
	uint32_t pos, i, count = 0;
	uint8_t first = p[0];

	for (pos = 0; pos + m <= tn; pos++) {
		if (t[pos] != first)
			continue;
		for (i = 1; i < m && t[pos + i] == p[i]; i++)
			;
		if (i == m)
			count++;
	}
	return count;
}

int main(int argc, char **argv)
{
	uint32_t n = bench_iters(argc, argv, DEFAULT_ITERS), it, sum = 0, total = 0;
	uint32_t seed = 0x327b23c6u;

	gen_text();
	for (it = 0; it < n * PATTERNS_PER_ITER; it++) {
		uint32_t m = 3 + xs32(&seed) % 12;
		uint32_t at = xs32(&seed) % (TEXT_BYTES - m);
		uint32_t ch = search_horspool(text, TEXT_BYTES, text + at, m);
		uint32_t cn = search_naive(text, TEXT_BYTES, text + at, m);

		if (ch != cn || ch == 0)
			bench_fail("strsearch", "Horspool and naive counts differ", it);
		total += ch;
		sum = bench_mix(sum, ch * 65599u + m);
	}
	printf("strsearch: %u patterns in %u bytes, %u matches, checksum %08x\n",
	       n * PATTERNS_PER_ITER, TEXT_BYTES, total, sum);
	return 0;
}
