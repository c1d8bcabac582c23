/*
 * sockets.c - sockets between guest processes: TCP over 127.0.0.1 and ::1
 * (a forked client and a server: blocking accept, connect, send, recv,
 * MSG_WAITALL across two sends, shutdown), non-blocking sockets (EAGAIN,
 * EINPROGRESS, poll, SO_ERROR, F_GETFL/F_SETFL/FIONBIO, MSG_DONTWAIT),
 * SO_RCVTIMEO, a refused connection, UDP (sendto/recvfrom with the sender's
 * address, connected datagrams, MSG_TRUNC, MSG_PEEK), AF_UNIX socket pairs
 * (stream and datagram boundaries), AF_UNIX path and abstract names as the
 * guest spelled them, two processes talking through an abstract name,
 * SCM_RIGHTS descriptor passing with sendmsg/recvmsg, sendmsg's checks of
 * its control buffer (NULL, too short) and SIGPIPE vs MSG_NOSIGNAL.  Everything runs twice: through the direct
 * socket system calls (Linux 4.3+) and through socketcall(2).
 *
 * Nothing printed depends on ports, pids or descriptor numbers.
 *
 * Extra modes for the emulator's own tests (natively these would reach the
 * network or the host's file system, so the shared output does not use them):
 *   sockets refused            try to leave the loopback network, print errors
 *   sockets connect-unix PATH  connect to an AF_UNIX socket, print the result
 */
#include "rt.h"

static int via_sc;	/* 1: use socketcall(2) instead of the direct calls */

#define ARGS(...) unsigned long a_[] = { __VA_ARGS__ }

static long s_socket(int d, int t, int p)
{
	ARGS(d, t, p);
	return via_sc ? sys_socketcall(SC_SOCKET, a_) : sys_socket(d, t, p);
}
static long s_socketpair(int d, int t, int p, int *sv)
{
	ARGS(d, t, p, (unsigned long)sv);
	return via_sc ? sys_socketcall(SC_SOCKETPAIR, a_) : sys_socketpair(d, t, p, sv);
}
static long s_bind(int fd, const void *addr, int len)
{
	ARGS(fd, (unsigned long)addr, len);
	return via_sc ? sys_socketcall(SC_BIND, a_) : sys_bind(fd, addr, len);
}
static long s_connect(int fd, const void *addr, int len)
{
	ARGS(fd, (unsigned long)addr, len);
	return via_sc ? sys_socketcall(SC_CONNECT, a_) : sys_connect(fd, addr, len);
}
static long s_listen(int fd, int backlog)
{
	ARGS(fd, backlog);
	return via_sc ? sys_socketcall(SC_LISTEN, a_) : sys_listen(fd, backlog);
}
static long s_accept(int fd, void *addr, int *len)
{
	ARGS(fd, (unsigned long)addr, (unsigned long)len);
	return via_sc ? sys_socketcall(SC_ACCEPT, a_) : sys_accept4(fd, addr, len, 0);
}
static long s_getsockname(int fd, void *addr, int *len)
{
	ARGS(fd, (unsigned long)addr, (unsigned long)len);
	return via_sc ? sys_socketcall(SC_GETSOCKNAME, a_) : sys_getsockname(fd, addr, len);
}
static long s_getpeername(int fd, void *addr, int *len)
{
	ARGS(fd, (unsigned long)addr, (unsigned long)len);
	return via_sc ? sys_socketcall(SC_GETPEERNAME, a_) : sys_getpeername(fd, addr, len);
}
static long s_send(int fd, const void *buf, size_t n, int flags)
{
	ARGS(fd, (unsigned long)buf, n, flags);
	return via_sc ? sys_socketcall(SC_SEND, a_) : sys_sendto(fd, buf, n, flags, 0, 0);
}
static long s_recv(int fd, void *buf, size_t n, int flags)
{
	ARGS(fd, (unsigned long)buf, n, flags);
	return via_sc ? sys_socketcall(SC_RECV, a_) : sys_recvfrom(fd, buf, n, flags, 0, 0);
}
static long s_sendto(int fd, const void *buf, size_t n, int flags, const void *addr, int len)
{
	ARGS(fd, (unsigned long)buf, n, flags, (unsigned long)addr, len);
	return via_sc ? sys_socketcall(SC_SENDTO, a_) : sys_sendto(fd, buf, n, flags, addr, len);
}
static long s_recvfrom(int fd, void *buf, size_t n, int flags, void *addr, int *len)
{
	ARGS(fd, (unsigned long)buf, n, flags, (unsigned long)addr, (unsigned long)len);
	return via_sc ? sys_socketcall(SC_RECVFROM, a_) : sys_recvfrom(fd, buf, n, flags, addr, len);
}
static long s_shutdown(int fd, int how)
{
	ARGS(fd, how);
	return via_sc ? sys_socketcall(SC_SHUTDOWN, a_) : sys_shutdown(fd, how);
}
static long s_setsockopt(int fd, int level, int name, const void *val, int len)
{
	ARGS(fd, level, name, (unsigned long)val, len);
	return via_sc ? sys_socketcall(SC_SETSOCKOPT, a_) : sys_setsockopt(fd, level, name, val, len);
}
static long s_getsockopt(int fd, int level, int name, void *val, int *len)
{
	ARGS(fd, level, name, (unsigned long)val, (unsigned long)len);
	return via_sc ? sys_socketcall(SC_GETSOCKOPT, a_) : sys_getsockopt(fd, level, name, val, len);
}
static long s_sendmsg(int fd, const struct msghdr *msg, int flags)
{
	ARGS(fd, (unsigned long)msg, flags);
	return via_sc ? sys_socketcall(SC_SENDMSG, a_) : sys_sendmsg(fd, msg, flags);
}
static long s_recvmsg(int fd, struct msghdr *msg, int flags)
{
	ARGS(fd, (unsigned long)msg, flags);
	return via_sc ? sys_socketcall(SC_RECVMSG, a_) : sys_recvmsg(fd, msg, flags);
}

