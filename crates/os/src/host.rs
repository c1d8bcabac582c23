//! Safe wrappers over the host calls the OS layer makes.
//!
//! Each wrapper takes Rust values (descriptors, C strings, slices) instead of raw
//! pointers, checks the result and turns `-1` into the host's errno, so the rest of the
//! crate needs no `unsafe` for them. Host errnos are Linux's, the same numbers the
//! guest sees. Calls that let the host read or write guest memory in place (`read`,
//! `writev`, `getdents64`, ...) take [`InPlace`] ranges of the guest window. The socket
//! calls that pass guest memory through a `msghdr` (`syscall/net/msg.rs`) are not here
//! yet: their callers know the pointers are valid.

use std::ffi::CStr;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};

/// A guest errno (positive; the host's numbers are Linux's too).
pub type Errno = i32;

/// The last host errno.
pub fn host_errno() -> Errno {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(crate::linux::EIO)
}

/// A host call's `-1`/errno convention as a result.
fn check<T: Into<i64> + Copy>(r: T) -> Result<u32, Errno> {
    let v: i64 = r.into();
    if v < 0 { Err(host_errno()) } else { Ok(v as u32) }
}

/// A descriptor a host call just returned, owned.
fn owned(fd: i64) -> Result<OwnedFd, Errno> {
    if fd < 0 {
        return Err(host_errno());
    }
    // SAFETY: a fresh descriptor the host just gave us, owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// Plain C structs for which all-zero bytes are a valid value.
///
/// # Safety
/// Only for types made of integers, arrays of them and raw pointers.
pub unsafe trait Zeroed: Sized {
    /// The all-zero value.
    fn zeroed() -> Self {
        // SAFETY: the implementor promises that all-zero bytes are a valid value.
        unsafe { std::mem::zeroed() }
    }
}
// SAFETY: C structs of integers and pointers.
unsafe impl Zeroed for libc::stat {}
// SAFETY: as above.
unsafe impl Zeroed for libc::msghdr {}
// SAFETY: as above.
unsafe impl Zeroed for libc::open_how {}
// SAFETY: as above.
unsafe impl Zeroed for libc::sigaction {}
// SAFETY: as above.
unsafe impl Zeroed for libc::sigset_t {}

// ----- descriptors -------------------------------------------------------------------

/// `open(path, flags, mode)` (`O_CLOEXEC` is the caller's to add).
/// A `mode` is taken as it is (the guest's umask applied by the caller; see `with_umask`).
pub fn open(path: &CStr, flags: i32, mode: u32) -> Result<OwnedFd, Errno> {
    // SAFETY: a valid C string.
    let call = || owned(i64::from(unsafe { libc::open(path.as_ptr(), flags, mode) }));
    if mode == 0 { call() } else { with_umask(0, call) }
}

/// `/proc/self/fd/N` for descriptor `fd`: the path through which the host's calls by
/// name reach the object an (`O_PATH`) descriptor holds.
pub fn fd_path(fd: RawFd) -> std::ffi::CString {
    std::ffi::CString::new(format!("/proc/self/fd/{fd}")).unwrap_or_default()
}

/// `openat2(dir, path, {flags, mode, resolve})`.
pub fn openat2(dir: RawFd, path: &CStr, flags: u64, mode: u64, resolve: u64) -> Result<OwnedFd, Errno> {
    let mut how = libc::open_how::zeroed();
    (how.flags, how.mode, how.resolve) = (flags, mode, resolve);
    let call = || {
        // SAFETY: a valid C string and an open_how of the size given.
        owned(unsafe {
            libc::syscall(
                libc::SYS_openat2,
                dir,
                path.as_ptr(),
                &how as *const libc::open_how,
                size_of::<libc::open_how>(),
            )
        })
    };
    if mode == 0 { call() } else { with_umask(0, call) }
}

/// Runs `f` (a host call that may create a file, directory, node or socket name for
/// the guest) under the host umask `mask`, then puts morph's back. The guest's own
/// umask is the guest kernel's to apply: callers pass modes it already masked, with
/// `mask` 0, or, for a call that takes no mode (`bind`), the guest's umask itself.
/// Under morph's umask (022 from the shell, typically) a guest that set 002 got 0755
/// directories where Linux makes 0775 (Python's `test_os`, `test_subprocess`). The
/// umask is the process's; the OS layer makes host calls on one thread.
pub fn with_umask<T>(mask: u32, f: impl FnOnce() -> T) -> T {
    // SAFETY: umask only swaps the process's file-creation mask.
    let old = unsafe { libc::umask(mask as libc::mode_t) };
    let r = f();
    // SAFETY: as above.
    unsafe { libc::umask(old) };
    r
}

/// `fcntl(fd, F_GETFL)`.
pub fn getfl(fd: RawFd) -> Result<i32, Errno> {
    // SAFETY: F_GETFL takes no argument and touches no memory.
    let r = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    check(r).map(|v| v as i32)
}

/// Whether `fd` is a memfd (`fcntl(fd, F_GET_SEALS)` succeeds only on one).
pub fn is_memfd(fd: RawFd) -> bool {
    // SAFETY: F_GET_SEALS takes no argument and touches no memory.
    unsafe { libc::fcntl(fd, libc::F_GET_SEALS) >= 0 }
}

/// `fcntl(fd, F_SETFL, flags)`.
pub fn setfl(fd: RawFd, flags: i32) -> Result<u32, Errno> {
    // SAFETY: F_SETFL takes an integer and touches no memory.
    check(unsafe { libc::fcntl(fd, libc::F_SETFL, flags) })
}

/// `readahead(fd, offset, count)`.
pub fn readahead(fd: RawFd, offset: i64, count: u32) -> Result<u32, Errno> {
    // SAFETY: readahead takes integers and touches no memory of ours.
    check(unsafe { libc::readahead(fd, offset, count as usize) } as i64)
}

/// `fcntl(fd, F_NOTIFY, mask)`: directory notification (see `crate::sigio`).
pub fn notify_dir(fd: RawFd, mask: i32) -> Result<u32, Errno> {
    // SAFETY: F_NOTIFY takes an integer and touches no memory.
    check(unsafe { libc::fcntl(fd, libc::F_NOTIFY, mask) })
}

/// `fcntl(fd, F_SET_RW_HINT, hint)` (`set`) or `F_GET_RW_HINT` into `hint`.
pub fn rw_hint(fd: RawFd, set: bool, hint: &mut u64) -> Result<u32, Errno> {
    const F_GET_RW_HINT: i32 = 1035;
    const F_SET_RW_HINT: i32 = 1036;
    let cmd = if set { F_SET_RW_HINT } else { F_GET_RW_HINT };
    // SAFETY: both read or write one u64 at the pointer, our caller's.
    check(unsafe { libc::fcntl(fd, cmd, hint as *mut u64) })
}

/// `fcntl(fd, F_DUPFD_CLOEXEC, min)`: a new descriptor for the same open file.
pub fn dup_cloexec(fd: RawFd, min: i32) -> Result<OwnedFd, Errno> {
    // SAFETY: F_DUPFD_CLOEXEC takes an integer and touches no memory.
    owned(i64::from(unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, min) }))
}

