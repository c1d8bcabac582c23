/*
 * truncate32.c - truncate(2) (92) and ftruncate(2) (93), the calls a program
 * built without large-file support makes: 32-bit lengths, a negative one is
 * EINVAL (before the path or descriptor is looked at), ftruncate's length is
 * unsigned and limited to 2 GiB - 1; the file and a shared mapping of it see
 * the new size.
 */
#include "rt.h"

#define SYS_truncate	92
#define SYS_ftruncate	93

static void show(const char *what, long r, const char *f)
{
	struct stat64 st;
	long s = sys_stat64(f, &st);
	printf("%s: %ld size %ld\n", what, r, s < 0 ? s : (long)st.st_size);
}

static long size_of(const char *path)
{
	struct stat64 st;
	long r = sys_stat64(path, &st);
	return r < 0 ? r : (long)st.st_size;
}

int main(void)
{
	const char *f = "truncate32.tmp";
	long fd = sys_open(f, O_RDWR | O_CREAT | O_TRUNC, 0644);
	char buf[16];
	char *map;
	long r;

	sys_write(fd, "hello, truncate", 15);
	show("ftruncate 5000", rt_syscall(SYS_ftruncate, fd, 5000), f);
	printf("ftruncate -1: %ld\n", rt_syscall(SYS_ftruncate, fd, -1));
	printf("ftruncate 0x80000000: %ld\n", rt_syscall(SYS_ftruncate, fd, 0x80000000u));
	show("ftruncate 0x7fffffff", rt_syscall(SYS_ftruncate, fd, 0x7fffffff), f);
	printf("ftruncate bad fd, -1: %ld\n", rt_syscall(SYS_ftruncate, 99, -1));
	printf("ftruncate bad fd, 1: %ld\n", rt_syscall(SYS_ftruncate, 99, 1));
	show("truncate 5", rt_syscall(SYS_truncate, f, 5), f);
	show("truncate -1", rt_syscall(SYS_truncate, f, -1), f);
	printf("truncate missing: %ld\n", rt_syscall(SYS_truncate, "truncate32.none", 10));
	printf("truncate NULL, -5: %ld\n", rt_syscall(SYS_truncate, (void *)0, -5));
	printf("truncate NULL, 5: %ld\n", rt_syscall(SYS_truncate, (void *)0, 5));
	show("truncate 12", rt_syscall(SYS_truncate, f, 12), f);
	printf("size %ld\n", size_of(f));
	memset(buf, '?', sizeof buf);
	r = sys_pread64(fd, buf, sizeof buf, 0);
	printf("pread: %ld\n", r);
	printf("bytes: %c%c%c%c%c %d %d\n", buf[0], buf[1], buf[2], buf[3], buf[4], buf[5], buf[11]);

	/* a shared mapping follows the size */
	map = (char *)sys_mmap2(0, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	map[100] = 'z';
	printf("ftruncate 50: %ld\n", rt_syscall(SYS_ftruncate, fd, 50));
	r = rt_syscall(SYS_ftruncate, fd, 4096);
	printf("ftruncate 4096: %ld map[0] %c map[100] %d\n", r, map[0], map[100]);
	map[200] = 'y';
	r = sys_pread64(fd, buf, 1, 200);
	printf("pread 200: %ld %c\n", r, buf[0]);
	sys_close(fd);
	printf("unlink: %ld\n", sys_unlink(f));
	return 0;
}
