//! The interpreter's x87, MMX and SSE instructions: run on the host FPU.

use iced_x86::{Mnemonic as M, OpKind, Register};

use super::Interp;
use super::{Ctx, Flow, MAX_INSN_LEN, Res, ea, get_reg, invalid, seg_base, set_arith, set_reg};
use crate::FaultKind;
use crate::isa::{self, Support, Writes};
use crate::state::flags::{CF, PF, ZF};
use crate::x87::FipEffect;

impl Interp {
    pub(super) fn exec_fpu(&mut self, c: &mut Ctx<'_>, class: Support) -> Res<Flow> {
        let ins = c.ins;
        self.stats.fpu_instructions += 1;
        crate::x87::fpu_from_host(c.cpu);
        if class == Support::Sse {
            return self.exec_sse(c);
        }
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
            _ => {}
        }
        let mut host = std::ptr::null_mut();
        let mut at = 0;
        if ins.op_kinds().any(|k| k == OpKind::Memory) {
            at = ea(c.cpu, ins);
            host = operand_ptr(c, at, ins.memory_size().size() as u32)?;
        }
        let before = (c.cpu.fpu.fip(), c.cpu.fpu.fdp(), c.cpu.fpu.fop());
        let fds = c.cpu.fpu.fds();
        let mut fl = c.cpu.eflags;
        // SAFETY: `host` is null or the host address of the memory operand, whose whole
        // range was checked (and prepared for writing) against the guest page table.
        let done = unsafe { self.on_host(c, host, &mut fl) };
        done.map_err(|_| invalid(c.mem, ins, c.delta))?.commit(c);
        if matches!(ins.mnemonic(), M::Fcomi | M::Fcomip | M::Fucomi | M::Fucomip) {
            set_arith(c.cpu, fl & (ZF | PF | CF));
        }
        self.x87_pointers(c, before, fds, at)?;
        Ok(Flow::Next)
    }

    /// The x87 instruction and data pointers after `c`'s instruction, which ran on the
    /// host FPU (whose own are the stub's addresses and the opcode of the stub's
    /// encoding), from what they were (`before`: FIP, FDP, FOP): FIP the instruction's
    /// guest address if it is not a control instruction, else what it was, 0 after
    /// `fninit` and `fnsave`, and what the image read says after `fldenv` and `frstor`
    /// (FDP and FOP alike). FDP and FOP, which hosts update for every instruction or
    /// only for one that raised an unmasked exception, are the operand's guest address
    /// (`at`) and the guest's opcode where the host changed them. MMX instructions leave
    /// them. An environment `fnstenv` or `fnsave` stored gets the guest's pointers: FIP,
    /// the code selector with FOP, FDP and the data selector (see [`env_selectors`]).
    fn x87_pointers(&mut self, c: &mut Ctx<'_>, before: (u32, u32, u16), fds: u16, at: u32) -> Res<()> {
        let (fip, fdp, fop) = before;
        let ins = c.ins;
        // Where an environment keeps FIP, its selector (with FOP, in the 32-bit form),
        // FDP and its selector: the 32-bit protected-mode form, or the 16-bit one.
        let short = matches!(ins.memory_size(), iced_x86::MemorySize::FpuEnv14 | iced_x86::MemorySize::FpuState94);
        let (n, fip_at, cs_at, dp_at, ds_at) = if short { (2, 6, 8, 10, 12) } else { (4, 12, 16, 20, 24) };
        if matches!(ins.mnemonic(), M::Fnstenv | M::Fstenv | M::Fnsave | M::Fsave) {
            let a = ea(c.cpu, ins);
            let (cs, ds) = env_selectors(c.cpu, fip, fdp, fds);
            let cs_fop = if short { cs } else { cs | u32::from(fop & 0x7ff) << 16 };
            for (off, v, len) in [(fip_at, fip, n), (cs_at, cs_fop, n), (dp_at, fdp, n), (ds_at, ds, 2)] {
                c.mem.write_bytes(a.wrapping_add(off), &v.to_le_bytes()[..len]).map_err(c.pf())?;
            }
        }
        let read_env = |c: &mut Ctx<'_>, off: u32| -> Res<u32> {
            let mut b = [0u8; 4];
            c.mem.read_bytes(ea(c.cpu, ins).wrapping_add(off), &mut b[..n]).map_err(c.pf())?;
            Ok(u32::from_le_bytes(b))
        };
        let effect = crate::x87::fip_effect(ins);
        let (now, dp) = match effect {
            FipEffect::Keep => (fip, fdp),
            FipEffect::Clear => (0, 0),
            FipEffect::Here => {
                // FDP is the operand's offset (its segment is FDS), where the host updated
                // it (every x87 memory operand, on the hosts measured); a host whose
                // `fxsave` hides it does (AMD's).
                let memory = ins.op_kinds().any(|k| k == OpKind::Memory);
                let updated = c.cpu.fpu.fdp() != fdp || crate::state::host_fxsave_hides_pointers();
                let offset = at.wrapping_sub(seg_base(c.cpu, ins.memory_segment()));
                let dp = if memory && updated { offset } else { fdp };
                // ... and FDS the selector of the operand's segment (0 for DS, as
                // translated code keeps it: `env_selectors` gives DS's).
                let segment = ins.memory_segment();
                let sel = if segment == iced_x86::Register::DS {
                    0
                } else {
                    c.cpu.sel[(segment as usize).wrapping_sub(iced_x86::Register::ES as usize) % 6]
                };
                c.cpu.fpu.set_fds(if memory && updated { sel } else { fds });
                (ins.ip32().wrapping_add(c.delta), dp)
            }
            FipEffect::Load => (read_env(c, fip_at)?, read_env(c, dp_at)?),
        };
        match effect {
            FipEffect::Here => {}
            FipEffect::Clear => c.cpu.fpu.set_fds(0),
            _ => c.cpu.fpu.set_fds(fds),
        }
        c.cpu.fpu.set_fip(now);
        c.cpu.fpu.set_fdp(dp);
        match effect {
            FipEffect::Clear => c.cpu.fpu.set_fop(0),
            // The 16-bit form has no FOP.
            FipEffect::Load => {
                let loaded = if short { 0 } else { (read_env(c, cs_at)? >> 16) as u16 & 0x7ff };
                c.cpu.fpu.set_fop(loaded);
            }
            FipEffect::Here if crate::state::host_fop_always() || c.cpu.fpu.fop() != fop => {
                let mut bytes = [0u8; MAX_INSN_LEN as usize];
                let n = ins.len().min(bytes.len());
                c.mem.read_bytes(ins.ip32().wrapping_add(c.delta), &mut bytes[..n]).map_err(c.pf())?;
                c.cpu.fpu.set_fop(crate::state::x87_opcode(&bytes[..n]).unwrap_or(fop));
            }
            _ => c.cpu.fpu.set_fop(fop),
        }
        Ok(())
    }

    /// Runs `c`'s instruction on the host FPU (`HostFpu::exec`) with its memory operand
    /// at `host`, a 32-bit general register operand (`movd`, `cvtsi2sd`, `pmovmskb`...)
    /// through the stub's r9d; what that register gets is kept in the result until
    /// [`GprOut::commit`] (an instruction that faults leaves it as it was).
    ///
    /// # Safety
    /// As `HostFpu::exec`: `host` is null or valid for the operand.
    unsafe fn on_host(
        &mut self,
        c: &mut Ctx<'_>,
        host: *mut u8,
        fl: &mut u32,
    ) -> Result<GprOut, crate::x87::StubError> {
        let ins = c.ins;
        let gpr = (0..ins.op_count()).find(|&i| ins.op_kind(i) == OpKind::Register && ins.op_register(i).is_gpr32());
        let mut value = gpr.map_or(0, |i| u64::from(get_reg(c.cpu, ins.op_register(i))));
        // SAFETY: as the caller's.
        unsafe { self.fpu.exec(ins, host, gpr.map(|i| (i, &mut value)), &mut c.cpu.fpu, fl) }?;
        Ok(GprOut { to: (gpr == Some(0)).then(|| ins.op0_register()), value: value as u32 })
    }
}

