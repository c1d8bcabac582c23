/*
 * cpuid_rdtsc.c - CPU identification and the time-stamp counter.
 *
 * By default only facts that hold on every CPU able to run these tests
 * are printed, so native and emulated runs agree on any host: CPUID is
 * available (EFLAGS.ID can be toggled), leaf 0 reports at least leaf 1,
 * and leaf 1 advertises the i686 features the guests rely on (FPU, TSC,
 * CX8, CMOV, MMX).  Two successive RDTSC reads must not go backwards.
 *
 * With the argument --show the vendor string, family/model/stepping and
 * the raw leaf-1 feature words are printed as well; a separate emulator
 * test uses that to check the identity the emulator reports.  Leaves
 * above 1 are never queried.
 */
#include "rt.h"

static void cpuid(uint32_t leaf, uint32_t *a, uint32_t *b, uint32_t *c, uint32_t *d)
{
	__asm__ volatile("cpuid" : "=a" (*a), "=b" (*b), "=c" (*c), "=d" (*d) : "a" (leaf), "c" (0));
}

static uint64_t rdtsc(void)
{
	uint32_t lo, hi;

	__asm__ volatile("rdtsc" : "=a" (lo), "=d" (hi));
	return (uint64_t)hi << 32 | lo;
}

/* Can bit 21 (ID) of EFLAGS be flipped?  That is how CPUID is detected. */
static int id_toggles(void)
{
	uint32_t before, after;

	__asm__ volatile("pushfl\n\t"
			 "popl %0\n\t"
			 "movl %0, %1\n\t"
			 "xorl $0x200000, %1\n\t"
			 "pushl %1\n\t"
			 "popfl\n\t"
			 "pushfl\n\t"
			 "popl %1\n\t"
			 "pushl %0\n\t"		/* restore the original value */
			 "popfl"
			 : "=&r" (before), "=&r" (after) : : "cc");
	return ((before ^ after) & 0x200000) != 0;
}

int main(int argc, char **argv)
{
	uint32_t a, b, c, d, max;
	int show = argc > 1 && strcmp(argv[1], "--show") == 0;
	char vendor[13];
	uint64_t t1, t2;
	int i, ok = 1;

	printf("eflags.ID toggles: %s\n", id_toggles() ? "yes" : "no");
	cpuid(0, &max, &b, &c, &d);
	memcpy(vendor, &b, 4);
	memcpy(vendor + 4, &d, 4);
	memcpy(vendor + 8, &c, 4);
	vendor[12] = 0;
	printf("max leaf >= 1: %s\n", max >= 1 ? "yes" : "no");
	cpuid(1, &a, &b, &c, &d);
	printf("fpu bit: %u\n", d & 1);
	printf("tsc bit: %u\n", (d >> 4) & 1);
	printf("cx8 bit: %u\n", (d >> 8) & 1);
	printf("cmov bit: %u\n", (d >> 15) & 1);
	printf("mmx bit: %u\n", (d >> 23) & 1);
	if (show) {
		uint32_t family = (a >> 8) & 0xf, model = (a >> 4) & 0xf;

		if (family == 0xf)
			family += (a >> 20) & 0xff;
		if (family == 0x6 || family >= 0xf)
			model |= ((a >> 16) & 0xf) << 4;
		printf("vendor: %s\n", vendor);
		printf("family %u model %u stepping %u\n", family, model, a & 0xf);
		printf("leaf1 eax %08x edx %08x ecx %08x\n", a, d, c);
	}

	/* The TSC must not run backwards between two reads. */
	for (i = 0; i < 1000; i++) {
		t1 = rdtsc();
		t2 = rdtsc();
		if (t2 < t1)
			ok = 0;
	}
	printf("rdtsc non-decreasing: %s\n", ok ? "yes" : "no");
	return 0;
}
