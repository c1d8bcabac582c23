/*
 * capmisc.c - membarrier (the commands, registration before the private expedited
 * ones, what fork keeps and exec clears), mlock, munlock, mlock2, mlockall and
 * munlockall (ranges, holes, pages that cannot be brought in, flags, RLIMIT_MEMLOCK
 * without CAP_IPC_LOCK), capget and capset (versions, pids, dropping and not adding,
 * what the user-id calls and exec do to the sets, /proc/self/status), and pidfds
 * (pidfd_open, pidfd_send_signal, pidfd_getfd, waitid's P_PIDFD, readiness when the
 * process ends, the errors before and after it is reaped). The host's capabilities
 * are never printed, only relations between sets; pids only as relations.
 */
#include "rt.h"

#define SYS_execve 11
#define SYS_getppid 64
#define SYS_setrlimit 75
#define SYS_setfsuid32 215
#define SYS_setresuid32 208
#define SYS_mlock 150
#define SYS_munlock 151
#define SYS_mlockall 152
#define SYS_munlockall 153
#define SYS_rt_sigprocmask_ 175
#define SYS_rt_sigtimedwait_ 177
#define SYS_capget 184
#define SYS_capset 185
#define SYS_ugetrlimit 191
#define SYS_gettid_ 224
#define SYS_epoll_create 254
#define SYS_epoll_ctl 255
#define SYS_epoll_wait 256
#define SYS_waitid 284
#define SYS_membarrier 375
#define SYS_mlock2 376
#define SYS_pidfd_send_signal 424
#define SYS_pidfd_open 434
#define SYS_pidfd_getfd 438
#define SYS_readlink 85

#define SIGUSR1_ 10
#define SIGUSR2_ 12
#define SIGCHLD_ 17
#define O_DIRECTORY_ 0200000
#define O_EXCL_ 0200
#define P_PIDFD 3
#define WEXITED_ 4
#define V1 0x19980330
#define V2 0x20071026
#define V3 0x20080522
#define CAP_IPC_LOCK 14
#define NO_PID 0x3fffffff
#define BAD ((void *)16)

static const char *res(long r)
{
	static char buf[24];
	switch (r) {
	case 0: return "ok";
	case -1: return "EPERM";
	case -3: return "ESRCH";
	case -9: return "EBADF";
	case -10: return "ECHILD";
	case -11: return "EAGAIN";
	case -12: return "ENOMEM";
	case -14: return "EFAULT";
	case -22: return "EINVAL";
	case -29: return "ESPIPE";
	default:
		if (r > 0)
			return "ok";
		snprintf(buf, sizeof buf, "%ld", r);
		return buf;
	}
}

static long me;

static int wait_child(long pid)
{
	int st = 0;
	sys_waitpid((int)pid, &st, 0);
	return (st & 0x7f) ? 128 + (st & 0x7f) : (st >> 8) & 0xff;
}

/* ---- membarrier ---------------------------------------------------------------- */

static long mb(long cmd, long flags, long cpu) { return rt_syscall(SYS_membarrier, cmd, flags, cpu); }

