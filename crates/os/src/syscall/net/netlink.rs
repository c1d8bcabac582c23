//! Netlink sockets: `NETLINK_ROUTE`, answered by morph for the machine's one interface,
//! `lo` (index 1, 127.0.0.1/8 and ::1/128), never by the host.
//!
//! A guest netlink socket is one end of a host `AF_UNIX` datagram pair (see
//! [`NetlinkState`]). A request the guest sends (`send*`, `write`, `writev`) is
//! answered at once: each reply datagram is sent on morph's end and queues on the
//! guest's, so receiving (`recv*`, `read`), `MSG_PEEK`, `MSG_TRUNC`, `MSG_DONTWAIT`,
//! blocking and `poll`/`select`/`epoll` readiness are the host's, as on a netlink
//! socket; the sender's address a receive reports is the kernel's (`nl_pid` 0).
//!
//! What Linux's rtnetlink would answer, for a machine whose only interface is `lo`:
//! `RTM_GETLINK` dumps and single requests (by index or `IFLA_IFNAME`, else `ENODEV`),
//! `RTM_GETADDR` and `RTM_GETROUTE` dumps (`AF_INET`, `AF_INET6` or both; the routes
//! are those of the local table, the main table being empty); the parts of a dump in one
//! datagram (`NLM_F_MULTI`), `NLMSG_DONE` in the next, as Linux sends them; acks
//! (`NLM_F_ACK`, `NETLINK_CAP_ACK`) and errors with the request appended. Changes
//! (`RTM_NEW*`, `RTM_DEL*`, `RTM_SET*`) are `EPERM`, as for a process without
//! `CAP_NET_ADMIN`, whatever the guest's capabilities; requests morph does not answer
//! (route lookups, neighbours, rules, ...) are `EOPNOTSUPP`, Linux's answer for a type
//! it has no handler for. Messages to another port or to multicast groups are `EPERM` (again the
//! unprivileged answer); nothing ever changes, so a socket that joins groups never gets
//! a notification. Other netlink protocols are `EPROTONOSUPPORT`, as for a kernel
//! without them. Port ids are Linux's: the first socket a process binds (explicitly
//! with `nl_pid` 0, or at its first send or connect) gets the process id, later ones
//! -4096, -4097, ... in the machine.

use std::cell::Cell;
use std::rc::{Rc, Weak};

use super::addr::{family_of, put_sockaddr};
use super::sock::*;
use crate::host::poll_now;
use crate::process::{NetlinkPorts, NetlinkState};
use crate::syscall::common::*;

pub(super) const AF_NETLINK: u16 = 16;
const NETLINK_ROUTE: u32 = 0;
const SOL_NETLINK: u32 = 270;
/// `sizeof(struct sockaddr_nl)`.
const SOCKADDR_NL: usize = 12;

// Socket options of `SOL_NETLINK`.
const NETLINK_ADD_MEMBERSHIP: u32 = 1;
const NETLINK_DROP_MEMBERSHIP: u32 = 2;
const NETLINK_PKTINFO: u32 = 3;
const NETLINK_BROADCAST_ERROR: u32 = 4;
const NETLINK_NO_ENOBUFS: u32 = 5;
const NETLINK_LISTEN_ALL_NSID: u32 = 8;
const NETLINK_LIST_MEMBERSHIPS: u32 = 9;
const NETLINK_CAP_ACK: u32 = 10;
const NETLINK_EXT_ACK: u32 = 11;
const NETLINK_GET_STRICT_CHK: u32 = 12;
/// rtnetlink's multicast groups (`RTNLGRP_MAX` of Linux 6.12 and later).
const RTNLGRP_MAX: u32 = 39;

// `SOL_SOCKET` options the socket answers itself.
const SO_SNDBUF: u32 = 7;
const SO_RCVBUF: u32 = 8;
const SO_ACCEPTCONN: u32 = 30;
const SO_SNDBUFFORCE: u32 = 32;
const SO_RCVBUFFORCE: u32 = 33;
const SO_PROTOCOL: u32 = 38;
const SO_DOMAIN: u32 = 39;

// Message types and flags.
const NLMSG_HDRLEN: usize = 16;
const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
const NLMSG_MIN_TYPE: u16 = 0x10;
const NLM_F_REQUEST: u16 = 0x1;
const NLM_F_MULTI: u16 = 0x2;
const NLM_F_ACK: u16 = 0x4;
const NLM_F_DUMP: u16 = 0x300;
const NLM_F_CAPPED: u16 = 0x100;
const RTM_BASE: u16 = 16;
const RTM_NEWLINK: u16 = 16;
const RTM_GETLINK: u16 = 18;
const RTM_NEWADDR: u16 = 20;
const RTM_GETADDR: u16 = 22;
const RTM_NEWROUTE: u16 = 24;
const RTM_GETROUTE: u16 = 26;
/// The last rtnetlink message type (Linux 6.x); above it every type is `EOPNOTSUPP`.
const RTM_MAX: u16 = 123;
const AF_BRIDGE: u8 = 7;

