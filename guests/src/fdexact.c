/*
 * fdexact.c - details of descriptors a 32-bit process sees exactly as Linux shows them:
 *   F_GETFL's O_LARGEFILE, there only where the program asked for it (open, openat;
 *     openat2 adds it, O_PATH drops it, memfd_create sets it) and never on pipes,
 *     sockets, eventfds and the like; F_SETFL cannot change it; dup, fork, SCM_RIGHTS
 *     and /proc/self/fd reopenings keep it; O_DIRECTORY and O_NOFOLLOW on /proc's
 *     directories;
 *   the access mode checked before the buffer: read, write, readv, writev, pread,
 *     pwrite, preadv and pwritev with a bad pointer or iovec array on a descriptor not
 *     open for that (EBADF, not EFAULT; EINVAL or ESPIPE where those come first), and
 *     with a good one;
 *   a pidfd: fstat, lseek, read, pread, write and the vector calls, and poll's events
 *     while the process lives, once it has exited and once it is reaped (POLLHUP);
 *   a link of /proc or /dev opened itself (O_PATH|O_NOFOLLOW, also with openat2's
 *     restrictions): fstat, F_GETFL, readlinkat with an empty path, its own
 *     /proc/self/fd link, what it can and cannot do.
 * The standard descriptors' O_LARGEFILE is whatever the caller gave (the same natively
 * and under morph). Works in a directory it makes in the current one and removes.
 */
#include "rt.h"

#define SYS_readlink_ 85
#define SYS_preadv_ 333
#define SYS_pwritev_ 334
#define SYS_openat_ 295
#define SYS_openat2_ 437
#define SYS_memfd_create_ 356
#define SYS_eventfd2_ 328
#define SYS_epoll_create1_ 329
#define SYS_timerfd_create_ 322
#define SYS_signalfd4_ 327
#define SYS_inotify_init1_ 332
#define SYS_pipe2_ 331
#define SYS_pidfd_open_ 434
#define SYS_mkdir_ 39
#define SYS_rmdir_ 40
#define SYS_fchdir_ 133
#define SYS_readlinkat_ 305
#define SYS_fstatat64_ 300
#define SYS_getdents64_ 220
#define SYS_fchmod_ 94

#define AT_FDCWD (-100)
#define AT_EMPTY_PATH 0x1000
#define O_DIRECTORY_ 0200000
#define O_NOFOLLOW_ 0400000
#define O_CLOEXEC_ 02000000
#define O_PATH_ 010000000
#define O_NOATIME_ 01000000

#define D "fdexact.d"
#define BAD ((void *)16)

static const char *res(long r)
{
	static char buf[8][24];
	static int next;
	char *b = buf[next++ % 8];
	if (r >= 0)
		return "ok";
	switch (-r) {
	case 2: return "ENOENT";
	case 9: return "EBADF";
	case 11: return "EAGAIN";
	case 13: return "EACCES";
	case 14: return "EFAULT";
	case 18: return "EXDEV";
	case 20: return "ENOTDIR";
	case 21: return "EISDIR";
	case 22: return "EINVAL";
	case 29: return "ESPIPE";
	case 40: return "ELOOP";
	default: snprintf(b, 24, "%ld", r); return b;
	}
}

/* F_GETFL of fd, printed; the descriptor is closed unless keep. */
static void fl(const char *what, long fd, int keep)
{
	if (fd < 0) {
		printf("%s: %s\n", what, res(fd));
		return;
	}
	long f = sys_fcntl((int)fd, F_GETFL, 0);
	printf("%s: F_GETFL %lo\n", what, f);
	if (!keep)
		sys_close((int)fd);
}

static long oat(int dir, const char *path, int flags, int mode)
{
	return rt_syscall(SYS_openat_, dir, path, flags, mode);
}

static long o2(const char *path, unsigned long long flags)
{
	unsigned long long how[3] = { flags, 0, 0 };
	return rt_syscall(SYS_openat2_, AT_FDCWD, path, how, sizeof how);
}

