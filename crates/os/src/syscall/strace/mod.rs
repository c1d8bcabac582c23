//! `--strace`: one line per system call, in strace's format.
//!
//! `[pid N] name(args) = result`: arguments by the table row's formats (see
//! [`Syscall::args`]), strings quoted and escaped as strace does and cut at
//! [`STRING_MAX`] bytes (`"..."...`), flags by name (`O_RDONLY|O_CLOEXEC`,
//! `PROT_READ|PROT_EXEC`, `MAP_PRIVATE|MAP_ANONYMOUS`, `CLONE_VM|...|SIGCHLD`),
//! `NULL` and `AT_FDCWD` by name, addresses in hex; an error as
//! `-1 ENOENT (No such file or directory)`; a call that ends the process as `= ?`; a
//! call that blocks as `<unfinished ...>` (it is traced again when it is re-run). Every
//! i386 number has its name (`names.rs`, from the kernel's table), implemented or not.

use std::fmt::Write as _;

use crate::syscall::common::*;

mod names;

/// Bytes of a string or buffer shown before `...` (strace's `-s` default).
pub const STRING_MAX: usize = 32;

/// The name of system call `nr`: the kernel's, or `syscall_NNN` for an unused number.
pub fn name_of(nr: u32) -> String {
    match names::NAMES.get(nr as usize) {
        Some(n) if !n.is_empty() => n.to_string(),
        _ => format!("syscall_{nr}"),
    }
}

/// One argument as traced before the call.
enum Arg {
    Text(String),
    /// Memory the call fills, shown after it (a pointer if it failed).
    Out(Out, u32, u32),
}

/// What a call writes to guest memory.
#[derive(Clone, Copy)]
enum Out {
    /// A buffer; the result is its length.
    Buf,
    /// An array of (second value) iovecs; the result is the bytes spread over them.
    Iov,
    /// An i386 `struct stat64`.
    Stat64,
    /// A 64-bit number (`_llseek`'s result).
    U64,
    /// Two descriptors (`pipe`'s).
    FdPair,
}

/// A call being traced: what is known before the handler runs.
pub(super) struct Call {
    pid: u32,
    name: String,
    args: Vec<Arg>,
}

impl Call {
    /// Formats the arguments of call `nr` (the table's row, if it has one) before the
    /// handler runs (an `execve` string is gone after).
    pub(super) fn before(p: &Process, nr: u32, row: Option<&Syscall>, a: &[u32; 6]) -> Call {
        let name = row.map_or_else(|| name_of(nr), |s| s.name.to_string());
        let fmt = row.map_or("", |s| s.args);
        let args = if name == "clone" { clone_args(a) } else { format_args(p, fmt, a) };
        Call { pid: p.tid, name, args }
    }

    /// The whole line, once the handler returned `res`.
    pub(super) fn after(self, p: &Process, res: &SysResult) -> String {
        let args: Vec<String> = self
            .args
            .into_iter()
            .map(|a| match (a, res) {
                (Arg::Text(s), _) => s,
                (Arg::Out(kind, ptr, extra), Ok(n)) => shown_out(p, kind, ptr, extra, *n),
                (Arg::Out(_, ptr, _), Err(_)) => pointer(ptr),
            })
            .collect();
        let head = format!("[pid {}] {}({})", self.pid, self.name, args.join(", "));
        let ret = match res {
            Err(ERESTARTSYS) => return format!("{head} <unfinished ...>"),
            _ if p.exit.is_some() || matches!(self.name.as_str(), "exit" | "exit_group") => "?".to_string(),
            // sigreturn: the interrupted code's EAX, restored.
            Err(EJUSTRETURN) => (p.cpu.gpr[reg::EAX] as i32).to_string(),
            Ok(v) if returns_address(&self.name) => format!("{v:#x}"),
            Ok(v) if self.name == "umask" => octal(*v),
            Ok(v) => (*v as i32).to_string(),
            Err(e) => format!("-1 {} ({})", errno_name(*e), strerror(*e)),
        };
        format!("{head} = {ret}")
    }
}