/* "ok" for a descriptor (its number is not printed), else the error. */
static const char *fdres(long r)
{
	static char buf[4][16];
	static int i;
	char *b = buf[i++ & 3];
	if (r >= 0)
		return "ok";
	snprintf(b, 16, "%ld", r);
	return b;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };
	sys_nanosleep(&ts, 0);
}

/* Waits for a child; returns its status word. */
static int reap(long pid)
{
	int st = -1;
	sys_waitpid(pid, &st, 0);
	return st;
}

static const char *status_str(int st)
{
	static char buf[32];
	if ((st & 0x7f) == 0)
		snprintf(buf, sizeof buf, "exit %d", (st >> 8) & 0xff);
	else
		snprintf(buf, sizeof buf, "signal %d", st & 0x7f);
	return buf;
}

/* Receives exactly n bytes (a stream may deliver them in pieces). */
static long recv_all(int fd, char *buf, long n)
{
	long got = 0;
	while (got < n) {
		long r = s_recv(fd, buf + got, n - got, 0);
		if (r <= 0)
			return got ? got : r;
		got += r;
	}
	return got;
}

union inaddr {
	struct sockaddr sa;
	struct sockaddr_in v4;
	struct sockaddr_in6 v6;
};

static int loopback_addr(union inaddr *a, int family)
{
	memset(a, 0, sizeof *a);
	if (family == AF_INET) {
		a->v4.sin_family = AF_INET;
		a->v4.sin_addr = htonl(0x7f000001);
		return sizeof a->v4;
	}
	a->v6.sin6_family = AF_INET6;
	a->v6.sin6_addr[15] = 1;
	return sizeof a->v6;
}

static int is_loopback(const union inaddr *a)
{
	static const unsigned char one[16] = { [15] = 1 };
	if (a->sa.sa_family == AF_INET)
		return a->v4.sin_addr == htonl(0x7f000001);
	return a->sa.sa_family == AF_INET6 && !memcmp(a->v6.sin6_addr, one, 16);
}

static uint16_t port_of(const union inaddr *a)
{
	return a->sa.sa_family == AF_INET ? a->v4.sin_port : a->v6.sin6_port;
}

