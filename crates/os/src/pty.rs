//! Pseudo-terminals (`/dev/ptmx`, `/dev/pts`), backed by the host's.
//!
//! Opening `/dev/ptmx` opens a new host pty master; the guest's descriptor holds it (a
//! [`FileKind::Pty`] end), non-blocking on the host like morph's own pipes, so that a
//! read or write that would wait blocks only the guest process, in the scheduler, and
//! `poll`, `select` and `epoll` see the host's readiness (`POLLHUP` and `EIO` on the
//! master once every slave is closed come from the host as they are). The line
//! discipline, termios, window size, packet mode and the slave's lock are the host's.
//!
//! Each machine numbers its ptys itself, from 0, the lowest free number first (as
//! Linux's devpts does): a number is what `TIOCGPTN` says, the name under `/dev/pts`,
//! what `readlink("/proc/self/fd/N")` says of a slave, and the minor of its device
//! number (136:N), so that glibc's `ptsname`, `ttyname` and `isatty` agree. The host's
//! own numbers, and the host's other ptys, are never shown: `/dev/pts` lists only this
//! machine's ptys whose master is open. A number is free again once the master and
//! every slave are closed.
//!
//! Sessions and process groups are guest ones, which the host cannot know: each pty
//! keeps the guest session it is the controlling terminal of and that session's
//! foreground process group, and a guest session has at most one. A session whose
//! leader has exited has no controlling terminal any more (pids are never reused in a
//! machine, so the leader's pid names the session); at the leader's exit the
//! terminal's foreground group gets `SIGHUP`, as Linux sends it for a pty (see
//! `Machine::reap`). The host pty is never anyone's
//! controlling terminal (it is always opened with `O_NOCTTY`): the host's job control
//! never acts on guests.
//!
//! The line discipline's signals are therefore morph's to send. The host's termios is
//! the guest's, `ISIG` included, so the host pty itself drops a `VINTR`, `VQUIT` or
//! `VSUSP` character from the input, echoes it (`^C`) and flushes the queues (unless
//! `NOFLSH`); the signal it would send has no process group to go to. morph scans
//! what guests write to a master for those characters ([`Pty::input_signals`]) and
//! signals the foreground group. Closing the master hangs the slave up: the host makes
//! its reads end and its writes fail, and morph detaches the session and has its
//! leader signalled ([`Ptys::take_hangups`]). Job control (`SIGTTIN`, `SIGTTOU`) is in
//! `syscall::tty`.

use std::cell::{Cell, RefCell};
use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::rc::{Rc, Weak};

use crate::host;
use crate::linux::{EIO, Pid};
use crate::vfs::Errno;

/// The device number of morph's `/dev/pts` (devpts).
pub const PTS_DEV: u64 = 24;
/// The major device number of pty slaves (Unix98).
const SLAVE_MAJOR: u32 = 136;

/// One pseudo-terminal of the machine.
#[derive(Debug)]
pub struct Pty {
    /// Its number in this machine.
    pub n: u32,
    /// The host slave, opened `O_PATH` (which does not open the terminal): its metadata,
    /// and what opening `/dev/pts/N` opens again.
    slave: OwnedFd,
    /// The master is open (while it is, `/dev/pts/N` exists).
    master_open: Cell<bool>,
    /// The guest session it is the controlling terminal of (0: none).
    session: Cell<Pid>,
    /// That session's foreground process group.
    pgrp: Cell<Pid>,
    /// The last input byte written to the master was the slave's `VLNEXT` in canonical
    /// mode: the host's line discipline takes the next one literally.
    lnext: Cell<bool>,
    /// The machine's list of sessions to hang up (see [`Ptys::take_hangups`]).
    hangups: Rc<RefCell<Vec<Pid>>>,
}

/// What a guest descriptor of a pty holds beside the host descriptor: which pty, and
/// which end.
#[derive(Debug)]
pub struct PtyEnd {
    /// The pty.
    pub pty: Rc<Pty>,
    /// The master end (else the slave).
    pub master: bool,
    /// A slave opened as `/dev/tty` (the caller's controlling terminal): its name and
    /// metadata are `/dev/tty`'s, as on Linux.
    pub via_tty: bool,
}

