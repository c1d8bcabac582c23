/* The CLONE_VM forms that are not threads: posix_spawn (CLONE_VM|CLONE_VFORK; its child
   reports a failed exec in the parent's memory) and vfork, whose child shares the
   parent's memory until it execs or exits. */
#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;
static volatile int written_by_child;

int main(int argc, char **argv) {
    if (argc > 1) {
        printf("spawned with %s\n", argv[1]);
        return 4;
    }
    pid_t pid;
    char *missing[] = {"/nonexistent/prog", 0};
    int r = posix_spawn(&pid, "/nonexistent/prog", 0, 0, missing, environ);
    printf("spawn of a missing program: %s\n", r ? strerror(r) : "succeeded");
    if (r == 0) waitpid(pid, 0, 0);
    fflush(stdout);
    char *self[] = {argv[0], "an argument", 0};
    r = posix_spawn(&pid, argv[0], 0, 0, self, environ);
    int st = 0;
    waitpid(pid, &st, 0);
    printf("spawn of itself: %d, status %d\n", r, WEXITSTATUS(st));
    pid = vfork();
    if (pid == 0) {
        written_by_child = 5;
        _exit(0);
    }
    waitpid(pid, 0, 0);
    printf("vfork child wrote %d\n", written_by_child);
    return 0;
}
