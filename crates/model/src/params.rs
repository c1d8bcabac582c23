//! The parameter table: every price the model uses, with where it comes from.
//!
//! One row per parameter, and the row is everything: its name (the key of
//! [`CostModel::set`](crate::CostModel::set)), value, unit, whether it is charged to
//! user or system time, which counter of [`Counts`] it multiplies, and its source or,
//! for an assumption, the reasoning behind the value. [`CostModel::model`](crate::CostModel::model),
//! [`CostModel::params`](crate::CostModel::params), the sensitivity analysis and
//! `docs/model.md` all read this one table.
//!
//! Kernel costs are lmbench figures measured on a P6-class Celeron at 547 MHz under a
//! Linux 2.5 (2.6 development) kernel and carried over to the TM5600 **in cycles**; the
//! Code Morphing Software's own costs are assumptions, because no published number for
//! them was found. `docs/model.md` explains both choices.

use serde::Serialize;

use crate::Counts;

/// Where a parameter's time is charged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Side {
    /// User time: the Code Morphing Software runs invisibly to the OS, so interpreting,
    /// translating and running translations of user code all count as user time.
    User,
    /// System time: kernel entry and exit, and kernel work.
    Sys,
    /// Not a cost: the clock that turns cycles into seconds.
    Clock,
}

/// One parameter of the model, for printing and documentation.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Param {
    /// The key used by [`CostModel::set`](crate::CostModel::set).
    pub name: &'static str,
    /// Its value in `unit`.
    pub value: f64,
    /// `cycles per <event>`, or `Hz` for the clock.
    pub unit: &'static str,
    /// The `Counts` field the value multiplies (empty for the clock).
    pub counter: &'static str,
    /// Whether the time is user or system time.
    pub side: Side,
    /// Citation with the numbers used, or (for an assumption) the reasoning.
    pub source: &'static str,
    /// True when the value is an assumption rather than a published or measured number.
    pub assumption: bool,
}

/// A row of the table: a [`Param`] plus how it is applied.
pub(crate) struct Spec {
    pub name: &'static str,
    pub default: f64,
    pub unit: &'static str,
    pub counter: &'static str,
    pub count: fn(&Counts) -> u64,
    pub side: Side,
    pub assumption: bool,
    pub source: &'static str,
}

/// Clock of the lmbench machine the kernel figures come from, in MHz.
const LMBENCH_MHZ: f64 = 547.0;

/// Microseconds measured on the lmbench machine, as cycles.
const fn lmbench_us(us: f64) -> f64 {
    us * LMBENCH_MHZ
}

/// Index of the clock row.
pub(crate) const CLOCK: usize = 0;