static void largefile(void)
{
	printf("-- O_LARGEFILE --\n");
	/* what the test is given: O_LARGEFILE only if whoever opened them asked */
	for (int i = 0; i < 3; i++) {
		long f = sys_fcntl(i, F_GETFL, 0);
		printf("descriptor %d: O_LARGEFILE %d\n", i, f >= 0 && (f & O_LARGEFILE) != 0);
	}
	fl("open O_RDONLY", sys_open(D "/f", O_RDONLY, 0), 0);
	fl("open O_WRONLY|O_APPEND", sys_open(D "/f", O_WRONLY | O_APPEND, 0), 0);
	fl("open O_RDWR|O_LARGEFILE", sys_open(D "/f", O_RDWR | O_LARGEFILE, 0), 0);
	fl("open O_RDWR|O_CREAT|O_TRUNC|O_CLOEXEC", sys_open(D "/g", O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC_, 0600), 0);
	fl("openat O_RDONLY|O_NOFOLLOW", oat(AT_FDCWD, D "/f", O_RDONLY | O_NOFOLLOW_, 0), 0);
	fl("openat O_RDONLY|O_LARGEFILE|O_NOATIME", oat(AT_FDCWD, D "/f", O_RDONLY | O_LARGEFILE | O_NOATIME_, 0), 0);
	fl("open a directory", sys_open(D, O_RDONLY | O_DIRECTORY_, 0), 0);
	fl("open a directory O_LARGEFILE", sys_open(D, O_RDONLY | O_DIRECTORY_ | O_LARGEFILE, 0), 0);
	fl("open O_PATH", sys_open(D "/f", O_PATH_, 0), 0);
	fl("open O_PATH|O_LARGEFILE", sys_open(D "/f", O_PATH_ | O_LARGEFILE, 0), 0);
	fl("openat2 O_RDONLY", o2(D "/f", O_RDONLY), 0);
	fl("openat2 O_PATH", o2(D "/f", O_PATH_), 0);
	fl("open /dev/null", sys_open("/dev/null", O_RDWR, 0), 0);
	fl("open /dev/null O_LARGEFILE", sys_open("/dev/null", O_RDWR | O_LARGEFILE, 0), 0);
	fl("open /dev/zero", sys_open("/dev/zero", O_RDONLY, 0), 0);
	fl("open /dev/urandom", sys_open("/dev/urandom", O_RDONLY, 0), 0);
	fl("open /proc/self/status", sys_open("/proc/self/status", O_RDONLY, 0), 0);
	fl("open /proc/self/status O_LARGEFILE", sys_open("/proc/self/status", O_RDONLY | O_LARGEFILE, 0), 0);
	fl("open /proc/self", sys_open("/proc/self", O_RDONLY | O_DIRECTORY_, 0), 0);
	fl("open /proc", sys_open("/proc", O_RDONLY | O_DIRECTORY_ | O_LARGEFILE, 0), 0);

	/* F_SETFL cannot set or clear it */
	int a = (int)sys_open(D "/f", O_RDONLY, 0);
	int b = (int)sys_open(D "/f", O_RDONLY | O_LARGEFILE, 0);
	printf("F_SETFL O_LARGEFILE|O_APPEND: %s\n", res(sys_fcntl(a, F_SETFL, O_LARGEFILE | O_APPEND)));
	fl("  then", a, 1);
	printf("F_SETFL 0 on a O_LARGEFILE one: %s\n", res(sys_fcntl(b, F_SETFL, 0)));
	fl("  then", b, 1);
	printf("F_SETFL O_NONBLOCK|O_NOATIME: %s\n", res(sys_fcntl(a, F_SETFL, O_NONBLOCK | O_NOATIME_)));
	fl("  then", a, 1);
	fl("dup of one without", sys_dup(a), 0);
	fl("dup of one with", sys_dup(b), 0);
	char path[64];
	snprintf(path, sizeof path, "/proc/self/fd/%d", b);
	fl("reopened through /proc/self/fd", sys_open(path, O_RDONLY, 0), 0);
	fl("  with O_LARGEFILE", sys_open(path, O_RDONLY | O_LARGEFILE, 0), 0);
	sys_close(a);
	sys_close(b);

	/* objects that are never opened by name */
	int p[2];
	sys_pipe(p);
	fl("pipe read end", p[0], 0);
	fl("pipe write end", p[1], 0);
	rt_syscall(SYS_pipe2_, p, O_NONBLOCK | O_CLOEXEC_);
	fl("pipe2 O_NONBLOCK read end", p[0], 1);
	snprintf(path, sizeof path, "/proc/self/fd/%d", p[0]);
	fl("pipe reopened through /proc/self/fd", sys_open(path, O_RDONLY | O_NONBLOCK, 0), 0);
	fl("  with O_LARGEFILE", sys_open(path, O_RDONLY | O_NONBLOCK | O_LARGEFILE, 0), 0);
	sys_close(p[0]);
	sys_close(p[1]);
	int sv[2];
	sys_socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
	fl("socketpair", sv[0], 0);
	sys_close(sv[1]);
	fl("socket", sys_socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0), 0);
	fl("eventfd2", rt_syscall(SYS_eventfd2_, 0, O_NONBLOCK), 0);
	fl("epoll_create1", rt_syscall(SYS_epoll_create1_, 0), 0);
	fl("timerfd_create", rt_syscall(SYS_timerfd_create_, 1, 0), 0);
	uint32_t mask[2] = { 1u << 9, 0 };
	fl("signalfd4", rt_syscall(SYS_signalfd4_, -1, mask, 8, 0), 0);
	fl("inotify_init1", rt_syscall(SYS_inotify_init1_, 0), 0);
	fl("pidfd_open", rt_syscall(SYS_pidfd_open_, sys_getpid(), 0), 0);
	fl("memfd_create", rt_syscall(SYS_memfd_create_, "x", 0), 0);
	unsigned long long how[3] = { O_RDONLY, 0, 0x08 /* RESOLVE_BENEATH */ };
	fl("openat2 O_RDONLY, RESOLVE_BENEATH", rt_syscall(SYS_openat2_, AT_FDCWD, D "/f", how, sizeof how), 0);

	/* kept across fork and through SCM_RIGHTS (the sender's descriptors closed first) */
	a = (int)sys_open(D "/f", O_RDONLY, 0);
	b = (int)sys_open(D "/f", O_RDONLY | O_LARGEFILE, 0);
	fflush_stdout();
	long c = sys_fork();
	if (c == 0) {
		fl("fork child: without", a, 1);
		fl("fork child: with", b, 1);
		exit(0);
	}
	sys_waitpid((int)c, 0, 0);
	sys_socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
	union { struct cmsghdr h; char space[20]; } ctl;
	ctl.h.cmsg_len = 20;
	ctl.h.cmsg_level = SOL_SOCKET;
	ctl.h.cmsg_type = SCM_RIGHTS;
	memcpy(ctl.space + 12, &a, 4);
	memcpy(ctl.space + 16, &b, 4);
	char x = 'x';
	struct iovec iov = { &x, 1 };
	struct msghdr msg = { 0, 0, &iov, 1, &ctl, 20, 0 };
	printf("sendmsg: %s\n", res(sys_sendmsg(sv[0], &msg, 0)));
	sys_close(a);
	sys_close(b);
	memset(&ctl, 0, sizeof ctl);
	msg.msg_controllen = 20;
	printf("recvmsg: %s\n", res(sys_recvmsg(sv[1], &msg, 0)));
	memcpy(&a, ctl.space + 12, 4);
	memcpy(&b, ctl.space + 16, 4);
	fl("received: without", a, 0);
	fl("received: with", b, 0);
	sys_close(sv[0]);
	sys_close(sv[1]);
}

