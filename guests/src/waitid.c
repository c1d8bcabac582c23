/*
 * waitid.c - waitid(2) against native: P_ALL, P_PID and P_PGID (and P_PIDFD's
 * errors); WEXITED, WSTOPPED, WCONTINUED, WNOHANG and WNOWAIT in combination; the
 * siginfo it fills (si_signo, si_code CLD_EXITED/KILLED/STOPPED/CONTINUED, si_pid,
 * si_uid, si_status) and the zeros it leaves when nothing is reported; a rusage; a
 * NULL infop; children stopped and continued by SIGSTOP/SIGCONT (and the SIGCHLD
 * their parent gets, or not with SA_NOCLDSTOP), killed children, clone children
 * (__WCLONE, __WALL); wait4's WUNTRACED and WCONTINUED on the same children; a
 * blocking waitid interrupted by a signal (EINTR) and restarted (SA_RESTART); ECHILD
 * and EINVAL. Pids are printed only as relations.
 */
#include "rt.h"

#define SYS_setpgid	57
#define SYS_getpgrp	65
#define SYS_wait4	114
#define SYS_clone	120
#define SYS_rt_sigaction 174
#define SYS_rt_sigprocmask 175
#define SYS_rt_sigtimedwait 177
#define SYS_setitimer	104
#define SYS_waitid	284

#define P_ALL		0
#define P_PID		1
#define P_PGID		2
#define P_PIDFD		3

#define WNOHANG_	1
#define WSTOPPED	2
#define WEXITED		4
#define WCONTINUED	8
#define WNOWAIT		0x01000000
#define __WCLONE	0x80000000u
#define __WALL		0x40000000

#define SIGKILL_	9
#define SIGUSR1_	10
#define SIGTERM_	15
#define SIGCHLD_	17
#define SIGCONT_	18
#define SIGSTOP_	19
#define SIGTSTP_	20
#define SIGALRM_	14

#define SA_NOCLDSTOP_	1
#define SA_SIGINFO_	4
#define SA_RESTORER_	0x04000000
#define SA_RESTART_	0x10000000

#define CLD_NAMES "?", "CLD_EXITED", "CLD_KILLED", "CLD_DUMPED", "CLD_TRAPPED", "CLD_STOPPED", "CLD_CONTINUED"

struct rusage_ { long utime_s, utime_us, stime_s, stime_us, rest[14]; };

static const char *res(long r)
{
	static char buf[24];
	switch (r) {
	case -4: return "EINTR";
	case -9: return "EBADF";
	case -10: return "ECHILD";
	case -11: return "EAGAIN";
	case -14: return "EFAULT";
	case -22: return "EINVAL";
	default:
		if (r >= 0)
			return "ok";
		snprintf(buf, sizeof buf, "%ld", r);
		return buf;
	}
}

static long waitid(int type, long id, int *si, unsigned options, void *ru)
{
	return rt_syscall(SYS_waitid, type, id, si, options, ru);
}

/* Prints what waitid returned and filled in; `want` is the pid expected. */
static void show(const char *what, long r, const int *si, long want)
{
	static const char *codes[] = { CLD_NAMES };
	int code = si[2];
	const char *cname = code >= 0 && code <= 6 ? codes[code] : "other";
	if (si[3] == 0)
		printf("%s: %s, signo %d, errno %d, code %d, pid 0, uid %d, status %d\n", what, res(r), si[0], si[1], code,
		       si[4], si[5]);
	else
		printf("%s: %s, signo %d, errno %d, %s, pid %s, uid matches %s, status %d\n", what, res(r), si[0], si[1],
		       cname, si[3] == want ? "the child's" : "another", si[4] == sys_getuid() ? "yes" : "no", si[5]);
	printf("  untouched after the six fields: %s\n", (uint32_t)si[6] == 0xa5a5a5a5u ? "yes" : "no");
}

/* waitid and show, with the siginfo first filled with a pattern. */
static long try_wait(const char *what, int type, long id, unsigned options, long want)
{
	int si[32];
	memset(si, 0xa5, sizeof si);
	long r = waitid(type, id, si, options, 0);
	show(what, r, si, want);
	return r;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };
	sys_nanosleep(&ts, 0);
}

/* A child that exits with `code` (after `ms` milliseconds). */
static long child_exiting(int code, long ms)
{
	fflush_stdout();
	long pid = sys_fork();
	if (pid == 0) {
		if (ms)
			sleep_ms(ms);
		_exit(code);
	}
	return pid;
}

