//! Linux i386 system calls (`int 0x80`), as a table.
//!
//! Each row gives the number, the name, the argument formats (for `--strace`) and the
//! handler; the same table drives dispatch, tracing and the statistics. A number not
//! in the table returns `-ENOSYS` and is counted, so a researcher sees exactly what a
//! guest asked for and did not get.
//!
//! Argument formats: `d` signed decimal, `u` unsigned, `x` hex, `f` file descriptor,
//! `s` guest string, `p` guest pointer, `o` octal mode.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use morph_cpu::state::reg;
use morph_mem::{FileKey, MemError, MemFault, MemFaultKind, PAGE_SIZE, Prot};
use rand::Rng;

use crate::layout::MMAP_MIN_ADDR;
use crate::linux::*;
use crate::machine::Machine;
use crate::process::{ExitStatus, FdEntry, FileKind, OpenFile, Process};
use crate::special::{self, Node, Object, Resolved};
use crate::vfs::{Errno, host_errno};

/// A handler's result: the return value or a (positive) errno.
pub type SysResult = Result<u32, Errno>;

/// Guest instructions per clock tick, for `times`, `getrusage` and `/proc/<pid>/stat`:
/// a 533 MHz TM5600 retiring one instruction per cycle, at 100 ticks a second
/// (`AT_CLKTCK`). CPU times are counted in guest instructions, not host time, so a run
/// reports the same times whatever the engine or the host did.
pub const INSNS_PER_TICK: u64 = 5_330_000;

type Handler = fn(&mut Machine, &mut Process, &[u32; 6]) -> SysResult;

/// One row of the system call table.
pub struct Syscall {
    /// i386 number.
    pub nr: u32,
    /// Name.
    pub name: &'static str,
    /// Argument formats, one character per argument.
    pub args: &'static str,
    handler: Handler,
}

/// Declares a static table of system calls: `nr name "args" handler;` rows.
macro_rules! table {
    ($(#[$m:meta])* $vis:vis $table:ident { $($nr:literal $name:ident $args:literal $h:expr;)* }) => {
        $(#[$m])*
        $vis static $table: &[$crate::syscall::Syscall] = &[$($crate::syscall::Syscall {
            nr: $nr,
            name: stringify!($name),
            args: $args,
            handler: $h,
        }),*];
    };
}

pub(crate) mod futex;
mod io;
pub(crate) mod net;
pub(crate) mod proc;
mod signal;

/// Every subsystem's table; together they are the system call table.
pub static TABLES: &[&[Syscall]] = &[FILES_AND_MEMORY, proc::TABLE, futex::TABLE, signal::TABLE, io::TABLE, net::TABLE];

table! {
    /// Files, memory, time and identity.
    FILES_AND_MEMORY {
    3 read "fpu" sys_read;
    4 write "fpu" sys_write;
    5 open "sxo" sys_open;
    6 close "f" sys_close;
    9 link "ss" sys_link;
    10 unlink "s" sys_unlink;
    12 chdir "s" sys_chdir;
    13 time "p" sys_time;
    14 mknod "sox" sys_mknod;
    15 chmod "so" sys_chmod;
    19 lseek "fdd" sys_lseek;
    24 getuid "" |_, _, _| Ok(ids()[0]);
    30 utime "sp" sys_utime;
    33 access "so" sys_access;
    38 rename "ss" sys_rename;
    39 mkdir "so" sys_mkdir;
    40 rmdir "s" sys_rmdir;
    41 dup "f" sys_dup;
    45 brk "x" sys_brk;
    47 getgid "" |_, _, _| Ok(ids()[2]);
    49 geteuid "" |_, _, _| Ok(ids()[1]);
    50 getegid "" |_, _, _| Ok(ids()[3]);
    54 ioctl "fxx" sys_ioctl;
    55 fcntl "fdx" sys_fcntl;
    60 umask "o" sys_umask;
    63 dup2 "ff" sys_dup2;
    78 gettimeofday "pp" sys_gettimeofday;
    83 symlink "ss" sys_symlink;
    85 readlink "spu" sys_readlink;
    90 mmap "p" sys_old_mmap;
    91 munmap "xu" sys_munmap;
    92 truncate "sd" sys_truncate;
    93 ftruncate "fu" sys_ftruncate;
    94 fchmod "fo" sys_fchmod;
    99 statfs "sp" sys_statfs;
    100 fstatfs "fp" sys_fstatfs;
    106 stat "sp" sys_stat;
    107 lstat "sp" sys_lstat;
    108 fstat "fp" sys_fstat;
    116 sysinfo "p" sys_sysinfo;
    122 uname "p" sys_uname;
    125 mprotect "xux" sys_mprotect;
    133 fchdir "f" sys_fchdir;
    140 _llseek "fxxpd" sys_llseek;
    141 getdents "fpu" sys_getdents;
    144 msync "xux" sys_msync;
    145 readv "fpu" sys_readv;
    146 writev "fpu" sys_writev;
    163 mremap "xuuxx" sys_mremap;
    180 pread64 "fpuxx" sys_pread64;
    181 pwrite64 "fpuxx" sys_pwrite64;
    183 getcwd "pu" sys_getcwd;
    191 ugetrlimit "dp" sys_getrlimit;
    192 mmap2 "xuxxfx" sys_mmap2;
    193 truncate64 "sxx" sys_truncate64;
    194 ftruncate64 "fxx" sys_ftruncate64;
    195 stat64 "sp" sys_stat64;
    196 lstat64 "sp" sys_lstat64;
    197 fstat64 "fp" sys_fstat64;
    199 getuid32 "" |_, _, _| Ok(ids()[0]);
    200 getgid32 "" |_, _, _| Ok(ids()[2]);
    201 geteuid32 "" |_, _, _| Ok(ids()[1]);
    202 getegid32 "" |_, _, _| Ok(ids()[3]);
    220 getdents64 "fpu" sys_getdents64;
    221 fcntl64 "fdx" sys_fcntl;
    229 getxattr "sspu" sys_getxattr;
    230 lgetxattr "sspu" sys_lgetxattr;
    231 fgetxattr "fspu" sys_fgetxattr;
    232 listxattr "spu" sys_getxattr;
    233 llistxattr "spu" sys_lgetxattr;
    234 flistxattr "fpu" sys_fgetxattr;
    243 set_thread_area "p" sys_set_thread_area;
    265 clock_gettime "dp" sys_clock_gettime;
    268 statfs64 "sup" sys_statfs64;
    269 fstatfs64 "fup" sys_fstatfs64;
    271 utimes "sp" sys_utimes;
    295 openat "fsxo" sys_openat;
    296 mkdirat "fso" sys_mkdirat;
    297 mknodat "fsox" sys_mknodat;
    299 futimesat "fsp" sys_futimesat;
    300 fstatat64 "fspx" sys_fstatat64;
    301 unlinkat "fsx" sys_unlinkat;
    302 renameat "fsfs" sys_renameat;
    303 linkat "fsfsx" sys_linkat;
    304 symlinkat "sfs" sys_symlinkat;
    305 readlinkat "fspu" sys_readlinkat;
    306 fchmodat "fso" sys_fchmodat;
    307 faccessat "fso" sys_faccessat;
    320 utimensat "fspx" sys_utimensat;
    330 dup3 "ffx" sys_dup3;
    340 prlimit64 "ddpp" sys_prlimit64;
    355 getrandom "pux" sys_getrandom;
    383 statx "fsxxp" sys_statx;
    403 clock_gettime64 "dp" sys_clock_gettime64;
    412 utimensat_time64 "fspx" sys_utimensat_time64;
    439 faccessat2 "fsox" sys_faccessat;
}}

/// Looks a number up in the table.
pub fn lookup(nr: u32) -> Option<&'static Syscall> {
    static INDEX: std::sync::OnceLock<Vec<Option<(u8, u16)>>> = std::sync::OnceLock::new();
    let index = INDEX.get_or_init(|| {
        let mut v = vec![None; 512];
        for (t, table) in TABLES.iter().enumerate() {
            for (i, s) in table.iter().enumerate() {
                assert!(v[s.nr as usize].is_none(), "system call {} is in two tables", s.nr);
                v[s.nr as usize] = Some((t as u8, i as u16));
            }
        }
        v
    });
    index.get(nr as usize).copied().flatten().map(|(t, i)| &TABLES[usize::from(t)][usize::from(i)])
}

/// Handles the system call the process just made (number in EAX, arguments in EBX,
/// ECX, EDX, ESI, EDI, EBP); the result goes to EAX.
pub fn dispatch(m: &mut Machine, p: &mut Process) {
    let nr = p.cpu.gpr[reg::EAX];
    let g = &p.cpu.gpr;
    let args = [g[reg::EBX], g[reg::ECX], g[reg::EDX], g[reg::ESI], g[reg::EDI], g[reg::EBP]];
    *m.stats.syscalls.entry(nr).or_default() += 1;
    let (name, fmt, res) = match lookup(nr) {
        Some(s) => {
            let trace_args = if m.cfg.strace { format_args_of(p, s.args, &args) } else { String::new() };
            let r = (s.handler)(m, p, &args);
            (s.name, trace_args, r)
        }
        None => {
            *m.stats.enosys.entry(nr).or_default() += 1;
            ("", String::new(), Err(ENOSYS))
        }
    };
    if m.cfg.strace {
        let shown = if name.is_empty() { format!("syscall_{nr}") } else { name.to_string() };
        let ret = match res {
            Ok(v) if fmt.is_empty() && v > 0xffff => format!("{v:#x}"),
            Ok(v) => format!("{}", v as i32),
            Err(e) => format!("-1 {} ({})", errno_name(e), std::io::Error::from_raw_os_error(e)),
        };
        if matches!(res, Err(ERESTARTSYS)) {
            eprintln!("[{}] {shown}({fmt}) <blocked>", p.tid);
        } else if matches!(res, Err(EJUSTRETURN)) {
            eprintln!("[{}] {shown}({fmt}) = {}", p.tid, p.cpu.gpr[reg::EAX] as i32);
        } else if p.exit.is_none() {
            eprintln!("[{}] {shown}({fmt}) = {ret}", p.tid);
        } else {
            eprintln!("[{}] {shown}({fmt}) = ?", p.tid);
        }
    }
    p.resumed = None;
    match res {
        Ok(v) => p.cpu.gpr[reg::EAX] = v,
        // Blocked: back to the `int 0x80`, to be re-run when the wait ends.
        Err(ERESTARTSYS) => {
            p.cpu.eip = p.cpu.eip.wrapping_sub(2);
            p.cpu.gpr[reg::EAX] = nr;
        }
        Err(EJUSTRETURN) => {}
        Err(e) => p.cpu.gpr[reg::EAX] = (-e) as u32,
    }
}

fn errno_name(e: Errno) -> &'static str {
    match e {
        EPERM => "EPERM",
        ENOENT => "ENOENT",
        ESRCH => "ESRCH",
        EINTR => "EINTR",
        EIO => "EIO",
        ENOEXEC => "ENOEXEC",
        EBADF => "EBADF",
        ECHILD => "ECHILD",
        EAGAIN => "EAGAIN",
        ENOMEM => "ENOMEM",
        EACCES => "EACCES",
        EFAULT => "EFAULT",
        EEXIST => "EEXIST",
        ENOTDIR => "ENOTDIR",
        EISDIR => "EISDIR",
        EINVAL => "EINVAL",
        EMFILE => "EMFILE",
        ENOTTY => "ENOTTY",
        ESPIPE => "ESPIPE",
        ERANGE => "ERANGE",
        ENOSYS => "ENOSYS",
        ELOOP => "ELOOP",
        ENXIO => "ENXIO",
        E2BIG => "E2BIG",
        EPIPE => "EPIPE",
        EXDEV => "EXDEV",
        ENOTEMPTY => "ENOTEMPTY",
        ENAMETOOLONG => "ENAMETOOLONG",
        ENOTSOCK => "ENOTSOCK",
        EAFNOSUPPORT => "EAFNOSUPPORT",
        EADDRNOTAVAIL => "EADDRNOTAVAIL",
        ENETUNREACH => "ENETUNREACH",
        ECONNREFUSED => "ECONNREFUSED",
        EINPROGRESS => "EINPROGRESS",
        EALREADY => "EALREADY",
        EISCONN => "EISCONN",
        ENOTCONN => "ENOTCONN",
        EADDRINUSE => "EADDRINUSE",
        ECONNRESET => "ECONNRESET",
        ETIMEDOUT => "ETIMEDOUT",
        EMSGSIZE => "EMSGSIZE",
        ENOPROTOOPT => "ENOPROTOOPT",
        EPROTONOSUPPORT => "EPROTONOSUPPORT",
        ENOBUFS => "ENOBUFS",
        ESOCKTNOSUPPORT => "ESOCKTNOSUPPORT",
        EOPNOTSUPP => "EOPNOTSUPP",
        ENODEV => "ENODEV",
        EOVERFLOW => "EOVERFLOW",
        _ => "E?",
    }
}

