//! The interpreter's stack instructions.

use iced_x86::{Code, Mnemonic as M, OpKind, Register};

use super::{Ctx, Flow, Res, invalid, op_bits, read_sized, reg_index, set_reg, write_sized};
use crate::FaultKind;
use crate::alu::mask;
use crate::state::flags::{AC, FIXED, IF, TF, USER_WRITABLE};
use crate::state::reg;

/// Pushes, pops, `enter`, `leave`.
pub(super) fn stack(c: &mut Ctx<'_>) -> Res<Flow> {
    let ins = c.ins;
    let m = ins.mnemonic();
    match m {
        M::Push => {
            let bits = if ins.op_kind(0) == OpKind::Register && ins.op0_register().is_segment_register() {
                if ins.stack_pointer_increment() == -2 { 16 } else { 32 }
            } else if ins.op_kind(0) == OpKind::Register || ins.op_kind(0) == OpKind::Memory {
                op_bits(ins, 0)
            } else {
                // push imm: the stack width is the operand size.
                if ins.stack_pointer_increment() == -2 { 16 } else { 32 }
            };
            let v = match ins.op_kind(0) {
                OpKind::Register | OpKind::Memory => c.read(0, bits)?,
                _ => ins.immediate(0) as u32 & mask(bits),
            };
            if bits == 32
                && ins.op_kind(0) == OpKind::Register
                && ins.op0_register().is_segment_register()
                && !crate::host::amd_like()
            {
                // P6 family: a selector pushed with a 32-bit operand size is stored with a
                // 16-bit move; the upper half of the stack slot keeps its bytes (AMD's
                // store it zero-extended, as `push` below: see `host::amd_like`).
                let sp = c.cpu.gpr[reg::ESP].wrapping_sub(4);
                write_sized(c.mem, sp, 16, v & 0xffff).map_err(c.pf())?;
                c.cpu.gpr[reg::ESP] = sp;
            } else {
                c.push(bits, v)?;
            }
        }
        M::Pop => {
            let k = ins.op_kind(0);
            if k == OpKind::Register && ins.op0_register().is_segment_register() {
                let bits = if ins.stack_pointer_increment() == 2 { 16 } else { 32 };
                let v = c.peek(bits, 0)?;
                let s = reg_index(ins.op0_register(), Register::ES);
                if !c.cpu.load_segment(s, v as u16) {
                    // The error code names the selector refused (0 for a null one).
                    return Err(c.fault(FaultKind::GeneralProtection(v as u16 & 0xfffc)));
                }
                c.cpu.gpr[reg::ESP] = c.cpu.gpr[reg::ESP].wrapping_add(bits / 8);
            } else {
                let bits = op_bits(ins, 0);
                let v = c.peek(bits, 0)?;
                let old = c.cpu.gpr[reg::ESP];
                // `pop m` computes its address with ESP already incremented.
                c.cpu.gpr[reg::ESP] = old.wrapping_add(bits / 8);
                if let Err(e) = c.write(0, bits, v) {
                    c.cpu.gpr[reg::ESP] = old;
                    return Err(e);
                }
            }
        }
        M::Pushad | M::Pusha => {
            let bits = if m == M::Pushad { 32 } else { 16 };
            let sp = c.cpu.gpr[reg::ESP];
            let n = bits / 8;
            let base = sp.wrapping_sub(8 * n);
            for i in 0..8u32 {
                let v = if i as usize == reg::ESP { sp } else { c.cpu.gpr[i as usize] };
                write_sized(c.mem, base.wrapping_add((7 - i) * n), bits, v & mask(bits)).map_err(c.pf())?;
            }
            c.cpu.gpr[reg::ESP] = base;
        }
        M::Popad | M::Popa => {
            let bits = if m == M::Popad { 32 } else { 16 };
            let n = bits / 8;
            let sp = c.cpu.gpr[reg::ESP];
            // Read from ESP up (EDI's slot first, ESP's read and dropped), as the hardware
            // does: a fault is at the first slot it cannot read (Intel's pseudo-code pops
            // EDI first too; the reads went downwards until a random-code run found it).
            // On AMD each register is written as its slot is read, so a fault leaves those
            // popped before it written and ESP as it was (measured, both operand sizes);
            // elsewhere the model writes none.
            let r = if bits == 32 { Register::EAX } else { Register::AX };
            let each = crate::host::amd_like();
            let mut vals = [0u32; 8];
            for j in 0..8 {
                let i = 7 - j; // EDI, ESI, EBP, ESP, EBX, EDX, ECX, EAX
                vals[i] = read_sized(c.mem, sp.wrapping_add(j as u32 * n), bits).map_err(c.pf())?;
                if each && i != reg::ESP {
                    set_reg(c.cpu, unsafe_reg(r, i), vals[i]);
                }
            }
            for (i, v) in vals.iter().enumerate() {
                if i != reg::ESP {
                    set_reg(c.cpu, unsafe_reg(r, i), *v);
                }
            }
            c.cpu.gpr[reg::ESP] = sp.wrapping_add(8 * n);
        }
        M::Pushfd | M::Pushf => {
            let bits = if m == M::Pushfd { 32 } else { 16 };
            // VM and RF read as zero.
            let v = c.cpu.eflags & !(1 << 16 | 1 << 17);
            c.push(bits, v & mask(bits))?;
        }
        M::Popfd | M::Popf => {
            let bits = if m == M::Popfd { 32 } else { 16 };
            let v = c.pop(bits)?;
            let writable = USER_WRITABLE & mask(bits);
            let old = c.cpu.eflags;
            c.cpu.eflags = (old & !writable) | (v & writable) | FIXED | IF;
            if c.cpu.eflags & !old & (TF | AC) != 0 {
                // Single-stepping starts after the next instruction, alignment checking
                // at it: end the block here so that the next one starts traced or
                // checked (see `run_block_cached`).
                return Ok(Flow::Jump(c.next_ip()));
            }
        }
        M::Enter => enter(c)?,
        M::Leave => {
            // `66 c9` pops BP, 2 bytes.
            let bp = c.cpu.gpr[reg::EBP];
            if ins.code() == Code::Leavew {
                let v = read_sized(c.mem, bp, 16).map_err(c.pf())?;
                c.cpu.gpr[reg::ESP] = bp.wrapping_add(2);
                set_reg(c.cpu, Register::BP, v);
            } else {
                let v = c.mem.read_u32(bp).map_err(c.pf())?;
                c.cpu.gpr[reg::ESP] = bp.wrapping_add(4);
                c.cpu.gpr[reg::EBP] = v;
            }
        }
        _ => return Err(invalid(c.mem, ins, c.delta)),
    }
    Ok(Flow::Next)
}

