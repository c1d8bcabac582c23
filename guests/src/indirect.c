/*
 * indirect.c - indirect control flow: a dense switch compiled to a jump
 * table, tables of function pointers (which in the static-PIE build are
 * R_386_RELATIVE-relocated data), calls through registers and memory,
 * a computed-goto bytecode interpreter (GCC labels as values), sibling
 * tail calls (enabled for this file) deep enough that they must be jumps,
 * stdcall/fastcall callees that pop their arguments with "ret imm16", a
 * return address modified on the stack, and a chain of 64 distinct
 * functions.
 */
#pragma GCC optimize("optimize-sibling-calls")
#include "rt.h"

/* ---- dense switch -> jump table ----------------------------------------- */
static __attribute__((noinline)) uint32_t op_switch(unsigned op, uint32_t x)
{
	switch (op) {
	case 0: return x + 1;
	case 1: return x * 3;
	case 2: return x ^ 0x5a5a5a5a;
	case 3: return x >> 3;
	case 4: return x << 5;
	case 5: return ~x;
	case 6: return x - 77;
	case 7: return x * x;
	case 8: return x | 0x10001;
	case 9: return x & 0xff00ff;
	case 10: return (x << 16) | (x >> 16);
	case 11: return x + 0x9e3779b9;
	case 12: return x / 7 + 1;
	case 13: return x % 1000;
	case 14: return -x;
	case 15: return x ^ (x >> 7);
	case 16: return x * 0x01000193;
	case 17: return x + (x << 2);
	case 18: return x - (x >> 1);
	case 19: return x ^ 0xffffffff;
	case 20: return (x << 3) - x;
	case 21: return x + 21;
	case 22: return x ^ 22;
	case 23: return x * 23;
	case 24: return x >> 24 | x << 8;
	case 25: return x + 0x25;
	case 26: return x & ~0x26u;
	case 27: return x | 0x27000000;
	case 28: return x * 5 + 3;
	case 29: return (x ^ 0x29) + 1;
	case 30: return x >> 1;
	case 31: return x << 1;
	default: return 0xdefa0000 | op;
	}
}

/* ---- function pointer tables ------------------------------------------------ */
/* regparm(1): the argument arrives in EAX, which the asm call sites use */
#define RP __attribute__((regparm(1), noinline))
static RP uint32_t f_inc(uint32_t x) { return x + 1; }
static RP uint32_t f_dbl(uint32_t x) { return x * 2; }
static RP uint32_t f_sq(uint32_t x) { return x * x; }
static RP uint32_t f_neg(uint32_t x) { return -x; }
static RP uint32_t f_rot(uint32_t x) { return x << 13 | x >> 19; }
static RP uint32_t f_xor(uint32_t x) { return x ^ 0xa5a5a5a5; }
static RP uint32_t f_sub(uint32_t x) { return x - 1000; }
static RP uint32_t f_mix(uint32_t x) { return (x ^ (x >> 15)) * 0x2c1b3c6d; }

typedef uint32_t (__attribute__((regparm(1))) *fn_t)(uint32_t);
static fn_t const table[8] = { f_inc, f_dbl, f_sq, f_neg, f_rot, f_xor, f_sub, f_mix };
static fn_t wtable[8];	/* filled at run time */

static uint32_t call_reg(fn_t f, uint32_t x)
{
	__asm__ volatile("call *%[f]" : "+a" (x) : [f] "r" (f) : "ecx", "edx", "memory", "cc");
	return x;
}

static uint32_t call_mem(fn_t const *tab, unsigned i, uint32_t x)
{
	__asm__ volatile("call *(%[t],%[i],4)" : "+a" (x) : [t] "r" (tab), [i] "r" (i)
			 : "ecx", "edx", "memory", "cc");
	return x;
}

static uint32_t jmp_reg(fn_t f, uint32_t x)
{
	/* push a return address, then jump: an indirect jmp that returns */
	__asm__ volatile("call 1f\n\t"
			 "jmp 2f\n"
			 "1:\tjmp *%[f]\n"
			 "2:"
			 : "+a" (x) : [f] "r" (f) : "ecx", "edx", "memory", "cc");
	return x;
}

/* ---- computed goto interpreter --------------------------------------------- */
enum { OP_PUSH, OP_ADD, OP_MUL, OP_DUP, OP_SWAP, OP_OVER, OP_DEC, OP_JNZ, OP_DROP, OP_HALT };

