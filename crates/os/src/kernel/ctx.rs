//! The narrow context of the system calls that touch only files, memory, clocks and
//! ids (the `file`, `fs`, `stat`, `mm`, `time` and `ids` families): the file system, the
//! page cache and physical memory, `/proc`'s read-only view of the other processes, the
//! RNG and the configuration. Such a handler cannot reach the process table, the
//! engine, the futex waiters or the sockets. The socket calls get a [`NetCtx`]: the
//! socket namespace, the file system (for `AF_UNIX` paths) and the counters. The
//! pipe, readiness and sleep calls (the `io` family) get an [`IoCtx`]: only the flag
//! that ends the caller's time slice. The process, thread, futex and signal calls
//! (`proc`, `futex`, `signal`, `rseq`) get a [`TaskCtx`]: the process table, the futex
//! waiters, the engine (exec drops a process's translations), the counters and what
//! loading a program needs; no sockets, no `--strace` sink.

use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

use morph_mem::{PageCache, PhysMem};
use rand_chacha::ChaCha8Rng;

use std::rc::Rc;

use morph_dbt::Engine;
use morph_mem::AddressSpace;

use super::futexes::FutexTable;
use super::sockets::Net;
use super::tasks::Tasks;
use super::{Config, ImageLoader, Machine, OsStats};
use crate::loader::{Image, LoadError};
use crate::process::{Pid, Process};
use crate::special;
use crate::vfs::Vfs;

/// What a file, name, metadata, memory, time or id call may use (see the module
/// documentation).
pub(crate) struct FileCtx<'a> {
    /// The machine's configuration.
    pub(crate) cfg: &'a Config,
    /// The sandboxed file system.
    pub(crate) vfs: &'a Vfs,
    /// Physical memory.
    pub(crate) phys: &'a PhysMem,
    /// The page cache.
    pub(crate) cache: &'a mut PageCache,
    /// The machine's one RNG (seeded by `--seed`).
    pub(crate) rng: &'a mut ChaCha8Rng,
    /// Unknown `ioctl` requests, counted.
    pub(crate) ioctl_unknown: &'a mut HashMap<u32, u64>,
    /// Advisory file locks.
    pub(crate) locks: &'a mut crate::locks::Locks,
    /// The machine's host and domain names.
    pub(crate) uts: &'a mut super::Uts,
    /// When the machine started (the uptime).
    pub(crate) started: Instant,
    /// Every process but the caller, seen only through `special::Sys` and
    /// [`FileCtx::file_resized`].
    procs: &'a mut BTreeMap<Pid, Process>,
    /// Every live thread id, for `special::Sys`.
    tids: &'a BTreeMap<Pid, Pid>,
    /// The zombies, for `special::Sys`.
    zombies: &'a BTreeMap<Pid, crate::process::Zombie>,
    /// The machine's counters, for `/proc`'s machine-wide files.
    counters: special::Counters,
    /// The machine's pseudo-terminals.
    pub(crate) ptys: &'a crate::pty::Ptys,
}

