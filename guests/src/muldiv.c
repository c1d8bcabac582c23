/*
 * muldiv.c - integer multiply and divide.
 *
 * MUL and one-operand IMUL (8/16/32-bit, AX / DX:AX / EDX:EAX results),
 * two-operand IMUL (register and memory source) and three-operand IMUL
 * (imm8 and imm16/32), then DIV and IDIV for all sizes.  After MUL/IMUL
 * only CF and OF are defined (set when the upper half is significant);
 * after DIV/IDIV every flag is undefined, so only quotient and remainder
 * are printed.  Divisions that would raise #DE (divide by zero, quotient
 * overflow) are skipped here; fault_div covers the exception.
 */
#include "rt.h"

#define MULFL (FL_CF | FL_OF)

static uint32_t flag_preset(int i)
{
	return (i & 1) ? (FL_ARITH | 2) : 2;
}

/* ---- one-operand forms: implicit accumulator ---------------------------- */
static uint32_t mul8(uint32_t a, uint32_t b, uint32_t fin, uint32_t *hi, uint32_t *fl)
{
	uint32_t ax = 0xa5a50000 | (a & 0xff);	/* upper half must survive */
	uint8_t src = (uint8_t)b;

	__asm__ volatile("pushl %[fin]\n\tpopfl\n\tmulb %[s]\n\tpushfl\n\tpopl %[fl]"
			 : "+a" (ax), [fl] "=&r" (*fl) : [s] "q" (src), [fin] "r" (fin) : "cc");
	*hi = 0;
	return ax;
}

static uint32_t imul8(uint32_t a, uint32_t b, uint32_t fin, uint32_t *hi, uint32_t *fl)
{
	uint32_t ax = 0x5a5a0000 | (a & 0xff);
	volatile uint8_t src = (uint8_t)b;	/* memory operand form */

	__asm__ volatile("pushl %[fin]\n\tpopfl\n\timulb %[s]\n\tpushfl\n\tpopl %[fl]"
			 : "+a" (ax), [fl] "=&r" (*fl) : [s] "m" (src), [fin] "r" (fin) : "cc");
	*hi = 0;
	return ax;
}

#define DEF_MUL1(name, insn, T, C)						\
static uint32_t name(uint32_t a, uint32_t b, uint32_t fin, uint32_t *hi, uint32_t *fl) \
{										\
	uint32_t lo = a | (sizeof(T) == 2 ? 0xc3c30000 : 0), d = 0x5a5a5a5a;					\
	T src = (T)b;								\
	__asm__ volatile("pushl %[fin]\n\tpopfl\n\t" insn " %[s]\n\t"		\
			 "pushfl\n\tpopl %[fl]"					\
			 : "+a" (lo), "+d" (d), [fl] "=&r" (*fl)		\
			 : [s] C (src), [fin] "r" (fin) : "cc");		\
	*hi = d;								\
	return lo;								\
}
DEF_MUL1(mul16, "mulw", uint16_t, "r")
DEF_MUL1(imul16, "imulw", uint16_t, "r")
DEF_MUL1(mul32, "mull", uint32_t, "r")
DEF_MUL1(imul32, "imull", uint32_t, "m")

/* ---- two- and three-operand IMUL ----------------------------------------- */
#define DEF_IMUL2(name, T, C, text)						\
static uint32_t name(uint32_t a, uint32_t b, uint32_t fin, uint32_t *hi, uint32_t *fl) \
{										\
	T x = (T)a, y = (T)b;							\
	__asm__ volatile("pushl %[fin]\n\tpopfl\n\t" text "\n\t"		\
			 "pushfl\n\tpopl %[fl]"					\
			 : [x] "+r" (x), [fl] "=&r" (*fl)			\
			 : [y] C (y), [fin] "r" (fin) : "cc");			\
	*hi = 0;								\
	return x;								\
}
DEF_IMUL2(imul2_16, uint16_t, "r", "imulw %[y], %[x]")
DEF_IMUL2(imul2_32, uint32_t, "r", "imull %[y], %[x]")
DEF_IMUL2(imul2_32m, uint32_t, "m", "imull %[y], %[x]")

/* three-operand: the second source is an immediate; b is ignored */
#define DEF_IMUL3(name, T, text)						\
static uint32_t name(uint32_t a, uint32_t b, uint32_t fin, uint32_t *hi, uint32_t *fl) \
{										\
	T x, y = (T)a;								\
	(void)b;								\
	__asm__ volatile("pushl %[fin]\n\tpopfl\n\t" text "\n\t"		\
			 "pushfl\n\tpopl %[fl]"					\
			 : [x] "=&r" (x), [fl] "=&r" (*fl)			\
			 : [y] "rm" (y), [fin] "r" (fin) : "cc");		\
	*hi = 0;								\
	return x;								\
}
DEF_IMUL3(imul3_16_i8, uint16_t, "imulw $-7, %[y], %[x]")
DEF_IMUL3(imul3_16_i16, uint16_t, "imulw $0x1235, %[y], %[x]")
DEF_IMUL3(imul3_32_i8, uint32_t, "imull $0x7f, %[y], %[x]")
DEF_IMUL3(imul3_32_i32, uint32_t, "imull $-0x12345, %[y], %[x]")

