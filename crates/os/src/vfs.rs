//! The guest's view of the file system: every path resolves inside the guest root.
//!
//! Resolution is done by the host kernel with `openat2(root, path, RESOLVE_IN_ROOT)`:
//! `..` at the root stays at the root and symbolic links (absolute or relative) are
//! resolved as if the root were `/`, so a guest cannot name a host file outside its
//! root, whatever races or link tricks it tries. Relative guest paths are joined to
//! the process's current directory (a guest path) first.
//!
//! Without `--root`, the root is the host's `/`.
//!
//! A process that called `chroot` has a root of its own, a [`Root`] (a directory of
//! the machine's root, shared by its children). While one of its system calls runs,
//! the Vfs resolves from that directory instead ([`Vfs::set_view`]), and the guest
//! paths it takes and gives (the working directory, `guest_path_of`) are in that
//! root's terms. A working directory outside it (as `chroot` leaves it) is written
//! [`UNREACHABLE`] followed by its path in the machine's root: relative names resolve
//! from there inside the machine's root (`..` climbs to the machine's root, as Linux's
//! does from outside a chroot), `getcwd` shows `(unreachable)/...` as Linux's does.
//!
//! `/dev` and `/proc` are morph's own (see [`crate::special`]): the system-call layer
//! answers paths under them before they reach here, and this module refuses any that
//! still do, so the host's devices and process information never show through, not
//! even when the root is the host's `/` (where a symbolic link could lead into them:
//! then every open checks where it landed).

use std::cell::RefCell;
use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use crate::host;
use crate::linux;

pub use crate::host::{Errno, host_errno};

/// The guest file system root.
pub struct Vfs {
    root: OwnedFd,
    root_path: PathBuf,
    /// The root's `dev` or `proc` is a mount point (the host's own, as when the root is
    /// `/`): opens must check that they did not end up inside one.
    mounted_special: bool,
    /// The machine's `/dev/shm`: a directory of its own on the host (POSIX shared memory
    /// and semaphores, `shm_open` and `sem_open`, live there), empty at start and
    /// removed with the machine, as a tmpfs is at boot. See [`Shm`]. `None` if the host
    /// gave no temporary directory for it: `/dev/shm` is then missing (`ENOENT`), as
    /// on a system that mounts none, and the machine runs all the same.
    shm: Option<Shm>,
    /// The root of the process whose system call runs, if it called `chroot` (see
    /// [`Vfs::set_view`]); `None`: the machine's root.
    view: RefCell<Option<Rc<Root>>>,
}

/// A process's root directory after `chroot`: inherited by fork and clone, kept by
/// exec. It never changes; `chroot` gives the process a new one.
pub struct Root {
    /// The directory (`O_PATH`), that `openat2` resolves in.
    fd: OwnedFd,
    /// Its host path (to find the guest path of a descriptor).
    host: PathBuf,
    /// Its path in the machine's root (`/proc/<pid>/root`), normalized.
    guest: Vec<u8>,
    /// Whether it has a `dev` and a `proc` directory, where a system mounts them:
    /// morph's `/dev` and `/proc` are there (as if mounted), and missing from a root
    /// without them, as from a Linux chroot where nothing was mounted.
    dev: bool,
    proc: bool,
}

impl Root {
    /// The directory's path in the machine's root.
    pub fn guest(&self) -> &[u8] {
        &self.guest
    }
}

/// How a guest path outside the process's root starts (a working directory left
/// outside by `chroot`): then the path after it is one in the machine's root. A guest
/// cannot write it, a path it passes ending at its first NUL; `getcwd` shows it
/// without the NUL, as Linux's `(unreachable)/...`.
pub const UNREACHABLE: &[u8] = b"\0(unreachable)";

/// The machine's `/dev/shm`: mode 1777 like Linux's, inside a private (0700) host
/// temporary directory, preferably in the host's own `/dev/shm` (a tmpfs), so that no
/// other host user reaches it. Paths below it resolve inside it (`RESOLVE_IN_ROOT`: a
/// symbolic link there cannot lead out of it).
struct Shm {
    dir: OwnedFd,
    path: PathBuf,
    /// Removes the directory and what the guests left in it when the machine ends.
    _keep: tempfile::TempDir,
}

