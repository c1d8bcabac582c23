/* Producer/consumer over a bounded buffer with a mutex and two condition variables. */
#include <pthread.h>
#include <stdio.h>

#define SLOTS 4
#define ITEMS 2000
static int buf[SLOTS], head, count;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t not_full = PTHREAD_COND_INITIALIZER, not_empty = PTHREAD_COND_INITIALIZER;

static void *producer(void *arg) {
    int base = (int)(long)arg * ITEMS;
    for (int i = 1; i <= ITEMS; i++) {
        pthread_mutex_lock(&mu);
        while (count == SLOTS) pthread_cond_wait(&not_full, &mu);
        buf[(head + count++) % SLOTS] = base + i;
        pthread_cond_signal(&not_empty);
        pthread_mutex_unlock(&mu);
    }
    return 0;
}

static struct { long long sum; int n; } results[2];

static void *consumer(void *arg) {
    long long sum = 0;
    int n = 0;
    for (;;) {
        pthread_mutex_lock(&mu);
        while (count == 0) pthread_cond_wait(&not_empty, &mu);
        int v = buf[head];
        head = (head + 1) % SLOTS;
        count--;
        pthread_cond_broadcast(&not_full);
        pthread_mutex_unlock(&mu);
        if (v < 0) break;
        sum += v;
        n++;
    }
    results[(long)arg].sum = sum;
    results[(long)arg].n = n;
    return 0;
}

int main(void) {
    pthread_t p[2], c[2];
    for (long i = 0; i < 2; i++) pthread_create(&c[i], 0, consumer, (void *)i);
    for (long i = 0; i < 2; i++) pthread_create(&p[i], 0, producer, (void *)i);
    for (int i = 0; i < 2; i++) pthread_join(p[i], 0);
    /* One end marker per consumer. */
    for (int i = 0; i < 2; i++) {
        pthread_mutex_lock(&mu);
        while (count == SLOTS) pthread_cond_wait(&not_full, &mu);
        buf[(head + count++) % SLOTS] = -1;
        pthread_cond_signal(&not_empty);
        pthread_mutex_unlock(&mu);
    }
    for (int i = 0; i < 2; i++) pthread_join(c[i], 0);
    long long expect = 0;
    for (int i = 1; i <= 2 * ITEMS; i++) expect += i;
    printf("items %d sum %lld expected %lld\n", results[0].n + results[1].n, results[0].sum + results[1].sum, expect);
    return 0;
}