/// What a call wrote, shown after it returned `n`.
fn shown_out(p: &Process, kind: Out, ptr: u32, extra: u32, n: u32) -> String {
    match kind {
        Out::Buf => buffer(p, ptr, n as usize),
        Out::Iov => iovecs(p, ptr, extra, Some(n as usize)),
        Out::Stat64 => stat64(p, ptr),
        Out::U64 => p.aspace.read_u64(ptr).map_or_else(|_| pointer(ptr), |v| format!("[{v}]")),
        Out::FdPair => match (p.aspace.read_u32(ptr), p.aspace.read_u32(ptr.wrapping_add(4))) {
            (Ok(r), Ok(w)) => format!("[{}, {}]", r as i32, w as i32),
            _ => pointer(ptr),
        },
    }
}

fn octal(v: u32) -> String {
    if v == 0 { "000".to_string() } else { format!("0{v:o}") }
}

/// Calls whose result is an address.
fn returns_address(name: &str) -> bool {
    matches!(name, "brk" | "mmap" | "mmap2" | "mremap" | "shmat")
}

/// Formats the arguments by their format letters (see [`Syscall::args`]): one argument
/// each, but `q` and `Q` take two (a 64-bit number, low or high word first), and an
/// argument that does not apply (the mode of an `open` without `O_CREAT`, the new
/// address of an `mremap` without `MREMAP_FIXED`) is left out, as strace does.
fn format_args(p: &Process, fmt: &str, a: &[u32; 6]) -> Vec<Arg> {
    let mut out = Vec::new();
    let mut j = 0;
    let mut skip_next = false;
    for c in fmt.chars() {
        let Some(&v) = a.get(j) else { break };
        let next = a.get(j + 1).copied().unwrap_or(0);
        j += 1;
        if std::mem::take(&mut skip_next) {
            continue;
        }
        let text = match c {
            'd' => format!("{}", v as i32),
            'f' if v as i32 == AT_FDCWD => "AT_FDCWD".to_string(),
            'f' => format!("{}", v as i32),
            'u' => format!("{v}"),
            'o' => octal(v),
            's' => match p.aspace.read_cstr(v, 4096) {
                Ok(s) => escaped(&s, s.len(), usize::MAX),
                Err(_) => pointer(v),
            },
            'b' | 'v' | 'S' | 'r' | 'i' => {
                let kind = match c {
                    'b' => Out::Buf,
                    'v' => Out::Iov,
                    'S' => Out::Stat64,
                    'i' => Out::FdPair,
                    _ => Out::U64,
                };
                out.push(Arg::Out(kind, v, next));
                continue;
            }
            'B' => buffer(p, v, next as usize),
            'V' => iovecs(p, v, next, None),
            'q' | 'Q' => {
                j += 1;
                let (lo, hi) = if c == 'q' { (v, next) } else { (next, v) };
                format!("{}", ((u64::from(hi) << 32) | u64::from(lo)) as i64)
            }
            'O' => {
                skip_next = v & (O_CREAT | O_TMPFILE) == 0;
                open_flags(v)
            }
            'R' => {
                skip_next = v & 2 == 0;
                bits(v, &[(1, "MREMAP_MAYMOVE"), (2, "MREMAP_FIXED"), (4, "MREMAP_DONTUNMAP")], Vec::new())
            }
            'P' => prot_flags(v),
            'M' => map_flags(v),
            'D' => madvise_advice(v),
            'C' => clone_flags(v),
            'A' => access_mode(v),
            'F' if v == 0 => "0".to_string(),
            'F' => bits(
                v,
                &[(0x100, "AT_SYMLINK_NOFOLLOW"), (0x800, "AT_NO_AUTOMOUNT"), (0x1000, "AT_EMPTY_PATH")],
                Vec::new(),
            ),
            'w' => match v {
                0 => "SEEK_SET".to_string(),
                1 => "SEEK_CUR".to_string(),
                2 => "SEEK_END".to_string(),
                3 => "SEEK_DATA".to_string(),
                4 => "SEEK_HOLE".to_string(),
                _ => v.to_string(),
            },
            'g' if v == 0 => "0".to_string(),
            'g' => format!("{:#x}", u64::from(v) * 4096),
            'a' => string_array(p, v).map_or_else(|| pointer(v), |s| format!("[{}]", s.join(", "))),
            'e' => string_array(p, v).map_or_else(|| pointer(v), |s| format!("{} /* {} vars */", pointer(v), s.len())),
            'p' => pointer(v),
            _ => format!("{v:#x}"),
        };
        out.push(Arg::Text(text));
    }
    out
}

