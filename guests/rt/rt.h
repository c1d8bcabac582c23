/*
 * rt.h - interface of the tiny freestanding runtime used by the guest
 * test programs (see guests/README.md).
 *
 * Conventions:
 *  - sys_*() wrappers return the raw kernel result: >= 0 on success,
 *    -errno on failure (there is no global errno).
 *  - printf() writes to a buffer for fd 1 that is flushed when full and
 *    at exit(); eprintf() writes to fd 2 unbuffered.
 *  - Only what the programs need is provided; nothing here is a full libc.
 */
#ifndef RT_H
#define RT_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* ---- system call numbers (Linux i386) ---------------------------------- */
#define SYS_exit	  1
#define SYS_fork	  2
#define SYS_read	  3
#define SYS_write	  4
#define SYS_open	  5
#define SYS_close	  6
#define SYS_waitpid	  7
#define SYS_unlink	 10
#define SYS_lseek	 19
#define SYS_getpid	 20
#define SYS_kill	 37
#define SYS_dup		 41
#define SYS_pipe	 42
#define SYS_brk		 45
#define SYS_ioctl	 54
#define SYS_fcntl	 55
#define SYS_umask	 60
#define SYS_dup2	 63
#define SYS_munmap	 91
#define SYS_socketcall	102
#define SYS_uname	122
#define SYS_mprotect	125
#define SYS__llseek	140
#define SYS_readv	145
#define SYS_writev	146
#define SYS_nanosleep	162
#define SYS_mremap	163
#define SYS_poll	168
#define SYS_pread64	180
#define SYS_pwrite64	181
#define SYS_mmap2	192
#define SYS_ftruncate64	194
#define SYS_stat64	195
#define SYS_fstat64	197
#define SYS_getuid32	199
#define SYS_getgid32	200
#define SYS_geteuid32	201
#define SYS_getegid32	202
#define SYS_exit_group	252
#define SYS_socket	359
#define SYS_socketpair	360
#define SYS_bind	361
#define SYS_connect	362
#define SYS_listen	363
#define SYS_accept4	364
#define SYS_getsockopt	365
#define SYS_setsockopt	366
#define SYS_getsockname	367
#define SYS_getpeername	368
#define SYS_sendto	369
#define SYS_sendmsg	370
#define SYS_recvfrom	371
#define SYS_recvmsg	372
#define SYS_shutdown	373

/* ---- constants ----------------------------------------------------------- */
#define O_RDONLY	00
#define O_WRONLY	01
#define O_RDWR		02
#define O_CREAT		0100
#define O_EXCL		0200
#define O_TRUNC		01000
#define O_APPEND	02000
#define O_LARGEFILE	0100000

#define SEEK_SET	0
#define SEEK_CUR	1
#define SEEK_END	2

#define PROT_NONE	0
#define PROT_READ	1
#define PROT_WRITE	2
#define PROT_EXEC	4
#define MAP_SHARED	0x01
#define MAP_PRIVATE	0x02
#define MAP_FIXED	0x10
#define MAP_ANONYMOUS	0x20
#define MAP_FAILED	((void *)-1)
#define MREMAP_MAYMOVE	1

#define ENOENT		2
#define EBADF		9
#define ENOMEM		12
#define EFAULT		14
#define EEXIST		17
#define EINVAL		22
#define ENOSYS		38
#define EAGAIN		11
#define EPIPE		32
#define EAFNOSUPPORT	97
#define EADDRNOTAVAIL	99
#define ENETUNREACH	101
#define ECONNREFUSED	111
#define EINPROGRESS	115

/* fcntl, ioctl, poll, wait */
#define F_GETFL		3
#define F_SETFL		4
#define O_NONBLOCK	04000
#define FIONBIO		0x5421
#define POLLIN		0x001
#define POLLOUT		0x004
#define POLLERR		0x008
#define POLLHUP		0x010

