/*
 * pty.c - pseudo-terminals: opening /dev/ptmx, the slave's lock (TIOCSPTLCK,
 * TIOCGPTLCK, EIO while locked), its number (TIOCGPTN) and opening /dev/pts/N by it,
 * the names and metadata glibc's ptsname, ttyname and isatty rely on (readlink of
 * /proc/self/fd/N, fstat of the slave and stat of its path agreeing, device 136:N),
 * termios (the defaults, cooked mode with echo and ONLCR, raw mode set with TCSETSF),
 * the window size, flushing and draining, FIONREAD, TIOCOUTQ, TIOCGPTPEER, the
 * controlling terminal (a child that does setsid and TIOCSCTTY: TIOCGPGRP, TIOCGSID,
 * TIOCSPGRP, /dev/tty, SIGWINCH at a window size change, the parent's view through
 * the master, SIGHUP to the foreground group when the session leader exits), and the end: EIO and POLLHUP on the master once every slave is closed,
 * /dev/pts/N gone once the master is. The pty number and pids are printed only as
 * relations (the host's numbers differ).
 */
#include "rt.h"

#define SYS_readlink 85
#define SYS_setsid 66
#define SYS_getsid 147
#define SYS_rt_sigprocmask_ 175
#define SYS_rt_sigpending_ 176

#define O_NOCTTY_ 0400
#define EIO_ 5
#define ENOTTY_ 25

#define TCGETS 0x5401
#define TCSETS 0x5402
#define TCSETSF 0x5404
#define TCSBRK 0x5409
#define TCFLSH 0x540b
#define TIOCSCTTY 0x540e
#define TIOCGPGRP 0x540f
#define TIOCSPGRP 0x5410
#define TIOCOUTQ 0x5411
#define TIOCGWINSZ 0x5413
#define TIOCSWINSZ 0x5414
#define FIONREAD 0x541b
#define TIOCGSID 0x5429
#define TIOCGPTN 0x80045430
#define TIOCSPTLCK 0x40045431
#define TIOCGPTLCK 0x80045439
#define TIOCGPTPEER 0x5441

#define ISIG 0001
#define ICANON 0002
#define ECHO 0010
#define OPOST 0001
#define VTIME 5
#define VMIN 6
#define SIGWINCH_ 28
#define SIGHUP_ 1
#define SYS_getppid 64

struct termios {
	uint32_t c_iflag, c_oflag, c_cflag, c_lflag;
	uint8_t c_line;
	uint8_t c_cc[19];
};

struct winsize {
	uint16_t row, col, xpixel, ypixel;
};

static const char *res(long r)
{
	return errno_str(r);
}

/* "ok" for success, else the error's name. */
static const char *ok(long r) { return r >= 0 ? "ok" : res(r); }

static void nap(int ms)
{
	struct timespec t = { 0, ms * 1000000L };
	sys_nanosleep(&t, 0);
}

/* Waits (up to 2 s) for fd to be readable; the revents. */
static int wait_in(int fd)
{
	struct pollfd p = { fd, POLLIN, 0 };
	long r = sys_poll(&p, 1, 2000);
	return r > 0 ? p.revents : 0;
}

/* Reads exactly n bytes (or until an error or end); what was read, printable. */
static const char *read_n(int fd, int n)
{
	static char out[128];
	char buf[64];
	int got = 0, o = 0;
	while (got < n) {
		if (!wait_in(fd))
			break;
		long r = sys_read(fd, buf + got, n - got);
		if (r <= 0)
			break;
		got += r;
	}
	for (int i = 0; i < got && o < 120; i++) {
		char c = buf[i];
		if (c == '\n') {
			out[o++] = '\\';
			out[o++] = 'n';
		} else if (c == '\r') {
			out[o++] = '\\';
			out[o++] = 'r';
		} else {
			out[o++] = c;
		}
	}
	out[o] = 0;
	return out;
}

/* Reads one line, a byte at a time (so that what follows stays unread); "" at the end. */
static void read_line(int fd, char *buf, int len)
{
	int got = 0;
	while (got < len - 1) {
		if (!wait_in(fd) || sys_read(fd, buf + got, 1) != 1)
			break;
		if (buf[got++] == '\n')
			break;
	}
	buf[got] = 0;
}

static long readlink_fd(int fd, char *buf, int len)
{
	char path[32];
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	long r = rt_syscall(SYS_readlink, path, buf, len - 1);
	buf[r > 0 ? r : 0] = 0;
	return r;
}

static unsigned dev_major(unsigned long long d) { return (unsigned)(((d >> 8) & 0xfff) | ((d >> 32) & ~0xfffu)); }
static unsigned dev_minor(unsigned long long d) { return (unsigned)((d & 0xff) | ((d >> 12) & ~0xffu)); }

