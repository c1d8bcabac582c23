//! A guest process: CPU state, address space, file descriptors and the rest of the
//! per-process kernel state.

use std::time::{Duration, Instant};

use morph_cpu::Cpu;
use morph_mem::AddressSpace;

use crate::linux::{
    SCHED_FIFO, SCHED_OTHER, SCHED_RR, SI_KERNEL, SI_TIMER, SIGALRM, SIGCONT, SIGSTOP, SIGTSTP, SIGTTIN, SIGTTOU,
    UNBLOCKABLE,
};

pub use crate::files::{FdEntry, FdTable, FileKind, MAX_FDS, NetlinkPorts, NetlinkState, OpenFile, SocketState};

pub use crate::linux::Pid;

/// Guest instructions per clock tick, for `times`, `getrusage` and `/proc/<pid>/stat`:
/// a 533 MHz TM5600 retiring one instruction per cycle, at 100 ticks a second
/// (`AT_CLKTCK`). CPU times are counted in guest instructions, not host time, so a run
/// reports the same times whatever the engine or the host did.
pub const INSNS_PER_TICK: u64 = 5_330_000;

/// How a process ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitStatus {
    /// `exit(code)`.
    Code(i32),
    /// Killed by a signal.
    Signal(i32),
}

impl ExitStatus {
    /// The status a shell reports: the code, or 128 + signal.
    pub fn shell_code(self) -> i32 {
        match self {
            ExitStatus::Code(c) => c & 0xff,
            ExitStatus::Signal(s) => 128 + s,
        }
    }
}

/// Recorded signal disposition (`struct sigaction` of the i386 `rt_sigaction`).
#[derive(Clone, Copy, Debug, Default)]
pub struct SigAction {
    /// Handler address (0 = default, 1 = ignore).
    pub handler: u32,
    /// `SA_*` flags.
    pub flags: u32,
    /// Restorer trampoline.
    pub restorer: u32,
    /// Mask during the handler.
    pub mask: u64,
}