// `lo`.
const LO_INDEX: i32 = 1;
const ARPHRD_LOOPBACK: u16 = 772;
/// `IFF_UP | IFF_LOOPBACK | IFF_RUNNING | IFF_LOWER_UP`.
const LO_FLAGS: u32 = 0x1 | 0x8 | 0x40 | 0x1_0000;
const IFA_F_PERMANENT: u8 = 0x80;
const RT_SCOPE_HOST: u8 = 254;

/// The netlink state of guest descriptor `fd`, if it is a netlink socket.
pub(crate) fn of(p: &Process, fd: u32) -> Option<Rc<NetlinkState>> {
    p.fds.get(fd)?.host.socket.netlink.clone()
}

/// Makes a netlink socket: `SOCK_RAW` or `SOCK_DGRAM`, `NETLINK_ROUTE` only.
pub(super) fn socket(
    m: &mut NetCtx<'_>,
    p: &mut Process,
    ty: u32,
    nonblock: bool,
    cloexec: bool,
    proto: u32,
) -> SysResult {
    check_socket(m.stats, ty, proto)?;
    let (guest, replies) = host::socketpair(i32::from(AF_UNIX), libc::SOCK_DGRAM | HOST_SOCK_FLAGS, 0)?;
    let state = NetlinkState {
        ty,
        protocol: proto,
        replies,
        port: Cell::new(0),
        groups: Cell::new(None),
        options: Cell::new(0),
        overrun: Cell::new(false),
        congested: Cell::new(false),
        ports: m.net.netlink_ports.clone(),
    };
    let mut f = OpenFile::nonblocking(guest, nonblock);
    f.socket.netlink = Some(Rc::new(state));
    p.fds.install(FdEntry::of(f, cloexec), 0).ok_or(EMFILE)
}

/// The checks of Linux's `netlink_create`.
pub(super) fn check_socket(stats: &mut OsStats, ty: u32, proto: u32) -> Result<(), Errno> {
    if ty != SOCK_RAW && ty != SOCK_DGRAM {
        return Err(ESOCKTNOSUPPORT);
    }
    if proto != NETLINK_ROUTE {
        return Err(refuse(stats, EPROTONOSUPPORT));
    }
    Ok(())
}

// ----- port ids --------------------------------------------------------------------

fn insert(nl: &Rc<NetlinkState>, port: u32) -> Result<(), Errno> {
    let mut ports = nl.ports.borrow_mut();
    if ports.bound.get(&port).and_then(Weak::upgrade).is_some() {
        return Err(EADDRINUSE);
    }
    ports.bound.insert(port, Rc::downgrade(nl));
    nl.port.set(port);
    Ok(())
}

/// Gives an unbound socket a port id as Linux's `netlink_autobind` does: the process
/// id, or if that is taken the next of -4096, -4097, ...
fn autobind(nl: &Rc<NetlinkState>, pid: Pid) -> Result<(), Errno> {
    if nl.port.get() != 0 {
        return Ok(());
    }
    let mut port = pid;
    loop {
        match insert(nl, port) {
            Err(EADDRINUSE) => {
                let mut ports: std::cell::RefMut<'_, NetlinkPorts> = nl.ports.borrow_mut();
                port = ports.rover as u32;
                ports.rover = ports.rover.wrapping_sub(1);
                if ports.rover > -4096 {
                    ports.rover = -4097;
                }
            }
            r => return r,
        }
    }
}

fn nl_addr(pid: u32, groups: u32) -> Vec<u8> {
    let mut b = AF_NETLINK.to_le_bytes().to_vec();
    b.extend_from_slice(&[0, 0]);
    b.extend_from_slice(&pid.to_le_bytes());
    b.extend_from_slice(&groups.to_le_bytes());
    b
}

pub(super) fn bind(p: &Process, nl: &Rc<NetlinkState>, addr: &[u8]) -> SysResult {
    if addr.len() < SOCKADDR_NL || family_of(addr) != Some(AF_NETLINK) {
        return Err(EINVAL);
    }
    let (pid, groups) = (le_u32(addr, 4), le_u32(addr, 8));
    if nl.port.get() != 0 {
        if pid != nl.port.get() {
            return Err(EINVAL);
        }
    } else if pid != 0 {
        insert(nl, pid)?;
    } else {
        autobind(nl, p.pid)?;
    }
    if groups != 0 || nl.groups.get().is_some_and(|g| g as u32 != 0) {
        let high = nl.groups.get().unwrap_or(0) & !0xffff_ffff;
        nl.groups.set(Some(high | u64::from(groups)));
    }
    Ok(0)
}

