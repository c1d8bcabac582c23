//! Lowering one guest instruction: re-encoded for the host, lowered inline by hand, or
//! a helper call into the interpreter, as the instruction table (`morph_cpu::isa`) says.

use iced_x86::code_asm::*;
use iced_x86::{Code, ConditionCode, Instruction, Mnemonic as M, OpKind, Register};
use morph_cpu::isa::{self, Inline, Lower, Support};

use super::Fixup;
use super::emit::{Emitter, Seq, asm, cached, fix_lea_r8, fix32, gpr_index};
use crate::glue;
use crate::runtime::{self, EXIT_SYSCALL, off};

/// Where an instruction is in the block being translated.
pub(super) struct Pos {
    /// The block's first EIP.
    pub eip: u32,
    /// The next instruction's offset from it.
    pub next: i32,
    /// The block's instructions completed once this one is (over all unrolled copies).
    pub done: u32,
    /// Instructions in the block, and in all its copies.
    pub n: u32,
    pub total: u32,
    /// A conditional side exit the profile never saw taken (see `inline`'s `Jcc`).
    pub cold_exit: bool,
}

/// What lowering an instruction did.
pub(super) struct Lowered {
    /// The instruction went to the helper.
    pub helper: bool,
    /// It ended the block (its code leaves).
    pub ended: bool,
    /// It runs on the host FPU.
    pub fpu: bool,
}

/// Lowers `ins` (its helper call, if any, made by the caller). `None`: the block cannot
/// be translated.
pub(super) fn instruction(e: &mut Emitter, ins: &Instruction, p: &Pos) -> Option<Lowered> {
    // How it is lowered is the instruction table's decision (`morph_cpu::isa`): NOPs
    // (the hint space included) emit nothing, system and invalid instructions go to the
    // interpreter, which raises their fault. A form the table re-encodes or lowers inline
    // whose instance the host encoding cannot express (a segment register operand, say)
    // also goes to the interpreter.
    let mut out = Lowered { helper: false, ended: false, fpu: false };
    let handled = match isa::lowering(ins) {
        Lower::Skip => true,
        // On the TM5600 an SSE instruction is #UD: the interpreter raises it.
        Lower::Fpu if !e.opts.sse && isa::support(ins) == Support::Sse => false,
        Lower::Fpu => {
            if matches!(ins.code(), Code::Fnstsw_AX | Code::Fstsw_AX) {
                e.x87_fdp_flush(); // it writes AX, which the pending FDP may read
            }
            out.fpu = reencode(e, ins).is_some();
            if out.fpu {
                x87_pointers(e, ins, e.at(ins.ip32().wrapping_sub(p.eip) as i32));
            }
            out.fpu
        }
        Lower::Reencode => reencode(e, ins).is_some(),
        Lower::Helper => false,
        Lower::Inline(kind) => {
            let (handled, ended) = inline(e, ins, kind, p)?;
            out.ended = ended;
            handled
        }
    };
    out.helper = !handled;
    Some(out)
}

/// After x87 instruction `ins` (at `at` in the page), lowered to itself: the guest's
/// FIP and FOP as it leaves them, stored at the end of the run of x87 instructions it is
/// part of (`Emitter::x87_flush`; the host's own are the translation's address and the
/// opcode of the host encoding). The guest's opcode is its own encoding's (iced-x86
/// encodes a decoded memory operand in the same form, displacement size included).
fn x87_pointers(e: &mut Emitter, ins: &Instruction, at: i32) {
    use morph_cpu::x87::FipEffect;
    thread_local! {
        static ENCODER: std::cell::RefCell<iced_x86::Encoder> = std::cell::RefCell::new(iced_x86::Encoder::new(32));
    }
    match morph_cpu::x87::fip_effect(ins) {
        FipEffect::Here => {
            let fop = ENCODER.with(|enc| {
                let mut enc = enc.borrow_mut();
                let ok = enc.encode(ins, ins.ip()).is_ok();
                let mut b = enc.take_buffer();
                let fop = if ok { morph_cpu::x87_opcode(&b) } else { None };
                b.clear();
                enc.set_buffer(b);
                fop
            });
            e.x87 = super::emit::X87::Here(at, fop.unwrap_or(0));
            if ins.op_kinds().any(|k| k == OpKind::Memory) && morph_cpu::state::host_fxsave_hides_pointers() {
                fdp_store(e, ins);
            }
        }
        FipEffect::Clear => {
            e.x87 = super::emit::X87::Clear;
            if morph_cpu::state::host_fxsave_hides_pointers() {
                e.x87_fdp = super::emit::Fdp::Clear;
            }
        }
        // `fldenv` and `frstor` are left to the helper (`isa::rows::FPU_HELPER`).
        FipEffect::Keep | FipEffect::Load => {}
    }
}

/// The guest's FDP after x87 instruction `ins`: its memory operand's offset, which a
/// `lea` computes from the guest's registers, stored in the image's shadow at the end of
/// the run (`Emitter::x87_fdp_flush`, `runtime::x87_fdp`). Only where the host's
/// `fxsave` hides FDP; elsewhere the host's is the guest's. (A store after each operand
/// made the x87 benchmark 1.69 times slower; one per run with FIP's, 1.038.)
fn fdp_store(e: &mut Emitter, ins: &Instruction) {
    let reg = |r: Register| if r == Register::None { Some(r) } else { map_reg(r) };
    let (Some(base), Some(index)) = (reg(ins.memory_base()), reg(ins.memory_index())) else { return };
    let m = iced_x86::MemoryOperand::with_base_index_scale_displ_size(
        base,
        index,
        ins.memory_index_scale(),
        i64::from(ins.memory_displacement32() as i32),
        4,
    );
    let Ok(lea) = Instruction::with2(Code::Lea_r32_m, Register::R9D, m) else { return };
    if let Some(b) = e.encode(&lea) {
        e.x87_fdp = super::emit::Fdp::Operand(b);
    }
}

