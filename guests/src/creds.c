/*
 * creds.c - user and group ids: getuid and relatives (32- and 16-bit), getresuid,
 * setuid, setreuid, setresuid, setfsuid and the group ones under Linux's rules (a
 * privileged caller sets any id, an unprivileged one only to one of its own; which
 * calls move the saved and file-system ids), the 16-bit calls' -1 and EINVAL, the ids
 * inherited by fork and kept by exec (which sets the saved ids to the effective ones),
 * /proc/self/status's Uid and Gid lines, kill's permission check (EPERM across users,
 * SIGCONT within the session allowed) and the si_uid of a child's waitid report. Run
 * as root it drops privileges in children; run as another user it takes the
 * unprivileged paths only. Nothing host-specific is printed beyond the host's own ids.
 */
#include "rt.h"

#define SYS_execve	11
#define SYS_setuid16	23
#define SYS_getuid16	24
#define SYS_setgid16	46
#define SYS_getgid16	47
#define SYS_geteuid16	49
#define SYS_getegid16	50
#define SYS_getppid	64
#define SYS_setreuid16	70
#define SYS_setregid16	71
#define SYS_setfsuid16	138
#define SYS_setfsgid16	139
#define SYS_setresuid16	164
#define SYS_getresuid16	165
#define SYS_setresgid16	170
#define SYS_getresgid16	171
#define SYS_setreuid	203
#define SYS_setregid	204
#define SYS_setresuid	208
#define SYS_getresuid	209
#define SYS_setresgid	210
#define SYS_getresgid	211
#define SYS_setuid	213
#define SYS_setgid	214
#define SYS_setfsuid	215
#define SYS_setfsgid	216
#define SYS_waitid	284
#define SYS_getgroups16	80
#define SYS_setgroups16	81
#define SYS_getgroups	205
#define SYS_setgroups	206

#define SIGCONT_	18
#define P_PID_		1
#define WEXITED_	4

static const char *res(long r)
{
	static char buf[32];
	switch (r) {
	case -1: return "EPERM";
	case -3: return "ESRCH";
	case -14: return "EFAULT";
	case -22: return "EINVAL";
	default:
		snprintf(buf, sizeof buf, "%ld", r);
		return buf;
	}
}

#define TRY(call) printf("%-34s %s\n", #call, res(call))

/* The thread's ids, as getresuid/getresgid and setfsuid(-1)/setfsgid(-1) give them. */
static void show(const char *what)
{
	unsigned r = 9, e = 9, s = 9, gr = 9, ge = 9, gs = 9;
	rt_syscall(SYS_getresuid, &r, &e, &s);
	rt_syscall(SYS_getresgid, &gr, &ge, &gs);
	long fu = rt_syscall(SYS_setfsuid, -1), fg = rt_syscall(SYS_setfsgid, -1);
	printf("%s: uid %u %u %u fs %ld, gid %u %u %u fs %ld\n", what, r, e, s, fu, gr, ge, gs, fg);
}

/* The Uid: and Gid: lines of /proc/self/status. */
static void status_lines(void)
{
	char buf[4096];
	int fd = (int)sys_open("/proc/self/status", 0, 0);
	if (fd < 0) {
		printf("status: %s\n", res(fd));
		return;
	}
	long n = sys_read(fd, buf, sizeof buf - 1);
	sys_close(fd);
	buf[n > 0 ? n : 0] = 0;
	for (char *line = buf; *line;) {
		char *end = strchr(line, '\n');
		if (end)
			*end = 0;
		if (!strncmp(line, "Uid:", 4) || !strncmp(line, "Gid:", 4) || !strncmp(line, "Groups:", 7))
			printf("status %s\n", line);
		if (!end)
			break;
		line = end + 1;
	}
}

static int wait_child(long pid)
{
	int st = 0;
	sys_waitpid((int)pid, &st, 0);
	return st;
}

