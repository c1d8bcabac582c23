//! Block formation: which guest instructions one translation covers.
//!
//! The translator has no decoding rules of its own: it takes the interpreter's blocks
//! (each ending at the first control transfer, a fault or the page end), decoded by
//! the interpreter's fetch loop and end rules (`Interp::decoded_block`), and joins them. The rule: a translation starts with the interpreter's block at
//! its EIP and continues with the block at the fall-through of a conditional branch
//! whose fall-through stays in the page (its taken edge becomes a side exit — a
//! multi-exit block, as Transmeta translated regions rather than basic blocks — or, if
//! it goes forward to an instruction of the translation, a jump to that join: see
//! `translate_decoded`) and
//! after a system instruction (the helper raises its fault), and with the block at the
//! target of a direct jump forward in the page (the jump then costs the host nothing;
//! only forward, so that the translation's instructions stay in guest order inside
//! `[eip, end)`, the bytes `tcache` and `reuse` compare); it ends at any other
//! control transfer, an invalid instruction, a branch back to its start (a loop,
//! unrolled), the page end (an instruction straddling it is the last), or
//! [`MAX_INSTRUCTIONS`](super::MAX_INSTRUCTIONS).
//!
//! One call does not end it: a call of a *PC thunk*, the two-instruction function
//! `mov r32, [esp]; ret` through which i386 position-independent code (every PIE and
//! shared library gcc builds) reads its own address, at nearly every function entry.
//! Its effect is known from its four bytes: the register gets the return address (left
//! below ESP, as the call wrote it). The translation does that inline and goes on, after
//! a check at run time that the four bytes are still there (see `lower::pc_thunk`).

use iced_x86::{Code, Decoder, DecoderOptions, FlowControl, Instruction, OpKind, Register};
use morph_mem::PAGE_SIZE;

use super::MAX_INSTRUCTIONS;

/// The guest instructions of one translation.
pub(super) struct Formed {
    /// In guest order.
    pub instrs: Vec<Instruction>,
    /// The calls of PC thunks done inline: the call's index in `instrs` and the guest
    /// register the thunk loads.
    pub thunks: Vec<(usize, Register)>,
    /// The EIP of the interpreter's block that holds the last instruction.
    pub last_block: u32,
    /// Where each of the interpreter's blocks joined starts: the index of its first
    /// instruction in `instrs` and its EIP, in order.
    pub blocks: Vec<(usize, u32)>,
    /// If the last instruction is a direct call of a PLT stub, the stub's jump (see
    /// [`plt_stub`]).
    pub plt: Option<Instruction>,
}

impl Formed {
    /// The EIP of the interpreter's block that holds instruction `k`.
    pub fn block_of(&self, k: usize) -> u32 {
        self.blocks.iter().take_while(|b| b.0 <= k).last().map_or(0, |b| b.1)
    }

    /// The register the PC thunk called by instruction `k` loads, if it is such a call.
    pub fn thunk(&self, k: usize) -> Option<Register> {
        self.thunks.iter().find(|t| t.0 == k).map(|t| t.1)
    }
}

/// The bytes of the PC thunk that loads `r` (a general register other than ESP):
/// `mov r, [esp]` (8b, ModRM with `r` and a SIB, SIB `[esp]`) and `ret` (c3).
pub(super) fn thunk_bytes(r: Register) -> u32 {
    let reg = (r as u32) - (Register::EAX as u32);
    u32::from_le_bytes([0x8b, 0x04 | (reg << 3) as u8, 0x24, 0xc3])
}

/// If `call` is a direct call of a PC thunk (see the module's documentation), the
/// register the thunk loads. Only the canonical encoding counts: the translation checks
/// exactly [`thunk_bytes`] at run time.
fn pc_thunk(
    callee: &mut Callee<impl FnMut(u32, &mut Vec<Instruction>) -> bool>,
    call: &Instruction,
) -> Option<Register> {
    let target = call.near_branch32();
    if call.code() != Code::Call_rel32_32 || target == call.next_ip32() {
        return None;
    }
    let t = callee.at(target)?;
    if t.len() < 2 {
        return None;
    }
    let (mov, ret) = (&t[0], &t[1]);
    let r = mov.op0_register();
    let ok = mov.code() == Code::Mov_r32_rm32
        && mov.len() == 3
        && mov.op1_kind() == OpKind::Memory
        && mov.memory_base() == Register::ESP
        && mov.memory_index() == Register::None
        && mov.memory_displacement32() == 0
        && mov.segment_prefix() == Register::None
        && r != Register::ESP
        && ret.code() == Code::Retnd
        && ret.len() == 1;
    ok.then_some(r)
}

