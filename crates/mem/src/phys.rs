//! Physical memory: one memfd, cut into reference-counted 4 KiB frames.
//!
//! The whole memfd is also mapped once into morph's own address space (the
//! *physmap*), so the emulator can fill, copy and zero frames without going through
//! a guest window. Frames freed earlier are handed out first, lowest first, as a run of
//! consecutive frames when the caller wants several (see `FreeFrames`); only when no
//! freed frame will do does the high-water mark move. Consecutive guest pages then get
//! consecutive frames, so their host mappings merge into one VMA (the host allows only
//! ~65k VMAs for the whole machine), and the memfd, whose pages the host keeps in memory
//! once touched, grows only with the most memory the guests ever used at once.
//!
//! Each frame also carries a *code* bit (Transmeta's T-bit): the engine sets it on
//! frames it has decoded or translated code from, and a guest write to such a frame
//! is recorded in a queue the engine drains to drop stale code.

use std::cell::{Cell, RefCell};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use crate::{FileId, MemError, PAGE_SIZE, PhysAddr, host_err};

/// A physical frame number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Frame(pub u32);

impl Frame {
    /// The physical address of the first byte of the frame.
    pub fn addr(self) -> PhysAddr {
        PhysAddr(u64::from(self.0) * u64::from(PAGE_SIZE))
    }
    /// Byte offset of the frame inside the memfd.
    pub fn file_offset(self) -> i64 {
        i64::from(self.0) * i64::from(PAGE_SIZE)
    }
}

/// Counters of the physical memory.
#[derive(Clone, Copy, Debug, Default)]
pub struct PhysStats {
    /// Frames currently allocated.
    pub frames_in_use: u64,
    /// Highest number of frames ever allocated at once.
    pub frames_peak: u64,
    /// Frames allocated over the machine's life.
    pub frames_allocated: u64,
    /// Guest writes that hit a frame holding code.
    pub code_writes: u64,
    /// One past the highest frame ever handed out (the memfd's used length: host memory
    /// that stays resident, as frames are zeroed on reuse rather than returned to the
    /// host; the frames of a cached file's span never filled cost none).
    pub frames_touched: u64,
    /// Address spaces made in the low window (guest address `v` at host address `v`,
    /// see `crate::window`).
    pub low_windows: u64,
    /// Address spaces made over this memory.
    pub address_spaces: u64,
}

struct Inner {
    refcount: Vec<u32>,
    free: FreeFrames,
    /// Frames numbered so far by bumping: handed out, or reserved for a cached file
    /// (`reserve_run`).
    top: u32,
    /// Current memfd size in frames.
    size: u32,
    stats: PhysStats,
}

/// The machine's physical memory.
pub struct PhysMem {
    fd: OwnedFd,
    physmap: *mut u8,
    max_frames: u32,
    inner: RefCell<Inner>,
    code: crate::ZeroedSlice<Cell<bool>>,
    code_epoch: Cell<u64>,
    /// Bumped when a frame mapped by a shared mapping starts holding code: every
    /// address space then write-protects its own aliases of it (see
    /// `AddressSpace::protect_code_aliases`).
    shared_code_epoch: Cell<u64>,
    dirty_code: RefCell<Vec<Frame>>,
    /// Demand-zero pages in all address spaces: memory promised but not yet given a
    /// frame. They count against the limit, so that a mapping the machine could not
    /// back fails when it is made (`ENOMEM`), as eagerly allocated memory did.
    committed: Cell<u64>,
    /// An allocation failed (or a promise was refused) since [`PhysMem::take_starved`]
    /// last asked: the OS layer then has the page cache give back idle frames and tries
    /// the guest access again (see `Machine::out_of_memory`).
    starved: Cell<bool>,
    /// The host refused to map a guest page (`ENOMEM`: no host memory or mappings
    /// left) since [`PhysMem::take_host_starved`] last asked: the OS layer then drops
    /// the window's host mappings and tries the guest access again.
    host_starved: Cell<bool>,
    /// Guest VMAs (plus one page table each) of all address spaces: each may cost a host
    /// mapping, and the host allows `vm.max_map_count` for the whole machine.
    vmas: Cell<u64>,
    /// The most guest VMAs the machine may have (see [`PhysMem::vma_room`]).
    vma_limit: u64,
    /// The file page each page-cache frame was filled from, while its contents are the
    /// file's (see [`PhysMem::file_page`]).
    file_pages: RefCell<rustc_hash::FxHashMap<u32, FilePage>>,
    /// Address spaces that have each mapping number (`AddressSpace::mapping_id`): a
    /// number none has will never run again (see [`PhysMem::mapping_live`]).
    mappings: RefCell<rustc_hash::FxHashMap<u64, u32>>,
}

