//! Which socket options and control messages a guest may use: an allowlist of what
//! programs on the loopback network need, checked before any host call.
//!
//! A host socket option can change where packets go (`IP_OPTIONS` with a source route,
//! `IPV6_RTHDR`, `SO_BINDTODEVICE`, `SO_MARK` for policy routing, `IP_TRANSPARENT`),
//! so the loopback rule of `bind`/`connect`/`sendto` would mean nothing if options
//! passed to the host unchecked. Options not listed here are refused: `EPERM` for
//! those that steer or mark traffic, or that need privilege on Linux (what an
//! unprivileged process gets there), `ENOPROTOOPT` ("not available here") for the
//! rest, and `ENODEV` for joining a multicast group (as on a host without multicast).
//! Reading an option is allowed for every settable one and a few more that only report
//! (`SO_TYPE`, `SO_ERROR`, `SO_PEERCRED`, `TCP_INFO`, ...).
//!
//! Control messages a guest sends ([`control`]): descriptors, credentials, hop limits,
//! TTLs, traffic classes and the like go to the host, which checks them as Linux does;
//! `IP_PKTINFO` and `IPV6_PKTINFO` only with the loopback interface and a loopback
//! source; `IP_RETOPTS` (source routes), IPv6 extension headers and `SO_MARK` are
//! refused with `EPERM`, unknown types with Linux's `EINVAL`; levels the socket's
//! protocol does not read are left out, as Linux ignores them. Received control
//! messages are what the guest asked for with the options above.
//!
//! The numbers are Linux's, the same on i386 and x86-64.

use crate::linux::{AF_INET6, EINVAL, ENETUNREACH, ENODEV, ENOPROTOOPT, EPERM, SOL_SOCKET};
use crate::vfs::Errno;

const SOL_IP: u32 = 0;
const SOL_TCP: u32 = 6;
const SOL_UDP: u32 = 17;
/// UDP-Lite's level (its protocol number).
const SOL_UDPLITE: u32 = 136;
const SOL_IPV6: u32 = 41;
const SOL_ICMPV6: u32 = 58;

/// `SOL_SOCKET` options a guest may set (and read).
const SOCKET_SET: &[u32] = &[
    2,  // SO_REUSEADDR
    6,  // SO_BROADCAST (a broadcast address is still refused by the loopback rule)
    7,  // SO_SNDBUF
    8,  // SO_RCVBUF
    9,  // SO_KEEPALIVE
    10, // SO_OOBINLINE
    12, // SO_PRIORITY (0-6 unprivileged; higher is EPERM from the host)
    13, // SO_LINGER
    15, // SO_REUSEPORT
    16, // SO_PASSCRED
    18, // SO_RCVLOWAT
    19, // SO_SNDLOWAT
    20, // SO_RCVTIMEO_OLD
    21, // SO_SNDTIMEO_OLD
    26, // SO_ATTACH_FILTER (classic BPF on the guest's own socket)
    27, // SO_DETACH_FILTER
    29, // SO_TIMESTAMP_OLD
    35, // SO_TIMESTAMPNS_OLD
    37, // SO_TIMESTAMPING_OLD
    40, // SO_RXQ_OVFL
    42, // SO_PEEK_OFF
    44, // SO_LOCK_FILTER
    45, // SO_SELECT_ERR_QUEUE
    51, // SO_ATTACH_REUSEPORT_CBPF
    63, // SO_TIMESTAMP_NEW
    64, // SO_TIMESTAMPNS_NEW
    65, // SO_TIMESTAMPING_NEW
    66, // SO_RCVTIMEO_NEW
    67, // SO_SNDTIMEO_NEW
    68, // SO_DETACH_REUSEPORT_BPF
    72, // SO_BUF_LOCK
];

/// `SOL_SOCKET` options a guest may only read.
const SOCKET_GET: &[u32] = &[
    3,  // SO_TYPE
    4,  // SO_ERROR
    17, // SO_PEERCRED
    30, // SO_ACCEPTCONN
    38, // SO_PROTOCOL
    39, // SO_DOMAIN
    48, // SO_BPF_EXTENSIONS
    49, // SO_INCOMING_CPU
    57, // SO_COOKIE
];

/// `SOL_SOCKET` options refused with `EPERM`: they bind to a device, mark packets for
/// policy routing, or need privilege.
const SOCKET_EPERM: &[u32] = &[
    1,  // SO_DEBUG
    25, // SO_BINDTODEVICE
    32, // SO_SNDBUFFORCE
    33, // SO_RCVBUFFORCE
    36, // SO_MARK
    62, // SO_BINDTOIFINDEX
    75, // SO_RCVMARK
];

