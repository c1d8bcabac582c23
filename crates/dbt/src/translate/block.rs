//! Block formation: which guest instructions one translation covers.
//!
//! The translator does not decode: it takes the instructions the interpreter already
//! decoded (its blocks, each ending at the first control transfer, a fault or the page
//! end) and joins them. The rule: a translation starts with the interpreter's block at
//! its EIP and continues with the block at the fall-through of a conditional branch
//! whose fall-through stays in the page (its taken edge becomes a side exit — a
//! multi-exit block, as Transmeta translated regions rather than basic blocks) and
//! after a system instruction (the helper raises its fault); it ends at any other
//! control transfer, an invalid instruction, a branch back to its start (a loop,
//! unrolled), the page end (an instruction straddling it is the last), or
//! [`MAX_INSTRUCTIONS`](super::MAX_INSTRUCTIONS).

use iced_x86::{Decoder, DecoderOptions, FlowControl, Instruction, OpKind};
use morph_mem::PAGE_SIZE;

use super::MAX_INSTRUCTIONS;

/// The instructions of the translation at `eip`. `fetch(at, out)` appends the decoded
/// block at `at` (false if its first instruction cannot be fetched).
pub(super) fn form(mut fetch: impl FnMut(u32, &mut Vec<Instruction>) -> bool, eip: u32) -> Vec<Instruction> {
    let page_left = PAGE_SIZE - (eip & (PAGE_SIZE - 1));
    let mut instrs = Vec::with_capacity(16);
    let mut block = Vec::with_capacity(16);
    let mut at = eip;
    'blocks: while instrs.len() < MAX_INSTRUCTIONS {
        block.clear();
        if !fetch(at, &mut block) || block.is_empty() {
            break;
        }
        for ins in &block {
            // A branch back to the block's start ends it: the block is a loop.
            let side_exit =
                ins.is_jcc_short_or_near() && ins.op0_kind() == OpKind::NearBranch32 && ins.near_branch32() != eip;
            let end = (ins.flow_control() != FlowControl::Next && !side_exit)
                || ins.is_invalid()
                || ins.next_ip32().wrapping_sub(eip) >= page_left;
            instrs.push(*ins);
            at = ins.next_ip32();
            if end || instrs.len() == MAX_INSTRUCTIONS {
                break 'blocks;
            }
        }
    }
    instrs
}

/// `fetch` for [`form`] from the guest bytes at `eip` (the tests and benchmarks, which
/// have no interpreter): a block is decoded up to its first control transfer, as the
/// interpreter decodes.
pub(super) fn from_bytes(bytes: &[u8], eip: u32) -> impl FnMut(u32, &mut Vec<Instruction>) -> bool {
    move |at, out| {
        let Some(b) = bytes.get(at.wrapping_sub(eip) as usize..) else { return false };
        let mut dec = Decoder::with_ip(32, b, u64::from(at), DecoderOptions::NONE);
        while dec.can_decode() {
            let ins = dec.decode();
            if ins.is_invalid() && dec.last_error() == iced_x86::DecoderError::NoMoreBytes {
                break;
            }
            out.push(ins);
            if ins.flow_control() != FlowControl::Next || ins.is_invalid() {
                break;
            }
        }
        true
    }
}
