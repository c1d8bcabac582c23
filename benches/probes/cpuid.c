/* What one `cpuid` costs: on a virtual machine it exits to the hypervisor. glibc's
 * start-up asks it dozens of times (cache sizes, features: `handle_amd`, `init_cpu_features`),
 * in morph's own start and in every native process; a guest's `cpuid` under morph is
 * answered by the modeled CPU without leaving the process (docs/results.md, "Stop 43").
 * Host probe: gcc -O2 benches/probes/cpuid.c -o /tmp/cpuid && /tmp/cpuid */
#include <cpuid.h>
#include <stdio.h>
#include <time.h>

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

int main(void) {
    unsigned a, b, c, d, sum = 0;
    const int n = 2000;
    for (int leaf = 0; leaf < 2; leaf++) {
        unsigned l = leaf ? 0x8000001d : 0;
        double t0 = now_ns();
        for (int i = 0; i < n; i++) {
            __cpuid_count(l, i & 3, a, b, c, d);
            sum += a ^ b ^ c ^ d;
        }
        printf("cpuid leaf %#x: %.0f ns each\n", l, (now_ns() - t0) / n);
    }
    return sum == 1; /* keeps the results */
}