/// The table. The clock comes first; the order is the order of every printout.
pub(crate) const SPECS: &[Spec] = &[
    Spec {
        name: "clock_hz",
        default: 533.0e6,
        unit: "Hz",
        counter: "",
        count: |_| 0,
        side: Side::Clock,
        assumption: false,
        source: "The 2005 report itself (linux-kernel, \"Slowdown with randomize_va_space in \
                 2.6.12.2\", P. Marques, 2005-07-06; shared/seed): its dmesg gives a TM5600 \
                 stepping 3 at 533 MHz running CMS 4.2.7, /proc/cpuinfo 530.696 MHz.",
    },
    Spec {
        name: "interp_insn",
        default: 40.0,
        unit: "cycles per interpreted x86 instruction",
        counter: "interp_instructions",
        count: |c| c.interp_instructions,
        side: Side::User,
        assumption: true,
        source: "Assumption (no published figure found). The CMS interpreter decodes every x86 \
                 instruction afresh in software (prefixes, opcode, ModR/M, operands, flags) and \
                 profiles execution (Dehnert et al., CGO 2003), on an in-order VLIW core whose \
                 instructions (molecules) hold 2 or 4 operations (IEEE Spectrum, May 2000, \
                 \"Transmeta's magic show\"), where such branchy, table-driven code finds little \
                 parallelism: about 25-50 native operations at about one molecule per cycle, \
                 taken as 40 cycles.",
    },
    Spec {
        name: "translated_insn",
        default: 1.0,
        unit: "cycles per x86 instruction executed in a translation",
        counter: "translated_instructions",
        count: |c| c.translated_instructions,
        side: Side::User,
        assumption: true,
        source: "Assumption. Translations are optimized, scheduled VLIW code. Transmeta's own \
                 example (A. Stiller, c't, 2000, as reported by tweakers.net) turns a loop of \
                 10 x86 instructions into 4 VLIW instructions, 0.4 cycles per x86 instruction, \
                 a best case. Whole \
                 workloads ran at P6-like speed per clock: H. P. Anvin (linux-kernel, \"Re: \
                 Crusoe's performance on linux?\", 2003-06-25) reports 10 min 15 s for a \
                 2.4.21 kernel build on a 1067 MHz Crusoe and about 10 minutes on 1 GHz \
                 TM5800s, the order of the 10.x minutes reported in the same thread for a \
                 1 GHz Pentium III. Taken as 1 cycle, allowing for cache misses and commits.",
    },
    Spec {
        name: "translate_insn",
        default: 2000.0,
        unit: "cycles per guest x86 instruction translated",
        counter: "translated_guest_instructions",
        count: |c| c.translated_guest_instructions,
        side: Side::User,
        assumption: true,
        source: "Assumption (no published figure found). CMS is an optimizing translator \
                 (decoding, speculation with alias checks, scheduling into molecules, register \
                 allocation; Dehnert et al., CGO 2003). Taken at the break-even point of an \
                 adaptive system that interprets a block about 50 times before translating it \
                 (morph's default threshold, docs/engine.md): 50 x (40 - 1) = 1,950, rounded \
                 to 2,000 cycles per x86 instruction.",
    },
    Spec {
        name: "translate_block",
        default: 1000.0,
        unit: "cycles per translation",
        counter: "translations",
        count: |c| c.translations,
        side: Side::User,
        assumption: true,
        source: "Assumption: the fixed work of a translation beside its instructions: space in \
                 the translation cache, an entry in the lookup table, marking the code page as \
                 translated (Transmeta's fine-grain protection, US 6,363,336), chain-site \
                 bookkeeping: 1,000 cycles.",
    },
    Spec {
        name: "lookup",
        default: 30.0,
        unit: "cycles per translation-cache lookup (dispatch)",
        counter: "lookups",
        count: |c| c.lookups,
        side: Side::User,
        assumption: true,
        source: "Assumption: hash the x86 address, probe the lookup table, compare the tag and \
                 jump indirectly; a few dependent loads and an unpredicted indirect branch on \
                 an in-order core: 30 cycles.",
    },
    Spec {
        name: "miss",
        default: 20.0,
        unit: "extra cycles per lookup that misses",
        counter: "misses",
        count: |c| c.misses,
        side: Side::User,
        assumption: true,
        source: "Assumption: on a miss, bump the block's profile count and compare it with the \
                 threshold before falling back to the interpreter: 20 cycles on top of the \
                 lookup.",
    },
    Spec {
        name: "chain_patch",
        default: 200.0,
        unit: "cycles per chain patch",
        counter: "chain_patches",
        count: |c| c.chain_patches,
        side: Side::User,
        assumption: true,
        source: "Assumption: find the target translation, rewrite one branch in the translation \
                 cache and keep the instruction cache coherent: 200 cycles.",
    },
    Spec {
        name: "host_fault",
        default: 500.0,
        unit: "cycles per fault inside a translation",
        counter: "host_faults",
        count: |c| c.host_faults,
        side: Side::User,
        assumption: true,
        source: "Assumption: the VLIW state rolls back to the last commit (shadow registers and \
                 gated stores, in hardware; Dehnert et al., CGO 2003), then CMS re-runs the \
                 region up to the faulting instruction in the interpreter: a few instructions \
                 at interp_insn plus exception dispatch, 500 cycles. The kernel's part of the \
                 fault is not included.",
    },
    Spec {
        name: "flush",
        default: 50_000.0,
        unit: "cycles per translation-cache flush",
        counter: "flushes",
        count: |c| c.flushes,
        side: Side::User,
        assumption: true,
        source: "Assumption (no published figure found). A full translation cache is flushed \
                 whole (CMS reserved 16 MB, about 14 MB for translations; flushing whole \
                 needs no unchaining): reset the lookup table (for 14 MB of translations of \
                 a few hundred bytes, some 64 K entries, a store each) and clear the \
                 translated bits of the code pages: about 50,000 cycles. Translating the \
                 hot code again afterwards is counted by the other rows.",
    },
    Spec {
        name: "reuse",
        default: 1200.0,
        unit: "cycles per translation copied instead of translated",
        counter: "reuses",
        count: |c| c.reuses,
        side: Side::User,
        assumption: true,
        source: "Assumption, for morph's file and content keys (CMS had no such reuse): the \
                 fixed work of placing a translation, as translate_block (1,000 cycles), plus \
                 hashing the block's identity, comparing its guest bytes (some 40) and copying \
                 its host code (some 450 bytes) at a few bytes per cycle: 1,200 cycles.",
    },
    Spec {
        name: "tcache_load",
        default: 1500.0,
        unit: "cycles per translation loaded from the persistent cache",
        counter: "tcache_loads",
        count: |c| c.tcache_loads,
        side: Side::User,
        assumption: true,
        source: "Assumption, for morph's persistent cache (CMS kept no translations across \
                 boots): a reuse (1,200 cycles) plus hashing the block's guest bytes and \
                 decoding the record and its helper instructions again: 1,500 cycles. Reading \
                 the cache file is not included.",
    },
    Spec {
        name: "syscall",
        default: lmbench_us(0.61),
        unit: "cycles per system call (entry and exit)",
        counter: "syscalls",
        count: |c| c.syscalls,
        side: Side::Sys,
        assumption: false,
        source: "lmbench 2.0 null call (getppid) 0.61 us on a 547 MHz Celeron under Linux \
                 2.5.31 (J. Morris, linux-kernel, \"Performance issue in 2.5.32+\", \
                 2002-09-08; 2.4.19 on the same machine: 0.64 us): 0.61 x 547 = 334 cycles, \
                 carried over in cycles.",
    },
    Spec {
        name: "fork",
        default: lmbench_us(576.0),
        unit: "cycles per process created",
        counter: "forks",
        count: |c| c.forks,
        side: Side::Sys,
        assumption: false,
        source: "lmbench 2.0 fork proc (fork, child exit, parent wait) 576 us on a 547 MHz \
                 Celeron under Linux 2.5.31 (J. Morris, linux-kernel, \"Performance issue in \
                 2.5.32+\", 2002-09-08; 2.4.19: 498 us): 576 x 547 = 315,072 cycles, carried \
                 over in cycles.",
    },
    Spec {
        name: "exec",
        default: lmbench_us(1698.0 - 576.0),
        unit: "cycles per execve",
        counter: "execs",
        count: |c| c.execs,
        side: Side::Sys,
        assumption: false,
        source: "lmbench 2.0 exec proc minus fork proc, 1698 - 576 = 1122 us on a 547 MHz \
                 Celeron under Linux 2.5.31 (J. Morris, linux-kernel, \"Performance issue in \
                 2.5.32+\", 2002-09-08; 2.4.19: 1399 - 498 = 901 us): 613,734 cycles, carried \
                 over in cycles. Includes the new image's page faults and mappings, and also \
                 the user-mode start-up of lmbench's dynamically linked hello, which morph \
                 counts as guest instructions: an upper bound.",
    },
    Spec {
        name: "page_cache_fill",
        default: lmbench_us(5.0),
        unit: "cycles per page-cache fill (4 KiB)",
        counter: "page_cache_fills",
        count: |c| c.page_cache_fills,
        side: Side::Sys,
        assumption: false,
        source: "lmbench 2.0 page fault (a mapped file page already in the page cache) 5.0 us \
                 on a 547 MHz Celeron under Linux 2.5.31 (J. Morris, linux-kernel, \
                 \"Performance issue in 2.5.32+\", 2002-09-08; 2.4.19: 4.0 us): 2,735 cycles. \
                 In 2005 the files were already cached (the report: more than 70 MB free), so \
                 a morph fill is priced as a minor fault, not as disk I/O.",
    },
    Spec {
        name: "frame_alloc",
        default: 0.0,
        unit: "cycles per physical frame allocated",
        counter: "frames_allocated",
        count: |c| c.frames_allocated,
        side: Side::Sys,
        assumption: true,
        source: "Assumption: 0. morph allocates anonymous memory when it is mapped (an 8 MiB \
                 stack is 2,048 frames per exec), Linux when it is first touched, so \
                 frames_allocated measures reserved memory, not faults. The zero-fill and \
                 copy-on-write faults a small program really takes are inside the measured \
                 fork and exec costs.",
    },
    Spec {
        name: "mmap",
        default: 1000.0,
        unit: "cycles per mmap/mmap2 beyond the system call",
        counter: "mmaps",
        count: |c| c.mmaps,
        side: Side::Sys,
        assumption: true,
        source: "Assumption: the kernel work of a mapping without touching a page (find a free \
                 range, allocate and link a VMA): 1,000 cycles on top of the system call. The \
                 mappings of an exec'd image and its loader are also inside the exec cost.",
    },
];

