/*
 * fault_segv.c - reads through a NULL pointer and must be killed by
 * SIGSEGV.  The line before the fault is written with a raw write(2) so
 * nothing is left in a buffer when the process dies; the line after it
 * must never appear.
 */
#include "rt.h"

int main(void)
{
	uint32_t v;

	raw_puts(1, "fault_segv: about to read address 0\n");
	/* asm keeps the compiler from treating the NULL access as UB */
	__asm__ volatile("movl 0, %0" : "=r" (v) : : "memory");
	raw_puts(1, "fault_segv: survived (wrong)\n");
	return (int)v;
}
