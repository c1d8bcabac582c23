/*
 * shifts.c - shift and rotate instructions: shl shr sar rol ror rcl rcr
 * (8/16/32-bit) and shld shrd (16/32-bit), with counts 0 1 2 7 8 15 16 31
 * 32 33 63 in CL (the CPU masks them to 5 bits), plus immediate-count,
 * count-1 and memory-operand encodings.
 *
 * Every case runs twice, with all arithmetic flags clear and all set
 * before the instruction (this also gives RCL/RCR a carry-in of 0 and 1).
 * Flags are printed only where the Intel SDM defines them, with c the
 * masked count:
 *   c == 0: nothing changes, all flags printed (must be preserved).
 *   SHL/SHR/SAR: SF ZF PF from the result; CF = last bit out, undefined
 *     for SHL/SHR when c >= operand size; OF only for c == 1; AF undefined.
 *   ROL/ROR/RCL/RCR: only CF (and OF when c == 1) change; SF ZF AF PF are
 *     preserved and printed.
 *   SHLD/SHRD: like SHL/SHR, but when c > operand size result and flags
 *     are undefined and nothing is printed.
 */
#include "rt.h"

enum { SHL, SHR, SAR, ROL, ROR, RCL, RCR, SHLD, SHRD };
static const char *const opname[] = {
	"shl", "shr", "sar", "rol", "ror", "rcl", "rcr", "shld", "shrd",
};

typedef uint32_t (*sh_fn)(uint32_t a, uint32_t src, uint8_t cnt, uint32_t fin, uint32_t *fout);

