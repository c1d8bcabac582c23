/*
 * misc.c - assorted integer instructions that the other programs do not
 * cover: BSWAP; MOVZX/MOVSX in all forms; LEA with every 32-bit
 * addressing form; ENTER (nesting levels 0..3) and LEAVE; the PUSH/POP
 * forms (imm8, imm32, imm16, memory, ESP itself, POP into ESP-relative
 * memory, PUSHA/POPA in both sizes, PUSHF/POPF incl. DF); CBW CWDE CWD CDQ;
 * XLAT; SAHF/LAHF; CMC CLC STC; and the BCD adjustments AAA AAS DAA DAS
 * AAM AAD.
 *
 * Stack-pointer related results are printed as differences, never as
 * addresses.  Flags the Intel SDM leaves undefined are masked: AAA/AAS
 * define only AF and CF; DAA/DAS leave OF undefined; AAM/AAD define only
 * SF ZF PF.
 */
#include "rt.h"

#define ALLF FL_ARITH

/* ---- bswap ---------------------------------------------------------------- */
static void test_bswap(void)
{
	static const uint32_t v[] = { 0x12345678, 0, 0xff000000, 0x80402010, 0xdeadbeef };
	unsigned i;

	printf("== bswap\n");
	for (i = 0; i < sizeof(v) / 4; i++) {
		uint32_t a = v[i], b = v[i], c = v[i];

		__asm__("bswap %0" : "+r" (a));
		__asm__("bswap %0" : "+a" (b));		/* 0f c8 */
		__asm__("bswap %0" : "+D" (c));		/* 0f cf */
		printf("bswap %08x = %08x %08x %08x\n", v[i], a, b, c);
	}
}

/* ---- movzx / movsx -------------------------------------------------------- */
static void test_movx(void)
{
	static const uint32_t v[] = { 0x00000000, 0x0000007f, 0x00000080, 0x000000ff,
				      0x00007fff, 0x00008000, 0x0000ffff, 0x89abcdef };
	unsigned i;

	printf("== movzx / movsx\n");
	for (i = 0; i < sizeof(v) / 4; i++) {
		uint32_t s = v[i], zbl, zwl, sbl, swl, zbw = 0x55555555, sbw = 0x55555555;
		uint32_t hz, hs, ax = v[i] << 8;
		volatile uint8_t m8 = (uint8_t)v[i];
		volatile uint16_t m16 = (uint16_t)v[i];
		uint32_t mzb, msb, mzw, msw, mzbw = 0xaaaaaaaa, msbw = 0xaaaaaaaa;

		__asm__("movzbl %b1, %0" : "=r" (zbl) : "q" (s));
		__asm__("movzwl %w1, %0" : "=r" (zwl) : "r" (s));
		__asm__("movsbl %b1, %0" : "=r" (sbl) : "q" (s));
		__asm__("movswl %w1, %0" : "=r" (swl) : "r" (s));
		__asm__("movzbw %b1, %w0" : "+r" (zbw) : "q" (s));
		__asm__("movsbw %b1, %w0" : "+r" (sbw) : "q" (s));
		/* source in a high byte register */
		__asm__("movzbl %%ah, %0" : "=r" (hz) : "a" (ax));
		__asm__("movsbl %%ah, %0" : "=r" (hs) : "a" (ax));
		/* memory sources */
		__asm__("movzbl %1, %0" : "=r" (mzb) : "m" (m8));
		__asm__("movsbl %1, %0" : "=r" (msb) : "m" (m8));
		__asm__("movzwl %1, %0" : "=r" (mzw) : "m" (m16));
		__asm__("movswl %1, %0" : "=r" (msw) : "m" (m16));
		__asm__("movzbw %1, %w0" : "+r" (mzbw) : "m" (m8));
		__asm__("movsbw %1, %w0" : "+r" (msbw) : "m" (m8));
		printf("%08x: zbl %08x zwl %08x sbl %08x swl %08x zbw %08x sbw %08x\n",
		       v[i], zbl, zwl, sbl, swl, zbw, sbw);
		printf("          ah: z %08x s %08x  mem: zbl %08x sbl %08x zwl %08x swl %08x zbw %08x sbw %08x\n",
		       hz, hs, mzb, msb, mzw, msw, mzbw, msbw);
	}
	/* same register as source and destination */
	{
		uint32_t x = 0x1234fe80;

		__asm__("movsbl %b0, %0" : "+q" (x));
		printf("movsbl al, eax (0x1234fe80): %08x\n", x);
		x = 0x1234fe80;
		__asm__("movzwl %w0, %0" : "+r" (x));
		printf("movzwl ax, eax (0x1234fe80): %08x\n", x);
	}
}

