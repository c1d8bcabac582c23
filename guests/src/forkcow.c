/* Copy-on-write across fork, the stores in hot loops (translated at once under
 * --threshold 0, after a few rounds otherwise): a parent that writes while its child
 * is alive must leave the child's view alone (and the child the parent's), and a parent
 * whose child exited first gets its pages back, writable, with the values it left.
 * Under morph's 2.6.12 profile the child runs first, so the second case is the one
 * where the fork's write protection is never applied (AddressSpace::settle_fork).
 * Only the parent prints, after each wait; children report through their exit status. */
#include "rt.h"

#define N 8192 /* 32 KiB: eight pages of .bss */

static int data[N];
static int marker; /* one more word of .bss, written by the parent only */

static void fill(int *a, int n, int v)
{
	for (int i = 0; i < n; i++)
		a[i] = v + i;
}

static long sum(const int *a, int n)
{
	long s = 0;
	for (int i = 0; i < n; i++)
		s += a[i];
	return s;
}

static long expect(int v, int n)
{
	return (long)v * n + (long)n * (n - 1) / 2;
}

/* The child's exit code, or 128 + the signal that killed it. */
static int wait_status(long pid)
{
	int st = 0;
	if (sys_waitpid((int)pid, &st, 0) != pid)
		return -1;
	return (st & 0x7f) == 0 ? (st >> 8) & 0xff : 128 + (st & 0x7f);
}

int main(void)
{
	int *heap = malloc(N * sizeof(int));
	if (!heap)
		return 1;
	fill(data, N, 1);
	fill(heap, N, 2);
	for (int round = 0; round < 4; round++) {
		/* 1. The parent writes while the child is alive (blocked on a pipe). */
		int p[2];
		if (sys_pipe(p) != 0)
			return 2;
		long before = sum(data, N), hbefore = sum(heap, N);
		marker = round;
		long pid = sys_fork();
		if (pid < 0)
			return 3;
		if (pid == 0) {
			char c;
			sys_close(p[1]);
			if (sys_read(p[0], &c, 1) != 1)
				_exit(10);
			/* The parent has rewritten both arrays by now: this copy must not see it. */
			_exit(sum(data, N) == before && sum(heap, N) == hbefore && marker == round ? 0 : 11);
		}
		sys_close(p[0]);
		fill(data, N, 100 + round);
		fill(heap, N, 300 + round);
		marker = round + 1;
		if (sys_write(p[1], "x", 1) != 1)
			return 4;
		sys_close(p[1]);
		int st1 = wait_status(pid);

		/* 2. The child writes its own copies and exits before the parent goes on. */
		pid = sys_fork();
		if (pid < 0)
			return 5;
		if (pid == 0) {
			fill(data, N, 7);
			fill(heap, N, 8);
			_exit(sum(data, N) == expect(7, N) && sum(heap, N) == expect(8, N) ? 0 : 12);
		}
		int st2 = wait_status(pid);
		int ok_kept = sum(data, N) == expect(100 + round, N) && sum(heap, N) == expect(300 + round, N);
		fill(data, N, 200 + round);
		fill(heap, N, 400 + round);
		int ok_own = sum(data, N) == expect(200 + round, N) && sum(heap, N) == expect(400 + round, N);
		printf("round %d: child views %d/%d, parent kept %d, parent writes %d\n", round, st1, st2, ok_kept, ok_own);
		fill(data, N, 100 + round + 1); /* what the next round's first child sees */
		fill(heap, N, 300 + round + 1);
	}
	printf("data %ld heap %ld\n", sum(data, N), sum(heap, N));
	return 0;
}
