//! A generated instance of each instruction form: the bytes of one register form and one
//! memory form per iced `Code`, built from the form's opcode description. The table
//! derives what the SDM says about a form (memory written, flags) from them, and the
//! tests run every supported form through both engines with them.

use iced_x86::{Code, Decoder, DecoderOptions, EncodingKind, Instruction, MandatoryPrefix, OpCodeTableKind, OpKind};

/// The memory operand of every memory form: `[ebx + 0x40]` (the tests point EBX at a
/// scratch page).
pub const SAMPLE_DISP: u8 = 0x40;

/// Immediates and displacements after the opcode: `0x14` (a count of 20, a branch 20
/// bytes forward), then zeros.
const TAIL: [u8; 8] = [0x14, 0, 0, 0, 0, 0, 0, 0];

/// The bytes and the decoded instruction of a form of `code` at `ip`: its register form
/// (`memory` false: no explicit memory operand; the ModR/M register operands are EDX-
/// and ECX-numbered) or its memory form (`[ebx + 0x40]`). `None` if the form has no
/// such variant, is not a legacy 32-bit encoding, needs a decoder option, or is an
/// `fwait`-prefixed pair (the decoder gives `fwait` and the no-wait form apart).
pub fn sample(code: Code, memory: bool, ip: u32) -> Option<(Vec<u8>, Instruction)> {
    let op = code.op_code();
    if code == Code::INVALID
        || !op.mode32()
        || op.encoding() != EncodingKind::Legacy
        || op.decoder_option() != 0
        || op.fwait()
    {
        return None;
    }
    let mut head = Vec::with_capacity(8);
    if op.operand_size() == 16 {
        head.push(0x66);
    }
    if op.address_size() == 16 {
        head.push(0x67);
    }
    match op.mandatory_prefix() {
        MandatoryPrefix::P66 => head.push(0x66),
        MandatoryPrefix::PF3 => head.push(0xf3),
        MandatoryPrefix::PF2 => head.push(0xf2),
        _ => {}
    }
    match op.table() {
        OpCodeTableKind::Normal => {}
        OpCodeTableKind::T0F => head.push(0x0f),
        OpCodeTableKind::T0F38 => head.extend([0x0f, 0x38]),
        OpCodeTableKind::T0F3A => head.extend([0x0f, 0x3a]),
        _ => return None,
    }
    // A register in the opcode's low bits: ECX (or ST(1)), so that `xchg` is not `nop`.
    let in_opcode = op.op_kinds().iter().any(|k| {
        use iced_x86::OpCodeOperandKind as K;
        matches!(k, K::r8_opcode | K::r16_opcode | K::r32_opcode | K::sti_opcode)
    });
    let oc = op.op_code() + u32::from(in_opcode);
    if op.op_code_len() == 2 {
        head.push((oc >> 8) as u8);
    }
    head.push(oc as u8);
    let reg = if op.is_group() { op.group_index() as u8 } else { 2 };
    let mut candidates: Vec<Vec<u8>> = Vec::with_capacity(3);
    if memory {
        candidates.push(vec![0x40 | reg << 3 | 3, SAMPLE_DISP]);
    } else {
        candidates.push(vec![]);
        let rm = if op.is_rm_group() { op.rm_group_index() as u8 } else { 1 };
        candidates.push(vec![0xc0 | reg << 3 | rm]);
    }
    candidates.into_iter().find_map(|modrm| {
        let mut b = head.clone();
        b.extend(modrm);
        b.extend(TAIL);
        let ins = Decoder::with_ip(32, &b, u64::from(ip), DecoderOptions::NONE).decode();
        let has_mem = ins.op_kinds().any(|k| k == OpKind::Memory);
        (ins.code() == code && has_mem == memory).then(|| {
            b.truncate(ins.len());
            (b, ins)
        })
    })
}
