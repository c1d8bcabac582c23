//! Pre-decoded forms of the instructions the interpreter meets most (32-bit `mov`,
//! `push`, `pop`, `lea`, the ALU group with `adc`/`sbb` (also on bytes, as `mov`),
//! `movzx`/`movsx`, `inc`/`dec`/`neg`/`not`, shifts by an immediate or CL, `shld`/`shrd`
//! by an immediate, `imul`, `setcc`, `cmovcc`, `leave`, `jcc`, `jmp`, `call`, `ret`:
//! 99 in 100 of the instructions `python3.11 -S -c pass` interprets while it starts,
//! where the earlier forms left 9 in 100 to `exec_int`).
//!
//! A block's instructions are decoded once and run many times (up to the translation
//! threshold), so what can be worked out from the instruction alone is worked out at
//! decode: which register, which immediate, the parts of the address, and above all
//! which *handler* runs it. A handler is a function specialised for one operation on
//! one shape of operands (`add r32, [base+disp]`, `jne`, `push r32`...), so running a
//! pre-decoded instruction is one indirect call with its operands in place: no `match`
//! on the operation, on the operand kinds or on the condition, each of which is a
//! branch the host mispredicts on cold code. The semantics are those of `exec_int` (the
//! same results and flags as `alu.rs` computes them, the same order of memory accesses,
//! so faults are as precise); anything else has no form and runs through `exec_int`.

use iced_x86::{Code, Instruction, Mnemonic as M, OpKind, Register};
use morph_mem::{AddressSpace, MemFault, MemFaultKind};

use crate::alu::{self, Shift};
use crate::host;
use crate::isa::{self, FastForm};
use crate::state::flags::{AF, ARITH, CF, OF, PF, SF, ZF};
use crate::state::{Cpu, reg};

/// "No register" in a [`Mem`].
const NONE: u8 = 8;

/// A memory operand with 32-bit addressing.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Mem {
    base: u8,
    index: u8,
    scale: u8,
    disp: u32,
}

impl Mem {
    /// The address: the offset (pre-decoded forms run only with flat segments).
    #[inline]
    fn linear(self, cpu: &Cpu) -> u32 {
        let mut a = self.disp;
        if self.base != NONE {
            a = a.wrapping_add(gpr(cpu, self.base));
        }
        if self.index != NONE {
            a = a.wrapping_add(gpr(cpu, self.index).wrapping_mul(u32::from(self.scale)));
        }
        a
    }

    /// Whether it is `[base + disp]` (no index): the [`BD`] handlers.
    fn base_disp(self) -> bool {
        self.base != NONE && self.index == NONE
    }
}

/// Addressing modes handlers are specialised for: `[base + disp]`...
const BD: u8 = 0;
/// ... and any other (an index, no base).
const ANY: u8 = 1;

/// The address of `m`, a memory operand of addressing mode `A`.
#[inline(always)]
fn addr<const A: u8>(cpu: &Cpu, m: &Mem) -> u32 {
    if A == BD { gpr(cpu, m.base).wrapping_add(m.disp) } else { m.linear(cpu) }
}

#[inline(always)]
fn gpr(cpu: &Cpu, r: u8) -> u32 {
    cpu.gpr[usize::from(r & 7)]
}

#[inline(always)]
fn set_gpr(cpu: &mut Cpu, r: u8, v: u32) {
    cpu.gpr[usize::from(r & 7)] = v;
}

/// The operands of a pre-decoded instruction, as its handler reads them.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Operands {
    /// The first register operand (the destination, if it is one).
    pub(super) r: u8,
    /// The second register operand.
    pub(super) s: u8,
    /// Not operands: the length in bytes of the instruction these operands are of, and
    /// whether it may write memory, for the record that holds them (`Decoded`), here
    /// in the two bytes that alignment would otherwise leave empty before `m`, which
    /// makes a record 24 bytes instead of 32. Handlers do not read them.
    pub(super) len: u8,
    pub(super) writes: bool,
    /// The memory operand.
    pub(super) m: Mem,
    /// The immediate, or a branch target as decoded; a call's return address as decoded
    /// (for a direct call, in `m.disp`).
    pub(super) imm: u32,
}

/// What running a pre-decoded instruction gave, as [`Outcome`] says, packed in a
/// register (the common `NEXT` is 0: one test after each instruction): the tag in bits
/// 32–39, a jump target or a faulting address in bits 0–31, a fault's access and kind
/// in bits 40–42.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Step(u64);

/// What running a pre-decoded instruction gave.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Outcome {
    /// It completed; the next instruction follows.
    Next,
    /// It completed and jumps here.
    Jump(u32),
    /// A page fault, with nothing changed.
    Fault(MemFault),
    /// It has no pre-decoded form: `exec_slow` runs it.
    Slow,
}

impl Step {
    pub(super) const NEXT: Step = Step(0);
    pub(super) const SLOW: Step = Step(2 << 32);

    #[inline(always)]
    fn jump(target: u32) -> Step {
        Step((1 << 32) | u64::from(target))
    }

    #[cold]
    fn fault(f: MemFault) -> Step {
        let kind = match f.kind {
            MemFaultKind::Unmapped => 0,
            MemFaultKind::Protection => 1,
            MemFaultKind::BeyondEof => 2,
            MemFaultKind::Limit => 3,
        };
        Step((3 << 32) | (u64::from(f.write) << 40) | (kind << 41) | u64::from(f.addr))
    }

    /// What it says.
    #[inline]
    pub(super) fn outcome(self) -> Outcome {
        let low = self.0 as u32;
        match (self.0 >> 32) as u8 {
            0 => Outcome::Next,
            1 => Outcome::Jump(low),
            2 => Outcome::Slow,
            _ => Outcome::Fault(MemFault {
                addr: low,
                write: self.0 & (1 << 40) != 0,
                kind: match (self.0 >> 41) & 3 {
                    0 => MemFaultKind::Unmapped,
                    1 => MemFaultKind::Protection,
                    2 => MemFaultKind::BeyondEof,
                    _ => MemFaultKind::Limit,
                },
            }),
        }
    }
}

/// Runs a pre-decoded instruction: the CPU, memory, its operands, and where it runs
/// minus where it was decoded (added to the addresses its own position implies).
pub(super) type Handler = fn(&mut Cpu, &mut AddressSpace, &Operands, u32) -> Step;

macro_rules! tri {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(f) => return Step::fault(f),
        }
    };
}

/// The handler of the instructions without a pre-decoded form.
pub(super) fn slow(_: &mut Cpu, _: &mut AddressSpace, _: &Operands, _: u32) -> Step {
    Step::SLOW
}

// ----- flags -------------------------------------------------------------------------

/// ZF, SF and PF of a 32-bit result (as `alu::szp`, without a branch).
#[inline(always)]
fn szp(r: u32) -> u32 {
    // Bit n of 0x9669 is set when n has an even number of ones; the low nibble of
    // `r ^ r >> 4` has the parity of r's low byte.
    let pf = ((0x9669 >> ((r ^ (r >> 4)) & 0xf)) & 1) * PF;
    pf | (u32::from(r == 0) * ZF) | ((r >> 24) & SF)
}

// The ALU operations, in their x86 group order, and `test`.
const ADD: u8 = 0;
const OR: u8 = 1;
const ADC: u8 = 2;
const SBB: u8 = 3;
const AND: u8 = 4;
const SUB: u8 = 5;
const XOR: u8 = 6;
const CMP: u8 = 7;
const TEST: u8 = 8;

/// Whether ALU operation `op` stores its result.
const fn stores(op: u8) -> bool {
    op != CMP && op != TEST
}

/// ALU operation `OP` on 32-bit `a` and `b`: the result and the new EFLAGS (what
/// `alu_op` gives, merged as `set_arith` merges it).
#[inline(always)]
fn alu<const OP: u8>(a: u32, b: u32, eflags: u32) -> (u32, u32) {
    let (r, f) = match OP {
        ADD | ADC => {
            let c = if OP == ADC { eflags & CF } else { 0 };
            let wide = u64::from(a) + u64::from(b) + u64::from(c);
            let r = wide as u32;
            (r, szp(r) | (wide >> 32) as u32 | ((a ^ b ^ r) & AF) | ((!(a ^ b) & (a ^ r)) >> 20) & OF)
        }
        SUB | SBB | CMP => {
            let c = if OP == SBB { eflags & CF } else { 0 };
            let r = a.wrapping_sub(b).wrapping_sub(c);
            let cf = u32::from(u64::from(a) < u64::from(b) + u64::from(c));
            (r, szp(r) | cf | ((a ^ b ^ r) & AF) | (((a ^ b) & (a ^ r)) >> 20) & OF)
        }
        AND | TEST => (a & b, szp(a & b)),
        OR => (a | b, szp(a | b)),
        _ => (a ^ b, szp(a ^ b)),
    };
    (r, (eflags & !ARITH) | f)
}

