//! Open files: what a guest descriptor holds (an open file description over a host
//! descriptor, with the guest's view of it), the descriptor table, and the state of
//! morph's own `/proc` files and directories (their behaviour is in [`crate::special`]).

use std::cell::{Cell, OnceCell, RefCell};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::rc::Rc;

use morph_mem::FileKey;

use crate::host;
use crate::linux::{O_LARGEFILE, Pid};

/// What kind of object an open file description is, where morph must treat it
/// specially (see [`crate::special`]).
#[derive(Debug)]
pub enum FileKind {
    /// An ordinary host descriptor.
    Host,
    /// A host device served by name (`/dev/null`, ...): used as it is, but its mode and
    /// times are the host's and cannot be changed.
    Device(&'static str),
    /// `/dev/urandom` or `/dev/random` (the name): reads come from the machine's seeded
    /// RNG; the host descriptor is the host's device, for everything else.
    Random(&'static str),
    /// A `/proc` file: text made at its first read, held in a memfd the descriptor
    /// reads.
    Snapshot(Snapshot),
    /// A directory of morph's own (`/dev`, `/proc`, ...): listed by morph; the host
    /// descriptor is an empty memfd.
    Dir(DirState),
    /// A symbolic link of morph's own (`/proc/self`, `/proc/<pid>/fd/N`, `/dev/stdin`,
    /// ...) opened itself (`O_PATH | O_NOFOLLOW`), as Linux opens any link: `fstat` and
    /// `readlinkat(fd, "")` show the link. The host descriptor is an `O_PATH` one of an
    /// empty memfd, which reads, writes, seeks, maps and polls nothing (`EBADF`,
    /// `POLLNVAL`), as Linux's `O_PATH` descriptors do.
    Link(LinkState),
    /// An end of one of the machine's pseudo-terminals (see [`crate::pty`]): the host
    /// descriptor is the host pty's, non-blocking.
    Pty(crate::pty::PtyEnd),
}

/// An open file description: a host descriptor plus the state the guest sees on it.
/// Shared by `dup`s and across `fork`, as Linux shares a `struct file`.
pub struct OpenFile {
    fd: OwnedFd,
    /// The guest's `O_NONBLOCK` (the host descriptor of a morph-made pipe or socket is
    /// always non-blocking, so that no guest call can stall the machine).
    pub nonblock: Cell<bool>,
    /// The host descriptor is non-blocking whatever the guest asked.
    pub host_nonblock: bool,
    /// The host descriptor may block on read or write (pipe, socket, FIFO, terminal,
    /// character device): morph polls it before a blocking call.
    pub pollable: bool,
    /// A socket morph did not make (inherited, or received from a host process): its
    /// host description is shared with whoever made it and keeps its blocking mode, so
    /// every `read` and `write` on it asks the host not to wait (`MSG_DONTWAIT`) and a
    /// transfer that would block waits in the scheduler instead.
    pub dontwait: bool,
    /// For a regular file, its (device, inode): which page-cache file reads and writes
    /// through this descriptor must stay coherent with (found once, at open).
    pub file: Option<FileKey>,
    /// Special handling.
    pub kind: FileKind,
    /// What morph keeps beside a socket (unused for other files).
    pub socket: SocketState,
    /// What a guest `mmap` of it needs that cannot change while it is open, found at
    /// the first one: its access mode (`O_ACCMODE`, which `fcntl` cannot change) and
    /// its guest path (the name `/proc/self/maps` shows). A dynamic program's loader
    /// maps each library four or five times through one descriptor; each asked the host
    /// again (a `readlink` of `/proc/self/fd/N` and an `F_GETFL`). The name is the path
    /// at the first `mmap`, as each mapping's name was the path at its own `mmap` before
    /// (Linux shows the path when `maps` is read: a file renamed or deleted between two
    /// mappings keeps its first name here).
    pub map_info: OnceCell<(i32, Rc<str>)>,
    /// For a descriptor morph serves itself (a signalfd, a pidfd): what it refers to,
    /// and the readiness its host descriptor shows.
    pub served: Option<Served>,
    /// The flags of the guest's open that `F_GETFL` shows and the host description may
    /// not hold: `O_LARGEFILE` (morph, a 64-bit process, has it on everything it opens;
    /// Linux forces it only for 64-bit processes, so a 32-bit one sees it where it asked
    /// for it, `openat2` adds it, or the kernel sets it itself, as for a memfd, and
    /// never on a pipe or a socket), and for morph's own objects, whose host descriptors
    /// are memfds, `O_DIRECTORY` and `O_NOFOLLOW` as the guest gave them.
    pub open_flags: u32,
    /// Who gets its signal-driven I/O signals, and which (`F_SETOWN`, `F_SETSIG`; see
    /// [`crate::sigio`]).
    pub fown: Fown,
}

/// The owner of an open file description's I/O signals, as Linux's `struct
/// fown_struct` keeps it: the owner (a thread, a process or a process group, and the
/// ids of who set it), the signal (`F_SETSIG`, 0: a plain `SIGIO`), and the guest
/// descriptors the signals name (`si_fd`): the one `O_ASYNC` was set through, and the
/// one a directory notification was asked through.
#[derive(Debug, Default)]
pub struct Fown {
    /// Whom the signals go to.
    pub owner: Cell<Owner>,
    /// `F_SETSIG`'s signal (0: a plain `SIGIO`, without the descriptor).
    pub sig: Cell<u32>,
    /// The descriptor `O_ASYNC` was turned on through.
    pub async_fd: Cell<Option<u32>>,
    /// The descriptor the last `F_NOTIFY` was asked through.
    pub notify_fd: Cell<Option<u32>>,
}

/// Whom an owner names (`F_OWNER_TID`, `F_OWNER_PID`, `F_OWNER_PGRP`). A fresh
/// description's owner is thread 0, as Linux's zeroed `fown_struct` reads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OwnerKind {
    /// One thread (`F_OWNER_TID`).
    #[default]
    Thread,
    /// A process (`F_OWNER_PID`, a positive `F_SETOWN`).
    Process,
    /// A process group (`F_OWNER_PGRP`, a negative `F_SETOWN`).
    Group,
}

/// An owner: whom it names (`id` 0: no one), and the real and effective user ids of
/// the process that set it (which of the targets may be signalled, `sigio_perm`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Owner {
    /// Whom `id` names.
    pub kind: OwnerKind,
    /// The thread, process or group id (0: no one).
    pub id: u32,
    /// The real user id of who set it.
    pub uid: u32,
    /// The effective user id of who set it.
    pub euid: u32,
}

