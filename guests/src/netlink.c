/*
 * netlink.c - NETLINK_ROUTE sockets as a program sees them: making them (the
 * types and protocols taken), binding (port ids: the process id first, then
 * negative ones; EADDRINUSE, EINVAL), getsockname/getpeername, connect, the
 * options (SO_TYPE, SO_DOMAIN, SO_PROTOCOL, NETLINK_CAP_ACK, memberships),
 * and the requests glibc's getifaddrs and if_nameindex make: RTM_GETLINK and
 * RTM_GETADDR dumps (and RTM_GETROUTE's, as ip route shows them), RTM_GETLINK
 * for one index or name, acks, errors with the
 * request appended (or capped), unknown types; receiving with recvmsg (the
 * kernel's address), recvfrom, recv through socketcall, read, MSG_PEEK,
 * MSG_TRUNC, MSG_DONTWAIT; poll readiness; write and writev requests.
 *
 * Only lo is printed (index 1; routes through it): natively the host has other
 * interfaces, addresses and routes, which are skipped and counted nowhere. Nothing printed depends on
 * pids or port ids (only how they relate), nor on attributes that differ between
 * kernel versions.
 *
 * An extra mode for the emulator's own tests (natively, as root, it would
 * change the host's network):
 *   netlink change   requests that change links and addresses, and messages
 *                    to other ports and groups
 */
#include "rt.h"

#define NETLINK_ROUTE	0
#define SOL_NETLINK	270
#define NETLINK_ADD_MEMBERSHIP 1
#define NETLINK_LIST_MEMBERSHIPS 9
#define NETLINK_CAP_ACK	10
#define SO_PROTOCOL	38
#define SO_DOMAIN	39

#define NLMSG_NOOP	1
#define NLMSG_ERROR	2
#define NLMSG_DONE	3
#define NLM_F_REQUEST	0x1
#define NLM_F_MULTI	0x2
#define NLM_F_ACK	0x4
#define NLM_F_DUMP	0x300
#define RTM_NEWLINK	16
#define RTM_DELLINK	17
#define RTM_GETLINK	18
#define RTM_NEWADDR	20
#define RTM_GETADDR	22
#define RTM_NEWROUTE	24
#define RTM_GETROUTE	26
#define RTA_DST		1
#define RTA_OIF		4
#define RTA_PREFSRC	7
#define RTA_TABLE	15
#define IFLA_ADDRESS	1
#define IFLA_BROADCAST	2
#define IFLA_IFNAME	3
#define IFLA_MTU	4
#define IFLA_QDISC	6
#define IFLA_STATS	7
#define IFLA_TXQLEN	13
#define IFLA_OPERSTATE	16
#define IFLA_CARRIER	33
#define IFA_ADDRESS	1
#define IFA_LOCAL	2
#define IFA_LABEL	3
#define IFA_FLAGS	8
#define POLLIN_		0x001

struct sockaddr_nl {
	uint16_t nl_family;
	uint16_t nl_pad;
	uint32_t nl_pid;
	uint32_t nl_groups;
};

struct nlmsghdr {
	uint32_t nlmsg_len;
	uint16_t nlmsg_type;
	uint16_t nlmsg_flags;
	uint32_t nlmsg_seq;
	uint32_t nlmsg_pid;
};

struct ifinfomsg {
	unsigned char ifi_family, pad;
	uint16_t ifi_type;
	int ifi_index;
	uint32_t ifi_flags, ifi_change;
};

struct ifaddrmsg {
	unsigned char ifa_family, ifa_prefixlen, ifa_flags, ifa_scope;
	uint32_t ifa_index;
};

struct rtmsg {
	unsigned char rtm_family, rtm_dst_len, rtm_src_len, rtm_tos;
	unsigned char rtm_table, rtm_protocol, rtm_scope, rtm_type;
	uint32_t rtm_flags;
};

struct rtattr {
	uint16_t rta_len, rta_type;
};

