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

use erasable::Thin;
use slice_dst::SliceWithHeader;

use iced_x86::{Decoder, DecoderError, DecoderOptions, FlowControl, Instruction, OpKind, Register};
use morph_mem::{AddressSpace, Frame, MemFault, MemFaultKind, PAGE_SIZE};

use crate::isa::{self, Family, Support};
use crate::state::Cpu;
use crate::state::flags::{AC, TF};
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
    /// `#XM`: an SSE instruction raised an exception MXCSR does not mask (its flags are
    /// set in MXCSR; the instruction wrote nothing).
    SimdFp,
    /// `#DB` from EFLAGS.TF: a trap after an instruction that began with TF set (EIP is
    /// the next instruction's).
    SingleStep,
    /// `#DB` from `int1` (`icebp`, F1): a trap (EIP is the next instruction's).
    Int1,
    /// `#AC`: with EFLAGS.AC set, an access not aligned to its size.
    AlignmentCheck,
    /// `#SS(0)`: an access through SS running past the 4 GiB limit of Linux's flat
    /// stack segment (`push` with ESP 2, `mov eax, [ebp]` with EBP `0xffffffff`); the
    /// same through another segment is `#GP(0)` (`MemFaultKind::Limit`).
    StackSegment,
}

impl FaultKind {
    /// The exception vector.
    pub fn vector(&self) -> u32 {
        match self {
            FaultKind::DivideError => 0,
            FaultKind::SingleStep | FaultKind::Int1 => 1,
            FaultKind::Breakpoint => 3,
            FaultKind::Overflow => 4,
            FaultKind::Bound => 5,
            FaultKind::InvalidOpcode(_) => 6,
            FaultKind::StackSegment => 12,
            FaultKind::GeneralProtection(_) => 13,
            // Never raised: `ctx::limit_fault` makes it `#GP(0)` or `#SS(0)`.
            FaultKind::Page(m) if m.kind == MemFaultKind::Limit => 13,
            FaultKind::Page(_) => 14,
            FaultKind::Fpu => 16,
            FaultKind::AlignmentCheck => 17,
            FaultKind::SimdFp => 19,
        }
    }

