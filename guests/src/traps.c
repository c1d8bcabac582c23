/*
 * traps.c - what a signal handler sees of a CPU exception, as Linux i386
 * reports it: signo, si_code, si_addr, and the trapno/err/cr2/eip fields of
 * the ucontext, for page faults (each error code, a never-touched page not
 * present), #DE, #UD, int3 in both
 * encodings, into and int $4 (traps: EIP after), int $n of a kernel-only
 * vector (#GP with the IDT error code), bound, x87 #MF, `rep` string
 * instructions faulting part way (dword and byte forms), the privileged
 * instructions (#GP), a far return to a null selector; then the trap flag
 * (single-stepping with TRAP_TRACE, across int $0x80, set by popf, by iret
 * and by a handler's ucontext) and the x87 state a handler starts with
 * (fresh, and not leaking out through a jump out of the handler).
 * Every site runs 60 times so that it is also translated.
 */
#include "sites.h"

#define SYS_rt_sigaction_ 174
#define SIGILL_	4
#define SIGTRAP_ 5
#define SIGBUS_	7
#define SIGFPE_	8
#define SIGSEGV_ 11
#define SA_SIGINFO_	4
#define SA_NODEFER_	0x40000000
#define SA_RESTORER_	0x04000000

static long sigaction_(int sig, void *handler, uint32_t flags)
{
	struct ksigaction a = { handler, flags | SA_RESTORER_ | SA_SIGINFO_, (void *)restore_rt, { 0, 0 } };
	return rt_syscall(SYS_rt_sigaction_, sig, &a, 0, 8);
}

