/*
 * rseq.c - rseq(2) (386): registration checks (length, alignment, flags;
 * EBUSY for the same registration again, EPERM for another signature, EINVAL
 * for another address or length), the ids the kernel keeps in the struct
 * (cpu_id_start = cpu_id, a valid cpu; mm_cid 0 in a single-threaded
 * process; written again when the thread comes back from a signal handler),
 * a critical section interrupted by a signal (a fault in it, or a signal sent
 * by a system call in it) resuming at its abort handler, with rseq_cs cleared,
 * rseq_cs cleared by a signal outside the section, and unregistration (cpu_id
 * -1 after, EPERM/EINVAL for the wrong signature/length).
 * The program has no libc, so nothing registered before it.
 */
#include "rt.h"

#define SYS_rseq 386
#define SYS_rt_sigaction_ 174
#define SYS_kill_ 37
#define SIGILL_ 4
#define SIGUSR1_ 10
#define SIG 0x53053053
#define UNREGISTER 1

struct rseq_area {
	uint32_t cpu_id_start, cpu_id;
	uint64_t rseq_cs;
	uint32_t flags, node_id, mm_cid;
	uint32_t pad;
} __attribute__((aligned(32)));

struct rseq_cs {
	uint32_t version, flags;
	uint64_t start_ip, post_commit_offset, abort_ip;
} __attribute__((aligned(32)));

static struct rseq_area area, other;
static struct rseq_cs cs_fault, cs_kill;
static volatile uint32_t handler_eip;
static volatile int handled;

/* cs_fault_body: the section [start, commit) holds a ud2; the abort handler (after the
 * signature) returns 1, the normal path 0.  cs_kill_body: the section makes a kill(2)
 * system call to its own process. */
__asm__(".text\n"
	"\t.globl cs_fault_body\ncs_fault_body:\n"
	"\tmovl 4(%esp), %ecx\n\tmovl 8(%esp), %edx\n\tmovl %ecx, (%edx)\n\tmovl $0, 4(%edx)\n"
	"\t.globl cs_fault_start\ncs_fault_start:\n\tnop\n\tud2\n"
	"\t.globl cs_fault_commit\ncs_fault_commit:\n\txorl %eax, %eax\n\tret\n"
	"\t.long 0x53053053\n"
	"\t.globl cs_fault_abort\ncs_fault_abort:\n\tmovl $1, %eax\n\tret\n"
	"\t.globl cs_kill_body\ncs_kill_body:\n"
	"\tpushl %ebx\n\tmovl 8(%esp), %ecx\n\tmovl 16(%esp), %edx\n\tmovl %ecx, (%edx)\n\tmovl $0, 4(%edx)\n"
	"\tmovl 12(%esp), %ebx\n"
	"\t.globl cs_kill_start\ncs_kill_start:\n"
	"\tmovl $37, %eax\n\tmovl $10, %ecx\n\tint $0x80\n\tnop\n"
	"\t.globl cs_kill_commit\ncs_kill_commit:\n\txorl %eax, %eax\n\tpopl %ebx\n\tret\n"
	"\t.long 0x53053053\n"
	"\t.globl cs_kill_abort\ncs_kill_abort:\n\tmovl $1, %eax\n\tpopl %ebx\n\tret\n");
int cs_fault_body(struct rseq_cs *cs, uint64_t *field);
int cs_kill_body(struct rseq_cs *cs, long pid, uint64_t *field);
extern char cs_fault_start[], cs_fault_commit[], cs_fault_abort[];
extern char cs_kill_start[], cs_kill_commit[], cs_kill_abort[];

static void handler(int sig, void *si, void *uc)
{
	(void)si;
	handled = sig;
	handler_eip = ((uint32_t *)uc)[5 + 14];
}

static long rseq(void *p, uint32_t len, int flags, uint32_t sig)
{
	return rt_syscall(SYS_rseq, (long)p, (long)len, flags, (long)sig);
}

static const char *where(uint32_t eip)
{
	if (eip == (uint32_t)cs_fault_abort || eip == (uint32_t)cs_kill_abort)
		return "the abort handler";
	if (eip >= (uint32_t)cs_fault_start && eip < (uint32_t)cs_fault_commit)
		return "in the section";
	if (eip >= (uint32_t)cs_kill_start && eip < (uint32_t)cs_kill_commit)
		return "in the section";
	return "elsewhere";
}

