//! Futexes, thread ids and robust lists: what glibc's threads wait and wake with.
//!
//! A waiter is a thread blocked in `FUTEX_WAIT` (`Wait::Futex`): it is queued in the
//! machine's [`FutexTable`](crate::kernel::futexes::FutexTable) under the futex's key, in arrival order, and the scheduler
//! leaves it alone until a wake moves its tid to the *woken* set (or its deadline
//! passes, or a handled signal interrupts it). The call is then re-run, as every
//! blocked call is, and returns 0 (woken) or `ETIMEDOUT` from [`Process::resumed`]
//! without looking at the futex word again.
//!
//! Keys are Linux's: a futex in a `MAP_SHARED` mapping (unless the call says
//! `FUTEX_PRIVATE_FLAG`) is keyed by its physical address, so processes sharing the
//! memory meet on it; any other futex by (thread group, virtual address), which the
//! threads of a group share because they share the address space.
//!
//! Wakes are FIFO per key and every operation is deterministic: the same seed gives
//! the same wake order.

use std::time::{Duration, Instant};

use super::common::*;
use super::wait;
use crate::kernel::futexes::FutexKey;
use crate::process::{Blocked, Wait};
use morph_mem::MapKind;

table! {
    /// Futexes and thread ids.
    pub(super) TABLE: Task {
        224 gettid "" |_, p, _| Ok(p.tid);
        240 futex "pxuxpx" sys_futex;
        258 set_tid_address "p" sys_set_tid_address;
        311 set_robust_list "pu" sys_set_robust_list;
        312 get_robust_list "dpp" sys_get_robust_list;
        422 futex_time64 "pxuxpx" sys_futex_time64;
    }
}

/// The key of the futex at `uaddr` for the calling process, with Linux's checks: a
/// misaligned word is `EINVAL`; a private futex's key is its address, whatever is mapped
/// there; a shared one needs the page (`EFAULT` if it cannot be read, or written when
/// `write`), and a read-only anonymous page is `EFAULT` too (it can never change).
fn key_of(p: &Process, uaddr: u32, private: bool, write: bool) -> Result<FutexKey, Errno> {
    if uaddr & 3 != 0 {
        return Err(EINVAL);
    }
    if private {
        return Ok(FutexKey::Private(p.mm_key(), uaddr));
    }
    let pte = p.aspace.pte(uaddr);
    if !pte.readable() || (write && !pte.writable()) {
        return Err(EFAULT);
    }
    // A file page not touched yet gets its page-cache frame (the key of a shared one).
    p.aspace.check_read(uaddr, 4).map_err(|_| EFAULT)?;
    let pte = p.aspace.pte(uaddr);
    let anon = match p.aspace.vma_at(uaddr) {
        Some(v) if !v.shared => {
            matches!(v.kind, MapKind::Anon) || !pte.has_frame() || p.aspace.phys().file_page(pte.frame()).is_none()
        }
        _ => false,
    };
    if anon && !pte.writable() {
        return Err(EFAULT);
    }
    match p.aspace.translate(uaddr) {
        Some(pa) if pte.shared() => Ok(FutexKey::Shared(pa.0)),
        _ => Ok(FutexKey::Private(p.mm_key(), uaddr)),
    }
}

/// Wakes up to `n` waiters of the futex at `uaddr`, counted.
pub(crate) fn wake(m: &mut TaskCtx<'_>, p: &Process, uaddr: u32, private: bool, n: u32, bitset: u32) -> SysResult {
    let key = key_of(p, uaddr, private, false)?;
    let woken = m.futexes.wake(key, n, bitset);
    m.stats.futex_wakes += u64::from(woken);
    Ok(woken)
}

fn sys_futex(m: &mut TaskCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    futex(m, p, a, false)
}

fn sys_futex_time64(m: &mut TaskCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    futex(m, p, a, true)
}