fn alu_rr<const OP: u8>(cpu: &mut Cpu, _: &mut AddressSpace, o: &Operands, _: u32) -> Step {
    let (r, f) = alu::<OP>(gpr(cpu, o.r), gpr(cpu, o.s), cpu.eflags);
    if stores(OP) {
        set_gpr(cpu, o.r, r);
    }
    cpu.eflags = f;
    Step::NEXT
}

fn alu_ri<const OP: u8>(cpu: &mut Cpu, _: &mut AddressSpace, o: &Operands, _: u32) -> Step {
    let (r, f) = alu::<OP>(gpr(cpu, o.r), o.imm, cpu.eflags);
    if stores(OP) {
        set_gpr(cpu, o.r, r);
    }
    cpu.eflags = f;
    Step::NEXT
}

fn alu_rm<const OP: u8, const A: u8>(cpu: &mut Cpu, mem: &mut AddressSpace, o: &Operands, _: u32) -> Step {
    let b = tri!(mem.read_u32(addr::<A>(cpu, &o.m)));
    let (r, f) = alu::<OP>(gpr(cpu, o.r), b, cpu.eflags);
    if stores(OP) {
        set_gpr(cpu, o.r, r);
    }
    cpu.eflags = f;
    Step::NEXT
}

fn alu_mr<const OP: u8, const A: u8>(cpu: &mut Cpu, mem: &mut AddressSpace, o: &Operands, _: u32) -> Step {
    let at = addr::<A>(cpu, &o.m);
    let a = tri!(mem.read_u32(at));
    let (r, f) = alu::<OP>(a, gpr(cpu, o.s), cpu.eflags);
    if stores(OP) {
        tri!(mem.write_u32(at, r));
    }
    cpu.eflags = f;
    Step::NEXT
}

fn alu_mi<const OP: u8, const A: u8>(cpu: &mut Cpu, mem: &mut AddressSpace, o: &Operands, _: u32) -> Step {
    let at = addr::<A>(cpu, &o.m);
    let a = tri!(mem.read_u32(at));
    let (r, f) = alu::<OP>(a, o.imm, cpu.eflags);
    if stores(OP) {
        tri!(mem.write_u32(at, r));
    }
    cpu.eflags = f;
    Step::NEXT
}

// ----- moves ---------------------------------------------------------------------------

fn mov_rr(cpu: &mut Cpu, _: &mut AddressSpace, o: &Operands, _: u32) -> Step {
    set_gpr(cpu, o.r, gpr(cpu, o.s));
    Step::NEXT
}

fn mov_ri(cpu: &mut Cpu, _: &mut AddressSpace, o: &Operands, _: u32) -> Step {
    set_gpr(cpu, o.r, o.imm);
    Step::NEXT
}

fn mov_rm<const A: u8>(cpu: &mut Cpu, mem: &mut AddressSpace, o: &Operands, _: u32) -> Step {
    let v = tri!(mem.read_u32(addr::<A>(cpu, &o.m)));
    set_gpr(cpu, o.r, v);
    Step::NEXT
}

fn mov_mr<const A: u8>(cpu: &mut Cpu, mem: &mut AddressSpace, o: &Operands, _: u32) -> Step {
    tri!(mem.write_u32(addr::<A>(cpu, &o.m), gpr(cpu, o.s)));
    Step::NEXT
}

fn mov_mi<const A: u8>(cpu: &mut Cpu, mem: &mut AddressSpace, o: &Operands, _: u32) -> Step {
    tri!(mem.write_u32(addr::<A>(cpu, &o.m), o.imm));
    Step::NEXT
}

/// `movzx`/`movsx` (`S`: sign-extending) from byte register `o.s` (`HIGH`: AH..BH).
fn ext_r8<const S: bool, const HIGH: bool>(cpu: &mut Cpu, _: &mut AddressSpace, o: &Operands, _: u32) -> Step {
    let v = (gpr(cpu, o.s) >> if HIGH { 8 } else { 0 }) as u8;
    set_gpr(cpu, o.r, if S { v as i8 as i32 as u32 } else { u32::from(v) });
    Step::NEXT
}

fn ext_r16<const S: bool>(cpu: &mut Cpu, _: &mut AddressSpace, o: &Operands, _: u32) -> Step {
    let v = gpr(cpu, o.s) as u16;
    set_gpr(cpu, o.r, if S { v as i16 as i32 as u32 } else { u32::from(v) });
    Step::NEXT
}

fn ext_m8<const S: bool, const A: u8>(cpu: &mut Cpu, mem: &mut AddressSpace, o: &Operands, _: u32) -> Step {
    let v = tri!(mem.read_u8(addr::<A>(cpu, &o.m)));
    set_gpr(cpu, o.r, if S { v as i8 as i32 as u32 } else { u32::from(v) });
    Step::NEXT
}

fn ext_m16<const S: bool, const A: u8>(cpu: &mut Cpu, mem: &mut AddressSpace, o: &Operands, _: u32) -> Step {
    let v = tri!(mem.read_u16(addr::<A>(cpu, &o.m)));
    set_gpr(cpu, o.r, if S { v as i16 as i32 as u32 } else { u32::from(v) });
    Step::NEXT
}

fn lea<const A: u8>(cpu: &mut Cpu, _: &mut AddressSpace, o: &Operands, _: u32) -> Step {
    set_gpr(cpu, o.r, addr::<A>(cpu, &o.m));
    Step::NEXT
}

// ----- the stack -----------------------------------------------------------------------

#[inline(always)]
fn push(cpu: &mut Cpu, mem: &mut AddressSpace, v: u32) -> Result<(), MemFault> {
    let sp = cpu.gpr[reg::ESP].wrapping_sub(4);
    mem.write_u32(sp, v)?;
    cpu.gpr[reg::ESP] = sp;
    Ok(())
}

fn push_r(cpu: &mut Cpu, mem: &mut AddressSpace, o: &Operands, _: u32) -> Step {
    tri!(push(cpu, mem, gpr(cpu, o.r)));
    Step::NEXT
}

fn push_i(cpu: &mut Cpu, mem: &mut AddressSpace, o: &Operands, _: u32) -> Step {
    tri!(push(cpu, mem, o.imm));
    Step::NEXT
}

/// The source is read (with ESP as it was) before ESP moves.
fn push_m<const A: u8>(cpu: &mut Cpu, mem: &mut AddressSpace, o: &Operands, _: u32) -> Step {
    let v = tri!(mem.read_u32(addr::<A>(cpu, &o.m)));
    tri!(push(cpu, mem, v));
    Step::NEXT
}

/// `pop r32`, not ESP.
fn pop_r(cpu: &mut Cpu, mem: &mut AddressSpace, o: &Operands, _: u32) -> Step {
    let sp = cpu.gpr[reg::ESP];
    let v = tri!(mem.read_u32(sp));
    cpu.gpr[reg::ESP] = sp.wrapping_add(4);
    set_gpr(cpu, o.r, v);
    Step::NEXT
}

// ----- control transfers ---------------------------------------------------------------

/// Condition `CC` (in the `jcc` encoding order: o, no, b, ae, e, ne, be, a, s, ns, p,
/// np, l, ge, le, g) of `eflags`.
#[inline(always)]
fn cond<const CC: u8>(eflags: u32) -> bool {
    let f = |b: u32| eflags & b != 0;
    let holds = match CC >> 1 {
        0 => f(OF),
        1 => f(CF),
        2 => f(ZF),
        3 => f(CF | ZF),
        4 => f(SF),
        5 => f(PF),
        6 => f(SF) != f(OF),
        _ => f(ZF) || f(SF) != f(OF),
    };
    holds != (CC & 1 != 0)
}

fn jcc<const CC: u8>(cpu: &mut Cpu, _: &mut AddressSpace, o: &Operands, delta: u32) -> Step {
    if cond::<CC>(cpu.eflags) { Step::jump(o.imm.wrapping_add(delta)) } else { Step::NEXT }
}

