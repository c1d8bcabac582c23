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
//! | `file` | guest PA; before translating, (file, page, offset) finds a copy to reuse | as physical |
//! | `content` | guest PA; before translating, the guest bytes find a copy to reuse | as physical |
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
//!
//! Its parts, one concern per module (as QEMU separates lookup, maintenance and
//! generation):
//!
//! | module | what |
//! |---|---|
//! | `key` | [`KeyPolicy`]: parses, prints, makes keys, and holds every policy rule |
//! | `slots` | per-key slots (live translation, profile count, decoded block), the index, successor prediction |
//! | `dispatch` | the dispatch loop: lookup, interpret or translate, enter |
//! | `generate` | fetching a hot block, translating it, placing its host code |
//! | `made` | a translation ready to be placed (translated, copied or loaded) |
//! | `tcache` | the persistent translation cache across runs (`--tcache-dir`; the store is `persist`) |
//! | `maintain` | retiring, invalidating written code, dropping a process's keys, flushing |
//! | `capacity` | the cache's size against `--tc-size` |
//! | `reuse` | copying another frame's translation of the same code (`file`, `content`) |
//! | `chain` | patching exits to jump straight to other translations |
//! | `jump_cache` | the (tag, VA) → host code table read by translated indirect branches |
//! | `ibt` | the indirect-branch tables in front of it: one entry per guest VA, per tag |
//! | `layout` | where translations go in the code buffer (`--layout-seed`) |
//! | `abi` | the runtime stubs, entering translated code and decoding its exits, the fallback helper |
//! | `glue` | the host code of the stubs, the table and jump-cache lookups and the helper call (dynasm-rs) |
//! | `runtime` | the state block, the register assignment, fixed-layout glue, the host fault handler |
//! | `code` | the dual-mapped code buffer |
//! | `translate` | the translator: one block of IA-32 to x86-64 |
//!
//! [`AddressSpace`]: morph_mem::AddressSpace

mod abi;
mod capacity;
mod chain;
mod clock;
mod code;
mod dispatch;
mod generate;
mod glue;
mod ibt;
mod jump_cache;
mod key;
mod layout;
mod made;
mod maintain;
pub mod persist;
mod ras;
mod reuse;
mod runtime;
mod slots;
mod tcache;
pub mod translate;

pub use capacity::{CRUSOE_TC_SIZE, DEFAULT_TC_SIZE, MIN_TC_SIZE, TC_PROFILES, parse_tc_size};
pub use glue::decode_host;
pub use key::{KeyPolicy, UnknownKey};
pub use tcache::TcacheStats;

use clock::Clock;
use code::CodeBuffer;
use generate::Translation;
use jump_cache::JumpCache;
use key::Key;
use morph_cpu::Interp;
use morph_mem::Frame;
use runtime::FaultMap;
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use slots::{FrameEntry, NO_SLOT, Slot};

/// Keys the slot vector is first reserved for.
const INITIAL_KEYS: usize = 1 << 16;

/// Translations the translation vector, and the fault map's per-translation vector,
/// are first reserved for; the fault map's points (one per translated guest
/// instruction that may fault) get [`INITIAL_POINTS`]. Reserved, not touched, as the
/// slots are: growing them by doubling in `place` reallocated them into fresh heap
/// pages at each step (4 % of a python start's samples, the copies and the huge pages
/// the kernel zeroed for them).
const INITIAL_TRANSLATIONS: usize = 1 << 13;
const INITIAL_POINTS: usize = 1 << 17;

