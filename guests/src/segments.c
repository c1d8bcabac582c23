/*
 * segments.c - the segment selectors a 32-bit process sees on a 64-bit Linux
 * kernel (the hosts this project runs on): CS 0x23, DS = ES = SS 0x2b, FS and
 * GS 0; the same in a signal handler's sigcontext; set_thread_area hands out
 * GDT entries from 12 (selector 0x63), and GS loaded with it reads back;
 * reloading DS with its own selector works, a selector past the TLS entries
 * (an LDT one, or entry 16) faults.  (morph's --kernel 2.6.12 profile gives the
 * i386 kernel's 0x73/0x7b and entries from 6 instead.)  get_thread_area reads
 * an entry back as Linux's fill_user_desc does, EINVAL outside the TLS entries.
 */
#include "rt.h"

#define SYS_rt_sigaction_ 174
#define SYS_set_thread_area 243
#define SYS_get_thread_area 244
#define SYS_kill_ 37
#define SIGSEGV_ 11
#define SIGUSR1_ 10
#define UC_W(uc, i) (((uint32_t *)(uc))[5 + (i)])

struct user_desc {
	uint32_t entry_number, base_addr, limit;
	uint32_t flags; /* seg_32bit 1, contents 0, read_exec_only 0, limit_in_pages 1, not_present 0, useable 1 */
};

static volatile uint32_t sc[6];
static volatile int segv;
static uint32_t tls_word = 0x12345678;

static void usr(int sig, void *si, void *uc)
{
	(void)sig;
	(void)si;
	sc[0] = UC_W(uc, 0) & 0xffff;  /* gs */
	sc[1] = UC_W(uc, 1) & 0xffff;  /* fs */
	sc[2] = UC_W(uc, 2) & 0xffff;  /* es */
	sc[3] = UC_W(uc, 3) & 0xffff;  /* ds */
	sc[4] = UC_W(uc, 15) & 0xffff; /* cs */
	sc[5] = UC_W(uc, 18) & 0xffff; /* ss */
}

static void on_segv(int sig, void *si, void *uc)
{
	(void)sig;
	(void)si;
	segv++;
	UC_W(uc, 14) += 2; /* skip the 2-byte mov to %ds */
}

static uint16_t rd(int which)
{
	uint16_t v = 0;
	switch (which) {
	case 0: __asm__ volatile("movw %%cs, %0" : "=r"(v)); break;
	case 1: __asm__ volatile("movw %%ds, %0" : "=r"(v)); break;
	case 2: __asm__ volatile("movw %%es, %0" : "=r"(v)); break;
	case 3: __asm__ volatile("movw %%ss, %0" : "=r"(v)); break;
	case 4: __asm__ volatile("movw %%fs, %0" : "=r"(v)); break;
	case 5: __asm__ volatile("movw %%gs, %0" : "=r"(v)); break;
	}
	return v;
}

static int load_ds(uint16_t sel)
{
	int before = segv;
	__asm__ volatile("movw %0, %%ds" : : "r"(sel) : "memory");
	__asm__ volatile("movw %0, %%ds" : : "r"((uint16_t)rd(3)) : "memory"); /* back to SS's */
	return segv == before;
}

int main(void)
{
	struct ksigaction a = { (void *)usr, 4 | 0x04000000, (void *)restore_rt, { 0, 0 } };
	struct ksigaction b = { (void *)on_segv, 4 | 0x04000000 | 0x40000000, (void *)restore_rt, { 0, 0 } };
	struct user_desc d = { (uint32_t)-1, (uint32_t)&tls_word, 0xfffff, 0x51 };
	static const char *const names[] = { "cs", "ds", "es", "ss", "fs", "gs" };
	uint32_t v = 0;
	long r;

	for (int i = 0; i < 6; i++)
		printf("%s %#x\n", names[i], rd(i));
	rt_syscall(SYS_rt_sigaction_, SIGUSR1_, &a, 0, 8);
	rt_syscall(SYS_rt_sigaction_, SIGSEGV_, &b, 0, 8);
	rt_syscall(SYS_kill_, sys_getpid(), SIGUSR1_);
	printf("sigcontext: gs %#x fs %#x es %#x ds %#x cs %#x ss %#x\n", sc[0], sc[1], sc[2], sc[3], sc[4], sc[5]);
	r = rt_syscall(SYS_set_thread_area, &d);
	printf("set_thread_area: %s, entry %u\n", sys_err(r), d.entry_number);
	uint16_t sel = (uint16_t)(d.entry_number * 8 + 3);
	__asm__ volatile("movw %1, %%gs\n\tmovl %%gs:0, %0" : "=r"(v) : "r"(sel));
	printf("gs %#x reads %#x\n", rd(5), v);
	__asm__ volatile("movw %0, %%gs" : : "r"((uint16_t)0));
	printf("ds reloaded with its own selector: %s\n", load_ds(rd(1)) ? "ok" : "fault");
	printf("ds with an LDT selector: %s\n", load_ds(0x0f) ? "ok" : "fault");
	printf("ds with GDT entry 16: %s\n", load_ds(16 * 8 + 3) ? "ok" : "fault");

	/* get_thread_area: the entry just set, a free one, one out of range, a bad pointer. */
	struct user_desc g;
	for (uint32_t e = d.entry_number; e <= d.entry_number + 1; e++) {
		memset(&g, 0xee, sizeof g);
		g.entry_number = e;
		r = rt_syscall(SYS_get_thread_area, &g);
		printf("get_thread_area(%s): %s base %s limit %#x flags %#x\n", e == d.entry_number ? "set" : "free",
		       sys_err(r), g.base_addr == (uint32_t)&tls_word ? "ours" : g.base_addr == 0 ? "0" : "other",
		       g.limit, g.flags);
	}
	g.entry_number = 3;
	printf("get_thread_area(3): %s\n", sys_err(rt_syscall(SYS_get_thread_area, &g)));
	printf("get_thread_area(NULL): %s\n", sys_err(rt_syscall(SYS_get_thread_area, 0)));
	/* An entry emptied reads back as Linux's empty descriptor. */
	struct user_desc z = { d.entry_number, 0, 0, 0x28 };
	rt_syscall(SYS_set_thread_area, &z);
	g.entry_number = d.entry_number;
	r = rt_syscall(SYS_get_thread_area, &g);
	printf("get_thread_area(emptied): %s base %#x limit %#x flags %#x\n", sys_err(r), g.base_addr, g.limit, g.flags);
	return 0;
}
