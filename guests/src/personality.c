/*
 * personality.c - personality(2): the query (0xffffffff) and a set returning the old
 * value; inherited by a fork and kept across exec; ADDR_NO_RANDOMIZE lays two execs
 * of the same program out at the same addresses (the stack, a library-less static
 * program's mmap area, its heap), whatever the ASLR setting; UNAME26 shows a 2.6
 * release in uname; READ_IMPLIES_EXEC makes a readable mapping executable (mmap and
 * mprotect, as /proc/self/maps shows it).
 */
#include "rt.h"

#define SYS_execve_ 11
#define SYS_personality 136
#define PER_LINUX32 0x0008
#define UNAME26 0x0020000
#define ADDR_NO_RANDOMIZE 0x0040000
#define READ_IMPLIES_EXEC 0x0400000

extern char **environ;

static long persona(unsigned long v) { return rt_syscall(SYS_personality, v); }

static char *find(char *hay, const char *needle)
{
	size_t n = strlen(needle);
	for (; *hay; hay++)
		if (strncmp(hay, needle, n) == 0)
			return hay;
	return 0;
}

/* The permissions /proc/self/maps shows for the mapping at `at`. */
static void perms(const char *what, void *at)
{
	static char buf[65536];
	char key[16];
	int fd = (int)sys_open("/proc/self/maps", O_RDONLY, 0);
	long n = sys_read(fd, buf, sizeof buf - 1);
	sys_close(fd);
	buf[n > 0 ? n : 0] = 0;
	snprintf(key, sizeof key, "%08lx-", (unsigned long)at);
	char *line = find(buf, key);
	char p[5] = "?";
	if (line) {
		char *sp = strchr(line, ' ');
		if (sp) {
			memcpy(p, sp + 1, 4);
			p[4] = 0;
		}
	}
	printf("%s: %s\n", what, p);
}

/* The addresses this program was laid out at, as one line a parent compares. */
static void layout(int fd)
{
	char line[96];
	int local;
	void *m = (void *)sys_mmap2(0, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int n = snprintf(line, sizeof line, "%p %p %p\n", (void *)&local, m, (void *)sys_brk(0));
	sys_write(fd, line, (size_t)n);
}

/* Two execs of this program under personality `v`: whether they were laid out alike. */
static void twice(unsigned long v)
{
	char a[2][96];
	for (int i = 0; i < 2; i++) {
		int p[2];
		sys_pipe(p);
		long pid = sys_fork();
		if (pid == 0) {
			persona(v);
			sys_dup2(p[1], 3);
			char *args[] = { "personality", "--layout", 0 };
			rt_syscall(SYS_execve_, "/proc/self/exe", args, environ);
			rt_syscall(SYS_exit_group, 1);
		}
		sys_close(p[1]);
		long n = sys_read(p[0], a[i], sizeof a[i] - 1);
		a[i][n > 0 ? n : 0] = 0;
		sys_close(p[0]);
		int st;
		sys_waitpid((int)pid, &st, 0);
	}
	printf("two execs under %#lx: %s\n", v, strcmp(a[0], a[1]) == 0 && a[0][0] ? "laid out alike" : "differ");
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--layout") == 0) {
		layout(3);
		return 0;
	}
	if (argc > 1 && strcmp(argv[1], "--show") == 0) {
		printf("after exec: %#lx\n", persona(0xffffffff));
		return 0;
	}
	printf("query: %#lx\n", persona(0xffffffff));
	printf("set PER_LINUX32: old %#lx\n", persona(PER_LINUX32));
	printf("query: %#lx\n", persona(0xffffffff));

	fflush_stdout();
	long pid = sys_fork();
	if (pid == 0) {
		printf("child: %#lx\n", persona(0xffffffff));
		fflush_stdout();
		persona(PER_LINUX32 | UNAME26);
		char *args[] = { "personality", "--show", 0 };
		rt_syscall(SYS_execve_, "/proc/self/exe", args, environ);
		rt_syscall(SYS_exit_group, 1);
	}
	int st;
	sys_waitpid((int)pid, &st, 0);
	printf("parent after the child's set: %#lx\n", persona(0xffffffff));

	struct utsname u;
	persona(PER_LINUX32 | UNAME26);
	sys_uname(&u);
	printf("UNAME26: release starts with 2.6.: %s\n", strncmp(u.release, "2.6.", 4) == 0 ? "yes" : "no");
	persona(PER_LINUX32);
	sys_uname(&u);
	printf("without: release starts with 2.6.: %s\n", strncmp(u.release, "2.6.", 4) == 0 ? "yes" : "no");

	void *r = (void *)sys_mmap2(0, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	perms("PROT_READ", r);
	persona(PER_LINUX32 | READ_IMPLIES_EXEC);
	void *x = (void *)sys_mmap2(0, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	perms("PROT_READ under READ_IMPLIES_EXEC", x);
	void *w = (void *)sys_mmap2(0, 4096, PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	perms("PROT_WRITE under READ_IMPLIES_EXEC", w);
	sys_mprotect(r, 4096, PROT_READ | PROT_WRITE);
	perms("mprotect PROT_READ|PROT_WRITE under READ_IMPLIES_EXEC", r);
	persona(PER_LINUX32);
	sys_mprotect(r, 4096, PROT_READ);
	perms("mprotect PROT_READ without", r);

	twice(PER_LINUX32 | ADDR_NO_RANDOMIZE);
	return 0;
}
