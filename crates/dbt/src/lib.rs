//! The Code Morphing engine: interpret, profile, translate, chain, invalidate.
//!
//! Modeled on Transmeta's Code Morphing Software (Dehnert et al., CGO 2003): guest code
//! is first run by the reference interpreter while the engine counts how often each
//! block starts; a block that reaches the *threshold* is translated to x86-64
//! ([`translate`]) and kept in the **translation cache**, whose key is the experiment's
//! independent variable ([`KeyPolicy`]):
//!
//! | policy | key | valid when |
//! |---|---|---|
//! | `virtual` | guest VA | the VA still maps the frame the code came from |
//! | `physical` | guest PA (frame, offset) | always (translations are position-independent) |
//! | `process` | (process, VA) | same as virtual; dropped at exec and exit |
//!
//! Translations jump to each other directly once both exist (*chaining*), but only
//! within one page, so a chained jump never needs a mapping check. A guest write to a
//! frame holding translated code (the frame's code bit, Transmeta's T-bit) drops every
//! translation made from it. A host fault inside translated code becomes a precise
//! guest fault: the instruction is re-run by the interpreter, which either completes it
//! (a copy-on-write or code-page write) or raises the guest exception with the exact
//! EIP and registers.
//!
//! The engine sees memory only through an [`AddressSpace`] and never calls the OS.

mod clock;
mod code;
pub mod persist;
mod runtime;
pub mod translate;

use clock::{Activity, Clock};

use code::CodeBuffer;
use iced_x86::Instruction;
use morph_cpu::state::{flags, seg};
use morph_cpu::{CachedBlock, Cpu, Exit, Interp};
use morph_mem::{AddressSpace, Frame, PAGE_SHIFT, PAGE_SIZE};
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::num::NonZeroU32;

use crate::runtime::{
    EXIT_BRANCH, EXIT_BUDGET, EXIT_FAULT, EXIT_HELPER, EXIT_INDIRECT, EXIT_SYSCALL, FaultMap, JC_ENTRIES, JcEntry,
    JitState, LIVE_FLAGS,
};
use crate::translate::{Fixup, Site};

/// What the translation cache is keyed by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyPolicy {
    /// Guest virtual address, validated against the frame.
    Virtual,
    /// Guest physical address.
    Physical,
    /// A private cache per process, keyed by virtual address.
    Process,
}

impl KeyPolicy {
    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            KeyPolicy::Virtual => "virtual",
            KeyPolicy::Physical => "physical",
            KeyPolicy::Process => "process",
        }
    }
}

/// Engine configuration.
#[derive(Clone, Debug)]
pub struct EngineConfig {
    /// Translate at all (`--engine dbt`) or only interpret (`--engine interp`).
    pub translate: bool,
    /// The cache key.
    pub key: KeyPolicy,
    /// Block executions before translation (0: translate at first execution).
    pub threshold: u32,
    /// Chain translations to each other.
    pub chain: bool,
    /// Describe every translation in this file (`--code-map`): one line per translation,
    /// `<offset in the code buffer> <size> <guest EIP> <guest PA> <host code in hex>`,
    /// all hex. `perf report` names samples in translated code `memfd:morph-code` plus
    /// that offset; `benches/code-map.py` disassembles the translations around them.
    pub code_map: Option<std::path::PathBuf>,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            translate: false,
            key: KeyPolicy::Physical,
            threshold: DEFAULT_THRESHOLD,
            chain: true,
            code_map: None,
        }
    }
}

/// The default threshold. Low enough that the short-lived programs of the seed workload
/// get their library code translated, high enough that code run once (start-up paths,
/// the dynamic loader's relocation loops are the exception) is not: see
/// `docs/engine.md`.
pub const DEFAULT_THRESHOLD: u32 = 50;

/// Every counter of the engine, in one place.
#[derive(Clone, Copy, Debug, Default)]
pub struct EngineStats {
    /// Translation cache lookups (one per dispatched block).
    pub lookups: u64,
    /// Lookups that found a valid translation.
    pub hits: u64,
    /// Lookups that did not.
    pub misses: u64,
    /// Blocks translated.
    pub translations: u64,
    /// Translations of physical code that had been translated before under another key.
    pub retranslations: u64,
    /// Direct jumps patched to chain two translations.
    pub chain_patches: u64,
    /// Translations dropped because their code was written.
    pub invalidations: u64,
    /// Guest instructions run by the interpreter.
    pub interp_instructions: u64,
    /// Guest instructions run inside translations (helper-run ones included).
    pub translated_instructions: u64,
    /// Guest instructions translated.
    pub translated_guest_instructions: u64,
    /// Instructions translations hand to the interpreter helper (static count).
    pub helper_instructions: u64,
    /// Host faults inside translated code.
    pub host_faults: u64,
    /// Live translations.
    pub blocks: u64,
    /// Bytes of host code in the cache.
    pub host_bytes: u64,
    /// Caches flushed because the code buffer was full.
    pub flushes: u64,
    /// Host nanoseconds interpreting (each interpreted block with its dispatch).
    pub interp_ns: u64,
    /// Host nanoseconds translating (with the dispatch that decided to).
    pub translate_ns: u64,
    /// Host nanoseconds executing translations (each entry with its dispatch).
    pub exec_ns: u64,
    /// Indirect branches (returns, indirect calls and jumps) resolved by the jump cache
    /// inside translated code, without a translation-cache lookup.
    pub jump_cache_hits: u64,
    /// Lookups that hit a translation another process made: translations shared
    /// across processes (possible under the `virtual` and `physical` keys).
    pub foreign_hits: u64,
    /// Returns from translated code to the dispatcher, by reason: unchained direct
    /// branch, indirect branch (jump-cache miss), budget, system call, host fault, helper.
    pub exits: [u64; 6],
}

