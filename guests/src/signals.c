/*
 * signals.c - signal delivery as Linux i386 does it, checked against native:
 * faults (SIGSEGV, SIGFPE, SIGILL) delivered to SA_SIGINFO handlers with the
 * exact faulting EIP in the ucontext and the right si_code/si_addr, resumed by
 * editing the saved EIP; legacy (non-SA_SIGINFO) frames and sigreturn;
 * blocked and pending signals; sigaltstack; SA_RESETHAND; fork, pipes and
 * wait statuses for exits and signals; SIGCHLD with sigsuspend; EINTR
 * without SA_RESTART and a restarted read with it; setitimer(ITIMER_REAL)
 * once and periodic, getitimer, and alarm sharing that timer.
 */
#include "sites.h"

#define SYS_getppid_	64
#define SYS_sigreturn_	119
#define SYS_rt_sigreturn_ 173
#define SYS_rt_sigaction_ 174
#define SYS_rt_sigprocmask_ 175
#define SYS_rt_sigpending_ 176
#define SYS_rt_sigsuspend_ 179
#define SYS_sigaltstack_ 186
#define SYS_wait4_	114
#define SYS_alarm_	27
#define SYS_setitimer_	104
#define SYS_getitimer_	105
#define SIGALRM_ 14

#define SIGILL_	4
#define SIGFPE_	8
#define SIGKILL_ 9
#define SIGUSR1_ 10
#define SIGSEGV_ 11
#define SIGUSR2_ 12
#define SIGTERM_ 15
#define SIGCHLD_ 17

#define SA_SIGINFO_	4
#define SA_RESTORER_	0x04000000
#define SA_ONSTACK_	0x08000000
#define SA_RESTART_	0x10000000
#define SA_RESETHAND_	0x80000000u

/* the restorers glibc would install: restore_rt and restore_legacy (rt.h) */

/* fault sites, with labels for the faulting instruction and the next one */
void segv_site(void);
void fpe_site(void);
void ill_site(void);
extern char segv_at[], segv_after[], fpe_at[], fpe_after[], ill_at[], ill_after[];
__asm__(".text\n"
	"segv_site:\n"
	"segv_at:\n\tmovl 0x10, %eax\n"
	"segv_after:\n\tret\n"
	"fpe_site:\n\tpushl %ebx\n\tmovl $7, %eax\n\txorl %edx, %edx\n\txorl %ebx, %ebx\n"
	"fpe_at:\n\tdivl %ebx\n"
	"fpe_after:\n\tpopl %ebx\n\tret\n"
	"ill_site:\n"
	"ill_at:\n\tud2\n"
	"ill_after:\n\tret\n");

static long sigaction_(int sig, void *handler, uint32_t flags, uint32_t mask0)
{
	struct ksigaction a = { handler, flags | SA_RESTORER_,
				(flags & SA_SIGINFO_) ? (void *)restore_rt : (void *)restore_legacy, { mask0, 0 } };
	return rt_syscall(SYS_rt_sigaction_, sig, &a, 0, 8);
}

static long sigmask_(int how, uint32_t set, uint32_t *old)
{
	uint32_t s[2] = { set, 0 }, o[2];
	long r = rt_syscall(SYS_rt_sigprocmask_, how, &s, o, 8);
	if (old)
		*old = o[0];
	return r;
}

static volatile int last_sig, last_code, eip_ok, addr_ok;

static void fault_handler(int sig, void *si, void *uc)
{
	uint32_t at = 0, after = 0, addr = 0;
	switch (sig) {
	case SIGSEGV_: at = (uint32_t)segv_at; after = (uint32_t)segv_after; addr = 0x10; break;
	case SIGFPE_: at = (uint32_t)fpe_at; after = (uint32_t)fpe_after; addr = at; break;
	case SIGILL_: at = (uint32_t)ill_at; after = (uint32_t)ill_after; addr = at; break;
	}
	last_sig = sig;
	last_code = SI_CODE(si);
	eip_ok = UC_EIP(uc) == at;
	addr_ok = SI_ADDR(si) == addr;
	UC_EIP(uc) = after; /* resume after the faulting instruction */
}

