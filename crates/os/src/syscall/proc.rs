//! Processes: fork, exec, exit, times, ids, groups and sessions (waiting for children
//! is `children`, scheduling `sched`, `prctl`'s attributes `prctl`).
//!
//! `fork` copies the address space copy-on-write (file-backed pages stay shared with
//! the page cache) and shares open file descriptions. `vfork` is a `fork` whose parent
//! waits until the child execs or exits, which is all POSIX promises; `clone` with
//! fork-like flags is `fork`, `clone` with `CLONE_THREAD` adds a thread to the caller's
//! group (see [`Process`]), and `CLONE_VM` without either makes a process that shares
//! the caller's address space (`Process::vm_share`; with `CLONE_FILES`, `CLONE_FS` or
//! `CLONE_SIGHAND` too it is not supported: `-ENOSYS`, counted).
//!
//! Also here: descriptors that refer to processes (pidfds) and `membarrier`'s
//! registrations, per address space (sections at the end).

use morph_cpu::Cpu;
use morph_mem::AddressSpace;

use super::common::*;
use super::mm::install_tls;
use crate::files::{Served, ServedKind};
use crate::kernel::tasks::Tasks;
use crate::layout::Kernel;
use crate::loader::LoadError;
use crate::process::{Blocked, Comm, Pid, SigAction, SigInfo, Wait};

table! {
    /// Processes.
    pub(super) TABLE: Task {
        1 exit "d" sys_exit;
        2 fork "" sys_fork;
        11 execve "sae" sys_execve;
        20 getpid "" sys_getpid;
        43 times "p" sys_times;
        57 setpgid "dd" sys_setpgid;
        64 getppid "" |_, p, _| Ok(p.ppid);
        65 getpgrp "" |_, p, _| Ok(p.pgid);
        66 setsid "" sys_setsid;
        77 getrusage "dp" sys_getrusage;
        96 getpriority "dd" sys_getpriority;
        97 setpriority "ddd" sys_setpriority;
        120 clone "Cpppp" sys_clone;
        132 getpgid "d" sys_getpgid;
        147 getsid "d" sys_getsid;
        190 vfork "" sys_vfork;
        252 exit_group "d" sys_exit_group;
        358 execveat "fsaex" sys_execveat;
        375 membarrier "ddd" sys_membarrier;
        424 pidfd_send_signal "fdpx" sys_pidfd_send_signal;
        434 pidfd_open "dx" sys_pidfd_open;
        435 clone3 "pu" sys_clone3;
        438 pidfd_getfd "ffx" sys_pidfd_getfd;
    }
}

/// `exit`: ends the calling thread; the group ends with its last thread (with the
/// leader's status).
fn sys_exit(m: &mut TaskCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let status = ExitStatus::Code((a[0] & 0xff) as i32);
    super::futex::thread_exit(m, p);
    if p.threads.is_empty() {
        p.exit = Some(p.leader_exit.unwrap_or(status));
    } else {
        if p.tid == p.pid {
            p.leader_exit = Some(status);
        }
        p.thread_exited = true;
    }
    Err(EJUSTRETURN)
}

/// `exit_group`: ends every thread of the group.
fn sys_exit_group(m: &mut TaskCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    super::futex::thread_exit(m, p);
    p.exit = Some(ExitStatus::Code((a[0] & 0xff) as i32));
    Err(EJUSTRETURN)
}

fn sys_getpid(_: &mut TaskCtx<'_>, p: &mut Process, _: &[u32; 6]) -> SysResult {
    Ok(p.pid)
}

fn sys_fork(m: &mut TaskCtx<'_>, p: &mut Process, _: &[u32; 6]) -> SysResult {
    do_fork(m, p, SIGCHLD as u32, [0; 4])
}

fn sys_vfork(m: &mut TaskCtx<'_>, p: &mut Process, _: &[u32; 6]) -> SysResult {
    do_fork(m, p, CLONE_VM | CLONE_VFORK | SIGCHLD as u32, [0; 4])
}

fn sys_clone(m: &mut TaskCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    // i386 order: flags, newsp, parent_tidptr, tls, child_tidptr.
    do_fork(m, p, a[0], [a[1], a[2], a[3], a[4]])
}