/* A child that waits for a byte on `fd`, then exits with it as its code. */
static long child_reading(int fd)
{
	fflush_stdout();
	long pid = sys_fork();
	if (pid == 0) {
		unsigned char c = 99;
		while (sys_read(fd, &c, 1) < 0)
			;
		_exit(c);
	}
	return pid;
}

static void sigaction_(int sig, void *fn, uint32_t flags)
{
	struct ksigaction a = { fn, flags | SA_RESTORER_, (void *)restore_rt, { 0, 0 } };
	rt_syscall(SYS_rt_sigaction, sig, &a, 0, 8);
}

static void block(int sig, int how)
{
	uint32_t set[2] = { 1u << (sig - 1), 0 };
	rt_syscall(SYS_rt_sigprocmask, how, set, 0, 8);
}

/* The next SIGCHLD (blocked), within `ms`: its code and status, or "none". */
static void next_sigchld(const char *what, long ms, long want)
{
	static const char *codes[] = { CLD_NAMES };
	uint32_t set[2] = { 1u << (SIGCHLD_ - 1), 0 };
	int si[32];
	struct timespec t = { ms / 1000, (ms % 1000) * 1000000 };
	memset(si, 0, sizeof si);
	long r = rt_syscall(SYS_rt_sigtimedwait, set, si, &t, 8);
	if (r == SIGCHLD_)
		printf("%s: SIGCHLD %s status %d from the child %s\n", what, si[2] >= 0 && si[2] <= 6 ? codes[si[2]] : "?",
		       si[5], si[3] == want ? "yes" : "no");
	else
		printf("%s: %s\n", what, res(r));
}

static void errors(void)
{
	int si[32];
	printf("-- errors\n");
	try_wait("no children", P_ALL, 0, WEXITED, 0);
	try_wait("no children, WNOHANG", P_ALL, 0, WEXITED | WNOHANG_, 0);
	try_wait("no options", P_ALL, 0, 0, 0);
	try_wait("WNOHANG alone", P_ALL, 0, WNOHANG_, 0);
	try_wait("WNOWAIT alone", P_ALL, 0, WNOWAIT, 0);
	try_wait("unknown option", P_ALL, 0, WEXITED | 0x100, 0);
	try_wait("idtype 4", 4, 0, WEXITED, 0);
	try_wait("idtype -1", -1, 0, WEXITED, 0);
	try_wait("P_PID 0", P_PID, 0, WEXITED, 0);
	try_wait("P_PID -1", P_PID, -1, WEXITED, 0);
	try_wait("P_PGID -1", P_PGID, -1, WEXITED, 0);
	try_wait("P_PIDFD -1", P_PIDFD, -1, WEXITED, 0);
	try_wait("P_PIDFD of stdin", P_PIDFD, 0, WEXITED, 0);
	try_wait("P_PIDFD 999", P_PIDFD, 999, WEXITED, 0);
	printf("bad infop and bad options: %s\n", res(waitid(P_ALL, 0, (int *)4, 0, 0)));
	printf("bad infop, no children: %s\n", res(waitid(P_ALL, 0, (int *)4, WEXITED, 0)));
	printf("NULL infop, no children: %s\n", res(waitid(P_ALL, 0, 0, WEXITED, 0)));
	printf("wait4 with WNOWAIT: %s\n", res(rt_syscall(SYS_wait4, -1, si, WNOWAIT, 0)));
	printf("wait4 with WSTOPPED|WEXITED: %s\n", res(rt_syscall(SYS_wait4, -1, si, WSTOPPED | WEXITED, 0)));
}

