/*
 * bitops.c - bit test and bit scan instructions.
 *
 * BT/BTS/BTR/BTC with register operands (bit offset taken modulo the
 * operand size), memory operands with an immediate offset (also modulo the
 * size) and memory operands with a register offset, where the offset is a
 * signed bit string index that can reach beyond the first dword and below
 * the base address.  BSF/BSR on 16- and 32-bit register and memory
 * sources.
 *
 * Flags per the Intel SDM: BT* set CF to the selected bit, leave ZF
 * unchanged, and leave OF SF AF PF undefined, so CF and ZF are printed
 * (ZF is preset both ways to see it preserved).  BSF/BSR set ZF when the
 * source is zero; the destination is then undefined and not printed; CF OF
 * SF AF PF are undefined.
 */
#include "rt.h"

#define BTFL (FL_CF | FL_ZF)

typedef uint32_t (*bt_reg_fn)(uint32_t a, uint32_t bit, uint32_t fin, uint32_t *fout);

#define DEF_BT_REG(name, insn, T)						\
static uint32_t name(uint32_t a32, uint32_t bit32, uint32_t fin, uint32_t *fout) \
{										\
	T a = (T)a32, bit = (T)bit32;						\
	uint32_t fl;								\
	__asm__ volatile("pushl %[fin]\n\tpopfl\n\t" insn " %[b], %[a]\n\t"	\
			 "pushfl\n\tpopl %[fl]"					\
			 : [a] "+r" (a), [fl] "=&r" (fl)			\
			 : [b] "r" (bit), [fin] "r" (fin) : "cc");		\
	*fout = fl;								\
	return a;								\
}
DEF_BT_REG(bt16r, "btw", uint16_t)
DEF_BT_REG(bts16r, "btsw", uint16_t)
DEF_BT_REG(btr16r, "btrw", uint16_t)
DEF_BT_REG(btc16r, "btcw", uint16_t)
DEF_BT_REG(bt32r, "btl", uint32_t)
DEF_BT_REG(bts32r, "btsl", uint32_t)
DEF_BT_REG(btr32r, "btrl", uint32_t)
DEF_BT_REG(btc32r, "btcl", uint32_t)

static const char *const btnames[4] = { "bt", "bts", "btr", "btc" };
static const bt_reg_fn btreg[2][4] = {
	{ bt16r, bts16r, btr16r, btc16r },
	{ bt32r, bts32r, btr32r, btc32r },
};

static void run_reg(void)
{
	static const uint32_t vals[] = { 0x00000000, 0xffffffff, 0x80000001, 0x5a5aa5a5 };
	static const uint32_t bits[] = { 0, 1, 7, 15, 16, 17, 31, 32, 33, 47, 0xffffffff, 0x80000010 };
	int s, o, p;
	unsigned i, j;

	for (s = 0; s < 2; s++) {
		int w = s ? 8 : 4;

		for (o = 0; o < 4; o++) {
			printf("== %s r%d, r%d\n", btnames[o], s ? 32 : 16, s ? 32 : 16);
			for (i = 0; i < sizeof(vals) / 4; i++) {
				for (j = 0; j < sizeof(bits) / 4; j++) {
					for (p = 0; p < 2; p++) {
						uint32_t fin = p ? (FL_ARITH | 2) : 2, fl, r;
						uint32_t a = s ? vals[i] : vals[i] & 0xffff;
						uint32_t b = s ? bits[j] : bits[j] & 0xffff;

						r = btreg[s][o](a, b, fin, &fl);
						printf("%0*x bit %0*x in=%s -> %0*x %s\n", w, a, w, b,
						       flagstr(fin, FL_ARITH), w, r, flagstr(fl, BTFL));
					}
				}
			}
		}
	}
}

/* ---- memory operand, immediate bit offset ------------------------------- */
typedef void (*bt_imm_fn)(void *m, uint32_t fin, uint32_t *fout);

