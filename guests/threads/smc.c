/* Self-modifying code seen by every thread: one thread writes a function, another
   runs it until it is hot (translated), the first rewrites it, the second must run
   the new code. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

static unsigned char *code;
static pthread_barrier_t bar;

static void emit(int value) {
    /* mov $value, %eax; ret */
    unsigned char f[] = {0xb8, 0, 0, 0, 0, 0xc3};
    memcpy(f + 1, &value, 4);
    memcpy(code, f, sizeof f);
}

static void *runner(void *arg) {
    (void)arg;
    int (*fn)(void) = (int (*)(void))code;
    long sum = 0;
    for (int round = 0; round < 3; round++) {
        pthread_barrier_wait(&bar); /* the writer has emitted this round's code */
        for (int i = 0; i < 1000; i++) sum += fn();
        printf("round %d: sum %ld\n", round, sum);
        pthread_barrier_wait(&bar); /* done running it */
    }
    return 0;
}

int main(void) {
    code = mmap(0, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    pthread_barrier_init(&bar, 0, 2);
    pthread_t t;
    pthread_create(&t, 0, runner, 0);
    for (int round = 0; round < 3; round++) {
        emit(round * 7 + 1);
        pthread_barrier_wait(&bar);
        pthread_barrier_wait(&bar);
    }
    pthread_join(t, 0);
    return 0;
}
