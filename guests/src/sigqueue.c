/*
 * sigqueue.c - rt_sigqueueinfo and rt_tgsigqueueinfo (sigqueue(3) and
 * pthread_sigqueue(3)): a value delivered with SI_QUEUE to the caller and to a child,
 * the siginfo words an SA_SIGINFO handler and rt_sigtimedwait read, the codes a caller
 * may not forge for another process (EPERM) but may for itself, and the errors
 * (EFAULT, ESRCH, EINVAL); also the sender's uid in the siginfo of a fault signal sent
 * with kill (Linux's layout for SI_USER).
 */
#include "rt.h"

#define SYS_rt_sigaction_ 174
#define SYS_rt_sigprocmask_ 175
#define SYS_rt_sigtimedwait_ 177
#define SYS_rt_sigqueueinfo 178
#define SYS_gettid_ 224
#define SYS_rt_tgsigqueueinfo 335
#define SA_SIGINFO_ 4
#define SA_RESTORER_ 0x04000000
#define SIGSEGV_ 11
#define SIGUSR1_ 10
#define SIGUSR2_ 12
#define SIGRTMIN_ 34
#define SI_USER_ 0
#define SI_QUEUE_ (-1)
#define SI_TKILL_ (-6)
#define SI_MESGQ_ (-3)

static const char *res(long r)
{
	static char buf[24];
	switch (r) {
	case 0: return "ok";
	case -1: return "EPERM";
	case -3: return "ESRCH";
	case -14: return "EFAULT";
	case -22: return "EINVAL";
	case -11: return "EAGAIN";
	default: snprintf(buf, sizeof buf, "%ld", r); return buf;
	}
}

static volatile int got_sig, got_code, got_pid, got_uid, got_value;

static void handler(int sig, uint32_t *info, void *uc)
{
	got_sig = sig;
	got_code = (int)info[2];
	got_pid = (int)info[3];
	got_uid = (int)info[4];
	got_value = (int)info[5];
}

static long sigaction_(int sig, void *h)
{
	struct ksigaction a = { h, SA_SIGINFO_ | SA_RESTORER_, (void *)restore_rt, { 0, 0 } };
	return rt_syscall(SYS_rt_sigaction_, sig, &a, 0, 8);
}

static long queue(int pid, int sig, int code, int value)
{
	uint32_t info[32] = { 0 };
	info[0] = 99; /* si_signo: replaced by sig */
	info[2] = (uint32_t)code;
	info[3] = (uint32_t)sys_getpid();
	info[4] = (uint32_t)sys_getuid();
	info[5] = (uint32_t)value;
	return rt_syscall(SYS_rt_sigqueueinfo, pid, sig, info);
}

static void report(const char *what, long r)
{
	int me = (int)sys_getpid();
	printf("%s: %s; handler: sig %d code %d pid %s uid %s value %d\n", what, res(r), got_sig, got_code,
	       got_pid == me ? "self" : got_pid == 0 ? "0" : "other", got_uid == (int)sys_getuid() ? "mine" : "other",
	       got_value);
	got_sig = got_code = got_pid = got_uid = got_value = 0;
}

int main(void)
{
	sigaction_(SIGUSR1_, (void *)handler);
	sigaction_(SIGRTMIN_, (void *)handler);
	sigaction_(SIGSEGV_, (void *)handler);
	int me = (int)sys_getpid();

	report("queue SI_QUEUE to self", queue(me, SIGUSR1_, SI_QUEUE_, 1234));
	report("queue RT signal to self", queue(me, SIGRTMIN_, SI_QUEUE_, -7));
	report("queue SI_USER to self (allowed)", queue(me, SIGUSR1_, SI_USER_, 5));
	report("queue SI_MESGQ to self", queue(me, SIGUSR1_, SI_MESGQ_, 6));
	report("queue signal 0", queue(me, 0, SI_QUEUE_, 0));
	report("queue signal 65", queue(me, 65, SI_QUEUE_, 0));
	report("queue to no such pid", queue(0x3ffffff0, SIGUSR1_, SI_QUEUE_, 0));
	report("queue to pid 0", queue(0, SIGUSR1_, SI_QUEUE_, 0));
	report("queue to pid -1", queue(-1, SIGUSR1_, SI_QUEUE_, 0));
	report("queue with a bad info",
	       rt_syscall(SYS_rt_sigqueueinfo, me, SIGUSR1_, (void *)16));
	report("kill SIGSEGV to self", sys_kill(me, SIGSEGV_));

	int tid = (int)rt_syscall(SYS_gettid_);
	uint32_t info[32] = { 0 };
	info[2] = (uint32_t)SI_QUEUE_;
	info[3] = (uint32_t)me;
	info[5] = 77;
	report("tgqueue to self", rt_syscall(SYS_rt_tgsigqueueinfo, me, tid, SIGUSR1_, info));
	info[2] = (uint32_t)SI_TKILL_;
	report("tgqueue SI_TKILL to self", rt_syscall(SYS_rt_tgsigqueueinfo, me, tid, SIGUSR1_, info));
	report("tgqueue tgid 0", rt_syscall(SYS_rt_tgsigqueueinfo, 0, tid, SIGUSR1_, info));
	report("tgqueue wrong group", rt_syscall(SYS_rt_tgsigqueueinfo, me + 1, tid, SIGUSR1_, info));

	/* rt_sigtimedwait reads what was queued while the signal was blocked */
	uint32_t set[2] = { 1u << (SIGUSR2_ - 1), 0 };
	rt_syscall(SYS_rt_sigprocmask_, 0, set, 0, 8);
	queue(me, SIGUSR2_, SI_QUEUE_, 4242);
	uint32_t w[32];
	memset(w, 0, sizeof w);
	long s = rt_syscall(SYS_rt_sigtimedwait_, set, w, 0, 8);
	printf("sigtimedwait: sig %ld signo %u code %d pid %s value %d\n", s, w[0], (int)w[2],
	       (int)w[3] == me ? "self" : "other", (int)w[5]);

	/* another process: a forged code is EPERM, SI_QUEUE arrives with its value */
	int p2c[2], c2p[2];
	sys_pipe(p2c);
	sys_pipe(c2p);
	long child = sys_fork();
	if (child == 0) {
		char c;
		sys_read(p2c[0], &c, 1); /* the parent has queued by now */
		char line[120];
		int n = snprintf(line, sizeof line, "child got sig %d code %d pid %s value %d\n", got_sig, got_code,
				 got_pid == me ? "parent" : "other", got_value);
		sys_write(c2p[1], line, (size_t)n);
		_exit(0);
	}
	report("queue SI_USER to the child", queue((int)child, SIGUSR1_, SI_USER_, 1));
	report("queue SI_TKILL to the child", queue((int)child, SIGUSR1_, SI_TKILL_, 1));
	report("queue signal 0 to the child", queue((int)child, 0, SI_QUEUE_, 1));
	report("queue SI_QUEUE to the child", queue((int)child, SIGUSR1_, SI_QUEUE_, 31337));
	sys_write(p2c[1], "x", 1);
	char buf[200];
	long n = sys_read(c2p[0], buf, sizeof buf - 1);
	if (n > 0) {
		buf[n] = 0;
		printf("%s", buf);
	}
	int st;
	sys_waitpid((int)child, &st, 0);
	report("queue to the reaped child", queue((int)child, SIGUSR1_, SI_QUEUE_, 1));
	return 0;
}