/// `clone3(args, size)`: `struct clone_args` (64 bytes in its first version; later
/// versions' fields must be zero) gives `clone`'s arguments, the exit signal apart and
/// the stack as base and size.
fn sys_clone3(m: &mut TaskCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    const VER0: u32 = 64;
    let size = a[1];
    if size < VER0 {
        return Err(EINVAL);
    }
    if size > PAGE_SIZE {
        return Err(E2BIG);
    }
    let mut b = vec![0u8; size as usize];
    p.aspace.read_bytes(a[0], &mut b).map_err(efault)?;
    if b[VER0 as usize..].iter().any(|&x| x != 0) {
        return Err(E2BIG); // set_tid, cgroup: not supported
    }
    let f = |i: usize| u64::from_le_bytes(b[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
    let (flags, _pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls) =
        (f(0), f(1), f(2), f(3), f(4), f(5), f(6), f(7));
    const CLONE_PIDFD: u64 = 0x1000;
    let narrow = |v: u64| u32::try_from(v).map_err(|_| EINVAL);
    if flags >> 32 != 0 || flags & u64::from(CSIGNAL) != 0 || flags & CLONE_PIDFD != 0 {
        return Err(EINVAL);
    }
    if exit_signal > 64 || stack == 0 && stack_size != 0 {
        return Err(EINVAL);
    }
    let sp = narrow(stack)?.wrapping_add(narrow(stack_size)?);
    let flags = flags as u32 | exit_signal as u32;
    do_fork(m, p, flags, [sp, narrow(parent_tid)?, narrow(tls)?, narrow(child_tid)?])
}

/// Creates a child: `rest` = newsp, parent_tid, tls, child_tid (clone's arguments).
fn do_fork(m: &mut TaskCtx<'_>, p: &mut Process, flags: u32, rest: [u32; 4]) -> SysResult {
    let [newsp, ptid, tls, ctid] = rest;
    if flags & CLONE_SIGHAND != 0 && flags & CLONE_VM == 0 || flags & CLONE_THREAD != 0 && flags & CLONE_SIGHAND == 0 {
        return Err(EINVAL);
    }
    // `threads-max` and `pid_max` of /proc/sys/kernel: morph never reuses a pid.
    if m.tasks.tids.len() >= m.cfg.max_procs || m.tasks.next_pid >= crate::special::sysctl::PID_MAX {
        return Err(EAGAIN);
    }
    if flags & CLONE_THREAD != 0 {
        return clone_thread(m, p, flags, rest);
    }
    // `CLONE_VM` without `CLONE_THREAD`: a process sharing the caller's address space
    // (see `Process::vm_share`); its own descriptors, directory and handlers (sharing
    // those between processes is not supported).
    let share_vm = flags & CLONE_VM != 0 && (flags & CLONE_VFORK == 0 || p.vm_share.is_some());
    if share_vm && flags & (CLONE_FILES | CLONE_FS | CLONE_SIGHAND) != 0 {
        m.stats.unsupported_clones += 1;
        return Err(ENOSYS);
    }
    // A vfork-style child (`CLONE_VM|CLONE_VFORK`: vfork, posix_spawn) runs in the
    // parent's memory, as on Linux (posix_spawn's child reports a failed exec there);
    // the parent, suspended until the child execs or exits, holds an empty space
    // meanwhile. A parent with other threads (which need its memory) lends a copy.
    let lend = !share_vm && flags & CLONE_VM != 0 && flags & CLONE_VFORK != 0 && p.threads.is_empty();
    let aspace = if lend {
        let empty = AddressSpace::new(m.phys.clone()).map_err(|_| ENOMEM)?;
        std::mem::replace(&mut p.aspace, empty)
    } else if share_vm {
        AddressSpace::new(m.phys.clone()).map_err(|_| ENOMEM)?
    } else {
        p.aspace.fork().map_err(|_| ENOMEM)?
    };
    let pid = m.tasks.next_pid;
    m.tasks.next_pid += 1;
    let mut cpu: Cpu = p.cpu.clone();
    cpu.gpr[reg::EAX] = 0;
    if newsp != 0 {
        cpu.gpr[reg::ESP] = newsp;
    }
    let mut child = Process {
        pid,
        tid: pid,
        ppid: if flags & CLONE_PARENT != 0 { p.ppid } else { p.pid },
        groups: p.groups.clone(),
        cpu,
        aspace,
        fds: p.fds.clone(),
        cwd: p.cwd.clone(),
        root: p.root.clone(),
        exe: p.exe.clone(),
        brk_start: p.brk_start,
        brk: p.brk,
        sigactions: p.sigactions,
        sigmask: p.sigmask,
        umask: p.umask,
        // SCHED_RESET_ON_FORK resets a negative nice value too.
        nice: if p.attrs.reset_on_fork { p.nice.max(0) } else { p.nice },
        personality: p.personality,
        rlimits: p.rlimits,
        exit: None,
        pgid: p.pgid,
        sid: p.sid,
        no_ctty: p.no_ctty,
        pending: 0,
        siginfo: [SigInfo::default(); 64],
        altstack: p.altstack,
        saved_mask: None,
        blocked: None,
        resumed: None,
        partial_write: None,
        clear_child_tid: if flags & CLONE_CHILD_CLEARTID != 0 { ctid } else { 0 },
        robust_list: (0, 0),
        // A registration is inherited by fork, not by a child sharing the memory.
        rseq: if flags & CLONE_VM != 0 { Default::default() } else { p.rseq },
        attrs: p.attrs.for_child(),
        threads: Vec::new(),
        thread_exited: false,
        leader_exit: None,
        dead_threads_icount: 0,
        vfork_parent: (flags & CLONE_VFORK != 0).then_some(p.pid),
        vfork_lent: lend,
        vm_share: share_vm.then(|| p.mm_key()),
        holds_vm: false,
        alarm: None,
        alarm_interval: std::time::Duration::ZERO,
        cpu_timers: Default::default(),
        timers: Vec::new(),
        exit_signal: (flags & CSIGNAL) as i32,
        start_icount: p.cpu.icount,
        child_icount: 0,
        cmdline: p.cmdline.clone(),
        // A `CLONE_PARENT` child is its caller's sibling: the same parent thread.
        parent_tid: if flags & CLONE_PARENT != 0 { p.parent_tid } else { p.tid },
        job: Default::default(),
        dumpable: p.dumpable,
        child_subreaper: false,
        membarrier: p.membarrier,
    };
    let setup = |p: &mut Process, child: &mut Process| -> Result<(), Errno> {
        if flags & CLONE_PARENT_SETTID != 0 && !lend && !share_vm {
            p.aspace.write_u32(ptid, pid).map_err(efault)?;
        }
        // The child's memory (the caller's, when shared).
        let mem = if share_vm { &mut p.aspace } else { &mut child.aspace };
        if flags & CLONE_SETTLS != 0 {
            install_tls(&mut child.cpu, mem, tls)?;
        }
        if flags & CLONE_CHILD_SETTID != 0 {
            mem.write_u32(ctid, pid).map_err(efault)?;
        }
        if flags & CLONE_PARENT_SETTID != 0 {
            mem.write_u32(ptid, pid).map_err(efault)?;
        }
        Ok(())
    };
    if let Err(e) = setup(p, &mut child) {
        if lend {
            std::mem::swap(&mut p.aspace, &mut child.aspace);
        }
        return Err(e);
    }
    if share_vm {
        p.vm_share = Some(p.mm_key());
        p.holds_vm = true;
    }
    m.tasks.procs.insert(pid, child);
    m.tasks.tids.insert(pid, pid);
    m.stats.processes += 1;
    // Linux 2.6.12's scheduler ran a new child before its parent (`wake_up_new_task`
    // rescheduled the parent: the child is likely to exec); modern kernels run the
    // parent on (`sched_child_runs_first` = 0 since 2.6.32). Child first also spares
    // copies: a parent that goes on copies the copy-on-write pages it writes, only for
    // the child to drop its share of them at exec a moment later.
    *m.yield_slice = m.cfg.kernel == Kernel::Linux2612;
    if flags & CLONE_VFORK != 0 {
        // The parent returns the pid once the child has exec'd or exited.
        p.blocked = Some(Blocked { wait: Wait::Vfork(pid), deadline: None, restartable: false, partial: None });
    }
    Ok(pid)
}

/// `clone` with `CLONE_THREAD`: a new thread of the caller's group, sharing everything
/// but its CPU state, signal mask and pending signals, TLS entries, alternate stack and
/// robust list (`CLONE_FS`, `CLONE_FILES`, `CLONE_SIGHAND` and `CLONE_SYSVSEM` are
/// implied: a group has one of each).
fn clone_thread(m: &mut TaskCtx<'_>, p: &mut Process, flags: u32, rest: [u32; 4]) -> SysResult {
    let [newsp, ptid, tls, ctid] = rest;
    let tid = m.tasks.next_pid;
    let mut cpu: Cpu = p.cpu.clone();
    cpu.gpr[reg::EAX] = 0;
    cpu.icount = 0;
    if newsp != 0 {
        cpu.gpr[reg::ESP] = newsp;
    }
    if flags & CLONE_SETTLS != 0 {
        install_tls(&mut cpu, &mut p.aspace, tls)?;
    }
    if flags & CLONE_PARENT_SETTID != 0 {
        p.aspace.write_u32(ptid, tid).map_err(efault)?;
    }
    if flags & CLONE_CHILD_SETTID != 0 {
        p.aspace.write_u32(ctid, tid).map_err(efault)?;
    }
    let mut t = p.new_thread(tid, cpu);
    if flags & CLONE_CHILD_CLEARTID != 0 {
        t.clear_child_tid = ctid;
    }
    m.tasks.next_pid += 1;
    p.threads.push(t);
    p.threads.sort_by_key(|t| t.tid);
    m.tasks.tids.insert(tid, p.pid);
    m.stats.threads += 1;
    Ok(tid)
}

/// Reads a NULL-terminated array of guest string pointers.
fn read_strings(p: &Process, mut ptr: u32, total: &mut usize) -> Result<Vec<Vec<u8>>, Errno> {
    let mut v = Vec::new();
    if ptr == 0 {
        return Ok(v);
    }
    loop {
        let s = p.aspace.read_u32(ptr).map_err(efault)?;
        if s == 0 {
            return Ok(v);
        }
        let bytes = p.aspace.read_cstr(s, 128 * 1024).map_err(efault)?;
        *total += bytes.len() + 1 + 4;
        if *total > 2 * 1024 * 1024 || v.len() > 0x20000 {
            return Err(E2BIG);
        }
        v.push(bytes);
        ptr = ptr.wrapping_add(4);
    }
}

/// Opens `path` for exec: it must be a regular file the caller may execute.
fn open_exec(vfs: &Vfs, p: &Process, path: &[u8]) -> Result<Vec<u8>, Errno> {
    // Never a blocking open: a FIFO (or any other non-regular file) is EACCES unopened.
    let fd = vfs.open_exec(&p.cwd, path).map_err(|e| if e == EISDIR { EACCES } else { e })?;
    if host::access_fd(fd.as_raw_fd(), libc::X_OK, libc::AT_EACCESS).is_err() {
        return Err(EACCES);
    }
    let mut head = [0u8; 256];
    let n = host::pread(fd.as_raw_fd(), &mut head, 0).unwrap_or(0);
    Ok(head[..n].to_vec())
}

fn load_errno(e: &LoadError) -> Errno {
    match e {
        LoadError::Io { errno, .. } => *errno,
        LoadError::NoMemory(_) => ENOMEM,
        _ => ENOEXEC,
    }
}

fn sys_execve(m: &mut TaskCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let path = read_path(p, a[0])?;
    if path.is_empty() {
        return Err(ENOENT);
    }
    exec(m, p, path, (a[1], a[2]), false)
}

/// `execveat(dirfd, path, argv, envp, flags)`: `execve` of `path` relative to directory
/// `dirfd` (`AT_FDCWD`: the working directory), or with `AT_EMPTY_PATH` and an empty
/// path of the file `dirfd` holds (glibc's `fexecve`). The program's name is Linux's
/// `bprm->filename`: `path` if absolute or relative to `AT_FDCWD`, else `/dev/fd/N` or
/// `/dev/fd/N/path`, which also reaches it through morph's `/dev/fd`. A script reached
/// through a close-on-exec `dirfd` cannot run (`ENOENT`: its interpreter could not open
/// that name); `AT_SYMLINK_NOFOLLOW` refuses a link as the last component (`ELOOP`).
fn sys_execveat(m: &mut TaskCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    const AT_SYMLINK_NOFOLLOW: u32 = 0x100;
    const AT_EMPTY_PATH: u32 = 0x1000;
    let (dirfd, flags) = (a[0], a[4]);
    let path = read_path(p, a[1])?;
    if path.is_empty() && flags & AT_EMPTY_PATH == 0 {
        return Err(ENOENT);
    }
    if flags & !(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH) != 0 {
        return Err(EINVAL);
    }
    let through_fd = dirfd as i32 != AT_FDCWD && path.first() != Some(&b'/');
    let name = match (through_fd, path.is_empty()) {
        (false, _) => path.clone(),
        (true, true) => format!("/dev/fd/{dirfd}").into_bytes(),
        (true, false) => [format!("/dev/fd/{dirfd}/").as_bytes(), &path].concat(),
    };
    let hidden = through_fd && p.fds.get(dirfd).ok_or(EBADF)?.cloexec;
    if flags & AT_SYMLINK_NOFOLLOW != 0 && !path.is_empty() {
        let o = super::stat::at_target(m.sys(), p, dirfd, &path, AT_SYMLINK_NOFOLLOW)?;
        if super::stat::stat_of(&o)?.st_mode & libc::S_IFMT == libc::S_IFLNK {
            return Err(ELOOP);
        }
    }
    exec(m, p, name, (a[2], a[3]), hidden)
}

/// Runs the program `path` names (`argv` and `envp` at the guest pointers given);
/// `hidden`: a script may not run (see `sys_execveat`).
fn exec(m: &mut TaskCtx<'_>, p: &mut Process, path: Vec<u8>, (argv, envp): (u32, u32), hidden: bool) -> SysResult {
    let comm = Comm::of_path(&path);
    let execfn = path.clone();
    let mut total = 0;
    let argv = read_strings(p, argv, &mut total)?;
    let envp = read_strings(p, envp, &mut total)?;
    let (path, argv) = crate::loader::follow_scripts(path, argv, |path| {
        let path = crate::special::exec_path(m.sys(), p, path)?;
        let head = open_exec(m.vfs, p, &path)?;
        if hidden && crate::loader::shebang(&head).is_some() {
            return Err(ENOENT);
        }
        Ok((path, head))
    })?;
    let spath = String::from_utf8_lossy(&path).into_owned();
    let cwd = p.cwd.clone();
    free_low_window(m, p);
    let randomize = p.personality & crate::linux::ADDR_NO_RANDOMIZE == 0;
    let (aspace, img) = m.load_image(&cwd, (&spath, &execfn), &argv, &envp, randomize).map_err(|e| load_errno(&e))?;
    // The point of no return: the old image goes, with the group's other threads
    // (their children get their parent-death signals and the caller as parent thread);
    // the calling thread becomes the leader.
    let caller = p.tid;
    for t in std::mem::take(&mut p.threads) {
        m.tasks.tids.remove(&t.tid);
        m.futexes.cancel(t.tid);
        p.dead_threads_icount += t.cpu.icount;
        m.tasks.parent_thread_exited(p, t.tid, p.pid);
    }
    if p.tid != p.pid {
        m.tasks.tids.remove(&p.tid);
        m.tasks.tids.insert(p.pid, p.pid);
        p.tid = p.pid;
        for q in m.tasks.procs.values_mut().filter(|q| q.ppid == p.pid && q.parent_tid == caller) {
            q.parent_tid = p.pid;
        }
    }
    p.attrs.comm = comm;
    p.attrs.creds.exec();
    p.attrs.caps.exec(&p.attrs.creds);
    p.membarrier = 0;
    p.dumpable = true;
    p.clear_child_tid = 0;
    p.robust_list = (0, 0);
    p.rseq = Default::default();
    p.leader_exit = None;
    m.tasks.leave_vm(p); // the others keep the space it shared
    let old = std::mem::replace(&mut p.aspace, aspace);
    // A vfork child gives its parent's memory back (its empty space goes).
    if std::mem::take(&mut p.vfork_lent)
        && let Some(parent) = p.vfork_parent.and_then(|pp| m.tasks.procs.get_mut(&pp))
    {
        parent.aspace = old;
    }
    let mut cpu = Cpu::with_segments(m.cfg.kernel.user_segments());
    cpu.model = m.cfg.engine.cpu;
    cpu.eip = img.entry;
    cpu.gpr[reg::ESP] = img.sp;
    cpu.icount = p.cpu.icount;
    p.cpu = cpu;
    p.brk_start = img.brk;
    p.brk = img.brk;
    // A program outside the root (named from a directory outside it) is shown in full.
    p.exe = String::from_utf8_lossy(Vfs::shown(img.exe.as_bytes())).into_owned();
    p.cmdline = crate::process::cmdline_of(&argv);
    p.fds.close_on_exec();
    for act in p.sigactions.iter_mut() {
        if act.handler != SIG_IGN {
            *act = SigAction::default();
        }
    }
    p.altstack = (0, 0, SS_DISABLE);
    p.timers.clear();
    p.vfork_parent = None;
    m.engine.drop_context(p.pid);
    m.stats.execs += 1;
    Err(EJUSTRETURN)
}

/// Frees the low window (`morph_mem::window`: guest memory at host address 0, where
/// translated code's loads take two cycles less) for the program `p` is about to load,
/// whose address space, made next, then takes it: the space that has it (`p`'s own
/// image, or a shell waiting for this program, say) moves to the window region, its
/// pages hosted again at their next access. The program exec'd last is the likeliest to
/// run longest. (If the host refuses a region slot, the holder keeps the window.)
fn free_low_window(m: &mut TaskCtx<'_>, p: &mut Process) {
    if p.aspace.has_low_window() {
        let _ = p.aspace.leave_low_window();
        return;
    }
    if let Some(q) = m.tasks.procs.values_mut().find(|q| q.aspace.has_low_window()) {
        let _ = q.aspace.leave_low_window();
    }
}

/// Clock ticks of `n` guest instructions (see [`INSNS_PER_TICK`]), as a 32-bit `clock_t`.
fn ticks(n: u64) -> u32 {
    (n / INSNS_PER_TICK) as u32
}

/// `times`: user time is the process's guest instructions, children's the instructions
/// of the children it waited for, in ticks of [`INSNS_PER_TICK`]; system time is 0. The
/// return value counts host wall-clock ticks since the machine started.
fn sys_times(m: &mut TaskCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    if a[0] != 0 {
        let mut b = Vec::with_capacity(16);
        for v in [ticks(p.group_icount()), 0, ticks(p.child_icount), 0] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        p.aspace.write_bytes(a[0], &b).map_err(efault)?;
    }
    Ok((m.started.elapsed().as_millis() / 10) as u32)
}

/// The i386 `struct rusage` (72 bytes) with the user time of `n` guest instructions.
pub(super) fn rusage_bytes(n: u64) -> [u8; 72] {
    let usec = u128::from(n) * 10_000 / u128::from(INSNS_PER_TICK);
    let mut b = [0u8; 72];
    b[0..4].copy_from_slice(&((usec / 1_000_000) as u32).to_le_bytes());
    b[4..8].copy_from_slice(&((usec % 1_000_000) as u32).to_le_bytes());
    b
}

fn sys_getrusage(_: &mut TaskCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    const RUSAGE_SELF: i32 = 0;
    const RUSAGE_CHILDREN: i32 = -1;
    const RUSAGE_THREAD: i32 = 1;
    let n = match a[0] as i32 {
        RUSAGE_SELF => p.group_icount(),
        RUSAGE_THREAD => p.cpu.icount.saturating_sub(if p.tid == p.pid { p.start_icount } else { 0 }),
        RUSAGE_CHILDREN => p.child_icount,
        _ => return Err(EINVAL),
    };
    p.aspace.write_bytes(a[1], &rusage_bytes(n)).map_err(efault)?;
    Ok(0)
}

fn sys_setpgid(m: &mut TaskCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let pid = if a[0] == 0 { p.pid } else { a[0] };
    let pgid = if a[1] == 0 { pid } else { a[1] };
    if (a[1] as i32) < 0 {
        return Err(EINVAL);
    }
    let sid = p.sid;
    let group_ok = |m: &TaskCtx<'_>, p: &Process| {
        pgid == pid || p.pgid == pgid && p.sid == sid || m.tasks.procs.values().any(|q| q.pgid == pgid && q.sid == sid)
    };
    if pid == p.pid {
        if p.sid == p.pid {
            return Err(EPERM);
        }
        if !group_ok(m, p) {
            return Err(EPERM);
        }
        p.pgid = pgid;
        return Ok(0);
    }
    let ok = group_ok(m, p);
    let c = m.tasks.procs.get_mut(&pid).filter(|c| c.ppid == p.pid).ok_or(ESRCH)?;
    if c.sid != sid || !ok {
        return Err(EPERM);
    }
    c.pgid = pgid;
    Ok(0)
}

/// The processes `getpriority`/`setpriority` name: (which, who) = process, group or
/// user (by real user id), `who` 0 meaning the caller's.
fn priority_targets(m: &TaskCtx<'_>, p: &Process, which: u32, who: u32) -> Result<Vec<Pid>, Errno> {
    let all = std::iter::once(p).chain(m.tasks.procs.values());
    let v: Vec<Pid> = match which {
        PRIO_PROCESS => all.filter(|q| q.pid == if who == 0 { p.pid } else { who }).map(|q| q.pid).collect(),
        PRIO_PGRP => all.filter(|q| q.pgid == if who == 0 { p.pgid } else { who }).map(|q| q.pid).collect(),
        PRIO_USER => {
            let uid = if who == 0 { p.attrs.creds.uid } else { who };
            all.filter(|q| q.attrs.creds.uid == uid).map(|q| q.pid).collect()
        }
        _ => return Err(EINVAL),
    };
    if v.is_empty() { Err(ESRCH) } else { Ok(v) }
}

fn sys_getpriority(m: &mut TaskCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let pids = priority_targets(m, p, a[0], a[1])?;
    let nice = |pid: Pid| if pid == p.pid { p.nice } else { m.tasks.procs[&pid].nice };
    // The system call returns 20 - nice (1..=40); glibc converts it back.
    Ok((20 - pids.into_iter().map(nice).min().unwrap_or(0)) as u32)
}

fn sys_setpriority(m: &mut TaskCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let pids = priority_targets(m, p, a[0], a[1])?;
    let want = (a[2] as i32).clamp(-20, 19);
    let privileged = p.attrs.caps.has(crate::process::Caps::SYS_NICE);
    for pid in pids {
        let q = if pid == p.pid {
            &mut *p
        } else if let Some(q) = m.tasks.procs.get_mut(&pid) {
            q
        } else {
            continue; // gone since priority_targets listed it
        };
        // Raising priority needs CAP_SYS_NICE.
        if want < q.nice && !privileged {
            return Err(EACCES);
        }
        q.nice = want;
    }
    Ok(0)
}

fn lookup_proc<'a>(m: &'a TaskCtx<'_>, p: &'a Process, pid: u32) -> Result<&'a Process, Errno> {
    if pid == 0 || pid == p.pid { Ok(p) } else { m.tasks.procs.get(&pid).ok_or(ESRCH) }
}

