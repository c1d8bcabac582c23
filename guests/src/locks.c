/*
 * locks.c - advisory file locks between processes: fcntl record locks (F_SETLK,
 * F_SETLKW, F_GETLK, their 64-bit forms; shared and exclusive, ranges split by an
 * unlock, a lock released by closing the file, EBADF for a lock the descriptor's mode
 * does not allow, EINVAL for a bad type) and flock (shared, exclusive, LOCK_NB, a
 * description's lock shared by fork, released by LOCK_UN). The file is created in the
 * current directory and removed.
 */
#include "rt.h"

#define F_GETLK 5
#define F_SETLK 6
#define F_SETLKW 7
#define F_GETLK64 12
#define F_SETLK64 13
#define F_RDLCK 0
#define F_WRLCK 1
#define F_UNLCK 2
#define LOCK_SH 1
#define LOCK_EX 2
#define LOCK_NB 4
#define LOCK_UN 8
#define SYS_flock 143
#define SYS_fcntl64 221

struct flock32 { int16_t type, whence; int32_t start, len, pid; };
struct flock64_ { int16_t type, whence; int32_t start_lo, start_hi, len_lo, len_hi, pid; } __attribute__((packed));

static const char *res(long r)
{
	static char buf[24];
	switch (r) {
	case 0: return "ok";
	case -9: return "EBADF";
	case -11: return "EAGAIN";
	case -22: return "EINVAL";
	default: snprintf(buf, sizeof buf, "%ld", r); return buf;
	}
}

static long lk(int fd, int cmd, int type, int start, int len)
{
	struct flock32 f = { (int16_t)type, 0, start, len, 0 };
	return rt_syscall(SYS_fcntl64, fd, cmd, &f);
}

/* F_GETLK of [start, start+len) for a write lock: the conflicting lock, described. */
static void getlk(const char *what, int fd, int start, int len, long holder)
{
	struct flock32 f = { F_WRLCK, 0, start, len, 0 };
	long r = rt_syscall(SYS_fcntl64, fd, F_GETLK, &f);
	printf("%s: %s type %d start %d len %d held by the parent %d\n", what, res(r), f.type, f.type == F_UNLCK ? 0 : f.start,
	       f.type == F_UNLCK ? 0 : f.len, f.pid == holder);
}

static int wait_child(long pid)
{
	int st = 0;
	sys_waitpid((int)pid, &st, 0);
	return (st >> 8) & 0xff;
}

static void sleep_ms(long ms)
{
	long ts[2] = { 0, ms * 1000000 };
	rt_syscall(SYS_nanosleep, ts, 0);
}