/// The hand lowering of `ins`: whether it was lowered (else the helper runs it) and
/// whether it ended the block.
fn inline(e: &mut Emitter, ins: &Instruction, kind: Inline, p: &Pos) -> Option<(bool, bool)> {
    let &Pos { eip, next, done, n, total, cold_exit } = p;
    let mut ended = false;
    let handled = match kind {
        Inline::Push | Inline::Pop | Inline::Leave | Inline::String => stack_or_string(e, ins, kind)?,
        Inline::Jcc => {
            let cc = ins.condition_code() as u8 - ConditionCode::o as u8;
            let target = ins.near_branch32().wrapping_sub(eip) as i32;
            // The back edge of an unrolled copy leaves (inverted) if the loop ends.
            let copy_exit = done.is_multiple_of(n) && done < total;
            let (cc, to) = if copy_exit { (cc ^ 1, next) } else { (cc, target) };
            // A side exit the interpreter never saw taken counts out of line too: the
            // path that stays (every time, as far as the profile knows) saves a `lea`.
            let cold = !copy_exit && cold_exit && !(e.loop_top.is_some() && to == 0 && done == total);
            if copy_exit || cold {
                // An unrolled copy's exit, taken once when the loop ends: the taken
                // edge counts in an out-of-line stub, so that the copies count once
                // per round.
                let rel = e.jcc(cc);
                e.side.push((rel, done - e.counted, to));
            } else {
                // Counted inline (one count covers both edges), so that the taken edge
                // is the `jcc` itself, a site chained straight to its target: a taken
                // side exit through a counting stub was two taken host branches for
                // the guest's one (stop 31: real programs 2-13 % faster).
                e.count(done);
                match e.loop_top {
                    // A counted loop's ordinary copy goes round through its own check.
                    Some(top) if to == 0 && done == total => {
                        let rel = e.jcc(cc);
                        e.local.push((rel, top));
                    }
                    _ => e.jcc_site(cc, to),
                }
            }
            // The fall-through follows inline (or through the site at the end).
            true
        }
        Inline::Call | Inline::Jmp if e.plt.is_some() => {
            // A PLT stub's jump done here (`block::plt_stub`): its GOT slot read first
            // (a fault re-runs the call in the interpreter, which then faults at the
            // stub), the return address pushed by a call (a tail call's `jmp` pushes
            // nothing), the call and the jump counted.
            let stub = e.plt.take()?;
            load_operand(e, &stub, Register::R13D)?;
            if kind == Inline::Call {
                e.bytes(&fix_lea_r8(e.at(next)));
                push_reg(e, r8d);
            }
            e.exit_indirect(done + 1);
            ended = true;
            true
        }
        Inline::Jmp => {
            e.count(done);
            e.jump(ins.near_branch32().wrapping_sub(eip) as i32);
            ended = true;
            true
        }
        Inline::EcxBranch => {
            // `jecxz`/`loop`/`loope`/`loopne` on ECX: the host's own with a 32-bit
            // address size (ECX, flags untouched), over a rel32 jump for the
            // taken edge; the block ends here and falls through below.
            e.count(done);
            e.bytes(&[0x67, ecx_branch(ins)?, 2, 0xeb, 5, 0xe9]);
            let rel = e.code.len();
            e.bytes(&[0; 4]);
            e.branch_field(rel, ins.near_branch32().wrapping_sub(eip) as i32);
            true
        }
        Inline::JmpInd => {
            let ok = load_operand(e, ins, Register::R13D).is_some();
            if ok {
                e.exit_indirect(done);
                ended = true;
            }
            ok
        }
        Inline::Call => {
            let target = ins.near_branch32().wrapping_sub(eip) as i32;
            // A call of the next instruction reads EIP (`call 1f; 1: pop`): no return.
            let ras = e.opts.ras && target != next;
            call_direct(e, next, target, done, ras)?;
            ended = true;
            true
        }
        Inline::CallInd => {
            let ok = load_operand(e, ins, Register::R13D).is_some();
            if ok {
                e.bytes(&fix_lea_r8(e.at(next)));
                push_reg(e, r8d);
                if e.opts.ras {
                    e.count(done);
                    ras_call(e, Register::R8D, next, CallTo::Indirect);
                } else {
                    e.exit_indirect(done);
                }
                ended = true;
            }
            ok
        }
        Inline::Ret => {
            let extra = if ins.op_count() == 1 { i32::from(ins.immediate16()) } else { 0 };
            let b = cached(Seq::Ret(extra), || {
                asm(|a| {
                    a.mov(r13d, dword_ptr(r12).gs())?;
                    a.lea(r12d, dword_ptr(r12 + 4 + extra))
                })
                .and_then(fix32)
            })?;
            e.bytes(&b);
            if e.opts.ras {
                e.count(done);
                e.bytes(glue::ras_return());
            }
            e.exit_indirect(done);
            ended = true;
            true
        }
        Inline::Syscall => {
            e.count(done);
            e.bytes(&runtime::lea_r13_r14(e.at(next)));
            e.bytes(&runtime::store_r13(off::EIP));
            e.bytes(&runtime::store_imm(off::EXIT, EXIT_SYSCALL));
            e.jmp_shared(Fixup::ExitCommon);
            ended = true;
            true
        }
    };
    Some((handled, ended))
}

