/*
 * sse.c - SSE and SSE2 on a model that has them (morph --cpu tm8600; the
 * TM5600 raises SIGILL at the first one, which tests/guests.rs checks too).
 *
 * Three parts, each run 60 times so that it is also translated:
 *  - compiler-generated scalar SSE2 arithmetic (the file is compiled for
 *    SSE2 with SSE floating point, by the pragma below): a sum of doubles
 *    and floats, printed as bits;
 *  - a table of packed instructions on 128-bit operand pairs, with register
 *    and (aligned) memory sources, and the instructions that move between
 *    XMM and general registers (movd, pmovmskb, movmskpd, pextrw, pinsrw,
 *    cvtsi2sd, cvttsd2si, cvtsd2si under each rounding mode), comisd and
 *    ucomisd (EFLAGS), stmxcsr/ldmxcsr, fxsave/fxrstor, maskmovdqu, movnti;
 *  - faults as a signal handler sees them: movaps from a misaligned address
 *    (#GP: SIGSEGV, SI_KERNEL, address 0), fxsave to one, ldmxcsr of a
 *    reserved bit, and divsd by zero with the zero-divide exception unmasked
 *    (#XM: SIGFPE, FPE_FLTDIV, trapno 19, the flags in the frame's MXCSR,
 *    the destination unchanged), also a divpd whose other element is inexact
 *    (only the divide-by-zero flag: found before computing, it stops it).
 */
#pragma GCC target("sse2,fpmath=sse")
#include "sites.h"

#define SYS_rt_sigaction_ 174
#define SIGSEGV_ 11
#define SIGFPE_ 8
#define SA_SIGINFO_ 4
#define SA_RESTORER_ 0x04000000

#define FP_MXCSR(fp) (*(uint32_t *)((char *)(fp) + 112 + 24))

typedef struct {
	uint32_t w[4];
} __attribute__((aligned(16))) v128;

/* ----- scalar arithmetic the compiler emits ----- */

static double dsum(int n)
{
	double s = 0.5;
	for (int i = 1; i <= n; i++)
		s = s * 0.999 + (double)i / (double)(i + 3) - (double)(i & 7) * 0.125;
	return s;
}

static float fsum(int n)
{
	float s = 1.0f;
	for (int i = 1; i <= n; i++)
		s = s / 1.5f + (float)i * 0.25f;
	return s;
}

/* ----- packed operations ----- */

#define DEF_RR(name, insn)                                                          \
	static void name(v128 *r, const v128 *a, const v128 *b)                     \
	{                                                                           \
		__asm__ volatile("movdqa %1, %%xmm0\n\tmovdqa %2, %%xmm1\n\t" insn  \
				 " %%xmm1, %%xmm0\n\tmovdqa %%xmm0, %0"             \
				 : "=m"(*r)                                         \
				 : "m"(*a), "m"(*b)                                 \
				 : "xmm0", "xmm1");                                 \
	}
#define DEF_RM(name, insn)                                                          \
	static void name(v128 *r, const v128 *a, const v128 *b)                     \
	{                                                                           \
		__asm__ volatile("movdqa %1, %%xmm6\n\t" insn " %2, %%xmm6\n\t"     \
				 "movdqa %%xmm6, %0"                                \
				 : "=m"(*r)                                         \
				 : "m"(*a), "m"(*b)                                 \
				 : "xmm6");                                         \
	}
#define DEF_OP(op) DEF_RR(op##_rr, #op) DEF_RM(op##_rm, #op)

DEF_OP(paddq) DEF_OP(psubq) DEF_OP(pmuludq) DEF_OP(pmaddwd) DEF_OP(psadbw)
DEF_OP(packssdw) DEF_OP(packuswb) DEF_OP(punpckhqdq) DEF_OP(punpcklbw)
DEF_OP(pcmpgtd) DEF_OP(pavgb) DEF_OP(pminub) DEF_OP(pmaxsw) DEF_OP(pmulhuw)
DEF_OP(addpd) DEF_OP(mulps) DEF_OP(divpd) DEF_OP(minpd) DEF_OP(maxps)
DEF_OP(andnpd) DEF_OP(unpcklps) DEF_OP(cmpltpd) DEF_OP(sqrtpd) DEF_OP(cvtps2dq)
DEF_OP(cvtdq2ps) DEF_OP(cvtpd2ps) DEF_OP(subsd) DEF_OP(rcpps)

