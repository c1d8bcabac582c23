//! The translator: one guest basic block (IA-32) → position-independent x86-64.
//!
//! Because guest and host are both x86, most guest instructions are *re-encoded* by
//! iced-x86 rather than translated: registers stay the same registers (ESP becomes
//! r12d), and a memory operand `[base + index*s + d]` becomes `gs:[base + index*s + d]`
//! with a 32-bit address size, so the effective address wraps like the guest's and
//! lands in the process window. Guest TLS operands (`%gs:`/`%fs:`) first add the
//! guest segment base with flag-free `lea`s.
//!
//! Nothing EIP-dependent is baked in: return addresses, branch targets, exit EIPs and
//! fault EIPs are all `r14d + offset`, r14d holding the runtime VA of the block's page and
//! the offset being the in-page offset (the same at every address). A translation is
//! therefore valid at any virtual address that maps the same physical bytes — the
//! property the `physical` key policy relies on — and chaining within the page never
//! has to update r14d.
//!
//! Control transfers end the block, after one flag-free `lea r11, [r11 + n]` that counts
//! its instructions:
//! - direct jumps, both edges of a `jcc` and the fall-through are *sites*: the `jmp`'s
//!   or the `jcc`'s own rel32 starts at an exit stub and is later patched to the target
//!   translation (its body for a forward edge, its budget check for a backward one), so
//!   a chained loop runs guest code, `lea`, `jcc` and the check;
//! - direct jumps to another page, indirect jumps, calls and returns go through the jump
//!   cache ([`runtime::indirect_lookup`]) with the target in r13d;
//! - `int 0x80` leaves with a system-call exit.
//!
//! String instructions run as the host's own with RSI/RDI made host addresses (see
//! `string_seq`); `div`/`idiv` are re-encoded like other arithmetic: a divide error is a
//! host SIGFPE that the fault handler turns into a guest fault at the instruction, which
//! the interpreter then re-runs and raises precisely. Instructions whose 64-bit
//! re-encoding would differ (CX-addressed or segment-overridden string forms, stack forms
//! not handled here, `cpuid`...) are run by the reference interpreter through a helper
//! call, with the state spilled and reloaded around it: the interpreter stays the single
//! definition of their semantics.

use iced_x86::code_asm::*;
use iced_x86::{
    Code, ConditionCode, Decoder, DecoderOptions, Encoder, FlowControl, Instruction, Mnemonic as M, OpKind, Register,
};

use crate::runtime::{self, EXIT_BRANCH, EXIT_INDIRECT, EXIT_SYSCALL, off};
use morph_cpu::Support;
use morph_mem::PAGE_SIZE;

/// The most guest instructions in one translation.
pub const MAX_INSTRUCTIONS: usize = 64;

/// A chain site: the rel32 of a `jmp` or `jcc` that initially goes to the site's exit
/// stub.
#[derive(Clone, Copy, Debug)]
pub struct Site {
    /// Offset (in the translation) of the jump's rel32 field.
    pub rel: usize,
    /// Target EIP minus the block's first EIP.
    pub target_delta: i32,
    /// Offset of the rel32 of the `jmp` that ends the site's exit stub (to `exit_common`;
    /// re-pointed to the shared jump-cache lookup when the target cannot be chained to).
    pub exit_jmp: usize,
}

/// Where a rel32 field must point once the translation is placed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fixup {
    /// The shared `exit_common` routine.
    ExitCommon,
    /// The shared `exit_nosave` routine.
    ExitNosave,
}

/// A translated block, not yet placed in the code buffer.
pub struct Translated {
    /// Host code (position-independent except for the fixups).
    pub code: Vec<u8>,
    /// Offset of the body: where the dispatcher and forward chains enter.
    pub body: usize,
    /// Offset of the chain entry (the budget check before the body): where backward
    /// chains enter.
    pub entry: usize,
    /// Chain sites.
    pub sites: Vec<Site>,
    /// rel32 fields to resolve against shared routines.
    pub fixups: Vec<(usize, Fixup)>,
    /// `(host offset, guest offset from the page start, instructions before)` per guest
    /// instruction.
    pub points: Vec<(u32, u32, u32)>,
    /// Guest instructions in the block.
    pub instructions: u32,
    /// Guest bytes in the block.
    pub guest_len: u32,
    /// Instructions the helper runs (kept alive and unmoved: translated code points at
    /// them).
    #[allow(clippy::vec_box)]
    pub helper_instrs: Vec<Box<Instruction>>,
    /// How many instructions go through the helper.
    pub fallbacks: u32,
    /// Whether the block runs x87/MMX instructions natively (the guest FPU state must
    /// then be live in the host FPU).
    pub uses_fpu: bool,
}