static void test_tcp(int family)
{
	union inaddr addr, peer;
	int len = loopback_addr(&addr, family);
	char buf[64];

	printf("-- tcp over %s\n", family == AF_INET ? "127.0.0.1" : "::1");
	long srv = s_socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	printf("socket: %s\n", fdres(srv));
	printf("bind port 0: %ld\n", s_bind(srv, &addr, len));
	printf("listen: %ld\n", s_listen(srv, 4));
	int alen = sizeof addr;
	long r = s_getsockname(srv, &addr, &alen);
	printf("getsockname: %ld, length %d, family %d, port assigned %s\n", r, alen,
	       addr.sa.sa_family, port_of(&addr) ? "yes" : "no");
	fflush_stdout();

	long pid = sys_fork();
	if (pid == 0) {
		char got[64], reply[16];
		long c = s_socket(family, SOCK_STREAM, 0);
		long cr = s_connect(c, &addr, len);
		long sr = s_send(c, "hello, server", 13, 0);
		long n = recv_all(c, got, 13);
		got[n > 0 ? n : 0] = 0;
		/* Two pieces for the server's MSG_WAITALL, the second one later. */
		long w1 = s_send(c, "abc", 3, 0);
		sleep_ms(20);
		long w2 = s_send(c, "defgh", 5, 0);
		long sh = s_shutdown(c, SHUT_WR);
		long n2 = recv_all(c, reply, 3);
		reply[n2 > 0 ? n2 : 0] = 0;
		long n3 = s_recv(c, reply, sizeof reply, 0);
		printf("client: socket %s, connect %ld, send %ld, echo %ld \"%s\", sends %ld+%ld, "
		       "shutdown %ld, reply %ld \"%s\", then %ld\n",
		       fdres(c), cr, sr, n, got, w1, w2, sh, n2, reply, n3);
		exit(0);
	}
	int plen = sizeof peer;
	long conn = s_accept(srv, &peer, &plen);
	long n = recv_all(conn, buf, 13);
	buf[n > 0 ? n : 0] = 0;
	long e = s_send(conn, buf, n, 0);
	char all[16];
	long w = s_recv(conn, all, 8, MSG_WAITALL);
	all[w > 0 ? w : 0] = 0;
	long eof = s_recv(conn, buf, sizeof buf, 0);
	long bye = s_send(conn, "bye", 3, 0);
	sys_close(conn);
	int st = reap(pid);
	printf("server: accept %s, peer family %d loopback %s length %d, recv %ld \"%s\", echo %ld, "
	       "waitall %ld \"%s\", then %ld, bye %ld\n",
	       fdres(conn), peer.sa.sa_family, is_loopback(&peer) ? "yes" : "no", plen, n, buf, e, w,
	       all, eof, bye);
	printf("client %s\n", status_str(st));
	sys_close(srv);
}

static void test_nonblocking(void)
{
	union inaddr addr;
	int len = loopback_addr(&addr, AF_INET);
	char buf[16];

	printf("-- non-blocking\n");
	long srv = s_socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	s_bind(srv, &addr, len);
	s_listen(srv, 4);
	int alen = sizeof addr;
	s_getsockname(srv, &addr, &alen);
	printf("accept with none pending: %ld\n", s_accept(srv, 0, 0));
	printf("listener O_NONBLOCK: %s\n", sys_fcntl(srv, F_GETFL, 0) & O_NONBLOCK ? "yes" : "no");

	long c = s_socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	long r = s_connect(c, &addr, len);
	printf("connect: in progress or done: %s\n", r == -EINPROGRESS || r == 0 ? "yes" : "no");
	struct pollfd pf = { (int)c, POLLOUT, 0 };
	long pr = sys_poll(&pf, 1, 5000);
	printf("poll for POLLOUT: %ld, writable %s\n", pr, pf.revents & POLLOUT ? "yes" : "no");
	int err = -1, elen = sizeof err;
	r = s_getsockopt(c, SOL_SOCKET, SO_ERROR, &err, &elen);
	printf("SO_ERROR: %ld, %d, length %d\n", r, err, elen);
	printf("connect again: %ld\n", s_connect(c, &addr, len));
	struct pollfd pl = { (int)srv, POLLIN, 0 };
	printf("poll listener: %ld\n", sys_poll(&pl, 1, 5000));
	long conn = s_accept(srv, 0, 0);
	printf("accept: %s, O_NONBLOCK inherited: %s\n", fdres(conn),
	       sys_fcntl(conn, F_GETFL, 0) & O_NONBLOCK ? "yes" : "no");
	printf("recv MSG_DONTWAIT: %ld\n", s_recv(conn, buf, sizeof buf, MSG_DONTWAIT));
	printf("recv on non-blocking: %ld\n", s_recv(c, buf, sizeof buf, 0));
	long fl = sys_fcntl(c, F_GETFL, 0);
	r = sys_fcntl(c, F_SETFL, fl & ~O_NONBLOCK);
	printf("F_SETFL clear O_NONBLOCK: %ld, now %s\n", r, sys_fcntl(c, F_GETFL, 0) & O_NONBLOCK ? "set" : "clear");
	int on = 1;
	r = sys_ioctl(conn, FIONBIO, &on);
	long rn = s_recv(conn, buf, sizeof buf, 0);
	printf("FIONBIO on: %ld, recv %ld, F_GETFL %s\n", r, rn,
	       sys_fcntl(conn, F_GETFL, 0) & O_NONBLOCK ? "set" : "clear");
	on = 0;
	printf("FIONBIO off: %ld\n", sys_ioctl(conn, FIONBIO, &on));
	struct timeval tv = { 0, 50000 };
	printf("SO_RCVTIMEO 50 ms: %ld\n", s_setsockopt(conn, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv));
	printf("blocking recv times out: %ld\n", s_recv(conn, buf, sizeof buf, 0));
	struct timeval back = { 7, 7 };
	int tlen = sizeof back;
	r = s_getsockopt(conn, SOL_SOCKET, SO_RCVTIMEO, &back, &tlen);
	/* The kernel rounds the timeout to its tick: print no exact value. */
	printf("SO_RCVTIMEO reads back: %ld, 50-60 ms: %s, length %d\n", r,
	       back.tv_sec == 0 && back.tv_usec >= 50000 && back.tv_usec < 60000 ? "yes" : "no", tlen);
	int type = 0, tl = sizeof type;
	r = s_getsockopt(conn, SOL_SOCKET, SO_TYPE, &type, &tl);
	printf("SO_TYPE: %ld, %d\n", r, type);
	long s1 = s_send(c, "x", 1, 0);
	long r1 = s_recv(conn, buf, sizeof buf, 0);
	printf("send %ld, recv %ld\n", s1, r1);
	sys_close(conn);
	sys_close(c);
	sys_close(srv);

	/* A port nobody listens on: a blocking connect is refused. */
	long gone = s_socket(AF_INET, SOCK_STREAM, 0);
	len = loopback_addr(&addr, AF_INET);
	s_bind(gone, &addr, len);
	alen = sizeof addr;
	s_getsockname(gone, &addr, &alen);
	sys_close(gone);
	long c2 = s_socket(AF_INET, SOCK_STREAM, 0);
	printf("connect to a closed port: %ld\n", s_connect(c2, &addr, alen));
	sys_close(c2);
}

