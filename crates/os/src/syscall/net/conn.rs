//! Making, naming and connecting sockets, and their options.

use std::time::Instant;

use super::addr::*;
use super::netlink::{self, AF_NETLINK};
use super::sock::*;
use super::sockopt;
use crate::host::poll_now;
use crate::process::OpenFile;
use crate::syscall::common::*;
use crate::syscall::wait::block_on;

// ----- creating sockets ------------------------------------------------------------

/// Splits a `type` argument into the type and the `SOCK_NONBLOCK`/`SOCK_CLOEXEC` flags.
pub(super) fn socket_type(ty: u32) -> Result<(u32, bool, bool), Errno> {
    let flags = ty & !SOCK_TYPE_MASK;
    if flags & !(SOCK_NONBLOCK | SOCK_CLOEXEC) != 0 {
        return Err(EINVAL);
    }
    Ok((ty & SOCK_TYPE_MASK, flags & SOCK_NONBLOCK != 0, flags & SOCK_CLOEXEC != 0))
}

/// The sockets a guest may make: any `AF_UNIX` socket; TCP, UDP, UDP-Lite and ICMP
/// echo ("ping") sockets of `AF_INET` and `AF_INET6` (UDP-Lite where the host has it).
pub(super) fn check_socket(stats: &mut OsStats, domain: u32, ty: u32, proto: u32) -> Result<(), Errno> {
    match u16::try_from(domain) {
        Ok(AF_UNIX) => Ok(()),
        Ok(AF_INET | AF_INET6) => {
            let ping = if domain == u32::from(AF_INET) { IPPROTO_ICMP } else { IPPROTO_ICMPV6 };
            match ty {
                SOCK_STREAM if proto == 0 || proto == IPPROTO_TCP => Ok(()),
                SOCK_DGRAM if proto == 0 || proto == IPPROTO_UDP || proto == IPPROTO_UDPLITE || proto == ping => Ok(()),
                SOCK_STREAM | SOCK_DGRAM => Err(refuse(stats, EPROTONOSUPPORT)),
                SOCK_RAW => Err(refuse(stats, EPERM)),
                _ => Err(refuse(stats, ESOCKTNOSUPPORT)),
            }
        }
        _ => Err(refuse(stats, EAFNOSUPPORT)),
    }
}

pub(super) fn sys_socket(m: &mut NetCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let (ty, nonblock, cloexec) = socket_type(a[1])?;
    if a[0] == u32::from(AF_NETLINK) {
        return netlink::socket(m, p, ty, nonblock, cloexec, a[2]);
    }
    check_socket(m.stats, a[0], ty, a[2])?;
    let fd = host::socket(a[0] as i32, ty as i32 | HOST_SOCK_FLAGS, a[2] as i32)?;
    install(p, fd, nonblock, cloexec)
}