/// A translation-cache key under the engine's policy: the guest VA (`virtual`), the
/// guest PA (`physical`), or the process in the high half and the VA in the low half
/// (`process`). One word, so that a key's slot stays small.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
struct Key(u64);

impl Key {
    /// The key of `eip` (in `frame`) for process `ctx` under `policy`.
    fn new(policy: KeyPolicy, eip: u32, frame: Frame, ctx: u32) -> Key {
        Key(match policy {
            KeyPolicy::Virtual => u64::from(eip),
            KeyPolicy::Physical => frame.addr().0 + u64::from(eip & (PAGE_SIZE - 1)),
            KeyPolicy::Process => (u64::from(ctx) << 32) | u64::from(eip),
        })
    }

    /// The process of a `process` key.
    fn ctx(self) -> u32 {
        (self.0 >> 32) as u32
    }

    /// The offset of the key's code in its page (the low bits under every policy).
    fn page_offset(self) -> u32 {
        self.0 as u32 & (PAGE_SIZE - 1)
    }
}

/// Interprets one block at `cpu.eip`, its decoded block taken from (and left in)
/// `cache`, and counts the time.
fn interpret(
    interp: &mut Interp,
    ticks: &mut clock::Ticks,
    cpu: &mut Cpu,
    mem: &mut AddressSpace,
    cache: &mut Option<CachedBlock>,
) -> Result<(), Exit> {
    ticks.switch(Activity::Interp);
    interp.run_block_cached(cpu, mem, cache)
}

/// Asks the host to bring the line at `p` into its cache; `p` may dangle.
#[inline]
fn prefetch_ptr(p: *const u8) {
    // SAFETY: a prefetch is a hint: it reads nothing architecturally and cannot fault,
    // whatever the address.
    unsafe { std::arch::x86_64::_mm_prefetch(p.cast::<i8>(), std::arch::x86_64::_MM_HINT_T0) };
}

/// Pages remembered as prefilled in the jump cache (direct-mapped by page number; a
/// process runs code from a few hundred pages).
const JC_PAGES: usize = 1024;

/// No slot (an unset prediction).
const NO_SLOT: u32 = u32::MAX;

/// Asks the host to bring `v` into its cache (a hint: no effect on the program).
#[inline]
fn prefetch<T>(v: &T) {
    // SAFETY: prefetching is a hint about an address we hold a reference to; it reads
    // nothing and cannot fault.
    unsafe { std::arch::x86_64::_mm_prefetch((v as *const T).cast::<i8>(), std::arch::x86_64::_MM_HINT_T0) };
}

/// The jump cache: (tag, guest VA) → translation body, direct-mapped by the VA's low
/// bits, read by translated code for indirect branches. A tag stands for one mapping
/// (an `AddressSpace::mapping_id`, with the process under the `process` policy): a
/// process switch selects the next process's tag instead of emptying the cache, so a
/// parent finds its entries again when its child has run, and a forked child (whose
/// mapping is its parent's) finds its parent's from the start. Emptying the cache is
/// giving the current mapping a new tag and forgetting the others'; tags are never
/// reused (a wrap of the counter resets every entry), so old entries never hit again.
struct JumpCache {
    entries: Box<[JcEntry]>,
    /// The tag of each mapping seen since the cache was last emptied.
    tags: HashMap<(u64, u32), u32>,
    /// The current mapping and its tag.
    cur: (u64, u32),
    tag: u32,
    /// The last tag given out.
    last_tag: u32,
    /// Where an empty entry leads (`runtime::jc_miss`; none is ever hit).
    empty_host: u64,
    /// Pages whose translations were all put in the cache under a tag (`tag << 32 |
    /// page | 1`, direct-mapped by page number; see `Engine::prefill`).
    pages: Box<[u64; JC_PAGES]>,
}

impl JumpCache {
    /// Mappings remembered before the oldest are forgotten (their entries then stay
    /// unreachable, like emptied ones).
    const MAX_TAGS: usize = 1 << 14;

    fn new() -> JumpCache {
        JumpCache {
            entries: vec![JcEntry { key: 0, host: 0 }; JC_ENTRIES].into_boxed_slice(),
            tags: HashMap::default(),
            cur: (0, 0),
            tag: 1,
            last_tag: 1,
            empty_host: 0,
            pages: Box::new([0; JC_PAGES]),
        }
    }

    /// Makes `mapping` current (with the tag it had, or a new one); returns whether it
    /// changed.
    #[inline]
    fn select(&mut self, mapping: (u64, u32)) -> bool {
        if mapping == self.cur {
            return false;
        }
        self.cur = mapping;
        self.tag = match self.tags.get(&mapping) {
            Some(&t) => t,
            None => self.new_tag(),
        };
        true
    }

    /// A tag never given out, for the current mapping.
    fn new_tag(&mut self) -> u32 {
        if self.last_tag == u32::MAX || self.tags.len() >= Self::MAX_TAGS {
            self.tags.clear();
        }
        if self.last_tag == u32::MAX {
            self.reset(self.empty_host);
        }
        self.last_tag += 1;
        self.tags.insert(self.cur, self.last_tag);
        self.last_tag
    }

    /// Empties the cache: the current mapping gets a new tag, the others will.
    fn invalidate(&mut self) {
        self.tags.clear();
        self.tag = self.new_tag();
    }

    /// Sets every entry to empty, leading to `empty_host` from now on, and restarts the
    /// tags.
    fn reset(&mut self, empty_host: u64) {
        self.empty_host = empty_host;
        self.entries.fill(JcEntry { key: 0, host: empty_host });
        self.pages.fill(0);
        self.tags.clear();
        self.last_tag = 1;
    }

