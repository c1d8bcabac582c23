/*
 * chroot.c - chroot(2): the errors (EFAULT, ENOENT, ENOTDIR, ELOOP, ENAMETOOLONG
 * before the capability check, EPERM without CAP_SYS_CHROOT, dropped by capset or by
 * setuid to a user); in a child, the new root: `/` lists the tree, `..` at the root
 * stays there, an absolute symbolic link resolves inside it, a relative one cannot
 * climb out, a file outside cannot be named; the working directory is left outside
 * (getcwd's "(unreachable)/..." and relative names from there), then chdir("/");
 * an AF_UNIX socket bound at a path in it, a fork child that inherits the root, exec
 * of a copy of this program inside it (the root kept), a chroot nested in the first
 * (relative to the root), and what /proc/<pid>/root and cwd show to the parent (the
 * paths in the parent's root, only their ends printed). Runs as root natively; a
 * process without CAP_SYS_CHROOT sees only the errors. Works in a directory it makes
 * in the current one and removes.
 */
#include "rt.h"

#define SYS_execve_ 11
#define SYS_chdir_ 12
#define SYS_mkdir_ 39
#define SYS_rmdir_ 40
#define SYS_chroot_ 61
#define SYS_symlink_ 83
#define SYS_readlink_ 85
#define SYS_fchmod_ 94
#define SYS_wait4_ 114
#define SYS_getcwd_ 183
#define SYS_capget_ 184
#define SYS_capset_ 185
#define SYS_setuid32_ 213
#define SYS_getdents64_ 220

#define CAP_SYS_CHROOT 18
#define O_DIRECTORY_ 0200000
#define BAD ((void *)16)

#define D "chroot.d"

static const char *res(long r)
{
	return r >= 0 ? "ok" : errno_str(r);
}

static long chroot_(const char *p) { return rt_syscall(SYS_chroot_, p); }
static long chdir_(const char *p) { return rt_syscall(SYS_chdir_, p); }

/* Whether s ends with t. */
static int ends(const char *s, const char *t)
{
	size_t a = strlen(s), b = strlen(t);
	return a >= b && strcmp(s + a - b, t) == 0;
}

/* getcwd, printed whole if it is short and inside, else its shape and end. */
static void cwd(const char *what, const char *end)
{
	char b[4096];
	long r = rt_syscall(SYS_getcwd_, b, sizeof b);
	if (r < 0) {
		printf("%s: getcwd %s\n", what, res(r));
		return;
	}
	if (b[0] == '/')
		printf("%s: getcwd %s\n", what, b);
	else
		printf("%s: getcwd %.14s... ends with %s: %d\n", what, b, end, ends(b, end));
}

/* The first line of a file, or the error. */
static void cat(const char *what, const char *path)
{
	char b[64];
	long fd = sys_open(path, 0, 0);
	if (fd < 0) {
		printf("%s: open %s: %s\n", what, strncmp(path, "/proc/", 6) ? path : "it", res(fd));
		return;
	}
	long n = sys_read((int)fd, b, sizeof b - 1);
	sys_close((int)fd);
	b[n < 0 ? 0 : n] = 0;
	char *nl = strchr(b, '\n');
	if (nl)
		*nl = 0;
	printf("%s: open %s: \"%s\"\n", what, strncmp(path, "/proc/", 6) ? path : "it", b);
}

static void put(const char *path, const char *text, int mode)
{
	long fd = sys_open(path, 0101 | 01000, mode); /* O_WRONLY|O_CREAT|O_TRUNC */
	sys_write((int)fd, text, strlen(text));
	sys_close((int)fd);
}

/* The names in a directory, sorted, `.` and `..` left out. */
static void list(const char *what, const char *dir)
{
	char names[32][32];
	int n = 0;
	long fd = sys_open(dir, O_DIRECTORY_, 0);
	if (fd < 0) {
		printf("%s: open %s: %s\n", what, dir, res(fd));
		return;
	}
	static char buf[4096];
	long got;
	while ((got = rt_syscall(SYS_getdents64_, fd, buf, sizeof buf)) > 0) {
		for (long off = 0; off < got;) {
			unsigned short reclen = *(unsigned short *)(buf + off + 16);
			const char *name = buf + off + 19;
			if (strcmp(name, ".") && strcmp(name, "..") && n < 32) {
				size_t k = 0;
				for (; name[k] && k < 31; k++)
					names[n][k] = name[k];
				names[n][k] = 0;
				n++;
			}
			off += reclen;
		}
	}
	sys_close((int)fd);
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
			char t[32];
			strcpy(t, names[j]);
			strcpy(names[j], names[j - 1]);
			strcpy(names[j - 1], t);
		}
	printf("%s: ls %s:", what, dir);
	for (int i = 0; i < n; i++)
		printf(" %s", names[i]);
	printf("\n");
}

