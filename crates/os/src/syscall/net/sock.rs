//! What the socket calls share: limits, the host socket flags, looking up and
//! installing sockets, options read from the host, and waiting for a socket.

use std::os::fd::OwnedFd;
use std::rc::Rc;
use std::time::{Duration, Instant};

use crate::host::poll_now;
use crate::process::{OpenFile, SigInfo};
use crate::syscall::common::*;
use crate::syscall::wait::block_on;

/// Flags of every host socket morph makes.
pub(super) const HOST_SOCK_FLAGS: i32 = libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC;

/// The most bytes one call moves (as `read`/`write`).
pub(super) const MAX_IO: u32 = 0x7fff_f000;

/// `UIO_MAXIOV`: the most iovecs (and `mmsghdr`s) in one call.
pub(super) const MAX_IOV: u32 = 1024;

/// How long a blocking guest waits before trying again when there is no event that
/// says when to (see [`retry_soon`]).
pub(super) const RETRY: Duration = Duration::from_millis(1);

/// A `MSG_WAITALL` receive is let through once this much is queued (a request larger
/// than the receive buffer could never be queued whole).
pub(super) const WAITALL_MAX: usize = 64 << 10;

/// `sizeof(struct mmsghdr)` on i386: a `msghdr` and the `msg_len` the kernel fills in.
pub(super) const MMSGHDR32: u32 = MsgHdr32::SIZE + 4;

/// The open file behind guest descriptor `fd` (held for the call).
pub(super) fn file(p: &Process, fd: u32) -> Result<Rc<OpenFile>, Errno> {
    p.fds.get(fd).map(|e| e.host.clone()).ok_or(EBADF)
}

/// Counts a refusal of the loopback rule and returns its errno.
pub(super) fn refuse(stats: &mut OsStats, e: Errno) -> Errno {
    stats.refused_net += 1;
    e
}

/// Installs a new host socket as a guest descriptor.
pub(super) fn install(p: &mut Process, fd: OwnedFd, nonblock: bool, cloexec: bool) -> SysResult {
    p.fds.install(FdEntry::of(OpenFile::nonblocking(fd, nonblock), cloexec), 0).ok_or(EMFILE)
}

/// Reads an `int`-sized host socket option.
pub(super) fn int_opt(raw: i32, level: i32, name: i32) -> Option<i32> {
    host::getsockopt_int(raw, level, name)
}

/// The pending error of a host socket (reading it clears it).
pub(super) fn so_error(raw: i32) -> Errno {
    int_opt(raw, libc::SOL_SOCKET, libc::SO_ERROR).unwrap_or(EIO)
}

/// The guest's receive or send timeout (`SO_RCVTIMEO`/`SO_SNDTIMEO`, kept on the host
/// socket, which never waits itself), if it set one.
pub(super) fn sock_timeout(raw: i32, name: i32) -> Option<Duration> {
    let tv = host_timeval(raw, libc::SOL_SOCKET, name).ok()?;
    let d = Duration::from_secs(tv.tv_sec.max(0) as u64) + Duration::from_micros(tv.tv_usec.max(0) as u64);
    (!d.is_zero()).then_some(d)
}

/// A host socket option that is a `struct timeval` (64-bit fields on the host).
pub(super) fn host_timeval(raw: i32, level: i32, name: i32) -> Result<libc::timeval, Errno> {
    let mut b = [0u8; 16];
    host::getsockopt(raw, level, name, &mut b)?;
    let word = |i: usize| i64::from_ne_bytes(b[i..i + 8].try_into().unwrap_or_default());
    Ok(libc::timeval { tv_sec: word(0), tv_usec: word(8) })
}

/// Blocks a guest that must wait for something no descriptor announces; the call is
/// re-run shortly.
pub(super) fn retry_soon(p: &mut Process) -> SysResult {
    block_on(p, Vec::new(), Some(Instant::now() + RETRY), true)
}

/// A host socket call said `EAGAIN`. The guest gets `EAGAIN` too if it does not wait
/// (`O_NONBLOCK`, `MSG_DONTWAIT`) or if this is the re-run after its timeout
/// (`SO_RCVTIMEO`/`SO_SNDTIMEO`, the host option `timeo`) ran out; else the process
/// blocks until the socket is ready for `events` and the call is re-run.
pub(super) fn wait_for(p: &mut Process, raw: i32, events: i16, dontwait: bool, timeo: i32) -> SysResult {
    if dontwait {
        return Err(EAGAIN);
    }
    let timeout = sock_timeout(raw, timeo);
    if timeout.is_some() && p.resumed == Some(true) {
        return Err(EAGAIN);
    }
    let pfd = libc::pollfd { fd: raw, events, revents: 0 };
    if poll_now(&[pfd]) {
        // Ready, and yet the host would block (a datagram larger than the room there
        // is, a connection another process took first): try again shortly.
        return retry_soon(p);
    }
    // With a timeout, Linux ends the call with EINTR on a signal even under SA_RESTART.
    block_on(p, vec![pfd], timeout.map(|t| Instant::now() + t), timeout.is_none())
}

/// After a host send: `EAGAIN` waits (see [`wait_for`]); `EPIPE` raises `SIGPIPE`
/// unless the guest said `MSG_NOSIGNAL` (the host call never raises it).
pub(super) fn sent(p: &mut Process, raw: i32, flags: u32, nonblock: bool, r: SysResult) -> SysResult {
    match r {
        Err(EAGAIN) => wait_for(p, raw, libc::POLLOUT, nonblock || flags & MSG_DONTWAIT != 0, libc::SO_SNDTIMEO),
        Err(EPIPE) => {
            if flags & MSG_NOSIGNAL == 0 {
                p.raise(SIGPIPE, SigInfo { code: SI_USER, pid_or_addr: p.pid, ..Default::default() });
            }
            Err(EPIPE)
        }
        r => r,
    }
}

/// The flags of a host send: the guest's, never waiting, never raising `SIGPIPE` in
/// morph.
pub(super) fn send_flags(flags: u32) -> i32 {
    (flags | MSG_DONTWAIT | MSG_NOSIGNAL) as i32
}

/// `MSG_WAITALL` on a stream: the host call returns what is queued, so a blocking guest
/// waits until the whole request is (or [`WAITALL_MAX`] of it, or the peer has finished
/// or failed). `Some` is the call's result when the guest must wait; with nothing
/// queued the ordinary receive path waits.
pub(super) fn wait_all(p: &mut Process, raw: i32, flags: u32, want: usize, dontwait: bool) -> Option<SysResult> {
    if flags & MSG_WAITALL == 0 || dontwait || want == 0 {
        return None;
    }
    if int_opt(raw, libc::SOL_SOCKET, libc::SO_TYPE) != Some(SOCK_STREAM as i32) {
        return None;
    }
    let queued = host::queued(raw).ok()?.max(0) as usize;
    if queued == 0 || queued >= want.min(WAITALL_MAX) {
        return None;
    }
    let mut pfd = [libc::pollfd { fd: raw, events: libc::POLLRDHUP, revents: 0 }];
    let _ = host::poll(&mut pfd, 0);
    if pfd[0].revents & (libc::POLLRDHUP | libc::POLLHUP | libc::POLLERR) != 0 {
        return None;
    }
    Some(retry_soon(p))
}