fn format_args_of(p: &Process, fmt: &str, a: &[u32; 6]) -> String {
    let mut out = Vec::new();
    for (c, &v) in fmt.chars().zip(a.iter()) {
        out.push(match c {
            'd' | 'f' => format!("{}", v as i32),
            'u' => format!("{v}"),
            'o' => format!("{v:#o}"),
            's' => match p.aspace.read_cstr(v, 256) {
                Ok(s) => format!("{:?}", String::from_utf8_lossy(&s)),
                Err(_) => format!("{v:#x}"),
            },
            _ => format!("{v:#x}"),
        });
    }
    out.join(", ")
}

use crate::machine::ids;

fn efault(_: MemFault) -> Errno {
    EFAULT
}

/// Converts a host syscall return (-1 + errno) into a result.
fn host(r: isize) -> SysResult {
    if r < 0 { Err(host_errno()) } else { Ok(r as u32) }
}

fn host_fd(p: &Process, fd: u32) -> Result<i32, Errno> {
    p.fds.get(fd).map(|e| e.host.as_raw_fd()).ok_or(EBADF)
}

fn read_path(p: &Process, ptr: u32) -> Result<Vec<u8>, Errno> {
    let s = p.aspace.read_cstr(ptr, 4096).map_err(efault)?;
    if s.len() >= 4096 {
        return Err(ENAMETOOLONG);
    }
    Ok(s)
}

// ----- process ---------------------------------------------------------------------

fn sys_uname(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    // struct new_utsname: six 65-byte fields.
    let mut buf = [0u8; 65 * 6];
    // glibc refuses kernels older than 3.2, so the 2.6.12 model also reports a modern
    // release; only its ASLR behaviour is modeled.
    let _ = m.cfg.kernel;
    let release: &[u8] = b"6.1.0-morph";
    for (i, f) in [&b"Linux"[..], b"morph", release, b"#1 SMP morph", b"i686", b"(none)"].iter().enumerate() {
        buf[i * 65..i * 65 + f.len()].copy_from_slice(f);
    }
    p.aspace.write_bytes(a[0], &buf).map_err(efault)?;
    Ok(0)
}

fn sys_set_thread_area(_: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    set_thread_area(p, a[0])
}

/// Installs the TLS descriptor (`struct user_desc`) at guest address `ptr`.
pub(crate) fn set_thread_area(p: &mut Process, ptr: u32) -> SysResult {
    install_tls(&mut p.cpu, &mut p.aspace, ptr)
}

/// Installs the TLS descriptor at `ptr` into `cpu`'s per-thread TLS entries (also for
/// a new thread: `clone`'s `CLONE_SETTLS`).
pub(crate) fn install_tls(cpu: &mut morph_cpu::Cpu, aspace: &mut morph_mem::AddressSpace, ptr: u32) -> SysResult {
    use morph_cpu::state::{TLS_ENTRIES, TLS_ENTRY_MIN, seg};
    let a = [ptr];
    let mut d = [0u8; 16];
    aspace.read_bytes(a[0], &mut d).map_err(efault)?;
    let w = |i: usize| u32::from_le_bytes([d[i], d[i + 1], d[i + 2], d[i + 3]]);
    let (entry, base, limit, flags) = (w(0), w(4), w(8), w(12));
    let idx = if entry == u32::MAX {
        let free = cpu.tls.iter().position(|t| !t.present).ok_or(ESRCH)?;
        let n = (TLS_ENTRY_MIN + free) as u32;
        aspace.write_u32(a[0], n).map_err(efault)?;
        free
    } else {
        let i = (entry as usize).wrapping_sub(TLS_ENTRY_MIN);
        if i >= TLS_ENTRIES {
            return Err(EINVAL);
        }
        i
    };
    let empty = base == 0 && limit == 0 && flags & (1 << 3) != 0; // read_exec_only "empty" desc
    let present = flags & (1 << 5) == 0 && !empty; // seg_not_present
    cpu.tls[idx] = morph_cpu::TlsDescriptor { base, limit, limit_in_pages: flags & (1 << 4) != 0, present };
    // Reload segment registers that use this entry.
    for s in [seg::FS, seg::GS] {
        let sel = cpu.sel[s];
        if usize::from(sel >> 3) == TLS_ENTRY_MIN + idx {
            cpu.seg_base[s] = if present { base } else { 0 };
        }
    }
    Ok(0)
}

fn sys_getrlimit(_: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let (cur, max) = *p.rlimits.get(a[0] as usize).ok_or(EINVAL)?;
    let clip = |v: u64| if v > u64::from(u32::MAX) { u32::MAX } else { v as u32 };
    let mut b = clip(cur).to_le_bytes().to_vec();
    b.extend_from_slice(&clip(max).to_le_bytes());
    p.aspace.write_bytes(a[1], &b).map_err(efault)?;
    Ok(0)
}

fn sys_prlimit64(_: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    if a[0] != 0 && a[0] != p.pid {
        return Err(ESRCH);
    }
    let r = a[1] as usize;
    let old = *p.rlimits.get(r).ok_or(EINVAL)?;
    if a[2] != 0 {
        let cur = p.aspace.read_u64(a[2]).map_err(efault)?;
        let max = p.aspace.read_u64(a[2] + 8).map_err(efault)?;
        if cur > max {
            return Err(EINVAL);
        }
        if max > old.1 && ids()[1] != 0 {
            return Err(EPERM);
        }
        p.rlimits[r] = (cur, max);
    }
    if a[3] != 0 {
        let mut b = old.0.to_le_bytes().to_vec();
        b.extend_from_slice(&old.1.to_le_bytes());
        p.aspace.write_bytes(a[3], &b).map_err(efault)?;
    }
    Ok(0)
}

fn sys_sysinfo(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let mut b = [0u8; 64];
    let put = |b: &mut [u8; 64], off: usize, v: u32| b[off..off + 4].copy_from_slice(&v.to_le_bytes());
    put(&mut b, 0, m.started.elapsed().as_secs() as u32);
    let total = m.cfg.max_mem.min(u64::from(u32::MAX)) as u32;
    let used = (m.phys.stats().frames_in_use * u64::from(PAGE_SIZE)).min(u64::from(total)) as u32;
    put(&mut b, 16, total);
    put(&mut b, 20, total - used);
    b[40..42].copy_from_slice(&(m.procs.len() as u16 + 1).to_le_bytes());
    put(&mut b, 52, 1); // mem_unit
    p.aspace.write_bytes(a[0], &b).map_err(efault)?;
    Ok(0)
}

fn sys_getrandom(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let len = a[1].min(1 << 25);
    let mut buf = vec![0u8; len as usize];
    m.rng.fill_bytes(&mut buf);
    p.aspace.write_bytes(a[0], &buf).map_err(efault)?;
    Ok(len)
}

// ----- time --------------------------------------------------------------------------

fn host_clock(clock: u32) -> Result<libc::timespec, Errno> {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: writes into a local timespec; an invalid clock id is reported as EINVAL.
    if unsafe { libc::clock_gettime(clock as i32, &mut ts) } != 0 {
        return Err(EINVAL);
    }
    Ok(ts)
}

fn sys_time(_: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let t = host_clock(libc::CLOCK_REALTIME as u32)?.tv_sec as u32;
    if a[0] != 0 {
        p.aspace.write_u32(a[0], t).map_err(efault)?;
    }
    Ok(t)
}

fn sys_gettimeofday(_: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let ts = host_clock(libc::CLOCK_REALTIME as u32)?;
    if a[0] != 0 {
        let mut b = (ts.tv_sec as u32).to_le_bytes().to_vec();
        b.extend_from_slice(&((ts.tv_nsec / 1000) as u32).to_le_bytes());
        p.aspace.write_bytes(a[0], &b).map_err(efault)?;
    }
    if a[1] != 0 {
        p.aspace.write_u64(a[1], 0).map_err(efault)?;
    }
    Ok(0)
}

fn sys_clock_gettime(_: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let ts = host_clock(a[0])?;
    let mut b = (ts.tv_sec as u32).to_le_bytes().to_vec();
    b.extend_from_slice(&(ts.tv_nsec as u32).to_le_bytes());
    p.aspace.write_bytes(a[1], &b).map_err(efault)?;
    Ok(0)
}

fn sys_clock_gettime64(_: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let ts = host_clock(a[0])?;
    let mut b = ts.tv_sec.to_le_bytes().to_vec();
    b.extend_from_slice(&ts.tv_nsec.to_le_bytes());
    p.aspace.write_bytes(a[1], &b).map_err(efault)?;
    Ok(0)
}

// ----- memory ------------------------------------------------------------------------