/// The index of the row called `name`.
pub(crate) fn index(name: &str) -> Option<usize> {
    SPECS.iter().position(|s| s.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_the_clock_is_first() {
        assert_eq!(SPECS[CLOCK].side, Side::Clock);
        assert_eq!(SPECS.iter().filter(|s| s.side == Side::Clock).count(), 1);
        for (i, s) in SPECS.iter().enumerate() {
            assert_eq!(index(s.name), Some(i), "{} appears twice", s.name);
        }
    }

    #[test]
    fn every_cost_reads_the_counter_it_names() {
        // Put a distinct power of two in each field and check each row picks its own.
        let c = Counts {
            interp_instructions: 1 << 0,
            translated_instructions: 1 << 1,
            translated_guest_instructions: 1 << 2,
            translations: 1 << 3,
            lookups: 1 << 4,
            misses: 1 << 5,
            chain_patches: 1 << 6,
            syscalls: 1 << 7,
            forks: 1 << 8,
            execs: 1 << 9,
            page_cache_fills: 1 << 10,
            frames_allocated: 1 << 11,
            host_faults: 1 << 12,
            mmaps: 1 << 13,
            flushes: 1 << 14,
            reuses: 1 << 15,
            tcache_loads: 1 << 16,
        };
        let json = serde_json::to_value(c).unwrap();
        let mut seen = 0u64;
        for s in SPECS.iter().filter(|s| s.side != Side::Clock) {
            let want = json[s.counter].as_u64().unwrap_or_else(|| panic!("{}: no counter {}", s.name, s.counter));
            assert_eq!((s.count)(&c), want, "{} reads the wrong counter", s.name);
            seen |= want;
        }
        assert_eq!(seen, (1 << 17) - 1, "every counter is priced exactly by some row");
    }

    #[test]
    fn kernel_figures_are_the_lmbench_microseconds_in_cycles() {
        let v = |n: &str| SPECS[index(n).unwrap()].default;
        assert!((v("syscall") - 333.67).abs() < 1e-6);
        assert!((v("fork") - 315_072.0).abs() < 1e-6);
        assert!((v("exec") - 613_734.0).abs() < 1e-6);
        assert!((v("page_cache_fill") - 2_735.0).abs() < 1e-6);
    }
}