/// `fstat(fd)`.
pub fn fstat(fd: RawFd) -> Result<libc::stat, Errno> {
    let mut st = libc::stat::zeroed();
    // SAFETY: fstat writes one struct stat into our local.
    check(unsafe { libc::fstat(fd, &mut st) })?;
    Ok(st)
}

/// `fstatat(dir, name, flags)`.
pub fn fstatat(dir: RawFd, name: &CStr, flags: i32) -> Result<libc::stat, Errno> {
    let mut st = libc::stat::zeroed();
    // SAFETY: a valid C string; fstatat writes one struct stat into our local.
    check(unsafe { libc::fstatat(dir, name.as_ptr(), &mut st, flags) })?;
    Ok(st)
}

/// `isatty(fd)`.
pub fn isatty(fd: RawFd) -> bool {
    // SAFETY: isatty takes an integer.
    unsafe { libc::isatty(fd) == 1 }
}

/// `lseek(fd, off, whence)`.
pub fn lseek(fd: RawFd, off: i64, whence: i32) -> Result<u64, Errno> {
    // SAFETY: lseek touches no memory.
    let r = unsafe { libc::lseek(fd, off, whence) };
    if r < 0 { Err(host_errno()) } else { Ok(r as u64) }
}

/// `pread(fd, buf, off)`.
pub fn pread(fd: RawFd, buf: &mut [u8], off: i64) -> Result<usize, Errno> {
    // SAFETY: pread writes at most `buf.len()` bytes into `buf`.
    let r = unsafe { libc::pread(fd, buf.as_mut_ptr().cast(), buf.len(), off) };
    check(r as i64).map(|n| n as usize)
}

/// `pwrite(fd, buf, off)`.
pub fn pwrite(fd: RawFd, buf: &[u8], off: i64) -> Result<usize, Errno> {
    // SAFETY: pwrite reads at most `buf.len()` bytes from `buf`.
    let r = unsafe { libc::pwrite(fd, buf.as_ptr().cast(), buf.len(), off) };
    check(r as i64).map(|n| n as usize)
}

/// `write(fd, buf)`.
pub fn write(fd: RawFd, buf: &[u8]) -> Result<usize, Errno> {
    // SAFETY: write reads at most `buf.len()` bytes from `buf`.
    let r = unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) };
    check(r as i64).map(|n| n as usize)
}

/// `recv(fd, buf, flags)`.
pub fn recv(fd: RawFd, buf: &mut [u8], flags: i32) -> Result<usize, Errno> {
    // SAFETY: recv writes at most `buf.len()` bytes into `buf`.
    let r = unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), flags) };
    check(r as i64).map(|n| n as usize)
}

/// `send(fd, buf, flags)`.
pub fn send(fd: RawFd, buf: &[u8], flags: i32) -> Result<usize, Errno> {
    // SAFETY: send reads at most `buf.len()` bytes from `buf`.
    let r = unsafe { libc::send(fd, buf.as_ptr().cast(), buf.len(), flags) };
    check(r as i64).map(|n| n as usize)
}

/// `ftruncate(fd, len)`.
/// `fsync(fd)`, `fdatasync(fd)` (`data`) or `syncfs(fd)` (`fs`) on a host descriptor:
/// the host refuses what Linux refuses (`EINVAL` for a pipe or a socket).
pub fn fsync(fd: RawFd, data: bool, fs: bool) -> Result<u32, Errno> {
    // SAFETY: these take a descriptor and touch no memory.
    check(unsafe {
        if fs {
            libc::syncfs(fd)
        } else if data {
            libc::fdatasync(fd)
        } else {
            libc::fsync(fd)
        }
    })
}

pub fn ftruncate(fd: RawFd, len: i64) -> Result<u32, Errno> {
    // SAFETY: ftruncate touches no memory.
    check(unsafe { libc::ftruncate(fd, len) })
}

/// `fallocate(fd, mode, offset, len)`: the host kernel makes Linux's checks on the same
/// kind of object (`ESPIPE` for a pipe, `ENODEV` for what is neither file nor
/// directory, `EOPNOTSUPP` for a mode its file system lacks).
pub fn fallocate(fd: RawFd, mode: i32, offset: i64, len: i64) -> Result<u32, Errno> {
    // SAFETY: fallocate touches no memory.
    check(unsafe { libc::fallocate(fd, mode, offset, len) })
}

/// `copy_file_range(fd_in, off_in, fd_out, off_out, len, 0)`: an offset `None` is the
/// descriptor's file position (which the host advances); how many bytes were copied.
pub fn copy_file_range(
    fd_in: RawFd,
    off_in: Option<i64>,
    fd_out: RawFd,
    off_out: Option<i64>,
    len: usize,
) -> Result<usize, Errno> {
    let (mut i, mut o) = (off_in.unwrap_or(0), off_out.unwrap_or(0));
    let ip = if off_in.is_some() { &mut i as *mut i64 } else { std::ptr::null_mut() };
    let op = if off_out.is_some() { &mut o as *mut i64 } else { std::ptr::null_mut() };
    // SAFETY: each offset pointer is NULL or one of our locals, which the host reads and
    // writes; the copy itself is between two descriptors.
    let r = unsafe { libc::copy_file_range(fd_in, ip, fd_out, op, len, 0) };
    check(r as i64).map(|n| n as usize)
}

/// `splice(fd_in, off_in, fd_out, off_out, len, flags)`: an offset `None` is the
/// descriptor's file position (which the host advances), `Some` an offset the host
/// reads and moves past what was moved; how many bytes were moved.
pub fn splice(
    fd_in: RawFd,
    off_in: Option<&mut i64>,
    fd_out: RawFd,
    off_out: Option<&mut i64>,
    len: usize,
    flags: u32,
) -> Result<usize, Errno> {
    let ip = off_in.map_or(std::ptr::null_mut(), |o| o as *mut i64);
    let op = off_out.map_or(std::ptr::null_mut(), |o| o as *mut i64);
    // SAFETY: each offset pointer is NULL or the caller's i64, which the host reads and
    // writes; the bytes move between two descriptors.
    let r = unsafe { libc::splice(fd_in, ip, fd_out, op, len, flags) };
    check(r as i64).map(|n| n as usize)
}

/// `tee(fd_in, fd_out, len, flags)`: how many bytes were duplicated.
pub fn tee(fd_in: RawFd, fd_out: RawFd, len: usize, flags: u32) -> Result<usize, Errno> {
    // SAFETY: tee moves bytes between two descriptors and touches no memory.
    let r = unsafe { libc::tee(fd_in, fd_out, len, flags) };
    check(r as i64).map(|n| n as usize)
}