/// What an instruction run on the host FPU left in a general register it writes (its
/// first operand), not written back yet.
struct GprOut {
    to: Option<Register>,
    value: u32,
}

impl GprOut {
    fn commit(self, c: &mut Ctx<'_>) {
        if let Some(r) = self.to {
            set_reg(c.cpu, r, self.value);
        }
    }
}

/// The host address of the `size`-byte memory operand at `a` of the instruction `c`
/// runs on the host FPU, once the guest may make the access: read, or (if the form
/// writes memory) written, which also gives a copy-on-write page its own frame. An
/// operand that is mapped but not readable is still written by a store (the page's
/// protection is checked by the write).
fn operand_ptr(c: &mut Ctx<'_>, a: u32, size: u32) -> Res<*mut u8> {
    match isa::entry(c.ins.code()).writes {
        Writes::MemOperand | Writes::Always => {
            // A store to an unmapped page faults as a write (the check is a read).
            c.mem
                .check_read(a, size)
                .or_else(|e| {
                    if e.kind == morph_mem::MemFaultKind::Unmapped {
                        Err(morph_mem::MemFault { write: true, ..e })
                    } else {
                        Ok(())
                    }
                })
                .map_err(c.pf())?;
            c.mem.prepare_write(a, size).map_err(c.pf())?;
        }
        _ => c.mem.check_read(a, size).map_err(c.pf())?,
    }
    Ok(c.mem.host_ptr(a))
}

