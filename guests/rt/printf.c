/*
 * printf.c - formatted output and process exit.
 *
 * Supported: flags '-' '0' '+' ' ' '#', width and precision (also '*'),
 * length modifiers hh h l ll z, conversions d i u x X o c s p %.
 * stdout (fd 1) is fully buffered and flushed when the buffer fills and in
 * exit(); stderr output (eprintf) is written immediately.
 */
#include "rt.h"

/* An output sink: either a bounded string or a file descriptor. */
struct sink {
	char *buf;		/* string target, or NULL */
	size_t size, len;	/* capacity and number of chars produced */
	int fd;			/* fd target when buf == NULL */
};

static char out_buf[4096];
static size_t out_len;

static void write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		long r = sys_write(fd, p, n);

		if (r <= 0)
			return;	/* nothing sensible to do about it */
		p += r;
		n -= (size_t)r;
	}
}

void fflush_stdout(void)
{
	write_all(1, out_buf, out_len);
	out_len = 0;
}

void raw_puts(int fd, const char *s)
{
	write_all(fd, s, strlen(s));
}

static void put(struct sink *k, char c)
{
	if (k->buf) {
		if (k->len + 1 < k->size)
			k->buf[k->len] = c;
	} else if (k->fd == 1) {
		if (out_len == sizeof(out_buf))
			fflush_stdout();
		out_buf[out_len++] = c;
	} else {
		write_all(k->fd, &c, 1);	/* unbuffered: slow but simple */
	}
	k->len++;
}

static void put_repeat(struct sink *k, char c, int n)
{
	while (n-- > 0)
		put(k, c);
}

static void format(struct sink *k, const char *fmt, va_list ap)
{
	static const char lower[] = "0123456789abcdef", upper[] = "0123456789ABCDEF";

	for (; *fmt; fmt++) {
		int left = 0, zero = 0, plus = 0, space = 0, alt = 0;
		int width = 0, prec = -1, lng = 0, base = 10, neg = 0;
		const char *digits = lower;
		unsigned long long v;
		char tmp[32], sign = 0;
		const char *prefix = "";
		int n = 0, len, pad;

		if (*fmt != '%') {
			put(k, *fmt);
			continue;
		}
		for (fmt++;; fmt++) {
			if (*fmt == '-') left = 1;
			else if (*fmt == '0') zero = 1;
			else if (*fmt == '+') plus = 1;
			else if (*fmt == ' ') space = 1;
			else if (*fmt == '#') alt = 1;
			else break;
		}
		if (*fmt == '*') {
			width = va_arg(ap, int);
			if (width < 0) {
				left = 1;
				width = -width;
			}
			fmt++;
		} else {
			while (*fmt >= '0' && *fmt <= '9')
				width = width * 10 + (*fmt++ - '0');
		}
		if (*fmt == '.') {
			fmt++;
			prec = 0;
			if (*fmt == '*') {
				prec = va_arg(ap, int);
				fmt++;
			} else {
				while (*fmt >= '0' && *fmt <= '9')
					prec = prec * 10 + (*fmt++ - '0');
			}
		}
		/* lng: -2 hh, -1 h, 0 int, 1 l/z, 2 ll */
		for (;; fmt++) {
			if (*fmt == 'h') lng--;
			else if (*fmt == 'l') lng++;
			else if (*fmt == 'z') lng = 1;
			else break;
		}

		switch (*fmt) {
		case '\0':
			return;
		case '%':
			put(k, '%');
			continue;
		case 'c':
			tmp[0] = (char)va_arg(ap, int);
			tmp[1] = 0;
			len = 1;
			pad = width - len;
			if (!left) put_repeat(k, ' ', pad);
			put(k, tmp[0]);
			if (left) put_repeat(k, ' ', pad);
			continue;
		case 's': {
			const char *s = va_arg(ap, const char *);

			if (!s)
				s = "(null)";
			for (len = 0; s[len] && (prec < 0 || len < prec); len++)
				;
			pad = width - len;
			if (!left) put_repeat(k, ' ', pad);
			for (n = 0; n < len; n++)
				put(k, s[n]);
			if (left) put_repeat(k, ' ', pad);
			continue;
		}
		case 'p':
			v = (uintptr_t)va_arg(ap, void *);
			base = 16;
			prefix = "0x";
			break;
		case 'd':
		case 'i': {
			long long sv;

			if (lng >= 2) sv = va_arg(ap, long long);
			else if (lng == 1) sv = va_arg(ap, long);
			else sv = va_arg(ap, int);
			if (lng == -1) sv = (short)sv;
			if (lng <= -2) sv = (signed char)sv;
			neg = sv < 0;
			v = neg ? -(unsigned long long)sv : (unsigned long long)sv;
			if (neg) sign = '-';
			else if (plus) sign = '+';
			else if (space) sign = ' ';
			break;
		}
		case 'X':
			digits = upper;
			/* fall through */
		case 'x':
		case 'o':
		case 'u':
			if (lng >= 2) v = va_arg(ap, unsigned long long);
			else if (lng == 1) v = va_arg(ap, unsigned long);
			else v = va_arg(ap, unsigned int);
			if (lng == -1) v = (unsigned short)v;
			if (lng <= -2) v = (unsigned char)v;
			if (*fmt == 'o') {
				base = 8;
				if (alt) prefix = "0";
			} else if (*fmt != 'u') {
				base = 16;
				if (alt && v) prefix = *fmt == 'X' ? "0X" : "0x";
			}
			break;
		default:		/* unknown conversion: print it verbatim */
			put(k, '%');
			put(k, *fmt);
			continue;
		}

		/* integer conversions */
		if (base == 10) {	/* use 32-bit division when possible */
			if (v >> 32) {
				do {
					tmp[n++] = digits[v % 10];
					v /= 10;
				} while (v);
			} else {
				uint32_t w = (uint32_t)v;

				do {
					tmp[n++] = digits[w % 10];
					w /= 10;
				} while (w);
			}
		} else {
			int shift = base == 16 ? 4 : 3;

			do {
				tmp[n++] = digits[v & (unsigned)(base - 1)];
				v >>= shift;
			} while (v);
		}
		if (prec == 0 && n == 1 && tmp[0] == '0')
			n = 0;		/* "%.0d" of zero prints nothing */
		{
			int zeros = prec > n ? prec - n : 0;
			int plen = (int)strlen(prefix) + (sign ? 1 : 0);

			if (zero && !left && prec < 0 && width > plen + n)
				zeros = width - plen - n;
			pad = width - plen - zeros - n;
			if (!left) put_repeat(k, ' ', pad);
			if (sign) put(k, sign);
			while (*prefix)
				put(k, *prefix++);
			put_repeat(k, '0', zeros);
			while (n > 0)
				put(k, tmp[--n]);
			if (left) put_repeat(k, ' ', pad);
		}
	}
}

