//! The scheduler: [`Machine::run`] picks a runnable thread, lets the engine run it
//! until it traps (system call, fault, end of its time slice), handles the trap and
//! repeats until every process has exited; it also reaps exited processes and turns
//! guest exceptions into signals.

use std::time::Instant;

use morph_cpu::{Exit, FaultKind};
use morph_mem::{MapKind, MemFaultKind};

use crate::host::poll_now;
use crate::kernel::{FIRST_PID, Machine, RunError};
use crate::linux::*;
use crate::process::{ExitStatus, FdTable, Pid, Process, SigInfo, Wait, Zombie};
use crate::syscall;

impl Machine {
    /// Runs until every process has exited; returns the status of the first process.
    ///
    /// The scheduler is round-robin in thread-id order (a process's threads are
    /// scheduled like processes): a thread runs until it blocks, exits or has retired
    /// `slice` guest instructions. Blocked processes are polled (host
    /// descriptors, children, deadlines, signals) whenever the scheduler looks for the
    /// next process; when none can run, the host thread sleeps in `poll` until one can.
    pub fn run(&mut self) -> Result<ExitStatus, RunError> {
        let first = *self.tasks().procs.keys().next().expect("a process to run");
        let deadline = self.config().timeout.map(|t| (t, Instant::now() + t));
        let mut cursor = 0;
        while !self.tasks().procs.is_empty() {
            if let Some((t, d)) = deadline
                && Instant::now() > d
            {
                return Err(RunError::Timeout(t));
            }
            if let Some(sig) = crate::stop::requested() {
                return Err(RunError::Stopped(sig));
            }
            self.deliver_io_signals(None);
            self.deliver_hangups(None);
            let Some(tid) = self.pick(cursor) else {
                self.sleep_until_ready(deadline.map(|d| d.1))?;
                continue;
            };
            cursor = tid;
            let pid = self.tasks().tids[&tid];
            let mut p = self.tasks_mut().procs.remove(&pid).expect("process");
            p.switch_to(tid);
            self.tasks_mut().acquire_vm(&mut p);
            if std::mem::replace(&mut self.tasks_mut().last_tid, tid) != tid {
                self.tasks_mut().switches += 1;
                syscall::rseq::resume(&mut p); // it was switched out: abort its sequence
            }
            self.run_slice(&mut p);
            if p.exit.is_none() && p.thread_exited {
                // One thread ended, others live on.
                let tid = p.tid;
                if p.retire_thread().is_some() {
                    self.tasks_mut().tids.remove(&tid);
                    self.futexes_mut().cancel(tid);
                    // Its children go to the leader if it lives, else to the first
                    // thread (Linux's `find_alive_thread`).
                    let reaper = if p.tids().any(|t| t == p.pid) { p.pid } else { p.tids().min().unwrap_or(p.pid) };
                    self.tasks_mut().parent_thread_exited(&p, tid, reaper);
                }
            }
            if p.exit.is_some() {
                self.reap(p);
            } else {
                self.tasks_mut().procs.insert(pid, p);
            }
        }
        let status = self.tasks_mut().first_status.take().filter(|_| first == FIRST_PID);
        Ok(status.unwrap_or(ExitStatus::Code(0)))
    }

    /// The next thread after `cursor` (in tid order, wrapping) that can run now.
    fn pick(&mut self, cursor: Pid) -> Option<Pid> {
        let now = Instant::now();
        let order: Vec<(Pid, Pid)> = self
            .tasks()
            .tids
            .range(cursor + 1..)
            .chain(self.tasks().tids.range(..=cursor))
            .map(|(&t, &p)| (t, p))
            .collect();
        for (tid, pid) in order {
            let p = self.tasks().procs.get(&pid)?;
            if p.tid != tid {
                // A parked thread still waiting for something no signal interrupts is
                // left parked (swapping it in would change nothing).
                let t = p.threads.iter().find(|t| t.tid == tid)?;
                if let Some(b) = &t.blocked
                    && t.deliverable() == 0
                    && !self.wait_may_end(tid, b, now)
                {
                    continue;
                }
            }
            let p = self.tasks_mut().procs.get_mut(&pid)?;
            p.switch_to(tid);
            // A stopped group runs only to die of a `SIGKILL`.
            if p.job.stopped && p.pending & (1 << (SIGKILL - 1)) == 0 {
                continue;
            }
            if p.blocked.is_none() {
                p.fire_timers(now);
                return Some(tid);
            }
            // A blocked thread: its wait may depend on the others (children, vfork).
            let mut p = self.tasks_mut().procs.remove(&pid)?;
            let ready = self.wake_if_ready(&mut p, now);
            self.tasks_mut().procs.insert(pid, p);
            if ready {
                return Some(tid);
            }
        }
        None
    }