static void show(const char *what, long r)
{
	if (sys_failed(r))
		printf("%s: error %ld\n", what, -r);
	else
		printf("%s: %ld\n", what, r);
}

static unsigned char buf[65536];
static uint32_t port;	/* the first socket's port id */
static uint32_t seqno = 100;

/* Which request a reply's sequence number names: the last one sent or the one before. */
static const char *seq_name(uint32_t seq)
{
	return seq == seqno ? "last" : seq == seqno - 1 ? "previous" : "OTHER";
}

#define ALIGN4(n) (((n) + 3) & ~3u)

/* A request: header, a fixed part of `flen` bytes and optionally one string
 * attribute. Returns its length. */
static int build(void *out, int type, int flags, const void *fixed, int flen, int atype, const char *astr)
{
	struct nlmsghdr *h = out;
	int len = 16 + ALIGN4(flen);
	memset(out, 0, 512);
	if (flen)
		memcpy((char *)out + 16, fixed, flen);
	if (astr) {
		struct rtattr *a = (struct rtattr *)((char *)out + len);
		a->rta_len = 4 + strlen(astr) + 1;
		a->rta_type = atype;
		memcpy(a + 1, astr, strlen(astr) + 1);
		len += ALIGN4(a->rta_len);
	}
	h->nlmsg_len = len;
	h->nlmsg_type = type;
	h->nlmsg_flags = flags;
	h->nlmsg_seq = ++seqno;
	h->nlmsg_pid = 0;
	return len;
}

static long to_kernel(int fd, const void *req, int len)
{
	struct sockaddr_nl k = { AF_NETLINK, 0, 0, 0 };
	return sys_sendto(fd, req, len, 0, &k, sizeof k);
}

/* One datagram with recvmsg; prints the sender's address once per call when `who`. */
static long recv_one(int fd, int flags, int who)
{
	struct sockaddr_nl from;
	struct iovec iov = { buf, sizeof buf };
	struct msghdr m = { &from, sizeof from + 4, &iov, 1, 0, 0, 0 };
	memset(&from, 0x55, sizeof from);
	long n = sys_recvmsg(fd, &m, flags);
	if (who && !sys_failed(n))
		printf("  from: family %d pid %u groups %u namelen %d msg_flags 0x%x\n", from.nl_family,
		       from.nl_pid, from.nl_groups, m.msg_namelen, m.msg_flags);
	return n;
}

static void print_link(struct nlmsghdr *h)
{
	struct ifinfomsg *ifi = (struct ifinfomsg *)(h + 1);
	if (ifi->ifi_index != 1)
		return;
	printf("  link: index %d type %u flags 0x%x family %u msgflags 0x%x seq %s pid %s\n", ifi->ifi_index,
	       ifi->ifi_type, ifi->ifi_flags, ifi->ifi_family, h->nlmsg_flags,
	       seq_name(h->nlmsg_seq), h->nlmsg_pid == port ? "ok" : "WRONG");
	int off = 16 + sizeof *ifi;
	while (off + 4 <= (int)h->nlmsg_len) {
		struct rtattr *a = (struct rtattr *)((char *)h + off);
		unsigned char *d = (unsigned char *)(a + 1);
		int dl = a->rta_len - 4, i;
		if (a->rta_len < 4)
			break;
		switch (a->rta_type) {
		case IFLA_IFNAME: printf("    name %s\n", (char *)d); break;
		case IFLA_QDISC: printf("    qdisc %s\n", (char *)d); break;
		case IFLA_MTU: printf("    mtu %u\n", *(uint32_t *)d); break;
		case IFLA_TXQLEN: printf("    txqlen %u\n", *(uint32_t *)d); break;
		case IFLA_OPERSTATE: printf("    operstate %u\n", d[0]); break;
		case IFLA_CARRIER: printf("    carrier %u\n", d[0]); break;
		case IFLA_STATS: printf("    stats: %d bytes\n", dl); break;
		case IFLA_ADDRESS:
		case IFLA_BROADCAST:
			printf("    %s", a->rta_type == IFLA_ADDRESS ? "address" : "broadcast");
			for (i = 0; i < dl; i++)
				printf("%c%02x", i ? ':' : ' ', d[i]);
			printf("\n");
			break;
		}
		off += ALIGN4(a->rta_len);
	}
}

