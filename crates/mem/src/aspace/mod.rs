//! A guest process's address space: a 4 GiB host window plus a software page table.
//!
//! Guest virtual address `v` lives at host address `base + v`. Each present guest page
//! is a `MAP_SHARED|MAP_FIXED` mapping of its frame of the physical memfd, so two
//! windows mapping one frame see the same bytes. The software page table ([`Pte`]) is
//! the truth: every guest access made by the emulator is checked against it first, so
//! a bad guest access is a [`MemFault`], never a host `SIGSEGV`. The host mapping also
//! carries the guest protection (copy-on-write pages are mapped read-only), so host
//! code that runs guest accesses directly (the translator) gets the same answer from
//! the MMU.
//!
//! File mappings, private and shared, map the page cache's frames (see
//! [`crate::PageCache`]): a private writable one copy-on-write, a shared one directly. A
//! shared mapping of a file opened read/write holds a descriptor of the file and writes
//! its dirty pages back when it is unmapped (also when replaced or moved over), when
//! `msync` asks, and when the address space is dropped.
//!
//! The list of [`Vma`]s records what was mapped where, with which name, for Linux's
//! placement rules and `/proc/self/maps`.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::fs::File;
use std::os::fd::{AsRawFd, OwnedFd};
use std::rc::Rc;

use crate::pagecache::{fstat, write_back_page};
use crate::pte::{Prot, Pte};
use crate::window::{PageTable, WindowSlot};
use crate::{
    FileId, FileKey, Frame, MemError, NUM_PAGES, PAGE_SHIFT, PAGE_SIZE, PageCache, PhysAddr, PhysMem, host_err,
};

/// Why a guest access failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemFaultKind {
    /// Nothing is mapped there (`SEGV_MAPERR`).
    Unmapped,
    /// Mapped, but the access is not allowed (`SEGV_ACCERR`).
    Protection,
    /// Allowed, but the page of the mapped file lies wholly beyond its end (`SIGBUS`,
    /// `BUS_ADRERR`).
    BeyondEof,
    /// The access runs past the last byte of the 4 GiB address space: beyond the limit
    /// of Linux's flat segments, which the CPU checks before paging (`#GP(0)`, or
    /// `#SS(0)` through SS; `MemFault::addr` is the access's first byte). An address
    /// *computed* past it wraps to the bottom and is no fault.
    Limit,
}

/// A guest memory fault: becomes a guest `SIGSEGV` (`SIGBUS` beyond the end of a file).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemFault {
    /// The faulting guest address.
    pub addr: u32,
    /// Whether the access was a write.
    pub write: bool,
    /// Unmapped or protection.
    pub kind: MemFaultKind,
}

/// What a mapping holds, for placement and `/proc/self/maps`.
#[derive(Clone, Debug)]
pub enum MapKind {
    /// Anonymous memory.
    Anon,
    /// A file mapping through the page cache, starting at page `page` of the file.
    File {
        /// The file's identity (as when it was mapped).
        id: FileId,
        /// First file page mapped at the start of the VMA.
        page: u32,
        /// For a shared mapping of a file opened read/write: where its pages are written
        /// back (see [`AddressSpace::write_back`]).
        writeback: Option<Rc<OwnedFd>>,
        /// The file, as Linux's VMA holds it (the page cache's descriptor, shared): its
        /// pages can be found again after the cache dropped them (`madvise`).
        file: Rc<File>,
    },
}

/// A virtual memory area.
#[derive(Clone, Debug)]
pub struct Vma {
    /// First address.
    pub start: u32,
    /// One past the last address (≤ 0xFFFF_F000).
    pub end: u32,
    /// Protection.
    pub prot: Prot,
    /// `MAP_SHARED`.
    pub shared: bool,
    /// What is mapped.
    pub kind: MapKind,
    /// Name shown in maps (`[heap]`, `[stack]`, a path, or empty).
    pub name: Rc<str>,
}