/// `SOL_IP` options a guest may set (and read).
const IP_SET: &[u32] = &[
    1,  // IP_TOS
    2,  // IP_TTL
    8,  // IP_PKTINFO (receiving the destination address)
    10, // IP_MTU_DISCOVER
    11, // IP_RECVERR
    12, // IP_RECVTTL
    13, // IP_RECVTOS
    21, // IP_MINTTL
    24, // IP_BIND_ADDRESS_NO_PORT
    25, // IP_RECVFRAGSIZE
    26, // IP_RECVERR_RFC4884
];

/// `SOL_IP` options a guest may only read.
const IP_GET: &[u32] = &[
    14, // IP_MTU
];

/// `SOL_IP` options refused with `EPERM`: they route (source routes, record route),
/// choose an interface or a non-local address.
const IP_EPERM: &[u32] = &[
    3,  // IP_HDRINCL
    4,  // IP_OPTIONS (loose and strict source routes)
    6,  // IP_RECVOPTS
    7,  // IP_RETOPTS
    15, // IP_FREEBIND
    19, // IP_TRANSPARENT
    32, // IP_MULTICAST_IF
    50, // IP_UNICAST_IF
];

/// `SOL_IP` multicast joins (`ENODEV`: joining a group announces it on the network).
const IP_JOIN: &[u32] = &[
    35, // IP_ADD_MEMBERSHIP
    39, // IP_ADD_SOURCE_MEMBERSHIP
    42, // MCAST_JOIN_GROUP
    46, // MCAST_JOIN_SOURCE_GROUP
];

/// `SOL_IPV6` options a guest may set (and read).
const IPV6_SET: &[u32] = &[
    16, // IPV6_UNICAST_HOPS
    23, // IPV6_MTU_DISCOVER
    24, // IPV6_MTU
    25, // IPV6_RECVERR
    26, // IPV6_V6ONLY
    49, // IPV6_RECVPKTINFO
    51, // IPV6_RECVHOPLIMIT
    60, // IPV6_RECVPATHMTU
    62, // IPV6_DONTFRAG
    66, // IPV6_RECVTCLASS
    67, // IPV6_TCLASS
    70, // IPV6_AUTOFLOWLABEL
    73, // IPV6_MINHOPCOUNT
];

/// `SOL_IPV6` options a guest may only read.
const IPV6_GET: &[u32] = &[
    61, // IPV6_PATHMTU
];

/// `SOL_IPV6` options refused with `EPERM`: routing headers, next hops, interfaces,
/// non-local addresses.
const IPV6_EPERM: &[u32] = &[
    5,  // IPV6_2292RTHDR
    9,  // IPV6_NEXTHOP
    17, // IPV6_MULTICAST_IF
    27, // IPV6_JOIN_ANYCAST
    50, // IPV6_PKTINFO (a sticky source address and interface)
    54, // IPV6_HOPOPTS
    55, // IPV6_RTHDRDSTOPTS
    57, // IPV6_RTHDR
    59, // IPV6_DSTOPTS
    75, // IPV6_TRANSPARENT
    76, // IPV6_UNICAST_IF
    78, // IPV6_FREEBIND
];

/// `SOL_IPV6` multicast joins.
const IPV6_JOIN: &[u32] = &[
    20, // IPV6_ADD_MEMBERSHIP
    42, // MCAST_JOIN_GROUP
    46, // MCAST_JOIN_SOURCE_GROUP
];

/// `SOL_TCP` options a guest may set (and read).
const TCP_SET: &[u32] = &[
    1,  // TCP_NODELAY
    2,  // TCP_MAXSEG
    3,  // TCP_CORK
    4,  // TCP_KEEPIDLE
    5,  // TCP_KEEPINTVL
    6,  // TCP_KEEPCNT
    7,  // TCP_SYNCNT
    8,  // TCP_LINGER2
    9,  // TCP_DEFER_ACCEPT
    10, // TCP_WINDOW_CLAMP
    12, // TCP_QUICKACK
    13, // TCP_CONGESTION
    16, // TCP_THIN_LINEAR_TIMEOUTS
    17, // TCP_THIN_DUPACK
    18, // TCP_USER_TIMEOUT
    23, // TCP_FASTOPEN
    25, // TCP_NOTSENT_LOWAT
    30, // TCP_FASTOPEN_CONNECT
    34, // TCP_FASTOPEN_NO_COOKIE
    36, // TCP_INQ
];