struct Emitter {
    code: Vec<u8>,
    fixups: Vec<(usize, Fixup)>,
    local: Vec<(usize, usize)>,
    sites: Vec<Site>,
    /// `jcc` rel32 fields whose target is in another page, with the target's delta:
    /// they get an out-of-line jump-cache lookup.
    far: Vec<(usize, i32)>,
    encoder: Encoder,
    scratch: Vec<u8>,
    /// Offset of the block's first instruction in its page (the same at any address).
    page_off: u32,
    /// The block's instructions already counted in r11 on the path being emitted.
    counted: u32,
    /// Side exits: the `jcc` rel32 field, the instructions its taken edge must count,
    /// and the target's delta.
    side: Vec<(usize, u32, i32)>,
}

fn asm(f: impl FnOnce(&mut CodeAssembler) -> Result<(), IcedError>) -> Option<Vec<u8>> {
    let mut a = CodeAssembler::new(64).ok()?;
    f(&mut a).ok()?;
    a.assemble(0).ok()
}

/// A host code sequence that depends only on a register or a constant (see `cached`).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Seq {
    /// Push a host register on the guest stack.
    Push(Register),
    /// Pop the guest stack into a host register.
    Pop(Register),
    /// `ret` with this many extra bytes popped.
    Ret(i32),
    Leave,
    /// Add the base of the segment whose base is at this offset of the state block.
    SegBase(i32),
    /// A string instruction (see `string_op`).
    Str(Code, u8),
}

/// The host code of `key`, assembled once by `make`: stack pushes and pops, returns,
/// `leave` and segment loads recur in almost every block, and iced's assembler (plus
/// `fix32`'s re-encoding) costs far more than copying the bytes.
fn cached(key: Seq, make: impl FnOnce() -> Option<Vec<u8>>) -> Option<Vec<u8>> {
    thread_local! {
        static SEQS: std::cell::RefCell<rustc_hash::FxHashMap<Seq, Vec<u8>>> = Default::default();
    }
    if let Some(b) = SEQS.with(|s| s.borrow().get(&key).cloned()) {
        return Some(b);
    }
    let b = make()?;
    SEQS.with(|s| s.borrow_mut().insert(key, b.clone()));
    Some(b)
}

impl Emitter {
    fn bytes(&mut self, b: &[u8]) {
        self.code.extend_from_slice(b);
    }

    /// `jmp rel32` to a shared routine.
    fn jmp_shared(&mut self, to: Fixup) {
        self.code.push(0xe9);
        self.fixups.push((self.code.len(), to));
        self.code.extend_from_slice(&[0; 4]);
    }

    fn encode(&mut self, ins: &Instruction) -> Option<Vec<u8>> {
        let r = self.encoder.encode(ins, 0);
        let b = self.encoder.take_buffer();
        r.ok()?;
        Some(b)
    }

    /// Encodes `ins` straight into the code (no allocation); false if it cannot be.
    fn emit_encoded(&mut self, ins: &Instruction) -> bool {
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        self.encoder.set_buffer(scratch);
        let ok = self.encoder.encode(ins, 0).is_ok();
        let b = self.encoder.take_buffer();
        if ok {
            self.code.extend_from_slice(&b);
        }
        self.scratch = b;
        ok
    }

    /// The offset from the page VA (r14d) of `delta` bytes from the block start.
    fn at(&self, delta: i32) -> i32 {
        self.page_off as i32 + delta
    }

    /// `lea r11, [r11 + n]` (flags untouched) for the instructions completed since the
    /// last count, `done` being the block's instructions completed at this point.
    fn count(&mut self, done: u32) {
        if done > self.counted {
            self.bytes(&runtime::lea_r11(done - self.counted));
            self.counted = done;
        }
    }

    /// Continue at the target EIP in r13d: through the jump cache, or by leaving to the
    /// dispatcher.
    fn lookup(&mut self) {
        self.bytes(runtime::indirect_lookup());
        self.fixups.push((self.code.len() - 4, Fixup::ExitCommon));
    }

    /// Counts up to `done` instructions, then continues at the target EIP in r13d.
    fn exit_indirect(&mut self, done: u32) {
        self.count(done);
        self.lookup();
    }

    fn in_page(&self, delta: i32) -> bool {
        (0..i64::from(PAGE_SIZE)).contains(&i64::from(self.at(delta)))
    }

