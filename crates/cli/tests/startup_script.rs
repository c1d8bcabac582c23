//! `benches/startup.sh --against`: the paired cold-start comparison of two builds runs
//! and reports its medians (its times are not looked at: benchmarks are benchmarks).

mod common;

use common::*;

/// `benches/startup.sh` with `args`; its status and output.
fn startup(args: &[&str]) -> (bool, String) {
    sysroot(); // `morph sysroot` below finds it
    let ws = workspace();
    let out = std::process::Command::new("bash")
        .arg(ws.join("benches/startup.sh"))
        .arg("--morph")
        .arg(morph())
        .args(args)
        .current_dir(&ws)
        .output()
        .expect("run benches/startup.sh");
    (out.status.success(), format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
}

#[test]
fn paired_cold_starts_of_two_builds() {
    let m = morph();
    let (ok, text) = startup(&["--against", m.to_str().unwrap(), "--pairs", "3"]);
    assert!(ok, "{text}");
    assert!(text.contains("cold start, 3 alternated pairs"), "{text}");
    assert!(text.contains("paired difference (new - old): median "), "{text}");
    assert!(text.contains(" of 3 pairs"), "{text}");
    // A bad build or count is refused before any run.
    let (ok, text) = startup(&["--against", "/nonexistent/morph"]);
    assert!(!ok && text.contains("not an executable"), "{text}");
    let (ok, text) = startup(&["--against", m.to_str().unwrap(), "--pairs", "0"]);
    assert!(!ok && text.contains("a positive number"), "{text}");
}
