//! Scheduling: the policy calls (`sched_setscheduler`, `sched_getscheduler`,
//! `sched_setparam`, `sched_getparam`, the priority ranges, `sched_rr_get_interval`),
//! processor affinity and `getcpu`.
//!
//! The machine has one processor, CPU 0 (see [`CPUMASK_BYTES`]), and a round-robin
//! scheduler that gives every runnable thread the same slice of guest instructions.
//! A thread's policy and real-time priority ([`crate::process::ThreadAttrs`]) are kept,
//! inherited by fork (less what `SCHED_RESET_ON_FORK` resets), kept by exec and
//! reported, with Linux's checks and errors, but the scheduler ignores them, as it
//! ignores `nice`. The `pid` of these calls names a thread (0: the caller).

use super::common::*;
use crate::process::{Pid, ThreadAttrs};

table! {
    /// Scheduling.
    pub(super) TABLE: Task {
        154 sched_setparam "dp" sys_sched_setparam;
        155 sched_getparam "dp" sys_sched_getparam;
        156 sched_setscheduler "ddp" sys_sched_setscheduler;
        157 sched_getscheduler "d" sys_sched_getscheduler;
        159 sched_get_priority_max "d" sys_sched_get_priority_max;
        160 sched_get_priority_min "d" sys_sched_get_priority_min;
        161 sched_rr_get_interval "dp" sys_sched_rr_get_interval;
        241 sched_setaffinity "dup" sys_sched_setaffinity;
        242 sched_getaffinity "dup" sys_sched_getaffinity;
        318 getcpu "ppp" sys_getcpu;
        423 sched_rr_get_interval_time64 "dp" sys_sched_rr_get_interval_time64;
    }
}

// ----- policies ----------------------------------------------------------------------

/// The process holding thread `pid` of a policy call (0: the caller) and the thread's
/// id; `EINVAL` for a negative pid, `ESRCH` for one no thread has.
fn thread_of<'a>(m: &'a mut TaskCtx<'_>, p: &'a mut Process, pid: u32) -> Result<(&'a mut Process, Pid), Errno> {
    if (pid as i32) < 0 {
        return Err(EINVAL);
    }
    let tid = if pid == 0 { p.tid } else { pid };
    if p.tids().any(|t| t == tid) {
        return Ok((p, tid));
    }
    let group = *m.tasks.tids.get(&tid).ok_or(ESRCH)?;
    let q = m.tasks.procs.get_mut(&group).ok_or(ESRCH)?;
    Ok((q, tid))
}

/// The policies Linux accepts (`SCHED_DEADLINE` passes here and fails later for want
/// of its parameters; `SCHED_EXT`, 7, of kernels from 6.12 is not modeled).
fn valid_policy(policy: u32) -> bool {
    matches!(policy, SCHED_OTHER | SCHED_FIFO | SCHED_RR | SCHED_BATCH | SCHED_IDLE | SCHED_DEADLINE)
}

fn realtime(policy: u32) -> bool {
    policy == SCHED_FIFO || policy == SCHED_RR
}

/// `sched_setscheduler(pid, policy, param)`: `policy` may carry
/// `SCHED_RESET_ON_FORK`.
fn sys_sched_setscheduler(m: &mut TaskCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    if (a[1] as i32) < 0 {
        return Err(EINVAL);
    }
    set_scheduler(m, p, a[0], Some(a[1]), a[2])
}

/// `sched_setparam(pid, param)`: the priority under the thread's policy.
fn sys_sched_setparam(m: &mut TaskCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    set_scheduler(m, p, a[0], None, a[1])
}

