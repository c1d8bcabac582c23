//! The machine's state: physical memory, page cache, CPU engine, file system, every
//! guest process, the futex waiters and the socket namespace.
//!
//! This module holds the state and what creates and changes it as a whole (loading a
//! program, the first process, `kill`); the scheduler that runs it is
//! [`crate::machine`], the system calls that change it are [`crate::syscall`].

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::rc::Rc;
use std::time::{Duration, Instant};

pub(crate) mod ctx;
pub(crate) mod futexes;
pub(crate) mod sockets;
pub(crate) mod tasks;

use morph_cpu::Cpu;
use morph_dbt::{Engine, EngineConfig};
use morph_mem::{AddressSpace, PageCache, PhysMem};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::host::{self, host_nice, host_prctl_attrs, host_sched_policy, ids};
use crate::layout::{Aslr, Kernel, Layout};
use crate::linux::*;
use crate::loader::{self, Image, LoadArgs, LoadError};
use crate::process::{FdEntry, FdTable, OpenFile, Pid, Process, SigAction, SigInfo};
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
    /// The `randomize_va_space` mode `--aslr` named (0, 1 or 2), if it named one rather
    /// than a list of components (`/proc/sys/kernel/randomize_va_space`; see
    /// [`crate::layout::randomize_va_space`]).
    pub aslr_mode: Option<u8>,
    /// The kernel whose ASLR and fork scheduling (2.6.12: child first) are modeled.
    pub kernel: Kernel,
    /// Trace every system call in strace's format (to stderr, or to [`Machine::trace_to`]'s
    /// writer).
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
            aslr_mode: None,
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

/// System calls counted by number: an array for the numbers Linux has (one increment
/// per call, in the path of every call: a map's lookup was a tenth of a
/// `clock_gettime`'s cost), a map for any other number a guest tries.
#[derive(Clone, Debug)]
pub struct SyscallCounts {
    low: Box<[u64; 512]>,
    high: BTreeMap<u32, u64>,
}

impl Default for SyscallCounts {
    fn default() -> SyscallCounts {
        SyscallCounts { low: Box::new([0; 512]), high: BTreeMap::new() }
    }
}

impl SyscallCounts {
    /// Counts one call of `nr`.
    #[inline]
    pub fn add(&mut self, nr: u32) {
        match self.low.get_mut(nr as usize) {
            Some(c) => *c += 1,
            None => *self.high.entry(nr).or_default() += 1,
        }
    }

    /// The numbers called, with their counts.
    pub fn by_number(&self) -> BTreeMap<u32, u64> {
        let low = self.low.iter().enumerate().filter(|(_, c)| **c != 0).map(|(nr, c)| (nr as u32, *c));
        low.chain(self.high.iter().map(|(&nr, &c)| (nr, c))).collect()
    }

    /// All calls.
    pub fn total(&self) -> u64 {
        self.low.iter().sum::<u64>() + self.high.values().sum::<u64>()
    }
}

