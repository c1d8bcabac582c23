/* A thread pool: four workers take tasks from a queue; results printed in task order. */
#include <pthread.h>
#include <stdio.h>

#define TASKS 64
#define WORKERS 4
static int queue[TASKS], qhead, qtail, done;
static unsigned results[TASKS];
static int who[WORKERS];
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t more = PTHREAD_COND_INITIALIZER, idle = PTHREAD_COND_INITIALIZER;
static int finished;

static unsigned work(int n) {
    unsigned h = 2166136261u;
    for (int i = 0; i < 2000 + n * 50; i++) h = (h ^ (unsigned)(i * n)) * 16777619u;
    return h;
}

static void *worker(void *arg) {
    int id = (int)(long)arg;
    for (;;) {
        pthread_mutex_lock(&mu);
        while (qhead == qtail && !done) pthread_cond_wait(&more, &mu);
        if (qhead == qtail && done) {
            pthread_mutex_unlock(&mu);
            return (void *)(long)(id + 100);
        }
        int t = queue[qhead++];
        pthread_mutex_unlock(&mu);
        unsigned r = work(t);
        pthread_mutex_lock(&mu);
        results[t] = r;
        who[id]++;
        if (++finished == TASKS) pthread_cond_signal(&idle);
        pthread_mutex_unlock(&mu);
    }
}

int main(void) {
    pthread_t w[WORKERS];
    for (long i = 0; i < WORKERS; i++) pthread_create(&w[i], 0, worker, (void *)i);
    for (int i = 0; i < TASKS; i++) {
        pthread_mutex_lock(&mu);
        queue[qtail++] = i;
        pthread_cond_signal(&more);
        pthread_mutex_unlock(&mu);
    }
    pthread_mutex_lock(&mu);
    while (finished < TASKS) pthread_cond_wait(&idle, &mu);
    done = 1;
    pthread_cond_broadcast(&more);
    pthread_mutex_unlock(&mu);
    int total = 0;
    for (int i = 0; i < WORKERS; i++) {
        void *r;
        pthread_join(w[i], &r);
        printf("worker %d returned %ld\n", i, (long)r);
        total += who[i];
    }
    for (int i = 0; i < TASKS; i++) printf("task %2d: %08x\n", i, results[i]);
    printf("tasks done %d\n", total);
    return 0;
}