static void membarrier_tests(void)
{
	printf("membarrier QUERY: %lx\n", mb(0, 0, 0));
	printf("QUERY with flags 1: %s\n", res(mb(0, 1, 0)));
	printf("GET_REGISTRATIONS: %lx\n", mb(512, 0, 0));
	printf("GLOBAL: %s, GLOBAL_EXPEDITED: %s\n", res(mb(1, 0, 0)), res(mb(2, 0, 0)));
	printf("PRIVATE_EXPEDITED unregistered: %s\n", res(mb(8, 0, 0)));
	printf("PRIVATE_EXPEDITED_SYNC_CORE unregistered: %s\n", res(mb(32, 0, 0)));
	printf("PRIVATE_EXPEDITED_RSEQ unregistered: %s\n", res(mb(128, 0, 0)));
	printf("PRIVATE_EXPEDITED_RSEQ FLAG_CPU unregistered: %s\n", res(mb(128, 1, 0)));
	printf("PRIVATE_EXPEDITED with FLAG_CPU: %s\n", res(mb(8, 1, 0)));
	printf("PRIVATE_EXPEDITED with flags 2: %s\n", res(mb(8, 2, 0)));
	printf("unknown commands 3, 1024, -1: %s %s %s\n", res(mb(3, 0, 0)), res(mb(1024, 0, 0)), res(mb(-1, 0, 0)));
	printf("REGISTER_PRIVATE_EXPEDITED_SYNC_CORE: %s\n", res(mb(64, 0, 0)));
	printf("GET_REGISTRATIONS: %lx\n", mb(512, 0, 0));
	printf("PRIVATE_EXPEDITED_SYNC_CORE: %s\n", res(mb(32, 0, 0)));
	printf("PRIVATE_EXPEDITED (its own registration still missing): %s\n", res(mb(8, 0, 0)));
	printf("REGISTER_PRIVATE_EXPEDITED: %s, twice: %s\n", res(mb(16, 0, 0)), res(mb(16, 0, 0)));
	printf("PRIVATE_EXPEDITED: %s\n", res(mb(8, 0, 0)));
	printf("REGISTER_GLOBAL_EXPEDITED: %s\n", res(mb(4, 0, 0)));
	printf("GET_REGISTRATIONS: %lx\n", mb(512, 0, 0));
	fflush_stdout();
	long c = sys_fork();
	if (c == 0) {
		printf("fork child: GET_REGISTRATIONS %lx, PRIVATE_EXPEDITED %s, RSEQ %s\n", mb(512, 0, 0),
		       res(mb(8, 0, 0)), res(mb(128, 0, 0)));
		exit(0);
	}
	wait_child(c);
	printf("REGISTER_PRIVATE_EXPEDITED_RSEQ: %s\n", res(mb(256, 0, 0)));
	printf("PRIVATE_EXPEDITED_RSEQ: %s, FLAG_CPU 0: %s, FLAG_CPU 9999: %s, flags 2: %s\n", res(mb(128, 0, 0)),
	       res(mb(128, 1, 0)), res(mb(128, 1, 9999)), res(mb(128, 2, 0)));
	printf("GET_REGISTRATIONS: %lx\n", mb(512, 0, 0));
}

/* ---- mlock ---------------------------------------------------------------------- */

static long ml(void *a, unsigned long n) { return rt_syscall(SYS_mlock, a, n); }

