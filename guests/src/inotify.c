/*
 * inotify.c - inotify: the events of a watched directory (create, modify, close,
 * attributes, moves with one cookie, delete, a subdirectory's IN_ISDIR), a watched
 * file's own events and IN_DELETE_SELF/IN_IGNORED, IN_DONT_FOLLOW on a symbolic link,
 * IN_ONLYDIR, IN_MASK_ADD, IN_ONESHOT, rm_watch's IN_IGNORED, readiness through poll,
 * a blocking read woken by another process's write, and the errors in Linux's order.
 * Watch descriptors are printed relative to the first (the host's numbering starts
 * at 1 per instance, as morph's does).
 */
#include "rt.h"

#define SYS_mkdir_ 39
#define SYS_rmdir_ 40
#define SYS_rename_ 38
#define SYS_symlink_ 83
#define SYS_chmod_ 15
#define SYS_inotify_init 291
#define SYS_inotify_add_watch 292
#define SYS_inotify_rm_watch 293
#define SYS_inotify_init1 332

#define IN_ACCESS 0x1
#define IN_MODIFY 0x2
#define IN_ATTRIB 0x4
#define IN_CLOSE_WRITE 0x8
#define IN_CLOSE_NOWRITE 0x10
#define IN_OPEN 0x20
#define IN_MOVED_FROM 0x40
#define IN_MOVED_TO 0x80
#define IN_CREATE 0x100
#define IN_DELETE 0x200
#define IN_DELETE_SELF 0x400
#define IN_MOVE_SELF 0x800
#define IN_IGNORED 0x8000
#define IN_ONLYDIR 0x01000000
#define IN_DONT_FOLLOW 0x02000000
#define IN_MASK_CREATE 0x10000000
#define IN_MASK_ADD 0x20000000
#define IN_ISDIR 0x40000000
#define IN_ONESHOT 0x80000000u
#define IN_NONBLOCK 04000
#define IN_CLOEXEC 02000000

static const char *res(long r)
{
	static char buf[24];
	switch (r) {
	case -2: return "ENOENT";
	case -9: return "EBADF";
	case -11: return "EAGAIN";
	case -14: return "EFAULT";
	case -17: return "EEXIST";
	case -20: return "ENOTDIR";
	case -22: return "EINVAL";
	default: snprintf(buf, sizeof buf, "%ld", r); return buf;
	}
}

static int base_wd;

static void mask_names(uint32_t m)
{
	static const struct { uint32_t bit; const char *name; } names[] = {
		{ IN_ACCESS, "ACCESS" }, { IN_MODIFY, "MODIFY" }, { IN_ATTRIB, "ATTRIB" },
		{ IN_CLOSE_WRITE, "CLOSE_WRITE" }, { IN_CLOSE_NOWRITE, "CLOSE_NOWRITE" }, { IN_OPEN, "OPEN" },
		{ IN_MOVED_FROM, "MOVED_FROM" }, { IN_MOVED_TO, "MOVED_TO" }, { IN_CREATE, "CREATE" },
		{ IN_DELETE, "DELETE" }, { IN_DELETE_SELF, "DELETE_SELF" }, { IN_MOVE_SELF, "MOVE_SELF" },
		{ IN_IGNORED, "IGNORED" }, { IN_ISDIR, "ISDIR" },
	};
	int first = 1;
	for (unsigned i = 0; i < sizeof names / sizeof names[0]; i++)
		if (m & names[i].bit) {
			printf("%s%s", first ? "" : "|", names[i].name);
			first = 0;
		}
	if (first)
		printf("%#x", m);
}

/* Reads and prints every queued event (non-blocking instance). */
static void drain(const char *what, int fd)
{
	char buf[4096] __attribute__((aligned(4)));
	uint32_t last_cookie = 0;
	printf("%s:\n", what);
	for (;;) {
		long n = sys_read(fd, buf, sizeof buf);
		if (n <= 0) {
			if (n != -11)
				printf("  read: %s\n", res(n));
			return;
		}
		for (long off = 0; off < n;) {
			int32_t wd;
			uint32_t mask, cookie, len;
			memcpy(&wd, buf + off, 4);
			memcpy(&mask, buf + off + 4, 4);
			memcpy(&cookie, buf + off + 8, 4);
			memcpy(&len, buf + off + 12, 4);
			printf("  wd +%d ", wd - base_wd);
			mask_names(mask);
			if (len)
				printf(" \"%s\"", buf + off + 16);
			if (cookie)
				printf(" cookie %s", cookie == last_cookie ? "same as before" : "new");
			printf("\n");
			if (cookie)
				last_cookie = cookie;
			off += 16 + len;
		}
	}
}

static long add(int fd, const char *path, uint32_t mask)
{
	return rt_syscall(SYS_inotify_add_watch, fd, path, mask);
}

static void touch(const char *path, const char *text)
{
	int f = (int)sys_open(path, 01 | 0100 | 01000, 0644); /* O_WRONLY|O_CREAT|O_TRUNC */
	if (text)
		sys_write(f, text, strlen(text));
	sys_close(f);
}