/// The bytes of the FXSAVE image a 32-bit `fxsave` writes and `fxrstor` reads: up to
/// the end of XMM7 (the host's 64-bit ones also hold XMM8–15, which are morph's).
const FXSAVE_32: usize = 288;

/// The MXCSR exception flags (bits 0–5); their masks are the bits 7–12.
const MXCSR_FLAGS: u32 = 0x3f;
const MXCSR_MASKS: u32 = 0x3f << 7;
/// The exceptions found before computing: invalid operation, denormal operand, divide
/// by zero.
const MXCSR_PRE: u32 = 0x7;

impl Interp {
    /// An SSE instruction (the model has SSE): `ldmxcsr`, `stmxcsr`, `fxsave` and
    /// `fxrstor` on the guest's FXSAVE image here, the others on the host FPU. What the
    /// host would fault on is checked first and raised as the guest's fault: a 16-byte
    /// memory operand not 16-byte aligned (`#GP(0)`, but for the unaligned moves), an
    /// MXCSR with reserved bits set (`#GP(0)`), and an exception MXCSR does not mask
    /// (`#XM`: the instruction runs with every exception masked and its flags cleared,
    /// and if it raised an unmasked one, nothing it wrote is kept and MXCSR gets the
    /// flags it raised).
    fn exec_sse(&mut self, c: &mut Ctx<'_>) -> Res<Flow> {
        let ins = c.ins;
        let gp = |c: &Ctx<'_>| c.fault(FaultKind::GeneralProtection(0));
        match ins.mnemonic() {
            M::Stmxcsr => {
                let a = ea(c.cpu, ins);
                c.mem.write_u32(a, c.cpu.fpu.mxcsr()).map_err(c.pf())?;
                return Ok(Flow::Next);
            }
            M::Ldmxcsr => {
                let a = ea(c.cpu, ins);
                let v = c.mem.read_u32(a).map_err(c.pf())?;
                if v & !crate::x87::mxcsr_feature_mask() != 0 {
                    return Err(gp(c));
                }
                c.cpu.fpu.set_mxcsr(v);
                return Ok(Flow::Next);
            }
            M::Fxsave => {
                let a = ea(c.cpu, ins);
                if !a.is_multiple_of(16) {
                    return Err(gp(c));
                }
                // The legacy image up to XMM7 (a 32-bit `fxsave` leaves bytes 288-511 as
                // they were), with MXCSR_MASK the host's, which its own `fxsave` stores.
                let mut image = c.cpu.fpu.0;
                image[28..32].copy_from_slice(&crate::x87::mxcsr_feature_mask().to_le_bytes());
                // A host whose `fxsave` hides the x87 pointers unless an exception is
                // pending (AMD's) stores FOP, FIP and FDP zero: so does the guest's.
                if crate::state::host_fxsave_hides_pointers() && image[2] & 0x80 == 0 {
                    image[6..12].fill(0);
                    image[16..20].fill(0);
                }
                c.mem.prepare_write(a, 512).map_err(c.pf())?; // the whole area must be writable
                c.mem.write_bytes(a, &image[..FXSAVE_32]).map_err(c.pf())?;
                return Ok(Flow::Next);
            }
            M::Fxrstor => {
                let a = ea(c.cpu, ins);
                if !a.is_multiple_of(16) {
                    return Err(gp(c));
                }
                let mut image = [0u8; 512];
                c.mem.read_bytes(a, &mut image).map_err(c.pf())?;
                let mxcsr = u32::from_le_bytes([image[24], image[25], image[26], image[27]]);
                if mxcsr & !crate::x87::mxcsr_feature_mask() != 0 {
                    return Err(gp(c));
                }
                c.cpu.fpu.0[..FXSAVE_32].copy_from_slice(&image[..FXSAVE_32]);
                return Ok(Flow::Next);
            }
            _ => {}
        }
        // The memory operand, or the implicit `[edi]` of the masked moves.
        let implicit = matches!(ins.op0_kind(), OpKind::MemorySegEDI | OpKind::MemorySegDI);
        let mut host = std::ptr::null_mut();
        if implicit || ins.op_kinds().any(|k| k == OpKind::Memory) {
            let (a, size) = if implicit {
                let di = if ins.op0_kind() == OpKind::MemorySegDI {
                    get_reg(c.cpu, Register::DI)
                } else {
                    get_reg(c.cpu, Register::EDI)
                };
                let size = if ins.mnemonic() == M::Maskmovq { 8 } else { 16 };
                (di.wrapping_add(super::seg_base(c.cpu, ins.memory_segment())), size)
            } else {
                (ea(c.cpu, ins), ins.memory_size().size() as u32)
            };
            let unaligned_ok = matches!(ins.mnemonic(), M::Movups | M::Movupd | M::Movdqu | M::Maskmovdqu);
            if size == 16 && !unaligned_ok && !a.is_multiple_of(16) {
                return Err(gp(c));
            }
            host = operand_ptr(c, a, size).inspect_err(|_| maskmovq_fault(c.cpu, ins))?;
        }
        let mxcsr = c.cpu.fpu.mxcsr();
        let unmasked = !(mxcsr >> 7) & MXCSR_FLAGS;
        // Run with every exception masked and no flag set, so that what it raises shows.
        let before = (unmasked != 0).then(|| c.cpu.fpu.clone());
        if unmasked != 0 {
            c.cpu.fpu.set_mxcsr((mxcsr | MXCSR_MASKS) & !MXCSR_FLAGS);
        }
        let mut fl = c.cpu.eflags;
        // The x87 pointers (FOP, FIP, FCS, FDP, FDS), which no SSE instruction changes and
        // the stub's `fxsave` would make the host's (0 on AMD's, the stub's on Intel's).
        let pointers: [u8; 18] = c.cpu.fpu.0[6..24].try_into().unwrap_or([0; 18]);
        // SAFETY: `host` is null or the host address of the memory operand, whose whole
        // range was checked (and prepared for writing) against the guest page table.
        let r = unsafe { self.on_host(c, host, &mut fl) };
        c.cpu.fpu.0[6..24].copy_from_slice(&pointers);
        if let Some(before) = before {
            let raised = c.cpu.fpu.mxcsr() & MXCSR_FLAGS;
            if r.is_ok() && raised & unmasked != 0 {
                // No SSE instruction that can raise one writes memory: the destination
                // is a register, left as it was. An unmasked pre-computation exception
                // (invalid, denormal, divide by zero: in any element) stops the
                // instruction before it computes, so the post-computation flags the
                // masked run raised (overflow, underflow, precision, of the other
                // elements) are not the hardware's (Intel SDM vol. 1, 11.5.2.1).
                let raised = if raised & unmasked & MXCSR_PRE != 0 { raised & MXCSR_PRE } else { raised };
                c.cpu.fpu = before;
                c.cpu.fpu.set_mxcsr(mxcsr | raised);
                return Err(c.fault(FaultKind::SimdFp));
            }
            let after = c.cpu.fpu.mxcsr();
            c.cpu.fpu.set_mxcsr(
                (after & !(MXCSR_MASKS | MXCSR_FLAGS)) | (mxcsr & MXCSR_MASKS) | (mxcsr | raised) & MXCSR_FLAGS,
            );
        }
        r.map_err(|_| invalid(c.mem, ins, c.delta))?.commit(c);
        if matches!(ins.mnemonic(), M::Comiss | M::Comisd | M::Ucomiss | M::Ucomisd) {
            set_arith(c.cpu, fl & (ZF | PF | CF));
        }
        Ok(Flow::Next)
    }
}

