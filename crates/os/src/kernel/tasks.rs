//! The process table: every thread group, every live thread id, the zombies, the next
//! pid, the first process's exit status and the thread that ran last; and what acts on
//! the table as a whole (`kill`, telling a parent of a child's stop or continue, the
//! parent-death signals and reparenting when a parent goes, lending and sharing
//! address spaces).

use std::collections::BTreeMap;

use super::FIRST_PID;
use crate::host::ids;
use crate::linux::*;
use crate::process::{ExitStatus, Pid, Process, SigInfo, Zombie};

/// The process table (see the module documentation).
pub(crate) struct Tasks {
    /// Every thread group but the one running (which the scheduler holds).
    pub(crate) procs: BTreeMap<Pid, Process>,
    /// Every live thread: tid → its group's pid (a single-threaded process has tid = pid).
    pub(crate) tids: BTreeMap<Pid, Pid>,
    /// Exited processes not yet waited for.
    pub(crate) zombies: BTreeMap<Pid, Zombie>,
    /// The next pid (and tid) handed out.
    pub(crate) next_pid: Pid,
    /// The first process's exit status (the run's).
    pub(crate) first_status: Option<ExitStatus>,
    /// The thread that ran last (`rseq`: a thread another ran after was switched out).
    pub(crate) last_tid: Pid,
    /// Times the scheduler ran another thread than the one it ran last (`ctxt` in
    /// `/proc/stat`).
    pub(crate) switches: u64,
    /// Guest instructions of the processes that have ended (for the CPU time
    /// `/proc/stat` reports).
    pub(crate) exited_icount: u64,
}

impl Default for Tasks {
    fn default() -> Self {
        Tasks {
            procs: BTreeMap::new(),
            tids: BTreeMap::new(),
            zombies: BTreeMap::new(),
            next_pid: FIRST_PID,
            first_status: None,
            last_tid: 0,
            switches: 0,
            exited_icount: 0,
        }
    }
}

impl Tasks {
    /// Before `p` runs: if it shares an address space with other processes
    /// (`vm_share`), it takes the space from the one holding it.
    pub(crate) fn acquire_vm(&mut self, p: &mut Process) {
        let Some(key) = p.vm_share.filter(|_| !p.holds_vm) else { return };
        if let Some(q) = self.procs.values_mut().find(|q| q.vm_share == Some(key) && q.holds_vm) {
            std::mem::swap(&mut p.aspace, &mut q.aspace);
            q.holds_vm = false;
            p.holds_vm = true;
        }
    }

    /// `p` (running, so holding it) leaves the address space it shares (exit, exec):
    /// another process of the group takes it; `p` keeps that one's empty space.
    pub(crate) fn leave_vm(&mut self, p: &mut Process) {
        let Some(key) = p.vm_share.take() else { return };
        if std::mem::take(&mut p.holds_vm)
            && let Some(q) = self.procs.values_mut().find(|q| q.vm_share == Some(key))
        {
            std::mem::swap(&mut p.aspace, &mut q.aspace);
            q.holds_vm = true;
        }
    }

    /// A `vfork` child running in its parent's address space is done with it (exit or
    /// exec): the parent gets it back (`p` keeps the parent's empty one).
    pub(crate) fn give_back_aspace(&mut self, p: &mut Process) {
        if !std::mem::take(&mut p.vfork_lent) {
            return;
        }
        if let Some(parent) = p.vfork_parent.and_then(|pp| self.procs.get_mut(&pp)) {
            std::mem::swap(&mut parent.aspace, &mut p.aspace);
        }
    }

