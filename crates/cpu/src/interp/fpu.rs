//! The interpreter's x87 and MMX instructions: run on the host FPU.

use iced_x86::{Mnemonic as M, OpKind, Register};

use super::Interp;
use super::{Ctx, Flow, Res, ea, get_reg, invalid, set_arith, set_reg};
use crate::FaultKind;
use crate::isa::{self, Support, Writes};
use crate::state::flags::{CF, PF, ZF};

impl Interp {
    pub(super) fn exec_fpu(&mut self, c: &mut Ctx<'_>, _class: Support) -> Res<Flow> {
        let ins = c.ins;
        self.stats.fpu_instructions += 1;
        crate::x87::fpu_from_host(c.cpu);
        // The non-waiting control instructions do not check for pending exceptions.
        let no_wait = matches!(ins.mnemonic(), M::Fninit | M::Fnclex | M::Fnstcw | M::Fnstsw | M::Fnstenv | M::Fnsave);
        if !no_wait && c.cpu.fpu.pending_exception() {
            return Err(c.fault(FaultKind::Fpu));
        }
        match ins.code() {
            iced_x86::Code::Fnstsw_AX | iced_x86::Code::Fstsw_AX => {
                let sw = u32::from(c.cpu.fpu.fsw());
                set_reg(c.cpu, Register::AX, sw);
                return Ok(Flow::Next);
            }
            iced_x86::Code::Movd_mm_rm32 | iced_x86::Code::Movd_rm32_mm
                if ins.op_kind(0) == OpKind::Register && ins.op_kind(1) == OpKind::Register =>
            {
                let gpr_in =
                    if ins.code() == iced_x86::Code::Movd_mm_rm32 { get_reg(c.cpu, ins.op1_register()) } else { 0 };
                let out = self
                    .fpu
                    .exec_movd(ins, gpr_in, &mut c.cpu.fpu, &mut c.cpu.eflags)
                    .map_err(|_| invalid(c.mem, ins, c.delta))?;
                if ins.code() == iced_x86::Code::Movd_rm32_mm {
                    set_reg(c.cpu, ins.op0_register(), out);
                }
                return Ok(Flow::Next);
            }
            _ => {}
        }
        let mut host = std::ptr::null_mut();
        if ins.op_kinds().any(|k| k == OpKind::Memory) {
            let a = ea(c.cpu, ins);
            let size = ins.memory_size().size() as u32;
            match isa::entry(ins.code()).writes {
                Writes::MemOperand | Writes::Always => {
                    c.mem
                        .check_read(a, size)
                        .or_else(|e| if e.kind == morph_mem::MemFaultKind::Unmapped { Err(e) } else { Ok(()) })
                        .map_err(c.pf())?;
                    c.mem.prepare_write(a, size).map_err(c.pf())?;
                }
                _ => c.mem.check_read(a, size).map_err(c.pf())?,
            }
            host = c.mem.host_ptr(a);
        }
        let mut fl = c.cpu.eflags;
        // SAFETY: `host` is null or the host address of the memory operand, whose whole
        // range was checked (and prepared for writing) against the guest page table.
        unsafe { self.fpu.exec(ins, host, &mut c.cpu.fpu, &mut fl) }.map_err(|_| invalid(c.mem, ins, c.delta))?;
        if matches!(ins.mnemonic(), M::Fcomi | M::Fcomip | M::Fucomi | M::Fucomip) {
            set_arith(c.cpu, fl & (ZF | PF | CF));
        }
        Ok(Flow::Next)
    }
}
