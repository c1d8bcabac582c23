/* What a system call costs: 1 M calls of clock_gettime(CLOCK_MONOTONIC) (natively the
 * vDSO), of getppid (natively the kernel's entry and exit), and of getppid beside an x87
 * multiplication (under morph the guest's x87 state is in the host FPU then). A guest:
 * gcc -m32 -O2 -static benches/probes/syscall_cost.c -o /tmp/cg && /tmp/cg && morph run
 * /tmp/cg (docs/results.md § Stop 51). */
#include <stdio.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
int main(int c, char**v){ struct timespec t, t0, t1; long n = 1000000; clock_gettime(CLOCK_MONOTONIC,&t0);
 for(long i=0;i<n;i++) clock_gettime(CLOCK_MONOTONIC,&t);
 clock_gettime(CLOCK_MONOTONIC,&t1); double d=(t1.tv_sec-t0.tv_sec)*1e9+(t1.tv_nsec-t0.tv_nsec); printf("clock_gettime: %.1f ns/call\n", d/n);
 clock_gettime(CLOCK_MONOTONIC,&t0);
 for(long i=0;i<n;i++) syscall(SYS_getppid);
 clock_gettime(CLOCK_MONOTONIC,&t1); d=(t1.tv_sec-t0.tv_sec)*1e9+(t1.tv_nsec-t0.tv_nsec); printf("getppid: %.1f ns/call\n", d/n);
 double x=1; for(long i=0;i<n;i++){ x = x*1.0000001; syscall(SYS_getppid);} 
 clock_gettime(CLOCK_MONOTONIC,&t0); d=(t0.tv_sec-t1.tv_sec)*1e9+(t0.tv_nsec-t1.tv_nsec); printf("getppid+x87: %.1f ns/call %g\n", d/n, x);
}