    /// Whether it is a trap, reported after its instruction retired (EIP past it).
    pub fn is_trap(&self) -> bool {
        matches!(self, FaultKind::Breakpoint | FaultKind::Overflow | FaultKind::SingleStep | FaultKind::Int1)
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

/// A decoded instruction, as compact as its run needs (24 bytes, the handler and its
/// operands, with the instruction's length and whether it may write memory in the
/// operands' padding): while a program starts, tens of thousands of blocks are decoded
/// and each runs a few times, far apart, so the bytes a block takes (host cache lines,
/// and heap pages touched for the first time) are much of what it costs. Its address
/// is not kept: a run counts it from the block's start, adding each length. iced-x86's
/// 40-byte `Instruction` is kept only for the few instructions without a pre-decoded
/// form, in the block's `slow` with what runs it there.
#[derive(Clone, Copy)]
struct Decoded {
    /// What runs it: its pre-decoded form's handler (see `fast`), or `fast::slow`,
    /// which sends it to `exec_slow`.
    run: fast::Handler,
    /// The operands of its pre-decoded form; for one without, `ops.s` is its index in
    /// its block's `slow`. Also its length (`ops.len`) and whether it may write memory
    /// (`ops.writes`: only then is the code epoch checked after it).
    ops: fast::Operands,
}

const _: () = assert!(std::mem::size_of::<Decoded>() == 24);
const _: () = assert!(std::mem::size_of::<fast::Step>() == 8);

/// An instruction without a pre-decoded form, as iced-x86 decoded it, with its
/// interpreter class and family (the interpreter function that runs it: see
/// `isa::Family`).
#[derive(Clone, Copy)]
struct Slow {
    ins: Instruction,
    class: Support,
    family: Family,
}

/// A decoded basic block: its header and its records in one allocation (one heap
/// allocation per block decoded, and a run reads the header and the first records from
/// neighbouring lines), behind a one-word pointer ([`Shared`]).
type Block = SliceWithHeader<Head, Decoded>;

/// A reference to a decoded block, as the interpreter's tables and its callers keep it.
type Shared = Thin<Rc<Block>>;

/// What a decoded block records besides its instructions.
struct Head {
    /// Virtual address of the first byte (as decoded).
    start: u32,
    /// Frame of the first byte and of the last byte.
    frames: [Frame; 2],
    /// Virtual address of the last byte (as decoded).
    last: u32,
    /// Has a 16-bit relative branch, whose target wraps at 64 KiB: runs only where it
    /// was decoded.
    wraps16: bool,
    /// The instructions without a pre-decoded form.
    slow: Box<[Slow]>,
}

impl Head {
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
    /// The block's instructions (in the interpreter's scratch vectors) and the address
    /// of its last byte.
    Block(u32),
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
    block: Shared,
    generation: u32,
}

impl CachedBlock {
    /// The address a run of this block reads first (its header, followed by its
    /// records), for a caller to prefetch before it runs the block again. Only a hint:
    /// it may be stale by then, which a prefetch tolerates.
    pub fn prefetch_hint(&self) -> *const u8 {
        (&raw const self.block.header).cast()
    }
}

/// The interpreter and its decoded-block cache.
pub struct Interp {
    /// Decoded blocks by physical address (frame, offset in the page): position
    /// independent (see `Ctx::delta`), so a library's code is decoded once for every
    /// process, wherever ASLR maps it.
    blocks: rustc_hash::FxHashMap<(u32, u32), Shared>,
    /// Whether `blocks` is used: a caller that keeps each block beside its own key of
    /// the block's physical address (the engine under the `physical` key) has no use
    /// for a second table of the same blocks (see [`Interp::share_blocks`]).
    shared: bool,
    /// Bumped whenever blocks are dropped for written code (invalidates `CachedBlock`s).
    generation: u32,
    epoch: u64,
    fpu: HostFpu,
    /// Where a block is decoded before it is copied into its exact-size allocation.
    scratch: Vec<Decoded>,
    scratch_slow: Vec<Slow>,
    /// All the instructions of the block decoded last.
    scratch_all: Vec<Instruction>,
    /// `run`'s blocks, direct-mapped by EIP.
    run_cache: Box<[RunEntry]>,
    /// Counters.
    pub stats: InterpStats,
}

mod arith;
mod bits;
mod branch;
mod ctx;
mod data;
mod fast;
mod fpu;
mod misc;
mod segment;
mod stack;
mod string;

use ctx::{
    Ctx, Flow, Res, alu_op, cond, ea, fault, get_reg, invalid, op_bits, page_fault, read_sized, reg_bits, reg_index,
    seg_base, set_arith, set_reg, write_sized,
};
use fast::{Outcome, Step};

/// Entries of the pure interpreter's block cache (see `Interp::run`).
const RUN_CACHE: usize = 1024;

/// An entry of `Interp::run`'s block cache: the block found at `eip` while the address
/// space's pages mapped what they map under the number `mapping` (so the block fits
/// there for as long as they do), in block cache generation `generation`.
#[derive(Default)]
struct RunEntry {
    eip: u32,
    generation: u32,
    mapping: u64,
    block: Option<Shared>,
}

impl Interp {
    /// A new interpreter with an empty block cache.
    pub fn new() -> Self {
        Interp {
            blocks: rustc_hash::FxHashMap::default(),
            shared: true,
            generation: 0,
            epoch: 0,
            fpu: HostFpu::new(),
            scratch: Vec::with_capacity(MAX_BLOCK),
            scratch_slow: Vec::new(),
            scratch_all: Vec::with_capacity(MAX_BLOCK),
            run_cache: (0..RUN_CACHE).map(|_| RunEntry::default()).collect(),
            stats: InterpStats::default(),
        }
    }

    /// Whether decoded blocks are kept in the interpreter's own table by physical address
    /// (the default), so that a block is decoded once wherever it runs. A caller that
    /// keeps each block with its own per-address data ([`CachedBlock`]) under a key
    /// that is itself the physical address turns it off: the table would only repeat
    /// its lookups (a hash probe and insert per new block, 2 % of a Python start, and a
    /// megabyte of table). It comes back on at the first write to code: that makes every
    /// `CachedBlock` stale, and the table is what finds the blocks of the frames not
    /// written without decoding them again.
    pub fn share_blocks(&mut self, on: bool) {
        self.shared = on;
        if !on {
            self.blocks = rustc_hash::FxHashMap::default();
        }
    }

    /// Drops every cached block (e.g. when the guest's code is replaced wholesale).
    pub fn flush(&mut self) {
        self.blocks.clear();
        self.generation = self.generation.wrapping_add(1);
    }

    /// Gives up the decoded blocks without freeing them one by one, for a process about
    /// to exit (the host takes its memory back at once): see `Engine::abandon_caches`.
    pub fn abandon_blocks(&mut self) {
        std::mem::forget(std::mem::take(&mut self.blocks));
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
        // Every `CachedBlock` is stale now, those of unwritten frames too: a program
        // that writes code gets the table back, where they are found again without a
        // decode (`share_blocks`).
        self.shared = true;
        let before = self.blocks.len();
        self.generation = self.generation.wrapping_add(1);
        self.blocks.retain(|_, b| !dirty.contains(&b.header.frames[0]) && !dirty.contains(&b.header.frames[1]));
        self.stats.blocks_invalidated += (before - self.blocks.len()) as u64;
        // Frames still holding other blocks keep their code bit.
        for b in self.blocks.values() {
            for f in b.header.frames {
                if dirty.contains(&f) {
                    phys.set_code(f);
                }
            }
        }
    }

    /// The decoded block at `eip`, found by physical address (decoded once, wherever
    /// and in whichever process the code is mapped) or decoded now.
    fn block(&mut self, eip: u32, mem: &mut AddressSpace) -> Res<Shared> {
        if !self.shared {
            return self.decode(eip, mem);
        }
        let first = mem.pte(eip);
        let key = (first.frame().0, eip & (PAGE_SIZE - 1));
        if first.readable()
            && let Some(b) = self.blocks.get(&key)
            && b.header.fits(eip, mem)
        {
            if eip != b.header.start {
                self.stats.blocks_rebased += 1;
            }
            return Ok(b.clone());
        }
        let b = self.decode(eip, mem)?;
        self.blocks.insert(key, b.clone());
        Ok(b)
    }

    /// Appends to `out` the instructions of the block at `eip`, as the interpreter
    /// decodes it (the same fetch, the same end rules), as at `eip`: the translator
    /// forms its translations from the same instructions as the interpreter runs. Only
    /// iced-x86's decode: no pre-decoded records, no allocation, nothing cached (the
    /// interpreter's blocks keep only their compact records, so taking a cached one
    /// would decode its bytes again all the same). False if the block's first
    /// instruction cannot be fetched.
    pub fn decoded_block(&mut self, eip: u32, mem: &mut AddressSpace, out: &mut Vec<Instruction>) -> bool {
        if self.fetch_and_decode(eip, mem, false).is_err() {
            return false;
        }
        out.extend_from_slice(&self.scratch_all);
        true
    }

    /// The block at `eip`, borrowed from the caller's `cache` if it holds it, else as
    /// `block` finds it (and then kept in `cache`): no reference count is taken or
    /// dropped per run (a write to the block's header line per interpreted block: 1.5–2 %
    /// of a Python or Perl start).
    fn block_cached<'c>(
        &mut self,
        eip: u32,
        mem: &mut AddressSpace,
        cache: &'c mut Option<CachedBlock>,
    ) -> Res<&'c Block> {
        let hit = cache.as_ref().is_some_and(|c| c.generation == self.generation && c.block.header.fits(eip, mem));
        if !hit {
            let block = self.block(eip, mem)?;
            *cache = Some(CachedBlock { block, generation: self.generation });
        }
        match cache {
            Some(c) => {
                if hit && eip != c.block.header.start {
                    self.stats.blocks_rebased += 1;
                }
                Ok(&c.block)
            }
            None => unreachable!("the cache was just filled"),
        }
    }