/// `sync_file_range(fd, offset, nbytes, flags)`: the host kernel makes Linux's checks on
/// the same kind of object (`EBADF`, `EINVAL`, `ESPIPE` for a pipe or a socket).
pub fn sync_file_range(fd: RawFd, offset: i64, nbytes: i64, flags: u32) -> Result<u32, Errno> {
    // SAFETY: sync_file_range touches no memory.
    check(unsafe { libc::sync_file_range(fd, offset, nbytes, flags) })
}

/// `fcntl(fd, F_GETPIPE_SZ)`: a pipe's capacity in bytes.
pub fn pipe_size(fd: RawFd) -> Result<u32, Errno> {
    // SAFETY: F_GETPIPE_SZ takes no argument and touches no memory.
    check(unsafe { libc::fcntl(fd, libc::F_GETPIPE_SZ) })
}

/// `fcntl(fd, F_SETPIPE_SZ, size)`: the capacity the host gave the pipe.
pub fn set_pipe_size(fd: RawFd, size: u32) -> Result<u32, Errno> {
    // SAFETY: F_SETPIPE_SZ takes an integer and touches no memory.
    check(unsafe { libc::fcntl(fd, libc::F_SETPIPE_SZ, size as libc::c_int) })
}

/// `clock_getres(clock)`.
pub fn clock_getres(clock: i32) -> Result<libc::timespec, Errno> {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_getres writes one timespec into our local.
    check(unsafe { libc::clock_getres(clock, &mut ts) })?;
    Ok(ts)
}

/// `read(fd, buf)`.
pub fn read(fd: RawFd, buf: &mut [u8]) -> Result<usize, Errno> {
    // SAFETY: read writes at most `buf.len()` bytes into `buf`.
    let r = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
    check(r as i64).map(|n| n as usize)
}

/// `posix_fadvise(fd, offset, len, advice)`: the host kernel makes Linux's checks on
/// the same kind of object (`EBADF`, `ESPIPE` for a pipe, `EINVAL`).
pub fn fadvise(fd: RawFd, offset: i64, len: i64, advice: i32) -> Result<u32, Errno> {
    // SAFETY: fadvise touches no memory.
    match unsafe { libc::posix_fadvise(fd, offset, len, advice) } {
        0 => Ok(0),
        e => Err(e),
    }
}

/// `ioctl(fd, FIONBIO, on)`.
pub fn set_nonblocking(fd: RawFd, on: bool) -> Result<u32, Errno> {
    let v = libc::c_int::from(on);
    // SAFETY: FIONBIO reads one int from our local.
    check(unsafe { libc::ioctl(fd, libc::FIONBIO, &v) })
}

/// `ioctl(fd, FIONREAD)`: bytes queued for reading.
pub fn queued(fd: RawFd) -> Result<i32, Errno> {
    let mut n: libc::c_int = 0;
    // SAFETY: FIONREAD writes one int into our local.
    check(unsafe { libc::ioctl(fd, libc::FIONREAD, &mut n) })?;
    Ok(n)
}

/// `getdents64(fd, buf)`.
pub fn getdents64(fd: RawFd, buf: &mut [u8]) -> Result<usize, Errno> {
    // SAFETY: getdents64 writes at most `buf.len()` bytes into `buf`.
    let r = unsafe { libc::syscall(libc::SYS_getdents64, fd, buf.as_mut_ptr(), buf.len()) };
    check(r).map(|n| n as usize)
}

/// `pipe2(flags)`: (read end, write end).
pub fn pipe2(flags: i32) -> Result<(OwnedFd, OwnedFd), Errno> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two ints into our array.
    check(unsafe { libc::pipe2(fds.as_mut_ptr(), flags) })?;
    Ok((owned(fds[0].into())?, owned(fds[1].into())?))
}

/// `memfd_create(name, flags)`.
pub fn memfd_create(name: &CStr, flags: u32) -> Result<OwnedFd, Errno> {
    // SAFETY: a valid C string.
    owned(i64::from(unsafe { libc::memfd_create(name.as_ptr(), flags) }))
}

