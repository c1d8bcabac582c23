//! Integer ALU semantics: results and EFLAGS, for 8-, 16- and 32-bit operands.
//!
//! Every function takes operands zero-extended in a `u32` and the operand size in
//! bits, and returns the result (masked to the size) and the new arithmetic flags.
//! Flags the Intel SDM leaves *undefined* are given the values Intel P6-family and
//! later hardware produces where that is well known, and are otherwise cleared; the
//! per-instruction list of undefined flags lives in `docs/flags.md` and in
//! [`undefined_flags`]; the guest programs mask exactly these when they print flags,
//! and the translator's property test masks what iced-x86's tables call undefined.

use crate::state::flags::{AF, ARITH, CF, OF, PF, SF, ZF};

/// Mask of an operand size in bits.
#[inline]
pub fn mask(bits: u32) -> u32 {
    if bits >= 32 { u32::MAX } else { (1 << bits) - 1 }
}

#[inline]
fn sign(bits: u32) -> u32 {
    1 << (bits - 1)
}

/// PF: set if the low byte of `r` has an even number of ones.
#[inline]
pub fn parity(r: u32) -> u32 {
    if (r as u8).count_ones().is_multiple_of(2) { PF } else { 0 }
}

/// ZF, SF and PF of a result.
#[inline]
pub fn szp(r: u32, bits: u32) -> u32 {
    let r = r & mask(bits);
    let mut f = parity(r);
    if r == 0 {
        f |= ZF;
    }
    if r & sign(bits) != 0 {
        f |= SF;
    }
    f
}

/// `a + b + carry`.
#[inline]
pub fn add(a: u32, b: u32, carry: bool, bits: u32) -> (u32, u32) {
    let m = mask(bits);
    let wide = u64::from(a) + u64::from(b) + u64::from(carry);
    let r = (wide as u32) & m;
    let mut f = szp(r, bits);
    if wide > u64::from(m) {
        f |= CF;
    }
    if (a ^ b ^ r) & 0x10 != 0 {
        f |= AF;
    }
    if (!(a ^ b) & (a ^ r)) & sign(bits) != 0 {
        f |= OF;
    }
    (r, f)
}

/// `a - b - borrow` (also CMP and NEG).
#[inline]
pub fn sub(a: u32, b: u32, borrow: bool, bits: u32) -> (u32, u32) {
    let m = mask(bits);
    let r = a.wrapping_sub(b).wrapping_sub(u32::from(borrow)) & m;
    let mut f = szp(r, bits);
    if u64::from(a) < u64::from(b) + u64::from(borrow) {
        f |= CF;
    }
    if (a ^ b ^ r) & 0x10 != 0 {
        f |= AF;
    }
    if ((a ^ b) & (a ^ r)) & sign(bits) != 0 {
        f |= OF;
    }
    (r, f)
}

/// Flags of AND/OR/XOR/TEST: CF = OF = 0, AF undefined (hardware clears it).
#[inline]
pub fn logic(r: u32, bits: u32) -> u32 {
    szp(r, bits)
}

/// A shift or rotate: the operation and the flags it leaves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shift {
    /// SHL/SAL.
    Shl,
    /// SHR.
    Shr,
    /// SAR.
    Sar,
    /// ROL.
    Rol,
    /// ROR.
    Ror,
    /// RCL.
    Rcl,
    /// RCR.
    Rcr,
}

/// Applies a shift/rotate. `count` is the raw count; it is masked to 5 bits here. Returns
/// `None` when the masked count is zero (no result written, flags unchanged), otherwise
/// the result and the new flags merged into `old_flags`.
pub fn shift(op: Shift, a: u32, count: u32, bits: u32, old_flags: u32) -> Option<(u32, u32)> {
    let count = count & 0x1f;
    if count == 0 {
        return None;
    }
    let m = mask(bits);
    let a = a & m;
    let msb = |x: u32| (x >> (bits - 1)) & 1;
    let cf_in = old_flags & CF;
    let (r, cf, of) = match op {
        Shift::Shl => {
            let r = if count >= 32 { 0 } else { (a << count) & m };
            let cf = if count > bits { 0 } else { (u64::from(a) << count >> bits) as u32 & 1 };
            (r, cf, msb(r) ^ cf)
        }
        Shift::Shr => {
            let r = if count >= bits { 0 } else { a >> count };
            let cf = if count > bits { 0 } else { (a >> (count - 1)) & 1 };
            (r, cf, msb(a))
        }
        Shift::Sar => {
            let sa = ((a << (32 - bits)) as i32) >> (32 - bits);
            let r = (sa >> count.min(31)) as u32 & m;
            let cf = ((sa >> (count - 1).min(31)) as u32) & 1;
            (r, cf, 0)
        }
        Shift::Rol | Shift::Ror => {
            let c = count % bits;
            let r = if op == Shift::Rol {
                if c == 0 { a } else { ((a << c) | (a >> (bits - c))) & m }
            } else if c == 0 {
                a
            } else {
                ((a >> c) | (a << (bits - c))) & m
            };
            // Rotates change only CF and OF.
            let (cf, of) = if op == Shift::Rol {
                let cf = r & 1;
                (cf, msb(r) ^ cf)
            } else {
                (msb(r), msb(r) ^ ((r >> (bits - 2)) & 1))
            };
            let f = (old_flags & !(CF | OF)) | cf | if of != 0 { OF } else { 0 };
            return Some((r, f));
        }
        Shift::Rcl | Shift::Rcr => {
            let c = if bits == 32 { count } else { count % (bits + 1) };
            let wide = (u64::from(cf_in) << bits) | u64::from(a); // bits+1 wide
            let n = bits + 1;
            let wm = (1u64 << n) - 1;
            let rot = if c == 0 {
                wide
            } else if op == Shift::Rcl {
                ((wide << c) | (wide >> (n - c))) & wm
            } else {
                ((wide >> c) | (wide << (n - c))) & wm
            };
            let r = rot as u32 & m;
            let cf = (rot >> bits) as u32 & 1;
            let of = if op == Shift::Rcl { msb(r) ^ cf } else { msb(r) ^ ((r >> (bits - 2)) & 1) };
            let f = (old_flags & !(CF | OF)) | cf | if of != 0 { OF } else { 0 };
            return Some((r, f));
        }
    };
    let mut f = (old_flags & !ARITH) | szp(r, bits) | cf;
    if of != 0 {
        f |= OF;
    }
    Some((r, f))
}