    fn decode(&mut self, eip: u32, mem: &mut AddressSpace) -> Res<Shared> {
        let last = self.fetch_and_decode(eip, mem, true)?;
        // Read after the fetch, which gave a demand-zero page its frame.
        let frames = [mem.pte(eip).frame(), mem.pte(last).frame()];
        mem.mark_code(eip);
        mem.mark_code(last);
        self.stats.blocks_decoded += 1;
        self.stats.instructions_decoded += self.scratch.len() as u64;
        let wraps16 = self.scratch_all.iter().any(|i| i.op0_kind() == OpKind::NearBranch16);
        let head = Head { start: eip, frames, last, wraps16, slow: Box::from(&self.scratch_slow[..]) };
        Ok(SliceWithHeader::from_slice::<Rc<Block>>(head, &self.scratch).into())
    }

    /// Fetches and decodes the block at `eip` into the scratch vectors (`scratch_all`;
    /// with `records`, also its pre-decoded records and slow instructions); returns the
    /// address of its last byte.
    fn fetch_and_decode(&mut self, eip: u32, mem: &mut AddressSpace, records: bool) -> Res<u32> {
        let fetch = page_fault(eip);
        let first = mem.pte(eip);
        if !first.readable() {
            return Err(fetch(mem.check_read(eip, 1).expect_err("unreadable page")));
        }
        let (avail, page_end) = fetchable(eip, mem);
        // Fetch a little and decode; fetch more only if the block runs past it (a block
        // is a few instructions: copying the rest of its page each time would stream
        // megabytes through the host cache).
        let mut want = avail.min(FETCH_FIRST);
        // The first fetch goes to the stack; a longer block's to the heap.
        let (mut first_fetch, mut more) = ([0u8; FETCH_FIRST as usize], Vec::new());
        loop {
            let bytes = if want <= FETCH_FIRST {
                &mut first_fetch[..want as usize]
            } else {
                more.resize(want as usize, 0);
                &mut more[..]
            };
            mem.read_bytes(eip, bytes).map_err(&fetch)?;
            match self.decode_from(bytes, eip, page_end, want == avail, records) {
                Fetched::Block(last) => return Ok(last),
                Fetched::Truncated => {
                    return Err(fetch(mem.check_read(eip, MAX_INSN_LEN + 1).expect_err("truncated instruction")));
                }
                Fetched::Short => want = avail.min(want * 8),
            }
        }
    }

