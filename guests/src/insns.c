/*
 * insns.c - instructions user programs use that a P6-family CPU runs at
 * CPL 3: a far return and iret to the current code segment, loop/loopz/
 * loopnz with the address-size prefix (counting in CX), push and pop of
 * segment registers with the operand-size prefix (2 bytes) and without it,
 * and the hint NOPs 0F 18-0F 1F with any ModR/M (no fault, no memory access,
 * no register or flag change).  Each runs 60 times so it is also translated.
 */
#include "rt.h"

/* ----- far return and iret to the same code segment ----- */

uint32_t lret_run(uint32_t v);
uint32_t lret_imm_run(uint32_t v);
uint32_t iret_run(uint32_t flags);
__asm__(".text\n"
	/* eax = v; lret to 1f; 1: eax += 1 */
	"lret_run:\n\tmovl 4(%esp), %eax\n\tcall 2f\n2:\tpopl %ecx\n\taddl $(1f-2b), %ecx\n"
	"\tpushl %cs\n\tpushl %ecx\n\tlret\n\tmovl $-1, %eax\n1:\tincl %eax\n\tret\n"
	/* lret $8 drops two more words */
	"lret_imm_run:\n\tmovl 4(%esp), %eax\n\tmovl %esp, %edx\n\tcall 2f\n2:\tpopl %ecx\n\taddl $(1f-2b), %ecx\n"
	"\tpushl $0x1111\n\tpushl $0x2222\n\tpushl %cs\n\tpushl %ecx\n\tlret $8\n\tmovl $-1, %eax\n"
	"1:\tsubl %esp, %edx\n\taddl %edx, %eax\n\tret\n"
	/* iret with given arithmetic flags and DF; returns the flags after it */
	"iret_run:\n\tcall 2f\n2:\tpopl %ecx\n\taddl $(1f-2b), %ecx\n"
	"\tpushfl\n\tandl $~0xcd5, (%esp)\n\tmovl 8(%esp), %eax\n\tandl $0xcd5, %eax\n\torl %eax, (%esp)\n"
	"\tpushl %cs\n\tpushl %ecx\n\tiret\n\tmovl $-1, %eax\n\tret\n"
	"1:\tpushfl\n\tpopl %eax\n\tcld\n\tandl $0xcd5, %eax\n\tret\n");

static void far_returns(void)
{
	for (int round = 0; round < 60; round++) {
		uint32_t a = lret_run(41), b = lret_imm_run(100), c = iret_run(0x8d5), d = iret_run(0x400);
		uint32_t e = iret_run(0);
		if (round == 0 || round == 59)
			printf("lret %u, lret $8 %u, iret flags %#x %#x %#x\n", a, b, c, d, e);
	}
}

/* ----- loop with the address-size prefix ----- */

uint32_t loop16(uint32_t ecx, uint32_t kind, uint32_t *iters);
__asm__(".text\n"
	"loop16:\n\tpushl %ebx\n\tmovl 8(%esp), %ecx\n\tmovl 12(%esp), %edx\n\txorl %ebx, %ebx\n"
	"\tcmpl $1, %edx\n\tje 3f\n\tcmpl $2, %edx\n\tje 4f\n"
	"1:\tincl %ebx\n\t.byte 0x67\n\tloop 1b\n\tjmp 9f\n"
	/* loopz: ZF set by the compare while ebx < 5 */
	"3:\tincl %ebx\n\tcmpl $5, %ebx\n\tsetb %al\n\tcmpb $1, %al\n\t.byte 0x67\n\tloopz 3b\n\tjmp 9f\n"
	/* loopnz: ZF clear while ebx < 5 */
	"4:\tincl %ebx\n\tcmpl $5, %ebx\n\t.byte 0x67\n\tloopnz 4b\n"
	"9:\tmovl 16(%esp), %edx\n\tmovl %ebx, (%edx)\n\tmovl %ecx, %eax\n\tpopl %ebx\n\tret\n");

static void loops(void)
{
	static const uint32_t counts[] = { 0x00010001, 0xabcd0003, 0x12340000, 0x00000002, 0xffff0008 };
	for (int round = 0; round < 60; round++)
		for (unsigned i = 0; i < 5; i++)
			for (uint32_t kind = 0; kind < 3; kind++) {
				uint32_t it = 0, ecx = loop16(counts[i], kind, &it);
				if ((round == 0 || round == 59) && (it < 100000))
					printf("addr16 %s ecx %#010x: %u iterations, ecx %#010x\n",
					       kind == 0 ? "loop  " : kind == 1 ? "loopz " : "loopnz", counts[i], it, ecx);
			}
}

