/*
 * atomics.c - exchange and locked read-modify-write instructions:
 * XCHG (register/register, register/memory, 8/16/32), XADD (register and
 * memory, with and without LOCK), CMPXCHG (success and failure, 8/16/32,
 * register and locked memory destinations), CMPXCHG8B (success and
 * failure) and LOCK-prefixed ADD/SUB/INC/DEC/OR/AND/XOR/NOT/NEG/BTS on
 * memory.  Single-threaded: this checks the data semantics and flags.
 *
 * Flags: XADD and CMPXCHG set all six like ADD/CMP; CMPXCHG8B sets ZF and
 * leaves CF PF AF SF OF unchanged (so all are printed with a preset);
 * XCHG and NOT change no flags; locked ALU ops set flags as their
 * unlocked forms (AF undefined for OR/AND/XOR, CF untouched by INC/DEC,
 * BT* define CF and leave ZF unchanged).
 */
#include "rt.h"

#define ALLF FL_ARITH
#define LOGIC (FL_ARITH & ~FL_AF)

static uint32_t preset(int i)
{
	return (i & 1) ? (ALLF | 2) : 2;
}

/* ---- xchg ---------------------------------------------------------------- */
static void test_xchg(void)
{
	uint32_t a = 0x11111111, b = 0x22222222, fl;
	volatile uint32_t m32 = 0x33333333;
	volatile uint16_t m16 = 0x4444;
	volatile uint8_t m8 = 0x55;
	uint32_t r16 = 0xaaaa6666, r8 = 0xbbbbbb77, hi = 0x1234;

	printf("== xchg\n");
	__asm__ volatile("pushl %[f]\n\tpopfl\n\txchgl %[a], %[b]\n\tpushfl\n\tpopl %[fl]"
			 : [a] "+r" (a), [b] "+r" (b), [fl] "=&r" (fl) : [f] "r" (preset(1)) : "cc");
	printf("xchg r32,r32: %08x %08x flags %s\n", a, b, flagstr(fl, ALLF));
	__asm__ volatile("xchgl %[a], %[m]" : [a] "+r" (a), [m] "+m" (m32));
	printf("xchg r32,m32: %08x %08x\n", a, m32);
	__asm__ volatile("xchgw %w[a], %[m]" : [a] "+r" (r16), [m] "+m" (m16));
	printf("xchg r16,m16: %08x %04x\n", r16, m16);
	__asm__ volatile("xchgb %b[a], %[m]" : [a] "+q" (r8), [m] "+m" (m8));
	printf("xchg r8,m8: %08x %02x\n", r8, m8);
	/* xchg with the accumulator has a one-byte encoding (90+r) */
	a = 0xcafe0001;
	__asm__ volatile("xchgl %%eax, %[b]" : "+a" (a), [b] "+d" (hi));
	printf("xchg eax,edx: %08x %08x\n", a, hi);
	/* high byte registers */
	a = 0x0000a1b2;
	__asm__ volatile("xchgb %%ah, %%al" : "+a" (a));
	printf("xchg ah,al: %08x\n", a);
	__asm__ volatile("pushl %[f]\n\tpopfl\n\txchgl %[a], %[m]\n\tpushfl\n\tpopl %[fl]"
			 : [a] "+r" (a), [m] "+m" (m32), [fl] "=&r" (fl) : [f] "r" (preset(0)) : "cc");
	printf("xchg flags untouched: %s\n", flagstr(fl, ALLF));
}

