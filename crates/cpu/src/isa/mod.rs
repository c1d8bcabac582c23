//! The instruction table: what the modeled CPU does with each instruction form, the one
//! place the interpreter, the translator, the fault path and the tests ask.
//!
//! The guest is a P6-family core as the TM5600 presented itself: the integer ISA up to
//! the Pentium Pro, the x87 FPU and MMX, no SSE. Per iced-x86 [`Code`] (one encoding
//! form), [`entry`] gives an [`Entry`]:
//!
//! - [`Support`]: whether the CPU executes it (from the form's CPUID features, the P6
//!   hint-NOP space and the list of system instructions), so the engines can never
//!   disagree on whether an instruction exists;
//! - [`Family`]: which part of the interpreter runs it, and [`FastForm`]: the
//!   pre-decoded form the interpreter gives its common instances;
//! - [`Lower`]: how the translator lowers it — re-encoded for the host, lowered inline
//!   by hand, or run by the interpreter through a helper call ([`lowering`] refines this
//!   per instance: 16-bit addressing, `bt m, r`, ... go to the helper);
//! - [`Writes`] and the EFLAGS it writes and leaves undefined, derived from iced's
//!   description of a generated instance of the form ([`sample`]).
//!
//! The readable part is in `rows.rs` (per mnemonic, and the forms that differ); the
//! entries are built from it on first use. Adding an instruction is a row, its
//! semantics in the interpreter, and a test; `dbt/tests/table.rs` runs every supported
//! form under both engines.

use std::sync::OnceLock;

use iced_x86::{
    Code, EncodingKind, FlowControl, Instruction, InstructionInfoFactory, Mnemonic as M, OpAccess, OpCodeOperandKind,
    OpCodeTableKind, OpKind, Register, RflagsBits,
};

mod rows;
mod sample;

pub use sample::{SAMPLE_DISP, sample};

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

/// The part of the interpreter that executes an instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// `jcc`, `setcc`, `cmovcc`.
    Cond,
    /// Moves, exchanges, sign extensions, `lahf`/`sahf`, `xlat`.
    Data,
    /// Add, subtract, logic, increment, negate, multiply, divide.
    Arith,
    /// Shifts, rotates, double shifts, bit tests and scans.
    Bits,
    /// Decimal adjusts.
    Bcd,
    /// Pushes, pops, `enter`, `leave`.
    Stack,
    /// Jumps, calls, returns, loops.
    Branch,
    /// Software interrupts, `bound`, `cpuid`, `rdtsc`, `fwait`, flag bits, `ud`.
    Misc,
    /// `movs`, `stos`, `lods`, `cmps`, `scas`.
    String,
    /// x87 and MMX (the host FPU runs them).
    Fpu,
    /// Nothing to run: a NOP, or a fault (`System`, `Invalid`, an integer mnemonic
    /// without a row).
    None,
}

/// The interpreter's pre-decoded forms (see `interp/fast.rs`): a form has one when some
/// of its instances (32-bit operands, 32-bit addressing) can be pre-decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FastForm {
    /// `mov r/m32, r/m32/imm32`.
    Mov,
    /// `movzx`/`movsx` into a 32-bit register.
    Ext,
    /// `add`, `sub`, `and`, `or`, `xor`, `cmp`, `test` on 32 bits.
    Alu,
    /// `lea r32`.
    Lea,
    /// `push r/m32/imm`.
    Push,
    /// `pop r32` (not ESP).
    Pop,
    /// A 32-bit conditional jump.
    Jcc,
    /// A direct 32-bit jump, or one through a 32-bit operand.
    Jmp,
    /// A direct 32-bit call, or one through a 32-bit operand.
    Call,
    /// `ret`.
    Ret,
}

/// How the translator lowers an instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lower {
    /// Nothing is emitted (a NOP).
    Skip,
    /// Re-encoded for the host, its memory operand moved into the process window.
    Reencode,
    /// Re-encoded, with the guest FPU state live in the host FPU (x87, MMX).
    Fpu,
    /// Lowered by hand.
    Inline(Inline),
    /// Run by the reference interpreter through a helper call.
    Helper,
}