/// A call of a PC thunk that loads `r` (`block::pc_thunk`), done inline: if the four
/// bytes at the call's target are still the thunk's (read through the window at run time,
/// so any later write, remapping or unmapping of the thunk's page is seen), store the
/// return address below ESP as the call would have pushed it and the thunk's `ret` popped
/// it, put it in `r` and go on; else make the call (the out-of-line path, as
/// [`inline`]'s `Call` without the return stack). `p.done` counts the thunk's two
/// instructions. The check is flag-free (`lea` through rcx, the guest's ECX kept in r9),
/// and falls through when the thunk is there: `loop` back to the prologue's trampoline
/// (`runtime::THUNK_FAIL`) and the call after the body, for the first check within reach
/// of it; `jrcxz` over the call inline for any other; a fault of its read re-runs the call in the interpreter, which then faults
/// precisely (or not) at the thunk, as the host would.
pub(super) fn pc_thunk(e: &mut Emitter, ins: &Instruction, p: &Pos, r: Register) -> Option<()> {
    let target = ins.near_branch32().wrapping_sub(p.eip) as i32;
    let want = super::block::thunk_bytes(r).wrapping_neg().to_le_bytes();
    let at = e.at(target).to_le_bytes();
    if e.thunk_unchecked {
        // The engine keeps the translation dependent on the thunk's page instead (its
        // frame marked as code, its mapping checked where the translation is entered).
        thunk_effect(e, p, r)?;
        return Some(());
    }
    e.bytes(&[0x49, 0x89, 0xc9]); // mov r9, rcx
    e.bytes(&[0x65, 0x67, 0x41, 0x8b, 0x8e, at[0], at[1], at[2], at[3]]); // mov ecx, gs:[r14d + at]
    // The `loop` that would follow the `lea`, and its displacement back to the trampoline.
    let back = runtime::THUNK_FAIL as isize - (e.code.len() + 6 + 2) as isize;
    let tramp = !e.opts.slow_loop && e.thunk_fail.is_none() && back >= -128;
    if tramp {
        // ecx = bytes - thunk's + 1: one exactly when they are the thunk's, and `loop`
        // (rcx - 1, jump if not zero) falls through; otherwise it goes back to the
        // prologue's trampoline, which jumps to the call (emitted after the body).
        let w = super::block::thunk_bytes(r).wrapping_neg().wrapping_add(1).to_le_bytes();
        e.bytes(&[0x8d, 0x89, w[0], w[1], w[2], w[3]]); // lea ecx, [rcx - bytes + 1]
        e.bytes(&[0xe2, back as i8 as u8]); // loop thunk_fail
    } else {
        e.bytes(&[0x8d, 0x89, want[0], want[1], want[2], want[3]]); // lea ecx, [rcx - bytes]
        e.bytes(&[0xe3, 0]); // jrcxz ok
        let jrcxz = e.code.len() - 1;
        // Not the thunk (any more): the call.
        e.bytes(&[0x4c, 0x89, 0xc9]); // mov rcx, r9
        let counted = e.counted;
        call_direct(e, p.next, target, p.done - 2, false)?;
        e.counted = counted;
        e.code[jrcxz] = u8::try_from(e.code.len() - (jrcxz + 1)).ok().filter(|d| *d < 0x80)?;
    }
    // ok: the thunk's effect.
    e.bytes(&[0x4c, 0x89, 0xc9]); // mov rcx, r9
    thunk_effect(e, p, r)?;
    if tramp {
        e.thunk_fail = Some((p.next, target, p.done - 2, e.counted));
    }
    Some(())
}

/// What a PC thunk loading `r` does, called from the instruction at `p`: `r` gets the
/// return address, which stays below ESP where the call wrote it.
fn thunk_effect(e: &mut Emitter, p: &Pos, r: Register) -> Option<()> {
    let hr = runtime::host_gpr(gpr_index(r));
    let d = e.at(p.next);
    e.bytes(&fix32(asm(|a| {
        a.lea(hr, dword_ptr(r14 + d))?;
        a.mov(dword_ptr(r12 - 4).gs(), hr)
    })?)?);
    Some(())
}

/// The call of an inlined PC thunk whose bytes changed, out of line (after the body),
/// where the prologue's trampoline jumps with the guest's rcx back in place.
pub(super) fn thunk_call(e: &mut Emitter) -> Option<()> {
    let Some((next, target, done, counted)) = e.thunk_fail.take() else { return Some(()) };
    e.local.push((runtime::THUNK_FAIL_REL, e.code.len()));
    e.counted = counted;
    call_direct(e, next, target, done, false)
}

/// A direct call: the return address (`next` bytes from the block start) pushed, `done`
/// instructions counted, then the transfer to `target` bytes from the block start, on
/// the return stack if `ras`.
fn call_direct(e: &mut Emitter, next: i32, target: i32, done: u32, ras: bool) -> Option<()> {
    e.bytes(&runtime::lea_r13_r14(e.at(next)));
    push_reg(e, r13d)?;
    e.count(done);
    if ras {
        ras_call(e, Register::R13D, next, CallTo::Direct(target));
    } else {
        e.jump(target);
    }
    Some(())
}