fn sys_getpgid(m: &mut TaskCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    Ok(lookup_proc(m, p, a[0])?.pgid)
}

fn sys_getsid(m: &mut TaskCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    Ok(lookup_proc(m, p, a[0])?.sid)
}

fn sys_setsid(m: &mut TaskCtx<'_>, p: &mut Process, _: &[u32; 6]) -> SysResult {
    if p.pgid == p.pid || m.tasks.procs.values().any(|q| q.pgid == p.pid) {
        return Err(EPERM);
    }
    p.sid = p.pid;
    p.pgid = p.pid;
    p.no_ctty = false; // a new session, which has no controlling terminal yet
    Ok(p.pid)
}

// ----- pidfds ----------------------------------------------------------------------------
//
// Descriptors that refer to processes: `pidfd_open`, `pidfd_send_signal` and
// `pidfd_getfd` (and `waitid`'s `P_PIDFD`, in `children.rs`, through `pidfd_of`).
//
// A pidfd is a descriptor morph serves itself (`crate::files::Served`) naming a
// process, or with `PIDFD_THREAD` a thread, by its id: a machine never hands out an
// id twice, so the id names it alone, as Linux's `struct pid` does. It is readable
// (`poll`, `select`, `epoll`) once the process has exited (a zombie, or reaped), or the
// thread has, and hangs up (`POLLHUP`) once the process is reaped or the thread gone;
// it cannot be read or written (`EINVAL`, also `pread` and the like), nor seek
// (`ESPIPE`), and `fstat` shows Linux's pidfs inode mode (0700, no file type). Where the
// host's stand-in still differs from Linux's pidfd: `F_GETFL` does not show `PIDFD_THREAD` (`O_EXCL`), and `fstat`'s other
// fields are the host's anonymous inode's (one inode number for every pidfd).

