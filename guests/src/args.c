/*
 * args.c - the initial process state the kernel (or the emulator's
 * loader) builds: argc, the argv and envp strings, and the auxiliary
 * vector.  Only values that are the same on every run and every Linux
 * kernel are printed; things that vary (addresses, AT_RANDOM bytes,
 * AT_HWCAP, AT_SYSINFO_EHDR, the set and order of auxv types) are reduced
 * to yes/no checks.  The harness runs this with the same argv and a fixed
 * environment natively and under the emulator.
 */
#include "rt.h"

struct ehdr {
	unsigned char e_ident[16];
	uint16_t e_type, e_machine;
	uint32_t e_version, e_entry, e_phoff, e_shoff, e_flags;
	uint16_t e_ehsize, e_phentsize, e_phnum, e_shentsize, e_shnum, e_shstrndx;
};

struct phdr {
	uint32_t p_type, p_offset, p_vaddr, p_paddr, p_filesz, p_memsz, p_flags, p_align;
};

extern const struct ehdr __ehdr_start __attribute__((visibility("hidden")));
extern char _start[];

static const char *yn(int c)
{
	return c ? "yes" : "no";
}

int main(int argc, char **argv, char **envp)
{
	const struct ehdr *eh = &__ehdr_start;
	const struct phdr *ph;
	const char *s;
	int i, nload = 0;

	printf("argc: %d\n", argc);
	for (i = 0; i < argc; i++)
		printf("argv[%d]: \"%s\"\n", i, argv[i]);
	printf("argv[argc] is NULL: %s\n", yn(argv[argc] == NULL));
	for (i = 0; envp[i]; i++)
		printf("envp[%d]: \"%s\"\n", i, envp[i]);
	printf("envc: %d\n", i);
	printf("initial stack pointer 16-byte aligned: %s\n",
	       yn(((uintptr_t)__rt_initial_sp & 15) == 0));

	printf("AT_PAGESZ: %u\n", getauxval(AT_PAGESZ));
	printf("AT_PHENT: %u\n", getauxval(AT_PHENT));
	printf("AT_PHNUM equals e_phnum: %s\n", yn(getauxval(AT_PHNUM) == eh->e_phnum));
	ph = (const struct phdr *)getauxval(AT_PHDR);
	printf("AT_PHDR is the loaded header table: %s\n",
	       yn((const char *)ph == (const char *)eh + eh->e_phoff));
	if (ph) {
		printf("first program header type valid: %s\n",
		       yn(ph[0].p_type == 1 || ph[0].p_type == 6));
		for (i = 0; i < (int)getauxval(AT_PHNUM); i++)
			nload += ph[i].p_type == 1;
		printf("has PT_LOAD entries: %s\n", yn(nload > 0));
	}
	printf("AT_ENTRY is _start: %s\n", yn(getauxval(AT_ENTRY) == (uintptr_t)_start));
	printf("AT_BASE: %u\n", getauxval(AT_BASE));
	printf("AT_FLAGS: %u\n", getauxval(AT_FLAGS));
	printf("AT_CLKTCK: %u\n", getauxval(AT_CLKTCK));
	printf("AT_SECURE: %u\n", getauxval(AT_SECURE));
	printf("uid ok: %s\n", yn(rt_hasauxval(AT_UID) && getauxval(AT_UID) == (uint32_t)sys_getuid()));
	printf("euid ok: %s\n", yn(rt_hasauxval(AT_EUID) && getauxval(AT_EUID) == (uint32_t)sys_geteuid()));
	printf("gid ok: %s\n", yn(rt_hasauxval(AT_GID) && getauxval(AT_GID) == (uint32_t)sys_getgid()));
	printf("egid ok: %s\n", yn(rt_hasauxval(AT_EGID) && getauxval(AT_EGID) == (uint32_t)sys_getegid()));
	if (rt_hasauxval(AT_RANDOM) && getauxval(AT_RANDOM)) {
		const volatile uint8_t *r = (const volatile uint8_t *)getauxval(AT_RANDOM);
		uint32_t sum = 0;

		for (i = 0; i < 16; i++)
			sum += r[i];	/* must be readable; the value is not printed */
		(void)sum;
		printf("AT_RANDOM: present, 16 bytes readable\n");
	} else {
		printf("AT_RANDOM: missing\n");
	}
	s = (const char *)getauxval(AT_PLATFORM);
	printf("AT_PLATFORM: %s\n", s ? s : "(missing)");
	s = (const char *)getauxval(AT_EXECFN);
	printf("AT_EXECFN equals argv[0]: %s\n", yn(s && argc > 0 && strcmp(s, argv[0]) == 0));
	printf("environ is envp: %s\n", yn(environ == envp));
	return 0;
}
