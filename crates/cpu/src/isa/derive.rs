//! Deriving a form's table entry from the rows (`rows.rs`) and iced's description of the
//! form (its opcode, CPUID features and a generated instance, `sample.rs`). `build.rs`
//! runs this for every iced `Code` at build time: iced builds its opcode descriptions,
//! strings included, for all forms at their first use, which cost a cold `morph run`
//! 14 % of its time when the table was derived at run time.

use iced_x86::{
    Code, EncodingKind, FlowControl, InstructionInfoFactory, Mnemonic as M, OpAccess, OpCodeOperandKind,
    OpCodeTableKind, RflagsBits,
};

use super::rows;
use super::sample::sample;
use super::{Entry, Family, FastForm, Inline, Lower, Support, Writes, host_code};

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
    if code.encoding() == EncodingKind::Legacy && rows::in_sse(code) {
        return Support::Sse;
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
            (Family::Cond, Some(FastForm::Cond), Lower::Reencode)
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
    // EFLAGS bit positions (as `crate::state::flags`; this module is also compiled
    // into `build.rs`, which has no `crate::state`).
    [
        (RflagsBits::OF, 1 << 11),
        (RflagsBits::SF, 1 << 7),
        (RflagsBits::ZF, 1 << 6),
        (RflagsBits::AF, 1 << 4),
        (RflagsBits::CF, 1 << 0),
        (RflagsBits::PF, 1 << 2),
        (RflagsBits::DF, 1 << 10),
        (RflagsBits::IF, 1 << 9),
        (RflagsBits::AC, 1 << 18),
    ]
    .iter()
    .filter(|(b, _)| r & b != 0)
    .fold(0, |a, (_, e)| a | e)
}

pub(super) fn build(code: Code) -> Entry {
    let support = support_of(code);
    let (family, fast, lower) = match support {
        Support::Int => int_row(code),
        Support::Fpu | Support::Mmx | Support::Sse => {
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
    let host_mode64 = host_code(code).op_code().mode64();
    Entry { support, family, fast, lower, writes, flags_written, flags_undefined, host_mode64 }
}
