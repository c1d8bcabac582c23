/*
 * prctl.c - per-thread and per-process attributes: prctl's name (PR_SET_NAME and
 * PR_GET_NAME, truncated to 15 bytes, shown in /proc/self/comm, stat, status and
 * task/<tid>/comm, inherited by fork, reset by exec to the name exec was given), the
 * parent-death signal (cleared in a fork child, kept by exec, sent with the dying
 * parent's pid when an intermediate process exits), dumpable, no_new_privs, timer
 * slack, the child subreaper (an orphaned grandchild, live or a zombie, goes to it),
 * the errors of each; the sched_* policy calls (policies, priorities, their ranges,
 * inheritance by fork, SCHED_RESET_ON_FORK, the real-time policies where the user may
 * have them, the errors) and getcpu. Nothing host-specific is printed: pids only as
 * relations, real-time results as the host's privilege gives them.
 */
#include "rt.h"

#define SYS_execve	11
#define SYS_getppid	64
#define SYS_sched_setparam	154
#define SYS_sched_getparam	155
#define SYS_sched_setscheduler	156
#define SYS_sched_getscheduler	157
#define SYS_sched_get_priority_max 159
#define SYS_sched_get_priority_min 160
#define SYS_sched_rr_get_interval 161
#define SYS_prctl	172
#define SYS_rt_sigaction 174
#define SYS_rt_sigprocmask 175
#define SYS_rt_sigsuspend 179
#define SYS_gettid	224
#define SYS_sched_getaffinity 242
#define SYS_waitid	284
#define SYS_getcpu	318
#define SYS_sched_rr_get_interval_time64 423

#define PR_SET_PDEATHSIG	1
#define PR_GET_PDEATHSIG	2
#define PR_GET_DUMPABLE		3
#define PR_SET_DUMPABLE		4
#define PR_SET_NAME		15
#define PR_GET_NAME		16
#define PR_SET_TIMERSLACK	29
#define PR_GET_TIMERSLACK	30
#define PR_SET_CHILD_SUBREAPER	36
#define PR_GET_CHILD_SUBREAPER	37
#define PR_SET_NO_NEW_PRIVS	38
#define PR_GET_NO_NEW_PRIVS	39

#define SCHED_OTHER	0
#define SCHED_FIFO	1
#define SCHED_RR	2
#define SCHED_BATCH	3
#define SCHED_IDLE	5
#define SCHED_DEADLINE	6
#define SCHED_RESET_ON_FORK 0x40000000

#define SIGUSR1_	10
#define SIGUSR2_	12
#define SA_SIGINFO_	4
#define SA_RESTORER_	0x04000000
#define WEXITED_	4
#define WNOWAIT_	0x01000000
#define P_PID_		1

/* a pid no process has (above any pid_max) */
#define NO_PID		0x3fffffff
#define BAD_PTR		((void *)4)

static const char *res(long r)
{
	static char buf[24];
	switch (r) {
	case -1: return "EPERM";
	case -3: return "ESRCH";
	case -9: return "EBADF";
	case -14: return "EFAULT";
	case -22: return "EINVAL";
	default:
		if (r >= 0)
			return "ok";
		snprintf(buf, sizeof buf, "%ld", r);
		return buf;
	}
}

static long prctl(long opt, long a2, long a3, long a4, long a5)
{
	return rt_syscall(SYS_prctl, opt, a2, a3, a4, a5);
}

static long getppid(void) { return rt_syscall(SYS_getppid); }

static int wait_child(long pid)
{
	int st = 0;
	sys_waitpid((int)pid, &st, 0);
	return (st & 0x7f) ? 128 + (st & 0x7f) : (st >> 8) & 0xff;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { 0, ms * 1000000 };
	sys_nanosleep(&ts, 0);
}

/* The whole of a small file, NUL-terminated (empty if it cannot be read). */
static const char *slurp(const char *path)
{
	static char buf[4096];
	long n = 0, r;
	int fd = (int)sys_open(path, O_RDONLY, 0);
	buf[0] = 0;
	if (fd < 0)
		return buf;
	while (n < (long)sizeof buf - 1 && (r = sys_read(fd, buf + n, sizeof buf - 1 - n)) > 0)
		n += r;
	buf[n] = 0;
	sys_close(fd);
	return buf;
}

