/*
 * scatter.c - memory whose pages are scattered over physical frames. Every
 * other page of a touched mapping is given back (MADV_DONTNEED), then a new
 * mapping is touched: its pages get the freed frames one by one, and every
 * page of both mappings must keep its own contents.
 *
 * Without arguments 4 MiB (compared with native runs in every configuration).
 * With "big" (crates/cli/tests/memory.rs) 320 MiB: under morph each scattered
 * page takes a host mapping of its own, more than the host allows a process
 * (vm.max_map_count), where the guest used to be killed (SIGKILL) while Linux
 * runs it; morph now drops its window's host mappings and maps pages again.
 */
#include "rt.h"

#define PAGE 4096u
#define MiB (1u << 20)
#define MADV_DONTNEED 4

static unsigned char *anon(unsigned len)
{
	long p = sys_mmap2(0, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (sys_failed(p)) {
		printf("mmap %u bytes: %s\n", len, sys_err(p));
		exit(1);
	}
	return (unsigned char *)p;
}

int main(int argc, char **argv)
{
	unsigned len = argc > 1 && !strcmp(argv[1], "big") ? 320 * MiB : 4 * MiB;
	unsigned char *a = anon(len);
	for (unsigned k = 0; k < len; k += PAGE)
		a[k + (k / PAGE) % PAGE] = (unsigned char)(k / PAGE);
	long failed = 0;
	for (unsigned k = 0; k < len; k += 2 * PAGE)
		failed += sys_failed(rt_syscall(219, (long)(a + k), PAGE, MADV_DONTNEED, 0, 0));
	printf("madvise failures: %ld\n", failed);
	unsigned char *b = anon(len / 2);
	for (unsigned k = 0; k < len / 2; k += PAGE)
		b[k] = (unsigned char)(k / PAGE * 3);
	unsigned bad_a = 0, bad_b = 0;
	for (unsigned k = 0; k < len; k += PAGE) {
		unsigned page = k / PAGE;
		unsigned char want = page % 2 ? (unsigned char)page : 0;
		bad_a += a[k + page % PAGE] != want;
	}
	for (unsigned k = 0; k < len / 2; k += PAGE)
		bad_b += b[k] != (unsigned char)(k / PAGE * 3);
	printf("%u MiB: wrong pages %u and %u\n", len >> 20, bad_a, bad_b);
	return 0;
}
