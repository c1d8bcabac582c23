//! The address-space layout of a new process and the ASLR model that randomizes it.
//!
//! Linux i386 (3 GiB user space) places, from the top: the stack below `TASK_SIZE`, the
//! mmap area below the stack gap growing down (shared libraries, the dynamic loader,
//! anonymous mappings), the executable at its link address (or, for PIE, at
//! `ELF_ET_DYN_BASE`), and the heap (`brk`) right after the executable's bss. Each of
//! these can be randomized separately; which ones a `randomize_va_space` mode turns on
//! depends on the kernel (2.6.12 vs modern) — see `docs/architecture.md`. All randomness comes
//! from the machine's one seeded RNG, so a run is reproducible given its seed.

use rand::Rng;

/// Top of user space with the i386 3G/1G split.
pub const TASK_SIZE: u32 = 0xc000_0000;
/// Size reserved for the main thread's stack (the default 8 MiB `RLIMIT_STACK`).
pub const STACK_SIZE: u32 = 8 << 20;
/// Linux `MIN_GAP`: the least room left for the stack below the mmap base.
const MIN_GAP: u32 = 128 << 20;
/// Lowest address mmap may hand out (`vm.mmap_min_addr` is 64 KiB on Debian).
pub const MMAP_MIN_ADDR: u32 = 0x1_0000;

/// The kernel whose ASLR behaviour is modeled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Kernel {
    /// Linux 2.6.12 (the 2005 report): mode 1 = stack + mmap; PIE at a fixed base.
    Linux2612,
    /// A modern kernel: mode 1 = stack + mmap + exec + vdso, mode 2 adds brk.
    #[default]
    Modern,
}

impl Kernel {
    /// The user segments the kernel's GDT gives a 32-bit process: Linux 2.6.12 is an
    /// i386 kernel (CS 0x73, data 0x7b); a modern one is taken to be x86-64 running the
    /// process in compatibility mode (CS 0x23, data 0x2b), as native runs on this
    /// project's hosts are.
    pub fn user_segments(self) -> morph_cpu::state::UserSegments {
        match self {
            Kernel::Linux2612 => morph_cpu::state::UserSegments::I386,
            Kernel::Modern => morph_cpu::state::UserSegments::COMPAT,
        }
    }
}

/// Which parts of the layout are randomized.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Aslr {
    /// Stack top.
    pub stack: bool,
    /// mmap base (shared libraries, loader, anonymous mappings).
    pub mmap: bool,
    /// PIE executable base.
    pub exec: bool,
    /// Heap start.
    pub brk: bool,
    /// vDSO base.
    pub vdso: bool,
}

impl Aslr {
    /// Parses `0`, `1`, `2` (with `kernel`'s meaning) or a comma list of components.
    pub fn parse(s: &str, kernel: Kernel) -> Result<Aslr, String> {
        let off = Aslr::default();
        match (s, kernel) {
            ("0", _) | ("none", _) => Ok(off),
            ("1", Kernel::Linux2612) | ("2", Kernel::Linux2612) => Ok(Aslr { stack: true, mmap: true, ..off }),
            ("1", Kernel::Modern) => Ok(Aslr { stack: true, mmap: true, exec: true, vdso: true, brk: false }),
            ("2", Kernel::Modern) => Ok(Aslr { stack: true, mmap: true, exec: true, vdso: true, brk: true }),
            _ => {
                let mut a = off;
                for part in s.split(',') {
                    match part.trim() {
                        "stack" => a.stack = true,
                        "mmap" => a.mmap = true,
                        "exec" => a.exec = true,
                        "brk" => a.brk = true,
                        "vdso" => a.vdso = true,
                        other => {
                            return Err(format!(
                                "bad --aslr component '{other}' (expected 0, 1, 2 or a list of stack,mmap,exec,brk,vdso)"
                            ));
                        }
                    }
                }
                Ok(a)
            }
        }
    }
}

/// The `randomize_va_space` mode `--aslr` names (`0`/`none`, `1`, `2`), if it names one
/// rather than a list of components.
pub fn named_mode(s: &str) -> Option<u8> {
    match s {
        "0" | "none" => Some(0),
        "1" => Some(1),
        "2" => Some(2),
        _ => None,
    }
}

/// What `/proc/sys/kernel/randomize_va_space` shows for `aslr` under `kernel`: the mode
/// `--aslr` named (`named`), else the largest mode all of whose components `aslr`
/// randomizes, and of modes randomizing the same (2.6.12's 1 and 2) the smallest. So
/// `stack,mmap,exec,vdso,brk` under a modern kernel is 2, `stack,mmap,exec` is 0 (mode 1
/// also randomizes the vDSO), and `stack,mmap` under 2.6.12 is 1.
pub fn randomize_va_space(aslr: Aslr, kernel: Kernel, named: Option<u8>) -> u8 {
    if let Some(m) = named {
        return m;
    }
    let of = |m: u8| Aslr::parse(&m.to_string(), kernel).unwrap_or_default();
    let within = |a: Aslr| {
        (!a.stack || aslr.stack)
            && (!a.mmap || aslr.mmap)
            && (!a.exec || aslr.exec)
            && (!a.brk || aslr.brk)
            && (!a.vdso || aslr.vdso)
    };
    let mut m = (0..=2).rev().find(|&m| within(of(m))).unwrap_or(0);
    while m > 0 && of(m - 1) == of(m) {
        m -= 1;
    }
    m
}