const PIDFD_NONBLOCK: u32 = O_NONBLOCK;
const PIDFD_THREAD: u32 = O_EXCL;
const PIDFD_SIGNAL_THREAD: u32 = 1;
const PIDFD_SIGNAL_THREAD_GROUP: u32 = 2;
const PIDFD_SIGNAL_PROCESS_GROUP: u32 = 4;

/// Whether what a pidfd names has ended (Linux's `pidfd_poll` readable): the thread
/// `pid` (`thread`) is gone, or the process `pid` is (a zombie or reaped: a group
/// whose leader thread alone has exited lives on). `p` is the caller, which the
/// table does not hold while it runs.
pub(super) fn pidfd_ended(tasks: &Tasks, p: &Process, pid: Pid, thread: bool) -> bool {
    if thread { !tasks.tids.contains_key(&pid) } else { pid != p.pid && !tasks.procs.contains_key(&pid) }
}

/// Whether the task a pidfd names is gone (Linux's `pidfd_poll` adds `POLLHUP`): a
/// process reaped, a thread that leads no group exited (its task goes at once; a group
/// leader's stays, a zombie, while the group lives or until it is reaped).
pub(super) fn pidfd_reaped(tasks: &Tasks, p: &Process, pid: Pid) -> bool {
    pid != p.pid
        && !tasks.tids.contains_key(&pid)
        && !tasks.procs.contains_key(&pid)
        && !tasks.zombies.contains_key(&pid)
}

