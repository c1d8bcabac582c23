//! The process table: every thread group, every live thread id, the zombies, the next
//! pid, the first process's exit status and the thread that ran last; and what acts on
//! the table as a whole (`kill`, lending and sharing address spaces).

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
    /// the caller's group, -1 for all, -pgid). `p` is the caller (not in the table
    /// while it runs). Returns how many processes were signalled.
    pub(crate) fn kill(&mut self, p: &mut Process, target: i32, sig: i32) -> usize {
        let info = SigInfo { code: SI_USER, pid_or_addr: p.pid, uid: ids()[0], ..SigInfo::default() };
        let mut n = 0;
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
        for q in self.procs.values_mut() {
            if hit(q) {
                n += 1;
                if sig != 0 {
                    q.raise_group(sig, info);
                }
            }
        }
        if self_hit && (target != -1) {
            n += 1;
            if sig != 0 {
                p.raise_group(sig, info);
            }
        }
        n + usize::from(target > 0 && self.zombies.contains_key(&(target as Pid)))
    }
}
