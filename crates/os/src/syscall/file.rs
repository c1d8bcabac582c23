//! Descriptor I/O: open, read, write, seek, dup, close, fcntl, ioctl, truncate, allocate, sync, fadvise,
//! memfds, directory listings.

use super::common::*;
use super::wait;

table! {
    /// Descriptors and their I/O.
    pub(super) TABLE: Files {
        3 read "fbu" sys_read;
        4 write "fBu" sys_write;
        5 open "sOo" sys_open;
        6 close "f" sys_close;
        8 creat "so" sys_creat;
        19 lseek "fdw" sys_lseek;
        36 sync "" sys_sync;
        41 dup "f" sys_dup;
        54 ioctl "fxx" sys_ioctl;
        55 fcntl "fdx" sys_fcntl;
        63 dup2 "ff" sys_dup2;
        92 truncate "su" sys_truncate;
        93 ftruncate "fu" sys_ftruncate;
        118 fsync "f" sys_fsync;
        140 _llseek "fQrw" sys_llseek;
        141 getdents "fpu" sys_getdents;
        143 flock "fx" sys_flock;
        145 readv "fvu" sys_readv;
        146 writev "fVu" sys_writev;
        148 fdatasync "f" sys_fdatasync;
        180 pread64 "fbuq" sys_pread64;
        181 pwrite64 "fBuq" sys_pwrite64;
        193 truncate64 "sq" sys_truncate64;
        194 ftruncate64 "fq" sys_ftruncate64;
        220 getdents64 "fpu" sys_getdents64;
        221 fcntl64 "fdx" sys_fcntl;
        250 fadvise64 "fqud" sys_fadvise64;
        272 fadvise64_64 "fqqd" sys_fadvise64_64;
        295 openat "fsOo" sys_openat;
        324 fallocate "fdqq" sys_fallocate;
        330 dup3 "ffx" sys_dup3;
        344 syncfs "f" sys_syncfs;
        356 memfd_create "su" sys_memfd_create;
        436 close_range "uuu" sys_close_range;
    }
}

// Coherence with the page cache: the host file is the backing store of the machine's
// page cache (see `morph_mem::PageCache`). Before the host reads a file that may have
// shared writable mappings, their stores are written back; after the host writes or
// truncates a file with cached pages, the cache takes the change. Descriptors know their
// (device, inode) from open time, so the common case (no cached pages, or not a regular
// file) costs a hash lookup.

/// Writes back stores made through shared mappings of the file behind guest `fd`, so a
/// host read sees them. A failure is not the reader's: it reads what the file holds.
pub(super) fn sync_before_read(cache: &mut PageCache, phys: &PhysMem, p: &Process, fd: u32) {
    if let Some(key) = p.fds.get(fd).and_then(|e| e.file()) {
        let _ = cache.write_back(phys, key);
    }
}

/// The cached file behind guest `fd`, if it is a regular file with cached pages.
pub(super) fn cached_file(cache: &PageCache, p: &Process, fd: u32) -> Option<FileKey> {
    p.fds.get(fd).and_then(|e| e.file()).filter(|&k| cache.is_cached(k))
}

/// After `n` bytes were written through guest `fd` at `off` (or, for `write`, just
/// before the file offset): the cached pages take the new bytes.
pub(super) fn wrote(cache: &mut PageCache, phys: &PhysMem, p: &Process, fd: u32, off: Option<u64>, n: u32) {
    let Some(key) = cached_file(cache, p, fd) else { return };
    let off = match off {
        Some(off) => off,
        None => {
            let Ok(raw) = host_fd(p, fd) else { return };
            match host::lseek(raw, 0, libc::SEEK_CUR) {
                Ok(end) => end.saturating_sub(u64::from(n)),
                Err(_) => return,
            }
        }
    };
    let _ = cache.written(phys, key, off, u64::from(n));
}

/// The most bytes one `read` or `write` transfers (Linux's `MAX_RW_COUNT`).
pub(super) const MAX_RW: u32 = 0x7fff_f000;

// Buffers the host kernel reads or fills in place. Linux transfers what it can: a
// buffer whose tail is unmapped gives a short count, `EFAULT` only when nothing could be
// transferred, and bytes it never touches are never checked (`/dev/null` takes any
// count). morph gets exactly that by giving the host the whole buffer after preparing
// the part of it the guest may access, up to its first page the guest may not: the
// window is inaccessible to the host in the same direction there (a hole, or a page
// mapped without that right), so the host stops where Linux would, with Linux's own
// rules for partial copies (a pipe drops a partly copied page and says `EFAULT`). The
// host touches only this process's window slot (4 GiB plus a 4 GiB guard, and one
// transfer is below 2 GiB).

/// Prepares guest buffer `[va, va+len)` for the host to write into: its part before the
/// first page the guest may not write (copy-on-write broken, code writes reported,
/// hosted). Returns that part's length.
pub(super) fn guest_out(p: &mut Process, va: u32, len: u32) -> Result<u32, Errno> {
    let n = p.aspace.valid_prefix(va, len, true);
    p.aspace.prepare_write(va, n).map_err(efault)?;
    Ok(n)
}

/// Prepares guest buffer `[va, va+len)` for the host to read: its part before the first
/// page the guest may not read (hosted). Returns that part's length.
pub(super) fn guest_in(p: &Process, va: u32, len: u32) -> Result<u32, Errno> {
    let n = p.aspace.valid_prefix(va, len, false);
    p.aspace.check_read(va, n).map_err(efault)?;
    Ok(n)
}