impl Drop for PtyEnd {
    fn drop(&mut self) {
        // There is one open file description of a master: its end is the master's close,
        // which hangs the slave up (Linux's `pty_close` → `tty_vhangup`): the session it
        // controls loses it, and its leader is told (see `Ptys::take_hangups`).
        if self.master {
            self.pty.master_open.set(false);
            let sid = self.pty.session.get();
            if sid != 0 {
                self.pty.set_session(0, 0);
                self.pty.hangups.borrow_mut().push(sid);
            }
        }
    }
}

/// The machine's pseudo-terminals, by number.
#[derive(Default)]
pub struct Ptys {
    slots: RefCell<Vec<Weak<Pty>>>,
    /// Sessions whose terminal was hung up by its master's close, whose leaders are yet
    /// to get `SIGHUP` and `SIGCONT`.
    hangups: Rc<RefCell<Vec<Pid>>>,
}

impl Ptys {
    /// Opens a new pty (`/dev/ptmx`): the host master, opened with the guest's `open`
    /// flags `host_flags` (without close-on-exec), and its pty.
    pub fn create(&self, host_flags: i32) -> Result<(OwnedFd, Rc<Pty>), Errno> {
        let flags = host_flags | libc::O_NOCTTY | libc::O_NONBLOCK | libc::O_CLOEXEC;
        let master = host::open(c"/dev/ptmx", flags, 0)?;
        let mut b = [0u8; 64];
        host::ioctl_ptr(master.as_raw_fd(), libc::TIOCGPTN as u32, &mut b)?;
        let host_n = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        let path = CString::new(format!("/dev/pts/{host_n}")).map_err(|_| EIO)?;
        let slave = host::open(&path, libc::O_PATH | libc::O_CLOEXEC, 0)?;
        let mut slots = self.slots.borrow_mut();
        let n = match slots.iter().position(|w| w.strong_count() == 0) {
            Some(i) => i,
            None => {
                slots.push(Weak::new());
                slots.len() - 1
            }
        };
        let pty = Rc::new(Pty {
            n: n as u32,
            slave,
            master_open: Cell::new(true),
            session: Cell::new(0),
            pgrp: Cell::new(0),
            lnext: Cell::new(false),
            hangups: self.hangups.clone(),
        });
        slots[n] = Rc::downgrade(&pty);
        Ok((master, pty))
    }

    /// Pty `n`, if its master is open (`/dev/pts/N` exists).
    pub fn get(&self, n: u32) -> Option<Rc<Pty>> {
        self.slots.borrow().get(n as usize)?.upgrade().filter(|p| p.master_open.get())
    }

    /// The numbers `/dev/pts` lists.
    pub fn list(&self) -> Vec<u32> {
        (0..self.slots.borrow().len() as u32).filter(|&n| self.get(n).is_some()).collect()
    }

    /// Session `sid`'s leader has exited: its controlling terminal, if it has one, is no
    /// longer anyone's; the foreground process group it had (to hang up), if any.
    pub fn leader_exited(&self, sid: Pid) -> Option<Pid> {
        let slots = self.slots.borrow();
        let pty = slots.iter().filter_map(Weak::upgrade).find(|p| p.session.get() == sid)?;
        let pgrp = pty.pgrp.get();
        pty.set_session(0, 0);
        (pgrp != 0).then_some(pgrp)
    }

    /// The sessions whose controlling terminal was hung up since the last call, because
    /// its master was closed: their leaders get `SIGHUP` then `SIGCONT` (Linux's
    /// `tty_signal_session_leader`; see `Machine::deliver_hangups`).
    pub fn take_hangups(&self) -> Vec<Pid> {
        std::mem::take(&mut *self.hangups.borrow_mut())
    }

    /// The controlling terminal of session `sid` (`alive` tells which processes live).
    pub fn ctty(&self, sid: Pid, alive: impl Fn(Pid) -> bool) -> Option<Rc<Pty>> {
        let slots = self.slots.borrow();
        slots.iter().filter_map(Weak::upgrade).find(|p| p.session(&alive) == Some(sid))
    }
}

impl Pty {
    /// The session it is the controlling terminal of: none once that session's leader
    /// has exited (`alive` tells which processes live).
    pub fn session(&self, alive: impl Fn(Pid) -> bool) -> Option<Pid> {
        let s = self.session.get();
        (s != 0 && alive(s)).then_some(s)
    }