/// The id and `PIDFD_THREAD` of pidfd `fd`, and whether it is non-blocking: `EBADF`
/// for no descriptor or one that is not a pidfd (Linux's `pidfd_get_pid`).
pub(super) fn pidfd_of(p: &Process, fd: u32) -> Result<(Pid, bool, bool), Errno> {
    let e = p.fds.get(fd).ok_or(EBADF)?;
    match &e.host.served {
        Some(Served { what: ServedKind::Pid { pid, thread }, .. }) => Ok((*pid, *thread, e.host.guest_nonblock())),
        _ => Err(EBADF),
    }
}

/// `pidfd_open(pid, flags)`: a pidfd (close-on-exec) for process `pid`, or with
/// `PIDFD_THREAD` for thread `pid`; `PIDFD_NONBLOCK`. Linux's checks in its order:
/// the flags and a pid not above 0 (`EINVAL`), an id nothing has (`ESRCH`: a zombie
/// still has its id), a thread that leads no group without `PIDFD_THREAD` (`EINVAL`).
fn sys_pidfd_open(m: &mut TaskCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let (pid, flags) = (a[0] as i32, a[1]);
    if flags & !(PIDFD_NONBLOCK | PIDFD_THREAD) != 0 || pid <= 0 {
        return Err(EINVAL);
    }
    let (pid, thread) = (pid as Pid, flags & PIDFD_THREAD != 0);
    // A group whose leader thread has exited still has its leader's task (a zombie).
    let process = pid == p.pid || m.tasks.procs.contains_key(&pid) || m.tasks.zombies.contains_key(&pid);
    if !process {
        if !m.tasks.tids.contains_key(&pid) {
            return Err(ESRCH);
        }
        if !thread {
            return Err(EINVAL);
        }
    }
    let file = OpenFile::served(ServedKind::Pid { pid, thread }, flags & PIDFD_NONBLOCK != 0)?;
    let fd = p.fds.install(FdEntry::of(file, true), 0).ok_or(EMFILE)?;
    super::refresh_served(m.tasks, p);
    Ok(fd)
}

