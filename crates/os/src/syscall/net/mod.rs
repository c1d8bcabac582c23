//! Sockets: `socketcall` and the direct socket calls, mapped to host sockets, loopback
//! only.
//!
//! A guest socket is a host socket of the same family, type and protocol, made
//! non-blocking on the host; the guest's `O_NONBLOCK` is kept beside it, as for pipes,
//! so `read`, `write`, `poll` and `select` work on it unchanged. Every host call here
//! is non-blocking (`MSG_DONTWAIT`); when the host says `EAGAIN` a blocking guest waits
//! in the scheduler until the socket is readable (`accept`, `recv*`) or writable
//! (`send*`), and the call is re-run from the start (see [`super::io::block_on`]).
//! `connect` cannot simply be re-run: the host answers `EINPROGRESS` and goes on
//! connecting, so the socket remembers that a blocking connect is under way
//! ([`SocketState::connecting`](crate::process::SocketState)) and the re-run, once the
//! socket is writable, returns the connection's result (`SO_ERROR`).
//!
//! **Loopback only.** `bind` takes loopback and wildcard addresses; `connect`, `sendto`
//! and `sendmsg` take loopback addresses (127.0.0.0/8, `::1`, `::ffff:127.0.0.0/104`);
//! anything else fails as it would on a host without a route (`ENETUNREACH`;
//! `EADDRNOTAVAIL` for `bind`). So do families other than `AF_UNIX`, `AF_INET` and
//! `AF_INET6` (`EAFNOSUPPORT`), raw IP sockets (`EPERM`), protocols other than TCP, UDP
//! and ICMP echo (`EPROTONOSUPPORT`), and socket options and control messages outside
//! the allowlist of [`sockopt`] (source routes, device binding, marks: `EPERM`; unknown
//! options: `ENOPROTOOPT`; multicast membership: `ENODEV`). Each refusal is made before
//! any host call and counted in `OsStats::refused_net`.
//!
//! **`AF_UNIX` names** resolve inside the guest root like every other path. `connect`
//! and `sendto` open the socket file inside the root (`O_PATH`, following links inside
//! the root) and reach it as `/proc/self/fd/N`; `bind` opens the parent directory inside
//! the root and creates the name as `/proc/self/fd/D/name` (the last component is never
//! followed). The host records that name for the socket, so [`Net`] maps it back to the
//! guest's spelling in `getsockname`, `getpeername`, `accept` and `recvfrom`; a host
//! path inside the root loses the root. Abstract names live in the machine's own
//! namespace: a random prefix is added on the way to the host and stripped on the way
//! back, so guests meet each other at a name but never a host process (see
//! [`Net::abstract_host`]); morph autobinds unnamed sockets in that namespace itself.
//!
//! **ABI.** `sockaddr` layouts are the same on i386 and x86-64; `msghdr`, `iovec` and
//! `cmsghdr` are not and are translated, as are the 32-bit `timeval`s of
//! `SO_RCVTIMEO`/`SO_SNDTIMEO` and `SO_TIMESTAMP*` and the `sock_fprog` of
//! `SO_ATTACH_FILTER`. `SCM_RIGHTS` passes guest descriptors: the receiver gets the open
//! file description the sender had, guest flags included, as Linux passes the
//! `struct file` itself.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::rc::Rc;
use std::time::{Duration, Instant};

mod addr;
mod msg;
mod sockopt;

use self::{addr::*, msg::*};

use super::io::block_on;
use super::*;
use crate::host::poll_now;
use crate::process::{OpenFile, SigInfo};

table! {
    /// Sockets: socketcall and the direct socket calls, loopback only.
    pub(super) TABLE {
        102 socketcall "dp" sys_socketcall;
        337 recvmmsg "fpuxp" sys_recvmmsg;
        345 sendmmsg "fpux" sys_sendmmsg;
        359 socket "ddd" sys_socket;
        360 socketpair "dddp" sys_socketpair;
        361 bind "fpu" sys_bind;
        362 connect "fpu" sys_connect;
        363 listen "fd" sys_listen;
        364 accept4 "fppx" sys_accept4;
        365 getsockopt "fddpp" sys_getsockopt;
        366 setsockopt "fddpu" sys_setsockopt;
        367 getsockname "fpp" sys_getsockname;
        368 getpeername "fpp" sys_getpeername;
        369 sendto "fpuxpu" sys_sendto;
        370 sendmsg "fpx" sys_sendmsg;
        371 recvfrom "fpuxpp" sys_recvfrom;
        372 recvmsg "fpx" sys_recvmsg;
        373 shutdown "fd" sys_shutdown;
        417 recvmmsg_time64 "fpuxp" sys_recvmmsg;
    }
}

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