impl<'a> FileCtx<'a> {
    /// What `/dev` and `/proc` see: the file system, every process but the caller, and
    /// the machine's memory, clock and counters.
    pub(crate) fn sys(&self) -> special::Sys<'_> {
        let machine = special::MachineView {
            phys: self.phys,
            cache: self.cache,
            started: self.started,
            counters: self.counters,
            sysctl: sysctl(self.cfg, self.uts),
        };
        special::Sys {
            vfs: self.vfs,
            procs: self.procs,
            tids: self.tids,
            zombies: self.zombies,
            machine,
            ptys: self.ptys,
        }
    }

    /// The file `key` now has `len` bytes: every other process's mappings of it see the
    /// new end (pages wholly past it give `SIGBUS`), as the caller's must.
    pub(crate) fn file_resized(&mut self, key: morph_mem::FileKey, len: u64) {
        for q in self.procs.values_mut() {
            q.aspace.file_resized(key, len);
        }
    }

    /// The first record lock of another process than `pid` on `[start, end)` of the file
    /// `key` that a lock of kind `write` conflicts with; a lock whose process is gone, or
    /// has no descriptor of the file open any more, is dropped first (see `crate::locks`).
    pub(crate) fn lock_conflict(
        &mut self,
        key: morph_mem::FileKey,
        pid: crate::process::Pid,
        start: u64,
        end: u64,
        write: bool,
    ) -> Option<crate::locks::RangeLock> {
        let procs = &*self.procs;
        let live = |q: Pid| procs.get(&q).is_some_and(|q| q.fds.iter().any(|(_, e)| e.file() == Some(key)));
        self.locks.conflict(key, pid, start, end, write, live)
    }

    /// Raises `sig` with `info` in every process of group `pgrp`, the caller's too if it
    /// is one (a terminal's signals to its foreground group).
    pub(crate) fn signal_group(&mut self, p: &mut Process, pgrp: Pid, sig: i32, info: crate::process::SigInfo) {
        for q in self.procs.values_mut().filter(|q| q.pgid == pgrp) {
            q.raise_group(sig, info);
        }
        if p.pgid == pgrp {
            p.raise_group(sig, info);
        }
    }

    /// Whether `id` names something a pid can (Linux's `find_vpid`): a live thread, a
    /// process group or a session, among every process the caller's included.
    pub(crate) fn pid_in_use(&self, p: &Process, id: Pid) -> bool {
        std::iter::once(p).chain(self.procs.values()).any(|q| q.pgid == id || q.sid == id || q.tids().any(|t| t == id))
    }

    /// Whether the owner `o` of I/O signals names a live thread, process or process group
    /// (what `F_GETOWN` shows; 0 otherwise).
    pub(crate) fn owner_alive(&self, p: &Process, o: &crate::files::Owner) -> bool {
        use crate::files::OwnerKind;
        o.id != 0
            && std::iter::once(p).chain(self.procs.values()).any(|q| match o.kind {
                OwnerKind::Thread => q.tids().any(|t| t == o.id),
                OwnerKind::Process => q.pid == o.id,
                OwnerKind::Group => q.pgid == o.id,
            })
    }

    /// How many processes there are besides the caller.
    pub(crate) fn other_processes(&self) -> usize {
        self.procs.len()
    }
}

/// The settings `/proc/sys` shows, from the configuration and the machine's names.
fn sysctl<'a>(cfg: &Config, uts: &'a super::Uts) -> special::Sysctl<'a> {
    special::Sysctl {
        randomize_va_space: crate::layout::randomize_va_space(cfg.aslr, cfg.kernel, cfg.aslr_mode),
        hostname: &uts.hostname,
        domainname: &uts.domainname,
        threads_max: cfg.max_procs,
    }
}

impl Machine {
    /// The counters `/proc`'s machine-wide files report.
    fn counters(&self) -> special::Counters {
        special::Counters {
            idle: std::time::Duration::from_nanos(self.stats.idle_ns),
            forks: self.stats.processes,
            switches: self.tasks.switches,
            exited_icount: self.tasks.exited_icount,
            last_pid: self.tasks.next_pid.saturating_sub(1),
        }
    }

    /// The context of a file, name, metadata, memory, time or id call.
    pub(crate) fn file_ctx(&mut self) -> FileCtx<'_> {
        let counters = self.counters();
        FileCtx {
            cfg: &self.cfg,
            vfs: &self.vfs,
            phys: &self.phys,
            cache: &mut self.cache,
            rng: &mut self.rng,
            ioctl_unknown: &mut self.ioctl_unknown,
            locks: &mut self.locks,
            uts: &mut self.uts,
            started: self.started,
            procs: &mut self.tasks.procs,
            tids: &self.tasks.tids,
            zombies: &self.tasks.zombies,
            counters,
            ptys: &self.ptys,
        }
    }
}

/// What a socket call may use: the socket namespace, the file system (`AF_UNIX` paths)
/// and the counters (refused calls).
pub(crate) struct NetCtx<'a> {
    /// The loopback network's sockets and names.
    pub(crate) net: &'a mut Net,
    /// The sandboxed file system.
    pub(crate) vfs: &'a Vfs,
    /// The OS counters.
    pub(crate) stats: &'a mut OsStats,
}