/// The instructions the translator lowers by hand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Inline {
    /// A 32-bit conditional jump: a side exit, or the block's end.
    Jcc,
    /// A direct 32-bit jump: a chain site.
    Jmp,
    /// A direct 32-bit call: the return address pushed, a chain site.
    Call,
    /// A jump through a 32-bit register or memory operand: the jump cache.
    JmpInd,
    /// A call through a 32-bit register or memory operand: the jump cache.
    CallInd,
    /// `ret` and `ret imm16`: the jump cache.
    Ret,
    /// A 32-bit push on the guest stack (r12d).
    Push,
    /// A 32-bit pop into a register.
    Pop,
    /// `leave`.
    Leave,
    /// `int 0x80`: a system-call exit.
    Syscall,
    /// A string instruction run as the host's own.
    String,
    /// `jecxz`, `loop`, `loope`, `loopne` on ECX.
    EcxBranch,
}

/// Whether an instruction writes memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Writes {
    /// Never.
    Never,
    /// When its explicit operand is memory.
    MemOperand,
    /// Always (the stack, a string destination), or not known.
    Always,
}

/// What the modeled CPU does with one instruction form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    /// Whether (and how) the modeled CPU executes it.
    pub support: Support,
    /// The part of the interpreter that runs it.
    pub family: Family,
    /// The interpreter's pre-decoded form of its common instances.
    pub fast: Option<FastForm>,
    /// How the translator lowers it (see [`lowering`] for an instance).
    pub lower: Lower,
    /// Whether it writes memory.
    pub writes: Writes,
    /// EFLAGS bits it writes (defined or not).
    pub flags_written: u32,
    /// Of those, the ones the SDM leaves undefined: the host's values (see `host.rs`),
    /// in the interpreter as in translated code.
    pub flags_undefined: u32,
}

impl Entry {
    /// Whether `ins`, an instance of this form, writes memory.
    pub fn writes(&self, ins: &Instruction) -> bool {
        match self.writes {
            Writes::Never => false,
            Writes::Always => true,
            Writes::MemOperand => ins.op_kinds().any(|k| k == OpKind::Memory),
        }
    }
}

/// The entry of `code`.
pub fn entry(code: Code) -> &'static Entry {
    static TABLE: OnceLock<Box<[OnceLock<Entry>]>> = OnceLock::new();
    let t = TABLE.get_or_init(|| Code::values().map(|_| OnceLock::new()).collect());
    t[code as usize].get_or_init(|| build(code))
}

/// How the modeled CPU treats `ins`.
#[inline]
pub fn support(ins: &Instruction) -> Support {
    entry(ins.code()).support
}

/// How the translator lowers `ins`: its form's [`Lower`], refined for this instance
/// (where the host encoding of the form cannot express it, the helper runs it).
pub fn lowering(ins: &Instruction) -> Lower {
    let lower = entry(ins.code()).lower;
    if matches!(lower, Lower::Skip | Lower::Helper) {
        return lower;
    }
    // 16-bit addressing wraps at 64 KiB, which no 64-bit address computes.
    if ins.memory_base().size() == 2 || ins.memory_index().size() == 2 {
        return Lower::Helper;
    }
    let ok = match lower {
        // `bt m, r` addresses memory beyond the operand by the bit offset's high bits.
        Lower::Reencode => {
            !(matches!(ins.mnemonic(), M::Bt | M::Bts | M::Btr | M::Btc)
                && ins.op0_kind() == OpKind::Memory
                && ins.op1_kind() == OpKind::Register)
        }
        // `pop esp` stores over the incremented ESP; `pop m32` addresses with it.
        Lower::Inline(Inline::Pop) => ins.op0_kind() == OpKind::Register && ins.op0_register() != Register::ESP,
        Lower::Inline(Inline::Syscall) => ins.immediate8() == 0x80,
        Lower::Inline(Inline::String) => host_string(ins),
        _ => true,
    };
    if ok { lower } else { Lower::Helper }
}