// ----- the socketcall multiplexer --------------------------------------------------

pub(super) fn sys_socketcall(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    use crate::linux::socketcall::*;
    let call = a[0];
    let n = match NARGS.get(call as usize) {
        Some(&n) if call != 0 => usize::from(n),
        _ => return Err(EINVAL),
    };
    let mut v = [0u32; 6];
    for (i, x) in v.iter_mut().take(n).enumerate() {
        *x = p.aspace.read_u32(a[1].wrapping_add(4 * i as u32)).map_err(efault)?;
    }
    match call {
        SOCKET => sys_socket(m, p, &v),
        BIND => sys_bind(m, p, &v),
        CONNECT => sys_connect(m, p, &v),
        LISTEN => sys_listen(m, p, &v),
        ACCEPT => accept(m, p, v[0], v[1], v[2], 0),
        GETSOCKNAME => sys_getsockname(m, p, &v),
        GETPEERNAME => sys_getpeername(m, p, &v),
        SOCKETPAIR => sys_socketpair(m, p, &v),
        SEND => sys_sendto(m, p, &[v[0], v[1], v[2], v[3], 0, 0]),
        RECV => sys_recvfrom(m, p, &[v[0], v[1], v[2], v[3], 0, 0]),
        SENDTO => sys_sendto(m, p, &v),
        RECVFROM => sys_recvfrom(m, p, &v),
        SHUTDOWN => sys_shutdown(m, p, &v),
        SETSOCKOPT => sys_setsockopt(m, p, &v),
        GETSOCKOPT => sys_getsockopt(m, p, &v),
        SENDMSG => sys_sendmsg(m, p, &v),
        RECVMSG => sys_recvmsg(m, p, &v),
        ACCEPT4 => sys_accept4(m, p, &v),
        RECVMMSG => sys_recvmmsg(m, p, &v),
        SENDMMSG => sys_sendmmsg(m, p, &v),
        _ => Err(EINVAL),
    }
}

// ----- helpers ---------------------------------------------------------------------

/// The open file behind guest descriptor `fd` (held for the call).
pub(super) fn file(p: &Process, fd: u32) -> Result<Rc<OpenFile>, Errno> {
    p.fds.get(fd).map(|e| e.host.clone()).ok_or(EBADF)
}