    /// Its session's foreground process group (0 if it is no session's terminal).
    pub fn pgrp(&self, alive: impl Fn(Pid) -> bool) -> Pid {
        if self.session(alive).is_some() { self.pgrp.get() } else { 0 }
    }

    /// Makes it the controlling terminal of session `sid` with foreground group `pgrp`
    /// (`sid` 0: of none).
    pub fn set_session(&self, sid: Pid, pgrp: Pid) {
        self.session.set(sid);
        self.pgrp.set(pgrp);
    }

    /// Its master is closed: a slave is hung up (Linux's `hung_up_tty_fops`: reads
    /// end, writes and requests fail; the host's slave says so for what reaches it).
    pub fn hung_up(&self) -> bool {
        !self.master_open.get()
    }

    /// Sets the foreground process group.
    pub fn set_pgrp(&self, pgrp: Pid) {
        self.pgrp.set(pgrp);
    }

    /// The signals `bytes`, just written to the master (the slave's input), make the line
    /// discipline send to the foreground process group, in order: with `ISIG` in the
    /// slave's termios, each `VINTR`, `VQUIT` or `VSUSP` character gives `SIGINT`,
    /// `SIGQUIT` or `SIGTSTP` (Linux's `n_tty_receive_char_special`, after `ISTRIP`;
    /// a character after `VLNEXT` in canonical mode with `IEXTEN` is data; `VSTART` and
    /// `VSTOP` under `IXON` come first). The host pty, whose termios is the guest's,
    /// drops the character, echoes it and flushes the queues itself; its own signal
    /// goes nowhere, since it is no host process's controlling terminal.
    /// `raw` is the host master.
    pub fn input_signals(&self, raw: RawFd, bytes: &[u8]) -> Vec<i32> {
        const VINTR: usize = 0;
        const VQUIT: usize = 1;
        const VSTART: usize = 8;
        const VSTOP: usize = 9;
        const VSUSP: usize = 10;
        const VLNEXT: usize = 15;
        let mut t = [0u8; 64];
        if bytes.is_empty() || host::ioctl_ptr(raw, libc::TCGETS as u32, &mut t).is_err() {
            return Vec::new();
        }
        let flag = |i: usize| u32::from_le_bytes([t[i], t[i + 1], t[i + 2], t[i + 3]]);
        let (iflag, lflag) = (flag(0), flag(12));
        let cc = |i: usize| t[17 + i];
        let (isig, icanon, iexten) = (lflag & libc::ISIG != 0, lflag & libc::ICANON != 0, lflag & libc::IEXTEN != 0);
        let (istrip, ixon) = (iflag & libc::ISTRIP != 0, iflag & libc::IXON != 0);
        let mut lnext = self.lnext.get();
        let mut sigs = Vec::new();
        for &b in bytes {
            let c = if istrip { b & 0x7f } else { b };
            if std::mem::take(&mut lnext) {
                continue;
            }
            if ixon && (c == cc(VSTART) || c == cc(VSTOP)) {
                continue;
            }
            if isig && c == cc(VINTR) {
                sigs.push(libc::SIGINT);
            } else if isig && c == cc(VQUIT) {
                sigs.push(libc::SIGQUIT);
            } else if isig && c == cc(VSUSP) {
                sigs.push(libc::SIGTSTP);
            } else if icanon && iexten && c == cc(VLNEXT) {
                lnext = true;
            }
        }
        self.lnext.set(lnext);
        sigs
    }

    /// Opens the host slave with the guest's `open` flags `host_flags` (without
    /// close-on-exec), non-blocking on the host.
    pub fn open_slave(&self, host_flags: i32) -> Result<OwnedFd, Errno> {
        let path = host::fd_path(self.slave.as_raw_fd());
        host::open(&path, host_flags | libc::O_NOCTTY | libc::O_NONBLOCK | libc::O_CLOEXEC, 0)
    }

    /// The metadata of the slave (`/dev/pts/N`) as the guest sees it: the host's, with
    /// morph's device and inode numbers (devpts gives pty N inode N + 3).
    pub fn slave_stat(&self, fd: Option<RawFd>) -> Result<libc::stat, Errno> {
        let mut st = host::fstat(fd.unwrap_or(self.slave.as_raw_fd()))?;
        st.st_dev = PTS_DEV;
        st.st_ino = u64::from(self.n) + 3;
        st.st_rdev = libc::makedev(SLAVE_MAJOR, self.n);
        Ok(st)
    }
}