/* Prints a string with its control characters and backslashes escaped. */
static void print_escaped(const char *s)
{
	for (; *s; s++) {
		if (*s == '\n')
			printf("\\n");
		else if (*s == '\\')
			printf("\\\\");
		else
			putchar(*s);
	}
}

/* ---- the name ------------------------------------------------------------------- */

static void show_name_everywhere(void)
{
	char name[16], path[64];
	memset(name, 'x', sizeof name);
	long r = prctl(PR_GET_NAME, (long)name, 0, 0, 0);
	printf("  PR_GET_NAME: %s \"", res(r));
	print_escaped(name);
	printf("\", NUL-padded: %s\n", name[15] == 0 ? "yes" : "no");
	printf("  /proc/self/comm: \"");
	print_escaped(slurp("/proc/self/comm"));
	printf("\"\n");
	snprintf(path, sizeof path, "/proc/self/task/%ld/comm", rt_syscall(SYS_gettid));
	printf("  task/<tid>/comm: \"");
	print_escaped(slurp(path));
	printf("\"\n");
	const char *stat = slurp("/proc/self/stat");
	const char *open = strchr(stat, '(');
	const char *close = 0;
	for (const char *c = stat; *c; c++)
		if (*c == ')')
			close = c;
	printf("  stat's comm: \"");
	if (open && close) {
		char tmp[64] = { 0 };
		memcpy(tmp, open + 1, (size_t)(close - open - 1) < sizeof tmp - 1 ? (size_t)(close - open - 1) : sizeof tmp - 1);
		print_escaped(tmp);
	}
	printf("\"\n");
	const char *status = slurp("/proc/self/status");
	const char *line = strchr(status, '\n');
	printf("  status's first line: \"");
	if (line) {
		char tmp[64] = { 0 };
		size_t n = (size_t)(line - status);
		memcpy(tmp, status, n < sizeof tmp - 1 ? n : sizeof tmp - 1);
		print_escaped(tmp);
	}
	printf("\"\n");
}

static void name_tests(void)
{
	char name[16];
	printf("name at start:\n");
	show_name_everywhere();
	printf("PR_SET_NAME long: %s\n", res(prctl(PR_SET_NAME, (long)"renamed-by-prctl-and-cut", 0, 0, 0)));
	show_name_everywhere();
	printf("PR_SET_NAME 16 bytes: %s\n", res(prctl(PR_SET_NAME, (long)"0123456789abcdef", 0, 0, 0)));
	show_name_everywhere();
	printf("PR_SET_NAME with a newline and a backslash: %s\n", res(prctl(PR_SET_NAME, (long)"a\\b\nc d", 0, 0, 0)));
	show_name_everywhere();
	printf("PR_SET_NAME empty: %s\n", res(prctl(PR_SET_NAME, (long)"", 0, 0, 0)));
	show_name_everywhere();
	printf("PR_SET_NAME bad pointer: %s\n", res(prctl(PR_SET_NAME, (long)BAD_PTR, 0, 0, 0)));
	printf("PR_GET_NAME bad pointer: %s\n", res(prctl(PR_GET_NAME, (long)BAD_PTR, 0, 0, 0)));
	prctl(PR_SET_NAME, (long)"parent-name", 0, 0, 0);
	fflush_stdout();
	long pid = sys_fork();
	if (pid == 0) {
		prctl(PR_GET_NAME, (long)name, 0, 0, 0);
		printf("fork child's name: %s\n", name);
		prctl(PR_SET_NAME, (long)"child-name", 0, 0, 0);
		exit(0);
	}
	wait_child(pid);
	prctl(PR_GET_NAME, (long)name, 0, 0, 0);
	printf("parent's name after the child renamed itself: %s\n", name);
}

/* ---- the parent-death signal ------------------------------------------------------- */

static volatile int got_sig, got_code, got_pid;

static void on_signal(int sig, int *si, void *uc)
{
	got_sig = sig;
	got_code = si[2];
	got_pid = si[3];
}

static void handle(int sig, void *fn)
{
	struct ksigaction a = { fn, SA_SIGINFO_ | SA_RESTORER_, (void *)restore_rt, { 0, 0 } };
	rt_syscall(SYS_rt_sigaction, sig, &a, 0, 8);
}

