//! The instruction table's types, and the host form of a guest form: shared by the
//! crate and by `build.rs`, which derives the table at build time.

use iced_x86::{Code, Instruction, OpKind};

/// How the modeled CPU treats an instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Support {
    /// An integer instruction it executes.
    Int,
    /// An x87 instruction.
    Fpu,
    /// An MMX instruction.
    Mmx,
    /// An SSE or SSE2 instruction (the MMX extensions included), `fxsave`/`fxrstor` or
    /// `ldmxcsr`/`stmxcsr`: run on the host FPU like x87 and MMX, by a model with SSE
    /// (`cpuid::Model::has_sse`); `#UD` on the TM5600.
    Sse,
    /// A NOP: `90` (also as `pause`) and the whole hint space `0F 18`–`0F 1F` with any
    /// prefixes and ModR/M, which P6 reserved as NOPs (prefetch hints, the multi-byte
    /// NOP, and what later CPUs put there: MPX, CET's `endbr`/`rdssp`, `cldemote`). A
    /// memory operand is not accessed.
    Nop,
    /// A system instruction that raises `#GP(0)` at CPL 3 (privileged, I/O with IOPL 0,
    /// descriptor tables and segment loads morph does not model). Never run on the host.
    System,
    /// Not part of the ISA: `#UD`.
    Invalid,
}

/// The part of the interpreter that executes an instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// `jcc`, `setcc`, `cmovcc`.
    Cond,
    /// Moves, exchanges, sign extensions, `lahf`/`sahf`, `xlat`.
    Data,
    /// Add, subtract, logic, increment, negate, multiply, divide.
    Arith,
    /// Shifts, rotates, double shifts, bit tests and scans.
    Bits,
    /// Decimal adjusts.
    Bcd,
    /// Pushes, pops, `enter`, `leave`.
    Stack,
    /// Jumps, calls, returns, loops.
    Branch,
    /// Software interrupts, `bound`, `cpuid`, `rdtsc`, `fwait`, flag bits, `ud`.
    Misc,
    /// `movs`, `stos`, `lods`, `cmps`, `scas`.
    String,
    /// Far-pointer loads (`lds`...`lss`), `arpl`, `lar`, `lsl`, `verr`, `verw`, and
    /// `sgdt`, `sidt`, `sldt`, `str`, `smsw`.
    Segment,
    /// x87 and MMX (the host FPU runs them).
    Fpu,
    /// Nothing to run: a NOP, or a fault (`System`, `Invalid`, an integer mnemonic
    /// without a row).
    None,
}

/// The interpreter's pre-decoded forms (see `interp/fast.rs`): a form has one when some
/// of its instances (32-bit operands, 32-bit addressing) can be pre-decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FastForm {
    /// `mov r/m32, r/m32/imm32`.
    Mov,
    /// `movzx`/`movsx` into a 32-bit register.
    Ext,
    /// `add`, `sub`, `and`, `or`, `xor`, `cmp`, `test`, `adc`, `sbb` on 32 bits.
    Alu,
    /// `lea r32`.
    Lea,
    /// `push r/m32/imm`.
    Push,
    /// `pop r32` (not ESP).
    Pop,
    /// A 32-bit conditional jump.
    Jcc,
    /// A direct 32-bit jump, or one through a 32-bit operand.
    Jmp,
    /// A direct 32-bit call, or one through a 32-bit operand.
    Call,
    /// `ret`.
    Ret,
    /// `inc`, `dec`, `neg`, `not` of a 32-bit operand.
    Unary,
    /// `shl`, `shr`, `sar` of a 32-bit operand by an immediate (or of a register by CL).
    Shift,
    /// `shld`, `shrd` by an immediate.
    DoubleShift,
    /// Two- and three-operand `imul` on 32 bits.
    Imul,
    /// `setcc` of a byte register, `cmovcc` on 32 bits.
    Cond,
    /// `leave` (32-bit).
    Leave,
}