    #[inline]
    fn set(&mut self, va: u32, host: u64) {
        self.entries[runtime::jc_index(va)] = JcEntry { key: JcEntry::key(self.tag, va), host };
    }

    /// Records that `page`'s translations are in the cache under the current tag;
    /// returns whether they already were.
    #[inline]
    fn page_done(&mut self, page: u32) -> bool {
        let memo = &mut self.pages[(page >> PAGE_SHIFT) as usize % JC_PAGES];
        let v = u64::from(self.tag) << 32 | u64::from(page) | 1;
        std::mem::replace(memo, v) == v
    }
}

/// What the engine knows of a key.
struct Slot {
    /// Its live translation.
    live: Option<Live>,
    /// Dispatches that found no live translation (the profile).
    count: u32,
    /// The interpreter's decoded block, while the key is interpreted (saves a lookup in
    /// the interpreter's own cache per interpreted block).
    block: Option<CachedBlock>,
    /// The key dispatched after this one last time, and its slot (`NO_SLOT`: none).
    succ_key: Key,
    succ: u32,
    /// The successor before that (a block ending in a conditional branch has two).
    succ2: u32,
    succ2_key: Key,
    /// Where the successor's interpreted block lives (prefetched with its slot).
    succ_hint: [*const u8; 2],
}

impl Default for Slot {
    fn default() -> Slot {
        Slot {
            live: None,
            count: 0,
            block: None,
            succ_key: Key(0),
            succ: NO_SLOT,
            succ2: NO_SLOT,
            succ2_key: Key(0),
            succ_hint: [std::ptr::null(); 2],
        }
    }
}

impl Slot {
    /// The live translation, if it was made from `frame` (under `virtual` and `process`
    /// the key does not name the frame) and, if it straddles into the page after `eip`'s,
    /// from the frame that page maps in `mem` too.
    #[inline]
    fn live_from(&self, frame: Frame, eip: u32, mem: &AddressSpace) -> Option<Live> {
        self.live.filter(|l| l.frame == frame && (l.frame2 == NO_FRAME || next_frame(mem, eip) == Some(l.frame2)))
    }
}

/// A live translation as its frame's list has it.
#[derive(Clone, Copy, Debug)]
struct FrameEntry {
    id: u32,
    key: Key,
    /// Offset of its body in the code buffer.
    body: u32,
    /// Whether the translation's last instruction straddles into the next page: it is
    /// valid only where that page maps its second frame, so it is never prefilled into
    /// the jump cache (nor chained to) without the dispatcher's check.
    straddles: bool,
}

/// `Live::frame2` of a translation that stays in its page.
const NO_FRAME: u32 = u32::MAX;

/// A live translation as the dispatcher sees it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Live {
    id: u32,
    frame: Frame,
    /// The frame of the next page, for a translation whose last instruction straddles
    /// into it (`NO_FRAME` otherwise): checked at every dispatch.
    frame2: u32,
    /// Offset of the body in the code buffer (never 0: the runtime comes first).
    body: NonZeroU32,
    /// The process whose execution made it.
    owner: u32,
}

struct Translation {
    key: Key,
    frame: Frame,
    /// The next page's frame, if the last instruction straddles into it.
    frame2: Option<Frame>,
    pa: u64,
    start: usize,
    body: usize,
    /// The chain entry (budget check), where backward chains enter.
    entry: usize,
    sites: Vec<Site>,
    alive: bool,
    /// Boxed so their addresses, baked into the translation, never move.
    #[allow(clippy::vec_box)]
    _helpers: Vec<Box<Instruction>>,
}

/// The context the fallback helper needs, reachable from the state block.
struct HelperCtx {
    cpu: *mut Cpu,
    mem: *mut AddressSpace,
    interp: *mut Interp,
    pending: Option<Exit>,
    epoch: u64,
}

/// Code buffer size at which the cache is flushed.
const FLUSH_BYTES: usize = 256 << 20;

/// The engine: the interpreter, the translation cache and the runtime.
pub struct Engine {
    cfg: EngineConfig,
    interp: Interp,
    code: CodeBuffer,
    enter_off: usize,
    exit_common_off: usize,
    exit_nosave_off: usize,
    /// Where empty jump-cache entries lead (`runtime::jc_miss`).
    jc_miss_off: usize,
    /// The shared jump-cache lookup (`runtime::shared_lookup`).
    lookup_off: usize,
    trans: Vec<Translation>,
    /// Per key: its live translation, with what a dispatch needs of it (so a hit does not
    /// touch `trans`, whose entries are cold by the time the guest comes back), its
    /// profile count and its decoded block, in one slot, found through `index`. Slots
    /// never move, so that each can name the slot dispatched after it last time.
    slots: Vec<Slot>,
    index: HashMap<Key, u32>,
    /// The slot of the latest dispatch (`NO_SLOT` at first).
    prev_slot: u32,
    /// The slot dispatched before `prev_slot`.
    pred_slot: u32,
    /// The live translations made from each frame.
    by_frame: HashMap<Frame, Vec<FrameEntry>>,
    seen_pa: HashSet<u64>,
    /// Blocks the translator cannot take (an instruction it cannot encode, or one that
    /// straddles into an unreadable page): left to the interpreter without retrying.
    untranslatable: HashSet<Key>,
    state: Box<JitState>,
    fault_map: Box<FaultMap>,
    stats: EngineStats,
    clock: Clock,
    ticks: clock::Ticks,
    epoch: u64,
    /// Host address of the code buffer (it moves only when code is committed or
    /// patched, which happens only in the dispatcher).
    code_base: usize,
    /// The jump cache ((tag, VA) → host entry).
    jc: JumpCache,
    /// Set (for good) once a translation runs x87/MMX natively: from then on the guest
    /// FPU state is loaded into the host FPU around translated code.
    fpu_live: bool,
    /// The code map file, when `EngineConfig::code_map` is set.
    code_map: Option<std::fs::File>,
}