/* sockets */
#define AF_UNSPEC	0
#define AF_UNIX		1
#define AF_INET		2
#define AF_INET6	10
#define AF_NETLINK	16
#define AF_PACKET	17
#define SOCK_STREAM	1
#define SOCK_DGRAM	2
#define SOCK_RAW	3
#define SOCK_NONBLOCK	04000
#define SOCK_CLOEXEC	02000000
#define SOL_SOCKET	1
#define SO_TYPE		3
#define SO_ERROR	4
#define SO_RCVTIMEO	20
#define SCM_RIGHTS	1
#define MSG_PEEK	0x2
#define MSG_TRUNC	0x20
#define MSG_DONTWAIT	0x40
#define MSG_WAITALL	0x100
#define MSG_NOSIGNAL	0x4000
#define SHUT_RD		0
#define SHUT_WR		1
/* socketcall(2) sub-calls */
#define SC_SOCKET	1
#define SC_BIND		2
#define SC_CONNECT	3
#define SC_LISTEN	4
#define SC_ACCEPT	5
#define SC_GETSOCKNAME	6
#define SC_GETPEERNAME	7
#define SC_SOCKETPAIR	8
#define SC_SEND		9
#define SC_RECV		10
#define SC_SENDTO	11
#define SC_RECVFROM	12
#define SC_SHUTDOWN	13
#define SC_SETSOCKOPT	14
#define SC_GETSOCKOPT	15
#define SC_SENDMSG	16
#define SC_RECVMSG	17
#define SC_ACCEPT4	18

/* auxiliary vector entry types */
#define AT_NULL		0
#define AT_PHDR		3
#define AT_PHENT	4
#define AT_PHNUM	5
#define AT_PAGESZ	6
#define AT_BASE		7
#define AT_FLAGS	8
#define AT_ENTRY	9
#define AT_UID		11
#define AT_EUID		12
#define AT_GID		13
#define AT_EGID		14
#define AT_PLATFORM	15
#define AT_HWCAP	16
#define AT_CLKTCK	17
#define AT_SECURE	23
#define AT_RANDOM	25
#define AT_EXECFN	31

/* x86 EFLAGS bits */
#define FL_CF	0x0001
#define FL_PF	0x0004
#define FL_AF	0x0010
#define FL_ZF	0x0040
#define FL_SF	0x0080
#define FL_DF	0x0400
#define FL_OF	0x0800
#define FL_ARITH (FL_CF | FL_PF | FL_AF | FL_ZF | FL_SF | FL_OF)

/* ---- kernel structures (i386 layout) ---------------------------------- */
struct iovec {
	void *iov_base;
	size_t iov_len;
};

struct stat64 {
	unsigned long long st_dev;
	unsigned char __pad0[4];
	unsigned long __st_ino;
	unsigned int st_mode;
	unsigned int st_nlink;
	unsigned long st_uid;
	unsigned long st_gid;
	unsigned long long st_rdev;
	unsigned char __pad3[4];
	long long st_size;
	unsigned long st_blksize;
	unsigned long long st_blocks;
	unsigned long st_atime_, st_atime_nsec;
	unsigned long st_mtime_, st_mtime_nsec;
	unsigned long st_ctime_, st_ctime_nsec;
	unsigned long long st_ino;
};

struct sockaddr {
	uint16_t sa_family;
	char sa_data[14];
};

struct sockaddr_in {
	uint16_t sin_family;
	uint16_t sin_port;		/* network byte order */
	uint32_t sin_addr;		/* network byte order */
	unsigned char sin_zero[8];
};

struct sockaddr_in6 {
	uint16_t sin6_family;
	uint16_t sin6_port;
	uint32_t sin6_flowinfo;
	unsigned char sin6_addr[16];
	uint32_t sin6_scope_id;
};

struct sockaddr_un {
	uint16_t sun_family;
	char sun_path[108];
};

struct msghdr {
	void *msg_name;
	int msg_namelen;
	struct iovec *msg_iov;
	size_t msg_iovlen;
	void *msg_control;
	size_t msg_controllen;
	unsigned msg_flags;
};

