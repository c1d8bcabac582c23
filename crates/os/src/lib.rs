//! The Linux i386 personality of morph.
//!
//! This crate owns everything a guest program sees as "the kernel": the ELF loader and
//! its ASLR model ([`layout`]), the initial stack, the `int 0x80` system calls (a table,
//! see [`syscall`]), processes and their descriptors, and the file-system sandbox
//! ([`vfs`]). It drives the CPU engine through [`Machine::run`]: run a process until it
//! traps, handle the trap, repeat.

pub mod files;
mod host;
mod kernel;
pub mod layout;
pub mod linux;
pub mod loader;
pub mod locks;
mod machine;
pub mod process;
pub mod pty;
pub mod sigio;
pub mod special;
pub mod stop;
pub mod syscall;
pub mod vfs;

pub use kernel::{Config, DEFAULT_MAX_PROCS, FIRST_PID, Machine, OsStats, RunError, SyscallCounts};
pub use process::ExitStatus;
