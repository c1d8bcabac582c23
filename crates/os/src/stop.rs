//! Ending the machine when morph itself is asked to stop (SIGTERM, SIGINT, SIGHUP).
//!
//! Every way a run ends must leave files as the Linux page cache would: stores made
//! through `MAP_SHARED` file mappings are written back when an address space is dropped
//! (`morph_mem::AddressSpace`). A signal that killed morph outright would skip that, so
//! [`catch`] installs a handler that only records the signal and wakes the scheduler
//! (through a pipe it polls while every process sleeps); [`Machine::run`] then returns
//! [`RunError::Stopped`] at its next turn, the caller drops the machine (writing back)
//! and dies of the same signal with [`die_of`].
//!
//! [`Machine::run`]: crate::Machine::run
//! [`RunError::Stopped`]: crate::RunError::Stopped

use std::os::fd::IntoRawFd;
use std::sync::atomic::{AtomicI32, Ordering};

/// The signal that asked morph to stop, or 0.
static SIGNAL: AtomicI32 = AtomicI32::new(0);
/// The pipe the handler writes to: read end, write end (-1 before [`catch`]).
static PIPE: [AtomicI32; 2] = [AtomicI32::new(-1), AtomicI32::new(-1)];

/// The signals that stop morph cleanly.
pub const SIGNALS: [i32; 3] = [libc::SIGTERM, libc::SIGINT, libc::SIGHUP];

extern "C" fn on_signal(sig: i32) {
    SIGNAL.store(sig, Ordering::SeqCst);
    let w = PIPE[1].load(Ordering::SeqCst);
    if w >= 0 {
        // write(2) is async-signal-safe; a full pipe (already woken) is fine.
        let _ = crate::host::write(w, b"x");
    }
}

/// Makes SIGTERM, SIGINT and SIGHUP stop the machine at its next turn instead of
/// killing morph (see the module documentation).
pub fn catch() -> std::io::Result<()> {
    if PIPE[0].load(Ordering::SeqCst) < 0 {
        // The pipe lives as long as morph: its descriptors are kept as plain numbers.
        let (r, w) =
            crate::host::pipe2(libc::O_CLOEXEC | libc::O_NONBLOCK).map_err(std::io::Error::from_raw_os_error)?;
        PIPE[0].store(r.into_raw_fd(), Ordering::SeqCst);
        PIPE[1].store(w.into_raw_fd(), Ordering::SeqCst);
    }
    for sig in SIGNALS {
        // The handler only touches atomics and calls write(2).
        crate::host::set_signal_handler(sig, on_signal)?;
    }
    Ok(())
}

/// The signal that asked morph to stop, if one came.
pub fn requested() -> Option<i32> {
    Some(SIGNAL.load(Ordering::SeqCst)).filter(|&s| s != 0)
}

/// The descriptor to poll while the machine sleeps (readable once a stop is asked for).
pub(crate) fn wake_fd() -> Option<i32> {
    Some(PIPE[0].load(Ordering::SeqCst)).filter(|&fd| fd >= 0)
}

/// Dies of `sig` as if it had never been caught (after the machine wrote back what it
/// had to): the default action, unblocked, raised.
pub fn die_of(sig: i32) -> ! {
    crate::host::raise_default(sig);
    std::process::exit(128 + sig)
}