    /// Queues `sig` for every process `target` names (`kill` semantics: a pid, 0 for
    /// the caller's group, -1 for all, -pgid) that `p`'s credentials may signal
    /// (`Caps::may_signal`). `p` is the caller (not
    /// in the table while it runs). Returns how many processes were signalled; `EPERM`
    /// if the pid, or every process of the group, named was refused (with -1, refusals
    /// are not errors: Linux's `kill_something_info`).
    pub(crate) fn kill(&mut self, p: &mut Process, target: i32, sig: i32) -> Result<usize, crate::vfs::Errno> {
        let info = SigInfo { code: SI_USER, pid_or_addr: p.pid, uid: p.attrs.creds.uid, ..SigInfo::default() };
        let (mut n, mut denied) = (0, 0);
        let sender = (p.attrs, p.sid);
        let permitted = |q: &Process| sender.0.caps.may_signal(&sender.0.creds, sender.1, &q.attrs.creds, q.sid, sig);
        // A thread id names its group.
        let target = match self.tids.get(&(target as Pid)) {
            Some(&pid) if target > 0 => pid as i32,
            _ => target,
        };
        let hit = |q: &Process| match target {
            t if t > 0 => q.pid == t as Pid,
            0 => q.pgid == p.pgid,
            -1 => q.pid != 1,
            t => q.pgid == t.unsigned_abs(),
        };
        let self_hit = hit(p);
        let mut continued = Vec::new();
        for q in self.procs.values_mut() {
            if hit(q) && !permitted(q) {
                denied += 1;
            } else if hit(q) {
                n += 1;
                if sig != 0 {
                    q.raise_group(sig, info);
                    if q.job.notify_continued {
                        continued.push(q.pid);
                    }
                }
            }
        }
        if self_hit && (target != -1) {
            n += 1;
            if sig != 0 {
                p.raise_group(sig, info);
            }
        }
        for pid in continued {
            self.notify_continued(p, pid);
        }
        let n = n + usize::from(target > 0 && self.zombies.contains_key(&(target as Pid)));
        match (n, denied) {
            (0, d) if d > 0 && target != -1 => Err(EPERM),
            (0, d) => Ok(d),
            (n, _) => Ok(n),
        }
    }

    /// Process `pid` (not the caller `p`) was continued by a signal `p` sent: its
    /// parent gets `SIGCHLD` with `CLD_CONTINUED` now. (Linux sends it when the
    /// continued process next runs, which on a machine with a free CPU is at once.)
    pub(crate) fn notify_continued(&mut self, p: &mut Process, pid: Pid) {
        let Some(q) = self.procs.get_mut(&pid).filter(|q| q.job.notify_continued) else { return };
        q.job.notify_continued = false;
        let ppid = q.ppid;
        self.notify_job_change(p, pid, ppid, CLD_CONTINUED, SIGCONT);
    }

    /// Tells the parent `ppid` of `child` that it stopped (`CLD_STOPPED`, `status` the
    /// signal) or continued (`CLD_CONTINUED`, `SIGCONT`): `SIGCHLD`, unless the parent
    /// ignores it or has `SA_NOCLDSTOP` (its `wait` learns it all the same). `p` is the
    /// running process, which may be the parent.
    pub(crate) fn notify_job_change(&mut self, p: &mut Process, child: Pid, ppid: Pid, code: i32, status: i32) {
        let act = match if ppid == p.pid { Some(&*p) } else { self.procs.get(&ppid) } {
            Some(parent) => parent.sigactions[(SIGCHLD - 1) as usize],
            None => return,
        };
        if act.handler == SIG_IGN || act.flags & SA_NOCLDSTOP != 0 {
            return;
        }
        // The child's real user id (Linux's `do_notify_parent_cldstop`).
        let uid =
            if child == p.pid { Some(p.attrs.creds.uid) } else { self.procs.get(&child).map(|c| c.attrs.creds.uid) };
        let parent = if ppid == p.pid { Some(p) } else { self.procs.get_mut(&ppid) };
        let Some(parent) = parent else { return };
        let info = SigInfo { code, pid_or_addr: child, uid: uid.unwrap_or(ids()[0]), status, fault: false };
        parent.raise_group(SIGCHLD, info);
    }

    /// Thread `tid` of group `p` has ended while the group lives on: the children it
    /// made get their threads' parent-death signals, and `reaper` (a live thread of the
    /// group) becomes their parent thread, as Linux hands a dead thread's children to
    /// another thread of its group.
    pub(crate) fn parent_thread_exited(&mut self, p: &Process, tid: Pid, reaper: Pid) {
        let info = SigInfo { code: SI_USER, pid_or_addr: p.pid, uid: p.attrs.creds.uid, ..SigInfo::default() };
        for q in self.procs.values_mut().filter(|q| q.ppid == p.pid && q.parent_tid == tid) {
            for sig in q.pdeath_signals() {
                q.raise_group(sig, info);
            }
            q.parent_tid = reaper;
        }
    }

    /// The process that adopts the orphans of a process whose parent is `ppid`: the
    /// nearest ancestor (`ppid` first) that is a child subreaper
    /// (`PR_SET_CHILD_SUBREAPER`), else none (init, which is not a guest process: an
    /// orphan's parent becomes 1).
    pub(crate) fn reaper_for(&self, ppid: Pid) -> Option<Pid> {
        let mut at = ppid;
        // A parent chain has no cycles; the bound only keeps a broken one finite.
        for _ in 0..=self.procs.len() {
            let q = self.procs.get(&at)?;
            if q.child_subreaper {
                return Some(at);
            }
            at = q.ppid;
        }
        None
    }
}