/// One guest process's address space.
pub struct AddressSpace {
    phys: Rc<PhysMem>,
    /// Where the host window is (unmapped when dropped).
    window: WindowSlot,
    pt: PageTable,
    vmas: BTreeMap<u32, Vma>,
    /// Host `mmap` and `mprotect` calls made for this address space's window.
    host_maps: Cell<u64>,
    /// Generation of what its pages map: bumped whenever a mapped page may have changed
    /// frame or become unreadable (mmap or mremap over mapped pages, munmap, mprotect to
    /// `PROT_NONE`, and a copy-on-write break of a page holding code), not when pages
    /// are mapped where nothing was or only write permission changes (fork, a
    /// copy-on-write break of data, write-protecting code). Caches of VA → translated
    /// code (the engine's jump cache) are valid for one generation.
    pub map_gen: u64,
    /// What its pages map, as a number: unique to this space at this generation, except
    /// that a forked child starts with its parent's (their mappings are identical until
    /// either one's generation moves, which gives it a new number). A cache of VA →
    /// translated code made for one number is valid for every space that has it.
    mapping: u64,
    /// Unique among every address space this host process ever made (host addresses of
    /// windows are reused after one is freed; this is not).
    id: u64,
    mmap_base: u32,
    /// The `PhysMem::shared_code_epoch` up to which this space's aliases of code frames
    /// are write-protected.
    aliases_seen: Cell<u64>,
    /// `fork` left pages `STALE_RW` (see [`AddressSpace::settle_fork`]).
    fork_pending: bool,
    /// Its VMAs plus its page table as last counted in the machine's total (see
    /// `PhysMem::vma_room`).
    counted: u64,
    /// The machine's page cache, once a file is mapped: pages of file mappings are read
    /// (or found) there at their first touch (see `fill_file_pages`).
    cache: Option<PageCache>,
    /// The pages locked in memory (`mlock`, Linux's `VM_LOCKED` VMAs), as disjoint,
    /// page-aligned ranges start → end: what `RLIMIT_MEMLOCK` counts and `VmLck` shows.
    /// Unmapping pages unlocks them, moving them (`mremap`) moves their lock, and a
    /// forked child starts with none, as on Linux.
    locked: BTreeMap<u32, u32>,
}

impl AddressSpace {
    /// A new, empty address space over `phys`.
    pub fn new(phys: Rc<PhysMem>) -> Result<Self, MemError> {
        Self::with_window(phys, true)
    }

    /// [`new`](Self::new), in the low window only if `low` allows (see `crate::window`).
    pub(super) fn with_window(phys: Rc<PhysMem>, low: bool) -> Result<Self, MemError> {
        let slot = WindowSlot::take(low)?;
        phys.note_address_space(slot.is_low());
        Ok(AddressSpace {
            phys,
            window: slot,
            pt: PageTable::new()?,
            vmas: BTreeMap::new(),
            host_maps: Cell::new(0),
            map_gen: 0,
            mapping: fresh_number(),
            id: fresh_number(),
            mmap_base: 0x4000_0000,
            aliases_seen: Cell::new(0),
            fork_pending: false,
            counted: 0,
            cache: None,
            locked: BTreeMap::new(),
        })
        .map(|mut a: AddressSpace| {
            a.account();
            a.phys.mapping_in(a.mapping);
            a
        })
    }

    /// Brings the machine's count of guest VMAs up to date with this space's.
    fn account(&mut self) {
        let now = self.vmas.len() as u64 + 1;
        self.phys.count_vmas(self.counted, now);
        self.counted = now;
    }

    /// The most VMAs one change of mappings adds: the new one, and the two pieces of a
    /// VMA it splits in the middle.
    const VMAS_PER_CHANGE: u64 = 2;

    /// This address space's unique number.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The number of what its pages map (see the field `mapping`): equal for two spaces
    /// (or one space at two times) only if every page maps the same frame in both.
    pub fn mapping_id(&self) -> u64 {
        self.mapping
    }

    /// A mapped page may have changed frame or become unreadable: a new generation.
    fn remapped(&mut self) {
        self.map_gen += 1;
        self.set_mapping(fresh_number());
    }

    /// Gives this space mapping number `id` (counted in `PhysMem`'s live numbers).
    fn set_mapping(&mut self, id: u64) {
        self.phys.mapping_out(self.mapping);
        self.mapping = id;
        self.phys.mapping_in(id);
    }

    /// Top of the top-down mmap area (set by the loader from the layout).
    pub fn mmap_base(&self) -> u32 {
        self.mmap_base
    }

    /// Sets the top of the mmap area.
    pub fn set_mmap_base(&mut self, base: u32) {
        self.mmap_base = base;
    }

    /// The physical memory behind this address space.
    pub fn phys(&self) -> &Rc<PhysMem> {
        &self.phys
    }

    /// Host address of guest address 0 (never baked into translations): 0 where this
    /// space has the low window (see `crate::window`).
    pub fn host_base(&self) -> usize {
        self.window.base()
    }

    /// The page-table entry of the page containing `va`.
    #[inline]
    pub fn pte(&self, va: u32) -> Pte {
        self.pt[(va >> PAGE_SHIFT) as usize].get()
    }

    /// Guest VA → PA, if mapped.
    pub fn translate(&self, va: u32) -> Option<PhysAddr> {
        let p = self.pte(va);
        p.has_frame().then(|| PhysAddr(p.frame().addr().0 + u64::from(va & (PAGE_SIZE - 1))))
    }

    /// Host `mmap` and `mprotect` calls made for this address space's window.
    pub fn host_maps(&self) -> u64 {
        self.host_maps.get()
    }

