//! Signal-driven I/O (`O_ASYNC`, `F_SETOWN`, `F_SETSIG`) and directory notification
//! (`F_NOTIFY`), with the host kernel as the source of the events.
//!
//! A guest descriptor is a host descriptor, and the host kernel already knows when I/O
//! becomes possible on it (a pipe written, a connection arrived, a terminal's input) and
//! when a watched directory changes. So morph asks the host for those signals itself:
//! the host description is given morph's scheduler thread as its owner (`F_SETOWN_EX`)
//! and one real-time signal, [`host_signal`], as its signal (`F_SETSIG`), then `O_ASYNC`
//! or `F_NOTIFY` is set on it as the guest asked. The host then sends that signal with
//! the host descriptor, the reason (`POLL_IN`, `POLL_OUT`, `POLL_MSG`…) and the band,
//! at the moment of the event: during the host call that caused it when a guest's own
//! call did (a `write` to the pipe), so the guest signal is queued before that call
//! returns, as on Linux. The handler only records the event in a ring and wakes the
//! scheduler through a pipe; the scheduler ([`crate::Machine`]) takes the events at its
//! next turn and sends each one as the guest's owner, signal and descriptor say
//! (`Fown`).
//!
//! Not modeled: `SIGURG` for out-of-band data (the host's carries no descriptor), and a
//! host ring overflow (more than [`RING`] events between two turns) sends a plain
//! `SIGIO` to the owner of every description with signal-driven I/O on, as Linux falls
//! back to `SIGIO` when a real-time signal cannot be queued.

use std::cell::RefCell;
use std::collections::HashMap;
use std::os::fd::{AsRawFd, IntoRawFd};
use std::rc::{Rc, Weak};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, AtomicUsize, Ordering};

use crate::files::OpenFile;

/// Events kept between two turns of the scheduler.
pub const RING: usize = 1024;

static EVENTS: [AtomicU64; RING] = [const { AtomicU64::new(0) }; RING];
/// Events written (by the handler) and taken (by the scheduler).
static HEAD: AtomicUsize = AtomicUsize::new(0);
static TAIL: AtomicUsize = AtomicUsize::new(0);
/// The ring was full when an event came.
static LOST: AtomicBool = AtomicBool::new(false);
/// The wake pipe: read end, write end (-1 before [`enable`] first ran).
static PIPE: [AtomicI32; 2] = [AtomicI32::new(-1), AtomicI32::new(-1)];

/// The host signal morph asks for: `SIGRTMAX - 2` (glibc keeps the lowest real-time
/// signals for itself; morph uses no other).
pub fn host_signal() -> i32 {
    libc::SIGRTMAX() - 2
}

/// One host event: the host descriptor, `si_code` (`POLL_IN`…) and `si_band`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event {
    /// The host descriptor (`si_fd`).
    pub host_fd: i32,
    /// Why (`si_code`: `POLL_IN`, `POLL_OUT`, `POLL_MSG`, `POLL_ERR`, `POLL_PRI`,
    /// `POLL_HUP`).
    pub code: i32,
    /// The poll bits of that reason (`si_band`).
    pub band: u32,
}

/// Packs an event into a non-zero word (zero marks an empty entry).
fn pack(fd: i32, code: i32, band: u32) -> u64 {
    1 << 63 | u64::from(fd as u32) << 24 | u64::from(code as u8) << 16 | u64::from(band & 0xffff)
}

fn unpack(w: u64) -> Event {
    Event { host_fd: (w >> 24) as u32 as i32, code: i32::from((w >> 16) as u8 as i8), band: (w & 0xffff) as u32 }
}

extern "C" fn on_signal(_: i32, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo. For the SIGPOLL layout of x86-64,
    // `si_band` (a long) is at byte 16 and `si_fd` (an int) at byte 24.
    let (code, band, fd) = unsafe {
        let base = info.cast::<u8>();
        ((*info).si_code, base.add(16).cast::<i64>().read_unaligned(), base.add(24).cast::<i32>().read_unaligned())
    };
    // One producer: the handler runs on morph's one thread and does not nest (its own
    // signal is blocked while it runs).
    let h = HEAD.load(Ordering::Relaxed);
    if h.wrapping_sub(TAIL.load(Ordering::Acquire)) >= RING {
        LOST.store(true, Ordering::Release);
    } else {
        EVENTS[h % RING].store(pack(fd, code, band as u32), Ordering::Relaxed);
        HEAD.store(h.wrapping_add(1), Ordering::Release);
    }
    let w = PIPE[1].load(Ordering::Relaxed);
    if w >= 0 {
        // write(2) is async-signal-safe; a full pipe is already awake.
        let _ = crate::host::write(w, b"x");
    }
}

