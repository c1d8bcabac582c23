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
//! `/dev` and `/proc` are morph's own (see [`crate::special`]): the system-call layer
//! answers paths under them before they reach here, and this module refuses any that
//! still do, so the host's devices and process information never show through, not
//! even when the root is the host's `/` (where a symbolic link could lead into them:
//! then every open checks where it landed).

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};

use crate::linux;

/// A guest errno (positive).
pub type Errno = i32;

/// The last host errno.
pub fn host_errno() -> Errno {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(linux::EIO)
}

/// The guest file system root.
pub struct Vfs {
    root: OwnedFd,
    root_path: PathBuf,
    /// The root's `dev` or `proc` is a mount point (the host's own, as when the root is
    /// `/`): opens must check that they did not end up inside one.
    mounted_special: bool,
}

impl Vfs {
    /// A file system rooted at `root` (a host directory).
    pub fn new(root: &Path) -> std::io::Result<Vfs> {
        let root_path = root.canonicalize()?;
        let c = CString::new(root_path.as_os_str().as_encoded_bytes())?;
        // SAFETY: a valid C string; the result is checked.
        let fd = unsafe { libc::open(c.as_ptr(), libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let dev = |p: &Path| std::fs::metadata(p).ok().map(|m| std::os::unix::fs::MetadataExt::dev(&m));
        let root_dev = dev(&root_path);
        let mounted_special =
            [root_path.join("dev"), root_path.join("proc")].iter().any(|d| dev(d).is_some_and(|d| Some(d) != root_dev));
        // SAFETY: a fresh descriptor we own.
        Ok(Vfs { root: unsafe { OwnedFd::from_raw_fd(fd) }, root_path, mounted_special })
    }

    /// The host directory that is the guest's `/`.
    pub fn root_path(&self) -> &Path {
        &self.root_path
    }

    /// Joins a guest path to the guest working directory (no resolution).
    pub fn absolute(cwd: &str, path: &[u8]) -> Vec<u8> {
        if path.first() == Some(&b'/') {
            path.to_vec()
        } else {
            let mut p = cwd.as_bytes().to_vec();
            if p.last() != Some(&b'/') {
                p.push(b'/');
            }
            p.extend_from_slice(path);
            p
        }
    }

    /// The absolute guest path `path` names from `cwd`, with `.`, `..` and repeated
    /// slashes removed lexically (`..` at `/` stays at `/`); the flag says whether the
    /// path ended in a slash (then it must name a directory).
    pub fn normalize(cwd: &str, path: &[u8]) -> (Vec<u8>, bool) {
        let abs = Self::absolute(cwd, path);
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
    /// morph's own trees, never the root's.
    pub fn is_special(norm: &[u8]) -> bool {
        [&b"/dev"[..], b"/proc"]
            .iter()
            .any(|top| norm.strip_prefix(*top).is_some_and(|rest| rest.is_empty() || rest.first() == Some(&b'/')))
    }

    /// Opens a guest path with host `open` flags and mode, resolved inside the root.
    /// Paths in `/dev` and `/proc` are not found here (the system-call layer serves
    /// them, see [`crate::special`]).
    pub fn open(&self, cwd: &str, path: &[u8], flags: i32, mode: u32) -> Result<OwnedFd, Errno> {
        if path.is_empty() {
            return Err(linux::ENOENT);
        }
        if Self::is_special(&Self::normalize(cwd, path).0) {
            return Err(if flags & libc::O_CREAT != 0 { linux::EACCES } else { linux::ENOENT });
        }
        let abs = Self::absolute(cwd, path);
        let c = CString::new(abs).map_err(|_| linux::EINVAL)?;
        // SAFETY: open_how is plain data; all-zero is a valid value.
        let mut how: libc::open_how = unsafe { std::mem::zeroed() };
        how.flags = (flags | libc::O_CLOEXEC) as u64;
        how.mode = if flags & (libc::O_CREAT | libc::O_TMPFILE) != 0 { u64::from(mode & 0o7777) } else { 0 };
        how.resolve = libc::RESOLVE_IN_ROOT | libc::RESOLVE_NO_MAGICLINKS;
        // SAFETY: openat2 with a valid dirfd, C string and open_how of the right size.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_openat2,
                self.root.as_raw_fd(),
                c.as_ptr(),
                &how as *const libc::open_how,
                std::mem::size_of::<libc::open_how>(),
            )
        };
        if fd < 0 {
            return Err(host_errno());
        }
        // SAFETY: a fresh descriptor we own.
        let fd = unsafe { OwnedFd::from_raw_fd(fd as i32) };
        if self.mounted_special && self.guest_path_of(&fd).is_ok_and(|g| Self::is_special(g.as_bytes())) {
            return Err(linux::ENOENT); // a link led into the host's own /dev or /proc
        }
        Ok(fd)
    }

    /// Opens the *parent directory* of a guest path (resolved inside the root) and
    /// returns it with the last component, for the `*at` calls that act on a name
    /// itself (unlink, mkdir, rename, symlink, readlink, lstat).
    pub fn parent(&self, cwd: &str, path: &[u8]) -> Result<(OwnedFd, CString), Errno> {
        if path.is_empty() {
            return Err(linux::ENOENT);
        }
        let abs = Self::absolute(cwd, path);
        let trimmed: &[u8] = {
            let mut t = &abs[..];
            while t.len() > 1 && t.last() == Some(&b'/') {
                t = &t[..t.len() - 1];
            }
            t
        };
        if Self::is_special(&Self::normalize("/", trimmed).0) {
            return Err(linux::EACCES); // morph's /dev and /proc take no new names
        }
        let cut = trimmed.iter().rposition(|&b| b == b'/').unwrap_or(0);
        let (dir, name) = (&trimmed[..cut.max(1)], &trimmed[cut + 1..]);
        let name: &[u8] = if name.is_empty() { b"." } else { name };
        let dirfd = self.open("/", dir, libc::O_PATH | libc::O_DIRECTORY, 0)?;
        Ok((dirfd, CString::new(name).map_err(|_| linux::EINVAL)?))
    }

    /// The guest path of an open directory (for `getcwd` after `chdir`).
    pub fn guest_path_of(&self, fd: &impl AsRawFd) -> Result<String, Errno> {
        let host = std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd())).map_err(|_| linux::ENOENT)?;
        let rel = host.strip_prefix(&self.root_path).map_err(|_| linux::ENOENT)?;
        Ok(format!("/{}", rel.to_string_lossy()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_is_lexical() {
        let n = |cwd: &str, p: &str| {
            let (v, d) = Vfs::normalize(cwd, p.as_bytes());
            (String::from_utf8(v).unwrap(), d)
        };
        assert_eq!(n("/tmp", "../dev//null"), ("/dev/null".into(), false));
        assert_eq!(n("/", "../../proc/self/"), ("/proc/self".into(), true));
        assert_eq!(n("/a/b", "./c/."), ("/a/b/c".into(), true));
        assert_eq!(n("/", ".."), ("/".into(), false));
        assert!(Vfs::is_special(b"/dev") && Vfs::is_special(b"/proc/1/maps"));
        assert!(!Vfs::is_special(b"/devices") && !Vfs::is_special(b"/") && !Vfs::is_special(b"/procfs/x"));
    }
}