/// What morph keeps beside a host socket, shared like the socket itself (see
/// `syscall::net`).
#[derive(Debug, Default)]
pub struct SocketState {
    /// A blocking `connect` left the host socket connecting (`EINPROGRESS`): the call,
    /// re-run when the socket is writable, returns the connection's result.
    pub connecting: Cell<bool>,
    /// For an `AF_UNIX` socket bound to a path: the directory it was bound in, held
    /// open so that the host name of the socket (`/proc/self/fd/N/name`) stays unique
    /// while the socket lives.
    pub bound_dir: OnceCell<OwnedFd>,
    /// For a netlink socket: morph answers it itself (see `syscall::net::netlink`); the
    /// host socket is one end of a host `AF_UNIX` datagram pair, the other end here.
    pub netlink: Option<Rc<NetlinkState>>,
    /// The numbered long abstract names the socket is bound to (or was accepted from a
    /// socket bound to) or connected to: each keeps its number in the machine's table
    /// while the socket lives (see `kernel::sockets::Net::abstract_hold`).
    pub names: RefCell<Vec<Rc<NameHold>>>,
}

/// A guest netlink socket (`NETLINK_ROUTE`), served by morph: the host descriptor the
/// guest holds is one end of an `AF_UNIX` datagram pair; morph answers each request by
/// sending the replies on the other end (`replies`), so they queue on the guest's end,
/// which reads, peeks, truncates and shows readiness as a netlink socket does.
#[derive(Debug)]
pub struct NetlinkState {
    /// The type the guest asked for (`SOCK_RAW` or `SOCK_DGRAM`).
    pub ty: u32,
    /// The protocol (`NETLINK_ROUTE`).
    pub protocol: u32,
    /// morph's end of the pair.
    pub replies: OwnedFd,
    /// The port id, 0 until bound (explicitly or at the first send).
    pub port: Cell<u32>,
    /// The multicast groups joined (bit `n - 1` for group `n`), once the socket has
    /// bound to or joined any (Linux then keeps the groups' words).
    pub groups: Cell<Option<u64>>,
    /// The `NETLINK_*` socket options set, as bits `1 << option`.
    pub options: Cell<u32>,
    /// A reply was dropped for want of room: the next receive fails with `ENOBUFS`.
    pub overrun: Cell<bool>,
    /// Replies were dropped and the guest has not emptied its queue since: later ones
    /// are dropped too (Linux's `NETLINK_S_CONGESTED`).
    pub congested: Cell<bool>,
    /// The machine's netlink port ids, to bind in.
    pub ports: Rc<RefCell<NetlinkPorts>>,
}

