//! Sending and receiving: `sendto`, `recvfrom`, `sendmsg`/`recvmsg` with their translated `msghdr` and control messages, and the `mmsg` forms.

use crate::syscall::common::*;
use std::os::fd::{FromRawFd, OwnedFd};
use std::rc::Rc;

use super::addr::*;
use super::netlink;
use super::sock::*;
use super::sockopt;
use crate::host::Zeroed;
use crate::syscall::file::{guest_in, guest_out, iovecs};

pub(super) fn sys_sendto(m: &mut NetCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let (fd, buf, len, flags, addr, alen) = (a[0], a[1], a[2].min(MAX_IO), a[3], a[4], a[5]);
    let f = file(p, fd)?;
    let raw = f.as_raw_fd();
    if f.socket.netlink.is_some() {
        let to = if addr != 0 { Some(read_sockaddr(p, addr, alen)?) } else { None };
        let r = netlink::sendto(m, p, a, to);
        return sent(p, raw, flags, f.guest_nonblock(), r);
    }
    // What Linux transfers from a partly valid buffer is the protocol's business: the
    // host stops at the first page the guest may not read, as Linux would.
    guest_in(p, buf, len)?;
    let to = if addr != 0 { Some(host_addr(m, p, read_sockaddr(p, addr, alen)?, Use::Send)?) } else { None };
    autobind_if_passcred(m.net, raw)?;
    let (tp, tl) = to.as_ref().map_or((std::ptr::null(), 0), |h| (h.ptr(), h.len()));
    // SAFETY: a range of our window slot, hosted up to the first page the guest may not
    // read (the host stops there); the address (if any) is our buffer of `tl` bytes.
    let r =
        host(unsafe { libc::sendto(raw, p.aspace.host_ptr(buf).cast(), len as usize, send_flags(flags), tp, tl) }
            as isize);
    sent(p, raw, flags, f.guest_nonblock(), r)
}

pub(super) fn sys_recvfrom(m: &mut NetCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let (fd, buf, len, flags, addr, len_ptr) = (a[0], a[1], a[2].min(MAX_IO), a[3], a[4], a[5]);
    let f = file(p, fd)?;
    let raw = f.as_raw_fd();
    if let Some(e) = netlink::pending_error(p, fd) {
        return Err(e);
    }
    guest_out(p, buf, len)?; // a datagram that does not fit is consumed, as on Linux
    let dontwait = flags & MSG_DONTWAIT != 0 || f.guest_nonblock();
    if let Some(r) = wait_all(p, raw, flags, len as usize, dontwait) {
        return r;
    }
    let mut from = AddrBuf::new();
    // SAFETY: a range of our window slot, prepared up to the first page the guest may
    // not write (the host stops there); the address goes to our buffer of `from.len`
    // bytes.
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
        let nl = f.socket.netlink.is_some().then(netlink::kernel_addr);
        put_sockaddr(m.net, m.vfs, p, addr, len_ptr, nl.as_deref().unwrap_or(from.get()))?;
    }
    Ok(r as u32)
}