impl Engine {
    /// A new engine; fails if the host refuses the code buffer (a memfd mapped twice).
    pub fn new(cfg: EngineConfig) -> std::io::Result<Engine> {
        if cfg.translate {
            runtime::install_fault_handler();
        }
        let mut e = Engine {
            cfg,
            interp: Interp::new(),
            code: CodeBuffer::new(FLUSH_BYTES)?,
            enter_off: 0,
            exit_common_off: 0,
            exit_nosave_off: 0,
            jc_miss_off: 0,
            lookup_off: 0,
            trans: Vec::new(),
            slots: Vec::new(),
            index: HashMap::default(),
            prev_slot: NO_SLOT,
            pred_slot: NO_SLOT,
            by_frame: HashMap::default(),
            seen_pa: HashSet::default(),
            untranslatable: HashSet::default(),
            state: Box::default(),
            fault_map: Box::default(),
            stats: EngineStats::default(),
            clock: Clock::new(),
            ticks: clock::Ticks::default(),
            epoch: 0,
            code_base: 0,
            jc: JumpCache::new(),
            fpu_live: false,
            code_map: None,
        };
        if let Some(path) = &e.cfg.code_map {
            // A profiling aid: if the file cannot be made, translated code stays unnamed.
            e.code_map = std::fs::File::create(path).ok();
        }
        e.emit_runtime();
        Ok(e)
    }

    fn emit_runtime(&mut self) {
        let fits = |c: &mut CodeBuffer, bytes: Vec<u8>| {
            let at = c.offset();
            assert!(c.extend(&bytes), "the runtime fits in an empty code buffer");
            at
        };
        self.enter_off = fits(&mut self.code, runtime::enter_trampoline());
        self.exit_common_off = fits(&mut self.code, runtime::exit_common());
        self.exit_nosave_off = fits(&mut self.code, runtime::exit_nosave());
        let (mut miss, rel) = runtime::jc_miss();
        let at = self.code.offset();
        let to_exit = (self.exit_common_off as i64 - (at + rel + 4) as i64) as i32;
        miss[rel..rel + 4].copy_from_slice(&to_exit.to_le_bytes());
        self.jc_miss_off = fits(&mut self.code, miss);
        let (mut lookup, rel) = runtime::shared_lookup();
        let at = self.code.offset();
        let to_exit = (self.exit_common_off as i64 - (at + rel + 4) as i64) as i32;
        lookup[rel..rel + 4].copy_from_slice(&to_exit.to_le_bytes());
        self.lookup_off = fits(&mut self.code, lookup);
        self.fault_map.exit_common = self.exit_common_off;
        self.refresh_code_base();
        // The miss stub may have moved: reset every entry.
        self.jc.reset((self.code_base + self.jc_miss_off) as u64);
        self.flush_jump_cache();
    }

    /// Empties the jump cache (code moved or was dropped).
    fn flush_jump_cache(&mut self) {
        self.jc.invalidate();
    }

    /// Puts in the jump cache every live translation made from `frame` that a dispatch
    /// of its VA on the page of `eip` would find for process `ctx` (all of them under
    /// `physical`; under `virtual` and `process`, those made at that VA, and by `ctx`),
    /// once per page until the cache is emptied. A process entering a page of shared
    /// code for the first time then reaches the page's other translations through the
    /// jump cache instead of one dispatcher round trip each.
    fn prefill(&mut self, eip: u32, frame: Frame, ctx: u32) {
        let page = eip & !(PAGE_SIZE - 1);
        if self.jc.page_done(page) {
            return;
        }
        let Some(list) = self.by_frame.get(&frame) else { return };
        for e in list.iter().filter(|e| !e.straddles) {
            let va = page | e.key.page_offset();
            if Key::new(self.cfg.key, va, frame, ctx) == e.key {
                self.jc.set(va, (self.code_base + e.body as usize) as u64);
            }
        }
    }

    /// Records where the code is for the fault handler (the buffer never moves; only
    /// its length grows).
    fn refresh_code_base(&mut self) {
        self.code_base = self.code.base();
        self.fault_map.code_base = self.code_base;
        self.fault_map.code_len = self.code.offset();
    }

    /// The configuration.
    pub fn config(&self) -> &EngineConfig {
        &self.cfg
    }

    /// The counters (interpreter instructions included).
    pub fn stats(&self) -> EngineStats {
        let mut s = self.stats;
        s.interp_instructions = self.interp.stats.instructions;
        s.blocks = self.trans.iter().filter(|t| t.alive).count() as u64;
        s.host_bytes = self.code.offset() as u64;
        let ns = self.clock.ns_per_tick();
        s.interp_ns = (self.ticks.interp as f64 * ns) as u64;
        s.translate_ns = (self.ticks.translate as f64 * ns) as u64;
        s.exec_ns = (self.ticks.exec as f64 * ns) as u64;
        s
    }

    /// The interpreter (for its own counters).
    pub fn interp(&self) -> &Interp {
        &self.interp
    }

    /// Forgets everything translated for process `ctx` (at its exec and exit) under the
    /// `process` policy.
    pub fn drop_context(&mut self, ctx: u32) {
        if self.cfg.key != KeyPolicy::Process {
            return;
        }
        let dead: Vec<u32> = self
            .index
            .iter()
            .filter(|(k, _)| k.ctx() == ctx)
            .filter_map(|(_, &i)| self.slots[i as usize].live.map(|l| l.id))
            .collect();
        for t in dead {
            self.kill(t);
        }
        // The process's keys are never dispatched again: their slots stay (unreachable),
        // and no prediction may lead to one.
        self.index.retain(|k, _| k.ctx() != ctx);
        self.slots.iter_mut().for_each(|s| (s.succ, s.succ2) = (NO_SLOT, NO_SLOT));
        self.prev_slot = NO_SLOT;
        self.pred_slot = NO_SLOT;
    }