#define DEF_SH(name, insn, T, C)						\
static uint32_t name(uint32_t a32, uint32_t src, uint8_t cnt, uint32_t fin, uint32_t *fout) \
{										\
	T a = (T)a32;								\
	uint32_t fl;								\
	(void)src;								\
	__asm__ volatile("pushl %[fin]\n\tpopfl\n\t"				\
			 insn " %%cl, %[a]\n\t"					\
			 "pushfl\n\tpopl %[fl]"					\
			 : [a] "+" C (a), [fl] "=&r" (fl)			\
			 : "c" (cnt), [fin] "r" (fin) : "cc");			\
	*fout = fl;								\
	return a;								\
}
#define DEF_SH3(op)						\
	DEF_SH(op##8, #op "b", uint8_t, "q")			\
	DEF_SH(op##16, #op "w", uint16_t, "r")			\
	DEF_SH(op##32, #op "l", uint32_t, "r")
DEF_SH3(shl) DEF_SH3(shr) DEF_SH3(sar) DEF_SH3(rol) DEF_SH3(ror) DEF_SH3(rcl) DEF_SH3(rcr)

#define DEF_DSH(name, insn, T)							\
static uint32_t name(uint32_t a32, uint32_t src32, uint8_t cnt, uint32_t fin, uint32_t *fout) \
{										\
	T a = (T)a32, src = (T)src32;						\
	uint32_t fl;								\
	__asm__ volatile("pushl %[fin]\n\tpopfl\n\t"				\
			 insn " %%cl, %[s], %[a]\n\t"				\
			 "pushfl\n\tpopl %[fl]"					\
			 : [a] "+r" (a), [fl] "=&r" (fl)			\
			 : [s] "r" (src), "c" (cnt), [fin] "r" (fin) : "cc");	\
	*fout = fl;								\
	return a;								\
}
DEF_DSH(shld16, "shldw", uint16_t)
DEF_DSH(shld32, "shldl", uint32_t)
DEF_DSH(shrd16, "shrdw", uint16_t)
DEF_DSH(shrd32, "shrdl", uint32_t)

static const sh_fn fns[9][3] = {
	{ shl8, shl16, shl32 }, { shr8, shr16, shr32 }, { sar8, sar16, sar32 },
	{ rol8, rol16, rol32 }, { ror8, ror16, ror32 }, { rcl8, rcl16, rcl32 },
	{ rcr8, rcr16, rcr32 }, { NULL, shld16, shld32 }, { NULL, shrd16, shrd32 },
};

#define ALL FL_ARITH
#define RESULT_FL (FL_SF | FL_ZF | FL_PF)

/* Defined-flag mask; returns -1 when the result itself is undefined. */
static int64_t defined_mask(int op, int bits, unsigned count)
{
	unsigned c = count & 31;
	uint32_t m;

	if (c == 0)
		return ALL;
	switch (op) {
	case SHL:
	case SHR:
	case SAR:
		m = RESULT_FL | FL_CF;
		if (op != SAR && c >= (unsigned)bits)
			m &= ~FL_CF;
		break;
	case SHLD:
	case SHRD:
		if (c > (unsigned)bits)
			return -1;
		m = RESULT_FL | FL_CF;
		break;
	default:		/* rotates */
		m = RESULT_FL | FL_AF | FL_CF;
		break;
	}
	if (c == 1)
		m |= FL_OF;
	return m;
}

static const uint32_t vals8[] = { 0x00, 0x01, 0x80, 0x81, 0x5a, 0xff, 0x7f };
static const uint32_t vals16[] = { 0x0000, 0x0001, 0x8000, 0x8001, 0x5aa5, 0xffff, 0x7ffe };
static const uint32_t vals32[] = { 0x00000000, 0x00000001, 0x80000000, 0x80000001,
				   0x5aa5c33c, 0xffffffff, 0x7ffffffe };
static const uint32_t *const vals[3] = { vals8, vals16, vals32 };
#define NV 7
static const uint8_t counts[] = { 0, 1, 2, 7, 8, 15, 16, 31, 32, 33, 63 };

static void run_cl_forms(void)
{
	int op, s, i, p;
	unsigned k;

	for (op = SHL; op <= SHRD; op++) {
		for (s = (op >= SHLD); s < 3; s++) {
			int bits = 8 << s, w = bits / 4;
			/* second source for shld/shrd */
			uint32_t src = s == 1 ? 0xc3a5 : 0x96c3a55a;

			if (op >= SHLD)
				printf("== %s%d (src %0*x)\n", opname[op], bits, w, src);
			else
				printf("== %s%d\n", opname[op], bits);
			for (i = 0; i < NV; i++) {
				for (k = 0; k < sizeof(counts); k++) {
					for (p = 0; p < 2; p++) {
						uint32_t a = vals[s][i], fin = p ? (ALL | 2) : 2, fl, r;
						int64_t m = defined_mask(op, bits, counts[k]);

						r = fns[op][s](a, src, counts[k], fin, &fl);
						printf("%s%d %0*x,%2u in=%s -> ", opname[op], bits, w,
						       a, counts[k], flagstr(fin, ALL));
						if (m < 0)
							printf("(undefined)\n");
						else
							printf("%0*x %s\n", w, r, flagstr(fl, (uint32_t)m));
					}
				}
			}
		}
	}
}

/*
 * Other encodings: D0-D3 (count 1 implicit), C0/C1 (imm8 count, also
 * above 31 to check masking), and memory destinations.
 */
typedef uint32_t (*form_fn)(uint32_t a, uint32_t fin, uint32_t *fout);

#define DEF_FORM_R(name, T, C, text)						\
static uint32_t name(uint32_t a32, uint32_t fin, uint32_t *fout)		\
{										\
	T a = (T)a32;								\
	uint32_t fl;								\
	__asm__ volatile("pushl %[fin]\n\tpopfl\n\t" text "\n\t"		\
			 "pushfl\n\tpopl %[fl]"					\
			 : [a] "+" C (a), [fl] "=&r" (fl)			\
			 : [fin] "r" (fin), [s] "r" (0x1234abcd), "c" (5) : "cc"); \
	*fout = fl;								\
	return a;								\
}
#define DEF_FORM_M(name, T, text)						\
static uint32_t name(uint32_t a32, uint32_t fin, uint32_t *fout)		\
{										\
	volatile T a = (T)a32;							\
	uint32_t fl;								\
	__asm__ volatile("pushl %[fin]\n\tpopfl\n\t" text "\n\t"		\
			 "pushfl\n\tpopl %[fl]"					\
			 : [a] "+m" (a), [fl] "=&r" (fl)			\
			 : [fin] "r" (fin), [s] "r" (0x1234abcd), "c" (5) : "cc"); \
	*fout = fl;								\
	return a;								\
}

#define DEF_FORMS(op)								\
DEF_FORM_R(op##_r8_1, uint8_t, "q", #op "b %b[a]")				\
DEF_FORM_R(op##_r16_1, uint16_t, "r", #op "w %w[a]")				\
DEF_FORM_R(op##_r32_1, uint32_t, "r", #op "l %[a]")				\
DEF_FORM_R(op##_r8_i3, uint8_t, "q", #op "b $3, %b[a]")			\
DEF_FORM_R(op##_r16_i9, uint16_t, "r", #op "w $9, %w[a]")			\
DEF_FORM_R(op##_r32_i13, uint32_t, "r", #op "l $13, %[a]")			\
DEF_FORM_R(op##_r32_i33, uint32_t, "r", #op "l $33, %[a]")			\
DEF_FORM_M(op##_m8_1, uint8_t, #op "b %[a]")					\
DEF_FORM_M(op##_m16_cl, uint16_t, #op "w %%cl, %[a]")				\
DEF_FORM_M(op##_m32_i4, uint32_t, #op "l $4, %[a]")				\
static const struct form op##_forms[] = {					\
	{ #op " r8 (count 1)", op##_r8_1, 8, 1 },				\
	{ #op " r16 (count 1)", op##_r16_1, 16, 1 },				\
	{ #op " r32 (count 1)", op##_r32_1, 32, 1 },				\
	{ #op " $3, r8", op##_r8_i3, 8, 3 },					\
	{ #op " $9, r16", op##_r16_i9, 16, 9 },					\
	{ #op " $13, r32", op##_r32_i13, 32, 13 },				\
	{ #op " $33, r32", op##_r32_i33, 32, 33 },				\
	{ #op " m8 (count 1)", op##_m8_1, 8, 1 },				\
	{ #op " cl=5, m16", op##_m16_cl, 16, 5 },				\
	{ #op " $4, m32", op##_m32_i4, 32, 4 },					\
	{ NULL, NULL, 0, 0 },							\
};

struct form {
	const char *text;
	form_fn fn;
	int bits;
	unsigned count;
};

DEF_FORMS(shl) DEF_FORMS(shr) DEF_FORMS(sar) DEF_FORMS(rol)
DEF_FORMS(ror) DEF_FORMS(rcl) DEF_FORMS(rcr)
/* "sal" is an alias of shl; gas emits the /4 encoding for both */

DEF_FORM_R(shld_r32_i7, uint32_t, "r", "shldl $7, %[s], %[a]")
DEF_FORM_R(shrd_r32_i7, uint32_t, "r", "shrdl $7, %[s], %[a]")
DEF_FORM_R(shld_r16_i1, uint16_t, "r", "shldw $1, %w[s], %w[a]")
DEF_FORM_R(shrd_r16_i3, uint16_t, "r", "shrdw $3, %w[s], %w[a]")
DEF_FORM_M(shld_m32_cl, uint32_t, "shldl %%cl, %[s], %[a]")
DEF_FORM_M(shrd_m32_cl, uint32_t, "shrdl %%cl, %[s], %[a]")
DEF_FORM_M(shld_m16_i12, uint16_t, "shldw $12, %w[s], %[a]")
DEF_FORM_M(shrd_m32_i1, uint32_t, "shrdl $1, %[s], %[a]")
static const struct form dsh_forms[] = {
	{ "shld $7, (1234abcd), r32", shld_r32_i7, 32, 7 },
	{ "shrd $7, (1234abcd), r32", shrd_r32_i7, 32, 7 },
	{ "shld $1, (abcd), r16", shld_r16_i1, 16, 1 },
	{ "shrd $3, (abcd), r16", shrd_r16_i3, 16, 3 },
	{ "shld cl=5, (1234abcd), m32", shld_m32_cl, 32, 5 },
	{ "shrd cl=5, (1234abcd), m32", shrd_m32_cl, 32, 5 },
	{ "shld $12, (abcd), m16", shld_m16_i12, 16, 12 },
	{ "shrd $1, (1234abcd), m32", shrd_m32_i1, 32, 1 },
	{ NULL, NULL, 0, 0 },
};

static const struct {
	int op;
	const struct form *forms;
} groups[] = {
	{ SHL, shl_forms }, { SHR, shr_forms }, { SAR, sar_forms }, { ROL, rol_forms },
	{ ROR, ror_forms }, { RCL, rcl_forms }, { RCR, rcr_forms }, { SHLD, dsh_forms },
};

static void run_other_forms(void)
{
	static const uint32_t v[] = { 0x00000001, 0x80000000, 0xc0000081, 0x7f7f7f7f, 0x00000000 };
	unsigned g, i;
	int p;
	const struct form *f;

	printf("== encoding forms\n");
	for (g = 0; g < sizeof(groups) / sizeof(groups[0]); g++) {
		for (f = groups[g].forms; f->text; f++) {
			int w = f->bits / 4;

			for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
				for (p = 0; p < 2; p++) {
					uint32_t fin = p ? (ALL | 2) : 2, fl, r;
					uint32_t a = f->bits == 32 ? v[i] : v[i] & ((1u << f->bits) - 1);
					int64_t m = defined_mask(groups[g].op, f->bits, f->count);

					r = f->fn(a, fin, &fl);
					printf("%s: %0*x in=%s -> %0*x %s\n", f->text, w, a,
					       flagstr(fin, ALL), w, r, flagstr(fl, (uint32_t)m));
				}
			}
		}
	}
}

int main(void)
{
	run_cl_forms();
	run_other_forms();
	return 0;
}