impl Machine {
    /// The context of a socket call.
    pub(crate) fn net_ctx(&mut self) -> NetCtx<'_> {
        NetCtx { net: &mut self.net, vfs: &self.vfs, stats: &mut self.stats }
    }
}

/// What a pipe, readiness or sleep call may use: everything it waits for is in the
/// caller's `Process` (its descriptors, its blocked call); the machine gives it only
/// the flag that ends the caller's time slice (`sched_yield`).
pub(crate) struct IoCtx<'a> {
    /// Set to end the running process's time slice.
    pub(crate) yield_slice: &'a mut bool,
}

impl Machine {
    /// The context of a pipe, readiness or sleep call.
    pub(crate) fn io_ctx(&mut self) -> IoCtx<'_> {
        IoCtx { yield_slice: &mut self.yield_slice }
    }
}

/// What a process, thread, futex or signal call may use (see the module documentation).
pub(crate) struct TaskCtx<'a> {
    /// The machine's configuration.
    pub(crate) cfg: &'a Config,
    /// Physical memory (a new address space).
    pub(crate) phys: &'a Rc<PhysMem>,
    /// The sandboxed file system (exec's path).
    pub(crate) vfs: &'a Vfs,
    /// The execution engine (exec and exit drop a process's translations).
    pub(crate) engine: &'a mut Engine,
    /// The process table.
    pub(crate) tasks: &'a mut Tasks,
    /// Threads waiting in `futex`, and those woken.
    pub(crate) futexes: &'a mut FutexTable,
    /// The OS counters.
    pub(crate) stats: &'a mut OsStats,
    /// When the machine started (`times`).
    pub(crate) started: Instant,
    /// Set to end the running process's time slice (fork: the child runs first).
    pub(crate) yield_slice: &'a mut bool,
    /// The page cache and the RNG, for [`TaskCtx::load_image`] only.
    cache: &'a mut PageCache,
    rng: &'a mut ChaCha8Rng,
    /// The machine's pseudo-terminals (for `/dev` only).
    ptys: &'a crate::pty::Ptys,
    /// The machine's names (for `/proc/sys` only).
    uts: &'a super::Uts,
}

impl TaskCtx<'_> {
    /// What `/dev` and `/proc` see: the file system, every process but the caller, and
    /// the machine's memory, clock and counters.
    pub(crate) fn sys(&self) -> special::Sys<'_> {
        let counters = special::Counters {
            idle: std::time::Duration::from_nanos(self.stats.idle_ns),
            forks: self.stats.processes,
            switches: self.tasks.switches,
            exited_icount: self.tasks.exited_icount,
            last_pid: self.tasks.next_pid.saturating_sub(1),
        };
        let sysctl = sysctl(self.cfg, self.uts);
        let machine =
            special::MachineView { phys: self.phys, cache: self.cache, started: self.started, counters, sysctl };
        special::Sys {
            vfs: self.vfs,
            procs: &self.tasks.procs,
            tids: &self.tasks.tids,
            zombies: &self.tasks.zombies,
            machine,
            ptys: self.ptys,
        }
    }

    /// Loads `path` into a fresh address space with a new layout (exec).
    pub(crate) fn load_image(
        &mut self,
        cwd: &[u8],
        (path, execfn): (&str, &[u8]),
        argv: &[Vec<u8>],
        envp: &[Vec<u8>],
        randomize: bool,
    ) -> Result<(AddressSpace, Image), LoadError> {
        let mut l = ImageLoader { cfg: self.cfg, phys: self.phys, vfs: self.vfs, cache: self.cache, rng: self.rng };
        l.load(cwd, (path, execfn), argv, envp, randomize)
    }
}

impl Machine {
    /// The context of a process, thread, futex or signal call.
    pub(crate) fn task_ctx(&mut self) -> TaskCtx<'_> {
        TaskCtx {
            cfg: &self.cfg,
            phys: &self.phys,
            vfs: &self.vfs,
            engine: &mut self.engine,
            tasks: &mut self.tasks,
            futexes: &mut self.futexes,
            stats: &mut self.stats,
            started: self.started,
            yield_slice: &mut self.yield_slice,
            cache: &mut self.cache,
            rng: &mut self.rng,
            ptys: &self.ptys,
            uts: &self.uts,
        }
    }
}
