//! Guest accesses made by the emulator: checked reads and writes, faults, code pages.

use super::*;

impl AddressSpace {
    #[inline]
    pub(super) fn fault(&self, addr: u32, write: bool) -> MemFault {
        let p = self.pte(addr);
        let allowed = p.0 & if write { Pte::WRITE } else { Pte::READ } != 0;
        let kind = match p.present() {
            true if p.beyond_eof() && allowed => MemFaultKind::BeyondEof,
            true => MemFaultKind::Protection,
            false => MemFaultKind::Unmapped,
        };
        MemFault { addr, write, kind }
    }

    /// After a [`MemFaultKind::BeyondEof`] fault at `va`: makes the pages of its file
    /// mapping that the file has grown over since accessible again (Linux looks at the
    /// file's size at each fault); returns whether the page at `va` is one of them, so
    /// the access should be retried rather than answered with `SIGBUS`.
    pub fn eof_moved(&mut self, va: u32) -> bool {
        let Some(v) = self.vma_at(va) else { return false };
        let MapKind::File { page, file, .. } = &v.kind else { return false };
        let Ok(size) = fstat(file.as_raw_fd()).map(|st| st.st_size as u64) else { return false };
        let (first, end, file_page) = (v.start >> PAGE_SHIFT, v.end >> PAGE_SHIFT, u64::from(*page));
        let eof_page = size.div_ceil(u64::from(PAGE_SIZE));
        for i in first..end {
            let p = self.pt[i as usize].get();
            if p.beyond_eof() && file_page + u64::from(i - first) < eof_page {
                self.pt[i as usize].set(Pte(p.0 & !Pte::BEYOND_EOF));
            }
        }
        // A page hosted with no access (in a run copied at once) gets its rights.
        self.sync_host_prot(first, end - first).is_ok() && !self.pte(va).beyond_eof()
    }

    /// The file `key` now has `size` bytes (truncated, extended, written past its end):
    /// the pages of its mappings wholly past the end give `SIGBUS` from now on (Linux
    /// unmaps them, private copies included), and those it has grown over are there.
    pub fn file_resized(&mut self, key: FileKey, size: u64) {
        let eof_page = size.div_ceil(u64::from(PAGE_SIZE));
        let ranges: Vec<(u32, u32, u64)> = self
            .vmas
            .values()
            .filter_map(|v| match &v.kind {
                MapKind::File { id, page, .. } if id.key() == key => {
                    Some((v.start >> PAGE_SHIFT, v.end >> PAGE_SHIFT, u64::from(*page)))
                }
                _ => None,
            })
            .collect();
        let mut lost = false;
        for (first, end, file_page) in ranges {
            for i in first..end {
                let p = self.pt[i as usize].get();
                let beyond = file_page + u64::from(i - first) >= eof_page;
                if p.present() && beyond != p.beyond_eof() {
                    self.pt[i as usize].set(Pte(p.0 ^ Pte::BEYOND_EOF));
                    lost |= beyond;
                }
            }
            let _ = self.sync_host_prot(first, end - first);
        }
        if lost {
            self.remapped();
        }
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
        let last = va.checked_add(len - 1).ok_or(MemFault { addr: va, write: false, kind: MemFaultKind::Limit })?;
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
        let last = va.checked_add(len - 1).ok_or(MemFault { addr: va, write: true, kind: MemFaultKind::Limit })?;
        let mut page = va >> PAGE_SHIFT;
        loop {
            let a = (page << PAGE_SHIFT).max(va);
            let host_fault = MemFault { addr: a, write: true, kind: MemFaultKind::Protection };
            let mut p = self.pt[page as usize].get();
            if !p.writable() {
                return Err(self.fault(a, true));
            }
            if p.unfilled() {
                // Filled first: a private page becomes copy-on-write then.
                self.materialize(page).map_err(|_| host_fault)?;
                p = self.pt[page as usize].get();
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
    pub(super) fn guard_code_alias(&self, i: u32) {
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

    /// Host pointer to guest `va` (the range must have been checked). Formed from the
    /// address (the window is the host's own mapping, not a Rust allocation; the low
    /// window starts at host address 0, where pointer arithmetic from its base would
    /// start from null).
    #[inline]
    pub fn host_ptr(&self, va: u32) -> *mut u8 {
        self.window.host_ptr(va)
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
            if p.0 & (Pte::READ | Pte::HOSTED | Pte::BEYOND_EOF) == Pte::READ | Pte::HOSTED {
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
            let bits = Pte::WRITE | Pte::COW | Pte::CODE_RO | Pte::HOSTED | Pte::BEYOND_EOF;
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
