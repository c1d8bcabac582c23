//! The Linux i386 ABI: constants and structure layouts, named as Linux names them.

#![allow(missing_docs)]

// errno values.
pub const EPERM: i32 = 1;
pub const ENOENT: i32 = 2;
pub const ESRCH: i32 = 3;
pub const EDEADLK: i32 = 35;
pub const EBUSY: i32 = 16;
pub const EINTR: i32 = 4;
pub const EIO: i32 = 5;
pub const ENOEXEC: i32 = 8;
pub const EBADF: i32 = 9;
pub const ECHILD: i32 = 10;
pub const EAGAIN: i32 = 11;
pub const ENOMEM: i32 = 12;
pub const EACCES: i32 = 13;
pub const EFAULT: i32 = 14;
pub const EEXIST: i32 = 17;
pub const ENOTDIR: i32 = 20;
pub const EISDIR: i32 = 21;
pub const EINVAL: i32 = 22;
pub const EMFILE: i32 = 24;
pub const ENOTTY: i32 = 25;
pub const ESPIPE: i32 = 29;
pub const EROFS: i32 = 30;
pub const ERANGE: i32 = 34;
pub const ENAMETOOLONG: i32 = 36;
pub const ENOSYS: i32 = 38;
pub const ELOOP: i32 = 40;
pub const EXDEV: i32 = 18;
pub const EOVERFLOW: i32 = 75;
pub const ENODATA: i32 = 61;

// Signals.
pub const SIGHUP: i32 = 1;
pub const SIGINT: i32 = 2;
pub const SIGQUIT: i32 = 3;
pub const SIGILL: i32 = 4;
pub const SIGTRAP: i32 = 5;
pub const SIGABRT: i32 = 6;
pub const SIGBUS: i32 = 7;
pub const SIGFPE: i32 = 8;
pub const SIGKILL: i32 = 9;
pub const SIGSEGV: i32 = 11;
pub const SIGPIPE: i32 = 13;
pub const SIGALRM: i32 = 14;
pub const SIGTERM: i32 = 15;
pub const SIGCHLD: i32 = 17;

/// Name of a signal, as `kill -l` prints it.
pub fn signal_name(sig: i32) -> &'static str {
    match sig {
        SIGHUP => "SIGHUP",
        SIGINT => "SIGINT",
        SIGQUIT => "SIGQUIT",
        SIGILL => "SIGILL",
        SIGTRAP => "SIGTRAP",
        SIGABRT => "SIGABRT",
        SIGBUS => "SIGBUS",
        SIGFPE => "SIGFPE",
        SIGKILL => "SIGKILL",
        SIGSEGV => "SIGSEGV",
        SIGPIPE => "SIGPIPE",
        SIGALRM => "SIGALRM",
        SIGTERM => "SIGTERM",
        SIGCHLD => "SIGCHLD",
        _ => "signal",
    }
}

// mmap.
pub const PROT_READ: u32 = 1;
pub const PROT_WRITE: u32 = 2;
pub const PROT_EXEC: u32 = 4;
pub const MAP_SHARED: u32 = 0x01;
pub const MAP_PRIVATE: u32 = 0x02;
pub const MAP_TYPE: u32 = 0x0f;
pub const MAP_FIXED: u32 = 0x10;
pub const MAP_ANONYMOUS: u32 = 0x20;
pub const MAP_LOCKED: u32 = 0x2000;
pub const MAP_FIXED_NOREPLACE: u32 = 0x10_0000;

// open flags (i386 == generic).
pub const O_ACCMODE: u32 = 3;
pub const O_RDONLY: u32 = 0;
pub const O_CREAT: u32 = 0o100;
pub const O_EXCL: u32 = 0o200;
pub const O_NOCTTY: u32 = 0o400;
pub const O_TRUNC: u32 = 0o1000;
pub const O_APPEND: u32 = 0o2000;
pub const O_NONBLOCK: u32 = 0o4000;
pub const O_DIRECTORY: u32 = 0o200000;
pub const O_NOFOLLOW: u32 = 0o400000;
pub const O_CLOEXEC: u32 = 0o2000000;
pub const O_LARGEFILE: u32 = 0o100000;
pub const O_PATH: u32 = 0o10000000;

