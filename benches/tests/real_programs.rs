//! The real-program suite's programs (Debian's python3, lua, perl, bash, gawk, sqlite3,
//! compressors, coreutils) give native's output under morph: `realbench --quick --warm`
//! runs each once natively, under morph, under morph with a persistent translation
//! cache primed by an earlier run, (`--against-args`) under morph with the other form of
//! flag-free tests, and (`--native-i686`) natively with glibc's functions chosen as for
//! morph's modeled CPU, and fails on any difference. Its times are not looked at
//! (benchmarks are benchmarks, not tests).

use std::path::PathBuf;
use std::process::Command;

/// The morph binary of this build (`target/<profile>/morph`, next to `deps/`).
fn morph() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable");
    let dir = exe.parent().and_then(|d| d.parent()).expect("target/<profile>");
    let m = dir.join("morph");
    if !m.is_file() {
        let ws = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
        // `cargo test -p morph-benches` alone does not build the morph package.
        let mut c = Command::new(env!("CARGO"));
        c.args(["build", "-q", "-p", "morph", "--bin", "morph"]).current_dir(ws);
        if dir.ends_with("release") {
            c.arg("--release");
        }
        let st = c.status().expect("cargo build morph");
        assert!(st.success(), "cannot build morph");
    }
    m
}

#[test]
fn real_programs_match_native() {
    let out = Command::new(env!("CARGO_BIN_EXE_realbench"))
        .args(["--quick", "--warm", "--native-i686", "--no-qemu", "--morph"])
        .arg(morph())
        .args(["--against-args", "--flag-free-branch loop"])
        .output()
        .expect("run realbench");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "realbench failed:\n{text}");
    assert!(!text.contains("FAIL"), "{text}");
    assert!(text.contains("morph / against") && text.contains("median ×"), "no comparison table:\n{text}");
    assert!(text.contains("morph / native-i686: median ×"), "no native-i686 table:\n{text}");
}
