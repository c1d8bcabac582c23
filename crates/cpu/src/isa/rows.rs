//! The rows of the instruction table: per mnemonic, the interpreter family, the fast
//! form and the translation strategy; then the forms (`Code`s) whose strategy differs
//! from their mnemonic's. A mnemonic of the integer ISA without a row is `#UD` in both
//! engines.

use iced_x86::{Code, Mnemonic as M};

use super::{Family as F, FastForm as Fast, Inline as I, Lower as L};

/// One row: mnemonics that share a family, a fast form and a lowering.
pub(super) struct Row {
    pub ms: &'static [M],
    pub family: F,
    pub fast: Option<Fast>,
    pub lower: L,
}

const fn row(ms: &'static [M], family: F, fast: Option<Fast>, lower: L) -> Row {
    Row { ms, family, fast, lower }
}

/// The integer rows (conditional jumps, `setcc` and `cmovcc` are found by their
/// condition code: family `Cond`, fast form `Jcc` for the jumps).
#[rustfmt::skip]
pub(super) const ROWS: &[Row] = &[
    // Data movement.
    row(&[M::Mov], F::Data, Some(Fast::Mov), L::Reencode),
    row(&[M::Movzx, M::Movsx], F::Data, Some(Fast::Ext), L::Reencode),
    row(&[M::Lea], F::Data, Some(Fast::Lea), L::Reencode),
    row(&[M::Xchg, M::Bswap, M::Xadd, M::Cmpxchg, M::Cmpxchg8b, M::Cbw, M::Cwde, M::Cwd, M::Cdq, M::Lahf, M::Sahf],
        F::Data, None, L::Reencode),
    row(&[M::Xlatb], F::Data, None, L::Helper),
    // Arithmetic.
    row(&[M::Add, M::Sub, M::And, M::Or, M::Xor, M::Cmp, M::Test, M::Adc, M::Sbb], F::Arith, Some(Fast::Alu), L::Reencode),
    row(&[M::Inc, M::Dec, M::Neg, M::Not], F::Arith, Some(Fast::Unary), L::Reencode),
    row(&[M::Imul], F::Arith, Some(Fast::Imul), L::Reencode),
    row(&[M::Mul, M::Div, M::Idiv], F::Arith, None, L::Reencode),
    // Shifts, rotates, bit tests and scans (TZCNT/LZCNT run as BSF/BSR, see `host_code`).
    row(&[M::Shl, M::Sal, M::Shr, M::Sar], F::Bits, Some(Fast::Shift), L::Reencode),
    row(&[M::Shld, M::Shrd], F::Bits, Some(Fast::DoubleShift), L::Reencode),
    row(&[M::Rol, M::Ror, M::Rcl, M::Rcr], F::Bits, None, L::Reencode),
    row(&[M::Bt, M::Bts, M::Btr, M::Btc, M::Bsf, M::Bsr, M::Tzcnt, M::Lzcnt], F::Bits, None, L::Reencode),
    // Decimal adjusts (no 64-bit encoding: the helper runs them).
    row(&[M::Aaa, M::Aas, M::Daa, M::Das, M::Aam, M::Aad], F::Bcd, None, L::Helper),
    // The stack.
    row(&[M::Push], F::Stack, Some(Fast::Push), L::Helper),
    row(&[M::Pop], F::Stack, Some(Fast::Pop), L::Helper),
    row(&[M::Pusha, M::Pushad, M::Popa, M::Popad, M::Pushf, M::Pushfd, M::Popf, M::Popfd, M::Enter],
        F::Stack, None, L::Helper),
    row(&[M::Leave], F::Stack, Some(Fast::Leave), L::Helper),
    // Control transfers.
    row(&[M::Jmp], F::Branch, Some(Fast::Jmp), L::Helper),
    row(&[M::Call], F::Branch, Some(Fast::Call), L::Helper),
    row(&[M::Ret], F::Branch, Some(Fast::Ret), L::Helper),
    row(&[M::Jecxz, M::Jcxz, M::Loop, M::Loope, M::Loopne, M::Retf, M::Iret, M::Iretd], F::Branch, None, L::Helper),
    // Traps, flags and the rest.
    row(&[M::Int, M::Int1, M::Int3, M::Into, M::Bound, M::Cpuid, M::Rdtsc, M::Wait, M::Ud0, M::Ud1, M::Ud2, M::Salc], F::Misc, None, L::Helper),
    row(&[M::Clc, M::Stc, M::Cmc, M::Cld, M::Std], F::Misc, None, L::Reencode),
    // Segments: far-pointer loads, selectors and descriptors (the GDT Linux gives a user
    // process, `Cpu::descriptor`), and the descriptor-table stores Linux emulates under
    // UMIP.
    row(&[M::Lds, M::Les, M::Lfs, M::Lgs, M::Lss, M::Arpl, M::Lar, M::Lsl, M::Verr, M::Verw,
          M::Sgdt, M::Sidt, M::Sldt, M::Str, M::Smsw], F::Segment, None, L::Helper),
    // String instructions.
    row(&[M::Movsb, M::Movsw, M::Movsd, M::Stosb, M::Stosw, M::Stosd, M::Lodsb, M::Lodsw, M::Lodsd,
          M::Cmpsb, M::Cmpsw, M::Cmpsd, M::Scasb, M::Scasw, M::Scasd], F::String, None, L::Inline(I::String)),
];