impl Shm {
    fn new() -> std::io::Result<Shm> {
        let parent = tempfile::Builder::new()
            .prefix("morph-shm-")
            .tempdir_in("/dev/shm")
            .or_else(|_| tempfile::Builder::new().prefix("morph-shm-").tempdir())?;
        let path = parent.path().join("shm");
        std::fs::create_dir(&path)?;
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o1777))?;
        let c = CString::new(path.as_os_str().as_encoded_bytes())?;
        let dir = host::open(&c, libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC, 0)
            .map_err(std::io::Error::from_raw_os_error)?;
        Ok(Shm { dir, path, _keep: parent })
    }
}

/// The guest's `/dev/shm`.
const SHM: &[u8] = b"/dev/shm";

impl Vfs {
    /// A file system rooted at `root` (a host directory).
    pub fn new(root: &Path) -> std::io::Result<Vfs> {
        let root_path = root.canonicalize()?;
        let c = CString::new(root_path.as_os_str().as_encoded_bytes())?;
        let root = host::open(&c, libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC, 0)
            .map_err(std::io::Error::from_raw_os_error)?;
        // Every guest path is resolved by openat2 (Linux 5.6): say so once, here, rather
        // than fail each open with "Function not implemented" (older kernels, valgrind).
        let dot = c".";
        if let Err(libc::ENOSYS) =
            host::openat2(root.as_raw_fd(), dot, (libc::O_PATH | libc::O_CLOEXEC) as u64, 0, libc::RESOLVE_IN_ROOT)
        {
            return Err(std::io::Error::new(
                std::io::ErrorKind::Unsupported,
                "the host has no openat2 system call (Linux 5.6 or later), which confines the guest's file access to its root",
            ));
        }
        let dev = |p: &Path| std::fs::metadata(p).ok().map(|m| std::os::unix::fs::MetadataExt::dev(&m));
        let root_dev = dev(&root_path);
        let mounted_special =
            [root_path.join("dev"), root_path.join("proc")].iter().any(|d| dev(d).is_some_and(|d| Some(d) != root_dev));
        Ok(Vfs { root, root_path, mounted_special, shm: Shm::new().ok(), view: RefCell::new(None) })
    }

    /// Makes paths resolve in `root` (a process's, after `chroot`; `None`: the
    /// machine's root), for the system call about to run.
    pub fn set_view(&self, root: Option<Rc<Root>>) {
        *self.view.borrow_mut() = root;
    }

    /// The root that paths resolve in now, if not the machine's.
    pub fn view(&self) -> Option<Rc<Root>> {
        self.view.borrow().clone()
    }

    /// A [`Root`] of the directory `dir` (opened by [`Vfs::open`]), or `None` if it is
    /// the machine's root.
    pub fn make_root(&self, dir: OwnedFd) -> Result<Option<Root>, Errno> {
        let host = std::fs::read_link(format!("/proc/self/fd/{}", dir.as_raw_fd())).map_err(|_| linux::ENOENT)?;
        let guest = self.machine_path_of(&dir)?;
        if guest == b"/" {
            return Ok(None);
        }
        let has = |name: &std::ffi::CStr| {
            let how = (libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC) as u64;
            host::openat2(dir.as_raw_fd(), name, how, 0, libc::RESOLVE_IN_ROOT).is_ok()
        };
        let (dev, proc) = (has(c"dev"), has(c"proc"));
        Ok(Some(Root { fd: dir, host, guest, dev, proc }))
    }

    /// The path in the machine's root of guest path `path` of a process with root
    /// `root` (its absolute path, or [`UNREACHABLE`] and one).
    pub fn machine_path(root: Option<&Root>, path: &[u8]) -> Vec<u8> {
        if let Some(rest) = path.strip_prefix(UNREACHABLE) {
            return rest.to_vec();
        }
        match root {
            None => path.to_vec(),
            Some(r) if path == b"/" => r.guest.clone(),
            Some(r) => [&r.guest[..], path].concat(),
        }
    }

