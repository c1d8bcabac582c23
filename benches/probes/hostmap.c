/* Host costs behind morph's guest windows: one-page mmaps of a memfd over a PROT_NONE
 * reservation and into a hole, window teardown, a write fault against MAP_POPULATE, and a
 * SIGSEGV round trip. Build and run:  gcc -O2 benches/probes/hostmap.c -o /tmp/hostmap && /tmp/hostmap
 * (docs/architecture.md, "Address spaces", quotes its numbers). */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define P 4096L
#define K 2000
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e9 + t.tv_nsec; }
static char *page;
static void on_segv(int s, siginfo_t *i, void *c) { (void)s; (void)i; (void)c; mprotect(page, P, PROT_READ | PROT_WRITE); }

int main(void) {
    int fd = memfd_create("probe", 0);
    if (fd < 0 || ftruncate(fd, K * P) != 0) return 1;
    char *a = mmap(0, K * P, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
    munmap(a, K * P);

    char *w = mmap(0, 1L << 33, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    double t = now();
    for (int i = 0; i < K; i++) mmap(w + i * 8 * P, P, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, i * P);
    printf("mmap one page over a reservation: %6.0f ns\n", (now() - t) / K);
    t = now(); munmap(w, 1L << 33);
    printf("teardown, reserved window:        %6.0f ns per mapping\n", (now() - t) / K);

    t = now();
    for (int i = 0; i < K; i++) mmap(w + i * 8 * P, P, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED_NOREPLACE, fd, i * P);
    printf("mmap one page into a hole:        %6.0f ns\n", (now() - t) / K);
    t = now(); munmap(w, 1L << 33);
    printf("teardown, unreserved window:      %6.0f ns per mapping\n", (now() - t) / K);

    a = mmap(0, K * P, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    t = now();
    for (int i = 0; i < K; i++) a[i * P] = 1;
    printf("write fault on a mapped page:     %6.0f ns\n", (now() - t) / K);
    munmap(a, K * P);
    t = now();
    a = mmap(0, K * P, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
    printf("MAP_POPULATE:                     %6.0f ns per page\n", (now() - t) / K);
    munmap(a, K * P);

    struct sigaction sa = {0};
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGSEGV, &sa, 0);
    page = mmap(0, P, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    t = now();
    for (int i = 0; i < K; i++) { mprotect(page, P, PROT_READ); *(volatile char *)page = 2; }
    double with = now() - t;
    t = now();
    for (int i = 0; i < K; i++) { mprotect(page, P, PROT_READ); mprotect(page, P, PROT_READ | PROT_WRITE); }
    printf("SIGSEGV round trip:               %6.0f ns\n", (with - (now() - t)) / K);
    return 0;
}
