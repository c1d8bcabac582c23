/*
 * smc.c - self-modifying code, the classic trap for a dynamic binary
 * translator that caches translated blocks:
 *   1. code copied into an RWX anonymous mapping is called, an immediate
 *      inside it is patched, and the next call must see the new value
 *      (also after the old version ran thousands of times);
 *   2. a running loop patches an instruction a few bytes ahead of itself
 *      in the same basic block on every iteration;
 *   3. code overwrites the opcode of a following instruction;
 *   4. an instruction straddling a page boundary is patched on its
 *      second page;
 *   5. a mapping is unmapped and new code is mapped at the same address;
 *   6. the program's own .text is made writable with mprotect, patched,
 *      and protected again.
 * The code templates live in .rodata (position independent, offsets given
 * by a small header) and are copied where they are needed.
 */
#include "rt.h"

/*
 * Template layout: .long code offset, .long patch offset, .long length,
 * then the code.  All offsets are relative to the header start.
 *
 * t_ret_imm: returns a 32-bit immediate:   movl $imm32, %eax; ret
 * t_loop:    int f(int n): each iteration stores ECX into the immediate of
 *            the "addl $imm32, %esi" that follows, then executes it;
 *            returns the sum, n(n+1)/2 when the patches are seen.
 * t_opcode:  overwrites the "decl %eax" ahead of it with "incl %eax";
 *            returns 11 when the new opcode is executed, 9 otherwise.
 */
__asm__(".section .rodata\n"
	".p2align 2\n"
	"t_ret_imm:\n\t"
	".long 12, 13, 6\n\t"
	"movl $0x11111111, %eax\n\t"
	"ret\n"

	".p2align 2\n"
	"t_loop:\n\t"
	".long 12, 0, t_loop_end - t_loop - 12\n\t"
	"pushl %ebx\n\t"
	"pushl %esi\n\t"
	"movl 12(%esp), %ecx\n\t"
	"xorl %esi, %esi\n\t"
	"call 1f\n"
	"1:\tpopl %ebx\n"
	"2:\tmovl %ecx, 3f + 2 - 1b(%ebx)\n"
	"3:\t.byte 0x81, 0xc6\n\t.long 0\n\t"	/* addl $imm32, %esi */
	"loop 2b\n\t"
	"movl %esi, %eax\n\t"
	"popl %esi\n\t"
	"popl %ebx\n\t"
	"ret\n"
	"t_loop_end:\n"

	".p2align 2\n"
	"t_opcode:\n\t"
	".long 12, t_opcode_op - t_opcode, t_opcode_end - t_opcode - 12\n\t"
	"call 1f\n"
	"1:\tpopl %ecx\n\t"
	"movb $0x40, t_opcode_op - 1b(%ecx)\n\t"
	"movl $10, %eax\n"
	"t_opcode_op:\n\t"
	"decl %eax\n\t"
	"ret\n"
	"t_opcode_end:\n"
	".text\n");

extern const uint32_t t_ret_imm[], t_loop[], t_opcode[];

typedef uint32_t (*fn0)(void);
typedef uint32_t (*fn1)(uint32_t);

/* copy a template to dst; returns the entry point */
static void *place(void *dst, const uint32_t *tpl)
{
	memcpy(dst, (const char *)tpl + tpl[0], tpl[2]);
	return dst;
}

static uint32_t patch_off(const uint32_t *tpl)
{
	return tpl[1] - tpl[0];
}

static void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static void test_patch_imm(uint8_t *region)
{
	fn0 f = (fn0)place(region, t_ret_imm);
	uint8_t *imm = region + patch_off(t_ret_imm);
	uint32_t sum = 0;
	int i;

	printf("== patch an immediate\n");
	printf("first call: %08x\n", f());
	put32(imm, 0x22222222);
	printf("after patch: %08x\n", f());
	/* make the code hot, then patch again */
	for (i = 0; i < 20000; i++)
		sum += f();
	printf("20000 calls: sum %08x\n", sum);
	put32(imm, 0x33333333);
	printf("after second patch: %08x\n", f());
	/* patch between every call */
	sum = 0;
	for (i = 0; i < 1000; i++) {
		put32(imm, (uint32_t)i * 7);
		sum += f();
	}
	printf("patched before each of 1000 calls: sum %u (expect %u)\n", sum, 7u * 999 * 1000 / 2);
	/* a second copy at another address behaves independently */
	{
		fn0 g = (fn0)place(region + 256, t_ret_imm);

		put32(region + 256 + patch_off(t_ret_imm), 0x44444444);
		printf("two copies: %08x %08x\n", f(), g());
	}
}