pub const AT_FDCWD: i32 = -100;
pub const AT_SYMLINK_NOFOLLOW: u32 = 0x100;
pub const AT_REMOVEDIR: u32 = 0x200;
pub const AT_EMPTY_PATH: u32 = 0x1000;
pub const AT_SYMLINK_FOLLOW: u32 = 0x400;

// Auxiliary vector.
pub const AT_NULL: u32 = 0;
pub const AT_PHDR: u32 = 3;
pub const AT_PHENT: u32 = 4;
pub const AT_PHNUM: u32 = 5;
pub const AT_PAGESZ: u32 = 6;
pub const AT_BASE: u32 = 7;
pub const AT_FLAGS: u32 = 8;
pub const AT_ENTRY: u32 = 9;
pub const AT_UID: u32 = 11;
pub const AT_EUID: u32 = 12;
pub const AT_GID: u32 = 13;
pub const AT_EGID: u32 = 14;
pub const AT_PLATFORM: u32 = 15;
pub const AT_HWCAP: u32 = 16;
pub const AT_CLKTCK: u32 = 17;
pub const AT_SECURE: u32 = 23;
pub const AT_RANDOM: u32 = 25;
pub const AT_EXECFN: u32 = 31;

// ioctl.
pub const TCGETS: u32 = 0x5401;
pub const TCSETS: u32 = 0x5402;
pub const TCSETSW: u32 = 0x5403;
pub const TCSETSF: u32 = 0x5404;
pub const TIOCGPGRP: u32 = 0x540f;
pub const TIOCSPGRP: u32 = 0x5410;
pub const TIOCGWINSZ: u32 = 0x5413;
pub const FIONREAD: u32 = 0x541b;
pub const FIONBIO: u32 = 0x5421;

/// The i386 `struct stat64` (96 bytes).
pub fn stat64_bytes(st: &libc::stat) -> [u8; 96] {
    let mut b = [0u8; 96];
    let mut put = |off: usize, v: &[u8]| b[off..off + v.len()].copy_from_slice(v);
    put(0, &st.st_dev.to_le_bytes());
    put(12, &(st.st_ino as u32).to_le_bytes());
    put(16, &st.st_mode.to_le_bytes());
    put(20, &(st.st_nlink as u32).to_le_bytes());
    put(24, &st.st_uid.to_le_bytes());
    put(28, &st.st_gid.to_le_bytes());
    put(32, &st.st_rdev.to_le_bytes());
    put(44, &st.st_size.to_le_bytes());
    put(52, &(st.st_blksize as u32).to_le_bytes());
    put(56, &st.st_blocks.to_le_bytes());
    put(64, &(st.st_atime as u32).to_le_bytes());
    put(68, &(st.st_atime_nsec as u32).to_le_bytes());
    put(72, &(st.st_mtime as u32).to_le_bytes());
    put(76, &(st.st_mtime_nsec as u32).to_le_bytes());
    put(80, &(st.st_ctime as u32).to_le_bytes());
    put(84, &(st.st_ctime_nsec as u32).to_le_bytes());
    put(88, &st.st_ino.to_le_bytes());
    b
}

/// `struct statx` (256 bytes, the same on every architecture) of a `stat`, with the
/// basic fields (`STATX_BASIC_STATS`).
pub fn statx_bytes(st: &libc::stat) -> [u8; 256] {
    let mut b = [0u8; 256];
    let mut put = |off: usize, v: &[u8]| b[off..off + v.len()].copy_from_slice(v);
    put(0, &0x7ffu32.to_le_bytes());
    put(4, &(st.st_blksize as u32).to_le_bytes());
    put(16, &(st.st_nlink as u32).to_le_bytes());
    put(20, &st.st_uid.to_le_bytes());
    put(24, &st.st_gid.to_le_bytes());
    put(28, &(st.st_mode as u16).to_le_bytes());
    put(32, &st.st_ino.to_le_bytes());
    put(40, &st.st_size.to_le_bytes());
    put(48, &st.st_blocks.to_le_bytes());
    for (off, sec, nsec) in
        [(64, st.st_atime, st.st_atime_nsec), (96, st.st_ctime, st.st_ctime_nsec), (112, st.st_mtime, st.st_mtime_nsec)]
    {
        put(off, &sec.to_le_bytes());
        put(off + 8, &(nsec as u32).to_le_bytes());
    }
    put(128, &libc::major(st.st_rdev).to_le_bytes());
    put(132, &libc::minor(st.st_rdev).to_le_bytes());
    put(136, &libc::major(st.st_dev).to_le_bytes());
    put(140, &libc::minor(st.st_dev).to_le_bytes());
    b
}

