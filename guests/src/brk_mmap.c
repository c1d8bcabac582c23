/*
 * brk_mmap.c - the memory-management system calls: brk (query, grow by
 * odd amounts, write, shrink, regrow, refused requests), anonymous mmap2,
 * mprotect to read-only and back, munmap of a whole mapping and of a hole
 * in one, MAP_FIXED over existing pages, mremap, file mappings (private
 * and shared, with an offset, the zero fill after end of file), and the
 * EINVAL/EBADF cases.
 *
 * Addresses are never printed since they vary from run to run; only
 * properties Linux guarantees are: page alignment, exact brk deltas,
 * zero-filled new memory, and contents (as checksums).  The scratch file
 * (argv[1], default "brk_mmap.tmp") is unlinked at the end without
 * printing the result.
 */
#include "rt.h"

#define PAGE 4096u

static int all_zero(const uint8_t *p, size_t n)
{
	while (n--)
		if (*p++)
			return 0;
	return 1;
}

static void fill(uint8_t *p, size_t n, uint32_t seed)
{
	size_t i;

	for (i = 0; i < n; i++) {
		seed = seed * 1664525u + 1013904223u;
		p[i] = (uint8_t)(seed >> 24);
	}
}

static const char *yn(int c)
{
	return c ? "yes" : "no";
}

static void *map_anon(void *addr, size_t len, int prot, int extra)
{
	long r = sys_mmap2(addr, len, prot, MAP_PRIVATE | MAP_ANONYMOUS | extra, -1, 0);

	if (sys_failed(r)) {
		printf("mmap2 failed: %s\n", sys_err(r));
		exit(1);
	}
	return (void *)r;
}

static void test_brk(void)
{
	uintptr_t b0, b1, b2, b3, b4;

	printf("== brk\n");
	b0 = (uintptr_t)sys_brk(0);
	printf("initial break page aligned: %s\n", yn(b0 % PAGE == 0));
	b1 = (uintptr_t)sys_brk((void *)(b0 + 12345));
	printf("grow by 12345: delta %lu\n", (unsigned long)(b1 - b0));
	printf("new memory zero: %s\n", yn(all_zero((uint8_t *)b0, 12345)));
	fill((uint8_t *)b0, 12345, 1);
	b2 = (uintptr_t)sys_brk((void *)(b1 + 100001));
	printf("grow by 100001: delta %lu\n", (unsigned long)(b2 - b0));
	printf("old contents kept: %08x\n", fnv1a((uint8_t *)b0, 12345));
	printf("grown part zero: %s\n", yn(all_zero((uint8_t *)b1, 100001)));
	fill((uint8_t *)b0, b2 - b0, 2);
	printf("filled: %08x\n", fnv1a((uint8_t *)b0, b2 - b0));
	b3 = (uintptr_t)sys_brk((void *)(b0 + 5000));
	printf("shrink to +5000: delta %lu, first 5000 bytes %08x\n", (unsigned long)(b3 - b0),
	       fnv1a((uint8_t *)b0, 5000));
	b4 = (uintptr_t)sys_brk((void *)(b0 + 90000));
	printf("regrow to +90000: delta %lu\n", (unsigned long)(b4 - b0));
	/* whole pages given back and taken again come back zeroed */
	{
		uintptr_t from = (b0 + 5000 + PAGE - 1) & ~(uintptr_t)(PAGE - 1);

		printf("released pages zero after regrow: %s\n",
		       yn(all_zero((uint8_t *)from, b0 + 90000 - from)));
	}
	printf("brk below the start refused: %s\n",
	       yn((uintptr_t)sys_brk((void *)(b0 - PAGE)) == b4));
	printf("back to start: delta %ld\n", (long)((uintptr_t)sys_brk((void *)b0) - b0));
}