typedef void (*op_fn)(v128 *, const v128 *, const v128 *);
#define ENTRY(op) { #op, op##_rr, op##_rm }
static const struct {
	const char *name;
	op_fn rr, rm;
} ops[] = {
	ENTRY(paddq), ENTRY(psubq), ENTRY(pmuludq), ENTRY(pmaddwd), ENTRY(psadbw),
	ENTRY(packssdw), ENTRY(packuswb), ENTRY(punpckhqdq), ENTRY(punpcklbw),
	ENTRY(pcmpgtd), ENTRY(pavgb), ENTRY(pminub), ENTRY(pmaxsw), ENTRY(pmulhuw),
	ENTRY(addpd), ENTRY(mulps), ENTRY(divpd), ENTRY(minpd), ENTRY(maxps),
	ENTRY(andnpd), ENTRY(unpcklps), ENTRY(cmpltpd), ENTRY(sqrtpd), ENTRY(cvtps2dq),
	ENTRY(cvtdq2ps), ENTRY(cvtpd2ps), ENTRY(subsd), ENTRY(rcpps),
};

static const v128 pairs[][2] = {
	{ { { 0x01020304, 0x7fffffff, 0x80000000, 0xfffffffe } }, { { 0x10203040, 0x00000001, 0xffffffff, 0x00000003 } } },
	{ { { 0x00000000, 0x3ff00000, 0x9999999a, 0xc00b9999 } }, { { 0x00000000, 0x40080000, 0x00000000, 0x00000000 } } },
	{ { { 0x3f800000, 0xc0490fdb, 0x7f800000, 0x00000001 } }, { { 0x40000000, 0x3f000000, 0xff800000, 0x7fc00000 } } },
	{ { { 0xff00ff00, 0x00ff00ff, 0x80808080, 0x7f7f7f7f } }, { { 0x0f0f0f0f, 0xf0f0f0f0, 0x01010101, 0xfefefefe } } },
};

static uint32_t hash;
static void mix(uint32_t v)
{
	hash = (hash ^ v) * 16777619u;
}

static void packed(int print)
{
	for (unsigned i = 0; i < sizeof ops / sizeof ops[0]; i++) {
		uint32_t h0 = hash;
		for (unsigned p = 0; p < sizeof pairs / sizeof pairs[0]; p++) {
			v128 r1, r2;
			ops[i].rr(&r1, &pairs[p][0], &pairs[p][1]);
			ops[i].rm(&r2, &pairs[p][0], &pairs[p][1]);
			for (int k = 0; k < 4; k++) {
				mix(r1.w[k]);
				mix(r2.w[k]);
			}
		}
		if (print)
			printf("%-10s %08x\n", ops[i].name, hash ^ h0);
	}
}

/* ----- general registers, flags, MXCSR, the FXSAVE image ----- */

static uint32_t eflags_of_comisd(double a, double b, int unordered)
{
	uint32_t f;
	if (unordered)
		__asm__ volatile("movsd %1, %%xmm2\n\tmovsd %2, %%xmm3\n\tucomisd %%xmm3, %%xmm2\n\t"
				 "pushfl\n\tpopl %0"
				 : "=r"(f)
				 : "m"(a), "m"(b)
				 : "xmm2", "xmm3", "cc");
	else
		__asm__ volatile("movsd %1, %%xmm2\n\tcomisd %2, %%xmm2\n\tpushfl\n\tpopl %0"
				 : "=r"(f)
				 : "m"(a), "m"(b)
				 : "xmm2", "cc");
	return f & 0x8d5;
}