fn sys_brk(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let want = a[0];
    if want < p.brk_start {
        return Ok(p.brk);
    }
    let old_end = morph_mem::page_align_up(u64::from(p.brk)) as u32;
    let new_end = morph_mem::page_align_up(u64::from(want));
    if new_end > u64::from(p.aspace.mmap_base()) {
        return Ok(p.brk);
    }
    let new_end = new_end as u32;
    if new_end > old_end {
        if !p.aspace.is_free(old_end, new_end - old_end) {
            return Ok(p.brk);
        }
        let grow = |p: &mut Process| p.aspace.map_anon(old_end, new_end - old_end, Prot::RW, false, "[heap]");
        if reclaiming(m, p, (new_end - old_end) / PAGE_SIZE, grow).is_err() {
            return Ok(p.brk);
        }
    } else if new_end < old_end && p.aspace.unmap(new_end, old_end - new_end).is_err() {
        return Ok(p.brk);
    }
    p.brk = want;
    Ok(want)
}

#[allow(clippy::too_many_arguments)]
fn do_mmap(
    m: &mut Machine,
    p: &mut Process,
    addr: u32,
    len: u32,
    prot: u32,
    flags: u32,
    fd: u32,
    off: u64,
) -> SysResult {
    if len == 0 {
        return Err(EINVAL);
    }
    let typ = flags & MAP_TYPE;
    if typ != MAP_SHARED && typ != MAP_PRIVATE && typ != 3 {
        return Err(EINVAL);
    }
    if off & u64::from(PAGE_SIZE - 1) != 0 {
        return Err(EINVAL);
    }
    let alen = morph_mem::page_align_up(u64::from(len));
    if alen > u64::from(crate::layout::TASK_SIZE) {
        return Err(ENOMEM);
    }
    let alen = alen as u32;
    let fixed = flags & (MAP_FIXED | MAP_FIXED_NOREPLACE) != 0;
    let start = if fixed {
        if addr & (PAGE_SIZE - 1) != 0 {
            return Err(EINVAL);
        }
        if u64::from(addr) + u64::from(alen) > u64::from(crate::layout::TASK_SIZE) || addr < MMAP_MIN_ADDR {
            return Err(ENOMEM);
        }
        if flags & MAP_FIXED_NOREPLACE != 0 && !p.aspace.is_free(addr, alen) {
            return Err(EEXIST);
        }
        addr
    } else {
        let hint = addr & !(PAGE_SIZE - 1);
        if hint >= MMAP_MIN_ADDR
            && u64::from(hint) + u64::from(alen) <= u64::from(p.aspace.mmap_base())
            && p.aspace.is_free(hint, alen)
        {
            hint
        } else {
            p.aspace.find_free_top_down(alen, MMAP_MIN_ADDR, p.aspace.mmap_base()).ok_or(ENOMEM)?
        }
    };
    let shared = typ == MAP_SHARED;
    let prot = Prot(prot & 7);
    if flags & MAP_ANONYMOUS != 0 {
        reclaiming(m, p, alen / PAGE_SIZE, |p| p.aspace.map_anon(start, alen, prot, shared, "")).map_err(|_| ENOMEM)?;
        return Ok(start);
    }
    let entry = p.fds.get(fd).ok_or(EBADF)?.clone();
    fill_snapshot(m, p, fd);
    let raw = entry.host.as_raw_fd();
    // SAFETY: F_GETFL on a descriptor we hold open.
    let fl = unsafe { libc::fcntl(raw, libc::F_GETFL) };
    if fl & libc::O_ACCMODE == libc::O_WRONLY
        || (shared && prot.has(Prot::WRITE) && fl & libc::O_ACCMODE != libc::O_RDWR)
    {
        return Err(EACCES);
    }
    // SAFETY: dup of a descriptor we hold; the File owns the duplicate.
    let dup = unsafe { libc::fcntl(raw, libc::F_DUPFD_CLOEXEC, 0) };
    if dup < 0 {
        return Err(host_errno());
    }
    // SAFETY: a fresh descriptor we own.
    let file = unsafe { std::fs::File::from_raw_fd(dup) };
    if file.metadata().map(|md| !md.is_file()).unwrap_or(true) {
        return Err(ENODEV);
    }
    let id = morph_mem::FileId::of(&file).map_err(|_| EIO)?;
    let name = guest_name_of(m, raw);
    p.aspace.map_file(&mut m.cache, start, alen, prot, shared, &file, id, off, &name).map_err(|e| match e {
        MemError::Host { err, .. } if err.raw_os_error() == Some(EOVERFLOW) => EOVERFLOW,
        _ => ENOMEM,
    })?;
    Ok(start)
}

/// Runs `f`, and again each time the page cache gave back idle pages (about `pages`
/// at a time, whole files) while it fails for want of memory under the machine's limit.
fn reclaiming(
    m: &mut Machine,
    p: &mut Process,
    pages: u32,
    mut f: impl FnMut(&mut Process) -> Result<(), MemError>,
) -> Result<(), MemError> {
    let mut r = f(p);
    while matches!(r, Err(MemError::OutOfMemory { .. })) && m.cache.reclaim(&m.phys, pages, None) > 0 {
        r = f(p);
    }
    r
}

/// The guest path of an open host descriptor (for the names in `/proc/self/maps`).
fn guest_name_of(m: &Machine, raw: i32) -> String {
    std::fs::read_link(format!("/proc/self/fd/{raw}"))
        .ok()
        .and_then(|h| h.strip_prefix(m.vfs.root_path()).ok().map(|r| format!("/{}", r.display())))
        .unwrap_or_default()
}

fn sys_mmap2(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    do_mmap(m, p, a[0], a[1], a[2], a[3], a[4], u64::from(a[5]) * u64::from(PAGE_SIZE))
}

fn sys_old_mmap(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let mut w = [0u32; 6];
    for (i, v) in w.iter_mut().enumerate() {
        *v = p.aspace.read_u32(a[0] + 4 * i as u32).map_err(efault)?;
    }
    do_mmap(m, p, w[0], w[1], w[2], w[3], w[4], u64::from(w[5]))
}

fn sys_mremap(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    const MREMAP_MAYMOVE: u32 = 1;
    const MREMAP_FIXED: u32 = 2;
    let (old, flags) = (a[0], a[3]);
    if old & (PAGE_SIZE - 1) != 0 || a[2] == 0 || flags & !(MREMAP_MAYMOVE | MREMAP_FIXED) != 0 {
        return Err(EINVAL);
    }
    if flags & MREMAP_FIXED != 0 {
        return Err(EINVAL); // MREMAP_FIXED is not supported: say so rather than misplace
    }
    let old_len = morph_mem::page_align_up(u64::from(a[1])) as u32;
    let new_len = morph_mem::page_align_up(u64::from(a[2]));
    if new_len > u64::from(crate::layout::TASK_SIZE) {
        return Err(ENOMEM);
    }
    let new_len = new_len as u32;
    let vma = p.aspace.vma_at(old).ok_or(EFAULT)?.clone();
    if u64::from(old) + u64::from(old_len) > u64::from(vma.end) {
        return Err(EFAULT);
    }
    if new_len <= old_len {
        p.aspace.unmap(old + new_len, old_len - new_len).map_err(|_| ENOMEM)?;
        return Ok(old);
    }
    let extra = new_len - old_len;
    // Growing a file mapping would need the file itself; morph grows anonymous ones.
    if !matches!(vma.kind, morph_mem::MapKind::Anon) {
        return Err(ENOMEM);
    }
    let grow_at = |p: &mut Process, base: u32| -> SysResult {
        p.aspace.map_anon(base + old_len, extra, vma.prot, vma.shared, &vma.name).map_err(|_| ENOMEM)?;
        Ok(base)
    };
    if old + old_len == vma.end && p.aspace.is_free(old + old_len, extra) {
        return grow_at(p, old);
    }
    if flags & MREMAP_MAYMOVE == 0 {
        return Err(ENOMEM);
    }
    let dest = p.aspace.find_free_top_down(new_len, MMAP_MIN_ADDR, p.aspace.mmap_base()).ok_or(ENOMEM)?;
    p.aspace.move_pages(old, dest, old_len).map_err(|_| ENOMEM)?;
    let _ = m;
    grow_at(p, dest)
}

fn sys_munmap(_: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    if a[0] & (PAGE_SIZE - 1) != 0
        || a[1] == 0
        || u64::from(a[0]) + u64::from(a[1]) > u64::from(crate::layout::TASK_SIZE)
    {
        return Err(EINVAL);
    }
    p.aspace.unmap(a[0], a[1]).map_err(|_| ENOMEM)?;
    Ok(0)
}

fn sys_mprotect(_: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    if a[0] & (PAGE_SIZE - 1) != 0 || a[2] & !7 != 0 {
        return Err(EINVAL);
    }
    if a[1] == 0 {
        return Ok(0);
    }
    p.aspace.protect(a[0], a[1], Prot(a[2])).map_err(|k| match k {
        MemFaultKind::Protection => EACCES,
        MemFaultKind::Unmapped => ENOMEM,
    })?;
    Ok(0)
}

fn sys_msync(_: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    const MS_ASYNC: u32 = 1;
    const MS_INVALIDATE: u32 = 2;
    const MS_SYNC: u32 = 4;
    let (start, flags) = (a[0], a[2]);
    if start & (PAGE_SIZE - 1) != 0
        || flags & !(MS_ASYNC | MS_INVALIDATE | MS_SYNC) != 0
        || (flags & MS_ASYNC != 0 && flags & MS_SYNC != 0)
    {
        return Err(EINVAL);
    }
    let len = morph_mem::page_align_up(u64::from(a[1]));
    if u64::from(start) + len > 1 << 32 {
        return Err(ENOMEM);
    }
    if len == 0 {
        return Ok(0);
    }
    let len = u32::try_from(len).map_err(|_| ENOMEM)?;
    // Every flag writes back: the host's own page cache then holds the bytes, which is
    // all MS_SYNC promises other readers too.
    let mapped = p.aspace.is_mapped(start, len);
    p.aspace.write_back(start, len).map_err(|_| EIO)?;
    if mapped { Ok(0) } else { Err(ENOMEM) }
}

// ----- files -------------------------------------------------------------------------

// Coherence with the page cache: the host file is the backing store of the machine's
// page cache (see `morph_mem::PageCache`). Before the host reads a file that may have
// shared writable mappings, their stores are written back; after the host writes or
// truncates a file with cached pages, the cache takes the change. Descriptors know their
// (device, inode) from open time, so the common case (no cached pages, or not a regular
// file) costs a hash lookup.

/// Writes back stores made through shared mappings of the file behind guest `fd`, so a
/// host read sees them. A failure is not the reader's: it reads what the file holds.
fn sync_before_read(m: &mut Machine, p: &Process, fd: u32) {
    if let Some(key) = p.fds.get(fd).and_then(|e| e.file()) {
        let _ = m.cache.write_back(&m.phys, key);
    }
}

