/*
 * epoll.c - epoll over pipes between processes: level-triggered readiness with the
 * caller's data, EPOLLONESHOT and EPOLL_CTL_MOD to rearm, EPOLLET, EPOLL_CTL_DEL, a
 * timeout that runs out, a wait woken by another process's write, a child sharing
 * the instance after fork, and the errors (EBADF, EEXIST, ENOENT, EPERM for a regular
 * file, EINVAL for a descriptor that is no epoll instance and for maxevents 0).
 */
#include "rt.h"

#define SYS_epoll_create 254
#define SYS_epoll_ctl 255
#define SYS_epoll_wait 256
#define SYS_epoll_create1 329
#define EPOLL_CTL_ADD 1
#define EPOLL_CTL_DEL 2
#define EPOLL_CTL_MOD 3
#define EPOLLIN 1
#define EPOLLOUT 4
#define EPOLLHUP 0x10
#define EPOLLONESHOT (1u << 30)
#define EPOLLET (1u << 31)

struct ev { uint32_t events; uint32_t lo, hi; } __attribute__((packed));

static const char *res(long r)
{
	static char buf[24];
	switch (r) {
	case 0: return "ok";
	case -2: return "ENOENT";
	case -9: return "EBADF";
	case -1: return "EPERM";
	case -17: return "EEXIST";
	case -22: return "EINVAL";
	default: snprintf(buf, sizeof buf, "%ld", r); return buf;
	}
}

static long ctl(int ep, int op, int fd, uint32_t events, uint32_t data)
{
	struct ev e = { events, data, 0x55aa0000u | data };
	return rt_syscall(SYS_epoll_ctl, ep, op, fd, &e);
}

static void wait_(const char *what, int ep, int ms)
{
	struct ev out[4];
	long n = rt_syscall(SYS_epoll_wait, ep, out, 4, ms);
	printf("%s: %ld", what, n);
	for (long i = 0; i < n; i++)
		printf(" [events %x data %x %x]", out[i].events, out[i].lo, out[i].hi);
	printf("\n");
}

int main(void)
{
	int p1[2], p2[2];
	sys_pipe(p1);
	sys_pipe(p2);
	int ep = (int)rt_syscall(SYS_epoll_create1, 0x80000 /* EPOLL_CLOEXEC */);
	printf("epoll_create1: %s\n", ep >= 0 ? "ok" : res(ep));
	printf("add p1 read: %s\n", res(ctl(ep, EPOLL_CTL_ADD, p1[0], EPOLLIN, 1)));
	printf("add p1 read again: %s\n", res(ctl(ep, EPOLL_CTL_ADD, p1[0], EPOLLIN, 1)));
	printf("add p2 write: %s\n", res(ctl(ep, EPOLL_CTL_ADD, p2[1], EPOLLOUT | EPOLLONESHOT, 2)));
	wait_("ready at once", ep, 0);
	wait_("oneshot spent", ep, 0);
	printf("mod p2 write: %s\n", res(ctl(ep, EPOLL_CTL_MOD, p2[1], EPOLLOUT, 3)));
	printf("del p2 write: %s\n", res(ctl(ep, EPOLL_CTL_DEL, p2[1], 0, 0)));
	printf("mod unregistered: %s\n", res(ctl(ep, EPOLL_CTL_MOD, p2[1], EPOLLOUT, 3)));
	wait_("nothing, 20 ms", ep, 20);
	sys_write(p1[1], "ab", 2);
	wait_("p1 readable", ep, 0);
	wait_("still readable (level)", ep, 0);
	char buf[8];
	sys_read(p1[0], buf, 2);
	printf("mod p1 edge: %s\n", res(ctl(ep, EPOLL_CTL_MOD, p1[0], EPOLLIN | EPOLLET, 4)));
	sys_write(p1[1], "c", 1);
	wait_("edge once", ep, 0);
	wait_("edge not again", ep, 0);
	sys_read(p1[0], buf, 1);
	fflush_stdout();
	long pid = sys_fork();
	if (pid == 0) {
		long ts[2] = { 0, 30000000 };
		rt_syscall(SYS_nanosleep, ts, 0);
		sys_write(p1[1], "d", 1);
		exit(0);
	}
	wait_("woken by the child", ep, -1);
	int st;
	sys_waitpid((int)pid, &st, 0);
	sys_close(p1[1]);
	wait_("hangup", ep, 0);
	int f = (int)sys_open("epoll.tmp", 0102, 0644);
	printf("add a regular file: %s\n", res(ctl(ep, EPOLL_CTL_ADD, f, EPOLLIN, 5)));
	sys_close(f);
	sys_unlink("epoll.tmp");
	printf("bad fd: %s\n", res(ctl(ep, EPOLL_CTL_ADD, 99, EPOLLIN, 6)));
	printf("not an epoll: %s\n", res(ctl(p2[0], EPOLL_CTL_ADD, p1[0], EPOLLIN, 7)));
	struct ev out[1];
	printf("maxevents 0: %s\n", res(rt_syscall(SYS_epoll_wait, ep, out, 0, 0)));
	printf("epoll_create 0: %s\n", res(rt_syscall(SYS_epoll_create, 0)));
	return 0;
}
