//! The machine's futex waiters: who waits on which futex, in arrival order, and who
//! has been woken (the handlers are in [`crate::syscall`]'s futex family).

use std::collections::BTreeSet;

use crate::process::Pid;

/// What a futex is known by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FutexKey {
    /// A futex private to a thread group: (pid, virtual address).
    Private(Pid, u32),
    /// A futex in shared memory: its physical address.
    Shared(u64),
}

#[derive(Debug)]
struct Waiter {
    key: FutexKey,
    tid: Pid,
    bitset: u32,
}

/// The threads waiting on futexes (in the order they started waiting) and those woken
/// whose call has not been re-run yet.
#[derive(Debug, Default)]
pub(crate) struct FutexTable {
    waiters: Vec<Waiter>,
    pub(crate) woken: BTreeSet<Pid>,
}

impl FutexTable {
    /// Forgets thread `tid` (its wait was interrupted or timed out, or it died).
    pub(crate) fn cancel(&mut self, tid: Pid) {
        self.waiters.retain(|w| w.tid != tid);
        self.woken.remove(&tid);
    }

    /// Whether `tid` has been woken.
    pub(crate) fn is_woken(&self, tid: Pid) -> bool {
        self.woken.contains(&tid)
    }

    /// Whether `tid` has been woken; it is no longer, after.
    pub(crate) fn take_woken(&mut self, tid: Pid) -> bool {
        self.woken.remove(&tid)
    }

    pub(crate) fn wait(&mut self, key: FutexKey, tid: Pid, bitset: u32) {
        self.cancel(tid);
        self.waiters.push(Waiter { key, tid, bitset });
    }

    /// Wakes up to `n` waiters on `key` whose bitset meets `bitset`; returns how many.
    pub(crate) fn wake(&mut self, key: FutexKey, n: u32, bitset: u32) -> u32 {
        let mut woken = 0;
        let mut i = 0;
        while i < self.waiters.len() && woken < n {
            let w = &self.waiters[i];
            if w.key == key && w.bitset & bitset != 0 {
                let w = self.waiters.remove(i);
                self.woken.insert(w.tid);
                woken += 1;
            } else {
                i += 1;
            }
        }
        woken
    }

    /// Wakes the first waiter on `key` (a PI futex's next owner); returns its tid.
    pub(crate) fn wake_first(&mut self, key: FutexKey) -> Option<Pid> {
        let i = self.waiters.iter().position(|w| w.key == key)?;
        let w = self.waiters.remove(i);
        self.woken.insert(w.tid);
        Some(w.tid)
    }

    /// Whether a thread waits on `key`.
    pub(crate) fn has_waiters(&self, key: FutexKey) -> bool {
        self.waiters.iter().any(|w| w.key == key)
    }

    /// Wakes up to `nwake` waiters on `from` and moves up to `nmove` more to `to`;
    /// returns how many were woken plus how many were moved.
    pub(crate) fn requeue(&mut self, from: FutexKey, to: FutexKey, nwake: u32, nmove: u32) -> u32 {
        let woken = self.wake(from, nwake, u32::MAX);
        let mut moved = 0;
        for w in self.waiters.iter_mut() {
            if moved >= nmove {
                break;
            }
            if w.key == from {
                w.key = to;
                moved += 1;
            }
        }
        woken + moved
    }
}
