/*
 * mmx.c - the original MMX instruction set (Pentium MMX / Pentium II): no
 * SSE and none of the later MMX extensions such as pshufw or pmulhuw.
 *
 * Each packed operation runs on a table of 64-bit operand pairs with
 * register and memory sources; shifts take their count from an
 * immediate, an MMX register and memory, including counts at and beyond
 * the element width.  MOVD/MOVQ cover the moves between general
 * registers, memory and MMX registers.  A last part checks the aliasing
 * of MMX and x87 state: an MMX write marks the whole tag word valid, sets
 * TOP to 0 and the exponent field to all ones; EMMS empties the tags; an
 * x87 value is visible as the MMX register it occupies.
 *
 * The file is compiled for MMX (pragma below) only so that the asm
 * statements may clobber MMX registers; the compiler itself emits no MMX.
 */
#pragma GCC target("mmx")
#include "rt.h"

typedef uint64_t u64;

/* dst op= src, register source */
#define DEF_RR(name, insn)							\
static u64 name(u64 a, u64 b)							\
{										\
	u64 r;									\
	__asm__ volatile("movq %[a], %%mm0\n\tmovq %[b], %%mm1\n\t"		\
			 insn " %%mm1, %%mm0\n\tmovq %%mm0, %[r]\n\temms"	\
			 : [r] "=m" (r) : [a] "m" (a), [b] "m" (b) : "mm0", "mm1"); \
	return r;								\
}
/* dst op= src, memory source (other registers, to vary the encoding) */
#define DEF_RM(name, insn)							\
static u64 name(u64 a, u64 b)							\
{										\
	u64 r;									\
	__asm__ volatile("movq %[a], %%mm5\n\t"					\
			 insn " %[b], %%mm5\n\tmovq %%mm5, %[r]\n\temms"		\
			 : [r] "=m" (r) : [a] "m" (a), [b] "m" (b) : "mm5");	\
	return r;								\
}
#define DEF_OP(op) DEF_RR(op##_rr, #op) DEF_RM(op##_rm, #op)

DEF_OP(paddb) DEF_OP(paddw) DEF_OP(paddd)
DEF_OP(paddsb) DEF_OP(paddsw) DEF_OP(paddusb) DEF_OP(paddusw)
DEF_OP(psubb) DEF_OP(psubw) DEF_OP(psubd)
DEF_OP(psubsb) DEF_OP(psubsw) DEF_OP(psubusb) DEF_OP(psubusw)
DEF_OP(pmullw) DEF_OP(pmulhw) DEF_OP(pmaddwd)
DEF_OP(pand) DEF_OP(pandn) DEF_OP(por) DEF_OP(pxor)
DEF_OP(pcmpeqb) DEF_OP(pcmpeqw) DEF_OP(pcmpeqd)
DEF_OP(pcmpgtb) DEF_OP(pcmpgtw) DEF_OP(pcmpgtd)
DEF_OP(packsswb) DEF_OP(packssdw) DEF_OP(packuswb)
DEF_OP(punpcklbw) DEF_OP(punpcklwd) DEF_OP(punpckldq)
DEF_OP(punpckhbw) DEF_OP(punpckhwd) DEF_OP(punpckhdq)

typedef u64 (*op_fn)(u64, u64);
#define ENTRY(op) { #op, op##_rr, op##_rm }
static const struct {
	const char *name;
	op_fn rr, rm;
} ops[] = {
	ENTRY(paddb), ENTRY(paddw), ENTRY(paddd),
	ENTRY(paddsb), ENTRY(paddsw), ENTRY(paddusb), ENTRY(paddusw),
	ENTRY(psubb), ENTRY(psubw), ENTRY(psubd),
	ENTRY(psubsb), ENTRY(psubsw), ENTRY(psubusb), ENTRY(psubusw),
	ENTRY(pmullw), ENTRY(pmulhw), ENTRY(pmaddwd),
	ENTRY(pand), ENTRY(pandn), ENTRY(por), ENTRY(pxor),
	ENTRY(pcmpeqb), ENTRY(pcmpeqw), ENTRY(pcmpeqd),
	ENTRY(pcmpgtb), ENTRY(pcmpgtw), ENTRY(pcmpgtd),
	ENTRY(packsswb), ENTRY(packssdw), ENTRY(packuswb),
	ENTRY(punpcklbw), ENTRY(punpcklwd), ENTRY(punpckldq),
	ENTRY(punpckhbw), ENTRY(punpckhwd), ENTRY(punpckhdq),
};

