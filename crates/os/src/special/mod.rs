//! morph's own `/dev` and `/proc`.
//!
//! The guest root (a Debian sysroot, say) has empty `/dev` and `/proc` directories, and
//! the host's must never show through: they would name the host's devices and the host's
//! processes, and make a run depend on the host. So every path argument is first
//! normalized (joined to the working directory, `.`/`..` and repeated slashes removed
//! lexically) and, if it lies under `/dev` or `/proc`, answered here instead of by the
//! file system ([`crate::vfs::Vfs`] refuses such paths, as a safety net for any call
//! that does not ask here first).
//!
//! | path | what it is |
//! |---|---|
//! | `/dev/null`, `/dev/zero`, `/dev/full`, `/dev/tty` | the host's device, opened by name (`/dev/tty` fails with `ENXIO` without a controlling terminal); `/dev/tty` of a process whose session has one of the machine's ptys as its controlling terminal opens that pty's slave (named and described as `/dev/tty`) |
//! | `/dev/random`, `/dev/urandom` | reads come from the machine's seeded RNG, so a run is reproducible |
//! | `/dev/ptmx` | opening it makes a new pseudo-terminal, backed by a host pty (see [`crate::pty`]); its metadata are the host's `/dev/ptmx` |
//! | `/dev/pts`, `/dev/pts/N` | the slaves of this machine's ptys whose master is open (never the host's others), by the machine's own numbers; metadata the host's, with device 136:N and inode N + 3 |
//! | `/dev/stdin`, `/dev/stdout`, `/dev/stderr`, `/dev/fd` | links to `/proc/self/fd/0`, `1`, `2` and `/proc/self/fd` |
//! | `/proc/self` | a link to `/proc/<pid>` of the caller |
//! | `/proc/<pid>/exe`, `cwd`, `root` | links to the executable, working directory and `/` |
//! | `/proc/<pid>/fd/N` | a link to what guest descriptor N holds (`(unreachable)/name` for a host file outside the root); opening it opens that object again, as Linux does, but a host object outside the root with no more access than the descriptor has |
//! | `/proc/<pid>/maps`, `status`, `stat`, `cmdline`, `comm` | text in Linux's format, made at the first read (so `cmd < /proc/self/maps` shows `cmd`'s, as on Linux) |
//! | `/proc/<pid>/personality` | the execution domain and flags, `%08x`; mode 0400, open to a reader that may `ptrace` the process (else `EACCES` at the open) |
//! | `/proc/<pid>/fdinfo/N` | descriptor N's `pos`, `flags`, `mnt_id` (one number for every mount: no `mountinfo` is served) and `ino`, and what its kind adds (a pidfd's `Pid`, a signalfd's `sigmask`, a pty master's `tty-index`, a host object's own lines) |
//! | `/proc/<pid>/task/<tid>/stat`, `status`, `comm` | the same for each thread of the group (`task` lists the thread ids) |
//! | `/proc/meminfo`, `uptime`, `loadavg`, `stat` | the machine's memory, clock and counters in Linux's format (see `machine.rs`) |
//! | `/proc/sys/kernel/…`, `/proc/sys/vm/…` | the machine's settings, read-only (see `sysctl.rs`) |
//!
//! `<pid>` is any live guest process. The directories can be listed (`getdents`), made
//! the working directory, and used as `*at` directory descriptors. Nothing here can be
//! created, removed, renamed or have its mode or times changed.
//!
//! Lexical `..` is what Linux does too unless a symbolic link comes before the `..`; a
//! path that reaches `/dev` or `/proc` only through a link in the root (not lexically)
//! is not served here, and the file system reports it missing.

use std::cell::{Cell, RefCell};
use std::ffi::CString;
use std::fmt::Write as _;
use std::os::fd::{AsRawFd, OwnedFd};

use morph_mem::{MapKind, PAGE_SIZE};

use crate::host::{self, Zeroed, ids};
use crate::linux::*;
use crate::process::{FdEntry, FileKind, OpenFile, Pid, Process};
use crate::pty::{PTS_DEV, Pty, PtyEnd, Ptys};
use crate::vfs::{Errno, Vfs};
use std::rc::Rc;

mod machine;
pub mod sysctl;
mod text;
pub use crate::files::{DirState, LinkState, ProcFile, Snapshot, SysctlFile, TaskFile};
use crate::files::{Listing, MachineFile};
pub use machine::{Counters, MachineView};
pub use sysctl::Sysctl;
pub use text::{Ctty, text};

/// What `/dev` and `/proc` see of the machine: its file system, its processes (the
/// caller, while it runs, is not among them and is passed beside), and its memory,
/// clock and counters.
#[derive(Clone, Copy)]
pub struct Sys<'a> {
    /// The guest file system.
    pub vfs: &'a Vfs,
    /// Every process but the caller.
    pub procs: &'a std::collections::BTreeMap<Pid, Process>,
    /// Every live thread id (with its group's pid), and the exited processes not yet
    /// waited for: whether an id still has a task (a pidfd's `fdinfo`).
    pub tids: &'a std::collections::BTreeMap<Pid, Pid>,
    /// The zombies.
    pub zombies: &'a std::collections::BTreeMap<Pid, crate::process::Zombie>,
    /// Memory, clock and counters, for the machine-wide files.
    pub machine: MachineView<'a>,
    /// The machine's pseudo-terminals.
    pub ptys: &'a Ptys,
}

/// The device number of morph's `/proc` (procfs is 0:22 on a typical system).
pub const PROC_DEV: u64 = 22;
/// The device number of morph's `/dev` (devtmpfs, 0:5).
pub const DEV_DEV: u64 = 5;

/// Links followed in one path before `ELOOP`.
const MAX_LINKS: usize = 8;

impl ProcFile {
    fn of(name: &[u8]) -> Option<ProcFile> {
        Some(match name {
            b"maps" => ProcFile::Maps,
            b"status" => ProcFile::Status,
            b"stat" => ProcFile::Stat,
            b"cmdline" => ProcFile::Cmdline,
            b"comm" => ProcFile::Comm,
            b"personality" => ProcFile::Personality,
            _ => return None,
        })
    }
}

