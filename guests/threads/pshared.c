/* Futexes in shared memory across processes (keyed by physical address): a
   process-shared semaphore and condition variable between a parent and its forked
   child, and a process-shared robust mutex whose owner process is killed. */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

struct shared {
    sem_t sem;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_mutex_t robust;
    int value, stage;
};

int main(void) {
    struct shared *s = mmap(0, sizeof *s, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    sem_init(&s->sem, 1, 0);
    pthread_mutexattr_t ma;
    pthread_mutexattr_init(&ma);
    pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
    pthread_mutex_init(&s->mu, &ma);
    pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST);
    pthread_mutex_init(&s->robust, &ma);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setpshared(&ca, PTHREAD_PROCESS_SHARED);
    pthread_cond_init(&s->cv, &ca);

    pid_t c = fork();
    if (c == 0) {
        for (int i = 1; i <= 5; i++) {
            usleep(1000);
            s->value += i;
            sem_post(&s->sem);
        }
        pthread_mutex_lock(&s->mu);
        while (s->stage == 0) pthread_cond_wait(&s->cv, &s->mu);
        s->value *= 10;
        pthread_mutex_unlock(&s->mu);
        _exit(0);
    }
    for (int i = 0; i < 5; i++) sem_wait(&s->sem);
    printf("semaphore: value %d\n", s->value);
    usleep(5000);
    pthread_mutex_lock(&s->mu);
    s->stage = 1;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
    waitpid(c, 0, 0);
    printf("condition: value %d\n", s->value);

    c = fork();
    if (c == 0) {
        pthread_mutex_lock(&s->robust);
        sem_post(&s->sem);
        for (;;) pause();
    }
    sem_wait(&s->sem);
    kill(c, SIGKILL);
    int st;
    waitpid(c, &st, 0);
    int r = pthread_mutex_lock(&s->robust);
    printf("robust mutex of a killed process: %s (child killed by %d)\n",
           r == EOWNERDEAD ? "EOWNERDEAD" : strerror(r), WTERMSIG(st));
    return 0;
}