/// `futex(uaddr, op, val, timeout | val2, uaddr2, val3)`; `wide`: 64-bit `timespec`.
///
/// A call that wakes a waiter ends the caller's time slice, so that the woken thread
/// runs next (as Linux's scheduler lets a thread woken after a sleep preempt its waker,
/// or runs it at once on another CPU). Without that, a thread that releases a lock and
/// takes it again within one slice (Python's daemon thread writing to stderr in a loop)
/// woke a waiter that ran only when the slice ended, found the lock held each time and
/// waited again, for ever, as the slice ends at the same point of the loop in every
/// round (Python's test_io `test_daemon_threads_shutdown_stderr_deadlock` hung).
fn futex(m: &mut TaskCtx<'_>, p: &mut Process, a: &[u32; 6], wide: bool) -> SysResult {
    let before = m.futexes.woken.len();
    let r = futex_op(m, p, a, wide);
    if m.futexes.woken.len() > before {
        *m.yield_slice = true;
    }
    r
}

fn futex_op(m: &mut TaskCtx<'_>, p: &mut Process, a: &[u32; 6], wide: bool) -> SysResult {
    let (uaddr, op, val, timeout, uaddr2, val3) = (a[0], a[1], a[2], a[3], a[4], a[5]);
    let private = op & FUTEX_PRIVATE_FLAG != 0;
    let cmd = op & !(FUTEX_PRIVATE_FLAG | FUTEX_CLOCK_REALTIME);
    if op & FUTEX_CLOCK_REALTIME != 0 && !matches!(cmd, FUTEX_WAIT_BITSET | FUTEX_LOCK_PI2) {
        return Err(ENOSYS);
    }
    match cmd {
        FUTEX_WAIT | FUTEX_WAIT_BITSET => {
            // A re-run after the wait: woken, or timed out.
            match p.resumed {
                Some(false) => return Ok(0),
                Some(true) => return Err(ETIMEDOUT),
                None => {}
            }
            // The timeout is read first, as Linux's entry does.
            let deadline = if timeout == 0 {
                None
            } else {
                let t = wait::read_timespec(p, timeout, wide)?;
                Some(if cmd == FUTEX_WAIT { Instant::now() + t } else { absolute(op & FUTEX_CLOCK_REALTIME != 0, t) })
            };
            let bitset = if cmd == FUTEX_WAIT { u32::MAX } else { val3 };
            if bitset == 0 {
                return Err(EINVAL);
            }
            let key = key_of(p, uaddr, private, false)?;
            if p.aspace.read_u32(uaddr).map_err(efault)? != val {
                return Err(EAGAIN);
            }
            if deadline.is_some_and(|d| d <= Instant::now()) {
                return Err(ETIMEDOUT);
            }
            m.futexes.wait(key, p.tid, bitset);
            m.stats.futex_waits += 1;
            p.blocked = Some(Blocked { wait: Wait::Futex, deadline, restartable: true, partial: None });
            Err(ERESTARTSYS)
        }
        FUTEX_WAKE => wake(m, p, uaddr, private, val, u32::MAX),
        FUTEX_WAKE_BITSET => {
            if val3 == 0 {
                return Err(EINVAL);
            }
            wake(m, p, uaddr, private, val, val3)
        }
        FUTEX_REQUEUE | FUTEX_CMP_REQUEUE => {
            if (val as i32) < 0 || (timeout as i32) < 0 {
                return Err(EINVAL);
            }
            let from = key_of(p, uaddr, private, false)?;
            let to = key_of(p, uaddr2, private, false)?;
            if cmd == FUTEX_CMP_REQUEUE && p.aspace.read_u32(uaddr).map_err(efault)? != val3 {
                return Err(EAGAIN);
            }
            let before = m.futexes.woken.len();
            let n = m.futexes.requeue(from, to, val, timeout);
            m.stats.futex_wakes += (m.futexes.woken.len() - before) as u64;
            Ok(n)
        }
        FUTEX_WAKE_OP => {
            let k1 = key_of(p, uaddr, private, false)?;
            let k2 = key_of(p, uaddr2, private, true)?;
            let old = p.aspace.read_u32(uaddr2).map_err(efault)?;
            let (new, cond) = wake_op(val3, old).ok_or(ENOSYS)?;
            p.aspace.write_u32(uaddr2, new).map_err(efault)?;
            // An unknown comparison fails after the store, as Linux's does.
            let cond = cond.ok_or(ENOSYS)?;
            let mut n = m.futexes.wake(k1, val, u32::MAX);
            if cond {
                n += m.futexes.wake(k2, timeout, u32::MAX);
            }
            m.stats.futex_wakes += u64::from(n);
            Ok(n)
        }
        FUTEX_LOCK_PI | FUTEX_LOCK_PI2 | FUTEX_TRYLOCK_PI => {
            // The timeout is read first: absolute, on CLOCK_REALTIME for LOCK_PI.
            let deadline = match (cmd, timeout) {
                (FUTEX_TRYLOCK_PI, _) | (_, 0) => None,
                _ => {
                    let t = wait::read_timespec(p, timeout, wide)?;
                    Some(absolute(cmd == FUTEX_LOCK_PI || op & FUTEX_CLOCK_REALTIME != 0, t))
                }
            };
            lock_pi(m, p, uaddr, private, deadline, cmd == FUTEX_TRYLOCK_PI)
        }
        FUTEX_UNLOCK_PI => unlock_pi(m, p, uaddr, private),
        _ => Err(ENOSYS),
    }
}

