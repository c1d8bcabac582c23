/*
 * condjmp.c - the 16 x86 conditions through SETcc, CMOVcc (register and
 * memory sources, 16- and 32-bit), Jcc with 8-bit and with 32-bit
 * displacements, and the counted loops LOOP / LOOPZ / LOOPNZ / JECXZ.
 *
 * Part 1 sets every combination of CF PF ZF SF OF with popf and evaluates
 * all conditions; part 2 derives the flags from CMP of signed/unsigned
 * boundary pairs in 8/16/32 bits.  Results are 16-bit masks, bit n being
 * condition n in the order o no b ae e ne be a s ns p np l ge le g; all
 * the mechanisms must agree.  Part 3 counts loop iterations and checks
 * that LOOPcc/JECXZ leave the flags alone.
 */
#include "rt.h"

static const char *const ccname[16] = {
	"o", "no", "b", "ae", "e", "ne", "be", "a",
	"s", "ns", "p", "np", "l", "ge", "le", "g",
};

#define FOR_CC(X)								\
	X(o, 0) X(no, 1) X(b, 2) X(ae, 3) X(e, 4) X(ne, 5) X(be, 6) X(a, 7)	\
	X(s, 8) X(ns, 9) X(p, 10) X(np, 11) X(l, 12) X(ge, 13) X(le, 14) X(g, 15)

#define SETCC(cc, i) "set" #cc " " #i "(%[p])\n\t"
#define JCC8(cc, i)							\
	"movb $0, " #i "(%[p])\n\t"					\
	"j" #cc " 1f\n\t"						\
	"jmp 2f\n"							\
	"1:\tmovb $1, " #i "(%[p])\n"					\
	"2:\n\t"
#define JCC32(cc, i)							\
	"movb $0, " #i "(%[p])\n\t"					\
	"%{disp32%} j" #cc " 1f\n\t"	/* force rel32 */					\
	"jmp 2f\n"							\
	"1:\tmovb $1, " #i "(%[p])\n"					\
	"2:\n\t"

static void eval_setcc(uint32_t fin, uint8_t *out)
{
	__asm__ volatile("pushl %[f]\n\tpopfl\n\t" FOR_CC(SETCC)
			 : : [f] "r" (fin), [p] "r" (out) : "cc", "memory");
}

/* CMOVcc in four forms per condition: r32, m32, r16, m16 sources. */
#define DEF_CMOV(cc, i)								\
static void cmov_##cc(uint32_t fin, uint8_t *out, const uint32_t *one)	\
{										\
	__asm__ volatile("pushl %[f]\n\tpopfl\n\t"				\
			 "movl $0, %%eax\n\t"					\
			 "cmov" #cc "l %%ecx, %%eax\n\t"			\
			 "movb %%al, 0(%[p])\n\t"				\
			 "movl $0, %%eax\n\t"					\
			 "cmov" #cc "l (%[one]), %%eax\n\t"			\
			 "movb %%al, 1(%[p])\n\t"				\
			 "movl $0x77007700, %%eax\n\t"				\
			 "cmov" #cc "w %%cx, %%ax\n\t"				\
			 "movl %%eax, 4(%[p])\n\t"				\
			 "movl $0x77007700, %%eax\n\t"				\
			 "cmov" #cc "w (%[one]), %%ax\n\t"			\
			 "movl %%eax, 8(%[p])\n\t"				\
			 : : [f] "r" (fin), [p] "r" (out), [one] "r" (one),	\
			   "c" (1) : "eax", "cc", "memory");			\
}
FOR_CC(DEF_CMOV)

typedef void (*cmov_fn)(uint32_t, uint8_t *, const uint32_t *);
#define CMOV_ENTRY(cc, i) cmov_##cc,
static const cmov_fn cmovs[16] = { FOR_CC(CMOV_ENTRY) };

static void eval_jcc8(uint32_t fin, uint8_t *out)
{
	__asm__ volatile("pushl %[f]\n\tpopfl\n\t" FOR_CC(JCC8)
			 : : [f] "r" (fin), [p] "r" (out) : "cc", "memory");
}

static void eval_jcc32(uint32_t fin, uint8_t *out)
{
	__asm__ volatile("pushl %[f]\n\tpopfl\n\t" FOR_CC(JCC32)
			 : : [f] "r" (fin), [p] "r" (out) : "cc", "memory");
}

