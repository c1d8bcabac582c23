/*
 * rlimits.c - the old getrlimit (76) beside ugetrlimit (191): the same limits, every
 * value past 0x7fffffff read as 0x7fffffff; setrlimit lowering RLIMIT_CORE's soft
 * limit and reading it back; setrlimit with cur > max (EINVAL); RLIMIT_NOFILE's soft
 * limit bounding the descriptors open, dup2 and F_DUPFD can make (EMFILE, EBADF,
 * EINVAL), descriptors above a lowered limit staying open, a hard limit past
 * fs.nr_open (EPERM). Values that depend on the host are compared, not printed.
 */
#include "rt.h"

static const char *res(long r)
{
	static char b[16];
	switch (r) {
	case 0: return "ok";
	case -1: return "EPERM";
	case -9: return "EBADF";
	case -22: return "EINVAL";
	case -24: return "EMFILE";
	default:
		if (r > 0) {
			snprintf(b, sizeof b, "fd %ld", r);
			return b;
		}
		return "error";
	}
}

/* RLIMIT_NOFILE at 40: opens until refused, then dup2, F_DUPFD and fcntl around it. */
static void nofile(void)
{
	uint32_t old[2], lim[2], back[2];
	rt_syscall(191, 7, old);
	lim[0] = 40;
	lim[1] = old[1];
	printf("setrlimit nofile 40: %s\n", res(rt_syscall(75, 7, lim)));
	long last = 0, r;
	while ((r = sys_open("/dev/null", O_RDONLY, 0)) >= 0)
		last = r;
	printf("last fd opened %ld, then %s\n", last, res(r));
	printf("dup2 to 39: %s\n", res(rt_syscall(63, 0, 39)));
	printf("dup2 to 40: %s\n", res(rt_syscall(63, 0, 40)));
	printf("F_DUPFD from 40: %s\n", res(rt_syscall(55, 0, 0, 40)));
	sys_close(20);
	printf("F_DUPFD from 10: %s\n", res(rt_syscall(55, 0, 0, 10)));
	lim[0] = 16;
	printf("setrlimit nofile 16: %s\n", res(rt_syscall(75, 7, lim)));
	printf("fd 30 still open: %s\n", res(rt_syscall(55, 30, 1)));
	printf("open: %s\n", res(sys_open("/dev/null", O_RDONLY, 0)));
	for (int fd = 3; fd < 40; fd++)
		sys_close(fd);
	printf("open after closing: %s\n", res(sys_open("/dev/null", O_RDONLY, 0)));
	sys_close(3);
	uint64_t big[2] = { 1u << 20, (1u << 20) + 1 };
	printf("prlimit64 hard past nr_open: %s\n", res(rt_syscall(340, 0, 7, big, 0)));
	printf("restored: %s\n", res(rt_syscall(75, 7, old)));
	rt_syscall(191, 7, back);
	printf("reads back: %d\n", back[0] == old[0] && back[1] == old[1]);
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
	nofile();
	return 0;
}
