/* The sigwait model of threaded servers: every thread blocks the signals, one thread
   takes them with sigwait; kill() to the process and pthread_kill() to that thread
   both reach it; sigtimedwait times out with EAGAIN. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static sem_t ack;
static int got[8], ngot;

static void *waiter(void *arg) {
    sigset_t *set = arg;
    for (int i = 0; i < 4; i++) {
        int sig;
        if (sigwait(set, &sig) != 0) return (void *)1L;
        got[ngot++] = sig;
        sem_post(&ack);
    }
    return 0;
}

int main(void) {
    static sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    sigaddset(&set, SIGUSR2);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, 0);
    sem_init(&ack, 0, 0);

    /* Pending before anyone waits: a later sigwait takes it. */
    kill(getpid(), SIGTERM);
    pthread_t t;
    pthread_create(&t, 0, waiter, &set);
    sem_wait(&ack);
    kill(getpid(), SIGUSR1);
    sem_wait(&ack);
    pthread_kill(t, SIGUSR2);
    sem_wait(&ack);
    usleep(2000);
    kill(getpid(), SIGUSR1);
    sem_wait(&ack);
    void *r;
    pthread_join(t, &r);
    printf("sigwait thread returned %ld, got", (long)r);
    for (int i = 0; i < ngot; i++) printf(" %d", got[i]);
    printf("\n");

    struct timespec zero = {0, 0}, short_ = {0, 10000000};
    siginfo_t info;
    int s = sigtimedwait(&set, &info, &zero);
    printf("sigtimedwait, nothing pending, no wait: %d %s\n", s, s < 0 && errno == EAGAIN ? "EAGAIN" : "?");
    s = sigtimedwait(&set, &info, &short_);
    printf("sigtimedwait, 10 ms: %d %s\n", s, s < 0 && errno == EAGAIN ? "EAGAIN" : "?");
    raise(SIGUSR2);
    s = sigtimedwait(&set, &info, &short_);
    printf("sigtimedwait after raise: %d, si_code %s\n", s, info.si_code == SI_TKILL ? "SI_TKILL" : "other");
    return 0;
}
