//! The interpreter's arithmetic: add, subtract, logic, multiply, divide, decimal adjusts.

use iced_x86::{Mnemonic as M, Register};

use super::{Ctx, Flow, Res, alu_op, invalid, op_bits, set_arith, set_reg};
use crate::FaultKind;
use crate::alu::{self, mask};
use crate::host;
use crate::state::flags::{AF, ARITH, CF, OF, PF};
use crate::state::reg;

/// Add, subtract, logic, increment, negate, multiply, divide.
pub(super) fn arith(c: &mut Ctx<'_>) -> Res<Flow> {
    let ins = c.ins;
    let m = ins.mnemonic();
    match m {
        M::Add | M::Or | M::Adc | M::Sbb | M::And | M::Sub | M::Xor | M::Cmp | M::Test => {
            let bits = op_bits(ins, 0);
            let a = c.read(0, bits)?;
            let b = c.read(1, bits)?;
            let (r, f) = alu_op(m, a, b, bits, c.cpu.eflags);
            if m != M::Cmp && m != M::Test {
                c.write(0, bits, r)?;
            }
            set_arith(c.cpu, f);
        }
        M::Inc | M::Dec => {
            let bits = op_bits(ins, 0);
            let a = c.read(0, bits)?;
            let (r, f) = if m == M::Inc { alu::add(a, 1, false, bits) } else { alu::sub(a, 1, false, bits) };
            c.write(0, bits, r)?;
            set_arith(c.cpu, (f & !CF) | (c.cpu.eflags & CF));
        }
        M::Neg => {
            let bits = op_bits(ins, 0);
            let a = c.read(0, bits)?;
            let (r, f) = alu::sub(0, a, false, bits);
            c.write(0, bits, r)?;
            set_arith(c.cpu, f);
        }
        M::Not => {
            let bits = op_bits(ins, 0);
            let a = c.read(0, bits)?;
            c.write(0, bits, !a & mask(bits))?;
        }
        M::Mul | M::Imul if ins.op_count() == 1 => mul1(c, m == M::Imul)?,
        M::Imul => {
            let bits = op_bits(ins, 0);
            let (a, b) = if ins.op_count() == 3 {
                (c.read(1, bits)?, c.read(2, bits)?)
            } else {
                (c.read(0, bits)?, c.read(1, bits)?)
            };
            let sx = |v: u32| -> i64 { if bits == 16 { i64::from(v as u16 as i16) } else { i64::from(v as i32) } };
            let full = sx(a) * sx(b);
            let r = full as u32 & mask(bits);
            c.write(0, bits, r)?;
            // CF = OF = the product does not fit; SF, ZF, AF, PF undefined: the host's.
            set_arith(c.cpu, host::imul_flags(a, b, bits, c.cpu.eflags));
        }
        M::Div | M::Idiv => div(c, m == M::Idiv)?,
        _ => return Err(invalid(c.mem, ins, c.delta)),
    }
    Ok(Flow::Next)
}