/// The cached file behind guest `fd`, if it is a regular file with cached pages.
fn cached_file(m: &Machine, p: &Process, fd: u32) -> Option<FileKey> {
    p.fds.get(fd).and_then(|e| e.file()).filter(|&k| m.cache.is_cached(k))
}

/// After `n` bytes were written through guest `fd` at `off` (or, for `write`, just
/// before the file offset): the cached pages take the new bytes.
fn wrote(m: &mut Machine, p: &Process, fd: u32, off: Option<u64>, n: u32) {
    let Some(key) = cached_file(m, p, fd) else { return };
    let off = match off {
        Some(off) => off,
        None => {
            let Ok(raw) = host_fd(p, fd) else { return };
            // SAFETY: lseek on a descriptor we hold (reads the offset, moves nothing).
            let end = unsafe { libc::lseek(raw, 0, libc::SEEK_CUR) };
            match u64::try_from(end) {
                Ok(end) => end.saturating_sub(u64::from(n)),
                Err(_) => return,
            }
        }
    };
    let _ = m.cache.written(&m.phys, key, off, u64::from(n));
}

/// The most bytes one `read` or `write` transfers (Linux's `MAX_RW_COUNT`).
const MAX_RW: u32 = 0x7fff_f000;

// Buffers the host kernel reads or fills in place. Linux transfers what it can: a
// buffer whose tail is unmapped gives a short count, `EFAULT` only when nothing could be
// transferred, and bytes it never touches are never checked (`/dev/null` takes any
// count). morph gets exactly that by giving the host the whole buffer after preparing
// the part of it the guest may access, up to its first page the guest may not: the
// window is inaccessible to the host in the same direction there (a hole, or a page
// mapped without that right), so the host stops where Linux would, with Linux's own
// rules for partial copies (a pipe drops a partly copied page and says `EFAULT`). The
// host touches only this process's window slot (4 GiB plus a 4 GiB guard, and one
// transfer is below 2 GiB).

/// Prepares guest buffer `[va, va+len)` for the host to write into: its part before the
/// first page the guest may not write (copy-on-write broken, code writes reported,
/// hosted). Returns that part's length.
fn guest_out(p: &mut Process, va: u32, len: u32) -> Result<u32, Errno> {
    let n = p.aspace.valid_prefix(va, len, true);
    p.aspace.prepare_write(va, n).map_err(efault)?;
    Ok(n)
}

/// Prepares guest buffer `[va, va+len)` for the host to read: its part before the first
/// page the guest may not read (hosted). Returns that part's length.
fn guest_in(p: &Process, va: u32, len: u32) -> Result<u32, Errno> {
    let n = p.aspace.valid_prefix(va, len, false);
    p.aspace.check_read(va, n).map_err(efault)?;
    Ok(n)
}

fn sys_read(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let fd = host_fd(p, a[0])?;
    let len = a[2].min(MAX_RW);
    let valid = guest_out(p, a[1], len)?;
    let one = [libc::iovec { iov_base: p.aspace.host_ptr(a[1]).cast(), iov_len: len as usize }];
    if let Some(r) = io::read_special(m, p, a[0], &one, valid) {
        return r;
    }
    io::ready_or_block(p, a[0], libc::POLLIN)?;
    sync_before_read(m, p, a[0]);
    // SAFETY: a range of our window slot, prepared up to the first page the guest may
    // not write (the host stops there).
    host(unsafe { libc::read(fd, p.aspace.host_ptr(a[1]).cast(), len as usize) })
}

fn sys_write(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let fd = host_fd(p, a[0])?;
    let len = a[2].min(MAX_RW);
    guest_in(p, a[1], len)?;
    io::ready_or_block(p, a[0], libc::POLLOUT)?;
    // SAFETY: a range of our window slot, hosted up to the first page the guest may not
    // read (the host stops there).
    let n =
        io::wrote_or_block(p, a[0], host(unsafe { libc::write(fd, p.aspace.host_ptr(a[1]).cast(), len as usize) }))?;
    wrote(m, p, a[0], None, n);
    Ok(n)
}

fn sys_pread64(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let fd = host_fd(p, a[0])?;
    let len = a[2].min(MAX_RW);
    let off = ((u64::from(a[4]) << 32) | u64::from(a[3])) as i64;
    let valid = guest_out(p, a[1], len)?;
    let one = [libc::iovec { iov_base: p.aspace.host_ptr(a[1]).cast(), iov_len: len as usize }];
    if let Some(r) = io::read_special(m, p, a[0], &one, valid) {
        return r;
    }
    sync_before_read(m, p, a[0]);
    // SAFETY: as in `sys_read`.
    host(unsafe { libc::pread(fd, p.aspace.host_ptr(a[1]).cast(), len as usize, off) })
}

fn sys_pwrite64(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let fd = host_fd(p, a[0])?;
    let len = a[2].min(MAX_RW);
    let off = ((u64::from(a[4]) << 32) | u64::from(a[3])) as i64;
    guest_in(p, a[1], len)?;
    // SAFETY: as in `sys_write`.
    let n = host(unsafe { libc::pwrite(fd, p.aspace.host_ptr(a[1]).cast(), len as usize, off) })?;
    wrote(m, p, a[0], Some(off as u64), n);
    Ok(n)
}

/// After the file `key` was truncated (or extended) to `len` bytes.
fn truncated(m: &mut Machine, key: Option<FileKey>, len: u64) {
    if let Some(key) = key {
        m.cache.truncated(&m.phys, key, len);
    }
}

fn ftruncate_common(m: &mut Machine, p: &mut Process, guest_fd: u32, len: i64) -> SysResult {
    if len < 0 {
        return Err(EINVAL); // before the descriptor is looked up, as Linux
    }
    let fd = host_fd(p, guest_fd)?;
    // SAFETY: ftruncate on a descriptor we hold.
    let r = host(unsafe { libc::ftruncate(fd, len) } as isize)?;
    truncated(m, cached_file(m, p, guest_fd), len as u64);
    Ok(r)
}

fn truncate_common(m: &mut Machine, p: &mut Process, path: u32, len: i64) -> SysResult {
    if len < 0 {
        return Err(EINVAL); // before the path is read, as Linux
    }
    let path = read_path(p, path)?;
    // Only a regular file is opened (a FIFO would block the machine): EISDIR, else EINVAL.
    let fd = m.vfs.open_regular(&p.cwd, &path, libc::O_WRONLY, |k| if k == libc::S_IFDIR { EISDIR } else { EINVAL })?;
    // SAFETY: ftruncate on a descriptor we own.
    let r = host(unsafe { libc::ftruncate(fd.as_raw_fd(), len) } as isize)?;
    truncated(m, FileKey::of_fd(fd.as_raw_fd()).ok().flatten(), len as u64);
    Ok(r)
}

fn sys_ftruncate64(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    ftruncate_common(m, p, a[0], ((u64::from(a[2]) << 32) | u64::from(a[1])) as i64)
}

fn sys_truncate64(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    truncate_common(m, p, a[0], ((u64::from(a[2]) << 32) | u64::from(a[1])) as i64)
}

/// `ftruncate` without large-file support: a signed 32-bit length (negative:
/// `EINVAL`, before the descriptor is looked up), as Linux since 6.10 reads it (older
/// kernels took it unsigned and then refused lengths past 2 GiB − 1 for a descriptor
/// opened without `O_LARGEFILE`: the same answers except for a bad descriptor).
fn sys_ftruncate(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    ftruncate_common(m, p, a[0], i64::from(a[1] as i32))
}

/// `truncate` without large-file support: a signed 32-bit length (negative: `EINVAL`).
fn sys_truncate(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    truncate_common(m, p, a[0], i64::from(a[1] as i32))
}

/// The host iovecs of the guest's `iovec` array at `ptr` (`n` entries), each buffer
/// prepared as by `guest_out` (`write_to_guest`) or `guest_in` up to the first fault
/// (the host stops there; see `guest_out`).
fn iovecs(p: &mut Process, ptr: u32, n: u32, write_to_guest: bool) -> Result<Vec<libc::iovec>, Errno> {
    iovecs_valid(p, ptr, n, write_to_guest).map(|(v, _)| v)
}

/// `iovecs`, and how many bytes of them lie before the first fault (at most `MAX_RW`).
fn iovecs_valid(p: &mut Process, ptr: u32, n: u32, write_to_guest: bool) -> Result<(Vec<libc::iovec>, u32), Errno> {
    if n > 1024 {
        return Err(EINVAL);
    }
    let mut v = Vec::with_capacity(n as usize);
    let mut valid = 0u32;
    let mut faulted = false;
    for i in 0..n {
        let base = p.aspace.read_u32(ptr + 8 * i).map_err(efault)?;
        let len = p.aspace.read_u32(ptr + 8 * i + 4).map_err(efault)?;
        // A compat `iov_len` is signed: a negative one is EINVAL (the total is clamped
        // to `MAX_RW_COUNT` by the host, as by Linux).
        if len > i32::MAX as u32 {
            return Err(EINVAL);
        }
        if !faulted {
            let ok = if write_to_guest { guest_out(p, base, len)? } else { guest_in(p, base, len)? };
            valid = valid.saturating_add(ok).min(MAX_RW);
            faulted = ok < len;
        }
        v.push(libc::iovec { iov_base: p.aspace.host_ptr(base).cast(), iov_len: len as usize });
    }
    Ok((v, valid))
}

fn sys_readv(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let fd = host_fd(p, a[0])?;
    let (v, valid) = iovecs_valid(p, a[1], a[2], true)?;
    if let Some(r) = io::read_special(m, p, a[0], &v, valid) {
        return r;
    }
    io::ready_or_block(p, a[0], libc::POLLIN)?;
    sync_before_read(m, p, a[0]);
    // SAFETY: every iovec lies in our window slot, prepared up to the first fault.
    host(unsafe { libc::readv(fd, v.as_ptr(), v.len() as i32) })
}

fn sys_writev(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let fd = host_fd(p, a[0])?;
    let v = iovecs(p, a[1], a[2], false)?;
    io::ready_or_block(p, a[0], libc::POLLOUT)?;
    // SAFETY: every iovec lies in our window slot, hosted up to the first fault.
    let n = io::wrote_or_block(p, a[0], host(unsafe { libc::writev(fd, v.as_ptr(), v.len() as i32) }))?;
    wrote(m, p, a[0], None, n);
    Ok(n)
}

