//! The host CPU's answer where the guest ISA leaves a result or flags undefined.
//!
//! The translator re-encodes shifts, rotates, double shifts, multiplies and bit scans,
//! so translated code gets whatever the host's instruction gives for the cases the
//! Intel SDM calls undefined (OF after a multi-bit shift or rotate, 16-bit `shld`/`shrd`
//! by more than 16, SF/ZF/AF/PF after `mul`, the flags after `bsf`/`bsr`, ...). The
//! interpreter asks the host the same question here, so that a block's results never
//! change when it becomes hot. (`crates/dbt/tests/undefined.rs` checks that the two
//! agree on every count and on random operands.) The guest's arithmetic flags go in,
//! because some of these leave flags unchanged; DF, TF and AC stay clear on the host.

use core::arch::asm;

use crate::alu::Shift;
use crate::state::flags::{ARITH, FIXED};

fn flags_in(f: u32) -> u64 {
    u64::from((f & ARITH) | FIXED)
}

/// `old` with its arithmetic flags replaced by the host's `f`.
fn merge(old: u32, f: u64) -> u32 {
    (old & !ARITH) | (f as u32 & ARITH)
}

/// Whether the host no longer keeps the x87 code and data selectors (CPUID.7.0:EBX
/// bit 13, "FCS and FDS deprecated": recent Intel cores), so that its `fnstenv` stores
/// them 0.
pub fn fcs_fds_deprecated() -> bool {
    static D: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    // Leaf 7 exists where leaf 0 says so; both only read identification.
    *D.get_or_init(|| {
        core::arch::x86_64::__cpuid(0).eax >= 7 && core::arch::x86_64::__cpuid_count(7, 0).ebx & (1 << 13) != 0
    })
}

/// Whether the host is an AMD (or Hygon) CPU, which differ from Intel's where the SDM
/// leaves a choice or says nothing and the guest can see it: a segment register pushed
/// with a 32-bit operand size is stored zero-extended (Intel: a 16-bit move, the upper
/// half of the slot kept), and a `rep scas`/`cmps` that faults part way leaves the
/// flags of the last element compared (Intel: the flags from before the instruction).
/// Native is the oracle, so the interpreter follows the host. One `cpuid`, at the
/// first of those instructions.
pub fn amd_like() -> bool {
    static AMD: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *AMD.get_or_init(|| {
        // Leaf 0 exists on every x86-64 CPU and only reads identification.
        let r = core::arch::x86_64::__cpuid(0);
        let vendor = [r.ebx.to_le_bytes(), r.edx.to_le_bytes(), r.ecx.to_le_bytes()].concat();
        vendor == b"AuthenticAMD" || vendor == b"HygonGenuine"
    })
}

/// Runs the instruction `$t` on the given operands between loading the guest's
/// flags into the host's and reading them back.
macro_rules! with_flags {
    ($f:ident, $t:literal, $($ops:tt)*) => {
        // SAFETY: a register-only ALU instruction between a push/popfq of flags that
        // keep DF, TF and AC clear and a pushfq/pop: the stack is balanced and no memory
        // is touched.
        unsafe {
            asm!("push {f}", "popfq", $t, "pushfq", "pop {f}", f = inout(reg) $f, $($ops)*)
        }
    };
}

