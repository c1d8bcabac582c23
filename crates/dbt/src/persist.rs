//! The persistent translation cache's store (`--tcache-dir DIR`): translations kept on
//! disk across morph runs, one file per guest module (a file that backs code), so that a
//! later run — another seed, another ASLR layout, another process — loads them instead
//! of interpreting and translating again (as DynamoRIO's and Pin's persistent caches,
//! FEX's and box64's disk caches do).
//!
//! This module is only the store: it knows nothing of host code. An [`Entry`] is an
//! opaque payload (a relocatable translation, made and checked by the engine) filed
//! under the offset of its code in the module and a hash of the guest bytes it was
//! made from; the engine uses an entry only where the guest bytes it sees hash the
//! same, so a file changed in place cannot bring stale code back.
//!
//! # Trust
//!
//! A cache file is loaded only if all of these hold; otherwise it is ignored and
//! counted in [`StoreStats::rejected`], never executed:
//! - its magic, format version and **build** (given by the engine: a hash of morph's
//!   version, the translator revision and the identity of morph's executable) are this
//!   morph's: code from another build is foreign;
//! - it names the module it is read for (the name is a hash of the identity, so a
//!   collision or a renamed file is caught);
//! - every length is consistent with the file's size (a truncated file is caught);
//! - its MAC, a keyed BLAKE3 hash of everything before it, verifies under the
//!   directory's secret key (`DIR/key`, 32 random bytes, mode 0600, made at first use).
//!   A corrupted file fails it; so does a file written by anyone who cannot read the
//!   key — another user sharing the directory, a file copied from elsewhere.
//!
//! The key is only as secret as the directory's owner keeps it: the threat model is
//! corruption, foreign builds and other users, not the owner's own processes.
//!
//! # Layout and concurrency
//!
//! A module file is a header (magic, format, build, module name) followed by
//! **segments**, each a batch of entries with its own MAC (a keyed BLAKE3 hash of the
//! header and the segment), so that a run adds what it translated by appending one
//! segment instead of reading, merging and rewriting the whole file (a library's file
//! holds thousands of translations, megabytes; a warm run adds a handful). A file is
//! read through a read-only mapping: nothing is copied, and a payload's pages are read
//! only when its translation is loaded. A segment that does not verify — cut short by a
//! crash during an append, or damaged — ends the file: the segments before it are used,
//! and the next writer rewrites the file whole (as it does once a file has
//! [`MAX_SEGMENTS`]).
//!
//! Runs may share a directory. A writer takes an exclusive lock on `DIR/lock`; it
//! appends to a module's file, or writes a new file in `DIR` and renames it over the old
//! one. Readers take no lock and never see a file change under them: an append lies
//! past the end of a reader's mapping, and a rename leaves the old file's bytes as they
//! were. After writing, files beyond the size limit are evicted, least recently used
//! first (a load touches a file).

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::ops::Range;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// The file format's version: bump it whenever the layout below changes (2: appended,
/// separately authenticated segments).
const FORMAT: u32 = 2;
const MAGIC: &[u8; 8] = b"MORPHTC\0";
/// The translator's revision, part of the build hash: bump it whenever translated code
/// changes in a way the version and commit would not show (a dirty tree).
const TRANSLATOR_REVISION: u32 = 1;
const MAC_LEN: usize = 32;
/// Header: magic, format, build, module name.
const HEADER_LEN: usize = 8 + 4 + 32 + 32;
/// Per segment before its entries: their length in bytes and their number.
const SEGMENT_HEAD: usize = 4 + 4;
/// Per entry before the payload: offset, guest length, guest hash, payload length.
const ENTRY_HEAD: usize = 4 + 4 + 32 + 4;
/// Segments a file may have before a writer rewrites it as one.
const MAX_SEGMENTS: usize = 32;
/// A sanity bound on one file (a module's translations are a few MiB at most).
const MAX_FILE: u64 = 1 << 30;

