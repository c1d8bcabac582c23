//! What every instruction of the interpreter uses: its context (registers, memory,
//! the instruction), operand access, conditions and flags.

use iced_x86::{ConditionCode, Instruction, Mnemonic as M, OpKind, Register};
use morph_mem::{AddressSpace, MemFault, MemFaultKind};

use super::Exit;
use super::Fault;
use crate::FaultKind;
use crate::alu::{self, mask};
use crate::state::flags::{ARITH, CF, OF, PF, SF, ZF};
use crate::state::{Cpu, reg, seg};

pub(super) type Res<T> = Result<T, Exit>;

pub(super) fn page_fault(eip: u32) -> impl Fn(MemFault) -> Exit {
    move |f| Exit::Fault(Fault { kind: FaultKind::Page(f), eip })
}

/// An access of `ins` past the 4 GiB limit (`MemFaultKind::Limit`) as the exception it
/// raises, `cpu` as the instruction found it: `#SS(0)` if it went through SS — the
/// memory operand's access if that is SS-based (EBP or ESP, or an `ss:` override),
/// another access of an instruction that moves ESP (a push's, a pop's, a call's or a
/// return's slot) — else `#GP(0)`. Other faults as they are. Asked where `exec_slow`
/// returns (the pre-decoded forms run such an instruction again through it), so that
/// no access pays for it.
pub(super) fn limit_fault(cpu: &Cpu, ins: &Instruction, f: FaultKind) -> FaultKind {
    let FaultKind::Page(m) = f else { return f };
    if m.kind != MemFaultKind::Limit {
        return f;
    }
    let operand = (0..ins.op_count()).any(|i| ins.op_kind(i) == OpKind::Memory);
    let stack = if operand && ea(cpu, ins) == m.addr {
        ins.memory_segment() == Register::SS
    } else {
        crate::isa::moves_esp(ins)
    };
    if stack { FaultKind::StackSegment } else { FaultKind::GeneralProtection(0) }
}

pub(super) fn fault(kind: FaultKind, eip: u32) -> Exit {
    Exit::Fault(Fault { kind, eip })
}

// ----- registers -------------------------------------------------------------------

#[inline]
pub(super) fn reg_index(r: Register, base: Register) -> usize {
    (r as usize).wrapping_sub(base as usize)
}

/// Reads a general-purpose or segment register.
#[inline]
pub(super) fn get_reg(cpu: &Cpu, r: Register) -> u32 {
    let i = reg_index(r, Register::EAX);
    if i < 8 {
        return cpu.gpr[i];
    }
    let i = reg_index(r, Register::AX);
    if i < 8 {
        return cpu.gpr[i] & 0xffff;
    }
    let i = reg_index(r, Register::AL);
    if i < 4 {
        return cpu.gpr[i] & 0xff;
    }
    if i < 8 {
        return (cpu.gpr[i - 4] >> 8) & 0xff;
    }
    let i = reg_index(r, Register::ES);
    if i < 6 {
        return u32::from(cpu.sel[i]);
    }
    0
}

/// Writes a general-purpose register (8-, 16- or 32-bit), preserving the other bits.
#[inline]
pub(super) fn set_reg(cpu: &mut Cpu, r: Register, v: u32) {
    let i = reg_index(r, Register::EAX);
    if i < 8 {
        cpu.gpr[i] = v;
        return;
    }
    let i = reg_index(r, Register::AX);
    if i < 8 {
        cpu.gpr[i] = (cpu.gpr[i] & 0xffff_0000) | (v & 0xffff);
        return;
    }
    let i = reg_index(r, Register::AL);
    if i < 4 {
        cpu.gpr[i] = (cpu.gpr[i] & !0xff) | (v & 0xff);
    } else if i < 8 {
        cpu.gpr[i - 4] = (cpu.gpr[i - 4] & !0xff00) | ((v & 0xff) << 8);
    }
}

pub(super) fn reg_bits(r: Register) -> u32 {
    (r.size() * 8) as u32
}

