/*
 * splice.c - moving bytes through pipes in the kernel, and the calls beside them:
 *   splice: pipe to pipe, a file to a pipe and back (at the position or at a 64-bit
 *     offset, which moves while the position stays), through a shared mapping, devices,
 *     /proc files, sockets, and the errors in Linux's order (a zero length first, flags,
 *     descriptors, an offset for a pipe, the offset's address, what cannot be spliced);
 *   tee: duplicating a pipe's bytes, its errors;
 *   vmsplice: memory into a pipe and a pipe into memory, a pipe's slots taken one per
 *     page fragment (so a pipe is full after 16 small pieces), a buffer with a hole in
 *     it, the errors;
 *   not waiting (SPLICE_F_NONBLOCK, or a pipe end's O_NONBLOCK where Linux takes it),
 *     waiting for another process (a blocking splice, tee or vmsplice woken by a
 *     child), no reader (EPIPE and SIGPIPE);
 *   sync_file_range: its checks (flags, the range, what is not a file) and a range
 *     written through a mapping;
 *   epoll_pwait2: a 64-bit timespec timeout (none, zero, a short one, the high half of
 *     the nanoseconds ignored, the invalid ones), the signal mask's size, a wait woken
 *     by a child.
 */
#include "rt.h"

#define SYS_rt_sigaction_ 174
#define SYS_rt_sigprocmask_ 175
#define SYS_rt_sigpending_ 176
#define SYS_epoll_ctl_ 255
#define SYS_splice 313
#define SYS_sync_file_range 314
#define SYS_tee 315
#define SYS_vmsplice 316
#define SYS_eventfd_ 323
#define SYS_epoll_create1_ 329
#define SYS_pipe2_ 331
#define SYS_epoll_pwait2 441

#define SPLICE_F_MOVE 1
#define SPLICE_F_NONBLOCK 2
#define SPLICE_F_MORE 4
#define SPLICE_F_GIFT 8
#define O_DIRECTORY 0200000
#define O_PATH 010000000
#define FIONREAD 0x541b
#define SIGPIPE_ 13
#define SIG_BLOCK_ 0
#define SIG_UNBLOCK_ 1
#define EPOLLIN_ 1

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
	case 9: return "EBADF";
	case 11: return "EAGAIN";
	case 14: return "EFAULT";
	case 22: return "EINVAL";
	case 29: return "ESPIPE";
	case 32: return "EPIPE";
	default: snprintf(b, 24, "%ld", r); return b;
	}
}

static void show(const char *what, long r) { printf("%s: %s\n", what, res(r)); }

static char buf[70000];
static char fill[70000];

static long splice_(int in, long long *off_in, int out, long long *off_out, size_t len, unsigned flags)
{
	return rt_syscall(SYS_splice, in, off_in, out, off_out, len, flags);
}

static long tee_(int in, int out, size_t len, unsigned flags) { return rt_syscall(SYS_tee, in, out, len, flags); }

static long vmsplice_(int fd, const struct iovec *iov, unsigned long n, unsigned flags)
{
	return rt_syscall(SYS_vmsplice, fd, iov, n, flags);
}

static long sfr(int fd, long long off, long long n, unsigned flags)
{
	return rt_syscall(SYS_sync_file_range, fd, (unsigned)off, (unsigned)(off >> 32), (unsigned)n,
			  (unsigned)(n >> 32), flags);
}

/* What a pipe (or socket) holds now, printed (without waiting). */
static void drain(const char *what, int fd)
{
	int nb = (int)sys_fcntl(fd, F_GETFL, 0);
	sys_fcntl(fd, F_SETFL, nb | O_NONBLOCK);
	long n = sys_read(fd, buf, sizeof buf);
	sys_fcntl(fd, F_SETFL, nb);
	printf("%s: %s", what, res(n));
	if (n > 0) {
		printf(" \"");
		for (long i = 0; i < n && i < 40; i++)
			putchar(buf[i] >= ' ' && buf[i] < 127 ? buf[i] : '.');
		printf("\"");
	}
	printf("\n");
}

/* The first `n` bytes of a file, printed. */
static void contents(const char *what, int fd, int n)
{
	long r = sys_pread64(fd, buf, n, 0);
	printf("%s: %ld \"", what, r);
	for (long i = 0; i < r; i++)
		putchar(buf[i] >= ' ' && buf[i] < 127 ? buf[i] : '.');
	printf("\"\n");
}

