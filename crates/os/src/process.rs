//! A guest process: CPU state, address space, file descriptors and the rest of the
//! per-process kernel state.

use std::cell::{Cell, OnceCell};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::rc::Rc;
use std::time::{Duration, Instant};

use morph_cpu::Cpu;
use morph_mem::{AddressSpace, FileKey};

/// Process identifier.
pub type Pid = u32;

/// How a process ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitStatus {
    /// `exit(code)`.
    Code(i32),
    /// Killed by a signal.
    Signal(i32),
}

impl ExitStatus {
    /// The status a shell reports: the code, or 128 + signal.
    pub fn shell_code(self) -> i32 {
        match self {
            ExitStatus::Code(c) => c & 0xff,
            ExitStatus::Signal(s) => 128 + s,
        }
    }
}

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
    Snapshot(crate::special::Snapshot),
    /// A directory of morph's own (`/dev`, `/proc`, ...): listed by morph; the host
    /// descriptor is an empty memfd.
    Dir(crate::special::DirState),
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
    /// For a regular file, its (device, inode): which page-cache file reads and writes
    /// through this descriptor must stay coherent with (found once, at open).
    pub file: Option<FileKey>,
    /// Special handling.
    pub kind: FileKind,
    /// What morph keeps beside a socket (unused for other files).
    pub socket: SocketState,
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
}

impl OpenFile {
    /// Wraps a host descriptor, finding out what it is.
    pub fn new(fd: OwnedFd) -> OpenFile {
        let raw = fd.as_raw_fd();
        let file = FileKey::of_fd(raw).ok().flatten();
        // SAFETY: `stat` is plain data; all-zero is a valid value.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        let pollable = file.is_none()
            // SAFETY: fstat on a descriptor we own into a local struct.
            && unsafe { libc::fstat(raw, &mut st) } == 0
            && matches!(st.st_mode & libc::S_IFMT, libc::S_IFIFO | libc::S_IFSOCK | libc::S_IFCHR);
        // SAFETY: F_GETFL on a descriptor we own.
        let fl = unsafe { libc::fcntl(raw, libc::F_GETFL) };
        let nonblock = fl >= 0 && fl & libc::O_NONBLOCK != 0;
        OpenFile {
            fd,
            nonblock: Cell::new(nonblock),
            host_nonblock: false,
            pollable,
            file,
            kind: FileKind::Host,
            socket: SocketState::default(),
        }
    }