/// The bases chosen for one `exec`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Highest stack address (exclusive).
    pub stack_top: u32,
    /// Bytes subtracted below the strings before the argument tables (`arch_align_stack`).
    pub stack_shift: u32,
    /// Top of the top-down mmap area.
    pub mmap_base: u32,
    /// Load address of a PIE executable (ET_DYN).
    pub exec_base: u32,
    /// Page offset added to the heap start.
    pub brk_offset: u32,
}

impl Layout {
    /// Draws a layout for `kernel` with the components of `aslr` randomized.
    pub fn new(kernel: Kernel, aslr: Aslr, rng: &mut impl Rng) -> Layout {
        let mut r = |on: bool| if on { rng.next_u32() } else { 0 };
        match kernel {
            Kernel::Linux2612 => {
                // arch_align_stack: sp -= get_random_int() % 8192.
                let stack_shift = r(aslr.stack) % 8192;
                // mmap_base: TASK_SIZE - gap - get_random_int() % 1 MiB.
                let mmap_rand = r(aslr.mmap) % (1 << 20);
                Layout {
                    stack_top: TASK_SIZE,
                    stack_shift,
                    mmap_base: page_align(TASK_SIZE - MIN_GAP - mmap_rand),
                    // ELF_ET_DYN_BASE = TASK_SIZE / 3 * 2, not randomized before 2.6.25.
                    exec_base: page_align(TASK_SIZE / 3 * 2),
                    brk_offset: 0,
                }
            }
            Kernel::Modern => {
                // randomize_stack_top: 11 bits of pages (STACK_RND_MASK 0x7ff for ia32).
                let stack_pages = r(aslr.stack) & 0x7ff;
                let stack_shift = r(aslr.stack) % 8192;
                // arch_mmap_rnd: mmap_rnd_compat_bits = 8 pages of entropy.
                let mmap_pages = r(aslr.mmap) & 0xff;
                let gap = MIN_GAP + (0x7ff << 12); // the gap also covers the stack's random range
                let exec_pages = r(aslr.exec) & 0xff;
                // randomize_page(brk, 32 MiB).
                let brk_pages = r(aslr.brk) % ((32 << 20) >> 12);
                Layout {
                    stack_top: TASK_SIZE - (stack_pages << 12),
                    stack_shift,
                    mmap_base: TASK_SIZE - gap - (mmap_pages << 12),
                    // ELF_ET_DYN_BASE for ia32 tasks: 0x400000, plus arch_mmap_rnd().
                    exec_base: 0x0040_0000 + (exec_pages << 12),
                    brk_offset: brk_pages << 12,
                }
            }
        }
    }
}

fn page_align(x: u32) -> u32 {
    x & !0xfff
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn modes() {
        let a = Aslr::parse("1", Kernel::Linux2612).unwrap();
        assert!(a.stack && a.mmap && !a.exec && !a.brk);
        let a = Aslr::parse("2", Kernel::Modern).unwrap();
        assert!(a.stack && a.mmap && a.exec && a.brk && a.vdso);
        assert_eq!(Aslr::parse("brk,exec", Kernel::Modern).unwrap(), Aslr { brk: true, exec: true, ..Aslr::default() });
        assert!(Aslr::parse("heap", Kernel::Modern).is_err());
        let shown = |s: &str, k: Kernel| randomize_va_space(Aslr::parse(s, k).unwrap(), k, named_mode(s));
        assert_eq!(shown("2", Kernel::Linux2612), 2);
        assert_eq!(shown("1", Kernel::Linux2612), 1);
        assert_eq!(shown("stack,mmap", Kernel::Linux2612), 1);
        assert_eq!(shown("stack,mmap,brk", Kernel::Linux2612), 1);
        assert_eq!(shown("stack", Kernel::Linux2612), 0);
        assert_eq!(shown("none", Kernel::Modern), 0);
        assert_eq!(shown("stack,mmap,exec", Kernel::Modern), 0);
        assert_eq!(shown("vdso,exec,mmap,stack", Kernel::Modern), 1);
        assert_eq!(shown("stack,mmap,exec,vdso,brk", Kernel::Modern), 2);
    }

    #[test]
    fn off_is_fixed_and_seeded_is_reproducible() {
        let mut r1 = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let off = Layout::new(Kernel::Modern, Aslr::default(), &mut r1);
        assert_eq!(off.stack_top, TASK_SIZE);
        let all = Aslr::parse("2", Kernel::Modern).unwrap();
        let mut r2 = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let _ = Layout::new(Kernel::Modern, Aslr::default(), &mut r2);
        let a = Layout::new(Kernel::Modern, all, &mut r1);
        assert_eq!(a, Layout::new(Kernel::Modern, all, &mut r2));
        assert_ne!(a, Layout::new(Kernel::Modern, all, &mut r2), "a second exec draws a new layout");
    }
}