/* ---- the access mode before the buffer --------------------------------------------- */

static void access_first(void)
{
	printf("-- access mode before the buffer --\n");
	int r = (int)sys_open(D "/f", O_RDONLY, 0);
	int w = (int)sys_open(D "/f", O_WRONLY, 0);
	int dir = (int)sys_open(D, O_RDONLY | O_DIRECTORY_, 0);
	int path = (int)sys_open(D "/f", O_PATH_, 0);
	int p[2];
	sys_pipe(p);
	struct iovec bad = { BAD, 4 };
	char buf[8];
	struct iovec good = { buf, 4 };
	printf("write, read-only file, bad pointer: %s\n", res(sys_write(r, BAD, 4)));
	printf("read, write-only file, bad pointer: %s\n", res(sys_read(w, BAD, 4)));
	printf("writev, read-only file, bad iovec: %s, bad buffer: %s\n", res(sys_writev(r, BAD, 1)),
	       res(sys_writev(r, &bad, 1)));
	printf("readv, write-only file, bad iovec: %s, bad buffer: %s\n", res(sys_readv(w, BAD, 1)),
	       res(sys_readv(w, &bad, 1)));
	printf("pwrite, read-only file, bad pointer: %s\n", res(sys_pwrite64(r, BAD, 4, 0)));
	printf("pread, write-only file, bad pointer: %s\n", res(sys_pread64(w, BAD, 4, 0)));
	printf("pwritev, read-only file, bad iovec: %s, bad buffer: %s\n",
	       res(rt_syscall(SYS_pwritev_, r, BAD, 1, 0, 0)), res(rt_syscall(SYS_pwritev_, r, &bad, 1, 0, 0)));
	printf("preadv, write-only file, bad iovec: %s, bad buffer: %s\n",
	       res(rt_syscall(SYS_preadv_, w, BAD, 1, 0, 0)), res(rt_syscall(SYS_preadv_, w, &bad, 1, 0, 0)));
	printf("pwrite, read-only file, negative offset: %s; pread, write-only: %s\n", res(sys_pwrite64(r, buf, 4, -1)),
	       res(sys_pread64(w, buf, 4, -1)));
	printf("preadv, write-only file, negative offset: %s\n", res(rt_syscall(SYS_preadv_, w, &good, 1, -1, -1)));
	printf("write, pipe's read end, bad pointer: %s; read, write end: %s\n", res(sys_write(p[0], BAD, 4)),
	       res(sys_read(p[1], BAD, 4)));
	printf("write, directory, bad pointer: %s; read: %s\n", res(sys_write(dir, BAD, 4)), res(sys_read(dir, BAD, 4)));
	printf("write, O_PATH, bad pointer: %s; read: %s\n", res(sys_write(path, BAD, 4)), res(sys_read(path, BAD, 4)));
	printf("write, read-only file, good pointer: %s; read, write-only: %s\n", res(sys_write(r, buf, 4)),
	       res(sys_read(w, buf, 4)));
	printf("write, write-only file, bad pointer: %s; read, read-only: %s\n", res(sys_write(w, BAD, 4)),
	       res(sys_read(r, BAD, 4)));
	printf("write 0 bytes, read-only file: %s; read 0 bytes, write-only: %s\n", res(sys_write(r, BAD, 0)),
	       res(sys_read(w, BAD, 0)));
	printf("readv of 2000, write-only file: %s, read-only: %s\n", res(sys_readv(w, &good, 2000)),
	       res(sys_readv(r, &good, 2000)));
	printf("writev of 2000, read-only file: %s, write-only: %s\n", res(sys_writev(r, &good, 2000)),
	       res(sys_writev(w, &good, 2000)));
	printf("readv, bad iovec: pipe's write end %s, read end %s; directory %s; O_PATH %s\n",
	       res(sys_readv(p[1], BAD, 1)), res(sys_readv(p[0], BAD, 1)), res(sys_readv(dir, BAD, 1)),
	       res(sys_readv(path, BAD, 1)));
	printf("writev, bad iovec: pipe's read end %s; directory %s; O_PATH %s\n", res(sys_writev(p[0], BAD, 1)),
	       res(sys_writev(dir, BAD, 1)), res(sys_writev(path, BAD, 1)));
	printf("preadv, bad iovec: pipe %s, directory %s, read-only file %s\n",
	       res(rt_syscall(SYS_preadv_, p[0], BAD, 1, 0, 0)), res(rt_syscall(SYS_preadv_, dir, BAD, 1, 0, 0)),
	       res(rt_syscall(SYS_preadv_, r, BAD, 1, 0, 0)));
	printf("pwritev, bad iovec: pipe's write end %s, write-only file %s\n",
	       res(rt_syscall(SYS_pwritev_, p[1], BAD, 1, 0, 0)), res(rt_syscall(SYS_pwritev_, w, BAD, 1, 0, 0)));
	uint32_t mask[2] = { 1u << 9, 0 };
	int sfd = (int)rt_syscall(SYS_signalfd4_, -1, mask, 8, 0);
	int ep = (int)rt_syscall(SYS_epoll_create1_, 0);
	int ev = (int)rt_syscall(SYS_eventfd2_, 0, 0);
	printf("signalfd, bad iovec: readv %s, writev %s, preadv %s\n", res(sys_readv(sfd, BAD, 1)),
	       res(sys_writev(sfd, BAD, 1)), res(rt_syscall(SYS_preadv_, sfd, BAD, 1, 0, 0)));
	printf("epoll, bad iovec: readv %s, writev %s; eventfd: readv %s, writev %s\n", res(sys_readv(ep, BAD, 1)),
	       res(sys_writev(ep, BAD, 1)), res(sys_readv(ev, BAD, 1)), res(sys_writev(ev, BAD, 1)));
	sys_close(sfd);
	sys_close(ep);
	sys_close(ev);
	sys_close(r);
	sys_close(w);
	sys_close(dir);
	sys_close(path);
	sys_close(p[0]);
	sys_close(p[1]);
}

