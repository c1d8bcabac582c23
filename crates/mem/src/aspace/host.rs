//! The host window as a cache of the page table: hosting pages in and out, host protections.

use super::*;

impl AddressSpace {
    // host mapping:
    //
    // The host window is a cache of the page table: a page is `HOSTED` when the window
    // maps it to its frame with `host_prot`, and inaccessible otherwise. Changing a
    // mapping only drops the window's pages that were hosted; a page is hosted at its
    // first access (`host_in`): by the interpreter's and the OS layer's checked accesses
    // (`check_read`, `prepare_write`), or, for translated code, in the host fault
    // handler (`host_in_at`). A demand-zero page gets its frame there too, and a file
    // page not filled yet its page-cache frame (`fill_file_pages`).

    /// The range `[lo, hi)` around page `i` (with `lo ≥ lo_min`, `hi ≤ hi_max`) whose
    /// pages other than `i` all satisfy `joins`.
    pub(super) fn extent(i: u32, lo_min: u32, hi_max: u32, joins: impl Fn(u32) -> bool) -> (u32, u32) {
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
    pub(super) fn map_run(&self, lo: u32, hi: u32, populate: bool) -> Result<(), MemError> {
        let p = self.pt[lo as usize].get();
        self.host_map(lo, hi - lo, Some((p.frame(), p.host_prot())), populate)?;
        self.set_hosted(lo, hi, true);
        Ok(())
    }

    /// Maps pages `[first, first+n)`, which have frames and are about to be written, in
    /// the host window now, populated: one mmap per run of consecutive frames with equal
    /// protection.
    pub(super) fn map_now(&self, first: u32, n: u32) -> Result<(), MemError> {
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
    pub(super) fn continues_run(&self, p: Pte, i: u32, j: u32, lazy: bool) -> bool {
        self.guard_code_alias(j);
        let q = self.pt[j as usize].get();
        q.has_frame()
            && q.host_prot() == p.host_prot()
            && i64::from(q.frame().0) - i64::from(p.frame().0) == i64::from(j) - i64::from(i)
            && !(lazy && q.hosted())
    }

    pub(super) fn set_hosted(&self, from: u32, to: u32, hosted: bool) {
        for c in &self.pt[from as usize..to as usize] {
            let p = Pte(c.get().0 & !Pte::STALE_RW);
            let h = hosted && p.has_frame();
            c.set(Pte(if h { p.0 | Pte::HOSTED } else { p.0 & !Pte::HOSTED }));
        }
    }

    /// Maps in the host window every present, accessible page of `[first, first+n)`
    /// that is not hosted yet, each with the longest run of not-yet-hosted consecutive
    /// frames around it (up to `HOST_IN_REACH` pages either side), in one mmap per run.
    pub(super) fn host_in(&self, first: u32, n: u32) -> Result<(), MemError> {
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
    pub(super) fn materialize(&self, i: u32) -> Result<(), MemError> {
        const ZERO_REACH: u32 = 8;
        let p = self.pt[i as usize].get();
        if p.unfilled() {
            return self.fill_file_pages(i);
        }
        let (vlo, vhi) =
            self.vma_at(i << PAGE_SHIFT).map_or((i, i + 1), |v| (v.start >> PAGE_SHIFT, v.end >> PAGE_SHIFT));
        let zero = |j: u32| {
            let q = self.pt[j as usize].get();
            q.demand_zero() && q.host_prot() == p.host_prot()
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

    /// Gives the file page `i`, not filled yet, its page-cache frame, and with it the
    /// pages around it not filled yet in its VMA, within its aligned cluster of
    /// `FILL_CLUSTER` file pages and before the end of the file (Linux's read-around):
    /// the missing ones are read from the file in one read, into consecutive frames that
    /// one host mapping takes. A private page is copy-on-write if writable. Eight pages:
    /// each page filled costs the host 1.5–2 µs (`sendfile` into the memfd), and a
    /// dynamic hello, whose libc it touches here and there, filled 298 pages with
    /// clusters of 16 and 226 with 8, a cold run 0.21 ms (3.7 %) faster in 200
    /// alternated pairs; the programs that read more of their files (python's start fills
    /// 1,256 pages instead of 1,451) did not get slower.
    pub(super) fn fill_file_pages(&self, i: u32) -> Result<(), MemError> {
        const FILL_CLUSTER: u32 = 8;
        let lost = || MemError::Host { op: "page fill", err: std::io::Error::other("no file mapping there") };
        let v = self.vma_at(i << PAGE_SHIFT).ok_or_else(lost)?;
        let MapKind::File { id, page, writeback, file } = &v.kind else { return Err(lost()) };
        let cache = self.cache.as_ref().ok_or_else(lost)?;
        let (vlo, vhi) = (v.start >> PAGE_SHIFT, v.end >> PAGE_SHIFT);
        // Cluster bounds in page-table indices (file page `page` sits at `vlo`).
        let base = i.saturating_sub((page + (i - vlo)) % FILL_CLUSTER);
        let (c_lo, c_hi) = (base.max(vlo), base.saturating_add(FILL_CLUSTER).min(vhi));
        let fill = |j: u32| {
            let q = self.pt[j as usize].get();
            q.present() && q.unfilled() && !q.beyond_eof()
        };
        let (lo, hi) = Self::extent(i, c_lo, c_hi, fill);
        let frames = cache.fill(&self.phys, file, id.key(), page + (lo - vlo), hi - lo)?;
        if let Some(w) = writeback {
            cache.note_writer(id.key(), w);
        }
        for (j, f) in (lo..hi).zip(frames) {
            self.phys.retain(f);
            let q = self.pt[j as usize].get();
            let cow = if !q.shared() && q.0 & Pte::WRITE != 0 { Pte::COW } else { 0 };
            self.pt[j as usize].set(Pte((q.0 & !Pte::UNFILLED) | cow).with_frame(f));
        }
        Ok(())
    }

    /// Hosts the page holding `va` if the guest may make the access (`write`: a write)
    /// and it is not hosted yet (with the run around it, as `host_in`); returns whether
    /// it did. Called from the host fault handler when translated code touches a page of
    /// the window that was not filled yet: it makes one mmap call and touches only the
    /// page table's cells. A write the page refuses leaves it unhosted, as Linux leaves
    /// such a page not present (the fault's error code says so).
    pub fn host_in_at(&self, va: u32, write: bool) -> bool {
        let page = va >> PAGE_SHIFT;
        let p = self.pt[page as usize].get();
        p.readable() && (!write || p.writable()) && !p.hosted() && self.host_in(page, 1).is_ok()
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

    /// Readies the window for a mapping that starts at page `first`: guest page 0 cannot
    /// be hosted in the low window, where its host address would be null (see
    /// `crate::window`), so before page 0 is mapped the space leaves it
    /// (`leave_low_window`).
    pub(super) fn before_mapping(&mut self, first: u32) -> Result<(), MemError> {
        if first != 0 { Ok(()) } else { self.leave_low_window() }
    }

    /// Whether this space's window is the low one (guest address `v` at host address
    /// `v`; see `crate::window`).
    pub fn has_low_window(&self) -> bool {
        self.window.is_low()
    }

    /// Moves this space out of the low window, if it has it, into a slot of the window
    /// region, so that another space can take it. Its hosted pages are dropped from the
    /// window (hosted again at their next access, in the new one); translations do not
    /// depend on where the window is, and the engine reads the base at each entry. Only
    /// between guest instructions.
    pub fn leave_low_window(&mut self) -> Result<(), MemError> {
        if !self.window.is_low() {
            return Ok(());
        }
        let slot = WindowSlot::take(false)?;
        self.move_window(slot);
        Ok(())
    }

    /// Puts this space's window at `slot`: every hosted page leaves the old one (which
    /// is unmapped whole as it drops, one host call) and is hosted again at its next
    /// access. Only pages inside VMAs can be hosted.
    fn move_window(&mut self, slot: WindowSlot) {
        for (first, end) in self.vma_pages() {
            self.set_hosted(first, end, false);
        }
        self.window = slot;
    }

    /// Drops every host mapping of the window (one `munmap`: it covers whole host
    /// mappings and holes, so it needs no mapping of its own), to give the host's
    /// mappings back when hosting a page failed for want of them (pages scattered over
    /// frames take one each): the pages are hosted again at their next access. Only
    /// between guest instructions, when morph holds no host pointer into the window.
    /// Returns whether any page was hosted.
    pub fn unhost_all(&self) -> bool {
        let any = self.pt.iter().any(|c| c.get().hosted());
        any && self.unhost(0, NUM_PAGES as u32).is_ok()
    }

    /// Drops the host window's mappings of the hosted pages in `[first, first+n)` (one
    /// mmap over their span), before the page table changes what those pages map.
    pub(super) fn unhost(&self, first: u32, n: u32) -> Result<(), MemError> {
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
    pub(super) fn sync_host_prot(&self, first: u32, n: u32) -> Result<(), MemError> {
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
            for c in &self.pt[i as usize..j as usize] {
                c.set(Pte(c.get().0 & !Pte::STALE_RW));
            }
            // SAFETY: the range lies inside this address space's own window and is
            // mapped (its pages are hosted); only its protection changes.
            let r = unsafe {
                libc::mprotect(
                    self.window.host_ptr(i << PAGE_SHIFT).cast(),
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
    pub(super) fn host_map(
        &self,
        page: u32,
        n: u32,
        what: Option<(Frame, i32)>,
        populate: bool,
    ) -> Result<(), MemError> {
        // The target range lies inside this address space's window slot.
        let addr = self.window.host_ptr(page << PAGE_SHIFT);
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
            let e = host_err("mmap(guest page)");
            if matches!(&e, MemError::Host { err, .. } if err.raw_os_error() == Some(libc::ENOMEM)) {
                self.phys.note_host_starved(); // no host memory or mappings left
            }
            return Err(e);
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
}
