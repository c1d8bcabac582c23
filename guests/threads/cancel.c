/* pthread_cancel with cleanup handlers: a thread blocked in a condition wait, one in a
   loop of pthread_testcancel, one with cancellation disabled for a while. */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int ready, log_[16], nlog;
static volatile int spin;

static void note(void *v) { log_[nlog++] = (int)(long)v; }
static void unlock(void *m) { pthread_mutex_unlock(m); }

static void *waiter(void *arg) {
    (void)arg;
    pthread_cleanup_push(note, (void *)1);
    pthread_mutex_lock(&mu);
    pthread_cleanup_push(unlock, &mu);
    ready++;
    pthread_cond_broadcast(&cv);
    for (;;) pthread_cond_wait(&cv, &mu);
    pthread_cleanup_pop(1);
    pthread_cleanup_pop(1);
    return 0;
}

static void *spinner(void *arg) {
    (void)arg;
    pthread_cleanup_push(note, (void *)2);
    pthread_cleanup_push(note, (void *)3);
    pthread_mutex_lock(&mu);
    ready++;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    for (;;) {
        spin++;
        pthread_testcancel();
    }
    pthread_cleanup_pop(0);
    pthread_cleanup_pop(0);
    return 0;
}

static void *sleeper(void *arg) {
    (void)arg;
    int old;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
    pthread_cleanup_push(note, (void *)4);
    pthread_mutex_lock(&mu);
    ready++;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    usleep(20000);
    pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &old);
    pause();
    pthread_cleanup_pop(0);
    return 0;
}

int main(void) {
    void *(*fns[3])(void *) = {waiter, spinner, sleeper};
    for (int i = 0; i < 3; i++) {
        pthread_t t;
        ready = 0;
        pthread_create(&t, 0, fns[i], 0);
        pthread_mutex_lock(&mu);
        while (!ready) pthread_cond_wait(&cv, &mu);
        pthread_mutex_unlock(&mu);
        pthread_cancel(t);
        void *r;
        pthread_join(t, &r);
        printf("thread %d: %s\n", i, r == PTHREAD_CANCELED ? "canceled" : "returned");
    }
    printf("cleanups:");
    for (int i = 0; i < nlog; i++) printf(" %d", log_[i]);
    printf("\n");
    return 0;
}