static void sleep_ms(long ms)
{
	struct timespec ts = { 0, ms * 1000000 };
	sys_nanosleep(&ts, 0);
}

static void wait_child(long pid)
{
	int st = 0;
	sys_waitpid((int)pid, &st, 0);
}

static int make(const char *path, const char *text)
{
	int fd = (int)sys_open(path, O_RDWR | O_CREAT | O_TRUNC | O_LARGEFILE, 0644);
	sys_write(fd, text, strlen(text));
	return fd;
}

static void pipe_nb(int p[2]) { rt_syscall(SYS_pipe2_, p, O_NONBLOCK); }

/* Fills a pipe whose write end is non-blocking. */
static void fill_pipe(int w)
{
	while (sys_write(w, fill, 4096) > 0)
		;
}

static void basics(void)
{
	int p[2], q[2];
	long long off;
	printf("-- splice and tee\n");
	sys_pipe(p);
	sys_pipe(q);
	sys_write(p[1], "hello world", 11);
	show("pipe to pipe, 5", splice_(p[0], 0, q[1], 0, 5, 0));
	drain("the output pipe", q[0]);
	show("pipe to pipe, 100 (6 there)", splice_(p[0], 0, q[1], 0, 100, SPLICE_F_MOVE | SPLICE_F_MORE));
	drain("the output pipe", q[0]);
	sys_write(p[1], "abcdef", 6);
	show("tee 4", tee_(p[0], q[1], 4, 0));
	drain("the tee's output", q[0]);
	drain("the tee's input", p[0]);

	int f = make("splice.f", "0123456789ABCDEFGHIJ");
	sys_lseek(f, 3, SEEK_SET);
	show("file at its position to a pipe", splice_(f, 0, q[1], 0, 5, 0));
	printf("position %ld\n", sys_lseek(f, 0, SEEK_CUR));
	drain("the pipe", q[0]);
	off = 10;
	show("file at offset 10 to a pipe", splice_(f, &off, q[1], 0, 4, SPLICE_F_GIFT));
	printf("offset %lld, position %ld\n", off, sys_lseek(f, 0, SEEK_CUR));
	drain("the pipe", q[0]);
	off = 18;
	show("file at offset 18, 10 asked", splice_(f, &off, q[1], 0, 10, 0));
	printf("offset %lld\n", off);
	drain("the pipe", q[0]);
	off = 20;
	show("file at its end", splice_(f, &off, q[1], 0, 10, 0));
	sys_write(p[1], "XYZ", 3);
	off = 2;
	show("pipe to file at offset 2", splice_(p[0], 0, f, &off, 3, 0));
	printf("offset %lld, position %ld\n", off, sys_lseek(f, 0, SEEK_CUR));
	sys_write(p[1], "wv", 2);
	show("pipe to file at its position", splice_(p[0], 0, f, 0, 2, 0));
	printf("position %ld\n", sys_lseek(f, 0, SEEK_CUR));
	off = 30;
	sys_write(p[1], "end", 3);
	show("pipe to file past its end", splice_(p[0], 0, f, &off, 3, 0));
	contents("the file", f, 40);

	/* A shared mapping sees what splice wrote, and splice reads what was stored. */
	char *m = (char *)sys_mmap2(0, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, f, 0);
	sys_write(p[1], "MAPPED", 6);
	off = 0;
	show("pipe into a mapped file", splice_(p[0], 0, f, &off, 6, 0));
	printf("the mapping reads %.8s\n", m);
	memcpy(m + 10, "stored", 6);
	off = 10;
	show("a mapped file's stores to a pipe", splice_(f, &off, q[1], 0, 6, 0));
	drain("the pipe", q[0]);
	sys_munmap(m, 4096);

	/* Each splice from a file fills a slot of its own: 16 make a pipe full. */
	int r[2];
	pipe_nb(r);
	int n = 0;
	for (int i = 0; i < 20; i++) {
		off = i;
		if (splice_(f, &off, r[1], 0, 1, 0) == 1)
			n++;
	}
	long queued = 0;
	sys_ioctl(r[0], FIONREAD, &queued);
	printf("1-byte splices into a pipe: %d taken, %ld queued\n", n, queued);
	show("then a write", sys_write(r[1], "x", 1));
	sys_close(r[0]);
	sys_close(r[1]);
	sys_close(f);
	sys_close(p[0]);
	sys_close(p[1]);
	sys_close(q[0]);
	sys_close(q[1]);
}

