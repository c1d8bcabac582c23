//! Path operations: the working directory, links, renames, directories, modes, owners, extended attributes and file times.

use super::common::*;
use super::file::at_dir;
use super::stat::{at_target, changeable, changeable_fd, path_object};

table! {
    /// Names in the file system.
    pub(super) TABLE: Files {
        9 link "ss" sys_link;
        10 unlink "s" sys_unlink;
        12 chdir "s" sys_chdir;
        14 mknod "sox" sys_mknod;
        15 chmod "so" sys_chmod;
        16 lchown "sdd" |m, p, a| chown_common(m, p, [AT_FDCWD as u32, a[0]], id16(a[1]), id16(a[2]), AT_SYMLINK_NOFOLLOW);
        30 utime "sp" sys_utime;
        38 rename "ss" sys_rename;
        39 mkdir "so" sys_mkdir;
        40 rmdir "s" sys_rmdir;
        60 umask "o" sys_umask;
        61 chroot "s" sys_chroot;
        83 symlink "ss" sys_symlink;
        85 readlink "sbu" sys_readlink;
        94 fchmod "fo" sys_fchmod;
        95 fchown "fdd" |m, p, a| fchown(m, p, a[0], id16(a[1]), id16(a[2]));
        133 fchdir "f" sys_fchdir;
        182 chown "sdd" |m, p, a| chown_common(m, p, [AT_FDCWD as u32, a[0]], id16(a[1]), id16(a[2]), 0);
        183 getcwd "pu" sys_getcwd;
        198 lchown32 "sdd" |m, p, a| chown_common(m, p, [AT_FDCWD as u32, a[0]], a[1], a[2], AT_SYMLINK_NOFOLLOW);
        207 fchown32 "fdd" |m, p, a| fchown(m, p, a[0], a[1], a[2]);
        212 chown32 "sdd" |m, p, a| chown_common(m, p, [AT_FDCWD as u32, a[0]], a[1], a[2], 0);
        226 setxattr "ssBuu" |m, p, a| set_xattr(m, p, Xattr::Path(a[0], true), a[1], Some([a[2], a[3], a[4]]));
        227 lsetxattr "ssBuu" |m, p, a| set_xattr(m, p, Xattr::Path(a[0], false), a[1], Some([a[2], a[3], a[4]]));
        228 fsetxattr "fsBuu" |m, p, a| set_xattr(m, p, Xattr::Fd(a[0]), a[1], Some([a[2], a[3], a[4]]));
        229 getxattr "sspu" sys_getxattr;
        230 lgetxattr "sspu" sys_lgetxattr;
        231 fgetxattr "fspu" sys_fgetxattr;
        232 listxattr "spu" sys_listxattr;
        233 llistxattr "spu" sys_llistxattr;
        234 flistxattr "fpu" sys_flistxattr;
        235 removexattr "ss" |m, p, a| set_xattr(m, p, Xattr::Path(a[0], true), a[1], None);
        236 lremovexattr "ss" |m, p, a| set_xattr(m, p, Xattr::Path(a[0], false), a[1], None);
        237 fremovexattr "fs" |m, p, a| set_xattr(m, p, Xattr::Fd(a[0]), a[1], None);
        271 utimes "sp" sys_utimes;
        296 mkdirat "fso" sys_mkdirat;
        297 mknodat "fsox" sys_mknodat;
        298 fchownat "fsddF" |m, p, a| chown_common(m, p, [a[0], a[1]], a[2], a[3], a[4]);
        299 futimesat "fsp" sys_futimesat;
        301 unlinkat "fsx" sys_unlinkat;
        302 renameat "fsfs" sys_renameat;
        303 linkat "fsfsx" sys_linkat;
        304 symlinkat "sfs" sys_symlinkat;
        305 readlinkat "fsbu" sys_readlinkat;
        306 fchmodat "fso" sys_fchmodat;
        320 utimensat "fspx" sys_utimensat;
        353 renameat2 "fsfsu" sys_renameat2;
        412 utimensat_time64 "fspx" sys_utimensat_time64;
    }
}

pub(super) fn sys_umask(_: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let old = p.umask;
    p.umask = a[0] & 0o777;
    Ok(old)
}

pub(super) fn sys_getcwd(_: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    // Outside the root (after `chroot`): Linux's `(unreachable)/...`.
    let mut s = match p.cwd.strip_prefix(b"\0") {
        Some(marked) => marked.to_vec(),
        None => p.cwd.clone(),
    };
    s.push(0);
    if s.len() > a[1] as usize {
        return Err(ERANGE);
    }
    p.aspace.write_bytes(a[0], &s).map_err(efault)?;
    Ok(s.len() as u32)
}

