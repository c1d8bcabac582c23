/*
 * itimer.c - setitimer's CPU-time timers: ITIMER_VIRTUAL (SIGVTALRM) and ITIMER_PROF
 * (SIGPROF) fire after the process has run for their value and then every interval
 * while it runs (not while it sleeps), each firing a signal with si_code SI_KERNEL;
 * getitimer reports the period and a value left no greater than what was set and
 * a tick (Linux adds one); a zero
 * value disarms and returns the old setting; a fork child does not inherit them; the
 * errors (EINVAL for a bad which or tv_usec, EFAULT). Timing-independent output only.
 */
#include "rt.h"

#define SYS_setitimer	104
#define SYS_getitimer	105
#define SYS_rt_sigaction_ 174
#define ITIMER_VIRTUAL	1
#define ITIMER_PROF	2
#define SIGVTALRM_	26
#define SIGPROF_	27
#define SA_SIGINFO_	4
#define SA_RESTORER_	0x04000000

struct itv {
	long is, ius, vs, vus;
};

static volatile int fired[32], code[32];

static void handler(int sig, int *si, void *uc)
{
	fired[sig]++;
	code[sig] = si[2];
}

static void on(int sig)
{
	struct ksigaction a = { (void *)handler, SA_SIGINFO_ | SA_RESTORER_, (void *)restore_rt, { 0, 0 } };
	rt_syscall(SYS_rt_sigaction_, sig, &a, 0, 8);
}

static const char *res(long r)
{
	static char buf[32];
	switch (r) {
	case -14: return "EFAULT";
	case -22: return "EINVAL";
	default:
		snprintf(buf, sizeof buf, "%ld", r);
		return buf;
	}
}

/* Runs until `sig` has fired `n` times (or a bound of work is done). */
static void spin_until(int sig, int n)
{
	volatile unsigned x = 0;
	for (unsigned long i = 0; fired[sig] < n && i < 4000000000ul; i++)
		x += i;
}

static void timer(int which, int sig, const char *name)
{
	struct itv v = { 0, 20000, 0, 30000 }, o;
	printf("%s: set %s\n", name, res(rt_syscall(SYS_setitimer, which, &v, 0)));
	rt_syscall(SYS_getitimer, which, &o);
	/* Linux adds a tick (1/HZ: 10 ms at most) to the value set. */
	printf("  interval %ld.%06ld, value left within what was set and a tick: %s\n", o.is, o.ius,
	       o.vs == 0 && o.vus > 0 && o.vus <= 40000 ? "yes" : "no");
	spin_until(sig, 3);
	printf("  fired %d times, si_code SI_KERNEL: %s\n", fired[sig], code[sig] == 0x80 ? "yes" : "no");
	fflush_stdout();
	long pid = sys_fork();
	if (pid == 0) {
		struct itv c;
		rt_syscall(SYS_getitimer, which, &c);
		printf("  child's timer: %ld %ld %ld %ld\n", c.is, c.ius, c.vs, c.vus);
		_exit(0);
	}
	int st;
	sys_waitpid((int)pid, &st, 0);
	struct itv z = { 0, 0, 0, 0 };
	printf("  disarm: %s", res(rt_syscall(SYS_setitimer, which, &z, &o)));
	printf(", old interval %ld.%06ld\n", o.is, o.ius);
	rt_syscall(SYS_getitimer, which, &o);
	printf("  after: %ld %ld %ld %ld\n", o.is, o.ius, o.vs, o.vus);
	int before = fired[sig];
	/* Sleeping is not running: a virtual timer of 10 ms does not fire in 50 ms asleep. */
	struct itv once = { 0, 0, 0, 10000 };
	rt_syscall(SYS_setitimer, which, &once, 0);
	struct timespec ts = { 0, 50000000 };
	sys_nanosleep(&ts, 0);
	printf("  while asleep: %d\n", fired[sig] - before);
	spin_until(sig, before + 1);
	printf("  once running: %d\n", fired[sig] - before);
	rt_syscall(SYS_getitimer, which, &o);
	printf("  one-shot after firing: %ld %ld %ld %ld\n", o.is, o.ius, o.vs, o.vus);
}

int main(void)
{
	on(SIGVTALRM_);
	on(SIGPROF_);
	timer(ITIMER_VIRTUAL, SIGVTALRM_, "ITIMER_VIRTUAL");
	timer(ITIMER_PROF, SIGPROF_, "ITIMER_PROF");
	struct itv bad = { 0, 0, 0, 1000000 };
	printf("tv_usec 1000000: %s\n", res(rt_syscall(SYS_setitimer, ITIMER_VIRTUAL, &bad, 0)));
	printf("which 3: %s\n", res(rt_syscall(SYS_setitimer, 3, &bad, 0)));
	printf("getitimer which 3: %s\n", res(rt_syscall(SYS_getitimer, 3, &bad)));
	printf("getitimer to nowhere: %s\n", res(rt_syscall(SYS_getitimer, ITIMER_PROF, 16)));
	return 0;
}
