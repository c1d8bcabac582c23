/* What a short `rep movsd` costs: 5 million copies of N dwords (default 16), each
 * one `rep movsl`, as i686 glibc's memcpy does them. Build as a guest and run it natively
 * and under morph, for a few N:
 *   gcc -m32 -O2 -static benches/probes/repmovs.c -o /tmp/repmovs
 *   for n in 2 16 32 64 65; do time /tmp/repmovs $n; time morph run --engine dbt /tmp/repmovs $n; done
 * Natively the host's `rep movsd` has a start-up cost whatever N; under morph a count of
 * 1 to 64 runs as wide loads and stores (docs/engine.md, "Short rep movsd / rep stosd";
 * docs/results.md, "Stop 33", quotes its numbers). Prints a checksum of the copies. */
#include <stdio.h>
#include <stdlib.h>

static char src[1 << 16], dst[1 << 16];

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 16;
    unsigned sum = 0;
    for (int i = 0; i < (1 << 16); i++)
        src[i] = (char)(i * 7);
    for (int i = 0; i < 5000000; i++) {
        int off = (i * 64) & 0x7fff;
        void *s = src + off, *d = dst + off;
        int c = n;
        __asm__ volatile("rep movsl" : "+S"(s), "+D"(d), "+c"(c) : : "memory");
        sum += (unsigned char)dst[off];
    }
    printf("%u\n", sum);
    return 0;
}