pub(super) fn sys_read(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    host_fd(p, a[0])?; // EBADF before anything else
    let len = a[2].min(MAX_RW);
    let valid = guest_out(p, a[1], len)?;
    let buf = InPlace::window(&p.aspace, a[1], len);
    if let Some(r) = read_special(m, p, a[0], &[buf], valid) {
        return r;
    }
    wait::ready_or_block(p, a[0], libc::POLLIN)?;
    sync_before_read(m.cache, m.phys, p, a[0]);
    wait::host_readv(p, a[0], &[buf])
}

pub(super) fn sys_write(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    host_fd(p, a[0])?;
    let len = a[2].min(MAX_RW);
    guest_in(p, a[1], len)?;
    wait::ready_or_block(p, a[0], libc::POLLOUT)?;
    let one = [InPlace::window(&p.aspace, a[1], len)];
    let n = wait::wrote_or_block(p, a[0], wait::host_writev(p, a[0], &one))?;
    wrote(m.cache, m.phys, p, a[0], None, n);
    grew(m, p, a[0]);
    Ok(n)
}

pub(super) fn sys_pread64(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let fd = host_fd(p, a[0])?;
    let len = a[2].min(MAX_RW);
    let off = ((u64::from(a[4]) << 32) | u64::from(a[3])) as i64;
    let valid = guest_out(p, a[1], len)?;
    let buf = InPlace::window(&p.aspace, a[1], len);
    if let Some(r) = read_special(m, p, a[0], &[buf], valid) {
        return r;
    }
    sync_before_read(m.cache, m.phys, p, a[0]);
    host::pread_in_place(fd, buf, off)
}

pub(super) fn sys_pwrite64(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let fd = host_fd(p, a[0])?;
    let len = a[2].min(MAX_RW);
    let off = ((u64::from(a[4]) << 32) | u64::from(a[3])) as i64;
    guest_in(p, a[1], len)?;
    let n = host::pwrite_in_place(fd, InPlace::window(&p.aspace, a[1], len), off)?;
    wrote(m.cache, m.phys, p, a[0], Some(off as u64), n);
    grew(m, p, a[0]);
    Ok(n)
}

/// After the file `key` was truncated (or extended) to `len` bytes: the page cache, and
/// the mappings of the file (see [`resized`]).
pub(super) fn truncated(m: &mut FileCtx<'_>, p: &mut Process, key: Option<FileKey>, len: u64) {
    let Some(key) = key.filter(|&k| m.cache.is_cached(k)) else { return };
    m.cache.truncated(m.phys, key, len);
    resized(m, p, key, len);
}

/// The file `key` now has `len` bytes: in every address space, the pages of its
/// mappings wholly past the end give `SIGBUS`, those before it are there.
fn resized(m: &mut FileCtx<'_>, p: &mut Process, key: FileKey, len: u64) {
    p.aspace.file_resized(key, len);
    m.file_resized(key, len);
}

/// After a write to guest `fd` (`wrote` done): if it went past the end of a cached
/// file, the mappings see the new end.
pub(super) fn grew(m: &mut FileCtx<'_>, p: &mut Process, fd: u32) {
    if let Some(key) = cached_file(m.cache, p, fd)
        && let Some(size) = m.cache.size_of(key)
    {
        resized(m, p, key, size);
    }
}

/// `fadvise64(fd, offset_lo, offset_hi, len, advice)`: i386's 32-bit length.
fn sys_fadvise64(_: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    fadvise(p, a[0], pair(a[1], a[2]), i64::from(a[3]), a[4])
}

/// `fadvise64_64(fd, offset_lo, offset_hi, len_lo, len_hi, advice)`.
fn sys_fadvise64_64(_: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    fadvise(p, a[0], pair(a[1], a[2]), pair(a[3], a[4]), a[5])
}

/// A 64-bit argument passed in two registers, low half first.
pub(super) fn pair(lo: u32, hi: u32) -> i64 {
    ((u64::from(hi) << 32) | u64::from(lo)) as i64
}

/// The advice is only a hint, so the host is asked with the guest's arguments on the
/// same kind of object (the host descriptor behind the guest's): its answer carries
/// Linux's checks (`EBADF` for an `O_PATH` descriptor, `ESPIPE` for a pipe, `EINVAL`
/// for a negative length or an unknown advice), else 0.
fn fadvise(p: &Process, fd: u32, offset: i64, len: i64, advice: u32) -> SysResult {
    host::fadvise(host_fd(p, fd)?, offset, len, advice as i32)
}

pub(super) fn ftruncate_common(m: &mut FileCtx<'_>, p: &mut Process, guest_fd: u32, len: i64) -> SysResult {
    if len < 0 {
        return Err(EINVAL); // before the descriptor is looked up, as Linux
    }
    let fd = host_fd(p, guest_fd)?;
    let r = host::ftruncate(fd, len)?;
    let key = cached_file(m.cache, p, guest_fd);
    truncated(m, p, key, len as u64);
    Ok(r)
}

pub(super) fn truncate_common(m: &mut FileCtx<'_>, p: &mut Process, path: u32, len: i64) -> SysResult {
    if len < 0 {
        return Err(EINVAL); // before the path is read, as Linux
    }
    let path = read_path(p, path)?;
    // Only a regular file is opened (a FIFO would block the machine): EISDIR, else EINVAL.
    let fd = m.vfs.open_regular(&p.cwd, &path, libc::O_WRONLY, |k| if k == libc::S_IFDIR { EISDIR } else { EINVAL })?;
    let r = host::ftruncate(fd.as_raw_fd(), len)?;
    truncated(m, p, FileKey::of_fd(fd.as_raw_fd()).ok().flatten(), len as u64);
    Ok(r)
}

