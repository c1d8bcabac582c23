//! The guest CPU benchmarks (`guests/bench`) give the native output under morph's
//! translator and interpreter: `benches/suite.sh --quick` checks every output (its
//! times are not looked at here; benchmarks are benchmarks, not tests).

mod common;

use common::*;

#[test]
fn benchmark_guests_match_native() {
    let ws = workspace();
    let out = std::process::Command::new("bash")
        .arg(ws.join("benches/suite.sh"))
        .args(["--quick", "--no-qemu", "--morph"])
        .arg(morph())
        .current_dir(&ws)
        .output()
        .expect("run benches/suite.sh");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "suite failed:\n{text}");
    assert!(!text.contains("FAIL"), "{text}");
}
