/*
 * malloc.c - a tiny allocator.
 *
 * Requests up to 64 KiB are rounded up to a power of two (min 16 bytes)
 * and served from per-size free lists; fresh blocks are carved from the
 * heap grown with brk(2).  Larger requests get their own anonymous mmap2
 * mapping, returned with munmap(2) on free.  Every block carries an 8-byte
 * header recording its capacity and origin.  Not thread-safe (the test
 * programs are single-threaded).
 */
#include "rt.h"

#define MIN_SHIFT	4
#define MAX_SHIFT	16
#define HDR		8
#define MAGIC_BRK	0x6b726221u
#define MAGIC_MMAP	0x70616d21u

struct hdr {
	uint32_t cap;		/* usable bytes (brk) or mapping length (mmap) */
	uint32_t magic;
};

static void *free_list[MAX_SHIFT + 1];
static uintptr_t heap_cur, heap_end;

static void *heap_grab(size_t n)
{
	uintptr_t p;

	if (!heap_end) {
		heap_cur = heap_end = (uintptr_t)sys_brk(0);
		heap_cur = heap_end = (heap_cur + 15) & ~(uintptr_t)15;
	}
	if (heap_end - heap_cur < n) {
		/* grow in 64 KiB steps to keep the number of brk calls low */
		uintptr_t want = (heap_cur + n + 0xffff) & ~(uintptr_t)0xffff;
		uintptr_t got = (uintptr_t)sys_brk((void *)want);

		if (got < want)
			return NULL;
		heap_end = got;
	}
	p = heap_cur;
	heap_cur += n;
	return (void *)p;
}

void *malloc(size_t n)
{
	struct hdr *h;
	int shift = MIN_SHIFT;

	if (n > ((size_t)1 << MAX_SHIFT)) {
		size_t len = (n + HDR + 4095) & ~(size_t)4095;
		long r;

		if (len < n)
			return NULL;
		r = sys_mmap2(NULL, len, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (sys_failed(r))
			return NULL;
		h = (struct hdr *)r;
		h->cap = len;
		h->magic = MAGIC_MMAP;
		return h + 1;
	}
	while (((size_t)1 << shift) < n)
		shift++;
	if (free_list[shift]) {
		void *p = free_list[shift];

		free_list[shift] = *(void **)p;
		return p;
	}
	h = heap_grab(HDR + ((size_t)1 << shift));
	if (!h)
		return NULL;
	h->cap = (uint32_t)1 << shift;
	h->magic = MAGIC_BRK;
	return h + 1;
}

static struct hdr *header_of(void *p)
{
	struct hdr *h = (struct hdr *)p - 1;

	if (h->magic != MAGIC_BRK && h->magic != MAGIC_MMAP) {
		raw_puts(2, "rt: free/realloc of a bad pointer\n");
		_exit(126);
	}
	return h;
}

void free(void *p)
{
	struct hdr *h;
	int shift = MIN_SHIFT;

	if (!p)
		return;
	h = header_of(p);
	if (h->magic == MAGIC_MMAP) {
		sys_munmap(h, h->cap);
		return;
	}
	while (((uint32_t)1 << shift) < h->cap)
		shift++;
	*(void **)p = free_list[shift];
	free_list[shift] = p;
}

void *calloc(size_t n, size_t size)
{
	size_t total = n * size;
	void *p;

	if (size && total / size != n)
		return NULL;
	p = malloc(total);
	if (p)
		memset(p, 0, total);	/* recycled blocks are not clean */
	return p;
}

void *realloc(void *p, size_t n)
{
	struct hdr *h;
	size_t cap;
	void *q;

	if (!p)
		return malloc(n);
	h = header_of(p);
	cap = h->magic == MAGIC_MMAP ? h->cap - HDR : h->cap;
	if (n <= cap)
		return p;
	q = malloc(n);
	if (q) {
		memcpy(q, p, cap);
		free(p);
	}
	return q;
}
