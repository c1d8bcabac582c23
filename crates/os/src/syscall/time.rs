//! Clocks: `time`, `gettimeofday`, `clock_gettime`, `clock_getres`, `clock_settime`.
//!
//! The wall and monotonic clocks are the host's. The CPU-time clocks are the guest's own:
//! a process's or thread's guest instructions as `times` counts them
//! ([`INSNS_PER_TICK`] per 10 ms), so they read the same in every run of a program,
//! whatever the engine or the host did (the host's would count morph's own work, and
//! every guest process's at once). No clock can be set: the machine's wall clock is the
//! host's, which a guest may not change (`EPERM`, as for a caller without
//! `CAP_SYS_TIME`; the calls' other errors are Linux's).

use super::common::*;

table! {
    /// Clocks.
    pub(super) TABLE: Files {
        13 time "p" sys_time;
        78 gettimeofday "pp" sys_gettimeofday;
        264 clock_settime "dp" |m, p, a| clock_settime(m, p, a, false);
        265 clock_gettime "dp" |m, p, a| clock_gettime(m, p, a, false);
        266 clock_getres "dp" |m, p, a| clock_getres(m, p, a, false);
        403 clock_gettime64 "dp" |m, p, a| clock_gettime(m, p, a, true);
        404 clock_settime64 "dp" |m, p, a| clock_settime(m, p, a, true);
        406 clock_getres_time64 "dp" |m, p, a| clock_getres(m, p, a, true);
    }
}

pub(super) fn host_clock(clock: u32) -> Result<libc::timespec, Errno> {
    // An invalid clock id is reported as EINVAL.
    host::clock_gettime(clock as i32).map_err(|_| EINVAL)
}

pub(super) fn sys_time(_: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let t = host_clock(libc::CLOCK_REALTIME as u32)?.tv_sec as u32;
    if a[0] != 0 {
        p.aspace.write_u32(a[0], t).map_err(efault)?;
    }
    Ok(t)
}

pub(super) fn sys_gettimeofday(_: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let ts = host_clock(libc::CLOCK_REALTIME as u32)?;
    if a[0] != 0 {
        let mut b = (ts.tv_sec as u32).to_le_bytes().to_vec();
        b.extend_from_slice(&((ts.tv_nsec / 1000) as u32).to_le_bytes());
        p.aspace.write_bytes(a[0], &b).map_err(efault)?;
    }
    if a[1] != 0 {
        p.aspace.write_u64(a[1], 0).map_err(efault)?;
    }
    Ok(0)
}

/// What a clock id names.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Clock {
    /// One of the host's clocks (realtime, monotonic, their raw, coarse, boot, alarm
    /// and TAI forms), which are the machine's.
    Host(i32),
    /// The guest CPU time of a thread group (`CLOCK_PROCESS_CPUTIME_ID`, or a process's
    /// clock from `clock_getcpuclockid`), in guest instructions; `sched` for the
    /// scheduler's clock (the others are the profiling and virtual ones).
    Process { pid: Pid, sched: bool },
    /// A thread's (`CLOCK_THREAD_CPUTIME_ID`, `pthread_getcpuclockid`).
    Thread { tid: Pid, sched: bool },
}

/// The clock `id` names for `p` (Linux's encoding of a CPU clock: `~pid << 3`, bit 2
/// for a thread, the low two bits its kind, pid 0 the caller): `EINVAL` for an unknown
/// id, a CPU clock of no live guest process or thread, or a descriptor's clock.
fn clock_of(m: &FileCtx<'_>, p: &Process, id: u32) -> Result<Clock, Errno> {
    const REALTIME: i32 = 0;
    const MONOTONIC: i32 = 1;
    const PROCESS_CPUTIME: i32 = 2;
    const THREAD_CPUTIME: i32 = 3;
    match id as i32 {
        PROCESS_CPUTIME => Ok(Clock::Process { pid: p.pid, sched: true }),
        THREAD_CPUTIME => Ok(Clock::Thread { tid: p.tid, sched: true }),
        c @ (REALTIME | MONOTONIC | 4..=9 | 11) => Ok(Clock::Host(c)),
        c if c < 0 => {
            let (pid, kind, thread) = (!(c >> 3) as Pid, c & 3, c & 4 != 0);
            // Kind 3 is no clock; bit 2 with kind 3 is a descriptor's (`FD_TO_CLOCKID`).
            if kind == 3 {
                return Err(EINVAL);
            }
            let sched = kind == 2;
            if thread {
                let tid = if pid == 0 { p.tid } else { pid };
                // Linux's rule: a thread clock is only of the caller's own group.
                if !p.tids().any(|t| t == tid) {
                    return Err(EINVAL);
                }
                return Ok(Clock::Thread { tid, sched });
            }
            let pid = if pid == 0 { p.pid } else { pid };
            let live = pid == p.pid || m.sys().procs.contains_key(&pid);
            if live { Ok(Clock::Process { pid, sched }) } else { Err(EINVAL) }
        }
        _ => Err(EINVAL),
    }
}