/// A guest process: a thread group. The fields marked *per thread* belong to the thread
/// that runs (or ran last); the group's other threads are parked in [`Process::threads`]
/// and swapped in by [`Process::switch_to`] when the scheduler picks them. Everything
/// else (address space, descriptors, directory, handlers, ...) is the group's, shared by
/// all its threads simply by being here once.
pub struct Process {
    /// Process id: the thread group id (`getpid`).
    pub pid: Pid,
    /// *Per thread*: thread id (`gettid`); the leader's is the pid.
    pub tid: Pid,
    /// Parent's pid.
    pub ppid: Pid,
    /// The supplementary group ids (`setgroups`): per process here, per thread on Linux,
    /// where glibc's `setgroups` makes every thread's the same all the same.
    pub groups: std::rc::Rc<[u32]>,
    /// *Per thread*: CPU state.
    pub cpu: Cpu,
    /// Address space.
    pub aspace: AddressSpace,
    /// Descriptors.
    pub fds: FdTable,
    /// Current directory, as a guest path (in the terms of `root`; see
    /// [`crate::vfs::UNREACHABLE`] for one outside it).
    pub cwd: Vec<u8>,
    /// The root directory `chroot` gave the process (`None`: the machine's root). Like
    /// `cwd` and `umask`, one per thread group (`CLONE_FS`), copied by fork, kept by
    /// exec.
    pub root: Option<std::rc::Rc<crate::vfs::Root>>,
    /// The executable's guest path (`/proc/self/exe`).
    pub exe: String,
    /// Start of the heap.
    pub brk_start: u32,
    /// Current program break.
    pub brk: u32,
    /// Signal dispositions, by signal number - 1.
    pub sigactions: [SigAction; 64],
    /// *Per thread*: Blocked signals.
    pub sigmask: u64,
    /// File mode creation mask.
    pub umask: u32,
    /// Nice value (-20..=19): only kept and reported, the scheduler ignores it.
    pub nice: i32,
    /// The execution domain and its flags (`personality`): inherited, kept across
    /// `exec`; `ADDR_NO_RANDOMIZE` turns ASLR off for the next programs loaded,
    /// `READ_IMPLIES_EXEC` makes readable mappings executable, `UNAME26` shows a 2.6
    /// release (see `syscall::ids`).
    pub personality: u32,
    /// Resource limits (soft, hard) by `RLIMIT_*`.
    pub rlimits: [(u64, u64); 16],
    /// Set when the process has ended.
    pub exit: Option<ExitStatus>,
    /// Process group.
    pub pgid: Pid,
    /// Session.
    pub sid: Pid,
    /// It gave its controlling terminal up (`TIOCNOTTY` by a process that does not lead
    /// its session; Linux clears its `signal->tty` alone): it has none, whatever its
    /// session has, until `setsid`. Inherited by `fork`.
    pub no_ctty: bool,
    /// *Per thread*: Pending signals (bit `sig - 1`), with what each was sent with.
    pub pending: u64,
    /// *Per thread*: The `siginfo` of each pending signal.
    pub siginfo: [SigInfo; 64],
    /// *Per thread*: `sigaltstack`: (base, size, flags).
    pub altstack: (u32, u32, u32),
    /// *Per thread*: The mask to restore after `sigsuspend` once the handler has been set up.
    pub saved_mask: Option<u64>,
    /// *Per thread*: Why the process is waiting, if it is.
    pub blocked: Option<Blocked>,
    /// *Per thread*: set when a blocked call is re-run: `Some(true)` if its deadline
    /// passed. Cleared after that call.
    pub resumed: Option<bool>,
    /// *Per thread*: a blocking write to a pipe or stream socket that wrote part of its
    /// bytes and waits to write the rest (see `syscall::wait::wrote_all_or_block`).
    pub partial_write: Option<PartialWrite>,
    /// *Per thread*: `set_tid_address` / `CLONE_CHILD_CLEARTID`: zeroed and futex-woken
    /// when the thread exits.
    pub clear_child_tid: u32,
    /// *Per thread*: `set_robust_list` (head, length).
    pub robust_list: (u32, u32),
    /// *Per thread*: the `rseq` registration.
    pub rseq: Rseq,
    /// *Per thread*: its name, parent-death signal, scheduling policy and the rest that
    /// `prctl` and the `sched_*` calls set.
    pub attrs: ThreadAttrs,
    /// The group's other live threads, parked.
    pub threads: Vec<Thread>,
    /// Set when the running thread has ended with `exit` while others live on: the
    /// scheduler drops it and swaps in another.
    pub thread_exited: bool,
    /// How the leader thread ended, if it did before the group (its status is the
    /// group's unless the group is killed or calls `exit_group`).
    pub leader_exit: Option<ExitStatus>,
    /// Guest instructions of the group's threads that have ended.
    pub dead_threads_icount: u64,
    /// A parent suspended in `vfork` until this process execs or exits.
    pub vfork_parent: Option<Pid>,
    /// This `vfork` child runs in its parent's address space (`CLONE_VM`), lent to it
    /// until it execs or exits (the parent waits meanwhile, holding an empty one).
    pub vfork_lent: bool,
    /// `clone(CLONE_VM)` without `CLONE_THREAD`: the processes sharing one address space
    /// have the same key here (the first one's pid). The one space moves to whichever
    /// of them runs (the scheduler calls `Tasks::acquire_vm`, `crate::kernel::tasks`);
    /// the others hold an empty one meanwhile.
    pub vm_share: Option<Pid>,
    /// Whether this process holds its group's address space now (see `vm_share`).
    pub holds_vm: bool,
    /// When `alarm` (the `ITIMER_REAL` of `setitimer`, which shares it) fires.
    pub alarm: Option<Instant>,
    /// The period of `setitimer`'s `ITIMER_REAL` (zero: it fires once).
    pub alarm_interval: std::time::Duration,
    /// POSIX interval timers (`timer_create`), by timer id; not inherited by `fork`,
    /// deleted by `exec`.
    pub timers: Vec<Option<IntervalTimer>>,
    /// `setitimer`'s CPU-time timers, `ITIMER_VIRTUAL` then `ITIMER_PROF`, on the
    /// group's guest instructions (its CPU time, see [`INSNS_PER_TICK`]; system time is
    /// 0, so the two count alike): not inherited by `fork`, kept by `exec`.
    pub cpu_timers: [CpuTimer; 2],
    /// The signal sent to the parent at exit (`SIGCHLD` for `fork`).
    pub exit_signal: i32,
    /// Guest instructions at the start of the current run, for the `times` accounting.
    pub start_icount: u64,
    /// Guest instructions of the children waited for (and theirs), for `times`.
    pub child_icount: u64,
    /// The arguments of the last exec, each NUL-terminated (`/proc/<pid>/cmdline`).
    pub cmdline: Vec<u8>,
    /// The thread of the parent that made this process (Linux's `real_parent` is a
    /// thread, not a group): when it exits, this process's threads' parent-death
    /// signals are sent (see [`ThreadAttrs::pdeath_signal`]).
    pub parent_tid: Pid,
    /// Stopped or continued by job-control signals, and what its parent's `wait` has
    /// yet to be told.
    pub job: JobControl,
    /// `PR_SET_DUMPABLE`: 1 at exec, inherited by fork. morph never writes a core file;
    /// it is only kept and reported.
    pub dumpable: bool,
    /// `PR_SET_CHILD_SUBREAPER`: orphaned descendants are reparented to this process
    /// instead of to init. Not inherited by fork, kept by exec.
    pub child_subreaper: bool,
    /// `membarrier`'s registrations for the address space (Linux's `MEMBARRIER_STATE_*`
    /// bits of the `mm`): copied by fork, shared with the processes sharing the space,
    /// cleared by exec (`membarrier`, `syscall/proc.rs`).
    pub membarrier: u32,
}

/// A CPU-time interval timer (`ITIMER_VIRTUAL`, `ITIMER_PROF`), in guest instructions of
/// the thread group.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuTimer {
    /// The group's instruction count at which it fires (`None`: disarmed).
    pub due: Option<u64>,
    /// Its period (0: it fires once).
    pub interval: u64,
}

/// A thread's name (Linux's `comm`): at most 15 bytes, NUL-padded to 16, as
/// `prctl(PR_SET_NAME)` sets it and `/proc/<pid>/comm` shows it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Comm([u8; 16]);

impl Comm {
    /// `name` cut at its first NUL or at 15 bytes (bytes, not characters: Linux cuts a
    /// multi-byte character too).
    pub fn new(name: &[u8]) -> Comm {
        let mut c = [0u8; 16];
        for (d, &b) in c.iter_mut().zip(name.iter().take(15).take_while(|&&b| b != 0)) {
            *d = b;
        }
        Comm(c)
    }

    /// The name an exec of `path` gives: the path's last component as exec was given
    /// it (Linux's `kbasename(bprm->filename)`), not the file it leads to: a program
    /// run through a link goes by the link's name, one run as `/proc/self/exe` by "exe",
    /// a script by the script's name.
    pub fn of_path(path: &[u8]) -> Comm {
        Comm::new(path.rsplit(|&b| b == b'/').next().unwrap_or_default())
    }

