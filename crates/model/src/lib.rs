//! The Crusoe TM5600 cost model: morph's event counts turned into modeled seconds.
//!
//! morph runs real i386 programs on an x86-64 host, interpreting cold code and
//! translating hot blocks, and counts what it does. Host time says how fast *morph* is;
//! it cannot say how long a 533 MHz Transmeta Crusoe TM5600 would have taken, which is
//! what the 2005 report (0.671 s with `randomize_va_space=0`, 3.310 s with `=1`) is
//! about. This crate prices each counted event in TM5600 cycles and divides by the clock:
//!
//! ```text
//! user = interp_instructions × interp_insn + translated_instructions × translated_insn
//!      + translated_guest_instructions × translate_insn + translations × translate_block
//!      + lookups × lookup + misses × miss + chain_patches × chain_patch
//!      + host_faults × host_fault + flushes × flush + reuses × reuse
//!      + tcache_loads × tcache_load (cycles / clock_hz)
//! sys  = syscalls × syscall + forks × fork + execs × exec + page_cache_fills × page_cache_fill
//!      + frames_allocated × frame_alloc + mmaps × mmap              (cycles / clock_hz)
//! ```
//!
//! Every price carries its source, or is marked as an assumption with its reasoning
//! ([`CostModel::params`], `docs/model.md`). The prices were chosen before looking at
//! what they give for the 2005 script and are not fitted to it; [`sensitivity()`] shows
//! how far the conclusion moves when any one of them is halved or doubled.
//!
//! ```
//! use morph_model::{CostModel, Counts};
//!
//! let stats = serde_json::json!({
//!     "engine": { "interp_instructions": 2_000_000, "translated_instructions": 50_000_000,
//!                 "translated_guest_instructions": 30_000, "translations": 3_000,
//!                 "lookups": 600_000, "misses": 150_000 },
//!     "os": { "syscalls_total": 4_000, "processes": 50, "execs": 50 },
//! });
//! let counts = Counts::from_stats_json(&stats);
//! let modeled = CostModel::tm5600().model(&counts);
//! assert!(modeled.user_s > 0.0 && modeled.sys_s > 0.0);
//! assert!((modeled.total_s - modeled.user_s - modeled.sys_s).abs() < 1e-12);
//!
//! // What if translation were twice as expensive?
//! let mut m = CostModel::tm5600();
//! m.set("translate_insn", 2.0 * m.get("translate_insn").unwrap()).unwrap();
//! assert!(m.model(&counts).user_s > modeled.user_s);
//! ```
//!
//! Layout: [`counts`] (what a run did, read from `--stats-json`), [`params`] (the one
//! table of prices and sources), [`model`] (applying it),
//! [`sensitivity`](mod@sensitivity) (robustness of an ASLR-off/on comparison), [`fit`](mod@fit)
//! (the assumptions fitted to the 2005 report: a separate, labelled result).

pub mod counts;
pub mod fit;
pub mod model;
pub mod params;
pub mod sensitivity;

pub use counts::Counts;
pub use model::{CostModel, ModelError, Modeled};
pub use params::{Param, Side};
pub use sensitivity::{SensitivityRow, compare, sensitivity};