/// A call's transfer, after the guest's return address (`next` bytes from the block
/// start, also in `ret`: r13d or r8d) was pushed and the call counted.
enum CallTo {
    /// A direct call `delta` bytes from the block start: the host `call`'s own rel32 is
    /// its chain site (or goes to a lookup if the target is in another page).
    Direct(i32),
    /// An indirect call (target in r13d): the host `call` goes to a lookup after the pad.
    Indirect,
}

/// The return stack's half of a call ([`crate::ras`]): unless the stack is full (`esp`
/// zero: it is emptied first), push the key `!EIP` of the return address and make the
/// transfer a host `call`, whose return address is the landing pad that follows it. A
/// predicted guest return arrives there with the EIP in r13d; the pad sets r14d to this
/// page and continues at the return address through a chain site (or a lookup if it is
/// in the next page). Flags untouched.
fn ras_call(e: &mut Emitter, ret: Register, next: i32, to: CallTo) {
    // mov r9, rcx; mov ecx, esp; jrcxz full
    e.bytes(&[0x49, 0x89, 0xc9, 0x89, 0xe1, 0xe3, 0]);
    let jrcxz = e.code.len() - 1;
    let cont = e.code.len();
    // mov rcx, r9; mov r9d, ret; not r9; push r9; call rel32
    let mov = if ret == Register::R13D { 0xe9 } else { 0xc1 };
    e.bytes(&[0x4c, 0x89, 0xc9, 0x45, 0x89, mov, 0x49, 0xf7, 0xd1, 0x41, 0x51, 0xe8, 0, 0, 0, 0]);
    let call_rel = e.code.len() - 4;
    if let CallTo::Direct(delta) = to {
        e.branch_field(call_rel, delta);
    }
    // The landing pad: lea r14d, [r13 - page offset of the return address]; jmp rel32.
    let d = e.at(next).wrapping_neg().to_le_bytes();
    e.bytes(&[0x45, 0x8d, 0xb5, d[0], d[1], d[2], d[3], 0xe9, 0, 0, 0, 0]);
    let rel = e.code.len() - 4;
    e.branch_field(rel, next);
    // full: mov rsp, [r15 + ras_empty]; jmp cont
    const _: () = assert!(off::RAS_EMPTY == 0xa0);
    e.code[jrcxz] = (e.code.len() - (jrcxz + 1)) as u8;
    e.bytes(&[0x49, 0x8b, 0xa7, 0xa0, 0, 0, 0, 0xeb, 0]);
    let back = e.code.len();
    e.code[back - 1] = (cont as isize - back as isize) as i8 as u8;
    if let CallTo::Indirect = to {
        let to = (e.code.len() - (call_rel + 4)) as u32;
        e.code[call_rel..call_rel + 4].copy_from_slice(&to.to_le_bytes());
        e.lookup();
    }
}

/// Consecutive register pushes (`push r32`, not ESP) or pops (`pop r32`, not ESP) at the
/// start of `seq`, lowered as one run when there are two or more: the stores (loads) at
/// their offsets from ESP, then ESP moved once, instead of an ESP update after each (a
/// function's prologue and epilogue save and restore three or four registers: one
/// dependent `lea` on ESP each). Returns how many instructions the run took (0 or 1:
/// none lowered). Nothing but memory changes before the last access, so a fault part
/// way is taken at the run's first instruction (its fault point) and the interpreter
/// runs the run again from there.
pub(super) fn stack_run(e: &mut Emitter, seq: &[&Instruction]) -> usize {
    const MAX_RUN: usize = 8;
    let reg = |ins: &Instruction, code: Code| {
        // The one-byte forms only: a prefix (`lock pop`: #UD) leaves the instruction to
        // its own lowering.
        (ins.code() == code
            && ins.len() == 1
            && matches!(isa::lowering(ins), Lower::Inline(Inline::Push | Inline::Pop)))
        .then(|| gpr_index(ins.op0_register()))
        .filter(|&g| g != 4)
    };
    let Some(code) = seq.first().map(|i| i.code()).filter(|&c| c == Code::Push_r32 || c == Code::Pop_r32) else {
        return 0;
    };
    let regs: Vec<u8> = seq.iter().take(MAX_RUN).map_while(|i| reg(i, code)).map(|g| g as u8).collect();
    if regs.len() < 2 {
        return 0;
    }
    // Guest registers other than ESP live in the host's eax..edi (no REX.R needed).
    let host = |g: u8| -> u8 {
        let r: Register = runtime::host_gpr(usize::from(g)).into();
        (r as u8).wrapping_sub(Register::EAX as u8)
    };
    let n = regs.len() as i8;
    for (j, &g) in regs.iter().enumerate() {
        let (op, disp) = if code == Code::Push_r32 { (0x89, -4 * (j as i8 + 1)) } else { (0x8b, 4 * j as i8) };
        // mov gs:[r12d + disp8], r32 / mov r32, gs:[r12d + disp8]
        e.bytes(&[0x65, 0x67, 0x41, op, 0x44 | (host(g) << 3), 0x24, disp as u8]);
    }
    let total = if code == Code::Push_r32 { -4 * n } else { 4 * n };
    // lea r12d, [r12d + total]
    e.bytes(&[0x67, 0x45, 0x8d, 0x64, 0x24, total as u8]);
    regs.len()
}

