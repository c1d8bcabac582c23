/*
 * sigio.c - signal-driven I/O and directory notification: fcntl's F_SETOWN,
 * F_GETOWN, F_SETOWN_EX, F_GETOWN_EX, F_GETOWNER_UIDS, F_SETSIG, F_GETSIG and their
 * errors; O_ASYNC on a pipe's ends and a socket, with a plain SIGIO (SI_KERNEL, no
 * fields) and with an F_SETSIG real-time signal (the reason, band and descriptor),
 * to a process, a thread and a process group, from the caller's own writes and a
 * child's; F_NOTIFY (dnotify) on a directory: creation and removal reported with
 * POLL_MSG and the directory's descriptor, the caller made the owner, ENOTDIR on a
 * pipe, nothing once cleared; the write-life hints (F_GET_RW_HINT, F_SET_RW_HINT).
 */
#include "rt.h"

#define SYS_rt_sigaction_ 174
#define SYS_getpgrp_ 65
#define SYS_setpgid_ 57
#define SYS_gettid_ 224
#define SYS_mkdir_ 39
#define SYS_rmdir_ 40
#define SA_SIGINFO_ 4
#define SA_RESTORER_ 0x04000000
#define SIGIO_ 29
#define SIGRT1 35
#define SIGRT2 36
#define F_SETOWN_ 8
#define F_GETOWN_ 9
#define F_SETSIG_ 10
#define F_GETSIG_ 11
#define F_SETOWN_EX_ 15
#define F_GETOWN_EX_ 16
#define F_GETOWNER_UIDS_ 17
#define F_NOTIFY_ 1026
#define F_GET_RW_HINT_ 1035
#define F_SET_RW_HINT_ 1036
#define O_ASYNC_ 020000
#define O_DIRECTORY_ 0200000
#define DN_CREATE 4
#define DN_DELETE 8
#define DN_MULTISHOT 0x80000000

static const char *res(long r)
{
	return errno_str(r);
}

static volatile int got, got_sig, got_code, got_band, got_fd;

static void handler(int sig, uint32_t *info, void *uc)
{
	(void)uc;
	got++;
	got_sig = sig;
	got_code = (int)info[2];
	got_band = (int)info[3];
	got_fd = (int)info[4];
}

static void catch(int sig)
{
	struct ksigaction a = { (void *)handler, SA_SIGINFO_ | SA_RESTORER_, (void *)restore_rt, { 0, 0 } };
	rt_syscall(SYS_rt_sigaction_, sig, &a, 0, 8);
}

/* What the handler saw since the last report, the descriptor named by which of ours. */
static void report(const char *what, int fd)
{
	printf("%s: %d signal(s), last sig %d code %d band %#x fd %s\n", what, got, got_sig, got_code, got_band,
	       got_fd == fd ? "ours" : got_fd == 0 ? "0" : "other");
	got = got_sig = got_code = got_band = got_fd = 0;
}

static void owner(const char *what, int fd)
{
	int ex[2] = { -7, -7 };
	uint32_t uids[2] = { 7, 7 };
	long r = sys_fcntl(fd, F_GETOWN_EX_, (long)ex);
	long g = sys_fcntl(fd, F_GETOWN_, 0);
	long u = sys_fcntl(fd, F_GETOWNER_UIDS_, (long)uids);
	int me = (int)sys_getpid();
	printf("%s: F_GETOWN %s, F_GETOWN_EX %s type %d pid %s, uids %s %s\n", what,
	       g == me ? "me" : g == -me ? "-my group" : g == 0 ? "0" : "other", res(r), ex[0],
	       ex[1] == me ? "me" : ex[1] == 0 ? "0" : "other", res(u),
	       uids[0] == (uint32_t)sys_getuid() && uids[1] == (uint32_t)sys_geteuid() ? "mine" : "other");
}