static void pdeathsig_tests(void)
{
	int v = -1;
	long r = prctl(PR_GET_PDEATHSIG, (long)&v, 0, 0, 0);
	printf("PR_GET_PDEATHSIG: %s %d\n", res(r), v);
	printf("PR_SET_PDEATHSIG 65: %s\n", res(prctl(PR_SET_PDEATHSIG, 65, 0, 0, 0)));
	printf("PR_SET_PDEATHSIG -1: %s\n", res(prctl(PR_SET_PDEATHSIG, -1, 0, 0, 0)));
	printf("PR_GET_PDEATHSIG bad pointer: %s\n", res(prctl(PR_GET_PDEATHSIG, (long)BAD_PTR, 0, 0, 0)));
	printf("PR_SET_PDEATHSIG 64: %s\n", res(prctl(PR_SET_PDEATHSIG, 64, 0, 0, 0)));
	prctl(PR_GET_PDEATHSIG, (long)&v, 0, 0, 0);
	printf("PR_GET_PDEATHSIG: %d\n", v);
	printf("PR_SET_PDEATHSIG SIGUSR2: %s\n", res(prctl(PR_SET_PDEATHSIG, SIGUSR2_, 0, 0, 0)));
	fflush_stdout();
	long pid = sys_fork();
	if (pid == 0) {
		v = -1;
		prctl(PR_GET_PDEATHSIG, (long)&v, 0, 0, 0);
		printf("fork child's parent-death signal: %d\n", v);
		exit(0);
	}
	wait_child(pid);
	prctl(PR_GET_PDEATHSIG, (long)&v, 0, 0, 0);
	printf("the parent's own stays: %d\n", v);
	prctl(PR_SET_PDEATHSIG, 0, 0, 0, 0);

	/* A grandchild whose parent (an intermediate process) exits gets the signal. */
	int report[2], ready[2];
	sys_pipe(report);
	sys_pipe(ready);
	fflush_stdout();
	long mid = sys_fork();
	if (mid == 0) {
		long me = sys_getpid();
		long g = sys_fork();
		if (g == 0) {
			uint32_t block[2] = { 1u << (SIGUSR1_ - 1), 0 }, none[2] = { 0, 0 };
			char buf[200];
			rt_syscall(SYS_rt_sigprocmask, 0, block, 0, 8);
			handle(SIGUSR1_, (void *)on_signal);
			long r = prctl(PR_SET_PDEATHSIG, SIGUSR1_, 0, 0, 0);
			int got = -1;
			prctl(PR_GET_PDEATHSIG, (long)&got, 0, 0, 0);
			sys_write(ready[1], "r", 1);
			while (!got_sig)
				rt_syscall(SYS_rt_sigsuspend, none, 8);
			int n = snprintf(buf, sizeof buf,
					 "grandchild: set %s (reads back %d), got signal %d, si_code %d, si_pid is "
					 "the dead parent's: %s, reparented: %s\n",
					 res(r), got, got_sig, got_code, got_pid == me ? "yes" : "no",
					 getppid() != me ? "yes" : "no");
			sys_write(report[1], buf, n);
			_exit(0);
		}
		char c;
		sys_read(ready[0], &c, 1);
		_exit(0);
	}
	sys_close(report[1]);
	sys_close(ready[0]);
	sys_close(ready[1]);
	printf("intermediate exit status: %d\n", wait_child(mid));
	char buf[256];
	long n, total = 0;
	while ((n = sys_read(report[0], buf + total, sizeof buf - 1 - total)) > 0)
		total += n;
	buf[total] = 0;
	printf("%s", buf);
	sys_close(report[0]);
}

/* ---- the child subreaper ----------------------------------------------------------- */

