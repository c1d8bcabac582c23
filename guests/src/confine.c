/*
 * confine.c - the edges of the file-system sandbox, as a guest sees them.
 *
 * Without arguments (compared with a native run): names whose last component is
 * not a name (".", "..", "/") in rmdir, unlink, readlink and utimensat; fstatat
 * with AT_EMPTY_PATH on AT_FDCWD; and a FIFO (and a link to one, and a script
 * whose interpreter is one) given to execve and truncate, which must fail at
 * once (EACCES, EINVAL) without opening the FIFO.
 *
 * With arguments, for the sandbox tests run under --root (crates/cli/tests/confine.rs):
 *   confine dotdot        utimensat and friends on "/.." and (root fd, "..")
 *   confine inherited     what the guest can do with descriptor 0 (a host file)
 *   confine flood         writes 256 KiB at a time to stdout for ever
 *   confine copy          copies stdin to stdout (read and readv, write and
 *                         writev in turn), then says how much on stderr
 *   confine abstract NAME connects to the abstract unix socket NAME, then binds
 *                         it and listens until stdin ends
 */
#include "rt.h"

#define S_IFMT 0170000
#define S_IFIFO 0010000
#define AT_FDCWD (-100)
#define AT_SYMLINK_NOFOLLOW 0x100
#define AT_SYMLINK_FOLLOW 0x400
#define AT_EMPTY_PATH 0x1000
#define O_DIRECTORY 0200000
#define UTIME_OMIT ((1l << 30) - 2l)

#define NR_execve 11
#define NR_mknod 14
#define NR_chmod 15
#define NR_mkdir 39
#define NR_rmdir 40
#define NR_symlink 83
#define NR_readlink 85
#define NR_fchmod 94
#define NR_truncate64 193
#define NR_openat 295
#define NR_fstatat64 300
#define NR_linkat 303
#define NR_readlinkat 305
#define NR_utimensat 320

static long sc(long n, long a, long b, long c, long d, long e)
{
	return rt_syscall(n, a, b, c, d, e);
}

static const char *res(long r)
{
	static char buf[4][40];
	static int k;
	switch (r) {
	case 0: return "ok";
	case -1: return "EPERM";
	case -2: return "ENOENT";
	case -13: return "EACCES";
	case -16: return "EBUSY";
	case -17: return "EEXIST";
	case -20: return "ENOTDIR";
	case -21: return "EISDIR";
	case -22: return "EINVAL";
	case -39: return "ENOTEMPTY";
	case -111: return "ECONNREFUSED";
	default:
		k = (k + 1) % 4;
		snprintf(buf[k], sizeof(buf[k]), "%ld", r);
		return buf[k];
	}
}

static void dots(void)
{
	struct stat64 a, b;
	char buf[64];
	struct timespec omit[2] = { { 0, UTIME_OMIT }, { 0, UTIME_OMIT } };

	printf("mkdir d: %s\n", res(sc(NR_mkdir, (long)"confine.d", 0755, 0, 0, 0)));
	printf("rmdir d/..: %s\n", res(sc(NR_rmdir, (long)"confine.d/..", 0, 0, 0, 0)));
	printf("rmdir d/.: %s\n", res(sc(NR_rmdir, (long)"confine.d/.", 0, 0, 0, 0)));
	printf("rmdir .: %s\n", res(sc(NR_rmdir, (long)".", 0, 0, 0, 0)));
	printf("rmdir d/../: %s\n", res(sc(NR_rmdir, (long)"confine.d/../", 0, 0, 0, 0)));
	printf("unlink d/..: %s\n", res(sys_unlink("confine.d/..")));
	printf("readlink d/..: %s\n", res(sc(NR_readlink, (long)"confine.d/..", (long)buf, sizeof buf, 0, 0)));
	printf("utimensat d/.. nofollow: %s\n",
	       res(sc(NR_utimensat, AT_FDCWD, (long)"confine.d/..", (long)omit, AT_SYMLINK_NOFOLLOW, 0)));
	long r1 = sc(NR_fstatat64, AT_FDCWD, (long)"", (long)&a, AT_EMPTY_PATH, 0);
	long r2 = rt_syscall(SYS_stat64, ".", &b);
	printf("fstatat(AT_FDCWD, \"\", AT_EMPTY_PATH): %s, the working directory: %s\n", res(r1),
	       r1 == 0 && r2 == 0 && a.st_ino == b.st_ino ? "yes" : "no");
	long r3 = sc(NR_fstatat64, AT_FDCWD, (long)"confine.d/..", (long)&a, AT_SYMLINK_NOFOLLOW, 0);
	printf("lstat d/..: %s, the working directory: %s\n", res(r3), r3 == 0 && a.st_ino == b.st_ino ? "yes" : "no");
	printf("rmdir d: %s\n", res(sc(NR_rmdir, (long)"confine.d", 0, 0, 0, 0)));
}

