//! Guest memory for morph: physical memory, the page cache and address spaces.
//!
//! The machine has one **physical memory**: a memfd cut into 4 KiB frames, so that a
//! guest physical address is simply `frame × 4096 + offset` ([`PhysAddr`]). Frames are
//! reference counted; the machine-wide **page cache** maps (device, inode, page index)
//! to the frame holding that page, for as long as the machine lives, exactly as Linux
//! keeps page-cache pages after a process exits. Two processes that map the same page
//! of `libc.so.6` therefore see the same frame — the fact that physically keyed
//! translations exploit. It is also the one in-memory copy of a file's pages: private
//! and shared mappings map its frames, `write(2)` updates them and shared stores are
//! written back, so every view of a file agrees, as on Linux.
//!
//! Each guest process has an **address space**: a 4 GiB host window in which guest
//! virtual address `v` lives at host address `base + v`, each present guest page being a
//! `MAP_SHARED|MAP_FIXED` mapping of its frame. A software page table ([`Pte`]) is the
//! truth for VA → PA and protections; guest accesses are checked against it, so a bad
//! guest access becomes a [`MemFault`] (later a guest `SIGSEGV`), never a host crash.
//!
//! This crate knows nothing about instructions or about Linux system calls.

mod aspace;
mod pagecache;
mod phys;
mod pte;
mod window;
mod zeroed;

pub use aspace::{AddressSpace, MapKind, MemFault, MemFaultKind, Vma};
pub use pagecache::{FileId, FileKey, PageCache, PageCacheStats};
pub use phys::{FilePage, Frame, PhysMem, PhysStats};
pub use pte::{Prot, Pte};
pub use zeroed::ZeroedSlice;

/// Size of a guest page (and of a physical frame).
pub const PAGE_SIZE: u32 = 4096;
/// log2 of [`PAGE_SIZE`].
pub const PAGE_SHIFT: u32 = 12;
/// Number of pages in the 4 GiB guest virtual address space.
pub const NUM_PAGES: usize = 1 << 20;

/// A guest virtual address (32 bits).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct VirtAddr(pub u32);

/// A guest physical address: `frame × 4096 + offset` inside the machine's memfd.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct PhysAddr(pub u64);

impl VirtAddr {
    /// The virtual page number.
    pub fn page(self) -> u32 {
        self.0 >> PAGE_SHIFT
    }
    /// The offset inside the page.
    pub fn offset(self) -> u32 {
        self.0 & (PAGE_SIZE - 1)
    }
}

impl PhysAddr {
    /// The frame this address lies in.
    pub fn frame(self) -> Frame {
        Frame((self.0 >> PAGE_SHIFT) as u32)
    }
}

/// Rounds `x` up to a page boundary (saturating at the top of the address space).
pub fn page_align_up(x: u64) -> u64 {
    (x + u64::from(PAGE_SIZE) - 1) & !(u64::from(PAGE_SIZE) - 1)
}

/// Errors of the memory layer itself (host resources), as opposed to guest faults.
#[derive(Debug, thiserror::Error)]
pub enum MemError {
    /// A host system call failed.
    #[error("host {op} failed: {err}")]
    Host {
        /// What was attempted.
        op: &'static str,
        /// The host error.
        err: std::io::Error,
    },
    /// The machine's physical memory limit was reached.
    #[error("out of guest physical memory ({limit_mib} MiB limit)")]
    OutOfMemory {
        /// The limit in MiB.
        limit_mib: u64,
    },
}

pub(crate) fn host_err(op: &'static str) -> MemError {
    MemError::Host { op, err: std::io::Error::last_os_error() }
}