/// The machine's netlink port ids.
#[derive(Debug)]
pub struct NetlinkPorts {
    /// Bound port id → its socket (a port whose socket is gone is free).
    pub bound: std::collections::HashMap<u32, std::rc::Weak<NetlinkState>>,
    /// The next negative port id an autobind tries when the process id is taken (as
    /// Linux's, from -4096 down).
    pub rover: i32,
}

impl Default for NetlinkPorts {
    fn default() -> NetlinkPorts {
        NetlinkPorts { bound: std::collections::HashMap::new(), rover: -4096 }
    }
}

/// A hold on the number of a long abstract `AF_UNIX` name in the machine's table (see
/// `kernel::sockets::Net`): the table forgets a name once no socket holds it.
#[derive(Debug)]
pub struct NameHold {
    /// The name's number.
    pub id: usize,
}

impl OpenFile {
    /// Wraps a host descriptor, finding out what it is.
    pub fn new(fd: OwnedFd) -> OpenFile {
        let raw = fd.as_raw_fd();
        let file = FileKey::of_fd(raw).ok().flatten();
        let kind = if file.is_none() { host::fstat(raw).map_or(0, |st| st.st_mode & libc::S_IFMT) } else { 0 };
        let pollable = matches!(kind, libc::S_IFIFO | libc::S_IFSOCK | libc::S_IFCHR);
        let nonblock = host::getfl(raw).is_ok_and(|fl| fl & libc::O_NONBLOCK != 0);
        OpenFile {
            fd,
            nonblock: Cell::new(nonblock),
            host_nonblock: false,
            pollable,
            dontwait: kind == libc::S_IFSOCK,
            file,
            kind: FileKind::Host,
            socket: SocketState::default(),
            map_info: OnceCell::new(),
            served: None,
            open_flags: 0,
            fown: Fown::default(),
        }
    }

    /// Wraps a host descriptor morph made non-blocking (its own pipes and sockets); the
    /// guest sees `guest_nonblock`.
    pub fn nonblocking(fd: OwnedFd, guest_nonblock: bool) -> OpenFile {
        if let Ok(fl) = host::getfl(fd.as_raw_fd()) {
            let _ = host::setfl(fd.as_raw_fd(), fl | libc::O_NONBLOCK);
        }
        OpenFile {
            fd,
            nonblock: Cell::new(guest_nonblock),
            host_nonblock: true,
            pollable: true,
            dontwait: false,
            file: None,
            kind: FileKind::Host,
            socket: SocketState::default(),
            map_info: OnceCell::new(),
            served: None,
            open_flags: 0,
            fown: Fown::default(),
        }
    }