    /// Cheap test for a parked thread: false only if its wait cannot be over yet (a
    /// futex wait not woken, before its deadline).
    fn wait_may_end(&self, tid: Pid, b: &crate::process::Blocked, now: Instant) -> bool {
        match b.wait {
            Wait::Futex => self.futexes().is_woken(tid) || b.deadline.is_some_and(|d| now >= d),
            _ => true,
        }
    }

    /// Fires due alarms, ends a wait that is over; true if the process can run.
    fn wake_if_ready(&mut self, p: &mut Process, now: Instant) -> bool {
        p.fire_timers(now);
        let Some(b) = &p.blocked else { return true };
        let ready = match &b.wait {
            Wait::Fds(fds) => {
                syscall::refresh_served(self.tasks(), p);
                !fds.is_empty() && poll_now(fds)
            }
            Wait::Child(w) => syscall::children::wait_may_end(self.tasks(), p.pid, w),
            Wait::Vfork(child) => {
                !self.tasks().procs.contains_key(child) || self.tasks().procs[child].vfork_parent.is_none()
            }
            Wait::Signal => false,
            Wait::Futex => self.futexes_mut().take_woken(p.tid),
            Wait::SigWait(set) => p.pending & set != 0,
        };
        let timed_out = b.deadline.is_some_and(|d| now >= d);
        if timed_out && !ready && matches!(b.wait, Wait::Futex) {
            self.futexes_mut().cancel(p.tid);
        }
        if ready || timed_out {
            // The call completes (a signal that came meanwhile is delivered after it,
            // as Linux does when the wait is over before the signal is noticed).
            p.blocked = None;
            p.resumed = Some(timed_out && !ready);
            true
        } else {
            // Still waiting: a deliverable signal interrupts the call (run_slice), except
            // a vfork parent's wait, which only the child ends.
            p.deliverable() != 0 && !matches!(b.wait, Wait::Vfork(_))
        }
    }

    /// Nothing can run: sleep in the host until a descriptor, a deadline or the time
    /// limit wakes a process.
    fn sleep_until_ready(&mut self, limit: Option<Instant>) -> Result<(), RunError> {
        let mut fds = Vec::new();
        let mut wake = limit;
        // A stopped process's waits and timers wake no one: it does not run until a
        // signal another process sends continues it.
        for p in self.tasks().procs.values().filter(|p| !p.job.stopped) {
            let mut earliest = |t: Instant| wake = Some(wake.map_or(t, |w: Instant| w.min(t)));
            if let Some(t) = p.next_timer() {
                earliest(t);
            }
            for b in p.waits() {
                if let Some(d) = b.deadline {
                    earliest(d);
                }
                if let Wait::Fds(f) = &b.wait {
                    fds.extend_from_slice(f);
                }
            }
        }
        if fds.is_empty() && wake == limit && limit.is_none() {
            let pids: Vec<String> = self.tasks().procs.keys().map(|p| p.to_string()).collect();
            return Err(RunError::Deadlock(pids.join(", ")));
        }
        for fd in [crate::stop::wake_fd(), crate::sigio::wake_fd()].into_iter().flatten() {
            fds.push(libc::pollfd { fd, events: libc::POLLIN, revents: 0 });
        }
        let ms = wake.map_or(-1, |w| {
            let d = w.saturating_duration_since(Instant::now());
            d.as_millis().min(i32::MAX as u128) as i32 + i32::from(d.subsec_nanos() % 1_000_000 != 0)
        });
        let t0 = Instant::now();
        let _ = crate::host::poll(&mut fds, ms);
        self.stats_mut().idle_ns += t0.elapsed().as_nanos() as u64;
        Ok(())
    }

