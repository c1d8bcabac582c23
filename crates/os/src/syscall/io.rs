//! Pipes, readiness (poll, select) and sleeping.
//!
//! No guest call may stall the machine, since every guest process lives in this one
//! host thread. A call that would block on a host descriptor first asks the host
//! (`poll` with a zero timeout); if the descriptor is not ready the process blocks
//! (see [`crate::process::Blocked`]) and the scheduler runs someone else, re-running
//! the call when the descriptor is ready. Pipes and sockets morph makes are
//! non-blocking on the host whatever the guest asked, and the guest's own
//! `O_NONBLOCK` is kept beside them.

use std::time::{Duration, Instant};

use super::common::*;
use super::wait::{block_on, read_timespec};
use crate::process::OpenFile;

table! {
    /// Pipes, readiness and sleeping.
    pub(super) TABLE: Io {
        42 pipe "i" sys_pipe;
        82 select "p" sys_old_select;
        142 _newselect "dpppp" sys_newselect;
        158 sched_yield "" |c, _, _| {
            *c.yield_slice = true; // the next runnable thread or process goes on
            Ok(0)
        };
        162 nanosleep "pp" sys_nanosleep;
        168 poll "pdd" sys_poll;
        254 epoll_create "d" sys_epoll_create;
        255 epoll_ctl "dddp" sys_epoll_ctl;
        256 epoll_wait "dpdd" sys_epoll_wait;
        267 clock_nanosleep "dxpp" sys_clock_nanosleep;
        308 pselect6 "dppppp" sys_pselect6;
        309 ppoll "pdppu" sys_ppoll;
        319 epoll_pwait "dpddpu" sys_epoll_pwait;
        322 timerfd_create "dx" sys_timerfd_create;
        323 eventfd "u" |_, p, a| new_eventfd(p, a[0], 0);
        325 timerfd_settime "dxpp" |_, p, a| timerfd_settime(p, a, false);
        326 timerfd_gettime "dp" |_, p, a| timerfd_gettime(p, a, false);
        328 eventfd2 "ux" |_, p, a| new_eventfd(p, a[0], a[1]);
        329 epoll_create1 "x" sys_epoll_create1;
        331 pipe2 "ix" sys_pipe2;
        407 clock_nanosleep_time64 "dxpp" sys_clock_nanosleep64;
        410 timerfd_gettime64 "dp" |_, p, a| timerfd_gettime(p, a, true);
        411 timerfd_settime64 "dxpp" |_, p, a| timerfd_settime(p, a, true);
        413 pselect6_time64 "dppppp" sys_pselect6_64;
        414 ppoll_time64 "pdppu" sys_ppoll64;
        441 epoll_pwait2 "dpdppu" sys_epoll_pwait2;
    }
}

fn make_pipe(p: &mut Process, ptr: u32, flags: u32) -> SysResult {
    if flags & !(O_CLOEXEC | O_NONBLOCK | libc::O_DIRECT as u32) != 0 {
        return Err(EINVAL);
    }
    p.aspace.prepare_write(ptr, 8).map_err(efault)?;
    let (r, w) = host::pipe2(libc::O_CLOEXEC)?;
    let nb = flags & O_NONBLOCK != 0;
    let cloexec = flags & O_CLOEXEC != 0;
    let rfd = p.fds.install(FdEntry::of(OpenFile::nonblocking(r, nb), cloexec), 0).ok_or(EMFILE)?;
    let Some(wfd) = p.fds.install(FdEntry::of(OpenFile::nonblocking(w, nb), cloexec), 0) else {
        p.fds.close(rfd);
        return Err(EMFILE);
    };
    p.aspace.write_u32(ptr, rfd).map_err(efault)?;
    p.aspace.write_u32(ptr + 4, wfd).map_err(efault)?;
    Ok(0)
}

fn sys_pipe(_: &mut IoCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    make_pipe(p, a[0], 0)
}

fn sys_pipe2(_: &mut IoCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    make_pipe(p, a[0], a[1])
}

// ----- epoll ------------------------------------------------------------------------
//
// A guest epoll instance is a host one, watching the host descriptors behind the guest's
// (every guest descriptor is a host descriptor): readiness, level and edge triggering,
// `EPOLLONESHOT` and the registrations' lifetimes are the host kernel's, and the
// guest's `epoll_data` goes through it unchanged. A wait that finds nothing ready
// blocks the process on the instance itself, which the host makes readable when an
// event is (`Wait::Fds`, as `poll` does).