    /// Marks translation `t` dead and drops it from its frame's list.
    fn retire(&mut self, t: u32) {
        let tr = &mut self.trans[t as usize];
        tr.alive = false;
        for f in std::iter::once(tr.frame).chain(tr.frame2) {
            if let Some(list) = self.by_frame.get_mut(&f) {
                list.retain(|e| e.id != t);
            }
        }
    }

    fn kill(&mut self, t: u32) {
        self.flush_jump_cache();
        if self.trans[t as usize].alive {
            self.retire(t);
            let key = self.trans[t as usize].key;
            if let Some(&i) = self.index.get(&key)
                && let Some(s) = self.slots.get_mut(i as usize)
                && s.live.is_some_and(|l| l.id == t)
            {
                s.live = None;
            }
        }
    }

    /// Drops translations and decoded blocks made from frames the guest wrote.
    fn sync_code(&mut self, mem: &AddressSpace) {
        self.epoch = mem.phys().code_epoch();
        let dirty = mem.phys().take_dirty_code();
        if !dirty.is_empty() {
            self.untranslatable.clear();
        }
        self.interp.invalidate_frames(mem, &dirty);
        for f in dirty {
            if let Some(ts) = self.by_frame.remove(&f) {
                for t in ts.into_iter().map(|e| e.id) {
                    if self.trans[t as usize].alive {
                        self.stats.invalidations += 1;
                        let pa = self.trans[t as usize].pa;
                        self.seen_pa.remove(&pa);
                        self.kill(t);
                    }
                }
            }
        }
    }

    /// The slot of `key`, made if it has none.
    fn slot_of(&mut self, key: Key) -> u32 {
        let slots = &mut self.slots;
        *self.index.entry(key).or_insert_with(|| {
            slots.push(Slot::default());
            (slots.len() - 1) as u32
        })
    }

    /// The slot of `key` for a dispatch: the one the previous dispatch's slot predicts
    /// if the prediction names `key` (no hash probe), else through `index`. Updates the
    /// prediction, and prefetches the slot this one predicts: by the time the block has
    /// run, the next dispatch's slot is in the host cache (the slots of ten thousand
    /// blocks, each dispatched again long after, are otherwise a cache miss apiece).
    fn dispatch_slot(&mut self, key: Key) -> u32 {
        let prev = self.prev_slot as usize;
        let i = match self.slots.get(prev) {
            Some(p) if p.succ != NO_SLOT && p.succ_key == key => p.succ,
            Some(p) if p.succ2 != NO_SLOT && p.succ2_key == key => p.succ2,
            _ => self.slot_of(key),
        };
        if let Some(p) = self.slots.get_mut(prev)
            && p.succ != i
        {
            // The newer successor first; the other one kept second.
            (p.succ2_key, p.succ2) = (p.succ_key, p.succ);
            (p.succ_key, p.succ) = (key, i);
        }
        self.pred_slot = self.prev_slot;
        self.prev_slot = i;
        let s = &self.slots[i as usize];
        if let Some(next) = self.slots.get(s.succ as usize) {
            prefetch(next);
            // The block's header, and the first four lines of its instructions (a
            // typical interpreted block is five instructions of 72 bytes).
            let [block, instrs] = s.succ_hint;
            prefetch_ptr(block);
            for line in 0..4 {
                prefetch_ptr(instrs.wrapping_add(64 * line));
            }
        }
        i
    }

    /// The live translation of `key` made from `frame` (every translation in `keys` is
    /// alive: a dead one leaves it).
    fn lookup(&self, key: Key, frame: Frame) -> Option<Live> {
        self.index.get(&key).and_then(|&i| self.slots[i as usize].live).filter(|l| l.frame == frame)
    }

    /// Runs process `ctx` until a system call, a fault or about `budget` instructions.
    pub fn run(&mut self, cpu: &mut Cpu, mem: &mut AddressSpace, ctx: u32, budget: u64) -> Exit {
        if !self.cfg.translate {
            let t0 = Clock::ticks();
            let e = self.interp.run(cpu, mem, budget);
            self.ticks.interp += Clock::ticks() - t0;
            return e;
        }
        self.ticks.start();
        let e = self.dispatch_loop(cpu, mem, ctx, budget);
        self.ticks.switch(Activity::Outside);
        e
    }

    /// `run` with translation on.
    fn dispatch_loop(&mut self, cpu: &mut Cpu, mem: &mut AddressSpace, ctx: u32, budget: u64) -> Exit {
        // Code made from a frame that this space also maps elsewhere, writable (shared
        // memory, a file mapped twice, another process's translation): protect those
        // aliases before translated stores can reach them.
        mem.protect_code_aliases();
        let start = cpu.icount;
        loop {
            let used = cpu.icount - start;
            if used >= budget {
                return Exit::Budget;
            }
            if mem.phys().code_epoch() != self.epoch {
                self.sync_code(mem);
            }
            let eip = cpu.eip;
            // With the trap flag set no translation runs: the interpreter single-steps.
            let traced = cpu.eflags & flags::TF != 0;
            let r = if let Some(pa) = mem.translate(eip).filter(|_| !traced && mem.pte(eip).readable()) {
                let frame = pa.frame();
                let key = Key::new(self.cfg.key, eip, frame, ctx);
                self.stats.lookups += 1;
                let i = self.dispatch_slot(key);
                let slot = &mut self.slots[i as usize];
                match slot.live_from(frame, eip, mem) {
                    Some(l) => {
                        self.stats.hits += 1;
                        if l.owner != ctx {
                            self.stats.foreign_hits += 1;
                        }
                        self.enter(l.body.get() as usize, frame, ctx, cpu, mem, budget - used)
                    }
                    None => {
                        self.stats.misses += 1;
                        slot.count += 1;
                        if slot.count <= self.cfg.threshold || self.untranslatable.contains(&key) {
                            let r = interpret(&mut self.interp, &mut self.ticks, cpu, mem, &mut slot.block);
                            if let Some(h) = slot.block.as_ref().map(CachedBlock::prefetch_hint)
                                && let Some(p) = self.slots.get_mut(self.pred_slot as usize)
                            {
                                p.succ_hint = h;
                            }
                            r
                        } else if let Some(t) = self.translate(key, eip, frame, mem, ctx) {
                            let body = self.trans[t as usize].body;
                            self.enter(body, frame, ctx, cpu, mem, budget - used)
                        } else {
                            self.untranslatable.insert(key);
                            interpret(&mut self.interp, &mut self.ticks, cpu, mem, &mut None)
                        }
                    }
                }
            } else {
                interpret(&mut self.interp, &mut self.ticks, cpu, mem, &mut None) // raises the fetch fault
            };
            if let Err(e) = r {
                return e;
            }
        }
    }