    /// Sends the I/O signals the host reported since the last look (see
    /// [`crate::sigio`]) to the owners of their descriptions, as Linux's `send_sigio`
    /// does: `F_SETSIG`'s signal with the reason, band and guest descriptor, or a plain
    /// `SIGIO`; only to targets whose real or saved user id is the setter's real or
    /// effective one (or the setter's effective id is root's: `sigio_perm`). `cur` is
    /// the running thread's process, out of the table while it runs.
    fn deliver_io_signals(&mut self, mut cur: Option<&mut Process>) {
        use crate::files::{Owner, OwnerKind};
        const POLL_MSG: i32 = 3;
        if !crate::sigio::pending() {
            return;
        }
        let (events, lost) = crate::sigio::take();
        let mut sends: Vec<(Owner, i32, SigInfo)> = Vec::new();
        for ev in events {
            let Some(f) = crate::sigio::file(ev.host_fd) else { continue };
            let fown = &f.fown;
            let fd = if ev.code == POLL_MSG && fown.notify_fd.get().is_some() {
                fown.notify_fd.get()
            } else {
                fown.async_fd.get()
            };
            let Some(fd) = fd else { continue };
            let (sig, info) = match fown.sig.get() {
                0 => (SIGIO, SigInfo { code: SI_KERNEL, ..SigInfo::default() }),
                s => (s as i32, SigInfo { code: ev.code, pid_or_addr: ev.band, uid: fd, ..SigInfo::default() }),
            };
            sends.push((fown.owner.get(), sig, info));
        }
        if lost {
            // Linux falls back to a plain SIGIO when a real-time signal cannot be queued.
            for f in crate::sigio::files() {
                sends.push((f.fown.owner.get(), SIGIO, SigInfo { code: SI_KERNEL, ..SigInfo::default() }));
            }
        }
        for (o, sig, info) in sends {
            if o.id == 0 {
                continue;
            }
            let permitted = |c: &crate::process::Creds| {
                o.euid == 0 || o.euid == c.suid || o.euid == c.uid || o.uid == c.suid || o.uid == c.uid
            };
            let procs = cur.as_deref_mut().into_iter().chain(self.tasks_mut().procs.values_mut());
            for q in procs {
                match o.kind {
                    OwnerKind::Process if q.pid == o.id && permitted(&q.attrs.creds) => q.raise_group(sig, info),
                    OwnerKind::Group if q.pgid == o.id && permitted(&q.attrs.creds) => q.raise_group(sig, info),
                    OwnerKind::Thread if q.thread_attrs(o.id).is_some_and(|a| permitted(&a.creds)) => {
                        q.raise_thread(o.id, sig, info);
                    }
                    _ => {}
                }
            }
        }
    }

    /// Tells the leaders of the sessions whose terminal a master's close hung up (see
    /// [`crate::pty::Ptys::take_hangups`]): `SIGHUP` then `SIGCONT`, from the kernel, as
    /// Linux's `tty_signal_session_leader` sends them. `cur` is the running thread's
    /// process, out of the table while it runs.
    fn deliver_hangups(&mut self, mut cur: Option<&mut Process>) {
        let sids = self.ptys().take_hangups();
        let info = SigInfo { code: SI_KERNEL, ..SigInfo::default() };
        for sid in sids {
            let procs = cur.as_deref_mut().into_iter().chain(self.tasks_mut().procs.values_mut());
            if let Some(leader) = procs.into_iter().find(|q| q.pid == sid && q.sid == sid) {
                leader.raise_group(SIGHUP, info);
                leader.raise_group(SIGCONT, info);
            }
        }
    }

    /// Runs `p` for one time slice.
    /// Runs thread `p` for a time slice; the guest FPU state is in `p.cpu.fpu` after it
    /// (see [`Machine::run_slice_fpu_lazy`]).
    fn run_slice(&mut self, p: &mut Process) {
        self.run_slice_fpu_lazy(p);
        morph_cpu::x87::fpu_from_host(&mut p.cpu);
    }

