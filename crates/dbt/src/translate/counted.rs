//! Counted loops: a self-loop whose trip count is known when it is entered runs as a
//! clean copy, with no instruction of morph's own inside it.
//!
//! A translated loop normally carries the instruction count (`lea r11`) and the budget
//! check (`lea r10; movzx r8d, [r10]`) on its back edge, once per unrolled group of
//! iterations. On a tight loop that costs far more than the three instructions suggest:
//! `benches/probes/loopshape.c` measures matmul's inner loop at 0.297 ns per iteration
//! in the guest's shape and 0.497 ns with them (one `nop` per four iterations already
//! costs 50 %). When the loop's exit test is `induction == bound`, with the induction
//! register stepped by the same `s` (±1, ±2, ±4 or ±8: counters and pointers) exactly
//! once per iteration and the bound a constant or a register the loop does not write,
//! the number of iterations `n` is known at entry: `(bound - induction) / |s|` (stepping
//! up) or `(induction - bound) / |s|` (down), modulo 2^32, when the distance is a
//! multiple of `|s|` (else the loop never meets its bound). The
//! translation then checks `1 <= n <= LIMIT` at entry, adds `n × instructions per
//! iteration` to the count at once, and runs a copy of the loop that is the guest's
//! instructions alone, at a 64-byte boundary (the same loop straddling two 64-byte
//! windows runs at half speed). Otherwise (a trip count out of range: the loop runs
//! "forever", or long enough to need the budget) it runs the ordinary unrolled copy,
//! whose back edge keeps its budget check but no longer repeats the entry check.
//!
//! The count is exact at every point a guest could observe it:
//! - at the loop's exit, which is its only one (the body has no other branch, helper or
//!   system call), `n × len` is exactly what ran;
//! - at a host fault inside the copy (a guest page fault, a division by zero, a write
//!   to a page holding code), the fault handler computes the iterations not run from
//!   the induction register's value at the fault, the bound (kept in
//!   `JitState::loop_bound` at entry) and whether the faulting instruction comes after
//!   the step in the iteration, and takes them back (`runtime::loop_point`).
//!
//! The guard compares and multiplies with the host's flags, so the loop qualifies only
//! if its guest flags are dead at entry: every arithmetic flag is written by the body
//! before any is read. One entry costs one unit of the run's budget, as one iteration
//! group of the ordinary copy does; `LIMIT` bounds the instructions one such unit runs.

use iced_x86::{Code, FlowControl, Instruction, InstructionInfoFactory, OpAccess, OpKind, Register, RflagsBits};
use morph_cpu::isa::{self, Inline, Lower};

/// The most iterations the clean copy runs per entry (more take the ordinary copy):
/// with [`MAX_BODY`] instructions per iteration, an entry adds at most 2^15
/// instructions, so a run of the budget's 2^24 entries stays within r11's 2^40
/// (`runtime::ICOUNT_SHIFT`).
pub(super) const LIMIT: u32 = 2048;

/// The most guest instructions in a counted loop's body (its branch included).
pub(super) const MAX_BODY: usize = 16;

/// Where the loop's bound comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Bound {
    /// A constant (`cmp r, imm`; 0 for a step that sets ZF itself, `dec r; jne`).
    Imm(u32),
    /// A guest register (its index) that the loop does not write (`cmp r, r2`).
    Reg(usize),
}

/// A counted self-loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Counted {
    /// The induction register (guest index, never ESP).
    pub reg: usize,
    /// Stepped down (else up).
    pub down: bool,
    /// The index in the body of the instruction that steps it.
    pub step: usize,
    /// The step's log2 (it is 1, 2, 4 or 8).
    pub shift: u32,
    pub bound: Bound,
}

const ARITH: u32 = RflagsBits::OF | RflagsBits::SF | RflagsBits::ZF | RflagsBits::AF | RflagsBits::PF | RflagsBits::CF;

/// The guest index of a 32-bit general register.
fn gpr32(r: Register) -> Option<usize> {
    r.is_gpr32().then(|| super::emit::gpr_index(r))
}

/// The step `ins` makes, if it only adds ±1, ±2, ±4 or ±8 to a 32-bit register: the
/// register, whether it steps down, and the step's log2.
fn step_of(ins: &Instruction) -> Option<(usize, bool, u32)> {
    let reg = || (ins.op0_kind() == OpKind::Register).then(|| gpr32(ins.op0_register())).flatten();
    let imm = || (ins.op1_kind() != OpKind::Register).then(|| ins.immediate(1) as u32);
    // An addition of `v`: up by 2^k, or down by 2^k.
    let by = |v: u32| match v {
        1 | 2 | 4 | 8 => Some((false, v.trailing_zeros())),
        _ => match v.wrapping_neg() {
            1 | 2 | 4 | 8 => Some((true, v.wrapping_neg().trailing_zeros())),
            _ => None,
        },
    };
    let (down, shift) = match ins.code() {
        Code::Inc_r32 | Code::Inc_rm32 => (false, 0),
        Code::Dec_r32 | Code::Dec_rm32 => (true, 0),
        Code::Add_rm32_imm8 | Code::Add_rm32_imm32 | Code::Add_EAX_imm32 => by(imm()?)?,
        Code::Sub_rm32_imm8 | Code::Sub_rm32_imm32 | Code::Sub_EAX_imm32 => by(imm()?.wrapping_neg())?,
        _ => return None,
    };
    Some((reg()?, down, shift))
}

