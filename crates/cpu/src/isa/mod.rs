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
//! entries are derived from it (`derive.rs`) for every form at build time by `build.rs`,
//! so nothing is computed when morph starts. Adding an instruction is a row, its
//! semantics in the interpreter, and a test; `dbt/tests/table.rs` runs every supported
//! form under both engines.

use iced_x86::{Code, Instruction, Mnemonic as M, OpKind, Register};

#[cfg(test)]
mod derive;
#[cfg(test)]
mod rows;
mod sample;
mod types;

pub use sample::{SAMPLE_DISP, sample};
pub use types::*;

// `static TABLE: [Entry; _]`, indexed by `Code`, written by `build.rs`.
include!(concat!(env!("OUT_DIR"), "/isa_table.rs"));

/// The entry of `code`.
#[inline]
pub fn entry(code: Code) -> &'static Entry {
    &TABLE[code as usize]
}

/// How the modeled CPU treats `ins`.
#[inline]
pub fn support(ins: &Instruction) -> Support {
    entry(ins.code()).support
}

/// How the modeled CPU treats this instance of a form: its form's [`Support`], but
/// [`Support::System`] (`#GP(0)`) for a write through a CS override, which no user code
/// segment allows ([`writes_through_cs`]).
#[inline]
pub fn class(ins: &Instruction) -> Support {
    if writes_through_cs(ins) { Support::System } else { support(ins) }
}

/// Whether `ins` writes its explicit memory operand through a CS segment override: a
/// code segment is never writable, so the CPU raises `#GP(0)` (reads through CS are
/// allowed: user code segments are readable).
pub fn writes_through_cs(ins: &Instruction) -> bool {
    use iced_x86::{InstructionInfoFactory, OpAccess};
    // The explicit operand, or the masked moves' `[edi]` (which takes overrides).
    let memory = |k: OpKind| matches!(k, OpKind::Memory | OpKind::MemorySegEDI | OpKind::MemorySegDI);
    // `arpl` writes only when it raises the RPL, and is refused then (`interp::segment`).
    if ins.segment_prefix() != Register::CS
        || !ins.op_kinds().any(memory)
        || umip_store(ins)
        || ins.mnemonic() == M::Arpl
    {
        return false;
    }
    let mut factory = InstructionInfoFactory::new();
    let info = factory.info(ins);
    (0..ins.op_count()).any(|i| {
        memory(ins.op_kind(i))
            && matches!(
                info.op_access(i),
                OpAccess::Write | OpAccess::CondWrite | OpAccess::ReadWrite | OpAccess::ReadCondWrite
            )
    })
}

/// Whether `ins` is a descriptor-table store (`sgdt`, `sidt`, `sldt`, `str`, `smsw`):
/// with UMIP, Linux stores their values on the CPU's behalf, through the segment's base
/// whatever the segment allows but the null selector.
pub fn umip_store(ins: &Instruction) -> bool {
    matches!(ins.mnemonic(), M::Sgdt | M::Sidt | M::Sldt | M::Str | M::Smsw)
}

/// Whether `ins` moves ESP as part of what it does (a push, a pop, a call, a return,
/// `enter`, `leave`): its stack slots are accessed through SS.
pub fn moves_esp(ins: &Instruction) -> bool {
    ins.stack_pointer_increment() != 0 || matches!(ins.mnemonic(), M::Enter | M::Leave)
}

/// Whether `ins` loads a data segment register: a move or pop to one, or a far-pointer
/// load.
pub fn loads_segment(ins: &Instruction) -> bool {
    match ins.mnemonic() {
        M::Mov | M::Pop => ins.op0_kind() == OpKind::Register && ins.op0_register().is_segment_register(),
        M::Lds | M::Les | M::Lfs | M::Lgs | M::Lss => true,
        _ => false,
    }
}

/// The segment registers (`state::seg` indices) the memory operands of `ins` go
/// through, each with its operand's index: the explicit operand (not `lea`'s) with its
/// segment, a string instruction's source and its `ES:[EDI]`. Stack accesses (SS,
/// always the flat data segment) are not listed, nor the operands of `ud0`/`ud1`
/// (`#UD` first).
pub fn memory_segments(ins: &Instruction) -> [Option<(usize, u32)>; 2] {
    let mut uses = [None; 2];
    if matches!(ins.mnemonic(), M::Ud0 | M::Ud1) {
        return uses;
    }
    let mut n = 0;
    for i in 0..ins.op_count() {
        let seg = match ins.op_kind(i) {
            OpKind::Memory if ins.mnemonic() != M::Lea => ins.memory_segment(),
            OpKind::MemorySegSI | OpKind::MemorySegESI | OpKind::MemorySegDI | OpKind::MemorySegEDI => {
                ins.memory_segment()
            }
            OpKind::MemoryESDI | OpKind::MemoryESEDI => Register::ES,
            _ => continue,
        };
        if n < uses.len() {
            uses[n] = Some(((seg as usize).wrapping_sub(Register::ES as usize), i));
            n += 1;
        }
    }
    uses
}