/// The i386 `struct stat` (old, 64 bytes), for `stat`/`fstat`/`lstat`.
pub fn stat_bytes(st: &libc::stat) -> Option<[u8; 64]> {
    if st.st_ino > u64::from(u32::MAX) || st.st_size > i64::from(i32::MAX) {
        return None; // EOVERFLOW
    }
    let mut b = [0u8; 64];
    let mut put = |off: usize, v: &[u8]| b[off..off + v.len()].copy_from_slice(v);
    put(0, &(st.st_dev as u32).to_le_bytes());
    put(4, &(st.st_ino as u32).to_le_bytes());
    put(8, &(st.st_mode as u16).to_le_bytes());
    put(10, &(st.st_nlink as u16).to_le_bytes());
    put(12, &(st.st_uid as u16).to_le_bytes());
    put(14, &(st.st_gid as u16).to_le_bytes());
    put(16, &(st.st_rdev as u32).to_le_bytes());
    put(20, &(st.st_size as u32).to_le_bytes());
    put(24, &(st.st_blksize as u32).to_le_bytes());
    put(28, &(st.st_blocks as u32).to_le_bytes());
    put(32, &(st.st_atime as u32).to_le_bytes());
    put(36, &(st.st_atime_nsec as u32).to_le_bytes());
    put(40, &(st.st_mtime as u32).to_le_bytes());
    put(44, &(st.st_mtime_nsec as u32).to_le_bytes());
    put(48, &(st.st_ctime as u32).to_le_bytes());
    put(52, &(st.st_ctime_nsec as u32).to_le_bytes());
    Some(b)
}

// More errno values.
pub const ENXIO: i32 = 6;
pub const E2BIG: i32 = 7;
pub const EPIPE: i32 = 32;
pub const ENOTEMPTY: i32 = 39;
pub const ENOTSOCK: i32 = 88;
pub const EAFNOSUPPORT: i32 = 97;
pub const EADDRNOTAVAIL: i32 = 99;
pub const ENETUNREACH: i32 = 101;
pub const ECONNREFUSED: i32 = 111;
pub const EINPROGRESS: i32 = 115;
/// Kernel-internal: the call blocked and is re-run when its wait ends (never seen by a
/// guest; Linux's `ERESTARTSYS`).
pub const ERESTARTSYS: i32 = 512;
/// Kernel-internal: the call set every register itself (`sigreturn`, `execve`).
pub const EJUSTRETURN: i32 = 513;

// More signals.
pub const SIGUSR1: i32 = 10;
pub const SIGUSR2: i32 = 12;
pub const SIGSTKFLT: i32 = 16;
pub const SIGCONT: i32 = 18;
pub const SIGSTOP: i32 = 19;
pub const SIGTSTP: i32 = 20;
pub const SIGTTIN: i32 = 21;
pub const SIGTTOU: i32 = 22;
pub const SIGURG: i32 = 23;
pub const SIGXCPU: i32 = 24;
pub const SIGXFSZ: i32 = 25;
pub const SIGVTALRM: i32 = 26;
pub const SIGPROF: i32 = 27;
pub const SIGWINCH: i32 = 28;
pub const SIGIO: i32 = 29;
pub const SIGPWR: i32 = 30;
pub const SIGSYS: i32 = 31;
/// Signals that cannot be blocked, caught or ignored (bits `sig - 1`).
pub const UNBLOCKABLE: u64 = (1 << (SIGKILL - 1)) | (1 << (SIGSTOP - 1));

// Dispositions and sigaction flags.
pub const SIG_DFL: u32 = 0;
pub const SIG_IGN: u32 = 1;
pub const SA_NOCLDSTOP: u32 = 1;
pub const SA_NOCLDWAIT: u32 = 2;
pub const SA_SIGINFO: u32 = 4;
pub const SA_RESTORER: u32 = 0x0400_0000;
pub const SA_ONSTACK: u32 = 0x0800_0000;
pub const SA_RESTART: u32 = 0x1000_0000;
pub const SA_NODEFER: u32 = 0x4000_0000;
pub const SA_RESETHAND: u32 = 0x8000_0000;
pub const SS_ONSTACK: u32 = 1;
pub const SS_DISABLE: u32 = 2;