const JCC: [Handler; 16] = [
    jcc::<0>, jcc::<1>, jcc::<2>, jcc::<3>, jcc::<4>, jcc::<5>, jcc::<6>, jcc::<7>, jcc::<8>, jcc::<9>, jcc::<10>,
    jcc::<11>, jcc::<12>, jcc::<13>, jcc::<14>, jcc::<15>,
];

fn jmp(_: &mut Cpu, _: &mut AddressSpace, o: &Operands, delta: u32) -> Step {
    Step::jump(o.imm.wrapping_add(delta))
}

fn call(cpu: &mut Cpu, mem: &mut AddressSpace, o: &Operands, delta: u32) -> Step {
    tri!(push(cpu, mem, o.m.disp.wrapping_add(delta)));
    Step::jump(o.imm.wrapping_add(delta))
}

fn jmp_r(cpu: &mut Cpu, _: &mut AddressSpace, o: &Operands, _: u32) -> Step {
    Step::jump(gpr(cpu, o.r))
}

fn jmp_m<const A: u8>(cpu: &mut Cpu, mem: &mut AddressSpace, o: &Operands, _: u32) -> Step {
    Step::jump(tri!(mem.read_u32(addr::<A>(cpu, &o.m))))
}

/// The target is read (with ESP as it was) before the push.
fn call_r(cpu: &mut Cpu, mem: &mut AddressSpace, o: &Operands, delta: u32) -> Step {
    let t = gpr(cpu, o.r);
    tri!(push(cpu, mem, o.imm.wrapping_add(delta)));
    Step::jump(t)
}

fn call_m<const A: u8>(cpu: &mut Cpu, mem: &mut AddressSpace, o: &Operands, delta: u32) -> Step {
    let t = tri!(mem.read_u32(addr::<A>(cpu, &o.m)));
    tri!(push(cpu, mem, o.imm.wrapping_add(delta)));
    Step::jump(t)
}

fn ret(cpu: &mut Cpu, mem: &mut AddressSpace, _: &Operands, _: u32) -> Step {
    let sp = cpu.gpr[reg::ESP];
    let t = tri!(mem.read_u32(sp));
    cpu.gpr[reg::ESP] = sp.wrapping_add(4);
    Step::jump(t)
}

// ----- byte operands -------------------------------------------------------------------

/// Byte register `r` (AL, CL, DL, BL, AH, CH, DH, BH).
#[inline(always)]
fn gpr8(cpu: &Cpu, r: u8) -> u32 {
    (cpu.gpr[usize::from(r & 3)] >> ((r & 4) << 1)) & 0xff
}

#[inline(always)]
fn set_gpr8(cpu: &mut Cpu, r: u8, v: u32) {
    let shift = (r & 4) << 1;
    let g = &mut cpu.gpr[usize::from(r & 3)];
    *g = (*g & !(0xff << shift)) | ((v & 0xff) << shift);
}

/// ALU operation `OP` on bytes `a` and `b` (as `alu_op` on 8 bits, merged as
/// `set_arith` merges it).
#[inline(always)]
fn alu8<const OP: u8>(a: u32, b: u32, eflags: u32) -> (u32, u32) {
    let carry = eflags & CF != 0;
    let (r, f) = match OP {
        ADD => alu::add(a, b, false, 8),
        ADC => alu::add(a, b, carry, 8),
        SUB | CMP => alu::sub(a, b, false, 8),
        SBB => alu::sub(a, b, carry, 8),
        AND | TEST => (a & b, alu::logic(a & b, 8)),
        OR => (a | b, alu::logic(a | b, 8)),
        _ => (a ^ b, alu::logic(a ^ b, 8)),
    };
    (r, (eflags & !ARITH) | (f & ARITH))
}

fn alu8_rr<const OP: u8>(cpu: &mut Cpu, _: &mut AddressSpace, o: &Operands, _: u32) -> Step {
    let (r, f) = alu8::<OP>(gpr8(cpu, o.r), gpr8(cpu, o.s), cpu.eflags);
    if stores(OP) {
        set_gpr8(cpu, o.r, r);
    }
    cpu.eflags = f;
    Step::NEXT
}

fn alu8_ri<const OP: u8>(cpu: &mut Cpu, _: &mut AddressSpace, o: &Operands, _: u32) -> Step {
    let (r, f) = alu8::<OP>(gpr8(cpu, o.r), o.imm, cpu.eflags);
    if stores(OP) {
        set_gpr8(cpu, o.r, r);
    }
    cpu.eflags = f;
    Step::NEXT
}

fn alu8_rm<const OP: u8, const A: u8>(cpu: &mut Cpu, mem: &mut AddressSpace, o: &Operands, _: u32) -> Step {
    let b = tri!(mem.read_u8(addr::<A>(cpu, &o.m)));
    let (r, f) = alu8::<OP>(gpr8(cpu, o.r), u32::from(b), cpu.eflags);
    if stores(OP) {
        set_gpr8(cpu, o.r, r);
    }
    cpu.eflags = f;
    Step::NEXT
}

fn alu8_mr<const OP: u8, const A: u8>(cpu: &mut Cpu, mem: &mut AddressSpace, o: &Operands, _: u32) -> Step {
    let at = addr::<A>(cpu, &o.m);
    let a = tri!(mem.read_u8(at));
    let (r, f) = alu8::<OP>(u32::from(a), gpr8(cpu, o.s), cpu.eflags);
    if stores(OP) {
        tri!(mem.write_u8(at, r as u8));
    }
    cpu.eflags = f;
    Step::NEXT
}

fn alu8_mi<const OP: u8, const A: u8>(cpu: &mut Cpu, mem: &mut AddressSpace, o: &Operands, _: u32) -> Step {
    let at = addr::<A>(cpu, &o.m);
    let a = tri!(mem.read_u8(at));
    let (r, f) = alu8::<OP>(u32::from(a), o.imm, cpu.eflags);
    if stores(OP) {
        tri!(mem.write_u8(at, r as u8));
    }
    cpu.eflags = f;
    Step::NEXT
}

fn mov8_rr(cpu: &mut Cpu, _: &mut AddressSpace, o: &Operands, _: u32) -> Step {
    set_gpr8(cpu, o.r, gpr8(cpu, o.s));
    Step::NEXT
}

fn mov8_ri(cpu: &mut Cpu, _: &mut AddressSpace, o: &Operands, _: u32) -> Step {
    set_gpr8(cpu, o.r, o.imm);
    Step::NEXT
}

fn mov8_rm<const A: u8>(cpu: &mut Cpu, mem: &mut AddressSpace, o: &Operands, _: u32) -> Step {
    let v = tri!(mem.read_u8(addr::<A>(cpu, &o.m)));
    set_gpr8(cpu, o.r, u32::from(v));
    Step::NEXT
}

fn mov8_mr<const A: u8>(cpu: &mut Cpu, mem: &mut AddressSpace, o: &Operands, _: u32) -> Step {
    tri!(mem.write_u8(addr::<A>(cpu, &o.m), gpr8(cpu, o.s) as u8));
    Step::NEXT
}

fn mov8_mi<const A: u8>(cpu: &mut Cpu, mem: &mut AddressSpace, o: &Operands, _: u32) -> Step {
    tri!(mem.write_u8(addr::<A>(cpu, &o.m), o.imm as u8));
    Step::NEXT
}

// ----- one-operand arithmetic, shifts, multiplies -----------------------------------------

const INC: u8 = 0;
const DEC: u8 = 1;
const NEG: u8 = 2;
const NOT: u8 = 3;

/// `inc`, `dec`, `neg`, `not` of 32-bit `a`: the result and the new EFLAGS.
#[inline(always)]
fn unary<const OP: u8>(a: u32, eflags: u32) -> (u32, u32) {
    match OP {
        INC | DEC => {
            let (r, f) = if OP == INC { alu::<ADD>(a, 1, eflags) } else { alu::<SUB>(a, 1, eflags) };
            (r, (f & !CF) | (eflags & CF))
        }
        NEG => alu::<SUB>(0, a, eflags),
        _ => (!a, eflags),
    }
}

fn unary_r<const OP: u8>(cpu: &mut Cpu, _: &mut AddressSpace, o: &Operands, _: u32) -> Step {
    let (r, f) = unary::<OP>(gpr(cpu, o.r), cpu.eflags);
    set_gpr(cpu, o.r, r);
    cpu.eflags = f;
    Step::NEXT
}

