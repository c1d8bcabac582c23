//! The reference interpreter.
//!
//! Execution is block at a time: a *block* is the straight-line run of instructions
//! from a guest EIP to the first control transfer (or the end of the page), decoded
//! once by iced-x86 and cached. A cached block is keyed by its guest virtual address
//! and carries the physical frames its bytes came from; it is used only while the
//! address still maps those frames, so the cache is correct across `exec`, `mmap` and
//! process switches without being flushed.
//!
//! Every instruction either completes (registers, flags and memory all updated, EIP
//! advanced) or faults with *nothing* changed and EIP at the instruction: memory is
//! written before registers wherever an instruction does both.

use std::rc::Rc;

use iced_x86::{
    Code, ConditionCode, Decoder, DecoderError, DecoderOptions, FlowControl, Instruction, InstructionInfoFactory,
    Mnemonic as M, OpAccess, OpKind, Register,
};
use morph_mem::{AddressSpace, Frame, MemFault, PAGE_SIZE};

use crate::alu::{self, Shift, mask};
use crate::host;
use crate::isa::{Support, support};
use crate::state::flags::{AF, ARITH, CF, DF, FIXED, IF, OF, PF, SF, TF, USER_WRITABLE, ZF};
use crate::state::{Cpu, reg, seg};
use crate::x87::HostFpu;

/// Why execution stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Exit {
    /// `int 0x80` was executed; EIP is past it.
    Syscall,
    /// The guest faulted; EIP and registers are those of the faulting instruction
    /// (for traps such as `int3`, EIP is past it, as on hardware).
    Fault(Fault),
    /// The instruction budget was used up.
    Budget,
}

/// A guest exception.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fault {
    /// What happened.
    pub kind: FaultKind,
    /// EIP of the instruction.
    pub eip: u32,
}

/// The guest exceptions morph raises.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FaultKind {
    /// `#PF`: a bad memory access (including instruction fetch).
    Page(MemFault),
    /// `#DE`: divide by zero or quotient overflow.
    DivideError,
    /// `#UD`: an invalid or unsupported instruction; the bytes at EIP.
    InvalidOpcode(Vec<u8>),
    /// `#GP` with its error code: 0 for a privileged instruction or a bad selector,
    /// `(n << 3) | 2` for `int n` through a gate user mode may not use (all but 3, 4 and
    /// 0x80 under Linux).
    GeneralProtection(u16),
    /// `#BP`: `int3` (a trap: EIP is past the instruction).
    Breakpoint,
    /// `#OF`: `into` with OF set (a trap).
    Overflow,
    /// `#BR`: `bound` out of range.
    Bound,
    /// `#MF`: an unmasked x87 exception is pending.
    Fpu,
    /// `#DB` from EFLAGS.TF: a trap after an instruction that began with TF set (EIP is
    /// the next instruction's).
    SingleStep,
}

impl FaultKind {
    /// The exception vector.
    pub fn vector(&self) -> u32 {
        match self {
            FaultKind::DivideError => 0,
            FaultKind::SingleStep => 1,
            FaultKind::Breakpoint => 3,
            FaultKind::Overflow => 4,
            FaultKind::Bound => 5,
            FaultKind::InvalidOpcode(_) => 6,
            FaultKind::GeneralProtection(_) => 13,
            FaultKind::Page(_) => 14,
            FaultKind::Fpu => 16,
        }
    }

    /// Whether it is a trap, reported after its instruction retired (EIP past it).
    pub fn is_trap(&self) -> bool {
        matches!(self, FaultKind::Breakpoint | FaultKind::Overflow | FaultKind::SingleStep)
    }
}

/// Interpreter counters.
#[derive(Clone, Copy, Debug, Default)]
pub struct InterpStats {
    /// Guest instructions executed by the interpreter.
    pub instructions: u64,
    /// Blocks decoded.
    pub blocks_decoded: u64,
    /// Guest instructions decoded.
    pub instructions_decoded: u64,
    /// Decoded blocks dropped because their code was written.
    pub blocks_invalidated: u64,
    /// Block entries at another virtual address than the block was decoded at (run
    /// there without decoding again).
    pub blocks_rebased: u64,
    /// Instructions executed on the host FPU.
    pub fpu_instructions: u64,
}

/// A decoded instruction. The fields a run reads first lead (`repr(C)` keeps the
/// order): the class, the pre-decoded form and the start of the `Instruction` (its next
/// IP) share the first cache line.
#[repr(C)]
struct Decoded {
    class: Support,
    /// May write memory (and so rewrite code): only then is the code epoch checked
    /// after it.
    writes: bool,
    /// The pre-decoded form of a common integer instruction (see `fast`).
    fast: Option<Fast>,
    ins: Instruction,
}

/// A decoded basic block.
struct Block {
    /// Virtual address of the first byte (as decoded).
    start: u32,
    /// Frame of the first byte and of the last byte.
    frames: [Frame; 2],
    /// Virtual address of the last byte (as decoded).
    last: u32,
    /// Has a 16-bit relative branch, whose target wraps at 64 KiB: runs only where it
    /// was decoded.
    wraps16: bool,
    instrs: Box<[Decoded]>,
}

impl Block {
    /// Whether this block, decoded at `start`, is the code at `eip` in `mem`: the same
    /// frames under both ends (a block moved by ASLR runs rebased by `eip - start`,
    /// unless it has a 16-bit branch, whose target wraps at 64 KiB).
    #[inline]
    fn fits(&self, eip: u32, mem: &AddressSpace) -> bool {
        let delta = eip.wrapping_sub(self.start);
        let (p0, p1) = (mem.pte(eip), mem.pte(self.last.wrapping_add(delta)));
        p0.readable()
            && p0.frame() == self.frames[0]
            && p1.readable()
            && p1.frame() == self.frames[1]
            && (delta == 0 || !self.wraps16)
    }
}

const MAX_BLOCK: usize = 128;
/// The longest x86 instruction, in bytes.
pub const MAX_INSN_LEN: u32 = 15;

/// What decoding a block from fetched bytes gave.
enum Fetched {
    /// The block's instructions and the address of its last byte.
    Block(Vec<Decoded>, u32),
    /// Its first instruction runs into an unreadable page.
    Truncated,
    /// It runs past the bytes fetched, and there are more to fetch.
    Short,
}
/// Bytes fetched to decode a block before fetching more (most blocks fit).
const FETCH_FIRST: u32 = 96;

/// A decoded block as a caller keeps it beside its own per-address data (the engine,
/// beside each key's profile count), so that running it again needs no lookup in the
/// interpreter's cache. Valid until the interpreter next drops blocks for written code.
pub struct CachedBlock {
    block: Rc<Block>,
    generation: u32,
}

impl CachedBlock {
    /// The addresses a run of this block reads first (the block and its instructions),
    /// for a caller to prefetch before it runs the block again. Only hints: they may be
    /// stale by then, which a prefetch tolerates.
    pub fn prefetch_hint(&self) -> [*const u8; 2] {
        [Rc::as_ptr(&self.block).cast(), self.block.instrs.as_ptr().cast()]
    }
}