// si_code values.
/// `personality` flags: no ASLR for the programs loaded next.
pub const ADDR_NO_RANDOMIZE: u32 = 0x004_0000;
/// `personality` flags: `PROT_READ` implies `PROT_EXEC` in `mmap` and `mprotect`.
pub const READ_IMPLIES_EXEC: u32 = 0x040_0000;
/// `personality` flags: `uname` shows a 2.6 release.
pub const UNAME26: u32 = 0x002_0000;
pub const SI_USER: i32 = 0;
pub const SI_KERNEL: i32 = 0x80;
pub const SI_TKILL: i32 = -6;
pub const SI_TIMER: i32 = -2;
pub const PRIO_PROCESS: u32 = 0;
pub const PRIO_PGRP: u32 = 1;
pub const PRIO_USER: u32 = 2;
pub const SIGEV_SIGNAL: u32 = 0;
pub const SIGEV_NONE: u32 = 1;
pub const SIGEV_THREAD_ID: u32 = 4;
pub const TIMER_ABSTIME: u32 = 1;
pub const CLD_EXITED: i32 = 1;
pub const CLD_KILLED: i32 = 2;
pub const CLD_STOPPED: i32 = 5;
pub const CLD_CONTINUED: i32 = 6;
pub const SEGV_MAPERR: i32 = 1;
pub const SEGV_ACCERR: i32 = 2;
/// `si_code` of `SIGBUS`: invalid address alignment (`#AC`).
pub const BUS_ADRALN: i32 = 1;
/// `si_code` of `SIGBUS`: nonexistent physical address (a page beyond a file's end).
pub const BUS_ADRERR: i32 = 2;
pub const ILL_ILLOPN: i32 = 2;
pub const FPE_INTDIV: i32 = 1;
pub const FPE_FLTDIV: i32 = 3;
pub const FPE_FLTOVF: i32 = 4;
pub const FPE_FLTUND: i32 = 5;
pub const FPE_FLTRES: i32 = 6;
pub const FPE_FLTINV: i32 = 7;
pub const TRAP_TRACE: i32 = 2;
/// `si_code` of a breakpoint trap (`int1`).
pub const TRAP_BRKPT: i32 = 1;

/// What a signal does when its disposition is `SIG_DFL`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DefaultAction {
    /// End the process.
    Terminate,
    /// Nothing.
    Ignore,
    /// Stop the process (job control; morph has no stopped state and ignores it).
    Stop,
    /// Continue a stopped process.
    Continue,
}

/// The default action of `sig` (signal(7)); core-dumping signals terminate.
pub fn default_action(sig: i32) -> DefaultAction {
    match sig {
        SIGCHLD | SIGURG | SIGWINCH => DefaultAction::Ignore,
        SIGSTOP | SIGTSTP | SIGTTIN | SIGTTOU => DefaultAction::Stop,
        SIGCONT => DefaultAction::Continue,
        _ => DefaultAction::Terminate,
    }
}

// clone flags.
pub const CSIGNAL: u32 = 0xff;
pub const CLONE_VM: u32 = 0x100;
pub const CLONE_FS: u32 = 0x200;
pub const CLONE_FILES: u32 = 0x400;
pub const CLONE_SIGHAND: u32 = 0x800;
pub const CLONE_VFORK: u32 = 0x4000;
pub const CLONE_PARENT: u32 = 0x8000;
pub const CLONE_THREAD: u32 = 0x10000;
pub const CLONE_SETTLS: u32 = 0x80000;
pub const CLONE_PARENT_SETTID: u32 = 0x100000;
pub const CLONE_CHILD_CLEARTID: u32 = 0x200000;
pub const CLONE_CHILD_SETTID: u32 = 0x1000000;

// futex(2) operations and flags.
pub const FUTEX_WAIT: u32 = 0;
pub const FUTEX_WAKE: u32 = 1;
pub const FUTEX_REQUEUE: u32 = 3;
pub const FUTEX_CMP_REQUEUE: u32 = 4;
pub const FUTEX_WAKE_OP: u32 = 5;
pub const FUTEX_LOCK_PI: u32 = 6;
pub const FUTEX_UNLOCK_PI: u32 = 7;
pub const FUTEX_TRYLOCK_PI: u32 = 8;
pub const FUTEX_WAIT_BITSET: u32 = 9;
pub const FUTEX_WAKE_BITSET: u32 = 10;
pub const FUTEX_LOCK_PI2: u32 = 13;
pub const FUTEX_PRIVATE_FLAG: u32 = 128;
pub const FUTEX_CLOCK_REALTIME: u32 = 256;
/// Robust futex word: the owner's tid, and the two flag bits.
pub const FUTEX_TID_MASK: u32 = 0x3fff_ffff;
pub const FUTEX_OWNER_DIED: u32 = 0x4000_0000;
pub const FUTEX_WAITERS: u32 = 0x8000_0000;