fn unary_m<const OP: u8, const A: u8>(cpu: &mut Cpu, mem: &mut AddressSpace, o: &Operands, _: u32) -> Step {
    let at = addr::<A>(cpu, &o.m);
    let (r, f) = unary::<OP>(tri!(mem.read_u32(at)), cpu.eflags);
    tri!(mem.write_u32(at, r));
    cpu.eflags = f;
    Step::NEXT
}

const SHL: u8 = 0;
const SHR: u8 = 1;
const SAR: u8 = 2;

/// Shift `OP` of 32-bit `a` by `count` (masked, not 0), as `bits` computes it: SHL on
/// the host (for its undefined OF), SHR and SAR by `host::shift_right`.
#[inline(always)]
fn shift<const OP: u8>(a: u32, count: u32, eflags: u32) -> (u32, u32) {
    match OP {
        SHL => host::shift(Shift::Shl, a, count as u8, 32, eflags),
        SHR => host::shift_right(Shift::Shr, a, count, 32, eflags),
        _ => host::shift_right(Shift::Sar, a, count, 32, eflags),
    }
}

/// A shift of a register by an immediate count (`o.imm`, masked, not 0).
fn shift_ri<const OP: u8>(cpu: &mut Cpu, _: &mut AddressSpace, o: &Operands, _: u32) -> Step {
    let (r, f) = shift::<OP>(gpr(cpu, o.r), o.imm, cpu.eflags);
    set_gpr(cpu, o.r, r);
    cpu.eflags = (cpu.eflags & !ARITH) | (f & ARITH);
    Step::NEXT
}

fn shift_mi<const OP: u8, const A: u8>(cpu: &mut Cpu, mem: &mut AddressSpace, o: &Operands, _: u32) -> Step {
    let at = addr::<A>(cpu, &o.m);
    let (r, f) = shift::<OP>(tri!(mem.read_u32(at)), o.imm, cpu.eflags);
    tri!(mem.write_u32(at, r));
    cpu.eflags = (cpu.eflags & !ARITH) | (f & ARITH);
    Step::NEXT
}

/// A shift of a register by CL (a zero count changes nothing).
fn shift_rc<const OP: u8>(cpu: &mut Cpu, _: &mut AddressSpace, o: &Operands, _: u32) -> Step {
    let count = cpu.gpr[reg::ECX] & 0x1f;
    if count != 0 {
        let (r, f) = shift::<OP>(gpr(cpu, o.r), count, cpu.eflags);
        set_gpr(cpu, o.r, r);
        cpu.eflags = (cpu.eflags & !ARITH) | (f & ARITH);
    }
    Step::NEXT
}

/// `shld` (`LEFT`) or `shrd` of a register by an immediate count (masked, not 0).
fn shd_ri<const LEFT: bool>(cpu: &mut Cpu, _: &mut AddressSpace, o: &Operands, _: u32) -> Step {
    let (r, f) = host::double_shift(LEFT, gpr(cpu, o.r), gpr(cpu, o.s), o.imm as u8, 32, cpu.eflags);
    set_gpr(cpu, o.r, r);
    cpu.eflags = (cpu.eflags & !ARITH) | (f & ARITH);
    Step::NEXT
}

fn shd_mi<const LEFT: bool, const A: u8>(cpu: &mut Cpu, mem: &mut AddressSpace, o: &Operands, _: u32) -> Step {
    let at = addr::<A>(cpu, &o.m);
    let a = tri!(mem.read_u32(at));
    let (r, f) = host::double_shift(LEFT, a, gpr(cpu, o.s), o.imm as u8, 32, cpu.eflags);
    tri!(mem.write_u32(at, r));
    cpu.eflags = (cpu.eflags & !ARITH) | (f & ARITH);
    Step::NEXT
}

/// `imul` into register `o.r` of `a` and `b`: CF and OF from the product, the other
/// flags the host's (as `arith`).
#[inline(always)]
fn imul(cpu: &mut Cpu, r: u8, a: u32, b: u32) {
    let product = i64::from(a as i32) * i64::from(b as i32);
    set_gpr(cpu, r, product as u32);
    cpu.eflags = (cpu.eflags & !ARITH) | (host::imul_flags(a, b, 32, cpu.eflags) & ARITH);
}

fn imul_rr(cpu: &mut Cpu, _: &mut AddressSpace, o: &Operands, _: u32) -> Step {
    imul(cpu, o.r, gpr(cpu, o.r), gpr(cpu, o.s));
    Step::NEXT
}

fn imul_rm<const A: u8>(cpu: &mut Cpu, mem: &mut AddressSpace, o: &Operands, _: u32) -> Step {
    let b = tri!(mem.read_u32(addr::<A>(cpu, &o.m)));
    imul(cpu, o.r, gpr(cpu, o.r), b);
    Step::NEXT
}

fn imul_rri(cpu: &mut Cpu, _: &mut AddressSpace, o: &Operands, _: u32) -> Step {
    imul(cpu, o.r, gpr(cpu, o.s), o.imm);
    Step::NEXT
}

fn imul_rmi<const A: u8>(cpu: &mut Cpu, mem: &mut AddressSpace, o: &Operands, _: u32) -> Step {
    let a = tri!(mem.read_u32(addr::<A>(cpu, &o.m)));
    imul(cpu, o.r, a, o.imm);
    Step::NEXT
}

// ----- conditional moves and sets, `leave`, NOPs ---------------------------------------------

/// `setcc` of a byte register.
fn setcc_r<const CC: u8>(cpu: &mut Cpu, _: &mut AddressSpace, o: &Operands, _: u32) -> Step {
    set_gpr8(cpu, o.r, u32::from(cond::<CC>(cpu.eflags)));
    Step::NEXT
}

fn cmov_rr<const CC: u8>(cpu: &mut Cpu, _: &mut AddressSpace, o: &Operands, _: u32) -> Step {
    if cond::<CC>(cpu.eflags) {
        set_gpr(cpu, o.r, gpr(cpu, o.s));
    }
    Step::NEXT
}

/// The source is read (and may fault) even when the condition is false.
fn cmov_rm<const CC: u8, const A: u8>(cpu: &mut Cpu, mem: &mut AddressSpace, o: &Operands, _: u32) -> Step {
    let v = tri!(mem.read_u32(addr::<A>(cpu, &o.m)));
    if cond::<CC>(cpu.eflags) {
        set_gpr(cpu, o.r, v);
    }
    Step::NEXT
}

fn leave(cpu: &mut Cpu, mem: &mut AddressSpace, _: &Operands, _: u32) -> Step {
    let bp = cpu.gpr[reg::EBP];
    let v = tri!(mem.read_u32(bp));
    cpu.gpr[reg::ESP] = bp.wrapping_add(4);
    cpu.gpr[reg::EBP] = v;
    Step::NEXT
}

/// A NOP (of any form: a memory operand is not accessed).
pub(super) fn nop(_: &mut Cpu, _: &mut AddressSpace, _: &Operands, _: u32) -> Step {
    Step::NEXT
}

// ----- decoding --------------------------------------------------------------------------

fn gpr32(r: Register) -> Option<u8> {
    let i = (r as u32).wrapping_sub(Register::EAX as u32);
    (i < 8).then_some(i as u8)
}

/// The memory operand's address, if it uses 32-bit addressing and no FS or GS
/// override: an access through those runs through `exec_slow`, which checks the
/// selector they hold (`interp::segment_refused`) and adds their base.
fn address(ins: &Instruction) -> Option<Mem> {
    if matches!(ins.memory_segment(), Register::FS | Register::GS) {
        return None;
    }
    offset(ins)
}

/// The memory operand's offset (no segment), if it uses 32-bit addressing.
fn offset(ins: &Instruction) -> Option<Mem> {
    let reg_or_none = |r: Register| if r == Register::None { Some(NONE) } else { gpr32(r) };
    Some(Mem {
        base: reg_or_none(ins.memory_base())?,
        index: reg_or_none(ins.memory_index())?,
        scale: ins.memory_index_scale() as u8,
        disp: ins.memory_displacement32(),
    })
}

/// A 32-bit memory operand with 32-bit addressing.
fn mem_operand(ins: &Instruction) -> Option<Mem> {
    if ins.memory_size().size() != 4 {
        return None;
    }
    address(ins)
}