/// Where a signal a pidfd sends goes (Linux's `pid_type` for it).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Scope {
    Thread,
    Process,
    Group,
}

/// The id a descriptor names for `pidfd_send_signal`: a pidfd's, or a `/proc/<pid>`
/// directory's (Linux takes those too); with whether it is a thread's.
fn target_of(p: &Process, fd: u32) -> Result<(Pid, bool), Errno> {
    let e = p.fds.get(fd).ok_or(EBADF)?;
    if let Some(Served { what: ServedKind::Pid { pid, thread }, .. }) = &e.host.served {
        return Ok((*pid, *thread));
    }
    if let FileKind::Dir(d) = &e.host.kind
        && let Some(pid) = d.path.strip_prefix("/proc/").and_then(|n| n.parse::<Pid>().ok())
    {
        return Ok((pid, false));
    }
    Err(EBADF)
}

/// `pidfd_send_signal(pidfd, sig, info, flags)`: as `kill` (or `rt_sigqueueinfo`,
/// with `info`) to the process the pidfd names; to its thread with
/// `PIDFD_SIGNAL_THREAD` (the default for a `PIDFD_THREAD` pidfd), to the process
/// group its id names with `PIDFD_SIGNAL_PROCESS_GROUP`. Linux's checks in its order:
/// the flags (unknown, or more than one: `EINVAL`), the descriptor (`EBADF`), the
/// `siginfo` (`EFAULT`; its `si_signo` not `sig`: `EINVAL`; a code only the kernel
/// gives, to another than the caller's own thread or to a group: `EPERM`), the target
/// (`ESRCH` once reaped), the signal (`EINVAL`), the permission (`EPERM`). A zombie
/// takes the signal and drops it.
fn sys_pidfd_send_signal(m: &mut TaskCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let (sig, flags) = (a[1] as i32, a[3]);
    let all = PIDFD_SIGNAL_THREAD | PIDFD_SIGNAL_THREAD_GROUP | PIDFD_SIGNAL_PROCESS_GROUP;
    if flags & !all != 0 || flags.count_ones() > 1 {
        return Err(EINVAL);
    }
    let (pid, thread) = target_of(p, a[0])?;
    let scope = match flags {
        PIDFD_SIGNAL_THREAD => Scope::Thread,
        PIDFD_SIGNAL_THREAD_GROUP => Scope::Process,
        PIDFD_SIGNAL_PROCESS_GROUP => Scope::Group,
        _ if thread => Scope::Thread,
        _ => Scope::Process,
    };
    let info = if a[2] != 0 {
        let info = super::signal::queued_info(p, a[2])?;
        if p.aspace.read_u32(a[2]).map_err(efault)? as i32 != sig {
            return Err(EINVAL);
        }
        if (pid != p.tid || scope > Scope::Process) && (info.code >= 0 || info.code == SI_TKILL) {
            return Err(EPERM);
        }
        info
    } else {
        let code = if scope == Scope::Thread { SI_TKILL } else { SI_USER };
        SigInfo { code, pid_or_addr: p.pid, uid: p.attrs.creds.uid, ..SigInfo::default() }
    };
    match scope {
        Scope::Group => send_to_group(m, p, pid, sig, info),
        _ => send_to(m, p, pid, scope == Scope::Thread, sig, info),
    }
}