/// What identifies a module: the file's device and inode, and its change stamp (size
/// and modification time), so a file replaced or rewritten is another module.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ModuleId {
    /// Device of the file.
    pub dev: u64,
    /// Inode of the file.
    pub ino: u64,
    /// Size in bytes.
    pub size: u64,
    /// Modification time, nanoseconds since the epoch.
    pub mtime_ns: i64,
}

impl ModuleId {
    /// The identity of an open file.
    pub fn of(file: &File) -> io::Result<ModuleId> {
        use std::os::unix::fs::MetadataExt;
        let m = file.metadata()?;
        Ok(ModuleId {
            dev: m.dev(),
            ino: m.ino(),
            size: m.size(),
            mtime_ns: m.mtime().saturating_mul(1_000_000_000).saturating_add(m.mtime_nsec()),
        })
    }

    /// The module's name in the store: a hash of the identity.
    fn name(&self) -> [u8; 32] {
        let mut h = blake3::Hasher::new();
        h.update(b"morph module id");
        for v in [self.dev, self.ino, self.size, self.mtime_ns as u64] {
            h.update(&v.to_le_bytes());
        }
        *h.finalize().as_bytes()
    }

    fn file_name(&self) -> String {
        let hex: String = self.name()[..16].iter().map(|b| format!("{b:02x}")).collect();
        format!("{hex}.tc")
    }
}

/// One stored translation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// Offset of the translated code in the module (the file).
    pub offset: u32,
    /// Length of the guest code it was made from.
    pub guest_len: u32,
    /// Hash of those guest bytes ([`guest_hash`]).
    pub guest_hash: [u8; 32],
    /// The relocatable translation, as the engine wrote it.
    pub payload: Vec<u8>,
}

/// The hash the store files guest bytes under.
pub fn guest_hash(bytes: &[u8]) -> [u8; 32] {
    *blake3::hash(bytes).as_bytes()
}

/// An entry of a loaded module file: its payload stays in the file's mapping.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listed {
    /// Offset of the translated code in the module.
    pub offset: u32,
    /// Length of the guest code it was made from.
    pub guest_len: u32,
    /// Hash of those guest bytes ([`guest_hash`]).
    pub guest_hash: [u8; 32],
    /// Where the payload lies in the file.
    payload: Range<usize>,
}

/// A module file as loaded: the entries of its segments that verified, over a read-only
/// mapping of the file (see the module docs for why it never changes under it).
pub struct ModuleFile {
    map: memmap2::Mmap,
    /// The file's inode, and what [`Store::parse`] found: a writer that finds the file
    /// as it was loaded (same inode and length) need not read it again.
    ino: u64,
    parsed: Parsed,
}

impl ModuleFile {
    /// The entries, in the order they were stored.
    pub fn entries(&self) -> &[Listed] {
        &self.parsed.entries
    }

    /// The payload of `e`, one of [`ModuleFile::entries`].
    pub fn payload(&self, e: &Listed) -> &[u8] {
        self.map.get(e.payload.clone()).unwrap_or_default()
    }

    /// Owned copies of the entries.
    pub fn to_entries(&self) -> Vec<Entry> {
        self.parsed.entries.iter().map(|e| own(e, &self.map)).collect()
    }
}

/// An owned copy of `e`, listed in the file bytes `b`.
fn own(e: &Listed, b: &[u8]) -> Entry {
    Entry {
        offset: e.offset,
        guest_len: e.guest_len,
        guest_hash: e.guest_hash,
        payload: b.get(e.payload.clone()).unwrap_or_default().to_vec(),
    }
}

/// What [`Store::parse`] found in a file.
#[derive(Debug, PartialEq, Eq)]
pub struct Parsed {
    /// The entries of the segments that verified, in order.
    pub entries: Vec<Listed>,
    /// How many segments verified.
    pub segments: usize,
    /// Whether a segment after those did not verify (cut short or damaged): the file
    /// is used up to it and rewritten by the next writer.
    pub damaged_tail: bool,
}

