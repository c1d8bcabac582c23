/*
 * conform.c - runs instruction cases and prints what each left, so that the
 * same cases run natively and under morph can be compared line by line (the
 * hardware is the reference; crates/cli/tests/conform.rs generates the cases
 * from morph's instruction table).
 *
 * A case is a few bytes of code and the eight registers and EFLAGS to start
 * them with.  The code is copied into a page of its own, followed by 32 NOPs
 * (where a branch 20 bytes forward lands) and a `jmp *exit_ptr`; it runs with
 * a scratch data page at DATA (the page after it unmapped) and a stack page at
 * STACK, both filled with the same pattern before every case.  What it leaves
 * is printed as one line: how it ended (the exit, or the signal with si_code,
 * si_addr, trapno, error code and EIP, registers from the signal frame), the
 * eight registers, EFLAGS, the segment registers, the x87 environment as
 * FNSAVE stores it (control, status and tag words, instruction pointer,
 * selector and opcode, operand pointer and selector), and hashes of the x87
 * registers, the data page and the stack page.
 *
 * Usage: conform -     cases from standard input, 96-byte records:
 *                      code[60] (code[0] = length, then the bytes),
 *                      eax ecx edx ebx esp ebp esi edi eflags (u32, LE)
 *        conform       a few built-in cases (a division by zero, ud2, a
 *                      return to an unmapped address, the trap flag, x87)
 */
#include "rt.h"

#define SYS_rt_sigaction_ 174
#define SYS_sigaltstack_ 186
#define SA_SIGINFO_ 4
#define SA_ONSTACK_ 0x08000000
#define SA_NODEFER_ 0x40000000
#define SA_RESTORER_ 0x04000000

#define CODE 0x30000000u
#define DATA 0x30100000u
#define STACK 0x30200000u

#define UC_W(uc, i) (((uint32_t *)(uc))[5 + (i)])

/* What run_case, the exit stub and the handler share, in a page at a fixed
   address (STATE), so that the stub reaches it through SS by absolute
   addresses, whatever the case left in DS, and without relocations (the
   program is also built as a static PIE). */
#define STATE 0x30300000u
struct state {
	uint32_t g_regs[8], g_eflags;	/* 0x00: the case's eax ecx edx ebx esp ebp esi edi, EFLAGS */
	uint32_t pad0[7];
	uint32_t o_regs[8], o_eflags;	/* 0x40: what it left */
	uint32_t o_seg[4];		/* 0x64: ds es fs gs */
	uint32_t pad1[3];
	uint32_t c_esp, c_seg[4];	/* 0x80: the harness's stack and segments */
	uint32_t pad2[3];
	uint32_t code_ptr, exit_ptr;	/* 0xa0 */
	uint32_t pad3[22];
	uint8_t o_fpu[108];		/* 0x100: FNSAVE's image */
	uint8_t pad4[148];
	uint8_t i_fpu[108];		/* 0x200: the image every case starts from (FRSTOR) */
};
#define ST ((struct state *)STATE)
_Static_assert(__builtin_offsetof(struct state, o_regs) == 0x40, "layout");
_Static_assert(__builtin_offsetof(struct state, c_esp) == 0x80, "layout");
_Static_assert(__builtin_offsetof(struct state, code_ptr) == 0xa0, "layout");
_Static_assert(__builtin_offsetof(struct state, o_fpu) == 0x100, "layout");
_Static_assert(__builtin_offsetof(struct state, i_fpu) == 0x200, "layout");
uint32_t o_sig, o_code, o_addr, o_trapno, o_err, o_eip;

void run_case(void);
void exit_stub(void);
void resume(void);