/// How the translator lowers an instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lower {
    /// Nothing is emitted (a NOP).
    Skip,
    /// Re-encoded for the host, its memory operand moved into the process window.
    Reencode,
    /// Re-encoded, with the guest FPU state live in the host FPU (x87, MMX).
    Fpu,
    /// Lowered by hand.
    Inline(Inline),
    /// Run by the reference interpreter through a helper call.
    Helper,
}

/// The instructions the translator lowers by hand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Inline {
    /// A 32-bit conditional jump: a side exit, or the block's end.
    Jcc,
    /// A direct 32-bit jump: a chain site.
    Jmp,
    /// A direct 32-bit call: the return address pushed, a chain site.
    Call,
    /// A jump through a 32-bit register or memory operand: the jump cache.
    JmpInd,
    /// A call through a 32-bit register or memory operand: the jump cache.
    CallInd,
    /// `ret` and `ret imm16`: the jump cache.
    Ret,
    /// A 32-bit push on the guest stack (r12d).
    Push,
    /// A 32-bit pop into a register.
    Pop,
    /// `leave`.
    Leave,
    /// `int 0x80`: a system-call exit.
    Syscall,
    /// A string instruction run as the host's own.
    String,
    /// `jecxz`, `loop`, `loope`, `loopne` on ECX.
    EcxBranch,
}

/// Whether an instruction writes memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Writes {
    /// Never.
    Never,
    /// When its explicit operand is memory.
    MemOperand,
    /// Always (the stack, a string destination), or not known.
    Always,
}

/// What the modeled CPU does with one instruction form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    /// Whether (and how) the modeled CPU executes it.
    pub support: Support,
    /// The part of the interpreter that runs it.
    pub family: Family,
    /// The interpreter's pre-decoded form of its common instances.
    pub fast: Option<FastForm>,
    /// How the translator lowers it (see [`lowering`] for an instance).
    pub lower: Lower,
    /// Whether it writes memory.
    pub writes: Writes,
    /// EFLAGS bits it writes (defined or not).
    pub flags_written: u32,
    /// Of those, the ones the SDM leaves undefined: the host's values (see `host.rs`),
    /// in the interpreter as in translated code.
    pub flags_undefined: u32,
    /// Whether the form the host runs ([`host_code`]) has a 64-bit-mode encoding (AAA,
    /// PUSHA, BOUND have none: the translator cannot re-encode them).
    pub host_mode64: bool,
}

impl Entry {
    /// Whether `ins`, an instance of this form, writes memory.
    pub fn writes(&self, ins: &Instruction) -> bool {
        match self.writes {
            Writes::Never => false,
            Writes::Always => true,
            Writes::MemOperand => ins.op_kinds().any(|k| k == OpKind::Memory),
        }
    }
}

/// The form the host runs for guest form `c`: the 64-bit-mode encoding of forms that
/// have none (short `inc`/`dec`, moffs moves), and BSF/BSR for TZCNT/LZCNT, which the
/// TM5600 (without BMI1/LZCNT) runs as those.
pub fn host_code(c: Code) -> Code {
    match c {
        Code::Inc_r32 => Code::Inc_rm32,
        Code::Dec_r32 => Code::Dec_rm32,
        Code::Inc_r16 => Code::Inc_rm16,
        Code::Dec_r16 => Code::Dec_rm16,
        Code::Mov_AL_moffs8 => Code::Mov_r8_rm8,
        Code::Mov_AX_moffs16 => Code::Mov_r16_rm16,
        Code::Mov_EAX_moffs32 => Code::Mov_r32_rm32,
        Code::Mov_moffs8_AL => Code::Mov_rm8_r8,
        Code::Mov_moffs16_AX => Code::Mov_rm16_r16,
        Code::Mov_moffs32_EAX => Code::Mov_rm32_r32,
        Code::Tzcnt_r32_rm32 => Code::Bsf_r32_rm32,
        Code::Tzcnt_r16_rm16 => Code::Bsf_r16_rm16,
        Code::Lzcnt_r32_rm32 => Code::Bsr_r32_rm32,
        Code::Lzcnt_r16_rm16 => Code::Bsr_r16_rm16,
        c => c,
    }
}