pub(super) fn sys_chdir(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let path = read_path(p, a[0])?;
    p.cwd = match special::resolve(m.sys(), p, &p.cwd, &path, true)? {
        Resolved::Path(abs) => {
            let fd = m.vfs.open(b"/", &abs, libc::O_PATH | libc::O_DIRECTORY, 0)?;
            m.vfs.guest_path_of(&fd)?
        }
        Resolved::Node(Node::Dir(d)) => d.into_bytes(),
        Resolved::Node(Node::Fd(e)) => dir_of_entry(m.vfs, &e)?,
        Resolved::Node(_) => return Err(ENOTDIR),
    };
    Ok(0)
}

/// `chroot(path)`: the directory `path` names becomes the process's root (see
/// [`crate::vfs::Root`]); its working directory stays where it is, which may now be
/// outside the root. Linux's order of checks: the path (`ENOENT`, `ENOTDIR`, `ELOOP`,
/// search permission), then `CAP_SYS_CHROOT` (`EPERM`). morph's own `/dev` and `/proc`
/// directories cannot be a root (`EINVAL`: no host directory to resolve in).
pub(super) fn sys_chroot(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let path = read_path(p, a[0])?;
    let dir = match special::resolve(m.sys(), p, &p.cwd, &path, true)? {
        Resolved::Path(abs) => m.vfs.open(b"/", &abs, libc::O_PATH | libc::O_DIRECTORY, 0)?,
        Resolved::Node(Node::Fd(e)) if matches!(e.host.kind, FileKind::Host) => {
            let g = dir_of_entry(m.vfs, &e)?;
            m.vfs.open(b"/", &g, libc::O_PATH | libc::O_DIRECTORY, 0)?
        }
        Resolved::Node(Node::Dir(_) | Node::Fd(_)) => return Err(EINVAL),
        Resolved::Node(_) => return Err(ENOTDIR),
    };
    host::access2_fd(dir.as_raw_fd(), libc::X_OK as u32)?;
    if !p.attrs.caps.has(crate::process::Caps::SYS_CHROOT) {
        return Err(EPERM);
    }
    let cwd = Vfs::machine_path(p.root.as_deref(), &p.cwd);
    let root = m.vfs.make_root(dir)?.map(std::rc::Rc::new);
    // The working directory in the new root's terms (the call's view is the new root).
    m.vfs.set_view(root.clone());
    p.cwd = m.vfs.to_view(&cwd);
    p.root = root;
    Ok(0)
}

/// The guest path of the directory an open file description is (for `fchdir`).
pub(super) fn dir_of_entry(vfs: &Vfs, e: &FdEntry) -> Result<Vec<u8>, Errno> {
    match &e.host.kind {
        FileKind::Dir(d) => Ok(d.path.clone().into_bytes()),
        FileKind::Host => {
            let st = host_stat_fd(e.host.as_raw_fd())?;
            if st.st_mode & libc::S_IFMT != libc::S_IFDIR {
                return Err(ENOTDIR);
            }
            vfs.guest_path_of(e.host.as_ref())
        }
        _ => Err(ENOTDIR),
    }
}

pub(super) fn sys_fchdir(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let e = p.fds.get(a[0]).ok_or(EBADF)?.clone();
    p.cwd = dir_of_entry(m.vfs, &e)?;
    Ok(0)
}

pub(super) fn readlink_common(
    sys: special::Sys<'_>,
    p: &mut Process,
    dir: &[u8],
    path: &[u8],
    buf: u32,
    size: u32,
) -> SysResult {
    if size as i32 <= 0 {
        return Err(EINVAL);
    }
    let target = match special::resolve(sys, p, dir, path, false)? {
        Resolved::Node(Node::Link(_, t, _)) => t,
        Resolved::Node(_) => return Err(EINVAL),
        Resolved::Path(abs) => {
            let (dir, name) = sys.vfs.parent(b"/", &abs)?;
            let mut buf = vec![0u8; 4096];
            let n = host::readlinkat(dir.as_raw_fd(), &name, &mut buf)?;
            buf.truncate(n);
            buf
        }
    };
    put_link(p, &target, buf, size)
}

/// Writes what a link reads as to the guest's buffer (`size` bytes at most).
fn put_link(p: &mut Process, target: &[u8], buf: u32, size: u32) -> SysResult {
    let n = target.len().min(size as usize);
    p.aspace.write_bytes(buf, &target[..n]).map_err(efault)?;
    Ok(n as u32)
}