impl Parsed {
    /// Whether a writer may append a segment to the file (else it rewrites it whole).
    fn appendable(&self) -> bool {
        !self.damaged_tail && self.segments < MAX_SEGMENTS
    }
}

/// The store's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StoreStats {
    /// Module files read and accepted.
    pub files_loaded: u64,
    /// Entries in them.
    pub entries_loaded: u64,
    /// Files ignored: truncated, corrupt, foreign (format or build) or failing the MAC.
    pub rejected: u64,
    /// Entries written (new ones; merged ones kept are not counted again).
    pub stored: u64,
    /// Files evicted by the size limit.
    pub evicted: u64,
}

/// Why a file was not loaded (for tests and diagnostics).
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub enum Reject {
    /// Shorter than its header or its lengths say.
    Truncated,
    /// Not a morph translation cache file.
    BadMagic,
    /// Another format version or another morph build.
    Foreign,
    /// Filed under another module.
    OtherModule,
    /// The MAC does not verify: corrupt, or written without this directory's key.
    BadMac,
}

/// A persistent translation cache directory.
pub struct Store {
    dir: PathBuf,
    key: [u8; 32],
    build: [u8; 32],
    limit: u64,
    stats: StoreStats,
}

impl Store {
    /// Opens (making if needed) the store in `dir`, keeping at most `limit` bytes of
    /// module files. `build` identifies the morph build (see [`build_id`]).
    pub fn open(dir: &Path, limit: u64, build: [u8; 32]) -> io::Result<Store> {
        fs::create_dir_all(dir)?;
        let key = secret_key(dir)?;
        Ok(Store { dir: dir.to_path_buf(), key, build, limit, stats: StoreStats::default() })
    }

    /// The counters.
    pub fn stats(&self) -> StoreStats {
        self.stats
    }

    /// The entries stored for `module`, if its file is there and valid; an invalid file
    /// (or an invalid segment after valid ones) is ignored and counted.
    pub fn load(&mut self, module: &ModuleId) -> Option<ModuleFile> {
        let path = self.dir.join(module.file_name());
        let (map, ino) = match map_bounded(&path) {
            Ok(m) => m,
            Err(e) => {
                // Missing is a cold module; too large or another user's is refused.
                self.stats.rejected += u64::from(e.kind() != io::ErrorKind::NotFound);
                return None;
            }
        };
        match self.parse(module, &map) {
            Ok(p) => {
                self.stats.files_loaded += 1;
                self.stats.entries_loaded += p.entries.len() as u64;
                self.stats.rejected += u64::from(p.damaged_tail);
                // Recently used: the last to be evicted.
                if let Ok(f) = File::options().write(true).open(&path) {
                    let _ = f.set_modified(SystemTime::now());
                }
                Some(ModuleFile { map, ino, parsed: p })
            }
            Err(_) => {
                self.stats.rejected += 1;
                None
            }
        }
    }

