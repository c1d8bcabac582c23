/* Small copies and fills as programs make them: N (default 20 million) rounds of a
 * memcpy of 8 to 135 bytes and a memset of half that, at shifting offsets. Under the
 * modeled CPU (no SSE) i686 glibc runs them as `rep movsl`/`rep stosl` plus a `rep
 * movsb`/`rep stosb` of the 0-3 bytes left, so this is the short `rep` path of
 * docs/engine.md ("Short rep movsd / rep stosd"); natively glibc picks its SSE/AVX
 * functions. A guest, dynamic like the suite's programs:
 *   S=$(morph sysroot); gcc -m32 -O2 benches/probes/shortcopy.c -o $S/seed/shortcopy
 *   time morph run --root $S --engine dbt /seed/shortcopy; time chroot $S /seed/shortcopy
 * (docs/results.md, "Stop 43", quotes it). Prints a checksum. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char a[4096], b[4096];

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 20000000;
    unsigned sum = 0;
    for (long i = 0; i < n; i++) {
        size_t len = 8 + (size_t)(i * 37 & 127);
        memcpy(a + (i & 63), b + ((i * 7) & 63), len);
        memset(b + (i & 31), (int)i, len / 2);
        sum += (unsigned char)a[i & 255];
    }
    printf("%u\n", sum);
    return 0;
}
