//! The interpreter's control transfers.

use iced_x86::{Code, Mnemonic as M, OpKind, Register};

use super::{Ctx, Flow, Res, invalid, op_bits, read_sized, set_reg, write_sized};
use crate::FaultKind;
use crate::alu::mask;
use crate::state::flags::{FIXED, IF, NT, USER_WRITABLE, ZF};
use crate::state::{reg, seg};

/// Jumps, calls, returns, loops.
pub(super) fn branch(c: &mut Ctx<'_>) -> Res<Flow> {
    let ins = c.ins;
    let m = ins.mnemonic();
    match m {
        M::Jmp => {
            if let Some(sel) = far_selector(c)? {
                return far_transfer(c, sel);
            }
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
            if let Some(sel) = far_selector(c)? {
                return far_transfer(c, sel);
            }
            let target = match ins.op_kind(0) {
                OpKind::NearBranch32 | OpKind::NearBranch16 => c.target(),
                _ => {
                    let bits = op_bits(ins, 0);
                    c.read(0, bits)?
                }
            };
            // The operand size sizes the return address pushed (`66 e8`: 2 bytes).
            let bits = if matches!(ins.code(), Code::Call_rel16 | Code::Call_rm16) { 16 } else { 32 };
            c.push(bits, c.next_ip() & mask(bits))?;
            Ok(Flow::Jump(target))
        }
        M::Ret => {
            // `66 c3` pops a 2-byte return address (zero-extended).
            let n = if matches!(ins.code(), Code::Retnw | Code::Retnw_imm16) { 2 } else { 4 };
            let t = c.peek(8 * n, 0)?;
            let extra = if ins.op_count() == 1 { u32::from(ins.immediate16()) } else { 0 };
            c.cpu.gpr[reg::ESP] = c.cpu.gpr[reg::ESP].wrapping_add(n + extra);
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
            // On AMD hosts a `rep` prefix picks the condition (`isa::loop_condition`).
            let m = match m {
                M::Loope | M::Loopne => crate::isa::loop_condition(ins),
                _ => m,
            };
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

/// The selector of a far `call` or `jmp` (`ptr16:16/32` or `m16:16/32`), or `None` for
/// a near one.
fn far_selector(c: &mut Ctx<'_>) -> Res<Option<u16>> {
    let ins = c.ins;
    let far_m = matches!(ins.code(), Code::Call_m1616 | Code::Call_m1632 | Code::Jmp_m1616 | Code::Jmp_m1632);
    Ok(match ins.op_kind(0) {
        OpKind::FarBranch16 | OpKind::FarBranch32 => Some(ins.far_branch_selector()),
        OpKind::Memory if far_m => {
            let (bits, off) = if matches!(ins.code(), Code::Call_m1616 | Code::Jmp_m1616) { (16, 2) } else { (32, 4) };
            // The offset is read first: a fault on the pointer is at its start.
            let a = super::ea(c.cpu, ins);
            read_sized(c.mem, a, bits).map_err(c.pf())?;
            Some(c.mem.read_u16(a.wrapping_add(off)).map_err(c.pf())?)
        }
        _ => None,
    })
}

/// A far `call` or `jmp` to selector `sel` at CPL 3: only the current code segment is
/// modeled (the guest has one, Linux's user CS), so any other selector raises
/// `#GP(selector)` (`#GP(0)` for a null one), as it does on hardware for a null
/// selector or one the GDT does not hold as user code.
fn far_transfer(c: &mut Ctx<'_>, sel: u16) -> Res<Flow> {
    if sel != c.cpu.sel[seg::CS] {
        return Err(c.fault(FaultKind::GeneralProtection(sel & !3)));
    }
    let ins = c.ins;
    let wide = matches!(ins.code(), Code::Call_ptr1632 | Code::Call_m1632 | Code::Jmp_ptr1632 | Code::Jmp_m1632);
    let (bits, n) = if wide { (32, 4) } else { (16, 2) };
    let target = match ins.op_kind(0) {
        OpKind::FarBranch16 | OpKind::FarBranch32 => ins.far_branch32(),
        _ => read_sized(c.mem, super::ea(c.cpu, ins), bits).map_err(c.pf())?,
    };
    if ins.mnemonic() == M::Call {
        let sp = c.cpu.gpr[reg::ESP];
        // Both slots are written before ESP moves: a fault leaves it as it was.
        write_sized(c.mem, sp.wrapping_sub(n), bits, u32::from(sel)).map_err(c.pf())?;
        write_sized(c.mem, sp.wrapping_sub(2 * n), bits, c.next_ip() & mask(bits)).map_err(c.pf())?;
        c.cpu.gpr[reg::ESP] = sp.wrapping_sub(2 * n);
    }
    Ok(Flow::Jump(target))
}

/// `retf` and `iret` at CPL 3. Only a return to the current code segment is modeled (the
/// guest has one, Linux's user CS): any other selector raises `#GP(selector)`, as a
/// null one does on hardware. `iret` loads the flags `popf` may change.
///
/// On AMD hosts a selector whose RPL is not 3 (the CPL) makes the return one to an outer
/// level, which reads the SS and then the ESP to return to (the slots after the ones
/// popped and `retf`'s release) before the selector is checked: a page fault there comes
/// before the `#GP` (measured for `retf`, `retf imm16`, `iret`, both operand sizes, null
/// and other selectors; with RPL 3 nothing more is read. A random-code run found it:
/// `retf 0x9bae` faulting at ESP + 0x9bba natively). Intel's pseudo-code raises the
/// `#GP` first. AMD hosts also read the popped slots from the highest down (a fault in
/// all of them is at `iret`'s flags, `retf`'s CS); the model reads them upwards elsewhere.
fn far_return(c: &mut Ctx<'_>) -> Res<Flow> {
    let ins = c.ins;
    let bits = match ins.code() {
        Code::Retfw | Code::Retfw_imm16 | Code::Iretw => 16,
        _ => 32,
    };
    let n = bits / 8;
    let iret = ins.mnemonic() != M::Retf;
    if iret && c.cpu.eflags & NT != 0 {
        // A nested task's return: in the compatibility mode a 64-bit kernel runs 32-bit
        // processes in, `#GP(0)` before anything is read (the hosts measured, and both
        // vendors' manuals; random code that had set NT with `popf` found it).
        return Err(c.fault(FaultKind::GeneralProtection(0)));
    }
    let slots = if iret { 3 } else { 2 };
    let order = if crate::host::amd_like() { [2, 1, 0] } else { [0, 1, 2] };
    let mut v = [0u32; 3];
    for i in order.into_iter().filter(|&i| i < slots) {
        v[i] = c.peek(bits, i as u32 * n)?;
    }
    let (eip, cs, fl) = (v[0], v[1] as u16, v[2]);
    let extra = if ins.op_count() == 1 { u32::from(ins.immediate16()) } else { 0 };
    let popped = if iret { 3 * n } else { 2 * n };
    if cs != c.cpu.sel[seg::CS] {
        if cs & 3 != 3 && crate::host::amd_like() {
            let outer = popped.wrapping_add(extra);
            c.peek(bits, outer.wrapping_add(n))?;
            c.peek(bits, outer)?;
        }
        return Err(c.fault(FaultKind::GeneralProtection(cs & !3)));
    }
    c.cpu.gpr[reg::ESP] = c.cpu.gpr[reg::ESP].wrapping_add(popped + extra);
    if iret {
        let writable = USER_WRITABLE & mask(bits);
        c.cpu.eflags = (c.cpu.eflags & !writable) | (fl & writable) | FIXED | IF;
    }
    Ok(Flow::Jump(eip))
}
