//! The event counts the model prices: what one morph run did.
//!
//! [`Counts`] is a plain record of `u64` counters, one per event the model has a price
//! for. The names follow morph's own counters, and [`Counts::from_stats_json`] reads
//! them from the document `morph run --stats-json FILE` writes (the `engine`, `os` and
//! `memory` objects), so a saved run can be modeled again later, with another set of
//! parameters, without re-running it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What one run did, counted in events.
///
/// Every field is a count over the whole run (all processes of the guest machine).
/// A missing counter reads as zero.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Counts {
    /// Guest x86 instructions run by the interpreter (`engine.interp_instructions`).
    pub interp_instructions: u64,
    /// Guest x86 instructions run inside translations (`engine.translated_instructions`).
    pub translated_instructions: u64,
    /// Guest x86 instructions translated, i.e. the translator's input
    /// (`engine.translated_guest_instructions`).
    pub translated_guest_instructions: u64,
    /// Translations made (`engine.translations`).
    pub translations: u64,
    /// Translation-cache lookups, one per block the dispatcher starts (`engine.lookups`).
    pub lookups: u64,
    /// Lookups that found no valid translation (`engine.misses`).
    pub misses: u64,
    /// Direct branches patched to chain two translations (`engine.chain_patches`).
    pub chain_patches: u64,
    /// System calls, all numbers together (`os.syscalls_total`).
    pub syscalls: u64,
    /// Processes created (`os.processes`; includes the first process of the machine).
    pub forks: u64,
    /// Successful `execve` calls (`os.execs`; from a document without it, the number of
    /// `execve` calls, `os.syscalls.execve`).
    pub execs: u64,
    /// File pages read into the machine's page cache (`memory.page_cache_fills`).
    pub page_cache_fills: u64,
    /// Physical frames allocated (`memory.frames_allocated`).
    pub frames_allocated: u64,
    /// Faults raised inside translated code and re-run by the interpreter
    /// (`engine.host_faults`).
    pub host_faults: u64,
    /// Translation caches flushed because they were full (`engine.flushes`).
    pub flushes: u64,
    /// Translations copied from another frame's translation of the same code instead of
    /// translated (`engine.reuses`).
    pub reuses: u64,
    /// Translations loaded from the persistent translation cache instead of interpreted
    /// and translated (`engine.tcache_loads`).
    pub tcache_loads: u64,
    /// `mmap` and `mmap2` calls (`os.syscalls.mmap` + `os.syscalls.mmap2`).
    pub mmaps: u64,
}

impl Counts {
    /// Reads the counters from a `morph run --stats-json` document.
    ///
    /// Counters that are absent (an older or a newer morph) read as zero; nothing here
    /// fails, so check the result if the document may not be a stats document at all.
    ///
    /// ```
    /// let v = serde_json::json!({
    ///     "engine": { "interp_instructions": 1000, "lookups": 40 },
    ///     "os": { "syscalls_total": 12, "processes": 1, "syscalls": { "mmap2": 3 } },
    ///     "memory": { "page_cache_fills": 5 }
    /// });
    /// let c = morph_model::Counts::from_stats_json(&v);
    /// assert_eq!((c.interp_instructions, c.syscalls, c.mmaps), (1000, 12, 3));
    /// ```
    pub fn from_stats_json(v: &Value) -> Counts {
        let get =
            |section: &str, key: &str| v.get(section).and_then(|s| s.get(key)).and_then(Value::as_u64).unwrap_or(0);
        let syscall = |name: &str| {
            v.get("os").and_then(|s| s.get("syscalls")).and_then(|s| s.get(name)).and_then(Value::as_u64).unwrap_or(0)
        };
        Counts {
            interp_instructions: get("engine", "interp_instructions"),
            translated_instructions: get("engine", "translated_instructions"),
            translated_guest_instructions: get("engine", "translated_guest_instructions"),
            translations: get("engine", "translations"),
            lookups: get("engine", "lookups"),
            misses: get("engine", "misses"),
            chain_patches: get("engine", "chain_patches"),
            syscalls: get("os", "syscalls_total"),
            forks: get("os", "processes"),
            // Older morphs have no `os.execs`; their `execve` call count (failed calls
            // included) is the closest stand-in.
            execs: v
                .get("os")
                .and_then(|s| s.get("execs"))
                .and_then(Value::as_u64)
                .unwrap_or_else(|| syscall("execve")),
            page_cache_fills: get("memory", "page_cache_fills"),
            frames_allocated: get("memory", "frames_allocated"),
            host_faults: get("engine", "host_faults"),
            flushes: get("engine", "flushes"),
            reuses: get("engine", "reuses"),
            tcache_loads: get("engine", "tcache_loads"),
            // Linux i386 names: 90 is the old one-argument `mmap`, 192 is `mmap2`.
            mmaps: syscall("mmap") + syscall("mmap2"),
        }
    }