static int32_t run_bytecode(const int32_t *code)
{
	static void *const dispatch[] = {
		&&do_push, &&do_add, &&do_mul, &&do_dup, &&do_swap, &&do_over, &&do_dec,
		&&do_jnz, &&do_drop, &&do_halt,
	};
	int32_t stack[16], *sp = stack;
	const int32_t *pc = code;

#define NEXT goto *dispatch[*pc++]
	NEXT;
do_push:
	*sp++ = *pc++;
	NEXT;
do_add:
	sp--;
	sp[-1] += sp[0];
	NEXT;
do_mul:
	sp--;
	sp[-1] *= sp[0];
	NEXT;
do_dup:
	sp[0] = sp[-1];
	sp++;
	NEXT;
do_swap: {
	int32_t t = sp[-1];

	sp[-1] = sp[-2];
	sp[-2] = t;
	NEXT;
}
do_over:
	sp[0] = sp[-2];
	sp++;
	NEXT;
do_dec:
	sp[-1]--;
	NEXT;
do_jnz:
	if (sp[-1] != 0)
		pc = code + *pc;
	else
		pc++;
	NEXT;
do_drop:
	sp--;
	NEXT;
do_halt:
	return sp[-1];
#undef NEXT
}

/* ---- tail calls -------------------------------------------------------------- */
static uint32_t tail_odd(uint32_t n, uint32_t acc);

static __attribute__((noinline)) uint32_t tail_even(uint32_t n, uint32_t acc)
{
	if (n == 0)
		return acc;
	return tail_odd(n - 1, acc * 3 + 1);
}

static __attribute__((noinline)) uint32_t tail_odd(uint32_t n, uint32_t acc)
{
	if (n == 0)
		return acc ^ 0xffff;
	return tail_even(n - 1, acc + (n & 7));
}

/* an explicit tail jump in assembly: tail_asm(x) = f_mix(x + 5) */
__asm__(".text\n"
	".type tail_asm, @function\n"
	"tail_asm:\n\t"
	"addl $5, %eax\n\t"
	"jmp f_mix_alias\n"
	".size tail_asm, . - tail_asm\n");
uint32_t __attribute__((regparm(1))) tail_asm(uint32_t x);
uint32_t __attribute__((regparm(1), used)) f_mix_alias(uint32_t x)
{
	return f_mix(x);
}

/* ---- callee-pops conventions ---------------------------------------------- */
static __attribute__((stdcall, noinline)) uint32_t std3(uint32_t a, uint32_t b, uint32_t c)
{
	return a * 100 + b * 10 + c;
}

static __attribute__((stdcall, noinline)) uint64_t std_wide(uint64_t a, uint32_t b)
{
	return a * b + 1;
}

static __attribute__((fastcall, noinline)) uint32_t fast4(uint32_t a, uint32_t b, uint32_t c, uint32_t d)
{
	return (a - b) * (c + d);	/* a, b in ECX, EDX; c, d on the stack */
}

typedef uint32_t (__attribute__((stdcall)) *std_fn)(uint32_t, uint32_t, uint32_t);

/* "ret $8" written out, called from asm that checks ESP is balanced */
__asm__(".text\n"
	".type ret8_fn, @function\n"
	"ret8_fn:\n\t"
	"movl 4(%esp), %eax\n\t"
	"subl 8(%esp), %eax\n\t"
	"ret $8\n"
	".size ret8_fn, . - ret8_fn\n");

static uint32_t call_ret8(uint32_t a, uint32_t b, int32_t *esp_delta)
{
	uint32_t r, before, after;

	__asm__ volatile("movl %%esp, %[bf]\n\t"
			 "pushl %[b]\n\t"
			 "pushl %[a]\n\t"
			 "call ret8_fn\n\t"
			 "movl %%esp, %[af]"
			 : "=a" (r), [bf] "=&r" (before), [af] "=&r" (after)
			 : [a] "r" (a), [b] "r" (b) : "ecx", "edx", "memory", "cc");
	*esp_delta = (int32_t)(after - before);
	return r;
}

/* ---- return address games --------------------------------------------------- */
static uint32_t skip_return(void)
{
	uint32_t r;

	__asm__ volatile("movl $0, %0\n\t"
			 "call 1f\n\t"
			 ".byte 0xb8\n\t.long 1\n\t"	/* movl $1, %eax: skipped */
			 ".byte 0xeb, 0x07\n\t"		/* jmp +7: skipped */
			 ".byte 0xb8\n\t.long 2\n\t"	/* movl $2, %eax: landing */
			 "jmp 2f\n"
			 "1:\taddl $7, (%%esp)\n\t"	/* return past 7 bytes */
			 "ret\n"
			 "2:"
			 : "=a" (r) : : "memory", "cc");
	return r;
}