/// `fsync`, `fdatasync` and `syncfs`: the stores made through shared mappings of the
/// file live in the machine's page cache until they are written back, so they are
/// written back first; then the host's own call makes the host file durable, and what
/// it refuses (a pipe's or a socket's `EINVAL`) is the answer. A `/proc` file, which
/// morph makes in a memfd, refuses it as Linux's do.
fn sync_fd(m: &mut FileCtx<'_>, p: &Process, fd: u32, data: bool, fs: bool) -> SysResult {
    let entry = p.fds.get(fd).ok_or(EBADF)?;
    if matches!(entry.host.kind, FileKind::Snapshot(_)) && !fs {
        return Err(EINVAL);
    }
    if let Some(key) = entry.file() {
        m.cache.write_back(m.phys, key).map_err(|_| EIO)?;
    }
    host::fsync(entry.host.as_raw_fd(), data, fs)
}

pub(super) fn sys_fsync(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    sync_fd(m, p, a[0], false, false)
}

pub(super) fn sys_fdatasync(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    sync_fd(m, p, a[0], true, false)
}

pub(super) fn sys_syncfs(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    sync_fd(m, p, a[0], false, true)
}

/// `sync`: the stores made through shared mappings of every file are written back
/// (they live in the machine's page cache until then), then the host's `syncfs` makes
/// the file system of the guest's root durable: that is the guest's whole world, and
/// the host-wide `sync` would flush file systems the guest cannot see. Always 0, as
/// Linux's (a failure is not reported).
pub(super) fn sys_sync(m: &mut FileCtx<'_>, _: &mut Process, _: &[u32; 6]) -> SysResult {
    let _ = m.cache.write_back_all(m.phys);
    // syncfs takes no O_PATH descriptor: the root is opened for reading.
    if let Ok(root) = m.vfs.open("/", b"/", libc::O_RDONLY | libc::O_DIRECTORY, 0) {
        let _ = host::fsync(root.as_raw_fd(), false, true);
    }
    Ok(0)
}

/// `fallocate(fd, mode, offset_lo, offset_hi, len_lo, len_hi)`: the host's, on the host
/// descriptor behind the guest's, so Linux's checks and answers are the host kernel's
/// on the same kind of object (`EINVAL` for a negative offset or a length that is not
/// positive, `EBADF` unless open for writing, `ESPIPE` for a pipe, `ENODEV` for what is
/// neither a file nor a directory, `EOPNOTSUPP` for a mode the file system lacks), and
/// every mode the file system has works (`FALLOC_FL_KEEP_SIZE`, punching holes,
/// zeroing, collapsing and inserting ranges). The page cache stays coherent as around a
/// write: stores made through shared mappings reach the file first (a mode that moves
/// or zeroes bytes would otherwise see a later write-back undo it), then the cached
/// pages of the changed range take the file's bytes, and a new end of file is told to
/// the cache and the mappings as `ftruncate` tells it.
pub(super) fn sys_fallocate(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    const FALLOC_FL_KEEP_SIZE: i32 = 1;
    const FALLOC_FL_COLLAPSE_RANGE: i32 = 8;
    const FALLOC_FL_INSERT_RANGE: i32 = 0x20;
    let (mode, offset, len) = (a[1] as i32, pair(a[2], a[3]), pair(a[4], a[5]));
    let e = p.fds.get(a[0]).ok_or(EBADF)?;
    if matches!(e.host.kind, FileKind::Dir(_)) {
        // One of morph's own directories (an empty memfd on the host): a directory is
        // never open for writing.
        return Err(if offset < 0 || len <= 0 { EINVAL } else { EBADF });
    }
    let fd = e.host.as_raw_fd();
    let key = cached_file(m.cache, p, a[0]);
    let old_size = key.and_then(|k| m.cache.size_of(k));
    if let Some(k) = key {
        m.cache.write_back(m.phys, k).map_err(|_| EIO)?;
    }
    let r = host::fallocate(fd, mode, offset, len)?;
    if let Some(k) = key {
        let size = host_stat_fd(fd).map_or(0, |st| st.st_size as u64);
        let top = size.max(old_size.unwrap_or(size));
        let off = offset as u64;
        if mode & !FALLOC_FL_KEEP_SIZE != 0 && off < top {
            // Bytes were zeroed in [offset, offset+len), or everything from the offset
            // moved (collapse, insert).
            let shifts = mode & (FALLOC_FL_COLLAPSE_RANGE | FALLOC_FL_INSERT_RANGE) != 0;
            let end = if shifts { top } else { off.saturating_add(len as u64).min(top) };
            let _ = m.cache.written(m.phys, k, off, end - off);
        }
        // The end of file (and the cache's record of the file) as after ftruncate.
        truncated(m, p, Some(k), size);
    }
    Ok(r)
}

pub(super) fn sys_ftruncate64(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    ftruncate_common(m, p, a[0], ((u64::from(a[2]) << 32) | u64::from(a[1])) as i64)
}

pub(super) fn sys_truncate64(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    truncate_common(m, p, a[0], ((u64::from(a[2]) << 32) | u64::from(a[1])) as i64)
}

/// `ftruncate` without large-file support: a signed 32-bit length (negative:
/// `EINVAL`, before the descriptor is looked up), as Linux since 6.10 reads it (older
/// kernels took it unsigned and then refused lengths past 2 GiB − 1 for a descriptor
/// opened without `O_LARGEFILE`: the same answers except for a bad descriptor).
pub(super) fn sys_ftruncate(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    ftruncate_common(m, p, a[0], i64::from(a[1] as i32))
}

/// `truncate` without large-file support: a signed 32-bit length (negative: `EINVAL`).
pub(super) fn sys_truncate(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    truncate_common(m, p, a[0], i64::from(a[1] as i32))
}

/// The host iovecs of the guest's `iovec` array at `ptr` (`n` entries), each buffer
/// prepared as by `guest_out` (`write_to_guest`) or `guest_in` up to the first fault
/// (the host stops there; see `guest_out`).
pub(super) fn iovecs(p: &mut Process, ptr: u32, n: u32, write_to_guest: bool) -> Result<Vec<InPlace>, Errno> {
    iovecs_valid(p, ptr, n, write_to_guest).map(|(v, _)| v)
}

