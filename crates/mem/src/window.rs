//! Host address ranges for guest windows, and recycled page tables.
//!
//! A window is the 4 GiB of host address space in which guest virtual address `v` lives
//! at `base + v`. Only the pages a guest touched are mapped there; the rest is left
//! **unmapped**, not reserved. A reservation (one `PROT_NONE` mapping over the window)
//! would make every later `MAP_FIXED` of a guest page split it, and on the hosts we
//! measured that doubles the price of the commonest system call of the machine: a
//! one-page `mmap` costs 4.6 µs over a reservation and 2.2–2.6 µs into a hole, and
//! tearing a window down 2.5 µs per mapping against 0.9 µs (`benches/probes/hostmap.c`;
//! `docs/architecture.md`, "Address spaces").
//!
//! **The low window.** Translated code reaches guest memory through the host's GS
//! segment, whose base the engine sets to the running window's (`mov eax, gs:[ebx]`
//! with a 32-bit address). On the Intel hosts we measured, a load through a segment
//! whose base is not zero takes two cycles longer to deliver its value than the same
//! load with base zero (`benches/probes/gsmem.c`: 1.73 against 1.24 ns per dependent
//! load), and every guest load pays it. So the first address space to take a window
//! while the host's lowest 8 GiB are free gets the window at host address 0 (the *low
//! slot*): guest address `v` is host address `v`, and GS's base is zero. morph is a
//! static PIE (`.cargo/config.toml`) so that the host loads it, its heap and every
//! mapping it makes far above; the slot is checked to be empty when it is handed out,
//! as every slot is. The other address spaces of a machine (a fork's child while its
//! parent lives, say) take slots of the region below, their loads two cycles slower.
//! Guest page 0 cannot live in the low window (its host address would be null): a space
//! about to map it moves to a region slot first (`AddressSpace::before_mapping`), and a
//! fork of one that maps it is made in the region.
//!
//! The other windows are carved from a fixed region of the host address space far below
//! where the host kernel places mappings of its own (Linux allocates top-down from just
//! below the stack; the region starts at 16 TiB, the host's mappings sit near 85 and 127
//! TiB), each slot [`SLOT`] bytes apart, so that the 4 GiB after a window stay empty too
//! (a guest access straddling the top of the window faults there). A slot is checked to
//! be empty when it is first handed out, and the address space maps into the holes of its
//! window with `MAP_FIXED_NOREPLACE` (see `AddressSpace::host_map`): a foreign mapping in
//! a window is an error, never overwritten.
//!
//! Page tables (8 MiB of entries each, of which a process touches a few dozen host
//! pages) are recycled the same way: a freed table is zeroed where it was used (its
//! address space zeroes the entries of its VMAs, the only ones that can be set; a table
//! dropped otherwise is zeroed where the host has pages of it, found with `mincore`)
//! and kept for the next address space, which then takes no host page faults to build
//! its table (a fork and an exec each build one).

use std::cell::{Cell, RefCell};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::pte::Pte;
use crate::{MemError, NUM_PAGES, host_err};

/// Host address of the first window slot (16 TiB).
const REGION: usize = 1 << 44;
/// Distance between two windows: the window and as much again of guard.
const SLOT: usize = 1 << 33;
/// Slots in the region (16 TiB of address space).
const SLOTS: usize = 2048;

/// Whether an address space holds the low slot, or found it occupied by the host.
static LOW_TAKEN: AtomicBool = AtomicBool::new(false);

/// The lowest host address a process may map without `CAP_SYS_RAWIO` (the usual
/// `vm.mmap_min_addr`): the low slot is checked empty from there (guest page 0 is never
/// hosted, and the pages up to here only by a process that may map them).
const LOW_CHECKED_FROM: usize = 1 << 16;

/// Free slots (indices) and the next never-used one: process-wide, because windows are
/// host addresses and machines may run on several threads.
static SLOTS_FREE: Mutex<(Vec<usize>, usize)> = Mutex::new((Vec::new(), 0));