/// The operand kinds of a two-operand form (destination first).
#[derive(Clone, Copy)]
enum Shape {
    RR,
    RI,
    RM,
    MR,
    MI,
}

impl Operands {
    /// Takes the two operands of `ins` (32-bit ones, or bytes if `byte`): the first
    /// register in `r`, the second in `s`, the memory operand in `m`, an immediate in
    /// `imm`.
    fn shape(&mut self, ins: &Instruction, byte: bool) -> Option<Shape> {
        let l = |i| if byte { loc8(ins, i) } else { loc(ins, i) };
        Some(match (l(0)?, l(1)?) {
            (Loc::Reg(r), Loc::Reg(s)) => {
                (self.r, self.s) = (r, s);
                Shape::RR
            }
            (Loc::Reg(r), Loc::Imm(i)) => {
                (self.r, self.imm) = (r, i);
                Shape::RI
            }
            (Loc::Reg(r), Loc::Mem(m)) => {
                (self.r, self.m) = (r, m);
                Shape::RM
            }
            (Loc::Mem(m), Loc::Reg(s)) => {
                (self.m, self.s) = (m, s);
                Shape::MR
            }
            (Loc::Mem(m), Loc::Imm(i)) => {
                (self.m, self.imm) = (m, i);
                Shape::MI
            }
            _ => return None,
        })
    }
}

/// A 32-bit operand, as decoded.
#[derive(Clone, Copy)]
enum Loc {
    Reg(u8),
    Imm(u32),
    Mem(Mem),
}

fn loc(ins: &Instruction, i: u32) -> Option<Loc> {
    match ins.op_kind(i) {
        OpKind::Immediate32 | OpKind::Immediate8to32 => Some(Loc::Imm(ins.immediate(i) as u32)),
        OpKind::Register => gpr32(ins.op_register(i)).map(Loc::Reg),
        OpKind::Memory => mem_operand(ins).map(Loc::Mem),
        _ => None,
    }
}

/// A byte operand, as decoded.
fn loc8(ins: &Instruction, i: u32) -> Option<Loc> {
    match ins.op_kind(i) {
        OpKind::Immediate8 => Some(Loc::Imm(u32::from(ins.immediate8()))),
        OpKind::Register => {
            let r = (ins.op_register(i) as u32).wrapping_sub(Register::AL as u32);
            (r < 8).then_some(Loc::Reg(r as u8))
        }
        OpKind::Memory if ins.memory_size().size() == 1 => address(ins).map(Loc::Mem),
        _ => None,
    }
}

/// The 16 handlers `$h::<CC, ..>` of a conditional form, by condition.
macro_rules! per_cc {
    ($h:ident $(, $c:tt)*) => {
        [
            $h::<0 $(, $c)*> as Handler, $h::<1 $(, $c)*>, $h::<2 $(, $c)*>, $h::<3 $(, $c)*>,
            $h::<4 $(, $c)*>, $h::<5 $(, $c)*>, $h::<6 $(, $c)*>, $h::<7 $(, $c)*>,
            $h::<8 $(, $c)*>, $h::<9 $(, $c)*>, $h::<10 $(, $c)*>, $h::<11 $(, $c)*>,
            $h::<12 $(, $c)*>, $h::<13 $(, $c)*>, $h::<14 $(, $c)*>, $h::<15 $(, $c)*>,
        ]
    };
}

/// The handler of mode `A` of a memory form: `$h::<.., BD>` or `$h::<.., ANY>`.
macro_rules! by_mode {
    ($m:expr, $h:ident $(, $c:tt)*) => {
        if $m.base_disp() { $h::<$($c,)* BD> as Handler } else { $h::<$($c,)* ANY> as Handler }
    };
}

/// The handler of ALU operation `op` of a form: `$h::<OP, ..>`.
macro_rules! by_op {
    ($op:expr, $h:ident $(, $m:expr)?) => {
        match $op {
            ADD => by_op!(@one ADD, $h $(, $m)?),
            OR => by_op!(@one OR, $h $(, $m)?),
            ADC => by_op!(@one ADC, $h $(, $m)?),
            SBB => by_op!(@one SBB, $h $(, $m)?),
            AND => by_op!(@one AND, $h $(, $m)?),
            SUB => by_op!(@one SUB, $h $(, $m)?),
            XOR => by_op!(@one XOR, $h $(, $m)?),
            CMP => by_op!(@one CMP, $h $(, $m)?),
            _ => by_op!(@one TEST, $h $(, $m)?),
        }
    };
    (@one $op:ident, $h:ident) => { $h::<$op> as Handler };
    (@one $op:ident, $h:ident, $m:expr) => { by_mode!($m, $h, $op) };
}

/// The ALU operation of mnemonic `m`.
fn alu_of(m: M) -> Option<u8> {
    Some(match m {
        M::Add => ADD,
        M::Or => OR,
        M::Adc => ADC,
        M::Sbb => SBB,
        M::And => AND,
        M::Sub => SUB,
        M::Xor => XOR,
        M::Cmp => CMP,
        M::Test => TEST,
        _ => return None,
    })
}

