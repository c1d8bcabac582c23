/*
 * partial_buf.c - system calls given a buffer that is only partly valid.
 * Linux copies what it can and returns a short count (EFAULT only when
 * nothing could be transferred), and checks only what it transfers:
 * writing to /dev/null touches no byte of the buffer.  Covers read, write,
 * pread64, pwrite64, readv, writev on a file, a pipe, /dev/null, /dev/zero
 * and /dev/urandom.
 */
#include "rt.h"

#define BUF (64 * 1024)

static char *area;	/* BUF bytes read/write, then an unmapped page */

static void show(const char *what, long r)
{
	printf("%s: %ld\n", what, r);
}

int main(void)
{
	static char chunk[4096];
	long fd, r, i;
	int p[2];

	/* 64 KiB of read/write memory with a hole after it, and one page read-only after that */
	area = (char *)sys_mmap2(0, BUF + 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (sys_failed((long)area))
		return 1;
	sys_munmap(area + BUF, 4096);
	sys_mprotect(area + BUF + 4096, 4096, PROT_READ);

	/* a 100000-byte file */
	fd = sys_open("partial_buf.tmp", O_RDWR | O_CREAT | O_TRUNC, 0644);
	for (i = 0; i < (long)sizeof chunk; i++)
		chunk[i] = (char)(i * 7 + 3);
	for (i = 0; i < 100000; i += r) {
		r = sys_write(fd, chunk, 100000 - i < (long)sizeof chunk ? 100000 - i : (long)sizeof chunk);
		if (r <= 0)
			return 2;
	}

	/* read: the bytes that fit before the hole */
	sys_lseek(fd, 0, SEEK_SET);
	show("read 100000 into 64 KiB", sys_read(fd, area, 100000));
	show("offset after", sys_lseek(fd, 0, SEEK_CUR));
	show("bytes ok", memcmp(area + 4096, chunk, 4096) == 0 && area[BUF - 1] == chunk[(BUF - 1) % 4096]);
	show("read 100 into the hole", sys_read(fd, area + BUF, 100));
	show("read 100 into read-only", sys_read(fd, area + BUF + 4096, 100));
	show("read 8192 from 100 before the hole", sys_read(fd, area + BUF - 100, 8192));
	show("pread 8192 from 10 before the hole", sys_pread64(fd, area + BUF - 10, 8192, 5));
	show("pread 0 into the hole", sys_pread64(fd, area + BUF, 0, 5));

	/* write: what is readable before the hole */
	sys_lseek(fd, 0, SEEK_SET);
	show("write 8192 from 1000 before the hole", sys_write(fd, area + BUF - 1000, 8192));
	show("offset after", sys_lseek(fd, 0, SEEK_CUR));
	show("write from the hole", sys_write(fd, area + BUF, 10));
	show("write 0 from the hole", sys_write(fd, area + BUF, 0));
	show("pwrite 5000 from 3000 before the hole", sys_pwrite64(fd, area + BUF - 3000, 5000, 50));
	show("write from NULL", sys_write(fd, (void *)0, 16));

	/* readv/writev: the first iovecs, up to the fault */
	{
		struct iovec v[3] = { { area, 100 }, { area + BUF - 50, 200 }, { area, 100 } };
		sys_lseek(fd, 0, SEEK_SET);
		show("readv 100 + (50 of 200) + 100", sys_readv(fd, v, 3));
		show("offset after", sys_lseek(fd, 0, SEEK_CUR));
		show("writev 100 + (50 of 200) + 100", sys_writev(fd, v, 3));
		v[0].iov_base = area + BUF;
		show("readv first in the hole", sys_readv(fd, v, 3));
		show("writev first in the hole", sys_writev(fd, v, 3));
		v[0].iov_len = 0;
		show("writev first empty in the hole", sys_writev(fd, v, 3));
	}
	sys_close(fd);
	sys_unlink("partial_buf.tmp");

	/* /dev/null takes any count without looking at the buffer */
	fd = sys_open("/dev/null", O_RDWR, 0);
	show("null: write 0x7fffffff", sys_write(fd, area, 0x7fffffff));
	show("null: write 0x7ffff000", sys_write(fd, area, 0x7ffff000));
	show("null: write from NULL", sys_write(fd, (void *)0, 10));
	show("null: write from the hole", sys_write(fd, area + BUF, 4096));
	show("null: read into the hole", sys_read(fd, area + BUF, 4096));
	{
		struct iovec v[2] = { { (void *)0, 10 }, { area, 0x10000000 } };
		show("null: writev NULL + 256 MiB", sys_writev(fd, v, 2));
	}
	sys_close(fd);

	/* /dev/zero fills what fits */
	fd = sys_open("/dev/zero", O_RDONLY, 0);
	memset(area + BUF - 300, 'x', 300);
	show("zero: read 8192 from 300 before the hole", sys_read(fd, area + BUF - 300, 8192));
	show("zero: zeroed", area[BUF - 300] == 0 && area[BUF - 1] == 0);
	show("zero: read into the hole", sys_read(fd, area + BUF, 10));
	sys_close(fd);

	/* /dev/urandom: what fits */
	fd = sys_open("/dev/urandom", O_RDONLY, 0);
	show("urandom: read 1000 from 200 before the hole", sys_read(fd, area + BUF - 200, 1000));
	show("urandom: read into the hole", sys_read(fd, area + BUF, 10));
	sys_close(fd);

	/* a pipe: the readable part goes in, the rest stays */
	sys_pipe(p);
	sys_fcntl(p[0], F_SETFL, O_NONBLOCK);
	show("pipe: write 4096 from 96 before the hole", sys_write(p[1], area + BUF - 96, 4096));
	show("pipe: read it", sys_read(p[0], chunk, sizeof chunk));
	show("pipe: write from the hole", sys_write(p[1], area + BUF, 10));
	sys_write(p[1], "abcdefgh", 8);
	show("pipe: read 8 into 3 before the hole", sys_read(p[0], area + BUF - 3, 8));
	show("pipe: read the rest", sys_read(p[0], chunk, sizeof chunk));
	sys_close(p[0]);
	sys_close(p[1]);
	return 0;
}