static void child(int m, int s, const char *path)
{
	long pid = sys_getpid();
	sys_close(m); /* so that the master closes with the parent's */
	long r = rt_syscall(SYS_setsid);
	int v = -1;
	char line[160];
	long pg = sys_ioctl(s, TIOCGPGRP, &v);
	/* Before TIOCSCTTY: not the caller's terminal. */
	int n = snprintf(line, sizeof line, "child: setsid %d, TIOCGPGRP before %s\n", r == pid, res(pg));
	long sc = sys_ioctl(s, TIOCSCTTY, 0);
	long again = sys_ioctl(s, TIOCSCTTY, 0);
	n += snprintf(line + n, sizeof line - n, "child: TIOCSCTTY %s, again %s\n", ok(sc), ok(again));
	sys_write(s, line, n);

	v = -1;
	pg = sys_ioctl(s, TIOCGPGRP, &v);
	int sid = -1;
	long gs = sys_ioctl(s, TIOCGSID, &sid);
	n = snprintf(line, sizeof line, "child: TIOCGPGRP %s is me %d, TIOCGSID %s is me %d\n", ok(pg), v == pid,
		     ok(gs), sid == pid);
	int bad = 0x7ffffff0;
	long sp_bad = sys_ioctl(s, TIOCSPGRP, &bad);
	int me = (int)pid;
	long sp = sys_ioctl(s, TIOCSPGRP, &me);
	n += snprintf(line + n, sizeof line - n, "child: TIOCSPGRP absent %s, own %s\n", res(sp_bad), ok(sp));
	sys_write(s, line, n);

	/* /dev/tty is now this pty. */
	long t = sys_open("/dev/tty", O_RDWR, 0);
	if (t >= 0) {
		sys_write(t, "via /dev/tty\n", 13);
		struct stat64 a, b;
		sys_fstat64(t, &a);
		sys_stat64(path, &b);
		n = snprintf(line, sizeof line, "child: /dev/tty rdev is the slave's %d\n", a.st_rdev == b.st_rdev);
		sys_write(s, line, n);
		sys_close(t);
	} else {
		n = snprintf(line, sizeof line, "child: /dev/tty %s\n", res(t));
		sys_write(s, line, n);
	}

	/* SIGWINCH to the foreground group when the parent changes the size. */
	uint32_t set[2] = { 1u << (SIGWINCH_ - 1), 0 };
	rt_syscall(SYS_rt_sigprocmask_, 0 /* SIG_BLOCK */, set, 0, 8);
	sys_write(s, "ready\n", 6);
	uint32_t pend[2] = { 0, 0 };
	for (int i = 0; i < 200; i++) {
		rt_syscall(SYS_rt_sigpending_, pend, 8);
		if (pend[0] & set[0])
			break;
		nap(10);
	}
	n = snprintf(line, sizeof line, "child: SIGWINCH pending %d\n", (pend[0] & set[0]) != 0);
	sys_write(s, line, n);

	/* A process of the foreground group that outlives the session leader: SIGHUP, and
	 * the terminal is no longer its controlling terminal. */
	uint32_t hup[2] = { 1u << (SIGHUP_ - 1), 0 };
	rt_syscall(SYS_rt_sigprocmask_, 0 /* SIG_BLOCK */, hup, 0, 8);
	if (sys_fork() == 0) {
		for (int i = 0; i < 200 && rt_syscall(SYS_getppid) == pid; i++)
			nap(10);
		pend[0] = 0;
		rt_syscall(SYS_rt_sigpending_, pend, 8);
		int g = -1;
		long gp = sys_ioctl(s, TIOCGPGRP, &g);
		n = snprintf(line, sizeof line, "grandchild: SIGHUP pending %d, TIOCGPGRP %s\n",
			     (pend[0] & hup[0]) != 0, res(gp));
		sys_write(s, line, n);
		sys_close(s);
		_exit(0);
	}
	sys_close(s);
	_exit(7);
}