static void subreaper_tests(void)
{
	int v = -1;
	long r = prctl(PR_GET_CHILD_SUBREAPER, (long)&v, 0, 0, 0);
	printf("PR_GET_CHILD_SUBREAPER: %s %d\n", res(r), v);
	printf("PR_SET_CHILD_SUBREAPER 1: %s\n", res(prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)));
	prctl(PR_GET_CHILD_SUBREAPER, (long)&v, 0, 0, 0);
	printf("PR_GET_CHILD_SUBREAPER: %d\n", v);
	printf("PR_GET_CHILD_SUBREAPER bad pointer: %s\n",
	       res(prctl(PR_GET_CHILD_SUBREAPER, (long)BAD_PTR, 0, 0, 0)));
	long top = sys_getpid();
	int pids[2], report[2];
	sys_pipe(pids);
	sys_pipe(report);
	fflush_stdout();
	long mid = sys_fork();
	if (mid == 0) {
		long me = sys_getpid();
		int inherited = -1;
		char buf[160];
		prctl(PR_GET_CHILD_SUBREAPER, (long)&inherited, 0, 0, 0);
		/* one grandchild exits at once (a zombie of this process when it exits) */
		long dead = sys_fork();
		if (dead == 0)
			_exit(6);
		int si[32];
		rt_syscall(SYS_waitid, P_PID_, dead, si, WEXITED_ | WNOWAIT_, 0);
		/* the other lives on until it has been reparented */
		long live = sys_fork();
		if (live == 0) {
			int i;
			for (i = 0; i < 5000 && getppid() == me; i++)
				sleep_ms(1);
			int n = snprintf(buf, sizeof buf, "live grandchild: new parent is the subreaper: %s\n",
					 getppid() == top ? "yes" : "no");
			sys_write(report[1], buf, n);
			_exit(5);
		}
		long both[2] = { dead, live };
		sys_write(pids[1], both, sizeof both);
		int n = snprintf(buf, sizeof buf, "intermediate: subreaper inherited: %d\n", inherited);
		sys_write(report[1], buf, n);
		_exit(0);
	}
	sys_close(report[1]);
	printf("intermediate exit status: %d\n", wait_child(mid));
	long both[2] = { 0, 0 };
	sys_read(pids[0], both, sizeof both);
	char buf[256];
	long n, total = 0;
	while ((n = sys_read(report[0], buf + total, sizeof buf - 1 - total)) > 0)
		total += n;
	buf[total] = 0;
	printf("%s", buf);
	int st = 0;
	r = sys_waitpid((int)both[0], &st, 0);
	printf("wait for the zombie grandchild: %s, status %d\n", r == both[0] ? "it" : res(r), (st >> 8) & 0xff);
	r = sys_waitpid((int)both[1], &st, 0);
	printf("wait for the live grandchild: %s, status %d\n", r == both[1] ? "it" : res(r), (st >> 8) & 0xff);
	printf("PR_SET_CHILD_SUBREAPER 0: %s\n", res(prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)));
	prctl(PR_GET_CHILD_SUBREAPER, (long)&v, 0, 0, 0);
	printf("PR_GET_CHILD_SUBREAPER: %d\n", v);
	sys_close(pids[0]);
	sys_close(pids[1]);
	sys_close(report[0]);
}

/* ---- dumpable, no_new_privs, timer slack, unknown options -------------------------- */