/// `readlinkat(fd, "")`: what the link `fd` is open on (`O_PATH | O_NOFOLLOW`) reads
/// as; `ENOENT` if it is no link, as Linux answers.
fn readlink_fd(p: &mut Process, fd: u32, buf: u32, size: u32) -> SysResult {
    if size as i32 <= 0 {
        return Err(EINVAL);
    }
    let e = p.fds.get(fd).ok_or(EBADF)?;
    let target = match &e.host.kind {
        FileKind::Link(l) => l.target.clone(),
        // A link of the root: the host reads it (a descriptor of anything else: ENOENT).
        FileKind::Host => {
            let mut b = vec![0u8; 4096];
            let n = host::readlinkat(e.host.as_raw_fd(), c"", &mut b)?;
            b.truncate(n);
            b
        }
        _ => return Err(ENOENT),
    };
    put_link(p, &target, buf, size)
}

pub(super) fn sys_readlink(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let path = read_path(p, a[0])?;
    let cwd = p.cwd.clone();
    readlink_common(m.sys(), p, &cwd, &path, a[1], a[2])
}

pub(super) fn sys_readlinkat(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let path = read_path(p, a[1])?;
    if path.is_empty() && a[0] as i32 != AT_FDCWD {
        return readlink_fd(p, a[0], a[2], a[3]);
    }
    let dir = at_dir(m.vfs, p, a[0], &path)?;
    readlink_common(m.sys(), p, &dir, &path, a[2], a[3])
}

pub(super) fn unlink_common(m: &mut FileCtx<'_>, p: &Process, dir: &[u8], path: &[u8], flags: u32) -> SysResult {
    let (d, name) = m.vfs.parent(dir, path)?;
    let f = if flags & AT_REMOVEDIR != 0 { libc::AT_REMOVEDIR } else { 0 };
    if let Some(e) = crate::vfs::Vfs::rmdir_not_a_name(path).filter(|_| f != 0) {
        return Err(e);
    }
    let _ = p;
    // A cached file that loses its last name and is mapped by no one leaves the cache
    // (its descriptor there would keep it on disk).
    let cached = if f == 0 { cached_file_at(m.cache, &d, &name) } else { None };
    let r = host::unlinkat(d.as_raw_fd(), &name, f)?;
    if let Some(key) = cached {
        m.cache.forget_if_unlinked(m.phys, key);
    }
    Ok(r)
}

pub(super) fn sys_unlink(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let path = read_path(p, a[0])?;
    unlink_common(m, p, &p.cwd.clone(), &path, 0)
}

pub(super) fn sys_unlinkat(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let path = read_path(p, a[1])?;
    let dir = at_dir(m.vfs, p, a[0], &path)?;
    unlink_common(m, p, &dir, &path, a[2])
}

pub(super) fn sys_rmdir(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let path = read_path(p, a[0])?;
    unlink_common(m, p, &p.cwd.clone(), &path, AT_REMOVEDIR)
}

pub(super) fn sys_mkdir(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let path = read_path(p, a[0])?;
    let (d, name) = m.vfs.parent(&p.cwd, &path)?;
    host::mkdirat(d.as_raw_fd(), &name, a[1] & 0o7777 & !p.umask)
}

/// The parent directory and last component of a `*at` path.
pub(super) fn at_parent(
    vfs: &Vfs,
    p: &Process,
    dirfd: u32,
    path: &[u8],
) -> Result<(OwnedFd, std::ffi::CString), Errno> {
    let dir = at_dir(vfs, p, dirfd, path)?;
    vfs.parent(&dir, path)
}

/// The page-cache key of the file `name` in directory `dir`, if the cache holds it.
pub(super) fn cached_file_at(cache: &PageCache, dir: &OwnedFd, name: &std::ffi::CStr) -> Option<FileKey> {
    let st = host::fstatat(dir.as_raw_fd(), name, libc::AT_SYMLINK_NOFOLLOW).ok()?;
    let key = FileKey { dev: st.st_dev, ino: st.st_ino };
    cache.is_cached(key).then_some(key)
}

/// `renameat2`'s flags.
const RENAME_NOREPLACE: u32 = 1;
const RENAME_EXCHANGE: u32 = 2;
const RENAME_WHITEOUT: u32 = 4;

