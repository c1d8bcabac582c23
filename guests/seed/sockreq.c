/* sockreq: one request on the already open socket fd 3 and its reply, as in the
 * 2005 report ("send and receives data through an already open tcp socket to a
 * local server"). Exits 0 if the echoed reply matches the request. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	char req[128], rep[128];
	int n = snprintf(req, sizeof req, "request %s: the quick brown fox jumps over the lazy dog\n",
			 argc > 1 ? argv[1] : "0");
	if (write(3, req, n) != n) {
		perror("sockreq: write");
		return 1;
	}
	int got = 0;
	while (got < n) {
		ssize_t r = read(3, rep + got, n - got);
		if (r <= 0) {
			perror("sockreq: read");
			return 1;
		}
		got += r;
	}
	return memcmp(req, rep, n) != 0;
}