static void flag_tests(void)
{
	printf("PR_GET_DUMPABLE: %ld\n", prctl(PR_GET_DUMPABLE, 0, 0, 0, 0));
	printf("PR_SET_DUMPABLE 2: %s\n", res(prctl(PR_SET_DUMPABLE, 2, 0, 0, 0)));
	printf("PR_SET_DUMPABLE 0: %s\n", res(prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)));
	printf("PR_GET_DUMPABLE: %ld\n", prctl(PR_GET_DUMPABLE, 0, 0, 0, 0));
	fflush_stdout();
	long pid = sys_fork();
	if (pid == 0) {
		printf("fork child's dumpable: %ld\n", prctl(PR_GET_DUMPABLE, 0, 0, 0, 0));
		exit(0);
	}
	wait_child(pid);
	printf("PR_SET_DUMPABLE 1: %s\n", res(prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)));

	printf("PR_GET_NO_NEW_PRIVS with an argument: %s\n", res(prctl(PR_GET_NO_NEW_PRIVS, 1, 0, 0, 0)));
	printf("PR_SET_NO_NEW_PRIVS 0: %s\n", res(prctl(PR_SET_NO_NEW_PRIVS, 0, 0, 0, 0)));
	printf("PR_SET_NO_NEW_PRIVS 1 with arg3: %s\n", res(prctl(PR_SET_NO_NEW_PRIVS, 1, 1, 0, 0)));
	printf("PR_SET_NO_NEW_PRIVS 1 with arg5: %s\n", res(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 1)));
	fflush_stdout();
	pid = sys_fork();
	if (pid == 0) {
		printf("child: PR_SET_NO_NEW_PRIVS 1: %s\n", res(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)));
		printf("child: PR_GET_NO_NEW_PRIVS: %ld\n", prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0));
		fflush_stdout();
		long g = sys_fork();
		if (g == 0) {
			printf("grandchild: PR_GET_NO_NEW_PRIVS: %ld\n", prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0));
			exit(0);
		}
		wait_child(g);
		exit(0);
	}
	wait_child(pid);

	long slack = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
	printf("PR_GET_TIMERSLACK positive: %s\n", slack > 0 ? "yes" : "no");
	printf("PR_SET_TIMERSLACK 12345: %s\n", res(prctl(PR_SET_TIMERSLACK, 12345, 0, 0, 0)));
	printf("PR_GET_TIMERSLACK: %ld\n", prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0));
	fflush_stdout();
	pid = sys_fork();
	if (pid == 0) {
		printf("fork child's slack: %ld\n", prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0));
		/* 0 sets the default: for a fork child, its parent's slack at the fork */
		prctl(PR_SET_TIMERSLACK, 0, 0, 0, 0);
		printf("fork child's slack after setting 0: %ld\n", prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0));
		exit(0);
	}
	wait_child(pid);
	printf("PR_SET_TIMERSLACK 0: %s\n", res(prctl(PR_SET_TIMERSLACK, 0, 0, 0, 0)));
	printf("back to the first value: %s\n", prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0) == slack ? "yes" : "no");

	printf("prctl 0: %s\n", res(prctl(0, 0, 0, 0, 0)));
	printf("prctl 9999: %s\n", res(prctl(9999, 0, 0, 0, 0)));
	printf("prctl -1: %s\n", res(prctl(-1, 0, 0, 0, 0)));
}

/* ---- exec keeps some, resets others ------------------------------------------------- */

static void exec_tests(char **argv)
{
	fflush_stdout();
	long pid = sys_fork();
	if (pid == 0) {
		int param = 0;
		prctl(PR_SET_NAME, (long)"before-exec", 0, 0, 0);
		prctl(PR_SET_PDEATHSIG, SIGUSR2_, 0, 0, 0);
		prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
		prctl(PR_SET_TIMERSLACK, 7777, 0, 0, 0);
		rt_syscall(SYS_sched_setscheduler, 0, SCHED_BATCH, &param);
		char *args[] = { argv[0], "--after-exec", 0 };
		long r = rt_syscall(SYS_execve, "/proc/self/exe", args, environ);
		printf("execve failed: %s\n", res(r));
		exit(1);
	}
	printf("exec child status: %d\n", wait_child(pid));
}

static void after_exec(void)
{
	char name[16] = { 0 };
	int sig = -1, param = -1;
	prctl(PR_GET_NAME, (long)name, 0, 0, 0);
	prctl(PR_GET_PDEATHSIG, (long)&sig, 0, 0, 0);
	rt_syscall(SYS_sched_getparam, 0, &param);
	printf("after exec: name \"%s\"\n", name);
	printf("after exec: comm file \"");
	print_escaped(slurp("/proc/self/comm"));
	printf("\"\n");
	printf("after exec: parent-death signal %d, dumpable %ld, timer slack %ld\n", sig,
	       prctl(PR_GET_DUMPABLE, 0, 0, 0, 0), prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0));
	printf("after exec: policy %ld, priority %d\n", rt_syscall(SYS_sched_getscheduler, 0), param);
}

/* ---- sched_* --------------------------------------------------------------------------- */

static void show_sched(const char *who, long pid)
{
	int param = -1;
	long pol = rt_syscall(SYS_sched_getscheduler, pid);
	long r = rt_syscall(SYS_sched_getparam, pid, &param);
	printf("%s: policy %s%ld, priority %s %d\n", who, pol >= 0 ? "" : res(pol), pol, res(r), param);
}

static long setsched(long pid, long policy, int prio)
{
	int param = prio;
	return rt_syscall(SYS_sched_setscheduler, pid, policy, &param);
}