/* ---- pidfds ------------------------------------------------------------------------ */

static int events(int fd)
{
	struct pollfd pf = { fd, POLLIN | POLLOUT, 0 };
	long r = sys_poll(&pf, 1, 0);
	return r < 0 ? (int)r : pf.revents;
}

static void pidfd_show(const char *when, int fd)
{
	struct stat64 st;
	char b[16];
	memset(&st, 0, sizeof st);
	long r = sys_fstat64(fd, &st);
	printf("%s: fstat %s, type %o, mode %o, size %lld\n", when, res(r), st.st_mode & 0170000, st.st_mode & 07777,
	       st.st_size);
	printf("  lseek %s, read %s, read bad pointer %s, pread %s, write %s\n", res(sys_lseek(fd, 0, SEEK_SET)),
	       res(sys_read(fd, b, 8)), res(sys_read(fd, BAD, 8)), res(sys_pread64(fd, b, 8, 0)), res(sys_write(fd, b, 8)));
	struct iovec v = { b, 4 };
	long long off;
	printf("  pwrite %s, readv %s, writev %s, preadv %s, pwritev %s\n", res(sys_pwrite64(fd, b, 4, 0)),
	       res(sys_readv(fd, &v, 1)), res(sys_writev(fd, &v, 1)), res(rt_syscall(SYS_preadv_, fd, &v, 1, 0, 0)),
	       res(rt_syscall(SYS_pwritev_, fd, &v, 1, 0, 0)));
	printf("  bad iovec: readv %s, writev %s, preadv %s; _llseek %s, lseek SEEK_END %s\n", res(sys_readv(fd, BAD, 1)),
	       res(sys_writev(fd, BAD, 1)), res(rt_syscall(SYS_preadv_, fd, BAD, 1, 0, 0)),
	       res(sys_llseek(fd, 0, 0, &off, SEEK_SET)), res(sys_lseek(fd, 0, SEEK_END)));
	printf("  poll %x\n", events(fd));
	struct pollfd pf[2] = { { fd, 0, 0 }, { fd, POLLOUT, 0 } };
	long r2 = sys_poll(pf, 2, 0);
	printf("  poll for nothing, for POLLOUT: %ld, %x %x\n", r2, pf[0].revents, pf[1].revents);
}

