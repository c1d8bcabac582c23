/*
 * netmore.c - more of the network a program sees: AF_UNIX abstract names of
 * every length Linux takes (bind, getsockname, connect, sendto/recvfrom,
 * accept and getpeername show the names exactly; 108 bytes after the NUL is
 * EINVAL; two long names that differ only at the end are different names;
 * another process reaches a long name), control messages sent with sendmsg
 * (IPV6_HOPLIMIT, IPV6_TCLASS, IP_TTL, IP_TOS, IP_PKTINFO and IPV6_PKTINFO
 * with the loopback interface, received back with the IPV6_RECV and IP_RECV
 * options; malformed, unknown and unreachable ones and their errors; levels
 * a protocol ignores), the machine's names (uname; sethostname and
 * setdomainname with the current names and their checks) and the interface
 * ioctls for lo (SIOCGIFINDEX, SIOCGIFNAME, SIOCGIFFLAGS, SIOCGIFMTU,
 * SIOCGIFADDR, SIOCGIFNETMASK, SIOCGIFCONF, ...), a name that does not exist
 * and the calls on a descriptor that is no socket.
 *
 * Nothing printed depends on ports, pids, the host's names or its other
 * interfaces.
 *
 * An extra mode for the emulator's own tests (natively it would rename the
 * host):
 *   netmore uts   set the machine's names, print what a child sees, and try
 *                 to change an interface
 */
#include "rt.h"

#define SYS_sethostname	74
#define SYS_setdomainname 121

#define SOL_IP		0
#define SOL_IPV6	41
#define IP_TOS		1
#define IP_TTL		2
#define IP_PKTINFO	8
#define IP_RECVTTL	12
#define IP_RECVTOS	13
#define IPV6_PKTINFO	50
#define IPV6_RECVPKTINFO 49
#define IPV6_RECVHOPLIMIT 51
#define IPV6_HOPLIMIT	52
#define IPV6_RECVTCLASS	66
#define IPV6_TCLASS	67

static void show(const char *what, long r)
{
	if (sys_failed(r))
		printf("%s: error %ld\n", what, -r);
	else
		printf("%s: %ld\n", what, r);
}

/* ---- abstract names ------------------------------------------------------ */

static char tag[16];	/* this run's part of every name (natively the namespace is the host's) */

/* An abstract address: NUL, the tag, then 'a'..'z' up to `n` bytes after the NUL. */
static int abs_addr(struct sockaddr_un *a, int n, char last)
{
	int i, t = strlen(tag);
	memset(a, 0, sizeof *a);
	a->sun_family = AF_UNIX;
	for (i = 0; i < n; i++)
		a->sun_path[1 + i] = i < t ? tag[i] : (char)('a' + i % 26);
	if (n > t)
		a->sun_path[n] = last;
	return 2 + 1 + n;
}

/* Whether a returned address is exactly `want` of `wlen` bytes. */
static const char *same(const void *got, int glen, const void *want, int wlen)
{
	return glen == wlen && !memcmp(got, want, wlen) ? "same" : "DIFFERENT";
}

static void abstract_lengths(void)
{
	static const int lens[] = { 20, 40, 84, 85, 86, 90, 100, 106, 107 };
	unsigned i;
	for (i = 0; i < sizeof lens / sizeof lens[0]; i++) {
		struct sockaddr_un a, g;
		int len = abs_addr(&a, lens[i], 'x'), glen = sizeof g;
		int s = sys_socket(AF_UNIX, SOCK_DGRAM, 0);
		long r = sys_bind(s, &a, len);
		long gr = sys_getsockname(s, &g, &glen);
		printf("abstract %d bytes: bind %ld, getsockname %ld len %d %s\n", lens[i], r, gr, glen,
		       same(&g, glen, &a, len));
		sys_close(s);
	}
	struct sockaddr_un a;
	int s = sys_socket(AF_UNIX, SOCK_DGRAM, 0);
	int len = abs_addr(&a, 107, 'x');
	show("abstract 108 bytes: bind", sys_bind(s, &a, len + 1));
	sys_close(s);
}