static void interval(const char *who)
{
	struct { long s, ns; } t = { -1, -1 };
	struct { long long s; long long ns; } t64 = { -1, -1 };
	long r = rt_syscall(SYS_sched_rr_get_interval, 0, &t);
	long r64 = rt_syscall(SYS_sched_rr_get_interval_time64, 0, &t64);
	if (t.ns >= 10000000 || t.s > 0)
		printf("%s: rr interval %s %ld.%09ld, time64 %s same: %s\n", who, res(r), t.s, t.ns, res(r64),
		       t64.s == t.s && t64.ns == t.ns ? "yes" : "no");
	else
		printf("%s: rr interval %s under 10 ms: %s, time64 %s same: %s\n", who, res(r),
		       t.s == 0 && t.ns >= 0 ? "yes" : "no", res(r64), t64.s == t.s && t64.ns == t.ns ? "yes" : "no");
}

static void sched_tests(void)
{
	int param = 0;
	show_sched("at start", 0);
	for (int pol = 0; pol <= 6; pol++)
		printf("policy %d: max %s %ld, min %ld\n", pol, res(rt_syscall(SYS_sched_get_priority_max, pol)),
		       rt_syscall(SYS_sched_get_priority_max, pol), rt_syscall(SYS_sched_get_priority_min, pol));
	printf("max of -1: %s, of SCHED_RESET_ON_FORK: %s\n", res(rt_syscall(SYS_sched_get_priority_max, -1)),
	       res(rt_syscall(SYS_sched_get_priority_min, SCHED_RESET_ON_FORK)));
	printf("setscheduler OTHER 1: %s\n", res(setsched(0, SCHED_OTHER, 1)));
	printf("setscheduler BATCH -1: %s\n", res(setsched(0, SCHED_BATCH, -1)));
	printf("setscheduler FIFO 0: %s\n", res(setsched(0, SCHED_FIFO, 0)));
	printf("setscheduler FIFO 100: %s\n", res(setsched(0, SCHED_FIFO, 100)));
	printf("setscheduler policy 4: %s\n", res(setsched(0, 4, 0)));
	printf("setscheduler DEADLINE: %s\n", res(setsched(0, SCHED_DEADLINE, 0)));
	printf("setscheduler policy -1: %s\n", res(setsched(0, -1, 0)));
	printf("setscheduler NULL param: %s\n", res(rt_syscall(SYS_sched_setscheduler, 0, SCHED_OTHER, 0)));
	printf("setscheduler bad param: %s\n", res(rt_syscall(SYS_sched_setscheduler, 0, SCHED_OTHER, BAD_PTR)));
	printf("setscheduler pid -1: %s\n", res(setsched(-1, SCHED_OTHER, 0)));
	printf("setscheduler no such pid: %s\n", res(setsched(NO_PID, SCHED_OTHER, 0)));
	printf("setparam NULL: %s\n", res(rt_syscall(SYS_sched_setparam, 0, 0)));
	param = 3;
	printf("setparam 3 under OTHER: %s\n", res(rt_syscall(SYS_sched_setparam, 0, &param)));
	param = 0;
	printf("setparam 0: %s\n", res(rt_syscall(SYS_sched_setparam, 0, &param)));
	printf("setparam no such pid: %s\n", res(rt_syscall(SYS_sched_setparam, NO_PID, &param)));
	printf("getparam NULL: %s\n", res(rt_syscall(SYS_sched_getparam, 0, 0)));
	printf("getparam bad pointer: %s\n", res(rt_syscall(SYS_sched_getparam, 0, BAD_PTR)));
	printf("getparam pid -1: %s\n", res(rt_syscall(SYS_sched_getparam, -1, &param)));
	printf("getparam no such pid: %s\n", res(rt_syscall(SYS_sched_getparam, NO_PID, &param)));
	printf("getscheduler pid -1: %s\n", res(rt_syscall(SYS_sched_getscheduler, -1)));
	printf("getscheduler no such pid: %s\n", res(rt_syscall(SYS_sched_getscheduler, NO_PID)));
	struct { long s, ns; } t;
	printf("rr_get_interval pid -1: %s\n", res(rt_syscall(SYS_sched_rr_get_interval, -1, &t)));
	printf("rr_get_interval no such pid: %s\n", res(rt_syscall(SYS_sched_rr_get_interval, NO_PID, &t)));
	printf("rr_get_interval NULL: %s\n", res(rt_syscall(SYS_sched_rr_get_interval, 0, 0)));
	interval("OTHER");

	printf("setscheduler BATCH 0: %s\n", res(setsched(0, SCHED_BATCH, 0)));
	show_sched("after BATCH", 0);
	interval("BATCH");
	printf("setparam 0 keeps the policy: %s\n", res(rt_syscall(SYS_sched_setparam, 0, &param)));
	show_sched("after setparam", 0);
	fflush_stdout();
	int up[2], down[2];
	sys_pipe(up);
	sys_pipe(down);
	long pid = sys_fork();
	if (pid == 0) {
		show_sched("fork child", 0);
		printf("child: setscheduler IDLE 0: %s\n", res(setsched(0, SCHED_IDLE, 0)));
		show_sched("child after IDLE", 0);
		fflush_stdout();
		sys_write(up[1], "i", 1);
		sys_read(down[0], &param, 1);
		/* back from SCHED_IDLE needs privilege (or RLIMIT_NICE) */
		printf("child: back to OTHER: %s\n", res(setsched(0, SCHED_OTHER, 0)));
		exit(0);
	}
	char c;
	sys_read(up[0], &c, 1);
	show_sched("the child, seen by its parent", pid);
	sys_write(down[1], "g", 1);
	wait_child(pid);
	sys_close(up[0]);
	sys_close(up[1]);
	sys_close(down[0]);
	sys_close(down[1]);
	printf("back to OTHER: %s\n", res(setsched(0, SCHED_OTHER, 0)));
	show_sched("parent", 0);

	/* The real-time policies, where the user may have them (root, RLIMIT_RTPRIO). */
	fflush_stdout();
	pid = sys_fork();
	if (pid == 0) {
		long r = setsched(0, SCHED_FIFO, 10);
		printf("rt child: FIFO 10: %s\n", res(r));
		if (r == 0) {
			show_sched("rt child", 0);
			interval("FIFO");
			param = 20;
			printf("rt child: setparam 20: %s\n", res(rt_syscall(SYS_sched_setparam, 0, &param)));
			show_sched("rt child", 0);
			printf("rt child: RR 5: %s\n", res(setsched(0, SCHED_RR, 5)));
			interval("RR");
			printf("rt child: RR 5 reset-on-fork: %s\n", res(setsched(0, SCHED_RR | SCHED_RESET_ON_FORK, 5)));
			show_sched("rt child", 0);
			fflush_stdout();
			long g = sys_fork();
			if (g == 0) {
				show_sched("its fork child", 0);
				exit(0);
			}
			wait_child(g);
			printf("rt child: back to OTHER: %s\n", res(setsched(0, SCHED_OTHER, 0)));
			show_sched("rt child", 0);
		}
		exit(0);
	}
	wait_child(pid);
}

