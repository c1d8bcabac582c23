/*
 * strings.c - the string instructions movs stos lods cmps scas in byte,
 * word and dword sizes, without prefix and with rep / repe / repne, going
 * up (DF=0, cld) and down (DF=1, std), including a count of zero and
 * overlapping copies where the byte-by-byte semantics of rep movs matter
 * (a memmove-style implementation would give different results), and short
 * rep movsl / rep stosl of every count to 36 (see test_short_rep).
 *
 * Printed: the resulting buffers, how far ESI/EDI moved and what is left
 * in ECX, EAX for lods, and after cmps/scas the six arithmetic flags (all
 * defined: they are those of the last comparison; with a zero count no
 * comparison happens and the preset flags must survive).  Pointers are
 * printed only as deltas, never as addresses.
 */
#include "rt.h"

struct regs {
	uint32_t esi, edi, ecx, eax, fl;
};

/*
 * Run one string instruction text with ESI/EDI/ECX/EAX and DF set up.
 * "std" goes first when down is set and "cld" always follows, because the
 * ABI requires DF clear outside this asm.
 */
#define DEF_STR(name, text)							\
static void name(struct regs *r, int down, uint32_t fin)			\
{										\
	uint32_t s = r->esi, d = r->edi, c = r->ecx, a = r->eax, fl;		\
	if (down)								\
		fin |= FL_DF;							\
	__asm__ volatile("pushl %[fin]\n\tpopfl\n\t" text "\n\t"		\
			 "pushfl\n\tpopl %[fl]\n\tcld"				\
			 : "+S" (s), "+D" (d), "+c" (c), "+a" (a), [fl] "=&r" (fl) \
			 : [fin] "r" (fin) : "cc", "memory");			\
	r->esi = s; r->edi = d; r->ecx = c; r->eax = a; r->fl = fl;		\
}

DEF_STR(movsb, "movsb")
DEF_STR(movsw, "movsw")
DEF_STR(movsl, "movsl")
DEF_STR(rep_movsb, "rep movsb")
DEF_STR(rep_movsw, "rep movsw")
DEF_STR(rep_movsl, "rep movsl")
DEF_STR(stosb, "stosb")
DEF_STR(rep_stosb, "rep stosb")
DEF_STR(rep_stosw, "rep stosw")
DEF_STR(rep_stosl, "rep stosl")
DEF_STR(lodsb, "lodsb")
DEF_STR(lodsw, "lodsw")
DEF_STR(lodsl, "lodsl")
DEF_STR(rep_lodsb, "rep lodsb")
DEF_STR(cmpsb, "cmpsb")
DEF_STR(cmpsw, "cmpsw")
DEF_STR(cmpsl, "cmpsl")
DEF_STR(repe_cmpsb, "repe cmpsb")
DEF_STR(repe_cmpsw, "repe cmpsw")
DEF_STR(repe_cmpsl, "repe cmpsl")
DEF_STR(repne_cmpsb, "repne cmpsb")
DEF_STR(scasb, "scasb")
DEF_STR(scasw, "scasw")
DEF_STR(scasl, "scasl")
DEF_STR(repne_scasb, "repne scasb")
DEF_STR(repne_scasw, "repne scasw")
DEF_STR(repe_scasb, "repe scasb")
DEF_STR(repe_scasl, "repe scasl")

typedef void (*str_fn)(struct regs *r, int down, uint32_t fin);

static uint8_t src[64], dst[64];

static void fill(void)
{
	int i;

	for (i = 0; i < 64; i++) {
		src[i] = (uint8_t)(0x40 + i);
		dst[i] = 0xee;
	}
}

static void show(const char *label, const uint8_t *buf, int n)
{
	printf("  %s:", label);
	while (n--)
		printf(" %02x", *buf++);
	printf("\n");
}

/* Set up registers pointing at offsets so, do in src/dst and run fn. */
static void run(const char *name, str_fn fn, int down, uint8_t *sbase, int so,
		uint8_t *dbase, int dof, uint32_t count, uint32_t eax, uint32_t fin,
		uint32_t flmask)
{
	struct regs r;

	r.esi = (uint32_t)(sbase + so);
	r.edi = (uint32_t)(dbase + dof);
	r.ecx = count;
	r.eax = eax;
	fn(&r, down, fin);
	printf("%s df=%d cnt=%u: dsi=%d ddi=%d ecx=%u eax=%08x fl=%s\n", name, down, count,
	       (int)(r.esi - (uint32_t)(sbase + so)), (int)(r.edi - (uint32_t)(dbase + dof)),
	       r.ecx, r.eax, flagstr(r.fl, flmask));
}

#define NONE 0
#define ALLF FL_ARITH

