/*
 * x87_env.c - the x87 instruction and data pointers where a program sees them: the
 * last instruction pointer (FIP) after control, non-control and MMX instructions,
 * each probe run often enough to be translated; fnstenv and fnsave in their 32- and
 * 16-bit forms; fldenv and frstor loading a FIP, fninit and fnsave clearing it; a
 * signal frame's legacy FSAVE header (as Linux makes it from the FXSAVE image: the
 * words with their high halves set, the full tag word, FIP, CS, FDP, DS) and its fold
 * back into the state at sigreturn (a handler's change to the header's control word
 * is the one that counts); the opcode, instruction and data pointers a SIGFPE handler
 * finds for an unmasked divide by zero, raised by an `fwait` or by the next x87
 * instruction; the FIP a SIGSEGV handler finds for a page fault in the middle of a run
 * of x87 instructions. Addresses are printed relative to labels and variables,
 * so that the static-PIE build prints the same.
 */
#include "sites.h"

#define SYS_rt_sigaction_ 174
#define SIGUSR1_ 10
#define SIGSEGV_ 11
#define SA_SIGINFO_ 4
#define SA_RESTORER_ 0x04000000

struct env32 {
	uint32_t cw, sw, tw, fip, fcs, fdp, fds;
};

static double x = 1.5, y = 2.25;
static uint16_t cw0;

/* Where FIP is after `ins`: at the instruction before it (kept), at it (set), or
   elsewhere (printed as an offset from `ins`). */
/* `reg` = the address of local label `lbl` (PIE or not: no absolute relocation). */
#define ADDR(lbl, reg) "call 9f\n9:\tpopl " reg "\n\taddl $(" lbl "-9b), " reg "\n\t"

#define PROBE(name, ins)                                                                    \
	static const char *probe_##name(void)                                               \
	{                                                                                   \
		struct env32 e;                                                             \
		uint32_t before, at;                                                        \
		__asm__ volatile("fninit\n\tfld1\n\tfld1\n1:\tfldz\n2:\t" ins "\n\tfnstenv %0\n\t" \
				 ADDR("1b", "%1") ADDR("2b", "%2") "fninit\n\temms"          \
				 : "=m"(e), "=&r"(before), "=&r"(at)                        \
				 : "m"(cw0)                                                 \
				 : "memory", "cc", "eax");                                  \
		return e.fip == at ? "sets FIP" : e.fip == before ? "keeps FIP" : "elsewhere";   \
	}

PROBE(fnop, "fnop")
PROBE(ffree, "ffree %%st(1)")
PROBE(fincstp, "fincstp")
PROBE(fxch, "fxch")
PROBE(fxam, "fxam")
PROBE(fstp, "fstp %%st(0)")
PROBE(fadd_mem, "faddl %3")
PROBE(fldcw, "fldcw %3")
PROBE(fnstcw, "fnstcw %3")
PROBE(fnstsw, "fnstsw %%ax")
PROBE(fnclex, "fnclex")
PROBE(fwait, "fwait")
PROBE(emms, "emms")
PROBE(movq, "movq %%mm0, %%mm1")
PROBE(paddd, "paddd %%mm0, %%mm1")

static const struct {
	const char *name;
	const char *(*fn)(void);
} probes[] = {
	{ "fnop", probe_fnop },		{ "ffree", probe_ffree },   { "fincstp", probe_fincstp },
	{ "fxch", probe_fxch },		{ "fxam", probe_fxam },	    { "fstp st0", probe_fstp },
	{ "fadd m64", probe_fadd_mem }, { "fldcw", probe_fldcw },   { "fnstcw", probe_fnstcw },
	{ "fnstsw ax", probe_fnstsw },	{ "fnclex", probe_fnclex }, { "fwait", probe_fwait },
	{ "emms", probe_emms },		{ "movq mm", probe_movq },  { "paddd mm", probe_paddd },
};

static const char *data_pointer(uint32_t fdp)
{
	return fdp == 0 ? "none" : fdp == (uint32_t)&x ? "x" : fdp == (uint32_t)&y ? "y" : "elsewhere";
}

/* fnstenv in its 32- and 16-bit forms after an fadd: FIP at the fadd (printed if
   `show`: the loop before makes it hot). */
static void environments(int show)
{
	struct env32 e;
	uint16_t e16[7];
	uint32_t at;
	__asm__ volatile("fldl %3\n1:\tfaddl %4\n\tfnstenv %0\n\tdata16 fnstenv %1\n\t" ADDR("1b", "%2")
			 "fstp %%st(0)\n\tfldcw %5"
			 : "=m"(e), "=m"(e16), "=&r"(at)
			 : "m"(x), "m"(y), "m"(cw0)
			 : "memory", "cc");
	if (!show)
		return;
	/* (Not the CS and DS words: hosts that keep them store their own, 64-bit mode's.) */
	printf("fnstenv: FIP %s, data pointer %s\n", e.fip == at ? "at the fadd" : "elsewhere", data_pointer(e.fdp));
	printf("16-bit fnstenv: FIP %s\n", e16[3] == (uint16_t)at ? "at the fadd" : "elsewhere");
}

