//! The page cache: (device, inode) → the file's cached pages, shared by every process.
//!
//! It is the machine's one in-memory copy of file contents, as Linux's page cache is:
//!
//! - **Identity.** A file is keyed by its host (device, inode) ([`FileKey`]), which does
//!   not change when the file is written. Every mapping of page *n* of a file — private
//!   or shared, in any process, before or after the file was written — maps the same
//!   frame, so a store through a `MAP_SHARED` mapping is seen by every other mapping and
//!   physically keyed translations find the same frame for the same library page.
//! - **Lifetime.** Like Linux's, the cache outlives the processes that filled it: the
//!   second `exec` of a program finds its pages (and those of `ld-linux.so.2` and
//!   `libc.so.6`) already in frames. Each cached file holds one host descriptor, so its
//!   inode (hence its key) cannot be reused by another file while pages are cached.
//!   Files no process maps are evicted when too many files are cached, or when they
//!   have been unlinked ([`PageCache::forget_if_unlinked`]).
//! - **Coherence with `write(2)`.** The OS layer reports every write and truncation of
//!   a cached file ([`PageCache::written`], [`PageCache::truncated`]); the cache then
//!   re-reads the written bytes into the frames, so every mapping sees them.
//! - **Coherence with `read(2)`.** Stores through shared mappings dirty frames the file
//!   does not have yet. They are written back (never beyond the current end of the
//!   file, which they never extend) when a shared mapping goes away or is `msync`ed (by
//!   the address space) and before the OS layer reads a file that has shared writable
//!   mappings ([`PageCache::write_back`]). Write-back compares first and writes only
//!   pages that differ, so a clean page never touches the file (nor its mtime).
//!
//! A file changed behind morph's back (by another host process) is noticed through its
//! modification time and size ([`FileId`]): its cached pages are dropped and read
//! again, unless some process still maps them — then the machine keeps its own view.

use std::collections::BTreeMap;
use std::collections::hash_map::Entry;

use rustc_hash::FxHashMap as HashMap;
use std::cell::RefCell;
use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::rc::Rc;

use crate::{Frame, MemError, PAGE_SHIFT, PAGE_SIZE, PhysMem};

/// Which file: host device and inode. The page cache's key; writing the file does not
/// change it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FileKey {
    /// Host device.
    pub dev: u64,
    /// Host inode.
    pub ino: u64,
}

impl FileKey {
    /// The key of an open host descriptor, if it is a regular file (only regular files
    /// have pages in the cache).
    pub fn of_fd(fd: RawFd) -> std::io::Result<Option<FileKey>> {
        let st = fstat(fd)?;
        Ok((st.st_mode & libc::S_IFMT == libc::S_IFREG).then_some(FileKey { dev: st.st_dev, ino: st.st_ino }))
    }
}

/// A file's identity plus what it looked like when it was opened: device, inode,
/// modification time and size.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FileId {
    /// Host device.
    pub dev: u64,
    /// Host inode.
    pub ino: u64,
    /// Modification time in nanoseconds.
    pub mtime_ns: i64,
    /// Size in bytes.
    pub size: u64,
}

impl FileId {
    /// The identity of an open host file.
    pub fn of(file: &File) -> std::io::Result<FileId> {
        Ok(FileId::of_metadata(&file.metadata()?))
    }

    /// The identity `metadata` (of an open file) gives.
    pub fn of_metadata(m: &std::fs::Metadata) -> FileId {
        FileId { dev: m.dev(), ino: m.ino(), mtime_ns: m.mtime() * 1_000_000_000 + m.mtime_nsec(), size: m.size() }
    }

    /// The cache key (device and inode).
    pub fn key(&self) -> FileKey {
        FileKey { dev: self.dev, ino: self.ino }
    }

    fn stamp(&self) -> (i64, u64) {
        (self.mtime_ns, self.size)
    }
}

/// Counters of the page cache.
#[derive(Clone, Copy, Debug, Default)]
pub struct PageCacheStats {
    /// Page lookups.
    pub lookups: u64,
    /// Lookups answered by a frame already in the cache.
    pub hits: u64,
    /// Pages read from files into new frames.
    pub fills: u64,
    /// Pages currently cached.
    pub pages: u64,
    /// Files currently cached.
    pub files: u64,
    /// Cached pages updated by `write(2)` to their file.
    pub write_throughs: u64,
    /// Dirty pages written back to their file.
    pub write_backs: u64,
    /// Files dropped: evicted, unlinked, or changed outside the machine.
    pub files_dropped: u64,
    /// Pages dropped to free memory under the machine's limit (see [`PageCache::reclaim`]).
    pub reclaimed: u64,
}