/// A new host eventfd with counter `initval` (`semaphore`: `EFD_SEMAPHORE`),
/// close-on-exec.
pub fn eventfd(initval: u32, semaphore: bool) -> Result<OwnedFd, Errno> {
    let flags = libc::EFD_CLOEXEC | if semaphore { libc::EFD_SEMAPHORE } else { 0 };
    // SAFETY: eventfd touches no memory; a descriptor it returns is ours alone.
    let fd = check(unsafe { libc::eventfd(initval, flags) })?;
    // SAFETY: a fresh descriptor nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// A new host inotify instance, close-on-exec and non-blocking (a guest read that would
/// block waits in the scheduler).
pub fn inotify_init() -> Result<OwnedFd, Errno> {
    // SAFETY: inotify_init1 touches no memory; a descriptor it returns is ours alone.
    let fd = check(unsafe { libc::inotify_init1(libc::IN_CLOEXEC | libc::IN_NONBLOCK) })?;
    // SAFETY: a fresh descriptor nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// `inotify_add_watch(fd, path, mask)`: the watch descriptor.
pub fn inotify_add_watch(fd: RawFd, path: &CStr, mask: u32) -> Result<u32, Errno> {
    // SAFETY: a valid C string, only read.
    check(unsafe { libc::inotify_add_watch(fd, path.as_ptr(), mask) })
}

/// `inotify_rm_watch(fd, wd)`.
pub fn inotify_rm_watch(fd: RawFd, wd: i32) -> Result<u32, Errno> {
    // SAFETY: touches no memory.
    check(unsafe { libc::inotify_rm_watch(fd, wd) })
}

/// A new host timerfd on `clock`, close-on-exec.
pub fn timerfd_create(clock: i32) -> Result<OwnedFd, Errno> {
    // SAFETY: timerfd_create touches no memory; a descriptor it returns is ours alone.
    let fd = check(unsafe { libc::timerfd_create(clock, libc::TFD_CLOEXEC) })?;
    // SAFETY: a fresh descriptor nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// `timerfd_settime(fd, flags, new)` with the host's `itimerspec` (64-bit times); the
/// old value returned.
pub fn timerfd_settime(fd: RawFd, flags: i32, new: [i64; 4]) -> Result<[i64; 4], Errno> {
    let spec = |v: [i64; 4]| libc::itimerspec {
        it_interval: libc::timespec { tv_sec: v[0], tv_nsec: v[1] },
        it_value: libc::timespec { tv_sec: v[2], tv_nsec: v[3] },
    };
    let n = spec(new);
    let mut old = spec([0; 4]);
    // SAFETY: both are our own itimerspecs; the host reads one and writes the other.
    check(unsafe { libc::timerfd_settime(fd, flags, &n, &mut old) })?;
    Ok([old.it_interval.tv_sec, old.it_interval.tv_nsec, old.it_value.tv_sec, old.it_value.tv_nsec])
}

/// `timerfd_gettime(fd)`: the interval and what is left, as four 64-bit numbers.
pub fn timerfd_gettime(fd: RawFd) -> Result<[i64; 4], Errno> {
    let mut cur = libc::itimerspec {
        it_interval: libc::timespec { tv_sec: 0, tv_nsec: 0 },
        it_value: libc::timespec { tv_sec: 0, tv_nsec: 0 },
    };
    // SAFETY: the host writes our itimerspec.
    check(unsafe { libc::timerfd_gettime(fd, &mut cur) })?;
    Ok([cur.it_interval.tv_sec, cur.it_interval.tv_nsec, cur.it_value.tv_sec, cur.it_value.tv_nsec])
}

/// A new host epoll instance (close-on-exec, as every descriptor morph holds).
pub fn epoll_create() -> Result<OwnedFd, Errno> {
    // SAFETY: epoll_create1 touches no memory; a descriptor it returns is ours alone.
    let fd = check(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) })?;
    // SAFETY: a fresh descriptor nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// `epoll_ctl(epfd, op, fd, event)` on host descriptors; `event` is the guest's
/// `struct epoll_event` (packed, the same 12 bytes on i386 and x86-64).
pub fn epoll_ctl(epfd: RawFd, op: i32, fd: RawFd, event: Option<[u8; 12]>) -> Result<u32, Errno> {
    let mut ev = libc::epoll_event { events: 0, u64: 0 };
    if let Some(b) = event {
        ev.events = u32::from_le_bytes(b[0..4].try_into().expect("4 bytes"));
        ev.u64 = u64::from_le_bytes(b[4..12].try_into().expect("8 bytes"));
    }
    let p = if event.is_some() { &mut ev as *mut libc::epoll_event } else { std::ptr::null_mut() };
    // SAFETY: `p` is null or our event, which epoll_ctl only reads.
    check(unsafe { libc::epoll_ctl(epfd, op, fd, p) })
}

/// The events ready on a host epoll instance now (no wait), at most `max`, each as the
/// guest's 12 bytes.
pub fn epoll_wait(epfd: RawFd, max: usize) -> Result<Vec<u8>, Errno> {
    let mut evs = vec![libc::epoll_event { events: 0, u64: 0 }; max];
    // SAFETY: epoll_wait writes at most `max` events into our vector of that length.
    let n = check(unsafe { libc::epoll_wait(epfd, evs.as_mut_ptr(), max as i32, 0) })? as usize;
    let mut out = Vec::with_capacity(12 * n);
    for e in &evs[..n] {
        let (events, data) = (e.events, e.u64);
        out.extend_from_slice(&events.to_le_bytes());
        out.extend_from_slice(&data.to_le_bytes());
    }
    Ok(out)
}

/// `poll(fds, ms)`: how many are ready.
pub fn poll(fds: &mut [libc::pollfd], ms: i32) -> Result<usize, Errno> {
    // SAFETY: poll reads and writes `fds.len()` pollfds of our slice.
    let r = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
    check(r).map(|n| n as usize)
}

/// True if any of `fds` is ready now.
pub(crate) fn poll_now(fds: &[libc::pollfd]) -> bool {
    let mut v = fds.to_vec();
    poll(&mut v, 0).is_ok_and(|n| n > 0)
}

/// Whether two of morph's descriptors are the same open file description (`kcmp`);
/// `None` if the host cannot tell.
pub fn same_open_file(a: RawFd, b: RawFd) -> Option<bool> {
    const KCMP_FILE: i32 = 0;
    let pid = getpid();
    // SAFETY: kcmp compares two of our own descriptors and touches no memory.
    let r = unsafe { libc::syscall(libc::SYS_kcmp, pid, pid, KCMP_FILE, a, b) };
    (r >= 0).then_some(r == 0)
}

// ----- guest memory in place ---------------------------------------------------------

/// A range of guest memory for a host call to read or write in place: host addresses in
/// the running process's window (laid out as a `struct iovec`, so a slice of them is an
/// iovec array). Made only from an address space's window ([`InPlace::window`]), so a
/// host call given one touches nothing but guest memory: the window holds no Rust value,
/// any 32-bit range lies in its slot (4 GiB plus a 4 GiB guard), and the host maps its
/// pages with the guest's protection, so the host call stops with `EFAULT` (or a short
/// count) where the guest may not go. The caller prepares the range first
/// (`AddressSpace::check_read`, `prepare_write`) so that the host stops exactly where
/// Linux would.
#[derive(Clone, Copy)]
#[repr(transparent)]
pub struct InPlace(libc::iovec);

impl InPlace {
    /// Guest `[va, va + len)` of `aspace`'s window.
    pub fn window(aspace: &morph_mem::AddressSpace, va: u32, len: u32) -> InPlace {
        InPlace(libc::iovec { iov_base: aspace.host_ptr(va).cast(), iov_len: len as usize })
    }

    /// Its length in bytes.
    pub fn len(&self) -> usize {
        self.0.iov_len
    }

    /// Its guest address in `aspace` (the window it was made from).
    pub fn va(&self, aspace: &morph_mem::AddressSpace) -> u32 {
        (self.0.iov_base as usize).wrapping_sub(aspace.host_ptr(0) as usize) as u32
    }
}

/// `pread(fd, buf, off)` into guest memory.
pub fn pread_in_place(fd: RawFd, buf: InPlace, off: i64) -> Result<u32, Errno> {
    // SAFETY: `buf` lies in a guest window (see `InPlace`).
    check(unsafe { libc::pread(fd, buf.0.iov_base, buf.0.iov_len, off) } as i64)
}

/// `pwrite(fd, buf, off)` from guest memory.
pub fn pwrite_in_place(fd: RawFd, buf: InPlace, off: i64) -> Result<u32, Errno> {
    // SAFETY: `buf` lies in a guest window (see `InPlace`).
    check(unsafe { libc::pwrite(fd, buf.0.iov_base, buf.0.iov_len, off) } as i64)
}

/// `preadv2(fd, bufs, off, flags)` into guest memory (`off` -1: at the file position).
pub fn preadv2_in_place(fd: RawFd, bufs: &[InPlace], off: i64, flags: i32) -> Result<u32, Errno> {
    // SAFETY: every buffer lies in a guest window (see `InPlace`), whose layout is iovec's.
    check(unsafe { libc::preadv2(fd, bufs.as_ptr().cast(), bufs.len() as i32, off, flags) } as i64)
}

/// `pwritev2(fd, bufs, off, flags)` from guest memory (`off` -1: at the file position).
pub fn pwritev2_in_place(fd: RawFd, bufs: &[InPlace], off: i64, flags: i32) -> Result<u32, Errno> {
    // SAFETY: every buffer lies in a guest window (see `InPlace`), whose layout is iovec's.
    check(unsafe { libc::pwritev2(fd, bufs.as_ptr().cast(), bufs.len() as i32, off, flags) } as i64)
}

/// `readv(fd, bufs)` into guest memory.
pub fn readv_in_place(fd: RawFd, bufs: &[InPlace]) -> Result<u32, Errno> {
    // SAFETY: every buffer lies in a guest window (see `InPlace`), whose layout is iovec's.
    check(unsafe { libc::readv(fd, bufs.as_ptr().cast(), bufs.len() as i32) } as i64)
}

/// `writev(fd, bufs)` from guest memory.
pub fn writev_in_place(fd: RawFd, bufs: &[InPlace]) -> Result<u32, Errno> {
    // SAFETY: every buffer lies in a guest window (see `InPlace`), whose layout is iovec's.
    check(unsafe { libc::writev(fd, bufs.as_ptr().cast(), bufs.len() as i32) } as i64)
}

/// `recvmsg(fd, bufs, flags)` into guest memory, without an address or control buffer.
pub fn recv_in_place(fd: RawFd, bufs: &[InPlace], flags: i32) -> Result<u32, Errno> {
    let mut hdr = libc::msghdr::zeroed();
    hdr.msg_iov = bufs.as_ptr().cast_mut().cast();
    hdr.msg_iovlen = bufs.len();
    // SAFETY: every buffer lies in a guest window (see `InPlace`), whose layout is iovec's;
    // the header names nothing else.
    check(unsafe { libc::recvmsg(fd, &mut hdr, flags) } as i64)
}

/// `sendmsg(fd, bufs, flags)` from guest memory, without an address or control buffer.
pub fn send_in_place(fd: RawFd, bufs: &[InPlace], flags: i32) -> Result<u32, Errno> {
    let mut hdr = libc::msghdr::zeroed();
    hdr.msg_iov = bufs.as_ptr().cast_mut().cast();
    hdr.msg_iovlen = bufs.len();
    // SAFETY: as `recv_in_place`.
    check(unsafe { libc::sendmsg(fd, &hdr, flags) } as i64)
}

/// `getdents64(fd, buf)` into guest memory (`linux_dirent64` is the same on i386).
pub fn getdents64_in_place(fd: RawFd, buf: InPlace) -> Result<u32, Errno> {
    // SAFETY: `buf` lies in a guest window (see `InPlace`).
    check(unsafe { libc::syscall(libc::SYS_getdents64, fd, buf.0.iov_base, buf.0.iov_len) })
}

/// `vmsplice(fd, bufs, flags)` from a pipe into guest memory (a copy, as Linux makes it).
pub fn vmsplice_in_place(fd: RawFd, bufs: &[InPlace], flags: u32) -> Result<u32, Errno> {
    // SAFETY: every buffer lies in a guest window (see `InPlace`), whose layout is iovec's.
    check(unsafe { libc::vmsplice(fd, bufs.as_ptr().cast(), bufs.len(), flags) } as i64)
}

/// `vmsplice(fd, iov, flags)` into a pipe of copies of guest bytes: each of `segs` is
/// (the guest address of its first byte, the bytes), its copy placed at the same offset
/// within a page, so that the pipe takes the same page fragments (and slots) as from
/// the guest's own pages; `tail`, a guest range the guest may not read, follows (the
/// host stops there, as Linux stops at the guest's fault). The copies are fresh
/// anonymous pages, unmapped here after the call while the pipe holds its own
/// references to them: no later store of the guest, and no reuse of morph's memory,
/// changes what the pipe holds.
pub fn vmsplice_copies(fd: RawFd, segs: &[(u32, Vec<u8>)], tail: Option<InPlace>, flags: u32) -> Result<u32, Errno> {
    const PAGE: usize = 4096;
    let start = |va: u32| va as usize % PAGE;
    let spans: Vec<usize> = segs.iter().map(|(va, b)| (start(*va) + b.len()).div_ceil(PAGE) * PAGE).collect();
    let total: usize = spans.iter().sum();
    let base = if total == 0 {
        std::ptr::null_mut()
    } else {
        let prot = libc::PROT_READ | libc::PROT_WRITE;
        // SAFETY: a new private anonymous mapping where the host chooses: no memory of
        // ours is touched.
        let m =
            unsafe { libc::mmap(std::ptr::null_mut(), total, prot, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0) };
        if m == libc::MAP_FAILED {
            return Err(host_errno());
        }
        m.cast::<u8>()
    };
    let mut iov = Vec::with_capacity(segs.len() + 1);
    let mut at = 0;
    for ((va, bytes), span) in segs.iter().zip(&spans) {
        // SAFETY: `at + start(va) + bytes.len() <= at + span <= total`: the copy lies in
        // the mapping just made, which nothing else refers to.
        let dst = unsafe { base.add(at + start(*va)) };
        // SAFETY: as above; the source is a distinct Rust slice.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), dst, bytes.len()) };
        iov.push(libc::iovec { iov_base: dst.cast(), iov_len: bytes.len() });
        at += span;
    }
    if let Some(t) = tail {
        iov.push(t.0);
    }
    // SAFETY: the iovecs name the mapping above and a range of a guest window (see
    // `InPlace`); vmsplice only reads them (and takes references to their pages).
    let r = check(unsafe { libc::vmsplice(fd, iov.as_ptr(), iov.len(), flags) } as i64);
    if total > 0 {
        // SAFETY: the mapping made above, no longer used here; the pages the pipe took
        // stay alive by its references.
        unsafe { libc::munmap(base.cast(), total) };
    }
    r
}

/// `ioctl(fd, request, &buf)` for the requests that fill at most 64 bytes (`TCGETS`,
/// `TIOCGWINSZ`, `TIOCGPGRP`, `FIONREAD`; their structures are the same on i386):
/// the result and the bytes. Any other request is `ENOTTY`.
pub fn ioctl_get(fd: RawFd, request: u32) -> Result<(u32, [u8; 64]), Errno> {
    if ![libc::TCGETS, libc::TIOCGWINSZ, libc::TIOCGPGRP, libc::FIONREAD].contains(&u64::from(request)) {
        return Err(crate::linux::ENOTTY);
    }
    let mut buf = [0u8; 64];
    // SAFETY: each of these requests writes at most 64 bytes to its argument.
    let r = check(unsafe { libc::ioctl(fd, u64::from(request), buf.as_mut_ptr()) })?;
    Ok((r, buf))
}

/// The size of what the argument of a terminal `ioctl` request points to (read or
/// filled by the host; the structures are the same on i386 and x86-64), for the
/// requests morph passes to a host pty: `None` for the others.
pub fn tty_arg_size(request: u32) -> Option<usize> {
    Some(match u64::from(request) {
        libc::TCGETS | libc::TCSETS | libc::TCSETSW | libc::TCSETSF => 36,
        libc::TCGETS2 | libc::TCSETS2 | libc::TCSETSW2 | libc::TCSETSF2 => 44,
        libc::TIOCGWINSZ | libc::TIOCSWINSZ => 8,
        libc::FIONREAD | libc::TIOCOUTQ | libc::TIOCPKT | libc::TIOCGPKT | libc::TIOCSPTLCK | libc::TIOCGPTLCK => 4,
        libc::TIOCGPTN | libc::TIOCGEXCL | libc::TIOCGETD | libc::TIOCSETD => 4,
        _ => return None,
    })
}

/// `ioctl(fd, request, &buf)` for a request [`tty_arg_size`] knows (any other is
/// `ENOTTY`): the host reads or fills the start of `buf`.
pub fn ioctl_ptr(fd: RawFd, request: u32, buf: &mut [u8; 64]) -> Result<u32, Errno> {
    if tty_arg_size(request).is_none() {
        return Err(crate::linux::ENOTTY);
    }
    // SAFETY: each of these requests reads or writes at most 44 bytes of its argument.
    check(unsafe { libc::ioctl(fd, u64::from(request), buf.as_mut_ptr()) })
}

/// `ioctl(fd, request, arg)` for the terminal requests whose argument is a value
/// (`TCFLSH`, `TCSBRK`, `TCSBRKP`, `TCXONC`, `TIOCEXCL`, `TIOCNXCL`, `TIOCSBRK`,
/// `TIOCCBRK`, `TIOCGPTPEER`; any other is `ENOTTY`); `TIOCGPTPEER` opens a descriptor,
/// which the result is and the caller must own.
pub fn ioctl_value(fd: RawFd, request: u32, arg: u32) -> Result<u32, Errno> {
    let known = [
        libc::TCFLSH,
        libc::TCSBRK,
        libc::TCSBRKP,
        libc::TCXONC,
        libc::TIOCEXCL,
        libc::TIOCNXCL,
        libc::TIOCSBRK,
        libc::TIOCCBRK,
        libc::TIOCGPTPEER,
    ];
    if !known.contains(&u64::from(request)) {
        return Err(crate::linux::ENOTTY);
    }
    // SAFETY: these requests take their argument as a value, not a pointer.
    check(unsafe { libc::ioctl(fd, u64::from(request), libc::c_ulong::from(arg)) })
}

// ----- names ---------------------------------------------------------------------------

/// `unlinkat(dir, name, flags)`.
pub fn unlinkat(dir: RawFd, name: &CStr, flags: i32) -> Result<u32, Errno> {
    // SAFETY: a valid C string.
    check(unsafe { libc::unlinkat(dir, name.as_ptr(), flags) })
}

/// `mkdirat(dir, name, mode)`, `mode` taken as it is (the guest's umask applied by the
/// caller; see `with_umask`).
pub fn mkdirat(dir: RawFd, name: &CStr, mode: u32) -> Result<u32, Errno> {
    // SAFETY: a valid C string.
    with_umask(0, || check(unsafe { libc::mkdirat(dir, name.as_ptr(), mode) }))
}

/// `mknodat(dir, name, mode, 0)`, `mode` taken as it is (as `mkdirat`'s).
pub fn mknodat(dir: RawFd, name: &CStr, mode: u32) -> Result<u32, Errno> {
    // SAFETY: a valid C string.
    with_umask(0, || check(unsafe { libc::mknodat(dir, name.as_ptr(), mode, 0) }))
}

/// `renameat2(old_dir, old, new_dir, new, flags)` (`flags` 0 is `renameat`).
pub fn renameat2(od: RawFd, on: &CStr, nd: RawFd, nn: &CStr, flags: u32) -> Result<u32, Errno> {
    // SAFETY: valid C strings.
    check(unsafe { libc::renameat2(od, on.as_ptr(), nd, nn.as_ptr(), flags) })
}

/// `linkat(AT_FDCWD, from, new_dir, new, AT_SYMLINK_FOLLOW)`.
pub fn link_following(from: &CStr, nd: RawFd, nn: &CStr) -> Result<u32, Errno> {
    // SAFETY: valid C strings.
    check(unsafe { libc::linkat(libc::AT_FDCWD, from.as_ptr(), nd, nn.as_ptr(), libc::AT_SYMLINK_FOLLOW) })
}

/// `symlinkat(target, dir, name)`.
pub fn symlinkat(target: &CStr, dir: RawFd, name: &CStr) -> Result<u32, Errno> {
    // SAFETY: valid C strings.
    check(unsafe { libc::symlinkat(target.as_ptr(), dir, name.as_ptr()) })
}

/// `readlinkat(dir, name, buf)`: the length of the link's text.
pub fn readlinkat(dir: RawFd, name: &CStr, buf: &mut [u8]) -> Result<usize, Errno> {
    // SAFETY: a valid C string; at most `buf.len()` bytes are written into `buf`.
    let r = unsafe { libc::readlinkat(dir, name.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
    check(r as i64).map(|n| n as usize)
}

/// `chmod(path, mode)`.
pub fn chmod(path: &CStr, mode: u32) -> Result<u32, Errno> {
    // SAFETY: a valid C string.
    check(unsafe { libc::chmod(path.as_ptr(), mode) })
}

/// `fchmod(fd, mode)`.
pub fn fchmod(fd: RawFd, mode: u32) -> Result<u32, Errno> {
    // SAFETY: fchmod touches no memory.
    check(unsafe { libc::fchmod(fd, mode) })
}

/// `fchown(fd, uid, gid)` (`u32::MAX` leaves an id unchanged).
pub fn fchown(fd: RawFd, uid: u32, gid: u32) -> Result<u32, Errno> {
    // SAFETY: fchown touches no memory.
    check(unsafe { libc::fchown(fd, uid, gid) })
}

/// `fchownat(fd, "", uid, gid, AT_EMPTY_PATH)`: the object `fd` names, which may be an
/// `O_PATH` descriptor of a symbolic link (the link itself changes).
pub fn fchown_empty_path(fd: RawFd, uid: u32, gid: u32) -> Result<u32, Errno> {
    // SAFETY: an empty C string.
    check(unsafe { libc::fchownat(fd, c"".as_ptr(), uid, gid, libc::AT_EMPTY_PATH) })
}

/// `utimensat(dir, name, times, flags)`; `name` `None` is the descriptor itself (the
/// kernel's NULL path, which glibc's wrapper does not pass); `times` `None` is now.
pub fn utimensat(
    dir: RawFd,
    name: Option<&CStr>,
    times: Option<&[libc::timespec; 2]>,
    flags: i32,
) -> Result<u32, Errno> {
    let tp = times.map_or(std::ptr::null(), |t| t.as_ptr());
    let np = name.map_or(std::ptr::null(), |n| n.as_ptr());
    // SAFETY: a valid C string or NULL, two timespecs or NULL.
    check(unsafe { libc::syscall(libc::SYS_utimensat, dir, np, tp, flags) })
}

/// `faccessat(fd, "", mode, AT_EMPTY_PATH | flags)`.
pub fn access_fd(fd: RawFd, mode: i32, flags: i32) -> Result<u32, Errno> {
    // SAFETY: an empty C string.
    check(unsafe { libc::faccessat(fd, c"".as_ptr(), mode, libc::AT_EMPTY_PATH | flags) })
}

/// `faccessat2(fd, "", mode, AT_EMPTY_PATH)`.
pub fn access2_fd(fd: RawFd, mode: u32) -> Result<u32, Errno> {
    // SAFETY: an empty C string.
    check(unsafe { libc::syscall(libc::SYS_faccessat2, fd, c"".as_ptr(), mode, libc::AT_EMPTY_PATH) })
}

/// `statx(fd, "", AT_EMPTY_PATH, mask)` into `buf` (the kernel's 256-byte struct).
pub fn statx_fd(fd: RawFd, mask: u32, buf: &mut [u8; 256]) -> Result<u32, Errno> {
    // SAFETY: an empty C string; statx writes one 256-byte struct into `buf`.
    check(unsafe { libc::syscall(libc::SYS_statx, fd, c"".as_ptr(), libc::AT_EMPTY_PATH, mask, buf.as_mut_ptr()) })
}

/// `fstatfs(fd)` as the x86-64 kernel's `struct statfs` in 64-bit words.
pub fn fstatfs(fd: RawFd) -> Result<[u64; 15], Errno> {
    let mut st = [0u64; 15];
    // SAFETY: fstatfs writes one 120-byte struct statfs into our array.
    check(unsafe { libc::syscall(libc::SYS_fstatfs, fd, st.as_mut_ptr()) })?;
    Ok(st)
}

// ----- sockets --------------------------------------------------------------------------

/// `socket(domain, ty, proto)`.
pub fn socket(domain: i32, ty: i32, proto: i32) -> Result<OwnedFd, Errno> {
    // SAFETY: socket touches no memory.
    owned(i64::from(unsafe { libc::socket(domain, ty, proto) }))
}

/// `socketpair(domain, ty, proto)`.
pub fn socketpair(domain: i32, ty: i32, proto: i32) -> Result<(OwnedFd, OwnedFd), Errno> {
    let mut fds = [0; 2];
    // SAFETY: socketpair writes two ints into our array.
    check(unsafe { libc::socketpair(domain, ty, proto, fds.as_mut_ptr()) })?;
    Ok((owned(fds[0].into())?, owned(fds[1].into())?))
}

/// `bind(fd, addr)`.
pub fn bind(fd: RawFd, addr: &[u8]) -> Result<u32, Errno> {
    // SAFETY: bind reads `addr.len()` bytes of address.
    check(unsafe { libc::bind(fd, addr.as_ptr().cast(), addr.len() as libc::socklen_t) })
}

/// `connect(fd, addr)`.
pub fn connect(fd: RawFd, addr: &[u8]) -> Result<u32, Errno> {
    // SAFETY: connect reads `addr.len()` bytes of address.
    check(unsafe { libc::connect(fd, addr.as_ptr().cast(), addr.len() as libc::socklen_t) })
}

/// `listen(fd, backlog)`.
pub fn listen(fd: RawFd, backlog: i32) -> Result<u32, Errno> {
    // SAFETY: listen touches no memory.
    check(unsafe { libc::listen(fd, backlog) })
}

/// `shutdown(fd, how)`.
pub fn shutdown(fd: RawFd, how: i32) -> Result<u32, Errno> {
    // SAFETY: shutdown touches no memory.
    check(unsafe { libc::shutdown(fd, how) })
}

/// A socket address buffer (`sockaddr_storage` size) and its length.
fn name_call(
    f: impl FnOnce(*mut libc::sockaddr, *mut libc::socklen_t) -> libc::c_int,
) -> Result<(i32, Vec<u8>), Errno> {
    let mut b = [0u8; 128];
    let mut len = b.len() as libc::socklen_t;
    let r = f(b.as_mut_ptr().cast(), &mut len);
    if r < 0 {
        return Err(host_errno());
    }
    Ok((r, b[..(len as usize).min(b.len())].to_vec()))
}

/// `accept4(fd, flags)`: the connection and the peer's address.
pub fn accept4(fd: RawFd, flags: i32) -> Result<(OwnedFd, Vec<u8>), Errno> {
    // SAFETY: accept4 writes at most `len` bytes of address into the buffer.
    let (r, addr) = name_call(|a, l| unsafe { libc::accept4(fd, a, l, flags) })?;
    Ok((owned(r.into())?, addr))
}

/// `getsockname(fd)` or, with `peer`, `getpeername(fd)`.
pub fn sockname(fd: RawFd, peer: bool) -> Result<Vec<u8>, Errno> {
    // SAFETY: both write at most `len` bytes of address into the buffer.
    let (_, addr) =
        name_call(|a, l| unsafe { if peer { libc::getpeername(fd, a, l) } else { libc::getsockname(fd, a, l) } })?;
    Ok(addr)
}

/// `getsockopt(fd, level, name)` into `buf`: the option's length.
pub fn getsockopt(fd: RawFd, level: i32, name: i32, buf: &mut [u8]) -> Result<usize, Errno> {
    let mut l = buf.len() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `l` bytes into `buf`.
    check(unsafe { libc::getsockopt(fd, level, name, buf.as_mut_ptr().cast(), &mut l) })?;
    Ok(l as usize)
}

/// An integer socket option.
pub fn getsockopt_int(fd: RawFd, level: i32, name: i32) -> Option<i32> {
    let mut b = [0u8; 4];
    getsockopt(fd, level, name, &mut b).ok()?;
    Some(i32::from_ne_bytes(b))
}

/// `setsockopt(fd, level, name, value)`.
pub fn setsockopt(fd: RawFd, level: i32, name: i32, value: &[u8]) -> Result<u32, Errno> {
    // SAFETY: setsockopt reads `value.len()` bytes.
    check(unsafe { libc::setsockopt(fd, level, name, value.as_ptr().cast(), value.len() as libc::socklen_t) })
}

// ----- the host process -------------------------------------------------------------------

/// `clock_gettime(clock)`.
pub fn clock_gettime(clock: i32) -> Result<libc::timespec, Errno> {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec into our local.
    check(unsafe { libc::clock_gettime(clock, &mut ts) })?;
    Ok(ts)
}

/// `getrandom(buf, 0)`: how many bytes were filled.
pub fn getrandom(buf: &mut [u8]) -> Result<usize, Errno> {
    // SAFETY: getrandom writes at most `buf.len()` bytes into `buf`.
    let r = unsafe { libc::getrandom(buf.as_mut_ptr().cast(), buf.len(), 0) };
    check(r as i64).map(|n| n as usize)
}

/// morph's own pid on the host.
pub fn getpid() -> i32 {
    // SAFETY: getpid has no preconditions.
    unsafe { libc::getpid() }
}

/// `getrlimit(resource)`: (soft, hard).
pub fn getrlimit(resource: u32) -> Option<(u64, u64)> {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes one struct rlimit into our local.
    (unsafe { libc::getrlimit(resource as _, &mut lim) } == 0).then_some((lim.rlim_cur, lim.rlim_max))
}

/// The nice value morph runs at, which the first process inherits.
pub(crate) fn host_nice() -> i32 {
    // SAFETY: getpriority of our own process has no preconditions; errors read as 0.
    unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) }.clamp(-20, 19)
}

/// The scheduling policy (without `SCHED_RESET_ON_FORK`) and real-time priority morph
/// runs with, which the first process inherits ((0, 0) if the host will not say).
pub(crate) fn host_sched_policy() -> (u32, u32) {
    let mut param = libc::sched_param { sched_priority: 0 };
    // SAFETY: our own thread's policy; sched_getparam writes one sched_param into our local.
    let (policy, r) = unsafe { (libc::sched_getscheduler(0), libc::sched_getparam(0, &mut param)) };
    if policy < 0 || r != 0 {
        return (0, 0);
    }
    (policy as u32 & !0x4000_0000, param.sched_priority.max(0) as u32)
}

/// morph's own `no_new_privs` flag and timer slack (ns), which the first process
/// inherits as a child of morph would.
pub(crate) fn host_prctl_attrs() -> (bool, u32) {
    // SAFETY: prctl's GET options read our own task's flags and touch no memory.
    let (nnp, slack) = unsafe {
        (libc::prctl(libc::PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0), libc::prctl(libc::PR_GET_TIMERSLACK, 0, 0, 0, 0))
    };
    let slack = u32::try_from(slack).unwrap_or(50_000);
    (nnp == 1, slack)
}

/// The host's user and group ids (the guest runs as the user running morph), read once:
/// morph never changes them.
pub(crate) fn ids() -> [u32; 4] {
    static IDS: std::sync::OnceLock<[u32; 4]> = std::sync::OnceLock::new();
    // SAFETY: these calls cannot fail and have no preconditions.
    *IDS.get_or_init(|| unsafe { [libc::getuid(), libc::geteuid(), libc::getgid(), libc::getegid()] })
}

/// The host's supplementary group ids (the guest's, as [`ids`] are), read once.
pub(crate) fn groups() -> &'static [u32] {
    static GROUPS: std::sync::OnceLock<Vec<u32>> = std::sync::OnceLock::new();
    GROUPS.get_or_init(|| {
        // SAFETY: getgroups with a size of 0 only counts; the second call writes at most
        // `n` ids into a buffer of `n`. A failure (or a count changed in between, which
        // nothing in morph does) reads as no supplementary groups.
        unsafe {
            let n = libc::getgroups(0, std::ptr::null_mut());
            let mut v = vec![0 as libc::gid_t; usize::try_from(n).unwrap_or(0)];
            let got = libc::getgroups(n.max(0), v.as_mut_ptr());
            v.truncate(usize::try_from(got).unwrap_or(0));
            v
        }
    })
}

/// Makes `handler` the action of host signal `sig`, without `SA_RESTART` (a blocking host
/// call it interrupts returns `EINTR`). The handler must be async-signal-safe.
pub fn set_signal_handler(sig: i32, handler: extern "C" fn(i32)) -> std::io::Result<()> {
    let mut sa = libc::sigaction::zeroed();
    sa.sa_sigaction = handler as usize;
    // SAFETY: a valid sigaction in our local (an all-zero one plus the handler) and an
    // empty mask; no old action is asked for.
    let r = unsafe {
        libc::sigemptyset(&mut sa.sa_mask);
        libc::sigaction(sig, &sa, std::ptr::null_mut())
    };
    if r != 0 { Err(std::io::Error::last_os_error()) } else { Ok(()) }
}

/// Restores the default action of host signal `sig`, unblocks it and raises it in this
/// thread (morph dies of it, unless it is ignored by default).
pub fn raise_default(sig: i32) {
    let mut set = libc::sigset_t::zeroed();
    // SAFETY: restoring the default action of a signal, a set in our local, and raising
    // the signal in this thread.
    unsafe {
        libc::signal(sig, libc::SIG_DFL);
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, sig);
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        libc::raise(sig);
    }
}

