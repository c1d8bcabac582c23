/*
 * fsmore.c - the file calls coreutils, xz, gzip and busybox make beyond the basic
 * ones, with their errors, in a directory it makes in the current one and removes:
 *   owners: chown/lchown/fchown in their 16-bit and 32-bit forms and fchownat
 *     (the caller's own ids, and -1), a symbolic link changed itself;
 *   extended attributes: setxattr/lsetxattr/fsetxattr, removexattr and relatives, the
 *     errors that come before the attribute is looked at (flags, name, size, value,
 *     path, descriptor); the user. namespace stored, read, listed and removed on a
 *     file and a directory (XATTR_CREATE, XATTR_REPLACE, small buffers), refused on a
 *     symbolic link, a device and a pipe, other namespaces;
 *   renameat2: RENAME_NOREPLACE, RENAME_EXCHANGE (a shared mapping keeps its file),
 *     the flag errors;
 *   sync;
 *   sendfile and sendfile64: at the file position or at an offset, the 32-bit offset's
 *     limit, files, pipes (a full one, blocking and not), sockets, devices, the inputs
 *     and outputs Linux refuses, stores through a shared mapping seen by the copy and a
 *     copy seen through a shared mapping, a large copy;
 *   copy_file_range: positions and offsets, the same file, the refusals, the page cache;
 *   fallocate: growing (a mapping past the old end), keeping the size, punching, zeroing,
 *     collapsing and inserting ranges seen through a shared mapping (whatever the file
 *     system allows, natively and under morph alike), the errors;
 *   close_range: closing (a record lock released, a pipe's writer gone), close-on-exec,
 *     CLOSE_RANGE_UNSHARE, the errors;
 *   memfd_create: read, write, ftruncate, shared and private mappings, its name in
 *     /proc/self/fd, the errors;
 *   umask: the modes mkdir, open(O_CREAT), mknod (a FIFO) and bind (a socket's name)
 *     give under masks other than the usual 022 (the guest's mask, not morph's).
 */
#include "rt.h"

#define SYS_sync 36
#define SYS_chown16 182
#define SYS_lchown16 16
#define SYS_fchown16 95
#define SYS_lchown32 198
#define SYS_fchown32 207
#define SYS_chown32 212
#define SYS_fchownat 298
#define SYS_setxattr 226
#define SYS_lsetxattr 227
#define SYS_fsetxattr 228
#define SYS_getxattr 229
#define SYS_lgetxattr 230
#define SYS_fgetxattr 231
#define SYS_listxattr 232
#define SYS_removexattr 235
#define SYS_lremovexattr 236
#define SYS_fremovexattr 237
#define SYS_sendfile 187
#define SYS_sendfile64 239
#define SYS_renameat2 353
#define SYS_memfd_create 356
#define SYS_copy_file_range 377
#define SYS_fallocate 324
#define SYS_close_range 436
#define SYS_pipe2 331
#define SYS_eventfd 323
#define SYS_fcntl64 221
#define SYS_symlink 83
#define SYS_readlink 85
#define SYS_lstat64 196
#define SYS_rmdir 40
#define SYS_mkdir 39

#define AT_FDCWD (-100)
#define AT_SYMLINK_NOFOLLOW 0x100
#define AT_EMPTY_PATH 0x1000
#define O_DIRECTORY 0200000
#define O_PATH 010000000
#define F_GETFD 1
#define F_GETLK 5
#define F_SETLK 6
#define F_WRLCK 1
#define F_UNLCK 2
#define S_IFMT 0170000
#define S_IFCHR 0020000

#define D "fsmore.d/"

static const char *res(long r)
{
	static char buf[8][24];
	static int next;
	char *b = buf[next++ % 8];
	if (r >= 0) {
		snprintf(b, 24, "%ld", r);
		return b;
	}
	switch (-r) {
	case 1: return "EPERM";
	case 2: return "ENOENT";
	case 7: return "E2BIG";
	case 9: return "EBADF";
	case 11: return "EAGAIN";
	case 14: return "EFAULT";
	case 17: return "EEXIST";
	case 18: return "EXDEV";
	case 19: return "ENODEV";
	case 21: return "EISDIR";
	case 22: return "EINVAL";
	case 27: return "EFBIG";
	case 29: return "ESPIPE";
	case 34: return "ERANGE";
	case 38: return "ENOSYS";
	case 61: return "ENODATA";
	case 75: return "EOVERFLOW";
	case 95: return "EOPNOTSUPP";
	default: snprintf(b, 24, "%ld", r); return b;
	}
}

static void show(const char *what, long r) { printf("%s: %s\n", what, res(r)); }

static char big[200000];
static char buf[4096];

/* A new file of `n` bytes of `big`, open read/write (large-file, as glibc opens). */
static int make(const char *path, int n)
{
	int fd = (int)sys_open(path, O_RDWR | O_CREAT | O_TRUNC | O_LARGEFILE, 0644);
	if (n)
		sys_write(fd, big, n);
	return fd;
}

static long size_of(const char *path)
{
	struct stat64 st;
	long r = sys_stat64(path, &st);
	return r < 0 ? r : (long)st.st_size;
}

/* The `n` bytes at `off` of `path`, printed. */
static void contents(const char *what, const char *path, int off, int n)
{
	int fd = (int)sys_open(path, O_RDONLY | O_LARGEFILE, 0);
	long r = sys_pread64(fd, buf, n, off);
	sys_close(fd);
	printf("%s: %ld \"", what, r);
	for (long i = 0; i < r; i++)
		putchar(buf[i] >= ' ' && buf[i] < 127 ? buf[i] : '.');
	printf("\"\n");
}

static int wait_child(long pid)
{
	int st = 0;
	sys_waitpid((int)pid, &st, 0);
	return (st >> 8) & 0xff;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { 0, ms * 1000000 };
	sys_nanosleep(&ts, 0);
}