static void print_addr(struct nlmsghdr *h)
{
	struct ifaddrmsg *ifa = (struct ifaddrmsg *)(h + 1);
	if (ifa->ifa_index != 1)
		return;
	printf("  addr: family %u prefix %u flags 0x%x scope %u msgflags 0x%x seq %s pid %s\n", ifa->ifa_family,
	       ifa->ifa_prefixlen, ifa->ifa_flags, ifa->ifa_scope, h->nlmsg_flags,
	       seq_name(h->nlmsg_seq), h->nlmsg_pid == port ? "ok" : "WRONG");
	int off = 16 + sizeof *ifa;
	while (off + 4 <= (int)h->nlmsg_len) {
		struct rtattr *a = (struct rtattr *)((char *)h + off);
		unsigned char *d = (unsigned char *)(a + 1);
		int dl = a->rta_len - 4, i;
		if (a->rta_len < 4)
			break;
		switch (a->rta_type) {
		case IFA_ADDRESS:
		case IFA_LOCAL:
			printf("    %s", a->rta_type == IFA_ADDRESS ? "address" : "local");
			for (i = 0; i < dl; i++)
				printf(dl == 4 ? "%c%u" : "%c%02x", i ? (dl == 4 ? '.' : ':') : ' ', d[i]);
			printf("\n");
			break;
		case IFA_LABEL: printf("    label %s\n", (char *)d); break;
		case IFA_FLAGS: printf("    ifa_flags 0x%x\n", *(uint32_t *)d); break;
		}
		off += ALIGN4(a->rta_len);
	}
}

/* An address attribute: dotted for IPv4, hex bytes for IPv6. */
static void print_ip(const char *what, const unsigned char *d, int dl)
{
	int i;
	printf("    %s", what);
	for (i = 0; i < dl; i++)
		printf(dl == 4 ? "%c%u" : "%c%02x", i ? (dl == 4 ? '.' : ':') : ' ', d[i]);
	printf("\n");
}

/* A route through lo (natively the host's others are skipped). */
static void print_route(struct nlmsghdr *h)
{
	struct rtmsg *r = (struct rtmsg *)(h + 1);
	int off = 16 + sizeof *r, oif = 0;
	while (off + 4 <= (int)h->nlmsg_len) {
		struct rtattr *a = (struct rtattr *)((char *)h + off);
		if (a->rta_len < 4)
			break;
		if (a->rta_type == RTA_OIF)
			oif = *(int *)(a + 1);
		off += ALIGN4(a->rta_len);
	}
	if (oif != 1)
		return;
	printf("  route: family %u dst_len %u table %u protocol %u scope %u type %u msgflags 0x%x\n", r->rtm_family,
	       r->rtm_dst_len, r->rtm_table, r->rtm_protocol, r->rtm_scope, r->rtm_type, h->nlmsg_flags);
	off = 16 + sizeof *r;
	while (off + 4 <= (int)h->nlmsg_len) {
		struct rtattr *a = (struct rtattr *)((char *)h + off);
		unsigned char *d = (unsigned char *)(a + 1);
		if (a->rta_len < 4)
			break;
		switch (a->rta_type) {
		case RTA_DST: print_ip("dst", d, a->rta_len - 4); break;
		case RTA_PREFSRC: print_ip("prefsrc", d, a->rta_len - 4); break;
		case RTA_TABLE: printf("    table %u\n", *(uint32_t *)d); break;
		}
		off += ALIGN4(a->rta_len);
	}
}