    /// Wraps a descriptor morph inherited from the host (the guest's 0-2). A pipe,
    /// FIFO or terminal is opened again through its `/proc/self/fd` link: a new open
    /// file description of the same object, made non-blocking on the host like morph's
    /// own pipes, so that a slow reader or writer on the host side blocks only the
    /// guest process that waits for it, in the scheduler (and `--timeout` can fire);
    /// the host's description, shared with whoever started morph, keeps its flags.
    /// A socket cannot be opened again: it is used as it is, with `MSG_DONTWAIT` on each
    /// transfer (`dontwait`). Anything else (a regular file, `/dev/null`), or an object
    /// that cannot be opened again, is used as it is. The guest sees the `O_LARGEFILE`
    /// of the host's description, which whoever opened it chose (see `open_flags`).
    pub fn inherited(fd: OwnedFd) -> OpenFile {
        let raw = fd.as_raw_fd();
        let (Ok(st), Ok(fl)) = (host::fstat(raw), host::getfl(raw)) else {
            return OpenFile::new(fd);
        };
        let mut f = OpenFile::inherited_as(fd, st.st_mode & libc::S_IFMT, fl);
        f.open_flags = fl as u32 & O_LARGEFILE;
        f
    }

    /// [`OpenFile::inherited`] for a host descriptor of file type `kind` and flags `fl`.
    fn inherited_as(fd: OwnedFd, kind: u32, fl: i32) -> OpenFile {
        let raw = fd.as_raw_fd();
        if !(kind == libc::S_IFIFO || (kind == libc::S_IFCHR && host::isatty(raw))) {
            return OpenFile::new(fd);
        }
        let Ok(via) = std::ffi::CString::new(format!("/proc/self/fd/{raw}")) else {
            return OpenFile::new(fd);
        };
        let flags = (fl & (libc::O_ACCMODE | libc::O_APPEND)) | libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC;
        match host::open(&via, flags, 0) {
            Ok(again) => OpenFile::nonblocking(again, fl & libc::O_NONBLOCK != 0),
            Err(_) => OpenFile::new(fd), // e.g. a pipe whose reader has gone (ENXIO)
        }
    }

    /// A descriptor morph serves itself (see [`Served`]), guest `O_NONBLOCK` if
    /// `guest_nonblock`.
    pub fn served(what: ServedKind, guest_nonblock: bool) -> Result<OpenFile, crate::vfs::Errno> {
        let (event, writer) = host::pipe2(libc::O_NONBLOCK | libc::O_CLOEXEC)?;
        let epoll = host::epoll_create()?;
        let mut ev = [0u8; 12];
        ev[..4].copy_from_slice(&(libc::EPOLLIN as u32).to_le_bytes());
        host::epoll_ctl(epoll.as_raw_fd(), libc::EPOLL_CTL_ADD, event.as_raw_fd(), Some(ev))?;
        let mut f = OpenFile::nonblocking(epoll, guest_nonblock);
        // Never readable or writable through the host: a read is morph's, a write
        // fails as the host's epoll refuses it (`EINVAL`, as Linux's objects do).
        f.pollable = false;
        SERVED.with(|n| n.set(n.get() + 1));
        f.served = Some(Served { what, event, writer: RefCell::new(Some(writer)), ready: Cell::new(false) });
        Ok(f)
    }

    /// The guest's `O_NONBLOCK`.
    pub fn guest_nonblock(&self) -> bool {
        self.nonblock.get()
    }

    /// The host descriptor whose readiness `poll` and a guest epoll instance watch for
    /// this one: a served descriptor's pipe (see [`Served`]), which also shows a
    /// hang-up; the host descriptor itself otherwise.
    pub fn poll_fd(&self) -> RawFd {
        self.served.as_ref().map_or(self.fd.as_raw_fd(), |s| s.event.as_raw_fd())
    }

    /// The flags `F_GETFL` shows the guest: the host description's, with the guest's own
    /// `O_NONBLOCK` where the host descriptor is always non-blocking, and morph's
    /// `O_LARGEFILE` replaced by the guest's (see `open_flags`).
    pub fn guest_flags(&self) -> Result<u32, crate::vfs::Errno> {
        let mut fl = (host::getfl(self.fd.as_raw_fd())? as u32 & !O_LARGEFILE) | self.open_flags;
        if self.host_nonblock {
            fl &= !(libc::O_NONBLOCK as u32);
            if self.guest_nonblock() {
                fl |= libc::O_NONBLOCK as u32;
            }
        }
        Ok(fl)
    }

