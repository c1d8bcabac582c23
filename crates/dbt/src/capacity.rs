//! The translation cache's capacity: how big it may grow before it is flushed.
//!
//! The cache's size is its host code plus the engine's records of what it holds: a
//! slot per key (profile count, live translation, successor prediction), the index
//! entry that finds it, and per translation its record, chain sites and fault points.
//! Under a key that makes new keys at every exec (`virtual` or `process` under ASLR)
//! the records grow as fast as the code, so both count. When the size reaches the
//! capacity the whole cache is flushed (`Engine::flush`), as the Crusoe's Code
//! Morphing Software and QEMU do (see `docs/engine.md`).

use crate::Engine;
use crate::generate::Translation;
use crate::key::Key;
use crate::slots::Slot;

/// The default capacity: generous (the seed workload's whole code under any key fits
/// many times over) but bounded, so that thousands of execs under ASLR keep the
/// host's memory bounded.
pub const DEFAULT_TC_SIZE: usize = 64 << 20;

/// The Crusoe's capacity (`--tc-size crusoe`): the Code Morphing Software reserved
/// 16 MB of the machine's memory, about 14 MB of it for translations.
pub const CRUSOE_TC_SIZE: usize = 14 << 20;

/// The smallest capacity accepted: the runtime stubs and a few of the largest
/// translations must fit.
pub const MIN_TC_SIZE: usize = 64 << 10;

/// Named capacities accepted by [`parse_tc_size`], with what they stand for.
pub const TC_PROFILES: &[(&str, usize, &str)] = &[
    ("crusoe", CRUSOE_TC_SIZE, "14 MiB: the Crusoe's translation cache (16 MB reserved by CMS)"),
    ("default", DEFAULT_TC_SIZE, "64 MiB"),
];

/// Parses a capacity: bytes, with an optional `K`, `M` or `G` suffix (binary:
/// `64M` = 64 MiB; a trailing `iB` or `B` is accepted), or a named profile
/// ([`TC_PROFILES`]).
pub fn parse_tc_size(s: &str) -> Result<usize, String> {
    let t = s.trim();
    if let Some(&(_, n, _)) = TC_PROFILES.iter().find(|(name, _, _)| name.eq_ignore_ascii_case(t)) {
        return Ok(n);
    }
    let lower = t.to_ascii_lowercase();
    let digits = lower.trim_end_matches("ib").trim_end_matches('b');
    let (num, shift) = match digits.as_bytes().last() {
        Some(b'k') => (&digits[..digits.len() - 1], 10),
        Some(b'm') => (&digits[..digits.len() - 1], 20),
        Some(b'g') => (&digits[..digits.len() - 1], 30),
        _ => (digits, 0),
    };
    let bad = || {
        let names: Vec<&str> = TC_PROFILES.iter().map(|p| p.0).collect();
        format!("bad size `{s}`: bytes with an optional K, M or G suffix, or one of {}", names.join(", "))
    };
    let n: u64 = num.trim().parse().map_err(|_| bad())?;
    let n = n.checked_shl(shift).filter(|v| v >> shift == n).ok_or_else(bad)?;
    let n = usize::try_from(n).map_err(|_| bad())?;
    if n < MIN_TC_SIZE {
        return Err(format!("size `{s}` is below the minimum of {} KiB", MIN_TC_SIZE >> 10));
    }
    Ok(n)
}

/// Bytes a key costs beside its slot: its index entry (key, slot number, hash-table
/// control byte, rounded up).
const INDEX_ENTRY_BYTES: usize = 24;

/// Bytes a translation costs beside its record: its fault points and chain sites, on
/// average (measured: about 6 of each for a typical block).
const TRANSLATION_EXTRA_BYTES: usize = 160;

impl Engine {
    /// The cache's size: host code and the records of keys and translations.
    #[inline]
    pub(crate) fn cache_bytes(&self) -> usize {
        self.code.offset()
            + self.slots.len() * (std::mem::size_of::<Slot>() + INDEX_ENTRY_BYTES)
            + self.trans.len() * (std::mem::size_of::<Translation>() + TRANSLATION_EXTRA_BYTES)
            + self.untranslatable.len() * std::mem::size_of::<Key>() * 2
            + self.template_bytes
    }

    /// Whether the cache has reached its capacity (it is flushed before the next block).
    #[inline]
    pub(crate) fn over_capacity(&self) -> bool {
        // The code buffer's capacity: `tc_size`, at least `MIN_TC_SIZE`.
        self.cache_bytes() >= self.code.capacity()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_suffixes_and_profiles() {
        assert_eq!(parse_tc_size("1048576"), Ok(1 << 20));
        assert_eq!(parse_tc_size("64K"), Ok(64 << 10));
        assert_eq!(parse_tc_size("64MiB"), Ok(64 << 20));
        assert_eq!(parse_tc_size("2g"), Ok(2 << 30));
        assert_eq!(parse_tc_size("crusoe"), Ok(14 << 20));
        assert!(parse_tc_size("1K").unwrap_err().contains("minimum"));
        for bad in ["", "M", "12X", "-5M", "99999999999999999999G"] {
            assert!(parse_tc_size(bad).is_err(), "{bad}");
        }
    }
}