/// The full guest registers `ins` may write.
fn writes(info: &mut InstructionInfoFactory, ins: &Instruction) -> u8 {
    let mut set = 0u8;
    for u in info.info(ins).used_registers() {
        let written =
            matches!(u.access(), OpAccess::Write | OpAccess::CondWrite | OpAccess::ReadWrite | OpAccess::ReadCondWrite);
        if written && let Some(i) = gpr32(u.register().full_register32()) {
            set |= 1 << i;
        }
    }
    set
}

/// Whether `ins` may sit in a clean copy: it falls through, and the translator lowers it
/// to host code of its own (no helper, no exit, no string instruction, whose repeats the
/// count would not see).
fn plain(ins: &Instruction) -> bool {
    ins.flow_control() == FlowControl::Next
        && isa::support(ins) != isa::Support::Sse // #UD on the TM5600
        && matches!(
            isa::lowering(ins),
            Lower::Skip | Lower::Reencode | Lower::Fpu | Lower::Inline(Inline::Push | Inline::Pop | Inline::Leave)
        )
}

/// The counted loop `instrs` is, if it is one: a self-loop (its last instruction is a
/// `jne` to its first) of at most [`MAX_BODY`] instructions, all [`plain`] before the
/// branch, whose arithmetic flags are dead at entry, exiting when a register stepped by
/// ±1, ±2, ±4 or ±8 once per iteration equals a bound (`cmp`, or `test r, r` or the
/// step itself for 0; see the module's documentation).
pub(super) fn analyse(instrs: &[Instruction]) -> Option<Counted> {
    let len = instrs.len();
    if !(2..=MAX_BODY).contains(&len) {
        return None;
    }
    let (last, body) = instrs.split_last()?;
    if last.condition_code() != iced_x86::ConditionCode::ne
        || !last.is_jcc_short_or_near()
        || last.op0_kind() != OpKind::NearBranch32
        || last.near_branch32() != instrs[0].ip32()
        || !body.iter().all(plain)
    {
        return None;
    }
    // Flags dead at entry: all six written before the first read (the exit's `jne`
    // included, so the exit test's flags come from the body).
    let mut written = 0;
    for ins in instrs {
        if ins.rflags_read() & ARITH != 0 && written & ARITH != ARITH {
            return None;
        }
        written |= ins.rflags_modified();
    }
    let mut info = InstructionInfoFactory::new();
    let w: Vec<u8> = body.iter().map(|i| writes(&mut info, i)).collect();
    let test = body.len() - 1;
    let cmp = &body[test];
    // The exit test: the step itself (ZF set when it reaches 0), or `cmp r, imm` or
    // `cmp r, r2` after it.
    let (step, reg, down, shift, bound) = if let Some((reg, down, shift)) = step_of(cmp) {
        (test, reg, down, shift, Bound::Imm(0))
    } else {
        let (a, b) = match cmp.code() {
            Code::Cmp_rm32_imm8 | Code::Cmp_rm32_imm32 | Code::Cmp_EAX_imm32 if cmp.op0_kind() == OpKind::Register => {
                (gpr32(cmp.op0_register())?, Bound::Imm(cmp.immediate(1) as u32))
            }
            Code::Cmp_rm32_r32 | Code::Cmp_r32_rm32
                if cmp.op0_kind() == OpKind::Register && cmp.op1_kind() == OpKind::Register =>
            {
                (gpr32(cmp.op0_register())?, Bound::Reg(gpr32(cmp.op1_register())?))
            }
            // `test r, r`: ZF when r is 0.
            Code::Test_rm32_r32
                if cmp.op0_kind() == OpKind::Register
                    && cmp.op1_kind() == OpKind::Register
                    && cmp.op0_register() == cmp.op1_register() =>
            {
                (gpr32(cmp.op0_register())?, Bound::Imm(0))
            }
            _ => return None,
        };
        // The stepped register is either side of a register comparison.
        let candidates = match b {
            Bound::Reg(r) => vec![(a, b), (r, Bound::Reg(a))],
            Bound::Imm(_) => vec![(a, b)],
        };
        candidates.into_iter().find_map(|(reg, bound)| {
            let step = body[..test].iter().position(|i| step_of(i).is_some_and(|s| s.0 == reg))?;
            let (_, down, shift) = step_of(&body[step])?;
            Some((step, reg, down, shift, bound))
        })?
    };
    // ESP is stepped by pushes and pops the count would have to follow.
    if reg == 4 || bound == Bound::Reg(reg) {
        return None;
    }
    // Nothing else in the loop writes the induction register, and nothing writes a
    // register bound (the cmp does not write at all).
    for (i, &set) in w.iter().enumerate() {
        if i != step && set & (1 << reg) != 0 {
            return None;
        }
        if let Bound::Reg(r) = bound
            && set & (1 << r) != 0
        {
            return None;
        }
    }
    Some(Counted { reg, down, step, shift, bound })
}

