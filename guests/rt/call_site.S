/*
 * call_site.S - call_site(fn, arg): calls fn(arg), a site of sites.h, keeping
 * the registers the C calling convention keeps (a site may clobber any).
 */
	.text
	.globl	call_site
	.type	call_site, @function
call_site:
	pushl	%ebp
	pushl	%ebx
	pushl	%esi
	pushl	%edi
	pushl	24(%esp)
	call	*24(%esp)
	addl	$4, %esp
	popl	%edi
	popl	%esi
	popl	%ebx
	popl	%ebp
	ret
	.size	call_site, .-call_site
	.section .note.GNU-stack,"",@progbits