/// If `call` is a direct call (or jump: a tail call) of a *PLT stub*, the stub's first
/// instruction: `jmp [ebx + d]` (position-independent code, EBX the GOT's address) or
/// `jmp [d]`, with no prefix, its six bytes in one page. Such a call can take the stub's
/// jump itself: the callee is the address in the GOT slot when the call runs (lazy
/// binding rewrites the slot, never the stub), so the translation reads the slot and
/// continues at that address, without entering the stub's translation; it depends on
/// the stub's page as on an unchecked PC thunk's (`Translated::thunk_page`).
fn plt_stub(
    callee: &mut Callee<impl FnMut(u32, &mut Vec<Instruction>) -> bool>,
    call: &Instruction,
) -> Option<Instruction> {
    let direct = matches!(call.code(), Code::Call_rel32_32 | Code::Jmp_rel32_32 | Code::Jmp_rel8_32);
    let target = call.near_branch32();
    if !direct || target == call.next_ip32() || target & (PAGE_SIZE - 1) > PAGE_SIZE - 6 {
        return None;
    }
    let jmp = callee.at(target)?.first()?;
    let ok = jmp.code() == Code::Jmp_rm32
        && jmp.len() == 6
        && jmp.op0_kind() == OpKind::Memory
        && matches!(jmp.memory_base(), Register::EBX | Register::None)
        && jmp.memory_index() == Register::None
        && jmp.segment_prefix() == Register::None;
    ok.then_some(*jmp)
}

/// The first decoded block of a call's target, fetched once for both questions asked of
/// it (a PC thunk, a PLT stub).
struct Callee<F> {
    fetch: F,
    target: u32,
    block: Option<Vec<Instruction>>,
}

impl<F: FnMut(u32, &mut Vec<Instruction>) -> bool> Callee<F> {
    fn at(&mut self, target: u32) -> Option<&[Instruction]> {
        if self.target != target || self.block.is_none() {
            let mut t = Vec::with_capacity(4);
            self.target = target;
            self.block = (self.fetch)(target, &mut t).then_some(t);
        }
        self.block.as_deref()
    }
}

/// The target of `ins` if it is a direct jump (32-bit operand size). Not the last
/// instruction of a translation, it was followed: the next one is at its target (see
/// [`form`]; `tcache` decodes stored blocks again by the same rule).
pub(crate) fn direct_jump(ins: &Instruction) -> Option<u32> {
    (ins.flow_control() == FlowControl::UnconditionalBranch && ins.op0_kind() == OpKind::NearBranch32)
        .then(|| ins.near_branch32())
}

