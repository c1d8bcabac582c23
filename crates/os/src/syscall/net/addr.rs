//! Socket addresses: the loopback rule, `AF_UNIX` names inside the root and the machine's abstract namespace, autobind.

use super::sock::*;
use crate::syscall::common::*;

/// What a guest socket address is given for.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Use {
    Bind,
    Connect,
    Send,
}

/// A socket address as the host is to see it.
pub(super) struct HostAddr {
    pub(super) bytes: Vec<u8>,
    /// For an `AF_UNIX` path: the descriptor the host name goes through (the parent
    /// directory for `bind`, the socket file otherwise; it must stay open until the
    /// host call), and the guest's spelling of the path.
    pub(super) unix: Option<(OwnedFd, Vec<u8>)>,
}

impl HostAddr {
    pub(super) fn plain(bytes: Vec<u8>) -> HostAddr {
        HostAddr { bytes, unix: None }
    }
    pub(super) fn ptr(&self) -> *const libc::sockaddr {
        self.bytes.as_ptr().cast()
    }
    pub(super) fn len(&self) -> libc::socklen_t {
        self.bytes.len() as libc::socklen_t
    }
}

/// Reads a guest socket address (at most `sizeof(struct sockaddr_storage)`).
pub(super) fn read_sockaddr(p: &Process, ptr: u32, len: u32) -> Result<Vec<u8>, Errno> {
    if len > SOCKADDR_MAX {
        return Err(EINVAL);
    }
    let mut b = vec![0u8; len as usize];
    p.aspace.read_bytes(ptr, &mut b).map_err(efault)?;
    Ok(b)
}

pub(super) fn family_of(addr: &[u8]) -> Option<u16> {
    Some(u16::from_le_bytes([*addr.first()?, *addr.get(1)?]))
}

/// May a guest use this IPv4 address (network byte order)?
pub(super) fn ipv4_allowed(ip: &[u8], how: Use) -> bool {
    ip[0] == 127 || (how == Use::Bind && ip == [0, 0, 0, 0])
}

/// May a guest use this IPv6 address?
pub(super) fn ipv6_allowed(ip: &[u8], how: Use) -> bool {
    let loopback = ip[..15].iter().all(|&b| b == 0) && ip[15] == 1;
    let any = ip.iter().all(|&b| b == 0);
    let v4_mapped = ip[..10].iter().all(|&b| b == 0) && ip[10..12] == [0xff, 0xff];
    loopback || (how == Use::Bind && any) || (v4_mapped && ipv4_allowed(&ip[12..], how))
}

/// Checks a guest socket address against the loopback rule and translates it for the
/// host (`AF_UNIX` paths resolve inside the root).
pub(super) fn host_addr(m: &mut NetCtx<'_>, p: &Process, addr: Vec<u8>, how: Use) -> Result<HostAddr, Errno> {
    let Some(family) = family_of(&addr) else {
        return Ok(HostAddr::plain(addr)); // too short for any family: the host says so
    };
    let unreachable = if how == Use::Bind { EADDRNOTAVAIL } else { ENETUNREACH };
    let v4 = |m: &mut NetCtx<'_>, addr: Vec<u8>| match addr.get(4..8) {
        Some(ip) if ipv4_allowed(ip, how) => Ok(HostAddr::plain(addr)),
        Some(_) => Err(refuse(m.stats, unreachable)),
        None => Err(EINVAL),
    };
    match family {
        AF_UNIX => unix_addr(m.net, m.vfs, p, addr, how),
        AF_INET => v4(m, addr),
        AF_INET6 => match addr.get(8..24) {
            Some(ip) if ipv6_allowed(ip, how) => Ok(HostAddr::plain(addr)),
            Some(_) => Err(refuse(m.stats, unreachable)),
            None => Err(EINVAL),
        },
        // connect(AF_UNSPEC) dissolves an association. IPv4 binds AF_UNSPEC as AF_INET
        // (when the address is the wildcard) and sends a datagram to its address.
        AF_UNSPEC if how == Use::Connect => Ok(HostAddr::plain(addr)),
        AF_UNSPEC if addr.len() >= 8 => v4(m, addr),
        AF_UNSPEC => Ok(HostAddr::plain(addr)),
        _ => Err(refuse(m.stats, EAFNOSUPPORT)),
    }
}

