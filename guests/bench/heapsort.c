/*
 * heapsort.c - heap sort of 100,000 pseudo-random signed 32-bit integers.
 *
 * Stresses: data-dependent, unpredictable branches (the sift-down
 * comparisons), index arithmetic and scattered loads/stores in a 400 KB
 * array; a function with a loop called ~150,000 times per sort.
 *
 * Usage: heapsort [N]   N sorts of freshly generated arrays (default 150).
 * Self-check, every iteration: the result is ordered and has the same sum
 * and xor as the input (a permutation check that catches lost elements).
 */
#include "bench.h"

#define COUNT 100000u
#define DEFAULT_ITERS 150

static int32_t a[COUNT];

static void sift_down(int32_t *v, uint32_t root, uint32_t end)
{
	while (2 * root + 1 <= end) {
		uint32_t child = 2 * root + 1, swap = root;
		int32_t t;

		if (v[swap] < v[child])
			swap = child;
		if (child + 1 <= end && v[swap] < v[child + 1])
			swap = child + 1;
		if (swap == root)
			return;
		t = v[root];
		v[root] = v[swap];
		v[swap] = t;
		root = swap;
	}
}

static void heap_sort(int32_t *v, uint32_t cnt)
{
	uint32_t start, end;
	int32_t t;

	for (start = (cnt - 2) / 2 + 1; start-- > 0;)
		sift_down(v, start, cnt - 1);
	for (end = cnt - 1; end > 0; end--) {
		t = v[end];
		v[end] = v[0];
		v[0] = t;
		sift_down(v, 0, end - 1);
	}
}

int main(int argc, char **argv)
{
	uint32_t n = bench_iters(argc, argv, DEFAULT_ITERS), it, sum = 0;

	for (it = 0; it < n; it++) {
		uint32_t seed = 0x2545f491u + it * 0x9e3779b9u, i, add = 0, xr = 0, wsum = 0;

		for (i = 0; i < COUNT; i++) {
			seed = seed * 1103515245u + 12345u;
			a[i] = (int32_t)(seed ^ (seed >> 15));
			add += (uint32_t)a[i];
			xr ^= (uint32_t)a[i];
		}
		heap_sort(a, COUNT);
		for (i = 0; i < COUNT; i++) {
			if (i && a[i - 1] > a[i])
				bench_fail("heapsort", "result not ordered", it);
			add -= (uint32_t)a[i];
			xr ^= (uint32_t)a[i];
			wsum += (uint32_t)a[i] * (i + 1);
		}
		if (add || xr)
			bench_fail("heapsort", "result is not a permutation of the input", it);
		sum = bench_mix(sum, wsum);
	}
	printf("heapsort: %u x %u ints, min %d, median %d, max %d, checksum %08x\n", n, COUNT,
	       a[0], a[COUNT / 2], a[COUNT - 1], sum);
	return 0;
}