static unsigned long long ino(const char *path)
{
	struct stat64 st;
	return sys_stat64(path, &st) < 0 ? 0 : st.st_ino;
}

static void link_end(const char *what, const char *path, const char *end)
{
	char b[4096];
	long n = rt_syscall(SYS_readlink_, path, b, sizeof b - 1);
	if (n < 0) {
		printf("%s: readlink %s\n", what, res(n));
		return;
	}
	b[n] = 0;
	printf("%s: readlink starts with /: %d, ends with %s: %d\n", what, b[0] == '/', end, ends(b, end));
}

struct hdr {
	uint32_t version;
	int pid;
};
struct data {
	uint32_t eff, prm, inh;
};

static long wait_child(long pid)
{
	int st = 0;
	rt_syscall(SYS_wait4_, pid, &st, 0, 0);
	return st;
}

/* The program again, exec'd inside the root. */
static int inner(void)
{
	cwd("exec'd", "");
	cat("exec'd", "/etc/hello");
	cat("exec'd", "/../outside");
	list("exec'd", "/");
	return 3;
}

static void errors(const char *what)
{
	char *long_name = malloc(5000);
	memset(long_name, 'a', 4999);
	long_name[4999] = 0;
	printf("%s: chroot bad pointer: %s\n", what, res(chroot_(BAD)));
	printf("%s: chroot empty: %s\n", what, res(chroot_("")));
	printf("%s: chroot missing: %s\n", what, res(chroot_(D "/missing")));
	printf("%s: chroot file: %s\n", what, res(chroot_(D "/notdir")));
	printf("%s: chroot below a file: %s\n", what, res(chroot_(D "/notdir/x")));
	printf("%s: chroot link loop: %s\n", what, res(chroot_(D "/loop")));
	printf("%s: chroot long name: %s\n", what, res(chroot_(long_name)));
	free(long_name);
}

/* The child: into the root and about in it. */
static int jailed(int ready, int go)
{
	printf("child: chroot jail: %s\n", res(chroot_("jail")));
	cwd("child", "/" D);
	char c = 1;
	sys_write(ready, &c, 1);
	sys_read(go, &c, 1);
	cat("child, cwd outside", "outside");
	cat("child, cwd outside", "jail/etc/hello");
	cat("child", "/outside");
	cat("child", "/etc/hello");
	cat("child", "/../../../etc/hello");
	cat("child, absolute link", "/abs");
	cat("child, relative link climbing", "/up");
	printf("child: / and /.. the same: %d, /etc/.. too: %d\n", ino("/") == ino("/.."), ino("/") == ino("/etc/.."));
	printf("child: chdir /: %s\n", res(chdir_("/")));
	cwd("child", "");
	list("child", "/");
	list("child", "..");
	printf("child: chdir sub/deep: %s\n", res(chdir_("sub/deep")));
	cwd("child", "");
	cat("child", "../../etc/hello");
	printf("child: chdir ../../../..: %s\n", res(chdir_("../../../..")));
	cwd("child", "");
	char l[64];
	long n = rt_syscall(SYS_readlink_, "/abs", l, sizeof l - 1);
	l[n < 0 ? 0 : n] = 0;
	printf("child: readlink /abs: %s \"%s\"\n", res(n), l);

	/* An AF_UNIX name inside the root; the parent finds it in the tree. */
	long s = sys_socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un a;
	memset(&a, 0, sizeof a);
	a.sun_family = AF_UNIX;
	strcpy(a.sun_path, "/sock");
	printf("child: bind /sock: %s\n", res(sys_bind((int)s, &a, sizeof a)));
	printf("child: listen: %s\n", res(sys_listen((int)s, 1)));
	long t = sys_socket(AF_UNIX, SOCK_STREAM, 0);
	printf("child: connect /sock: %s\n", res(sys_connect((int)t, &a, sizeof a)));
	sys_close((int)t);
	sys_close((int)s);

	/* A child keeps the root. */
	fflush_stdout();
	long pid = sys_fork();
	if (pid == 0) {
		cat("grandchild", "/etc/hello");
		cat("grandchild", "/outside");
		cwd("grandchild", "");
		fflush_stdout();
		exit(0);
	}
	printf("child: grandchild status %lx\n", wait_child(pid));

	/* exec of a program in the root (a copy of this one): the root kept. */
	fflush_stdout();
	pid = sys_fork();
	if (pid == 0) {
		char *argv[] = { "me", "inner", 0 };
		char *envp[] = { 0 };
		long r = rt_syscall(SYS_execve_, "/bin/me", argv, envp);
		printf("exec: %s\n", res(r));
		fflush_stdout();
		_exit(1);
	}
	printf("child: exec'd child status %lx\n", wait_child(pid));
	{
		char *argv[] = { "me", "inner", 0 };
		char *envp[] = { 0 };
		printf("child: exec of a file outside: %s\n", res(rt_syscall(SYS_execve_, "/../bin/../../me", argv, envp)));
	}

	/* A root nested in this one, named relative to the working directory. */
	printf("child: chroot sub: %s\n", res(chroot_("sub")));
	cwd("child", "/" D "/jail");
	list("child, cwd outside", ".");
	printf("child: chdir /: %s\n", res(chdir_("/")));
	list("child", "/");
	cat("child", "/etc/hello");
	printf("child: chroot / again: %s\n", res(chroot_("/")));
	list("child", "/");

	/* Without CAP_SYS_CHROOT. */
	struct hdr h = { 0x20080522, 0 };
	struct data d[2];
	rt_syscall(SYS_capget_, &h, d);
	d[0].eff &= ~(1u << CAP_SYS_CHROOT);
	printf("child: drop CAP_SYS_CHROOT: %s\n", res(rt_syscall(SYS_capset_, &h, d)));
	printf("child: chroot deep: %s\n", res(chroot_("deep")));
	printf("child: chroot missing: %s\n", res(chroot_("missing")));
	d[0].eff |= 1u << CAP_SYS_CHROOT;
	printf("child: raise it again: %s\n", res(rt_syscall(SYS_capset_, &h, d)));
	printf("child: setuid 1000: %s\n", res(rt_syscall(SYS_setuid32_, 1000)));
	printf("child: chroot deep: %s\n", res(chroot_("deep")));
	fflush_stdout();
	return 0;
}