    /// A path in the machine's root as a guest path of the process whose call runs:
    /// inside its root, or [`UNREACHABLE`] and the path.
    pub fn to_view(&self, machine: &[u8]) -> Vec<u8> {
        match &*self.view.borrow() {
            None => machine.to_vec(),
            Some(r) if under(machine, &r.guest) => {
                let rest = &machine[r.guest.len()..];
                if rest.is_empty() { b"/".to_vec() } else { rest.to_vec() }
            }
            Some(_) => [UNREACHABLE, machine].concat(),
        }
    }

    /// A guest path as Linux's `d_path` shows it (`/proc/<pid>/cwd`, `/proc/<pid>/fd`):
    /// one outside the root in full, from the machine's root.
    pub fn shown(path: &[u8]) -> &[u8] {
        path.strip_prefix(UNREACHABLE).unwrap_or(path)
    }

    /// Whether the machine has its `/dev/shm`.
    pub fn has_shm(&self) -> bool {
        self.shm.is_some()
    }

    /// The host directory that is the guest's `/`.
    pub fn root_path(&self) -> &Path {
        &self.root_path
    }

    /// Joins a guest path to the guest working directory (no resolution).
    pub fn absolute(cwd: &[u8], path: &[u8]) -> Vec<u8> {
        if path.first() == Some(&b'/') || path.starts_with(UNREACHABLE) {
            path.to_vec()
        } else {
            let mut p = cwd.to_vec();
            if p.last() != Some(&b'/') {
                p.push(b'/');
            }
            p.extend_from_slice(path);
            p
        }
    }

    /// The absolute guest path `path` names from `cwd`, with `.`, `..` and repeated
    /// slashes removed lexically (`..` at `/` stays at `/`); the flag says whether the
    /// path ended in a slash (then it must name a directory). A path outside the
    /// process's root keeps its [`UNREACHABLE`] start.
    pub fn normalize(cwd: &[u8], path: &[u8]) -> (Vec<u8>, bool) {
        let abs = Self::absolute(cwd, path);
        if let Some(rest) = abs.strip_prefix(UNREACHABLE) {
            let (n, dir) = Self::normalize(b"/", rest);
            return ([UNREACHABLE, &n[..]].concat(), dir);
        }
        let mut parts: Vec<&[u8]> = Vec::new();
        for c in abs.split(|&b| b == b'/') {
            match c {
                b"" | b"." => {}
                b".." => {
                    parts.pop();
                }
                c => parts.push(c),
            }
        }
        let mut out = Vec::with_capacity(abs.len());
        for c in &parts {
            out.push(b'/');
            out.extend_from_slice(c);
        }
        if out.is_empty() {
            out.push(b'/');
        }
        let dir = abs.ends_with(b"/") || abs.ends_with(b"/.") || abs.ends_with(b"/..");
        (out, dir && !parts.is_empty())
    }

    /// True if the normalized absolute guest path is `/dev`, `/proc` or below them:
    /// morph's own trees, never the root's (but for `/dev/shm`, a directory of files
    /// that this file system serves).
    pub fn is_special(norm: &[u8]) -> bool {
        let norm = norm.strip_prefix(UNREACHABLE).unwrap_or(norm);
        [&b"/dev"[..], b"/proc"].iter().any(|top| under(norm, top)) && !under(norm, SHM)
    }

    /// Whether morph serves the normalized absolute guest path (see
    /// [`crate::special`]): a path of its `/dev` or `/proc` ([`Vfs::is_special`]), if
    /// the root of the process whose call runs has them (see [`Root`]). A path
    /// outside that root is never served (`open` refuses it if it is `/dev` or `/proc`
    /// of the machine's root).
    pub fn served(&self, norm: &[u8]) -> bool {
        if !Self::is_special(norm) {
            return false;
        }
        match &*self.view.borrow() {
            None => true,
            Some(_) if norm.starts_with(UNREACHABLE) => false,
            Some(r) => {
                if under(norm, b"/dev") {
                    r.dev
                } else {
                    r.proc
                }
            }
        }
    }

