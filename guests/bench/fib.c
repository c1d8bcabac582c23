/*
 * fib.c - naive doubly recursive Fibonacci.
 *
 * Stresses: call and return (a return is an indirect jump whose target a
 * translator must find; native CPUs predict it with a return stack),
 * stack pushes and pops, tiny basic blocks.
 *
 * Usage: fib [N]   N evaluations of fib(24 + i % 4) (default 3000;
 * 150,000 to 640,000 calls each).  Self-check, every iteration: the
 * result equals the iterative Fibonacci number.
 */
#include "bench.h"

#define DEFAULT_ITERS 3000

static __attribute__((noinline)) uint32_t fib(uint32_t k)
{
	return k < 2 ? k : fib(k - 1) + fib(k - 2);
}

static uint32_t fib_iter(uint32_t k)
{
	uint32_t a = 0, b = 1, t;

	while (k--) {
		t = a + b;
		a = b;
		b = t;
	}
	return a;
}

int main(int argc, char **argv)
{
	uint32_t n = bench_iters(argc, argv, DEFAULT_ITERS), it, sum = 0, total = 0;

	for (it = 0; it < n; it++) {
		uint32_t k = 24 + it % 4, f = fib(k);

		if (f != fib_iter(k))
			bench_fail("fib", "wrong Fibonacci number", it);
		total += f;
		sum = bench_mix(sum, f);
	}
	printf("fib: %u evaluations, sum %u, checksum %08x\n", n, total, sum);
	return 0;
}
