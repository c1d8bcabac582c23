//! The interpreter's control transfers.

use iced_x86::{Code, Mnemonic as M, OpKind, Register};

use super::{Ctx, Flow, Res, invalid, op_bits, set_reg};
use crate::FaultKind;
use crate::alu::mask;
use crate::state::flags::{FIXED, IF, USER_WRITABLE, ZF};
use crate::state::{reg, seg};

/// Jumps, calls, returns, loops.
pub(super) fn branch(c: &mut Ctx<'_>) -> Res<Flow> {
    let ins = c.ins;
    let m = ins.mnemonic();
    match m {
        M::Jmp => {
            let target = match ins.op_kind(0) {
                OpKind::NearBranch32 | OpKind::NearBranch16 => c.target(),
                _ => {
                    let bits = op_bits(ins, 0);
                    c.read(0, bits)?
                }
            };
            Ok(Flow::Jump(target))
        }
        M::Call => {
            let target = match ins.op_kind(0) {
                OpKind::NearBranch32 | OpKind::NearBranch16 => c.target(),
                _ => {
                    let bits = op_bits(ins, 0);
                    c.read(0, bits)?
                }
            };
            c.push(32, c.next_ip())?;
            Ok(Flow::Jump(target))
        }
        M::Ret => {
            let t = c.peek(32, 0)?;
            let extra = if ins.op_count() == 1 { u32::from(ins.immediate16()) } else { 0 };
            c.cpu.gpr[reg::ESP] = c.cpu.gpr[reg::ESP].wrapping_add(4 + extra);
            Ok(Flow::Jump(t))
        }
        M::Jecxz | M::Jcxz => {
            let v = if m == M::Jecxz { c.cpu.gpr[reg::ECX] } else { c.cpu.gpr[reg::ECX] & 0xffff };
            Ok(if v == 0 { Flow::Jump(c.target()) } else { Flow::Next })
        }
        M::Loop | M::Loope | M::Loopne => {
            // The address size picks the counter: CX with the 0x67 prefix, else ECX.
            let ecx = if matches!(
                ins.code(),
                Code::Loop_rel8_16_CX
                    | Code::Loop_rel8_32_CX
                    | Code::Loope_rel8_16_CX
                    | Code::Loope_rel8_32_CX
                    | Code::Loopne_rel8_16_CX
                    | Code::Loopne_rel8_32_CX
            ) {
                let cx = (c.cpu.gpr[reg::ECX] & 0xffff).wrapping_sub(1) & 0xffff;
                set_reg(c.cpu, Register::CX, cx);
                cx
            } else {
                let ecx = c.cpu.gpr[reg::ECX].wrapping_sub(1);
                c.cpu.gpr[reg::ECX] = ecx;
                ecx
            };
            let zf = c.cpu.eflags & ZF != 0;
            let take = ecx != 0
                && match m {
                    M::Loope => zf,
                    M::Loopne => !zf,
                    _ => true,
                };
            Ok(if take { Flow::Jump(c.target()) } else { Flow::Next })
        }
        M::Retf | M::Iret | M::Iretd => far_return(c),
        _ => Err(invalid(c.mem, ins, c.delta)),
    }
}

/// `retf` and `iret` at CPL 3. Only a return to the current code segment is modeled (the
/// guest has one, Linux's user CS): any other selector raises `#GP(selector)`, as a
/// null one does on hardware. `iret` loads the flags `popf` may change.
fn far_return(c: &mut Ctx<'_>) -> Res<Flow> {
    let ins = c.ins;
    let bits = match ins.code() {
        Code::Retfw | Code::Retfw_imm16 | Code::Iretw => 16,
        _ => 32,
    };
    let n = bits / 8;
    let iret = ins.mnemonic() != M::Retf;
    let eip = c.peek(bits, 0)?;
    let cs = c.peek(bits, n)? as u16;
    let fl = if iret { c.peek(bits, 2 * n)? } else { 0 };
    if cs != c.cpu.sel[seg::CS] {
        return Err(c.fault(FaultKind::GeneralProtection(cs & !3)));
    }
    let extra = if ins.op_count() == 1 { u32::from(ins.immediate16()) } else { 0 };
    let popped = if iret { 3 * n } else { 2 * n };
    c.cpu.gpr[reg::ESP] = c.cpu.gpr[reg::ESP].wrapping_add(popped + extra);
    if iret {
        let writable = USER_WRITABLE & mask(bits);
        c.cpu.eflags = (c.cpu.eflags & !writable) | (fl & writable) | FIXED | IF;
    }
    Ok(Flow::Jump(eip))
}
