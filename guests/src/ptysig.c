/*
 * ptysig.c - the signals of a pseudo-terminal's line discipline and job control.
 * A child makes a new session with the slave as its controlling terminal (it is the
 * foreground group); the parent, through the master:
 *  - ISIG characters: VINTR, VQUIT, VSUSP written to the master send SIGINT, SIGQUIT,
 *    SIGTSTP to the foreground group (si_code SI_KERNEL), flush the pending input (not
 *    under NOFLSH) and echo as ^C, ^\, ^Z; after VLNEXT, or with ISIG off, the
 *    character is data; the termios reads back as set; SIGTSTP's default action in an
 *    orphaned group (the leader's: its parent is in another session) is discarded;
 *  - job control: a background group's read gets SIGTTIN (EINTR with a handler, EIO
 *    if SIGTTIN is ignored or blocked), its tcsetattr, TCFLSH and TIOCSPGRP get
 *    SIGTTOU, its write under TOSTOP gets SIGTTOU (goes on if ignored or blocked); in
 *    an orphaned group they are EIO;
 *  - the master's close: the session leader gets SIGHUP and SIGCONT, the slave reads
 *    0, writes EIO, its ioctls EIO, /dev/tty is gone.
 * Each step waits for the other side through pipes; pids are printed as relations.
 */
#include "rt.h"

#define SYS_setsid 66
#define SYS_setpgid_ 57
#define SYS_getppid_ 64
#define SYS_getpgrp_ 65
#define SYS_rt_sigaction_ 174
#define SYS_rt_sigprocmask_ 175
#define SYS_rt_sigpending_ 176
#define SYS_rt_sigsuspend_ 179

#define SA_SIGINFO_ 4
#define SA_RESTORER_ 0x04000000
#define SIG_IGN_ ((void *)1)

#define O_NOCTTY_ 0400

#define TCGETS 0x5401
#define TCSETS 0x5402
#define TCFLSH 0x540b
#define TIOCSCTTY 0x540e
#define TIOCGPGRP 0x540f
#define TIOCSPGRP 0x5410
#define TIOCGPTN 0x80045430
#define TIOCSPTLCK 0x40045431

#define ISIG 0001
#define ICANON 0002
#define NOFLSH 0200
#define TOSTOP 0400

#define SIGHUP_ 1
#define SIGINT_ 2
#define SIGQUIT_ 3
#define SIGCONT_ 18
#define SIGTSTP_ 20
#define SIGTTIN_ 21
#define SIGTTOU_ 22

struct termios {
	uint32_t c_iflag, c_oflag, c_cflag, c_lflag;
	uint8_t c_line;
	uint8_t c_cc[19];
};

static const char *res(long r)
{
	return errno_str(r);
}

static volatile uint32_t got;	/* signals handled, by bit */
static volatile int codes[32];	/* their si_code */

static void on_sig(int sig, int *si, void *uc)
{
	got |= 1u << sig;
	codes[sig] = si[2];
}

static void handle(int sig)
{
	struct ksigaction a = { (void *)on_sig, SA_SIGINFO_ | SA_RESTORER_, (void *)restore_rt, { 0, 0 } };
	rt_syscall(SYS_rt_sigaction_, sig, &a, 0, 8);
}

static void ignore(int sig)
{
	struct ksigaction a = { SIG_IGN_, SA_RESTORER_, (void *)restore_rt, { 0, 0 } };
	rt_syscall(SYS_rt_sigaction_, sig, &a, 0, 8);
}

static void mask(int how, uint32_t bits)
{
	uint32_t set[2] = { bits, 0 };
	rt_syscall(SYS_rt_sigprocmask_, how, set, 0, 8);
}

/* Waits for any handled signal, with every signal unblocked. */
static void suspend(void)
{
	uint32_t none[2] = { 0, 0 };
	rt_syscall(SYS_rt_sigsuspend_, none, 8);
}