/// An `AF_UNIX` address for the host: a path resolves inside the guest root; an abstract
/// name is put in the machine's own abstract namespace; an unnamed address passes.
pub(super) fn unix_addr(net: &mut Net, vfs: &Vfs, p: &Process, addr: Vec<u8>, how: Use) -> Result<HostAddr, Errno> {
    let raw = &addr[2..];
    if raw.is_empty() {
        return Ok(HostAddr::plain(addr));
    }
    if raw[0] == 0 {
        return net.abstract_host(&raw[1..]).map(HostAddr::plain);
    }
    let path = &raw[..raw.iter().position(|&b| b == 0).unwrap_or(raw.len())];
    let (fd, mut name) = if how == Use::Bind {
        // The new name is created in its parent; a link there is never followed.
        let (dir, last) = vfs.parent(&p.cwd, path)?;
        let mut n = format!("/proc/self/fd/{}/", dir.as_raw_fd()).into_bytes();
        n.extend_from_slice(last.as_bytes());
        (dir, n)
    } else {
        let f = vfs.open(&p.cwd, path, libc::O_PATH, 0)?;
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

/// The abstract name (without its leading NUL) of a guest `AF_UNIX` address, if it is
/// one.
pub(super) fn abstract_name(addr: &[u8]) -> Option<Vec<u8>> {
    (family_of(addr) == Some(AF_UNIX) && addr.len() > 2 && addr[2] == 0).then(|| addr[3..].to_vec())
}

/// After `f` was bound or connected to the abstract name `name`: if the name is
/// numbered in the machine's table, `f` holds its number (see `Net::abstract_hold`).
pub(super) fn hold_name(net: &mut Net, f: &OpenFile, name: Option<Vec<u8>>) {
    if let Some(hold) = name.and_then(|n| net.abstract_hold(&n)) {
        f.socket.names.borrow_mut().push(hold);
    }
}

/// A host socket address as the guest is to see it: the name of an `AF_UNIX` socket a
/// guest bound is shown as the guest spelled it, a host path inside the root without
/// the root.
pub(super) fn guest_addr(net: &Net, vfs: &Vfs, mut addr: Vec<u8>) -> Vec<u8> {
    if family_of(&addr) != Some(AF_UNIX) || addr.len() <= 2 {
        return addr;
    }
    if addr[2] == 0 {
        // An abstract name: the guest's own without the machine's prefix. Any other
        // (a host process's) is shown unnamed: the guest could not reach it anyway.
        let own = net.abstract_guest(&addr[3..]);
        addr.truncate(2);
        if let Some(name) = own {
            addr.push(0);
            addr.extend_from_slice(&name);
        }
        return addr;
    }
    let end = addr[2..].iter().position(|&b| b == 0).map_or(addr.len(), |i| i + 2);
    let path = &addr[2..end];
    let root = vfs.root_path().as_os_str().as_encoded_bytes();
    let guest = match net.unix_names.get(path) {
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
pub(super) fn put_sockaddr(
    net: &Net,
    vfs: &Vfs,
    p: &mut Process,
    ptr: u32,
    len_ptr: u32,
    host: &[u8],
) -> Result<(), Errno> {
    let room = p.aspace.read_u32(len_ptr).map_err(efault)?;
    if (room as i32) < 0 {
        return Err(EINVAL);
    }
    let a = guest_addr(net, vfs, host.to_vec());
    let n = a.len().min(room as usize);
    p.aspace.write_bytes(ptr, &a[..n]).map_err(efault)?;
    p.aspace.write_u32(len_ptr, a.len() as u32).map_err(efault)?;
    Ok(())
}

/// A buffer for the host to write a socket address into.
pub(super) struct AddrBuf {
    bytes: [u8; SOCKADDR_MAX as usize],
    pub(super) len: libc::socklen_t,
}

impl AddrBuf {
    pub(super) fn new() -> AddrBuf {
        AddrBuf { bytes: [0; SOCKADDR_MAX as usize], len: SOCKADDR_MAX }
    }
    pub(super) fn ptr(&mut self) -> *mut libc::sockaddr {
        self.bytes.as_mut_ptr().cast()
    }
    pub(super) fn get(&self) -> &[u8] {
        &self.bytes[..(self.len as usize).min(self.bytes.len())]
    }
}

/// Binds an unnamed `AF_UNIX` socket to a fresh abstract name in the machine's
/// namespace, as Linux's autobind does in the host's (five hex digits).
pub(super) fn autobind(net: &mut Net, raw: i32) -> SysResult {
    for _ in 0..0x10_0000 {
        let n = net.autobind_next;
        net.autobind_next = (n + 1) & 0xf_ffff;
        let h = net.abstract_host(format!("{n:05x}").as_bytes())?;
        match host::bind(raw, &h) {
            Err(EADDRINUSE) => continue,
            r => return r,
        }
    }
    Err(libc::ENOSPC) // the same number on i386
}

/// Before a connect or send: an unnamed `AF_UNIX` socket with `SO_PASSCRED` would be
/// autobound by the host, in the host's namespace; morph binds it in the machine's.
pub(super) fn autobind_if_passcred(net: &mut Net, raw: i32) -> Result<(), Errno> {
    if int_opt(raw, libc::SOL_SOCKET, libc::SO_PASSCRED) != Some(1) {
        return Ok(());
    }
    let b = host::sockname(raw, false);
    if let Ok(b) = b
        && b.len() == 2
        && family_of(&b) == Some(AF_UNIX)
    {
        autobind(net, raw)?;
    }
    Ok(())
}