    /// The slice, during which the guest's x87 state may stay in the host FPU across
    /// system calls that do not touch it (`syscall::keeps_fpu`); it is stored before
    /// a signal is delivered, a fault handled or any other call runs.
    fn run_slice_fpu_lazy(&mut self, p: &mut Process) {
        let start = p.cpu.icount;
        // The split of time between the OS layer and the engine is read from the host
        // clock only when the statistics are asked for (as the engine's own split, see
        // `EngineConfig::time_split`): three clock reads per system call were a third of
        // a `clock_gettime` loop's time.
        let timed = self.config().engine.time_split;
        let now = || timed.then(Instant::now);
        let since = |t: Option<Instant>| t.map_or(0, |t| t.elapsed().as_nanos() as u64);
        loop {
            if p.thread_exited {
                return;
            }
            p.fire_cpu_timers();
            let t0 = now();
            self.deliver_io_signals(Some(p));
            self.deliver_hangups(Some(p));
            if p.deliverable() != 0 {
                morph_cpu::x87::fpu_from_host(&mut p.cpu); // a frame holds it
            }
            self.task_ctx().deliver_signals(p);
            self.stats_mut().os_ns += since(t0);
            if p.exit.is_some() || p.blocked.is_some() || p.job.stopped {
                return;
            }
            let used = p.cpu.icount - start;
            if used >= self.config().slice {
                return;
            }
            let budget = (self.config().slice - used).min(p.cpu_timer_budget().unwrap_or(u64::MAX));
            let t0 = now();
            let exit = self.engine_mut().run_fpu_lazy(&mut p.cpu, &mut p.aspace, p.pid, budget);
            let t1 = now();
            self.stats_mut().engine_ns += t0.zip(t1).map_or(0, |(a, b)| (b - a).as_nanos() as u64);
            match exit {
                Exit::Budget => {}
                Exit::Syscall => {
                    if !syscall::keeps_fpu(p.cpu.gpr[morph_cpu::state::reg::EAX]) {
                        morph_cpu::x87::fpu_from_host(&mut p.cpu);
                    }
                    syscall::dispatch(self, p)
                }
                Exit::Fault(f) => {
                    morph_cpu::x87::fpu_from_host(&mut p.cpu);
                    self.fault(p, &f)
                }
            }
            self.stats_mut().os_ns += since(t1);
            if self.take_yield() {
                return;
            }
        }
    }

    /// A process has exited: release its resources, make it a zombie for its parent
    /// (or forget it if the parent ignores `SIGCHLD`), hand its children (live and
    /// zombies) to the nearest child-subreaper ancestor or to init, each live one told
    /// by its parent-death signals, and release a parent waiting in `vfork`.
    pub(crate) fn reap(&mut self, mut p: Process) {
        let status = p.exit.expect("an exited process");
        // A session leader's end: its controlling terminal, one of the machine's ptys,
        // is no longer the session's, and the terminal's foreground process group is
        // hung up (Linux's `disassociate_ctty` at exit, for a pty).
        if p.sid == p.pid
            && let Some(pgrp) = self.ptys().leader_exited(p.pid)
        {
            let info = SigInfo { code: SI_KERNEL, ..SigInfo::default() };
            for q in self.tasks_mut().procs.values_mut().filter(|q| q.pgid == pgrp) {
                q.raise_group(SIGHUP, info);
            }
        }
        // Every thread ends: robust futexes it held are marked, `clear_child_tid` words
        // zeroed and woken (what a thread's own `exit` did already is not done twice).
        for tid in p.tids().collect::<Vec<_>>() {
            p.switch_to(tid);
            syscall::futex::thread_exit(&mut self.task_ctx(), &mut p);
        }
        self.tasks_mut().give_back_aspace(&mut p);
        self.tasks_mut().leave_vm(&mut p);
        if p.pid == FIRST_PID {
            self.tasks_mut().first_status = Some(status);
        }
        self.engine_mut().drop_context(p.pid);
        for tid in p.tids().collect::<Vec<_>>() {
            self.tasks_mut().tids.remove(&tid);
            self.futexes_mut().cancel(tid);
        }
        p.fds = FdTable::default();
        self.tasks_mut().exited_icount += p.group_icount();
        self.reparent_children(&p);
        let icount = p.group_icount() + p.child_icount;
        let z =
            Zombie { ppid: p.ppid, pgid: p.pgid, status, icount, exit_signal: p.exit_signal, uid: p.attrs.creds.uid };
        if self.notify_exit(p.pid, &z) {
            self.tasks_mut().zombies.insert(p.pid, z);
        }
    }