/// Which page of which file a frame holds (the file as it was when the page was read).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FilePage {
    /// The file: device, inode, modification time and size.
    pub file: FileId,
    /// The page's index in the file.
    pub index: u32,
}

impl PhysMem {
    /// Records that an address space has mapping number `id` (made, or taken over from
    /// its parent by fork).
    pub(crate) fn mapping_in(&self, id: u64) {
        *self.mappings.borrow_mut().entry(id).or_insert(0) += 1;
    }

    /// Records that an address space no longer has mapping number `id` (dropped, or
    /// remapped to another).
    pub(crate) fn mapping_out(&self, id: u64) {
        let mut m = self.mappings.borrow_mut();
        if let Some(n) = m.get_mut(&id) {
            *n -= 1;
            if *n == 0 {
                m.remove(&id);
            }
        }
    }

    /// Whether some address space has mapping number `id`: one that none has never
    /// runs again (numbers are never reused), so what a cache keeps for it can go.
    pub fn mapping_live(&self, id: u64) -> bool {
        self.mappings.borrow().contains_key(&id)
    }
}

const GROW_FRAMES: u32 = 4096; // grow the memfd 16 MiB at a time

impl PhysMem {
    /// Creates physical memory of at most `max_bytes` (rounded down to frames).
    pub fn new(max_bytes: u64) -> Result<Self, MemError> {
        let max_frames = (max_bytes / u64::from(PAGE_SIZE)).clamp(1, u64::from(u32::MAX)) as u32;
        let code = zeroed_flags(max_frames.min(1 << 22) as usize)?;
        let name = c"morph-physmem";
        // SAFETY: memfd_create takes a valid NUL-terminated name; the result is checked.
        let raw = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
        if raw < 0 {
            return Err(host_err("memfd_create"));
        }
        // SAFETY: `raw` is a fresh descriptor we own.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let len = max_frames as usize * PAGE_SIZE as usize;
        // SAFETY: reserving fresh address space; no existing mapping is touched.
        let physmap = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if physmap == libc::MAP_FAILED {
            return Err(host_err("mmap(physmap reservation)"));
        }
        Ok(PhysMem {
            fd,
            physmap: physmap.cast(),
            max_frames,
            inner: RefCell::new(Inner {
                refcount: Vec::new(),
                free: FreeFrames::default(),
                top: 0,
                size: 0,
                stats: PhysStats::default(),
            }),
            code,
            code_epoch: Cell::new(0),
            shared_code_epoch: Cell::new(0),
            dirty_code: RefCell::new(Vec::new()),
            committed: Cell::new(0),
            starved: Cell::new(false),
            host_starved: Cell::new(false),
            vmas: Cell::new(0),
            vma_limit: host_vma_budget(),
            file_pages: RefCell::new(rustc_hash::FxHashMap::default()),
            mappings: RefCell::new(rustc_hash::FxHashMap::default()),
        })
    }