    /// Decodes the block at `eip` from `bytes` (fetched from there, `all` there is to
    /// fetch or not); without `records`, into `scratch_all` only.
    fn decode_from(&mut self, bytes: &[u8], eip: u32, page_end: u32, all: bool, records: bool) -> Fetched {
        let mut dec = Decoder::with_ip(32, bytes, u64::from(eip), DecoderOptions::NONE);
        let (instrs, slow, every) = (&mut self.scratch, &mut self.scratch_slow, &mut self.scratch_all);
        instrs.clear();
        slow.clear();
        every.clear();
        let mut last = eip;
        while every.len() < MAX_BLOCK {
            let at = dec.ip() as u32;
            if at.wrapping_sub(eip) >= page_end.wrapping_sub(eip) && !every.is_empty() {
                break; // the next instruction starts on the next page: a new block
            }
            let ins = dec.decode();
            if ins.is_invalid() && dec.last_error() == DecoderError::NoMoreBytes {
                if !all {
                    return Fetched::Short;
                }
                if every.is_empty() {
                    return Fetched::Truncated;
                }
                break;
            }
            let entry = isa::entry(ins.code());
            let class = isa::class(&ins);
            last = ins.next_ip32().wrapping_sub(1);
            // A segment load ends the block too: the rest may need the careful path
            // (`run_careful`).
            let end = matches!(class, Support::Invalid | Support::System)
                || ins.flow_control() != FlowControl::Next
                || isa::loads_segment(&ins);
            if !records {
                every.push(ins);
                if end {
                    break;
                }
                continue;
            }
            let pre_decoded = match class {
                Support::Int => fast::form(&ins),
                Support::Nop => Some((fast::nop as fast::Handler, fast::Operands::default())),
                _ => None,
            };
            let (run, mut ops) = match pre_decoded {
                Some(f) => f,
                None => {
                    slow.push(Slow { ins, class, family: entry.family });
                    (fast::slow as fast::Handler, fast::Operands { s: (slow.len() - 1) as u8, ..Default::default() })
                }
            };
            (ops.len, ops.writes) = (ins.len() as u8, entry.writes(&ins));
            instrs.push(Decoded { run, ops });
            every.push(ins);
            if end {
                break;
            }
        }
        Fetched::Block(last)
    }

    /// Runs the guest until a system call, a fault, or about `budget` instructions.
    pub fn run(&mut self, cpu: &mut Cpu, mem: &mut AddressSpace, budget: u64) -> Exit {
        let start = cpu.icount;
        while cpu.icount.wrapping_sub(start) < budget {
            if mem.phys().code_epoch() != self.epoch {
                self.sync_code(mem);
            }
            let r = if cpu.careful() {
                self.run_careful(cpu, mem, &mut None)
            } else {
                match self.run_lookup(cpu.eip, mem) {
                    Ok(b) => self.run_decoded(cpu, mem, &b),
                    Err(e) => Err(e),
                }
            };
            if let Err(e) = r {
                return e;
            }
        }
        Exit::Budget
    }

