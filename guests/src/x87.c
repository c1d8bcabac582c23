/*
 * x87.c - the x87 floating-point unit, through inline asm only (no libm,
 * no compiler-generated floating point).
 *
 * Covered: constants (in all four rounding modes), loads (fld m32/m64/
 * m80, fild m16/m32/m64), stores with rounding (fst/fstp m32/m64/m80,
 * fist/fistp m16/m32/m64), the arithmetic ops in every operand form
 * (st(i), memory float, memory integer, pop forms), fsqrt fabs fchs
 * frndint fscale fxtract fprem fprem1, compares (fcom fcomp fcompp fucom*
 * ficom ftst fxam, fcomi fcomip fucomi fucomip), fcmovcc, control word
 * handling (rounding and precision control), fxch ffree fincstp fdecstp,
 * stack overflow/underflow, fbld/fbstp, fninit/finit, fnstenv/fldenv,
 * fnsave/frstor, fnstsw to AX and memory, exception flags, and the
 * transcendental instructions.  No SSE3 fisttp.
 *
 * After most operations the whole FPU state is captured with fnsave and
 * printed: TOP, the condition codes C3 C2 C1 C0 ('-' where the Intel SDM
 * leaves them undefined for that instruction), the exception flags
 * I D Z O U P and stack fault S (upper case when set), and every
 * non-empty register as sign/exponent:mantissa with its tag (v valid,
 * z zero, s special).  Instruction/data pointers in the saved image are
 * never printed.  Transcendental results may legitimately differ between
 * CPU models in the last bits, so they are stored as doubles (fstp m64)
 * and their status is reduced to the I/Z exceptions and, for the
 * trigonometric ones, C2 (argument out of range).
 */
#include "rt.h"

/* ---- values ------------------------------------------------------------ */
struct x80 {
	uint64_t m;
	uint16_t se;
} __attribute__((packed));

#define X(se, m) { 0x##m##ull, 0x##se }

static const struct x80 V_ZERO = X(0000, 0000000000000000);
static const struct x80 V_NZERO = X(8000, 0000000000000000);
static const struct x80 V_ONE = X(3fff, 8000000000000000);
static const struct x80 V_NONE = X(bfff, 8000000000000000);
static const struct x80 V_TWO = X(4000, 8000000000000000);
static const struct x80 V_THREE = X(4000, c000000000000000);
static const struct x80 V_TEN = X(4002, a000000000000000);
static const struct x80 V_HALF = X(3ffe, 8000000000000000);
static const struct x80 V_NHALF = X(bffe, 8000000000000000);
static const struct x80 V_1_5 = X(3fff, c000000000000000);
static const struct x80 V_2_5 = X(4000, a000000000000000);
static const struct x80 V_N2_5 = X(c000, a000000000000000);
static const struct x80 V_N1_5 = X(bfff, c000000000000000);
static const struct x80 V_3_5 = X(4000, e000000000000000);
static const struct x80 V_THIRD = X(3ffd, aaaaaaaaaaaaaaab);
static const struct x80 V_NTHIRD = X(bffd, aaaaaaaaaaaaaaab);
static const struct x80 V_2_49 = X(4000, 9f5c28f5c28f5c29);
static const struct x80 V_N2_51 = X(c000, a0a3d70a3d70a3d7);
static const struct x80 V_0_1 = X(3ffb, cccccccccccccccd);
static const struct x80 V_PI4 = X(3ffe, c90fdaa22168c235);
static const struct x80 V_100 = X(4005, c800000000000000);
static const struct x80 V_1E10 = X(4020, 9502f90000000000);
static const struct x80 V_2P63 = X(403e, 8000000000000000);
static const struct x80 V_2P64M1 = X(403e, ffffffffffffffff);
static const struct x80 V_2P100 = X(4063, 8000000000000000);
static const struct x80 V_1E19 = X(403f, 8ac7230489e80000);
static const struct x80 V_1E17 = X(4038, b1a2bc2ec5000000);
static const struct x80 V_1E18 = X(403a, de0b6b3a76400000);
static const struct x80 V_32767_5 = X(400d, ffff000000000000);
static const struct x80 V_N32768_4 = X(c00e, 8000cccccccccccd);
static const struct x80 V_2P31M0_5 = X(401d, ffffffff00000000);
static const struct x80 V_123456789 = X(4019, eb79a2a000000000);
static const struct x80 V_N123_5 = X(c005, f700000000000000);
static const struct x80 V_MAX = X(7ffe, ffffffffffffffff);
static const struct x80 V_MINNORM = X(0001, 8000000000000000);
static const struct x80 V_DENORM = X(0000, 0000000000000001);
static const struct x80 V_PSEUDODEN = X(0000, 8000000000000000);
static const struct x80 V_UNNORMAL = X(4000, 4000000000000000);
static const struct x80 V_INF = X(7fff, 8000000000000000);
static const struct x80 V_NINF = X(ffff, 8000000000000000);
static const struct x80 V_QNAN = X(7fff, c000000000000123);
static const struct x80 V_NQNAN = X(ffff, c000000000000456);
static const struct x80 V_SNAN = X(7fff, 8000000000000001);
static const struct x80 V_1P2M70 = X(3fb9, 8000000000000000);
static const struct x80 V_1E4000 = X(7b4d, 8000000000000000);

/* ---- state capture and printing --------------------------------------- */
struct fsave {
	uint16_t cw, r0, sw, r1, tw, r2;
	uint32_t fip, fcs, fdp, fds;	/* pointers: never printed */
	struct x80 st[8];
} __attribute__((packed));

/* which condition codes the instruction defines (C0..C3 = bits 0..3) */
#define C0 1
#define C1 2
#define C2 4
#define C3 8
#define CNONE 0
#define CALL 15

/* control words: exceptions masked, 64-bit precision, rounding mode */
#define CW_RN 0x037f
#define CW_RD 0x077f
#define CW_RU 0x0b7f
#define CW_RZ 0x0f7f
static const uint16_t rc_cw[4] = { CW_RN, CW_RD, CW_RU, CW_RZ };
static const char *const rc_name[4] = { "RN", "RD", "RU", "RZ" };

static void print_x80(const struct x80 *v)
{
	printf("%04x:%016llx", v->se, (unsigned long long)v->m);
}

static void print_sw(uint16_t sw, unsigned cmask)
{
	static const char exc[] = "idzoups";
	int i;

	printf("T%u C%c%c%c%c ", (sw >> 11) & 7,
	       (cmask & C3) ? '0' + ((sw >> 14) & 1) : '-',
	       (cmask & C2) ? '0' + ((sw >> 10) & 1) : '-',
	       (cmask & C1) ? '0' + ((sw >> 9) & 1) : '-',
	       (cmask & C0) ? '0' + ((sw >> 8) & 1) : '-');
	for (i = 0; i < 7; i++)
		putchar((sw >> i) & 1 ? exc[i] - 'a' + 'A' : '.');
}

static void print_state(const struct fsave *s, unsigned cmask)
{
	unsigned top = (s->sw >> 11) & 7, i;

	print_sw(s->sw, cmask);
	for (i = 0; i < 8; i++) {
		unsigned phys = (top + i) & 7, tag = (s->tw >> (2 * phys)) & 3;

		if (tag == 3)
			continue;
		printf(" st%u=", i);
		print_x80(&s->st[i]);
		printf("%c", "vzs"[tag]);
	}
	printf("\n");
}

/* ---- generic binary-operation runner --------------------------------- */
/* Inputs: a goes to ST0 and b to ST1; memory operands hold b converted. */
struct binin {
	struct x80 a, b;
	uint32_t f32;		/* b as float */
	uint64_t f64;		/* b as double */
	int16_t i16;		/* b as integers */
	int32_t i32;
};

