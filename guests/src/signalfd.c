/*
 * signalfd.c - signalfd and signalfd4: the errors of creating one and of changing its
 * mask (the checks' order), what the descriptor is (close-on-exec, O_NONBLOCK, no
 * write, pread or short read), readiness through poll, select and epoll, the
 * signalfd_siginfo records a read returns (kill, tkill, sigqueue values, SIGCHLD,
 * a POSIX timer, a fault signal sent by kill taken before a lower one, several records
 * in one read, readv), a changed mask, a blocking read woken by another process, one
 * interrupted by a handler (EINTR, and restarted with SA_RESTART), a fork child reading
 * its own signals through the inherited descriptor, and EFAULT losing the signal.
 * Pids are printed only as relations.
 */
#include "rt.h"

#define SYS_rt_sigaction_ 174
#define SYS_rt_sigprocmask_ 175
#define SYS_rt_sigqueueinfo 178
#define SYS_gettid_ 224
#define SYS_tkill 238
#define SYS_timer_create 259
#define SYS_timer_settime 260
#define SYS_setitimer 104
#define SYS_newselect 142
#define SYS_epoll_create 254
#define SYS_epoll_ctl 255
#define SYS_epoll_wait 256
#define SYS_signalfd 321
#define SYS_signalfd4 327
#define SYS_readlink 85

#define SFD_NONBLOCK 04000
#define SFD_CLOEXEC 02000000
#define SA_SIGINFO_ 4
#define SA_RESTART_ 0x10000000
#define SA_RESTORER_ 0x04000000
#define SIGSEGV_ 11
#define SIGUSR1_ 10
#define SIGUSR2_ 12
#define SIGALRM_ 14
#define SIGCHLD_ 17
#define SIGWINCH_ 28
#define SIGRTMIN_ 34

#define BIT(s) (1ull << ((s) - 1))

struct ssi {
	uint32_t signo;
	int32_t err;
	int32_t code;
	uint32_t pid, uid;
	int32_t fd;
	uint32_t tid, band, overrun, trapno;
	int32_t status, value;
	uint64_t ptr, utime, stime, addr;
	uint16_t addr_lsb, pad2;
	int32_t syscall;
	uint64_t call_addr;
	uint32_t arch;
	uint8_t pad[28];
} __attribute__((packed));

static const char *res(long r)
{
	static char buf[24];
	switch (r) {
	case 0: return "ok";
	case -4: return "EINTR";
	case -9: return "EBADF";
	case -11: return "EAGAIN";
	case -14: return "EFAULT";
	case -22: return "EINVAL";
	case -29: return "ESPIPE";
	default: snprintf(buf, sizeof buf, "%ld", r); return buf;
	}
}

static long me;

static long sfd(long fd, uint64_t mask, long flags)
{
	return rt_syscall(SYS_signalfd4, fd, &mask, 8, flags);
}

static void sigmask(int how, uint64_t set)
{
	rt_syscall(SYS_rt_sigprocmask_, how, &set, 0, 8);
}

static void sleep_ms(long ms)
{
	struct timespec ts = { 0, ms * 1000000 };
	sys_nanosleep(&ts, 0);
}

static const char *who(uint32_t pid, long child)
{
	if (pid == (uint32_t)me)
		return "self";
	if (child && pid == (uint32_t)child)
		return "child";
	return pid == 0 ? "0" : "other";
}

/* Prints what one record says, in the layout of its signal. */
static void show(const char *what, struct ssi *s, long child)
{
	printf("%s: signo %u errno %d code %d", what, s->signo, s->err, s->code);
	if (s->signo == SIGCHLD_)
		printf(" pid %s uid %s status %d", who(s->pid, child), s->uid == (uint32_t)sys_getuid() ? "mine" : "other",
		       s->status);
	else if (s->code == -2)
		printf(" tid %u overrun %u int %d ptr %llx", s->tid, s->overrun, s->value, (unsigned long long)s->ptr);
	else
		printf(" pid %s uid %s int %d ptr %llx", who(s->pid, child),
		       s->uid == (uint32_t)sys_getuid() ? "mine" : "other", s->value, (unsigned long long)s->ptr);
	printf(" addr %llx fd %d band %u\n", (unsigned long long)s->addr, s->fd, s->band);
}