static void *map(int fd, int len, int flags)
{
	long r = sys_mmap2(0, len, PROT_READ | PROT_WRITE, flags, fd, 0);
	if (sys_failed(r)) {
		printf("mmap2: %s\n", res(r));
		exit(1);
	}
	return (void *)r;
}

static void owners(void)
{
	long uid = sys_getuid(), gid = sys_getgid();
	struct stat64 st;
	printf("-- owners\n");
	int fd = make(D "own", 10);
	show("chown32 own ids", rt_syscall(SYS_chown32, D "own", uid, gid));
	show("chown32 -1 -1", rt_syscall(SYS_chown32, D "own", -1, -1));
	show("chown16 own ids", rt_syscall(SYS_chown16, D "own", uid & 0xffff, gid & 0xffff));
	show("chown16 0xffff", rt_syscall(SYS_chown16, D "own", 0xffff, 0xffff));
	show("fchown32", rt_syscall(SYS_fchown32, fd, uid, gid));
	show("fchown16 -1", rt_syscall(SYS_fchown16, fd, 0xffff, 0xffff));
	show("fchown32 bad fd", rt_syscall(SYS_fchown32, 99, uid, gid));
	int op = (int)sys_open(D "own", O_PATH, 0);
	show("fchown32 O_PATH", rt_syscall(SYS_fchown32, op, uid, gid));
	show("fchownat O_PATH empty path", rt_syscall(SYS_fchownat, op, "", uid, gid, AT_EMPTY_PATH));
	show("fchownat empty path without the flag", rt_syscall(SYS_fchownat, op, "", uid, gid, 0));
	show("fchownat bad flags", rt_syscall(SYS_fchownat, AT_FDCWD, D "own", uid, gid, 0x200));
	sys_close(op);
	show("chown32 missing", rt_syscall(SYS_chown32, D "nothing", uid, gid));
	show("symlink", rt_syscall(SYS_symlink, "own", D "link"));
	show("symlink dangling", rt_syscall(SYS_symlink, "nowhere", D "dangling"));
	show("lchown32 link", rt_syscall(SYS_lchown32, D "link", uid, gid));
	show("lchown16 dangling", rt_syscall(SYS_lchown16, D "dangling", uid & 0xffff, -1));
	show("lchown32 dangling", rt_syscall(SYS_lchown32, D "dangling", -1, gid));
	show("chown32 dangling", rt_syscall(SYS_chown32, D "dangling", uid, gid));
	show("fchownat nofollow dangling", rt_syscall(SYS_fchownat, AT_FDCWD, D "dangling", uid, gid, AT_SYMLINK_NOFOLLOW));
	show("fchownat via link", rt_syscall(SYS_fchownat, AT_FDCWD, D "link", uid, gid, 0));
	show("chown32 not a directory", rt_syscall(SYS_chown32, D "own/x", uid, gid));
	sys_stat64(D "own", &st);
	printf("owned by the caller: %d %d\n", st.st_uid == (unsigned long)uid, st.st_gid == (unsigned long)gid);
	rt_syscall(SYS_lstat64, D "link", &st);
	printf("link owned by the caller: %d\n", st.st_uid == (unsigned long)uid);
	sys_close(fd);
}