    /// The VMAs in address order.
    pub fn vmas(&self) -> impl Iterator<Item = &Vma> {
        self.vmas.values()
    }

    /// Records the pages `[start, end)` (page-aligned) as locked in memory.
    pub fn lock_pages(&mut self, start: u32, end: u32) {
        if start >= end {
            return;
        }
        self.unlock_pages(start, end);
        let (mut lo, mut hi) = (start, end);
        // Joined with a locked range that ends where this starts, or starts where it ends.
        if let Some((&s, &e)) = self.locked.range(..lo).next_back()
            && e == lo
        {
            self.locked.remove(&s);
            lo = s;
        }
        if let Some(e) = self.locked.remove(&hi) {
            hi = e;
        }
        self.locked.insert(lo, hi);
    }

    /// Records the pages `[start, end)` (page-aligned) as not locked.
    pub fn unlock_pages(&mut self, start: u32, end: u32) {
        if start >= end {
            return;
        }
        let over: Vec<(u32, u32)> =
            self.locked.range(..end).rev().take_while(|&(_, &e)| e > start).map(|(&s, &e)| (s, e)).collect();
        for (s, e) in over {
            self.locked.remove(&s);
            if s < start {
                self.locked.insert(s, start);
            }
            if e > end {
                self.locked.insert(end, e);
            }
        }
    }

    /// Bytes locked in `[start, end)`.
    pub fn locked_within(&self, start: u64, end: u64) -> u64 {
        self.locked.iter().map(|(&s, &e)| end.min(u64::from(e)).saturating_sub(start.max(u64::from(s)))).sum()
    }

    /// Bytes locked in the whole space (Linux's `locked_vm`, in bytes).
    pub fn locked_bytes(&self) -> u64 {
        self.locked.iter().map(|(&s, &e)| u64::from(e - s)).sum()
    }

    /// The locked ranges in `[start, end)`, clipped to it.
    pub(super) fn locked_ranges(&self, start: u32, end: u32) -> Vec<(u32, u32)> {
        self.locked.iter().filter(|&(&s, &e)| s < end && e > start).map(|(&s, &e)| (s.max(start), e.min(end))).collect()
    }
}

impl Drop for AddressSpace {
    fn drop(&mut self) {
        self.phys.count_vmas(self.counted, 0);
        self.phys.mapping_out(self.mapping);
        for v in self.vmas.values() {
            let _ = self.write_back_vma(v, v.start, v.end);
        }
        // Every entry that is not zero lies in a VMA (pages are only ever mapped inside
        // one, and dropping a VMA's pages zeroes their entries): zeroing these leaves the
        // table clean for the next address space, with no scan of its 8 MiB.
        for v in self.vmas.values() {
            for p in &self.pt[(v.start >> PAGE_SHIFT) as usize..(v.end >> PAGE_SHIFT) as usize] {
                let p = p.take();
                if p.demand_zero() {
                    self.phys.uncommit(1);
                }
                if p.has_frame() {
                    self.phys.release(p.frame());
                }
            }
        }
        self.pt.mark_clean();
        // The window slot, dropped with the other fields, unmaps the window.
    }
}

/// Whether `file` is open for reading and writing.
fn is_read_write(file: &File) -> bool {
    // SAFETY: F_GETFL on a descriptor the File holds.
    let fl = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GETFL) };
    fl >= 0 && fl & libc::O_ACCMODE == libc::O_RDWR
}

/// The most pages `AddressSpace::copy_now` copies at once (larger data segments are
/// copied run by run as they are written).
const EAGER_COPY_PAGES: u32 = 16;

/// Pages between two VMAs' changed ranges over which one protection sync spans them.
const UNCOW_JOIN: u32 = 64;

/// Pages either side of a copy-on-write break in private anonymous memory that are
/// copied with it while still shared (`AddressSpace::cow_batch`). A break here is a
/// host signal, a copy and an `mmap` (Linux's is a page fault), and a forked child
/// writes a dozen scattered pages of its heap, stack and bss before it execs: in the
/// fork/exec loop of `benches/real`, one page either side took 4,089 window faults, 16
/// take 2,945 (the loop ×0.96), for 2,600 more page copies, given back at the `exec`.
pub(super) const COW_ANON_REACH: u32 = 16;

/// A number never handed out before in this host process.
fn fresh_number() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// First page and page count of `[start, start+len)` rounded out to pages, clipped to
/// the 4 GiB space.
fn pages(start: u32, len: u32) -> (u32, u32) {
    let first = start >> PAGE_SHIFT;
    let end = (u64::from(start) + u64::from(len)).div_ceil(u64::from(PAGE_SIZE)).min(NUM_PAGES as u64);
    (first, (end as u32).saturating_sub(first))
}

mod access;
mod host;
mod ops;
#[cfg(test)]
pub(crate) mod tests;
