/*
 * fadvise.c - fadvise64 (250) and fadvise64_64 (272) on i386: 64-bit offsets
 * (and 272's 64-bit length) in register pairs, low half first; every advice
 * (NORMAL RANDOM SEQUENTIAL WILLNEED DONTNEED NOREUSE) on a regular file is
 * 0 and changes nothing that can be read; an unknown advice and a negative
 * length are EINVAL, a closed or O_PATH descriptor EBADF, a pipe ESPIPE; on
 * a socket, a directory and /dev/null as Linux answers.
 */
#include "rt.h"

#define SYS_readahead 225
#define SYS_fadvise64 250
#define SYS_fadvise64_64 272
#define SYS_pipe 42
#define SYS_socketcall 102
#define O_PATH_ 010000000
#define O_DIRECTORY_ 0200000

static long f32(long fd, long long off, uint32_t len, int advice)
{
	return rt_syscall(SYS_fadvise64, fd, (long)(uint32_t)off, (long)(uint32_t)(off >> 32), (long)len, advice);
}

static long f64(long fd, long long off, long long len, int advice)
{
	return rt_syscall(SYS_fadvise64_64, fd, (long)(uint32_t)off, (long)(uint32_t)(off >> 32), (long)(uint32_t)len,
			  (long)(uint32_t)(len >> 32), advice);
}

static void both(const char *what, long fd, long long off, long long len, int advice)
{
	long a = f32(fd, off, (uint32_t)len, advice), b = f64(fd, off, len, advice);
	printf("%-28s fadvise64 %-7s fadvise64_64 %s\n", what, sys_err(a), sys_err(b));
}

int main(void)
{
	const char *f = "fadvise.tmp";
	long fd = sys_open(f, O_RDWR | O_CREAT | O_TRUNC, 0644), path, dir, null, sv[2] = { -1, -1 };
	int pfd[2];
	long args[4] = { 1, 1, 0, 0 };
	int sp[2];
	char buf[16] = { 0 };

	sys_write(fd, "fadvise contents", 16);
	for (int adv = 0; adv <= 7; adv++) {
		char what[32];
		snprintf(what, sizeof what, "file advice %d", adv);
		both(what, fd, 0, 16, adv);
	}
	both("file advice -1", fd, 0, 0, -1);
	both("file huge offset", fd, 0x123456789abcLL, 100, 3);
	both("file offset -1", fd, -1, 100, 3);
	printf("fadvise64_64 len -1: %s\n", sys_err(f64(fd, 0, -1, 0)));
	printf("fadvise64_64 len 2^32: %s\n", sys_err(f64(fd, 0, 1LL << 32, 4)));
	printf("fadvise64 len 0xffffffff: %s\n", sys_err(f32(fd, 0, 0xffffffffu, 4)));
	sys_pread64(fd, buf, 16, 0);
	printf("contents after: %s\n", buf);
	both("closed descriptor", 99, 0, 0, 0);
	both("closed, bad advice", 99, 0, 0, 77);
	path = sys_open(f, O_PATH_, 0);
	both("O_PATH descriptor", path, 0, 0, 0);
	rt_syscall(SYS_pipe, pfd);
	both("pipe read end", pfd[0], 0, 0, 0);
	both("pipe write end, bad advice", pfd[1], 0, 0, 77);
	args[0] = 1; /* AF_UNIX */
	args[1] = 1; /* SOCK_STREAM */
	args[2] = 0;
	args[3] = (long)sp;
	sv[0] = rt_syscall(SYS_socketcall, 8 /* SOCKETPAIR */, args);
	both("socket", sv[0] < 0 ? sv[0] : sp[0], 0, 0, 0);
	both("socket, bad advice", sv[0] < 0 ? sv[0] : sp[0], 0, 0, 77);
	dir = sys_open(".", O_RDONLY | O_DIRECTORY_, 0);
	both("directory", dir, 0, 0, 4);
	null = sys_open("/dev/null", O_RDWR, 0);
	both("/dev/null", null, 0, 0, 4);
	both("/dev/null, bad advice", null, 0, 0, 77);
	/* readahead(fd, offset, count): the same hint, Linux's own checks. */
	long wo = sys_open(f, O_WRONLY, 0);
	printf("readahead file: %s, huge offset: %s, write-only: %s, pipe: %s, directory: %s, /dev/null: %s, "
	       "O_PATH: %s, closed: %s\n",
	       sys_err(rt_syscall(SYS_readahead, fd, 0, 0, 4096)), sys_err(rt_syscall(SYS_readahead, fd, 0, 0x1234, 4096)),
	       sys_err(rt_syscall(SYS_readahead, wo, 0, 0, 4096)), sys_err(rt_syscall(SYS_readahead, pfd[0], 0, 0, 4096)),
	       sys_err(rt_syscall(SYS_readahead, dir, 0, 0, 4096)), sys_err(rt_syscall(SYS_readahead, null, 0, 0, 4096)),
	       sys_err(rt_syscall(SYS_readahead, path, 0, 0, 4096)), sys_err(rt_syscall(SYS_readahead, 99, 0, 0, 4096)));
	sys_close(fd);
	sys_unlink(f);
	return 0;
}