static void test_movs_stos(void)
{
	static const struct {
		const char *name;
		str_fn fn;
		int width, rep;
	} t[] = {
		{ "movsb", movsb, 1, 0 }, { "movsw", movsw, 2, 0 }, { "movsl", movsl, 4, 0 },
		{ "rep movsb", rep_movsb, 1, 1 }, { "rep movsw", rep_movsw, 2, 1 },
		{ "rep movsl", rep_movsl, 4, 1 },
		{ "stosb", stosb, 1, 0 }, { "rep stosb", rep_stosb, 1, 1 },
		{ "rep stosw", rep_stosw, 2, 1 }, { "rep stosl", rep_stosl, 4, 1 },
	};
	static const uint32_t counts[] = { 0, 1, 5 };
	unsigned i, c;
	int down;

	printf("== movs / stos\n");
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		for (down = 0; down < 2; down++) {
			for (c = 0; c < (t[i].rep ? 3u : 1u); c++) {
				uint32_t n = t[i].rep ? counts[c] : 7;

				fill();
				/* start in the middle so both directions stay inside */
				run(t[i].name, t[i].fn, down, src, 24, dst, 24, n, 0x11223344,
				    (c == 0 || (c & 1)) ? (ALLF | 2) : 2, ALLF);
				show("dst[16..48)", dst + 16, 32);
			}
		}
	}
}

static void test_overlap(void)
{
	int down, w;
	static const str_fn fns[3] = { rep_movsb, rep_movsw, rep_movsl };
	static const char *const names[3] = { "rep movsb", "rep movsw", "rep movsl" };

	printf("== overlapping rep movs (element by element semantics)\n");
	for (w = 0; w < 3; w++) {
		for (down = 0; down < 2; down++) {
			/* up: destination one element above the source, so the
			 * first element is replicated; down: the mirror image */
			int size = 1 << w, delta = down ? -size : size;

			fill();
			run(names[w], fns[w], down, src, 20, src, 20 + delta, 8, 0, 2, NONE);
			show("src[8..48)", src + 8, 40);
			/* non-overlapping-by-rule: destination 3 bytes away */
			fill();
			run(names[w], fns[w], down, src, 20, src, 20 + (down ? -3 : 3), 8, 0, 2, NONE);
			show("src[8..48)", src + 8, 40);
		}
	}
	/* a large forward copy that overlaps by one dword */
	fill();
	run("rep movsl big", rep_movsl, 0, src, 0, src, 4, 14, 0, 2, NONE);
	show("src[0..64)", src, 64);
}

static uint8_t big[512];

/* One count `n` of a short-rep sweep, going up and down with the flags preset both
   ways: `movs` at each of the `nd` distances `dists` from its source, then `stos`,
   starting `up_back` bytes back when going up. */
static void short_rep_count(const char *mname, str_fn movs, const char *sname, str_fn stos, uint32_t n,
			    const int *dists, unsigned nd, int up_back)
{
	unsigned d;
	int down, k, f;

	for (down = 0; down < 2; down++) {
		for (f = 0; f < 2; f++) {
			uint32_t fin = f ? (ALLF | 2) : 2;
			int back = down ? 0 : up_back;
			struct regs r;

			for (d = 0; d < nd; d++) {
				for (k = 0; k < 512; k++)
					big[k] = (uint8_t)(k * 13 + 7);
				r.esi = (uint32_t)(big + 256);
				r.edi = (uint32_t)(big + 256 + dists[d]);
				r.ecx = n;
				r.eax = 0;
				movs(&r, down, fin);
				printf("%s n=%u df=%d f=%d d=%d: %08x dsi=%d ddi=%d ecx=%u fl=%s\n", mname, n, down, f,
				       dists[d], fnv1a(big, 512), (int)(r.esi - (uint32_t)(big + 256)),
				       (int)(r.edi - (uint32_t)(big + 256 + dists[d])), r.ecx, flagstr(r.fl, ALLF));
			}
			for (k = 0; k < 512; k++)
				big[k] = (uint8_t)(k * 13 + 7);
			r.esi = 0;
			r.edi = (uint32_t)(big + 256 - back);
			r.ecx = n;
			r.eax = 0x9abcdef0;
			stos(&r, down, fin);
			printf("%s n=%u df=%d f=%d: %08x ddi=%d ecx=%u fl=%s\n", sname, n, down, f, fnv1a(big, 512),
			       (int)(r.edi - (uint32_t)(big + 256 - back)), r.ecx, flagstr(r.fl, ALLF));
		}
	}
}

/*
 * Short rep movsl / rep stosl, which a translator may run as wide loads and
 * stores instead of element by element: every count up to 36 and a few
 * beyond, going up and down, with the arithmetic flags preset all set and
 * all clear, and movsl at distances where overlap matters (including 1-3
 * bytes, where a dword copy and a byte copy differ) and where it does not.
 * One line per case: a checksum of the buffer, how far ESI/EDI moved, ECX
 * and the flags.
 */
static void test_short_rep(void)
{
	static const int dists[] = { -160, -64, -8, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 8, 64, 160 };
	static const uint32_t more[] = { 40, 63, 64, 65 };
	unsigned c;

	printf("== short rep movsl / rep stosl\n");
	for (c = 0; c < 37 + sizeof(more) / 4; c++)
		short_rep_count("movsl", rep_movsl, "stosl", rep_stosl, c < 37 ? c : more[c - 37], dists,
				sizeof(dists) / sizeof(dists[0]), 3);
}