static void errors(void)
{
	int p[2], q[2];
	long long off;
	printf("-- splice errors\n");
	sys_pipe(p);
	sys_pipe(q);
	int f = make("splice.f", "0123456789");
	int g = make("splice.g", "");
	sys_write(p[1], "data", 4);
	show("length 0, bad flags and descriptors", splice_(99, 0, 98, 0, 0, 0x100));
	show("bad flags", splice_(p[0], 0, q[1], 0, 4, 0x10));
	show("bad flags, bad descriptor", splice_(99, 0, q[1], 0, 4, 0x10));
	show("bad input", splice_(99, 0, q[1], 0, 4, 0));
	show("bad output", splice_(p[0], 0, 99, 0, 4, 0));
	off = 0;
	show("offset for the input pipe", splice_(p[0], &off, g, 0, 4, 0));
	show("offset for the output pipe", splice_(f, 0, q[1], &off, 4, 0));
	show("offset for a pipe, bad address", splice_(p[0], (long long *)16, g, 0, 4, 0));
	show("bad input offset address", splice_(f, (long long *)16, q[1], 0, 4, 0));
	show("bad output offset address", splice_(p[0], 0, g, (long long *)16, 4, 0));
	show("file to file", splice_(f, 0, g, 0, 4, 0));
	show("file to itself", splice_(f, 0, f, 0, 4, 0));
	show("pipe to itself", splice_(p[0], 0, p[1], 0, 4, 0));
	show("pipe's write end to a pipe", splice_(p[1], 0, q[1], 0, 4, 0));
	show("pipe to a pipe's read end", splice_(p[0], 0, q[0], 0, 4, 0));
	off = -1;
	show("offset -1", splice_(f, &off, q[1], 0, 4, 0));
	off = 0x7ffffffffffffff0LL;
	show("offset + length past 2^63", splice_(f, &off, q[1], 0, 0x100, 0));
	int app = (int)sys_open("splice.g", O_WRONLY | O_APPEND, 0);
	show("to an O_APPEND file", splice_(p[0], 0, app, 0, 4, 0));
	int wo = (int)sys_open("splice.f", O_WRONLY, 0), ro = (int)sys_open("splice.f", O_RDONLY, 0);
	int op = (int)sys_open("splice.f", O_PATH, 0);
	show("from a write-only file", splice_(wo, 0, q[1], 0, 4, 0));
	show("to a read-only file", splice_(p[0], 0, ro, 0, 4, 0));
	show("from O_PATH", splice_(op, 0, q[1], 0, 4, 0));
	show("to O_PATH", splice_(p[0], 0, op, 0, 4, 0));
	int dir = (int)sys_open(".", O_DIRECTORY, 0), proc = (int)sys_open("/proc", O_DIRECTORY, 0);
	show("from a directory", splice_(dir, 0, q[1], 0, 4, 0));
	show("from /proc", splice_(proc, 0, q[1], 0, 4, 0));
	int st = (int)sys_open("/proc/self/status", O_RDONLY, 0);
	show("from /proc/self/status", splice_(st, 0, q[1], 0, 4, 0));
	int mi = (int)sys_open("/proc/meminfo", O_RDONLY, 0);
	show("from /proc/meminfo", splice_(mi, 0, q[1], 0, 9, 0));
	drain("the pipe", q[0]);
	int z = (int)sys_open("/dev/zero", O_RDONLY, 0), nul = (int)sys_open("/dev/null", O_RDWR, 0);
	int ur = (int)sys_open("/dev/urandom", O_RDONLY, 0), full = (int)sys_open("/dev/full", O_WRONLY, 0);
	int urw = (int)sys_open("/dev/urandom", O_WRONLY, 0);
	show("from /dev/zero", splice_(z, 0, q[1], 0, 6, 0));
	drain("the pipe", q[0]);
	show("from /dev/null", splice_(nul, 0, q[1], 0, 6, 0));
	show("from /dev/urandom", splice_(ur, 0, q[1], 0, 16, 0));
	sys_read(q[0], buf, sizeof buf);
	off = 5;
	show("from /dev/urandom at offset 5", splice_(ur, &off, q[1], 0, 16, 0));
	printf("offset %lld\n", off);
	sys_read(q[0], buf, sizeof buf);
	off = -5;
	show("from /dev/urandom at offset -5", splice_(ur, &off, q[1], 0, 16, 0));
	show("from write-only /dev/urandom", splice_(urw, 0, q[1], 0, 16, 0));
	show("from /dev/urandom to a file", splice_(ur, 0, g, 0, 16, 0));
	show("to /dev/null", splice_(p[0], 0, nul, 0, 2, 0));
	show("to /dev/full", splice_(p[0], 0, full, 0, 2, 0));
	int ev = (int)rt_syscall(SYS_eventfd_, 0);
	show("from an eventfd", splice_(ev, 0, q[1], 0, 8, 0));
	show("to an eventfd", splice_(p[0], 0, ev, 0, 8, 0));

	printf("-- tee errors\n");
	show("length 0, bad descriptors", tee_(99, 98, 0, 0));
	show("bad flags, length 0", tee_(99, 98, 0, 0x100));
	show("bad input", tee_(99, q[1], 4, 0));
	show("bad output", tee_(p[0], 99, 4, 0));
	show("from a file", tee_(f, q[1], 4, 0));
	show("to a file", tee_(p[0], g, 4, 0));
	show("pipe to itself", tee_(p[0], p[1], 4, 0));
	show("from a write end", tee_(p[1], q[1], 4, 0));
	sys_close(f);
	sys_close(g);
	sys_close(app);
	sys_close(wo);
	sys_close(ro);
	sys_close(op);
	sys_close(dir);
	sys_close(proc);
	sys_close(st);
	sys_close(mi);
	sys_close(z);
	sys_close(nul);
	sys_close(ur);
	sys_close(urw);
	sys_close(full);
	sys_close(ev);
	sys_close(p[0]);
	sys_close(p[1]);
	sys_close(q[0]);
	sys_close(q[1]);
}