static void pidfds(void)
{
	printf("-- pidfds --\n");
	int p2c[2];
	sys_pipe(p2c);
	fflush_stdout();
	long c = sys_fork();
	if (c == 0) {
		char x;
		sys_read(p2c[0], &x, 1);
		_exit(5);
	}
	int fd = (int)rt_syscall(SYS_pidfd_open_, c, 0);
	pidfd_show("alive", fd);
	sys_write(p2c[1], "x", 1);
	struct pollfd pf = { fd, POLLIN, 0 };
	sys_poll(&pf, 1, -1);
	pidfd_show("exited", fd);
	int st = 0;
	sys_waitpid((int)c, &st, 0);
	printf("reaped, status %x\n", st);
	pidfd_show("reaped", fd);
	sys_close(fd);
	sys_close(p2c[0]);
	sys_close(p2c[1]);
}

/* ---- a /proc/self/fd link opened itself ----------------------------------------------- */

/* More of an O_PATH link descriptor: its own /proc/self/fd link, other links of /proc
 * and /dev, readlinkat with an empty path on what is not a link. */
static void magic_more(int f)
{
	char path[64], own[64], link[128];
	struct stat64 st;
	snprintf(path, sizeof path, "/proc/self/fd/%d", f);
	int l = (int)sys_open(path, O_PATH_ | O_NOFOLLOW_, 0);
	snprintf(own, sizeof own, "/proc/self/fd/%d", l);
	memset(&st, 0, sizeof st);
	long r = rt_syscall(196 /* lstat64 */, own, &st);
	printf("lstat of its own link: %s, mode %o\n", res(r), st.st_mode);
	long a = sys_open(own, O_PATH_, 0);
	long b = sys_open(own, O_PATH_ | O_NOFOLLOW_, 0);
	printf("its own link opened O_PATH: %s, O_PATH|O_NOFOLLOW: %s\n", a >= 0 ? "ok" : res(a), b >= 0 ? "ok" : res(b));
	if (a >= 0) {
		memset(&st, 0, sizeof st);
		sys_fstat64((int)a, &st);
		long n = rt_syscall(SYS_readlinkat_, (int)a, "", link, sizeof link - 1);
		printf("  O_PATH one: type %o, readlinkat %s, same target %s\n", st.st_mode & 0170000, res(n),
		       n > 0 && rt_syscall(SYS_readlinkat_, l, "", path, sizeof path - 1) == n &&
		       memcmp(link, path, (size_t)n) == 0 ? "yes" : "no");
		sys_close((int)a);
	}
	if (b >= 0)
		sys_close((int)b);
	struct pollfd pf = { l, POLLIN, 0 };
	long pr = sys_poll(&pf, 1, 0);
	printf("poll: %ld %x; lseek %s, fsync %s, getdents %s, fchown %s, dup %s\n", pr, pf.revents,
	       res(sys_lseek(l, 0, SEEK_SET)), res(rt_syscall(118, l)), res(rt_syscall(SYS_getdents64_, l, link, sizeof link)),
	       res(rt_syscall(207, l, -1, -1)), res(sys_dup(l)));
	printf("readlinkat(fd, \"x\"): %s, openat(fd, \"x\"): %s\n", res(rt_syscall(SYS_readlinkat_, l, "x", link, 8)),
	       res(oat(l, "x", O_RDONLY, 0)));
	printf("readlinkat(fd, \"\", size 0): %s\n", res(rt_syscall(SYS_readlinkat_, l, "", link, 0)));
	sys_close(l);

	int ps = (int)sys_open("/proc/self", O_PATH_ | O_NOFOLLOW_, 0);
	memset(&st, 0, sizeof st);
	r = sys_fstat64(ps, &st);
	long n = rt_syscall(SYS_readlinkat_, ps, "", link, sizeof link - 1);
	link[n > 0 ? n : 0] = 0;
	printf("/proc/self: fstat %s, mode %o, readlinkat %s, the pid %s, F_GETFL %lo\n", res(r), st.st_mode, res(n),
	       atoi(link) == sys_getpid() ? "yes" : "no", sys_fcntl(ps, F_GETFL, 0));
	sys_close(ps);
	int ds = (int)sys_open("/dev/stdin", O_PATH_ | O_NOFOLLOW_, 0);
	memset(&st, 0, sizeof st);
	r = sys_fstat64(ds, &st);
	n = rt_syscall(SYS_readlinkat_, ds, "", link, sizeof link - 1);
	link[n > 0 ? n : 0] = 0;
	printf("/dev/stdin: fstat %s, type %o, readlinkat %s \"%s\"\n", res(r), st.st_mode & 0170000, res(n), link);
	sys_close(ds);
	int fdd = (int)sys_open("/proc/self/fd", O_RDONLY | O_DIRECTORY_, 0);
	snprintf(path, sizeof path, "%d", f);
	long at = oat(fdd, path, O_PATH_ | O_NOFOLLOW_, 0);
	memset(&st, 0, sizeof st);
	sys_fstat64((int)at, &st);
	printf("openat(/proc/self/fd, N, O_PATH|O_NOFOLLOW): %s, type %o\n", at >= 0 ? "ok" : res(at),
	       st.st_mode & 0170000);
	sys_close((int)at);
	sys_close(fdd);

	/* openat2: the link opened itself, with each resolution restriction */
	snprintf(path, sizeof path, "/proc/self/fd/%d", f);
	static const struct { const char *what; unsigned long long resolve; } rs[] = {
		{ "none", 0 }, { "RESOLVE_NO_MAGICLINKS", 2 }, { "RESOLVE_NO_SYMLINKS", 4 }, { "RESOLVE_NO_XDEV", 1 },
		{ "RESOLVE_CACHED", 0x20 },
	};
	for (unsigned i = 0; i < sizeof rs / sizeof rs[0]; i++) {
		unsigned long long how[3] = { O_PATH_ | O_NOFOLLOW_, 0, rs[i].resolve };
		long o = rt_syscall(SYS_openat2_, AT_FDCWD, path, how, sizeof how);
		memset(&st, 0, sizeof st);
		if (o >= 0)
			sys_fstat64((int)o, &st);
		printf("openat2 O_PATH|O_NOFOLLOW, %s: %s, type %o\n", rs[i].what, o >= 0 ? "ok" : res(o),
		       st.st_mode & 0170000);
		if (o >= 0)
			sys_close((int)o);
	}
	fdd = (int)sys_open("/proc/self/fd", O_RDONLY | O_DIRECTORY_, 0);
	snprintf(path, sizeof path, "%d", f);
	for (unsigned long long rb = 0x08; rb <= 0x10; rb += 0x08) {
		unsigned long long how[3] = { O_PATH_ | O_NOFOLLOW_, 0, rb };
		long o = rt_syscall(SYS_openat2_, fdd, path, how, sizeof how);
		printf("openat2 from /proc/self/fd, %s: %s\n", rb == 8 ? "RESOLVE_BENEATH" : "RESOLVE_IN_ROOT",
		       o >= 0 ? "ok" : res(o));
		if (o >= 0)
			sys_close((int)o);
	}
	sys_close(fdd);

	/* readlinkat with an empty path elsewhere */
	rt_syscall(83 /* symlink */, "f", D "/ln");
	int sl = (int)sys_open(D "/ln", O_PATH_ | O_NOFOLLOW_, 0);
	n = rt_syscall(SYS_readlinkat_, sl, "", link, sizeof link - 1);
	link[n > 0 ? n : 0] = 0;
	printf("readlinkat(\"\") of a link of the file system: %s \"%s\"\n", res(n), link);
	sys_close(sl);
	sys_unlink(D "/ln");
	int dd = (int)sys_open(D, O_RDONLY | O_DIRECTORY_, 0);
	printf("readlinkat(\"\") of a file: %s, a directory: %s, the working directory: %s, a bad descriptor: %s\n",
	       res(rt_syscall(SYS_readlinkat_, f, "", link, 8)), res(rt_syscall(SYS_readlinkat_, dd, "", link, 8)),
	       res(rt_syscall(SYS_readlinkat_, AT_FDCWD, "", link, 8)), res(rt_syscall(SYS_readlinkat_, 999, "", link, 8)));
	sys_close(dd);
	int pd = (int)sys_open("/proc/self/fd", O_RDONLY | O_DIRECTORY_, 0);
	int st_ = (int)sys_open("/proc/self/status", O_RDONLY, 0);
	printf("readlinkat(\"\") of /proc/self/fd: %s, /proc/self/status: %s\n",
	       res(rt_syscall(SYS_readlinkat_, pd, "", link, 8)), res(rt_syscall(SYS_readlinkat_, st_, "", link, 8)));
	sys_close(pd);
	sys_close(st_);
}

