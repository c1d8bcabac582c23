//! Waiting for children: `waitpid`, `wait4` and `waitid`.
//!
//! A child has something to report when it has exited (a zombie, see
//! [`crate::process::Zombie`]), stopped or been continued (its
//! [`crate::process::JobControl`]). A wait names the children it cares about (any, one
//! pid, one process group) and the reports it takes ([`ChildWait`]); the children are
//! looked at in pid order (the order Linux keeps them in: creation order), and the first
//! report found is returned and, without `WNOWAIT`, consumed: a zombie is reaped, a stop
//! or continue reported once. Without any child the wait names, the call fails with
//! `ECHILD`; with such children but nothing to report, `WNOHANG` returns at once and
//! otherwise the caller blocks (`Wait::Child`) until [`wait_may_end`] says a report (or
//! the end of the last child) has come, and the call is re-run, as Linux restarts it
//! (a handled signal ends the wait with `EINTR`, or re-runs it with `SA_RESTART`).
//!
//! "Clone" children, which send their parent another signal than `SIGCHLD` at exit,
//! are waited for only with `__WCLONE`; `__WALL` waits for both kinds. A child killed
//! by a signal is never reported as having dumped core (`CLD_DUMPED`): morph writes no
//! core files.

use super::common::*;
use super::proc::rusage_bytes;
use crate::kernel::tasks::Tasks;
use crate::process::{Blocked, ChildWait, Pid, Wait, WaitFor};

table! {
    /// Waiting for children.
    pub(super) TABLE: Task {
        7 waitpid "dpx" sys_waitpid;
        114 wait4 "dpxp" sys_wait4;
        284 waitid "ddpxp" sys_waitid;
    }
}

/// What a child has to report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Event {
    /// It ended (a zombie).
    Exited(ExitStatus),
    /// A job-control signal stopped it.
    Stopped(i32),
    /// `SIGCONT` continued it.
    Continued,
}

impl Event {
    /// The status word `wait4` stores.
    fn wait_status(self) -> u32 {
        match self {
            Event::Exited(s) => s.wait_status(),
            Event::Stopped(sig) => ((sig as u32 & 0xff) << 8) | 0x7f,
            Event::Continued => 0xffff,
        }
    }

    /// `waitid`'s `si_code` and `si_status`.
    fn code_and_status(self) -> (i32, i32) {
        match self {
            Event::Exited(ExitStatus::Code(c)) => (CLD_EXITED, c & 0xff),
            Event::Exited(ExitStatus::Signal(s)) => (CLD_KILLED, s),
            Event::Stopped(sig) => (CLD_STOPPED, sig),
            Event::Continued => (CLD_CONTINUED, SIGCONT),
        }
    }
}

/// Is a child (`pid`, in group `pgid`, with exit signal `exit_signal`) one that `w`
/// waits for?
fn eligible(w: &ChildWait, pid: Pid, pgid: Pid, exit_signal: i32) -> bool {
    let named = match w.who {
        WaitFor::Any => true,
        WaitFor::Pid(x) => pid == x,
        WaitFor::Group(g) => pgid == g,
    };
    named && (w.options & __WALL != 0 || (exit_signal != SIGCHLD) == (w.options & __WCLONE != 0))
}

/// The first child of `parent` with a report `w` takes (lowest pid first); `Ok(None)`
/// if it has children `w` names but none has such a report yet; `ECHILD` if it has none.
/// A zombie counts as a child to wait for only with `WEXITED` (Linux: a zombie that
/// cannot be reported leaves `ECHILD`).
fn scan(tasks: &Tasks, parent: Pid, w: &ChildWait) -> Result<Option<(Pid, Event)>, Errno> {
    let zombies = tasks
        .zombies
        .iter()
        .filter(|&(&pid, z)| z.ppid == parent && eligible(w, pid, z.pgid, z.exit_signal))
        .map(|(&pid, z)| (pid, Some(z.status)));
    let live = tasks
        .procs
        .values()
        .filter(|q| q.ppid == parent && eligible(w, q.pid, q.pgid, q.exit_signal))
        .map(|q| (q.pid, None));
    let mut candidates: Vec<(Pid, Option<ExitStatus>)> = zombies.chain(live).collect();
    candidates.sort_unstable_by_key(|&(pid, _)| pid);
    let mut any = false;
    for (pid, exited) in candidates {
        if let Some(status) = exited {
            if w.options & WEXITED != 0 {
                return Ok(Some((pid, Event::Exited(status))));
            }
            continue;
        }
        any = true;
        let job = tasks.procs[&pid].job;
        if w.options & WSTOPPED != 0 && job.stop_report != 0 {
            return Ok(Some((pid, Event::Stopped(job.stop_report))));
        }
        if w.options & WCONTINUED != 0 && job.continued_report {
            return Ok(Some((pid, Event::Continued)));
        }
    }
    if any { Ok(None) } else { Err(ECHILD) }
}