/// `iovecs`, and how many bytes of them lie before the first fault (at most `MAX_RW`).
pub(super) fn iovecs_valid(
    p: &mut Process,
    ptr: u32,
    n: u32,
    write_to_guest: bool,
) -> Result<(Vec<InPlace>, u32), Errno> {
    if n > 1024 {
        return Err(EINVAL);
    }
    let mut v = Vec::with_capacity(n as usize);
    let mut valid = 0u32;
    let mut faulted = false;
    for i in 0..n {
        let base = p.aspace.read_u32(ptr + 8 * i).map_err(efault)?;
        let len = p.aspace.read_u32(ptr + 8 * i + 4).map_err(efault)?;
        // A compat `iov_len` is signed: a negative one is EINVAL (the total is clamped
        // to `MAX_RW_COUNT` by the host, as by Linux).
        if len > i32::MAX as u32 {
            return Err(EINVAL);
        }
        if !faulted {
            let ok = if write_to_guest { guest_out(p, base, len)? } else { guest_in(p, base, len)? };
            valid = valid.saturating_add(ok).min(MAX_RW);
            faulted = ok < len;
        }
        v.push(InPlace::window(&p.aspace, base, len));
    }
    Ok((v, valid))
}

pub(super) fn sys_readv(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    host_fd(p, a[0])?;
    let (v, valid) = iovecs_valid(p, a[1], a[2], true)?;
    if let Some(r) = read_special(m, p, a[0], &v, valid) {
        return r;
    }
    wait::ready_or_block(p, a[0], libc::POLLIN)?;
    sync_before_read(m.cache, m.phys, p, a[0]);
    wait::host_readv(p, a[0], &v)
}

pub(super) fn sys_writev(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    host_fd(p, a[0])?;
    let v = iovecs(p, a[1], a[2], false)?;
    wait::ready_or_block(p, a[0], libc::POLLOUT)?;
    let n = wait::wrote_or_block(p, a[0], wait::host_writev(p, a[0], &v))?;
    wrote(m.cache, m.phys, p, a[0], None, n);
    grew(m, p, a[0]);
    Ok(n)
}

/// Guest `open` flags → host flags (the values are the same on i386 and x86-64; only
/// close-on-exec is kept by morph itself).
pub(super) fn open_common(
    m: &mut FileCtx<'_>,
    p: &mut Process,
    dir: &str,
    path: &[u8],
    flags: u32,
    mode: u32,
) -> SysResult {
    let mut host_flags = (flags & !(O_CLOEXEC | O_LARGEFILE)) as i32;
    if host_flags & libc::O_PATH != 0 && host_flags & libc::O_TMPFILE != libc::O_TMPFILE {
        // Linux ignores every other flag beside O_PATH (openat2 refuses them).
        host_flags &= libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW;
    }
    let mode = mode & !p.umask;
    let resolved = special::resolve(m.sys(), p, dir, path, flags & O_NOFOLLOW == 0).map_err(|e| {
        // A new name directly in /dev: not the caller's to make (it is root's on Linux).
        let (norm, _) = crate::vfs::Vfs::normalize(dir, path);
        let in_dev = norm.strip_prefix(b"/dev/").is_some_and(|n| !n.contains(&b'/'));
        if e == ENOENT && flags & O_CREAT != 0 && in_dev { EACCES } else { e }
    })?;
    let file = match resolved {
        Resolved::Path(abs) => open_host(m, p, &abs, host_flags, mode, flags)?,
        Resolved::Node(n) => special::open(m.sys(), p, n, flags, mode)?,
    };
    let entry = FdEntry::of(file, flags & O_CLOEXEC != 0);
    if flags & O_TRUNC != 0
        && let Some(key) = entry.file()
        && let Ok(st) = host_stat_fd(entry.host.as_raw_fd())
    {
        truncated(m, p, Some(key), st.st_size as u64);
    }
    p.fds.install(entry, 0).ok_or(EMFILE)
}

/// Opens a file of the root. The host open is always non-blocking, since opening a
/// FIFO would otherwise stall the whole machine until its other end opens: a FIFO
/// becomes a morph-managed non-blocking description (reads and writes wait through
/// the scheduler); a write-only open with no reader yet waits in the scheduler (polled)
/// as Linux's blocking open does. Anything else gets the guest's own flags back.
pub(super) fn open_host(
    m: &FileCtx<'_>,
    p: &mut Process,
    abs: &[u8],
    host_flags: i32,
    mode: u32,
    flags: u32,
) -> Result<OpenFile, Errno> {
    let guest_nb = flags & O_NONBLOCK != 0;
    // An O_PATH open opens nothing (and takes no other flag).
    let path_only = host_flags & libc::O_PATH != 0;
    let nb = if path_only { 0 } else { libc::O_NONBLOCK };
    match m.vfs.open("/", abs, host_flags | nb, mode) {
        Ok(fd) if path_only => {
            // It reads, writes, maps and locks nothing: no file for the page cache or
            // the record locks (closing it drops none, as on Linux).
            let mut f = OpenFile::new(fd);
            f.file = None;
            Ok(f)
        }
        Ok(fd) => {
            let st = host_stat_fd(fd.as_raw_fd())?;
            if st.st_mode & libc::S_IFMT == libc::S_IFIFO {
                return Ok(OpenFile::nonblocking(fd, guest_nb));
            }
            if !guest_nb {
                let _ = host::setfl(fd.as_raw_fd(), host_flags & !libc::O_NONBLOCK & !libc::O_ACCMODE);
            }
            Ok(OpenFile::new(fd))
        }
        // A FIFO with no reader: a blocking writer waits for one.
        Err(ENXIO) if !guest_nb && host_flags & libc::O_ACCMODE == libc::O_WRONLY => {
            let retry = std::time::Instant::now() + std::time::Duration::from_millis(2);
            Err(wait::block_on(p, Vec::new(), Some(retry), true).err().unwrap_or(ERESTARTSYS))
        }
        Err(e) => Err(e),
    }
}