/// The interpreter and its decoded-block cache.
pub struct Interp {
    /// Decoded blocks by physical address (frame, offset in the page): position
    /// independent (see `Ctx::delta`), so a library's code is decoded once for every
    /// process, wherever ASLR maps it.
    blocks: rustc_hash::FxHashMap<(u32, u32), Rc<Block>>,
    /// Bumped whenever blocks are dropped for written code (invalidates `CachedBlock`s).
    generation: u32,
    epoch: u64,
    fpu: HostFpu,
    info: InstructionInfoFactory,
    /// How each x87/MMX instruction form accesses its memory operand.
    access: rustc_hash::FxHashMap<iced_x86::Code, OpAccess>,
    /// Counters.
    pub stats: InterpStats,
}

mod fast;
use fast::Fast;

type Res<T> = Result<T, Exit>;

fn page_fault(eip: u32) -> impl Fn(MemFault) -> Exit {
    move |f| Exit::Fault(Fault { kind: FaultKind::Page(f), eip })
}

fn fault(kind: FaultKind, eip: u32) -> Exit {
    Exit::Fault(Fault { kind, eip })
}

// ----- registers -------------------------------------------------------------------

#[inline]
fn reg_index(r: Register, base: Register) -> usize {
    (r as usize).wrapping_sub(base as usize)
}