static void nonblocking(void)
{
	int p[2], q[2];
	long long off;
	printf("-- not waiting\n");
	int f = make("splice.f", "0123456789");
	sys_pipe(p);
	sys_pipe(q);
	show("empty pipe, SPLICE_F_NONBLOCK", splice_(p[0], 0, f, 0, 4, SPLICE_F_NONBLOCK));
	show("empty pipe to pipe, SPLICE_F_NONBLOCK", splice_(p[0], 0, q[1], 0, 4, SPLICE_F_NONBLOCK));
	show("tee from an empty pipe, SPLICE_F_NONBLOCK", tee_(p[0], q[1], 4, SPLICE_F_NONBLOCK));
	sys_fcntl(p[0], F_SETFL, O_NONBLOCK);
	show("empty pipe with O_NONBLOCK to a file", splice_(p[0], 0, f, 0, 4, 0));
	show("empty pipe with O_NONBLOCK to a pipe", splice_(p[0], 0, q[1], 0, 4, 0));
	show("tee from an empty O_NONBLOCK pipe", tee_(p[0], q[1], 4, 0));
	sys_fcntl(p[0], F_SETFL, 0);
	sys_fcntl(q[1], F_SETFL, O_NONBLOCK);
	show("empty pipe to an O_NONBLOCK pipe", splice_(p[0], 0, q[1], 0, 4, 0));
	show("tee from an empty pipe to an O_NONBLOCK pipe", tee_(p[0], q[1], 4, 0));
	fill_pipe(q[1]);
	off = 0;
	show("file to a full O_NONBLOCK pipe", splice_(f, &off, q[1], 0, 4, 0));
	sys_fcntl(q[1], F_SETFL, 0);
	show("file to a full pipe, SPLICE_F_NONBLOCK", splice_(f, &off, q[1], 0, 4, SPLICE_F_NONBLOCK));
	printf("offset %lld\n", off);
	sys_write(p[1], "abcd", 4);
	show("pipe to a full pipe, SPLICE_F_NONBLOCK", splice_(p[0], 0, q[1], 0, 4, SPLICE_F_NONBLOCK));
	show("tee to a full pipe, SPLICE_F_NONBLOCK", tee_(p[0], q[1], 4, SPLICE_F_NONBLOCK));
	struct iovec one = { "x", 1 };
	show("vmsplice to a full pipe, SPLICE_F_NONBLOCK", vmsplice_(q[1], &one, 1, SPLICE_F_NONBLOCK));
	sys_close(q[0]);
	sys_close(q[1]);
	sys_close(p[1]);
	show("drained pipe with no writer", splice_(p[0], 0, f, 0, 10, 0));
	drain("what was there", p[0]);
	show("empty pipe with no writer", splice_(p[0], 0, f, 0, 10, 0));
	show("tee from it", tee_(p[0], p[0], 10, 0));
	sys_close(p[0]);

	/* Unix stream sockets: SPLICE_F_NONBLOCK (or the pipe's O_NONBLOCK) is theirs too. */
	int sv[2];
	sys_socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
	sys_pipe(p);
	show("empty socket, SPLICE_F_NONBLOCK", splice_(sv[0], 0, p[1], 0, 4, SPLICE_F_NONBLOCK));
	sys_fcntl(p[1], F_SETFL, O_NONBLOCK);
	show("empty socket to an O_NONBLOCK pipe", splice_(sv[0], 0, p[1], 0, 4, 0));
	sys_fcntl(p[1], F_SETFL, 0);
	sys_write(sv[1], "sockdata", 8);
	show("socket to a pipe", splice_(sv[0], 0, p[1], 0, 4, 0));
	drain("the pipe", p[0]);
	off = 0;
	show("socket at an offset", splice_(sv[0], &off, p[1], 0, 4, 0));
	sys_write(p[1], "to the socket", 13);
	show("pipe to a socket", splice_(p[0], 0, sv[1], 0, 100, SPLICE_F_MORE));
	drain("the socket", sv[0]);
	drain("the socket's own bytes", sv[0]);
	int dg[2];
	sys_socketpair(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK, 0, dg);
	show("empty O_NONBLOCK datagram socket", splice_(dg[0], 0, p[1], 0, 4, 0));
	sys_write(dg[1], "dgram", 5);
	show("datagram socket to a pipe", splice_(dg[0], 0, p[1], 0, 100, 0));
	drain("the pipe", p[0]);
	sys_close(dg[0]);
	sys_close(dg[1]);
	sys_close(sv[0]);
	sys_close(sv[1]);
	sys_close(p[0]);
	sys_close(p[1]);
	sys_close(f);
}