static void ids(const char *when)
{
	printf("%s: cpu_id_start %s cpu_id, cpu_id %s, mm_cid %u\n", when,
	       area.cpu_id_start == area.cpu_id ? "==" : "!=", (int32_t)area.cpu_id >= 0 ? "valid" : "-1",
	       area.mm_cid);
}

int main(void)
{
	struct ksigaction a = { (void *)handler, 4 | 0x40000000 | 0x04000000, (void *)restore_rt, { 0, 0 } };
	char *mis = (char *)&other + 4;
	int r;

	rt_syscall(SYS_rt_sigaction_, SIGILL_, &a, 0, 8);
	rt_syscall(SYS_rt_sigaction_, SIGUSR1_, &a, 0, 8);
	cs_fault = (struct rseq_cs){ 0, 0, (uint32_t)cs_fault_start, (uint32_t)(cs_fault_commit - cs_fault_start),
				     (uint32_t)cs_fault_abort };
	cs_kill = (struct rseq_cs){ 0, 0, (uint32_t)cs_kill_start, (uint32_t)(cs_kill_commit - cs_kill_start),
				    (uint32_t)cs_kill_abort };

	printf("unregister, none: %s\n", sys_err(rseq(&area, 32, UNREGISTER, SIG)));
	printf("length 16: %s\n", sys_err(rseq(&area, 16, 0, SIG)));
	printf("length 24: %s\n", sys_err(rseq(&area, 24, 0, SIG)));
	printf("misaligned: %s\n", sys_err(rseq(mis, 32, 0, SIG)));
	printf("flags 2: %s\n", sys_err(rseq(&area, 32, 2, SIG)));
	printf("unregister with flags 3: %s\n", sys_err(rseq(&area, 32, 3, SIG)));
	area.cpu_id = 0xdead;
	printf("register: %s\n", sys_err(rseq(&area, 32, 0, SIG)));
	ids("after register");
	printf("again: %s\n", sys_err(rseq(&area, 32, 0, SIG)));
	printf("again, other signature: %s\n", sys_err(rseq(&area, 32, 0, SIG + 1)));
	printf("again, other address: %s\n", sys_err(rseq(&other, 32, 0, SIG)));
	printf("again, other length: %s\n", sys_err(rseq(&area, 64, 0, SIG)));

	area.cpu_id = 0xdead;
	rt_syscall(SYS_kill_, sys_getpid(), SIGUSR1_);
	ids("after a handler");

	for (int i = 0; i < 60; i++) {
		handled = 0;
		r = cs_fault_body(&cs_fault, &area.rseq_cs);
		if (i == 0 || i == 59)
			printf("fault in the section: returned %d, signal %d, handler saw %s, rseq_cs %s\n", r, handled,
			       where(handler_eip), area.rseq_cs ? "set" : "cleared");
	}
	for (int i = 0; i < 60; i++) {
		handled = 0;
		r = cs_kill_body(&cs_kill, sys_getpid(), &area.rseq_cs);
		if (i == 0 || i == 59)
			printf("kill(2) in the section: returned %d, signal %d, handler saw %s, rseq_cs %s\n", r,
			       handled, where(handler_eip), area.rseq_cs ? "set" : "cleared");
	}
	area.rseq_cs = (uint32_t)&cs_kill;
	rt_syscall(SYS_kill_, sys_getpid(), SIGUSR1_);
	printf("signal outside the section: rseq_cs %s\n", area.rseq_cs ? "set" : "cleared");

	printf("unregister, other signature: %s\n", sys_err(rseq(&area, 32, UNREGISTER, SIG + 1)));
	printf("unregister, other length: %s\n", sys_err(rseq(&area, 64, UNREGISTER, SIG)));
	printf("unregister, other address: %s\n", sys_err(rseq(&other, 32, UNREGISTER, SIG)));
	printf("unregister: %s\n", sys_err(rseq(&area, 32, UNREGISTER, SIG)));
	printf("after unregister: cpu_id_start %u cpu_id %d\n", area.cpu_id_start, (int32_t)area.cpu_id);
	printf("register longer (64): %s\n", sys_err(rseq(&other, 64, 0, SIG)));
	printf("unregister it: %s\n", sys_err(rseq(&other, 64, UNREGISTER, SIG)));
	return 0;
}
