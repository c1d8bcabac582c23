//! The interface `ioctl`s on a socket (`SIOCGIF*`), answered for the machine's one
//! interface, `lo`: index 1, flags `UP|LOOPBACK|RUNNING`, 127.0.0.1/8, MTU 65536,
//! Linux's values for a loopback device. Another name or index does not exist
//! (`ENODEV`); an `lo:N` alias names `lo` for the device calls and has no address. The
//! address calls (`SIOCGIFADDR`, `SIOCGIFNETMASK`, ...) are IPv4's, on an `AF_INET`
//! socket only (`ENOTTY` on others, as on Linux). Setting anything (`SIOCSIF*`,
//! multicast lists) is refused with `EPERM`: the machine's interface is not the
//! guest's to change (and the host's must not be).
//!
//! The i386 `struct ifreq` is 32 bytes (16 of name, a 16-byte union); Linux copies it
//! in, ends the name with a NUL at byte 15, fills in the answer and copies the whole
//! structure back; on an error nothing is written.

use crate::syscall::common::*;

use super::sockopt::LOOPBACK_IFINDEX;

/// `sizeof(struct ifreq)` on i386 (`struct compat_ifreq`).
const IFREQ: usize = 32;
/// `IFNAMSIZ`.
const IFNAMSIZ: usize = 16;

const SIOCGIFNAME: u32 = 0x8910;
const SIOCGIFCONF: u32 = 0x8912;
const SIOCGIFFLAGS: u32 = 0x8913;
const SIOCGIFADDR: u32 = 0x8915;
const SIOCGIFDSTADDR: u32 = 0x8917;
const SIOCGIFBRDADDR: u32 = 0x8919;
const SIOCGIFNETMASK: u32 = 0x891b;
const SIOCGIFMETRIC: u32 = 0x891d;
const SIOCGIFMTU: u32 = 0x8921;
const SIOCGIFHWADDR: u32 = 0x8927;
const SIOCGIFINDEX: u32 = 0x8933;
const SIOCGIFTXQLEN: u32 = 0x8942;
const SIOCGIFMAP: u32 = 0x8970;

/// The requests that set interface parameters or lists: `SIOCSIFLINK`,
/// `SIOCSIFFLAGS`, `SIOCSIFADDR`, `SIOCSIFDSTADDR`, `SIOCSIFBRDADDR`, `SIOCSIFNETMASK`,
/// `SIOCSIFMETRIC`, `SIOCSIFMEM`, `SIOCSIFMTU`, `SIOCSIFNAME`, `SIOCSIFHWADDR`,
/// `SIOCADDMULTI`, `SIOCDELMULTI`, `SIOCSIFPFLAGS`, `SIOCDIFADDR`,
/// `SIOCSIFHWBROADCAST`, `SIOCSIFTXQLEN`, `SIOCSIFMAP`, and the routing table's
/// `SIOCADDRT`/`SIOCDELRT`.
const SETTERS: &[u32] = &[
    0x890b, 0x890c, 0x8911, 0x8914, 0x8916, 0x8918, 0x891a, 0x891c, 0x891e, 0x8920, 0x8922, 0x8923, 0x8924, 0x8931,
    0x8932, 0x8934, 0x8936, 0x8937, 0x8943, 0x8971,
];

/// `IFF_UP | IFF_LOOPBACK | IFF_RUNNING`.
const LO_FLAGS: u16 = 0x1 | 0x8 | 0x40;
/// A loopback device's MTU.
const LO_MTU: u32 = 65536;
/// A loopback device's transmit queue length.
const LO_TXQLEN: u32 = 1000;
/// `ARPHRD_LOOPBACK`.
const ARPHRD_LOOPBACK: u16 = 772;

/// An IPv4 `struct sockaddr_in` (16 bytes, port 0).
fn sockaddr_in(ip: [u8; 4]) -> [u8; 16] {
    let mut b = [0u8; 16];
    b[..2].copy_from_slice(&AF_INET.to_le_bytes());
    b[4..8].copy_from_slice(&ip);
    b
}