/// `FUTEX_LOCK_PI` (`try`: `FUTEX_TRYLOCK_PI`) on the word at `uaddr`: owner tid, plus
/// `FUTEX_WAITERS` while threads wait in the kernel. A free word is taken; a held one
/// gets the waiters bit and the caller waits (FIFO: morph has no priorities to inherit)
/// until the owner's `FUTEX_UNLOCK_PI` hands it the lock, which it then owns on return.
fn lock_pi(
    m: &mut TaskCtx<'_>,
    p: &mut Process,
    uaddr: u32,
    private: bool,
    deadline: Option<Instant>,
    try_: bool,
) -> SysResult {
    // A re-run after the wait: handed the lock, or timed out (no longer waiting).
    match p.resumed {
        Some(false) => return Ok(0),
        Some(true) => return Err(ETIMEDOUT),
        None => {}
    }
    let key = key_of(p, uaddr, private, true)?;
    let w = p.aspace.read_u32(uaddr).map_err(efault)?;
    let owner = w & FUTEX_TID_MASK;
    if owner == 0 {
        let waiters = if m.futexes.has_waiters(key) { FUTEX_WAITERS } else { 0 };
        p.aspace.write_u32(uaddr, (w & FUTEX_OWNER_DIED) | p.tid | waiters).map_err(efault)?;
        return Ok(0);
    }
    if owner == p.tid {
        return Err(EDEADLK);
    }
    // Linux marks the word before it looks for the owner.
    p.aspace.write_u32(uaddr, w | FUTEX_WAITERS).map_err(efault)?;
    if !m.tasks.tids.contains_key(&owner) {
        return Err(ESRCH);
    }
    if try_ {
        return Err(EAGAIN);
    }
    if deadline.is_some_and(|d| d <= Instant::now()) {
        return Err(ETIMEDOUT);
    }
    m.futexes.wait(key, p.tid, u32::MAX);
    m.stats.futex_waits += 1;
    p.blocked = Some(Blocked { wait: Wait::Futex, deadline, restartable: true, partial: None });
    Err(ERESTARTSYS)
}

/// `FUTEX_UNLOCK_PI`: the owner gives the lock to the first waiter (the word becomes its
/// tid with `FUTEX_WAITERS`, as Linux keeps the bit while waiters may remain), or frees
/// it; `EPERM` for a caller that does not own it.
fn unlock_pi(m: &mut TaskCtx<'_>, p: &mut Process, uaddr: u32, private: bool) -> SysResult {
    let key = key_of(p, uaddr, private, true)?;
    let w = p.aspace.read_u32(uaddr).map_err(efault)?;
    if w & FUTEX_TID_MASK != p.tid {
        return Err(EPERM);
    }
    p.aspace.prepare_write(uaddr, 4).map_err(efault)?;
    let next = m.futexes.wake_first(key);
    let word = next.map_or(0, |t| t | FUTEX_WAITERS);
    p.aspace.write_u32(uaddr, word).map_err(efault)?;
    m.stats.futex_wakes += u64::from(next.is_some());
    Ok(0)
}