/* ----- segment register push/pop with and without the operand-size prefix ----- */

/* out[0..]: ESP deltas of each push/pop; out[k]: whether the popped value equals the register */
void segs_run(uint32_t *out);
__asm__(".text\n"
	"segs_run:\n\tpushl %ebx\n\tpushl %esi\n\tmovl 12(%esp), %esi\n"
#define PP(i, push, pop, movreg)                                                           \
	"\tmovl %esp, %ebx\n\t" push "\n\tmovl %ebx, %eax\n\tsubl %esp, %eax\n\tmovl %eax, " #i "*8(%esi)\n" \
	"\tmovl %esp, %ebx\n\t" pop "\n\tmovl %esp, %eax\n\tsubl %ebx, %eax\n\tmovl %eax, " #i "*8+4(%esi)\n"
	PP(0, ".byte 0x66, 0x0f, 0xa0", ".byte 0x66, 0x0f, 0xa1", "fs")
	PP(1, ".byte 0x66, 0x0f, 0xa8", ".byte 0x66, 0x0f, 0xa9", "gs")
	PP(2, ".byte 0x66, 0x06", ".byte 0x66, 0x07", "es")
	PP(3, ".byte 0x66, 0x1e", ".byte 0x66, 0x1f", "ds")
	PP(4, ".byte 0x66, 0x16", ".byte 0x66, 0x17", "ss")
	PP(5, ".byte 0x66, 0x0e", ".byte 0x66, 0x58", "cs")
	PP(6, "pushl %fs", "popl %fs", "fs")
	PP(7, "pushl %ds", "popl %ds", "ds")
	PP(8, "pushl %cs", "popl %eax", "cs")
	/* the popped 16-bit value is the register */
	"\t.byte 0x66, 0x1e\n\t.byte 0x66, 0x58\n\tmovw %ds, %cx\n\tcmpw %ax, %cx\n\tsete %al\n\tmovzbl %al, %eax\n"
	"\tmovl %eax, 72(%esi)\n"
	"\t.byte 0x66, 0x0f, 0xa0\n\tpopw %ax\n\tmovw %fs, %cx\n\tcmpw %ax, %cx\n\tsete %al\n\tmovzbl %al, %eax\n"
	"\tmovl %eax, 76(%esi)\n"
	/* pushl of a segment register stores 16 bits (P6): the slot's upper half stays */
	"\tmovl $0xa5a5a5a5, -4(%esp)\n\tpushl %ds\n\tpopl %eax\n\tshrl $16, %eax\n\tmovl %eax, 80(%esi)\n"
	"\tmovl $0x5a5a5a5a, -4(%esp)\n\tpushl %fs\n\tpopl %eax\n\tshrl $16, %eax\n\tmovl %eax, 84(%esi)\n"
	"\tpopl %esi\n\tpopl %ebx\n\tret\n");

static void segs(void)
{
	static const char *names[] = { "pushw/popw fs", "pushw/popw gs", "pushw/popw es", "pushw/popw ds",
				       "pushw/popw ss", "pushw cs/popw ax", "pushl/popl fs", "pushl/popl ds",
				       "pushl cs/popl eax" };
	for (int round = 0; round < 60; round++) {
		uint32_t out[22];
		segs_run(out);
		if (round != 0 && round != 59)
			continue;
		for (int i = 0; i < 9; i++)
			printf("%-18s push %u bytes, pop %u bytes\n", names[i], out[2 * i], out[2 * i + 1]);
		printf("popped ds %s, popped fs %s\n", out[18] ? "same" : "DIFFERENT", out[19] ? "same" : "DIFFERENT");
		printf("pushl ds leaves the slot's upper half %04x, pushl fs %04x\n", out[20], out[21]);
	}
}

/* ----- hint NOPs ----- */

#define SIGILL_	4
#define SIGSEGV_ 11
#define SA_SIGINFO_	4
#define SA_NODEFER_	0x40000000
#define SA_RESTORER_	0x04000000

#include "hints.inc"
extern char hints[];
#define NHINTS (sizeof hint_off / sizeof hint_off[0] - 1)

static volatile int faulted[NHINTS];

