/*
 * fpu_frame.c - the x87 part of a signal frame as Linux makes it for a 32-bit task:
 * the legacy FSAVE header built from the FXSAVE image (control and status words with
 * their high halves set, the full tag word computed from the registers, the task's CS
 * and DS, the status word again, magic 0: FXSR state follows) and, at sigreturn, the
 * header folded back over the image, so that a handler's change to the header's
 * control word (alone) is the one the interrupted code gets. (The instruction and data
 * pointers are not printed: translated code's are the host's, see docs/results.md,
 * stop 38.) The signal arrives 200 times, so that the code around it is translated.
 */
#include "sites.h"

#define SYS_rt_sigaction_ 174
#define SIGUSR1_ 10
#define SA_SIGINFO_ 4
#define SA_RESTORER_ 0x04000000

static volatile uint32_t hdr[7];
static volatile uint16_t hdr_status, hdr_magic, fx_cw;

static void handler(int sig, void *si, void *uc)
{
	(void)sig;
	(void)si;
	uint32_t fp = UC_FPSTATE(uc);
	if (!fp)
		return;
	uint32_t *h = (uint32_t *)fp;
	for (int i = 0; i < 7; i++)
		hdr[i] = h[i];
	hdr_status = *(uint16_t *)(fp + 108);
	hdr_magic = *(uint16_t *)(fp + 110);
	fx_cw = *(uint16_t *)(fp + 112);
	/* 53-bit precision in the header's control word only. */
	h[0] = (h[0] & ~0x300u) | 0x200u;
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
	printf("header: cw %08x sw %08x tag %08x CS %08x DS %08x status %04x magic %04x\n", hdr[0], hdr[1], hdr[2],
	       hdr[4], hdr[6], hdr_status, hdr_magic);
	printf("FXSAVE image: cw %04x\n", fx_cw);
	printf("control word after the handler: %04x\n", cw);
	return 0;
}