fn new_epoll(p: &mut Process, cloexec: bool) -> SysResult {
    let fd = host::epoll_create()?;
    p.fds.install(FdEntry::new(fd, cloexec), 0).ok_or(EMFILE)
}

fn sys_epoll_create(_: &mut IoCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    if a[0] as i32 <= 0 {
        return Err(EINVAL);
    }
    new_epoll(p, false)
}

fn sys_epoll_create1(_: &mut IoCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    if a[0] & !O_CLOEXEC != 0 {
        return Err(EINVAL);
    }
    new_epoll(p, a[0] & O_CLOEXEC != 0)
}

fn sys_epoll_ctl(_: &mut IoCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    const EPOLL_CTL_DEL: u32 = 2;
    let epfd = host_fd(p, a[0])?;
    // A served descriptor (a signalfd, a pidfd) is watched through its pipe, which shows
    // its hang-up (see `crate::files::Served`).
    let fd = p.fds.get(a[2]).map(|e| e.host.poll_fd()).ok_or(EBADF)?;
    let event = if a[1] == EPOLL_CTL_DEL && a[3] == 0 {
        None
    } else {
        let mut b = [0u8; 12];
        p.aspace.read_bytes(a[3], &mut b).map_err(efault)?;
        Some(b)
    };
    host::epoll_ctl(epfd, a[1] as i32, fd, event)
}

fn epoll_wait(p: &mut Process, a: &[u32; 6]) -> SysResult {
    let t = a[3] as i32;
    epoll_wait_for(p, a, (t >= 0).then(|| Duration::from_millis(t as u64)))
}

/// `epoll_wait` with a timeout (`None`: forever).
fn epoll_wait_for(p: &mut Process, a: &[u32; 6], timeout: Option<Duration>) -> SysResult {
    let max = a[2] as i32;
    if max <= 0 || max > i32::MAX / 12 {
        return Err(EINVAL);
    }
    let epfd = host_fd(p, a[0])?;
    let ready = host::epoll_wait(epfd, max as usize)?;
    if ready.is_empty() && timeout != Some(Duration::ZERO) && p.resumed != Some(true) {
        // A deadline past what the clock can say is none.
        let deadline = timeout.and_then(|t| Instant::now().checked_add(t));
        return block_on(p, vec![libc::pollfd { fd: epfd, events: libc::POLLIN, revents: 0 }], deadline, false);
    }
    p.aspace.write_bytes(a[1], &ready).map_err(efault)?;
    Ok((ready.len() / 12) as u32)
}

fn sys_epoll_wait(_: &mut IoCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    epoll_wait(p, a)
}

fn sys_epoll_pwait(_: &mut IoCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    if a[4] != 0 && a[5] != 8 {
        return Err(EINVAL);
    }
    temp_mask(p, a[4])?;
    let r = epoll_wait(p, a);
    end_temp_mask(p, r)
}

/// `epoll_pwait2(epfd, events, maxevents, timeout, sigmask, sigsetsize)`: `epoll_pwait`
/// with a `struct __kernel_timespec` (64-bit seconds and nanoseconds; `NULL` waits
/// forever), read and checked first (`EFAULT`, `EINVAL`), as Linux does.
fn sys_epoll_pwait2(_: &mut IoCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let timeout = if a[3] == 0 { None } else { Some(read_timespec(p, a[3], true)?) };
    if a[4] != 0 && a[5] != 8 {
        return Err(EINVAL);
    }
    temp_mask(p, a[4])?;
    let r = epoll_wait_for(p, a, timeout);
    end_temp_mask(p, r)
}

// ----- eventfd and timerfd ----------------------------------------------------------
//
// Host objects, as pipes are: the counter, the semaphore mode and the timer (on the
// host's clocks, which are the guest's) are the host kernel's; the host descriptor is
// non-blocking, and a guest read that would block waits in the scheduler like a pipe's.