/// Checks a destination address: only the kernel (port 0, no groups) is reached; the
/// rest is what Linux refuses a process without `CAP_NET_ADMIN` (`EPERM`).
fn check_dest(stats: &mut OsStats, addr: &[u8]) -> Result<(), Errno> {
    if addr.is_empty() {
        return Ok(()); // no address: the socket's destination, the kernel
    }
    if addr.len() < SOCKADDR_NL || family_of(addr) != Some(AF_NETLINK) {
        return Err(EINVAL);
    }
    if le_u32(addr, 4) != 0 || le_u32(addr, 8) != 0 {
        return Err(refuse(stats, EPERM));
    }
    Ok(())
}

pub(super) fn connect(stats: &mut OsStats, p: &Process, nl: &Rc<NetlinkState>, addr: &[u8]) -> SysResult {
    match family_of(addr) {
        None => Err(EINVAL),
        Some(AF_UNSPEC) => Ok(0),
        Some(AF_NETLINK) => {
            check_dest(stats, addr)?;
            autobind(nl, p.pid)?;
            Ok(0)
        }
        Some(_) => Err(EINVAL),
    }
}

/// `getsockname` (the port and the first 32 groups) and `getpeername` (the kernel: the
/// only destination a guest may connect to).
pub(super) fn sockname(m: &mut NetCtx<'_>, p: &mut Process, nl: &NetlinkState, a: &[u32; 6], peer: bool) -> SysResult {
    let b = if peer { nl_addr(0, 0) } else { nl_addr(nl.port.get(), nl.groups.get().unwrap_or(0) as u32) };
    put_sockaddr(m.net, m.vfs, p, a[1], a[2], &b)?;
    Ok(0)
}

// ----- sending and receiving -------------------------------------------------------

/// Sends a request of `len` bytes, copied from the guest by `fill`, with `flags`,
/// (the destination, if any, already checked): answers it, queuing the replies on the
/// guest's end.
pub(crate) fn send(
    p: &Process,
    fd: u32,
    len: usize,
    flags: u32,
    fill: impl FnOnce(&mut [u8]) -> Result<(), Errno>,
) -> SysResult {
    let e = p.fds.get(fd).ok_or(EBADF)?;
    let nl = e.host.socket.netlink.clone().ok_or(EBADF)?;
    if flags & MSG_OOB != 0 {
        return Err(EOPNOTSUPP);
    }
    autobind(&nl, p.pid)?;
    let sndbuf = int_opt(e.host.as_raw_fd(), libc::SOL_SOCKET, libc::SO_SNDBUF).unwrap_or(212_992);
    if len > (sndbuf.max(0) as usize).saturating_sub(32) {
        return Err(EMSGSIZE);
    }
    let mut req = vec![0u8; len];
    fill(&mut req)?;
    let raw = e.host.as_raw_fd();
    let replies = nl.replies.as_raw_fd();
    // Linux queues replies while the receiver holds less than its receive buffer: what
    // morph's end may have in flight to the guest's is that buffer (the host doubles
    // what is set, as for `SO_RCVBUF`).
    let rcvbuf = int_opt(raw, libc::SOL_SOCKET, libc::SO_RCVBUF).unwrap_or(212_992);
    let _ = host::setsockopt(replies, libc::SOL_SOCKET, libc::SO_SNDBUF, &(rcvbuf / 2).to_ne_bytes());
    if nl.congested.get() && !poll_now(&[libc::pollfd { fd: raw, events: libc::POLLIN, revents: 0 }]) {
        nl.congested.set(false); // the guest has read everything
    }
    let opts = nl.options.get();
    for d in respond(&req, nl.port.get(), opts & (1 << NETLINK_CAP_ACK) != 0) {
        if nl.congested.get() || host::send(replies, &d, libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL).is_err() {
            // No room on the guest's end: dropped, and (once until the guest has read
            // its queue) the guest told, as Linux does unless NETLINK_NO_ENOBUFS.
            if opts & (1 << NETLINK_NO_ENOBUFS) == 0 && !nl.congested.replace(true) {
                nl.overrun.set(true);
            }
        }
    }
    Ok(len as u32)
}

/// `write`/`writev` on a netlink socket: a send of the buffers' bytes.
pub(crate) fn write(p: &Process, fd: u32, bufs: &[InPlace]) -> SysResult {
    send_vec(p, fd, bufs, 0)
}

