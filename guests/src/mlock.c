/*
 * mlock.c - RLIMIT_MEMLOCK over all of a process's locked pages, without CAP_IPC_LOCK:
 * mlock of locked pages again does not count them twice, munlock, munmap, munlockall
 * and a MAP_FIXED mapping over locked pages release them, an mlock spilling into a hole
 * locks what comes before it, mremap moves and grows a lock (EAGAIN past the limit),
 * MAP_LOCKED (EPERM with a limit of 0, EAGAIN past it), mlockall(MCL_CURRENT) counts
 * every mapping, a forked child has nothing locked. VmLck of /proc/self/status after
 * each step.
 */
#include "rt.h"

#define SYS_mlock 150
#define SYS_munlock 151
#define SYS_mlockall 152
#define SYS_munlockall 153
#define SYS_mremap 163
#define SYS_capget 184
#define SYS_capset 185
#define SYS_ugetrlimit 191
#define SYS_setrlimit 75
#define SYS_mlock2 376
#define CAP_IPC_LOCK 14
#define V3 0x20080522
#define MAP_LOCKED 0x2000
#define P 4096

static const char *res(long r)
{
	return r == 0 ? "ok" : errno_str(r);
}

static char text[16384];

static long slurp(const char *path)
{
	int f = (int)sys_open(path, 0, 0);
	long n = 0, r;
	while ((r = sys_read(f, text + n, sizeof text - 1 - n)) > 0)
		n += r;
	text[n] = 0;
	sys_close(f);
	return n;
}

/* The number after `key` in /proc/self/status, in kB (-1 if missing). */
static long status_kb(const char *key)
{
	slurp("/proc/self/status");
	size_t k = strlen(key);
	for (char *l = text; *l;) {
		if (!strncmp(l, key, k)) {
			char *s = l + k;
			while (*s == ' ' || *s == '\t')
				s++;
			long v = 0;
			while (*s >= '0' && *s <= '9')
				v = v * 10 + (*s++ - '0');
			return v;
		}
		while (*l && *l != '\n')
			l++;
		if (*l)
			l++;
	}
	return -1;
}

static unsigned long hexnum(char **s)
{
	unsigned long v = 0;
	for (;; (*s)++) {
		char c = **s;
		if (c >= '0' && c <= '9')
			v = v * 16 + (unsigned long)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v = v * 16 + (unsigned long)(c - 'a' + 10);
		else
			return v;
	}
}

/* kB of every mapping of /proc/self/maps but the kernel's own ([vdso], [vvar]...). */
static long maps_kb(void)
{
	slurp("/proc/self/maps");
	long kb = 0;
	for (char *l = text; *l;) {
		char *s = l;
		unsigned long lo = hexnum(&s);
		s++;
		unsigned long hi = hexnum(&s);
		char *e = s;
		while (*e && *e != '\n')
			e++;
		int special = 0;
		for (char *t = s; t < e; t++)
			if (t[0] == '[' && t[1] == 'v' && (t[2] == 'd' || t[2] == 'v'))
				special = 1;
		if (!special)
			kb += (long)((hi - lo) / 1024);
		l = *e ? e + 1 : e;
	}
	return kb;
}

static void lck(const char *what, long r)
{
	printf("%-44s %-7s VmLck %ld kB\n", what, res(r), status_kb("VmLck:"));
}

/* A call's error, or 0 for an address or count it returned. */
static long err(long r) { return (unsigned long)r > -4096ul ? r : 0; }

static long ml(void *a, unsigned long n) { return rt_syscall(SYS_mlock, a, n); }
static long mul(void *a, unsigned long n) { return rt_syscall(SYS_munlock, a, n); }

static char *anon(void *at, unsigned long n, int flags)
{
	return (char *)sys_mmap2(at, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0);
}

struct hdr { uint32_t version; int pid; };
struct data { uint32_t eff, prm, inh; };