/// An extended-attribute call on the object `path` names (followed to the end, as
/// `/proc/self/fd/N` of an `O_PATH` descriptor is) or on descriptor `fd`.
pub enum XattrAt<'a> {
    Path(&'a CStr),
    Fd(RawFd),
}

/// `getxattr`/`fgetxattr`: the value's length (the size needed if `buf` is empty).
pub fn getxattr(at: XattrAt<'_>, name: &CStr, buf: &mut [u8]) -> Result<u32, Errno> {
    let (p, n) = (buf.as_mut_ptr().cast(), buf.len());
    // SAFETY: a valid C string for the name (and path), and `n` writable bytes at `p`.
    let r = unsafe {
        match at {
            XattrAt::Path(path) => libc::getxattr(path.as_ptr(), name.as_ptr(), p, n),
            XattrAt::Fd(fd) => libc::fgetxattr(fd, name.as_ptr(), p, n),
        }
    };
    check_size(r)
}

/// `listxattr`/`flistxattr`: the names, each NUL-terminated (the size needed if `buf`
/// is empty).
pub fn listxattr(at: XattrAt<'_>, buf: &mut [u8]) -> Result<u32, Errno> {
    let (p, n) = (buf.as_mut_ptr().cast(), buf.len());
    // SAFETY: a valid C string for the path, and `n` writable bytes at `p`.
    let r = unsafe {
        match at {
            XattrAt::Path(path) => libc::listxattr(path.as_ptr(), p, n),
            XattrAt::Fd(fd) => libc::flistxattr(fd, p, n),
        }
    };
    check_size(r)
}

/// `setxattr`/`fsetxattr` with `value` and `flags`, or, without a value,
/// `removexattr`/`fremovexattr`.
pub fn setxattr(at: XattrAt<'_>, name: &CStr, value: Option<(&[u8], i32)>) -> Result<u32, Errno> {
    // SAFETY: valid C strings, and `value`'s bytes readable.
    let r = unsafe {
        match (at, value) {
            (XattrAt::Path(path), Some((v, f))) => {
                libc::setxattr(path.as_ptr(), name.as_ptr(), v.as_ptr().cast(), v.len(), f)
            }
            (XattrAt::Fd(fd), Some((v, f))) => libc::fsetxattr(fd, name.as_ptr(), v.as_ptr().cast(), v.len(), f),
            (XattrAt::Path(path), None) => libc::removexattr(path.as_ptr(), name.as_ptr()),
            (XattrAt::Fd(fd), None) => libc::fremovexattr(fd, name.as_ptr()),
        }
    };
    check(r)
}

fn check_size(r: isize) -> Result<u32, Errno> {
    check(r as i64)
}
