/*
 * sites.h - what a signal handler reads of a fault, and "sites": instructions
 * under test, each in a function of its own, that a handler can name and
 * resume after.
 *
 * The i386 siginfo and ucontext (5 words, then the sigcontext) as Linux lays
 * them out.  A site NAME is a function s_NAME whose instruction under test is
 * at the label s_NAME_at and whose next one is s_NAME_after (the function
 * ends with ret there); `pre` runs before it (4(%esp) is call_site's
 * argument).  DECL(NAME) declares the labels, S(NAME) makes its `struct site`,
 * and call_site(fn, arg) calls one keeping the registers C expects kept (a
 * site may clobber any).
 */
#ifndef SITES_H
#define SITES_H

#include "rt.h"

#define SI_SIGNO(si)	(((int32_t *)(si))[0])
#define SI_CODE(si)	(((int32_t *)(si))[2])
#define SI_ADDR(si)	(((uint32_t *)(si))[3])
#define UC_W(uc, i)	(((uint32_t *)(uc))[5 + (i)])
#define UC_ESP(uc)	UC_W(uc, 7)
#define UC_EAX(uc)	UC_W(uc, 11)
#define UC_TRAPNO(uc)	UC_W(uc, 12)
#define UC_ERR(uc)	UC_W(uc, 13)
#define UC_EIP(uc)	UC_W(uc, 14)
#define UC_EFLAGS(uc)	UC_W(uc, 16)
#define UC_FPSTATE(uc)	UC_W(uc, 19)
#define UC_CR2(uc)	UC_W(uc, 21)

/* What a handler saw of a fault: the signal, si_code and si_addr, and the
   frame's trap number, error code and EIP. */
struct fault {
	int sig, code, trapno, err;
	uint32_t addr, eip;
};

/* A signal frame's legacy FSAVE header, the first 112 bytes at UC_FPSTATE: the seven
   environment words, then the status word and the magic at 108 and 110. */
struct fsave_header {
	uint32_t env[7];
	uint16_t status, magic;
};

/* Copies the header of the frame whose FPU state is at `fp` into `h`, then asks for
   53-bit precision in the header's control word alone: Linux's sigreturn folds the
   header over the FXSAVE image, so the interrupted code runs with it. */
static inline void take_fsave_header(uint32_t fp, volatile struct fsave_header *h)
{
	uint32_t *w = (uint32_t *)fp;
	for (int i = 0; i < 7; i++)
		h->env[i] = w[i];
	h->status = *(uint16_t *)(fp + 108);
	h->magic = *(uint16_t *)(fp + 110);
	w[0] = (w[0] & ~0x300u) | 0x200u;
}

static inline void fault_seen(volatile struct fault *f, int sig, void *si, void *uc)
{
	f->sig = sig;
	f->code = SI_CODE(si);
	f->addr = SI_ADDR(si);
	f->trapno = UC_TRAPNO(uc);
	f->err = UC_ERR(uc);
	f->eip = UC_EIP(uc);
}

#define SITE(name, pre, insn)                                                  \
	"\t.globl s_" #name "\ns_" #name ":\n" pre "\ns_" #name "_at:\n\t" insn "\n" \
	"s_" #name "_after:\n\tret\n"
#define DECL(n) extern char s_##n[], s_##n##_at[], s_##n##_after[];

struct site {
	const char *name;
	void (*fn)(uint32_t);
	const char *at, *after;
};
#define S(n) { #n, (void (*)(uint32_t))s_##n, s_##n##_at, s_##n##_after }

void call_site(void (*fn)(uint32_t), uint32_t arg);

#endif