/// Engine configuration.
#[derive(Clone, Debug)]
pub struct EngineConfig {
    /// Translate at all (`--engine dbt`) or only interpret (`--engine interp`).
    pub translate: bool,
    /// The cache key.
    pub key: KeyPolicy,
    /// Block executions before translation (0: translate at first execution).
    pub threshold: u32,
    /// Executions a block's count gains, on top of the one, when an address space other
    /// than the last one to run it runs it (`--space-credit`; 0, the default: none). A
    /// credit of the threshold translates code at its first run in a second process: the
    /// start-up paths every exec of a program runs once. See `dispatch_loop`.
    pub space_credit: u32,
    /// Chain translations to each other.
    pub chain: bool,
    /// Predict returns with the return stack (`--ras`; see `ras`). Off by default: on
    /// the real-program suite the jump cache, whose per-site jumps the host predicts
    /// well, was as fast or faster (docs/engine.md).
    pub ras: bool,
    /// Check the target an indirect branch had every time it was interpreted inline, and
    /// jump to it directly (`--no-ic` turns it off; see `translate::Options::predict`).
    pub predict: bool,
    /// Look indirect-branch targets up in the indirect-branch table, in front of the
    /// jump cache (`--no-ibt` turns it off; see `ibt`). `Engine::new` turns it off if
    /// the host refuses the table's address space or the code buffer is 2 GiB or more.
    pub ibt: bool,
    /// Chain edges into other pages past their target's check of the mapping and EIP,
    /// and unlink them when the mapping changes instead, while one address space runs
    /// (`--check-far-edges` turns it off; see `chain::FarLinks`).
    pub unlink_far: bool,
    /// Run counted self-loops as a clean copy once their trip count is checked
    /// (`--no-counted-loops` turns it off; see `translate::counted`).
    pub counted: bool,
    /// Branch on flag-free tests (inline caches, PC thunks) with `loop` falling through
    /// (`Some(false)`), or with `jrcxz` taken (`Some(true)`: `translate::Options::slow_loop`);
    /// `None` (`--flag-free-branch auto`): `loop` on AMD hosts, whose cores run it as
    /// one µop, `jrcxz` on others (Intel's decode `loop` to about seven).
    pub slow_loop: Option<bool>,
    /// Place translations at pseudo-random distances from each other, drawn from this
    /// seed (`--layout-seed`; `None`: back to back). Host code runs at speeds that
    /// depend on where it sits (docs/results.md § Stop 27: ±10 % per program from
    /// placement alone on the AMD EPYC host), so comparing two builds on one layout
    /// each measures their layouts as much as their code; runs under several seeds
    /// average the placement out, as Stabilizer does for native code (Curtsinger and
    /// Berger, ASPLOS 2013). The guest sees no difference: only host addresses move.
    pub layout_seed: Option<u64>,
    /// Describe every translation in this file (`--code-map`): one line per translation,
    /// `<offset in the code buffer> <size> <guest EIP> <guest PA> <host code in hex>`,
    /// all hex. `perf report` names samples in translated code `memfd:morph-code` plus
    /// that offset; `benches/code-map.py` disassembles the translations around them.
    pub code_map: Option<std::path::PathBuf>,
    /// The translation cache's capacity in bytes (`--tc-size`): host code and the
    /// records of keys and translations; the whole cache is flushed when it is reached.
    pub tc_size: usize,
    /// The persistent translation cache's directory (`--tcache-dir`), if any.
    pub tcache_dir: Option<std::path::PathBuf>,
    /// The most bytes of module files it keeps (`--tcache-size`); the least recently
    /// used files are evicted beyond it.
    pub tcache_size: u64,
    /// Cold blocks kept too (`--tcache-cold N`): at the end of a run, the blocks of
    /// file-backed code that ran at least this many times but never became hot are
    /// translated and kept, so that a later run loads them instead of interpreting
    /// them (0: none, only the translations made while running; 1: every block that
    /// ran). Loading a translation costs a few microseconds, several times what
    /// interpreting a block that runs a few times does.
    pub tcache_cold: u32,
    /// Split the engine's time into interpreting, translating and running translated
    /// code (`interp_ns`, `translate_ns`, `exec_ns`): two clock reads per interpreted
    /// block, which the CLI pays only when statistics are asked for (see `clock`).
    pub time_split: bool,
    /// The modeled CPU (`--cpu`): on one with SSE, SSE and SSE2 instructions are
    /// translated to run on the host with the guest's XMM registers in the host's.
    pub cpu: morph_cpu::cpuid::Model,
}

impl EngineConfig {
    /// The translator's switches under this configuration.
    pub fn translate_options(&self) -> translate::Options {
        translate::Options {
            ras: self.ras,
            predict: self.predict,
            ibt: self.ibt,
            counted: self.counted,
            slow_loop: self.uses_jrcxz(),
            sse: self.cpu.has_sse(),
            // Copies (`reuse`) and kept translations (`tcache`) would not carry the
            // dependency on the thunk's page: they keep the run-time check.
            thunk_deps: self.tcache_dir.is_none() && !matches!(self.key, KeyPolicy::File | KeyPolicy::Content),
        }
    }