/// What a path in `/dev` or `/proc` names.
pub enum Node {
    /// A host device used as it is: `null`, `zero`, `full`, `tty`.
    HostDev(&'static str),
    /// `random` or `urandom`.
    Random(&'static str),
    /// A directory of morph's own (its canonical guest path).
    Dir(String),
    /// A symbolic link (when the last component is not followed): its path, target and
    /// permission bits.
    Link(String, Vec<u8>, u32),
    /// A `/proc/<pid>` text file (with its guest path).
    Proc(Pid, ProcFile, String),
    /// What a guest descriptor holds (a followed `/proc/<pid>/fd/N`).
    Fd(FdEntry),
    /// `/dev/ptmx`: opening it makes a new pseudo-terminal.
    Ptmx,
    /// `/dev/pts/N`: the slave of one of the machine's pseudo-terminals.
    Pts(Rc<Pty>),
}

/// What a path resolves to.
pub enum Resolved {
    /// An ordinary guest path, for the file system (absolute, maybe rewritten: a link
    /// such as `/proc/self/cwd` leads back into the root).
    Path(Vec<u8>),
    /// One of morph's own objects.
    Node(Node),
}

/// A path's metadata, where a system call needs it.
pub enum Object {
    /// A host object inside the root (or one a guest descriptor already holds).
    Host(OwnedFd),
    /// A host device opened by name (`O_PATH`): readable metadata, never to be changed.
    Device(OwnedFd),
    /// One of morph's made-up objects.
    Synthetic(libc::stat),
}

impl Snapshot {
    /// Puts the text in the memfd if it is not there yet; `p` is the caller.
    pub fn fill(&self, m: Sys<'_>, p: &Process) {
        let Some(rw) = self.pending.borrow_mut().take() else { return };
        // A process that has gone reads as empty.
        let bytes = match self.file {
            ProcFile::Machine(f) => machine::text(m, p, f),
            ProcFile::FdInfo(n) => process(m, p, self.pid).map(|q| text::fdinfo(m, p, q, n)).unwrap_or_default(),
            f => process(m, p, self.pid).map(|q| text(q, f, ctty(m, p, q))).unwrap_or_default(),
        };
        let mut done = 0;
        while done < bytes.len() {
            match host::pwrite(rw.as_raw_fd(), &bytes[done..], done as i64) {
                Ok(n) if n > 0 => done += n,
                _ => return,
            }
        }
    }
}

impl DirState {
    fn new(path: String) -> DirState {
        DirState { path, entries: RefCell::new(None), pos: Cell::new(0) }
    }
}

/// Resolves a guest path (relative to `dir`) that may lie in `/dev` or `/proc`;
/// `follow` says whether a final symbolic link is followed.
pub fn resolve(m: Sys<'_>, p: &Process, dir: &[u8], path: &[u8], follow: bool) -> Result<Resolved, Errno> {
    if path.is_empty() {
        return Err(ENOENT);
    }
    let (mut norm, slash) = Vfs::normalize(dir, path);
    if !m.vfs.served(&norm) {
        return Ok(Resolved::Path(Vfs::absolute(dir, path)));
    }
    let follow = follow || slash;
    for _ in 0..MAX_LINKS {
        let comps: Vec<&[u8]> = norm.split(|&b| b == b'/').filter(|c| !c.is_empty()).collect();
        let step = if comps[0] == b"dev" { dev(m, &comps, follow)? } else { proc(m, p, &comps, follow)? };
        match step {
            Step::Node(n) => {
                if slash && !is_dir(&n) {
                    return Err(ENOTDIR);
                }
                return Ok(Resolved::Node(n));
            }
            Step::Again(v) => {
                norm = Vfs::normalize(b"/", &v).0;
                if !m.vfs.served(&norm) {
                    if slash {
                        norm.push(b'/');
                    }
                    return Ok(Resolved::Path(norm));
                }
            }
        }
    }
    Err(ELOOP)
}

/// The guest path an exec of `path` loads: links lead back into the root; morph's own
/// objects cannot be executed.
pub fn exec_path(m: Sys<'_>, p: &Process, path: &[u8]) -> Result<Vec<u8>, Errno> {
    match resolve(m, p, &p.cwd, path, true)? {
        Resolved::Path(v) => Ok(v),
        Resolved::Node(Node::Fd(e)) if matches!(e.host.kind, FileKind::Host) => {
            m.vfs.guest_path_of(e.host.as_ref()).map_err(|_| EACCES)
        }
        Resolved::Node(_) => Err(EACCES),
    }
}

enum Step {
    /// The path names this node.
    Node(Node),
    /// A link was replaced: resolve this path instead (it may lead back into the root).
    Again(Vec<u8>),
}

fn is_dir(n: &Node) -> bool {
    match n {
        Node::Dir(_) => true,
        Node::Fd(e) => match &e.host.kind {
            FileKind::Dir(_) => true,
            FileKind::Host => host_mode(e.host.as_raw_fd()) == Some(libc::S_IFDIR),
            _ => false,
        },
        _ => false,
    }
}

fn host_mode(fd: i32) -> Option<u32> {
    host::fstat(fd).ok().map(|st| st.st_mode & libc::S_IFMT)
}

fn join(base: &[u8], rest: &[&[u8]]) -> Vec<u8> {
    let mut v = base.to_vec();
    for c in rest {
        v.push(b'/');
        v.extend_from_slice(c);
    }
    v
}

/// A symbolic link met at component `i` of `c`, with target `text`: the link itself if it
/// is last and not followed, else the path with the link replaced by `to`.
fn link(c: &[&[u8]], i: usize, follow: bool, text: &[u8], to: &[u8]) -> Step {
    if i + 1 == c.len() && !follow {
        let path = String::from_utf8_lossy(&join(b"", &c[..=i])).into_owned();
        return Step::Node(Node::Link(path, text.to_vec(), 0o777));
    }
    Step::Again(join(to, &c[i + 1..]))
}

fn leaf(c: &[&[u8]], i: usize, n: Node) -> Result<Step, Errno> {
    if i + 1 == c.len() { Ok(Step::Node(n)) } else { Err(ENOTDIR) }
}

fn dev(m: Sys<'_>, c: &[&[u8]], follow: bool) -> Result<Step, Errno> {
    let Some(&name) = c.get(1) else { return Ok(Step::Node(Node::Dir("/dev".into()))) };
    let fd_link = |n: &str| {
        let t = format!("/proc/self/fd{n}");
        link(c, 1, follow, t.as_bytes(), t.as_bytes())
    };
    match name {
        b"null" => leaf(c, 1, Node::HostDev("null")),
        b"zero" => leaf(c, 1, Node::HostDev("zero")),
        b"full" => leaf(c, 1, Node::HostDev("full")),
        b"tty" => leaf(c, 1, Node::HostDev("tty")),
        b"random" => leaf(c, 1, Node::Random("random")),
        b"urandom" => leaf(c, 1, Node::Random("urandom")),
        b"stdin" => Ok(fd_link("/0")),
        b"stdout" => Ok(fd_link("/1")),
        b"stderr" => Ok(fd_link("/2")),
        b"fd" => Ok(fd_link("")),
        b"ptmx" => leaf(c, 1, Node::Ptmx),
        b"pts" => {
            let Some(&n) = c.get(2) else { return Ok(Step::Node(Node::Dir("/dev/pts".into()))) };
            let pty = parse_num(n).and_then(|n| m.ptys.get(n)).ok_or(ENOENT)?;
            leaf(c, 2, Node::Pts(pty))
        }
        _ => Err(ENOENT),
    }
}

/// The controlling terminal of process `q` (`p` is the caller), as `/proc/<pid>/stat`
/// shows it.
fn ctty(m: Sys<'_>, p: &Process, q: &Process) -> Ctty {
    let alive = |pid: Pid| process(m, p, pid).is_some();
    match m.ptys.ctty(q.sid, alive).filter(|_| !q.no_ctty) {
        Some(pty) => {
            let n = pty.n;
            let pgrp = pty.pgrp(alive);
            Ctty { nr: (136 << 8) | (n & 0xff) | ((n & !0xff) << 12), pgrp: if pgrp == 0 { -1 } else { pgrp as i32 } }
        }
        None => Ctty::default(),
    }
}

/// The live guest process `pid` (the caller is not in the machine's table while it runs).
fn process<'a>(m: Sys<'a>, p: &'a Process, pid: Pid) -> Option<&'a Process> {
    if pid == p.pid { Some(p) } else { m.procs.get(&pid) }
}

fn parse_num(s: &[u8]) -> Option<u32> {
    if s.is_empty() || s.len() > 10 || (s.len() > 1 && s[0] == b'0') || !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(s).ok()?.parse().ok()
}

fn proc(m: Sys<'_>, p: &Process, c: &[&[u8]], follow: bool) -> Result<Step, Errno> {
    let Some(&name) = c.get(1) else { return Ok(Step::Node(Node::Dir("/proc".into()))) };
    if name == b"self" {
        let to = format!("/proc/{}", p.pid);
        return Ok(link(c, 1, follow, p.pid.to_string().as_bytes(), to.as_bytes()));
    }
    let machine_file = match name {
        b"meminfo" => Some(MachineFile::Meminfo),
        b"uptime" => Some(MachineFile::Uptime),
        b"loadavg" => Some(MachineFile::Loadavg),
        b"stat" => Some(MachineFile::Stat),
        _ => None,
    };
    if let Some(f) = machine_file {
        let path = format!("/proc/{}", String::from_utf8_lossy(name));
        return leaf(c, 1, Node::Proc(p.pid, ProcFile::Machine(f), path));
    }
    if name == b"sys" {
        let Some(&dir) = c.get(2) else { return Ok(Step::Node(Node::Dir("/proc/sys".into()))) };
        let dir = sysctl::DIRS.into_iter().find(|d| d.as_bytes() == dir).ok_or(ENOENT)?;
        let Some(&file) = c.get(3) else { return Ok(Step::Node(Node::Dir(format!("/proc/sys/{dir}")))) };
        let f = sysctl::file(dir.as_bytes(), file).ok_or(ENOENT)?;
        let path = format!("/proc/sys/{dir}/{}", String::from_utf8_lossy(file));
        return leaf(c, 3, Node::Proc(p.pid, ProcFile::Machine(MachineFile::Sysctl(f)), path));
    }
    let pid = parse_num(name).ok_or(ENOENT)?;
    let q = process(m, p, pid).ok_or(ENOENT)?;
    let base = format!("/proc/{pid}");
    let Some(&what) = c.get(2) else { return Ok(Step::Node(Node::Dir(base))) };
    let rest = &c[3..];
    let into_root = |target: &[u8]| -> Step {
        if rest.is_empty() && !follow {
            let path = format!("{base}/{}", String::from_utf8_lossy(what));
            Step::Node(Node::Link(path, Vfs::shown(target).to_vec(), 0o777))
        } else {
            Step::Again(join(trim_slashes(target), rest))
        }
    };
    match what {
        b"exe" => {
            if !rest.is_empty() {
                return Err(ENOTDIR);
            }
            Ok(into_root(q.exe.as_bytes()))
        }
        // In the reader's terms: a directory outside its root in full (Linux's `d_path`).
        b"cwd" if q.root.is_none() && p.root.is_none() => Ok(into_root(&q.cwd)),
        b"cwd" => Ok(into_root(&m.vfs.to_view(&Vfs::machine_path(q.root.as_deref(), &q.cwd)))),
        b"root" => Ok(into_root(&m.vfs.to_view(q.root.as_ref().map_or(b"/", |r| r.guest())))),
        b"fd" => {
            let Some(&n) = c.get(3) else { return Ok(Step::Node(Node::Dir(format!("{base}/fd")))) };
            let e = parse_num(n).and_then(|n| q.fds.get(n)).ok_or(ENOENT)?.clone();
            let rest = &c[4..];
            if rest.is_empty() && !follow {
                let path = format!("{base}/fd/{}", String::from_utf8_lossy(n));
                // Linux shows how the descriptor is open: r-x for reading, -wx for writing,
                // nothing for O_PATH.
                let fl = host::getfl(e.host.as_raw_fd()).unwrap_or(-1);
                let mode = match fl & libc::O_ACCMODE {
                    _ if fl & libc::O_PATH != 0 => 0,
                    libc::O_RDONLY => 0o500,
                    libc::O_WRONLY => 0o300,
                    _ => 0o700,
                };
                return Ok(Step::Node(Node::Link(path, fd_link(m, &e), mode)));
            }
            if rest.is_empty() {
                return Ok(Step::Node(Node::Fd(e)));
            }
            match &e.host.kind {
                FileKind::Dir(d) => Ok(Step::Again(join(d.path.as_bytes(), rest))),
                FileKind::Host if host_mode(e.host.as_raw_fd()) == Some(libc::S_IFDIR) => {
                    let dir = m.vfs.guest_path_of(e.host.as_ref())?;
                    Ok(Step::Again(join(trim_slashes(&dir), rest)))
                }
                _ => Err(ENOTDIR),
            }
        }
        b"fdinfo" => {
            let Some(&n) = c.get(3) else { return Ok(Step::Node(Node::Dir(format!("{base}/fdinfo")))) };
            let fd = parse_num(n).filter(|&n| q.fds.get(n).is_some()).ok_or(ENOENT)?;
            leaf(c, 3, Node::Proc(pid, ProcFile::FdInfo(fd), format!("{base}/fdinfo/{fd}")))
        }
        b"task" => {
            let Some(&t) = c.get(3) else { return Ok(Step::Node(Node::Dir(format!("{base}/task")))) };
            let tid = parse_num(t).filter(|&t| q.tids().any(|x| x == t)).ok_or(ENOENT)?;
            let Some(&name) = c.get(4) else { return Ok(Step::Node(Node::Dir(format!("{base}/task/{tid}")))) };
            let f = match name {
                b"stat" => TaskFile::Stat,
                b"status" => TaskFile::Status,
                b"comm" => TaskFile::Comm,
                _ => return Err(ENOENT),
            };
            let path = format!("{base}/task/{tid}/{}", String::from_utf8_lossy(name));
            leaf(c, 4, Node::Proc(pid, ProcFile::Task(tid, f), path))
        }
        _ => {
            let f = ProcFile::of(what).ok_or(ENOENT)?;
            leaf(c, 2, Node::Proc(pid, f, format!("{base}/{}", String::from_utf8_lossy(what))))
        }
    }
}

/// What `readlink("/proc/<pid>/fd/N")` says: the guest path of a file in the root,
/// morph's own path for its objects, the host's name for objects that have no path
/// (`pipe:[…]`, `socket:[…]`, `anon_inode:…`), and for a file outside the root (behind
/// an inherited descriptor) `(unreachable)/` and its last component, in the spirit of
/// Linux's `getcwd` for a directory outside a chroot: no host directory is shown.
fn fd_link(m: Sys<'_>, e: &FdEntry) -> Vec<u8> {
    if let Some(s) = &e.host.served {
        return s.link().into();
    }
    match &e.host.kind {
        FileKind::Random(n) | FileKind::Device(n) => format!("/dev/{n}").into_bytes(),
        FileKind::Pty(end) if end.master => b"/dev/ptmx".to_vec(),
        FileKind::Pty(end) if end.via_tty => b"/dev/tty".to_vec(),
        FileKind::Pty(end) => format!("/dev/pts/{}", end.pty.n).into_bytes(),
        FileKind::Snapshot(s) => s.path.clone().into_bytes(),
        FileKind::Dir(d) => d.path.clone().into_bytes(),
        FileKind::Link(l) => l.path.clone().into_bytes(),
        FileKind::Host => {
            // Inside the root or /dev/shm: the guest's path, byte for byte.
            if let Ok(g) = m.vfs.guest_path_of(e.host.as_ref()) {
                return Vfs::shown(&g).to_vec();
            }
            let host = std::fs::read_link(format!("/proc/self/fd/{}", e.host.as_raw_fd())).unwrap_or_default();
            match host.strip_prefix(m.vfs.root_path()) {
                Ok(rel) => [&b"/"[..], rel.as_os_str().as_encoded_bytes()].concat(),
                Err(_) if !host.is_absolute() => host.into_os_string().into_encoded_bytes(),
                // A memfd's name (`/memfd:NAME (deleted)`) is no path, inside the root
                // or out, whatever the root.
                Err(_)
                    if host.as_os_str().as_encoded_bytes().starts_with(b"/memfd:")
                        && host::is_memfd(e.host.as_raw_fd()) =>
                {
                    host.into_os_string().into_encoded_bytes()
                }
                Err(_) => {
                    let mut v = b"(unreachable)/".to_vec();
                    v.extend_from_slice(host.file_name().map_or(&b""[..], |n| n.as_encoded_bytes()));
                    v
                }
            }
        }
    }
}

/// `path` without its trailing slashes (`/` itself: empty).
fn trim_slashes(path: &[u8]) -> &[u8] {
    let end = path.iter().rposition(|&b| b != b'/').map_or(0, |i| i + 1);
    &path[..end]
}

// ----- opening ---------------------------------------------------------------------

fn host_open(path: &str, flags: i32, mode: u32) -> Result<OwnedFd, Errno> {
    let c = CString::new(path).map_err(|_| EINVAL)?;
    host::open(&c, flags | libc::O_CLOEXEC, mode)
}

/// A new, empty memfd: a read-only descriptor, and a writable one.
fn memfd() -> Result<(OwnedFd, OwnedFd), Errno> {
    let rw = host::memfd_create(c"morph-proc", libc::MFD_CLOEXEC)?;
    // A second, read-only open file description of the same memfd, for the guest.
    let ro = host_open(&format!("/proc/self/fd/{}", rw.as_raw_fd()), libc::O_RDONLY, 0)?;
    Ok((ro, rw))
}

/// A link of morph's own opened itself (`O_PATH`, see [`FileKind::Link`]); `O_DIRECTORY`
/// is `ENOTDIR`, as for any link.
fn link_file(path: String, target: Vec<u8>, mode: u32, flags: u32) -> Result<OpenFile, Errno> {
    if flags & O_DIRECTORY != 0 {
        return Err(ENOTDIR);
    }
    let (empty, _) = memfd()?;
    let fd = host_open(&format!("/proc/self/fd/{}", empty.as_raw_fd()), libc::O_PATH, 0)?;
    let mut f = OpenFile::new(fd);
    f.kind = FileKind::Link(LinkState { path, target, mode });
    Ok(f)
}

/// An open `/proc/<pid>` text file, its text to be made at the first read.
fn snapshot(pid: Pid, file: ProcFile, path: String) -> Result<OpenFile, Errno> {
    let (ro, rw) = memfd()?;
    let mut f = OpenFile::new(ro);
    f.kind = FileKind::Snapshot(Snapshot { path, pid, file, pending: RefCell::new(Some(rw)) });
    Ok(f)
}

/// Opens a node with the guest's `open` flags (`mode` already masked by the umask).
pub fn open(m: Sys<'_>, p: &Process, node: Node, flags: u32, mode: u32) -> Result<OpenFile, Errno> {
    let host_flags = (flags & !(O_CLOEXEC | O_LARGEFILE)) as i32;
    let acc = flags & O_ACCMODE;
    let with = |fd: OwnedFd, kind: FileKind| {
        let mut f = OpenFile::new(fd);
        f.kind = kind;
        f
    };
    match node {
        // A process that gave its controlling terminal up has none (see `Process::no_ctty`).
        Node::HostDev("tty") if p.no_ctty => Err(ENXIO),
        Node::HostDev("tty") if let Some(pty) = m.ptys.ctty(p.sid, |pid| process(m, p, pid).is_some()) => {
            // The caller's controlling terminal, one of the machine's ptys.
            let mut f = open_slave(m, p, pty, flags | O_NOCTTY)?;
            if let FileKind::Pty(end) = &mut f.kind {
                end.via_tty = true;
            }
            Ok(f)
        }
        Node::HostDev(n) => {
            let fd = host_open(&format!("/dev/{n}"), host_flags | libc::O_NOCTTY, mode)?;
            Ok(with(fd, FileKind::Device(n)))
        }
        Node::Random(n) => {
            let fd = host_open(&format!("/dev/{n}"), host_flags | libc::O_NOCTTY, mode)?;
            Ok(with(fd, FileKind::Random(n)))
        }
        Node::Dir(path) => {
            if acc != O_RDONLY || flags & O_CREAT != 0 {
                return Err(EISDIR);
            }
            Ok(with(memfd()?.0, FileKind::Dir(DirState::new(path))))
        }
        // O_NOFOLLOW on a link: only O_PATH opens the link itself (Linux checks
        // O_DIRECTORY first).
        Node::Link(path, target, mode) if flags & O_PATH != 0 => link_file(path, target, mode, flags),
        Node::Link(..) if flags & O_DIRECTORY != 0 => Err(ENOTDIR),
        Node::Link(..) => Err(ELOOP),
        Node::Proc(pid, f, path) => {
            if flags & O_DIRECTORY != 0 {
                return Err(ENOTDIR);
            }
            if flags & (O_CREAT | O_EXCL) == O_CREAT | O_EXCL {
                return Err(EEXIST);
            }
            if let ProcFile::Machine(MachineFile::Sysctl(s)) = f {
                // Read-only whoever asks (see `sysctl.rs`): the mount first for
                // O_TRUNC, then the file's bits, then the mount.
                if flags & O_TRUNC != 0 {
                    return Err(EROFS);
                }
                if acc != O_RDONLY {
                    let c = p.attrs.creds;
                    return Err(sysctl::refuse_write(sysctl::mode(s), c.euid, in_group(p, c.egid, 0)));
                }
            }
            if acc != O_RDONLY || flags & O_TRUNC != 0 {
                return Err(EACCES);
            }
            if !matches!(f, ProcFile::Machine(_)) {
                let q = process(m, p, pid).ok_or(ENOENT)?;
                // Linux's `lock_trace`: what only a tracer may see (a read by another
                // fails with EPERM there; its mode 0400, owned by the process, mostly
                // refuses the open first, which morph does in every case).
                if f == ProcFile::Personality
                    && q.pid != p.pid
                    && !p.attrs.caps.may_ptrace(&p.attrs.creds, &q.attrs, q.dumpable, true)
                {
                    return Err(EACCES);
                }
            }
            snapshot(pid, f, path)
        }
        Node::Fd(e) => match &e.host.kind {
            // Linux opens the device again: a new pty, or the same slave.
            FileKind::Pty(end) if end.master => open(m, p, Node::Ptmx, flags, mode),
            FileKind::Pty(end) if end.via_tty => open(m, p, Node::HostDev("tty"), flags, mode),
            FileKind::Pty(end) => open(m, p, Node::Pts(end.pty.clone()), flags, mode),
            _ => reopen(m.vfs, &e, flags, mode),
        },
        Node::Ptmx => {
            let (fd, pty) = m.ptys.create(host_flags)?;
            let mut f = OpenFile::nonblocking(fd, flags & O_NONBLOCK != 0);
            f.kind = FileKind::Pty(PtyEnd { pty, master: true, via_tty: false });
            Ok(f)
        }
        Node::Pts(pty) => open_slave(m, p, pty, flags),
    }
}

/// Opens the slave of `pty` with the guest's `open` flags. Without `O_NOCTTY`, a
/// session leader with no controlling terminal that opens it for reading makes it its
/// session's, if it is no session's yet (Linux's `tty_open_proc_set_tty`).
pub fn open_slave(m: Sys<'_>, p: &Process, pty: Rc<Pty>, flags: u32) -> Result<OpenFile, Errno> {
    let host_flags = (flags & !(O_CLOEXEC | O_LARGEFILE | O_CREAT | O_EXCL | O_TRUNC)) as i32;
    let fd = pty.open_slave(host_flags)?;
    Ok(slave_file(m, p, pty, fd, flags))
}

/// The open file of a host slave of `pty` just opened with the guest's `open` flags
/// (see [`open_slave`]).
pub fn slave_file(m: Sys<'_>, p: &Process, pty: Rc<Pty>, fd: OwnedFd, flags: u32) -> OpenFile {
    let alive = |pid: Pid| process(m, p, pid).is_some();
    let readable = flags & O_ACCMODE != 1; // O_RDONLY or O_RDWR
    if flags & O_NOCTTY == 0
        && readable
        && p.leads_session()
        && pty.session(alive).is_none()
        && m.ptys.ctty(p.sid, alive).is_none()
    {
        pty.set_session(p.sid, p.pgid);
    }
    let mut f = OpenFile::nonblocking(fd, flags & O_NONBLOCK != 0);
    f.kind = FileKind::Pty(PtyEnd { pty, master: false, via_tty: false });
    f
}

/// Opens again what a guest descriptor holds (a new open file description, as opening
/// `/proc/self/fd/N` does on Linux). An object the root does not hold (a host file
/// behind an inherited descriptor, a pipe) is opened with no more access than the
/// descriptor has (`EACCES`): a read-only standard input must not become a way to write
/// a host file the guest could not name.
fn reopen(vfs: &Vfs, e: &FdEntry, flags: u32, mode: u32) -> Result<OpenFile, Errno> {
    let mut host_flags = (flags & !(O_CLOEXEC | O_LARGEFILE)) as i32;
    if matches!(e.host.kind, FileKind::Host) && !vfs.holds(e.host.as_ref()) {
        let have = host::getfl(e.host.as_raw_fd()).unwrap_or(-1) as u32 & O_ACCMODE;
        const O_WRONLY: u32 = 1;
        const O_RDWR: u32 = 2;
        let want = flags & O_ACCMODE;
        let reads = |a: u32| a == O_RDONLY || a == O_RDWR;
        let writes = |a: u32| a == O_WRONLY || a == O_RDWR;
        // O_TRUNC asks for writing (it truncates a regular file whatever the mode).
        let write = writes(want) || flags & O_TRUNC != 0;
        if (reads(want) && !reads(have)) || (write && !writes(have)) {
            return Err(EACCES);
        }
    }
    let fifo = host_mode(e.host.as_raw_fd()) == Some(libc::S_IFIFO);
    if fifo {
        host_flags |= libc::O_NONBLOCK; // opening a pipe must not wait for a peer
    }
    let kind = match &e.host.kind {
        FileKind::Host => FileKind::Host,
        FileKind::Device(n) => FileKind::Device(n),
        FileKind::Random(n) => FileKind::Random(n),
        FileKind::Snapshot(s) => {
            if flags & O_ACCMODE != O_RDONLY {
                return Err(EACCES);
            }
            return snapshot(s.pid, s.file, s.path.clone());
        }
        FileKind::Dir(d) => {
            if flags & O_ACCMODE != O_RDONLY {
                return Err(EISDIR);
            }
            FileKind::Dir(DirState::new(d.path.clone()))
        }
        // The magic link leads to the link itself, which only O_PATH opens.
        FileKind::Link(l) if flags & O_PATH != 0 => {
            return link_file(l.path.clone(), l.target.clone(), l.mode, flags);
        }
        FileKind::Link(_) if flags & O_DIRECTORY != 0 => return Err(ENOTDIR),
        FileKind::Link(_) => return Err(ELOOP),
        FileKind::Pty(_) => return Err(ENXIO), // opened by `open`
    };
    let fd = host_open(&format!("/proc/self/fd/{}", e.host.as_raw_fd()), host_flags, mode)?;
    let mut f = if fifo { OpenFile::nonblocking(fd, flags & O_NONBLOCK != 0) } else { OpenFile::new(fd) };
    f.kind = kind;
    Ok(f)
}

// ----- metadata -----------------------------------------------------------------------

/// A stable made-up inode number for one of morph's paths.
fn ino_of(path: &[u8]) -> u64 {
    // FNV-1a, folded to 32 bits so that the old `stat` can report it.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in path {
        h = (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
    }
    ((h >> 32) ^ h) & 0xffff_ffff | 1
}

/// Whether a process with effective (or real) group `gid` and `p`'s supplementary
/// groups is in group `g` (Linux's `in_egroup_p`).
fn in_group(p: &Process, gid: u32, g: u32) -> bool {
    gid == g || p.groups.contains(&g)
}

/// The permission bits of a `/proc` text file: Linux's (0400 for what only a tracer may
/// read, 0644 or 0444 for `/proc/sys`, 0444 for the others).
fn proc_mode(f: ProcFile) -> u32 {
    match f {
        ProcFile::Personality => 0o400,
        ProcFile::Machine(MachineFile::Sysctl(s)) => sysctl::mode(s),
        _ => 0o444,
    }
}

/// The metadata of a `/proc` text file; `/proc/sys`'s are root's, as on Linux.
fn proc_stat(path: &str, f: ProcFile) -> libc::stat {
    let mut st = synthetic(path, libc::S_IFREG | proc_mode(f), 0);
    if matches!(f, ProcFile::Machine(MachineFile::Sysctl(_))) {
        (st.st_uid, st.st_gid) = (0, 0);
    }
    st
}

/// The metadata of a made-up object.
fn synthetic(path: &str, mode: u32, size: i64) -> libc::stat {
    let mut st = libc::stat::zeroed();
    st.st_dev = if path.starts_with("/proc") {
        PROC_DEV
    } else if path.starts_with("/dev/pts") {
        PTS_DEV
    } else {
        DEV_DEV
    };
    st.st_ino = ino_of(path.as_bytes());
    st.st_mode = mode;
    // Linux's sysctl directories have one link, its other directories two or more.
    st.st_nlink = if mode & libc::S_IFMT == libc::S_IFDIR && !path.starts_with("/proc/sys") { 2 } else { 1 };
    let id = ids();
    (st.st_uid, st.st_gid) = if path.starts_with("/proc/sys") { (0, 0) } else { (id[1], id[3]) };
    st.st_size = size;
    st.st_blksize = 1024;
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    st.st_atime = now.as_secs() as i64;
    st.st_mtime = st.st_atime;
    st.st_ctime = st.st_atime;
    st
}

/// The metadata object of a node.
pub fn object(node: Node) -> Result<Object, Errno> {
    Ok(match node {
        Node::HostDev(n) | Node::Random(n) => Object::Device(host_open(&format!("/dev/{n}"), libc::O_PATH, 0)?),
        Node::Dir(path) => Object::Synthetic(synthetic(&path, libc::S_IFDIR | 0o555, 0)),
        Node::Link(path, target, mode) => {
            Object::Synthetic(synthetic(&path, libc::S_IFLNK | mode, target.len() as i64))
        }
        // Size 0, as Linux reports for /proc files.
        Node::Proc(_, f, path) => Object::Synthetic(proc_stat(&path, f)),
        Node::Fd(e) => object_of_fd(&e)?,
        Node::Ptmx => Object::Device(host_open("/dev/ptmx", libc::O_PATH, 0)?),
        Node::Pts(pty) => Object::Synthetic(pty.slave_stat(None)?),
    })
}

/// The metadata object of what a guest descriptor holds.
pub fn object_of_fd(e: &FdEntry) -> Result<Object, Errno> {
    let dup = || host::dup_cloexec(e.host.as_raw_fd(), 0);
    Ok(match &e.host.kind {
        // Linux's pidfd is a pidfs inode, mode 0700 with no file type; its host stand-in
        // is an anonymous inode, 0600 (see `crate::files::Served`).
        FileKind::Host if e.host.is_pidfd() => {
            let mut st = host::fstat(e.host.as_raw_fd())?;
            st.st_mode = 0o700;
            Object::Synthetic(st)
        }
        FileKind::Host => Object::Host(dup()?),
        FileKind::Random(_) | FileKind::Device(_) => Object::Device(dup()?),
        FileKind::Snapshot(s) => Object::Synthetic(proc_stat(&s.path, s.file)),
        FileKind::Dir(d) => Object::Synthetic(synthetic(&d.path, libc::S_IFDIR | 0o555, 0)),
        FileKind::Link(l) => Object::Synthetic(synthetic(&l.path, libc::S_IFLNK | l.mode, l.target.len() as i64)),
        FileKind::Pty(end) if end.master => Object::Device(dup()?),
        FileKind::Pty(end) if end.via_tty => Object::Device(host_open("/dev/tty", libc::O_PATH, 0)?),
        FileKind::Pty(end) => Object::Synthetic(end.pty.slave_stat(Some(e.host.as_raw_fd()))?),
    })
}

/// `access` on a made-up object: Linux's permission check against its mode (the
/// caller owns everything in its `/proc` but `/proc/sys`, which is root's and
/// read-only: see `sysctl.rs`); `p` is the caller, whose real ids `access` checks.
pub fn access(p: &Process, st: &libc::stat, mode: u32) -> Result<(), Errno> {
    if sysctl::is_file(st) {
        let c = p.attrs.creds;
        let bits = if c.uid == 0 {
            st.st_mode >> 6
        } else if in_group(p, c.gid, 0) {
            st.st_mode >> 3
        } else {
            st.st_mode
        };
        if mode & 7 & !bits != 0 {
            return Err(EACCES);
        }
        return if mode & 2 != 0 { Err(EROFS) } else { Ok(()) };
    }
    let bits = (st.st_mode >> 6) & 7;
    let root = ids()[1] == 0;
    let want = mode & 7;
    let ok = if root {
        want & 1 == 0 || st.st_mode & 0o111 != 0 || st.st_mode & libc::S_IFMT == libc::S_IFDIR
    } else {
        bits & want == want
    };
    if ok { Ok(()) } else { Err(EACCES) }
}

// ----- directories --------------------------------------------------------------------

const DT_CHR: u8 = 2;
const DT_DIR: u8 = 4;
const DT_REG: u8 = 8;
const DT_LNK: u8 = 10;

/// What a directory of morph's own holds (without `.` and `..`).
fn listing(m: Sys<'_>, p: &Process, path: &str) -> Listing {
    let named = |v: &[(&str, u8)]| v.iter().map(|(n, t)| (n.as_bytes().to_vec(), *t)).collect::<Vec<_>>();
    if path == "/dev" {
        let mut v = named(&[
            ("fd", DT_LNK),
            ("full", DT_CHR),
            ("null", DT_CHR),
            ("ptmx", DT_CHR),
            ("pts", DT_DIR),
            ("random", DT_CHR),
            ("shm", DT_DIR),
            ("stderr", DT_LNK),
            ("stdin", DT_LNK),
            ("stdout", DT_LNK),
            ("tty", DT_CHR),
            ("urandom", DT_CHR),
            ("zero", DT_CHR),
        ]);
        v.retain(|(n, _)| n != b"shm" || m.vfs.has_shm());
        return v;
    }
    if path == "/proc" {
        let mut pids: Vec<Pid> = m.procs.keys().copied().chain([p.pid]).collect();
        pids.sort_unstable();
        pids.dedup();
        let mut v = named(&[
            ("loadavg", DT_REG),
            ("meminfo", DT_REG),
            ("self", DT_LNK),
            ("stat", DT_REG),
            ("sys", DT_DIR),
            ("uptime", DT_REG),
        ]);
        v.extend(pids.into_iter().map(|pid| (pid.to_string().into_bytes(), DT_DIR)));
        return v;
    }
    if path == "/proc/sys" {
        return sysctl::DIRS.iter().map(|d| (d.as_bytes().to_vec(), DT_DIR)).collect();
    }
    if let Some(dir) = path.strip_prefix("/proc/sys/") {
        return sysctl::names(dir).map(|n| (n.as_bytes().to_vec(), DT_REG)).collect();
    }
    if path == "/dev/pts" {
        return m.ptys.list().into_iter().map(|n| (n.to_string().into_bytes(), DT_CHR)).collect();
    }
    let parts: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let Some(q) = parts.get(1).and_then(|s| s.parse().ok()).and_then(|pid| process(m, p, pid)) else {
        return Vec::new();
    };
    match (parts.get(2).copied(), parts.get(3)) {
        (None, _) => named(&[
            ("cmdline", DT_REG),
            ("comm", DT_REG),
            ("cwd", DT_LNK),
            ("exe", DT_LNK),
            ("fd", DT_DIR),
            ("fdinfo", DT_DIR),
            ("maps", DT_REG),
            ("personality", DT_REG),
            ("root", DT_LNK),
            ("stat", DT_REG),
            ("status", DT_REG),
            ("task", DT_DIR),
        ]),
        (Some("task"), None) => {
            let mut tids: Vec<Pid> = q.tids().collect();
            tids.sort_unstable();
            tids.into_iter().map(|t| (t.to_string().into_bytes(), DT_DIR)).collect()
        }
        (Some("task"), Some(_)) => named(&[("comm", DT_REG), ("stat", DT_REG), ("status", DT_REG)]),
        (Some(d), _) => {
            let typ = if d == "fdinfo" { DT_REG } else { DT_LNK };
            (0..q.fds.end()).filter(|&n| q.fds.get(n).is_some()).map(|n| (n.to_string().into_bytes(), typ)).collect()
        }
    }
}

/// `getdents64` (`wide`) or the old `getdents` on a directory of morph's own: fills
/// `buf` with as many entries as fit from the current position.
pub fn getdents(m: Sys<'_>, p: &Process, d: &DirState, buf: &mut [u8], wide: bool) -> Result<usize, Errno> {
    if d.entries.borrow().is_none() {
        let mut v = vec![(b".".to_vec(), DT_DIR), (b"..".to_vec(), DT_DIR)];
        v.extend(listing(m, p, &d.path));
        *d.entries.borrow_mut() = Some(v);
    }
    encode(d, buf, wide)
}

/// Writes `linux_dirent64` (`wide`) or old `linux_dirent` records of `d`'s listing from
/// its position into `buf`.
fn encode(d: &DirState, buf: &mut [u8], wide: bool) -> Result<usize, Errno> {
    let entries = d.entries.borrow();
    let entries = entries.as_deref().unwrap_or_default();
    let mut n = 0;
    while let Some((name, typ)) = entries.get(d.pos.get() as usize) {
        let ino = ino_of(&[d.path.as_bytes(), b"/", name].concat());
        let next = d.pos.get() + 1;
        let rec =
            if wide { (19 + name.len() + 1).next_multiple_of(8) } else { (10 + name.len() + 2).next_multiple_of(4) };
        if n + rec > buf.len() {
            if n == 0 {
                return Err(EINVAL);
            }
            break;
        }
        let r = &mut buf[n..n + rec];
        r.fill(0);
        if wide {
            r[0..8].copy_from_slice(&ino.to_le_bytes());
            r[8..16].copy_from_slice(&next.to_le_bytes());
            r[16..18].copy_from_slice(&(rec as u16).to_le_bytes());
            r[18] = *typ;
            r[19..19 + name.len()].copy_from_slice(name);
        } else {
            r[0..4].copy_from_slice(&(ino as u32).to_le_bytes());
            r[4..8].copy_from_slice(&(next as u32).to_le_bytes());
            r[8..10].copy_from_slice(&(rec as u16).to_le_bytes());
            r[10..10 + name.len()].copy_from_slice(name);
            r[rec - 1] = *typ;
        }
        n += rec;
        d.pos.set(next);
    }
    Ok(n)
}

/// `lseek` on a directory of morph's own: positions are entry indices.
pub fn seek_dir(d: &DirState, off: i64, whence: u32) -> Result<u64, Errno> {
    let pos = match whence {
        0 => off,
        1 => d.pos.get() as i64 + off,
        _ => return Err(EINVAL),
    };
    let pos = u64::try_from(pos).map_err(|_| EINVAL)?;
    d.pos.set(pos);
    Ok(pos)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_canonical() {
        assert_eq!(parse_num(b"100"), Some(100));
        assert_eq!(parse_num(b"0"), Some(0));
        assert_eq!(parse_num(b"007"), None);
        assert_eq!(parse_num(b"1x"), None);
        assert_eq!(parse_num(b""), None);
        assert_eq!(parse_num(b"99999999999"), None);
    }

    #[test]
    fn dirents_have_linux_layout() {
        let d = DirState::new("/dev".into());
        *d.entries.borrow_mut() = Some(vec![(b".".to_vec(), DT_DIR), (b"null".to_vec(), DT_CHR)]);
        // linux_dirent64: ino, off, reclen, type, name, NUL, padded to 8.
        let mut b = [0u8; 30];
        assert_eq!(encode(&d, &mut b, true), Ok(24));
        assert_eq!(&b[8..19], &[1, 0, 0, 0, 0, 0, 0, 0, 24, 0, DT_DIR]);
        assert_eq!(&b[19..21], b".\0");
        // The second record does not fit: the next call goes on from it.
        assert_eq!(encode(&d, &mut b[..24], true), Ok(24));
        assert_eq!(b[18], DT_CHR);
        assert_eq!(&b[19..24], b"null\0");
        assert_eq!(encode(&d, &mut b, true), Ok(0));
        // The old linux_dirent: ino, off, reclen, name, NUL, ..., type last; padded to 4.
        seek_dir(&d, 0, 0).unwrap();
        let mut o = [0u8; 40];
        assert_eq!(encode(&d, &mut o, false), Ok(16 + 16));
        assert_eq!(&o[8..10], &16u16.to_le_bytes());
        assert_eq!(o[15], DT_DIR);
        assert_eq!(&o[16 + 10..16 + 15], b"null\0");
        assert_eq!(o[16 + 15], DT_CHR);
        // A buffer too small for one record.
        seek_dir(&d, 0, 0).unwrap();
        assert_eq!(encode(&d, &mut o[..8], true), Err(EINVAL));
        assert_ne!(ino_of(b"/dev/null"), ino_of(b"/dev/zero"));
        assert!(ino_of(b"/proc") <= u64::from(u32::MAX));
    }
}