/* Escapes s[0..n) for printing. */
static const char *esc(const char *s, int n)
{
	static char out[160];
	int o = 0;
	for (int i = 0; i < n && o < 150; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '\n') {
			out[o++] = '\\';
			out[o++] = 'n';
		} else if (c == '\r') {
			out[o++] = '\\';
			out[o++] = 'r';
		} else if (c == '\b') {
			out[o++] = '\\';
			out[o++] = 'b';
		} else if (c < 32 || c >= 127) {
			o += snprintf(out + o, 8, "\\x%02x", c);
		} else {
			out[o++] = (char)c;
		}
	}
	out[o] = 0;
	return out;
}

/* Reads one line, a byte at a time (up to 2 s of waiting); its length. */
static int read_line(int fd, char *buf, int len)
{
	int got_n = 0;
	while (got_n < len - 1) {
		struct pollfd p = { fd, POLLIN, 0 };
		if (sys_poll(&p, 1, 2000) <= 0 || sys_read(fd, buf + got_n, 1) != 1)
			break;
		if (buf[got_n++] == '\n')
			break;
	}
	buf[got_n] = 0;
	return got_n;
}

static int rep[2];	/* child to parent: report lines */
static int od[2];	/* the orphan to the leader: reported */
static int master;

/* A report line to the parent. */
static void say(const char *fmt, ...)
{
	char line[200];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	sys_write(rep[1], line, n);
}

/* The parent prints the next report line. */
static void relay(void)
{
	char line[200];
	read_line(rep[0], line, sizeof line);
	printf("%s", line);
}

/* The parent prints what the master reads up to the next newline. */
static void echo_line(const char *what)
{
	char line[200];
	int n = read_line(master, line, sizeof line);
	printf("  %s: %s\n", what, esc(line, n));
}

static void set_lflag(uint32_t on, uint32_t off)
{
	struct termios t;
	sys_ioctl(master, TCGETS, &t);
	t.c_lflag = (t.c_lflag | on) & ~off;
	sys_ioctl(master, TCSETS, &t);
}

/* The ISIG characters, in the session leader (the foreground group). */
static void leader_isig(int s)
{
	static const int sigs[3] = { SIGINT_, SIGQUIT_, SIGTSTP_ };
	uint32_t all = (1u << (SIGINT_ - 1)) | (1u << (SIGQUIT_ - 1)) | (1u << (SIGTSTP_ - 1));
	char buf[64];
	for (int i = 0; i < 3; i++)
		handle(sigs[i]);
	mask(0 /* SIG_BLOCK */, all);
	/* One round per character, then one under NOFLSH. */
	for (int i = 0; i < 4; i++) {
		got = 0;
		say("leader: waiting\n");
		suspend();
		int sig = i < 3 ? sigs[i] : SIGINT_;
		say("leader: got %x, the expected one %d, si_code %x\n", got, got == (1u << sig), codes[sig]);
		long r = sys_read(s, buf, sizeof buf);
		say("leader: then reads %s \"%s\"\n", res(r), esc(buf, r > 0 ? r : 0));
	}
	/* ISIG off, then VLNEXT: the characters are data. */
	for (int i = 0; i < 2; i++) {
		got = 0;
		say("leader: reading\n");
		long r = sys_read(s, buf, sizeof buf);
		uint32_t pend[2] = { 0, 0 };
		rt_syscall(SYS_rt_sigpending_, pend, 8);
		say("leader: reads %s \"%s\", signals %x pending %x\n", res(r), esc(buf, r > 0 ? r : 0), got,
		    pend[0] & all);
	}
	mask(1 /* SIG_UNBLOCK */, all);
	/* SIGTSTP's default action in this group, orphaned (its parent is in another
	 * session): the stop is discarded, the read goes on. */
	struct ksigaction dfl = { 0, SA_RESTORER_, (void *)restore_rt, { 0, 0 } };
	rt_syscall(SYS_rt_sigaction_, SIGTSTP_, &dfl, 0, 8);
	say("leader: reading, SIGTSTP default\n");
	long r = sys_read(s, buf, sizeof buf);
	say("leader: not stopped, reads %s \"%s\"\n", res(r), esc(buf, r > 0 ? r : 0));
}