    /// Whether flag-free tests branch with `jrcxz` ([`EngineConfig::slow_loop`], `None`
    /// resolved for this host).
    pub fn uses_jrcxz(&self) -> bool {
        self.slow_loop.unwrap_or_else(|| !morph_cpu::host::amd_like())
    }
}

/// The persistent cache's default size limit.
pub const DEFAULT_TCACHE_SIZE: u64 = 256 << 20;

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            translate: false,
            key: KeyPolicy::Physical,
            threshold: DEFAULT_THRESHOLD,
            space_credit: 0,
            chain: true,
            ras: false,
            predict: true,
            ibt: true,
            counted: true,
            slow_loop: None,
            unlink_far: true,
            layout_seed: None,
            code_map: None,
            tc_size: DEFAULT_TC_SIZE,
            tcache_dir: None,
            tcache_cold: 0,
            tcache_size: DEFAULT_TCACHE_SIZE,
            time_split: true,
            cpu: morph_cpu::cpuid::Model::Tm5600,
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
    /// Translations copied from another frame's translation of the same code instead of
    /// translated (`file` and `content` policies).
    pub reuses: u64,
    /// Translations loaded from the persistent cache (`--tcache-dir`) instead of
    /// interpreted and translated.
    pub tcache_loads: u64,
    /// Translations of physical code that had been translated before under another key.
    pub retranslations: u64,
    /// Translations made before the block's own executions reached the threshold, its
    /// count raised by runs in other address spaces (`EngineConfig::space_credit`).
    pub credited_translations: u64,
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
    /// Exits from translated code that left the guest's x87 state in the host FPU
    /// instead of saving it (it is saved only when the interpreter or the OS layer
    /// needs it: see `glue`'s `fpu_exit`).
    pub fpu_lazy_exits: u64,
    /// Calls of PC thunks translated inline (static count, new translations).
    pub pc_thunks: u64,
    /// Translations whose closing call of a PLT stub takes the stub's jump itself
    /// (static count, new translations; see `translate::block`).
    pub plt_calls: u64,
    /// Translations whose closing indirect branch checks a predicted target inline
    /// (static count, new translations; see `translate::Options::predict`).
    pub predicted_branches: u64,
    /// Translations holding a counted loop's clean copy (static count, new
    /// translations; see `translate::counted`).
    pub counted_loops: u64,
    /// Host faults inside translated code that left it (a guest fault, code written,
    /// an instruction re-run by the interpreter).
    pub host_faults: u64,
    /// Host faults inside translated code resolved in the fault handler and retried: a
    /// guest page hosted in the process's window at its first touch, or a copy-on-write
    /// break (the cost of hosting lazily; not in `host_faults`).
    pub window_faults: u64,
    /// Live translations.
    pub blocks: u64,
    /// Bytes of host code in the cache (without `layout_pad_bytes`).
    pub host_bytes: u64,
    /// Bytes between translations put there by `--layout-seed` (see
    /// `EngineConfig::layout_seed`), in the cache now.
    pub layout_pad_bytes: u64,
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
    /// Chain patches of edges into another page (to the target's far entry; also
    /// counted in `chain_patches`).
    pub far_chains: u64,
    /// Of those, edges chained past the target's check (`chain::FarLinks`).
    pub far_unchecked: u64,
    /// Times the unchecked far edges were all unlinked (the mapping changed, a second
    /// address space ran, or a page of code was seen at a second address).
    pub far_unlinks: u64,
    /// Returns in translated code that the return stack did not predict (they took
    /// the jump cache).
    pub ras_misses: u64,
    /// Lookups that hit a translation another process made: translations shared
    /// across processes (possible under the `virtual` and `physical` keys).
    pub foreign_hits: u64,
    /// Returns from translated code to the dispatcher, by reason: unchained direct
    /// branch, indirect branch (jump-cache miss), system call, host fault, budget, helper
    /// (`EXIT_*` - 1).
    pub exits: [u64; 6],
}

