/*
 * fpu_frame.c - the x87 part of a signal frame as Linux makes it for a 32-bit task:
 * the legacy FSAVE header built from the FXSAVE image (control and status words with
 * their high halves set, the full tag word computed from the registers, the task's CS
 * and DS, the status word again, magic 0: FXSR state follows) and, at sigreturn, the
 * header folded back over the image, so that a handler's change to the header's
 * control word (alone) is the one the interrupted code gets. (The instruction and data
 * pointers are x87_env.c's, which is compared on Intel hosts only.) The signal arrives
 * 200 times, so that the code around it is translated.
 */
#include "sites.h"

#define SYS_rt_sigaction_ 174
#define SIGUSR1_ 10
#define SA_SIGINFO_ 4
#define SA_RESTORER_ 0x04000000

static volatile struct fsave_header hdr;
static volatile uint16_t fx_cw;

static void handler(int sig, void *si, void *uc)
{
	(void)sig;
	(void)si;
	uint32_t fp = UC_FPSTATE(uc);
	if (!fp)
		return;
	fx_cw = *(uint16_t *)(fp + 112);
	take_fsave_header(fp, &hdr);
}

static double x = 1.5, zero = 0.0;

int main(void)
{
	uint16_t cw0, cw = 0;
	__asm__ volatile("fnstcw %0" : "=m"(cw0));
	struct ksigaction act = { (void *)handler, SA_SIGINFO_ | SA_RESTORER_, (void *)restore_rt, { 0, 0 } };
	rt_syscall(SYS_rt_sigaction_, SIGUSR1_, &act, 0, 8);
	for (int k = 0; k < 200; k++) {
		/* Three registers: a valid one, a zero, and a special one (an infinity). */
		__asm__ volatile("fldl %0\n\tfldl %1\n\tfld1\n\tfdiv %%st(1), %%st\n\tfldl %0\n\tfsqrt"
				 :
				 : "m"(x), "m"(zero));
		sys_kill(sys_getpid(), SIGUSR1_);
		__asm__ volatile("fnstcw %0\n\tfninit\n\tfldcw %1" : "=m"(cw) : "m"(cw0));
	}
	printf("header: cw %08x sw %08x tag %08x CS %08x DS %08x status %04x magic %04x\n", hdr.env[0], hdr.env[1],
	       hdr.env[2], hdr.env[4], hdr.env[6], hdr.status, hdr.magic);
	printf("FXSAVE image: cw %04x\n", fx_cw);
	printf("control word after the handler: %04x\n", cw);
	return 0;
}
