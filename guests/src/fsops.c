/*
 * fsops.c - directory and name operations in the current directory:
 * mkdir/mkdirat, rename/renameat (files, over an existing name, directories),
 * symlink/readlink/lstat, link and the link count, chmod/fchmod/fchmodat,
 * unlink/rmdir, fsync/fdatasync/syncfs (a file, a directory, a pipe, a bad
 * descriptor), creat (write-only, truncating), and the errno of the failing cases (ENOENT, EEXIST, ENOTEMPTY,
 * EISDIR...). Everything it creates is removed at the end (renaming a name onto
 * another link of the same file is a no-op, as POSIX says, so "c" is unlinked too).
 */
#include "rt.h"

#define S_IFMT 0170000
#define S_IFLNK 0120000
#define S_IFREG 0100000
#define S_IFDIR 0040000
#define AT_FDCWD (-100)

static long sc2(long n, long a, long b) { return rt_syscall(n, a, b); }
static long sc3(long n, long a, long b, long c) { return rt_syscall(n, a, b, c); }
static long sc4(long n, long a, long b, long c, long d) { return rt_syscall(n, a, b, c, d); }

static const char *res(long r)
{
	static char buf[40];
	switch (r) {
	case 0: return "ok";
	case -2: return "ENOENT";
	case -17: return "EEXIST";
	case -20: return "ENOTDIR";
	case -21: return "EISDIR";
	case -22: return "EINVAL";
	case -39: return "ENOTEMPTY";
	case -9: return "EBADF";
	default:
		snprintf(buf, sizeof(buf), "%ld", r);
		return buf;
	}
}

static void show_stat(const char *what, const char *path, int follow)
{
	struct stat64 st;
	long r = follow ? rt_syscall(SYS_stat64, path, &st) : rt_syscall(196 /* lstat64 */, path, &st);
	if (r < 0) {
		printf("%s %s: %s\n", what, path, res(r));
		return;
	}
	const char *t = (st.st_mode & S_IFMT) == S_IFLNK ? "link" : (st.st_mode & S_IFMT) == S_IFDIR ? "dir" : (st.st_mode & S_IFMT) == S_IFREG ? "file" : "other";
	printf("%s %s: %s mode %03o size %lld nlink %u\n", what, path, t, (unsigned)(st.st_mode & 0777),
	       (long long)(st.st_mode & S_IFMT) == S_IFLNK ? 0LL : (long long)st.st_size, (unsigned)st.st_nlink);
}

