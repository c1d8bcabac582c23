/* /proc/self/task and /proc/<pid>/task/<tid>/{stat,status,comm} of a process with four
   threads (all alive, waiting at a barrier): the listing holds exactly the thread ids,
   each task's files name that thread, the process-wide files the group; a thread that
   has been joined is gone from the listing and its directory. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define N 3
static pthread_barrier_t in, out;
static pid_t tids[N + 1];

static void *run(void *arg) {
    tids[(long)arg] = (pid_t)syscall(SYS_gettid);
    pthread_barrier_wait(&in);
    pthread_barrier_wait(&out);
    return 0;
}

static int read_file(const char *path, char *buf, size_t n) {
    FILE *f = fopen(path, "r");
    if (!f)
        return -errno;
    size_t k = fread(buf, 1, n - 1, f);
    buf[k] = 0;
    fclose(f);
    return (int)k;
}

static int cmp(const void *a, const void *b) { return *(const pid_t *)a - *(const pid_t *)b; }

/* The thread ids listed in /proc/self/task, sorted, compared with `want` (n of them).
   A joined thread may still be listed for a moment natively (it is reaped just after it
   wakes the joiner): the listing is read again until it has n entries. */
static void listing(const pid_t *want, int n) {
    pid_t got[16], w[16];
    int k = 0;
    for (int tries = 0; tries < 10000; tries++) {
        DIR *d = opendir("/proc/self/task");
        struct dirent *e;
        k = 0;
        while (d && (e = readdir(d)))
            if (e->d_name[0] != '.' && k < 16)
                got[k++] = atoi(e->d_name);
        if (d)
            closedir(d);
        if (k == n)
            break;
        sched_yield();
    }
    memcpy(w, want, sizeof(pid_t) * n);
    qsort(got, k, sizeof got[0], cmp);
    qsort(w, n, sizeof w[0], cmp);
    printf("task listing: %d entries, %s\n", k, k == n && !memcmp(got, w, sizeof(pid_t) * n) ? "the thread ids" : "WRONG");
}

static const char *field(const char *text, const char *name) {
    const char *p = strstr(text, name);
    return p ? p + strlen(name) : "";
}

int main(void) {
    pthread_t th[N];
    char path[128], buf[4096], comm[64];
    pid_t pid = getpid();
    tids[0] = pid;
    pthread_barrier_init(&in, 0, N + 1);
    pthread_barrier_init(&out, 0, N + 1);
    for (long i = 1; i <= N; i++)
        pthread_create(&th[i - 1], 0, run, (void *)i);
    pthread_barrier_wait(&in);
    listing(tids, N + 1);
    read_file("/proc/self/comm", comm, sizeof comm);
    printf("comm: %s", comm);
    for (int i = 0; i <= N; i++) {
        int ok_comm, ok_stat, ok_status;
        snprintf(path, sizeof path, "/proc/%d/task/%d/comm", pid, tids[i]);
        ok_comm = read_file(path, buf, sizeof buf) > 0 && !strcmp(buf, comm);
        snprintf(path, sizeof path, "/proc/self/task/%d/stat", tids[i]);
        read_file(path, buf, sizeof buf);
        int spid = 0, ppid = 0, threads = 0;
        char name[64] = "", st = 0;
        const char *close = strrchr(buf, ')');
        sscanf(buf, "%d (%63[^)])", &spid, name);
        if (close)
            sscanf(close + 2, "%c %d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %d", &st, &ppid,
                   &threads);
        ok_stat = spid == tids[i] && ppid == getppid() && threads == N + 1 && !strncmp(name, comm, strlen(name));
        snprintf(path, sizeof path, "/proc/self/task/%d/status", tids[i]);
        read_file(path, buf, sizeof buf);
        ok_status = atoi(field(buf, "\nPid:\t")) == tids[i] && atoi(field(buf, "\nTgid:\t")) == pid &&
                    atoi(field(buf, "\nThreads:\t")) == N + 1 && !strncmp(field(buf, "Name:\t"), comm, strlen(comm) - 1);
        printf("thread %d: comm %s, stat %s, status %s\n", i, ok_comm ? "ok" : "WRONG", ok_stat ? "ok" : "WRONG",
               ok_status ? "ok" : "WRONG");
    }
    read_file("/proc/self/stat", buf, sizeof buf);
    printf("process stat pid is the pid: %s\n", atoi(buf) == pid ? "yes" : "no");
    read_file("/proc/self/status", buf, sizeof buf);
    printf("process status Pid is the pid: %s, Threads: %d\n", atoi(field(buf, "\nPid:\t")) == pid ? "yes" : "no",
           atoi(field(buf, "\nThreads:\t")));
    snprintf(path, sizeof path, "/proc/self/task/%d/nosuch", tids[1]);
    printf("unknown task file: %s\n", strerror(-read_file(path, buf, sizeof buf)));
    printf("task of another process: %s\n", strerror(-read_file("/proc/self/task/1/stat", buf, sizeof buf)));
    pthread_barrier_wait(&out);
    for (int i = 0; i < N; i++)
        pthread_join(th[i], 0);
    listing(tids, 1);
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", tids[2]);
    printf("joined thread's stat: %s\n", strerror(-read_file(path, buf, sizeof buf)));
    return 0;
}
