//! Advisory file locks between the machine's processes: POSIX record locks (`fcntl`'s
//! `F_SETLK`, `F_SETLKW`, `F_GETLK`) and `flock` locks, kept by morph because every
//! guest process is one host process (the host's locks, per host process, would never
//! conflict).
//!
//! A record lock belongs to a process (its thread group) and a byte range of a file
//! (device, inode); a `flock` lock to an open file description. Linux drops a process's
//! record locks on a file when it closes *any* descriptor of it, and at exit; morph
//! drops them at `close` and at the implicit close of `dup2`/`dup3`, and otherwise
//! (exit, `exec`'s close-on-exec) when they are next looked at and the process no
//! longer exists or has no descriptor of the file (`FileCtx::lock_conflict`). A `flock`
//! lock lives as long as its open file description. A waiter (`F_SETLKW`, `flock`
//! without `LOCK_NB`) looks again every millisecond; deadlocks are not detected
//! (`EDEADLK`), and open-file-description record locks (`F_OFD_*`) are `EINVAL`.

use std::collections::HashMap;
use std::rc::{Rc, Weak};

use morph_mem::FileKey;

use crate::files::OpenFile;
use crate::process::Pid;

/// A record lock: `[start, end)` (`end` `u64::MAX`: to the end of the file, however
/// long it grows).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RangeLock {
    /// The process (thread group) holding it.
    pub pid: Pid,
    /// Its first byte.
    pub start: u64,
    /// Past its last byte.
    pub end: u64,
    /// Exclusive (`F_WRLCK`), else shared (`F_RDLCK`).
    pub write: bool,
}

/// A `flock` lock.
#[derive(Clone, Debug)]
struct FileLock {
    owner: Weak<OpenFile>,
    write: bool,
}

/// The machine's locks, by file.
#[derive(Default)]
pub struct Locks {
    ranges: HashMap<FileKey, Vec<RangeLock>>,
    files: HashMap<FileKey, Vec<FileLock>>,
}

impl Locks {
    /// The first record lock on `key` of another process than `pid` that a lock of
    /// `[start, end)` (`write`: exclusive) conflicts with, among those `live` keeps.
    pub fn conflict(
        &mut self,
        key: FileKey,
        pid: Pid,
        start: u64,
        end: u64,
        write: bool,
        live: impl Fn(Pid) -> bool,
    ) -> Option<RangeLock> {
        let v = self.ranges.get_mut(&key)?;
        v.retain(|l| l.pid == pid || live(l.pid));
        v.iter().find(|l| l.pid != pid && l.start < end && start < l.end && (write || l.write)).copied()
    }

    /// Sets `pid`'s lock on `[start, end)` of `key` to `kind` (`None`: unlocks): its
    /// locks there are cut out and the new one put in.
    pub fn set(&mut self, key: FileKey, pid: Pid, start: u64, end: u64, kind: Option<bool>) {
        let v = self.ranges.entry(key).or_default();
        let mut kept = Vec::with_capacity(v.len() + 2);
        for l in v.drain(..) {
            if l.pid != pid || l.end <= start || end <= l.start {
                kept.push(l);
                continue;
            }
            if l.start < start {
                kept.push(RangeLock { end: start, ..l });
            }
            if end < l.end {
                kept.push(RangeLock { start: end, ..l });
            }
        }
        if let Some(write) = kind {
            kept.push(RangeLock { pid, start, end, write });
        }
        *v = kept;
        if v.is_empty() {
            self.ranges.remove(&key);
        }
    }

    /// Whether another open file description than `owner` holds a `flock` lock on `key`
    /// that one of kind `write` conflicts with.
    pub fn file_conflict(&mut self, key: FileKey, owner: &Rc<OpenFile>, write: bool) -> bool {
        let Some(v) = self.files.get_mut(&key) else { return false };
        v.retain(|l| l.owner.strong_count() > 0);
        v.iter().any(|l| !std::ptr::eq(l.owner.as_ptr(), Rc::as_ptr(owner)) && (write || l.write))
    }

    /// Sets the `flock` lock of `owner` on `key` (`None`: unlocks).
    pub fn set_file(&mut self, key: FileKey, owner: &Rc<OpenFile>, kind: Option<bool>) {
        let v = self.files.entry(key).or_default();
        v.retain(|l| l.owner.strong_count() > 0 && !std::ptr::eq(l.owner.as_ptr(), Rc::as_ptr(owner)));
        if let Some(write) = kind {
            v.push(FileLock { owner: Rc::downgrade(owner), write });
        }
        if v.is_empty() {
            self.files.remove(&key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> FileKey {
        FileKey { dev: 1, ino: 2 }
    }

    #[test]
    fn record_locks_split_merge_and_conflict() {
        let mut l = Locks::default();
        l.set(key(), 1, 0, 100, Some(false));
        // Readers share; a writer conflicts.
        assert_eq!(l.conflict(key(), 2, 50, 60, false, |_| true), None);
        assert_eq!(l.conflict(key(), 2, 50, 60, true, |_| true).map(|c| c.pid), Some(1));
        // Its own locks never conflict; a write lock in the middle splits the read lock.
        assert_eq!(l.conflict(key(), 1, 0, 10, true, |_| true), None);
        l.set(key(), 1, 40, 60, Some(true));
        assert_eq!(l.conflict(key(), 2, 0, 40, false, |_| true), None);
        assert_eq!(l.conflict(key(), 2, 45, 46, false, |_| true).map(|c| (c.start, c.end)), Some((40, 60)));
        // Unlocking part of it leaves the rest.
        l.set(key(), 1, 0, 50, None);
        assert_eq!(l.conflict(key(), 2, 0, 50, true, |_| true), None);
        assert_eq!(
            l.conflict(key(), 2, 55, 56, false, |_| true).map(|c| (c.start, c.end, c.write)),
            Some((50, 60, true))
        );
        assert_eq!(
            l.conflict(key(), 2, 70, 71, true, |_| true).map(|c| (c.start, c.end, c.write)),
            Some((60, 100, false))
        );
        // A lock whose process is gone is dropped.
        assert_eq!(l.conflict(key(), 2, 0, u64::MAX, true, |_| false), None);
        assert!(l.ranges.is_empty() || l.ranges[&key()].is_empty());
    }
}
