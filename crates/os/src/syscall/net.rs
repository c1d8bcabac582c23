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

use std::collections::{HashMap, VecDeque};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::rc::{Rc, Weak};
use std::time::{Duration, Instant};

mod sockopt;

use super::io::block_on;
use super::*;
use crate::machine::poll_now;
use crate::process::{FileKind, OpenFile, SigInfo};

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

/// Machine-wide socket state.
#[derive(Default)]
pub(crate) struct Net {
    /// Host names of the `AF_UNIX` sockets guests bound to paths → the guest's spelling.
    unix_names: HashMap<Vec<u8>, Vec<u8>>,
    /// The machine's abstract namespace: every abstract `AF_UNIX` name a guest uses is
    /// this prefix (random, made at the first use) plus the guest's name on the host.
    abstract_prefix: Option<Vec<u8>>,
    /// The next name an autobind tries (five hex digits, as Linux's).
    autobind_next: u32,
    /// Open files sent with `SCM_RIGHTS` and not received yet, oldest first.
    in_flight: VecDeque<InFlight>,
}

/// An open file a guest sent with `SCM_RIGHTS`. The host holds the file in the message;
/// morph holds no descriptor of its own (a message that is never received must not keep
/// a pipe open), only what it needs to give the receiver the same guest view.
struct InFlight {
    /// The sender's open file, while some guest still has it: the receiver shares it.
    file: Weak<OpenFile>,
    /// Else: the object's (device, inode), to know the received descriptor, and the
    /// guest's view of the file, for a new open file around it.
    id: Option<(u64, u64)>,
    nonblock: bool,
    host_nonblock: bool,
    /// What the file was, when that is plain data (not a `/proc` snapshot).
    kind: Option<FileKind>,
}

/// How many sent open files morph remembers; beyond, the oldest is forgotten and its
/// receiver gets a fresh wrapping of the host descriptor (the host's flags then show).
const IN_FLIGHT_MAX: usize = 256;

/// Length of the machine's abstract-name prefix: `morph-`, 16 hex digits, `/`.
const ABSTRACT_PREFIX_LEN: usize = 23;

/// `sizeof(struct sockaddr_un)`: the longest `AF_UNIX` address.
const SOCKADDR_UN_MAX: usize = 110;

/// Flags of every host socket morph makes.
const HOST_SOCK_FLAGS: i32 = libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC;

/// The most bytes one call moves (as `read`/`write`).
const MAX_IO: u32 = 0x7fff_f000;

/// `UIO_MAXIOV`: the most iovecs (and `mmsghdr`s) in one call.
const MAX_IOV: u32 = 1024;

/// How long a blocking guest waits before trying again when there is no event that
/// says when to (see [`retry_soon`]).
const RETRY: Duration = Duration::from_millis(1);

/// A `MSG_WAITALL` receive is let through once this much is queued (a request larger
/// than the receive buffer could never be queued whole).
const WAITALL_MAX: usize = 64 << 10;

/// `kcmp(2)`'s "same open file description" comparison.
const KCMP_FILE: i32 = 0;
/// `sizeof(struct mmsghdr)` on i386: a `msghdr` and the `msg_len` the kernel fills in.
const MMSGHDR32: u32 = MsgHdr32::SIZE + 4;

// ----- the socketcall multiplexer --------------------------------------------------