static void print_error(struct nlmsghdr *h)
{
	int *err = (int *)(h + 1);
	struct nlmsghdr *orig = (struct nlmsghdr *)(err + 1);
	printf("  error %d len %u flags 0x%x seq %s pid %s; request len %u type %u\n", *err, h->nlmsg_len,
	       h->nlmsg_flags, seq_name(h->nlmsg_seq), h->nlmsg_pid == port ? "ok" : "WRONG",
	       orig->nlmsg_len, orig->nlmsg_type);
}

/* Prints the messages of one datagram of `n` bytes; returns 1 at NLMSG_DONE. */
static int print_msgs(long n)
{
	int off = 0, done = 0;
	while (off + 16 <= n) {
		struct nlmsghdr *h = (struct nlmsghdr *)(buf + off);
		if (h->nlmsg_len < 16 || off + (int)h->nlmsg_len > n) {
			printf("  bad message\n");
			break;
		}
		switch (h->nlmsg_type) {
		case RTM_NEWLINK: print_link(h); break;
		case RTM_NEWADDR: print_addr(h); break;
		case RTM_NEWROUTE: print_route(h); break;
		case NLMSG_ERROR: print_error(h); break;
		case NLMSG_DONE:
			printf("  done: %d len %u flags 0x%x seq %s\n", *(int *)(h + 1), h->nlmsg_len, h->nlmsg_flags,
			       seq_name(h->nlmsg_seq));
			done = 1;
			break;
		default: printf("  type %u\n", h->nlmsg_type);
		}
		off += ALIGN4(h->nlmsg_len);
	}
	return done;
}

/* A dump: the datagrams until NLMSG_DONE (the sender's address printed once). */
static void dump(int fd, int type, const void *fixed, int flen)
{
	static unsigned char req[512];
	int len = build(req, type, NLM_F_REQUEST | NLM_F_DUMP, fixed, flen, 0, 0);
	show(" send", to_kernel(fd, req, len));
	int first = 1;
	for (;;) {
		long n = recv_one(fd, 0, first);
		first = 0;
		if (sys_failed(n)) {
			show("  recv", n);
			return;
		}
		if (print_msgs(n))
			return;
	}
}

/* A request answered with `replies` datagrams. */
static void request(int fd, const void *req, int len, int replies)
{
	show(" send", to_kernel(fd, req, len));
	while (replies--) {
		long n = recv_one(fd, 0, 0);
		if (sys_failed(n)) {
			show("  recv", n);
			return;
		}
		print_msgs(n);
	}
	show(" nothing more", recv_one(fd, MSG_DONTWAIT, 0));
}

static int nl_socket(int type)
{
	long fd = sys_socket(AF_NETLINK, type, NETLINK_ROUTE);
	if (sys_failed(fd)) {
		printf("socket: error %ld\n", -fd);
		exit(1);
	}
	return fd;
}

static void making(void)
{
	int sv[2];
	printf("== making\n");
	long a = sys_socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	long b = sys_socket(AF_NETLINK, SOCK_DGRAM | SOCK_NONBLOCK, NETLINK_ROUTE);
	printf("raw: %s, dgram: %s\n", a >= 0 ? "ok" : "error", b >= 0 ? "ok" : "error");
	show("cloexec", sys_fcntl(a, 1 /* F_GETFD */, 0));
	show("nonblock", sys_fcntl(b, F_GETFL, 0) & O_NONBLOCK);
	sys_close(a);
	sys_close(b);
	show("stream", sys_socket(AF_NETLINK, SOCK_STREAM, NETLINK_ROUTE));
	show("protocol 32", sys_socket(AF_NETLINK, SOCK_RAW, 32));
	show("socketpair", sys_socketpair(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE, sv));
}

