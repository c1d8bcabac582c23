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
use crate::window::{PageTable, WindowSlot};
use crate::{FileId, Frame, MemError, NUM_PAGES, PAGE_SHIFT, PAGE_SIZE, PageCache, PhysAddr, PhysMem, host_err};

/// Guest page protection (Linux `PROT_*` bits).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Prot(pub u32);

impl Prot {
    /// No access.
    pub const NONE: Prot = Prot(0);
    /// `PROT_READ`.
    pub const READ: Prot = Prot(1);
    /// `PROT_WRITE`.
    pub const WRITE: Prot = Prot(2);
    /// `PROT_EXEC`.
    pub const EXEC: Prot = Prot(4);
    /// Read + write.
    pub const RW: Prot = Prot(3);
    /// Read + exec.
    pub const RX: Prot = Prot(5);
    /// Read + write + exec.
    pub const RWX: Prot = Prot(7);

    /// Whether all bits of `other` are set.
    pub fn has(self, other: Prot) -> bool {
        self.0 & other.0 == other.0
    }
}

/// A page-table entry: the frame and the guest's rights on the page.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[repr(transparent)]
pub struct Pte(u64);

impl Pte {
    const PRESENT: u64 = 1 << 0;
    const READ: u64 = 1 << 1;
    const WRITE: u64 = 1 << 2;
    const EXEC: u64 = 1 << 3;
    /// The frame is shared with someone else; copy it before the first write.
    const COW: u64 = 1 << 4;
    /// Part of a `MAP_SHARED` mapping: fork shares the frame instead of copying it.
    const SHARED: u64 = 1 << 5;
    /// Translated code was made from this page: the host mapping is read-only so that
    /// translated stores to it trap (the guest may still write; see `prepare_write`).
    const CODE_RO: u64 = 1 << 7;
    /// The host window maps this page to its frame with `host_prot` (else the window
    /// is inaccessible there). The window is filled lazily: a page becomes hosted at its
    /// first access (see [`AddressSpace::host_in`]), so mappings a process never
    /// touches, such as most of a forked child that execs at once, cost no host call.
    const HOSTED: u64 = 1 << 8;

    /// This entry mapping `frame` instead (protections and flags kept).
    fn with_frame(self, frame: Frame) -> Pte {
        Pte((self.0 & 0xFFFF_FFFF) | (u64::from(frame.0) << 32))
    }

    fn new(frame: Frame, prot: Prot, cow: bool, shared: bool) -> Pte {
        let mut bits = Self::PRESENT | (u64::from(frame.0) << 32);
        // i386 without NX: readable pages are executable and vice versa.
        if prot.has(Prot::READ) || prot.has(Prot::EXEC) {
            bits |= Self::READ | Self::EXEC;
        }
        if prot.has(Prot::WRITE) {
            bits |= Self::WRITE | Self::READ | Self::EXEC;
        }
        if cow {
            bits |= Self::COW;
        }
        if shared {
            bits |= Self::SHARED;
        }
        Pte(bits)
    }
    /// Whether the page is mapped.
    pub fn present(self) -> bool {
        self.0 & Self::PRESENT != 0
    }
    /// Whether the guest may read (and, on i386, execute) the page.
    pub fn readable(self) -> bool {
        self.0 & Self::READ != 0
    }
    /// Whether the guest may write the page (possibly after a copy).
    pub fn writable(self) -> bool {
        self.0 & Self::WRITE != 0
    }
    /// Whether the page is copy-on-write.
    pub fn cow(self) -> bool {
        self.0 & Self::COW != 0
    }
    /// Whether the page is part of a `MAP_SHARED` mapping.
    pub fn shared(self) -> bool {
        self.0 & Self::SHARED != 0
    }
    /// The frame number of a private anonymous page never touched yet (demand-zero): it
    /// reads as zeros, and gets a frame when it is first hosted (see `materialize`).
    const NO_FRAME: u32 = u32::MAX;

    /// Whether the page has a frame (a present page without one is demand-zero).
    pub fn has_frame(self) -> bool {
        self.present() && (self.0 >> 32) as u32 != Self::NO_FRAME
    }
    /// Whether the host window maps the page (see `HOSTED`).
    pub fn hosted(self) -> bool {
        self.0 & Self::HOSTED != 0
    }
    /// The frame behind the page (meaningful only if present).
    pub fn frame(self) -> Frame {
        Frame((self.0 >> 32) as u32)
    }
    fn host_prot(self) -> i32 {
        let mut p = 0;
        if self.readable() {
            p |= libc::PROT_READ;
        }
        if self.writable() && !self.cow() && self.0 & Self::CODE_RO == 0 {
            p |= libc::PROT_WRITE;
        }
        p
    }
}

/// Why a guest access failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemFaultKind {
    /// Nothing is mapped there (`SEGV_MAPERR`).
    Unmapped,
    /// Mapped, but the access is not allowed (`SEGV_ACCERR`).
    Protection,
}

/// A guest memory fault: becomes a guest `SIGSEGV`.
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
    /// Its VMAs plus its page table as last counted in the machine's total (see
    /// `PhysMem::vma_room`).
    counted: u64,
}