    /// Adds `entries` to `module`'s file (those already there, or twice in `entries`,
    /// for the same offset and guest hash are kept once): one segment appended, or the
    /// file written anew if it is missing, invalid, damaged after its valid segments or
    /// has [`MAX_SEGMENTS`]; then evicts beyond the limit. `loaded` is the file as this
    /// run loaded it, if it did: unless another run changed it since, it is not read
    /// again.
    pub fn store(&mut self, module: &ModuleId, entries: &[Entry], loaded: Option<&ModuleFile>) -> io::Result<()> {
        use std::os::unix::fs::MetadataExt;
        if entries.is_empty() {
            return Ok(());
        }
        let lock =
            OpenOptions::new().create(true).truncate(false).write(true).mode(0o600).open(self.dir.join("lock"))?;
        lock.lock()?;
        let path = self.dir.join(module.file_name());
        let now = fs::metadata(&path).ok().map(|m| (m.ino(), m.len()));
        let read;
        // The file as parsed, over its bytes.
        let old: Option<(&Parsed, &[u8])> = match loaded {
            Some(f) if now == Some((f.ino, f.map.len() as u64)) => Some((&f.parsed, &f.map)),
            _ => {
                read = now.and_then(|_| {
                    let (map, _) = map_bounded(&path).ok()?;
                    Some((self.parse(module, &map).ok()?, map))
                });
                read.as_ref().map(|(p, map)| (p, &map[..]))
            }
        };
        let mut known: rustc_hash::FxHashSet<(u32, [u8; 32])> =
            old.iter().flat_map(|(p, _)| p.entries.iter().map(|e| (e.offset, e.guest_hash))).collect();
        let fresh: Vec<&Entry> = entries.iter().filter(|e| known.insert((e.offset, e.guest_hash))).collect();
        if !fresh.is_empty() {
            match old {
                Some((p, _)) if p.appendable() => {
                    // A failed append leaves a segment that does not verify: readers stop
                    // before it and the next writer rewrites the file.
                    OpenOptions::new().append(true).open(&path)?.write_all(&self.segment(module, &fresh))?;
                }
                _ => {
                    let kept: Vec<Entry> = old.iter().flat_map(|(p, b)| p.entries.iter().map(|e| own(e, b))).collect();
                    let all: Vec<&Entry> = kept.iter().chain(fresh.iter().copied()).collect();
                    let mut tmp = tempfile::NamedTempFile::new_in(&self.dir)?;
                    // No fsync: after a crash a file that lost its data fails its MAC and
                    // is rejected, and the rename keeps readers from ever seeing half a
                    // file.
                    tmp.write_all(&self.header(module))?;
                    tmp.write_all(&self.segment(module, &all))?;
                    tmp.persist(&path).map_err(|e| e.error)?;
                }
            }
            self.stats.stored += fresh.len() as u64;
        }
        self.evict()?;
        drop(lock); // unlocks
        Ok(())
    }

    /// Deletes module files, least recently used first, until the rest fit the limit.
    fn evict(&mut self) -> io::Result<()> {
        let mut files: Vec<(SystemTime, u64, PathBuf)> = Vec::new();
        for d in fs::read_dir(&self.dir)? {
            let d = d?;
            let p = d.path();
            if p.extension().is_some_and(|x| x == "tc") {
                let m = d.metadata()?;
                files.push((m.modified()?, m.len(), p));
            }
        }
        let mut total: u64 = files.iter().map(|f| f.1).sum();
        files.sort();
        for (_, len, p) in files {
            if total <= self.limit {
                break;
            }
            if fs::remove_file(&p).is_ok() {
                total -= len;
                self.stats.evicted += 1;
            }
        }
        Ok(())
    }

    /// A file's header: magic, format, build and module name.
    fn header(&self, module: &ModuleId) -> Vec<u8> {
        let mut b = Vec::with_capacity(HEADER_LEN);
        b.extend_from_slice(MAGIC);
        b.extend_from_slice(&FORMAT.to_le_bytes());
        b.extend_from_slice(&self.build);
        b.extend_from_slice(&module.name());
        b
    }

    /// The MAC of a segment (`seg`: its head and entries) of `module`'s file, whose
    /// header it covers too: a segment moved to another module's file does not verify.
    fn mac(&self, header: &[u8], seg: &[u8]) -> blake3::Hash {
        let mut h = blake3::Hasher::new_keyed(&self.key);
        h.update(header);
        h.update(seg);
        h.finalize()
    }

    /// A segment of `module`'s file holding `entries`.
    fn segment(&self, module: &ModuleId, entries: &[&Entry]) -> Vec<u8> {
        let len: usize = entries.iter().map(|e| ENTRY_HEAD + e.payload.len()).sum();
        let mut b = Vec::with_capacity(SEGMENT_HEAD + len + MAC_LEN);
        b.extend_from_slice(&(len as u32).to_le_bytes());
        b.extend_from_slice(&(entries.len() as u32).to_le_bytes());
        for e in entries {
            b.extend_from_slice(&e.offset.to_le_bytes());
            b.extend_from_slice(&e.guest_len.to_le_bytes());
            b.extend_from_slice(&e.guest_hash);
            b.extend_from_slice(&(e.payload.len() as u32).to_le_bytes());
            b.extend_from_slice(&e.payload);
        }
        let mac = self.mac(&self.header(module), &b);
        b.extend_from_slice(mac.as_bytes());
        b
    }