/* One read of room for n records; prints each record, or the error. */
static long rd(const char *what, int fd, int n, long child)
{
	struct ssi s[4];
	memset(s, 0xa5, sizeof s);
	long r = sys_read(fd, s, n * sizeof s[0]);
	if (r < 0) {
		printf("%s: %s\n", what, res(r));
		return r;
	}
	printf("%s: %ld bytes\n", what, r);
	for (long i = 0; i < r / 128; i++)
		show("  record", &s[i], child);
	return r;
}

static int readable(int fd)
{
	struct pollfd pf = { fd, POLLIN | POLLOUT, 0 };
	long r = sys_poll(&pf, 1, 0);
	return r < 0 ? (int)r : pf.revents;
}

static long queue(long pid, int sig, int code, int value)
{
	uint32_t info[32] = { 0 };
	info[0] = (uint32_t)sig;
	info[2] = (uint32_t)code;
	info[3] = (uint32_t)me;
	info[4] = (uint32_t)sys_getuid();
	info[5] = (uint32_t)value;
	return rt_syscall(SYS_rt_sigqueueinfo, pid, sig, info);
}

static volatile int handled;
static void on_alarm(int sig, void *si, void *uc) { handled = sig; }

static void handle(int sig, void *fn, uint32_t flags)
{
	struct ksigaction a = { fn, SA_SIGINFO_ | SA_RESTORER_ | flags, (void *)restore_rt, { 0, 0 } };
	rt_syscall(SYS_rt_sigaction_, sig, &a, 0, 8);
}

static void alarm_ms(long ms)
{
	long it[4] = { 0, 0, 0, ms * 1000 };
	rt_syscall(SYS_setitimer, 0, it, 0);
}

static void errors(void)
{
	uint64_t mask = BIT(SIGUSR1_);
	int p[2];
	sys_pipe(p);
	printf("sizemask 4: %s\n", res(rt_syscall(SYS_signalfd4, -1, &mask, 4, 0)));
	printf("sizemask 16: %s\n", res(rt_syscall(SYS_signalfd4, -1, &mask, 16, 0)));
	printf("bad mask pointer: %s\n", res(rt_syscall(SYS_signalfd4, -1, 16, 8, 0)));
	printf("bad mask pointer and sizemask: %s\n", res(rt_syscall(SYS_signalfd4, -1, 16, 4, 0)));
	printf("bad mask pointer and flags: %s\n", res(rt_syscall(SYS_signalfd4, -1, 16, 8, 1)));
	printf("bad flags: %s\n", res(sfd(-1, mask, 1)));
	printf("fd -2: %s\n", res(sfd(-2, mask, 0)));
	printf("fd 999: %s\n", res(sfd(999, mask, 0)));
	printf("fd 999, bad flags: %s\n", res(sfd(999, mask, 0x10)));
	printf("a pipe: %s\n", res(sfd(p[0], mask, 0)));
	printf("an epoll instance: %s\n", res(sfd(rt_syscall(SYS_epoll_create, 1), mask, 0)));
	printf("signalfd (3 arguments), size 4: %s\n", res(rt_syscall(SYS_signalfd, -1, &mask, 4)));
	long all = sfd(-1, ~0ull, 0);
	printf("every signal, SIGKILL and SIGSTOP too: %s\n", all >= 0 ? "ok" : res(all));
	sys_close((int)all);
	sys_close(p[0]);
	sys_close(p[1]);
}

