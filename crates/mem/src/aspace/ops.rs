//! VMAs and the mapping operations: map, unmap, move, protect, copy-on-write, fork.

use super::*;

impl AddressSpace {
    /// Splits the VMA containing `addr` (if any) so that a VMA starts at `addr`.
    pub(super) fn split_at(&mut self, addr: u32) {
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
    pub(super) fn merge_around(&mut self, addr: u32) {
        let Some((&ls, l)) = self.vmas.range(..addr).next_back() else { return };
        let Some(r) = self.vmas.get(&addr) else { return };
        if l.end != addr || l.prot != r.prot || l.shared != r.shared || l.name != r.name {
            return;
        }
        let contiguous = match (&l.kind, &r.kind) {
            (MapKind::Anon, MapKind::Anon) => true,
            (
                MapKind::File { id: a, page: pa, writeback: wa, .. },
                MapKind::File { id: b, page: pb, writeback: wb, .. },
            ) => a.key() == b.key() && wa.is_some() == wb.is_some() && pa + ((addr - ls) >> PAGE_SHIFT) == *pb,
            _ => false,
        };
        if contiguous {
            let end = r.end;
            self.vmas.remove(&addr);
            self.vmas.get_mut(&ls).expect("left vma").end = end;
        }
    }

    pub(super) fn carve(&mut self, start: u32, end: u32) -> Vec<Vma> {
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

    pub(super) fn drop_pages(&mut self, first: u32, n: u32) {
        let mut any = false;
        for i in first..first + n {
            let p = self.pt[i as usize].take();
            if p.has_frame() {
                self.phys.release(p.frame());
            } else if p.demand_zero() {
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
    pub(super) fn remove_range(&mut self, first: u32, n: u32) {
        let start = first << PAGE_SHIFT;
        // VMAs end at or below 0xFFFF_F000 (see `Vma::end`).
        let end = ((u64::from(first) + u64::from(n)) << PAGE_SHIFT).min(0xFFFF_F000) as u32;
        for v in self.carve(start, end.max(start)) {
            let _ = self.write_back_vma(&v, v.start, v.end);
        }
        self.unlock_pages(start, end);
        self.drop_pages(first, n);
    }

    /// Writes back the pages of `v` inside `[from, to)` if `v` is a shared mapping of a
    /// file opened read/write: pages that differ from the file, and only up to its
    /// current size (write-back never extends a file).
    pub(super) fn write_back_vma(&self, v: &Vma, from: u32, to: u32) -> Result<(), MemError> {
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
        self.before_mapping(first)?;
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
    /// read/write its stores are written back to the file (see [`MapKind::File`]). Pages
    /// the cache holds are mapped now; the others are read at their first touch
    /// (`fill_file_pages`). The caller checks the access mode against `prot`, as `mmap`
    /// does.
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
        self.before_mapping(first)?;
        self.phys.vma_room(Self::VMAS_PER_CHANGE)?;
        let file_page = u32::try_from(offset >> PAGE_SHIFT).ok().filter(|p| p.checked_add(n - 1).is_some()).ok_or(
            MemError::Host { op: "mmap(file offset)", err: std::io::Error::from_raw_os_error(libc::EOVERFLOW) },
        )?;
        // Register the file (and its writer) before touching the old mapping, so that
        // a failure leaves it in place. No page is read now: each is read (or found in
        // the cache) at its first touch (`fill_file_pages`), except that pages already
        // cached are mapped at once, as Linux's fault-around maps cached pages without
        // reading (a program run again finds its pages with no fault).
        let pinned = cache.open(&self.phys, file, id);
        let writeback = pinned.and_then(|pinned| match shared && is_read_write(file) {
            true => cache.shared_writer(id.key(), file).map(|w| (Some(w), pinned)),
            false => Ok((None, pinned)),
        });
        let (writeback, pinned) = writeback.and_then(|w| self.unhost(first, n).map(|()| w))?;
        let cached = cache.cached(id.key(), file_page, n);
        self.cache.get_or_insert_with(|| cache.share());
        self.remove_range(first, n);
        let cow = !shared && prot.has(Prot::WRITE);
        // Pages wholly past the end of the file give SIGBUS (Linux checks at the fault).
        let eof_page = id.size.div_ceil(u64::from(PAGE_SIZE));
        let unfilled = Pte(Pte::new(Frame(Pte::NO_FRAME), prot, false, shared).0 | Pte::UNFILLED);
        for (i, fp) in (first..first + n).zip(file_page..) {
            let beyond = if u64::from(fp) >= eof_page { Pte::BEYOND_EOF } else { 0 };
            self.pt[i as usize].set(Pte(unfilled.0 | beyond));
        }
        for (fp, f) in cached {
            let i = first + (fp - file_page);
            self.phys.retain(f);
            let beyond = self.pt[i as usize].get().0 & Pte::BEYOND_EOF;
            self.pt[i as usize].set(Pte(Pte::new(f, prot, cow, shared).0 | beyond));
        }
        self.vmas.insert(
            start,
            Vma {
                start,
                end: start + (n << PAGE_SHIFT),
                prot,
                shared,
                kind: MapKind::File { id, page: file_page, writeback, file: pinned },
                name: name.into(),
            },
        );
        self.merge_around(start + (n << PAGE_SHIFT));
        self.merge_around(start);
        self.account();
        Ok(())
    }

    /// Maps at `to` (free) a second view of the shared mapping at `from`, `len` bytes
    /// (`mremap` with an old size of 0): the same frames, protection and object, from
    /// `from`'s offset in it. Past the end of `from`'s mapping, a file mapping goes on
    /// with the file's next pages (`SIGBUS` past its end) and shared memory gives
    /// `SIGBUS`, as past the end of Linux's shared memory object.
    pub fn alias_shared(&mut self, cache: &mut PageCache, from: u32, to: u32, len: u32) -> Result<(), MemError> {
        let (first, n) = pages(from, len);
        let (dfirst, _) = pages(to, len);
        let Some(v) = self.vma_at(from).filter(|v| v.shared && n > 0).cloned() else { return Ok(()) };
        self.before_mapping(dfirst)?;
        self.phys.vma_room(Self::VMAS_PER_CHANGE)?;
        let inside = n.min((v.end - from) >> PAGE_SHIFT);
        let skip = (from - v.start) >> PAGE_SHIFT;
        // The pages past the mapping's end, with their BEYOND_EOF bit.
        let (more, kind): (Vec<(Frame, u64)>, MapKind) = match &v.kind {
            MapKind::Anon => {
                let frames = self.phys.alloc_zeroed(n - inside)?;
                (frames.into_iter().map(|f| (f, Pte::BEYOND_EOF)).collect(), MapKind::Anon)
            }
            MapKind::File { page, writeback, file, .. } => {
                let id = FileId::of(file).map_err(|err| MemError::Host { op: "fstat(mapped file)", err })?;
                let eof_page = id.size.div_ceil(u64::from(PAGE_SIZE));
                let next = page + skip + inside;
                let frames = if n > inside { cache.pages(&self.phys, file, id, next, n - inside)? } else { Vec::new() };
                let more = (u64::from(next)..)
                    .zip(frames)
                    .map(|(fp, f)| {
                        self.phys.retain(f);
                        (f, if fp >= eof_page { Pte::BEYOND_EOF } else { 0 })
                    })
                    .collect();
                (more, MapKind::File { id, page: page + skip, writeback: writeback.clone(), file: file.clone() })
            }
        };
        for i in 0..n {
            let q = if i < inside {
                let p = self.pt[(first + i) as usize].get();
                if p.has_frame() {
                    self.phys.retain(p.frame());
                }
                Pte(p.0 & !(Pte::HOSTED | Pte::CODE_RO))
            } else {
                let (f, beyond) = more[(i - inside) as usize];
                Pte(Pte::new(f, v.prot, false, true).0 | beyond)
            };
            self.pt[(dfirst + i) as usize].set(q);
        }
        let start = dfirst << PAGE_SHIFT;
        let name = v.name.clone();
        self.vmas.insert(start, Vma { start, end: start + (n << PAGE_SHIFT), prot: v.prot, shared: true, kind, name });
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
        for i in first..first + n {
            if self.pt[i as usize].get().unfilled() && self.materialize(i).is_err() {
                return;
            }
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
        self.before_mapping(dfirst)?;
        self.phys.vma_room(2 * Self::VMAS_PER_CHANGE)?;
        self.unhost(first, n)?;
        self.unhost(dfirst, n)?;
        let moved = self.carve(from, from + (n << PAGE_SHIFT));
        let locks = self.locked_ranges(from, from + (n << PAGE_SHIFT));
        self.unlock_pages(from, from + (n << PAGE_SHIFT));
        self.remove_range(dfirst, n);
        for (s, e) in locks {
            self.lock_pages(to + (s - from), to + (e - from));
        }
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
            let keep = p.0 & (Pte::CODE_RO | Pte::HOSTED | Pte::BEYOND_EOF | Pte::UNFILLED);
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
    pub(super) fn break_cow(&mut self, va: u32) -> Result<(), MemError> {
        let i = (va >> PAGE_SHIFT) as usize;
        let p = self.pt[i].get();
        let old = p.frame();
        let uncow = |p: Pte| Pte(p.0 & !Pte::COW);
        if self.phys.refcount(old) == 1 {
            let ranges = self.vma_pages();
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
    pub(super) fn copy_to_run(&self, lo: u32, n: u32) -> bool {
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
    /// data, which the dynamic loader writes page after page while relocating, and a
    /// forked child here and there), the `FILE_BATCH` pages from `i` on and as many
    /// before it (from `i` on only until stop 42: a data page written below the first
    /// one took a fault of its own, 310 of the fork/exec loop's); in private anonymous
    /// memory (a heap, a bss, a stack, where a forked child writes a few neighbouring
    /// pages before it execs), up to [`COW_ANON_REACH`] pages either side. Copying a
    /// page before it is written is invisible to the guest, except that later changes
    /// to a file no longer show through it, which POSIX leaves unspecified for
    /// `MAP_PRIVATE`.
    pub(super) fn cow_batch(&self, i: u32) -> (u32, u32) {
        const FILE_BATCH: u32 = 16;
        let Some(v) = self.vma_at(i << PAGE_SHIFT) else { return (i, i + 1) };
        if v.shared {
            return (i, i + 1);
        }
        let shared_data = |j: u32| {
            let q = self.pt[j as usize].get();
            q.present()
                && q.cow()
                && !q.beyond_eof()
                && q.0 & Pte::CODE_RO == 0
                && self.phys.refcount(q.frame()) > 1
                && !self.phys.is_code(q.frame())
        };
        // Pages the batch may reach before `i` and after it.
        let (before, after) = match v.kind {
            MapKind::File { .. } => (FILE_BATCH, FILE_BATCH - 1),
            MapKind::Anon => (COW_ANON_REACH, COW_ANON_REACH),
        };
        let (first, end) = (v.start >> PAGE_SHIFT, v.end >> PAGE_SHIFT);
        Self::extent(i, first.max(i.saturating_sub(before)), end.min(i + 1 + after), shared_data)
    }

    /// A copy of this address space for `fork`: private pages become copy-on-write in
    /// both, shared pages stay shared.
    pub fn fork(&mut self) -> Result<AddressSpace, MemError> {
        self.phys.vma_room(self.counted)?;
        // A space that maps guest page 0 cannot live in the low window.
        let page0 = self.vmas.keys().next().is_some_and(|&start| start < PAGE_SIZE);
        let mut child = AddressSpace::with_window(self.phys.clone(), !page0)?;
        child.vmas = self.vmas.clone();
        child.account();
        child.mmap_base = self.mmap_base;
        child.cache = self.cache.as_ref().map(PageCache::share);
        child.set_mapping(self.mapping); // the same pages map the same frames
        // Every present page lies in a VMA: walk those, not the whole 4 GiB table.
        let ranges = self.vma_pages();
        for &(first, end) in &ranges {
            for i in first as usize..end as usize {
                let mut p = self.pt[i].get();
                if !p.has_frame() {
                    // Nothing, demand-zero or a file page not filled yet: each space
                    // gets its own frame at its first touch (the child's demand-zero
                    // pages are promised too).
                    if p.demand_zero() {
                        self.phys.commit_anyway(1);
                    }
                    child.pt[i].set(p);
                    continue;
                }
                self.phys.retain(p.frame());
                if p.writable() && !p.shared() && !p.cow() {
                    // Its host protection waits for the parent's next run (a child that
                    // runs first and execs leaves it unshared, and nothing to do).
                    let stale = if p.hosted() && p.host_prot() & libc::PROT_WRITE != 0 { Pte::STALE_RW } else { 0 };
                    p.0 |= Pte::COW | stale;
                    self.pt[i].set(p);
                    self.fork_pending = true;
                }
                // The child's window fills as it touches its pages: a child that
                // execs at once maps almost none of them.
                child.pt[i].set(Pte(p.0 & !(Pte::HOSTED | Pte::STALE_RW)));
            }
        }
        Ok(child)
    }

    /// The page numbers `[first, end)` of each VMA, in address order (every present page
    /// lies in one: walks over these skip the rest of the 4 GiB table).
    pub(super) fn vma_pages(&self) -> Vec<(u32, u32)> {
        self.vmas.values().map(|v| (v.start >> PAGE_SHIFT, v.end >> PAGE_SHIFT)).collect()
    }

    /// Before translated code runs in this space again after a `fork` (which marked its
    /// writable pages copy-on-write in the table only): the pages still shared with a
    /// child are write-protected in the host window, one `mprotect` per run; the others
    /// (the child exec'd or exited meanwhile: a 2.6.12 child runs first) are this
    /// space's alone again and stay writable, with no host call at all. Translated code
    /// is the only user of the window's protections (the interpreter's and the system
    /// calls' accesses check the table), so nothing else needs them settled.
    pub fn settle_fork(&mut self) -> Result<(), MemError> {
        if !std::mem::take(&mut self.fork_pending) {
            return Ok(());
        }
        let ranges = self.vma_pages();
        for (first, end) in ranges {
            // The pages still shared, in runs: [lo, j) while `run` is Some(lo).
            let mut run = None;
            for j in first..end {
                let p = self.pt[j as usize].get();
                let stale = p.0 & Pte::STALE_RW != 0;
                let shared = stale && self.phys.refcount(p.frame()) > 1;
                if stale && !shared {
                    self.pt[j as usize].set(Pte(p.0 & !(Pte::COW | Pte::STALE_RW)));
                }
                match (run, shared) {
                    (None, true) => run = Some(j),
                    (Some(lo), false) => {
                        run = None;
                        self.sync_host_prot(lo, j - lo)?;
                    }
                    _ => {}
                }
            }
            if let Some(lo) = run {
                self.sync_host_prot(lo, end - lo)?;
            }
        }
        Ok(())
    }
}