/* ---- lea -------------------------------------------------------------------- */
static void test_lea(void)
{
	uint32_t b = 0x10000, i = 0x30, r[16], esp_d, ebp_d;

	printf("== lea\n");
	__asm__("leal (%1), %0" : "=r" (r[0]) : "r" (b));
	__asm__("leal 0x7f(%1), %0" : "=r" (r[1]) : "r" (b));
	__asm__("leal -0x80(%1), %0" : "=r" (r[2]) : "r" (b));
	__asm__("leal 0x12345678(%1), %0" : "=r" (r[3]) : "r" (b));
	__asm__("leal (%1,%2), %0" : "=r" (r[4]) : "r" (b), "r" (i));
	__asm__("leal (%1,%2,2), %0" : "=r" (r[5]) : "r" (b), "r" (i));
	__asm__("leal 0x10(%1,%2,4), %0" : "=r" (r[6]) : "r" (b), "r" (i));
	__asm__("leal -0x1000(%1,%2,8), %0" : "=r" (r[7]) : "r" (b), "r" (i));
	__asm__("leal (,%1,8), %0" : "=r" (r[8]) : "r" (i));
	__asm__("leal 0x11223344(,%1,2), %0" : "=r" (r[9]) : "r" (i));
	__asm__("leal 0x11223344, %0" : "=r" (r[10]));		/* disp32 only */
	__asm__("leal -1(%1,%1,2), %0" : "=r" (r[11]) : "r" (i));	/* x*3 - 1 */
	__asm__("leal 0xfffff000(%1), %0" : "=r" (r[12]) : "r" (0x800));	/* wraps */
	r[13] = 0x99999999;
	__asm__("leaw 0x1234(%1), %w0" : "+r" (r[13]) : "r" (0xfffff00));	/* 16-bit dest */
	__asm__("leal (%%eax,%%eax), %0" : "=r" (r[14]) : "a" (0x40000001));
	__asm__("leal 8(%%esp), %0\n\tsubl %%esp, %0" : "=r" (esp_d));
	__asm__("leal -12(%%ebp), %0\n\tsubl %%ebp, %0" : "=r" (ebp_d));
	__asm__("leal 5(%%esp,%1,4), %0\n\tsubl %%esp, %0" : "=r" (r[15]) : "r" (i));
	printf("base %08x index %08x\n", b, i);
	printf("(b) %08x  7f(b) %08x  -80(b) %08x  12345678(b) %08x\n", r[0], r[1], r[2], r[3]);
	printf("(b,i) %08x  (b,i,2) %08x  10(b,i,4) %08x  -1000(b,i,8) %08x\n", r[4], r[5], r[6], r[7]);
	printf("(,i,8) %08x  11223344(,i,2) %08x  11223344 %08x  -1(i,i,2) %08x\n", r[8], r[9],
	       r[10], r[11]);
	printf("wrap %08x  leaw %08x  (eax,eax) %08x\n", r[12], r[13], r[14]);
	printf("8(esp)-esp %d  -12(ebp)-ebp %d  5(esp,i,4)-esp %d\n", (int)esp_d, (int)ebp_d,
	       (int)r[15]);
}