/// The pre-decoded form of `ins` (an integer instruction): its handler and operands, if
/// its table entry has a [`FastForm`] and this instance fits it (32-bit operands and
/// addressing).
pub(super) fn form(ins: &Instruction) -> Option<(Handler, Operands)> {
    let mut o = Operands::default();
    let direct = ins.op_kind(0) == OpKind::NearBranch32;
    let next = ins.next_ip32();
    // A byte operation: its first operand is a byte register or byte of memory.
    let byte = match ins.op_kind(0) {
        OpKind::Register => ins.op0_register().size() == 1,
        OpKind::Memory => ins.memory_size().size() == 1,
        _ => false,
    };
    let h: Handler = match isa::entry(ins.code()).fast? {
        FastForm::Mov if ins.op_count() == 2 => {
            let shape = o.shape(ins, byte)?;
            match (shape, byte) {
                (Shape::RR, false) => mov_rr,
                (Shape::RI, false) => mov_ri,
                (Shape::RM, false) => by_mode!(o.m, mov_rm),
                (Shape::MR, false) => by_mode!(o.m, mov_mr),
                (Shape::MI, false) => by_mode!(o.m, mov_mi),
                (Shape::RR, true) => mov8_rr,
                (Shape::RI, true) => mov8_ri,
                (Shape::RM, true) => by_mode!(o.m, mov8_rm),
                (Shape::MR, true) => by_mode!(o.m, mov8_mr),
                (Shape::MI, true) => by_mode!(o.m, mov8_mi),
            }
        }
        FastForm::Alu if ins.op_count() == 2 => {
            let op = alu_of(ins.mnemonic())?;
            let shape = o.shape(ins, byte)?;
            match (shape, byte) {
                (Shape::RR, false) => by_op!(op, alu_rr),
                (Shape::RI, false) => by_op!(op, alu_ri),
                (Shape::RM, false) => by_op!(op, alu_rm, o.m),
                (Shape::MR, false) => by_op!(op, alu_mr, o.m),
                (Shape::MI, false) => by_op!(op, alu_mi, o.m),
                (Shape::RR, true) => by_op!(op, alu8_rr),
                (Shape::RI, true) => by_op!(op, alu8_ri),
                (Shape::RM, true) => by_op!(op, alu8_rm, o.m),
                (Shape::MR, true) => by_op!(op, alu8_mr, o.m),
                (Shape::MI, true) => by_op!(op, alu8_mi, o.m),
            }
        }
        FastForm::Push if ins.op_count() == 1 && ins.stack_pointer_increment() == -4 => match loc(ins, 0)? {
            Loc::Reg(r) => {
                o.r = r;
                push_r
            }
            Loc::Imm(i) => {
                o.imm = i;
                push_i
            }
            Loc::Mem(m) => {
                o.m = m;
                by_mode!(m, push_m)
            }
        },
        // `pop esp` stores the popped value over the incremented ESP: left to exec_int.
        FastForm::Pop if ins.op_count() == 1 && ins.stack_pointer_increment() == 4 => match loc(ins, 0)? {
            Loc::Reg(r) if usize::from(r) != reg::ESP => {
                o.r = r;
                pop_r
            }
            _ => return None,
        },
        FastForm::Ext if ins.op_count() == 2 && ins.op_kind(0) == OpKind::Register => {
            o.r = gpr32(ins.op0_register())?;
            let signed = ins.mnemonic() == M::Movsx;
            match ins.op_kind(1) {
                OpKind::Register => {
                    let r = ins.op1_register();
                    let i8 = (r as u32).wrapping_sub(Register::AL as u32);
                    let i16 = (r as u32).wrapping_sub(Register::AX as u32);
                    if i8 < 8 {
                        o.s = (i8 & 3) as u8;
                        match (signed, i8 >= 4) {
                            (false, false) => ext_r8::<false, false>,
                            (false, true) => ext_r8::<false, true>,
                            (true, false) => ext_r8::<true, false>,
                            (true, true) => ext_r8::<true, true>,
                        }
                    } else if i16 < 8 {
                        o.s = i16 as u8;
                        if signed { ext_r16::<true> } else { ext_r16::<false> }
                    } else {
                        return None;
                    }
                }
                OpKind::Memory => {
                    o.m = address(ins)?;
                    match (ins.memory_size().size(), signed) {
                        (1, false) => by_mode!(o.m, ext_m8, false),
                        (1, true) => by_mode!(o.m, ext_m8, true),
                        (2, false) => by_mode!(o.m, ext_m16, false),
                        (2, true) => by_mode!(o.m, ext_m16, true),
                        _ => return None,
                    }
                }
                _ => return None,
            }
        }
        // Any size of memory access: it is not accessed (nor is a segment base added).
        FastForm::Lea if ins.op_kind(1) == OpKind::Memory => {
            o.r = gpr32(ins.op0_register())?;
            o.m = offset(ins)?;
            by_mode!(o.m, lea)
        }
        FastForm::Jcc if direct => {
            o.imm = ins.near_branch32();
            JCC[usize::from((ins.condition_code() as u8).wrapping_sub(1) & 15)]
        }
        FastForm::Jmp if direct => {
            o.imm = ins.near_branch32();
            jmp
        }
        FastForm::Call if direct => {
            (o.imm, o.m.disp) = (ins.near_branch32(), next);
            call
        }
        // Near and 32-bit only: a far pointer in memory (`m16:16/32`) selects a segment,
        // a 16-bit operand pushes and truncates otherwise (`interp::branch`).
        FastForm::Jmp | FastForm::Call if matches!(ins.code(), Code::Call_rm32 | Code::Jmp_rm32) => {
            let is_call = ins.mnemonic() == M::Call;
            o.imm = next;
            match loc(ins, 0)? {
                Loc::Reg(r) => {
                    o.r = r;
                    if is_call { call_r } else { jmp_r }
                }
                Loc::Mem(m) => {
                    o.m = m;
                    if is_call { by_mode!(m, call_m) } else { by_mode!(m, jmp_m) }
                }
                Loc::Imm(_) => return None,
            }
        }
        FastForm::Ret if ins.op_count() == 0 && ins.stack_pointer_increment() == 4 => ret,
        FastForm::Unary if ins.op_count() == 1 => {
            let op = match ins.mnemonic() {
                M::Inc => INC,
                M::Dec => DEC,
                M::Neg => NEG,
                _ => NOT,
            };
            match loc(ins, 0)? {
                Loc::Reg(r) => {
                    o.r = r;
                    match op {
                        INC => unary_r::<INC>,
                        DEC => unary_r::<DEC>,
                        NEG => unary_r::<NEG>,
                        _ => unary_r::<NOT>,
                    }
                }
                Loc::Mem(m) => {
                    o.m = m;
                    match op {
                        INC => by_mode!(m, unary_m, INC),
                        DEC => by_mode!(m, unary_m, DEC),
                        NEG => by_mode!(m, unary_m, NEG),
                        _ => by_mode!(m, unary_m, NOT),
                    }
                }
                Loc::Imm(_) => return None,
            }
        }
        // By an immediate (not 0: a zero count writes nothing, though a memory operand
        // is read), or a register by CL.
        FastForm::Shift => {
            let op = match ins.mnemonic() {
                M::Shl | M::Sal => SHL,
                M::Shr => SHR,
                _ => SAR,
            };
            let count = match (ins.op_count(), ins.op_kind(1)) {
                (1, _) => Some(1),
                (2, OpKind::Immediate8) => Some(u32::from(ins.immediate8()) & 0x1f),
                (2, OpKind::Register) if ins.op1_register() == Register::CL => None,
                _ => return None,
            };
            match (loc(ins, 0)?, count) {
                (_, Some(0)) | (Loc::Imm(_), _) | (Loc::Mem(_), None) => return None,
                (Loc::Reg(r), Some(n)) => {
                    (o.r, o.imm) = (r, n);
                    match op {
                        SHL => shift_ri::<SHL>,
                        SHR => shift_ri::<SHR>,
                        _ => shift_ri::<SAR>,
                    }
                }
                (Loc::Mem(m), Some(n)) => {
                    (o.m, o.imm) = (m, n);
                    match op {
                        SHL => by_mode!(m, shift_mi, SHL),
                        SHR => by_mode!(m, shift_mi, SHR),
                        _ => by_mode!(m, shift_mi, SAR),
                    }
                }
                (Loc::Reg(r), None) => {
                    o.r = r;
                    match op {
                        SHL => shift_rc::<SHL>,
                        SHR => shift_rc::<SHR>,
                        _ => shift_rc::<SAR>,
                    }
                }
            }
        }
        FastForm::DoubleShift if ins.op_count() == 3 && ins.op_kind(2) == OpKind::Immediate8 => {
            let left = ins.mnemonic() == M::Shld;
            o.imm = u32::from(ins.immediate8()) & 0x1f;
            if o.imm == 0 {
                return None;
            }
            match (loc(ins, 0)?, loc(ins, 1)?) {
                (Loc::Reg(r), Loc::Reg(s)) => {
                    (o.r, o.s) = (r, s);
                    if left { shd_ri::<true> } else { shd_ri::<false> }
                }
                (Loc::Mem(m), Loc::Reg(s)) => {
                    (o.m, o.s) = (m, s);
                    if left { by_mode!(m, shd_mi, true) } else { by_mode!(m, shd_mi, false) }
                }
                _ => return None,
            }
        }
        FastForm::Imul if ins.op_count() == 2 => match (loc(ins, 0)?, loc(ins, 1)?) {
            (Loc::Reg(r), Loc::Reg(s)) => {
                (o.r, o.s) = (r, s);
                imul_rr
            }
            (Loc::Reg(r), Loc::Mem(m)) => {
                (o.r, o.m) = (r, m);
                by_mode!(m, imul_rm)
            }
            _ => return None,
        },
        FastForm::Imul if ins.op_count() == 3 => match (loc(ins, 0)?, loc(ins, 1)?, loc(ins, 2)?) {
            (Loc::Reg(r), Loc::Reg(s), Loc::Imm(i)) => {
                (o.r, o.s, o.imm) = (r, s, i);
                imul_rri
            }
            (Loc::Reg(r), Loc::Mem(m), Loc::Imm(i)) => {
                (o.r, o.m, o.imm) = (r, m, i);
                by_mode!(m, imul_rmi)
            }
            _ => return None,
        },
        FastForm::Cond => {
            let cc = usize::from((ins.condition_code() as u8).wrapping_sub(1) & 15);
            match (ins.op_count(), loc8(ins, 0)) {
                (1, Some(Loc::Reg(r))) => {
                    o.r = r;
                    per_cc!(setcc_r)[cc]
                }
                (2, _) => match (loc(ins, 0)?, loc(ins, 1)?) {
                    (Loc::Reg(r), Loc::Reg(s)) => {
                        (o.r, o.s) = (r, s);
                        per_cc!(cmov_rr)[cc]
                    }
                    (Loc::Reg(r), Loc::Mem(m)) => {
                        (o.r, o.m) = (r, m);
                        if m.base_disp() { per_cc!(cmov_rm, BD)[cc] } else { per_cc!(cmov_rm, ANY)[cc] }
                    }
                    _ => return None,
                },
                _ => return None,
            }
        }
        FastForm::Leave if ins.code() == Code::Leaved => leave,
        _ => return None,
    };
    Some((h, o))
}

#[cfg(test)]
mod tests {
    use std::rc::Rc;

    use iced_x86::code_asm::*;
    use iced_x86::{Decoder, DecoderOptions};
    use morph_mem::{PhysMem, Prot};

    use super::super::{Ctx, Flow, exec_int, page_fault};
    use super::*;

    const CODE: u32 = 0x0804_8000;
    const DATA: u32 = 0x1000_0000;