    /// `p` has exited: its live children get their parent-death signals (sent, as
    /// Linux sends them, with `p`'s pid) and move to the reaper (see
    /// `Tasks::reaper_for`), their exit signal now `SIGCHLD`; its zombies move too,
    /// the reaper told of each, or go with `p` if there is no reaper (init reaps them).
    fn reparent_children(&mut self, p: &Process) {
        let reaper = self.tasks().reaper_for(p.ppid);
        let info = SigInfo { code: SI_USER, pid_or_addr: p.pid, uid: p.attrs.creds.uid, ..SigInfo::default() };
        for c in self.tasks_mut().procs.values_mut().filter(|c| c.ppid == p.pid) {
            for sig in c.pdeath_signals() {
                c.raise_group(sig, info);
            }
            c.ppid = reaper.unwrap_or(1);
            c.parent_tid = reaper.unwrap_or(0);
            c.exit_signal = SIGCHLD;
        }
        let orphans: Vec<Pid> =
            self.tasks().zombies.iter().filter(|(_, z)| z.ppid == p.pid).map(|(&pid, _)| pid).collect();
        for pid in orphans {
            let Some(mut z) = self.tasks_mut().zombies.remove(&pid) else { continue };
            let Some(r) = reaper else { continue };
            z.ppid = r;
            z.exit_signal = SIGCHLD;
            if self.notify_exit(pid, &z) {
                self.tasks_mut().zombies.insert(pid, z);
            }
        }
    }

    /// Sends the parent of `pid` (which ended as `z` says) its exit signal; false if
    /// the zombie is not to be kept: no parent among the guests, or one that ignores
    /// `SIGCHLD` or set `SA_NOCLDWAIT` (Linux reaps such a child at once).
    fn notify_exit(&mut self, pid: Pid, z: &Zombie) -> bool {
        let (code, st) = match z.status {
            ExitStatus::Code(c) => (CLD_EXITED, c),
            ExitStatus::Signal(s) => (CLD_KILLED, s),
        };
        let info = SigInfo { code, pid_or_addr: pid, uid: z.uid, status: st, fault: false };
        let Some(parent) = self.tasks_mut().procs.get_mut(&z.ppid) else { return false };
        let act = parent.sigactions[(SIGCHLD - 1) as usize];
        let keep = !(z.exit_signal == SIGCHLD && (act.handler == SIG_IGN || act.flags & SA_NOCLDWAIT != 0));
        if z.exit_signal != 0 {
            parent.raise_group(z.exit_signal, info);
        }
        keep
    }

    /// Whether the page fault `m` is not the guest's: an access its page allows (a first
    /// touch, a copy-on-write break) that failed for want of a frame or a host mapping.
    /// The page cache then gives back idle pages (or the window its host mappings) and
    /// the instruction runs again, as Linux reclaims within the fault; with nothing to give back, Linux's OOM killer
    /// ends the process with `SIGKILL`, and so does morph, saying why.
    fn out_of_memory(&mut self, p: &mut Process, m: &morph_mem::MemFault, eip: u32) -> bool {
        /// Pages asked back at a time: more than one fault's batch (see `materialize`).
        const RECLAIM_AT_FAULT: u32 = 64;
        let pte = p.aspace.pte(m.addr);
        let allowed = if m.write { pte.writable() } else { pte.readable() };
        if m.kind != MemFaultKind::Protection || !allowed {
            return false;
        }
        // No frame: the page cache gives idle ones back. No host mapping (pages
        // scattered over frames take one each): the window's are dropped and made
        // again as pages are touched. An instruction needs only a few pages, so
        // the retry gets through.
        let frames = self.reclaim_starved(RECLAIM_AT_FAULT);
        if frames || (self.phys().take_host_starved() && p.aspace.unhost_all()) {
            p.cpu.eip = eip;
            return true;
        }
        eprintln!(
            "morph: pid {} killed by SIGKILL: out of guest memory (--max-mem {} MiB) at eip {:#010x}",
            p.pid,
            self.config().max_mem >> 20,
            eip
        );
        p.exit = Some(ExitStatus::Signal(SIGKILL));
        true
    }