/* The sites (rt/sites.h): the handler resumes at `NAME_after`. */
__asm__(".text\n"
	SITE(pf_read, "", "movl 0x10, %eax")
	SITE(pf_write, "", "movl %eax, 0x10")
	SITE(pf_read_none, "\tmovl 4(%esp), %ecx", "movl (%ecx), %eax")
	SITE(pf_write_ro, "\tmovl 4(%esp), %ecx", "movl %eax, 8(%ecx)")
	SITE(pf_write_fresh, "\tmovl 4(%esp), %ecx", "movl %eax, 8(%ecx)")
	SITE(pf_fetch, "\tmovl $0x10, %ecx", "jmp *%ecx")
	SITE(de, "\tmovl $7, %eax\n\txorl %edx, %edx\n\txorl %ecx, %ecx", "divl %ecx")
	SITE(ud, "", "ud2")
	SITE(int3_cc, "", ".byte 0xcc")
	SITE(int3_cd, "", ".byte 0xcd, 0x03")
	SITE(into_of, "\tmovl $0x7fffffff, %eax\n\taddl $1, %eax", "into")
	SITE(int4, "", "int $4")
	SITE(int1, "", "int $1")
	SITE(int5, "", "int $5")
	SITE(int81, "", "int $0x81")
	SITE(int_ff, "", "int $0xff")
	SITE(bound_out, "\tmovl 4(%esp), %ecx\n\tmovl $9, %eax", "boundl %eax, (%ecx)")
	SITE(hlt, "", "hlt")
	SITE(cli, "", "cli")
	SITE(sti, "", "sti")
	SITE(rdmsr, "\txorl %ecx, %ecx", "rdmsr")
	SITE(wrmsr, "\txorl %ecx, %ecx", "wrmsr")
	SITE(in_imm, "", "inb $0x80, %al")
	SITE(out_dx, "\tmovl $0x80, %edx", "outb %al, %dx")
	SITE(insb, "\tmovl $0x80, %edx\n\tmovl 4(%esp), %edi", "insb")
	SITE(lgdt, "\tmovl 4(%esp), %ecx", "lgdt (%ecx)")
	SITE(lidt, "\tmovl 4(%esp), %ecx", "lidt (%ecx)")
	SITE(lldt, "\txorl %eax, %eax", "lldt %ax")
	SITE(ltr, "\txorl %eax, %eax", "ltr %ax")
	SITE(mov_from_cr0, "", "movl %cr0, %eax")
	SITE(mov_to_cr0, "", "movl %eax, %cr0")
	SITE(mov_from_dr7, "", "movl %db7, %eax")
	SITE(clts, "", "clts")
	SITE(invd, "", "invd")
	SITE(wbinvd, "", "wbinvd")
	SITE(invlpg, "\tmovl 4(%esp), %ecx", "invlpg (%ecx)")
	SITE(lmsw, "\txorl %eax, %eax", "lmsw %ax")
	SITE(lret_null, "\tpushl $0\n\tpushl $0", "lret")
	SITE(fpu_mf, "\tfninit\n\tmovl 4(%esp), %ecx\n\tfldcw (%ecx)\n\tfldz\n\tfld1\n\tfdivp\n\tnop", "fwait")
	/* downwards from ro_page + 60 into none_page: faults at the 16th element */
	SITE(repne_scas_pf, "\tmovl 4(%esp), %edi\n\taddl $60, %edi\n\tmovl $100, %ecx\n"
		"\tmovl $0x12345678, %eax\n\tpushl $0xcd7\n\tpopfl", "repne scasl")
	/* short rep movsl / stosl running from rw_page into the page after it
	 * (none2): 10 of 20 elements done, the 11th faults (a translator that
	 * copies short ones with wide loads and stores must still stop there) */
	SITE(rep_movs_rpf, "\tmovl 4(%esp), %edi\n\tleal 4056(%edi), %esi\n\tmovl $20, %ecx\n"
		"\tpushl $0x8d7\n\tpopfl", "rep movsl")
	SITE(rep_movs_wpf, "\tmovl 4(%esp), %esi\n\tleal 4056(%esi), %edi\n\tmovl $20, %ecx\n"
		"\tpushl $0x8d7\n\tpopfl", "rep movsl")
	SITE(rep_stos_wpf, "\tmovl 4(%esp), %esi\n\tleal 4056(%esi), %edi\n\tmovl $20, %ecx\n"
		"\tmovl $0x5a5a5a5a, %eax\n\tpushl $0x2\n\tpopfl", "rep stosl")
	/* rep movsb / stosb of three bytes from the last two of rw_page: the third faults
	   (a translator that runs short ones as single moves must stop there too), and of
	   one byte straight into none2 */
	SITE(rep_movsb_rpf, "\tmovl 4(%esp), %edi\n\tleal 4094(%edi), %esi\n\tmovl $3, %ecx\n"
		"\tpushl $0x8d7\n\tpopfl", "rep movsb")
	SITE(rep_movsb_wpf, "\tmovl 4(%esp), %esi\n\tleal 4094(%esi), %edi\n\tmovl $3, %ecx\n"
		"\tpushl $0x8d7\n\tpopfl", "rep movsb")
	SITE(rep_stosb_wpf, "\tmovl 4(%esp), %esi\n\tleal 4094(%esi), %edi\n\tmovl $3, %ecx\n"
		"\tmovl $0x5a5a5a5a, %eax\n\tpushl $0x2\n\tpopfl", "rep stosb")
	SITE(rep_stosb1_wpf, "\tmovl 4(%esp), %esi\n\tleal 4096(%esi), %edi\n\tmovl $1, %ecx\n"
		"\tmovl $0x5a5a5a5a, %eax\n\tpushl $0x2\n\tpopfl", "rep stosb")
	);

DECL(pf_read) DECL(pf_write) DECL(pf_read_none) DECL(pf_write_ro) DECL(pf_write_fresh) DECL(pf_fetch)
DECL(de) DECL(ud) DECL(int3_cc) DECL(int3_cd) DECL(into_of) DECL(int4) DECL(int1)
DECL(int5) DECL(int81) DECL(int_ff) DECL(bound_out) DECL(hlt) DECL(cli) DECL(sti)
DECL(rdmsr) DECL(wrmsr) DECL(in_imm) DECL(out_dx) DECL(insb) DECL(lgdt) DECL(lidt)
DECL(lldt) DECL(ltr) DECL(mov_from_cr0) DECL(mov_to_cr0) DECL(mov_from_dr7) DECL(clts)
DECL(invd) DECL(wbinvd) DECL(invlpg) DECL(lmsw) DECL(lret_null) DECL(fpu_mf)
DECL(repne_scas_pf) DECL(rep_movs_rpf) DECL(rep_movs_wpf) DECL(rep_stos_wpf)
DECL(rep_movsb_rpf) DECL(rep_movsb_wpf) DECL(rep_stosb_wpf) DECL(rep_stosb1_wpf)