/// Renames (`olddirfd`, `oldpath`, `newdirfd`, `newpath` in `a`) with `renameat2`'s
/// `flags` (checked by the caller), which the host applies to the two names resolved
/// inside the root.
pub(super) fn rename_common(m: &mut FileCtx<'_>, p: &Process, a: [u32; 4], flags: u32) -> SysResult {
    let (old, new) = (read_path(p, a[1])?, read_path(p, a[3])?);
    let (od, on) = at_parent(m.vfs, p, a[0], &old)?;
    let (nd, nn) = at_parent(m.vfs, p, a[2], &new)?;
    // A cached file that the rename replaces loses its last name, as with unlink; an
    // exchange keeps both names, and a rename that may not replace replaces nothing.
    let replaces = flags & (RENAME_NOREPLACE | RENAME_EXCHANGE) == 0;
    let replaced = if replaces { cached_file_at(m.cache, &nd, &nn) } else { None };
    let r = host::renameat2(od.as_raw_fd(), &on, nd.as_raw_fd(), &nn, flags)?;
    if let Some(key) = replaced {
        m.cache.forget_if_unlinked(m.phys, key);
    }
    Ok(r)
}

pub(super) fn sys_rename(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    rename_common(m, p, [AT_FDCWD as u32, a[0], AT_FDCWD as u32, a[1]], 0)
}

pub(super) fn sys_renameat(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    rename_common(m, p, [a[0], a[1], a[2], a[3]], 0)
}

/// `renameat2(olddirfd, oldpath, newdirfd, newpath, flags)`: `RENAME_NOREPLACE` fails
/// with `EEXIST` instead of replacing, `RENAME_EXCHANGE` swaps the two names,
/// `RENAME_WHITEOUT` leaves a whiteout (a 0:0 character device, which opens nothing) at
/// the old name and needs the privilege Linux asks for. Unknown flags, and an exchange
/// combined with either of the others, are `EINVAL` before any path is looked at, as
/// Linux checks them.
pub(super) fn sys_renameat2(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let flags = a[4];
    if flags & !(RENAME_NOREPLACE | RENAME_EXCHANGE | RENAME_WHITEOUT) != 0
        || (flags & RENAME_EXCHANGE != 0 && flags & (RENAME_NOREPLACE | RENAME_WHITEOUT) != 0)
    {
        return Err(EINVAL);
    }
    rename_common(m, p, [a[0], a[1], a[2], a[3]], flags)
}

pub(super) fn link_common(sys: special::Sys<'_>, p: &Process, a: [u32; 5]) -> SysResult {
    if a[4] & !(AT_SYMLINK_FOLLOW | AT_EMPTY_PATH) != 0 {
        return Err(EINVAL);
    }
    let (old, new) = (read_path(p, a[1])?, read_path(p, a[3])?);
    let (nd, nn) = at_parent(sys.vfs, p, a[2], &new)?;
    // The source is opened inside the root (following a final symlink only when asked).
    let src =
        at_target(sys, p, a[0], &old, if a[4] & AT_SYMLINK_FOLLOW != 0 { a[4] } else { a[4] | AT_SYMLINK_NOFOLLOW })?;
    let src = changeable(sys.vfs, src)?;
    // Link through the descriptor's /proc/self/fd entry: unlike AT_EMPTY_PATH this needs
    // no privilege, and it names exactly the object opened inside the root.
    let via = host::fd_path(src.as_raw_fd());
    host::link_following(&via, nd.as_raw_fd(), &nn)
}

pub(super) fn sys_link(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    link_common(m.sys(), p, [AT_FDCWD as u32, a[0], AT_FDCWD as u32, a[1], 0])
}

pub(super) fn sys_linkat(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    link_common(m.sys(), p, [a[0], a[1], a[2], a[3], a[4]])
}

pub(super) fn symlink_common(vfs: &Vfs, p: &Process, target: u32, dirfd: u32, path: u32) -> SysResult {
    let target = read_path(p, target)?;
    let path = read_path(p, path)?;
    let (d, name) = at_parent(vfs, p, dirfd, &path)?;
    let t = std::ffi::CString::new(target).map_err(|_| EINVAL)?;
    // The target is stored as given; it is resolved inside the root whenever it is
    // followed.
    host::symlinkat(&t, d.as_raw_fd(), &name)
}

pub(super) fn sys_symlink(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    symlink_common(m.vfs, p, a[0], AT_FDCWD as u32, a[1])
}

pub(super) fn sys_symlinkat(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    symlink_common(m.vfs, p, a[0], a[1], a[2])
}

/// `mknod` makes FIFOs and regular files only: a device node would be a way out of the
/// sandbox (and needs privileges on Linux too).
pub(super) fn mknod_common(m: &mut FileCtx<'_>, p: &mut Process, dirfd: u32, path: u32, mode: u32) -> SysResult {
    let path = read_path(p, path)?;
    let kind = mode & libc::S_IFMT;
    if kind != 0 && kind != libc::S_IFIFO && kind != libc::S_IFREG {
        return Err(EPERM);
    }
    let (d, name) = at_parent(m.vfs, p, dirfd, &path)?;
    let mode = (mode & libc::S_IFMT) | (mode & 0o7777 & !p.umask);
    host::mknodat(d.as_raw_fd(), &name, mode)
}