/// Whether `p` may signal a thread with credentials `target` in session `sid`
/// (Linux's `check_kill_permission`).
fn may_signal(p: &Process, target: &crate::process::Creds, sid: Pid, sig: i32) -> bool {
    p.attrs.caps.may_signal(&p.attrs.creds, p.sid, target, sid, sig)
}

/// Sends `sig` to the process `pid` or (`thread`) the thread `pid`: `ESRCH` if there
/// is none (a zombie, or a group whose leader thread has exited, for the leader,
/// takes the signal and drops it), `EINVAL` for a bad signal, `EPERM`.
fn send_to(m: &mut TaskCtx<'_>, p: &mut Process, pid: Pid, thread: bool, sig: i32, info: SigInfo) -> SysResult {
    let group = if thread { m.tasks.tids.get(&pid).copied() } else { None };
    let group = group.or_else(|| (pid == p.pid || m.tasks.procs.contains_key(&pid)).then_some(pid));
    let Some(group) = group else {
        // Not reaped yet: the signal is checked, then dropped.
        let z = m.tasks.zombies.get(&pid).ok_or(ESRCH)?;
        if !(0..=64).contains(&sig) {
            return Err(EINVAL);
        }
        let c = &p.attrs.creds;
        return if p.attrs.caps.has(crate::process::Caps::KILL) || [c.uid, c.euid].contains(&z.uid) {
            Ok(0)
        } else {
            Err(EPERM)
        };
    };
    if !(0..=64).contains(&sig) {
        return Err(EINVAL);
    }
    let q = if group == p.pid { &*p } else { m.tasks.procs.get(&group).ok_or(ESRCH)? };
    let creds = q.thread_attrs(pid).map_or(q.attrs.creds, |t| t.creds);
    if !may_signal(p, &creds, q.sid, sig) {
        return Err(EPERM);
    }
    if sig == 0 {
        return Ok(0);
    }
    let q = if group == p.pid { &mut *p } else { m.tasks.procs.get_mut(&group).ok_or(ESRCH)? };
    if !thread {
        q.raise_group(sig, info);
    } else if !q.raise_thread(pid, sig, info) {
        // The leader thread has exited (a zombie task): the signal is dropped.
        return Ok(0);
    }
    if group != p.pid {
        m.tasks.notify_continued(p, group);
    }
    Ok(0)
}

/// Sends `sig` to every process of process group `pgid` (Linux's `kill_pgrp_info`):
/// `ESRCH` if it has none, else success if one took it, else the last error.
fn send_to_group(m: &mut TaskCtx<'_>, p: &mut Process, pgid: Pid, sig: i32, info: SigInfo) -> SysResult {
    let mut members: Vec<Pid> = m.tasks.procs.values().filter(|q| q.pgid == pgid).map(|q| q.pid).collect();
    if p.pgid == pgid {
        members.push(p.pid);
    }
    let zombies = m.tasks.zombies.values().filter(|z| z.pgid == pgid).count();
    if members.is_empty() && zombies == 0 {
        return Err(ESRCH);
    }
    let (mut ok, mut last) = (zombies > 0 && (0..=64).contains(&sig), Ok(0));
    for pid in members {
        last = send_to(m, p, pid, false, sig, info);
        ok |= last.is_ok();
    }
    if ok { Ok(0) } else { last }
}

/// `pidfd_getfd(pidfd, targetfd, flags)`: a duplicate (close-on-exec) of descriptor
/// `targetfd` of the process the pidfd names (the same open file description). Linux's
/// checks in its order: the flags (`EINVAL`), the pidfd (`EBADF`), the thread it names
/// gone or exiting (`ESRCH`), ptrace's access check (`EPERM`: another process is open to
/// a caller with its real ids as all of the target's, the target dumpable and its
/// permitted capabilities among the caller's, or to `CAP_SYS_PTRACE`), the descriptor
/// (`EBADF`).
fn sys_pidfd_getfd(m: &mut TaskCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    if a[2] != 0 {
        return Err(EINVAL);
    }
    let (tid, _, _) = pidfd_of(p, a[0])?;
    let group = *m.tasks.tids.get(&tid).ok_or(ESRCH)?;
    let entry = if group == p.pid {
        p.fds.get(a[1]).ok_or(EBADF)?.clone()
    } else {
        let q = m.tasks.procs.get(&group).ok_or(ESRCH)?;
        let t = q.thread_attrs(tid).copied().unwrap_or(q.attrs);
        if !p.attrs.caps.may_ptrace(&p.attrs.creds, &t, q.dumpable, false) {
            return Err(EPERM);
        }
        q.fds.get(a[1]).ok_or(EBADF)?.clone()
    };
    p.fds.install(FdEntry { host: entry.host, cloexec: true }, 0).ok_or(EMFILE)
}

// ----- membarrier ------------------------------------------------------------------------
//
// `membarrier`: memory barriers on every thread that runs the caller's memory.
//
// Every guest thread runs on the one host thread, one at a time: a thread switched
// out has passed a full barrier (the switch), and one switched back in sees every
// store made meanwhile; a restartable sequence of a thread switched out is aborted
// when it runs again (`rseq.rs`). So each barrier is already in place when asked for,
// and what is left is Linux's bookkeeping: which commands are known, which need a
// registration of the address space first (`EPERM` without one), and the
// registrations themselves (`Process::membarrier`: copied by fork, shared by
// processes sharing the address space, cleared by exec).

const CMD_QUERY: i32 = 0;
const CMD_GLOBAL: i32 = 1 << 0;
const CMD_GLOBAL_EXPEDITED: i32 = 1 << 1;
const CMD_REGISTER_GLOBAL_EXPEDITED: i32 = 1 << 2;
const CMD_PRIVATE_EXPEDITED: i32 = 1 << 3;
const CMD_REGISTER_PRIVATE_EXPEDITED: i32 = 1 << 4;
const CMD_PRIVATE_EXPEDITED_SYNC_CORE: i32 = 1 << 5;
const CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE: i32 = 1 << 6;
const CMD_PRIVATE_EXPEDITED_RSEQ: i32 = 1 << 7;
const CMD_REGISTER_PRIVATE_EXPEDITED_RSEQ: i32 = 1 << 8;
const CMD_GET_REGISTRATIONS: i32 = 1 << 9;
/// Every command `CMD_QUERY` reports (Linux's `MEMBARRIER_CMD_BITMASK`).
const CMD_BITMASK: i32 = (1 << 10) - 1;
/// `MEMBARRIER_CMD_FLAG_CPU`: `cpu_id` names the one CPU (for `PRIVATE_EXPEDITED_RSEQ`).
const FLAG_CPU: u32 = 1;

