/*
 * code_alias.c - code written through a second mapping of the same memory
 * runs as written: a file mapped twice (read/write and read/exec), the code
 * rewritten through the writable alias and called through the other, 3,000
 * times; the same with shared anonymous memory written by another process
 * (a forked child, in step over pipes).  A translator that protects only the
 * mapping it fetched code from runs stale code here.
 */
#include "rt.h"

typedef int (*fn_t)(void);

/* mov $v, %eax; ret */
static void emit(volatile unsigned char *p, uint32_t v)
{
	p[0] = 0xb8;
	p[1] = (unsigned char)v;
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)(v >> 16);
	p[4] = (unsigned char)(v >> 24);
	p[5] = 0xc3;
}

static void file_aliases(void)
{
	long fd = sys_open("code_alias.tmp", O_RDWR | O_CREAT | O_TRUNC, 0700);
	volatile unsigned char *w;
	fn_t x;
	int wrong = 0, i;

	sys_ftruncate64(fd, 4096);
	w = (volatile unsigned char *)sys_mmap2(0, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	x = (fn_t)sys_mmap2(0, 4096, PROT_READ | PROT_EXEC, MAP_SHARED, fd, 0);
	if (sys_failed((long)w) || sys_failed((long)x)) {
		printf("mmap failed\n");
		return;
	}
	for (i = 0; i < 3000; i++) {
		emit(w, (uint32_t)i * 7 + 1);
		if (x() != i * 7 + 1)
			wrong++;
	}
	printf("file, two mappings: %d of 3000 wrong\n", wrong);
	sys_close(fd);
	sys_unlink("code_alias.tmp");
}

static void other_process(void)
{
	volatile unsigned char *m;
	int to_child[2], to_parent[2], wrong = 0, i, st;
	long pid;
	char c;

	m = (volatile unsigned char *)sys_mmap2(0, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
						MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	emit(m, 0);
	sys_pipe(to_child);
	sys_pipe(to_parent);
	pid = sys_fork();
	if (pid == 0) {
		for (i = 1; i <= 500; i++) {
			if (sys_read(to_child[0], &c, 1) != 1)
				_exit(1);
			emit(m, (uint32_t)i * 3);
			sys_write(to_parent[1], "k", 1);
		}
		_exit(0);
	}
	for (i = 1; i <= 500; i++) {
		((fn_t)m)(); /* hot before the child writes */
		sys_write(to_child[1], "w", 1);
		sys_read(to_parent[0], &c, 1);
		if (((fn_t)m)() != i * 3)
			wrong++;
	}
	sys_waitpid((int)pid, &st, 0);
	printf("shared anonymous, written by a child: %d of 500 wrong, child status %d\n", wrong, st);
}

int main(void)
{
	file_aliases();
	other_process();
	return 0;
}
