/*
 * openat2.c - openat2 and its struct open_how, in a directory it makes in the current one
 * and removes:
 *   the size (too small, past a page, a larger structure with zero or non-zero bytes
 *     past the known one, unreadable), the flags and mode it refuses (unknown bits,
 *     a mode without O_CREAT, O_DIRECTORY with O_CREAT, O_TMPFILE's rules, O_PATH with
 *     other flags, RESOLVE_CACHED with O_CREAT or O_TRUNC), the order of its errors
 *     (flags before the path, the path before the directory);
 *   RESOLVE_BENEATH and RESOLVE_IN_ROOT on the file system (.., absolute and relative
 *     links) and in /dev and /proc (their links, the magic ones refused);
 *   RESOLVE_NO_SYMLINKS, RESOLVE_NO_MAGICLINKS, RESOLVE_NO_XDEV (/dev and /proc are
 *     mounts of their own), RESOLVE_CACHED where Linux's answer does not depend on
 *     what its caches hold.
 * A link of /proc opened itself (O_PATH|O_NOFOLLOW) is in fdexact.c.
 */
#include "rt.h"

#define SYS_openat2 437
#define SYS_symlink_ 83
#define SYS_mkdir_ 39
#define SYS_rmdir_ 40

#define AT_FDCWD (-100)
#define O_DIRECTORY 0200000
#define O_NOFOLLOW 0400000
#define O_CLOEXEC 02000000
#define O_PATH 010000000
#define O_TMPFILE (020000000 | O_DIRECTORY)
#define O_TMPFILE_BIT 020000000

#define RESOLVE_NO_XDEV 0x01
#define RESOLVE_NO_MAGICLINKS 0x02
#define RESOLVE_NO_SYMLINKS 0x04
#define RESOLVE_BENEATH 0x08
#define RESOLVE_IN_ROOT 0x10
#define RESOLVE_CACHED 0x20

#define D "openat2.d"

struct open_how {
	unsigned long long flags, mode, resolve;
};

static const char *res(long r)
{
	static char buf[8][24];
	static int next;
	char *b = buf[next++ % 8];
	if (r >= 0)
		return "ok";
	switch (-r) {
	case 2: return "ENOENT";
	case 7: return "E2BIG";
	case 9: return "EBADF";
	case 11: return "EAGAIN";
	case 13: return "EACCES";
	case 14: return "EFAULT";
	case 17: return "EEXIST";
	case 18: return "EXDEV";
	case 20: return "ENOTDIR";
	case 21: return "EISDIR";
	case 22: return "EINVAL";
	case 40: return "ELOOP";
	default: snprintf(b, 24, "%ld", r); return b;
	}
}

/* openat2 with the how given; the descriptor is closed, the result printed. */
static long o2(const char *what, int dir, const char *path, unsigned long long flags, unsigned long long mode,
	       unsigned long long resolve)
{
	struct open_how how = { flags, mode, resolve };
	long r = rt_syscall(SYS_openat2, dir, path, &how, sizeof how);
	printf("%s: %s\n", what, res(r));
	if (r >= 0)
		sys_close((int)r);
	return r;
}

static char page[2 * 4096] __attribute__((aligned(4096)));

