//! The persistent translation cache in the engine (`--tcache-dir DIR`): translations of
//! file-backed code are written to the store ([`crate::persist`]) when the run ends, and
//! a later run loads them at a block's **first** miss, before it is interpreted once.
//!
//! A kept translation is position-independent host code (every EIP-dependent value is
//! `r14d + offset`) plus its relocation records: the rel32 exits to the runtime stubs
//! (fixups, resolved at placement like any translation's), the exit-stub immediates that
//! hold the translation's number, and the two absolute host addresses a helper call
//! bakes in (`translate::Reloc`): the helper function's, different in every run of a
//! position-independent morph, and the boxed instruction the helper runs, which is not
//! stored but decoded again from the guest bytes at load. A translation is filed under
//! its module (the file's identity), the offset of its first byte in the file and a
//! hash of its guest bytes; it is used only where the guest bytes at hand hash the same,
//! so a changed file, another mapping or a hash of other code costs a miss, never a
//! wrong translation. Code that no file backs (anonymous, copy-on-write copies, pages
//! written through `write(2)`) is not kept.

use std::io;
use std::path::Path;

use iced_x86::{Decoder, DecoderOptions, Instruction};
use morph_mem::{AddressSpace, FileId, Frame, PAGE_SIZE};
use rustc_hash::FxHashMap as HashMap;

use crate::key::Key;
use crate::made::Made;
use crate::persist::{self, Entry, ModuleFile, ModuleId, Store, StoreStats};
use crate::translate::{Fixup, Reloc, Site};

/// The engine's side of the persistent cache.
pub(crate) struct Tcache {
    store: Store,
    /// The file of each module seen this run (loaded at its first block; `None`: no
    /// valid file).
    loaded: HashMap<ModuleId, Option<Loaded>>,
    /// Translations made this run, to be stored.
    pending: HashMap<ModuleId, Vec<Entry>>,
    /// The module, offset and guest hash of each of them.
    pending_keys: rustc_hash::FxHashSet<(ModuleId, u32, [u8; 32])>,
    /// Loaded translations used (their guest bytes hashed the same).
    pub(crate) used: u64,
    /// Entries whose payload did not decode (counted with the rejected files).
    pub(crate) bad: u64,
    /// Entries that could not be written (an I/O error at the end of the run).
    pub(crate) lost: u64,
    /// Cold blocks translated at the end of the run to be kept.
    pub(crate) cold: u64,
    /// Each key met this run with file-backed code: its frame and page offset (the key
    /// alone names no frame under `virtual` and `process`).
    pub(crate) seen: Vec<(Key, Frame, u32)>,
}

/// A module's file as loaded, with its entries indexed by file offset.
struct Loaded {
    file: ModuleFile,
    by_offset: HashMap<u64, Vec<u32>>,
}

impl Loaded {
    fn new(file: ModuleFile) -> Loaded {
        let mut by_offset: HashMap<u64, Vec<u32>> = HashMap::default();
        for (i, e) in file.entries().iter().enumerate() {
            by_offset.entry(u64::from(e.offset)).or_default().push(i as u32);
        }
        Loaded { file, by_offset }
    }

    /// The entries filed at `offset`.
    fn at(&self, offset: u64) -> impl Iterator<Item = &persist::Listed> {
        let list = self.by_offset.get(&offset).map_or(&[][..], |l| &l[..]);
        list.iter().filter_map(|&i| self.file.entries().get(i as usize))
    }
}

/// What a loaded translation's relocations (`translate::Reloc`) are set to in this run.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RunHost {
    /// The helper function's address.
    pub(crate) helper: usize,
}

/// The persistent cache's counters.
#[derive(Clone, Copy, Debug, Default)]
pub struct TcacheStats {
    /// Module files read and accepted.
    pub files_loaded: u64,
    /// Translations read from them.
    pub loaded: u64,
    /// Loaded translations used: the guest bytes matched (validated), placed and run.
    pub validated: u64,
    /// Files rejected (truncated, corrupt, foreign build, failed MAC) and entries that did
    /// not decode: ignored, never executed.
    pub rejected: u64,
    /// Translations added to the store by this run.
    pub stored: u64,
    /// Of the kept translations, cold blocks (run, never hot) translated at the end of
    /// the run only to be stored.
    pub cold: u64,
    /// Translations that could not be written (an I/O error).
    pub lost: u64,
    /// Module files evicted by the size limit.
    pub evicted: u64,
}

