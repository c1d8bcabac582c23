//! Real shell scripts (`guests/scripts/*.sh`): each runs natively inside the Debian
//! sysroot (chroot) and under morph with the sysroot as its root, under several engine
//! configurations; stdout, stderr and the exit status must be the same.
//!
//! Every run gets a fresh directory inside the sysroot (`/tmp/morph-test-<pid>-<run>`),
//! holding a copy of the script, and runs `/bin/bash SCRIPT.sh` there, so that runs do
//! not collide and paths in messages (`SCRIPT.sh: line N: ...`) are the same natively
//! and under morph. The native output is taken twice: a script whose native output
//! varies is a broken test, reported as such.
//!
//! `exec100.sh`, the seed workload's shape, is also checked for what it is for: under
//! every key policy it completes, the stats count at least 100 processes and 100 execs,
//! and physical keying translates far less than per-process caches do.

mod common;

use std::path::PathBuf;

use common::*;

/// Scripts not run yet, with the reason in `guests/scripts/README.md` (none now: morph
/// serves `/dev` and `/proc`, and the native reference binds the host's into its chroot).
const PENDING_DEV: &[&str] = &[];

/// The engine configurations for scripts that are slow under the interpreter: the
/// interpreter, each key policy, no chaining, translation at first sight.
fn few_configs() -> Vec<Vec<&'static str>> {
    vec![
        vec!["--engine", "interp"],
        vec!["--engine", "dbt", "--key", "virtual"],
        vec!["--engine", "dbt", "--key", "physical"],
        vec!["--engine", "dbt", "--key", "process"],
        vec!["--engine", "dbt", "--key", "file"],
        vec!["--engine", "dbt", "--key", "content"],
        vec!["--engine", "dbt", "--no-chain"],
        vec!["--engine", "dbt", "--threshold", "0"],
    ]
}

fn script_path(name: &str) -> PathBuf {
    workspace().join("guests/scripts").join(format!("{name}.sh"))
}

/// Runs `name.sh` in a fresh directory of the sysroot: natively (`flags` = None) or
/// under morph with `flags`.
fn run_script(name: &str, run: &str, flags: Option<&[&str]>) -> Run {
    let root = sysroot();
    let dir = GuestDir::new(root, &format!("{name}-{run}"));
    let file = format!("{name}.sh");
    std::fs::copy(script_path(name), dir.host.join(&file)).expect("copy the script");
    let argv = ["/bin/bash", file.as_str()];
    match flags {
        None => native_in_root(root, &argv, &dir.guest, b""),
        Some(f) => {
            // A hung guest must fail the test, not hang it.
            let mut f = f.to_vec();
            f.extend(["--timeout", "600"]);
            emulated_in_root(&f, root, &argv, &dir.guest, b"")
        }
    }
}

/// Describes how `got` differs from `want`.
fn difference(want: &Run, got: &Run) -> String {
    let mut s = String::new();
    if want.status != got.status {
        s += &format!("  status: native {}, morph {}\n", want.status, got.status);
    }
    if want.stdout != got.stdout {
        s += &format!("  stdout (- native, + morph):\n{}", indent(&diff(&want.stdout, &got.stdout)));
    }
    if want.stderr != got.stderr {
        s += &format!("  stderr (- native, + morph):\n{}", indent(&diff(&want.stderr, &got.stderr)));
    }
    s
}

fn indent(s: &str) -> String {
    s.lines().map(|l| format!("    {l}\n")).collect()
}

/// The native reference of `name.sh`, checked to be deterministic.
fn reference(name: &str) -> Run {
    // Made once per script: tests running at once share it (and its directories).
    static DONE: std::sync::Mutex<Vec<(String, Run)>> = std::sync::Mutex::new(Vec::new());
    let mut done = DONE.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((_, r)) = done.iter().find(|(n, _)| n == name) {
        return r.clone();
    }
    let want = run_script(name, "native", None);
    let again = run_script(name, "native2", None);
    assert!(want == again, "{name}.sh is not deterministic natively:\n{}", difference(&want, &again));
    done.push((name.to_string(), want.clone()));
    want
}

