/*
 * bytenames.c - file names that are not UTF-8 (Linux names are bytes): a directory
 * named "dir\xff\xfe" made, entered by chdir and by fchdir, its files reached by
 * *at calls relative to a descriptor of it, getcwd and the /proc/self/cwd and
 * /proc/self/fd links naming it byte for byte (printed escaped, relative to the
 * starting directory, which differs between runs).
 */
#include "rt.h"

#define AT_FDCWD (-100)
#define O_DIRECTORY 0200000
#define SYS_mkdir 39
#define SYS_rmdir 40
#define SYS_chdir 12
#define SYS_fchdir 133
#define SYS_getcwd 183
#define SYS_openat 295
#define SYS_unlinkat 301
#define SYS_fstatat64 300
#define SYS_readlink 85

static char start[512];
static unsigned start_len;

static const char *res(long r)
{
	static char b[24];
	if (r >= 0)
		return "ok";
	snprintf(b, sizeof b, "errno %ld", -r);
	return b;
}

/* `s` (n bytes) with bytes outside printable ASCII as \xNN, less the start prefix. */
static void show_path(const char *what, const char *s, long n)
{
	printf("%s: ", what);
	if (n < 0) {
		printf("%s\n", res(n));
		return;
	}
	long i = 0;
	if ((unsigned long)n >= start_len && memcmp(s, start, start_len) == 0) {
		printf("$START");
		i = start_len;
	}
	for (; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c >= 0x20 && c < 0x7f)
			printf("%c", c);
		else
			printf("\\x%02x", c);
	}
	printf("\n");
}

static void cwd(const char *what)
{
	char b[512];
	long n = rt_syscall(SYS_getcwd, b, sizeof b);
	show_path(what, b, n > 0 ? n - 1 : n);
}

static void link_of(const char *what, const char *path)
{
	char b[512];
	long n = rt_syscall(SYS_readlink, path, b, sizeof b);
	show_path(what, b, n);
}

int main(void)
{
	long n = rt_syscall(SYS_getcwd, start, sizeof start);
	start_len = n > 0 ? (unsigned)n - 1 : 0;
	long home = sys_open(".", O_RDONLY | O_DIRECTORY, 0);
	printf("mkdir bn.d: %s\n", res(rt_syscall(SYS_mkdir, "bn.d", 0755)));
	printf("mkdir dir\\xff\\xfe: %s\n", res(rt_syscall(SYS_mkdir, "bn.d/dir\xff\xfe", 0755)));
	long f = sys_open("bn.d/dir\xff\xfe/f", O_WRONLY | O_CREAT, 0644);
	printf("create f: %s\n", res(f));
	sys_close((int)f);
	long d = sys_open("bn.d/dir\xff\xfe", O_RDONLY | O_DIRECTORY, 0);
	printf("open the directory: %s\n", res(d));
	char fdlink[32];
	snprintf(fdlink, sizeof fdlink, "/proc/self/fd/%ld", d);
	link_of("fd link", fdlink);
	struct stat64 st;
	printf("fstatat f: %s\n", res(rt_syscall(SYS_fstatat64, d, "f", &st, 0)));
	long g = rt_syscall(SYS_openat, d, "g\x80", O_WRONLY | O_CREAT, 0644);
	printf("openat g\\x80: %s\n", res(g));
	sys_close((int)g);
	printf("stat it by path: %s\n", res(sys_stat64("bn.d/dir\xff\xfe/g\x80", &st)));
	printf("unlinkat g\\x80: %s\n", res(rt_syscall(SYS_unlinkat, d, "g\x80", 0)));
	printf("fchdir: %s\n", res(rt_syscall(SYS_fchdir, d)));
	cwd("getcwd");
	link_of("cwd link", "/proc/self/cwd");
	printf("stat f: %s\n", res(sys_stat64("f", &st)));
	printf("chdir ..: %s\n", res(rt_syscall(SYS_chdir, "..")));
	cwd("getcwd");
	printf("chdir dir\\xff\\xfe: %s\n", res(rt_syscall(SYS_chdir, "dir\xff\xfe")));
	cwd("getcwd");
	printf("open f here: %s\n", res(f = sys_open("f", O_RDONLY, 0)));
	sys_close((int)f);
	printf("back: %s\n", res(rt_syscall(SYS_fchdir, home)));
	cwd("getcwd");
	printf("unlink f: %s\n", res(sys_unlink("bn.d/dir\xff\xfe/f")));
	printf("rmdir dir\\xff\\xfe: %s\n", res(rt_syscall(SYS_rmdir, "bn.d/dir\xff\xfe")));
	printf("rmdir bn.d: %s\n", res(rt_syscall(SYS_rmdir, "bn.d")));
	return 0;
}