/// The hand lowering of a 32-bit `push`, `pop r32`, `leave` or a string instruction:
/// whether it was lowered (none of them ends the block).
fn stack_or_string(e: &mut Emitter, ins: &Instruction, kind: Inline) -> Option<bool> {
    Some(match kind {
        Inline::String => {
            let prefix = rep_prefix(ins);
            let sse = e.opts.sse;
            let b = cached(Seq::Str(ins.code(), prefix, sse), || string_seq(ins, prefix, sse))?;
            e.bytes(&b);
            true
        }
        Inline::Push if ins.op0_kind() == OpKind::Register => {
            let r = runtime::host_gpr(gpr_index(ins.op0_register()));
            push_reg(e, r);
            true
        }
        Inline::Push if ins.op0_kind() != OpKind::Memory => {
            let v = ins.immediate(0) as u32;
            let b = fix32(asm(|a| {
                a.mov(dword_ptr(r12 - 4).gs(), v)?;
                a.lea(r12d, dword_ptr(r12 - 4))
            })?)?;
            e.bytes(&b);
            true
        }
        Inline::Push => {
            let ok = load_operand(e, ins, Register::R13D).is_some();
            if ok {
                push_reg(e, r13d);
            }
            ok
        }
        Inline::Pop => {
            let r = runtime::host_gpr(gpr_index(ins.op0_register()));
            let b = cached(Seq::Pop(r.into()), || {
                asm(|a| {
                    a.mov(r, dword_ptr(r12).gs())?;
                    a.lea(r12d, dword_ptr(r12 + 4))
                })
                .and_then(fix32)
            })?;
            e.bytes(&b);
            true
        }
        Inline::Leave => {
            // Load first (it may fault), then update ESP and EBP.
            let b = cached(Seq::Leave, || {
                asm(|a| {
                    a.mov(r13d, dword_ptr(rbp).gs())?;
                    a.lea(r12d, dword_ptr(rbp + 4))?;
                    a.mov(ebp, r13d)
                })
                .and_then(fix32)
            })?;
            e.bytes(&b);
            true
        }
        _ => false,
    })
}

/// Maps a guest register operand to the host register holding it.
pub(super) fn map_reg(r: Register) -> Option<Register> {
    match r {
        Register::ESP => Some(Register::R12D),
        Register::SP => Some(Register::R12W),
        r if r.is_segment_register() => None,
        r => Some(r),
    }
}

/// The `rep`/`repe`/`repne` prefix byte of a string instruction (0 for none).
pub(super) fn rep_prefix(ins: &Instruction) -> u8 {
    if ins.has_repne_prefix() {
        0xf2
    } else if ins.has_rep_prefix() {
        0xf3
    } else {
        0
    }
}

/// The host code of string instruction `ins` (see `morph_cpu::isa`): RSI and RDI become host
/// addresses (the window base plus the guest's 32-bit value), the host instruction runs
/// with RCX (the guest ECX) as the count and the guest's direction flag (live in EFLAGS),
/// and RSI/RDI are cut back to 32 bits — the window base is a multiple of 2^32, so that
/// gives the guest's values. Nothing touches the flags but the instruction itself. A host
/// fault part way leaves RSI/RDI/RCX at the element that faulted: resolved in place it
/// resumes; otherwise the exit saves their low halves, and the interpreter re-runs the
/// instruction from there (precisely as a restarted `rep` would). A guest ESI/EDI that
/// wraps past 4 GiB reaches the empty 4 GiB after the window and faults the same way.
pub(super) fn string_seq(ins: &Instruction, prefix: u8, sse: bool) -> Option<Vec<u8>> {
    let host = host_string_seq(ins, prefix)?;
    let mut v = match (prefix, ins.mnemonic()) {
        (0xf3, M::Movsd) => short_rep(true, host.len(), sse)?,
        (0xf3, M::Stosd) => short_rep(false, host.len(), sse)?,
        (0, _) => Vec::new(),
        // A count of zero does nothing, not even to the flags (a `repe cmps` or `repne
        // scas` too): `jecxz` (flag-free) over the host's `rep`, whose start-up costs
        // as much for none as for a few dozen bytes (2.8 ns here: i686 glibc's `memcpy`
        // ends with a `rep movsb` of the 0–3 bytes its `rep movsd` left).
        _ => vec![0x67, 0xe3, u8::try_from(host.len()).ok().filter(|&n| n <= 0x7f)?],
    };
    v.extend(host);
    Some(v)
}

/// The most bytes [`short_rep`] copies or stores itself.
const SHORT_REP_MAX: u32 = 256;