/// The directory a `*at` call's relative path starts from, as a guest path.
pub(super) fn at_dir(vfs: &Vfs, p: &Process, dirfd: u32, path: &[u8]) -> Result<String, Errno> {
    if path.first() == Some(&b'/') || dirfd as i32 == AT_FDCWD {
        return Ok(p.cwd.clone());
    }
    let e = p.fds.get(dirfd).ok_or(EBADF)?;
    match &e.host.kind {
        FileKind::Dir(d) => Ok(d.path.clone()),
        FileKind::Host => vfs.guest_path_of(e.host.as_ref()),
        _ => Err(ENOTDIR),
    }
}

pub(super) fn sys_open(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let path = read_path(p, a[0])?;
    let cwd = p.cwd.clone();
    open_common(m, p, &cwd, &path, a[1], a[2])
}

/// `creat(path, mode)`: `open(path, O_CREAT | O_WRONLY | O_TRUNC, mode)`.
pub(super) fn sys_creat(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let path = read_path(p, a[0])?;
    let cwd = p.cwd.clone();
    open_common(m, p, &cwd, &path, (libc::O_CREAT | libc::O_WRONLY | libc::O_TRUNC) as u32, a[1])
}

pub(super) fn sys_openat(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let path = read_path(p, a[1])?;
    let dir = at_dir(m.vfs, p, a[0], &path)?;
    open_common(m, p, &dir, &path, a[2], a[3])
}

pub(super) fn sys_close(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let e = p.fds.close(a[0]).ok_or(EBADF)?;
    closed(m, p, &e);
    Ok(0)
}

/// `close_range(first, last, flags)`: closes the open descriptors from `first` to
/// `last` as `close` does, or with `CLOSE_RANGE_CLOEXEC` marks them close-on-exec.
/// `CLOSE_RANGE_UNSHARE` asks for a private descriptor table first: a process's table
/// is its own in morph unless it has other threads (they share it, as `CLONE_THREAD`
/// implies `CLONE_FILES` here), so the flag changes nothing for a process without
/// threads, and for one with threads a private table cannot be made: `ENOSYS`, as for
/// the `clone` flags morph does not support, rather than closing the other threads'
/// descriptors. Unknown flags and `first > last` are `EINVAL`.
pub(super) fn sys_close_range(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    const CLOSE_RANGE_UNSHARE: u32 = 2;
    const CLOSE_RANGE_CLOEXEC: u32 = 4;
    let (first, last, flags) = (a[0], a[1], a[2]);
    if flags & !(CLOSE_RANGE_UNSHARE | CLOSE_RANGE_CLOEXEC) != 0 || first > last {
        return Err(EINVAL);
    }
    if flags & CLOSE_RANGE_UNSHARE != 0 && !p.threads.is_empty() {
        return Err(ENOSYS);
    }
    let open: Vec<u32> = p.fds.iter().map(|(fd, _)| fd).filter(|fd| (first..=last).contains(fd)).collect();
    for fd in open {
        if flags & CLOSE_RANGE_CLOEXEC != 0 {
            if let Some(e) = p.fds.get_mut(fd) {
                e.cloexec = true;
            }
        } else if let Some(e) = p.fds.close(fd) {
            closed(m, p, &e);
        }
    }
    Ok(0)
}

/// `memfd_create(name, flags)`: a host memfd named `name` behind a new guest descriptor,
/// an ordinary regular file to morph (readable, writable, `ftruncate`-able, mappable
/// shared or private through the page cache like any file); `/proc/self/fd/N` shows it
/// as the host names it, `/memfd:NAME (deleted)`, as Linux does. `MFD_CLOEXEC` and
/// `MFD_ALLOW_SEALING` are taken; any other flag is `EINVAL`, as on the Linux 6.1 morph
/// reports (`MFD_HUGETLB`: morph's page cache reads and writes the file with `pread` and
/// `pwrite`, which a hugetlbfs file refuses; `MFD_NOEXEC_SEAL` and `MFD_EXEC` came in
/// 6.3). Seals cannot be added (`F_ADD_SEALS` is `EINVAL`): the host would not see the
/// guest's writable mappings, which live in the page cache. A name of more than 249
/// bytes is `EINVAL`.
pub(super) fn sys_memfd_create(_: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    const MFD_CLOEXEC: u32 = 1;
    const MFD_ALLOW_SEALING: u32 = 2;
    const MFD_NAME_MAX_LEN: usize = 249;
    let flags = a[1];
    if flags & !(MFD_CLOEXEC | MFD_ALLOW_SEALING) != 0 {
        return Err(EINVAL);
    }
    let name = p.aspace.read_cstr(a[0], MFD_NAME_MAX_LEN + 1).map_err(efault)?;
    if name.len() > MFD_NAME_MAX_LEN {
        return Err(EINVAL);
    }
    let name = std::ffi::CString::new(name).map_err(|_| EINVAL)?;
    let fd = host::memfd_create(&name, libc::MFD_CLOEXEC | (flags & MFD_ALLOW_SEALING))?;
    p.fds.install(FdEntry::new(fd, flags & MFD_CLOEXEC != 0), 0).ok_or(EMFILE)
}

/// After guest descriptor `e` was closed: the process's record locks on its file go, as
/// Linux drops them at the close of any descriptor of the file (`crate::locks`).
fn closed(m: &mut FileCtx<'_>, p: &Process, e: &FdEntry) {
    if let Some(key) = e.file() {
        m.locks.set(key, p.pid, 0, u64::MAX, None);
    }
}