static void xattrs(void)
{
	int fd = make(D "xa", 1);
	int op = (int)sys_open(D "xa", O_PATH, 0);
	printf("-- extended attributes\n");
	show("setxattr missing file", rt_syscall(SYS_setxattr, D "nothing", "user.a", "v", 1, 0));
	show("setxattr bad flags", rt_syscall(SYS_setxattr, D "nothing", "user.a", "v", 1, 8));
	show("setxattr empty name", rt_syscall(SYS_setxattr, D "nothing", "", "v", 1, 0));
	show("setxattr name unreadable", rt_syscall(SYS_setxattr, D "nothing", 16, "v", 1, 0));
	show("setxattr value too big", rt_syscall(SYS_setxattr, D "nothing", "user.a", "v", 70000, 0));
	show("setxattr value unreadable", rt_syscall(SYS_setxattr, D "nothing", "user.a", 16, 1, 0));
	char longname[300];
	memset(longname, 'a', sizeof longname - 1);
	longname[sizeof longname - 1] = 0;
	show("setxattr name too long", rt_syscall(SYS_setxattr, D "xa", longname, "v", 1, 0));
	show("lsetxattr missing file", rt_syscall(SYS_lsetxattr, D "nothing", "user.a", "v", 1, 0));
	show("lsetxattr not a directory", rt_syscall(SYS_lsetxattr, D "xa/b", "user.a", "v", 1, 0));
	show("fsetxattr bad fd", rt_syscall(SYS_fsetxattr, 99, "user.a", "v", 1, 0));
	show("fsetxattr bad fd, bad flags", rt_syscall(SYS_fsetxattr, 99, "user.a", "v", 1, 8));
	show("fsetxattr bad fd, name unreadable", rt_syscall(SYS_fsetxattr, 99, 16, "v", 1, 0));
	show("fsetxattr O_PATH", rt_syscall(SYS_fsetxattr, op, "user.a", "v", 1, 0));
	show("removexattr missing file", rt_syscall(SYS_removexattr, D "nothing", "user.a"));
	show("removexattr empty name", rt_syscall(SYS_removexattr, D "nothing", ""));
	show("lremovexattr missing file", rt_syscall(SYS_lremovexattr, D "nothing", "user.a"));
	show("fremovexattr bad fd", rt_syscall(SYS_fremovexattr, 99, "user.a"));
	show("fremovexattr bad fd, name unreadable", rt_syscall(SYS_fremovexattr, 99, 16));
	show("fremovexattr O_PATH", rt_syscall(SYS_fremovexattr, op, "user.a"));
	/* the user. namespace, stored */
	char v[64];
	show("setxattr user.a", rt_syscall(SYS_setxattr, D "xa", "user.a", "hello", 5, 0));
	show("getxattr size", rt_syscall(SYS_getxattr, D "xa", "user.a", 0, 0));
	memset(v, 0, sizeof v);
	show("getxattr", rt_syscall(SYS_getxattr, D "xa", "user.a", v, sizeof v));
	printf("value \"%s\"\n", v);
	show("getxattr buffer too small", rt_syscall(SYS_getxattr, D "xa", "user.a", v, 2));
	show("getxattr missing", rt_syscall(SYS_getxattr, D "xa", "user.zz", v, sizeof v));
	show("setxattr XATTR_CREATE existing", rt_syscall(SYS_setxattr, D "xa", "user.a", "x", 1, 1));
	show("setxattr XATTR_REPLACE missing", rt_syscall(SYS_setxattr, D "xa", "user.b", "x", 1, 2));
	show("setxattr empty value", rt_syscall(SYS_setxattr, D "xa", "user.b", "", 0, 1));
	show("fsetxattr user.c", rt_syscall(SYS_fsetxattr, fd, "user.c", "ccc", 3, 0));
	memset(v, 0, sizeof v);
	show("fgetxattr user.c", rt_syscall(SYS_fgetxattr, fd, "user.c", v, sizeof v));
	printf("value \"%s\"\n", v);
	char list[1024];
	long n = rt_syscall(SYS_listxattr, D "xa", list, sizeof list);
	printf("listxattr user names:");
	for (long i = 0; i < n; i += (long)strlen(list + i) + 1)
		if (strncmp(list + i, "user.", 5) == 0)
			printf(" %s", list + i);
	printf("\n");
	show("listxattr buffer too small", rt_syscall(SYS_listxattr, D "xa", list, 3));
	show("getxattr trusted.", rt_syscall(SYS_getxattr, D "xa", "trusted.none", v, sizeof v));
	show("getxattr unknown namespace", rt_syscall(SYS_getxattr, D "xa", "bogus.a", v, sizeof v));
	show("setxattr unknown namespace", rt_syscall(SYS_setxattr, D "xa", "bogus.a", "x", 1, 0));
	rt_syscall(SYS_symlink, "xa", D "xl");
	show("lgetxattr on a link", rt_syscall(SYS_lgetxattr, D "xl", "user.a", v, sizeof v));
	show("lsetxattr on a link", rt_syscall(SYS_lsetxattr, D "xl", "user.a", "x", 1, 0));
	show("getxattr through a link", rt_syscall(SYS_getxattr, D "xl", "user.a", v, sizeof v));
	sys_unlink(D "xl");
	show("getxattr /dev/null", rt_syscall(SYS_getxattr, "/dev/null", "user.a", v, sizeof v));
	show("setxattr /dev/null", rt_syscall(SYS_setxattr, "/dev/null", "user.a", "x", 1, 0));
	int pp[2];
	sys_pipe(pp);
	show("fgetxattr pipe", rt_syscall(SYS_fgetxattr, pp[0], "user.a", v, sizeof v));
	show("fsetxattr pipe", rt_syscall(SYS_fsetxattr, pp[1], "user.a", "x", 1, 0));
	sys_close(pp[0]);
	sys_close(pp[1]);
	show("setxattr directory", rt_syscall(SYS_setxattr, "fsmore.d", "user.d", "dd", 2, 0));
	show("getxattr directory", rt_syscall(SYS_getxattr, "fsmore.d", "user.d", v, sizeof v));
	show("removexattr directory", rt_syscall(SYS_removexattr, "fsmore.d", "user.d"));
	show("removexattr user.a", rt_syscall(SYS_removexattr, D "xa", "user.a"));
	show("removexattr again", rt_syscall(SYS_removexattr, D "xa", "user.a"));
	show("fremovexattr user.c", rt_syscall(SYS_fremovexattr, fd, "user.c"));
	sys_close(op);
	sys_close(fd);
}

static void renames(void)
{
	printf("-- renameat2\n");
	int a = make(D "ra", 0), b = make(D "rb", 0);
	sys_write(a, "AAAA", 4);
	sys_write(b, "BBBBBBBB", 8);
	char *m = map(a, 4096, MAP_SHARED);
	show("bad flags", rt_syscall(SYS_renameat2, AT_FDCWD, D "ra", AT_FDCWD, D "rb", 8));
	show("bad flags, missing file", rt_syscall(SYS_renameat2, AT_FDCWD, D "zz", AT_FDCWD, D "rb", 8));
	show("NOREPLACE|EXCHANGE", rt_syscall(SYS_renameat2, AT_FDCWD, D "ra", AT_FDCWD, D "rb", 3));
	show("WHITEOUT|EXCHANGE", rt_syscall(SYS_renameat2, AT_FDCWD, D "ra", AT_FDCWD, D "rb", 6));
	show("NOREPLACE onto a name", rt_syscall(SYS_renameat2, AT_FDCWD, D "ra", AT_FDCWD, D "rb", 1));
	show("NOREPLACE to a new name", rt_syscall(SYS_renameat2, AT_FDCWD, D "ra", AT_FDCWD, D "rc", 1));
	show("EXCHANGE", rt_syscall(SYS_renameat2, AT_FDCWD, D "rc", AT_FDCWD, D "rb", 2));
	printf("sizes after the exchange: rb %ld rc %ld\n", size_of(D "rb"), size_of(D "rc"));
	m[0] = 'a';
	contents("the mapped file, by its new name", D "rb", 0, 4);
	show("EXCHANGE with a missing name", rt_syscall(SYS_renameat2, AT_FDCWD, D "rb", AT_FDCWD, D "zz", 2));
	show("flags 0 over a name", rt_syscall(SYS_renameat2, AT_FDCWD, D "rc", AT_FDCWD, D "rb", 0));
	printf("after the replacement: rb %ld rc %ld, mapping reads %c\n", size_of(D "rb"), size_of(D "rc"), m[0]);
	sys_munmap(m, 4096);
	sys_close(a);
	sys_close(b);
	sys_unlink(D "rb");
}