/// Files cached at once before files no process maps are evicted (each holds a host
/// descriptor).
const MAX_FILES: usize = 256;

/// The largest file whose pages get a span of frames of their own (64 MiB).
const MAX_SPAN: u32 = 1 << 14;

/// Frames reserved for files' spans and not yet filled, at most, as a share of the
/// machine's frames (`1 / SPAN_SHARE`).
const SPAN_SHARE: u32 = 8;

/// Consecutive frames reserved for one file's pages, page `i` in frame `base + i`
/// (`PhysMem::reserve_run`): every process's mapping of the file is then one run of
/// consecutive frames, which the host window maps with one `mmap`, where frames taken
/// at each fill (a 16-page cluster at a time, interleaved with other allocations) made
/// a library's pages a dozen runs and a process starting it a dozen host faults and
/// `mmap`s. A frame is claimed when its page is filled; the rest go back when the file
/// leaves the cache or memory runs short.
struct Span {
    base: Frame,
    /// Pages whose frame is still reserved (not filled yet), one bit each.
    unfilled: Vec<u64>,
}

impl Span {
    /// A span of `pages` frames from `base`, all reserved.
    fn new(base: Frame, pages: u32) -> Span {
        let word = |w: u32| if (w + 1) * 64 <= pages { u64::MAX } else { (1 << (pages % 64)) - 1 };
        Span { base, unfilled: (0..pages.div_ceil(64)).map(word).collect() }
    }

    /// Frames still reserved.
    fn reserved(&self) -> u32 {
        self.unfilled.iter().map(|w| w.count_ones()).sum()
    }

    /// Claims the frames of pages `[first, first+n)` if all are still reserved.
    fn take(&mut self, phys: &PhysMem, first: u32, n: u32) -> Option<Vec<Frame>> {
        let end = first.checked_add(n)?;
        let free = |i: u32| self.unfilled.get(i as usize / 64).is_some_and(|w| w >> (i % 64) & 1 != 0);
        if !(first..end).all(free) {
            return None;
        }
        for i in first..end {
            self.unfilled[i as usize / 64] &= !(1 << (i % 64));
        }
        let f = Frame(self.base.0 + first);
        phys.claim_reserved(f, n);
        Some((f.0..f.0 + n).map(Frame).collect())
    }

    /// Gives every frame still reserved back to `phys`.
    fn release(self, phys: &PhysMem) {
        for (w, &bits) in self.unfilled.iter().enumerate() {
            for b in (0..64).filter(|b| bits >> b & 1 != 0) {
                phys.unreserve(Frame(self.base.0 + (w * 64) as u32 + b));
            }
        }
    }
}

/// The cached pages of one file.
struct CachedFile {
    /// Page index → frame (the cache holds one reference on each).
    pages: BTreeMap<u32, Frame>,
    /// The frames reserved for its pages, if it got a span (see [`Span`]); `tried`:
    /// whether one was asked for already.
    span: Option<Span>,
    span_tried: bool,
    /// A descriptor of the file: keeps its inode alive, so the key stays its own, and
    /// re-reads written ranges. Mappings of the file hold it too (see [`crate::MapKind`]).
    file: Rc<File>,
    /// A read/write descriptor without `O_APPEND`, for writing shared pages back; kept
    /// while a shared writable mapping of the file may exist.
    writer: Option<Rc<OwnedFd>>,
    /// Modification time and size as morph last saw or left them.
    stamp: (i64, u64),
    /// When it was last looked up (for eviction).
    last_use: u64,
}

impl CachedFile {
    /// Whether any of its frames is mapped by a process (referenced beyond the cache).
    fn mapped(&self, phys: &PhysMem) -> bool {
        self.pages.values().any(|&f| phys.refcount(f) > 1)
    }

    /// Re-reads the modification time and size after morph changed the file.
    fn restamp(&mut self) {
        if let Ok(id) = FileId::of(&self.file) {
            self.stamp = id.stamp();
        }
    }
}