fn sys_socketcall(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
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
fn file(p: &Process, fd: u32) -> Result<Rc<OpenFile>, Errno> {
    p.fds.get(fd).map(|e| e.host.clone()).ok_or(EBADF)
}

/// Counts a refusal of the loopback rule and returns its errno.
fn refuse(m: &mut Machine, e: Errno) -> Errno {
    m.stats.refused_net += 1;
    e
}

/// Installs a new host socket as a guest descriptor.
fn install(p: &mut Process, fd: OwnedFd, nonblock: bool, cloexec: bool) -> SysResult {
    p.fds.install(FdEntry::of(OpenFile::nonblocking(fd, nonblock), cloexec), 0).ok_or(EMFILE)
}

/// Reads an `int`-sized host socket option.
fn int_opt(raw: i32, level: i32, name: i32) -> Option<i32> {
    let mut v: libc::c_int = 0;
    let mut l = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `l` bytes into our int.
    let r = unsafe { libc::getsockopt(raw, level, name, (&mut v as *mut libc::c_int).cast(), &mut l) };
    (r == 0).then_some(v)
}

/// The pending error of a host socket (reading it clears it).
fn so_error(raw: i32) -> Errno {
    int_opt(raw, libc::SOL_SOCKET, libc::SO_ERROR).unwrap_or(EIO)
}

/// The guest's receive or send timeout (`SO_RCVTIMEO`/`SO_SNDTIMEO`, kept on the host
/// socket, which never waits itself), if it set one.
fn sock_timeout(raw: i32, name: i32) -> Option<Duration> {
    let mut tv = libc::timeval { tv_sec: 0, tv_usec: 0 };
    let mut l = std::mem::size_of::<libc::timeval>() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `l` bytes into our timeval.
    let r = unsafe { libc::getsockopt(raw, libc::SOL_SOCKET, name, (&mut tv as *mut libc::timeval).cast(), &mut l) };
    let d = Duration::from_secs(tv.tv_sec.max(0) as u64) + Duration::from_micros(tv.tv_usec.max(0) as u64);
    (r == 0 && !d.is_zero()).then_some(d)
}

/// Blocks a guest that must wait for something no descriptor announces; the call is
/// re-run shortly.
fn retry_soon(p: &mut Process) -> SysResult {
    block_on(p, Vec::new(), Some(Instant::now() + RETRY), true)
}

/// A host socket call said `EAGAIN`. The guest gets `EAGAIN` too if it does not wait
/// (`O_NONBLOCK`, `MSG_DONTWAIT`) or if this is the re-run after its timeout
/// (`SO_RCVTIMEO`/`SO_SNDTIMEO`, the host option `timeo`) ran out; else the process
/// blocks until the socket is ready for `events` and the call is re-run.
fn wait_for(p: &mut Process, raw: i32, events: i16, dontwait: bool, timeo: i32) -> SysResult {
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
fn sent(p: &mut Process, raw: i32, flags: u32, nonblock: bool, r: SysResult) -> SysResult {
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
fn send_flags(flags: u32) -> i32 {
    (flags | MSG_DONTWAIT | MSG_NOSIGNAL) as i32
}

/// `MSG_WAITALL` on a stream: the host call returns what is queued, so a blocking guest
/// waits until the whole request is (or [`WAITALL_MAX`] of it, or the peer has finished
/// or failed). `Some` is the call's result when the guest must wait; with nothing
/// queued the ordinary receive path waits.
fn wait_all(p: &mut Process, raw: i32, flags: u32, want: usize, dontwait: bool) -> Option<SysResult> {
    if flags & MSG_WAITALL == 0 || dontwait || want == 0 {
        return None;
    }
    if int_opt(raw, libc::SOL_SOCKET, libc::SO_TYPE) != Some(SOCK_STREAM as i32) {
        return None;
    }
    let mut queued: libc::c_int = 0;
    // SAFETY: FIONREAD writes one int into our local.
    if unsafe { libc::ioctl(raw, libc::FIONREAD, &mut queued) } < 0 {
        return None;
    }
    let queued = queued.max(0) as usize;
    if queued == 0 || queued >= want.min(WAITALL_MAX) {
        return None;
    }
    let mut pfd = [libc::pollfd { fd: raw, events: libc::POLLRDHUP, revents: 0 }];
    // SAFETY: one valid pollfd; zero timeout.
    unsafe { libc::poll(pfd.as_mut_ptr(), 1, 0) };
    if pfd[0].revents & (libc::POLLRDHUP | libc::POLLHUP | libc::POLLERR) != 0 {
        return None;
    }
    Some(retry_soon(p))
}

// ----- addresses -------------------------------------------------------------------

/// What a guest socket address is given for.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Use {
    Bind,
    Connect,
    Send,
}

/// A socket address as the host is to see it.
struct HostAddr {
    bytes: Vec<u8>,
    /// For an `AF_UNIX` path: the descriptor the host name goes through (the parent
    /// directory for `bind`, the socket file otherwise; it must stay open until the
    /// host call), and the guest's spelling of the path.
    unix: Option<(OwnedFd, Vec<u8>)>,
}

impl HostAddr {
    fn plain(bytes: Vec<u8>) -> HostAddr {
        HostAddr { bytes, unix: None }
    }
    fn ptr(&self) -> *const libc::sockaddr {
        self.bytes.as_ptr().cast()
    }
    fn len(&self) -> libc::socklen_t {
        self.bytes.len() as libc::socklen_t
    }
}

/// Reads a guest socket address (at most `sizeof(struct sockaddr_storage)`).
fn read_sockaddr(p: &Process, ptr: u32, len: u32) -> Result<Vec<u8>, Errno> {
    if len > SOCKADDR_MAX {
        return Err(EINVAL);
    }
    let mut b = vec![0u8; len as usize];
    p.aspace.read_bytes(ptr, &mut b).map_err(efault)?;
    Ok(b)
}

fn family_of(addr: &[u8]) -> Option<u16> {
    Some(u16::from_le_bytes([*addr.first()?, *addr.get(1)?]))
}

/// May a guest use this IPv4 address (network byte order)?
fn ipv4_allowed(ip: &[u8], how: Use) -> bool {
    ip[0] == 127 || (how == Use::Bind && ip == [0, 0, 0, 0])
}

/// May a guest use this IPv6 address?
fn ipv6_allowed(ip: &[u8], how: Use) -> bool {
    let loopback = ip[..15].iter().all(|&b| b == 0) && ip[15] == 1;
    let any = ip.iter().all(|&b| b == 0);
    let v4_mapped = ip[..10].iter().all(|&b| b == 0) && ip[10..12] == [0xff, 0xff];
    loopback || (how == Use::Bind && any) || (v4_mapped && ipv4_allowed(&ip[12..], how))
}

/// Checks a guest socket address against the loopback rule and translates it for the
/// host (`AF_UNIX` paths resolve inside the root).
fn host_addr(m: &mut Machine, p: &Process, addr: Vec<u8>, how: Use) -> Result<HostAddr, Errno> {
    let Some(family) = family_of(&addr) else {
        return Ok(HostAddr::plain(addr)); // too short for any family: the host says so
    };
    let unreachable = if how == Use::Bind { EADDRNOTAVAIL } else { ENETUNREACH };
    let v4 = |m: &mut Machine, addr: Vec<u8>| match addr.get(4..8) {
        Some(ip) if ipv4_allowed(ip, how) => Ok(HostAddr::plain(addr)),
        Some(_) => Err(refuse(m, unreachable)),
        None => Err(EINVAL),
    };
    match family {
        AF_UNIX => unix_addr(m, p, addr, how),
        AF_INET => v4(m, addr),
        AF_INET6 => match addr.get(8..24) {
            Some(ip) if ipv6_allowed(ip, how) => Ok(HostAddr::plain(addr)),
            Some(_) => Err(refuse(m, unreachable)),
            None => Err(EINVAL),
        },
        // connect(AF_UNSPEC) dissolves an association. IPv4 binds AF_UNSPEC as AF_INET
        // (when the address is the wildcard) and sends a datagram to its address.
        AF_UNSPEC if how == Use::Connect => Ok(HostAddr::plain(addr)),
        AF_UNSPEC if addr.len() >= 8 => v4(m, addr),
        AF_UNSPEC => Ok(HostAddr::plain(addr)),
        _ => Err(refuse(m, EAFNOSUPPORT)),
    }
}

/// An `AF_UNIX` address for the host: a path resolves inside the guest root; an abstract
/// name is put in the machine's own abstract namespace; an unnamed address passes.
fn unix_addr(m: &mut Machine, p: &Process, addr: Vec<u8>, how: Use) -> Result<HostAddr, Errno> {
    let raw = &addr[2..];
    if raw.is_empty() {
        return Ok(HostAddr::plain(addr));
    }
    if raw[0] == 0 {
        return m.net.abstract_host(&raw[1..]).map(HostAddr::plain);
    }
    let path = &raw[..raw.iter().position(|&b| b == 0).unwrap_or(raw.len())];
    let (fd, mut name) = if how == Use::Bind {
        // The new name is created in its parent; a link there is never followed.
        let (dir, last) = m.vfs.parent(&p.cwd, path)?;
        let mut n = format!("/proc/self/fd/{}/", dir.as_raw_fd()).into_bytes();
        n.extend_from_slice(last.as_bytes());
        (dir, n)
    } else {
        let f = m.vfs.open(&p.cwd, path, libc::O_PATH, 0)?;
        let n = format!("/proc/self/fd/{}", f.as_raw_fd()).into_bytes();
        (f, n)
    };
    if name.len() >= 108 {
        return Err(ENAMETOOLONG);
    }
    let mut bytes = AF_UNIX.to_le_bytes().to_vec();
    bytes.append(&mut name);
    bytes.push(0);
    Ok(HostAddr { bytes, unix: Some((fd, path.to_vec())) })
}

/// A host socket address as the guest is to see it: the name of an `AF_UNIX` socket a
/// guest bound is shown as the guest spelled it, a host path inside the root without
/// the root.
fn guest_addr(m: &Machine, mut addr: Vec<u8>) -> Vec<u8> {
    if family_of(&addr) != Some(AF_UNIX) || addr.len() <= 2 {
        return addr;
    }
    if addr[2] == 0 {
        // An abstract name: the guest's own without the machine's prefix. Any other
        // (a host process's) is shown unnamed: the guest could not reach it anyway.
        let own = m.net.abstract_prefix.as_deref().and_then(|pre| addr[3..].strip_prefix(pre)).map(<[u8]>::to_vec);
        addr.truncate(2);
        if let Some(name) = own {
            addr.push(0);
            addr.extend_from_slice(&name);
        }
        return addr;
    }
    let end = addr[2..].iter().position(|&b| b == 0).map_or(addr.len(), |i| i + 2);
    let path = &addr[2..end];
    let root = m.vfs.root_path().as_os_str().as_encoded_bytes();
    let guest = match m.net.unix_names.get(path) {
        Some(g) => Some(g.clone()),
        None if root != b"/" && path.starts_with(root) && path.get(root.len()) == Some(&b'/') => {
            Some(path[root.len()..].to_vec())
        }
        None => None,
    };
    if let Some(g) = guest {
        addr.truncate(2);
        addr.extend_from_slice(&g);
        addr.push(0);
    }
    addr
}

/// Gives the guest a socket address: as much as its buffer at `ptr` holds (its size is
/// at `len_ptr`), and the whole address's length at `len_ptr`.
fn put_sockaddr(m: &Machine, p: &mut Process, ptr: u32, len_ptr: u32, host: &[u8]) -> Result<(), Errno> {
    let room = p.aspace.read_u32(len_ptr).map_err(efault)?;
    if (room as i32) < 0 {
        return Err(EINVAL);
    }
    let a = guest_addr(m, host.to_vec());
    let n = a.len().min(room as usize);
    p.aspace.write_bytes(ptr, &a[..n]).map_err(efault)?;
    p.aspace.write_u32(len_ptr, a.len() as u32).map_err(efault)?;
    Ok(())
}

/// A buffer for the host to write a socket address into.
struct AddrBuf {
    bytes: [u8; SOCKADDR_MAX as usize],
    len: libc::socklen_t,
}

impl AddrBuf {
    fn new() -> AddrBuf {
        AddrBuf { bytes: [0; SOCKADDR_MAX as usize], len: SOCKADDR_MAX }
    }
    fn ptr(&mut self) -> *mut libc::sockaddr {
        self.bytes.as_mut_ptr().cast()
    }
    fn get(&self) -> &[u8] {
        &self.bytes[..(self.len as usize).min(self.bytes.len())]
    }
}

// ----- creating sockets ------------------------------------------------------------

/// Splits a `type` argument into the type and the `SOCK_NONBLOCK`/`SOCK_CLOEXEC` flags.
fn socket_type(ty: u32) -> Result<(u32, bool, bool), Errno> {
    let flags = ty & !SOCK_TYPE_MASK;
    if flags & !(SOCK_NONBLOCK | SOCK_CLOEXEC) != 0 {
        return Err(EINVAL);
    }
    Ok((ty & SOCK_TYPE_MASK, flags & SOCK_NONBLOCK != 0, flags & SOCK_CLOEXEC != 0))
}

/// The sockets a guest may make: any `AF_UNIX` socket; TCP, UDP and ICMP echo
/// ("ping") sockets of `AF_INET` and `AF_INET6`.
fn check_socket(m: &mut Machine, domain: u32, ty: u32, proto: u32) -> Result<(), Errno> {
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

fn sys_socket(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let (ty, nonblock, cloexec) = socket_type(a[1])?;
    check_socket(m, a[0], ty, a[2])?;
    // SAFETY: socket() takes plain integers.
    let fd = unsafe { libc::socket(a[0] as i32, ty as i32 | HOST_SOCK_FLAGS, a[2] as i32) };
    if fd < 0 {
        return Err(host_errno());
    }
    // SAFETY: a fresh descriptor we own.
    install(p, unsafe { OwnedFd::from_raw_fd(fd) }, nonblock, cloexec)
}

fn sys_socketpair(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let (ty, nonblock, cloexec) = socket_type(a[1])?;
    check_socket(m, a[0], ty, a[2])?;
    p.aspace.prepare_write(a[3], 8).map_err(efault)?;
    let mut fds = [0i32; 2];
    // SAFETY: socketpair writes two descriptors into our array.
    host(unsafe { libc::socketpair(a[0] as i32, ty as i32 | HOST_SOCK_FLAGS, a[2] as i32, fds.as_mut_ptr()) } as isize)?;
    // SAFETY: two fresh descriptors we own.
    let (x, y) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
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

fn sys_bind(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let f = file(p, a[0])?;
    let addr = read_sockaddr(p, a[1], a[2])?;
    if addr.len() == 2 && family_of(&addr) == Some(AF_UNIX) {
        return autobind(m, f.as_raw_fd());
    }
    let h = host_addr(m, p, addr, Use::Bind)?;
    // SAFETY: bind reads `h.len()` bytes of address from our buffer.
    host(unsafe { libc::bind(f.as_raw_fd(), h.ptr(), h.len()) } as isize)?;
    if let Some((dir, guest)) = h.unix {
        // The host name holds the directory's descriptor number: keeping the directory
        // open with the socket keeps the name unique.
        let name = h.bytes[2..h.bytes.len() - 1].to_vec();
        m.net.unix_names.insert(name, guest);
        let _ = f.socket.bound_dir.set(dir);
    }
    Ok(0)
}

fn sys_listen(_: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let raw = host_fd(p, a[0])?;
    // SAFETY: listen takes plain integers.
    host(unsafe { libc::listen(raw, a[1] as i32) } as isize)
}

fn sys_connect(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
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
    // SAFETY: connect reads `h.len()` bytes of address from our buffer.
    match host(unsafe { libc::connect(f.as_raw_fd(), h.ptr(), h.len()) } as isize) {
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
fn connect_result(p: &mut Process, f: &OpenFile) -> SysResult {
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

fn accept(m: &mut Machine, p: &mut Process, fd: u32, addr: u32, len_ptr: u32, flags: u32) -> SysResult {
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
    let mut peer = AddrBuf::new();
    // SAFETY: accept4 writes at most `peer.len` bytes of address into our buffer.
    let r = unsafe { libc::accept4(raw, peer.ptr(), &mut peer.len, HOST_SOCK_FLAGS) };
    if r < 0 {
        return match host_errno() {
            EAGAIN => wait_for(p, raw, libc::POLLIN, f.guest_nonblock(), libc::SO_RCVTIMEO),
            e => Err(e),
        };
    }
    // SAFETY: a fresh descriptor we own.
    let conn = unsafe { OwnedFd::from_raw_fd(r) };
    let gfd = install(p, conn, flags & SOCK_NONBLOCK != 0, flags & SOCK_CLOEXEC != 0)?;
    if addr != 0
        && let Err(e) = put_sockaddr(m, p, addr, len_ptr, peer.get())
    {
        p.fds.close(gfd);
        return Err(e);
    }
    Ok(gfd)
}

fn sys_accept4(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    accept(m, p, a[0], a[1], a[2], a[3])
}

fn sockname(m: &mut Machine, p: &mut Process, a: &[u32; 6], peer: bool) -> SysResult {
    let raw = host_fd(p, a[0])?;
    let mut b = AddrBuf::new();
    // SAFETY: the call writes at most `b.len` bytes of address into our buffer.
    let r = unsafe {
        if peer { libc::getpeername(raw, b.ptr(), &mut b.len) } else { libc::getsockname(raw, b.ptr(), &mut b.len) }
    };
    host(r as isize)?;
    put_sockaddr(m, p, a[1], a[2], b.get())?;
    Ok(0)
}

fn sys_getsockname(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    sockname(m, p, a, false)
}

fn sys_getpeername(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    sockname(m, p, a, true)
}

fn sys_shutdown(_: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let raw = host_fd(p, a[0])?;
    // SAFETY: shutdown takes plain integers.
    host(unsafe { libc::shutdown(raw, a[1] as i32) } as isize)
}

// ----- options ---------------------------------------------------------------------

/// Reads a guest 32-bit `timeval` as the host's.
fn timeval_in(b: &[u8]) -> Result<libc::timeval, Errno> {
    let w = |i: usize| b.get(i..i + 4).map(|s| i32::from_le_bytes(s.try_into().expect("4 bytes")));
    match (w(0), w(4)) {
        (Some(s), Some(us)) => Ok(libc::timeval { tv_sec: s.into(), tv_usec: us.into() }),
        _ => Err(EINVAL),
    }
}

/// Is the host descriptor a socket? (Options on anything else are the host's
/// `ENOTSOCK`, whatever the option.)
fn is_socket(raw: i32) -> bool {
    super::host_stat_fd(raw).is_ok_and(|st| st.st_mode & libc::S_IFMT == libc::S_IFSOCK)
}

/// Checks a socket option against the allowlist ([`sockopt`]); a refusal is counted.
fn option_allowed(m: &mut Machine, raw: i32, level: u32, name: u32, set: bool) -> Result<(), Errno> {
    if !is_socket(raw) {
        return Ok(());
    }
    sockopt::check(level, name, set).map_err(|e| refuse(m, e))
}

fn sys_setsockopt(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let (raw, level, name) = (host_fd(p, a[0])?, a[1], a[2]);
    option_allowed(m, raw, level, name, true)?;
    if (a[4] as i32) < 0 {
        return Err(EINVAL);
    }
    let mut b = vec![0u8; a[4].min(1 << 16) as usize];
    p.aspace.read_bytes(a[3], &mut b).map_err(efault)?;
    let set = |v: *const libc::c_void, len: usize| {
        // SAFETY: setsockopt reads `len` bytes from `v`, which the caller keeps alive.
        host(unsafe { libc::setsockopt(raw, level as i32, name as i32, v, len as libc::socklen_t) } as isize)
    };
    match (level, name) {
        (SOL_SOCKET, SO_RCVTIMEO_OLD | SO_SNDTIMEO_OLD) => {
            let tv = timeval_in(&b)?;
            set((&tv as *const libc::timeval).cast(), std::mem::size_of::<libc::timeval>())
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
            let prog = libc::sock_fprog { len: n, filter: p.aspace.host_ptr(ptr).cast() };
            set((&prog as *const libc::sock_fprog).cast(), std::mem::size_of::<libc::sock_fprog>())
        }
        _ => set(b.as_ptr().cast(), b.len()),
    }
}

fn sys_getsockopt(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let f = file(p, a[0])?;
    let (raw, level, name, val, len_ptr) = (f.as_raw_fd(), a[1], a[2], a[3], a[4]);
    option_allowed(m, raw, level, name, false)?;
    let room = p.aspace.read_u32(len_ptr).map_err(efault)?;
    if (room as i32) < 0 {
        return Err(EINVAL);
    }
    let out = if level == SOL_SOCKET && matches!(name, SO_RCVTIMEO_OLD | SO_SNDTIMEO_OLD) {
        let mut tv = libc::timeval { tv_sec: 0, tv_usec: 0 };
        let mut l = std::mem::size_of::<libc::timeval>() as libc::socklen_t;
        let tvp: *mut libc::timeval = &mut tv;
        // SAFETY: getsockopt writes at most `l` bytes into our timeval.
        host(unsafe { libc::getsockopt(raw, level as i32, name as i32, tvp.cast(), &mut l) } as isize)?;
        let mut b = (tv.tv_sec as i32).to_le_bytes().to_vec();
        b.extend_from_slice(&(tv.tv_usec as i32).to_le_bytes());
        b.truncate(room as usize);
        b
    } else {
        let mut b = vec![0u8; room.min(1 << 16) as usize];
        let mut l = b.len() as libc::socklen_t;
        // SAFETY: getsockopt writes at most `l` bytes into our buffer.
        host(unsafe { libc::getsockopt(raw, level as i32, name as i32, b.as_mut_ptr().cast(), &mut l) } as isize)?;
        b.truncate(l as usize);
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

// ----- sending and receiving -------------------------------------------------------

fn sys_sendto(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let (fd, buf, len, flags, addr, alen) = (a[0], a[1], a[2].min(MAX_IO), a[3], a[4], a[5]);
    let f = file(p, fd)?;
    let raw = f.as_raw_fd();
    p.aspace.check_read(buf, len).map_err(efault)?;
    let to = if addr != 0 { Some(host_addr(m, p, read_sockaddr(p, addr, alen)?, Use::Send)?) } else { None };
    autobind_if_passcred(m, raw)?;
    let (tp, tl) = to.as_ref().map_or((std::ptr::null(), 0), |h| (h.ptr(), h.len()));
    // SAFETY: the guest range was checked readable and is mapped in our window; the
    // address (if any) is our buffer of `tl` bytes.
    let r =
        host(unsafe { libc::sendto(raw, p.aspace.host_ptr(buf).cast(), len as usize, send_flags(flags), tp, tl) }
            as isize);
    sent(p, raw, flags, f.guest_nonblock(), r)
}

fn sys_recvfrom(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let (fd, buf, len, flags, addr, len_ptr) = (a[0], a[1], a[2].min(MAX_IO), a[3], a[4], a[5]);
    let f = file(p, fd)?;
    let raw = f.as_raw_fd();
    p.aspace.prepare_write(buf, len).map_err(efault)?;
    let dontwait = flags & MSG_DONTWAIT != 0 || f.guest_nonblock();
    if let Some(r) = wait_all(p, raw, flags, len as usize, dontwait) {
        return r;
    }
    let mut from = AddrBuf::new();
    // SAFETY: the guest range was checked writable and is mapped in our window; the
    // address goes to our buffer of `from.len` bytes.
    let r = unsafe {
        libc::recvfrom(
            raw,
            p.aspace.host_ptr(buf).cast(),
            len as usize,
            (flags | MSG_DONTWAIT) as i32,
            from.ptr(),
            &mut from.len,
        )
    };
    if r < 0 {
        return match host_errno() {
            EAGAIN => wait_for(p, raw, libc::POLLIN, dontwait, libc::SO_RCVTIMEO),
            e => Err(e),
        };
    }
    if addr != 0 {
        put_sockaddr(m, p, addr, len_ptr, from.get())?;
    }
    Ok(r as u32)
}

fn read_msghdr(p: &Process, ptr: u32) -> Result<MsgHdr32, Errno> {
    let mut b = [0u8; MsgHdr32::SIZE as usize];
    p.aspace.read_bytes(ptr, &mut b).map_err(efault)?;
    let h = MsgHdr32::from_bytes(&b);
    if h.iovlen > MAX_IOV {
        return Err(EMSGSIZE);
    }
    if (h.namelen as i32) < 0 {
        return Err(EINVAL);
    }
    Ok(h)
}

fn align(n: usize, to: usize) -> usize {
    n.div_ceil(to) * to
}

/// The guest's control messages (i386 `cmsghdr`s) as host ones. Guest descriptors in
/// `SCM_RIGHTS` become host descriptors; their open files are returned, to be
/// remembered as in flight once the message is sent. Only descriptors and credentials
/// may be sent ([`sockopt::control_allowed`]). As Linux's 32-bit (compat) path does, a
/// non-zero length with a NULL buffer or too short for one header is `EINVAL` (no
/// header found), and an unreadable buffer `EFAULT`.
fn control_out(m: &mut Machine, p: &Process, h: &MsgHdr32) -> Result<(Vec<u8>, Vec<Rc<OpenFile>>), Errno> {
    let mut out = Vec::new();
    let mut files = Vec::new();
    if h.controllen == 0 {
        return Ok((out, files));
    }
    if h.control == 0 || (h.controllen as usize) < CMSG_HDR32 {
        return Err(EINVAL);
    }
    if h.controllen > 1 << 16 {
        return Err(ENOBUFS);
    }
    let mut b = vec![0u8; h.controllen as usize];
    p.aspace.read_bytes(h.control, &mut b).map_err(efault)?;
    let w = |b: &[u8], i: usize| u32::from_le_bytes(b[i..i + 4].try_into().expect("4 bytes"));
    let mut off = 0;
    while off + CMSG_HDR32 <= b.len() {
        let (len, level, ty) = (w(&b, off) as usize, w(&b, off + 4), w(&b, off + 8));
        if len < CMSG_HDR32 || off + len > b.len() {
            return Err(EINVAL);
        }
        if !sockopt::control_allowed(level, ty) {
            return Err(refuse(m, EPERM));
        }
        let mut data = b[off + CMSG_HDR32..off + len].to_vec();
        if level == SOL_SOCKET && ty == SCM_RIGHTS {
            if !data.len().is_multiple_of(4) {
                return Err(EINVAL);
            }
            for c in data.chunks_exact_mut(4) {
                let e = p.fds.get(u32::from_le_bytes(c.try_into().expect("4 bytes"))).ok_or(EBADF)?;
                c.copy_from_slice(&e.host.as_raw_fd().to_le_bytes());
                files.push(e.host.clone());
            }
        } else if level == SOL_SOCKET && ty == SCM_CREDENTIALS && data.len() >= 12 && w(&data, 0) == p.pid {
            // The host checks the pid against its own.
            // SAFETY: getpid has no preconditions.
            let pid = unsafe { libc::getpid() } as u32;
            data[..4].copy_from_slice(&pid.to_le_bytes());
        }
        out.extend_from_slice(&((CMSG_HDR64 + data.len()) as u64).to_le_bytes());
        out.extend_from_slice(&level.to_le_bytes());
        out.extend_from_slice(&ty.to_le_bytes());
        out.extend_from_slice(&data);
        out.resize(align(out.len(), 8), 0);
        off += align(len, 4);
    }
    Ok((out, files))
}

/// Host control messages as the guest's (i386 `cmsghdr`s, at most `room` bytes).
/// Received descriptors are installed in the guest's table. Returns the bytes and
/// whether something did not fit (`MSG_CTRUNC`).
fn control_in(m: &mut Machine, p: &mut Process, host: &[u8], room: usize, cloexec: bool) -> (Vec<u8>, bool) {
    let mut out = Vec::new();
    let mut trunc = false;
    let mut off = 0;
    while off + CMSG_HDR64 <= host.len() {
        let len = u64::from_le_bytes(host[off..off + 8].try_into().expect("8 bytes")) as usize;
        let level = u32::from_le_bytes(host[off + 8..off + 12].try_into().expect("4 bytes"));
        let ty = u32::from_le_bytes(host[off + 12..off + 16].try_into().expect("4 bytes"));
        if len < CMSG_HDR64 || off + len > host.len() {
            break;
        }
        let data = &host[off + CMSG_HDR64..off + len];
        off += align(len, 8);
        let free = room.saturating_sub(out.len() + CMSG_HDR32);
        let guest: Vec<u8> = match (level, ty) {
            (SOL_SOCKET, SCM_RIGHTS) => {
                let mut g = Vec::new();
                for (i, c) in data.chunks_exact(4).enumerate() {
                    // SAFETY: the kernel just installed this descriptor for us.
                    let fd = unsafe { OwnedFd::from_raw_fd(i32::from_le_bytes(c.try_into().expect("4 bytes"))) };
                    if i >= free / 4 {
                        trunc = true; // dropped: closed, as Linux closes what does not fit
                        continue;
                    }
                    let entry = FdEntry { host: m.net.adopt(fd), cloexec };
                    match p.fds.install(entry, 0) {
                        Some(n) => g.extend_from_slice(&n.to_le_bytes()),
                        None => trunc = true,
                    }
                }
                if g.is_empty() {
                    continue;
                }
                g
            }
            // 64-bit timeval/timespec → 32-bit.
            (SOL_SOCKET, SO_TIMESTAMP_OLD | SO_TIMESTAMPNS_OLD | SO_TIMESTAMPING_OLD) => data
                .chunks_exact(8)
                .flat_map(|c| (i64::from_le_bytes(c.try_into().expect("8 bytes")) as i32).to_le_bytes())
                .collect(),
            _ => data.to_vec(),
        };
        let need = CMSG_HDR32 + guest.len();
        if out.len() + need > room {
            trunc = true;
            continue;
        }
        out.extend_from_slice(&(need as u32).to_le_bytes());
        out.extend_from_slice(&level.to_le_bytes());
        out.extend_from_slice(&ty.to_le_bytes());
        out.extend_from_slice(&guest);
        out.resize(align(out.len(), 4).min(room), 0);
    }
    (out, trunc)
}

impl Net {
    /// The machine's abstract-name prefix (made at the first use, from the host's
    /// entropy: it must differ between machines, and drawing it from the machine's
    /// seeded RNG would change what guests see).
    fn abstract_prefix(&mut self) -> &[u8] {
        self.abstract_prefix.get_or_insert_with(|| {
            let mut r = [0u8; 8];
            // SAFETY: getrandom writes at most 8 bytes into our array.
            let n = unsafe { libc::getrandom(r.as_mut_ptr().cast(), r.len(), 0) };
            if n != 8 {
                // No entropy: the pid and the time still tell machines apart.
                let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
                // SAFETY: getpid has no preconditions.
                let v = (u64::from(unsafe { libc::getpid() } as u32) << 32) ^ t.as_nanos() as u64;
                r = v.to_le_bytes();
            }
            let p = format!("morph-{:016x}/", u64::from_le_bytes(r)).into_bytes();
            debug_assert_eq!(p.len(), ABSTRACT_PREFIX_LEN);
            p
        })
    }

    /// The host address of the guest's abstract name `name` (without its leading NUL):
    /// the name inside the machine's namespace (`EINVAL` if it no longer fits).
    fn abstract_host(&mut self, name: &[u8]) -> Result<Vec<u8>, Errno> {
        if 3 + ABSTRACT_PREFIX_LEN + name.len() > SOCKADDR_UN_MAX {
            return Err(EINVAL);
        }
        let mut b = AF_UNIX.to_le_bytes().to_vec();
        b.push(0);
        b.extend_from_slice(self.abstract_prefix());
        b.extend_from_slice(name);
        Ok(b)
    }

    /// Remembers an open file a guest just sent.
    fn sent(&mut self, f: &Rc<OpenFile>) {
        if self.in_flight.len() == IN_FLIGHT_MAX {
            self.in_flight.pop_front();
        }
        self.in_flight.push_back(InFlight {
            file: Rc::downgrade(f),
            id: object_id(f.as_raw_fd()),
            nonblock: f.guest_nonblock(),
            host_nonblock: f.host_nonblock,
            kind: match &f.kind {
                FileKind::Host => Some(FileKind::Host),
                FileKind::Device(n) => Some(FileKind::Device(n)),
                FileKind::Random(n) => Some(FileKind::Random(n)),
                _ => None,
            },
        });
    }

    /// The open file behind a host descriptor received with `SCM_RIGHTS`: the one the
    /// sender had, if a guest still has it (the receiver then shares the open file
    /// description and its guest flags, as Linux passes the `struct file` itself), else
    /// a new one with the guest view it had when it was sent; a descriptor morph did not
    /// see sent is wrapped as found.
    fn adopt(&mut self, fd: OwnedFd) -> Rc<OpenFile> {
        let id = object_id(fd.as_raw_fd());
        let found = self.in_flight.iter().position(|e| match e.file.upgrade() {
            Some(f) => same_file(f.as_raw_fd(), fd.as_raw_fd()),
            None => id.is_some() && e.id == id,
        });
        let Some(e) = found.and_then(|i| self.in_flight.remove(i)) else {
            return Rc::new(OpenFile::new(fd));
        };
        if let Some(f) = e.file.upgrade() {
            return f; // the received descriptor is a duplicate: closed here
        }
        let mut f = if e.host_nonblock { OpenFile::nonblocking(fd, e.nonblock) } else { OpenFile::new(fd) };
        f.nonblock.set(e.nonblock);
        if let Some(k) = e.kind {
            f.kind = k;
        }
        Rc::new(f)
    }
}

/// Binds an unnamed `AF_UNIX` socket to a fresh abstract name in the machine's
/// namespace, as Linux's autobind does in the host's (five hex digits).
fn autobind(m: &mut Machine, raw: i32) -> SysResult {
    for _ in 0..0x10_0000 {
        let n = m.net.autobind_next;
        m.net.autobind_next = (n + 1) & 0xf_ffff;
        let h = m.net.abstract_host(format!("{n:05x}").as_bytes())?;
        // SAFETY: bind reads `h.len()` bytes of address from our buffer.
        match host(unsafe { libc::bind(raw, h.as_ptr().cast(), h.len() as libc::socklen_t) } as isize) {
            Err(EADDRINUSE) => continue,
            r => return r,
        }
    }
    Err(libc::ENOSPC) // the same number on i386
}

/// Before a connect or send: an unnamed `AF_UNIX` socket with `SO_PASSCRED` would be
/// autobound by the host, in the host's namespace; morph binds it in the machine's.
fn autobind_if_passcred(m: &mut Machine, raw: i32) -> Result<(), Errno> {
    if int_opt(raw, libc::SOL_SOCKET, libc::SO_PASSCRED) != Some(1) {
        return Ok(());
    }
    let mut b = AddrBuf::new();
    // SAFETY: getsockname writes at most `b.len` bytes of address into our buffer.
    let r = unsafe { libc::getsockname(raw, b.ptr(), &mut b.len) };
    if r == 0 && b.len == 2 && family_of(b.get()) == Some(AF_UNIX) {
        autobind(m, raw)?;
    }
    Ok(())
}

/// The (device, inode) of the object behind a host descriptor.
fn object_id(raw: i32) -> Option<(u64, u64)> {
    super::host_stat_fd(raw).ok().map(|st| (st.st_dev, st.st_ino))
}

/// Whether two of morph's host descriptors are the same open file description.
fn same_file(a: i32, b: i32) -> bool {
    // SAFETY: getpid has no preconditions; kcmp compares two of our own descriptors
    // and takes no memory.
    let r = unsafe {
        let pid = libc::getpid();
        libc::syscall(libc::SYS_kcmp, pid, pid, KCMP_FILE, a, b)
    };
    if r >= 0 {
        return r == 0;
    }
    // Without kcmp: the same object (a socket or a pipe end is opened only once).
    object_id(a).is_some() && object_id(a) == object_id(b)
}

fn sendmsg(m: &mut Machine, p: &mut Process, fd: u32, msg: u32, flags: u32) -> SysResult {
    let f = file(p, fd)?;
    let raw = f.as_raw_fd();
    let h = read_msghdr(p, msg)?;
    let to = if h.name != 0 {
        let addr = read_sockaddr(p, h.name, h.namelen.min(SOCKADDR_MAX))?;
        Some(host_addr(m, p, addr, Use::Send)?)
    } else {
        None
    };
    let iov = iovecs(p, h.iov, h.iovlen, false)?;
    let (control, files) = control_out(m, p, &h)?;
    autobind_if_passcred(m, raw)?;
    // SAFETY: msghdr is plain data; all-zero is a valid value.
    let mut hdr: libc::msghdr = unsafe { std::mem::zeroed() };
    if let Some(t) = &to {
        hdr.msg_name = t.ptr() as *mut libc::c_void;
        hdr.msg_namelen = t.len();
    }
    hdr.msg_iov = iov.as_ptr() as *mut libc::iovec;
    hdr.msg_iovlen = iov.len();
    if !control.is_empty() {
        hdr.msg_control = control.as_ptr() as *mut libc::c_void;
        hdr.msg_controllen = control.len();
    }
    // SAFETY: every pointer in `hdr` is to our buffers or to checked, readable guest
    // memory, with its length.
    let r = host(unsafe { libc::sendmsg(raw, &hdr, send_flags(flags)) } as isize);
    if r.is_ok() {
        for f in &files {
            m.net.sent(f);
        }
    }
    sent(p, raw, flags, f.guest_nonblock(), r)
}

fn recvmsg(m: &mut Machine, p: &mut Process, fd: u32, msg: u32, flags: u32) -> SysResult {
    let f = file(p, fd)?;
    let raw = f.as_raw_fd();
    let h = read_msghdr(p, msg)?;
    let iov = iovecs(p, h.iov, h.iovlen, true)?;
    let dontwait = flags & MSG_DONTWAIT != 0 || f.guest_nonblock();
    if let Some(r) = wait_all(p, raw, flags, iov.iter().map(|v| v.iov_len).sum(), dontwait) {
        return r;
    }
    let mut from = AddrBuf::new();
    let room = if h.control == 0 { 0 } else { h.controllen.min(1 << 16) as usize };
    // Room for the same messages with the host's larger headers and alignment.
    let mut control = vec![0u64; (2 * room + 64).div_ceil(8)];
    // SAFETY: msghdr is plain data; all-zero is a valid value.
    let mut hdr: libc::msghdr = unsafe { std::mem::zeroed() };
    if h.name != 0 {
        hdr.msg_name = from.ptr().cast();
        hdr.msg_namelen = from.len;
    }
    hdr.msg_iov = iov.as_ptr() as *mut libc::iovec;
    hdr.msg_iovlen = iov.len();
    if room > 0 {
        hdr.msg_control = control.as_mut_ptr().cast();
        hdr.msg_controllen = control.len() * 8;
    }
    let host_flags = flags | MSG_DONTWAIT | MSG_CMSG_CLOEXEC;
    // SAFETY: every pointer in `hdr` is to our buffers or to checked, writable guest
    // memory, with its length.
    let r = unsafe { libc::recvmsg(raw, &mut hdr, host_flags as i32) };
    if r < 0 {
        return match host_errno() {
            EAGAIN => wait_for(p, raw, libc::POLLIN, dontwait, libc::SO_RCVTIMEO),
            e => Err(e),
        };
    }
    // SAFETY: the host wrote `msg_controllen` bytes into our buffer of u64s.
    let host_control =
        unsafe { std::slice::from_raw_parts(control.as_ptr().cast::<u8>(), hdr.msg_controllen.min(control.len() * 8)) };
    let (guest_control, trunc) = control_in(m, p, host_control, room, flags & MSG_CMSG_CLOEXEC != 0);
    if h.name != 0 {
        from.len = hdr.msg_namelen;
        put_sockaddr(m, p, h.name, msg + MsgHdr32::NAMELEN_OFF, from.get())?;
    }
    if !guest_control.is_empty() {
        p.aspace.write_bytes(h.control, &guest_control).map_err(efault)?;
    }
    p.aspace.write_u32(msg + MsgHdr32::CONTROLLEN_OFF, guest_control.len() as u32).map_err(efault)?;
    let out_flags = (hdr.msg_flags as u32 & !MSG_CMSG_CLOEXEC) | if trunc { MSG_CTRUNC } else { 0 };
    p.aspace.write_u32(msg + MsgHdr32::FLAGS_OFF, out_flags).map_err(efault)?;
    Ok(r as u32)
}

fn sys_sendmsg(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    sendmsg(m, p, a[0], a[1], a[2])
}

fn sys_recvmsg(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    recvmsg(m, p, a[0], a[1], a[2])
}

/// `sendmmsg`: the messages one by one; only the first may wait.
fn sys_sendmmsg(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let (fd, vec, n, flags) = (a[0], a[1], a[2].min(MAX_IOV), a[3]);
    let mut done = 0;
    while done < n {
        let at = vec.wrapping_add(MMSGHDR32 * done);
        let f = if done == 0 { flags } else { flags | MSG_DONTWAIT };
        match sendmsg(m, p, fd, at, f) {
            Ok(k) => p.aspace.write_u32(at + MsgHdr32::SIZE, k).map_err(efault)?,
            Err(e) if done == 0 => return Err(e),
            Err(_) => break,
        }
        done += 1;
    }
    Ok(done)
}

/// `recvmmsg`: the messages one by one; only the first may wait (the calls's timeout is
/// not applied, and without `MSG_WAITFORONE` the call returns what has arrived rather
/// than waiting for every message).
fn sys_recvmmsg(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let (fd, vec, n, flags) = (a[0], a[1], a[2].min(MAX_IOV), a[3] & !MSG_WAITFORONE);
    let mut done = 0;
    while done < n {
        let at = vec.wrapping_add(MMSGHDR32 * done);
        let f = if done == 0 { flags } else { flags | MSG_DONTWAIT };
        match recvmsg(m, p, fd, at, f) {
            Ok(k) => p.aspace.write_u32(at + MsgHdr32::SIZE, k).map_err(efault)?,
            Err(e) if done == 0 => return Err(e),
            Err(_) => break,
        }
        done += 1;
    }
    Ok(done)
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