int main(void)
{
	struct hdr h = { V3, 0 };
	struct data d[2];
	rt_syscall(SYS_capget, &h, d);
	d[0].eff &= ~(1u << CAP_IPC_LOCK);
	printf("drop CAP_IPC_LOCK: %s\n", res(rt_syscall(SYS_capset, &h, d)));
	uint32_t lim[2];
	rt_syscall(SYS_ugetrlimit, 8, lim);
	lim[0] = 16 * P;
	printf("RLIMIT_MEMLOCK 64 KiB: %s\n", res(rt_syscall(SYS_setrlimit, 8, lim)));

	char *a = anon(0, 32 * P, 0);
	lck("start", 0);
	lck("mlock pages 0-7", ml(a, 8 * P));
	lck("mlock pages 0-7 again", ml(a, 8 * P));
	lck("mlock pages 4-11 (4 new)", ml(a + 4 * P, 8 * P));
	lck("mlock pages 16-23 (past the limit)", ml(a + 16 * P, 8 * P));
	lck("mlock2 MLOCK_ONFAULT pages 16-23", rt_syscall(SYS_mlock2, a + 16 * P, 8 * P, 1));
	lck("mlock unaligned within page 12", ml(a + 12 * P + 100, 10));
	lck("munlock pages 0-3", mul(a, 4 * P));
	lck("mlock pages 16-18", ml(a + 16 * P, 3 * P));
	lck("munmap page 17", sys_munmap(a + 17 * P, P));
	lck("munlock over the hole at 17", mul(a + 16 * P, 3 * P));
	lck("mlock 14-19 over the hole (locks 14-16)", ml(a + 14 * P, 6 * P));
	lck("MAP_FIXED over pages 14-15", (long)anon(a + 14 * P, 2 * P, MAP_FIXED) == (long)(a + 14 * P) ? 0 : -1);
	lck("munlock pages 0-16", mul(a, 17 * P));

	char *b = anon(0, 2 * P, 0);
	lck("mlock a 2-page mapping", ml(b, 2 * P));
	long nb = rt_syscall(SYS_mremap, b, 2 * P, 6 * P, 1);
	lck("mremap it to 6 pages", err(nb));
	b = err(nb) ? b : (char *)nb;
	lck("mlock pages 0-7 (8 more)", ml(a, 8 * P));
	nb = rt_syscall(SYS_mremap, b, 6 * P, 10 * P, 1);
	lck("mremap it to 10 pages (past the limit)", err(nb));
	nb = rt_syscall(SYS_mremap, b, 6 * P, 3 * P, 1);
	lck("mremap it to 3 pages", err(nb));
	char *c = anon(0, 2 * P, MAP_LOCKED);
	lck("mmap MAP_LOCKED 2 pages", err((long)c));
	char *c2 = anon(0, 8 * P, MAP_LOCKED);
	lck("mmap MAP_LOCKED 8 pages (past the limit)", err((long)c2));
	lck("munmap the MAP_LOCKED one", sys_munmap(c, 2 * P));

	fflush_stdout();
	long k = sys_fork();
	if (k == 0) {
		lck("child after fork", 0);
		lck("child: mlock pages 20-31", ml(a + 20 * P, 12 * P));
		exit(0);
	}
	int st;
	sys_waitpid((int)k, &st, 0);
	lck("parent after its child", 0);

	lck("mlockall MCL_CURRENT (past the limit)", rt_syscall(SYS_mlockall, 1));
	/* Back with CAP_IPC_LOCK (still permitted): every mapping locked, past the limit. */
	d[0].eff |= 1u << CAP_IPC_LOCK;
	printf("CAP_IPC_LOCK again: %s\n", res(rt_syscall(SYS_capset, &h, d)));
	long r = rt_syscall(SYS_mlockall, 1);
	long vml = status_kb("VmLck:"), mk = maps_kb();
	printf("mlockall MCL_CURRENT: %s, VmLck is all the mappings: %s\n", res(r), r < 0 ? "-" : vml == mk ? "yes" : "no");
	if (vml != mk && r == 0)
		printf("  VmLck %ld kB, mappings %ld kB\n", vml, mk);
	lck("munlockall", rt_syscall(SYS_munlockall));
	d[0].eff &= ~(1u << CAP_IPC_LOCK);
	rt_syscall(SYS_capset, &h, d);
	lim[0] = 0;
	rt_syscall(SYS_setrlimit, 8, lim);
	lck("limit 0: MAP_LOCKED", err((long)anon(0, P, MAP_LOCKED)));
	lck("limit 0: mlock", ml(a, P));
	return 0;
}
