/*
 * syscall.S - the single raw system call primitive of the runtime.
 *
 *   long rt_syscall(long nr, ...);   up to six arguments
 *
 * Arguments are passed the Linux i386 way: %eax = number, then %ebx, %ecx,
 * %edx, %esi, %edi, %ebp, and the kernel is entered with int $0x80.  The
 * raw kernel result is returned: a negative value in [-4095, -1] is -errno.
 * Unused argument slots are read from the caller's frame and ignored by
 * the kernel, so calling it with fewer arguments is harmless.
 */
	.text
	.globl	rt_syscall
	.type	rt_syscall, @function
rt_syscall:
	pushl	%ebp
	pushl	%edi
	pushl	%esi
	pushl	%ebx
	movl	20(%esp), %eax
	movl	24(%esp), %ebx
	movl	28(%esp), %ecx
	movl	32(%esp), %edx
	movl	36(%esp), %esi
	movl	40(%esp), %edi
	movl	44(%esp), %ebp
	int	$0x80
	popl	%ebx
	popl	%esi
	popl	%edi
	popl	%ebp
	ret
	.size	rt_syscall, . - rt_syscall

	.section .note.GNU-stack, "", @progbits

/* The signal restorers declared in rt.h: rt_sigreturn (173), and sigreturn (119)
 * after popping the signal number the legacy frame leaves on the stack. */
	.text
	.globl restore_rt
	.type restore_rt, @function
restore_rt:
	movl $173, %eax
	int $0x80
	.size restore_rt, .-restore_rt
	.globl restore_legacy
	.type restore_legacy, @function
restore_legacy:
	popl %eax
	movl $119, %eax
	int $0x80
	.size restore_legacy, .-restore_legacy