    /// A guest exception: a signal with the faulting instruction's state, delivered to
    /// a handler if there is one, else the default action (morph says where). The
    /// vector, error code and fault address are recorded as Linux records them for the
    /// signal frame's `sigcontext` (`trapno`, `err`, `cr2`).
    fn fault(&mut self, p: &mut Process, f: &morph_cpu::Fault) {
        let mut err = 0;
        let (sig, code, addr, what) = match &f.kind {
            // Raised as `#GP(0)` or `#SS(0)` (`ctx::limit_fault`); anything else that
            // gives one up is a `#GP(0)` too.
            FaultKind::Page(m) if m.kind == MemFaultKind::Limit => {
                (SIGSEGV, SI_KERNEL, 0, format!("general protection fault (access past 4 GiB at {:#010x})", m.addr))
            }
            FaultKind::Page(m) => {
                if m.kind == MemFaultKind::BeyondEof && p.aspace.eof_moved(m.addr) {
                    return; // the file grew: the instruction runs again
                }
                let (sig, code, how) = match m.kind {
                    MemFaultKind::Unmapped => (SIGSEGV, SEGV_MAPERR, "unmapped"),
                    MemFaultKind::Protection => (SIGSEGV, SEGV_ACCERR, "protected"),
                    MemFaultKind::BeyondEof => (SIGBUS, BUS_ADRERR, "beyond end of file at"),
                    // Taken by the arm above; the same answer here, without a panic.
                    MemFaultKind::Limit => (SIGSEGV, SI_KERNEL, "past 4 GiB"),
                };
                // The page-fault error code: user mode (4), a write (2), a present page
                // (1: a protection fault on a page Linux has mapped: it keeps PROT_NONE
                // pages not present, and maps a page at its first touch, when morph gives
                // a private anonymous page its frame and hosts any other), an instruction
                // fetch (0x10, with NX). A fetch is a read at the instruction or in the
                // rest of its 15 bytes.
                let pte = p.aspace.pte(m.addr);
                let anon = p.aspace.vma_at(m.addr).is_some_and(|v| !v.shared && matches!(v.kind, MapKind::Anon));
                let touched = if anon { pte.has_frame() } else { pte.hosted() };
                let present = m.kind == MemFaultKind::Protection && pte.readable() && touched;
                let fetch = !m.write && m.addr.wrapping_sub(f.eip) < morph_cpu::MAX_INSN_LEN;
                // A read-modify-write instruction reads its operand for writing: its
                // fault is a write's, the page there or not (the engines fault at the
                // read, which comes first).
                let write = m.write
                    || (!fetch && {
                        let mut bytes = [0u8; morph_cpu::MAX_INSN_LEN as usize];
                        let n = (0..bytes.len())
                            .take_while(|&i| {
                                p.aspace.read_bytes(f.eip.wrapping_add(i as u32), &mut bytes[i..i + 1]).is_ok()
                            })
                            .count();
                        morph_cpu::isa::reads_for_write(&bytes[..n])
                    });
                err = 4 | u32::from(write) << 1 | u32::from(present) | u32::from(fetch) << 4;
                let rw = if write { "write to" } else { "read of" };
                p.cpu.trap.cr2 = m.addr;
                (sig, code, m.addr, format!("{rw} {how} address {:#010x}", m.addr))
            }
            FaultKind::DivideError => (SIGFPE, FPE_INTDIV, f.eip, "divide error".to_string()),
            FaultKind::InvalidOpcode(bytes) => {
                let hex: Vec<String> = bytes.iter().map(|b| format!("{b:02x}")).collect();
                (SIGILL, ILL_ILLOPN, f.eip, format!("invalid or unsupported instruction (bytes {})", hex.join(" ")))
            }
            FaultKind::GeneralProtection(e) => {
                err = u32::from(*e);
                (SIGSEGV, SI_KERNEL, 0, "general protection fault".to_string())
            }
            FaultKind::Breakpoint => (SIGTRAP, SI_KERNEL, 0, "breakpoint".to_string()),
            FaultKind::SingleStep => (SIGTRAP, TRAP_TRACE, f.eip, "single-step trap".to_string()),
            FaultKind::Int1 => (SIGTRAP, TRAP_BRKPT, f.eip, "int1 (icebp) trap".to_string()),
            FaultKind::Overflow => (SIGSEGV, SI_KERNEL, 0, "overflow trap (into)".to_string()),
            FaultKind::Bound => (SIGSEGV, SI_KERNEL, 0, "bound range exceeded".to_string()),
            FaultKind::AlignmentCheck => (SIGBUS, BUS_ADRALN, 0, "alignment check (EFLAGS.AC)".to_string()),
            // Linux's `do_stack_segment`: `SIGBUS`, `SI_KERNEL`.
            FaultKind::StackSegment => (SIGBUS, SI_KERNEL, 0, "stack segment fault".to_string()),
            FaultKind::Fpu => (SIGFPE, fpu_code(&p.cpu.fpu), f.eip, "x87 floating-point exception".to_string()),
            FaultKind::SimdFp => {
                (SIGFPE, simd_code(p.cpu.fpu.mxcsr()), f.eip, "SIMD floating-point exception".to_string())
            }
        };
        p.cpu.trap.vector = f.kind.vector();
        p.cpu.trap.error_code = err;
        if let FaultKind::Page(m) = &f.kind
            && self.out_of_memory(p, m, f.eip)
        {
            return;
        }
        let act = p.sigactions[(sig - 1) as usize];
        let blocked = p.sigmask & (1 << (sig - 1)) != 0;
        if act.handler > SIG_IGN && !blocked {
            // The CPU pushes EFLAGS with RF set for a fault (the instruction did not
            // complete), not for a trap (`int3`, `into`, a single step).
            let fault = !f.kind.is_trap();
            p.raise(sig, SigInfo { code, pid_or_addr: addr, fault, ..SigInfo::default() });
            return;
        }
        eprintln!("morph: pid {} killed by {} at eip {:#010x}: {what}", p.pid, signal_name(sig), f.eip);
        p.exit = Some(ExitStatus::Signal(sig));
    }
}

