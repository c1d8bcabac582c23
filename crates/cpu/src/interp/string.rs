//! The interpreter's string instructions.

use iced_x86::{Mnemonic as M, Register};

use super::{Ctx, Res, read_sized, seg_base, set_arith, set_reg, write_sized};
use crate::alu::{self, mask};
use crate::state::flags::{DF, ZF};
use crate::state::{Cpu, reg, seg};

/// `rep movs` / `rep stos` upwards over memory that is all accessible: done as one
/// host copy or fill (glibc's i686 `memcpy`/`memset` are these instructions). Returns
/// false, having changed nothing the guest can see, when the element loop must do it
/// (a fault to deliver at the right element, or a forward copy onto itself that a
/// block copy would not reproduce).
fn bulk(c: &mut Ctx<'_>, m: M, bits: u32, src_base: u32) -> bool {
    let size = bits / 8;
    let count = c.cpu.gpr[reg::ECX];
    let Some(len) = count.checked_mul(size).filter(|&l| l > 0 && l <= 1 << 30) else { return false };
    let edi = c.cpu.gpr[reg::EDI];
    if edi.checked_add(len).is_none() {
        return false;
    }
    match m {
        M::Stosb | M::Stosw | M::Stosd => {
            if c.mem.prepare_write(edi, len).is_err() {
                return false;
            }
            let v = c.cpu.gpr[reg::EAX].to_le_bytes();
            // SAFETY: prepare_write checked [edi, edi+len) and made it writable in our
            // window, which maps the guest range contiguously.
            let dst = unsafe { std::slice::from_raw_parts_mut(c.mem.host_ptr(edi), len as usize) };
            if size == 1 {
                dst.fill(v[0]);
            } else {
                for e in dst.chunks_exact_mut(size as usize) {
                    e.copy_from_slice(&v[..size as usize]);
                }
            }
        }
        M::Movsb | M::Movsw | M::Movsd => {
            let src = c.cpu.gpr[reg::ESI].wrapping_add(src_base);
            // Element by element, a destination just above the source repeats a
            // pattern; a block move would not.
            let overlap_up = edi > src && edi < src.wrapping_add(len);
            if src.checked_add(len).is_none()
                || overlap_up
                || c.mem.check_read(src, len).is_err()
                || c.mem.prepare_write(edi, len).is_err()
            {
                return false;
            }
            // SAFETY: both ranges were checked (the destination made writable) and lie
            // in our window; `copy` allows them to overlap (destination below source
            // behaves like the forward element loop).
            unsafe { std::ptr::copy(c.mem.host_ptr(src), c.mem.host_ptr(edi), len as usize) };
            c.cpu.gpr[reg::ESI] = c.cpu.gpr[reg::ESI].wrapping_add(len);
        }
        _ => return false,
    }
    c.cpu.gpr[reg::EDI] = edi.wrapping_add(len);
    c.cpu.gpr[reg::ECX] = 0;
    true
}

