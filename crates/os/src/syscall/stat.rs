//! File metadata: `stat` and its relatives, `access`, `statfs`.

use super::common::*;
use super::file::{at_dir, sync_before_read};

table! {
    /// Metadata.
    pub(super) TABLE: Files {
        33 access "sA" sys_access;
        99 statfs "sp" sys_statfs;
        100 fstatfs "fp" sys_fstatfs;
        106 stat "sp" sys_stat;
        107 lstat "sp" sys_lstat;
        108 fstat "fp" sys_fstat;
        195 stat64 "sS" sys_stat64;
        196 lstat64 "sS" sys_lstat64;
        197 fstat64 "fS" sys_fstat64;
        268 statfs64 "sup" sys_statfs64;
        269 fstatfs64 "fup" sys_fstatfs64;
        300 fstatat64 "fsSF" sys_fstatat64;
        307 faccessat "fsA" sys_faccessat;
        383 statx "fsxxp" sys_statx;
        439 faccessat2 "fsAx" sys_faccessat;
    }
}

/// Opens a guest path as `O_PATH` (following or not the last symlink) for the
/// stat/access family.
pub(super) fn open_path(vfs: &Vfs, dir: &[u8], path: &[u8], follow: bool) -> Result<OwnedFd, Errno> {
    let mut flags = libc::O_PATH;
    if !follow {
        flags |= libc::O_NOFOLLOW;
    }
    vfs.open(dir, path, flags, 0)
}

/// What a guest path names, for the calls that look at or change its metadata.
pub(super) fn path_object(
    sys: special::Sys<'_>,
    p: &Process,
    dir: &[u8],
    path: &[u8],
    follow: bool,
) -> Result<Object, Errno> {
    match special::resolve(sys, p, dir, path, follow)? {
        Resolved::Path(abs) => open_path(sys.vfs, b"/", &abs, follow).map(Object::Host),
        Resolved::Node(n) => special::object(n),
    }
}

pub(super) fn stat_of(o: &Object) -> Result<libc::stat, Errno> {
    match o {
        Object::Host(fd) | Object::Device(fd) => host_stat_fd(fd.as_raw_fd()),
        Object::Synthetic(st) => Ok(*st),
    }
}

/// A host object whose metadata the guest may change: not one of morph's own, not a
/// device (a guest running as root must not change the host's device nodes, such as
/// the `/dev/null` it may have inherited as a standard descriptor), and held by the
/// root (a host file outside it, behind an inherited descriptor, or a host pipe is
/// the host's: its mode and times are not the guest's to change, nor is it linked in).
pub(super) fn changeable(vfs: &crate::vfs::Vfs, o: Object) -> Result<OwnedFd, Errno> {
    match o {
        Object::Host(fd) => {
            let t = host_stat_fd(fd.as_raw_fd())?.st_mode & libc::S_IFMT;
            if t == libc::S_IFCHR || t == libc::S_IFBLK || !vfs.holds(&fd) {
                return Err(EPERM);
            }
            Ok(fd)
        }
        Object::Device(_) | Object::Synthetic(_) => Err(EPERM),
    }
}

/// The host descriptor behind guest `fd` if its metadata may change (see [`changeable`]).
/// A link of morph's own opened itself is an `O_PATH` descriptor, which `fchmod` and
/// `fchown` do not take (`EBADF`, as the host says for its own).
pub(super) fn changeable_fd(vfs: &Vfs, p: &Process, fd: u32) -> Result<OwnedFd, Errno> {
    let e = p.fds.get(fd).ok_or(EBADF)?;
    if matches!(e.host.kind, FileKind::Link(_)) {
        return Err(EBADF);
    }
    changeable(vfs, special::object_of_fd(e)?)
}

pub(super) fn stat_path(
    sys: special::Sys<'_>,
    p: &Process,
    dir: &[u8],
    path: &[u8],
    follow: bool,
) -> Result<libc::stat, Errno> {
    stat_of(&path_object(sys, p, dir, path, follow)?)
}

