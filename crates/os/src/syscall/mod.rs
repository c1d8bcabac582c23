//! Linux i386 system calls (`int 0x80`), as a table.
//!
//! Each row gives the number, the name, the argument formats (for `--strace`) and the
//! handler; the same table drives dispatch, tracing and the statistics. A number not
//! in the table returns `-ENOSYS` and is counted, so a researcher sees exactly what a
//! guest asked for and did not get.
//!
//! Argument formats (for [`strace`]), one letter per argument: `d` signed, `u`
//! unsigned, `x` hex, `f` descriptor (`AT_FDCWD` by name), `s` path, `p` pointer (`NULL`
//! by name), `o` octal mode (left out after `O` flags without `O_CREAT`), `b` buffer the
//! call fills (shown after it, the result's length), `B` buffer the call reads (the next
//! argument's length), `v`/`V` iovecs the call fills/reads (the next argument's count),
//! `S` a `struct stat64` the call fills, `r` a 64-bit number the call fills, `i` the two
//! descriptors `pipe` fills, `q`/`Q` a
//! 64-bit number in two arguments (low/high word first), `O` open flags, `P`
//! protections, `M` mmap flags, `C` clone flags, `A` access mode, `F` `AT_*` flags, `R`
//! mremap flags (the next argument left out without `MREMAP_FIXED`), `w` whence, `g`
//! mmap2 page offset (shown in bytes), `a`/`e` `execve`'s argv (the strings) and envp
//! (how many), `D` madvise advice.

use morph_cpu::state::reg;

use crate::kernel::Machine;
use crate::linux::{EFAULT, EJUSTRETURN, ENOSYS, ERESTARTSYS};
use crate::process::Process;

pub use crate::process::INSNS_PER_TICK;
use common::Handler;
pub use common::{SysResult, Syscall};

