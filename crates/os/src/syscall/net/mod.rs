//! Sockets: `socketcall` and the direct socket calls, mapped to host sockets, loopback
//! only.
//!
//! A guest socket is a host socket of the same family, type and protocol, made
//! non-blocking on the host; the guest's `O_NONBLOCK` is kept beside it, as for pipes,
//! so `read`, `write`, `poll` and `select` work on it unchanged. Every host call here
//! is non-blocking (`MSG_DONTWAIT`); when the host says `EAGAIN` a blocking guest waits
//! in the scheduler until the socket is readable (`accept`, `recv*`) or writable
//! (`send*`), and the call is re-run from the start (see [`super::wait::block_on`]).
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
//! followed). The host records that name for the socket, so [`Net`](crate::kernel::sockets::Net) maps it back to the
//! guest's spelling in `getsockname`, `getpeername`, `accept` and `recvfrom`; a host
//! path inside the root loses the root. Abstract names live in the machine's own
//! namespace: a random prefix is added on the way to the host and stripped on the way
//! back, so guests meet each other at a name but never a host process (see
//! [`Net::abstract_host`](crate::kernel::sockets::Net::abstract_host); a name too long
//! to follow the prefix is numbered in a machine-wide table); morph autobinds unnamed
//! sockets in that namespace itself.
//!
//! **Interfaces.** The machine has one, `lo`: the interface `ioctl`s on a socket
//! (`SIOCGIFINDEX`, `SIOCGIFCONF`, ...) answer for it alone, and setting one is `EPERM`
//! ([`iface`]); so do `NETLINK_ROUTE` sockets, which morph answers itself, never
//! through a host netlink socket ([`netlink`]).
//!
//! **ABI.** `sockaddr` layouts are the same on i386 and x86-64; `msghdr`, `iovec` and
//! `cmsghdr` are not and are translated, as are the 32-bit `timeval`s of
//! `SO_RCVTIMEO`/`SO_SNDTIMEO` and `SO_TIMESTAMP*` and the `sock_fprog` of
//! `SO_ATTACH_FILTER`. `SCM_RIGHTS` passes guest descriptors: the receiver gets the open
//! file description the sender had, guest flags included, as Linux passes the
//! `struct file` itself.

mod addr;
mod conn;
pub(super) mod iface;
mod msg;
pub(super) mod netlink;
mod sock;
mod sockopt;

use self::conn::*;
use self::msg::*;
use crate::syscall::common::*;

table! {
    /// Sockets: socketcall and the direct socket calls, loopback only.
    pub(super) TABLE: Net {
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

// ----- the socketcall multiplexer --------------------------------------------------

pub(super) fn sys_socketcall(m: &mut NetCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
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

#[cfg(test)]
mod tests {
    use super::addr::*;
    use super::conn::*;
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