/// Whether the host can run string instruction `ins` as its own (see the translator's
/// `string_seq`): a 32-bit address size, no segment override on the source, no `lock`.
fn host_string(ins: &Instruction) -> bool {
    let uses_esi = !matches!(ins.mnemonic(), M::Stosb | M::Stosw | M::Stosd | M::Scasb | M::Scasw | M::Scasd);
    let wide = (0..ins.op_count()).all(|i| !matches!(ins.op_kind(i), OpKind::MemorySegSI | OpKind::MemoryESDI));
    let plain = !uses_esi || matches!(ins.segment_prefix(), Register::None | Register::DS);
    wide && plain && !ins.has_lock_prefix()
}

/// The form the host runs for guest form `c`: the 64-bit-mode encoding of forms that
/// have none (short `inc`/`dec`, moffs moves), and BSF/BSR for TZCNT/LZCNT, which the
/// TM5600 (without BMI1/LZCNT) runs as those.
pub fn host_code(c: Code) -> Code {
    match c {
        Code::Inc_r32 => Code::Inc_rm32,
        Code::Dec_r32 => Code::Dec_rm32,
        Code::Inc_r16 => Code::Inc_rm16,
        Code::Dec_r16 => Code::Dec_rm16,
        Code::Mov_AL_moffs8 => Code::Mov_r8_rm8,
        Code::Mov_AX_moffs16 => Code::Mov_r16_rm16,
        Code::Mov_EAX_moffs32 => Code::Mov_r32_rm32,
        Code::Mov_moffs8_AL => Code::Mov_rm8_r8,
        Code::Mov_moffs16_AX => Code::Mov_rm16_r16,
        Code::Mov_moffs32_EAX => Code::Mov_rm32_r32,
        Code::Tzcnt_r32_rm32 => Code::Bsf_r32_rm32,
        Code::Tzcnt_r16_rm16 => Code::Bsf_r16_rm16,
        Code::Lzcnt_r32_rm32 => Code::Bsr_r32_rm32,
        Code::Lzcnt_r16_rm16 => Code::Bsr_r16_rm16,
        c => c,
    }
}

/// Whether `code` is in the P6 hint-NOP space `0F 18`–`0F 1F`.
fn is_hint_nop(code: Code) -> bool {
    let op = code.op_code();
    // iced gives the ModR/M byte of the fixed-ModR/M forms (ENDBR32 `F3 0F 1E FB`) as a
    // second opcode byte.
    let first = if op.op_code_len() == 2 { op.op_code() >> 8 } else { op.op_code() };
    op.encoding() == EncodingKind::Legacy && op.table() == OpCodeTableKind::T0F && (0x18..=0x1f).contains(&first)
}

fn support_of(code: Code) -> Support {
    let m = code.mnemonic();
    if code == Code::INVALID {
        return Support::Invalid;
    }
    if is_hint_nop(code) || matches!(m, M::Nop | M::Pause) {
        return Support::Nop;
    }
    // TZCNT/LZCNT (F3 0F BC/BD) execute as BSF/BSR on CPUs without BMI1/LZCNT, and
    // compilers emit TZCNT for BSF relying on exactly that.
    if matches!(m, M::Tzcnt | M::Lzcnt) {
        return Support::Int;
    }
    let control_reg = code
        .op_code()
        .op_kinds()
        .iter()
        .any(|k| matches!(k, OpCodeOperandKind::cr_reg | OpCodeOperandKind::dr_reg | OpCodeOperandKind::tr_reg));
    if control_reg || rows::SYSTEM.contains(&m) {
        return Support::System;
    }
    if !rows::in_isa(code) {
        return Support::Invalid;
    }
    let f = code.cpuid_features();
    if f.contains(&iced_x86::CpuidFeature::MMX) {
        Support::Mmx
    } else if f.iter().any(|f| {
        matches!(f, iced_x86::CpuidFeature::FPU | iced_x86::CpuidFeature::FPU287 | iced_x86::CpuidFeature::FPU387)
    }) {
        Support::Fpu
    } else {
        Support::Int
    }
}