static void sendfiles(void)
{
	long long off;
	long off32;
	int p[2], q[2], sv[2];
	printf("-- sendfile\n");
	int in = make(D "in", 100);
	int out = make(D "out", 0);
	sys_lseek(in, 0, SEEK_SET);
	show("10 at the position", rt_syscall(SYS_sendfile64, out, in, 0, 10));
	printf("positions %ld %ld\n", sys_lseek(in, 0, SEEK_CUR), sys_lseek(out, 0, SEEK_CUR));
	off = 5;
	show("8 at offset 5", rt_syscall(SYS_sendfile64, out, in, &off, 8));
	printf("offset %lld, position %ld\n", off, sys_lseek(in, 0, SEEK_CUR));
	off32 = 20;
	show("sendfile 5 at offset 20", rt_syscall(SYS_sendfile, out, in, &off32, 5));
	printf("offset %ld\n", off32);
	off32 = 0x7fffffff;
	show("sendfile at offset 2^31-1", rt_syscall(SYS_sendfile, out, in, &off32, 5));
	printf("offset %ld\n", off32);
	off32 = 0x7ffffff0;
	show("sendfile 100 at offset 2^31-16", rt_syscall(SYS_sendfile, out, in, &off32, 100));
	printf("offset %ld\n", off32);
	off32 = -5;
	show("sendfile at offset -5", rt_syscall(SYS_sendfile, out, in, &off32, 5));
	off = 0x7fffffffffffff00LL;
	show("sendfile64 offset + count past 2^63", rt_syscall(SYS_sendfile64, out, in, &off, 0x1000));
	show("count 0", rt_syscall(SYS_sendfile64, out, in, 0, 0));
	show("count 2^32-1 (the rest)", rt_syscall(SYS_sendfile64, out, in, 0, 0xffffffff));
	show("at the end", rt_syscall(SYS_sendfile64, out, in, 0, 10));
	sys_lseek(in, 4, SEEK_SET);
	show("sendfile count 2^31", rt_syscall(SYS_sendfile, out, in, 0, 0x80000000));
	printf("out size %ld\n", size_of(D "out"));
	contents("out", D "out", 0, 40);
	show("bad out offset pointer", rt_syscall(SYS_sendfile64, out, in, 16, 4));
	show("bad in", rt_syscall(SYS_sendfile64, out, 99, 0, 4));
	show("bad out", rt_syscall(SYS_sendfile64, 99, in, 0, 4));
	off = -1;
	show("offset -1, bad out", rt_syscall(SYS_sendfile64, 99, in, &off, 4));
	int wo = (int)sys_open(D "in", O_WRONLY, 0), ro = (int)sys_open(D "in", O_RDONLY, 0);
	int op = (int)sys_open(D "in", O_PATH, 0);
	show("in write-only", rt_syscall(SYS_sendfile64, out, wo, 0, 4));
	show("out read-only", rt_syscall(SYS_sendfile64, ro, in, 0, 4));
	show("in O_PATH", rt_syscall(SYS_sendfile64, out, op, 0, 4));
	show("out O_PATH", rt_syscall(SYS_sendfile64, op, ro, 0, 4));
	int app = make(D "app", 0);
	sys_close(app);
	app = (int)sys_open(D "app", O_WRONLY | O_APPEND, 0);
	show("out O_APPEND", rt_syscall(SYS_sendfile64, app, ro, 0, 4));
	show("out O_APPEND, count 0", rt_syscall(SYS_sendfile64, app, ro, 0, 0));
	int dir = (int)sys_open(D, O_DIRECTORY, 0);
	show("in a directory", rt_syscall(SYS_sendfile64, out, dir, 0, 4));
	show("in a directory, count 0", rt_syscall(SYS_sendfile64, out, dir, 0, 0));
	show("out a directory", rt_syscall(SYS_sendfile64, dir, ro, 0, 4));

	sys_pipe(p);
	sys_write(p[1], "pipedata", 8);
	sys_lseek(ro, 0, SEEK_SET);
	show("file to a pipe", rt_syscall(SYS_sendfile64, p[1], ro, 0, 6));
	long n = sys_read(p[0], buf, sizeof buf);
	printf("the pipe holds %ld: %.14s\n", n, buf);
	sys_write(p[1], "pipedata", 8);
	show("pipe to a file", rt_syscall(SYS_sendfile64, out, p[0], 0, 4));
	show("pipe to a file, count 0", rt_syscall(SYS_sendfile64, out, p[0], 0, 0));
	sys_pipe(q);
	show("pipe to a pipe", rt_syscall(SYS_sendfile64, q[1], p[0], 0, 4));
	show("pipe to a pipe, count 0", rt_syscall(SYS_sendfile64, q[1], p[0], 0, 0));
	off = 0;
	show("pipe at an offset", rt_syscall(SYS_sendfile64, out, p[0], &off, 4));
	sys_read(p[0], buf, sizeof buf);

	int z = (int)sys_open("/dev/zero", O_RDONLY, 0), nul = (int)sys_open("/dev/null", O_RDWR, 0);
	int ur = (int)sys_open("/dev/urandom", O_RDONLY, 0), full = (int)sys_open("/dev/full", O_WRONLY, 0);
	int st = (int)sys_open("/proc/self/status", O_RDONLY, 0);
	show("/dev/zero to a file", rt_syscall(SYS_sendfile64, out, z, 0, 4));
	show("/dev/null to a file", rt_syscall(SYS_sendfile64, out, nul, 0, 4));
	show("/dev/urandom to a file", rt_syscall(SYS_sendfile64, out, ur, 0, 16));
	show("/dev/urandom to a pipe", rt_syscall(SYS_sendfile64, q[1], ur, 0, 16));
	sys_read(q[0], buf, sizeof buf);
	show("/proc/self/status to a file", rt_syscall(SYS_sendfile64, out, st, 0, 4));
	sys_lseek(ro, 0, SEEK_SET);
	show("file to /dev/null", rt_syscall(SYS_sendfile64, nul, ro, 0, 4));
	show("file to /dev/full", rt_syscall(SYS_sendfile64, full, ro, 0, 4));
	int ev = (int)rt_syscall(SYS_eventfd, 0);
	show("eventfd to a file", rt_syscall(SYS_sendfile64, out, ev, 0, 8));
	off = 0;
	show("eventfd at an offset", rt_syscall(SYS_sendfile64, out, ev, &off, 8));
	show("file to an eventfd", rt_syscall(SYS_sendfile64, ev, ro, 0, 8));
	show("file to an eventfd, count 0", rt_syscall(SYS_sendfile64, ev, ro, 0, 0));

	sys_socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
	sys_write(sv[1], "sockdata", 8);
	show("socket to a pipe", rt_syscall(SYS_sendfile64, q[1], sv[0], 0, 4));
	n = sys_read(q[0], buf, sizeof buf);
	printf("the pipe holds %ld: %.4s\n", n, buf);
	n = sys_read(sv[0], buf, sizeof buf);
	printf("the socket still holds %ld: %.4s\n", n, buf);
	show("socket to a file", rt_syscall(SYS_sendfile64, out, sv[0], 0, 4));
	sys_lseek(ro, 10, SEEK_SET);
	show("file to a socket", rt_syscall(SYS_sendfile64, sv[1], ro, 0, 6));
	n = sys_read(sv[0], buf, sizeof buf);
	printf("the socket carried %ld\n", n);

	/* A full non-blocking pipe: EAGAIN, nothing taken from the input. */
	int nb[2];
	rt_syscall(SYS_pipe2, nb, O_NONBLOCK);
	while (sys_write(nb[1], big, 4096) > 0)
		;
	sys_lseek(ro, 0, SEEK_SET);
	show("full non-blocking pipe", rt_syscall(SYS_sendfile64, nb[1], ro, 0, 4));
	printf("position %ld\n", sys_lseek(ro, 0, SEEK_CUR));
	sys_close(nb[0]);
	sys_close(nb[1]);

	/* A large file to an empty pipe: what fits. */
	int bigf = make(D "big", sizeof big);
	sys_lseek(bigf, 0, SEEK_SET);
	int bp[2];
	rt_syscall(SYS_pipe2, bp, O_NONBLOCK);
	show("200000 bytes to an empty pipe", rt_syscall(SYS_sendfile64, bp[1], bigf, 0, sizeof big));
	printf("position %ld\n", sys_lseek(bigf, 0, SEEK_CUR));
	sys_close(bp[0]);
	sys_close(bp[1]);

	/* A full blocking pipe: the call waits for the reader. */
	sys_pipe(bp);
	while (sys_write(bp[1], big, 65536) != 65536)
		;
	fflush_stdout();
	long pid = sys_fork();
	if (pid == 0) {
		long got = 0, r;
		sleep_ms(30);
		while (got < 65536 + 10 && (r = sys_read(bp[0], buf, sizeof buf)) > 0)
			got += r;
		printf("the reader took %ld\n", got);
		exit(0);
	}
	sys_lseek(ro, 0, SEEK_SET);
	long r = rt_syscall(SYS_sendfile64, bp[1], ro, 0, 10);
	wait_child(pid);
	show("10 to a full blocking pipe", r);
	sys_close(bp[0]);
	sys_close(bp[1]);

	/* A large copy between files, in chunks. */
	int copy = make(D "copy", 0);
	sys_lseek(bigf, 0, SEEK_SET);
	show("200000 between files", rt_syscall(SYS_sendfile64, copy, bigf, 0, 0x7fffffff));
	sys_pread64(copy, buf, 4096, 150000);
	printf("size %ld, bytes at 150000 the same: %d\n", size_of(D "copy"), memcmp(buf, big + 150000, 4096) == 0);

	/* The same descriptor in and out. */
	sys_lseek(in, 0, SEEK_SET);
	show("in and out the same", rt_syscall(SYS_sendfile64, in, in, 0, 4));
	printf("position %ld\n", sys_lseek(in, 0, SEEK_CUR));

	/* Stores through a shared mapping of the input are copied; the copy is seen
	 * through a shared mapping of the output. */
	char *mi = map(in, 4096, MAP_SHARED), *mo = map(out, 4096, MAP_SHARED);
	memcpy(mi + 50, "STORED", 6);
	off = 50;
	sys_lseek(out, 0, SEEK_SET);
	show("from a mapped file to a mapped file", rt_syscall(SYS_sendfile64, out, in, &off, 6));
	printf("the output's mapping reads %.6s\n", mo);
	sys_munmap(mi, 4096);
	sys_munmap(mo, 4096);

	int fds[] = { in, out, wo, ro, op, app, dir, p[0], p[1], q[0], q[1], z, nul, ur, full, st, ev, sv[0], sv[1], bigf, copy };
	for (unsigned i = 0; i < sizeof fds / sizeof fds[0]; i++)
		sys_close(fds[i]);
}