/// `FUTEX_WAKE_OP`'s encoded operation on the old value of the second word: the value
/// to store (`None`: an unknown operation) and whether the comparison holds (`None`: an
/// unknown comparison).
fn wake_op(encoded: u32, old: u32) -> Option<(u32, Option<bool>)> {
    let sext12 = |v: u32| ((v << 20) as i32) >> 20;
    let op = (encoded >> 28) & 7;
    let shift = encoded & (8 << 28) != 0;
    let cmp = (encoded >> 24) & 15;
    let mut oparg = sext12((encoded >> 12) & 0xfff);
    let cmparg = sext12(encoded & 0xfff);
    if shift {
        oparg = 1i32.wrapping_shl((oparg & 31) as u32);
    }
    let oparg = oparg as u32;
    let new = match op {
        0 => oparg,
        1 => old.wrapping_add(oparg),
        2 => old | oparg,
        3 => old & !oparg,
        4 => old ^ oparg,
        _ => return None,
    };
    let o = old as i32;
    let cond = match cmp {
        0 => o == cmparg,
        1 => o != cmparg,
        2 => o < cmparg,
        3 => o <= cmparg,
        4 => o > cmparg,
        5 => o >= cmparg,
        _ => return Some((new, None)),
    };
    Some((new, Some(cond)))
}

/// The host instant of an absolute time `t` on `CLOCK_REALTIME` or `CLOCK_MONOTONIC`.
fn absolute(realtime: bool, t: Duration) -> Instant {
    let clock = if realtime { libc::CLOCK_REALTIME } else { libc::CLOCK_MONOTONIC };
    let ts = host::clock_gettime(clock).unwrap_or(libc::timespec { tv_sec: 0, tv_nsec: 0 });
    let now = Duration::new(ts.tv_sec.max(0) as u64, ts.tv_nsec.clamp(0, 999_999_999) as u32);
    Instant::now() + t.saturating_sub(now)
}

fn sys_set_tid_address(_: &mut TaskCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    p.clear_child_tid = a[0];
    Ok(p.tid)
}

/// `sizeof(struct robust_list_head)` on i386.
const ROBUST_HEAD_SIZE: u32 = 12;

fn sys_set_robust_list(_: &mut TaskCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    if a[1] != ROBUST_HEAD_SIZE {
        return Err(EINVAL);
    }
    p.robust_list = (a[0], a[1]);
    Ok(0)
}

fn sys_get_robust_list(m: &mut TaskCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let tid = if a[0] == 0 { p.tid } else { a[0] };
    let head = if tid == p.tid {
        p.robust_list.0
    } else if let Some(t) = p.threads.iter().find(|t| t.tid == tid) {
        t.robust_list.0
    } else {
        let pid = *m.tasks.tids.get(&tid).ok_or(ESRCH)?;
        let q = m.tasks.procs.get(&pid).ok_or(ESRCH)?;
        if q.tid == tid { q.robust_list.0 } else { q.threads.iter().find(|t| t.tid == tid).ok_or(ESRCH)?.robust_list.0 }
    };
    p.aspace.write_u32(a[1], head).map_err(efault)?;
    p.aspace.write_u32(a[2], ROBUST_HEAD_SIZE).map_err(efault)?;
    Ok(0)
}

/// The running thread is ending: its robust futexes are marked `FUTEX_OWNER_DIED` (one
/// waiter of each woken), and its `clear_child_tid` word is zeroed and woken, which is
/// what `pthread_join` waits for. Faults are ignored, as Linux ignores them.
pub(crate) fn thread_exit(m: &mut TaskCtx<'_>, p: &mut Process) {
    exit_robust_list(m, p);
    let ctid = std::mem::take(&mut p.clear_child_tid);
    if ctid != 0 && p.aspace.write_u32(ctid, 0).is_ok() {
        let _ = wake(m, p, ctid, false, 1, u32::MAX);
    }
}