    /// Whether it is a pidfd (see [`Served`]).
    pub fn is_pidfd(&self) -> bool {
        matches!(self.served, Some(Served { what: ServedKind::Pid { .. }, .. }))
    }
}

/// A descriptor morph serves itself: a signalfd (`syscall/signal.rs`) or a pidfd
/// (`syscall/proc.rs`). What it reads (a signalfd's `signalfd_siginfo` records) is
/// morph's, and so is when it is ready, which depends on guest state (the reader's
/// pending signals, the process the pidfd refers to). Morph shows that readiness in a
/// host pipe: one byte in it exactly while the object is ready ([`Served::set_ready`]),
/// its write end closed once a pidfd's process is reaped ([`Served::hang_up`]: the read
/// end then shows `POLLHUP`, as Linux's pidfd does), both brought up to date before a
/// guest looks (`syscall::refresh_served`). `poll` and `ppoll` poll the pipe's read end,
/// and a guest epoll instance (a host one) watches it in the descriptor's stead
/// ([`OpenFile::poll_fd`]), so both see `POLLIN` and `POLLHUP` as Linux reports them.
/// The host descriptor the guest holds is an epoll instance watching that read end
/// (readable while it is ready or hung up, for `select`): it is never writable, refuses
/// `write` with `EINVAL`, `pread` with `ESPIPE` and seeks as a no-op, as a signalfd does.
pub struct Served {
    /// What it refers to.
    pub what: ServedKind,
    /// The read end of the host pipe that shows the readiness: one byte in it exactly
    /// while `ready`.
    event: OwnedFd,
    /// The pipe's write end, until a pidfd's process has been reaped (or its thread is
    /// gone): closing it makes the read end show `POLLHUP` beside `POLLIN`.
    writer: RefCell<Option<OwnedFd>>,
    ready: Cell<bool>,
}

/// What a served descriptor refers to.
pub enum ServedKind {
    /// A signalfd: the signals it reads (never `SIGKILL` or `SIGSTOP`), changed by
    /// `signalfd4` on it.
    Signal(Cell<u64>),
    /// A pidfd: the process (thread group) `pid`, or with `thread` (`PIDFD_THREAD`) the
    /// thread `pid`.
    Pid {
        /// The process or thread id (pids are never reused in a machine).
        pid: Pid,
        /// `PIDFD_THREAD`.
        thread: bool,
    },
}

thread_local! {
    /// How many served descriptors exist (in this thread's machines): when none do,
    /// there is nothing to bring up to date.
    static SERVED: Cell<usize> = const { Cell::new(0) };
}

/// Whether any served descriptor exists.
pub fn any_served() -> bool {
    SERVED.with(Cell::get) > 0
}

impl Served {
    /// Makes the host pipe readable or not (an edge only when this changes).
    pub fn set_ready(&self, ready: bool) {
        if self.ready.get() == ready {
            return;
        }
        let done = if ready {
            match &*self.writer.borrow() {
                Some(w) => host::write(w.as_raw_fd(), &[1]).is_ok(),
                None => false, // hung up: never ready again
            }
        } else {
            let mut b = [0u8; 1];
            // Non-blocking; an empty pipe (never, while `ready`) reads as EAGAIN.
            host::read(self.event.as_raw_fd(), &mut b).is_ok()
        };
        if done {
            self.ready.set(ready);
        }
    }

    /// Hangs the host pipe up for good (a pidfd's process reaped, its thread gone):
    /// `poll` and epoll see `POLLHUP`, with `POLLIN` while it is ready.
    pub fn hang_up(&self) {
        self.writer.borrow_mut().take();
    }

    /// What `readlink("/proc/<pid>/fd/N")` says of it (Linux's anonymous inodes).
    pub fn link(&self) -> &'static str {
        match self.what {
            ServedKind::Signal(_) => "anon_inode:[signalfd]",
            ServedKind::Pid { .. } => "anon_inode:[pidfd]",
        }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        SERVED.with(|n| n.set(n.get().saturating_sub(1)));
    }
}

