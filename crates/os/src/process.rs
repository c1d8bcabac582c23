//! A guest process: CPU state, address space, file descriptors and the rest of the
//! per-process kernel state.

use std::os::fd::{AsRawFd, OwnedFd};
use std::rc::Rc;

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

/// An open file as the guest sees it: a host descriptor plus guest-only flags.
#[derive(Clone)]
pub struct FdEntry {
    /// The host descriptor (shared by `dup`s, as an open file description is).
    pub host: Rc<OwnedFd>,
    /// `FD_CLOEXEC`.
    pub cloexec: bool,
    /// For a regular file, its (device, inode): which page-cache file reads and writes
    /// through this descriptor must stay coherent with (found once, at open).
    pub file: Option<FileKey>,
}

impl FdEntry {
    /// An entry for the host descriptor `host`, noting which file it is if it is a
    /// regular file.
    pub fn new(host: OwnedFd, cloexec: bool) -> FdEntry {
        let file = FileKey::of_fd(host.as_raw_fd()).ok().flatten();
        FdEntry { host: Rc::new(host), cloexec, file }
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
    /// Resource limits (soft, hard) by `RLIMIT_*`.
    pub rlimits: [(u64, u64); 16],
    /// Set when the process has ended.
    pub exit: Option<ExitStatus>,
}