/// Walks the robust list as Linux's `exit_robust_list` does (at most 2,048 entries).
fn exit_robust_list(m: &mut TaskCtx<'_>, p: &mut Process) {
    let (head, _) = std::mem::take(&mut p.robust_list);
    if head == 0 {
        return;
    }
    let rd = |p: &Process, a: u32| p.aspace.read_u32(a).ok();
    let (Some(mut entry), Some(offset), Some(pending)) = (rd(p, head), rd(p, head + 4), rd(p, head + 8)) else {
        return;
    };
    // Bit 0 of each pointer says whether the entry it points to is a PI futex.
    let (pending_pi, pending) = (pending & 1 != 0, pending & !1);
    for _ in 0..2048 {
        let pi = entry & 1 != 0;
        entry &= !1;
        if entry == head {
            break;
        }
        let Some(next) = rd(p, entry) else { break };
        if entry != pending {
            futex_death(m, p, entry.wrapping_add(offset), pi);
        }
        entry = next;
    }
    if pending != 0 {
        futex_death(m, p, pending.wrapping_add(offset), pending_pi);
    }
}

/// A robust futex held by the dying thread: `FUTEX_OWNER_DIED`, and one waiter woken.
/// A PI one (`pi`) goes to its first waiter, which owns it on return from
/// `FUTEX_LOCK_PI` (tid, `FUTEX_WAITERS` and `FUTEX_OWNER_DIED`), as Linux's
/// `exit_pi_state_list` hands it on.
fn futex_death(m: &mut TaskCtx<'_>, p: &mut Process, uaddr: u32, pi: bool) {
    if uaddr & 3 != 0 {
        return;
    }
    let Ok(val) = p.aspace.read_u32(uaddr) else { return };
    if val & FUTEX_TID_MASK != p.tid {
        return;
    }
    if pi {
        let Ok(key) = key_of(p, uaddr, false, true) else { return };
        if p.aspace.prepare_write(uaddr, 4).is_err() {
            return;
        }
        let word = match m.futexes.wake_first(key) {
            Some(t) => {
                m.stats.futex_wakes += 1;
                t | FUTEX_WAITERS | FUTEX_OWNER_DIED
            }
            None => (val & FUTEX_WAITERS) | FUTEX_OWNER_DIED,
        };
        let _ = p.aspace.write_u32(uaddr, word);
        return;
    }
    if p.aspace.write_u32(uaddr, (val & FUTEX_WAITERS) | FUTEX_OWNER_DIED).is_ok() && val & FUTEX_WAITERS != 0 {
        let _ = wake(m, p, uaddr, false, 1, u32::MAX);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::futexes::FutexTable;

    #[test]
    fn wake_op_decoding() {
        // FUTEX_OP(FUTEX_OP_SET, 0, FUTEX_OP_CMP_GT, 1): glibc's condvar/lll form.
        let enc = (4 << 24) | 1;
        assert_eq!(wake_op(enc, 2), Some((0, Some(true))));
        assert_eq!(wake_op(enc, 1), Some((0, Some(false))));
        // ADD 1 with shift: 1 << 3.
        let enc = ((1 | 8) << 28) | (3 << 12);
        assert_eq!(wake_op(enc, 1), Some((9, Some(false))));
        assert_eq!(wake_op(enc, 0), Some((8, Some(true))));
        // Negative cmparg, LT.
        let enc = (2 << 24) | 0xfff;
        assert_eq!(wake_op(enc, (-2i32) as u32), Some((0, Some(true))));
        // An unknown operation; an unknown comparison still gives the value to store.
        assert_eq!(wake_op(7 << 28, 1), None);
        assert_eq!(wake_op(15 << 24, 1), Some((0, None)));
    }

    #[test]
    fn fifo_wake_and_requeue() {
        let mut t = FutexTable::default();
        let (a, b) = (FutexKey::Private(1, 8), FutexKey::Private(1, 12));
        t.wait(a, 10, u32::MAX);
        t.wait(a, 11, 1);
        t.wait(a, 12, 2);
        // FIFO among the waiters whose bitset matches.
        assert_eq!(t.wake(a, 1, 2), 1);
        assert!(t.is_woken(10) && !t.is_woken(12));
        assert_eq!(t.requeue(a, b, 1, 5), 2);
        assert!(t.is_woken(11));
        assert!(t.take_woken(10) && !t.is_woken(10));
        assert_eq!(t.wake(a, 9, u32::MAX), 0);
        assert_eq!(t.wake(b, 9, u32::MAX), 1);
        assert!(t.is_woken(12));
    }
}