int main(int argc, char **argv, char **envp)
{
	if (argc > 1 && strcmp(argv[1], "inner") == 0)
		return inner();

	rt_syscall(SYS_mkdir_, D, 0755);
	rt_syscall(SYS_mkdir_, D "/jail", 0755);
	rt_syscall(SYS_mkdir_, D "/jail/etc", 0755);
	rt_syscall(SYS_mkdir_, D "/jail/bin", 0755);
	rt_syscall(SYS_mkdir_, D "/jail/sub", 0755);
	rt_syscall(SYS_mkdir_, D "/jail/sub/deep", 0755);
	put(D "/jail/etc/hello", "inside\n", 0644);
	put(D "/jail/sub/etc", "a file\n", 0644);
	put(D "/outside", "outside\n", 0644);
	put(D "/notdir", "", 0644);
	rt_syscall(SYS_symlink_, "/etc/hello", D "/jail/abs");
	rt_syscall(SYS_symlink_, "../../outside", D "/jail/up");
	rt_syscall(SYS_symlink_, "loop", D "/loop");
	/* A copy of this program in the root. */
	{
		long in = sys_open("/proc/self/exe", 0, 0);
		long out = sys_open(D "/jail/bin/me", 0101 | 01000, 0755);
		static char b[65536];
		long n;
		while ((n = sys_read((int)in, b, sizeof b)) > 0)
			sys_write((int)out, b, n);
		sys_close((int)in);
		sys_close((int)out);
	}

	errors("parent");
	link_end("parent: /proc/self/root", "/proc/self/root", "/");

	int ready[2], go[2];
	sys_pipe(ready);
	sys_pipe(go);
	fflush_stdout();
	long pid = sys_fork();
	if (pid == 0) {
		chdir_(D);
		exit(jailed(ready[1], go[0]));
	}
	char c;
	sys_read(ready[0], &c, 1);
	char path[64];
	snprintf(path, sizeof path, "/proc/%ld/root", pid);
	link_end("parent: /proc/child/root", path, "/" D "/jail");
	snprintf(path, sizeof path, "/proc/%ld/cwd", pid);
	link_end("parent: /proc/child/cwd", path, "/" D);
	snprintf(path, sizeof path, "/proc/%ld/root/etc/hello", pid);
	cat("parent: /proc/child/root/etc/hello", path);
	fflush_stdout();
	sys_write(go[1], &c, 1);
	printf("parent: child status %lx\n", wait_child(pid));

	struct stat64 st;
	long r = sys_stat64(D "/jail/sock", &st);
	printf("parent: the child's socket: %s, a socket: %d\n", res(r), r == 0 && (st.st_mode & 0170000) == 0140000);

	const char *files[] = { D "/jail/etc/hello", D "/jail/sub/etc", D "/jail/bin/me", D "/jail/abs", D "/jail/up",
				D "/jail/sock", D "/outside", D "/notdir", D "/loop" };
	for (unsigned i = 0; i < sizeof files / sizeof files[0]; i++)
		sys_unlink(files[i]);
	const char *dirs[] = { D "/jail/sub/deep", D "/jail/sub", D "/jail/etc", D "/jail/bin", D "/jail", D };
	int left = 0;
	for (unsigned i = 0; i < sizeof dirs / sizeof dirs[0]; i++)
		left += rt_syscall(SYS_rmdir_, dirs[i]) != 0;
	printf("parent: cleaned up: %d\n", left == 0);
	return 0;
}
