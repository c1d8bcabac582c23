//! morph's `/proc/sys`: a read-only view of the settings the machine has, in Linux's
//! format (each value and a newline), and the names `uname` reports.
//!
//! Only values the machine truly has or enforces are served:
//!
//! | file | value |
//! |---|---|
//! | `kernel/randomize_va_space` | `--aslr` as a mode of `--kernel` (see [`crate::layout::randomize_va_space`]) |
//! | `kernel/osrelease`, `ostype`, `version` | what `uname` reports ([`OSRELEASE`], [`OSTYPE`], [`VERSION`]; `UNAME26` changes `uname`'s release only, as on Linux) |
//! | `kernel/hostname`, `domainname` | the machine's names (`sethostname`, `setdomainname`), up to the first NUL as `uname` shows them |
//! | `kernel/pid_max` | [`PID_MAX`]: `fork` and `clone` fail with `EAGAIN` once pids reach it (morph does not reuse pids) |
//! | `kernel/threads-max` | `--max-procs`: the tasks (threads and unreaped zombies) beyond which `fork` and `clone` fail with `EAGAIN`, as Linux's `nr_threads >= max_threads` |
//! | `kernel/ngroups_max` | 65536, the most `setgroups` takes |
//! | `kernel/cap_last_cap` | [`Caps::LAST`]: the last capability `capset` knows |
//! | `vm/mmap_min_addr` | [`MMAP_MIN_ADDR`], the lowest address `mmap` hands out or takes |
//! | `vm/overcommit_memory`, `overcommit_ratio` | 2 and 100: a private mapping's pages are promised when it is made and refused beyond all of the machine's memory (`CommitLimit` of `meminfo`; only `fork`'s copies of untouched pages are promised whatever the limit) |
//!
//! Left out, as the machine has no such setting: `vm/max_map_count` (morph's limit on
//! mappings is a budget for the whole machine taken from the host's, with slack for
//! morph's own, not a per-process count) and everything else.
//!
//! The files are owned by root, 0644 (0444 where Linux's are), the directories 0555.
//! Nothing can be written: a guest must not reconfigure the machine. Opening one for
//! writing is checked as Linux's `proc_sys_permission` checks it (the effective user
//! root gets the owner's bits, group root the group's, anyone else the others'), so
//! an unprivileged guest gets `EACCES`, as on Linux, and so does root for a 0444 file;
//! root, whom Linux would let write the others, gets `EROFS`, as in a container whose
//! `/proc/sys` is mounted read-only (Docker's, Podman's), which tools such as
//! `systemd-sysctl` recognize and skip. `O_TRUNC` is `EROFS` for anyone (Linux asks the
//! mount for writing before checking permission), and `access` with `W_OK` gives
//! `EACCES` or `EROFS` the same way.

use super::*;
use crate::files::SysctlFile;
use crate::layout::MMAP_MIN_ADDR;
use crate::process::Caps;

/// `uname`'s system name and `kernel/ostype`.
pub const OSTYPE: &[u8] = b"Linux";
/// `uname`'s release and `kernel/osrelease`. glibc refuses kernels older than 3.2, so
/// the 2.6.12 model reports it too: only its ASLR and fork order are modeled.
pub const OSRELEASE: &[u8] = b"6.1.0-morph";
/// `uname`'s release under `UNAME26`: "2.6." and the minor version plus 60, then what
/// follows the version (Linux's `override_release`).
pub const OSRELEASE26: &[u8] = b"2.6.61-morph";
/// `uname`'s version and `kernel/version`.
pub const VERSION: &[u8] = b"#1 SMP morph";
/// `uname`'s machine.
pub const MACHINE: &[u8] = b"i686";

/// The highest pid plus one: Linux's `PID_MAX_LIMIT` for a 64-bit kernel (what systemd
/// sets `kernel.pid_max` to). morph hands pids out in order from 100 and never reuses
/// one: `fork` and `clone` fail with `EAGAIN` when the next would reach it.
pub const PID_MAX: Pid = 4_194_304;

/// Linux's `NGROUPS_MAX`: the most supplementary groups `setgroups` takes.
pub const NGROUPS_MAX: u32 = 65536;

/// The machine's settings `/proc/sys` shows, as plain data (passed down by the kernel
/// layer from its configuration and names).
#[derive(Clone, Copy)]
pub struct Sysctl<'a> {
    /// `--aslr` as a `randomize_va_space` mode of `--kernel`.
    pub randomize_va_space: u8,
    /// The machine's node name (as set, NULs included).
    pub hostname: &'a [u8],
    /// The machine's NIS domain name.
    pub domainname: &'a [u8],
    /// `--max-procs`: the most tasks alive at once.
    pub threads_max: usize,
}