/* ---- xadd ---------------------------------------------------------------- */
static void test_xadd(void)
{
	static const uint32_t v[][2] = {
		{ 1, 2 }, { 0x7fffffff, 1 }, { 0xffffffff, 1 }, { 0x80000000, 0x80000000 },
		{ 0x0000ff0f, 0x000000f1 }, { 0, 0 },
	};
	unsigned i;

	printf("== xadd\n");
	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		uint32_t r = v[i][1], fl, d = v[i][0];
		volatile uint32_t m = v[i][0];
		volatile uint16_t m16 = (uint16_t)v[i][0];
		uint32_t r16 = 0xabcd0000 | (v[i][1] & 0xffff);
		uint32_t r8 = v[i][1] & 0xff, d8 = 0x5a00 | (v[i][0] & 0xff);

		__asm__ volatile("pushl %[f]\n\tpopfl\n\txaddl %[r], %[d]\n\tpushfl\n\tpopl %[fl]"
				 : [r] "+r" (r), [d] "+r" (d), [fl] "=&r" (fl) : [f] "r" (preset(i)) : "cc");
		printf("xadd r32,r32 %08x+%08x: dst %08x src %08x %s\n", v[i][0], v[i][1], d, r,
		       flagstr(fl, ALLF));
		r = v[i][1];
		__asm__ volatile("pushl %[f]\n\tpopfl\n\tlock xaddl %[r], %[m]\n\tpushfl\n\tpopl %[fl]"
				 : [r] "+r" (r), [m] "+m" (m), [fl] "=&r" (fl) : [f] "r" (preset(i + 1)) : "cc");
		printf("lock xadd m32 %08x+%08x: dst %08x src %08x %s\n", v[i][0], v[i][1], m, r,
		       flagstr(fl, ALLF));
		__asm__ volatile("pushl %[f]\n\tpopfl\n\txaddw %w[r], %[m]\n\tpushfl\n\tpopl %[fl]"
				 : [r] "+r" (r16), [m] "+m" (m16), [fl] "=&r" (fl) : [f] "r" (preset(i)) : "cc");
		printf("xadd m16: dst %04x src %08x %s\n", m16, r16, flagstr(fl, ALLF));
		__asm__ volatile("pushl %[f]\n\tpopfl\n\txaddb %b[r], %b[d]\n\tpushfl\n\tpopl %[fl]"
				 : [r] "+q" (r8), [d] "+q" (d8), [fl] "=&r" (fl) : [f] "r" (preset(i + 1)) : "cc");
		printf("xadd r8,r8: dst %08x src %08x %s\n", d8, r8, flagstr(fl, ALLF));
	}
	/* xadd of a register with itself: both get the sum */
	{
		uint32_t x = 21;

		__asm__ volatile("xaddl %[x], %[x]" : [x] "+r" (x) : : "cc");
		printf("xadd x,x: %u\n", x);
	}
}

/* ---- cmpxchg -------------------------------------------------------------- */
static void test_cmpxchg(void)
{
	static const struct { uint32_t dst, acc, src; } v[] = {
		{ 0x12345678, 0x12345678, 0xcafebabe },		/* equal: store */
		{ 0x12345678, 0x12345679, 0xcafebabe },		/* differ: load */
		{ 0x00000000, 0x00000000, 0xffffffff },
		{ 0x80000000, 0x7fffffff, 0x00000001 },
		{ 0x000000ff, 0x00001fff, 0x00000011 },		/* low parts may match */
	};
	unsigned i;

	printf("== cmpxchg\n");
	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		volatile uint32_t m = v[i].dst;
		volatile uint16_t m16 = (uint16_t)v[i].dst;
		uint32_t acc = v[i].acc, fl, d = v[i].dst;
		uint32_t acc16 = 0x99990000 | (v[i].acc & 0xffff);
		uint32_t acc8 = 0x88888800 | (v[i].acc & 0xff), d8 = 0x77777700 | (v[i].dst & 0xff);

		__asm__ volatile("pushl %[f]\n\tpopfl\n\tlock cmpxchgl %[s], %[m]\n\tpushfl\n\tpopl %[fl]"
				 : "+a" (acc), [m] "+m" (m), [fl] "=&r" (fl)
				 : [s] "r" (v[i].src), [f] "r" (preset(i)) : "cc");
		printf("lock cmpxchg m32 dst=%08x eax=%08x src=%08x -> dst %08x eax %08x %s\n",
		       v[i].dst, v[i].acc, v[i].src, m, acc, flagstr(fl, ALLF));
		acc = v[i].acc;
		__asm__ volatile("pushl %[f]\n\tpopfl\n\tcmpxchgl %[s], %[d]\n\tpushfl\n\tpopl %[fl]"
				 : "+a" (acc), [d] "+r" (d), [fl] "=&r" (fl)
				 : [s] "r" (v[i].src), [f] "r" (preset(i + 1)) : "cc");
		printf("cmpxchg r32 -> dst %08x eax %08x %s\n", d, acc, flagstr(fl, ALLF));
		__asm__ volatile("pushl %[f]\n\tpopfl\n\tcmpxchgw %w[s], %[m]\n\tpushfl\n\tpopl %[fl]"
				 : "+a" (acc16), [m] "+m" (m16), [fl] "=&r" (fl)
				 : [s] "r" (v[i].src), [f] "r" (preset(i)) : "cc");
		printf("cmpxchg m16 -> dst %04x eax %08x %s\n", m16, acc16, flagstr(fl, ALLF));
		__asm__ volatile("pushl %[f]\n\tpopfl\n\tcmpxchgb %b[s], %b[d]\n\tpushfl\n\tpopl %[fl]"
				 : "+a" (acc8), [d] "+q" (d8), [fl] "=&r" (fl)
				 : [s] "q" (v[i].src), [f] "r" (preset(i + 1)) : "cc");
		printf("cmpxchg r8 -> dst %08x eax %08x %s\n", d8, acc8, flagstr(fl, ALLF));
	}
}