/// The engine: the interpreter, the translation cache and the runtime.
pub struct Engine {
    cfg: EngineConfig,
    interp: Interp,
    code: CodeBuffer,
    enter_off: usize,
    exit_common_off: usize,
    /// Offset of the indirect-branch tables' miss routine.
    table_miss_off: usize,
    exit_nosave_off: usize,
    /// The shared jump-cache lookup (`glue::shared_lookup`).
    lookup_off: usize,
    /// Far edges chained past their target's check (`chain::FarLinks`).
    far: chain::FarLinks,
    trans: Vec<Translation>,
    /// Per key: its live translation, with what a dispatch needs of it (so a hit does not
    /// touch `trans`, whose entries are cold by the time the guest comes back), its
    /// profile count and its decoded block, in one slot, found through `index`. Slots
    /// never move, so that each can name the slot dispatched after it last time (a slot
    /// freed under `process` is given to another key only after every such name was
    /// forgotten).
    slots: Vec<Slot>,
    index: HashMap<Key, u32>,
    /// Slots of keys that can never be dispatched again (a process's, under `process`,
    /// after its exec or exit), given to new keys first: without them a machine running
    /// process after process grew by every process's slots.
    free_slots: Vec<u32>,
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
    /// The return stack translated code runs on.
    ras: ras::ReturnStack,
    /// The jump-cache tag and resets when the return stack was last emptied.
    ras_tag: u64,
    ras_resets: u64,
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
    /// Translations kept to be copied (`file`, `content`), and their identities.
    templates: Vec<reuse::Template>,
    identities: HashMap<u64, Vec<u32>>,
    /// Bytes the templates cost.
    template_bytes: usize,
    /// The code map file, when `EngineConfig::code_map` is set (buffered: a line per
    /// translation; written out when the engine is dropped).
    code_map: Option<std::io::BufWriter<std::fs::File>>,
    /// The persistent translation cache, when `EngineConfig::tcache_dir` is set.
    tcache: Option<tcache::Tcache>,
    /// Where translations are placed (`EngineConfig::layout_seed`).
    layout: layout::Layout,
}

impl Engine {
    /// A new engine; fails if the host refuses the code buffer (a memfd mapped twice).
    pub fn new(cfg: EngineConfig) -> std::io::Result<Engine> {
        let mut fault_map = Box::<FaultMap>::default();
        if cfg.translate {
            fault_map.points.reserve_exact(INITIAL_POINTS);
            fault_map.starts.reserve_exact(INITIAL_TRANSLATIONS);
            runtime::install_fault_handler();
            fault_map.budget_guard = runtime::budget_guard()
                .ok_or_else(|| std::io::Error::other("the host refused the budget region (16 MiB of address space)"))?;
        }
        let cap = cfg.tc_size.max(MIN_TC_SIZE);
        let cfg_layout_seed = cfg.layout_seed;
        let time_split = cfg.time_split;
        // The tables hold 32-bit offsets into the code buffer.
        let jc = JumpCache::new(cfg.ibt && cfg.translate && cap < 1 << 31)?;
        let mut cfg = cfg;
        cfg.ibt &= jc.has_tables();
        let mut e = Engine {
            cfg,
            interp: Interp::new(),
            code: CodeBuffer::new(cap)?,
            enter_off: 0,
            exit_common_off: 0,
            table_miss_off: 0,
            exit_nosave_off: 0,
            lookup_off: 0,
            far: chain::FarLinks::default(),
            trans: Vec::with_capacity(INITIAL_TRANSLATIONS),
            // Room for a large program's start-up (python3 makes ~40 k keys before its
            // first line of Python), reserved, not touched: growing by doubling copied
            // the slots into fresh heap pages at each step (a third of a cold dynamic
            // hello's host page faults in the engine).
            slots: Vec::with_capacity(INITIAL_KEYS),
            index: HashMap::default(),
            free_slots: Vec::new(),
            prev_slot: NO_SLOT,
            pred_slot: NO_SLOT,
            by_frame: HashMap::default(),
            seen_pa: HashSet::default(),
            untranslatable: HashSet::default(),
            ras: ras::ReturnStack::new()?,
            ras_tag: 0,
            ras_resets: 0,
            fault_map,
            stats: EngineStats::default(),
            clock: Clock::new(),
            ticks: clock::Ticks::new(time_split),
            epoch: 0,
            code_base: 0,
            jc,
            fpu_live: false,
            code_map: None,
            templates: Vec::new(),
            identities: HashMap::default(),
            template_bytes: 0,
            tcache: None,
            layout: layout::Layout::new(cfg_layout_seed),
        };
        if let Some(path) = &e.cfg.code_map {
            // A profiling aid: if the file cannot be made, translated code stays unnamed.
            e.code_map = std::fs::File::create(path).ok().map(|f| std::io::BufWriter::with_capacity(1 << 16, f));
        }
        // Under the `physical` key a slot's key is its block's physical address, and the
        // slot keeps the decoded block: the interpreter's own table of them would repeat it.
        let physical = e.cfg.translate && e.cfg.key == KeyPolicy::Physical;
        e.interp.share_blocks(!physical);
        e.ras.attach(&mut e.jc.frame.state);
        e.emit_runtime();
        // Opened once the translator's options are known (the build id includes them).
        if let Some(dir) = e.cfg.tcache_dir.clone().filter(|_| e.cfg.translate) {
            e.tcache = Some(tcache::Tcache::open(&dir, e.cfg.tcache_size, e.translate_options())?);
        }
        Ok(e)
    }

