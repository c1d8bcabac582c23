/* A recursive-descent expression evaluator (twelve precedence levels, one function each,
 * as bash's expr.c): calls and returns of a deep, regular call tree, the shape of the
 * interpreters' hot paths. Its time under morph is bimodal on the AMD EPYC VM of stop 29
 * (1.07-1.18 s or 1.29-1.33 s for 2,000,000 evaluations from one run to the next, with
 * identical counters; native 1.06-1.09 s), so compare builds over many runs. Build and run:
 *   gcc -m32 -O2 -static benches/probes/recdesc.c -o /tmp/recdesc
 *   for i in 1 2 3 4 5; do /usr/bin/time -f %U target/x86_64-unknown-linux-gnu/release/morph run --engine dbt -- /tmp/recdesc 2000000; done
 * (docs/results.md, "Stop 29", quotes its numbers). */
#include <stdio.h>
#include <stdlib.h>

static const char *p;
#define N __attribute__((noinline))
N static long prim(void);
N static long l11(void) { long v = prim(); while (*p == '^') { p++; v ^= prim(); } return v; }
N static long l10(void) { long v = l11(); while (*p == '&') { p++; v &= l11(); } return v; }
N static long l9(void) { long v = l10(); while (*p == '|') { p++; v |= l10(); } return v; }
N static long l8(void) { long v = l9(); while (*p == '<') { p++; v = v < l9(); } return v; }
N static long l7(void) { long v = l8(); while (*p == '=') { p++; v = v == l8(); } return v; }
N static long l6(void) { long v = l7(); while (*p == '%') { p++; long d = l7(); v = d ? v % d : 0; } return v; }
N static long l5(void) { long v = l6(); while (*p == '/') { p++; long d = l6(); v = d ? v / d : 0; } return v; }
N static long l4(void) { long v = l5(); while (*p == '*') { p++; v *= l5(); } return v; }
N static long l3(void) { long v = l4(); while (*p == '-') { p++; v -= l4(); } return v; }
N static long l2(void) { long v = l3(); while (*p == '+') { p++; v += l3(); } return v; }
N static long l1(void) {
    long v = l2();
    while (*p == '?') { p++; long a = l2(); p++; long b = l2(); v = v ? a : b; }
    return v;
}
N static long prim(void) {
    if (*p == '(') { p++; long v = l1(); p++; return v; }
    long v = 0;
    while (*p >= '0' && *p <= '9') { v = v * 10 + (*p - '0'); p++; }
    return v;
}

int main(int argc, char **argv) {
    const char *e = "1+2*(3-4)+5*6-(7+8)*9+10-11+(12*13)-14+15*(16-17)+18";
    long s = 0;
    int n = argc > 1 ? atoi(argv[1]) : 1000000;
    for (int i = 0; i < n; i++) { p = e; s += l1() + i; }
    printf("%ld\n", s);
    return 0;
}