/// The machine-wide page cache: a handle, shared by the machine and the address spaces
/// that map files (which fill a file page at its first touch, see
/// [`crate::AddressSpace`]). Each call borrows the cache for its own duration only and
/// never calls back into an address space.
#[derive(Default)]
pub struct PageCache {
    inner: Rc<RefCell<Cache>>,
}

/// What the page cache holds.
#[derive(Default)]
struct Cache {
    files: HashMap<FileKey, CachedFile>,
    clock: u64,
    stats: PageCacheStats,
}

impl PageCache {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// Another handle on this cache (for an address space, which fills pages of the
    /// files it maps at their first touch).
    pub(crate) fn share(&self) -> PageCache {
        PageCache { inner: self.inner.clone() }
    }

    /// The frame holding page `index` of `file`, reading it on first use. The cache
    /// keeps one reference; the caller gets none (call [`PhysMem::retain`] to map it).
    /// `id` is the file's identity as just read from `file`.
    pub fn page(&mut self, phys: &PhysMem, file: &File, id: FileId, index: u32) -> Result<Frame, MemError> {
        Ok(self.pages(phys, file, id, index, 1)?[0])
    }

    /// The frames of pages `index .. index + n` of a file, in order, reading the missing
    /// ones. Each run of missing pages gets consecutive fresh frames (when the memory
    /// limit allows) and one read, so a mapping of the file is contiguous in frame
    /// space and maps on the host with one `mmap` per run rather than one per page.
    pub fn pages(
        &mut self,
        phys: &PhysMem,
        file: &File,
        id: FileId,
        index: u32,
        n: u32,
    ) -> Result<Vec<Frame>, MemError> {
        self.inner.borrow_mut().pages(phys, file, id, index, n)
    }

    /// Makes `file` (identity `id`, just read) a cached file without reading any of
    /// its pages, for a mapping of it, and returns the descriptor the cache holds
    /// (shared): the mapping's pages are read when first touched ([`PageCache::fill`]).
    pub fn open(&mut self, phys: &PhysMem, file: &File, id: FileId) -> Result<Rc<File>, MemError> {
        Ok(self.inner.borrow_mut().entry(phys, file, id)?.file.clone())
    }

    /// The pages of `[index, index+n)` of the file `key` already cached, with their
    /// frames, in order (counted as lookups answered by the cache).
    pub fn cached(&mut self, key: FileKey, index: u32, n: u32) -> Vec<(u32, Frame)> {
        let mut c = self.inner.borrow_mut();
        let Some(e) = c.files.get(&key) else { return Vec::new() };
        let found: Vec<(u32, Frame)> = e.pages.range(index..index.saturating_add(n)).map(|(&i, &f)| (i, f)).collect();
        c.stats.lookups += found.len() as u64;
        c.stats.hits += found.len() as u64;
        found
    }

    /// The frames of pages `index .. index + n` of the file `key`, reading the missing
    /// ones from `file` (a descriptor of it a mapping holds), as [`PageCache::pages`]:
    /// the fill of a mapped page at its first touch. The file's identity is read again
    /// only if a page is missing. Fails, rather than wait, if the cache is in use (never
    /// expected: no cache call runs guest code or touches an address space).
    pub(crate) fn fill(
        &self,
        phys: &PhysMem,
        file: &File,
        key: FileKey,
        index: u32,
        n: u32,
    ) -> Result<Vec<Frame>, MemError> {
        let busy = || MemError::Host { op: "page cache fill", err: std::io::Error::other("page cache busy") };
        let mut c = self.inner.try_borrow_mut().map_err(|_| busy())?;
        c.clock += 1;
        let clock = c.clock;
        if let Some(e) = c.files.get_mut(&key) {
            let cached: Vec<Frame> = e.pages.range(index..index.saturating_add(n)).map(|(_, &f)| f).collect();
            if cached.len() == n as usize {
                e.last_use = clock;
                c.stats.lookups += u64::from(n);
                c.stats.hits += u64::from(n);
                return Ok(cached);
            }
        }
        let id = FileId::of(file).map_err(|err| MemError::Host { op: "fstat(mapped file)", err })?;
        c.pages(phys, file, id, index, n)
    }

