/* hello: the smallest dynamic glibc program, for measuring per-exec start-up. */
#include <stdio.h>

int main(void)
{
	puts("hello, world");
	return 0;
}