int main(void)
{
	long m = sys_open("/dev/ptmx", O_RDWR | O_NOCTTY_, 0);
	printf("open /dev/ptmx %s\n", ok(m));
	if (m < 0)
		return 1;
	unsigned n = 0, lk = 9;
	printf("TIOCGPTN %s\n", ok(sys_ioctl(m, TIOCGPTN, &n)));
	long r = sys_ioctl(m, TIOCGPTLCK, &lk);
	printf("TIOCGPTLCK %s locked %u\n", ok(r), lk);
	char path[32];
	snprintf(path, sizeof path, "/dev/pts/%u", n);
	printf("open slave while locked %s\n", res(sys_open(path, O_RDWR | O_NOCTTY_, 0)));
	int zero = 0;
	printf("TIOCSPTLCK 0 %s\n", ok(sys_ioctl(m, TIOCSPTLCK, &zero)));
	lk = 9;
	sys_ioctl(m, TIOCGPTLCK, &lk);
	printf("TIOCGPTLCK locked %u\n", lk);
	long s = sys_open(path, O_RDWR | O_NOCTTY_, 0);
	printf("open slave %s\n", ok(s));
	if (s < 0)
		return 1;
	unsigned n2 = 0;
	printf("TIOCGPTN on the slave %s\n", res(sys_ioctl(s, TIOCGPTN, &n2)));

	/* Names and metadata. */
	char link[64];
	readlink_fd(s, link, sizeof link);
	printf("slave link is its path %d\n", strcmp(link, path) == 0);
	readlink_fd(m, link, sizeof link);
	printf("master link %s\n", link);
	struct stat64 fs, ps, ms;
	long r1 = sys_fstat64(s, &fs);
	long r2 = sys_stat64(path, &ps);
	printf("fstat %s stat %s: chr %d major %u minor is N %d same ino %d dev %d rdev %d\n", ok(r1), ok(r2),
	       (fs.st_mode & 0170000) == 0020000, dev_major(fs.st_rdev), dev_minor(fs.st_rdev) == n,
	       fs.st_ino == ps.st_ino, fs.st_dev == ps.st_dev, fs.st_rdev == ps.st_rdev);
	sys_fstat64(m, &ms);
	printf("master: chr %d rdev %u:%u\n", (ms.st_mode & 0170000) == 0020000, dev_major(ms.st_rdev),
	       dev_minor(ms.st_rdev));

	/* The defaults, cooked mode. */
	struct termios t;
	memset(&t, 0, sizeof t);
	printf("TCGETS %s\n", ok(sys_ioctl(s, TCGETS, &t)));
	printf("  iflag %x oflag %x cflag %x lflag %x line %u\n", t.c_iflag, t.c_oflag, t.c_cflag, t.c_lflag,
	       t.c_line);
	printf("  cc");
	for (int i = 0; i < 17; i++)
		printf(" %x", t.c_cc[i]);
	printf("\n");
	struct termios tm;
	memset(&tm, 0, sizeof tm);
	sys_ioctl(m, TCGETS, &tm);
	printf("master TCGETS same %d\n", memcmp(&t, &tm, sizeof t) == 0);

	sys_write(s, "hello\n", 6);
	printf("slave->master cooked: %s\n", read_n(m, 7));
	sys_write(m, "abc\n", 4);
	printf("master->slave cooked: %s\n", read_n(s, 4));
	printf("echo on master: %s\n", read_n(m, 5));
	sys_write(m, "de\n", 3);
	wait_in(s);
	int q = -1;
	r = sys_ioctl(s, FIONREAD, &q);
	printf("FIONREAD %s %d\n", ok(r), q);
	printf("  read %s\n", read_n(s, 3));
	read_n(m, 4); /* the echo */
	struct pollfd pf = { (int)m, POLLIN, 0 };
	printf("poll master, nothing to read: %ld\n", sys_poll(&pf, 1, 0));
	long fl = sys_fcntl(m, F_GETFL, 0);
	sys_fcntl(m, F_SETFL, fl | O_NONBLOCK);
	char c;
	printf("non-blocking read %s\n", res(sys_read(m, &c, 1)));
	sys_fcntl(m, F_SETFL, fl);

	/* Raw mode. */
	t.c_lflag &= ~(ICANON | ECHO | ISIG);
	t.c_oflag &= ~OPOST;
	t.c_cc[VMIN] = 1;
	t.c_cc[VTIME] = 0;
	printf("TCSETSF %s\n", ok(sys_ioctl(s, TCSETSF, &t)));
	struct termios back;
	sys_ioctl(s, TCGETS, &back);
	printf("  lflag %x oflag %x vmin %u\n", back.c_lflag, back.c_oflag, back.c_cc[VMIN]);
	sys_write(s, "q\n", 2);
	printf("slave->master raw: %s\n", read_n(m, 2));
	sys_write(m, "xyz", 3);
	printf("master->slave raw: %s\n", read_n(s, 3));
	pf.revents = 0;
	printf("no echo: poll %ld\n", sys_poll(&pf, 1, 50));
	printf("TCSETS back %s\n", ok(sys_ioctl(s, TCSETS, &back)));

	/* Window size, flushing, draining. */
	struct winsize w = { 9, 9, 9, 9 };
	r = sys_ioctl(s, TIOCGWINSZ, &w);
	printf("TIOCGWINSZ %s %u %u %u %u\n", ok(r), w.row, w.col, w.xpixel, w.ypixel);
	struct winsize w2 = { 24, 80, 0, 0 };
	printf("TIOCSWINSZ on the master %s\n", ok(sys_ioctl(m, TIOCSWINSZ, &w2)));
	sys_ioctl(s, TIOCGWINSZ, &w);
	printf("slave sees %u %u\n", w.row, w.col);
	sys_write(m, "junk", 4);
	wait_in(s);
	printf("TCFLSH %s\n", ok(sys_ioctl(s, TCFLSH, (void *)2)));
	q = -1;
	sys_ioctl(s, FIONREAD, &q);
	printf("FIONREAD after flush %d\n", q);
	q = -1;
	r = sys_ioctl(s, TIOCOUTQ, &q);
	printf("TIOCOUTQ %s %d\n", ok(r), q);
	printf("tcdrain %s\n", ok(sys_ioctl(s, TCSBRK, (void *)1)));
	printf("bad ioctl %s\n", res(sys_ioctl(s, 0x54ff, 0)));

	/* No controlling terminal yet. */
	int v = 12345;
	printf("TIOCGPGRP slave %s\n", res(sys_ioctl(s, TIOCGPGRP, &v)));
	v = 12345;
	long pm = sys_ioctl(m, TIOCGPGRP, &v);
	printf("TIOCGPGRP master %s %d\n", ok(pm), v);
	printf("TIOCGSID master %s\n", res(sys_ioctl(m, TIOCGSID, &v)));

	/* A child makes it its controlling terminal. */
	long pid = sys_fork();
	if (pid == 0)
		child((int)m, (int)s, path);
	/* The rest of the child's lines, up to "ready". */
	char all[512];
	do {
		read_line((int)m, all, sizeof all);
		printf("%s", all);
	} while (all[0] && strcmp(all, "ready\n") != 0);
	v = 0;
	sys_ioctl(m, TIOCGPGRP, &v);
	printf("parent: master TIOCGPGRP is the child %d\n", v == pid);
	int sid = 0;
	r = sys_ioctl(m, TIOCGSID, &sid);
	printf("parent: master TIOCGSID %s is the child %d\n", ok(r), sid == pid);
	printf("parent: slave TIOCGPGRP %s\n", res(sys_ioctl(s, TIOCGPGRP, &v)));
	struct winsize w3 = { 30, 100, 0, 0 };
	sys_ioctl(m, TIOCSWINSZ, &w3);
	read_line((int)m, all, sizeof all);
	printf("%s", all);
	int st = 0;
	sys_waitpid(pid, &st, 0);
	printf("child status %x\n", st);
	read_line((int)m, all, sizeof all);
	printf("%s", all);
	v = 12345;
	sys_ioctl(m, TIOCGPGRP, &v);
	printf("after the session leader's end: master TIOCGPGRP %d, TIOCGSID %s\n", v,
	       res(sys_ioctl(m, TIOCGSID, &sid)));

	/* The end: EIO and POLLHUP once every slave is closed. */
	sys_close(s);
	pf.revents = 0;
	sys_poll(&pf, 1, 1000);
	printf("poll master after the slaves closed: %x\n", pf.revents);
	printf("read master %s\n", res(sys_read(m, &c, 1)));
	s = sys_open(path, O_RDWR | O_NOCTTY_, 0);
	printf("reopen slave %s\n", ok(s));
	sys_write(s, "z", 1);
	printf("  master reads %s\n", read_n(m, 1));
	sys_close(s);

	/* TIOCGPTPEER on a second pty. */
	long m2 = sys_open("/dev/ptmx", O_RDWR | O_NOCTTY_, 0);
	unsigned nn = 0;
	sys_ioctl(m2, TIOCGPTN, &nn);
	printf("second pty: a different number %d\n", nn != n);
	printf("TIOCGPTPEER locked %s\n", res(sys_ioctl(m2, TIOCGPTPEER, (void *)(O_RDWR | O_NOCTTY_))));
	sys_ioctl(m2, TIOCSPTLCK, &zero);
	long other = sys_ioctl(m2, TIOCGPTPEER, (void *)(O_RDONLY | O_CREAT));
	printf("TIOCGPTPEER other flags %s\n", ok(other));
	if (other >= 0)
		sys_close(other);
	long s2 = sys_ioctl(m2, TIOCGPTPEER, (void *)(O_RDWR | O_NOCTTY_));
	printf("TIOCGPTPEER %s\n", ok(s2));
	char p2[32];
	snprintf(p2, sizeof p2, "/dev/pts/%u", nn);
	readlink_fd(s2, link, sizeof link);
	printf("  its link is the path %d\n", strcmp(link, p2) == 0);
	sys_write(m2, "peer\n", 5);
	printf("  reads %s\n", read_n(s2, 5));
	sys_close(s2);
	sys_close(m2);

	sys_close(m);
	printf("after the master's close: stat %s open %s\n", res(sys_stat64(path, &ps)),
	       res(sys_open(path, O_RDWR | O_NOCTTY_, 0)));
	return 0;
}