/// A shift or rotate of `v` (`bits` wide) by `count` (the raw count: the host masks it
/// as the guest does): the result (upper bits of a narrow operand as given) and flags.
pub fn shift(op: Shift, v: u32, count: u8, bits: u32, flags: u32) -> (u32, u32) {
    let (mut v, mut f) = (u64::from(v), flags_in(flags));
    match (op, bits) {
        (Shift::Shl, 8) => with_flags!(f, "shl {v:l}, cl", v = inout(reg) v, in("cl") count),
        (Shift::Shr, 8) => with_flags!(f, "shr {v:l}, cl", v = inout(reg) v, in("cl") count),
        (Shift::Sar, 8) => with_flags!(f, "sar {v:l}, cl", v = inout(reg) v, in("cl") count),
        (Shift::Rol, 8) => with_flags!(f, "rol {v:l}, cl", v = inout(reg) v, in("cl") count),
        (Shift::Ror, 8) => with_flags!(f, "ror {v:l}, cl", v = inout(reg) v, in("cl") count),
        (Shift::Rcl, 8) => with_flags!(f, "rcl {v:l}, cl", v = inout(reg) v, in("cl") count),
        (Shift::Rcr, 8) => with_flags!(f, "rcr {v:l}, cl", v = inout(reg) v, in("cl") count),
        (Shift::Shl, 16) => with_flags!(f, "shl {v:x}, cl", v = inout(reg) v, in("cl") count),
        (Shift::Shr, 16) => with_flags!(f, "shr {v:x}, cl", v = inout(reg) v, in("cl") count),
        (Shift::Sar, 16) => with_flags!(f, "sar {v:x}, cl", v = inout(reg) v, in("cl") count),
        (Shift::Rol, 16) => with_flags!(f, "rol {v:x}, cl", v = inout(reg) v, in("cl") count),
        (Shift::Ror, 16) => with_flags!(f, "ror {v:x}, cl", v = inout(reg) v, in("cl") count),
        (Shift::Rcl, 16) => with_flags!(f, "rcl {v:x}, cl", v = inout(reg) v, in("cl") count),
        (Shift::Rcr, 16) => with_flags!(f, "rcr {v:x}, cl", v = inout(reg) v, in("cl") count),
        (Shift::Shl, _) => with_flags!(f, "shl {v:e}, cl", v = inout(reg) v, in("cl") count),
        (Shift::Shr, _) => with_flags!(f, "shr {v:e}, cl", v = inout(reg) v, in("cl") count),
        (Shift::Sar, _) => with_flags!(f, "sar {v:e}, cl", v = inout(reg) v, in("cl") count),
        (Shift::Rol, _) => with_flags!(f, "rol {v:e}, cl", v = inout(reg) v, in("cl") count),
        (Shift::Ror, _) => with_flags!(f, "ror {v:e}, cl", v = inout(reg) v, in("cl") count),
        (Shift::Rcl, _) => with_flags!(f, "rcl {v:e}, cl", v = inout(reg) v, in("cl") count),
        (Shift::Rcr, _) => with_flags!(f, "rcr {v:e}, cl", v = inout(reg) v, in("cl") count),
    }
    (v as u32, merge(flags, f))
}

/// `shld` (`left`) or `shrd` of `v` by `count`, filling from `src`.
pub fn double_shift(left: bool, v: u32, src: u32, count: u8, bits: u32, flags: u32) -> (u32, u32) {
    let (mut v, s, mut f) = (u64::from(v), u64::from(src), flags_in(flags));
    match (left, bits) {
        (true, 16) => with_flags!(f, "shld {v:x}, {s:x}, cl", v = inout(reg) v, s = in(reg) s, in("cl") count),
        (false, 16) => with_flags!(f, "shrd {v:x}, {s:x}, cl", v = inout(reg) v, s = in(reg) s, in("cl") count),
        (true, _) => with_flags!(f, "shld {v:e}, {s:e}, cl", v = inout(reg) v, s = in(reg) s, in("cl") count),
        (false, _) => with_flags!(f, "shrd {v:e}, {s:e}, cl", v = inout(reg) v, s = in(reg) s, in("cl") count),
    }
    (v as u32, merge(flags, f))
}

