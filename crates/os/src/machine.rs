//! The machine: physical memory, page cache, CPU engine and every guest process.
//!
//! One host process is the whole guest machine. [`Machine::run`] picks a runnable
//! process, lets the engine run it until it traps (system call, fault, end of its time
//! slice), handles the trap and repeats until every process has exited.

use std::collections::{BTreeMap, HashMap};
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::rc::Rc;
use std::time::{Duration, Instant};

use morph_cpu::{Cpu, Exit, FaultKind};
use morph_dbt::{Engine, EngineConfig};
use morph_mem::{AddressSpace, MemFaultKind, PageCache, PhysMem};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::layout::{Aslr, Kernel, Layout};
use crate::linux::*;
use crate::loader::{self, Image, LoadArgs, LoadError};
use crate::process::{ExitStatus, FdEntry, FdTable, OpenFile, Pid, Process, SigAction, SigInfo, Wait, Zombie};
use crate::syscall;
use crate::vfs::Vfs;

/// Default of [`Config::max_procs`].
pub const DEFAULT_MAX_PROCS: usize = 256;

/// Machine configuration.
#[derive(Clone, Debug)]
pub struct Config {
    /// Host directory that is the guest's `/`.
    pub root: PathBuf,
    /// Seed of the machine's one RNG (ASLR, `AT_RANDOM`, `getrandom`, `/dev/urandom`).
    pub seed: u64,
    /// Which layout components are randomized.
    pub aslr: Aslr,
    /// The kernel whose ASLR and fork scheduling (2.6.12: child first) are modeled.
    pub kernel: Kernel,
    /// Print every system call.
    pub strace: bool,
    /// Guest physical memory limit in bytes.
    pub max_mem: u64,
    /// Wall-clock limit.
    pub timeout: Option<Duration>,
    /// Guest instructions per time slice.
    pub slice: u64,
    /// Most guest processes alive at once, the caller included (`fork` fails with
    /// `EAGAIN` beyond, as with `RLIMIT_NPROC`).
    pub max_procs: usize,
    /// The execution engine: interpreter only, or translation with a key policy.
    pub engine: EngineConfig,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            root: PathBuf::from("/"),
            seed: 0,
            aslr: Aslr::default(),
            kernel: Kernel::Modern,
            strace: false,
            max_mem: 4 << 30,
            timeout: None,
            slice: 1 << 20,
            max_procs: DEFAULT_MAX_PROCS,
            engine: EngineConfig::default(),
        }
    }
}

/// OS-layer counters.
#[derive(Clone, Debug, Default)]
pub struct OsStats {
    /// System calls by number.
    pub syscalls: BTreeMap<u32, u64>,
    /// Calls answered `-ENOSYS` (not implemented), by number.
    pub enosys: BTreeMap<u32, u64>,
    /// Host nanoseconds spent in the OS layer.
    pub os_ns: u64,
    /// Host nanoseconds spent in the engine.
    pub engine_ns: u64,
    /// Host nanoseconds the machine slept with every process blocked.
    pub idle_ns: u64,
    /// Processes created.
    pub processes: u64,
    /// `exec`s done.
    pub execs: u64,
    /// `clone` calls refused: `CLONE_VM` without `CLONE_THREAD` or `CLONE_VFORK`.
    pub unsupported_clones: u64,
    /// Threads created (`clone` with `CLONE_THREAD`).
    pub threads: u64,
    /// `futex` waits that blocked, and wakes that woke a waiter.
    pub futex_waits: u64,
    /// Waiters woken by `futex` (wake, requeue, wake-op, thread exit).
    pub futex_wakes: u64,
    /// Socket calls refused because they would leave the loopback network (an address
    /// other than loopback, a family other than `AF_UNIX`/`AF_INET`/`AF_INET6`, raw
    /// sockets, multicast membership, binding to a device).
    pub refused_net: u64,
}

/// Why a run ended abnormally (not a guest exit).
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The wall-clock limit was reached.
    #[error("time limit of {0:?} exceeded")]
    Timeout(Duration),
    /// Every process waits for something no process or host event can bring.
    #[error("deadlock: every guest process is blocked for good (pids {0})")]
    Deadlock(String),
    /// morph was asked to stop by this host signal (see [`crate::stop`]).
    #[error("stopped by host signal {0}")]
    Stopped(i32),
}