impl AddressSpace {
    /// A new, empty address space over `phys`.
    pub fn new(phys: Rc<PhysMem>) -> Result<Self, MemError> {
        let slot = WindowSlot::take()?;
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
            counted: 0,
        })
        .map(|mut a: AddressSpace| {
            a.account();
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
        self.mapping = fresh_number();
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

    /// Host address of guest address 0 (never baked into translations).
    pub fn host_base(&self) -> *mut u8 {
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

    // ----- host mapping ---------------------------------------------------------
    //
    // The host window is a cache of the page table: a page is `HOSTED` when the window
    // maps it to its frame with `host_prot`, and inaccessible otherwise. Changing a
    // mapping only drops the window's pages that were hosted; a page is hosted at its
    // first access (`host_in`): by the interpreter's and the OS layer's checked accesses
    // (`check_read`, `prepare_write`), or, for translated code, in the host fault
    // handler (`host_in_at`). A demand-zero page gets its frame there too.

    /// The range `[lo, hi)` around page `i` (with `lo ≥ lo_min`, `hi ≤ hi_max`) whose
    /// pages other than `i` all satisfy `joins`.
    fn extent(i: u32, lo_min: u32, hi_max: u32, joins: impl Fn(u32) -> bool) -> (u32, u32) {
        let mut lo = i;
        while lo > lo_min && joins(lo - 1) {
            lo -= 1;
        }
        let mut hi = i + 1;
        while hi < hi_max && joins(hi) {
            hi += 1;
        }
        (lo, hi)
    }

    /// Maps pages `[lo, hi)` in the host window: consecutive frames with the protection
    /// of page `lo` (see `continues_run`), one mmap; `populate`: with the host's page
    /// table filled in at once (cheaper than a host page fault per page for pages about
    /// to be written).
    fn map_run(&self, lo: u32, hi: u32, populate: bool) -> Result<(), MemError> {
        let p = self.pt[lo as usize].get();
        self.host_map(lo, hi - lo, Some((p.frame(), p.host_prot())), populate)?;
        self.set_hosted(lo, hi, true);
        Ok(())
    }

    /// Maps pages `[first, first+n)`, which have frames and are about to be written, in
    /// the host window now, populated: one mmap per run of consecutive frames with equal
    /// protection.
    fn map_now(&self, first: u32, n: u32) -> Result<(), MemError> {
        let end = first + n;
        let mut i = first;
        while i < end {
            let p = self.pt[i as usize].get();
            let (_, j) = Self::extent(i, i, end, |j| self.continues_run(p, i, j, false));
            self.map_run(i, j, true)?;
            i = j;
        }
        Ok(())
    }

    /// Whether page `j` can join a host mapping of consecutive frames that starts at
    /// page `i` with entry `p` (if `lazy`, only pages not hosted yet join).
    fn continues_run(&self, p: Pte, i: u32, j: u32, lazy: bool) -> bool {
        self.guard_code_alias(j);
        let q = self.pt[j as usize].get();
        q.has_frame()
            && q.host_prot() == p.host_prot()
            && i64::from(q.frame().0) - i64::from(p.frame().0) == i64::from(j) - i64::from(i)
            && !(lazy && q.hosted())
    }

    fn set_hosted(&self, from: u32, to: u32, hosted: bool) {
        for c in &self.pt[from as usize..to as usize] {
            let p = c.get();
            let h = hosted && p.has_frame();
            c.set(Pte(if h { p.0 | Pte::HOSTED } else { p.0 & !Pte::HOSTED }));
        }
    }

    /// Maps in the host window every present, accessible page of `[first, first+n)`
    /// that is not hosted yet, each with the longest run of not-yet-hosted consecutive
    /// frames around it (up to `HOST_IN_REACH` pages either side), in one mmap per run.
    fn host_in(&self, first: u32, n: u32) -> Result<(), MemError> {
        const HOST_IN_REACH: u32 = 256;
        let end = first + n;
        let mut i = first;
        while i < end {
            self.guard_code_alias(i);
            let mut p = self.pt[i as usize].get();
            if !p.present() || p.hosted() || p.host_prot() == 0 {
                i += 1;
                continue;
            }
            if !p.has_frame() {
                self.materialize(i)?;
                p = self.pt[i as usize].get();
            }
            let top = (end + HOST_IN_REACH).min(NUM_PAGES as u32);
            let (lo, hi) = Self::extent(i, i.saturating_sub(HOST_IN_REACH), top, |j| self.continues_run(p, i, j, true));
            self.map_run(lo, hi, false)?;
            i = hi;
        }
        Ok(())
    }

    /// Gives frames to the demand-zero page `i` and to the demand-zero pages around it
    /// with the same protection (up to `ZERO_REACH` either side, within its VMA): a
    /// stack, heap or bss is touched page after page, and consecutive frames take one
    /// host mapping.
    fn materialize(&self, i: u32) -> Result<(), MemError> {
        const ZERO_REACH: u32 = 8;
        let p = self.pt[i as usize].get();
        let (vlo, vhi) =
            self.vma_at(i << PAGE_SHIFT).map_or((i, i + 1), |v| (v.start >> PAGE_SHIFT, v.end >> PAGE_SHIFT));
        let zero = |j: u32| {
            let q = self.pt[j as usize].get();
            q.present() && !q.has_frame() && q.host_prot() == p.host_prot()
        };
        let (lo, hi) = Self::extent(i, vlo.max(i.saturating_sub(ZERO_REACH)), vhi.min(i + 1 + ZERO_REACH), zero);
        let frames = self.phys.alloc_zeroed(hi - lo)?;
        self.phys.uncommit(hi - lo);
        for (j, f) in (lo..hi).zip(frames) {
            let q = self.pt[j as usize].get();
            self.pt[j as usize].set(q.with_frame(f));
        }
        Ok(())
    }

    /// Hosts the page holding `va` if the guest may read it and it is not hosted yet
    /// (with the run around it, as `host_in`); returns whether it did. Called from the
    /// host fault handler when translated code touches a page of the window that was
    /// not filled yet: it makes one mmap call and touches only the page table's cells.
    pub fn host_in_at(&self, va: u32) -> bool {
        let page = va >> PAGE_SHIFT;
        let p = self.pt[page as usize].get();
        p.readable() && !p.hosted() && self.host_in(page, 1).is_ok()
    }

    /// Resolves a write to the copy-on-write page holding `va` as `prepare_write` would
    /// (copies the page, or takes it over if no one else shares it); returns whether it
    /// did. Called from the host fault handler when translated code stores to such a
    /// page. Pages holding code are left to the caller (the engine drops translations).
    pub fn cow_fault_at(&mut self, va: u32) -> bool {
        let p = self.pte(va);
        let plain_cow = p.present() && p.writable() && p.cow() && p.hosted() && p.0 & Pte::CODE_RO == 0;
        plain_cow && !self.phys.is_code(p.frame()) && self.break_cow(va).is_ok()
    }

    /// Drops the host window's mappings of the hosted pages in `[first, first+n)` (one
    /// mmap over their span), before the page table changes what those pages map.
    fn unhost(&self, first: u32, n: u32) -> Result<(), MemError> {
        let range = &self.pt[first as usize..(first + n) as usize];
        let Some(lo) = range.iter().position(|c| c.get().hosted()) else { return Ok(()) };
        let hi = range.iter().rposition(|c| c.get().hosted()).map_or(lo, |h| h + 1);
        let (lo, hi) = (first + lo as u32, first + hi as u32);
        self.host_map(lo, hi - lo, None, false)?;
        self.set_hosted(lo, hi, false);
        Ok(())
    }

    /// Makes the host protection of the hosted pages of `[first, first+n)` agree with
    /// the page table when only protections changed: one `mprotect` per run of hosted
    /// pages with equal protection, whatever their frames.
    fn sync_host_prot(&self, first: u32, n: u32) -> Result<(), MemError> {
        let end = first + n;
        let mut i = first;
        while i < end {
            let p = self.pt[i as usize].get();
            let mut j = i + 1;
            if !p.present() || !p.hosted() {
                i = j;
                continue;
            }
            while j < end {
                let q = self.pt[j as usize].get();
                if !q.present() || !q.hosted() || q.host_prot() != p.host_prot() {
                    break;
                }
                j += 1;
            }
            self.host_maps.set(self.host_maps.get() + 1);
            // SAFETY: the range lies inside this address space's own window and is
            // mapped (its pages are hosted); only its protection changes.
            let r = unsafe {
                libc::mprotect(
                    self.window.base().add((i as usize) << PAGE_SHIFT).cast(),
                    ((j - i) as usize) << PAGE_SHIFT,
                    p.host_prot(),
                )
            };
            if r != 0 {
                return Err(host_err("mprotect(guest pages)"));
            }
            i = j;
        }
        Ok(())
    }

    /// Maps pages `[page, page+n)` of the window to consecutive frames from `frame`
    /// with `prot` (populated if `populate`), or (`None`) unmaps them. The window is not reserved (see
    /// `crate::window`): where none of the pages is hosted the range is a hole and is
    /// filled with `MAP_FIXED_NOREPLACE`, so a mapping that is not ours is never
    /// replaced; only a range holding pages we mapped is replaced with `MAP_FIXED`.
    fn host_map(&self, page: u32, n: u32, what: Option<(Frame, i32)>, populate: bool) -> Result<(), MemError> {
        // SAFETY: the target range lies inside this address space's window slot.
        let addr = unsafe { self.window.base().add((page as usize) << PAGE_SHIFT) };
        let len = (n as usize) << PAGE_SHIFT;
        self.host_maps.set(self.host_maps.get() + 1);
        let Some((frame, prot)) = what else {
            // SAFETY: the range is in our slot and holds only our own mappings (the
            // hosted pages the caller drops) and holes.
            if unsafe { libc::munmap(addr.cast(), len) } != 0 {
                return Err(host_err("munmap(guest pages)"));
            }
            return Ok(());
        };
        let replaces = self.pt[page as usize..(page + n) as usize].iter().any(|c| c.get().hosted());
        let fixed = if replaces { libc::MAP_FIXED } else { libc::MAP_FIXED_NOREPLACE };
        let fixed = if populate { fixed | libc::MAP_POPULATE } else { fixed };
        // SAFETY: a mapping of our physical memory at a fixed address of our slot:
        // either into a hole (NOREPLACE refuses anything else) or over our own pages.
        let r = unsafe {
            libc::mmap(addr.cast(), len, prot, libc::MAP_SHARED | fixed, self.phys.raw_fd(), frame.file_offset())
        };
        if r == libc::MAP_FAILED {
            return Err(host_err("mmap(guest page)"));
        }
        if r != addr.cast() {
            // A kernel without MAP_FIXED_NOREPLACE took the address as a hint.
            // SAFETY: `r` is the mapping just made, ours alone.
            unsafe { libc::munmap(r, len) };
            return Err(MemError::Host {
                op: "mmap(guest page)",
                err: std::io::Error::from_raw_os_error(libc::EEXIST),
            });
        }
        Ok(())
    }

    // ----- VMAs -----------------------------------------------------------------

    /// Splits the VMA containing `addr` (if any) so that a VMA starts at `addr`.
    fn split_at(&mut self, addr: u32) {
        let Some((&s, v)) = self.vmas.range(..addr).next_back() else { return };
        if v.end <= addr || s == addr {
            return;
        }
        let mut hi = v.clone();
        let lo_end = addr;
        if let MapKind::File { page, .. } = &mut hi.kind {
            *page += (addr - s) >> PAGE_SHIFT;
        }
        hi.start = addr;
        self.vmas.get_mut(&s).expect("vma present").end = lo_end;
        self.vmas.insert(addr, hi);
    }

    /// Merges the VMA ending at `addr` with the one starting there, if Linux would: same
    /// protection and sharing, both anonymous with the same name, or consecutive pages of
    /// the same file.
    fn merge_around(&mut self, addr: u32) {
        let Some((&ls, l)) = self.vmas.range(..addr).next_back() else { return };
        let Some(r) = self.vmas.get(&addr) else { return };
        if l.end != addr || l.prot != r.prot || l.shared != r.shared || l.name != r.name {
            return;
        }
        let contiguous = match (&l.kind, &r.kind) {
            (MapKind::Anon, MapKind::Anon) => true,
            (MapKind::File { id: a, page: pa, writeback: wa }, MapKind::File { id: b, page: pb, writeback: wb }) => {
                a.key() == b.key() && wa.is_some() == wb.is_some() && pa + ((addr - ls) >> PAGE_SHIFT) == *pb
            }
            _ => false,
        };
        if contiguous {
            let end = r.end;
            self.vmas.remove(&addr);
            self.vmas.get_mut(&ls).expect("left vma").end = end;
        }
    }

    fn carve(&mut self, start: u32, end: u32) -> Vec<Vma> {
        self.split_at(start);
        self.split_at(end);
        let keys: Vec<u32> = self.vmas.range(start..end).map(|(&k, _)| k).collect();
        keys.into_iter().filter_map(|k| self.vmas.remove(&k)).collect()
    }

    /// Whether any page of `[start, start+len)` is mapped.
    pub fn is_free(&self, start: u32, len: u32) -> bool {
        let end = u64::from(start) + u64::from(len);
        if end > 1 << 32 {
            return false;
        }
        match self.vmas.range(..end as u32).next_back() {
            Some((_, v)) => v.end <= start,
            None => true,
        }
    }

    /// The highest free, page-aligned range of `len` bytes ending at or below `top` and
    /// starting at or above `bottom` (Linux's top-down mmap placement).
    pub fn find_free_top_down(&self, len: u32, bottom: u32, top: u32) -> Option<u32> {
        let len = crate::page_align_up(u64::from(len)) as u32;
        let mut hi = top;
        for v in self.vmas.values().rev() {
            if v.start >= hi {
                continue;
            }
            if v.end <= hi && hi - v.end.max(bottom) >= len && v.end.max(bottom) <= hi {
                return Some(hi - len);
            }
            hi = hi.min(v.start);
            if hi < bottom {
                return None;
            }
        }
        (hi >= bottom && hi - bottom >= len).then(|| hi - len)
    }

    // ----- mapping operations ---------------------------------------------------

    fn drop_pages(&mut self, first: u32, n: u32) {
        let mut any = false;
        for i in first..first + n {
            let p = self.pt[i as usize].take();
            if p.has_frame() {
                self.phys.release(p.frame());
            } else if p.present() {
                self.phys.uncommit(1);
            }
            any |= p.present();
        }
        if any {
            self.remapped();
        }
    }

    /// Removes the VMAs and pages of pages `[first, first+n)`, writing the pages of
    /// shared file mappings back first. As `munmap` on Linux, it does not report
    /// write-back errors (they would surface at `fsync`, which morph does not model).
    fn remove_range(&mut self, first: u32, n: u32) {
        let start = first << PAGE_SHIFT;
        // VMAs end at or below 0xFFFF_F000 (see `Vma::end`).
        let end = ((u64::from(first) + u64::from(n)) << PAGE_SHIFT).min(0xFFFF_F000) as u32;
        for v in self.carve(start, end.max(start)) {
            let _ = self.write_back_vma(&v, v.start, v.end);
        }
        self.drop_pages(first, n);
    }

    /// Writes back the pages of `v` inside `[from, to)` if `v` is a shared mapping of a
    /// file opened read/write: pages that differ from the file, and only up to its
    /// current size (write-back never extends a file).
    fn write_back_vma(&self, v: &Vma, from: u32, to: u32) -> Result<(), MemError> {
        let MapKind::File { page, writeback: Some(fd), .. } = &v.kind else { return Ok(()) };
        let fd = fd.as_raw_fd();
        let size = fstat(fd).map_err(|err| MemError::Host { op: "fstat(write-back)", err })?.st_size as u64;
        let (lo, hi) = (u64::from(from.max(v.start) & !(PAGE_SIZE - 1)), u64::from(to.min(v.end)));
        for va in (lo..hi).step_by(PAGE_SIZE as usize) {
            let p = self.pte(va as u32);
            if !p.has_frame() {
                continue;
            }
            let off = (u64::from(*page) + ((va - u64::from(v.start)) >> PAGE_SHIFT)) << PAGE_SHIFT;
            if off >= size {
                break;
            }
            write_back_page(fd, self.phys.frame_bytes(p.frame()), off, size)
                .map_err(|err| MemError::Host { op: "pwrite(write-back)", err })?;
        }
        Ok(())
    }

    /// Writes the dirty pages of the shared file mappings in `[start, start+len)` back to
    /// their files (`msync`).
    pub fn write_back(&self, start: u32, len: u32) -> Result<(), MemError> {
        if len == 0 {
            return Ok(());
        }
        let last = start.saturating_add(len - 1);
        let overlapping = self.vmas.range(..=last).rev().take_while(|(_, v)| v.end > start);
        let mut result = Ok(());
        for (_, v) in overlapping {
            if let Err(e) = self.write_back_vma(v, start, last.saturating_add(1)) {
                result = Err(e);
            }
        }
        result
    }

    /// Whether every page of `[start, start+len)` is mapped.
    pub fn is_mapped(&self, start: u32, len: u32) -> bool {
        let (first, n) = pages(start, len);
        (first..first + n).all(|i| self.pt[i as usize].get().present())
    }

    /// Maps fresh zeroed anonymous memory at `[start, start+len)`, replacing what was there.
    pub fn map_anon(&mut self, start: u32, len: u32, prot: Prot, shared: bool, name: &str) -> Result<(), MemError> {
        let (first, n) = pages(start, len);
        if n == 0 {
            return Ok(());
        }
        self.phys.vma_room(Self::VMAS_PER_CHANGE)?;
        // Private memory is demand-zero: its pages get frames when first touched (a
        // process touches a few pages of its 8 MiB stack), but count against the limit
        // from now on (`PhysMem::commit`). Shared memory gets its frames now (a child
        // forked later must share them).
        let frames: Vec<Frame> = if shared {
            self.phys.alloc_zeroed(n)?
        } else {
            self.phys.commit(n)?;
            vec![Frame(Pte::NO_FRAME); n as usize]
        };
        if let Err(e) = self.unhost(first, n) {
            match shared {
                true => frames.into_iter().for_each(|f| self.phys.release(f)),
                false => self.phys.uncommit(n),
            }
            return Err(e);
        }
        self.remove_range(first, n);
        for (i, f) in frames.into_iter().enumerate() {
            self.pt[first as usize + i].set(Pte::new(f, prot, false, shared));
        }
        self.vmas.insert(
            start,
            Vma { start, end: start + (n << PAGE_SHIFT), prot, shared, kind: MapKind::Anon, name: name.into() },
        );
        self.merge_around(start + (n << PAGE_SHIFT));
        self.merge_around(start);
        self.account();
        Ok(())
    }

    /// Maps `len` bytes of `file` from byte `offset` (page aligned) at `start`, through the
    /// page cache, replacing what was there. A private writable mapping shares the cached
    /// frames copy-on-write; a shared one maps them writable, and if `file` is open
    /// read/write its stores are written back to the file (see [`MapKind::File`]). The
    /// caller checks the access mode against `prot`, as `mmap` does.
    #[allow(clippy::too_many_arguments)]
    pub fn map_file(
        &mut self,
        cache: &mut PageCache,
        start: u32,
        len: u32,
        prot: Prot,
        shared: bool,
        file: &File,
        id: FileId,
        offset: u64,
        name: &str,
    ) -> Result<(), MemError> {
        let (first, n) = pages(start, len);
        if n == 0 {
            return Ok(());
        }
        self.phys.vma_room(Self::VMAS_PER_CHANGE)?;
        let file_page = u32::try_from(offset >> PAGE_SHIFT).ok().filter(|p| p.checked_add(n - 1).is_some()).ok_or(
            MemError::Host { op: "mmap(file offset)", err: std::io::Error::from_raw_os_error(libc::EOVERFLOW) },
        )?;
        // Find (or read) every page before touching the old mapping, so that a failure
        // leaves it in place. Each frame gets the mapping's reference at once.
        let (frames, found) = match cache.pages(&self.phys, file, id, file_page, n) {
            Ok(frames) => {
                for &f in &frames {
                    self.phys.retain(f);
                }
                (frames, Ok(()))
            }
            Err(e) => (Vec::new(), Err(e)),
        };
        let writeback = found.and_then(|()| match shared && is_read_write(file) {
            true => cache.shared_writer(id.key(), file).map(Some),
            false => Ok(None),
        });
        let writeback = writeback.and_then(|w| self.unhost(first, n).map(|()| w));
        let writeback = match writeback {
            Ok(w) => w,
            Err(e) => {
                for f in frames {
                    self.phys.release(f);
                }
                return Err(e);
            }
        };
        self.remove_range(first, n);
        let cow = !shared && prot.has(Prot::WRITE);
        for (i, f) in (first..).zip(frames) {
            self.pt[i as usize].set(Pte::new(f, prot, cow, shared));
        }
        self.vmas.insert(
            start,
            Vma {
                start,
                end: start + (n << PAGE_SHIFT),
                prot,
                shared,
                kind: MapKind::File { id, page: file_page, writeback },
                name: name.into(),
            },
        );
        self.merge_around(start + (n << PAGE_SHIFT));
        self.merge_around(start);
        self.account();
        Ok(())
    }

    /// Gives the copy-on-write pages of `[start, start+len)` their own frames now, and
    /// hosts them, if they are at most `EAGER_COPY_PAGES` and none holds code: for the
    /// program loader, whose data segments (a program's, its interpreter's) are written
    /// at once while relocating and would otherwise take a fault per run of pages
    /// written. Copying before the first write hides later changes to the file, which
    /// Linux does not allow while the program runs (`ETXTBSY`). Best effort: without
    /// frames to spare the pages stay copy-on-write.
    pub fn copy_now(&mut self, start: u32, len: u32) {
        let (first, n) = pages(start, len);
        if n == 0 || n > EAGER_COPY_PAGES {
            return;
        }
        if self.pt[first as usize..(first + n) as usize]
            .iter()
            .any(|c| !c.get().cow() || self.phys.is_code(c.get().frame()))
        {
            return;
        }
        if self.copy_to_run(first, n) {
            // Like a copy-on-write break: if hosting fails, the next access retries it.
            let _ = self.map_now(first, n);
        }
    }

    /// Unmaps `[start, start+len)`, writing shared file pages back.
    pub fn unmap(&mut self, start: u32, len: u32) -> Result<(), MemError> {
        let (first, n) = pages(start, len);
        if n == 0 {
            return Ok(());
        }
        self.unhost(first, n)?;
        self.remove_range(first, n);
        self.account();
        Ok(())
    }

    /// The VMA containing `addr`.
    pub fn vma_at(&self, addr: u32) -> Option<&Vma> {
        self.vmas.range(..=addr).next_back().map(|(_, v)| v).filter(|v| addr < v.end)
    }

    /// Moves the pages and VMAs of `[from, from+len)` to `to` (for `mremap`), replacing
    /// whatever was mapped at the destination. The ranges must not overlap.
    pub fn move_pages(&mut self, from: u32, to: u32, len: u32) -> Result<(), MemError> {
        let (first, n) = pages(from, len);
        let (dfirst, _) = pages(to, len);
        self.phys.vma_room(2 * Self::VMAS_PER_CHANGE)?;
        self.unhost(first, n)?;
        self.unhost(dfirst, n)?;
        let moved = self.carve(from, from + (n << PAGE_SHIFT));
        self.remove_range(dfirst, n);
        for i in 0..n {
            self.pt[(dfirst + i) as usize].set(self.pt[(first + i) as usize].take());
        }
        for mut v in moved {
            let delta = v.start - from;
            let l = v.end - v.start;
            v.start = to + delta;
            v.end = v.start + l;
            self.vmas.insert(v.start, v);
        }
        self.merge_around(to);
        self.merge_around(to + (n << PAGE_SHIFT));
        self.remapped();
        self.account();
        Ok(())
    }

    /// Changes the protection of `[start, start+len)`; fails with `Unmapped` if a page
    /// in the range is not mapped (Linux: `ENOMEM`), and with `Protection` if it would
    /// make a shared mapping of a file not open read/write writable (Linux: `EACCES`).
    pub fn protect(&mut self, start: u32, len: u32, prot: Prot) -> Result<(), MemFaultKind> {
        let (first, n) = pages(start, len);
        if (first..first + n).any(|i| !self.pt[i as usize].get().present()) {
            return Err(MemFaultKind::Unmapped);
        }
        let end = start + (n << PAGE_SHIFT);
        let read_only_file = |v: &Vma| v.shared && matches!(v.kind, MapKind::File { writeback: None, .. });
        if prot.has(Prot::WRITE)
            && self.vmas.range(..end).rev().take_while(|(_, v)| v.end > start).any(|(_, v)| read_only_file(v))
        {
            return Err(MemFaultKind::Protection);
        }
        // Splitting past the machine's mapping budget fails as Linux's does (ENOMEM).
        self.phys.vma_room(Self::VMAS_PER_CHANGE).map_err(|_| MemFaultKind::Unmapped)?;
        self.split_at(start);
        self.split_at(end);
        for v in self.vmas.range_mut(start..end).map(|(_, v)| v) {
            v.prot = prot;
        }
        let mut lost_read = false;
        for i in first..first + n {
            let p = self.pt[i as usize].get();
            let shared = p.shared();
            let cow = p.cow() || (!shared && p.has_frame() && self.phys.refcount(p.frame()) > 1);
            // Keep the translated-code protection (the frame still holds that code) and
            // the host mapping (same frame; only its protection changes).
            let keep = p.0 & (Pte::CODE_RO | Pte::HOSTED);
            let q = Pte(Pte::new(p.frame(), prot, cow && prot.has(Prot::WRITE), shared).0 | keep);
            lost_read |= p.readable() && !q.readable();
            self.pt[i as usize].set(q);
        }
        self.merge_around(start);
        self.merge_around(end);
        if lost_read {
            self.remapped();
        }
        self.account();
        self.sync_host_prot(first, n).map_err(|_| MemFaultKind::Unmapped)
    }

    /// Gives the private page containing `va` its own frame (copy-on-write break). When
    /// the frame turns out not to be shared any more (the other process exec'd or
    /// exited), every such page of the space is made writable at once: a parent that
    /// forked a child which then exec'd would otherwise take one fault per page (or per
    /// VMA: its stack, heap, data and bss are written soon after).
    fn break_cow(&mut self, va: u32) -> Result<(), MemError> {
        let i = (va >> PAGE_SHIFT) as usize;
        let p = self.pt[i].get();
        let old = p.frame();
        let uncow = |p: Pte| Pte(p.0 & !Pte::COW);
        if self.phys.refcount(old) == 1 {
            let ranges: Vec<(u32, u32)> =
                self.vmas.values().map(|v| (v.start >> PAGE_SHIFT, v.end >> PAGE_SHIFT)).collect();
            // Only protections change: one mprotect per run of equally protected hosted
            // pages, across neighbouring VMAs (a data segment, its bss and the heap).
            let mut pending: Option<(u32, u32)> = None;
            for (first, end) in ranges {
                let (mut lo, mut hi) = (end, first);
                for j in first..end {
                    let q = self.pt[j as usize].get();
                    if q.present() && q.cow() && self.phys.refcount(q.frame()) == 1 {
                        self.pt[j as usize].set(uncow(q));
                        (lo, hi) = (lo.min(j), hi.max(j + 1));
                    }
                }
                if lo >= hi {
                    continue;
                }
                pending = match pending {
                    Some((plo, phi)) if lo - phi <= UNCOW_JOIN => Some((plo, hi)),
                    Some((plo, phi)) => {
                        self.sync_host_prot(plo, phi - plo)?;
                        Some((lo, hi))
                    }
                    None => Some((lo, hi)),
                };
            }
            if let Some((lo, hi)) = pending {
                self.sync_host_prot(lo, hi - lo)?;
            }
            return Ok(());
        }
        if self.phys.is_code(old) {
            self.remapped(); // translated code of this VA belongs to the old frame
        }
        let (lo, hi) = self.cow_batch(i as u32);
        let n = hi - lo;
        if n > 1 && self.copy_to_run(lo, n) {
            return self.map_now(lo, n); // one host mapping for the run
        }
        let frame = self.phys.alloc_copy(old)?;
        self.phys.release(old);
        self.pt[i].set(uncow(p).with_frame(frame));
        self.map_now(i as u32, 1) // about to be written: map it now
    }

    /// Gives the copy-on-write pages `[lo, lo+n)` private copies in `n` consecutive
    /// frames (so that one host mapping can take them); false if there is no such run
    /// to spare. The caller hosts them.
    fn copy_to_run(&self, lo: u32, n: u32) -> bool {
        let Ok(run) = self.phys.alloc_run_to_overwrite(n) else { return false };
        for k in 0..n {
            let j = (lo + k) as usize;
            let q = self.pt[j].get();
            let frame = Frame(run.0 + k);
            self.phys.copy_frame(frame, q.frame());
            self.phys.release(q.frame());
            self.pt[j].set(Pte(q.0 & !Pte::COW).with_frame(frame));
        }
        true
    }

    /// The pages `[lo, hi)` around page `i` that a copy-on-write break copies at once,
    /// each still shared and holding no code, so that their copies take consecutive
    /// frames and one host mapping: in a private file mapping (a program's or library's
    /// data, which the dynamic loader writes page after page while relocating), up to
    /// `FILE_BATCH` pages from `i` on; in private anonymous memory (a heap, a bss, a
    /// stack, where a forked child writes a few neighbouring pages before it execs), up
    /// to `ANON_REACH` pages either side. Copying a page before it is written is
    /// invisible to the guest, except that later changes to a file no longer show
    /// through it, which POSIX leaves unspecified for `MAP_PRIVATE`.
    fn cow_batch(&self, i: u32) -> (u32, u32) {
        const FILE_BATCH: u32 = 16;
        const ANON_REACH: u32 = 1;
        let Some(v) = self.vma_at(i << PAGE_SHIFT) else { return (i, i + 1) };
        if v.shared {
            return (i, i + 1);
        }
        let shared_data = |j: u32| {
            let q = self.pt[j as usize].get();
            q.present()
                && q.cow()
                && q.0 & Pte::CODE_RO == 0
                && self.phys.refcount(q.frame()) > 1
                && !self.phys.is_code(q.frame())
        };
        let (first, end) = (v.start >> PAGE_SHIFT, v.end >> PAGE_SHIFT);
        match v.kind {
            MapKind::File { .. } => Self::extent(i, i, end.min(i + FILE_BATCH), shared_data),
            MapKind::Anon => {
                Self::extent(i, first.max(i.saturating_sub(ANON_REACH)), end.min(i + 1 + ANON_REACH), shared_data)
            }
        }
    }

    /// A copy of this address space for `fork`: private pages become copy-on-write in
    /// both, shared pages stay shared.
    pub fn fork(&mut self) -> Result<AddressSpace, MemError> {
        self.phys.vma_room(self.counted)?;
        let mut child = AddressSpace::new(self.phys.clone())?;
        child.vmas = self.vmas.clone();
        child.account();
        child.mmap_base = self.mmap_base;
        child.mapping = self.mapping; // the same pages map the same frames
        // Every present page lies in a VMA: walk those, not the whole 4 GiB table.
        let ranges: Vec<(u32, u32)> =
            self.vmas.values().map(|v| (v.start >> PAGE_SHIFT, v.end >> PAGE_SHIFT)).collect();
        for &(first, end) in &ranges {
            let mut changed = false;
            for i in first as usize..end as usize {
                let mut p = self.pt[i].get();
                if !p.has_frame() {
                    // Nothing, or demand-zero: each space gets its own frame at its
                    // first touch (the child's pages are promised too).
                    if p.present() {
                        self.phys.commit_anyway(1);
                        child.pt[i].set(p);
                    }
                    continue;
                }
                self.phys.retain(p.frame());
                if p.writable() && !p.shared() && !p.cow() {
                    p.0 |= Pte::COW;
                    self.pt[i].set(p);
                    changed = true;
                }
                // The child's window fills as it touches its pages: a child that
                // execs at once maps almost none of them.
                child.pt[i].set(Pte(p.0 & !Pte::HOSTED));
            }
            if changed {
                self.sync_host_prot(first, end - first)?;
            }
        }
        Ok(child)
    }

    // ----- guest accesses ---------------------------------------------------------

    #[inline]
    fn fault(&self, addr: u32, write: bool) -> MemFault {
        let p = self.pte(addr);
        let kind = if p.present() { MemFaultKind::Protection } else { MemFaultKind::Unmapped };
        MemFault { addr, write, kind }
    }

    /// How many bytes of `[va, va+len)` lie before the first page the guest may not
    /// read (`write`: may not write), clipped to the 4 GiB space: what a system call can
    /// transfer before it faults. Looks at the page table only.
    pub fn valid_prefix(&self, va: u32, len: u32, write: bool) -> u32 {
        let end = (u64::from(va) + u64::from(len)).min(1 << 32);
        let mut page = va >> PAGE_SHIFT;
        while u64::from(page) << PAGE_SHIFT < end {
            let p = self.pt[page as usize].get();
            if !(if write { p.writable() } else { p.readable() }) {
                return ((u64::from(page) << PAGE_SHIFT).max(u64::from(va)) - u64::from(va)) as u32;
            }
            if page as usize + 1 == NUM_PAGES {
                break;
            }
            page += 1;
        }
        (end - u64::from(va)) as u32
    }

    /// Checks that `[va, va+len)` may be read; returns the first bad address otherwise.
    /// After this, host reads of the range are safe (its pages are hosted).
    pub fn check_read(&self, va: u32, len: u32) -> Result<(), MemFault> {
        if len == 0 {
            return Ok(());
        }
        let last = va.checked_add(len - 1).ok_or(self.fault(0, false))?;
        let (first, end) = (va >> PAGE_SHIFT, (last >> PAGE_SHIFT) + 1);
        let mut all_hosted = true;
        for page in first..end {
            let p = self.pt[page as usize].get();
            if !p.readable() {
                return Err(self.fault((page << PAGE_SHIFT).max(va), false));
            }
            all_hosted &= p.hosted();
        }
        if !all_hosted && self.host_in(first, end - first).is_err() {
            return Err(MemFault { addr: va, write: false, kind: MemFaultKind::Protection });
        }
        Ok(())
    }

    /// Checks that `[va, va+len)` may be written, and prepares it: breaks copy-on-write
    /// and reports writes to code frames. After this, host writes to the range are safe.
    pub fn prepare_write(&mut self, va: u32, len: u32) -> Result<(), MemFault> {
        if len == 0 {
            return Ok(());
        }
        let last = va.checked_add(len - 1).ok_or(self.fault(0, true))?;
        let mut page = va >> PAGE_SHIFT;
        loop {
            let a = (page << PAGE_SHIFT).max(va);
            let host_fault = MemFault { addr: a, write: true, kind: MemFaultKind::Protection };
            let p = self.pt[page as usize].get();
            if !p.writable() {
                return Err(self.fault(a, true));
            }
            if p.0 & Pte::CODE_RO != 0 {
                self.pt[page as usize].set(Pte(p.0 & !Pte::CODE_RO));
                self.sync_host_prot(page, 1).map_err(|_| host_fault)?;
            }
            if p.cow() {
                self.break_cow(a).map_err(|_| host_fault)?;
            }
            let p = self.pt[page as usize].get();
            // The code write is noted first: hosting a shared page whose frame holds
            // code would write-protect it again (`guard_code_alias`).
            if p.has_frame() && self.phys.is_code(p.frame()) {
                self.phys.note_code_write(p.frame());
            }
            if !p.hosted() {
                self.host_in(page, 1).map_err(|_| host_fault)?;
            }
            if page == last >> PAGE_SHIFT {
                return Ok(());
            }
            page += 1;
        }
    }

    /// Records that code was decoded or translated from the page holding `va`: sets the
    /// frame's code bit (so guest writes are reported) and write-protects the host
    /// mapping (so stores made by translated code trap too).
    pub fn mark_code(&mut self, va: u32) {
        let p = self.pte(va);
        if p.has_frame() {
            let was_code = self.phys.is_code(p.frame());
            self.phys.set_code(p.frame());
            let _ = self.protect_code_page(va);
            if p.shared() && !was_code {
                // Other virtual aliases of the frame, here and in other spaces, may be
                // writable on the host: protect them too (others do it before they
                // run translated code again).
                self.phys.note_shared_code();
                self.protect_code_aliases();
            }
        }
    }

    /// Write-protects on the host every hosted page of a shared writable mapping of
    /// this space whose frame holds code, if a frame of a shared mapping started holding
    /// code since the last call: a translated store through such an alias (a file or
    /// shared memory mapped twice, or by another process) then traps, and the
    /// engine invalidates the code, as for the mapping the code was fetched through.
    /// Private writable pages need nothing: a frame is writable on the host through a
    /// private mapping only when no one else maps it. The engine calls this before it
    /// runs translated code for this space.
    pub fn protect_code_aliases(&mut self) {
        let epoch = self.phys.shared_code_epoch();
        if self.aliases_seen.get() == epoch {
            return;
        }
        self.aliases_seen.set(epoch);
        let ranges: Vec<(u32, u32)> = self
            .vmas
            .values()
            .filter(|v| v.shared && v.prot.has(Prot::WRITE))
            .map(|v| (v.start >> PAGE_SHIFT, v.end >> PAGE_SHIFT))
            .collect();
        for (first, end) in ranges {
            for i in first..end {
                let p = self.pt[i as usize].get();
                if p.hosted() && p.host_prot() & libc::PROT_WRITE != 0 && self.phys.is_code(p.frame()) {
                    self.pt[i as usize].set(Pte(p.0 | Pte::CODE_RO));
                    let _ = self.sync_host_prot(i, 1);
                }
            }
        }
    }

    /// Before page `i` is hosted: a page of a shared mapping whose frame holds code
    /// (made from another alias) is hosted write-protected.
    fn guard_code_alias(&self, i: u32) {
        let p = self.pt[i as usize].get();
        if p.shared() && p.has_frame() && p.0 & Pte::CODE_RO == 0 && p.writable() && self.phys.is_code(p.frame()) {
            self.pt[i as usize].set(Pte(p.0 | Pte::CODE_RO));
        }
    }

    /// Write-protects the host mapping of the page holding `va` because translated code
    /// was made from it; a translated store to it then traps and the engine invalidates.
    pub fn protect_code_page(&mut self, va: u32) -> Result<(), MemError> {
        let page = va >> PAGE_SHIFT;
        let p = self.pt[page as usize].get();
        if !p.present() || p.0 & Pte::CODE_RO != 0 {
            return Ok(());
        }
        self.pt[page as usize].set(Pte(p.0 | Pte::CODE_RO));
        let writable_on_host = p.hosted() && p.writable() && !p.cow();
        if writable_on_host { self.sync_host_prot(page, 1) } else { Ok(()) }
    }

    /// Host pointer to guest `va` (the range must have been checked).
    #[inline]
    pub fn host_ptr(&self, va: u32) -> *mut u8 {
        // SAFETY: any 32-bit offset lies inside the window's slot (4 GiB plus guard).
        unsafe { self.window.base().add(va as usize) }
    }

    /// Reads guest bytes into `buf`.
    pub fn read_bytes(&self, va: u32, buf: &mut [u8]) -> Result<(), MemFault> {
        self.check_read(va, buf.len() as u32)?;
        // SAFETY: the whole range was checked readable, so it is mapped on the host.
        unsafe { std::ptr::copy_nonoverlapping(self.host_ptr(va), buf.as_mut_ptr(), buf.len()) };
        Ok(())
    }

    /// Writes `buf` to guest memory.
    pub fn write_bytes(&mut self, va: u32, buf: &[u8]) -> Result<(), MemFault> {
        self.prepare_write(va, buf.len() as u32)?;
        // SAFETY: the range was checked and made writable on the host by prepare_write.
        unsafe { std::ptr::copy_nonoverlapping(buf.as_ptr(), self.host_ptr(va), buf.len()) };
        Ok(())
    }

    /// Reads a NUL-terminated guest string of at most `max` bytes.
    pub fn read_cstr(&self, va: u32, max: usize) -> Result<Vec<u8>, MemFault> {
        let mut out = Vec::new();
        let mut a = va;
        while out.len() < max {
            let b = self.read::<1>(a)?[0];
            if b == 0 {
                return Ok(out);
            }
            out.push(b);
            a = a.wrapping_add(1);
        }
        Ok(out)
    }

    /// Reads `N` bytes at `va`.
    #[inline]
    pub fn read<const N: usize>(&self, va: u32) -> Result<[u8; N], MemFault> {
        let off = va & (PAGE_SIZE - 1);
        if off as usize + N <= PAGE_SIZE as usize {
            let p = self.pt[(va >> PAGE_SHIFT) as usize].get();
            if p.0 & (Pte::READ | Pte::HOSTED) == Pte::READ | Pte::HOSTED {
                // SAFETY: the page is readable and hosted, hence mapped readable on the host.
                return Ok(unsafe { std::ptr::read_unaligned(self.host_ptr(va).cast::<[u8; N]>()) });
            }
        }
        let mut b = [0u8; N];
        self.read_bytes(va, &mut b)?;
        Ok(b)
    }

    /// Writes `N` bytes at `va`.
    #[inline]
    pub fn write<const N: usize>(&mut self, va: u32, val: [u8; N]) -> Result<(), MemFault> {
        let off = va & (PAGE_SIZE - 1);
        if off as usize + N <= PAGE_SIZE as usize {
            let p = self.pt[(va >> PAGE_SHIFT) as usize].get();
            let bits = Pte::WRITE | Pte::COW | Pte::CODE_RO | Pte::HOSTED;
            if p.0 & bits == Pte::WRITE | Pte::HOSTED && !self.phys.is_code(p.frame()) {
                // SAFETY: writable, not copy-on-write, hosted: mapped writable on the host.
                unsafe { std::ptr::write_unaligned(self.host_ptr(va).cast::<[u8; N]>(), val) };
                return Ok(());
            }
        }
        self.write_bytes(va, &val)
    }

    /// Reads a byte.
    #[inline]
    pub fn read_u8(&self, va: u32) -> Result<u8, MemFault> {
        Ok(self.read::<1>(va)?[0])
    }
    /// Reads a little-endian u16.
    #[inline]
    pub fn read_u16(&self, va: u32) -> Result<u16, MemFault> {
        Ok(u16::from_le_bytes(self.read(va)?))
    }
    /// Reads a little-endian u32.
    #[inline]
    pub fn read_u32(&self, va: u32) -> Result<u32, MemFault> {
        Ok(u32::from_le_bytes(self.read(va)?))
    }
    /// Reads a little-endian u64.
    #[inline]
    pub fn read_u64(&self, va: u32) -> Result<u64, MemFault> {
        Ok(u64::from_le_bytes(self.read(va)?))
    }
    /// Writes a byte.
    #[inline]
    pub fn write_u8(&mut self, va: u32, v: u8) -> Result<(), MemFault> {
        self.write(va, [v])
    }
    /// Writes a little-endian u16.
    #[inline]
    pub fn write_u16(&mut self, va: u32, v: u16) -> Result<(), MemFault> {
        self.write(va, v.to_le_bytes())
    }
    /// Writes a little-endian u32.
    #[inline]
    pub fn write_u32(&mut self, va: u32, v: u32) -> Result<(), MemFault> {
        self.write(va, v.to_le_bytes())
    }
    /// Writes a little-endian u64.
    #[inline]
    pub fn write_u64(&mut self, va: u32, v: u64) -> Result<(), MemFault> {
        self.write(va, v.to_le_bytes())
    }
}

impl Drop for AddressSpace {
    fn drop(&mut self) {
        self.phys.count_vmas(self.counted, 0);
        for v in self.vmas.values() {
            let _ = self.write_back_vma(v, v.start, v.end);
        }
        // Every entry that is not zero lies in a VMA (pages are only ever mapped inside
        // one, and dropping a VMA's pages zeroes their entries): zeroing these leaves the
        // table clean for the next address space, with no scan of its 8 MiB.
        for v in self.vmas.values() {
            for p in &self.pt[(v.start >> PAGE_SHIFT) as usize..(v.end >> PAGE_SHIFT) as usize] {
                let p = p.take();
                if !p.has_frame() && p.present() {
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

/// First page and page count of `[start, start+len)` rounded out to pages, clipped to
/// the 4 GiB space.
/// The most pages `AddressSpace::copy_now` copies at once (larger data segments are
/// copied run by run as they are written).
const EAGER_COPY_PAGES: u32 = 16;

/// Pages between two VMAs' changed ranges over which one protection sync spans them.
const UNCOW_JOIN: u32 = 64;

/// A number never handed out before in this host process.
fn fresh_number() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

fn pages(start: u32, len: u32) -> (u32, u32) {
    let first = start >> PAGE_SHIFT;
    let end = (u64::from(start) + u64::from(len)).div_ceil(u64::from(PAGE_SIZE)).min(NUM_PAGES as u64);
    (first, (end as u32).saturating_sub(first))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// An empty address space over 1 GiB of guest memory.
    pub(crate) fn space() -> AddressSpace {
        AddressSpace::new(Rc::new(PhysMem::new(1 << 30).unwrap())).unwrap()
    }

    #[test]
    fn the_memory_limit_counts_frames_in_use_not_frames_ever_handed_out() {
        // 1024 frames of guest memory; ten 512-frame mappings made and dropped in turn.
        let phys = Rc::new(PhysMem::new(1 << 22).unwrap());
        let mut a = AddressSpace::new(phys.clone()).unwrap();
        for round in 0..10u8 {
            a.map_anon(0x1000_0000, 2 << 20, Prot::RW, false, "").unwrap_or_else(|e| panic!("round {round}: {e}"));
            a.write_u8(0x1000_0000 + 4096 * 7, round).unwrap();
            assert_eq!(a.read_u8(0x1000_0000 + 4096 * 7).unwrap(), round);
            assert_eq!(a.read_u8(0x1000_0000 + 4096 * 8).unwrap(), 0, "a reused frame must read as zero");
            a.write_u8(0x1000_0000 + 4096 * 8, 0xff).unwrap();
            a.unmap(0x1000_0000, 2 << 20).unwrap();
        }
        assert!(a.map_anon(0x1000_0000, 8 << 20, Prot::RW, false, "").is_err(), "2048 frames exceed the limit");
    }

    #[test]
    fn anon_read_write_and_faults() {
        let mut a = space();
        a.map_anon(0x1000_0000, 0x2000, Prot::RW, false, "").unwrap();
        a.write_u32(0x1000_0ffe, 0xdead_beef).unwrap(); // straddles two pages
        assert_eq!(a.read_u32(0x1000_0ffe).unwrap(), 0xdead_beef);
        assert_eq!(a.read_u8(0x2000_0000).unwrap_err().kind, MemFaultKind::Unmapped);
        a.protect(0x1000_1000, 0x1000, Prot::READ).unwrap();
        let e = a.write_u8(0x1000_1004, 1).unwrap_err();
        assert_eq!((e.kind, e.addr, e.write), (MemFaultKind::Protection, 0x1000_1004, true));
        a.unmap(0x1000_0000, 0x1000).unwrap();
        assert!(a.read_u8(0x1000_0000).is_err());
        assert_eq!(a.read_u8(0x1000_1001).unwrap(), 0xde);
    }

    #[test]
    fn fork_is_copy_on_write() {
        let mut a = space();
        a.map_anon(0x8000, 0x1000, Prot::RW, false, "").unwrap();
        a.write_u32(0x8000, 1).unwrap();
        let mut b = a.fork().unwrap();
        b.write_u32(0x8000, 2).unwrap();
        assert_eq!(a.read_u32(0x8000).unwrap(), 1);
        assert_eq!(b.read_u32(0x8000).unwrap(), 2);
    }

    #[test]
    fn a_copy_on_write_break_in_anonymous_memory_copies_its_neighbours() {
        let mut a = space();
        a.map_anon(0x8000, 0x5000, Prot::RW, false, "").unwrap();
        for i in 0..5 {
            a.write_u32(0x8000 + i * 0x1000, i).unwrap();
        }
        let mut child = a.fork().unwrap();
        child.write_u32(0xa000, 99).unwrap();
        // Pages 1..=3 were copied for the child at once; 0 and 4 are still shared.
        let cow: Vec<bool> = (0..5).map(|i| child.pte(0x8000 + i * 0x1000).cow()).collect();
        assert_eq!(cow, [true, false, false, false, true]);
        let (p1, p3) = (child.pte(0x9000).frame().0, child.pte(0xb000).frame().0);
        assert_eq!(p3, p1 + 2, "the copies are consecutive frames (one host mapping)");
        for i in 0..5 {
            assert_eq!(a.read_u32(0x8000 + i * 0x1000).unwrap(), i, "the parent keeps its page {i}");
            let want = if i == 2 { 99 } else { i };
            assert_eq!(child.read_u32(0x8000 + i * 0x1000).unwrap(), want, "the child's page {i}");
        }
        a.write_u32(0x9000, 7).unwrap();
        assert_eq!(child.read_u32(0x9000).unwrap(), 1, "a copied page is the child's own");
    }

    #[test]
    fn an_unshared_copy_on_write_space_becomes_writable_at_the_first_write() {
        let mut a = space();
        a.map_anon(0x8000, 0x4000, Prot::RW, false, "").unwrap();
        a.map_anon(0x20000, 0x1000, Prot::RW, false, "another VMA").unwrap();
        a.write_u32(0x9000, 7).unwrap();
        a.write_u32(0x20000, 8).unwrap();
        let generation = a.map_gen;
        let b = a.fork().unwrap();
        assert_eq!(a.map_gen, generation, "fork changes no frame");
        assert!((0..4).all(|i| a.pte(0x8000 + i * 0x1000).cow()));
        drop(b); // the child exec'd or exited: the frames are unshared again
        a.write_u32(0x8000, 1).unwrap();
        for va in [0x8000, 0x9000, 0xa000, 0xb000, 0x20000] {
            let p = a.pte(va);
            assert!(p.writable() && !p.cow(), "page {va:#x}");
        }
        a.write_u32(0x20000, 9).unwrap(); // through the host mapping, made writable too
        assert_eq!(a.read_u32(0x20000).unwrap(), 9);
        // The fast path writes through the host mapping: it must be writable again.
        a.write_u32(0xb000, 3).unwrap();
        assert_eq!(a.read_u32(0x9000).unwrap(), 7);
        assert_eq!(a.read_u32(0xb000).unwrap(), 3);
        assert_eq!(a.map_gen, generation, "no frame changed");
    }

    #[test]
    fn the_host_window_fills_at_first_access() {
        let mut a = space();
        a.map_anon(0x8000, 0x4000, Prot::RW, false, "").unwrap();
        assert_eq!(a.host_maps(), 0, "mapping costs no host call");
        assert!((0..4).all(|i| !a.pte(0x8000 + i * 0x1000).hosted()));
        a.write_u32(0x9000, 7).unwrap();
        // The four fresh frames are consecutive: one host mapping covers them all.
        assert_eq!(a.host_maps(), 1);
        assert!((0..4).all(|i| a.pte(0x8000 + i * 0x1000).hosted()));
        let mut child = a.fork().unwrap();
        assert!((0..4).all(|i| !child.pte(0x8000 + i * 0x1000).hosted()), "a child starts with an empty window");
        assert_eq!(child.host_maps(), 0);
        // A checked range is hosted: the OS layer hands its host address to the host.
        child.check_read(0x9000, 4).unwrap();
        // SAFETY: check_read hosted the page.
        assert_eq!(unsafe { std::ptr::read_unaligned(child.host_ptr(0x9000).cast::<u32>()) }, 7);
        child.write_u32(0x8000, 9).unwrap();
        assert_eq!((child.read_u32(0x8000).unwrap(), a.read_u32(0x8000).unwrap()), (9, 0));
        // Unmapping a hosted page makes the window inaccessible there again.
        a.unmap(0x9000, 0x1000).unwrap();
        assert!(!a.pte(0x9000).hosted() && a.read_u32(0x9000).is_err());
        assert!(!a.host_in_at(0x9000), "nothing to host where nothing is mapped");
    }

    #[test]
    fn the_mapping_generation_moves_only_when_a_mapped_page_changes() {
        let mut a = space();
        let g = a.map_gen;
        a.map_anon(0x8000, 0x2000, Prot::RW, false, "").unwrap();
        a.map_anon(0x20000, 0x1000, Prot::READ, false, "").unwrap();
        a.protect(0x8000, 0x1000, Prot::READ).unwrap();
        assert_eq!(a.map_gen, g, "new mappings where nothing was, and dropping write, keep it");
        a.protect(0x8000, 0x1000, Prot::NONE).unwrap();
        assert_eq!(a.map_gen, g + 1, "a page became unreadable");
        a.map_anon(0x9000, 0x1000, Prot::RW, false, "").unwrap();
        assert_eq!(a.map_gen, g + 2, "a mapped page changed frame");
        a.unmap(0x20000, 0x1000).unwrap();
        assert_eq!(a.map_gen, g + 3, "a page went away");
        a.unmap(0x20000, 0x1000).unwrap();
        assert_eq!(a.map_gen, g + 3, "nothing was there");
    }

    #[test]
    fn a_forked_child_shares_the_mapping_number_until_either_remaps() {
        let mut a = space();
        a.map_anon(0x8000, 0x2000, Prot::RW, false, "").unwrap();
        assert_ne!(a.mapping_id(), space().mapping_id(), "two spaces, two numbers");
        let mut child = a.fork().unwrap();
        assert_eq!(child.mapping_id(), a.mapping_id(), "identical mappings after fork");
        let (before, parent) = (child.mapping_id(), a.mapping_id());
        child.write_u32(0x8000, 1).unwrap();
        a.write_u32(0x9000, 2).unwrap();
        assert_eq!((child.mapping_id(), a.mapping_id()), (before, parent), "copy-on-write of data maps no code");
        child.unmap(0x9000, 0x1000).unwrap();
        assert_ne!(child.mapping_id(), before, "the child remapped");
        assert_eq!(a.mapping_id(), parent, "the parent did not");
        a.protect(0x8000, 0x1000, Prot::NONE).unwrap();
        assert_ne!(a.mapping_id(), parent);
        assert_ne!(a.mapping_id(), child.mapping_id());
    }

    #[test]
    fn private_memory_is_demand_zero_but_promised() {
        // 1024 frames of guest memory.
        let phys = Rc::new(PhysMem::new(1 << 22).unwrap());
        let mut a = AddressSpace::new(phys.clone()).unwrap();
        a.map_anon(0x1000_0000, 3 << 20, Prot::RW, false, "").unwrap();
        assert_eq!(phys.stats().frames_in_use, 0, "no frame before a touch");
        assert!(a.translate(0x1000_0000).is_none() && a.pte(0x1000_0000).present());
        assert!(a.map_anon(0x2000_0000, (1 << 20) + 0x1000, Prot::RW, false, "").is_err(), "768 + 257 pages promised");
        assert_eq!(a.read_u32(0x1000_5000).unwrap(), 0);
        a.write_u32(0x1000_6000, 5).unwrap();
        let used = phys.stats().frames_in_use;
        assert!((1..=17).contains(&used), "frames for the touched pages and a few around them: {used}");
        let child = a.fork().unwrap();
        assert_eq!(phys.stats().frames_in_use, used, "fork shares frames and promises the rest");
        drop(child);
        a.unmap(0x1000_0000, 3 << 20).unwrap();
        assert_eq!(phys.stats().frames_in_use, 0);
        a.map_anon(0x2000_0000, 4 << 20, Prot::RW, false, "").unwrap(); // everything, again
    }

    #[test]
    fn top_down_placement() {
        let mut a = space();
        a.map_anon(0xb000_0000, 0x1000, Prot::RW, false, "").unwrap();
        let p = a.find_free_top_down(0x3000, 0x1000_0000, 0xb000_1000).unwrap();
        assert_eq!(p, 0xb000_0000 - 0x3000);
    }
}
