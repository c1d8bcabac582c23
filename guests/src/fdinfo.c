/*
 * fdinfo.c - /proc/self/fdinfo/N: pos and flags (octal, O_CLOEXEC for a close-on-exec
 * descriptor, O_LARGEFILE only where the program asked for it) of regular files, pipes
 * and a socket, ino against fstat's, and what each kind adds: an eventfd's count, a
 * signalfd's mask, a pidfd's Pid and NSpid (alive, a zombie, reaped), an epoll
 * instance's tfd lines (the guest's descriptor numbers, the events and data). The
 * listing of /proc/self/fdinfo, and the errors for a descriptor that is not open.
 * mnt_id, eventfd-id and an epoll line's ino and sdev are not printed: they name host
 * mounts and objects.
 */
#include "rt.h"

#define SYS_getdents64 220
#define SYS_epoll_ctl 255
#define SYS_eventfd2 328
#define SYS_epoll_create1 329
#define SYS_signalfd4 327
#define SYS_pidfd_open 434
#define O_LARGEFILE_ 0100000
#define O_CLOEXEC_ 02000000
#define O_NONBLOCK_ 04000
#define O_APPEND_ 02000
#define O_DIRECTORY_ 0200000

struct ev { uint32_t events; uint32_t lo, hi; } __attribute__((packed));

static const char *res(long r)
{
	return errno_str(r);
}

static int starts(const char *s, const char *p)
{
	while (*p)
		if (*s++ != *p++)
			return 0;
	return 1;
}

static long num_after(const char *s)
{
	while (*s && *s != '\t' && *s != ' ')
		s++;
	while (*s == '\t' || *s == ' ')
		s++;
	int neg = *s == '-';
	if (neg)
		s++;
	long v = 0;
	while (*s >= '0' && *s <= '9')
		v = v * 10 + (*s++ - '0');
	return neg ? -v : v;
}

/* Prints fdinfo of `fd` line by line; `pid` is what a Pid line should say. */
static void show(const char *what, int fd, long pid)
{
	char path[64], buf[4096];
	snprintf(path, sizeof path, "/proc/self/fdinfo/%d", fd);
	int f = (int)sys_open(path, 0, 0);
	if (f < 0) {
		printf("%s: open %s\n", what, res(f));
		return;
	}
	long n = 0, r;
	while ((r = sys_read(f, buf + n, sizeof buf - 1 - n)) > 0)
		n += r;
	buf[n] = 0;
	sys_close(f);
	struct stat64 st;
	memset(&st, 0, sizeof st);
	sys_fstat64(fd, &st);
	printf("%s:\n", what);
	char *tfd[8];
	int ntfd = 0;
	char *line = buf;
	while (*line) {
		char *end = line;
		while (*end && *end != '\n')
			end++;
		char save = *end;
		*end = 0;
		if (starts(line, "mnt_id:"))
			printf("  mnt_id: (a number)\n");
		else if (starts(line, "ino:"))
			printf("  ino: %s\n", (unsigned long long)num_after(line) == (unsigned long long)st.st_ino ? "fstat's" : "other");
		else if (starts(line, "eventfd-id:"))
			printf("  eventfd-id: (a number)\n");
		else if (starts(line, "Pid:") || starts(line, "NSpid:")) {
			long v = num_after(line);
			printf("  %.*s %s\n", starts(line, "Pid:") ? 4 : 6, line, v == pid ? "the pid" : v == -1 ? "-1" : "other");
		} else if (starts(line, "tfd:")) {
			/* Linux lists them in no fixed order: collected, printed by number. */
			char *cut = line;
			while (*cut && !starts(cut, "  pos:"))
				cut++;
			*cut = 0;
			if (ntfd < 8)
				tfd[ntfd++] = line;
		} else
			printf("  %s\n", line);
		if (!starts(line, "tfd:"))
			*end = save;
		line = save ? end + 1 : end;
	}
	for (int i = 0; i < ntfd; i++)
		for (int j = i + 1; j < ntfd; j++)
			if (num_after(tfd[j]) < num_after(tfd[i])) {
				char *t = tfd[i];
				tfd[i] = tfd[j];
				tfd[j] = t;
			}
	for (int i = 0; i < ntfd; i++)
		printf("  %s\n", tfd[i]);
}

static void listing(void)
{
	char buf[2048];
	int d = (int)sys_open("/proc/self/fdinfo", O_DIRECTORY_, 0);
	long n = rt_syscall(SYS_getdents64, d, buf, sizeof buf);
	printf("listing (the directory is %d):", d);
	for (long off = 0; off < n;) {
		unsigned short reclen = *(unsigned short *)(buf + off + 16);
		unsigned char type = *(unsigned char *)(buf + off + 18);
		printf(" %s/%d", buf + off + 19, type);
		off += reclen;
	}
	printf("\n");
	sys_close(d);
}

