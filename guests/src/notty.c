/*
 * notty.c - TIOCNOTTY by a process that does not lead its session: it loses its
 * controlling terminal alone, with no signal (SIGHUP and SIGCONT are not sent to
 * anyone): /dev/tty then fails with ENXIO, TIOCGPGRP, TIOCGSID and TIOCNOTTY on the
 * terminal with ENOTTY, /proc/self/stat shows no terminal; a child it forks after has
 * none either; the session leader keeps it; a process that was never given it (after
 * setsid) gets ENOTTY. The pty's number and pids are printed only as relations.
 */
#include "rt.h"

#define SYS_setsid 66
#define SYS_rt_sigprocmask_ 175
#define SYS_rt_sigpending_ 176
#define O_NOCTTY_ 0400
#define TIOCSCTTY 0x540e
#define TIOCGPGRP 0x540f
#define TIOCNOTTY 0x5422
#define TIOCGSID 0x5429
#define TIOCGPTN 0x80045430
#define TIOCSPTLCK 0x40045431

static const char *res(long r)
{
	return r >= 0 ? "ok" : errno_str(r);
}

/* Fields 7 (tty_nr) and 8 (tpgid) of /proc/self/stat. */
static void stat_tty(long *nr, long *tpgid)
{
	char b[512];
	int f = (int)sys_open("/proc/self/stat", 0, 0);
	long n = sys_read(f, b, sizeof b - 1);
	sys_close(f);
	b[n < 0 ? 0 : n] = 0;
	char *s = b;
	for (char *t = b; *t; t++)
		if (*t == ')')
			s = t + 2; /* past the name: state is field 3 */
	long v[8];
	int k = 0;
	for (int field = 3; field <= 8 && *s; field++) {
		while (*s == ' ')
			s++;
		int neg = *s == '-';
		if (neg)
			s++;
		long x = 0;
		while (*s >= '0' && *s <= '9')
			x = x * 10 + (*s++ - '0');
		while (*s && *s != ' ')
			s++;
		v[k++] = neg ? -x : x;
	}
	*nr = v[4];
	*tpgid = v[5];
}

static void show(const char *who, int s)
{
	long me = sys_getpid();
	long t = sys_open("/dev/tty", 2, 0);
	if (t >= 0)
		sys_close(t);
	int pg = -1, sid = -1;
	long gp = sys_ioctl(s, TIOCGPGRP, &pg);
	long gs = sys_ioctl(s, TIOCGSID, &sid);
	long nr, tpgid;
	stat_tty(&nr, &tpgid);
	printf("%s: /dev/tty %s, TIOCGPGRP %s (%s), TIOCGSID %s, tty_nr set %d, tpgid %s\n", who, res(t), res(gp),
	       pg == -1 ? "-" : pg == sid ? "the leader's group" : pg == me ? "its own group" : "another group", res(gs),
	       nr != 0, tpgid == -1 ? "-1" : tpgid == pg ? "that group" : "other");
}

static uint32_t pending(void)
{
	uint32_t p[2] = { 0, 0 };
	rt_syscall(SYS_rt_sigpending_, p, 8);
	return p[0];
}

int main(void)
{
	long m = sys_open("/dev/ptmx", 2 | O_NOCTTY_, 0);
	int zero = 0;
	unsigned n = 0;
	sys_ioctl(m, TIOCSPTLCK, &zero);
	sys_ioctl(m, TIOCGPTN, &n);
	char path[32];
	snprintf(path, sizeof path, "/dev/pts/%u", n);
	fflush_stdout();
	long leader = sys_fork();
	if (leader == 0) {
		/* SIGHUP and SIGCONT blocked, to see whether any is sent. */
		uint32_t set[2] = { (1u << 0) | (1u << 17), 0 };
		rt_syscall(SYS_rt_sigprocmask_, 0, set, 0, 8);
		sys_close((int)m);
		rt_syscall(SYS_setsid);
		int s = (int)sys_open(path, 2 | O_NOCTTY_, 0);
		printf("leader: TIOCSCTTY %s\n", res(sys_ioctl(s, TIOCSCTTY, 0)));
		show("leader", s);
		fflush_stdout();
		long c = sys_fork();
		if (c == 0) {
			show("member", s);
			long r1 = sys_ioctl(s, TIOCNOTTY, 0);
			long r2 = sys_ioctl(s, TIOCNOTTY, 0);
			printf("member: TIOCNOTTY %s, again %s\n", res(r1), res(r2));
			show("member after", s);
			printf("member: signals pending %x\n", pending());
			fflush_stdout();
			long g = sys_fork();
			if (g == 0) {
				show("member's child", s);
				exit(0);
			}
			sys_waitpid((int)g, 0, 0);
			printf("member: TIOCSCTTY (not a leader) %s\n", res(sys_ioctl(s, TIOCSCTTY, 0)));
			fflush_stdout();
			g = sys_fork();
			if (g == 0) {
				rt_syscall(SYS_setsid);
				show("member's child in a new session", s);
				long r3 = sys_ioctl(s, TIOCNOTTY, 0);
				long r4 = sys_ioctl(s, TIOCSCTTY, 0);
				printf("  TIOCNOTTY %s, TIOCSCTTY (another session's) %s\n", res(r3), res(r4));
				show("  then", s);
				exit(0);
			}
			sys_waitpid((int)g, 0, 0);
			exit(0);
		}
		sys_waitpid((int)c, 0, 0);
		show("leader after", s);
		printf("leader: signals pending %x\n", pending());
		exit(0);
	}
	int st = 0;
	sys_waitpid((int)leader, &st, 0);
	printf("leader status %x\n", st);
	return 0;
}