static void abstract_long(void)
{
	struct sockaddr_un a, b, c, g;
	int alen = abs_addr(&a, 100, 'A'), blen = abs_addr(&b, 100, 'B'), clen = abs_addr(&c, 95, 'C');
	int glen;
	char buf[16];
	int sa = sys_socket(AF_UNIX, SOCK_DGRAM, 0), sb = sys_socket(AF_UNIX, SOCK_DGRAM, 0);
	show("long A bind", sys_bind(sa, &a, alen));
	show("long B bind (differs at the end)", sys_bind(sb, &b, blen));
	int again = sys_socket(AF_UNIX, SOCK_DGRAM, 0);
	show("long A bound again", sys_bind(again, &a, alen));
	sys_close(again);
	/* B sends to A: A sees B's name. */
	show("sendto A", sys_sendto(sb, "hi", 2, 0, &a, alen));
	glen = sizeof g;
	long r = sys_recvfrom(sa, buf, sizeof buf, 0, &g, &glen);
	printf("recvfrom %ld from %s\n", r, same(&g, glen, &b, blen));
	/* connect, send, recvmsg with the name */
	show("connect A to B", sys_connect(sa, &b, blen));
	glen = sizeof g;
	sys_getpeername(sa, &g, &glen);
	printf("getpeername %s\n", same(&g, glen, &b, blen));
	show("send A->B", sys_sendto(sa, "yo", 2, 0, 0, 0));
	struct iovec io = { buf, sizeof buf };
	struct msghdr m;
	memset(&m, 0, sizeof m);
	m.msg_name = &g;
	m.msg_namelen = sizeof g;
	m.msg_iov = &io;
	m.msg_iovlen = 1;
	r = sys_recvmsg(sb, &m, 0);
	printf("recvmsg %ld from %s\n", r, same(&g, m.msg_namelen, &a, alen));
	sys_close(sa);
	/* A's name is free again once its socket is closed. */
	sa = sys_socket(AF_UNIX, SOCK_DGRAM, 0);
	show("long A bound after close", sys_bind(sa, &a, alen));
	sys_close(sa);
	show("sendto A (nobody)", sys_sendto(sb, "hi", 2, 0, &a, alen));
	sys_close(sb);

	/* Stream: a listener on a long name, a client bound to another, in a child. */
	int l = sys_socket(AF_UNIX, SOCK_STREAM, 0);
	show("long C bind", sys_bind(l, &c, clen));
	show("listen", sys_listen(l, 4));
	fflush_stdout();
	int pid = sys_fork();
	if (pid == 0) {
		int k = sys_socket(AF_UNIX, SOCK_STREAM, 0);
		sys_bind(k, &b, blen);
		long cr = sys_connect(k, &c, clen);
		struct sockaddr_un p;
		int plen = sizeof p;
		sys_getpeername(k, &p, &plen);
		printf("child: connect %ld, getpeername %s\n", cr, same(&p, plen, &c, clen));
		sys_write(k, "z", 1);
		exit(0);
	}
	glen = sizeof g;
	int k = sys_accept4(l, &g, &glen, 0);
	printf("accept %s, peer is %s\n", k >= 0 ? "ok" : "failed", same(&g, glen, &b, blen));
	r = sys_read(k, buf, 1);
	printf("read %ld\n", r);
	int st;
	sys_waitpid(pid, &st, 0);
	glen = sizeof g;
	sys_getsockname(k, &g, &glen);
	printf("accepted getsockname %s\n", same(&g, glen, &c, clen));
	sys_close(k);
	sys_close(l);
}

/* ---- control messages ---------------------------------------------------- */

static void print_cmsgs(struct msghdr *m)
{
	unsigned off = 0;
	char *b = m->msg_control;
	while (off + sizeof(struct cmsghdr) <= m->msg_controllen) {
		struct cmsghdr *c = (struct cmsghdr *)(b + off);
		unsigned n = c->cmsg_len - sizeof *c, i;
		unsigned char *d = (unsigned char *)(c + 1);
		printf("  cmsg level %d type %d len %u:", c->cmsg_level, c->cmsg_type, (unsigned)c->cmsg_len);
		if (c->cmsg_level == SOL_IP && c->cmsg_type == IP_PKTINFO)
			n = 4; /* the interface only: the addresses are the host's choice */
		for (i = 0; i < n; i++)
			printf(" %02x", d[i]);
		printf("\n");
		if (c->cmsg_len < sizeof *c)
			break;
		off += (c->cmsg_len + 3) & ~3u;
	}
}

/* One control message `level`/`type` with `n` bytes of `data`, sent from a new socket
 * to `srv` (bound to `to`), and what arrives. */