    /// Runs translated code from `body` (the translation at `cpu.eip`, made from
    /// `frame`), after making it, and the other translations of its page, jump-cache
    /// entries of process `ctx`.
    fn enter(
        &mut self,
        body: usize,
        frame: Frame,
        ctx: u32,
        cpu: &mut Cpu,
        mem: &mut AddressSpace,
        budget: u64,
    ) -> Result<(), Exit> {
        let mapping = (mem.mapping_id(), if self.cfg.key == KeyPolicy::Process { ctx } else { 0 });
        self.jc.select(mapping);
        let eip = cpu.eip;
        self.prefill(eip, frame, ctx);
        self.jc.set(eip, (self.code_base + body) as u64);
        self.execute(body, cpu, mem, budget)
    }

    fn translate(&mut self, key: Key, eip: u32, frame: Frame, mem: &mut AddressSpace, ctx: u32) -> Option<u32> {
        self.ticks.switch(Activity::Translate);
        let page_end = (eip | (PAGE_SIZE - 1)).wrapping_add(1);
        let len = page_end.wrapping_sub(eip);
        // The last instruction may straddle into the next page if that page can be read
        // (and is not past the top of the address space).
        let frame2 = if page_end != 0 { next_frame(mem, eip) } else { None };
        // The translation is formed from the interpreter's decoded blocks (decoded once).
        let (interp, id) = (&mut self.interp, self.trans.len() as u32);
        let fetch = |at: u32, out: &mut Vec<Instruction>| interp.decoded_block(at, mem, out);
        let tr = translate::translate_decoded(fetch, eip, helper as *const () as usize, id)?;
        let frame2 = frame2.map(Frame).filter(|_| tr.guest_len > len);
        if self.code.offset() + tr.code.len() > self.code.capacity() {
            self.flush();
        }
        let start = self.code.offset();
        // Never 0: the runtime precedes every translation in the buffer.
        let body = NonZeroU32::new((start + tr.body) as u32)?;
        let mut code = tr.code;
        for &(field, to) in &tr.fixups {
            let target = match to {
                Fixup::ExitCommon => self.exit_common_off,
                Fixup::ExitNosave => self.exit_nosave_off,
            };
            let rel = (target as i64 - (start + field + 4) as i64) as i32;
            code[field..field + 4].copy_from_slice(&rel.to_le_bytes());
        }
        if !self.code.extend(&code) {
            return None;
        }
        self.refresh_code_base();
        let id = self.trans.len() as u32;
        for &(h, g, k) in &tr.points {
            self.fault_map.points.push((h + start as u32, g, k));
        }
        let pa = frame.addr().0 + u64::from(eip & (PAGE_SIZE - 1));
        if !self.seen_pa.insert(pa) {
            self.stats.retranslations += 1;
        }
        self.stats.translations += 1;
        self.stats.translated_guest_instructions += u64::from(tr.instructions);
        self.stats.helper_instructions += u64::from(tr.fallbacks);
        self.fpu_live |= tr.uses_fpu;
        self.trans.push(Translation {
            key,
            frame,
            frame2,
            pa,
            start,
            body: start + tr.body,
            entry: start + tr.entry,
            sites: tr.sites,
            alive: true,
            _helpers: tr.helper_instrs,
        });
        let live = Live { id, frame, frame2: frame2.map_or(NO_FRAME, |f| f.0), body, owner: ctx };
        let i = self.slot_of(key);
        let slot = &mut self.slots[i as usize];
        slot.block = None; // translated: its decoded block is not needed any more
        if let Some(old) = slot.live.replace(live) {
            // Made from another frame (`virtual`, `process`): no jump cache holds it
            // (the mapping changed since, which emptied them).
            self.retire(old.id);
        }
        let entry = FrameEntry { id, key, body: body.get(), straddles: frame2.is_some() };
        self.by_frame.entry(frame).or_default().push(entry);
        mem.mark_code(eip);
        if let Some(f2) = frame2 {
            // A write to either page drops it.
            self.by_frame.entry(f2).or_default().push(entry);
            mem.mark_code(page_end);
        }
        if let Some(f) = &mut self.code_map {
            use std::io::Write;
            let hex: String = code.iter().map(|b| format!("{b:02x}")).collect();
            let line = format!("{start:x} {:x} {eip:08x} {pa:x} {hex}\n", code.len());
            // Best effort, like the file itself.
            let _ = f.write_all(line.as_bytes());
        }
        Some(id)
    }

    fn flush(&mut self) {
        self.flush_jump_cache();
        self.code.clear();
        self.trans.clear();
        self.slots.iter_mut().for_each(|s| s.live = None);
        self.by_frame.clear();
        self.fault_map.points.clear();
        self.stats.flushes += 1;
        self.emit_runtime();
    }

