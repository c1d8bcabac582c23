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
use crate::process::{ExitStatus, FdEntry, FdTable, Pid, Process, SigAction};
use crate::syscall;
use crate::vfs::Vfs;

/// Machine configuration.
#[derive(Clone, Debug)]
pub struct Config {
    /// Host directory that is the guest's `/`.
    pub root: PathBuf,
    /// Seed of the machine's one RNG (ASLR, `AT_RANDOM`, `getrandom`, `/dev/urandom`).
    pub seed: u64,
    /// Which layout components are randomized.
    pub aslr: Aslr,
    /// The kernel whose ASLR is modeled.
    pub kernel: Kernel,
    /// Print every system call.
    pub strace: bool,
    /// Guest physical memory limit in bytes.
    pub max_mem: u64,
    /// Wall-clock limit.
    pub timeout: Option<Duration>,
    /// Guest instructions per time slice.
    pub slice: u64,
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
    /// Processes created.
    pub processes: u64,
    /// `exec`s done.
    pub execs: u64,
}

/// Why a run ended abnormally (not a guest exit).
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The wall-clock limit was reached.
    #[error("time limit of {0:?} exceeded")]
    Timeout(Duration),
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
    next_pid: Pid,
    pub(crate) stats: OsStats,
    pub(crate) started: Instant,
    pub(crate) ioctl_unknown: HashMap<u32, u64>,
}

/// The first pid handed out.
pub const FIRST_PID: Pid = 100;

impl Machine {
    /// A machine with no processes.
    pub fn new(cfg: Config) -> std::io::Result<Machine> {
        let phys = Rc::new(PhysMem::new(cfg.max_mem).map_err(std::io::Error::other)?);
        let vfs = Vfs::new(&cfg.root)?;
        let engine = Engine::new(cfg.engine);
        Ok(Machine {
            rng: ChaCha8Rng::seed_from_u64(cfg.seed),
            cfg,
            phys,
            cache: PageCache::new(),
            engine,
            vfs,
            procs: BTreeMap::new(),
            next_pid: FIRST_PID,
            stats: OsStats::default(),
            started: Instant::now(),
            ioctl_unknown: HashMap::new(),
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

    fn host_ids() -> [u32; 4] {
        // SAFETY: these calls cannot fail and have no preconditions.
        unsafe { [libc::getuid(), libc::geteuid(), libc::getgid(), libc::getegid()] }
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
        let open = |p: &str| vfs.open(cwd, p.as_bytes(), libc::O_RDONLY, 0);
        let args = LoadArgs { path, argv, envp, layout, open: &open, ids: Self::host_ids() };
        let img = loader::load(&args, &mut aspace, &mut self.cache, &mut self.rng)?;
        aspace.set_mmap_base(layout.mmap_base);
        Ok((aspace, img))
    }

    /// Creates the first process, running `path` with `argv` and `envp`, with the host's
    /// standard descriptors 0-2 and the host's current directory (inside the root).
    pub fn spawn(&mut self, path: &str, argv: &[Vec<u8>], envp: &[Vec<u8>], cwd: &str) -> Result<Pid, LoadError> {
        let (aspace, img) = self.load_image(cwd, path, argv, envp)?;
        let mut fds = FdTable::default();
        for fd in 0..3 {
            // SAFETY: duplicating the host's standard descriptors; failure is checked.
            let d = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 3) };
            if d >= 0 {
                // SAFETY: a fresh descriptor we own.
                let host = unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(d) };
                fds.set(fd as u32, FdEntry::new(host, false));
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
            ppid: 1,
            cpu,
            aspace,
            fds,
            cwd: cwd.to_string(),
            exe: path.to_string(),
            brk_start: img.brk,
            brk: img.brk,
            sigactions: [SigAction::default(); 64],
            sigmask: 0,
            umask: 0o022,
            rlimits,
            exit: None,
        };
        self.stats.processes += 1;
        self.procs.insert(pid, p);
        Ok(pid)
    }

    /// Runs until every process has exited; returns the status of the first process.
    pub fn run(&mut self) -> Result<ExitStatus, RunError> {
        let first = *self.procs.keys().next().expect("a process to run");
        let mut status = None;
        let deadline = self.cfg.timeout.map(|t| (t, Instant::now() + t));
        while let Some(&pid) = self.procs.keys().next() {
            let mut p = self.procs.remove(&pid).expect("process");
            loop {
                if let Some((t, d)) = deadline
                    && Instant::now() > d
                {
                    return Err(RunError::Timeout(t));
                }
                let t0 = Instant::now();
                let exit = self.engine.run(&mut p.cpu, &mut p.aspace, p.pid, self.cfg.slice);
                let t1 = Instant::now();
                self.stats.engine_ns += (t1 - t0).as_nanos() as u64;
                match exit {
                    Exit::Budget => {}
                    Exit::Syscall => syscall::dispatch(self, &mut p),
                    Exit::Fault(f) => self.fault(&mut p, &f),
                }
                self.stats.os_ns += t1.elapsed().as_nanos() as u64;
                if p.exit.is_some() {
                    break;
                }
            }
            self.engine.drop_context(pid);
            if pid == first {
                status = p.exit;
            }
        }
        Ok(status.unwrap_or(ExitStatus::Code(0)))
    }

    /// A guest exception: the signal's default action (handlers arrive with signal
    /// delivery). morph says where it happened.
    fn fault(&mut self, p: &mut Process, f: &morph_cpu::Fault) {
        let (sig, what) = match &f.kind {
            FaultKind::Page(m) => {
                let how = match m.kind {
                    MemFaultKind::Unmapped => "unmapped",
                    MemFaultKind::Protection => "protected",
                };
                let rw = if m.write { "write to" } else { "read of" };
                (SIGSEGV, format!("{rw} {how} address {:#010x}", m.addr))
            }
            FaultKind::DivideError => (SIGFPE, "divide error".to_string()),
            FaultKind::InvalidOpcode(bytes) => {
                let hex: Vec<String> = bytes.iter().map(|b| format!("{b:02x}")).collect();
                (SIGILL, format!("invalid or unsupported instruction (bytes {})", hex.join(" ")))
            }
            FaultKind::GeneralProtection => (SIGSEGV, "general protection fault".to_string()),
            FaultKind::Breakpoint => (SIGTRAP, "breakpoint".to_string()),
            FaultKind::Overflow => (SIGSEGV, "overflow trap (into)".to_string()),
            FaultKind::Bound => (SIGSEGV, "bound range exceeded".to_string()),
            FaultKind::Fpu => (SIGFPE, "x87 floating-point exception".to_string()),
        };
        eprintln!("morph: pid {} killed by {} at eip {:#010x}: {what}", p.pid, signal_name(sig), f.eip);
        p.exit = Some(ExitStatus::Signal(sig));
    }
}