    /// The name without its NUL padding.
    pub fn as_bytes(&self) -> &[u8] {
        let n = self.0.iter().position(|&b| b == 0).unwrap_or(16);
        &self.0[..n]
    }

    /// The 16 bytes `PR_GET_NAME` copies out.
    pub fn raw(&self) -> [u8; 16] {
        self.0
    }
}

/// A thread's credentials (Linux's `struct cred`, its ids): the real, effective, saved
/// and file-system user and group ids. The machine's first thread has the host
/// process's; `setuid` and its relatives change them under Linux's rules
/// (`syscall/creds.rs`), as far as the thread's capabilities ([`Caps`]: `CAP_SETUID`,
/// `CAP_SETGID`) allow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Creds {
    /// Real user id.
    pub uid: u32,
    /// Effective user id.
    pub euid: u32,
    /// Saved set-user-id.
    pub suid: u32,
    /// File-system user id.
    pub fsuid: u32,
    /// Real group id.
    pub gid: u32,
    /// Effective group id.
    pub egid: u32,
    /// Saved set-group-id.
    pub sgid: u32,
    /// File-system group id.
    pub fsgid: u32,
}

impl Creds {
    /// The host process's ids, every saved and file-system id its effective one.
    pub fn host() -> Creds {
        let [uid, euid, gid, egid] = crate::host::ids();
        Creds { uid, euid, suid: euid, fsuid: euid, gid, egid, sgid: egid, fsgid: egid }
    }

    /// After `execve` of a program without set-id bits: the saved ids become the
    /// effective ones (Linux's `commit_creds` from `bprm`), the file-system ids follow.
    pub fn exec(&mut self) {
        (self.suid, self.fsuid) = (self.euid, self.euid);
        (self.sgid, self.fsgid) = (self.egid, self.egid);
    }
}

/// A thread's capability sets (Linux's `cred->cap_*`), one bit per capability. The
/// machine's first thread has the host process's (a root morph's are root's; another
/// user's usually none); `capset` may only drop them, the user-id calls change them
/// as Linux's default securebits have it (see [`Caps::fix_setuid`]) and `execve`
/// recomputes them ([`Caps::exec`]); `syscall/creds.rs`. The ambient set is always
/// empty (`PR_CAP_AMBIENT` is not modeled), and so are the securebits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Caps {
    /// What the thread may use now.
    pub effective: u64,
    /// What it may make effective.
    pub permitted: u64,
    /// What it keeps across `execve` (with the bounding set, for root).
    pub inheritable: u64,
    /// The bounding set: the host's (`PR_CAPBSET_DROP` is not modeled).
    pub bounding: u64,
}

impl Caps {
    /// `CAP_KILL`: signal any process.
    pub const KILL: u32 = 5;
    /// `CAP_SETGID`: any group ids, supplementary groups.
    pub const SETGID: u32 = 6;
    /// `CAP_SETUID`: any user ids.
    pub const SETUID: u32 = 7;
    /// `CAP_SYS_CHROOT`: `chroot`.
    pub const SYS_CHROOT: u32 = 18;
    /// `CAP_SYS_ADMIN`: among much else, take a terminal from another session, name the
    /// machine (`sethostname`).
    pub const SYS_ADMIN: u32 = 21;
    /// `CAP_SYS_NICE`: raise priorities, real-time policies.
    pub const SYS_NICE: u32 = 23;
    /// `CAP_SYS_PTRACE`: trace (and look into) any process.
    pub const SYS_PTRACE: u32 = 19;
    /// The last capability the kernel knows (`CAP_LAST_CAP`, `CAP_CHECKPOINT_RESTORE`
    /// in Linux 5.9 and later; `/proc/sys/kernel/cap_last_cap`): `capset` ignores the
    /// bits past it.
    pub const LAST: u32 = 40;

    /// The capabilities that go with the file-system user id (Linux's `CAP_FS_SET`:
    /// `CAP_CHOWN`, `CAP_DAC_OVERRIDE`, `CAP_DAC_READ_SEARCH`, `CAP_FOWNER`,
    /// `CAP_FSETID`, `CAP_LINUX_IMMUTABLE`, `CAP_MKNOD`, `CAP_MAC_OVERRIDE`).
    const FS_SET: u64 = 0x1f | 1 << 9 | 1 << 27 | 1 << 32;

    /// The host process's sets, read once from its `/proc/self/status` (none if it
    /// cannot be read).
    pub fn host() -> Caps {
        static HOST: std::sync::OnceLock<Caps> = std::sync::OnceLock::new();
        *HOST.get_or_init(|| {
            let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
            let set = |name: &str| {
                status
                    .lines()
                    .find_map(|l| l.strip_prefix(name))
                    .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
                    .unwrap_or(0)
            };
            Caps {
                effective: set("CapEff:"),
                permitted: set("CapPrm:"),
                inheritable: set("CapInh:"),
                bounding: set("CapBnd:"),
            }
        })
    }

    /// Whether capability `cap` is effective.
    pub fn has(&self, cap: u32) -> bool {
        cap < 64 && self.effective >> cap & 1 != 0
    }

    /// Whether a thread with these capabilities and ids `ids`, in session `sid`, may send
    /// `sig` to one with ids `target` in session `target_sid` (Linux's
    /// `check_kill_permission`): `CAP_KILL`, its real or effective user id the target's
    /// real or saved one, or `SIGCONT` within the session.
    pub fn may_signal(&self, ids: &Creds, sid: Pid, target: &Creds, target_sid: Pid, sig: i32) -> bool {
        self.has(Caps::KILL)
            || [ids.uid, ids.euid].iter().any(|&u| u == target.uid || u == target.suid)
            || (sig == crate::linux::SIGCONT && sid == target_sid)
    }