/// The `si_code` of an x87 exception, from the unmasked exceptions pending (Linux's
/// `fpu__exception_code`: invalid operation first, then zero divide, overflow,
/// underflow or denormal, precision).
fn fpu_code(fpu: &morph_cpu::FpuState) -> i32 {
    exception_code(fpu.fsw() & !fpu.fcw())
}

/// The `si_code` of an SSE exception (`#XM`): Linux's reading of MXCSR, the flags its
/// masks (bits 7–12) leave unmasked, in the x87 order.
fn simd_code(mxcsr: u32) -> i32 {
    exception_code((mxcsr & !(mxcsr >> 7) & 0x3f) as u16)
}

/// The `si_code` of unmasked exception flags `e` (the x87 status word's or MXCSR's
/// bits 0–5): invalid operation first, then divide by zero, overflow, underflow or
/// denormal, precision.
fn exception_code(e: u16) -> i32 {
    if e & 0x01 != 0 {
        FPE_FLTINV
    } else if e & 0x04 != 0 {
        FPE_FLTDIV
    } else if e & 0x08 != 0 {
        FPE_FLTOVF
    } else if e & 0x12 != 0 {
        FPE_FLTUND
    } else if e & 0x20 != 0 {
        FPE_FLTRES
    } else {
        0
    }
}
