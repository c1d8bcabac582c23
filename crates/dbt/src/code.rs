//! The code cache's memory: one fixed region, mapped twice.
//!
//! Translations are written through a read-write view and executed through a
//! read-execute view of the same `memfd`, so the host code is never writable where it
//! runs (W^X) and no `mprotect` is needed to add a translation or patch a chain (with a
//! growable buffer that flips protections on every commit, `mprotect` was a fifth of
//! the time of an exec-heavy workload). The region never moves, so host addresses of
//! translations stay valid until the cache is flushed. Both views are `memmap2` maps of
//! the memfd, unmapped when the buffer drops. (Until stop 41 the executable view was
//! mapped by hand in the low 2 GiB, `MAP_32BIT`, so that the indirect-branch table's
//! lookup could add its miss routine's address as an immediate; the low 4 GiB now hold
//! a guest window, see `morph_mem::window`, and the lookup forms that address
//! relative to its own, see `glue::table_lookup`.)

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use memmap2::{Mmap, MmapMut, MmapOptions};

/// A dual-mapped code region: two views of one memfd.
pub(crate) struct CodeBuffer {
    file: File,
    rw: MmapMut,
    /// The executable view (`cap` bytes).
    rx: Mmap,
    len: usize,
}

impl CodeBuffer {
    /// A region of `cap` bytes (address space only; pages are allocated on first write).
    pub fn new(cap: usize) -> io::Result<CodeBuffer> {
        // SAFETY: a valid C string name and flags; the result is checked.
        let fd = unsafe { libc::memfd_create(c"morph-code".as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a fresh descriptor we own.
        let file = File::from(unsafe { OwnedFd::from_raw_fd(fd) });
        file.set_len(cap as u64)?;
        // SAFETY: both views map our own memfd, which nothing else can reach (it has no
        // name in any file system and is close-on-exec), so its contents change only
        // through `rw`. `rx` is never read as a Rust slice: the engine only takes its
        // address, and the CPU executes it.
        let (rw, rx) = unsafe {
            let rw = MmapOptions::new().len(cap).map_mut(&file)?;
            let rx = MmapOptions::new().len(cap).map_exec(&file)?;
            (rw, rx)
        };
        Ok(CodeBuffer { file, rw, rx, len: 0 })
    }

    /// Bytes in use: the offset the next code goes to.
    pub fn offset(&self) -> usize {
        self.len
    }

    /// Host address of offset 0 in the executable view.
    pub fn base(&self) -> usize {
        self.rx.as_ptr() as usize
    }

    /// Capacity in bytes.
    pub fn capacity(&self) -> usize {
        self.rw.len()
    }

    /// Appends `code`; false if it does not fit.
    pub fn extend(&mut self, code: &[u8]) -> bool {
        let Some(dst) = self.rw.get_mut(self.len..self.len + code.len()) else { return false };
        dst.copy_from_slice(code);
        self.len += code.len();
        true
    }

    /// Overwrites bytes already emitted (a chain patch). No translated code runs while
    /// the engine patches (one host thread), and x86 keeps instruction fetch coherent
    /// with stores to the same physical memory through another mapping.
    pub fn patch(&mut self, off: usize, bytes: &[u8]) -> bool {
        match off.checked_add(bytes.len()).filter(|&end| end <= self.len) {
            Some(end) => {
                self.rw[off..end].copy_from_slice(bytes);
                true
            }
            None => false,
        }
    }

    /// The four bytes at `off` (a chain site's rel32), if emitted.
    pub fn read4(&self, off: usize) -> Option<[u8; 4]> {
        self.rw.get(off..off.checked_add(4).filter(|&end| end <= self.len)?)?.try_into().ok()
    }

    /// Forgets every byte (a cache flush); the region is reused from offset 0, and the
    /// host pages that held the code are given back (the memfd's range is punched out,
    /// so a flushed cache costs no memory until it fills again).
    pub fn clear(&mut self) {
        if self.len > 0 {
            // SAFETY: punching a hole in our own memfd, within its size; both views stay
            // mapped and read zeros until written again. No translated code runs during a
            // flush. Failure (a kernel without hole punching in shmem) only keeps the pages.
            unsafe {
                libc::fallocate(
                    self.file.as_raw_fd(),
                    libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                    0,
                    self.len as libc::off_t,
                );
            }
        }
        self.len = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_executable_view_sees_what_is_written() {
        let mut c = CodeBuffer::new(1 << 16).unwrap();
        assert!(c.extend(&[0xb8, 42, 0, 0, 0, 0xc3])); // mov eax, 42; ret
        assert!(c.patch(1, &[7]));
        // SAFETY: the executable view holds a complete function `() -> i32`.
        let f: extern "C" fn() -> i32 = unsafe { std::mem::transmute(c.base()) };
        assert_eq!(f(), 7);
        assert!(!c.patch(5, &[0, 0]));
        assert!(!c.extend(&vec![0; 1 << 16]));
        c.clear();
        assert_eq!(c.offset(), 0);
        assert!(c.extend(&[0xb8, 9, 0, 0, 0, 0xc3]));
        // SAFETY: as above, written again after the clear.
        let f: extern "C" fn() -> i32 = unsafe { std::mem::transmute(c.base()) };
        assert_eq!(f(), 9);
    }
}