/* ---- cmpxchg8b ---------------------------------------------------------- */
static void test_cmpxchg8b(void)
{
	static const struct { uint64_t mem, cmp, newv; } v[] = {
		{ 0x0123456789abcdefull, 0x0123456789abcdefull, 0xfedcba9876543210ull },
		{ 0x0123456789abcdefull, 0x0123456789abcdeeull, 0xfedcba9876543210ull },
		{ 0x0123456789abcdefull, 0x1123456789abcdefull, 0x1111111122222222ull },
		{ 0, 0, 0xffffffffffffffffull },
	};
	unsigned i;
	int p;

	printf("== cmpxchg8b\n");
	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		for (p = 0; p < 2; p++) {
			volatile uint64_t m = v[i].mem;
			uint32_t lo = (uint32_t)v[i].cmp, hi = (uint32_t)(v[i].cmp >> 32);
			uint32_t nlo = (uint32_t)v[i].newv, nhi = (uint32_t)(v[i].newv >> 32);
			uint32_t fl, fin = preset(p) & ~(uint32_t)FL_ZF;

			if (p)
				fin |= FL_ZF;	/* ZF preset both ways */
			if (p)
				__asm__ volatile("pushl %[f]\n\tpopfl\n\t"
						 "lock cmpxchg8b %[m]\n\t"
						 "pushfl\n\tpopl %[fl]"
						 : "+a" (lo), "+d" (hi), [m] "+m" (m), [fl] "=&r" (fl)
						 : "b" (nlo), "c" (nhi), [f] "r" (fin) : "cc");
			else
				__asm__ volatile("pushl %[f]\n\tpopfl\n\t"
						 "cmpxchg8b %[m]\n\t"
						 "pushfl\n\tpopl %[fl]"
						 : "+a" (lo), "+d" (hi), [m] "+m" (m), [fl] "=&r" (fl)
						 : "b" (nlo), "c" (nhi), [f] "r" (fin) : "cc");
			printf("%scmpxchg8b mem=%016llx edx:eax=%016llx new=%016llx in=%s -> mem %016llx "
			       "edx:eax %08x%08x %s\n", p ? "lock " : "", v[i].mem, v[i].cmp, v[i].newv,
			       flagstr(fin, ALLF), (unsigned long long)m, hi, lo, flagstr(fl, ALLF));
		}
	}
}