static void faults(void)
{
	sigaction_(SIGSEGV_, (void *)fault_handler, SA_SIGINFO_, 0);
	sigaction_(SIGFPE_, (void *)fault_handler, SA_SIGINFO_, 0);
	sigaction_(SIGILL_, (void *)fault_handler, SA_SIGINFO_, 0);
	for (int round = 0; round < 60; round++) { /* hot enough to be translated */
		last_sig = 0;
		segv_site();
		if (round == 0 || round == 59)
			printf("segv: sig %d code %d eip %s addr %s\n", last_sig, last_code, eip_ok ? "exact" : "WRONG",
			       addr_ok ? "ok" : "WRONG");
		last_sig = 0;
		fpe_site();
		if (round == 0 || round == 59)
			printf("fpe: sig %d code %d eip %s addr %s\n", last_sig, last_code, eip_ok ? "exact" : "WRONG",
			       addr_ok ? "ok" : "WRONG");
		last_sig = 0;
		ill_site();
		if (round == 0 || round == 59)
			printf("ill: sig %d code %d eip %s addr %s\n", last_sig, last_code, eip_ok ? "exact" : "WRONG",
			       addr_ok ? "ok" : "WRONG");
	}
}

static volatile int usr_count, usr_seen_mask;

static void legacy_handler(int sig)
{
	uint32_t cur;
	usr_count += sig;
	sigmask_(0, 0, &cur);
	usr_seen_mask = (cur >> (sig - 1)) & 1; /* the signal is blocked in its handler */
}

static void masks(void)
{
	sigaction_(SIGUSR1_, (void *)legacy_handler, 0, 0);
	sys_kill(sys_getpid(), SIGUSR1_);
	printf("legacy frame: count %d, blocked inside %d\n", usr_count, usr_seen_mask);

	uint32_t old, pend[2] = { 0, 0 };
	sigmask_(0, 1u << (SIGUSR1_ - 1), &old);
	sys_kill(sys_getpid(), SIGUSR1_);
	rt_syscall(SYS_rt_sigpending_, pend, 8);
	printf("blocked: count %d, pending %s\n", usr_count, (pend[0] >> (SIGUSR1_ - 1)) & 1 ? "yes" : "no");
	sigmask_(1, 1u << (SIGUSR1_ - 1), 0);
	printf("unblocked: count %d\n", usr_count);

	sigaction_(SIGUSR2_, (void *)legacy_handler, SA_RESETHAND_, 0);
	sys_kill(sys_getpid(), SIGUSR2_);
	struct ksigaction q;
	rt_syscall(SYS_rt_sigaction_, SIGUSR2_, 0, &q, 8);
	printf("resethand: count %d, now %s\n", usr_count, q.handler == 0 ? "SIG_DFL" : "handler");
}

static char altstack[16384];
static volatile int on_alt;

static void alt_handler(int sig)
{
	char here;
	(void)sig;
	on_alt = &here >= altstack && &here < altstack + sizeof altstack;
}

static void alt(void)
{
	struct { void *sp; int flags; size_t size; } ss = { altstack, 0, sizeof altstack }, old;
	rt_syscall(SYS_sigaltstack_, &ss, 0);
	sigaction_(SIGUSR1_, (void *)alt_handler, SA_ONSTACK_, 0);
	sys_kill(sys_getpid(), SIGUSR1_);
	rt_syscall(SYS_sigaltstack_, 0, &old);
	printf("sigaltstack: handler on it %d, not on it after %d\n", on_alt, old.flags == 0);
}

static volatile int chld;
static void chld_handler(int sig) { chld += sig == SIGCHLD_; }
static void usr_handler(int sig) { (void)sig; usr_count++; }

