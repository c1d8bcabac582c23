/*
 * randcode.c - runs random bytes as code, one child process per program:
 *
 *   randcode SEED N [FIRST [sys]]
 *
 * Child i (of N, from FIRST) maps 8 KiB of random code at 0x20000000 and 64 KiB of
 * random data at 0x10000000 (both read-write-execute), points ESP into the data and
 * the other registers at the data or anywhere, loads GS with the null selector and
 * jumps to a random offset of the code. System calls are taken out of the bytes
 * (int n, sysenter, syscall become nop), so the program can only fault, trap or
 * loop (a 100 ms timer ends that). A handler on an alternate stack prints what the
 * CPU reported (signal, si_code, si_addr, EIP relative to the code, trapno, err) and
 * every register; the parent prints each child's status. Everything is a function
 * of SEED, so two runs agree line for line, unless the CPUs differ: the
 * interpreter's and the translator's runs must (crates/cli/tests/conform.rs); a
 * native run differs where the host's layout (its stack near 4 GiB, a 2.6-style
 * stack under morph), its time stamp counter or its instructions beyond the modeled
 * CPU's reach in, which made this a tool as well (docs/results.md, stop 48).
 *
 * With `sys`, the code makes system calls instead: every `int n` becomes `int 0x80`
 * and EAX starts as a random call number below 450, the other registers as above
 * (for runs under morph only, in a scratch root: a robustness test, not a
 * differential one, since what the calls return depends on the machine).
 *
 * Without arguments it prints how to use it (the guest suite runs it so).
 */
#include "rt.h"

#define SYS_rt_sigaction_ 174
#define SYS_sigaltstack_ 186
#define SYS_setitimer_ 104
#define SA_SIGINFO_ 4
#define SA_ONSTACK_ 0x08000000
#define SA_RESTORER_ 0x04000000
#define CODE 0x20000000u
#define DATA 0x10000000u
#define CODE_SIZE 8192u
#define DATA_SIZE 65536u

static uint32_t state;

static uint32_t rnd(void)
{
	state ^= state << 13;
	state ^= state >> 17;
	state ^= state << 5;
	return state;
}

static unsigned saved_gs;
static char altstack[32768];

/* i386 ucontext: uc_flags, uc_link, uc_stack (12 bytes), then the registers. */
enum { GS, FS, ES, DS, EDI, ESI, EBP, ESP, EBX, EDX, ECX, EAX, TRAPNO, ERR, EIP, CS, EFL };

static void on_signal(int sig, uint32_t *info, uint8_t *uc)
{
	__asm__ volatile("movl %0, %%gs" ::"r"(saved_gs));
	const uint32_t *g = (const uint32_t *)(uc + 20);
	char b[256];
	int n;
	if (sig == 14) /* the timer: where it lands depends on the host's speed */
		n = snprintf(b, sizeof b, "  alarm\n");
	else
		n = snprintf(b, sizeof b,
			     "  sig %d code %d addr %08x eip+%08x trap %u err %x a=%08x c=%08x d=%08x b=%08x "
			     "sp=%08x bp=%08x si=%08x di=%08x fl=%03x\n",
			     sig, (int)info[2], info[3], g[EIP] - CODE, g[TRAPNO], g[ERR], g[EAX], g[ECX], g[EDX],
			     g[EBX], g[ESP], g[EBP], g[ESI], g[EDI], g[EFL] & 0x8d5);
	rt_syscall(SYS_write, 1, b, n);
	_exit(100 + sig);
}

static int with_syscalls;

static void child(uint32_t seed)
{
	state = seed;
	struct { void *sp; int flags; size_t size; } ss = { altstack, 0, sizeof altstack };
	rt_syscall(SYS_sigaltstack_, &ss, 0);
	static const int sigs[] = { 4, 5, 7, 8, 11, 14 };
	for (unsigned k = 0; k < sizeof sigs / sizeof sigs[0]; k++) {
		struct ksigaction a = { (void *)on_signal, SA_SIGINFO_ | SA_ONSTACK_ | SA_RESTORER_,
					(void *)restore_rt, { 0, 0 } };
		rt_syscall(SYS_rt_sigaction_, sigs[k], &a, 0, 8);
	}
	uint32_t timer[4] = { 0, 0, 0, 100000 }; /* it_interval 0, it_value 100 ms */
	rt_syscall(SYS_setitimer_, 0, timer, 0);
	uint8_t *code = (uint8_t *)sys_mmap2((void *)CODE, CODE_SIZE, 7, 0x32, -1, 0);
	uint8_t *data = (uint8_t *)sys_mmap2((void *)DATA, DATA_SIZE, 7, 0x32, -1, 0);
	if (code != (uint8_t *)CODE || data != (uint8_t *)DATA)
		_exit(2);
	for (uint32_t j = 0; j < CODE_SIZE; j++)
		code[j] = (uint8_t)rnd();
	for (uint32_t j = 0; j < DATA_SIZE; j++)
		data[j] = (uint8_t)rnd();
	uint32_t *regs = (uint32_t *)DATA;
	for (int j = 0; j < 6; j++) {
		uint32_t pick = rnd(), v = rnd();
		regs[j] = (pick & 1) ? DATA + (v & 0xfff0) : v;
	}
	for (uint32_t j = 0; j + 1 < CODE_SIZE; j++) {
		if (with_syscalls && code[j] == 0xcd)
			code[j + 1] = 0x80;
		else if (code[j] == 0xcd || (code[j] == 0x0f && (code[j + 1] == 0x34 || code[j + 1] == 0x05)))
			code[j] = 0x90;
	}
	if (with_syscalls)
		regs[0] = rnd() % 450;
	regs[6] = CODE + (rnd() & 0xfff);
	__asm__ volatile("movl %%gs, %0" : "=r"(saved_gs));
	__asm__ volatile("movl $0x10008000, %%esp\n\t"
			 "movl 0x10000000, %%eax\n\tmovl 0x10000004, %%ebx\n\tmovl 0x10000008, %%ecx\n\t"
			 "movl 0x1000000c, %%edx\n\tmovl 0x10000010, %%esi\n\tmovl 0x10000014, %%edi\n\t"
			 "xorl %%ebp, %%ebp\n\tmovw %%bp, %%gs\n\t"
			 "jmp *0x10000018" ::: "memory");
	__builtin_unreachable();
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		printf("usage: randcode SEED N [FIRST]\n");
		return 0;
	}
	state = (uint32_t)atoi(argv[1]);
	if (!state)
		state = 1;
	int n = atoi(argv[2]), first = argc > 3 ? atoi(argv[3]) : 0;
	with_syscalls = argc > 4 && !strcmp(argv[4], "sys");
	for (int i = 0; i < n; i++) {
		uint32_t seed = rnd();
		if (i < first)
			continue;
		long pid = sys_fork();
		if (pid == 0)
			child(seed);
		int st = 0;
		sys_waitpid((int)pid, &st, 0);
		/* Written at once, after the child's own line (printf's buffer would keep the
		 * parent's lines to the end, and a child inherits it at fork). */
		char b[48];
		int len = (st & 0x7f) == 0 ? snprintf(b, sizeof b, "%d exit %d\n", i, (st >> 8) & 0xff)
					   : snprintf(b, sizeof b, "%d signal %d\n", i, st & 0x7f);
		sys_write(1, b, (size_t)len);
	}
	return 0;
}
