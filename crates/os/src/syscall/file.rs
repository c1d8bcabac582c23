//! Descriptor I/O: open, read, write, seek, dup, close, fcntl, ioctl, truncate, allocate, sync, fadvise,
//! memfds, directory listings.

use super::common::*;
use super::wait;
use crate::files::{Owner, OwnerKind};

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
        225 readahead "fqu" |_, p, a| host::readahead(host_fd(p, a[0])?, pair(a[1], a[2]), a[3]);
        250 fadvise64 "fqud" sys_fadvise64;
        272 fadvise64_64 "fqqd" sys_fadvise64_64;
        295 openat "fsOo" sys_openat;
        314 sync_file_range "fqqx" sys_sync_file_range;
        324 fallocate "fdqq" sys_fallocate;
        330 dup3 "ffx" sys_dup3;
        333 preadv "fvuuu" |m, p, a| preadv(m, p, a, false);
        334 pwritev "fVuuu" |m, p, a| pwritev(m, p, a, false);
        344 syncfs "f" sys_syncfs;
        356 memfd_create "su" sys_memfd_create;
        378 preadv2 "fvuuux" |m, p, a| preadv(m, p, a, true);
        379 pwritev2 "fVuuux" |m, p, a| pwritev(m, p, a, true);
        436 close_range "uuu" sys_close_range;
        437 openat2 "fspu" sys_openat2;
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
    if let Some(e) = super::net::netlink::pending_error(p, a[0]) {
        return Err(e);
    }
    let len = a[2].min(MAX_RW);
    let valid = guest_out(p, a[1], len)?;
    let buf = InPlace::window(&p.aspace, a[1], len);
    if let Some(r) = super::signal::signalfd_read(p, a[0], &[buf], valid) {
        return r;
    }
    if let Some(r) = read_special(m, p, a[0], &[buf], valid) {
        return r;
    }
    super::tty::before_read(m, p, a[0])?;
    wait::ready_or_block(p, a[0], libc::POLLIN)?;
    sync_before_read(m.cache, m.phys, p, a[0]);
    wait::host_readv(p, a[0], &[buf])
}

pub(super) fn sys_write(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    host_fd(p, a[0])?;
    let len = a[2].min(MAX_RW);
    if super::net::netlink::of(p, a[0]).is_some() {
        return super::net::netlink::write(p, a[0], &[InPlace::window(&p.aspace, a[1], len)]);
    }
    guest_in(p, a[1], len)?;
    // A write re-run after waiting for room goes on where it stopped (see
    // `wait::wrote_all_or_block`).
    let done = wait::write_progress(p, a[0], a[1], len);
    if done == 0 {
        super::tty::before_write(m, p, a[0])?;
        wait::ready_or_block(p, a[0], libc::POLLOUT)?;
    }
    let one = [InPlace::window(&p.aspace, a[1].wrapping_add(done), len - done)];
    let r = wait::host_writev(p, a[0], &one);
    if let Ok(k) = r {
        super::tty::master_wrote(m, p, a[0], &one, k);
    }
    let n = wait::wrote_all_or_block(p, a[0], (a[1], len), done, r)?;
    wrote(m.cache, m.phys, p, a[0], None, n);
    grew(m, p, a[0]);
    Ok(n)
}

/// `Err(e)` if guest `fd` is a pidfd. Linux's pidfd (a pidfs file) cannot seek
/// (`ESPIPE`) and has no read or write, so its positioned transfers are `EINVAL` before
/// their buffers are looked at; its host stand-in (see `crate::files::Served`) would
/// seek, and refuse those with `ESPIPE`.
fn pidfd_refuses(p: &Process, fd: u32, e: Errno) -> Result<(), Errno> {
    if p.fds.get(fd).is_some_and(|x| x.host.is_pidfd()) { Err(e) } else { Ok(()) }
}

pub(super) fn sys_pread64(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let fd = host_fd(p, a[0])?;
    pidfd_refuses(p, a[0], EINVAL)?;
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
    pidfd_refuses(p, a[0], EINVAL)?;
    let len = a[2].min(MAX_RW);
    let off = ((u64::from(a[4]) << 32) | u64::from(a[3])) as i64;
    guest_in(p, a[1], len)?;
    let n = host::pwrite_in_place(fd, InPlace::window(&p.aspace, a[1], len), off)?;
    wrote(m.cache, m.phys, p, a[0], Some(off as u64), n);
    grew(m, p, a[0]);
    Ok(n)
}

/// The offset of `preadv`/`pwritev` (`a[3]` low, `a[4]` high: `EINVAL` if negative)
/// or of their `2` forms, where -1 means the file position (`None`), with their flags
/// (`RWF_*`, checked by the host).
fn vector_offset(a: &[u32; 6], two: bool) -> Result<(Option<i64>, i32), Errno> {
    let off = ((u64::from(a[4]) << 32) | u64::from(a[3])) as i64;
    match (off, two) {
        (-1, true) => Ok((None, a[5] as i32)),
        (o, _) if o < 0 => Err(EINVAL),
        (o, true) => Ok((Some(o), a[5] as i32)),
        (o, false) => Ok((Some(o), 0)),
    }
}

/// `preadv(fd, iov, n, pos_lo, pos_hi)` and `preadv2(…, flags)`: `readv` at an offset (the
/// file position unchanged), or at the file position for `preadv2`'s -1.
fn preadv(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6], two: bool) -> SysResult {
    let (off, flags) = vector_offset(a, two)?;
    let fd = host_fd(p, a[0])?;
    pidfd_refuses(p, a[0], EINVAL)?;
    let (v, valid) = iovecs_valid(p, a[1], a[2], true).map_err(|e| vector_checks(p, a[0], false, off, e))?;
    if let Some(r) = read_special(m, p, a[0], &v, valid) {
        return r;
    }
    sync_before_read(m.cache, m.phys, p, a[0]);
    host::preadv2_in_place(fd, &v, off.unwrap_or(-1), flags)
}