fn new_eventfd(p: &mut Process, initval: u32, flags: u32) -> SysResult {
    const EFD_SEMAPHORE: u32 = 1;
    if flags & !(O_CLOEXEC | O_NONBLOCK | EFD_SEMAPHORE) != 0 {
        return Err(EINVAL);
    }
    let fd = host::eventfd(initval, flags & EFD_SEMAPHORE != 0)?;
    let file = OpenFile::nonblocking(fd, flags & O_NONBLOCK != 0);
    p.fds.install(FdEntry::of(file, flags & O_CLOEXEC != 0), 0).ok_or(EMFILE)
}

fn sys_timerfd_create(_: &mut IoCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    if a[1] & !(O_CLOEXEC | O_NONBLOCK) != 0 {
        return Err(EINVAL);
    }
    let fd = host::timerfd_create(a[0] as i32)?;
    let file = OpenFile::nonblocking(fd, a[1] & O_NONBLOCK != 0);
    p.fds.install(FdEntry::of(file, a[1] & O_CLOEXEC != 0), 0).ok_or(EMFILE)
}

/// A guest `struct itimerspec` at `ptr`: four 32-bit numbers, or with `wide` four
/// 64-bit ones (`timerfd_settime64`).
fn read_itimerspec(p: &Process, ptr: u32, wide: bool) -> Result<[i64; 4], Errno> {
    let mut v = [0i64; 4];
    for (i, x) in v.iter_mut().enumerate() {
        *x = if wide {
            p.aspace.read_u64(ptr + 8 * i as u32).map_err(efault)? as i64
        } else {
            i64::from(p.aspace.read_u32(ptr + 4 * i as u32).map_err(efault)? as i32)
        };
    }
    Ok(v)
}

fn write_itimerspec(p: &mut Process, ptr: u32, v: [i64; 4], wide: bool) -> Result<(), Errno> {
    let mut b = Vec::with_capacity(32);
    for x in v {
        if wide {
            b.extend_from_slice(&x.to_le_bytes());
        } else {
            b.extend_from_slice(&i32::try_from(x).map_err(|_| EOVERFLOW)?.to_le_bytes());
        }
    }
    p.aspace.write_bytes(ptr, &b).map_err(efault)
}

fn timerfd_settime(p: &mut Process, a: &[u32; 6], wide: bool) -> SysResult {
    let fd = host_fd(p, a[0])?;
    let new = read_itimerspec(p, a[2], wide)?;
    let old = host::timerfd_settime(fd, a[1] as i32, new)?;
    if a[3] != 0 {
        write_itimerspec(p, a[3], old, wide)?;
    }
    Ok(0)
}

fn timerfd_gettime(p: &mut Process, a: &[u32; 6], wide: bool) -> SysResult {
    let fd = host_fd(p, a[0])?;
    let cur = host::timerfd_gettime(fd)?;
    write_itimerspec(p, a[1], cur, wide)?;
    Ok(0)
}

// ----- time -----------------------------------------------------------------------

fn sleep(p: &mut Process, d: Duration) -> SysResult {
    if p.resumed == Some(true) || d.is_zero() {
        return Ok(0);
    }
    block_on(p, Vec::new(), Some(Instant::now() + d), false)
}

fn sys_nanosleep(_: &mut IoCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let d = read_timespec(p, a[0], false)?;
    sleep(p, d)
}

fn clock_sleep(p: &mut Process, a: &[u32; 6], wide: bool) -> SysResult {
    let t = read_timespec(p, a[2], wide)?;
    let clock = a[0] as i32;
    if ![libc::CLOCK_REALTIME, libc::CLOCK_MONOTONIC, libc::CLOCK_BOOTTIME].contains(&clock) {
        return Err(EINVAL);
    }
    let d = if a[1] & 1 != 0 {
        // TIMER_ABSTIME: sleep until the clock reads `t`.
        let now = host::clock_gettime(clock).unwrap_or(libc::timespec { tv_sec: 0, tv_nsec: 0 });
        t.saturating_sub(Duration::new(now.tv_sec as u64, now.tv_nsec as u32))
    } else {
        t
    };
    sleep(p, d)
}

fn sys_clock_nanosleep(_: &mut IoCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    clock_sleep(p, a, false)
}

fn sys_clock_nanosleep64(_: &mut IoCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    clock_sleep(p, a, true)
}

// ----- poll -----------------------------------------------------------------------