    /// The rel32 field at `rel` (of a `jmp` or `jcc` just emitted) goes to `delta` bytes
    /// from the block start: a chain site in the page; an out-of-line jump-cache lookup
    /// for another page (never chained: its mapping may differ).
    fn branch_field(&mut self, rel: usize, delta: i32) {
        if self.in_page(delta) {
            self.sites.push(Site { rel, target_delta: delta, exit_jmp: 0 });
        } else {
            self.far.push((rel, delta));
        }
    }

    /// `jcc rel32` on condition `cc` (0 = `o` … 15 = `g`); returns the rel32 field's offset.
    fn jcc(&mut self, cc: u8) -> usize {
        self.bytes(&[0x0f, 0x80 + cc, 0, 0, 0, 0]);
        self.code.len() - 4
    }

    /// A direct jump to `delta` bytes from the block start (instructions counted).
    fn jump(&mut self, delta: i32) {
        if self.in_page(delta) {
            self.code.push(0xe9);
            let rel = self.code.len();
            self.code.extend_from_slice(&[0; 4]);
            self.branch_field(rel, delta);
        } else {
            self.bytes(&runtime::lea_r13_r14(self.at(delta)));
            self.lookup();
        }
    }
}

/// Maps a guest register operand to the host register holding it.
fn map_reg(r: Register) -> Option<Register> {
    match r {
        Register::ESP => Some(Register::R12D),
        Register::SP => Some(Register::R12W),
        r if r.is_segment_register() => None,
        r => Some(r),
    }
}

/// Instructions the translator never re-encodes: their meaning in 64-bit mode differs,
/// they touch the stack or segments implicitly, or they can raise guest exceptions
/// other than page faults.
fn needs_helper(ins: &Instruction) -> bool {
    matches!(
        ins.mnemonic(),
        M::Pushad
            | M::Popad
            | M::Pusha
            | M::Popa
            | M::Pushfd
            | M::Popfd
            | M::Pushf
            | M::Popf
            | M::Enter
            | M::Jcxz
            | M::Int3
            | M::Into
            | M::Bound
            | M::Cpuid
            | M::Rdtsc
            | M::Aam
            | M::Xlatb
            | M::Ud0
            | M::Ud1
            | M::Ud2
            | M::Wait
    ) || (ins.is_string_instruction() && string_op(ins).is_none()) // see `string_op`
        || (matches!(ins.mnemonic(), M::Bt | M::Bts | M::Btr | M::Btc)
        && ins.op0_kind() == OpKind::Memory
        && ins.op1_kind() == OpKind::Register)
        || ins.memory_base().size() == 2
        || ins.memory_index().size() == 2
}

/// A string instruction the host runs itself, with its `rep`/`repe`/`repne` prefix byte
/// (0 for none): `movs`, `stos`, `lods`, `scas`, `cmps` of any width, with a 32-bit
/// address size and no segment override on the source (in 64-bit mode ES:EDI has no
/// base, so the host instruction is given RSI/RDI as host addresses instead: see
/// `string_seq`).
fn string_op(ins: &Instruction) -> Option<(Code, u8)> {
    use Code::*;
    let uses_esi = match ins.code() {
        Movsb_m8_m8 | Movsw_m16_m16 | Movsd_m32_m32 | Lodsb_AL_m8 | Lodsw_AX_m16 | Lodsd_EAX_m32 | Cmpsb_m8_m8
        | Cmpsw_m16_m16 | Cmpsd_m32_m32 => true,
        Stosb_m8_AL | Stosw_m16_AX | Stosd_m32_EAX | Scasb_AL_m8 | Scasw_AX_m16 | Scasd_EAX_m32 => false,
        _ => return None,
    };
    let wide = (0..ins.op_count()).all(|i| !matches!(ins.op_kind(i), OpKind::MemorySegSI | OpKind::MemoryESDI));
    let plain = !uses_esi || matches!(ins.segment_prefix(), Register::None | Register::DS);
    let prefix = if ins.has_repne_prefix() {
        0xf2
    } else if ins.has_rep_prefix() {
        0xf3
    } else {
        0
    };
    (wide && plain && !ins.has_lock_prefix()).then_some((ins.code(), prefix))
}

