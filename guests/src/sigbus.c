/*
 * sigbus.c - accesses to pages of a file mapping wholly beyond the end of the
 * file, as Linux gives them: SIGBUS with BUS_ADRERR and si_addr the address,
 * trapno 14 and a not-present error code (4 read, 6 write), for MAP_SHARED
 * and MAP_PRIVATE, read-only and writable, and a mapping whose offset lies
 * past the end; the bytes after the end inside the last page read as zeros;
 * a page made PROT_NONE gives SIGSEGV instead (the protection is checked
 * first); system calls given such a buffer get EFAULT; once the file grows
 * (ftruncate) the pages are there, and a shared store reaches the file; once
 * it shrinks (ftruncate, open with O_TRUNC) the pages past the new end give
 * SIGBUS again, private copies included.
 * Every access runs 60 times, so that it is also translated.
 */
#include "sites.h"

#define SYS_rt_sigaction_ 174
#define SYS_ftruncate_ 93
#define SIGBUS_	7
#define SIGSEGV_ 11
#define SA_SIGINFO_	4
#define SA_NODEFER_	0x40000000
#define SA_RESTORER_	0x04000000
#define PAGE 4096u

/* load(p): movl (p), %eax; store(p, v): movl v, (p); each with a label after the access. */
__asm__(".text\n"
	"\t.globl s_load\ns_load:\n\tmovl 4(%esp), %ecx\n\tmovl (%ecx), %eax\ns_load_after:\n\tret\n"
	"\t.globl s_store\ns_store:\n\tmovl 4(%esp), %ecx\n\tmovl 8(%esp), %eax\n\tmovl %eax, (%ecx)\n"
	"s_store_after:\n\tret\n");
uint32_t s_load(const void *p);
void s_store(void *p, uint32_t v);
extern char s_load_after[], s_store_after[];

static volatile int got_sig, got_code;
static volatile uint32_t got_addr, got_err, got_trapno;

static void handler(int sig, void *si, void *uc)
{
	got_sig = sig;
	got_code = SI_CODE(si);
	got_addr = SI_ADDR(si);
	got_err = UC_ERR(uc);
	got_trapno = UC_TRAPNO(uc);
	/* resume after the access; a load gives 0xdeadbeef */
	if (UC_EIP(uc) < (uint32_t)s_store) {
		UC_EIP(uc) = (uint32_t)s_load_after;
		UC_EAX(uc) = 0xdeadbeef;
	} else {
		UC_EIP(uc) = (uint32_t)s_store_after;
	}
}

static const char *sig_name(int s)
{
	return s == 0 ? "none" : s == SIGBUS_ ? "SIGBUS" : s == SIGSEGV_ ? "SIGSEGV" : "other";
}

/* Runs one access 60 times; prints what the last run saw (and whether all agreed). */
static void access_(const char *what, uint8_t *base, uint32_t off, int write)
{
	uint32_t v = 0, first = 0;
	int same = 1;

	for (int i = 0; i < 60; i++) {
		got_sig = 0;
		got_code = got_addr = got_err = got_trapno = 0;
		if (write)
			s_store(base + off, 0x41424344);
		else
			v = s_load(base + off);
		uint32_t now = (uint32_t)got_sig << 24 ^ (uint32_t)got_code << 16 ^ got_err << 8 ^ v;
		if (i == 0)
			first = now;
		same &= now == first;
	}
	if (got_sig)
		printf("%-34s %s code %d addr %s+%#x trapno %u err %u%s\n", what, sig_name(got_sig), got_code,
		       got_addr - (uint32_t)base < 16 * PAGE ? "base" : "?", got_addr - (uint32_t)base, got_trapno,
		       got_err, same ? "" : " (runs differ)");
	else
		printf("%-34s ok %#x%s\n", what, write ? 0 : v, same ? "" : " (runs differ)");
}

static uint8_t *map(long fd, int prot, int flags, long pgoff)
{
	long r = sys_mmap2(0, 3 * PAGE, prot, flags, fd, pgoff);

	if (sys_failed(r)) {
		printf("mmap2: %s\n", sys_err(r));
		exit(1);
	}
	return (uint8_t *)r;
}