int main(void)
{
	char buf[64];
	long fd, n;

	sys_umask(022);
	printf("mkdir d: %s\n", res(sc2(39, (long)"fsops.d", 0755)));
	printf("mkdir d again: %s\n", res(sc2(39, (long)"fsops.d", 0755)));
	printf("mkdirat d/sub: %s\n", res(sc3(296, AT_FDCWD, (long)"fsops.d/sub", 0700)));
	fd = sys_open("fsops.d/a", 0101 /* O_WRONLY|O_CREAT */, 0644);
	sys_write((int)fd, "hello, world\n", 13);
	sys_close((int)fd);
	show_stat("created", "fsops.d/a", 1);
	printf("rename a b: %s\n", res(sc2(38, (long)"fsops.d/a", (long)"fsops.d/b")));
	show_stat("old name", "fsops.d/a", 1);
	show_stat("new name", "fsops.d/b", 1);
	printf("symlink b <- l: %s\n", res(sc2(83, (long)"b", (long)"fsops.d/l")));
	n = rt_syscall(85 /* readlink */, "fsops.d/l", buf, sizeof(buf) - 1);
	if (n >= 0)
		buf[n] = 0;
	printf("readlink l: %ld \"%s\"\n", n, n >= 0 ? buf : "");
	show_stat("stat l", "fsops.d/l", 1);
	show_stat("lstat l", "fsops.d/l", 0);
	printf("symlinkat dangling: %s\n", res(sc3(304, (long)"nowhere", AT_FDCWD, (long)"fsops.d/dang")));
	show_stat("stat dangling", "fsops.d/dang", 1);
	printf("link b c: %s\n", res(sc2(9, (long)"fsops.d/b", (long)"fsops.d/c")));
	show_stat("after link", "fsops.d/b", 1);
	printf("link onto existing: %s\n", res(sc2(9, (long)"fsops.d/b", (long)"fsops.d/c")));
	printf("chmod b 600: %s\n", res(sc2(15, (long)"fsops.d/b", 0600)));
	show_stat("chmod", "fsops.d/c", 1);
	fd = rt_syscall(8 /* creat */, "fsops.d/cr", 0600);
	printf("creat: %s, write %ld, read %s\n", fd >= 0 ? "ok" : res(fd), sys_write((int)fd, "abc", 3),
	       res(sys_read((int)fd, buf, 1)));
	sys_close((int)fd);
	fd = rt_syscall(8 /* creat */, "fsops.d/cr", 0600);
	show_stat("creat again truncates", "fsops.d/cr", 1);
	sys_close((int)fd);
	sys_unlink("fsops.d/cr");
	fd = sys_open("fsops.d/b", 2 /* O_RDWR */, 0);
	printf("fsync file: %s, fdatasync: %s, syncfs: %s\n", res(rt_syscall(118, fd)), res(rt_syscall(148, fd)),
	       res(rt_syscall(344, fd)));
	sys_close((int)fd);
	fd = sys_open("fsops.d", 0200000 /* O_DIRECTORY */, 0);
	printf("fsync dir: %s\n", res(rt_syscall(118, fd)));
	sys_close((int)fd);
	int pfd[2];
	sys_pipe(pfd);
	printf("fsync pipe: %s, fdatasync pipe: %s\n", res(rt_syscall(118, pfd[0])), res(rt_syscall(148, pfd[1])));
	sys_close(pfd[0]);
	sys_close(pfd[1]);
	printf("fsync bad fd: %s\n", res(rt_syscall(118, 999)));
	fd = sys_open("fsops.d/b", 0, 0);
	printf("fchmod 640: %s\n", res(sc2(94, fd, 0640)));
	sys_close((int)fd);
	show_stat("fchmod", "fsops.d/b", 1);
	printf("fchmodat 604 via link: %s\n", res(sc3(306, AT_FDCWD, (long)"fsops.d/l", 0604)));
	show_stat("fchmodat", "fsops.d/b", 1);
	printf("renameat c over b: %s\n", res(sc4(302, AT_FDCWD, (long)"fsops.d/c", AT_FDCWD, (long)"fsops.d/b")));
	show_stat("after replace", "fsops.d/b", 1);
	printf("rename file over dir: %s\n", res(sc2(38, (long)"fsops.d/b", (long)"fsops.d/sub")));
	printf("rename dir: %s\n", res(sc2(38, (long)"fsops.d/sub", (long)"fsops.d/sub2")));
	show_stat("renamed dir", "fsops.d/sub2", 1);
	printf("rmdir non-empty: %s\n", res(rt_syscall(40, "fsops.d")));
	printf("unlink dir: %s\n", res(sys_unlink("fsops.d/sub2")));
	printf("rename missing: %s\n", res(sc2(38, (long)"fsops.d/zz", (long)"fsops.d/yy")));
	printf("cleanup: %s", res(sys_unlink("fsops.d/l")));
	printf(" %s", res(sys_unlink("fsops.d/dang")));
	printf(" %s", res(sys_unlink("fsops.d/b")));
	printf(" %s", res(sys_unlink("fsops.d/c")));
	printf(" %s", res(rt_syscall(40, "fsops.d/sub2")));
	printf(" %s\n", res(rt_syscall(40, "fsops.d")));
	show_stat("gone", "fsops.d", 1);
	return 0;
}