typedef uint32_t (*mul_fn)(uint32_t, uint32_t, uint32_t, uint32_t *, uint32_t *);

static const struct {
	const char *name;
	mul_fn fn;
	int bits, wide;		/* wide: result has an upper half in EDX/DX */
} muls[] = {
	{ "mul8 (ax)", mul8, 8, 0 },
	{ "imul8 m8 (ax)", imul8, 8, 0 },
	{ "mul16", mul16, 16, 1 },
	{ "imul16", imul16, 16, 1 },
	{ "mul32", mul32, 32, 1 },
	{ "imul32 m32", imul32, 32, 1 },
	{ "imul r16,r16", imul2_16, 16, 0 },
	{ "imul r32,r32", imul2_32, 32, 0 },
	{ "imul r32,m32", imul2_32m, 32, 0 },
	{ "imul r16,rm16,-7", imul3_16_i8, 16, 0 },
	{ "imul r16,rm16,0x1235", imul3_16_i16, 16, 0 },
	{ "imul r32,rm32,0x7f", imul3_32_i8, 32, 0 },
	{ "imul r32,rm32,-0x12345", imul3_32_i32, 32, 0 },
};

static const uint32_t vals[] = {
	0x00000000, 0x00000001, 0x00000002, 0x0000007f, 0x00000080, 0x000000ff,
	0x00007fff, 0x00008000, 0x0000ffff, 0x7fffffff, 0x80000000, 0xffffffff,
	0x12345678, 0xfedcba98, 0x00010001, 0x0000b504,
};
#define NVALS (int)(sizeof(vals) / sizeof(vals[0]))

static uint32_t trunc_to(uint32_t v, int bits)
{
	return bits == 32 ? v : v & ((1u << bits) - 1);
}

static void run_muls(void)
{
	unsigned m;
	int i, j;

	for (m = 0; m < sizeof(muls) / sizeof(muls[0]); m++) {
		int bits = muls[m].bits, w = bits / 4;
		int is3 = muls[m].fn == imul3_16_i8 || muls[m].fn == imul3_16_i16 ||
			  muls[m].fn == imul3_32_i8 || muls[m].fn == imul3_32_i32;

		printf("== %s\n", muls[m].name);
		for (i = 0; i < NVALS; i++) {
			for (j = 0; j < (is3 ? 1 : NVALS); j++) {
				uint32_t a = trunc_to(vals[i], bits), b = trunc_to(vals[j], bits);
				uint32_t hi, fl, lo;

				lo = muls[m].fn(a, b, flag_preset(i + j), &hi, &fl);
				/* accumulator forms print whole EAX/EDX: the bits
				 * above the operand size must be preserved */
				if (muls[m].wide)
					printf("%0*x*%0*x = edx:eax %08x:%08x %s\n", w, a, w, b,
					       hi, lo, flagstr(fl, MULFL));
				else if (is3)
					printf("%0*x = %0*x %s\n", w, a, bits == 8 ? 4 : w,
					       lo, flagstr(fl, MULFL));
				else
					printf("%0*x*%0*x = %0*x %s\n", w, a, w, b,
					       bits == 8 ? 8 : w, lo, flagstr(fl, MULFL));
			}
		}
	}
}

/* ---- division -------------------------------------------------------------- */
static void div8(uint32_t n, uint32_t d, uint32_t *q, uint32_t *r)
{
	uint32_t ax = 0x3c3c0000 | (n & 0xffff);
	uint8_t s = (uint8_t)d;

	__asm__ volatile("divb %[s]" : "+a" (ax) : [s] "q" (s) : "cc");
	if (ax >> 16 != 0x3c3c)
		printf("div8 clobbered upper eax: %08x\n", ax);
	*q = ax & 0xff;
	*r = (ax >> 8) & 0xff;
}

static void idiv8(uint32_t n, uint32_t d, uint32_t *q, uint32_t *r)
{
	uint32_t ax = 0x3c3c0000 | (n & 0xffff);
	volatile uint8_t s = (uint8_t)d;

	__asm__ volatile("idivb %[s]" : "+a" (ax) : [s] "m" (s) : "cc");
	if (ax >> 16 != 0x3c3c)
		printf("idiv8 clobbered upper eax: %08x\n", ax);
	*q = ax & 0xff;
	*r = (ax >> 8) & 0xff;
}

static void div16(uint32_t n, uint32_t d, uint32_t *q, uint32_t *r)
{
	uint32_t ax = 0x3c3c0000 | (n & 0xffff), dx = 0xc3c30000 | (n >> 16);
	uint16_t s = (uint16_t)d;

	__asm__ volatile("divw %[s]" : "+a" (ax), "+d" (dx) : [s] "r" (s) : "cc");
	if (ax >> 16 != 0x3c3c || dx >> 16 != 0xc3c3)
		printf("div16 clobbered upper halves: %08x %08x\n", ax, dx);
	*q = ax & 0xffff;
	*r = dx & 0xffff;
}

