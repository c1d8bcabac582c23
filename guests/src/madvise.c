/*
 * madvise.c - madvise(2) as Linux gives it: MADV_DONTNEED gives private
 * anonymous pages back (they read as zeros again, their neighbours keep
 * their bytes), keeps shared anonymous memory, and works on a part of a
 * mapping, and gives a private file mapping the file's pages back (as the
 * file is now); the hints (NORMAL, RANDOM, SEQUENTIAL, WILLNEED, DONTDUMP,
 * DODUMP, HUGEPAGE, NOHUGEPAGE, COLD, PAGEOUT) return 0 and change nothing;
 * MADV_FREE on private anonymous memory returns 0; an unaligned start and
 * an unknown advice give EINVAL, a range with a hole ENOMEM, a zero length 0.
 */
#include "rt.h"

#define PAGE 4096u
#define SYS_madvise 219

enum {
	NORMAL = 0, RANDOM = 1, SEQUENTIAL = 2, WILLNEED = 3, DONTNEED = 4,
	FREE = 8, DONTDUMP = 16, DODUMP = 17, HUGEPAGE = 14, NOHUGEPAGE = 15,
	COLD = 20, PAGEOUT = 21,
};

static long madv(void *p, unsigned long len, int advice)
{
	return rt_syscall(SYS_madvise, (long)p, (long)len, advice, 0, 0);
}

static uint8_t *map(unsigned pages, int flags)
{
	long r = sys_mmap2(0, pages * PAGE, PROT_READ | PROT_WRITE, flags | MAP_ANONYMOUS, -1, 0);

	if (sys_failed(r)) {
		printf("mmap2 failed: %s\n", sys_err(r));
		exit(1);
	}
	return (uint8_t *)r;
}

/* One letter per page: its first byte, or '0' for a zero page. */
static void show(const char *what, const uint8_t *p, unsigned pages)
{
	char s[16];
	unsigned i;

	for (i = 0; i < pages; i++)
		s[i] = p[i * PAGE] ? (char)p[i * PAGE] : '0';
	s[pages] = 0;
	printf("%-28s %s\n", what, s);
}

static void fill(uint8_t *p, unsigned pages)
{
	unsigned i;

	for (i = 0; i < pages; i++)
		memset(p + i * PAGE, 'a' + i, PAGE);
}

/*
 * A private file mapping: DONTNEED drops the pages written (copied), so they
 * show the file again, as it is now (written through write(2) meanwhile);
 * a shared one keeps what was stored, which is the file's.
 */
static void file_mappings(void)
{
	const char *f = "madvise.tmp";
	long fd = sys_open(f, O_RDWR | O_CREAT | O_TRUNC, 0644);
	uint8_t page[PAGE];
	uint8_t *p, *s;
	unsigned i;

	for (i = 0; i < 4; i++) {
		memset(page, 'A' + i, PAGE);
		sys_write(fd, page, PAGE);
	}
	p = (uint8_t *)sys_mmap2(0, 4 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	s = (uint8_t *)sys_mmap2(0, 4 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	show("private file", p, 4);
	fill(p, 4);
	p[3 * PAGE + 1] = 'z';
	show("private file written", p, 4);
	printf("file dontneed pages 1-2: %s\n", sys_err(madv(p + PAGE, 2 * PAGE, DONTNEED)));
	show("private file after", p, 4);
	sys_pwrite64(fd, "Q", 1, 2 * PAGE);
	s[PAGE] = 'S';
	show("file changed", p, 4);
	printf("file dontneed all: %s\n", sys_err(madv(p, 4 * PAGE, DONTNEED)));
	show("private file after all", p, 4);
	printf("second byte of page 3: %c\n", p[3 * PAGE + 1]);
	p[0] = 'w';
	show("written again", p, 4);
	printf("shared file dontneed: %s\n", sys_err(madv(s, 4 * PAGE, DONTNEED)));
	show("shared file after", s, 4);
	sys_mprotect(p, 4 * PAGE, PROT_READ);
	printf("read-only file dontneed: %s\n", sys_err(madv(p, 4 * PAGE, DONTNEED)));
	show("read-only file after", p, 4);
	sys_close(fd);
	sys_unlink(f);
}

int main(void)
{
	static const int hints[] = { NORMAL, RANDOM, SEQUENTIAL, WILLNEED, DONTDUMP, DODUMP,
				     HUGEPAGE, NOHUGEPAGE, COLD, PAGEOUT };
	uint8_t *p = map(4, MAP_PRIVATE), *s;
	unsigned i;

	fill(p, 4);
	printf("dontneed page 1: %s\n", sys_err(madv(p + PAGE, PAGE, DONTNEED)));
	show("private after dontneed", p, 4);
	p[PAGE] = 'x';
	show("written again", p, 4);
	printf("dontneed all: %s\n", sys_err(madv(p, 4 * PAGE, DONTNEED)));
	show("private after dontneed all", p, 4);
	fill(p, 4);
	for (i = 0; i < sizeof(hints) / sizeof(hints[0]); i++)
		printf("hint %d: %s\n", hints[i], sys_err(madv(p, 4 * PAGE, hints[i])));
	show("after the hints", p, 4);
	printf("free: %s\n", sys_err(madv(p + 2 * PAGE, 2 * PAGE, FREE)));
	printf("unaligned: %s\n", sys_err(madv(p + 1, PAGE, DONTNEED)));
	printf("unknown advice: %s\n", sys_err(madv(p, PAGE, 77)));
	printf("zero length: %s\n", sys_err(madv(p, 0, DONTNEED)));
	printf("odd length: %s\n", sys_err(madv(p, 1, DONTNEED)));
	show("first page gone", p, 4);
	sys_munmap(p + 2 * PAGE, PAGE);
	printf("hole: %s\n", sys_err(madv(p, 4 * PAGE, WILLNEED)));
	printf("hole dontneed: %s\n", sys_err(madv(p, 4 * PAGE, DONTNEED)));
	printf("unmapped: %s\n", sys_err(madv(p + 2 * PAGE, PAGE, NORMAL)));

	s = map(2, MAP_SHARED);
	fill(s, 2);
	printf("shared dontneed: %s\n", sys_err(madv(s, 2 * PAGE, DONTNEED)));
	show("shared after dontneed", s, 2);
	file_mappings();
	return 0;
}