/// Whether a wait `w` of `parent` that blocked can end: a child has a report for it,
/// or it has no child left to wait for (the call then fails with `ECHILD`).
pub(crate) fn wait_may_end(tasks: &Tasks, parent: Pid, w: &ChildWait) -> bool {
    !matches!(scan(tasks, parent, w), Ok(None))
}

/// What a wait found: the child, its report, and the guest instructions it (and its
/// waited-for children) ran, for the `rusage`.
struct Found {
    pid: Pid,
    event: Event,
    icount: u64,
    /// The child's real user id (the `si_uid` of `waitid`'s report).
    uid: u32,
}

/// Looks for a report for `p`'s wait `w` and takes it (unless `WNOWAIT`): a zombie is
/// reaped (its instructions added to `p`'s children's), a stop or continue marked
/// reported. `Ok(None)`: nothing with `WNOHANG`; `ERESTARTSYS`: `p` now waits.
fn wait_common(m: &mut TaskCtx<'_>, p: &mut Process, w: ChildWait) -> Result<Option<Found>, Errno> {
    let Some((pid, event)) = scan(m.tasks, p.pid, &w)? else {
        if w.options & WNOHANG != 0 {
            return Ok(None);
        }
        p.blocked = Some(Blocked { wait: Wait::Child(w), deadline: None, restartable: true, partial: None });
        return Err(ERESTARTSYS);
    };
    let keep = w.options & WNOWAIT != 0;
    let (icount, uid) = match event {
        Event::Exited(_) => {
            let (icount, uid) = m.tasks.zombies.get(&pid).map_or((0, ids()[0]), |z| (z.icount, z.uid));
            if !keep {
                m.tasks.zombies.remove(&pid);
                p.child_icount += icount;
            }
            (icount, uid)
        }
        Event::Stopped(_) | Event::Continued => {
            let Some(q) = m.tasks.procs.get_mut(&pid) else { return Err(ECHILD) };
            if !keep {
                match event {
                    Event::Stopped(_) => q.job.stop_report = 0,
                    _ => q.job.continued_report = false,
                }
            }
            (q.group_icount() + q.child_icount, q.attrs.creds.uid)
        }
    };
    Ok(Some(Found { pid, event, icount, uid }))
}

/// `wait4(pid, status, options, rusage)`: `pid` -1 any child, > 0 that child, 0 the
/// caller's process group, < -1 that group. Always waits for exits; `WUNTRACED` and
/// `WCONTINUED` add stops and continues. The child is taken before its status and
/// `rusage` are stored (an unwritable address is `EFAULT` with the child reaped, as on
/// Linux).
fn sys_wait4(m: &mut TaskCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let (upid, status, options, rusage) = (a[0] as i32, a[1], a[2], a[3]);
    if options & !(WNOHANG | WUNTRACED | WCONTINUED | __WNOTHREAD | __WCLONE | __WALL) != 0 {
        return Err(EINVAL);
    }
    let who = match upid {
        i32::MIN => return Err(ESRCH),
        -1 => WaitFor::Any,
        0 => WaitFor::Group(p.pgid),
        u if u < 0 => WaitFor::Group(u.unsigned_abs()),
        u => WaitFor::Pid(u as Pid),
    };
    let Some(f) = wait_common(m, p, ChildWait { who, options: options | WEXITED })? else { return Ok(0) };
    if status != 0 {
        p.aspace.write_u32(status, f.event.wait_status()).map_err(efault)?;
    }
    if rusage != 0 {
        p.aspace.write_bytes(rusage, &rusage_bytes(f.icount)).map_err(efault)?;
    }
    Ok(f.pid)
}

fn sys_waitpid(m: &mut TaskCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    sys_wait4(m, p, &[a[0], a[1], a[2], 0, 0, 0])
}