pub(super) fn sys_mknod(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    mknod_common(m, p, AT_FDCWD as u32, a[0], a[1])
}

pub(super) fn sys_mknodat(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    mknod_common(m, p, a[0], a[1], a[2])
}

pub(super) fn sys_mkdirat(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let path = read_path(p, a[1])?;
    let (d, name) = at_parent(m.vfs, p, a[0], &path)?;
    host::mkdirat(d.as_raw_fd(), &name, a[2] & 0o7777 & !p.umask)
}

/// chmod of an object already opened (as `O_PATH`) inside the root, through its
/// `/proc/self/fd` link (fchmod does not take `O_PATH` descriptors).
pub(super) fn chmod_fd(fd: &OwnedFd, mode: u32) -> SysResult {
    let path = host::fd_path(fd.as_raw_fd());
    host::chmod(&path, mode & 0o7777)
}

pub(super) fn sys_chmod(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let path = read_path(p, a[0])?;
    let fd = changeable(m.vfs, path_object(m.sys(), p, &p.cwd, &path, true)?)?;
    chmod_fd(&fd, a[1])
}

pub(super) fn sys_fchmodat(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let path = read_path(p, a[1])?;
    let fd = changeable(m.vfs, at_target(m.sys(), p, a[0], &path, 0)?)?;
    chmod_fd(&fd, a[2])
}

pub(super) fn sys_fchmod(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let fd = changeable_fd(m.vfs, p, a[0])?;
    host::fchmod(fd.as_raw_fd(), a[1] & 0o7777)
}

// ----- owners --------------------------------------------------------------------------

/// An id of the 16-bit calls (`lchown`, `fchown`, `chown`): the low half of the
/// argument, and 0xffff is -1 ("unchanged"), as Linux widens `old_uid_t`.
fn id16(v: u32) -> u32 {
    match v as u16 {
        u16::MAX => u32::MAX,
        id => u32::from(id),
    }
}

/// `fchownat(dirfd, path, uid, gid, flags)` (`at` is `dirfd`, `path`) and the path
/// calls: the object is resolved inside the root (its last symbolic link not followed
/// with `AT_SYMLINK_NOFOLLOW`, the descriptor itself with `AT_EMPTY_PATH` and an
/// empty path) and changed by the host, as `chmod` is. The guest's ids are the host
/// user's (see `ids.rs`), so the host grants what Linux would grant the same user; an
/// id of -1 leaves it unchanged. morph's own `/dev` and `/proc` objects and host devices
/// cannot change (`EPERM`, see [`changeable`]).
fn chown_common(m: &mut FileCtx<'_>, p: &mut Process, at: [u32; 2], uid: u32, gid: u32, flags: u32) -> SysResult {
    if flags & !(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH) != 0 {
        return Err(EINVAL);
    }
    let path = read_path(p, at[1])?;
    let fd = changeable(m.vfs, at_target(m.sys(), p, at[0], &path, flags)?)?;
    // With AT_EMPTY_PATH the host changes exactly the object opened inside the root,
    // an `O_PATH` descriptor of a symbolic link too (the link itself, for lchown).
    host::fchown_empty_path(fd.as_raw_fd(), uid, gid)
}

/// `fchown(fd, uid, gid)`: on the host descriptor behind the guest's, so that an
/// `O_PATH` descriptor is `EBADF` as on Linux.
fn fchown(m: &mut FileCtx<'_>, p: &mut Process, fd: u32, uid: u32, gid: u32) -> SysResult {
    let fd = changeable_fd(m.vfs, p, fd)?;
    host::fchown(fd.as_raw_fd(), uid, gid)
}

// ----- extended attributes --------------------------------------------------------------

// Extended attributes: the guest sees the `user.` namespace of the files inside the
// root, the host's own attributes there (get, set, list, remove); the other namespaces
// hold nothing for it (`security.`, `system.` and `trusted.` read as empty,
// `ENODATA`, and cannot be set, `EOPNOTSUPP`; an unknown one is `EOPNOTSUPP`, as Linux
// says), so the host's security labels and ACLs never show and never vary a run.
// morph's own `/dev` and `/proc` objects and objects outside the root hold none
// (`EOPNOTSUPP`). As Linux, `user.` attributes belong to regular files and directories
// only: on anything else reading one is `ENODATA` and writing one `EPERM`.

/// The name of an extended attribute in the `user.` namespace.
fn user_name(n: &[u8]) -> bool {
    n.starts_with(b"user.")
}