/// Every file: its directory under `/proc/sys`, its name, what it is and its mode.
const FILES: [(&str, &str, SysctlFile, u32); 13] = [
    ("kernel", "cap_last_cap", SysctlFile::CapLastCap, 0o444),
    ("kernel", "domainname", SysctlFile::Domainname, 0o644),
    ("kernel", "hostname", SysctlFile::Hostname, 0o644),
    ("kernel", "ngroups_max", SysctlFile::NgroupsMax, 0o444),
    ("kernel", "osrelease", SysctlFile::Osrelease, 0o444),
    ("kernel", "ostype", SysctlFile::Ostype, 0o444),
    ("kernel", "pid_max", SysctlFile::PidMax, 0o644),
    ("kernel", "randomize_va_space", SysctlFile::RandomizeVaSpace, 0o644),
    ("kernel", "threads-max", SysctlFile::ThreadsMax, 0o644),
    ("kernel", "version", SysctlFile::Version, 0o444),
    ("vm", "mmap_min_addr", SysctlFile::MmapMinAddr, 0o644),
    ("vm", "overcommit_memory", SysctlFile::OvercommitMemory, 0o644),
    ("vm", "overcommit_ratio", SysctlFile::OvercommitRatio, 0o644),
];

/// The directories of `/proc/sys`.
pub(super) const DIRS: [&str; 2] = ["kernel", "vm"];

/// The file `name` of directory `dir`.
pub(super) fn file(dir: &[u8], name: &[u8]) -> Option<SysctlFile> {
    FILES.iter().find(|(d, n, ..)| d.as_bytes() == dir && n.as_bytes() == name).map(|&(_, _, f, _)| f)
}

/// The names in directory `dir` (in Linux's order: sorted by bytes).
pub(super) fn names(dir: &str) -> impl Iterator<Item = &'static str> + '_ {
    FILES.iter().filter(move |(d, ..)| *d == dir).map(|(_, n, ..)| *n)
}

/// A file's permission bits.
pub(super) fn mode(f: SysctlFile) -> u32 {
    FILES.iter().find(|e| e.2 == f).map_or(0o444, |e| e.3)
}

/// Whether a synthetic object is one of the files (`access` sees only its metadata):
/// its inode is that of one of their paths.
pub(super) fn is_file(st: &libc::stat) -> bool {
    st.st_dev == PROC_DEV
        && st.st_mode & libc::S_IFMT == libc::S_IFREG
        && st.st_uid == 0
        && FILES.iter().any(|(d, n, ..)| ino_of(format!("/proc/sys/{d}/{n}").as_bytes()) == st.st_ino)
}

/// A name as Linux's `proc_do_uts_string` prints it: up to the first NUL.
fn uts(name: &[u8]) -> &[u8] {
    name.split(|&b| b == 0).next().unwrap_or_default()
}

/// The text of a file.
pub(super) fn text(s: &Sysctl<'_>, f: SysctlFile) -> Vec<u8> {
    let mut v = match f {
        SysctlFile::CapLastCap => Caps::LAST.to_string().into_bytes(),
        SysctlFile::Domainname => uts(s.domainname).to_vec(),
        SysctlFile::Hostname => uts(s.hostname).to_vec(),
        SysctlFile::NgroupsMax => NGROUPS_MAX.to_string().into_bytes(),
        SysctlFile::Osrelease => OSRELEASE.to_vec(),
        SysctlFile::Ostype => OSTYPE.to_vec(),
        SysctlFile::PidMax => PID_MAX.to_string().into_bytes(),
        SysctlFile::RandomizeVaSpace => s.randomize_va_space.to_string().into_bytes(),
        SysctlFile::ThreadsMax => s.threads_max.to_string().into_bytes(),
        SysctlFile::Version => VERSION.to_vec(),
        SysctlFile::MmapMinAddr => MMAP_MIN_ADDR.to_string().into_bytes(),
        SysctlFile::OvercommitMemory => b"2".to_vec(),
        SysctlFile::OvercommitRatio => b"100".to_vec(),
    };
    v.push(b'\n');
    v
}

/// Whether a caller with effective (or, for `access`, real) user `uid` and groups
/// `in_group_root` may write a file of mode `mode` (Linux's `test_perm`); if it may,
/// the answer is still no: `EROFS`.
pub(super) fn refuse_write(mode: u32, uid: u32, in_group_root: bool) -> Errno {
    let bits = if uid == 0 {
        mode >> 6
    } else if in_group_root {
        mode >> 3
    } else {
        mode
    };
    if bits & 2 != 0 { EROFS } else { EACCES }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_sorted_and_lines() {
        for d in DIRS {
            let v: Vec<_> = names(d).collect();
            assert!(v.windows(2).all(|w| w[0].as_bytes() < w[1].as_bytes()), "{v:?}");
        }
        let s = Sysctl { randomize_va_space: 2, hostname: b"box\0junk", domainname: b"(none)", threads_max: 256 };
        assert_eq!(text(&s, SysctlFile::Hostname), b"box\n");
        assert_eq!(text(&s, SysctlFile::RandomizeVaSpace), b"2\n");
        assert_eq!(text(&s, SysctlFile::MmapMinAddr), b"65536\n");
        assert_eq!(text(&s, SysctlFile::CapLastCap), b"40\n");
        assert_eq!(file(b"kernel", b"threads-max"), Some(SysctlFile::ThreadsMax));
        assert_eq!(file(b"vm", b"hostname"), None);
        assert_eq!(refuse_write(0o644, 0, false), EROFS);
        assert_eq!(refuse_write(0o444, 0, true), EACCES);
        assert_eq!(refuse_write(0o644, 1000, true), EACCES);
    }
}
