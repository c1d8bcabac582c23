//! The guest CPU: IA-32 state, decoding and the reference interpreter.
//!
//! morph's guest is the user-mode i686 instruction set the Transmeta Crusoe TM5600
//! reported to Linux (see [`cpuid`]): the integer ISA up to the Pentium Pro (CMOV,
//! CMPXCHG8B, RDTSC, CPUID), the x87 FPU and MMX — no SSE. Instructions outside that
//! set raise `#UD`, which the OS layer turns into a guest `SIGILL`.
//!
//! [`Interp`] is the *reference interpreter*: it defines the semantics that the
//! translator must reproduce, and native execution on the host defines what the
//! interpreter must reproduce. It decodes with iced-x86 once per basic block and keeps
//! the decoded blocks in a cache keyed by guest virtual address and validated against
//! the physical frames the bytes came from; a guest write to such a frame (the
//! frame's *code* bit, see `morph_mem::PhysMem`) drops the stale blocks, so
//! self-modifying code works.
//!
//! The CPU knows nothing about Linux: `int 0x80` simply ends execution with
//! [`Exit::Syscall`], and faults end it with [`Exit::Fault`] at the precise guest EIP.

pub mod alu;
pub mod cpuid;
pub mod host;
mod interp;
pub mod isa;
pub mod state;
pub mod x87;

pub use interp::{CachedBlock, Exit, Fault, FaultKind, Interp, InterpStats, MAX_INSN_LEN};
pub use isa::{Support, support};
pub use state::{Cpu, FpuState, TlsDescriptor, Trap, X87_SHADOW, x87_opcode};