/* ---- enter / leave ------------------------------------------------------------ */
/*
 * enter_lN(fake_frame, out): with EBP pointing at fake_frame (a buffer of
 * known words), run "enter $12, $N", record the stack effects, "leave".
 *   out[0] = bytes ENTER took from ESP     out[1] = new EBP, as old ESP - EBP
 *   out[2..5] = words at new EBP, -4, -8, -12 (raw)
 *   out[6] = new EBP (raw)                 out[7] = ESP after LEAVE - old ESP
 *   out[8] = EBP after LEAVE (raw)
 */
#define ENTER_TEST(name, level)							\
	".text\n"								\
	".type " #name ", @function\n"						\
	#name ":\n\t"								\
	"pushl %ebp\n\tpushl %ebx\n\tpushl %esi\n\tpushl %edi\n\t"		\
	"movl 20(%esp), %ebp\n\t"						\
	"movl 24(%esp), %edi\n\t"						\
	"movl %esp, %esi\n\t"							\
	"enter $12, $" #level "\n\t"						\
	"movl %esi, %eax\n\tsubl %esp, %eax\n\tmovl %eax, 0(%edi)\n\t"		\
	"movl %esi, %eax\n\tsubl %ebp, %eax\n\tmovl %eax, 4(%edi)\n\t"		\
	"movl 0(%ebp), %eax\n\tmovl %eax, 8(%edi)\n\t"				\
	"movl -4(%ebp), %eax\n\tmovl %eax, 12(%edi)\n\t"			\
	"movl -8(%ebp), %eax\n\tmovl %eax, 16(%edi)\n\t"			\
	"movl -12(%ebp), %eax\n\tmovl %eax, 20(%edi)\n\t"			\
	"movl %ebp, 24(%edi)\n\t"						\
	"leave\n\t"								\
	"movl %esp, %eax\n\tsubl %esi, %eax\n\tmovl %eax, 28(%edi)\n\t"		\
	"movl %ebp, 32(%edi)\n\t"						\
	"movl %esi, %esp\n\t"							\
	"popl %edi\n\tpopl %esi\n\tpopl %ebx\n\tpopl %ebp\n\t"			\
	"ret\n"									\
	".size " #name ", . - " #name "\n"

__asm__(ENTER_TEST(enter_l0, 0) ENTER_TEST(enter_l1, 1) ENTER_TEST(enter_l2, 2)
	ENTER_TEST(enter_l3, 3));
void enter_l0(uint32_t *fake, uint32_t *out);
void enter_l1(uint32_t *fake, uint32_t *out);
void enter_l2(uint32_t *fake, uint32_t *out);
void enter_l3(uint32_t *fake, uint32_t *out);

/* Describe a raw stack word: a known constant, or a pointer into the fake
 * frame or relative to the new frame pointer. */
static void describe(uint32_t w, const uint32_t *fake, uint32_t newebp)
{
	if (w == (uint32_t)fake)
		printf(" fake_ebp");
	else if (w == newebp)
		printf(" new_ebp");
	else if (w >= 0xf0000000)
		printf(" %08x", w);
	else
		printf(" ?");
}

static void test_enter(void)
{
	static void (*const fn[4])(uint32_t *, uint32_t *) = { enter_l0, enter_l1, enter_l2, enter_l3 };
	int l;

	printf("== enter / leave\n");
	for (l = 0; l < 4; l++) {
		uint32_t frame[8] = { 0xf0000007, 0xf0000006, 0xf0000005, 0xf0000004,
				      0xf0000003, 0xf0000002, 0xf0000001, 0xf0000000 };
		uint32_t *fake = &frame[6];	/* [-4] = f0000002, [-8] = f0000003, ... */
		uint32_t out[9];
		int k;

		fn[l](fake, out);
		printf("enter $12, $%d: esp -= %u, ebp = old esp - %u; words at ebp, -4, -8, -12:",
		       l, out[0], out[1]);
		for (k = 0; k < 4; k++) {
			if (k > l)	/* below the pushed frame pointers: locals */
				printf(" (local)");
			else
				describe(out[2 + k], fake, out[6]);
		}
		printf("; leave: esp delta %d, ebp restored %s\n", (int)out[7],
		       out[8] == (uint32_t)fake ? "yes" : "no");
	}
}

