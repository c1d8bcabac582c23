/*
 * start.c - C part of process start-up.
 *
 * __rt_start_c() is called by _start (crt0.S) with the initial stack
 * pointer.  For a static-PIE image (compiled with -fPIE, so __PIC__ is
 * defined) it first applies the image's own relocations: the kernel maps
 * an ET_DYN image at an arbitrary base and nobody else will patch the
 * absolute addresses stored in data (pointer tables, GOT entries).  Until
 * that is done the code must not read any pointer stored in memory; it
 * only uses hidden symbols, which the compiler addresses PC-relatively.
 *
 * Then argc/argv/envp/auxv are taken from the stack, main() is called and
 * its return value is passed to exit().
 */
#include "rt.h"

char **environ;
uint32_t *__rt_auxv;
uint32_t *__rt_initial_sp;

int main(int argc, char **argv, char **envp);

#ifdef __PIC__
/* Minimal ELF32 definitions (only what relocation needs). */
typedef struct {
	unsigned char e_ident[16];
	uint16_t e_type, e_machine;
	uint32_t e_version, e_entry, e_phoff, e_shoff, e_flags;
	uint16_t e_ehsize, e_phentsize, e_phnum, e_shentsize, e_shnum, e_shstrndx;
} elf_ehdr;

typedef struct {
	uint32_t p_type, p_offset, p_vaddr, p_paddr, p_filesz, p_memsz, p_flags, p_align;
} elf_phdr;

typedef struct {
	int32_t d_tag;
	uint32_t d_val;
} elf_dyn;

#define PT_LOAD		1
#define DT_NULL		0
#define DT_RELA		7
#define DT_REL		17
#define DT_RELSZ	18
#define DT_RELENT	19
#define DT_RELRSZ	35
#define DT_RELR		36
#define DT_RELRENT	37
#define R_386_NONE	0
#define R_386_RELATIVE	8

/* Provided by the linker; hidden so that they are reached without the GOT. */
extern const elf_ehdr __ehdr_start __attribute__((visibility("hidden")));
extern const elf_dyn _DYNAMIC[] __attribute__((visibility("hidden")));

static __attribute__((noreturn)) void reloc_die(void)
{
	static const char msg[] = "rt: unsupported relocation in static-PIE image\n";

	rt_syscall(SYS_write, 2, msg, sizeof(msg) - 1);
	rt_syscall(SYS_exit_group, 127);
	__builtin_unreachable();
}

/*
 * The load bias is the difference between where the ELF header is mapped
 * now and its link-time address, which is the p_vaddr of the PT_LOAD
 * segment that starts at file offset 0.
 */
static void self_relocate(void)
{
	const elf_ehdr *eh = &__ehdr_start;
	const elf_phdr *ph = (const elf_phdr *)((const char *)eh + eh->e_phoff);
	uint32_t link_addr = 0, base;
	uint32_t rel = 0, relsz = 0, relent = 8, relr = 0, relrsz = 0;
	const elf_dyn *d;
	int i;

	for (i = 0; i < eh->e_phnum; i++) {
		if (ph[i].p_type == PT_LOAD && ph[i].p_offset == 0) {
			link_addr = ph[i].p_vaddr;
			break;
		}
	}
	base = (uint32_t)eh - link_addr;

	for (d = _DYNAMIC; d->d_tag != DT_NULL; d++) {
		switch (d->d_tag) {
		case DT_REL:     rel = d->d_val; break;
		case DT_RELSZ:   relsz = d->d_val; break;
		case DT_RELENT:  relent = d->d_val; break;
		case DT_RELR:    relr = d->d_val; break;
		case DT_RELRSZ:  relrsz = d->d_val; break;
		case DT_RELA:    reloc_die();	/* i386 uses REL only */
		default:         break;
		}
	}
	if (base == 0)
		return;
	if (relent == 0)
		relent = 8;

	/* Classic REL table: (r_offset, r_info) pairs. */
	for (i = 0; (uint32_t)i < relsz; i += relent) {
		const uint32_t *r = (const uint32_t *)(base + rel + i);
		uint32_t type = r[1] & 0xff;

		if (type == R_386_RELATIVE)
			*(uint32_t *)(base + r[0]) += base;
		else if (type != R_386_NONE)
			reloc_die();
	}

	/* Packed RELR table (ld -z pack-relative-relocs): an even entry is an
	 * address to relocate, an odd entry a bitmap of the following 31 words. */
	if (relr) {
		const uint32_t *p = (const uint32_t *)(base + relr);
		const uint32_t *end = (const uint32_t *)(base + relr + relrsz);
		uint32_t *where = 0;

		for (; p < end; p++) {
			uint32_t e = *p;

			if ((e & 1) == 0) {
				where = (uint32_t *)(base + e);
				*where++ += base;
			} else {
				uint32_t *w = where;

				for (e >>= 1; e; e >>= 1, w++)
					if (e & 1)
						*w += base;
				where += 31;
			}
		}
	}
}
#endif

__attribute__((noreturn, used, visibility("hidden")))
void __rt_start_c(uint32_t *sp)
{
	int argc;
	char **argv, **envp;
	uint32_t *p;

#ifdef __PIC__
	self_relocate();
#endif
	argc = (int)sp[0];
	argv = (char **)(sp + 1);
	envp = argv + argc + 1;
	for (p = (uint32_t *)envp; *p; p++)
		;
	__rt_auxv = p + 1;
	__rt_initial_sp = sp;
	environ = envp;
	exit(main(argc, argv, envp));
}

uint32_t getauxval(uint32_t type)
{
	uint32_t *a;

	for (a = __rt_auxv; a[0] != AT_NULL; a += 2)
		if (a[0] == type)
			return a[1];
	return 0;
}

int rt_hasauxval(uint32_t type)
{
	uint32_t *a;

	for (a = __rt_auxv; a[0] != AT_NULL; a += 2)
		if (a[0] == type)
			return 1;
	return 0;
}
