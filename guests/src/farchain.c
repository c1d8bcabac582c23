/*
 * farchain.c - direct calls and jumps from one page of code into another,
 * hot enough to be chained across the page boundary, and then everything
 * that must break such a chain: the target page's code rewritten in place,
 * a different page mapped at the target's address, the target page moved
 * elsewhere and its old address left unmapped (SIGSEGV when called), and a
 * conditional branch into the next page. Each phase must see the code the
 * page holds now.
 */
#include "rt.h"

#define PAGE 4096

/* "movl $imm, %eax; ret" at p. */
static void put_ret_imm(uint8_t *p, uint32_t imm)
{
	p[0] = 0xb8;
	memcpy(p + 1, &imm, 4);
	p[5] = 0xc3;
}

/* A relative call or jump (opcode bytes `op`, `oplen` of them) at p to `to`. */
static uint8_t *put_rel(uint8_t *p, const uint8_t *op, int oplen, const uint8_t *to)
{
	memcpy(p, op, oplen);
	int32_t rel = (int32_t)(to - (p + oplen + 4));
	memcpy(p + oplen, &rel, 4);
	return p + oplen + 4;
}

typedef uint32_t (*fn0)(void);
typedef uint32_t (*fn1)(uint32_t);

static uint32_t run(fn0 f, int n)
{
	uint32_t sum = 0;
	for (int i = 0; i < n; i++)
		sum += f();
	return sum;
}

static uint32_t run1(fn1 f, int n)
{
	uint32_t sum = 0;
	for (int i = 0; i < n; i++)
		sum += f((uint32_t)i);
	return sum;
}

static void on_segv(int sig)
{
	(void)sig;
	printf("called into the unmapped page: SIGSEGV\n");
	exit(0);
}

int main(void)
{
	/* Two adjacent pages: A (a caller) and B (the callee), B at A + 4096. */
	uint8_t *a = map_rwx(0, 2 * PAGE, 0);
	uint8_t *b = a + PAGE;
	static const uint8_t call[] = { 0xe8 }, jmp[] = { 0xe9 }, jnz[] = { 0x0f, 0x85 };
	/* A+0: call B; ret.  A+16: jmp B+16.  A+32: test %eax,%eax (the argument in
	 * 4(%esp)); jnz B+32; mov $5, %eax; ret. */
	put_rel(a, call, 1, b)[0] = 0xc3;
	put_rel(a + 16, jmp, 1, b + 16);
	uint8_t *p = a + 32;
	static const uint8_t load_arg[] = { 0x8b, 0x44, 0x24, 0x04, 0x85, 0xc0 };
	memcpy(p, load_arg, sizeof load_arg);
	p = put_rel(p + sizeof load_arg, jnz, 2, b + 32);
	put_ret_imm(p, 5);
	put_ret_imm(b, 1);
	put_ret_imm(b + 16, 2);
	put_ret_imm(b + 32, 3);
	fn0 fa = (fn0)(void *)a, fj = (fn0)(void *)(a + 16);
	fn1 fc = (fn1)(void *)(a + 32);
	printf("chained: call %u, jmp %u, jnz %u\n", run(fa, 3000), run(fj, 3000), run1(fc, 3000));

	/* The target page rewritten in place. */
	put_ret_imm(b, 10);
	put_ret_imm(b + 16, 20);
	put_ret_imm(b + 32, 30);
	printf("rewritten: call %u, jmp %u, jnz %u\n", run(fa, 3000), run(fj, 3000), run1(fc, 3000));

	/* Another page mapped at the target's address. */
	b = map_rwx(b, PAGE, 1);
	put_ret_imm(b, 100);
	put_ret_imm(b + 16, 200);
	put_ret_imm(b + 32, 300);
	printf("remapped: call %u, jmp %u, jnz %u\n", run(fa, 3000), run(fj, 3000), run1(fc, 3000));

	/* Alternating between two callers of the same target under load. */
	uint32_t mix = 0;
	for (int i = 0; i < 3000; i++)
		mix += (i & 1) ? fa() : fj();
	printf("alternating: %u\n", mix);

	/* The target page unmapped: the chained call must fault. */
	/* rt_sigaction(SIGSEGV) with SA_RESTORER (0x04000000). */
	struct ksigaction sa = { (void *)on_segv, 0x04000000, (void *)restore_legacy, { 0, 0 } };
	rt_syscall(174, 11, &sa, 0, 8);
	rt_syscall(SYS_munmap, b, PAGE);
	printf("unmapped: calling\n");
	fa();
	printf("FAIL: returned from the unmapped page\n");
	return 1;
}