    /// Guest x86 instructions executed, interpreted or translated.
    pub fn guest_instructions(&self) -> u64 {
        self.interp_instructions + self.translated_instructions
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The shape `morph run --stats-json` writes (crates/cli, `stats_json`), trimmed to a
    /// few counters the model does not read as well as all the ones it does.
    fn sample() -> Value {
        json!({
            "wall_ns": 123456789u64,
            "engine": {
                "kind": "dbt", "key": "physical", "threshold": 50, "chain": true,
                "lookups": 5000, "hits": 4200, "misses": 800, "translations": 70,
                "retranslations": 3, "chain_patches": 90, "jump_cache_hits": 10,
                "invalidations": 1, "interp_instructions": 40000,
                "translated_instructions": 1000000, "translated_guest_instructions": 900,
                "helper_instructions": 4, "host_faults": 6, "flushes": 2, "reuses": 8, "tcache_loads": 5, "interp_ns": 1, "translate_ns": 2,
                "exec_ns": 3
            },
            "os": {
                "syscalls_total": 321,
                "syscalls": { "brk": 4, "mmap2": 17, "mmap": 2, "write": 9 },
                "enosys": {}, "os_ns": 1, "engine_ns": 2, "processes": 3, "execs": 2,
                "idle_ns": 0, "unsupported_clones": 0
            },
            "memory": {
                "frames_in_use": 10, "frames_peak": 20, "frames_allocated": 4242,
                "code_writes": 0, "page_cache_lookups": 99, "page_cache_hits": 40,
                "page_cache_fills": 59, "page_cache_files": 5, "page_cache_pages": 59
            }
        })
    }

    #[test]
    fn reads_every_counter_from_the_stats_document() {
        let c = Counts::from_stats_json(&sample());
        assert_eq!(
            c,
            Counts {
                interp_instructions: 40000,
                translated_instructions: 1_000_000,
                translated_guest_instructions: 900,
                translations: 70,
                lookups: 5000,
                misses: 800,
                chain_patches: 90,
                syscalls: 321,
                forks: 3,
                execs: 2,
                page_cache_fills: 59,
                frames_allocated: 4242,
                host_faults: 6,
                flushes: 2,
                reuses: 8,
                tcache_loads: 5,
                mmaps: 19,
            }
        );
        assert_eq!(c.guest_instructions(), 1_040_000);
    }

    #[test]
    fn missing_sections_and_counters_read_as_zero() {
        assert_eq!(Counts::from_stats_json(&json!({})), Counts::default());
        assert_eq!(Counts::from_stats_json(&json!("not an object")), Counts::default());
        let c = Counts::from_stats_json(&json!({ "engine": { "lookups": 7, "misses": "x" } }));
        assert_eq!(c, Counts { lookups: 7, ..Counts::default() });
    }

    #[test]
    fn without_an_exec_counter_the_execve_calls_stand_in() {
        let c = Counts::from_stats_json(&json!({ "os": { "syscalls": { "execve": 102 } } }));
        assert_eq!(c.execs, 102);
        let c = Counts::from_stats_json(&json!({ "os": { "execs": 100, "syscalls": { "execve": 102 } } }));
        assert_eq!(c.execs, 100);
    }

    #[test]
    fn serde_round_trip_and_defaults() {
        let c = Counts::from_stats_json(&sample());
        let text = serde_json::to_string(&c).unwrap();
        assert_eq!(serde_json::from_str::<Counts>(&text).unwrap(), c);
        // A partial record fills the rest with zeros.
        let partial: Counts = serde_json::from_str(r#"{"execs": 4}"#).unwrap();
        assert_eq!(partial, Counts { execs: 4, ..Counts::default() });
    }
}