    /// Records that a shared writable mapping of the file `key` (writing back through
    /// `w`) is about to map a page of it: write-back before reads must consider it.
    pub(crate) fn note_writer(&self, key: FileKey, w: &Rc<OwnedFd>) {
        if let Ok(mut c) = self.inner.try_borrow_mut()
            && let Some(e) = c.files.get_mut(&key)
            && e.writer.is_none()
        {
            e.writer = Some(w.clone());
        }
    }

    /// The descriptor the cache holds for the cached file `key` (shared, not a copy).
    pub fn pinned(&self, key: FileKey) -> Option<Rc<File>> {
        self.inner.borrow().pinned(key)
    }

    /// The current size of the cached file `key` (`None` if it is not cached).
    pub fn size_of(&self, key: FileKey) -> Option<u64> {
        self.inner.borrow().size_of(key)
    }

    /// Whether the file has pages in the cache (writes to other files need no work).
    pub fn is_cached(&self, key: FileKey) -> bool {
        self.inner.borrow().is_cached(key)
    }

    /// A read/write descriptor of the cached file `key` (opened from `file`) for writing
    /// back the pages of a shared mapping, recording that the file may have dirty shared
    /// pages. It is a fresh open file description, so the guest's `O_APPEND` or file
    /// offset cannot affect write-back.
    pub fn shared_writer(&mut self, key: FileKey, file: &File) -> Result<Rc<OwnedFd>, MemError> {
        self.inner.borrow_mut().shared_writer(key, file)
    }

    /// Writes back the pages of `key` that processes map, if the file has shared writable
    /// mappings: called before the OS layer reads the file, so `read(2)` sees stores
    /// made through mappings. Only pages that differ from the file are written, and never
    /// past its current end.
    pub fn write_back(&mut self, phys: &PhysMem, key: FileKey) -> Result<(), MemError> {
        self.inner.borrow_mut().write_back(phys, key)
    }

    /// [`PageCache::write_back`] for every cached file that may have shared writable
    /// mappings (`sync`). Every file is tried; the first failure is the result.
    pub fn write_back_all(&mut self, phys: &PhysMem) -> Result<(), MemError> {
        let mut inner = self.inner.borrow_mut();
        let keys: Vec<FileKey> = inner.files.iter().filter(|(_, e)| e.writer.is_some()).map(|(&k, _)| k).collect();
        let mut result = Ok(());
        for key in keys {
            let r = inner.write_back(phys, key);
            if result.is_ok() {
                result = r;
            }
        }
        result
    }

    /// Records that `[off, off+len)` of the file `key` was just written on the host:
    /// the cached frames covering it take the new bytes, so every mapping sees them.
    pub fn written(&mut self, phys: &PhysMem, key: FileKey, off: u64, len: u64) -> Result<(), MemError> {
        self.inner.borrow_mut().written(phys, key, off, len)
    }

    /// Records that the file `key` was truncated (or extended) to `size` bytes: cached
    /// bytes past the end become zero, and cached pages wholly past it are dropped, or
    /// zeroed if a process still maps them.
    pub fn truncated(&mut self, phys: &PhysMem, key: FileKey, size: u64) {
        self.inner.borrow_mut().truncated(phys, key, size)
    }

    /// Drops the cached file `key` if it has been unlinked and no process maps it: no one
    /// can reach it through a path any more, and its descriptor would keep it on disk.
    /// Returns whether it was dropped.
    pub fn forget_if_unlinked(&mut self, phys: &PhysMem, key: FileKey) -> bool {
        self.inner.borrow_mut().forget_if_unlinked(phys, key)
    }

    /// Frees up to `want` frames under memory pressure by dropping cached pages that no
    /// process maps, least recently used files first (as Linux reclaims clean page-cache
    /// pages): never a mapped page, nor a page of a file that may still have stores of
    /// shared mappings to write back, nor one of `keep` (the file being filled). Returns
    /// how many pages it dropped.
    pub fn reclaim(&mut self, phys: &PhysMem, want: u32, keep: Option<FileKey>) -> u32 {
        self.inner.borrow_mut().reclaim(phys, want, keep)
    }

    /// Counters.
    pub fn stats(&self) -> PageCacheStats {
        self.inner.borrow().stats()
    }
}