pub(super) fn cond(eflags: u32, cc: ConditionCode) -> bool {
    let f = |b: u32| eflags & b != 0;
    match cc {
        ConditionCode::o => f(OF),
        ConditionCode::no => !f(OF),
        ConditionCode::b => f(CF),
        ConditionCode::ae => !f(CF),
        ConditionCode::e => f(ZF),
        ConditionCode::ne => !f(ZF),
        ConditionCode::be => f(CF) || f(ZF),
        ConditionCode::a => !f(CF) && !f(ZF),
        ConditionCode::s => f(SF),
        ConditionCode::ns => !f(SF),
        ConditionCode::p => f(PF),
        ConditionCode::np => !f(PF),
        ConditionCode::l => f(SF) != f(OF),
        ConditionCode::ge => f(SF) == f(OF),
        ConditionCode::le => f(ZF) || f(SF) != f(OF),
        ConditionCode::g => !f(ZF) && f(SF) == f(OF),
        ConditionCode::None => true,
    }
}

pub(super) fn set_arith(cpu: &mut Cpu, f: u32) {
    cpu.eflags = (cpu.eflags & !ARITH) | (f & ARITH);
}

/// The effective (linear) address of the memory operand, segment base included.
#[inline]
pub(super) fn ea(cpu: &Cpu, ins: &Instruction) -> u32 {
    let base = ins.memory_base();
    let index = ins.memory_index();
    let mut a = ins.memory_displacement32();
    if base.size() == 2 || index.size() == 2 {
        // 16-bit addressing (0x67 prefix): the offset wraps at 64 KiB.
        let mut o = a;
        if base != Register::None {
            o = o.wrapping_add(get_reg(cpu, base));
        }
        if index != Register::None {
            o = o.wrapping_add(get_reg(cpu, index));
        }
        a = o & 0xffff;
    } else {
        if base != Register::None {
            a = a.wrapping_add(get_reg(cpu, base));
        }
        if index != Register::None {
            a = a.wrapping_add(get_reg(cpu, index).wrapping_mul(ins.memory_index_scale()));
        }
    }
    a.wrapping_add(seg_base(cpu, ins.memory_segment()))
}

#[inline]
pub(super) fn seg_base(cpu: &Cpu, s: Register) -> u32 {
    match s {
        Register::FS => cpu.seg_base[seg::FS],
        Register::GS => cpu.seg_base[seg::GS],
        // Flat (0) but where the process loaded a TLS segment (`lds`, `mov ds`...).
        Register::DS => cpu.seg_base[seg::DS],
        Register::ES => cpu.seg_base[seg::ES],
        _ => 0,
    }
}

pub(super) fn read_sized(mem: &AddressSpace, a: u32, bits: u32) -> Result<u32, MemFault> {
    match bits {
        8 => mem.read_u8(a).map(u32::from),
        16 => mem.read_u16(a).map(u32::from),
        _ => mem.read_u32(a),
    }
}

pub(super) fn write_sized(mem: &mut AddressSpace, a: u32, bits: u32, v: u32) -> Result<(), MemFault> {
    match bits {
        8 => mem.write_u8(a, v as u8),
        16 => mem.write_u16(a, v as u16),
        _ => mem.write_u32(a, v),
    }
}

/// Operand size in bits of operand `i`.
pub(super) fn op_bits(ins: &Instruction, i: u32) -> u32 {
    match ins.op_kind(i) {
        OpKind::Register => reg_bits(ins.op_register(i)),
        OpKind::Memory => (ins.memory_size().size() * 8) as u32,
        OpKind::Immediate8 => 8,
        OpKind::Immediate16 | OpKind::Immediate8to16 => 16,
        _ => 32,
    }
}

/// The execution context of one instruction.
pub(super) struct Ctx<'a> {
    pub(super) cpu: &'a mut Cpu,
    pub(super) mem: &'a mut AddressSpace,
    pub(super) ins: &'a Instruction,
    /// Where the instruction runs minus where it was decoded: decoded blocks are kept
    /// by physical address and run wherever they are mapped, so every address the
    /// instruction's own position implies (its EIP, the next EIP, a relative branch
    /// target) is the decoded one plus `delta`.
    pub(super) delta: u32,
}

