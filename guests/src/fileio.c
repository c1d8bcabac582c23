/*
 * fileio.c - file system calls on a scratch file in the current
 * directory (argv[1], default "fileio.tmp"): open/creat with mode and
 * umask, write, read, lseek (SEEK_SET/CUR/END, holes, EOF), _llseek
 * (including an offset beyond 2 GiB), fstat64/stat64 (size and mode
 * only), O_APPEND, readv/writev, pread64/pwrite64, ftruncate64, dup with
 * its shared offset, reopening read-only, and the error codes of a few
 * failing calls (ENOENT, EEXIST, EBADF...).
 *
 * File descriptor numbers are never printed (an emulator may hold some
 * descriptors of its own).  The file is unlinked at the end but the
 * result of that unlink is not printed; a harness should remove the file
 * if it is still there.
 */
#include "rt.h"

#define S_IFMT	0170000
#define S_IFREG	0100000
#define EOVERFLOW 75

static const char *err(long r)
{
	static char buf[32];

	const char *name;

	switch (r) {
	case -ENOENT: name = "ENOENT"; break;
	case -EBADF: name = "EBADF"; break;
	case -EEXIST: name = "EEXIST"; break;
	case -EINVAL: name = "EINVAL"; break;
	case -EOVERFLOW: name = "EOVERFLOW"; break;
	case -EFAULT: name = "EFAULT"; break;
	default: name = "?"; break;
	}
	snprintf(buf, sizeof(buf), "%s (errno %ld)", name, -r);
	return buf;
}

static void check(const char *what, long r)
{
	if (sys_failed(r)) {
		printf("%s failed: %s\n", what, err(r));
		exit(1);
	}
}

static void show(const char *label, const char *p, long n)
{
	long i;

	printf("%s (%ld): \"", label, n);
	for (i = 0; i < n; i++)
		putchar(p[i] >= 32 && p[i] < 127 ? p[i] : '.');
	printf("\"\n");
}

static long long file_size(int fd)
{
	struct stat64 st;

	check("fstat64", sys_fstat64(fd, &st));
	return st.st_size;
}