static void descriptor(int fd, int nb)
{
	char path[64], link[64];
	struct stat64 st;
	long fl = sys_fcntl(fd, 3 /* F_GETFL */, 0);
	printf("F_GETFD %ld, access mode %ld, O_NONBLOCK %d\n", sys_fcntl(fd, 1, 0), fl & 3, (fl & O_NONBLOCK) != 0);
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	long n = rt_syscall(SYS_readlink, path, link, sizeof link - 1);
	link[n > 0 ? n : 0] = 0;
	printf("link: %s\n", link);
	long r = sys_fstat64(fd, &st);
	printf("fstat: %s, type %o, mode %o\n", res(r), st.st_mode & 0170000, st.st_mode & 07777);
	char b[200];
	if (nb)
		printf("read empty: %s\n", res(sys_read(fd, b, 128)));
	printf("read 127 bytes: %s\n", res(sys_read(fd, b, 127)));
	printf("read 0 bytes: %s\n", res(sys_read(fd, b, 0)));
	printf("write: %s\n", res(sys_write(fd, b, 8)));
	printf("pread: %s\n", res(sys_pread64(fd, b, 128, 0)));
	printf("lseek: %s\n", res(sys_lseek(fd, 0, 0)));
}

static void readiness(int fd)
{
	int ep = (int)rt_syscall(SYS_epoll_create, 1);
	uint32_t ev[3] = { POLLIN, 0x1234, 0 }, out[6];
	printf("epoll_ctl add: %s\n", res(rt_syscall(SYS_epoll_ctl, ep, 1, fd, ev)));
	uint32_t set[32];
	struct timeval tv = { 0, 0 };
	printf("poll, nothing pending: %x\n", readable(fd));
	memset(set, 0, sizeof set);
	set[fd / 32] |= 1u << (fd % 32);
	printf("select, nothing pending: %ld\n", rt_syscall(SYS_newselect, fd + 1, set, 0, 0, &tv));
	printf("epoll_wait, nothing pending: %ld\n", rt_syscall(SYS_epoll_wait, ep, out, 2, 0));
	sys_kill(me, SIGUSR1_);
	printf("poll, SIGUSR1 pending: %x\n", readable(fd));
	memset(set, 0, sizeof set);
	set[fd / 32] |= 1u << (fd % 32);
	tv.tv_sec = 0;
	long r = rt_syscall(SYS_newselect, fd + 1, set, 0, 0, &tv);
	printf("select: %ld, set %d\n", r, (set[fd / 32] >> (fd % 32)) & 1);
	r = rt_syscall(SYS_epoll_wait, ep, out, 2, 0);
	printf("epoll_wait: %ld, events %x data %x\n", r, out[0], out[1]);
	rd("read", fd, 3, 0);
	printf("poll after the read: %x\n", readable(fd));
	printf("epoll_wait after the read: %ld\n", rt_syscall(SYS_epoll_wait, ep, out, 2, 0));
	sys_close(ep);
}

static void records(int fd)
{
	sys_kill(me, SIGUSR2_);
	sys_kill(me, SIGUSR1_);
	rd("two pending, room for three", fd, 3, 0);
	sys_kill(me, SIGUSR2_);
	sys_kill(me, SIGUSR1_);
	rd("two pending, room for one", fd, 1, 0);
	rd("the other", fd, 1, 0);
	/* a fault signal sent by kill comes before a lower signal */
	sys_kill(me, SIGUSR1_);
	sys_kill(me, SIGSEGV_);
	rd("SIGUSR1 and SIGSEGV pending", fd, 2, 0);
	printf("sigqueue: %s\n", res(queue(me, SIGUSR1_, -1, 4242)));
	rd("a queued value", fd, 1, 0);
	queue(me, SIGUSR2_, -1, -7);
	rd("a negative queued value", fd, 1, 0);
	rt_syscall(SYS_tkill, rt_syscall(SYS_gettid_), SIGUSR1_);
	rd("tkill", fd, 1, 0);
	/* readv: the record may span buffers */
	char a[100], b[100];
	struct iovec iov[2] = { { a, 100 }, { b, 100 } };
	sys_kill(me, SIGUSR2_);
	long r = sys_readv(fd, iov, 2);
	struct ssi s;
	memcpy(&s, a, 100);
	memcpy((char *)&s + 100, b, 28);
	printf("readv 100+100: %s, signo %u code %d\n", r < 0 ? res(r) : "128", s.signo, s.code);
	struct iovec small[2] = { { a, 60 }, { b, 60 } };
	sys_kill(me, SIGUSR2_);
	printf("readv 60+60: %s\n", res(sys_readv(fd, small, 2)));
	rd("still pending", fd, 1, 0);
	/* a signal whose default action is to be ignored is kept while blocked */
	int w = (int)sfd(-1, BIT(SIGWINCH_), SFD_NONBLOCK);
	sys_kill(me, SIGWINCH_);
	rd("SIGWINCH (ignored by default, blocked)", w, 1, 0);
	sys_close(w);
	/* EFAULT: the signal is taken all the same */
	sys_kill(me, SIGUSR1_);
	printf("read into a bad buffer: %s\n", res(sys_read(fd, (void *)16, 128)));
	rd("after it", fd, 1, 0);
}