/// The module of a file page, as the store names it.
fn module(f: FileId) -> ModuleId {
    ModuleId { dev: f.dev, ino: f.ino, size: f.size, mtime_ns: f.mtime_ns }
}

/// The build identity: morph's package version, its executable's identity (device,
/// inode, size and modification time), so any rebuild makes the cache foreign, and the
/// translator's switches (a translation made with the return stack, or with predicted
/// indirect branches, or for a model with SSE, or on a host that hides the x87 pointers,
/// is kept apart from one made without).
/// (Hashing the executable itself would cost a read of tens of MiB per run.)
fn build_id(opts: crate::translate::Options) -> io::Result<[u8; 32]> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata("/proc/self/exe")?;
    let mut h = blake3::Hasher::new();
    h.update(&persist::build_id(env!("CARGO_PKG_VERSION"), ""));
    h.update(&[
        u8::from(opts.ras),
        u8::from(opts.predict),
        u8::from(opts.ibt),
        u8::from(opts.counted),
        u8::from(opts.slow_loop),
        // The modeled CPU: SSE re-encoded or left to the interpreter's #UD, and which
        // XMM registers the translator's own code may use.
        u8::from(opts.sse),
        // The host's x87 pointer rule: where its `fxsave` hides them (AMD's), translated
        // code stores the guest's FDP itself (`runtime::x87_fdp`).
        u8::from(morph_cpu::state::host_fxsave_hides_pointers()),
    ]);
    for v in [m.dev(), m.ino(), m.size(), m.mtime() as u64, m.mtime_nsec() as u64] {
        h.update(&v.to_le_bytes());
    }
    Ok(*h.finalize().as_bytes())
}

impl Tcache {
    /// Opens the store in `dir`, keeping at most `limit` bytes, for translations made with
    /// `opts`.
    pub(crate) fn open(dir: &Path, limit: u64, opts: crate::translate::Options) -> io::Result<Tcache> {
        Ok(Tcache {
            store: Store::open(dir, limit, build_id(opts)?)?,
            loaded: HashMap::default(),
            pending: HashMap::default(),
            pending_keys: Default::default(),
            used: 0,
            bad: 0,
            lost: 0,
            cold: 0,
            seen: Vec::new(),
        })
    }

    /// The counters.
    pub(crate) fn stats(&self) -> TcacheStats {
        let s: StoreStats = self.store.stats();
        TcacheStats {
            files_loaded: s.files_loaded,
            loaded: s.entries_loaded,
            validated: self.used,
            rejected: s.rejected + self.bad,
            stored: s.stored,
            cold: self.cold,
            lost: self.lost,
            evicted: s.evicted,
        }
    }

    /// Where the block at `eip` (in `frame`) lies in a file: its module and offset.
    pub(crate) fn place_of(eip: u32, frame: Frame, mem: &AddressSpace) -> Option<(ModuleId, u64)> {
        let fp = mem.phys().file_page(frame)?;
        Some((module(fp.file), u64::from(fp.index) * u64::from(PAGE_SIZE) + u64::from(eip & (PAGE_SIZE - 1))))
    }

    /// A stored translation of the block at `eip`, found in module `m` at `offset`
    /// (`place`), made ready to be placed as translation number `id` with this run's
    /// host values `host`: the first entry there whose guest bytes are the block's.
    pub(crate) fn find(
        &mut self,
        (m, offset): (ModuleId, u64),
        eip: u32,
        max: u32,
        mem: &AddressSpace,
        host: RunHost,
        id: u32,
    ) -> Option<Made> {
        let store = &mut self.store;
        let loaded = self.loaded.entry(m).or_insert_with(|| store.load(&m).map(Loaded::new)).as_ref()?;
        let mut bytes = Vec::new();
        for e in loaded.at(offset) {
            if e.guest_len == 0 || e.guest_len > max {
                continue;
            }
            bytes.resize(e.guest_len as usize, 0);
            if mem.read_bytes(eip, &mut bytes).is_err() || persist::guest_hash(&bytes) != e.guest_hash {
                continue;
            }
            match decode(loaded.file.payload(e), &bytes, eip, host, id) {
                Some(made) => {
                    self.used += 1;
                    return Some(made);
                }
                None => self.bad += 1,
            }
        }
        None
    }