static void getcpu_tests(void)
{
	unsigned cpu = 12345, node = 12345;
	uint32_t mask[32] = { 0 };
	long r = rt_syscall(SYS_getcpu, &cpu, &node, 0);
	long n = rt_syscall(SYS_sched_getaffinity, 0, sizeof mask, mask);
	printf("getcpu: %s, the cpu is in the affinity mask: %s, node below 64: %s\n", res(r),
	       n > 0 && cpu < 1024 && (mask[cpu / 32] >> (cpu % 32)) & 1 ? "yes" : "no", node < 64 ? "yes" : "no");
	printf("getcpu NULL, NULL: %s\n", res(rt_syscall(SYS_getcpu, 0, 0, 0)));
	printf("getcpu node only: %s\n", res(rt_syscall(SYS_getcpu, 0, &node, 0)));
	printf("getcpu bad cpu pointer: %s\n", res(rt_syscall(SYS_getcpu, BAD_PTR, 0, 0)));
	printf("getcpu bad node pointer: %s\n", res(rt_syscall(SYS_getcpu, &cpu, BAD_PTR, 0)));
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--after-exec") == 0) {
		after_exec();
		return 0;
	}
	name_tests();
	pdeathsig_tests();
	subreaper_tests();
	flag_tests();
	exec_tests(argv);
	sched_tests();
	getcpu_tests();
	return 0;
}
