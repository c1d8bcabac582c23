/*
 * divdi3.c - the 64-bit division helpers gcc calls on i386
 * (__udivdi3 __umoddi3 __divdi3 __moddi3, plus the combined
 * __udivmoddi4 / __divmoddi4).
 *
 * We provide them instead of linking libgcc.a because Debian builds its
 * libgcc with -fcf-protection, which puts ENDBR32 instructions in these
 * routines, and the guests must contain nothing newer than i686.
 * Only 32-bit arithmetic and DIVL are used here: a 64-bit "/" in this
 * file would call these very functions.  Division by zero executes a
 * real DIVL by zero and so raises SIGFPE, as the hardware division does.
 */
#include "rt.h"

uint64_t __udivmoddi4(uint64_t n, uint64_t d, uint64_t *rem);
int64_t __divmoddi4(int64_t a, int64_t b, int64_t *rem);
uint64_t __udivdi3(uint64_t n, uint64_t d);
uint64_t __umoddi3(uint64_t n, uint64_t d);
int64_t __divdi3(int64_t a, int64_t b);
int64_t __moddi3(int64_t a, int64_t b);

/* (hi:lo) / d with hi < d, so the quotient fits in 32 bits */
static inline uint32_t divl(uint32_t hi, uint32_t lo, uint32_t d, uint32_t *r)
{
	uint32_t q, rr;

	__asm__("divl %4" : "=a" (q), "=d" (rr) : "a" (lo), "d" (hi), "rm" (d) : "cc");
	*r = rr;
	return q;
}

uint64_t __udivmoddi4(uint64_t n, uint64_t d, uint64_t *rem)
{
	uint32_t nh = (uint32_t)(n >> 32), nl = (uint32_t)n;
	uint32_t dh = (uint32_t)(d >> 32), dl = (uint32_t)d;
	uint32_t qh = 0, ql, r;
	uint64_t q = 0, rr = 0;
	int i;

	if (dh == 0) {
		/* 32-bit divisor: schoolbook division in two DIVL steps */
		if (nh >= dl) {		/* dl == 0 faults here, like DIV */
			qh = divl(0, nh, dl, &r);
			nh = r;
		}
		ql = divl(nh, nl, dl, &r);
		if (rem)
			*rem = r;
		return (uint64_t)qh << 32 | ql;
	}
	/* divisor of 2^32 or more: restoring division, bit by bit */
	for (i = 63; i >= 0; i--) {
		uint32_t carry = (uint32_t)(rr >> 63);

		rr = rr << 1 | ((n >> i) & 1);
		if (carry || rr >= d) {
			rr -= d;
			q |= 1ull << i;
		}
	}
	if (rem)
		*rem = rr;
	return q;
}

int64_t __divmoddi4(int64_t a, int64_t b, int64_t *rem)
{
	uint64_t ua = a < 0 ? -(uint64_t)a : (uint64_t)a;
	uint64_t ub = b < 0 ? -(uint64_t)b : (uint64_t)b;
	uint64_t r, q = __udivmoddi4(ua, ub, &r);

	if (rem)
		*rem = (int64_t)(a < 0 ? -r : r);	/* remainder takes the dividend's sign */
	return (int64_t)((a < 0) != (b < 0) ? -q : q);
}

uint64_t __udivdi3(uint64_t n, uint64_t d)
{
	return __udivmoddi4(n, d, NULL);
}

uint64_t __umoddi3(uint64_t n, uint64_t d)
{
	uint64_t r;

	__udivmoddi4(n, d, &r);
	return r;
}

int64_t __divdi3(int64_t a, int64_t b)
{
	return __divmoddi4(a, b, NULL);
}

int64_t __moddi3(int64_t a, int64_t b)
{
	int64_t r;

	__divmoddi4(a, b, &r);
	return r;
}
