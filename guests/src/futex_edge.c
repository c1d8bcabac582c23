/*
 * futex_edge.c - futex(2) on bad addresses and arguments, as Linux answers
 * them: a misaligned word is EINVAL; an unmapped or inaccessible word is
 * EFAULT when the kernel must look at the page (a shared futex's key, the
 * value WAIT and CMP_REQUEUE compare, the word WAKE_OP writes) but not for
 * a private WAKE/REQUEUE, whose key is just the address; a read-only word is
 * fine for WAKE and WAIT, not for WAKE_OP's target; a bad timeout pointer is
 * EFAULT before anything else is looked at; bitset 0 and negative requeue
 * counts are EINVAL; an unknown command or WAKE_OP operation is ENOSYS, and
 * FUTEX_CLOCK_REALTIME only goes with WAIT_BITSET.
 */
#include "rt.h"

#define SYS_futex 240
#define WAIT 0
#define WAKE 1
#define REQUEUE 3
#define CMP_REQUEUE 4
#define WAKE_OP 5
#define WAIT_BITSET 9
#define WAKE_BITSET 10
#define PRIV 128
#define CLOCK_RT 256
#define PAGE 4096u

static long futex(void *u, int op, uint32_t val, const void *t, void *u2, uint32_t val3)
{
	return rt_syscall(SYS_futex, (long)u, op, (long)val, (long)t, (long)u2, (long)val3);
}

static void show(const char *what, long r)
{
	printf("%-40s %s\n", what, sys_err(r));
}

int main(void)
{
	uint8_t *m = (uint8_t *)sys_mmap2(0, 4 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t *sh = (uint8_t *)sys_mmap2(0, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	uint32_t *ok = (uint32_t *)m, *ro = (uint32_t *)(m + PAGE), *none = (uint32_t *)(m + 2 * PAGE);
	uint32_t *gone = (uint32_t *)(m + 3 * PAGE), *shw = (uint32_t *)sh;
	struct { long s, ns; } ts = { 0, 1000 }, bad_ts = { 0, 2000000000 };
	char name[64];

	*ok = 5;
	*shw = 5;
	sys_mprotect(ro, PAGE, PROT_READ);
	sys_mprotect(none, PAGE, PROT_NONE);
	sys_munmap(gone, PAGE);

	static const char *const names[] = { "mapped", "read-only", "PROT_NONE", "unmapped" };
	uint32_t *const words[] = { ok, ro, none, gone };
	for (unsigned i = 0; i < 4; i++) {
		uint32_t *w = words[i];
		for (int priv = 0; priv <= PRIV; priv += PRIV) {
			const char *k = priv ? "private" : "shared";
			snprintf(name, sizeof name, "wake %s %s", k, names[i]);
			show(name, futex(w, WAKE | priv, 1, 0, 0, 0));
			snprintf(name, sizeof name, "wake_bitset %s %s", k, names[i]);
			show(name, futex(w, WAKE_BITSET | priv, 1, 0, 0, 1));
			snprintf(name, sizeof name, "wait (other value) %s %s", k, names[i]);
			show(name, futex(w, WAIT | priv, 77, &ts, 0, 0));
			snprintf(name, sizeof name, "requeue %s %s", k, names[i]);
			show(name, futex(w, REQUEUE | priv, 1, (void *)1, ok, 0));
			snprintf(name, sizeof name, "requeue to %s %s", k, names[i]);
			show(name, futex(ok, REQUEUE | priv, 1, (void *)1, w, 0));
			snprintf(name, sizeof name, "cmp_requeue %s %s", k, names[i]);
			show(name, futex(w, CMP_REQUEUE | priv, 1, (void *)1, ok, 0));
			snprintf(name, sizeof name, "wake_op target %s %s", k, names[i]);
			show(name, futex(ok, WAKE_OP | priv, 1, (void *)1, w, 0x10000000));
			snprintf(name, sizeof name, "wake_op first %s %s", k, names[i]);
			show(name, futex(w, WAKE_OP | priv, 1, (void *)1, ok, 0x10000000));
		}
	}
	show("wake shared-memory word", futex(shw, WAKE, 1, 0, 0, 0));
	show("wait shared-memory word (timeout)", futex(shw, WAIT, 5, &ts, 0, 0));
	show("wake misaligned", futex((uint8_t *)ok + 1, WAKE | PRIV, 1, 0, 0, 0));
	show("wake misaligned shared", futex((uint8_t *)ok + 2, WAKE, 1, 0, 0, 0));
	show("wait misaligned", futex((uint8_t *)ok + 1, WAIT | PRIV, 5, 0, 0, 0));
	show("wait misaligned, bad timeout", futex((uint8_t *)ok + 1, WAIT | PRIV, 5, gone, 0, 0));
	show("wait unmapped timeout", futex(ok, WAIT | PRIV, 77, gone, 0, 0));
	show("wait invalid timeout", futex(ok, WAIT | PRIV, 77, &bad_ts, 0, 0));
	show("wait (same value, timeout)", futex(ok, WAIT | PRIV, 5, &ts, 0, 0));
	show("wait_bitset 0", futex(ok, WAIT_BITSET | PRIV, 5, 0, 0, 0));
	show("wake_bitset 0", futex(ok, WAKE_BITSET | PRIV, 1, 0, 0, 0));
	show("wake_bitset 0 unmapped", futex(gone, WAKE_BITSET | PRIV, 1, 0, 0, 0));
	show("requeue negative count", futex(ok, REQUEUE | PRIV, (uint32_t)-1, (void *)1, ok, 0));
	show("requeue negative count 2", futex(ok, REQUEUE | PRIV, 1, (void *)-1, ok, 0));
	show("wake_op bad op", futex(ok, WAKE_OP | PRIV, 1, (void *)1, ok, 0x70000000));
	show("wake_op bad cmp", futex(ok, WAKE_OP | PRIV, 1, (void *)1, ok, 0x0f000000));
	show("unknown command 99", futex(ok, 99 | PRIV, 1, 0, 0, 0));
	show("unknown command 14", futex(ok, 14 | PRIV, 1, 0, 0, 0));
	show("wake clock_realtime", futex(ok, WAKE | PRIV | CLOCK_RT, 1, 0, 0, 0));
	show("wait clock_realtime", futex(ok, WAIT | PRIV | CLOCK_RT, 77, 0, 0, 0));
	show("wait_bitset clock_realtime", futex(ok, WAIT_BITSET | PRIV | CLOCK_RT, 77, 0, 0, ~0u));
	printf("word after wake_op: %u\n", *ok);
	return 0;
}