/// The GPR `base + i` (for `popa`, which walks the registers in encoding order).
fn unsafe_reg(base: Register, i: usize) -> Register {
    const R32: [Register; 8] = [
        Register::EAX,
        Register::ECX,
        Register::EDX,
        Register::EBX,
        Register::ESP,
        Register::EBP,
        Register::ESI,
        Register::EDI,
    ];
    const R16: [Register; 8] = [
        Register::AX,
        Register::CX,
        Register::DX,
        Register::BX,
        Register::SP,
        Register::BP,
        Register::SI,
        Register::DI,
    ];
    if base == Register::EAX { R32[i] } else { R16[i] }
}

fn enter(c: &mut Ctx<'_>) -> Res<()> {
    // The operand size sizes the frame pointers pushed and which of EBP and BP is set
    // (`66 c8`: BP, 2-byte slots).
    let n = if c.ins.code() == Code::Enterw_imm16_imm8 { 2 } else { 4 };
    let bits = 8 * n;
    let size = u32::from(c.ins.immediate16());
    let level = u32::from(c.ins.immediate8_2nd()) % 32;
    let esp0 = c.cpu.gpr[reg::ESP];
    let ebp = c.cpu.gpr[reg::EBP];
    let mut sp = esp0.wrapping_sub(n);
    write_sized(c.mem, sp, bits, ebp).map_err(c.pf())?;
    let frame = sp;
    if level > 0 {
        let mut bp = ebp;
        for _ in 1..level {
            bp = bp.wrapping_sub(n);
            let v = read_sized(c.mem, bp, bits).map_err(c.pf())?;
            sp = sp.wrapping_sub(n);
            write_sized(c.mem, sp, bits, v).map_err(c.pf())?;
        }
        sp = sp.wrapping_sub(n);
        write_sized(c.mem, sp, bits, frame).map_err(c.pf())?;
    }
    let esp = sp.wrapping_sub(size);
    if crate::host::amd_like() {
        // AMD probes the new stack top for a write before anything changes (measured:
        // `enter 0x1000, 0` into an unmapped page is a write fault at the new ESP, ESP and
        // EBP as they were; the copied frame pointers are read first).
        // With EFLAGS.AC set, the probe is a slot-sized write like any other, so a
        // misaligned new top is `#AC`, after the frame pointers' reads (measured).
        if c.cpu.eflags & AC != 0 && !esp.is_multiple_of(n) {
            return Err(c.fault(FaultKind::AlignmentCheck));
        }
        c.mem.prepare_write(esp, n).map_err(c.pf())?;
    }
    if n == 2 {
        set_reg(c.cpu, Register::BP, frame);
    } else {
        c.cpu.gpr[reg::EBP] = frame;
    }
    c.cpu.gpr[reg::ESP] = esp;
    Ok(())
}