int main(void)
{
	const char *f = "sigbus.tmp";
	struct ksigaction a = { (void *)handler, SA_SIGINFO_ | SA_NODEFER_ | SA_RESTORER_, (void *)restore_rt, { 0, 0 } };
	long fd = sys_open(f, O_RDWR | O_CREAT | O_TRUNC, 0644);
	uint8_t *s, *p, *r, *o;
	char buf[8];

	rt_syscall(SYS_rt_sigaction_, SIGBUS_, &a, 0, 8);
	rt_syscall(SYS_rt_sigaction_, SIGSEGV_, &a, 0, 8);
	sys_write(fd, "sigbus test file, 100 bytes long .......................................................... end\n",
		  100);

	s = map(fd, PROT_READ | PROT_WRITE, MAP_SHARED, 0);
	p = map(fd, PROT_READ | PROT_WRITE, MAP_PRIVATE, 0);
	r = map(fd, PROT_READ, MAP_PRIVATE, 0);
	o = map(fd, PROT_READ | PROT_WRITE, MAP_SHARED, 2);

	access_("shared: read in the file", s, 4, 0);
	access_("shared: read after the end", s, 200, 0);
	access_("shared: write after the end", s, 300, 1);
	access_("shared: read page 1", s, PAGE + 8, 0);
	access_("shared: write page 2", s, 2 * PAGE + 12, 1);
	access_("private: read in the file", p, 4, 0);
	access_("private: write in page 0", p, 400, 1);
	access_("private: read page 1", p, PAGE, 0);
	access_("private: write page 1", p, PAGE + 4, 1);
	access_("private: write page 2", p, 2 * PAGE + 4092, 1);
	access_("read-only: read page 2", r, 2 * PAGE + 16, 0);
	access_("read-only: write page 2", r, 2 * PAGE + 16, 1);
	access_("offset past end: read", o, 0, 0);
	access_("offset past end: write", o, PAGE, 1);

	printf("write(2) from page 1: %s\n", sys_err(sys_write(1, s + PAGE, 4)));
	printf("pread(2) into page 1: %s\n", sys_err(sys_pread64(fd, p + PAGE, 4, 0)));

	printf("mprotect page 1 none: %s\n", sys_err(sys_mprotect(s + PAGE, PAGE, PROT_NONE)));
	access_("shared: read none page 1", s, PAGE, 0);
	printf("mprotect page 1 rw: %s\n", sys_err(sys_mprotect(s + PAGE, PAGE, PROT_READ | PROT_WRITE)));
	access_("shared: read rw page 1", s, PAGE, 0);

	printf("ftruncate to 2 pages + 1: %s\n", sys_err(rt_syscall(SYS_ftruncate_, fd, 2 * PAGE + 1)));
	access_("shared: read page 1 after growth", s, PAGE + 8, 0);
	access_("shared: write page 2 after growth", s, 2 * PAGE, 1);
	access_("private: read page 2 after growth", p, 2 * PAGE + 100, 0);
	access_("private: write page 1 after growth", p, PAGE + 4, 1);
	access_("read-only: read page 2 after growth", r, 2 * PAGE, 0);
	access_("offset past end: read after growth", o, 0, 0);
	access_("offset past end: page 1 still beyond", o, PAGE, 0);
	memset(buf, 0, sizeof buf);
	sys_pread64(fd, buf, 4, 2 * PAGE);
	printf("file at page 2: %s\n", buf);

	printf("ftruncate to 1 page: %s\n", sys_err(rt_syscall(SYS_ftruncate_, fd, PAGE)));
	access_("shared: read page 0 after shrink", s, 8, 0);
	access_("shared: read page 1 after shrink", s, PAGE + 8, 0);
	access_("private: read copied page 1 after shrink", p, PAGE + 4, 0);
	access_("private: write page 2 after shrink", p, 2 * PAGE, 1);
	access_("read-only: read page 2 after shrink", r, 2 * PAGE, 0);
	sys_close(fd);
	fd = sys_open(f, O_RDWR | O_TRUNC, 0);
	printf("open O_TRUNC: %s\n", sys_err(fd));
	access_("shared: read page 0 after O_TRUNC", s, 8, 0);
	access_("private: read page 0 after O_TRUNC", p, 8, 0);
	printf("pwrite(2) from page 1: %s\n", sys_err(sys_pwrite64(fd, s + PAGE, 4, 0)));
	sys_pwrite64(fd, "x", 1, 2 * PAGE + 10);
	printf("pwrite(2) from page 1 once write(2) grew the file: %s\n", sys_err(sys_pwrite64(fd, s + PAGE, 4, 0)));
	printf("pwrite(2) from page 2: %s\n", sys_err(sys_pwrite64(fd, s + 2 * PAGE, 4, 0)));
	sys_close(fd);
	sys_unlink(f);
	return 0;
}