static void processes(void)
{
	int fds[2], st = 0;
	sys_pipe(fds);
	long pid = sys_fork();
	if (pid == 0) {
		sys_close(fds[0]);
		sys_write(fds[1], "from the child", 14);
		_exit(7);
	}
	sys_close(fds[1]);
	char buf[32] = { 0 };
	long n = sys_read(fds[0], buf, sizeof buf - 1);
	long w = rt_syscall(SYS_wait4_, pid, &st, 0, 0);
	printf("pipe: %ld bytes \"%s\"; wait %s, exited %d code %d\n", n, buf, w == pid ? "ok" : "WRONG",
	       (st & 0x7f) == 0, (st >> 8) & 0xff);
	sys_close(fds[0]);

	/* killed by a signal; SIGCHLD reaches a handler; sigsuspend returns after it */
	sigaction_(SIGCHLD_, (void *)chld_handler, 0, 0);
	uint32_t old;
	sigmask_(0, 1u << (SIGCHLD_ - 1), &old);
	pid = sys_fork();
	if (pid == 0) {
		for (;;)
			rt_syscall(29); /* pause */
	}
	sys_kill(pid, SIGTERM_);
	uint32_t none[2] = { 0, 0 };
	long r = rt_syscall(SYS_rt_sigsuspend_, none, 8);
	sigmask_(2, old, 0);
	w = rt_syscall(SYS_wait4_, pid, &st, 0, 0);
	printf("sigsuspend %ld, SIGCHLD handled %d; killed: signaled %d by %d\n", r, chld, (st & 0x7f) != 0, st & 0x7f);

	/* EINTR: a read interrupted by a handler without SA_RESTART */
	sys_pipe(fds);
	sigaction_(SIGUSR1_, (void *)usr_handler, 0, 0);
	pid = sys_fork();
	if (pid == 0) {
		struct timespec t = { 0, 20 * 1000 * 1000 };
		sys_nanosleep(&t, 0);
		sys_kill(rt_syscall(SYS_getppid_), SIGUSR1_);
		sys_nanosleep(&t, 0);
		sys_write(fds[1], "late", 4);
		_exit(0);
	}
	n = sys_read(fds[0], buf, sizeof buf);
	printf("read without SA_RESTART: %ld\n", n);
	rt_syscall(SYS_wait4_, pid, &st, 0, 0);
	n = sys_read(fds[0], buf, 4);
	buf[n > 0 ? n : 0] = 0;
	printf("then: %ld \"%s\"\n", n, buf);
	/* SA_RESTART: the read is restarted and gets the data */
	sigaction_(SIGUSR1_, (void *)usr_handler, SA_RESTART_, 0);
	long pid2 = sys_fork();
	if (pid2 == 0) {
		struct timespec t = { 0, 20 * 1000 * 1000 };
		sys_nanosleep(&t, 0);
		sys_kill(rt_syscall(SYS_getppid_), SIGUSR1_);
		sys_nanosleep(&t, 0);
		sys_write(fds[1], "data", 4);
		_exit(0);
	}
	usr_count = 0;
	n = sys_read(fds[0], buf, 4);
	buf[n > 0 ? n : 0] = 0;
	rt_syscall(SYS_wait4_, pid2, &st, 0, 0);
	printf("read with SA_RESTART: %ld \"%s\", handler ran %d\n", n, buf, usr_count);
}

static volatile int alarms;
static void alrm_handler(int sig) { (void)sig; alarms++; }

/* struct itimerval: it_interval {sec, usec}, it_value {sec, usec} */
static void itimers(void)
{
	sigaction_(SIGALRM_, (void *)alrm_handler, SA_RESTORER_, 0);
	uint32_t t[4] = { 0, 0, 0, 20000 }, old[4], cur[4];
	long r = rt_syscall(SYS_setitimer_, 0, t, 0); /* once, in 20 ms */
	while (!alarms)
		rt_syscall(29); /* pause */
	printf("setitimer once: %s, alarms %d\n", sys_err(r), alarms);
	uint32_t ten[4] = { 0, 0, 10, 0 };
	rt_syscall(SYS_setitimer_, 0, ten, 0);
	rt_syscall(SYS_getitimer_, 0, cur);
	printf("getitimer: interval %u.%06u, value in (9, 10] s: %d\n", cur[0], cur[1],
	       cur[2] * 1000000 + cur[3] > 9000000 && cur[2] * 1000000 + cur[3] <= 10000000);
	/* alarm shares it: what is left, rounded to seconds */
	printf("alarm(0) after it: %ld\n", rt_syscall(SYS_alarm_, 0));
	rt_syscall(SYS_getitimer_, 0, cur);
	printf("disarmed by alarm(0): %u %u %u %u\n", cur[0], cur[1], cur[2], cur[3]);
	/* periodic: every 5 ms, three signals, then off (the old value says so) */
	alarms = 0;
	uint32_t per[4] = { 0, 5000, 0, 5000 }, off[4] = { 0, 0, 0, 0 };
	rt_syscall(SYS_setitimer_, 0, per, 0);
	while (alarms < 3)
		rt_syscall(29);
	rt_syscall(SYS_setitimer_, 0, off, old);
	printf("periodic: at least 3 alarms %d, old interval %u.%06u\n", alarms >= 3, old[0], old[1]);
	uint32_t bad[4] = { 0, 1000000, 0, 0 };
	printf("usec 1000000: %s; which 3: %s\n", sys_err(rt_syscall(SYS_setitimer_, 0, bad, 0)),
	       sys_err(rt_syscall(SYS_setitimer_, 3, t, 0)));
	sigaction_(SIGALRM_, 0, 0, 0);
}

int main(void)
{
	faults();
	masks();
	alt();
	processes();
	itimers();
	return 0;
}