struct cmsghdr {
	size_t cmsg_len;
	int cmsg_level;
	int cmsg_type;
	/* data follows, aligned to 4 */
};

struct pollfd {
	int fd;
	short events;
	short revents;
};

struct timespec {
	long tv_sec;
	long tv_nsec;
};

struct timeval {
	long tv_sec;
	long tv_usec;
};

static inline uint16_t htons(uint16_t v) { return (uint16_t)((v << 8) | (v >> 8)); }
static inline uint16_t ntohs(uint16_t v) { return htons(v); }
static inline uint32_t htonl(uint32_t v)
{ return (v >> 24) | ((v >> 8) & 0xff00) | ((v << 8) & 0xff0000) | (v << 24); }

struct utsname {
	char sysname[65], nodename[65], release[65];
	char version[65], machine[65], domainname[65];
};

/* ---- process state set up by the start code ---------------------------- */
extern char **environ;
extern uint32_t *__rt_auxv;		/* pairs of (type, value), AT_NULL-terminated */
extern uint32_t *__rt_initial_sp;	/* %esp as the kernel handed it to _start */
uint32_t getauxval(uint32_t type);	/* 0 when absent */
int rt_hasauxval(uint32_t type);

/* ---- system calls ---------------------------------------------------------- */
long rt_syscall(long nr, ...);

