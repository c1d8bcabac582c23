/*
 * fpu_switch.c - the x87 state on its way between translated code, the interpreter,
 * signal frames and a forked child. A hot loop keeps its accumulator on the x87 stack
 * and, a few times only, branches to code that runs too rarely to be translated and
 * reads that accumulator and the control word; hot code changes the precision and
 * rounding control, then code that runs once computes with them; a signal handler
 * reads the control word and a register from its frame and changes the control word,
 * which the interrupted code then computes with; a forked child computes with the
 * control word it inherited; x87 registers live across system calls made inside one
 * asm statement (getppid, write, clock_gettime, and an rt_sigprocmask that unblocks a
 * pending signal whose handler rewrites the control word in its frame), hot and cold.
 * (morph leaves the guest's x87 state in the host FPU when translated code returns to
 * the dispatcher, and across the system calls that do not touch it, and stores it back
 * only when the interpreter or the OS layer needs it.)
 */
#include "sites.h"

#define SYS_rt_sigaction_ 174
#define SYS_wait4_ 114
#define SIGUSR1_ 10
#define SA_SIGINFO_ 4
#define SA_RESTORER_ 0x04000000

/* UC_FPSTATE (sites.h) points at the FPU state: the legacy FSAVE part (control word
   in word 0, the registers from byte 28, 10 bytes each), then the FXSAVE image from
   byte 112. */

union ld {
	long double v;
	struct {
		uint32_t lo, hi;
		uint16_t se;
	} b;
};

static void show(const char *what, long double v)
{
	union ld u;
	u.v = v;
	printf("%s: %04x %08x %08x\n", what, u.b.se, u.b.hi, u.b.lo);
}

static uint16_t fcw(void)
{
	uint16_t cw;
	__asm__ volatile("fnstcw %0" : "=m"(cw));
	return cw;
}

static void set_fcw(uint16_t cw)
{
	__asm__ volatile("fldcw %0" : : "m"(cw));
}

/* The rare branch: runs `rare` times in all, far below a translator's threshold. */
static volatile long double seen_acc;
static volatile uint16_t seen_cw;
static volatile int rare_runs;

static long double spin(int n, int every)
{
	long double acc = 1.0L, step = 1.0L / 3.0L;
	for (int i = 1; i <= n; i++) {
		acc = acc * 0.999L + step;
		if (i % every == 0) {
			/* Cold: the accumulator is on the x87 stack here. */
			seen_acc = acc;
			__asm__ volatile("fnstcw %0" : "=m"(seen_cw));
			rare_runs++;
		}
	}
	return acc;
}

/* Called once: divides under whatever control word its caller left. */
static __attribute__((noinline)) long double third(void)
{
	volatile long double one = 1.0L, three = 3.0L;
	return one / three;
}

static volatile uint16_t handler_cw;
static volatile uint32_t handler_st0_hi;

static void handler(int sig, void *si, void *uc)
{
	(void)sig;
	(void)si;
	uint32_t fp = UC_FPSTATE(uc);
	if (!fp)
		return;
	uint32_t *fsave = (uint32_t *)fp;
	handler_cw = (uint16_t)fsave[0];
	handler_st0_hi = *(uint32_t *)((char *)fp + 28 + 4);
	/* Round toward zero from here on in the interrupted code (FSAVE and FXSAVE
	   control words both: Linux's sigreturn folds the FSAVE header over the FXSAVE
	   image, fpu_frame.c checks that alone). */
	uint16_t cw = (uint16_t)((fsave[0] & ~0xc00u) | 0xc00u);
	fsave[0] = (fsave[0] & 0xffff0000u) | cw;
	*(uint16_t *)((char *)fp + 112) = cw;
}

/* st(0) * st(1) of `x` and `y` loaded before system call `nr` (args in EBX, ECX,
   EDX; ESI 8, rt_sigprocmask's set size) and multiplied after it. */