#define DEF_BT_IMM(name, text, T)						\
static void name(void *m, uint32_t fin, uint32_t *fout)			\
{										\
	uint32_t fl;								\
	__asm__ volatile("pushl %[fin]\n\tpopfl\n\t" text "\n\t"		\
			 "pushfl\n\tpopl %[fl]"					\
			 : [m] "+m" (*(T *)m), [fl] "=&r" (fl)			\
			 : [fin] "r" (fin) : "cc");				\
	*fout = fl;								\
}
DEF_BT_IMM(bt_m32_i5, "btl $5, %[m]", uint32_t)
DEF_BT_IMM(bts_m32_i31, "btsl $31, %[m]", uint32_t)
DEF_BT_IMM(btr_m32_i36, "btrl $36, %[m]", uint32_t)	/* masked to 4 */
DEF_BT_IMM(btc_m32_i200, "btcl $200, %[m]", uint32_t)	/* masked to 8 */
DEF_BT_IMM(bt_m16_i15, "btw $15, %[m]", uint16_t)
DEF_BT_IMM(bts_m16_i17, "btsw $17, %[m]", uint16_t)	/* masked to 1 */
DEF_BT_IMM(btr_m16_i3, "btrw $3, %[m]", uint16_t)
DEF_BT_IMM(btc_m16_i31, "btcw $31, %[m]", uint16_t)	/* masked to 15 */

static const struct {
	const char *name;
	bt_imm_fn fn;
} imm_forms[] = {
	{ "bt $5, m32", bt_m32_i5 }, { "bts $31, m32", bts_m32_i31 },
	{ "btr $36, m32", btr_m32_i36 }, { "btc $200, m32", btc_m32_i200 },
	{ "bt $15, m16", bt_m16_i15 }, { "bts $17, m16", bts_m16_i17 },
	{ "btr $3, m16", btr_m16_i3 }, { "btc $31, m16", btc_m16_i31 },
};

static void run_mem_imm(void)
{
	static const uint32_t vals[] = { 0x00000000, 0xffffffff, 0x80008010, 0x12345678 };
	unsigned f, i;
	int p;

	printf("== memory, immediate offset\n");
	for (f = 0; f < sizeof(imm_forms) / sizeof(imm_forms[0]); f++) {
		for (i = 0; i < sizeof(vals) / 4; i++) {
			for (p = 0; p < 2; p++) {
				/* guard words around the operand must stay intact */
				uint32_t buf[3] = { 0xaaaaaaaa, vals[i], 0x55555555 };
				uint32_t fin = p ? (FL_ARITH | 2) : 2, fl;

				imm_forms[f].fn(&buf[1], fin, &fl);
				printf("%s: %08x in=%s -> %08x %08x %08x %s\n", imm_forms[f].name,
				       vals[i], flagstr(fin, FL_ARITH), buf[0], buf[1], buf[2],
				       flagstr(fl, BTFL));
			}
		}
	}
}

/* ---- memory operand, register bit offset (bit string addressing) ------- */
#define DEF_BT_STR(name, insn, T)						\
static void name(void *base, int32_t bit, uint32_t fin, uint32_t *fout)		\
{										\
	uint32_t fl;								\
	T b = (T)bit;								\
	__asm__ volatile("pushl %[fin]\n\tpopfl\n\t" insn " %[b], (%[p])\n\t"	\
			 "pushfl\n\tpopl %[fl]"					\
			 : [fl] "=&r" (fl)					\
			 : [b] "r" (b), [p] "r" (base), [fin] "r" (fin)		\
			 : "cc", "memory");					\
	*fout = fl;								\
}
DEF_BT_STR(bt_str32, "btl", int32_t)
DEF_BT_STR(bts_str32, "btsl", int32_t)
DEF_BT_STR(btr_str32, "btrl", int32_t)
DEF_BT_STR(btc_str32, "btcl", int32_t)
DEF_BT_STR(bt_str16, "btw", int16_t)
DEF_BT_STR(bts_str16, "btsw", int16_t)
DEF_BT_STR(btr_str16, "btrw", int16_t)
DEF_BT_STR(btc_str16, "btcw", int16_t)