    /// The part of a normalized guest path below `/dev/shm`, relative (`.` for
    /// `/dev/shm` itself), if it is there.
    fn in_shm(norm: &[u8]) -> Option<Vec<u8>> {
        let rest = norm.strip_prefix(SHM).filter(|_| under(norm, SHM))?;
        Some(if rest.is_empty() { b".".to_vec() } else { rest[1..].to_vec() })
    }

    /// Opens a guest path with host `open` flags and mode, resolved inside the root.
    /// Paths in `/dev` and `/proc` are not found here (the system-call layer serves
    /// them, see [`crate::special`]).
    pub fn open(&self, cwd: &[u8], path: &[u8], flags: i32, mode: u32) -> Result<OwnedFd, Errno> {
        if path.is_empty() {
            return Err(linux::ENOENT);
        }
        let (norm, slash) = Self::normalize(cwd, path);
        if self.served(&norm) || norm.starts_with(UNREACHABLE) && Self::is_special(&norm) {
            return Err(if flags & libc::O_CREAT != 0 { linux::EACCES } else { linux::ENOENT });
        }
        let view = self.view.borrow();
        // Below /dev/shm: resolved inside that directory, from the path's lexical form
        // (a `..` there does not go back through a symbolic link).
        let (base, abs) = match Self::in_shm(&norm).filter(|_| view.as_ref().is_none_or(|r| r.dev)) {
            Some(mut rest) => {
                if slash {
                    rest.push(b'/');
                }
                (&self.shm.as_ref().ok_or(linux::ENOENT)?.dir, rest)
            }
            None => {
                let abs = Self::absolute(cwd, path);
                match abs.strip_prefix(UNREACHABLE) {
                    Some(rest) => (&self.root, rest.to_vec()),
                    None => (view.as_ref().map_or(&self.root, |r| &r.fd), abs),
                }
            }
        };
        let c = CString::new(abs).map_err(|_| linux::EINVAL)?;
        let mode = if flags & (libc::O_CREAT | libc::O_TMPFILE) != 0 { u64::from(mode & 0o7777) } else { 0 };
        let resolve = libc::RESOLVE_IN_ROOT | libc::RESOLVE_NO_MAGICLINKS;
        let fd = host::openat2(base.as_raw_fd(), &c, (flags | libc::O_CLOEXEC) as u64, mode, resolve)?;
        if self.mounted_special && self.machine_path_of(&fd).is_ok_and(|g| Self::is_special(&g)) {
            return Err(linux::ENOENT); // a link led into the host's own /dev or /proc
        }
        Ok(fd)
    }

    /// Opens a guest path that must be a regular file, without ever opening anything
    /// else: the path is opened `O_PATH` first (which never blocks and has no effect
    /// on the object), its type checked, and only a regular file is opened again with
    /// `flags`, through its descriptor. `refuse` gives the errno for any other file type
    /// (its `S_IFMT` bits). Opening a FIFO for reading or writing would wait for its
    /// other end and freeze the whole machine; opening a device could act on it.
    pub fn open_regular(
        &self,
        cwd: &[u8],
        path: &[u8],
        flags: i32,
        refuse: impl Fn(u32) -> Errno,
    ) -> Result<OwnedFd, Errno> {
        let obj = self.open(cwd, path, libc::O_PATH, 0)?;
        let st = host::fstat(obj.as_raw_fd())?;
        let kind = st.st_mode & libc::S_IFMT;
        if kind != libc::S_IFREG {
            return Err(refuse(kind));
        }
        reopen(&obj, flags)
    }

    /// Opens a file to execute it (the program, a `#!` interpreter, `PT_INTERP`):
    /// read-only, never blocking; anything but a regular file is `EACCES` as in Linux's
    /// `execve`, except a directory, which is `EISDIR` here so that morph's own error
    /// line can say so (the guest gets `EACCES`).
    pub fn open_exec(&self, cwd: &[u8], path: &[u8]) -> Result<OwnedFd, Errno> {
        self.open_regular(cwd, path, libc::O_RDONLY, |k| if k == libc::S_IFDIR { linux::EISDIR } else { linux::EACCES })
    }