impl Cache {
    /// The entry of `file` (identity `id`), made if missing; an entry of a file changed
    /// outside the machine that nobody maps is dropped and made afresh.
    fn entry(&mut self, phys: &PhysMem, file: &File, id: FileId) -> Result<&mut CachedFile, MemError> {
        self.clock += 1;
        let key = id.key();
        match self.files.get(&key) {
            Some(e) if e.stamp != id.stamp() && e.writer.is_none() && !e.mapped(phys) => {
                // Changed outside the machine and nobody maps it: read it afresh.
                self.drop_file(phys, key);
            }
            Some(_) => {}
            None => self.make_room(phys),
        }
        let e = match self.files.entry(key) {
            Entry::Occupied(o) => o.into_mut(),
            Entry::Vacant(v) => {
                let pin = file.try_clone().map_err(|err| MemError::Host { op: "dup(page cache file)", err })?;
                self.stats.files += 1;
                v.insert(CachedFile {
                    pages: BTreeMap::new(),
                    span: None,
                    span_tried: false,
                    file: Rc::new(pin),
                    writer: None,
                    stamp: id.stamp(),
                    last_use: 0,
                })
            }
        };
        e.last_use = self.clock;
        Ok(e)
    }

    /// See [`PageCache::pages`].
    fn pages(&mut self, phys: &PhysMem, file: &File, id: FileId, index: u32, n: u32) -> Result<Vec<Frame>, MemError> {
        self.stats.lookups += u64::from(n);
        let key = id.key();
        let e = self.entry(phys, file, id)?;
        // The common case, every page cached: one walk of the range.
        let cached: Vec<Frame> = e.pages.range(index..index.saturating_add(n)).map(|(_, &f)| f).collect();
        if cached.len() == n as usize {
            self.stats.hits += u64::from(n);
            return Ok(cached);
        }
        let mut out = Vec::with_capacity(n as usize);
        let mut i = 0;
        while i < n {
            let Some(e) = self.files.get_mut(&key) else { return Err(gone()) };
            if let Some(&f) = e.pages.get(&(index + i)) {
                self.stats.hits += 1;
                out.push(f);
                i += 1;
                continue;
            }
            let mut j = i + 1;
            while j < n && j - i < MAX_FILL_RUN && !e.pages.contains_key(&(index + j)) {
                j += 1;
            }
            let run = j - i;
            if !std::mem::replace(&mut e.span_tried, true) {
                self.give_span(phys, key, id.size);
            }
            let Some(e) = self.files.get_mut(&key) else { return Err(gone()) };
            let frames = match e.span.as_mut().and_then(|s| s.take(phys, index + i, run)) {
                Some(frames) => frames,
                None => match phys.alloc_many(run) {
                    Err(MemError::OutOfMemory { .. }) if self.reclaim(phys, run, Some(key)) > 0 => phys.alloc_many(run),
                    r => r,
                }?,
            };
            let Some(e) = self.files.get_mut(&key) else { return Err(gone()) };
            let contiguous = frames.windows(2).all(|w| w[1].0 == w[0].0 + 1);
            let read = if contiguous {
                fill_frames(phys, &e.file, frames[0], run, page_offset(index + i))
            } else {
                frames
                    .iter()
                    .zip(index + i..)
                    .try_for_each(|(&f, page)| fill_frames(phys, &e.file, f, 1, page_offset(page)))
            };
            if let Err(err) = read {
                for f in frames {
                    phys.release(f);
                }
                return Err(MemError::Host { op: "read(page cache fill)", err });
            }
            self.stats.fills += u64::from(run);
            self.stats.pages += u64::from(run);
            for (&f, page) in frames.iter().zip(index + i..) {
                e.pages.insert(page, f);
                phys.set_file_page(f, crate::FilePage { file: id, index: page });
            }
            out.extend(frames);
            i = j;
        }
        Ok(out)
    }

    /// Reserves a span for the cached file `key` of `size` bytes, if it is small enough
    /// and the spans' share of the machine's frames has room (see [`Span`]).
    fn give_span(&mut self, phys: &PhysMem, key: FileKey, size: u64) {
        let pages = u32::try_from(size.div_ceil(u64::from(PAGE_SIZE))).unwrap_or(u32::MAX);
        let reserved: u32 = self.files.values().filter_map(|f| f.span.as_ref()).map(Span::reserved).sum();
        if (2..=MAX_SPAN).contains(&pages)
            && reserved + pages <= phys.max_frames() / SPAN_SHARE
            && let Some(e) = self.files.get_mut(&key)
        {
            e.span = phys.reserve_run(pages).map(|base| Span::new(base, pages));
        }
    }

