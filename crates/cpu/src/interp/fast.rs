//! Pre-decoded forms of the instructions the interpreter meets most (32-bit `mov`,
//! `push`, `pop`, `lea`, the ALU group, `movzx`/`movsx`, `jcc`, `jmp`, `call`, `ret`:
//! more than nine in ten of the instructions interpreted while a dynamically linked
//! program starts).
//!
//! A block's instructions are decoded once and run many times (up to the translation
//! threshold), so what can be worked out from the instruction alone is worked out at
//! decode: which register, which immediate, the parts of the address. Running one is a
//! `match` on a small enum instead of a walk through iced-x86's operand accessors. The
//! semantics are those of `exec_int` (the same ALU and flag helpers, the same order of
//! memory accesses, so faults are as precise); anything else has no form.

use iced_x86::{ConditionCode, Instruction, Mnemonic as M, OpKind, Register};
use morph_mem::AddressSpace;

use super::{Flow, Res, alu_op, cond, page_fault, set_arith};
use crate::isa::{self, FastForm};
use crate::state::{Cpu, reg, seg};

/// "No register" in a [`Mem`].
const NONE: u8 = 8;

/// A 32-bit memory operand with 32-bit addressing.
#[derive(Clone, Copy, Debug)]
pub(super) struct Mem {
    base: u8,
    index: u8,
    scale: u8,
    /// 0: no segment base; else `seg::FS` or `seg::GS` + 1.
    seg: u8,
    disp: u32,
}

impl Mem {
    /// The offset (no segment base), as `lea` computes it.
    #[inline]
    fn offset(self, cpu: &Cpu) -> u32 {
        let mut a = self.disp;
        if self.base != NONE {
            a = a.wrapping_add(cpu.gpr[self.base as usize]);
        }
        if self.index != NONE {
            a = a.wrapping_add(cpu.gpr[self.index as usize].wrapping_mul(u32::from(self.scale)));
        }
        a
    }

    /// The linear address.
    #[inline]
    fn linear(self, cpu: &Cpu) -> u32 {
        let a = self.offset(cpu);
        if self.seg == 0 { a } else { a.wrapping_add(cpu.seg_base[(self.seg - 1) as usize]) }
    }
}

/// Where a 32-bit operand lives.
#[derive(Clone, Copy, Debug)]
pub(super) enum Loc {
    Reg(u8),
    Imm(u32),
    Mem(Mem),
}

/// Where a 32-bit result goes.
#[derive(Clone, Copy, Debug)]
pub(super) enum Dst {
    Reg(u8),
    Mem(Mem),
}

impl From<Dst> for Loc {
    fn from(d: Dst) -> Loc {
        match d {
            Dst::Reg(r) => Loc::Reg(r),
            Dst::Mem(m) => Loc::Mem(m),
        }
    }
}

/// The 8- or 16-bit source of a `movzx`/`movsx`.
#[derive(Clone, Copy, Debug)]
pub(super) enum Narrow {
    /// A byte register: its GPR and the bit offset (0 for AL..BL, 8 for AH..BH).
    Reg8(u8, u8),
    Reg16(u8),
    Mem8(Mem),
    Mem16(Mem),
}

/// An instruction in pre-decoded form.
#[derive(Clone, Copy, Debug)]
pub(super) enum Fast {
    Mov(Dst, Loc),
    /// `movzx`/`movsx` into a 32-bit register (`true`: sign-extending).
    Ext(u8, Narrow, bool),
    /// `add`, `sub`, `and`, `or`, `xor`, `cmp`, `test` (the last two store nothing).
    Alu(M, Dst, Loc),
    Push(Loc),
    Pop(u8),
    Lea(u8, Mem),
    /// Relative targets as decoded (the block's delta is added when run).
    Jcc(ConditionCode, u32),
    Jmp(u32),
    Call(u32),
    /// `jmp`/`call` through a 32-bit register or memory operand.
    JmpInd(Loc),
    CallInd(Loc),
    Ret,
}