    /// Keeps `made` (numbered as it was translated, with the exit-stub immediates at
    /// `id_fields`), the translation of the block at `eip` whose guest bytes are `bytes`,
    /// found in module `m` at `offset`, to be stored at the end of the run.
    /// Returns whether it was kept (not already stored or kept).
    pub(crate) fn keep(
        &mut self,
        m: ModuleId,
        offset: u64,
        eip: u32,
        made: &Made,
        id_fields: &[usize],
        bytes: &[u8],
    ) -> bool {
        let Ok(offset) = u32::try_from(offset) else { return false };
        let Some(bytes) = bytes.get(..made.guest_len as usize) else { return false };
        let guest_hash = persist::guest_hash(bytes);
        let stored = self
            .loaded
            .get(&m)
            .and_then(Option::as_ref)
            .is_some_and(|l| l.at(u64::from(offset)).any(|e| e.guest_hash == guest_hash));
        if stored || self.pending_keys.contains(&(m, offset, guest_hash)) {
            return false; // stored already, or kept already (made again after a flush)
        }
        let Some(payload) = encode(made, id_fields, eip) else { return false };
        let e = Entry { offset, guest_len: made.guest_len, guest_hash, payload };
        self.pending_keys.insert((m, offset, guest_hash));
        self.pending.entry(m).or_default().push(e);
        true
    }

    /// Writes the translations kept this run to the store (once; later calls write what
    /// was kept since).
    pub(crate) fn save(&mut self) {
        for (m, entries) in std::mem::take(&mut self.pending) {
            let loaded = self.loaded.get(&m).and_then(Option::as_ref).map(|l| &l.file);
            if self.store.store(&m, &entries, loaded).is_err() {
                self.lost += entries.len() as u64;
            }
        }
    }
}

/// A little-endian writer of the payload.
struct W(Vec<u8>);

impl W {
    fn u32(&mut self, v: usize) -> Option<()> {
        self.0.extend_from_slice(&u32::try_from(v).ok()?.to_le_bytes());
        Some(())
    }
}

/// A bounds-checked reader of the payload.
struct R<'a> {
    b: &'a [u8],
    at: usize,
}

impl R<'_> {
    fn u32(&mut self) -> Option<u32> {
        let v = self.b.get(self.at..self.at + 4)?;
        self.at += 4;
        Some(u32::from_le_bytes(v.try_into().ok()?))
    }
    fn usize(&mut self) -> Option<usize> {
        self.u32().map(|v| v as usize)
    }
    /// A count of items of at least `each` bytes that the rest can hold.
    fn count(&mut self, each: usize) -> Option<usize> {
        let n = self.usize()?;
        (n.checked_mul(each)? <= self.b.len() - self.at).then_some(n)
    }
}

/// The payload of `made` (the translation of the block at `eip`): its code and records,
/// with helper instructions named by their offset in the block.
fn encode(made: &Made, id_fields: &[usize], eip: u32) -> Option<Vec<u8>> {
    let mut w = W(Vec::with_capacity(made.code.len() + 64));
    w.u32(made.code.len())?;
    w.0.extend_from_slice(&made.code);
    let flags = usize::from(made.uses_fpu) | usize::from(made.align64) << 1;
    for v in [made.body, made.entry, made.instructions as usize, made.fallbacks as usize, flags] {
        w.u32(v)?;
    }
    w.u32(made.sites.len())?;
    for s in &made.sites {
        w.u32(s.rel)?;
        w.u32(s.target_delta as u32 as usize)?;
        w.u32(s.exit_jmp)?;
    }
    w.u32(made.fixups.len())?;
    for &(at, f) in &made.fixups {
        w.u32(at)?;
        w.u32(match f {
            Fixup::ExitCommon => 0,
            Fixup::ExitNosave => 1,
            Fixup::Lookup => 2,
            Fixup::TableMiss => 3,
        })?;
    }
    w.u32(made.points.len())?;
    for &(h, g, k) in &made.points {
        for v in [h, g, k] {
            w.u32(v as usize)?;
        }
    }
    w.u32(id_fields.len())?;
    for &f in id_fields {
        w.u32(f)?;
    }
    w.u32(made.helpers.len())?;
    for ins in made.helpers.iter() {
        w.u32(ins.ip32().wrapping_sub(eip) as usize)?;
    }
    w.u32(made.relocs.len())?;
    for &(at, r) in &made.relocs {
        w.u32(at)?;
        w.u32(match r {
            Reloc::Helper => 0,
            Reloc::Instruction(n) => 1 + n as usize,
        })?;
    }
    Some(w.0)
}