static long cfr(int in, long long *oi, int out, long long *oo, unsigned len, unsigned flags)
{
	return rt_syscall(SYS_copy_file_range, in, oi, out, oo, len, flags);
}

static void copies(void)
{
	long long a, b;
	printf("-- copy_file_range\n");
	int in = make(D "cin", 100), out = make(D "cout", 0);
	sys_lseek(in, 0, SEEK_SET);
	show("5 at the positions", cfr(in, 0, out, 0, 5, 0));
	printf("positions %ld %ld\n", sys_lseek(in, 0, SEEK_CUR), sys_lseek(out, 0, SEEK_CUR));
	a = 10;
	b = 20;
	show("6 at offsets 10 and 20", cfr(in, &a, out, &b, 6, 0));
	printf("offsets %lld %lld, positions %ld %ld, size %ld\n", a, b, sys_lseek(in, 0, SEEK_CUR), sys_lseek(out, 0, SEEK_CUR),
	       size_of(D "cout"));
	contents("out", D "cout", 0, 26);
	show("len 0", cfr(in, 0, out, 0, 0, 0));
	a = 1000;
	show("past the end", cfr(in, &a, out, 0, 10, 0));
	printf("offset %lld\n", a);
	show("len 2^32-1 (the rest)", cfr(in, 0, out, 0, 0xffffffff, 0));
	show("flags 1", cfr(in, 0, out, 0, 4, 1));
	show("bad in", cfr(99, 0, out, 0, 4, 0));
	show("bad out, flags 1", cfr(in, 0, 99, 0, 4, 1));
	show("bad offset pointer, flags 1", cfr(in, (long long *)16, out, 0, 4, 1));
	a = -1;
	show("offset -1", cfr(in, &a, out, 0, 4, 0));
	a = -100;
	show("offset -100", cfr(in, &a, out, 0, 4, 0));
	a = 0;
	b = 2;
	show("the same file, overlapping", cfr(in, &a, in, &b, 4, 0));
	a = 0;
	b = 100;
	show("the same file, apart", cfr(in, &a, in, &b, 10, 0));
	printf("offsets %lld %lld, size %ld\n", a, b, size_of(D "cin"));
	a = 0;
	show("a stored offset that faults", cfr(in, &a, out, (long long *)16, 4, 0));
	int wo = (int)sys_open(D "cin", O_WRONLY, 0), ro = (int)sys_open(D "cin", O_RDONLY, 0);
	int op = (int)sys_open(D "cin", O_PATH, 0), dir = (int)sys_open(D, O_DIRECTORY, 0);
	int app = (int)sys_open(D "cout", O_WRONLY | O_APPEND, 0);
	show("in write-only", cfr(wo, 0, out, 0, 4, 0));
	show("out read-only", cfr(in, 0, ro, 0, 4, 0));
	show("in O_PATH", cfr(op, 0, out, 0, 4, 0));
	show("out O_APPEND", cfr(in, 0, app, 0, 4, 0));
	show("in a directory", cfr(dir, 0, out, 0, 4, 0));
	show("out a directory", cfr(in, 0, dir, 0, 4, 0));
	int p[2];
	sys_pipe(p);
	show("in a pipe", cfr(p[0], 0, out, 0, 4, 0));
	show("out a pipe", cfr(in, 0, p[1], 0, 4, 0));
	int z = (int)sys_open("/dev/zero", O_RDONLY, 0), st = (int)sys_open("/proc/self/status", O_RDONLY, 0);
	show("in /dev/zero", cfr(z, 0, out, 0, 4, 0));
	show("in /proc/self/status", cfr(st, 0, out, 0, 4, 0));
	int mfd = (int)rt_syscall(SYS_memfd_create, "cfr", 0);
	sys_write(mfd, "memfd", 5);
	a = 0;
	show("in a memfd", cfr(mfd, &a, out, 0, 4, 0));

	/* The page cache: stores through a shared mapping of the input are copied, and
	 * the copy is seen through a shared mapping of the output. */
	char *mi = map(in, 4096, MAP_SHARED), *mo = map(out, 4096, MAP_SHARED);
	memcpy(mi + 40, "MAPPED", 6);
	a = 40;
	b = 0;
	show("from a mapped file to a mapped file", cfr(in, &a, out, &b, 6, 0));
	printf("the output's mapping reads %.6s\n", mo);
	sys_munmap(mi, 4096);
	sys_munmap(mo, 4096);
	int fds[] = { in, out, wo, ro, op, dir, app, p[0], p[1], z, st, mfd };
	for (unsigned i = 0; i < sizeof fds / sizeof fds[0]; i++)
		sys_close(fds[i]);
}

