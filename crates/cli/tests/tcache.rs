//! The persistent translation cache (`--tcache-dir`): a warm run loads what a cold run
//! translated (and, with `--tcache-cold`, the blocks it only interpreted) instead of
//! interpreting and translating again, under another seed and ASLR layout, with the
//! output native gives;
//! a damaged cache is rejected, counted and never run; concurrent runs share a directory.

mod common;

use std::path::{Path, PathBuf};

use common::*;

/// Dynamic programs run several times, as the seed workload does.
const SCRIPT: &str = "for i in 1 2 3; do ls -la /usr/lib | head -5; sort -r /etc/passwd | head -3; expr $i + 40; \
                      echo abc | tr a-c x-z; done";

fn argv() -> [&'static str; 3] {
    ["/bin/bash", "-c", SCRIPT]
}

/// A run under `morph run --engine dbt FLAGS --tcache-dir DIR`, with its counters.
fn run(dir: &Path, key: &str, seed: u32, tag: &str) -> (Run, serde_json::Value) {
    run_with(dir, key, seed, tag, &[])
}

/// `run` with more translator flags.
fn run_with(dir: &Path, key: &str, seed: u32, tag: &str, more: &[&str]) -> (Run, serde_json::Value) {
    let root = sysroot();
    let cwd = GuestDir::new(root, &format!("tcache-{tag}"));
    let json = cwd.host.join("stats.json");
    let (d, j, s) = (dir.to_str().unwrap(), json.to_str().unwrap(), seed.to_string());
    let mut flags =
        vec!["--engine", "dbt", "--key", key, "--aslr", "2", "--seed", &s, "--tcache-dir", d, "--stats-json", j];
    flags.extend_from_slice(more);
    let r = emulated_in_root(&flags, root, &argv(), &cwd.guest, b"");
    let v = serde_json::from_str(&std::fs::read_to_string(&json).expect("stats file")).expect("stats JSON");
    (r, v)
}

fn native(tag: &str) -> Run {
    let root = sysroot();
    let cwd = GuestDir::new(root, &format!("tcache-native-{tag}"));
    let r = native_in_root(root, &argv(), &cwd.guest, b"");
    assert_eq!(r.status, 0, "{}", r.stderr);
    r
}

/// Native's output and a cache directory filled by a cold run under `file` (whose output
/// is native's).
fn cold_cache(tag: &str) -> (Run, PathBuf) {
    let want = native(tag);
    let dir = scratch(&format!("tcache-{tag}"));
    let (cold, _) = run(&dir, "file", 1, &format!("{tag}-cold"));
    assert_eq!(cold, want);
    (want, dir)
}

fn n(v: &serde_json::Value, path: &str) -> u64 {
    v.pointer(path).and_then(serde_json::Value::as_u64).unwrap_or_else(|| panic!("{path} in {v}"))
}

fn cache_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "tc"))
        .collect();
    v.sort();
    v
}