static void moves(int print)
{
	v128 v = { { 0x80ff017f, 0x12345678, 0xfedcba98, 0x00ff8001 } };
	uint32_t mask, lo, w3, movmsk, t;
	v128 ins;
	__asm__ volatile("movdqa %[v], %%xmm5\n\tpmovmskb %%xmm5, %[m]\n\tmovd %%xmm5, %[lo]\n\t"
			 "pextrw $3, %%xmm5, %[w]\n\tmovmskpd %%xmm5, %[mm]\n\t"
			 "movl $0xbeef, %[t]\n\tpinsrw $5, %[t], %%xmm5\n\tmovdqa %%xmm5, %[ins]"
			 : [m] "=r"(mask), [lo] "=r"(lo), [w] "=r"(w3), [mm] "=r"(movmsk), [t] "=&r"(t), [ins] "=m"(ins)
			 : [v] "m"(v)
			 : "xmm5");
	if (print)
		printf("pmovmskb %x movd %x pextrw %x movmskpd %x pinsrw %08x %08x\n", mask, lo, w3, movmsk, ins.w[2],
		       ins.w[3]);
	mix(mask + lo + w3 + movmsk + ins.w[2]);

	/* cvtsd2si under each rounding mode, cvttsd2si, cvtsi2sd */
	static const double xs[] = { 2.5, -2.5, 3.7, -0.5, 2147483648.0, -1e300 };
	uint32_t mxcsr0;
	__asm__ volatile("stmxcsr %0" : "=m"(mxcsr0));
	for (unsigned i = 0; i < sizeof xs / sizeof xs[0]; i++) {
		int32_t r[4], tr;
		for (uint32_t rc = 0; rc < 4; rc++) {
			uint32_t m = (mxcsr0 & ~0x6000u) | rc << 13;
			__asm__ volatile("ldmxcsr %1\n\tcvtsd2si %2, %0" : "=r"(r[rc]) : "m"(m), "m"(xs[i]));
		}
		__asm__ volatile("ldmxcsr %2\n\tcvttsd2si %1, %0" : "=r"(tr) : "m"(xs[i]), "m"(mxcsr0));
		double back;
		__asm__ volatile("cvtsi2sd %1, %%xmm4\n\tmovsd %%xmm4, %0" : "=m"(back) : "r"(r[0]) : "xmm4");
		uint32_t flags;
		__asm__ volatile("stmxcsr %0" : "=m"(flags));
		if (print)
			printf("cvt %d: %d %d %d %d trunc %d back %d mxcsr %x\n", (int)i, r[0], r[1], r[2], r[3], tr,
			       (int)back, flags);
		mix((uint32_t)r[0] ^ (uint32_t)r[3] ^ (uint32_t)tr);
		__asm__ volatile("ldmxcsr %0" : : "m"(mxcsr0)); /* flags cleared again */
	}

	double nan = __builtin_nan("");
	uint32_t f1 = eflags_of_comisd(1.0, 2.0, 0), f2 = eflags_of_comisd(2.0, 1.0, 0),
		 f3 = eflags_of_comisd(1.0, 1.0, 0), f4 = eflags_of_comisd(nan, 1.0, 1);
	if (print)
		printf("comisd lt %x gt %x eq %x ucomisd nan %x\n", f1, f2, f3, f4);
	mix(f1 + f2 + f3 + f4);

	/* fxsave: MXCSR and XMM7 in the image; fxrstor of a changed XMM7 */
	static uint8_t img[512] __attribute__((aligned(16)));
	v128 seven = { { 0x11111111, 0x22222222, 0x33333333, 0x44444444 } }, got;
	memset(img + 288, 0xa5, 512 - 288); /* a 32-bit fxsave leaves them alone */
	__asm__ volatile("movdqa %1, %%xmm7\n\tfxsave %0" : "=m"(img) : "m"(seven) : "xmm7");
	int untouched = 0;
	for (int k = 288; k < 512; k++)
		untouched += img[k] == 0xa5;
	uint32_t img_mxcsr = *(uint32_t *)(img + 24), img_x7 = *(uint32_t *)(img + 160 + 7 * 16 + 4);
	*(uint32_t *)(img + 160 + 7 * 16) = 0xcafef00d;
	__asm__ volatile("fxrstor %1\n\tmovdqa %%xmm7, %0" : "=m"(got) : "m"(img) : "xmm7");
	if (print)
		printf("fxsave mxcsr %x xmm7.1 %x untouched %d fxrstor xmm7.0 %x\n", img_mxcsr, img_x7, untouched,
		       got.w[0]);
	mix(got.w[0] + img_x7);

	/* maskmovdqu (stores through [edi] the bytes whose mask bit is set), movnti */
	static uint8_t buf[32] __attribute__((aligned(16)));
	for (int k = 0; k < 32; k++)
		buf[k] = (uint8_t)k;
	v128 data = { { 0xa1a2a3a4, 0xb1b2b3b4, 0xc1c2c3c4, 0xd1d2d3d4 } };
	v128 sel = { { 0x80000080, 0x00800000, 0x80808080, 0x00000000 } };
	uint8_t *dst = buf + 3;
	__asm__ volatile("movdqu %1, %%xmm1\n\tmovdqu %2, %%xmm2\n\tmaskmovdqu %%xmm2, %%xmm1\n\tsfence"
			 : "+D"(dst)
			 : "m"(data), "m"(sel)
			 : "xmm1", "xmm2", "memory");
	uint32_t nt = 0x5eed;
	__asm__ volatile("movnti %1, %0\n\tmfence\n\tlfence" : "=m"(*(uint32_t *)(buf + 24)) : "r"(nt));
	uint32_t bh = fnv1a(buf, 32);
	if (print)
		printf("maskmovdqu+movnti %08x\n", bh);
	mix(bh);
}

