//! Restartable sequences: `rseq` (386), and what the kernel does for a registered
//! thread when it comes back to user mode after being switched out or to run a signal
//! handler.
//!
//! A thread registers a `struct rseq` (32 bytes, 32-aligned, or longer); the kernel
//! keeps its `cpu_id_start`, `cpu_id`, `node_id` and `mm_cid` fields up to date. morph
//! models one CPU, so they are all 0 (`cpu_id` is -1 once unregistered). While its
//! `rseq_cs` field points at a critical-section descriptor (`struct rseq_cs`: version,
//! flags, start, post-commit offset, abort address) and the thread's EIP lies in the
//! section, a preemption or a signal handler aborts the section: EIP goes to the abort
//! address (which must follow the registered signature) and `rseq_cs` is cleared, as
//! Linux's `rseq_ip_fixup` does. A malformed descriptor gets the thread a `SIGSEGV`.
//!
//! "Switched out" is the deterministic scheduler's: another thread ran since this one
//! last did (`Machine::run` calls [`resume`]); signal handlers call [`resume`] from the
//! signal family before the frame is built.

use super::common::*;
use crate::process::{Rseq, SigInfo};

table! {
    /// Restartable sequences.
    pub(super) TABLE: Task {
        386 rseq "pxdx" sys_rseq;
    }
}

/// `sizeof(struct rseq)` in its first version; also the alignment then required.
const ORIG_SIZE: u32 = 32;
/// `offsetof(struct rseq, end)`: the fields this kernel knows (`AT_RSEQ_FEATURE_SIZE`).
const FEATURE_SIZE: u32 = 28;
/// `RSEQ_FLAG_UNREGISTER`.
const UNREGISTER: u32 = 1;
/// The field offsets of `struct rseq`.
const CPU_ID_START: u32 = 0;
const CPU_ID: u32 = 4;
const RSEQ_CS: u32 = 8;
const FLAGS: u32 = 16;
const NODE_ID: u32 = 20;
const MM_CID: u32 = 24;
/// The lowest address user space cannot use (a 32-bit task on a 64-bit kernel).
const TASK_SIZE: u64 = 0xffff_e000;

/// `rseq(rseq, rseq_len, flags, sig)` with Linux's checks.
fn sys_rseq(_: &mut TaskCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let (addr, len, flags, sig) = (a[0], a[1], a[2], a[3]);
    let cur = p.rseq;
    if flags & UNREGISTER != 0 {
        if flags & !UNREGISTER != 0 || cur.addr == 0 || cur.addr != addr || cur.len != len {
            return Err(EINVAL);
        }
        if cur.sig != sig {
            return Err(EPERM);
        }
        write_ids(p, addr, u32::MAX).map_err(efault)?;
        p.rseq = Rseq::default();
        return Ok(0);
    }
    if flags != 0 {
        return Err(EINVAL);
    }
    if cur.addr != 0 {
        if cur.addr != addr || cur.len != len {
            return Err(EINVAL);
        }
        return Err(if cur.sig != sig { EPERM } else { EBUSY });
    }
    let aligned = |n: u32| addr.is_multiple_of(n);
    if len < ORIG_SIZE
        || (len == ORIG_SIZE && !aligned(ORIG_SIZE))
        || (len != ORIG_SIZE && (!aligned(32) || len < FEATURE_SIZE))
    {
        return Err(EINVAL);
    }
    if u64::from(addr) + u64::from(len) > TASK_SIZE {
        return Err(EFAULT);
    }
    p.rseq = Rseq { addr, len, sig };
    // Linux fills the fields on the way back to user mode; a bad address is a SIGSEGV then.
    if write_ids(p, addr, 0).is_err() {
        force_segv(p);
    }
    Ok(0)
}

/// Writes the CPU and node ids (`cpu` for `cpu_id`; `cpu_id_start` 0, as `node_id` and
/// `mm_cid`: one modeled CPU).
fn write_ids(p: &mut Process, addr: u32, cpu: u32) -> Result<(), MemFault> {
    p.aspace.write_u32(addr + CPU_ID_START, 0)?;
    p.aspace.write_u32(addr + CPU_ID, cpu)?;
    p.aspace.write_u32(addr + NODE_ID, 0)?;
    p.aspace.write_u32(addr + MM_CID, 0)
}

/// The running thread comes back to user mode after being switched out, or to run a
/// signal handler: its critical section, if EIP is in one, is aborted, and its ids are
/// written again. A descriptor Linux would reject (or memory it cannot use) gets the
/// thread a `SIGSEGV`.
pub(crate) fn resume(p: &mut Process) {
    let r = p.rseq;
    if r.addr == 0 {
        return;
    }
    if fixup(p, r).and_then(|()| write_ids(p, r.addr, 0).map_err(|_| EFAULT)).is_err() {
        force_segv(p);
    }
}

/// Linux's `rseq_ip_fixup`: reads and checks the critical-section descriptor; clears
/// `rseq_cs`, and moves EIP to the abort address if it lies in the section.
fn fixup(p: &mut Process, r: Rseq) -> Result<(), Errno> {
    let m = &p.aspace;
    let ptr = m.read_u64(r.addr + RSEQ_CS).map_err(efault)?;
    if ptr == 0 {
        return Ok(());
    }
    if ptr >= TASK_SIZE {
        return Err(EINVAL);
    }
    let cs = ptr as u32;
    let version = m.read_u32(cs).map_err(efault)?;
    let cs_flags = m.read_u32(cs + 4).map_err(efault)?;
    let start = m.read_u64(cs + 8).map_err(efault)?;
    let post_commit = m.read_u64(cs + 16).map_err(efault)?;
    let abort = m.read_u64(cs + 24).map_err(efault)?;
    let end = start.checked_add(post_commit).ok_or(EINVAL)?;
    if start >= TASK_SIZE || end >= TASK_SIZE || abort >= TASK_SIZE || version > 0 {
        return Err(EINVAL);
    }
    if abort.wrapping_sub(start) < post_commit {
        return Err(EINVAL); // the abort handler lies in the section
    }
    let sig = m.read_u32((abort as u32).wrapping_sub(4)).map_err(efault)?;
    if sig != r.sig {
        return Err(EINVAL);
    }
    let eip = u64::from(p.cpu.eip);
    if eip.wrapping_sub(start) < post_commit {
        // The deprecated "no restart" flags, in the descriptor or the registration,
        // are refused.
        let reg_flags = m.read_u32(r.addr + FLAGS).map_err(efault)?;
        if cs_flags != 0 || reg_flags != 0 {
            return Err(EINVAL);
        }
        p.cpu.eip = abort as u32;
    }
    p.aspace.write_u64(r.addr + RSEQ_CS, 0).map_err(efault)
}

/// `force_sig(SIGSEGV)`: delivered even if blocked or ignored (then with the default
/// action).
fn force_segv(p: &mut Process) {
    let i = (SIGSEGV - 1) as usize;
    if p.sigmask & (1 << i) != 0 || p.sigactions[i].handler == SIG_IGN {
        p.sigactions[i] = Default::default();
        p.sigmask &= !(1 << i);
    }
    p.raise(SIGSEGV, SigInfo { code: SI_KERNEL, ..SigInfo::default() });
}