/// A send of the bytes of `bufs` (guest buffers, read whole: `EFAULT` if they cannot
/// be).
fn send_vec(p: &Process, fd: u32, bufs: &[InPlace], flags: u32) -> SysResult {
    let len = bufs.iter().map(InPlace::len).sum::<usize>();
    send(p, fd, len, flags, |b| {
        let mut at = 0;
        for v in bufs {
            p.aspace.read_bytes(v.va(&p.aspace), &mut b[at..at + v.len()]).map_err(efault)?;
            at += v.len();
        }
        Ok(())
    })
}

/// `sendto` on a netlink socket.
pub(super) fn sendto(m: &mut NetCtx<'_>, p: &Process, a: &[u32; 6], addr: Option<Vec<u8>>) -> SysResult {
    if let Some(addr) = addr {
        check_dest(m.stats, &addr)?;
    }
    let (buf, len) = (a[1], a[2].min(MAX_IO));
    send(p, a[0], len as usize, a[3], |b| p.aspace.read_bytes(buf, b).map_err(efault))
}

/// `sendmsg` on a netlink socket, its destination and iovecs read (control messages
/// are ignored, as the kernel end ignores them).
pub(super) fn sendmsg(
    m: &mut NetCtx<'_>,
    p: &Process,
    fd: u32,
    addr: Option<Vec<u8>>,
    iov: &[InPlace],
    flags: u32,
) -> SysResult {
    if let Some(addr) = addr {
        check_dest(m.stats, &addr)?;
    }
    send_vec(p, fd, iov, flags)
}

/// A receive's error before anything is read: `ENOBUFS` once after replies were
/// dropped (cleared by reporting it).
pub(crate) fn pending_error(p: &Process, fd: u32) -> Option<Errno> {
    of(p, fd).filter(|nl| nl.overrun.replace(false)).map(|_| ENOBUFS)
}

/// The sender's address a receive reports: the kernel.
pub(super) fn kernel_addr() -> Vec<u8> {
    nl_addr(0, 0)
}

// ----- options ---------------------------------------------------------------------

/// `setsockopt` on a netlink socket: `SOL_NETLINK` options are the socket's own;
/// `SO_SNDBUF`, `SO_RCVBUF` (and their `FORCE` forms) and the timeouts go to the
/// host socket (`None`: the caller passes them); other `SOL_SOCKET` options are not
/// modeled (`ENOPROTOOPT`).
pub(super) fn setsockopt(stats: &mut OsStats, nl: &NetlinkState, level: u32, name: u32, v: &[u8]) -> Option<SysResult> {
    if level == SOL_SOCKET {
        return match name {
            SO_SNDBUF | SO_RCVBUF | SO_SNDBUFFORCE | SO_RCVBUFFORCE | SO_RCVTIMEO_OLD | SO_SNDTIMEO_OLD => None,
            _ => Some(Err(refuse(stats, ENOPROTOOPT))),
        };
    }
    if level != SOL_NETLINK {
        return Some(Err(ENOPROTOOPT));
    }
    let val = if v.len() >= 4 { le_u32(v, 0) } else { 0 };
    let flag = match name {
        NETLINK_ADD_MEMBERSHIP | NETLINK_DROP_MEMBERSHIP => {
            if val == 0 || val > RTNLGRP_MAX {
                return Some(Err(EINVAL));
            }
            let g = nl.groups.get().unwrap_or(0);
            let bit = 1u64 << (val - 1);
            nl.groups.set(Some(if name == NETLINK_ADD_MEMBERSHIP { g | bit } else { g & !bit }));
            return Some(Ok(0));
        }
        NETLINK_BROADCAST_ERROR | NETLINK_NO_ENOBUFS | NETLINK_CAP_ACK | NETLINK_EXT_ACK | NETLINK_GET_STRICT_CHK => {
            name
        }
        // Not modeled: packet information control messages, other namespaces.
        NETLINK_PKTINFO | NETLINK_LISTEN_ALL_NSID => return Some(Err(refuse(stats, ENOPROTOOPT))),
        _ => return Some(Err(ENOPROTOOPT)),
    };
    let o = nl.options.get();
    nl.options.set(if val != 0 { o | 1 << flag } else { o & !(1 << flag) });
    Some(Ok(0))
}