static void exits(void)
{
	int pipefd[2];
	printf("-- exits\n");
	sys_pipe(pipefd);
	long a = child_reading(pipefd[0]);
	try_wait("a live child, WNOHANG", P_ALL, 0, WEXITED | WNOHANG_, a);
	try_wait("a live child, WNOHANG|WNOWAIT", P_PID, a, WEXITED | WNOHANG_ | WNOWAIT, a);
	try_wait("P_PID of another pid", P_PID, a + 1000, WEXITED | WNOHANG_, a);
	sys_write(pipefd[1], "\7", 1);
	try_wait("WNOWAIT", P_PID, a, WEXITED | WNOWAIT, a);
	try_wait("WNOWAIT again", P_ALL, 0, WEXITED | WNOWAIT, a);
	try_wait("WSTOPPED|WCONTINUED of a zombie, WNOHANG", P_ALL, 0, WSTOPPED | WCONTINUED | WNOHANG_, a);
	try_wait("WEXITED", P_PID, a, WEXITED, a);
	try_wait("after the reap", P_PID, a, WEXITED, a);

	/* WNOWAIT, then a real wait by wait4 */
	long b = child_exiting(3, 0);
	try_wait("WNOWAIT", P_ALL, 0, WEXITED | WNOWAIT, b);
	int st = -1;
	long r = rt_syscall(SYS_wait4, b, &st, 0, 0);
	printf("wait4 after WNOWAIT: %s status %#x\n", r == b ? "the child" : res(r), st);

	/* a NULL infop reaps too */
	long c = child_exiting(4, 0);
	r = waitid(P_PID, c, 0, WEXITED, 0);
	printf("NULL infop: %s\n", res(r));
	printf("then wait4: %s\n", res(rt_syscall(SYS_wait4, c, &st, WNOHANG_, 0)));

	/* a rusage */
	long d = child_exiting(5, 0);
	struct rusage_ ru;
	int si[32];
	memset(&ru, 0xff, sizeof ru);
	memset(si, 0xa5, sizeof si);
	r = waitid(P_ALL, 0, si, WEXITED, &ru);
	show("with a rusage", r, si, d);
	printf("  rusage filled: %s\n",
	       ru.utime_s >= 0 && ru.utime_us >= 0 && ru.utime_us < 1000000 && ru.stime_s >= 0 ? "yes" : "no");

	/* two zombies: the older is reported first */
	long e = child_exiting(8, 0), f = child_exiting(9, 0);
	waitid(P_PID, e, si, WEXITED | WNOWAIT, 0);
	waitid(P_PID, f, si, WEXITED | WNOWAIT, 0);
	try_wait("two zombies, the first", P_ALL, 0, WEXITED, e);
	try_wait("two zombies, the second", P_ALL, 0, WEXITED, f);
	sys_close(pipefd[0]);
	sys_close(pipefd[1]);
}

static void kills(void)
{
	int pipefd[2];
	printf("-- killed\n");
	sys_pipe(pipefd);
	long a = child_reading(pipefd[0]);
	sys_kill((int)a, SIGTERM_);
	try_wait("SIGTERM", P_PID, a, WEXITED, a);
	long b = child_reading(pipefd[0]);
	sys_kill((int)b, SIGKILL_);
	try_wait("SIGKILL, WNOWAIT", P_ALL, 0, WEXITED | WNOWAIT, b);
	int st = -1;
	long r = rt_syscall(SYS_wait4, -1, &st, 0, 0);
	printf("wait4: %s status %#x\n", r == b ? "the child" : res(r), st);
	sys_close(pipefd[0]);
	sys_close(pipefd[1]);
}

static void groups(void)
{
	printf("-- process groups\n");
	fflush_stdout();
	int up[2], down[2];
	sys_pipe(up);
	sys_pipe(down);
	long a = sys_fork();
	if (a == 0) {
		char c;
		rt_syscall(SYS_setpgid, 0, 0);
		sys_write(up[1], "g", 1);
		sys_read(down[0], &c, 1);
		sleep_ms(20);
		_exit(11);
	}
	char c;
	sys_read(up[0], &c, 1);
	try_wait("P_PGID 0 (ours), the child in its own group", P_PGID, 0, WEXITED | WNOHANG_, a);
	try_wait("P_PGID of the child's group, WNOHANG", P_PGID, a, WEXITED | WNOHANG_, a);
	sys_write(down[1], "x", 1);
	try_wait("P_PGID of the child's group", P_PGID, a, WEXITED, a);
	long b = child_exiting(12, 10);
	try_wait("P_PGID 0, a child in our group", P_PGID, 0, WEXITED, b);
	long c2 = child_exiting(13, 0);
	try_wait("P_PGID of our group by number", P_PGID, rt_syscall(SYS_getpgrp), WEXITED, c2);
	sys_close(up[0]);
	sys_close(up[1]);
	sys_close(down[0]);
	sys_close(down[1]);
}