    /// Whether the machine's guests may have `more` VMAs than now: fails with `ENOMEM`,
    /// as Linux's `mmap`, `mprotect` and `mremap` do at `vm.max_map_count`, before the
    /// host runs out of mappings (every guest process lives in this one host process,
    /// and morph itself must still be able to map and allocate).
    pub fn vma_room(&self, more: u64) -> Result<(), MemError> {
        if self.vmas.get() + more > self.vma_limit {
            return Err(MemError::Host {
                op: "map (too many mappings)",
                err: std::io::Error::from_raw_os_error(libc::ENOMEM),
            });
        }
        Ok(())
    }

    /// Records that the guests' VMAs went from `before` to `after` (see `vma_room`).
    pub fn count_vmas(&self, before: u64, after: u64) {
        self.vmas.set((self.vmas.get() + after).saturating_sub(before));
    }

    /// The memfd, for mapping frames into guest windows.
    pub fn raw_fd(&self) -> i32 {
        self.fd.as_raw_fd()
    }

    fn grow(&self, inner: &mut Inner, need_top: u32) -> Result<(), MemError> {
        if need_top <= inner.size {
            return Ok(());
        }
        if need_top > self.max_frames || need_top as usize > self.code.len() {
            return Err(MemError::OutOfMemory { limit_mib: (u64::from(self.max_frames) * u64::from(PAGE_SIZE)) >> 20 });
        }
        let new_size = need_top.div_ceil(GROW_FRAMES) * GROW_FRAMES;
        let new_size = new_size.min(self.max_frames);
        let bytes = new_size as usize * PAGE_SIZE as usize;
        // SAFETY: ftruncate on our own memfd.
        if unsafe { libc::ftruncate(self.fd.as_raw_fd(), bytes as i64) } != 0 {
            return Err(host_err("ftruncate(physmem)"));
        }
        let old = inner.size as usize * PAGE_SIZE as usize;
        // SAFETY: the range [physmap+old, physmap+bytes) lies inside our own reservation.
        let p = unsafe {
            libc::mmap(
                self.physmap.add(old).cast(),
                bytes - old,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_FIXED,
                self.fd.as_raw_fd(),
                old as i64,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(host_err("mmap(physmap)"));
        }
        inner.size = new_size;
        inner.refcount.resize(new_size as usize, 0);
        inner.free.grow(new_size);
        Ok(())
    }

    /// The most frames the machine may have.
    pub fn max_frames(&self) -> u32 {
        self.max_frames
    }

    /// Allocates one zeroed frame with reference count 1.
    pub fn alloc(&self) -> Result<Frame, MemError> {
        self.alloc_one(None)
    }

    /// Allocates a frame with reference count 1 holding a copy of `src` (a reused free
    /// frame is not zeroed first).
    pub fn alloc_copy(&self, src: Frame) -> Result<Frame, MemError> {
        self.alloc_one(Some(src))
    }

    /// Notes that hosting a guest page failed for want of host memory or mappings.
    pub fn note_host_starved(&self) {
        self.host_starved.set(true);
    }

    /// Whether hosting a guest page failed since the last call (and forgets it).
    pub fn take_host_starved(&self) -> bool {
        self.host_starved.replace(false)
    }

    /// Whether an allocation failed since the last call (and forgets it).
    pub fn take_starved(&self) -> bool {
        self.starved.replace(false)
    }

    fn alloc_one(&self, copy_of: Option<Frame>) -> Result<Frame, MemError> {
        let mut inner = self.inner.borrow_mut();
        let (f, zero) = match inner.free.take_one() {
            Some(f) => (f, copy_of.is_none()),
            None => {
                let f = self.bump(&mut inner, 1).inspect_err(|_| self.starved.set(true))?;
                Self::touched(&mut inner, f + 1);
                (f, false) // never used: the memfd's zeros
            }
        };
        self.claim(&mut inner, f, 1);
        drop(inner); // frame_ptr borrows it
        if zero {
            // SAFETY: a free frame is mapped in the physmap and referenced by no one.
            unsafe { std::ptr::write_bytes(self.frame_ptr(Frame(f)), 0, PAGE_SIZE as usize) };
        }
        if let Some(src) = copy_of {
            self.copy_frame(Frame(f), src);
        }
        Ok(Frame(f))
    }

    /// Promises `n` demand-zero pages, if frames in use plus pages already promised
    /// leave room for them under the limit.
    pub fn commit(&self, n: u32) -> Result<(), MemError> {
        let in_use = self.inner.borrow().stats.frames_in_use;
        if in_use + self.committed.get() + u64::from(n) > u64::from(self.max_frames) {
            self.starved.set(true);
            return Err(MemError::OutOfMemory { limit_mib: u64::from(self.max_frames) >> 8 });
        }
        self.committed.set(self.committed.get() + u64::from(n));
        Ok(())
    }

    /// Promises `n` demand-zero pages whatever the limit (`fork`: the child's copies
    /// of its parent's untouched pages; a touch beyond the limit then fails as a
    /// copy-on-write break would).
    pub fn commit_anyway(&self, n: u32) {
        self.committed.set(self.committed.get() + u64::from(n));
    }

    /// Withdraws the promise of `n` demand-zero pages (they got frames, or went away).
    pub fn uncommit(&self, n: u32) {
        self.committed.set(self.committed.get().saturating_sub(u64::from(n)));
    }

    /// Allocates `n` zeroed frames for pages touched for the first time, with
    /// consecutive numbers if it can (so their host mappings merge): see `alloc_many`.
    pub fn alloc_zeroed(&self, n: u32) -> Result<Vec<Frame>, MemError> {
        self.alloc_many(n)
    }

    /// Allocates `n` frames with consecutive numbers whose contents the caller
    /// overwrites at once (copies): the lowest run of freed frames (already in host
    /// memory), else a fresh run.
    pub fn alloc_run_to_overwrite(&self, n: u32) -> Result<Frame, MemError> {
        let run = {
            let mut inner = self.inner.borrow_mut();
            let run = inner.free.take_run(n);
            if let Some(f) = run {
                self.claim(&mut inner, f, n);
            }
            run
        };
        match run {
            Some(f) => Ok(Frame(f)),
            None => self.alloc_run(n),
        }
    }

    /// Sets the reference count of the `n` frames from `f` to 1 and counts them. A
    /// frame still marked as holding code (freed when its code could not be queued) is
    /// queued now, before it takes other contents.
    fn claim(&self, inner: &mut Inner, f: u32, n: u32) {
        for i in f..f + n {
            inner.refcount[i as usize] = 1;
            if self.code.get(i as usize).is_some_and(|c| c.replace(false)) {
                self.dirty_code.borrow_mut().push(Frame(i));
                self.code_epoch.set(self.code_epoch.get() + 1);
            }
        }
        Self::count_alloc(inner, n);
    }

    fn zero(&self, f: Frame) {
        // SAFETY: a frame just taken from the free list: mapped in the physmap and
        // referenced by no one else yet.
        unsafe { std::ptr::write_bytes(self.frame_ptr(f), 0, PAGE_SIZE as usize) };
    }

    /// Allocates `n` zeroed frames, freed ones first: the lowest run of `n` consecutive
    /// freed frames; else, if enough frames are free, the lowest ones (mostly runs too,
    /// as memory comes back a process at a time); else a fresh run of consecutive frames;
    /// else whatever is left under the limit, frame by frame.
    pub fn alloc_many(&self, n: u32) -> Result<Vec<Frame>, MemError> {
        let reused: Option<Vec<Frame>> = {
            let mut inner = self.inner.borrow_mut();
            if let Some(f) = inner.free.take_run(n) {
                self.claim(&mut inner, f, n);
                Some((f..f + n).map(Frame).collect())
            } else if n > 0 && inner.free.count >= n {
                let v: Vec<Frame> = (0..n).filter_map(|_| inner.free.take_one()).map(Frame).collect();
                for f in &v {
                    self.claim(&mut inner, f.0, 1);
                }
                Some(v)
            } else {
                None
            }
        };
        if let Some(v) = reused {
            v.iter().for_each(|&f| self.zero(f));
            return Ok(v);
        }
        if let Ok(f) = self.alloc_run(n) {
            return Ok((0..n).map(|i| Frame(f.0 + i)).collect());
        }
        let mut v = Vec::with_capacity(n as usize);
        for _ in 0..n {
            match self.alloc() {
                Ok(f) => v.push(f),
                Err(e) => {
                    v.into_iter().for_each(|f| self.release(f));
                    return Err(e);
                }
            }
        }
        Ok(v)
    }

    /// Allocates `n` fresh frames with consecutive numbers (so their host mappings
    /// merge), above every frame handed out so far (the memfd's zeros).
    fn alloc_run(&self, n: u32) -> Result<Frame, MemError> {
        let mut inner = self.inner.borrow_mut();
        let f = self.bump(&mut inner, n)?;
        Self::touched(&mut inner, f + n);
        self.claim(&mut inner, f, n);
        Ok(Frame(f))
    }

    /// Numbers `n` fresh frames above every frame numbered so far (growing the memfd);
    /// returns the first.
    fn bump(&self, inner: &mut Inner, n: u32) -> Result<u32, MemError> {
        let f = inner.top;
        let end = f.checked_add(n).ok_or(MemError::OutOfMemory { limit_mib: u64::from(self.max_frames) >> 8 })?;
        self.grow(inner, end)?;
        inner.top = end;
        Ok(f)
    }

    /// Counts frames below `end` as handed out (the memfd's used length).
    fn touched(inner: &mut Inner, end: u32) {
        inner.stats.frames_touched = inner.stats.frames_touched.max(u64::from(end));
    }

    /// Takes `n` consecutive frames out of circulation, unreferenced and not counted in
    /// use, for a cached file's pages (see `pagecache`): the lowest run of freed frames,
    /// else `n` fresh numbers above every frame handed out (the memfd is sparse: a
    /// number costs no host memory until its frame is written). `None` if neither is
    /// possible. Each frame is later claimed (`claim_reserved`) or given back
    /// (`unreserve`).
    pub fn reserve_run(&self, n: u32) -> Option<Frame> {
        let mut inner = self.inner.borrow_mut();
        let f = match inner.free.take_run(n) {
            Some(f) => f,
            None => self.bump(&mut inner, n).ok()?,
        };
        Some(Frame(f))
    }

    /// Hands out the `n` reserved frames from `f` with reference count 1, for contents
    /// the caller writes whole at once (a page-cache fill).
    pub fn claim_reserved(&self, f: Frame, n: u32) {
        let mut inner = self.inner.borrow_mut();
        Self::touched(&mut inner, f.0 + n);
        self.claim(&mut inner, f.0, n);
    }

    /// Gives back a reserved frame that was never claimed.
    pub fn unreserve(&self, f: Frame) {
        self.inner.borrow_mut().free.insert(f.0);
    }

    fn count_alloc(inner: &mut Inner, n: u32) {
        let s = &mut inner.stats;
        s.frames_in_use += u64::from(n);
        s.frames_allocated += u64::from(n);
        s.frames_peak = s.frames_peak.max(s.frames_in_use);
    }

    /// Adds a reference to a frame.
    pub fn retain(&self, f: Frame) {
        self.inner.borrow_mut().refcount[f.0 as usize] += 1;
    }

    /// Drops a reference; the last one frees the frame. Never allocates (it runs while
    /// a process is reaped, possibly when the host has no memory or mappings to spare).
    pub fn release(&self, f: Frame) {
        let mut inner = self.inner.borrow_mut();
        let rc = &mut inner.refcount[f.0 as usize];
        debug_assert!(*rc > 0, "release of a free frame {f:?}");
        *rc -= 1;
        if *rc == 0 {
            // The frame is zeroed when it is handed out again (one system call per freed
            // frame to punch a hole would dominate the cost of exit and exec).
            if self.code[f.0 as usize].get() {
                // Code decoded or translated from this frame must not be found again
                // when the frame is reused for other contents. If the queue cannot grow
                // now, the bit stays set and the frame is queued when it is reused.
                let mut dirty = self.dirty_code.borrow_mut();
                if dirty.try_reserve(1).is_ok() {
                    dirty.push(f);
                    self.code[f.0 as usize].set(false);
                    self.code_epoch.set(self.code_epoch.get() + 1);
                }
            }
            inner.free.insert(f.0);
            inner.stats.frames_in_use -= 1;
            self.file_pages.borrow_mut().remove(&f.0);
        }
    }

    /// Records that the page cache filled frame `f` with `page` of a file.
    pub fn set_file_page(&self, f: Frame, page: FilePage) {
        self.file_pages.borrow_mut().insert(f.0, page);
    }

    /// Forgets which file page `f` holds: its contents are no longer the file's as read.
    pub fn forget_file_page(&self, f: Frame) {
        self.file_pages.borrow_mut().remove(&f.0);
    }

    /// The file page frame `f` holds, if the page cache filled it and it has not been
    /// written through the cache since nor freed. A private mapping that is written
    /// gets a copy (another frame, with none), so a guest page whose frame has one is an
    /// unmodified file-backed page. (A store through a shared writable mapping changes
    /// the frame in place without this knowing: callers that reuse work by file
    /// identity must still compare the bytes.)
    pub fn file_page(&self, f: Frame) -> Option<FilePage> {
        self.file_pages.borrow().get(&f.0).copied()
    }

    /// The reference count of a frame.
    pub fn refcount(&self, f: Frame) -> u32 {
        self.inner.borrow().refcount[f.0 as usize]
    }

    /// Host pointer to the first byte of frame `f` in the physmap.
    pub fn frame_ptr(&self, f: Frame) -> *mut u8 {
        debug_assert!(f.0 < self.inner.borrow().size);
        // SAFETY: in bounds of the reservation because allocated frames are < size.
        unsafe { self.physmap.add(f.0 as usize * PAGE_SIZE as usize) }
    }

    /// The 4 KiB of frame `f`.
    pub fn frame_bytes(&self, f: Frame) -> &[u8] {
        // SAFETY: an allocated frame is mapped read/write in the physmap; guest writes
        // through other mappings may change the bytes, which a `u8` slice tolerates in
        // this single-threaded machine (no reference is held across guest execution).
        unsafe { std::slice::from_raw_parts(self.frame_ptr(f), PAGE_SIZE as usize) }
    }

    /// Copies frame `src` into frame `dst`.
    pub fn copy_frame(&self, dst: Frame, src: Frame) {
        // SAFETY: both frames are allocated, distinct pages of the physmap.
        unsafe { std::ptr::copy_nonoverlapping(self.frame_ptr(src), self.frame_ptr(dst), PAGE_SIZE as usize) }
    }

    /// Marks a frame as holding code the engine decoded or translated.
    pub fn set_code(&self, f: Frame) {
        if let Some(c) = self.code.get(f.0 as usize) {
            c.set(true);
        }
    }

    /// Increases whenever a frame of a shared mapping starts holding code.
    #[inline]
    pub fn shared_code_epoch(&self) -> u64 {
        self.shared_code_epoch.get()
    }

    /// Records that a frame of a shared mapping started holding code.
    pub fn note_shared_code(&self) {
        self.shared_code_epoch.set(self.shared_code_epoch.get() + 1);
    }

    /// Whether a frame holds code.
    #[inline]
    pub fn is_code(&self, f: Frame) -> bool {
        self.code.get(f.0 as usize).is_some_and(Cell::get)
    }

    /// Records a guest write to a code frame: clears the bit, queues the frame and
    /// bumps the code epoch so the engine notices.
    #[cold]
    pub fn note_code_write(&self, f: Frame) {
        if let Some(c) = self.code.get(f.0 as usize) {
            c.set(false);
        }
        self.dirty_code.borrow_mut().push(f);
        self.code_epoch.set(self.code_epoch.get() + 1);
        self.inner.borrow_mut().stats.code_writes += 1;
    }

    /// Increases whenever a code frame is written.
    #[inline]
    pub fn code_epoch(&self) -> u64 {
        self.code_epoch.get()
    }

    /// Takes the frames whose code was written since the last call.
    pub fn take_dirty_code(&self) -> Vec<Frame> {
        std::mem::take(&mut self.dirty_code.borrow_mut())
    }

    /// Records an address space made over this memory, with the low window or not.
    pub(crate) fn note_address_space(&self, low: bool) {
        let s = &mut self.inner.borrow_mut().stats;
        s.address_spaces += 1;
        s.low_windows += u64::from(low);
    }

    /// Counters.
    pub fn stats(&self) -> PhysStats {
        self.inner.borrow().stats
    }

    /// Frames promised to demand-zero pages and not yet given (they count against the
    /// limit with the frames in use).
    pub fn committed_frames(&self) -> u64 {
        self.committed.get()
    }
}

impl Drop for PhysMem {
    fn drop(&mut self) {
        // SAFETY: unmapping our own reservation; nothing refers to it after drop.
        unsafe {
            libc::munmap(self.physmap.cast(), self.max_frames as usize * PAGE_SIZE as usize);
        }
    }
}

/// The guest VMAs a machine may have: the host's `vm.max_map_count` less room for
/// morph's own mappings (its code, heap, thread stacks, translation buffers) and for
/// guest pages whose frames are not consecutive and so take a host mapping each. The
/// reserve covers morph's own mappings (a few dozen at start) without counting them:
/// `/proc/self/maps` costs the kernel more to produce than anything else a start reads.
fn host_vma_budget() -> u64 {
    const MORPH_RESERVE: u64 = 4096 + 256;
    let max = std::fs::read_to_string("/proc/sys/vm/max_map_count")
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .unwrap_or(65530);
    max.saturating_sub(MORPH_RESERVE).max(64)
}

/// The free frames below the high-water mark, as a bitmap (one bit per frame, set when
/// free), so that freeing never allocates (the bitmap grows with the memfd, in the
/// allocation path, which may fail) and runs of consecutive free frames are found by
/// scanning words. Allocation is first fit from the lowest address: memory stays packed
/// at the bottom of the memfd, whose pages the host keeps resident once touched.
#[derive(Default)]
struct FreeFrames {
    bits: Vec<u64>,
    /// Free frames.
    count: u32,
    /// No word below this one has a free frame.
    low: usize,
}

impl FreeFrames {
    /// Makes room for frames below `frames` (allocates; never called while freeing).
    fn grow(&mut self, frames: u32) {
        self.bits.resize((frames as usize).div_ceil(64), 0);
    }