/* The unprivileged rules, for a caller whose ids are all `me`. */
static void unprivileged(unsigned me)
{
	TRY(rt_syscall(SYS_setuid, me));
	TRY(rt_syscall(SYS_setuid, me + 1));
	TRY(rt_syscall(SYS_setuid, -1));
	TRY(rt_syscall(SYS_setreuid, -1, -1));
	TRY(rt_syscall(SYS_setreuid, me + 1, -1));
	TRY(rt_syscall(SYS_setreuid, -1, me + 1));
	TRY(rt_syscall(SYS_setresuid, -1, -1, -1));
	TRY(rt_syscall(SYS_setresuid, me, me, me));
	TRY(rt_syscall(SYS_setresuid, -1, -1, me + 1));
	TRY(rt_syscall(SYS_setgid, me + 1));
	TRY(rt_syscall(SYS_setresgid, -1, me + 1, -1));
	printf("setfsuid(me+1) returns the old one: %s\n", rt_syscall(SYS_setfsuid, me + 1) == (long)me ? "yes" : "no");
	show("after refusals");
	TRY(rt_syscall(SYS_setuid16, 0xffff));
	TRY(rt_syscall(SYS_setuid16, 0));
	TRY(rt_syscall(SYS_setgroups, 0, 0));
	TRY(rt_syscall(SYS_setgroups, 70000, 0));
	TRY(rt_syscall(SYS_setreuid16, 0xffff, 0xffff));
}

static void print_groups(const char *what)
{
	unsigned g[8];
	long n = rt_syscall(SYS_getgroups, 8, g);
	printf("%s: %s:", what, res(n));
	for (long i = 0; i < n; i++)
		printf(" %u", g[i]);
	printf("\n");
}

/* setgroups and getgroups, 32- and 16-bit, by a privileged caller. */
static void groups_test(void)
{
	unsigned g3[] = { 50, 30, 90 };
	TRY(rt_syscall(SYS_setgroups, 3, g3));
	print_groups("setgroups(50, 30, 90)");
	unsigned g1[1];
	TRY(rt_syscall(SYS_getgroups, 1, g1));
	TRY(rt_syscall(SYS_getgroups, 0, 0));
	TRY(rt_syscall(SYS_getgroups, -1, g1));
	TRY(rt_syscall(SYS_setgroups, 70000, g3));
	TRY(rt_syscall(SYS_setgroups, 1, 0));
	unsigned bad[] = { 4, 0xffffffffu };
	TRY(rt_syscall(SYS_setgroups, 2, bad));
	unsigned short h[] = { 7, 0xffff };
	TRY(rt_syscall(SYS_setgroups16, 2, h));
	TRY(rt_syscall(SYS_setgroups16, 1, h));
	unsigned short h2[4] = { 1, 1, 1, 1 };
	TRY(rt_syscall(SYS_getgroups16, 4, h2));
	printf("getgroups16: %u %u\n", h2[0], h2[1]);
	print_groups("setgroups16(7)");
	status_lines();
	TRY(rt_syscall(SYS_setgroups, 0, 0));
	print_groups("setgroups(0)");
}

