//! Waiting inside a system call: a call that would block on a host descriptor first
//! asks the host (`poll` with a zero timeout); if the descriptor is not ready the
//! process blocks (see [`crate::process::Blocked`]) and the scheduler runs someone else,
//! re-running the call when the descriptor is ready or the deadline passes.

use std::time::{Duration, Instant};

use super::common::*;
use crate::host::{InPlace, poll_now};
use crate::process::{Blocked, Wait};

/// Blocks `p` until one of `fds` is ready or `deadline` passes; the call is re-run then.
pub(crate) fn block_on(
    p: &mut Process,
    fds: Vec<libc::pollfd>,
    deadline: Option<Instant>,
    restartable: bool,
) -> SysResult {
    p.blocked = Some(Blocked { wait: Wait::Fds(fds), deadline, restartable, partial: None });
    Err(ERESTARTSYS)
}

/// Before a call that may block on guest `fd` waiting for `events`: returns if the call
/// can go ahead without blocking the host thread; else fails with `EAGAIN` (guest
/// `O_NONBLOCK`) or blocks the process until the descriptor is ready.
pub(crate) fn ready_or_block(p: &mut Process, fd: u32, events: i16) -> Result<(), Errno> {
    let e = p.fds.get(fd).ok_or(EBADF)?;
    if !e.host.pollable {
        return Ok(());
    }
    let pfd = libc::pollfd { fd: e.host.as_raw_fd(), events, revents: 0 };
    if poll_now(&[pfd]) {
        return Ok(());
    }
    // Never ready for what it is not open for (a pipe's read end for writing): Linux
    // refuses such a call with `EBADF` before it could wait.
    let wrong = match crate::host::getfl(e.host.as_raw_fd()).map(|f| f & libc::O_ACCMODE) {
        Ok(libc::O_RDONLY) => events & libc::POLLOUT != 0,
        Ok(libc::O_WRONLY) => events & libc::POLLIN != 0,
        _ => false,
    };
    if wrong {
        return Err(EBADF);
    }
    if e.host.guest_nonblock() {
        // A non-blocking write is tried on the host all the same, which refuses it
        // with `EAGAIN` as Linux does, and as Linux signals the reader's owner even
        // then (`pipe_write`'s `kill_fasync`, see `crate::sigio`).
        return if events & libc::POLLOUT != 0 { Ok(()) } else { Err(EAGAIN) };
    }
    block_on(p, vec![pfd], None, true).map(|_| ())
}

/// After a write through guest `fd`: a host `EAGAIN` (a full morph pipe or socket)
/// blocks a blocking guest until there is room; `EPIPE` raises `SIGPIPE`.
pub(crate) fn wrote_or_block(p: &mut Process, fd: u32, r: SysResult) -> SysResult {
    match r {
        Err(EAGAIN) => {
            let e = p.fds.get(fd).ok_or(EBADF)?;
            if e.host.guest_nonblock() {
                return Err(EAGAIN);
            }
            let pfd = libc::pollfd { fd: e.host.as_raw_fd(), events: libc::POLLOUT, revents: 0 };
            // The host said writable but took nothing: retry after a short wait.
            block_on(p, vec![pfd], Some(Instant::now() + Duration::from_millis(1)), true)
        }
        Err(EPIPE) => {
            p.raise(SIGPIPE, crate::process::SigInfo { code: SI_USER, pid_or_addr: p.pid, ..Default::default() });
            Err(EPIPE)
        }
        r => r,
    }
}

/// The bytes a blocking write of `len` bytes at `ptr` to `fd` wrote before it waited,
/// if this call is that write re-run (then it goes on from there); 0 for a new write.
pub(crate) fn write_progress(p: &mut Process, fd: u32, ptr: u32, len: u32) -> u32 {
    match p.partial_write.take() {
        Some(w) if w.fd == fd && w.ptr == ptr && w.len == len => w.done,
        _ => 0,
    }
}

/// Whether a blocking write to host descriptor `raw` writes all its bytes, waiting for
/// room as long as it takes (Linux's pipes, FIFOs and stream sockets), rather than
/// what fits (a datagram is all or nothing; a regular file never waits).
fn writes_whole(raw: i32) -> bool {
    let Ok(st) = host_stat_fd(raw) else { return false };
    match st.st_mode & libc::S_IFMT {
        libc::S_IFIFO => true,
        libc::S_IFSOCK => crate::host::getsockopt_int(raw, libc::SOL_SOCKET, libc::SO_TYPE) == Some(libc::SOCK_STREAM),
        _ => false,
    }
}