static void send_cmsg(const char *what, int fam, int srv, const void *to, int tolen, int level, int type,
		      const void *data, int n)
{
	char cbuf[64], rbuf[128], dbuf[16];
	struct cmsghdr *c = (struct cmsghdr *)cbuf;
	struct iovec io = { "x", 1 };
	struct msghdr m;
	int cli = sys_socket(fam, SOCK_DGRAM, 0);
	memset(cbuf, 0, sizeof cbuf);
	memset(&m, 0, sizeof m);
	m.msg_name = (void *)to;
	m.msg_namelen = tolen;
	m.msg_iov = &io;
	m.msg_iovlen = 1;
	if (level >= 0) {
		c->cmsg_len = sizeof *c + n;
		c->cmsg_level = level;
		c->cmsg_type = type;
		memcpy(c + 1, data, n);
		m.msg_control = cbuf;
		m.msg_controllen = (c->cmsg_len + 3) & ~3u;
	}
	long r = sys_sendmsg(cli, &m, 0);
	printf("%s: sendmsg ", what);
	show("", r);
	sys_close(cli);
	if (sys_failed(r))
		return;
	struct iovec rio = { dbuf, sizeof dbuf };
	memset(&m, 0, sizeof m);
	m.msg_iov = &rio;
	m.msg_iovlen = 1;
	m.msg_control = rbuf;
	m.msg_controllen = sizeof rbuf;
	r = sys_recvmsg(srv, &m, 0);
	printf("  recvmsg %ld flags %x\n", r, m.msg_flags);
	print_cmsgs(&m);
}

static void unix_cmsg(int *sv, const char *what, int level, int type)
{
	char cbuf[16], d[4];
	struct cmsghdr *c = (struct cmsghdr *)cbuf;
	struct iovec io = { "u", 1 };
	struct msghdr m;
	int v = 7;
	memset(&m, 0, sizeof m);
	c->cmsg_len = sizeof cbuf;
	c->cmsg_level = level;
	c->cmsg_type = type;
	memcpy(c + 1, &v, 4);
	m.msg_iov = &io;
	m.msg_iovlen = 1;
	m.msg_control = cbuf;
	m.msg_controllen = sizeof cbuf;
	show(what, sys_sendmsg(sv[0], &m, 0));
	long r = sys_recvfrom(sv[1], d, sizeof d, MSG_DONTWAIT, 0, 0);
	show("  received", r);
}

