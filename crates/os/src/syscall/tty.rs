//! `ioctl` on the machine's pseudo-terminals (see [`crate::pty`]).
//!
//! The terminal's own requests (termios, window size, flushing, packet mode, the
//! slave's lock, the queues' lengths) go to the host pty. The number (`TIOCGPTN`) is
//! the machine's. The controlling-terminal requests (`TIOCSCTTY`, `TIOCNOTTY`,
//! `TIOCGPGRP`, `TIOCSPGRP`, `TIOCGSID`) act on guest sessions and process groups, as
//! Linux's do, kept beside the pty; a window size change sends `SIGWINCH` to the
//! foreground process group as Linux does.
//!
//! The line discipline's signals are sent here too (the host's go nowhere, see
//! [`crate::pty`]): the `ISIG` characters written to a master ([`master_wrote`]), and
//! job control, `SIGTTIN`/`SIGTTOU` to a background process group that reads from its
//! controlling terminal, writes to it under `TOSTOP` or changes its settings
//! ([`check_change`]).

use super::common::*;
use crate::process::{Caps, SigInfo};
use crate::pty::{Pty, PtyEnd};
use std::rc::Rc;

const TIOCSCTTY: u32 = 0x540e;
const TIOCNOTTY: u32 = 0x5422;
const TIOCGSID: u32 = 0x5429;
const TIOCGPTN: u32 = 0x8004_5430;
const TIOCGPTPEER: u32 = 0x5441;
const TIOCOUTQ: u32 = 0x5411;
const TIOCGETD: u32 = 0x5424;
const TIOCSWINSZ: u32 = 0x5414;
const TCSETA: u32 = 0x5406;
const TCSETAW: u32 = 0x5407;
const TCSETAF: u32 = 0x5408;
const TCSBRK: u32 = 0x5409;
const TCXONC: u32 = 0x540a;
const TCFLSH: u32 = 0x540b;
const TIOCSETD: u32 = 0x5423;
const TIOCSBRK: u32 = 0x5427;
const TIOCCBRK: u32 = 0x5428;
const TCSBRKP: u32 = 0x5425;
const TCSETS2: u32 = 0x402c_542b;
const TCSETSW2: u32 = 0x402c_542c;
const TCSETSF2: u32 = 0x402c_542d;
/// `c_lflag`'s `TOSTOP`.
const TOSTOP: u32 = 0o400;

/// Whether process `pid` lives (the caller is not in the table while it runs).
fn alive<'a>(m: &'a FileCtx<'_>, p: &'a Process) -> impl Fn(Pid) -> bool + 'a {
    let sys = m.sys();
    move |pid| pid == p.pid || sys.procs.contains_key(&pid)
}

/// Whether `pty` is the caller's controlling terminal.
fn is_ctty(m: &FileCtx<'_>, p: &Process, pty: &Rc<Pty>) -> bool {
    !p.no_ctty && pty.session(alive(m, p)) == Some(p.sid)
}