    /// See [`PageCache::pinned`].
    fn pinned(&self, key: FileKey) -> Option<Rc<File>> {
        self.files.get(&key).map(|e| e.file.clone())
    }

    /// See [`PageCache::size_of`].
    fn size_of(&self, key: FileKey) -> Option<u64> {
        self.files.get(&key).and_then(|e| fstat(e.file.as_raw_fd()).ok()).map(|st| st.st_size as u64)
    }

    /// See [`PageCache::is_cached`].
    fn is_cached(&self, key: FileKey) -> bool {
        self.files.contains_key(&key)
    }

    /// See [`PageCache::shared_writer`].
    fn shared_writer(&mut self, key: FileKey, file: &File) -> Result<Rc<OwnedFd>, MemError> {
        let Some(e) = self.files.get_mut(&key) else {
            return Err(MemError::Host {
                op: "shared_writer(uncached file)",
                err: std::io::Error::other("not cached"),
            });
        };
        if let Some(w) = &e.writer {
            return Ok(w.clone());
        }
        let w = Rc::new(reopen_rw(file)?);
        e.writer = Some(w.clone());
        Ok(w)
    }

    /// See [`PageCache::write_back`].
    fn write_back(&mut self, phys: &PhysMem, key: FileKey) -> Result<(), MemError> {
        let Some(e) = self.files.get_mut(&key) else { return Ok(()) };
        let Some(w) = e.writer.clone() else { return Ok(()) };
        let size = fstat(w.as_raw_fd()).map_err(|err| MemError::Host { op: "fstat(write-back)", err })?.st_size as u64;
        let mut mapped = false;
        let mut wrote = 0;
        for (&index, &f) in &e.pages {
            if phys.refcount(f) <= 1 {
                continue; // only mapped pages can have been stored to since the last write-back
            }
            mapped = true;
            if write_back_page(w.as_raw_fd(), phys.frame_bytes(f), page_offset(index), size)
                .map_err(|err| MemError::Host { op: "pwrite(write-back)", err })?
            {
                wrote += 1;
            }
        }
        if !mapped {
            e.writer = None; // no mapping left that could dirty a page
        }
        if wrote > 0 {
            self.stats.write_backs += wrote;
            e.restamp();
        }
        Ok(())
    }

    /// See [`PageCache::written`].
    fn written(&mut self, phys: &PhysMem, key: FileKey, off: u64, len: u64) -> Result<(), MemError> {
        let Some(e) = self.files.get_mut(&key) else { return Ok(()) };
        if len == 0 {
            return Ok(());
        }
        let end = off.saturating_add(len);
        let first = page_index(off);
        let last = page_index(end - 1);
        let mut result = Ok(());
        for (&index, &f) in e.pages.range(first..=last) {
            let start = page_offset(index);
            let lo = off.max(start);
            let hi = end.min(start + u64::from(PAGE_SIZE));
            // SAFETY: `f` is an allocated frame; the range lies inside it. Guest mappings
            // may alias it, which raw bytes tolerate in this single-threaded machine.
            let buf = unsafe {
                std::slice::from_raw_parts_mut(phys.frame_ptr(f).add((lo - start) as usize), (hi - lo) as usize)
            };
            if let Err(err) = read_fully(&e.file, buf, lo) {
                result = Err(MemError::Host { op: "read(page cache write-through)", err });
            }
            if phys.is_code(f) {
                phys.note_code_write(f);
            }
            phys.forget_file_page(f);
            self.stats.write_throughs += 1;
        }
        e.restamp();
        result
    }

    /// See [`PageCache::truncated`].
    fn truncated(&mut self, phys: &PhysMem, key: FileKey, size: u64) {
        let Some(e) = self.files.get_mut(&key) else { return };
        let mut dropped = Vec::new();
        let first = page_index(size);
        for (&index, &f) in e.pages.range(first..) {
            let start = page_offset(index);
            let from = size.saturating_sub(start).min(u64::from(PAGE_SIZE)) as usize;
            if from == 0 && phys.refcount(f) <= 1 {
                dropped.push(index);
                continue;
            }
            if from < PAGE_SIZE as usize {
                // SAFETY: `f` is an allocated frame and `from` lies inside it.
                unsafe { std::ptr::write_bytes(phys.frame_ptr(f).add(from), 0, PAGE_SIZE as usize - from) };
                if phys.is_code(f) {
                    phys.note_code_write(f);
                }
            }
        }
        for index in dropped {
            if let Some(f) = e.pages.remove(&index) {
                phys.release(f);
                self.stats.pages -= 1;
            }
        }
        e.restamp();
    }

