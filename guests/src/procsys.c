/*
 * procsys.c - /proc/sys: the files morph serves (kernel/randomize_va_space,
 * osrelease, ostype, version, hostname, domainname, pid_max, ngroups_max,
 * threads-max, cap_last_cap; vm/mmap_min_addr, overcommit_memory, overcommit_ratio),
 * their modes and owner, the directories' modes and listings, and
 * /proc/self/personality (after personality(0x40008) too).
 *
 * Only what is the same natively and under morph is printed as it is: the values that
 * differ (morph's --aslr is 0 by default, its release is its own, its limits are its
 * own; vm.mmap_min_addr is 65536 under morph and on Debian, 4096 on some hosts) are printed as checks that hold on both (a digit 0-2 and a newline, uname's
 * release, a number).
 *
 * With --morph-only (crates/cli/tests/confine.rs; not run natively, where root may
 * write these files): randomize_va_space and personality verbatim, then opening for
 * writing, O_TRUNC and access(W_OK) as the caller is, and again as user 65534 if the
 * caller could become it.
 */
#include "rt.h"

#define SYS_access 33
#define SYS_personality 136
#define SYS_getdents64 220
#define SYS_setresuid32 208
#define O_DIRECTORY_ 0200000
#define W_OK 2

static const char *res(long r)
{
	return errno_str(r);
}

/* Reads `path` into `buf` (NUL-terminated); the length, or the error. */
static long slurp(const char *path, char *buf, long size)
{
	int fd = (int)sys_open(path, O_RDONLY, 0);
	if (fd < 0)
		return fd;
	long n = 0, r;
	while (n < size - 1 && (r = sys_read(fd, buf + n, (size_t)(size - 1 - n))) > 0)
		n += r;
	sys_close(fd);
	buf[n] = 0;
	return n;
}

/* Whether `s` is a decimal number and a newline. */
static int number_line(const char *s)
{
	if (*s < '0' || *s > '9')
		return 0;
	while (*s >= '0' && *s <= '9')
		s++;
	return s[0] == '\n' && s[1] == 0;
}

/* Whether `s` is the string `want` and a newline. */
static int line_is(const char *s, const char *want)
{
	size_t n = strlen(want);
	return strncmp(s, want, n) == 0 && s[n] == '\n' && s[n + 1] == 0;
}

enum how { VERBATIM, DIGIT02, NUMBER, PAGES, RELEASE, SYSNAME, VERSION, NODENAME, DOMAIN };

static const struct { const char *path; enum how how; } files[] = {
	{ "/proc/sys/kernel/cap_last_cap", VERBATIM },
	{ "/proc/sys/kernel/domainname", DOMAIN },
	{ "/proc/sys/kernel/hostname", NODENAME },
	{ "/proc/sys/kernel/ngroups_max", VERBATIM },
	{ "/proc/sys/kernel/osrelease", RELEASE },
	{ "/proc/sys/kernel/ostype", SYSNAME },
	{ "/proc/sys/kernel/pid_max", NUMBER },
	{ "/proc/sys/kernel/randomize_va_space", DIGIT02 },
	{ "/proc/sys/kernel/threads-max", NUMBER },
	{ "/proc/sys/kernel/version", VERSION },
	{ "/proc/sys/vm/mmap_min_addr", PAGES },
	{ "/proc/sys/vm/overcommit_memory", DIGIT02 },
	{ "/proc/sys/vm/overcommit_ratio", NUMBER },
};
#define NFILES (int)(sizeof files / sizeof files[0])