/// SHLD (`left`) / SHRD: shifts `dst` by `count`, filling from `src`. `None` if the
/// masked count is zero. For 16-bit operands with counts above 16 the result is
/// undefined; this computes it as a 32-bit rotate of `dst:src` would.
pub fn double_shift(left: bool, dst: u32, src: u32, count: u32, bits: u32, old: u32) -> Option<(u32, u32)> {
    let count = count & 0x1f;
    if count == 0 {
        return None;
    }
    let m = mask(bits);
    let (d, s) = (u64::from(dst & m), u64::from(src & m));
    let (r, cf) = if left {
        let wide = (d << bits) | s; // 2*bits wide
        let shifted = wide << count;
        (((shifted >> bits) as u32) & m, ((wide << (count - 1)) >> (2 * bits - 1)) as u32 & 1)
    } else {
        let wide = (s << bits) | d;
        ((wide >> count) as u32 & m, (wide >> (count - 1)) as u32 & 1)
    };
    let of = ((r ^ dst) >> (bits - 1)) & 1; // sign changed (defined for count 1)
    let mut f = (old & !ARITH) | szp(r, bits) | cf;
    if of != 0 {
        f |= OF;
    }
    Some((r, f))
}

/// Flags that the Intel SDM calls undefined after an instruction, by mnemonic (and, for
/// shifts and rotates, by masked count), for 32-bit operands (narrower shifts by more
/// than their width also leave CF undefined).
pub fn undefined_flags(mnemonic: iced_x86::Mnemonic, count: Option<u32>) -> u32 {
    use iced_x86::Mnemonic as M;
    match mnemonic {
        M::And | M::Or | M::Xor | M::Test => AF,
        M::Mul | M::Imul => SF | ZF | AF | PF,
        M::Div | M::Idiv => ARITH,
        M::Shl | M::Sal | M::Shr | M::Sar => match count.map(|c| c & 0x1f) {
            Some(0) => 0,
            Some(1) => AF,
            _ => AF | OF,
        },
        M::Rol | M::Ror | M::Rcl | M::Rcr => match count.map(|c| c & 0x1f) {
            Some(0) | Some(1) => 0,
            _ => OF,
        },
        M::Shld | M::Shrd => match count.map(|c| c & 0x1f) {
            Some(0) => 0,
            Some(1) => AF,
            _ => AF | OF,
        },
        M::Bt | M::Bts | M::Btr | M::Btc => OF | SF | AF | PF,
        M::Bsf | M::Bsr => CF | OF | SF | AF | PF,
        M::Aaa | M::Aas => OF | SF | ZF | PF,
        M::Aam | M::Aad => OF | AF | CF,
        M::Daa | M::Das => OF,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn add_sub_flags() {
        assert_eq!(add(0x7f, 1, false, 8), (0x80, SF | OF | AF));
        assert_eq!(add(0xff, 1, false, 8), (0, ZF | CF | AF | PF));
        assert_eq!(sub(0, 1, false, 32), (u32::MAX, SF | CF | AF | PF));
        assert_eq!(sub(0x8000_0000, 1, false, 32).1, OF | AF | PF);
    }

    #[test]
    fn shifts() {
        assert_eq!(shift(Shift::Shl, 0x80, 1, 8, 0), Some((0, ZF | PF | CF | OF)));
        assert_eq!(shift(Shift::Shr, 1, 0, 32, 0), None);
        assert_eq!(shift(Shift::Sar, 0x80, 7, 8, 0).unwrap().0, 0xff);
        assert_eq!(shift(Shift::Rcl, 0x80, 1, 8, 0).unwrap(), (0, CF | OF));
        assert_eq!(shift(Shift::Rcr, 0x01, 1, 8, CF).unwrap(), (0x80, CF | OF));
        assert_eq!(double_shift(true, 0x1234_5678, 0x9abc_def0, 8, 32, 0).unwrap().0, 0x3456_789a);
        assert_eq!(double_shift(false, 0x1234_5678, 0x9abc_def0, 8, 32, 0).unwrap().0, 0xf012_3456);
    }
}