/// What a call on a namespace other than `user.` gets: `ENODATA` for reading one of
/// Linux's (empty here), `EOPNOTSUPP` for writing one or for an unknown namespace.
fn other_namespace(n: &[u8], write: bool) -> Errno {
    let known = [&b"security."[..], b"system.", b"trusted."].iter().any(|k| n.starts_with(k));
    if known && !write { ENODATA } else { EOPNOTSUPP }
}

/// The host object an extended-attribute call reaches: a path the host follows to it
/// (`/proc/self/fd/N`, holding the descriptor open) or a descriptor, with its file
/// type; `None` if it holds no attributes for the guest.
struct XattrObject {
    fd: OwnedFd,
    via: Option<std::ffi::CString>,
    kind: u32,
}

impl XattrObject {
    fn at(&self) -> host::XattrAt<'_> {
        match &self.via {
            Some(p) => host::XattrAt::Path(p),
            None => host::XattrAt::Fd(self.fd.as_raw_fd()),
        }
    }
    /// Whether `user.` attributes apply (Linux: regular files and directories).
    fn user_ok(&self) -> bool {
        self.kind == libc::S_IFREG || self.kind == libc::S_IFDIR
    }
}

/// The object of an extended-attribute call on path `path` (its last link followed or
/// not) or on guest descriptor `fd` (`EBADF` if not open, or open `O_PATH`).
fn xattr_object(m: &mut FileCtx<'_>, p: &Process, what: &Xattr) -> Result<Option<XattrObject>, Errno> {
    let fd = match *what {
        Xattr::Path(path, follow) => {
            let path = read_path(p, path)?;
            match path_object(m.sys(), p, &p.cwd, &path, follow)? {
                Object::Host(fd) => fd,
                // A device of morph's /dev: no regular file, so no `user.` attribute
                // (nothing asks the host).
                Object::Device(fd) => {
                    let kind = host_stat_fd(fd.as_raw_fd())?.st_mode & libc::S_IFMT;
                    return Ok(Some(XattrObject { fd, via: None, kind }));
                }
                Object::Synthetic(_) => return Ok(None),
            }
        }
        Xattr::Fd(fd) => {
            let e = p.fds.get(fd).ok_or(EBADF)?;
            if host::getfl(e.host.as_raw_fd())? & libc::O_PATH != 0 {
                return Err(EBADF);
            }
            host::dup_cloexec(e.host.as_raw_fd(), 3)?
        }
    };
    let kind = host_stat_fd(fd.as_raw_fd())?.st_mode & libc::S_IFMT;
    // A file or directory outside the root (behind an inherited descriptor) is the
    // host's; anything else (a pipe, a socket) has no `user.` attributes anyway.
    let file = kind == libc::S_IFREG || kind == libc::S_IFDIR;
    if file && !m.vfs.holds(&fd) {
        return Ok(None);
    }
    let via = match what {
        // An `O_PATH` descriptor: the host's calls by path reach the object through it.
        Xattr::Path(..) => Some(host::fd_path(fd.as_raw_fd())),
        Xattr::Fd(_) => None,
    };
    Ok(Some(XattrObject { fd, via, kind }))
}

/// The `getxattr` family: `what` names the object, `name` the attribute, the value
/// goes to `buf` (`size` bytes; 0 asks for the size).
fn get_xattr(m: &mut FileCtx<'_>, p: &mut Process, what: Xattr, name: u32, buf: u32, size: u32) -> SysResult {
    const XATTR_NAME_MAX: usize = 255;
    const XATTR_SIZE_MAX: u32 = 65536;
    let n = p.aspace.read_cstr(name, XATTR_NAME_MAX + 1).map_err(efault)?;
    if n.is_empty() || n.len() > XATTR_NAME_MAX {
        return Err(ERANGE);
    }
    let o = xattr_object(m, p, &what)?.ok_or(EOPNOTSUPP)?;
    if !user_name(&n) {
        return Err(other_namespace(&n, false));
    }
    if !o.user_ok() {
        return Err(ENODATA);
    }
    let c = std::ffi::CString::new(n).map_err(|_| EINVAL)?;
    let mut v = vec![0u8; size.min(XATTR_SIZE_MAX) as usize];
    let len = host::getxattr(o.at(), &c, &mut v)?;
    if size != 0 {
        p.aspace.write_bytes(buf, &v[..len as usize]).map_err(efault)?;
    }
    Ok(len)
}