/// The common part of `poll`/`ppoll`: `timeout` is `None` for "forever".
fn do_poll(p: &mut Process, ptr: u32, n: u32, timeout: Option<Duration>) -> SysResult {
    if n > 1024 {
        return Err(EINVAL);
    }
    let mut guest = vec![0u8; 8 * n as usize];
    p.aspace.read_bytes(ptr, &mut guest).map_err(efault)?;
    let mut host = Vec::with_capacity(n as usize);
    let mut nval = vec![false; n as usize];
    for i in 0..n as usize {
        let fd = i32::from_le_bytes(guest[8 * i..8 * i + 4].try_into().expect("4 bytes"));
        let events = i16::from_le_bytes([guest[8 * i + 4], guest[8 * i + 5]]);
        let raw = if fd < 0 {
            -1
        } else {
            match p.fds.get(fd as u32) {
                Some(e) => e.host.poll_fd(),
                None => {
                    nval[i] = true;
                    -1
                }
            }
        };
        host.push(libc::pollfd { fd: raw, events, revents: 0 });
    }
    let mut ready = host::poll(&mut host, 0)? as i32;
    for (i, bad) in nval.iter().enumerate() {
        if *bad {
            host[i].revents = libc::POLLNVAL;
            ready += 1;
        }
    }
    if ready == 0 && timeout != Some(Duration::ZERO) && p.resumed != Some(true) {
        let waits: Vec<libc::pollfd> = host.iter().copied().filter(|f| f.fd >= 0).collect();
        return block_on(p, waits, timeout.map(|t| Instant::now() + t), false);
    }
    for (i, f) in host.iter().enumerate() {
        guest[8 * i + 6..8 * i + 8].copy_from_slice(&f.revents.to_le_bytes());
    }
    p.aspace.write_bytes(ptr, &guest).map_err(efault)?;
    Ok(ready as u32)
}

fn sys_poll(_: &mut IoCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let t = a[2] as i32;
    do_poll(p, a[0], a[1], (t >= 0).then(|| Duration::from_millis(t as u64)))
}

/// Applies a `ppoll`/`pselect6` signal mask for the call (restored after delivery).
fn temp_mask(p: &mut Process, ptr: u32) -> Result<(), Errno> {
    if ptr != 0 {
        let mask = p.aspace.read_u64(ptr).map_err(efault)?;
        if p.saved_mask.is_none() {
            p.saved_mask = Some(p.sigmask);
        }
        p.sigmask = mask & !UNBLOCKABLE;
    }
    Ok(())
}

/// Ends a temporary mask when the call returns without a signal handler running.
fn end_temp_mask(p: &mut Process, r: SysResult) -> SysResult {
    if r != Err(ERESTARTSYS)
        && let Some(m) = p.saved_mask.take()
    {
        p.sigmask = m;
    }
    r
}

fn ppoll(p: &mut Process, a: &[u32; 6], wide: bool) -> SysResult {
    let t = if a[2] == 0 { None } else { Some(read_timespec(p, a[2], wide)?) };
    temp_mask(p, a[3])?;
    let r = do_poll(p, a[0], a[1], t);
    end_temp_mask(p, r)
}

fn sys_ppoll(_: &mut IoCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    ppoll(p, a, false)
}

fn sys_ppoll64(_: &mut IoCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    ppoll(p, a, true)
}

// ----- select ---------------------------------------------------------------------