static void masks(int fd)
{
	sys_kill(me, SIGUSR1_);
	printf("new mask SIGUSR2: %s\n", sfd(fd, BIT(SIGUSR2_), 0) == fd ? "the same fd" : "?");
	rd("SIGUSR1 pending, not in the mask", fd, 1, 0);
	printf("poll: %x\n", readable(fd));
	sys_kill(me, SIGUSR2_);
	printf("poll, SIGUSR2 pending: %x\n", readable(fd));
	rd("read", fd, 2, 0);
	printf("new mask SIGUSR1, with SFD_NONBLOCK and SFD_CLOEXEC: %s\n",
	       sfd(fd, BIT(SIGUSR1_), SFD_NONBLOCK | SFD_CLOEXEC) == fd ? "the same fd" : "?");
	printf("flags unchanged: F_GETFD %ld\n", sys_fcntl(fd, 1, 0));
	rd("read", fd, 1, 0);
	printf("new mask, bad flags: %s\n", res(sfd(fd, BIT(SIGUSR1_), 0x10)));
	printf("new mask, bad pointer: %s\n", res(rt_syscall(SYS_signalfd4, fd, 16, 8, 0)));
	rd("nothing left", fd, 1, 0);
}

static void waits(void)
{
	int fd = (int)sfd(-1, BIT(SIGUSR1_) | BIT(SIGCHLD_) | BIT(SIGRTMIN_), 0);
	/* a blocking read woken by another process's signal */
	fflush_stdout();
	long c = sys_fork();
	if (c == 0) {
		sleep_ms(30);
		sys_kill(rt_syscall(64 /* getppid */), SIGUSR1_);
		_exit(7);
	}
	rd("blocking read woken by the child's kill", fd, 1, c);
	rd("blocking read of its SIGCHLD", fd, 1, c);
	int st;
	long w = sys_waitpid((int)c, &st, 0);
	printf("waitpid: %s, status %d\n", w == c ? "the child" : "?", (st >> 8) & 0xff);

	/* a blocking poll, then a blocking epoll_wait, woken by another process's signal */
	for (int round = 0; round < 2; round++) {
		int ep = (int)rt_syscall(SYS_epoll_create, 1);
		uint32_t ev[3] = { POLLIN, 5, 0 }, out[3];
		rt_syscall(SYS_epoll_ctl, ep, 1, fd, ev);
		fflush_stdout();
		c = sys_fork();
		if (c == 0) {
			sleep_ms(30);
			sys_kill(rt_syscall(64), SIGUSR1_);
			_exit(0);
		}
		if (round == 0) {
			struct pollfd pf = { fd, POLLIN, 0 };
			long pr = sys_poll(&pf, 1, -1);
			printf("blocking poll woken by the child's kill: %ld, revents %x\n", pr, pf.revents);
		} else {
			long er = rt_syscall(SYS_epoll_wait, ep, out, 1, -1);
			printf("blocking epoll_wait woken by the child's kill: %ld, data %u\n", er, out[1]);
		}
		rd("read", fd, 1, c);
		rd("its SIGCHLD", fd, 1, c);
		sys_waitpid((int)c, &st, 0);
		sys_close(ep);
	}

	/* a handled signal outside the mask interrupts a blocking read */
	handle(SIGALRM_, (void *)on_alarm, 0);
	alarm_ms(20);
	rd("blocking read, SIGALRM handled", fd, 1, 0);
	printf("handler ran: %d\n", handled);
	handled = 0;
	/* with SA_RESTART the read goes on until a signal of the mask comes */
	handle(SIGALRM_, (void *)on_alarm, SA_RESTART_);
	fflush_stdout();
	c = sys_fork();
	if (c == 0) {
		sleep_ms(80);
		sys_kill((long)rt_syscall(64), SIGUSR1_);
		_exit(0);
	}
	alarm_ms(20);
	rd("blocking read, SA_RESTART handler", fd, 1, c);
	printf("handler ran: %d\n", handled);
	rd("its SIGCHLD", fd, 1, c);
	sys_waitpid((int)c, &st, 0);

	/* a POSIX timer's signal */
	struct { uint32_t value; int signo, notify, tid; uint32_t pad[12]; } sev = { 99, SIGRTMIN_, 0, 0, { 0 } };
	int timer = -1;
	printf("timer_create: %s\n", res(rt_syscall(SYS_timer_create, 1, &sev, &timer)));
	long spec[4] = { 0, 0, 0, 10000000 };
	rt_syscall(SYS_timer_settime, timer, 0, spec, 0);
	struct ssi s;
	long r = sys_read(fd, &s, sizeof s);
	printf("timer: %s, signo %s code %d tid is the timer %d overrun %u int %d ptr %llx\n", r == 128 ? "128" : res(r),
	       s.signo == SIGRTMIN_ ? "SIGRTMIN" : "?", s.code, s.tid == (uint32_t)timer, s.overrun, s.value,
	       (unsigned long long)s.ptr);
	sys_close(fd);
}