/* Root giving up its ids step by step, in a child. */
static void privileged(char **argv)
{
	show("root");
	status_lines();
	long pid = sys_fork();
	if (pid == 0) {
		groups_test();
		TRY(rt_syscall(SYS_setresgid, 100, 200, 300));
		TRY(rt_syscall(SYS_setresuid, 1000, 0, 2000));
		show("setresuid(1000, 0, 2000)");
		status_lines();
		TRY(rt_syscall(SYS_setuid16, 0x1ffff));
		unsigned short a = 1, b = 1, c = 1;
		TRY(rt_syscall(SYS_getresuid16, &a, &b, &c));
		printf("getresuid16: %u %u %u\n", a, b, c);
		TRY(rt_syscall(SYS_getuid16));
		TRY(rt_syscall(SYS_geteuid16));
		TRY(rt_syscall(SYS_getgid16));
		TRY(rt_syscall(SYS_getegid16));
		TRY(rt_syscall(SYS_setresgid16, 0xffff, 70, 0xffff));
		TRY(rt_syscall(SYS_getresgid16, &a, &b, 0));
		TRY(rt_syscall(SYS_setfsgid16, 0xffff));
		TRY(rt_syscall(SYS_setgid16, 600));
		TRY(rt_syscall(SYS_setfsuid16, 7000));
		TRY(rt_syscall(SYS_setresuid16, 70000, -1, -1));
		show("16-bit calls, privileged");
		TRY(rt_syscall(SYS_setresuid, 1000, 0, 2000));
		TRY(rt_syscall(SYS_setresgid, 100, 200, 300));
		TRY(rt_syscall(SYS_setregid, 500, 600));
		TRY(rt_syscall(SYS_setreuid, 3000, 0));
		show("setregid(500, 600), setreuid(3000, 0)");
		TRY(rt_syscall(SYS_setreuid, 1000, -1));
		show("setreuid(1000, -1)");
		TRY(rt_syscall(SYS_setresuid, 1000, 0, 2000));
		TRY(rt_syscall(SYS_setreuid, -1, 1000));
		show("setreuid(-1, 1000)");
		TRY(rt_syscall(SYS_setresuid, -1, 0, -1));
		show("effective 0 again");
		TRY(rt_syscall(SYS_setreuid, 3000, -1));
		show("setreuid(3000, -1)");
		TRY(rt_syscall(SYS_setfsuid, 4000));
		TRY(rt_syscall(SYS_setfsgid, 4001));
		show("setfsuid(4000), setfsgid(4001)");
		TRY(rt_syscall(SYS_setregid, 500, 600));
		show("setregid(500, 600)");
		/* Now give up root for good: every id 5000. */
		TRY(rt_syscall(SYS_setuid, 5000));
		show("setuid(5000)");
		TRY(rt_syscall(SYS_setuid, 0));
		TRY(rt_syscall(SYS_setresuid, 0, -1, -1));
		TRY(sys_kill((int)rt_syscall(SYS_getppid), 0));
		TRY(sys_kill((int)rt_syscall(SYS_getppid), SIGCONT_));
		TRY(sys_kill((int)sys_getpid(), 0));
		unprivileged(5000);
		status_lines();
		fflush_stdout();
		/* exec keeps the ids and makes the saved ones the effective ones. */
		TRY(rt_syscall(SYS_setresuid, 5000, 5000, 5000));
		char *args[] = { argv[0], "--after-exec", 0 };
		long r = rt_syscall(SYS_execve, "/proc/self/exe", args, environ);
		printf("execve failed: %s\n", res(r));
		_exit(1);
	}
	printf("child status: %d\n", wait_child(pid));
	/* A child whose real id differs: its waitid report carries it. */
	fflush_stdout();
	pid = sys_fork();
	if (pid == 0) {
		rt_syscall(SYS_setresuid, 4242, 0, 0);
		_exit(3);
	}
	int si[32];
	memset(si, 0, sizeof si);
	long r = rt_syscall(SYS_waitid, P_PID_, pid, si, WEXITED_, 0);
	printf("waitid: %s, uid %d, status %d\n", res(r), si[4], si[5]);
	/* seteuid in a child, then back: the saved id keeps root reachable. */
	fflush_stdout();
	pid = sys_fork();
	if (pid == 0) {
		TRY(rt_syscall(SYS_setresuid, -1, 1234, -1));
		TRY(sys_kill((int)rt_syscall(SYS_getppid), 0));
		TRY(rt_syscall(SYS_setresuid, -1, 0, -1));
		TRY(sys_kill((int)rt_syscall(SYS_getppid), 0));
		show("back to root");
		_exit(0);
	}
	printf("child status: %d\n", wait_child(pid));
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--after-exec")) {
		show("after exec");
		status_lines();
		return 0;
	}
	unsigned uid = (unsigned)sys_getuid(), euid = (unsigned)sys_geteuid();
	unsigned gid = (unsigned)sys_getgid(), egid = (unsigned)sys_getegid();
	printf("32-bit and 16-bit agree: %s\n",
	       rt_syscall(SYS_getuid16) == (long)(uid > 0xffff ? 65534 : uid) &&
			       rt_syscall(SYS_getegid16) == (long)(egid > 0xffff ? 65534 : egid)
		       ? "yes"
		       : "no");
	printf("real and effective agree: %s\n", uid == euid && gid == egid ? "yes" : "no");
	if (euid == 0) {
		privileged(argv);
	} else {
		show("user");
		unprivileged(euid);
	}
	return 0;
}
