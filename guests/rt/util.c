/*
 * util.c - small helpers shared by the test programs (flag rendering,
 * hex output, checksums).
 */
#include "rt.h"

const char *flagstr(uint32_t fl, uint32_t defined)
{
	static char ring[8][8];
	static unsigned slot;
	static const struct { uint32_t bit; char name; } f[6] = {
		{ FL_CF, 'c' }, { FL_PF, 'p' }, { FL_AF, 'a' },
		{ FL_ZF, 'z' }, { FL_SF, 's' }, { FL_OF, 'o' },
	};
	char *s = ring[slot++ & 7];
	int i;

	for (i = 0; i < 6; i++) {
		if (!(defined & f[i].bit))
			s[i] = '-';
		else if (fl & f[i].bit)
			s[i] = (char)(f[i].name - 'a' + 'A');
		else
			s[i] = f[i].name;
	}
	s[6] = 0;
	return s;
}

const char *hexle(const void *p, size_t n)
{
	static char ring[4][80];
	static unsigned slot;
	static const char hex[] = "0123456789abcdef";
	const unsigned char *b = p;
	char *s = ring[slot++ & 3], *o = s;

	if (n > 39)
		n = 39;
	while (n--) {
		*o++ = hex[b[n] >> 4];
		*o++ = hex[b[n] & 15];
	}
	*o = 0;
	return s;
}

void print_bytes(const void *p, size_t n)
{
	const unsigned char *b = p;
	size_t i;

	for (i = 0; i < n; i++)
		printf(i ? " %02x" : "%02x", b[i]);
}

uint32_t fnv1a(const void *p, size_t n)
{
	const unsigned char *b = p;
	uint32_t h = 2166136261u;

	while (n--)
		h = (h ^ *b++) * 16777619u;
	return h;
}

/* Linux's errno names, by number (asm-generic/errno-base.h and errno.h). */
static const char *const errno_names[] = {
	0, "EPERM", "ENOENT", "ESRCH", "EINTR", "EIO", "ENXIO", "E2BIG", "ENOEXEC", "EBADF", "ECHILD",
	"EAGAIN", "ENOMEM", "EACCES", "EFAULT", "ENOTBLK", "EBUSY", "EEXIST", "EXDEV", "ENODEV",
	"ENOTDIR", "EISDIR", "EINVAL", "ENFILE", "EMFILE", "ENOTTY", "ETXTBSY", "EFBIG", "ENOSPC",
	"ESPIPE", "EROFS", "EMLINK", "EPIPE", "EDOM", "ERANGE", "EDEADLK", "ENAMETOOLONG", "ENOLCK",
	"ENOSYS", "ENOTEMPTY", "ELOOP", 0, "ENOMSG", "EIDRM", "ECHRNG", "EL2NSYNC", "EL3HLT", "EL3RST",
	"ELNRNG", "EUNATCH", "ENOCSI", "EL2HLT", "EBADE", "EBADR", "EXFULL", "ENOANO", "EBADRQC",
	"EBADSLT", 0, "EBFONT", "ENOSTR", "ENODATA", "ETIME", "ENOSR", "ENONET", "ENOPKG", "EREMOTE",
	"ENOLINK", "EADV", "ESRMNT", "ECOMM", "EPROTO", "EMULTIHOP", "EDOTDOT", "EBADMSG", "EOVERFLOW",
	"ENOTUNIQ", "EBADFD", "EREMCHG", "ELIBACC", "ELIBBAD", "ELIBSCN", "ELIBMAX", "ELIBEXEC", "EILSEQ",
	"ERESTART", "ESTRPIPE", "EUSERS", "ENOTSOCK", "EDESTADDRREQ", "EMSGSIZE", "EPROTOTYPE",
	"ENOPROTOOPT", "EPROTONOSUPPORT", "ESOCKTNOSUPPORT", "EOPNOTSUPP", "EPFNOSUPPORT", "EAFNOSUPPORT",
	"EADDRINUSE", "EADDRNOTAVAIL", "ENETDOWN", "ENETUNREACH", "ENETRESET", "ECONNABORTED",
	"ECONNRESET", "ENOBUFS", "EISCONN", "ENOTCONN", "ESHUTDOWN", "ETOOMANYREFS", "ETIMEDOUT",
	"ECONNREFUSED", "EHOSTDOWN", "EHOSTUNREACH", "EALREADY", "EINPROGRESS", "ESTALE", "EUCLEAN",
	"ENOTNAM", "ENAVAIL", "EISNAM", "EREMOTEIO", "EDQUOT", "ENOMEDIUM", "EMEDIUMTYPE", "ECANCELED",
	"ENOKEY", "EKEYEXPIRED", "EKEYREVOKED", "EKEYREJECTED", "EOWNERDEAD", "ENOTRECOVERABLE",
	"ERFKILL", "EHWPOISON",
};

const char *errno_name(long r)
{
	unsigned long e = (unsigned long)-r;
	if (r >= 0 || e >= sizeof errno_names / sizeof errno_names[0])
		return 0;
	return errno_names[e];
}

const char *errno_str(long r)
{
	static char buf[8][24];
	static int next;
	const char *n = errno_name(r);
	if (n)
		return n;
	next = (next + 1) % 8;
	snprintf(buf[next], sizeof buf[next], "%ld", r);
	return buf[next];
}

const char *sys_err(long r)
{
	static char buf[24];

	if (!sys_failed(r))
		return "ok";
	switch (-r) {
	case EINVAL: return "EINVAL";
	case EBADF: return "EBADF";
	case ENOMEM: return "ENOMEM";
	default:
		snprintf(buf, sizeof(buf), "%ld", r);
		return buf;
	}
}

void *map_rwx(void *at, size_t len, int fixed)
{
	long r = sys_mmap2(at, len, PROT_READ | PROT_WRITE | PROT_EXEC,
			   MAP_PRIVATE | MAP_ANONYMOUS | (fixed ? MAP_FIXED : 0), -1, 0);

	if (sys_failed(r)) {
		printf("mmap2 failed: %ld\n", r);
		exit(1);
	}
	return (void *)r;
}