static void stops(void)
{
	int pipefd[2];
	printf("-- stopped and continued\n");
	sys_pipe(pipefd);
	block(SIGCHLD_, 0);
	long a = child_reading(pipefd[0]);
	/* The child in a process group of its own, whose parent (this process) is in
	 * another group of the same session: not an orphaned group, in which Linux
	 * discards SIGTSTP (and natively this process's own group may be one, depending on
	 * what ran it). */
	rt_syscall(SYS_setpgid, a, a);
	try_wait("a running child, WSTOPPED|WCONTINUED|WNOHANG", P_PID, a, WSTOPPED | WCONTINUED | WNOHANG_, a);
	sys_kill((int)a, SIGSTOP_);
	next_sigchld("after SIGSTOP", 5000, a);
	try_wait("WSTOPPED|WNOWAIT", P_PID, a, WSTOPPED | WNOWAIT, a);
	try_wait("WSTOPPED|WNOWAIT again", P_ALL, 0, WSTOPPED | WNOWAIT, a);
	try_wait("WEXITED|WNOHANG of the stopped child", P_ALL, 0, WEXITED | WNOHANG_, a);
	try_wait("WCONTINUED|WNOHANG of the stopped child", P_ALL, 0, WCONTINUED | WNOHANG_, a);
	try_wait("WSTOPPED", P_PID, a, WSTOPPED, a);
	try_wait("WSTOPPED again, WNOHANG", P_PID, a, WSTOPPED | WNOHANG_, a);
	sys_kill((int)a, SIGCONT_);
	next_sigchld("after SIGCONT", 5000, a);
	try_wait("WSTOPPED|WNOHANG of the continued child", P_ALL, 0, WSTOPPED | WNOHANG_, a);
	try_wait("WCONTINUED|WNOWAIT", P_PID, a, WCONTINUED | WNOWAIT, a);
	try_wait("WCONTINUED|WEXITED", P_PID, a, WCONTINUED | WEXITED, a);
	try_wait("WCONTINUED again, WNOHANG", P_PID, a, WCONTINUED | WNOHANG_, a);

	/* wait4 sees the same events */
	int st = -1;
	sys_kill((int)a, SIGTSTP_);
	next_sigchld("after SIGTSTP", 5000, a);
	long r = rt_syscall(SYS_wait4, a, &st, WSTOPPED, 0);
	printf("wait4 WUNTRACED: %s status %#x\n", r == a ? "the child" : res(r), st);
	r = rt_syscall(SYS_wait4, a, &st, WSTOPPED | WNOHANG_, 0);
	printf("wait4 WUNTRACED again: %s\n", res(r));
	sys_kill((int)a, SIGCONT_);
	next_sigchld("after SIGCONT", 5000, a);
	r = rt_syscall(SYS_wait4, a, &st, WCONTINUED, 0);
	printf("wait4 WCONTINUED: %s status %#x\n", r == a ? "the child" : res(r), st);

	/* continued before the parent looked: the stop is not reported any more */
	sys_kill((int)a, SIGSTOP_);
	next_sigchld("after SIGSTOP", 5000, a);
	sys_kill((int)a, SIGCONT_);
	next_sigchld("after SIGCONT", 5000, a);
	try_wait("WSTOPPED|WNOHANG after a stop and a continue", P_PID, a, WSTOPPED | WNOHANG_, a);
	try_wait("WCONTINUED", P_PID, a, WCONTINUED, a);

	/* a stopped child goes on reading its pipe once continued, and exits */
	sys_kill((int)a, SIGSTOP_);
	next_sigchld("after SIGSTOP", 5000, a);
	try_wait("WEXITED|WNOHANG while stopped", P_PID, a, WEXITED | WNOHANG_, a);
	sys_kill((int)a, SIGCONT_);
	next_sigchld("after SIGCONT", 5000, a);
	sys_write(pipefd[1], "\25", 1);
	try_wait("WEXITED", P_PID, a, WEXITED, a);
	next_sigchld("after the exit", 5000, a);

	/* a stopped child killed */
	long b = child_reading(pipefd[0]);
	sys_kill((int)b, SIGSTOP_);
	try_wait("WSTOPPED", P_ALL, 0, WSTOPPED, b);
	next_sigchld("after SIGSTOP", 5000, b);
	sys_kill((int)b, SIGKILL_);
	try_wait("SIGKILL while stopped", P_PID, b, WEXITED, b);
	next_sigchld("after SIGKILL", 5000, b);

	/* SA_NOCLDSTOP: no SIGCHLD for a stop or a continue, only for the exit */
	sigaction_(SIGCHLD_, 0, SA_NOCLDSTOP_);
	long c = child_reading(pipefd[0]);
	sys_kill((int)c, SIGSTOP_);
	try_wait("WSTOPPED with SA_NOCLDSTOP", P_PID, c, WSTOPPED, c);
	next_sigchld("after SIGSTOP with SA_NOCLDSTOP", 100, c);
	sys_kill((int)c, SIGCONT_);
	try_wait("WCONTINUED with SA_NOCLDSTOP", P_PID, c, WCONTINUED, c);
	next_sigchld("after SIGCONT with SA_NOCLDSTOP", 100, c);
	sys_kill((int)c, SIGTERM_);
	try_wait("WEXITED", P_PID, c, WEXITED, c);
	next_sigchld("after the exit with SA_NOCLDSTOP", 5000, c);
	sigaction_(SIGCHLD_, 0, 0);
	block(SIGCHLD_, 1);
	sys_close(pipefd[0]);
	sys_close(pipefd[1]);
}