/* ---- locked read-modify-write ------------------------------------------ */
#define DEF_LOCKED(name, text, T)						\
static uint32_t name(uint32_t v, uint32_t fin, uint32_t *fout)			\
{										\
	volatile T m = (T)v;							\
	uint32_t fl;								\
	__asm__ volatile("pushl %[f]\n\tpopfl\n\t" text "\n\t"			\
			 "pushfl\n\tpopl %[fl]"					\
			 : [m] "+m" (m), [fl] "=&r" (fl)			\
			 : [f] "r" (fin), [r] "r" (0x01010101), [b] "r" (1) : "cc"); \
	*fout = fl;								\
	return m;								\
}
DEF_LOCKED(l_add32, "lock addl %[r], %[m]", uint32_t)
DEF_LOCKED(l_add8i, "lock addb $0x80, %[m]", uint8_t)
DEF_LOCKED(l_sub16, "lock subw %w[r], %[m]", uint16_t)
DEF_LOCKED(l_adc32, "lock adcl $1, %[m]", uint32_t)
DEF_LOCKED(l_sbb32, "lock sbbl %[r], %[m]", uint32_t)
DEF_LOCKED(l_inc32, "lock incl %[m]", uint32_t)
DEF_LOCKED(l_dec16, "lock decw %[m]", uint16_t)
DEF_LOCKED(l_inc8, "lock incb %[m]", uint8_t)
DEF_LOCKED(l_or32, "lock orl $0x80000001, %[m]", uint32_t)
DEF_LOCKED(l_and32, "lock andl %[r], %[m]", uint32_t)
DEF_LOCKED(l_xor8, "lock xorb $0xff, %[m]", uint8_t)
DEF_LOCKED(l_not32, "lock notl %[m]", uint32_t)
DEF_LOCKED(l_neg32, "lock negl %[m]", uint32_t)
DEF_LOCKED(l_bts32, "lock btsl $31, %[m]", uint32_t)
DEF_LOCKED(l_btr32, "lock btrl %[b], %[m]", uint32_t)
DEF_LOCKED(l_btc16, "lock btcw $3, %[m]", uint16_t)

static void test_locked(void)
{
	static const struct {
		const char *name;
		uint32_t (*fn)(uint32_t, uint32_t, uint32_t *);
		uint32_t defined;
		int w;
	} t[] = {
		{ "lock add r32(01010101), m32", l_add32, ALLF, 8 },
		{ "lock add $0x80, m8", l_add8i, ALLF, 2 },
		{ "lock sub r16(0101), m16", l_sub16, ALLF, 4 },
		{ "lock adc $1, m32", l_adc32, ALLF, 8 },
		{ "lock sbb r32(01010101), m32", l_sbb32, ALLF, 8 },
		{ "lock inc m32", l_inc32, ALLF, 8 },
		{ "lock dec m16", l_dec16, ALLF, 4 },
		{ "lock inc m8", l_inc8, ALLF, 2 },
		{ "lock or $0x80000001, m32", l_or32, LOGIC, 8 },
		{ "lock and r32(01010101), m32", l_and32, LOGIC, 8 },
		{ "lock xor $0xff, m8", l_xor8, LOGIC, 2 },
		{ "lock not m32", l_not32, ALLF, 8 },
		{ "lock neg m32", l_neg32, ALLF, 8 },
		{ "lock bts $31, m32", l_bts32, FL_CF | FL_ZF, 8 },
		{ "lock btr r32(bit 1), m32", l_btr32, FL_CF | FL_ZF, 8 },
		{ "lock btc $3, m16", l_btc16, FL_CF | FL_ZF, 4 },
	};
	static const uint32_t vals[] = { 0, 0x7fffffff, 0xffffffff, 0x80808080, 0x0000ffff };
	unsigned i, j;
	int p;

	printf("== locked read-modify-write\n");
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		for (j = 0; j < sizeof(vals) / 4; j++) {
			for (p = 0; p < 2; p++) {
				uint32_t v = t[i].w == 8 ? vals[j] : vals[j] & ((1u << (4 * t[i].w)) - 1);
				uint32_t fl, r = t[i].fn(v, preset(p), &fl);

				printf("%s: %0*x in=%s -> %0*x %s\n", t[i].name, t[i].w, v,
				       flagstr(preset(p), ALLF), t[i].w, r, flagstr(fl, t[i].defined));
			}
		}
	}
}

int main(void)
{
	test_xchg();
	test_xadd();
	test_cmpxchg();
	test_cmpxchg8b();
	test_locked();
	return 0;
}
