//! What every system call family shares: the table row and result types, the helpers
//! that read arguments and convert host results, and the names the handlers use
//! (re-exported: a family starts with `use super::common::*`).

pub(crate) use std::os::fd::{AsRawFd, OwnedFd};

pub(crate) use morph_cpu::state::reg;
pub(crate) use morph_mem::{FileKey, MemError, MemFault, MemFaultKind, PAGE_SIZE, PageCache, PhysMem, Prot};
pub(crate) use rand::Rng;

pub(crate) use crate::host;
pub(crate) use crate::host::{InPlace, ids};
pub(crate) use crate::kernel::OsStats;
pub(crate) use crate::kernel::ctx::{FileCtx, IoCtx, NetCtx, TaskCtx};
pub(crate) use crate::kernel::sockets::Net;
pub(crate) use crate::layout::MMAP_MIN_ADDR;
pub(crate) use crate::linux::*;
pub(crate) use crate::process::{ExitStatus, FdEntry, FileKind, INSNS_PER_TICK, OpenFile, Process};
pub(crate) use crate::special::{self, Node, Object, Resolved};
pub(crate) use crate::vfs::{Errno, Vfs, host_errno};

/// A handler's result: the return value or a (positive) errno.
pub type SysResult = Result<u32, Errno>;

/// A handler, given the narrowest context its family needs.
#[derive(Clone, Copy)]
pub(crate) enum Handler {
    /// A call that touches only files, memory, clocks and ids ([`FileCtx`]).
    Files(fn(&mut FileCtx<'_>, &mut Process, &[u32; 6]) -> SysResult),
    /// A socket call ([`NetCtx`]).
    Net(fn(&mut NetCtx<'_>, &mut Process, &[u32; 6]) -> SysResult),
    /// A pipe, readiness or sleep call ([`IoCtx`]).
    Io(fn(&mut IoCtx<'_>, &mut Process, &[u32; 6]) -> SysResult),
    /// A call that changes processes, threads, signals or futexes ([`TaskCtx`]).
    Task(fn(&mut TaskCtx<'_>, &mut Process, &[u32; 6]) -> SysResult),
}

/// One row of the system call table.
pub struct Syscall {
    /// i386 number.
    pub nr: u32,
    /// Name.
    pub name: &'static str,
    /// Argument formats, one character per argument (see the module documentation).
    pub args: &'static str,
    pub(crate) handler: Handler,
}

pub(crate) fn efault(_: MemFault) -> Errno {
    EFAULT
}

/// Converts a host syscall return (-1 + errno) into a result.
pub(crate) fn host(r: isize) -> SysResult {
    if r < 0 { Err(host_errno()) } else { Ok(r as u32) }
}

pub(crate) fn host_fd(p: &Process, fd: u32) -> Result<i32, Errno> {
    p.fds.get(fd).map(|e| e.host.as_raw_fd()).ok_or(EBADF)
}

pub(crate) fn read_path(p: &Process, ptr: u32) -> Result<Vec<u8>, Errno> {
    let s = p.aspace.read_cstr(ptr, 4096).map_err(efault)?;
    if s.len() >= 4096 {
        return Err(ENAMETOOLONG);
    }
    Ok(s)
}

/// The little-endian `u32` at byte `at` of `b`, a guest structure read whole (one
/// `EFAULT` check) before its fields are taken (0 past its end, which callers size out).
pub(crate) fn le_u32(b: &[u8], at: usize) -> u32 {
    b.get(at..at + 4).and_then(|s| s.try_into().ok()).map_or(0, u32::from_le_bytes)
}

/// `fstat` of a host descriptor (an `O_PATH` one too).
pub(crate) fn host_stat_fd(fd: i32) -> Result<libc::stat, Errno> {
    host::fstatat(fd, c"", libc::AT_EMPTY_PATH)
}
