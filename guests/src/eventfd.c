/*
 * eventfd.c - eventfd (the counter, EFD_SEMAPHORE, EFD_NONBLOCK, a blocking read woken
 * by another process's write, readiness through poll) and timerfd (one-shot and
 * periodic on CLOCK_MONOTONIC, a blocking read until it expires, timerfd_gettime, the
 * old value from timerfd_settime, and the errors).
 */
#include "rt.h"

#define SYS_timerfd_create 322
#define SYS_eventfd 323
#define SYS_timerfd_settime 325
#define SYS_timerfd_gettime 326
#define SYS_eventfd2 328
#define EFD_SEMAPHORE 1
#define EFD_NONBLOCK 04000
#define TFD_NONBLOCK 04000

static const char *res(long r)
{
	static char buf[24];
	switch (r) {
	case 0: return "ok";
	case -11: return "EAGAIN";
	case -22: return "EINVAL";
	case -9: return "EBADF";
	default: snprintf(buf, sizeof buf, "%ld", r); return buf;
	}
}

static void rd(const char *what, int fd)
{
	uint32_t v[2] = { 0, 0 };
	long r = sys_read(fd, v, 8);
	if (r == 8)
		printf("%s: %u\n", what, v[0]);
	else
		printf("%s: %s\n", what, res(r));
}

static void wr(int fd, uint32_t n)
{
	uint32_t v[2] = { n, 0 };
	sys_write(fd, v, 8);
}

static void sleep_ms(long ms)
{
	long ts[2] = { 0, ms * 1000000 };
	rt_syscall(SYS_nanosleep, ts, 0);
}

int main(void)
{
	int e = (int)rt_syscall(SYS_eventfd, 3);
	rd("eventfd 3 read", e);
	wr(e, 5);
	wr(e, 2);
	rd("after writes of 5 and 2", e);
	int s = (int)rt_syscall(SYS_eventfd2, 2, EFD_SEMAPHORE | EFD_NONBLOCK);
	rd("semaphore read", s);
	rd("semaphore read", s);
	rd("semaphore read, empty", s);
	struct pollfd pf = { s, 1 /* POLLIN */, 0 };
	printf("poll empty: %ld\n", sys_poll(&pf, 1, 0));
	wr(s, 1);
	printf("poll after a write: %ld revents %x\n", sys_poll(&pf, 1, 0), pf.revents);
	printf("eventfd2 bad flags: %s\n", res(rt_syscall(SYS_eventfd2, 0, 0x10)));
	fflush_stdout();
	long pid = sys_fork();
	if (pid == 0) {
		sleep_ms(20);
		wr(e, 9);
		exit(0);
	}
	rd("blocking read woken by the child", e);
	int st;
	sys_waitpid((int)pid, &st, 0);

	int t = (int)rt_syscall(SYS_timerfd_create, 1 /* CLOCK_MONOTONIC */, 0);
	int32_t once[4] = { 0, 0, 0, 20000000 }, old[4], cur[4];
	printf("settime once: %s\n", res(rt_syscall(SYS_timerfd_settime, t, 0, once, 0)));
	rd("blocking read until it expires", t);
	int32_t per[4] = { 0, 5000000, 0, 5000000 };
	rt_syscall(SYS_timerfd_settime, t, 0, per, 0);
	sleep_ms(30);
	uint32_t v[2];
	sys_read(t, v, 8);
	printf("periodic 5 ms over 30 ms: at least 4 expirations %d\n", v[0] >= 4);
	int32_t off[4] = { 0, 0, 0, 0 };
	rt_syscall(SYS_timerfd_settime, t, 0, off, old);
	printf("disarmed; old interval %d.%09d\n", old[0], old[1]);
	rt_syscall(SYS_timerfd_gettime, t, cur);
	printf("gettime: %d %d %d %d\n", cur[0], cur[1], cur[2], cur[3]);
	int tn = (int)rt_syscall(SYS_timerfd_create, 1, TFD_NONBLOCK);
	rd("nonblocking read, unarmed", tn);
	int32_t bad[4] = { 0, 0, 0, 1000000000 };
	printf("nsec 1e9: %s\n", res(rt_syscall(SYS_timerfd_settime, t, 0, bad, 0)));
	printf("settime on an eventfd: %s\n", res(rt_syscall(SYS_timerfd_settime, e, 0, once, 0)));
	printf("timerfd_create bad clock: %s\n", res(rt_syscall(SYS_timerfd_create, 99, 0)));
	return 0;
}