/// The host code of string instruction `ins` (see `string_op`): RSI and RDI become host
/// addresses (the window base plus the guest's 32-bit value), the host instruction runs
/// with RCX (the guest ECX) as the count and the guest's direction flag (live in EFLAGS),
/// and RSI/RDI are cut back to 32 bits — the window base is a multiple of 2^32, so that
/// gives the guest's values. Nothing touches the flags but the instruction itself. A host
/// fault part way leaves RSI/RDI/RCX at the element that faulted: resolved in place it
/// resumes; otherwise the exit saves their low halves, and the interpreter re-runs the
/// instruction from there (precisely as a restarted `rep` would). A guest ESI/EDI that
/// wraps past 4 GiB reaches the empty 4 GiB after the window and faults the same way.
fn string_seq(ins: &Instruction, prefix: u8) -> Option<Vec<u8>> {
    let uses_esi = matches!(ins.mnemonic(), M::Movsb | M::Movsw | M::Movsd | M::Lodsb | M::Lodsw | M::Lodsd)
        || matches!(ins.mnemonic(), M::Cmpsb | M::Cmpsw | M::Cmpsd);
    let uses_edi = !matches!(ins.mnemonic(), M::Lodsb | M::Lodsw | M::Lodsd);
    let mut v = asm(|a| {
        a.mov(r13, qword_ptr(r15 + runtime::off::WINDOW))?;
        if uses_esi {
            a.mov(esi, esi)?;
            a.lea(rsi, qword_ptr(rsi + r13))?;
        }
        if uses_edi {
            a.mov(edi, edi)?;
            a.lea(rdi, qword_ptr(rdi + r13))?;
        }
        if prefix != 0 {
            a.mov(ecx, ecx)?;
        }
        Ok(())
    })?;
    if prefix != 0 {
        v.push(prefix);
    }
    if ins.memory_size().size() == 2 {
        v.push(0x66);
    }
    // The opcode without prefixes: iced gives the 32-bit form's bytes.
    let op = match ins.mnemonic() {
        M::Movsb => 0xa4,
        M::Movsw | M::Movsd => 0xa5,
        M::Cmpsb => 0xa6,
        M::Cmpsw | M::Cmpsd => 0xa7,
        M::Stosb => 0xaa,
        M::Stosw | M::Stosd => 0xab,
        M::Lodsb => 0xac,
        M::Lodsw | M::Lodsd => 0xad,
        M::Scasb => 0xae,
        M::Scasw | M::Scasd => 0xaf,
        _ => return None,
    };
    v.push(op);
    v.extend(asm(|a| {
        if uses_esi {
            a.mov(esi, esi)?;
        }
        if uses_edi {
            a.mov(edi, edi)?;
        }
        Ok(())
    })?);
    Some(v)
}

/// The host opcode of a `jecxz`, `loop`, `loope` or `loopne` that tests ECX (a 32-bit
/// address size; the CX forms are left to the helper: a 64-bit host cannot test CX).
fn ecx_branch(ins: &Instruction) -> Option<u8> {
    match ins.code() {
        Code::Jecxz_rel8_32 => Some(0xe3),
        Code::Loop_rel8_32_ECX => Some(0xe2),
        Code::Loope_rel8_32_ECX => Some(0xe1),
        Code::Loopne_rel8_32_ECX => Some(0xe0),
        _ => None,
    }
}

/// x87/MMX instructions that run natively with the guest FPU state live in the host FPU:
/// all but those whose 64-bit form differs or that leak host addresses into guest memory
/// (the environment and state images record the host instruction pointer).
fn native_fpu(ins: &Instruction) -> bool {
    !matches!(ins.mnemonic(), M::Fnstenv | M::Fstenv | M::Fnsave | M::Fsave | M::Fldenv | M::Frstor | M::Wait)
}