    /// Whether a thread with these capabilities and ids `me` may look into process `q`'s
    /// thread with attributes `t` the way `ptrace` would let it (Linux's
    /// `ptrace_may_access` without Yama, for another thread group; a thread group may
    /// always look into itself): `CAP_SYS_PTRACE`, or its ids as all of the target's
    /// real, effective and saved ids (the file-system ids if `fs`, Linux's
    /// `PTRACE_MODE_FSCREDS`, else the real ones) with the target dumpable and its
    /// permitted capabilities among the caller's.
    pub fn may_ptrace(&self, me: &Creds, t: &ThreadAttrs, dumpable: bool, fs: bool) -> bool {
        let them = &t.creds;
        let (uid, gid) = if fs { (me.fsuid, me.fsgid) } else { (me.uid, me.gid) };
        let same_ids = [them.uid, them.euid, them.suid].iter().all(|&u| u == uid)
            && [them.gid, them.egid, them.sgid].iter().all(|&g| g == gid);
        self.has(Caps::SYS_PTRACE) || (same_ids && dumpable && t.caps.permitted & !self.permitted == 0)
    }

    /// After a change of the user ids from `old` to `new` by `setuid`, `setreuid` or
    /// `setresuid` (Linux's `cap_emulate_setxuid`): a thread that no longer has 0 as any
    /// of its real, effective and saved ids loses its permitted and effective sets; one
    /// whose effective id leaves 0 loses its effective set, and one whose effective id
    /// becomes 0 gets its permitted set as effective.
    pub fn fix_setuid(&mut self, old: &Creds, new: &Creds) {
        let any_root = |c: &Creds| c.uid == 0 || c.euid == 0 || c.suid == 0;
        if any_root(old) && !any_root(new) {
            self.permitted = 0;
            self.effective = 0;
        }
        if old.euid == 0 && new.euid != 0 {
            self.effective = 0;
        }
        if old.euid != 0 && new.euid == 0 {
            self.effective = self.permitted;
        }
    }

    /// After `setfsuid` changed the file-system user id from `old` to `new`: leaving
    /// 0 drops the file-system capabilities from the effective set, becoming 0 raises
    /// the permitted ones.
    pub fn fix_setfsuid(&mut self, old: u32, new: u32) {
        if old == 0 && new != 0 {
            self.effective &= !Caps::FS_SET;
        }
        if old != 0 && new == 0 {
            self.effective |= self.permitted & Caps::FS_SET;
        }
    }

    /// After `execve` of a program with no file capabilities and no set-id bits, by a
    /// thread with ids `creds` (Linux's `cap_bprm_creds_from_file` with its root
    /// rules): root (real or effective) is permitted the bounding and inheritable
    /// sets, with them effective if its effective id is 0; anyone else keeps none.
    pub fn exec(&mut self, creds: &Creds) {
        self.permitted = if creds.euid == 0 || creds.uid == 0 { self.bounding | self.inheritable } else { 0 };
        self.effective = if creds.euid == 0 { self.permitted } else { 0 };
    }
}

/// What `prctl` and the `sched_*` calls set for one thread (Linux keeps these in the
/// `task_struct`), and its credentials. A new thread or fork child starts with a copy
/// ([`ThreadAttrs::for_child`]); exec keeps them but the name.
#[derive(Clone, Copy, Debug)]
pub struct ThreadAttrs {
    /// Its user and group ids.
    pub creds: Creds,
    /// Its capabilities.
    pub caps: Caps,
    /// The thread's name.
    pub comm: Comm,
    /// `PR_SET_PDEATHSIG`: the signal this thread's process gets when the parent
    /// thread that made it exits (0: none). Cleared in a child, kept by exec.
    pub pdeath_signal: i32,
    /// Scheduling policy (`SCHED_*`, without `SCHED_RESET_ON_FORK`). morph's
    /// scheduler is round-robin over every thread whatever the policy (as it ignores
    /// `nice`): the policy and priority are only kept and reported.
    pub policy: u32,
    /// Real-time priority (1..=99 under `SCHED_FIFO`/`SCHED_RR`, else 0).
    pub rt_priority: u32,
    /// `SCHED_RESET_ON_FORK`.
    pub reset_on_fork: bool,
    /// `PR_SET_NO_NEW_PRIVS`: once set, never cleared; inherited by children and
    /// kept by exec (morph runs no set-user-ID programs: it changes nothing else).
    pub no_new_privs: bool,
    /// `PR_SET_TIMERSLACK` in nanoseconds (0 under a real-time policy). Kept and
    /// reported: morph's timers fire when the scheduler next looks, whatever the slack.
    pub timer_slack_ns: u32,
    /// What `PR_SET_TIMERSLACK` 0 restores: the parent's slack at the fork.
    pub default_timer_slack_ns: u32,
}

impl ThreadAttrs {
    /// Linux's timer slack for a thread that has not asked for another (50 µs).
    pub const DEFAULT_TIMER_SLACK_NS: u32 = 50_000;

    /// A first thread's attributes: `comm`, and the policy, no_new_privs and slack it
    /// inherits (from the host process, for the machine's first process).
    pub fn new(comm: Comm, policy: u32, rt_priority: u32, no_new_privs: bool, timer_slack_ns: u32) -> ThreadAttrs {
        ThreadAttrs {
            creds: Creds::host(),
            caps: Caps::host(),
            comm,
            pdeath_signal: 0,
            policy,
            rt_priority,
            reset_on_fork: false,
            no_new_privs,
            timer_slack_ns,
            default_timer_slack_ns: timer_slack_ns,
        }
    }

