/*
 * select_edge.c - select(2) at its edges, as Linux does them: a timeval
 * whose tv_usec holds whole seconds is normalised (negative totals are
 * EINVAL); nfds beyond the descriptor table is clamped to it (bits past it
 * are neither checked nor written back), a negative nfds is EINVAL; the
 * old (82, one struct argument), _newselect (142) and pselect6 (308) forms.
 */
#include "rt.h"

#define SYS_oldselect	82
#define SYS_newselect	142
#define SYS_pselect6	308

struct sel_args {
	long n;
	uint32_t *in, *out, *ex;
	struct timeval *tv;
};

static uint32_t in[64], out[64];	/* room for 2048 descriptors */

static long nsel(long n, uint32_t *r, uint32_t *w, struct timeval *tv)
{
	return rt_syscall(SYS_newselect, n, r, w, (void *)0, tv);
}

int main(void)
{
	int p[2];
	struct timeval tv;
	long r;

	sys_pipe(p);
	sys_write(p[1], "x", 1);

	/* timeouts: only a ready pipe, so no call waits */
	in[0] = 1u << p[0];
	tv.tv_sec = 0;
	tv.tv_usec = 2500000;
	printf("usec 2500000, ready: %ld in %#x\n", nsel(p[0] + 1, in, 0, &tv), in[0]);
	in[0] = 1u << p[0];
	tv.tv_sec = 0;
	tv.tv_usec = 1000000;
	printf("usec 1000000, ready: %ld\n", nsel(p[0] + 1, in, 0, &tv));
	in[0] = 1u << p[0];
	tv.tv_sec = 0;
	tv.tv_usec = -1;
	printf("usec -1: %ld\n", nsel(p[0] + 1, in, 0, &tv));
	in[0] = 1u << p[0];
	tv.tv_sec = -1;
	tv.tv_usec = 0;
	printf("sec -1: %ld\n", nsel(p[0] + 1, in, 0, &tv));
	in[0] = 1u << p[0];
	tv.tv_sec = -1;
	tv.tv_usec = 3000000;
	printf("sec -1 usec 3000000, ready: %ld\n", nsel(p[0] + 1, in, 0, &tv));
	/* normalises to zero: an immediate timeout on a descriptor that is not ready */
	in[0] = 1u << p[1];
	tv.tv_sec = 2;
	tv.tv_usec = -2000000;
	r = nsel(p[1] + 1, in, 0, &tv);
	printf("sec 2 usec -2000000, not ready: %ld in %#x tv %ld.%06ld\n", r, in[0], tv.tv_sec, tv.tv_usec);

	/* nfds beyond the table: clamped; a set bit far above it is ignored and kept */
	memset(in, 0, sizeof in);
	in[0] = 1u << p[0];
	in[1500 / 32] = 1u << (1500 % 32);
	tv.tv_sec = 0;
	tv.tv_usec = 0;
	r = nsel(2000, in, 0, &tv);
	printf("nfds 2000: %ld in[0] %#x bit 1500 %s\n", r, in[0], in[1500 / 32] ? "kept" : "cleared");
	in[0] = 1u << p[0];
	printf("nfds 0x7fffffff: %ld\n", nsel(0x7fffffff, in, 0, &tv));
	in[0] = 1u << p[0];
	printf("nfds -1: %ld\n", nsel(-1, in, 0, &tv));
	/* within the table, a descriptor that is not open is EBADF */
	in[0] = 1u << 20;
	printf("fd 20 not open: %ld\n", nsel(21, in, 0, &tv));
	/* bits beyond nfds in the last word are cleared on return */
	in[0] = (1u << p[0]) | (1u << 30);
	r = nsel(p[0] + 1, in, 0, &tv);
	printf("bit past nfds: %ld in %#x\n", r, in[0]);

	/* the old select with one argument block */
	{
		struct sel_args a = { p[0] + 1, in, 0, 0, &tv };
		in[0] = 1u << p[0];
		tv.tv_sec = 0;
		tv.tv_usec = 1500000;
		printf("old select usec 1500000: %ld\n", rt_syscall(SYS_oldselect, &a));
		a.n = 3000;
		in[0] = 1u << p[0];
		printf("old select nfds 3000: %ld\n", rt_syscall(SYS_oldselect, &a));
	}

	/* pselect6: a timespec is not normalised */
	{
		struct timespec ts = { 0, 1000000000 };
		in[0] = 1u << p[0];
		printf("pselect nsec 1e9: %ld\n", rt_syscall(SYS_pselect6, p[0] + 1, in, 0, 0, &ts, 0));
		ts.tv_nsec = 0;
		in[0] = 1u << p[0];
		printf("pselect nfds 5000: %ld\n", rt_syscall(SYS_pselect6, 5000, in, 0, 0, &ts, 0));
	}

	/* write-only side as well: a pipe's write end is writable */
	memset(out, 0, sizeof out);
	out[0] = 1u << p[1];
	tv.tv_sec = 0;
	tv.tv_usec = 0;
	printf("writable, nfds 1025: %ld out %#x\n", nsel(1025, 0, out, &tv), out[0]);
	return 0;
}