/// The guest machine.
pub struct Machine {
    pub(crate) cfg: Config,
    pub(crate) phys: Rc<PhysMem>,
    pub(crate) cache: PageCache,
    pub(crate) engine: Engine,
    pub(crate) vfs: Vfs,
    pub(crate) rng: ChaCha8Rng,
    pub(crate) procs: BTreeMap<Pid, Process>,
    /// Every live thread: tid → its group's pid (a single-threaded process has tid = pid).
    pub(crate) tids: BTreeMap<Pid, Pid>,
    /// Threads waiting in `futex`, and those woken.
    pub(crate) futexes: syscall::futex::FutexTable,
    pub(crate) zombies: BTreeMap<Pid, Zombie>,
    pub(crate) next_pid: Pid,
    first_status: Option<ExitStatus>,
    pub(crate) stats: OsStats,
    pub(crate) started: Instant,
    pub(crate) ioctl_unknown: HashMap<u32, u64>,
    pub(crate) net: syscall::net::Net,
    /// Set by a system call to end the running process's time slice (fork: the child
    /// runs first).
    pub(crate) yield_slice: bool,
}

/// The first pid handed out.
pub const FIRST_PID: Pid = 100;

impl Machine {
    /// A machine with no processes.
    pub fn new(cfg: Config) -> std::io::Result<Machine> {
        let phys = Rc::new(PhysMem::new(cfg.max_mem).map_err(std::io::Error::other)?);
        let vfs = Vfs::new(&cfg.root)?;
        let engine = Engine::new(cfg.engine.clone())?;
        Ok(Machine {
            rng: ChaCha8Rng::seed_from_u64(cfg.seed),
            cfg,
            phys,
            cache: PageCache::new(),
            engine,
            vfs,
            procs: BTreeMap::new(),
            tids: BTreeMap::new(),
            futexes: Default::default(),
            zombies: BTreeMap::new(),
            next_pid: FIRST_PID,
            first_status: None,
            stats: OsStats::default(),
            started: Instant::now(),
            ioctl_unknown: HashMap::new(),
            net: syscall::net::Net::default(),
            yield_slice: false,
        })
    }

    /// The guest file system.
    pub fn vfs(&self) -> &Vfs {
        &self.vfs
    }

    /// OS counters.
    pub fn stats(&self) -> &OsStats {
        &self.stats
    }

    /// The execution engine (for its counters).
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// Physical memory (for its counters).
    pub fn phys(&self) -> &PhysMem {
        &self.phys
    }

    /// The page cache (for its counters).
    pub fn page_cache(&self) -> &PageCache {
        &self.cache
    }

    /// Loads `path` into a fresh address space with a new layout; used by spawn and exec.
    pub(crate) fn load_image(
        &mut self,
        cwd: &str,
        path: &str,
        argv: &[Vec<u8>],
        envp: &[Vec<u8>],
    ) -> Result<(AddressSpace, Image), LoadError> {
        let layout = Layout::new(self.cfg.kernel, self.cfg.aslr, &mut self.rng);
        let mut aspace = AddressSpace::new(self.phys.clone()).map_err(|_| LoadError::NoMemory(path.into()))?;
        let vfs = &self.vfs;
        let open = |p: &str| vfs.open_exec(cwd, p.as_bytes());
        let name_of = |f: &std::fs::File| vfs.guest_path_of(f).ok();
        let args = LoadArgs { path, argv, envp, layout, open: &open, name_of: &name_of, ids: ids() };
        let img = match loader::load(&args, &mut aspace, &mut self.cache, &mut self.rng) {
            // Out of guest memory: the page cache gives back every page no process maps
            // (see `PageCache::reclaim`), and the program is loaded again from scratch.
            Err(LoadError::NoMemory(_)) if self.cache.reclaim(&self.phys, u32::MAX, None) > 0 => {
                aspace = AddressSpace::new(self.phys.clone()).map_err(|_| LoadError::NoMemory(path.into()))?;
                loader::load(&args, &mut aspace, &mut self.cache, &mut self.rng)?
            }
            r => r?,
        };
        aspace.set_mmap_base(layout.mmap_base);
        Ok((aspace, img))
    }