/// After a write of `len` bytes at `ptr` through guest `fd` that had written `done`
/// before this attempt, whose attempt gave `r`: Linux's blocking write to a pipe or a
/// stream socket returns only when every byte is written, so a blocking guest whose
/// bytes did not all fit waits for room (the call re-runs and goes on, see
/// [`write_progress`]); a handled signal ends the wait with the count written so far
/// (`Blocked::partial`), as does an error once some bytes went (`EPIPE` still raises
/// `SIGPIPE`). Otherwise as [`wrote_or_block`]. Returns the total written.
pub(crate) fn wrote_all_or_block(
    p: &mut Process,
    fd: u32,
    (ptr, len): (u32, u32),
    done: u32,
    r: SysResult,
) -> SysResult {
    let e = p.fds.get(fd).ok_or(EBADF)?;
    let (raw, nonblock) = (e.host.as_raw_fd(), e.host.guest_nonblock());
    let total = match r {
        Ok(n) => done + n,
        Err(EAGAIN) if done > 0 => done,
        Err(e) if done > 0 => {
            if e == EPIPE {
                let _ = wrote_or_block(p, fd, Err(EPIPE));
            }
            return Ok(done);
        }
        r => return wrote_or_block(p, fd, r),
    };
    if total >= len || nonblock || !writes_whole(raw) {
        return Ok(total);
    }
    p.partial_write = Some(crate::process::PartialWrite { fd, ptr, len, done: total });
    let pfd = libc::pollfd { fd: raw, events: libc::POLLOUT, revents: 0 };
    p.blocked = Some(Blocked { wait: Wait::Fds(vec![pfd]), deadline: None, restartable: true, partial: Some(total) });
    Err(ERESTARTSYS)
}

/// Reads from guest `fd`'s host descriptor into `v` (buffers of our window slot,
/// prepared by the caller) without blocking the host: `readv`, or for a socket morph did
/// not make (`OpenFile::dontwait`) `recvmsg` with `MSG_DONTWAIT`. A host `EAGAIN` (ready
/// but taken meanwhile by another holder of a shared description) waits for a blocking
/// guest.
pub(crate) fn host_readv(p: &mut Process, fd: u32, v: &[InPlace]) -> SysResult {
    let e = p.fds.get(fd).ok_or(EBADF)?;
    let raw = e.host.as_raw_fd();
    let r = match e.host.dontwait {
        true => crate::host::recv_in_place(raw, v, libc::MSG_DONTWAIT),
        false => crate::host::readv_in_place(raw, v),
    };
    match r {
        Err(EAGAIN) if !e.host.guest_nonblock() => {
            let pfd = libc::pollfd { fd: raw, events: libc::POLLIN, revents: 0 };
            block_on(p, vec![pfd], Some(Instant::now() + Duration::from_millis(1)), true)
        }
        r => r,
    }
}

/// Writes `v` (buffers of our window slot, checked by the caller) to guest `fd`'s host
/// descriptor without blocking the host: `writev`, or for a socket morph did not make
/// `sendmsg` with `MSG_DONTWAIT` (and `MSG_NOSIGNAL`: `EPIPE` raises the guest's
/// `SIGPIPE` in [`wrote_or_block`], which the caller applies).
pub(crate) fn host_writev(p: &Process, fd: u32, v: &[InPlace]) -> SysResult {
    let e = p.fds.get(fd).ok_or(EBADF)?;
    let raw = e.host.as_raw_fd();
    match e.host.dontwait {
        true => crate::host::send_in_place(raw, v, libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL),
        false => crate::host::writev_in_place(raw, v),
    }
}

/// Reads a `timespec` (32-bit or 64-bit fields). Of a 64-bit `tv_nsec` Linux takes the
/// low 32 bits for an i386 program (`get_timespec64`: padding in compat mode, dropped by
/// a 32-bit kernel's `long`).
pub(super) fn read_timespec(p: &Process, ptr: u32, wide: bool) -> Result<Duration, Errno> {
    let (s, ns) = if wide {
        (p.aspace.read_u64(ptr).map_err(efault)? as i64, i64::from(p.aspace.read_u64(ptr + 8).map_err(efault)? as u32))
    } else {
        (
            i64::from(p.aspace.read_u32(ptr).map_err(efault)? as i32),
            i64::from(p.aspace.read_u32(ptr + 4).map_err(efault)? as i32),
        )
    };
    if s < 0 || !(0..1_000_000_000).contains(&ns) {
        return Err(EINVAL);
    }
    Ok(Duration::new(s as u64, ns as u32))
}
