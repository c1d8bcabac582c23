//! The interpreter's shifts, rotates, bit tests and bit scans.

use iced_x86::{Mnemonic as M, OpKind};

use super::{Ctx, Flow, Res, ea, get_reg, invalid, op_bits, read_sized, set_arith, write_sized};
use crate::alu::{Shift, mask};
use crate::host;
use crate::state::flags::CF;

/// Shifts, rotates, double shifts, bit tests and scans.
pub(super) fn bits(c: &mut Ctx<'_>) -> Res<Flow> {
    let ins = c.ins;
    let m = ins.mnemonic();
    match m {
        M::Shl | M::Sal | M::Shr | M::Sar | M::Rol | M::Ror | M::Rcl | M::Rcr => {
            let bits = op_bits(ins, 0);
            let a = c.read(0, bits)?;
            let count = if ins.op_count() == 1 { 1 } else { c.read(1, 8)? };
            let op = match m {
                M::Shl | M::Sal => Shift::Shl,
                M::Shr => Shift::Shr,
                M::Sar => Shift::Sar,
                M::Rol => Shift::Rol,
                M::Ror => Shift::Ror,
                M::Rcl => Shift::Rcl,
                _ => Shift::Rcr,
            };
            // A zero count (masked to 5 bits) changes nothing; any other runs on the
            // host, whose undefined flags the translated instruction gives too.
            if count & 0x1f != 0 {
                let (r, f) = if matches!(op, Shift::Shr | Shift::Sar) {
                    host::shift_right(op, a, count, bits, c.cpu.eflags)
                } else if ins.op_count() == 2 && ins.op_kind(1) != OpKind::Register {
                    host::shift_imm(op, a, count as u8, bits, c.cpu.eflags, ins.op_kind(0) == OpKind::Memory)
                } else {
                    host::shift(op, a, count as u8, bits, c.cpu.eflags)
                };
                c.write(0, bits, r & mask(bits))?;
                set_arith(c.cpu, f);
            }
        }
        M::Shld | M::Shrd => {
            let bits = op_bits(ins, 0);
            let a = c.read(0, bits)?;
            let b = c.read(1, bits)?;
            let count = c.read(2, 8)?;
            if count & 0x1f != 0 {
                let (r, f) = host::double_shift(m == M::Shld, a, b, count as u8, bits, c.cpu.eflags);
                c.write(0, bits, r & mask(bits))?;
                set_arith(c.cpu, f);
            }
        }
        M::Bt | M::Bts | M::Btr | M::Btc => bit_test(c)?,
        M::Bsf | M::Bsr | M::Tzcnt | M::Lzcnt => {
            let bits = op_bits(ins, 0);
            let v = c.read(1, bits)?;
            let old = c.read(0, bits)?;
            // The flags but ZF, and the destination for a zero source, are the host's.
            let (r, f) = host::bit_scan(matches!(m, M::Bsf | M::Tzcnt), old, v, bits, c.cpu.eflags);
            c.write(0, bits, r & mask(bits))?;
            set_arith(c.cpu, f);
        }
        _ => return Err(invalid(c.mem, ins, c.delta)),
    }
    Ok(Flow::Next)
}

fn bit_test(c: &mut Ctx<'_>) -> Res<()> {
    let ins = c.ins;
    let m = ins.mnemonic();
    let bits = op_bits(ins, 0);
    let (bit, val, addr) = if ins.op_kind(0) == OpKind::Memory && ins.op_kind(1) == OpKind::Register {
        // A register bit offset addresses memory beyond the operand (signed).
        let off = get_reg(c.cpu, ins.op1_register());
        let off = if bits == 16 { off as u16 as i16 as i32 } else { off as i32 };
        let a = ea(c.cpu, ins).wrapping_add(((off >> 3) & !((bits as i32 / 8) - 1)) as u32);
        // With 16-bit addressing the whole address, the bit offset's bytes included,
        // wraps at 64 KiB (measured on the host).
        let a = if ins.memory_base().size() == 2 || ins.memory_index().size() == 2 { a & 0xffff } else { a };
        let bit = (off as u32) & (bits - 1);
        (bit, read_sized(c.mem, a, bits).map_err(c.pf())?, Some(a))
    } else {
        let b = c.read(1, 8.max(op_bits(ins, 1)))? & (bits - 1);
        (b, c.read(0, bits)?, None)
    };
    let cf = (val >> bit) & 1;
    let nv = match m {
        M::Bts => Some(val | (1 << bit)),
        M::Btr => Some(val & !(1 << bit)),
        M::Btc => Some(val ^ (1 << bit)),
        _ => None,
    };
    if let Some(nv) = nv {
        match addr {
            Some(a) => write_sized(c.mem, a, bits, nv).map_err(c.pf())?,
            None => c.write(0, bits, nv)?,
        }
    }
    c.cpu.eflags = (c.cpu.eflags & !CF) | cf;
    Ok(())
}
