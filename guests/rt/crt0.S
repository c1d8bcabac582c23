/*
 * crt0.S - process entry point for the guest test programs.
 *
 * The kernel enters _start with %esp pointing at argc, followed by the
 * argv pointers, a NULL, the envp pointers, a NULL and the auxiliary
 * vector.  We clear the frame pointer (end of the call chain), keep a
 * copy of the initial %esp, realign the stack to 16 bytes and hand over
 * to __rt_start_c (rt/start.c), which self-relocates static-PIE images,
 * parses the stack and calls main().  It never returns.
 */
	.text
	.globl	_start
	.type	_start, @function
_start:
	xorl	%ebp, %ebp
	movl	%esp, %eax		/* initial stack pointer */
	andl	$-16, %esp
	subl	$12, %esp		/* keep 16-byte alignment at the call */
	pushl	%eax
	call	__rt_start_c
	hlt				/* not reached */
	.size	_start, . - _start

	.section .note.GNU-stack, "", @progbits