/* fldenv and frstor load FIP; fninit and fnsave clear it; fnsave stores it. */
static void loads(void)
{
	struct env32 e, e2;
	uint32_t save[27], after[7], at;
	uint16_t save16[47];
	__asm__ volatile("fnstenv %0" : "=m"(e));
	e.fip = 0x12345678;
	__asm__ volatile("fldenv %1\n\tfnstenv %0\n\tfldcw %2" : "=m"(e2) : "m"(e), "m"(cw0) : "memory");
	printf("after fldenv: FIP %08x\n", e2.fip);
	__asm__ volatile("fninit\n\tfnstenv %0\n\tfldcw %1" : "=m"(e2) : "m"(cw0) : "memory");
	printf("after fninit: FIP %08x\n", e2.fip);
	__asm__ volatile("fld1\n1:\tfldz\n\tfnsave %0\n\tfnstenv %1\n\t" ADDR("1b", "%2")
			 : "=m"(save), "=m"(after), "=&r"(at)
			 :
			 : "memory", "cc");
	printf("fnsave: FIP %s, then %08x\n", save[3] == at ? "at the fldz" : "elsewhere", after[3]);
	save[3] = 0x0badcafe;
	__asm__ volatile("frstor %1\n\tfnstenv %0\n\tfninit\n\tfldcw %2" : "=m"(after) : "m"(save), "m"(cw0) : "memory");
	printf("after frstor: FIP %08x\n", after[3]);
	__asm__ volatile("fld1\n1:\tfchs\n\tdata16 fnsave %0\n\t" ADDR("1b", "%1") "fldcw %2"
			 : "=m"(save16), "=&r"(at)
			 : "m"(cw0)
			 : "memory", "cc");
	printf("16-bit fnsave: FIP %s\n", save16[3] == (uint16_t)at ? "at the fchs" : "elsewhere");
}

static volatile struct fsave_header hdr;
static volatile uint32_t fx_fip, label;

static void handler(int sig, void *si, void *uc)
{
	(void)sig;
	(void)si;
	uint32_t fp = UC_FPSTATE(uc);
	if (!fp)
		return;
	fx_fip = *(uint32_t *)(fp + 112 + 8);
	take_fsave_header(fp, &hdr);
}

static void signal_frame(void)
{
	struct ksigaction act = { (void *)handler, SA_SIGINFO_ | SA_RESTORER_, (void *)restore_rt, { 0, 0 } };
	rt_syscall(SYS_rt_sigaction_, SIGUSR1_, &act, 0, 8);
	uint32_t at;
	__asm__ volatile("fldl %1\n1:\tfsqrt\n\t" ADDR("1b", "%0") : "=&r"(at) : "m"(x) : "cc");
	label = at;
	sys_kill(sys_getpid(), SIGUSR1_);
	uint16_t cw;
	__asm__ volatile("fnstcw %0\n\tfstp %%st(0)\n\tfldcw %1" : "=m"(cw) : "m"(cw0));
	printf("frame header: cw %08x sw %08x tag %08x FIP %s CS %08x data pointer %s DS %08x status %04x magic %04x\n",
	       hdr.env[0], hdr.env[1], hdr.env[2], hdr.env[3] == label ? "at the fsqrt" : "elsewhere", hdr.env[4],
	       data_pointer(hdr.env[5]), hdr.env[6], hdr.status, hdr.magic);
	printf("frame FXSAVE image: FIP %s\n", fx_fip == label ? "at the fsqrt" : "elsewhere");
	printf("control word after the handler: %04x\n", cw);
}

static double zero = 0.0;
static volatile uint32_t fpe_fip, fpe_fdp;
static volatile uint16_t fpe_fop;
static volatile int fpe_code, fpe_count;

/* SIGFPE from an unmasked divide by zero: the pointers and opcode the frame's FXSAVE
   image holds; the exception flags are cleared in the header's status word (which
   sigreturn folds over the image) so that the `fwait` that raised it then completes. */
static void fpe_handler(int sig, void *si, void *uc)
{
	(void)sig;
	uint32_t fp = UC_FPSTATE(uc);
	fpe_code = SI_CODE(si);
	fpe_count++;
	if (!fp)
		return;
	fpe_fop = *(uint16_t *)(fp + 112 + 6);
	fpe_fip = *(uint32_t *)(fp + 112 + 8);
	fpe_fdp = *(uint32_t *)(fp + 112 + 16);
	*(uint32_t *)(fp + 4) &= ~0x80bfu;
}