/// Declares a static table of system calls: `nr name "args" handler;` rows, after
/// `TABLE: Files`, `Net`, `Io` or `Task`; the handlers take a [`common::FileCtx`], a
/// [`common::NetCtx`], a [`common::IoCtx`] or a [`common::TaskCtx`].
macro_rules! table {
    ($(#[$m:meta])* $vis:vis $table:ident: $ctx:ident { $($nr:literal $name:ident $args:literal $h:expr;)* }) => {
        $(#[$m])*
        $vis static $table: &[$crate::syscall::common::Syscall] = &[$($crate::syscall::common::Syscall {
            nr: $nr,
            name: stringify!($name),
            args: $args,
            handler: $crate::syscall::common::Handler::$ctx($h),
        }),*];
    };
}

pub(crate) mod children;
mod common;
mod copy;
mod creds;
mod file;
mod fs;
pub(crate) mod futex;
mod ids;
mod io;
mod mm;
pub(crate) mod net;
mod notify;
mod prctl;
pub(crate) mod proc;
pub(crate) mod rseq;
mod sched;
mod signal;
mod stat;
pub mod strace;
mod time;
mod tty;
mod wait;

/// Every family's table; together they are the system call table.
pub static TABLES: &[&[Syscall]] = &[
    file::TABLE,
    copy::TABLE,
    fs::TABLE,
    notify::TABLE,
    stat::TABLE,
    mm::TABLE,
    time::TABLE,
    ids::TABLE,
    creds::TABLE,
    proc::TABLE,
    children::TABLE,
    sched::TABLE,
    prctl::TABLE,
    futex::TABLE,
    signal::TABLE,
    rseq::TABLE,
    io::TABLE,
    net::TABLE,
];

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

/// Pages the page cache is asked to give back when a call's guest buffer could not be
/// prepared (more than one fault's batch).
const RECLAIM_IN_CALL: u32 = 64;

/// The calls that neither read nor write a thread's x87/MMX state nor hand the CPU
/// to anything else before they return (no signal frame, no copy of the thread, no
/// exec): the scheduler runs them with the guest's FPU state left in the host FPU
/// (`Engine::run_fpu_lazy`). Every other call, a fault and a signal delivery find it
/// stored in `Cpu::fpu` first. Sorted, i386 numbers: I/O on descriptors, the clocks,
/// ids, memory mappings, futexes, polling, sockets.
const KEEPS_FPU: [u32; 80] = [
    3, 4, 5, 6, 13, 19, 20, 24, 33, 41, 42, 45, 47, 49, 50, 54, 63, 64, 78, 85, 91, 102, 106, 108, 125, 140, 141, 142,
    145, 146, 168, 174, 175, 180, 181, 183, 191, 192, 195, 196, 197, 199, 200, 201, 202, 219, 220, 221, 224, 240, 254,
    255, 256, 265, 266, 295, 300, 308, 309, 319, 331, 355, 359, 360, 361, 362, 363, 364, 365, 366, 367, 368, 369, 370,
    371, 372, 383, 403, 413, 422,
];

/// Whether system call `nr` leaves the guest's FPU state alone (see [`KEEPS_FPU`]).
pub(crate) fn keeps_fpu(nr: u32) -> bool {
    KEEPS_FPU.binary_search(&nr).is_ok()
}

/// The calls that ask whether descriptors are ready (the `poll`, `select` and `epoll`
/// families): before one, the caller's signalfds and pidfds show what is ready for it.
const ASK_READINESS: [u32; 11] = [82, 142, 168, 255, 256, 308, 309, 319, 413, 414, 441];

/// Brings the readiness the host shows for `p`'s signalfds and pidfds (descriptors
/// morph serves itself, see [`crate::files::Served`]) up to date: a signalfd is ready
/// while a signal it reads is pending for `p`'s running thread, a pidfd once what it
/// names has ended (and hangs up once it is reaped). Done before `p` asks (a call of
/// the `poll` family, or the scheduler polling the descriptors `p` waits on).
pub(crate) fn refresh_served(tasks: &crate::kernel::tasks::Tasks, p: &Process) {
    use crate::files::{Served, ServedKind};
    if !crate::files::any_served() {
        return;
    }
    for (_, e) in p.fds.iter() {
        match &e.host.served {
            Some(s @ Served { what: ServedKind::Signal(mask), .. }) => {
                s.set_ready(signal::signalfd_ready(p, mask.get()))
            }
            Some(s @ Served { what: ServedKind::Pid { pid, thread }, .. }) => {
                s.set_ready(proc::pidfd_ended(tasks, p, *pid, *thread));
                if proc::pidfd_reaped(tasks, p, *pid) {
                    s.hang_up();
                }
            }
            None => {}
        }
    }
}

/// Handles the system call the process just made (number in EAX, arguments in EBX,
/// ECX, EDX, ESI, EDI, EBP); the result goes to EAX.
pub fn dispatch(m: &mut Machine, p: &mut Process) {
    let nr = p.cpu.gpr[reg::EAX];
    let g = &p.cpu.gpr;
    let args = [g[reg::EBX], g[reg::ECX], g[reg::EDX], g[reg::ESI], g[reg::EDI], g[reg::EBP]];
    m.stats_mut().syscalls.add(nr);
    let row = lookup(nr);
    let traced = m.config().strace.then(|| strace::Call::before(p, nr, row, &args));
    if ASK_READINESS.contains(&nr) {
        refresh_served(m.tasks(), p);
    }
    // Only this call's failures count below.
    m.phys().take_starved();
    m.phys().take_host_starved();
    // A process after `chroot`: its paths resolve in its root for this call.
    let chrooted = p.root.is_some();
    if chrooted {
        m.vfs().set_view(p.root.clone());
    }
    let res = match row {
        Some(s) => match s.handler {
            Handler::Files(h) => h(&mut m.file_ctx(), p, &args),
            Handler::Net(h) => h(&mut m.net_ctx(), p, &args),
            Handler::Io(h) => h(&mut m.io_ctx(), p, &args),
            Handler::Task(h) => h(&mut m.task_ctx(), p, &args),
        },
        None => {
            *m.stats_mut().enosys.entry(nr).or_default() += 1;
            Err(ENOSYS)
        }
    };
    if chrooted || p.root.is_some() {
        m.vfs().set_view(None);
    }
    // A guest buffer the call could not prepare for want of a frame (a first touch, a
    // copy-on-write break): the page cache gives back idle pages and the call runs
    // again, as Linux reclaims within the fault; with nothing to give back it is
    // `EFAULT`, as Linux's copy to or from user memory fails when the fault cannot be
    // served.
    let res = match res {
        Err(EFAULT) if m.reclaim_starved(RECLAIM_IN_CALL) => Err(ERESTARTSYS),
        r => r,
    };
    if let Some(call) = traced {
        m.trace(&call.after(p, &res));
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
        assert!(KEEPS_FPU.windows(2).all(|w| w[0] < w[1]), "KEEPS_FPU sorted");
        assert!(keeps_fpu(4) && !keeps_fpu(2) && !keeps_fpu(11) && !keeps_fpu(119) && !keeps_fpu(173));
        assert_eq!(lookup(2).map(|s| s.name), Some("fork"));
        assert!(lookup(0).is_none());
    }

    #[test]
    fn names_are_the_kernels() {
        for nr in 0..512 {
            if let Some(s) = lookup(nr) {
                assert_eq!(strace::name_of(nr), s.name, "system call {nr}");
            }
        }
    }
}