/// Checks `name.sh` under each of `cfgs` against the native run.
fn check(name: &str, cfgs: Vec<Vec<&str>>) {
    let want = reference(name);
    let mut failures = Vec::new();
    for (i, cfg) in cfgs.iter().enumerate() {
        let got = run_script(name, &i.to_string(), Some(cfg));
        if got != want {
            failures.push(format!("{name}.sh under morph {}:\n{}", cfg.join(" "), difference(&want, &got)));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} configurations differ from native:\n{}",
        failures.len(),
        cfgs.len(),
        failures.join("\n")
    );
}

macro_rules! scripts {
    ($($name:ident: $cfgs:expr;)*) => {$(
        #[test]
        fn $name() {
            check(stringify!($name), $cfgs);
        }
    )*};
}

scripts! {
    busybox: configs();
    coreutils: few_configs();
    errexit: configs();
    fifo: few_configs();
    heredoc: configs();
    jobs: configs();
    loops: few_configs();
    pipelines: few_configs();
    procsub: few_configs();
    subshells: configs();
    timeout: few_configs();
    tools: configs();
    traps: configs();
}

#[test]
fn every_script_is_tested_or_pending() {
    let tested = [
        "busybox",
        "coreutils",
        "errexit",
        "exec100",
        "fifo",
        "heredoc",
        "jobs",
        "loops",
        "pipelines",
        "procsub",
        "subshells",
        "timeout",
        "tools",
        "traps",
    ];
    for e in std::fs::read_dir(workspace().join("guests/scripts")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "sh") {
            let stem = p.file_stem().unwrap().to_str().unwrap().to_string();
            assert!(
                tested.contains(&stem.as_str()) || PENDING_DEV.contains(&stem.as_str()),
                "guests/scripts/{stem}.sh is neither tested in shell.rs nor listed as pending"
            );
        }
    }
}

/// The counters of one `--stats-json` run.
fn stats_of(flags: &[&str]) -> (Run, serde_json::Value) {
    // A directory per configuration: tests running at once must not empty each other's.
    let name = flags.join("_").replace('-', "");
    let json = scratch(&format!("exec100-stats-{name}")).join("stats.json");
    let mut f = flags.to_vec();
    let jpath = json.to_str().unwrap().to_string();
    f.extend(["--stats-json", jpath.as_str()]);
    let run = run_script("exec100", &flags.join("").replace('-', ""), Some(&f));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("stats file")).expect("stats JSON");
    (run, v)
}

#[test]
fn exec100_under_every_key_and_physical_keys_share_translations() {
    let want = reference("exec100");
    let mut translations = std::collections::BTreeMap::new();
    for (threshold, aslr) in [("50", "0"), ("0", "2")] {
        for key in ["virtual", "physical", "process", "file", "content"] {
            let flags = ["--engine", "dbt", "--key", key, "--threshold", threshold, "--aslr", aslr];
            let (got, s) = stats_of(&flags);
            let what = flags.join(" ");
            assert!(got == want, "exec100.sh under {what}:\n{}", difference(&want, &got));
            let n = |path: &str| {
                s.pointer(path).and_then(serde_json::Value::as_u64).unwrap_or_else(|| panic!("{path} in stats"))
            };
            assert!(n("/os/processes") >= 100, "{what}: {} processes", n("/os/processes"));
            assert!(n("/os/execs") >= 100, "{what}: {} execs", n("/os/execs"));
            translations.insert((threshold, aslr, key), n("/engine/translations"));
            if matches!(key, "physical" | "file" | "content") {
                assert_eq!(n("/engine/retranslations"), 0, "{what}: library code translated again");
            }
        }
    }
    let t = |th, aslr, key| translations[&(th, aslr, key)];
    // Under `process` each exec starts with an empty private cache; under `physical`
    // the loader's, libc's and each program's pages are translated once for the whole
    // machine. At the default threshold most blocks of a short process never get hot,
    // which narrows the gap.
    assert!(t("50", "0", "physical") * 2 < t("50", "0", "process"), "{translations:?}");
    assert!(t("0", "2", "physical") * 10 < t("0", "2", "process"), "{translations:?}");
    // With ASLR, virtual keys miss whenever a library moved: the effect of the seed report.
    assert!(t("0", "2", "physical") * 10 < t("0", "2", "virtual"), "{translations:?}");
}