/// `getsockopt` on a netlink socket: the value's bytes, as many as Linux gives for
/// `room`, and the length to report; `None` for the options the host socket holds.
pub(super) fn getsockopt(nl: &NetlinkState, level: u32, name: u32, room: u32) -> Option<Result<(Vec<u8>, u32), Errno>> {
    if (room as i32) < 0 {
        return Some(Err(EINVAL));
    }
    let int = |v: u32| {
        let b = v.to_le_bytes();
        let n = room.min(4);
        Some(Ok((b[..n as usize].to_vec(), n)))
    };
    if level == SOL_SOCKET {
        return match name {
            SO_TYPE => int(nl.ty),
            SO_DOMAIN => int(u32::from(AF_NETLINK)),
            SO_PROTOCOL => int(nl.protocol),
            SO_ACCEPTCONN => int(0),
            SO_ERROR => int(if nl.overrun.replace(false) { ENOBUFS as u32 } else { 0 }),
            SO_SNDBUF | SO_RCVBUF | SO_RCVTIMEO_OLD | SO_SNDTIMEO_OLD => None,
            _ => Some(Err(ENOPROTOOPT)),
        };
    }
    if level != SOL_NETLINK {
        return Some(Err(ENOPROTOOPT));
    }
    if name == NETLINK_LIST_MEMBERSHIPS {
        // The group words Linux keeps once the socket has joined any (8 bytes for
        // rtnetlink's 39 groups), as many as fit; the length is always the whole.
        let Some(g) = nl.groups.get() else {
            return Some(Ok((Vec::new(), 0)));
        };
        let all = g.to_le_bytes();
        let n = (room as usize / 4 * 4).min(8);
        return Some(Ok((all[..n].to_vec(), 8)));
    }
    let flag = match name {
        NETLINK_PKTINFO | NETLINK_LISTEN_ALL_NSID => None,
        NETLINK_BROADCAST_ERROR | NETLINK_NO_ENOBUFS | NETLINK_CAP_ACK | NETLINK_EXT_ACK | NETLINK_GET_STRICT_CHK => {
            Some(name)
        }
        _ => return Some(Err(ENOPROTOOPT)),
    };
    if room < 4 {
        return Some(Err(EINVAL));
    }
    let on = flag.is_some_and(|f| nl.options.get() & (1 << f) != 0);
    Some(Ok((u32::from(on).to_le_bytes().to_vec(), 4)))
}

// ----- rtnetlink -------------------------------------------------------------------

/// A message being built.
struct Msg(Vec<u8>);

impl Msg {
    fn new(ty: u16, flags: u16, seq: u32, port: u32) -> Msg {
        let mut b = vec![0u8; 4];
        b.extend_from_slice(&ty.to_le_bytes());
        b.extend_from_slice(&flags.to_le_bytes());
        b.extend_from_slice(&seq.to_le_bytes());
        b.extend_from_slice(&port.to_le_bytes());
        Msg(b)
    }
    fn put(&mut self, b: &[u8]) -> &mut Msg {
        self.0.extend_from_slice(b);
        self
    }
    /// An attribute (`struct nlattr` and its data, padded to 4 bytes).
    fn attr(&mut self, ty: u16, data: &[u8]) -> &mut Msg {
        self.0.extend_from_slice(&((4 + data.len()) as u16).to_le_bytes());
        self.0.extend_from_slice(&ty.to_le_bytes());
        self.0.extend_from_slice(data);
        self.0.resize(self.0.len().next_multiple_of(4), 0);
        self
    }
    fn u32(&mut self, ty: u16, v: u32) -> &mut Msg {
        self.attr(ty, &v.to_le_bytes())
    }
    fn done(mut self) -> Vec<u8> {
        self.0.resize(self.0.len().next_multiple_of(4), 0);
        let n = self.0.len() as u32;
        self.0[..4].copy_from_slice(&n.to_le_bytes());
        self.0
    }
}

/// `RTM_NEWLINK` for `lo`: its `ifinfomsg` and the attributes Linux gives (statistics
/// zero; no `IFLA_AF_SPEC`, `IFLA_XDP` or the other nested ones).
fn link_msg(seq: u32, port: u32, flags: u16) -> Vec<u8> {
    let mut m = Msg::new(RTM_NEWLINK, flags, seq, port);
    m.put(&[0, 0]).put(&ARPHRD_LOOPBACK.to_le_bytes()).put(&LO_INDEX.to_le_bytes());
    m.put(&LO_FLAGS.to_le_bytes()).put(&0u32.to_le_bytes());
    m.attr(3, b"lo\0") // IFLA_IFNAME
        .u32(13, 1000) // IFLA_TXQLEN
        .attr(16, &[0]) // IFLA_OPERSTATE: IF_OPER_UNKNOWN, as lo's
        .attr(17, &[0]) // IFLA_LINKMODE
        .u32(4, 65536) // IFLA_MTU
        .u32(50, 0) // IFLA_MIN_MTU
        .u32(51, 0) // IFLA_MAX_MTU
        .u32(27, 0) // IFLA_GROUP
        .u32(30, 0) // IFLA_PROMISCUITY
        .u32(61, 0) // IFLA_ALLMULTI
        .u32(31, 1) // IFLA_NUM_TX_QUEUES
        .u32(40, 65535) // IFLA_GSO_MAX_SEGS
        .u32(41, 65536) // IFLA_GSO_MAX_SIZE
        .u32(58, 65536) // IFLA_GRO_MAX_SIZE
        .u32(63, 65536) // IFLA_GSO_IPV4_MAX_SIZE
        .u32(64, 65536) // IFLA_GRO_IPV4_MAX_SIZE
        .u32(59, 524_280) // IFLA_TSO_MAX_SIZE
        .u32(60, 65535) // IFLA_TSO_MAX_SEGS
        .u32(32, 1) // IFLA_NUM_RX_QUEUES
        .attr(33, &[1]) // IFLA_CARRIER
        .u32(35, 0) // IFLA_CARRIER_CHANGES
        .u32(47, 0) // IFLA_CARRIER_UP_COUNT
        .u32(48, 0) // IFLA_CARRIER_DOWN_COUNT
        .attr(39, &[0]) // IFLA_PROTO_DOWN
        .attr(1, &[0; 6]) // IFLA_ADDRESS
        .attr(2, &[0; 6]) // IFLA_BROADCAST
        .attr(23, &[0; 200]) // IFLA_STATS64
        .attr(7, &[0; 96]) // IFLA_STATS
        .attr(6, b"noqueue\0") // IFLA_QDISC
        .attr(14, &[0; 32]); // IFLA_MAP
    m.done()
}

