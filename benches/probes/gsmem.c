/* What a guest memory access costs in each host form translated code could give it.
 *
 * morph addresses guest memory through the GS base with a 32-bit address size
 * (`gs:[ebx + 8]`, which wraps as the guest's address does). The alternative keeps the
 * window's base in a register and adds the guest register as an index (`[r9 + rbx + 8]`,
 * 64-bit, wrapping sums faulting in the unmapped guard around the window). This probe
 * times, on a 4 GiB window at a 4 GiB-aligned address (as morph's are):
 *   - dependent load chains (pointer chasing) in each form, and natively;
 *   - a store followed by a load of the same address (a spill and its reload), in each
 *     form and mixed: cores that rename memory (forward a store to a load of the same
 *     base register and displacement at rename, as Intel's Golden Cove does) do it for
 *     `gs:[reg + d]` but not for an indexed operand;
 *   - independent add-from-memory throughput (an indexed operand un-laminates);
 *   - the gs:[reg32] chain and spill again with a GS base of zero (a window at host
 *     address 0, as morph's first address space has since stop 41: on the Intel hosts
 *     measured, a non-zero segment base adds two cycles to every load).
 * docs/results.md § Stop 34 and § Stop 41 quote its numbers. Build and run:
 *   gcc -O2 benches/probes/gsmem.c -o /tmp/gsmem && /tmp/gsmem
 */
#define _GNU_SOURCE
#include <asm/prctl.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define N 100000000L

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

/* Prints the time per iteration since t0. */
static void report(const char *what, double t0) {
    printf("%-44s %.3f ns\n", what, (now() - t0) / (double)N * 1e9);
}

int main(void) {
    char *w = mmap((void *)(1UL << 40), 1UL << 32, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
    if (w == MAP_FAILED || syscall(SYS_arch_prctl, ARCH_SET_GS, (unsigned long)w) != 0) {
        perror("window");
        return 1;
    }
    /* A ring of 64 guest pointers, one per cache line, at guest address 0x1000. */
    const uint32_t base = 0x1000;
    for (int i = 0; i < 64; i++)
        *(uint32_t *)(w + base + i * 64) = base + ((i + 1) % 64) * 64;
    static uint64_t ring[64 * 8];
    for (int i = 0; i < 64; i++)
        ring[i * 8] = (uint64_t)&ring[((i + 1) % 64) * 8];
    uint64_t sp = 0x10000;
    double t0;

    {   /* native pointer chase: mov rax, [rax] */
        uint64_t q = (uint64_t)ring;
        t0 = now();
        for (long i = 0; i < N; i++)
            __asm__ volatile("mov (%0), %0" : "+r"(q)::"memory");
        report("load chain, native [reg]", t0);
    }
    {   /* gs:[reg] with a 32-bit address size */
        uint64_t q = base;
        t0 = now();
        for (long i = 0; i < N; i++)
            __asm__ volatile(".byte 0x65, 0x67\n\tmov (%k0), %k0" : "+r"(q)::"memory");
        report("load chain, gs:[reg32] (morph)", t0);
    }
    {   /* [window + reg] */
        uint64_t q = base;
        t0 = now();
        for (long i = 0; i < N; i++)
            __asm__ volatile("mov (%1,%0), %k0" : "+r"(q) : "r"(w) : "memory");
        report("load chain, [window + reg]", t0);
    }
    {   /* spill and reload through gs */
        uint64_t v = 0;
        t0 = now();
        for (long i = 0; i < N; i++)
            __asm__ volatile(".byte 0x65, 0x67\n\tmov %k0, -4(%k1)\n\t.byte 0x65, 0x67\n\tmov -4(%k1), %k0\n\tadd $1, %k0"
                             : "+r"(v) : "r"(sp) : "memory");
        report("store then load, gs:[reg32 + d] (morph)", t0);
    }
    {   /* spill and reload through the window register */
        uint64_t v = 0;
        t0 = now();
        for (long i = 0; i < N; i++)
            __asm__ volatile("mov %k0, -4(%2,%1)\n\tmov -4(%2,%1), %k0\n\tadd $1, %k0"
                             : "+r"(v) : "r"(sp), "r"(w) : "memory");
        report("store then load, [window + reg + d]", t0);
    }
    {   /* four independent add-from-memory */
        uint64_t a = 0, b = 0, c = 0, d = 0;
        t0 = now();
        for (long i = 0; i < N; i++)
            __asm__ volatile(".byte 0x65, 0x67\n\tadd 0x1000(%k4), %k0\n\t.byte 0x65, 0x67\n\tadd 0x1004(%k4), %k1\n\t"
                             ".byte 0x65, 0x67\n\tadd 0x1008(%k4), %k2\n\t.byte 0x65, 0x67\n\tadd 0x100c(%k4), %k3"
                             : "+r"(a), "+r"(b), "+r"(c), "+r"(d) : "r"(sp) : "memory");
        report("4 x add reg, gs:[reg32 + d] (morph)", t0);
    }
    {
        uint64_t a = 0, b = 0, c = 0, d = 0;
        t0 = now();
        for (long i = 0; i < N; i++)
            __asm__ volatile("add 0x1000(%5,%4), %k0\n\tadd 0x1004(%5,%4), %k1\n\t"
                             "add 0x1008(%5,%4), %k2\n\tadd 0x100c(%5,%4), %k3"
                             : "+r"(a), "+r"(b), "+r"(c), "+r"(d) : "r"(sp), "r"(w) : "memory");
        report("4 x add reg, [window + reg + d]", t0);
    }
    /* The same ring at guest (and host) address 1 MiB, GS's base zero. */
    char *low = mmap((void *)(1UL << 20), 1UL << 16, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (low != (char *)(1UL << 20) || syscall(SYS_arch_prctl, ARCH_SET_GS, 0UL) != 0) {
        perror("low window");
        return 1;
    }
    const uint32_t lbase = 1u << 20;
    for (int i = 0; i < 64; i++)
        *(uint32_t *)(low + i * 64) = lbase + ((i + 1) % 64) * 64;
    {
        uint64_t q = lbase;
        t0 = now();
        for (long i = 0; i < N; i++)
            __asm__ volatile(".byte 0x65, 0x67\n\tmov (%k0), %k0" : "+r"(q)::"memory");
        report("load chain, gs:[reg32], GS base 0", t0);
    }
    {
        uint64_t v = 0, lsp = lbase + 0x8000;
        t0 = now();
        for (long i = 0; i < N; i++)
            __asm__ volatile(".byte 0x65, 0x67\n\tmov %k0, -4(%k1)\n\t.byte 0x65, 0x67\n\tmov -4(%k1), %k0\n\tadd $1, %k0"
                             : "+r"(v) : "r"(lsp) : "memory");
        report("store then load, gs:[reg32 + d], GS base 0", t0);
    }
    return 0;
}