/// The state of guest `fd` if it is a directory of morph's own.
pub(super) fn special_dir(p: &Process, fd: u32) -> Option<&special::DirState> {
    match &p.fds.get(fd)?.host.kind {
        FileKind::Dir(d) => Some(d),
        _ => None,
    }
}

/// Makes the text of a `/proc` file behind guest `fd` before the host looks at it.
pub(super) fn fill_snapshot(sys: special::Sys<'_>, p: &Process, fd: u32) {
    if let Some(FileKind::Snapshot(s)) = p.fds.get(fd).map(|e| &e.host.kind) {
        s.fill(sys, p);
    }
}

pub(super) fn sys_lseek(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    fill_snapshot(m.sys(), p, a[0]);
    if let Some(d) = special_dir(p, a[0]) {
        return special::seek_dir(d, i64::from(a[1] as i32), a[2]).map(|v| v as u32);
    }
    let fd = host_fd(p, a[0])?;
    let r = host::lseek(fd, i64::from(a[1] as i32), a[2] as i32)?;
    if r > i32::MAX as u64 {
        return Err(EOVERFLOW);
    }
    Ok(r as u32)
}

pub(super) fn sys_llseek(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    fill_snapshot(m.sys(), p, a[0]);
    let fd = host_fd(p, a[0])?;
    let off = ((u64::from(a[1]) << 32) | u64::from(a[2])) as i64;
    p.aspace.prepare_write(a[3], 8).map_err(efault)?;
    if let Some(d) = special_dir(p, a[0]) {
        let r = special::seek_dir(d, off, a[4])?;
        p.aspace.write_u64(a[3], r).map_err(efault)?;
        return Ok(0);
    }
    let r = host::lseek(fd, off, a[4] as i32)?;
    p.aspace.write_u64(a[3], r).map_err(efault)?;
    Ok(0)
}

pub(super) fn sys_dup(_: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let mut e = p.fds.get(a[0]).ok_or(EBADF)?.clone();
    e.cloexec = false;
    p.fds.install(e, 0).ok_or(EMFILE)
}

pub(super) fn sys_dup2(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let mut e = p.fds.get(a[0]).ok_or(EBADF)?.clone();
    if a[0] == a[1] {
        return Ok(a[1]);
    }
    if a[1] as usize >= crate::process::MAX_FDS {
        return Err(EBADF);
    }
    e.cloexec = false;
    if let Some(old) = p.fds.close(a[1]) {
        closed(m, p, &old);
    }
    p.fds.set(a[1], e);
    Ok(a[1])
}

pub(super) fn sys_dup3(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    if a[0] == a[1] || a[2] & !O_CLOEXEC != 0 {
        return Err(EINVAL);
    }
    let mut e = p.fds.get(a[0]).ok_or(EBADF)?.clone();
    if a[1] as usize >= crate::process::MAX_FDS {
        return Err(EBADF);
    }
    e.cloexec = a[2] & O_CLOEXEC != 0;
    if let Some(old) = p.fds.close(a[1]) {
        closed(m, p, &old);
    }
    p.fds.set(a[1], e);
    Ok(a[1])
}

pub(super) fn sys_fcntl(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    const F_DUPFD: u32 = 0;
    const F_GETFD: u32 = 1;
    const F_SETFD: u32 = 2;
    const F_GETFL: u32 = 3;
    const F_SETFL: u32 = 4;
    const F_DUPFD_CLOEXEC: u32 = 1030;
    let e = p.fds.get(a[0]).ok_or(EBADF)?.clone();
    match a[1] {
        F_DUPFD | F_DUPFD_CLOEXEC => {
            let mut e = e;
            e.cloexec = a[1] == F_DUPFD_CLOEXEC;
            p.fds.install(e, a[2]).ok_or(EMFILE)
        }
        F_GETFD => Ok(u32::from(e.cloexec)),
        F_SETFD => {
            if let Some(x) = p.fds.get_mut(a[0]) {
                x.cloexec = a[2] & 1 != 0;
            }
            Ok(0)
        }
        F_GETFL => {
            let mut fl = host::getfl(e.host.as_raw_fd())? as u32 | O_LARGEFILE;
            if e.host.host_nonblock {
                // The host descriptor is always non-blocking; the guest sees its own flag.
                fl &= !O_NONBLOCK;
                if e.host.guest_nonblock() {
                    fl |= O_NONBLOCK;
                }
            }
            Ok(fl)
        }
        F_SETFL => {
            let mut fl = a[2] & !O_LARGEFILE;
            if e.host.host_nonblock {
                fl |= O_NONBLOCK;
            }
            let r = host::setfl(e.host.as_raw_fd(), fl as i32)?;
            e.host.nonblock.set(a[2] & O_NONBLOCK != 0);
            Ok(r)
        }
        F_GETLK | F_SETLK | F_SETLKW => record_lock(m, p, &e, a[1], a[2], false),
        F_GETLK64 | F_SETLK64 | F_SETLKW64 => record_lock(m, p, &e, a[1] - 7, a[2], true),
        _ => Err(EINVAL),
    }
}

// ----- advisory locks (see `crate::locks`) ------------------------------------------------

const F_GETLK: u32 = 5;
const F_SETLK: u32 = 6;
const F_SETLKW: u32 = 7;
const F_GETLK64: u32 = 12;
const F_SETLK64: u32 = 13;
const F_SETLKW64: u32 = 14;
const F_RDLCK: i16 = 0;
const F_WRLCK: i16 = 1;
const F_UNLCK: i16 = 2;

/// How long a process waiting for a lock (`F_SETLKW`, `flock` without `LOCK_NB`) waits
/// before it looks again: the holder releases it in a system call of its own, which
/// the machine does not tell waiters about.
const LOCK_RETRY: std::time::Duration = std::time::Duration::from_millis(1);

