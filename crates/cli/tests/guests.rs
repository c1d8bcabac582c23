//! Every guest program under `guests/src`, static and static-PIE, gives the same stdout,
//! stderr and exit status under morph as natively, under every engine configuration.

mod common;

use common::*;

/// Arguments given to some guests (the same natively and under morph).
fn args_of(name: &str) -> Vec<&'static str> {
    match name {
        "args" => vec!["first", "second arg", ""],
        "exit_code" => vec!["42"],
        _ => vec![],
    }
}

#[test]
fn guests_match_native() {
    let dir = guests();
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.ends_with(".tmp"))
        .collect();
    names.sort();
    assert!(names.len() >= 30, "expected at least 15 guests in two variants, found {names:?}");
    let mut failures = Vec::new();
    for name in &names {
        let base_name = name.trim_end_matches(".pie");
        let prog = dir.join(name);
        let args = args_of(base_name);
        let cwd = scratch(&format!("guest-{name}"));
        let want = native(&prog, &args, &cwd, b"input line\n");
        for cfg in configs() {
            let cwd = scratch(&format!("guest-{name}"));
            let got = emulated(&cfg, &prog, &args, &cwd, b"input line\n");
            if got != want {
                failures.push(format!(
                    "{name} {cfg:?}: status native {} morph {}\n--- native stdout (tail)\n{}\n--- morph stdout (tail)\n{}\n--- morph stderr\n{}",
                    want.status,
                    got.status,
                    tail(&want.stdout),
                    tail(&got.stdout),
                    tail(&got.stderr)
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{} mismatches:\n{}", failures.len(), failures.join("\n\n"));
}

fn tail(s: &str) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(8)..].join("\n")
}

/// The guests that fork, under the 2.6.12 profile too, where a forked child runs before
/// its parent: a parent whose child exec'd or exited first finds its pages unshared
/// when it runs again, and its window's write protection is never applied
/// (`AddressSpace::settle_fork`); one whose child is still alive has it applied then.
#[test]
fn forking_guests_match_native_when_the_child_runs_first() {
    let dir = guests();
    for name in ["forkcow", "forkcow.pie", "signals"] {
        let prog = dir.join(name);
        let cwd = scratch(&format!("guest-first-{name}"));
        let want = native(&prog, &[], &cwd, b"input line\n");
        for cfg in [
            &["--engine", "interp"][..],
            &["--engine", "dbt", "--threshold", "0"],
            &["--engine", "dbt", "--key", "virtual"],
            &["--engine", "dbt", "--threshold", "0", "--no-chain"],
        ] {
            let flags: Vec<&str> = ["--kernel", "2.6.12"].iter().chain(cfg).copied().collect();
            let cwd = scratch(&format!("guest-first-{name}"));
            let got = emulated(&flags, &prog, &[], &cwd, b"input line\n");
            assert_eq!(got, want, "{name} {flags:?}:\n{}", got.stderr);
        }
    }
}
