/*
 * retstack.c - returns that a return-address predictor must get wrong and
 * survive (morph's --ras): recursion deeper than its stack, __builtin_longjmp
 * out of a recursion, a callee that moves its return address, "call 1f; 1:
 * pop" (a call that never returns), "push; ret" (a return that no call
 * made), mutual recursion through function pointers, and calls whose
 * return address is the last byte of a page. Each loop runs often enough to
 * be translated.
 */
#include "rt.h"

/* ---- deep recursion: more pending returns than the stack holds ---------- */
static __attribute__((noinline)) uint32_t deep(uint32_t n)
{
	if (n == 0)
		return 1;
	return deep(n - 1) * 3 + n;
}

/* ---- longjmp out of a recursion ----------------------------------------- */
static void *jb[5];
static __attribute__((noinline)) uint32_t down(uint32_t n, uint32_t acc)
{
	if (n == 0)
		__builtin_longjmp(jb, 1);
	return down(n - 1, acc * 7 + n) + 1;
}

static __attribute__((noinline)) uint32_t jumps(unsigned rounds)
{
	volatile uint32_t landed = 0;
	for (volatile unsigned i = 0; i < rounds; i++) {
		if (__builtin_setjmp(jb) == 0)
			down(20 + i % 13, i);
		else
			landed++;
	}
	return landed;
}

/* ---- hand-written returns ------------------------------------------------ */
/* redirect(): its callee adds to the return address, so the return lands past
 * the instruction after the call. eip_of(): "call 1f; 1: pop". push_ret():
 * "push; ret" to a label, then a plain return. */
uint32_t redirect(void);
uint32_t eip_delta(void);
uint32_t push_ret(void);
__asm__(".text\n"
	".globl redirect\n"
	"redirect:\n"
	"	call 3f\n"
	"1:	movl $0, %eax\n"
	"	ret\n"
	"2:	movl $1, %eax\n"
	"	ret\n"
	"3:	addl $(2b - 1b), (%esp)\n"
	"	ret\n"
	".globl eip_delta\n"
	"eip_delta:\n"
	"	call 1f\n"
	"1:	popl %eax\n"
	"	call 2f\n"
	"2:	popl %ecx\n"
	"	subl %eax, %ecx\n"
	"	movl %ecx, %eax\n"
	"	ret\n"
	".globl push_ret\n"
	"push_ret:\n"
	"	call 1f\n"
	"1:	popl %ecx\n"
	"	addl $(2f - 1b), %ecx\n"
	"	pushl %ecx\n"
	"	ret\n"
	"2:	movl $7, %eax\n"
	"	ret\n");

/* ---- mutual recursion through function pointers -------------------------- */
typedef uint32_t (*fn)(uint32_t);
static uint32_t ping(uint32_t n);
static uint32_t pong(uint32_t n);
static volatile fn table[2] = { ping, pong };
static __attribute__((noinline)) uint32_t ping(uint32_t n)
{
	return n == 0 ? 0 : table[1](n - 1) + 2;
}
static __attribute__((noinline)) uint32_t pong(uint32_t n)
{
	return n == 0 ? 1 : table[0](n - 1) * 3;
}

/* ---- a call at the end of a page: its return address starts the next ---- */
uint32_t page_end_call(void);
__asm__(".text\n"
	".p2align 12\n"
	"	.fill 4096 - 8, 1, 0x90\n"
	".globl page_end_call\n"
	"page_end_call:\n"
	"	xorl %eax, %eax\n"
	"	incl %eax\n"
	"	call 1f\n"
	"	addl $5, %eax\n"
	"	ret\n"
	"1:	addl $10, %eax\n"
	"	ret\n");

int main(void)
{
	uint32_t sum = 0;
	for (unsigned i = 0; i < 300; i++)
		sum = sum * 31 + deep(5000 + i);
	printf("deep: %08x\n", sum);
	printf("longjmp: %u landings\n", jumps(400));
	uint32_t r = 0, d = 0, p = 0, m = 0, e = 0;
	for (unsigned i = 0; i < 400; i++) {
		r += redirect();
		d += eip_delta();
		p += push_ret();
		m = m * 17 + ping(i % 40);
		e += page_end_call();
	}
	printf("redirect %u, eip deltas %u, push/ret %u, ping-pong %08x, page end %u\n", r, d, p, m, e);
	return 0;
}
