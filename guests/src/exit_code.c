/*
 * exit_code.c - prints a line (buffered, so exit() must flush it) and
 * exits with the status given as argv[1], default 42.  Checks that the
 * exit status (and its truncation to 8 bits) reaches the parent.
 */
#include "rt.h"

int main(int argc, char **argv)
{
	int status = argc > 1 ? atoi(argv[1]) : 42;

	printf("exit_code: exiting with status %d\n", status);
	return status;
}