/// `made` again from its payload, for the block at `eip` whose guest bytes are `guest`,
/// placed as translation number `id` in a run whose host values are `host`. Every
/// offset is checked against the code; `None` if anything is out of place.
fn decode(p: &[u8], guest: &[u8], eip: u32, host: RunHost, id: u32) -> Option<Made> {
    let mut r = R { b: p, at: 0 };
    let n = r.count(1)?;
    let mut code = p.get(r.at..r.at + n)?.to_vec();
    r.at += n;
    let len = code.len();
    let field = |at: usize, size: usize| (at.checked_add(size)? <= len).then_some(at);
    let body = field(r.usize()?, 1)?;
    let entry = field(r.usize()?, 1)?;
    let instructions = r.u32()?;
    let fallbacks = r.u32()?;
    let flags = r.u32()?;
    let (uses_fpu, align64) = (flags & 1 != 0, flags & 2 != 0);
    let mut sites = Vec::new();
    for _ in 0..r.count(12)? {
        let rel = field(r.usize()?, 4)?;
        let target_delta = r.u32()? as i32;
        let exit_jmp = field(r.usize()?, 4)?;
        sites.push(Site { rel, target_delta, exit_jmp });
    }
    let mut fixups = Vec::new();
    for _ in 0..r.count(8)? {
        let at = field(r.usize()?, 4)?;
        let f = match r.u32()? {
            0 => Fixup::ExitCommon,
            1 => Fixup::ExitNosave,
            2 => Fixup::Lookup,
            3 => Fixup::TableMiss,
            _ => return None,
        };
        fixups.push((at, f));
    }
    let mut points = Vec::new();
    for _ in 0..r.count(12)? {
        let (h, g, k) = (r.u32()?, r.u32()?, r.u32()?);
        field(h as usize, 0)?;
        points.push((h, g, k));
    }
    let id_fields = (0..r.count(4)?).map(|_| field(r.usize()?, 4)).collect::<Option<Vec<_>>>()?;
    if id_fields.len() != sites.len() {
        return None;
    }
    // The block's instructions, decoded again from the guest bytes at this address: the
    // helper's are among them.
    let instrs = decode_block(guest, eip, instructions)?;
    let mut helpers = Vec::new();
    for _ in 0..r.count(4)? {
        let at = eip.wrapping_add(r.u32()?);
        let ins = instrs.iter().find(|i| i.ip32() == at).filter(|i| !i.is_invalid())?;
        helpers.push(Box::new(*ins));
    }
    let mut relocs = Vec::new();
    for _ in 0..r.count(8)? {
        let at = r.usize()?;
        let kind = r.usize()?;
        let at = field(at, 8)?;
        let value = match kind {
            0 => (Reloc::Helper, host.helper as u64),
            n => {
                let i = (n - 1) as u32;
                let b: &Instruction = helpers.get(i as usize)?;
                (Reloc::Instruction(i), b as *const Instruction as u64)
            }
        };
        code[at..at + 8].copy_from_slice(&value.1.to_le_bytes());
        relocs.push((at, value.0));
    }
    if r.at != p.len() {
        return None;
    }
    crate::reuse::renumber(&mut code, &id_fields, id);
    Some(Made {
        code,
        body,
        entry,
        sites,
        fixups,
        relocs,
        points,
        instructions,
        guest_len: guest.len() as u32,
        helpers: std::rc::Rc::new(helpers),
        fallbacks,
        uses_fpu,
        pc_thunks: 0,
        plt_call: false,
        predicted: false,
        align64,
        thunk_page: None,
    })
}