/* ---- push / pop ------------------------------------------------------------------ */
/*
 * push_forms(out): out[] receives
 *  0: ESP decrement of "push $-2"      1: the value pushed (sign-extended imm8)
 *  2: value of "push $0x12345678"       3: ESP decrement of "pushw $0x9abc"
 *  4: EAX after "popw %ax" of it        5: copy made by "push m32; pop m32"
 *  6: "push %esp" pushed value - ESP after the push
 *  7: old ESP - ESP after "pop %esp" of (ESP-64)
 *  8: value left by "push A; push B; pop (%esp); pop"   9: net ESP change
 * 10: "push 4(%esp)" pushes the word that was at 4(%esp) before the push
 * 11: ESP decrement of "pushw %si"; 12: value of "popw 2(mem)" merge
 */
__asm__(
	".text\n"
	".type push_forms, @function\n"
	"push_forms:\n\t"
	"pushl %ebx\n\tpushl %esi\n\tpushl %edi\n\tpushl %ebp\n\t"
	"movl 20(%esp), %edi\n\t"
	"movl %esp, %esi\n\t"
	/* 0,1: push imm8 */
	"pushl $-2\n\t"
	"movl %esi, %eax\n\tsubl %esp, %eax\n\tmovl %eax, 0(%edi)\n\t"
	"popl %eax\n\tmovl %eax, 4(%edi)\n\t"
	/* 2: push imm32 */
	"pushl $0x12345678\n\tpopl %eax\n\tmovl %eax, 8(%edi)\n\t"
	/* 3,4: 16-bit push of an immediate and 16-bit pop */
	"movl $0x77777777, %eax\n\t"
	"pushw $0x9abc\n\t"
	"movl %esi, %ecx\n\tsubl %esp, %ecx\n\tmovl %ecx, 12(%edi)\n\t"
	"popw %ax\n\tmovl %eax, 16(%edi)\n\t"
	/* 5: push/pop memory */
	"pushl 4(%edi)\n\tpopl 20(%edi)\n\t"
	/* 6: push %esp pushes the value before the decrement */
	"pushl %esp\n\tmovl (%esp), %eax\n\tsubl %esp, %eax\n\tmovl %eax, 24(%edi)\n\t"
	"addl $4, %esp\n\t"
	/* 7: pop %esp loads ESP from the stack (no increment afterwards) */
	"leal -64(%esp), %eax\n\tpushl %eax\n\tpopl %esp\n\t"
	"movl %esi, %eax\n\tsubl %esp, %eax\n\tmovl %eax, 28(%edi)\n\t"
	"movl %esi, %esp\n\t"
	/* 8,9: pop into (%esp) addresses memory after the increment */
	"pushl $0xaaaa\n\tpushl $0xbbbb\n\tpopl (%esp)\n\tpopl %eax\n\t"
	"movl %eax, 32(%edi)\n\tmovl %esi, %eax\n\tsubl %esp, %eax\n\tmovl %eax, 36(%edi)\n\t"
	/* 10: push 4(%esp) uses ESP before the decrement for the address */
	"pushl $0x1111\n\tpushl $0x2222\n\tpushl 4(%esp)\n\tpopl %eax\n\tmovl %eax, 40(%edi)\n\t"
	"movl %esi, %esp\n\t"
	/* 11,12: 16-bit register push; 16-bit pop to memory keeps the rest */
	"movl $0x5678abcd, %esi\n\t"
	"movl %esp, %ebx\n\tpushw %si\n\tsubl %esp, %ebx\n\tmovl %ebx, 44(%edi)\n\t"
	"movl $0x11111111, 48(%edi)\n\tpopw 50(%edi)\n\t"
	"popl %ebp\n\tpopl %edi\n\tpopl %esi\n\tpopl %ebx\n\t"
	"ret\n"
	".size push_forms, . - push_forms\n");
void push_forms(uint32_t *out);

