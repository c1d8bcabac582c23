/*
 * mem_pressure.c - memory the guest was promised stays its own while the page
 * cache is full. Twelve sparse 2 MiB files are made, then mapped, read a byte
 * a page and unmapped ("filling" the page cache) between the steps; each step
 * then needs frames the cache holds (the cache gives back whole files, so
 * after a fill less than a file's worth of frames is free):
 *   - first touch: 6 MiB of anonymous memory mapped before a fill is written
 *     after it;
 *   - a read(2) into 2 MiB of anonymous memory never touched, after a fill;
 *   - copy-on-write: a forked child fills, then writes every page it shares
 *     with its parent;
 *   - mremap growth of a touched 1 MiB mapping to 4 MiB, after a fill.
 * Natively (and under morph without a limit) every step simply works; under
 * `--max-mem 24` (crates/cli/tests/memory.rs) morph must give the cache's
 * pages back and retry, where it used to kill the process (SIGSEGV or SIGKILL)
 * or fail the call (EFAULT, ENOMEM).
 */
#include "rt.h"

#define PAGE 4096u
#define MiB (1u << 20)
#define FILES 12
#define FILE_SIZE (2 * MiB)
#define MREMAP_MAYMOVE 1

/* Sparse files: a marker byte 'a' + i at the start of every 16th page. */
#define MARK_EVERY (16 * PAGE)

static void name_of(char *s, int i)
{
	strcpy(s, "mem_pressure.a");
	s[13] = (char)('a' + i);
}

static void make_files(void)
{
	for (int i = 0; i < FILES; i++) {
		char name[32];
		name_of(name, i);
		long fd = sys_open(name, O_RDWR | O_CREAT | O_TRUNC, 0644);
		if (sys_failed(fd) || sys_failed(sys_ftruncate64((int)fd, FILE_SIZE))) {
			printf("make %s failed\n", name);
			exit(1);
		}
		char mark = (char)('a' + i);
		for (unsigned k = 0; k < FILE_SIZE; k += MARK_EVERY)
			if (sys_pwrite64((int)fd, &mark, 1, k) != 1) {
				printf("pwrite %s failed\n", name);
				exit(1);
			}
		sys_close((int)fd);
	}
}

/* Maps each file, reads a byte of every page, unmaps it: the sum of those bytes. */
static unsigned fill(void)
{
	unsigned sum = 0;
	for (int i = 0; i < FILES; i++) {
		char name[32];
		name_of(name, i);
		long fd = sys_open(name, O_RDONLY, 0);
		long p = sys_mmap2(0, FILE_SIZE, PROT_READ, MAP_PRIVATE, (int)fd, 0);
		if (sys_failed(fd) || sys_failed(p)) {
			printf("fill %s: %s\n", name, sys_err(sys_failed(fd) ? fd : p));
			exit(1);
		}
		for (unsigned k = 0; k < FILE_SIZE; k += PAGE)
			sum += ((volatile unsigned char *)p)[k];
		sys_munmap((void *)p, FILE_SIZE);
		sys_close((int)fd);
	}
	return sum;
}

static unsigned char *anon(unsigned len)
{
	long p = sys_mmap2(0, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (sys_failed(p)) {
		printf("mmap %u bytes: %s\n", len, sys_err(p));
		exit(1);
	}
	return (unsigned char *)p;
}

/* Writes `v + page number` at the start of every page; returns their sum. */
static unsigned touch(unsigned char *p, unsigned len, unsigned v)
{
	unsigned sum = 0;
	for (unsigned k = 0; k < len; k += PAGE) {
		p[k] = (unsigned char)(v + k / PAGE);
		sum += p[k];
	}
	return sum;
}

static unsigned sum_pages(const unsigned char *p, unsigned len)
{
	unsigned sum = 0;
	for (unsigned k = 0; k < len; k += PAGE)
		sum += p[k];
	return sum;
}

int main(void)
{
	make_files();
	unsigned want = 0;
	for (int i = 0; i < FILES; i++)
		want += (FILE_SIZE / MARK_EVERY) * (unsigned)('a' + i);

	/* First touch of memory promised before the cache filled up. */
	unsigned char *a = anon(6 * MiB);
	unsigned f = fill();
	unsigned s = touch(a, 6 * MiB, 1);
	printf("first touch: fill %s, sum %u\n", f == want ? "ok" : "WRONG", s);

	/* A system call writing into memory never touched. */
	unsigned char *b = anon(2 * MiB);
	f = fill();
	long fd = sys_open("mem_pressure.b", O_RDONLY, 0);
	long n = sys_read((int)fd, b, 2 * MiB);
	sys_close((int)fd);
	printf("read into fresh memory: fill %s, %s, sum %u\n", f == want ? "ok" : "WRONG",
	       n == (long)(2 * MiB) ? "2 MiB" : sys_err(n), sum_pages(b, 2 * MiB));
	sys_munmap(b, 2 * MiB);

	/* Copy-on-write breaks in a child, after a fill. */
	fflush_stdout();
	long pid = sys_fork();
	if (pid == 0) {
		unsigned cf = fill();
		unsigned cs = touch(a, 6 * MiB, 7);
		printf("child: fill %s, copy-on-write sum %u\n", cf == want ? "ok" : "WRONG", cs);
		exit(0);
	}
	int status = -1;
	sys_waitpid((int)pid, &status, 0);
	printf("child status %#x; parent's pages sum %u\n", status, sum_pages(a, 6 * MiB));

	/* mremap growth after a fill. */
	unsigned char *c = anon(1 * MiB);
	touch(c, 1 * MiB, 3);
	f = fill();
	long r = sys_mremap(c, 1 * MiB, 4 * MiB, MREMAP_MAYMOVE, 0);
	if (sys_failed(r)) {
		printf("mremap growth: %s\n", sys_err(r));
	} else {
		c = (unsigned char *)r;
		unsigned kept = sum_pages(c, 1 * MiB);
		printf("mremap growth: fill %s, kept %u, new sum %u\n", f == want ? "ok" : "WRONG", kept,
		       touch(c + 1 * MiB, 3 * MiB, 5));
	}

	for (int i = 0; i < FILES; i++) {
		char name[32];
		name_of(name, i);
		sys_unlink(name);
	}
	return 0;
}
