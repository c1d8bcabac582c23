/*
 * mxcsr.c - a signal handler that rewrites the saved MXCSR (round toward zero, every
 * SSE exception unmasked) in its frame: sigreturn hands it back to the program, whose
 * next frame shows it again, while x87 arithmetic (which MXCSR does not govern) goes
 * on as before. Under morph the forged value must stay the guest's: morph's own
 * floating point keeps its rounding and its masked exceptions (--stats still works).
 */
#include "rt.h"

#define SYS_rt_sigaction_ 174
#define SIGUSR1_ 10
#define SA_SIGINFO_ 4
#define SA_RESTORER_ 0x04000000



/* ucontext: 5 words, then sigcontext; its word 19 points at the FPU state, whose
   FXSAVE image starts at byte 112 (MXCSR at byte 24 of the image) */
#define UC_FPSTATE(uc) (((uint32_t *)(uc))[5 + 19])
#define FP_MXCSR(fp) (*(uint32_t *)((char *)(fp) + 112 + 24))

static volatile uint32_t seen;
static volatile int forge;

static void handler(int sig, void *si, void *uc)
{
	uint32_t fp = UC_FPSTATE(uc);
	if (!fp)
		return;
	seen = FP_MXCSR(fp);
	if (forge)
		FP_MXCSR(fp) = 0x6000; /* RZ, all exceptions unmasked, no flags */
}

static long double work(int n)
{
	volatile long double acc = 1.0L;
	for (int i = 1; i <= n; i++)
		acc = acc / 3.0L + (long double)i / 7.0L;
	return acc;
}

int main(void)
{
	struct ksigaction a = { (void *)handler, SA_SIGINFO_ | SA_RESTORER_, (void *)restore_rt, { 0, 0 } };
	rt_syscall(SYS_rt_sigaction_, SIGUSR1_, &a, 0, 8);
	long double before = work(200);
	forge = 1;
	sys_kill(sys_getpid(), SIGUSR1_);
	printf("mxcsr before forging: %x\n", seen & 0xffff);
	forge = 0;
	long double after = work(200);
	printf("x87 unchanged: %s (%d)\n", before == after ? "yes" : "NO", (int)(after * 1000000));
	sys_kill(sys_getpid(), SIGUSR1_);
	printf("mxcsr after forging: %x\n", seen);
	return 3;
}
