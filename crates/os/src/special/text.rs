//! The text of `/proc/<pid>/maps`, `status`, `stat`, `cmdline`, `comm`, `fdinfo/<n>`
//! and of `task/<tid>/stat`, `status`, `comm`, in Linux's format.

use super::*;
use crate::process::ThreadAttrs;

/// Virtual size and resident pages of a process.
pub(super) fn memory(q: &Process) -> (u64, u64) {
    let mut size = 0u64;
    let mut rss = 0u64;
    for v in q.aspace.vmas() {
        size += u64::from(v.end - v.start);
        rss += (v.start..v.end).step_by(PAGE_SIZE as usize).filter(|&a| q.aspace.pte(a).has_frame()).count() as u64;
    }
    (size, rss)
}

/// Signals whose disposition is `SIG_IGN` (bit `sig - 1`), and those with a handler.
pub(super) fn dispositions(q: &Process) -> (u64, u64) {
    let (mut ign, mut cgt) = (0u64, 0u64);
    for (i, a) in q.sigactions.iter().enumerate() {
        if a.handler == SIG_IGN {
            ign |= 1 << i;
        } else if a.handler > SIG_IGN {
            cgt |= 1 << i;
        }
    }
    (ign, cgt)
}

/// One thread of a group, as `/proc` shows it.
pub(super) struct TaskView {
    blocked: bool,
    /// Its group is stopped (job control).
    stopped: bool,
    esp: u32,
    eip: u32,
    pending: u64,
    sigmask: u64,
    icount: u64,
    /// Its name, policy and priority.
    attrs: ThreadAttrs,
}

/// The thread of `q` that runs (or last ran).
fn current(q: &Process) -> TaskView {
    use morph_cpu::state::reg::ESP;
    let (esp, eip) = (q.cpu.gpr[ESP], q.cpu.eip);
    let (pending, sigmask, icount) = (q.pending, q.sigmask, q.cpu.icount);
    let (blocked, stopped, attrs) = (q.blocked.is_some(), q.job.stopped, q.attrs);
    TaskView { blocked, stopped, esp, eip, pending, sigmask, icount, attrs }
}

/// Thread `tid` of `q`, if it lives.
pub(super) fn task(q: &Process, tid: Pid) -> Option<TaskView> {
    use morph_cpu::state::reg::ESP;
    if tid == q.tid {
        return Some(current(q));
    }
    q.threads.iter().find(|t| t.tid == tid).map(|t| TaskView {
        blocked: t.blocked.is_some(),
        stopped: q.job.stopped,
        esp: t.cpu.gpr[ESP],
        eip: t.cpu.eip,
        pending: t.pending,
        sigmask: t.sigmask,
        icount: t.cpu.icount,
        attrs: t.attrs,
    })
}

/// What the process-wide files show of a thread: the leader's, as Linux's do (or the
/// running thread's once the leader has ended).
fn leader(q: &Process) -> TaskView {
    task(q, q.pid).unwrap_or_else(|| current(q))
}

/// The controlling terminal of a process, as `stat` shows it: its device number
/// (Linux's encoding, 0 for none) and its foreground process group (-1 for none).
#[derive(Clone, Copy, Debug)]
pub struct Ctty {
    /// `tty_nr`.
    pub nr: u32,
    /// `tpgid`.
    pub pgrp: i32,
}

impl Default for Ctty {
    fn default() -> Ctty {
        Ctty { nr: 0, pgrp: -1 }
    }
}

/// The contents of a `/proc/<pid>` text file (empty for a thread that has ended, for a
/// machine-wide file, which is `machine`'s, and for `fdinfo`, which is [`fdinfo`]'s); `tty` is the process's controlling
/// terminal.
pub fn text(q: &Process, f: ProcFile, tty: Ctty) -> Vec<u8> {
    match f {
        ProcFile::Maps => maps(q).into_bytes(),
        ProcFile::Cmdline => q.cmdline.clone(),
        ProcFile::Status => status(q, &leader(q), q.pid).into_bytes(),
        ProcFile::Stat => stat(q, &leader(q), None, tty).into_bytes(),
        ProcFile::Comm => comm_line(&leader(q)),
        ProcFile::Personality => format!("{:08x}\n", q.personality).into_bytes(),
        ProcFile::Task(tid, f) => match (task(q, tid), f) {
            (Some(t), TaskFile::Status) => status(q, &t, tid).into_bytes(),
            (Some(t), TaskFile::Comm) => comm_line(&t),
            (Some(t), TaskFile::Stat) => stat(q, &t, Some(tid), tty).into_bytes(),
            (None, _) => Vec::new(),
        },
        ProcFile::Machine(_) | ProcFile::FdInfo(_) => Vec::new(),
    }
}

/// `comm`: the thread's name as it is (any bytes), and a newline.
fn comm_line(t: &TaskView) -> Vec<u8> {
    [t.attrs.comm.as_bytes(), b"\n"].concat()
}

/// The thread's name as text (bytes that are not UTF-8 replaced).
fn name(t: &TaskView) -> String {
    String::from_utf8_lossy(t.attrs.comm.as_bytes()).into_owned()
}