static inline long sys_read(int fd, void *buf, size_t n) { return rt_syscall(SYS_read, fd, buf, n); }
static inline long sys_write(int fd, const void *buf, size_t n) { return rt_syscall(SYS_write, fd, buf, n); }
static inline long sys_open(const char *path, int flags, int mode) { return rt_syscall(SYS_open, path, flags, mode); }
static inline long sys_close(int fd) { return rt_syscall(SYS_close, fd); }
static inline long sys_unlink(const char *path) { return rt_syscall(SYS_unlink, path); }
static inline long sys_lseek(int fd, long off, int whence) { return rt_syscall(SYS_lseek, fd, off, whence); }
static inline long sys_getpid(void) { return rt_syscall(SYS_getpid); }
static inline long sys_dup(int fd) { return rt_syscall(SYS_dup, fd); }
static inline long sys_dup2(int fd, int nfd) { return rt_syscall(SYS_dup2, fd, nfd); }
static inline long sys_brk(void *addr) { return rt_syscall(SYS_brk, addr); }
static inline long sys_umask(int mask) { return rt_syscall(SYS_umask, mask); }
static inline long sys_munmap(void *addr, size_t len) { return rt_syscall(SYS_munmap, addr, len); }
static inline long sys_uname(struct utsname *u) { return rt_syscall(SYS_uname, u); }
static inline long sys_mprotect(void *addr, size_t len, int prot) { return rt_syscall(SYS_mprotect, addr, len, prot); }
static inline long sys_llseek(int fd, unsigned long hi, unsigned long lo, long long *res, int whence)
{ return rt_syscall(SYS__llseek, fd, hi, lo, res, whence); }
static inline long sys_readv(int fd, const struct iovec *iov, int cnt) { return rt_syscall(SYS_readv, fd, iov, cnt); }
static inline long sys_writev(int fd, const struct iovec *iov, int cnt) { return rt_syscall(SYS_writev, fd, iov, cnt); }
static inline long sys_pread64(int fd, void *buf, size_t n, long long off)
{ return rt_syscall(SYS_pread64, fd, buf, n, (uint32_t)off, (uint32_t)((unsigned long long)off >> 32)); }
static inline long sys_pwrite64(int fd, const void *buf, size_t n, long long off)
{ return rt_syscall(SYS_pwrite64, fd, buf, n, (uint32_t)off, (uint32_t)((unsigned long long)off >> 32)); }
static inline long sys_ftruncate64(int fd, long long len)
{ return rt_syscall(SYS_ftruncate64, fd, (uint32_t)len, (uint32_t)((unsigned long long)len >> 32)); }
static inline long sys_stat64(const char *path, struct stat64 *st) { return rt_syscall(SYS_stat64, path, st); }
static inline long sys_fstat64(int fd, struct stat64 *st) { return rt_syscall(SYS_fstat64, fd, st); }
static inline long sys_getuid(void) { return rt_syscall(SYS_getuid32); }
static inline long sys_getgid(void) { return rt_syscall(SYS_getgid32); }
static inline long sys_geteuid(void) { return rt_syscall(SYS_geteuid32); }
static inline long sys_getegid(void) { return rt_syscall(SYS_getegid32); }
static inline long sys_fork(void) { return rt_syscall(SYS_fork); }
static inline long sys_waitpid(int pid, int *status, int options) { return rt_syscall(SYS_waitpid, pid, status, options); }
static inline long sys_kill(int pid, int sig) { return rt_syscall(SYS_kill, pid, sig); }
static inline long sys_pipe(int fds[2]) { return rt_syscall(SYS_pipe, fds); }
static inline long sys_fcntl(int fd, int cmd, long arg) { return rt_syscall(SYS_fcntl, fd, cmd, arg); }
static inline long sys_ioctl(int fd, unsigned long req, void *arg) { return rt_syscall(SYS_ioctl, fd, req, arg); }
static inline long sys_poll(struct pollfd *fds, unsigned n, int timeout_ms) { return rt_syscall(SYS_poll, fds, n, timeout_ms); }
static inline long sys_nanosleep(const struct timespec *req, struct timespec *rem) { return rt_syscall(SYS_nanosleep, req, rem); }
/* the direct socket calls (Linux 4.3+) */
static inline long sys_socket(int domain, int type, int proto) { return rt_syscall(SYS_socket, domain, type, proto); }
static inline long sys_socketpair(int domain, int type, int proto, int sv[2]) { return rt_syscall(SYS_socketpair, domain, type, proto, sv); }
static inline long sys_bind(int fd, const void *addr, int len) { return rt_syscall(SYS_bind, fd, addr, len); }
static inline long sys_connect(int fd, const void *addr, int len) { return rt_syscall(SYS_connect, fd, addr, len); }
static inline long sys_listen(int fd, int backlog) { return rt_syscall(SYS_listen, fd, backlog); }
static inline long sys_accept4(int fd, void *addr, int *len, int flags) { return rt_syscall(SYS_accept4, fd, addr, len, flags); }
static inline long sys_getsockopt(int fd, int level, int name, void *val, int *len) { return rt_syscall(SYS_getsockopt, fd, level, name, val, len); }
static inline long sys_setsockopt(int fd, int level, int name, const void *val, int len) { return rt_syscall(SYS_setsockopt, fd, level, name, val, len); }
static inline long sys_getsockname(int fd, void *addr, int *len) { return rt_syscall(SYS_getsockname, fd, addr, len); }
static inline long sys_getpeername(int fd, void *addr, int *len) { return rt_syscall(SYS_getpeername, fd, addr, len); }
static inline long sys_sendto(int fd, const void *buf, size_t n, int flags, const void *addr, int len)
{ return rt_syscall(SYS_sendto, fd, buf, n, flags, addr, len); }
static inline long sys_recvfrom(int fd, void *buf, size_t n, int flags, void *addr, int *len)
{ return rt_syscall(SYS_recvfrom, fd, buf, n, flags, addr, len); }
static inline long sys_sendmsg(int fd, const struct msghdr *msg, int flags) { return rt_syscall(SYS_sendmsg, fd, msg, flags); }
static inline long sys_recvmsg(int fd, struct msghdr *msg, int flags) { return rt_syscall(SYS_recvmsg, fd, msg, flags); }
static inline long sys_shutdown(int fd, int how) { return rt_syscall(SYS_shutdown, fd, how); }
/* socketcall(2): call is an SC_* number, args the call's arguments as longs */
static inline long sys_socketcall(int call, unsigned long *args) { return rt_syscall(SYS_socketcall, call, args); }
/* mmap2: offset is in 4096-byte pages; returns the address or -errno */
static inline long sys_mmap2(void *addr, size_t len, int prot, int flags, int fd, long pgoff)
{ return rt_syscall(SYS_mmap2, addr, len, prot, flags, fd, pgoff); }
static inline long sys_mremap(void *old, size_t oldlen, size_t newlen, int flags, void *newaddr)
{ return rt_syscall(SYS_mremap, old, oldlen, newlen, flags, newaddr); }
/* true when a raw result is an error code */
static inline int sys_failed(long r) { return (unsigned long)r >= (unsigned long)-4095; }