    /// Wraps a host descriptor morph made non-blocking (its own pipes and sockets); the
    /// guest sees `guest_nonblock`.
    pub fn nonblocking(fd: OwnedFd, guest_nonblock: bool) -> OpenFile {
        // SAFETY: fcntl on a descriptor we own.
        unsafe {
            let fl = libc::fcntl(fd.as_raw_fd(), libc::F_GETFL);
            libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, fl | libc::O_NONBLOCK);
        }
        OpenFile {
            fd,
            nonblock: Cell::new(guest_nonblock),
            host_nonblock: true,
            pollable: true,
            file: None,
            kind: FileKind::Host,
            socket: SocketState::default(),
        }
    }

    /// Wraps a descriptor morph inherited from the host (the guest's 0-2). A pipe,
    /// FIFO or terminal is opened again through its `/proc/self/fd` link: a new open
    /// file description of the same object, made non-blocking on the host like morph's
    /// own pipes, so that a slow reader or writer on the host side blocks only the
    /// guest process that waits for it, in the scheduler (and `--timeout` can fire);
    /// the host's description, shared with whoever started morph, keeps its flags.
    /// Anything else (a regular file, a socket, `/dev/null`), or an object that cannot
    /// be opened again, is used as it is.
    pub fn inherited(fd: OwnedFd) -> OpenFile {
        let raw = fd.as_raw_fd();
        // SAFETY: `stat` is plain data; all-zero is a valid value.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: fstat and F_GETFL on a descriptor we own; isatty takes an integer.
        let (ok, fl, tty) =
            unsafe { (libc::fstat(raw, &mut st) == 0, libc::fcntl(raw, libc::F_GETFL), libc::isatty(raw) == 1) };
        let kind = st.st_mode & libc::S_IFMT;
        if !ok || fl < 0 || !(kind == libc::S_IFIFO || (kind == libc::S_IFCHR && tty)) {
            return OpenFile::new(fd);
        }
        let via = format!("/proc/self/fd/{raw}\0");
        let flags = (fl & (libc::O_ACCMODE | libc::O_APPEND)) | libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC;
        // SAFETY: open with a NUL-terminated path; the result is checked.
        let again = unsafe { libc::open(via.as_ptr().cast(), flags) };
        if again < 0 {
            return OpenFile::new(fd); // e.g. a pipe whose reader has gone (ENXIO)
        }
        // SAFETY: a fresh descriptor we own.
        let again = unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(again) };
        OpenFile::nonblocking(again, fl & libc::O_NONBLOCK != 0)
    }

    /// The guest's `O_NONBLOCK`.
    pub fn guest_nonblock(&self) -> bool {
        self.nonblock.get()
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
#[derive(Clone, Default)]
pub struct FdTable {
    slots: Vec<Option<FdEntry>>,
}

/// The most descriptors a process may have open (`RLIMIT_NOFILE`).
pub const MAX_FDS: usize = 1024;

impl FdTable {
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
        let i = (start..MAX_FDS).find(|&i| self.slots.get(i).is_none_or(Option::is_none))?;
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
    /// Closes every close-on-exec descriptor.
    pub fn close_on_exec(&mut self) {
        for s in &mut self.slots {
            if s.as_ref().is_some_and(|e| e.cloexec) {
                *s = None;
            }
        }
    }
}

/// Recorded signal disposition (`struct sigaction` of the i386 `rt_sigaction`).
#[derive(Clone, Copy, Debug, Default)]
pub struct SigAction {
    /// Handler address (0 = default, 1 = ignore).
    pub handler: u32,
    /// `SA_*` flags.
    pub flags: u32,
    /// Restorer trampoline.
    pub restorer: u32,
    /// Mask during the handler.
    pub mask: u64,
}

/// A guest process.
pub struct Process {
    /// Process id.
    pub pid: Pid,
    /// Parent's pid.
    pub ppid: Pid,
    /// CPU state.
    pub cpu: Cpu,
    /// Address space.
    pub aspace: AddressSpace,
    /// Descriptors.
    pub fds: FdTable,
    /// Current directory, as a guest path.
    pub cwd: String,
    /// The executable's guest path (`/proc/self/exe`).
    pub exe: String,
    /// Start of the heap.
    pub brk_start: u32,
    /// Current program break.
    pub brk: u32,
    /// Signal dispositions, by signal number - 1.
    pub sigactions: [SigAction; 64],
    /// Blocked signals.
    pub sigmask: u64,
    /// File mode creation mask.
    pub umask: u32,
    /// Nice value (-20..=19): only kept and reported, the scheduler ignores it.
    pub nice: i32,
    /// Resource limits (soft, hard) by `RLIMIT_*`.
    pub rlimits: [(u64, u64); 16],
    /// Set when the process has ended.
    pub exit: Option<ExitStatus>,
    /// Process group.
    pub pgid: Pid,
    /// Session.
    pub sid: Pid,
    /// Pending signals (bit `sig - 1`), with what each was sent with.
    pub pending: u64,
    /// The `siginfo` of each pending signal.
    pub siginfo: [SigInfo; 64],
    /// `sigaltstack`: (base, size, flags).
    pub altstack: (u32, u32, u32),
    /// The mask to restore after `sigsuspend` once the handler has been set up.
    pub saved_mask: Option<u64>,
    /// Why the process is waiting, if it is.
    pub blocked: Option<Blocked>,
    /// Set when a blocked call is re-run: `Some(true)` if its deadline passed. Cleared
    /// after that call.
    pub resumed: Option<bool>,
    /// A parent suspended in `vfork` until this process execs or exits.
    pub vfork_parent: Option<Pid>,
    /// When `alarm` fires.
    pub alarm: Option<Instant>,
    /// POSIX interval timers (`timer_create`), by timer id; not inherited by `fork`,
    /// deleted by `exec`.
    pub timers: Vec<Option<IntervalTimer>>,
    /// The signal sent to the parent at exit (`SIGCHLD` for `fork`).
    pub exit_signal: i32,
    /// Guest instructions at the start of the current run, for the `times` accounting.
    pub start_icount: u64,
    /// Guest instructions of the children waited for (and theirs), for `times`.
    pub child_icount: u64,
    /// The arguments of the last exec, each NUL-terminated (`/proc/<pid>/cmdline`).
    pub cmdline: Vec<u8>,
}

/// A POSIX interval timer. Every supported clock (`CLOCK_REALTIME`, `CLOCK_MONOTONIC`,
/// `CLOCK_BOOTTIME`) runs at the host's pace, so expiry is kept as a host `Instant`.
#[derive(Clone, Copy, Debug)]
pub struct IntervalTimer {
    /// The clock it was created on (for absolute `timer_settime`).
    pub clock: i32,
    /// Signal sent at expiry; 0 for `SIGEV_NONE`.
    pub signo: i32,
    /// `sigev_value`, passed in the signal's `si_value`.
    pub value: u32,
    /// Next expiry, if armed.
    pub next: Option<Instant>,
    /// Reload interval (zero: one-shot).
    pub interval: Duration,
    /// Expirations missed while the previous signal was still pending.
    pub overrun: u32,
}

/// What a blocked process waits for.
#[derive(Clone, Debug)]
pub enum Wait {
    /// Host descriptors becoming ready (`pollfd` entries, `revents` ignored); an empty
    /// list waits for the deadline alone.
    Fds(Vec<libc::pollfd>),
    /// A child changing state (`wait4`).
    Child,
    /// A `vfork` child execing or exiting.
    Vfork(Pid),
    /// A signal (`pause`, `sigsuspend`).
    Signal,
}

/// A process waiting inside a system call. The call is re-run from the start when the
/// wait ends (its EIP points at the `int 0x80` again), as Linux restarts calls.
#[derive(Clone, Debug)]
pub struct Blocked {
    /// The event.
    pub wait: Wait,
    /// Give up at this time (the call then sees [`Process::resumed`] = `Some(true)`).
    pub deadline: Option<Instant>,
    /// With `SA_RESTART`, a handled signal re-runs the call instead of failing it with
    /// `EINTR`.
    pub restartable: bool,
}

/// The part of a `siginfo_t` morph fills in.
#[derive(Clone, Copy, Debug, Default)]
pub struct SigInfo {
    /// `si_code`.
    pub code: i32,
    /// `si_pid` (or, for faults, `si_addr`).
    pub pid_or_addr: u32,
    /// `si_uid`.
    pub uid: u32,
    /// `si_status` for `SIGCHLD`.
    pub status: i32,
}

/// A process that has exited and not yet been waited for.
#[derive(Clone, Copy, Debug)]
pub struct Zombie {
    /// Its parent.
    pub ppid: Pid,
    /// Its process group.
    pub pgid: Pid,
    /// How it ended.
    pub status: ExitStatus,
    /// Guest instructions it and its waited-for children ran (for the parent's `times`).
    pub icount: u64,
}

/// `argv` as `/proc/<pid>/cmdline` shows it: each argument NUL-terminated.
pub fn cmdline_of(argv: &[Vec<u8>]) -> Vec<u8> {
    let mut v = Vec::new();
    for a in argv {
        v.extend_from_slice(a);
        v.push(0);
    }
    v
}

impl ExitStatus {
    /// The `wait` status word.
    pub fn wait_status(self) -> u32 {
        match self {
            ExitStatus::Code(c) => ((c & 0xff) as u32) << 8,
            ExitStatus::Signal(s) => (s & 0x7f) as u32,
        }
    }
}