/// Sets the policy (`None`: keeps it, and its reset-on-fork flag) and the priority at
/// `param`, as Linux's `__sched_setscheduler` checks them: a valid policy, a priority
/// 1..=99 under a real-time policy and 0 under any other; without privilege (an
/// effective user id other than 0, see `Creds`), a real-time policy only within `RLIMIT_RTPRIO`, no way
/// back from `SCHED_IDLE` beyond `RLIMIT_NICE`, and `SCHED_RESET_ON_FORK` not cleared
/// (`EPERM`). A real-time thread's timer slack is 0; a thread leaving a real-time
/// policy gets its default back (Linux 6.7 and later).
fn set_scheduler(m: &mut TaskCtx<'_>, p: &mut Process, pid: u32, policy: Option<u32>, param: u32) -> SysResult {
    if param == 0 || (pid as i32) < 0 {
        return Err(EINVAL);
    }
    let prio = p.aspace.read_u32(param).map_err(efault)?;
    let privileged = p.attrs.caps.has(crate::process::Caps::SYS_NICE);
    let (q, tid) = thread_of(m, p, pid)?;
    let (rtprio_limit, nice_limit, nice) = (q.rlimits[RLIMIT_RTPRIO].0, q.rlimits[RLIMIT_NICE].0, q.nice);
    let t = q.thread_attrs_mut(tid).ok_or(ESRCH)?;
    let (policy, reset) = match policy {
        None => (t.policy, t.reset_on_fork),
        Some(v) => (v & !SCHED_RESET_ON_FORK, v & SCHED_RESET_ON_FORK != 0),
    };
    // `SCHED_DEADLINE` wants `sched_setattr`'s runtime, deadline and period.
    if !valid_policy(policy) || prio > MAX_RT_PRIORITY || policy == SCHED_DEADLINE || realtime(policy) != (prio != 0) {
        return Err(EINVAL);
    }
    if !privileged {
        let rt_denied = realtime(policy)
            && ((policy != t.policy && rtprio_limit == 0)
                || u64::from(prio) > rtprio_limit.max(u64::from(t.rt_priority)));
        // Leaving SCHED_IDLE is a nice reduction to the current nice value:
        // allowed if 20 - nice is within RLIMIT_NICE.
        let idle_denied = t.policy == SCHED_IDLE && policy != SCHED_IDLE && (20 - i64::from(nice)) as u64 > nice_limit;
        if rt_denied || idle_denied || (t.reset_on_fork && !reset) {
            return Err(EPERM);
        }
    }
    t.policy = policy;
    t.rt_priority = prio;
    t.reset_on_fork = reset;
    if realtime(policy) {
        t.timer_slack_ns = 0;
    } else if t.timer_slack_ns == 0 {
        t.timer_slack_ns = t.default_timer_slack_ns;
    }
    Ok(0)
}

/// The attributes of thread `pid` (0: the caller).
fn attrs_of(m: &mut TaskCtx<'_>, p: &mut Process, pid: u32) -> Result<ThreadAttrs, Errno> {
    let (q, tid) = thread_of(m, p, pid)?;
    q.thread_attrs(tid).copied().ok_or(ESRCH)
}

/// `sched_getscheduler(pid)`: the policy, with `SCHED_RESET_ON_FORK` if set.
fn sys_sched_getscheduler(m: &mut TaskCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let t = attrs_of(m, p, a[0])?;
    Ok(t.policy | if t.reset_on_fork { SCHED_RESET_ON_FORK } else { 0 })
}

/// `sched_getparam(pid, param)`: the real-time priority (0 under other policies).
fn sys_sched_getparam(m: &mut TaskCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    if a[1] == 0 {
        return Err(EINVAL);
    }
    let t = attrs_of(m, p, a[0])?;
    p.aspace.write_u32(a[1], if realtime(t.policy) { t.rt_priority } else { 0 }).map_err(efault)?;
    Ok(0)
}

/// The priority range of a policy: 1..=99 for the real-time ones, 0 for the others.
fn priority_range(policy: u32) -> Result<(u32, u32), Errno> {
    match policy {
        SCHED_FIFO | SCHED_RR => Ok((1, MAX_RT_PRIORITY)),
        SCHED_OTHER | SCHED_BATCH | SCHED_IDLE | SCHED_DEADLINE => Ok((0, 0)),
        _ => Err(EINVAL),
    }
}

fn sys_sched_get_priority_max(_: &mut TaskCtx<'_>, _: &mut Process, a: &[u32; 6]) -> SysResult {
    priority_range(a[0]).map(|r| r.1)
}

fn sys_sched_get_priority_min(_: &mut TaskCtx<'_>, _: &mut Process, a: &[u32; 6]) -> SysResult {
    priority_range(a[0]).map(|r| r.0)
}

/// What `sched_rr_get_interval` reports, in nanoseconds: `SCHED_RR`'s time slice is
/// Linux's default (`sched_rr_timeslice_ms`, 100 ms); `SCHED_FIFO` has none (0). For
/// the other policies Linux reports the fair scheduler's slice rounded down to whole
/// jiffies, which is 0 with its base slice of under 3 ms on a kernel with HZ at 100 or
/// 250 (the reference host's answer, every time); morph answers 0 too. (morph's own
/// slice is `--slice` guest instructions, which has no duration of its own.)
fn rr_interval_ns(t: &ThreadAttrs) -> u64 {
    if t.policy == SCHED_RR { 100_000_000 } else { 0 }
}