/// Before `maskmovq` (`ins`, any other instruction is left alone) faults on its `[edi]`
/// or its segment: on an AMD host the instruction has entered MMX state by then (TOP 0,
/// every register tagged valid), as the host's does (measured: the tag word after the
/// fault); elsewhere nothing, the fault coming first.
pub(crate) fn maskmovq_fault(cpu: &mut crate::Cpu, ins: &iced_x86::Instruction) {
    if ins.mnemonic() != M::Maskmovq || !crate::host::amd_like() {
        return;
    }
    crate::x87::fpu_from_host(cpu);
    let fsw = cpu.fpu.fsw() & !(7 << 11);
    cpu.fpu.0[2..4].copy_from_slice(&fsw.to_le_bytes());
    cpu.fpu.0[4] = 0xff; // FXSAVE's abridged tag byte: all valid
}

/// The code and data selectors an x87 environment stores with FIP and FDP (`fip`,
/// `fdp`): the hardware keeps the selectors of the last non-control instruction and of
/// its memory operand. morph gives the process's CS where FIP is set, and the selector
/// of the last memory operand's segment (`fds`, which the interpreter keeps; translated
/// code leaves x87 operands with a segment override to it) or else the process's DS
/// where FDP is set; 0 where they are clear (after `fninit`). Selectors an image loaded
/// are not kept. On a host that no longer keeps them
/// ([`crate::host::fcs_fds_deprecated`]), 0, as its own `fnstenv` stores.
pub(crate) fn env_selectors(cpu: &crate::Cpu, fip: u32, fdp: u32, fds: u16) -> (u32, u32) {
    use crate::state::seg;
    let deprecated = crate::host::fcs_fds_deprecated();
    let cs = if fip != 0 && !deprecated { u32::from(cpu.sel[seg::CS]) } else { 0 };
    let ds = if fdp == 0 || deprecated {
        0
    } else if fds != 0 {
        u32::from(fds)
    } else {
        u32::from(cpu.sel[seg::DS])
    };
    (cs, ds)
}