static void naming(int fd)
{
	struct sockaddr_nl a;
	int len = sizeof a + 8;
	printf("== naming\n");
	show("getsockname unbound", sys_getsockname(fd, &a, &len));
	printf("  family %d pid %u groups %u len %d\n", a.nl_family, a.nl_pid, a.nl_groups, len);
	struct sockaddr_nl b = { AF_NETLINK, 0, 0, 0 };
	show("bind short", sys_bind(fd, &b, 8));
	b.nl_family = AF_UNIX;
	show("bind AF_UNIX", sys_bind(fd, &b, sizeof b));
	b.nl_family = AF_NETLINK;
	show("bind 0", sys_bind(fd, &b, sizeof b));
	len = sizeof a;
	show("getsockname", sys_getsockname(fd, &a, &len));
	port = a.nl_pid;
	printf("  family %d pid is getpid %d groups %u len %d\n", a.nl_family, a.nl_pid == (uint32_t)sys_getpid(),
	       a.nl_groups, len);
	b.nl_pid = port + 1;
	show("bind again, another pid", sys_bind(fd, &b, sizeof b));
	b.nl_pid = port;
	show("bind again, the same pid", sys_bind(fd, &b, sizeof b));
	len = sizeof a;
	show("getpeername", sys_getpeername(fd, &a, &len));
	printf("  family %d pid %u groups %u len %d\n", a.nl_family, a.nl_pid, a.nl_groups, len);

	int s2 = nl_socket(SOCK_RAW);
	b.nl_pid = port;
	show("second socket, bind to the first's pid", sys_bind(s2, &b, sizeof b));
	b.nl_pid = 0;
	show("second socket, bind 0", sys_bind(s2, &b, sizeof b));
	len = sizeof a;
	sys_getsockname(s2, &a, &len);
	printf("  second port is negative: %d\n", (int)a.nl_pid < 0);
	int s3 = nl_socket(SOCK_RAW);
	struct sockaddr_nl k = { AF_NETLINK, 0, 0, 0 };
	show("third socket, connect to the kernel", sys_connect(s3, &k, sizeof k));
	len = sizeof a;
	sys_getsockname(s3, &a, &len);
	printf("  bound by connect, negative: %d\n", (int)a.nl_pid < 0);
	k.nl_family = AF_UNSPEC;
	show("connect AF_UNSPEC", sys_connect(s3, &k, sizeof k));
	sys_close(s3);
	sys_close(s2);

	int one = 0, ol = sizeof one;
	show("SO_TYPE", sys_getsockopt(fd, SOL_SOCKET, SO_TYPE, &one, &ol));
	printf("  %d (len %d)\n", one, ol);
	show("SO_DOMAIN", sys_getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &one, &ol));
	printf("  %d\n", one);
	show("SO_PROTOCOL", sys_getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &one, &ol));
	printf("  %d\n", one);
	show("shutdown", sys_shutdown(fd, SHUT_WR));
	show("listen", sys_listen(fd, 1));
}

