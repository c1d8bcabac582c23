/*
 * devshm.c - POSIX shared memory as glibc makes it: files in /dev/shm (a sticky,
 * world-writable tmpfs directory), created exclusively, sized with ftruncate, mapped
 * MAP_SHARED by a parent and its fork child, which see each other's stores; a
 * semaphore's file made under a temporary name and linked to its own (sem_open's
 * way), found by a directory listing, unlinked; chdir into /dev/shm and getcwd; the
 * errors (EEXIST, ENOENT, ENOTDIR). Only the program's own names are looked at: the
 * host's /dev/shm, where it runs natively, may hold others.
 */
#include "rt.h"

#define SYS_link	9
#define SYS_chdir	12
#define SYS_getcwd	183
#define SYS_getdents64	220
#define SYS_statfs64	268
#define SYS_mkdir	39
#define SYS_rmdir	40

#define O_CREAT_	0100
#define O_EXCL_		0200
#define O_RDWR_		2
#define O_DIRECTORY_	0200000
#define PROT_RW		3
#define MAP_SHARED_	1
#define TMPFS_MAGIC	0x01021994

static const char *res(long r)
{
	static char buf[32];
	switch (r) {
	case -2: return "ENOENT";
	case -17: return "EEXIST";
	case -20: return "ENOTDIR";
	case -21: return "EISDIR";
	default:
		snprintf(buf, sizeof buf, "%ld", r);
		return buf;
	}
}

/* Whether the directory /dev/shm lists `name`. */
static int listed(const char *name)
{
	char buf[4096];
	int fd = (int)sys_open("/dev/shm", O_DIRECTORY_, 0);
	if (fd < 0)
		return fd;
	int found = 0;
	long n;
	while ((n = rt_syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0) {
		for (long off = 0; off < n;) {
			unsigned short reclen = *(unsigned short *)(buf + off + 16);
			if (!strcmp(buf + off + 19, name))
				found = 1;
			off += reclen;
		}
	}
	sys_close(fd);
	return found;
}

int main(void)
{
	char name[64], path[96], tmp[96];
	snprintf(name, sizeof name, "morph-devshm-%ld", sys_getpid());
	snprintf(path, sizeof path, "/dev/shm/%s", name);
	snprintf(tmp, sizeof tmp, "/dev/shm/%s.tmp", name);

	struct stat64 st;
	long r = sys_stat64("/dev/shm", &st);
	printf("stat /dev/shm: %s, directory %s, mode %o\n", res(r), (st.st_mode & 0170000) == 0040000 ? "yes" : "no",
	       st.st_mode & 07777);
	unsigned statfs[32];
	r = rt_syscall(SYS_statfs64, "/dev/shm", 84, statfs);
	printf("statfs: %s, tmpfs %s\n", res(r), statfs[0] == TMPFS_MAGIC ? "yes" : "no");

	int fd = (int)sys_open(path, O_CREAT_ | O_EXCL_ | O_RDWR_, 0600);
	printf("create: %s\n", fd >= 0 ? "ok" : res(fd));
	printf("create again: %s\n", res(sys_open(path, O_CREAT_ | O_EXCL_ | O_RDWR_, 0600)));
	printf("ftruncate: %s\n", res(sys_ftruncate64(fd, 8192)));
	volatile unsigned *m = (volatile unsigned *)sys_mmap2(0, 8192, PROT_RW, MAP_SHARED_, fd, 0);
	if (sys_failed((long)m)) {
		printf("mmap: %s\n", res((long)m));
		return 1;
	}
	m[0] = 1;
	fflush_stdout();
	long pid = sys_fork();
	if (pid == 0) {
		/* The child sees the parent's store and answers through the same page. */
		m[1] = m[0] + 41;
		m[1024] = 7;
		_exit(0);
	}
	int status = 0;
	sys_waitpid((int)pid, &status, 0);
	printf("child answered: %u and %u, status %d\n", m[1], m[1024], status);
	/* A file opened again by its name maps the same memory. */
	int fd2 = (int)sys_open(path, O_RDWR_, 0);
	unsigned word = 0;
	sys_pread64(fd2, &word, 4, 4);
	printf("read through the name: %u\n", word);
	sys_close(fd2);
	sys_close(fd);

	/* sem_open's way: a temporary name, linked to the final one, then unlinked. */
	char sem[96];
	snprintf(sem, sizeof sem, "/dev/shm/sem.%s", name);
	fd = (int)sys_open(tmp, O_CREAT_ | O_EXCL_ | O_RDWR_, 0600);
	sys_write(fd, "semaphore-bytes!", 16);
	sys_close(fd);
	printf("link: %s\n", res(rt_syscall(SYS_link, tmp, sem)));
	printf("link again: %s\n", res(rt_syscall(SYS_link, tmp, sem)));
	printf("unlink temporary: %s\n", res(sys_unlink(tmp)));
	char semname[96];
	snprintf(semname, sizeof semname, "sem.%s", name);
	char tmpname[96];
	snprintf(tmpname, sizeof tmpname, "%s.tmp", name);
	printf("listed: %d %d, temporary %d\n", listed(name), listed(semname), listed(tmpname));

	char cwd[256];
	printf("chdir: %s\n", res(rt_syscall(SYS_chdir, "/dev/shm")));
	r = rt_syscall(SYS_getcwd, cwd, sizeof cwd);
	printf("getcwd: %s\n", r > 0 ? cwd : res(r));
	printf("open by relative name: %s\n", (fd = (int)sys_open(semname, 0, 0)) >= 0 ? "ok" : res(fd));
	sys_close(fd);
	rt_syscall(SYS_chdir, "/");

	snprintf(cwd, sizeof cwd, "%s/x", path);
	printf("file as a directory: %s\n", res(sys_open(cwd, 0, 0)));
	printf("unlink: %s\n", res(sys_unlink(path)));
	printf("unlink semaphore: %s\n", res(sys_unlink(sem)));
	printf("unlink again: %s\n", res(sys_unlink(path)));
	printf("listed after: %d\n", listed(name));
	printf("semaphore listed after: %d\n", listed(semname));
	char dir[96];
	snprintf(dir, sizeof dir, "/dev/shm/%s.d", name);
	printf("mkdir: %s\n", res(rt_syscall(SYS_mkdir, dir, 0700)));
	printf("rmdir: %s\n", res(rt_syscall(SYS_rmdir, dir)));
	return 0;
}