static void test_udp(void)
{
	union inaddr a, b, from;
	int la = loopback_addr(&a, AF_INET), lb = loopback_addr(&b, AF_INET);
	char buf[64];

	printf("-- udp\n");
	long sa = s_socket(AF_INET, SOCK_DGRAM, 0), sb = s_socket(AF_INET, SOCK_DGRAM, 0);
	long ba = s_bind(sa, &a, la), bb = s_bind(sb, &b, lb);
	printf("sockets: %s %s, bind %ld %ld\n", fdres(sa), fdres(sb), ba, bb);
	s_getsockname(sa, &a, &la);
	s_getsockname(sb, &b, &lb);
	long n = s_sendto(sa, "ping", 4, 0, &b, lb);
	int fl = sizeof from;
	memset(&from, 0, sizeof from);
	long m = s_recvfrom(sb, buf, sizeof buf, 0, &from, &fl);
	buf[m > 0 ? m : 0] = 0;
	printf("sendto %ld, recvfrom %ld \"%s\", from length %d, from the sender: %s\n", n, m, buf, fl,
	       !memcmp(&from.v4, &a.v4, 8) ? "yes" : "no");
	printf("connect: %ld\n", s_connect(sb, &a, la));
	n = s_send(sb, "pong", 4, 0);
	m = s_recv(sa, buf, sizeof buf, 0);
	buf[m > 0 ? m : 0] = 0;
	printf("send %ld, recv %ld \"%s\"\n", n, m, buf);
	s_sendto(sa, "0123456789", 10, 0, &b, lb);
	long peek = s_recv(sb, buf, 4, MSG_PEEK);
	long trunc = s_recv(sb, buf, 4, MSG_TRUNC);
	buf[4] = 0;
	long then = s_recv(sb, buf + 8, 4, MSG_DONTWAIT);
	printf("peek %ld, MSG_TRUNC %ld \"%s\", then %ld\n", peek, trunc, buf, then);
	sys_close(sa);
	sys_close(sb);
}

static void print_path(const char *what, long r, const struct sockaddr_un *u, int len)
{
	printf("%s: %ld, length %d", what, r, len);
	if (len > 2 && u->sun_path[0])
		printf(", path \"%s\"", u->sun_path);
	else if (len > 2)
		printf(", abstract");
	printf("\n");
}