int main(void)
{
	int p[2], sv[2];
	int me = (int)sys_getpid();
	/* A group of its own: its signals must not reach whoever started it. */
	rt_syscall(SYS_setpgid_, 0, 0);
	long pgrp = rt_syscall(SYS_getpgrp_);
	long tid = rt_syscall(SYS_gettid_);

	/* The owner and signal of a fresh description, and the errors. */
	sys_pipe(p);
	owner("fresh pipe", p[0]);
	printf("F_GETSIG fresh: %ld\n", sys_fcntl(p[0], F_GETSIG_, 0));
	printf("F_SETOWN 0: %s\n", res(sys_fcntl(p[0], F_SETOWN_, 0)));
	owner("owner 0", p[0]);
	printf("F_SETOWN 99999: %s\n", res(sys_fcntl(p[0], F_SETOWN_, 99999)));
	printf("F_SETOWN INT_MIN: %s\n", res(sys_fcntl(p[0], F_SETOWN_, (long)0x80000000u)));
	printf("F_SETSIG 65: %s, 64: %s, F_GETSIG %ld\n", res(sys_fcntl(p[0], F_SETSIG_, 65)),
	       res(sys_fcntl(p[0], F_SETSIG_, 64)), sys_fcntl(p[0], F_GETSIG_, 0));
	int bad[2] = { 3, me };
	printf("F_SETOWN_EX type 3: %s, NULL: %s, F_GETOWN_EX NULL: %s\n",
	       res(sys_fcntl(p[0], F_SETOWN_EX_, (long)bad)), res(sys_fcntl(p[0], F_SETOWN_EX_, 0)),
	       res(sys_fcntl(p[0], F_GETOWN_EX_, 0)));
	int ex[2] = { 1, 99999 };
	printf("F_SETOWN_EX pid 99999: %s\n", res(sys_fcntl(p[0], F_SETOWN_EX_, (long)ex)));
	sys_fcntl(p[0], F_SETSIG_, 0);

	/* A plain SIGIO to this process for its own write. */
	catch(SIGIO_);
	catch(SIGRT1);
	catch(SIGRT2);
	printf("F_SETOWN me: %s\n", res(sys_fcntl(p[0], F_SETOWN_, me)));
	owner("owner me", p[0]);
	printf("F_SETFL O_ASYNC: %s\n", res(sys_fcntl(p[0], F_SETFL, O_ASYNC_ | O_NONBLOCK)));
	printf("F_GETFL %lo\n", sys_fcntl(p[0], F_GETFL, 0));
	sys_write(p[1], "a", 1);
	report("write, plain SIGIO", p[0]);
	char buf[70000];
	sys_read(p[0], buf, sizeof buf);
	report("read it back", p[0]);

	/* F_SETSIG: the reason, band and descriptor. */
	sys_fcntl(p[0], F_SETSIG_, SIGRT1);
	sys_write(p[1], "bc", 2);
	report("write, F_SETSIG", p[0]);
	sys_write(p[1], "d", 1);
	report("write again", p[0]);
	sys_read(p[0], buf, sizeof buf);

	/* The writer's end: room again after the pipe was full. */
	sys_fcntl(p[1], F_SETOWN_, me);
	sys_fcntl(p[1], F_SETSIG_, SIGRT2);
	sys_fcntl(p[1], F_SETFL, O_ASYNC_ | O_NONBLOCK);
	long n = 0, w;
	while ((w = sys_write(p[1], buf, 4096)) > 0)
		n += w;
	printf("filled %ld bytes (%s)\n", n, res(w));
	report("filling", p[0]);
	sys_read(p[0], buf, 4096);
	report("read one page", p[1]);
	sys_read(p[0], buf, sizeof buf);
	report("drained", p[1]);

	/* A descriptor dup'd shares the description's owner; closing the writer. */
	int d = (int)sys_dup(p[0]);
	owner("dup of the reader", d);
	sys_close(d);
	sys_close(p[1]);
	report("writer closed", p[0]);
	sys_close(p[0]);

	/* A socket, owned by this thread (F_OWNER_TID). */
	sys_socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
	int tex[2] = { 0, (int)tid };
	printf("F_SETOWN_EX tid: %s\n", res(sys_fcntl(sv[0], F_SETOWN_EX_, (long)tex)));
	owner("owner thread", sv[0]);
	sys_fcntl(sv[0], F_SETSIG_, SIGRT1);
	sys_fcntl(sv[0], F_SETFL, O_ASYNC_ | O_NONBLOCK);
	sys_write(sv[1], "xyz", 3);
	report("socket write", sv[0]);
	sys_read(sv[0], buf, sizeof buf);
	sys_shutdown(sv[1], 1);
	report("peer shut its writing down", sv[0]);

	/* A process group owner. */
	printf("F_SETOWN -pgrp: %s\n", res(sys_fcntl(sv[0], F_SETOWN_, -pgrp)));
	owner("owner group", sv[0]);
	sys_close(sv[1]);
	report("peer closed", sv[0]);
	sys_close(sv[0]);

	/* A child's write wakes the parent's blocking read; the signal comes after. */
	sys_pipe(p);
	sys_fcntl(p[0], F_SETOWN_, me);
	sys_fcntl(p[0], F_SETSIG_, SIGRT1);
	sys_fcntl(p[0], F_SETFL, O_ASYNC_);
	long pid = sys_fork();
	if (pid == 0) {
		struct timespec ts = { 0, 20000000 };
		sys_nanosleep(&ts, 0);
		sys_write(p[1], "child", 5);
		rt_syscall(SYS_exit_group, 0); /* not exit: the parent's buffered output stays its own */
	}
	long r = sys_read(p[0], buf, sizeof buf);
	int st;
	sys_waitpid((int)pid, &st, 0);
	printf("parent read %ld\n", r);
	report("child's write", p[0]);
	sys_close(p[0]);
	sys_close(p[1]);

	/* dnotify. */
	sys_unlink("sigio.d/a");
	rt_syscall(SYS_rmdir_, "sigio.d");
	rt_syscall(SYS_mkdir_, "sigio.d", 0755);
	int dir = (int)sys_open("sigio.d", O_RDONLY | O_DIRECTORY_, 0);
	sys_fcntl(dir, F_SETSIG_, SIGRT1);
	sys_fcntl(dir, F_SETOWN_, 0);
	printf("F_NOTIFY: %s\n", res(sys_fcntl(dir, F_NOTIFY_, (long)(DN_CREATE | DN_DELETE | DN_MULTISHOT))));
	owner("after F_NOTIFY", dir);
	int f = (int)sys_open("sigio.d/a", O_CREAT | O_WRONLY, 0600);
	report("created", dir);
	sys_write(f, "1", 1);
	sys_close(f);
	report("written (not watched)", dir);
	sys_unlink("sigio.d/a");
	report("removed", dir);
	printf("F_NOTIFY 0: %s\n", res(sys_fcntl(dir, F_NOTIFY_, 0)));
	f = (int)sys_open("sigio.d/a", O_CREAT | O_WRONLY, 0600);
	sys_close(f);
	report("created after clearing", dir);
	sys_unlink("sigio.d/a");
	sys_fcntl(dir, F_SETSIG_, 0);
	printf("F_NOTIFY once: %s\n", res(sys_fcntl(dir, F_NOTIFY_, DN_CREATE)));
	f = (int)sys_open("sigio.d/a", O_CREAT | O_WRONLY, 0600);
	sys_close(f);
	report("created, plain SIGIO", dir);
	sys_unlink("sigio.d/a");
	f = (int)sys_open("sigio.d/b", O_CREAT | O_WRONLY, 0600);
	sys_close(f);
	report("created again (one shot)", dir);
	sys_unlink("sigio.d/b");
	sys_pipe(p);
	printf("F_NOTIFY on a pipe: %s\n", res(sys_fcntl(p[0], F_NOTIFY_, DN_CREATE)));
	sys_close(dir);
	rt_syscall(SYS_rmdir_, "sigio.d");

	/* Write-life hints. */
	f = (int)sys_open("sigio.f", O_CREAT | O_RDWR | O_TRUNC, 0600);
	unsigned long long hint = 9;
	r = sys_fcntl(f, F_GET_RW_HINT_, (long)&hint);
	printf("F_GET_RW_HINT: %s %llu\n", res(r), hint);
	hint = 3;
	printf("F_SET_RW_HINT 3: %s\n", res(sys_fcntl(f, F_SET_RW_HINT_, (long)&hint)));
	hint = 9;
	r = sys_fcntl(f, F_GET_RW_HINT_, (long)&hint);
	printf("F_GET_RW_HINT: %s %llu\n", res(r), hint);
	hint = 99;
	printf("F_SET_RW_HINT 99: %s, NULL: %s\n", res(sys_fcntl(f, F_SET_RW_HINT_, (long)&hint)),
	       res(sys_fcntl(f, F_SET_RW_HINT_, 0)));
	sys_close(f);
	sys_unlink("sigio.f");
	return 0;
}