/*
 * pusha_test(out): registers loaded with constants, PUSHA, the eight
 * slots copied to out[0..7] (ESP slot as a difference to EBP, which holds
 * the ESP before PUSHA, EBP slot likewise), slots for EAX/ESP/EDI
 * altered, POPA, registers to out[8..13], ESP change in out[15].
 * out[16..21]: bytes taken by PUSHAW, then EAX ECX EDI ESI after POPAW
 * (upper halves must survive) and the ESP change.  The second argument
 * slot is used as scratch.
 */
__asm__(
	".text\n"
	".type pusha_test, @function\n"
	"pusha_test:\n\t"
	"pushl %ebx\n\tpushl %esi\n\tpushl %edi\n\tpushl %ebp\n\t"
	"movl %esp, %ebp\n\t"
	"movl $0x11111111, %eax\n\tmovl $0x22222222, %ecx\n\tmovl $0x33333333, %edx\n\t"
	"movl $0x44444444, %ebx\n\tmovl $0x66666666, %esi\n\tmovl $0x77777777, %edi\n\t"
	"pushal\n\t"
	"movl 20(%ebp), %eax\n\t"
	"movl 0(%esp), %ecx\n\tmovl %ecx, 0(%eax)\n\t"
	"movl 4(%esp), %ecx\n\tmovl %ecx, 4(%eax)\n\t"
	"movl 8(%esp), %ecx\n\tsubl %ebp, %ecx\n\tmovl %ecx, 8(%eax)\n\t"
	"movl 12(%esp), %ecx\n\tsubl %ebp, %ecx\n\tmovl %ecx, 12(%eax)\n\t"
	"movl 16(%esp), %ecx\n\tmovl %ecx, 16(%eax)\n\t"
	"movl 20(%esp), %ecx\n\tmovl %ecx, 20(%eax)\n\t"
	"movl 24(%esp), %ecx\n\tmovl %ecx, 24(%eax)\n\t"
	"movl 28(%esp), %ecx\n\tmovl %ecx, 28(%eax)\n\t"
	"movl $0xa0a0a0a0, 28(%esp)\n\t"	/* eax */
	"movl $0x0badf00d, 12(%esp)\n\t"	/* esp: ignored by popa */
	"movl $0xb0b0b0b0, 0(%esp)\n\t"		/* edi */
	"popal\n\t"
	"pushl %eax\n\t"
	"movl 20(%ebp), %eax\n\t"
	"popl 32(%eax)\n\t"
	"movl %ecx, 36(%eax)\n\tmovl %edx, 40(%eax)\n\tmovl %ebx, 44(%eax)\n\t"
	"movl %esi, 48(%eax)\n\tmovl %edi, 52(%eax)\n\t"
	"movl %ebp, %ecx\n\tsubl %esp, %ecx\n\tmovl %ecx, 60(%eax)\n\t"
	/* 16-bit forms */
	"movl $0x1111aaaa, %eax\n\tmovl $0x2222bbbb, %ecx\n\tmovl $0x3333cccc, %edx\n\t"
	"movl $0x4444dddd, %ebx\n\tmovl $0x6666eeee, %esi\n\tmovl $0x7777ffff, %edi\n\t"
	"pushaw\n\t"
	"movl %ebp, %eax\n\tsubl %esp, %eax\n\tmovl %eax, 24(%ebp)\n\t"	/* scratch arg */
	"movw $0x1234, 14(%esp)\n\t"		/* ax slot */
	"movw $0x5678, 0(%esp)\n\t"		/* di slot */
	"movl $0x9999aaaa, %ecx\n\t"
	"popaw\n\t"
	"pushl %eax\n\t"
	"movl 20(%ebp), %eax\n\t"
	"popl 68(%eax)\n\t"
	"movl %ecx, 72(%eax)\n\tmovl %edi, 76(%eax)\n\tmovl %esi, 80(%eax)\n\t"
	"movl %ebp, %ecx\n\tsubl %esp, %ecx\n\tmovl %ecx, 84(%eax)\n\t"
	"movl 24(%ebp), %ecx\n\tmovl %ecx, 64(%eax)\n\t"
	"movl %ebp, %esp\n\t"
	"popl %ebp\n\tpopl %edi\n\tpopl %esi\n\tpopl %ebx\n\t"
	"ret\n"
	".size pusha_test, . - pusha_test\n");