pub(super) fn state(t: &TaskView) -> (char, &'static str) {
    if t.stopped {
        ('T', "stopped")
    } else if t.blocked {
        ('S', "sleeping")
    } else {
        ('R', "running")
    }
}

/// Linux's `/proc/<pid>/maps`, as a 32-bit kernel prints it (the name column starts
/// after 48 characters plus a space).
pub(super) fn maps(q: &Process) -> String {
    let mut s = String::new();
    for v in q.aspace.vmas() {
        let (dev, ino, off) = match &v.kind {
            MapKind::File { id, page, .. } => (id.dev, id.ino, u64::from(*page) * u64::from(PAGE_SIZE)),
            MapKind::Anon => (0, 0, 0),
        };
        let flag = |b: bool, c: char| if b { c } else { '-' };
        let start = s.len();
        let _ = write!(
            s,
            "{:08x}-{:08x} {}{}{}{} {:08x} {:02x}:{:02x} {} ",
            v.start,
            v.end,
            flag(v.prot.has(morph_mem::Prot::READ), 'r'),
            flag(v.prot.has(morph_mem::Prot::WRITE), 'w'),
            flag(v.prot.has(morph_mem::Prot::EXEC), 'x'),
            if v.shared { 's' } else { 'p' },
            off,
            libc::major(dev),
            libc::minor(dev),
            ino,
        );
        if !v.name.is_empty() {
            while s.len() - start < 48 {
                s.push(' ');
            }
            s.push(' ');
            s.push_str(&v.name);
        }
        s.push('\n');
    }
    s
}

/// `status` of the process (`pid` its id, `t` its leader) or of thread `pid` (`t`).
pub(super) fn status(q: &Process, t: &TaskView, pid: Pid) -> String {
    let c = t.attrs.creds;
    let (size, rss) = memory(q);
    let (ign, cgt) = dispositions(q);
    let (st, st_name) = state(t);
    let mut s = String::new();
    // `status` escapes a newline and a backslash in the name (Linux's
    // `proc_task_name` with escaping).
    let _ = writeln!(s, "Name:\t{}", name(t).replace('\\', "\\\\").replace('\n', "\\n"));
    let _ = writeln!(s, "Umask:\t{:04o}", q.umask);
    let _ = writeln!(s, "State:\t{st} ({st_name})");
    let _ = writeln!(s, "Tgid:\t{}\nNgid:\t0\nPid:\t{}\nPPid:\t{}\nTracerPid:\t0", q.pid, pid, q.ppid);
    let _ = writeln!(s, "Uid:\t{}\t{}\t{}\t{}", c.uid, c.euid, c.suid, c.fsuid);
    let _ = writeln!(s, "Gid:\t{}\t{}\t{}\t{}", c.gid, c.egid, c.sgid, c.fsgid);
    let groups: Vec<String> = q.groups.iter().map(u32::to_string).collect();
    // Linux's trailing space after the list, even an empty one.
    let _ = writeln!(s, "FDSize:\t{}\nGroups:\t{} ", crate::process::MAX_FDS, groups.join(" "));
    let _ = writeln!(s, "VmSize:\t{:8} kB", size / 1024);
    let _ = writeln!(s, "VmLck:\t{:8} kB", q.aspace.locked_bytes() / 1024);
    let _ = writeln!(s, "VmRSS:\t{:8} kB", rss * u64::from(PAGE_SIZE) / 1024);
    let _ = writeln!(s, "Threads:\t{}", 1 + q.threads.len());
    let _ = writeln!(s, "SigPnd:\t{:016x}\nShdPnd:\t{:016x}", t.pending, 0);
    let _ = writeln!(s, "SigBlk:\t{:016x}\nSigIgn:\t{:016x}\nSigCgt:\t{:016x}", t.sigmask, ign, cgt);
    let c = t.attrs.caps;
    let _ =
        writeln!(s, "CapInh:\t{:016x}\nCapPrm:\t{:016x}\nCapEff:\t{:016x}", c.inheritable, c.permitted, c.effective);
    let _ = writeln!(s, "CapBnd:\t{:016x}\nCapAmb:\t{:016x}", c.bounding, 0);
    s
}