    /// Runs translation `t`; returns `Err` for exits the caller must see.
    fn execute(&mut self, body: usize, cpu: &mut Cpu, mem: &mut AddressSpace, budget: u64) -> Result<(), Exit> {
        self.ticks.switch(Activity::Exec);
        let mut hctx = HelperCtx {
            cpu: cpu as *mut Cpu,
            mem: mem as *mut AddressSpace,
            interp: &mut self.interp as *mut Interp,
            pending: None,
            epoch: mem.phys().code_epoch(),
        };
        {
            let st = &mut *self.state;
            st.gpr = cpu.gpr;
            st.eflags = cpu.eflags & LIVE_FLAGS;
            st.page_va = cpu.eip & !(PAGE_SIZE - 1);
            st.eip = cpu.eip;
            // Chained entries allowed: a block runs 1..=MAX_INSTRUCTIONS instructions, so
            // the slice ends after `budget` to MAX_INSTRUCTIONS × `budget` instructions
            // (typically a few times `budget`), with a single exit and deterministically.
            st.limit = budget.max(1);
            st.icount = 0;
            st.exit = 0;
            st.fs_base = cpu.seg_base[seg::FS];
            st.gs_base = cpu.seg_base[seg::GS];
            st.ctx = (&mut hctx as *mut HelperCtx).cast();
            st.jc = self.jc.entries.as_mut_ptr();
            st.jc_tag = u64::from(self.jc.tag) << 32;
            st.window = mem.host_base() as u64;
            st.fpu = &mut *cpu.fpu;
            st.fpu_live = u32::from(self.fpu_live);
        }
        let window = mem.host_base() as usize;
        runtime::set_window(window);
        let base = self.code_base;
        self.fault_map.window = window;
        self.fault_map.state = &mut *self.state;
        self.fault_map.aspace = mem as *mut AddressSpace;
        runtime::set_fault_map(&*self.fault_map);
        let body = base + body;
        // SAFETY: `enter` is the trampoline emitted by `emit_runtime` into this buffer; it
        // follows the C ABI, saves the callee-saved registers, and runs translated code
        // that touches only the guest window (through gs), the state block and, via the
        // helper, the CPU, memory and interpreter passed in `hctx`, none of which is used
        // by this function until it returns. The buffer is only changed (and can only
        // move) in the dispatcher, after which `code_base` is re-read.
        unsafe {
            let enter: extern "C" fn(*mut JitState, usize) = std::mem::transmute(base + self.enter_off);
            enter(&mut *self.state, body);
        }
        runtime::set_fault_map(std::ptr::null());
        let st = &*self.state;
        cpu.gpr = st.gpr;
        cpu.eflags = (cpu.eflags & !LIVE_FLAGS) | (st.eflags & LIVE_FLAGS);
        cpu.eip = st.eip;
        let (executed, jc_hits) = runtime::split_count(st.icount);
        cpu.icount += executed;
        self.stats.translated_instructions += executed;
        self.stats.jump_cache_hits += jc_hits;
        if let Some(n) = self.stats.exits.get_mut((st.exit as usize).wrapping_sub(1)) {
            *n += 1;
        }
        match st.exit {
            EXIT_BRANCH => {
                if self.cfg.chain {
                    self.try_chain(st.exit_site >> 8, (st.exit_site & 0xff) as usize, cpu.eip, mem);
                }
                Ok(())
            }
            EXIT_INDIRECT | EXIT_BUDGET => Ok(()),
            EXIT_SYSCALL => Err(Exit::Syscall),
            EXIT_FAULT => {
                // Re-run the instruction in the interpreter: it completes a write to a
                // copy-on-write or code page, or raises the precise guest fault.
                self.stats.host_faults += 1;
                self.interp.step_at(cpu, mem)
            }
            EXIT_HELPER => match hctx.pending.take() {
                Some(e) => Err(e),
                None => Ok(()),
            },
            other => unreachable!("bad exit code {other}"),
        }
    }

    /// Patches site `site` of translation `from` to jump straight to the translation of
    /// `target`, if there is one on the same page (same frame) and the key agrees.
    fn try_chain(&mut self, from: u32, site: usize, target: u32, mem: &AddressSpace) {
        let f = &self.trans[from as usize];
        if !f.alive {
            return;
        }
        let Some(&s) = f.sites.get(site) else { return };
        let from_va = target.wrapping_sub(s.target_delta as u32);
        if from_va >> 12 != target >> 12 {
            return; // only within a page: no mapping check needed on the chained path
        }
        let pte = mem.pte(target);
        if !pte.readable() || pte.frame() != f.frame {
            return;
        }
        let key = Key::new(self.cfg.key, target, pte.frame(), f.key.ctx());
        let Some(to) = self.lookup(key, pte.frame()) else { return };
        if to.frame2 != NO_FRAME {
            // The target straddles into the next page: a chain would skip the check of
            // that page's mapping. The site's exit goes through the jump cache instead.
            let field = f.start + s.exit_jmp;
            let rel = (self.lookup_off as i64 - (field as i64 + 4)) as i32;
            self.code.patch(field, &rel.to_le_bytes());
            return;
        }
        let field = f.start + s.rel;
        // Every cycle of chained blocks has an edge to a block that starts no later than
        // the edge's own block (addresses cannot rise all the way round): only those
        // edges enter through the budget check, forward edges go straight to the body.
        let t = &self.trans[to.id as usize];
        let dest = if s.target_delta > 0 { t.body } else { t.entry };
        let rel = (dest as i64 - (field as i64 + 4)) as i32;
        if self.code.patch(field, &rel.to_le_bytes()) {
            self.stats.chain_patches += 1;
        }
    }
}