void pusha_test(uint32_t *out, uint32_t scratch);

static void test_push_pop(void)
{
	uint32_t out[32];
	uint32_t fl, df_seen, fw;
	int i;

	printf("== push / pop\n");
	memset(out, 0, sizeof(out));
	push_forms(out);
	printf("push $-2: esp -= %u, value %08x\n", out[0], out[1]);
	printf("push $0x12345678: %08x\n", out[2]);
	printf("pushw $0x9abc: esp -= %u; popw %%ax: eax %08x\n", out[3], out[4]);
	printf("push m32; pop m32: %08x\n", out[5]);
	printf("push %%esp: pushed value - new esp = %u\n", out[6]);
	printf("pop %%esp of esp-64: esp moved down %u\n", out[7]);
	printf("push A; push B; pop (%%esp); pop: %08x, esp change %u\n", out[8], out[9]);
	printf("push 4(%%esp): %08x\n", out[10]);
	printf("pushw %%si: esp -= %u; popw to upper half of a word: %08x\n", out[11], out[12]);

	memset(out, 0, sizeof(out));
	pusha_test(out, 0);
	printf("pusha slots (edi esi ebp-ebp0 esp-ebp0 ebx edx ecx eax):");
	for (i = 0; i < 8; i++)
		printf(" %08x", out[i]);
	printf("\npopa: eax %08x ecx %08x edx %08x ebx %08x esi %08x edi %08x, esp change %u\n",
	       out[8], out[9], out[10], out[11], out[12], out[13], out[15]);
	printf("pushaw: took %u bytes; popaw: eax %08x ecx %08x edi %08x esi %08x, esp change %u\n",
	       out[16], out[17], out[18], out[19], out[20], out[21]);

	/* DF through pushf/popf, and that a popf'd DF really steers movs */
	__asm__ volatile("std\n\tpushfl\n\tpopl %0\n\tcld" : "=r" (df_seen));
	printf("std -> pushf DF=%u\n", (df_seen >> 10) & 1);
	{
		char buf[8] = "abcdefg";
		char *s = buf + 3, *d = buf + 4;
		uint32_t in = 2 | FL_DF | FL_CF | FL_ZF;

		__asm__ volatile("pushl %[f]\n\tpopfl\n\tmovsb\n\tmovsb\n\tpushfl\n\tpopl %[o]\n\tcld"
				 : "+S" (s), "+D" (d), [o] "=r" (fl) : [f] "r" (in) : "memory", "cc");
		printf("popf DF=1: movsb twice -> \"%s\", esi moved %d, flags %s DF=%u\n", buf,
		       (int)(s - (buf + 3)), flagstr(fl, ALLF), (fl >> 10) & 1);
	}
	/* popf of all arithmetic flags plus DF, and back */
	__asm__ volatile("pushl %1\n\tpopfl\n\tpushfl\n\tpopl %0\n\tcld"
			 : "=r" (fl) : "r" ((uint32_t)(2 | FL_ARITH | FL_DF)) : "cc");
	printf("popf 0xcd7 -> %04x\n", fl & (FL_ARITH | FL_DF | 2));
	__asm__ volatile("pushl %1\n\tpopfl\n\tpushfl\n\tpopl %0"
			 : "=r" (fl) : "r" (0u) : "cc");
	printf("popf 0 -> %04x\n", fl & (FL_ARITH | FL_DF | 2));
	/* 16-bit pushf/popf */
	__asm__ volatile("pushl %1\n\tpopfl\n\tpushfw\n\tpopw %w0\n\t"
			 "pushw $0x08d5\n\tpopfw\n\tpushfl\n\tpopl %1"
			 : "=&r" (fw), "+r" (fl) : : "cc");
	printf("pushfw -> %04x; popfw 0x8d5 -> %04x\n", fw & 0x0dd7, fl & 0x0dd7);
}