/* clone(flags = 0): a child whose exit signal is none, a "clone child" to wait. */
static long clone_child(int code)
{
	fflush_stdout();
	long pid = rt_syscall(SYS_clone, 0, 0, 0, 0, 0);
	if (pid == 0)
		_exit(code);
	return pid;
}

static void clones(void)
{
	printf("-- clone children\n");
	long a = clone_child(21);
	try_wait("plain WEXITED|WNOHANG", P_PID, a, WEXITED | WNOHANG_, a);
	int si[32];
	waitid(P_PID, a, si, WEXITED | WNOWAIT | __WALL, 0);
	try_wait("plain WEXITED after it exited", P_ALL, 0, WEXITED | WNOHANG_, a);
	try_wait("__WCLONE", P_ALL, 0, WEXITED | __WCLONE, a);
	long b = clone_child(22);
	try_wait("__WALL", P_PID, b, WEXITED | __WALL, b);
	long c = child_exiting(23, 0);
	waitid(P_PID, c, si, WEXITED | WNOWAIT, 0);
	try_wait("__WCLONE, a fork child", P_ALL, 0, WEXITED | __WCLONE | WNOHANG_, c);
	try_wait("__WALL, a fork child", P_ALL, 0, WEXITED | __WALL, c);
}

static volatile int alarms;
static int wake_fd = -1;

static void on_alarm(int sig, void *si, void *uc)
{
	alarms++;
	if (wake_fd >= 0)
		sys_write(wake_fd, "\36", 1);
}

static void interrupted(void)
{
	int pipefd[2];
	printf("-- interrupted\n");
	sys_pipe(pipefd);
	long a = child_reading(pipefd[0]);
	/* A periodic timer: an alarm that fires before the wait starts (a loaded host)
	 * is followed by another that interrupts it. */
	long it[4] = { 0, 30000, 0, 30000 };
	long off[4] = { 0, 0, 0, 0 };
	sigaction_(SIGALRM_, (void *)on_alarm, SA_SIGINFO_);
	rt_syscall(SYS_setitimer, 0, it, 0);
	int si[32];
	memset(si, 0xa5, sizeof si);
	long r = waitid(P_PID, a, si, WEXITED, 0);
	rt_syscall(SYS_setitimer, 0, off, 0);
	printf("without SA_RESTART: %s after %s alarm\n", res(r), alarms >= 1 ? "an" : "no");
	alarms = 0;
	/* with SA_RESTART the wait goes on; the handler lets the child exit */
	wake_fd = pipefd[1];
	sigaction_(SIGALRM_, (void *)on_alarm, SA_SIGINFO_ | SA_RESTART_);
	rt_syscall(SYS_setitimer, 0, it, 0);
	memset(si, 0xa5, sizeof si);
	r = waitid(P_PID, a, si, WEXITED, 0);
	show("with SA_RESTART", r, si, a);
	rt_syscall(SYS_setitimer, 0, off, 0);
	printf("alarms: %s\n", alarms >= 1 ? "at least one" : "none");
	sigaction_(SIGALRM_, 0, 0);
	sys_close(pipefd[0]);
	sys_close(pipefd[1]);
}

int main(void)
{
	errors();
	exits();
	kills();
	groups();
	stops();
	clones();
	interrupted();
	try_wait("-- at the end", P_ALL, 0, WEXITED | WSTOPPED | WCONTINUED | __WALL, 0);
	return 0;
}
