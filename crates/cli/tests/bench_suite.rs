//! The guest CPU benchmarks (`guests/bench`) give the native output under morph's
//! translator and interpreter: `benches/suite.sh --quick` checks every output (its
//! times are not looked at here; benchmarks are benchmarks, not tests).

mod common;

use common::*;

/// `benches/suite.sh` with `args` (and `--morph`); its output.
fn suite(args: &[&str]) -> String {
    let ws = workspace();
    let out = std::process::Command::new("bash")
        .arg(ws.join("benches/suite.sh"))
        .args(args)
        .arg("--morph")
        .arg(morph())
        .current_dir(&ws)
        .output()
        .expect("run benches/suite.sh");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "suite failed:\n{text}");
    assert!(!text.contains("FAIL"), "{text}");
    text
}

#[test]
fn benchmark_guests_match_native() {
    suite(&["--quick", "--no-qemu"]);
    // Under two code layouts too (`--layouts`: the translator's runs placed apart).
    let text = suite(&["--quick", "--no-qemu", "--layouts", "--runs", "2", "--only", "fib,bytecode"]);
    assert!(text.contains("median over --layout-seed 1..2"), "{text}");
}