    /// A child's (fork, clone, a new thread): a copy without the parent-death signal,
    /// whose slack default is the parent's slack; with `SCHED_RESET_ON_FORK`, a
    /// real-time policy becomes `SCHED_OTHER` (Linux's `sched_fork`; the nice value is
    /// the caller's business).
    pub fn for_child(&self) -> ThreadAttrs {
        let mut a = ThreadAttrs { pdeath_signal: 0, default_timer_slack_ns: self.timer_slack_ns, ..*self };
        if a.reset_on_fork {
            if a.is_realtime() {
                a.policy = SCHED_OTHER;
                a.rt_priority = 0;
                a.timer_slack_ns = a.default_timer_slack_ns;
            }
            a.reset_on_fork = false;
        }
        a
    }

    /// Under `SCHED_FIFO` or `SCHED_RR`.
    pub fn is_realtime(&self) -> bool {
        self.policy == SCHED_FIFO || self.policy == SCHED_RR
    }
}

/// A thread group's job-control state (Linux's `signal_struct`: the flags
/// `SIGNAL_STOP_STOPPED`, `SIGNAL_STOP_CONTINUED`, `SIGNAL_CLD_CONTINUED` and the
/// `group_exit_code` of a stop). A stop signal's default action stops every thread of
/// the group until `SIGCONT` (or `SIGKILL`); the parent is told by `SIGCHLD` (unless
/// its handler has `SA_NOCLDSTOP`) and by `wait` with `WUNTRACED`/`WCONTINUED`.
/// `SIGTSTP`, `SIGTTIN` and `SIGTTOU` are discarded in an orphaned process group (see
/// [`pgrp_orphaned`]), as Linux's `get_signal` does; the `SIGHUP`/`SIGCONT` a group gets
/// when it becomes orphaned with a stopped member is not modeled.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct JobControl {
    /// The group is stopped: no thread of it runs.
    pub stopped: bool,
    /// The signal that stopped it, until a `wait` reports the stop (0: nothing to
    /// report). A `SIGCONT` before that cancels the report.
    pub stop_report: i32,
    /// Continued, and not yet reported to a `wait` with `WCONTINUED`.
    pub continued_report: bool,
    /// Continued, and the parent not yet sent its `SIGCHLD` (`CLD_CONTINUED`).
    pub notify_continued: bool,
}

/// The per-thread state of a parked thread (see [`Process`]: the same fields, for the
/// thread that is not the one swapped in).
pub struct Thread {
    /// Thread id.
    pub tid: Pid,
    /// CPU state (registers, FPU, TLS descriptors).
    pub cpu: Cpu,
    /// Blocked signals.
    pub sigmask: u64,
    /// Pending signals.
    pub pending: u64,
    /// Their `siginfo`.
    pub siginfo: [SigInfo; 64],
    /// `sigaltstack`.
    pub altstack: (u32, u32, u32),
    /// Mask to restore after `sigsuspend`.
    pub saved_mask: Option<u64>,
    /// What the thread waits for.
    pub blocked: Option<Blocked>,
    /// See [`Process::resumed`].
    pub resumed: Option<bool>,
    /// See [`Process::partial_write`].
    pub partial_write: Option<PartialWrite>,
    /// See [`Process::clear_child_tid`].
    pub clear_child_tid: u32,
    /// See [`Process::robust_list`].
    pub robust_list: (u32, u32),
    /// See [`Process::rseq`].
    pub rseq: Rseq,
    /// See [`Process::attrs`].
    pub attrs: ThreadAttrs,
}

/// A thread's `rseq` registration (`addr` 0: none): its `struct rseq`, that struct's
/// length and the signature abort handlers carry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rseq {
    /// Guest address of the `struct rseq`.
    pub addr: u32,
    /// Its length as registered.
    pub len: u32,
    /// The signature expected before each abort handler.
    pub sig: u32,
}

impl Thread {
    /// Pending signals that are not blocked.
    pub fn deliverable(&self) -> u64 {
        self.pending & !(self.sigmask & !crate::linux::UNBLOCKABLE)
    }
}

impl Process {
    /// Swaps the running thread's state with the parked `t`'s.
    fn swap_thread(&mut self, t: &mut Thread) {
        use std::mem::swap;
        swap(&mut self.tid, &mut t.tid);
        swap(&mut self.cpu, &mut t.cpu);
        swap(&mut self.sigmask, &mut t.sigmask);
        swap(&mut self.pending, &mut t.pending);
        swap(&mut self.siginfo, &mut t.siginfo);
        swap(&mut self.altstack, &mut t.altstack);
        swap(&mut self.saved_mask, &mut t.saved_mask);
        swap(&mut self.blocked, &mut t.blocked);
        swap(&mut self.resumed, &mut t.resumed);
        swap(&mut self.partial_write, &mut t.partial_write);
        swap(&mut self.clear_child_tid, &mut t.clear_child_tid);
        swap(&mut self.robust_list, &mut t.robust_list);
        swap(&mut self.rseq, &mut t.rseq);
        swap(&mut self.attrs, &mut t.attrs);
    }

    /// Makes thread `tid` the running one (its state into the process's fields); false
    /// if the group has no such thread.
    pub fn switch_to(&mut self, tid: Pid) -> bool {
        if self.tid == tid {
            return true;
        }
        let Some(i) = self.threads.iter().position(|t| t.tid == tid) else { return false };
        let mut t = self.threads.swap_remove(i);
        self.swap_thread(&mut t);
        self.threads.push(t);
        self.threads.sort_by_key(|t| t.tid);
        true
    }

