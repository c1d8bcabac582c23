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

extern char **environ;

static void run(const char *path, char *arg)
{
	fflush_stdout();
	long pid = sys_fork();
	if (pid == 0) {
		char *args[] = { (char *)path, arg, 0 };
		long r = rt_syscall(SYS_execve_, path, args, environ);
		printf("execve %s: %ld\n", path, r);
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
		printf("program: argv[0] %s; AT_EXECFN %s\n", argv[0], (const char *)getauxval(AT_EXECFN_));
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
	sys_unlink("scriptexec.d/s");
	rt_syscall(SYS_rmdir_, "scriptexec.d");
	return 0;
}
