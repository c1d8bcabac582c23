/* echod: the seed workload's local server. Binds 127.0.0.1 on an ephemeral port,
 * prints the port on stdout, then detaches (the parent exits, so `port=$(echod)`
 * returns at once) and echoes every byte of each connection back until the peer
 * closes it. With an argument N it exits after N connections (default 1). */
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int conns = argc > 1 ? atoi(argv[1]) : 1;
	int s = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof a;
	if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) || listen(s, 4) ||
	    getsockname(s, (struct sockaddr *)&a, &len)) {
		perror("echod");
		return 1;
	}
	printf("%d\n", ntohs(a.sin_port));
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0) {
		perror("echod: fork");
		return 1;
	}
	if (pid > 0)
		return 0;
	close(1);
	for (int i = 0; i < conns; i++) {
		int c = accept(s, NULL, NULL);
		if (c < 0) {
			perror("echod: accept");
			return 1;
		}
		char buf[4096];
		ssize_t n;
		while ((n = read(c, buf, sizeof buf)) > 0)
			for (ssize_t off = 0; off < n;) {
				ssize_t w = write(c, buf + off, n - off);
				if (w <= 0)
					return 1;
				off += w;
			}
		close(c);
	}
	return 0;
}