impl AsRawFd for OpenFile {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

impl AsRef<OwnedFd> for OpenFile {
    fn as_ref(&self) -> &OwnedFd {
        &self.fd
    }
}

/// A guest descriptor: an open file description and the descriptor's own flag.
#[derive(Clone)]
pub struct FdEntry {
    /// The open file description (shared by `dup`s and across `fork`).
    pub host: Rc<OpenFile>,
    /// `FD_CLOEXEC`.
    pub cloexec: bool,
}

impl FdEntry {
    /// An entry for the host descriptor `host`, noting what kind of file it is.
    pub fn new(host: OwnedFd, cloexec: bool) -> FdEntry {
        FdEntry { host: Rc::new(OpenFile::new(host)), cloexec }
    }

    /// An entry for an open file description.
    pub fn of(file: OpenFile, cloexec: bool) -> FdEntry {
        FdEntry { host: Rc::new(file), cloexec }
    }

    /// The regular file behind the descriptor, if any.
    pub fn file(&self) -> Option<FileKey> {
        self.host.file
    }
}

/// The guest descriptor table.
#[derive(Clone)]
pub struct FdTable {
    slots: Vec<Option<FdEntry>>,
    /// One more than the highest descriptor the process may have: its `RLIMIT_NOFILE`
    /// (the soft limit, at most [`NR_OPEN`]).
    limit: usize,
}

impl Default for FdTable {
    fn default() -> FdTable {
        FdTable { slots: Vec::new(), limit: MAX_FDS }
    }
}

/// The descriptor limit of a table before its process's `RLIMIT_NOFILE` is applied.
pub const MAX_FDS: usize = 1024;

/// Linux's ceiling on `RLIMIT_NOFILE` (`fs.nr_open`'s default).
pub const NR_OPEN: u64 = 1 << 20;

impl FdTable {
    /// Sets the limit to `RLIMIT_NOFILE`'s soft value `soft`: descriptors at or above it
    /// cannot be made (those already open stay, as on Linux).
    pub fn set_limit(&mut self, soft: u64) {
        self.limit = soft.min(NR_OPEN) as usize;
    }
    /// One more than the highest descriptor allowed.
    pub fn limit(&self) -> usize {
        self.limit
    }
    /// One more than the highest descriptor open (0: none).
    pub fn end(&self) -> u32 {
        self.slots.iter().rposition(Option::is_some).map_or(0, |i| i as u32 + 1)
    }
    /// The entry of guest descriptor `fd`.
    pub fn get(&self, fd: u32) -> Option<&FdEntry> {
        self.slots.get(fd as usize).and_then(Option::as_ref)
    }
    /// Mutable entry.
    pub fn get_mut(&mut self, fd: u32) -> Option<&mut FdEntry> {
        self.slots.get_mut(fd as usize).and_then(Option::as_mut)
    }
    /// Installs `e` at the lowest free descriptor ≥ `min`.
    pub fn install(&mut self, e: FdEntry, min: u32) -> Option<u32> {
        let start = min as usize;
        let i = (start..self.limit).find(|&i| self.slots.get(i).is_none_or(Option::is_none))?;
        self.set(i as u32, e);
        Some(i as u32)
    }
    /// Installs `e` at `fd`, closing what was there.
    pub fn set(&mut self, fd: u32, e: FdEntry) {
        let i = fd as usize;
        if self.slots.len() <= i {
            self.slots.resize(i + 1, None);
        }
        self.slots[i] = Some(e);
    }
    /// Closes `fd`.
    pub fn close(&mut self, fd: u32) -> Option<FdEntry> {
        self.slots.get_mut(fd as usize).and_then(Option::take)
    }
    /// The open descriptors, lowest first.
    pub fn iter(&self) -> impl Iterator<Item = (u32, &FdEntry)> {
        self.slots.iter().enumerate().filter_map(|(i, s)| s.as_ref().map(|e| (i as u32, e)))
    }
    /// Closes every close-on-exec descriptor.
    pub fn close_on_exec(&mut self) {
        for s in &mut self.slots {
            if s.as_ref().is_some_and(|e| e.cloexec) {
                *s = None;
            }
        }
    }
}

/// A `/proc` text file: one of `/proc/<pid>`, or a machine-wide one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProcFile {
    /// `maps`: the address space, one line per VMA.
    Maps,
    /// `status`: name, ids, memory and signal state.
    Status,
    /// `stat`: the one-line form `ps` reads.
    Stat,
    /// `cmdline`: the arguments, NUL-terminated.
    Cmdline,
    /// `comm`: the name the process goes by, and a newline.
    Comm,
    /// `personality`: the execution domain and flags, `%08x` and a newline.
    Personality,
    /// `fdinfo/<n>`: descriptor `n`'s position, flags and what its kind adds.
    FdInfo(u32),
    /// A file of `task/<tid>`: one thread's view.
    Task(Pid, TaskFile),
    /// One of the machine-wide files at `/proc`'s top level (its pid is the opener's,
    /// and means nothing).
    Machine(MachineFile),
}

