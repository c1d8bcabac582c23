//! The interpreter's segment instructions: the far-pointer loads, `arpl`, the descriptor
//! checks `lar`, `lsl`, `verr` and `verw` (against the GDT Linux gives a user process,
//! [`Cpu::descriptor`](crate::Cpu::descriptor)), and the stores of descriptor-table
//! registers, `sgdt`, `sidt`, `sldt`, `str` and `smsw`, which a CPU with UMIP refuses in
//! user mode and Linux emulates with fixed values.

use iced_x86::{Mnemonic as M, OpKind, Register};
use morph_mem::{MemFault, MemFaultKind};

use super::{Ctx, Flow, Res, ea, op_bits, read_sized, reg_index, set_reg};
use crate::FaultKind;
use crate::state::flags::ZF;
use crate::state::seg;

/// What Linux's UMIP emulation stores for `sgdt` and `sidt`: a limit of 0 and these
/// bases (the low 32 bits of `UMIP_DUMMY_GDT_BASE` and `UMIP_DUMMY_IDT_BASE`).
const UMIP_GDT_BASE: u32 = 0xfffe_0000;
const UMIP_IDT_BASE: u32 = 0xffff_0000;
/// ... for `smsw`: CR0 with PE, MP, ET, NE, WP, AM and PG.
const UMIP_CR0: u32 = 0x8005_0033;
/// ... for `str`: the TSS's selector in a 64-bit kernel's GDT (entry 8). `sldt`: 0.
const UMIP_TR: u32 = 0x40;

/// The segment instructions.
pub(super) fn segment(c: &mut Ctx<'_>) -> Res<Flow> {
    let ins = c.ins;
    let m = ins.mnemonic();
    let set_zf = |c: &mut Ctx<'_>, on: bool| c.cpu.eflags = (c.cpu.eflags & !ZF) | if on { ZF } else { 0 };
    match m {
        M::Lds | M::Les | M::Lfs | M::Lgs | M::Lss => {
            // `m16:16` or `m16:32`: the offset, then the selector; the register is
            // written only once the segment is loaded.
            let bits = op_bits(ins, 0);
            let a = ea(c.cpu, ins);
            let offset = read_sized(c.mem, a, bits).map_err(c.pf())?;
            let selector = c.mem.read_u16(a.wrapping_add(bits / 8)).map_err(c.pf())?;
            let s = match m {
                M::Lds => seg::DS,
                M::Les => seg::ES,
                M::Lfs => seg::FS,
                M::Lgs => seg::GS,
                _ => seg::SS,
            };
            if !c.cpu.load_segment(s, selector) {
                return Err(c.fault(FaultKind::GeneralProtection(selector & 0xfffc)));
            }
            set_reg(c.cpu, ins.op0_register(), offset);
        }
        M::Arpl => {
            // Raises the destination selector's RPL to the source's. It reads its
            // destination first and writes it only if the RPL rises: a destination in
            // a segment that refuses writes (through CS) faults on the read's page, or
            // with `#GP(0)` only when the write is needed (measured; the up-front
            // segment check, `interp::segment_refused`, counts the operand as read).
            let (d, s) = (c.read(0, 16)?, c.read(1, 16)?);
            let raise = d & 3 < s & 3;
            if raise {
                if ins.op0_kind() == OpKind::Memory
                    && !c.cpu.segment_usable(reg_index(ins.memory_segment(), Register::ES), true)
                {
                    return Err(c.fault(FaultKind::GeneralProtection(0)));
                }
                c.write(0, 16, (d & !3) | (s & 3))?;
            }
            set_zf(c, raise);
        }
        M::Lar | M::Lsl => {
            let selector = c.read(1, 16)? as u16;
            match c.cpu.descriptor(selector).filter(|d| d.is_segment()) {
                Some(d) => {
                    let v = if m == M::Lar { d.rights() } else { d.byte_limit() };
                    c.write(0, op_bits(ins, 0), v)?;
                    set_zf(c, true);
                }
                None => set_zf(c, false),
            }
        }
        M::Verr | M::Verw => {
            let selector = c.read(0, 16)? as u16;
            let d = c.cpu.descriptor(selector);
            set_zf(c, d.is_some_and(|d| if m == M::Verr { d.readable() } else { d.writable() }));
        }
        M::Sgdt | M::Sidt => {
            let base = if m == M::Sgdt { UMIP_GDT_BASE } else { UMIP_IDT_BASE };
            let mut image = [0u8; 6];
            image[2..].copy_from_slice(&base.to_le_bytes());
            umip_store(c, &image)?;
        }
        M::Smsw | M::Sldt | M::Str => {
            let v = match m {
                M::Smsw => UMIP_CR0,
                M::Sldt => 0,
                _ => UMIP_TR,
            };
            if ins.op0_kind() == OpKind::Register {
                // A register gets the operand size's bytes.
                set_reg(c.cpu, ins.op0_register(), v);
            } else {
                umip_store(c, &(v as u16).to_le_bytes())?;
            }
        }
        _ => return Err(super::invalid(c.mem, ins, c.delta)),
    }
    Ok(Flow::Next)
}

/// Stores `bytes` at the memory operand as Linux's UMIP emulation does (`copy_to_user`):
/// the bytes up to the first that cannot be written, and then `SIGSEGV` (`SEGV_MAPERR`)
/// for a write at the operand's address, whatever the page held.
fn umip_store(c: &mut Ctx<'_>, bytes: &[u8]) -> Res<()> {
    let a = ea(c.cpu, c.ins);
    for (i, &b) in bytes.iter().enumerate() {
        if c.mem.write_u8(a.wrapping_add(i as u32), b).is_err() {
            return Err(c.fault(FaultKind::Page(MemFault { addr: a, write: true, kind: MemFaultKind::Unmapped })));
        }
    }
    Ok(())
}
