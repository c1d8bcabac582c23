//! Real POSIX threads from real glibc: the programs of `guests/threads` (built with
//! `gcc -m32 -pthread -static` against the host's multilib glibc) run natively and under
//! every engine configuration with identical output and status, and a threaded run is
//! deterministic: the same seed gives the same counts.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use common::*;

/// Builds the thread guests once (serialized by a file lock) and returns their directory.
fn thread_guests() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let ws = workspace();
        let out = ws.join("target/guests-threads");
        std::fs::create_dir_all(&out).unwrap();
        let lock = std::fs::File::create(ws.join("target/guests-threads.lock")).unwrap();
        lock.lock().unwrap();
        let st = Command::new("bash")
            .arg(ws.join("guests/threads/build.sh"))
            .arg(&out)
            .status()
            .expect("run guests/threads/build.sh");
        assert!(st.success(), "guests/threads/build.sh failed");
        out
    })
}

/// Runs `name args` natively, then under every configuration, and compares.
fn check(name: &str, args: &[&str]) {
    let dir = thread_guests();
    let prog = dir.join(name);
    let want = native(&prog, args, dir, b"");
    let again = native(&prog, args, dir, b"");
    assert_eq!(want, again, "{name} {args:?} is not deterministic natively");
    for cfg in configs() {
        let got = emulated(&cfg, &prog, args, dir, b"");
        assert_eq!(got, want, "{name} {args:?} under {cfg:?}");
    }
}

#[test]
fn producer_consumer_with_condition_variables() {
    check("prodcons", &[]);
}

#[test]
fn thread_pool_with_a_work_queue() {
    check("pool", &[]);
}

#[test]
fn thread_local_storage_per_thread() {
    check("tls", &[]);
}

#[test]
fn join_detach_barrier_robust_signals_fork() {
    check("misc", &[]);
}

#[test]
fn exit_of_one_thread_and_of_the_group() {
    for mode in ["main-exit", "thread-exit", "kill", "exec"] {
        check("exits", &[mode]);
    }
}

#[test]
fn proc_task_lists_and_describes_each_thread() {
    check("proctask", &[]);
}

#[test]
fn priority_inheritance_mutexes_on_pi_futexes() {
    check("pimutex", &[]);
}

#[test]
fn futexes_in_memory_shared_by_processes() {
    check("pshared", &[]);
}

#[test]
fn code_written_by_one_thread_runs_new_in_another() {
    check("smc", &[]);
}

#[test]
fn sigwait_thread_takes_the_process_signals() {
    check("sigwait", &[]);
}

#[test]
fn posix_spawn_and_vfork_share_the_parents_memory() {
    check("spawn", &[]);
}

/// A woken waiter gets a mutex its waker takes again in a loop (a time limit, so that a
/// scheduler that starves it fails instead of hanging).
#[test]
fn a_woken_waiter_gets_the_mutex_its_waker_loops_on() {
    let dir = thread_guests();
    let prog = dir.join("lockloop");
    let want = native(&prog, &[], dir, b"");
    assert_eq!(want.status, 0);
    for cfg in configs() {
        let mut flags = cfg.clone();
        flags.extend(["--timeout", "60"]);
        let got = emulated(&flags, &prog, &[], dir, b"");
        assert_eq!(got, want, "lockloop under {cfg:?}");
    }
}

/// Cancellation unwinds with glibc's unwinder, whose CET code runs `rdsspd` (a hint
/// NOP on the modeled CPU): it needs the interpreter to treat hint NOPs as NOPs.
#[test]
fn cancellation_runs_cleanup_handlers() {
    check("cancel", &[]);
}