/// The frame of the page after `eip`'s, if that page is mapped readable.
#[inline]
fn next_frame(mem: &AddressSpace, eip: u32) -> Option<u32> {
    let next = (eip | (PAGE_SIZE - 1)).wrapping_add(1);
    let p = mem.pte(next);
    (next != 0 && p.readable() && p.has_frame()).then(|| p.frame().0)
}

/// `ins` as if decoded at `eip` (same bytes, another address): instruction pointers and
/// relative branch targets move with it.
fn relocated(ins: &Instruction, eip: u32) -> Instruction {
    let delta = eip.wrapping_sub(ins.ip32());
    if delta == 0 {
        return *ins;
    }
    let mut i = *ins;
    i.set_ip32(eip);
    i.set_next_ip32(ins.next_ip32().wrapping_add(delta));
    for op in 0..i.op_count() {
        if let iced_x86::OpKind::NearBranch32 = i.op_kind(op) {
            i.set_near_branch32(ins.near_branch32().wrapping_add(delta));
        }
    }
    i
}

/// The fallback: runs one guest instruction in the reference interpreter on behalf of
/// translated code. Returns 0 to continue, 1 to leave (the state says why).
extern "C" fn helper(st: *mut JitState, ins: *const Instruction) -> u32 {
    // SAFETY: translated code passes its own state block and an instruction owned by
    // the translation; `ctx` was set by `execute` to a live HelperCtx whose pointers are
    // not otherwise used while translated code runs.
    unsafe {
        let st = &mut *st;
        let h = &mut *(st.ctx as *mut HelperCtx);
        let (cpu, mem, interp) = (&mut *h.cpu, &mut *h.mem, &mut *h.interp);
        cpu.gpr = st.gpr;
        cpu.eflags = (cpu.eflags & !LIVE_FLAGS) | (st.eflags & LIVE_FLAGS);
        cpu.eip = st.eip;
        // The instruction was decoded where the block was first translated; under the
        // physical key the block may now run at another address: relocate it.
        let ins = relocated(&*ins, st.eip);
        // The instruction count as the guest sees it here (rdtsc reads it).
        let entry = cpu.icount;
        cpu.icount = entry + runtime::split_count(st.icount).0 + u64::from(st.helper_k);
        let before = cpu.icount;
        let interp_before = interp.stats.instructions;
        let r = interp.step(cpu, mem, &ins);
        let retired = cpu.icount - before;
        cpu.icount = entry;
        // Counted as executed in the translation, not as interpreted.
        interp.stats.instructions = interp_before;
        st.gpr = cpu.gpr;
        st.eflags = cpu.eflags & LIVE_FLAGS;
        st.eip = cpu.eip;
        st.fs_base = cpu.seg_base[seg::FS];
        st.gs_base = cpu.seg_base[seg::GS];
        match r {
            Ok(()) if mem.phys().code_epoch() == h.epoch && cpu.eflags & flags::TF == 0 => 0,
            Ok(()) => {
                // The instruction wrote code: leave so the engine drops stale code. Or
                // it set the trap flag (`popf`): leave, the interpreter single-steps.
                st.icount += u64::from(st.helper_k) + retired;
                st.exit = EXIT_INDIRECT;
                1
            }
            Err(e) => {
                st.icount += u64::from(st.helper_k) + retired;
                h.pending = Some(e);
                st.exit = EXIT_HELPER;
                1
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What translated code's lookup finds for `va` under the current tag.
    fn hit(jc: &JumpCache, va: u32) -> Option<u64> {
        let e = jc.entries[runtime::jc_index(va)];
        (e.key == JcEntry::key(jc.tag, va)).then_some(e.host)
    }

    #[test]
    fn jump_cache_entries_survive_a_process_switch_and_not_an_invalidation() {
        const EMPTY: u64 = 0xdead;
        let mut jc = JumpCache::new();
        jc.reset(EMPTY);
        let (parent, other) = ((7, 0), (8, 0));
        assert!(jc.select(parent));
        assert!(!jc.select(parent), "already current");
        jc.set(0x0804_8000, 1);
        assert_eq!(hit(&jc, 0x0804_8000), Some(1));
        assert_eq!(hit(&jc, 0x0805_8000), None, "same index, other VA");
        jc.select(other);
        assert_eq!(hit(&jc, 0x0804_8000), None, "another mapping does not see it");
        jc.set(0x0804_9000, 2);
        jc.select(parent);
        assert_eq!(hit(&jc, 0x0804_8000), Some(1), "back to the parent: its entry is there");
        assert_eq!(hit(&jc, 0x0804_9000), None);
        assert!(!jc.page_done(0x0804_8000) && jc.page_done(0x0804_8000));
        let before = jc.tag;
        jc.invalidate();
        assert_ne!(jc.tag, before);
        assert_eq!(hit(&jc, 0x0804_8000), None, "emptied");
        assert!(!jc.page_done(0x0804_8000), "prefilled pages are forgotten too");
        jc.select(other);
        assert_eq!(hit(&jc, 0x0804_9000), None, "every mapping's entries are gone");
        // An empty entry (tag 0) never hits: tag 0 is never current.
        assert!(jc.tag != 0 && jc.last_tag != 0);
    }

    #[test]
    fn jump_cache_tags_wrap_by_resetting_every_entry() {
        const EMPTY: u64 = 0xdead;
        let mut jc = JumpCache::new();
        jc.reset(EMPTY);
        jc.select((1, 0));
        jc.set(0x1000, 5);
        jc.last_tag = u32::MAX;
        jc.select((2, 0));
        assert!(jc.tag != 0 && jc.tag < 4, "restarted");
        assert!(jc.entries.iter().all(|e| e.key == 0 && e.host == EMPTY), "every entry reset");
    }
}