__attribute__((noreturn)) void exit(int status);	/* flushes stdout */
__attribute__((noreturn)) void _exit(int status);	/* exit_group, no flush */
/* A private anonymous read/write/execute mapping of len bytes at at (MAP_FIXED
 * if fixed, else a hint); prints the error and exits 1 if mmap2 fails. */
void *map_rwx(void *at, size_t len, int fixed);

/* ---- strings and memory ----------------------------------------------------- */
void *memcpy(void *dst, const void *src, size_t n);
void *memmove(void *dst, const void *src, size_t n);
void *memset(void *dst, int c, size_t n);
int memcmp(const void *a, const void *b, size_t n);
size_t strlen(const char *s);
int strcmp(const char *a, const char *b);
int strncmp(const char *a, const char *b, size_t n);
char *strcpy(char *dst, const char *src);
char *strchr(const char *s, int c);
long strtol(const char *s, char **end, int base);
unsigned long strtoul(const char *s, char **end, int base);
int atoi(const char *s);

/* ---- formatted output ---------------------------------------------------------- */
int printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int eprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int dprintf(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int snprintf(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int vsnprintf(char *buf, size_t size, const char *fmt, va_list ap);
int vprintf(const char *fmt, va_list ap);
int puts(const char *s);		/* string plus newline, to stdout */
int putchar(int c);
void fflush_stdout(void);
/* write a whole string with a raw write(2), bypassing the stdout buffer */
void raw_puts(int fd, const char *s);

/* ---- memory allocation ---------------------------------------------------------- */
void *malloc(size_t n);
void free(void *p);
void *calloc(size_t n, size_t size);
void *realloc(void *p, size_t n);

/* ---- signals ---------------------------------------------------------------------- */
/* The kernel's i386 struct sigaction (rt_sigaction's argument), and the restorers glibc
 * installs: restore_rt (rt_sigreturn, for SA_SIGINFO handlers) and restore_legacy
 * (sigreturn, after popping the signal number). */
struct ksigaction {
	void *handler;
	uint32_t flags;
	void *restorer;
	uint32_t mask[2];
};
void restore_rt(void);
void restore_legacy(void);

/* ---- test helpers ---------------------------------------------------------------- */
/* "cPaZsO"-style rendering of the arithmetic flags in fl: upper case = set,
 * lower case = clear, '-' = not defined (bit absent from mask).  Returns one
 * of a small ring of static buffers, so a few may be used in one printf. */
const char *flagstr(uint32_t fl, uint32_t defined);
/* hex of n bytes, most significant (highest address) first */
const char *hexle(const void *p, size_t n);
/* "ok" for a system call result that is not an error, else the errno's name
 * (EINVAL, EBADF, ENOMEM) or the raw result */
const char *sys_err(long r);
const char *errno_name(long r);	/* "ENOENT" for -2; 0 for a number that is no errno */
const char *errno_str(long r);	/* errno_name, else the number (eight results live at once) */
/* hex of n bytes in memory order, space separated */
void print_bytes(const void *p, size_t n);
/* simple 32-bit FNV-1a checksum */
uint32_t fnv1a(const void *p, size_t n);

#endif