/// The fast path of a `rep movsd` (`movs`) or `rep stosd` of at most [`SHORT_REP_MAX`]
/// bytes, in front of the host's own `rep` (which it jumps over when it ran). A host
/// `rep movsd`/`stosd` costs about as much for one element as for a hundred (its start-up:
/// 9.5 ns on the Intel Xeon of docs/results.md § Stop 33, where `rep movsb` of up to 64
/// bytes takes 2.6), and the i686 glibc a TM5600 gets copies and clears with them; so
/// short ones run here as SSE2 loads and stores instead (the host's XMM registers are
/// not guest state on the TM5600, which has no SSE; on a model with SSE, `sse`, the
/// guest's XMM0–7 live in the host's, so only XMM8–15 are used, and only copies of up
/// to 128 bytes run here), a head and a tail that overlap as
/// needed, every load before the first store; a count of zero (glibc's `memcpy` of
/// under four bytes) does nothing at all. It runs only when the direction flag is
/// clear, the count is at most 64 and (`movs`) the source and destination do not overlap,
/// so the result is the element-by-element copy's; and with the guest's flags back in
/// the host's, ECX, ESI and EDI untouched until every store is done and the host stack
/// as it was: a fault at any load or store is taken at the instruction with the guest's
/// state as it was before it, and the interpreter's run of the whole instruction gives
/// what the host's would have (without overlap, storing the same bytes again changes
/// nothing). The arithmetic flags are kept in r9 (`lahf`, `seto al`) and given back on
/// every path with `add al, 0x7f` and `sahf` ([`restore_flags`]); the direction flag,
/// which neither `lahf` nor any other flag-free instruction reads, is seen in which way
/// a `stosb` (of the guest's AL, into `JitState::scratch`) moves RDI. (Until stop 43
/// all the flags went through `JitState::scratch` by `pushfq` and came back with a
/// load, `bt` of memory and partial register writes: 5.1 ns for the checks of a short
/// copy against 1.65 ns now, `popfq` 7.2 ns: `benches/probes/flagsave.c` on the AMD
/// EPYC host.) `host` is the length of the host's sequence, which follows: the fast
/// path jumps over it.
fn short_rep(movs: bool, host: usize, sse: bool) -> Option<Vec<u8>> {
    let all = [xmm0, xmm1, xmm2, xmm3, xmm4, xmm5, xmm6, xmm7, xmm8, xmm9, xmm10, xmm11, xmm12, xmm13, xmm14, xmm15];
    let regs = if sse { &all[8..] } else { &all[..] };
    let max = if sse && movs { SHORT_REP_MAX / 2 } else { SHORT_REP_MAX };
    let (x0, x1) = (regs[0], regs[1]);
    let skip = u32::try_from(host).ok()?.to_le_bytes();
    asm(|a| {
        let mut host_seq = a.create_label();
        let mut out = a.create_label();
        let mut done = a.create_label();
        let mut zero = a.create_label();
        let mut past = a.create_label();
        let mut classes = [(); 6].map(|()| a.create_label());
        // The guest's arithmetic flags, kept in r9 until each path gives them back
        // (`restore_flags`): AH as `lahf` reads them, AL the overflow flag.
        a.mov(r9, rax)?;
        a.lahf()?;
        a.seto(al)?;
        a.xchg(r9, rax)?;
        a.test(ecx, ecx)?;
        a.jz(zero)?; // in either direction
        // The direction flag: which way a `stosb` into the scratch word moves RDI.
        a.lea(r8, qword_ptr(r15 + runtime::off::SCRATCH))?;
        a.xchg(rdi, r8)?;
        a.stosb()?;
        a.xchg(rdi, r8)?;
        a.lea(r13, qword_ptr(r15 + runtime::off::SCRATCH + 1))?;
        a.cmp(r8, r13)?;
        a.jne(out)?; // set: RDI went down
        a.cmp(ecx, (max / 4) as i32)?;
        a.ja(out)?; // more than 64 elements
        a.lea(r8d, dword_ptr(rcx * 4))?; // the bytes, B
        a.mov(esi, esi)?;
        a.mov(edi, edi)?;
        if movs {
            // Overlap: EDI - ESI or ESI - EDI (mod 2^32) below B.
            a.mov(r13d, edi)?;
            a.sub(r13d, esi)?;
            a.cmp(r13d, r8d)?;
            a.jb(out)?;
            a.neg(r13d)?;
            a.cmp(r13d, r8d)?;
            a.jb(out)?;
        }
        a.mov(r13, qword_ptr(r15 + runtime::off::WINDOW))?;
        if !movs {
            a.movd(x0, eax)?;
            a.pshufd(x0, x0, 0)?;
        }
        a.lea(r13, qword_ptr(r13 + rdi))?;
        for (c, limit) in [4, 16, 32, 64, 128].into_iter().enumerate() {
            a.cmp(r8d, limit)?;
            a.jbe(classes[c])?;
        }
        a.jmp(classes[5])?;
        let (from, to) = (r9, r13);
        for (c, label) in classes.iter_mut().enumerate() {
            a.set_label(label)?;
            restore_flags(a)?;
            if movs {
                // The source, in r9 now that the flags are out of it.
                a.mov(r9, qword_ptr(r15 + runtime::off::WINDOW))?;
                a.lea(r9, qword_ptr(r9 + rsi))?;
            }
            match c {
                0 if movs => {
                    a.movd(x0, dword_ptr(from))?;
                    a.movd(dword_ptr(to), x0)?;
                }
                0 => a.mov(dword_ptr(to), eax)?,
                1 => {
                    if movs {
                        a.movq(x0, qword_ptr(from))?;
                        a.movq(x1, qword_ptr(from + r8 - 8))?;
                        a.movq(qword_ptr(to), x0)?;
                        a.movq(qword_ptr(to + r8 - 8), x1)?;
                    } else {
                        a.movq(qword_ptr(to), x0)?;
                        a.movq(qword_ptr(to + r8 - 8), x0)?;
                    }
                }
                // Beyond what the registers hold (a model with SSE): never reached.
                5 if movs && sse => a.jmp(out)?,
                _ => {
                    // Head and tail of 16 (B ≤ 32), 32 (≤ 64), 64 (≤ 128) or 128 bytes.
                    let half = [0, 0, 16, 32, 64, 128][c];
                    let chunks = half / 16;
                    if movs {
                        for k in 0..chunks {
                            a.movdqu(regs[k as usize], xmmword_ptr(from + 16 * k))?;
                            a.movdqu(regs[(chunks + k) as usize], xmmword_ptr(from + r8 - half + 16 * k))?;
                        }
                    }
                    for k in 0..chunks {
                        let (h, t) = if movs { (regs[k as usize], regs[(chunks + k) as usize]) } else { (x0, x0) };
                        a.movdqu(xmmword_ptr(to + 16 * k), h)?;
                        a.movdqu(xmmword_ptr(to + r8 - half + 16 * k), t)?;
                    }
                }
            }
            a.jmp(done)?;
        }
        a.set_label(&mut out)?;
        restore_flags(a)?;
        a.jmp(host_seq)?;
        // A count of zero changes nothing (the host's `rep` takes 19 ns to do so here).
        a.set_label(&mut zero)?;
        restore_flags(a)?;
        a.jmp(past)?;
        // The guest's registers as the host's `rep` leaves them, then past its sequence.
        a.set_label(&mut done)?;
        if movs {
            a.lea(esi, dword_ptr(rsi + r8))?;
        }
        a.lea(edi, dword_ptr(rdi + r8))?;
        a.mov(ecx, 0)?;
        a.set_label(&mut past)?;
        a.db(&[0xe9, skip[0], skip[1], skip[2], skip[3]])?; // jmp rel32 over `host` bytes
        a.set_label(&mut host_seq)?;
        a.zero_bytes()?;
        Ok(())
    })
}