/// The `count` i386 iovecs at `ptr`, each buffer shown (cut at [`STRING_MAX`]); after a
/// read, `filled` bytes spread over them in order.
fn iovecs(p: &Process, ptr: u32, count: u32, filled: Option<usize>) -> String {
    let mut left = filled.unwrap_or(usize::MAX);
    let mut parts = Vec::new();
    for i in 0..count.min(1024) {
        let (Ok(base), Ok(len)) = (p.aspace.read_u32(ptr + 8 * i), p.aspace.read_u32(ptr + 8 * i + 4)) else {
            return pointer(ptr);
        };
        let n = (len as usize).min(left);
        left -= n;
        parts.push(format!("{{iov_base={}, iov_len={len}}}", buffer(p, base, n)));
    }
    format!("[{}]", parts.join(", "))
}

/// An i386 `struct stat64`, as strace abbreviates it: the mode, and the size (the
/// device number for a device).
fn stat64(p: &Process, ptr: u32) -> String {
    let mut b = [0u8; 96];
    if p.aspace.read_bytes(ptr, &mut b).is_err() {
        return pointer(ptr);
    }
    let word = |o: usize| u32::from_le_bytes(b[o..o + 4].try_into().unwrap_or_default());
    let wide = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().unwrap_or_default());
    let mode = word(16);
    let ty = match mode & 0o170000 {
        0o140000 => "S_IFSOCK",
        0o120000 => "S_IFLNK",
        0o100000 => "S_IFREG",
        0o060000 => "S_IFBLK",
        0o040000 => "S_IFDIR",
        0o020000 => "S_IFCHR",
        0o010000 => "S_IFIFO",
        _ => "0",
    };
    let special = bits(mode & 0o7000, &[(0o4000, "S_ISUID"), (0o2000, "S_ISGID"), (0o1000, "S_ISVTX")], Vec::new());
    let mut m = ty.to_string();
    if mode & 0o7000 != 0 {
        m = format!("{m}|{special}");
    }
    m = format!("{m}|{}", octal(mode & 0o777));
    if matches!(ty, "S_IFCHR" | "S_IFBLK") {
        let rdev = wide(32);
        let major = ((rdev >> 8) & 0xfff) | ((rdev >> 32) & !0xfff);
        let minor = (rdev & 0xff) | ((rdev >> 12) & !0xff);
        let hex = |v: u64| if v == 0 { "0".to_string() } else { format!("{v:#x}") };
        format!("{{st_mode={m}, st_rdev=makedev({}, {}), ...}}", hex(major), hex(minor))
    } else {
        format!("{{st_mode={m}, st_size={}, ...}}", wide(44) as i64)
    }
}

/// The NULL-terminated array of guest strings at `ptr` (`execve`'s argv and envp), each
/// quoted and cut as strace does; `None` if it cannot be read.
fn string_array(p: &Process, ptr: u32) -> Option<Vec<String>> {
    let mut out = Vec::new();
    for i in 0..4096 {
        let s = p.aspace.read_u32(ptr.wrapping_add(4 * i)).ok()?;
        if s == 0 {
            return Some(out);
        }
        let b = p.aspace.read_cstr(s, 4096).ok()?;
        out.push(quoted(&b, b.len()));
    }
    Some(out)
}

/// i386 `clone(flags, stack, parent_tid, tls, child_tid)`, named as strace names them.
fn clone_args(a: &[u32; 6]) -> Vec<Arg> {
    vec![
        Arg::Text(format!("child_stack={}", pointer(a[1]))),
        Arg::Text(format!("flags={}", clone_flags(a[0]))),
        Arg::Text(format!("parent_tid={}", pointer(a[2]))),
        Arg::Text(format!("tls={}", pointer(a[3]))),
        Arg::Text(format!("child_tidptr={}", pointer(a[4]))),
    ]
}

fn pointer(v: u32) -> String {
    if v == 0 { "NULL".to_string() } else { format!("{v:#x}") }
}

/// Up to [`STRING_MAX`] of the `len` bytes at `ptr`, quoted.
fn buffer(p: &Process, ptr: u32, len: usize) -> String {
    let mut b = vec![0u8; len.min(STRING_MAX)];
    match p.aspace.read_bytes(ptr, &mut b) {
        Ok(()) => quoted(&b, len),
        Err(_) => pointer(ptr),
    }
}

/// `bytes` (the first of `len`) as strace quotes them: C escapes, octal for the rest
/// (three digits when a digit follows), `...` after the quote when cut.
pub fn quoted(bytes: &[u8], len: usize) -> String {
    escaped(bytes, len, STRING_MAX)
}

