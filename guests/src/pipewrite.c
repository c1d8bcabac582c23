/*
 * pipewrite.c - a blocking write to a pipe or a stream socket writes every byte,
 * waiting for room as long as it takes: a reader draining a pipe slowly gets all of a
 * 1 MiB write (write and writev); a signal handler (with or without SA_RESTART) ends
 * the wait with the count written so far, not EINTR; a non-blocking pipe takes what
 * fits; a reader that goes away ends the write with its partial count and SIGPIPE; a
 * stream socketpair behaves as a pipe.
 */
#include "rt.h"

#define SYS_rt_sigaction_ 174
#define SYS_alarm_ 27
#define SYS_wait4_ 114
#define SYS_socketpair_ 360
#define SIGALRM_ 14
#define SIGPIPE_ 13
#define SA_RESTORER_ 0x04000000
#define SA_RESTART_ 0x10000000
#define O_NONBLOCK_ 04000
#define F_SETFL_ 4

#define BIG (1 << 20)

static char buf[BIG];
static volatile int alarms, pipes;
static void on_alarm(int sig) { (void)sig; alarms++; }
static void on_pipe(int sig) { (void)sig; pipes++; }

static void handle(int sig, void (*h)(int), uint32_t flags)
{
	struct ksigaction a = { (void *)h, flags | SA_RESTORER_, (void *)restore_legacy, { 0, 0 } };
	rt_syscall(SYS_rt_sigaction_, sig, &a, 0, 8);
}

static void reap(long pid)
{
	int st = 0;
	rt_syscall(SYS_wait4_, pid, &st, 0, 0);
}

/* A child that reads `total` bytes from `fd` in 4000-byte reads, then exits. */
static long drain(int fd, int other, long total)
{
	long pid = sys_fork();
	if (pid == 0) {
		sys_close(other);
		static char in[4000];
		long got = 0, r;
		while (got < total && (r = sys_read(fd, in, sizeof in)) > 0)
			got += r;
		_exit(got == total ? 0 : 1);
	}
	return pid;
}

static void whole(const char *what, int rd, int wr, int vector)
{
	long pid = drain(rd, wr, BIG);
	sys_close(rd);
	long n;
	if (vector) {
		struct iovec v[2] = { { buf, BIG / 2 }, { buf + BIG / 2, BIG / 2 } };
		n = rt_syscall(146 /* writev */, wr, v, 2);
	} else {
		n = sys_write(wr, buf, BIG);
	}
	printf("%s: %ld\n", what, n);
	sys_close(wr);
	reap(pid);
}

static void interrupted(const char *what, uint32_t flags)
{
	int p[2];
	sys_pipe(p);
	handle(SIGALRM_, on_alarm, flags);
	alarms = 0;
	rt_syscall(SYS_alarm_, 1);
	long n = sys_write(p[1], buf, BIG);
	printf("%s: %ld, alarms %d\n", what, n, alarms);
	sys_close(p[0]);
	sys_close(p[1]);
}

int main(void)
{
	for (int i = 0; i < BIG; i++)
		buf[i] = (char)i;
	int p[2];
	sys_pipe(p);
	whole("pipe, 1 MiB write to a slow reader", p[0], p[1], 0);
	sys_pipe(p);
	whole("pipe, 1 MiB writev to a slow reader", p[0], p[1], 1);
	int s[2];
	rt_syscall(SYS_socketpair_, 1 /* AF_UNIX */, 1 /* SOCK_STREAM */, 0, s);
	whole("stream socketpair, 1 MiB write", s[0], s[1], 0);
	interrupted("pipe full, SIGALRM handler", 0);
	interrupted("pipe full, SA_RESTART handler", SA_RESTART_);
	sys_pipe(p);
	rt_syscall(55 /* fcntl */, p[1], F_SETFL_, O_NONBLOCK_);
	printf("non-blocking pipe: %ld\n", sys_write(p[1], buf, BIG));
	long full = sys_write(p[1], buf, 10);
	printf("non-blocking pipe, full: %s\n", sys_err(full));
	sys_close(p[0]);
	sys_close(p[1]);
	/* the reader takes 200000 bytes and leaves */
	handle(SIGPIPE_, on_pipe, 0);
	sys_pipe(p);
	long pid = drain(p[0], p[1], 200000);
	sys_close(p[0]);
	long n = sys_write(p[1], buf, BIG);
	printf("reader gone: partial %d, SIGPIPE %d\n", n >= 200000 && n < BIG, pipes);
	n = sys_write(p[1], buf, 10);
	printf("then: %s, SIGPIPE %d\n", sys_err(n), pipes);
	sys_close(p[1]);
	reap(pid);
	return 0;
}