uint32_t none_page, ro_page, fresh_page, rw_page, none2_page;
int32_t bounds[4] = { 0, 4, 0, 0 };
uint16_t fpu_cw_zm = 0x037b; /* zero-divide unmasked */

static const struct site sites[] = {
	S(pf_read), S(pf_write), S(pf_read_none), S(pf_write_ro), S(pf_write_fresh), S(pf_fetch), S(de), S(ud),
	S(int3_cc), S(int3_cd), S(into_of), S(int4), S(int1), S(int5), S(int81), S(int_ff),
	S(bound_out), S(hlt), S(cli), S(sti), S(rdmsr), S(wrmsr), S(in_imm), S(out_dx), S(insb),
	S(lgdt), S(lidt), S(lldt), S(ltr), S(mov_from_cr0), S(mov_to_cr0), S(mov_from_dr7),
	S(clts), S(invd), S(wbinvd), S(invlpg), S(lmsw), S(lret_null), S(fpu_mf),
	S(repne_scas_pf), S(rep_movs_rpf), S(rep_movs_wpf), S(rep_stos_wpf),
	S(rep_movsb_rpf), S(rep_movsb_wpf), S(rep_stosb_wpf), S(rep_stosb1_wpf),
};

static const struct site *cur;
static volatile struct fault seen;
static volatile uint32_t got_cr2, got_flags, got_ecx, got_esi, got_edi;

/* An address as a name: a site's own labels, a page of the test, or the number. */
static void where(char *buf, uint32_t a)
{
	if (a == (uint32_t)cur->at)
		strcpy(buf, "at");
	else if (a == (uint32_t)cur->after)
		strcpy(buf, "after");
	else if (none_page && a - none_page < 4096)
		snprintf(buf, 32, "none+%u", a - none_page);
	else if (ro_page && a - ro_page < 4096)
		snprintf(buf, 32, "ro+%u", a - ro_page);
	else if (fresh_page && a - fresh_page < 4096)
		snprintf(buf, 32, "fresh+%u", a - fresh_page);
	else if (rw_page && a - rw_page < 4096)
		snprintf(buf, 32, "rw+%u", a - rw_page);
	else if (none2_page && a - none2_page < 4096)
		snprintf(buf, 32, "none2+%u", a - none2_page);
	else
		snprintf(buf, 32, "%#x", a);
}

static void fault_handler(int sig, void *si, void *uc)
{
	fault_seen(&seen, sig, si, uc);
	got_cr2 = UC_CR2(uc);
	got_flags = UC_EFLAGS(uc) & 0x8d5;
	got_ecx = UC_W(uc, 10);
	got_esi = UC_W(uc, 5);
	got_edi = UC_W(uc, 4);
	if (cur->fn == (void (*)(uint32_t))s_repne_scas_pf)
		UC_EFLAGS(uc) &= ~0x400u; /* the site set DF */
	if (sig == SIGFPE_ && seen.trapno == 16) {
		/* clear the pending x87 exception in the saved state, as it is restored */
		uint8_t *fp = (uint8_t *)UC_FPSTATE(uc);
		*(uint16_t *)(fp + 4) &= ~0x80ff;
		*(uint16_t *)(fp + 112 + 2) &= ~0x80ff;
		*(uint16_t *)(fp + 112) = 0x037f;
		*(uint16_t *)(fp + 0) = 0x037f;
	}
	UC_EIP(uc) = (uint32_t)cur->after;
	if (cur->fn == (void (*)(uint32_t))s_lret_null)
		UC_W(uc, 7) += 8; /* the far return faulted before popping */
}

