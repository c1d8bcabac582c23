//! The executable code buffer: one fixed reservation, written through one view and run
//! through another.
//!
//! Translations are appended one at a time, each right before it first runs, and chain
//! patches rewrite four bytes of code already committed. A buffer that must be made
//! writable and then executable again for each change (`mprotect` of the whole buffer,
//! as dynasmrt's `Assembler::commit` and `alter` do) costs time proportional to the
//! buffer's size per translation: quadratic over a run, and worst under the `process`
//! key, whose buffer fills with per-process copies of the same code (a shell script of
//! a hundred execs spent 99% of its time in `mprotect`). Here the buffer is a memfd of
//! the flush size mapped twice, read+write and read+execute, so appending and patching
//! are plain stores and the code never moves: its host address is fixed for the
//! engine's life. x86 keeps instruction fetch coherent with stores to the same physical
//! page whatever the virtual alias, and translated code is written only by the
//! dispatcher thread before it jumps there.
//!
//! Where the host refuses an executable memfd mapping (`vm.memfd_noexec`), one
//! anonymous read+write+execute mapping is used instead.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// An append-only buffer of host code with a fixed address.
pub struct CodeBuffer {
    /// Where the code is written.
    rw: *mut u8,
    /// Where the code runs (equal to `rw` with the single-mapping fallback).
    rx: *mut u8,
    cap: usize,
    len: usize,
    /// The memfd behind both views (none with the fallback).
    _fd: Option<OwnedFd>,
}

impl CodeBuffer {
    /// A buffer of `cap` bytes (address space only: pages are allocated when written).
    pub fn new(cap: usize) -> io::Result<CodeBuffer> {
        match Self::dual(cap) {
            Ok(b) => Ok(b),
            Err(_) => Self::single(cap),
        }
    }

    fn dual(cap: usize) -> io::Result<CodeBuffer> {
        // SAFETY: memfd_create with a C string name; the result is checked.
        let fd = unsafe { libc::memfd_create(c"morph-code".as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a fresh descriptor we own.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: ftruncate on our own memfd.
        if unsafe { libc::ftruncate(fd.as_raw_fd(), cap as libc::off_t) } != 0 {
            return Err(io::Error::last_os_error());
        }
        let map = |prot| {
            // SAFETY: a new shared mapping of our memfd at an address the kernel picks.
            let p = unsafe { libc::mmap(std::ptr::null_mut(), cap, prot, libc::MAP_SHARED, fd.as_raw_fd(), 0) };
            if p == libc::MAP_FAILED { Err(io::Error::last_os_error()) } else { Ok(p.cast::<u8>()) }
        };
        let rw = map(libc::PROT_READ | libc::PROT_WRITE)?;
        let rx = match map(libc::PROT_READ | libc::PROT_EXEC) {
            Ok(p) => p,
            Err(e) => {
                // SAFETY: unmapping the view made just above, which nothing uses.
                unsafe { libc::munmap(rw.cast(), cap) };
                return Err(e);
            }
        };
        Ok(CodeBuffer { rw, rx, cap, len: 0, _fd: Some(fd) })
    }

    fn single(cap: usize) -> io::Result<CodeBuffer> {
        // SAFETY: a new private anonymous mapping at an address the kernel picks.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                cap,
                libc::PROT_READ | libc::PROT_WRITE | libc::PROT_EXEC,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(CodeBuffer { rw: p.cast(), rx: p.cast(), cap, len: 0, _fd: None })
    }

    /// Bytes of code in the buffer: the offset the next `push` lands at.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Capacity in bytes.
    pub fn capacity(&self) -> usize {
        self.cap
    }

    /// Host address of offset 0 of the executable view (fixed for the buffer's life).
    pub fn base(&self) -> usize {
        self.rx as usize
    }

    /// Appends `code`; returns its offset, or `None` if the buffer is full.
    pub fn push(&mut self, code: &[u8]) -> Option<usize> {
        let at = self.len;
        if code.len() > self.cap - at {
            return None;
        }
        // SAFETY: `at + code.len() <= cap`, inside the writable view, which no Rust
        // reference aliases; the executable view of these bytes is not running (only
        // the dispatcher thread runs code, and it is here).
        unsafe { std::ptr::copy_nonoverlapping(code.as_ptr(), self.rw.add(at), code.len()) };
        self.len += code.len();
        Some(at)
    }

    /// Overwrites already pushed bytes at `at` (a chain patch); false if out of range.
    pub fn patch(&mut self, at: usize, bytes: &[u8]) -> bool {
        if at > self.len || bytes.len() > self.len - at {
            return false;
        }
        // SAFETY: inside the pushed part of the writable view; see `push`.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.rw.add(at), bytes.len()) };
        true
    }

    /// Drops all code and gives its memory back to the host.
    pub fn clear(&mut self) {
        // SAFETY: MADV_REMOVE (memfd) or MADV_DONTNEED (anonymous) on our own mapping
        // discards its pages; they read as zero afterwards. No code there runs now.
        unsafe {
            let how = if self._fd.is_some() { libc::MADV_REMOVE } else { libc::MADV_DONTNEED };
            libc::madvise(self.rw.cast(), self.cap, how);
        }
        self.len = 0;
    }
}

impl Drop for CodeBuffer {
    fn drop(&mut self) {
        // SAFETY: unmapping our own views; no code in them runs any more.
        unsafe {
            if self.rx != self.rw {
                libc::munmap(self.rx.cast(), self.cap);
            }
            libc::munmap(self.rw.cast(), self.cap);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pushed_code_runs_and_patches_take_effect() {
        let mut b = CodeBuffer::new(1 << 20).unwrap();
        // mov eax, imm32; ret
        let at = b.push(&[0xb8, 1, 0, 0, 0, 0xc3]).unwrap();
        assert_eq!(at, 0);
        // SAFETY: the bytes just pushed are a complete C-ABI function returning an int.
        let f: extern "C" fn() -> u32 = unsafe { std::mem::transmute(b.base() + at) };
        assert_eq!(f(), 1);
        assert!(b.patch(at + 1, &42u32.to_le_bytes()));
        assert_eq!(f(), 42);
        assert!(!b.patch(at + 4, &[0; 4]), "a patch past the end is refused");
        let base = b.base();
        b.clear();
        assert_eq!(b.len(), 0);
        assert_eq!(b.base(), base, "the buffer never moves");
        assert!(b.push(&vec![0x90; b.capacity() + 1]).is_none());
    }
}
