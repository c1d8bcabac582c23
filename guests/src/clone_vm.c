/*
 * clone_vm.c - clone(CLONE_VM | SIGCHLD) without CLONE_THREAD: a child
 * process (its own pid, the caller its parent) that runs on its own stack in
 * the caller's memory, both running at once: what either stores, maps or
 * unmaps the other sees; private futexes meet (Linux keys them by memory);
 * the parent waits for it with waitpid and gets its exit status; the memory
 * outlives the child, and a CLONE_PARENT_SETTID/CHILD_SETTID word is written
 * where both see it.
 */
#include "rt.h"

#define SYS_clone 120
#define SYS_wait4_ 114
#define SYS_getppid_ 64
#define SYS_sched_yield 158
#define SYS_futex_ 240
#define CLONE_VM 0x100
#define CLONE_PARENT_SETTID 0x00100000
#define CLONE_CHILD_SETTID 0x01000000
#define SIGCHLD_ 17
#define PAGE 4096u

/* vm_clone(flags, stack_top, fn, arg, tid_word): the child calls fn(arg) on the new
 * stack and exits with its result; the parent gets the child's pid. */
long vm_clone(unsigned flags, void *stack_top, int (*fn)(void *), void *arg, int *tid);
__asm__(".text\n\t.globl vm_clone\nvm_clone:\n"
	"\tpushl %ebx\n\tpushl %esi\n\tpushl %edi\n"
	"\tmovl 16(%esp), %ebx\n"
	"\tmovl 20(%esp), %ecx\n"
	"\tsubl $8, %ecx\n"
	"\tmovl 24(%esp), %eax\n\tmovl %eax, 0(%ecx)\n"
	"\tmovl 28(%esp), %eax\n\tmovl %eax, 4(%ecx)\n"
	"\tmovl 32(%esp), %edx\n\txorl %esi, %esi\n\tmovl %edx, %edi\n"
	"\tmovl $120, %eax\n\tint $0x80\n"
	"\ttestl %eax, %eax\n\tjnz 1f\n"
	"\tpopl %eax\n\tcall *%eax\n"
	"\tmovl %eax, %ebx\n\tmovl $1, %eax\n\tint $0x80\n"
	"1:\tpopl %edi\n\tpopl %esi\n\tpopl %ebx\n\tret\n");

static volatile int shared, flag, counter, word;
static volatile char *mapped;
static volatile int child_pid_seen, child_ppid_ok;
static int tid_word;

static void yield(void) { rt_syscall(SYS_sched_yield); }

static int child(void *arg)
{
	long r;

	child_pid_seen = (int)sys_getpid();
	child_ppid_ok = rt_syscall(SYS_getppid_) == (long)arg;
	shared = 42;
	mapped = (volatile char *)sys_mmap2(0, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	strcpy((char *)mapped, "mapped by the child");
	/* handshake with the running parent */
	while (flag != 1)
		yield();
	flag = 2;
	for (int i = 0; i < 100000; i++)
		counter++;
	/* a private futex wait, woken by the parent */
	while (word == 0) {
		r = rt_syscall(SYS_futex_, (long)&word, 0 | 128, 0, 0, 0, 0);
		(void)r;
	}
	return 7;
}

int main(void)
{
	char *stack = (char *)sys_mmap2(0, 64 * 1024, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	long me = sys_getpid(), pid, r;
	int status = 0;

	pid = vm_clone(CLONE_VM | SIGCHLD_ | CLONE_PARENT_SETTID | CLONE_CHILD_SETTID, stack + 64 * 1024, child,
		       (void *)me, &tid_word);
	printf("clone: %s\n", pid > 0 ? "a pid" : sys_err(pid));
	flag = 1;
	while (flag != 2)
		yield();
	printf("handshake done\n");
	for (int i = 0; i < 50; i++)
		yield();
	word = 1;
	while ((r = rt_syscall(SYS_futex_, (long)&word, 1 | 128, 1, 0, 0, 0)) == 0 && counter < 100000)
		yield();
	r = rt_syscall(SYS_wait4_, pid, &status, 0, 0);
	printf("waitpid: %s, exited %d status %d\n", r == pid ? "the child" : sys_err(r), (status & 0x7f) == 0,
	       (status >> 8) & 0xff);
	printf("child's pid is its own: %s, parent is us: %s\n", child_pid_seen == pid && pid != me ? "yes" : "no",
	       child_ppid_ok ? "yes" : "no");
	printf("settid word is the pid: %s\n", tid_word == pid ? "yes" : "no");
	printf("shared %d counter %d\n", shared, counter);
	printf("child's mapping: %s\n", mapped ? (const char *)mapped : "(none)");
	printf("munmap child's mapping: %s\n", sys_err(sys_munmap((void *)mapped, PAGE)));
	return 0;
}