static int rep_site(const struct site *c)
{
	return c->fn == (void (*)(uint32_t))s_rep_movs_rpf || c->fn == (void (*)(uint32_t))s_rep_movs_wpf ||
	       c->fn == (void (*)(uint32_t))s_rep_stos_wpf || c->fn == (void (*)(uint32_t))s_rep_movsb_rpf ||
	       c->fn == (void (*)(uint32_t))s_rep_movsb_wpf || c->fn == (void (*)(uint32_t))s_rep_stosb_wpf ||
	       c->fn == (void (*)(uint32_t))s_rep_stosb1_wpf;
}

static void faults(void)
{
	for (int round = 0; round < 60; round++) {
		for (unsigned i = 0; i < sizeof sites / sizeof sites[0]; i++) {
			cur = &sites[i];
			seen.sig = 0;
			uint32_t arg = (uint32_t)bounds;
			if (cur->fn == (void (*)(uint32_t))s_pf_read_none)
				arg = none_page;
			else if (cur->fn == (void (*)(uint32_t))s_pf_write_ro ||
				 cur->fn == (void (*)(uint32_t))s_repne_scas_pf)
				arg = ro_page;
			else if (cur->fn == (void (*)(uint32_t))s_pf_write_fresh)
				arg = fresh_page;
			else if (cur->fn == (void (*)(uint32_t))s_fpu_mf)
				arg = (uint32_t)&fpu_cw_zm;
			else if (rep_site(cur))
				arg = rw_page;
			call_site(cur->fn, arg);
			if (round != 0 && round != 59)
				continue;
			char a[32], e[32], c[32];
			where(a, seen.addr);
			where(e, seen.eip);
			where(c, got_cr2);
			printf("%-13s sig %2d code %#5x addr %-8s trapno %2d err %#6x eip %-6s", cur->name, seen.sig,
			       seen.code, a, seen.trapno, seen.err, e);
			if (seen.trapno == 14)
				printf(" cr2 %s", c);
			if (cur->fn == (void (*)(uint32_t))s_repne_scas_pf)
				printf(" flags %#x", got_flags);
			if (rep_site(cur)) {
				char si[32], di[32];
				where(si, got_esi);
				where(di, got_edi);
				printf(" flags %#x ecx %u esi %s edi %s rw %08x", got_flags, got_ecx, si, di,
				       fnv1a((void *)rw_page, 4096));
			}
			printf("\n");
			fflush_stdout();
		}
	}
}

/* ----- the trap flag ----- */

static volatile int steps;
static volatile uint32_t step_eips[64];
static volatile int step_codes[64], step_trapno[64];

static void trap_handler(int sig, void *si, void *uc)
{
	if (steps < 64) {
		step_eips[steps] = UC_EIP(uc);
		step_codes[steps] = SI_CODE(si);
		step_trapno[steps] = UC_TRAPNO(uc) | (SI_ADDR(si) == UC_EIP(uc) ? 0x100 : 0);
	}
	steps++;
	(void)sig;
}

extern char tf_start[], tf_end[];
void tf_run(void);
__asm__(".text\n"
	"tf_run:\n\tpushl %ebx\n"
	"tf_start:\n\tpushfl\n\torl $0x100, (%esp)\n\tpopfl\n"
	"\tnop\n\tmovl $3, %ecx\n"
	"1:\tdecl %ecx\n\tjnz 1b\n"
	"\tmovl $20, %eax\n\tint $0x80\n" /* getpid, single-stepped */
	"\tleal 4(%esp), %ebx\n\tmovl $1, %ebx\n"
	"\tpushfl\n\tandl $~0x100, (%esp)\n\tpopfl\n"
	"\tnop\n"
	"tf_end:\n\tpopl %ebx\n\tret\n");

/* TF set by iret (the frame's EFLAGS): the trap comes after the instruction after the
 * iret, as after popf; then the same with TF already set before the iret (the iret
 * itself traps, at its target). PIE-safe: the target's address is found with call/pop. */
