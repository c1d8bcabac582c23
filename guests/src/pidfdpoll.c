/*
 * pidfdpoll.c - a pidfd in an epoll set: nothing while the child lives, EPOLLIN once
 * it has exited (a zombie), EPOLLIN|EPOLLHUP once it is reaped; an epoll_wait blocked
 * on the set is woken by the child's exit; edge-triggered registration; poll's events
 * beside epoll's; a pidfd in an epoll set nested in another.
 */
#include "rt.h"

#define SYS_epoll_ctl 255
#define SYS_epoll_wait 256
#define SYS_epoll_create1 329
#define SYS_pidfd_open 434
#define EPOLL_CTL_ADD 1
#define EPOLL_CTL_DEL 2
#define EPOLLIN 1
#define EPOLLOUT 4
#define EPOLLET (1u << 31)

struct ev { uint32_t events; uint32_t lo, hi; } __attribute__((packed));

static long ctl(int ep, int op, int fd, uint32_t events, uint32_t data)
{
	struct ev e = { events, data, 0x77000000u | data };
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

static int revents(int fd, int events)
{
	struct pollfd pf = { fd, (short)events, 0 };
	long r = sys_poll(&pf, 1, 0);
	return r < 0 ? (int)r : pf.revents;
}

/* A child that exits with `code` once a byte arrives on `go`. */
static long child(int go[2], int code)
{
	fflush_stdout();
	long c = sys_fork();
	if (c == 0) {
		char x;
		sys_read(go[0], &x, 1);
		_exit(code);
	}
	return c;
}

int main(void)
{
	int go[2];
	sys_pipe(go);

	/* Level-triggered, and a nested set. */
	long c = child(go, 3);
	int fd = (int)rt_syscall(SYS_pidfd_open, c, 0);
	int ep = (int)rt_syscall(SYS_epoll_create1, 0);
	int et = (int)rt_syscall(SYS_epoll_create1, 0);
	int outer = (int)rt_syscall(SYS_epoll_create1, 0);
	long r1 = ctl(ep, EPOLL_CTL_ADD, fd, EPOLLIN | EPOLLOUT, 1);
	long r2 = ctl(ep, EPOLL_CTL_ADD, fd, EPOLLIN, 2);
	long r3 = ctl(et, EPOLL_CTL_ADD, fd, EPOLLIN | EPOLLET, 3);
	long r4 = ctl(outer, EPOLL_CTL_ADD, ep, EPOLLIN, 4);
	printf("add: %ld, again: %ld, edge-triggered: %ld, nested: %ld\n", r1, r2, r3, r4);
	wait_("alive", ep, 0);
	wait_("alive, edge", et, 0);
	wait_("alive, outer", outer, 0);
	printf("alive: poll %x\n", revents(fd, POLLIN | POLLOUT));
	sys_write(go[1], "x", 1);
	wait_("blocked until exit", ep, 5000);
	wait_("exited, edge", et, 0);
	wait_("exited, edge again", et, 0);
	wait_("exited, outer", outer, 0);
	printf("exited: poll %x, poll for nothing %x\n", revents(fd, POLLIN | POLLOUT), revents(fd, 0));
	int st = 0;
	sys_waitpid((int)c, &st, 0);
	printf("reaped, status %x\n", st);
	wait_("reaped", ep, 0);
	wait_("reaped, edge", et, 0);
	wait_("reaped, outer", outer, 0);
	printf("reaped: poll %x, poll for nothing %x, for POLLOUT %x\n", revents(fd, POLLIN | POLLOUT), revents(fd, 0),
	       revents(fd, POLLOUT));
	r1 = ctl(ep, EPOLL_CTL_DEL, fd, 0, 0);
	r2 = ctl(ep, EPOLL_CTL_DEL, fd, 0, 0);
	printf("del: %ld, again: %ld\n", r1, r2);
	wait_("after del", ep, 0);
	sys_close(fd);
	sys_close(ep);
	sys_close(et);
	sys_close(outer);

	/* Added after the child has exited, and after it is reaped; a second pidfd of one
	 * child; a blocked wait with no timeout. */
	c = child(go, 4);
	fd = (int)rt_syscall(SYS_pidfd_open, c, 0);
	int fd2 = (int)rt_syscall(SYS_pidfd_open, c, 0);
	ep = (int)rt_syscall(SYS_epoll_create1, 0);
	printf("add: %ld\n", ctl(ep, EPOLL_CTL_ADD, fd, EPOLLIN, 5));
	sys_write(go[1], "x", 1);
	wait_("blocked forever until exit", ep, -1);
	printf("add the second after exit: %ld\n", ctl(ep, EPOLL_CTL_ADD, fd2, EPOLLIN, 6));
	wait_("two", ep, 0);
	sys_waitpid((int)c, &st, 0);
	int ep2 = (int)rt_syscall(SYS_epoll_create1, 0);
	printf("add after reaping: %ld\n", ctl(ep2, EPOLL_CTL_ADD, fd2, 0, 7));
	wait_("two reaped", ep, 0);
	wait_("added after reaping, no events asked", ep2, 0);
	sys_close(fd);
	sys_close(fd2);
	wait_("both closed", ep, 0);
	return 0;
}