static uint32_t call_pop_distance(void)
{
	uint32_t a, b;

	__asm__ volatile("call 1f\n"
			 "1:\tpopl %0\n\t"
			 "call 2f\n"
			 "2:\tpopl %1"
			 : "=r" (a), "=r" (b));
	return b - a;
}

/* ---- a chain of distinct functions --------------------------------------- */
#define CHAIN(n, next) \
	static __attribute__((noinline)) uint32_t chain##n(uint32_t x) { return next((x ^ n) * 33 + n); }
static __attribute__((noinline)) uint32_t chain_end(uint32_t x) { return x; }
#define C8(a, b, c, d, e, f, g, h, nx) \
	CHAIN(h, nx) CHAIN(g, chain##h) CHAIN(f, chain##g) CHAIN(e, chain##f) \
	CHAIN(d, chain##e) CHAIN(c, chain##d) CHAIN(b, chain##c) CHAIN(a, chain##b)
C8(56, 57, 58, 59, 60, 61, 62, 63, chain_end)
C8(48, 49, 50, 51, 52, 53, 54, 55, chain56)
C8(40, 41, 42, 43, 44, 45, 46, 47, chain48)
C8(32, 33, 34, 35, 36, 37, 38, 39, chain40)
C8(24, 25, 26, 27, 28, 29, 30, 31, chain32)
C8(16, 17, 18, 19, 20, 21, 22, 23, chain24)
C8(8, 9, 10, 11, 12, 13, 14, 15, chain16)
C8(0, 1, 2, 3, 4, 5, 6, 7, chain8)

int main(void)
{
	uint32_t h, x;
	unsigned i, j;
	int32_t d;

	/* switch */
	h = 0;
	for (i = 0; i < 3000; i++)
		h = h * 31 + op_switch((i * 7) % 37, i ^ h);
	printf("switch: %08x\n", h);

	/* function pointers: C calls, asm register/memory calls, jmp */
	for (i = 0; i < 8; i++)
		wtable[7 - i] = table[i];
	h = 1;
	for (i = 0; i < 1000; i++) {
		j = (h >> 7) & 7;
		h = table[j](h) + i;
		h = call_reg(wtable[j], h);
		h = call_mem(table, i & 7, h);
		h = call_mem(wtable, (i >> 3) & 7, h);
		h = jmp_reg(table[(i + 3) & 7], h);
	}
	printf("function pointers: %08x\n", h);

	/* computed goto: factorial of 12 and a counted loop */
	{
		static const int32_t fact[] = {
			OP_PUSH, 1, OP_PUSH, 12,		/* acc n */
			/* 4: */ OP_SWAP, OP_OVER, OP_MUL,	/* n acc*n */
			OP_SWAP, OP_DEC, OP_JNZ, 4,		/* acc n-1 */
			OP_DROP, OP_HALT,
		};
		static const int32_t count[] = {
			OP_PUSH, 0, OP_PUSH, 100000,		/* sum n */
			/* 4: */ OP_SWAP, OP_PUSH, 3, OP_ADD, OP_SWAP, OP_DEC, OP_JNZ, 4,
			OP_DROP, OP_HALT,
		};

		printf("bytecode: %d %d\n", run_bytecode(fact), run_bytecode(count));
	}

	/* tail calls: 2,000,000 deep would overflow the stack as real calls */
	printf("tail calls: %08x\n", tail_even(2000000, 7));
	printf("asm tail jump: %08x\n", tail_asm(12345));

	/* callee-pops */
	{
		std_fn sp = std3;

		printf("stdcall: %u %u %llu\n", std3(1, 2, 3), sp(4, 5, 6),
		       (unsigned long long)std_wide(0x100000001ull, 3));
		printf("fastcall: %u\n", fast4(100, 1, 2, 3));
		x = call_ret8(50, 8, &d);
		printf("ret $8: result %u, esp change %d\n", x, d);
	}

	printf("return address skip: %u\n", skip_return());
	printf("call/pop distance: %u\n", call_pop_distance());

	h = 0;
	for (i = 0; i < 200; i++)
		h += chain0(i + h);
	printf("chain of 64 calls: %08x\n", h);
	return 0;
}