static void show_file(int i, const struct utsname *u)
{
	char buf[256];
	const char *path = files[i].path;
	long n = slurp(path, buf, sizeof buf);
	if (n < 0) {
		printf("%s: %s\n", path, res(n));
		return;
	}
	struct stat64 st;
	memset(&st, 0, sizeof st);
	long r = sys_stat64(path, &st);
	printf("%s: stat %s mode %o uid %s size %lld: ", path, res(r), st.st_mode, st.st_uid == 0 ? "root" : "other",
	       (long long)st.st_size);
	switch (files[i].how) {
	case VERBATIM: printf("%s", buf); if (n == 0 || buf[n - 1] != '\n') printf("(no newline)\n"); break;
	case DIGIT02: printf("a digit 0-2 and a newline: %s\n", n == 2 && buf[0] >= '0' && buf[0] <= '2' && buf[1] == '\n' ? "yes" : "no"); break;
	case NUMBER: printf("a number and a newline: %s\n", number_line(buf) ? "yes" : "no"); break;
	case PAGES: printf("whole pages and a newline: %s\n", number_line(buf) && atoi(buf) % 4096 == 0 ? "yes" : "no"); break;
	case RELEASE: printf("uname's release: %s\n", line_is(buf, u->release) ? "yes" : "no"); break;
	case SYSNAME: printf("uname's sysname: %s\n", line_is(buf, u->sysname) ? "yes" : "no"); break;
	case VERSION: printf("uname's version: %s\n", line_is(buf, u->version) ? "yes" : "no"); break;
	case NODENAME: printf("uname's nodename: %s\n", line_is(buf, u->nodename) ? "yes" : "no"); break;
	case DOMAIN: printf("uname's domainname: %s\n", line_is(buf, u->domainname) ? "yes" : "no"); break;
	}
}

static void show_dir(const char *path)
{
	struct stat64 st;
	memset(&st, 0, sizeof st);
	long r = sys_stat64(path, &st);
	printf("%s: stat %s mode %o uid %s\n", path, res(r), st.st_mode, st.st_uid == 0 ? "root" : "other");
}

/* The names of `path` that are among `want` (in `want`'s order): what the listing holds
 * of what morph serves. */
