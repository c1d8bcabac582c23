//! File-system events: `inotify`.
//!
//! An inotify instance is a host one, as eventfd and timerfd are (`io.rs`): the events,
//! their queue and its limits are the host kernel's, and `struct inotify_event` is laid
//! out alike on i386 and x86-64, so the guest reads the host's events as they are. A
//! watch is added on the object the guest's path names inside the root (resolved as
//! every path is), through its `/proc/self/fd` link; an event names only the entry
//! inside a watched directory, never a host path.

use super::common::*;
use super::stat::path_object;

table! {
    /// File-system events.
    pub(super) TABLE: Files {
        291 inotify_init "" |_, p, _| new_inotify(p, 0);
        292 inotify_add_watch "fsx" sys_inotify_add_watch;
        293 inotify_rm_watch "fd" sys_inotify_rm_watch;
        332 inotify_init1 "x" |_, p, a| new_inotify(p, a[0]);
    }
}

const IN_ONLYDIR: u32 = 0x0100_0000;
const IN_DONT_FOLLOW: u32 = 0x0200_0000;
const IN_MASK_CREATE: u32 = 0x1000_0000;
const IN_MASK_ADD: u32 = 0x2000_0000;
/// Every bit `inotify_add_watch` knows (Linux's `ALL_INOTIFY_BITS`): the events, the
/// bits events carry, and the flags.
const ALL_INOTIFY_BITS: u32 = 0x0000_0fff | 0x0000_e000 | 0xf700_0000;

/// `inotify_init1(flags)`: `IN_NONBLOCK` and `IN_CLOEXEC` (the `O_` bits) only.
fn new_inotify(p: &mut Process, flags: u32) -> SysResult {
    if flags & !(O_CLOEXEC | O_NONBLOCK) != 0 {
        return Err(EINVAL);
    }
    let file = OpenFile::nonblocking(host::inotify_init()?, flags & O_NONBLOCK != 0);
    p.fds.install(FdEntry::of(file, flags & O_CLOEXEC != 0), 0).ok_or(EMFILE)
}

/// The host descriptor of guest descriptor `fd` if it is an inotify instance: `EBADF`
/// for no descriptor, `EINVAL` for another object (Linux's checks, in its order).
fn instance(p: &Process, fd: u32) -> Result<i32, Errno> {
    let h = host_fd(p, fd)?;
    let link = std::fs::read_link(format!("/proc/self/fd/{h}")).map_err(|_| EINVAL)?;
    if link.as_os_str() == "anon_inode:inotify" { Ok(h) } else { Err(EINVAL) }
}

/// `inotify_add_watch(fd, path, mask)`: the mask checked first (`IN_MASK_ADD` with
/// `IN_MASK_CREATE`, or no known bit: `EINVAL`), then the descriptor, then the path,
/// resolved inside the root (following a last symbolic link unless `IN_DONT_FOLLOW`:
/// then the link itself is watched, as on Linux). morph's own `/proc` and `/dev` text
/// files have no host object to watch: `EPERM`.
fn sys_inotify_add_watch(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let mask = a[2];
    if (mask & IN_MASK_ADD != 0 && mask & IN_MASK_CREATE != 0) || mask & ALL_INOTIFY_BITS == 0 {
        return Err(EINVAL);
    }
    let ifd = instance(p, a[0])?;
    let path = read_path(p, a[1])?;
    let follow = mask & IN_DONT_FOLLOW == 0;
    let fd = match path_object(m.sys(), p, &p.cwd, &path, follow)? {
        Object::Host(fd) | Object::Device(fd) => fd,
        Object::Synthetic(_) => return Err(EPERM),
    };
    if mask & IN_ONLYDIR != 0 && host_stat_fd(fd.as_raw_fd())?.st_mode & libc::S_IFMT != libc::S_IFDIR {
        return Err(ENOTDIR);
    }
    // The descriptor's link names exactly the object resolved (for `IN_DONT_FOLLOW`,
    // the symbolic link, opened `O_NOFOLLOW`): followed, never `IN_DONT_FOLLOW` here.
    let via = crate::host::fd_path(fd.as_raw_fd());
    host::inotify_add_watch(ifd, &via, mask & !(IN_DONT_FOLLOW | IN_ONLYDIR))
}

/// `inotify_rm_watch(fd, wd)`: the host's (it queues `IN_IGNORED`).
fn sys_inotify_rm_watch(_: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let ifd = instance(p, a[0])?;
    host::inotify_rm_watch(ifd, a[1] as i32)
}