/// The common part of the `select` family over `fd_set` bitmaps of `n` descriptors.
fn do_select(p: &mut Process, n: u32, sets: [u32; 3], timeout: Option<Duration>) -> SysResult {
    if (n as i32) < 0 {
        return Err(EINVAL);
    }
    // Linux looks at no more descriptors than its table has room for: bits past it are
    // neither checked nor written back.
    let n = n.min(fd_table_size(p));
    let words = n.div_ceil(32) as usize;
    let mut bits = [vec![0u32; words], vec![0u32; words], vec![0u32; words]];
    for (k, &ptr) in sets.iter().enumerate() {
        if ptr != 0 {
            for (w, v) in bits[k].iter_mut().enumerate() {
                *v = p.aspace.read_u32(ptr + 4 * w as u32).map_err(efault)?;
            }
        }
    }
    const EV: [i16; 3] = [libc::POLLIN, libc::POLLOUT, libc::POLLPRI];
    let mut host = Vec::new();
    let mut which = Vec::new();
    for fd in 0..n {
        let mut events = 0;
        for k in 0..3 {
            if bits[k][(fd / 32) as usize] & (1 << (fd % 32)) != 0 {
                events |= EV[k];
            }
        }
        if events != 0 {
            let raw = p.fds.get(fd).ok_or(EBADF)?.host.poll_fd();
            host.push(libc::pollfd { fd: raw, events, revents: 0 });
            which.push(fd);
        }
    }
    host::poll(&mut host, 0)?;
    let mut out = [vec![0u32; words], vec![0u32; words], vec![0u32; words]];
    let mut count = 0;
    for (f, &fd) in host.iter().zip(&which) {
        let hit = [
            f.revents & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0 && f.events & libc::POLLIN != 0,
            f.revents & (libc::POLLOUT | libc::POLLERR) != 0 && f.events & libc::POLLOUT != 0,
            f.revents & libc::POLLPRI != 0 && f.events & libc::POLLPRI != 0,
        ];
        for k in 0..3 {
            if hit[k] {
                out[k][(fd / 32) as usize] |= 1 << (fd % 32);
                count += 1;
            }
        }
    }
    if count == 0 && timeout != Some(Duration::ZERO) && p.resumed != Some(true) {
        return block_on(p, host, timeout.map(|t| Instant::now() + t), false);
    }
    for (k, &ptr) in sets.iter().enumerate() {
        if ptr != 0 {
            for (w, v) in out[k].iter().enumerate() {
                p.aspace.write_u32(ptr + 4 * w as u32, *v).map_err(efault)?;
            }
        }
    }
    Ok(count)
}

/// The size of Linux's descriptor table for `p`: 64 slots (one word of bits) until a
/// descriptor beyond them is opened, then the smallest power of two above the highest
/// (Linux's `alloc_fdtable`; its table never shrinks, this follows the highest open one).
fn fd_table_size(p: &Process) -> u32 {
    p.fds.end().next_power_of_two().max(64)
}

/// Reads a `timeval` (`select`'s timeout), normalised as Linux does: whole seconds in
/// `tv_usec` move to `tv_sec` (C division), and only a negative result is `EINVAL`.
fn read_timeval(p: &Process, ptr: u32) -> Result<Option<Duration>, Errno> {
    if ptr == 0 {
        return Ok(None);
    }
    let s = i64::from(p.aspace.read_u32(ptr).map_err(efault)? as i32);
    let us = i64::from(p.aspace.read_u32(ptr + 4).map_err(efault)? as i32);
    let (s, ns) = (s + us / 1_000_000, (us % 1_000_000) * 1000);
    if s < 0 || ns < 0 {
        return Err(EINVAL);
    }
    Ok(Some(Duration::new(s as u64, ns as u32)))
}

fn select(p: &mut Process, a: [u32; 5]) -> SysResult {
    let t = read_timeval(p, a[4])?;
    let r = do_select(p, a[0], [a[1], a[2], a[3]], t);
    if r == Ok(0) && t.is_some_and(|t| !t.is_zero()) {
        // Linux reports the time left: none, after a timeout (a zero timeout is left
        // as the guest wrote it).
        p.aspace.write_u64(a[4], 0).map_err(efault)?;
    }
    r
}

fn sys_newselect(_: &mut IoCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    select(p, [a[0], a[1], a[2], a[3], a[4]])
}

fn sys_old_select(_: &mut IoCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let mut v = [0u32; 5];
    for (i, x) in v.iter_mut().enumerate() {
        *x = p.aspace.read_u32(a[0] + 4 * i as u32).map_err(efault)?;
    }
    select(p, v)
}

fn pselect(p: &mut Process, a: &[u32; 6], wide: bool) -> SysResult {
    let t = if a[4] == 0 { None } else { Some(read_timespec(p, a[4], wide)?) };
    if a[5] != 0 {
        // { const sigset_t *ss; size_t ss_len; }
        let ss = p.aspace.read_u32(a[5]).map_err(efault)?;
        temp_mask(p, ss)?;
    }
    let r = do_select(p, a[0], [a[1], a[2], a[3]], t);
    end_temp_mask(p, r)
}

fn sys_pselect6(_: &mut IoCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    pselect(p, a, false)
}

fn sys_pselect6_64(_: &mut IoCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    pselect(p, a, true)
}