/*
 * Short rep movsb / rep stosb, which a translator may run as single moves before
 * the host's `rep` (i686 glibc's memcpy and memset end with one of 0-3 bytes):
 * every count up to 9, going up and down, with the flags preset all set and all
 * clear, and movsb at distances where overlap matters and where it does not.
 */
static void test_short_rep_bytes(void)
{
	static const int dists[] = { -64, -3, -2, -1, 0, 1, 2, 3, 64 };
	unsigned n;

	printf("== short rep movsb / rep stosb\n");
	for (n = 0; n < 10; n++)
		short_rep_count("movsb", rep_movsb, "stosb", rep_stosb, n, dists, sizeof(dists) / sizeof(dists[0]), 0);
}

static void test_lods(void)
{
	static const struct {
		const char *name;
		str_fn fn;
	} t[] = {
		{ "lodsb", lodsb }, { "lodsw", lodsw }, { "lodsl", lodsl }, { "rep lodsb", rep_lodsb },
	};
	unsigned i;
	int down;

	printf("== lods\n");
	fill();
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		for (down = 0; down < 2; down++)
			run(t[i].name, t[i].fn, down, src, 30, dst, 0, 4, 0xa5a5a5a5,
			    down ? (ALLF | 2) : 2, ALLF);
}

static uint8_t bufa[48], bufb[48];

static void test_cmps(void)
{
	static const struct {
		const char *name;
		str_fn fn;
		int size, rep;
	} t[] = {
		{ "cmpsb", cmpsb, 1, 0 }, { "cmpsw", cmpsw, 2, 0 }, { "cmpsl", cmpsl, 4, 0 },
		{ "repe cmpsb", repe_cmpsb, 1, 1 }, { "repe cmpsw", repe_cmpsw, 2, 1 },
		{ "repe cmpsl", repe_cmpsl, 4, 1 }, { "repne cmpsb", repne_cmpsb, 1, 1 },
	};
	static const uint32_t counts[] = { 0, 1, 3, 10, 40 };
	unsigned i, c;
	int down, k;

	printf("== cmps\n");
	for (k = 0; k < 48; k++)
		bufa[k] = bufb[k] = (uint8_t)(k * 7);
	bufb[13] = 0x80;	/* first difference, a > b or a < b by position */
	bufb[30] = 0x00;
	bufb[31] = 0xff;
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		for (down = 0; down < 2; down++) {
			/* without a prefix only one comparison at the start */
			for (c = t[i].rep ? 0 : 4; c < sizeof(counts) / 4; c++) {
				uint32_t n = counts[c];
				int start = down ? 44 - t[i].size : 4;

				if ((uint32_t)t[i].size * n > 40)
					n = 40 / t[i].size;
				run(t[i].name, t[i].fn, down, bufa, start, bufb, start, n, 0,
				    (c == 0 || (c & 1)) ? (ALLF | 2) : 2, ALLF);
			}
		}
	}
}

static void test_scas(void)
{
	static const struct {
		const char *name;
		str_fn fn;
		uint32_t eax;
		int rep;
	} t[] = {
		{ "scasb", scasb, 0x41, 0 }, { "scasw", scasw, 0x4342, 0 },
		{ "scasl", scasl, 0x47464544, 0 },
		{ "scasb (equal)", scasb, 0x20, 0 },
		{ "repne scasb (find 0)", repne_scasb, 0, 1 },
		{ "repne scasb (find 0x4a)", repne_scasb, 0x4a, 1 },
		{ "repne scasb (absent)", repne_scasb, 0x99, 1 },
		{ "repne scasw (find 0x5554)", repne_scasw, 0x5554, 1 },
		{ "repe scasb (skip 0x20)", repe_scasb, 0x20, 1 },
		{ "repe scasl (skip 0x20202020)", repe_scasl, 0x20202020, 1 },
	};
	static uint8_t text[40];
	unsigned i, c;
	int down, k;

	printf("== scas\n");
	/* "    " then 0x44.. ascending, a NUL at 36 */
	for (k = 0; k < 40; k++)
		text[k] = (uint8_t)(k < 4 ? 0x20 : 0x40 + k);
	text[36] = 0;
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		int size = t[i].fn == repne_scasw || t[i].fn == scasw ? 2 :
			   t[i].fn == repe_scasl || t[i].fn == scasl ? 4 : 1;

		for (down = 0; down < 2; down++) {
			for (c = t[i].rep ? 0 : 2; c < 3; c++) {
				static const uint32_t counts[] = { 0, 6, 40 };
				uint32_t n = counts[c];

				if (n * size > 40)
					n = 40 / size;
				run(t[i].name, t[i].fn, down, text, 0, text, down ? 40 - size : 0,
				    n, t[i].eax, (c == 0 || (c & 1)) ? (ALLF | 2) : 2, ALLF);
			}
		}
	}
}

int main(void)
{
	test_movs_stos();
	test_overlap();
	test_short_rep();
	test_short_rep_bytes();
	test_lods();
	test_cmps();
	test_scas();
	return 0;
}
