/* How a threaded process ends: argv[1] = "main-exit" (pthread_exit in main, the others
   finish and print), "thread-exit" (exit(3) in a thread while main waits), "kill"
   (a thread dies of SIGSEGV... the whole group dies), "exec" (a thread execs). */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int stage;
static char *self;

static void *late(void *arg) {
    long id = (long)arg;
    pthread_mutex_lock(&mu);
    while (stage < id) pthread_cond_wait(&cv, &mu);
    printf("late thread %ld done\n", id);
    fflush(stdout);
    stage++;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    return 0;
}

static void *quitter(void *arg) {
    (void)arg;
    usleep(2000);
    printf("thread calls exit(3)\n");
    exit(3);
}

static void *crasher(void *arg) {
    (void)arg;
    usleep(2000);
    *(volatile int *)0 = 1;
    return 0;
}

static void *execer(void *arg) {
    (void)arg;
    usleep(2000);
    execl(self, self, "after-exec", (char *)0);
    return 0;
}

int main(int argc, char **argv) {
    self = argv[0];
    const char *m = argc > 1 ? argv[1] : "main-exit";
    pthread_t t;
    if (!strcmp(m, "main-exit")) {
        printf("main leaves\n");
        fflush(stdout);
        for (long i = 0; i < 3; i++) pthread_create(&t, 0, late, (void *)i);
        pthread_exit(0);
    }
    if (!strcmp(m, "after-exec")) {
        printf("exec'd image runs alone\n");
        return 5;
    }
    void *(*f)(void *) = !strcmp(m, "thread-exit") ? quitter : !strcmp(m, "kill") ? crasher : execer;
    pthread_create(&t, 0, f, 0);
    pthread_join(t, 0);
    printf("not reached\n");
    return 0;
}