static void links(int fd)
{
	static unsigned char req[512];
	struct ifinfomsg ifi;
	printf("== RTM_GETLINK dump\n");
	memset(&ifi, 0, sizeof ifi);
	dump(fd, RTM_GETLINK, &ifi, sizeof ifi);
	printf("== RTM_GETLINK dump, rtgenmsg only (as glibc)\n");
	dump(fd, RTM_GETLINK, "\0\0\0", 1);

	printf("== RTM_GETLINK index 1, acked\n");
	ifi.ifi_index = 1;
	request(fd, req, build(req, RTM_GETLINK, NLM_F_REQUEST | NLM_F_ACK, &ifi, sizeof ifi, 0, 0), 2);
	printf("== RTM_GETLINK by name lo\n");
	ifi.ifi_index = 0;
	request(fd, req, build(req, RTM_GETLINK, NLM_F_REQUEST, &ifi, sizeof ifi, IFLA_IFNAME, "lo"), 1);
	printf("== RTM_GETLINK index 9999\n");
	ifi.ifi_index = 9999;
	request(fd, req, build(req, RTM_GETLINK, NLM_F_REQUEST, &ifi, sizeof ifi, 0, 0), 1);
	printf("== RTM_GETLINK by name nosuchif0\n");
	ifi.ifi_index = 0;
	request(fd, req, build(req, RTM_GETLINK, NLM_F_REQUEST, &ifi, sizeof ifi, IFLA_IFNAME, "nosuchif0"), 1);
	printf("== RTM_GETLINK with neither\n");
	request(fd, req, build(req, RTM_GETLINK, NLM_F_REQUEST | NLM_F_ACK, &ifi, sizeof ifi, 0, 0), 1);
	printf("== RTM_GETLINK, too short for an ifinfomsg\n");
	request(fd, req, build(req, RTM_GETLINK, NLM_F_REQUEST, &ifi, 8, 0, 0), 1);
	printf("== NETLINK_CAP_ACK, index 9999\n");
	int on = 1, ol = sizeof on;
	show("set", sys_setsockopt(fd, SOL_NETLINK, NETLINK_CAP_ACK, &on, sizeof on));
	on = 0;
	show("get", sys_getsockopt(fd, SOL_NETLINK, NETLINK_CAP_ACK, &on, &ol));
	printf("  %d\n", on);
	ifi.ifi_index = 9999;
	request(fd, req, build(req, RTM_GETLINK, NLM_F_REQUEST, &ifi, sizeof ifi, 0, 0), 1);
	on = 0;
	show("unset", sys_setsockopt(fd, SOL_NETLINK, NETLINK_CAP_ACK, &on, sizeof on));
}

static void addrs(int fd)
{
	static const unsigned char fams[] = { AF_UNSPEC, AF_INET, AF_INET6 };
	unsigned i;
	for (i = 0; i < sizeof fams; i++) {
		struct ifaddrmsg ifa;
		memset(&ifa, 0, sizeof ifa);
		ifa.ifa_family = fams[i];
		printf("== RTM_GETADDR dump, family %u\n", fams[i]);
		dump(fd, RTM_GETADDR, &ifa, sizeof ifa);
	}
	for (i = 0; i < sizeof fams; i++) {
		struct rtmsg rt;
		memset(&rt, 0, sizeof rt);
		rt.rtm_family = fams[i];
		printf("== RTM_GETROUTE dump, family %u\n", fams[i]);
		dump(fd, RTM_GETROUTE, &rt, sizeof rt);
	}
}

static void others(int fd)
{
	static unsigned char req[1024];
	struct ifinfomsg ifi;
	memset(&ifi, 0, sizeof ifi);
	printf("== type 200\n");
	request(fd, req, build(req, 200, NLM_F_REQUEST, &ifi, sizeof ifi, 0, 0), 1);
	printf("== RTM_GETADDR, not a dump\n");
	request(fd, req, build(req, RTM_GETADDR, NLM_F_REQUEST, &ifi, 8, 0, 0), 1);
	printf("== RTM_GETLINK without a payload, acked\n");
	request(fd, req, build(req, RTM_GETLINK, NLM_F_REQUEST | NLM_F_ACK, 0, 0, 0, 0), 1);
	printf("== RTM_GETLINK without a payload\n");
	request(fd, req, build(req, RTM_GETLINK, NLM_F_REQUEST, 0, 0, 0, 0), 0);
	printf("== not a request, acked\n");
	request(fd, req, build(req, RTM_GETLINK, NLM_F_ACK, &ifi, sizeof ifi, 0, 0), 1);
	printf("== NLMSG_NOOP, acked\n");
	request(fd, req, build(req, NLMSG_NOOP, NLM_F_REQUEST | NLM_F_ACK, 0, 0, 0, 0), 1);
	printf("== two requests in one send\n");
	ifi.ifi_index = 1;
	int l1 = build(req, RTM_GETLINK, NLM_F_REQUEST, &ifi, sizeof ifi, 0, 0);
	ifi.ifi_index = 7777;
	int l2 = build(req + l1, RTM_GETLINK, NLM_F_REQUEST | NLM_F_ACK, &ifi, sizeof ifi, 0, 0);
	request(fd, req, l1 + l2, 2);
	printf("== a truncated second message\n");
	ifi.ifi_index = 1;
	l1 = build(req, 200, NLM_F_REQUEST, &ifi, sizeof ifi, 0, 0);
	build(req + l1, 200, NLM_F_REQUEST, &ifi, sizeof ifi, 0, 0);
	request(fd, req, l1 + 20, 1);
}