/// Waits for a lock: the call runs again after `LOCK_RETRY`; a handled signal ends the
/// wait with `EINTR` (not restarted, as Linux's lock waits are not).
fn wait_for_lock(p: &mut Process) -> SysResult {
    use crate::process::{Blocked, Wait};
    let deadline = Some(std::time::Instant::now() + LOCK_RETRY);
    p.blocked = Some(Blocked { wait: Wait::Fds(Vec::new()), deadline, restartable: false });
    Ok(0)
}

/// `fcntl`'s record locks: `struct flock` (`l_type`, `l_whence`, 32-bit `l_start` and
/// `l_len`, `l_pid`) or with `wide` `struct flock64` (64-bit start and length, at 4 and
/// 12); `cmd` is `F_GETLK`, `F_SETLK` or `F_SETLKW`.
fn record_lock(m: &mut FileCtx<'_>, p: &mut Process, e: &FdEntry, cmd: u32, arg: u32, wide: bool) -> SysResult {
    let size = if wide { 24 } else { 16 };
    let mut b = [0u8; 24];
    p.aspace.read_bytes(arg, &mut b[..size]).map_err(efault)?;
    let typ = i16::from_le_bytes([b[0], b[1]]);
    let whence = i16::from_le_bytes([b[2], b[3]]);
    let (start, len) = if wide {
        (i64::from_le_bytes(b[4..12].try_into().expect("8")), i64::from_le_bytes(b[12..20].try_into().expect("8")))
    } else {
        (
            i64::from(i32::from_le_bytes(b[4..8].try_into().expect("4"))),
            i64::from(i32::from_le_bytes(b[8..12].try_into().expect("4"))),
        )
    };
    if !(F_RDLCK..=F_UNLCK).contains(&typ) {
        return Err(EINVAL);
    }
    let Some(key) = e.file() else { return Err(EINVAL) };
    let fd = e.host.as_raw_fd();
    let base = match whence {
        0 => 0,
        1 => host::lseek(fd, 0, libc::SEEK_CUR)? as i64,
        2 => host::fstat(fd)?.st_size,
        _ => return Err(EINVAL),
    };
    let at = base.checked_add(start).ok_or(EOVERFLOW)?;
    let (lo, hi) = match len {
        0 => (at, None),
        l if l > 0 => (at, Some(at.checked_add(l).ok_or(EOVERFLOW)?)),
        l => (at + l, Some(at)),
    };
    if lo < 0 {
        return Err(EINVAL);
    }
    let (lo, hi) = (lo as u64, hi.map_or(u64::MAX, |h| h as u64));
    let pid = p.pid;
    if cmd == F_GETLK {
        if typ == F_UNLCK {
            return Err(EINVAL);
        }
        let c = m.lock_conflict(key, pid, lo, hi, typ == F_WRLCK);
        let mut out = b;
        match c {
            None => out[0..2].copy_from_slice(&F_UNLCK.to_le_bytes()),
            Some(c) => {
                out[0..2].copy_from_slice(&(if c.write { F_WRLCK } else { F_RDLCK }).to_le_bytes());
                out[2..4].copy_from_slice(&0i16.to_le_bytes());
                let clen = if c.end == u64::MAX { 0 } else { (c.end - c.start) as i64 };
                if wide {
                    out[4..12].copy_from_slice(&(c.start as i64).to_le_bytes());
                    out[12..20].copy_from_slice(&clen.to_le_bytes());
                    out[20..24].copy_from_slice(&c.pid.to_le_bytes());
                } else {
                    let s = i32::try_from(c.start).map_err(|_| EOVERFLOW)?;
                    let l = i32::try_from(clen).map_err(|_| EOVERFLOW)?;
                    out[4..8].copy_from_slice(&s.to_le_bytes());
                    out[8..12].copy_from_slice(&l.to_le_bytes());
                    out[12..16].copy_from_slice(&c.pid.to_le_bytes());
                }
            }
        }
        p.aspace.write_bytes(arg, &out[..size]).map_err(efault)?;
        return Ok(0);
    }
    // A lock needs the descriptor open for its kind of access.
    let mode = host::getfl(fd)? & libc::O_ACCMODE;
    if (typ == F_RDLCK && mode == libc::O_WRONLY) || (typ == F_WRLCK && mode == libc::O_RDONLY) {
        return Err(EBADF);
    }
    if typ != F_UNLCK && m.lock_conflict(key, pid, lo, hi, typ == F_WRLCK).is_some() {
        return if cmd == F_SETLKW { wait_for_lock(p) } else { Err(EAGAIN) };
    }
    m.locks.set(key, pid, lo, hi, (typ != F_UNLCK).then_some(typ == F_WRLCK));
    Ok(0)
}

/// `flock`: a shared (`LOCK_SH`) or exclusive (`LOCK_EX`) lock of the open file
/// description, or none (`LOCK_UN`); `LOCK_NB` fails with `EWOULDBLOCK` instead of
/// waiting.
pub(super) fn sys_flock(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    const LOCK_SH: u32 = 1;
    const LOCK_EX: u32 = 2;
    const LOCK_NB: u32 = 4;
    const LOCK_UN: u32 = 8;
    let e = p.fds.get(a[0]).ok_or(EBADF)?.clone();
    let kind = match a[1] & !LOCK_NB {
        LOCK_SH => Some(false),
        LOCK_EX => Some(true),
        LOCK_UN => None,
        _ => return Err(EINVAL),
    };
    let Some(key) = e.file() else { return Err(EINVAL) };
    if let Some(write) = kind
        && m.locks.file_conflict(key, &e.host, write)
    {
        return if a[1] & LOCK_NB != 0 { Err(EAGAIN) } else { wait_for_lock(p) };
    }
    m.locks.set_file(key, &e.host, kind);
    Ok(0)
}

