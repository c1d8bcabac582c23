/*
 * clocks.c - clock_gettime, clock_getres and clock_settime over every clock id (the
 * host's wall and monotonic clocks, the CPU-time clocks of the process and the thread,
 * Linux's encoding of a CPU clock for pid or tid 0 and for the caller's own ids), in
 * their 32-bit and time64 forms: which exist (EINVAL for the others), that resolutions
 * are positive, that the CPU clocks advance while the program runs and not while it
 * sleeps, that no clock can be set here (EINVAL for those that never can, EFAULT, and
 * EINVAL for a time out of range, in Linux's order; the realtime clock's EPERM or
 * success is the host's privilege and not printed); F_GETPIPE_SZ and F_SETPIPE_SZ.
 */
#include "rt.h"

#define SYS_clock_settime	264
#define SYS_clock_gettime	265
#define SYS_clock_getres	266
#define SYS_clock_gettime64	403
#define SYS_clock_settime64	404
#define SYS_clock_getres_time64	406
#define SYS_gettid	224
#define F_SETPIPE_SZ	1031
#define F_GETPIPE_SZ	1032

static const char *res(long r)
{
	static char buf[4][32];
	static int i;
	i = (i + 1) % 4;
	switch (r) {
	case -1: return "EPERM";
	case -9: return "EBADF";
	case -14: return "EFAULT";
	case -22: return "EINVAL";
	default:
		snprintf(buf[i], sizeof buf[i], "%ld", r);
		return buf[i];
	}
}

static long long ns_of(long clock)
{
	long long t[2] = { 0, 0 };
	rt_syscall(SYS_clock_gettime64, clock, t);
	return t[0] * 1000000000LL + t[1];
}

int main(void)
{
	long pid = sys_getpid(), tid = rt_syscall(SYS_gettid);
	/* Linux's CPU clock ids: ~id << 3, bit 2 for a thread, the kind (0 prof, 1 virt,
	 * 2 sched) in the low bits. */
	long ids[] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 99, -6, -5, -4, -2, -1, -8, -7, -3,
		       (~pid << 3) | 2, (~pid << 3) | 0, (~tid << 3) | 6, (~(pid + 1000) << 3) | 2,
		       (~(tid + 1000) << 3) | 6 };
	for (unsigned i = 0; i < sizeof ids / sizeof ids[0]; i++) {
		long c = ids[i];
		unsigned t32[2];
		long long t64[2], r64[2] = { 0, 0 };
		unsigned r32[2] = { 0, 0 };
		long g = rt_syscall(SYS_clock_gettime, c, t32), g64 = rt_syscall(SYS_clock_gettime64, c, t64);
		long s = rt_syscall(SYS_clock_getres, c, r32), s64 = rt_syscall(SYS_clock_getres_time64, c, r64);
		printf("clock %3d: gettime %s/%s getres %s/%s positive %s, null res %s\n", i, res(g), res(g64), res(s),
		       res(s64), s == 0 ? (r32[0] || r32[1]) && (r64[0] || r64[1]) ? "yes" : "no" : "-",
		       res(rt_syscall(SYS_clock_getres, c, 0)));
	}
	printf("gettime to nowhere: %s %s\n", res(rt_syscall(SYS_clock_gettime, 1, 16)),
	       res(rt_syscall(SYS_clock_gettime64, 1, 16)));
	printf("getres to nowhere: %s\n", res(rt_syscall(SYS_clock_getres, 1, 16)));

	/* CPU time runs while the program does, not while it sleeps. */
	long long p0 = ns_of(2), t0 = ns_of(3);
	volatile unsigned x = 0;
	for (unsigned i = 0; i < 20000000; i++)
		x += i;
	long long p1 = ns_of(2), t1 = ns_of(3);
	struct timespec ts = { 0, 100000000 };
	sys_nanosleep(&ts, 0);
	long long p2 = ns_of(2);
	printf("process clock advanced running: %s, thread clock: %s, asleep 100 ms under 50 ms: %s\n",
	       p1 > p0 ? "yes" : "no", t1 > t0 ? "yes" : "no", p2 - p1 < 50000000 ? "yes" : "no");

	unsigned now[2];
	rt_syscall(SYS_clock_gettime, 0, now);
	unsigned bad[2] = { 5, 2000000000u };
	long long bad64[2] = { 5, 2000000000LL };
	for (long c = 1; c < 12; c++)
		printf("settime %ld: %s %s\n", c, res(rt_syscall(SYS_clock_settime, c, now)),
		       res(rt_syscall(SYS_clock_settime64, c, bad64)));
	printf("settime 99: %s, cpu clock of pid 0: %s\n", res(rt_syscall(SYS_clock_settime, 99, now)),
	       res(rt_syscall(SYS_clock_settime, -6, now)));
	printf("settime realtime to nowhere: %s %s\n", res(rt_syscall(SYS_clock_settime, 0, 16)),
	       res(rt_syscall(SYS_clock_settime64, 0, 16)));
	printf("settime realtime out of range: %s %s\n", res(rt_syscall(SYS_clock_settime, 0, bad)),
	       res(rt_syscall(SYS_clock_settime64, 0, bad64)));

	int p[2];
	sys_pipe(p);
	long size = sys_fcntl(p[0], F_GETPIPE_SZ, 0);
	printf("pipe size %ld\n", size);
	printf("set 100000: %s, now %s\n", res(sys_fcntl(p[1], F_SETPIPE_SZ, 100000)),
	       res(sys_fcntl(p[0], F_GETPIPE_SZ, 0)));
	printf("set 1: %s\n", res(sys_fcntl(p[1], F_SETPIPE_SZ, 1)));
	printf("on a file: %s\n", res(sys_fcntl((int)sys_open("/proc/self/status", 0, 0), F_GETPIPE_SZ, 0)));
	return 0;
}