// wait options (`WSTOPPED` is `WUNTRACED`'s name for `waitid`).
pub const WNOHANG: u32 = 1;
pub const WUNTRACED: u32 = 2;
pub const WSTOPPED: u32 = 2;
pub const WEXITED: u32 = 4;
pub const WCONTINUED: u32 = 8;
pub const WNOWAIT: u32 = 0x0100_0000;
pub const __WNOTHREAD: u32 = 0x2000_0000;
pub const __WALL: u32 = 0x4000_0000;
pub const __WCLONE: u32 = 0x8000_0000;
// waitid id types.
pub const P_ALL: u32 = 0;
pub const P_PID: u32 = 1;
pub const P_PGID: u32 = 2;
pub const P_PIDFD: u32 = 3;

// Scheduling policies (`sched_setscheduler`).
pub const SCHED_OTHER: u32 = 0;
pub const SCHED_FIFO: u32 = 1;
pub const SCHED_RR: u32 = 2;
pub const SCHED_BATCH: u32 = 3;
pub const SCHED_IDLE: u32 = 5;
pub const SCHED_DEADLINE: u32 = 6;
/// Or'ed into a policy: a fork child starts with `SCHED_OTHER` (and a nice value of 0 or more).
pub const SCHED_RESET_ON_FORK: u32 = 0x4000_0000;
/// The highest real-time priority (`MAX_RT_PRIO - 1`).
pub const MAX_RT_PRIORITY: u32 = 99;
pub const RLIMIT_NICE: usize = 13;
pub const RLIMIT_RTPRIO: usize = 14;

// Socket errno values.
pub const ENOPROTOOPT: i32 = 92;
pub const EPROTONOSUPPORT: i32 = 93;
pub const ENOBUFS: i32 = 105;
pub const ESOCKTNOSUPPORT: i32 = 94;
pub const EOPNOTSUPP: i32 = 95;
pub const EMSGSIZE: i32 = 90;
pub const ENODEV: i32 = 19;
pub const EADDRINUSE: i32 = 98;
pub const ECONNRESET: i32 = 104;
pub const EISCONN: i32 = 106;
pub const ENOTCONN: i32 = 107;
pub const ETIMEDOUT: i32 = 110;
pub const EALREADY: i32 = 114;

// Sockets: the values are the same on i386 and x86-64; so are the layouts of
// `sockaddr_un`, `sockaddr_in` and `sockaddr_in6`. `msghdr`, `iovec` and `cmsghdr` are
// not (32-bit pointers and sizes).
pub const AF_UNSPEC: u16 = 0;
pub const AF_UNIX: u16 = 1;
pub const AF_INET: u16 = 2;
pub const AF_INET6: u16 = 10;
pub const SOCK_STREAM: u32 = 1;
pub const SOCK_DGRAM: u32 = 2;
pub const SOCK_RAW: u32 = 3;
pub const SOCK_SEQPACKET: u32 = 5;
pub const SOCK_TYPE_MASK: u32 = 0xf;
pub const SOCK_NONBLOCK: u32 = O_NONBLOCK;
pub const SOCK_CLOEXEC: u32 = O_CLOEXEC;
/// `sizeof(struct sockaddr_storage)`: the longest socket address.
pub const SOCKADDR_MAX: u32 = 128;

pub const MSG_OOB: u32 = 0x1;
pub const MSG_PEEK: u32 = 0x2;
pub const MSG_CTRUNC: u32 = 0x8;
pub const MSG_TRUNC: u32 = 0x20;
pub const MSG_DONTWAIT: u32 = 0x40;
pub const MSG_WAITALL: u32 = 0x100;
pub const MSG_NOSIGNAL: u32 = 0x4000;
pub const MSG_WAITFORONE: u32 = 0x10000;
pub const MSG_CMSG_CLOEXEC: u32 = 0x4000_0000;