/// `IFA_CACHEINFO` of an address that never expires (made when the machine started).
fn cacheinfo() -> [u8; 16] {
    let mut b = [0u8; 16];
    b[..8].fill(0xff);
    b
}

/// `RTM_NEWADDR` for 127.0.0.1/8 (`v6` false) or ::1/128 on `lo`, scope host.
fn addr_msg(v6: bool, seq: u32, port: u32) -> Vec<u8> {
    let mut m = Msg::new(RTM_NEWADDR, NLM_F_MULTI, seq, port);
    if v6 {
        m.put(&[AF_INET6 as u8, 128, IFA_F_PERMANENT, RT_SCOPE_HOST]).put(&LO_INDEX.to_le_bytes());
        let mut one = [0u8; 16];
        one[15] = 1;
        m.attr(1, &one) // IFA_ADDRESS
            .attr(6, &cacheinfo()) // IFA_CACHEINFO
            .u32(8, u32::from(IFA_F_PERMANENT)) // IFA_FLAGS
            .attr(11, &[1]); // IFA_PROTO: IFAPROT_KERNEL_LO
    } else {
        m.put(&[AF_INET as u8, 8, IFA_F_PERMANENT, RT_SCOPE_HOST]).put(&LO_INDEX.to_le_bytes());
        m.attr(1, &[127, 0, 0, 1]) // IFA_ADDRESS
            .attr(2, &[127, 0, 0, 1]) // IFA_LOCAL
            .attr(3, b"lo\0") // IFA_LABEL
            .u32(8, u32::from(IFA_F_PERMANENT)) // IFA_FLAGS
            .attr(6, &cacheinfo()); // IFA_CACHEINFO
    }
    m.done()
}

/// The routes of the local table (255) of a machine whose only interface is `lo`, as
/// `RTM_NEWROUTE` messages: 127.0.0.0/8 and 127.0.0.1 local, 127.255.255.255 broadcast
/// (`v6` false), or ::1 local (`v6` true). The main table is empty.
fn route_msgs(v6: bool, seq: u32, port: u32) -> Vec<u8> {
    const RT_TABLE_LOCAL: u8 = 255;
    const RTPROT_KERNEL: u8 = 2;
    const RTN_LOCAL: u8 = 2;
    const RTN_BROADCAST: u8 = 3;
    const RT_SCOPE_LINK: u8 = 253;
    let mut out = Vec::new();
    if v6 {
        let mut m = Msg::new(RTM_NEWROUTE, NLM_F_MULTI, seq, port);
        m.put(&[AF_INET6 as u8, 128, 0, 0, RT_TABLE_LOCAL, RTPROT_KERNEL, 0, RTN_LOCAL]).put(&0u32.to_le_bytes());
        let mut one = [0u8; 16];
        one[15] = 1;
        m.u32(15, u32::from(RT_TABLE_LOCAL)) // RTA_TABLE
            .attr(1, &one) // RTA_DST
            .u32(6, 0) // RTA_PRIORITY
            .u32(4, LO_INDEX as u32) // RTA_OIF
            .attr(12, &[0; 32]) // RTA_CACHEINFO
            .attr(20, &[0]); // RTA_PREF: medium
        out.extend(m.done());
        return out;
    }
    let routes: [(u8, [u8; 4], u8, u8); 3] = [
        (8, [127, 0, 0, 0], RT_SCOPE_HOST, RTN_LOCAL),
        (32, [127, 0, 0, 1], RT_SCOPE_HOST, RTN_LOCAL),
        (32, [127, 255, 255, 255], RT_SCOPE_LINK, RTN_BROADCAST),
    ];
    for (len, dst, scope, ty) in routes {
        let mut m = Msg::new(RTM_NEWROUTE, NLM_F_MULTI, seq, port);
        m.put(&[AF_INET as u8, len, 0, 0, RT_TABLE_LOCAL, RTPROT_KERNEL, scope, ty]).put(&0u32.to_le_bytes());
        m.u32(15, u32::from(RT_TABLE_LOCAL)) // RTA_TABLE
            .attr(1, &dst) // RTA_DST
            .attr(7, &[127, 0, 0, 1]) // RTA_PREFSRC
            .u32(4, LO_INDEX as u32); // RTA_OIF
        out.extend(m.done());
    }
    out
}