/// `SOL_TCP` options a guest may only read.
const TCP_GET: &[u32] = &[
    11, // TCP_INFO
    26, // TCP_CC_INFO
];

/// `SOL_TCP` options refused with `EPERM` (they need `CAP_NET_ADMIN` on Linux).
const TCP_EPERM: &[u32] = &[
    19, // TCP_REPAIR
    20, // TCP_REPAIR_QUEUE
    21, // TCP_QUEUE_SEQ
    22, // TCP_REPAIR_OPTIONS
    29, // TCP_REPAIR_WINDOW
];

/// `SOL_UDP` options a guest may set (and read).
const UDP_SET: &[u32] = &[
    1,   // UDP_CORK
    103, // UDP_SEGMENT
    104, // UDP_GRO
];

/// `SOL_UDPLITE` options a guest may set (and read): the checksum coverages.
const UDPLITE_SET: &[u32] = &[
    10, // UDPLITE_SEND_CSCOV
    11, // UDPLITE_RECV_CSCOV
];

/// `SOL_ICMPV6` options a guest may set (and read): the ping socket's filter.
const ICMPV6_SET: &[u32] = &[
    1, // ICMP6_FILTER
];

/// Whether a guest may set (`set`) or read a socket option; the errno of the refusal.
pub(super) fn check(level: u32, name: u32, set: bool) -> Result<(), Errno> {
    let (settable, readable, eperm, join): (&[u32], &[u32], &[u32], &[u32]) = match level {
        SOL_SOCKET => (SOCKET_SET, SOCKET_GET, SOCKET_EPERM, &[]),
        SOL_IP => (IP_SET, IP_GET, IP_EPERM, IP_JOIN),
        SOL_IPV6 => (IPV6_SET, IPV6_GET, IPV6_EPERM, IPV6_JOIN),
        SOL_TCP => (TCP_SET, TCP_GET, TCP_EPERM, &[]),
        SOL_UDP => (UDP_SET, &[], &[], &[]),
        SOL_UDPLITE => (UDPLITE_SET, &[], &[], &[]),
        SOL_ICMPV6 => (ICMPV6_SET, &[], &[], &[]),
        _ => return Err(ENOPROTOOPT),
    };
    if settable.contains(&name) || (!set && readable.contains(&name)) {
        Ok(())
    } else if set && join.contains(&name) {
        Err(ENODEV)
    } else if set && eperm.contains(&name) {
        Err(EPERM)
    } else {
        Err(ENOPROTOOPT)
    }
}

/// What becomes of a control message a guest sends.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Control {
    /// It goes to the host, which checks its size and value as Linux does.
    Pass,
    /// It is left out: the socket's protocol ignores its level on Linux too.
    Drop,
}

/// `SOL_SOCKET` control messages that go to the host.
const SOCKET_CMSG: &[u32] = &[
    1,  // SCM_RIGHTS
    2,  // SCM_CREDENTIALS
    12, // SO_PRIORITY (0-6 unprivileged; the host says EPERM above, or EINVAL before 6.8)
    37, // SO_TIMESTAMPING_OLD (report flags for this message)
    61, // SCM_TXTIME
];

/// `SOL_IP` control messages that go to the host (`IP_PKTINFO` after its check).
const IP_CMSG: &[u32] = &[
    1,  // IP_TOS
    2,  // IP_TTL
    52, // IP_PROTOCOL (raw sockets only; ignored on the others)
];

/// `SOL_IPV6` control messages that go to the host (`IPV6_PKTINFO` after its check).
const IPV6_CMSG: &[u32] = &[
    8,  // IPV6_2292HOPLIMIT
    11, // IPV6_FLOWINFO
    52, // IPV6_HOPLIMIT
    62, // IPV6_DONTFRAG
    67, // IPV6_TCLASS
];

/// `SOL_IPV6` control messages refused with `EPERM` (extension headers: routing
/// headers would route; every one needs `CAP_NET_RAW` on Linux).
const IPV6_CMSG_EPERM: &[u32] = &[
    3,  // IPV6_2292HOPOPTS
    4,  // IPV6_2292DSTOPTS
    5,  // IPV6_2292RTHDR
    54, // IPV6_HOPOPTS
    55, // IPV6_RTHDRDSTOPTS
    57, // IPV6_RTHDR
    59, // IPV6_DSTOPTS
];

/// The index of the machine's one interface, `lo` (Linux's `LOOPBACK_IFINDEX`, the
/// host's loopback's too).
pub(super) const LOOPBACK_IFINDEX: i32 = 1;