static void cmsgs(void)
{
	int one = 1, v;
	/* IPv6 */
	struct sockaddr_in6 a6;
	int len = sizeof a6;
	int s6 = sys_socket(AF_INET6, SOCK_DGRAM, 0);
	memset(&a6, 0, sizeof a6);
	a6.sin6_family = AF_INET6;
	a6.sin6_addr[15] = 1;
	sys_bind(s6, &a6, sizeof a6);
	sys_getsockname(s6, &a6, &len);
	sys_setsockopt(s6, SOL_IPV6, IPV6_RECVHOPLIMIT, &one, 4);
	sys_setsockopt(s6, SOL_IPV6, IPV6_RECVTCLASS, &one, 4);
	send_cmsg("v6 none", AF_INET6, s6, &a6, sizeof a6, -1, 0, 0, 0);
	v = 2;
	send_cmsg("v6 IPV6_HOPLIMIT 2", AF_INET6, s6, &a6, sizeof a6, SOL_IPV6, IPV6_HOPLIMIT, &v, 4);
	v = 42;
	send_cmsg("v6 IPV6_TCLASS 42", AF_INET6, s6, &a6, sizeof a6, SOL_IPV6, IPV6_TCLASS, &v, 4);
	send_cmsg("v6 IPV6_TCLASS 5 bytes", AF_INET6, s6, &a6, sizeof a6, SOL_IPV6, IPV6_TCLASS, &v, 5);
	v = 256;
	send_cmsg("v6 IPV6_HOPLIMIT 256", AF_INET6, s6, &a6, sizeof a6, SOL_IPV6, IPV6_HOPLIMIT, &v, 4);
	v = 1;
	send_cmsg("v6 unknown type 99", AF_INET6, s6, &a6, sizeof a6, SOL_IPV6, 99, &v, 4);
	send_cmsg("v6 unknown SOL_SOCKET 99", AF_INET6, s6, &a6, sizeof a6, SOL_SOCKET, 99, &v, 4);
	send_cmsg("v6 unknown level 200", AF_INET6, s6, &a6, sizeof a6, 200, 1, &v, 4);
	unsigned char pk6[20];
	memset(pk6, 0, sizeof pk6);
	pk6[15] = 1;
	send_cmsg("v6 IPV6_PKTINFO ::1", AF_INET6, s6, &a6, sizeof a6, SOL_IPV6, IPV6_PKTINFO, pk6, 20);
	pk6[16] = 1;
	send_cmsg("v6 IPV6_PKTINFO ::1 lo", AF_INET6, s6, &a6, sizeof a6, SOL_IPV6, IPV6_PKTINFO, pk6, 20);
	pk6[16] = 0;
	pk6[0] = 0x20, pk6[1] = 0x01, pk6[2] = 0x0d, pk6[3] = 0xb8;
	send_cmsg("v6 IPV6_PKTINFO 2001:db8::1", AF_INET6, s6, &a6, sizeof a6, SOL_IPV6, IPV6_PKTINFO, pk6, 20);
	send_cmsg("v6 IPV6_PKTINFO short", AF_INET6, s6, &a6, sizeof a6, SOL_IPV6, IPV6_PKTINFO, pk6, 16);
	sys_close(s6);

	/* IPv4 */
	struct sockaddr_in a4;
	len = sizeof a4;
	int s4 = sys_socket(AF_INET, SOCK_DGRAM, 0);
	memset(&a4, 0, sizeof a4);
	a4.sin_family = AF_INET;
	a4.sin_addr = htonl(0x7f000001);
	sys_bind(s4, &a4, sizeof a4);
	sys_getsockname(s4, &a4, &len);
	sys_setsockopt(s4, SOL_IP, IP_RECVTTL, &one, 4);
	sys_setsockopt(s4, SOL_IP, IP_RECVTOS, &one, 4);
	sys_setsockopt(s4, SOL_IP, IP_PKTINFO, &one, 4);
	send_cmsg("v4 none", AF_INET, s4, &a4, sizeof a4, -1, 0, 0, 0);
	v = 7;
	send_cmsg("v4 IP_TTL 7", AF_INET, s4, &a4, sizeof a4, SOL_IP, IP_TTL, &v, 4);
	v = 0;
	send_cmsg("v4 IP_TTL 0", AF_INET, s4, &a4, sizeof a4, SOL_IP, IP_TTL, &v, 4);
	v = 0x10;
	send_cmsg("v4 IP_TOS 0x10", AF_INET, s4, &a4, sizeof a4, SOL_IP, IP_TOS, &v, 4);
	v = 8;
	send_cmsg("v4 IP_TOS one byte", AF_INET, s4, &a4, sizeof a4, SOL_IP, IP_TOS, &v, 1);
	v = 1;
	send_cmsg("v4 unknown type 99", AF_INET, s4, &a4, sizeof a4, SOL_IP, 99, &v, 4);
	send_cmsg("v4 IPV6_HOPLIMIT (ignored)", AF_INET, s4, &a4, sizeof a4, SOL_IPV6, IPV6_HOPLIMIT, &v, 4);
	uint32_t pk[3] = { 0, 0, 0 };
	send_cmsg("v4 IP_PKTINFO any", AF_INET, s4, &a4, sizeof a4, SOL_IP, IP_PKTINFO, pk, 12);
	pk[0] = 1, pk[1] = htonl(0x7f000001);
	send_cmsg("v4 IP_PKTINFO lo 127.0.0.1", AF_INET, s4, &a4, sizeof a4, SOL_IP, IP_PKTINFO, pk, 12);
	pk[0] = 0, pk[1] = htonl(0xc0000201);
	send_cmsg("v4 IP_PKTINFO 192.0.2.1", AF_INET, s4, &a4, sizeof a4, SOL_IP, IP_PKTINFO, pk, 12);
	send_cmsg("v4 IP_PKTINFO short", AF_INET, s4, &a4, sizeof a4, SOL_IP, IP_PKTINFO, pk, 8);
	sys_close(s4);

	/* AF_UNIX reads only SOL_SOCKET. */
	int sv[2];
	sys_socketpair(AF_UNIX, SOCK_DGRAM, 0, sv);
	unix_cmsg(sv, "unix IP_TTL (ignored)", SOL_IP, IP_TTL);
	unix_cmsg(sv, "unix IPV6_RTHDR (ignored)", SOL_IPV6, 57);
	unix_cmsg(sv, "unix SOL_SOCKET 99", SOL_SOCKET, 99);
	sys_close(sv[0]);
	sys_close(sv[1]);
}