pub(super) fn read_msghdr(p: &Process, ptr: u32) -> Result<MsgHdr32, Errno> {
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

pub(super) fn align(n: usize, to: usize) -> usize {
    n.div_ceil(to) * to
}

/// The guest's control messages (i386 `cmsghdr`s) as host ones. Guest descriptors in
/// `SCM_RIGHTS` become host descriptors; their open files are returned, to be
/// remembered as in flight once the message is sent. What may be sent is
/// [`sockopt::control`]'s to say. As Linux's 32-bit (compat) path does, a
/// non-zero length with a NULL buffer or too short for one header is `EINVAL` (no
/// header found), and an unreadable buffer `EFAULT`.
pub(super) fn control_out(
    stats: &mut OsStats,
    p: &Process,
    raw: i32,
    h: &MsgHdr32,
) -> Result<(Vec<u8>, Vec<Rc<OpenFile>>), Errno> {
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
    let mut family = None;
    while off + CMSG_HDR32 <= b.len() {
        let (len, level, ty) = (w(&b, off) as usize, w(&b, off + 4), w(&b, off + 8));
        if len < CMSG_HDR32 || off + len > b.len() {
            return Err(EINVAL);
        }
        let mut data = b[off + CMSG_HDR32..off + len].to_vec();
        if level != SOL_SOCKET && family.is_none() {
            // Which protocol levels the socket reads: an IP datagram socket's only.
            let f = int_opt(raw, libc::SOL_SOCKET, libc::SO_DOMAIN).unwrap_or(0) as u16;
            let stream = int_opt(raw, libc::SOL_SOCKET, libc::SO_TYPE) == Some(libc::SOCK_STREAM);
            family = Some((f, (f == AF_INET || f == AF_INET6) && !stream));
        }
        let (f, ip) = family.unwrap_or((0, false));
        match sockopt::control(level, ty, &data, f, ip) {
            Ok(sockopt::Control::Pass) => {}
            Ok(sockopt::Control::Drop) => {
                off += align(len, 4);
                continue;
            }
            Err(e) if e == EPERM || e == ENODEV || e == ENETUNREACH => return Err(refuse(stats, e)),
            Err(e) => return Err(e),
        }
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
            let pid = host::getpid() as u32;
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
pub(super) fn control_in(
    m: &mut NetCtx<'_>,
    p: &mut Process,
    host: &[u8],
    room: usize,
    cloexec: bool,
) -> (Vec<u8>, bool) {
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

pub(super) fn sendmsg(m: &mut NetCtx<'_>, p: &mut Process, fd: u32, msg: u32, flags: u32) -> SysResult {
    let f = file(p, fd)?;
    let raw = f.as_raw_fd();
    let h = read_msghdr(p, msg)?;
    if f.socket.netlink.is_some() {
        let to = if h.name != 0 { Some(read_sockaddr(p, h.name, h.namelen.min(SOCKADDR_MAX))?) } else { None };
        let iov = iovecs(p, h.iov, h.iovlen, false)?;
        let r = netlink::sendmsg(m, p, fd, to, &iov, flags);
        return sent(p, raw, flags, f.guest_nonblock(), r);
    }
    let to = if h.name != 0 {
        let addr = read_sockaddr(p, h.name, h.namelen.min(SOCKADDR_MAX))?;
        Some(host_addr(m, p, addr, Use::Send)?)
    } else {
        None
    };
    let iov = iovecs(p, h.iov, h.iovlen, false)?;
    let (control, files) = control_out(m.stats, p, raw, &h)?;
    autobind_if_passcred(m.net, raw)?;
    let mut hdr = libc::msghdr::zeroed();
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

pub(super) fn recvmsg(m: &mut NetCtx<'_>, p: &mut Process, fd: u32, msg: u32, flags: u32) -> SysResult {
    let f = file(p, fd)?;
    let raw = f.as_raw_fd();
    let h = read_msghdr(p, msg)?;
    if let Some(e) = netlink::pending_error(p, fd) {
        return Err(e);
    }
    let iov = iovecs(p, h.iov, h.iovlen, true)?;
    let dontwait = flags & MSG_DONTWAIT != 0 || f.guest_nonblock();
    if let Some(r) = wait_all(p, raw, flags, iov.iter().map(|v| v.len()).sum(), dontwait) {
        return r;
    }
    let mut from = AddrBuf::new();
    let room = if h.control == 0 { 0 } else { h.controllen.min(1 << 16) as usize };
    // Room for the same messages with the host's larger headers and alignment.
    let mut control = vec![0u64; (2 * room + 64).div_ceil(8)];
    let mut hdr = libc::msghdr::zeroed();
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
        let nl = f.socket.netlink.is_some().then(netlink::kernel_addr);
        put_sockaddr(m.net, m.vfs, p, h.name, msg + MsgHdr32::NAMELEN_OFF, nl.as_deref().unwrap_or(from.get()))?;
    }
    if !guest_control.is_empty() {
        p.aspace.write_bytes(h.control, &guest_control).map_err(efault)?;
    }
    p.aspace.write_u32(msg + MsgHdr32::CONTROLLEN_OFF, guest_control.len() as u32).map_err(efault)?;
    let out_flags = (hdr.msg_flags as u32 & !MSG_CMSG_CLOEXEC) | if trunc { MSG_CTRUNC } else { 0 };
    p.aspace.write_u32(msg + MsgHdr32::FLAGS_OFF, out_flags).map_err(efault)?;
    Ok(r as u32)
}

pub(super) fn sys_sendmsg(m: &mut NetCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    sendmsg(m, p, a[0], a[1], a[2])
}

pub(super) fn sys_recvmsg(m: &mut NetCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    recvmsg(m, p, a[0], a[1], a[2])
}

/// `sendmmsg`: the messages one by one; only the first may wait.
pub(super) fn sys_sendmmsg(m: &mut NetCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
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
pub(super) fn sys_recvmmsg(m: &mut NetCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
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