static void fifos(void)
{
	char *argv[] = { "x", 0 };
	char *envp[] = { 0 };

	sys_unlink("confine.fifo");
	sys_unlink("confine.link");
	sys_unlink("confine.sh");
	printf("mknod fifo: %s\n", res(sc(NR_mknod, (long)"confine.fifo", S_IFIFO | 0755, 0, 0, 0)));
	printf("symlink: %s\n", res(sc(NR_symlink, (long)"confine.fifo", (long)"confine.link", 0, 0, 0)));
	long fd = sys_open("confine.sh", O_WRONLY | O_CREAT | O_TRUNC, 0755);
	sys_write(fd, "#!confine.fifo\n", 15);
	sys_close(fd);
	printf("execve fifo: %s\n", res(sc(NR_execve, (long)"confine.fifo", (long)argv, (long)envp, 0, 0)));
	printf("execve link to fifo: %s\n", res(sc(NR_execve, (long)"confine.link", (long)argv, (long)envp, 0, 0)));
	printf("execve script run by a fifo: %s\n",
	       res(sc(NR_execve, (long)"confine.sh", (long)argv, (long)envp, 0, 0)));
	printf("execve directory: %s\n", res(sc(NR_execve, (long)".", (long)argv, (long)envp, 0, 0)));
	printf("truncate fifo: %s\n", res(sc(NR_truncate64, (long)"confine.fifo", 0, 0, 0, 0)));
	printf("truncate link to fifo: %s\n", res(sc(NR_truncate64, (long)"confine.link", 0, 0, 0, 0)));
	printf("truncate directory: %s\n", res(sc(NR_truncate64, (long)".", 0, 0, 0, 0)));
	printf("truncate script: %s\n", res(sc(NR_truncate64, (long)"confine.sh", 4, 0, 0, 0)));
	sys_unlink("confine.fifo");
	sys_unlink("confine.link");
	sys_unlink("confine.sh");
}

/* Under --root: none of these may reach the root's host parent. */
static void dotdot(void)
{
	struct timespec t[2] = { { 1, 0 }, { 1, 0 } };
	struct stat64 a, b;
	char buf[64];

	printf("utimensat /.. nofollow: %s\n",
	       res(sc(NR_utimensat, AT_FDCWD, (long)"/..", (long)t, AT_SYMLINK_NOFOLLOW, 0)));
	long root = sc(NR_openat, AT_FDCWD, (long)"/", O_DIRECTORY, 0, 0);
	printf("utimensat (root, ..) nofollow: %s\n",
	       res(sc(NR_utimensat, root, (long)"..", (long)t, AT_SYMLINK_NOFOLLOW, 0)));
	printf("utimensat (root, ..): %s\n", res(sc(NR_utimensat, root, (long)"..", (long)t, 0, 0)));
	printf("utimensat /../.. nofollow: %s\n",
	       res(sc(NR_utimensat, AT_FDCWD, (long)"/../..", (long)t, AT_SYMLINK_NOFOLLOW, 0)));
	printf("readlinkat (root, ..): %s\n", res(sc(NR_readlinkat, root, (long)"..", (long)buf, sizeof buf, 0)));
	rt_syscall(SYS_stat64, "/", &b);
	long r = sc(NR_fstatat64, root, (long)"..", (long)&a, AT_SYMLINK_NOFOLLOW, 0);
	printf("lstat (root, ..): %s, the root: %s\n", res(r), r == 0 && a.st_ino == b.st_ino ? "yes" : "no");
	printf("mkdir /..: %s\n", res(sc(NR_mkdir, (long)"/..", 0755, 0, 0, 0)));
	printf("rmdir /..: %s\n", res(sc(NR_rmdir, (long)"/..", 0, 0, 0, 0)));
	printf("rmdir /: %s\n", res(sc(NR_rmdir, (long)"/", 0, 0, 0, 0)));
	printf("symlink /..: %s\n", res(sc(NR_symlink, (long)"x", (long)"/..", 0, 0, 0)));
}