    /// The block at `eip` for `run`: from its direct-mapped cache if an entry for `eip`
    /// was made under the address space's current mapping number and the block cache's
    /// generation (then it still fits at `eip`), else as `block` finds it.
    #[inline]
    fn run_lookup(&mut self, eip: u32, mem: &mut AddressSpace) -> Res<Shared> {
        let i = ((eip ^ (eip >> 12)) as usize) % RUN_CACHE;
        let mapping = mem.mapping_id();
        let e = &self.run_cache[i];
        if e.eip == eip
            && e.mapping == mapping
            && e.generation == self.generation
            && let Some(b) = &e.block
        {
            if eip != b.header.start {
                self.stats.blocks_rebased += 1;
            }
            return Ok(b.clone());
        }
        let b = self.block(eip, mem)?;
        self.run_cache[i] = RunEntry { eip, generation: self.generation, mapping, block: Some(b.clone()) };
        Ok(b)
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
        if cpu.careful() {
            return self.run_careful(cpu, mem, cache);
        }
        let block = self.block_cached(cpu.eip, mem, cache)?;
        self.run_decoded(cpu, mem, block)
    }

    /// Runs `block`, which fits at `cpu.eip` (without TF set; the code epoch checked).
    #[inline(always)]
    fn run_decoded(&mut self, cpu: &mut Cpu, mem: &mut AddressSpace, block: &Block) -> Result<(), Exit> {
        let start = cpu.icount;
        let delta = cpu.eip.wrapping_sub(block.header.start);
        // EIP and the instruction count are kept in locals and stored when the block
        // ends (or before an instruction that may read them runs through `exec_slow`);
        // `ip` is the running instruction's address, where the block was decoded.
        let mut retired = 0u64;
        let mut ip = block.header.start;
        let (eip, result) = 'run: {
            for d in block.slice.iter() {
                let next = ip.wrapping_add(u32::from(d.ops.len));
                let step = (d.run)(cpu, mem, &d.ops, delta);
                // Anything but `NEXT` (one test on the common path) is handled here.
                if step != Step::NEXT {
                    let mut outcome = step.outcome();
                    if outcome == Outcome::Slow {
                        cpu.eip = ip.wrapping_add(delta);
                        cpu.icount = start + retired;
                        let Slow { ins, class, family } = &block.header.slow[usize::from(d.ops.s)];
                        outcome = match self.exec_slow(cpu, mem, *class, *family, ins, delta) {
                            Ok(Flow::Next) => Outcome::Next,
                            Ok(Flow::Jump(t)) => Outcome::Jump(t),
                            Err(e) => {
                                // Traps and system calls retire their instruction (and
                                // set EIP past it); faults do not.
                                if let Exit::Syscall
                                | Exit::Fault(Fault {
                                    kind: FaultKind::Breakpoint | FaultKind::Overflow, ..
                                }) = e
                                {
                                    retired += 1;
                                }
                                break 'run (cpu.eip, Err(e));
                            }
                        };
                    }
                    match outcome {
                        Outcome::Jump(t) => {
                            retired += 1;
                            break 'run (t, Ok(()));
                        }
                        Outcome::Fault(f) => {
                            let at = ip.wrapping_add(delta);
                            if f.kind == MemFaultKind::Limit {
                                // Run again through `exec_slow`, which knows the access's
                                // segment (`ctx::limit_fault`); the form changed nothing
                                // before its access failed.
                                cpu.eip = at;
                                cpu.icount = start + retired;
                                match self.step_at(cpu, mem) {
                                    Err(e) => break 'run (at, Err(e)),
                                    Ok(()) => {
                                        // Completed there (it cannot: both check the
                                        // same accesses), and counted by `step`.
                                        self.stats.instructions -= 1;
                                        retired += 1;
                                        break 'run (cpu.eip, Ok(()));
                                    }
                                }
                            }
                            break 'run (at, Err(page_fault(at)(f)));
                        }
                        Outcome::Next | Outcome::Slow => {}
                    }
                }
                retired += 1;
                ip = next;
                if d.ops.writes && mem.phys().code_epoch() != self.epoch {
                    break 'run (ip.wrapping_add(delta), Ok(())); // the block may have rewritten itself: decode afresh
                }
            }
            (ip.wrapping_add(delta), Ok(()))
        };
        cpu.eip = eip;
        cpu.icount = start + retired;
        self.stats.instructions += retired;
        result
    }

    /// With EFLAGS.TF set, EFLAGS.AC set, or DS, ES or SS holding another selector than
    /// the flat data segment's (which the pre-decoded forms and translated code assume):
    /// one instruction, through `exec_slow`'s checks of every segment it goes through
    /// and, with AC, of the alignment of every access; then the trap if TF was set.
    fn run_careful(
        &mut self,
        cpu: &mut Cpu,
        mem: &mut AddressSpace,
        cache: &mut Option<CachedBlock>,
    ) -> Result<(), Exit> {
        if cpu.flat_segments() && cpu.eflags & AC == 0 {
            return self.run_traced(cpu, mem, cache);
        }
        let traced = cpu.eflags & TF != 0;
        self.step_at(cpu, mem)?;
        if traced {
            return Err(fault(FaultKind::SingleStep, cpu.eip));
        }
        Ok(())
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
        let delta = cpu.eip.wrapping_sub(block.header.start);
        let d = &block.slice[0];
        let ip = cpu.eip;
        let r = match (d.run)(cpu, mem, &d.ops, delta).outcome() {
            Outcome::Next => Ok(Flow::Next),
            Outcome::Jump(t) => Ok(Flow::Jump(t)),
            Outcome::Fault(f) if f.kind == MemFaultKind::Limit => {
                // Through `exec_slow` (see `run_decoded`), which counts it if it completes.
                self.step_at(cpu, mem)?;
                return Err(fault(FaultKind::SingleStep, cpu.eip));
            }
            Outcome::Fault(f) => Err(page_fault(ip)(f)),
            Outcome::Slow => {
                let Slow { ins, class, family } = &block.header.slow[usize::from(d.ops.s)];
                self.exec_slow(cpu, mem, *class, *family, ins, delta)
            }
        };
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
            Flow::Next => cpu.eip = ip.wrapping_add(u32::from(d.ops.len)),
            Flow::Jump(t) => cpu.eip = t,
        }
        Err(fault(FaultKind::SingleStep, cpu.eip))
    }

    /// Executes `ins`, of interpreter class `class` and family `family`, through
    /// iced-x86's operand accessors (also used by the translator for instructions it
    /// leaves to the interpreter). On `Ok`, the caller sets EIP.
    fn exec_slow(
        &mut self,
        cpu: &mut Cpu,
        mem: &mut AddressSpace,
        class: Support,
        family: Family,
        ins: &Instruction,
        delta: u32,
    ) -> Res<Flow> {
        let sse_ok = class != Support::Sse || cpu.model.has_sse();
        let runs = matches!(class, Support::Int | Support::Fpu | Support::Mmx | Support::Sse) && sse_ok;
        if runs
            && (matches!(ins.segment_prefix(), Register::FS | Register::GS) || !cpu.flat_segments())
            && segment_refused(cpu, mem, ins)
        {
            fpu::maskmovq_fault(cpu, ins);
            return Err(fault(FaultKind::GeneralProtection(0), ins.ip32().wrapping_add(delta)));
        }
        // A pending x87 exception (`#MF`) comes before the instruction's accesses.
        let mf = class == Support::Fpu && cpu.fpu.pending_exception();
        if runs && cpu.eflags & AC != 0 && class != Support::Sse && !mf && misaligned(cpu, mem, ins) {
            return Err(fault(FaultKind::AlignmentCheck, ins.ip32().wrapping_add(delta)));
        }
        let r = match class {
            Support::Int => exec_int(&mut Ctx { cpu, mem, ins, delta }, family),
            Support::Sse if !cpu.model.has_sse() => Err(invalid(mem, ins, delta)),
            Support::Fpu | Support::Mmx | Support::Sse => self.exec_fpu(&mut Ctx { cpu, mem, ins, delta }, class),
            Support::Nop => Ok(Flow::Next),
            Support::System => {
                fpu::maskmovq_fault(cpu, ins); // a write through CS
                Err(fault(FaultKind::GeneralProtection(0), ins.ip32().wrapping_add(delta)))
            }
            Support::Invalid => Err(invalid(mem, ins, delta)),
        };
        match r {
            Err(Exit::Fault(Fault { kind: FaultKind::Page(m), eip })) if m.kind == MemFaultKind::Limit => {
                Err(fault(ctx::limit_fault(cpu, ins, FaultKind::Page(m)), eip))
            }
            r => r,
        }
    }

    /// Executes the instruction at `cpu.eip`, decoded from `mem` (the translator's
    /// host-fault path: it completes a write to a copy-on-write or code page, or raises
    /// the precise guest fault), as `step` does; a fetch that faults raises the fetch's
    /// page fault. Nothing is cached: such faults are rare, and a page written since
    /// would hold a stale block.
    pub fn step_at(&mut self, cpu: &mut Cpu, mem: &mut AddressSpace) -> Result<(), Exit> {
        let eip = cpu.eip;
        let fetch = page_fault(eip);
        let mut bytes = [0u8; MAX_INSN_LEN as usize];
        let bytes = &mut bytes[..fetchable(eip, mem).0.min(MAX_INSN_LEN) as usize];
        mem.read_bytes(eip, bytes).map_err(&fetch)?;
        let mut dec = Decoder::with_ip(32, bytes, u64::from(eip), DecoderOptions::NONE);
        let ins = dec.decode();
        if ins.is_invalid()
            && dec.last_error() == DecoderError::NoMoreBytes
            && let Err(e) = mem.check_read(eip, MAX_INSN_LEN + 1)
        {
            return Err(fetch(e)); // runs into an unreadable page
        }
        self.step(cpu, mem, &ins)
    }

    /// Executes a single decoded instruction at `cpu.eip` (used by tests, the
    /// translator's fallback and `step_at`). Updates EIP and the instruction count.
    pub fn step(&mut self, cpu: &mut Cpu, mem: &mut AddressSpace, ins: &Instruction) -> Result<(), Exit> {
        let e = isa::entry(ins.code());
        let r = self.exec_slow(cpu, mem, isa::class(ins), e.family, ins, 0);
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
}