/* ----- faults ----- */

__asm__(".text\n"
	SITE(movaps_misaligned, "\tmovl 4(%esp), %ecx\n\tincl %ecx", "movaps (%ecx), %xmm0")
	SITE(paddd_misaligned, "\tmovl 4(%esp), %ecx\n\taddl $8, %ecx", "paddd (%ecx), %xmm0")
	SITE(movups_misaligned, "\tmovl 4(%esp), %ecx\n\tincl %ecx", "movups (%ecx), %xmm0")
	SITE(fxsave_misaligned, "\tmovl 4(%esp), %ecx\n\taddl $4, %ecx", "fxsave (%ecx)")
	SITE(ldmxcsr_reserved, "\tmovl 4(%esp), %ecx", "ldmxcsr 64(%ecx)")
	SITE(divsd_zero, "\tmovl 4(%esp), %ecx\n\tldmxcsr 68(%ecx)\n\tmovsd 80(%ecx), %xmm3\n"
		"\txorpd %xmm4, %xmm4", "divsd %xmm4, %xmm3")
	SITE(divsd_zero_masked, "\tmovl 4(%esp), %ecx\n\tmovsd 80(%ecx), %xmm3\n\txorpd %xmm4, %xmm4",
		"divsd %xmm4, %xmm3")
	SITE(divpd_zero_inexact, "\tmovl 4(%esp), %ecx\n\tldmxcsr 68(%ecx)\n\tmovapd 96(%ecx), %xmm3\n"
		"\tmovapd 112(%ecx), %xmm4", "divpd %xmm4, %xmm3"));

DECL(movaps_misaligned) DECL(paddd_misaligned) DECL(movups_misaligned) DECL(fxsave_misaligned)
DECL(ldmxcsr_reserved) DECL(divsd_zero) DECL(divsd_zero_masked) DECL(divpd_zero_inexact)

static const struct site sites[] = {
	S(movaps_misaligned), S(paddd_misaligned), S(movups_misaligned), S(fxsave_misaligned),
	S(ldmxcsr_reserved), S(divsd_zero), S(divsd_zero_masked), S(divpd_zero_inexact),
};