/// Whether a guest may send a control message of level `level` and type `ty` with
/// payload `data` on a socket of family `family` (an `AF_INET*` datagram socket when
/// `ip`): what goes to the host, what is left out (a level the socket's protocol does
/// not read: Linux ignores it), and the refusals, with Linux's errno for a type it
/// does not know (`EINVAL`). The host checks the sizes and values of what passes.
///
/// An interface or source address (`IP_PKTINFO`, `IPV6_PKTINFO`) must be the
/// machine's: the loopback interface (or none) and a loopback (or the wildcard)
/// address; another interface does not exist (`ENODEV`), another IPv4 source is
/// unreachable (`ENETUNREACH`) and another IPv6 source invalid (`EINVAL`), as on
/// Linux without them. Source routes (`IP_RETOPTS`), routing and other extension
/// headers and `SO_MARK` are refused with `EPERM`.
pub(super) fn control(level: u32, ty: u32, data: &[u8], family: u16, ip: bool) -> Result<Control, Errno> {
    let int = |at: usize| data.get(at..at + 4).map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]]));
    let ifindex_ok = |i: Option<i32>| matches!(i, None | Some(0 | LOOPBACK_IFINDEX));
    let v4_local = |a: &[u8]| a == [0, 0, 0, 0] || a[0] == 127;
    match level {
        SOL_SOCKET if SOCKET_CMSG.contains(&ty) => Ok(Control::Pass),
        SOL_SOCKET if ty == 36 => Err(EPERM), // SO_MARK
        SOL_SOCKET => Err(EINVAL),
        SOL_IP | SOL_IPV6 | SOL_UDP if !ip => Ok(Control::Drop),
        SOL_IP if IP_CMSG.contains(&ty) => Ok(Control::Pass),
        SOL_IP if ty == 8 => {
            // IP_PKTINFO: struct in_pktinfo { int ifindex; spec_dst; addr; }
            if data.len() == 12 && !ifindex_ok(int(0)) {
                Err(ENODEV)
            } else if data.len() == 12 && !v4_local(&data[4..8]) {
                Err(ENETUNREACH)
            } else {
                Ok(Control::Pass)
            }
        }
        SOL_IP if ty == 7 => Err(EPERM), // IP_RETOPTS (source routes)
        // An IPv6 socket reads IPv4 control messages only for an IPv4-mapped destination.
        SOL_IP if family == AF_INET6 => Ok(Control::Drop),
        SOL_IP => Err(EINVAL),
        // An IPv4 socket does not read IPv6 control messages.
        SOL_IPV6 if family != AF_INET6 => Ok(Control::Drop),
        SOL_IPV6 if IPV6_CMSG.contains(&ty) => Ok(Control::Pass),
        SOL_IPV6 if ty == 50 || ty == 2 => {
            // IPV6_PKTINFO: struct in6_pktinfo { addr[16]; int ifindex; }
            if data.len() < 20 {
                return Ok(Control::Pass); // the host says EINVAL
            }
            let a = &data[..16];
            let any = a.iter().all(|&b| b == 0);
            let loopback = a[..15].iter().all(|&b| b == 0) && a[15] == 1;
            let mapped = a[..10].iter().all(|&b| b == 0) && a[10..12] == [0xff, 0xff] && v4_local(&a[12..]);
            if !ifindex_ok(int(16)) {
                Err(ENODEV)
            } else if any || loopback || mapped {
                Ok(Control::Pass)
            } else {
                Err(EINVAL)
            }
        }
        SOL_IPV6 if IPV6_CMSG_EPERM.contains(&ty) => Err(EPERM),
        SOL_IPV6 => Err(EINVAL),
        SOL_UDP if ty == 103 => Ok(Control::Pass), // UDP_SEGMENT
        SOL_UDP => Err(EINVAL),
        _ => Ok(Control::Drop),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routing_options_are_refused() {
        assert_eq!(check(SOL_IP, 4, true), Err(EPERM), "IP_OPTIONS");
        assert_eq!(check(SOL_IPV6, 57, true), Err(EPERM), "IPV6_RTHDR");
        assert_eq!(check(SOL_SOCKET, 25, true), Err(EPERM), "SO_BINDTODEVICE");
        assert_eq!(check(SOL_SOCKET, 62, true), Err(EPERM), "SO_BINDTOIFINDEX");
        assert_eq!(check(SOL_SOCKET, 36, true), Err(EPERM), "SO_MARK");
        assert_eq!(check(SOL_IP, 19, true), Err(EPERM), "IP_TRANSPARENT");
        assert_eq!(check(SOL_IP, 35, true), Err(ENODEV), "IP_ADD_MEMBERSHIP");
        assert_eq!(check(SOL_IP, 4, false), Err(ENOPROTOOPT), "reading IP_OPTIONS");
        assert_eq!(check(SOL_SOCKET, 0x7777, true), Err(ENOPROTOOPT));
        assert_eq!(check(255, 1, true), Err(ENOPROTOOPT), "a raw protocol level");
    }

    #[test]
    fn what_loopback_programs_use_passes() {
        for (level, name) in [(SOL_SOCKET, 2), (SOL_SOCKET, 15), (SOL_SOCKET, 9), (SOL_SOCKET, 13), (SOL_SOCKET, 20)] {
            assert_eq!(check(level, name, true), Ok(()));
        }
        for (level, name) in [(SOL_TCP, 1), (SOL_TCP, 3), (SOL_TCP, 4), (SOL_IPV6, 26), (SOL_IP, 1), (SOL_IP, 2)] {
            assert_eq!(check(level, name, true), Ok(()));
        }
        assert_eq!(check(SOL_SOCKET, 3, false), Ok(()), "reading SO_TYPE");
        assert_eq!(check(SOL_SOCKET, 3, true), Err(ENOPROTOOPT), "setting SO_TYPE");
        assert_eq!(check(SOL_SOCKET, 17, false), Ok(()), "SO_PEERCRED");
    }

    #[test]
    fn control_messages() {
        use crate::linux::{AF_INET, AF_UNIX, SCM_CREDENTIALS, SCM_RIGHTS};
        let int = |v: i32| v.to_le_bytes().to_vec();
        let ok = Ok(Control::Pass);
        assert_eq!(control(SOL_SOCKET, SCM_RIGHTS, &int(0), AF_UNIX, false), ok);
        assert_eq!(control(SOL_SOCKET, SCM_CREDENTIALS, &[0; 12], AF_UNIX, false), ok);
        assert_eq!(control(SOL_SOCKET, 36, &int(1), AF_INET, true), Err(EPERM), "SO_MARK");
        assert_eq!(control(SOL_SOCKET, 99, &int(1), AF_UNIX, false), Err(EINVAL));
        assert_eq!(control(SOL_IP, 2, &int(1), AF_UNIX, false), Ok(Control::Drop), "ignored by AF_UNIX");
        assert_eq!(control(SOL_IP, 2, &int(7), AF_INET, true), ok, "IP_TTL");
        assert_eq!(control(SOL_IP, 7, &[0; 8], AF_INET, true), Err(EPERM), "IP_RETOPTS");
        assert_eq!(control(SOL_IP, 99, &int(0), AF_INET, true), Err(EINVAL));
        let pktinfo = |i: i32, a: [u8; 4]| [&i.to_le_bytes()[..], &a, &[0; 4]].concat();
        assert_eq!(control(SOL_IP, 8, &pktinfo(1, [127, 0, 0, 2]), AF_INET, true), ok);
        assert_eq!(control(SOL_IP, 8, &pktinfo(2, [0; 4]), AF_INET, true), Err(ENODEV));
        assert_eq!(control(SOL_IP, 8, &pktinfo(0, [10, 0, 0, 1]), AF_INET, true), Err(ENETUNREACH));
        assert_eq!(control(SOL_IPV6, 52, &int(2), AF_INET6, true), ok, "IPV6_HOPLIMIT");
        assert_eq!(control(SOL_IPV6, 67, &[0; 5], AF_INET6, true), ok, "the host checks the size");
        assert_eq!(control(SOL_IPV6, 52, &int(2), AF_INET, true), Ok(Control::Drop));
        assert_eq!(control(SOL_IPV6, 57, &[0; 8], AF_INET6, true), Err(EPERM), "IPV6_RTHDR");
        assert_eq!(control(SOL_IPV6, 99, &int(0), AF_INET6, true), Err(EINVAL));
        let mut p6 = [0u8; 20];
        p6[15] = 1;
        assert_eq!(control(SOL_IPV6, 50, &p6, AF_INET6, true), ok);
        p6[16] = 3;
        assert_eq!(control(SOL_IPV6, 50, &p6, AF_INET6, true), Err(ENODEV));
        p6[16] = 0;
        p6[0] = 0x20;
        assert_eq!(control(SOL_IPV6, 50, &p6, AF_INET6, true), Err(EINVAL));
        assert_eq!(control(200, 1, &[], AF_INET, true), Ok(Control::Drop));
    }
}