/// The same seed gives the same interleaving: identical counts (host times aside) for
/// two runs of a threaded program, under the interpreter and the translator.
#[test]
fn threaded_runs_are_deterministic() {
    let dir = thread_guests();
    let scratch = scratch("threads-determinism");
    for cfg in [&["--engine", "interp"][..], &["--engine", "dbt", "--key", "physical"][..]] {
        let mut runs = Vec::new();
        for i in 0..2 {
            let json = scratch.join(format!("{i}.json"));
            let mut args = vec!["run", "--seed", "11", "--stats-json", json.to_str().unwrap()];
            args.extend_from_slice(cfg);
            let prog = dir.join("pool");
            args.extend(["--", prog.to_str().unwrap()]);
            let r = morph_raw(&args, dir);
            assert_eq!(r.status, 0, "{cfg:?}: {}", r.stderr);
            let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
            runs.push(counters(&v));
        }
        let threads = runs[0].iter().find(|(k, _)| k == "os.threads").map(|(_, v)| v.clone());
        assert_eq!(threads, Some(serde_json::json!(4)), "{cfg:?}");
        assert!(runs[0].iter().any(|(k, v)| k == "os.futex_waits" && v.as_u64() > Some(0)), "{cfg:?}");
        assert_eq!(runs[0], runs[1], "{cfg:?}: counts differ between two runs with one seed");
    }
}

/// The shared Debian sysroot with `extra` packages merged in (mksysroot.py adds missing
/// packages to the cached sysroot in place, under its lock; the default set is kept).
fn sysroot_with(extra: &[&str]) -> PathBuf {
    let mut pkgs = vec!["busybox-static", "libc6", "bash", "coreutils"];
    pkgs.extend_from_slice(extra);
    let out = Command::new("python3")
        .arg(workspace().join("guests/sysroot/mksysroot.py"))
        .args(["--quiet", "--packages", &pkgs.join(",")])
        .stderr(std::process::Stdio::inherit())
        .output()
        .expect("run mksysroot.py");
    assert!(out.status.success(), "mksysroot.py failed");
    PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())
}

/// Runs a Debian program natively in the sysroot and under every configuration; one
/// run also checks (with `--stats-json`) that it made threads.
fn check_in_root(root: &Path, dir: &GuestDir, argv: &[&str]) {
    let want = native_in_root(root, argv, &dir.guest, b"");
    assert_eq!(want.status, 0, "{argv:?} natively: {}", want.stderr);
    for cfg in configs() {
        let got = emulated_in_root(&cfg, root, argv, &dir.guest, b"");
        assert!(got == want, "{argv:?} under {cfg:?}: status {} vs {}\n{}", got.status, want.status, got.stderr);
    }
    let json = dir.host.join("stats.json");
    let mut flags = vec!["--engine", "dbt", "--stats-json", json.to_str().unwrap()];
    flags.extend(["--seed", "1"]);
    let got = emulated_in_root(&flags, root, argv, &dir.guest, b"");
    assert_eq!(got, want);
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert!(v["os"]["threads"].as_u64() >= Some(1), "{argv:?} made no thread under morph");
}

/// Input lines for the Debian programs: deterministic pseudo-random text.
fn lines(n: usize) -> String {
    let mut x: u32 = 12345;
    let mut s = String::with_capacity(n * 12);
    for i in 0..n {
        x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
        s.push_str(&format!("{:08x} {}\n", x, i % 977));
    }
    s
}

#[test]
fn debian_sort_parallel() {
    let root = sysroot();
    let dir = GuestDir::new(root, "sort-parallel");
    // sort splits the work among threads from 128 Ki lines on.
    std::fs::write(dir.host.join("in.txt"), lines(140_000)).unwrap();
    check_in_root(root, &dir, &["/usr/bin/sort", "--parallel=2", "-S", "8M", "in.txt"]);
}

#[test]
fn debian_xz_threads() {
    let root = sysroot_with(&["xz-utils"]);
    let dir = GuestDir::new(&root, "xz-threads");
    std::fs::write(dir.host.join("in.txt"), lines(80_000)).unwrap();
    check_in_root(&root, &dir, &["/usr/bin/xz", "-T2", "-1", "--block-size=256KiB", "-c", "in.txt"]);
}