/// The `listxattr` family: the `user.` names of the object, NUL-terminated, to `buf`
/// (`size` bytes; 0 asks for the size; `ERANGE` if they do not fit).
fn list_xattr(m: &mut FileCtx<'_>, p: &mut Process, what: Xattr, buf: u32, size: u32) -> SysResult {
    let Some(o) = xattr_object(m, p, &what)?.filter(|o| o.user_ok()) else { return Ok(0) };
    let mut all = vec![0u8; host::listxattr(o.at(), &mut [])? as usize];
    let len = host::listxattr(o.at(), &mut all)? as usize;
    let names: Vec<u8> = all[..len].split_inclusive(|&b| b == 0).filter(|n| user_name(n)).flatten().copied().collect();
    if size != 0 {
        if names.len() > size as usize {
            return Err(ERANGE);
        }
        p.aspace.write_bytes(buf, &names).map_err(efault)?;
    }
    Ok(names.len() as u32)
}

pub(super) fn sys_getxattr(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    get_xattr(m, p, Xattr::Path(a[0], true), a[1], a[2], a[3])
}

pub(super) fn sys_lgetxattr(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    get_xattr(m, p, Xattr::Path(a[0], false), a[1], a[2], a[3])
}

pub(super) fn sys_fgetxattr(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    get_xattr(m, p, Xattr::Fd(a[0]), a[1], a[2], a[3])
}

pub(super) fn sys_listxattr(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    list_xattr(m, p, Xattr::Path(a[0], true), a[1], a[2])
}

pub(super) fn sys_llistxattr(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    list_xattr(m, p, Xattr::Path(a[0], false), a[1], a[2])
}

pub(super) fn sys_flistxattr(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    list_xattr(m, p, Xattr::Fd(a[0]), a[1], a[2])
}

/// What an extended-attribute call names: a path (and whether its last symbolic link
/// is followed) or a descriptor.
enum Xattr {
    Path(u32, bool),
    Fd(u32),
}

/// The `setxattr` and `removexattr` families (`set` = value, size, flags for a set):
/// the arguments are read and checked in Linux's order (flags `EINVAL`, the name
/// `EFAULT` or `ERANGE` when empty or longer than 255 bytes, the value `E2BIG` past 64
/// KiB or `EFAULT`), then the object is found (`ENOENT` and the rest as for any path;
/// `EBADF` for a descriptor that is not open, or is `O_PATH`), then the namespace and
/// the file type are checked (see above) and the host sets or removes the attribute.
fn set_xattr(m: &mut FileCtx<'_>, p: &mut Process, what: Xattr, name: u32, set: Option<[u32; 3]>) -> SysResult {
    const XATTR_CREATE: u32 = 1;
    const XATTR_REPLACE: u32 = 2;
    const XATTR_NAME_MAX: usize = 255;
    const XATTR_SIZE_MAX: u32 = 65536;
    if let Some([_, _, flags]) = set
        && flags & !(XATTR_CREATE | XATTR_REPLACE) != 0
    {
        return Err(EINVAL);
    }
    let n = p.aspace.read_cstr(name, XATTR_NAME_MAX + 1).map_err(efault)?;
    if n.is_empty() || n.len() > XATTR_NAME_MAX {
        return Err(ERANGE);
    }
    let mut value = Vec::new();
    if let Some([ptr, size, _]) = set
        && size != 0
    {
        if size > XATTR_SIZE_MAX {
            return Err(E2BIG);
        }
        value = vec![0u8; size as usize];
        p.aspace.read_bytes(ptr, &mut value).map_err(efault)?;
    }
    let o = xattr_object(m, p, &what)?.ok_or(EOPNOTSUPP)?;
    if !user_name(&n) {
        return Err(other_namespace(&n, true));
    }
    if !o.user_ok() {
        return Err(EPERM);
    }
    let c = std::ffi::CString::new(n).map_err(|_| EINVAL)?;
    host::setxattr(o.at(), &c, set.map(|[_, _, flags]| (&value[..], flags as i32)))
}

// ----- file times ----------------------------------------------------------------------

/// Which clock values a `utime*` call sets: `None` = both now, else (atime, mtime) as
/// host timespecs (`UTIME_NOW` and `UTIME_OMIT` pass through).
pub(super) type Times = Option<[libc::timespec; 2]>;

/// Reads the two timestamps at `ptr`: `timespec` with 32- or 64-bit seconds, `timeval`
/// (microseconds) or `utimbuf` (whole seconds).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum TimeFormat {
    Timespec32,
    Timespec64,
    Timeval,
    Utimbuf,
}

