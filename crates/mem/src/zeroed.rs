//! Large tables in memory the host hands out as untouched zero pages.
//!
//! `calloc` gives zero pages for free only when it maps a fresh chunk; from a heap that
//! already holds enough free memory (morph grows its heap once, by 64 MiB, at start) it
//! clears the chunk with `memset`, touching every page of a table that is mostly never
//! used (the per-frame code flags: 1 MiB for 4 GiB of guest memory; the jump cache: 1
//! MiB). An anonymous mapping of its own costs one `mmap` and the pages actually used.

use std::ptr::NonNull;

/// `len` values of `T` in an anonymous mapping of their own, all bytes zero at first.
pub struct ZeroedSlice<T> {
    ptr: NonNull<T>,
    len: usize,
}

impl<T> ZeroedSlice<T> {
    /// Maps `len` zeroed values (at least one byte is mapped).
    ///
    /// # Safety
    /// All-zero bytes must be a valid `T`.
    pub unsafe fn new(len: usize) -> std::io::Result<ZeroedSlice<T>> {
        const { assert!(std::mem::align_of::<T>() <= 4096) };
        let bytes = Self::bytes(len);
        // SAFETY: a fresh private anonymous mapping, whose result is checked; no memory
        // of ours is affected.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        let ptr = NonNull::new(p.cast::<T>()).ok_or_else(|| std::io::Error::other("mmap returned null"))?;
        Ok(ZeroedSlice { ptr, len })
    }

    fn bytes(len: usize) -> usize {
        (len * std::mem::size_of::<T>()).max(1)
    }
}

impl<T> std::ops::Deref for ZeroedSlice<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        // SAFETY: the mapping holds `len` values, valid as zeroes (`new`'s contract) or
        // as written since through `deref_mut`; it lives as long as `self`.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl<T> std::ops::DerefMut for ZeroedSlice<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as in `deref`, and `&mut self` makes the borrow unique.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl<T> Drop for ZeroedSlice<T> {
    fn drop(&mut self) {
        // SAFETY: drops the values in place, then unmaps the mapping made in `new`, which
        // nothing borrows any more.
        unsafe {
            std::ptr::drop_in_place(std::ptr::slice_from_raw_parts_mut(self.ptr.as_ptr(), self.len));
            libc::munmap(self.ptr.as_ptr().cast(), Self::bytes(self.len));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_zeroed_and_keeps_what_is_written() {
        // SAFETY: zero is a valid u64.
        let mut s = unsafe { ZeroedSlice::<u64>::new(1 << 17) }.unwrap();
        assert_eq!(s.len(), 1 << 17);
        assert!(s.iter().all(|&v| v == 0));
        s[12345] = 7;
        assert_eq!(s[12345], 7);
        // SAFETY: an empty slice still maps a byte.
        let e = unsafe { ZeroedSlice::<u8>::new(0) }.unwrap();
        assert!(e.is_empty());
    }
}
