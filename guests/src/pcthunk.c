/*
 * pcthunk.c - calls of PC thunks (`mov r32, (%esp); ret`, through which i386
 * position-independent code reads its own address), which the translator
 * does inline after checking the thunk's four bytes at run time, and
 * everything that must undo that: the thunk rewritten in place (into code
 * that is no longer a thunk, then back), the same effect in a non-canonical
 * encoding, another page mapped at the thunk's address, the thunk's page
 * unmapped (SIGSEGV at the thunk, as a handler's si_addr and EIP show), and a
 * thunk straddling into an unmapped page. Each caller also checks that the
 * return address is left below ESP, as the call pushed it, and a thunk for
 * every register. Every phase runs hot enough to be translated.
 */
#include "rt.h"

#define PAGE 4096
#define SA_SIGINFO_	4
#define SA_RESTORER_	0x04000000
#define SI_ADDR(si)	(((uint32_t *)(si))[3])
#define UC_EIP(uc)	(((uint32_t *)(uc))[5 + 14])

/* The thunk loading register `reg` (0 eax .. 7 edi) at p. */
static void put_thunk(uint8_t *p, int reg)
{
	p[0] = 0x8b;
	p[1] = (uint8_t)(0x04 | reg << 3);
	p[2] = 0x24;
	p[3] = 0xc3;
}

/* A relative call at p to `to`; returns the byte after it. */
static uint8_t *put_call(uint8_t *p, const uint8_t *to)
{
	p[0] = 0xe8;
	int32_t rel = (int32_t)(to - (p + 5));
	memcpy(p + 1, &rel, 4);
	return p + 5;
}

/*
 * A caller of the thunk at `thunk` loading `reg`, at p: saves the callee-saved
 * registers, calls, and returns (reg - the address after the call) + 0x100 if
 * the word below ESP is not that address (the call pushed it there).
 */
static void put_caller(uint8_t *p, const uint8_t *thunk, int reg)
{
	static const uint8_t save[] = { 0x53, 0x55, 0x56, 0x57 };
	memcpy(p, save, sizeof save);
	uint8_t *after = put_call(p + sizeof save, thunk);
	uint8_t *q = after;
	/* mov %reg, %edx  (89 /r: reg -> edx) */
	*q++ = 0x89;
	*q++ = (uint8_t)(0xc0 | reg << 3 | 2);
	/* mov -4(%esp), %ecx */
	static const uint8_t ld[] = { 0x8b, 0x4c, 0x24, 0xfc };
	memcpy(q, ld, sizeof ld);
	q += sizeof ld;
	/* mov $after, %eax ; sub %eax, %edx ; sub %eax, %ecx */
	*q++ = 0xb8;
	uint32_t a = (uint32_t)(uintptr_t)after;
	memcpy(q, &a, 4);
	q += 4;
	static const uint8_t tail[] = {
		0x29, 0xc2, /* sub %eax, %edx */
		0x29, 0xc1, /* sub %eax, %ecx */
		0xf7, 0xd9, /* neg %ecx */
		0x19, 0xc9, /* sbb %ecx, %ecx: -1 if [esp-4] != after */
		0x81, 0xe1, 0x00, 0x01, 0x00, 0x00, /* and $0x100, %ecx */
		0x8d, 0x04, 0x0a, /* lea (%edx,%ecx), %eax */
		0x5f, 0x5e, 0x5d, 0x5b, /* pop %edi, %esi, %ebp, %ebx */
		0xc3,
	};
	memcpy(q, tail, sizeof tail);
}

typedef uint32_t (*fn0)(void);

static uint32_t run(fn0 f, int n)
{
	uint32_t sum = 0;
	for (int i = 0; i < n; i++)
		sum += f();
	return sum;
}

static uint32_t straddler;

static void on_segv(int sig, void *si, void *uc)
{
	(void)sig;
	printf("SIGSEGV: si_addr - thunk %u, eip - thunk %u\n", SI_ADDR(si) - straddler, UC_EIP(uc) - straddler);
	exit(0);
}

int main(void)
{
	/* Page T holds the thunks, page C (two pages on) the callers. */
	uint8_t *t = map_rwx(0, 3 * PAGE, 0);
	uint8_t *c = t + 2 * PAGE;
	static const char *names[8] = { "eax", "ecx", "edx", "ebx", "esp", "ebp", "esi", "edi" };
	for (int r = 0; r < 8; r++) {
		if (r == 4)
			continue;
		put_thunk(t + 16 * r, r);
		put_caller(c + 64 * r, t + 16 * r, r);
		printf("thunk %s: %u\n", names[r], run((fn0)(void *)(c + 64 * r), 3000));
	}
	fn0 fb = (fn0)(void *)(c + 64 * 3);

	/* Rewritten in place: `mov (%esp), %ebx; inc %ebx; ret` is no thunk. */
	static const uint8_t inc[] = { 0x8b, 0x1c, 0x24, 0x43, 0xc3 };
	memcpy(t + 48, inc, sizeof inc);
	printf("rewritten: %u\n", run(fb, 3000));
	put_thunk(t + 48, 3);
	printf("restored: %u\n", run(fb, 3000));

	/* The same thunk with another SIB encoding of (%esp): not the bytes checked. */
	t[48 + 2] = 0x64;
	printf("non-canonical: %u\n", run(fb, 3000));
	put_thunk(t + 48, 3);

	/* Another page at the thunks' address: a thunk of another register there. */
	t = map_rwx(t, PAGE, 1);
	put_thunk(t + 48, 6);
	t[52] = 0x31; /* xor %ebx, %ebx after the ret (not run) */
	printf("remapped (loads esi, not ebx): %u\n", run(fb, 3000) == 0 ? 0u : 1u);
	put_thunk(t + 48, 3);
	printf("remapped back: %u\n", run(fb, 3000));

	/* A thunk straddling into the page after it, first mapped, then not. */
	uint8_t *s = t + PAGE - 2;
	put_thunk(s, 3);
	put_caller(c + 64 * 8, s, 3);
	fn0 fs = (fn0)(void *)(c + 64 * 8);
	straddler = (uint32_t)(uintptr_t)s;
	printf("straddling: %u\n", run(fs, 3000));

	struct ksigaction sa = { (void *)on_segv, SA_RESTORER_ | SA_SIGINFO_, (void *)restore_rt, { 0, 0 } };
	rt_syscall(174, 11, &sa, 0, 8);
	if (run(fb, 100) != 0)
		printf("FAIL before unmapping\n");
	rt_syscall(SYS_munmap, t + PAGE, PAGE);
	printf("straddling into an unmapped page: calling\n");
	fs();
	printf("FAIL: returned\n");
	return 1;
}