/// The fault-map record of instruction `idx` of a clean copy (see
/// `runtime::loop_point`): flagged by the top bit, so that it is never an ordinary
/// point's count of pending instructions (at most a block's).
pub(super) fn point(c: &Counted, len: usize, idx: usize) -> u32 {
    crate::runtime::LOOP_POINT
        | (c.reg as u32) << 20
        | u32::from(c.down) << 19
        | u32::from(idx > c.step) << 18
        | c.shift << 16
        | (len as u32) << 8
        | idx as u32
}

#[cfg(test)]
mod tests {
    use super::*;
    use iced_x86::{Decoder, DecoderOptions};

    fn decode(bytes: &[u8]) -> Vec<Instruction> {
        let mut d = Decoder::with_ip(32, bytes, 0x1000, DecoderOptions::NONE);
        let mut v = Vec::new();
        while d.can_decode() {
            v.push(d.decode());
        }
        v
    }

    /// `bytes` followed by a `jne` back to their start.
    fn looped(bytes: &[u8]) -> Vec<Instruction> {
        let mut b = bytes.to_vec();
        let back = -(b.len() as i32 + 6);
        b.extend_from_slice(&[0x0f, 0x85]);
        b.extend_from_slice(&back.to_le_bytes());
        decode(&b)
    }

    #[test]
    fn matmul_inner_loop_is_counted() {
        // mov eax,[esi+edx*4]; imul eax,[edi+edx*4]; add [ebx],eax; inc edx; cmp edx,160
        let l = looped(&[0x8b, 0x04, 0x96, 0x0f, 0xaf, 0x04, 0x97, 0x01, 0x03, 0x42, 0x81, 0xfa, 0xa0, 0, 0, 0]);
        assert_eq!(analyse(&l), Some(Counted { reg: 2, down: false, step: 3, shift: 0, bound: Bound::Imm(160) }));
    }

    #[test]
    fn dec_jnz_and_register_bounds() {
        // add eax,[esi]; add esi,4; dec ecx; jne — CF is written by the first add
        let l = looped(&[0x03, 0x06, 0x83, 0xc6, 0x04, 0x49]);
        assert_eq!(analyse(&l), Some(Counted { reg: 1, down: true, step: 2, shift: 0, bound: Bound::Imm(0) }));
        // add eax,[esi+ecx*4]; inc ecx; cmp edx,ecx — the stepped register on the right
        let l = looped(&[0x03, 0x04, 0x8e, 0x41, 0x39, 0xca]);
        assert_eq!(analyse(&l), Some(Counted { reg: 1, down: false, step: 1, shift: 0, bound: Bound::Reg(2) }));
        // mov eax,[ecx]; add ecx,4; add esi,eax; cmp ebp,ecx — a pointer stepping by 4
        let l = looped(&[0x8b, 0x01, 0x83, 0xc1, 0x04, 0x01, 0xc6, 0x39, 0xcd]);
        assert_eq!(analyse(&l), Some(Counted { reg: 1, down: false, step: 1, shift: 2, bound: Bound::Reg(5) }));
        // sub ecx,2; mov [esi],ecx; test ecx,ecx — down by 2 to 0
        let l = looped(&[0x83, 0xe9, 0x02, 0x89, 0x0e, 0x85, 0xc9]);
        assert_eq!(analyse(&l), Some(Counted { reg: 1, down: true, step: 0, shift: 1, bound: Bound::Imm(0) }));
    }

    #[test]
    fn loops_that_are_not_counted() {
        // dec ecx; jne: CF is live at entry (dec does not write it)
        assert_eq!(analyse(&looped(&[0x49])), None);
        // adc eax,[esi]; ...: a flag read before all are written
        assert_eq!(analyse(&looped(&[0x13, 0x06, 0x41, 0x83, 0xf9, 0x10])), None);
        // add ecx,3; cmp ecx,16: a step of 3
        assert_eq!(analyse(&looped(&[0x83, 0xc1, 0x03, 0x83, 0xf9, 0x10])), None);
        // inc ecx; mov ecx,[esi]; cmp ecx,16: the induction register written again
        assert_eq!(analyse(&looped(&[0x41, 0x8b, 0x0e, 0x83, 0xf9, 0x10])), None);
        // inc ecx; mov edx,[esi]; cmp ecx,edx: the bound written
        assert_eq!(analyse(&looped(&[0x41, 0x8b, 0x16, 0x39, 0xd1])), None);
        // inc esp; cmp esp,16
        assert_eq!(analyse(&looped(&[0x44, 0x83, 0xfc, 0x10])), None);
        // inc ecx; movsb; cmp ecx,16: a string instruction
        assert_eq!(analyse(&looped(&[0x41, 0xa4, 0x83, 0xf9, 0x10])), None);
        // inc ecx; cmp ecx,16; jb (not jne)
        assert_eq!(analyse(&decode(&[0x41, 0x83, 0xf9, 0x10, 0x72, 0xfa])), None);
    }
}