static void mlock_tests(void)
{
	char *a = (char *)sys_mmap2(0, 4 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	sys_munmap(a + 2 * 4096, 4096);
	printf("mlock a page: %s\n", res(ml(a, 4096)));
	printf("mlock unaligned within two pages: %s\n", res(ml(a + 100, 4000)));
	printf("mlock spilling into a hole: %s\n", res(ml(a + 4096 + 100, 4000)));
	printf("mlock over a hole: %s\n", res(ml(a, 4 * 4096)));
	printf("mlock length 0: %s, in the hole: %s, unaligned in the hole: %s\n", res(ml(a, 0)), res(ml(a + 2 * 4096, 0)),
	       res(ml(a + 2 * 4096 + 1, 0)));
	printf("mlock unmapped: %s, huge: %s, past 4 GiB: %s\n", res(ml((void *)0x1000, 4096)), res(ml(a, 0xfffff000u)),
	       res(ml((void *)0xfffff000u, 0x2000)));
	printf("munlock: %s, over the hole: %s, never locked: %s\n", res(rt_syscall(SYS_munlock, a, 4096)),
	       res(rt_syscall(SYS_munlock, a, 4 * 4096)), res(rt_syscall(SYS_munlock, a + 3 * 4096, 4096)));
	printf("mlock2 0: %s, MLOCK_ONFAULT: %s, flags 2: %s, flags 2 unmapped: %s\n",
	       res(rt_syscall(SYS_mlock2, a, 4096, 0)), res(rt_syscall(SYS_mlock2, a, 4096, 1)),
	       res(rt_syscall(SYS_mlock2, a, 4096, 2)), res(rt_syscall(SYS_mlock2, 0x1000, 4096, 2)));
	char *none = (char *)sys_mmap2(0, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *wo = (char *)sys_mmap2(0, 4096, PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *xo = (char *)sys_mmap2(0, 4096, PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	printf("mlock PROT_NONE: %s, with MLOCK_ONFAULT: %s, munlock: %s\n", res(ml(none, 4096)),
	       res(rt_syscall(SYS_mlock2, none, 4096, 1)), res(rt_syscall(SYS_munlock, none, 4096)));
	printf("mlock write-only: %s, exec-only: %s\n", res(ml(wo, 4096)), res(ml(xo, 4096)));
	int fd = (int)sys_open("small", O_RDWR | O_CREAT | O_TRUNC, 0600);
	sys_write(fd, "x", 1);
	char *f = (char *)sys_mmap2(0, 3 * 4096, PROT_READ, MAP_SHARED, fd, 0);
	printf("mlock a file's page: %s, past its end: %s, with MLOCK_ONFAULT: %s\n", res(ml(f, 4096)),
	       res(ml(f, 3 * 4096)), res(rt_syscall(SYS_mlock2, f, 3 * 4096, 1)));
	sys_close(fd);
	sys_unlink("small");
	char *b = (char *)sys_mmap2(0, 3 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	sys_mprotect(b + 4096, 4096, PROT_NONE);
	sys_munmap(b + 2 * 4096, 4096);
	printf("mlock over PROT_NONE then a hole: %s\n", res(ml(b, 3 * 4096)));
	printf("mlockall 0: %s, 8: %s, MCL_ONFAULT alone: %s\n", res(rt_syscall(SYS_mlockall, 0)),
	       res(rt_syscall(SYS_mlockall, 8)), res(rt_syscall(SYS_mlockall, 4)));
	printf("mlockall MCL_CURRENT (PROT_NONE pages too): %s\n", res(rt_syscall(SYS_mlockall, 1)));
	printf("mlockall MCL_FUTURE|MCL_ONFAULT: %s\n", res(rt_syscall(SYS_mlockall, 6)));
	printf("munlockall: %s\n", res(rt_syscall(SYS_munlockall)));
}

struct hdr { uint32_t version; int pid; };
struct data { uint32_t eff, prm, inh; };

static void caps(struct data d[2])
{
	struct hdr h = { V3, 0 };
	rt_syscall(SYS_capget, &h, d);
}

static unsigned long long set64(struct data d[2], int which)
{
	uint32_t lo = which == 0 ? d[0].eff : which == 1 ? d[0].prm : d[0].inh;
	uint32_t hi = which == 0 ? d[1].eff : which == 1 ? d[1].prm : d[1].inh;
	return (unsigned long long)hi << 32 | lo;
}

static long capset_(struct data d[2])
{
	struct hdr h = { V3, 0 };
	return rt_syscall(SYS_capset, &h, d);
}

/* Without CAP_IPC_LOCK (dropped, if held) and with a memory-lock limit of 1 MiB. */
static void mlock_limits(void)
{
	fflush_stdout();
	long c = sys_fork();
	if (c == 0) {
		struct data d[2];
		caps(d);
		d[0].eff &= ~(1u << CAP_IPC_LOCK);
		printf("child: drop CAP_IPC_LOCK: %s\n", res(capset_(d)));
		uint32_t lim[2];
		rt_syscall(SYS_ugetrlimit, 8, lim);
		lim[0] = 1 << 20;
		printf("child: RLIMIT_MEMLOCK 1 MiB: %s\n", res(rt_syscall(SYS_setrlimit, 8, lim)));
		char *big = (char *)sys_mmap2(0, 4 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		printf("child: mlock 2 MiB: %s, 512 KiB: %s, 1 MiB: %s\n", res(ml(big, 2 << 20)), res(ml(big, 512 << 10)),
		       res(ml(big, 1 << 20)));
		printf("child: mlock2 2 MiB MLOCK_ONFAULT: %s\n", res(rt_syscall(SYS_mlock2, big, 2 << 20, 1)));
		printf("child: mlockall MCL_CURRENT: %s, MCL_FUTURE: %s\n", res(rt_syscall(SYS_mlockall, 1)),
		       res(rt_syscall(SYS_mlockall, 2)));
		printf("child: munlockall: %s\n", res(rt_syscall(SYS_munlockall)));
		lim[0] = 0;
		rt_syscall(SYS_setrlimit, 8, lim);
		printf("child: limit 0: mlock %s, mlock2 %s, unmapped %s, munlock %s, mlockall %s, mlockall 8 %s\n",
		       res(ml(big, 4096)), res(rt_syscall(SYS_mlock2, big, 4096, 0)), res(ml((void *)0x1000, 4096)),
		       res(rt_syscall(SYS_munlock, big, 4096)), res(rt_syscall(SYS_mlockall, 1)),
		       res(rt_syscall(SYS_mlockall, 8)));
		exit(0);
	}
	wait_child(c);
}

/* ---- capget and capset ------------------------------------------------------------ */

/* CapEff from /proc/self/status, or ~0 if it is not there. */
static unsigned long long status_capeff(void)
{
	static char buf[4096];
	int fd = (int)sys_open("/proc/self/status", O_RDONLY, 0);
	long n = 0, r;
	while (n < (long)sizeof buf - 1 && (r = sys_read(fd, buf + n, sizeof buf - 1 - n)) > 0)
		n += r;
	buf[n] = 0;
	sys_close(fd);
	for (char *l = buf; *l;) {
		char *e = strchr(l, '\n');
		if (!e)
			break;
		*e = 0;
		if (strncmp(l, "CapEff:", 7) == 0) {
			unsigned long long v = 0;
			for (char *c = l + 7; *c; c++) {
				if (*c >= '0' && *c <= '9')
					v = v * 16 + (unsigned long long)(*c - '0');
				else if (*c >= 'a' && *c <= 'f')
					v = v * 16 + (unsigned long long)(*c - 'a' + 10);
			}
			return v;
		}
		l = e + 1;
	}
	return ~0ull;
}

static void show_caps(const char *who)
{
	struct data d[2];
	caps(d);
	unsigned long long e = set64(d, 0), p = set64(d, 1), i = set64(d, 2);
	printf("%s: effective %s, effective is permitted %s, inheritable %s, status's CapEff agrees %s\n", who,
	       e ? "some" : "none", e == p ? "yes" : "no", i ? "some" : "none", status_capeff() == e ? "yes" : "no");
}

static void capget_tests(void)
{
	struct hdr h;
	struct data d[2], d3[2];
	caps(d3);
	uint32_t versions[] = { V1, V2, V3, 0, 0x12345678 };
	for (int i = 0; i < 5; i++) {
		h.version = versions[i];
		h.pid = 0;
		memset(d, 0xaa, sizeof d);
		long r = rt_syscall(SYS_capget, &h, d);
		printf("capget version %x: %s, header version now %x, first set as v3's %s, second %s\n", versions[i], res(r),
		       h.version, memcmp(&d[0], &d3[0], sizeof d[0]) == 0 ? "yes" : "no",
		       d[1].eff == 0xaaaaaaaa ? "untouched" : memcmp(&d[1], &d3[1], sizeof d[1]) == 0 ? "as v3's" : "?");
	}
	h.version = 0x12345678;
	h.pid = 0;
	long r = rt_syscall(SYS_capget, &h, 0);
	printf("capget bad version, NULL data: %s, header version now %x\n", res(r), h.version);
	h.version = V3;
	printf("capget NULL data: %s\n", res(rt_syscall(SYS_capget, &h, 0)));
	h.pid = -1;
	printf("capget pid -1: %s\n", res(rt_syscall(SYS_capget, &h, d)));
	h.pid = NO_PID;
	printf("capget no such pid: %s\n", res(rt_syscall(SYS_capget, &h, d)));
	h.pid = (int)me;
	r = rt_syscall(SYS_capget, &h, d);
	printf("capget own pid: %s, same sets %s\n", res(r), memcmp(d, d3, sizeof d) == 0 ? "yes" : "no");
	h.pid = 0;
	printf("capget bad data: %s, bad header: %s, NULL header: %s\n", res(rt_syscall(SYS_capget, &h, BAD)),
	       res(rt_syscall(SYS_capget, BAD, d)), res(rt_syscall(SYS_capget, 0, d)));
	show_caps("capget");

	/* another process's, and its thread id */
	int p2c[2];
	sys_pipe(p2c);
	fflush_stdout();
	long c = sys_fork();
	if (c == 0) {
		char x;
		sys_read(p2c[0], &x, 1);
		_exit(0);
	}
	h.pid = (int)c;
	r = rt_syscall(SYS_capget, &h, d);
	printf("capget of the child: %s, same sets %s\n", res(r), memcmp(d, d3, sizeof d) == 0 ? "yes" : "no");
	sys_write(p2c[1], "x", 1);
	wait_child(c);
	h.pid = (int)c;
	printf("capget of the reaped child: %s\n", res(rt_syscall(SYS_capget, &h, d)));

	/* capset in a child, which may only drop */
	fflush_stdout();
	c = sys_fork();
	if (c == 0) {
		struct data cur[2];
		caps(cur);
		memcpy(d, cur, sizeof d);
		h.version = 0x12345678;
		h.pid = 0;
		r = rt_syscall(SYS_capset, &h, d);
		printf("capset bad version: %s, header version now %x\n", res(r), h.version);
		h.version = V3;
		h.pid = 1;
		printf("capset pid 1: %s\n", res(rt_syscall(SYS_capset, &h, d)));
		h.pid = -1;
		printf("capset pid -1: %s\n", res(rt_syscall(SYS_capset, &h, d)));
		h.pid = (int)sys_getpid();
		printf("capset own pid, same sets: %s\n", res(rt_syscall(SYS_capset, &h, d)));
		h.pid = 0;
		printf("capset bad data: %s, bad header: %s\n", res(rt_syscall(SYS_capset, &h, BAD)),
		       res(rt_syscall(SYS_capset, BAD, d)));
		/* capability 63 is past the last one: ignored */
		d[1].eff |= 0x80000000u;
		d[1].prm |= 0x80000000u;
		d[1].inh |= 0x80000000u;
		printf("capset with capability 63 in every set: %s\n", res(capset_(d)));
		caps(d);
		printf("  sets unchanged: %s\n", memcmp(d, cur, sizeof d) == 0 ? "yes" : "no");
		d[0].eff &= ~1u;
		printf("capset drop effective CAP_CHOWN: %s\n", res(capset_(d)));
		show_caps("  now");
		d[0].eff |= cur[0].eff & 1u;
		printf("capset it back (permitted): %s\n", res(capset_(d)));
		d[0].prm &= ~2u;
		d[0].eff &= ~2u;
		printf("capset drop permitted CAP_DAC_OVERRIDE: %s\n", res(capset_(d)));
		d[0].eff |= 2u;
		printf("capset effective CAP_DAC_OVERRIDE, not permitted: %s\n", res(capset_(d)));
		d[0].eff &= ~2u;
		d[0].prm |= cur[0].prm & 2u;
		printf("capset it back: %s\n", res(capset_(d)));
		d[0].prm &= ~2u;
		d[0].inh |= 2u;
		long r2 = capset_(d);
		printf("capset inheritable CAP_DAC_OVERRIDE, neither permitted nor inheritable: %s\n", r2 == 0 && (cur[0].eff & 0x100u) ? "ok (CAP_SETPCAP)" : r2 == -1 && !(cur[0].eff & 0x100u) ? "EPERM (no CAP_SETPCAP)" : res(r2));
		caps(d);
		caps(d);
		h.version = V1;
		printf("capset version 1 (the upper sets become empty): %s\n", res(rt_syscall(SYS_capset, &h, d)));
		caps(d);
		printf("  upper sets now: %x %x %x\n", d[1].eff, d[1].prm, d[1].inh);
		show_caps("  now");
		exit(0);
	}
	wait_child(c);
}

/* What the user-id calls and exec do to the sets (relations to the sets before). */
static void setuid_tests(char **argv)
{
	fflush_stdout();
	long c = sys_fork();
	if (c == 0) {
		struct data d0[2], d[2];
		caps(d0);
		unsigned long long e0 = set64(d0, 0), p0 = set64(d0, 1);
		long r = rt_syscall(SYS_setresuid32, -1, 1000, -1);
		caps(d);
		printf("seteuid 1000: %s; effective empty %s, permitted kept %s\n", res(r), set64(d, 0) == 0 ? "yes" : "no",
		       set64(d, 1) == p0 ? "yes" : "no");
		r = rt_syscall(SYS_setresuid32, -1, 0, -1);
		caps(d);
		printf("seteuid 0: %s; effective is permitted again %s\n", res(r), set64(d, 0) == set64(d, 1) ? "yes" : "no");
		long old = rt_syscall(SYS_setfsuid32, 1000);
		caps(d);
		printf("setfsuid 1000: old %ld; effective lost exactly the file-system set %s\n", old,
		       set64(d, 0) == (e0 & ~0x10800021full) ? "yes" : "no");
		rt_syscall(SYS_setfsuid32, 0);
		caps(d);
		printf("setfsuid 0: effective back %s\n", set64(d, 0) == e0 ? "yes" : "no");
		/* drop a permitted capability: exec as root brings the bounding set back */
		d[0].prm &= ~2u;
		d[0].eff &= ~2u;
		capset_(d);
		fflush_stdout();
		long g = sys_fork();
		if (g == 0) {
			char *args[] = { argv[0], "--after-exec", 0 };
			rt_syscall(SYS_execve, "/proc/self/exe", args, environ);
			_exit(99);
		}
		wait_child(g);
		r = rt_syscall(SYS_setresuid32, 1000, 1000, 1000);
		caps(d);
		printf("setresuid 1000 1000 1000: %s; every set but inheritable empty %s\n", res(r),
		       set64(d, 0) == 0 && set64(d, 1) == 0 ? "yes" : "no");
		r = rt_syscall(SYS_setresuid32, -1, 0, -1);
		printf("seteuid 0 then: %s\n", res(r));
		exit(0);
	}
	wait_child(c);
}

static void after_exec(void)
{
	struct data d[2];
	caps(d);
	unsigned long long e = set64(d, 0), p = set64(d, 1);
	int fd = (int)sys_open("/proc/self/status", O_RDONLY, 0);
	static char buf[4096];
	long n = sys_read(fd, buf, sizeof buf - 1);
	buf[n > 0 ? n : 0] = 0;
	unsigned long long bnd = 0;
	char *l = buf;
	while (l && *l) {
		if (strncmp(l, "CapBnd:", 7) == 0) {
			for (char *c = l + 7; *c && *c != '\n'; c++)
				if (*c >= '0' && *c <= '9')
					bnd = bnd * 16 + (unsigned long long)(*c - '0');
				else if (*c >= 'a' && *c <= 'f')
					bnd = bnd * 16 + (unsigned long long)(*c - 'a' + 10);
		}
		l = strchr(l, '\n');
		if (l)
			l++;
	}
	printf("after exec (uid %ld euid %ld): permitted is the bounding set %s, effective is permitted %s, "
	       "GET_REGISTRATIONS %lx\n",
	       sys_getuid(), sys_geteuid(), p == bnd ? "yes" : p == 0 ? "no (empty)" : "no", e == p ? "yes" : "no",
	       mb(512, 0, 0));
}

/* ---- pidfds ----------------------------------------------------------------------- */

static long po(long pid, long flags) { return rt_syscall(SYS_pidfd_open, pid, flags); }
static long ss(long fd, long sig, void *info, long flags) { return rt_syscall(SYS_pidfd_send_signal, fd, sig, info, flags); }

static int revents(int fd, int timeout)
{
	struct pollfd pf = { fd, POLLIN, 0 };
	long r = sys_poll(&pf, 1, timeout);
	return r < 0 ? (int)r : pf.revents & POLLIN;
}

static void take(const char *what)
{
	uint32_t set[2] = { 1u << (SIGUSR1_ - 1), 0 }, w[32];
	struct timespec to = { 1, 0 };
	memset(w, 0, sizeof w);
	long s = rt_syscall(SYS_rt_sigtimedwait_, set, w, &to, 8);
	printf("  %s: sigtimedwait %s, code %d, pid %s, value %d\n", what, s == SIGUSR1_ ? "SIGUSR1" : res(s), (int)w[2],
	       w[3] == (uint32_t)me ? "self" : w[3] == 77 ? "77" : "other", (int)w[5]);
}

static void pidfd_tests(void)
{
	printf("pidfd_open 0: %s, -1: %s, bad flags: %s\n", res(po(0, 0)), res(po(-1, 0)), res(po(me, 1)));
	printf("pidfd_open no such pid: %s, with bad flags: %s\n", res(po(NO_PID, 0)), res(po(NO_PID, 1)));
	int fd = (int)po(me, 0);
	int nb = (int)po(me, O_NONBLOCK);
	long fl = sys_fcntl(fd, 3, 0), nfl = sys_fcntl(nb, 3, 0);
	printf("pidfd_open self: F_GETFD %ld, access mode %ld, O_NONBLOCK %d; PIDFD_NONBLOCK: F_GETFD %ld, O_NONBLOCK %d\n",
	       sys_fcntl(fd, 1, 0), fl & 3, (fl & O_NONBLOCK) != 0, sys_fcntl(nb, 1, 0), (nfl & O_NONBLOCK) != 0);
	char path[64], link[64], b[16];
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	long n = rt_syscall(SYS_readlink, path, link, sizeof link - 1);
	link[n > 0 ? n : 0] = 0;
	printf("link: %s; read: %s, write: %s; poll: %d\n", link, res(sys_read(fd, b, 8)), res(sys_write(fd, b, 8)),
	       revents(fd, 0));

	/* to itself */
	uint32_t set[2] = { 1u << (SIGUSR1_ - 1), 0 };
	rt_syscall(SYS_rt_sigprocmask_, 0, set, 0, 8);
	printf("send SIGUSR1 to self: %s\n", res(ss(fd, SIGUSR1_, 0, 0)));
	take("default");
	printf("send with PIDFD_SIGNAL_THREAD: %s\n", res(ss(fd, SIGUSR1_, 0, 1)));
	take("thread");
	printf("send with PIDFD_SIGNAL_THREAD_GROUP: %s\n", res(ss(fd, SIGUSR1_, 0, 2)));
	take("thread group");
	uint32_t info[32] = { 0 };
	info[0] = SIGUSR1_;
	info[2] = (uint32_t)-1;
	info[3] = 77;
	info[5] = 4242;
	printf("send with a siginfo (SI_QUEUE): %s\n", res(ss(fd, SIGUSR1_, info, 0)));
	take("queued");
	info[2] = 0;
	printf("send SI_USER siginfo to self: %s\n", res(ss(fd, SIGUSR1_, info, 0)));
	take("SI_USER");
	printf("send SI_USER siginfo to self's process group: %s\n", res(ss(fd, SIGUSR1_, info, 4)));
	int tfd = (int)po(rt_syscall(SYS_gettid_), O_EXCL_);
	printf("pidfd_open PIDFD_THREAD: %s; send: %s\n", tfd >= 0 ? "ok" : res(tfd), res(ss(tfd, SIGUSR1_, 0, 0)));
	take("thread pidfd");
	int proc = (int)sys_open("/proc/self", O_RDONLY | O_DIRECTORY_, 0);
	printf("send through a /proc/<pid> directory: %s\n", res(ss(proc, SIGUSR1_, 0, 0)));
	take("/proc/<pid>");
	sys_close(proc);
	printf("getfd of its own descriptor: %s\n", res(rt_syscall(SYS_pidfd_getfd, fd, 1, 0)));

	/* a child */
	int p2c[2], c2p[2];
	sys_pipe(p2c);
	sys_pipe(c2p);
	fflush_stdout();
	long c = sys_fork();
	if (c == 0) {
		char x;
		rt_syscall(SYS_rt_sigprocmask_, 0, set, 0, 8);
		sys_read(p2c[0], &x, 1); /* until told */
		me = sys_getpid();
		uint32_t w[32];
		struct timespec to = { 0, 0 };
		memset(w, 0, sizeof w);
		long s = rt_syscall(SYS_rt_sigtimedwait_, set, w, &to, 8);
		char line[120];
		int len = snprintf(line, sizeof line, "child: %s, code %d, value %d\n", s == SIGUSR1_ ? "SIGUSR1" : res(s),
				   (int)w[2], (int)w[5]);
		sys_write(c2p[1], line, (size_t)len);
		sys_read(p2c[0], &x, 1);
		_exit(3);
	}
	int cfd = (int)po(c, 0);
	int cnb = (int)po(c, O_NONBLOCK);
	printf("child's pidfd: poll %d\n", revents(cfd, 0));
	printf("send 0: %s, flags 8: %s, flags 3: %s, bad fd: %s, not a pidfd: %s\n", res(ss(cfd, 0, 0, 0)),
	       res(ss(cfd, 0, 0, 8)), res(ss(cfd, 0, 0, 3)), res(ss(999, 0, 0, 0)), res(ss(0, 0, 0, 0)));
	printf("send signal 65: %s, -1: %s, bad siginfo: %s\n", res(ss(cfd, 65, 0, 0)), res(ss(cfd, -1, 0, 0)),
	       res(ss(cfd, SIGUSR1_, BAD, 0)));
	info[0] = SIGUSR2_;
	info[2] = (uint32_t)-1;
	printf("send, si_signo not the signal: %s\n", res(ss(cfd, SIGUSR1_, info, 0)));
	info[0] = SIGUSR1_;
	info[2] = 0;
	printf("send SI_USER siginfo to another: %s\n", res(ss(cfd, SIGUSR1_, info, 0)));
	info[0] = 0;
	info[2] = (uint32_t)-1;
	printf("send signal 0 with an SI_QUEUE siginfo to another's thread: %s, process group: %s\n",
	       res(ss(cfd, 0, info, 1)), res(ss(cfd, 0, info, 4)));
	info[0] = SIGUSR1_;
	info[5] = 31337;
	printf("send SI_QUEUE siginfo to the child: %s\n", res(ss(cfd, SIGUSR1_, info, 0)));
	sys_write(p2c[1], "g", 1);
	char line[120];
	n = sys_read(c2p[0], line, sizeof line - 1);
	line[n > 0 ? n : 0] = 0;
	printf("%s", line);
	printf("getfd flags 1: %s, not a pidfd: %s, no such descriptor: %s\n", res(rt_syscall(SYS_pidfd_getfd, cfd, 0, 1)),
	       res(rt_syscall(SYS_pidfd_getfd, 0, 0, 0)), res(rt_syscall(SYS_pidfd_getfd, cfd, 500, 0)));
	long g = rt_syscall(SYS_pidfd_getfd, cfd, c2p[1], 0);
	printf("getfd of the child's pipe: %s, F_GETFD %ld\n", g >= 0 ? "ok" : res(g), sys_fcntl((int)g, 1, 0));
	sys_write((int)g, "via getfd\n", 10);
	n = sys_read(c2p[0], line, sizeof line - 1);
	line[n > 0 ? n : 0] = 0;
	printf("read back: %s", line);
	sys_close((int)g);
	int si[32];
	printf("waitid P_PIDFD, non-blocking pidfd, alive: %s\n", res(rt_syscall(SYS_waitid, P_PIDFD, cnb, si, WEXITED_, 0)));
	printf("waitid P_PIDFD, not a pidfd: %s, negative: %s\n", res(rt_syscall(SYS_waitid, P_PIDFD, 0, si, WEXITED_, 0)),
	       res(rt_syscall(SYS_waitid, P_PIDFD, -1, si, WEXITED_, 0)));

	/* it exits: poll and epoll wake */
	int ep = (int)rt_syscall(SYS_epoll_create, 1);
	uint32_t ev[3] = { POLLIN, 7, 0 }, out[3];
	long r;
	rt_syscall(SYS_epoll_ctl, ep, 1, cfd, ev);
	sys_write(p2c[1], "x", 1);
	printf("poll until it exits: %d\n", revents(cfd, -1));
	r = rt_syscall(SYS_epoll_wait, ep, out, 1, -1);
	printf("epoll_wait: %ld, data %u\n", r, out[1]);
	printf("zombie: send 0: %s, SIGUSR1: %s, pidfd_open: %s, getfd: %s\n", res(ss(cfd, 0, 0, 0)),
	       res(ss(cfd, SIGUSR1_, 0, 0)), po(c, 0) >= 0 ? "ok" : "?", res(rt_syscall(SYS_pidfd_getfd, cfd, 0, 0)));
	memset(si, 0, sizeof si);
	r = rt_syscall(SYS_waitid, P_PIDFD, cfd, si, WEXITED_, 0);
	printf("waitid P_PIDFD: %s, signo %d code %d pid %s status %d\n", res(r), si[0], si[2],
	       si[3] == c ? "the child" : "?", si[5]);
	printf("reaped: poll %d, send 0: %s, pidfd_open: %s, getfd: %s, waitid: %s\n", revents(cfd, 0),
	       res(ss(cfd, 0, 0, 0)), res(po(c, 0)), res(rt_syscall(SYS_pidfd_getfd, cfd, 0, 0)),
	       res(rt_syscall(SYS_waitid, P_PIDFD, cfd, si, WEXITED_, 0)));
	sys_close(ep);
	/* the SIGCHLD it left */
	uint32_t chld[2] = { 1u << (SIGCHLD_ - 1), 0 };
	struct timespec zero = { 0, 0 };
	rt_syscall(SYS_rt_sigtimedwait_, chld, 0, &zero, 8);

	/* a process group: the child leads one */
	fflush_stdout();
	c = sys_fork();
	if (c == 0) {
		rt_syscall(57 /* setpgid */, 0, 0);
		rt_syscall(SYS_rt_sigprocmask_, 0, set, 0, 8);
		sys_write(c2p[1], "r", 1);
		uint32_t w[32];
		struct timespec to = { 2, 0 };
		memset(w, 0, sizeof w);
		long s = rt_syscall(SYS_rt_sigtimedwait_, set, w, &to, 8);
		char l2[80];
		int len = snprintf(l2, sizeof l2, "group member: %s, code %d\n", s == SIGUSR1_ ? "SIGUSR1" : res(s), (int)w[2]);
		sys_write(c2p[1], l2, (size_t)len);
		_exit(0);
	}
	char x;
	sys_read(c2p[0], &x, 1);
	cfd = (int)po(c, 0);
	printf("send to the child's process group: %s\n", res(ss(cfd, SIGUSR1_, 0, 4)));
	n = sys_read(c2p[0], line, sizeof line - 1);
	line[n > 0 ? n : 0] = 0;
	printf("%s", line);
	wait_child(c);
	printf("send to the group once it is gone: %s\n", res(ss(cfd, SIGUSR1_, 0, 4)));
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--after-exec") == 0) {
		after_exec();
		return 0;
	}
	me = sys_getpid();
	membarrier_tests();
	mlock_tests();
	mlock_limits();
	capget_tests();
	setuid_tests(argv);
	pidfd_tests();
	return 0;
}