/// `bytes` quoted, cut at `max` (paths are shown whole, as strace shows them).
fn escaped(bytes: &[u8], len: usize, max: usize) -> String {
    let shown = &bytes[..bytes.len().min(max)];
    let mut s = String::from("\"");
    for (i, &c) in shown.iter().enumerate() {
        match c {
            b'"' => s.push_str("\\\""),
            b'\\' => s.push_str("\\\\"),
            b'\n' => s.push_str("\\n"),
            b'\t' => s.push_str("\\t"),
            b'\r' => s.push_str("\\r"),
            0x0b => s.push_str("\\v"),
            0x0c => s.push_str("\\f"),
            0x20..=0x7e => s.push(c as char),
            _ if shown.get(i + 1).is_some_and(u8::is_ascii_digit) => {
                let _ = write!(s, "\\{c:03o}");
            }
            _ => {
                let _ = write!(s, "\\{c:o}");
            }
        }
    }
    s.push('"');
    if len > shown.len() {
        s.push_str("...");
    }
    s
}

/// Names the set bits of `v` from `names`; what is left is added in hex.
fn bits(mut v: u32, names: &[(u32, &str)], mut out: Vec<String>) -> String {
    for &(bit, name) in names {
        if v & bit == bit && bit != 0 {
            out.push(name.to_string());
            v &= !bit;
        }
    }
    if v != 0 {
        out.push(format!("{v:#x}"));
    } else if out.is_empty() {
        out.push("0".to_string());
    }
    out.join("|")
}

const O_TMPFILE: u32 = 0o20000000;

/// `open` flags: the access mode, then the flags.
pub fn open_flags(v: u32) -> String {
    let mode = match v & 3 {
        0 => "O_RDONLY",
        1 => "O_WRONLY",
        2 => "O_RDWR",
        _ => "O_ACCMODE",
    };
    const NAMES: &[(u32, &str)] = &[
        (0o100, "O_CREAT"),
        (0o200, "O_EXCL"),
        (0o400, "O_NOCTTY"),
        (0o1000, "O_TRUNC"),
        (0o2000, "O_APPEND"),
        (0o4000, "O_NONBLOCK"),
        (0o4010000, "O_SYNC"),
        (0o10000, "O_DSYNC"),
        (0o20000, "O_ASYNC"),
        (0o40000, "O_DIRECT"),
        (0o100000, "O_LARGEFILE"),
        (O_TMPFILE | 0o200000, "O_TMPFILE"),
        (0o200000, "O_DIRECTORY"),
        (0o400000, "O_NOFOLLOW"),
        (0o1000000, "O_NOATIME"),
        (0o2000000, "O_CLOEXEC"),
        (0o10000000, "O_PATH"),
    ];
    bits(v & !3, NAMES, vec![mode.to_string()])
}

/// `access` modes.
pub fn access_mode(v: u32) -> String {
    if v == 0 {
        return "F_OK".to_string();
    }
    bits(v, &[(4, "R_OK"), (2, "W_OK"), (1, "X_OK")], Vec::new())
}

/// `mmap`/`mprotect` protections.
pub fn prot_flags(v: u32) -> String {
    if v == 0 {
        return "PROT_NONE".to_string();
    }
    const NAMES: &[(u32, &str)] = &[
        (1, "PROT_READ"),
        (2, "PROT_WRITE"),
        (4, "PROT_EXEC"),
        (8, "PROT_SEM"),
        (0x0100_0000, "PROT_GROWSDOWN"),
        (0x0200_0000, "PROT_GROWSUP"),
    ];
    bits(v, NAMES, Vec::new())
}

/// `madvise` advice.
pub fn madvise_advice(v: u32) -> String {
    const NAMES: [&str; 26] = [
        "MADV_NORMAL",
        "MADV_RANDOM",
        "MADV_SEQUENTIAL",
        "MADV_WILLNEED",
        "MADV_DONTNEED",
        "",
        "",
        "",
        "MADV_FREE",
        "MADV_REMOVE",
        "MADV_DONTFORK",
        "MADV_DOFORK",
        "MADV_MERGEABLE",
        "MADV_UNMERGEABLE",
        "MADV_HUGEPAGE",
        "MADV_NOHUGEPAGE",
        "MADV_DONTDUMP",
        "MADV_DODUMP",
        "MADV_WIPEONFORK",
        "MADV_KEEPONFORK",
        "MADV_COLD",
        "MADV_PAGEOUT",
        "MADV_POPULATE_READ",
        "MADV_POPULATE_WRITE",
        "MADV_DONTNEED_LOCKED",
        "MADV_COLLAPSE",
    ];
    match NAMES.get(v as usize) {
        Some(n) if !n.is_empty() => n.to_string(),
        _ => format!("{v:#x} /* MADV_??? */"),
    }
}