/// Decimal adjusts.
pub(super) fn bcd(c: &mut Ctx<'_>) -> Res<Flow> {
    let ins = c.ins;
    let m = ins.mnemonic();
    match m {
        M::Aaa | M::Aas => {
            let al = c.cpu.gpr[reg::EAX] & 0xff;
            let ax = c.cpu.gpr[reg::EAX] & 0xffff;
            let adjust = (al & 0xf) > 9 || c.cpu.eflags & AF != 0;
            let mut f = c.cpu.eflags & ARITH & !(AF | CF);
            let mut nax = ax;
            if adjust {
                nax =
                    if m == M::Aaa { ax.wrapping_add(0x106) } else { ax.wrapping_sub(6).wrapping_sub(0x100) & 0xffff };
                f |= AF | CF;
            }
            let sum = nax;
            nax = (nax & 0xff0f) & 0xffff;
            set_reg(c.cpu, Register::AX, nax);
            // SF, ZF, PF, OF undefined: computed from AL as P6-family hardware does; AMD's
            // come from the 16-bit sum before AL is masked, OF its signed overflow
            // (measured on the host: native is the oracle).
            let undefined = if crate::host::amd_like() {
                let over = adjust && {
                    let (a, b) = (ax as u16 as i16, if m == M::Aaa { 0x106i16 } else { -0x106 });
                    a.checked_add(b).is_none()
                };
                alu::szp(sum, 16) & !PF | alu::szp(sum & 0xff, 8) & PF | if over { OF } else { 0 }
            } else {
                alu::szp(nax & 0xff, 8)
            };
            set_arith(c.cpu, (f & (AF | CF)) | undefined);
        }
        M::Daa | M::Das => {
            let old_al = c.cpu.gpr[reg::EAX] & 0xff;
            let old_cf = c.cpu.eflags & CF != 0;
            let mut al = old_al;
            let mut cf = false;
            let mut af = false;
            if (al & 0xf) > 9 || c.cpu.eflags & AF != 0 {
                al = if m == M::Daa { al.wrapping_add(6) } else { al.wrapping_sub(6) } & 0xff;
                cf = old_cf || if m == M::Daa { old_al + 6 > 0xff } else { old_al < 6 };
                af = true;
            }
            if old_al > 0x99 || old_cf {
                al = if m == M::Daa { al.wrapping_add(0x60) } else { al.wrapping_sub(0x60) } & 0xff;
                cf = true;
            }
            set_reg(c.cpu, Register::AL, al);
            let mut f = alu::szp(al, 8);
            // OF undefined: AMD's is the signed overflow of the adjustment's addition
            // (subtraction), measured on the host for every AL, AF and CF.
            if crate::host::amd_like() {
                let adj = (if af { 6 } else { 0 }) | if old_al > 0x99 || old_cf { 0x60 } else { 0 };
                let (a, b) = (old_al as u8 as i8, adj as u8 as i8);
                let over = if m == M::Daa { a.checked_add(b).is_none() } else { a.checked_sub(b).is_none() };
                if over {
                    f |= OF;
                }
            }
            if cf {
                f |= CF;
            }
            if af {
                f |= AF;
            }
            set_arith(c.cpu, f);
        }
        M::Aam => {
            let base = ins.immediate8() as u32;
            if base == 0 {
                return Err(c.fault(FaultKind::DivideError));
            }
            let al = c.cpu.gpr[reg::EAX] & 0xff;
            let v = ((al / base) << 8) | (al % base);
            set_reg(c.cpu, Register::AX, v);
            set_arith(c.cpu, alu::szp(v & 0xff, 8));
        }
        M::Aad => {
            let base = ins.immediate8() as u32;
            let ax = c.cpu.gpr[reg::EAX];
            let al = ((ax & 0xff) + ((ax >> 8) & 0xff) * base) & 0xff;
            set_reg(c.cpu, Register::AX, al);
            // OF, AF, CF undefined: 0 as P6-family hardware gives them; AMD's are the
            // flags of the final 8-bit addition, AL + (AH * base) (measured on the host).
            let f = if host::amd_like() {
                alu::add(ax & 0xff, (((ax >> 8) & 0xff) * base) & 0xff, false, 8).1
            } else {
                alu::szp(al, 8)
            };
            set_arith(c.cpu, f);
        }
        _ => return Err(invalid(c.mem, ins, c.delta)),
    }
    Ok(Flow::Next)
}