static void receiving(int fd)
{
	static unsigned char req[512];
	struct ifinfomsg ifi;
	struct pollfd p = { fd, POLLIN_, 0 };
	memset(&ifi, 0, sizeof ifi);
	printf("== receiving\n");
	show("nothing queued, MSG_DONTWAIT", recv_one(fd, MSG_DONTWAIT, 0));
	show("poll, nothing queued", sys_poll(&p, 1, 0));
	int len = build(req, 200, NLM_F_REQUEST, &ifi, sizeof ifi, 0, 0);
	show("send type 200", to_kernel(fd, req, len));
	show("poll", sys_poll(&p, 1, 0));
	printf("  revents 0x%x\n", p.revents);
	show("recv 8 bytes, MSG_PEEK|MSG_TRUNC", sys_recvfrom(fd, buf, 8, MSG_PEEK | MSG_TRUNC, 0, 0));
	show("recv 8 bytes, MSG_PEEK", sys_recvfrom(fd, buf, 8, MSG_PEEK, 0, 0));
	struct iovec iov = { buf, 8 };
	struct msghdr m = { 0, 0, &iov, 1, 0, 0, 0 };
	show("recvmsg 8 bytes", sys_recvmsg(fd, &m, 0));
	printf("  msg_flags 0x%x\n", m.msg_flags);
	show("then, MSG_DONTWAIT", recv_one(fd, MSG_DONTWAIT, 0));

	ifi.ifi_index = 1;
	len = build(req, RTM_GETLINK, NLM_F_REQUEST, &ifi, sizeof ifi, 0, 0);
	show("send RTM_GETLINK index 1", to_kernel(fd, req, len));
	long whole = sys_recvfrom(fd, buf, 16, MSG_PEEK | MSG_TRUNC, 0, 0);
	printf("  peeked length is the message's: %d\n", whole == (long)((struct nlmsghdr *)buf)->nlmsg_len);
	struct sockaddr_nl from;
	int flen = sizeof from;
	long n = sys_recvfrom(fd, buf, sizeof buf, 0, &from, &flen);
	printf("  recvfrom the same length: %d, from family %d pid %u len %d\n", n == whole, from.nl_family,
	       from.nl_pid, flen);
	print_msgs(n);

	printf("== write, read\n");
	len = build(req, 200, NLM_F_REQUEST, &ifi, sizeof ifi, 0, 0);
	show("write", sys_write(fd, req, len));
	n = sys_read(fd, buf, sizeof buf);
	show("read", n);
	print_msgs(n);
	printf("== writev, recv through socketcall\n");
	len = build(req, RTM_GETLINK, NLM_F_REQUEST | NLM_F_ACK, &ifi, sizeof ifi, 0, 0);
	struct iovec v[2] = { { req, 10 }, { req + 10, len - 10 } };
	show("writev", sys_writev(fd, v, 2));
	n = recv_one(fd, 0, 0);
	print_msgs(n);
	unsigned long args[4] = { fd, (unsigned long)buf, sizeof buf, 0 };
	n = sys_socketcall(SC_RECV, args);
	show("recv", n);
	print_msgs(n);
}