static void no_reader(void)
{
	int p[2];
	uint32_t set[2] = { 1u << (SIGPIPE_ - 1), 0 }, pending[2];
	printf("-- no reader\n");
	int f = make("splice.f", "0123456789");
	rt_syscall(SYS_rt_sigprocmask_, SIG_BLOCK_, set, 0, 8);
	sys_pipe(p);
	sys_close(p[0]);
	show("file to a pipe without a reader", splice_(f, 0, p[1], 0, 4, 0));
	pending[0] = 0;
	rt_syscall(SYS_rt_sigpending_, pending, 8);
	printf("SIGPIPE pending: %d\n", (pending[0] >> (SIGPIPE_ - 1)) & 1);
	int q[2];
	sys_pipe(q);
	sys_write(q[1], "ab", 2);
	show("tee to it", tee_(q[0], p[1], 2, 0));
	show("splice to it", splice_(q[0], 0, p[1], 0, 2, 0));
	struct iovec one = { "x", 1 };
	show("vmsplice to it", vmsplice_(p[1], &one, 1, 0));
	/* Ignoring it discards the pending one; then it is unblocked. */
	struct ksigaction ign = { (void *)1, 0, 0, { 0, 0 } };
	rt_syscall(SYS_rt_sigaction_, SIGPIPE_, &ign, 0, 8);
	rt_syscall(SYS_rt_sigprocmask_, SIG_UNBLOCK_, set, 0, 8);
	show("splice to it, SIGPIPE ignored", splice_(q[0], 0, p[1], 0, 2, 0));
	sys_close(p[1]);
	sys_close(q[0]);
	sys_close(q[1]);
	sys_close(f);
}