pub(super) fn string(c: &mut Ctx<'_>) -> Res<()> {
    let ins = c.ins;
    let m = ins.mnemonic();
    let bits = match m {
        M::Movsb | M::Stosb | M::Lodsb | M::Cmpsb | M::Scasb => 8,
        M::Movsw | M::Stosw | M::Lodsw | M::Cmpsw | M::Scasw => 16,
        _ => 32,
    };
    let step = if c.cpu.eflags & DF != 0 { (bits / 8u32).wrapping_neg() } else { bits / 8 };
    let rep = ins.has_rep_prefix() || ins.has_repe_prefix() || ins.has_repne_prefix();
    let compare = matches!(m, M::Cmpsb | M::Cmpsw | M::Cmpsd | M::Scasb | M::Scasw | M::Scasd);
    let src_base = seg_base(c.cpu, ins.memory_segment());
    // ES:[EDI]: ES has a base only where the process loaded a TLS segment into it.
    let es_base = c.cpu.seg_base[seg::ES];
    // The address-size prefix: SI, DI and CX instead of ESI, EDI and ECX (their upper
    // halves kept; the low halves wrap at 64 KiB).
    let a16 = crate::isa::string_a16(ins);
    let width = if a16 { 0xffff } else { u32::MAX };
    let get = |cpu: &Cpu, r: usize| cpu.gpr[r] & width;
    let set = |cpu: &mut Cpu, r: usize, v: u32| cpu.gpr[r] = (cpu.gpr[r] & !width) | (v & width);
    if !a16 && rep && c.cpu.eflags & DF == 0 && es_base == 0 && bulk(c, m, bits, src_base) {
        return Ok(());
    }
    // A compare that faults part way leaves the flags as they were before the
    // instruction, not those of the last element compared: what an Intel host's `repne
    // scas`/`cmps` leaves (its registers do point at the faulting element), and so what
    // translated code, which runs the host's, leaves. An AMD host's leave those of the
    // last element compared (`host::amd_like`).
    let flags_in = c.cpu.eflags;
    let mut run = || -> Res<()> {
        loop {
            if rep && get(c.cpu, reg::ECX) == 0 {
                break;
            }
            let esi = get(c.cpu, reg::ESI);
            let edi = get(c.cpu, reg::EDI);
            let dst = edi.wrapping_add(es_base);
            let pf = c.pf();
            match m {
                M::Movsb | M::Movsw | M::Movsd => {
                    let v = read_sized(c.mem, esi.wrapping_add(src_base), bits).map_err(&pf)?;
                    write_sized(c.mem, dst, bits, v).map_err(&pf)?;
                    set(c.cpu, reg::ESI, esi.wrapping_add(step));
                    set(c.cpu, reg::EDI, edi.wrapping_add(step));
                }
                M::Stosb | M::Stosw | M::Stosd => {
                    write_sized(c.mem, dst, bits, c.cpu.gpr[reg::EAX] & mask(bits)).map_err(&pf)?;
                    set(c.cpu, reg::EDI, edi.wrapping_add(step));
                }
                M::Lodsb | M::Lodsw | M::Lodsd => {
                    let v = read_sized(c.mem, esi.wrapping_add(src_base), bits).map_err(&pf)?;
                    let r = match bits {
                        8 => Register::AL,
                        16 => Register::AX,
                        _ => Register::EAX,
                    };
                    set_reg(c.cpu, r, v);
                    set(c.cpu, reg::ESI, esi.wrapping_add(step));
                }
                M::Cmpsb | M::Cmpsw | M::Cmpsd => {
                    // Which operand is read first shows in the address of a fault when
                    // both fault: AMD hosts read ES:[EDI] first (measured), Intel's
                    // pseudo-code the source.
                    let (a, b) = if crate::host::amd_like() {
                        let b = read_sized(c.mem, dst, bits).map_err(&pf)?;
                        (read_sized(c.mem, esi.wrapping_add(src_base), bits).map_err(&pf)?, b)
                    } else {
                        let a = read_sized(c.mem, esi.wrapping_add(src_base), bits).map_err(&pf)?;
                        (a, read_sized(c.mem, dst, bits).map_err(&pf)?)
                    };
                    set_arith(c.cpu, alu::sub(a, b, false, bits).1);
                    set(c.cpu, reg::ESI, esi.wrapping_add(step));
                    set(c.cpu, reg::EDI, edi.wrapping_add(step));
                }
                _ => {
                    let b = read_sized(c.mem, dst, bits).map_err(&pf)?;
                    set_arith(c.cpu, alu::sub(c.cpu.gpr[reg::EAX] & mask(bits), b, false, bits).1);
                    set(c.cpu, reg::EDI, edi.wrapping_add(step));
                }
            }
            if !rep {
                break;
            }
            let ecx = get(c.cpu, reg::ECX);
            set(c.cpu, reg::ECX, ecx.wrapping_sub(1));
            if compare {
                let zf = c.cpu.eflags & ZF != 0;
                if (ins.has_repe_prefix() && !zf) || (ins.has_repne_prefix() && zf) {
                    break;
                }
            }
        }
        Ok(())
    };
    let r = run();
    if r.is_err() && compare && !crate::host::amd_like() {
        set_arith(c.cpu, flags_in);
    }
    r
}
