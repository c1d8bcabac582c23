/* A thread that takes a mutex, writes while holding it and lets it go, in a loop that
   never ends, and a main thread that wants the mutex: on Linux the woken waiter gets it
   between two rounds (at once on another CPU, or by preempting its waker on one). A
   scheduler that ran the woken thread only at the end of the waker's time slice found
   the mutex held every time (the loop is the same every round) and never let it in
   (Python's test_io daemon-thread shutdown test hung that way). */
#include <pthread.h>
#include <stdio.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static int devnull;

static void *loop(void *arg) {
    (void)arg;
    for (;;) {
        pthread_mutex_lock(&m);
        (void)!write(devnull, ".", 1);
        pthread_mutex_unlock(&m);
    }
    return 0;
}

int main(void) {
    devnull = open("/dev/null", O_WRONLY);
    pthread_t t;
    pthread_create(&t, 0, loop, 0);
    struct timespec ts = { 0, 50 * 1000 * 1000 };
    nanosleep(&ts, 0);
    for (int i = 0; i < 100; i++) {
        pthread_mutex_lock(&m);
        pthread_mutex_unlock(&m);
    }
    printf("main took the mutex 100 times\n");
    fflush(stdout);
    _exit(0);
}