__asm__(".text\n"
	".globl run_case\n"
	"run_case:\n"
	"\tpushl %ebp\n\tpushl %ebx\n\tpushl %esi\n\tpushl %edi\n"
	"\tmovl %esp, 0x30300080\n"
	"\tmovw %ds, 0x30300084\n\tmovw %es, 0x30300088\n\tmovw %fs, 0x3030008c\n\tmovw %gs, 0x30300090\n"
	"\tfrstor 0x30300200\n"
	"\tmovl 0x30300010, %esp\n"
	"\tpushl 0x30300020\n\tpopfl\n"
	"\tmovl 0x30300000, %eax\n\tmovl 0x30300004, %ecx\n\tmovl 0x30300008, %edx\n\tmovl 0x3030000c, %ebx\n"
	"\tmovl 0x30300014, %ebp\n\tmovl 0x30300018, %esi\n\tmovl 0x3030001c, %edi\n"
	"\tjmp *0x303000a0\n"
	".globl exit_stub\n"
	"exit_stub:\n"
	"\tmovl %eax, %ss:0x30300040\n\tmovl %ecx, %ss:0x30300044\n\tmovl %edx, %ss:0x30300048\n"
	"\tmovl %ebx, %ss:0x3030004c\n\tmovl %esp, %ss:0x30300050\n\tmovl %ebp, %ss:0x30300054\n"
	"\tmovl %esi, %ss:0x30300058\n\tmovl %edi, %ss:0x3030005c\n"
	"\tmovl $0x30300800, %esp\n"
	"\tpushfl\n\tpopl %ss:0x30300060\n"
	"\tpushl $0x202\n\tpopfl\n"
	"\tmovw %ds, %ss:0x30300064\n\tmovw %es, %ss:0x30300068\n\tmovw %fs, %ss:0x3030006c\n\tmovw %gs, %ss:0x30300070\n"
	"\tmovw %ss:0x30300084, %ds\n\tmovw %ss:0x30300088, %es\n\tmovw %ss:0x3030008c, %fs\n\tmovw %ss:0x30300090, %gs\n"
	".globl resume\n"
	"resume:\n"
	"\tmovl 0x30300080, %esp\n"
	"\tfnsave 0x30300100\n"
	"\tcld\n"
	"\tpopl %edi\n\tpopl %esi\n\tpopl %ebx\n\tpopl %ebp\n"
	"\tret\n");

static void on_signal(int sig, void *si, void *uc)
{
	o_sig = (uint32_t)sig;
	o_code = ((uint32_t *)si)[2];
	o_addr = ((uint32_t *)si)[3];
	o_trapno = UC_W(uc, 12);
	o_err = UC_W(uc, 13);
	o_eip = UC_W(uc, 14);
	ST->o_eflags = UC_W(uc, 16);
	static const int at[8] = { 11, 10, 9, 8, 7, 6, 5, 4 }; /* eax ecx edx ebx esp ebp esi edi */
	for (int i = 0; i < 8; i++)
		ST->o_regs[i] = UC_W(uc, at[i]);
	for (int i = 0; i < 4; i++)
		ST->o_seg[i] = UC_W(uc, 3 - i) & 0xffff; /* ds es fs gs */
	/* Back to the harness: its stack and segments, flags clear but IF. */
	for (int i = 0; i < 4; i++)
		UC_W(uc, 3 - i) = ST->c_seg[i];
	UC_W(uc, 7) = ST->c_esp;
	UC_W(uc, 14) = (uint32_t)resume;
	UC_W(uc, 16) = 0x202;
}

static uint32_t hash(const void *p, size_t n)
{
	const uint8_t *b = p;
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 16777619u;
	return h;
}

static void fill(uint32_t page, uint32_t mul)
{
	for (uint32_t i = 0; i < 1024; i++)
		((uint32_t *)page)[i] = i * mul;
}

/* Runs one case: `code` (n bytes) from the given registers; prints its line. */
static void one(unsigned idx, const uint8_t *code, unsigned n, const uint32_t *regs, uint32_t eflags)
{
	uint8_t *c = (uint8_t *)CODE;
	fill(DATA, 0x9e3779b9u);
	fill(STACK, 0x85ebca6bu);
	memcpy(c, code, n);
	memset(c + n, 0x90, 32);
	c[n + 32] = 0xff;
	c[n + 33] = 0x25;
	uint32_t ep = STATE + 0xa4;
	memcpy(c + n + 34, &ep, 4);
	memcpy(ST->g_regs, regs, 32);
	ST->g_eflags = eflags;
	o_sig = 0;
	run_case();
	char how[96];
	if (o_sig)
		snprintf(how, sizeof how, "sig%u/%d/%08x/t%u/e%x/@%08x", o_sig, (int)o_code, o_addr, o_trapno, o_err, o_eip);
	else
		snprintf(how, sizeof how, "exit");
	const uint32_t *env = (const uint32_t *)ST->o_fpu;
	printf("%u %s a=%08x c=%08x d=%08x b=%08x sp=%08x bp=%08x si=%08x di=%08x fl=%08x seg=%x/%x/%x/%x "
	       "cw=%x sw=%x tw=%x fip=%x fcs=%x fdp=%x fds=%x st=%08x m=%08x s=%08x\n",
	       idx, how, ST->o_regs[0], ST->o_regs[1], ST->o_regs[2], ST->o_regs[3], ST->o_regs[4], ST->o_regs[5],
	       ST->o_regs[6], ST->o_regs[7], ST->o_eflags, ST->o_seg[0], ST->o_seg[1], ST->o_seg[2], ST->o_seg[3],
	       env[0] & 0xffff, env[1] & 0xffff, env[2] & 0xffff, env[3], env[4], env[5], env[6] & 0xffff,
	       hash(ST->o_fpu + 28, 80), hash((void *)DATA, 4096),
	       hash((void *)STACK, 4096));
}

