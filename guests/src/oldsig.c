/*
 * oldsig.c - the signal calls of the first i386 ABI, which a 64-bit kernel still serves
 * to 32-bit processes: signal (System V semantics: SA_RESETHAND | SA_NODEFER, the old
 * handler returned), sigaction with struct old_sigaction and a one-word mask,
 * sigprocmask on the mask's first word (SIG_SETMASK keeps signals 33 to 64),
 * sigpending, sgetmask and ssetmask (which clears the high word), sigsuspend; their
 * errors; and SIGKILL/SIGSTOP left out of the mask an action keeps (rt_sigaction too).
 */
#include "rt.h"

#define SYS_signal 48
#define SYS_sigaction 67
#define SYS_sgetmask 68
#define SYS_ssetmask 69
#define SYS_sigsuspend 72
#define SYS_sigpending 73
#define SYS_sigprocmask 126
#define SYS_rt_sigaction_ 174
#define SYS_rt_sigprocmask_ 175
#define SIGKILL_ 9
#define SIGUSR1_ 10
#define SIGUSR2_ 12
#define SIGSTOP_ 19
#define BIT(s) (1u << ((s) - 1))

struct old_sigaction {
	void *handler;
	uint32_t mask;
	uint32_t flags;
	void *restorer;
};

static const char *res(long r)
{
	return r == 0 ? "ok" : errno_str(r);
}

static volatile int hits, blocked_inside;

static void handler(int sig)
{
	hits++;
	blocked_inside = (int)(rt_syscall(SYS_sgetmask) & BIT(sig)) != 0;
}

static unsigned long long rt_mask(void)
{
	unsigned long long m = 0;
	rt_syscall(SYS_rt_sigprocmask_, 0, 0, &m, 8);
	return m;
}

int main(void)
{
	/* signal(): one delivery with the signal not blocked, then the default action. */
	fflush_stdout();
	long pid = sys_fork();
	if (pid == 0) {
		long old = rt_syscall(SYS_signal, SIGUSR1_, handler);
		sys_kill((int)sys_getpid(), SIGUSR1_);
		struct old_sigaction o;
		rt_syscall(SYS_sigaction, SIGUSR1_, 0, &o);
		printf("child: old handler %ld, %d hit(s), blocked inside %d, handler now %s, flags %#x\n", old, hits,
		       blocked_inside, o.handler == 0 ? "SIG_DFL" : "ours", o.flags);
		fflush_stdout();
		sys_kill((int)sys_getpid(), SIGUSR1_);
		rt_syscall(SYS_exit_group, 0);
	}
	int st;
	sys_waitpid((int)pid, &st, 0);
	printf("child ended: status %#x\n", st);
	printf("signal(SIGKILL): %s, signal(65): %s\n", res(rt_syscall(SYS_signal, SIGKILL_, handler)),
	       res(rt_syscall(SYS_signal, 65, handler)));

	/* sigaction with the old structure. */
	struct old_sigaction act = { (void *)handler, BIT(SIGUSR2_) | BIT(SIGKILL_) | BIT(SIGSTOP_), 0x10000000, 0 };
	struct old_sigaction oact;
	printf("sigaction: %s\n", res(rt_syscall(SYS_sigaction, SIGUSR1_, &act, 0)));
	long r = rt_syscall(SYS_sigaction, SIGUSR1_, 0, &oact);
	printf("read back: %s handler %s mask %#x flags %#x\n", res(r), oact.handler == (void *)handler ? "ours" : "other",
	       oact.mask, oact.flags);
	uint32_t rt[5];
	rt_syscall(SYS_rt_sigaction_, SIGUSR1_, 0, rt, 8);
	printf("rt_sigaction reads mask %#x %#x flags %#x\n", rt[3], rt[4], rt[1]);
	printf("sigaction(SIGSTOP, act): %s, (SIGSTOP, 0, oact): %s, (0): %s, bad act: %s, bad oact: %s\n",
	       res(rt_syscall(SYS_sigaction, SIGSTOP_, &act, 0)), res(rt_syscall(SYS_sigaction, SIGSTOP_, 0, &oact)),
	       res(rt_syscall(SYS_sigaction, 0, &act, 0)), res(rt_syscall(SYS_sigaction, SIGUSR2_, (void *)8, 0)),
	       res(rt_syscall(SYS_sigaction, SIGUSR2_, 0, (void *)8)));
	uint32_t rtact[5] = { (uint32_t)handler, 0, 0, BIT(SIGKILL_) | BIT(SIGUSR2_), 0x80 };
	rt_syscall(SYS_rt_sigaction_, SIGUSR2_, rtact, 0, 8);
	rt_syscall(SYS_rt_sigaction_, SIGUSR2_, 0, rt, 8);
	printf("rt_sigaction keeps mask %#x %#x\n", rt[3], rt[4]);

	/* sigprocmask on the first word; the high word kept by SIG_SETMASK. */
	unsigned long long hi = 1ull << 39;
	rt_syscall(SYS_rt_sigprocmask_, 0, &hi, 0, 8);
	uint32_t set = BIT(SIGUSR1_) | BIT(SIGKILL_), oset = 7;
	r = rt_syscall(SYS_sigprocmask, 0, &set, &oset);
	printf("SIG_BLOCK: %s old %#x, mask %#llx\n", res(r), oset, rt_mask());
	set = BIT(SIGUSR2_);
	r = rt_syscall(SYS_sigprocmask, 2, &set, &oset);
	printf("SIG_SETMASK: %s old %#x, mask %#llx\n", res(r), oset, rt_mask());
	r = rt_syscall(SYS_sigprocmask, 1, &set, 0);
	printf("SIG_UNBLOCK: %s, mask %#llx\n", res(r), rt_mask());
	printf("how 3: %s, bad set: %s, bad oset: %s\n", res(rt_syscall(SYS_sigprocmask, 3, &set, 0)),
	       res(rt_syscall(SYS_sigprocmask, 0, (void *)8, 0)), res(rt_syscall(SYS_sigprocmask, 0, 0, (void *)8)));

	/* sgetmask, ssetmask, sigpending, sigsuspend. */
	printf("sgetmask: %#lx\n", rt_syscall(SYS_sgetmask));
	long old = rt_syscall(SYS_ssetmask, BIT(SIGUSR2_) | BIT(SIGSTOP_));
	printf("ssetmask: old %#lx, mask %#llx\n", old, rt_mask());
	hits = 0;
	sys_kill((int)sys_getpid(), SIGUSR2_);
	uint32_t pend = 0;
	r = rt_syscall(SYS_sigpending, &pend);
	printf("sigpending: %s %#x, %d hit(s)\n", res(r), pend, hits);
	printf("sigpending bad: %s\n", res(rt_syscall(SYS_sigpending, (void *)8)));
	r = rt_syscall(SYS_sigsuspend, 0, 0, BIT(SIGUSR1_));
	printf("sigsuspend: %s, %d hit(s), mask after %#llx\n", res(r), hits, rt_mask());
	return 0;
}