pub(super) fn sys_ioctl(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let fd = host_fd(p, a[0])?;
    if a[1] == FIONBIO {
        // The guest's O_NONBLOCK, as F_SETFL sets it.
        let on = p.aspace.read_u32(a[2]).map_err(efault)? != 0;
        let e = p.fds.get(a[0]).ok_or(EBADF)?;
        if !e.host.host_nonblock {
            host::set_nonblocking(fd, on)?;
        }
        e.host.nonblock.set(on);
        return Ok(0);
    }
    let size = match a[1] {
        TCGETS => 36,
        TIOCGWINSZ => 8,
        TIOCGPGRP | FIONREAD => 4,
        _ => {
            *m.ioctl_unknown.entry(a[1]).or_default() += 1;
            return Err(ENOTTY);
        }
    };
    let (r, buf) = host::ioctl_get(fd, a[1])?;
    p.aspace.write_bytes(a[2], &buf[..size]).map_err(efault)?;
    Ok(r)
}

/// `getdents` on a directory of morph's own, if guest `fd` is one.
pub(super) fn special_getdents(sys: special::Sys<'_>, p: &mut Process, a: &[u32; 6], wide: bool) -> Option<SysResult> {
    special_dir(p, a[0])?;
    let mut buf = vec![0u8; a[2].min(1 << 20) as usize];
    let n = match special::getdents(sys, p, special_dir(p, a[0])?, &mut buf, wide) {
        Ok(n) => n,
        Err(e) => return Some(Err(e)),
    };
    Some(p.aspace.write_bytes(a[1], &buf[..n]).map_err(efault).map(|_| n as u32))
}

pub(super) fn sys_getdents64(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    if let Some(r) = special_getdents(m.sys(), p, a, true) {
        return r;
    }
    let fd = host_fd(p, a[0])?;
    p.aspace.prepare_write(a[1], a[2]).map_err(efault)?;
    host::getdents64_in_place(fd, InPlace::window(&p.aspace, a[1], a[2]))
}

/// The old `getdents` (`struct linux_dirent`, 32-bit inode and offset): the host's
/// `linux_dirent64` records, converted (an old record is never longer than its new form).
pub(super) fn sys_getdents(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    if let Some(r) = special_getdents(m.sys(), p, a, false) {
        return r;
    }
    let fd = host_fd(p, a[0])?;
    let len = a[2].min(1 << 20) as usize;
    p.aspace.prepare_write(a[1], a[2]).map_err(efault)?;
    let mut wide = vec![0u8; len];
    let n = host::getdents64(fd, &mut wide)?;
    let mut out = Vec::with_capacity(n);
    let mut i = 0;
    while i + 19 <= n {
        let ino = u64::from_le_bytes(wide[i..i + 8].try_into().unwrap_or_default());
        let off = u64::from_le_bytes(wide[i + 8..i + 16].try_into().unwrap_or_default());
        let reclen = usize::from(u16::from_le_bytes([wide[i + 16], wide[i + 17]]));
        if reclen < 20 {
            break; // not a record the kernel makes
        }
        let typ = wide[i + 18];
        let name_area = &wide[i + 19..(i + reclen).min(n)];
        let name = &name_area[..name_area.iter().position(|&b| b == 0).unwrap_or(name_area.len())];
        if ino > u64::from(u32::MAX) {
            return Err(EOVERFLOW);
        }
        let rec = (10 + name.len() + 2).next_multiple_of(4);
        let start = out.len();
        out.resize(start + rec, 0);
        let r = &mut out[start..];
        r[0..4].copy_from_slice(&(ino as u32).to_le_bytes());
        r[4..8].copy_from_slice(&(off as u32).to_le_bytes());
        r[8..10].copy_from_slice(&(rec as u16).to_le_bytes());
        r[10..10 + name.len()].copy_from_slice(name);
        r[rec - 1] = typ;
        i += reclen;
    }
    p.aspace.write_bytes(a[1], &out).map_err(efault)?;
    Ok(out.len() as u32)
}

/// Reads from a descriptor morph serves itself (`/dev/urandom`, a directory of its
/// own): fills `bufs` (of which the first `valid` bytes may be written, the rest lies
/// after a fault) and returns the result, or `None` for an ordinary descriptor.
pub(crate) fn read_special(
    m: &mut FileCtx<'_>,
    p: &mut Process,
    fd: u32,
    bufs: &[InPlace],
    valid: u32,
) -> Option<SysResult> {
    let e = p.fds.get(fd)?;
    match &e.host.kind {
        FileKind::Host | FileKind::Device(_) => None,
        FileKind::Snapshot(s) => {
            s.fill(m.sys(), p);
            None
        }
        FileKind::Dir(_) => Some(Err(EISDIR)),
        FileKind::Random(_) => {
            if host::getfl(e.host.as_raw_fd()).unwrap_or(-1) & libc::O_ACCMODE == libc::O_WRONLY {
                return Some(Err(EBADF));
            }
            // As Linux: the bytes before the first fault, EFAULT if there are none.
            let total: usize = bufs.iter().map(|b| b.len()).sum();
            if valid == 0 && total > 0 {
                return Some(Err(EFAULT));
            }
            let mut left = valid as usize;
            let mut bytes = Vec::new();
            for b in bufs {
                // The first `valid` bytes are prepared, writable guest memory.
                bytes.resize(b.len().min(left), 0);
                m.rng.fill_bytes(&mut bytes);
                if let Err(e) = p.aspace.write_bytes(b.va(&p.aspace), &bytes) {
                    return Some(Err(efault(e)));
                }
                left -= bytes.len();
            }
            Some(Ok(valid))
        }
    }
}