typedef void (*bin_fn)(const struct binin *in, uint16_t cw, struct fsave *out);

#define DEF_BIN(name, text)							\
static void name(const struct binin *in, uint16_t cw, struct fsave *out)	\
{										\
	__asm__ volatile("fninit\n\tfldcw %[cw]\n\t"				\
			 "fldt %[b]\n\tfldt %[a]\n\tfnclex\n\t"			\
			 text "\n\t"						\
			 "fnsave %[s]"						\
			 : [s] "=m" (*out)					\
			 : [a] "m" (in->a), [b] "m" (in->b), [f32] "m" (in->f32), \
			   [f64] "m" (in->f64), [i16] "m" (in->i16),		\
			   [i32] "m" (in->i32), [cw] "m" (cw)			\
			 : "memory");						\
}

#define DEF_ARITH(op)								\
	DEF_BIN(op##_st1_st, "f" #op " %%st(1), %%st")				\
	DEF_BIN(op##_st_st1, "f" #op " %%st, %%st(1)")				\
	DEF_BIN(op##_p, "f" #op "p")						\
	DEF_BIN(op##_m32, "f" #op "s %[f32]")					\
	DEF_BIN(op##_m64, "f" #op "l %[f64]")					\
	DEF_BIN(op##_i16, "fi" #op "s %[i16]")					\
	DEF_BIN(op##_i32, "fi" #op "l %[i32]")
DEF_ARITH(add) DEF_ARITH(sub) DEF_ARITH(subr) DEF_ARITH(mul) DEF_ARITH(div) DEF_ARITH(divr)

#define ARITH_ENTRIES(op)							\
	{ "f" #op " %st(1),%st", op##_st1_st, C1 },				\
	{ "f" #op " %st,%st(1)", op##_st_st1, C1 },				\
	{ "f" #op "p", op##_p, C1 },						\
	{ "f" #op "s m32", op##_m32, C1 },					\
	{ "f" #op "l m64", op##_m64, C1 },					\
	{ "fi" #op "s m16", op##_i16, C1 },					\
	{ "fi" #op "l m32", op##_i32, C1 },

struct binop {
	const char *name;
	bin_fn fn;
	unsigned cmask;
};

static const struct binop arith_ops[] = {
	ARITH_ENTRIES(add) ARITH_ENTRIES(sub) ARITH_ENTRIES(subr)
	ARITH_ENTRIES(mul) ARITH_ENTRIES(div) ARITH_ENTRIES(divr)
};

/* operand pairs: a (ST0), b (ST1) and b in float/double/int16/int32 form */
#define PAIR(a, b, f, d, i16, i32) { a, b, 0x##f, 0x##d##ull, i16, i32 }
static struct binin pairs[] = {
	PAIR(V_ONE, V_TWO, 40000000, 4000000000000000, 2, 2),
	PAIR(V_ONE, V_THREE, 40400000, 4008000000000000, 3, 3),
	PAIR(V_N2_5, V_0_1, 3dcccccd, 3fb999999999999a, 0, 0),
	PAIR(V_123456789, X(c001, e000000000000000), c0e00000, c01c000000000000, -7, -7),
	PAIR(V_MAX, V_TWO, 40000000, 4000000000000000, 2, 2),
	PAIR(V_MINNORM, V_HALF, 3f000000, 3fe0000000000000, 0, 0),
	PAIR(V_INF, V_INF, 7f800000, 7ff0000000000000, 0, 0),
	PAIR(V_ZERO, V_ZERO, 00000000, 0000000000000000, 0, 0),
	PAIR(V_NZERO, V_ZERO, 00000000, 0000000000000000, 0, 0),
	PAIR(V_ONE, V_ZERO, 00000000, 0000000000000000, 0, 0),
	PAIR(V_QNAN, V_ONE, 3f800000, 3ff0000000000000, 1, 1),
	PAIR(V_THREE, V_SNAN, 7f800001, 7ff0000000000001, 1, 1),
	PAIR(V_DENORM, V_ONE, 3f800000, 3ff0000000000000, 1, 1),
	PAIR(V_ONE, V_1P2M70, 1c800000, 3b90000000000000, 0, 0),
	PAIR(V_2P64M1, V_ONE, 3f800000, 3ff0000000000000, 1, 1),
	PAIR(V_NINF, V_NQNAN, ffc00000, fff8000000000000, -1, -1),
	PAIR(V_TEN, V_3_5, 40600000, 400c000000000000, 32767, 2147483647),
	PAIR(V_NTHIRD, V_THIRD, 3eaaaaab, 3fd5555555555555, -32768, -2147483647 - 1),
};
#define NPAIRS (sizeof(pairs) / sizeof(pairs[0]))

static void run_bin(const struct binop *op, unsigned pair, uint16_t cw)
{
	struct fsave s;

	op->fn(&pairs[pair], cw, &s);
	printf("%s #%u: ", op->name, pair);
	print_state(&s, op->cmask);
}

static void test_arith(void)
{
	unsigned i, p;

	printf("== operand pairs (ST0=a, ST1=b; memory forms use b)\n");
	for (p = 0; p < NPAIRS; p++) {
		printf("#%u: a=", p);
		print_x80(&pairs[p].a);
		printf(" b=");
		print_x80(&pairs[p].b);
		printf(" m32=%08x m64=%016llx i16=%d i32=%d\n", pairs[p].f32,
		       (unsigned long long)pairs[p].f64, pairs[p].i16, pairs[p].i32);
	}
	printf("== arithmetic\n");
	for (i = 0; i < sizeof(arith_ops) / sizeof(arith_ops[0]); i++)
		for (p = 0; p < NPAIRS; p++)
			run_bin(&arith_ops[i], p, CW_RN);
}

/* ---- rounding and precision control ----------------------------------- */
static void test_rounding(void)
{
	static const struct binop ops[] = {
		{ "fdiv %st(1),%st", div_st1_st, C1 },
		{ "fadd %st(1),%st", add_st1_st, C1 },
		{ "fmul %st(1),%st", mul_st1_st, C1 },
		{ "fsub %st(1),%st", sub_st1_st, C1 },
	};
	static const struct binin in[] = {
		PAIR(V_ONE, V_THREE, 0, 0, 0, 0),
		PAIR(V_NONE, V_THREE, 0, 0, 0, 0),
		PAIR(V_TWO, V_THREE, 0, 0, 0, 0),
		PAIR(V_ONE, V_1P2M70, 0, 0, 0, 0),
		PAIR(V_NONE, V_1P2M70, 0, 0, 0, 0),
		PAIR(V_NZERO, V_ZERO, 0, 0, 0, 0),	/* -0 + 0: sign depends on RC */
		PAIR(V_ONE, V_ONE, 0, 0, 0, 0),		/* 1 - 1: -0 only in RD */
		PAIR(V_MAX, V_TWO, 0, 0, 0, 0),		/* overflow: inf or max */
		PAIR(V_MINNORM, V_0_1, 0, 0, 0, 0),	/* underflow */
	};
	/* precision control: 24 bits, 53 bits, 64 bits (extended) */
	static const uint16_t pc_cw[3] = { 0x007f, 0x027f, 0x037f };
	static const char *const pc_name[3] = { "PC24", "PC53", "PC64" };
	unsigned o, i;
	int r, p;

	printf("== rounding control\n");
	for (o = 0; o < sizeof(ops) / sizeof(ops[0]); o++) {
		for (i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
			for (r = 0; r < 4; r++) {
				struct fsave s;

				ops[o].fn(&in[i], rc_cw[r], &s);
				printf("%s %s a=", ops[o].name, rc_name[r]);
				print_x80(&in[i].a);
				printf(" b=");
				print_x80(&in[i].b);
				printf(": ");
				print_state(&s, C1);
			}
		}
	}
	printf("== precision control\n");
	for (o = 0; o < sizeof(ops) / sizeof(ops[0]); o++) {
		for (i = 0; i < 5; i++) {
			for (p = 0; p < 3; p++) {
				for (r = 0; r < 4; r += 3) {	/* RN and RZ */
					struct fsave s;
					uint16_t cw = (uint16_t)((pc_cw[p] & ~0x0c00) | (rc_cw[r] & 0x0c00));

					ops[o].fn(&in[i], cw, &s);
					printf("%s %s %s #%u: ", ops[o].name, pc_name[p], rc_name[r], i);
					print_state(&s, C1);
				}
			}
		}
	}
}

/* ---- unary operations ---------------------------------------------------- */
typedef void (*un_fn)(const struct x80 *a, uint16_t cw, struct fsave *out);

#define DEF_UN(name, text)							\
static void name(const struct x80 *a, uint16_t cw, struct fsave *out)		\
{										\
	__asm__ volatile("fninit\n\tfldcw %[cw]\n\tfldt %[a]\n\tfnclex\n\t"	\
			 text "\n\tfnsave %[s]"					\
			 : [s] "=m" (*out) : [a] "m" (*a), [cw] "m" (cw)	\
			 : "memory");						\
}
DEF_UN(u_fsqrt, "fsqrt")
DEF_UN(u_fabs, "fabs")
DEF_UN(u_fchs, "fchs")
DEF_UN(u_frndint, "frndint")
DEF_UN(u_fxtract, "fxtract")
DEF_UN(u_ftst, "ftst")
DEF_UN(u_fxam, "fxam")

static void test_unary(void)
{
	static const struct {
		const char *name;
		un_fn fn;
		unsigned cmask;
	} ops[] = {
		{ "fsqrt", u_fsqrt, C1 }, { "fabs", u_fabs, C1 }, { "fchs", u_fchs, C1 },
		{ "fxtract", u_fxtract, C1 }, { "ftst", u_ftst, CALL },
	};
	static const struct x80 *const vals[] = {
		&V_ZERO, &V_NZERO, &V_ONE, &V_TWO, &V_THREE, &V_NONE, &V_0_1, &V_1E10,
		&V_MAX, &V_MINNORM, &V_DENORM, &V_PSEUDODEN, &V_INF, &V_NINF, &V_QNAN,
		&V_SNAN, &V_UNNORMAL, &V_2P100, &V_NTHIRD,
	};
	unsigned o, i;

	printf("== unary\n");
	for (o = 0; o < sizeof(ops) / sizeof(ops[0]); o++) {
		for (i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
			struct fsave s;

			ops[o].fn(vals[i], CW_RN, &s);
			printf("%s ", ops[o].name);
			print_x80(vals[i]);
			printf(": ");
			print_state(&s, ops[o].cmask);
		}
	}
}

static void test_frndint(void)
{
	static const struct x80 *const vals[] = {
		&V_HALF, &V_NHALF, &V_1_5, &V_N1_5, &V_2_5, &V_N2_5, &V_3_5, &V_2_49,
		&V_N2_51, &V_THIRD, &V_1E10, &V_2P64M1, &V_NZERO, &V_INF, &V_QNAN, &V_DENORM,
	};
	unsigned i;
	int r;

	printf("== frndint\n");
	for (i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		for (r = 0; r < 4; r++) {
			struct fsave s;

			u_frndint(vals[i], rc_cw[r], &s);
			printf("frndint %s ", rc_name[r]);
			print_x80(vals[i]);
			printf(": ");
			print_state(&s, C1);
		}
	}
}

static void test_fxam(void)
{
	static const struct x80 *const vals[] = {
		&V_ZERO, &V_NZERO, &V_ONE, &V_NONE, &V_MAX, &V_DENORM, &V_PSEUDODEN,
		&V_INF, &V_NINF, &V_QNAN, &V_NQNAN, &V_SNAN, &V_UNNORMAL, &V_MINNORM,
	};
	unsigned i;
	struct fsave s;
	uint16_t sw;

	printf("== fxam (C3 C2 C0 = class, C1 = sign)\n");
	for (i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		u_fxam(vals[i], CW_RN, &s);
		printf("fxam ");
		print_x80(vals[i]);
		printf(": ");
		print_state(&s, CALL);
	}
	/* empty register: C3=1 C0=1, C1 undefined-ish sign of garbage: mask C1 */
	__asm__ volatile("fninit\n\tfxam\n\tfnstsw %0" : "=a" (sw));
	printf("fxam empty: ");
	print_sw(sw, C0 | C2 | C3);
	printf("\n");
}

/* ---- fscale / fprem / fprem1 (two-operand specials) ------------------- */
DEF_BIN(b_fscale, "fscale")

static void test_fscale(void)
{
	static const struct binin in[] = {
		PAIR(V_ONE, V_THREE, 0, 0, 0, 0),
		PAIR(V_THREE, X(c000, e000000000000000), 0, 0, 0, 0),	/* -3.5 -> -3 */
		PAIR(V_THREE, V_1E10, 0, 0, 0, 0),			/* overflow */
		PAIR(V_THREE, X(c020, 9502f90000000000), 0, 0, 0, 0),	/* underflow */
		PAIR(V_ONE, V_NINF, 0, 0, 0, 0),
		PAIR(V_ZERO, V_INF, 0, 0, 0, 0),			/* invalid */
		PAIR(V_INF, V_NINF, 0, 0, 0, 0),			/* invalid */
		PAIR(V_NTHIRD, V_HALF, 0, 0, 0, 0),			/* scale 0 */
		PAIR(V_DENORM, V_TEN, 0, 0, 0, 0),
		PAIR(V_QNAN, V_ONE, 0, 0, 0, 0),
	};
	unsigned i;

	printf("== fscale (ST0 * 2^trunc(ST1))\n");
	for (i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
		struct fsave s;

		b_fscale(&in[i], CW_RN, &s);
		printf("fscale a=");
		print_x80(&in[i].a);
		printf(" b=");
		print_x80(&in[i].b);
		printf(": ");
		print_state(&s, C1);
	}
}

/* run fprem/fprem1 until C2 clears (or 100 times); returns iterations */
#define DEF_PREM(name, insn)							\
static int name(const struct binin *in, struct fsave *out)			\
{										\
	int n = 0;								\
	__asm__ volatile("fninit\n\tfldt %[b]\n\tfldt %[a]\n"			\
			 "1:\t" insn "\n\t"					\
			 "incl %[n]\n\t"					\
			 "fnstsw %%ax\n\t"					\
			 "cmpl $100, %[n]\n\t"					\
			 "jae 2f\n\t"						\
			 "testw $0x400, %%ax\n\t"				\
			 "jnz 1b\n"						\
			 "2:\tfnsave %[s]"					\
			 : [s] "=m" (*out), [n] "+r" (n)			\
			 : [a] "m" (in->a), [b] "m" (in->b)			\
			 : "eax", "cc", "memory");				\
	return n;								\
}
DEF_PREM(do_fprem, "fprem")
DEF_PREM(do_fprem1, "fprem1")

static void test_fprem(void)
{
	static const struct binin in[] = {
		PAIR(V_TEN, V_THREE, 0, 0, 0, 0),
		PAIR(X(c002, a000000000000000), V_THREE, 0, 0, 0, 0),	/* -10 */
		PAIR(V_TEN, X(c000, c000000000000000), 0, 0, 0, 0),	/* 10 / -3 */
		PAIR(X(4001, b000000000000000), V_ONE, 0, 0, 0, 0),	/* 5.5 */
		PAIR(X(4001, a000000000000000), V_TWO, 0, 0, 0, 0),	/* 5 / 2: tie */
		PAIR(V_2P100, V_THREE, 0, 0, 0, 0),			/* partial */
		PAIR(V_1E4000, V_0_1, 0, 0, 0, 0),			/* many rounds */
		PAIR(V_ONE, V_ZERO, 0, 0, 0, 0),
		PAIR(V_INF, V_ONE, 0, 0, 0, 0),
		PAIR(V_THREE, V_INF, 0, 0, 0, 0),
		PAIR(V_ZERO, V_ONE, 0, 0, 0, 0),
		PAIR(V_PI4, V_0_1, 0, 0, 0, 0),
	};
	unsigned i;
	int k;

	printf("== fprem / fprem1 (C0 C3 C1 = quotient bits 2 1 0)\n");
	for (k = 0; k < 2; k++) {
		for (i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
			struct fsave s;
			int n = (k ? do_fprem1 : do_fprem)(&in[i], &s);

			printf("%s a=", k ? "fprem1" : "fprem");
			print_x80(&in[i].a);
			printf(" b=");
			print_x80(&in[i].b);
			printf(": %d rounds, ", n);
			print_state(&s, CALL);
		}
	}
}

/* ---- compares ------------------------------------------------------------ */
DEF_BIN(c_fcom, "fcom %%st(1)")
DEF_BIN(c_fcomp, "fcomp %%st(1)")
DEF_BIN(c_fcompp, "fcompp")
DEF_BIN(c_fucom, "fucom %%st(1)")
DEF_BIN(c_fucomp, "fucomp %%st(1)")
DEF_BIN(c_fucompp, "fucompp")
DEF_BIN(c_fcoms, "fcoms %[f32]")
DEF_BIN(c_fcompl, "fcompl %[f64]")
DEF_BIN(c_ficoms, "ficoms %[i16]")
DEF_BIN(c_ficompl, "ficompl %[i32]")

/* FCOMI family: EFLAGS result; returns flags, state in out */
#define DEF_COMI(name, text)							\
static uint32_t name(const struct binin *in, struct fsave *out)		\
{										\
	uint32_t fl;								\
	__asm__ volatile("fninit\n\tfldt %[b]\n\tfldt %[a]\n\t"		\
			 "pushl %[pre]\n\tpopfl\n\t"				\
			 text "\n\t"						\
			 "pushfl\n\tpopl %[fl]\n\t"				\
			 "fnsave %[s]"						\
			 : [s] "=m" (*out), [fl] "=r" (fl)			\
			 : [a] "m" (in->a), [b] "m" (in->b), [pre] "r" (0x2 | FL_ARITH) \
			 : "cc", "memory");					\
	return fl;								\
}
DEF_COMI(c_fcomi, "fcomi %%st(1), %%st")
DEF_COMI(c_fcomip, "fcomip %%st(1), %%st")
DEF_COMI(c_fucomi, "fucomi %%st(1), %%st")
DEF_COMI(c_fucomip, "fucomip %%st(1), %%st")

static void test_compare(void)
{
	static const struct binop ops[] = {
		{ "fcom st1", c_fcom, CALL }, { "fcomp st1", c_fcomp, CALL },
		{ "fcompp", c_fcompp, CALL }, { "fucom st1", c_fucom, CALL },
		{ "fucomp st1", c_fucomp, CALL }, { "fucompp", c_fucompp, CALL },
		{ "fcoms m32", c_fcoms, CALL }, { "fcompl m64", c_fcompl, CALL },
		{ "ficoms m16", c_ficoms, CALL }, { "ficompl m32", c_ficompl, CALL },
	};
	static const struct {
		const char *name;
		uint32_t (*fn)(const struct binin *, struct fsave *);
	} comi[] = {
		{ "fcomi", c_fcomi }, { "fcomip", c_fcomip },
		{ "fucomi", c_fucomi }, { "fucomip", c_fucomip },
	};
	static const struct binin in[] = {
		PAIR(V_ONE, V_TWO, 40000000, 4000000000000000, 2, 2),
		PAIR(V_TWO, V_ONE, 3f800000, 3ff0000000000000, 1, 1),
		PAIR(V_THREE, V_THREE, 40400000, 4008000000000000, 3, 3),
		PAIR(V_NZERO, V_ZERO, 00000000, 0000000000000000, 0, 0),
		PAIR(V_NINF, V_MAX, ff800000, fff0000000000000, -32768, -2147483647 - 1),
		PAIR(V_QNAN, V_ONE, 7fc00000, 7ff8000000000000, 1, 1),
		PAIR(V_ONE, V_SNAN, 7f800001, 7ff0000000000001, 1, 1),
		PAIR(V_DENORM, V_ZERO, 00000001, 0000000000000001, 0, 0),
		PAIR(V_THIRD, V_0_1, 3eaaaaab, 3fd5555555555555, 0, 0),
	};
	unsigned o, i;

	printf("== compares (C3 C2 C0: > 000, < 001, = 100, unordered 111)\n");
	for (o = 0; o < sizeof(ops) / sizeof(ops[0]); o++) {
		for (i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
			struct fsave s;

			ops[o].fn(&in[i], CW_RN, &s);
			printf("%s #%u: ", ops[o].name, i);
			print_state(&s, ops[o].cmask);
		}
	}
	printf("== fcomi family (ZF PF CF; C0 C2 C3 unchanged)\n");
	for (o = 0; o < 4; o++) {
		for (i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
			struct fsave s;
			uint32_t fl = comi[o].fn(&in[i], &s);

			printf("%s #%u: %s ", comi[o].name, i, flagstr(fl, FL_ZF | FL_PF | FL_CF));
			print_state(&s, CALL);
		}
	}
	printf("(inputs:");
	for (i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
		printf(" #%u ", i);
		print_x80(&in[i].a);
		printf(" vs ");
		print_x80(&in[i].b);
		printf(" m32=%08x m64=%016llx i16=%d i32=%d;", in[i].f32,
		       (unsigned long long)in[i].f64, in[i].i16, in[i].i32);
	}
	printf(")\n");
}

/* ---- fcmov ------------------------------------------------------------------ */
#define DEF_FCMOV(name, text)							\
static void name(uint32_t eflags, struct fsave *out)				\
{										\
	__asm__ volatile("fninit\n\tfld1\n\tfldz\n\t"				\
			 "pushl %[f]\n\tpopfl\n\t"				\
			 text "\n\tfnsave %[s]"					\
			 : [s] "=m" (*out) : [f] "r" (eflags) : "cc", "memory"); \
}
DEF_FCMOV(fc_b, "fcmovb %%st(1), %%st")
DEF_FCMOV(fc_e, "fcmove %%st(1), %%st")
DEF_FCMOV(fc_be, "fcmovbe %%st(1), %%st")
DEF_FCMOV(fc_u, "fcmovu %%st(1), %%st")
DEF_FCMOV(fc_nb, "fcmovnb %%st(1), %%st")
DEF_FCMOV(fc_ne, "fcmovne %%st(1), %%st")
DEF_FCMOV(fc_nbe, "fcmovnbe %%st(1), %%st")
DEF_FCMOV(fc_nu, "fcmovnu %%st(1), %%st")

static void test_fcmov(void)
{
	static const struct {
		const char *name;
		void (*fn)(uint32_t, struct fsave *);
	} t[] = {
		{ "fcmovb", fc_b }, { "fcmove", fc_e }, { "fcmovbe", fc_be }, { "fcmovu", fc_u },
		{ "fcmovnb", fc_nb }, { "fcmovne", fc_ne }, { "fcmovnbe", fc_nbe }, { "fcmovnu", fc_nu },
	};
	static const uint32_t fl[] = { 2, 2 | FL_CF, 2 | FL_ZF, 2 | FL_PF, 2 | FL_CF | FL_ZF | FL_PF };
	unsigned i, j;

	printf("== fcmov (st0=0, st1=1: st0 becomes 1 when the condition holds)\n");
	for (i = 0; i < 8; i++) {
		for (j = 0; j < sizeof(fl) / 4; j++) {
			struct fsave s;

			t[i].fn(fl[j], &s);
			printf("%s %s: st0 %s\n", t[i].name, flagstr(fl[j], FL_CF | FL_ZF | FL_PF),
			       s.st[0].se == 0x3fff ? "moved" : "kept");
		}
	}
}

/* ---- loads and constants ------------------------------------------------ */
#define DEF_LOAD(name, text, T)							\
static void name(const T *m, uint16_t cw, struct fsave *out)			\
{										\
	__asm__ volatile("fninit\n\tfldcw %[cw]\n\t" text " %[m]\n\tfnsave %[s]" \
			 : [s] "=m" (*out) : [m] "m" (*m), [cw] "m" (cw) : "memory"); \
}
DEF_LOAD(ld_m32, "flds", uint32_t)
DEF_LOAD(ld_m64, "fldl", uint64_t)
DEF_LOAD(ld_m80, "fldt", struct x80)
DEF_LOAD(ld_i16, "filds", int16_t)
DEF_LOAD(ld_i32, "fildl", int32_t)
DEF_LOAD(ld_i64, "fildll", int64_t)

#define DEF_CONST(name, insn)							\
static void name(uint16_t cw, struct fsave *out)				\
{										\
	__asm__ volatile("fninit\n\tfldcw %[cw]\n\t" insn "\n\tfnsave %[s]"	\
			 : [s] "=m" (*out) : [cw] "m" (cw) : "memory");		\
}
DEF_CONST(k_fld1, "fld1")
DEF_CONST(k_fldz, "fldz")
DEF_CONST(k_fldpi, "fldpi")
DEF_CONST(k_fldl2e, "fldl2e")
DEF_CONST(k_fldl2t, "fldl2t")
DEF_CONST(k_fldlg2, "fldlg2")
DEF_CONST(k_fldln2, "fldln2")

static void test_loads(void)
{
	static const uint32_t f32[] = { 0x3fc00000, 0x80000000, 0x00000001, 0x007fffff,
					0x7f7fffff, 0x7f800000, 0xff800000, 0x7fc00000,
					0x7f800001, 0xbf800000, 0x3eaaaaab };
	static const uint64_t f64[] = { 0x3ff8000000000000ull, 0x8000000000000000ull,
					0x0000000000000001ull, 0x000fffffffffffffull,
					0x7fefffffffffffffull, 0x7ff0000000000000ull,
					0x7ff8000000000000ull, 0x7ff0000000000001ull,
					0xc00921fb54442d18ull };
	static const struct x80 *const f80[] = { &V_ONE, &V_DENORM, &V_PSEUDODEN,
						 &V_UNNORMAL, &V_SNAN, &V_MAX };
	static const int16_t i16[] = { 0, 1, -1, 32767, -32768, 1234 };
	static const int32_t i32[] = { 0, -1, 2147483647, -2147483647 - 1, 100000 };
	static const int64_t i64[] = { 0, -1, 0x7fffffffffffffffll, -0x7fffffffffffffffll - 1,
				       0x0123456789abcdefll, 9007199254740993ll };
	static const struct {
		const char *name;
		void (*fn)(uint16_t, struct fsave *);
	} k[] = {
		{ "fld1", k_fld1 }, { "fldz", k_fldz }, { "fldpi", k_fldpi }, { "fldl2e", k_fldl2e },
		{ "fldl2t", k_fldl2t }, { "fldlg2", k_fldlg2 }, { "fldln2", k_fldln2 },
	};
	struct fsave s;
	unsigned i;
	int r;

	printf("== constants (rounded per RC)\n");
	for (i = 0; i < sizeof(k) / sizeof(k[0]); i++) {
		for (r = 0; r < 4; r++) {
			k[i].fn(rc_cw[r], &s);
			printf("%s %s: ", k[i].name, rc_name[r]);
			print_state(&s, C1);
		}
	}
	printf("== loads\n");
	for (i = 0; i < sizeof(f32) / 4; i++) {
		ld_m32(&f32[i], CW_RN, &s);
		printf("flds %08x: ", f32[i]);
		print_state(&s, C1);
	}
	for (i = 0; i < sizeof(f64) / 8; i++) {
		ld_m64(&f64[i], CW_RN, &s);
		printf("fldl %016llx: ", (unsigned long long)f64[i]);
		print_state(&s, C1);
	}
	for (i = 0; i < sizeof(f80) / sizeof(f80[0]); i++) {
		ld_m80(f80[i], CW_RN, &s);
		printf("fldt ");
		print_x80(f80[i]);
		printf(": ");
		print_state(&s, C1);
	}
	for (i = 0; i < sizeof(i16) / 2; i++) {
		ld_i16(&i16[i], CW_RN, &s);
		printf("filds %d: ", i16[i]);
		print_state(&s, C1);
	}
	for (i = 0; i < sizeof(i32) / 4; i++) {
		ld_i32(&i32[i], CW_RN, &s);
		printf("fildl %d: ", i32[i]);
		print_state(&s, C1);
	}
	for (i = 0; i < sizeof(i64) / 8; i++) {
		ld_i64(&i64[i], CW_RN, &s);
		printf("fildll %lld: ", i64[i]);
		print_state(&s, C1);
	}
}

/* ---- stores --------------------------------------------------------------- */
struct stout {
	uint32_t f32;
	uint64_t f64;
	struct x80 f80;
	int16_t i16;
	int32_t i32;
	int64_t i64;
	uint16_t sw;
};

#define DEF_STORE(name, text, field)						\
static void name(const struct x80 *a, uint16_t cw, struct stout *o)		\
{										\
	__asm__ volatile("fninit\n\tfldcw %[cw]\n\tfldt %[a]\n\tfnclex\n\t"	\
			 text " %[m]\n\tfnstsw %[sw]\n\tfninit"			\
			 : [m] "=m" (o->field), [sw] "=m" (o->sw)		\
			 : [a] "m" (*a), [cw] "m" (cw) : "memory");		\
}
DEF_STORE(st_m32, "fsts", f32)
DEF_STORE(st_m64, "fstpl", f64)
DEF_STORE(st_m80, "fstpt", f80)
DEF_STORE(st_i16, "fists", i16)
DEF_STORE(st_i32, "fistpl", i32)
DEF_STORE(st_i64, "fistpll", i64)
DEF_STORE(st_i32nopop, "fistl", i32)
DEF_STORE(st_m32pop, "fstps", f32)
DEF_STORE(st_m64nopop, "fstl", f64)
DEF_STORE(st_i16pop, "fistps", i16)

static void test_stores(void)
{
	static const struct x80 *const vals[] = {
		&V_THIRD, &V_NTHIRD, &V_2_5, &V_N2_5, &V_3_5, &V_HALF, &V_N1_5, &V_32767_5,
		&V_N32768_4, &V_2P31M0_5, &V_1E10, &V_1E19, &V_2P63, &V_2P64M1, &V_MAX,
		&V_MINNORM, &V_DENORM, &V_NZERO, &V_INF, &V_QNAN, &V_SNAN, &V_0_1, &V_123456789,
	};
	unsigned i;
	int r;

	printf("== stores (m32 m64 m80 / i16 i32 i64 i32 / m32 m64 i16, with and without pop)\n");
	for (i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		for (r = 0; r < 4; r++) {
			struct stout o;

			memset(&o, 0x5a, sizeof(o));
			printf("%s ", rc_name[r]);
			print_x80(vals[i]);
			printf(":\n");
			st_m32(vals[i], rc_cw[r], &o);
			printf("  fsts %08x ", o.f32);
			print_sw(o.sw, C1);
			st_m64(vals[i], rc_cw[r], &o);
			printf("  fstpl %016llx ", (unsigned long long)o.f64);
			print_sw(o.sw, C1);
			st_m80(vals[i], rc_cw[r], &o);
			printf("  fstpt ");
			print_x80(&o.f80);
			printf(" ");
			print_sw(o.sw, C1);
			printf("\n");
			st_i16(vals[i], rc_cw[r], &o);
			printf("  fists %d ", o.i16);
			print_sw(o.sw, C1);
			st_i32(vals[i], rc_cw[r], &o);
			printf("  fistpl %d ", o.i32);
			print_sw(o.sw, C1);
			st_i64(vals[i], rc_cw[r], &o);
			printf("  fistpll %lld ", o.i64);
			print_sw(o.sw, C1);
			st_i32nopop(vals[i], rc_cw[r], &o);
			printf("  fistl %d ", o.i32);
			print_sw(o.sw, C1);
			printf("\n");
			st_m32pop(vals[i], rc_cw[r], &o);
			printf("  fstps %08x ", o.f32);
			print_sw(o.sw, C1);
			st_m64nopop(vals[i], rc_cw[r], &o);
			printf("  fstl %016llx ", (unsigned long long)o.f64);
			print_sw(o.sw, C1);
			st_i16pop(vals[i], rc_cw[r], &o);
			printf("  fistps %d ", o.i16);
			print_sw(o.sw, C1);
			printf("\n");
		}
	}
}

/* ---- register stack manipulation --------------------------------------- */
#define DEF_STACK(name, text)							\
static void name(struct fsave *out)						\
{										\
	__asm__ volatile("fninit\n\tfld1\n\tfldl2t\n\tfldpi\n\tfldz\n\t"	\
			 text "\n\tfnsave %[s]"					\
			 : [s] "=m" (*out) : : "memory");			\
}
DEF_STACK(sk_none, "fnop")
DEF_STACK(sk_fxch, "fxch")
DEF_STACK(sk_fxch2, "fxch %%st(2)")
DEF_STACK(sk_ffree, "ffree %%st(1)")
DEF_STACK(sk_ffree0, "ffree %%st(0)")
DEF_STACK(sk_fincstp, "fincstp")
DEF_STACK(sk_fdecstp, "fdecstp")
DEF_STACK(sk_fld_st2, "fld %%st(2)")
DEF_STACK(sk_fst_st3, "fst %%st(3)")
DEF_STACK(sk_fstp_st1, "fstp %%st(1)")
DEF_STACK(sk_fstp_st0, "fstp %%st(0)")
DEF_STACK(sk_overflow, "fld1\n\tfld1\n\tfld1\n\tfld1\n\tfldz")	/* 9th push */
DEF_STACK(sk_underflow, "ffree %%st(1)\n\tfadd %%st(1), %%st")
DEF_STACK(sk_underflow2, "fstp %%st(0)\n\tfstp %%st(0)\n\tfstp %%st(0)\n\tfstp %%st(0)\n\tfchs")
DEF_STACK(sk_fxch_empty, "ffree %%st(2)\n\tfxch %%st(2)")
DEF_STACK(sk_fninit, "fninit")
DEF_STACK(sk_finit, "finit")
DEF_STACK(sk_fdecstp_fld, "fdecstp\n\tfdecstp\n\tfdecstp\n\tfdecstp\n\tfld1")

static void test_stack(void)
{
	static const struct {
		const char *name;
		void (*fn)(struct fsave *);
		unsigned cmask;
	} t[] = {
		{ "(1 l2t pi 0 loaded)", sk_none, C1 }, { "fxch", sk_fxch, C1 },
		{ "fxch st2", sk_fxch2, C1 }, { "ffree st1", sk_ffree, CNONE },
		{ "ffree st0", sk_ffree0, CNONE }, { "fincstp", sk_fincstp, C1 },
		{ "fdecstp", sk_fdecstp, C1 }, { "fld st2", sk_fld_st2, C1 },
		{ "fst st3", sk_fst_st3, C1 }, { "fstp st1", sk_fstp_st1, C1 },
		{ "fstp st0", sk_fstp_st0, C1 }, { "overflow (9 pushes)", sk_overflow, C1 },
		{ "underflow (fadd with empty st1)", sk_underflow, C1 },
		{ "underflow (fchs on empty)", sk_underflow2, C1 },
		{ "fxch with empty st2", sk_fxch_empty, C1 },
		{ "fninit", sk_fninit, CALL }, { "finit", sk_finit, CALL },
		{ "fdecstp x4 then fld1 onto a full register", sk_fdecstp_fld, C1 },
	};
	unsigned i;

	printf("== register stack\n");
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct fsave s;

		t[i].fn(&s);
		printf("%s: cw %04x tw %04x ", t[i].name, s.cw, s.tw);
		print_state(&s, t[i].cmask);
	}
}

/* ---- BCD ------------------------------------------------------------------ */
static void test_bcd(void)
{
	static const uint8_t bcd_in[][10] = {
		{ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x00 },
		{ 0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0x00 },
		{ 0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0x80 },
		{ 0x78, 0x56, 0x34, 0x12, 0x90, 0x78, 0x56, 0x34, 0x12, 0x00 },
		{ 0x99, 0x99, 0x99, 0x99, 0x99, 0x99, 0x99, 0x99, 0x99, 0x80 },
		{ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x80 },
	};
	static const struct x80 *const vals[] = {
		&V_ZERO, &V_NZERO, &V_1_5, &V_2_5, &V_N123_5, &V_123456789, &V_1E17, &V_1E18,
		&V_INF, &V_QNAN, &V_THIRD,
	};
	unsigned i;
	int r;

	printf("== fbld\n");
	for (i = 0; i < sizeof(bcd_in) / sizeof(bcd_in[0]); i++) {
		struct fsave s;

		__asm__ volatile("fninit\n\tfbld %[m]\n\tfnsave %[s]"
				 : [s] "=m" (s) : [m] "m" (bcd_in[i]) : "memory");
		printf("fbld %s: ", hexle(bcd_in[i], 10));
		print_state(&s, C1);
	}
	printf("== fbstp\n");
	for (i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		for (r = 0; r < 4; r++) {
			uint8_t out[10];
			uint16_t sw, cw = rc_cw[r];

			memset(out, 0x5a, sizeof(out));
			__asm__ volatile("fninit\n\tfldcw %[cw]\n\tfldt %[a]\n\tfbstp %[m]\n\t"
					 "fnstsw %[sw]"
					 : [m] "=m" (out), [sw] "=m" (sw)
					 : [a] "m" (*vals[i]), [cw] "m" (cw) : "memory");
			printf("fbstp %s ", rc_name[r]);
			print_x80(vals[i]);
			printf(": %s ", hexle(out, 10));
			print_sw(sw, C1);
			printf("\n");
		}
	}
}

/* ---- control word, status word, environment, save/restore --------------- */
static void test_control(void)
{
	static const uint16_t cws[] = { 0x037f, 0x0000, 0x0f3f, 0x0c7f, 0x027a, 0x003f };
	uint8_t env[28];
	struct fsave s, s2;
	uint16_t cw, sw_ax, sw_m, sw_w;
	unsigned i;

	printf("== fldcw / fnstcw (bits 0-5, 8-11)\n");
	for (i = 0; i < sizeof(cws) / 2; i++) {
		__asm__ volatile("fninit\n\tfldcw %[in]\n\tfnstcw %[out]\n\tfninit"
				 : [out] "=m" (cw) : [in] "m" (cws[i]) : "memory");
		printf("fldcw %04x -> fnstcw %04x\n", cws[i], cw & 0x0f3f);
	}

	printf("== fnstsw forms\n");
	__asm__ volatile("fninit\n\tfld1\n\tfldz\n\tfdivr %%st(1), %%st\n\tfcom %%st(1)\n\t"
			 "fnstsw %%ax\n\tfnstsw %[m]\n\tfstsw %[w]\n\tfninit"
			 : "=a" (sw_ax), [m] "=m" (sw_m), [w] "=m" (sw_w) : : "memory");
	printf("fnstsw ax == fnstsw m16 == fstsw m16: %s; ", sw_ax == sw_m && sw_m == sw_w ? "yes" : "no");
	print_sw(sw_ax, CALL);
	printf("\n");

	printf("== fnstenv / fldenv\n");
	__asm__ volatile("fninit\n\tfnstenv %[e]" : [e] "=m" (env) : : "memory");
	printf("after fninit: cw %04x sw %04x tw %04x\n", *(uint16_t *)&env[0],
	       *(uint16_t *)&env[4], *(uint16_t *)&env[8]);
	__asm__ volatile("fninit\n\tfld1\n\tfldz\n\tfldpi\n\tfnstenv %[e]\n\tfninit"
			 : [e] "=m" (env) : : "memory");
	printf("three loaded: cw %04x sw %04x tw %04x\n", *(uint16_t *)&env[0],
	       *(uint16_t *)&env[4], *(uint16_t *)&env[8]);
	/* fnstenv masks all exceptions afterwards; fldenv brings the old CW back */
	__asm__ volatile("fninit\n\tfldcw %[cw]\n\tfnstenv %[e]\n\tfnstcw %[c1]\n\t"
			 "fldenv %[e]\n\tfnstcw %[c2]\n\tfninit"
			 : [e] "+m" (env), [c1] "=m" (sw_m), [c2] "=m" (sw_w)
			 : [cw] "m" (cws[4]) : "memory");
	printf("fnstenv with cw %04x: cw after %04x, after fldenv %04x\n", cws[4],
	       sw_m & 0x0f3f, sw_w & 0x0f3f);
	/* fldenv with TOP=5 and tags all empty but st0 */
	memset(env, 0, sizeof(env));
	*(uint16_t *)&env[0] = 0x037f;
	*(uint16_t *)&env[4] = 5 << 11;
	*(uint16_t *)&env[8] = 0xffff & ~(3u << 10);	/* physical 5 valid */
	/* fninit empties the tags but keeps register contents: put l2t in
	 * physical register 5 first (third push from TOP=0) */
	__asm__ volatile("fninit\n\tfld1\n\tfldz\n\tfldl2t\n\tfninit\n\t"
			 "fldenv %[e]\n\tfnsave %[s]" : [s] "=m" (s) : [e] "m" (env) : "memory");
	printf("fldenv TOP=5 tag5=valid (holding l2t): ");
	print_state(&s, CALL);

	printf("== fnsave / frstor\n");
	__asm__ volatile("fninit\n\tfldcw %[cw]\n\tfld1\n\tfldl2e\n\tfldpi\n\t"
			 "fnsave %[s]\n\t"
			 "fld1\n\tfld1\n\t"		/* state after fnsave is fninit's */
			 "frstor %[s]\n\t"
			 "fdiv %%st(2), %%st\n\t"	/* pi / 1, RC from restored CW */
			 "fdivr %%st(1), %%st\n\t"
			 "fnsave %[s2]"
			 : [s] "+m" (s), [s2] "=m" (s2) : [cw] "m" (cws[3]) : "memory");
	printf("saved: cw %04x ", s.cw);
	print_state(&s, CALL);
	printf("after frstor, two divisions: cw %04x ", s2.cw);
	print_state(&s2, C1);
	/* edit a saved register image, then restore it */
	s.st[1] = V_TEN;
	s.cw = CW_RU;
	__asm__ volatile("frstor %[s]\n\tfmul %%st(1), %%st\n\tfnsave %[s2]"
			 : [s2] "=m" (s2) : [s] "m" (s) : "memory");
	printf("edited image (st1=10, RU), fmul: cw %04x ", s2.cw);
	print_state(&s2, C1);
}

/* ---- exceptions (all masked: flags only) -------------------------------- */
static void test_exceptions(void)
{
	static const struct {
		const char *name;
		bin_fn fn;
		struct binin in;
	} t[] = {
		{ "sqrt-free invalid: inf - inf", sub_st1_st, PAIR(V_INF, V_INF, 0, 0, 0, 0) },
		{ "zero divide: 1 / 0", div_st1_st, PAIR(V_ONE, V_ZERO, 0, 0, 0, 0) },
		{ "overflow: max * 2", mul_st1_st, PAIR(V_MAX, V_TWO, 0, 0, 0, 0) },
		{ "underflow: minnorm * 0.1", mul_st1_st, PAIR(V_MINNORM, V_0_1, 0, 0, 0, 0) },
		{ "exact underflow: minnorm * 0.5", mul_st1_st, PAIR(V_MINNORM, V_HALF, 0, 0, 0, 0) },
		{ "precision: 1 / 3", div_st1_st, PAIR(V_ONE, V_THREE, 0, 0, 0, 0) },
		{ "denormal operand: denorm + 1", add_st1_st, PAIR(V_DENORM, V_ONE, 0, 0, 0, 0) },
		{ "denormal m32 operand", add_m32, PAIR(V_ONE, V_ONE, 00000001, 0, 0, 0) },
		{ "snan operand", add_st1_st, PAIR(V_SNAN, V_ONE, 0, 0, 0, 0) },
		{ "qnan operand (no exception)", add_st1_st, PAIR(V_QNAN, V_ONE, 0, 0, 0, 0) },
		{ "two nans: larger significand wins", add_st1_st, PAIR(V_QNAN, V_NQNAN, 0, 0, 0, 0) },
		{ "0 * inf", mul_st1_st, PAIR(V_ZERO, V_INF, 0, 0, 0, 0) },
		{ "unnormal operand", add_st1_st, PAIR(V_UNNORMAL, V_ONE, 0, 0, 0, 0) },
		{ "pseudo-denormal operand", add_st1_st, PAIR(V_PSEUDODEN, V_ONE, 0, 0, 0, 0) },
	};
	unsigned i;

	printf("== exceptions (masked)\n");
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct fsave s;

		t[i].fn(&t[i].in, CW_RN, &s);
		printf("%s: ", t[i].name);
		print_state(&s, C1);
	}
	/* sticky flags accumulate until fnclex */
	{
		uint16_t sw1, sw2;

		__asm__ volatile("fninit\n\tfld1\n\tfldz\n\tfdivr %%st(1), %%st\n\t"
				 "fsqrt\n\tfchs\n\tfsqrt\n\tfnstsw %[a]\n\tfnclex\n\tfnstsw %[b]\n\tfninit"
				 : [a] "=m" (sw1), [b] "=m" (sw2) : : "memory");
		printf("sticky: ");
		print_sw(sw1, CNONE);
		printf(" after fnclex: ");
		print_sw(sw2, CNONE);
		printf("\n");
	}
}

/* ---- transcendental --------------------------------------------------------- */
struct tres {
	uint64_t r0, r1;
	uint16_t sw;
};

#define DEF_TRANS(name, text)							\
static void name(const struct x80 *a, const struct x80 *b, struct tres *o)	\
{										\
	__asm__ volatile("fninit\n\tfldt %[b]\n\tfldt %[a]\n\t"			\
			 text "\n\tfnstsw %[sw]\n\t"				\
			 "fstpl %[r0]\n\tfstpl %[r1]\n\tfninit"			\
			 : [r0] "=m" (o->r0), [r1] "=m" (o->r1), [sw] "=m" (o->sw) \
			 : [a] "m" (*a), [b] "m" (*b) : "memory");		\
}
DEF_TRANS(t_fsin, "fsin")
DEF_TRANS(t_fcos, "fcos")
DEF_TRANS(t_fptan, "fptan")
DEF_TRANS(t_fsincos, "fsincos")
DEF_TRANS(t_f2xm1, "f2xm1")
DEF_TRANS(t_fyl2x, "fyl2x")
DEF_TRANS(t_fyl2xp1, "fyl2xp1")
DEF_TRANS(t_fpatan, "fpatan")

static void test_trans(void)
{
	static const struct x80 V_N0_3 = X(bffd, 9999999999999800);
	static const struct x80 V_1E_5 = X(3fee, a7c5ac471b478800);
	static const struct x80 V_N0_1 = X(bffb, cccccccccccccccd);
	static const struct x80 V_0_25 = X(3ffd, 8000000000000000);
	static const struct x80 V_N0_25 = X(bffd, 8000000000000000);
	static const struct x80 V_NTWO = X(c000, 8000000000000000);
	static const struct x80 *const trig[] = {
		&V_ZERO, &V_NZERO, &V_HALF, &V_ONE, &V_NONE, &V_PI4, &V_THREE, &V_100,
		&V_1E10, &V_2P63, &V_INF, &V_QNAN, &V_DENORM,
	};
	static const struct x80 *const f2x[] = {
		&V_ZERO, &V_HALF, &V_NHALF, &V_ONE, &V_NONE, &V_THIRD, &V_N0_3, &V_1E_5,
	};
	static const struct {
		const struct x80 *a, *b;
	} yl2x[] = {
		{ &V_TWO, &V_ONE }, { &V_TEN, &V_ONE }, { &V_HALF, &V_THREE }, { &V_ONE, &V_TEN },
		{ &V_ZERO, &V_ONE }, { &V_NONE, &V_ONE }, { &V_INF, &V_HALF }, { &V_1E10, &V_NONE },
		{ &V_THIRD, &V_0_1 }, { &V_1E_5, &V_ONE }, { &V_N0_3, &V_TWO },
	}, yl2xp1[] = {
		/* fyl2xp1 is only defined for |x| < 1 - sqrt(2)/2 */
		{ &V_0_1, &V_ONE }, { &V_N0_1, &V_THREE }, { &V_1E_5, &V_ONE },
		{ &V_N0_25, &V_TEN }, { &V_ZERO, &V_ONE }, { &V_NZERO, &V_ONE },
		{ &V_0_25, &V_NTWO }, { &V_DENORM, &V_ONE }, { &V_0_1, &V_INF },
	}, atan[] = {
		{ &V_ONE, &V_ONE }, { &V_ONE, &V_NONE }, { &V_NONE, &V_NONE }, { &V_NONE, &V_ONE },
		{ &V_ZERO, &V_ONE }, { &V_ZERO, &V_NZERO }, { &V_NZERO, &V_NZERO },
		{ &V_THREE, &V_0_1 }, { &V_INF, &V_INF }, { &V_TEN, &V_INF },
	};
	static const struct {
		const char *name;
		void (*fn)(const struct x80 *, const struct x80 *, struct tres *);
		int two;	/* leaves two results */
	} one[] = {
		{ "fsin", t_fsin, 0 }, { "fcos", t_fcos, 0 }, { "fptan", t_fptan, 1 },
		{ "fsincos", t_fsincos, 1 },
	};
	/* C2 (argument out of range, fsin/fcos/fptan/fsincos only) plus the
	 * invalid and zero-divide flags */
	const unsigned tmask = 0x0405, tmask_noc2 = 0x0005;
	unsigned i, k;

	printf("== transcendental (results as doubles; status word masked to C2 (trig only), I and Z)\n");
	for (k = 0; k < 4; k++) {
		for (i = 0; i < sizeof(trig) / sizeof(trig[0]); i++) {
			struct tres o;

			one[k].fn(trig[i], &V_TEN, &o);
			printf("%s ", one[k].name);
			print_x80(trig[i]);
			if (one[k].two)
				printf(": st0 %016llx st1 %016llx sw %04x\n", (unsigned long long)o.r0,
				       (unsigned long long)o.r1, o.sw & tmask);
			else
				printf(": %016llx sw %04x\n", (unsigned long long)o.r0, o.sw & tmask);
		}
	}
	for (i = 0; i < sizeof(f2x) / sizeof(f2x[0]); i++) {
		struct tres o;

		t_f2xm1(f2x[i], &V_TEN, &o);
		printf("f2xm1 ");
		print_x80(f2x[i]);
		printf(": %016llx sw %04x\n", (unsigned long long)o.r0, o.sw & tmask_noc2);
	}
	for (i = 0; i < sizeof(yl2x) / sizeof(yl2x[0]); i++) {
		struct tres o;

		t_fyl2x(yl2x[i].a, yl2x[i].b, &o);
		printf("fyl2x x=");
		print_x80(yl2x[i].a);
		printf(" y=");
		print_x80(yl2x[i].b);
		printf(": %016llx sw %04x\n", (unsigned long long)o.r0, o.sw & tmask_noc2);
	}
	for (i = 0; i < sizeof(yl2xp1) / sizeof(yl2xp1[0]); i++) {
		struct tres o;

		t_fyl2xp1(yl2xp1[i].a, yl2xp1[i].b, &o);
		printf("fyl2xp1 x=");
		print_x80(yl2xp1[i].a);
		printf(" y=");
		print_x80(yl2xp1[i].b);
		printf(": %016llx sw %04x\n", (unsigned long long)o.r0, o.sw & tmask_noc2);
	}
	for (i = 0; i < sizeof(atan) / sizeof(atan[0]); i++) {
		struct tres o;

		/* fpatan: atan(ST1 / ST0); a is x (ST0), b is y (ST1) */
		t_fpatan(atan[i].a, atan[i].b, &o);
		printf("fpatan x=");
		print_x80(atan[i].a);
		printf(" y=");
		print_x80(atan[i].b);
		printf(": %016llx sw %04x\n", (unsigned long long)o.r0, o.sw & tmask_noc2);
	}
}

int main(void)
{
	test_loads();
	test_stores();
	test_arith();
	test_rounding();
	test_unary();
	test_frndint();
	test_fxam();
	test_fscale();
	test_fprem();
	test_compare();
	test_fcmov();
	test_stack();
	test_bcd();
	test_control();
	test_exceptions();
	test_trans();
	return 0;
}