/* ---- names ------------------------------------------------------------------- */

static void names(void)
{
	struct utsname u, u2;
	sys_uname(&u);
	printf("uname: %s\n", u.sysname); /* the machine is i686 or the host's x86_64 */
	int n = strlen(u.nodename);
	show("sethostname (the same name)", rt_syscall(SYS_sethostname, u.nodename, n));
	sys_uname(&u2);
	printf("nodename kept: %s\n", strcmp(u.nodename, u2.nodename) ? "no" : "yes");
	show("sethostname 65 bytes", rt_syscall(SYS_sethostname, u.nodename, 65));
	show("sethostname -1", rt_syscall(SYS_sethostname, u.nodename, -1));
	show("sethostname bad pointer", rt_syscall(SYS_sethostname, (void *)16, 4));
	n = strlen(u.domainname);
	show("setdomainname (the same name)", rt_syscall(SYS_setdomainname, u.domainname, n));
	sys_uname(&u2);
	printf("domainname kept: %s\n", strcmp(u.domainname, u2.domainname) ? "no" : "yes");
	show("setdomainname 65 bytes", rt_syscall(SYS_setdomainname, u.domainname, 65));
	show("setdomainname bad pointer", rt_syscall(SYS_setdomainname, (void *)16, 4));
}

/* ---- interfaces ---------------------------------------------------------------- */

static void ifreq_call(int s, const char *what, unsigned long req, const char *name, int index)
{
	unsigned char r[32];
	int i;
	memset(r, 0xaa, sizeof r);
	memcpy(r, name, strlen(name) + 1);
	if (index >= 0)
		memcpy(r + 16, &index, 4);
	long x = sys_ioctl(s, req, r);
	printf("  %s %s: ", what, name);
	if (sys_failed(x)) {
		printf("error %ld\n", -x);
		return;
	}
	for (i = 0; i < 32; i++)
		printf("%02x", r[i]);
	printf("\n");
}

static void interfaces(void)
{
	static const int fams[] = { AF_UNIX, AF_INET, AF_INET6 };
	unsigned i;
	for (i = 0; i < 3; i++) {
		int s = sys_socket(fams[i], SOCK_DGRAM, 0);
		printf("family %d:\n", fams[i]);
		ifreq_call(s, "SIOCGIFINDEX", 0x8933, "lo", -1);
		ifreq_call(s, "SIOCGIFINDEX", 0x8933, "nosuch0", -1);
		ifreq_call(s, "SIOCGIFNAME 1", 0x8910, "", 1);
		ifreq_call(s, "SIOCGIFNAME 100000", 0x8910, "", 100000);
		ifreq_call(s, "SIOCGIFFLAGS", 0x8913, "lo", -1);
		ifreq_call(s, "SIOCGIFFLAGS", 0x8913, "lo:0", -1);
		ifreq_call(s, "SIOCGIFFLAGS", 0x8913, "nosuch0", -1);
		ifreq_call(s, "SIOCGIFMTU", 0x8921, "lo", -1);
		ifreq_call(s, "SIOCGIFMETRIC", 0x891d, "lo", -1);
		ifreq_call(s, "SIOCGIFTXQLEN", 0x8942, "lo", -1);
		ifreq_call(s, "SIOCGIFHWADDR", 0x8927, "lo", -1);
		ifreq_call(s, "SIOCGIFMAP", 0x8970, "lo", -1);
		ifreq_call(s, "SIOCGIFADDR", 0x8915, "lo", -1);
		ifreq_call(s, "SIOCGIFADDR", 0x8915, "lo:0", -1);
		ifreq_call(s, "SIOCGIFADDR", 0x8915, "nosuch0", -1);
		ifreq_call(s, "SIOCGIFNETMASK", 0x891b, "lo", -1);
		ifreq_call(s, "SIOCGIFBRDADDR", 0x8919, "lo", -1);
		ifreq_call(s, "SIOCGIFDSTADDR", 0x8917, "lo", -1);
		show("  SIOCGIFINDEX bad pointer", sys_ioctl(s, 0x8933, (void *)16));

		/* SIOCGIFCONF: only lo's entry is the machine's to compare. */
		static unsigned char buf[32 * 64];
		struct { int len; void *buf; } c = { sizeof buf, buf };
		long x = sys_ioctl(s, 0x8912, &c);
		int k, found = 0;
		for (k = 0; k + 32 <= c.len; k += 32)
			if (!strcmp((char *)buf + k, "lo")) {
				int j;
				found = 1;
				printf("  SIOCGIFCONF %ld, lo: ", x);
				for (j = 0; j < 32; j++)
					printf("%02x", buf[k + j]);
				printf("\n");
			}
		if (!found)
			printf("  SIOCGIFCONF %ld, no lo, len %d\n", x, c.len);
		c.len = 0, c.buf = 0;
		x = sys_ioctl(s, 0x8912, &c);
		printf("  SIOCGIFCONF NULL: %ld, len a positive multiple of 32: %s\n", x,
		       c.len > 0 && c.len % 32 == 0 ? "yes" : "no");
		c.len = 31, c.buf = buf;
		x = sys_ioctl(s, 0x8912, &c);
		printf("  SIOCGIFCONF 31 bytes: %ld len %d\n", x, c.len);
		c.len = -5, c.buf = buf;
		x = sys_ioctl(s, 0x8912, &c);
		printf("  SIOCGIFCONF -5 bytes: %ld len %d\n", x, c.len);
		c.len = sizeof buf, c.buf = (void *)16;
		show("  SIOCGIFCONF bad buffer", sys_ioctl(s, 0x8912, &c));
		sys_close(s);
	}
	int p[2];
	sys_pipe(p);
	unsigned char r[32];
	memset(r, 0, sizeof r);
	memcpy(r, "lo", 3);
	show("pipe SIOCGIFINDEX", sys_ioctl(p[0], 0x8933, r));
	show("pipe SIOCGIFCONF", sys_ioctl(p[0], 0x8912, r));
	sys_close(p[0]);
	sys_close(p[1]);
}

