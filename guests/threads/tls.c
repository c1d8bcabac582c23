/* Thread-local storage (__thread, initialized and zeroed) and pthread keys, per thread. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static __thread int counter = 1000;
static __thread char name[16];
static __thread long big[64];
static pthread_key_t key;
static int destroyed;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static void destroy(void *v) {
    pthread_mutex_lock(&mu);
    destroyed += (int)(long)v;
    pthread_mutex_unlock(&mu);
}

static void *run(void *arg) {
    int id = (int)(long)arg;
    snprintf(name, sizeof name, "thread-%d", id);
    for (int i = 0; i < 64; i++) big[i] = id * i;
    for (int i = 0; i < 1000 * (id + 1); i++) counter++;
    pthread_setspecific(key, (void *)(long)(id + 1));
    long s = 0;
    for (int i = 0; i < 64; i++) s += big[i];
    char *out = malloc(64);
    snprintf(out, 64, "%s counter=%d sum=%ld key=%ld", name, counter, s, (long)pthread_getspecific(key));
    return out;
}

int main(void) {
    pthread_key_create(&key, destroy);
    pthread_t t[5];
    for (long i = 0; i < 5; i++) pthread_create(&t[i], 0, run, (void *)i);
    for (int i = 0; i < 5; i++) {
        char *s;
        pthread_join(t[i], (void **)&s);
        printf("%s\n", s);
        free(s);
    }
    printf("main counter=%d name='%s' destroyed=%d\n", counter, name, destroyed);
    return 0;
}