/// `waitid(idtype, id, infop, options, rusage)`: `P_ALL`, `P_PID` (id > 0) or `P_PGID`
/// (id 0: the caller's group) or `P_PIDFD` (the process a pidfd names: `EBADF` for a
/// descriptor that is no pidfd, `EINVAL` for a negative one; a non-blocking pidfd makes
/// a wait that would block `EAGAIN`, as on Linux). At least one of
/// `WEXITED`, `WSTOPPED`, `WCONTINUED`. It returns 0 and fills `si_signo` (`SIGCHLD`),
/// `si_errno`, `si_code`, `si_pid`, `si_uid` and `si_status`, leaving the rest of the
/// `siginfo_t`; with nothing to report (`WNOHANG`), and on an error, those six fields
/// are zeros, as Linux writes them. (A wait a handler interrupts ends with `EINTR`
/// without writing them; Linux zeroes them then too.)
fn sys_waitid(m: &mut TaskCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let (idtype, id, infop, options, rusage) = (a[0], a[1] as i32, a[2], a[3], a[4]);
    let found = waitid_common(m, p, idtype, id, options);
    if let Err(ERESTARTSYS) = found {
        return found.map(|_| 0);
    }
    if let Ok(Some(f)) = &found
        && rusage != 0
    {
        p.aspace.write_bytes(rusage, &rusage_bytes(f.icount)).map_err(efault)?;
    }
    if infop != 0 {
        let mut b = [0u8; 24];
        if let Ok(Some(f)) = &found {
            let (code, status) = f.event.code_and_status();
            for (i, v) in [SIGCHLD as u32, 0, code as u32, f.pid, f.uid, status as u32].into_iter().enumerate() {
                b[i * 4..i * 4 + 4].copy_from_slice(&v.to_le_bytes());
            }
        }
        p.aspace.write_bytes(infop, &b).map_err(efault)?;
    }
    found.map(|_| 0)
}

/// `waitid`'s checks and wait (see [`sys_waitid`]).
fn waitid_common(
    m: &mut TaskCtx<'_>,
    p: &mut Process,
    idtype: u32,
    id: i32,
    options: u32,
) -> Result<Option<Found>, Errno> {
    let known = WNOHANG | WNOWAIT | WEXITED | WSTOPPED | WCONTINUED | __WNOTHREAD | __WCLONE | __WALL;
    if options & !known != 0 || options & (WEXITED | WSTOPPED | WCONTINUED) == 0 {
        return Err(EINVAL);
    }
    let mut nonblock = false;
    let who = match idtype {
        P_ALL => WaitFor::Any,
        P_PID if id > 0 => WaitFor::Pid(id as Pid),
        P_PGID if id == 0 => WaitFor::Group(p.pgid),
        P_PGID if id > 0 => WaitFor::Group(id as Pid),
        P_PIDFD if id >= 0 => {
            let (pid, _, nb) = super::proc::pidfd_of(p, id as u32)?;
            nonblock = nb;
            WaitFor::Pid(pid)
        }
        _ => return Err(EINVAL),
    };
    if nonblock && options & WNOHANG == 0 {
        return match wait_common(m, p, ChildWait { who, options: options | WNOHANG })? {
            None => Err(EAGAIN),
            found => Ok(found),
        };
    }
    wait_common(m, p, ChildWait { who, options })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wait_selectors() {
        let w = |who, options| ChildWait { who, options };
        let any = w(WaitFor::Any, WEXITED);
        assert!(eligible(&any, 7, 9, SIGCHLD));
        assert!(!eligible(&any, 7, 9, 0), "a clone child needs __WCLONE");
        assert!(eligible(&w(WaitFor::Any, WEXITED | __WCLONE), 7, 9, 0));
        assert!(!eligible(&w(WaitFor::Any, WEXITED | __WCLONE), 7, 9, SIGCHLD));
        assert!(eligible(&w(WaitFor::Any, WEXITED | __WALL), 7, 9, 0));
        assert!(eligible(&w(WaitFor::Pid(7), WEXITED), 7, 9, SIGCHLD));
        assert!(!eligible(&w(WaitFor::Pid(8), WEXITED), 7, 9, SIGCHLD));
        assert!(eligible(&w(WaitFor::Group(9), WEXITED), 7, 9, SIGCHLD));
        assert!(!eligible(&w(WaitFor::Group(5), WEXITED), 7, 9, SIGCHLD));
    }

    #[test]
    fn statuses_are_linuxs() {
        assert_eq!(Event::Exited(ExitStatus::Code(3)).wait_status(), 0x300);
        assert_eq!(Event::Exited(ExitStatus::Signal(9)).wait_status(), 9);
        assert_eq!(Event::Stopped(SIGTSTP).wait_status(), 0x147f);
        assert_eq!(Event::Continued.wait_status(), 0xffff);
        assert_eq!(Event::Exited(ExitStatus::Code(0x107)).code_and_status(), (CLD_EXITED, 7));
        assert_eq!(Event::Exited(ExitStatus::Signal(15)).code_and_status(), (CLD_KILLED, 15));
        assert_eq!(Event::Stopped(SIGSTOP).code_and_status(), (CLD_STOPPED, SIGSTOP));
        assert_eq!(Event::Continued.code_and_status(), (CLD_CONTINUED, SIGCONT));
    }
}