/// `fstat` of guest `fd`.
pub(super) fn fd_stat(m: &mut FileCtx<'_>, p: &Process, fd: u32) -> Result<libc::stat, Errno> {
    let e = p.fds.get(fd).ok_or(EBADF)?;
    if !matches!(e.host.kind, FileKind::Host) || e.host.is_pidfd() {
        return stat_of(&special::object_of_fd(e)?);
    }
    sync_before_read(m.cache, m.phys, p, fd); // stores through shared mappings update the mtime
    host_stat_fd(e.host.as_raw_fd())
}

pub(super) fn put_stat64(p: &mut Process, ptr: u32, st: &libc::stat) -> SysResult {
    p.aspace.write_bytes(ptr, &stat64_bytes(st)).map_err(efault)?;
    Ok(0)
}

pub(super) fn put_stat(p: &mut Process, ptr: u32, st: &libc::stat) -> SysResult {
    let b = stat_bytes(st).ok_or(EOVERFLOW)?;
    p.aspace.write_bytes(ptr, &b).map_err(efault)?;
    Ok(0)
}

pub(super) fn sys_stat64(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let path = read_path(p, a[0])?;
    let st = stat_path(m.sys(), p, &p.cwd.clone(), &path, true)?;
    put_stat64(p, a[1], &st)
}

pub(super) fn sys_lstat64(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let path = read_path(p, a[0])?;
    let st = stat_path(m.sys(), p, &p.cwd.clone(), &path, false)?;
    put_stat64(p, a[1], &st)
}

pub(super) fn sys_fstat64(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let st = fd_stat(m, p, a[0])?;
    put_stat64(p, a[1], &st)
}

pub(super) fn sys_stat(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let path = read_path(p, a[0])?;
    let st = stat_path(m.sys(), p, &p.cwd.clone(), &path, true)?;
    put_stat(p, a[1], &st)
}

pub(super) fn sys_lstat(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let path = read_path(p, a[0])?;
    let st = stat_path(m.sys(), p, &p.cwd.clone(), &path, false)?;
    put_stat(p, a[1], &st)
}

pub(super) fn sys_fstat(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let st = fd_stat(m, p, a[0])?;
    put_stat(p, a[1], &st)
}

/// What a `*at` call with `AT_EMPTY_PATH` or a path refers to.
pub(super) fn at_target(
    sys: special::Sys<'_>,
    p: &Process,
    dirfd: u32,
    path: &[u8],
    flags: u32,
) -> Result<Object, Errno> {
    if path.is_empty() {
        if flags & AT_EMPTY_PATH == 0 {
            return Err(ENOENT);
        }
        if dirfd as i32 == AT_FDCWD {
            return path_object(sys, p, &p.cwd, b".", true); // the working directory itself
        }
        return special::object_of_fd(p.fds.get(dirfd).ok_or(EBADF)?);
    }
    let dir = at_dir(sys.vfs, p, dirfd, path)?;
    path_object(sys, p, &dir, path, flags & AT_SYMLINK_NOFOLLOW == 0)
}

pub(super) fn sys_fstatat64(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let path = read_path(p, a[1])?;
    let st = stat_of(&at_target(m.sys(), p, a[0], &path, a[3])?)?;
    put_stat64(p, a[2], &st)
}

pub(super) fn sys_statx(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let path = read_path(p, a[1])?;
    let fd = match at_target(m.sys(), p, a[0], &path, a[2])? {
        Object::Host(fd) | Object::Device(fd) => fd,
        Object::Synthetic(st) => {
            p.aspace.write_bytes(a[4], &statx_bytes(&st)).map_err(efault)?;
            return Ok(0);
        }
    };
    let mut buf = [0u8; 256];
    // struct statx is the same on every architecture.
    host::statx_fd(fd.as_raw_fd(), a[3], &mut buf)?;
    p.aspace.write_bytes(a[4], &buf).map_err(efault)?;
    Ok(0)
}

pub(super) fn access_common(
    sys: special::Sys<'_>,
    p: &Process,
    dirfd: u32,
    path: &[u8],
    mode: u32,
    flags: u32,
) -> SysResult {
    if mode & !7 != 0 {
        return Err(EINVAL);
    }
    let fd = match at_target(sys, p, dirfd, path, flags)? {
        Object::Host(fd) | Object::Device(fd) => fd,
        Object::Synthetic(st) => return special::access(p, &st, mode).map(|_| 0),
    };
    host::access2_fd(fd.as_raw_fd(), mode)
}