/// What a request came to.
enum Outcome {
    /// Answered (0) or failed (a negative errno): acked when asked or failed.
    Done(i32),
    /// A dump, answered with its parts and `NLMSG_DONE`: never acked.
    Dump,
}

/// The attributes of a message's payload after its fixed header of `fixed` bytes.
fn attrs(payload: &[u8], fixed: usize) -> Vec<(u16, &[u8])> {
    let mut out = Vec::new();
    let mut at = fixed;
    while at + 4 <= payload.len() {
        let len = usize::from(u16::from_le_bytes([payload[at], payload[at + 1]]));
        let ty = u16::from_le_bytes([payload[at + 2], payload[at + 3]]) & 0x3fff;
        if len < 4 || at + len > payload.len() {
            break;
        }
        out.push((ty, &payload[at + 4..at + len]));
        at += len.next_multiple_of(4);
    }
    out
}

/// One rtnetlink request (`rtnetlink_rcv_msg`): replies go to `out`.
fn route(msg: &[u8], port: u32, out: &mut Vec<Vec<u8>>) -> Outcome {
    let ty = u16::from_le_bytes([msg[4], msg[5]]);
    let flags = u16::from_le_bytes([msg[6], msg[7]]);
    let seq = le_u32(msg, 8);
    if ty > RTM_MAX {
        return Outcome::Done(-EOPNOTSUPP);
    }
    let payload = &msg[NLMSG_HDRLEN..];
    let Some(&family) = payload.first() else {
        return Outcome::Done(0); // no room for even a family: ignored, as Linux does
    };
    if (ty - RTM_BASE) & 3 != 2 {
        return Outcome::Done(-EPERM); // a change: refused, as without CAP_NET_ADMIN
    }
    let done = || {
        let mut m = Msg::new(NLMSG_DONE, NLM_F_MULTI, seq, port);
        m.put(&0i32.to_le_bytes());
        m.done()
    };
    match (ty, flags & NLM_F_DUMP != 0) {
        (RTM_GETLINK, true) => {
            // The bridge family dumps bridge ports: lo is none.
            if family != AF_BRIDGE {
                out.push(link_msg(seq, port, NLM_F_MULTI));
            }
            out.push(done());
            Outcome::Dump
        }
        (RTM_GETADDR | RTM_GETROUTE, true) => {
            // AF_INET, AF_INET6, or any other family: every family's (rtnl_dump_all).
            let part = |v6| if ty == RTM_GETADDR { addr_msg(v6, seq, port) } else { route_msgs(v6, seq, port) };
            let mut parts = Vec::new();
            if family != AF_INET6 as u8 {
                parts.extend(part(false));
            }
            if family != AF_INET as u8 {
                parts.extend(part(true));
            }
            out.push(parts);
            out.push(done());
            Outcome::Dump
        }
        (RTM_GETLINK, false) => {
            // rtnl_getlink: an ifinfomsg, then the index or a name.
            if payload.len() < 16 {
                return Outcome::Done(-EINVAL);
            }
            let index = le_u32(payload, 4) as i32;
            let found = if index > 0 {
                index == LO_INDEX
            } else {
                // IFLA_IFNAME or IFLA_ALT_IFNAME.
                let Some((_, name)) = attrs(payload, 16).into_iter().find(|(t, _)| *t == 3 || *t == 53) else {
                    return Outcome::Done(-EINVAL);
                };
                name.split(|&c| c == 0).next() == Some(b"lo")
            };
            if !found {
                return Outcome::Done(-ENODEV);
            }
            out.push(link_msg(seq, port, 0));
            Outcome::Done(0)
        }
        _ => Outcome::Done(-EOPNOTSUPP),
    }
}