static void waiting(void)
{
	int p[2], q[2];
	long long off;
	long pid, r;
	printf("-- waiting for another process\n");
	int f = make("splice.f", "");
	sys_pipe(p);
	fflush_stdout();
	pid = sys_fork();
	if (pid == 0) {
		sleep_ms(30);
		sys_write(p[1], "late", 4);
		exit(0);
	}
	off = 0;
	r = splice_(p[0], 0, f, &off, 10, 0);
	wait_child(pid);
	show("splice from an empty pipe, woken", r);
	contents("the file", f, 10);

	sys_pipe(q);
	fflush_stdout();
	pid = sys_fork();
	if (pid == 0) {
		sleep_ms(30);
		sys_write(p[1], "tee'd", 5);
		exit(0);
	}
	r = tee_(p[0], q[1], 10, 0);
	wait_child(pid);
	show("tee from an empty pipe, woken", r);
	drain("the tee's output", q[0]);
	drain("the tee's input", p[0]);

	fflush_stdout();
	pid = sys_fork();
	if (pid == 0) {
		sleep_ms(30);
		sys_write(p[1], "for vmsplice", 12);
		exit(0);
	}
	char got[16] = { 0 };
	struct iovec into = { got, sizeof got };
	r = vmsplice_(p[0], &into, 1, 0);
	wait_child(pid);
	show("vmsplice from an empty pipe, woken", r);
	printf("it read %.12s\n", got);

	/* A full pipe: splice from a file waits for the reader. */
	int w[2];
	sys_pipe(w);
	sys_fcntl(w[1], F_SETFL, O_NONBLOCK);
	fill_pipe(w[1]);
	sys_fcntl(w[1], F_SETFL, 0);
	sys_pwrite64(f, "0123456789", 10, 0);
	fflush_stdout();
	pid = sys_fork();
	if (pid == 0) {
		long n = 0, k;
		sleep_ms(30);
		while (n < 65536 + 6 && (k = sys_read(w[0], buf, sizeof buf)) > 0)
			n += k;
		printf("the reader took %ld\n", n);
		exit(0);
	}
	off = 2;
	r = splice_(f, &off, w[1], 0, 6, 0);
	wait_child(pid);
	show("file to a full pipe, woken", r);
	printf("offset %lld\n", off);

	/* vmsplice into a full pipe waits too (its O_NONBLOCK does not count). */
	sys_fcntl(w[1], F_SETFL, O_NONBLOCK);
	fill_pipe(w[1]);
	fflush_stdout();
	pid = sys_fork();
	if (pid == 0) {
		long n = 0, k;
		sleep_ms(30);
		while (n < 65536 + 3 && (k = sys_read(w[0], buf, sizeof buf)) > 0)
			n += k;
		printf("the reader took %ld\n", n);
		exit(0);
	}
	struct iovec three = { "abc", 3 };
	r = vmsplice_(w[1], &three, 1, 0);
	wait_child(pid);
	show("vmsplice into a full O_NONBLOCK pipe, woken", r);
	sys_close(w[0]);
	sys_close(w[1]);
	sys_close(p[0]);
	sys_close(p[1]);
	sys_close(q[0]);
	sys_close(q[1]);
	sys_close(f);
}