/// Installs the handler and makes the wake pipe, once.
fn install() -> std::io::Result<()> {
    if PIPE[0].load(Ordering::SeqCst) >= 0 {
        return Ok(());
    }
    let (r, w) = crate::host::pipe2(libc::O_CLOEXEC | libc::O_NONBLOCK).map_err(std::io::Error::from_raw_os_error)?;
    // SAFETY: a zeroed sigaction filled with our handler (SA_SIGINFO, which the
    // handler's signature is) and an empty mask. SA_RESTART: a host call of morph's
    // that the signal interrupts is restarted (the scheduler's `poll` returns early,
    // which it expects).
    let ok = unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_signal as *const () as usize;
        sa.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
        libc::sigemptyset(&mut sa.sa_mask);
        libc::sigaction(host_signal(), &sa, std::ptr::null_mut()) == 0
    };
    if !ok {
        return Err(std::io::Error::last_os_error());
    }
    PIPE[0].store(r.into_raw_fd(), Ordering::SeqCst);
    PIPE[1].store(w.into_raw_fd(), Ordering::SeqCst);
    Ok(())
}

thread_local! {
    /// The descriptions whose host events are the guest's, by host descriptor.
    static FILES: RefCell<HashMap<i32, Weak<OpenFile>>> = RefCell::new(HashMap::new());
}

/// Makes the host send [`host_signal`] to this thread for the events of `f`'s host
/// description, and the events the guest's: before `O_ASYNC` or `F_NOTIFY` is set
/// on it. An error is the host's (the guest call fails with it).
pub fn enable(f: &Rc<OpenFile>) -> Result<(), i32> {
    install().map_err(|e| e.raw_os_error().unwrap_or(libc::EIO))?;
    let fd = f.as_raw_fd();
    // Linux's `F_SETSIG`, `F_SETOWN_EX` and `struct f_owner_ex { int type; pid_t pid; }`
    // with `F_OWNER_TID` (0).
    const F_SETSIG: i32 = 10;
    const F_SETOWN_EX: i32 = 15;
    // SAFETY: gettid has no preconditions; fcntl on a descriptor we own, with a signal
    // number and a pointer to an `f_owner_ex` in our local.
    let ok = unsafe {
        let owner: [i32; 2] = [0, libc::gettid()];
        libc::fcntl(fd, F_SETSIG, host_signal()) == 0 && libc::fcntl(fd, F_SETOWN_EX, owner.as_ptr()) == 0
    };
    if !ok {
        return Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO));
    }
    FILES.with(|m| m.borrow_mut().insert(fd, Rc::downgrade(f)));
    Ok(())
}

/// Whether events may be waiting (one load: the scheduler asks at every turn).
#[inline]
pub fn pending() -> bool {
    HEAD.load(Ordering::Acquire) != TAIL.load(Ordering::Relaxed) || LOST.load(Ordering::Relaxed)
}

/// The wake pipe's read end, for the scheduler's sleep (none before the first use).
pub fn wake_fd() -> Option<i32> {
    Some(PIPE[0].load(Ordering::Relaxed)).filter(|&fd| fd >= 0)
}

/// What came since the last call: the events, and whether some were lost.
pub fn take() -> (Vec<Event>, bool) {
    if let Some(r) = wake_fd() {
        let mut b = [0u8; 64];
        while crate::host::read(r, &mut b).is_ok_and(|n| n == b.len()) {}
    }
    let mut out = Vec::new();
    let head = HEAD.load(Ordering::Acquire);
    let mut t = TAIL.load(Ordering::Relaxed);
    while t != head {
        out.push(unpack(EVENTS[t % RING].load(Ordering::Relaxed)));
        t = t.wrapping_add(1);
    }
    TAIL.store(t, Ordering::Release);
    (out, LOST.swap(false, Ordering::AcqRel))
}

/// The description of host descriptor `fd` whose events are the guest's, if it is open.
pub fn file(fd: i32) -> Option<Rc<OpenFile>> {
    FILES.with(|m| {
        let mut m = m.borrow_mut();
        let f = m.get(&fd)?.upgrade();
        if f.is_none() {
            m.remove(&fd);
        }
        f
    })
}

/// Every open description with signal-driven I/O or a directory notification on.
pub fn files() -> Vec<Rc<OpenFile>> {
    FILES.with(|m| {
        let mut m = m.borrow_mut();
        m.retain(|_, w| w.strong_count() > 0);
        m.values().filter_map(Weak::upgrade).collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_pack_and_unpack() {
        for (fd, code, band) in [(3, 1, 0x41), (1023, 3, 0x441), (0x7fff_ffff, 6, 0x18), (5, 2, 0x104)] {
            let w = pack(fd, code, band);
            assert_ne!(w, 0);
            assert_eq!(unpack(w), Event { host_fd: fd, code, band });
        }
    }
}