#[test]
fn a_warm_run_loads_what_a_cold_run_made_and_matches_native() {
    let want = native("warm");
    for key in ["file", "physical", "virtual"] {
        let dir = scratch(&format!("tcache-warm-{key}"));
        let every = ["--tcache-cold", "1"];
        let (cold, c) = run_with(&dir, key, 1, &format!("cold-{key}"), &every);
        assert_eq!(cold, want, "cold run under {key}:\n{}", diff(&want.stdout, &cold.stdout));
        assert!(n(&c, "/tcache/stored") > 100, "{key}: {}", c["tcache"]);
        assert!(n(&c, "/tcache/cold") > 100, "{key}: {}", c["tcache"]);
        assert_eq!(n(&c, "/tcache/validated"), 0);
        // Another seed: every library at another address.
        let (warm, w) = run_with(&dir, key, 2, &format!("warm-{key}"), &every);
        assert_eq!(warm, want, "warm run under {key}:\n{}", diff(&want.stdout, &warm.stdout));
        assert_eq!(n(&w, "/tcache/rejected"), 0, "{key}: {}", w["tcache"]);
        assert!(n(&w, "/tcache/validated") > 100, "{key}: {}", w["tcache"]);
        let (i1, i2) = (n(&c, "/engine/interp_instructions"), n(&w, "/engine/interp_instructions"));
        let (t1, t2) = (n(&c, "/engine/translations"), n(&w, "/engine/translations"));
        assert!(i2 * 10 <= i1, "{key}: the warm run interpreted {i2} instructions, the cold one {i1}");
        assert!(t2 * 10 <= t1, "{key}: the warm run translated {t2} blocks, the cold one {t1}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// By default only the translations made while running are kept (no cold block is
/// translated at the end): a warm run loads the hot blocks at their first execution,
/// so it translates next to nothing and interprets less than the cold run, which ran
/// each hot block `--threshold` times in the interpreter first.
#[test]
fn by_default_only_hot_blocks_are_kept() {
    let want = native("hot");
    let dir = scratch("tcache-hot");
    let (cold, c) = run(&dir, "physical", 1, "hot-cold");
    assert_eq!(cold, want, "{}", diff(&want.stdout, &cold.stdout));
    assert_eq!(n(&c, "/tcache/cold"), 0, "{}", c["tcache"]);
    let stored = n(&c, "/tcache/stored");
    assert!(stored > 50 && stored <= n(&c, "/engine/translations"), "{}", c["tcache"]);
    let (warm, w) = run(&dir, "physical", 2, "hot-warm");
    assert_eq!(warm, want, "{}", diff(&want.stdout, &warm.stdout));
    assert!(n(&w, "/tcache/validated") * 2 > stored, "{}", w["tcache"]);
    let (i1, i2) = (n(&c, "/engine/interp_instructions"), n(&w, "/engine/interp_instructions"));
    let (t1, t2) = (n(&c, "/engine/translations"), n(&w, "/engine/translations"));
    assert!(i2 < i1, "the warm run interpreted {i2} instructions, the cold one {i1}");
    assert!(t2 * 10 <= t1, "the warm run translated {t2} blocks, the cold one {t1}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Translations made with one set of translator switches are not loaded under another
/// (`--no-ic` here: a cache made with predicted indirect branches is foreign to a run
/// without them), so a switch's ablation never runs the other setting's code.
#[test]
fn translations_of_other_switches_are_not_loaded() {
    let (want, dir) = cold_cache("switches");
    let (other, o) = run_with(&dir, "file", 2, "switches-no-ic", &["--no-ic"]);
    assert_eq!(other, want, "--no-ic over a cache made with predictions:\n{}", diff(&want.stdout, &other.stdout));
    assert_eq!(n(&o, "/tcache/validated"), 0, "{}", o["tcache"]);
    assert_eq!(n(&o, "/engine/predicted_branches"), 0);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Nor are those made for another modeled CPU: the TM5600's use XMM0-7 as scratch, which
/// on the TM8600 hold the guest's XMM registers (and the TM8600's run SSE, `#UD` on the
/// TM5600).
#[test]
fn translations_of_another_cpu_are_not_loaded() {
    let (want, dir) = cold_cache("cpu");
    let (other, o) = run_with(&dir, "file", 2, "cpu-tm8600", &["--cpu", "tm8600"]);
    assert_eq!(other, want, "--cpu tm8600 over a TM5600 cache:\n{}", diff(&want.stdout, &other.stdout));
    assert_eq!(n(&o, "/tcache/validated"), 0, "{}", o["tcache"]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_damaged_cache_is_rejected_counted_and_repaired() {
    let (want, dir) = cold_cache("damaged");
    let files = cache_files(&dir);
    assert!(files.len() >= 3, "{files:?}");
    // One corrupted in the middle, one truncated, one replaced by garbage.
    let mut b = std::fs::read(&files[0]).unwrap();
    let mid = b.len() / 2;
    b[mid] ^= 0x40;
    std::fs::write(&files[0], b).unwrap();
    let b = std::fs::read(&files[1]).unwrap();
    std::fs::write(&files[1], &b[..b.len() - 100]).unwrap();
    std::fs::write(&files[2], b"MORPHTC\0 but nothing else").unwrap();
    let (warm, w) = run(&dir, "file", 2, "damaged-warm");
    assert_eq!(warm, want, "{}", diff(&want.stdout, &warm.stdout));
    assert_eq!(n(&w, "/tcache/rejected"), 3, "{}", w["tcache"]);
    // The damaged files were rewritten by the run that rejected them.
    let (again, a) = run(&dir, "file", 3, "damaged-again");
    assert_eq!(again, want);
    assert_eq!(n(&a, "/tcache/rejected"), 0, "{}", a["tcache"]);
    assert!(n(&a, "/tcache/validated") > 100, "{}", a["tcache"]);
    // A key of another directory (another user's files, a copied cache) is foreign.
    std::fs::write(dir.join("key"), [7u8; 32]).unwrap();
    let (foreign, f) = run(&dir, "file", 4, "damaged-foreign");
    assert_eq!(foreign, want);
    assert_eq!(n(&f, "/tcache/validated"), 0, "{}", f["tcache"]);
    assert!(n(&f, "/tcache/rejected") >= 3, "{}", f["tcache"]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn concurrent_runs_share_a_cache_directory() {
    let want = native("shared");
    let dir = scratch("tcache-shared");
    let runs: Vec<_> = (0..4)
        .map(|i| {
            let dir = dir.clone();
            std::thread::spawn(move || run(&dir, "file", 10 + i, &format!("shared-{i}")))
        })
        .collect();
    for r in runs {
        let (got, _) = r.join().unwrap();
        assert_eq!(got, want, "{}", diff(&want.stdout, &got.stdout));
    }
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| !n.ends_with(".tc") && n != "key" && n != "lock")
        .collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
    let (after, a) = run(&dir, "file", 20, "shared-after");
    assert_eq!(after, want);
    assert_eq!(n(&a, "/tcache/rejected"), 0, "{}", a["tcache"]);
    assert!(n(&a, "/tcache/validated") > 100, "{}", a["tcache"]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_tcache_dir_that_cannot_be_made_is_a_clear_error() {
    let r = morph_raw(&["run", "--engine", "dbt", "--tcache-dir", "/proc/self/no/such", "/bin/true"], Path::new("/"));
    assert_eq!(r.status, 125, "{r:?}");
    assert!(r.stderr.contains("--tcache-dir /proc/self/no/such"), "{}", r.stderr);
}

#[test]
fn a_tcache_dir_the_guest_could_reach_is_refused() {
    let root = sysroot();
    let inside = GuestDir::new(root, "tcache-inside");
    let d = inside.host.to_str().unwrap();
    let r = morph_raw(
        &["run", "--engine", "dbt", "--root", root.to_str().unwrap(), "--tcache-dir", d, "/bin/true"],
        Path::new("/"),
    );
    assert_eq!(r.status, 125, "{r:?}");
    assert!(r.stderr.contains("inside the guest's root"), "{}", r.stderr);
    assert!(std::fs::read_dir(&inside.host).unwrap().next().is_none(), "nothing written there");
}