/// Reads a general-purpose or segment register.
#[inline]
fn get_reg(cpu: &Cpu, r: Register) -> u32 {
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
fn set_reg(cpu: &mut Cpu, r: Register, v: u32) {
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

fn reg_bits(r: Register) -> u32 {
    (r.size() * 8) as u32
}

fn cond(eflags: u32, cc: ConditionCode) -> bool {
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

fn set_arith(cpu: &mut Cpu, f: u32) {
    cpu.eflags = (cpu.eflags & !ARITH) | (f & ARITH);
}

/// The effective (linear) address of the memory operand, segment base included.
#[inline]
fn ea(cpu: &Cpu, ins: &Instruction) -> u32 {
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
fn seg_base(cpu: &Cpu, s: Register) -> u32 {
    match s {
        Register::FS => cpu.seg_base[seg::FS],
        Register::GS => cpu.seg_base[seg::GS],
        _ => 0,
    }
}

fn read_sized(mem: &AddressSpace, a: u32, bits: u32) -> Result<u32, MemFault> {
    match bits {
        8 => mem.read_u8(a).map(u32::from),
        16 => mem.read_u16(a).map(u32::from),
        _ => mem.read_u32(a),
    }
}

fn write_sized(mem: &mut AddressSpace, a: u32, bits: u32, v: u32) -> Result<(), MemFault> {
    match bits {
        8 => mem.write_u8(a, v as u8),
        16 => mem.write_u16(a, v as u16),
        _ => mem.write_u32(a, v),
    }
}

/// Operand size in bits of operand `i`.
fn op_bits(ins: &Instruction, i: u32) -> u32 {
    match ins.op_kind(i) {
        OpKind::Register => reg_bits(ins.op_register(i)),
        OpKind::Memory => (ins.memory_size().size() * 8) as u32,
        OpKind::Immediate8 => 8,
        OpKind::Immediate16 | OpKind::Immediate8to16 => 16,
        _ => 32,
    }
}

/// The execution context of one instruction.
struct Ctx<'a> {
    cpu: &'a mut Cpu,
    mem: &'a mut AddressSpace,
    ins: &'a Instruction,
    /// Where the instruction runs minus where it was decoded: decoded blocks are kept
    /// by physical address and run wherever they are mapped, so every address the
    /// instruction's own position implies (its EIP, the next EIP, a relative branch
    /// target) is the decoded one plus `delta`.
    delta: u32,
}

impl Ctx<'_> {
    /// The instruction's address.
    fn ip(&self) -> u32 {
        self.ins.ip32().wrapping_add(self.delta)
    }

    /// The address after the instruction.
    fn next_ip(&self) -> u32 {
        self.ins.next_ip32().wrapping_add(self.delta)
    }

    /// The target of a relative branch.
    fn target(&self) -> u32 {
        (self.ins.near_branch_target() as u32).wrapping_add(self.delta)
    }

    fn pf(&self) -> impl Fn(MemFault) -> Exit + use<> {
        page_fault(self.ip())
    }

    fn fault(&self, kind: FaultKind) -> Exit {
        fault(kind, self.ip())
    }

    fn read(&self, i: u32, bits: u32) -> Res<u32> {
        match self.ins.op_kind(i) {
            OpKind::Register => Ok(get_reg(self.cpu, self.ins.op_register(i))),
            OpKind::Memory => read_sized(self.mem, ea(self.cpu, self.ins), bits).map_err(self.pf()),
            _ => Ok(self.ins.immediate(i) as u32 & mask(bits)),
        }
    }

    fn write(&mut self, i: u32, bits: u32, v: u32) -> Res<()> {
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

    fn push(&mut self, bits: u32, v: u32) -> Res<()> {
        let sp = self.cpu.gpr[reg::ESP].wrapping_sub(bits / 8);
        write_sized(self.mem, sp, bits, v).map_err(self.pf())?;
        self.cpu.gpr[reg::ESP] = sp;
        Ok(())
    }

    /// Reads the top of the stack without popping.
    fn peek(&self, bits: u32, offset: u32) -> Res<u32> {
        read_sized(self.mem, self.cpu.gpr[reg::ESP].wrapping_add(offset), bits).map_err(self.pf())
    }

    fn pop(&mut self, bits: u32) -> Res<u32> {
        let v = self.peek(bits, 0)?;
        self.cpu.gpr[reg::ESP] = self.cpu.gpr[reg::ESP].wrapping_add(bits / 8);
        Ok(v)
    }
}

/// How control continues after an instruction.
enum Flow {
    Next,
    Jump(u32),
}

impl Interp {
    /// A new interpreter with an empty block cache.
    pub fn new() -> Self {
        Interp {
            blocks: rustc_hash::FxHashMap::default(),
            generation: 0,
            epoch: 0,
            fpu: HostFpu::new(),
            info: InstructionInfoFactory::new(),
            access: rustc_hash::FxHashMap::default(),
            stats: InterpStats::default(),
        }
    }

    /// Drops every cached block (e.g. when the guest's code is replaced wholesale).
    pub fn flush(&mut self) {
        self.blocks.clear();
        self.generation = self.generation.wrapping_add(1);
    }

    /// Drops blocks whose frames were written since the last check.
    fn sync_code(&mut self, mem: &AddressSpace) {
        let phys = mem.phys();
        self.epoch = phys.code_epoch();
        let dirty = phys.take_dirty_code();
        self.invalidate_frames(mem, &dirty);
    }

    /// Drops the blocks decoded from `dirty` frames (the caller drained them from
    /// physical memory, e.g. the translator, which invalidates its own code too).
    pub fn invalidate_frames(&mut self, mem: &AddressSpace, dirty: &[Frame]) {
        let phys = mem.phys();
        self.epoch = phys.code_epoch();
        if dirty.is_empty() {
            return;
        }
        let before = self.blocks.len();
        self.generation = self.generation.wrapping_add(1);
        self.blocks.retain(|_, b| !dirty.contains(&b.frames[0]) && !dirty.contains(&b.frames[1]));
        self.stats.blocks_invalidated += (before - self.blocks.len()) as u64;
        // Frames still holding other blocks keep their code bit.
        for b in self.blocks.values() {
            for f in b.frames {
                if dirty.contains(&f) {
                    phys.set_code(f);
                }
            }
        }
    }

    /// The decoded block at `eip`, found by physical address (decoded once, wherever
    /// and in whichever process the code is mapped) or decoded now.
    fn block(&mut self, eip: u32, mem: &mut AddressSpace) -> Res<Rc<Block>> {
        let first = mem.pte(eip);
        let key = (first.frame().0, eip & (PAGE_SIZE - 1));
        if first.readable()
            && let Some(b) = self.blocks.get(&key)
            && b.fits(eip, mem)
        {
            if eip != b.start {
                self.stats.blocks_rebased += 1;
            }
            return Ok(b.clone());
        }
        let b = Rc::new(self.decode(eip, mem)?);
        self.blocks.insert(key, b.clone());
        Ok(b)
    }

    /// The block at `eip` from the caller's `cache` if it holds it, else as `block`
    /// finds it (and then kept in `cache`).
    fn block_cached(&mut self, eip: u32, mem: &mut AddressSpace, cache: &mut Option<CachedBlock>) -> Res<Rc<Block>> {
        if let Some(c) = cache
            && c.generation == self.generation
            && c.block.fits(eip, mem)
        {
            if eip != c.block.start {
                self.stats.blocks_rebased += 1;
            }
            return Ok(c.block.clone());
        }
        let b = self.block(eip, mem)?;
        *cache = Some(CachedBlock { block: b.clone(), generation: self.generation });
        Ok(b)
    }

    fn decode(&mut self, eip: u32, mem: &mut AddressSpace) -> Res<Block> {
        let fetch = page_fault(eip);
        let first = mem.pte(eip);
        if !first.readable() {
            return Err(fetch(mem.check_read(eip, 1).expect_err("unreadable page")));
        }
        let page_end = (eip | (PAGE_SIZE - 1)).wrapping_add(1);
        let mut avail = page_end.wrapping_sub(eip).max(if page_end == 0 { 0u32.wrapping_sub(eip) } else { 0 });
        if page_end != 0 && mem.pte(page_end).readable() {
            avail += MAX_INSN_LEN; // an instruction may straddle into the next page
        }
        // Fetch a little and decode; fetch more only if the block runs past it (a block
        // is a few instructions: copying the rest of its page each time would stream
        // megabytes through the host cache).
        let mut want = avail.min(FETCH_FIRST);
        let (instrs, last) = loop {
            let mut bytes = vec![0u8; want as usize];
            mem.read_bytes(eip, &mut bytes).map_err(&fetch)?;
            match self.decode_from(&bytes, eip, page_end, want == avail) {
                Fetched::Block(instrs, last) => break (instrs, last),
                Fetched::Truncated => {
                    return Err(fetch(mem.check_read(eip, MAX_INSN_LEN + 1).expect_err("truncated instruction")));
                }
                Fetched::Short => want = avail.min(want * 8),
            }
        };
        // Read after the fetch, which gave a demand-zero page its frame.
        let frames = [mem.pte(eip).frame(), mem.pte(last).frame()];
        mem.mark_code(eip);
        mem.mark_code(last);
        self.stats.blocks_decoded += 1;
        self.stats.instructions_decoded += instrs.len() as u64;
        let wraps16 = instrs.iter().any(|d| d.ins.op0_kind() == OpKind::NearBranch16);
        Ok(Block { start: eip, frames, last, wraps16, instrs: instrs.into_boxed_slice() })
    }

    /// Decodes the block at `eip` from `bytes` (fetched from there, `all` there is to
    /// fetch or not).
    fn decode_from(&mut self, bytes: &[u8], eip: u32, page_end: u32, all: bool) -> Fetched {
        let mut dec = Decoder::with_ip(32, bytes, u64::from(eip), DecoderOptions::NONE);
        let mut instrs = Vec::new();
        let mut last = eip;
        while instrs.len() < MAX_BLOCK {
            let at = dec.ip() as u32;
            if at.wrapping_sub(eip) >= page_end.wrapping_sub(eip) && !instrs.is_empty() {
                break; // the next instruction starts on the next page: a new block
            }
            let ins = dec.decode();
            if ins.is_invalid() && dec.last_error() == DecoderError::NoMoreBytes {
                if !all {
                    return Fetched::Short;
                }
                if instrs.is_empty() {
                    return Fetched::Truncated;
                }
                break;
            }
            let class = support(&ins);
            last = ins.next_ip32().wrapping_sub(1);
            let end = matches!(class, Support::Invalid | Support::System) || ins.flow_control() != FlowControl::Next;
            let writes = class == Support::Invalid
                || self.info.info(&ins).used_memory().iter().any(|m| {
                    !matches!(m.access(), OpAccess::Read | OpAccess::CondRead | OpAccess::NoMemAccess | OpAccess::None)
                });
            let fast = if class == Support::Int { fast::form(&ins) } else { None };
            instrs.push(Decoded { ins, class, fast, writes });
            if end {
                break;
            }
        }
        Fetched::Block(instrs, last)
    }

    /// Runs the guest until a system call, a fault, or about `budget` instructions.
    pub fn run(&mut self, cpu: &mut Cpu, mem: &mut AddressSpace, budget: u64) -> Exit {
        let start = cpu.icount;
        while cpu.icount.wrapping_sub(start) < budget {
            if let Err(e) = self.run_block(cpu, mem) {
                return e;
            }
        }
        Exit::Budget
    }

    /// Executes the block at `cpu.eip` (or its rest, if it rewrites itself), leaving EIP
    /// at the next instruction to run.
    pub fn run_block(&mut self, cpu: &mut Cpu, mem: &mut AddressSpace) -> Result<(), Exit> {
        self.run_block_cached(cpu, mem, &mut None)
    }

    /// As `run_block`, taking the block from (and leaving it in) the caller's `cache`.
    pub fn run_block_cached(
        &mut self,
        cpu: &mut Cpu,
        mem: &mut AddressSpace,
        cache: &mut Option<CachedBlock>,
    ) -> Result<(), Exit> {
        if mem.phys().code_epoch() != self.epoch {
            self.sync_code(mem);
        }
        if cpu.eflags & TF != 0 {
            return self.run_traced(cpu, mem, cache);
        }
        let start = cpu.icount;
        let block = self.block_cached(cpu.eip, mem, cache)?;
        let delta = cpu.eip.wrapping_sub(block.start);
        let mut result = Ok(());
        for d in block.instrs.iter() {
            // A pre-decoded form (integer instructions only) runs inline; the rest
            // through `exec`.
            let r = match d.fast {
                Some(f) => fast::exec(cpu, mem, f, &d.ins, delta),
                None => self.exec(cpu, mem, d, delta),
            };
            match r {
                Ok(Flow::Next) => {
                    cpu.eip = d.ins.next_ip32().wrapping_add(delta);
                    cpu.icount += 1;
                }
                Ok(Flow::Jump(t)) => {
                    cpu.eip = t;
                    cpu.icount += 1;
                    break;
                }
                Err(e) => {
                    // Traps and system calls retire their instruction; faults do not.
                    if let Exit::Syscall
                    | Exit::Fault(Fault { kind: FaultKind::Breakpoint | FaultKind::Overflow, .. }) = e
                    {
                        cpu.icount += 1;
                    }
                    result = Err(e);
                    break;
                }
            }
            if d.writes && mem.phys().code_epoch() != self.epoch {
                break; // the block may have rewritten itself: decode afresh
            }
        }
        self.stats.instructions += cpu.icount - start;
        result
    }

    /// With EFLAGS.TF set: runs the first instruction of the block at EIP, then traps
    /// (`#DB`, EIP at the next instruction). Blocks are entered here only while TF is
    /// set (`popf` and `iret` that set it end their block), so tracing costs the untraced
    /// path one test per block. As under Linux, an instruction that ends in a system
    /// call, a fault or another trap reports only that: `int` clears TF on its way
    /// through the gate, and TF comes back with the return to user mode.
    fn run_traced(
        &mut self,
        cpu: &mut Cpu,
        mem: &mut AddressSpace,
        cache: &mut Option<CachedBlock>,
    ) -> Result<(), Exit> {
        let block = self.block_cached(cpu.eip, mem, cache)?;
        let delta = cpu.eip.wrapping_sub(block.start);
        let d = &block.instrs[0];
        let r = self.exec(cpu, mem, d, delta);
        let retired = match &r {
            Ok(_) => true,
            Err(Exit::Fault(f)) => f.kind.is_trap(),
            Err(e) => *e == Exit::Syscall,
        };
        if retired {
            cpu.icount += 1;
            self.stats.instructions += 1;
        }
        match r? {
            Flow::Next => cpu.eip = d.ins.next_ip32().wrapping_add(delta),
            Flow::Jump(t) => cpu.eip = t,
        }
        Err(fault(FaultKind::SingleStep, cpu.eip))
    }

    /// Executes one instruction (also used by the translator for instructions it
    /// leaves to the interpreter). On `Ok`, the caller sets EIP.
    fn exec(&mut self, cpu: &mut Cpu, mem: &mut AddressSpace, d: &Decoded, delta: u32) -> Res<Flow> {
        match d.class {
            Support::Int => match d.fast {
                Some(f) => fast::exec(cpu, mem, f, &d.ins, delta),
                None => exec_int(&mut Ctx { cpu, mem, ins: &d.ins, delta }),
            },
            Support::Fpu | Support::Mmx => self.exec_fpu(&mut Ctx { cpu, mem, ins: &d.ins, delta }, d.class),
            Support::Nop => Ok(Flow::Next),
            Support::System => Err(fault(FaultKind::GeneralProtection(0), d.ins.ip32().wrapping_add(delta))),
            Support::Invalid => Err(invalid(mem, &d.ins, delta)),
        }
    }

    /// Executes a single decoded instruction at `cpu.eip` (used by tests and the
    /// translator's fallback). Updates EIP and the instruction count.
    pub fn step(&mut self, cpu: &mut Cpu, mem: &mut AddressSpace, ins: &Instruction) -> Result<(), Exit> {
        let d = Decoded { ins: *ins, class: support(ins), fast: None, writes: true };
        let r = self.exec(cpu, mem, &d, 0);
        if let Err(Exit::Syscall | Exit::Fault(Fault { kind: FaultKind::Breakpoint | FaultKind::Overflow, .. })) = r {
            cpu.icount += 1;
            self.stats.instructions += 1;
        }
        match r? {
            Flow::Next => cpu.eip = ins.next_ip32(),
            Flow::Jump(t) => cpu.eip = t,
        }
        cpu.icount += 1;
        self.stats.instructions += 1;
        Ok(())
    }

    fn exec_fpu(&mut self, c: &mut Ctx<'_>, _class: Support) -> Res<Flow> {
        let ins = c.ins;
        self.stats.fpu_instructions += 1;
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
            let access = match self.access.get(&ins.code()) {
                Some(&a) => a,
                None => {
                    let a = self.info.info(ins).used_memory().first().map_or(OpAccess::Read, |m| m.access());
                    self.access.insert(ins.code(), a);
                    a
                }
            };
            match access {
                OpAccess::Write | OpAccess::ReadWrite | OpAccess::CondWrite | OpAccess::ReadCondWrite => {
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

impl Default for Interp {
    fn default() -> Self {
        Self::new()
    }
}

fn invalid(mem: &AddressSpace, ins: &Instruction, delta: u32) -> Exit {
    let ip = ins.ip32().wrapping_add(delta);
    let mut bytes = vec![0u8; ins.len().max(1)];
    if mem.read_bytes(ip, &mut bytes).is_err() {
        bytes.clear();
    }
    fault(FaultKind::InvalidOpcode(bytes), ip)
}

fn alu_op(m: M, a: u32, b: u32, bits: u32, eflags: u32) -> (u32, u32) {
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

fn exec_int(c: &mut Ctx<'_>) -> Res<Flow> {
    let ins = c.ins;
    let m = ins.mnemonic();
    if ins.is_jcc_short_or_near() {
        return Ok(if cond(c.cpu.eflags, ins.condition_code()) { Flow::Jump(c.target()) } else { Flow::Next });
    }
    let cc = ins.condition_code();
    if cc != ConditionCode::None && ins.op_count() == 1 && !ins.is_loopcc() {
        let v = u32::from(cond(c.cpu.eflags, ins.condition_code()));
        c.write(0, 8, v)?;
        return Ok(Flow::Next);
    }
    if cc != ConditionCode::None && ins.op_count() == 2 {
        let bits = op_bits(ins, 0);
        // The source is read (and may fault) even when the condition is false.
        let v = c.read(1, bits)?;
        if cond(c.cpu.eflags, ins.condition_code()) {
            c.write(0, bits, v)?;
        }
        return Ok(Flow::Next);
    }
    match m {
        // `fwait` raises a pending unmasked x87 exception (#MF).
        M::Wait if c.cpu.fpu.pending_exception() => return Err(c.fault(FaultKind::Fpu)),
        M::Wait => {}
        M::Mov => {
            let bits = op_bits(ins, 0);
            let k0 = ins.op_kind(0);
            if k0 == OpKind::Register && ins.op0_register().is_segment_register() {
                let v = c.read(1, 16)?;
                let s = reg_index(ins.op0_register(), Register::ES);
                if s == seg::CS || !c.cpu.load_segment(s, v as u16) {
                    return Err(c.fault(FaultKind::GeneralProtection(0)));
                }
            } else if ins.op_kind(1) == OpKind::Register && ins.op1_register().is_segment_register() {
                let v = get_reg(c.cpu, ins.op1_register());
                // To a register: zero-extended; to memory: 16 bits.
                let bits = if k0 == OpKind::Register { reg_bits(ins.op0_register()) } else { 16 };
                c.write(0, bits, v)?;
            } else {
                let v = c.read(1, bits)?;
                c.write(0, bits, v)?;
            }
        }
        M::Movzx | M::Movsx => {
            let sbits = op_bits(ins, 1);
            let v = c.read(1, sbits)?;
            let v = if m == M::Movsx {
                if sbits == 8 { v as u8 as i8 as i32 as u32 } else { v as u16 as i16 as i32 as u32 }
            } else {
                v
            };
            let dbits = op_bits(ins, 0);
            c.write(0, dbits, v & mask(dbits))?;
        }
        M::Lea => {
            // The offset only: no segment base.
            let mut a = ea(c.cpu, ins).wrapping_sub(seg_base(c.cpu, ins.memory_segment()));
            if op_bits(ins, 0) == 16 {
                a &= 0xffff;
            }
            let bits = op_bits(ins, 0);
            c.write(0, bits, a)?;
        }
        M::Xchg => {
            let bits = op_bits(ins, 0);
            let a = c.read(0, bits)?;
            let b = c.read(1, bits)?;
            // Memory operand first, so a fault leaves registers untouched.
            if ins.op_kind(1) == OpKind::Memory {
                c.write(1, bits, a)?;
                c.write(0, bits, b)?;
            } else {
                c.write(0, bits, b)?;
                c.write(1, bits, a)?;
            }
        }
        M::Add | M::Or | M::Adc | M::Sbb | M::And | M::Sub | M::Xor | M::Cmp | M::Test => {
            let bits = op_bits(ins, 0);
            let a = c.read(0, bits)?;
            let b = c.read(1, bits)?;
            let (r, f) = alu_op(m, a, b, bits, c.cpu.eflags);
            if m != M::Cmp && m != M::Test {
                c.write(0, bits, r)?;
            }
            set_arith(c.cpu, f);
        }
        M::Inc | M::Dec => {
            let bits = op_bits(ins, 0);
            let a = c.read(0, bits)?;
            let (r, f) = if m == M::Inc { alu::add(a, 1, false, bits) } else { alu::sub(a, 1, false, bits) };
            c.write(0, bits, r)?;
            set_arith(c.cpu, (f & !CF) | (c.cpu.eflags & CF));
        }
        M::Neg => {
            let bits = op_bits(ins, 0);
            let a = c.read(0, bits)?;
            let (r, f) = alu::sub(0, a, false, bits);
            c.write(0, bits, r)?;
            set_arith(c.cpu, f);
        }
        M::Not => {
            let bits = op_bits(ins, 0);
            let a = c.read(0, bits)?;
            c.write(0, bits, !a & mask(bits))?;
        }
        M::Mul | M::Imul if ins.op_count() == 1 => mul1(c, m == M::Imul)?,
        M::Imul => {
            let bits = op_bits(ins, 0);
            let (a, b) = if ins.op_count() == 3 {
                (c.read(1, bits)?, c.read(2, bits)?)
            } else {
                (c.read(0, bits)?, c.read(1, bits)?)
            };
            let sx = |v: u32| -> i64 { if bits == 16 { i64::from(v as u16 as i16) } else { i64::from(v as i32) } };
            let full = sx(a) * sx(b);
            let r = full as u32 & mask(bits);
            c.write(0, bits, r)?;
            // CF = OF = the product does not fit; SF, ZF, AF, PF undefined: the host's.
            set_arith(c.cpu, host::imul_flags(a, b, bits, c.cpu.eflags));
        }
        M::Div | M::Idiv => div(c, m == M::Idiv)?,
        M::Shl | M::Sal | M::Shr | M::Sar | M::Rol | M::Ror | M::Rcl | M::Rcr => {
            let bits = op_bits(ins, 0);
            let a = c.read(0, bits)?;
            let count = if ins.op_count() == 1 { 1 } else { c.read(1, 8)? };
            let op = match m {
                M::Shl | M::Sal => Shift::Shl,
                M::Shr => Shift::Shr,
                M::Sar => Shift::Sar,
                M::Rol => Shift::Rol,
                M::Ror => Shift::Ror,
                M::Rcl => Shift::Rcl,
                _ => Shift::Rcr,
            };
            // A zero count (masked to 5 bits) changes nothing; any other runs on the
            // host, whose undefined flags the translated instruction gives too.
            if count & 0x1f != 0 {
                // SHR and SAR: the host's undefined flags (AF = 0, OF as for a count of
                // 1) are what `alu::shift` computes (checked by dbt's undefined.rs), and
                // the Rust path spares the host's slow `popfq`.
                let (r, f) = if matches!(op, Shift::Shr | Shift::Sar) {
                    alu::shift(op, a, count, bits, c.cpu.eflags).unwrap_or((a, c.cpu.eflags))
                } else if ins.op_count() == 2 && ins.op_kind(1) != OpKind::Register {
                    host::shift_imm(op, a, count as u8, bits, c.cpu.eflags)
                } else {
                    host::shift(op, a, count as u8, bits, c.cpu.eflags)
                };
                c.write(0, bits, r & mask(bits))?;
                set_arith(c.cpu, f);
            }
        }
        M::Shld | M::Shrd => {
            let bits = op_bits(ins, 0);
            let a = c.read(0, bits)?;
            let b = c.read(1, bits)?;
            let count = c.read(2, 8)?;
            if count & 0x1f != 0 {
                let (r, f) = host::double_shift(m == M::Shld, a, b, count as u8, bits, c.cpu.eflags);
                c.write(0, bits, r & mask(bits))?;
                set_arith(c.cpu, f);
            }
        }
        M::Bt | M::Bts | M::Btr | M::Btc => bit_test(c)?,
        M::Bsf | M::Bsr | M::Tzcnt | M::Lzcnt => {
            let bits = op_bits(ins, 0);
            let v = c.read(1, bits)?;
            let old = c.read(0, bits)?;
            // The flags but ZF, and the destination for a zero source, are the host's.
            let (r, f) = host::bit_scan(matches!(m, M::Bsf | M::Tzcnt), old, v, bits, c.cpu.eflags);
            c.write(0, bits, r & mask(bits))?;
            set_arith(c.cpu, f);
        }
        M::Bswap => {
            let v = get_reg(c.cpu, ins.op0_register());
            set_reg(c.cpu, ins.op0_register(), if op_bits(ins, 0) == 32 { v.swap_bytes() } else { 0 });
        }
        M::Xadd => {
            let bits = op_bits(ins, 0);
            let a = c.read(0, bits)?;
            let b = c.read(1, bits)?;
            let (r, f) = alu::add(a, b, false, bits);
            // TEMP = SRC + DEST; SRC = DEST; DEST = TEMP (so `xadd r, r` keeps the sum).
            // A memory destination is written first, so a fault changes no register.
            if ins.op_kind(0) == OpKind::Memory {
                c.write(0, bits, r)?;
                c.write(1, bits, a)?;
            } else {
                c.write(1, bits, a)?;
                c.write(0, bits, r)?;
            }
            set_arith(c.cpu, f);
        }
        M::Cmpxchg => {
            let bits = op_bits(ins, 0);
            let d = c.read(0, bits)?;
            let acc = c.cpu.gpr[reg::EAX] & mask(bits);
            let (_, f) = alu::sub(acc, d, false, bits);
            if acc == d {
                let s = c.read(1, bits)?;
                c.write(0, bits, s)?;
            } else {
                c.write(0, bits, d)?; // the destination is always written
                let acc_reg = match bits {
                    8 => Register::AL,
                    16 => Register::AX,
                    _ => Register::EAX,
                };
                set_reg(c.cpu, acc_reg, d);
            }
            set_arith(c.cpu, f);
        }
        M::Cmpxchg8b => {
            let a = ea(c.cpu, ins);
            let v = c.mem.read_u64(a).map_err(c.pf())?;
            let edx_eax = (u64::from(c.cpu.gpr[reg::EDX]) << 32) | u64::from(c.cpu.gpr[reg::EAX]);
            if v == edx_eax {
                let n = (u64::from(c.cpu.gpr[reg::ECX]) << 32) | u64::from(c.cpu.gpr[reg::EBX]);
                c.mem.write_u64(a, n).map_err(c.pf())?;
                c.cpu.eflags |= ZF;
            } else {
                c.mem.write_u64(a, v).map_err(c.pf())?;
                c.cpu.gpr[reg::EAX] = v as u32;
                c.cpu.gpr[reg::EDX] = (v >> 32) as u32;
                c.cpu.eflags &= !ZF;
            }
        }
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
            c.push(bits, v)?;
        }
        M::Pop => {
            let k = ins.op_kind(0);
            if k == OpKind::Register && ins.op0_register().is_segment_register() {
                let bits = if ins.stack_pointer_increment() == 2 { 16 } else { 32 };
                let v = c.peek(bits, 0)?;
                let s = reg_index(ins.op0_register(), Register::ES);
                if !c.cpu.load_segment(s, v as u16) {
                    return Err(c.fault(FaultKind::GeneralProtection(0)));
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
            let mut vals = [0u32; 8];
            for (i, v) in vals.iter_mut().enumerate() {
                *v = read_sized(c.mem, sp.wrapping_add((7 - i as u32) * n), bits).map_err(c.pf())?;
            }
            for (i, v) in vals.iter().enumerate() {
                if i != reg::ESP {
                    let r = if bits == 32 { Register::EAX } else { Register::AX };
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
            if c.cpu.eflags & !old & TF != 0 {
                // Single-stepping starts after the next instruction: end the block here
                // so that the next one starts traced (see `run_block_cached`).
                return Ok(Flow::Jump(c.next_ip()));
            }
        }
        M::Cbw => {
            let v = c.cpu.gpr[reg::EAX] as u8 as i8 as i16 as u16 as u32;
            set_reg(c.cpu, Register::AX, v);
        }
        M::Cwde => c.cpu.gpr[reg::EAX] = c.cpu.gpr[reg::EAX] as u16 as i16 as i32 as u32,
        M::Cwd => {
            let v = if c.cpu.gpr[reg::EAX] & 0x8000 != 0 { 0xffff } else { 0 };
            set_reg(c.cpu, Register::DX, v);
        }
        M::Cdq => c.cpu.gpr[reg::EDX] = if c.cpu.gpr[reg::EAX] & 0x8000_0000 != 0 { u32::MAX } else { 0 },
        M::Lahf => {
            let v = (c.cpu.eflags & (SF | ZF | AF | PF | CF)) | FIXED;
            set_reg(c.cpu, Register::AH, v);
        }
        M::Sahf => {
            let ah = (c.cpu.gpr[reg::EAX] >> 8) & (SF | ZF | AF | PF | CF);
            c.cpu.eflags = (c.cpu.eflags & !(SF | ZF | AF | PF | CF)) | ah;
        }
        M::Xlatb => {
            let v = c.mem.read_u8(ea(c.cpu, ins)).map_err(c.pf())?;
            set_reg(c.cpu, Register::AL, u32::from(v));
        }
        M::Clc => c.cpu.eflags &= !CF,
        M::Stc => c.cpu.eflags |= CF,
        M::Cmc => c.cpu.eflags ^= CF,
        M::Cld => c.cpu.eflags &= !DF,
        M::Std => c.cpu.eflags |= DF,
        M::Aaa | M::Aas => {
            let al = c.cpu.gpr[reg::EAX] & 0xff;
            let ax = c.cpu.gpr[reg::EAX] & 0xffff;
            let adjust = (al & 0xf) > 9 || c.cpu.eflags & AF != 0;
            let mut f = c.cpu.eflags & ARITH & !(AF | CF);
            let mut nax = ax;
            if adjust {
                nax =
                    if m == M::Aaa { ax.wrapping_add(0x106) } else { ax.wrapping_sub(6).wrapping_sub(0x100) & 0xffff };
                f |= AF | CF;
            }
            nax = (nax & 0xff0f) & 0xffff;
            set_reg(c.cpu, Register::AX, nax);
            // SF, ZF, PF, OF undefined: computed from AL as P6-family hardware does.
            set_arith(c.cpu, (f & (AF | CF)) | alu::szp(nax & 0xff, 8));
        }
        M::Daa | M::Das => {
            let old_al = c.cpu.gpr[reg::EAX] & 0xff;
            let old_cf = c.cpu.eflags & CF != 0;
            let mut al = old_al;
            let mut cf = false;
            let mut af = false;
            if (al & 0xf) > 9 || c.cpu.eflags & AF != 0 {
                al = if m == M::Daa { al.wrapping_add(6) } else { al.wrapping_sub(6) } & 0xff;
                cf = old_cf || if m == M::Daa { old_al + 6 > 0xff } else { old_al < 6 };
                af = true;
            }
            if old_al > 0x99 || old_cf {
                al = if m == M::Daa { al.wrapping_add(0x60) } else { al.wrapping_sub(0x60) } & 0xff;
                cf = true;
            }
            set_reg(c.cpu, Register::AL, al);
            let mut f = alu::szp(al, 8);
            if cf {
                f |= CF;
            }
            if af {
                f |= AF;
            }
            set_arith(c.cpu, f);
        }
        M::Aam => {
            let base = ins.immediate8() as u32;
            if base == 0 {
                return Err(c.fault(FaultKind::DivideError));
            }
            let al = c.cpu.gpr[reg::EAX] & 0xff;
            let v = ((al / base) << 8) | (al % base);
            set_reg(c.cpu, Register::AX, v);
            set_arith(c.cpu, alu::szp(v & 0xff, 8));
        }
        M::Aad => {
            let base = ins.immediate8() as u32;
            let ax = c.cpu.gpr[reg::EAX];
            let al = ((ax & 0xff) + ((ax >> 8) & 0xff) * base) & 0xff;
            set_reg(c.cpu, Register::AX, al);
            set_arith(c.cpu, alu::szp(al, 8));
        }
        M::Jmp => {
            return Ok(Flow::Jump(match ins.op_kind(0) {
                OpKind::NearBranch32 | OpKind::NearBranch16 => c.target(),
                _ => {
                    let bits = op_bits(ins, 0);
                    c.read(0, bits)?
                }
            }));
        }
        M::Call => {
            let target = match ins.op_kind(0) {
                OpKind::NearBranch32 | OpKind::NearBranch16 => c.target(),
                _ => {
                    let bits = op_bits(ins, 0);
                    c.read(0, bits)?
                }
            };
            c.push(32, c.next_ip())?;
            return Ok(Flow::Jump(target));
        }
        M::Ret => {
            let t = c.peek(32, 0)?;
            let extra = if ins.op_count() == 1 { u32::from(ins.immediate16()) } else { 0 };
            c.cpu.gpr[reg::ESP] = c.cpu.gpr[reg::ESP].wrapping_add(4 + extra);
            return Ok(Flow::Jump(t));
        }
        M::Jecxz | M::Jcxz => {
            let v = if m == M::Jecxz { c.cpu.gpr[reg::ECX] } else { c.cpu.gpr[reg::ECX] & 0xffff };
            return Ok(if v == 0 { Flow::Jump(c.target()) } else { Flow::Next });
        }
        M::Loop | M::Loope | M::Loopne => {
            // The address size picks the counter: CX with the 0x67 prefix, else ECX.
            let ecx = if matches!(
                ins.code(),
                Code::Loop_rel8_16_CX
                    | Code::Loop_rel8_32_CX
                    | Code::Loope_rel8_16_CX
                    | Code::Loope_rel8_32_CX
                    | Code::Loopne_rel8_16_CX
                    | Code::Loopne_rel8_32_CX
            ) {
                let cx = (c.cpu.gpr[reg::ECX] & 0xffff).wrapping_sub(1) & 0xffff;
                set_reg(c.cpu, Register::CX, cx);
                cx
            } else {
                let ecx = c.cpu.gpr[reg::ECX].wrapping_sub(1);
                c.cpu.gpr[reg::ECX] = ecx;
                ecx
            };
            let zf = c.cpu.eflags & ZF != 0;
            let take = ecx != 0
                && match m {
                    M::Loope => zf,
                    M::Loopne => !zf,
                    _ => true,
                };
            return Ok(if take { Flow::Jump(c.target()) } else { Flow::Next });
        }
        M::Enter => enter(c)?,
        M::Leave => {
            let bp = c.cpu.gpr[reg::EBP];
            let v = c.mem.read_u32(bp).map_err(c.pf())?;
            c.cpu.gpr[reg::ESP] = bp.wrapping_add(4);
            c.cpu.gpr[reg::EBP] = v;
        }
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
        M::Retf | M::Iret | M::Iretd => return far_return(c),
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
            let r = crate::cpuid::cpuid(c.cpu.gpr[reg::EAX]);
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
        M::Movsb
        | M::Movsw
        | M::Movsd
        | M::Stosb
        | M::Stosw
        | M::Stosd
        | M::Lodsb
        | M::Lodsw
        | M::Lodsd
        | M::Cmpsb
        | M::Cmpsw
        | M::Cmpsd
        | M::Scasb
        | M::Scasw
        | M::Scasd => string(c)?,
        M::Ud0 | M::Ud1 | M::Ud2 => return Err(invalid(c.mem, ins, c.delta)),
        _ => return Err(invalid(c.mem, ins, c.delta)),
    }
    Ok(Flow::Next)
}

/// `retf` and `iret` at CPL 3. Only a return to the current code segment is modeled (the
/// guest has one, Linux's user CS): any other selector raises `#GP(selector)`, as a
/// null one does on hardware. `iret` loads the flags `popf` may change.
fn far_return(c: &mut Ctx<'_>) -> Res<Flow> {
    let ins = c.ins;
    let bits = match ins.code() {
        Code::Retfw | Code::Retfw_imm16 | Code::Iretw => 16,
        _ => 32,
    };
    let n = bits / 8;
    let iret = ins.mnemonic() != M::Retf;
    let eip = c.peek(bits, 0)?;
    let cs = c.peek(bits, n)? as u16;
    let fl = if iret { c.peek(bits, 2 * n)? } else { 0 };
    if cs != c.cpu.sel[seg::CS] {
        return Err(c.fault(FaultKind::GeneralProtection(cs & !3)));
    }
    let extra = if ins.op_count() == 1 { u32::from(ins.immediate16()) } else { 0 };
    let popped = if iret { 3 * n } else { 2 * n };
    c.cpu.gpr[reg::ESP] = c.cpu.gpr[reg::ESP].wrapping_add(popped + extra);
    if iret {
        let writable = USER_WRITABLE & mask(bits);
        c.cpu.eflags = (c.cpu.eflags & !writable) | (fl & writable) | FIXED | IF;
    }
    Ok(Flow::Jump(eip))
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

fn mul1(c: &mut Ctx<'_>, signed: bool) -> Res<()> {
    let bits = op_bits(c.ins, 0);
    let src = c.read(0, bits)?;
    let eax = c.cpu.gpr[reg::EAX];
    let (lo, hi, over) = match (bits, signed) {
        (8, false) => {
            let r = (eax & 0xff) * src;
            set_reg(c.cpu, Register::AX, r);
            (r & 0xff, r >> 8, r >> 8 != 0)
        }
        (8, true) => {
            let r = i32::from(eax as u8 as i8) * i32::from(src as u8 as i8);
            set_reg(c.cpu, Register::AX, r as u32);
            (r as u32 & 0xff, (r as u32 >> 8) & 0xff, r != i32::from(r as i8))
        }
        (16, false) => {
            let r = (eax & 0xffff) * src;
            set_reg(c.cpu, Register::AX, r);
            set_reg(c.cpu, Register::DX, r >> 16);
            (r & 0xffff, r >> 16, r >> 16 != 0)
        }
        (16, true) => {
            let r = i32::from(eax as u16 as i16) * i32::from(src as u16 as i16);
            set_reg(c.cpu, Register::AX, r as u32);
            set_reg(c.cpu, Register::DX, r as u32 >> 16);
            (r as u32 & 0xffff, (r as u32 >> 16) & 0xffff, r != i32::from(r as i16))
        }
        (_, false) => {
            let r = u64::from(eax) * u64::from(src);
            c.cpu.gpr[reg::EAX] = r as u32;
            c.cpu.gpr[reg::EDX] = (r >> 32) as u32;
            (r as u32, (r >> 32) as u32, r >> 32 != 0)
        }
        (_, true) => {
            let r = i64::from(eax as i32) * i64::from(src as i32);
            c.cpu.gpr[reg::EAX] = r as u32;
            c.cpu.gpr[reg::EDX] = (r >> 32) as u32;
            (r as u32, (r >> 32) as u32, r != i64::from(r as i32))
        }
    };
    let _ = (lo, hi, over);
    // CF = OF = overflow into the high half; SF/ZF/AF/PF are undefined: the host's.
    let f = host::mul_flags(signed, eax & mask(bits), src, bits, c.cpu.eflags);
    set_arith(c.cpu, f);
    Ok(())
}

fn div(c: &mut Ctx<'_>, signed: bool) -> Res<()> {
    let bits = op_bits(c.ins, 0);
    let src = c.read(0, bits)?;
    if src & mask(bits) == 0 {
        return Err(c.fault(FaultKind::DivideError));
    }
    let eax = c.cpu.gpr[reg::EAX];
    let edx = c.cpu.gpr[reg::EDX];
    let de = c.fault(FaultKind::DivideError);
    match (bits, signed) {
        (8, false) => {
            let n = eax & 0xffff;
            let (q, r) = (n / src, n % src);
            if q > 0xff {
                return Err(de);
            }
            set_reg(c.cpu, Register::AX, (r << 8) | q);
        }
        (8, true) => {
            let n = i32::from(eax as u16 as i16);
            let d = i32::from(src as u8 as i8);
            let (q, r) = (n / d, n % d);
            if q != i32::from(q as i8) {
                return Err(de);
            }
            set_reg(c.cpu, Register::AX, ((r as u32 & 0xff) << 8) | (q as u32 & 0xff));
        }
        (16, false) => {
            let n = ((edx & 0xffff) << 16) | (eax & 0xffff);
            let (q, r) = (n / src, n % src);
            if q > 0xffff {
                return Err(de);
            }
            set_reg(c.cpu, Register::AX, q);
            set_reg(c.cpu, Register::DX, r);
        }
        (16, true) => {
            let n = (((edx & 0xffff) << 16) | (eax & 0xffff)) as i32;
            let d = i32::from(src as u16 as i16);
            let (q, r) = (i64::from(n) / i64::from(d), i64::from(n) % i64::from(d));
            if q != i64::from(q as i16) {
                return Err(de);
            }
            set_reg(c.cpu, Register::AX, q as u32);
            set_reg(c.cpu, Register::DX, r as u32);
        }
        (_, false) => {
            let n = (u64::from(edx) << 32) | u64::from(eax);
            let (q, r) = (n / u64::from(src), n % u64::from(src));
            if q > u64::from(u32::MAX) {
                return Err(de);
            }
            c.cpu.gpr[reg::EAX] = q as u32;
            c.cpu.gpr[reg::EDX] = r as u32;
        }
        (_, true) => {
            let n = ((u64::from(edx) << 32) | u64::from(eax)) as i64;
            let d = i64::from(src as i32);
            let (q, r) = (i128::from(n) / i128::from(d), i128::from(n) % i128::from(d));
            if q != i128::from(q as i32) {
                return Err(de);
            }
            c.cpu.gpr[reg::EAX] = q as u32;
            c.cpu.gpr[reg::EDX] = r as u32;
        }
    }
    Ok(())
}

fn bit_test(c: &mut Ctx<'_>) -> Res<()> {
    let ins = c.ins;
    let m = ins.mnemonic();
    let bits = op_bits(ins, 0);
    let (bit, val, addr) = if ins.op_kind(0) == OpKind::Memory && ins.op_kind(1) == OpKind::Register {
        // A register bit offset addresses memory beyond the operand (signed).
        let off = get_reg(c.cpu, ins.op1_register());
        let off = if bits == 16 { off as u16 as i16 as i32 } else { off as i32 };
        let a = ea(c.cpu, ins).wrapping_add(((off >> 3) & !((bits as i32 / 8) - 1)) as u32);
        let bit = (off as u32) & (bits - 1);
        (bit, read_sized(c.mem, a, bits).map_err(c.pf())?, Some(a))
    } else {
        let b = c.read(1, 8.max(op_bits(ins, 1)))? & (bits - 1);
        (b, c.read(0, bits)?, None)
    };
    let cf = (val >> bit) & 1;
    let nv = match m {
        M::Bts => Some(val | (1 << bit)),
        M::Btr => Some(val & !(1 << bit)),
        M::Btc => Some(val ^ (1 << bit)),
        _ => None,
    };
    if let Some(nv) = nv {
        match addr {
            Some(a) => write_sized(c.mem, a, bits, nv).map_err(c.pf())?,
            None => c.write(0, bits, nv)?,
        }
    }
    c.cpu.eflags = (c.cpu.eflags & !CF) | cf;
    Ok(())
}

fn enter(c: &mut Ctx<'_>) -> Res<()> {
    let size = u32::from(c.ins.immediate16());
    let level = u32::from(c.ins.immediate8_2nd()) % 32;
    let esp0 = c.cpu.gpr[reg::ESP];
    let ebp = c.cpu.gpr[reg::EBP];
    let mut sp = esp0.wrapping_sub(4);
    c.mem.write_u32(sp, ebp).map_err(c.pf())?;
    let frame = sp;
    if level > 0 {
        let mut bp = ebp;
        for _ in 1..level {
            bp = bp.wrapping_sub(4);
            let v = c.mem.read_u32(bp).map_err(c.pf())?;
            sp = sp.wrapping_sub(4);
            c.mem.write_u32(sp, v).map_err(c.pf())?;
        }
        sp = sp.wrapping_sub(4);
        c.mem.write_u32(sp, frame).map_err(c.pf())?;
    }
    c.cpu.gpr[reg::EBP] = frame;
    c.cpu.gpr[reg::ESP] = sp.wrapping_sub(size);
    Ok(())
}

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

fn string(c: &mut Ctx<'_>) -> Res<()> {
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
    // The address-size prefix: SI, DI and CX instead of ESI, EDI and ECX (their upper
    // halves kept; the low halves wrap at 64 KiB).
    let a16 = ins.op_kinds().any(|k| matches!(k, OpKind::MemorySegSI | OpKind::MemorySegDI | OpKind::MemoryESDI));
    let width = if a16 { 0xffff } else { u32::MAX };
    let get = |cpu: &Cpu, r: usize| cpu.gpr[r] & width;
    let set = |cpu: &mut Cpu, r: usize, v: u32| cpu.gpr[r] = (cpu.gpr[r] & !width) | (v & width);
    if !a16 && rep && c.cpu.eflags & DF == 0 && bulk(c, m, bits, src_base) {
        return Ok(());
    }
    loop {
        if rep && get(c.cpu, reg::ECX) == 0 {
            break;
        }
        let esi = get(c.cpu, reg::ESI);
        let edi = get(c.cpu, reg::EDI);
        let pf = c.pf();
        match m {
            M::Movsb | M::Movsw | M::Movsd => {
                let v = read_sized(c.mem, esi.wrapping_add(src_base), bits).map_err(&pf)?;
                write_sized(c.mem, edi, bits, v).map_err(&pf)?;
                set(c.cpu, reg::ESI, esi.wrapping_add(step));
                set(c.cpu, reg::EDI, edi.wrapping_add(step));
            }
            M::Stosb | M::Stosw | M::Stosd => {
                write_sized(c.mem, edi, bits, c.cpu.gpr[reg::EAX] & mask(bits)).map_err(&pf)?;
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
                let a = read_sized(c.mem, esi.wrapping_add(src_base), bits).map_err(&pf)?;
                let b = read_sized(c.mem, edi, bits).map_err(&pf)?;
                set_arith(c.cpu, alu::sub(a, b, false, bits).1);
                set(c.cpu, reg::ESI, esi.wrapping_add(step));
                set(c.cpu, reg::EDI, edi.wrapping_add(step));
            }
            _ => {
                let b = read_sized(c.mem, edi, bits).map_err(&pf)?;
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
}