impl Default for Interp {
    fn default() -> Self {
        Self::new()
    }
}

/// The code bytes that can be fetched from `eip`: the rest of its page, and the longest
/// instruction's worth more if the next page is readable (an instruction may straddle
/// into it); with the address where `eip`'s page ends (0 past the top of memory).
fn fetchable(eip: u32, mem: &AddressSpace) -> (u32, u32) {
    let page_end = (eip | (PAGE_SIZE - 1)).wrapping_add(1);
    let in_page = page_end.wrapping_sub(eip).max(if page_end == 0 { 0u32.wrapping_sub(eip) } else { 0 });
    let straddle = page_end != 0 && mem.pte(page_end).readable();
    (in_page + if straddle { MAX_INSN_LEN } else { 0 }, page_end)
}

/// Whether an access of `ins` goes through a segment register whose selector refuses it
/// (the null selector, a write through a read-only segment): `#GP(0)`, before the
/// instruction runs. Two exceptions, as measured on the hardware: a `rep` string
/// instruction with a zero count makes no access, so no segment refuses it; and an AMD
/// host's `cmps` reads ES:[EDI] first (see `string`), so a page fault there comes before
/// the refusal of its source's segment (left to `string` to raise).
fn segment_refused(cpu: &Cpu, mem: &AddressSpace, ins: &Instruction) -> bool {
    if rep_without_count(cpu, ins) {
        return false;
    }
    // `arpl` writes its destination only if it must (and checks the segment then).
    let written = |i| ins.mnemonic() != iced_x86::Mnemonic::Arpl && isa::operand_written(ins, i);
    let refused = |(s, i): (usize, u32)| {
        // Whether the operand is written is asked only of a segment that refuses writes.
        !cpu.segment_usable(s, true) && (!cpu.segment_usable(s, false) || written(i))
    };
    let cmps =
        matches!(ins.mnemonic(), iced_x86::Mnemonic::Cmpsb | iced_x86::Mnemonic::Cmpsw | iced_x86::Mnemonic::Cmpsd);
    if cmps && crate::host::amd_like() && cpu.segment_usable(crate::state::seg::ES, false) {
        let edi = get_reg(cpu, if isa::string_a16(ins) { Register::DI } else { Register::EDI });
        let at = edi.wrapping_add(cpu.seg_base[crate::state::seg::ES]);
        if mem.check_read(at, ins.memory_size().size() as u32).is_err() {
            return false;
        }
    }
    isa::memory_segments(ins).into_iter().flatten().any(refused)
}

