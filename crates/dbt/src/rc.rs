//! The return cache (`--ret-cache`): a guest `ret` in translated code finds where to
//! continue in an entry indexed by the stack slot it pops, instead of by the return
//! address it pops.
//!
//! A translated guest `call` writes, after pushing its return address, the entry of the
//! slot it pushed it at (bits 2 to 17 of ESP: one entry per 4-byte slot of 256 KiB of
//! stack, `runtime::JitFrame::rc`) with the key `-(tag << 32 | return address)` and the
//! host address of a *landing pad* placed after the call's transfer in the calling
//! translation: `lea r14d, [r13 - page offset]` and a chain site to the return address,
//! as the return stack's pad (`crate::ras`). A translated `ret` computes the same index
//! from ESP before it pops, loads the entry's key and adds the current tag and the popped
//! address: zero on a hit, and it jumps through the entry to the pad; otherwise it
//! counts a miss (`ras_misses`) and takes the indirect-branch table like any indirect
//! branch.
//!
//! What it changes is the return's dependency chain. Through the table, the jump's
//! target comes from a load whose address is the popped return address: two dependent
//! loads, the second into a table whose hot entries are scattered over as many lines
//! and pages as the program has return sites. Through the cache, the target's load is
//! addressed by ESP, which is known before the pop, and it reads a line the call wrote
//! a moment ago (the entries in use are those of the live stack frames: a few lines).
//! The host still predicts the jump with its indirect predictor; a misprediction
//! resolves sooner. Unlike the return stack, no host `call` or `ret` runs and nothing
//! is pushed on a host stack, so nothing can be unbalanced: a guest that rewrites its
//! return address, `longjmp`s, returns from a signal handler elsewhere, or returns to
//! code called while interpreting just misses (the key names the address), and a call
//! whose slot is overwritten before its return (a deeper call at the same slot of
//! another stack, another thread) costs one miss.
//!
//! Entries carry the jump-cache tag, which names the mapping and changes whenever a
//! translation is dropped (`Engine::kill`, a flush): a key matches only while the
//! calling translation, its pad and the mapping it was made under are what they were
//! when the call ran, so a pad is never reached in a dead translation nor under another
//! mapping of the page. Tags restarting (`JumpCache::reset`) empty every entry. The
//! index and the key are computed with `rorx`, `movzx`, `lea` and `not`, which leave the
//! guest's flags (live in the host's) alone: the engine turns the cache off on a host
//! without BMI2.

/// Whether the host can run the return cache's code (`rorx` is BMI2).
pub(crate) fn available() -> bool {
    crate::glue::host_has_bmi2()
}