typedef void (*bt_str_fn)(void *base, int32_t bit, uint32_t fin, uint32_t *fout);
static const bt_str_fn btstr[2][4] = {
	{ bt_str16, bts_str16, btr_str16, btc_str16 },
	{ bt_str32, bts_str32, btr_str32, btc_str32 },
};

static void run_mem_str(void)
{
	static const int32_t offs[] = { 0, 5, 31, 32, 63, 64, 100, 255, 256, 511,
					-1, -8, -17, -32, -33, -100, -256, -257, -512 };
	uint8_t area[160];
	int s, o;
	unsigned i;

	for (s = 0; s < 2; s++) {
		for (o = 0; o < 4; o++) {
			uint32_t sum;

			/* base in the middle of a patterned area */
			for (i = 0; i < sizeof(area); i++)
				area[i] = (uint8_t)(i * 37 + 11);
			printf("== %s m%d, r%d (bit string)\n", btnames[o], s ? 32 : 16, s ? 32 : 16);
			for (i = 0; i < sizeof(offs) / 4; i++) {
				uint32_t fin = (i & 1) ? (FL_ARITH | 2) : 2, fl;

				btstr[s][o](area + 80, offs[i], fin, &fl);
				printf("%s bit %d in=%s -> %s\n", btnames[o], offs[i],
				       flagstr(fin, FL_ARITH), flagstr(fl, BTFL));
			}
			sum = fnv1a(area, sizeof(area));
			printf("area after: %08x\n", sum);
		}
	}
}

/* ---- bsf / bsr -------------------------------------------------------------- */
#define DEF_BS(name, insn, T, C)						\
static uint32_t name(uint32_t src32, uint32_t fin, uint32_t *fout)		\
{										\
	T src = (T)src32, d = (T)0x7777;					\
	uint32_t fl;								\
	__asm__ volatile("pushl %[fin]\n\tpopfl\n\t" insn " %[s], %[d]\n\t"	\
			 "pushfl\n\tpopl %[fl]"					\
			 : [d] "+r" (d), [fl] "=&r" (fl)			\
			 : [s] C (src), [fin] "r" (fin) : "cc");		\
	*fout = fl;								\
	return d;								\
}
DEF_BS(bsf16, "bsfw", uint16_t, "r")
DEF_BS(bsr16, "bsrw", uint16_t, "m")
DEF_BS(bsf32, "bsfl", uint32_t, "m")
DEF_BS(bsr32, "bsrl", uint32_t, "r")

static void run_bsx(void)
{
	static const uint32_t vals[] = { 0, 1, 2, 0x80, 0x8000, 0x10000, 0x80000000,
					 0xffffffff, 0x00f00f00, 0x00010000, 0x0000fff0, 0x40000001 };
	static const struct {
		const char *name;
		uint32_t (*fn)(uint32_t, uint32_t, uint32_t *);
		int bits;
	} f[] = {
		{ "bsf r16, r16", bsf16, 16 }, { "bsr r16, m16", bsr16, 16 },
		{ "bsf r32, m32", bsf32, 32 }, { "bsr r32, r32", bsr32, 32 },
	};
	unsigned k, i;

	for (k = 0; k < 4; k++) {
		printf("== %s\n", f[k].name);
		for (i = 0; i < sizeof(vals) / 4; i++) {
			uint32_t v = f[k].bits == 16 ? vals[i] & 0xffff : vals[i];
			uint32_t fin = (i & 1) ? (FL_ARITH | 2) : 2, fl;
			uint32_t r = f[k].fn(v, fin, &fl);

			if (fl & FL_ZF)
				printf("%08x -> (zero source) %s\n", v, flagstr(fl, FL_ZF));
			else
				printf("%08x -> %u %s\n", v, r, flagstr(fl, FL_ZF));
		}
	}
}

int main(void)
{
	run_reg();
	run_mem_imm();
	run_mem_str();
	run_bsx();
	return 0;
}