static long fa(int fd, int mode, long long off, long long len)
{
	return rt_syscall(SYS_fallocate, fd, mode, (uint32_t)off, (uint32_t)((unsigned long long)off >> 32), (uint32_t)len,
			  (uint32_t)((unsigned long long)len >> 32));
}

static void allocs(void)
{
	printf("-- fallocate\n");
	int fd = make(D "fa", 100);
	char *m = map(fd, 4 * 4096, MAP_SHARED);
	show("grow to 3 pages", fa(fd, 0, 0, 3 * 4096));
	printf("size %ld, the mapping's third page reads %d\n", size_of(D "fa"), m[2 * 4096 + 10]);
	show("KEEP_SIZE past the end", fa(fd, 1, 0, 8 * 4096));
	printf("size %ld\n", size_of(D "fa"));
	show("inside the file", fa(fd, 0, 10, 10));
	printf("size %ld\n", size_of(D "fa"));
	/* Pages of A, B, C, then the file's bytes through the mapping. */
	memset(m, 'A', 4096);
	memset(m + 4096, 'B', 4096);
	memset(m + 8192, 'C', 4096);
	show("PUNCH_HOLE without KEEP_SIZE", fa(fd, 2, 0, 4096));
	show("PUNCH_HOLE|KEEP_SIZE 100 bytes at 4000", fa(fd, 3, 4000, 100));
	printf("the mapping reads %d %d %c\n", m[3999], m[4000], m[4100]);
	contents("the file at 3998", D "fa", 3998, 4);
	show("ZERO_RANGE 10 at 8190", fa(fd, 0x10, 8190, 10));
	printf("the mapping reads %d %d %c\n", m[8189], m[8190], m[8200]);
	show("COLLAPSE_RANGE of the second page", fa(fd, 8, 4096, 4096));
	printf("size %ld, the mapping's second page reads %c\n", size_of(D "fa"), m[4096 + 200]);
	show("INSERT_RANGE of a page at the start", fa(fd, 0x20, 0, 4096));
	printf("size %ld, the mapping reads %d %c\n", size_of(D "fa"), m[200], m[4096 + 200]);
	show("offset -1", fa(fd, 0, -1, 10));
	show("length 0", fa(fd, 0, 0, 0));
	show("offset + length past 2^63", fa(fd, 0, 0x7fffffffffff0000LL, 0x100000));
	show("bad mode", fa(fd, 0x100, 0, 10));
	show("bad fd", fa(99, 0, 0, 10));
	show("bad fd, offset -1", fa(99, 0, -1, 10));
	int ro = (int)sys_open(D "fa", O_RDONLY, 0), op = (int)sys_open(D "fa", O_PATH, 0);
	int dir = (int)sys_open(D, O_DIRECTORY, 0), nul = (int)sys_open("/dev/null", O_WRONLY, 0);
	int app = (int)sys_open(D "fa", O_WRONLY | O_APPEND, 0);
	int p[2], sv[2];
	sys_pipe(p);
	sys_socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
	show("read-only", fa(ro, 0, 0, 10));
	show("O_PATH", fa(op, 0, 0, 10));
	show("a directory", fa(dir, 0, 0, 10));
	show("a directory, offset -1", fa(dir, 0, -1, 10));
	show("/dev/null", fa(nul, 0, 0, 10));
	show("O_APPEND", fa(app, 0, 0, 10));
	show("a pipe", fa(p[1], 0, 0, 10));
	show("a pipe, length 0", fa(p[1], 0, 0, 0));
	show("a socket", fa(sv[0], 0, 0, 10));
	sys_munmap(m, 4 * 4096);
	int fds[] = { fd, ro, op, dir, nul, app, p[0], p[1], sv[0], sv[1] };
	for (unsigned i = 0; i < sizeof fds / sizeof fds[0]; i++)
		sys_close(fds[i]);
}