int vsnprintf(char *buf, size_t size, const char *fmt, va_list ap)
{
	struct sink k = { buf, size, 0, -1 };
	static char dummy[1];

	if (size == 0)
		k.buf = dummy;	/* still count, store nothing */
	format(&k, fmt, ap);
	if (size)
		buf[k.len < size ? k.len : size - 1] = '\0';
	return (int)k.len;
}

int snprintf(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vsnprintf(buf, size, fmt, ap);
	va_end(ap);
	return r;
}

static int vdprintf_(int fd, const char *fmt, va_list ap)
{
	struct sink k = { NULL, 0, 0, fd };

	if (fd != 1) {
		/* format into a local buffer so a line is one write(2) */
		char line[512];
		va_list aq;
		int r;

		va_copy(aq, ap);
		r = vsnprintf(line, sizeof(line), fmt, aq);
		va_end(aq);
		if (r < (int)sizeof(line)) {
			write_all(fd, line, (size_t)r);
			return r;
		}
	}
	format(&k, fmt, ap);
	return (int)k.len;
}

int vprintf(const char *fmt, va_list ap)
{
	return vdprintf_(1, fmt, ap);
}

int printf(const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vdprintf_(1, fmt, ap);
	va_end(ap);
	return r;
}

int eprintf(const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vdprintf_(2, fmt, ap);
	va_end(ap);
	return r;
}

int dprintf(int fd, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	if (fd == 1)
		fflush_stdout();	/* keep ordering with buffered stdout */
	r = vdprintf_(fd, fmt, ap);
	if (fd == 1)
		fflush_stdout();
	va_end(ap);
	return r;
}

int putchar(int c)
{
	struct sink k = { NULL, 0, 0, 1 };

	put(&k, (char)c);
	return (unsigned char)c;
}

int puts(const char *s)
{
	while (*s)
		putchar(*s++);
	putchar('\n');
	return 0;
}

void _exit(int status)
{
	for (;;)
		rt_syscall(SYS_exit_group, status);
}

void exit(int status)
{
	fflush_stdout();
	_exit(status);
}