int main(void)
{
	/* Descriptors inherited from whoever started it (natively, a test harness's) would
	 * shift every number below: only 0-2 are kept. */
	for (int fd = 3; fd < 1024; fd++)
		sys_close(fd);
	int w = (int)sys_open("fdinfo.tmp", 01 | 0100 | 01000 /* O_WRONLY|O_CREAT|O_TRUNC */, 0644);
	sys_write(w, "0123456789abcdef", 16);
	show("written file", w, 0);
	int r = (int)sys_open("fdinfo.tmp", 0, 0);
	char b[8];
	sys_read(r, b, 5);
	show("file read 5 bytes", r, 0);
	sys_lseek(r, 12, 0);
	show("after lseek 12", r, 0);
	sys_fcntl(r, 2 /* F_SETFD */, 1);
	sys_fcntl(r, 4 /* F_SETFL */, O_NONBLOCK_);
	show("close-on-exec, O_NONBLOCK", r, 0);
	int l = (int)sys_open("fdinfo.tmp", 02 | O_LARGEFILE_ | O_CLOEXEC_ | O_APPEND_, 0);
	show("O_RDWR|O_LARGEFILE|O_CLOEXEC|O_APPEND", l, 0);
	int dup = (int)sys_dup(l);
	show("its dup", dup, 0);

	int p[2];
	sys_pipe(p);
	show("pipe read end", p[0], 0);
	show("pipe write end", p[1], 0);
	int s[2];
	sys_socketpair(1, 1 | O_CLOEXEC_, 0, s);
	show("unix socket", s[0], 0);

	int e = (int)rt_syscall(SYS_eventfd2, 5, O_CLOEXEC_ | O_NONBLOCK_);
	show("eventfd 5", e, 0);
	uint64_t one = 1;
	sys_write(e, &one, 8);
	show("eventfd 6", e, 0);

	uint32_t mask[2] = { (1u << 9) | (1u << 11) | (1u << 8), 1u << 2 };
	int sfd = (int)rt_syscall(SYS_signalfd4, -1, mask, 8, O_CLOEXEC_);
	show("signalfd", sfd, 0);

	int ep = (int)rt_syscall(SYS_epoll_create1, O_CLOEXEC_);
	struct ev ev1 = { 1, 0x1234, 0x5678 }, ev2 = { 1u | (1u << 31), 7, 0 }, ev3 = { 4, 9, 0 };
	rt_syscall(SYS_epoll_ctl, ep, 1, p[0], &ev1);
	rt_syscall(SYS_epoll_ctl, ep, 1, e, &ev2);
	rt_syscall(SYS_epoll_ctl, ep, 1, s[1], &ev3);
	show("epoll", ep, 0);

	int go[2];
	sys_pipe(go);
	fflush_stdout();
	long c = sys_fork();
	if (c == 0) {
		char x;
		sys_read(go[0], &x, 1);
		_exit(0);
	}
	int pfd = (int)rt_syscall(SYS_pidfd_open, c, 0);
	struct ev ev4 = { 1, 11, 0 };
	rt_syscall(SYS_epoll_ctl, ep, 1, pfd, &ev4);
	rt_syscall(SYS_epoll_ctl, ep, 1, sfd, &ev4);
	show("pidfd, alive", pfd, c);
	sys_write(go[1], "x", 1);
	struct pollfd pf = { pfd, POLLIN, 0 };
	sys_poll(&pf, 1, -1);
	show("pidfd, exited", pfd, c);
	int st;
	sys_waitpid((int)c, &st, 0);
	show("pidfd, reaped", pfd, c);
	int self = (int)rt_syscall(SYS_pidfd_open, sys_getpid(), O_NONBLOCK_);
	show("own pidfd, O_NONBLOCK", self, sys_getpid());
	show("epoll with a pidfd and a signalfd", ep, 0);

	listing();
	sys_close(dup);
	show("closed", dup, 0);
	printf("fdinfo/999: %s, fdinfo/0/x: %s, fdinfo/x: %s\n", res(sys_open("/proc/self/fdinfo/999", 0, 0)),
	       res(sys_open("/proc/self/fdinfo/0/x", 0, 0)), res(sys_open("/proc/self/fdinfo/x", 0, 0)));
	sys_unlink("fdinfo.tmp");
	return 0;
}