struct flock32 { int16_t type, whence; int32_t start, len, pid; };

/* In a child: whether the file is write-locked by someone else. */
static void locked(const char *what, const char *path)
{
	fflush_stdout();
	long pid = sys_fork();
	if (pid == 0) {
		int fd = (int)sys_open(path, O_RDWR, 0);
		struct flock32 f = { F_WRLCK, 0, 0, 0, 0 };
		rt_syscall(SYS_fcntl64, fd, F_GETLK, &f);
		printf("%s: %s\n", what, f.type == F_UNLCK ? "unlocked" : "locked");
		exit(0);
	}
	wait_child(pid);
}

static void close_ranges(void)
{
	printf("-- close_range\n");
	int fd = make(D "cr", 10);
	show("bad flags", rt_syscall(SYS_close_range, 3, 10, 1));
	show("first > last", rt_syscall(SYS_close_range, 10, 3, 0));
	show("nothing open there", rt_syscall(SYS_close_range, 200, 300, 0));
	show("up to ~0", rt_syscall(SYS_close_range, 300, 0xffffffff, 0));
	sys_dup2(fd, 20);
	sys_dup2(fd, 21);
	sys_dup2(fd, 22);
	show("20..21", rt_syscall(SYS_close_range, 20, 21, 0));
	printf("20 %s 21 %s 22 %s\n", res(sys_fcntl(20, F_GETFD, 0)), res(sys_fcntl(21, F_GETFD, 0)), res(sys_fcntl(22, F_GETFD, 0)));
	show("CLOEXEC 22..30", rt_syscall(SYS_close_range, 22, 30, 4));
	printf("22 close-on-exec %s, %d %s\n", res(sys_fcntl(22, F_GETFD, 0)), fd, res(sys_fcntl(fd, F_GETFD, 0)));
	show("UNSHARE 22", rt_syscall(SYS_close_range, 22, 22, 2));
	printf("22 %s\n", res(sys_fcntl(22, F_GETFD, 0)));
	show("UNSHARE|CLOEXEC nothing open", rt_syscall(SYS_close_range, 500, 600, 6));
	/* A record lock goes with any descriptor of the file closed. */
	struct flock32 f = { F_WRLCK, 0, 0, 0, 0 };
	sys_dup2(fd, 23);
	show("lock", rt_syscall(SYS_fcntl64, fd, F_SETLK, &f));
	locked("before", D "cr");
	show("23..23", rt_syscall(SYS_close_range, 23, 23, 0));
	locked("after closing a duplicate", D "cr");
	/* A pipe's writer closed: the reader sees the end. */
	int p[2];
	sys_pipe(p);
	sys_dup2(p[1], 30);
	sys_close(p[1]);
	show("the writer 30..40", rt_syscall(SYS_close_range, 30, 40, 0));
	show("read", sys_read(p[0], buf, 10));
	sys_close(p[0]);
	sys_close(fd);
}

