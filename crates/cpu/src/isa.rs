//! What the modeled CPU does with an instruction: the one place the interpreter, the
//! translator and the tests ask (a first step towards one instruction table).
//!
//! The guest is a P6-family core as the TM5600 presented itself: the integer ISA up to
//! the Pentium Pro, the x87 FPU and MMX, no SSE. [`support`] sorts every decoded
//! instruction into a [`Support`] class; the interpreter executes by class and the
//! translator re-encodes only `Int` (and x87/MMX), emits nothing for `Nop` and hands
//! `System` and `Invalid` to the interpreter, so the two can never disagree on whether
//! an instruction exists.

use iced_x86::{CpuidFeature, EncodingKind, Instruction, Mnemonic as M, OpCodeTableKind, OpKind, Register};

/// How the modeled CPU treats an instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Support {
    /// An integer instruction it executes.
    Int,
    /// An x87 instruction.
    Fpu,
    /// An MMX instruction.
    Mmx,
    /// A NOP: `90` (also as `pause`) and the whole hint space `0F 18`–`0F 1F` with any
    /// prefixes and ModR/M, which P6 reserved as NOPs (prefetch hints, the multi-byte
    /// NOP, and what later CPUs put there: MPX, CET's `endbr`/`rdssp`, `cldemote`). A
    /// memory operand is not accessed.
    Nop,
    /// A system instruction that raises `#GP(0)` at CPL 3 (privileged, I/O with IOPL 0,
    /// descriptor tables and segment loads morph does not model). Never run on the host.
    System,
    /// Not part of the ISA: `#UD`.
    Invalid,
}

/// Whether all of an instruction's CPUID features are the TM5600's.
fn in_isa(ins: &Instruction) -> bool {
    ins.cpuid_features().iter().all(|f| {
        matches!(
            f,
            CpuidFeature::INTEL8086
                | CpuidFeature::INTEL8086_ONLY
                | CpuidFeature::INTEL186
                | CpuidFeature::INTEL286
                | CpuidFeature::INTEL386
                | CpuidFeature::INTEL486
                | CpuidFeature::FPU
                | CpuidFeature::FPU287
                | CpuidFeature::FPU387
                | CpuidFeature::CMOV
                | CpuidFeature::MMX
                | CpuidFeature::TSC
                | CpuidFeature::CX8
                | CpuidFeature::CPUID
                | CpuidFeature::SEP
                | CpuidFeature::MULTIBYTENOP
                | CpuidFeature::PAUSE
        )
    })
}

/// Whether `ins` is in the P6 hint-NOP space `0F 18`–`0F 1F`.
pub fn is_hint_nop(ins: &Instruction) -> bool {
    let op = ins.op_code();
    // iced gives the ModR/M byte of the fixed-ModR/M forms (ENDBR32 `F3 0F 1E FB`) as a
    // second opcode byte.
    let first = if op.op_code_len() == 2 { op.op_code() >> 8 } else { op.op_code() };
    op.encoding() == EncodingKind::Legacy && op.table() == OpCodeTableKind::T0F && (0x18..=0x1f).contains(&first)
}

/// Whether `ins` raises `#GP(0)` at CPL 3 with IOPL 0.
fn is_system(ins: &Instruction) -> bool {
    let cr_or_dr = |r: Register| r.is_cr() || r.is_dr() || r.is_tr();
    match ins.mnemonic() {
        M::Mov => (0..ins.op_count()).any(|i| ins.op_kind(i) == OpKind::Register && cr_or_dr(ins.op_register(i))),
        m => matches!(
            m,
            M::Hlt
                | M::Cli
                | M::Sti
                | M::In
                | M::Out
                | M::Insb
                | M::Insw
                | M::Insd
                | M::Outsb
                | M::Outsw
                | M::Outsd
                | M::Rdmsr
                | M::Wrmsr
                | M::Rdpmc
                | M::Lgdt
                | M::Lidt
                | M::Lldt
                | M::Ltr
                | M::Clts
                | M::Invd
                | M::Wbinvd
                | M::Invlpg
                | M::Lmsw
                | M::Sysexit
                | M::Lds
                | M::Les
                | M::Lfs
                | M::Lgs
                | M::Lss
                | M::Arpl
                | M::Lar
                | M::Lsl
                | M::Verr
                | M::Verw
                | M::Sgdt
                | M::Sidt
                | M::Sldt
                | M::Str
                | M::Smsw
                | M::Sysenter
        ),
    }
}

/// How the modeled CPU treats `ins`.
pub fn support(ins: &Instruction) -> Support {
    if ins.is_invalid() {
        return Support::Invalid;
    }
    if is_hint_nop(ins) || matches!(ins.mnemonic(), M::Nop | M::Pause) {
        return Support::Nop;
    }
    // TZCNT/LZCNT (F3 0F BC/BD) execute as BSF/BSR on CPUs without BMI1/LZCNT, and
    // compilers emit TZCNT for BSF relying on exactly that.
    if matches!(ins.mnemonic(), M::Tzcnt | M::Lzcnt) {
        return Support::Int;
    }
    if is_system(ins) {
        return Support::System;
    }
    if !in_isa(ins) {
        return Support::Invalid;
    }
    let f = ins.cpuid_features();
    if f.contains(&CpuidFeature::MMX) {
        Support::Mmx
    } else if f.iter().any(|f| matches!(f, CpuidFeature::FPU | CpuidFeature::FPU287 | CpuidFeature::FPU387)) {
        Support::Fpu
    } else {
        Support::Int
    }
}