static void sizes(void)
{
	printf("-- the structure\n");
	struct open_how *h = (struct open_how *)(page + 4096 - 24);
	h->flags = O_RDONLY;
	h->mode = 0;
	h->resolve = 0;
	printf("size 23: %s\n", res(rt_syscall(SYS_openat2, AT_FDCWD, D "/f", h, 23)));
	printf("size 24: %s\n", res(rt_syscall(SYS_openat2, AT_FDCWD, D "/f", h, 24)));
	printf("size 4097: %s\n", res(rt_syscall(SYS_openat2, AT_FDCWD, D "/f", h, 4097)));
	struct open_how *big = (struct open_how *)page;
	big->flags = O_RDONLY;
	printf("size 32, zeros after: %s\n", res(rt_syscall(SYS_openat2, AT_FDCWD, D "/f", big, 32)));
	page[30] = 1;
	printf("size 32, a byte after: %s\n", res(rt_syscall(SYS_openat2, AT_FDCWD, D "/f", big, 32)));
	page[30] = 0;
	printf("size 4096, zeros after: %s\n", res(rt_syscall(SYS_openat2, AT_FDCWD, D "/f", big, 4096)));
	/* The structure at a page's end, the page after it unmapped. */
	char *m = (char *)sys_mmap2(0, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	sys_munmap(m + 4096, 4096);
	struct open_how *edge = (struct open_how *)(m + 4096 - 24);
	edge->flags = O_RDONLY;
	printf("size 24 at a page's end: %s\n", res(rt_syscall(SYS_openat2, AT_FDCWD, D "/f", edge, 24)));
	printf("size 32 past it: %s\n", res(rt_syscall(SYS_openat2, AT_FDCWD, D "/f", edge, 32)));
	m[4096 - 25] = 0;
	struct open_how *mid = (struct open_how *)(m + 4096 - 32);
	mid->flags = O_RDONLY;
	mid->mode = 0;
	mid->resolve = 0;
	m[4096 - 4] = 1;
	printf("size 40, a byte before the hole: %s\n", res(rt_syscall(SYS_openat2, AT_FDCWD, D "/f", mid, 40)));
	sys_munmap(m, 4096);
	printf("NULL how: %s\n", res(rt_syscall(SYS_openat2, AT_FDCWD, D "/f", 0, 24)));
	int fd = (int)rt_syscall(SYS_openat2, AT_FDCWD, D "/f", h, 24);
	printf("F_GETFL has O_LARGEFILE: %d\n", (sys_fcntl(fd, F_GETFL, 0) & O_LARGEFILE) != 0);
	sys_close(fd);
}

static void flags(void)
{
	printf("-- flags and mode\n");
	o2("O_RDONLY|O_CLOEXEC", AT_FDCWD, D "/f", O_RDONLY | O_CLOEXEC, 0, 0);
	o2("bit 40", AT_FDCWD, D "/f", 1ULL << 40, 0, 0);
	o2("bit 2", AT_FDCWD, D "/f", 4, 0, 0);
	o2("bit 26", AT_FDCWD, D "/f", 1 << 26, 0, 0);
	o2("access mode 3", AT_FDCWD, D "/f", 3, 0, 0);
	o2("a mode without O_CREAT", AT_FDCWD, D "/f", O_RDONLY, 0644, 0);
	o2("O_CREAT, mode 010644", AT_FDCWD, D "/new", O_CREAT | O_WRONLY, 010644, 0);
	o2("O_CREAT, mode 07777", AT_FDCWD, D "/new", O_CREAT | O_WRONLY, 07777, 0);
	o2("O_CREAT|O_DIRECTORY", AT_FDCWD, D "/new2", O_CREAT | O_DIRECTORY, 0, 0);
	o2("O_TMPFILE read-only", AT_FDCWD, D, O_TMPFILE | O_RDONLY, 0600, 0);
	o2("__O_TMPFILE without O_DIRECTORY", AT_FDCWD, D, O_TMPFILE_BIT | O_RDWR, 0600, 0);
	o2("O_TMPFILE, a mode past 07777", AT_FDCWD, D, O_TMPFILE | O_RDWR, 0100600, 0);
	o2("O_PATH|O_RDWR", AT_FDCWD, D "/f", O_PATH | O_RDWR, 0, 0);
	o2("O_PATH|O_NOFOLLOW|O_DIRECTORY|O_CLOEXEC", AT_FDCWD, D, O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC, 0, 0);
	o2("O_PATH|O_LARGEFILE", AT_FDCWD, D "/f", O_PATH | O_LARGEFILE, 0, 0);
	o2("resolve bit 6", AT_FDCWD, D "/f", O_RDONLY, 0, 0x40);
	o2("RESOLVE_BENEATH|RESOLVE_IN_ROOT", AT_FDCWD, D "/f", O_RDONLY, 0, RESOLVE_BENEATH | RESOLVE_IN_ROOT);
	o2("RESOLVE_CACHED with O_CREAT", AT_FDCWD, D "/f", O_CREAT | O_RDWR, 0, RESOLVE_CACHED);
	o2("RESOLVE_CACHED with O_TRUNC", AT_FDCWD, D "/f", O_TRUNC | O_RDWR, 0, RESOLVE_CACHED);
	o2("RESOLVE_CACHED, a file just made", AT_FDCWD, D "/f", O_RDONLY, 0, RESOLVE_CACHED);
	o2("RESOLVE_CACHED, /dev/null", AT_FDCWD, "/dev/null", O_RDONLY, 0, RESOLVE_CACHED);
	o2("RESOLVE_CACHED, /proc/self/fd/0", AT_FDCWD, "/proc/self/fd/0", O_RDONLY, 0, RESOLVE_CACHED);
	o2("RESOLVE_CACHED, /dev/stdin", AT_FDCWD, "/dev/stdin", O_RDONLY, 0, RESOLVE_CACHED);

	printf("-- the order of the errors\n");
	struct open_how bad = { 1ULL << 40, 0, 0 };
	printf("bad flags, bad path: %s\n", res(rt_syscall(SYS_openat2, 99, 16, &bad, 24)));
	struct open_how ok = { O_RDONLY, 0, 0 };
	printf("bad path, bad directory: %s\n", res(rt_syscall(SYS_openat2, 99, 16, &ok, 24)));
	printf("empty path, bad directory: %s\n", res(rt_syscall(SYS_openat2, 99, "", &ok, 24)));
	o2("a relative path, bad directory", 99, "f", O_RDONLY, 0, 0);
	o2("an absolute path, bad directory", 99, "/dev/null", O_RDONLY, 0, 0);
	o2("an absolute path, bad directory, RESOLVE_BENEATH", 99, "/dev/null", O_RDONLY, 0, RESOLVE_BENEATH);
	o2("an absolute path, bad directory, RESOLVE_IN_ROOT", 99, "/dev/null", O_RDONLY, 0, RESOLVE_IN_ROOT);
	int f = (int)sys_open(D "/f", O_RDONLY, 0);
	o2("a file as the directory", f, "x", O_RDONLY, 0, RESOLVE_BENEATH);
	sys_close(f);
}

static void scopes(void)
{
	printf("-- RESOLVE_BENEATH and RESOLVE_IN_ROOT\n");
	int d = (int)sys_open(D, O_DIRECTORY, 0);
	o2("beneath: f", d, "f", O_RDONLY, 0, RESOLVE_BENEATH);
	o2("beneath: sub/../f", d, "sub/../f", O_RDONLY, 0, RESOLVE_BENEATH);
	o2("beneath: ../" D "/f", d, "../" D "/f", O_RDONLY, 0, RESOLVE_BENEATH);
	o2("beneath: an absolute path", d, "/dev/null", O_RDONLY, 0, RESOLVE_BENEATH);
	o2("beneath: a relative link", d, "rel", O_RDONLY, 0, RESOLVE_BENEATH);
	o2("beneath: a link up and back", d, "updown", O_RDONLY, 0, RESOLVE_BENEATH);
	o2("beneath: an absolute link", d, "abs", O_RDONLY, 0, RESOLVE_BENEATH);
	o2("beneath: an absolute link, not followed", d, "abs", O_PATH | O_NOFOLLOW, 0, RESOLVE_BENEATH);
	o2("beneath: creating", d, "made", O_CREAT | O_WRONLY, 0600, RESOLVE_BENEATH);
	o2("beneath: creating it again, O_EXCL", d, "made", O_CREAT | O_EXCL | O_WRONLY, 0600, RESOLVE_BENEATH);
	o2("beneath: f/", d, "f/", O_RDONLY, 0, RESOLVE_BENEATH);
	o2("beneath: missing", d, "missing", O_RDONLY, 0, RESOLVE_BENEATH);
	o2("beneath the working directory: " D "/f", AT_FDCWD, D "/f", O_RDONLY, 0, RESOLVE_BENEATH);
	o2("in root: /f", d, "/f", O_RDONLY, 0, RESOLVE_IN_ROOT);
	o2("in root: ../../f", d, "../../f", O_RDONLY, 0, RESOLVE_IN_ROOT);
	o2("in root: an absolute link to /f", d, "absf", O_RDONLY, 0, RESOLVE_IN_ROOT);
	o2("in root: a link up and back", d, "updown", O_RDONLY, 0, RESOLVE_IN_ROOT);
	o2("in root: /dev/null (not the root's)", d, "/dev/null", O_RDONLY, 0, RESOLVE_IN_ROOT);

	int dev = (int)sys_open("/dev", O_DIRECTORY, 0), proc = (int)sys_open("/proc", O_DIRECTORY, 0);
	o2("beneath /dev: null", dev, "null", O_RDONLY, 0, RESOLVE_BENEATH);
	o2("beneath /dev: stdin", dev, "stdin", O_RDONLY, 0, RESOLVE_BENEATH);
	o2("beneath /dev: ../dev/null", dev, "../dev/null", O_RDONLY, 0, RESOLVE_BENEATH);
	o2("in root /dev: /null", dev, "/null", O_RDONLY, 0, RESOLVE_IN_ROOT);
	o2("in root /dev: ../zero", dev, "../zero", O_RDONLY, 0, RESOLVE_IN_ROOT);
	o2("in root /dev: fd/0", dev, "fd/0", O_RDONLY, 0, RESOLVE_IN_ROOT);
	o2("beneath /proc: self/status", proc, "self/status", O_RDONLY, 0, RESOLVE_BENEATH);
	o2("beneath /proc: self/fd/0", proc, "self/fd/0", O_RDONLY, 0, RESOLVE_BENEATH);
	o2("beneath /proc: self/cwd", proc, "self/cwd", O_RDONLY, 0, RESOLVE_BENEATH);
	o2("in root /proc: /self/status", proc, "/self/status", O_RDONLY, 0, RESOLVE_IN_ROOT);
	o2("in root /proc: self/exe", proc, "self/exe", O_RDONLY, 0, RESOLVE_IN_ROOT);
	o2("in the working directory as root: /proc/self/root", AT_FDCWD, "/proc/self/root", O_RDONLY, 0, RESOLVE_IN_ROOT);
	sys_close(dev);
	sys_close(proc);
	sys_close(d);
}

static void restrictions(void)
{
	printf("-- RESOLVE_NO_SYMLINKS, RESOLVE_NO_MAGICLINKS, RESOLVE_NO_XDEV\n");
	int d = (int)sys_open(D, O_DIRECTORY, 0);
	o2("no symlinks: f", d, "f", O_RDONLY, 0, RESOLVE_NO_SYMLINKS);
	o2("no symlinks: a link", d, "rel", O_RDONLY, 0, RESOLVE_NO_SYMLINKS);
	o2("no symlinks: a link, not followed", d, "rel", O_PATH | O_NOFOLLOW, 0, RESOLVE_NO_SYMLINKS);
	o2("no symlinks: a link in the middle", d, "sublink/g", O_RDONLY, 0, RESOLVE_NO_SYMLINKS);
	o2("no symlinks: /proc/self/status", AT_FDCWD, "/proc/self/status", O_RDONLY, 0, RESOLVE_NO_SYMLINKS);
	o2("no symlinks: /dev/stdin", AT_FDCWD, "/dev/stdin", O_RDONLY, 0, RESOLVE_NO_SYMLINKS);
	o2("no symlinks: /dev/null", AT_FDCWD, "/dev/null", O_RDONLY, 0, RESOLVE_NO_SYMLINKS);
	o2("no magic links: a link", d, "rel", O_RDONLY, 0, RESOLVE_NO_MAGICLINKS);
	o2("no magic links: /proc/self/status", AT_FDCWD, "/proc/self/status", O_RDONLY, 0, RESOLVE_NO_MAGICLINKS);
	o2("no magic links: /proc/self/fd/0", AT_FDCWD, "/proc/self/fd/0", O_RDONLY, 0, RESOLVE_NO_MAGICLINKS);
	o2("no magic links: /dev/stdin", AT_FDCWD, "/dev/stdin", O_RDONLY, 0, RESOLVE_NO_MAGICLINKS);
	o2("no magic links: /dev/fd/0", AT_FDCWD, "/dev/fd/0", O_RDONLY, 0, RESOLVE_NO_MAGICLINKS);
	o2("no magic links: /proc/self/cwd/" D "/f", AT_FDCWD, "/proc/self/cwd/" D "/f", O_RDONLY, 0,
	   RESOLVE_NO_MAGICLINKS);
	o2("magic links: /proc/self/cwd/" D "/f", AT_FDCWD, "/proc/self/cwd/" D "/f", O_RDONLY, 0, 0);
	o2("no xdev: f", d, "f", O_RDONLY, 0, RESOLVE_NO_XDEV);
	o2("no xdev: a relative link", d, "rel", O_RDONLY, 0, RESOLVE_NO_XDEV);
	o2("no xdev: /dev/null", AT_FDCWD, "/dev/null", O_RDONLY, 0, RESOLVE_NO_XDEV);
	o2("no xdev: /dev", AT_FDCWD, "/dev", O_RDONLY, 0, RESOLVE_NO_XDEV);
	o2("no xdev: /proc/self/status", AT_FDCWD, "/proc/self/status", O_RDONLY, 0, RESOLVE_NO_XDEV);
	int dev = (int)sys_open("/dev", O_DIRECTORY, 0), proc = (int)sys_open("/proc", O_DIRECTORY, 0);
	o2("no xdev from /dev: null", dev, "null", O_RDONLY, 0, RESOLVE_NO_XDEV);
	o2("no xdev from /dev: stdin", dev, "stdin", O_RDONLY, 0, RESOLVE_NO_XDEV);
	o2("no xdev from /dev: ..", dev, "..", O_RDONLY, 0, RESOLVE_NO_XDEV);
	o2("no xdev from /proc: self/status", proc, "self/status", O_RDONLY, 0, RESOLVE_NO_XDEV);
	o2("no xdev from /proc: self/cwd", proc, "self/cwd", O_RDONLY, 0, RESOLVE_NO_XDEV);
	o2("no xdev from /proc: ../proc/self/status", proc, "../proc/self/status", O_RDONLY, 0, RESOLVE_NO_XDEV);
	o2("no symlinks from /proc: ../dev/null", proc, "../dev/null", O_RDONLY, 0, RESOLVE_NO_SYMLINKS);
	int st = (int)sys_open("/proc/self/status", O_RDONLY, 0);
	char path[40];
	snprintf(path, sizeof path, "self/fd/%d", st);
	o2("no xdev from /proc: self/fd/N, a /proc file", proc, path, O_RDONLY, 0, RESOLVE_NO_XDEV);
	o2("no xdev from /proc: self/fd/0", proc, "self/fd/0", O_RDONLY, 0, RESOLVE_NO_XDEV);
	sys_close(st);
	sys_close(dev);
	sys_close(proc);
	sys_close(d);
}

int main(void)
{
	sys_umask(022);
	rt_syscall(SYS_mkdir_, D, 0755);
	rt_syscall(SYS_mkdir_, D "/sub", 0755);
	int f = (int)sys_open(D "/f", O_RDWR | O_CREAT | O_TRUNC, 0644);
	sys_write(f, "file", 4);
	sys_close(f);
	sys_close((int)sys_open(D "/sub/g", O_RDWR | O_CREAT | O_TRUNC, 0644));
	rt_syscall(SYS_symlink_, "f", D "/rel");
	rt_syscall(SYS_symlink_, "../" D "/f", D "/updown");
	rt_syscall(SYS_symlink_, "/dev/null", D "/abs");
	rt_syscall(SYS_symlink_, "/f", D "/absf");
	rt_syscall(SYS_symlink_, "sub", D "/sublink");

	sizes();
	flags();
	scopes();
	restrictions();

	const char *names[] = { "f", "sub/g", "rel", "updown", "abs", "absf", "sublink", "new", "made", 0 };
	for (int i = 0; names[i]; i++) {
		char p[64];
		snprintf(p, sizeof p, D "/%s", names[i]);
		sys_unlink(p);
	}
	rt_syscall(SYS_rmdir_, D "/sub");
	rt_syscall(SYS_rmdir_, D);
	return 0;
}