/// The family, fast form and lowering of an integer form, from the rows.
fn int_row(code: Code) -> (Family, Option<FastForm>, Lower) {
    let m = code.mnemonic();
    let (family, fast, mut lower) = if code.condition_code() != iced_x86::ConditionCode::None && !code.is_loopcc() {
        if code.is_jcc_short_or_near() {
            let wide = code.op_code().operand_size() != 16;
            (Family::Cond, Some(FastForm::Jcc), if wide { Lower::Inline(Inline::Jcc) } else { Lower::Helper })
        } else {
            (Family::Cond, None, Lower::Reencode)
        }
    } else {
        match rows::ROWS.iter().find(|r| r.ms.contains(&m)) {
            Some(r) => (r.family, r.fast, r.lower),
            None => return (Family::None, None, Lower::Helper),
        }
    };
    if let Some(&(_, l)) = rows::LOWER_BY_CODE.iter().find(|(c, _)| *c == code) {
        lower = l;
    }
    let seg = code.op_code().op_kinds().iter().any(|k| {
        use OpCodeOperandKind as K;
        matches!(k, K::seg_reg | K::es | K::cs | K::ss | K::ds | K::fs | K::gs)
    });
    // Re-encoding needs a 64-bit form with the same meaning: none for segment registers
    // (no guest segment lives in a host one) or for control transfers.
    let reencodable = host_code(code).op_code().mode64() && !seg && code.flow_control() == FlowControl::Next;
    if lower == Lower::Reencode && !reencodable {
        lower = Lower::Helper;
    }
    (family, fast, lower)
}

/// EFLAGS bits of iced's `RflagsBits`.
fn eflags(r: u32) -> u32 {
    use crate::state::flags as f;
    [
        (RflagsBits::OF, f::OF),
        (RflagsBits::SF, f::SF),
        (RflagsBits::ZF, f::ZF),
        (RflagsBits::AF, f::AF),
        (RflagsBits::CF, f::CF),
        (RflagsBits::PF, f::PF),
        (RflagsBits::DF, f::DF),
        (RflagsBits::IF, 1 << 9),
        (RflagsBits::AC, 1 << 18),
    ]
    .iter()
    .filter(|(b, _)| r & b != 0)
    .fold(0, |a, (_, e)| a | e)
}

fn build(code: Code) -> Entry {
    let support = support_of(code);
    let (family, fast, lower) = match support {
        Support::Int => int_row(code),
        Support::Fpu | Support::Mmx => {
            (Family::Fpu, None, if rows::FPU_HELPER.contains(&code.mnemonic()) { Lower::Helper } else { Lower::Fpu })
        }
        Support::Nop => (Family::None, None, Lower::Skip),
        Support::System | Support::Invalid => (Family::None, None, Lower::Helper),
    };
    // What iced says of a generated register form and memory form (the flags of the
    // form the host runs: TZCNT's are BSF's).
    let mut info = InstructionInfoFactory::new();
    let mut writes_of = |memory: bool| {
        sample(code, memory, 0).map(|(_, ins)| {
            info.info(&ins).used_memory().iter().any(|m| {
                !matches!(m.access(), OpAccess::Read | OpAccess::CondRead | OpAccess::NoMemAccess | OpAccess::None)
            })
        })
    };
    let writes = match (writes_of(false), writes_of(true)) {
        (Some(true), _) | (None, None) => Writes::Always,
        (_, Some(true)) => Writes::MemOperand,
        _ => Writes::Never,
    };
    let flags = sample(host_code(code), false, 0).or_else(|| sample(host_code(code), true, 0));
    let (flags_written, flags_undefined) =
        flags.map_or((0, 0), |(_, i)| (eflags(i.rflags_modified()), eflags(i.rflags_undefined())));
    let writes = if support == Support::Invalid { Writes::Always } else { writes };
    Entry { support, family, fast, lower, writes, flags_written, flags_undefined }
}