fn gpr32(r: Register) -> Option<u8> {
    let i = (r as u32).wrapping_sub(Register::EAX as u32);
    (i < 8).then_some(i as u8)
}

/// The memory operand's address, if it uses 32-bit addressing.
fn address(ins: &Instruction) -> Option<Mem> {
    let reg_or_none = |r: Register| if r == Register::None { Some(NONE) } else { gpr32(r) };
    let seg = match ins.memory_segment() {
        Register::FS => seg::FS as u8 + 1,
        Register::GS => seg::GS as u8 + 1,
        _ => 0,
    };
    Some(Mem {
        base: reg_or_none(ins.memory_base())?,
        index: reg_or_none(ins.memory_index())?,
        scale: ins.memory_index_scale() as u8,
        seg,
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

fn dst(ins: &Instruction) -> Option<Dst> {
    match ins.op_kind(0) {
        OpKind::Register => gpr32(ins.op0_register()).map(Dst::Reg),
        OpKind::Memory => mem_operand(ins).map(Dst::Mem),
        _ => None,
    }
}

fn loc(ins: &Instruction, i: u32) -> Option<Loc> {
    match ins.op_kind(i) {
        OpKind::Immediate32 | OpKind::Immediate8to32 => Some(Loc::Imm(ins.immediate(i) as u32)),
        OpKind::Register => gpr32(ins.op_register(i)).map(Loc::Reg),
        OpKind::Memory => mem_operand(ins).map(Loc::Mem),
        _ => None,
    }
}

/// The pre-decoded form of `ins` (an integer instruction), if its table entry has a
/// [`FastForm`] and this instance fits it (32-bit operands and addressing).
pub(super) fn form(ins: &Instruction) -> Option<Fast> {
    let two = || Some((dst(ins)?, loc(ins, 1)?));
    let indirect = || match loc(ins, 0)? {
        l @ (Loc::Reg(_) | Loc::Mem(_)) => Some(l),
        Loc::Imm(_) => None,
    };
    let direct = ins.op_kind(0) == OpKind::NearBranch32;
    match isa::entry(ins.code()).fast? {
        FastForm::Mov if ins.op_count() == 2 => two().map(|(d, s)| Fast::Mov(d, s)),
        FastForm::Alu if ins.op_count() == 2 => two().map(|(d, s)| Fast::Alu(ins.mnemonic(), d, s)),
        // The source is read (with ESP as it was) before ESP moves.
        FastForm::Push if ins.op_count() == 1 && ins.stack_pointer_increment() == -4 => loc(ins, 0).map(Fast::Push),
        FastForm::Ext if ins.op_count() == 2 && ins.op_kind(0) == OpKind::Register => {
            Some(Fast::Ext(gpr32(ins.op0_register())?, narrow(ins)?, ins.mnemonic() == M::Movsx))
        }
        // `pop esp` stores the popped value over the incremented ESP: left to exec_int.
        FastForm::Pop if ins.op_count() == 1 && ins.stack_pointer_increment() == 4 => match loc(ins, 0) {
            Some(Loc::Reg(r)) if r as usize != reg::ESP => Some(Fast::Pop(r)),
            _ => None,
        },
        // Any size of memory access: it is not accessed (nor is a segment base added).
        FastForm::Lea if ins.op_kind(1) == OpKind::Memory => match (dst(ins), address(ins)) {
            (Some(Dst::Reg(r)), Some(m)) => Some(Fast::Lea(r, Mem { seg: 0, ..m })),
            _ => None,
        },
        FastForm::Jcc if direct => Some(Fast::Jcc(ins.condition_code(), ins.near_branch32())),
        FastForm::Jmp if direct => Some(Fast::Jmp(ins.near_branch32())),
        FastForm::Call if direct => Some(Fast::Call(ins.near_branch32())),
        FastForm::Jmp if matches!(ins.op_kind(0), OpKind::Register | OpKind::Memory) => indirect().map(Fast::JmpInd),
        FastForm::Call if matches!(ins.op_kind(0), OpKind::Register | OpKind::Memory) => indirect().map(Fast::CallInd),
        FastForm::Ret if ins.op_count() == 0 && ins.stack_pointer_increment() == 4 => Some(Fast::Ret),
        _ => None,
    }
}

/// The 8- or 16-bit source of a `movzx`/`movsx`.
fn narrow(ins: &Instruction) -> Option<Narrow> {
    Some(match ins.op_kind(1) {
        OpKind::Register => {
            let r = ins.op1_register();
            let i8 = (r as u32).wrapping_sub(Register::AL as u32);
            let i16 = (r as u32).wrapping_sub(Register::AX as u32);
            if i8 < 4 {
                Narrow::Reg8(i8 as u8, 0)
            } else if i8 < 8 {
                Narrow::Reg8(i8 as u8 - 4, 8)
            } else if i16 < 8 {
                Narrow::Reg16(i16 as u8)
            } else {
                return None;
            }
        }
        OpKind::Memory => match ins.memory_size().size() {
            1 => Narrow::Mem8(address(ins)?),
            2 => Narrow::Mem16(address(ins)?),
            _ => return None,
        },
        _ => return None,
    })
}

#[inline]
fn read(cpu: &Cpu, mem: &AddressSpace, l: Loc, ip: u32) -> Res<u32> {
    match l {
        Loc::Reg(r) => Ok(cpu.gpr[r as usize]),
        Loc::Imm(v) => Ok(v),
        Loc::Mem(m) => mem.read_u32(m.linear(cpu)).map_err(page_fault(ip)),
    }
}

#[inline]
fn write(cpu: &mut Cpu, mem: &mut AddressSpace, d: Dst, v: u32, ip: u32) -> Res<()> {
    match d {
        Dst::Reg(r) => {
            cpu.gpr[r as usize] = v;
            Ok(())
        }
        Dst::Mem(m) => mem.write_u32(m.linear(cpu), v).map_err(page_fault(ip)),
    }
}

/// Runs `f`, the pre-decoded form of the instruction at `ip` whose next is at `next`
/// (both where it runs), decoded `delta` bytes from there.
#[inline(always)]
pub(super) fn exec(cpu: &mut Cpu, mem: &mut AddressSpace, f: Fast, ip: u32, next: u32, delta: u32) -> Res<Flow> {
    match f {
        Fast::Mov(d, s) => {
            let v = read(cpu, mem, s, ip)?;
            write(cpu, mem, d, v, ip)?;
        }
        Fast::Alu(m, d, s) => {
            let a = read(cpu, mem, d.into(), ip)?;
            let b = read(cpu, mem, s, ip)?;
            let (r, fl) = alu_op(m, a, b, 32, cpu.eflags);
            if m != M::Cmp && m != M::Test {
                write(cpu, mem, d, r, ip)?;
            }
            set_arith(cpu, fl);
        }
        Fast::Push(l) => {
            let v = read(cpu, mem, l, ip)?;
            let sp = cpu.gpr[reg::ESP].wrapping_sub(4);
            mem.write_u32(sp, v).map_err(page_fault(ip))?;
            cpu.gpr[reg::ESP] = sp;
        }
        Fast::Pop(r) => {
            let sp = cpu.gpr[reg::ESP];
            let v = mem.read_u32(sp).map_err(page_fault(ip))?;
            cpu.gpr[reg::ESP] = sp.wrapping_add(4);
            cpu.gpr[r as usize] = v;
        }
        Fast::Ext(r, src, signed) => {
            let read8 = |m: Mem| mem.read_u8(m.linear(cpu)).map_err(page_fault(ip));
            let read16 = |m: Mem| mem.read_u16(m.linear(cpu)).map_err(page_fault(ip));
            let v = match src {
                Narrow::Reg8(g, shift) => (cpu.gpr[g as usize] >> shift) as u8 as u32,
                Narrow::Reg16(g) => cpu.gpr[g as usize] as u16 as u32,
                Narrow::Mem8(m) => u32::from(read8(m)?),
                Narrow::Mem16(m) => u32::from(read16(m)?),
            };
            let byte = matches!(src, Narrow::Reg8(..) | Narrow::Mem8(_));
            cpu.gpr[r as usize] = match (signed, byte) {
                (false, _) => v,
                (true, true) => v as u8 as i8 as i32 as u32,
                (true, false) => v as u16 as i16 as i32 as u32,
            };
        }
        Fast::Lea(r, m) => cpu.gpr[r as usize] = m.offset(cpu),
        Fast::Jcc(cc, t) => {
            return Ok(if cond(cpu.eflags, cc) { Flow::Jump(t.wrapping_add(delta)) } else { Flow::Next });
        }
        Fast::Jmp(t) => return Ok(Flow::Jump(t.wrapping_add(delta))),
        Fast::Call(t) => {
            let sp = cpu.gpr[reg::ESP].wrapping_sub(4);
            mem.write_u32(sp, next).map_err(page_fault(ip))?;
            cpu.gpr[reg::ESP] = sp;
            return Ok(Flow::Jump(t.wrapping_add(delta)));
        }
        Fast::JmpInd(l) => return Ok(Flow::Jump(read(cpu, mem, l, ip)?)),
        Fast::CallInd(l) => {
            let t = read(cpu, mem, l, ip)?;
            let sp = cpu.gpr[reg::ESP].wrapping_sub(4);
            mem.write_u32(sp, next).map_err(page_fault(ip))?;
            cpu.gpr[reg::ESP] = sp;
            return Ok(Flow::Jump(t));
        }
        Fast::Ret => {
            let sp = cpu.gpr[reg::ESP];
            let t = mem.read_u32(sp).map_err(page_fault(ip))?;
            cpu.gpr[reg::ESP] = sp.wrapping_add(4);
            return Ok(Flow::Jump(t));
        }
    }
    Ok(Flow::Next)
}

#[cfg(test)]
mod tests {
    use std::rc::Rc;

    use iced_x86::code_asm::*;
    use iced_x86::{Decoder, DecoderOptions};
    use morph_mem::{PhysMem, Prot};

    use super::super::{Ctx, exec_int};
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
            let f = form(ins).unwrap_or_else(|| panic!("{ins} is not pre-decoded"));
            let (ip, next) = (ins.ip32().wrapping_add(delta), ins.next_ip32().wrapping_add(delta));
            exec(&mut cpu, &mut mem, f, ip, next, delta)
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
        ];
        let states: Vec<[u32; 8]> = (0..24u32)
            .map(|s| {
                let r = |k: u32| (s.wrapping_mul(0x9e37_79b9) ^ k.wrapping_mul(0x85eb_ca6b)).rotate_left(s % 32);
                // ebx and esp address DATA; ecx indexes it (small); the last state has
                // ebx unmapped, so memory forms fault.
                let base = if s == 23 { 0x3000_0000 } else { DATA + 0x100 };
                [r(1), r(2) & 0xff, r(3), base, DATA + 0x800, r(6), r(7), r(8)]
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
        a.mov(al, cl).unwrap(); // 8-bit
        a.mov(ax, word_ptr(ebx)).unwrap(); // 16-bit
        a.pop(esp).unwrap(); // stores over the incremented ESP
        a.push(word_ptr(ebx)).unwrap(); // 16-bit
        a.movzx(ax, byte_ptr(ebx)).unwrap(); // 16-bit destination
        a.jmp(word_ptr(ebx)).unwrap(); // 16-bit target
        a.ret_1(8).unwrap(); // ret imm16
        a.adc(eax, ecx).unwrap(); // not in the group
        let bytes = a.assemble(u64::from(CODE)).unwrap();
        let mut d = Decoder::with_ip(32, &bytes, u64::from(CODE), DecoderOptions::NONE);
        for ins in d.iter() {
            assert!(form(&ins).is_none(), "{ins}");
        }
    }
}