/// The 64-bit-mode encoding of guest codes that have none (short inc/dec, moffs moves,
/// TZCNT/LZCNT which the TM5600 runs as BSF/BSR).
fn code_for_64(c: Code) -> Code {
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

/// Rewrites the memory operand of `h` (a copy of `ins`) into the process window,
/// emitting the address computation TLS operands need. `None`: not expressible.
fn rewrite_memory(e: &mut Emitter, ins: &Instruction, h: &mut Instruction) -> Option<()> {
    let base = match ins.memory_base() {
        Register::None => Register::None,
        r => map_reg(r)?,
    };
    let index = match ins.memory_index() {
        Register::None => Register::None,
        r => map_reg(r)?,
    };
    let disp = ins.memory_displacement32();
    let seg = ins.memory_segment();
    let lea = ins.mnemonic() == M::Lea;
    if !lea && (seg == Register::FS || seg == Register::GS) {
        // r13d = offset + guest segment base, computed without touching the flags.
        let seg_off = if seg == Register::FS { off::FS_BASE } else { off::GS_BASE };
        let mut l = Instruction::with2(
            Code::Lea_r32_m,
            Register::R13D,
            iced_x86::MemoryOperand::with_base_index_scale_displ_size(
                base,
                index,
                ins.memory_index_scale(),
                i64::from(disp as i32),
                4,
            ),
        )
        .ok()?;
        if base == Register::None && index == Register::None {
            l = Instruction::with2(Code::Mov_r32_imm32, Register::R13D, disp).ok()?;
        }
        let b = e.encode(&l)?;
        e.bytes(&b);
        let b = cached(Seq::SegBase(seg_off), || {
            asm(|a| {
                a.mov(r8d, dword_ptr(r15 + seg_off))?;
                a.lea(r13d, dword_ptr(r13 + r8))
            })
        })?;
        e.bytes(&b);
        set_mem(h, Register::R13D, Register::None, 1, 0);
    } else if base == Register::None && index == Register::None {
        let b = e.encode(&Instruction::with2(Code::Mov_r32_imm32, Register::R13D, disp).ok()?)?;
        e.bytes(&b);
        set_mem(h, Register::R13D, Register::None, 1, 0);
    } else {
        set_mem(h, base, index, ins.memory_index_scale(), disp);
    }
    h.set_segment_prefix(if lea { Register::None } else { Register::GS });
    Some(())
}

fn set_mem(h: &mut Instruction, base: Register, index: Register, scale: u32, disp: u32) {
    h.set_memory_base(base);
    h.set_memory_index(index);
    h.set_memory_index_scale(scale);
    h.set_memory_displacement64(u64::from(disp));
    h.set_memory_displ_size(if disp == 0 { 0 } else { 4 });
}

/// Re-encodes an ordinary guest instruction for the host, or `None`.
fn reencode(e: &mut Emitter, ins: &Instruction) -> Option<()> {
    let mark = e.code.len();
    let mut h = *ins;
    h.set_code(code_for_64(ins.code()));
    if !h.code().op_code().mode64() {
        return None; // e.g. AAA, PUSHA, BOUND: no 64-bit encoding
    }
    for i in 0..ins.op_count() {
        if ins.op_kind(i) == OpKind::Register {
            h.set_op_register(i, map_reg(ins.op_register(i))?);
        }
    }
    let has_mem = ins.op_kinds().any(|k| k == OpKind::Memory);
    if has_mem && rewrite_memory(e, ins, &mut h).is_none() {
        e.code.truncate(mark);
        return None;
    }
    if e.emit_encoded(&h) {
        Some(())
    } else {
        e.code.truncate(mark);
        None
    }
}

/// A guest memory operand loaded into a host register (for push m32, jmp/call m32).
fn load_operand(e: &mut Emitter, ins: &Instruction, to: Register) -> Option<()> {
    let mark = e.code.len();
    let r = match ins.op0_kind() {
        OpKind::Register => {
            let src = map_reg(ins.op0_register())?;
            e.encode(&Instruction::with2(Code::Mov_r32_rm32, to, src).ok()?)
        }
        OpKind::Memory => {
            let mut h =
                Instruction::with2(Code::Mov_r32_rm32, to, iced_x86::MemoryOperand::with_base(Register::EAX)).ok()?;
            if rewrite_memory(e, ins, &mut h).is_none() {
                e.code.truncate(mark);
                return None;
            }
            e.encode(&h)
        }
        _ => None,
    };
    match r {
        Some(b) => {
            e.bytes(&b);
            Some(())
        }
        None => {
            e.code.truncate(mark);
            None
        }
    }
}

/// Pushes the 32-bit host register `r`: the store first (it may fault), then ESP.
fn push_reg(e: &mut Emitter, r: AsmRegister32) -> Option<()> {
    let b = cached(Seq::Push(r.into()), || {
        asm(|a| {
            a.mov(dword_ptr(r12 - 4).gs(), r)?;
            a.lea(r12d, dword_ptr(r12 - 4))
        })
        .map(fix32)
    })?;
    e.bytes(&b);
    Some(())
}

/// iced assembles `[r12-4]`/`[rbp]` with 64-bit addresses; the guest needs the 32-bit
/// wrap, so stack and frame accesses are re-encoded with 32-bit base registers (which
/// adds the address-size prefix): `gs mov [r12d-4]` etc.
fn fix32(b: Vec<u8>) -> Vec<u8> {
    let mut d = Decoder::with_ip(64, &b, 0, DecoderOptions::NONE);
    let mut enc = Encoder::new(64);
    let mut out = Vec::new();
    while d.can_decode() {
        let mut i = d.decode();
        match i.memory_base() {
            Register::R12 => i.set_memory_base(Register::R12D),
            Register::RBP => i.set_memory_base(Register::EBP),
            _ => {}
        }
        enc.encode(&i, 0).expect("re-encode");
        out.extend_from_slice(&enc.take_buffer());
    }
    out
}

/// Translates the block starting at `eip`, whose bytes up to the end of its page are
/// `bytes`, as translation number `id`. `None` if its first instruction crosses the
/// page (the interpreter runs it).
///
/// `bytes` may run up to `MAX_INSN_LEN - 1` bytes into the next page: an instruction that
/// straddles the page end is translated and ends the block (the caller then makes the
/// translation depend on both pages).
pub fn translate(bytes: &[u8], eip: u32, helper: usize, id: u32) -> Option<Translated> {
    let page_left = PAGE_SIZE - (eip & (PAGE_SIZE - 1));
    let mut dec = Decoder::with_ip(32, bytes, u64::from(eip), DecoderOptions::NONE);
    let mut instrs = Vec::with_capacity(16);
    while instrs.len() < MAX_INSTRUCTIONS && dec.can_decode() {
        let ins = dec.decode();
        if ins.is_invalid() && dec.last_error() == iced_x86::DecoderError::NoMoreBytes {
            break;
        }
        // A conditional branch whose fall-through stays in the page does not end the
        // block: its taken edge is a side exit and the fall-through goes on inline
        // (a multi-exit block, as Transmeta translated regions rather than basic blocks).
        // A branch back to the block's start ends it: the block is a loop (unrolled below).
        let side_exit =
            ins.is_jcc_short_or_near() && ins.op0_kind() == OpKind::NearBranch32 && ins.near_branch32() != eip;
        let end = (ins.flow_control() != FlowControl::Next && !side_exit)
            || ins.is_invalid()
            || ins.next_ip32().wrapping_sub(eip) >= page_left;
        instrs.push(ins);
        if end {
            break;
        }
    }
    let last = *instrs.last()?;
    let mut e = Emitter {
        code: Vec::with_capacity(64 * instrs.len() + 128),
        fixups: Vec::with_capacity(8),
        local: Vec::with_capacity(8),
        sites: Vec::with_capacity(4),
        far: Vec::with_capacity(4),
        encoder: Encoder::new(64),
        scratch: Vec::with_capacity(16),
        page_off: eip & (PAGE_SIZE - 1),
        counted: 0,
        side: Vec::with_capacity(4),
    };
    // Chain entry: the budget check; the body follows.
    let (check, budget_rel, entry) = runtime::chain_check();
    e.bytes(check);
    let body = e.code.len();
    let mut points = Vec::with_capacity(4 * instrs.len());
    let mut helper_instrs = Vec::new();
    let mut fallbacks = 0;
    let mut uses_fpu = false;
    let n = instrs.len() as u32;
    // A small loop whose last instruction branches back to its first is unrolled: the
    // copies but the last leave through an inverted branch (a side exit to the loop's
    // exit) and fall into the next copy, so the budget check and the instruction count
    // run once per `unroll` iterations.
    let self_loop = last.is_jcc_short_or_near()
        && last.op0_kind() == OpKind::NearBranch32
        && last.near_branch32() == u64::from(eip) as u32;
    let unroll: u32 = match n {
        _ if !self_loop => 1,
        1..=16 => 4,
        17..=32 => 2,
        _ => 1,
    };
    let total = n * unroll;
    let mut ended = false;
    'copies: for (k, ins) in (0..unroll).flat_map(|_| instrs.iter()).enumerate() {
        let k = k as u32;
        let first_copy = k < n;
        let goff = ins.ip32().wrapping_sub(eip);
        let next = ins.next_ip32().wrapping_sub(eip) as i32;
        // Instructions of the block completed but not yet counted in r11 when this one
        // starts (the fault handler and the helper add them).
        let pending = k - e.counted;
        points.push((e.code.len() as u32, e.at(goff as i32) as u32, pending));
        let done = k + 1;
        // What the modeled CPU does with it is decided in one place (`morph_cpu::isa`):
        // NOPs (the hint space included) emit nothing, system and invalid instructions
        // go to the interpreter, which raises their fault.
        let support = morph_cpu::support(ins);
        let m = ins.mnemonic();
        if support == Support::Nop {
            continue;
        }
        if matches!(support, Support::Fpu | Support::Mmx) && native_fpu(ins) && reencode(&mut e, ins).is_some() {
            uses_fpu = true;
            continue;
        }
        let mut handled = support == Support::Int && !needs_helper(ins);
        if handled {
            handled = match m {
                _ if ins.is_jcc_short_or_near() && ins.op0_kind() == OpKind::NearBranch32 => {
                    let cc = ins.condition_code() as u8 - ConditionCode::o as u8;
                    let target = ins.near_branch32().wrapping_sub(eip) as i32;
                    // The back edge of an unrolled copy leaves (inverted) if the loop ends.
                    let (cc, to) = if done.is_multiple_of(n) && done < total { (cc ^ 1, next) } else { (cc, target) };
                    if done == total || to <= goff as i32 {
                        // The block's last instruction (one count covers both edges), or
                        // a backward branch, presumably taken (a loop): count inline.
                        e.count(done);
                        let rel = e.jcc(cc);
                        e.branch_field(rel, to);
                    } else {
                        // A forward side exit, presumably not taken: the taken edge counts
                        // in an out-of-line stub, so the path that stays in the block
                        // counts once, at its end.
                        let rel = e.jcc(cc);
                        e.side.push((rel, done - e.counted, to));
                    }
                    // The fall-through follows inline (or through the site at the end).
                    true
                }
                M::Jmp if ins.op0_kind() == OpKind::NearBranch32 => {
                    e.count(done);
                    e.jump(ins.near_branch32().wrapping_sub(eip) as i32);
                    ended = true;
                    true
                }
                _ if string_op(ins).is_some() => {
                    let (code, prefix) = string_op(ins)?;
                    let b = cached(Seq::Str(code, prefix), || string_seq(ins, prefix))?;
                    e.bytes(&b);
                    true
                }
                _ if ecx_branch(ins).is_some() => {
                    // `jecxz`/`loop`/`loope`/`loopne` on ECX: the host's own with a 32-bit
                    // address size (ECX, flags untouched), over a rel32 jump for the
                    // taken edge; the block ends here and falls through below.
                    e.count(done);
                    e.bytes(&[0x67, ecx_branch(ins)?, 2, 0xeb, 5, 0xe9]);
                    let rel = e.code.len();
                    e.bytes(&[0; 4]);
                    e.branch_field(rel, ins.near_branch32().wrapping_sub(eip) as i32);
                    true
                }
                M::Jmp if ins.op0_kind() != OpKind::NearBranch16 => {
                    let ok = load_operand(&mut e, ins, Register::R13D).is_some();
                    if ok {
                        e.exit_indirect(done);
                        ended = true;
                    }
                    ok
                }
                M::Call if ins.op0_kind() == OpKind::NearBranch32 => {
                    e.bytes(&runtime::lea_r13_r14(e.at(next)));
                    push_reg(&mut e, r13d);
                    e.count(done);
                    e.jump(ins.near_branch32().wrapping_sub(eip) as i32);
                    ended = true;
                    true
                }
                M::Call if ins.op0_kind() != OpKind::NearBranch16 && ins.memory_size().size() != 2 => {
                    let ok = load_operand(&mut e, ins, Register::R13D).is_some();
                    if ok {
                        e.bytes(&fix_lea_r8(e.at(next)));
                        push_reg(&mut e, r8d);
                        e.exit_indirect(done);
                        ended = true;
                    }
                    ok
                }
                M::Ret => {
                    let extra = if ins.op_count() == 1 { i32::from(ins.immediate16()) } else { 0 };
                    let b = cached(Seq::Ret(extra), || {
                        asm(|a| {
                            a.mov(r13d, dword_ptr(r12).gs())?;
                            a.lea(r12d, dword_ptr(r12 + 4 + extra))
                        })
                        .map(fix32)
                    })?;
                    e.bytes(&b);
                    e.exit_indirect(done);
                    ended = true;
                    true
                }
                M::Push if ins.op0_kind() == OpKind::Register && ins.op0_register().is_gpr32() => {
                    let r = runtime::host_gpr(gpr_index(ins.op0_register()));
                    push_reg(&mut e, r);
                    true
                }
                M::Push if matches!(ins.op0_kind(), OpKind::Immediate8to32 | OpKind::Immediate32) => {
                    let v = ins.immediate(0) as u32;
                    let b = fix32(asm(|a| {
                        a.mov(dword_ptr(r12 - 4).gs(), v)?;
                        a.lea(r12d, dword_ptr(r12 - 4))
                    })?);
                    e.bytes(&b);
                    true
                }
                M::Push if ins.op0_kind() == OpKind::Memory && ins.memory_size().size() == 4 => {
                    let ok = load_operand(&mut e, ins, Register::R13D).is_some();
                    if ok {
                        push_reg(&mut e, r13d);
                    }
                    ok
                }
                M::Pop
                    if ins.op0_kind() == OpKind::Register
                        && ins.op0_register().is_gpr32()
                        && ins.op0_register() != Register::ESP =>
                {
                    let r = runtime::host_gpr(gpr_index(ins.op0_register()));
                    let b = cached(Seq::Pop(r.into()), || {
                        asm(|a| {
                            a.mov(r, dword_ptr(r12).gs())?;
                            a.lea(r12d, dword_ptr(r12 + 4))
                        })
                        .map(fix32)
                    })?;
                    e.bytes(&b);
                    true
                }
                M::Leave if ins.code() == Code::Leaved => {
                    // Load first (it may fault), then update ESP and EBP.
                    let b = cached(Seq::Leave, || {
                        asm(|a| {
                            a.mov(r13d, dword_ptr(rbp).gs())?;
                            a.lea(r12d, dword_ptr(rbp + 4))?;
                            a.mov(ebp, r13d)
                        })
                        .map(fix32)
                    })?;
                    e.bytes(&b);
                    true
                }
                M::Int if ins.immediate8() == 0x80 => {
                    e.count(done);
                    e.bytes(&runtime::lea_r13_r14(e.at(next)));
                    e.bytes(&runtime::store_r13(off::EIP));
                    e.bytes(&runtime::store_imm(off::EXIT, EXIT_SYSCALL));
                    e.jmp_shared(Fixup::ExitCommon);
                    ended = true;
                    true
                }
                M::Push | M::Pop | M::Leave | M::Call | M::Jmp => false,
                _ if ins.flow_control() != FlowControl::Next => false,
                _ => reencode(&mut e, ins).is_some(),
            };
        }
        if !handled {
            fallbacks += u32::from(first_copy);
            let boxed = Box::new(*ins);
            let (before, after) =
                runtime::helper_call(helper, &*boxed as *const Instruction as usize, pending, e.at(goff as i32));
            helper_instrs.push(boxed);
            e.bytes(&before);
            e.bytes(&[0x0f, 0x85]);
            e.fixups.push((e.code.len(), Fixup::ExitNosave));
            e.bytes(&[0; 4]);
            e.bytes(&after);
            if ins.flow_control() != FlowControl::Next {
                // The interpreter has set EIP: leave through the dispatcher.
                e.count(done);
                e.bytes(&runtime::store_imm(off::EXIT, EXIT_INDIRECT));
                e.jmp_shared(Fixup::ExitCommon);
                ended = true;
            }
        }
        if ended {
            break 'copies;
        }
    }
    let guest_len = last.next_ip32().wrapping_sub(eip);
    if !ended {
        // The block stops at the page end or the size limit: fall through to the next.
        e.count(total);
        e.jump(guest_len as i32);
    }
    // Side exits: count, then a site (or a lookup) of their own.
    for (rel, k, delta) in std::mem::take(&mut e.side) {
        e.local.push((rel, e.code.len()));
        e.bytes(&runtime::lea_r11(k));
        e.jump(delta);
    }
    // Exit stubs of the sites (unchained targets).
    let mut sites = std::mem::take(&mut e.sites);
    for (i, s) in sites.iter_mut().enumerate() {
        e.local.push((s.rel, e.code.len()));
        e.bytes(&runtime::lea_r13_r14(e.at(s.target_delta)));
        e.bytes(&runtime::store_r13(off::EIP));
        e.bytes(&runtime::store_imm(off::EXIT_SITE, (id << 8) | i as u32));
        e.bytes(&runtime::store_imm(off::EXIT, EXIT_BRANCH));
        e.jmp_shared(Fixup::ExitCommon);
        s.exit_jmp = e.code.len() - 4;
    }
    // Out-of-line lookups of the jcc edges into other pages.
    for (rel, delta) in std::mem::take(&mut e.far) {
        e.local.push((rel, e.code.len()));
        e.bytes(&runtime::lea_r13_r14(e.at(delta)));
        e.lookup();
    }
    // The budget exit of the chain entry.
    let out = e.code.len();
    e.bytes(&runtime::lea_r13_r14(e.at(0)));
    e.bytes(&runtime::store_r13(off::EIP));
    e.bytes(&runtime::store_imm(off::EXIT, runtime::EXIT_BUDGET));
    e.jmp_shared(Fixup::ExitCommon);
    e.local.push((budget_rel, out));
    for &(field, target) in &e.local {
        let rel = (target as i64 - (field as i64 + 4)) as i32;
        e.code[field..field + 4].copy_from_slice(&rel.to_le_bytes());
    }
    Some(Translated {
        code: e.code,
        body,
        entry,
        sites,
        fixups: e.fixups,
        points,
        instructions: n,
        guest_len,
        helper_instrs,
        fallbacks,
        uses_fpu,
    })
}

/// `lea r8d, [r14 + d]` (the return address of an indirect call).
fn fix_lea_r8(d: i32) -> Vec<u8> {
    asm(|a| a.lea(r8d, dword_ptr(r14 + d))).expect("lea")
}

fn gpr_index(r: Register) -> usize {
    (r as usize) - (Register::EAX as usize)
}
