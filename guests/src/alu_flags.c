/*
 * alu_flags.c - results and arithmetic flags (CF PF AF ZF SF OF) of the
 * basic integer ALU instructions: add adc sub sbb cmp and or xor test
 * (binary) and inc dec neg not (unary), for 8-, 16- and 32-bit operands,
 * over tables of boundary and arbitrary values.  A second part runs the
 * group-1 instructions through their different encodings (short
 * accumulator forms, sign-extended imm8, imm16/32, memory operands, high
 * byte registers) so the decoder's operand handling is covered too.
 *
 * EFLAGS is set before each instruction with popf and read back with
 * pushf.  The preset alternates between "all clear" and "all set" so a
 * flag that is wrongly left unmodified shows up.  Only flags the Intel SDM
 * defines for the instruction are printed ('-' marks an undefined one):
 * AND/OR/XOR/TEST leave AF undefined; everything else here defines all six
 * (INC/DEC leave CF unchanged, NOT changes no flag, which is defined too).
 */
#include "rt.h"

typedef uint32_t (*binop_fn)(uint32_t a, uint32_t b, uint32_t fin, uint32_t *fout);
typedef uint32_t (*unop_fn)(uint32_t a, uint32_t fin, uint32_t *fout);

/* "insn b, a" on operands of type T held in registers of class C */
#define DEF_BIN(name, insn, T, C)						\
static uint32_t name(uint32_t a32, uint32_t b32, uint32_t fin, uint32_t *fout)	\
{										\
	T a = (T)a32, b = (T)b32;						\
	uint32_t fl;								\
	__asm__ volatile("pushl %[fin]\n\tpopfl\n\t"				\
			 insn " %[b], %[a]\n\t"					\
			 "pushfl\n\tpopl %[fl]"					\
			 : [a] "+" C (a), [fl] "=&r" (fl)			\
			 : [b] C (b), [fin] "r" (fin) : "cc");			\
	*fout = fl;								\
	return a;								\
}

#define DEF_UN(name, insn, T, C)						\
static uint32_t name(uint32_t a32, uint32_t fin, uint32_t *fout)		\
{										\
	T a = (T)a32;								\
	uint32_t fl;								\
	__asm__ volatile("pushl %[fin]\n\tpopfl\n\t"				\
			 insn " %[a]\n\t"					\
			 "pushfl\n\tpopl %[fl]"					\
			 : [a] "+" C (a), [fl] "=&r" (fl)			\
			 : [fin] "r" (fin) : "cc");				\
	*fout = fl;								\
	return a;								\
}

