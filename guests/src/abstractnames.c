/*
 * abstractnames.c - long abstract AF_UNIX names (too long for morph to follow its
 * namespace prefix on the host, so numbered in a table): a name can be bound again
 * once its socket is closed, also while an accepted connection still has it (whose
 * getsockname, and its peer's getpeername, keep showing it); EADDRINUSE while bound;
 * hundreds of distinct names bound and closed in turn; a datagram's sender name.
 */
#include "rt.h"

#define SOCK_CLOEXEC_ 02000000

static const char *res(long r)
{
	return r == 0 ? "ok" : r > 0 ? "fd" : errno_str(r);
}

/* An abstract address: NUL, then `len` bytes of `c` ending in the pid (the native run's
 * names are the host's, which other runs may use at the same time) and the number `n`. */
static int name(struct sockaddr_un *a, char c, int len, int n)
{
	memset(a, 0, sizeof *a);
	a->sun_family = AF_UNIX;
	for (int i = 1; i <= len; i++)
		a->sun_path[i] = c;
	char num[24];
	int k = snprintf(num, sizeof num, "%ld.%d", sys_getpid(), n);
	memcpy(a->sun_path + 1 + len - k, num, (size_t)k);
	return 2 + 1 + len;
}

/* What an address the kernel gave back is, next to `want` (of length `wl`). */
static const char *which(struct sockaddr_un *got, int gl, struct sockaddr_un *want, int wl)
{
	if (gl == 2)
		return "unnamed";
	if (gl == wl && !memcmp(got, want, (size_t)wl))
		return "the name";
	return "another name";
}

static void names(const char *what, int fd, struct sockaddr_un *want, int wl)
{
	struct sockaddr_un a;
	int l = sizeof a;
	long r = sys_getsockname(fd, &a, &l);
	const char *me = r < 0 ? res(r) : which(&a, l, want, wl);
	l = sizeof a;
	r = sys_getpeername(fd, &a, &l);
	printf("%s: sockname %s, peername %s\n", what, me, r < 0 ? res(r) : which(&a, l, want, wl));
}

int main(void)
{
	struct sockaddr_un L, M;
	int ll = name(&L, 'L', 100, 1);
	int s1 = (int)sys_socket(AF_UNIX, SOCK_STREAM, 0);
	long r1 = sys_bind(s1, &L, ll);
	long r2 = sys_listen(s1, 4);
	printf("bind a 100-byte abstract name: %s, listen %s\n", res(r1), res(r2));
	int other = (int)sys_socket(AF_UNIX, SOCK_STREAM, 0);
	printf("another socket binds it: %s\n", res(sys_bind(other, &L, ll)));
	sys_close(other);
	int c = (int)sys_socket(AF_UNIX, SOCK_STREAM, 0);
	printf("connect: %s\n", res(sys_connect(c, &L, ll)));
	int a = (int)sys_accept4(s1, 0, 0, 0);
	printf("accept: %s\n", res(a));
	names("listener", s1, &L, ll);
	names("accepted", a, &L, ll);
	names("client", c, &L, ll);
	sys_close(s1);
	names("accepted, listener closed", a, &L, ll);
	names("client, listener closed", c, &L, ll);
	int c2 = (int)sys_socket(AF_UNIX, SOCK_STREAM, 0);
	printf("connect after the close: %s\n", res(sys_connect(c2, &L, ll)));
	sys_close(c2);
	int s2 = (int)sys_socket(AF_UNIX, SOCK_STREAM, 0);
	printf("bind it again while the accepted one lives: %s\n", res(sys_bind(s2, &L, ll)));
	names("the new one", s2, &L, ll);
	sys_close(s2);
	for (int i = 0; i < 50; i++) {
		int ml = name(&M, 'N', 100, i);
		int s = (int)sys_socket(AF_UNIX, SOCK_DGRAM, 0);
		sys_bind(s, &M, ml);
		sys_close(s);
	}
	names("accepted, after 50 other names came and went", a, &L, ll);
	names("client, after them", c, &L, ll);
	sys_close(a);
	sys_close(c);
	int s3 = (int)sys_socket(AF_UNIX, SOCK_DGRAM, 0);
	printf("bind it again once everything is closed: %s\n", res(sys_bind(s3, &L, ll)));
	names("that one", s3, &L, ll);
	sys_close(s3);

	/* Many names in turn, each bound, checked and closed; then all bound again. */
	int bad = 0;
	for (int i = 0; i < 400; i++) {
		int ml = name(&M, 'M', 90 + i % 17, i);
		int s = (int)sys_socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC_, 0);
		struct sockaddr_un g;
		int gl = sizeof g;
		if (sys_bind(s, &M, ml) != 0 || sys_getsockname(s, &g, &gl) != 0 || gl != ml || memcmp(&g, &M, (size_t)ml))
			bad++;
		sys_close(s);
	}
	for (int i = 0; i < 400; i++) {
		int ml = name(&M, 'M', 90 + i % 17, i);
		int s = (int)sys_socket(AF_UNIX, SOCK_DGRAM, 0);
		if (sys_bind(s, &M, ml) != 0)
			bad++;
		sys_close(s);
	}
	printf("400 names bound and closed, twice: %d failures\n", bad);

	/* A datagram from a socket bound to one long name to a socket bound to another. */
	struct sockaddr_un R, S;
	int rl = name(&R, 'R', 105, 7), sl = name(&S, 'S', 107, 8);
	int rs = (int)sys_socket(AF_UNIX, SOCK_DGRAM, 0), ss = (int)sys_socket(AF_UNIX, SOCK_DGRAM, 0);
	long b1 = sys_bind(rs, &R, rl), b2 = sys_bind(ss, &S, sl);
	printf("bind 105 and 107 bytes: %s %s\n", res(b1), res(b2));
	printf("sendto: %ld\n", sys_sendto(ss, "hi", 2, 0, &R, rl));
	struct sockaddr_un from;
	int fl = sizeof from;
	char buf[4];
	long n = sys_recvfrom(rs, buf, sizeof buf, 0, &from, &fl);
	printf("recvfrom: %ld from %s\n", n, which(&from, fl, &S, sl));
	sys_close(rs);
	sys_close(ss);
	return 0;
}
