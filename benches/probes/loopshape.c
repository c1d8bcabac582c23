/*
 * loopshape.c - what the host charges for the instructions a translator adds to a hot
 * loop (docs/results.md, stop 27).
 *
 * The loop is the inner loop of guests/bench/matmul.c, c[i][j] += a[i][k] * b[k][j]
 * over 160 columns, run over a 160x160 B and C (100 KiB each) as matmul does. Each
 * variant is the same loop in another shape:
 *
 *   native     the guest's loop as gcc made it, memory through gs with 32-bit
 *              addresses (as morph's translated code addresses the guest window)
 *   native@48  the same loop starting 48 bytes into a 64-byte window (so that it
 *              straddles two); every other loop starts at a 64-byte boundary
 *   plain      the native loop with ordinary 64-bit addresses (no segment)
 *   x4         unrolled four times, each copy leaving on `je` (morph's unrolled shape),
 *              nothing else
 *   x4+nop     the same plus one `nop` per trip
 *   x8+lea     unrolled eight times plus one `lea` per trip
 *   morph      morph's translation of the loop: x4, plus the instruction count (`lea
 *              r11, [r11 + n << 24]`) and the budget check (`lea r10, [r10 + 1]; movzx
 *              r8d, byte [r10]`, r10 walking a zero page) per trip
 *   plain+3    plain x4 plus the same three instructions
 *
 * Prints nanoseconds per iteration (one multiply-add), the minimum of 5 runs each. Run
 * it a few times: on the AMD EPYC host of docs/results.md some shapes take one of two
 * speeds from one process to the next.
 * Build and run: gcc -O2 benches/probes/loopshape.c -o /tmp/loopshape && /tmp/loopshape
 */
#define _GNU_SOURCE
#include <asm/prctl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define DIM 160
#define REPS 40

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

/* One multiply-add step, memory through gs with 32-bit addresses. */
#define GS "mov %%gs:(%%ebx,%%eax,4),%%ecx\nimul %%esi,%%ecx\nadd %%ecx,%%gs:(%%edx,%%eax,4)\ninc %%eax\ncmp $160,%%eax\n"
/* The same with 64-bit addresses. */
#define PL "mov (%%rbx,%%rax,4),%%ecx\nimul %%esi,%%ecx\nadd %%ecx,(%%rdx,%%rax,4)\ninc %%eax\ncmp $160,%%eax\n"
#define EXIT "je 2f\n"
/* Every loop starts at a 64-byte boundary (the host fetches code in 64-byte windows). */
#define ALIGN "jmp 1f\n.p2align 6\n"
#define INSTR "lea 0x18000000(%%r11),%%r11\nlea 1(%%r10),%%r10\nmovzbl (%%r10),%%r8d\n"

enum { NATIVE, NATIVE48, PLAIN, X4, X4NOP, X8LEA, MORPH, PLAIN3, NVARIANTS };
static const char *const names[NVARIANTS] = { "native", "native@48", "plain", "x4", "x4+nop", "x8+lea", "morph", "plain+3" };

static double run(int v, uint8_t *mem, uint8_t *zero)
{
	register uint64_t r10 asm("r10") = (uint64_t)zero;
	register uint64_t r11 asm("r11") = 0;
	uint32_t boff = 0x10000, coff = boff + DIM * DIM * 4;
	double t0 = now();

	for (int rep = 0; rep < REPS; rep++)
		for (uint32_t i = 0; i < DIM; i++)
			for (uint32_t k = 0; k < DIM; k++) {
				uint64_t b = boff + k * DIM * 4, c = coff + i * DIM * 4, aik = k * 3 + 1;
				uint64_t bp = (uint64_t)mem + b, cp = (uint64_t)mem + c;

				r10 = (uint64_t)zero;
				switch (v) {
				case NATIVE:
					__asm__ volatile("xor %%eax,%%eax\n" ALIGN "1:\n" GS "jne 1b\n"
							 : : "b"(b), "d"(c), "S"(aik) : "eax", "ecx", "memory", "cc");
					break;
				case NATIVE48:
					__asm__ volatile("xor %%eax,%%eax\n" ALIGN ".fill 48,1,0x90\n1:\n" GS "jne 1b\n"
							 : : "b"(b), "d"(c), "S"(aik) : "eax", "ecx", "memory", "cc");
					break;
				case PLAIN:
					__asm__ volatile("xor %%eax,%%eax\n" ALIGN "1:\n" PL "jne 1b\n"
							 : : "b"(bp), "d"(cp), "S"(aik) : "eax", "ecx", "memory", "cc");
					break;
				case X4:
					__asm__ volatile("xor %%eax,%%eax\n" ALIGN "1:\n" GS EXIT GS EXIT GS EXIT GS "jne 1b\n2:\n"
							 : : "b"(b), "d"(c), "S"(aik) : "eax", "ecx", "memory", "cc");
					break;
				case X4NOP:
					__asm__ volatile("xor %%eax,%%eax\n" ALIGN "1:\nnop\n" GS EXIT GS EXIT GS EXIT GS "jne 1b\n2:\n"
							 : : "b"(b), "d"(c), "S"(aik) : "eax", "ecx", "memory", "cc");
					break;
				case X8LEA:
					__asm__ volatile("xor %%eax,%%eax\n" ALIGN "1:\nlea 0x18(%%r11),%%r11\n" GS EXIT GS EXIT GS EXIT GS EXIT
							 GS EXIT GS EXIT GS EXIT GS "jne 1b\n2:\n"
							 : "+r"(r11) : "b"(b), "d"(c), "S"(aik) : "eax", "ecx", "memory", "cc");
					break;
				case MORPH:
					__asm__ volatile("xor %%eax,%%eax\n" ALIGN "1:\nlea 1(%%r10),%%r10\nmovzbl (%%r10),%%r8d\n"
							 GS EXIT GS EXIT GS EXIT GS "lea 0x18000000(%%r11),%%r11\njne 1b\n2:\n"
							 : "+r"(r10), "+r"(r11) : "b"(b), "d"(c), "S"(aik)
							 : "eax", "ecx", "r8", "memory", "cc");
					break;
				case PLAIN3:
					__asm__ volatile("xor %%eax,%%eax\n" ALIGN "1:\n" INSTR PL EXIT PL EXIT PL EXIT PL "jne 1b\n2:\n"
							 : "+r"(r10), "+r"(r11) : "b"(bp), "d"(cp), "S"(aik)
							 : "eax", "ecx", "r8", "memory", "cc");
					break;
				}
			}
	return (now() - t0) / ((double)REPS * DIM * DIM * DIM) * 1e9;
}

int main(void)
{
	uint8_t *mem = mmap(NULL, 1 << 22, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	/* Read only, never written: the kernel's zero page, as morph's budget region is
	 * (r10 restarts at each row: 40 trips, one byte each). */
	uint8_t *zero = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (mem == MAP_FAILED || zero == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	memset(mem, 1, 1 << 22);
	if (syscall(SYS_arch_prctl, ARCH_SET_GS, (unsigned long)mem) != 0) {
		perror("arch_prctl");
		return 1;
	}
	for (int v = 0; v < NVARIANTS; v++) {
		double best = 1e9;

		for (int i = 0; i < 5; i++) {
			double t = run(v, mem, zero);

			if (t < best)
				best = t;
		}
		printf("%-8s %.3f ns/iteration\n", names[v], best);
	}
	return 0;
}
