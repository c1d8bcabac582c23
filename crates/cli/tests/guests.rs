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

/// Options some guests need under morph: the SSE guest runs on the model with SSE (on
/// the TM5600 it gets SIGILL, see below).
fn morph_args_of(name: &str) -> &'static [&'static str] {
    match name {
        "sse" => &["--cpu", "tm8600"],
        _ => &[],
    }
}

/// Guests whose native output depends on the host CPU's vendor beyond what morph models,
/// compared only on the vendor they were measured on: `x87_env` reads the x87 pointers
/// from signal frames, which AMD's FXSAVE and XSAVE store only with an exception pending
/// (Linux's `X86_BUG_FXSAVE_LEAK`), and even then not in every native run on the AMD
/// host measured (the data pointer of a SIGFPE frame: "the divisor" or "none", run to
/// run). Its environments agree on AMD hosts too (stop 47); `tests/conform.rs` compares
/// them there.
fn measured_on(name: &str) -> Option<&'static str> {
    match name {
        "x87_env" => Some("GenuineIntel"),
        _ => None,
    }
}

#[test]
fn guests_match_native() {
    let dir = guests();
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.ends_with(".tmp"))
        // Only programs whose source is still there: the output directory keeps what
        // an earlier build made.
        .filter(|n| workspace().join("guests/src").join(format!("{}.c", n.trim_end_matches(".pie"))).exists())
        .collect();
    names.sort();
    assert!(names.len() >= 30, "expected at least 15 guests in two variants, found {names:?}");
    let mut failures = Vec::new();
    let vendor = host_vendor();
    for name in &names {
        let base_name = name.trim_end_matches(".pie");
        if let Some(v) = measured_on(base_name).filter(|&v| v != vendor) {
            eprintln!("{name}: not compared on this {vendor} host (its output is {v}'s, see measured_on)");
            continue;
        }
        let prog = dir.join(name);
        let args = args_of(base_name);
        let cwd = scratch(&format!("guest-{name}"));
        let want = native(&prog, &args, &cwd, b"input line\n");
        for mut cfg in configs() {
            if !cfg.contains(&"--cpu") {
                cfg.extend(morph_args_of(base_name));
            }
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

/// The TM5600 has no SSE: the SSE guest, which runs natively, is killed by SIGILL at its
/// first SSE instruction under every engine, and morph says where.
#[test]
fn sse_is_sigill_on_the_tm5600() {
    for name in ["sse", "sse.pie"] {
        let prog = guests().join(name);
        let cwd = scratch(&format!("guest-{name}-tm5600"));
        assert_eq!(native(&prog, &[], &cwd, b"").status, 0, "{name} natively");
        for cfg in [&["--engine", "interp"][..], &["--engine", "dbt", "--threshold", "0"], &["--engine", "dbt"]] {
            let prog = prog.to_string_lossy();
            let got = morph_raw(&[&["run"], cfg, &["--", &prog]].concat(), &cwd);
            assert_eq!(got.status, 128 + 4, "{name} {cfg:?}: {}", got.stderr);
            assert!(got.stderr.contains("invalid or unsupported instruction"), "{name} {cfg:?}: {}", got.stderr);
        }
    }
}

/// What CPUID answers is the model's: the TM5600's feature word of the 2005 report, and
/// the TM8600's with FXSR, SSE and SSE2.
#[test]
fn cpuid_reports_the_model() {
    let prog = guests().join("cpuid_rdtsc");
    let cwd = scratch("guest-cpuid-model");
    for (cpu, leaf1) in [("tm5600", "leaf1 eax 00000643 edx 0080893f"), ("tm8600", "leaf1 eax 00000f24 edx 0780893f")] {
        let got = emulated(&["--engine", "dbt", "--cpu", cpu], &prog, &["--show"], &cwd, b"");
        assert_eq!(got.status, 0, "{cpu}: {}", got.stderr);
        assert!(got.stdout.contains("vendor: GenuineTMx86"), "{cpu}: {}", got.stdout);
        assert!(got.stdout.contains(leaf1), "{cpu}: {}", got.stdout);
    }
}