int main(void)
{
	const char *name = "locks.tmp";
	int fd = (int)sys_open(name, 0102 /* O_RDWR|O_CREAT */, 0644);
	sys_write(fd, "0123456789abcdefghij", 20);
	long me = sys_getpid();
	printf("parent write lock [0, 10): %s\n", res(lk(fd, F_SETLK, F_WRLCK, 0, 10)));
	printf("parent read lock [15, 20): %s\n", res(lk(fd, F_SETLK, F_RDLCK, 15, 5)));
	int pipefd[2];
	sys_pipe(pipefd);
	fflush_stdout();
	long pid = sys_fork();
	if (pid == 0) {
		int cfd = (int)sys_open(name, 2, 0);
		printf("child write lock [5, 6): %s\n", res(lk(cfd, F_SETLK, F_WRLCK, 5, 1)));
		printf("child read lock [5, 6): %s\n", res(lk(cfd, F_SETLK, F_RDLCK, 5, 1)));
		printf("child write lock [10, 15): %s\n", res(lk(cfd, F_SETLK, F_WRLCK, 10, 5)));
		printf("child read lock [15, 20): %s\n", res(lk(cfd, F_SETLK, F_RDLCK, 15, 5)));
		printf("child write lock [15, 20): %s\n", res(lk(cfd, F_SETLK, F_WRLCK, 15, 5)));
		getlk("child getlk [0, 20)", cfd, 0, 20, me);
		getlk("child getlk [10, 15)", cfd, 10, 5, me);
		struct flock64_ f = { F_WRLCK, 0, 3, 0, 1, 0, 0 };
		long r = rt_syscall(SYS_fcntl64, cfd, F_GETLK64, &f);
		printf("child getlk64 [3, 4): %s type %d start %d len %d\n", res(r), f.type, f.start_lo, f.len_lo);
		f = (struct flock64_){ F_WRLCK, 0, 12, 0, 1, 0, 0 };
		printf("child setlk64 [12, 13) (its own): %s\n", res(rt_syscall(SYS_fcntl64, cfd, F_SETLK64, &f)));
		fflush_stdout();
		sys_write(pipefd[1], "x", 1);
		/* waits until the parent unlocks [0, 10) */
		printf("child setlkw [0, 10): %s\n", res(lk(cfd, F_SETLKW, F_WRLCK, 0, 10)));
		sys_close(cfd);
		exit(0);
	}
	char c;
	sys_read(pipefd[0], &c, 1);
	sleep_ms(30);
	printf("parent unlocks [0, 5): %s\n", res(lk(fd, F_SETLK, F_UNLCK, 0, 5)));
	sleep_ms(10);
	printf("parent unlocks [5, 10): %s\n", res(lk(fd, F_SETLK, F_UNLCK, 5, 5)));
	printf("child: %d\n", wait_child(pid));
	printf("parent write lock [0, 10) again: %s\n", res(lk(fd, F_SETLK, F_WRLCK, 0, 10)));
	/* closing a descriptor of the file drops the process's locks on it */
	int fd2 = (int)sys_open(name, 2, 0);
	lk(fd2, F_SETLK, F_WRLCK, 30, 10);
	sys_close(fd2);
	fflush_stdout();
	pid = sys_fork();
	if (pid == 0) {
		int cfd = (int)sys_open(name, 2, 0);
		printf("child after the parent closed a descriptor: %s\n", res(lk(cfd, F_SETLK, F_WRLCK, 0, 40)));
		exit(0);
	}
	wait_child(pid);
	int ro = (int)sys_open(name, 0, 0);
	printf("write lock on a read-only descriptor: %s\n", res(lk(ro, F_SETLK, F_WRLCK, 0, 1)));
	printf("bad lock type: %s\n", res(lk(ro, F_SETLK, 7, 0, 1)));
	sys_close(ro);
	/* flock */
	printf("flock ex: %s\n", res(rt_syscall(SYS_flock, fd, LOCK_EX)));
	fflush_stdout();
	pid = sys_fork();
	if (pid == 0) {
		int cfd = (int)sys_open(name, 0, 0);
		printf("child flock ex|nb (another description): %s\n", res(rt_syscall(SYS_flock, cfd, LOCK_EX | LOCK_NB)));
		printf("child flock sh|nb: %s\n", res(rt_syscall(SYS_flock, cfd, LOCK_SH | LOCK_NB)));
		printf("child flock ex|nb (the inherited description): %s\n", res(rt_syscall(SYS_flock, fd, LOCK_EX | LOCK_NB)));
		exit(0);
	}
	wait_child(pid);
	printf("flock un: %s\n", res(rt_syscall(SYS_flock, fd, LOCK_UN)));
	printf("flock sh: %s\n", res(rt_syscall(SYS_flock, fd, LOCK_SH)));
	fflush_stdout();
	pid = sys_fork();
	if (pid == 0) {
		int cfd = (int)sys_open(name, 0, 0);
		printf("child flock sh|nb: %s\n", res(rt_syscall(SYS_flock, cfd, LOCK_SH | LOCK_NB)));
		printf("child flock ex|nb: %s\n", res(rt_syscall(SYS_flock, cfd, LOCK_EX | LOCK_NB)));
		exit(0);
	}
	wait_child(pid);
	printf("flock bad op: %s\n", res(rt_syscall(SYS_flock, fd, 0)));
	sys_close(fd);
	sys_unlink(name);
	return 0;
}