/* ---- sign extension ------------------------------------------------------------------ */
static void test_cbw(void)
{
	static const uint32_t v[] = { 0x12345678, 0xabcd0080, 0x0000ff7f, 0xffff8000, 0x00017fff };
	unsigned i;

	printf("== cbw cwde cwd cdq\n");
	for (i = 0; i < sizeof(v) / 4; i++) {
		uint32_t a1 = v[i], a2 = v[i], a3 = v[i], a4 = v[i], d3 = 0x5555aaaa, d4 = 0x5555aaaa;

		__asm__("cbtw" : "+a" (a1));
		__asm__("cwtl" : "+a" (a2));
		__asm__("cwtd" : "+a" (a3), "+d" (d3));
		__asm__("cltd" : "+a" (a4), "+d" (d4));
		printf("%08x: cbw %08x cwde %08x cwd %08x:%08x cdq %08x:%08x\n", v[i], a1, a2, d3,
		       a3, d4, a4);
	}
}

/* ---- xlat -------------------------------------------------------------------------------- */
static void test_xlat(void)
{
	static uint8_t table[256];
	static const uint32_t v[] = { 0xaaaa0000, 0x12345601, 0x000000ff, 0xffffff80, 0x7f };
	unsigned i;

	printf("== xlat\n");
	for (i = 0; i < 256; i++)
		table[i] = (uint8_t)(i * 13 + 7);
	for (i = 0; i < sizeof(v) / 4; i++) {
		uint32_t a = v[i];

		__asm__("xlatb" : "+a" (a) : "b" (table) : "memory");
		printf("xlat %08x -> %08x\n", v[i], a);
	}
}

/* ---- sahf / lahf / cmc / clc / stc ---------------------------------------------------------- */
static void test_flag_ops(void)
{
	static const uint8_t ah[] = { 0x00, 0xff, 0xd5, 0x2a, 0x01, 0x40, 0x80, 0x04, 0x10 };
	unsigned i;
	int p;

	printf("== sahf / lahf\n");
	for (i = 0; i < sizeof(ah); i++) {
		for (p = 0; p < 2; p++) {
			uint32_t fin = p ? (ALLF | 2) : 2, fl, a = (uint32_t)ah[i] << 8 | 0x33;

			__asm__ volatile("pushl %[f]\n\tpopfl\n\tsahf\n\tpushfl\n\tpopl %[o]"
					 : [o] "=r" (fl) : "a" (a), [f] "r" (fin) : "cc");
			printf("sahf ah=%02x in=%s -> %s\n", ah[i], flagstr(fin, ALLF), flagstr(fl, ALLF));
		}
	}
	for (p = 0; p < 4; p++) {
		static const uint32_t fins[4] = { 2, 2 | ALLF, 2 | FL_CF | FL_ZF | FL_OF, 2 | FL_SF | FL_AF | FL_PF };
		uint32_t a = 0x12345678;

		__asm__ volatile("pushl %[f]\n\tpopfl\n\tlahf" : "+a" (a) : [f] "r" (fins[p]) : "cc");
		printf("lahf in=%s -> eax %08x\n", flagstr(fins[p], ALLF), a);
	}
	printf("== cmc / clc / stc\n");
	for (p = 0; p < 2; p++) {
		uint32_t fin = p ? (ALLF | 2) : 2, f1, f2, f3;

		__asm__ volatile("pushl %[f]\n\tpopfl\n\tcmc\n\tpushfl\n\tpopl %[o]" : [o] "=r" (f1) : [f] "r" (fin) : "cc");
		__asm__ volatile("pushl %[f]\n\tpopfl\n\tclc\n\tpushfl\n\tpopl %[o]" : [o] "=r" (f2) : [f] "r" (fin) : "cc");
		__asm__ volatile("pushl %[f]\n\tpopfl\n\tstc\n\tpushfl\n\tpopl %[o]" : [o] "=r" (f3) : [f] "r" (fin) : "cc");
		printf("in=%s: cmc %s clc %s stc %s\n", flagstr(fin, ALLF), flagstr(f1, ALLF),
		       flagstr(f2, ALLF), flagstr(f3, ALLF));
	}
}