/* The built-in cases (no arguments). */
static void builtin(void)
{
	static const struct {
		uint8_t n, code[12];
	} cases[] = {
		{ 2, { 0x01, 0xd8 } },			/* add %ebx, %eax */
		{ 2, { 0xf7, 0xf1 } },			/* div %ecx: ECX 0, #DE */
		{ 2, { 0x0f, 0x0b } },			/* ud2 */
		{ 1, { 0xc3 } },			/* ret to the stack's pattern: unmapped */
		{ 3, { 0x68, 0x02, 0x03 } },		/* push $imm32 (4 bytes, the pattern's) */
		{ 5, { 0x68, 0x02, 0x03, 0x00, 0x00 } }, /* push $0x302 */
		{ 6, { 0x68, 0x02, 0x03, 0x00, 0x00, 0x9d } }, /* push $0x302; popf: TF */
		{ 4, { 0xd9, 0xe8, 0xd9, 0xfa } },	/* fld1; fsqrt */
		{ 3, { 0xf3, 0xa5, 0x90 } },		/* rep movsd */
		{ 3, { 0x8b, 0x43, 0x40 } },		/* mov 0x40(%ebx), %eax */
	};
	uint32_t regs[8] = { 0x12345678, 0, 7, DATA, STACK + 0x800, 0x9abcdef0, DATA + 0x100, DATA + 0x200 };
	for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		regs[1] = i == 8 ? 0x300 : 0;
		one(i, cases[i].code, cases[i].n, regs, 0x202 | (i & 1 ? 0x8d5 : 0));
	}
}

int main(int argc, char **argv)
{
	map_rwx((void *)CODE, 4096, 1);
	if (sys_failed(sys_mmap2((void *)DATA, 4096, 3, 0x32, -1, 0)) ||
	    sys_failed(sys_mmap2((void *)STACK, 4096, 3, 0x32, -1, 0)) ||
	    sys_failed(sys_mmap2((void *)STATE, 4096, 3, 0x32, -1, 0))) {
		eprintf("conform: cannot map the data and stack pages\n");
		return 1;
	}
	/* Every case starts from the same x87 state: FNINIT's control, status and tag
	   words and pointers, and registers holding a pattern (MMX reads them whatever
	   their tags say). */
	uint32_t *img = (uint32_t *)ST->i_fpu;
	img[0] = 0xffff037f;
	img[1] = 0xffff0000;
	img[2] = 0xffffffff;
	for (int i = 28; i < 108; i++)
		ST->i_fpu[i] = (uint8_t)(i * 37 + 11);
	ST->code_ptr = CODE;
	ST->exit_ptr = (uint32_t)exit_stub;
	/* Handlers on a stack of their own: a case may leave ESP anywhere. */
	static uint8_t alt[16384] __attribute__((aligned(16)));
	struct {
		void *sp;
		int flags;
		size_t size;
	} ss = { alt, 0, sizeof alt };
	if (rt_syscall(SYS_sigaltstack_, &ss, 0) != 0) {
		eprintf("conform: sigaltstack failed\n");
		return 1;
	}
	for (int s = 4; s <= 11; s++) {
		if (s == 6 || s == 9 || s == 10)
			continue;
		struct ksigaction a = { (void *)on_signal, SA_SIGINFO_ | SA_ONSTACK_ | SA_NODEFER_ | SA_RESTORER_,
					(void *)restore_rt, { 0, 0 } };
		rt_syscall(SYS_rt_sigaction_, s, &a, 0, 8);
	}
	if (argc < 2) {
		builtin();
		return 0;
	}
	if (strcmp(argv[1], "-") != 0) {
		eprintf("usage: conform [-]\n");
		return 2;
	}
	static uint8_t rec[96];
	unsigned idx = 0;
	for (;;) {
		size_t got = 0;
		while (got < sizeof rec) {
			long r = sys_read(0, rec + got, sizeof rec - got);
			if (r <= 0)
				break;
			got += (size_t)r;
		}
		if (got < sizeof rec)
			break;
		uint32_t regs[9];
		memcpy(regs, rec + 60, 36);
		unsigned n = rec[0] > 59 ? 59 : rec[0];
		one(idx++, rec + 1, n, regs, regs[8]);
	}
	printf("%u cases\n", idx);
	return 0;
}
