//! Physical memory: one memfd, cut into reference-counted 4 KiB frames.
//!
//! The whole memfd is also mapped once into morph's own address space (the
//! *physmap*), so the emulator can fill, copy and zero frames without going through
//! a guest window. Frames are handed out from a free list or, for runs of pages, by
//! bumping the high-water mark: consecutive guest pages then get consecutive frames
//! and their host mappings merge into one VMA (the host allows only ~65k VMAs for the
//! whole machine).
//!
//! Each frame also carries a *code* bit (Transmeta's T-bit): the engine sets it on
//! frames it has decoded or translated code from, and a guest write to such a frame
//! is recorded in a queue the engine drains to drop stale code.

use std::cell::{Cell, RefCell};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use crate::{MemError, PAGE_SIZE, PhysAddr, host_err};

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
}

struct Inner {
    refcount: Vec<u32>,
    free: Vec<u32>,
    /// Frames ever handed out by bumping (the memfd's used length in frames).
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
    code: Box<[Cell<bool>]>,
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
}

const GROW_FRAMES: u32 = 4096; // grow the memfd 16 MiB at a time

impl PhysMem {
    /// Creates physical memory of at most `max_bytes` (rounded down to frames).
    pub fn new(max_bytes: u64) -> Result<Self, MemError> {
        let max_frames = (max_bytes / u64::from(PAGE_SIZE)).clamp(1, u64::from(u32::MAX)) as u32;
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
                free: Vec::new(),
                top: 0,
                size: 0,
                stats: PhysStats::default(),
            }),
            code: (0..max_frames.min(1 << 22)).map(|_| Cell::new(false)).collect(),
            code_epoch: Cell::new(0),
            shared_code_epoch: Cell::new(0),
            dirty_code: RefCell::new(Vec::new()),
            committed: Cell::new(0),
        })
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
        Ok(())
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

    fn alloc_one(&self, copy_of: Option<Frame>) -> Result<Frame, MemError> {
        let mut inner = self.inner.borrow_mut();
        let (f, zero) = match inner.free.pop() {
            Some(f) => (f, copy_of.is_none()),
            None => {
                let f = inner.top;
                self.grow(&mut inner, f + 1)?;
                inner.top += 1;
                (f, false) // never used: the memfd's zeros
            }
        };
        inner.refcount[f as usize] = 1;
        Self::count_alloc(&mut inner, 1);
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
    /// consecutive numbers if it can (so their host mappings merge): the frames most
    /// recently freed if they are consecutive (freed runs are pushed in ascending order;
    /// they are resident, so the host maps them without allocating), else a fresh run,
    /// else single frames.
    pub fn alloc_zeroed(&self, n: u32) -> Result<Vec<Frame>, MemError> {
        if let Some(run) = self.take_recycled_run(n) {
            for &f in &run {
                // SAFETY: a frame just taken from the free list: mapped in the physmap
                // and referenced by no one else yet.
                unsafe { std::ptr::write_bytes(self.frame_ptr(f), 0, PAGE_SIZE as usize) };
            }
            return Ok(run);
        }
        self.alloc_many(n)
    }

    /// Allocates `n` frames with consecutive numbers whose contents the caller
    /// overwrites at once (copies): the most recently freed frames if they are
    /// consecutive (already in host memory), else a fresh run.
    pub fn alloc_run_to_overwrite(&self, n: u32) -> Result<Frame, MemError> {
        match self.take_recycled_run(n) {
            Some(run) => Ok(run[0]),
            None => self.alloc_run(n),
        }
    }

    /// The `n` most recently freed frames with reference count 1, if they are
    /// consecutive (their contents are whatever their last owner left).
    fn take_recycled_run(&self, n: u32) -> Option<Vec<Frame>> {
        let mut inner = self.inner.borrow_mut();
        let len = inner.free.len();
        let top = inner.free.get(len.wrapping_sub(n as usize)..).unwrap_or(&[]);
        let consecutive = n > 0 && top.len() == n as usize && top.windows(2).all(|w| w[1] == w[0] + 1);
        if !consecutive {
            return None;
        }
        let run: Vec<Frame> = top.iter().map(|&f| Frame(f)).collect();
        inner.free.truncate(len - n as usize);
        for f in &run {
            inner.refcount[f.0 as usize] = 1;
        }
        Self::count_alloc(&mut inner, n);
        Some(run)
    }

    /// Allocates `n` zeroed frames: a fresh run of consecutive frames if there is room
    /// under the limit, else frames freed earlier, one by one.
    pub fn alloc_many(&self, n: u32) -> Result<Vec<Frame>, MemError> {
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

    /// Allocates `n` zeroed frames with consecutive numbers (so their host mappings merge).
    fn alloc_run(&self, n: u32) -> Result<Frame, MemError> {
        if n == 1 {
            return self.alloc();
        }
        let mut inner = self.inner.borrow_mut();
        let f = inner.top;
        self.grow(&mut inner, f + n)?;
        inner.top += n;
        for i in 0..n {
            inner.refcount[(f + i) as usize] = 1;
        }
        Self::count_alloc(&mut inner, n);
        Ok(Frame(f))
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

    /// Drops a reference; the last one frees and zeroes the frame.
    pub fn release(&self, f: Frame) {
        let mut inner = self.inner.borrow_mut();
        let rc = &mut inner.refcount[f.0 as usize];
        debug_assert!(*rc > 0, "release of a free frame {f:?}");
        *rc -= 1;
        if *rc == 0 {
            // The frame is zeroed when it is handed out again (one system call per freed
            // frame to punch a hole would dominate the cost of exit and exec).
            if self.code[f.0 as usize].replace(false) {
                // Code decoded or translated from this frame must not be found again
                // when the frame is reused for other contents.
                self.dirty_code.borrow_mut().push(f);
                self.code_epoch.set(self.code_epoch.get() + 1);
            }
            inner.free.push(f.0);
            inner.stats.frames_in_use -= 1;
        }
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

    /// Counters.
    pub fn stats(&self) -> PhysStats {
        self.inner.borrow().stats
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