extern char iret_start[];
void iret_run(void);
void iret_run_stepped(void);
__asm__(".text\n"
	"iret_run:\n\tpushl %ebx\n"
	"\tcall 1f\n1:\tpopl %ecx\n\tleal (iret_target - 1b)(%ecx), %ecx\n"
	"\tpushfl\n\tpopl %eax\n\torl $0x100, %eax\n"
	"\tpushl %eax\n\tmovl %cs, %eax\n\tpushl %eax\n\tpushl %ecx\n"
	"iret_start:\n\tiret\n"
	"iret_target:\n\tnop\n\tmovl $2, %ecx\n2:\tdecl %ecx\n\tjnz 2b\n"
	"\tpushfl\n\tandl $~0x100, (%esp)\n\tpopfl\n\tnop\n"
	"\tpopl %ebx\n\tret\n"
	"iret_run_stepped:\n\tpushl %ebx\n"
	"\tcall 1f\n1:\tpopl %ecx\n\tleal (iret_target - 1b)(%ecx), %ecx\n"
	"\tpushfl\n\tpopl %eax\n\torl $0x100, %eax\n"
	"\tpushl %eax\n\tmovl %cs, %edx\n\tpushl %edx\n\tpushl %ecx\n"
	"\tpushl %eax\n\tpopfl\n"
	"\tjmp iret_start\n");

/* TF set by a handler through uc_mcontext, cleared by the handler at the third step. */
static volatile int uc_steps;
static void uc_trap_handler(int sig, void *si, void *uc)
{
	(void)sig;
	(void)si;
	if (uc_steps < 64)
		step_eips[uc_steps] = UC_EIP(uc);
	uc_steps++;
	if (uc_steps >= 3)
		UC_EFLAGS(uc) &= ~0x100u;
}
static void usr_handler(int sig, void *si, void *uc)
{
	(void)sig;
	(void)si;
	UC_EFLAGS(uc) |= 0x100;
}
extern char uc_start[];
void uc_run(void);
__asm__(".text\n"
	"uc_run:\n\tpushl %ebx\n\tmovl $20, %eax\n\tint $0x80\n\tmovl %eax, %ebx\n"
	"\tmovl $37, %eax\n\tmovl $10, %ecx\n"
	"uc_start:\n\tint $0x80\n" /* kill(getpid(), SIGUSR1): returns with TF */
	"\tnop\n\tnop\n\tnop\n\tnop\n\tnop\n\tpopl %ebx\n\tret\n");

static void trap_flag(void)
{
	sigaction_(SIGTRAP_, (void *)trap_handler, 0);
	for (int round = 0; round < 60; round++) {
		steps = 0;
		tf_run();
		if (round != 0 && round != 59)
			continue;
		printf("tf: %d traps:", steps);
		for (int i = 0; i < steps && i < 64; i++)
			printf(" %u/%d/%d%s", step_eips[i] - (uint32_t)tf_start, step_codes[i], step_trapno[i] & 0xff,
			       step_trapno[i] & 0x100 ? "=" : "");
		printf("\n");
	}
	for (int round = 0; round < 60; round++) {
		for (int v = 0; v < 2; v++) {
			steps = 0;
			if (v)
				iret_run_stepped();
			else
				iret_run();
			if (round != 0 && round != 59)
				continue;
			printf("tf via iret%s: %d traps:", v ? " (already stepping)" : "", steps);
			for (int i = 0; i < steps && i < 64; i++)
				printf(" %d/%d/%d", (int)(step_eips[i] - (uint32_t)iret_start), step_codes[i],
				       step_trapno[i] & 0xff);
			printf("\n");
		}
	}
	sigaction_(SIGTRAP_, (void *)uc_trap_handler, 0);
	sigaction_(10, (void *)usr_handler, 0);
	for (int round = 0; round < 3; round++) {
		uc_steps = 0;
		uc_run();
		printf("tf via ucontext: %d traps:", uc_steps);
		for (int i = 0; i < uc_steps && i < 64; i++)
			printf(" %u", step_eips[i] - (uint32_t)uc_start);
		printf("\n");
	}
}

/* ----- the x87 state of a handler ----- */