pub(super) fn read_times(p: &Process, ptr: u32, f: TimeFormat) -> Result<Times, Errno> {
    if ptr == 0 {
        return Ok(None);
    }
    let mut t = [libc::timespec { tv_sec: 0, tv_nsec: 0 }; 2];
    for (i, ts) in t.iter_mut().enumerate() {
        let i = i as u32;
        let (sec, frac) = match f {
            TimeFormat::Timespec32 | TimeFormat::Timeval => {
                let b = ptr.wrapping_add(8 * i);
                let sec = i64::from(p.aspace.read_u32(b).map_err(efault)? as i32);
                (sec, i64::from(p.aspace.read_u32(b.wrapping_add(4)).map_err(efault)? as i32))
            }
            TimeFormat::Timespec64 => {
                let b = ptr.wrapping_add(16 * i);
                let sec = p.aspace.read_u64(b).map_err(efault)? as i64;
                (sec, i64::from(p.aspace.read_u32(b.wrapping_add(8)).map_err(efault)? as i32))
            }
            TimeFormat::Utimbuf => (i64::from(p.aspace.read_u32(ptr.wrapping_add(4 * i)).map_err(efault)? as i32), 0),
        };
        let nsec = match f {
            TimeFormat::Timeval => {
                if !(0..1_000_000).contains(&frac) {
                    return Err(EINVAL);
                }
                frac * 1000
            }
            _ => frac,
        };
        let special = nsec == libc::UTIME_NOW || nsec == libc::UTIME_OMIT;
        if !special && !(0..1_000_000_000).contains(&nsec) {
            return Err(EINVAL);
        }
        *ts = libc::timespec { tv_sec: sec, tv_nsec: nsec };
    }
    Ok(Some(t))
}

/// Sets the times of what (`dirfd`, `path`, `flags`) names, resolved inside the root.
pub(super) fn utimes_common(
    m: &FileCtx<'_>,
    p: &Process,
    dirfd: u32,
    path: Option<&[u8]>,
    times: Times,
    flags: u32,
) -> SysResult {
    if flags & !(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH) != 0 {
        return Err(EINVAL);
    }
    let tp = times.as_ref();
    let Some(path) = path else {
        // utimensat(fd, NULL, ...): the descriptor itself.
        let fd = changeable_fd(m.vfs, p, dirfd)?;
        return host::utimensat(fd.as_raw_fd(), None, tp, 0);
    };
    if flags & AT_SYMLINK_NOFOLLOW != 0 && !path.is_empty() {
        // The name itself: its parent inside the root, the last component not followed.
        let dir = at_dir(m.vfs, p, dirfd, path)?;
        let abs = match special::resolve(m.sys(), p, &dir, path, false)? {
            Resolved::Path(abs) => abs,
            Resolved::Node(n) => return changeable(m.vfs, special::object(n)?).map(|_| 0),
        };
        let (d, name) = m.vfs.parent(b"/", &abs)?;
        return host::utimensat(d.as_raw_fd(), Some(&name), tp, libc::AT_SYMLINK_NOFOLLOW);
    }
    let fd = changeable(m.vfs, at_target(m.sys(), p, dirfd, path, flags & AT_EMPTY_PATH)?)?;
    // Through the descriptor's /proc/self/fd entry, which names exactly the object opened
    // inside the root (an O_PATH descriptor cannot be given to utimensat directly).
    let via = host::fd_path(fd.as_raw_fd());
    host::utimensat(libc::AT_FDCWD, Some(&via), tp, 0)
}

pub(super) fn sys_utimensat(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let path = if a[1] == 0 { None } else { Some(read_path(p, a[1])?) };
    let times = read_times(p, a[2], TimeFormat::Timespec32)?;
    utimes_common(m, p, a[0], path.as_deref(), times, a[3])
}

pub(super) fn sys_utimensat_time64(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let path = if a[1] == 0 { None } else { Some(read_path(p, a[1])?) };
    let times = read_times(p, a[2], TimeFormat::Timespec64)?;
    utimes_common(m, p, a[0], path.as_deref(), times, a[3])
}

pub(super) fn sys_futimesat(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let path = if a[1] == 0 { None } else { Some(read_path(p, a[1])?) };
    let times = read_times(p, a[2], TimeFormat::Timeval)?;
    utimes_common(m, p, a[0], path.as_deref(), times, 0)
}

pub(super) fn sys_utimes(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let path = read_path(p, a[0])?;
    let times = read_times(p, a[1], TimeFormat::Timeval)?;
    utimes_common(m, p, AT_FDCWD as u32, Some(&path), times, 0)
}

pub(super) fn sys_utime(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let path = read_path(p, a[0])?;
    let times = read_times(p, a[1], TimeFormat::Utimbuf)?;
    utimes_common(m, p, AT_FDCWD as u32, Some(&path), times, 0)
}