/// `NLMSG_ERROR` for request `msg`: an ack (`err` 0, the request's header alone) or an
/// error (the request appended, unless `NETLINK_CAP_ACK`).
fn ack(msg: &[u8], err: i32, port: u32, cap: bool) -> Vec<u8> {
    let capped = err == 0 || cap;
    let seq = le_u32(msg, 8);
    let mut m = Msg::new(NLMSG_ERROR, if capped { NLM_F_CAPPED } else { 0 }, seq, port);
    m.put(&err.to_le_bytes());
    m.put(if capped { &msg[..NLMSG_HDRLEN] } else { msg });
    m.done()
}

/// The reply datagrams to the messages of one send (`netlink_rcv_skb`).
pub(super) fn respond(data: &[u8], port: u32, cap_ack: bool) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut rest = data;
    while rest.len() >= NLMSG_HDRLEN {
        let len = le_u32(rest, 0) as usize;
        if len < NLMSG_HDRLEN || len > rest.len() {
            break;
        }
        let msg = &rest[..len];
        let (ty, flags) = (u16::from_le_bytes([msg[4], msg[5]]), u16::from_le_bytes([msg[6], msg[7]]));
        let outcome = if flags & NLM_F_REQUEST == 0 || ty < NLMSG_MIN_TYPE {
            Outcome::Done(0) // only requests are handled; control messages are skipped
        } else {
            route(msg, port, &mut out)
        };
        if let Outcome::Done(err) = outcome
            && (flags & NLM_F_ACK != 0 || err != 0)
        {
            out.push(ack(msg, err, port, cap_ack));
        }
        rest = &rest[len.next_multiple_of(4).min(rest.len())..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(ty: u16, flags: u16, seq: u32, payload: &[u8]) -> Vec<u8> {
        let mut m = Msg::new(ty, flags, seq, 0);
        m.put(payload);
        m.done()
    }

    #[test]
    fn link_dump() {
        let r = respond(&req(RTM_GETLINK, NLM_F_REQUEST | NLM_F_DUMP, 7, &[0; 16]), 42, false);
        assert_eq!(r.len(), 2);
        assert_eq!(le_u32(&r[0], 0) as usize, r[0].len());
        assert_eq!(u16::from_le_bytes([r[0][4], r[0][5]]), RTM_NEWLINK);
        assert_eq!((le_u32(&r[0], 8), le_u32(&r[0], 12)), (7, 42));
        assert_eq!(le_u32(&r[0], 20), 1); // index
        assert_eq!(r[1].len(), 20);
        assert_eq!(u16::from_le_bytes([r[1][4], r[1][5]]), NLMSG_DONE);
    }

    #[test]
    fn addr_dump_families() {
        let n = |fam: u8| {
            let r = respond(&req(RTM_GETADDR, NLM_F_REQUEST | NLM_F_DUMP, 1, &[fam]), 1, false);
            let mut k = 0;
            let mut at = 0;
            while at < r[0].len() {
                at += le_u32(&r[0], at) as usize;
                k += 1;
            }
            k
        };
        assert_eq!((n(0), n(2), n(10)), (2, 1, 1));
        let routes = respond(&req(RTM_GETROUTE, NLM_F_REQUEST | NLM_F_DUMP, 1, &[0; 12]), 1, false);
        assert_eq!(routes.len(), 2);
        assert_eq!(u16::from_le_bytes([routes[0][4], routes[0][5]]), RTM_NEWROUTE);
    }

    #[test]
    fn errors_and_acks() {
        let r = respond(&req(200, NLM_F_REQUEST, 3, &[1; 16]), 9, false);
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].len(), 52);
        assert_eq!(le_u32(&r[0], 16) as i32, -EOPNOTSUPP);
        let r = respond(&req(RTM_NEWLINK, NLM_F_REQUEST, 3, &[0; 16]), 9, false);
        assert_eq!(le_u32(&r[0], 16) as i32, -EPERM);
        let mut bad = [0u8; 16];
        bad[4] = 7;
        let r = respond(&req(RTM_GETLINK, NLM_F_REQUEST | NLM_F_ACK, 3, &bad), 9, true);
        assert_eq!((r.len(), r[0].len(), le_u32(&r[0], 16) as i32), (1, 36, -ENODEV));
        let r = respond(
            &req(RTM_GETLINK, NLM_F_REQUEST | NLM_F_ACK, 3, &[0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
            9,
            false,
        );
        assert_eq!(r.len(), 2);
        assert_eq!((r[1].len(), le_u32(&r[1], 16)), (36, 0));
        // Not a request: acked if asked, never answered.
        assert_eq!(respond(&req(RTM_GETLINK, NLM_F_ACK, 3, &[0; 16]), 9, false).len(), 1);
        assert!(respond(&req(RTM_GETLINK, 0, 3, &[0; 16]), 9, false).is_empty());
    }
}
