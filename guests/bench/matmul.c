/*
 * matmul.c - integer matrix multiply C = A x B of 160 x 160 matrices of
 * 32-bit integers (arithmetic modulo 2^32), i-k-j loop order.
 *
 * Stresses: the inner multiply-accumulate loop (imul, loads, a store per
 * element, no SSE), address arithmetic over 2-D arrays, a long-running
 * loop nest with a trip count known only at run time.
 *
 * Usage: matmul [N]   N products (default 460), A is regenerated from the
 * iteration number each time.  Self-check (Freivalds' test with two
 * vectors, exact modulo 2^32): C.v == A.(B.v) for v = all ones and for a
 * pseudo-random v.
 */
#include "bench.h"

#define DIM 160
#define DEFAULT_ITERS 460

static uint32_t A[DIM][DIM], B[DIM][DIM], C[DIM][DIM];

static void matmul(uint32_t (*c)[DIM], uint32_t (*a)[DIM], uint32_t (*b)[DIM], uint32_t dim)
{
	uint32_t i, j, k;

	for (i = 0; i < dim; i++) {
		for (j = 0; j < dim; j++)
			c[i][j] = 0;
		for (k = 0; k < dim; k++) {
			uint32_t aik = a[i][k];

			for (j = 0; j < dim; j++)
				c[i][j] += aik * b[k][j];
		}
	}
}

/* 1 when C.v == A.(B.v) */
static int freivalds(const uint32_t *v)
{
	uint32_t bv[DIM], i, j;

	for (i = 0; i < DIM; i++) {
		uint32_t s = 0;

		for (j = 0; j < DIM; j++)
			s += B[i][j] * v[j];
		bv[i] = s;
	}
	for (i = 0; i < DIM; i++) {
		uint32_t l = 0, r = 0;

		for (j = 0; j < DIM; j++) {
			l += C[i][j] * v[j];
			r += A[i][j] * bv[j];
		}
		if (l != r)
			return 0;
	}
	return 1;
}

int main(int argc, char **argv)
{
	uint32_t n = bench_iters(argc, argv, DEFAULT_ITERS), it, sum = 0, i, j;
	uint32_t seed = 0xdeadbeefu, ones[DIM], rnd[DIM];

	for (i = 0; i < DIM; i++)
		for (j = 0; j < DIM; j++)
			B[i][j] = xs32(&seed) & 0xffff;
	for (i = 0; i < DIM; i++) {
		ones[i] = 1;
		rnd[i] = xs32(&seed);
	}
	for (it = 0; it < n; it++) {
		uint32_t s = 0x9e3779b9u ^ (it * 0x85ebca6bu), h = 0;

		if (!s)
			s = 1;
		for (i = 0; i < DIM; i++)
			for (j = 0; j < DIM; j++)
				A[i][j] = xs32(&s) >> 12;
		matmul(C, A, B, DIM);
		for (i = 0; i < DIM; i++)
			h = bench_mix(h, C[i][(i * 7 + it) % DIM]);
		sum = bench_mix(sum, h);
	}
	if (n && (!freivalds(ones) || !freivalds(rnd)))
		bench_fail("matmul", "Freivalds check failed", n - 1);
	printf("matmul: %u x %ux%u, C[0][0] %08x, C[%u][%u] %08x, checksum %08x\n", n, DIM, DIM,
	       C[0][0], DIM - 1, DIM - 1, C[DIM - 1][DIM - 1], sum);
	return 0;
}