/// `bsf` (`forward`) or `bsr` of `src` into a destination holding `old`: the
/// destination afterwards (unchanged for a zero source on the host) and the flags.
pub fn bit_scan(forward: bool, old: u32, src: u32, bits: u32, flags: u32) -> (u32, u32) {
    let (mut v, s, mut f) = (u64::from(old), u64::from(src), flags_in(flags));
    match (forward, bits) {
        (true, 16) => with_flags!(f, "bsf {v:x}, {s:x}", v = inout(reg) v, s = in(reg) s),
        (false, 16) => with_flags!(f, "bsr {v:x}, {s:x}", v = inout(reg) v, s = in(reg) s),
        (true, _) => with_flags!(f, "bsf {v:e}, {s:e}", v = inout(reg) v, s = in(reg) s),
        (false, _) => with_flags!(f, "bsr {v:e}, {s:e}", v = inout(reg) v, s = in(reg) s),
    }
    (v as u32, merge(flags, f))
}

/// The flags after one-operand `mul` (`imul` if `signed`) of the accumulator `acc` by
/// `src` (the products themselves are defined and computed by the caller).
pub fn mul_flags(signed: bool, acc: u32, src: u32, bits: u32, flags: u32) -> u32 {
    accumulator_flags(false, signed, acc, 0, src, bits, flags)
}

/// The flags after one-operand `div` (`idiv` if `signed`) of EDX:EAX (DX:AX, AX) by
/// `src`, all undefined in the SDM: Intel's leave them as they were, AMD's change them.
/// The caller has checked that the division does not fault (`src` non-zero, the
/// quotient fits) and computes the quotient and remainder itself.
pub fn div_flags(signed: bool, eax: u32, edx: u32, src: u32, bits: u32, flags: u32) -> u32 {
    accumulator_flags(true, signed, eax, edx, src, bits, flags)
}

/// The flags after a one-operand multiply (`div`: divide) of EDX:EAX (DX:AX, AX) by
/// `src` on the host: the one-operand forms use the accumulator, so EAX and EDX are
/// loaded there (a multiply ignores EDX) and both are clobbered.
fn accumulator_flags(div: bool, signed: bool, eax: u32, edx: u32, src: u32, bits: u32, flags: u32) -> u32 {
    let (a, d, s, mut f) = (u64::from(eax), u64::from(edx), u64::from(src), flags_in(flags));
    macro_rules! run {
        ($t:literal) => {
            // SAFETY: as `with_flags`; RAX and RDX are declared clobbered, and a division
            // does not raise #DE (`div_flags`'s caller checked it).
            unsafe {
                asm!("push {f}", "popfq", "mov rax, {a}", "mov rdx, {d}", $t, "pushfq", "pop {f}", f = inout(reg) f,
                     a = in(reg) a, d = in(reg) d, s = in(reg) s, out("rax") _, out("rdx") _)
            }
        };
    }
    match (div, signed, bits) {
        (false, false, 8) => run!("mul {s:l}"),
        (false, true, 8) => run!("imul {s:l}"),
        (false, false, 16) => run!("mul {s:x}"),
        (false, true, 16) => run!("imul {s:x}"),
        (false, false, _) => run!("mul {s:e}"),
        (false, true, _) => run!("imul {s:e}"),
        (true, false, 8) => run!("div {s:l}"),
        (true, true, 8) => run!("idiv {s:l}"),
        (true, false, 16) => run!("div {s:x}"),
        (true, true, 16) => run!("idiv {s:x}"),
        (true, false, _) => run!("div {s:e}"),
        (true, true, _) => run!("idiv {s:e}"),
    }
    merge(flags, f)
}

/// SHR or SAR (`op`) of `v` (`bits` wide) by `count` (masked, not 0): the result and
/// flags. Their undefined flags on an Intel host (AF = 0, OF as for a count of 1) are
/// what `alu::shift` computes without the host's slow `popfq` (checked by dbt's
/// undefined.rs); an AMD host's differ (AF set, OF clear for larger counts) and are
/// asked of it (see `amd_like`).
pub fn shift_right(op: Shift, v: u32, count: u32, bits: u32, flags: u32) -> (u32, u32) {
    if amd_like() {
        shift(op, v, count as u8, bits, flags)
    } else {
        crate::alu::shift(op, v, count, bits, flags).unwrap_or((v, flags))
    }
}