#define DEF_BIN3(op)					\
	DEF_BIN(op##8, #op "b", uint8_t, "q")		\
	DEF_BIN(op##16, #op "w", uint16_t, "r")		\
	DEF_BIN(op##32, #op "l", uint32_t, "r")
#define DEF_UN3(op)					\
	DEF_UN(op##8, #op "b", uint8_t, "q")		\
	DEF_UN(op##16, #op "w", uint16_t, "r")		\
	DEF_UN(op##32, #op "l", uint32_t, "r")

DEF_BIN3(add) DEF_BIN3(adc) DEF_BIN3(sub) DEF_BIN3(sbb) DEF_BIN3(cmp)
DEF_BIN3(and) DEF_BIN3(or) DEF_BIN3(xor) DEF_BIN3(test)
DEF_UN3(inc) DEF_UN3(dec) DEF_UN3(neg) DEF_UN3(not)

#define ALL FL_ARITH
#define LOGIC (FL_ARITH & ~FL_AF)

static const struct binop {
	const char *name;
	binop_fn fn[3];
	uint32_t defined;
	int carry_in;		/* result depends on CF: run with CF=0 and CF=1 */
} binops[] = {
	{ "add",  { add8, add16, add32 },    ALL,   0 },
	{ "adc",  { adc8, adc16, adc32 },    ALL,   1 },
	{ "sub",  { sub8, sub16, sub32 },    ALL,   0 },
	{ "sbb",  { sbb8, sbb16, sbb32 },    ALL,   1 },
	{ "cmp",  { cmp8, cmp16, cmp32 },    ALL,   0 },
	{ "and",  { and8, and16, and32 },    LOGIC, 0 },
	{ "or",   { or8, or16, or32 },       LOGIC, 0 },
	{ "xor",  { xor8, xor16, xor32 },    LOGIC, 0 },
	{ "test", { test8, test16, test32 }, LOGIC, 0 },
};

static const struct unop {
	const char *name;
	unop_fn fn[3];
} unops[] = {
	{ "inc", { inc8, inc16, inc32 } },
	{ "dec", { dec8, dec16, dec32 } },
	{ "neg", { neg8, neg16, neg32 } },
	{ "not", { not8, not16, not32 } },
};

static const uint32_t vals8[] = {
	0x00, 0x01, 0x02, 0x0f, 0x10, 0x7f, 0x80, 0x81, 0xfe, 0xff, 0x5a, 0xa5,
};
static const uint32_t vals16[] = {
	0x0000, 0x0001, 0x007f, 0x0080, 0x00ff, 0x0100, 0x7fff, 0x8000,
	0x8001, 0xfffe, 0xffff, 0x1234, 0xedcb,
};
static const uint32_t vals32[] = {
	0x00000000, 0x00000001, 0x0000007f, 0x00000080, 0x000000ff, 0x00007fff,
	0x00008000, 0x0000ffff, 0x00010000, 0x7fffffff, 0x80000000, 0x80000001,
	0xfffffffe, 0xffffffff, 0x12345678, 0xdeadbeef,
};

static const struct {
	int bits;
	const uint32_t *v;
	int n;
} sizes[3] = {
	{ 8, vals8, sizeof(vals8) / 4 },
	{ 16, vals16, sizeof(vals16) / 4 },
	{ 32, vals32, sizeof(vals32) / 4 },
};

/* Input flags: alternate between all arithmetic flags clear and all set,
 * optionally forcing CF.  Bit 1 of EFLAGS is reserved and always set. */
static uint32_t preset(int parity, int cf)
{
	uint32_t f = parity ? (FL_ARITH | 2) : 2;

	if (cf == 0)
		f &= ~FL_CF;
	else if (cf == 1)
		f |= FL_CF;
	return f;
}

static void run_binops(void)
{
	unsigned o;
	int s, i, j, c;

	for (o = 0; o < sizeof(binops) / sizeof(binops[0]); o++) {
		const struct binop *op = &binops[o];

		for (s = 0; s < 3; s++) {
			int w = sizes[s].bits / 4;

			printf("== %s%d\n", op->name, sizes[s].bits);
			for (i = 0; i < sizes[s].n; i++) {
				for (j = 0; j < sizes[s].n; j++) {
					for (c = 0; c <= op->carry_in; c++) {
						uint32_t a = sizes[s].v[i], b = sizes[s].v[j];
						uint32_t fin = preset((i + j) & 1, op->carry_in ? c : -1);
						uint32_t fl, r = op->fn[s](a, b, fin, &fl);

						printf("%s%d %0*x,%0*x in=%s -> %0*x %s\n",
						       op->name, sizes[s].bits, w, a, w, b,
						       flagstr(fin, ALL), w, r, flagstr(fl, op->defined));
					}
				}
			}
		}
	}
}

static void run_unops(void)
{
	unsigned o;
	int s, i, p;

	for (o = 0; o < sizeof(unops) / sizeof(unops[0]); o++) {
		const struct unop *op = &unops[o];

		for (s = 0; s < 3; s++) {
			int w = sizes[s].bits / 4;

			printf("== %s%d\n", op->name, sizes[s].bits);
			for (i = 0; i < sizes[s].n; i++) {
				for (p = 0; p < 2; p++) {
					uint32_t a = sizes[s].v[i], fin = preset(p, -1);
					uint32_t fl, r = op->fn[s](a, fin, &fl);

					printf("%s%d %0*x in=%s -> %0*x %s\n", op->name,
					       sizes[s].bits, w, a, flagstr(fin, ALL), w, r,
					       flagstr(fl, ALL));
				}
			}
		}
	}
}

/*
 * Encoding forms.  Each function runs one fixed instruction text on a
 * value; registers are pinned with constraints so the assembler picks the
 * intended encoding (e.g. "addl $imm32, %eax" uses the short 05 opcode,
 * "addl $-3, %ecx" the sign-extended 83 /0 ib form).
 */
typedef uint32_t (*form_fn)(uint32_t a, uint32_t fin, uint32_t *fout);

#define FORM_PRE  "pushl %[fin]\n\tpopfl\n\t"
#define FORM_POST "\n\tpushfl\n\tpopl %[fl]"

#define DEF_FORM_REG(name, T, C, text)						\
static uint32_t name(uint32_t a32, uint32_t fin, uint32_t *fout)		\
{										\
	T a = (T)a32;								\
	uint32_t fl;								\
	__asm__ volatile(FORM_PRE text FORM_POST				\
			 : [a] "+" C (a), [fl] "=&r" (fl)			\
			 : [fin] "r" (fin) : "cc");				\
	*fout = fl;								\
	return a;								\
}

/* memory destination, register source holding a constant */
#define DEF_FORM_MEM(name, T, text, srcval)					\
static uint32_t name(uint32_t a32, uint32_t fin, uint32_t *fout)		\
{										\
	volatile T a = (T)a32;							\
	uint32_t fl, src = (srcval);						\
	__asm__ volatile(FORM_PRE text FORM_POST				\
			 : [m] "+m" (a), [fl] "=&r" (fl)			\
			 : [fin] "r" (fin), [s] "q" (src) : "cc");		\
	*fout = fl;								\
	return a;								\
}

/* register destination, memory source holding a constant */
#define DEF_FORM_LOAD(name, T, C, text, srcval)					\
static uint32_t name(uint32_t a32, uint32_t fin, uint32_t *fout)		\
{										\
	T a = (T)a32;								\
	volatile T src = (T)(srcval);						\
	uint32_t fl;								\
	__asm__ volatile(FORM_PRE text FORM_POST				\
			 : [a] "+" C (a), [fl] "=&r" (fl)			\
			 : [fin] "r" (fin), [m] "m" (src) : "cc");		\
	*fout = fl;								\
	return a;								\
}

/* high-byte register pair: "op %ch-like, %ah-like" inside one register */
#define DEF_FORM_HIGH(name, text)						\
static uint32_t name(uint32_t a32, uint32_t fin, uint32_t *fout)		\
{										\
	uint32_t a = a32, b = 0x5c00, fl;					\
	__asm__ volatile(FORM_PRE text FORM_POST				\
			 : [a] "+Q" (a), [fl] "=&r" (fl)			\
			 : [fin] "r" (fin), [b] "Q" (b) : "cc");		\
	*fout = fl;								\
	return a & 0xffff;							\
}

#define DEF_FORMS(op)								\
DEF_FORM_REG(op##_al_i8, uint8_t, "a", #op "b $0x9c, %b[a]")			\
DEF_FORM_REG(op##_cl_i8, uint8_t, "c", #op "b $0x9c, %b[a]")			\
DEF_FORM_REG(op##_ax_i16, uint16_t, "a", #op "w $0x8f01, %w[a]")		\
DEF_FORM_REG(op##_cx_i16, uint16_t, "c", #op "w $0x8f01, %w[a]")		\
DEF_FORM_REG(op##_cx_s8w, uint16_t, "c", #op "w $-3, %w[a]")			\
DEF_FORM_REG(op##_eax_i32, uint32_t, "a", #op "l $0x87654321, %[a]")		\
DEF_FORM_REG(op##_ecx_i32, uint32_t, "c", #op "l $0x87654321, %[a]")		\
DEF_FORM_REG(op##_ecx_s8, uint32_t, "c", #op "l $-3, %[a]")			\
DEF_FORM_REG(op##_edx_s8p, uint32_t, "d", #op "l $0x7f, %[a]")			\
DEF_FORM_MEM(op##_m8_i8, uint8_t, #op "b $0xa7, %[m]", 0)			\
DEF_FORM_MEM(op##_m16_s8, uint16_t, #op "w $-128, %[m]", 0)			\
DEF_FORM_MEM(op##_m32_i32, uint32_t, #op "l $0x10000001, %[m]", 0)		\
DEF_FORM_MEM(op##_m32_s8, uint32_t, #op "l $-1, %[m]", 0)			\
DEF_FORM_MEM(op##_m8_r8, uint8_t, #op "b %b[s], %[m]", 0x3c)			\
DEF_FORM_MEM(op##_m16_r16, uint16_t, #op "w %w[s], %[m]", 0xc3c3)		\
DEF_FORM_MEM(op##_m32_r32, uint32_t, #op "l %[s], %[m]", 0x7ffffff0)		\
DEF_FORM_LOAD(op##_r8_m8, uint8_t, "q", #op "b %[m], %b[a]", 0x3c)		\
DEF_FORM_LOAD(op##_r16_m16, uint16_t, "r", #op "w %[m], %w[a]", 0xc3c3)		\
DEF_FORM_LOAD(op##_r32_m32, uint32_t, "r", #op "l %[m], %[a]", 0x7ffffff0)	\
DEF_FORM_HIGH(op##_high, #op "b %h[b], %h[a]")					\
static const struct form op##_forms[] = {					\
	{ #op " $0x9c, al", op##_al_i8, 2 },					\
	{ #op " $0x9c, cl", op##_cl_i8, 2 },					\
	{ #op " $0x8f01, ax", op##_ax_i16, 4 },					\
	{ #op " $0x8f01, cx", op##_cx_i16, 4 },					\
	{ #op " $-3(s8), cx", op##_cx_s8w, 4 },					\
	{ #op " $0x87654321, eax", op##_eax_i32, 8 },				\
	{ #op " $0x87654321, ecx", op##_ecx_i32, 8 },				\
	{ #op " $-3(s8), ecx", op##_ecx_s8, 8 },				\
	{ #op " $0x7f(s8), edx", op##_edx_s8p, 8 },				\
	{ #op " $0xa7, m8", op##_m8_i8, 2 },					\
	{ #op " $-128(s8), m16", op##_m16_s8, 4 },				\
	{ #op " $0x10000001, m32", op##_m32_i32, 8 },				\
	{ #op " $-1(s8), m32", op##_m32_s8, 8 },				\
	{ #op " r8(3c), m8", op##_m8_r8, 2 },					\
	{ #op " r16(c3c3), m16", op##_m16_r16, 4 },				\
	{ #op " r32(7ffffff0), m32", op##_m32_r32, 8 },				\
	{ #op " m8(3c), r8", op##_r8_m8, 2 },					\
	{ #op " m16(c3c3), r16", op##_r16_m16, 4 },				\
	{ #op " m32(7ffffff0), r32", op##_r32_m32, 8 },				\
	{ #op " ch-like(5c), ah-like", op##_high, 4 },				\
	{ NULL, NULL, 0 },							\
};

struct form {
	const char *text;
	form_fn fn;
	int width;		/* hex digits of the result */
};

DEF_FORMS(add) DEF_FORMS(or) DEF_FORMS(adc) DEF_FORMS(sbb)
DEF_FORMS(and) DEF_FORMS(sub) DEF_FORMS(xor) DEF_FORMS(cmp)

/* TEST has its own encodings (A8/A9 accumulator, F6/F7 imm, 84/85 r/m) */
DEF_FORM_REG(test_al_i8, uint8_t, "a", "testb $0x81, %b[a]")
DEF_FORM_REG(test_dl_i8, uint8_t, "d", "testb $0x81, %b[a]")
DEF_FORM_REG(test_ax_i16, uint16_t, "a", "testw $0x8001, %w[a]")
DEF_FORM_REG(test_eax_i32, uint32_t, "a", "testl $0x80000001, %[a]")
DEF_FORM_REG(test_esi_i32, uint32_t, "S", "testl $0x80000001, %[a]")
DEF_FORM_MEM(test_m32_r32, uint32_t, "testl %[s], %[m]", 0xf0f0f0f0)
DEF_FORM_MEM(test_m8_i8, uint8_t, "testb $0x18, %[m]", 0)
DEF_FORM_HIGH(test_high, "testb %h[b], %h[a]")
static const struct form test_forms[] = {
	{ "test $0x81, al", test_al_i8, 2 },
	{ "test $0x81, dl", test_dl_i8, 2 },
	{ "test $0x8001, ax", test_ax_i16, 4 },
	{ "test $0x80000001, eax", test_eax_i32, 8 },
	{ "test $0x80000001, esi", test_esi_i32, 8 },
	{ "test r32(f0f0f0f0), m32", test_m32_r32, 8 },
	{ "test $0x18, m8", test_m8_i8, 2 },
	{ "test ch-like(5c), ah-like", test_high, 4 },
	{ NULL, NULL, 0 },
};

static const struct {
	const struct form *forms;
	uint32_t defined;
} form_groups[] = {
	{ add_forms, ALL }, { or_forms, LOGIC }, { adc_forms, ALL },
	{ sbb_forms, ALL }, { and_forms, LOGIC }, { sub_forms, ALL },
	{ xor_forms, LOGIC }, { cmp_forms, ALL }, { test_forms, LOGIC },
};

static void run_forms(void)
{
	static const uint32_t v[] = { 0x00000000, 0x0000007f, 0x00008000, 0x7fffffff,
				      0x80000000, 0xfffffffd, 0x12348765 };
	unsigned g, i;
	const struct form *f;

	printf("== encoding forms\n");
	for (g = 0; g < sizeof(form_groups) / sizeof(form_groups[0]); g++) {
		for (f = form_groups[g].forms; f->text; f++) {
			for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
				int p;

				for (p = 0; p < 2; p++) {
					uint32_t fin = preset((int)(i + p) & 1, p), fl;
					uint32_t r = f->fn(v[i], fin, &fl);

					printf("%s: %08x in=%s -> %0*x %s\n", f->text, v[i],
					       flagstr(fin, ALL), f->width, r,
					       flagstr(fl, form_groups[g].defined));
				}
			}
		}
	}
}

int main(void)
{
	run_binops();
	run_unops();
	run_forms();
	return 0;
}