/* ---- BCD ------------------------------------------------------------------------------------ */
#define DEF_BCD(name, insn)							\
static uint32_t name(uint32_t ax, uint32_t fin, uint32_t *fout)		\
{										\
	uint32_t fl;								\
	__asm__ volatile("pushl %[f]\n\tpopfl\n\t" insn "\n\tpushfl\n\tpopl %[o]" \
			 : "+a" (ax), [o] "=r" (fl) : [f] "r" (fin) : "cc");	\
	*fout = fl;								\
	return ax;								\
}
DEF_BCD(do_aaa, "aaa")
DEF_BCD(do_aas, "aas")
DEF_BCD(do_daa, "daa")
DEF_BCD(do_das, "das")
DEF_BCD(do_aam10, "aam")
DEF_BCD(do_aam16, ".byte 0xd4, 0x10")		/* aam with base 16 */
DEF_BCD(do_aam7, ".byte 0xd4, 0x07")
DEF_BCD(do_aad10, "aad")
DEF_BCD(do_aad16, ".byte 0xd5, 0x10")
DEF_BCD(do_aad3, ".byte 0xd5, 0x03")

static void test_bcd(void)
{
	static const struct {
		const char *name;
		uint32_t (*fn)(uint32_t, uint32_t, uint32_t *);
		uint32_t defined;
		int flag_inputs;	/* result depends on incoming CF/AF */
	} t[] = {
		{ "aaa", do_aaa, FL_AF | FL_CF, 1 },
		{ "aas", do_aas, FL_AF | FL_CF, 1 },
		{ "daa", do_daa, FL_CF | FL_AF | FL_SF | FL_ZF | FL_PF, 1 },
		{ "das", do_das, FL_CF | FL_AF | FL_SF | FL_ZF | FL_PF, 1 },
		{ "aam", do_aam10, FL_SF | FL_ZF | FL_PF, 0 },
		{ "aam 16", do_aam16, FL_SF | FL_ZF | FL_PF, 0 },
		{ "aam 7", do_aam7, FL_SF | FL_ZF | FL_PF, 0 },
		{ "aad", do_aad10, FL_SF | FL_ZF | FL_PF, 0 },
		{ "aad 16", do_aad16, FL_SF | FL_ZF | FL_PF, 0 },
		{ "aad 3", do_aad3, FL_SF | FL_ZF | FL_PF, 0 },
	};
	static const uint32_t fins[4] = { 2, 2 | FL_CF, 2 | FL_AF, 2 | FL_CF | FL_AF };
	unsigned k, al;
	int c;

	for (k = 0; k < sizeof(t) / sizeof(t[0]); k++) {
		if (t[k].flag_inputs)
			printf("== %s (eax = 5a5a:AH:AL; results for CF,AF in = 00 10 01 11)\n",
			       t[k].name);
		else
			printf("== %s (eax = 5a5a:AH:AL)\n", t[k].name);
		for (al = 0; al < 256; al++) {
			/* AAD also uses AH: vary it with AL */
			uint32_t ah = t[k].flag_inputs ? 0x37 : (al * 7) & 0xff;
			uint32_t ax = 0x5a5a0000 | ah << 8 | al;

			printf("%02x%02x:", ah, al);
			for (c = 0; c < (t[k].flag_inputs ? 4 : 1); c++) {
				/* other flags preset from the AL value */
				uint32_t fin = fins[c] | ((al & 1) ? FL_ZF | FL_SF | FL_PF | FL_OF : 0);
				uint32_t fl, r = t[k].fn(ax, fin, &fl);

				printf(" %08x %s", r, flagstr(fl, t[k].defined));
			}
			printf("\n");
		}
	}
}

int main(void)
{
	test_bswap();
	test_movx();
	test_lea();
	test_enter();
	test_push_pop();
	test_cbw();
	test_xlat();
	test_flag_ops();
	test_bcd();
	return 0;
}