/// OS-layer counters.
#[derive(Clone, Debug, Default)]
pub struct OsStats {
    /// System calls by number.
    pub syscalls: SyscallCounts,
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
///
/// Its fields are private to `kernel`: a system call handler gets the narrow context
/// of its family (`kernel/ctx.rs`), and the scheduler (`crate::machine`) and the dispatcher
/// use the accessors below.
pub struct Machine {
    cfg: Config,
    phys: Rc<PhysMem>,
    cache: PageCache,
    engine: Engine,
    vfs: Vfs,
    rng: ChaCha8Rng,
    /// The process table.
    tasks: tasks::Tasks,
    /// Threads waiting in `futex`, and those woken.
    futexes: futexes::FutexTable,
    stats: OsStats,
    started: Instant,
    ioctl_unknown: HashMap<u32, u64>,
    /// Advisory file locks (`fcntl` record locks, `flock`).
    locks: crate::locks::Locks,
    net: sockets::Net,
    /// The pseudo-terminals.
    ptys: crate::pty::Ptys,
    /// The machine's host and domain names.
    uts: Uts,
    /// Set by a system call to end the running process's time slice (fork: the child
    /// runs first).
    yield_slice: bool,
    /// Where `--strace` lines go (stderr if `None`).
    trace_out: Option<Box<dyn std::io::Write>>,
}

/// The machine's own names (Linux's UTS namespace, one for the machine): what
/// `uname` reports as the node and domain names, set by `sethostname` and
/// `setdomainname` for every process of the machine, never the host's.
pub(crate) struct Uts {
    /// The node name (at first `morph`).
    pub(crate) hostname: Vec<u8>,
    /// The NIS domain name (at first `(none)`, as Linux's).
    pub(crate) domainname: Vec<u8>,
}

impl Default for Uts {
    fn default() -> Uts {
        Uts { hostname: b"morph".to_vec(), domainname: b"(none)".to_vec() }
    }
}

pub use crate::process::FIRST_PID;

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
            tasks: Default::default(),
            futexes: Default::default(),
            stats: OsStats::default(),
            started: Instant::now(),
            ioctl_unknown: HashMap::new(),
            locks: crate::locks::Locks::default(),
            net: sockets::Net::default(),
            ptys: crate::pty::Ptys::default(),
            uts: Uts::default(),
            yield_slice: false,
            trace_out: None,
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

    /// Writes the engine's persistent translation cache (`--tcache-dir`), with the
    /// cold blocks `--tcache-cold` asks for (see `Engine::save_tcache`).
    pub fn save_tcache(&mut self) {
        self.engine.save_tcache(Some(&self.phys));
    }

    /// Gives up the engine's caches without freeing them one by one, for a run about to
    /// end (see `Engine::abandon_caches`).
    pub fn abandon_caches(&mut self) {
        self.engine.abandon_caches();
    }

    /// Physical memory (for its counters).
    pub fn phys(&self) -> &PhysMem {
        &self.phys
    }

    /// The page cache (for its counters).
    pub fn page_cache(&self) -> &PageCache {
        &self.cache
    }

    /// Sends the `--strace` lines (see [`Config::strace`]) to `out` instead of stderr.
    pub fn trace_to(&mut self, out: Box<dyn std::io::Write>) {
        self.trace_out = Some(out);
    }

    /// Writes one `--strace` line.
    pub(crate) fn trace(&mut self, line: &str) {
        use std::io::Write as _;
        match &mut self.trace_out {
            Some(out) => {
                let _ = writeln!(out, "{line}");
            }
            None => eprintln!("{line}"),
        }
    }

    /// Loads `path` into a fresh address space with a new layout; used by spawn.
    fn load_image(
        &mut self,
        cwd: &[u8],
        (path, execfn): (&str, &[u8]),
        argv: &[Vec<u8>],
        envp: &[Vec<u8>],
        randomize: bool,
    ) -> Result<(AddressSpace, Image), LoadError> {
        let mut l = ImageLoader {
            cfg: &self.cfg,
            phys: &self.phys,
            vfs: &self.vfs,
            cache: &mut self.cache,
            rng: &mut self.rng,
        };
        l.load(cwd, (path, execfn), argv, envp, randomize)
    }

    /// The configuration.
    pub(crate) fn config(&self) -> &Config {
        &self.cfg
    }

    /// The process table (the scheduler's; handlers get it in a [`ctx::TaskCtx`]).
    pub(crate) fn tasks(&self) -> &tasks::Tasks {
        &self.tasks
    }

    /// The process table, to change.
    pub(crate) fn tasks_mut(&mut self) -> &mut tasks::Tasks {
        &mut self.tasks
    }

    /// The pseudo-terminals.
    pub(crate) fn ptys(&self) -> &crate::pty::Ptys {
        &self.ptys
    }

    /// The futex waiters.
    pub(crate) fn futexes(&self) -> &futexes::FutexTable {
        &self.futexes
    }