/* A process of a background group. */
static void background(int s)
{
	char c;
	struct termios t;
	long r;
	uint32_t ttin = 1u << (SIGTTIN_ - 1), ttou = 1u << (SIGTTOU_ - 1);
	int me = (int)rt_syscall(SYS_getpgrp_);

	handle(SIGTTIN_);
	got = 0;
	r = sys_read(s, &c, 1);
	say("bg: read %s, SIGTTIN %d si_code %x\n", res(r), (got >> SIGTTIN_) & 1, codes[SIGTTIN_]);
	ignore(SIGTTIN_);
	say("bg: read with SIGTTIN ignored %s\n", res(sys_read(s, &c, 1)));
	handle(SIGTTIN_);
	mask(0, ttin);
	got = 0;
	r = sys_read(s, &c, 1);
	say("bg: read with SIGTTIN blocked %s, signals %x\n", res(r), got);
	mask(1, ttin);

	r = sys_write(s, "g1\n", 3);
	say("bg: write without TOSTOP %s\n", res(r));

	handle(SIGTTOU_);
	sys_ioctl(s, TCGETS, &t);
	t.c_lflag |= TOSTOP;
	got = 0;
	r = sys_ioctl(s, TCSETS, &t);
	say("bg: tcsetattr %s, SIGTTOU %d\n", res(r), (got >> SIGTTOU_) & 1);
	got = 0;
	r = sys_ioctl(s, TCFLSH, (void *)0);
	say("bg: TCFLSH %s, SIGTTOU %d\n", res(r), (got >> SIGTTOU_) & 1);
	got = 0;
	r = sys_ioctl(s, TIOCSPGRP, &me);
	say("bg: TIOCSPGRP %s, SIGTTOU %d\n", res(r), (got >> SIGTTOU_) & 1);
	ignore(SIGTTOU_);
	r = sys_ioctl(s, TCSETS, &t);
	say("bg: tcsetattr TOSTOP with SIGTTOU ignored %s\n", res(r));
	r = sys_write(s, "g2\n", 3);
	say("bg: write under TOSTOP, SIGTTOU ignored %s\n", res(r));
	handle(SIGTTOU_);
	got = 0;
	r = sys_write(s, "gx\n", 3);
	say("bg: write under TOSTOP %s, SIGTTOU %d si_code %x\n", res(r), (got >> SIGTTOU_) & 1,
	    codes[SIGTTOU_]);
	mask(0, ttou);
	r = sys_write(s, "g3\n", 3);
	say("bg: write under TOSTOP, SIGTTOU blocked %s\n", res(r));
	mask(1, ttou);

	/* A child in this group outlives it: the group is orphaned. */
	long me_pid = sys_getpid();
	if (sys_fork() == 0) {
		handle(SIGTTIN_);
		handle(SIGTTOU_);
		for (int i = 0; i < 400 && rt_syscall(SYS_getppid_) == me_pid; i++) {
			struct timespec ts = { 0, 5000000 };
			sys_nanosleep(&ts, 0);
		}
		got = 0;
		long a = sys_read(s, &c, 1);
		long b = sys_write(s, "gy\n", 3);
		long d = sys_ioctl(s, TCSETS, &t);
		say("orphan: read %s, write %s, tcsetattr %s, signals %x\n", res(a), res(b), res(d), got);
		sys_write(od[1], "", 1);
		_exit(0);
	}
	_exit(0);
}

static void leader(int s)
{
	long pid = sys_getpid();
	long r = rt_syscall(SYS_setsid);
	long sc = sys_ioctl(s, TIOCSCTTY, 0);
	int v = -1;
	sys_ioctl(s, TIOCGPGRP, &v);
	say("leader: setsid %d, TIOCSCTTY %s, foreground is me %d\n", r == pid, res(sc), v == pid);
	leader_isig(s);

	/* A background group. */
	sys_pipe(od);
	long g = sys_fork();
	if (g == 0) {
		sys_close(od[0]);
		rt_syscall(SYS_setpgid_, 0, 0);
		background(s);
	}
	sys_close(od[1]);
	char b;
	sys_read(od[0], &b, 1); /* the orphan has reported */
	int st;
	sys_waitpid(g, &st, 0);
	say("leader: background child status %x\n", st);

	/* The master's close. */
	uint32_t hc = (1u << (SIGHUP_ - 1)) | (1u << (SIGCONT_ - 1));
	handle(SIGHUP_);
	handle(SIGCONT_);
	mask(0, hc);
	got = 0;
	say("leader: waiting for the hangup\n");
	suspend();
	mask(1, hc);
	say("leader: SIGHUP %d si_code %x, SIGCONT %d si_code %x\n", (got >> SIGHUP_) & 1, codes[SIGHUP_],
	    (got >> SIGCONT_) & 1, codes[SIGCONT_]);
	char c;
	long rd = sys_read(s, &c, 1);
	long wr = sys_write(s, "z", 1);
	v = -1;
	long gp = sys_ioctl(s, TIOCGPGRP, &v);
	long sp = sys_ioctl(s, TIOCSPGRP, &v);
	struct termios t;
	long tg = sys_ioctl(s, TCGETS, &t);
	long tty = sys_open("/dev/tty", O_RDWR, 0);
	say("leader: after the hangup read %s, write %s, TIOCGPGRP %s, TIOCSPGRP %s, TCGETS %s, /dev/tty %s\n",
	    res(rd), res(wr), res(gp), res(sp), res(tg), res(tty));
	_exit(3);
}