    /// Creates the first process, running `path` with `argv` and `envp`, with the host's
    /// standard descriptors 0-2 and the host's current directory (inside the root).
    pub fn spawn(&mut self, path: &str, argv: &[Vec<u8>], envp: &[Vec<u8>], cwd: &str) -> Result<Pid, LoadError> {
        // A `#!` script runs its interpreter, as execve does (a file that cannot be
        // read is left for the loader to report).
        let (path, argv) = syscall::proc::follow_scripts(path.as_bytes().to_vec(), argv.to_vec(), |path| {
            let mut head = [0u8; 256];
            let n = match self.vfs.open_exec(cwd, path) {
                // SAFETY: reading into a local buffer from a descriptor we own.
                Ok(fd) => unsafe {
                    libc::pread(std::os::fd::AsRawFd::as_raw_fd(&fd), head.as_mut_ptr().cast(), head.len(), 0)
                },
                Err(_) => 0,
            };
            Ok((path.to_vec(), head[..n.max(0) as usize].to_vec()))
        })
        .map_err(|errno| LoadError::Io {
            path: path.to_string(),
            msg: "too many levels of #! interpreters".into(),
            errno,
        })?;
        let path = String::from_utf8_lossy(&path).into_owned();
        let (aspace, img) = self.load_image(cwd, &path, &argv, envp)?;
        let mut fds = FdTable::default();
        for fd in 0..3 {
            // SAFETY: duplicating the host's standard descriptors; failure is checked.
            let d = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 3) };
            if d >= 0 {
                // SAFETY: a fresh descriptor we own.
                let host = unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(d) };
                fds.set(fd as u32, FdEntry::of(OpenFile::inherited(host), false));
            }
        }
        let pid = self.next_pid;
        self.next_pid += 1;
        let mut rlimits = [(u64::MAX, u64::MAX); 16];
        for (i, r) in rlimits.iter_mut().enumerate() {
            let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
            // SAFETY: querying our own limits into a local struct.
            if unsafe { libc::getrlimit(i as _, &mut lim) } == 0 {
                *r = (lim.rlim_cur, lim.rlim_max);
            }
        }
        let mut cpu = Cpu::new();
        cpu.eip = img.entry;
        cpu.gpr[morph_cpu::state::reg::ESP] = img.sp;
        let p = Process {
            pid,
            tid: pid,
            ppid: 1,
            cpu,
            aspace,
            fds,
            cwd: cwd.to_string(),
            exe: img.exe.clone(),
            brk_start: img.brk,
            brk: img.brk,
            sigactions: [SigAction::default(); 64],
            sigmask: 0,
            umask: 0o022,
            nice: host_nice(),
            rlimits,
            exit: None,
            pgid: pid,
            sid: pid,
            pending: 0,
            siginfo: [SigInfo::default(); 64],
            altstack: (0, 0, SS_DISABLE),
            saved_mask: None,
            blocked: None,
            resumed: None,
            clear_child_tid: 0,
            robust_list: (0, 0),
            threads: Vec::new(),
            thread_exited: false,
            leader_exit: None,
            dead_threads_icount: 0,
            vfork_parent: None,
            vfork_lent: false,
            alarm: None,
            timers: Vec::new(),
            exit_signal: SIGCHLD,
            start_icount: 0,
            child_icount: 0,
            cmdline: crate::process::cmdline_of(&argv),
        };
        self.stats.processes += 1;
        self.procs.insert(pid, p);
        self.tids.insert(pid, pid);
        Ok(pid)
    }

    /// Runs until every process has exited; returns the status of the first process.
    ///
    /// The scheduler is round-robin in thread-id order (a process's threads are
    /// scheduled like processes): a thread runs until it blocks, exits or has retired
    /// `slice` guest instructions. Blocked processes are polled (host
    /// descriptors, children, deadlines, signals) whenever the scheduler looks for the
    /// next process; when none can run, the host thread sleeps in `poll` until one can.
    pub fn run(&mut self) -> Result<ExitStatus, RunError> {
        let first = *self.procs.keys().next().expect("a process to run");
        let deadline = self.cfg.timeout.map(|t| (t, Instant::now() + t));
        let mut cursor = 0;
        while !self.procs.is_empty() {
            if let Some((t, d)) = deadline
                && Instant::now() > d
            {
                return Err(RunError::Timeout(t));
            }
            if let Some(sig) = crate::stop::requested() {
                return Err(RunError::Stopped(sig));
            }
            let Some(tid) = self.pick(cursor) else {
                self.sleep_until_ready(deadline.map(|d| d.1))?;
                continue;
            };
            cursor = tid;
            let pid = self.tids[&tid];
            let mut p = self.procs.remove(&pid).expect("process");
            p.switch_to(tid);
            self.run_slice(&mut p);
            if p.exit.is_none() && p.thread_exited {
                // One thread ended, others live on.
                let tid = p.tid;
                if p.retire_thread().is_some() {
                    self.tids.remove(&tid);
                    self.futexes.cancel(tid);
                }
            }
            if p.exit.is_some() {
                self.reap(p);
            } else {
                self.procs.insert(pid, p);
            }
        }
        let status = self.first_status.take().filter(|_| first == FIRST_PID);
        Ok(status.unwrap_or(ExitStatus::Code(0)))
    }

    /// The next thread after `cursor` (in tid order, wrapping) that can run now.
    fn pick(&mut self, cursor: Pid) -> Option<Pid> {
        let now = Instant::now();
        let order: Vec<(Pid, Pid)> =
            self.tids.range(cursor + 1..).chain(self.tids.range(..=cursor)).map(|(&t, &p)| (t, p)).collect();
        for (tid, pid) in order {
            let p = self.procs.get(&pid)?;
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
            let p = self.procs.get_mut(&pid)?;
            p.switch_to(tid);
            if p.blocked.is_none() {
                p.fire_timers(now);
                return Some(tid);
            }
            // A blocked thread: its wait may depend on the others (children, vfork).
            let mut p = self.procs.remove(&pid)?;
            let ready = self.wake_if_ready(&mut p, now);
            self.procs.insert(pid, p);
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
            Wait::Futex => self.futexes.is_woken(tid) || b.deadline.is_some_and(|d| now >= d),
            _ => true,
        }
    }

    /// Fires due alarms, ends a wait that is over; true if the process can run.
    fn wake_if_ready(&mut self, p: &mut Process, now: Instant) -> bool {
        p.fire_timers(now);
        let Some(b) = &p.blocked else { return true };
        let ready = match &b.wait {
            Wait::Fds(fds) => !fds.is_empty() && poll_now(fds),
            Wait::Child => self.child_event(p.pid),
            Wait::Vfork(child) => !self.procs.contains_key(child) || self.procs[child].vfork_parent.is_none(),
            Wait::Signal => false,
            Wait::Futex => self.futexes.take_woken(p.tid),
            Wait::SigWait(set) => p.pending & set != 0,
        };
        let timed_out = b.deadline.is_some_and(|d| now >= d);
        if timed_out && !ready && matches!(b.wait, Wait::Futex) {
            self.futexes.cancel(p.tid);
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

    /// True if `pid` has a child to report or no children at all (`wait4` then fails).
    fn child_event(&self, pid: Pid) -> bool {
        self.zombies.values().any(|z| z.ppid == pid) || !self.procs.values().any(|c| c.ppid == pid)
    }

    /// Nothing can run: sleep in the host until a descriptor, a deadline or the time
    /// limit wakes a process.
    fn sleep_until_ready(&mut self, limit: Option<Instant>) -> Result<(), RunError> {
        let mut fds = Vec::new();
        let mut wake = limit;
        for p in self.procs.values() {
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
            let pids: Vec<String> = self.procs.keys().map(|p| p.to_string()).collect();
            return Err(RunError::Deadlock(pids.join(", ")));
        }
        if let Some(fd) = crate::stop::wake_fd() {
            fds.push(libc::pollfd { fd, events: libc::POLLIN, revents: 0 });
        }
        let ms = wake.map_or(-1, |w| {
            let d = w.saturating_duration_since(Instant::now());
            d.as_millis().min(i32::MAX as u128) as i32 + i32::from(d.subsec_nanos() % 1_000_000 != 0)
        });
        let t0 = Instant::now();
        // SAFETY: a valid array of pollfd of the given length.
        unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
        self.stats.idle_ns += t0.elapsed().as_nanos() as u64;
        Ok(())
    }

    /// Runs `p` for one time slice.
    fn run_slice(&mut self, p: &mut Process) {
        let start = p.cpu.icount;
        loop {
            if p.thread_exited {
                return;
            }
            let t0 = Instant::now();
            self.deliver_signals(p);
            self.stats.os_ns += t0.elapsed().as_nanos() as u64;
            if p.exit.is_some() || p.blocked.is_some() {
                return;
            }
            let used = p.cpu.icount - start;
            if used >= self.cfg.slice {
                return;
            }
            let t0 = Instant::now();
            let exit = self.engine.run(&mut p.cpu, &mut p.aspace, p.pid, self.cfg.slice - used);
            let t1 = Instant::now();
            self.stats.engine_ns += (t1 - t0).as_nanos() as u64;
            match exit {
                Exit::Budget => {}
                Exit::Syscall => syscall::dispatch(self, p),
                Exit::Fault(f) => self.fault(p, &f),
            }
            self.stats.os_ns += t1.elapsed().as_nanos() as u64;
            if std::mem::take(&mut self.yield_slice) {
                return;
            }
        }
    }

    /// A process has exited: release its resources, make it a zombie for its parent
    /// (or forget it if the parent ignores `SIGCHLD`), hand its children to init and
    /// release a parent waiting in `vfork`.
    pub(crate) fn reap(&mut self, mut p: Process) {
        let status = p.exit.expect("an exited process");
        // Every thread ends: robust futexes it held are marked, `clear_child_tid` words
        // zeroed and woken (what a thread's own `exit` did already is not done twice).
        for tid in p.tids().collect::<Vec<_>>() {
            p.switch_to(tid);
            syscall::futex::thread_exit(self, &mut p);
        }
        self.give_back_aspace(&mut p);
        if p.pid == FIRST_PID {
            self.first_status = Some(status);
        }
        self.engine.drop_context(p.pid);
        for tid in p.tids().collect::<Vec<_>>() {
            self.tids.remove(&tid);
            self.futexes.cancel(tid);
        }
        p.fds = FdTable::default();
        for c in self.procs.values_mut() {
            if c.ppid == p.pid {
                c.ppid = 1;
            }
        }
        self.zombies.retain(|_, z| z.ppid != p.pid);
        let (code, st) = match status {
            ExitStatus::Code(c) => (CLD_EXITED, c),
            ExitStatus::Signal(s) => (CLD_KILLED, s),
        };
        let info = SigInfo { code, pid_or_addr: p.pid, uid: ids()[0], status: st };
        let mut keep = true;
        if let Some(parent) = self.procs.get_mut(&p.ppid) {
            let act = parent.sigactions[(SIGCHLD - 1) as usize];
            if p.exit_signal == SIGCHLD && (act.handler == SIG_IGN || act.flags & SA_NOCLDWAIT != 0) {
                keep = false;
            }
            if p.exit_signal != 0 {
                parent.raise_group(p.exit_signal, info);
            }
        } else {
            keep = false;
        }
        if keep {
            let icount = p.group_icount() + p.child_icount;
            self.zombies.insert(p.pid, Zombie { ppid: p.ppid, pgid: p.pgid, status, icount });
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
        let info = SigInfo { code: SI_USER, pid_or_addr: p.pid, uid: ids()[0], status: 0 };
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

    /// A guest exception: a signal with the faulting instruction's state, delivered to
    /// a handler if there is one, else the default action (morph says where). The
    /// vector, error code and fault address are recorded as Linux records them for the
    /// signal frame's `sigcontext` (`trapno`, `err`, `cr2`).
    fn fault(&mut self, p: &mut Process, f: &morph_cpu::Fault) {
        let mut err = 0;
        let (sig, code, addr, what) = match &f.kind {
            FaultKind::Page(m) => {
                let how = match m.kind {
                    MemFaultKind::Unmapped => "unmapped",
                    MemFaultKind::Protection => "protected",
                };
                let code = if m.kind == MemFaultKind::Unmapped { SEGV_MAPERR } else { SEGV_ACCERR };
                let rw = if m.write { "write to" } else { "read of" };
                // The page-fault error code: user mode (4), a write (2), a present page
                // (1: a protection fault; Linux keeps PROT_NONE pages not present), an
                // instruction fetch (0x10, with NX). A fetch is a read at the instruction
                // or in the rest of its 15 bytes.
                let present = m.kind == MemFaultKind::Protection && p.aspace.pte(m.addr).readable();
                let fetch = !m.write && m.addr.wrapping_sub(f.eip) < morph_cpu::MAX_INSN_LEN;
                err = 4 | u32::from(m.write) << 1 | u32::from(present) | u32::from(fetch) << 4;
                p.cpu.trap.cr2 = m.addr;
                (SIGSEGV, code, m.addr, format!("{rw} {how} address {:#010x}", m.addr))
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
            FaultKind::Overflow => (SIGSEGV, SI_KERNEL, 0, "overflow trap (into)".to_string()),
            FaultKind::Bound => (SIGSEGV, SI_KERNEL, 0, "bound range exceeded".to_string()),
            FaultKind::Fpu => (SIGFPE, fpu_code(&p.cpu.fpu), f.eip, "x87 floating-point exception".to_string()),
        };
        p.cpu.trap.vector = f.kind.vector();
        p.cpu.trap.error_code = err;
        if let FaultKind::Page(m) = &f.kind
            && m.write
            && m.kind == MemFaultKind::Protection
            && p.aspace.pte(m.addr).writable()
        {
            // A write the page allows failed: its private copy could not be made. Linux's
            // OOM killer would end the process with SIGKILL; so does morph, saying why.
            eprintln!(
                "morph: pid {} killed by SIGKILL: out of guest memory (--max-mem {} MiB) at eip {:#010x}",
                p.pid,
                self.cfg.max_mem >> 20,
                f.eip
            );
            p.exit = Some(ExitStatus::Signal(SIGKILL));
            return;
        }
        let act = p.sigactions[(sig - 1) as usize];
        let blocked = p.sigmask & (1 << (sig - 1)) != 0;
        if act.handler > SIG_IGN && !blocked {
            p.raise(sig, SigInfo { code, pid_or_addr: addr, uid: 0, status: 0 });
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
    let e = fpu.fsw() & !fpu.fcw();
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

/// True if any of `fds` is ready now.
pub(crate) fn poll_now(fds: &[libc::pollfd]) -> bool {
    let mut v = fds.to_vec();
    // SAFETY: a valid array of pollfd of the given length; zero timeout.
    unsafe { libc::poll(v.as_mut_ptr(), v.len() as libc::nfds_t, 0) > 0 }
}

/// The nice value morph runs at, which the first process inherits.
fn host_nice() -> i32 {
    // SAFETY: getpriority of our own process has no preconditions; errors read as 0.
    unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) }.clamp(-20, 19)
}

/// The host's user and group ids (the guest runs as the user running morph), read once:
/// morph never changes them.
pub(crate) fn ids() -> [u32; 4] {
    static IDS: std::sync::OnceLock<[u32; 4]> = std::sync::OnceLock::new();
    // SAFETY: these calls cannot fail and have no preconditions.
    *IDS.get_or_init(|| unsafe { [libc::getuid(), libc::geteuid(), libc::getgid(), libc::getegid()] })
}

impl Process {
    /// Makes `sig` pending with `info` (a second instance of a pending standard signal
    /// merges with the first, as Linux does).
    pub fn raise(&mut self, sig: i32, info: SigInfo) {
        crate::process::raise_into(&mut self.pending, &mut self.siginfo, sig, info);
    }

    /// Raises the signals of the `alarm` and interval timers that are due at `now`, and
    /// re-arms periodic timers (expirations that fall while the signal is still
    /// pending, or that were missed, count as overruns, as in Linux).
    pub fn fire_timers(&mut self, now: Instant) {
        if let Some(t) = self.alarm
            && now >= t
        {
            self.alarm = None;
            self.raise_group(SIGALRM, SigInfo { code: SI_KERNEL, ..SigInfo::default() });
        }
        for id in 0..self.timers.len() {
            let Some(t) = self.timers[id] else { continue };
            let Some(due) = t.next.filter(|&d| now >= d) else { continue };
            let mut missed = 0u32;
            let next = if t.interval.is_zero() {
                None
            } else {
                let late = (now - due).as_nanos() / t.interval.as_nanos();
                missed = late.min(u128::from(u32::MAX)) as u32;
                Some(due + t.interval * (missed.saturating_add(1)))
            };
            let sig = t.signo;
            let already = sig != 0
                && self.pending & (1u64 << (sig - 1)) != 0
                && self.siginfo[(sig - 1) as usize].code == SI_TIMER
                && self.siginfo[(sig - 1) as usize].pid_or_addr == id as u32;
            let timer = self.timers[id].as_mut().expect("a timer");
            timer.next = next;
            if already {
                timer.overrun = timer.overrun.saturating_add(missed.saturating_add(1));
                self.siginfo[(sig - 1) as usize].uid = timer.overrun;
            } else {
                timer.overrun = missed;
                if sig != 0 {
                    // siginfo `_timer`: si_tid, si_overrun, si_value at the places of
                    // si_pid, si_uid, si_status.
                    let info = SigInfo { code: SI_TIMER, pid_or_addr: id as u32, uid: missed, status: t.value as i32 };
                    self.raise_group(sig, info);
                }
            }
        }
    }

    /// The earliest armed `alarm` or interval timer.
    pub fn next_timer(&self) -> Option<Instant> {
        self.timers.iter().flatten().filter_map(|t| t.next).chain(self.alarm).min()
    }

    /// Pending signals that are not blocked.
    pub fn deliverable(&self) -> u64 {
        self.pending & !(self.sigmask & !UNBLOCKABLE)
    }
}