static void hint_handler(int sig, void *si, void *uc)
{
	uint32_t *eip = &((uint32_t *)uc)[5 + 14];
	uint32_t off = *eip - (uint32_t)hints;
	for (unsigned i = 0; i < NHINTS; i++)
		if (hint_off[i] == off) {
			faulted[i] = sig;
			*eip = (uint32_t)hints + hint_off[i + 1];
			return;
		}
	raw_puts(1, "fault outside the hints\n");
	rt_syscall(1, 1);
}

/* Runs the hints with known registers and flags; out: the registers and flags after. */
void hints_run(uint32_t *out);
__asm__(".text\n"
	"hints_run:\n\tpushl %ebp\n\tpushl %ebx\n\tpushl %esi\n\tpushl %edi\n\tpushl 20(%esp)\n"
	"\tmovl $0x11111111, %eax\n\tmovl $0x22222222, %ebx\n\tmovl $0x33333333, %ecx\n"
	"\tmovl $0x44444444, %edx\n\tmovl $0x55555555, %esi\n\tmovl $0x66666666, %edi\n"
	"\tmovl $0x77777777, %ebp\n\tstc\n"
	"\tcall hints\n"
	"\tpushfl\n\tpushl %ebp\n\tmovl 8(%esp), %ebp\n"
	"\tmovl %eax, 0(%ebp)\n\tmovl %ebx, 4(%ebp)\n\tmovl %ecx, 8(%ebp)\n\tmovl %edx, 12(%ebp)\n"
	"\tmovl %esi, 16(%ebp)\n\tmovl %edi, 20(%ebp)\n\tpopl %eax\n\tmovl %eax, 24(%ebp)\n"
	"\tpopl %eax\n\tandl $0x8d5, %eax\n\tmovl %eax, 28(%ebp)\n"
	"\taddl $4, %esp\n\tpopl %edi\n\tpopl %esi\n\tpopl %ebx\n\tpopl %ebp\n\tret\n");

static void hint_nops(void)
{
	struct ksigaction a = { (void *)hint_handler, SA_SIGINFO_ | SA_NODEFER_ | SA_RESTORER_, (void *)restore_rt,
				{ 0, 0 } };
	rt_syscall(174, SIGILL_, &a, 0, 8);
	rt_syscall(174, SIGSEGV_, &a, 0, 8);
	for (int round = 0; round < 60; round++) {
		uint32_t out[8];
		for (unsigned i = 0; i < NHINTS; i++)
			faulted[i] = 0;
		hints_run(out);
		if (round != 0 && round != 59)
			continue;
		int n = 0;
		for (unsigned i = 0; i < NHINTS; i++)
			if (faulted[i]) {
				n++;
				printf("hint %u (offset %u) raised signal %d\n", i, hint_off[i], faulted[i]);
			}
		printf("%u hint NOPs, %d faulted; after: %08x %08x %08x %08x %08x %08x %08x flags %#x\n", (unsigned)NHINTS,
		       n, out[0], out[1], out[2], out[3], out[4], out[5], out[6], out[7]);
	}
}

/* ----- string instructions with the address-size prefix (SI, DI, CX) ----- */

/* Every rep form with CX = 0 and the upper half of ECX set: nothing is accessed (no
 * memory is mapped below 64 KiB), ECX, ESI and EDI stay as they are. Returns ECX + ESI
 * + EDI after the five forms. */
uint32_t str16_run(void);
__asm__(".text\n"
	"str16_run:\n\tpushl %esi\n\tpushl %edi\n\tmovl $0x12340000, %ecx\n\tmovl $0x56780010, %esi\n"
	"\tmovl $0x9abc0020, %edi\n\tcld\n"
	"\t.byte 0x67, 0xf3, 0xa4\n"   /* rep movsb (SI, DI, CX) */
	"\t.byte 0x67, 0xf3, 0xab\n"   /* rep stosd */
	"\t.byte 0x67, 0xf3, 0xac\n"   /* rep lodsb */
	"\t.byte 0x67, 0xf3, 0xa6\n"   /* repe cmpsb */
	"\t.byte 0x67, 0xf2, 0xae\n"   /* repne scasb */
	"\tmovl %ecx, %eax\n\taddl %esi, %eax\n\taddl %edi, %eax\n\tpopl %edi\n\tpopl %esi\n\tret\n");

static void strings16(void)
{
	for (int round = 0; round < 60; round++) {
		uint32_t v = str16_run();
		if (round == 0 || round == 59)
			printf("addr16 rep strings with CX = 0: %#010x\n", v);
	}
}

int main(void)
{
	far_returns();
	loops();
	segs();
	hint_nops();
	strings16();
	return 0;
}