int main(void)
{
	long m = sys_open("/dev/ptmx", O_RDWR | O_NOCTTY_, 0);
	if (m < 0) {
		printf("open /dev/ptmx %s\n", res(m));
		return 1;
	}
	master = (int)m;
	unsigned n = 0;
	int zero = 0;
	sys_ioctl(m, TIOCGPTN, &n);
	sys_ioctl(m, TIOCSPTLCK, &zero);
	char path[32];
	snprintf(path, sizeof path, "/dev/pts/%u", n);
	long s = sys_open(path, O_RDWR | O_NOCTTY_, 0);
	printf("open slave %s\n", s >= 0 ? "ok" : res(s));
	if (s < 0)
		return 1;
	struct termios t;
	sys_ioctl(m, TCGETS, &t);
	printf("ISIG %d ICANON %d, VINTR %x VQUIT %x VSUSP %x\n", (t.c_lflag & ISIG) != 0,
	       (t.c_lflag & ICANON) != 0, t.c_cc[0], t.c_cc[1], t.c_cc[10]);
	sys_pipe(rep);
	long pid = sys_fork();
	if (pid == 0) {
		sys_close((int)m);
		sys_close(rep[0]);
		leader((int)s);
	}
	sys_close(rep[1]);
	sys_close((int)s);
	relay();

	/* ^C, ^\, ^Z after pending input, then a line. */
	static const char chars[3] = { 3, 28, 26 };
	for (int i = 0; i < 4; i++) {
		relay(); /* waiting */
		if (i == 3) {
			set_lflag(NOFLSH, 0);
			printf("NOFLSH:\n");
		}
		char w[3] = { 'a', 'b', chars[i < 3 ? i : 0] };
		printf("master writes %s\n", res(sys_write(m, w, 3)));
		relay();
		sys_write(m, "cd\n", 3);
		relay();
		echo_line("echo");
	}
	set_lflag(0, NOFLSH | ISIG);
	sys_ioctl(m, TCGETS, &t);
	printf("ISIG off: reads back ISIG %d\n", (t.c_lflag & ISIG) != 0);
	relay();
	sys_write(m, "x\003y\n", 4);
	relay();
	echo_line("echo");
	set_lflag(ISIG, 0);
	sys_ioctl(m, TCGETS, &t);
	printf("ISIG on: reads back ISIG %d\n", (t.c_lflag & ISIG) != 0);
	relay();
	sys_write(m, "\026\003\n", 3);
	relay();
	echo_line("echo");
	relay();
	sys_write(m, "\032", 1);
	sys_write(m, "ok\n", 3);
	relay();
	echo_line("echo");

	/* The background group: 11 report lines, three writes that went through. */
	for (int i = 0; i < 11; i++)
		relay();
	echo_line("master reads");
	echo_line("master reads");
	echo_line("master reads");
	relay(); /* the orphan's */
	relay(); /* the background child's status */
	set_lflag(0, TOSTOP);

	relay(); /* waiting for the hangup */
	sys_close((int)m);
	relay();
	relay();
	int st = 0;
	sys_waitpid(pid, &st, 0);
	printf("leader status %x\n", st);
	return 0;
}