    fn space() -> AddressSpace {
        let mut m = AddressSpace::new(Rc::new(PhysMem::new(16 << 20).unwrap())).unwrap();
        m.map_anon(DATA, 0x2000, Prot::RW, false, "").unwrap();
        for i in 0..0x800u32 {
            m.write_u32(DATA + 4 * i, i.wrapping_mul(0x9e37_79b9)).unwrap();
        }
        m
    }

    /// What `ins` leaves when run from `gpr` and `eflags`, `delta` bytes from where it was
    /// decoded, through its pre-decoded form or through `exec_int`: the flow (or the
    /// fault), the registers, the flags and all of DATA.
    fn outcome(
        ins: &Instruction,
        gpr: [u32; 8],
        eflags: u32,
        delta: u32,
        pre_decoded: bool,
    ) -> (String, [u32; 8], u32, Vec<u8>) {
        let mut cpu = Cpu::new();
        cpu.gpr = gpr;
        cpu.eflags = eflags;
        let mut mem = space();
        let r = if pre_decoded {
            let (run, ops) = form(ins).unwrap_or_else(|| panic!("{ins} is not pre-decoded"));
            match run(&mut cpu, &mut mem, &ops, delta).outcome() {
                Outcome::Next => Ok(Flow::Next),
                Outcome::Jump(t) => Ok(Flow::Jump(t)),
                Outcome::Fault(f) => Err(page_fault(ins.ip32().wrapping_add(delta))(f)),
                Outcome::Slow => panic!("{ins} has the slow handler"),
            }
        } else {
            exec_int(&mut Ctx { cpu: &mut cpu, mem: &mut mem, ins, delta }, isa::entry(ins.code()).family)
        };
        let flow = r.map(|f| match f {
            Flow::Next => None,
            Flow::Jump(t) => Some(t),
        });
        let mut data = vec![0u8; 0x2000];
        mem.read_bytes(DATA, &mut data).unwrap();
        (format!("{flow:?}"), cpu.gpr, cpu.eflags, data)
    }

    /// An operand through FS or GS is not pre-decoded (`exec_slow` checks the selector
    /// and adds the base), but `lea` ignores the segment.
    #[test]
    fn fs_and_gs_operands_take_the_general_path() {
        let decode = |f: &dyn Fn(&mut CodeAssembler) -> Result<(), IcedError>| {
            let mut a = CodeAssembler::new(32).unwrap();
            f(&mut a).unwrap();
            let bytes = a.assemble(u64::from(CODE)).unwrap();
            Decoder::with_ip(32, &bytes, u64::from(CODE), DecoderOptions::NONE).decode()
        };
        assert!(form(&decode(&|a| a.mov(ecx, dword_ptr(0x1000_0080u32).fs()))).is_none());
        assert!(form(&decode(&|a| a.mov(dword_ptr(ebx).gs(), eax))).is_none());
        assert!(form(&decode(&|a| a.mov(dword_ptr(ebx).ds(), eax))).is_some());
        assert!(form(&decode(&|a| a.lea(eax, ptr(ebx + 4).gs()))).is_some());
    }