static unsigned mask_of(const uint8_t *v)
{
	unsigned m = 0;
	int i;

	for (i = 0; i < 16; i++) {
		if (v[i] > 1)
			return 0xdead0000u | v[i];	/* setcc wrote garbage */
		m |= (unsigned)v[i] << i;
	}
	return m;
}

/* all four mechanisms for one EFLAGS value; returns the setcc mask */
static unsigned eval_all(uint32_t fin, char *line, size_t len)
{
	uint8_t v[16];
	unsigned ms, mc = 0, m8, m32, bad16 = 0;
	int i;
	static const uint32_t one = 1;

	eval_setcc(fin, v);
	ms = mask_of(v);
	for (i = 0; i < 16; i++) {
		uint8_t c[12];

		cmovs[i](fin, c, &one);
		if (c[0] != c[1])
			bad16 |= 1u << i;
		mc |= (unsigned)c[0] << i;
		/* 16-bit cmov must leave the upper half of EAX alone */
		if (*(uint32_t *)(c + 4) != (c[0] ? 0x77000001u : 0x77007700u) ||
		    *(uint32_t *)(c + 8) != *(uint32_t *)(c + 4))
			bad16 |= 1u << i;
	}
	eval_jcc8(fin, v);
	m8 = mask_of(v);
	eval_jcc32(fin, v);
	m32 = mask_of(v);
	if (ms == mc && ms == m8 && ms == m32 && !bad16)
		snprintf(line, len, "%04x", ms);
	else
		snprintf(line, len, "MISMATCH set=%04x cmov=%04x jcc8=%04x jcc32=%04x cmovbad=%04x",
			 ms, mc, m8, m32, bad16);
	return ms;
}

static void print_true(unsigned m)
{
	int i;

	for (i = 0; i < 16; i++)
		if (m & (1u << i))
			printf(" %s", ccname[i]);
	printf("\n");
}

static void part1(void)
{
	static const uint32_t bit[5] = { FL_CF, FL_PF, FL_ZF, FL_SF, FL_OF };
	unsigned combo;

	printf("== all flag combinations\n");
	for (combo = 0; combo < 32; combo++) {
		uint32_t fin = 2;
		char line[96];
		unsigned m;
		int i;

		for (i = 0; i < 5; i++)
			if (combo & (1u << i))
				fin |= bit[i];
		if (combo & 1)
			fin |= FL_AF;	/* AF must not matter */
		m = eval_all(fin, line, sizeof(line));
		printf("%s: %s:", flagstr(fin, FL_ARITH & ~FL_AF), line);
		print_true(m);
	}
}

/* ---- flags from cmp ---------------------------------------------------------- */
static uint32_t flags_cmp32(uint32_t a, uint32_t b)
{
	uint32_t fl;

	__asm__ volatile("cmpl %[b], %[a]\n\tpushfl\n\tpopl %[fl]"
			 : [fl] "=r" (fl) : [a] "r" (a), [b] "r" (b) : "cc");
	return fl;
}

static uint32_t flags_cmp16(uint32_t a, uint32_t b)
{
	uint32_t fl;

	__asm__ volatile("cmpw %w[b], %w[a]\n\tpushfl\n\tpopl %[fl]"
			 : [fl] "=r" (fl) : [a] "r" (a), [b] "r" (b) : "cc");
	return fl;
}

static uint32_t flags_cmp8(uint32_t a, uint32_t b)
{
	uint32_t fl;

	__asm__ volatile("cmpb %b[b], %b[a]\n\tpushfl\n\tpopl %[fl]"
			 : [fl] "=r" (fl) : [a] "q" (a), [b] "q" (b) : "cc");
	return fl;
}

static void part2(void)
{
	static const uint32_t v8[] = { 0, 1, 5, 0x7f, 0x80, 0xfb, 0xff };
	static const uint32_t v16[] = { 0, 1, 0x80, 0x7fff, 0x8000, 0xfffb, 0xffff };
	static const uint32_t v32[] = { 0, 1, 5, 0x7fff, 0x8000, 0x7fffffff, 0x80000000,
					0xfffffffb, 0xffffffff };
	static const struct {
		uint32_t (*cmp)(uint32_t, uint32_t);
		const uint32_t *v;
		unsigned n;
	} sz[3] = {
		{ flags_cmp8, v8, sizeof(v8) / 4 },
		{ flags_cmp16, v16, sizeof(v16) / 4 },
		{ flags_cmp32, v32, sizeof(v32) / 4 },
	};
	unsigned i, j;
	int s;

	printf("== conditions after cmp a, b\n");
	for (s = 0; s < 3; s++) {
		int w = 2 << s;

		for (i = 0; i < sz[s].n; i++) {
			for (j = 0; j < sz[s].n; j++) {
				uint32_t a = sz[s].v[i], b = sz[s].v[j];
				char line[96];
				unsigned m;

				m = eval_all(sz[s].cmp(a, b) & 0x8d5, line, sizeof(line));
				printf("cmp%d %0*x, %0*x: %s:", 8 << s, w, a, w, b, line);
				print_true(m);
			}
		}
	}
}