static void options(int fd)
{
	int v, l;
	uint32_t words[4];
	printf("== options\n");
	l = sizeof words;
	show("NETLINK_LIST_MEMBERSHIPS, none", sys_getsockopt(fd, SOL_NETLINK, NETLINK_LIST_MEMBERSHIPS, words, &l));
	printf("  len %d\n", l);
	v = 1;
	show("NETLINK_ADD_MEMBERSHIP 1", sys_setsockopt(fd, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, &v, sizeof v));
	v = 1000;
	show("NETLINK_ADD_MEMBERSHIP 1000", sys_setsockopt(fd, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, &v, sizeof v));
	v = 0;
	show("NETLINK_ADD_MEMBERSHIP 0", sys_setsockopt(fd, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, &v, sizeof v));
	l = sizeof words;
	memset(words, 0, sizeof words);
	show("NETLINK_LIST_MEMBERSHIPS", sys_getsockopt(fd, SOL_NETLINK, NETLINK_LIST_MEMBERSHIPS, words, &l));
	printf("  first word 0x%x\n", words[0]);
	struct sockaddr_nl a;
	l = sizeof a;
	sys_getsockname(fd, &a, &l);
	printf("  getsockname groups 0x%x\n", a.nl_groups);
	l = sizeof v;
	show("an unknown SOL_NETLINK option", sys_getsockopt(fd, SOL_NETLINK, 99, &v, &l));
	show("setting it", sys_setsockopt(fd, SOL_NETLINK, 99, &v, sizeof v));
	l = 2;
	show("NETLINK_CAP_ACK into 2 bytes", sys_getsockopt(fd, SOL_NETLINK, NETLINK_CAP_ACK, &v, &l));
}

static void change(void)
{
	static unsigned char req[512];
	struct ifinfomsg ifi;
	struct ifaddrmsg ifa;
	int fd = nl_socket(SOCK_RAW);
	struct sockaddr_nl me = { AF_NETLINK, 0, 0, 0 };
	int ml = sizeof me;
	sys_bind(fd, &me, sizeof me);
	sys_getsockname(fd, &me, &ml);
	port = me.nl_pid;
	memset(&ifi, 0, sizeof ifi);
	memset(&ifa, 0, sizeof ifa);
	ifi.ifi_index = 1;
	printf("== RTM_NEWLINK\n");
	request(fd, req, build(req, RTM_NEWLINK, NLM_F_REQUEST, &ifi, sizeof ifi, 0, 0), 1);
	printf("== RTM_DELLINK\n");
	request(fd, req, build(req, RTM_DELLINK, NLM_F_REQUEST, &ifi, sizeof ifi, 0, 0), 1);
	printf("== RTM_NEWADDR\n");
	ifa.ifa_family = AF_INET;
	ifa.ifa_index = 1;
	request(fd, req, build(req, RTM_NEWADDR, NLM_F_REQUEST, &ifa, sizeof ifa, 0, 0), 1);
	struct sockaddr_nl to = { AF_NETLINK, 0, 12345, 0 };
	int len = build(req, RTM_GETLINK, NLM_F_REQUEST, &ifi, sizeof ifi, 0, 0);
	show("sendto port 12345", sys_sendto(fd, req, len, 0, &to, sizeof to));
	to.nl_pid = 0;
	to.nl_groups = 1;
	show("sendto group 1", sys_sendto(fd, req, len, 0, &to, sizeof to));
	show("connect to group 1", sys_connect(fd, &to, sizeof to));
	int v = 1;
	show("NETLINK_PKTINFO", sys_setsockopt(fd, SOL_NETLINK, 3, &v, sizeof v));
	show("SO_PASSCRED", sys_setsockopt(fd, SOL_SOCKET, 16, &v, sizeof v));
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "change")) {
		change();
		return 0;
	}
	making();
	int fd = nl_socket(SOCK_RAW);
	naming(fd);
	links(fd);
	addrs(fd);
	others(fd);
	receiving(fd);
	options(fd);
	sys_close(fd);
	int again = nl_socket(SOCK_DGRAM);
	struct sockaddr_nl b = { AF_NETLINK, 0, 0, 0 }, a;
	int l = sizeof a;
	sys_bind(again, &b, sizeof b);
	sys_getsockname(again, &a, &l);
	printf("== after close, the pid is free again: %d\n", a.nl_pid == port);
	return 0;
}