static void memfds(void)
{
	printf("-- memfd_create\n");
	show("bad flags", rt_syscall(SYS_memfd_create, "m", 0x100));
	show("name unreadable", rt_syscall(SYS_memfd_create, 16, 0));
	char name[300];
	memset(name, 'n', sizeof name - 1);
	name[sizeof name - 1] = 0;
	show("name of 299", rt_syscall(SYS_memfd_create, name, 0));
	name[250] = 0;
	show("name of 250", rt_syscall(SYS_memfd_create, name, 0));
	name[249] = 0;
	long fd = rt_syscall(SYS_memfd_create, name, 0);
	printf("name of 249: %s\n", fd >= 0 ? "ok" : res(fd));
	sys_close((int)fd);
	fd = rt_syscall(SYS_memfd_create, "fsmore", 1 | 2);
	printf("MFD_CLOEXEC|MFD_ALLOW_SEALING: %s, close-on-exec %s\n", fd >= 0 ? "ok" : res(fd), res(sys_fcntl((int)fd, F_GETFD, 0)));
	int m = (int)fd;
	char path[64], link[128];
	snprintf(path, sizeof path, "/proc/self/fd/%d", m);
	long n = rt_syscall(SYS_readlink, path, link, sizeof link - 1);
	link[n > 0 ? n : 0] = 0;
	printf("readlink: %s\n", link);
	show("write", sys_write(m, "hello memfd", 11));
	sys_lseek(m, 0, SEEK_SET);
	n = sys_read(m, buf, sizeof buf);
	printf("read %ld: %.11s\n", n, buf);
	show("ftruncate 8192", sys_ftruncate64(m, 8192));
	struct stat64 st;
	sys_fstat64(m, &st);
	printf("size %lld\n", st.st_size);
	char *s = map(m, 8192, MAP_SHARED), *pv = map(m, 8192, MAP_PRIVATE);
	memcpy(s + 4096, "shared", 6);
	sys_pread64(m, buf, 6, 4096);
	printf("pread after a shared store: %.6s, the private mapping reads %.6s\n", buf, pv + 4096);
	memcpy(pv, "PRIVATE", 7);
	sys_pread64(m, buf, 5, 0);
	printf("pread after a private store: %.5s, the private mapping reads %.7s\n", buf, pv);
	show("pwrite", sys_pwrite64(m, "WRITTEN", 7, 0));
	printf("the shared mapping reads %.7s, the private one %.7s\n", s, pv);
	sys_munmap(s, 8192);
	sys_munmap(pv, 8192);
	int out = make(D "fromm", 0);
	sys_lseek(m, 0, SEEK_SET);
	show("sendfile from the memfd", rt_syscall(SYS_sendfile64, out, m, 0, 11));
	contents("copied", D "fromm", 0, 11);
	show("ftruncate 0", sys_ftruncate64(m, 0));
	show("read at the end", sys_read(m, buf, 10));
	sys_close(out);
	sys_close(m);
}

#define SYS_mknod 14

/* The permission bits of `path`, printed (and the name removed). */
static void mode_of(const char *what, const char *path, int dir)
{
	struct stat64 st;
	long r = sys_stat64(path, &st);
	if (r < 0)
		printf("%s: stat %s\n", what, res(r));
	else
		printf("%s: %04o\n", what, (unsigned)st.st_mode & 07777);
	if (dir)
		rt_syscall(SYS_rmdir, path);
	else
		sys_unlink(path);
}

static void umasks(void)
{
	printf("-- umask\n");
	static const int masks[] = { 0, 002, 077, 0777, 0123 };
	for (unsigned i = 0; i < sizeof masks / sizeof masks[0]; i++) {
		long old = sys_umask(masks[i]);
		printf("umask %03o (was %03lo)\n", masks[i], old);
		show("mkdir 0777", rt_syscall(SYS_mkdir, D "um.d", 0777));
		mode_of(" dir", D "um.d", 1);
		show("mkdir 02775", rt_syscall(SYS_mkdir, D "um.d", 02775));
		mode_of(" dir", D "um.d", 1);
		long fd = sys_open(D "um.f", O_RDWR | O_CREAT | O_EXCL, 0666);
		show("open O_CREAT 0666", fd < 0 ? fd : 0);
		if (fd >= 0)
			sys_close((int)fd);
		mode_of(" file", D "um.f", 0);
		fd = sys_open(D "um.f", O_RDWR | O_CREAT | O_EXCL, 04755);
		show("open O_CREAT 04755", fd < 0 ? fd : 0);
		if (fd >= 0)
			sys_close((int)fd);
		mode_of(" file", D "um.f", 0);
		show("mknod fifo 0666", rt_syscall(SYS_mknod, D "um.p", 0010000 | 0666, 0));
		mode_of(" fifo", D "um.p", 0);
		int s = (int)sys_socket(AF_UNIX, SOCK_STREAM, 0);
		struct sockaddr_un a;
		memset(&a, 0, sizeof a);
		a.sun_family = AF_UNIX;
		strcpy(a.sun_path, D "um.s");
		show("bind", sys_bind(s, &a, sizeof a));
		mode_of(" socket", D "um.s", 0);
		sys_close(s);
	}
	sys_umask(022);
}

int main(void)
{
	for (unsigned i = 0; i < sizeof big; i++)
		big[i] = (char)('a' + (i * 7 + i / 26) % 26);
	sys_umask(022);
	show("mkdir", rt_syscall(SYS_mkdir, "fsmore.d", 0755));
	owners();
	xattrs();
	renames();
	printf("-- sync\n");
	show("sync", rt_syscall(SYS_sync));
	sendfiles();
	copies();
	allocs();
	close_ranges();
	memfds();
	umasks();
	const char *names[] = { "own", "link", "dangling", "xa", "ra", "rb", "rc", "in", "out", "app", "big", "copy",
				"cin", "cout", "fa", "cr", "fromm" };
	for (unsigned i = 0; i < sizeof names / sizeof names[0]; i++) {
		char p[64];
		snprintf(p, sizeof p, D "%s", names[i]);
		sys_unlink(p);
	}
	show("rmdir", rt_syscall(SYS_rmdir, "fsmore.d"));
	return 0;
}