// The address space's state (Linux's `MEMBARRIER_STATE_*`): a registration sets a
// command's bit and its `READY` bit.
const PRIVATE_EXPEDITED_READY: u32 = 1 << 0;
const PRIVATE_EXPEDITED: u32 = 1 << 1;
const GLOBAL_EXPEDITED_READY: u32 = 1 << 2;
const GLOBAL_EXPEDITED: u32 = 1 << 3;
const SYNC_CORE_READY: u32 = 1 << 4;
const SYNC_CORE: u32 = 1 << 5;
const RSEQ_READY: u32 = 1 << 6;
const RSEQ: u32 = 1 << 7;

/// `membarrier(cmd, flags, cpu_id)`. Linux's checks in its order: the flags (0, or
/// `MEMBARRIER_CMD_FLAG_CPU` for `PRIVATE_EXPEDITED_RSEQ`: `EINVAL`), then the command
/// (unknown: `EINVAL`; a private expedited one without its registration: `EPERM`).
/// `QUERY` returns the commands known; `GET_REGISTRATIONS` the registration commands
/// the address space has had.
fn sys_membarrier(m: &mut TaskCtx<'_>, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let (cmd, flags) = (a[0] as i32, a[1]);
    let flags_ok = match cmd {
        CMD_PRIVATE_EXPEDITED_RSEQ => flags == 0 || flags == FLAG_CPU,
        _ => flags == 0,
    };
    if !flags_ok {
        return Err(EINVAL);
    }
    // The barrier itself is in place (see the module documentation); a `cpu_id` out of
    // range is no error on Linux either.
    let state = p.membarrier;
    let need = |ready: u32| if state & ready != 0 { Ok(0) } else { Err(EPERM) };
    match cmd {
        CMD_QUERY => Ok(CMD_BITMASK as u32),
        CMD_GLOBAL | CMD_GLOBAL_EXPEDITED => Ok(0),
        CMD_PRIVATE_EXPEDITED => need(PRIVATE_EXPEDITED_READY),
        CMD_PRIVATE_EXPEDITED_SYNC_CORE => need(SYNC_CORE_READY),
        CMD_PRIVATE_EXPEDITED_RSEQ => need(RSEQ_READY),
        CMD_REGISTER_GLOBAL_EXPEDITED => membarrier_register(m, p, GLOBAL_EXPEDITED | GLOBAL_EXPEDITED_READY),
        CMD_REGISTER_PRIVATE_EXPEDITED => membarrier_register(m, p, PRIVATE_EXPEDITED | PRIVATE_EXPEDITED_READY),
        // As Linux: these mark the plain private expedited command too, not its READY.
        CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE => {
            membarrier_register(m, p, PRIVATE_EXPEDITED | SYNC_CORE | SYNC_CORE_READY)
        }
        CMD_REGISTER_PRIVATE_EXPEDITED_RSEQ => membarrier_register(m, p, PRIVATE_EXPEDITED | RSEQ | RSEQ_READY),
        CMD_GET_REGISTRATIONS => Ok(membarrier_registrations(p.membarrier)),
        _ => Err(EINVAL),
    }
}

/// Records a registration for `p`'s address space, and so for every process sharing it.
fn membarrier_register(m: &mut TaskCtx<'_>, p: &mut Process, state: u32) -> SysResult {
    p.membarrier |= state;
    if let Some(key) = p.vm_share {
        for q in m.tasks.procs.values_mut().filter(|q| q.vm_share == Some(key)) {
            q.membarrier |= state;
        }
    }
    Ok(0)
}

/// The registration commands behind `state` (Linux's `membarrier_get_registrations`:
/// a state bit, ready or not, reports its command).
fn membarrier_registrations(state: u32) -> u32 {
    [
        (GLOBAL_EXPEDITED | GLOBAL_EXPEDITED_READY, CMD_REGISTER_GLOBAL_EXPEDITED),
        (PRIVATE_EXPEDITED | PRIVATE_EXPEDITED_READY, CMD_REGISTER_PRIVATE_EXPEDITED),
        (SYNC_CORE | SYNC_CORE_READY, CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE),
        (RSEQ | RSEQ_READY, CMD_REGISTER_PRIVATE_EXPEDITED_RSEQ),
    ]
    .iter()
    .filter(|(bits, _)| state & bits != 0)
    .fold(0, |r, &(_, cmd)| r | cmd as u32)
}

#[cfg(test)]
mod tests {
    use crate::loader::shebang;

    #[test]
    fn shebang_lines() {
        assert_eq!(shebang(b"#!/bin/sh\necho"), Some((b"/bin/sh".to_vec(), None)));
        assert_eq!(
            shebang(b"#! /usr/bin/env  python3 -u \n"),
            Some((b"/usr/bin/env".to_vec(), Some(b"python3 -u".to_vec())))
        );
        assert_eq!(shebang(b"#!\n"), None);
        assert_eq!(shebang(b"\x7fELF"), None);
    }

    #[test]
    fn registrations_report_linuxs_commands() {
        use super::*;
        assert_eq!(membarrier_registrations(0), 0);
        // SYNC_CORE's registration marks the private expedited command too.
        assert_eq!(
            membarrier_registrations(PRIVATE_EXPEDITED | SYNC_CORE | SYNC_CORE_READY),
            (CMD_REGISTER_PRIVATE_EXPEDITED | CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE) as u32
        );
        let global = membarrier_registrations(GLOBAL_EXPEDITED | GLOBAL_EXPEDITED_READY);
        assert_eq!(global, CMD_REGISTER_GLOBAL_EXPEDITED as u32);
    }
}