    /// The futex waiters, to change (a wait ends or is cancelled).
    pub(crate) fn futexes_mut(&mut self) -> &mut futexes::FutexTable {
        &mut self.futexes
    }

    /// OS counters, to count.
    pub(crate) fn stats_mut(&mut self) -> &mut OsStats {
        &mut self.stats
    }

    /// The execution engine, to run a thread or drop a process's translations.
    pub(crate) fn engine_mut(&mut self) -> &mut Engine {
        &mut self.engine
    }

    /// Whether a system call ended the running thread's time slice (and clears it).
    pub(crate) fn take_yield(&mut self) -> bool {
        std::mem::take(&mut self.yield_slice)
    }

    /// After a failure for want of a frame (see `PhysMem::take_starved`): true if the
    /// page cache gave back up to `pages` idle pages, so the access may be tried again.
    pub(crate) fn reclaim_starved(&mut self, pages: u32) -> bool {
        self.phys.take_starved() && self.cache.reclaim(&self.phys, pages, None) > 0
    }

    /// Creates the first process, running `path` with `argv` and `envp`, with the host's
    /// standard descriptors 0-2 and the host's current directory (inside the root).
    pub fn spawn(&mut self, path: &str, argv: &[Vec<u8>], envp: &[Vec<u8>], cwd: &str) -> Result<Pid, LoadError> {
        // The name it goes by is the path it was started by (a script's, a link's).
        let comm = crate::process::Comm::of_path(path.as_bytes());
        let execfn = path.as_bytes().to_vec();
        // A `#!` script runs its interpreter, as execve does (a file that cannot be
        // read is left for the loader to report).
        let (path, argv) = loader::follow_scripts(path.as_bytes().to_vec(), argv.to_vec(), |path| {
            let mut head = [0u8; 256];
            let n = match self.vfs.open_exec(cwd.as_bytes(), path) {
                Ok(fd) => host::pread(std::os::fd::AsRawFd::as_raw_fd(&fd), &mut head, 0).unwrap_or(0),
                Err(_) => 0,
            };
            Ok((path.to_vec(), head[..n].to_vec()))
        })
        .map_err(|errno| LoadError::Io {
            path: path.to_string(),
            msg: "too many levels of #! interpreters".into(),
            errno,
        })?;
        let path = String::from_utf8_lossy(&path).into_owned();
        let (aspace, img) = self.load_image(cwd.as_bytes(), (&path, &execfn), &argv, envp, true)?;
        let mut fds = FdTable::default();
        for fd in 0..3 {
            if let Ok(d) = host::dup_cloexec(fd, 3) {
                fds.set(fd as u32, FdEntry::of(OpenFile::inherited(d), false));
            }
        }
        let pid = self.tasks.next_pid;
        self.tasks.next_pid += 1;
        let mut rlimits = [(u64::MAX, u64::MAX); 16];
        for (i, r) in rlimits.iter_mut().enumerate() {
            if let Some(lim) = host::getrlimit(i as u32) {
                *r = lim;
            }
        }
        fds.set_limit(rlimits[7].0); // RLIMIT_NOFILE
        let mut cpu = Cpu::with_segments(self.cfg.kernel.user_segments());
        cpu.model = self.cfg.engine.cpu;
        cpu.eip = img.entry;
        cpu.gpr[morph_cpu::state::reg::ESP] = img.sp;
        // What a child of morph would inherit from it: its policy, no_new_privs, slack.
        let ((policy, rt_priority), (no_new_privs, slack)) = (host_sched_policy(), host_prctl_attrs());
        let p = Process {
            pid,
            tid: pid,
            ppid: 1,
            groups: host::groups().into(),
            cpu,
            aspace,
            fds,
            cwd: cwd.as_bytes().to_vec(),
            root: None,
            exe: img.exe.clone(),
            brk_start: img.brk,
            brk: img.brk,
            sigactions: [SigAction::default(); 64],
            sigmask: 0,
            umask: 0o022,
            nice: host_nice(),
            personality: 0,
            rlimits,
            exit: None,
            pgid: pid,
            sid: pid,
            no_ctty: false,
            pending: 0,
            siginfo: [SigInfo::default(); 64],
            altstack: (0, 0, SS_DISABLE),
            saved_mask: None,
            blocked: None,
            resumed: None,
            partial_write: None,
            clear_child_tid: 0,
            robust_list: (0, 0),
            rseq: Default::default(),
            attrs: crate::process::ThreadAttrs::new(comm, policy, rt_priority, no_new_privs, slack),
            threads: Vec::new(),
            thread_exited: false,
            leader_exit: None,
            dead_threads_icount: 0,
            vfork_parent: None,
            vfork_lent: false,
            vm_share: None,
            holds_vm: false,
            alarm: None,
            alarm_interval: std::time::Duration::ZERO,
            cpu_timers: Default::default(),
            timers: Vec::new(),
            exit_signal: SIGCHLD,
            start_icount: 0,
            child_icount: 0,
            cmdline: crate::process::cmdline_of(&argv),
            parent_tid: 0,
            job: Default::default(),
            dumpable: true,
            child_subreaper: false,
            membarrier: 0,
        };
        self.stats.processes += 1;
        self.tasks.procs.insert(pid, p);
        self.tasks.tids.insert(pid, pid);
        Ok(pid)
    }
}