    fn insert(&mut self, f: u32) {
        let (w, b) = (f as usize / 64, f % 64);
        debug_assert!(self.bits[w] & (1 << b) == 0, "frame {f} freed twice");
        self.bits[w] |= 1 << b;
        self.count += 1;
        self.low = self.low.min(w);
    }

    fn remove_range(&mut self, f: u32, n: u32) {
        for g in f..f + n {
            self.bits[g as usize / 64] &= !(1 << (g % 64));
        }
        self.count -= n;
    }

    /// Takes the lowest free frame.
    fn take_one(&mut self) -> Option<u32> {
        if self.count == 0 {
            return None;
        }
        while self.bits[self.low] == 0 {
            self.low += 1;
        }
        let f = (self.low * 64) as u32 + self.bits[self.low].trailing_zeros();
        self.remove_range(f, 1);
        Some(f)
    }

    /// Takes the lowest run of `n` consecutive free frames, if there is one.
    fn take_run(&mut self, n: u32) -> Option<u32> {
        if n == 0 || self.count < n {
            return None;
        }
        if n == 1 {
            return self.take_one();
        }
        let (mut start, mut len) = (0u32, 0u32);
        for w in self.low..self.bits.len() {
            let mut word = self.bits[w];
            let base = (w * 64) as u32;
            if word == 0 {
                len = 0;
                continue;
            }
            if word == u64::MAX {
                if len == 0 {
                    start = base;
                }
                len += 64;
                if len >= n {
                    self.remove_range(start, n);
                    return Some(start);
                }
                continue;
            }
            let mut pos = 0;
            while pos < 64 {
                if word & 1 == 0 {
                    let z = word.trailing_zeros().min(64 - pos);
                    len = 0;
                    pos += z;
                    word = word.checked_shr(z).unwrap_or(0);
                    continue;
                }
                let ones = word.trailing_ones();
                if len == 0 {
                    start = base + pos;
                }
                len += ones;
                if len >= n {
                    self.remove_range(start, n);
                    return Some(start);
                }
                pos += ones;
                word = word.checked_shr(ones).unwrap_or(0);
                if pos < 64 {
                    len = 0; // a used frame follows within the word
                }
            }
        }
        None
    }
}

/// `n` flags, all false, in pages of their own mapped as untouched zeroes: a machine
/// with 4 GiB of guest memory has a million frames, and the pages of flags no frame in
/// use reaches are never touched (see `ZeroedSlice`).
fn zeroed_flags(n: usize) -> Result<crate::ZeroedSlice<Cell<bool>>, MemError> {
    // SAFETY: all-zero bytes are `Cell<bool>`'s `false`.
    unsafe { crate::ZeroedSlice::new(n) }.map_err(|_| host_err("mmap(code flags)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_frames_give_the_lowest_run_that_fits() {
        let mut f = FreeFrames::default();
        f.grow(256);
        for i in [3, 5, 6, 7, 60, 61, 62, 63, 64, 65, 66, 200] {
            f.insert(i);
        }
        assert_eq!(f.take_run(3), Some(5));
        assert_eq!(f.take_run(5), Some(60), "a run across a word boundary");
        assert_eq!(f.take_run(3), None, "65 and 66 are left");
        assert_eq!(f.take_one(), Some(3));
        assert_eq!(f.take_one(), Some(65));
        assert_eq!((f.take_one(), f.take_one(), f.take_one(), f.count), (Some(66), Some(200), None, 0));
        for i in 0..256 {
            f.insert(i);
        }
        assert_eq!(f.take_run(200), Some(0));
        assert_eq!(f.take_run(56), Some(200));
        assert_eq!(f.count, 0);
    }

    #[test]
    fn freed_frames_are_reused_before_the_memfd_grows() {
        // Processes that come and go, each freeing its frames in a scattered order: the
        // memory they leave behind serves the next ones (the memfd's host memory stays
        // at the most used at once).
        let phys = PhysMem::new(1 << 30).unwrap();
        let mut rng = 12345u64;
        for round in 0..200 {
            let mut held: Vec<Frame> = Vec::new();
            for n in [1, 3, 8, 17, 2, 40, 1, 1, 5] {
                held.extend(phys.alloc_many(n).unwrap());
                held.push(phys.alloc().unwrap());
                let src = held[0];
                held.push(phys.alloc_copy(src).unwrap());
                let r = phys.alloc_run_to_overwrite(4).unwrap();
                held.extend((0..4).map(|i| Frame(r.0 + i)));
            }
            for i in (1..held.len()).rev() {
                rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                held.swap(i, (rng >> 33) as usize % (i + 1));
            }
            let zeroed = phys.alloc_zeroed(40).unwrap();
            assert!(zeroed.iter().all(|&f| phys.frame_bytes(f).iter().all(|&b| b == 0)), "round {round}");
            for f in held.into_iter().chain(zeroed) {
                // SAFETY: a frame of ours, referenced by no one else.
                unsafe { *phys.frame_ptr(f) = 0xAA };
                phys.release(f);
            }
        }
        let s = phys.stats();
        assert_eq!(s.frames_in_use, 0);
        assert!(s.frames_touched <= 2 * s.frames_peak, "{s:?}");
    }
}