/// An interface `ioctl` on a socket, if `req` is one (`None`: not an interface
/// request, or `fd` is no socket).
pub(in crate::syscall) fn ioctl(p: &mut Process, raw: i32, req: u32, arg: u32) -> Option<SysResult> {
    let address = matches!(req, SIOCGIFADDR | SIOCGIFDSTADDR | SIOCGIFBRDADDR | SIOCGIFNETMASK);
    let known = address
        || SETTERS.contains(&req)
        || matches!(
            req,
            SIOCGIFNAME
                | SIOCGIFCONF
                | SIOCGIFFLAGS
                | SIOCGIFMETRIC
                | SIOCGIFMTU
                | SIOCGIFHWADDR
                | SIOCGIFINDEX
                | SIOCGIFTXQLEN
                | SIOCGIFMAP
        );
    if !known || host::fstat(raw).map_or(true, |st| st.st_mode & libc::S_IFMT != libc::S_IFSOCK) {
        return None;
    }
    if SETTERS.contains(&req) {
        return Some(Err(EPERM));
    }
    if address && host::getsockopt_int(raw, libc::SOL_SOCKET, libc::SO_DOMAIN) != Some(i32::from(AF_INET)) {
        return Some(Err(ENOTTY)); // the device layer has no addresses
    }
    Some(answer(p, req, arg))
}

fn answer(p: &mut Process, req: u32, arg: u32) -> SysResult {
    if req == SIOCGIFCONF {
        return ifconf(p, arg);
    }
    let mut r = [0u8; IFREQ];
    p.aspace.read_bytes(arg, &mut r).map_err(efault)?;
    r[IFNAMSIZ - 1] = 0;
    let name = &r[..r.iter().position(|&b| b == 0).unwrap_or(IFNAMSIZ)];
    // `lo:N` is `lo` for the device; an address belongs to a label, and `lo` has one.
    let device = &name[..name.iter().position(|&b| b == b':').unwrap_or(name.len())];
    let is_lo = device == b"lo";
    let label_is_lo = name == b"lo";
    let int = |r: &mut [u8; IFREQ], v: u32| r[16..20].copy_from_slice(&v.to_le_bytes());
    match req {
        SIOCGIFNAME => {
            let index = i32::from_le_bytes([r[16], r[17], r[18], r[19]]);
            if index != LOOPBACK_IFINDEX {
                return Err(ENODEV);
            }
            r[..3].copy_from_slice(b"lo\0");
        }
        _ if !is_lo => return Err(ENODEV),
        SIOCGIFADDR | SIOCGIFDSTADDR | SIOCGIFBRDADDR | SIOCGIFNETMASK if !label_is_lo => {
            return Err(EADDRNOTAVAIL);
        }
        SIOCGIFADDR | SIOCGIFDSTADDR => r[16..32].copy_from_slice(&sockaddr_in([127, 0, 0, 1])),
        SIOCGIFBRDADDR => r[16..32].copy_from_slice(&sockaddr_in([0; 4])),
        SIOCGIFNETMASK => r[16..32].copy_from_slice(&sockaddr_in([255, 0, 0, 0])),
        SIOCGIFFLAGS => r[16..18].copy_from_slice(&LO_FLAGS.to_le_bytes()),
        SIOCGIFMETRIC => int(&mut r, 0),
        SIOCGIFMTU => int(&mut r, LO_MTU),
        SIOCGIFINDEX => int(&mut r, LOOPBACK_IFINDEX as u32),
        SIOCGIFTXQLEN => int(&mut r, LO_TXQLEN),
        SIOCGIFHWADDR => {
            // The family, then the 6-byte (all-zero) address; the rest is left.
            r[16..18].copy_from_slice(&ARPHRD_LOOPBACK.to_le_bytes());
            r[18..24].fill(0);
        }
        // struct compat_ifmap's 13 bytes of fields (all zero for lo).
        SIOCGIFMAP => r[16..29].fill(0),
        _ => return Err(ENOTTY),
    }
    p.aspace.write_bytes(arg, &r).map_err(efault)?;
    Ok(0)
}

/// `SIOCGIFCONF`: the interfaces with an IPv4 address (`lo`), one `struct ifreq` each
/// (name and `sockaddr_in`), as many as `ifc_len` bytes hold; with a NULL buffer,
/// only the length they need. `ifc_len` becomes the length written (needed).
fn ifconf(p: &mut Process, arg: u32) -> SysResult {
    let mut c = [0u8; 8]; // struct compat_ifconf { int ifc_len; u32 ifc_buf; }
    p.aspace.read_bytes(arg, &mut c).map_err(efault)?;
    let len = i32::from_le_bytes([c[0], c[1], c[2], c[3]]);
    let buf = u32::from_le_bytes([c[4], c[5], c[6], c[7]]);
    let total = if buf == 0 {
        IFREQ
    } else if len >= IFREQ as i32 {
        let mut r = [0u8; IFREQ];
        r[..2].copy_from_slice(b"lo");
        r[16..32].copy_from_slice(&sockaddr_in([127, 0, 0, 1]));
        p.aspace.write_bytes(buf, &r).map_err(efault)?;
        IFREQ
    } else {
        0
    };
    p.aspace.write_u32(arg, total as u32).map_err(efault)?;
    Ok(0)
}