/// The guest's arithmetic flags back in the host's from r9, where [`short_rep`] keeps
/// them (AH as `lahf` read them, AL the overflow flag: `add al, 0x7f` overflows exactly
/// when it is 1, and `sahf` then gives back SF, ZF, AF, PF and CF); RAX as it was.
fn restore_flags(a: &mut CodeAssembler) -> Result<(), IcedError> {
    a.xchg(r9, rax)?;
    a.add(al, 0x7f)?;
    a.sahf()?;
    a.xchg(r9, rax)
}

/// The host's own string instruction (see [`string_seq`]).
fn host_string_seq(ins: &Instruction, prefix: u8) -> Option<Vec<u8>> {
    let uses_esi = matches!(ins.mnemonic(), M::Movsb | M::Movsw | M::Movsd | M::Lodsb | M::Lodsw | M::Lodsd)
        || matches!(ins.mnemonic(), M::Cmpsb | M::Cmpsw | M::Cmpsd);
    let uses_edi = !matches!(ins.mnemonic(), M::Lodsb | M::Lodsw | M::Lodsd);
    let mut v = asm(|a| {
        a.mov(r13, qword_ptr(r15 + runtime::off::WINDOW))?;
        if uses_esi {
            a.mov(esi, esi)?;
            a.lea(rsi, qword_ptr(rsi + r13))?;
        }
        if uses_edi {
            a.mov(edi, edi)?;
            a.lea(rdi, qword_ptr(rdi + r13))?;
        }
        if prefix != 0 {
            a.mov(ecx, ecx)?;
        }
        Ok(())
    })?;
    if prefix != 0 {
        v.push(prefix);
    }
    if ins.memory_size().size() == 2 {
        v.push(0x66);
    }
    // The opcode without prefixes: iced gives the 32-bit form's bytes.
    let op = match ins.mnemonic() {
        M::Movsb => 0xa4,
        M::Movsw | M::Movsd => 0xa5,
        M::Cmpsb => 0xa6,
        M::Cmpsw | M::Cmpsd => 0xa7,
        M::Stosb => 0xaa,
        M::Stosw | M::Stosd => 0xab,
        M::Lodsb => 0xac,
        M::Lodsw | M::Lodsd => 0xad,
        M::Scasb => 0xae,
        M::Scasw | M::Scasd => 0xaf,
        _ => return None,
    };
    v.push(op);
    v.extend(asm(|a| {
        if uses_esi {
            a.mov(esi, esi)?;
        }
        if uses_edi {
            a.mov(edi, edi)?;
        }
        Ok(())
    })?);
    Some(v)
}

/// The host opcode of a `jecxz`, `loop`, `loope` or `loopne` that tests ECX (a 32-bit
/// address size; the CX forms are left to the helper: a 64-bit host cannot test CX).
pub(super) fn ecx_branch(ins: &Instruction) -> Option<u8> {
    match ins.code() {
        Code::Jecxz_rel8_32 => Some(0xe3),
        Code::Loop_rel8_32_ECX => Some(0xe2),
        Code::Loope_rel8_32_ECX | Code::Loopne_rel8_32_ECX => Some(loop_condition(ins)),
        _ => None,
    }
}

/// The host opcode that runs a `loope` or `loopne` on ECX with the condition the
/// interpreter's model gives it (`isa::loop_condition`: on an AMD host, the one its
/// `rep` prefix picks), rather than the prefix copied onto the host's instruction.
fn loop_condition(ins: &Instruction) -> u8 {
    if isa::loop_condition(ins) == M::Loope { 0xe1 } else { 0xe0 }
}