    /// Opens the *parent directory* of a guest path (resolved inside the root) and
    /// returns it with the last component, for the `*at` calls that act on a name
    /// itself (unlink, mkdir, rename, symlink, readlink, lstat).
    ///
    /// The component handed to the host is never `..` (nor empty): a path ending in
    /// `.`, `..` or naming `/` opens the directory it names, inside the root, and
    /// returns it with `.`. A bare `..` passed to a host `*at` call beside the root's
    /// descriptor would name the root's host parent.
    pub fn parent(&self, cwd: &[u8], path: &[u8]) -> Result<(OwnedFd, CString), Errno> {
        if path.is_empty() {
            return Err(linux::ENOENT);
        }
        let full = Self::absolute(cwd, path);
        // Outside the process's root: split the path in the machine's root.
        let (mark, abs) = match full.strip_prefix(UNREACHABLE) {
            Some(rest) => (UNREACHABLE, rest),
            None => (&b""[..], &full[..]),
        };
        let trimmed: &[u8] = {
            let mut t = abs;
            while t.len() > 1 && t.last() == Some(&b'/') {
                t = &t[..t.len() - 1];
            }
            t
        };
        let norm = Self::normalize(b"/", &[mark, trimmed].concat()).0;
        if self.served(&norm) || mark == UNREACHABLE && Self::is_special(&norm) {
            return Err(linux::EACCES); // morph's /dev and /proc take no new names
        }
        let cut = trimmed.iter().rposition(|&b| b == b'/').unwrap_or(0);
        let (dir, name) = (&trimmed[..cut.max(1)], &trimmed[cut + 1..]);
        if matches!(name, b"" | b"." | b"..") {
            // The directory the whole path names (resolved by openat2 inside the root).
            let dirfd = self.open(b"/", &[mark, trimmed].concat(), libc::O_PATH | libc::O_DIRECTORY, 0)?;
            return Ok((dirfd, c".".to_owned()));
        }
        let dirfd = self.open(b"/", &[mark, dir].concat(), libc::O_PATH | libc::O_DIRECTORY, 0)?;
        Ok((dirfd, CString::new(name).map_err(|_| linux::EINVAL)?))
    }

    /// What Linux's `rmdir` answers for a path whose last component is not a name
    /// (given `.` for the directory by [`Vfs::parent`], the host would say `EINVAL` to
    /// each): `EINVAL` for `.`, `ENOTEMPTY` for `..`, `EBUSY` for `/`.
    pub fn rmdir_not_a_name(path: &[u8]) -> Option<Errno> {
        let end = path.iter().rposition(|&b| b != b'/').map_or(0, |i| i + 1);
        if end == 0 {
            return (!path.is_empty()).then_some(libc::EBUSY); // the same number on i386
        }
        let last = &path[path[..end].iter().rposition(|&b| b == b'/').map_or(0, |i| i + 1)..end];
        match last {
            b"." => Some(linux::EINVAL),
            b".." => Some(linux::ENOTEMPTY),
            _ => None,
        }
    }

    /// Whether the object behind a host descriptor is named inside the root (so the
    /// guest could open it by a path): what `/proc/self/fd` shows of it is a path under
    /// the root. Objects without a path (pipes, sockets) and files outside the root
    /// (behind a descriptor the guest inherited) are not.
    pub fn holds(&self, fd: &impl AsRawFd) -> bool {
        std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd()))
            .is_ok_and(|p| p.starts_with(&self.root_path) || self.shm.as_ref().is_some_and(|s| p.starts_with(&s.path)))
    }

    /// The guest path of an open directory (for `getcwd` after `chdir`), in the terms
    /// of the process whose call runs: one outside its root (after `chroot`) is
    /// [`UNREACHABLE`] and its path in the machine's root.
    /// Its bytes as the host gives them: a name need not be UTF-8.
    pub fn guest_path_of(&self, fd: &impl AsRawFd) -> Result<Vec<u8>, Errno> {
        let Some(r) = self.view() else { return self.machine_path_of(fd) };
        let host = std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd())).map_err(|_| linux::ENOENT)?;
        if let Ok(rel) = host.strip_prefix(&r.host) {
            return Ok([&b"/"[..], rel.as_os_str().as_bytes()].concat());
        }
        let m = self.machine_path_of(fd)?;
        if under(&m, SHM) { Ok(m) } else { Ok(self.to_view(&m)) }
    }

    /// The path of an open file in the machine's root (or `/dev/shm`), whatever the
    /// root of the process whose call runs.
    pub fn machine_path_of(&self, fd: &impl AsRawFd) -> Result<Vec<u8>, Errno> {
        let host = std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd())).map_err(|_| linux::ENOENT)?;
        let (top, rel): (&[u8], _) = match self.shm.as_ref().and_then(|s| host.strip_prefix(&s.path).ok()) {
            Some(rel) => (b"/dev/shm", rel),
            None => (b"", host.strip_prefix(&self.root_path).map_err(|_| linux::ENOENT)?),
        };
        let rel = rel.as_os_str().as_bytes();
        let mut g = top.to_vec();
        if !rel.is_empty() || g.is_empty() {
            g.push(b'/');
            g.extend_from_slice(rel);
        }
        Ok(g)
    }
}

