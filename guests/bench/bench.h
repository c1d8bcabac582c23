/*
 * bench.h - helpers shared by the CPU benchmark guests (the .c files of guests/bench/):
 * the iteration-count argument, failure reporting, a deterministic
 * pseudo-random generator and fixed-point printing of doubles (the
 * runtime's printf has no %f).
 *
 * Every benchmark is "prog [N]": N iterations of its kernel (default: the
 * count that takes about one second natively, see benches/README.md), one
 * checksum line on stdout, exit 0.  A failed self-check prints a line
 * starting with "FAIL" and exits 1.
 */
#ifndef BENCH_H
#define BENCH_H

#include "rt.h"

/* iteration count: argv[1] if given and positive, else def */
static inline uint32_t bench_iters(int argc, char **argv, uint32_t def)
{
	long n;

	if (argc < 2)
		return def;
	n = strtol(argv[1], NULL, 10);
	if (n <= 0) {
		eprintf("usage: %s [ITERATIONS>0]\n", argv[0]);
		exit(2);
	}
	return (uint32_t)n;
}

__attribute__((noreturn)) static inline void bench_fail(const char *name, const char *what,
							 uint32_t iter)
{
	printf("FAIL %s: %s (iteration %u)\n", name, what, iter);
	exit(1);
}

/* xorshift32: never returns 0 for a non-zero state */
static inline uint32_t xs32(uint32_t *s)
{
	uint32_t x = *s;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	*s = x;
	return x;
}

/* mix an iteration's result into a running checksum */
static inline uint32_t bench_mix(uint32_t acc, uint32_t v)
{
	acc ^= v + 0x9e3779b9u + (acc << 6) + (acc >> 2);
	return acc;
}

/* x87 helpers (no libm) */
static inline double x87_sqrt(double x)
{
	double r;

	__asm__("fsqrt" : "=t"(r) : "0"(x));
	return r;
}

static inline double x87_fabs(double x)
{
	double r;

	__asm__("fabs" : "=t"(r) : "0"(x));
	return r;
}

/* round to nearest (the default x87 rounding mode) */
static inline long long x87_llrint(double x)
{
	long long r;

	__asm__("fistpll %0" : "=m"(r) : "t"(x) : "st");
	return r;
}

/* format x with `dec` decimals (1..9) into buf; rounded, "-" for negatives */
static inline const char *fmt_fixed(char *buf, size_t len, double x, int dec)
{
	static const long long pow10[10] = {
		1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000, 1000000000,
	};
	long long scaled, p = pow10[dec];
	const char *sign = "";

	scaled = x87_llrint(x * (double)p);
	if (scaled < 0) {
		sign = "-";
		scaled = -scaled;
	}
	snprintf(buf, len, "%s%lld.%0*lld", sign, scaled / p, dec, scaled % p);
	return buf;
}

#endif