/// Guest `open` flags → host flags (the values are the same on i386 and x86-64; only
/// close-on-exec is kept by morph itself).
fn open_common(m: &mut Machine, p: &mut Process, dir: &str, path: &[u8], flags: u32, mode: u32) -> SysResult {
    let host_flags = (flags & !(O_CLOEXEC | O_LARGEFILE)) as i32;
    let mode = mode & !p.umask;
    let resolved = special::resolve(m, p, dir, path, flags & O_NOFOLLOW == 0).map_err(|e| {
        // A new name directly in /dev: not the caller's to make (it is root's on Linux).
        let (norm, _) = crate::vfs::Vfs::normalize(dir, path);
        let in_dev = norm.strip_prefix(b"/dev/").is_some_and(|n| !n.contains(&b'/'));
        if e == ENOENT && flags & O_CREAT != 0 && in_dev { EACCES } else { e }
    })?;
    let file = match resolved {
        Resolved::Path(abs) => open_host(m, p, &abs, host_flags, mode, flags)?,
        Resolved::Node(n) => special::open(m, p, n, flags, mode)?,
    };
    let entry = FdEntry::of(file, flags & O_CLOEXEC != 0);
    if flags & O_TRUNC != 0
        && let Some(key) = entry.file().filter(|&k| m.cache.is_cached(k))
        && let Ok(st) = host_stat_fd(entry.host.as_raw_fd())
    {
        m.cache.truncated(&m.phys, key, st.st_size as u64);
    }
    p.fds.install(entry, 0).ok_or(EMFILE)
}

/// Opens a file of the root. The host open is always non-blocking, since opening a
/// FIFO would otherwise stall the whole machine until its other end opens: a FIFO
/// becomes a morph-managed non-blocking description (reads and writes wait through
/// the scheduler); a write-only open with no reader yet waits in the scheduler (polled)
/// as Linux's blocking open does. Anything else gets the guest's own flags back.
fn open_host(
    m: &Machine,
    p: &mut Process,
    abs: &[u8],
    host_flags: i32,
    mode: u32,
    flags: u32,
) -> Result<OpenFile, Errno> {
    let guest_nb = flags & O_NONBLOCK != 0;
    match m.vfs.open("/", abs, host_flags | libc::O_NONBLOCK, mode) {
        Ok(fd) => {
            let st = host_stat_fd(fd.as_raw_fd())?;
            if st.st_mode & libc::S_IFMT == libc::S_IFIFO {
                return Ok(OpenFile::nonblocking(fd, guest_nb));
            }
            if !guest_nb {
                // SAFETY: F_SETFL on a descriptor we own.
                unsafe {
                    libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, host_flags & !libc::O_NONBLOCK & !libc::O_ACCMODE)
                };
            }
            Ok(OpenFile::new(fd))
        }
        // A FIFO with no reader: a blocking writer waits for one.
        Err(ENXIO) if !guest_nb && host_flags & libc::O_ACCMODE == libc::O_WRONLY => {
            let retry = std::time::Instant::now() + std::time::Duration::from_millis(2);
            Err(io::block_on(p, Vec::new(), Some(retry), true).err().unwrap_or(ERESTARTSYS))
        }
        Err(e) => Err(e),
    }
}

/// The directory a `*at` call's relative path starts from, as a guest path.
fn at_dir(m: &Machine, p: &Process, dirfd: u32, path: &[u8]) -> Result<String, Errno> {
    if path.first() == Some(&b'/') || dirfd as i32 == AT_FDCWD {
        return Ok(p.cwd.clone());
    }
    let e = p.fds.get(dirfd).ok_or(EBADF)?;
    match &e.host.kind {
        FileKind::Dir(d) => Ok(d.path.clone()),
        FileKind::Host => m.vfs.guest_path_of(e.host.as_ref()),
        _ => Err(ENOTDIR),
    }
}

fn sys_open(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let path = read_path(p, a[0])?;
    let cwd = p.cwd.clone();
    open_common(m, p, &cwd, &path, a[1], a[2])
}

fn sys_openat(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let path = read_path(p, a[1])?;
    let dir = at_dir(m, p, a[0], &path)?;
    open_common(m, p, &dir, &path, a[2], a[3])
}

fn sys_close(_: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    p.fds.close(a[0]).map(|_| 0).ok_or(EBADF)
}

/// The state of guest `fd` if it is a directory of morph's own.
fn special_dir(p: &Process, fd: u32) -> Option<&special::DirState> {
    match &p.fds.get(fd)?.host.kind {
        FileKind::Dir(d) => Some(d),
        _ => None,
    }
}

/// Makes the text of a `/proc` file behind guest `fd` before the host looks at it.
fn fill_snapshot(m: &Machine, p: &Process, fd: u32) {
    if let Some(FileKind::Snapshot(s)) = p.fds.get(fd).map(|e| &e.host.kind) {
        s.fill(m, p);
    }
}

fn sys_lseek(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    fill_snapshot(m, p, a[0]);
    if let Some(d) = special_dir(p, a[0]) {
        return special::seek_dir(d, i64::from(a[1] as i32), a[2]).map(|v| v as u32);
    }
    let fd = host_fd(p, a[0])?;
    // SAFETY: lseek on a descriptor we hold.
    let r = unsafe { libc::lseek(fd, i64::from(a[1] as i32), a[2] as i32) };
    if r < 0 {
        return Err(host_errno());
    }
    if r > i64::from(i32::MAX) {
        return Err(EOVERFLOW);
    }
    Ok(r as u32)
}

fn sys_llseek(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    fill_snapshot(m, p, a[0]);
    let fd = host_fd(p, a[0])?;
    let off = ((u64::from(a[1]) << 32) | u64::from(a[2])) as i64;
    p.aspace.prepare_write(a[3], 8).map_err(efault)?;
    if let Some(d) = special_dir(p, a[0]) {
        let r = special::seek_dir(d, off, a[4])?;
        p.aspace.write_u64(a[3], r).map_err(efault)?;
        return Ok(0);
    }
    // SAFETY: lseek on a descriptor we hold.
    let r = unsafe { libc::lseek(fd, off, a[4] as i32) };
    if r < 0 {
        return Err(host_errno());
    }
    p.aspace.write_u64(a[3], r as u64).map_err(efault)?;
    Ok(0)
}

fn sys_dup(_: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let mut e = p.fds.get(a[0]).ok_or(EBADF)?.clone();
    e.cloexec = false;
    p.fds.install(e, 0).ok_or(EMFILE)
}

fn sys_dup2(_: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let mut e = p.fds.get(a[0]).ok_or(EBADF)?.clone();
    if a[0] == a[1] {
        return Ok(a[1]);
    }
    if a[1] as usize >= crate::process::MAX_FDS {
        return Err(EBADF);
    }
    e.cloexec = false;
    p.fds.set(a[1], e);
    Ok(a[1])
}

fn sys_dup3(_: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    if a[0] == a[1] || a[2] & !O_CLOEXEC != 0 {
        return Err(EINVAL);
    }
    let mut e = p.fds.get(a[0]).ok_or(EBADF)?.clone();
    if a[1] as usize >= crate::process::MAX_FDS {
        return Err(EBADF);
    }
    e.cloexec = a[2] & O_CLOEXEC != 0;
    p.fds.set(a[1], e);
    Ok(a[1])
}

fn sys_fcntl(_: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    const F_DUPFD: u32 = 0;
    const F_GETFD: u32 = 1;
    const F_SETFD: u32 = 2;
    const F_GETFL: u32 = 3;
    const F_SETFL: u32 = 4;
    const F_DUPFD_CLOEXEC: u32 = 1030;
    let e = p.fds.get(a[0]).ok_or(EBADF)?.clone();
    match a[1] {
        F_DUPFD | F_DUPFD_CLOEXEC => {
            let mut e = e;
            e.cloexec = a[1] == F_DUPFD_CLOEXEC;
            p.fds.install(e, a[2]).ok_or(EMFILE)
        }
        F_GETFD => Ok(u32::from(e.cloexec)),
        F_SETFD => {
            if let Some(x) = p.fds.get_mut(a[0]) {
                x.cloexec = a[2] & 1 != 0;
            }
            Ok(0)
        }
        F_GETFL => {
            // SAFETY: F_GETFL on a descriptor we hold.
            let r = unsafe { libc::fcntl(e.host.as_raw_fd(), libc::F_GETFL) };
            let mut fl = host(r as isize)? | O_LARGEFILE;
            if e.host.host_nonblock {
                // The host descriptor is always non-blocking; the guest sees its own flag.
                fl &= !O_NONBLOCK;
                if e.host.guest_nonblock() {
                    fl |= O_NONBLOCK;
                }
            }
            Ok(fl)
        }
        F_SETFL => {
            let mut fl = a[2] & !O_LARGEFILE;
            if e.host.host_nonblock {
                fl |= O_NONBLOCK;
            }
            // SAFETY: F_SETFL on a descriptor we hold.
            let r = host(unsafe { libc::fcntl(e.host.as_raw_fd(), libc::F_SETFL, fl as i32) } as isize)?;
            e.host.nonblock.set(a[2] & O_NONBLOCK != 0);
            Ok(r)
        }
        _ => Err(EINVAL),
    }
}

fn sys_ioctl(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let fd = host_fd(p, a[0])?;
    if a[1] == FIONBIO {
        // The guest's O_NONBLOCK, as F_SETFL sets it.
        let on = p.aspace.read_u32(a[2]).map_err(efault)? != 0;
        let e = p.fds.get(a[0]).ok_or(EBADF)?;
        if !e.host.host_nonblock {
            let v: libc::c_int = on.into();
            // SAFETY: FIONBIO reads one int from our local.
            host(unsafe { libc::ioctl(fd, libc::FIONBIO, &v) } as isize)?;
        }
        e.host.nonblock.set(on);
        return Ok(0);
    }
    let size = match a[1] {
        TCGETS => 36,
        TIOCGWINSZ => 8,
        TIOCGPGRP | FIONREAD => 4,
        _ => {
            *m.ioctl_unknown.entry(a[1]).or_default() += 1;
            return Err(ENOTTY);
        }
    };
    let mut buf = [0u8; 64];
    // SAFETY: each request writes at most `size` ≤ 64 bytes into our buffer (the
    // structures have the same layout on i386 and x86-64).
    let r = unsafe { libc::ioctl(fd, u64::from(a[1]), buf.as_mut_ptr()) };
    if r < 0 {
        return Err(host_errno());
    }
    p.aspace.write_bytes(a[2], &buf[..size]).map_err(efault)?;
    Ok(r as u32)
}

/// `getdents` on a directory of morph's own, if guest `fd` is one.
fn special_getdents(m: &Machine, p: &mut Process, a: &[u32; 6], wide: bool) -> Option<SysResult> {
    special_dir(p, a[0])?;
    let mut buf = vec![0u8; a[2].min(1 << 20) as usize];
    let n = match special::getdents(m, p, special_dir(p, a[0])?, &mut buf, wide) {
        Ok(n) => n,
        Err(e) => return Some(Err(e)),
    };
    Some(p.aspace.write_bytes(a[1], &buf[..n]).map_err(efault).map(|_| n as u32))
}

