/* Join values, a detached thread, a barrier, a robust mutex whose owner dies, thread
   ids, signals to the group and to one thread, and a thread that forks. */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdlib.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static sem_t sem;
static pthread_barrier_t bar;
static int arrivals[4];
static pthread_mutex_t robust;
static volatile sig_atomic_t got[4];
static pthread_t main_thread;

static void *value(void *arg) { return (void *)((long)arg * (long)arg); }

static void *detached(void *arg) {
    *(int *)arg = 42;
    sem_post(&sem);
    return 0;
}

static void *barrier(void *arg) {
    int id = (int)(long)arg;
    for (int round = 0; round < 3; round++) {
        arrivals[id]++;
        int r = pthread_barrier_wait(&bar);
        if (r != 0 && r != PTHREAD_BARRIER_SERIAL_THREAD) return (void *)1L;
        for (int j = 0; j < 4; j++)
            if (arrivals[j] < round + 1) return (void *)2L;
        pthread_barrier_wait(&bar);
    }
    return 0;
}

static void *owner(void *arg) {
    (void)arg;
    pthread_mutex_lock(&robust);
    return 0; /* dies holding it */
}

static void handler(int sig) {
    if (pthread_equal(pthread_self(), main_thread)) got[0]++;
    else got[sig == SIGUSR2 ? 2 : 1]++;
}

static void *target(void *arg) {
    (void)arg;
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGUSR1);
    pthread_sigmask(SIG_UNBLOCK, &s, 0);
    while (!got[2]) usleep(1000);
    return (void *)(long)(syscall(SYS_gettid) != getpid());
}

static void *forker(void *arg) {
    (void)arg;
    pid_t c = fork();
    if (c == 0) {
        /* Only the calling thread exists in the child. */
        _exit(syscall(SYS_gettid) == getpid() ? 7 : 8);
    }
    int st;
    waitpid(c, &st, 0);
    return (void *)(long)WEXITSTATUS(st);
}

/* A thread made with the clone system call itself (not clone3), as older glibc does. */
static int raw_child(void *arg) {
    *(int *)arg = 77;
    return 0;
}

static int raw_clone(void) {
    static int val;
    static volatile pid_t ctid = 1;
    static pid_t ptid;
    char *stack = malloc(65536);
    int flags = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM |
                CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID;
    int tid = clone(raw_child, stack + 65536, flags, &val, &ptid, 0, &ctid);
    if (tid <= 0) return -1;
    pid_t v;
    while ((v = ctid) != 0) syscall(SYS_futex, &ctid, FUTEX_WAIT, v, 0, 0, 0);
    free(stack);
    return val + (ptid == tid ? 1000 : 0);
}

/* SIGSEGV from a fault goes to the faulting thread. */
static sigjmp_buf segv_jump;
static volatile int segv_in_main = -1;

static void on_segv(int sig) {
    (void)sig;
    segv_in_main = pthread_equal(pthread_self(), main_thread);
    siglongjmp(segv_jump, 1);
}

static void *faulter(void *arg) {
    (void)arg;
    if (sigsetjmp(segv_jump, 1) == 0) *(volatile int *)16 = 1;
    return (void *)(long)segv_in_main;
}

int main(void) {
    main_thread = pthread_self();
    pthread_t t[4];
    for (long i = 0; i < 4; i++) pthread_create(&t[i], 0, value, (void *)(i + 3));
    for (int i = 0; i < 4; i++) {
        void *r;
        pthread_join(t[i], &r);
        printf("join %d: %ld\n", i, (long)r);
    }

    sem_init(&sem, 0, 0);
    int flag = 0;
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    pthread_t d;
    pthread_create(&d, &a, detached, &flag);
    sem_wait(&sem);
    printf("detached set %d\n", flag);

    pthread_barrier_init(&bar, 0, 4);
    for (long i = 0; i < 4; i++) pthread_create(&t[i], 0, barrier, (void *)i);
    for (int i = 0; i < 4; i++) {
        void *r;
        pthread_join(t[i], &r);
        printf("barrier %d: %ld arrivals %d\n", i, (long)r, arrivals[i]);
    }

    pthread_mutexattr_t ma;
    pthread_mutexattr_init(&ma);
    pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST);
    pthread_mutex_init(&robust, &ma);
    pthread_create(&t[0], 0, owner, 0);
    pthread_join(t[0], 0);
    int r = pthread_mutex_lock(&robust);
    printf("robust lock after owner died: %s\n", r == EOWNERDEAD ? "EOWNERDEAD" : strerror(r));
    if (r == EOWNERDEAD) pthread_mutex_consistent(&robust);
    pthread_mutex_unlock(&robust);

    /* Signals: SIGUSR1 blocked in main, so kill() to the process reaches the thread that
       unblocks it; SIGUSR2 goes to that thread by pthread_kill. */
    signal(SIGUSR1, handler);
    signal(SIGUSR2, handler);
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &s, 0);
    pthread_create(&t[0], 0, target, 0);
    usleep(5000);
    kill(getpid(), SIGUSR1);
    while (!got[1]) usleep(1000);
    pthread_kill(t[0], SIGUSR2);
    void *tr;
    pthread_join(t[0], &tr);
    printf("signals: main %d thread usr1 %d usr2 %d; thread's tid differs from pid: %ld\n", got[0], got[1], got[2], (long)tr);

    pthread_create(&t[0], 0, forker, 0);
    pthread_join(t[0], &tr);
    printf("child of a thread exited %ld\n", (long)tr);

    printf("raw clone: %d\n", raw_clone());

    signal(SIGSEGV, on_segv);
    pthread_create(&t[0], 0, faulter, 0);
    pthread_join(t[0], &tr);
    printf("SIGSEGV handled in main thread: %ld\n", (long)tr);
    return 0;
}