pub(super) fn sys_socketpair(m: &mut NetCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let (ty, nonblock, cloexec) = socket_type(a[1])?;
    if a[0] == u32::from(AF_NETLINK) {
        // Netlink sockets come one at a time.
        netlink::check_socket(m.stats, ty, a[2])?;
        return Err(EOPNOTSUPP);
    }
    check_socket(m.stats, a[0], ty, a[2])?;
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

pub(super) fn sys_bind(m: &mut NetCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let f = file(p, a[0])?;
    let addr = read_sockaddr(p, a[1], a[2])?;
    if let Some(nl) = &f.socket.netlink {
        return netlink::bind(p, nl, &addr);
    }
    if addr.len() == 2 && family_of(&addr) == Some(AF_UNIX) {
        return autobind(m.net, f.as_raw_fd());
    }
    let name = abstract_name(&addr);
    let h = host_addr(m, p, addr, Use::Bind)?;
    // A socket's name in the file system gets `0777 & !umask`, the guest's.
    host::with_umask(p.umask, || host::bind(f.as_raw_fd(), &h.bytes))?;
    hold_name(m.net, &f, name);
    if let Some((dir, guest)) = h.unix {
        // The host name holds the directory's descriptor number: keeping the directory
        // open with the socket keeps the name unique.
        let name = h.bytes[2..h.bytes.len() - 1].to_vec();
        m.net.unix_names.insert(name, guest);
        let _ = f.socket.bound_dir.set(dir);
    }
    Ok(0)
}

pub(super) fn sys_listen(_: &mut NetCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let raw = host_fd(p, a[0])?;
    host::listen(raw, a[1] as i32)
}

pub(super) fn sys_connect(m: &mut NetCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let f = file(p, a[0])?;
    if f.socket.connecting.get() {
        return connect_result(p, &f);
    }
    let addr = read_sockaddr(p, a[1], a[2])?;
    if let Some(nl) = &f.socket.netlink {
        return netlink::connect(m.stats, p, nl, &addr);
    }
    let unix = family_of(&addr) == Some(AF_UNIX);
    let name = abstract_name(&addr);
    let h = host_addr(m, p, addr, Use::Connect)?;
    if unix {
        autobind_if_passcred(m.net, f.as_raw_fd())?;
    }
    let blocking = f.host_nonblock && !f.guest_nonblock();
    let r = host::connect(f.as_raw_fd(), &h.bytes);
    if matches!(r, Ok(_) | Err(EINPROGRESS)) {
        // Its peer's name (`getpeername`) keeps its number while the socket lives.
        hold_name(m.net, &f, name);
    }
    match r {
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

pub(super) fn accept(m: &mut NetCtx<'_>, p: &mut Process, fd: u32, addr: u32, len_ptr: u32, flags: u32) -> SysResult {
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
    if let Some(e) = p.fds.get(gfd) {
        // The accepted socket has the listener's name.
        e.host.socket.names.borrow_mut().extend(f.socket.names.borrow().iter().cloned());
    }
    if addr != 0
        && let Err(e) = put_sockaddr(m.net, m.vfs, p, addr, len_ptr, &peer)
    {
        p.fds.close(gfd);
        return Err(e);
    }
    Ok(gfd)
}

pub(super) fn sys_accept4(m: &mut NetCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    accept(m, p, a[0], a[1], a[2], a[3])
}

pub(super) fn sockname(m: &mut NetCtx<'_>, p: &mut Process, a: &[u32; 6], peer: bool) -> SysResult {
    if let Some(nl) = netlink::of(p, a[0]) {
        return netlink::sockname(m, p, &nl, a, peer);
    }
    let raw = host_fd(p, a[0])?;
    let b = host::sockname(raw, peer)?;
    put_sockaddr(m.net, m.vfs, p, a[1], a[2], &b)?;
    Ok(0)
}

pub(super) fn sys_getsockname(m: &mut NetCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    sockname(m, p, a, false)
}

pub(super) fn sys_getpeername(m: &mut NetCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    sockname(m, p, a, true)
}

pub(super) fn sys_shutdown(_: &mut NetCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let raw = host_fd(p, a[0])?;
    if netlink::of(p, a[0]).is_some() {
        return Err(EOPNOTSUPP); // netlink has no shutdown
    }
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
    host_stat_fd(raw).is_ok_and(|st| st.st_mode & libc::S_IFMT == libc::S_IFSOCK)
}

/// Checks a socket option against the allowlist ([`sockopt`]); a refusal is counted.
pub(super) fn option_allowed(stats: &mut OsStats, raw: i32, level: u32, name: u32, set: bool) -> Result<(), Errno> {
    if !is_socket(raw) {
        return Ok(());
    }
    sockopt::check(level, name, set).map_err(|e| refuse(stats, e))
}

pub(super) fn sys_setsockopt(m: &mut NetCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let (raw, level, name) = (host_fd(p, a[0])?, a[1], a[2]);
    let nl = netlink::of(p, a[0]);
    if nl.is_none() {
        option_allowed(m.stats, raw, level, name, true)?;
    }
    if (a[4] as i32) < 0 {
        return Err(EINVAL);
    }
    let mut b = vec![0u8; a[4].min(1 << 16) as usize];
    p.aspace.read_bytes(a[3], &mut b).map_err(efault)?;
    if let Some(r) = nl.and_then(|nl| netlink::setsockopt(m.stats, &nl, level, name, &b)) {
        return r;
    }
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

pub(super) fn sys_getsockopt(m: &mut NetCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let f = file(p, a[0])?;
    let (raw, level, name, val, len_ptr) = (f.as_raw_fd(), a[1], a[2], a[3], a[4]);
    if f.socket.netlink.is_none() {
        option_allowed(m.stats, raw, level, name, false)?;
    }
    let room = p.aspace.read_u32(len_ptr).map_err(efault)?;
    if let Some(r) = f.socket.netlink.as_ref().and_then(|nl| netlink::getsockopt(nl, level, name, room)) {
        let (out, len) = r?;
        p.aspace.write_bytes(val, &out).map_err(efault)?;
        p.aspace.write_u32(len_ptr, len).map_err(efault)?;
        return Ok(0);
    }
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