/// Forms lowered otherwise than their mnemonic's row says: the 32-bit forms the
/// translator lowers by hand (the other sizes of the same mnemonics go to the helper).
#[rustfmt::skip]
pub(super) const LOWER_BY_CODE: &[(Code, L)] = &[
    (Code::Push_r32, L::Inline(I::Push)),
    (Code::Push_rm32, L::Inline(I::Push)),
    (Code::Pushd_imm8, L::Inline(I::Push)),
    (Code::Pushd_imm32, L::Inline(I::Push)),
    (Code::Pop_r32, L::Inline(I::Pop)),
    (Code::Pop_rm32, L::Inline(I::Pop)),
    (Code::Leaved, L::Inline(I::Leave)),
    (Code::Jmp_rel8_32, L::Inline(I::Jmp)),
    (Code::Jmp_rel32_32, L::Inline(I::Jmp)),
    (Code::Jmp_rm32, L::Inline(I::JmpInd)),
    (Code::Call_rel32_32, L::Inline(I::Call)),
    (Code::Call_rm32, L::Inline(I::CallInd)),
    (Code::Retnd, L::Inline(I::Ret)),
    (Code::Retnd_imm16, L::Inline(I::Ret)),
    (Code::Int_imm8, L::Inline(I::Syscall)),
    (Code::Jecxz_rel8_32, L::Inline(I::EcxBranch)),
    (Code::Loop_rel8_32_ECX, L::Inline(I::EcxBranch)),
    (Code::Loope_rel8_32_ECX, L::Inline(I::EcxBranch)),
    (Code::Loopne_rel8_32_ECX, L::Inline(I::EcxBranch)),
];

/// Whether all of a form's CPUID features are the TM5600's.
pub(super) fn in_isa(code: Code) -> bool {
    code.cpuid_features().iter().all(|&f| in_tm5600(f))
}

/// Whether a form is SSE's or SSE2's (or FXSAVE's): at least one of its CPUID features is
/// one of those the TM8600 adds to the TM5600's, and all the others are the TM5600's.
pub(super) fn in_sse(code: Code) -> bool {
    use iced_x86::CpuidFeature as C;
    let added = |f: &C| matches!(f, C::SSE | C::SSE2 | C::FXSR);
    let f = code.cpuid_features();
    f.iter().any(added) && f.iter().all(|g| added(g) || in_tm5600(*g))
}

fn in_tm5600(f: iced_x86::CpuidFeature) -> bool {
    use iced_x86::CpuidFeature as C;
    matches!(
        f,
        C::INTEL8086
            | C::INTEL8086_ONLY
            | C::INTEL186
            | C::INTEL286
            | C::INTEL386
            | C::INTEL486
            | C::FPU
            | C::FPU287
            | C::FPU387
            | C::CMOV
            | C::MMX
            | C::TSC
            | C::CX8
            | C::CPUID
            | C::SEP
            | C::MULTIBYTENOP
            | C::PAUSE
    )
}

/// Mnemonics that raise `#GP(0)` at CPL 3 with IOPL 0 (moves to and from control, debug
/// and test registers are found by their operands).
#[rustfmt::skip]
pub(super) const SYSTEM: &[M] = &[
    M::Hlt, M::Cli, M::Sti, M::In, M::Out, M::Insb, M::Insw, M::Insd, M::Outsb, M::Outsw, M::Outsd,
    M::Rdmsr, M::Wrmsr, M::Rdpmc, M::Lgdt, M::Lidt, M::Lldt, M::Ltr, M::Clts, M::Invd, M::Wbinvd,
    M::Invlpg, M::Lmsw, M::Sysexit, M::Sysenter,
];

/// x87 forms the translator leaves to the helper: their images hold the instruction
/// pointer, which would be the host's (and `fwait`'s 64-bit meaning is the same but it
/// raises a pending exception the interpreter must report).
pub(super) const FPU_HELPER: &[M] = &[
    M::Fnstenv,
    M::Fstenv,
    M::Fnsave,
    M::Fsave,
    M::Fldenv,
    M::Frstor,
    M::Wait,
    // The MXCSR and the whole FXSAVE image are checked and moved by the interpreter;
    // the masked moves store through an implicit `[edi]`.
    M::Ldmxcsr,
    M::Stmxcsr,
    M::Fxsave,
    M::Fxrstor,
    M::Maskmovq,
    M::Maskmovdqu,
];
