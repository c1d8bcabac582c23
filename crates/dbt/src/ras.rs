//! The return stack (`--ras`): guest calls and returns paired with host calls and
//! returns, so that a guest `ret` in translated code is predicted by the host's
//! return-stack buffer instead of going through the jump cache.
//!
//! Translated code runs on a stack of its own (`rsp`), which holds one 16-byte entry per
//! guest call not yet returned from: the key `!EIP` of the return address and, above it,
//! the host return address that a host `call` pushed: a *landing pad* in the calling
//! translation just after that `call`. A guest `ret` adds the EIP it popped to the key
//! plus one: zero exactly when they match, and then it executes a host `ret 8` into the
//! pad, which sets r14d to the caller's page and jumps (a chain site) to the translation
//! of the return address. Otherwise (the guest rewrote its return address, `longjmp`,
//! `push; ret`, a signal handler returning elsewhere, a return to code called while
//! interpreting) the entry is popped and the return takes the jump cache. Entries carry
//! no tag: the engine empties the stack whenever the jump-cache tag changes (another
//! mapping, a translation dropped, a flush), so a pad is never reached in a translation
//! that died.
//!
//! The stack is bounded without touching the guest's flags: its lowest entry is at an
//! address whose low 32 bits are zero, and a call finding `esp` (the low half of the
//! host rsp) zero empties the stack before pushing (`mov ecx, esp; jrcxz`). An empty
//! stack holds one sentinel entry with key 0, which no return matches (`0 + EIP + 1` is
//! never zero in 64 bits) and which is never popped. Below the lowest entry lies headroom
//! for what runs on this stack besides entries (the fallback helper and host signal
//! handlers).

use crate::runtime::JitState;

/// Bytes of entries: 4,096 entries of 16 bytes.
const ENTRIES_BYTES: usize = 64 << 10;
/// Bytes below the lowest entry for the helper and signal handlers.
const HEADROOM: usize = 1 << 20;
/// The alignment of the lowest entry (its low 32 bits are zero).
const ALIGN: usize = 1 << 32;
/// A page left inaccessible below the headroom.
const GUARD: usize = 4096;

/// The return stack's memory (mapped for the engine's life).
pub(crate) struct ReturnStack {
    /// The mapping: guard, headroom, entries.
    map: *mut libc::c_void,
    len: usize,
    /// The stack pointer of an empty stack (the sentinel's address).
    empty: u64,
}

impl ReturnStack {
    /// Maps the stack (address space only; pages are touched as used).
    pub(crate) fn new() -> std::io::Result<ReturnStack> {
        let reserve = ALIGN + GUARD + HEADROOM + ENTRIES_BYTES;
        // SAFETY: a fresh private anonymous reservation, no memory of ours is affected.
        let start = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                reserve,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if start == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        let start_addr = start as usize;
        let base = (start_addr + GUARD + HEADROOM).next_multiple_of(ALIGN);
        let lo = base - HEADROOM - GUARD;
        let hi = base + ENTRIES_BYTES;
        // SAFETY: the ranges are inside the reservation just made: the parts outside
        // [lo, hi) are given back, the headroom and the entries made read-write.
        unsafe {
            if lo > start_addr {
                libc::munmap(start, lo - start_addr);
            }
            if start_addr + reserve > hi {
                libc::munmap(hi as *mut libc::c_void, start_addr + reserve - hi);
            }
            if libc::mprotect((lo + GUARD) as *mut libc::c_void, hi - lo - GUARD, libc::PROT_READ | libc::PROT_WRITE)
                != 0
            {
                let e = std::io::Error::last_os_error();
                libc::munmap(lo as *mut libc::c_void, hi - lo);
                return Err(e);
            }
        }
        let empty = (hi - 16) as u64;
        // The sentinel: key 0 (never matched), host address 0 (never used).
        // SAFETY: `empty` and `empty + 8` are in the read-write entries just mapped.
        unsafe {
            std::ptr::write(empty as *mut u64, 0);
            std::ptr::write((empty + 8) as *mut u64, 0);
        }
        Ok(ReturnStack { map: lo as *mut libc::c_void, len: hi - lo, empty })
    }

    /// Points `st` at this stack, empty.
    pub(crate) fn attach(&self, st: &mut JitState) {
        st.ras_empty = self.empty;
        st.ras_empty_neg = self.empty.wrapping_neg();
        st.ras_sp = self.empty;
    }

    /// Empties the stack `st` uses (its entries might match again: tags wrapped).
    pub(crate) fn clear(&self, st: &mut JitState) {
        st.ras_sp = self.empty;
    }
}

impl Drop for ReturnStack {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, no longer used (translated code runs only
        // while the engine, which owns this, is borrowed).
        unsafe {
            libc::munmap(self.map, self.len);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lowest_entry_has_zero_low_bits_and_the_sentinel_is_in_place() {
        let r = ReturnStack::new().unwrap();
        let lowest = r.empty + 16 - ENTRIES_BYTES as u64;
        assert_eq!(lowest & 0xffff_ffff, 0);
        // SAFETY: reading the sentinel written by `new`.
        assert_eq!(unsafe { std::ptr::read((r.empty + 8) as *const u64) }, 0);
        let mut st = JitState::default();
        r.attach(&mut st);
        assert_eq!(st.ras_sp, r.empty);
        assert_eq!(st.ras_empty.wrapping_add(st.ras_empty_neg), 0);
    }
}