fn sys_sched_rr_get_interval(m: &mut TaskCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    rr_get_interval(m, p, a, false)
}

fn sys_sched_rr_get_interval_time64(m: &mut TaskCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    rr_get_interval(m, p, a, true)
}

/// `sched_rr_get_interval(pid, tp)` with a 32-bit or (`wide`) 64-bit `timespec`.
fn rr_get_interval(m: &mut TaskCtx<'_>, p: &mut Process, a: &[u32; 6], wide: bool) -> SysResult {
    let ns = rr_interval_ns(&attrs_of(m, p, a[0])?);
    let (s, n) = (ns / 1_000_000_000, ns % 1_000_000_000);
    let b = if wide {
        [s.to_le_bytes(), n.to_le_bytes()].concat()
    } else {
        [(s as u32).to_le_bytes(), (n as u32).to_le_bytes()].concat()
    };
    p.aspace.write_bytes(a[1], &b).map_err(efault)?;
    Ok(0)
}

// ----- processor affinity -------------------------------------------------------------

/// Bytes of the modeled kernel's CPU mask (`cpumask_size()` of an i386 kernel built for
/// up to 32 processors). The machine has one processor, CPU 0: every guest thread runs
/// on the one host thread the machine lives in, interleaved by its scheduler (and the
/// CPUID it reports is a single-core Crusoe's). Programs that size themselves to the
/// machine (`nproc`, `sort`, `xz -T0`, `os.cpu_count()`) see that, not the host's.
const CPUMASK_BYTES: u32 = 4;

/// The thread `pid` of an affinity call names (0: the caller), or `ESRCH`.
fn affinity_target(m: &TaskCtx<'_>, pid: u32) -> SysResult {
    if pid == 0 || (pid as i32 > 0 && m.tasks.tids.contains_key(&pid)) { Ok(pid) } else { Err(ESRCH) }
}

/// `sched_getaffinity(pid, len, mask)`: CPU 0 alone; returns the bytes written, as the
/// kernel does (`EINVAL` for a length that is not a whole number of 32-bit words or
/// holds no CPU).
fn sys_sched_getaffinity(m: &mut TaskCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let len = a[1];
    if len == 0 || !len.is_multiple_of(4) {
        return Err(EINVAL);
    }
    affinity_target(m, a[0])?;
    let n = len.min(CPUMASK_BYTES);
    let mut mask = vec![0u8; n as usize];
    mask[0] = 1;
    p.aspace.write_bytes(a[2], &mask).map_err(efault)?;
    Ok(n)
}

/// `sched_setaffinity(pid, len, mask)`: any mask that allows CPU 0 (the only one) is
/// accepted and changes nothing; one that does not is `EINVAL`, as a mask of no online
/// CPU is on Linux. The mask is read as the kernel reads it: at most the kernel's mask
/// size, zeros after a shorter one.
fn sys_sched_setaffinity(m: &mut TaskCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let n = a[1].min(CPUMASK_BYTES);
    let mut mask = vec![0u8; n as usize];
    p.aspace.read_bytes(a[2], &mut mask).map_err(efault)?;
    affinity_target(m, a[0])?;
    if mask.first().is_some_and(|b| b & 1 != 0) { Ok(0) } else { Err(EINVAL) }
}

/// `getcpu(cpu, node, tcache)`: CPU 0 on node 0, the machine's one processor; either
/// pointer may be NULL (the cache argument is unused since Linux 2.6.24).
fn sys_getcpu(_: &mut TaskCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    // Both are written even if the first fails, as Linux writes them.
    let failed =
        [a[0], a[1]].into_iter().filter(|&ptr| ptr != 0).fold(false, |f, ptr| p.aspace.write_u32(ptr, 0).is_err() | f);
    if failed { Err(EFAULT) } else { Ok(0) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn priority_ranges_are_linuxs() {
        assert_eq!(priority_range(SCHED_FIFO), Ok((1, 99)));
        assert_eq!(priority_range(SCHED_RR), Ok((1, 99)));
        for p in [SCHED_OTHER, SCHED_BATCH, SCHED_IDLE, SCHED_DEADLINE] {
            assert_eq!(priority_range(p), Ok((0, 0)));
        }
        assert_eq!(priority_range(4), Err(EINVAL));
        assert_eq!(priority_range(SCHED_OTHER | SCHED_RESET_ON_FORK), Err(EINVAL));
    }
}