/// A window slot: `[base, base + SLOT)` of host address space, empty when handed out.
/// Dropping it unmaps everything mapped in it and returns the slot.
pub(crate) struct WindowSlot {
    /// Host address of the window: 0 for the low slot, else `REGION + index * SLOT`
    /// (kept, not computed: every guest access the interpreter makes adds it).
    base: usize,
}

impl WindowSlot {
    /// An empty slot: the low slot if `low` allows and it is free, else one of the
    /// region. Fails only if every slot is taken or occupied by the host.
    pub(crate) fn take(low: bool) -> Result<WindowSlot, MemError> {
        // Occupied by the host (a position-dependent build of morph, say), the low slot
        // stays marked taken, and the region serves every address space.
        if let Some(slot) = low.then(WindowSlot::take_low).flatten() {
            return Ok(slot);
        }
        loop {
            let (index, fresh) = {
                let mut g = SLOTS_FREE.lock().unwrap_or_else(|e| e.into_inner());
                match g.0.pop() {
                    Some(i) => (i, false),
                    None if g.1 < SLOTS => {
                        g.1 += 1;
                        // Room to give every slot back without allocating (see Drop).
                        let want = g.1.saturating_sub(g.0.len());
                        g.0.reserve(want);
                        (g.1 - 1, true)
                    }
                    None => {
                        return Err(MemError::Host {
                            op: "reserve guest window",
                            err: std::io::Error::from_raw_os_error(libc::ENOMEM),
                        });
                    }
                }
            };
            let slot = WindowSlot { base: REGION + index * SLOT };
            // A slot given back was emptied by its last owner; the host does not place
            // its own mappings this low (see the module documentation).
            if !fresh || slot.is_empty() {
                return Ok(slot);
            }
            // Occupied by a mapping of the host's own: never hand it out again.
            std::mem::forget(slot);
        }
    }

    /// The low slot, if it is free (and the host has nothing there).
    pub(crate) fn take_low() -> Option<WindowSlot> {
        if LOW_TAKEN.swap(true, Ordering::AcqRel) {
            return None;
        }
        let slot = WindowSlot { base: 0 };
        if slot.is_empty() {
            return Some(slot);
        }
        std::mem::forget(slot); // occupied by the host: the flag stays set
        None
    }

    /// Host address of the window (guest address 0): 0 for the low slot.
    #[inline]
    pub(crate) fn base(&self) -> usize {
        self.base
    }

    /// Host pointer to guest address `va` in the window. Guest page 0 is never hosted in
    /// the low window, so for any address morph reads or writes this is not null.
    #[inline]
    pub(crate) fn host_ptr(&self, va: u32) -> *mut u8 {
        std::ptr::with_exposed_provenance_mut(self.base() + va as usize)
    }

    /// Whether this is the low slot (the window at host address 0).
    #[inline]
    pub(crate) fn is_low(&self) -> bool {
        self.base == 0
    }

    /// Whether nothing is mapped in the slot (the low slot: from [`LOW_CHECKED_FROM`]): a
    /// `MAP_FIXED_NOREPLACE` over all of it succeeds (and is undone at once).
    fn is_empty(&self) -> bool {
        let from = if self.is_low() { LOW_CHECKED_FROM } else { 0 };
        let (want, len) = (self.base() + from, SLOT - from);
        // SAFETY: NOREPLACE never replaces an existing mapping; on success the mapping is
        // ours and removed right away.
        unsafe {
            let p = libc::mmap(
                want as *mut libc::c_void,
                len,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | libc::MAP_FIXED_NOREPLACE,
                -1,
                0,
            );
            if p == libc::MAP_FAILED {
                return false;
            }
            libc::munmap(p, len);
            p as usize == want // a kernel without NOREPLACE takes it as a hint
        }
    }
}

impl Drop for WindowSlot {
    /// Never allocates: the free list has room for every slot ever handed out.
    fn drop(&mut self) {
        // SAFETY: the slot is ours; whatever is mapped in it was mapped by its address
        // space, which is being dropped (no reference into it survives).
        unsafe { libc::munmap(std::ptr::with_exposed_provenance_mut(self.base()), SLOT) };
        if self.is_low() {
            LOW_TAKEN.store(false, Ordering::Release);
        } else {
            SLOTS_FREE.lock().unwrap_or_else(|e| e.into_inner()).0.push((self.base - REGION) / SLOT);
        }
    }
}

