/*
 * preadv.c - vectored I/O at an offset: preadv and pwritev (the file position left
 * alone), preadv2 and pwritev2 (-1: at the file position, which then moves; RWF_APPEND;
 * unknown flags), the 32-bit halves of the offset, and the errors (a negative offset
 * EINVAL before a bad descriptor's EBADF, ESPIPE on a pipe, too many vectors EINVAL,
 * an unmapped vector EFAULT).
 */
#include "rt.h"

#define SYS_preadv	333
#define SYS_pwritev	334
#define SYS_preadv2	378
#define SYS_pwritev2	379
#define RWF_APPEND	0x10

static const char *res(long r)
{
	static char buf[32];
	switch (r) {
	case -9: return "EBADF";
	case -14: return "EFAULT";
	case -22: return "EINVAL";
	case -29: return "ESPIPE";
	case -95: return "EOPNOTSUPP";
	default:
		snprintf(buf, sizeof buf, "%ld", r);
		return buf;
	}
}

static long pos(int fd) { return sys_lseek(fd, 0, 1); }

int main(void)
{
	long rr;
	const char *path = "preadv.tmp";
	int fd = (int)sys_open(path, 0102 | 01000, 0600); /* O_RDWR|O_CREAT|O_TRUNC */
	char a[] = "hello ", b[] = "vectored world\n";
	struct iovec w[2] = { { a, 6 }, { b, 15 } };
	{ rr = rt_syscall(SYS_pwritev, fd, w, 2, 10, 0); printf("pwritev at 10: %s, position %ld\n", res(rr), pos(fd)); }
	char x[8], y[32];
	memset(x, 0, sizeof x);
	memset(y, 0, sizeof y);
	struct iovec r[2] = { { x, 6 }, { y, 31 } };
	rr = rt_syscall(SYS_preadv, fd, r, 2, 10, 0);
	printf("preadv at 10: %s, position %ld: [%s][%s]\n", res(rr), pos(fd), x, y);
	printf("preadv at 4 GiB: %s\n", res(rt_syscall(SYS_preadv, fd, r, 2, 0, 1)));
	printf("preadv negative: %s\n", res(rt_syscall(SYS_preadv, fd, r, 2, 0, 0x80000000u)));
	printf("preadv negative, bad fd: %s\n", res(rt_syscall(SYS_preadv, 999, r, 2, 0, 0x80000000u)));
	printf("preadv bad fd: %s\n", res(rt_syscall(SYS_preadv, 999, r, 2, 0, 0)));
	printf("preadv 1025 vectors: %s\n", res(rt_syscall(SYS_preadv, fd, r, 1025, 0, 0)));
	printf("preadv unmapped vector: %s\n", res(rt_syscall(SYS_preadv, fd, (void *)16, 1, 0, 0)));
	/* The 2 forms at -1: the file position. */
	sys_lseek(fd, 16, 0);
	memset(y, 0, sizeof y);
	struct iovec one = { y, 8 };
	rr = rt_syscall(SYS_preadv2, fd, &one, 1, -1, -1, 0);
	printf("preadv2 at -1: %s, position %ld: [%s]\n", res(rr), pos(fd), y);
	struct iovec z = { "ZZ", 2 };
	{ rr = rt_syscall(SYS_pwritev2, fd, &z, 1, -1, -1, 0); printf("pwritev2 at -1: %s, position %ld\n", res(rr), pos(fd)); }
	{ rr = rt_syscall(SYS_pwritev2, fd, &z, 1, 0, 0, 0); printf("pwritev2 at 0: %s, position %ld\n", res(rr), pos(fd)); }
	rr = rt_syscall(SYS_pwritev2, fd, &z, 1, 0, 0, RWF_APPEND);
	printf("pwritev2 RWF_APPEND: %s, position %ld\n", res(rr), pos(fd));
	printf("preadv2 unknown flag: %s\n", res(rt_syscall(SYS_preadv2, fd, &one, 1, 0, 0, 0x1000)));
	printf("preadv2 at -2: %s\n", res(rt_syscall(SYS_preadv2, fd, &one, 1, -2, -1, 0)));
	memset(y, 0, sizeof y);
	struct iovec all = { y, 31 };
	printf("whole file: %s [%s]\n", res(rt_syscall(SYS_preadv, fd, &all, 1, 0, 0)), y);
	int p[2];
	sys_pipe(p);
	sys_write(p[1], "pipe", 4);
	printf("preadv on a pipe: %s\n", res(rt_syscall(SYS_preadv, p[0], &one, 1, 0, 0)));
	printf("preadv2 on a pipe at -1: %s\n", res(rt_syscall(SYS_preadv2, p[0], &one, 1, -1, -1, 0)));
	printf("pwritev on a pipe: %s\n", res(rt_syscall(SYS_pwritev, p[1], &z, 1, 0, 0)));
	sys_close(fd);
	sys_unlink(path);
	return 0;
}