static const u64 pairs[][2] = {
	{ 0x0102030405060708ull, 0x1020304050607080ull },
	{ 0x7f7f7f7f7f7f7f7full, 0x0101010101010101ull },
	{ 0x8000800080008000ull, 0xffffffffffffffffull },
	{ 0x7fff80007fffffffull, 0x7fff8000ffff0001ull },
	{ 0xff00ff0000ff00ffull, 0x0f0f0f0ff0f0f0f0ull },
	{ 0x123456789abcdef0ull, 0xfedcba9876543210ull },
	{ 0x0000000000000000ull, 0x8000000180000001ull },
	{ 0xfff0001000807f80ull, 0x0010fff0ff80807full },
};
#define NPAIRS (sizeof(pairs) / sizeof(pairs[0]))

static void test_ops(void)
{
	unsigned o, p;

	for (o = 0; o < sizeof(ops) / sizeof(ops[0]); o++) {
		printf("== %s\n", ops[o].name);
		for (p = 0; p < NPAIRS; p++) {
			u64 r1 = ops[o].rr(pairs[p][0], pairs[p][1]);
			u64 r2 = ops[o].rm(pairs[p][0], pairs[p][1]);

			printf("%016llx, %016llx -> %016llx", pairs[p][0], pairs[p][1], r1);
			if (r2 != r1)
				printf(" (memory form: %016llx)", r2);
			printf("\n");
		}
	}
}

