/* What keeping the guest's flags costs around a short `rep movsd`'s checks
 * (docs/engine.md, "Short rep movsd / rep stosd"): the checks (count zero, direction
 * flag, count above 64) between an `add` that sets the flags and an `adc` that reads
 * them, with the flags saved and given back
 *   - through memory: `pushfq; pop [m]`, DF tested in [m], then `push rax; mov eax, [m];
 *     shl eax, 8; bt [m], 11; setc al; add al, 0x7f; sahf; pop rax` (morph until stop 43);
 *   - in a register: `mov r9, rax; lahf; seto al; xchg r9, rax`, DF read by a `stosb`
 *     into a scratch word, then `xchg r9, rax; add al, 0x7f; sahf; xchg r9, rax`
 *     (morph since stop 43);
 *   - in a register with DF read by `pushfq` from the stack;
 *   - `pushfq`, the checks, `push; popfq` (the slowest: `popfq` is microcoded).
 * Host probe: gcc -O2 benches/probes/flagsave.c -o /tmp/flagsave && /tmp/flagsave */
#include <stdint.h>
#include <stdio.h>
#include <time.h>

static uint64_t word[4];

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

#define CHECKS "test %%ecx, %%ecx\n\t jz 1f\n\t cmp $64, %%ecx\n\t ja 1f\n\t"
#define TIME(label, body)                                                                   \
    do {                                                                                    \
        double t0 = now_ns();                                                               \
        for (long i = 0; i < N; i++)                                                        \
            __asm__ volatile("add $1, %%rdx\n\t" body "1: adc $0, %%rdx\n\t"                \
                             : : "r"(word), "c"(5)                                          \
                             : "rax", "rdx", "r8", "r9", "r10", "rdi", "memory", "cc");     \
        printf("%-34s %5.2f ns\n", label, (now_ns() - t0) / N);                             \
    } while (0)

int main(void) {
    const long N = 100000000;
    for (int round = 0; round < 2; round++) {
        TIME("flags through memory", "pushfq\n\t pop (%0)\n\t testb $4, 1(%0)\n\t jnz 1f\n\t" CHECKS
             "push %%rax\n\t mov (%0), %%eax\n\t shl $8, %%eax\n\t btl $11, (%0)\n\t"
             "setc %%al\n\t add $0x7f, %%al\n\t sahf\n\t pop %%rax\n\t");
        TIME("flags in r9, DF by stosb", "mov %%rax, %%r9\n\t lahf\n\t seto %%al\n\t xchg %%r9, %%rax\n\t"
             "lea 8(%0), %%r8\n\t xchg %%rdi, %%r8\n\t stosb\n\t xchg %%rdi, %%r8\n\t"
             "lea 9(%0), %%r10\n\t cmp %%r10, %%r8\n\t jne 1f\n\t" CHECKS
             "xchg %%r9, %%rax\n\t add $0x7f, %%al\n\t sahf\n\t xchg %%r9, %%rax\n\t");
        TIME("flags in r9, DF by pushfq", "mov %%rax, %%r9\n\t lahf\n\t seto %%al\n\t xchg %%r9, %%rax\n\t"
             "pushfq\n\t testb $4, 1(%%rsp)\n\t lea 8(%%rsp), %%rsp\n\t jnz 1f\n\t" CHECKS
             "xchg %%r9, %%rax\n\t add $0x7f, %%al\n\t sahf\n\t xchg %%r9, %%rax\n\t");
        TIME("pushfq ... popfq", "pushfq\n\t pop %%r9\n\t bt $10, %%r9d\n\t jc 1f\n\t" CHECKS
             "push %%r9\n\t popfq\n\t");
        TIME("nothing (the add and adc alone)", "");
    }
    return 0;
}
