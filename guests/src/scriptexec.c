/*
 * scriptexec.c - what a #! script's interpreter is given: the script by the name it
 * was run by (./s, a path with "..", an absolute one; not the resolved path), its
 * one #! argument, the caller's arguments after it; and AT_EXECFN, the name given to
 * execve (the script's, not its interpreter's), for a script and for a program.
 * The interpreter is this program itself, named in the script by its own path.
 */
#include "rt.h"

#define SYS_execve_ 11
#define SYS_readlink_ 85
#define SYS_mkdir_ 39
#define SYS_rmdir_ 40
#define SYS_chmod_ 15
#define AT_EXECFN_ 31
#define SYS_execveat_ 358
#define SYS_symlink_ 83
#define AT_FDCWD_ (-100)
#define AT_SYMLINK_NOFOLLOW_ 0x100
#define AT_EMPTY_PATH_ 0x1000
#define O_DIRECTORY_ 0200000
#define O_CLOEXEC_ 02000000

static const char *res(long r)
{
	return sys_failed(r) ? errno_str(r) : "ok";
}

extern char **environ;

/* execveat(dirfd, path, ..., flags) in a child: what it printed, or its error. */
static void runat(const char *what, int dirfd, const char *path, char *arg, int flags)
{
	fflush_stdout();
	long pid = sys_fork();
	if (pid == 0) {
		char *args[] = { "prog", arg, 0 };
		long r = rt_syscall(SYS_execveat_, dirfd, path, args, environ, flags);
		printf("%s: %s\n", what, sys_failed(r) ? res(r) : "?");
		fflush_stdout();
		rt_syscall(SYS_exit_group, 1);
	}
	int st;
	sys_waitpid((int)pid, &st, 0);
}

static void run(const char *path, char *arg)
{
	fflush_stdout();
	long pid = sys_fork();
	if (pid == 0) {
		char *args[] = { (char *)path, arg, 0 };
		long r = rt_syscall(SYS_execve_, path, args, environ);
		printf("execve %s: %ld\n", path, r);
		fflush_stdout();
		rt_syscall(SYS_exit_group, 1);
	}
	int st;
	sys_waitpid((int)pid, &st, 0);
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--as-interpreter") == 0) {
		printf("interpreter: argc %d;", argc);
		for (int i = 2; i < argc; i++)
			printf(" [%s]", argv[i]);
		printf("; AT_EXECFN %s\n", (const char *)getauxval(AT_EXECFN_));
		return 0;
	}
	if (argc > 1 && strcmp(argv[1], "--program") == 0) {
		const char *fn = (const char *)getauxval(AT_EXECFN_);
		/* This program's own path differs between its two builds. */
		int own = fn[0] == '/' && strncmp(fn, "/dev/", 5) != 0 && strncmp(fn, "/proc/", 6) != 0;
		printf("program: argv[0] %s; AT_EXECFN %s\n", argv[0], own ? "(its path)" : fn);
		return 0;
	}
	char self[512];
	long n = rt_syscall(SYS_readlink_, "/proc/self/exe", self, sizeof self - 1);
	if (n <= 0)
		return 1;
	self[n] = 0;
	rt_syscall(SYS_mkdir_, "scriptexec.d", 0755);
	char line[600];
	int len = snprintf(line, sizeof line, "#!%s --as-interpreter\n", self);
	int fd = (int)sys_open("scriptexec.d/s", O_CREAT | O_WRONLY | O_TRUNC, 0755);
	sys_write(fd, line, (size_t)len);
	sys_close(fd);
	rt_syscall(SYS_chmod_, "scriptexec.d/s", 0755);
	run("scriptexec.d/s", "one");
	run("./scriptexec.d/../scriptexec.d/s", "two");
	run("scriptexec.d//s", 0);
	run("/proc/self/exe", "--program");

	/* execveat: by descriptor (fexecve), relative to a directory, and its errors. */
	int me = (int)sys_open(self, O_RDONLY, 0);
	runat("fexecve", me, "", "--program", AT_EMPTY_PATH_);
	int dir = (int)sys_open("scriptexec.d", O_RDONLY | O_DIRECTORY_, 0);
	runat("script relative to a directory", dir, "s", "three", 0);
	int sfd = (int)sys_open("scriptexec.d/s", O_RDONLY, 0);
	runat("script by descriptor", sfd, "", "four", AT_EMPTY_PATH_);
	runat("AT_FDCWD", AT_FDCWD_, "scriptexec.d/s", "five", 0);
	runat("absolute path, bad dirfd", 99, self, "--program", 0);
	int cdir = (int)sys_open("scriptexec.d", O_RDONLY | O_DIRECTORY_ | O_CLOEXEC_, 0);
	runat("script through a close-on-exec directory", cdir, "s", "six", 0);
	int csfd = (int)sys_open("scriptexec.d/s", O_RDONLY | O_CLOEXEC_, 0);
	runat("script by a close-on-exec descriptor", csfd, "", "seven", AT_EMPTY_PATH_);
	int cme = (int)sys_open(self, O_RDONLY | O_CLOEXEC_, 0);
	runat("program by a close-on-exec descriptor", cme, "", "--program", AT_EMPTY_PATH_);
	rt_syscall(SYS_symlink_, "s", "scriptexec.d/l");
	runat("link, AT_SYMLINK_NOFOLLOW", dir, "l", "eight", AT_SYMLINK_NOFOLLOW_);
	runat("link followed", dir, "l", "nine", 0);
	runat("empty path without AT_EMPTY_PATH", me, "", "--program", 0);
	runat("bad flags", me, "", "--program", AT_EMPTY_PATH_ | 1);
	runat("bad dirfd", 99, "s", "x", 0);
	runat("dirfd not a directory", me, "s", "x", 0);
	runat("a directory by descriptor", dir, "", "x", AT_EMPTY_PATH_);
	sys_unlink("scriptexec.d/l");
	sys_unlink("scriptexec.d/s");
	rt_syscall(SYS_rmdir_, "scriptexec.d");
	return 0;
}