fn mul1(c: &mut Ctx<'_>, signed: bool) -> Res<()> {
    let bits = op_bits(c.ins, 0);
    let src = c.read(0, bits)?;
    let eax = c.cpu.gpr[reg::EAX];
    let (lo, hi, over) = match (bits, signed) {
        (8, false) => {
            let r = (eax & 0xff) * src;
            set_reg(c.cpu, Register::AX, r);
            (r & 0xff, r >> 8, r >> 8 != 0)
        }
        (8, true) => {
            let r = i32::from(eax as u8 as i8) * i32::from(src as u8 as i8);
            set_reg(c.cpu, Register::AX, r as u32);
            (r as u32 & 0xff, (r as u32 >> 8) & 0xff, r != i32::from(r as i8))
        }
        (16, false) => {
            let r = (eax & 0xffff) * src;
            set_reg(c.cpu, Register::AX, r);
            set_reg(c.cpu, Register::DX, r >> 16);
            (r & 0xffff, r >> 16, r >> 16 != 0)
        }
        (16, true) => {
            let r = i32::from(eax as u16 as i16) * i32::from(src as u16 as i16);
            set_reg(c.cpu, Register::AX, r as u32);
            set_reg(c.cpu, Register::DX, r as u32 >> 16);
            (r as u32 & 0xffff, (r as u32 >> 16) & 0xffff, r != i32::from(r as i16))
        }
        (_, false) => {
            let r = u64::from(eax) * u64::from(src);
            c.cpu.gpr[reg::EAX] = r as u32;
            c.cpu.gpr[reg::EDX] = (r >> 32) as u32;
            (r as u32, (r >> 32) as u32, r >> 32 != 0)
        }
        (_, true) => {
            let r = i64::from(eax as i32) * i64::from(src as i32);
            c.cpu.gpr[reg::EAX] = r as u32;
            c.cpu.gpr[reg::EDX] = (r >> 32) as u32;
            (r as u32, (r >> 32) as u32, r != i64::from(r as i32))
        }
    };
    let _ = (lo, hi, over);
    // CF = OF = overflow into the high half; SF/ZF/AF/PF are undefined: the host's.
    let f = host::mul_flags(signed, eax & mask(bits), src, bits, c.cpu.eflags);
    set_arith(c.cpu, f);
    Ok(())
}

fn div(c: &mut Ctx<'_>, signed: bool) -> Res<()> {
    let bits = op_bits(c.ins, 0);
    let src = c.read(0, bits)?;
    if src & mask(bits) == 0 {
        return Err(c.fault(FaultKind::DivideError));
    }
    let eax = c.cpu.gpr[reg::EAX];
    let edx = c.cpu.gpr[reg::EDX];
    let de = c.fault(FaultKind::DivideError);
    match (bits, signed) {
        (8, false) => {
            let n = eax & 0xffff;
            let (q, r) = (n / src, n % src);
            if q > 0xff {
                return Err(de);
            }
            set_reg(c.cpu, Register::AX, (r << 8) | q);
        }
        (8, true) => {
            let n = i32::from(eax as u16 as i16);
            let d = i32::from(src as u8 as i8);
            let (q, r) = (n / d, n % d);
            if q != i32::from(q as i8) {
                return Err(de);
            }
            set_reg(c.cpu, Register::AX, ((r as u32 & 0xff) << 8) | (q as u32 & 0xff));
        }
        (16, false) => {
            let n = ((edx & 0xffff) << 16) | (eax & 0xffff);
            let (q, r) = (n / src, n % src);
            if q > 0xffff {
                return Err(de);
            }
            set_reg(c.cpu, Register::AX, q);
            set_reg(c.cpu, Register::DX, r);
        }
        (16, true) => {
            let n = (((edx & 0xffff) << 16) | (eax & 0xffff)) as i32;
            let d = i32::from(src as u16 as i16);
            let (q, r) = (i64::from(n) / i64::from(d), i64::from(n) % i64::from(d));
            if q != i64::from(q as i16) {
                return Err(de);
            }
            set_reg(c.cpu, Register::AX, q as u32);
            set_reg(c.cpu, Register::DX, r as u32);
        }
        (_, false) => {
            let n = (u64::from(edx) << 32) | u64::from(eax);
            let (q, r) = (n / u64::from(src), n % u64::from(src));
            if q > u64::from(u32::MAX) {
                return Err(de);
            }
            c.cpu.gpr[reg::EAX] = q as u32;
            c.cpu.gpr[reg::EDX] = r as u32;
        }
        (_, true) => {
            let n = ((u64::from(edx) << 32) | u64::from(eax)) as i64;
            let d = i64::from(src as i32);
            let (q, r) = (i128::from(n) / i128::from(d), i128::from(n) % i128::from(d));
            if q != i128::from(q as i32) {
                return Err(de);
            }
            c.cpu.gpr[reg::EAX] = q as u32;
            c.cpu.gpr[reg::EDX] = r as u32;
        }
    }
    // The flags are undefined: the host's (the translator runs the host's `div`).
    c.cpu.eflags = host::div_flags(signed, eax, edx, src & mask(bits), bits, c.cpu.eflags);
    Ok(())
}