/// `stat` of the process (`t` its leader, `tid` `None`) or of thread `tid` (`t`): the
/// thread's id, name, state, registers, signals, priority and policy; its own time, or
/// the group's.
pub(super) fn stat(q: &Process, t: &TaskView, tid: Option<Pid>, tty: Ctty) -> String {
    let (size, rss) = memory(q);
    let (ign, cgt) = dispositions(q);
    let tick = |n: u64| n / crate::process::INSNS_PER_TICK;
    let lo = |v: u64| v & 0xffff_ffff;
    let utime = tick(if tid.is_some() { t.icount.saturating_sub(q.start_icount) } else { q.group_icount() });
    let cutime = tick(q.child_icount);
    let threads = 1 + q.threads.len();
    // Linux's `task_prio`: -1 - the real-time priority, or 20 + nice.
    let (rt, policy) = (t.attrs.rt_priority, t.attrs.policy);
    let prio = if t.attrs.is_realtime() { -1 - rt as i32 } else { 20 + q.nice };
    let nice = q.nice;
    format!(
        "{} ({}) {} {} {} {} {} {} 4194304 0 0 0 0 {utime} 0 {cutime} 0 {prio} {nice} {threads} 0 0 {size} {rss} \
         4294967295 0 0 0 {} {} {} {} {} {} 0 0 0 {} 0 {rt} {policy} 0 0 0 0 0 {} 0 0 0 0 0\n",
        tid.unwrap_or(q.pid),
        name(t),
        state(t).0,
        q.ppid,
        q.pgid,
        q.sid,
        tty.nr,
        tty.pgrp,
        t.esp,
        t.eip,
        lo(t.pending),
        lo(t.sigmask),
        lo(ign),
        lo(cgt),
        q.exit_signal,
        q.brk_start,
    )
}

/// The `mnt_id` every `fdinfo` file shows. morph serves no `/proc/<pid>/mountinfo` to
/// match it against, so one stable number stands for every mount.
pub const FDINFO_MNT_ID: u32 = 1;

/// `fdinfo/<n>` of process `q` (`p` is the caller): Linux's `pos`, `flags` (octal, with
/// `O_CLOEXEC` for a close-on-exec descriptor), `mnt_id` ([`FDINFO_MNT_ID`]) and `ino`
/// (what `fstat` shows), then what the kind of file adds: a pidfd's `Pid` and `NSpid`
/// (-1 once its task is gone), a signalfd's `sigmask`, a pty master's `tty-index` (the
/// machine's number), and for a host object (an eventfd, a timerfd, an inotify or epoll
/// instance, a socket) the host's own lines, an epoll instance's `tfd` numbers turned
/// into the guest's descriptors. Empty if `n` is not open.
pub(super) fn fdinfo(m: Sys<'_>, p: &Process, q: &Process, n: u32) -> Vec<u8> {
    use crate::files::{Served, ServedKind};
    let Some(e) = q.fds.get(n) else { return Vec::new() };
    let f = &e.host;
    let raw = f.as_raw_fd();
    let pos = match &f.kind {
        FileKind::Dir(d) => d.pos.get(),
        _ => host::lseek(raw, 0, libc::SEEK_CUR).unwrap_or(0),
    };
    let flags = f.guest_flags().unwrap_or(0) | if e.cloexec { O_CLOEXEC } else { 0 };
    let ino = match object_of_fd(e) {
        Ok(Object::Host(o) | Object::Device(o)) => host::fstat(o.as_raw_fd()).map_or(0, |st| st.st_ino),
        Ok(Object::Synthetic(st)) => st.st_ino,
        Err(_) => 0,
    };
    let mut s = format!("pos:\t{pos}\nflags:\t0{flags:o}\nmnt_id:\t{FDINFO_MNT_ID}\nino:\t{ino}\n");
    match (&f.served, &f.kind) {
        (Some(Served { what: ServedKind::Pid { pid, .. }, .. }), _) => {
            let has_task =
                *pid == p.pid || m.tids.contains_key(pid) || m.procs.contains_key(pid) || m.zombies.contains_key(pid);
            let nr = if has_task { i64::from(*pid) } else { -1 };
            let _ = write!(s, "Pid:\t{nr}\nNSpid:\t{nr}\n");
        }
        (Some(Served { what: ServedKind::Signal(mask), .. }), _) => {
            let _ = writeln!(s, "sigmask:\t{:016x}", mask.get());
        }
        (None, FileKind::Pty(end)) if end.master => {
            let _ = writeln!(s, "tty-index:\t{}", end.pty.n);
        }
        (None, FileKind::Host) => host_fdinfo_lines(q, raw, &mut s),
        _ => {}
    }
    s.into_bytes()
}

/// Appends the host's `fdinfo` lines for host descriptor `raw` past the four every file
/// has (and its record locks, which are morph's own: `crate::locks`), an epoll
/// instance's `tfd` turned into `q`'s descriptor for the host one it watches.
fn host_fdinfo_lines(q: &Process, raw: i32, s: &mut String) {
    let Ok(text) = std::fs::read_to_string(format!("/proc/self/fdinfo/{raw}")) else { return };
    for line in text.lines() {
        if ["pos:", "flags:", "mnt_id:", "ino:", "lock:"].iter().any(|k| line.starts_with(k)) {
            continue;
        }
        if let Some(rest) = line.strip_prefix("tfd: ") {
            let num = rest.trim_start();
            let digits = num.find(|c: char| !c.is_ascii_digit()).unwrap_or(num.len());
            let guest = num[..digits].parse::<i32>().ok().and_then(|h| {
                q.fds.iter().find(|(_, x)| x.host.as_raw_fd() == h || x.host.poll_fd() == h).map(|(g, _)| g)
            });
            if let Some(g) = guest {
                let _ = writeln!(s, "tfd: {g:>8}{}", &num[digits..]);
                continue;
            }
        }
        s.push_str(line);
        s.push('\n');
    }
}