    /// See [`PageCache::forget_if_unlinked`].
    fn forget_if_unlinked(&mut self, phys: &PhysMem, key: FileKey) -> bool {
        let Some(e) = self.files.get(&key) else { return false };
        let unlinked = fstat(e.file.as_raw_fd()).is_ok_and(|st| st.st_nlink == 0);
        if unlinked && e.writer.is_none() && !e.mapped(phys) {
            self.drop_file(phys, key);
            return true;
        }
        false
    }

    /// See [`PageCache::reclaim`].
    fn reclaim(&mut self, phys: &PhysMem, want: u32, keep: Option<FileKey>) -> u32 {
        // Reserved frames first: numbers only, they may be what an allocation lacks.
        for s in self.files.values_mut().filter_map(|e| e.span.take()) {
            s.release(phys);
        }
        let mut order: Vec<(u64, FileKey)> = self
            .files
            .iter()
            .filter(|(k, e)| Some(**k) != keep && e.writer.is_none())
            .map(|(k, e)| (e.last_use, *k))
            .collect();
        order.sort_unstable();
        let mut freed = 0;
        for (_, key) in order {
            if freed >= want {
                break;
            }
            let Some(e) = self.files.get_mut(&key) else { continue };
            let idle: Vec<u32> = e.pages.iter().filter(|(_, f)| phys.refcount(**f) == 1).map(|(&i, _)| i).collect();
            for index in idle {
                if let Some(f) = e.pages.remove(&index) {
                    phys.release(f);
                    freed += 1;
                }
            }
            if e.pages.is_empty() {
                // Its span went back above.
                self.files.remove(&key);
                self.stats.files -= 1;
                self.stats.files_dropped += 1;
            }
        }
        self.stats.pages -= u64::from(freed);
        self.stats.reclaimed += u64::from(freed);
        freed
    }

    /// Keeps the number of cached files below [`MAX_FILES`] by evicting the least
    /// recently used file that no process maps.
    fn make_room(&mut self, phys: &PhysMem) {
        if self.files.len() < MAX_FILES {
            return;
        }
        let victim = self
            .files
            .iter()
            .filter(|(_, e)| e.writer.is_none() && !e.mapped(phys))
            .min_by_key(|(_, e)| e.last_use)
            .map(|(&k, _)| k);
        if let Some(k) = victim {
            self.drop_file(phys, k);
        }
    }

    fn drop_file(&mut self, phys: &PhysMem, key: FileKey) {
        if let Some(e) = self.files.remove(&key) {
            if let Some(s) = e.span {
                s.release(phys);
            }
            for f in e.pages.into_values() {
                phys.release(f);
                self.stats.pages -= 1;
            }
            self.stats.files -= 1;
            self.stats.files_dropped += 1;
        }
    }

    /// See [`PageCache::stats`].
    fn stats(&self) -> PageCacheStats {
        self.stats
    }
}

/// The error for a cached file that vanished during a fill (never expected: only
/// `reclaim`, which spares the file being filled, runs meanwhile).
fn gone() -> MemError {
    MemError::Host { op: "page cache fill", err: std::io::Error::other("cached file dropped during fill") }
}

/// Byte offset of file page `index`.
fn page_offset(index: u32) -> u64 {
    u64::from(index) << PAGE_SHIFT
}

/// The page index holding byte `off` (saturating for offsets past 16 TiB).
fn page_index(off: u64) -> u32 {
    (off >> PAGE_SHIFT).min(u64::from(u32::MAX)) as u32
}

/// Fills `buf` from `file` at `off`; what lies past the end of the file becomes zero.
/// The most pages one page-cache fill reads at once (1 MiB).
const MAX_FILL_RUN: u32 = 256;