    /// Drops the running thread (it has exited) and swaps in the parked thread with the
    /// lowest tid; returns the dropped thread's tid and instruction count. The group
    /// must have another thread.
    pub fn retire_thread(&mut self) -> Option<(Pid, u64)> {
        if self.threads.is_empty() {
            return None;
        }
        let mut t = self.threads.remove(0);
        self.swap_thread(&mut t);
        self.thread_exited = false;
        self.dead_threads_icount += t.cpu.icount;
        Some((t.tid, t.cpu.icount))
    }

    /// A new thread's state: `tid` runs `cpu` with the caller's mask and a child's copy
    /// of its attributes; nothing pending.
    pub fn new_thread(&self, tid: Pid, cpu: Cpu) -> Thread {
        Thread {
            tid,
            cpu,
            sigmask: self.sigmask,
            pending: 0,
            siginfo: [SigInfo::default(); 64],
            altstack: (0, 0, crate::linux::SS_DISABLE),
            saved_mask: None,
            blocked: None,
            resumed: None,
            partial_write: None,
            clear_child_tid: 0,
            robust_list: (0, 0),
            rseq: Rseq::default(),
            attrs: self.attrs.for_child(),
        }
    }

    /// The attributes of thread `tid` of the group.
    pub fn thread_attrs(&self, tid: Pid) -> Option<&ThreadAttrs> {
        if tid == self.tid {
            return Some(&self.attrs);
        }
        self.threads.iter().find(|t| t.tid == tid).map(|t| &t.attrs)
    }

    /// The attributes of thread `tid` of the group, to change.
    pub fn thread_attrs_mut(&mut self, tid: Pid) -> Option<&mut ThreadAttrs> {
        if tid == self.tid {
            return Some(&mut self.attrs);
        }
        self.threads.iter_mut().find(|t| t.tid == tid).map(|t| &mut t.attrs)
    }

    /// The parent-death signals of the group's threads (one per thread that set one).
    pub fn pdeath_signals(&self) -> Vec<i32> {
        std::iter::once(&self.attrs)
            .chain(self.threads.iter().map(|t| &t.attrs))
            .map(|a| a.pdeath_signal)
            .filter(|&s| s != 0)
            .collect()
    }

    /// What sending `sig` to the group does before it is queued (Linux's
    /// `prepare_signal`): `SIGCONT` discards pending stop signals and resumes a stopped
    /// group (to be reported to its parent, see [`JobControl`]); a stop signal
    /// discards a pending `SIGCONT`.
    pub fn prepare_signal(&mut self, sig: i32) {
        let bit = |s: i32| 1u64 << (s - 1);
        let discard = match sig {
            SIGCONT => bit(SIGSTOP) | bit(SIGTSTP) | bit(SIGTTIN) | bit(SIGTTOU),
            SIGSTOP | SIGTSTP | SIGTTIN | SIGTTOU => bit(SIGCONT),
            _ => return,
        };
        self.pending &= !discard;
        for t in &mut self.threads {
            t.pending &= !discard;
        }
        if sig == SIGCONT && self.job.stopped {
            self.job = JobControl { stopped: false, stop_report: 0, continued_report: true, notify_continued: true };
        }
    }

    /// Which memory the process's private futexes are in (Linux keys them by `mm`):
    /// shared by processes made with `CLONE_VM`.
    pub fn mm_key(&self) -> Pid {
        self.vm_share.unwrap_or(self.pid)
    }

    /// Every thread id of the group, the running one first.
    pub fn tids(&self) -> impl Iterator<Item = Pid> + '_ {
        std::iter::once(self.tid).chain(self.threads.iter().map(|t| t.tid))
    }

    /// The waits of every thread of the group.
    pub fn waits(&self) -> impl Iterator<Item = &Blocked> + '_ {
        self.blocked.iter().chain(self.threads.iter().filter_map(|t| t.blocked.as_ref()))
    }

    /// Guest instructions the whole group has run (for `times`, `wait4`'s `rusage`).
    pub fn group_icount(&self) -> u64 {
        let live: u64 = self.threads.iter().map(|t| t.cpu.icount).sum();
        (self.cpu.icount + live + self.dead_threads_icount).saturating_sub(self.start_icount)
    }

    /// Takes a pending signal of `set` for the running thread (`sigtimedwait`): its own
    /// first, else one sent to the process that another thread holds blocked (Linux
    /// keeps those in the group's shared queue). Returns the signal and its `siginfo`.
    pub fn take_signal(&mut self, set: u64) -> Option<(i32, SigInfo)> {
        let own = self.pending & set;
        if own != 0 {
            let sig = own.trailing_zeros() as i32 + 1;
            self.pending &= !(1u64 << (sig - 1));
            return Some((sig, self.siginfo[(sig - 1) as usize]));
        }
        for t in &mut self.threads {
            let mut cand = t.pending & set & t.sigmask;
            while cand != 0 {
                let sig = cand.trailing_zeros() as i32 + 1;
                let bit = 1u64 << (sig - 1);
                cand &= !bit;
                let info = t.siginfo[(sig - 1) as usize];
                if info.code != crate::linux::SI_TKILL {
                    t.pending &= !bit;
                    return Some((sig, info));
                }
            }
        }
        None
    }

    /// Makes `sig` pending for thread `tid` of the group (`tgkill`); false if there is
    /// no such thread.
    pub fn raise_thread(&mut self, tid: Pid, sig: i32, info: SigInfo) -> bool {
        if !self.tids().any(|t| t == tid) {
            return false;
        }
        self.prepare_signal(sig);
        if tid == self.tid {
            self.raise(sig, info);
            return true;
        }
        match self.threads.iter_mut().find(|t| t.tid == tid) {
            Some(t) => {
                raise_into(&mut t.pending, &mut t.siginfo, sig, info);
                true
            }
            None => false,
        }
    }

    /// Makes `sig` pending for the group (`kill`): for the leader if it lives and does
    /// not block the signal, else for the first thread (in tid order) that does not,
    /// else for the running thread, as Linux picks a thread that wants the signal.
    pub fn raise_group(&mut self, sig: i32, info: SigInfo) {
        self.prepare_signal(sig);
        if self.threads.is_empty() || !(1..=64).contains(&sig) {
            self.raise(sig, info);
            return;
        }
        let bit = 1u64 << (sig - 1);
        // A thread in `sigwait` for the signal takes it, whatever its mask.
        let waiting =
            |b: &Option<Blocked>| matches!(b, Some(Blocked { wait: Wait::SigWait(set), .. }) if set & bit != 0);
        if waiting(&self.blocked) {
            self.raise(sig, info);
            return;
        }
        if let Some(t) = self.threads.iter_mut().find(|t| waiting(&t.blocked)) {
            raise_into(&mut t.pending, &mut t.siginfo, sig, info);
            return;
        }
        let wants = |mask: u64| mask & bit == 0 || bit & crate::linux::UNBLOCKABLE != 0;
        let mut cands: Vec<(Pid, u64)> = self.threads.iter().map(|t| (t.tid, t.sigmask)).collect();
        cands.push((self.tid, self.sigmask));
        cands.sort_by_key(|&(tid, _)| (tid != self.pid, tid));
        let tid = cands.iter().find(|&&(_, m)| wants(m)).map_or(self.tid, |&(t, _)| t);
        self.raise_thread(tid, sig, info);
    }
}