static void vmsplices(void)
{
	int p[2];
	printf("-- vmsplice\n");
	pipe_nb(p);
	struct iovec two[2] = { { "abc", 3 }, { "defg", 4 } };
	show("two pieces into a pipe", vmsplice_(p[1], two, 2, SPLICE_F_GIFT));
	drain("the pipe", p[0]);
	sys_write(p[1], "hello", 5);
	char a[2], b[10];
	struct iovec outs[2] = { { a, 2 }, { b, 10 } };
	show("a pipe into two buffers", vmsplice_(p[0], outs, 2, 0));
	printf("they read %.2s %.3s\n", a, b);
	show("from an empty pipe, SPLICE_F_NONBLOCK", vmsplice_(p[0], outs, 2, SPLICE_F_NONBLOCK));

	/* Each piece takes a slot (not merged): 16 one-byte pieces fill the pipe. */
	struct iovec ones[16];
	for (int i = 0; i < 16; i++) {
		ones[i].iov_base = fill + i;
		ones[i].iov_len = 1;
	}
	show("16 one-byte pieces", vmsplice_(p[1], ones, 16, 0));
	show("then a write", sys_write(p[1], "x", 1));
	show("then one more piece", vmsplice_(p[1], ones, 1, SPLICE_F_NONBLOCK));
	sys_read(p[0], buf, sizeof buf);

	/* A piece across a page boundary takes two slots. */
	char *m = (char *)sys_mmap2(0, 9 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct iovec across[8];
	for (int i = 0; i < 8; i++) {
		memcpy(m + (i + 1) * 4096 - 4, "ABCDEFGH", 8);
		across[i].iov_base = m + (i + 1) * 4096 - 4;
		across[i].iov_len = 8;
	}
	show("8 pieces across page boundaries", vmsplice_(p[1], across, 8, 0));
	long queued = 0;
	sys_ioctl(p[0], FIONREAD, &queued);
	printf("queued %ld\n", queued);
	show("then one more piece", vmsplice_(p[1], ones, 1, SPLICE_F_NONBLOCK));
	long n = sys_read(p[0], buf, sizeof buf);
	printf("read %ld: %.16s\n", n, buf);

	/* A buffer with a hole: up to the hole, EFAULT if nothing. */
	sys_mprotect(m + 4096, 4096, PROT_NONE);
	struct iovec holed = { m + 4096 - 6, 12 };
	show("a piece running into a hole", vmsplice_(p[1], &holed, 1, 0));
	struct iovec in_hole = { m + 4096, 4 };
	show("a piece in the hole", vmsplice_(p[1], &in_hole, 1, 0));
	struct iovec then_hole[2] = { { "ok", 2 }, { m + 4096, 4 } };
	show("a piece, then one in the hole", vmsplice_(p[1], then_hole, 2, 0));
	drain("the pipe", p[0]);
	sys_write(p[1], "0123456789", 10);
	struct iovec to_hole[2] = { { a, 2 }, { m + 4096 - 3, 8 } };
	show("a pipe into a buffer with a hole", vmsplice_(p[0], to_hole, 2, 0));
	char c[4] = { 0 };
	memcpy(c, m + 4096 - 3, 3);
	printf("it read %.2s %s\n", a, c);
	drain("the pipe", p[0]);
	sys_munmap(m, 9 * 4096);

	printf("-- vmsplice errors\n");
	int f = make("splice.f", "0123456789");
	int op = (int)sys_open("splice.f", O_PATH, 0);
	show("bad flags", vmsplice_(p[1], two, 2, 0x10));
	show("bad flags, bad descriptor", vmsplice_(99, two, 2, 0x10));
	show("bad descriptor", vmsplice_(99, two, 2, 0));
	show("O_PATH", vmsplice_(op, two, 2, 0));
	show("no pieces, a file", vmsplice_(f, 0, 0, 0));
	show("a file, bad iovec address", vmsplice_(f, (struct iovec *)16, 1, 0));
	show("a file", vmsplice_(f, two, 2, 0));
	struct iovec neg = { "x", 0x80000000u };
	show("a negative length", vmsplice_(p[1], &neg, 1, 0));
	struct iovec zero = { "x", 0 };
	show("a zero length", vmsplice_(p[1], &zero, 1, 0));
	show("1025 pieces", vmsplice_(p[1], two, 1025, 0));
	show("1024 pieces, bad address", vmsplice_(p[1], (struct iovec *)16, 1024, 0));
	sys_close(f);
	sys_close(op);
	sys_close(p[0]);
	sys_close(p[1]);
}

static void sync_range(void)
{
	int p[2], sv[2];
	printf("-- sync_file_range\n");
	int f = make("splice.f", "0123456789");
	sys_pipe(p);
	sys_socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
	int op = (int)sys_open("splice.f", O_PATH, 0), dir = (int)sys_open(".", O_DIRECTORY, 0);
	int nul = (int)sys_open("/dev/null", O_RDONLY, 0), proc = (int)sys_open("/proc/self/status", O_RDONLY, 0);
	show("all of it, every flag", sfr(f, 0, 0, 7));
	show("no flags", sfr(f, 0, 0, 0));
	show("a range", sfr(f, 2, 5, 2));
	show("bad flags", sfr(f, 0, 0, 8));
	show("bad descriptor, bad flags", sfr(99, 0, 0, 8));
	show("offset -1", sfr(f, -1, 0, 2));
	show("length -1", sfr(f, 0, -1, 2));
	show("past 2^63", sfr(f, 0x7ffffffffffffff0LL, 0x100, 2));
	show("at 2^63-1, to the end", sfr(f, 0x7fffffffffffffffLL, 0, 2));
	show("a pipe", sfr(p[0], 0, 0, 2));
	show("a pipe, bad flags", sfr(p[0], 0, 0, 8));
	show("a pipe, offset -1", sfr(p[0], -1, 0, 2));
	show("a socket", sfr(sv[0], 0, 0, 2));
	show("O_PATH", sfr(op, 0, 0, 2));
	show("a directory", sfr(dir, 0, 0, 7));
	show("/dev/null", sfr(nul, 0, 0, 7));
	show("/proc/self/status", sfr(proc, 0, 0, 7));
	char *m = (char *)sys_mmap2(0, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, f, 0);
	memcpy(m + 2, "synced", 6);
	show("a range written through a mapping", sfr(f, 0, 4096, 7));
	contents("the file", f, 10);
	sys_munmap(m, 4096);
	sys_close(f);
	sys_close(op);
	sys_close(dir);
	sys_close(nul);
	sys_close(proc);
	sys_close(p[0]);
	sys_close(p[1]);
	sys_close(sv[0]);
	sys_close(sv[1]);
}

struct ts64 {
	long long sec, nsec;
};

static long pwait2(int ep, void *ev, int max, void *ts, void *mask, unsigned size)
{
	return rt_syscall(SYS_epoll_pwait2, ep, ev, max, ts, mask, size);
}

static void epoll2(void)
{
	int p[2];
	unsigned char ev[24];
	uint32_t mask[2] = { 0, 0 };
	printf("-- epoll_pwait2\n");
	int ep = (int)rt_syscall(SYS_epoll_create1_, 0);
	sys_pipe(p);
	unsigned char e[12] = { EPOLLIN_, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0 };
	rt_syscall(SYS_epoll_ctl_, ep, 1, p[0], e);
	struct ts64 zero = { 0, 0 }, short_ = { 0, 20000000 }, high = { 0, 0x100000005LL };
	struct ts64 bad_ns = { 0, 1000000000 }, neg = { -1, 0 }, neg_ns = { 0, 0xffffffffLL };
	show("nothing ready, zero timeout", pwait2(ep, ev, 2, &zero, 0, 0));
	show("nothing ready, 20 ms", pwait2(ep, ev, 2, &short_, mask, 8));
	show("nanoseconds' high half ignored", pwait2(ep, ev, 2, &high, 0, 0));
	show("nanoseconds 10^9", pwait2(ep, ev, 2, &bad_ns, 0, 0));
	show("seconds -1", pwait2(ep, ev, 2, &neg, 0, 0));
	show("nanoseconds 2^32-1", pwait2(ep, ev, 2, &neg_ns, 0, 0));
	show("bad timeout address", pwait2(ep, ev, 2, (void *)16, 0, 0));
	show("bad timeout address, bad descriptor", pwait2(99, ev, 2, (void *)16, 0, 0));
	show("bad timespec, bad mask size", pwait2(ep, ev, 2, &bad_ns, mask, 4));
	show("bad mask size", pwait2(ep, ev, 2, &zero, mask, 4));
	show("bad mask size, no mask", pwait2(ep, ev, 2, &zero, 0, 4));
	show("bad mask address", pwait2(ep, ev, 2, &zero, (void *)16, 8));
	show("maxevents 0", pwait2(ep, ev, 0, &zero, 0, 0));
	show("bad descriptor", pwait2(99, ev, 2, &zero, 0, 0));
	show("not an epoll instance", pwait2(p[0], ev, 2, &zero, 0, 0));
	sys_write(p[1], "x", 1);
	show("ready, no timeout", pwait2(ep, ev, 2, 0, mask, 8));
	printf("event %x data %u\n", ev[0], ev[4]);
	sys_read(p[0], buf, 1);
	fflush_stdout();
	long pid = sys_fork();
	if (pid == 0) {
		sleep_ms(30);
		sys_write(p[1], "y", 1);
		exit(0);
	}
	long r = pwait2(ep, ev, 2, 0, 0, 0);
	wait_child(pid);
	show("woken, no timeout", r);
	sys_close(ep);
	sys_close(p[0]);
	sys_close(p[1]);
}

int main(void)
{
	for (unsigned i = 0; i < sizeof fill; i++)
		fill[i] = (char)('a' + i % 26);
	basics();
	errors();
	nonblocking();
	no_reader();
	waiting();
	vmsplices();
	sync_range();
	epoll2();
	sys_unlink("splice.f");
	sys_unlink("splice.g");
	return 0;
}