/// `pwritev(fd, iov, n, pos_lo, pos_hi)` and `pwritev2(…, flags)`: `writev` at an offset,
/// or at the file position for `pwritev2`'s -1.
fn pwritev(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6], two: bool) -> SysResult {
    let (off, flags) = vector_offset(a, two)?;
    let fd = host_fd(p, a[0])?;
    pidfd_refuses(p, a[0], EINVAL)?;
    let v = iovecs(p, a[1], a[2], false).map_err(|e| vector_checks(p, a[0], true, off, e))?;
    if off.is_none() && super::net::netlink::of(p, a[0]).is_some() {
        return super::net::netlink::write(p, a[0], &v); // pwritev2 at the position: writev
    }
    let n = host::pwritev2_in_place(fd, &v, off.unwrap_or(-1), flags)?;
    wrote(m.cache, m.phys, p, a[0], off.map(|o| o as u64), n);
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

/// `sync_file_range(fd, offset_lo, offset_hi, nbytes_lo, nbytes_hi, flags)`: i386 passes
/// the 64-bit offset and count in two registers each (`sys_ia32_sync_file_range`). The
/// host's call on the host descriptor makes Linux's checks (`EBADF`, then `EINVAL` for
/// unknown flags, a negative offset or a range past the largest offset, then `ESPIPE`
/// for what is neither a file, a directory nor a block device) and starts or waits for
/// the host file's write-out. Stores made through shared mappings of the file live in
/// the machine's page cache until written back, so a call that asks for write-out
/// (`SYNC_FILE_RANGE_WRITE`) and passes those checks writes them back first, as
/// `fsync` does (the whole file's: it covers the range).
pub(super) fn sys_sync_file_range(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    const SYNC_FILE_RANGE_WRITE: u32 = 2;
    const VALID: u32 = 7;
    let (offset, nbytes, flags) = (pair(a[1], a[2]), pair(a[3], a[4]), a[5]);
    let e = p.fds.get(a[0]).ok_or(EBADF)?;
    let valid = flags & !VALID == 0 && offset >= 0 && offset.checked_add(nbytes).is_some_and(|end| end >= offset);
    if valid
        && flags & SYNC_FILE_RANGE_WRITE != 0
        && let Some(key) = e.file()
    {
        m.cache.write_back(m.phys, key).map_err(|_| EIO)?;
    }
    host::sync_file_range(e.host.as_raw_fd(), offset, nbytes, flags)
}

/// `sync`: the stores made through shared mappings of every file are written back
/// (they live in the machine's page cache until then), then the host's `syncfs` makes
/// the file system of the guest's root durable: that is the guest's whole world, and
/// the host-wide `sync` would flush file systems the guest cannot see. Always 0, as
/// Linux's (a failure is not reported).
pub(super) fn sys_sync(m: &mut FileCtx<'_>, _: &mut Process, _: &[u32; 6]) -> SysResult {
    let _ = m.cache.write_back_all(m.phys);
    // syncfs takes no O_PATH descriptor: the root is opened for reading.
    if let Ok(root) = m.vfs.open(b"/", b"/", libc::O_RDONLY | libc::O_DIRECTORY, 0) {
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

/// Linux checks that a descriptor is open for the transfer (`EBADF`) and can make it
/// at all (`EINVAL`; `ESPIPE` for a positioned one that cannot seek) before it reads
/// the guest's `iovec` array: after `err` (the array could not be read, or its count or
/// a length is refused), a transfer of no buffers on the host descriptor (`at` for the
/// positioned calls) makes those checks alone, and what it refuses is the answer. A
/// signalfd, whose host stand-in is an epoll instance, can be read; a socket is not
/// asked.
fn vector_checks(p: &Process, fd: u32, write: bool, at: Option<i64>, err: Errno) -> Errno {
    let Some(e) = p.fds.get(fd) else { return EBADF };
    let raw = e.host.as_raw_fd();
    if !write && at.is_none() && e.host.served.is_some() && !e.host.is_pidfd() {
        return err;
    }
    // A socket is open for both; and a transfer of no bytes on one is not nothing (a
    // datagram socket would send an empty datagram).
    if host_stat_fd(raw).is_ok_and(|st| st.st_mode & libc::S_IFMT == libc::S_IFSOCK) {
        return err;
    }
    let checks = match (write, at) {
        (false, None) => host::readv_in_place(raw, &[]),
        (true, None) => host::writev_in_place(raw, &[]),
        (false, Some(off)) => host::preadv2_in_place(raw, &[], off, 0),
        (true, Some(off)) => host::pwritev2_in_place(raw, &[], off, 0),
    };
    checks.err().unwrap_or(err)
}

pub(super) fn sys_readv(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    host_fd(p, a[0])?;
    if let Some(e) = super::net::netlink::pending_error(p, a[0]) {
        return Err(e);
    }
    let (v, valid) = iovecs_valid(p, a[1], a[2], true).map_err(|e| vector_checks(p, a[0], false, None, e))?;
    if let Some(r) = super::signal::signalfd_read(p, a[0], &v, valid) {
        return r;
    }
    if let Some(r) = read_special(m, p, a[0], &v, valid) {
        return r;
    }
    super::tty::before_read(m, p, a[0])?;
    wait::ready_or_block(p, a[0], libc::POLLIN)?;
    sync_before_read(m.cache, m.phys, p, a[0]);
    wait::host_readv(p, a[0], &v)
}

pub(super) fn sys_writev(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    host_fd(p, a[0])?;
    let v = iovecs(p, a[1], a[2], false).map_err(|e| vector_checks(p, a[0], true, None, e))?;
    if super::net::netlink::of(p, a[0]).is_some() {
        return super::net::netlink::write(p, a[0], &v);
    }
    let len = v.iter().map(InPlace::len).sum::<usize>().min(MAX_RW as usize) as u32;
    let done = wait::write_progress(p, a[0], a[1], len);
    if done == 0 {
        super::tty::before_write(m, p, a[0])?;
        wait::ready_or_block(p, a[0], libc::POLLOUT)?;
    }
    // The buffers' bytes after the first `done`.
    let mut skip = done as usize;
    let rest: Vec<InPlace> = v
        .iter()
        .filter_map(|b| {
            let take = skip.min(b.len());
            skip -= take;
            (take < b.len())
                .then(|| InPlace::window(&p.aspace, b.va(&p.aspace).wrapping_add(take as u32), (b.len() - take) as u32))
        })
        .collect();
    let r = wait::host_writev(p, a[0], &rest);
    if let Ok(k) = r {
        super::tty::master_wrote(m, p, a[0], &rest, k);
    }
    let n = wait::wrote_all_or_block(p, a[0], (a[1], len), done, r)?;
    wrote(m.cache, m.phys, p, a[0], None, n);
    grew(m, p, a[0]);
    Ok(n)
}

/// Guest `open` flags → host flags (the values are the same on i386 and x86-64; only
/// close-on-exec is kept by morph itself).
pub(super) fn open_common(
    m: &mut FileCtx<'_>,
    p: &mut Process,
    dir: &[u8],
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
    install_opened(m, p, file, flags)
}

/// Installs a file just opened with guest `open` flags `flags` (`O_TRUNC`: the page
/// cache learns the new length): the new descriptor. It keeps the flags `F_GETFL`
/// shows as given (`OpenFile::open_flags`; `O_PATH` drops `O_LARGEFILE`).
fn install_opened(m: &mut FileCtx<'_>, p: &mut Process, mut file: OpenFile, flags: u32) -> SysResult {
    let kept = if flags & O_PATH != 0 { O_DIRECTORY | O_NOFOLLOW } else { O_LARGEFILE | O_DIRECTORY | O_NOFOLLOW };
    file.open_flags = flags & kept;
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
    open_host_with(p, host_flags, flags, |fl| m.vfs.open(b"/", abs, fl, mode))
}

/// [`open_host`] with the host open made by `open`, given the host flags (`openat2`'s
/// resolutions open relative to other directories, with other `RESOLVE_*` flags).
fn open_host_with(
    p: &mut Process,
    host_flags: i32,
    flags: u32,
    open: impl FnOnce(i32) -> Result<OwnedFd, Errno>,
) -> Result<OpenFile, Errno> {
    let guest_nb = flags & O_NONBLOCK != 0;
    // An O_PATH open opens nothing (and takes no other flag).
    let path_only = host_flags & libc::O_PATH != 0;
    let nb = if path_only { 0 } else { libc::O_NONBLOCK };
    match open(host_flags | nb) {
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
pub(super) fn at_dir(vfs: &Vfs, p: &Process, dirfd: u32, path: &[u8]) -> Result<Vec<u8>, Errno> {
    if path.first() == Some(&b'/') || dirfd as i32 == AT_FDCWD {
        return Ok(p.cwd.clone());
    }
    let e = p.fds.get(dirfd).ok_or(EBADF)?;
    match &e.host.kind {
        FileKind::Dir(d) => Ok(d.path.clone().into_bytes()),
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
    let mut file = OpenFile::new(fd);
    file.open_flags = O_LARGEFILE; // Linux sets it on every memfd
    p.fds.install(FdEntry::of(file, flags & MFD_CLOEXEC != 0), 0).ok_or(EMFILE)
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
    pidfd_refuses(p, a[0], ESPIPE)?;
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
    pidfd_refuses(p, a[0], ESPIPE)?;
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
    if a[1] as usize >= p.fds.limit() {
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
    if a[1] as usize >= p.fds.limit() {
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
    const F_SETPIPE_SZ: u32 = 1031;
    const F_GETPIPE_SZ: u32 = 1032;
    let e = p.fds.get(a[0]).ok_or(EBADF)?.clone();
    match a[1] {
        F_DUPFD | F_DUPFD_CLOEXEC => {
            if a[2] as usize >= p.fds.limit() {
                return Err(EINVAL);
            }
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
        F_GETFL => e.host.guest_flags(),
        F_SETFL => {
            let mut fl = a[2] & !O_LARGEFILE;
            if e.host.host_nonblock {
                fl |= O_NONBLOCK;
            }
            // Signal-driven I/O: the host's signals for the description come to morph
            // first, and name this descriptor (Linux's `fasync_helper`, when the flag
            // turns on).
            let was_async = host::getfl(e.host.as_raw_fd()).is_ok_and(|f| f as u32 & O_ASYNC != 0);
            if fl & O_ASYNC != 0 && !was_async {
                crate::sigio::enable(&e.host)?;
                e.host.fown.async_fd.set(Some(a[0]));
            }
            let r = host::setfl(e.host.as_raw_fd(), fl as i32)?;
            e.host.nonblock.set(a[2] & O_NONBLOCK != 0);
            Ok(r)
        }
        F_GETLK | F_SETLK | F_SETLKW => record_lock(m, p, &e, a[1], a[2], false),
        F_GETLK64 | F_SETLK64 | F_SETLKW64 => record_lock(m, p, &e, a[1] - 7, a[2], true),
        // morph's pipes are the host's: their capacity is (`EBADF` for anything else).
        F_SETPIPE_SZ => host::set_pipe_size(e.host.as_raw_fd(), a[2]),
        F_GETPIPE_SZ => host::pipe_size(e.host.as_raw_fd()),
        F_SETOWN..=F_GETSIG | F_SETOWN_EX..=F_GETOWNER_UIDS => owner(m, p, &e, a[1], a[2]),
        F_NOTIFY => {
            // The host watches the directory (`ENOTDIR`, `EINVAL` and the rest are its
            // answers); like Linux's dnotify, asking makes the caller the owner.
            crate::sigio::enable(&e.host)?;
            host::notify_dir(e.host.as_raw_fd(), a[2] as i32)?;
            let creds = p.attrs.creds;
            e.host.fown.owner.set(Owner { kind: OwnerKind::Process, id: p.pid, uid: creds.uid, euid: creds.euid });
            e.host.fown.notify_fd.set(Some(a[0]));
            Ok(0)
        }
        // Write-life hints are the host file's.
        F_GET_RW_HINT | F_SET_RW_HINT => {
            let set = a[1] == F_SET_RW_HINT;
            let mut hint = [0u8; 8];
            if set {
                p.aspace.read_bytes(a[2], &mut hint).map_err(efault)?;
            }
            let mut h = u64::from_le_bytes(hint);
            host::rw_hint(e.host.as_raw_fd(), set, &mut h)?;
            if !set {
                p.aspace.write_bytes(a[2], &h.to_le_bytes()).map_err(efault)?;
            }
            Ok(0)
        }
        _ => Err(EINVAL),
    }
}

const O_ASYNC: u32 = 0o20000;
const F_SETOWN: u32 = 8;
const F_GETOWN: u32 = 9;
const F_SETSIG: u32 = 10;
const F_GETSIG: u32 = 11;
const F_SETOWN_EX: u32 = 15;
const F_GETOWN_EX: u32 = 16;
const F_GETOWNER_UIDS: u32 = 17;
const F_NOTIFY: u32 = 1026;
const F_GET_RW_HINT: u32 = 1035;
const F_SET_RW_HINT: u32 = 1036;

/// The owner of a description's I/O signals (see `crate::sigio`), as Linux's
/// `f_setown`, `f_getown`, `f_setown_ex`, `f_getown_ex` and `f_getowner_uids` keep and
/// show it: `F_SETOWN` takes a process (a negative number: a process group) and
/// `F_SETOWN_EX` a thread, process or group, either `ESRCH` if no such id is in use;
/// reading shows 0 once the owner is gone.
fn owner(m: &mut FileCtx<'_>, p: &mut Process, e: &FdEntry, cmd: u32, arg: u32) -> SysResult {
    const F_OWNER_TID: u32 = 0;
    const F_OWNER_PID: u32 = 1;
    const F_OWNER_PGRP: u32 = 2;
    let fown = &e.host.fown;
    let creds = p.attrs.creds;
    // The ids of who set it are kept only when it names someone (`f_modown`).
    let set = |kind: OwnerKind, id: u32| {
        let old = fown.owner.get();
        let (uid, euid) = if id != 0 { (creds.uid, creds.euid) } else { (old.uid, old.euid) };
        fown.owner.set(Owner { kind, id, uid, euid })
    };
    match cmd {
        F_SETOWN => {
            let who = arg as i32;
            if who == i32::MIN {
                return Err(EINVAL);
            }
            let kind = if who < 0 { OwnerKind::Group } else { OwnerKind::Process };
            let id = who.unsigned_abs();
            if id != 0 && !m.pid_in_use(p, id) {
                return Err(ESRCH);
            }
            set(kind, id);
            Ok(0)
        }
        F_GETOWN => {
            let o = fown.owner.get();
            Ok(match (m.owner_alive(p, &o), o.kind) {
                (false, _) => 0,
                (true, OwnerKind::Group) => o.id.wrapping_neg(),
                (true, _) => o.id,
            })
        }
        F_SETSIG if arg > 64 => Err(EINVAL),
        F_SETSIG => {
            fown.sig.set(arg);
            Ok(0)
        }
        F_GETSIG => Ok(fown.sig.get()),
        F_SETOWN_EX => {
            let mut b = [0u8; 8];
            p.aspace.read_bytes(arg, &mut b).map_err(efault)?;
            let kind = match le_u32(&b, 0) {
                F_OWNER_TID => OwnerKind::Thread,
                F_OWNER_PID => OwnerKind::Process,
                F_OWNER_PGRP => OwnerKind::Group,
                _ => return Err(EINVAL),
            };
            let id = le_u32(&b, 4);
            if id != 0 && ((id as i32) < 0 || !m.pid_in_use(p, id)) {
                return Err(ESRCH);
            }
            set(kind, id);
            Ok(0)
        }
        F_GETOWN_EX => {
            let o = fown.owner.get();
            let kind = match o.kind {
                OwnerKind::Thread => F_OWNER_TID,
                OwnerKind::Process => F_OWNER_PID,
                OwnerKind::Group => F_OWNER_PGRP,
            };
            let id = if m.owner_alive(p, &o) { o.id } else { 0 };
            let mut b = [0u8; 8];
            b[..4].copy_from_slice(&kind.to_le_bytes());
            b[4..].copy_from_slice(&id.to_le_bytes());
            p.aspace.write_bytes(arg, &b).map_err(efault)?;
            Ok(0)
        }
        // F_GETOWNER_UIDS
        _ => {
            let o = fown.owner.get();
            let mut b = [0u8; 8];
            b[..4].copy_from_slice(&o.uid.to_le_bytes());
            b[4..].copy_from_slice(&o.euid.to_le_bytes());
            p.aspace.write_bytes(arg, &b).map_err(efault)?;
            Ok(0)
        }
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
    p.blocked = Some(Blocked { wait: Wait::Fds(Vec::new()), deadline, restartable: false, partial: None });
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
    if a[1] != FIONBIO && p.fds.get(a[0]).is_some_and(|e| matches!(e.host.kind, FileKind::Pty(_))) {
        return super::tty::pty_ioctl(m, p, a);
    }
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
    if let Some(r) = super::net::iface::ioctl(p, fd, a[1], a[2]) {
        return r;
    }
    let size = match a[1] {
        TCGETS => 36,
        TIOCGWINSZ => 8,
        // A netlink socket has no queue-size ioctl (its host stand-in would answer).
        FIONREAD if super::net::netlink::of(p, a[0]).is_some() => return Err(ENOTTY),
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
        // A link opened itself: its host descriptor is O_PATH, which reads nothing.
        FileKind::Host | FileKind::Device(_) | FileKind::Link(_) | FileKind::Pty(_) => None,
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

// ----- openat2 ------------------------------------------------------------------------
//
// `openat2(dirfd, path, how, size)`: `openat` with a `struct open_how` (64-bit flags,
// mode and `RESOLVE_*` flags restricting how the path resolves), every argument
// checked as Linux 6 checks it.
//
// Without `RESOLVE_*` flags it is `openat` (the same code). With them, the path is
// resolved where Linux would resolve it, with the restrictions applied by the host
// kernel itself where the path is an ordinary one of the root, and by morph on the
// way through its own `/dev` and `/proc`:
//
// * `RESOLVE_BENEATH` and `RESOLVE_IN_ROOT`: the host's `openat2` relative to the host
//   directory behind the guest's (which lies inside the root, so the scope keeps the
//   guest inside it too), with the same flag; an absolute path is `EXDEV` for
//   `RESOLVE_BENEATH` before the directory is looked at, as in Linux.
// * otherwise (only `RESOLVE_NO_XDEV`, `RESOLVE_NO_SYMLINKS`, `RESOLVE_NO_MAGICLINKS`,
//   `RESOLVE_CACHED`): morph's usual resolution (the guest path, joined to the
//   directory's, resolved from the root with `RESOLVE_IN_ROOT`) with the guest's
//   flags added. The starting directory's own path is canonical (no links), so only
//   `RESOLVE_NO_XDEV` could see a difference: a mount crossed on the way from the
//   root to the directory. When the directory is on another mount than the root, the
//   host resolves relative to the directory itself with `RESOLVE_NO_XDEV`, which can
//   leave neither that mount nor so the root.
// * `RESOLVE_NO_MAGICLINKS` is always on for the host (the host's `/proc` is never the
//   guest's); `RESOLVE_CACHED` asks the host's dentry cache, which holds the guest's
//   files.
//
// A path that goes through `/dev` or `/proc` (lexically, as morph resolves them
// always; see `crate::special`) is walked here one component at a time: morph's
// `/dev` and `/proc` are separate mounts to `RESOLVE_NO_XDEV` (as devtmpfs and procfs
// are, with their own device numbers in `stat`), `/proc/self` and `/dev/stdin`,
// `/dev/stdout`, `/dev/stderr`, `/dev/fd` are symbolic links, and `/proc/<pid>/fd/N`,
// `exe`, `cwd` and `root` magic links, each refused as Linux refuses it (`ELOOP`,
// `EXDEV`; `EAGAIN` for a magic link under `RESOLVE_CACHED`, which Linux's procfs
// cannot follow from its cache, and for a `/proc/<pid>/fd/N` even when it is opened
// itself, which that cache never holds). Past a magic link no restriction is left that
// Linux would apply, and the path is opened as `openat` opens it. `RESOLVE_CACHED`
// finds morph's own objects always in memory.

const RESOLVE_NO_XDEV: u64 = 0x01;
const RESOLVE_NO_MAGICLINKS: u64 = 0x02;
const RESOLVE_NO_SYMLINKS: u64 = 0x04;
const RESOLVE_BENEATH: u64 = 0x08;
const RESOLVE_IN_ROOT: u64 = 0x10;
const RESOLVE_CACHED: u64 = 0x20;
const SCOPED: u64 = RESOLVE_BENEATH | RESOLVE_IN_ROOT;

/// `OPEN_HOW_SIZE_VER0`, the size of the only `struct open_how` there is.
const OPEN_HOW_SIZE: u32 = 24;

const O_DSYNC: u64 = 0o10000;
const FASYNC: u64 = 0o20000;
const O_DIRECT: u64 = 0o40000;
const O_NOATIME: u64 = 0o1000000;
const O_SYNC_BIT: u64 = 0o4000000;
const O_TMPFILE_BIT: u64 = 0o20000000;

/// The open flags `openat2` takes (Linux's `VALID_OPEN_FLAGS`; `O_NDELAY` is
/// `O_NONBLOCK`).
const VALID_OPEN_FLAGS: u64 = (O_ACCMODE
    | O_CREAT
    | O_EXCL
    | O_NOCTTY
    | O_TRUNC
    | O_APPEND
    | O_NONBLOCK
    | O_LARGEFILE
    | O_DIRECTORY
    | O_NOFOLLOW
    | O_CLOEXEC
    | O_PATH) as u64
    | O_DSYNC
    | FASYNC
    | O_DIRECT
    | O_NOATIME
    | O_SYNC_BIT
    | O_TMPFILE_BIT;

/// Links followed in one resolution before `ELOOP` (Linux's `MAXSYMLINKS`).
const MAX_LINKS: u32 = 40;

/// Linux's `build_open_flags` checks, in its order (`flags` without `O_CLOEXEC`).
fn check_how(flags: u64, mode: u64, resolve: u64) -> Result<(), Errno> {
    let (o, s) = (|f: u32| u64::from(f), flags);
    if s & !VALID_OPEN_FLAGS != 0 || resolve & !0x3f != 0 || resolve & SCOPED == SCOPED {
        return Err(EINVAL);
    }
    let creates = s & (o(O_CREAT) | O_TMPFILE_BIT) != 0;
    if (creates && mode & !0o7777 != 0) || (!creates && mode != 0) {
        return Err(EINVAL);
    }
    if s & o(O_DIRECTORY | O_CREAT) == o(O_DIRECTORY | O_CREAT) {
        return Err(EINVAL);
    }
    // O_TMPFILE needs O_DIRECTORY and an access mode that writes (1, 2 or 3).
    if s & O_TMPFILE_BIT != 0 && (s & o(O_DIRECTORY) == 0 || s & o(O_ACCMODE) == 0) {
        return Err(EINVAL);
    }
    if s & o(O_PATH) != 0 && s & !o(O_DIRECTORY | O_NOFOLLOW | O_PATH) != 0 {
        return Err(EINVAL);
    }
    if resolve & RESOLVE_CACHED != 0 && s & (o(O_TRUNC | O_CREAT) | O_TMPFILE_BIT) != 0 {
        return Err(EAGAIN);
    }
    Ok(())
}

/// Reads the guest's `struct open_how` of `size` bytes at `ptr` as Linux's
/// `copy_struct_from_user` does: bytes past the structure this kernel knows must be
/// zero (`E2BIG`, `EFAULT` where they cannot be read, page by page), then the
/// structure itself (`EFAULT`). Returns (flags, mode, resolve).
fn read_how(p: &Process, ptr: u32, size: u32) -> Result<(u64, u64, u64), Errno> {
    let mut at = ptr.wrapping_add(OPEN_HOW_SIZE);
    let mut left = size - OPEN_HOW_SIZE;
    while left > 0 {
        let n = left.min(PAGE_SIZE - at % PAGE_SIZE);
        let mut b = vec![0u8; n as usize];
        p.aspace.read_bytes(at, &mut b).map_err(efault)?;
        if b.iter().any(|&x| x != 0) {
            return Err(E2BIG);
        }
        at = at.wrapping_add(n);
        left -= n;
    }
    let mut how = [0u8; 24];
    p.aspace.read_bytes(ptr, &mut how).map_err(efault)?;
    let word = |i: usize| u64::from_le_bytes(how[8 * i..8 * i + 8].try_into().unwrap_or_default());
    Ok((word(0), word(1), word(2)))
}

pub(super) fn sys_openat2(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let (dirfd, path_ptr, how_ptr, size) = (a[0], a[1], a[2], a[3]);
    if size < OPEN_HOW_SIZE {
        return Err(EINVAL);
    }
    if size > PAGE_SIZE {
        return Err(E2BIG);
    }
    let (mut flags, mode, resolve) = read_how(p, how_ptr, size)?;
    // The x86-64 kernel that runs i386 programs forces O_LARGEFILE (not with O_PATH).
    if flags & u64::from(O_PATH) == 0 {
        flags |= u64::from(O_LARGEFILE);
    }
    check_how(flags & !u64::from(O_CLOEXEC), mode, resolve)?;
    let path = read_path(p, path_ptr)?;
    if path.is_empty() {
        return Err(ENOENT);
    }
    // Valid flags and mode fit in 32 bits.
    let (flags, mode) = (flags as u32, mode as u32);
    if resolve == 0 {
        let dir = at_dir(m.vfs, p, dirfd, &path)?;
        return open_common(m, p, &dir, &path, flags, mode);
    }
    if resolve & RESOLVE_BENEATH != 0 && path[0] == b'/' {
        return Err(EXDEV);
    }
    let start = start_dir(m.vfs, p, dirfd, &path, resolve)?;
    let follow = flags & O_NOFOLLOW == 0 && flags & (O_CREAT | O_EXCL) != O_CREAT | O_EXCL;
    if Vfs::is_special(&start.path) || meets_special(&start.path, &path, resolve) {
        return match walk(m.sys(), p, &start.path, &path, resolve, follow)? {
            Walked::Magic => open_common(m, p, &start.path, &path, flags, mode),
            Walked::Path(f) => {
                let mode = mode & !p.umask;
                match special::resolve(m.sys(), p, b"/", &f, follow)? {
                    Resolved::Node(n) => {
                        let file = special::open(m.sys(), p, n, flags, mode)?;
                        install_opened(m, p, file, flags)
                    }
                    // Back in the root (out of /proc by `..`): the host resolves the
                    // rest with the guest's flags.
                    Resolved::Path(abs) => {
                        let root = Start { path: b"/".to_vec(), fd: None };
                        open_at(m, p, &root, &abs, resolve & !SCOPED, flags, mode)
                    }
                }
            }
        };
    }
    open_at(m, p, &start, &path, resolve, flags, mode & !p.umask)
}

/// Where a resolution starts: the guest path of a directory, and the guest's host
/// descriptor of it if the guest gave one.
struct Start {
    path: Vec<u8>,
    fd: Option<std::rc::Rc<OpenFile>>,
}

/// The directory `path` resolves from: the working directory or `dirfd`'s (`EBADF`,
/// `ENOTDIR` as `*at` calls find them), also for an absolute path with
/// `RESOLVE_IN_ROOT`, which makes it the root.
fn start_dir(vfs: &Vfs, p: &Process, dirfd: u32, path: &[u8], resolve: u64) -> Result<Start, Errno> {
    if resolve & RESOLVE_IN_ROOT == 0 || dirfd as i32 == AT_FDCWD {
        let dir = at_dir(vfs, p, dirfd, path)?;
        let fd = (path[0] != b'/' && dirfd as i32 != AT_FDCWD).then(|| p.fds.get(dirfd).map(|e| e.host.clone()));
        return Ok(Start { path: dir, fd: fd.flatten() });
    }
    // at_dir with a relative path: the descriptor's directory.
    let dir = at_dir(vfs, p, dirfd, b".")?;
    Ok(Start { path: dir, fd: p.fds.get(dirfd).map(|e| e.host.clone()) })
}

/// Opens `path` (from `start`) with the host's `openat2` and the guest's `RESOLVE_*`
/// flags (see the module documentation), then installs it as `openat` does.
fn open_at(
    m: &mut FileCtx<'_>,
    p: &mut Process,
    start: &Start,
    path: &[u8],
    resolve: u64,
    flags: u32,
    mode: u32,
) -> SysResult {
    let host_flags = (flags & !(O_CLOEXEC | O_LARGEFILE)) as i32;
    let mode = if flags & O_CREAT != 0 || u64::from(flags) & O_TMPFILE_BIT != 0 { u64::from(mode & 0o7777) } else { 0 };
    let extra = libc::RESOLVE_NO_MAGICLINKS | (resolve & (RESOLVE_NO_XDEV | RESOLVE_NO_SYMLINKS | RESOLVE_CACHED));
    let c = std::ffi::CString::new(path).map_err(|_| EINVAL)?;
    // The directory the host resolves from, and how.
    let (dir, c, how) = if resolve & SCOPED != 0 {
        (dir_fd(m.vfs, start)?, c, extra | (resolve & SCOPED))
    } else {
        // The root the path resolves in: the process's, or the machine's for a path
        // outside it (see `crate::vfs::UNREACHABLE`).
        let abs = Vfs::absolute(&start.path, path);
        let (top, abs) = match abs.strip_prefix(crate::vfs::UNREACHABLE) {
            Some(rest) => ([crate::vfs::UNREACHABLE, b"/"].concat(), rest.to_vec()),
            None => (b"/".to_vec(), abs),
        };
        let root = m.vfs.open(b"/", &top, libc::O_PATH | libc::O_DIRECTORY, 0)?;
        let dir = match path[0] != b'/' && resolve & RESOLVE_NO_XDEV != 0 {
            true => Some(dir_fd(m.vfs, start)?),
            false => None,
        };
        match dir {
            // On another mount than the root: from the directory itself, which
            // RESOLVE_NO_XDEV keeps on its mount.
            Some(d) if matches!((mount_id(d.as_raw_fd()), mount_id(root.as_raw_fd())), (Some(x), Some(y)) if x != y) => {
                (d, c, extra)
            }
            _ => {
                let abs = std::ffi::CString::new(abs).map_err(|_| EINVAL)?;
                (root, abs, extra | libc::RESOLVE_IN_ROOT)
            }
        }
    };
    let vfs = m.vfs;
    let file = open_host_with(p, host_flags, flags, |fl| {
        let fd = host::openat2(dir.as_raw_fd(), &c, (fl | libc::O_CLOEXEC) as u64, mode, how)?;
        // A link that led to the host's own /dev or /proc: not the guest's (see vfs.rs).
        if vfs.machine_path_of(&fd).is_ok_and(|g| Vfs::is_special(&g)) {
            return Err(ENOENT);
        }
        Ok(fd)
    })?;
    install_opened(m, p, file, flags)
}

/// A host descriptor of the directory a resolution starts from: the guest's own
/// descriptor (a new reference to it) or its path opened inside the root.
fn dir_fd(vfs: &Vfs, start: &Start) -> Result<OwnedFd, Errno> {
    match &start.fd {
        Some(f) => host::dup_cloexec(f.as_raw_fd(), 0),
        None => vfs.open(b"/", &start.path, libc::O_PATH | libc::O_DIRECTORY, 0),
    }
}

/// The host mount a host descriptor is on (`statx`'s `stx_mnt_id`).
fn mount_id(fd: i32) -> Option<u64> {
    let mut b = [0u8; 256];
    host::statx_fd(fd, libc::STATX_MNT_ID, &mut b).ok()?;
    let mask = u32::from_le_bytes(b[0..4].try_into().ok()?);
    (mask & libc::STATX_MNT_ID != 0).then(|| u64::from_le_bytes(b[0x90..0x98].try_into().unwrap_or_default()))
}

/// A path's components.
fn comps(s: &[u8]) -> Vec<Vec<u8>> {
    s.split(|&b| b == b'/').filter(|c| !c.is_empty()).map(<[u8]>::to_vec).collect()
}

fn joined(c: &[Vec<u8>]) -> Vec<u8> {
    if c.is_empty() {
        return b"/".to_vec();
    }
    let mut v = Vec::new();
    for x in c {
        v.push(b'/');
        v.extend_from_slice(x);
    }
    v
}

/// The mount a guest path (its components) lies on, as `RESOLVE_NO_XDEV` sees them:
/// morph's `/dev`, morph's `/proc`, or the root's.
#[derive(PartialEq, Eq, Clone, Copy)]
enum Mount {
    Dev,
    Proc,
    Root,
}

fn mount_of(c: &[Vec<u8>]) -> Mount {
    match c.first().map(Vec::as_slice) {
        Some(b"dev") => Mount::Dev,
        Some(b"proc") => Mount::Proc,
        _ => Mount::Root,
    }
}

/// The scope's root and the components a resolution starts from.
fn origin(start: &[u8], path: &[u8], resolve: u64) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
    let root = if resolve & SCOPED != 0 { comps(start) } else { Vec::new() };
    let cur = if path.first() == Some(&b'/') { root.clone() } else { comps(start) };
    (root, cur)
}

/// Whether `path` from `start`, taken lexically (`..` stopping at the scope's root),
/// passes through `/dev` or `/proc`.
fn meets_special(start: &[u8], path: &[u8], resolve: u64) -> bool {
    let (root, mut cur) = origin(start, path, resolve);
    for c in comps(path) {
        match c.as_slice() {
            b"." => {}
            b".." => {
                if cur.len() > root.len() {
                    cur.pop();
                }
            }
            _ => {
                cur.push(c);
                if mount_of(&cur) != Mount::Root {
                    return true;
                }
            }
        }
    }
    false
}

/// What a walk through morph's `/dev` and `/proc` ended with.
enum Walked {
    /// The guest path it names (links expanded but a last one not followed; a final
    /// `/` kept).
    Path(Vec<u8>),
    /// A magic link that no restriction forbids: the path resolves as `openat`
    /// resolves it.
    Magic,
}

/// Whether a link of morph's `/proc` (its path) is a magic link: `/proc/<pid>/exe`,
/// `cwd`, `root` and `fd/N` are; `/proc/self` and the links in `/dev` are not.
fn is_magic(link: &str) -> bool {
    let c: Vec<&str> = link.split('/').filter(|c| !c.is_empty()).collect();
    c.first() == Some(&"proc")
        && c.get(1).is_some_and(|pid| pid.bytes().all(|b| b.is_ascii_digit()))
        && matches!(c.get(2..), Some(["exe" | "cwd" | "root"]) | Some(["fd", _]))
}

/// Walks `path` from `start` one component at a time (lexically, as morph resolves
/// `/dev` and `/proc`), applying the `RESOLVE_*` restrictions where Linux's path walk
/// does: `..` above a `RESOLVE_BENEATH` scope is `EXDEV` (a `RESOLVE_IN_ROOT` scope and
/// `/` keep it at the root); with `RESOLVE_NO_XDEV` a step onto or off morph's `/dev` or
/// `/proc`, or an absolute link's jump to the root from another mount, is `EXDEV`; a
/// followed link is `ELOOP` under `RESOLVE_NO_SYMLINKS` (and after [`MAX_LINKS`]); a
/// `/proc/<pid>/fd/N` is `EAGAIN` under `RESOLVE_CACHED`, followed or not, and so is
/// any other followed magic link, then `ELOOP` under `RESOLVE_NO_MAGICLINKS`, then
/// `EXDEV` under `RESOLVE_NO_XDEV` (unless it is the last component and leads to an
/// object of the same tree) or a scope.
fn walk(
    sys: special::Sys<'_>,
    p: &Process,
    start: &[u8],
    path: &[u8],
    resolve: u64,
    follow: bool,
) -> Result<Walked, Errno> {
    let has = |f: u64| resolve & f != 0;
    let (root, mut cur) = origin(start, path, resolve);
    let slash = path.ends_with(b"/");
    let mut todo: std::collections::VecDeque<Vec<u8>> = comps(path).into();
    let mut links = 0;
    while let Some(c) = todo.pop_front() {
        let last = todo.is_empty();
        match c.as_slice() {
            b"." => {}
            b".." => {
                if cur.len() <= root.len() {
                    if has(RESOLVE_BENEATH) {
                        return Err(EXDEV);
                    }
                    continue;
                }
                let from = mount_of(&cur);
                cur.pop();
                if has(RESOLVE_NO_XDEV) && mount_of(&cur) != from {
                    return Err(EXDEV);
                }
            }
            _ => {
                let from = mount_of(&cur);
                cur.push(c);
                if has(RESOLVE_NO_XDEV) && mount_of(&cur) != from {
                    return Err(EXDEV);
                }
                let here = joined(&cur);
                if !Vfs::is_special(&here) {
                    continue;
                }
                let Resolved::Node(Node::Link(link, target, _)) = special::resolve(sys, p, b"/", &here, false)? else {
                    continue;
                };
                // A /proc/<pid>/fd/N is never found in Linux's cache (its revalidation
                // refuses RCU walks), followed or not.
                if has(RESOLVE_CACHED) && is_magic(&link) && link.rsplit('/').nth(1) == Some("fd") {
                    return Err(EAGAIN);
                }
                if last && !follow && !slash {
                    continue;
                }
                links += 1;
                if has(RESOLVE_NO_SYMLINKS) || links > MAX_LINKS {
                    return Err(ELOOP);
                }
                if is_magic(&link) {
                    if has(RESOLVE_CACHED) {
                        return Err(EAGAIN);
                    }
                    if has(RESOLVE_NO_MAGICLINKS) {
                        return Err(ELOOP);
                    }
                    if has(RESOLVE_NO_XDEV) && !(last && same_tree(sys, p, &here, mount_of(&cur))) {
                        return Err(EXDEV);
                    }
                    if has(SCOPED) {
                        return Err(EXDEV);
                    }
                    return Ok(Walked::Magic);
                }
                cur.pop(); // a link's target is relative to its directory
                if target.first() == Some(&b'/') {
                    if has(RESOLVE_BENEATH) || (has(RESOLVE_NO_XDEV) && mount_of(&cur) != mount_of(&root)) {
                        return Err(EXDEV);
                    }
                    cur = root.clone();
                }
                for t in comps(&target).into_iter().rev() {
                    todo.push_front(t);
                }
            }
        }
    }
    let mut f = joined(&cur);
    if slash && !cur.is_empty() {
        f.push(b'/');
    }
    Ok(Walked::Path(f))
}

/// Whether the magic link at `here` leads to an object of `tree`, one of morph's own
/// (a `/proc` file or directory, a device of `/dev`), so that following it crosses no
/// mount.
fn same_tree(sys: special::Sys<'_>, p: &Process, here: &[u8], tree: Mount) -> bool {
    let in_tree = |path: &str| mount_of(&comps(path.as_bytes())) == tree;
    match special::resolve(sys, p, b"/", here, true) {
        Ok(Resolved::Node(Node::Fd(e))) => match &e.host.kind {
            FileKind::Snapshot(s) => in_tree(&s.path),
            FileKind::Dir(d) => in_tree(&d.path),
            FileKind::Link(l) => in_tree(&l.path),
            FileKind::Device(_) | FileKind::Random(_) | FileKind::Pty(_) => tree == Mount::Dev,
            FileKind::Host => false,
        },
        Ok(Resolved::Node(Node::Dir(d))) => in_tree(&d),
        _ => false,
    }
}
