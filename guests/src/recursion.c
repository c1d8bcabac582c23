/*
 * recursion.c - deep and branchy recursion: naive Fibonacci (many short
 * calls), Ackermann (deep, irregular), towers of Hanoi (22 discs, about
 * four million moves), a non-tail-recursive sum 5000 frames deep, mutual
 * recursion (even/odd, 3001 frames) and a recursive quicksort.  Exercises
 * call/ret, the return-address stack and stack-relative addressing.
 */
#include "rt.h"

static unsigned long calls;

static __attribute__((noinline)) uint32_t fib(uint32_t n)
{
	calls++;
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

static __attribute__((noinline)) uint32_t ack(uint32_t m, uint32_t n)
{
	calls++;
	if (m == 0)
		return n + 1;
	if (n == 0)
		return ack(m - 1, 1);
	return ack(m - 1, ack(m, n - 1));
}

static uint32_t max_depth, depth;

static __attribute__((noinline)) uint32_t ack_depth(uint32_t m, uint32_t n)
{
	uint32_t r;

	if (++depth > max_depth)
		max_depth = depth;
	if (m == 0)
		r = n + 1;
	else if (n == 0)
		r = ack_depth(m - 1, 1);
	else
		r = ack_depth(m - 1, ack_depth(m, n - 1));
	depth--;
	return r;
}

/* hanoi: count moves and hash the move sequence */
static uint32_t moves, move_hash;

static __attribute__((noinline)) void hanoi(int n, int from, int to, int via)
{
	if (n == 0)
		return;
	hanoi(n - 1, from, via, to);
	moves++;
	move_hash = (move_hash * 31u) ^ (uint32_t)(n << 4 | from << 2 | to);
	hanoi(n - 1, via, to, from);
}

/* not a tail call: the addition happens after the return */
static __attribute__((noinline)) uint64_t deep_sum(uint32_t n, volatile uint32_t *sink)
{
	uint64_t r;

	if (n == 0)
		return 0;
	*sink = n;
	r = deep_sum(n - 1, sink);
	return r + n * (uint64_t)n;
}

static int is_odd(uint32_t n);

static __attribute__((noinline)) int is_even(uint32_t n)
{
	return n == 0 ? 1 : is_odd(n - 1);
}

static __attribute__((noinline)) int is_odd(uint32_t n)
{
	return n == 0 ? 0 : is_even(n - 1);
}

static void quicksort(int32_t *a, int lo, int hi)
{
	int32_t pivot, t;
	int i, j;

	if (lo >= hi)
		return;
	pivot = a[(lo + hi) / 2];
	i = lo;
	j = hi;
	while (i <= j) {
		while (a[i] < pivot)
			i++;
		while (a[j] > pivot)
			j--;
		if (i <= j) {
			t = a[i];
			a[i] = a[j];
			a[j] = t;
			i++;
			j--;
		}
	}
	quicksort(a, lo, j);
	quicksort(a, i, hi);
}

int main(void)
{
	volatile uint32_t sink;
	static int32_t arr[20000];
	uint32_t seed = 12345, h;
	int i, sorted = 1;
	uint32_t r;

	/* results first: argument evaluation order is unspecified */
	calls = 0;
	r = fib(27);
	printf("fib(27) = %u (%lu calls)\n", r, calls);
	calls = 0;
	r = ack(2, 3);
	printf("ackermann(2, 3) = %u (%lu calls)\n", r, calls);
	calls = 0;
	r = ack(3, 6);
	printf("ackermann(3, 6) = %u (%lu calls)\n", r, calls);
	r = ack_depth(3, 7);
	printf("ackermann(3, 7) = %u, max depth %u\n", r, max_depth);
	hanoi(22, 0, 2, 1);
	printf("hanoi(22): %u moves, hash %08x\n", moves, move_hash);
	printf("deep_sum(5000) = %llu\n", (unsigned long long)deep_sum(5000, &sink));
	printf("is_even(3001) = %d, is_odd(3001) = %d\n", is_even(3001), is_odd(3001));

	for (i = 0; i < 20000; i++) {
		seed = seed * 1103515245u + 12345u;
		arr[i] = (int32_t)(seed >> 1) - 0x20000000;
	}
	quicksort(arr, 0, 19999);
	for (i = 1; i < 20000; i++)
		if (arr[i - 1] > arr[i])
			sorted = 0;
	h = fnv1a(arr, sizeof(arr));
	printf("quicksort(20000): sorted %s, min %d, max %d, hash %08x\n", sorted ? "yes" : "no",
	       arr[0], arr[19999], h);
	return 0;
}