    /// The translator's options: the configuration's switches, and what the engine's
    /// state allows.
    pub(crate) fn translate_options(&self) -> translate::Options {
        let o = self.cfg.translate_options();
        // With a second address space running, a chain to a translation that depends
        // on its thunk's page could not be unlinked when that space's mapping differs
        // (`chain::FarLinks`): new translations keep the run-time check, and chain.
        translate::Options { thunk_deps: o.thunk_deps && !self.far_all_checked(), ..o }
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
        s.host_bytes = (self.code.offset() - self.layout.pad_bytes) as u64;
        s.layout_pad_bytes = self.layout.pad_bytes as u64;
        let ns = self.clock.ns_per_tick();
        s.interp_ns = (self.ticks.interp as f64 * ns) as u64;
        s.translate_ns = (self.ticks.translate as f64 * ns) as u64;
        s.exec_ns = (self.ticks.exec as f64 * ns) as u64;
        s
    }

    /// The persistent cache's counters, if it is on.
    pub fn tcache_stats(&self) -> Option<TcacheStats> {
        self.tcache.as_ref().map(tcache::Tcache::stats)
    }

    /// Writes the translations made this run to the persistent cache (the hot ones are
    /// also written when the engine is dropped; call this first to count them in
    /// [`Engine::tcache_stats`]). With `phys` and [`EngineConfig::tcache_cold`], the
    /// blocks of file-backed code that ran that often but never became hot are
    /// translated and kept too, so that a later run interprets none of them.
    pub fn save_tcache(&mut self, phys: Option<&morph_mem::PhysMem>) {
        if self.tcache.is_none() {
            return;
        }
        if let Some(phys) = phys {
            self.keep_cold(phys);
        }
        if let Some(t) = &mut self.tcache {
            t.save();
        }
    }

    /// Gives up the per-block caches (the slots and their decoded blocks, the
    /// translations' records, the fault map's points) without freeing them one by
    /// one, for a process about to exit: the host takes the memory back at once, while
    /// tearing down tens of thousands of small allocations is a visible part of a short
    /// run (6 % of `python3 -S -c pass`). The engine is left flushed (the flush not
    /// counted), usable.
    pub fn abandon_caches(&mut self) {
        std::mem::forget(std::mem::take(&mut self.slots));
        std::mem::forget(std::mem::take(&mut self.index));
        std::mem::forget(std::mem::take(&mut self.by_frame));
        std::mem::forget(std::mem::take(&mut self.fault_map.points));
        std::mem::forget(std::mem::take(&mut self.fault_map.starts));
        self.interp.abandon_blocks();
        let flushes = self.stats.flushes;
        self.flush();
        self.stats.flushes = flushes;
    }

    /// The interpreter (for its own counters).
    pub fn interp(&self) -> &Interp {
        &self.interp
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        self.save_tcache(None);
    }
}
