//! The interpreter's data movement: moves, exchanges, conditional moves and sets,
//! sign extensions, `lahf`/`sahf`, `xlat`.

use iced_x86::{Mnemonic as M, OpKind, Register};

use super::{Ctx, Flow, Res, cond, ea, get_reg, invalid, op_bits, reg_bits, reg_index, seg_base, set_arith, set_reg};
use crate::FaultKind;
use crate::alu::{self, mask};
use crate::state::flags::{AF, CF, FIXED, PF, SF, ZF};
use crate::state::{reg, seg};

/// `jcc`, `setcc` and `cmovcc`.
pub(super) fn conditional(c: &mut Ctx<'_>) -> Res<Flow> {
    let ins = c.ins;
    let taken = cond(c.cpu.eflags, ins.condition_code());
    if ins.is_jcc_short_or_near() {
        return Ok(if taken { Flow::Jump(c.target()) } else { Flow::Next });
    }
    if ins.op_count() == 1 {
        c.write(0, 8, u32::from(taken))?;
    } else {
        let bits = op_bits(ins, 0);
        // The source is read (and may fault) even when the condition is false.
        let v = c.read(1, bits)?;
        if taken {
            c.write(0, bits, v)?;
        }
    }
    Ok(Flow::Next)
}

/// Moves, exchanges, conversions.
pub(super) fn data(c: &mut Ctx<'_>) -> Res<Flow> {
    let ins = c.ins;
    let m = ins.mnemonic();
    match m {
        M::Mov => {
            let bits = op_bits(ins, 0);
            let k0 = ins.op_kind(0);
            if k0 == OpKind::Register && ins.op0_register().is_segment_register() {
                let v = c.read(1, 16)?;
                let s = reg_index(ins.op0_register(), Register::ES);
                if s == seg::CS || !c.cpu.load_segment(s, v as u16) {
                    // The error code names the selector refused (0 for a null one).
                    return Err(c.fault(FaultKind::GeneralProtection(v as u16 & 0xfffc)));
                }
            } else if ins.op_kind(1) == OpKind::Register && ins.op1_register().is_segment_register() {
                let v = get_reg(c.cpu, ins.op1_register());
                // To a register: zero-extended; to memory: 16 bits.
                let bits = if k0 == OpKind::Register { reg_bits(ins.op0_register()) } else { 16 };
                c.write(0, bits, v)?;
            } else {
                let v = c.read(1, bits)?;
                c.write(0, bits, v)?;
            }
        }
        M::Movzx | M::Movsx => {
            let sbits = op_bits(ins, 1);
            let v = c.read(1, sbits)?;
            let v = if m == M::Movsx {
                if sbits == 8 { v as u8 as i8 as i32 as u32 } else { v as u16 as i16 as i32 as u32 }
            } else {
                v
            };
            let dbits = op_bits(ins, 0);
            c.write(0, dbits, v & mask(dbits))?;
        }
        M::Lea => {
            // The offset only: no segment base.
            let mut a = ea(c.cpu, ins).wrapping_sub(seg_base(c.cpu, ins.memory_segment()));
            if op_bits(ins, 0) == 16 {
                a &= 0xffff;
            }
            let bits = op_bits(ins, 0);
            c.write(0, bits, a)?;
        }
        M::Xchg => {
            let bits = op_bits(ins, 0);
            let a = c.read(0, bits)?;
            let b = c.read(1, bits)?;
            // Memory operand first, so a fault leaves registers untouched.
            if ins.op_kind(1) == OpKind::Memory {
                c.write(1, bits, a)?;
                c.write(0, bits, b)?;
            } else {
                c.write(0, bits, b)?;
                c.write(1, bits, a)?;
            }
        }
        M::Bswap => {
            let v = get_reg(c.cpu, ins.op0_register());
            set_reg(c.cpu, ins.op0_register(), if op_bits(ins, 0) == 32 { v.swap_bytes() } else { 0 });
        }
        M::Xadd => {
            let bits = op_bits(ins, 0);
            let a = c.read(0, bits)?;
            let b = c.read(1, bits)?;
            let (r, f) = alu::add(a, b, false, bits);
            // TEMP = SRC + DEST; SRC = DEST; DEST = TEMP (so `xadd r, r` keeps the sum).
            // A memory destination is written first, so a fault changes no register.
            if ins.op_kind(0) == OpKind::Memory {
                c.write(0, bits, r)?;
                c.write(1, bits, a)?;
            } else {
                c.write(1, bits, a)?;
                c.write(0, bits, r)?;
            }
            set_arith(c.cpu, f);
        }
        M::Cmpxchg => {
            let bits = op_bits(ins, 0);
            let d = c.read(0, bits)?;
            let acc = c.cpu.gpr[reg::EAX] & mask(bits);
            let (_, f) = alu::sub(acc, d, false, bits);
            if acc == d {
                let s = c.read(1, bits)?;
                c.write(0, bits, s)?;
            } else {
                c.write(0, bits, d)?; // the destination is always written
                let acc_reg = match bits {
                    8 => Register::AL,
                    16 => Register::AX,
                    _ => Register::EAX,
                };
                set_reg(c.cpu, acc_reg, d);
            }
            set_arith(c.cpu, f);
        }
        M::Cmpxchg8b => {
            let a = ea(c.cpu, ins);
            let v = c.mem.read_u64(a).map_err(c.pf())?;
            let edx_eax = (u64::from(c.cpu.gpr[reg::EDX]) << 32) | u64::from(c.cpu.gpr[reg::EAX]);
            if v == edx_eax {
                let n = (u64::from(c.cpu.gpr[reg::ECX]) << 32) | u64::from(c.cpu.gpr[reg::EBX]);
                c.mem.write_u64(a, n).map_err(c.pf())?;
                c.cpu.eflags |= ZF;
            } else {
                c.mem.write_u64(a, v).map_err(c.pf())?;
                c.cpu.gpr[reg::EAX] = v as u32;
                c.cpu.gpr[reg::EDX] = (v >> 32) as u32;
                c.cpu.eflags &= !ZF;
            }
        }
        M::Cbw => {
            let v = c.cpu.gpr[reg::EAX] as u8 as i8 as i16 as u16 as u32;
            set_reg(c.cpu, Register::AX, v);
        }
        M::Cwde => c.cpu.gpr[reg::EAX] = c.cpu.gpr[reg::EAX] as u16 as i16 as i32 as u32,
        M::Cwd => {
            let v = if c.cpu.gpr[reg::EAX] & 0x8000 != 0 { 0xffff } else { 0 };
            set_reg(c.cpu, Register::DX, v);
        }
        M::Cdq => c.cpu.gpr[reg::EDX] = if c.cpu.gpr[reg::EAX] & 0x8000_0000 != 0 { u32::MAX } else { 0 },
        M::Lahf => {
            let v = (c.cpu.eflags & (SF | ZF | AF | PF | CF)) | FIXED;
            set_reg(c.cpu, Register::AH, v);
        }
        M::Sahf => {
            let ah = (c.cpu.gpr[reg::EAX] >> 8) & (SF | ZF | AF | PF | CF);
            c.cpu.eflags = (c.cpu.eflags & !(SF | ZF | AF | PF | CF)) | ah;
        }
        M::Xlatb => {
            let v = c.mem.read_u8(ea(c.cpu, ins)).map_err(c.pf())?;
            set_reg(c.cpu, Register::AL, u32::from(v));
        }
        _ => return Err(invalid(c.mem, ins, c.delta)),
    }
    Ok(Flow::Next)
}