pub(super) fn sys_access(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let path = read_path(p, a[0])?;
    access_common(m.sys(), p, AT_FDCWD as u32, &path, a[1], 0)
}

pub(super) fn sys_faccessat(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let path = read_path(p, a[1])?;
    access_common(m.sys(), p, a[0], &path, a[2], a[3] & AT_SYMLINK_NOFOLLOW)
}

// ----- file system statistics ------------------------------------------------------------

/// The x86-64 kernel's `struct statfs`, as 64-bit words: type, bsize, blocks, bfree,
/// bavail, files, ffree, fsid, namelen, frsize, flags, `spare[4]`.
pub(super) type HostStatfs = [u64; 15];

/// The file-system statistics of the host object behind `o`, or of morph's made-up file
/// systems (procfs for /proc, tmpfs for /dev).
pub(super) fn statfs_of(o: &Object) -> Result<HostStatfs, Errno> {
    let mut st: HostStatfs = [0; 15];
    match o {
        Object::Host(fd) | Object::Device(fd) => st = host::fstatfs(fd.as_raw_fd())?,
        Object::Synthetic(s) => {
            const PROC_SUPER_MAGIC: u64 = 0x9fa0;
            const TMPFS_MAGIC: u64 = 0x0102_1994;
            const DEVPTS_SUPER_MAGIC: u64 = 0x1cd1;
            st[0] = match s.st_dev {
                special::PROC_DEV => PROC_SUPER_MAGIC,
                crate::pty::PTS_DEV => DEVPTS_SUPER_MAGIC,
                _ => TMPFS_MAGIC,
            };
            st[1] = 4096;
            st[8] = 255;
            st[9] = 4096;
        }
    }
    Ok(st)
}

/// The i386 `struct statfs64` (84 bytes, packed) or, if not `wide`, `struct statfs` (64
/// bytes; `EOVERFLOW` if a count does not fit in 32 bits).
pub(super) fn statfs_bytes(st: &HostStatfs, wide: bool) -> Result<Vec<u8>, Errno> {
    let mut b = Vec::with_capacity(84);
    let w32 = |b: &mut Vec<u8>, v: u64| b.extend_from_slice(&(v as u32).to_le_bytes());
    w32(&mut b, st[0]);
    w32(&mut b, st[1]);
    for &v in &st[2..7] {
        if wide {
            b.extend_from_slice(&v.to_le_bytes());
        } else if v > u64::from(u32::MAX) && v != u64::MAX {
            return Err(EOVERFLOW);
        } else {
            w32(&mut b, v);
        }
    }
    b.extend_from_slice(&st[7].to_le_bytes()); // fsid: two 32-bit words
    for &v in &st[8..11] {
        w32(&mut b, v);
    }
    b.resize(if wide { 84 } else { 64 }, 0);
    Ok(b)
}

pub(super) fn sys_statfs(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let path = read_path(p, a[0])?;
    let st = statfs_of(&path_object(m.sys(), p, &p.cwd, &path, true)?)?;
    p.aspace.write_bytes(a[1], &statfs_bytes(&st, false)?).map_err(efault)?;
    Ok(0)
}

pub(super) fn sys_fstatfs(_: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let st = statfs_of(&special::object_of_fd(p.fds.get(a[0]).ok_or(EBADF)?)?)?;
    p.aspace.write_bytes(a[1], &statfs_bytes(&st, false)?).map_err(efault)?;
    Ok(0)
}

pub(super) fn sys_statfs64(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    if a[1] != 84 {
        return Err(EINVAL);
    }
    let path = read_path(p, a[0])?;
    let st = statfs_of(&path_object(m.sys(), p, &p.cwd, &path, true)?)?;
    p.aspace.write_bytes(a[2], &statfs_bytes(&st, true)?).map_err(efault)?;
    Ok(0)
}

pub(super) fn sys_fstatfs64(_: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    if a[1] != 84 {
        return Err(EINVAL);
    }
    let st = statfs_of(&special::object_of_fd(p.fds.get(a[0]).ok_or(EBADF)?)?)?;
    p.aspace.write_bytes(a[2], &statfs_bytes(&st, true)?).map_err(efault)?;
    Ok(0)
}
