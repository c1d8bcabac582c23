//! The page cache: (file identity, page index) → frame, shared by every process.
//!
//! Like Linux's, it outlives the processes that filled it: the second `exec` of a
//! program finds its pages (and those of `ld-linux.so.2` and `libc.so.6`) already in
//! frames, and maps the *same* frames. A file's identity includes its modification
//! time and size, so a file rewritten on the host is read afresh rather than served
//! stale.

use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::{FileExt, MetadataExt};

use crate::{Frame, MemError, PAGE_SIZE, PhysMem};

/// Identity of a file's contents: device, inode, modification time and size.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FileId {
    /// Host device.
    pub dev: u64,
    /// Host inode.
    pub ino: u64,
    /// Modification time in nanoseconds.
    pub mtime_ns: i64,
    /// Size in bytes.
    pub size: u64,
}

impl FileId {
    /// The identity of an open host file.
    pub fn of(file: &File) -> std::io::Result<FileId> {
        let m = file.metadata()?;
        Ok(FileId { dev: m.dev(), ino: m.ino(), mtime_ns: m.mtime() * 1_000_000_000 + m.mtime_nsec(), size: m.size() })
    }
}

/// Counters of the page cache.
#[derive(Clone, Copy, Debug, Default)]
pub struct PageCacheStats {
    /// Page lookups.
    pub lookups: u64,
    /// Lookups answered by a frame already in the cache.
    pub hits: u64,
    /// Pages read from files into new frames.
    pub fills: u64,
    /// Pages currently cached.
    pub pages: u64,
}

/// The machine-wide page cache.
#[derive(Default)]
pub struct PageCache {
    pages: HashMap<(FileId, u32), Frame>,
    stats: PageCacheStats,
}

impl PageCache {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// The frame holding page `index` of `file`, reading it on first use. The cache
    /// keeps one reference; the caller gets none (call [`PhysMem::retain`] to map it).
    pub fn page(&mut self, phys: &PhysMem, file: &File, id: FileId, index: u32) -> Result<Frame, MemError> {
        self.stats.lookups += 1;
        if let Some(&f) = self.pages.get(&(id, index)) {
            self.stats.hits += 1;
            return Ok(f);
        }
        let f = phys.alloc()?;
        // SAFETY: the frame is freshly allocated and not yet mapped anywhere else.
        let buf = unsafe { std::slice::from_raw_parts_mut(phys.frame_ptr(f), PAGE_SIZE as usize) };
        let off = u64::from(index) * u64::from(PAGE_SIZE);
        let mut done = 0;
        while done < buf.len() {
            match file.read_at(&mut buf[done..], off + done as u64) {
                Ok(0) => break, // past EOF: the rest stays zero
                Ok(n) => done += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(err) => {
                    phys.release(f);
                    return Err(MemError::Host { op: "read(page cache fill)", err });
                }
            }
        }
        self.stats.fills += 1;
        self.stats.pages += 1;
        self.pages.insert((id, index), f);
        Ok(f)
    }

    /// Counters.
    pub fn stats(&self) -> PageCacheStats {
        self.stats
    }
}