/* ---- shifts -------------------------------------------------------------- */
#define DEF_SHIFT_R(name, insn)							\
static u64 name(u64 a, u64 cnt)							\
{										\
	u64 r;									\
	__asm__ volatile("movq %[a], %%mm2\n\tmovq %[c], %%mm3\n\t"		\
			 insn " %%mm3, %%mm2\n\tmovq %%mm2, %[r]\n\temms"	\
			 : [r] "=m" (r) : [a] "m" (a), [c] "m" (cnt) : "mm2", "mm3"); \
	return r;								\
}
#define DEF_SHIFT_M(name, insn)							\
static u64 name(u64 a, u64 cnt)							\
{										\
	u64 r;									\
	__asm__ volatile("movq %[a], %%mm7\n\t"					\
			 insn " %[c], %%mm7\n\tmovq %%mm7, %[r]\n\temms"		\
			 : [r] "=m" (r) : [a] "m" (a), [c] "m" (cnt) : "mm7");	\
	return r;								\
}
#define DEF_SHIFT_I(name, insn, n)						\
static u64 name(u64 a, u64 cnt)							\
{										\
	u64 r;									\
	(void)cnt;								\
	__asm__ volatile("movq %[a], %%mm4\n\t"					\
			 insn " $" #n ", %%mm4\n\tmovq %%mm4, %[r]\n\temms"	\
			 : [r] "=m" (r) : [a] "m" (a) : "mm4");			\
	return r;								\
}
#define DEF_SHIFT(op)								\
	DEF_SHIFT_R(op##_r, #op) DEF_SHIFT_M(op##_m, #op)			\
	DEF_SHIFT_I(op##_i0, #op, 0) DEF_SHIFT_I(op##_i1, #op, 1)		\
	DEF_SHIFT_I(op##_i7, #op, 7) DEF_SHIFT_I(op##_i15, #op, 15)		\
	DEF_SHIFT_I(op##_i16, #op, 16) DEF_SHIFT_I(op##_i31, #op, 31)		\
	DEF_SHIFT_I(op##_i32, #op, 32) DEF_SHIFT_I(op##_i63, #op, 63)		\
	DEF_SHIFT_I(op##_i64, #op, 64) DEF_SHIFT_I(op##_i255, #op, 255)
DEF_SHIFT(psllw) DEF_SHIFT(pslld) DEF_SHIFT(psllq)
DEF_SHIFT(psrlw) DEF_SHIFT(psrld) DEF_SHIFT(psrlq)
DEF_SHIFT(psraw) DEF_SHIFT(psrad)

#define SHIFT_ENTRY(op)								\
	{ #op, op##_r, op##_m,							\
	  { op##_i0, op##_i1, op##_i7, op##_i15, op##_i16, op##_i31, op##_i32,	\
	    op##_i63, op##_i64, op##_i255 } }
static const struct {
	const char *name;
	op_fn r, m;
	op_fn imm[10];
} shifts[] = {
	SHIFT_ENTRY(psllw), SHIFT_ENTRY(pslld), SHIFT_ENTRY(psllq),
	SHIFT_ENTRY(psrlw), SHIFT_ENTRY(psrld), SHIFT_ENTRY(psrlq),
	SHIFT_ENTRY(psraw), SHIFT_ENTRY(psrad),
};
static const unsigned imm_counts[10] = { 0, 1, 7, 15, 16, 31, 32, 63, 64, 255 };

static void test_shifts(void)
{
	static const u64 vals[] = { 0x8001c3a5700f00ffull, 0xfedcba9876543210ull };
	/* register/memory counts: the whole 64-bit value is the count */
	static const u64 cnts[] = { 0, 1, 4, 15, 16, 31, 32, 33, 63, 64,
				    0x100000001ull, 0xffffffffffffffffull };
	unsigned s, v, c;

	for (s = 0; s < sizeof(shifts) / sizeof(shifts[0]); s++) {
		printf("== %s\n", shifts[s].name);
		for (v = 0; v < 2; v++) {
			for (c = 0; c < sizeof(cnts) / 8; c++) {
				u64 r1 = shifts[s].r(vals[v], cnts[c]);
				u64 r2 = shifts[s].m(vals[v], cnts[c]);

				printf("%016llx by mm/m64 %llx -> %016llx", vals[v], cnts[c], r1);
				if (r2 != r1)
					printf(" (memory count: %016llx)", r2);
				printf("\n");
			}
			for (c = 0; c < 10; c++)
				printf("%016llx by imm %u -> %016llx\n", vals[v], imm_counts[c],
				       shifts[s].imm[c](vals[v], 0));
		}
	}
}

/* ---- moves ------------------------------------------------------------------ */
static void test_moves(void)
{
	u64 q = 0x1122334455667788ull, r1, r2, r3;
	uint32_t d = 0xcafef00d, g1, m32 = 0;
	uint32_t mem[4] = { 0xaaaaaaaa, 0xbbbbbbbb, 0xcccccccc, 0xdddddddd };

	printf("== movd / movq\n");
	/* movd r32 -> mm zero-extends; movd mm -> r32 takes the low half */
	__asm__ volatile("movq %[q], %%mm0\n\tmovd %[d], %%mm0\n\tmovq %%mm0, %[r]\n\temms"
			 : [r] "=m" (r1) : [q] "m" (q), [d] "r" (d) : "mm0");
	printf("movd r32->mm: %016llx\n", r1);
	__asm__ volatile("movq %[q], %%mm6\n\tmovd %%mm6, %[g]\n\temms"
			 : [g] "=r" (g1) : [q] "m" (q) : "mm6");
	printf("movd mm->r32: %08x\n", g1);
	__asm__ volatile("movq %[q], %%mm1\n\tmovd %[m], %%mm1\n\tmovq %%mm1, %[r]\n\temms"
			 : [r] "=m" (r2) : [q] "m" (q), [m] "m" (mem[1]) : "mm1");
	printf("movd m32->mm: %016llx\n", r2);
	__asm__ volatile("movq %[q], %%mm2\n\tmovd %%mm2, %[m]\n\temms"
			 : [m] "=m" (m32) : [q] "m" (q) : "mm2");
	printf("movd mm->m32: %08x\n", m32);
	__asm__ volatile("movq %[q], %%mm3\n\tmovq %%mm3, %%mm4\n\tpxor %%mm3, %%mm3\n\t"
			 "movq %%mm4, %[m]\n\temms"
			 : [m] "=m" (*(u64 *)&mem[2]) : [q] "m" (q) : "mm3", "mm4", "memory");
	printf("movq m64->mm->mm->m64: %08x %08x %08x %08x\n", mem[0], mem[1], mem[2], mem[3]);
	/* unaligned memory operand */
	{
		uint8_t buf[16];
		int i;

		for (i = 0; i < 16; i++)
			buf[i] = (uint8_t)(0xa0 + i);
		__asm__ volatile("movq 3(%[p]), %%mm5\n\tmovq %%mm5, 7(%[p])\n\tmovq %%mm5, %[r]\n\temms"
				 : [r] "=m" (r3) : [p] "r" (buf) : "mm5", "memory");
		printf("movq unaligned: %016llx, buffer", r3);
		for (i = 0; i < 16; i++)
			printf(" %02x", buf[i]);
		printf("\n");
	}
}

/* ---- MMX / x87 aliasing ---------------------------------------------------- */
static void test_aliasing(void)
{
	uint8_t env[28], save[108];
	u64 q = 0x0123456789abcdefull, r;
	uint16_t tw1, tw2, sw1;
	int i;

	printf("== mmx / x87 aliasing\n");
	/* Tags reported by fnstenv/fnsave are derived from register contents,
	 * which EMMS/FNINIT leave in place: give all eight registers known
	 * MMX contents first so nothing depends on earlier code. */
	__asm__ volatile("movq %[q], %%mm0\n\tmovq %%mm0, %%mm1\n\tmovq %%mm0, %%mm2\n\t"
			 "movq %%mm0, %%mm3\n\tmovq %%mm0, %%mm4\n\tmovq %%mm0, %%mm5\n\t"
			 "movq %%mm0, %%mm6\n\tmovq %%mm0, %%mm7\n\temms"
			 : : [q] "m" (q) : "mm0", "mm1", "mm2", "mm3", "mm4", "mm5", "mm6", "mm7");
	__asm__ volatile("fninit\n\tmovq %[q], %%mm3\n\tfnstenv %[e]\n\temms"
			 : [e] "=m" (env) : [q] "m" (q) : "mm3", "memory");
	tw1 = *(uint16_t *)&env[8];
	sw1 = *(uint16_t *)&env[4];
	__asm__ volatile("fnstenv %[e]" : [e] "=m" (env) : : "memory");
	tw2 = *(uint16_t *)&env[8];
	printf("after movq to mm3: tag word %04x, TOP %u; after emms: tag word %04x\n", tw1,
	       (sw1 >> 11) & 7, tw2);
	/* the register image of mm3 as the x87 sees it: exponent all ones */
	__asm__ volatile("fninit\n\tmovq %[q], %%mm3\n\tfnsave %[s]\n\temms"
			 : [s] "=m" (save) : [q] "m" (q) : "mm3", "memory");
	printf("fnsave image of st3/mm3:");
	for (i = 0; i < 10; i++)
		printf(" %02x", save[28 + 3 * 10 + i]);
	printf("\n");
	/* an x87 load lands in physical register 7 = mm7 */
	__asm__ volatile("fninit\n\tfldpi\n\tmovq %%mm7, %[r]\n\temms"
			 : [r] "=m" (r) : : "mm7", "memory");
	printf("fldpi then movq from mm7: %016llx\n", r);
	/* after an MMX instruction the x87 sees TOP=0 and all tags valid */
	__asm__ volatile("fninit\n\tfld1\n\tfld1\n\tpxor %%mm0, %%mm0\n\tfnstenv %[e]\n\temms"
			 : [e] "=m" (env) : : "mm0", "memory");
	printf("two fld1 then pxor: sw %04x tw %04x\n", *(uint16_t *)&env[4] & 0x3800,
	       *(uint16_t *)&env[8]);
}

int main(void)
{
	test_ops();
	test_shifts();
	test_moves();
	test_aliasing();
	return 0;
}