/// The instructions of the translation at `eip`. `fetch(at, out)` appends the decoded
/// block at `at` (false if its first instruction cannot be fetched).
pub(super) fn form(fetch: impl FnMut(u32, &mut Vec<Instruction>) -> bool, eip: u32) -> Formed {
    let mut callee = Callee { fetch, target: 0, block: None };
    let page_left = PAGE_SIZE - (eip & (PAGE_SIZE - 1));
    // A direct jump forward in the page is followed: the code at its target continues
    // the translation (no host jump at all where the guest takes one).
    let followed = |j: &Instruction| direct_jump(j).is_some_and(|t| t > j.ip32() && t.wrapping_sub(eip) < page_left);
    let mut instrs = Vec::with_capacity(16);
    let mut thunks = Vec::new();
    let mut block = Vec::with_capacity(16);
    let mut at = eip;
    let mut last_block = eip;
    let mut blocks = Vec::new();
    'blocks: while instrs.len() < MAX_INSTRUCTIONS {
        block.clear();
        if !(callee.fetch)(at, &mut block) || block.is_empty() {
            break;
        }
        last_block = at;
        blocks.push((instrs.len(), at));
        for ins in &block {
            // A branch back to the block's start ends it: the block is a loop.
            let side_exit =
                ins.is_jcc_short_or_near() && ins.op0_kind() == OpKind::NearBranch32 && ins.near_branch32() != eip;
            let in_page = ins.next_ip32().wrapping_sub(eip) < page_left;
            let thunk =
                if in_page && ins.flow_control() == FlowControl::Call { pc_thunk(&mut callee, ins) } else { None };
            let follow = in_page && followed(ins);
            let end = (ins.flow_control() != FlowControl::Next && !side_exit && thunk.is_none() && !follow)
                || ins.is_invalid()
                || !in_page;
            if let Some(r) = thunk {
                thunks.push((instrs.len(), r));
            }
            instrs.push(*ins);
            at = if follow { ins.near_branch32() } else { ins.next_ip32() };
            if end || instrs.len() == MAX_INSTRUCTIONS {
                break 'blocks;
            }
        }
    }
    // (Not a jump the block followed, which it ends only at the size limit.)
    let plt = match instrs.last() {
        Some(c) if thunks.last().is_none_or(|t| t.0 + 1 != instrs.len()) && !followed(c) => plt_stub(&mut callee, c),
        _ => None,
    };
    Formed { instrs, thunks, last_block, blocks, plt }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn ips(code: &[u8], eip: u32) -> Vec<u32> {
        form(from_bytes(code, eip), eip).instrs.iter().map(|i| i.ip32()).collect()
    }

    #[test]
    fn a_direct_jump_forward_in_the_page_is_followed() {
        // jmp +2; ud2 (skipped); inc eax; ret
        assert_eq!(ips(&[0xeb, 0x02, 0x0f, 0x0b, 0x40, 0xc3], 0x1000), [0x1000, 0x1004, 0x1005]);
        // inc eax; jmp back to the start: a loop, not followed
        assert_eq!(ips(&[0x40, 0xeb, 0xfd, 0xc3], 0x1000), [0x1000, 0x1001]);
        // jmp +16 from near the page end: its target is in the next page, not followed
        let mut code = vec![0x90; 32];
        code[..2].copy_from_slice(&[0xeb, 0x10]);
        assert_eq!(ips(&code, 0x1ff8), [0x1ff8]);
    }

    #[test]
    fn calls_and_tail_calls_of_plt_stubs_are_recognized() {
        // 0x1000: call 0x1010 (or jmp, or a call of a non-stub); 0x1010: the target.
        let plt = |first: &[u8], target: &[u8]| {
            let mut code = first.to_vec();
            code.resize(0x10, 0x90);
            code.extend_from_slice(target);
            code.resize(0x20, 0x90);
            form(from_bytes(&code, 0x1000), 0x1000).plt.map(|j| j.ip32())
        };
        let call = [0xe8, 0x0b, 0, 0, 0];
        assert_eq!(plt(&call, &[0xff, 0xa3, 0x0c, 0, 0, 0]), Some(0x1010), "jmp [ebx + 12]");
        assert_eq!(plt(&call, &[0xff, 0x25, 0x00, 0x20, 0, 0]), Some(0x1010), "jmp [0x2000]");
        assert_eq!(
            plt(&[0xe9, 0x0b, 0, 0, 0], &[0xff, 0xa3, 0x0c, 0, 0, 0]),
            None,
            "a jump forward in the page is followed"
        );
        assert_eq!(plt(&call, &[0xff, 0xa6, 0x0c, 0, 0, 0]), None, "jmp [esi + 12]");
        assert_eq!(plt(&call, &[0x2e, 0xff, 0xa3, 0x0c, 0, 0, 0]), None, "a prefix");
        assert_eq!(plt(&call, &[0xff, 0xe0]), None, "jmp eax");
        // A tail call back to a stub before the block.
        let mut code = vec![0x90; 0x10];
        code[..6].copy_from_slice(&[0xff, 0xa3, 0x0c, 0, 0, 0]);
        code.extend_from_slice(&[0x40, 0xeb, 0xed]); // 0x1010: inc eax; jmp 0x1000
        assert_eq!(form(from_bytes(&code, 0x1000), 0x1010).plt.map(|j| j.ip32()), Some(0x1000));
    }
}
