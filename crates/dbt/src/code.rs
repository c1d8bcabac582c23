//! The code cache's memory: one fixed region, mapped twice.
//!
//! Translations are written through a read-write view and executed through a
//! read-execute view of the same `memfd`, so the host code is never writable where it
//! runs (W^X) and no `mprotect` is needed to add a translation or patch a chain (with a
//! growable buffer that flips protections on every commit, `mprotect` was a fifth of
//! the time of an exec-heavy workload). The region never moves, so host addresses of
//! translations stay valid until the cache is flushed.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// A dual-mapped code region.
pub(crate) struct CodeBuffer {
    _fd: OwnedFd,
    rw: *mut u8,
    rx: *mut u8,
    cap: usize,
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
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: sizing our own memfd.
        if unsafe { libc::ftruncate(fd.as_raw_fd(), cap as libc::off_t) } != 0 {
            return Err(io::Error::last_os_error());
        }
        let map = |prot| {
            // SAFETY: a shared mapping of our memfd at a kernel-chosen address.
            let p = unsafe { libc::mmap(std::ptr::null_mut(), cap, prot, libc::MAP_SHARED, fd.as_raw_fd(), 0) };
            if p == libc::MAP_FAILED { Err(io::Error::last_os_error()) } else { Ok(p.cast::<u8>()) }
        };
        let rw = map(libc::PROT_READ | libc::PROT_WRITE)?;
        let rx = match map(libc::PROT_READ | libc::PROT_EXEC) {
            Ok(p) => p,
            Err(e) => {
                // SAFETY: unmapping the view we just made.
                unsafe { libc::munmap(rw.cast(), cap) };
                return Err(e);
            }
        };
        Ok(CodeBuffer { _fd: fd, rw, rx, cap, len: 0 })
    }

    /// Bytes in use: the offset the next code goes to.
    pub fn offset(&self) -> usize {
        self.len
    }

    /// Host address of offset 0 in the executable view.
    pub fn base(&self) -> usize {
        self.rx as usize
    }

    /// Capacity in bytes.
    pub fn capacity(&self) -> usize {
        self.cap
    }

    /// Appends `code`; false if it does not fit.
    pub fn extend(&mut self, code: &[u8]) -> bool {
        if code.len() > self.cap - self.len {
            return false;
        }
        // SAFETY: `len + code.len() <= cap`: the write stays inside our RW view, which
        // does not overlap `code` (a Rust slice elsewhere).
        unsafe { std::ptr::copy_nonoverlapping(code.as_ptr(), self.rw.add(self.len), code.len()) };
        self.len += code.len();
        true
    }

    /// Overwrites bytes already emitted (a chain patch). No translated code runs while
    /// the engine patches (one host thread), and x86 keeps instruction fetch coherent
    /// with stores to the same physical memory through another mapping.
    pub fn patch(&mut self, off: usize, bytes: &[u8]) -> bool {
        if off.checked_add(bytes.len()).is_none_or(|end| end > self.len) {
            return false;
        }
        // SAFETY: in bounds of the emitted part of our RW view (checked above).
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.rw.add(off), bytes.len()) };
        true
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
                    self._fd.as_raw_fd(),
                    libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                    0,
                    self.len as libc::off_t,
                );
            }
        }
        self.len = 0;
    }
}

impl Drop for CodeBuffer {
    fn drop(&mut self) {
        // SAFETY: unmapping our two views; no translation runs after the engine drops.
        unsafe {
            libc::munmap(self.rw.cast(), self.cap);
            libc::munmap(self.rx.cast(), self.cap);
        }
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
