//! The interpreter's software interrupts, `bound`, `cpuid`, `rdtsc`, `fwait`, flag bits.

use iced_x86::Mnemonic as M;

use super::Exit;
use super::{Ctx, Flow, Res, ea, fault, invalid, op_bits};
use crate::FaultKind;
use crate::state::flags::{CF, DF, OF};
use crate::state::reg;

/// Software interrupts, `bound`, `cpuid`, `rdtsc`, `fwait`, flag bits, `ud`.
pub(super) fn misc(c: &mut Ctx<'_>) -> Res<Flow> {
    let ins = c.ins;
    let m = ins.mnemonic();
    match m {
        // `fwait` raises a pending unmasked x87 exception (#MF).
        M::Wait => {
            crate::x87::fpu_from_host(c.cpu);
            if c.cpu.fpu.pending_exception() {
                return Err(c.fault(FaultKind::Fpu));
            }
        }
        M::Clc => c.cpu.eflags &= !CF,
        M::Stc => c.cpu.eflags |= CF,
        M::Cmc => c.cpu.eflags ^= CF,
        M::Cld => c.cpu.eflags &= !DF,
        M::Std => c.cpu.eflags |= DF,
        M::Int => {
            // Linux's IDT lets user mode through the gates of 3 (int3), 4 (into) and 0x80
            // only; any other `int n` is #GP with the gate's IDT index as error code.
            let n = ins.immediate8();
            let trap = match n {
                0x80 => Exit::Syscall,
                3 => fault(FaultKind::Breakpoint, c.next_ip()),
                4 => fault(FaultKind::Overflow, c.next_ip()),
                _ => return Err(c.fault(FaultKind::GeneralProtection((u16::from(n) << 3) | 2))),
            };
            c.cpu.eip = c.next_ip();
            return Err(trap);
        }
        // `icebp`: a #DB trap, which Linux reports as a breakpoint.
        M::Int1 => {
            c.cpu.eip = c.next_ip();
            return Err(fault(FaultKind::Int1, c.next_ip()));
        }
        // `salc` (undocumented, in every IA-32 CPU): AL = CF ? 0xFF : 0, flags kept.
        M::Salc => {
            let al = if c.cpu.eflags & CF != 0 { 0xff } else { 0 };
            c.cpu.gpr[reg::EAX] = (c.cpu.gpr[reg::EAX] & !0xff) | al;
        }
        M::Int3 => {
            c.cpu.eip = c.next_ip();
            return Err(fault(FaultKind::Breakpoint, c.next_ip()));
        }
        M::Into => {
            if c.cpu.eflags & OF != 0 {
                c.cpu.eip = c.next_ip();
                return Err(fault(FaultKind::Overflow, c.next_ip()));
            }
        }
        M::Bound => {
            let bits = op_bits(ins, 0);
            let idx = c.read(0, bits)?;
            let a = ea(c.cpu, ins);
            let (lo, hi) = if bits == 16 {
                let lo = c.mem.read_u16(a).map_err(c.pf())? as i16 as i32;
                let hi = c.mem.read_u16(a.wrapping_add(2)).map_err(c.pf())? as i16 as i32;
                (lo, hi)
            } else {
                (c.mem.read_u32(a).map_err(c.pf())? as i32, c.mem.read_u32(a.wrapping_add(4)).map_err(c.pf())? as i32)
            };
            let i = if bits == 16 { idx as u16 as i16 as i32 } else { idx as i32 };
            if i < lo || i > hi {
                return Err(c.fault(FaultKind::Bound));
            }
        }
        M::Cpuid => {
            let r = crate::cpuid::cpuid(c.cpu.model, c.cpu.gpr[reg::EAX]);
            c.cpu.gpr[reg::EAX] = r[0];
            c.cpu.gpr[reg::EBX] = r[1];
            c.cpu.gpr[reg::ECX] = r[2];
            c.cpu.gpr[reg::EDX] = r[3];
        }
        M::Rdtsc => {
            // A virtual time stamp counter: one tick per retired guest instruction, so
            // runs are reproducible.
            let t = c.cpu.icount;
            c.cpu.gpr[reg::EAX] = t as u32;
            c.cpu.gpr[reg::EDX] = (t >> 32) as u32;
        }
        M::Ud0 | M::Ud1 | M::Ud2 => return Err(invalid(c.mem, ins, c.delta)),
        _ => return Err(invalid(c.mem, ins, c.delta)),
    }
    Ok(Flow::Next)
}
