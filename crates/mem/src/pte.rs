//! The guest page table's entry and the guest's page protections.
//!
//! A [`Pte`] is the software page table's truth about a guest page: its frame and the
//! guest's rights, plus what the emulator keeps beside them (copy-on-write, shared,
//! translated-code and hosted bits). The address space ([`crate::AddressSpace`]) owns the
//! table; the host window (`window.rs`) stores it.

use crate::Frame;

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
pub struct Pte(pub(crate) u64);

impl Pte {
    pub(crate) const PRESENT: u64 = 1 << 0;
    pub(crate) const READ: u64 = 1 << 1;
    pub(crate) const WRITE: u64 = 1 << 2;
    pub(crate) const EXEC: u64 = 1 << 3;
    /// The frame is shared with someone else; copy it before the first write.
    pub(crate) const COW: u64 = 1 << 4;
    /// Part of a `MAP_SHARED` mapping: fork shares the frame instead of copying it.
    pub(crate) const SHARED: u64 = 1 << 5;
    /// Translated code was made from this page: the host mapping is read-only so that
    /// translated stores to it trap (the guest may still write; see `prepare_write`).
    pub(crate) const CODE_RO: u64 = 1 << 7;
    /// The host window maps this page to its frame with `host_prot` (else the window
    /// is inaccessible there). The window is filled lazily: a page becomes hosted at its
    /// first access (see [`AddressSpace::host_in`]), so mappings a process never
    /// touches, such as most of a forked child that execs at once, cost no host call.
    pub(crate) const HOSTED: u64 = 1 << 8;
    /// A page of a file mapping wholly beyond the end of the file (as last checked): the
    /// mapping allows the access but there is nothing to access, so the guest gets
    /// `SIGBUS`, as on Linux. The frame (the page cache's, zero) is kept, so the page
    /// becomes accessible as it was if the file grows ([`crate::AddressSpace::eof_moved`]).
    pub(crate) const BEYOND_EOF: u64 = 1 << 9;
    /// A page of a file mapping not touched yet: it has no frame; at its first touch it
    /// gets the page cache's frame of its file page, read from the file then if the
    /// cache does not hold it (see `AddressSpace::fill_file_pages`). A present page
    /// with no frame and without this bit is demand-zero.
    pub(crate) const UNFILLED: u64 = 1 << 10;
    /// A copy-on-write page whose host mapping is still writable: `fork` marks the
    /// parent's hosted writable pages copy-on-write in the table and leaves their host
    /// protection to the parent's next run of translated code
    /// ([`crate::AddressSpace::settle_fork`]), the only user of the window's
    /// protections (every other access checks this table). Any change to the page's host
    /// mapping clears it.
    pub(crate) const STALE_RW: u64 = 1 << 11;

    /// This entry mapping `frame` instead (protections and flags kept).
    pub(crate) fn with_frame(self, frame: Frame) -> Pte {
        Pte((self.0 & 0xFFFF_FFFF) | (u64::from(frame.0) << 32))
    }

    pub(crate) fn new(frame: Frame, prot: Prot, cow: bool, shared: bool) -> Pte {
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
        self.0 & (Self::READ | Self::BEYOND_EOF) == Self::READ
    }
    /// Whether the guest may write the page (possibly after a copy).
    pub fn writable(self) -> bool {
        self.0 & (Self::WRITE | Self::BEYOND_EOF) == Self::WRITE
    }
    /// Whether the page lies wholly beyond the end of its file (see `BEYOND_EOF`).
    pub fn beyond_eof(self) -> bool {
        self.0 & Self::BEYOND_EOF != 0
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
    pub(crate) const NO_FRAME: u32 = u32::MAX;

    /// Whether the page is private anonymous memory never touched yet (no frame, and
    /// none to come from a file): it counts against the memory limit as committed.
    pub(crate) fn demand_zero(self) -> bool {
        self.present() && !self.has_frame() && self.0 & Self::UNFILLED == 0
    }
    /// Whether the page is a file page not touched yet (see `UNFILLED`).
    pub(crate) fn unfilled(self) -> bool {
        self.0 & Self::UNFILLED != 0
    }
    /// Whether the page has a frame (a present page without one is demand-zero, or a
    /// file page not filled yet).
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
    pub(crate) fn host_prot(self) -> i32 {
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