/// Rewrites the memory operand of `h` (a copy of `ins`) into the process window,
/// emitting the address computation TLS operands need. `None`: not expressible.
pub(super) fn rewrite_memory(e: &mut Emitter, ins: &Instruction, h: &mut Instruction) -> Option<()> {
    let base = match ins.memory_base() {
        Register::None => Register::None,
        r => map_reg(r)?,
    };
    let index = match ins.memory_index() {
        Register::None => Register::None,
        r => map_reg(r)?,
    };
    let disp = ins.memory_displacement32();
    let seg = ins.memory_segment();
    let lea = ins.mnemonic() == M::Lea;
    let tls = !lea && (seg == Register::FS || seg == Register::GS);
    // The segment's base, from the frame's probe page for this kind of access, which
    // is inaccessible where the selector refuses it (see `runtime::JitFrame::seg_probes`).
    let write = tls && isa::memory_segments(ins).into_iter().flatten().any(|(_, i)| isa::operand_written(ins, i));
    let seg_off = runtime::seg_probe(seg == Register::GS, write);
    if tls && index == Register::None {
        // r13d = the guest segment base; the operand adds the offset: `[r13d + base +
        // disp]` (the address wraps at 32 bits as the guest's does). A TLS access
        // (`gs:[0x14]`, the stack protector's canary in every protected function) is
        // one load more than the guest's.
        let b = cached(Seq::SegLoad(seg_off), || asm(|a| a.mov(r13d, dword_ptr(r15 + seg_off))))?;
        e.bytes(&b);
        set_mem(h, Register::R13D, base, 1, disp);
    } else if tls {
        // r13d = offset + guest segment base, computed without touching the flags.
        let l = Instruction::with2(
            Code::Lea_r32_m,
            Register::R13D,
            iced_x86::MemoryOperand::with_base_index_scale_displ_size(
                base,
                index,
                ins.memory_index_scale(),
                i64::from(disp as i32),
                4,
            ),
        )
        .ok()?;
        let b = e.encode(&l)?;
        e.bytes(&b);
        let b = cached(Seq::SegBase(seg_off), || {
            asm(|a| {
                a.mov(r8d, dword_ptr(r15 + seg_off))?;
                a.lea(r13d, dword_ptr(r13 + r8))
            })
        })?;
        e.bytes(&b);
        set_mem(h, Register::R13D, Register::None, 1, 0);
    } else if base == Register::None && index == Register::None {
        // `gs:[disp32]`: an operand without registers and a 4-byte displacement is
        // encoded with a 32-bit address size (0x67, the SIB form without base and index,
        // or a 32-bit `moffs`), so the offset is zero-extended as the guest's is. One
        // instruction where loading the offset into a register first took two: every
        // global of a non-PIE program (python's dispatch reads one per bytecode).
        set_mem(h, Register::None, Register::None, 1, disp);
        h.set_memory_displ_size(4);
    } else {
        set_mem(h, base, index, ins.memory_index_scale(), disp);
    }
    h.set_segment_prefix(if lea { Register::None } else { Register::GS });
    Some(())
}

pub(super) fn set_mem(h: &mut Instruction, base: Register, index: Register, scale: u32, disp: u32) {
    h.set_memory_base(base);
    h.set_memory_index(index);
    h.set_memory_index_scale(scale);
    h.set_memory_displacement64(u64::from(disp));
    // The shortest form (iced encodes the size it is given).
    h.set_memory_displ_size(match disp as i32 {
        0 => 0,
        -128..=127 => 1,
        _ => 4,
    });
}

/// Re-encodes an ordinary guest instruction for the host, or `None`.
pub(super) fn reencode(e: &mut Emitter, ins: &Instruction) -> Option<()> {
    let mark = e.code.len();
    let mut h = *ins;
    h.set_code(isa::host_code(ins.code()));
    if !isa::entry(ins.code()).host_mode64 {
        return None; // e.g. AAA, PUSHA, BOUND: no 64-bit encoding
    }
    for i in 0..ins.op_count() {
        if ins.op_kind(i) == OpKind::Register {
            h.set_op_register(i, map_reg(ins.op_register(i))?);
        }
    }
    let has_mem = ins.op_kinds().any(|k| k == OpKind::Memory);
    if (has_mem && rewrite_memory(e, ins, &mut h).is_none()) || !e.emit_encoded(&h) {
        e.code.truncate(mark);
        return None;
    }
    Some(())
}

/// A guest memory operand loaded into a host register (for push m32, jmp/call m32).
pub(super) fn load_operand(e: &mut Emitter, ins: &Instruction, to: Register) -> Option<()> {
    let mark = e.code.len();
    let r = match ins.op0_kind() {
        OpKind::Register => {
            let src = map_reg(ins.op0_register())?;
            e.encode(&Instruction::with2(Code::Mov_r32_rm32, to, src).ok()?)
        }
        OpKind::Memory => {
            let mut h =
                Instruction::with2(Code::Mov_r32_rm32, to, iced_x86::MemoryOperand::with_base(Register::EAX)).ok()?;
            rewrite_memory(e, ins, &mut h).and_then(|()| e.encode(&h))
        }
        _ => None,
    };
    match r {
        Some(b) => {
            e.bytes(&b);
            Some(())
        }
        None => {
            e.code.truncate(mark);
            None
        }
    }
}

/// Pushes the 32-bit host register `r`: the store first (it may fault), then ESP.
pub(super) fn push_reg(e: &mut Emitter, r: AsmRegister32) -> Option<()> {
    let b = cached(Seq::Push(r.into()), || {
        asm(|a| {
            a.mov(dword_ptr(r12 - 4).gs(), r)?;
            a.lea(r12d, dword_ptr(r12 - 4))
        })
        .and_then(fix32)
    })?;
    e.bytes(&b);
    Some(())
}