/* ---- loops -------------------------------------------------------------------- */
/* LOOP: count iterations; flags set before the loop must survive it. */
static uint32_t count_loop(uint32_t ecx, uint32_t fin, uint32_t *fout)
{
	uint32_t n = 0, fl;

	__asm__ volatile("pushl %[f]\n\tpopfl\n"
			 "1:\tleal 1(%[n]), %[n]\n\t"
			 "loop 1b\n\t"
			 "pushfl\n\tpopl %[fl]"
			 : [n] "+r" (n), "+c" (ecx), [fl] "=r" (fl) : [f] "r" (fin) : "cc");
	*fout = fl;
	return n;
}

/* LOOPZ / LOOPNZ scanning bytes: compare, advance with lea, loop. */
static void scan_loopz(const uint8_t *p, uint32_t len, uint8_t val, int nz,
		       uint32_t *left, uint32_t *adv, uint32_t *fl)
{
	const uint8_t *q = p;
	uint32_t c = len, f;

	if (nz)
		__asm__ volatile("1:\tcmpb (%[q]), %[v]\n\t"
				 "leal 1(%[q]), %[q]\n\t"
				 "loopnz 1b\n\t"
				 "pushfl\n\tpopl %[f]"
				 : [q] "+r" (q), "+c" (c), [f] "=r" (f) : [v] "q" (val) : "cc");
	else
		__asm__ volatile("1:\tcmpb (%[q]), %[v]\n\t"
				 "leal 1(%[q]), %[q]\n\t"
				 "loopz 1b\n\t"
				 "pushfl\n\tpopl %[f]"
				 : [q] "+r" (q), "+c" (c), [f] "=r" (f) : [v] "q" (val) : "cc");
	*left = c;
	*adv = (uint32_t)(q - p);
	*fl = f;
}

static int jecxz_taken(uint32_t ecx)
{
	int r;

	__asm__ volatile("movl $1, %[r]\n\t"
			 "jecxz 1f\n\t"
			 "movl $0, %[r]\n"
			 "1:"
			 : [r] "=&r" (r) : "c" (ecx) : "cc");
	return r;
}

static void part3(void)
{
	static const uint32_t counts[] = { 1, 2, 7, 100, 65537 };
	static const uint8_t data[16] = { 7, 7, 7, 7, 7, 3, 7, 7, 1, 2, 3, 4, 5, 6, 9, 9 };
	unsigned i;

	printf("== loop\n");
	for (i = 0; i < sizeof(counts) / 4; i++) {
		uint32_t fin = (i & 1) ? (FL_ARITH | 2) : 2, fl;
		uint32_t n = count_loop(counts[i], fin, &fl);

		printf("loop ecx=%u: %u iterations, flags %s\n", counts[i], n, flagstr(fl, FL_ARITH));
	}
	printf("== loopz / loopnz\n");
	{
		static const struct { uint8_t val; uint32_t len; int nz; } t[] = {
			{ 7, 16, 0 }, { 7, 3, 0 }, { 9, 16, 0 }, { 3, 16, 1 }, { 9, 16, 1 },
			{ 0x42, 16, 1 }, { 7, 1, 1 }, { 7, 1, 0 },
		};

		for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
			uint32_t left, adv, fl;

			scan_loopz(data, t[i].len, t[i].val, t[i].nz, &left, &adv, &fl);
			printf("%s val=%u len=%u: advanced %u, ecx left %u, flags %s\n",
			       t[i].nz ? "loopnz" : "loopz", t[i].val, t[i].len, adv, left,
			       flagstr(fl, FL_ARITH));
		}
	}
	printf("== jecxz\n");
	printf("jecxz ecx=0: %d\n", jecxz_taken(0));
	printf("jecxz ecx=1: %d\n", jecxz_taken(1));
	printf("jecxz ecx=0x10000: %d\n", jecxz_taken(0x10000));
	printf("jecxz ecx=0xffffffff: %d\n", jecxz_taken(0xffffffff));
}

int main(void)
{
	part1();
	part2();
	part3();
	return 0;
}