static void listing(const char *path, const char *const *want, int nwant)
{
	static char names[8192];
	char buf[4096];
	long used = 0;
	int fd = (int)sys_open(path, O_RDONLY | O_DIRECTORY_, 0);
	if (fd < 0) {
		printf("%s: open %s\n", path, res(fd));
		return;
	}
	long n;
	while ((n = rt_syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0) {
		for (long off = 0; off < n;) {
			unsigned short reclen = *(unsigned short *)(buf + off + 16);
			const char *name = buf + off + 19;
			size_t len = strlen(name);
			if (used + (long)len + 1 < (long)sizeof names) {
				memcpy(names + used, name, len + 1);
				used += (long)len + 1;
			}
			off += reclen;
		}
	}
	sys_close(fd);
	printf("%s lists:", path);
	for (int i = 0; i < nwant; i++)
		for (long off = 0; off < used; off += (long)strlen(names + off) + 1)
			if (strcmp(names + off, want[i]) == 0) {
				printf(" %s", want[i]);
				break;
			}
	printf("\n");
}

static void personality_file(const char *when)
{
	char buf[64];
	long n = slurp("/proc/self/personality", buf, sizeof buf);
	printf("personality %s: %s", when, n < 0 ? res(n) : buf);
	if (n < 0)
		printf("\n");
}

static void writes(const char *who)
{
	const char *ps[] = { "/proc/sys/kernel/randomize_va_space", "/proc/sys/kernel/osrelease",
			     "/proc/sys/vm/overcommit_memory" };
	for (int i = 0; i < 3; i++) {
		long w = sys_open(ps[i], O_WRONLY, 0);
		long t = sys_open(ps[i], O_RDONLY | O_TRUNC, 0);
		long a = rt_syscall(SYS_access, ps[i], W_OK);
		printf("%s %s: O_WRONLY %s", who, ps[i], res(w < 0 ? w : 0));
		printf(" O_TRUNC %s", res(t < 0 ? t : 0));
		printf(" access(W_OK) %s\n", res(a));
		if (w >= 0)
			sys_close((int)w);
		if (t >= 0)
			sys_close((int)t);
	}
	long d = sys_open("/proc/sys/kernel", O_WRONLY, 0);
	printf("%s /proc/sys/kernel: O_WRONLY %s\n", who, res(d < 0 ? d : 0));
}

static int morph_only(void)
{
	char buf[64];
	slurp("/proc/sys/kernel/randomize_va_space", buf, sizeof buf);
	printf("randomize_va_space=%s", buf);
	slurp("/proc/sys/vm/overcommit_memory", buf, sizeof buf);
	printf("overcommit_memory=%s", buf);
	slurp("/proc/sys/kernel/threads-max", buf, sizeof buf);
	printf("threads-max=%s", buf);
	slurp("/proc/sys/kernel/pid_max", buf, sizeof buf);
	printf("pid_max=%s", buf);
	slurp("/proc/sys/kernel/osrelease", buf, sizeof buf);
	printf("osrelease=%s", buf);
	rt_syscall(SYS_personality, 0x40008);
	personality_file("after 0x40008");
	rt_syscall(SYS_personality, 0);
	writes(sys_geteuid() == 0 ? "root" : "user");
	if (sys_geteuid() == 0 && rt_syscall(SYS_setresuid32, 65534, 65534, 65534) == 0)
		writes("user");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--morph-only") == 0)
		return morph_only();
	struct utsname u;
	memset(&u, 0, sizeof u);
	sys_uname(&u);
	show_dir("/proc/sys");
	show_dir("/proc/sys/kernel");
	show_dir("/proc/sys/vm");
	for (int i = 0; i < NFILES; i++)
		show_file(i, &u);
	static const char *const proc_want[] = { "self", "sys" };
	static const char *const sys_want[] = { "kernel", "vm" };
	static const char *const kernel_want[] = { "cap_last_cap", "domainname", "hostname", "ngroups_max",
						   "osrelease", "ostype", "pid_max", "randomize_va_space",
						   "threads-max", "version" };
	static const char *const vm_want[] = { "mmap_min_addr", "overcommit_memory", "overcommit_ratio" };
	listing("/proc", proc_want, 2);
	listing("/proc/sys", sys_want, 2);
	listing("/proc/sys/kernel", kernel_want, 10);
	listing("/proc/sys/vm", vm_want, 3);
	/* A second read from the start gives the same text; a read at the end nothing. */
	char a[64], b[64];
	int fd = (int)sys_open("/proc/sys/kernel/ngroups_max", O_RDONLY, 0);
	long n1 = sys_read(fd, a, sizeof a);
	long n2 = sys_read(fd, b, sizeof b);
	sys_lseek(fd, 0, 0);
	long n3 = sys_read(fd, b, sizeof b);
	sys_close(fd);
	printf("reread: %ld %ld %s\n", n1, n2, n1 == n3 && memcmp(a, b, (size_t)n1) == 0 ? "same" : "differs");
	printf("missing: %s\n", res(sys_open("/proc/sys/kernel/no_such_setting", O_RDONLY, 0)));
	printf("a file as a directory: %s\n", res(sys_open("/proc/sys/kernel/ostype/x", O_RDONLY, 0)));

	struct stat64 st;
	memset(&st, 0, sizeof st);
	long r = sys_stat64("/proc/self/personality", &st);
	printf("/proc/self/personality: stat %s mode %o\n", res(r), st.st_mode);
	personality_file("at start");
	long old = rt_syscall(SYS_personality, 0x40008);
	personality_file("after 0x40008");
	rt_syscall(SYS_personality, old);
	personality_file("restored");
	/* A child's, read by its parent (same ids). */
	int ready[2], hold[2];
	sys_pipe(ready);
	sys_pipe(hold);
	long pid = sys_fork();
	if (pid == 0) {
		rt_syscall(SYS_personality, 0x0020000);
		sys_write(ready[1], "x", 1);
		char c;
		sys_read(hold[0], &c, 1); /* never written: waits to be killed */
		return 0;
	}
	char c;
	sys_read(ready[0], &c, 1);
	char path[64], buf[64];
	snprintf(path, sizeof path, "/proc/%ld/personality", pid);
	long n = slurp(path, buf, sizeof buf);
	printf("child's personality: %s", n < 0 ? res(n) : buf);
	if (n < 0)
		printf("\n");
	sys_kill((int)pid, 9);
	sys_waitpid((int)pid, 0, 0);
	return 0;
}