/// `ioctl(fd, request, arg)` on guest `fd`, an end of a pty.
pub(super) fn pty_ioctl(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let e = p.fds.get(a[0]).ok_or(EBADF)?.clone();
    let FileKind::Pty(PtyEnd { pty, master, .. }) = &e.host.kind else { return Err(ENOTTY) };
    let (pty, master, raw) = (pty.clone(), *master, e.host.as_raw_fd());
    let (req, arg) = (a[1], a[2]);
    // `FIONCLEX`, `FIOCLEX`, `FIOASYNC`, `FIOQSIZE`: Linux's `do_vfs_ioctl` answers them
    // before the terminal is asked.
    let generic = [0x5450, 0x5451, 0x5452, 0x5460].contains(&req);
    if !master && pty.hung_up() && !generic {
        // A slave hung up by its master's close answers nothing (`hung_up_tty_ioctl`).
        return Err(if req == TIOCSPGRP { ENOTTY } else { EIO });
    }
    // Changing the terminal from a background process group: `SIGTTOU` (Linux checks
    // the slave for a termios change through either end, else the descriptor's own
    // terminal; `TIOCSPGRP` says `ENOTTY` for `EIO`).
    match req {
        TCSETS | TCSETSW | TCSETSF | TCSETA | TCSETAW | TCSETAF | TCSETS2 | TCSETSW2 | TCSETSF2 => {
            check_change(m, p, &pty, SIGTTOU)?
        }
        TCSBRK | TCSBRKP | TIOCSBRK | TIOCCBRK | TIOCSETD | TCXONC | TCFLSH if !master => {
            check_change(m, p, &pty, SIGTTOU)?
        }
        TIOCSPGRP => check_change(m, p, &pty, SIGTTOU).map_err(|e| if e == EIO { ENOTTY } else { e })?,
        _ => {}
    }
    match req {
        TIOCGPTN if master => {
            p.aspace.write_u32(arg, pty.n).map_err(efault)?;
            Ok(0)
        }
        TIOCGPTN => Err(ENOTTY),
        TIOCGPTPEER if master => {
            let fd = host::ioctl_value(raw, req, (arg & !O_CLOEXEC) | O_NOCTTY | O_NONBLOCK | O_CLOEXEC)?;
            // SAFETY: TIOCGPTPEER returned a new descriptor, ours alone.
            let fd = unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd as i32) };
            let file = special::slave_file(m.sys(), p, pty, fd, arg);
            p.fds.install(FdEntry::of(file, arg & O_CLOEXEC != 0), 0).ok_or(EMFILE)
        }
        TIOCSCTTY => set_ctty(m, p, &pty, arg, raw),
        TIOCNOTTY => {
            if !is_ctty(m, p, &pty) {
                return Err(ENOTTY);
            }
            if p.sid != p.pid {
                // Another process gives it up for itself alone, with no signal.
                p.no_ctty = true;
            } else {
                // The session leader gives it up: its foreground group is hung up.
                let pgrp = pty.pgrp(alive(m, p));
                pty.set_session(0, 0);
                if pgrp != 0 {
                    let info =
                        SigInfo { code: SI_USER, pid_or_addr: p.pid, uid: p.attrs.creds.uid, ..Default::default() };
                    m.signal_group(p, pgrp, SIGHUP, info);
                    m.signal_group(p, pgrp, SIGCONT, info);
                }
            }
            Ok(0)
        }
        TIOCGPGRP => {
            if !master && !is_ctty(m, p, &pty) {
                return Err(ENOTTY);
            }
            let pgrp = pty.pgrp(alive(m, p));
            p.aspace.write_u32(arg, pgrp).map_err(efault)?;
            Ok(0)
        }
        TIOCSPGRP => {
            if !is_ctty(m, p, &pty) {
                return Err(ENOTTY);
            }
            let pgrp = p.aspace.read_u32(arg).map_err(efault)?;
            if (pgrp as i32) < 0 {
                return Err(EINVAL);
            }
            let sys = m.sys();
            let member = std::iter::once(&*p).chain(sys.procs.values()).find(|q| q.pgid == pgrp).ok_or(ESRCH)?;
            if member.sid != p.sid {
                return Err(EPERM);
            }
            pty.set_pgrp(pgrp);
            Ok(0)
        }
        TIOCGSID => {
            if !master && !is_ctty(m, p, &pty) {
                return Err(ENOTTY);
            }
            let sid = pty.session(alive(m, p)).ok_or(ENOTTY)?;
            p.aspace.write_u32(arg, sid).map_err(efault)?;
            Ok(0)
        }
        TIOCSWINSZ => {
            let mut old = [0u8; 64];
            host::ioctl_ptr(raw, TIOCGWINSZ, &mut old)?;
            let mut new = [0u8; 64];
            p.aspace.read_bytes(arg, &mut new[..8]).map_err(efault)?;
            host::ioctl_ptr(raw, req, &mut new)?;
            let pgrp = pty.pgrp(alive(m, p));
            if old[..8] != new[..8] && pgrp != 0 {
                let info = SigInfo { code: SI_KERNEL, ..Default::default() };
                m.signal_group(p, pgrp, SIGWINCH, info);
            }
            Ok(0)
        }
        _ => {
            if let Some(size) = host::tty_arg_size(req) {
                // Requests that write their argument are `_IOR` ones, and the get requests.
                let out = req >> 30 == 2 || [TCGETS, TIOCGWINSZ, FIONREAD, TIOCOUTQ, TIOCGETD].contains(&req);
                let mut buf = [0u8; 64];
                if !out {
                    p.aspace.read_bytes(arg, &mut buf[..size]).map_err(efault)?;
                }
                let r = host::ioctl_ptr(raw, req, &mut buf)?;
                if out {
                    p.aspace.write_bytes(arg, &buf[..size]).map_err(efault)?;
                }
                return Ok(r);
            }
            match host::ioctl_value(raw, req, arg) {
                Err(ENOTTY) => {
                    *m.ioctl_unknown.entry(req).or_default() += 1;
                    Err(ENOTTY)
                }
                r => r,
            }
        }
    }
}

/// `TIOCSCTTY`: makes `pty` the controlling terminal of the caller's session (Linux's
/// `tiocsctty`): the caller must lead its session and have none yet; a terminal that is
/// another session's is taken from it only with `arg` 1 and `CAP_SYS_ADMIN`; without
/// `CAP_SYS_ADMIN` the descriptor must be open for reading.
fn set_ctty(m: &mut FileCtx<'_>, p: &mut Process, pty: &Rc<Pty>, arg: u32, raw: i32) -> SysResult {
    let leader = p.leads_session();
    let current = m.ptys.ctty(p.sid, alive(m, p));
    if leader && current.as_ref().is_some_and(|c| Rc::ptr_eq(c, pty)) {
        return Ok(0);
    }
    if !leader || current.is_some() {
        return Err(EPERM);
    }
    let admin = p.attrs.caps.has(Caps::SYS_ADMIN);
    if pty.session(alive(m, p)).is_some() && !(arg == 1 && admin) {
        return Err(EPERM);
    }
    let readable = host::getfl(raw).is_ok_and(|fl| fl & libc::O_ACCMODE != libc::O_WRONLY);
    if !readable && !admin {
        return Err(EPERM);
    }
    pty.set_session(p.sid, p.pgid);
    Ok(0)
}