/// Whether `p`'s process group is orphaned (Linux's `is_current_pgrp_orphaned`): no
/// member has a parent in another group of the same session. `procs` are the other
/// processes. The first process's parent (the shell or harness that started morph, in
/// the first process's session, which is the one morph was started in) is taken as
/// such a parent; another parent outside the machine (init, after a reparenting) is
/// in no guest session and never counts.
pub fn pgrp_orphaned(p: &Process, procs: &std::collections::BTreeMap<Pid, Process>) -> bool {
    let parent = |pid: Pid| if pid == p.pid { Some(p) } else { procs.get(&pid) };
    let mut members = std::iter::once(p).chain(procs.values().filter(|q| q.pid != p.pid && q.pgid == p.pgid));
    !members.any(|q| q.pid == FIRST_PID || parent(q.ppid).is_some_and(|par| par.pgid != p.pgid && par.sid == q.sid))
}

/// Makes `sig` pending in `pending` with `info` (a second instance of a pending standard
/// signal merges with the first, as Linux does).
pub fn raise_into(pending: &mut u64, siginfo: &mut [SigInfo; 64], sig: i32, info: SigInfo) {
    if !(1..=64).contains(&sig) {
        return;
    }
    let bit = 1u64 << (sig - 1);
    if *pending & bit == 0 {
        siginfo[(sig - 1) as usize] = info;
    }
    *pending |= bit;
}

/// A POSIX interval timer. Every supported clock (`CLOCK_REALTIME`, `CLOCK_MONOTONIC`,
/// `CLOCK_BOOTTIME`) runs at the host's pace, so expiry is kept as a host `Instant`.
#[derive(Clone, Copy, Debug)]
pub struct IntervalTimer {
    /// The clock it was created on (for absolute `timer_settime`).
    pub clock: i32,
    /// Signal sent at expiry; 0 for `SIGEV_NONE`.
    pub signo: i32,
    /// `sigev_value`, passed in the signal's `si_value`.
    pub value: u32,
    /// Next expiry, if armed.
    pub next: Option<Instant>,
    /// Reload interval (zero: one-shot).
    pub interval: Duration,
    /// Expirations missed while the previous signal was still pending.
    pub overrun: u32,
}

/// What a blocked process waits for.
#[derive(Clone, Debug)]
pub enum Wait {
    /// Host descriptors becoming ready (`pollfd` entries, `revents` ignored); an empty
    /// list waits for the deadline alone.
    Fds(Vec<libc::pollfd>),
    /// A child changing state (`wait4`, `waitid`): which children, and which changes.
    Child(ChildWait),
    /// A `vfork` child execing or exiting.
    Vfork(Pid),
    /// A signal (`pause`, `sigsuspend`).
    Signal,
    /// A `futex` wake (the waiter is queued in the machine's futex table).
    Futex,
    /// One of these signals becoming pending (`sigtimedwait`, `sigwait`).
    SigWait(u64),
}

/// What a `wait4` or `waitid` waits for: which children, and its options (`WEXITED`,
/// `WSTOPPED`, `WCONTINUED`, `WNOWAIT`, `__WCLONE`, `__WALL`; `wait4` always has
/// `WEXITED`). See `syscall::children`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChildWait {
    /// The children it names.
    pub who: WaitFor,
    /// The options.
    pub options: u32,
}

/// The children a wait names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitFor {
    /// Any child (`P_ALL`, `wait4(-1)`).
    Any,
    /// The child with this pid (`P_PID`, `wait4(pid)`).
    Pid(Pid),
    /// Any child in this process group (`P_PGID`, `wait4(-pgid)`, `wait4(0)`).
    Group(Pid),
}