/// The flat page table: `NUM_PAGES` entries (8 MiB) in an anonymous host mapping of
/// its own, so that a new table costs no zeroing (the host supplies zero pages as they
/// are touched; a process touches a few), recycled when freed (see the module
/// documentation).
pub(crate) struct PageTable {
    ptr: std::ptr::NonNull<Pte>,
    /// Every entry is known to be zero (its address space zeroed what it used).
    clean: Cell<bool>,
}

/// Freed page tables kept for reuse (per thread: a table is not `Send`).
const POOL_MAX: usize = 8;

thread_local! {
    static POOL: RefCell<Vec<PageTable>> = const { RefCell::new(Vec::new()) };
}

impl PageTable {
    const BYTES: usize = NUM_PAGES * std::mem::size_of::<Pte>();
    const HOST_PAGE: usize = 4096;

    /// An all-zero table: a recycled one, or a fresh mapping.
    pub(crate) fn new() -> Result<PageTable, MemError> {
        // Room for a full pool, so that keeping a freed table never allocates (tables
        // are freed while processes are reaped, perhaps with the host out of memory).
        POOL.with(|p| p.borrow_mut().reserve(POOL_MAX));
        if let Some(t) = POOL.with(|p| p.borrow_mut().pop()) {
            t.clean.set(false);
            return Ok(t);
        }
        // SAFETY: a fresh private anonymous mapping; the result is checked.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                Self::BYTES,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(host_err("mmap(page table)"));
        }
        Ok(PageTable {
            ptr: std::ptr::NonNull::new(p.cast()).expect("mmap returns non-null on success"),
            clean: Cell::new(false),
        })
    }

    /// Records that every entry is zero again (the owner zeroed the ones it used), so
    /// that the table is recycled without `clear`. Checked in debug builds.
    pub(crate) fn mark_clean(&self) {
        debug_assert!(
            self.resident_chunks().is_some_and(|c| c.iter().all(|c| c.iter().all(|e| e.get() == Pte::default()))),
            "a page-table entry outside every VMA"
        );
        self.clean.set(true);
    }

    /// Zeroes every entry, touching only the host pages the table has in memory (the
    /// others read as zero already); false if the host would not say which those are.
    fn clear(&self) -> bool {
        let Some(chunks) = self.resident_chunks() else { return false };
        for chunk in chunks {
            // Pages only read map the shared zero page: writing them would copy it.
            if chunk.iter().any(|c| c.get() != Pte::default()) {
                chunk.iter().for_each(|c| c.set(Pte::default()));
            }
        }
        true
    }

    /// The entries on each host page of the table that the host has in memory (the
    /// others read as zero), if the host says which those are.
    fn resident_chunks(&self) -> Option<Vec<&[Cell<Pte>]>> {
        let pages = Self::BYTES / Self::HOST_PAGE;
        let mut resident = vec![0u8; pages];
        // SAFETY: the range is our own mapping; `resident` has one byte per host page.
        if unsafe { libc::mincore(self.ptr.as_ptr().cast(), Self::BYTES, resident.as_mut_ptr()) } != 0 {
            return None;
        }
        let per = Self::HOST_PAGE / std::mem::size_of::<Pte>();
        Some(
            resident
                .iter()
                .enumerate()
                .filter(|(_, r)| **r & 1 != 0)
                .map(|(i, _)| &self[i * per..(i + 1) * per])
                .collect(),
        )
    }
}

impl std::ops::Deref for PageTable {
    type Target = [Cell<Pte>];
    fn deref(&self) -> &[Cell<Pte>] {
        // SAFETY: the mapping holds NUM_PAGES entries, zero-initialized by the host or
        // by `clear` (the zero value is `Pte::default()`; `Pte` is `repr(transparent)`
        // over u64 and `Cell<Pte>` over `Pte`), and lives as long as `self`. Entries are
        // reached only through this slice of cells (the table is not `Sync`: `NonNull`
        // is not).
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr().cast::<Cell<Pte>>(), NUM_PAGES) }
    }
}