static void test_anon(void)
{
	uint8_t *p, *q;
	long r;

	printf("== anonymous mappings\n");
	p = map_anon(NULL, 3 * PAGE, PROT_READ | PROT_WRITE, 0);
	printf("page aligned: %s, zero: %s\n", yn(((uintptr_t)p & (PAGE - 1)) == 0),
	       yn(all_zero(p, 3 * PAGE)));
	fill(p, 3 * PAGE, 3);
	printf("filled: %08x\n", fnv1a(p, 3 * PAGE));
	r = sys_mprotect(p, 3 * PAGE, PROT_READ);
	printf("mprotect read-only: %s, still readable: %08x\n", sys_err(r), fnv1a(p, 3 * PAGE));
	r = sys_mprotect(p, 3 * PAGE, PROT_READ | PROT_WRITE);
	p[5] = 0x55;
	printf("mprotect read-write: %s, written: %02x\n", sys_err(r), p[5]);
	/* punch a hole and fill it with a fresh page */
	r = sys_munmap(p + PAGE, PAGE);
	printf("munmap middle page: %s\n", sys_err(r));
	q = map_anon(p + PAGE, PAGE, PROT_READ | PROT_WRITE, MAP_FIXED);
	printf("MAP_FIXED into the hole: at hole %s, zero %s\n", yn(q == p + PAGE), yn(all_zero(q, PAGE)));
	printf("neighbours intact: %08x %08x\n", fnv1a(p, PAGE), fnv1a(p + 2 * PAGE, PAGE));
	/* MAP_FIXED over live data replaces it */
	q = map_anon(p, PAGE, PROT_READ | PROT_WRITE, MAP_FIXED);
	printf("MAP_FIXED over data: same address %s, zero %s\n", yn(q == p), yn(all_zero(q, PAGE)));
	/* mremap: grow (may move), contents preserved; then shrink */
	fill(p, 3 * PAGE, 4);
	{
		uint32_t before = fnv1a(p, 3 * PAGE);
		long m = sys_mremap(p, 3 * PAGE, 10 * PAGE, MREMAP_MAYMOVE, NULL);

		if (sys_failed(m)) {
			printf("mremap grow: %s\n", sys_err(m));
		} else {
			p = (uint8_t *)m;
			printf("mremap grow: ok, contents kept %s, new part zero %s\n",
			       yn(fnv1a(p, 3 * PAGE) == before), yn(all_zero(p + 3 * PAGE, 7 * PAGE)));
			m = sys_mremap(p, 10 * PAGE, 2 * PAGE, 0, NULL);
			printf("mremap shrink in place: %s\n", yn(m == (long)p));
			printf("munmap: %s\n", sys_err(sys_munmap(p, 2 * PAGE)));
		}
	}
	printf("munmap of an unmapped range: %s\n", sys_err(sys_munmap(p, 2 * PAGE)));
	/* error cases */
	printf("mmap length 0: %s\n", sys_err(sys_mmap2(NULL, 0, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)));
	printf("mmap MAP_FIXED unaligned: %s\n",
	       sys_err(sys_mmap2((void *)0x10000123, PAGE, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0)));
	printf("mmap file without fd: %s\n", sys_err(sys_mmap2(NULL, PAGE, PROT_READ, MAP_PRIVATE, -1, 0)));
	printf("munmap unaligned: %s\n", sys_err(sys_munmap((void *)0x10000123, PAGE)));
	printf("mprotect unaligned: %s\n", sys_err(sys_mprotect((void *)0x10000123, PAGE, PROT_READ)));
	/* a large allocation through the runtime's malloc (mmap-backed) */
	{
		uint8_t *big = malloc(5 << 20);

		printf("malloc 5 MiB: %s", yn(big != NULL));
		if (big) {
			fill(big, 5 << 20, 5);
			printf(", checksum %08x", fnv1a(big, 5 << 20));
			free(big);
		}
		printf("\n");
	}
}

static void test_file(const char *name)
{
	uint8_t data[10000], buf[64];
	uint8_t *p, *q, *s;
	long fd, r;

	printf("== file mappings\n");
	fill(data, sizeof(data), 6);
	sys_unlink(name);
	fd = sys_open(name, O_CREAT | O_TRUNC | O_RDWR, 0644);
	if (sys_failed(fd)) {
		printf("open failed: %s\n", sys_err(fd));
		exit(1);
	}
	printf("write: %ld\n", sys_write(fd, data, sizeof(data)));

	r = sys_mmap2(NULL, 3 * PAGE, PROT_READ, MAP_PRIVATE, (int)fd, 0);
	printf("private read-only map: %s\n", sys_err(r));
	p = (uint8_t *)r;
	printf("contents match: %s\n", yn(memcmp(p, data, sizeof(data)) == 0));
	printf("zero after end of file: %s\n", yn(all_zero(p + sizeof(data), 3 * PAGE - sizeof(data))));

	r = sys_mmap2(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE, (int)fd, 1);
	printf("private writable map at page 1: %s\n", sys_err(r));
	q = (uint8_t *)r;
	printf("contents match offset 4096: %s\n", yn(memcmp(q, data + PAGE, PAGE) == 0));
	memset(q, 'P', 16);
	sys_pread64((int)fd, buf, 16, PAGE);
	printf("private write kept out of the file: %s\n", yn(memcmp(buf, data + PAGE, 16) == 0));

	r = sys_mmap2(NULL, 3 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, (int)fd, 0);
	printf("shared map: %s\n", sys_err(r));
	s = (uint8_t *)r;
	memcpy(s + 100, "SHARED", 6);
	sys_pread64((int)fd, buf, 6, 100);
	printf("shared write seen by pread: %s\n", yn(memcmp(buf, "SHARED", 6) == 0));
	printf("seen by the private read-only map: %s\n", yn(memcmp(p + 100, "SHARED", 6) == 0));
	sys_pwrite64((int)fd, "WRITTEN", 7, 200);
	printf("pwrite seen by the shared map: %s\n", yn(memcmp(s + 200, "WRITTEN", 7) == 0));
	printf("file checksum through the map: %08x\n", fnv1a(s, sizeof(data)));

	printf("munmap: %s", sys_err(sys_munmap(p, 3 * PAGE)));
	printf(" %s", sys_err(sys_munmap(q, PAGE)));
	printf(" %s\n", sys_err(sys_munmap(s, 3 * PAGE)));
	sys_close(fd);
	sys_unlink(name);	/* result deliberately not printed */
}

int main(int argc, char **argv)
{
	test_brk();
	test_anon();
	test_file(argc > 1 ? argv[1] : "brk_mmap.tmp");
	return 0;
}
