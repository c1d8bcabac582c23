/*
 * rlimits.c - the old getrlimit (76) beside ugetrlimit (191): the same limits, every
 * value past 0x7fffffff read as 0x7fffffff; setrlimit lowering RLIMIT_CORE's soft
 * limit and reading it back; setrlimit with cur > max (EINVAL). Values that depend on
 * the host are compared, not printed.
 */
#include "rt.h"

static const char *res(long r)
{
	return r == 0 ? "ok" : r == -22 ? "EINVAL" : "error";
}

int main(void)
{
	/* RLIMIT_NOFILE (7), RLIMIT_STACK (3), RLIMIT_CORE (4): the old call is the new
	 * one with every value past 0x7fffffff read as 0x7fffffff */
	int ok = 1;
	for (int r = 3; r <= 7; r += 4) {
		uint32_t o[2], n[2];
		rt_syscall(76, r, o);
		rt_syscall(191, r, n);
		for (int i = 0; i < 2; i++)
			ok &= o[i] == (n[i] > 0x7fffffffu ? 0x7fffffffu : n[i]);
	}
	uint32_t core[2], set[2], back[2];
	rt_syscall(191, 4, core);
	set[0] = 0;
	set[1] = core[1];
	long r1 = rt_syscall(75, 4, set);
	rt_syscall(191, 4, back);
	set[0] = 1;
	set[1] = 0;
	printf("old getrlimit agrees: %d; setrlimit core 0: %s, reads back %d; cur > max: %s\n", ok, res(r1),
	       back[0] == 0 && back[1] == core[1], res(rt_syscall(75, 4, set)));
	return 0;
}