/// Whether normalized `path` is `top` or below it.
fn under(path: &[u8], top: &[u8]) -> bool {
    path.strip_prefix(top).is_some_and(|rest| rest.is_empty() || rest.first() == Some(&b'/'))
}

/// Opens again the object an `O_PATH` descriptor names (a new open file description
/// of the same inode, through its `/proc/self/fd` link), with `flags`.
fn reopen(obj: &OwnedFd, flags: i32) -> Result<OwnedFd, Errno> {
    let via = host::fd_path(obj.as_raw_fd());
    host::open(&via, flags | libc::O_CLOEXEC | libc::O_NOCTTY, 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_is_lexical() {
        let n = |cwd: &str, p: &str| {
            let (v, d) = Vfs::normalize(cwd.as_bytes(), p.as_bytes());
            (String::from_utf8(v).unwrap(), d)
        };
        assert_eq!(n("/tmp", "../dev//null"), ("/dev/null".into(), false));
        assert_eq!(n("/", "../../proc/self/"), ("/proc/self".into(), true));
        assert_eq!(n("/a/b", "./c/."), ("/a/b/c".into(), true));
        assert_eq!(n("/", ".."), ("/".into(), false));
        assert!(Vfs::is_special(b"/dev") && Vfs::is_special(b"/proc/1/maps"));
        assert!(!Vfs::is_special(b"/devices") && !Vfs::is_special(b"/") && !Vfs::is_special(b"/procfs/x"));
        assert!(!Vfs::is_special(b"/dev/shm") && !Vfs::is_special(b"/dev/shm/sem.x") && Vfs::is_special(b"/dev/shmx"));
        assert_eq!(Vfs::in_shm(b"/dev/shm"), Some(b".".to_vec()));
        assert_eq!(Vfs::in_shm(b"/dev/shm/a/b"), Some(b"a/b".to_vec()));
        assert_eq!(Vfs::in_shm(b"/dev/shmx"), None);
    }

    #[test]
    fn paths_outside_a_chroot_keep_their_mark() {
        let out = |p: &str| [UNREACHABLE, p.as_bytes()].concat();
        // Relative names join an unreachable directory; absolute ones are the root's.
        assert_eq!(Vfs::absolute(&out("/a/b"), b"c"), out("/a/b/c"));
        assert_eq!(Vfs::absolute(&out("/a/b"), b"/c"), b"/c".to_vec());
        assert_eq!(Vfs::absolute(b"/", &out("/x")), out("/x"));
        // `..` climbs in the machine's root, and stops at its top.
        assert_eq!(Vfs::normalize(&out("/a/b"), b"../../../c/"), (out("/c"), true));
        assert!(Vfs::is_special(&out("/proc/1")) && !Vfs::is_special(&out("/a")));
        assert_eq!(Vfs::shown(&out("/a")), b"/a");
        assert_eq!(Vfs::shown(b"/a"), b"/a");
        // A path of a process with no root of its own is the machine's.
        assert_eq!(Vfs::machine_path(None, b"/a"), b"/a".to_vec());
        assert_eq!(Vfs::machine_path(None, &out("/a")), b"/a".to_vec());
    }
}