int main(int argc, char **argv)
{
	const char *name = argc > 1 ? argv[1] : "fileio.tmp";
	static char data[10000], buf[256];
	struct stat64 st;
	long fd, fd2, r;
	long long pos;
	int i;

	for (i = 0; i < (int)sizeof(data); i++)
		data[i] = (char)('a' + i % 26);
	sys_umask(022);
	sys_unlink(name);	/* leftover of an earlier run: result ignored */

	fd = sys_open(name, O_CREAT | O_TRUNC | O_RDWR, 0666);
	check("open", fd);
	printf("created\n");
	printf("write 10000: %ld\n", sys_write(fd, data, sizeof(data)));
	printf("lseek SET 100: %ld\n", sys_lseek(fd, 100, SEEK_SET));
	r = sys_read(fd, buf, 16);
	show("read 16", buf, r);
	printf("lseek CUR -50: %ld\n", sys_lseek(fd, -50, SEEK_CUR));
	r = sys_read(fd, buf, 5);
	show("read 5", buf, r);
	printf("lseek END -10: %ld\n", sys_lseek(fd, -10, SEEK_END));
	r = sys_read(fd, buf, 20);
	show("read 20 near the end", buf, r);
	printf("read at EOF: %ld\n", sys_read(fd, buf, 20));
	printf("lseek SET -1: %s\n", err(sys_lseek(fd, -1, SEEK_SET)));

	/* a hole: seek past the end and write */
	printf("lseek END +100: %ld\n", sys_lseek(fd, 100, SEEK_END));
	printf("write 4: %ld\n", sys_write(fd, "TAIL", 4));
	printf("size: %lld\n", file_size(fd));
	sys_lseek(fd, 9995, SEEK_SET);
	r = sys_read(fd, buf, 120);
	printf("read across the hole: %ld bytes, zeros in the hole: ", r);
	for (i = 5; i < 105 && buf[i] == 0; i++)
		;
	printf("%s\n", i == 105 ? "yes" : "no");
	show("tail", buf + 105, r - 105);

	/* _llseek */
	r = sys_llseek(fd, 0, 5000, &pos, SEEK_SET);
	printf("_llseek SET 5000: %ld, pos %lld\n", r, pos);
	r = sys_llseek(fd, 0xffffffff, (unsigned long)-1000, &pos, SEEK_CUR);
	printf("_llseek CUR -1000: %ld, pos %lld\n", r, pos);
	r = sys_llseek(fd, 0, 0, &pos, SEEK_END);
	printf("_llseek END 0: %ld, pos %lld\n", r, pos);
	r = sys_llseek(fd, 0, 0xc0000000, &pos, SEEK_SET);
	printf("_llseek SET 3 GiB: %ld, pos %lld\n", r, pos);
	/* (plain lseek here would not be portable: a 32-bit kernel says
	 * EOVERFLOW, a 64-bit kernel returns the truncated offset) */
	r = sys_llseek(fd, 0, 0, &pos, SEEK_SET);
	printf("_llseek back to 0: %ld, pos %lld\n", r, pos);

	/* stat */
	check("fstat64", sys_fstat64(fd, &st));
	printf("fstat64: size %lld, regular %s, mode %o\n", st.st_size,
	       (st.st_mode & S_IFMT) == S_IFREG ? "yes" : "no", st.st_mode & 07777);
	check("stat64", sys_stat64(name, &st));
	printf("stat64: size %lld\n", st.st_size);

	/* O_APPEND: writes go to the end whatever the offset */
	fd2 = sys_open(name, O_WRONLY | O_APPEND, 0);
	check("open O_APPEND", fd2);
	sys_lseek(fd2, 0, SEEK_SET);
	printf("append write: %ld\n", sys_write(fd2, "APPENDED", 8));
	printf("offset after append: %ld\n", sys_lseek(fd2, 0, SEEK_CUR));
	printf("size: %lld\n", file_size(fd));
	r = sys_pread64(fd, buf, 12, 10104);
	show("pread64 at 10104", buf, r);
	printf("offset unchanged by pread64: %ld\n", sys_lseek(fd, 0, SEEK_CUR));
	sys_close(fd2);

	/* writev / readv */
	{
		struct iovec wv[3] = { { "one,", 4 }, { "", 0 }, { "two,three.", 10 } };
		char b1[3], b2[5], b3[20];
		struct iovec rv[3] = { { b1, sizeof(b1) }, { b2, sizeof(b2) }, { b3, sizeof(b3) } };

		sys_lseek(fd, 20, SEEK_SET);
		printf("writev: %ld\n", sys_writev(fd, wv, 3));
		sys_lseek(fd, 18, SEEK_SET);
		r = sys_readv(fd, rv, 3);
		printf("readv: %ld\n", r);
		show("  iov0", b1, sizeof(b1));
		show("  iov1", b2, sizeof(b2));
		show("  iov2", b3, r - 8);
	}

	/* pwrite64 leaves the offset alone */
	sys_lseek(fd, 7, SEEK_SET);
	printf("pwrite64: %ld\n", sys_pwrite64(fd, "PW", 2, 50));
	printf("offset after pwrite64: %ld\n", sys_lseek(fd, 0, SEEK_CUR));

	/* dup shares the file offset */
	fd2 = sys_dup(fd);
	check("dup", fd2);
	sys_lseek(fd2, 40, SEEK_SET);
	printf("offset seen through the original: %ld\n", sys_lseek(fd, 0, SEEK_CUR));
	sys_close(fd2);

	/* ftruncate64 */
	r = sys_ftruncate64(fd, 60);
	printf("ftruncate64 60: %ld, size %lld\n", r, file_size(fd));
	r = sys_ftruncate64(fd, 70);
	printf("ftruncate64 70: %ld, size %lld\n", r, file_size(fd));
	printf("close: %ld\n", sys_close(fd));

	/* reopen read-only and read everything */
	fd = sys_open(name, O_RDONLY, 0);
	check("reopen", fd);
	r = sys_read(fd, buf, sizeof(buf));
	show("contents", buf, r);
	printf("checksum %08x\n", fnv1a(buf, (size_t)r));
	printf("write to read-only fd: %s\n", err(sys_write(fd, "x", 1)));
	sys_lseek(fd, 0, SEEK_SET);
	printf("read into an unmapped buffer: %s\n", err(sys_read(fd, (void *)16, 1)));
	sys_close(fd);

	/* failures */
	printf("open missing file: %s\n", err(sys_open("no-such-dir/no-such-file", O_RDONLY, 0)));
	printf("open missing, no O_CREAT: %s\n", err(sys_open("fileio-missing.tmp", O_RDWR, 0)));
	printf("stat64 missing: %s\n", err(sys_stat64("fileio-missing.tmp", &st)));
	printf("O_CREAT|O_EXCL on existing: %s\n", err(sys_open(name, O_CREAT | O_EXCL | O_RDWR, 0644)));
	printf("close bad fd: %s\n", err(sys_close(1000)));
	printf("read bad fd: %s\n", err(sys_read(1000, buf, 1)));

	sys_unlink(name);	/* result deliberately not printed */
	return 0;
}