/// The `n` instructions of a block, decoded from its guest bytes `bytes` at `eip` (which
/// they fill exactly).
fn decode_block(bytes: &[u8], eip: u32, n: u32) -> Option<Vec<Instruction>> {
    let mut d = Decoder::with_ip(32, bytes, u64::from(eip), DecoderOptions::NONE);
    let mut instrs = Vec::with_capacity(n as usize);
    for k in 0..n {
        if !d.can_decode() {
            return None;
        }
        let ins = d.decode();
        instrs.push(ins);
        // A direct jump that is not the last instruction was followed: the next one is
        // at its target.
        if let Some(target) = crate::translate::direct_jump(&ins).filter(|_| k + 1 < n) {
            let skip = target.checked_sub(ins.next_ip32())?;
            d.set_position(d.position().checked_add(skip as usize)?).ok()?;
            d.set_ip(u64::from(target));
        }
    }
    (d.position() == bytes.len() && !instrs.is_empty()).then_some(instrs)
}

/// The number cold translations are made under before they are stored (any number
/// works: a loaded translation is renumbered; this one is unlikely to appear in code by
/// chance, so its exit-stub immediates are found exactly).
const COLD_ID: u32 = 0x00a5_c3e1;

/// Where cold blocks are translated: any address works (translations are
/// position-independent); only the page offset matters.
const COLD_BASE: u32 = 0x4000_0000;

impl crate::Engine {
    /// Translates and keeps the blocks of file-backed code that ran at least
    /// `tcache_cold` times (a key with that profile count; none if it is 0) but have no
    /// live translation: cold blocks, never hot enough to be translated this run. Their frames were noted at their first miss; the frame's
    /// page-cache identity and bytes are read now (a frame given to other data since has
    /// another identity or none, and its bytes are filed under that one).
    pub(crate) fn keep_cold(&mut self, phys: &morph_mem::PhysMem) {
        let opts = self.translate_options();
        let Some(tc) = self.tcache.as_mut().filter(|_| self.cfg.tcache_cold > 0) else { return };
        let mut cold: Vec<(Frame, u32)> = std::mem::take(&mut tc.seen)
            .into_iter()
            .filter(|(k, _, _)| {
                self.index
                    .get(k)
                    .map(|&i| &self.slots[i as usize])
                    .is_some_and(|s| s.live().is_none() && s.count >= self.cfg.tcache_cold)
                    && !self.untranslatable.contains(k)
            })
            .map(|(_, f, o)| (f, o))
            .collect();
        cold.sort_unstable_by_key(|&(f, o)| (f.0, o));
        cold.dedup();
        let helper = crate::abi::helper as *const () as usize;
        for (frame, offset) in cold {
            let Some(fp) = phys.file_page(frame) else { continue };
            let bytes = &phys.frame_bytes(frame)[offset as usize..];
            let eip = COLD_BASE | offset;
            let Some(made) = crate::translate::translate(bytes, eip, helper, COLD_ID, opts).map(Made::from) else {
                continue;
            };
            let Some(fields) = crate::reuse::id_fields(&made, COLD_ID) else { continue };
            let at = u64::from(fp.index) * u64::from(PAGE_SIZE) + u64::from(offset);
            if tc.keep(module(fp.file), at, eip, &made, &fields, bytes) {
                tc.cold += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::decode_block;

    #[test]
    fn decoding_a_block_again_follows_its_followed_jumps() {
        // jmp +2; ud2 (skipped); inc eax; ret: three instructions, all the bytes.
        let bytes = [0xeb, 0x02, 0x0f, 0x0b, 0x40, 0xc3];
        let ips: Vec<u32> = decode_block(&bytes, 0x1000, 3).unwrap().iter().map(|i| i.ip32()).collect();
        assert_eq!(ips, [0x1000, 0x1004, 0x1005]);
        // A jump that ends the block is its last instruction: the bytes must end there.
        assert!(decode_block(&bytes, 0x1000, 1).is_none());
        assert!(decode_block(&bytes[..2], 0x1000, 1).is_some());
        // More instructions than the bytes hold.
        assert!(decode_block(&bytes, 0x1000, 4).is_none());
    }
}