static void test_loop_patch(uint8_t *region)
{
	fn1 f = (fn1)place(region + 512, t_loop);
	uint32_t n;

	printf("== loop patching the instruction ahead of it\n");
	for (n = 1; n <= 10000; n *= 10)
		printf("n=%u: %u (expect %u)\n", n, f(n), n * (n + 1) / 2);
}

static void test_opcode_patch(uint8_t *region)
{
	fn0 f = (fn0)place(region + 1024, t_opcode);
	uint8_t *op = region + 1024 + patch_off(t_opcode);

	printf("== overwrite a following opcode\n");
	printf("first run: %u (expect 11)\n", f());
	printf("opcode byte now %02x\n", *op);
	printf("second run: %u\n", f());
	*op = 0x48;	/* back to decl; the code patches itself again */
	printf("restored to 48, third run: %u\n", f());
}

static void test_page_straddle(uint8_t *region)
{
	/* put "movl $imm32, %eax; ret" so the immediate crosses into page 2 */
	uint8_t *code = region + 4096 - 3;
	fn0 f = (fn0)place(code, t_ret_imm);
	uint32_t sum = 0;
	int i;

	printf("== instruction across a page boundary\n");
	printf("before: %08x\n", f());
	for (i = 0; i < 5000; i++)
		sum += f();
	region[4096] = 0xab;	/* third immediate byte, on the second page */
	printf("after patching the second page: %08x (sum before %08x)\n", f(), sum);
	region[4096 - 2] = 0xcd;	/* first immediate byte, on the first page */
	printf("after patching the first page: %08x\n", f());
}

static void test_remap(void)
{
	uint8_t *p = map_rwx(NULL, 4096, 0), *q;
	fn0 f;
	long r;

	printf("== unmap and map new code at the same address\n");
	f = (fn0)place(p, t_ret_imm);
	put32(p + patch_off(t_ret_imm), 0x55555555);
	printf("old mapping: %08x\n", f());
	r = sys_munmap(p, 4096);
	printf("munmap: %ld\n", r);
	q = map_rwx(p, 4096, 1);
	printf("same address again: %s\n", q == p ? "yes" : "no");
	f = (fn0)place(q, t_ret_imm);
	put32(q + patch_off(t_ret_imm), 0x66666666);
	printf("new mapping: %08x\n", f());
	/* through RW -> RX protection changes */
	r = sys_mprotect(q, 4096, PROT_READ | PROT_WRITE);
	put32(q + patch_off(t_ret_imm), 0x77777777);
	r |= sys_mprotect(q, 4096, PROT_READ | PROT_EXEC);
	printf("mprotect RW, patch, RX (%ld): %08x\n", r, f());
	sys_munmap(q, 4096);
}

/* A function in our own .text: movl $imm32, %eax; ret */
__asm__(".text\n"
	".p2align 4\n"
	".type text_fn, @function\n"
	"text_fn:\n\t"
	"movl $0x12340000, %eax\n\t"
	"ret\n"
	".size text_fn, . - text_fn\n");
uint32_t text_fn(void);

static void test_own_text(void)
{
	volatile fn0 f = text_fn;	/* keep calls real */
	uint8_t *code = (uint8_t *)text_fn;
	uintptr_t page = (uintptr_t)code & ~(uintptr_t)4095;
	/* the pages holding the 6 bytes of the function */
	size_t len = ((uintptr_t)code + 6 - page + 4095) & ~(size_t)4095;
	uint32_t sum = 0;
	long r;
	int i;

	printf("== patch the program's own .text\n");
	for (i = 0; i < 10000; i++)
		sum += f();
	printf("before: %08x (sum %08x)\n", f(), sum);
	r = sys_mprotect((void *)page, len, PROT_READ | PROT_WRITE | PROT_EXEC);
	printf("mprotect rwx: %ld\n", r);
	put32(code + 1, 0x12345678);
	printf("after patch: %08x\n", f());
	r = sys_mprotect((void *)page, len, PROT_READ | PROT_EXEC);
	printf("mprotect rx: %ld, still %08x\n", r, f());
}

int main(void)
{
	uint8_t *region = map_rwx(NULL, 3 * 4096, 0);

	printf("rwx region page aligned: %s\n", ((uintptr_t)region & 4095) == 0 ? "yes" : "no");
	test_patch_imm(region);
	test_loop_patch(region);
	test_opcode_patch(region);
	test_page_straddle(region);
	test_remap();
	test_own_text();
	return 0;
}