fn sys_getdents64(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    if let Some(r) = special_getdents(m, p, a, true) {
        return r;
    }
    let fd = host_fd(p, a[0])?;
    p.aspace.prepare_write(a[1], a[2]).map_err(efault)?;
    // SAFETY: linux_dirent64 has the same layout on both sides; the buffer is checked.
    host(unsafe { libc::syscall(libc::SYS_getdents64, fd, p.aspace.host_ptr(a[1]), a[2] as usize) } as isize)
}

/// The old `getdents` (`struct linux_dirent`, 32-bit inode and offset): the host's
/// `linux_dirent64` records, converted (an old record is never longer than its new form).
fn sys_getdents(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    if let Some(r) = special_getdents(m, p, a, false) {
        return r;
    }
    let fd = host_fd(p, a[0])?;
    let len = a[2].min(1 << 20) as usize;
    p.aspace.prepare_write(a[1], a[2]).map_err(efault)?;
    let mut wide = vec![0u8; len];
    // SAFETY: reading host records into our buffer of the given size.
    let n = host(unsafe { libc::syscall(libc::SYS_getdents64, fd, wide.as_mut_ptr(), len) } as isize)? as usize;
    let mut out = Vec::with_capacity(n);
    let mut i = 0;
    while i + 19 <= n {
        let ino = u64::from_le_bytes(wide[i..i + 8].try_into().unwrap_or_default());
        let off = u64::from_le_bytes(wide[i + 8..i + 16].try_into().unwrap_or_default());
        let reclen = usize::from(u16::from_le_bytes([wide[i + 16], wide[i + 17]]));
        if reclen < 20 {
            break; // not a record the kernel makes
        }
        let typ = wide[i + 18];
        let name_area = &wide[i + 19..(i + reclen).min(n)];
        let name = &name_area[..name_area.iter().position(|&b| b == 0).unwrap_or(name_area.len())];
        if ino > u64::from(u32::MAX) {
            return Err(EOVERFLOW);
        }
        let rec = (10 + name.len() + 2).next_multiple_of(4);
        let start = out.len();
        out.resize(start + rec, 0);
        let r = &mut out[start..];
        r[0..4].copy_from_slice(&(ino as u32).to_le_bytes());
        r[4..8].copy_from_slice(&(off as u32).to_le_bytes());
        r[8..10].copy_from_slice(&(rec as u16).to_le_bytes());
        r[10..10 + name.len()].copy_from_slice(name);
        r[rec - 1] = typ;
        i += reclen;
    }
    p.aspace.write_bytes(a[1], &out).map_err(efault)?;
    Ok(out.len() as u32)
}

fn sys_umask(_: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let old = p.umask;
    p.umask = a[0] & 0o777;
    Ok(old)
}

fn sys_getcwd(_: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let mut s = p.cwd.clone().into_bytes();
    s.push(0);
    if s.len() > a[1] as usize {
        return Err(ERANGE);
    }
    p.aspace.write_bytes(a[0], &s).map_err(efault)?;
    Ok(s.len() as u32)
}

fn sys_chdir(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let path = read_path(p, a[0])?;
    p.cwd = match special::resolve(m, p, &p.cwd, &path, true)? {
        Resolved::Path(abs) => {
            let fd = m.vfs.open("/", &abs, libc::O_PATH | libc::O_DIRECTORY, 0)?;
            m.vfs.guest_path_of(&fd)?
        }
        Resolved::Node(Node::Dir(d)) => d,
        Resolved::Node(Node::Fd(e)) => dir_of_entry(m, &e)?,
        Resolved::Node(_) => return Err(ENOTDIR),
    };
    Ok(0)
}

/// The guest path of the directory an open file description is (for `fchdir`).
fn dir_of_entry(m: &Machine, e: &FdEntry) -> Result<String, Errno> {
    match &e.host.kind {
        FileKind::Dir(d) => Ok(d.path.clone()),
        FileKind::Host => {
            let st = host_stat_fd(e.host.as_raw_fd())?;
            if st.st_mode & libc::S_IFMT != libc::S_IFDIR {
                return Err(ENOTDIR);
            }
            m.vfs.guest_path_of(e.host.as_ref())
        }
        _ => Err(ENOTDIR),
    }
}

fn sys_fchdir(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let e = p.fds.get(a[0]).ok_or(EBADF)?.clone();
    p.cwd = dir_of_entry(m, &e)?;
    Ok(0)
}

