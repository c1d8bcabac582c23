/*
 * fault_div.c - executes an integer division by zero (DIV with a zero
 * divisor raises #DE) and must be killed by SIGFPE.  Output before the
 * fault goes through a raw write(2) so nothing is lost.
 */
#include "rt.h"

int main(void)
{
	uint32_t lo = 1234, hi = 0, zero = 0;

	raw_puts(1, "fault_div: about to divide by zero\n");
	__asm__ volatile("divl %2" : "+a" (lo), "+d" (hi) : "r" (zero) : "cc");
	raw_puts(1, "fault_div: survived (wrong)\n");
	return (int)lo;
}