    /// Every pre-decoded form, run from many register and flag states (registers that
    /// address memory point into DATA; one state faults), leaves exactly what
    /// `exec_int` leaves: registers, flags, the flow, memory, and the fault.
    #[test]
    fn pre_decoded_forms_match_exec_int() {
        type Form = Box<dyn Fn(&mut CodeAssembler) -> Result<(), IcedError>>;
        let forms: Vec<Form> = vec![
            Box::new(|a| a.mov(eax, ecx)),
            Box::new(|a| a.mov(edx, 0x1234_5678u32)),
            Box::new(|a| a.mov(esi, dword_ptr(ebx + ecx * 4 + 8))),
            Box::new(|a| a.mov(dword_ptr(ebx + 0x10), edi)),
            Box::new(|a| a.mov(dword_ptr(ebx), 7u32)),
            Box::new(|a| a.mov(eax, dword_ptr(0x1000_0040u32))),
            Box::new(|a| a.add(eax, ecx)),
            Box::new(|a| a.sub(edx, 5)),
            Box::new(|a| a.and(esi, dword_ptr(ebx + 4))),
            Box::new(|a| a.or(dword_ptr(ebx + 12), ecx)),
            Box::new(|a| a.xor(edi, edi)),
            Box::new(|a| a.cmp(eax, -1)),
            Box::new(|a| a.cmp(dword_ptr(ebx), edx)),
            Box::new(|a| a.test(ecx, ecx)),
            Box::new(|a| a.test(dword_ptr(ebx + 8), 0x8000_0001u32)),
            Box::new(|a| a.sub(dword_ptr(ebx + ecx * 4), 3)),
            Box::new(|a| a.push(eax)),
            Box::new(|a| a.push(esp)),
            Box::new(|a| a.push(-2)),
            Box::new(|a| a.pop(ebp)),
            Box::new(|a| a.lea(eax, ptr(ebx + ecx * 8 - 4))),
            Box::new(|a| a.lea(ecx, ptr(0x100))),
            Box::new(|a| a.ret()),
            Box::new(|a| a.push(dword_ptr(ebx + 8))),
            Box::new(|a| a.push(dword_ptr(esp + 4))),
            Box::new(|a| a.movzx(eax, byte_ptr(ebx + 3))),
            Box::new(|a| a.movzx(edx, word_ptr(ebx + ecx * 2))),
            Box::new(|a| a.movsx(esi, byte_ptr(ebx + 1))),
            Box::new(|a| a.movsx(edi, word_ptr(ebx + 6))),
            Box::new(|a| a.movzx(ecx, dl)),
            Box::new(|a| a.movzx(ebp, bh)),
            Box::new(|a| a.movsx(eax, ah)),
            Box::new(|a| a.movsx(edx, si)),
            Box::new(|a| a.movzx(eax, ax)),
            Box::new(|a| a.jmp(eax)),
            Box::new(|a| a.jmp(dword_ptr(ebx + ecx * 4))),
            Box::new(|a| a.call(edx)),
            Box::new(|a| a.call(dword_ptr(ebx + 4))),
            Box::new(|a| a.call(esp)),
            Box::new(|a| a.adc(eax, ecx)),
            Box::new(|a| a.adc(edx, dword_ptr(ebx + 8))),
            Box::new(|a| a.adc(dword_ptr(ebx + ecx * 4), esi)),
            Box::new(|a| a.adc(edi, -1)),
            Box::new(|a| a.sbb(eax, ecx)),
            Box::new(|a| a.sbb(dword_ptr(ebx), 0x7fff_ffffu32)),
            Box::new(|a| a.sbb(esi, dword_ptr(ebx + ecx * 2 + 4))),
            Box::new(|a| a.sbb(ebp, 1)),
            Box::new(|a| a.add(dword_ptr(ebx + 4), 0x8000_0000u32)),
            Box::new(|a| a.add(esi, dword_ptr(ebx + ecx))),
            Box::new(|a| a.or(eax, 0)),
            Box::new(|a| a.and(dword_ptr(ebx + ecx * 4 + 8), edx)),
            Box::new(|a| a.xor(dword_ptr(0x1000_0010u32), -7)),
            Box::new(|a| a.cmp(edx, dword_ptr(ebx - 8))),
            Box::new(|a| a.test(dword_ptr(ebx + ecx * 8), esi)),
            Box::new(|a| a.sub(dword_ptr(ebx + 16), eax)),
            Box::new(|a| a.mov(dword_ptr(ebx + ecx * 4 + 4), 0x55u32)),
            Box::new(|a| a.mov(eax, dword_ptr(ebx + 0x20))),
            Box::new(|a| a.mov(dword_ptr(ebx + ecx), esi)),
            Box::new(|a| a.lea(edx, ptr(ebx + 0x44))),
            Box::new(|a| a.lea(esi, ptr(esi + esi * 2))),
            Box::new(|a| a.lea(edi, ptr(ecx * 4))),
            Box::new(|a| a.pop(eax)),
            Box::new(|a| a.push(ebx)),
            Box::new(|a| a.push(0x1234_5678)),
            Box::new(|a| a.push(dword_ptr(ebx + ecx * 4 + 8))),
            Box::new(|a| a.movzx(eax, byte_ptr(ebx + ecx))),
            Box::new(|a| a.movsx(eax, word_ptr(ebx + ecx * 2))),
            Box::new(|a| a.movsx(ecx, cl)),
            Box::new(|a| a.movzx(edi, bx)),
            Box::new(|a| a.jmp(dword_ptr(ebx + 8))),
            Box::new(|a| a.call(dword_ptr(ebx + ecx * 4))),
            Box::new(|a| a.call(dword_ptr(esp))),
            Box::new(|a| a.jmp(dword_ptr(esp + 4))),
            // Bytes.
            Box::new(|a| a.mov(al, cl)),
            Box::new(|a| a.mov(ah, dl)),
            Box::new(|a| a.mov(bh, 0x80)),
            Box::new(|a| a.mov(cl, byte_ptr(ebx + 3))),
            Box::new(|a| a.mov(dh, byte_ptr(ebx + ecx * 2))),
            Box::new(|a| a.mov(byte_ptr(ebx + 5), ah)),
            Box::new(|a| a.mov(byte_ptr(ebx + ecx), 0xfe)),
            Box::new(|a| a.mov(al, byte_ptr(0x1000_0022u32))),
            Box::new(|a| a.add(al, cl)),
            Box::new(|a| a.adc(ah, bh)),
            Box::new(|a| a.sub(dl, 0x7f)),
            Box::new(|a| a.sbb(byte_ptr(ebx + 1), dh)),
            Box::new(|a| a.and(cl, byte_ptr(ebx + ecx))),
            Box::new(|a| a.or(byte_ptr(ebx + 2), 0x81)),
            Box::new(|a| a.xor(bh, bh)),
            Box::new(|a| a.cmp(byte_ptr(ebx + ecx * 4), 0)),
            Box::new(|a| a.cmp(al, 0x80)),
            Box::new(|a| a.cmp(dl, byte_ptr(ebx + 7))),
            Box::new(|a| a.test(byte_ptr(ebx + 9), 0x40)),
            Box::new(|a| a.test(al, ah)),
            Box::new(|a| a.test(byte_ptr(ebx), cl)),
            // One-operand arithmetic, shifts, multiplies.
            Box::new(|a| a.inc(eax)),
            Box::new(|a| a.dec(ecx)),
            Box::new(|a| a.neg(edx)),
            Box::new(|a| a.not(esi)),
            Box::new(|a| a.inc(dword_ptr(ebx + 4))),
            Box::new(|a| a.dec(dword_ptr(ebx + ecx * 4))),
            Box::new(|a| a.neg(dword_ptr(ebx + 8))),
            Box::new(|a| a.not(dword_ptr(ebx + 12))),
            Box::new(|a| a.shl(eax, 1)),
            Box::new(|a| a.shl(edx, 7)),
            Box::new(|a| a.shr(esi, 1)),
            Box::new(|a| a.shr(edi, 31)),
            Box::new(|a| a.sar(eax, 3)),
            Box::new(|a| a.sar(ebp, 1)),
            Box::new(|a| a.shl(eax, cl)),
            Box::new(|a| a.shr(edx, cl)),
            Box::new(|a| a.sar(esi, cl)),
            Box::new(|a| a.shl(dword_ptr(ebx + 4), 5)),
            Box::new(|a| a.shr(dword_ptr(ebx + ecx * 4), 1)),
            Box::new(|a| a.sar(dword_ptr(ebx + 16), 12)),
            Box::new(|a| a.shld(eax, edx, 5)),
            Box::new(|a| a.shrd(esi, edi, 17)),
            Box::new(|a| a.shld(dword_ptr(ebx + 4), ecx, 1)),
            Box::new(|a| a.shrd(dword_ptr(ebx + ecx * 4), eax, 31)),
            Box::new(|a| a.imul_2(eax, ecx)),
            Box::new(|a| a.imul_2(edx, dword_ptr(ebx + 8))),
            Box::new(|a| a.imul_3(esi, edi, 0x1234_5678)),
            Box::new(|a| a.imul_3(eax, dword_ptr(ebx + ecx * 4), -3)),
            // Conditional moves and sets, `leave`.
            Box::new(|a| a.sete(al)),
            Box::new(|a| a.setne(bh)),
            Box::new(|a| a.setl(cl)),
            Box::new(|a| a.setbe(dh)),
            Box::new(|a| a.cmovg(eax, ecx)),
            Box::new(|a| a.cmovs(edx, esi)),
            Box::new(|a| a.cmovae(esi, dword_ptr(ebx + 4))),
            Box::new(|a| a.cmovp(edi, dword_ptr(ebx + ecx * 4))),
            Box::new(|a| a.leave()),
        ];
        let states: Vec<[u32; 8]> = (0..24u32)
            .map(|s| {
                let r = |k: u32| (s.wrapping_mul(0x9e37_79b9) ^ k.wrapping_mul(0x85eb_ca6b)).rotate_left(s % 32);
                // ebx and esp address DATA; ecx indexes it (small) and is a shift count; the last state has
                // ebx unmapped, so memory forms fault.
                let base = if s == 23 { 0x3000_0000 } else { DATA + 0x100 };
                // ebp addresses DATA in half of them (for `leave`).
                let frame = if s % 2 == 0 { DATA + 0x300 } else { r(6) };
                [r(1), r(2) & 0xff, r(3), base, DATA + 0x800, frame, r(7), r(8)]
            })
            .collect();
        let mut checked = 0;
        for f in &forms {
            let mut a = CodeAssembler::new(32).unwrap();
            f(&mut a).unwrap();
            let bytes = a.assemble(u64::from(CODE)).unwrap();
            let ins = Decoder::with_ip(32, &bytes, u64::from(CODE), DecoderOptions::NONE).decode();
            for (k, gpr) in states.iter().enumerate() {
                let eflags = 0x202 | (k as u32 * 0x8d5) & 0x8d5;
                for delta in [0, 0x1000] {
                    assert_eq!(
                        outcome(&ins, *gpr, eflags, delta, true),
                        outcome(&ins, *gpr, eflags, delta, false),
                        "{ins} in state {k}, delta {delta:#x}"
                    );
                    checked += 1;
                }
            }
        }
        // The branches: taken and not, at two deltas.
        let mut gpr = [0; 8];
        gpr[reg::ESP] = DATA + 0x800;
        for cc in 0..16u8 {
            let jcc = [0x0f, 0x80 + cc, 0x10, 0, 0, 0];
            for bytes in [&jcc[..], &[0xe9, 0x10, 0, 0, 0], &[0xe8, 0x10, 0, 0, 0]] {
                let ins = Decoder::with_ip(32, bytes, u64::from(CODE), DecoderOptions::NONE).decode();
                for flags in [0x202u32, 0x202 | 0x8d5, 0x202 | 0x41, 0x202 | 0x880] {
                    for delta in [0, 0x1000] {
                        assert_eq!(
                            outcome(&ins, gpr, flags, delta, true),
                            outcome(&ins, gpr, flags, delta, false),
                            "{ins} flags {flags:#x} delta {delta:#x}"
                        );
                        checked += 1;
                    }
                }
            }
        }
        assert!(checked > 1000);
    }

    #[test]
    fn other_forms_stay_slow() {
        let mut a = CodeAssembler::new(32).unwrap();
        a.mov(ax, word_ptr(ebx)).unwrap(); // 16-bit
        a.pop(esp).unwrap(); // stores over the incremented ESP
        a.push(word_ptr(ebx)).unwrap(); // 16-bit
        a.movzx(ax, byte_ptr(ebx)).unwrap(); // 16-bit destination
        a.jmp(word_ptr(ebx)).unwrap(); // 16-bit target
        a.ret_1(8).unwrap(); // ret imm16
        a.mul(ecx).unwrap(); // no form
        a.rol(eax, 3).unwrap(); // no form
        a.inc(ax).unwrap(); // 16-bit
        a.shl(eax, 0).unwrap(); // a zero count
        a.shl(dword_ptr(ebx), cl).unwrap(); // memory by CL
        a.sete(byte_ptr(ebx)).unwrap(); // memory
        a.cmovne(ax, bx).unwrap(); // 16-bit
        a.db(&[0x66, 0xc9]).unwrap(); // 16-bit `leave`
        let bytes = a.assemble(u64::from(CODE)).unwrap();
        let mut d = Decoder::with_ip(32, &bytes, u64::from(CODE), DecoderOptions::NONE);
        for ins in d.iter() {
            assert!(form(&ins).is_none(), "{ins}");
        }
    }
}