pub const SOL_SOCKET: u32 = 1;
pub const SO_TYPE: u32 = 3;
pub const SO_ERROR: u32 = 4;
pub const SO_RCVTIMEO_OLD: u32 = 20;
pub const SO_SNDTIMEO_OLD: u32 = 21;
pub const SO_BINDTODEVICE: u32 = 25;
pub const SO_ATTACH_FILTER: u32 = 26;
pub const SO_TIMESTAMP_OLD: u32 = 29;
pub const SO_TIMESTAMPNS_OLD: u32 = 35;
pub const SO_TIMESTAMPING_OLD: u32 = 37;
pub const SO_ATTACH_REUSEPORT_CBPF: u32 = 51;
pub const SCM_RIGHTS: u32 = 1;
pub const SCM_CREDENTIALS: u32 = 2;

pub const IPPROTO_IP: u32 = 0;
pub const IPPROTO_ICMP: u32 = 1;
pub const IPPROTO_TCP: u32 = 6;
pub const IPPROTO_UDP: u32 = 17;
pub const IPPROTO_ICMPV6: u32 = 58;
pub const IPPROTO_UDPLITE: u32 = 136;
pub const IPPROTO_IPV6: u32 = 41;
pub const IP_ADD_MEMBERSHIP: u32 = 35;
pub const IP_ADD_SOURCE_MEMBERSHIP: u32 = 39;
pub const MCAST_JOIN_GROUP: u32 = 42;
pub const MCAST_JOIN_SOURCE_GROUP: u32 = 46;
pub const IPV6_ADD_MEMBERSHIP: u32 = 20;

/// `socketcall` sub-call numbers (`SYS_SOCKET` … `SYS_SENDMMSG` of `linux/net.h`).
/// Process (and thread) identifier.
pub type Pid = u32;

pub mod socketcall {
    pub const SOCKET: u32 = 1;
    pub const BIND: u32 = 2;
    pub const CONNECT: u32 = 3;
    pub const LISTEN: u32 = 4;
    pub const ACCEPT: u32 = 5;
    pub const GETSOCKNAME: u32 = 6;
    pub const GETPEERNAME: u32 = 7;
    pub const SOCKETPAIR: u32 = 8;
    pub const SEND: u32 = 9;
    pub const RECV: u32 = 10;
    pub const SENDTO: u32 = 11;
    pub const RECVFROM: u32 = 12;
    pub const SHUTDOWN: u32 = 13;
    pub const SETSOCKOPT: u32 = 14;
    pub const GETSOCKOPT: u32 = 15;
    pub const SENDMSG: u32 = 16;
    pub const RECVMSG: u32 = 17;
    pub const ACCEPT4: u32 = 18;
    pub const RECVMMSG: u32 = 19;
    pub const SENDMMSG: u32 = 20;
    /// Arguments of each sub-call (`nargs[]` of `net/socket.c`), by number.
    pub const NARGS: [u8; 21] = [0, 3, 3, 3, 2, 3, 3, 3, 4, 4, 4, 6, 6, 2, 5, 5, 3, 3, 4, 5, 4];
}

/// The i386 `struct msghdr` (28 bytes): pointers and sizes are 32-bit.
#[derive(Clone, Copy, Debug, Default)]
pub struct MsgHdr32 {
    pub name: u32,
    pub namelen: u32,
    pub iov: u32,
    pub iovlen: u32,
    pub control: u32,
    pub controllen: u32,
    pub flags: u32,
}

impl MsgHdr32 {
    pub const SIZE: u32 = 28;
    /// Offsets of the fields the kernel writes back.
    pub const NAMELEN_OFF: u32 = 4;
    pub const CONTROLLEN_OFF: u32 = 20;
    pub const FLAGS_OFF: u32 = 24;

    pub fn from_bytes(b: &[u8; 28]) -> MsgHdr32 {
        let w = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        MsgHdr32 {
            name: w(0),
            namelen: w(4),
            iov: w(8),
            iovlen: w(12),
            control: w(16),
            controllen: w(20),
            flags: w(24),
        }
    }
}

/// The i386 `struct cmsghdr` header (12 bytes; data aligned to 4).
pub const CMSG_HDR32: usize = 12;
/// The x86-64 `struct cmsghdr` header (16 bytes; data aligned to 8).
pub const CMSG_HDR64: usize = 16;