/// `mmap` flags: the mapping type, then the flags.
pub fn map_flags(v: u32) -> String {
    let ty = match v & 0xf {
        1 => "MAP_SHARED".to_string(),
        2 => "MAP_PRIVATE".to_string(),
        3 => "MAP_SHARED_VALIDATE".to_string(),
        t => format!("{t:#x}"),
    };
    const NAMES: &[(u32, &str)] = &[
        (0x10, "MAP_FIXED"),
        (0x20, "MAP_ANONYMOUS"),
        (0x40, "MAP_32BIT"),
        (0x100, "MAP_GROWSDOWN"),
        (0x800, "MAP_DENYWRITE"),
        (0x1000, "MAP_EXECUTABLE"),
        (0x2000, "MAP_LOCKED"),
        (0x4000, "MAP_NORESERVE"),
        (0x8000, "MAP_POPULATE"),
        (0x10000, "MAP_NONBLOCK"),
        (0x20000, "MAP_STACK"),
        (0x40000, "MAP_HUGETLB"),
        (0x80000, "MAP_SYNC"),
        (0x10_0000, "MAP_FIXED_NOREPLACE"),
    ];
    bits(v & !0xf, NAMES, vec![ty])
}

/// `clone` flags; the low byte is the signal sent at exit.
pub fn clone_flags(v: u32) -> String {
    const NAMES: &[(u32, &str)] = &[
        (0x100, "CLONE_VM"),
        (0x200, "CLONE_FS"),
        (0x400, "CLONE_FILES"),
        (0x800, "CLONE_SIGHAND"),
        (0x1000, "CLONE_PIDFD"),
        (0x2000, "CLONE_PTRACE"),
        (0x4000, "CLONE_VFORK"),
        (0x8000, "CLONE_PARENT"),
        (0x10000, "CLONE_THREAD"),
        (0x20000, "CLONE_NEWNS"),
        (0x40000, "CLONE_SYSVSEM"),
        (0x80000, "CLONE_SETTLS"),
        (0x10_0000, "CLONE_PARENT_SETTID"),
        (0x20_0000, "CLONE_CHILD_CLEARTID"),
        (0x40_0000, "CLONE_DETACHED"),
        (0x80_0000, "CLONE_UNTRACED"),
        (0x100_0000, "CLONE_CHILD_SETTID"),
        (0x200_0000, "CLONE_NEWCGROUP"),
        (0x400_0000, "CLONE_NEWUTS"),
        (0x800_0000, "CLONE_NEWIPC"),
        (0x1000_0000, "CLONE_NEWUSER"),
        (0x2000_0000, "CLONE_NEWPID"),
        (0x4000_0000, "CLONE_NEWNET"),
        (0x8000_0000, "CLONE_IO"),
    ];
    let sig = (v & 0xff) as i32;
    let mut s = bits(v & !0xff, NAMES, Vec::new());
    if sig != 0 {
        let name = signal_name(sig);
        let name = if name.starts_with("SIG") { name.to_string() } else { sig.to_string() };
        s = if v & !0xff == 0 { name } else { format!("{s}|{name}") };
    }
    s
}

/// Declares the errno names from libc's numbers (Linux's, the same on i386).
macro_rules! errnos {
    ($($e:ident)*) => {
        /// Every Linux errno and its name.
        const ERRNOS: &[(Errno, &str)] = &[$((libc::$e, stringify!($e))),*];
    };
}