/// Linux's `__tty_check_change`: whether the caller may go on reading (`sig`
/// `SIGTTIN`) or writing or changing the settings (`SIGTTOU`) of `pty`. Only a process
/// whose controlling terminal it is, in a group other than its foreground one, is
/// checked: with `sig` blocked or ignored a read is `EIO` and anything else goes on; in
/// an orphaned process group it is `EIO`; else the caller's whole group gets `sig` and
/// the call waits for it (interrupted by a handler, `EINTR` or a re-run under
/// `SA_RESTART`; after a stop and `SIGCONT` it is run again, checked again).
fn check_change(m: &mut FileCtx<'_>, p: &mut Process, pty: &Rc<Pty>, sig: i32) -> Result<(), Errno> {
    if !in_background(m, p, pty) {
        return Ok(());
    }
    let bit = 1u64 << (sig - 1);
    if p.sigmask & bit != 0 || p.sigactions[(sig - 1) as usize].handler == SIG_IGN {
        return if sig == SIGTTIN { Err(EIO) } else { Ok(()) };
    }
    if crate::process::pgrp_orphaned(p, m.sys().procs) {
        return Err(EIO);
    }
    m.signal_group(p, p.pgid, sig, SigInfo { code: SI_KERNEL, ..Default::default() });
    let now = std::time::Instant::now();
    super::wait::block_on(p, Vec::new(), Some(now), true).map(|_| ())
}

/// Whether `pty` is the caller's controlling terminal, with a foreground process group
/// that is not the caller's.
fn in_background(m: &FileCtx<'_>, p: &Process, pty: &Rc<Pty>) -> bool {
    if !is_ctty(m, p, pty) {
        return false;
    }
    let fg = pty.pgrp(alive(m, p));
    fg != 0 && fg != p.pgid
}

/// The pty end behind guest `fd`, if it is one: the pty, and whether it is the master.
fn pty_of(p: &Process, fd: u32) -> Option<(Rc<Pty>, bool)> {
    match &p.fds.get(fd)?.host.kind {
        FileKind::Pty(PtyEnd { pty, master, .. }) => Some((pty.clone(), *master)),
        _ => None,
    }
}

/// Before a read from guest `fd`: a slave that is the caller's controlling terminal,
/// read from a background process group, sends `SIGTTIN` (see [`check_change`]).
pub(super) fn before_read(m: &mut FileCtx<'_>, p: &mut Process, fd: u32) -> Result<(), Errno> {
    match pty_of(p, fd) {
        Some((pty, false)) => check_change(m, p, &pty, SIGTTIN),
        _ => Ok(()),
    }
}

/// Before a write to guest `fd`: under `TOSTOP`, a slave that is the caller's
/// controlling terminal, written from a background process group, sends `SIGTTOU`
/// (see [`check_change`]).
pub(super) fn before_write(m: &mut FileCtx<'_>, p: &mut Process, fd: u32) -> Result<(), Errno> {
    let Some((pty, false)) = pty_of(p, fd) else { return Ok(()) };
    if !in_background(m, p, &pty) {
        return Ok(());
    }
    let raw = host_fd(p, fd)?;
    let mut t = [0u8; 64];
    match host::ioctl_ptr(raw, TCGETS, &mut t) {
        Ok(_) if le_u32(&t, 12) & TOSTOP != 0 => check_change(m, p, &pty, SIGTTOU),
        _ => Ok(()),
    }
}

/// After `n` bytes of `bufs` were written to guest `fd`: if it is a master, the `ISIG`
/// characters among them signal the terminal's foreground process group (see
/// [`Pty::input_signals`]; Linux's `kill_pgrp` from `isig`).
pub(super) fn master_wrote(m: &mut FileCtx<'_>, p: &mut Process, fd: u32, bufs: &[InPlace], n: u32) {
    let Some((pty, true)) = pty_of(p, fd) else { return };
    let Ok(raw) = host_fd(p, fd) else { return };
    let mut bytes = Vec::with_capacity(n as usize);
    let mut left = n as usize;
    for b in bufs {
        let take = left.min(b.len());
        let at = bytes.len();
        bytes.resize(at + take, 0);
        if p.aspace.read_bytes(b.va(&p.aspace), &mut bytes[at..]).is_err() {
            return;
        }
        left -= take;
    }
    let pgrp = pty.pgrp(alive(m, p));
    for sig in pty.input_signals(raw, &bytes) {
        if pgrp != 0 {
            m.signal_group(p, pgrp, sig, SigInfo { code: SI_KERNEL, ..Default::default() });
        }
    }
}