    /// Checks a module file and lists the entries of its segments, up to the first one
    /// that does not verify (see the module docs for what is checked). At least one
    /// segment must verify.
    pub fn parse(&self, module: &ModuleId, b: &[u8]) -> Result<Parsed, Reject> {
        if b.len() < HEADER_LEN + SEGMENT_HEAD + MAC_LEN {
            return Err(Reject::Truncated);
        }
        if &b[..8] != MAGIC {
            return Err(Reject::BadMagic);
        }
        if b[8..12] != FORMAT.to_le_bytes() || b[12..44] != self.build {
            return Err(Reject::Foreign);
        }
        if b[44..76] != module.name() {
            return Err(Reject::OtherModule);
        }
        let mut p = Parsed { entries: Vec::new(), segments: 0, damaged_tail: false };
        let mut at = HEADER_LEN;
        while at < b.len() {
            match self.segment_at(b, at, &mut p.entries) {
                Ok(next) => {
                    at = next;
                    p.segments += 1;
                }
                Err(r) if p.segments == 0 => return Err(r),
                Err(_) => {
                    p.damaged_tail = true;
                    break;
                }
            }
        }
        Ok(p)
    }

    /// Checks the segment at `at` of file `b` (whose header is checked) and appends its
    /// entries to `out`; returns where the next segment starts.
    fn segment_at(&self, b: &[u8], at: usize, out: &mut Vec<Listed>) -> Result<usize, Reject> {
        let mut r = Reader { b, at };
        let len = r.u32()? as usize;
        let n = r.u32()?;
        let start = r.at;
        r.take(len)?;
        let end = r.at;
        let mac = r.take(MAC_LEN)?;
        let want = self.mac(&b[..HEADER_LEN], &b[at..end]);
        // blake3::Hash compares in constant time.
        if blake3::Hash::from_bytes(mac.try_into().map_err(|_| Reject::Truncated)?) != want {
            return Err(Reject::BadMac);
        }
        let mut e = Reader { b: &b[..end], at: start };
        let mut list = Vec::new();
        for _ in 0..n {
            let offset = e.u32()?;
            let guest_len = e.u32()?;
            let guest_hash = e.take(32)?.try_into().map_err(|_| Reject::Truncated)?;
            let len = e.u32()? as usize;
            let from = e.at;
            e.take(len)?;
            list.push(Listed { offset, guest_len, guest_hash, payload: from..e.at });
        }
        if e.at != end {
            return Err(Reject::Truncated);
        }
        out.append(&mut list);
        Ok(r.at)
    }
}

/// The build hash of this morph: its version, the commit it was built from (when
/// known) and the translator's revision.
pub fn build_id(version: &str, commit: &str) -> [u8; 32] {
    let mut h = blake3::Hasher::new();
    h.update(b"morph build");
    h.update(version.as_bytes());
    h.update(b"\0");
    h.update(commit.as_bytes());
    h.update(&TRANSLATOR_REVISION.to_le_bytes());
    *h.finalize().as_bytes()
}

/// A bounds-checked cursor over a file's bytes.
struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], Reject> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.b.len()).ok_or(Reject::Truncated)?;
        let s = &self.b[self.at..end];
        self.at = end;
        Ok(s)
    }

    fn u32(&mut self) -> Result<u32, Reject> {
        let s = self.take(4)?;
        Ok(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
    }
}