/// Whether `ins` is a `rep` string instruction whose count (CX or ECX, by address
/// size) is zero: it makes no access at all.
fn rep_without_count(cpu: &Cpu, ins: &Instruction) -> bool {
    let rep = ins.has_rep_prefix() || ins.has_repne_prefix();
    if !(rep && ins.is_string_instruction()) {
        return false;
    }
    get_reg(cpu, if isa::string_a16(ins) { Register::CX } else { Register::ECX }) == 0
}

/// With EFLAGS.AC set (Linux runs user mode with CR0.AM), whether an access of `ins` is
/// not aligned as its data type must be (Intel's table of alignment requirements: a
/// word 2, a doubleword or a single 4, a quadword, a double, an extended real or an MMX
/// operand 8, a far pointer 2 or 4, an x87 environment or state image 2 or 4 by operand
/// size), checked before the page (the AMD host raises `#AC` for a misaligned access
/// to an unmapped page). Stack accesses count; a `rep` string instruction with a zero
/// count makes none; the descriptor-table stores Linux emulates under UMIP make none of
/// their own, nor does a far `call`/`jmp` to another code segment (`#GP` first) but
/// its read of a far pointer in memory.
fn misaligned(cpu: &Cpu, mem: &AddressSpace, ins: &Instruction) -> bool {
    use iced_x86::{InstructionInfoFactory, MemorySize as S, Mnemonic as M, OpAccess};
    if isa::umip_store(ins) || matches!(ins.mnemonic(), M::Ud0 | M::Ud1) {
        return false;
    }
    let cs = cpu.sel[crate::state::seg::CS];
    if matches!(ins.op0_kind(), OpKind::FarBranch16 | OpKind::FarBranch32) && ins.far_branch_selector() != cs {
        return false;
    }
    // `call`/`jmp m16:16/32` to another code segment: the far pointer's read is checked,
    // its pushes are not (the selector's `#GP` comes first).
    let far_memory = matches!(ins.mnemonic(), M::Call | M::Jmp)
        && ins.op0_kind() == OpKind::Memory
        && matches!(ins.memory_size(), S::SegPtr16 | S::SegPtr32);
    let other_cs = far_memory && {
        let at = ea(cpu, ins).wrapping_add(ins.memory_size().size() as u32 - 2);
        mem.read_u16(at).is_ok_and(|sel| sel != cs)
    };
    if rep_without_count(cpu, ins) {
        return false;
    }
    let mut factory = InstructionInfoFactory::new();
    let info = factory.info(ins);
    info.used_memory().iter().any(|m| {
        if matches!(m.access(), OpAccess::None | OpAccess::NoMemAccess) || (other_cs && m.segment() == Register::SS) {
            return false;
        }
        let size = m.memory_size();
        let align = match size {
            S::SegPtr16 | S::Bound16_WordWord | S::FpuEnv14 | S::FpuState94 => 2,
            S::SegPtr32 | S::Bound32_DwordDword | S::FpuEnv28 | S::FpuState108 => 4,
            _ => match size.size() {
                2 => 2,
                4 => 4,
                8 | 10 => 8,
                _ => 1,
            },
        };
        let value = |r: Register, _: usize, _: usize| {
            Some(u64::from(if r.is_segment_register() {
                cpu.seg_base[reg_index(r, Register::ES)]
            } else {
                get_reg(cpu, r)
            }))
        };
        m.virtual_address(0, value).is_some_and(|a| !(a as u32).is_multiple_of(align))
    })
}

/// Runs integer instruction `c.ins` of interpreter family `family`.
fn exec_int(c: &mut Ctx<'_>, family: Family) -> Res<Flow> {
    match family {
        Family::Cond => data::conditional(c),
        Family::Data => data::data(c),
        Family::Arith => arith::arith(c),
        Family::Bits => bits::bits(c),
        Family::Bcd => arith::bcd(c),
        Family::Stack => stack::stack(c),
        Family::Branch => branch::branch(c),
        Family::Misc => misc::misc(c),
        Family::String => string::string(c).map(|()| Flow::Next),
        Family::Segment => segment::segment(c),
        Family::Fpu | Family::None => Err(invalid(c.mem, c.ins, c.delta)),
    }
}