/// Counts a refusal of the loopback rule and returns its errno.
pub(super) fn refuse(m: &mut Machine, e: Errno) -> Errno {
    m.stats.refused_net += 1;
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

// ----- creating sockets ------------------------------------------------------------

/// Splits a `type` argument into the type and the `SOCK_NONBLOCK`/`SOCK_CLOEXEC` flags.
pub(super) fn socket_type(ty: u32) -> Result<(u32, bool, bool), Errno> {
    let flags = ty & !SOCK_TYPE_MASK;
    if flags & !(SOCK_NONBLOCK | SOCK_CLOEXEC) != 0 {
        return Err(EINVAL);
    }
    Ok((ty & SOCK_TYPE_MASK, flags & SOCK_NONBLOCK != 0, flags & SOCK_CLOEXEC != 0))
}

/// The sockets a guest may make: any `AF_UNIX` socket; TCP, UDP and ICMP echo
/// ("ping") sockets of `AF_INET` and `AF_INET6`.
pub(super) fn check_socket(m: &mut Machine, domain: u32, ty: u32, proto: u32) -> Result<(), Errno> {
    match u16::try_from(domain) {
        Ok(AF_UNIX) => Ok(()),
        Ok(AF_INET | AF_INET6) => {
            let ping = if domain == u32::from(AF_INET) { IPPROTO_ICMP } else { IPPROTO_ICMPV6 };
            match ty {
                SOCK_STREAM if proto == 0 || proto == IPPROTO_TCP => Ok(()),
                SOCK_DGRAM if proto == 0 || proto == IPPROTO_UDP || proto == ping => Ok(()),
                SOCK_STREAM | SOCK_DGRAM => Err(refuse(m, EPROTONOSUPPORT)),
                SOCK_RAW => Err(refuse(m, EPERM)),
                _ => Err(refuse(m, ESOCKTNOSUPPORT)),
            }
        }
        _ => Err(refuse(m, EAFNOSUPPORT)),
    }
}

pub(super) fn sys_socket(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let (ty, nonblock, cloexec) = socket_type(a[1])?;
    check_socket(m, a[0], ty, a[2])?;
    let fd = host::socket(a[0] as i32, ty as i32 | HOST_SOCK_FLAGS, a[2] as i32)?;
    install(p, fd, nonblock, cloexec)
}

pub(super) fn sys_socketpair(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let (ty, nonblock, cloexec) = socket_type(a[1])?;
    check_socket(m, a[0], ty, a[2])?;
    p.aspace.prepare_write(a[3], 8).map_err(efault)?;
    let (x, y) = host::socketpair(a[0] as i32, ty as i32 | HOST_SOCK_FLAGS, a[2] as i32)?;
    let gx = install(p, x, nonblock, cloexec)?;
    let Ok(gy) = install(p, y, nonblock, cloexec) else {
        p.fds.close(gx);
        return Err(EMFILE);
    };
    p.aspace.write_u32(a[3], gx).map_err(efault)?;
    p.aspace.write_u32(a[3] + 4, gy).map_err(efault)?;
    Ok(0)
}

// ----- naming and connecting -------------------------------------------------------

pub(super) fn sys_bind(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let f = file(p, a[0])?;
    let addr = read_sockaddr(p, a[1], a[2])?;
    if addr.len() == 2 && family_of(&addr) == Some(AF_UNIX) {
        return autobind(m, f.as_raw_fd());
    }
    let h = host_addr(m, p, addr, Use::Bind)?;
    host::bind(f.as_raw_fd(), &h.bytes)?;
    if let Some((dir, guest)) = h.unix {
        // The host name holds the directory's descriptor number: keeping the directory
        // open with the socket keeps the name unique.
        let name = h.bytes[2..h.bytes.len() - 1].to_vec();
        m.net.unix_names.insert(name, guest);
        let _ = f.socket.bound_dir.set(dir);
    }
    Ok(0)
}

pub(super) fn sys_listen(_: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let raw = host_fd(p, a[0])?;
    host::listen(raw, a[1] as i32)
}

pub(super) fn sys_connect(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let f = file(p, a[0])?;
    if f.socket.connecting.get() {
        return connect_result(p, &f);
    }
    let addr = read_sockaddr(p, a[1], a[2])?;
    let unix = family_of(&addr) == Some(AF_UNIX);
    let h = host_addr(m, p, addr, Use::Connect)?;
    if unix {
        autobind_if_passcred(m, f.as_raw_fd())?;
    }
    let blocking = f.host_nonblock && !f.guest_nonblock();
    match host::connect(f.as_raw_fd(), &h.bytes) {
        Err(EINPROGRESS) if blocking => {
            f.socket.connecting.set(true);
            connect_result(p, &f)
        }
        // The listener's backlog is full: a blocking guest waits for room, which no
        // event announces.
        Err(EAGAIN) if unix && blocking => retry_soon(p),
        r => r,
    }
}

/// The end of a blocking connect the host is still making: once the socket is writable,
/// the connection's result.
pub(super) fn connect_result(p: &mut Process, f: &OpenFile) -> SysResult {
    let raw = f.as_raw_fd();
    let pfd = libc::pollfd { fd: raw, events: libc::POLLOUT, revents: 0 };
    if !poll_now(&[pfd]) {
        if f.guest_nonblock() {
            return Err(EALREADY);
        }
        let timeout = sock_timeout(raw, libc::SO_SNDTIMEO);
        if timeout.is_some() && p.resumed == Some(true) {
            return Err(EINPROGRESS); // still connecting, as Linux leaves it
        }
        return block_on(p, vec![pfd], timeout.map(|t| Instant::now() + t), timeout.is_none());
    }
    f.socket.connecting.set(false);
    match so_error(raw) {
        0 => Ok(0),
        e => Err(e),
    }
}

pub(super) fn accept(m: &mut Machine, p: &mut Process, fd: u32, addr: u32, len_ptr: u32, flags: u32) -> SysResult {
    if flags & !(SOCK_NONBLOCK | SOCK_CLOEXEC) != 0 {
        return Err(EINVAL);
    }
    let f = file(p, fd)?;
    let raw = f.as_raw_fd();
    let pfd = libc::pollfd { fd: raw, events: libc::POLLIN, revents: 0 };
    if !f.host_nonblock && !poll_now(&[pfd]) {
        // A socket morph did not make (inherited) may block on the host: ask first.
        return wait_for(p, raw, libc::POLLIN, f.guest_nonblock(), libc::SO_RCVTIMEO);
    }
    let (conn, peer) = match host::accept4(raw, HOST_SOCK_FLAGS) {
        Ok(c) => c,
        Err(EAGAIN) => return wait_for(p, raw, libc::POLLIN, f.guest_nonblock(), libc::SO_RCVTIMEO),
        Err(e) => return Err(e),
    };
    let gfd = install(p, conn, flags & SOCK_NONBLOCK != 0, flags & SOCK_CLOEXEC != 0)?;
    if addr != 0
        && let Err(e) = put_sockaddr(m, p, addr, len_ptr, &peer)
    {
        p.fds.close(gfd);
        return Err(e);
    }
    Ok(gfd)
}

pub(super) fn sys_accept4(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    accept(m, p, a[0], a[1], a[2], a[3])
}

pub(super) fn sockname(m: &mut Machine, p: &mut Process, a: &[u32; 6], peer: bool) -> SysResult {
    let raw = host_fd(p, a[0])?;
    let b = host::sockname(raw, peer)?;
    put_sockaddr(m, p, a[1], a[2], &b)?;
    Ok(0)
}

pub(super) fn sys_getsockname(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    sockname(m, p, a, false)
}

pub(super) fn sys_getpeername(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    sockname(m, p, a, true)
}

pub(super) fn sys_shutdown(_: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let raw = host_fd(p, a[0])?;
    host::shutdown(raw, a[1] as i32)
}

// ----- options ---------------------------------------------------------------------

/// Reads a guest 32-bit `timeval` as the host's.
pub(super) fn timeval_in(b: &[u8]) -> Result<libc::timeval, Errno> {
    let w = |i: usize| b.get(i..i + 4).map(|s| i32::from_le_bytes(s.try_into().expect("4 bytes")));
    match (w(0), w(4)) {
        (Some(s), Some(us)) => Ok(libc::timeval { tv_sec: s.into(), tv_usec: us.into() }),
        _ => Err(EINVAL),
    }
}

/// Is the host descriptor a socket? (Options on anything else are the host's
/// `ENOTSOCK`, whatever the option.)
pub(super) fn is_socket(raw: i32) -> bool {
    super::host_stat_fd(raw).is_ok_and(|st| st.st_mode & libc::S_IFMT == libc::S_IFSOCK)
}

/// Checks a socket option against the allowlist ([`sockopt`]); a refusal is counted.
pub(super) fn option_allowed(m: &mut Machine, raw: i32, level: u32, name: u32, set: bool) -> Result<(), Errno> {
    if !is_socket(raw) {
        return Ok(());
    }
    sockopt::check(level, name, set).map_err(|e| refuse(m, e))
}

pub(super) fn sys_setsockopt(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let (raw, level, name) = (host_fd(p, a[0])?, a[1], a[2]);
    option_allowed(m, raw, level, name, true)?;
    if (a[4] as i32) < 0 {
        return Err(EINVAL);
    }
    let mut b = vec![0u8; a[4].min(1 << 16) as usize];
    p.aspace.read_bytes(a[3], &mut b).map_err(efault)?;
    let set = |v: &[u8]| host::setsockopt(raw, level as i32, name as i32, v);
    match (level, name) {
        (SOL_SOCKET, SO_RCVTIMEO_OLD | SO_SNDTIMEO_OLD) => {
            // The host's struct timeval: two 64-bit fields.
            let tv = timeval_in(&b)?;
            let mut v = tv.tv_sec.to_ne_bytes().to_vec();
            v.extend_from_slice(&tv.tv_usec.to_ne_bytes());
            set(&v)
        }
        (SOL_SOCKET, SO_ATTACH_FILTER | SO_ATTACH_REUSEPORT_CBPF) => {
            // i386 struct sock_fprog: { u16 len; u32 filter; }; the instructions have
            // the same layout on both sides.
            if b.len() != 8 {
                return Err(EINVAL);
            }
            let n = u16::from_le_bytes([b[0], b[1]]);
            let ptr = u32::from_le_bytes([b[4], b[5], b[6], b[7]]);
            p.aspace.check_read(ptr, u32::from(n) * 8).map_err(efault)?;
            // The host's struct sock_fprog: u16 len, padding, the 64-bit filter pointer.
            let mut v = n.to_ne_bytes().to_vec();
            v.resize(8, 0);
            v.extend_from_slice(&(p.aspace.host_ptr(ptr) as usize as u64).to_ne_bytes());
            set(&v)
        }
        _ => set(&b),
    }
}

pub(super) fn sys_getsockopt(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let f = file(p, a[0])?;
    let (raw, level, name, val, len_ptr) = (f.as_raw_fd(), a[1], a[2], a[3], a[4]);
    option_allowed(m, raw, level, name, false)?;
    let room = p.aspace.read_u32(len_ptr).map_err(efault)?;
    if (room as i32) < 0 {
        return Err(EINVAL);
    }
    let out = if level == SOL_SOCKET && matches!(name, SO_RCVTIMEO_OLD | SO_SNDTIMEO_OLD) {
        let tv = host_timeval(raw, level as i32, name as i32)?;
        let mut b = (tv.tv_sec as i32).to_le_bytes().to_vec();
        b.extend_from_slice(&(tv.tv_usec as i32).to_le_bytes());
        b.truncate(room as usize);
        b
    } else {
        let mut b = vec![0u8; room.min(1 << 16) as usize];
        let l = host::getsockopt(raw, level as i32, name as i32, &mut b)?;
        b.truncate(l);
        if level == SOL_SOCKET && name == SO_ERROR {
            // The guest collects the result of a connect itself.
            let pfd = libc::pollfd { fd: raw, events: libc::POLLOUT, revents: 0 };
            if poll_now(&[pfd]) {
                f.socket.connecting.set(false);
            }
        }
        b
    };
    p.aspace.write_bytes(val, &out).map_err(efault)?;
    p.aspace.write_u32(len_ptr, out.len() as u32).map_err(efault)?;
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_rule() {
        assert!(ipv4_allowed(&[127, 0, 0, 1], Use::Connect));
        assert!(ipv4_allowed(&[127, 9, 8, 7], Use::Send));
        assert!(!ipv4_allowed(&[10, 1, 2, 3], Use::Connect));
        assert!(!ipv4_allowed(&[0, 0, 0, 0], Use::Connect));
        assert!(ipv4_allowed(&[0, 0, 0, 0], Use::Bind));
        assert!(!ipv4_allowed(&[192, 168, 0, 1], Use::Bind));
        let mut v6 = [0u8; 16];
        assert!(ipv6_allowed(&v6, Use::Bind));
        assert!(!ipv6_allowed(&v6, Use::Connect));
        v6[15] = 1;
        assert!(ipv6_allowed(&v6, Use::Connect));
        let mapped = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1];
        assert!(ipv6_allowed(&mapped, Use::Connect));
        let mapped_out = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 1, 2, 3];
        assert!(!ipv6_allowed(&mapped_out, Use::Connect));
        let doc = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
        assert!(!ipv6_allowed(&doc, Use::Bind));
    }

    #[test]
    fn socket_types() {
        assert_eq!(socket_type(SOCK_STREAM | SOCK_NONBLOCK), Ok((SOCK_STREAM, true, false)));
        assert_eq!(socket_type(SOCK_DGRAM | SOCK_CLOEXEC), Ok((SOCK_DGRAM, false, true)));
        assert_eq!(socket_type(SOCK_STREAM | 0x100), Err(EINVAL));
    }
}