struct jbuf {
	uint32_t ebx, esi, edi, ebp, esp, eip;
};
int jb_set(struct jbuf *b);
void jb_jump(struct jbuf *b, int v) __attribute__((noreturn));
__asm__(".text\n"
	"jb_set:\n\tmovl 4(%esp), %eax\n\tmovl %ebx, 0(%eax)\n\tmovl %esi, 4(%eax)\n"
	"\tmovl %edi, 8(%eax)\n\tmovl %ebp, 12(%eax)\n\tleal 4(%esp), %ecx\n\tmovl %ecx, 16(%eax)\n"
	"\tmovl (%esp), %ecx\n\tmovl %ecx, 20(%eax)\n\txorl %eax, %eax\n\tret\n"
	"jb_jump:\n\tmovl 4(%esp), %edx\n\tmovl 8(%esp), %eax\n\tmovl 0(%edx), %ebx\n"
	"\tmovl 4(%edx), %esi\n\tmovl 8(%edx), %edi\n\tmovl 12(%edx), %ebp\n"
	"\tmovl 16(%edx), %esp\n\tjmp *20(%edx)\n");

static struct jbuf jb;
static volatile uint16_t h_cw, h_sw, h_tw;
static volatile int fpe_count;

static void fpe_jump_handler(int sig, void *si, void *uc)
{
	uint16_t env[14];
	(void)sig;
	(void)si;
	(void)uc;
	fpe_count++;
	__asm__ volatile("fnstenv %0" : "=m"(env));
	h_cw = env[0];
	h_sw = env[2];
	h_tw = env[4];
	jb_jump(&jb, 1);
}

static void fpu_state(void)
{
	sigaction_(SIGFPE_, (void *)fpe_jump_handler, SA_NODEFER_);
	for (int round = 0; round < 3; round++) {
		__asm__ volatile("fninit");
		fpe_count = 0;
		if (jb_set(&jb) == 0) {
			__asm__ volatile("fldcw %0\n\tfldz\n\tfld1\n\tfdivp\n\tfwait\n\tfstp %%st(0)" : : "m"(fpu_cw_zm) : "memory");
		}
		uint16_t cw, sw;
		double x = 1.5;
		__asm__ volatile("fnstcw %0\n\tfnstsw %1" : "=m"(cw), "=m"(sw));
		/* another x87 instruction: Linux gave the handler a fresh state, so no SIGFPE */
		__asm__ volatile("fldl %0\n\tfaddl %0\n\tfstpl %0\n\tfwait" : "+m"(x) : : "memory");
		printf("fpu in handler: cw %#x sw %#x tag %#x; after jump out: cw %#x sw %#x, %d SIGFPE, x %d\n",
		       h_cw, h_sw, h_tw, cw, sw & 0xff, fpe_count, (int)x);
		__asm__ volatile("fninit");
	}
}

int main(void)
{
	long p = sys_mmap2(0, 8192, 0, 0x22, -1, 0);
	none_page = (uint32_t)p;
	ro_page = none_page + 4096;
	sys_mprotect((void *)ro_page, 4096, 1);
	(void)*(volatile uint32_t *)ro_page; /* present: a write is a protection fault */
	/* never touched: a write finds the page not present (error code 6, not 7) */
	fresh_page = (uint32_t)sys_mmap2(0, 4096, 1, 0x22, -1, 0);
	/* a writable page and an inaccessible one after it */
	rw_page = (uint32_t)sys_mmap2(0, 8192, 3, 0x22, -1, 0);
	none2_page = rw_page + 4096;
	sys_mprotect((void *)none2_page, 4096, 0);
	for (int k = 0; k < 4096; k++)
		((uint8_t *)rw_page)[k] = (uint8_t)(k * 7);
	for (int s = 1; s <= 11; s++)
		if (s == SIGILL_ || s == SIGTRAP_ || s == SIGBUS_ || s == SIGFPE_ || s == SIGSEGV_)
			sigaction_(s, (void *)fault_handler, SA_NODEFER_);
	faults();
	trap_flag();
	fpu_state();
	return 0;
}