static void magic_link(void)
{
	printf("-- /proc/self/fd/N opened with O_PATH|O_NOFOLLOW --\n");
	int f = (int)sys_open(D "/f", O_RDONLY, 0);
	char path[64], link[128];
	snprintf(path, sizeof path, "/proc/self/fd/%d", f);
	long l = sys_open(path, O_PATH_ | O_NOFOLLOW_, 0);
	printf("open: %s\n", l >= 0 ? "ok" : res(l));
	if (l >= 0) {
		struct stat64 st, fst;
		memset(&st, 0, sizeof st);
		long r = sys_fstat64((int)l, &st);
		printf("fstat: %s, type %o, mode %o\n", res(r), st.st_mode & 0170000, st.st_mode & 07777);
		memset(&fst, 0, sizeof fst);
		sys_fstat64(f, &fst);
		printf("  the file's inode: %s\n", st.st_ino == fst.st_ino ? "yes" : "no");
		long fl2 = sys_fcntl((int)l, F_GETFL, 0);
		printf("F_GETFL %lo\n", fl2);
		long n = rt_syscall(SYS_readlinkat_, (int)l, "", link, sizeof link - 1);
		link[n > 0 ? n : 0] = 0;
		printf("readlinkat(fd, \"\"): %s \"%s\"\n", res(n), n > 0 && strcmp(link, D "/f") != 0 &&
		       strlen(link) > strlen(D "/f") && strcmp(link + strlen(link) - strlen(D "/f"), D "/f") == 0 ?
		       "ends in " D "/f" : link);
		char p2[64];
		snprintf(p2, sizeof p2, "/proc/self/fd/%ld", l);
		n = rt_syscall(SYS_readlink_, p2, link, sizeof link - 1);
		link[n > 0 ? n : 0] = 0;
		char want[64];
		snprintf(want, sizeof want, "/proc/%ld/fd/%d", sys_getpid(), f);
		printf("its own link: %s, %s\n", res(n), strcmp(link, want) == 0 ? "/proc/<pid>/fd/N" : link);
		char b[8];
		printf("read: %s, fchdir: %s, fchmod: %s, fstatat AT_EMPTY_PATH: %s\n", res(sys_read((int)l, b, 4)),
		       res(rt_syscall(SYS_fchdir_, l)), res(rt_syscall(SYS_fchmod_, l, 0600)),
		       res(rt_syscall(SYS_fstatat64_, l, "", &st, AT_EMPTY_PATH)));
		printf("  type %o\n", st.st_mode & 0170000);
		/* reopened through its own link: the object the magic link names */
		long again = sys_open(p2, O_RDONLY, 0);
		printf("reopened through its own link: %s\n", again >= 0 ? "ok" : res(again));
		if (again >= 0) {
			memset(&st, 0, sizeof st);
			sys_fstat64((int)again, &st);
			printf("  the file: %s\n", st.st_ino == fst.st_ino ? "yes" : "no");
			sys_close((int)again);
		}
		sys_close((int)l);
	}
	magic_more(f);
	l = sys_open(path, O_PATH_ | O_NOFOLLOW_ | O_DIRECTORY_, 0);
	printf("with O_DIRECTORY: %s\n", res(l));
	l = sys_open(path, O_RDONLY | O_NOFOLLOW_, 0);
	printf("O_RDONLY|O_NOFOLLOW: %s\n", res(l));
	l = sys_open("/proc/self/cwd", O_PATH_ | O_NOFOLLOW_, 0);
	printf("/proc/self/cwd: %s\n", l >= 0 ? "ok" : res(l));
	if (l >= 0) {
		struct stat64 st;
		sys_fstat64((int)l, &st);
		printf("  type %o\n", st.st_mode & 0170000);
		sys_close((int)l);
	}
	sys_close(f);
}

/* A bad iovec array on a datagram socket: EFAULT, and nothing sent. */
static void datagram_bad_iovec(void)
{
	int s[2];
	rt_syscall(360 /* socketpair */, 1 /* AF_UNIX */, 2 /* SOCK_DGRAM */, 0, s);
	printf("writev bad iovec on a datagram socket: %s\n", res(rt_syscall(146 /* writev */, s[0], 16, 1)));
	char b[8];
	long r = rt_syscall(371 /* recvfrom */, s[1], b, sizeof b, 0x40 /* MSG_DONTWAIT */, 0, 0);
	printf("then the peer receives: %s\n", res(r));
	sys_close(s[0]);
	sys_close(s[1]);
}

int main(void)
{
	rt_syscall(SYS_mkdir_, D, 0700);
	int fd = (int)sys_open(D "/f", O_RDWR | O_CREAT | O_TRUNC, 0600);
	sys_write(fd, "contents", 8);
	sys_close(fd);
	largefile();
	access_first();
	pidfds();
	magic_link();
	datagram_bad_iovec();
	sys_unlink(D "/f");
	sys_unlink(D "/g");
	rt_syscall(SYS_rmdir_, D);
	return 0;
}