static void test_unix(void)
{
	int sv[2];
	char buf[64];
	struct sockaddr_un u, v;
	int len;

	printf("-- unix\n");
	printf("socketpair stream: %ld\n", s_socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	long w = sys_write(sv[0], "abc", 3);
	long r = sys_read(sv[1], buf, sizeof buf);
	printf("write %ld, read %ld\n", w, r);
	len = sizeof u;
	r = s_getsockname(sv[0], &u, &len);
	print_path("getsockname of a pair", r, &u, len);
	sys_close(sv[0]);
	sys_close(sv[1]);
	printf("socketpair datagram: %ld\n", s_socketpair(AF_UNIX, SOCK_DGRAM, 0, sv));
	s_send(sv[0], "one", 3, 0);
	s_send(sv[0], "three", 5, 0);
	long a = s_recv(sv[1], buf, sizeof buf, 0), b = s_recv(sv[1], buf, sizeof buf, 0);
	printf("boundaries kept: %ld %ld\n", a, b);
	sys_close(sv[0]);
	sys_close(sv[1]);

	/* A name in the current directory, as the guest spelled it. */
	sys_unlink("sockets.sock");
	long srv = s_socket(AF_UNIX, SOCK_STREAM, 0);
	memset(&u, 0, sizeof u);
	u.sun_family = AF_UNIX;
	strcpy(u.sun_path, "sockets.sock");
	int ulen = 2 + strlen(u.sun_path) + 1;
	r = s_bind(srv, &u, ulen);
	printf("bind path: %ld, listen %ld\n", r, s_listen(srv, 4));
	printf("bind again: %ld\n", s_bind(s_socket(AF_UNIX, SOCK_STREAM, 0), &u, ulen));
	len = sizeof v;
	r = s_getsockname(srv, &v, &len);
	print_path("getsockname", r, &v, len);
	fflush_stdout();
	long pid = sys_fork();
	if (pid == 0) {
		long c = s_socket(AF_UNIX, SOCK_STREAM, 0);
		long cr = s_connect(c, &u, ulen);
		struct sockaddr_un p;
		int plen = sizeof p;
		memset(&p, 0, sizeof p);
		long pr = s_getpeername(c, &p, &plen);
		long sr = s_send(c, "via path", 8, 0);
		printf("client: connect %ld, send %ld\n", cr, sr);
		print_path("client: getpeername", pr, &p, plen);
		exit(0);
	}
	len = sizeof v;
	long conn = s_accept(srv, &v, &len);
	int st = reap(pid);
	printf("accept: %s, peer length %d\n", fdres(conn), len);
	len = sizeof v;
	r = s_getsockname(conn, &v, &len);
	print_path("accepted getsockname", r, &v, len);
	r = recv_all(conn, buf, 8);
	buf[r > 0 ? r : 0] = 0;
	printf("recv %ld \"%s\", client %s\n", r, buf, status_str(st));
	sys_close(conn);
	sys_close(srv);
	printf("unlink: %ld\n", sys_unlink("sockets.sock"));
	strcpy(u.sun_path, "sockets.none");
	long c = s_socket(AF_UNIX, SOCK_STREAM, 0);
	printf("connect to a missing path: %ld\n", s_connect(c, &u, sizeof u));
	sys_close(c);

	/* Datagrams between two named sockets. */
	sys_unlink("sockets.d1");
	sys_unlink("sockets.d2");
	long d1 = s_socket(AF_UNIX, SOCK_DGRAM, 0), d2 = s_socket(AF_UNIX, SOCK_DGRAM, 0);
	strcpy(u.sun_path, "sockets.d1");
	strcpy(v.sun_path, "sockets.d2");
	v.sun_family = AF_UNIX;
	long b1 = s_bind(d1, &u, sizeof u), b2 = s_bind(d2, &v, sizeof v);
	printf("bind datagram sockets: %ld %ld\n", b1, b2);
	long n = s_sendto(d2, "datagram", 8, 0, &u, sizeof u);
	struct sockaddr_un from;
	int flen = sizeof from;
	memset(&from, 0, sizeof from);
	long m = s_recvfrom(d1, buf, sizeof buf, 0, &from, &flen);
	printf("sendto %ld, recvfrom %ld\n", n, m);
	print_path("from", 0, &from, flen);
	sys_close(d1);
	sys_close(d2);
	sys_unlink("sockets.d1");
	sys_unlink("sockets.d2");

	/* Autobind: an empty name gets an abstract one. */
	long ab = s_socket(AF_UNIX, SOCK_DGRAM, 0);
	printf("autobind: %ld\n", s_bind(ab, &u, 2));
	len = sizeof v;
	r = s_getsockname(ab, &v, &len);
	print_path("autobound name", r, &v, len);
	sys_close(ab);
}

/* Two processes meet at an abstract name (unique natively: it holds the pid,
 * in a fixed width so that the printed lengths do not vary). */
static void test_abstract(void)
{
	struct sockaddr_un u, v;
	char buf[64];
	int len;

	printf("-- abstract\n");
	memset(&u, 0, sizeof u);
	u.sun_family = AF_UNIX;
	snprintf(u.sun_path + 1, sizeof u.sun_path - 1, "sockets-%08ld-%d", sys_getpid(), via_sc);
	int ulen = 2 + 1 + (int)strlen(u.sun_path + 1);
	long srv = s_socket(AF_UNIX, SOCK_STREAM, 0);
	long r = s_bind(srv, &u, ulen);
	printf("bind: %ld, listen %ld\n", r, s_listen(srv, 4));
	long again = s_socket(AF_UNIX, SOCK_STREAM, 0);
	printf("bind the same name again: %ld\n", s_bind(again, &u, ulen));
	sys_close(again);
	len = sizeof v;
	memset(&v, 0, sizeof v);
	r = s_getsockname(srv, &v, &len);
	print_path("getsockname", r, &v, len);
	printf("the name as bound: %s\n", len == ulen && !memcmp(&u, &v, ulen) ? "yes" : "no");
	fflush_stdout();
	long pid = sys_fork();
	if (pid == 0) {
		long c = s_socket(AF_UNIX, SOCK_STREAM, 0);
		long cr = s_connect(c, &u, ulen);
		struct sockaddr_un p;
		int plen = sizeof p;
		memset(&p, 0, sizeof p);
		long pr = s_getpeername(c, &p, &plen);
		long sr = s_send(c, "abstract", 8, 0);
		printf("client: connect %ld, send %ld, peer is the name: %s\n", cr, sr,
		       pr == 0 && plen == ulen && !memcmp(&p, &u, ulen) ? "yes" : "no");
		exit(0);
	}
	len = sizeof v;
	long conn = s_accept(srv, &v, &len);
	int st = reap(pid);
	printf("accept: %s, peer length %d\n", fdres(conn), len);
	r = recv_all(conn, buf, 8);
	buf[r > 0 ? r : 0] = 0;
	printf("recv %ld \"%s\", client %s\n", r, buf, status_str(st));
	sys_close(conn);
	sys_close(srv);
	long c = s_socket(AF_UNIX, SOCK_STREAM, 0);
	printf("connect after close: %ld\n", s_connect(c, &u, ulen));
	sys_close(c);
}

/* sendmsg's checks of the control buffer (as the 32-bit compat path makes them). */
static void test_control(void)
{
	int sv[2];
	char ctl[16];
	struct iovec iov = { "x", 1 };
	struct msghdr msg = { 0, 0, &iov, 1, 0, 0, 0 };

	printf("-- control\n");
	s_socketpair(AF_UNIX, SOCK_DGRAM, 0, sv);
	msg.msg_controllen = 12;
	printf("NULL control, length 12: %ld\n", s_sendmsg(sv[0], &msg, 0));
	msg.msg_controllen = 4;
	printf("NULL control, length 4: %ld\n", s_sendmsg(sv[0], &msg, 0));
	msg.msg_control = ctl;
	memset(ctl, 0, sizeof ctl);
	printf("control, length 4: %ld\n", s_sendmsg(sv[0], &msg, 0));
	msg.msg_controllen = 12;
	printf("control, a zero header: %ld\n", s_sendmsg(sv[0], &msg, 0));
	msg.msg_control = 0;
	msg.msg_controllen = 0;
	printf("no control: %ld\n", s_sendmsg(sv[0], &msg, 0));
	sys_close(sv[0]);
	sys_close(sv[1]);
}

static void test_rights(void)
{
	int sv[2], p1[2], p2[2];
	char buf[64];

	printf("-- SCM_RIGHTS\n");
	s_socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
	/* p1 exists before the fork (the receiver has it already), p2 after. */
	sys_pipe(p1);
	sys_write(p1[1], "first pipe", 10);
	fflush_stdout();
	long pid = sys_fork();
	if (pid == 0) {
		char head[4], rest[16];
		struct iovec iov[2] = { { head, sizeof head }, { rest, sizeof rest } };
		union { struct cmsghdr h; char space[64]; } ctl;
		struct msghdr msg = { 0, 0, iov, 2, &ctl, sizeof ctl, 0 };
		int fds[2] = { -1, -1 };
		memset(&ctl, 0, sizeof ctl);
		sys_close(sv[0]);
		sys_close(p1[1]);
		long r = s_recvmsg(sv[1], &msg, 0);
		if (msg.msg_controllen >= 20)
			memcpy(fds, ctl.space + 12, 8);
		printf("child: recvmsg %ld \"%.4s%.4s\", controllen %u, level %d type %d len %u, flags %u\n",
		       r, head, rest, (unsigned)msg.msg_controllen, ctl.h.cmsg_level, ctl.h.cmsg_type,
		       (unsigned)ctl.h.cmsg_len, msg.msg_flags);
		for (int i = 0; i < 2; i++) {
			long n = sys_read(fds[i], buf, sizeof buf);
			buf[n > 0 ? n : 0] = 0;
			long fl = sys_fcntl(fds[i], F_GETFL, 0);
			long again = sys_read(fds[i], buf + 32, 1);
			printf("child: descriptor %d: read %ld \"%s\", O_NONBLOCK %s, then %ld\n", i + 1, n, buf,
			       fl & O_NONBLOCK ? "set" : "clear", again);
		}
		exit(0);
	}
	sys_close(sv[1]);
	sys_close(p1[1]);	/* the first pipe then reads EOF once empty */
	sys_pipe(p2);
	sys_write(p2[1], "second pipe", 11);
	sys_fcntl(p2[0], F_SETFL, O_NONBLOCK);
	struct iovec iov[2] = { { "fd: ", 4 }, { "here", 4 } };
	union { struct cmsghdr h; char space[20]; } ctl;
	ctl.h.cmsg_len = 20;
	ctl.h.cmsg_level = SOL_SOCKET;
	ctl.h.cmsg_type = SCM_RIGHTS;
	memcpy(ctl.space + 12, &p1[0], 4);
	memcpy(ctl.space + 16, &p2[0], 4);
	struct msghdr msg = { 0, 0, iov, 2, &ctl, 20, 0 };
	long r = s_sendmsg(sv[0], &msg, 0);
	sys_close(p1[0]);
	sys_close(p2[0]);
	int st = reap(pid);
	printf("sendmsg %ld, child %s\n", r, status_str(st));
	sys_close(p2[1]);
	sys_close(sv[0]);
}

static void test_sigpipe(void)
{
	int sv[2];

	printf("-- SIGPIPE\n");
	s_socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
	sys_close(sv[1]);
	printf("send with MSG_NOSIGNAL: %ld\n", s_send(sv[0], "x", 1, MSG_NOSIGNAL));
	fflush_stdout();
	long pid = sys_fork();
	if (pid == 0) {
		s_send(sv[0], "x", 1, 0);
		raw_puts(1, "child: still alive after send\n");
		exit(0);
	}
	printf("send without: child %s\n", status_str(reap(pid)));
	fflush_stdout();
	pid = sys_fork();
	if (pid == 0) {
		sys_write(sv[0], "x", 1);
		raw_puts(1, "child: still alive after write\n");
		exit(0);
	}
	printf("write: child %s\n", status_str(reap(pid)));
	sys_close(sv[0]);
}

static void refused(void)
{
	union inaddr a;
	memset(&a, 0, sizeof a);
	a.v4.sin_family = AF_INET;
	a.v4.sin_port = htons(80);
	a.v4.sin_addr = htonl(0x0a010203);	/* 10.1.2.3 */
	long c = s_socket(AF_INET, SOCK_STREAM, 0);
	printf("connect 10.1.2.3: %ld\n", s_connect(c, &a, sizeof a.v4));
	long u = s_socket(AF_INET, SOCK_DGRAM, 0);
	printf("sendto 10.1.2.3: %ld\n", s_sendto(u, "x", 1, 0, &a, sizeof a.v4));
	a.v4.sin_port = 0;
	printf("bind 10.1.2.3: %ld\n", s_bind(u, &a, sizeof a.v4));
	memset(&a, 0, sizeof a);
	a.v6.sin6_family = AF_INET6;
	a.v6.sin6_port = htons(80);
	a.v6.sin6_addr[0] = 0x20;
	a.v6.sin6_addr[1] = 0x01;
	a.v6.sin6_addr[2] = 0x0d;
	a.v6.sin6_addr[3] = 0xb8;
	a.v6.sin6_addr[15] = 1;
	long c6 = s_socket(AF_INET6, SOCK_STREAM, 0);
	printf("connect 2001:db8::1: %ld\n", s_connect(c6, &a, sizeof a.v6));
	printf("socket AF_NETLINK uevent: %ld\n", s_socket(AF_NETLINK, SOCK_RAW, 15));
	printf("socket AF_PACKET: %ld\n", s_socket(AF_PACKET, SOCK_RAW, 0));
	printf("socket raw IPv4: %ld\n", s_socket(AF_INET, SOCK_RAW, 1));
	via_sc = 1;
	printf("connect 2001:db8::1 through socketcall: %ld\n", s_connect(c6, &a, sizeof a.v6));
	via_sc = 0;
	/* Loopback is fine (nobody listens on port 1). */
	int len = loopback_addr(&a, AF_INET);
	a.v4.sin_port = htons(1);
	printf("connect 127.0.0.1:1: %ld\n", s_connect(c, &a, len));

	/* Options that route, mark or bind to a device are refused (EPERM), and so
	 * are unknown ones (ENOPROTOOPT), before any host call. */
	int one = 1;
	unsigned char lsrr[8] = { 1, 0x83, 7, 4, 10, 1, 2, 3 };	/* NOP, loose source route via 10.1.2.3 */
	unsigned char rthdr[24] = { 0, 2, 0, 1 };		/* type 0 routing header, one hop */
	char buf[64];
	int blen = sizeof buf;
	printf("IP_OPTIONS source route: %ld\n", s_setsockopt(u, 0, 4, lsrr, sizeof lsrr));
	printf("IPV6_RTHDR: %ld\n", s_setsockopt(c6, 41, 57, rthdr, sizeof rthdr));
	printf("SO_BINDTODEVICE lo: %ld\n", s_setsockopt(u, SOL_SOCKET, 25, "lo", 3));
	printf("SO_BINDTOIFINDEX: %ld\n", s_setsockopt(u, SOL_SOCKET, 62, &one, 4));
	printf("SO_MARK: %ld\n", s_setsockopt(u, SOL_SOCKET, 36, &one, 4));
	printf("IP_TRANSPARENT: %ld\n", s_setsockopt(u, 0, 19, &one, 4));
	printf("an unknown option: %ld\n", s_setsockopt(u, SOL_SOCKET, 0x7777, &one, 4));
	printf("reading IP_OPTIONS: %ld\n", s_getsockopt(u, 0, 4, buf, &blen));
	/* Control messages that route or name an interface the machine lacks. */
	union { struct cmsghdr h; char space[32]; } ctl;
	struct iovec iov = { "x", 1 };
	struct msghdr msg = { &a, len, &iov, 1, &ctl, 0, 0 };
	a.v4.sin_port = htons(9);
	memset(&ctl, 0, sizeof ctl);
	ctl.h.cmsg_len = 12 + 8;
	ctl.h.cmsg_level = 0;
	ctl.h.cmsg_type = 7;	/* IP_RETOPTS */
	memcpy(ctl.space + 12, lsrr, 8);
	msg.msg_controllen = 20;
	printf("sendmsg IP_RETOPTS: %ld\n", s_sendmsg(u, &msg, 0));
	ctl.h.cmsg_len = 12 + 12;
	ctl.h.cmsg_type = 8;	/* IP_PKTINFO: an interface and a source address */
	msg.msg_controllen = 24;
	printf("sendmsg IP_PKTINFO: %ld\n", s_sendmsg(u, &msg, 0));
	/* What loopback programs use passes. */
	printf("allowed: %ld %ld %ld %ld %ld %ld\n", s_setsockopt(c, SOL_SOCKET, 2, &one, 4),
	       s_setsockopt(c, SOL_SOCKET, 9, &one, 4), s_setsockopt(c, 6, 1, &one, 4),
	       s_setsockopt(c6, 41, 26, &one, 4), s_setsockopt(u, 0, 1, &one, 4),
	       s_setsockopt(u, SOL_SOCKET, 8, &one, 4));
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "refused")) {
		refused();
		return 0;
	}
	if (argc > 2 && !strcmp(argv[1], "connect-unix")) {
		struct sockaddr_un u;
		memset(&u, 0, sizeof u);
		u.sun_family = AF_UNIX;
		strcpy(u.sun_path, argv[2]);
		long c = sys_socket(AF_UNIX, SOCK_STREAM, 0);
		printf("connect %s: %ld\n", argv[2], sys_connect(c, &u, sizeof u));
		return 0;
	}
	for (via_sc = 0; via_sc < 2; via_sc++) {
		printf("== %s\n", via_sc ? "socketcall" : "direct system calls");
		test_tcp(AF_INET);
		test_tcp(AF_INET6);
		test_nonblocking();
		test_udp();
		test_unix();
		test_abstract();
		test_control();
		test_rights();
		test_sigpipe();
	}
	return 0;
}