#[test]
fn exec100_with_a_small_cache_flushes_it_and_matches_native() {
    let want = reference("exec100");
    for (key, size) in [("virtual", "256K"), ("physical", "64K")] {
        let flags = ["--engine", "dbt", "--key", key, "--threshold", "0", "--aslr", "2", "--tc-size", size];
        let (got, s) = stats_of(&flags);
        let what = flags.join(" ");
        assert!(got == want, "exec100.sh under {what}:\n{}", difference(&want, &got));
        let flushes = s.pointer("/engine/flushes").and_then(serde_json::Value::as_u64).expect("flushes in stats");
        assert!(flushes > 0, "{what}: no flush");
        let blocks = s.pointer("/engine/blocks").and_then(serde_json::Value::as_u64).expect("blocks in stats");
        let host = s.pointer("/engine/host_bytes").and_then(serde_json::Value::as_u64).expect("host_bytes");
        assert!(blocks > 0 && host <= 256 << 10, "{what}: {blocks} blocks in {host} bytes after the last flush");
    }
}

/// The same seed gives the same counts (host times aside) under every key.
#[test]
fn exec100_counts_are_deterministic_under_every_key() {
    for key in ["virtual", "physical", "process", "file", "content"] {
        let flags = ["--engine", "dbt", "--key", key, "--aslr", "2", "--seed", "5", "--threshold", "2"];
        let counts = || {
            let (run, v) = stats_of(&flags);
            (run, counters(&v))
        };
        let (a, b) = (counts(), counts());
        assert_eq!(a.0, b.0, "{key}: output differs between two runs with one seed");
        assert_eq!(a.1, b.1, "{key}: counts differ between two runs with one seed");
    }
}

/// Two copies of bash and of sort are different files in different frames with the same
/// code: under `content` the second copy's blocks are copied from the first's
/// translations (relocated and renumbered, then chained), and every run matches native.
#[test]
fn content_key_copies_the_translations_of_a_copied_program() {
    let root = sysroot();
    let script = "cp /bin/bash a; cp /bin/bash b; cp /bin/sort s1; cp /bin/sort s2; \
                  ./a -c 'for i in 3 1 2; do echo $i; done | ./s1; seq 50 | ./s2 -r | head -3'; \
                  ./b -c 'for i in 3 1 2; do echo $i; done | ./s2; seq 50 | ./s1 -r | head -3'";
    let argv = ["/bin/bash", "-c", script];
    let want = {
        let dir = GuestDir::new(root, "copies-native");
        native_in_root(root, &argv, &dir.guest, b"")
    };
    assert_eq!(want.status, 0, "{}", want.stderr);
    for threshold in ["0", "3"] {
        let dir = GuestDir::new(root, &format!("copies-{threshold}"));
        let json = dir.host.join("stats.json");
        let jpath = json.to_str().unwrap().to_string();
        let flags =
            ["--engine", "dbt", "--key", "content", "--aslr", "2", "--threshold", threshold, "--stats-json", &jpath];
        let got = emulated_in_root(&flags, root, &argv, &dir.guest, b"");
        assert!(got == want, "threshold {threshold}:\n{}", difference(&want, &got));
        let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        let n = |k: &str| v["engine"][k].as_u64().unwrap_or_else(|| panic!("engine.{k}"));
        assert!(n("reuses") > 1000, "threshold {threshold}: {} reuses", n("reuses"));
        assert!(n("chain_patches") > 0 && n("translations") > 0);
        // Translated code touches pages of the window first (stack, heap, copied data):
        // the fault handler hosts them and counts it.
        assert!(threshold != "0" || n("window_faults") > 0, "no window faults counted");
    }
}