int main(void)
{
	rt_syscall(SYS_mkdir_, "d", 0755);
	int fd = (int)rt_syscall(SYS_inotify_init1, IN_NONBLOCK | IN_CLOEXEC);
	printf("init1: %s, close-on-exec %ld\n", fd >= 0 ? "ok" : res(fd), sys_fcntl(fd, 1, 0));
	long wd = add(fd, "d", IN_CREATE | IN_MODIFY | IN_CLOSE_WRITE | IN_ATTRIB | IN_MOVED_FROM | IN_MOVED_TO |
				      IN_DELETE | IN_DELETE_SELF);
	base_wd = (int)wd;
	printf("watch d: %s\n", wd > 0 ? "ok" : res(wd));
	drain("nothing yet", fd);
	touch("d/a", "hello");
	rt_syscall(SYS_chmod_, "d/a", 0600);
	rt_syscall(SYS_rename_, "d/a", "d/b");
	rt_syscall(SYS_mkdir_, "d/sub", 0755);
	rt_syscall(SYS_rmdir_, "d/sub");
	sys_unlink("d/b");
	drain("create, write, chmod, rename, mkdir, rmdir, unlink", fd);

	/* poll readiness */
	struct pollfd pf = { fd, 1, 0 };
	printf("poll, empty: %ld\n", sys_poll(&pf, 1, 0));
	touch("d/c", 0);
	pf.revents = 0;
	long r = sys_poll(&pf, 1, 0);
	printf("poll, an event queued: %ld revents %#x\n", r, pf.revents);
	drain("create and close", fd);

	/* a file's own watch; the same path again gives the same wd */
	touch("f", "x");
	long wf = add(fd, "f", IN_MODIFY | IN_DELETE_SELF);
	long wf2 = add(fd, "f", IN_ATTRIB);
	printf("watch f: +%ld, again +%ld (same: %s)\n", wf - base_wd, wf2 - base_wd, wf == wf2 ? "yes" : "no");
	printf("IN_MASK_CREATE on a watched file: %s\n", res(add(fd, "f", IN_MODIFY | IN_MASK_CREATE)));
	printf("IN_MASK_ADD: %s\n", add(fd, "f", IN_MODIFY | IN_MASK_ADD) == wf ? "the same wd" : "other");
	touch("f", "yy");
	rt_syscall(SYS_chmod_, "f", 0600);
	sys_unlink("f");
	drain("write, chmod, unlink of a watched file", fd);

	/* symbolic links */
	touch("target", "t");
	rt_syscall(SYS_symlink_, "target", "link");
	long wl = add(fd, "link", IN_ATTRIB | IN_ONESHOT);
	long wn = add(fd, "link", IN_ATTRIB | IN_DONT_FOLLOW);
	printf("watch link: +%ld, IN_DONT_FOLLOW: %s\n", wl - base_wd, wn != wl && wn > 0 ? "another wd" : res(wn));
	rt_syscall(SYS_chmod_, "link", 0600); /* the target's attributes */
	rt_syscall(SYS_chmod_, "link", 0644); /* oneshot: not reported again */
	drain("chmod through the link, twice (the first watch is IN_ONESHOT)", fd);
	printf("rm_watch of the link's own watch: %s\n", res(rt_syscall(SYS_inotify_rm_watch, fd, wn)));
	printf("rm_watch again: %s\n", res(rt_syscall(SYS_inotify_rm_watch, fd, wn)));
	drain("after rm_watch", fd);

	/* a blocking read, woken by another process's change */
	int bfd = (int)rt_syscall(SYS_inotify_init);
	long bw = add(bfd, "d", IN_CREATE);
	fflush_stdout();
	long pid = sys_fork();
	if (pid == 0) {
		struct timespec ts = { 0, 20000000 };
		sys_nanosleep(&ts, 0);
		touch("d/late", 0);
		_exit(0);
	}
	char ev[256] __attribute__((aligned(4)));
	long n = sys_read(bfd, ev, sizeof ev);
	uint32_t mask;
	memcpy(&mask, ev + 4, 4);
	printf("blocking read: %s, ", n > 16 ? "an event" : res(n));
	mask_names(mask);
	printf(" \"%s\" (wd %s)\n", ev + 16, *(int32_t *)ev == (int32_t)bw ? "matches" : "differs");
	int st;
	sys_waitpid((int)pid, &st, 0);

	/* errors */
	printf("init1 bad flags: %s\n", res(rt_syscall(SYS_inotify_init1, 1)));
	printf("add_watch missing path: %s\n", res(add(fd, "nowhere", IN_CREATE)));
	printf("add_watch mask 0: %s\n", res(add(fd, "d", 0)));
	printf("add_watch MASK_ADD|MASK_CREATE: %s\n", res(add(fd, "d", IN_CREATE | IN_MASK_ADD | IN_MASK_CREATE)));
	printf("add_watch bad fd, missing path: %s\n", res(add(999, "nowhere", IN_CREATE)));
	printf("add_watch not an instance: %s\n", res(add(1, "d", IN_CREATE)));
	printf("add_watch IN_ONLYDIR on a file: %s\n", res(add(fd, "target", IN_ATTRIB | IN_ONLYDIR)));
	printf("add_watch IN_ONLYDIR on a directory: %s\n", add(fd, "d", IN_ATTRIB | IN_ONLYDIR) == base_wd ? "the dir's wd" : "other");
	printf("add_watch bad path pointer: %s\n", res(rt_syscall(SYS_inotify_add_watch, fd, (void *)16, IN_CREATE)));
	printf("rm_watch unknown wd: %s\n", res(rt_syscall(SYS_inotify_rm_watch, fd, 12345)));
	printf("rm_watch not an instance: %s\n", res(rt_syscall(SYS_inotify_rm_watch, 1, base_wd)));
	printf("rm_watch bad fd: %s\n", res(rt_syscall(SYS_inotify_rm_watch, 999, 1)));
	drain("left over", fd);

	/* cleaning up: the directory's own deletion */
	sys_unlink("d/c");
	sys_unlink("d/late");
	sys_unlink("link");
	sys_unlink("target");
	rt_syscall(SYS_rmdir_, "d");
	drain("rmdir of the watched directory", fd);
	sys_close(fd);
	sys_close(bfd);
	return 0;
}