static void idiv16(uint32_t n, uint32_t d, uint32_t *q, uint32_t *r)
{
	uint32_t ax = 0x3c3c0000 | (n & 0xffff), dx = 0xc3c30000 | (n >> 16);
	volatile uint16_t s = (uint16_t)d;

	__asm__ volatile("idivw %[s]" : "+a" (ax), "+d" (dx) : [s] "m" (s) : "cc");
	if (ax >> 16 != 0x3c3c || dx >> 16 != 0xc3c3)
		printf("idiv16 clobbered upper halves: %08x %08x\n", ax, dx);
	*q = ax & 0xffff;
	*r = dx & 0xffff;
}

static void div32(uint64_t n, uint32_t d, uint32_t *q, uint32_t *r)
{
	uint32_t lo = (uint32_t)n, hi = (uint32_t)(n >> 32);

	__asm__ volatile("divl %[s]" : "+a" (lo), "+d" (hi) : [s] "r" (d) : "cc");
	*q = lo;
	*r = hi;
}

static void idiv32(uint64_t n, uint32_t d, uint32_t *q, uint32_t *r)
{
	uint32_t lo = (uint32_t)n, hi = (uint32_t)(n >> 32);
	volatile uint32_t s = d;

	__asm__ volatile("idivl %[s]" : "+a" (lo), "+d" (hi) : [s] "m" (s) : "cc");
	*q = lo;
	*r = hi;
}

static const uint64_t dividends[] = {
	0, 1, 7, 0x7f, 0x80, 0xff, 0x100, 0x7fff, 0x8000, 0xffff, 0x10000,
	0x12345, 0x7fffffff, 0x80000000, 0xffffffff, 0x123456789ull,
	0x7fffffffffffffffull, 0x8000000000000000ull, 0xffffffffffffffffull,
	0xfffffffffffffff9ull, 0xffffffff80000000ull, 0x00000000fffffff0ull,
	0xdeadbeefcafebabeull, 0x000000007ffffffeull,
};
static const uint32_t divisors[] = {
	1, 2, 3, 7, 10, 0x7f, 0x80, 0xff, 0x7fff, 0x8000, 0xffff, 0x10000,
	0x7fffffff, 0x80000000, 0xfffffff9, 0xffffffff, 0x12345, 0xfffe,
};

/* Would the instruction raise #DE?  Checked in plain C arithmetic. */
static int div_ok(uint64_t n, uint32_t d, int bits, int sgn)
{
	uint64_t nmask = bits == 32 ? ~0ull : (1ull << (2 * bits)) - 1;
	uint32_t dmask = bits == 32 ? ~0u : (1u << bits) - 1;

	n &= nmask;
	d &= dmask;
	if (d == 0)
		return 0;
	if (!sgn)
		return n / d <= dmask;
	{
		/* sign-extend dividend (2*bits) and divisor (bits) */
		int64_t sn = (int64_t)(n << (64 - 2 * bits)) >> (64 - 2 * bits);
		int64_t sd = (int64_t)((uint64_t)d << (64 - bits)) >> (64 - bits);
		int64_t lim = (int64_t)1 << (bits - 1);
		int64_t q;

		if (sn == INT64_MIN && sd == -1)
			return 0;
		q = sn / sd;
		return q >= -lim && q < lim;
	}
}

static void run_divs(void)
{
	static const char *names[2][3] = { { "div8", "div16", "div32" },
					   { "idiv8", "idiv16", "idiv32" } };
	int sgn, s;
	unsigned i, j;

	for (sgn = 0; sgn < 2; sgn++) {
		for (s = 0; s < 3; s++) {
			int bits = 8 << s, w = bits / 4;
			unsigned skipped = 0;

			printf("== %s\n", names[sgn][s]);
			for (i = 0; i < sizeof(dividends) / sizeof(dividends[0]); i++) {
				for (j = 0; j < sizeof(divisors) / sizeof(divisors[0]); j++) {
					uint64_t n = dividends[i];
					uint32_t d = trunc_to(divisors[j], bits), q, r;

					if (bits < 32)
						n &= (1ull << (2 * bits)) - 1;
					if (!div_ok(n, d, bits, sgn)) {
						skipped++;
						continue;
					}
					if (bits == 8)
						(sgn ? idiv8 : div8)((uint32_t)n, d, &q, &r);
					else if (bits == 16)
						(sgn ? idiv16 : div16)((uint32_t)n, d, &q, &r);
					else
						(sgn ? idiv32 : div32)(n, d, &q, &r);
					printf("%0*llx / %0*x = %0*x rem %0*x\n", 2 * w, n,
					       w, d, w, q, w, r);
				}
			}
			printf("(%u would fault, skipped)\n", skipped);
		}
	}
}

int main(void)
{
	run_muls();
	run_divs();
	return 0;
}