errnos! {
    EPERM ENOENT ESRCH EINTR EIO ENXIO E2BIG ENOEXEC EBADF ECHILD EAGAIN ENOMEM EACCES EFAULT
    ENOTBLK EBUSY EEXIST EXDEV ENODEV ENOTDIR EISDIR EINVAL ENFILE EMFILE ENOTTY ETXTBSY EFBIG
    ENOSPC ESPIPE EROFS EMLINK EPIPE EDOM ERANGE EDEADLK ENAMETOOLONG ENOLCK ENOSYS ENOTEMPTY
    ELOOP ENOMSG EIDRM ECHRNG EL2NSYNC EL3HLT EL3RST ELNRNG EUNATCH ENOCSI EL2HLT EBADE EBADR
    EXFULL ENOANO EBADRQC EBADSLT EBFONT ENOSTR ENODATA ETIME ENOSR ENONET ENOPKG EREMOTE
    ENOLINK EADV ESRMNT ECOMM EPROTO EMULTIHOP EDOTDOT EBADMSG EOVERFLOW ENOTUNIQ EBADFD
    EREMCHG ELIBACC ELIBBAD ELIBSCN ELIBMAX ELIBEXEC EILSEQ ERESTART ESTRPIPE EUSERS ENOTSOCK
    EDESTADDRREQ EMSGSIZE EPROTOTYPE ENOPROTOOPT EPROTONOSUPPORT ESOCKTNOSUPPORT EOPNOTSUPP
    EPFNOSUPPORT EAFNOSUPPORT EADDRINUSE EADDRNOTAVAIL ENETDOWN ENETUNREACH ENETRESET
    ECONNABORTED ECONNRESET ENOBUFS EISCONN ENOTCONN ESHUTDOWN ETOOMANYREFS ETIMEDOUT
    ECONNREFUSED EHOSTDOWN EHOSTUNREACH EALREADY EINPROGRESS ESTALE EUCLEAN ENOTNAM ENAVAIL
    EISNAM EREMOTEIO EDQUOT ENOMEDIUM EMEDIUMTYPE ECANCELED ENOKEY EKEYEXPIRED EKEYREVOKED
    EKEYREJECTED EOWNERDEAD ENOTRECOVERABLE ERFKILL EHWPOISON
}

/// The name of errno `e` (`E?` for a number Linux does not define).
pub fn errno_name(e: Errno) -> &'static str {
    ERRNOS.iter().find(|&&(n, _)| n == e).map_or("E?", |&(_, name)| name)
}

/// The host's message for errno `e`, without Rust's `(os error N)`.
pub fn strerror(e: Errno) -> String {
    let s = std::io::Error::from_raw_os_error(e).to_string();
    match s.rfind(" (os error ") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_by_name() {
        assert_eq!(open_flags(0o2100000), "O_RDONLY|O_LARGEFILE|O_CLOEXEC");
        assert_eq!(open_flags(0o1101), "O_WRONLY|O_CREAT|O_TRUNC");
        assert_eq!(prot_flags(5), "PROT_READ|PROT_EXEC");
        assert_eq!(prot_flags(0), "PROT_NONE");
        assert_eq!(access_mode(4), "R_OK");
        assert_eq!(access_mode(0), "F_OK");
        assert_eq!(map_flags(0x22), "MAP_PRIVATE|MAP_ANONYMOUS");
        assert_eq!(map_flags(0x812), "MAP_PRIVATE|MAP_FIXED|MAP_DENYWRITE");
        assert_eq!(clone_flags(0x0120_0011), "CLONE_CHILD_CLEARTID|CLONE_CHILD_SETTID|SIGCHLD");
        assert_eq!(
            clone_flags(0x7d0f00),
            "CLONE_VM|CLONE_FS|CLONE_FILES|CLONE_SIGHAND|CLONE_THREAD|CLONE_SYSVSEM|CLONE_SETTLS|CLONE_PARENT_SETTID|CLONE_CHILD_CLEARTID|CLONE_DETACHED"
        );
    }

    #[test]
    fn names_and_errnos() {
        assert_eq!(name_of(386), "rseq");
        assert_eq!(name_of(272), "fadvise64_64");
        assert_eq!(name_of(252), "exit_group");
        assert_eq!(name_of(222), "syscall_222");
        assert_eq!(name_of(9999), "syscall_9999");
        assert_eq!(errno_name(ENOENT), "ENOENT");
        assert_eq!(errno_name(libc::EHWPOISON), "EHWPOISON");
        assert_eq!(strerror(ENOENT), "No such file or directory");
    }

    #[test]
    fn strings_as_strace_quotes_them() {
        assert_eq!(quoted(b"hi\n", 3), "\"hi\\n\"");
        assert_eq!(quoted(b"\x7fELF\x01\x014", 7), "\"\\177ELF\\1\\0014\"");
        assert_eq!(quoted(&[b'a'; 40], 40), format!("\"{}\"...", "a".repeat(32)));
        assert_eq!(quoted(b"ab", 10), "\"ab\"...");
    }
}