/// Maps a whole file read-only, refusing one beyond `MAX_FILE`; with its inode.
fn map_bounded(path: &Path) -> io::Result<(memmap2::Mmap, u64)> {
    use std::os::unix::fs::MetadataExt;
    let f = File::open(path)?;
    let m = f.metadata()?;
    if m.len() > MAX_FILE {
        return Err(io::Error::other("translation cache file too large"));
    }
    // SAFETY: geteuid has no preconditions.
    if m.uid() != unsafe { libc::geteuid() } {
        // Another user's file cannot verify (the key is ours alone), and its owner could
        // truncate it under the mapping.
        return Err(io::Error::other("translation cache file of another user"));
    }
    // SAFETY: the store's files are never written in place (see the module docs): a
    // writer appends past the end of this mapping or renames another file over this one,
    // which leaves these bytes as they are. The file is this user's (checked above) in
    // a directory made 0700: only this user truncating it while a run maps it could
    // change what is mapped.
    Ok((unsafe { memmap2::Mmap::map(&f) }?, m.ino()))
}

/// The directory's secret key: read from `DIR/key`, or made (32 random bytes from the
/// host, mode 0600, created exclusively so that concurrent first runs agree).
fn secret_key(dir: &Path) -> io::Result<[u8; 32]> {
    let path = dir.join("key");
    loop {
        match fs::read(&path) {
            Ok(k) if k.len() == 32 => {
                let mut key = [0u8; 32];
                key.copy_from_slice(&k);
                return Ok(key);
            }
            Ok(_) => return Err(io::Error::other(format!("{}: not a translation cache key", path.display()))),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                let mut key = [0u8; 32];
                File::open("/dev/urandom")?.read_exact(&mut key)?;
                // Written under a temporary name and linked into place: a reader never
                // sees a partial key, and only one run's key wins.
                let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
                tmp.write_all(&key)?;
                tmp.as_file().sync_data()?;
                match tmp.persist_noclobber(&path) {
                    Ok(_) => return Ok(key),
                    Err(e) if e.error.kind() == io::ErrorKind::AlreadyExists => continue,
                    Err(e) => return Err(e.error),
                }
            }
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn module(n: u64) -> ModuleId {
        ModuleId { dev: 1, ino: n, size: 4096, mtime_ns: 7 }
    }

    fn entry(offset: u32, payload: &[u8]) -> Entry {
        let guest = [offset as u8; 8];
        Entry { offset, guest_len: 8, guest_hash: guest_hash(&guest), payload: payload.to_vec() }
    }

    fn store(dir: &Path) -> Store {
        Store::open(dir, 1 << 20, build_id("0.1.0", "test")).unwrap()
    }

    fn file_of(dir: &Path, m: &ModuleId) -> PathBuf {
        dir.join(m.file_name())
    }

    #[test]
    fn entries_round_trip_and_merge() {
        let d = tempfile::tempdir().unwrap();
        let mut s = store(d.path());
        s.store(&module(1), &[entry(0x10, b"abc"), entry(0x20, b"")], None).unwrap();
        s.store(&module(1), &[entry(0x20, b""), entry(0x30, b"xyz")], None).unwrap();
        let mut t = store(d.path());
        let got = t.load(&module(1)).unwrap();
        assert_eq!(got.to_entries(), vec![entry(0x10, b"abc"), entry(0x20, b""), entry(0x30, b"xyz")]);
        assert_eq!(got.payload(&got.entries()[2]), b"xyz");
        assert_eq!(t.stats().files_loaded, 1);
        assert_eq!(s.stats().stored, 3);
        assert!(t.load(&module(2)).is_none());
        assert_eq!(t.stats().rejected, 0);
        // The second store appended a segment of the one new entry.
        let b = fs::read(file_of(d.path(), &module(1))).unwrap();
        assert_eq!(s.parse(&module(1), &b).map(|p| (p.segments, p.damaged_tail)), Ok((2, false)));
    }

    #[test]
    fn truncated_corrupt_foreign_and_keyless_files_are_rejected() {
        let d = tempfile::tempdir().unwrap();
        let mut s = store(d.path());
        let m = module(1);
        s.store(&m, &[entry(0x10, b"payload bytes")], None).unwrap();
        let good = fs::read(file_of(d.path(), &m)).unwrap();
        assert_eq!(s.parse(&m, &good).map(|p| p.entries.len()), Ok(1));

        for cut in [0, 10, HEADER_LEN, good.len() - MAC_LEN, good.len() - 1] {
            let r = s.parse(&m, &good[..cut]);
            assert!(matches!(r, Err(Reject::Truncated | Reject::BadMac)), "cut {cut}: {r:?}");
        }
        for at in [0, 9, 20, 50, HEADER_LEN + 2, good.len() - 40, good.len() - 2] {
            let mut bad = good.clone();
            bad[at] ^= 0x40;
            assert!(s.parse(&m, &bad).is_err(), "flip at {at}");
        }
        assert_eq!(s.parse(&module(2), &good), Err(Reject::OtherModule));
        let other_build = Store::open(d.path(), 1 << 20, build_id("0.1.0", "other")).unwrap();
        assert_eq!(other_build.parse(&m, &good), Err(Reject::Foreign));

        // A file that is well formed but was MACed with another key: what another user
        // (or a copy from another machine) would write.
        let d2 = tempfile::tempdir().unwrap();
        let mut stranger = store(d2.path());
        stranger.store(&m, &[entry(0x10, b"\xcc\xcc\xcc")], None).unwrap();
        let hostile = fs::read(file_of(d2.path(), &m)).unwrap();
        assert_eq!(s.parse(&m, &hostile), Err(Reject::BadMac));
        fs::write(file_of(d.path(), &m), &hostile).unwrap();
        assert!(s.load(&m).is_none());
        assert_eq!(s.stats().rejected, 1);
        // A valid file that another user owns is refused before it is mapped (its owner
        // could truncate it under the mapping). Only root can make one.
        fs::write(file_of(d.path(), &m), &good).unwrap();
        if std::os::unix::fs::chown(file_of(d.path(), &m), Some(54_321), None).is_ok() {
            assert!(s.load(&m).is_none());
            assert_eq!(s.stats().rejected, 2);
        }
    }

    #[test]
    fn a_damaged_segment_ends_the_file_and_the_next_writer_rewrites_it() {
        let d = tempfile::tempdir().unwrap();
        let mut s = store(d.path());
        let m = module(1);
        s.store(&m, &[entry(0x10, b"first")], None).unwrap();
        let one = fs::metadata(file_of(d.path(), &m)).unwrap().len() as usize;
        s.store(&m, &[entry(0x20, b"second")], None).unwrap();
        s.store(&m, &[entry(0x30, b"third")], None).unwrap();
        let good = fs::read(file_of(d.path(), &m)).unwrap();
        let offsets = |p: &Parsed| p.entries.iter().map(|e| e.offset).collect::<Vec<_>>();
        // A crash during an append: the last segment cut short.
        let p = s.parse(&m, &good[..good.len() - 3]).unwrap();
        assert_eq!((offsets(&p), p.segments, p.damaged_tail), (vec![0x10, 0x20], 2, true));
        // A byte of the second segment flipped: the first is still good.
        let mut bad = good.clone();
        bad[one + 20] ^= 1;
        let p = s.parse(&m, &bad).unwrap();
        assert_eq!((offsets(&p), p.damaged_tail), (vec![0x10], true));
        // A segment of another module's file does not verify in this one.
        let mut other = store(d.path());
        other.store(&module(2), &[entry(0x40, b"elsewhere")], None).unwrap();
        let o = fs::read(file_of(d.path(), &module(2))).unwrap();
        let mut spliced = good.clone();
        spliced.extend_from_slice(&o[HEADER_LEN..]);
        assert_eq!(s.parse(&m, &spliced).map(|p| (p.segments, p.damaged_tail)), Ok((3, true)));
        // Loading counts the damage; storing rewrites the file whole, without it.
        fs::write(file_of(d.path(), &m), &bad).unwrap();
        let mut t = store(d.path());
        assert_eq!(t.load(&m).map(|f| f.entries().len()), Some(1));
        assert_eq!(t.stats().rejected, 1);
        t.store(&m, &[entry(0x50, b"fifth")], None).unwrap();
        let p = s.parse(&m, &fs::read(file_of(d.path(), &m)).unwrap()).unwrap();
        assert_eq!((offsets(&p), p.segments, p.damaged_tail), (vec![0x10, 0x50], 1, false));
    }

    #[test]
    fn a_writer_with_the_loaded_file_appends_only_what_is_new() {
        let d = tempfile::tempdir().unwrap();
        let m = module(1);
        store(d.path()).store(&m, &[entry(0x10, b"one")], None).unwrap();
        let mut s = store(d.path());
        let loaded = s.load(&m).unwrap();
        // Another run appends meanwhile: the loaded file is stale, the writer reads it.
        store(d.path()).store(&m, &[entry(0x20, b"two")], None).unwrap();
        s.store(&m, &[entry(0x10, b"one"), entry(0x20, b"two"), entry(0x30, b"three")], Some(&loaded)).unwrap();
        assert_eq!(s.stats().stored, 1);
        let again = s.load(&m).unwrap();
        assert_eq!(again.entries().iter().map(|e| e.offset).collect::<Vec<_>>(), vec![0x10, 0x20, 0x30]);
        // Unchanged since loaded: deduplicated against it, one segment appended.
        s.store(&m, &[entry(0x30, b"three"), entry(0x40, b"four")], Some(&again)).unwrap();
        assert_eq!(s.stats().stored, 2);
        let b = fs::read(file_of(d.path(), &m)).unwrap();
        assert_eq!(s.parse(&m, &b).map(|p| (p.entries.len(), p.segments)), Ok((4, 4)));
    }

    #[test]
    fn concurrent_writers_keep_every_entry() {
        let d = tempfile::tempdir().unwrap();
        let m = module(9);
        std::thread::scope(|sc| {
            for t in 0..4u32 {
                let dir = d.path();
                sc.spawn(move || {
                    let mut s = store(dir);
                    for i in 0..20u32 {
                        s.store(&m, &[entry(t * 100 + i, &[t as u8; 16])], None).unwrap();
                    }
                });
            }
        });
        let got = store(d.path()).load(&m).unwrap();
        assert_eq!(got.entries().len(), 80);
        let names: Vec<_> = fs::read_dir(d.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names.len(), 3, "key, lock and one module file: {names:?}");
    }

    #[test]
    fn the_size_limit_evicts_the_least_recently_used_module() {
        let d = tempfile::tempdir().unwrap();
        let build = build_id("0.1.0", "test");
        let mut s = Store::open(d.path(), 3000, build).unwrap();
        let big = vec![0u8; 1000];
        s.store(&module(1), &[entry(0, &big)], None).unwrap();
        s.store(&module(2), &[entry(0, &big)], None).unwrap();
        // Module 1 used since: module 2 is the least recently used.
        let old = SystemTime::now() - std::time::Duration::from_secs(60);
        File::options().write(true).open(file_of(d.path(), &module(2))).unwrap().set_modified(old).unwrap();
        s.store(&module(3), &[entry(0, &big)], None).unwrap();
        assert_eq!(s.stats().evicted, 1);
        assert!(!file_of(d.path(), &module(2)).exists());
        assert_eq!(s.load(&module(1)).map(|f| f.entries().len()), Some(1));
        assert_eq!(s.load(&module(3)).map(|f| f.entries().len()), Some(1));
    }

    #[test]
    fn the_key_is_private_and_shared_by_concurrent_first_runs() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let keys: Vec<[u8; 32]> = std::thread::scope(|sc| {
            let hs: Vec<_> = (0..4).map(|_| sc.spawn(|| secret_key(d.path()).unwrap())).collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(keys.windows(2).all(|w| w[0] == w[1]));
        let mode = fs::metadata(d.path().join("key")).unwrap().permissions().mode();
        assert_eq!(mode & 0o077, 0, "key readable by others: {mode:o}");
    }
}