/// Whether the CPU writes memory operand `i` of `ins` (for the segment's permission:
/// not the descriptor-table stores, which Linux makes on the CPU's behalf under UMIP).
pub fn operand_written(ins: &Instruction, i: u32) -> bool {
    use iced_x86::{InstructionInfoFactory, OpAccess};
    !umip_store(ins)
        && matches!(
            InstructionInfoFactory::new().info(ins).op_access(i),
            OpAccess::Write | OpAccess::CondWrite | OpAccess::ReadWrite | OpAccess::ReadCondWrite
        )
}

/// The condition a `loope` or `loopne` (any operand and address size) runs with: its
/// own, or, on an AMD host, the one its last `rep` prefix picks (F3 `loope`, F2
/// `loopne`, measured: `host::amd_like`). The interpreter and the translator both ask
/// this, so they follow one model.
pub fn loop_condition(ins: &Instruction) -> M {
    let own = ins.mnemonic();
    if !crate::host::amd_like() {
        own
    } else if ins.has_repe_prefix() {
        M::Loope
    } else if ins.has_repne_prefix() {
        M::Loopne
    } else {
        own
    }
}

/// Whether string instruction `ins` addresses with SI, DI and CX (an address-size
/// prefix) rather than ESI, EDI and ECX.
pub fn string_a16(ins: &Instruction) -> bool {
    ins.op_kinds().any(|k| matches!(k, OpKind::MemorySegSI | OpKind::MemorySegDI | OpKind::MemoryESDI))
}

/// How the translator lowers `ins`: its form's [`Lower`], refined for this instance
/// (where the host encoding of the form cannot express it, the helper runs it).
pub fn lowering(ins: &Instruction) -> Lower {
    let lower = entry(ins.code()).lower;
    if matches!(lower, Lower::Skip | Lower::Helper) || writes_through_cs(ins) {
        return if lower == Lower::Skip { lower } else { Lower::Helper };
    }
    // 16-bit addressing wraps at 64 KiB, which no 64-bit address computes.
    if ins.memory_base().size() == 2 || ins.memory_index().size() == 2 {
        return Lower::Helper;
    }
    // An x87 operand through another segment than DS or SS: the interpreter keeps its
    // selector for the x87 environment (FDS; `interp::fpu::env_selectors`).
    if lower == Lower::Fpu
        && ins.op_kinds().any(|k| k == OpKind::Memory)
        && matches!(ins.segment_prefix(), Register::ES | Register::CS | Register::FS | Register::GS)
    {
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

/// Whether the instruction whose bytes start `bytes` (decoded in 32-bit mode) reads its
/// explicit memory operand in order to write it (`add m, r`, `inc m`, `xchg`,
/// `cmpxchg`...): the CPU reads such an operand for writing, so a page fault on it is
/// reported as a write (error code bit 1) even when the page is not there to read.
/// Decodes afresh: only a fault needs to know.
pub fn reads_for_write(bytes: &[u8]) -> bool {
    use iced_x86::{Decoder, DecoderOptions, InstructionInfoFactory, OpAccess};
    let ins = Decoder::new(32, bytes, DecoderOptions::NONE).decode();
    // `arpl` reads its selector and writes it only if it raises the RPL.
    if ins.is_invalid() || ins.mnemonic() == M::Arpl {
        return false;
    }
    let mut factory = InstructionInfoFactory::new();
    let info = factory.info(&ins);
    (0..ins.op_count()).any(|i| {
        ins.op_kind(i) == OpKind::Memory && matches!(info.op_access(i), OpAccess::ReadWrite | OpAccess::ReadCondWrite)
    })
}

/// Whether the host can run string instruction `ins` as its own (see the translator's
/// `string_seq`): a 32-bit address size, no segment override on the source, no `lock`.
fn host_string(ins: &Instruction) -> bool {
    let uses_esi = !matches!(ins.mnemonic(), M::Stosb | M::Stosw | M::Stosd | M::Scasb | M::Scasw | M::Scasd);
    let wide = (0..ins.op_count()).all(|i| !matches!(ins.op_kind(i), OpKind::MemorySegSI | OpKind::MemoryESDI));
    let plain = !uses_esi || matches!(ins.segment_prefix(), Register::None | Register::DS);
    wide && plain && !ins.has_lock_prefix()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_generated_table_is_the_derived_one() {
        assert_eq!(TABLE.len(), Code::values().count());
        for code in Code::values() {
            assert_eq!(*entry(code), derive::build(code), "{code:?}");
        }
    }
}
