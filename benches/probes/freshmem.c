/* What first-touched memory costs on this host: 64 MiB of anonymous memory written once,
 * a byte per 4 KiB page, as 4 KiB pages and as transparent huge pages (MADV_HUGEPAGE),
 * then written again (memory already there). On a VM whose host takes freed memory back,
 * the huge-page case swings from run to run. Build and run:
 *   gcc -O2 benches/probes/freshmem.c -o /tmp/freshmem && for i in 1 2 3; do /tmp/freshmem; done
 * (docs/results.md, "Stop 26", quotes its numbers). */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define HUGE (2UL << 20)
#define LEN (64UL << 20)

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }

static int touch(int huge) {
    char *m = mmap(NULL, LEN + HUGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return 1;
    char *p = (char *)(((unsigned long)m + HUGE - 1) & ~(HUGE - 1));
    madvise(p, LEN, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
    double t0 = now();
    for (unsigned long i = 0; i < LEN; i += 4096) p[i] = 1;
    double t1 = now();
    memset(p, 2, LEN);
    double t2 = now();
    printf("%-10s first touch %6.1f ms (%5.2f GB/s), rewrite %5.2f GB/s\n", huge ? "huge pages" : "4 KiB", (t1 - t0) * 1e3,
           LEN / (t1 - t0) / 1e9, LEN / (t2 - t1) / 1e9);
    return munmap(m, LEN + HUGE);
}

int main(void) { return touch(0) || touch(1); }