impl Ctx<'_> {
    /// The instruction's address.
    pub(super) fn ip(&self) -> u32 {
        self.ins.ip32().wrapping_add(self.delta)
    }

    /// The address after the instruction.
    pub(super) fn next_ip(&self) -> u32 {
        self.ins.next_ip32().wrapping_add(self.delta)
    }

    /// The target of a relative branch.
    pub(super) fn target(&self) -> u32 {
        (self.ins.near_branch_target() as u32).wrapping_add(self.delta)
    }

    pub(super) fn pf(&self) -> impl Fn(MemFault) -> Exit + use<> {
        page_fault(self.ip())
    }

    pub(super) fn fault(&self, kind: FaultKind) -> Exit {
        fault(kind, self.ip())
    }

    pub(super) fn read(&self, i: u32, bits: u32) -> Res<u32> {
        match self.ins.op_kind(i) {
            OpKind::Register => Ok(get_reg(self.cpu, self.ins.op_register(i))),
            OpKind::Memory => read_sized(self.mem, ea(self.cpu, self.ins), bits).map_err(self.pf()),
            _ => Ok(self.ins.immediate(i) as u32 & mask(bits)),
        }
    }

    pub(super) fn write(&mut self, i: u32, bits: u32, v: u32) -> Res<()> {
        match self.ins.op_kind(i) {
            OpKind::Register => {
                set_reg(self.cpu, self.ins.op_register(i), v);
                Ok(())
            }
            _ => {
                let a = ea(self.cpu, self.ins);
                write_sized(self.mem, a, bits, v).map_err(self.pf())
            }
        }
    }

    pub(super) fn push(&mut self, bits: u32, v: u32) -> Res<()> {
        let sp = self.cpu.gpr[reg::ESP].wrapping_sub(bits / 8);
        write_sized(self.mem, sp, bits, v).map_err(self.pf())?;
        self.cpu.gpr[reg::ESP] = sp;
        Ok(())
    }

    /// Reads the top of the stack without popping.
    pub(super) fn peek(&self, bits: u32, offset: u32) -> Res<u32> {
        read_sized(self.mem, self.cpu.gpr[reg::ESP].wrapping_add(offset), bits).map_err(self.pf())
    }

    pub(super) fn pop(&mut self, bits: u32) -> Res<u32> {
        let v = self.peek(bits, 0)?;
        self.cpu.gpr[reg::ESP] = self.cpu.gpr[reg::ESP].wrapping_add(bits / 8);
        Ok(v)
    }
}

/// How control continues after an instruction.
pub(super) enum Flow {
    Next,
    Jump(u32),
}

pub(super) fn invalid(mem: &AddressSpace, ins: &Instruction, delta: u32) -> Exit {
    let ip = ins.ip32().wrapping_add(delta);
    // The instruction's bytes; for bytes the decoder found no instruction in (a VEX
    // prefix: no AVX without its tables, see `Cargo.toml`), the next eight, as far as
    // they can be read, so that a report shows what the guest tried.
    let n = if ins.is_invalid() { 8 } else { ins.len().max(1) };
    let bytes: Vec<u8> = (0..n as u32).map_while(|i| mem.read_u8(ip.wrapping_add(i)).ok()).collect();
    fault(FaultKind::InvalidOpcode(bytes), ip)
}

pub(super) fn alu_op(m: M, a: u32, b: u32, bits: u32, eflags: u32) -> (u32, u32) {
    let carry = eflags & CF != 0;
    match m {
        M::Add => alu::add(a, b, false, bits),
        M::Adc => alu::add(a, b, carry, bits),
        M::Sub | M::Cmp => alu::sub(a, b, false, bits),
        M::Sbb => alu::sub(a, b, carry, bits),
        M::And | M::Test => (a & b, alu::logic(a & b, bits)),
        M::Or => (a | b, alu::logic(a | b, bits)),
        _ => (a ^ b, alu::logic(a ^ b, bits)),
    }
}