impl Drop for PageTable {
    fn drop(&mut self) {
        let ptr = self.ptr;
        let room = POOL.try_with(|p| p.borrow().len() < POOL_MAX).unwrap_or(false);
        if room
            && (self.clean.get() || self.clear())
            && POOL.try_with(|p| p.borrow_mut().push(PageTable { ptr, clean: Cell::new(true) })).is_ok()
        {
            return; // the same mapping lives on in the pool
        }
        // SAFETY: unmapping our own mapping; no borrow of it outlives `self`.
        unsafe { libc::munmap(ptr.as_ptr().cast(), Self::BYTES) };
    }
}

#[cfg(test)]
mod tests {
    use crate::aspace::tests::space;
    use crate::{Prot, Pte};

    #[test]
    fn a_recycled_page_table_and_window_hold_nothing_of_their_last_owner() {
        let vas = [0x0804_8000u32, 0x4000_0000, 0xbfff_f000];
        for round in 0..3u32 {
            let mut a = space();
            for &va in &vas {
                assert_eq!(a.pte(va), Pte::default(), "round {round}: {va:#x} must start empty");
                assert!(a.read_u8(va).is_err());
                // Nothing is mapped there on the host: mincore fails (ENOMEM).
                let host = a.host_ptr(va & !0xfff);
                let mut v = 0u8;
                // SAFETY: mincore only inspects the range; `v` holds its one result byte.
                assert_eq!(unsafe { libc::mincore(host.cast(), 4096, &mut v) }, -1, "round {round}: {va:#x} hosted");
                a.map_anon(va, 0x1000, Prot::RW, false, "").unwrap();
                a.write_u32(va, 0xdead_0000 | round).unwrap();
            }
            // An address space read everywhere (the zero pages of its table) recycles too.
            for va in (0..1u32 << 20).step_by(512).map(|p| p << 12).filter(|va| !vas.contains(va)) {
                assert_eq!(a.pte(va), Pte::default());
            }
        }
    }

    #[test]
    fn a_page_table_comes_back_all_zero_whatever_its_last_owner_did() {
        for round in 0..2 {
            let mut a = space();
            assert!(
                (0..1u32 << 20).all(|p| a.pte(p << 12) == Pte::default()),
                "round {round}: a used table was handed out"
            );
            a.map_anon(0x1000_0000, 0x10_0000, Prot::RW, false, "").unwrap();
            for va in (0x1000_0000..0x1010_0000).step_by(0x3000) {
                a.write_u32(va, va).unwrap();
            }
            a.protect(0x1004_0000, 0x2000, Prot::READ).unwrap();
            a.unmap(0x1008_0000, 0x4000).unwrap();
            a.move_pages(0x1000_0000, 0x5000_0000, 0x3000).unwrap();
            a.map_anon(0xbf00_0000, 0x80_0000, Prot::RW, false, "stack").unwrap();
            a.write_u32(0xbf7f_fff0, 1).unwrap();
            let b = a.fork().unwrap();
            drop(a);
            drop(b);
        }
    }

    #[test]
    fn a_host_mapping_in_a_window_is_never_replaced() {
        let mut a = space();
        let va = 0x1234_5000u32;
        let host = a.host_ptr(va);
        // SAFETY: a mapping of our own at a hole of the window (NOREPLACE: it fails
        // rather than replace anything), written and checked below, unmapped at the end.
        let p = unsafe {
            libc::mmap(
                host.cast(),
                4096,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED_NOREPLACE,
                -1,
                0,
            )
        };
        assert_eq!(p, host.cast());
        // SAFETY: `p` is the page just mapped.
        unsafe { *p.cast::<u8>() = 0x5a };
        a.map_anon(va, 0x1000, Prot::RW, false, "").unwrap();
        assert!(a.write_u8(va, 1).is_err(), "the guest page cannot be hosted over a foreign mapping");
        // SAFETY: as above.
        assert_eq!(unsafe { *p.cast::<u8>() }, 0x5a, "the foreign mapping is intact");
        // SAFETY: ours.
        unsafe { libc::munmap(p, 4096) };
        assert!(a.write_u8(va, 1).is_ok());
    }
}