/// A process waiting inside a system call. The call is re-run from the start when the
/// wait ends (its EIP points at the `int 0x80` again), as Linux restarts calls.
#[derive(Clone, Debug)]
pub struct Blocked {
    /// The event.
    pub wait: Wait,
    /// Give up at this time (the call then sees [`Process::resumed`] = `Some(true)`).
    pub deadline: Option<Instant>,
    /// With `SA_RESTART`, a handled signal re-runs the call instead of failing it with
    /// `EINTR`.
    pub restartable: bool,
    /// What the call returns if a handled signal interrupts it, whatever `SA_RESTART`
    /// says: the bytes a blocking write had written before it waited (Linux returns a
    /// partial count rather than `EINTR` once some data went).
    pub partial: Option<u32>,
}

/// A blocking write of `len` bytes at guest `ptr` to descriptor `fd` that has written
/// `done` of them: the call, re-run when the descriptor has room, goes on from there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PartialWrite {
    /// The guest descriptor.
    pub fd: u32,
    /// The buffer's guest address.
    pub ptr: u32,
    /// The bytes asked for.
    pub len: u32,
    /// The bytes written.
    pub done: u32,
}

/// The part of a `siginfo_t` morph fills in.
#[derive(Clone, Copy, Debug, Default)]
pub struct SigInfo {
    /// `si_code`.
    pub code: i32,
    /// `si_pid` (or, for faults, `si_addr`).
    pub pid_or_addr: u32,
    /// `si_uid`.
    pub uid: u32,
    /// `si_status` for `SIGCHLD`.
    pub status: i32,
    /// Raised by a fault (an exception of the fault class: the instruction did not
    /// complete): the frame's EFLAGS has RF set, as the CPU pushed them.
    pub fault: bool,
}

/// The first pid handed out.
pub const FIRST_PID: Pid = 100;

/// A process that has exited and not yet been waited for.
#[derive(Clone, Copy, Debug)]
pub struct Zombie {
    /// Its parent.
    pub ppid: Pid,
    /// Its process group.
    pub pgid: Pid,
    /// How it ended.
    pub status: ExitStatus,
    /// Guest instructions it and its waited-for children ran (for the parent's `times`).
    pub icount: u64,
    /// The signal its parent was sent at its exit: `SIGCHLD` for a fork child (`wait`
    /// tells "clone" children, with any other, apart: `__WCLONE`, `__WALL`).
    pub exit_signal: i32,
    /// Its real user id (the `si_uid` of the reports of its end).
    pub uid: u32,
}

/// `argv` as `/proc/<pid>/cmdline` shows it: each argument NUL-terminated.
pub fn cmdline_of(argv: &[Vec<u8>]) -> Vec<u8> {
    let mut v = Vec::new();
    for a in argv {
        v.extend_from_slice(a);
        v.push(0);
    }
    v
}

impl ExitStatus {
    /// The `wait` status word.
    pub fn wait_status(self) -> u32 {
        match self {
            ExitStatus::Code(c) => ((c & 0xff) as u32) << 8,
            ExitStatus::Signal(s) => (s & 0x7f) as u32,
        }
    }
}

impl Process {
    /// Leads its session for the rules of controlling terminals: `setsid` made it the
    /// leader. The first process's session is the one morph was started in, whose
    /// leader (a shell, a harness) is outside the machine, so the first process never
    /// acquires a terminal (`TIOCSCTTY`, opening a slave) as natively.
    pub fn leads_session(&self) -> bool {
        self.sid == self.pid && self.pid != FIRST_PID
    }

    /// Makes `sig` pending with `info` (a second instance of a pending standard signal
    /// merges with the first, as Linux does).
    pub fn raise(&mut self, sig: i32, info: SigInfo) {
        self.prepare_signal(sig);
        raise_into(&mut self.pending, &mut self.siginfo, sig, info);
    }

    /// Guest instructions the group may run before its next CPU-time timer is due (the
    /// scheduler's budget stops there, so that the timer fires at the same instruction
    /// in every run), if one is armed.
    pub fn cpu_timer_budget(&self) -> Option<u64> {
        let now = self.group_icount();
        self.cpu_timers.iter().filter_map(|t| t.due).map(|d| d.saturating_sub(now).max(1)).min()
    }

    /// Sends `SIGVTALRM`/`SIGPROF` for the CPU-time timers that are due, re-arming the
    /// periodic ones from when they were due (expirations missed meanwhile are one
    /// signal, as Linux's).
    pub fn fire_cpu_timers(&mut self) {
        let now = self.group_icount();
        for (i, sig) in [(0, crate::linux::SIGVTALRM), (1, crate::linux::SIGPROF)] {
            let t = self.cpu_timers[i];
            let Some(due) = t.due.filter(|&d| now >= d) else { continue };
            self.cpu_timers[i].due = (t.interval != 0).then(|| due + t.interval * ((now - due) / t.interval + 1));
            self.raise_group(sig, SigInfo { code: SI_KERNEL, ..SigInfo::default() });
        }
    }

    /// Raises the signals of the `alarm` and interval timers that are due at `now`, and
    /// re-arms periodic timers (expirations that fall while the signal is still
    /// pending, or that were missed, count as overruns, as in Linux).
    pub fn fire_timers(&mut self, now: Instant) {
        if let Some(t) = self.alarm
            && now >= t
        {
            // A period re-arms it from when it was due; expirations missed meanwhile
            // are one signal (Linux's `it_real_fn` re-arms from the expiry too).
            let i = self.alarm_interval;
            self.alarm = (!i.is_zero()).then(|| t + i * ((now - t).as_nanos() / i.as_nanos() + 1) as u32);
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
                    let info = SigInfo {
                        code: SI_TIMER,
                        pid_or_addr: id as u32,
                        uid: missed,
                        status: t.value as i32,
                        fault: false,
                    };
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