/// The flags after two- or three-operand `imul` of `a` by `b` (16 or 32 bits).
pub fn imul_flags(a: u32, b: u32, bits: u32, flags: u32) -> u32 {
    let (mut v, s, mut f) = (u64::from(a), u64::from(b), flags_in(flags));
    if bits == 16 {
        with_flags!(f, "imul {v:x}, {s:x}", v = inout(reg) v, s = in(reg) s);
    } else {
        with_flags!(f, "imul {v:e}, {s:e}", v = inout(reg) v, s = in(reg) s);
    }
    let _ = v;
    merge(flags, f)
}

/// `rol`/`ror` by an immediate count (masked to 2..=31): the host computes OF differently
/// for the immediate and the CL forms of a multi-bit rotate, so the immediate form runs
/// as such.
fn rotate_imm<const N: u8>(left: bool, v: u32, bits: u32, flags: u32) -> (u32, u32) {
    let (mut v, mut f) = (u64::from(v), flags_in(flags));
    match (left, bits) {
        (true, 8) => with_flags!(f, "rol {v:l}, {n}", v = inout(reg) v, n = const N),
        (false, 8) => with_flags!(f, "ror {v:l}, {n}", v = inout(reg) v, n = const N),
        (true, 16) => with_flags!(f, "rol {v:x}, {n}", v = inout(reg) v, n = const N),
        (false, 16) => with_flags!(f, "ror {v:x}, {n}", v = inout(reg) v, n = const N),
        (true, _) => with_flags!(f, "rol {v:e}, {n}", v = inout(reg) v, n = const N),
        (false, _) => with_flags!(f, "ror {v:e}, {n}", v = inout(reg) v, n = const N),
    }
    (v as u32, merge(flags, f))
}

/// A shift or rotate by an immediate `count`: as [`shift`], but with the host's
/// immediate form where it differs from the CL form (`rol`/`ror` by more than 1), and
/// its memory form for a `memory` destination (whose OF differs again).
pub fn shift_imm(op: Shift, v: u32, count: u8, bits: u32, flags: u32, memory: bool) -> (u32, u32) {
    let left = op == Shift::Rol;
    macro_rules! by {
        ($($n:literal)*) => {
            match count & 0x1f {
                $($n if memory => rotate_imm_mem::<$n>(left, v, bits, flags),)*
                $($n => rotate_imm::<$n>(left, v, bits, flags),)*
                _ => shift(op, v, count, bits, flags),
            }
        };
    }
    if matches!(op, Shift::Rol | Shift::Ror) {
        by!(2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31)
    } else {
        shift(op, v, count, bits, flags)
    }
}

/// As `rotate_imm`, with the operand in memory (a local the host rotates in place).
fn rotate_imm_mem<const N: u8>(left: bool, v: u32, bits: u32, flags: u32) -> (u32, u32) {
    let mut cell = v;
    let p: *mut u32 = &mut cell;
    let mut f = flags_in(flags);
    macro_rules! rot {
        ($t:literal) => {
            // SAFETY: as `with_flags`, and the instruction reads and writes only `cell`
            // (a live local, at least as wide as the operand) through `p`.
            unsafe { asm!("push {f}", "popfq", $t, "pushfq", "pop {f}", f = inout(reg) f, p = in(reg) p, n = const N) }
        };
    }
    match (left, bits) {
        (true, 8) => rot!("rol byte ptr [{p}], {n}"),
        (false, 8) => rot!("ror byte ptr [{p}], {n}"),
        (true, 16) => rot!("rol word ptr [{p}], {n}"),
        (false, 16) => rot!("ror word ptr [{p}], {n}"),
        (true, _) => rot!("rol dword ptr [{p}], {n}"),
        (false, _) => rot!("ror dword ptr [{p}], {n}"),
    }
    (cell, merge(flags, f))
}