/// A machine-wide file at `/proc`'s top level (see `special::machine`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MachineFile {
    /// `meminfo`: the machine's memory.
    Meminfo,
    /// `uptime`: seconds since the machine started, and idle.
    Uptime,
    /// `loadavg`: load averages, runnable and total threads, the last pid.
    Loadavg,
    /// `stat`: CPU times, context switches, boot time, forks, runnable threads.
    Stat,
    /// A file of `/proc/sys` (see `special::sysctl`).
    Sysctl(SysctlFile),
}

/// A file of morph's read-only `/proc/sys` (see `special::sysctl`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SysctlFile {
    /// `kernel/cap_last_cap`.
    CapLastCap,
    /// `kernel/domainname`.
    Domainname,
    /// `kernel/hostname`.
    Hostname,
    /// `kernel/ngroups_max`.
    NgroupsMax,
    /// `kernel/osrelease`.
    Osrelease,
    /// `kernel/ostype`.
    Ostype,
    /// `kernel/pid_max`.
    PidMax,
    /// `kernel/randomize_va_space`.
    RandomizeVaSpace,
    /// `kernel/threads-max`.
    ThreadsMax,
    /// `kernel/version`.
    Version,
    /// `vm/mmap_min_addr`.
    MmapMinAddr,
    /// `vm/overcommit_memory`.
    OvercommitMemory,
    /// `vm/overcommit_ratio`.
    OvercommitRatio,
}

/// A file of `/proc/<pid>/task/<tid>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskFile {
    /// `stat`, for the thread.
    Stat,
    /// `status`, for the thread.
    Status,
    /// `comm`.
    Comm,
}

/// An open `/proc/<pid>` text file. Its text is made at the first read (or seek, or
/// mmap), as Linux makes it when read: a shell that opens `/proc/self/cmdline` for a
/// command it then execs must show the command's, not its own.
#[derive(Debug)]
pub struct Snapshot {
    /// Its guest path.
    pub path: String,
    pub(crate) pid: Pid,
    pub(crate) file: ProcFile,
    /// A writable descriptor of the memfd, until the text is in it.
    pub(crate) pending: RefCell<Option<OwnedFd>>,
}

/// A directory listing: names and `d_type`s.
pub(crate) type Listing = Vec<(Vec<u8>, u8)>;

/// A symbolic link of morph's own opened itself (see [`FileKind::Link`]).
#[derive(Debug)]
pub struct LinkState {
    /// Its guest path.
    pub path: String,
    /// What it reads as.
    pub target: Vec<u8>,
    /// Its permission bits.
    pub mode: u32,
}

/// The state of an open directory of morph's own.
#[derive(Debug)]
pub struct DirState {
    /// Its canonical guest path.
    pub path: String,
    /// The listing, made at the first `getdents` (so `/proc/self/fd` shows the
    /// descriptor being read, as on Linux).
    pub(crate) entries: RefCell<Option<Listing>>,
    /// Index of the next entry (the `d_off` cookie, and what `lseek` sets).
    pub(crate) pos: Cell<u64>,
}