/* Descriptor 0 is a read-only host file outside the root. */
static void inherited(void)
{
	char buf[256];
	long n = sc(NR_readlink, (long)"/proc/self/fd/0", (long)buf, sizeof buf - 1, 0, 0);
	buf[n > 0 ? n : 0] = 0;
	printf("readlink /proc/self/fd/0: %s \"%s\"\n", n < 0 ? res(n) : "ok", buf);
	printf("open /proc/self/fd/0 for writing: %s\n", res(sys_open("/proc/self/fd/0", O_WRONLY, 0)));
	printf("open /proc/self/fd/0 for reading and writing: %s\n", res(sys_open("/proc/self/fd/0", O_RDWR, 0)));
	printf("open /proc/self/fd/0 for appending: %s\n",
	       res(sys_open("/proc/self/fd/0", O_WRONLY | O_APPEND, 0)));
	long fd = sys_open("/proc/self/fd/0", O_RDONLY, 0);
	n = fd < 0 ? fd : sys_read(fd, buf, 5);
	printf("open /proc/self/fd/0 for reading: %s, read %ld\n", fd < 0 ? res(fd) : "ok", n);
	printf("fchmod 0: %s\n", res(sc(NR_fchmod, 0, 0666, 0, 0, 0)));
	printf("chmod /proc/self/fd/0: %s\n", res(sc(NR_chmod, (long)"/proc/self/fd/0", 0666, 0, 0, 0)));
	struct timespec t[2] = { { 1, 0 }, { 1, 0 } };
	printf("futimens 0: %s\n", res(sc(NR_utimensat, 0, 0, (long)t, 0, 0)));
	printf("linkat 0 AT_EMPTY_PATH: %s\n",
	       res(sc(NR_linkat, 0, (long)"", AT_FDCWD, (long)"/stolen1", AT_EMPTY_PATH)));
	printf("link /proc/self/fd/0: %s\n",
	       res(sc(NR_linkat, AT_FDCWD, (long)"/proc/self/fd/0", AT_FDCWD, (long)"/stolen2", AT_SYMLINK_FOLLOW)));
	printf("truncate /proc/self/fd/0: %s\n", res(sc(NR_truncate64, (long)"/proc/self/fd/0", 0, 0, 0, 0)));
}

/* Writes larger than a pipe holds: the host may say "writable" and still not take
 * all of one. */
static void flood(void)
{
	static char lines[256 << 10];
	memset(lines, 'x', sizeof lines);
	for (;;)
		sys_write(1, lines, sizeof lines);
}

static void copy(void)
{
	static char buf[96 << 10];
	long total = 0;
	for (int i = 0;; i++) {
		long n;
		if (i & 1) {
			struct iovec in[2] = { { buf, 1000 }, { buf + 1000, sizeof buf - 1000 } };
			n = sys_readv(0, in, 2);
		} else {
			n = sys_read(0, buf, sizeof buf);
		}
		if (n <= 0) {
			eprintf("copy: %ld bytes, read ended with %ld\n", total, n);
			return;
		}
		for (long done = 0; done < n;) {
			long w;
			if (i & 2) {
				struct iovec out[2] = { { buf + done, (n - done) / 2 }, { buf + done + (n - done) / 2, n - done - (n - done) / 2 } };
				w = sys_writev(1, out, 2);
			} else {
				w = sys_write(1, buf + done, n - done);
			}
			if (w <= 0) {
				eprintf("copy: write failed with %ld\n", w);
				return;
			}
			done += w;
		}
		total += n;
	}
}

static void abstract_connect(const char *name)
{
	struct sockaddr_un u;
	memset(&u, 0, sizeof u);
	u.sun_family = AF_UNIX;
	int len = strlen(name);
	memcpy(u.sun_path + 1, name, len);
	long c = sys_socket(AF_UNIX, SOCK_STREAM, 0);
	printf("connect @%s: %s\n", name, res(sys_connect(c, &u, 2 + 1 + len)));
	long d = sys_socket(AF_UNIX, SOCK_STREAM, 0);
	printf("bind @%s: %s\n", name, res(sys_bind(d, &u, 2 + 1 + len)));
	printf("listen: %s\n", res(sys_listen(d, 4)));
	fflush_stdout();
	/* Listening until stdin ends: the host may try to connect meanwhile. */
	char ch;
	while (sys_read(0, &ch, 1) > 0)
		;
}

int main(int argc, char **argv)
{
	sys_umask(022);
	if (argc > 1 && !strcmp(argv[1], "dotdot")) {
		dotdot();
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "inherited")) {
		inherited();
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "flood"))
		flood();
	if (argc > 1 && !strcmp(argv[1], "copy")) {
		copy();
		return 0;
	}
	if (argc > 2 && !strcmp(argv[1], "abstract")) {
		abstract_connect(argv[2]);
		return 0;
	}
	dots();
	fifos();
	return 0;
}