/// What loading a program needs: the configuration (layout), physical memory, the file
/// system, the page cache and the RNG (ASLR, `AT_RANDOM`).
struct ImageLoader<'a> {
    cfg: &'a Config,
    phys: &'a Rc<PhysMem>,
    vfs: &'a Vfs,
    cache: &'a mut PageCache,
    rng: &'a mut ChaCha8Rng,
}

impl ImageLoader<'_> {
    /// Loads `path` into a fresh address space with a new layout (spawn and exec), its
    /// components randomized as `--aslr` says unless `randomize` is false (the
    /// caller's `ADDR_NO_RANDOMIZE` personality: none then, as Linux sets no
    /// `PF_RANDOMIZE`).
    fn load(
        &mut self,
        cwd: &[u8],
        (path, execfn): (&str, &[u8]),
        argv: &[Vec<u8>],
        envp: &[Vec<u8>],
        randomize: bool,
    ) -> Result<(AddressSpace, Image), LoadError> {
        let aslr = if randomize { self.cfg.aslr } else { crate::layout::Aslr::default() };
        let layout = Layout::new(self.cfg.kernel, aslr, self.rng);
        let mut aspace = AddressSpace::new(self.phys.clone()).map_err(|_| LoadError::NoMemory(path.into()))?;
        let vfs = self.vfs;
        let open = |p: &str| vfs.open_exec(cwd, p.as_bytes());
        let name_of = |f: &std::fs::File| vfs.guest_path_of(f).ok().map(|g| String::from_utf8_lossy(&g).into_owned());
        let args = LoadArgs {
            path,
            execfn,
            argv,
            envp,
            layout,
            open: &open,
            name_of: &name_of,
            ids: ids(),
            cpu: self.cfg.engine.cpu,
        };
        let img = match loader::load(&args, &mut aspace, self.cache, self.rng) {
            // Out of guest memory: the page cache gives back every page no process maps
            // (see `PageCache::reclaim`), and the program is loaded again from scratch.
            Err(LoadError::NoMemory(_)) if self.cache.reclaim(self.phys, u32::MAX, None) > 0 => {
                aspace = AddressSpace::new(self.phys.clone()).map_err(|_| LoadError::NoMemory(path.into()))?;
                loader::load(&args, &mut aspace, self.cache, self.rng)?
            }
            r => r?,
        };
        aspace.set_mmap_base(layout.mmap_base);
        Ok((aspace, img))
    }
}
