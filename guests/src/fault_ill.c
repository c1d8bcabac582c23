/*
 * fault_ill.c - executes UD2, the architecturally undefined instruction,
 * and must be killed by SIGILL.  Output before the fault goes through a
 * raw write(2) so nothing is lost.
 */
#include "rt.h"

int main(void)
{
	raw_puts(1, "fault_ill: about to execute ud2\n");
	__asm__ volatile("ud2");
	raw_puts(1, "fault_ill: survived (wrong)\n");
	return 0;
}