/* ---- the emulator-only mode -------------------------------------------------------- */

static int uts_mode(void)
{
	struct utsname u;
	show("sethostname guestbox", rt_syscall(SYS_sethostname, "guestbox", 8));
	show("setdomainname example.test", rt_syscall(SYS_setdomainname, "example.test", 12));
	fflush_stdout();
	int pid = sys_fork();
	if (pid == 0) {
		sys_uname(&u);
		printf("child: %s %s\n", u.nodename, u.domainname);
		exit(0);
	}
	int st;
	sys_waitpid(pid, &st, 0);
	show("sethostname 64 bytes", rt_syscall(SYS_sethostname,
		"0123456789012345678901234567890123456789012345678901234567890123", 64));
	sys_uname(&u);
	printf("nodename %s\n", u.nodename);
	unsigned char r[32];
	memset(r, 0, sizeof r);
	memcpy(r, "lo", 3);
	r[16] = 0x49;
	int s = sys_socket(AF_INET, SOCK_DGRAM, 0);
	show("SIOCSIFFLAGS lo", sys_ioctl(s, 0x8914, r));
	show("SIOCSIFMTU lo", sys_ioctl(s, 0x8922, r));
	show("SIOCSIFADDR lo", sys_ioctl(s, 0x8916, r));
	return 0;
}

/* ---- UDP-Lite ----------------------------------------------------------- */

static void udplite(void)
{
	printf("-- udp-lite\n");
	int s = (int)sys_socket(AF_INET, SOCK_DGRAM, 136 /* IPPROTO_UDPLITE */);
	show("socket", s < 0 ? s : 0);
	if (s < 0)
		return;
	int cov = 20;
	show("UDPLITE_SEND_CSCOV", sys_setsockopt(s, 136, 10, &cov, 4));
	show("UDPLITE_RECV_CSCOV", sys_setsockopt(s, 136, 11, &cov, 4));
	struct sockaddr_in a;
	int len = sizeof a;
	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_addr = htonl(0x7f000001);
	show("bind", sys_bind(s, &a, sizeof a));
	sys_getsockname(s, &a, &len);
	show("sendto itself", sys_sendto(s, "lite", 4, 0, &a, sizeof a));
	char b[8] = { 0 };
	show("recvfrom", sys_recvfrom(s, b, sizeof b, 0, 0, 0));
	printf("got \"%s\"\n", b);
	sys_close(s);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "uts"))
		return uts_mode();
	snprintf(tag, sizeof tag, "nm%ld.", sys_getpid());
	abstract_lengths();
	abstract_long();
	cmsgs();
	names();
	interfaces();
	udplite();
	return 0;
}