static void forked(int fd)
{
	/* the child reads its own signals through the inherited descriptor */
	sys_kill(me, SIGUSR2_);
	fflush_stdout();
	long c = sys_fork();
	if (c == 0) {
		me = sys_getpid();
		printf("child: poll, the parent's SIGUSR2 is not the child's: %x\n", readable(fd));
		sys_kill(me, SIGUSR1_);
		printf("child: poll, its own SIGUSR1: %x\n", readable(fd));
		rd("child: read", fd, 2, 0);
		exit(0);
	}
	int st;
	sys_waitpid((int)c, &st, 0);
	printf("parent: poll: %x\n", readable(fd));
	rd("parent: read", fd, 2, 0);
	int cfd = (int)sfd(-1, BIT(SIGCHLD_), SFD_NONBLOCK);
	rd("parent: the child's SIGCHLD", cfd, 1, c);
	sys_close(cfd);
}

int main(void)
{
	me = sys_getpid();
	sigmask(0, BIT(SIGUSR1_) | BIT(SIGUSR2_) | BIT(SIGSEGV_) | BIT(SIGCHLD_) | BIT(SIGWINCH_) | BIT(SIGRTMIN_));
	errors();
	int fd = (int)sfd(-1, BIT(SIGUSR1_) | BIT(SIGUSR2_) | BIT(SIGSEGV_), SFD_NONBLOCK);
	printf("signalfd4 SFD_NONBLOCK:\n");
	descriptor(fd, 1);
	int fd2 = (int)rt_syscall(SYS_signalfd, -1, &(uint64_t){ BIT(SIGUSR1_) }, 8);
	printf("signalfd:\n");
	descriptor(fd2, 0);
	int fd3 = (int)sfd(-1, BIT(SIGUSR1_), SFD_CLOEXEC);
	printf("signalfd4 SFD_CLOEXEC: F_GETFD %ld\n", sys_fcntl(fd3, 1, 0));
	sys_close(fd2);
	sys_close(fd3);
	readiness(fd);
	records(fd);
	forked(fd);
	masks(fd);
	sys_close(fd);
	waits();
	return 0;
}
