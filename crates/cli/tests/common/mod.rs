//! Shared helpers of the integration tests: building the guests, finding the sysroot,
//! and running a program natively and under morph.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

/// The workspace root.
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

/// The morph binary under test.
pub fn morph() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_morph"))
}

/// Builds the guest programs (once per machine state; serialized by a file lock) and
/// returns the directory holding them.
pub fn guests() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let ws = workspace();
        let out = ws.join("target/guests");
        std::fs::create_dir_all(&out).unwrap();
        let lock = std::fs::File::create(ws.join("target/guests.lock")).unwrap();
        lock.lock().unwrap();
        let st = Command::new("bash").arg(ws.join("guests/build.sh")).arg(&out).status().expect("run guests/build.sh");
        assert!(st.success(), "guests/build.sh failed");
        out
    })
}

/// The Debian i386 sysroot (assembled on first use by guests/sysroot/mksysroot.py).
pub fn sysroot() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let ws = workspace();
        let out = Command::new("python3")
            .arg(ws.join("guests/sysroot/mksysroot.py"))
            .arg("--quiet")
            .stderr(Stdio::inherit())
            .output()
            .expect("run mksysroot.py");
        assert!(out.status.success(), "mksysroot.py failed");
        PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())
    })
}

/// What a run produced.
#[derive(Debug, PartialEq, Eq)]
pub struct Run {
    pub stdout: String,
    pub stderr: String,
    /// Shell-style status: the exit code, or 128 + signal.
    pub status: i32,
}

fn to_run(o: Output, strip_morph_lines: bool) -> Run {
    use std::os::unix::process::ExitStatusExt;
    let status = o.status.code().unwrap_or_else(|| 128 + o.status.signal().unwrap_or(0));
    let mut stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    if strip_morph_lines {
        stderr = stderr.lines().filter(|l| !l.starts_with("morph: ")).map(|l| format!("{l}\n")).collect();
    }
    Run { stdout: String::from_utf8_lossy(&o.stdout).into_owned(), stderr, status }
}

fn base(cmd: &mut Command, cwd: &Path, stdin: &[u8]) -> Output {
    cmd.current_dir(cwd).env_clear().env("PATH", "/usr/bin:/bin").env("LC_ALL", "C");
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn");
    {
        use std::io::Write;
        let mut i = child.stdin.take().unwrap();
        let _ = i.write_all(stdin);
    }
    child.wait_with_output().expect("wait")
}

/// Runs `prog args` natively.
pub fn native(prog: &Path, args: &[&str], cwd: &Path, stdin: &[u8]) -> Run {
    to_run(base(Command::new(prog).args(args), cwd, stdin), false)
}

/// Runs `prog args` under `morph run FLAGS`; morph's own "morph: " lines are removed
/// from stderr (they report guest deaths, which the native run reports by status).
pub fn emulated(flags: &[&str], prog: &Path, args: &[&str], cwd: &Path, stdin: &[u8]) -> Run {
    let mut c = Command::new(morph());
    c.arg("run").args(flags).arg("--").arg(prog).args(args);
    to_run(base(&mut c, cwd, stdin), true)
}

/// Runs morph with raw arguments, keeping all of stderr.
pub fn morph_raw(args: &[&str], cwd: &Path) -> Run {
    let mut c = Command::new(morph());
    c.args(args);
    to_run(base(&mut c, cwd, b""), false)
}

/// A fresh scratch directory under target/.
pub fn scratch(name: &str) -> PathBuf {
    let d = workspace().join("target/scratch").join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The engine configurations every guest is checked under: the interpreter, and the
/// translator under each key policy, thresholds 0 and default, chaining on and off.
pub fn configs() -> Vec<Vec<&'static str>> {
    let mut v = vec![vec!["--engine", "interp"], vec!["--engine", "interp", "--aslr", "2", "--seed", "7"]];
    for key in ["physical", "virtual", "process"] {
        v.push(vec!["--engine", "dbt", "--key", key, "--threshold", "0"]);
        v.push(vec!["--engine", "dbt", "--key", key, "--threshold", "0", "--no-chain"]);
        v.push(vec!["--engine", "dbt", "--key", key]);
    }
    v.push(vec!["--engine", "dbt", "--no-chain", "--aslr", "2", "--seed", "3"]);
    v
}