/// Nanoseconds of `insns` guest instructions.
fn cpu_ns(insns: u64) -> (i64, i64) {
    let ns = u128::from(insns) * 10_000_000 / u128::from(INSNS_PER_TICK);
    ((ns / 1_000_000_000) as i64, (ns % 1_000_000_000) as i64)
}

/// The time clock `c` reads now.
fn read_clock(m: &FileCtx<'_>, p: &Process, c: Clock) -> Result<(i64, i64), Errno> {
    Ok(match c {
        Clock::Host(id) => {
            let ts = host::clock_gettime(id).map_err(|_| EINVAL)?;
            (ts.tv_sec, ts.tv_nsec)
        }
        Clock::Process { pid, .. } if pid == p.pid => cpu_ns(p.group_icount()),
        Clock::Process { pid, .. } => cpu_ns(m.sys().procs.get(&pid).ok_or(EINVAL)?.group_icount()),
        Clock::Thread { tid, .. } if tid == p.tid => cpu_ns(p.cpu.icount),
        Clock::Thread { tid, .. } => cpu_ns(p.threads.iter().find(|t| t.tid == tid).ok_or(EINVAL)?.cpu.icount),
    })
}

/// Writes a `timespec` (two 32-bit words, or two 64-bit ones for the `time64` calls).
fn write_timespec(p: &mut Process, at: u32, (s, ns): (i64, i64), wide: bool) -> SysResult {
    // On the stack: `clock_gettime` is the call threaded programs make most (a heap
    // buffer here was 5 % of a call's cost).
    let mut b = [0u8; 16];
    let n = if wide {
        b[..8].copy_from_slice(&s.to_le_bytes());
        b[8..].copy_from_slice(&ns.to_le_bytes());
        16
    } else {
        b[..4].copy_from_slice(&(s as u32).to_le_bytes());
        b[4..8].copy_from_slice(&(ns as u32).to_le_bytes());
        8
    };
    p.aspace.write_bytes(at, &b[..n]).map_err(efault)?;
    Ok(0)
}

fn clock_gettime(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6], wide: bool) -> SysResult {
    let c = clock_of(m, p, a[0])?;
    let t = read_clock(m, p, c)?;
    write_timespec(p, a[1], t, wide)
}

/// `clock_getres(clock, res)`: the host's resolution of its clocks; 1 ns for the CPU
/// clocks' scheduler kind and a tick (10 ms) for the others, as Linux's
/// `posix_cpu_clock_getres` says. A null `res` only checks the clock.
fn clock_getres(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6], wide: bool) -> SysResult {
    let res = match clock_of(m, p, a[0])? {
        Clock::Host(id) => {
            let ts = host::clock_getres(id).map_err(|_| EINVAL)?;
            (ts.tv_sec, ts.tv_nsec)
        }
        Clock::Process { sched: true, .. } | Clock::Thread { sched: true, .. } => (0, 1),
        Clock::Process { .. } | Clock::Thread { .. } => (0, 10_000_000),
    };
    if a[1] == 0 {
        return Ok(0);
    }
    write_timespec(p, a[1], res, wide)
}

/// `clock_settime(clock, tp)`: in Linux's order, `EINVAL` for a clock that cannot be set
/// (every one but `CLOCK_REALTIME` and the encoded CPU clocks), `EFAULT` for the time,
/// `EINVAL` for a realtime one out of range; then `EPERM`: the realtime clock is the
/// host's, and a CPU clock is never set.
fn clock_settime(m: &mut FileCtx<'_>, p: &mut Process, a: &[u32; 6], wide: bool) -> SysResult {
    // A CPU clock named by Linux's encoding (a negative id) has a setter that always
    // refuses, after reading the time; `CLOCK_PROCESS_CPUTIME_ID` and the thread one
    // have none.
    let encoded_cpu = match clock_of(m, p, a[0])? {
        Clock::Host(0) => false,
        Clock::Process { .. } | Clock::Thread { .. } if (a[0] as i32) < 0 => true,
        _ => return Err(EINVAL),
    };
    let (s, ns) = if wide {
        (
            p.aspace.read_u64(a[1]).map_err(efault)? as i64,
            i64::from(p.aspace.read_u64(a[1] + 8).map_err(efault)? as u32),
        )
    } else {
        (
            i64::from(p.aspace.read_u32(a[1]).map_err(efault)? as i32),
            i64::from(p.aspace.read_u32(a[1] + 4).map_err(efault)? as i32),
        )
    };
    if !encoded_cpu && (s < 0 || !(0..1_000_000_000).contains(&ns)) {
        return Err(EINVAL);
    }
    Err(EPERM)
}
