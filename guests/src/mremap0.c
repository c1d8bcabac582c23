/*
 * mremap0.c - mremap with an old size of 0: on a shared mapping (shared
 * memory or a shared file mapping) with MREMAP_MAYMOVE it makes a second
 * mapping of the same pages from that address on, so stores through either
 * are seen by both and by the file; past the end of shared memory the new
 * view gives SIGBUS, past the end of the old file mapping it goes on with
 * the file; without MAYMOVE it is ENOMEM, on a private mapping EINVAL; the
 * view outlives the original.
 */
#include "rt.h"

#define SYS_mremap 163
#define SYS_rt_sigaction_ 174
#define SIGBUS_	7
#define SIGSEGV_ 11
#define MAYMOVE 1
#define PAGE 4096u
#define UC_EIP(uc)	(((uint32_t *)(uc))[5 + 14])
#define UC_EAX(uc)	(((uint32_t *)(uc))[5 + 11])

__asm__(".text\n\t.globl m_load\nm_load:\n\tmovl 4(%esp), %ecx\n\tmovl (%ecx), %eax\nm_load_after:\n\tret\n");
uint32_t m_load(const void *p);
extern char m_load_after[];
static volatile int got;

static void handler(int sig, void *si, void *uc)
{
	(void)si;
	got = sig;
	UC_EIP(uc) = (uint32_t)m_load_after;
	UC_EAX(uc) = 0;
}

static long remap0(void *p, uint32_t len, int flags)
{
	return rt_syscall(SYS_mremap, (long)p, 0, (long)len, flags, 0);
}

static const char *sig(int s)
{
	return s == SIGBUS_ ? "SIGBUS" : s == SIGSEGV_ ? "SIGSEGV" : s ? "other" : "no signal";
}

static void show(const char *what, const uint8_t *p, unsigned pages)
{
	char s[8];
	for (unsigned i = 0; i < pages; i++)
		s[i] = (char)p[i * PAGE];
	s[pages] = 0;
	printf("%-30s %s\n", what, s);
}

int main(void)
{
	struct ksigaction a = { (void *)handler, 4 | 0x40000000 | 0x04000000, (void *)restore_rt, { 0, 0 } };
	const char *f = "mremap0.tmp";
	long fd = sys_open(f, O_RDWR | O_CREAT | O_TRUNC, 0644);
	uint8_t page[PAGE], *p, *q, *r, *fp, *fq;
	long x;
	char c = 0;

	rt_syscall(SYS_rt_sigaction_, SIGBUS_, &a, 0, 8);
	rt_syscall(SYS_rt_sigaction_, SIGSEGV_, &a, 0, 8);

	p = (uint8_t *)sys_mmap2(0, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	p[0] = 'a';
	p[PAGE] = 'b';
	x = remap0(p, 2 * PAGE, MAYMOVE);
	q = (uint8_t *)x;
	printf("shared alias: %s, moved %d\n", sys_err(x), q != p);
	show("alias", q, 2);
	q[0] = 'x';
	p[PAGE] = 'y';
	show("original after stores", p, 2);
	show("alias after stores", q, 2);
	x = remap0(p + PAGE, PAGE, MAYMOVE);
	r = (uint8_t *)x;
	printf("alias of page 1: %s\n", sys_err(x));
	show("alias of page 1", r, 1);
	x = remap0(p, 3 * PAGE, MAYMOVE);
	printf("alias past the end: %s\n", sys_err(x));
	if (!sys_failed(x)) {
		got = 0;
		show("its first two pages", (uint8_t *)x, 2);
		m_load((uint8_t *)x + 2 * PAGE);
		printf("its third page: %s\n", sig(got));
	}
	printf("without MAYMOVE: %s\n", sys_err(remap0(p, PAGE, 0)));
	printf("new size 0: %s\n", sys_err(remap0(p, 0, MAYMOVE)));
	printf("unaligned: %s\n", sys_err(remap0(p + 1, PAGE, MAYMOVE)));
	printf("unmapped: %s\n", sys_err(remap0((void *)0x1000, PAGE, MAYMOVE)));
	sys_munmap(p, 2 * PAGE);
	q[PAGE] = 'z';
	show("alias after munmap", q, 2);
	show("page-1 alias after munmap", r, 1);

	fp = (uint8_t *)sys_mmap2(0, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	printf("private anonymous: %s\n", sys_err(remap0(fp, PAGE, MAYMOVE)));

	for (unsigned i = 0; i < 3; i++) {
		memset(page, 'A' + i, PAGE);
		sys_write(fd, page, PAGE);
	}
	fp = (uint8_t *)sys_mmap2(0, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	printf("private file: %s\n", sys_err(remap0(fp, PAGE, MAYMOVE)));
	fp = (uint8_t *)sys_mmap2(0, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	x = remap0(fp, 4 * PAGE, MAYMOVE);
	fq = (uint8_t *)x;
	printf("shared file alias: %s\n", sys_err(x));
	show("file alias pages 0-2", fq, 3);
	got = 0;
	m_load(fq + 3 * PAGE);
	printf("file alias page 3: %s\n", sig(got));
	fq[0] = 'f';
	fq[2 * PAGE] = 'g';
	show("file mapping after", fp, 2);
	sys_munmap(fq, 4 * PAGE);
	sys_pread64(fd, &c, 1, 2 * PAGE);
	printf("file page 2 after: %c\n", c);
	sys_pread64(fd, &c, 1, 0);
	printf("file page 0 after: %c\n", c);
	sys_close(fd);
	sys_unlink(f);
	return 0;
}