fn read_fully(file: &File, buf: &mut [u8], off: u64) -> std::io::Result<()> {
    let mut done = 0;
    while done < buf.len() {
        match file.read_at(&mut buf[done..], off + done as u64) {
            Ok(0) => {
                buf[done..].fill(0);
                break;
            }
            Ok(n) => done += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Fills the `n` consecutive frames from `frame` (just allocated, mapped nowhere else)
/// with the bytes of `file` from `off`, zeros past its end. The copy is made inside the
/// host kernel (`sendfile` into the memfd, at its file position, which nothing else
/// uses): no host page fault on the physmap per page and no zeroing of pages about to
/// be overwritten, as a `read` into the physmap costs; a plain read finishes where the
/// host refuses it.
fn fill_frames(phys: &PhysMem, file: &File, frame: Frame, n: u32, off: u64) -> std::io::Result<()> {
    let len = (n * PAGE_SIZE) as usize;
    let mut done = 0;
    // SAFETY: lseek on the machine's own memfd.
    let placed = unsafe { libc::lseek(phys.raw_fd(), frame.file_offset(), libc::SEEK_SET) } >= 0;
    while placed && done < len {
        let mut src = (off + done as u64) as i64;
        // SAFETY: both descriptors are open for the call; `src` is a local the call
        // advances; the memfd range written is the caller's frames.
        let r = unsafe { libc::sendfile(phys.raw_fd(), file.as_raw_fd(), &mut src, len - done) };
        match r {
            0 => break, // the end of the file
            r if r > 0 => done += r as usize,
            _ if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted => {}
            _ => break, // refused: read the rest
        }
    }
    if done < len {
        // SAFETY: the frames are consecutive pages of the physmap, the caller's alone.
        let buf = unsafe { std::slice::from_raw_parts_mut(phys.frame_ptr(frame).add(done), len - done) };
        read_fully(file, buf, off + done as u64)?;
    }
    Ok(())
}

/// Writes the page at file offset `off` (whose bytes are `page`) back through `fd`,
/// clipped to the file's `size`, if it differs from the file. Returns whether it wrote.
pub(crate) fn write_back_page(fd: RawFd, page: &[u8], off: u64, size: u64) -> std::io::Result<bool> {
    if off >= size {
        return Ok(false); // past the end of the file: write-back never extends it
    }
    let len = (size - off).min(page.len() as u64) as usize;
    // SAFETY: `fd` is an open descriptor the caller holds for the duration of the call;
    // ManuallyDrop keeps the borrowed File from closing it.
    let file = std::mem::ManuallyDrop::new(unsafe { File::from_raw_fd(fd) });
    let mut cur = [0u8; PAGE_SIZE as usize];
    let mut have = 0;
    while have < len {
        match file.read_at(&mut cur[have..len], off + have as u64) {
            Ok(0) => break, // the file shrank meanwhile: write what is still inside it
            Ok(n) => have += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    if cur[..have] == page[..have] {
        return Ok(false);
    }
    file.write_all_at(&page[..have], off)?;
    Ok(true)
}

/// A fresh read/write open file description of `file` (through `/proc/self/fd`), or a
/// duplicate when that is impossible and the descriptor has no `O_APPEND`.
fn reopen_rw(file: &File) -> Result<OwnedFd, MemError> {
    let raw = file.as_raw_fd();
    if let Ok(f) = std::fs::OpenOptions::new().read(true).write(true).open(format!("/proc/self/fd/{raw}")) {
        return Ok(f.into());
    }
    // SAFETY: F_GETFL on a descriptor we hold.
    let fl = unsafe { libc::fcntl(raw, libc::F_GETFL) };
    if fl < 0 || fl & libc::O_ACCMODE != libc::O_RDWR || fl & libc::O_APPEND != 0 {
        return Err(MemError::Host { op: "open(shared file for write-back)", err: std::io::Error::last_os_error() });
    }
    let dup = file.try_clone().map_err(|err| MemError::Host { op: "dup(shared file)", err })?;
    Ok(dup.into())
}

/// `fstat` of a descriptor.
pub(crate) fn fstat(fd: RawFd) -> std::io::Result<libc::stat> {
    // SAFETY: an all-zero stat is a valid value to be overwritten.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstat into a local struct; an invalid descriptor is reported as an error.
    if unsafe { libc::fstat(fd, &mut st) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(st)
}

#[cfg(test)]
mod tests;