fn readlink_common(m: &Machine, p: &mut Process, dir: &str, path: &[u8], buf: u32, size: u32) -> SysResult {
    if size as i32 <= 0 {
        return Err(EINVAL);
    }
    let target = match special::resolve(m, p, dir, path, false)? {
        Resolved::Node(Node::Link(_, t, _)) => t,
        Resolved::Node(_) => return Err(EINVAL),
        Resolved::Path(abs) => {
            let (dir, name) = m.vfs.parent("/", &abs)?;
            let mut buf = vec![0u8; 4096];
            // SAFETY: readlinkat into our buffer of the given size.
            let n = unsafe { libc::readlinkat(dir.as_raw_fd(), name.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
            if n < 0 {
                return Err(host_errno());
            }
            buf.truncate(n as usize);
            buf
        }
    };
    let n = target.len().min(size as usize);
    p.aspace.write_bytes(buf, &target[..n]).map_err(efault)?;
    Ok(n as u32)
}

fn sys_readlink(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let path = read_path(p, a[0])?;
    let cwd = p.cwd.clone();
    readlink_common(m, p, &cwd, &path, a[1], a[2])
}

fn sys_readlinkat(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let path = read_path(p, a[1])?;
    let dir = at_dir(m, p, a[0], &path)?;
    readlink_common(m, p, &dir, &path, a[2], a[3])
}

/// Opens a guest path as `O_PATH` (following or not the last symlink) for the
/// stat/access family.
fn open_path(m: &Machine, dir: &str, path: &[u8], follow: bool) -> Result<OwnedFd, Errno> {
    let mut flags = libc::O_PATH;
    if !follow {
        flags |= libc::O_NOFOLLOW;
    }
    m.vfs.open(dir, path, flags, 0)
}

fn host_stat_fd(fd: i32) -> Result<libc::stat, Errno> {
    // SAFETY: an all-zero stat is a valid value to be overwritten.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstatat with AT_EMPTY_PATH on a descriptor we hold, into a local struct.
    let r = unsafe { libc::fstatat(fd, c"".as_ptr(), &mut st, libc::AT_EMPTY_PATH) };
    if r != 0 {
        return Err(host_errno());
    }
    Ok(st)
}

/// What a guest path names, for the calls that look at or change its metadata.
fn path_object(m: &Machine, p: &Process, dir: &str, path: &[u8], follow: bool) -> Result<Object, Errno> {
    match special::resolve(m, p, dir, path, follow)? {
        Resolved::Path(abs) => open_path(m, "/", &abs, follow).map(Object::Host),
        Resolved::Node(n) => special::object(n),
    }
}

fn stat_of(o: &Object) -> Result<libc::stat, Errno> {
    match o {
        Object::Host(fd) | Object::Device(fd) => host_stat_fd(fd.as_raw_fd()),
        Object::Synthetic(st) => Ok(*st),
    }
}

/// A host object whose metadata the guest may change: not one of morph's own, not a
/// device (a guest running as root must not change the host's device nodes, such as
/// the `/dev/null` it may have inherited as a standard descriptor), and held by the
/// root (a host file outside it, behind an inherited descriptor, or a host pipe is
/// the host's: its mode and times are not the guest's to change, nor is it linked in).
fn changeable(vfs: &crate::vfs::Vfs, o: Object) -> Result<OwnedFd, Errno> {
    match o {
        Object::Host(fd) => {
            let t = host_stat_fd(fd.as_raw_fd())?.st_mode & libc::S_IFMT;
            if t == libc::S_IFCHR || t == libc::S_IFBLK || !vfs.holds(&fd) {
                return Err(EPERM);
            }
            Ok(fd)
        }
        Object::Device(_) | Object::Synthetic(_) => Err(EPERM),
    }
}

/// The host descriptor behind guest `fd` if its metadata may change (see [`changeable`]).
fn changeable_fd(m: &Machine, p: &Process, fd: u32) -> Result<OwnedFd, Errno> {
    changeable(&m.vfs, special::object_of_fd(p.fds.get(fd).ok_or(EBADF)?)?)
}

fn stat_path(m: &Machine, p: &Process, dir: &str, path: &[u8], follow: bool) -> Result<libc::stat, Errno> {
    stat_of(&path_object(m, p, dir, path, follow)?)
}

/// `fstat` of guest `fd`.
fn fd_stat(m: &mut Machine, p: &Process, fd: u32) -> Result<libc::stat, Errno> {
    let e = p.fds.get(fd).ok_or(EBADF)?;
    if !matches!(e.host.kind, FileKind::Host) {
        return stat_of(&special::object_of_fd(e)?);
    }
    sync_before_read(m, p, fd); // stores through shared mappings update the mtime
    host_stat_fd(e.host.as_raw_fd())
}

fn put_stat64(p: &mut Process, ptr: u32, st: &libc::stat) -> SysResult {
    p.aspace.write_bytes(ptr, &stat64_bytes(st)).map_err(efault)?;
    Ok(0)
}

fn put_stat(p: &mut Process, ptr: u32, st: &libc::stat) -> SysResult {
    let b = stat_bytes(st).ok_or(EOVERFLOW)?;
    p.aspace.write_bytes(ptr, &b).map_err(efault)?;
    Ok(0)
}

fn sys_stat64(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let path = read_path(p, a[0])?;
    let st = stat_path(m, p, &p.cwd.clone(), &path, true)?;
    put_stat64(p, a[1], &st)
}

fn sys_lstat64(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let path = read_path(p, a[0])?;
    let st = stat_path(m, p, &p.cwd.clone(), &path, false)?;
    put_stat64(p, a[1], &st)
}

fn sys_fstat64(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let st = fd_stat(m, p, a[0])?;
    put_stat64(p, a[1], &st)
}

fn sys_stat(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let path = read_path(p, a[0])?;
    let st = stat_path(m, p, &p.cwd.clone(), &path, true)?;
    put_stat(p, a[1], &st)
}

fn sys_lstat(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let path = read_path(p, a[0])?;
    let st = stat_path(m, p, &p.cwd.clone(), &path, false)?;
    put_stat(p, a[1], &st)
}

fn sys_fstat(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let st = fd_stat(m, p, a[0])?;
    put_stat(p, a[1], &st)
}

/// What a `*at` call with `AT_EMPTY_PATH` or a path refers to.
fn at_target(m: &Machine, p: &Process, dirfd: u32, path: &[u8], flags: u32) -> Result<Object, Errno> {
    if path.is_empty() {
        if flags & AT_EMPTY_PATH == 0 {
            return Err(ENOENT);
        }
        if dirfd as i32 == AT_FDCWD {
            return path_object(m, p, &p.cwd, b".", true); // the working directory itself
        }
        return special::object_of_fd(p.fds.get(dirfd).ok_or(EBADF)?);
    }
    let dir = at_dir(m, p, dirfd, path)?;
    path_object(m, p, &dir, path, flags & AT_SYMLINK_NOFOLLOW == 0)
}

fn sys_fstatat64(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let path = read_path(p, a[1])?;
    let st = stat_of(&at_target(m, p, a[0], &path, a[3])?)?;
    put_stat64(p, a[2], &st)
}

fn sys_statx(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let path = read_path(p, a[1])?;
    let fd = match at_target(m, p, a[0], &path, a[2])? {
        Object::Host(fd) | Object::Device(fd) => fd,
        Object::Synthetic(st) => {
            p.aspace.write_bytes(a[4], &statx_bytes(&st)).map_err(efault)?;
            return Ok(0);
        }
    };
    let mut buf = [0u8; 256];
    // SAFETY: statx with AT_EMPTY_PATH into a 256-byte buffer (struct statx is the same
    // on every architecture).
    let r = unsafe {
        libc::syscall(libc::SYS_statx, fd.as_raw_fd(), c"".as_ptr(), libc::AT_EMPTY_PATH, a[3], buf.as_mut_ptr())
    };
    if r != 0 {
        return Err(host_errno());
    }
    p.aspace.write_bytes(a[4], &buf).map_err(efault)?;
    Ok(0)
}

fn access_common(m: &Machine, p: &Process, dirfd: u32, path: &[u8], mode: u32, flags: u32) -> SysResult {
    if mode & !7 != 0 {
        return Err(EINVAL);
    }
    let fd = match at_target(m, p, dirfd, path, flags)? {
        Object::Host(fd) | Object::Device(fd) => fd,
        Object::Synthetic(st) => return special::access(&st, mode).map(|_| 0),
    };
    // SAFETY: faccessat2 on a descriptor we hold with an empty path.
    let r = unsafe { libc::syscall(libc::SYS_faccessat2, fd.as_raw_fd(), c"".as_ptr(), mode, libc::AT_EMPTY_PATH) };
    host(r as isize)
}

fn sys_access(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let path = read_path(p, a[0])?;
    access_common(m, p, AT_FDCWD as u32, &path, a[1], 0)
}

fn sys_faccessat(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let path = read_path(p, a[1])?;
    access_common(m, p, a[0], &path, a[2], a[3] & AT_SYMLINK_NOFOLLOW)
}

fn unlink_common(m: &mut Machine, p: &Process, dir: &str, path: &[u8], flags: u32) -> SysResult {
    let (d, name) = m.vfs.parent(dir, path)?;
    let f = if flags & AT_REMOVEDIR != 0 { libc::AT_REMOVEDIR } else { 0 };
    if let Some(e) = crate::vfs::Vfs::rmdir_not_a_name(path).filter(|_| f != 0) {
        return Err(e);
    }
    let _ = p;
    // A cached file that loses its last name and is mapped by no one leaves the cache
    // (its descriptor there would keep it on disk).
    let cached = if f == 0 { cached_file_at(m, &d, &name) } else { None };
    // SAFETY: unlinkat on a directory descriptor we hold with a C string name.
    let r = host(unsafe { libc::unlinkat(d.as_raw_fd(), name.as_ptr(), f) } as isize)?;
    if let Some(key) = cached {
        m.cache.forget_if_unlinked(&m.phys, key);
    }
    Ok(r)
}

fn sys_unlink(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let path = read_path(p, a[0])?;
    unlink_common(m, p, &p.cwd.clone(), &path, 0)
}

fn sys_unlinkat(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let path = read_path(p, a[1])?;
    let dir = at_dir(m, p, a[0], &path)?;
    unlink_common(m, p, &dir, &path, a[2])
}

fn sys_rmdir(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let path = read_path(p, a[0])?;
    unlink_common(m, p, &p.cwd.clone(), &path, AT_REMOVEDIR)
}

fn sys_mkdir(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let path = read_path(p, a[0])?;
    let (d, name) = m.vfs.parent(&p.cwd, &path)?;
    // SAFETY: mkdirat on a directory descriptor we hold with a C string name.
    host(unsafe { libc::mkdirat(d.as_raw_fd(), name.as_ptr(), a[1] & 0o7777 & !p.umask) } as isize)
}

/// The parent directory and last component of a `*at` path.
fn at_parent(m: &Machine, p: &Process, dirfd: u32, path: &[u8]) -> Result<(OwnedFd, std::ffi::CString), Errno> {
    let dir = at_dir(m, p, dirfd, path)?;
    m.vfs.parent(&dir, path)
}

/// The page-cache key of the file `name` in directory `dir`, if the cache holds it.
fn cached_file_at(m: &Machine, dir: &OwnedFd, name: &std::ffi::CStr) -> Option<FileKey> {
    // SAFETY: an all-zero stat is a valid value to be overwritten.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstatat on a directory descriptor we hold, into a local struct.
    let r = unsafe { libc::fstatat(dir.as_raw_fd(), name.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) };
    let key = FileKey { dev: st.st_dev, ino: st.st_ino };
    (r == 0 && m.cache.is_cached(key)).then_some(key)
}

fn rename_common(m: &mut Machine, p: &Process, a: [u32; 4]) -> SysResult {
    let (old, new) = (read_path(p, a[1])?, read_path(p, a[3])?);
    let (od, on) = at_parent(m, p, a[0], &old)?;
    let (nd, nn) = at_parent(m, p, a[2], &new)?;
    // A cached file that the rename replaces loses its last name, as with unlink.
    let replaced = cached_file_at(m, &nd, &nn);
    // SAFETY: renameat on directory descriptors we hold with C string names.
    let r = host(unsafe { libc::renameat(od.as_raw_fd(), on.as_ptr(), nd.as_raw_fd(), nn.as_ptr()) } as isize)?;
    if let Some(key) = replaced {
        m.cache.forget_if_unlinked(&m.phys, key);
    }
    Ok(r)
}

fn sys_rename(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    rename_common(m, p, [AT_FDCWD as u32, a[0], AT_FDCWD as u32, a[1]])
}

fn sys_renameat(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    rename_common(m, p, [a[0], a[1], a[2], a[3]])
}

fn link_common(m: &Machine, p: &Process, a: [u32; 5]) -> SysResult {
    if a[4] & !(AT_SYMLINK_FOLLOW | AT_EMPTY_PATH) != 0 {
        return Err(EINVAL);
    }
    let (old, new) = (read_path(p, a[1])?, read_path(p, a[3])?);
    let (nd, nn) = at_parent(m, p, a[2], &new)?;
    // The source is opened inside the root (following a final symlink only when asked).
    let src =
        at_target(m, p, a[0], &old, if a[4] & AT_SYMLINK_FOLLOW != 0 { a[4] } else { a[4] | AT_SYMLINK_NOFOLLOW })?;
    let src = changeable(&m.vfs, src)?;
    // Link through the descriptor's /proc/self/fd entry: unlike AT_EMPTY_PATH this needs
    // no privilege, and it names exactly the object opened inside the root.
    let via = std::ffi::CString::new(format!("/proc/self/fd/{}", src.as_raw_fd())).map_err(|_| EINVAL)?;
    // SAFETY: linkat with C strings and a directory descriptor we hold.
    host(unsafe { libc::linkat(libc::AT_FDCWD, via.as_ptr(), nd.as_raw_fd(), nn.as_ptr(), libc::AT_SYMLINK_FOLLOW) }
        as isize)
}

fn sys_link(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    link_common(m, p, [AT_FDCWD as u32, a[0], AT_FDCWD as u32, a[1], 0])
}

fn sys_linkat(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    link_common(m, p, [a[0], a[1], a[2], a[3], a[4]])
}

fn symlink_common(m: &Machine, p: &Process, target: u32, dirfd: u32, path: u32) -> SysResult {
    let target = read_path(p, target)?;
    let path = read_path(p, path)?;
    let (d, name) = at_parent(m, p, dirfd, &path)?;
    let t = std::ffi::CString::new(target).map_err(|_| EINVAL)?;
    // SAFETY: symlinkat with C strings into a directory descriptor we hold. The target is
    // stored as given; it is resolved inside the root whenever it is followed.
    host(unsafe { libc::symlinkat(t.as_ptr(), d.as_raw_fd(), name.as_ptr()) } as isize)
}

fn sys_symlink(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    symlink_common(m, p, a[0], AT_FDCWD as u32, a[1])
}

fn sys_symlinkat(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    symlink_common(m, p, a[0], a[1], a[2])
}

/// `mknod` makes FIFOs and regular files only: a device node would be a way out of the
/// sandbox (and needs privileges on Linux too).
fn mknod_common(m: &mut Machine, p: &mut Process, dirfd: u32, path: u32, mode: u32) -> SysResult {
    let path = read_path(p, path)?;
    let kind = mode & libc::S_IFMT;
    if kind != 0 && kind != libc::S_IFIFO && kind != libc::S_IFREG {
        return Err(EPERM);
    }
    let (d, name) = at_parent(m, p, dirfd, &path)?;
    let mode = (mode & libc::S_IFMT) | (mode & 0o7777 & !p.umask);
    // SAFETY: mknodat on a directory descriptor we hold with a C string name; no device.
    host(unsafe { libc::mknodat(d.as_raw_fd(), name.as_ptr(), mode, 0) } as isize)
}

fn sys_mknod(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    mknod_common(m, p, AT_FDCWD as u32, a[0], a[1])
}

fn sys_mknodat(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    mknod_common(m, p, a[0], a[1], a[2])
}

fn sys_mkdirat(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let path = read_path(p, a[1])?;
    let (d, name) = at_parent(m, p, a[0], &path)?;
    // SAFETY: mkdirat on a directory descriptor we hold with a C string name.
    host(unsafe { libc::mkdirat(d.as_raw_fd(), name.as_ptr(), a[2] & 0o7777 & !p.umask) } as isize)
}

/// chmod of an object already opened (as `O_PATH`) inside the root, through its
/// `/proc/self/fd` link (fchmod does not take `O_PATH` descriptors).
fn chmod_fd(fd: &OwnedFd, mode: u32) -> SysResult {
    let path = std::ffi::CString::new(format!("/proc/self/fd/{}", fd.as_raw_fd())).map_err(|_| EINVAL)?;
    // SAFETY: chmod of a C string naming our own descriptor.
    host(unsafe { libc::chmod(path.as_ptr(), mode & 0o7777) } as isize)
}

fn sys_chmod(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let path = read_path(p, a[0])?;
    let fd = changeable(&m.vfs, path_object(m, p, &p.cwd, &path, true)?)?;
    chmod_fd(&fd, a[1])
}

fn sys_fchmodat(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let path = read_path(p, a[1])?;
    let fd = changeable(&m.vfs, at_target(m, p, a[0], &path, 0)?)?;
    chmod_fd(&fd, a[2])
}

fn sys_fchmod(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let fd = changeable_fd(m, p, a[0])?;
    // SAFETY: fchmod on a descriptor we hold.
    host(unsafe { libc::fchmod(fd.as_raw_fd(), a[1] & 0o7777) } as isize)
}

// ----- file system statistics ------------------------------------------------------------

/// The x86-64 kernel's `struct statfs`, as 64-bit words: type, bsize, blocks, bfree,
/// bavail, files, ffree, fsid, namelen, frsize, flags, spare[4].
type HostStatfs = [u64; 15];

/// The file-system statistics of the host object behind `o`, or of morph's made-up file
/// systems (procfs for /proc, tmpfs for /dev).
fn statfs_of(o: &Object) -> Result<HostStatfs, Errno> {
    let mut st: HostStatfs = [0; 15];
    match o {
        Object::Host(fd) | Object::Device(fd) => {
            // SAFETY: fstatfs on a descriptor we hold into a buffer of the kernel's size.
            if unsafe { libc::syscall(libc::SYS_fstatfs, fd.as_raw_fd(), st.as_mut_ptr()) } != 0 {
                return Err(host_errno());
            }
        }
        Object::Synthetic(s) => {
            const PROC_SUPER_MAGIC: u64 = 0x9fa0;
            const TMPFS_MAGIC: u64 = 0x0102_1994;
            st[0] = if s.st_dev == special::PROC_DEV { PROC_SUPER_MAGIC } else { TMPFS_MAGIC };
            st[1] = 4096;
            st[8] = 255;
            st[9] = 4096;
        }
    }
    Ok(st)
}

/// The i386 `struct statfs64` (84 bytes, packed) or, if not `wide`, `struct statfs` (64
/// bytes; `EOVERFLOW` if a count does not fit in 32 bits).
fn statfs_bytes(st: &HostStatfs, wide: bool) -> Result<Vec<u8>, Errno> {
    let mut b = Vec::with_capacity(84);
    let w32 = |b: &mut Vec<u8>, v: u64| b.extend_from_slice(&(v as u32).to_le_bytes());
    w32(&mut b, st[0]);
    w32(&mut b, st[1]);
    for &v in &st[2..7] {
        if wide {
            b.extend_from_slice(&v.to_le_bytes());
        } else if v > u64::from(u32::MAX) && v != u64::MAX {
            return Err(EOVERFLOW);
        } else {
            w32(&mut b, v);
        }
    }
    b.extend_from_slice(&st[7].to_le_bytes()); // fsid: two 32-bit words
    for &v in &st[8..11] {
        w32(&mut b, v);
    }
    b.resize(if wide { 84 } else { 64 }, 0);
    Ok(b)
}

fn sys_statfs(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let path = read_path(p, a[0])?;
    let st = statfs_of(&path_object(m, p, &p.cwd, &path, true)?)?;
    p.aspace.write_bytes(a[1], &statfs_bytes(&st, false)?).map_err(efault)?;
    Ok(0)
}

fn sys_fstatfs(_: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let st = statfs_of(&special::object_of_fd(p.fds.get(a[0]).ok_or(EBADF)?)?)?;
    p.aspace.write_bytes(a[1], &statfs_bytes(&st, false)?).map_err(efault)?;
    Ok(0)
}

fn sys_statfs64(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    if a[1] != 84 {
        return Err(EINVAL);
    }
    let path = read_path(p, a[0])?;
    let st = statfs_of(&path_object(m, p, &p.cwd, &path, true)?)?;
    p.aspace.write_bytes(a[2], &statfs_bytes(&st, true)?).map_err(efault)?;
    Ok(0)
}

fn sys_fstatfs64(_: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    if a[1] != 84 {
        return Err(EINVAL);
    }
    let st = statfs_of(&special::object_of_fd(p.fds.get(a[0]).ok_or(EBADF)?)?)?;
    p.aspace.write_bytes(a[2], &statfs_bytes(&st, true)?).map_err(efault)?;
    Ok(0)
}

// ----- extended attributes --------------------------------------------------------------

/// Extended attributes: the guest's file system has none (`EOPNOTSUPP`, which `ls` and
/// `cp` take as "no ACL, no security label"), so the host's labels never show and
/// never vary a run. The object must exist.
const EOPNOTSUPP: Errno = 95;

fn sys_getxattr(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let path = read_path(p, a[0])?;
    path_object(m, p, &p.cwd, &path, true)?;
    Err(EOPNOTSUPP)
}

fn sys_lgetxattr(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let path = read_path(p, a[0])?;
    path_object(m, p, &p.cwd, &path, false)?;
    Err(EOPNOTSUPP)
}

fn sys_fgetxattr(_: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    p.fds.get(a[0]).ok_or(EBADF)?;
    Err(EOPNOTSUPP)
}

// ----- file times ----------------------------------------------------------------------

/// Which clock values a `utime*` call sets: `None` = both now, else (atime, mtime) as
/// host timespecs (`UTIME_NOW` and `UTIME_OMIT` pass through).
type Times = Option<[libc::timespec; 2]>;

/// Reads the two timestamps at `ptr`: `timespec` with 32- or 64-bit seconds, `timeval`
/// (microseconds) or `utimbuf` (whole seconds).
#[derive(Clone, Copy, PartialEq, Eq)]
enum TimeFormat {
    Timespec32,
    Timespec64,
    Timeval,
    Utimbuf,
}

fn read_times(p: &Process, ptr: u32, f: TimeFormat) -> Result<Times, Errno> {
    if ptr == 0 {
        return Ok(None);
    }
    let mut t = [libc::timespec { tv_sec: 0, tv_nsec: 0 }; 2];
    for (i, ts) in t.iter_mut().enumerate() {
        let i = i as u32;
        let (sec, frac) = match f {
            TimeFormat::Timespec32 | TimeFormat::Timeval => {
                let b = ptr.wrapping_add(8 * i);
                let sec = i64::from(p.aspace.read_u32(b).map_err(efault)? as i32);
                (sec, i64::from(p.aspace.read_u32(b.wrapping_add(4)).map_err(efault)? as i32))
            }
            TimeFormat::Timespec64 => {
                let b = ptr.wrapping_add(16 * i);
                let sec = p.aspace.read_u64(b).map_err(efault)? as i64;
                (sec, i64::from(p.aspace.read_u32(b.wrapping_add(8)).map_err(efault)? as i32))
            }
            TimeFormat::Utimbuf => (i64::from(p.aspace.read_u32(ptr.wrapping_add(4 * i)).map_err(efault)? as i32), 0),
        };
        let nsec = match f {
            TimeFormat::Timeval => {
                if !(0..1_000_000).contains(&frac) {
                    return Err(EINVAL);
                }
                frac * 1000
            }
            _ => frac,
        };
        let special = nsec == libc::UTIME_NOW || nsec == libc::UTIME_OMIT;
        if !special && !(0..1_000_000_000).contains(&nsec) {
            return Err(EINVAL);
        }
        *ts = libc::timespec { tv_sec: sec, tv_nsec: nsec };
    }
    Ok(Some(t))
}

/// Sets the times of what (`dirfd`, `path`, `flags`) names, resolved inside the root.
fn utimes_common(m: &Machine, p: &Process, dirfd: u32, path: Option<&[u8]>, times: Times, flags: u32) -> SysResult {
    if flags & !(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH) != 0 {
        return Err(EINVAL);
    }
    let tp = times.as_ref().map_or(std::ptr::null(), |t| t.as_ptr());
    let Some(path) = path else {
        // utimensat(fd, NULL, ...): the descriptor itself.
        let fd = changeable_fd(m, p, dirfd)?;
        // SAFETY: utimensat on a descriptor we hold, with a NULL path and valid times.
        return host(unsafe { libc::syscall(libc::SYS_utimensat, fd.as_raw_fd(), 0usize, tp, 0) } as isize);
    };
    if flags & AT_SYMLINK_NOFOLLOW != 0 && !path.is_empty() {
        // The name itself: its parent inside the root, the last component not followed.
        let dir = at_dir(m, p, dirfd, path)?;
        let abs = match special::resolve(m, p, &dir, path, false)? {
            Resolved::Path(abs) => abs,
            Resolved::Node(n) => return changeable(&m.vfs, special::object(n)?).map(|_| 0),
        };
        let (d, name) = m.vfs.parent("/", &abs)?;
        // SAFETY: utimensat on a directory descriptor we hold, a C string and valid times.
        return host(unsafe { libc::utimensat(d.as_raw_fd(), name.as_ptr(), tp, libc::AT_SYMLINK_NOFOLLOW) } as isize);
    }
    let fd = changeable(&m.vfs, at_target(m, p, dirfd, path, flags & AT_EMPTY_PATH)?)?;
    // Through the descriptor's /proc/self/fd entry, which names exactly the object opened
    // inside the root (an O_PATH descriptor cannot be given to utimensat directly).
    let via = std::ffi::CString::new(format!("/proc/self/fd/{}", fd.as_raw_fd())).map_err(|_| EINVAL)?;
    // SAFETY: utimensat with a C string and valid times.
    host(unsafe { libc::utimensat(libc::AT_FDCWD, via.as_ptr(), tp, 0) } as isize)
}

fn sys_utimensat(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let path = if a[1] == 0 { None } else { Some(read_path(p, a[1])?) };
    let times = read_times(p, a[2], TimeFormat::Timespec32)?;
    utimes_common(m, p, a[0], path.as_deref(), times, a[3])
}

fn sys_utimensat_time64(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let path = if a[1] == 0 { None } else { Some(read_path(p, a[1])?) };
    let times = read_times(p, a[2], TimeFormat::Timespec64)?;
    utimes_common(m, p, a[0], path.as_deref(), times, a[3])
}

fn sys_futimesat(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let path = if a[1] == 0 { None } else { Some(read_path(p, a[1])?) };
    let times = read_times(p, a[2], TimeFormat::Timeval)?;
    utimes_common(m, p, a[0], path.as_deref(), times, 0)
}

fn sys_utimes(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let path = read_path(p, a[0])?;
    let times = read_times(p, a[1], TimeFormat::Timeval)?;
    utimes_common(m, p, AT_FDCWD as u32, Some(&path), times, 0)
}

fn sys_utime(m: &mut Machine, p: &mut Process, a: &[u32; 6]) -> SysResult {
    let path = read_path(p, a[0])?;
    let times = read_times(p, a[1], TimeFormat::Utimbuf)?;
    utimes_common(m, p, AT_FDCWD as u32, Some(&path), times, 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_are_sorted_and_unique() {
        for table in TABLES {
            for w in table.windows(2) {
                assert!(w[0].nr < w[1].nr, "{} before {}", w[0].name, w[1].name);
            }
        }
        assert_eq!(lookup(4).map(|s| s.name), Some("write"));
        assert_eq!(lookup(2).map(|s| s.name), Some("fork"));
        assert!(lookup(0).is_none());
    }
}