static long double across(long nr, long b, long c, long d, long double x, long double y)
{
	long double r;
	long ret;
	__asm__ volatile("fldt %[y]\n\tfldt %[x]\n\tint $0x80\n\tfmulp\n\tfstpt %[r]"
			 : [r] "=m"(r), "=a"(ret)
			 : [x] "m"(x), [y] "m"(y), "a"(nr), "b"(b), "c"(c), "d"(d), "S"(8L)
			 : "memory", "st", "st(1)");
	(void)ret;
	return r;
}

static void syscalls_keep_x87(uint16_t cw0)
{
	uint32_t ts[4];
	long double acc = 0;
	for (int i = 0; i < 3000; i++) {
		acc += across(64 /* getppid */, 0, 0, 0, 1.0L / 3.0L, (long double)i);
		acc += across(403 /* clock_gettime64 */, 1, (long)ts, 0, 1.0L / 7.0L, 2.0L);
		acc += across(4 /* write */, 1, (long)"", 0, 0.1L, 3.0L);
	}
	show("x87 registers across system calls", acc);
	/* A signal made deliverable by the call itself: its handler runs before the
	   multiplication and sets rounding toward zero through its frame. */
	uint32_t set[2] = { 1u << (SIGUSR1_ - 1), 0 }, none[2] = { 0, 0 };
	rt_syscall(175 /* rt_sigprocmask */, 0 /* SIG_BLOCK */, set, 0, 8);
	set_fcw(cw0);
	sys_kill(sys_getpid(), SIGUSR1_);
	handler_cw = 0;
	long double r = across(175, 2 /* SIG_SETMASK */, (long)none, 0, 1.0L / 3.0L, 3.0L);
	show("x87 registers across a handler", r);
	printf("handler saw control word %04x, control word after it %04x\n", handler_cw, fcw());
	show("third after it", third());
	set_fcw(cw0);
}

int main(void)
{
	uint16_t cw0 = fcw();

	/* Hot code, cold reads of its x87 stack. */
	long double a = spin(20000, 2000);
	show("spin", a);
	show("seen at the last cold read", seen_acc);
	printf("cold reads %d, control word there %04x\n", rare_runs, seen_cw);

	/* A control word set by hot code, read by code that runs once. */
	for (int i = 0; i < 200; i++) {
		set_fcw((uint16_t)((cw0 & ~0x300u) | 0x000u)); /* 24-bit precision */
		a = spin(50, 1000) + a * 0.0L;
	}
	show("third at 24-bit precision", third());
	set_fcw(cw0);
	show("third at the start's precision", third());

	/* A signal handler reads and changes the control word in its frame. */
	struct ksigaction act = { (void *)handler, SA_SIGINFO_ | SA_RESTORER_, (void *)restore_rt, { 0, 0 } };
	rt_syscall(SYS_rt_sigaction_, SIGUSR1_, &act, 0, 8);
	for (int i = 0; i < 100; i++)
		a = spin(100, 1000);
	set_fcw((uint16_t)((cw0 & ~0x300u) | 0x200u)); /* 53-bit precision */
	sys_kill(sys_getpid(), SIGUSR1_);
	printf("handler saw control word %04x\n", handler_cw);
	printf("control word after the handler %04x\n", fcw());
	show("third rounded toward zero", third());
	show("spin rounded toward zero", spin(5000, 5000));
	syscalls_keep_x87(cw0);

	/* A forked child inherits the control word. */
	set_fcw((uint16_t)((cw0 & ~0x300u) | 0x000u));
	for (int i = 0; i < 100; i++)
		a = spin(100, 1000);
	fflush_stdout();
	long pid = sys_fork();
	if (pid == 0) {
		show("child: third", third());
		printf("child: control word %04x\n", fcw());
		fflush_stdout();
		_exit(0);
	}
	int st = 0;
	rt_syscall(SYS_wait4_, pid, &st, 0, 0);
	set_fcw(cw0);
	show("parent: third", third());
	printf("child status %d\n", st);
	return 0;
}
