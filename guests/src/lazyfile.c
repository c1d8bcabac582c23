/*
 * lazyfile.c - file mappings whose pages are first touched only after the file
 * changed, as Linux gives them: a page of a MAP_PRIVATE or MAP_SHARED mapping
 * not touched yet shows the file as it is at the first touch (written with
 * pwrite(2) after mmap); a page truncated away before its first touch gives
 * SIGBUS, and is there again (zero) once the file grows back; a system call
 * reads an untouched page; a child forked before any touch writes its private
 * pages for itself and its shared pages for both, and the shared store
 * reaches the file. Every access runs 60 times, so that it is also translated.
 */
#include "rt.h"

#define SYS_rt_sigaction_ 174
#define SIGBUS_	7
#define SA_SIGINFO_	4
#define SA_NODEFER_	0x40000000
#define SA_RESTORER_	0x04000000
#define PAGE 4096u
#define PAGES 40u

#define UC_W(uc, i)	(((uint32_t *)(uc))[5 + (i)])
#define UC_EIP(uc)	UC_W(uc, 14)
#define UC_EAX(uc)	UC_W(uc, 11)

__asm__(".text\n"
	"\t.globl l_load\nl_load:\n\tmovl 4(%esp), %ecx\n\tmovl (%ecx), %eax\nl_load_after:\n\tret\n");
uint32_t l_load(const void *p);
extern char l_load_after[];

static volatile int got_sig;

static void handler(int sig, void *si, void *uc)
{
	got_sig = sig;
	UC_EIP(uc) = (uint32_t)l_load_after;
	UC_EAX(uc) = 0xdeadbeef;
}

/* Loads the word at p 60 times; prints what the last load saw. */
static void load(const char *what, const uint8_t *p)
{
	uint32_t v = 0, first = 0;
	int same = 1, sig = 0;

	for (int i = 0; i < 60; i++) {
		got_sig = 0;
		v = l_load(p);
		sig |= got_sig;
		if (i == 0)
			first = v;
		same &= v == first;
	}
	printf("%-40s %s %#x%s\n", what, sig ? "SIGBUS" : "ok", v, same ? "" : " (runs differ)");
}

static uint8_t *map(long fd, int prot, int flags)
{
	long r = sys_mmap2(0, PAGES * PAGE, prot, flags, fd, 0);

	if (sys_failed(r)) {
		printf("mmap2: %s\n", sys_err(r));
		exit(1);
	}
	return (uint8_t *)r;
}

int main(void)
{
	const char *f = "lazyfile.tmp";
	struct ksigaction a = { (void *)handler, SA_SIGINFO_ | SA_NODEFER_ | SA_RESTORER_, (void *)restore_rt, { 0, 0 } };
	long fd = sys_open(f, O_RDWR | O_CREAT | O_TRUNC, 0644);
	static uint8_t page[PAGE];
	uint8_t *r, *p, *s;
	char buf[8];
	int st = 0, pfd[2];

	rt_syscall(SYS_rt_sigaction_, SIGBUS_, &a, 0, 8);
	for (uint32_t i = 0; i < PAGES; i++) {
		for (uint32_t k = 0; k < PAGE; k++)
			page[k] = (uint8_t)(i * 13 + k);
		sys_write(fd, page, PAGE);
	}
	r = map(fd, PROT_READ, MAP_PRIVATE);
	p = map(fd, PROT_READ | PROT_WRITE, MAP_PRIVATE);
	s = map(fd, PROT_READ | PROT_WRITE, MAP_SHARED);

	/* Changed after mmap, before any touch. */
	sys_pwrite64(fd, "NEW!", 4, 3 * PAGE + 8);
	sys_pwrite64(fd, "LATE", 4, 20 * PAGE + 8);
	load("private ro: page 3 written after mmap", r + 3 * PAGE + 8);
	load("private rw: page 3 written after mmap", p + 3 * PAGE + 8);
	load("shared: page 20 written after mmap", s + 20 * PAGE + 8);
	load("private ro: page 21 untouched neighbour", r + 21 * PAGE);
	if (sys_pipe(pfd) == 0) {
		long n = sys_write(pfd[1], r + 30 * PAGE + 4, 4);
		uint32_t w = 0;
		sys_read(pfd[0], &w, 4);
		printf("write(2) from untouched page 30: %ld %#x\n", n, w);
	}

	/* Cut before the first touch of pages 5..39. */
	printf("ftruncate to 5 pages + 100: %s\n", sys_err(sys_ftruncate64(fd, 5 * PAGE + 100)));
	load("private ro: page 4", r + 4 * PAGE + 4);
	load("private ro: page 5 in the file", r + 5 * PAGE + 96);
	load("private ro: page 5 after the end", r + 5 * PAGE + 200);
	load("private ro: page 6", r + 6 * PAGE);
	load("private rw: page 30", p + 30 * PAGE);
	load("shared: page 39", s + 39 * PAGE);
	printf("ftruncate to 40 pages: %s\n", sys_err(sys_ftruncate64(fd, PAGES * PAGE)));
	load("private ro: page 6 after growth", r + 6 * PAGE);
	load("shared: page 39 after growth", s + 39 * PAGE);

	/* Fork before any touch of pages 10..19. */
	fflush_stdout();
	long pid = sys_fork();
	if (pid == 0) {
		memcpy(p + 10 * PAGE, "CHLD", 4);
		memcpy(s + 11 * PAGE, "SHRD", 4);
		exit(0);
	}
	sys_waitpid(pid, &st, 0);
	printf("child exit %d\n", st);
	load("parent private rw: page 10", p + 10 * PAGE);
	load("parent shared: page 11", s + 11 * PAGE);
	load("parent private ro: page 11", r + 11 * PAGE);
	memset(buf, 0, sizeof buf);
	sys_pread64(fd, buf, 4, 11 * PAGE);
	printf("file at page 11: %s\n", buf);
	sys_close(fd);
	sys_unlink(f);
	return 0;
}