/* 64 bytes of operand, then (at 64) an MXCSR with a reserved bit, (at 68) one
   with the zero-divide exception unmasked, (at 80) the dividend, (at 96 and 112)
   a packed dividend and divisor {7, 7} / {0, 3}: the first element divides by
   zero (found before computing), the second is inexact (found after), and the
   hardware flags only the first when the zero-divide is unmasked */
static uint8_t area[1024] __attribute__((aligned(16)));

static const uint32_t mxcsr_default = 0x1f80;
static const struct site *cur;
static volatile struct fault seen;
static volatile uint32_t got_mxcsr, got_high;

static void handler(int sig, void *si, void *uc)
{
	fault_seen(&seen, sig, si, uc);
	uint32_t fp = UC_FPSTATE(uc);
	got_mxcsr = fp ? FP_MXCSR(fp) : 0xdead;
	/* a 32-bit task has no XMM8-15: that part of the frame's image is zero */
	got_high = 0;
	for (int k = 288; fp && k < 464; k++)
		got_high += ((uint8_t *)fp)[112 + k] != 0;
	if (fp)
		FP_MXCSR(fp) = 0x1f80; /* masked again, flags cleared, for the program after */
	UC_EIP(uc) = (uint32_t)cur->after;
}

static void faults(void)
{
	struct ksigaction a = { (void *)handler, SA_SIGINFO_ | SA_RESTORER_, (void *)restore_rt, { 0, 0 } };
	rt_syscall(SYS_rt_sigaction_, SIGSEGV_, &a, 0, 8);
	rt_syscall(SYS_rt_sigaction_, SIGFPE_, &a, 0, 8);
	*(uint32_t *)(area + 64) = 0x1f80 | 0x10000; /* reserved bit 16 */
	*(uint32_t *)(area + 68) = 0x1f80 & ~0x200u; /* ZM clear */
	*(double *)(area + 80) = 7.0;
	*(double *)(area + 96) = 7.0;
	*(double *)(area + 104) = 7.0;
	*(double *)(area + 112) = 0.0;
	*(double *)(area + 120) = 3.0;
	for (int round = 0; round < 60; round++) {
		for (unsigned i = 0; i < sizeof sites / sizeof sites[0]; i++) {
			cur = &sites[i];
			seen.sig = 0;
			got_mxcsr = 0;
			call_site(cur->fn, (uint32_t)area);
			uint32_t after;
			__asm__ volatile("stmxcsr %0" : "=m"(after));
			double x3;
			__asm__ volatile("movsd %%xmm3, %0" : "=m"(x3));
			__asm__ volatile("ldmxcsr %0" : : "m"(mxcsr_default));
			if (round != 0 && round != 59)
				continue;
			printf("%-18s sig %2d code %#5x addr %s trapno %2d err %#x eip %s frame mxcsr %x high %u after %x xmm3 %d\n",
			       cur->name, seen.sig, seen.code,
			       seen.addr == 0 ? "0" : seen.addr == (uint32_t)cur->at ? "at" : "other", seen.trapno,
			       seen.err, seen.eip == (uint32_t)cur->at ? "at" : seen.sig ? "other" : "-", got_mxcsr, got_high, after,
			       x3 > 1e300 ? 999 : (int)x3);
			fflush_stdout();
		}
	}
}

int main(void)
{
	double d = 0;
	float f = 0;
	for (int r = 0; r < 60; r++) {
		d += dsum(500 + r);
		f += fsum(100 + r);
		packed(r == 59);
		moves(r == 0 || r == 59);
	}
	uint64_t db;
	uint32_t fb;
	memcpy(&db, &d, 8);
	memcpy(&fb, &f, 4);
	printf("doubles %08x%08x floats %08x hash %08x\n", (uint32_t)(db >> 32), (uint32_t)db, fb, hash);
	faults();
	return 0;
}
