/*
 * partial_sock.c - sendto, recvfrom, sendmsg and recvmsg given a buffer
 * that is only partly valid (the rest unmapped), on AF_UNIX stream and
 * datagram pairs, a UDP pair and a TCP connection over 127.0.0.1: Linux
 * transfers what the protocol lets it (a short count, or EFAULT when nothing
 * could be), and what was left behind is still there to be received.  All
 * calls are non-blocking (MSG_DONTWAIT), so nothing here can wait.
 */
#include "rt.h"

#define PAGE 4096u
#define DONTWAIT 0x40
#define SOL_SOCKET_ 1
#define SO_SNDBUF_ 7

static uint8_t *edge;	/* 100 valid bytes, then an unmapped page */

static long drain(long fd)
{
	static uint8_t buf[8192];
	long total = 0, r;

	while ((r = sys_recvfrom((int)fd, buf, sizeof buf, DONTWAIT, 0, 0)) > 0)
		total += r;
	return total;
}

static void one(const char *kind, long a, long b)
{
	struct iovec iov = { edge, 300 };
	struct msghdr mh = { 0, 0, &iov, 1, 0, 0, 0 };
	static uint8_t src[300];
	long r;

	memset(src, 'x', sizeof src);
	r = sys_sendto((int)a, edge, 300, DONTWAIT, 0, 0);
	printf("%-6s sendto 300, 100 valid: %s", kind, sys_err(r));
	printf(", peer got %ld\n", drain(b));
	r = sys_sendmsg((int)a, &mh, DONTWAIT);
	printf("%-6s sendmsg 300, 100 valid: %s", kind, sys_err(r));
	printf(", peer got %ld\n", drain(b));
	r = sys_sendto((int)a, src, 300, DONTWAIT, 0, 0);
	printf("%-6s sent 300: %s\n", kind, sys_err(r));
	r = sys_recvfrom((int)b, edge, 300, DONTWAIT, 0, 0);
	printf("%-6s recvfrom 300, 100 valid: %s", kind, sys_err(r));
	printf(", left %ld\n", drain(b));
	sys_sendto((int)a, src, 300, DONTWAIT, 0, 0);
	r = sys_recvmsg((int)b, &mh, DONTWAIT);
	printf("%-6s recvmsg 300, 100 valid: %s", kind, sys_err(r));
	printf(", left %ld\n", drain(b));
	sys_sendto((int)a, src, 50, DONTWAIT, 0, 0);
	r = sys_recvfrom((int)b, edge + 100, 300, DONTWAIT, 0, 0);
	printf("%-6s recvfrom into nothing valid: %s", kind, sys_err(r));
	printf(", left %ld\n", drain(b));
	r = sys_sendto((int)a, edge + 100, 0, DONTWAIT, 0, 0);
	printf("%-6s sendto 0 bytes from nothing valid: %s\n", kind, sys_err(r));
}

int main(void)
{
	int sv[2];
	struct sockaddr_in in = { AF_INET, 0, 0x0100007f, { 0 } }, got;
	int len = sizeof got;
	long s, c, l, t;
	uint8_t *area = (uint8_t *)sys_mmap2(0, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	sys_munmap(area + PAGE, PAGE);
	edge = area + PAGE - 100;
	memset(edge, 'e', 100);

	sys_socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
	one("unix", sv[0], sv[1]);
	sys_socketpair(AF_UNIX, SOCK_DGRAM, 0, sv);
	one("unixdg", sv[0], sv[1]);

	s = sys_socket(AF_INET, SOCK_DGRAM, 0);
	c = sys_socket(AF_INET, SOCK_DGRAM, 0);
	sys_bind((int)s, &in, sizeof in);
	sys_getsockname((int)s, &got, &len);
	sys_connect((int)c, &got, sizeof got);
	sys_getsockname((int)c, &got, &len);
	sys_connect((int)s, &got, sizeof got);
	one("udp", c, s);

	l = sys_socket(AF_INET, SOCK_STREAM, 0);
	sys_bind((int)l, &in, sizeof in);
	sys_listen((int)l, 1);
	len = sizeof got;
	sys_getsockname((int)l, &got, &len);
	c = sys_socket(AF_INET, SOCK_STREAM, 0);
	printf("tcp connect: %s\n", sys_err(sys_connect((int)c, &got, sizeof got)));
	t = sys_accept4((int)l, 0, 0, 0);
	printf("tcp accept: %s\n", sys_err(t < 0 ? t : 0));
	one("tcp", c, t);
	return 0;
}