/* Divides by zero with the zero-divide exception unmasked, by a memory operand (`mem`
   1) or a register (0); the `fwait` after raises SIGFPE. With `mem` 2, by a memory
   operand and the `fld1` right after raises it: inside one run of x87 instructions,
   where translated code has not stored the guest's pointers yet. Returns the divide's
   address. */
static uint32_t divide_by_zero(int mem)
{
	uint16_t cw = cw0 & ~0x4;
	uint32_t at;
	if (mem == 2)
		__asm__ volatile("fldcw %1\n\tfld1\n1:\tfdivl %2\n\tfld1\n\t" ADDR("1b", "%0")
				 "fstp %%st(0)\n\tfstp %%st(0)\n\tfldcw %3"
				 : "=&r"(at)
				 : "m"(cw), "m"(zero), "m"(cw0)
				 : "memory", "cc");
	else if (mem)
		__asm__ volatile("fldcw %1\n\tfld1\n1:\tfdivl %2\n\t" ADDR("1b", "%0") "fwait\n\tfstp %%st(0)\n\tfldcw %3"
				 : "=&r"(at)
				 : "m"(cw), "m"(zero), "m"(cw0)
				 : "memory", "cc");
	else
		__asm__ volatile("fldcw %1\n\tfldz\n\tfld1\n1:\tfdiv %%st(1), %%st\n\t" ADDR("1b", "%0")
				 "fwait\n\tfstp %%st(0)\n\tfstp %%st(0)\n\tfldcw %2"
				 : "=&r"(at)
				 : "m"(cw), "m"(cw0)
				 : "memory", "cc");
	return at;
}

static void exceptions(void)
{
	struct ksigaction act = { (void *)fpe_handler, SA_SIGINFO_ | SA_RESTORER_, (void *)restore_rt, { 0, 0 } };
	rt_syscall(SYS_rt_sigaction_, 8, &act, 0, 8);
	for (int mem = 2; mem >= 0; mem--) {
		uint32_t at = 0;
		int same = 1;
		uint16_t first = 0;
		for (int k = 0; k < 300; k++) {
			at = divide_by_zero(mem);
			if (k == 0)
				first = fpe_fop;
			same &= fpe_fop == first && fpe_fip == at;
		}
		printf("SIGFPE %d times, si_code %d, fdiv %s: FOP %03x, FIP %s, data pointer %s%s\n", fpe_count, fpe_code,
		       mem == 2 ? "m64, fld1 raising" : mem ? "m64" : "st(1)", fpe_fop, fpe_fip == at ? "at the fdiv" : "elsewhere",
		       fpe_fdp == (uint32_t)&zero ? "the divisor" : fpe_fdp == 0 ? "none" : "elsewhere",
		       same ? "" : " (not every time)");
		fpe_count = 0;
	}
}

/* A page fault inside a run of x87 instructions (`fldl` of address 0 after `fld1`,
   `fldz`): the FIP the SIGSEGV handler finds is the `fldz`'s, the faulting load having
   done nothing; the handler resumes after it. */
static volatile uint32_t segv_fip, segv_resume;

static void segv_handler(int sig, void *si, void *uc)
{
	(void)sig;
	(void)si;
	uint32_t fp = UC_FPSTATE(uc);
	segv_fip = fp ? *(uint32_t *)(fp + 112 + 8) : 0;
	UC_EIP(uc) = segv_resume;
}

static void page_fault(void)
{
	struct ksigaction act = { (void *)segv_handler, SA_SIGINFO_ | SA_RESTORER_, (void *)restore_rt, { 0, 0 } };
	rt_syscall(SYS_rt_sigaction_, SIGSEGV_, &act, 0, 8);
	uint32_t at = 0;
	int same = 1;
	for (int k = 0; k < 300; k++) {
		uint32_t resume;
		__asm__ volatile(ADDR("3f", "%1") "movl %1, %2\n\tfninit\n\tfld1\n1:\tfldz\n\tfldl (%3)\n3:\t"
				 ADDR("1b", "%0") "fninit"
				 : "=&r"(at), "=&r"(resume), "=m"(segv_resume)
				 : "r"(0)
				 : "memory", "cc");
		same &= segv_fip == at;
	}
	printf("SIGSEGV inside a run: FIP %s%s\n", segv_fip == at ? "at the fldz" : "elsewhere",
	       same ? "" : " (not every time)");
}

int main(void)
{
	__asm__ volatile("fnstcw %0" : "=m"(cw0));
	for (unsigned i = 0; i < sizeof probes / sizeof probes[0]; i++) {
		const char *first = probes[i].fn(), *r = first;
		int same = 1;
		for (int k = 0; k < 300; k++) {
			r = probes[i].fn();
			same &= r == first;
		}
		printf("%-10s %s%s\n", probes[i].name, r, same ? "" : " (not every time)");
	}
	for (int k = 0; k < 200; k++)
		environments(0);
	environments(1);
	loads();
	signal_frame();
	exceptions();
	page_fault();
	return 0;
}
