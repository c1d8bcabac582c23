/* PTHREAD_PRIO_INHERIT mutexes, which glibc builds on the PI futex calls (FUTEX_LOCK_PI,
   FUTEX_UNLOCK_PI, FUTEX_TRYLOCK_PI): four threads contend for one to add to a counter;
   trylock on a held one is EBUSY, an error-checking one locked again is EDEADLK and
   unlocked by a non-owner EPERM, timedlock on a held one times out; and the raw calls
   on a word: the owner's tid goes in, the waiters bit is set by a contender, UNLOCK_PI by
   a non-owner is EPERM, LOCK_PI by the owner EDEADLK, on a dead owner ESRCH; a robust PI
   mutex whose owner exits goes to its waiter with EOWNERDEAD. */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define THREADS 4
#define ROUNDS 20000

static pthread_mutex_t pi, check;
static long counter;
static int in_section, overlap;
static unsigned word;
static pthread_barrier_t bar;

static long futex(unsigned *u, int op, long val, const struct timespec *t) {
    return syscall(SYS_futex, u, op, val, t, 0, 0);
}

static void *worker(void *arg) {
    (void)arg;
    for (int i = 0; i < ROUNDS; i++) {
        pthread_mutex_lock(&pi);
        if (in_section++)
            overlap = 1;
        counter++;
        if (i % 1000 == 0)
            sched_yield(); /* hold it across a reschedule: others must wait in the kernel */
        in_section--;
        pthread_mutex_unlock(&pi);
    }
    return 0;
}

static void *other(void *arg) {
    (void)arg;
    int r1 = pthread_mutex_trylock(&pi);
    int r2 = pthread_mutex_unlock(&check);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 20 * 1000 * 1000;
    if (ts.tv_nsec >= 1000000000) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000;
    }
    int r3 = pthread_mutex_timedlock(&pi, &ts);
    long r4 = futex(&word, FUTEX_UNLOCK_PI_PRIVATE, 0, 0);
    long r5 = futex(&word, FUTEX_TRYLOCK_PI_PRIVATE, 0, 0);
    int e5 = errno;
    printf("trylock held: %s; unlock by non-owner: %s; timedlock held: %s\n", strerror(r1), strerror(r2), strerror(r3));
    printf("raw UNLOCK_PI by non-owner: %ld %s; TRYLOCK_PI held: %ld %s\n", r4, r4 ? strerror(EPERM) : "", r5,
           r5 ? strerror(e5) : "");
    return 0;
}

/* A robust PI mutex whose owner exits while another thread waits for it: the waiter
   gets it with EOWNERDEAD, makes it consistent, and it works on. */
static pthread_mutex_t robust_pi;
static volatile int owner_has_it;

static void *robust_owner(void *arg) {
    (void)arg;
    pthread_mutex_lock(&robust_pi);
    owner_has_it = 1;
    usleep(100 * 1000); /* the main thread is waiting in the kernel by then */
    return 0;            /* exits holding it */
}

static void robust_case(void) {
    pthread_mutexattr_t a;
    pthread_t t;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_INHERIT);
    pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
    pthread_mutex_init(&robust_pi, &a);
    pthread_create(&t, 0, robust_owner, 0);
    while (!owner_has_it)
        sched_yield();
    int r = pthread_mutex_lock(&robust_pi);
    printf("robust PI lock after the owner died: %s\n", strerror(r));
    printf("consistent: %s\n", strerror(pthread_mutex_consistent(&robust_pi)));
    printf("unlock: %s\n", strerror(pthread_mutex_unlock(&robust_pi)));
    printf("lock again: %s\n", strerror(pthread_mutex_lock(&robust_pi)));
    pthread_mutex_unlock(&robust_pi);
    pthread_join(t, 0);
}

int main(void) {
    pthread_mutexattr_t a;
    pthread_t th[THREADS];
    pthread_mutexattr_init(&a);
    pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_INHERIT);
    pthread_mutex_init(&pi, &a);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
    pthread_mutex_init(&check, &a);

    for (int i = 0; i < THREADS; i++)
        pthread_create(&th[i], 0, worker, 0);
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], 0);
    printf("counter %ld (want %d), overlap %d\n", counter, THREADS * ROUNDS, overlap);

    pthread_mutex_lock(&pi);
    pthread_mutex_lock(&check);
    printf("errorcheck relock: %s\n", strerror(pthread_mutex_lock(&check)));
    pid_t me = (pid_t)syscall(SYS_gettid);
    long r = futex(&word, FUTEX_LOCK_PI_PRIVATE, 0, 0);
    printf("LOCK_PI free word: %ld, word is my tid: %s\n", r, word == (unsigned)me ? "yes" : "no");
    r = futex(&word, FUTEX_LOCK_PI_PRIVATE, 0, 0);
    printf("LOCK_PI by the owner: %ld %s\n", r, r ? strerror(errno) : "");
    pthread_create(&th[0], 0, other, 0);
    pthread_join(th[0], 0);
    printf("word has the waiters bit: %s, owner kept: %s\n", word & FUTEX_WAITERS ? "yes" : "no",
           (word & FUTEX_TID_MASK) == (unsigned)me ? "yes" : "no");
    r = futex(&word, FUTEX_UNLOCK_PI_PRIVATE, 0, 0);
    printf("UNLOCK_PI by the owner: %ld, word %u\n", r, word);
    pthread_mutex_unlock(&check);
    pthread_mutex_unlock(&pi);
    word = 0x3ffffff0; /* an owner that does not exist */
    r = futex(&word, FUTEX_LOCK_PI_PRIVATE, 0, 0);
    printf("LOCK_PI, no such owner: %ld %s, waiters bit %s\n", r, r ? strerror(errno) : "", word & FUTEX_WAITERS ? "set" : "clear");
    robust_case();
    return 0;
}
