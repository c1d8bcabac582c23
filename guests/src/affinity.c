/*
 * affinity.c - sched_getaffinity (242), sched_setaffinity (241), getgroups
 * (80) and getgroups32 (205): the errors Linux gives, and results that do
 * not depend on how many processors the machine has (morph models one; the
 * host running this natively may have any number) or on which groups the
 * user is in (morph reports the host user's).
 *
 * getaffinity: a length that holds no CPU or is not a whole number of
 * 32-bit words is EINVAL, a pid that names no thread ESRCH, an unwritable
 * mask EFAULT; otherwise the bytes written (a positive multiple of 4), and
 * some CPU is set. setaffinity: an empty mask is EINVAL, an unreadable one
 * EFAULT, the mask getaffinity gave is accepted. getgroups: the count when
 * asked with size 0, the same count and the same ids from both calls,
 * EINVAL for a negative size and for a size too small.
 */
#include "rt.h"

#define SYS_getgroups 80
#define SYS_getgroups32 205
#define SYS_sched_setaffinity 241
#define SYS_sched_getaffinity 242
#define SYS_gettid 224

static int any_set(const unsigned char *m, long n)
{
	long i;

	for (i = 0; i < n; i++)
		if (m[i])
			return 1;
	return 0;
}

static void get(const char *what, long pid, long len, void *mask)
{
	long r = rt_syscall(SYS_sched_getaffinity, pid, len, mask);

	if (r > 0)
		printf("getaffinity %-22s ok: multiple of 4 %s, a CPU set %s\n", what, r % 4 == 0 ? "yes" : "no",
		       any_set(mask, r) ? "yes" : "no");
	else
		printf("getaffinity %-22s %s\n", what, sys_err(r));
}

int main(void)
{
	static unsigned char mask[128], none[128], all[128];
	static uint32_t g32[256];
	static uint16_t g16[256];
	long n32, n16, i, same;

	get("pid 0, 128 bytes", 0, 128, mask);
	get("own tid, 8 bytes", rt_syscall(SYS_gettid), 8, mask);
	get("own pid, 4 bytes", sys_getpid(), 4, mask);
	get("0 bytes", 0, 0, mask);
	get("3 bytes", 0, 3, mask);
	get("6 bytes", 0, 6, mask);
	get("pid -1", -1, 128, mask);
	get("pid 0x3fffffff", 0x3fffffff, 128, mask);
	get("mask at 0x10", 0, 128, (void *)0x10);

	get("pid 0, 128 bytes", 0, 128, mask);
	printf("setaffinity empty mask     %s\n", sys_err(rt_syscall(SYS_sched_setaffinity, 0, 128, none)));
	printf("setaffinity 0 bytes        %s\n", sys_err(rt_syscall(SYS_sched_setaffinity, 0, 0, all)));
	printf("setaffinity mask at 0x10   %s\n", sys_err(rt_syscall(SYS_sched_setaffinity, 0, 128, (void *)0x10)));
	printf("setaffinity pid 0x3fffffff %s\n", sys_err(rt_syscall(SYS_sched_setaffinity, 0x3fffffff, 128, mask)));
	printf("setaffinity as it was      %s\n", sys_err(rt_syscall(SYS_sched_setaffinity, 0, 128, mask)));
	get("after setting it", 0, 128, mask);

	n32 = rt_syscall(SYS_getgroups32, 0, g32);
	n16 = rt_syscall(SYS_getgroups, 0, g16);
	printf("getgroups count: same from both %s, non-negative %s\n", n32 == n16 ? "yes" : "no",
	       n32 >= 0 ? "yes" : "no");
	same = rt_syscall(SYS_getgroups32, 256, g32) == n32 && rt_syscall(SYS_getgroups, 256, g16) == n16;
	for (i = 0; i < n32 && i < n16; i++)
		if ((g32[i] > 65535 ? 65534 : g32[i]) != g16[i])
			same = 0;
	printf("getgroups lists agree      %s\n", same ? "yes" : "no");
	printf("getgroups size -1          %s\n", sys_err(rt_syscall(SYS_getgroups32, -1, g32)));
	printf("getgroups16 size -1        %s\n", sys_err(rt_syscall(SYS_getgroups, -1, g16)));
	if (n32 > 1)
		printf("getgroups too small        %s\n", sys_err(rt_syscall(SYS_getgroups32, n32 - 1, g32)));
	else
		printf("getgroups too small        (fewer than two groups)\n");
	if (n32 > 0)
		printf("getgroups list at 0x10     %s\n", sys_err(rt_syscall(SYS_getgroups32, 256, (void *)0x10)));
	else
		printf("getgroups list at 0x10     (no groups)\n");
	return 0;
}
