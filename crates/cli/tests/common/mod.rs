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

/// The host CPU's vendor (`vendor_id` in /proc/cpuinfo).
pub fn host_vendor() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("vendor_id").map(|v| v.trim_start_matches([' ', '\t', ':']).to_string()))
        })
        .unwrap_or_default()
}

/// What a run produced.
#[derive(Clone, Debug, PartialEq, Eq)]
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
/// translator under each key policy, thresholds 0 and default, chaining on and off, with
/// the return stack, without predicted indirect branches, without the indirect-branch
/// table, with runs in other processes credited (`--space-credit`), with translations
/// placed apart (and flag-free tests branching with `jrcxz`), and without counted loops'
/// clean copies and with every far edge checked (and those tests branching with `loop`):
/// both forms, whatever the host's default.
pub fn configs() -> Vec<Vec<&'static str>> {
    let mut v = vec![vec!["--engine", "interp"], vec!["--engine", "interp", "--aslr", "2", "--seed", "7"]];
    for key in ["physical", "virtual", "process", "file", "content"] {
        v.push(vec!["--engine", "dbt", "--key", key, "--threshold", "0"]);
        v.push(vec!["--engine", "dbt", "--key", key, "--threshold", "0", "--no-chain"]);
        v.push(vec!["--engine", "dbt", "--key", key]);
    }
    // Runs in other processes credited (blocks translated at their first run in a
    // second process, as they reach their own threshold in the first).
    v.push(vec!["--engine", "dbt", "--no-chain", "--aslr", "2", "--seed", "3", "--space-credit", "50"]);
    // The model with SSE: exits save the FPU state, short `rep movsd` keeps to XMM8–15.
    v.push(vec!["--engine", "dbt", "--cpu", "tm8600", "--threshold", "0"]);
    v.push(vec!["--engine", "dbt", "--cpu", "tm8600"]);
    v.push(vec!["--engine", "dbt", "--ras", "--threshold", "0"]);
    v.push(vec!["--engine", "dbt", "--ras", "--key", "virtual"]);
    v.push(vec!["--engine", "dbt", "--no-ic", "--key", "file"]);
    v.push(vec!["--engine", "dbt", "--no-ibt", "--key", "virtual", "--threshold", "0"]);
    v.push(vec!["--engine", "dbt", "--threshold", "0", "--layout-seed", "11", "--flag-free-branch", "jrcxz"]);
    v.push(vec![
        "--engine",
        "dbt",
        "--no-counted-loops",
        "--check-far-edges",
        "--threshold",
        "0",
        "--flag-free-branch",
        "loop",
    ]);
    v
}

/// How this machine runs a program natively inside a root directory: `chroot` as root,
/// else `unshare -r chroot` (a user namespace maps the caller to root).
fn root_entry(root: &Path) -> &'static [PathBuf] {
    static ENTRY: OnceLock<Vec<PathBuf>> = OnceLock::new();
    ENTRY.get_or_init(|| {
        let find = |name: &str| {
            ["/usr/sbin", "/sbin", "/usr/bin", "/bin"].iter().map(|d| Path::new(d).join(name)).find(|p| p.is_file())
        };
        let mut tried = Vec::new();
        let (Some(chroot), Some(unshare)) = (find("chroot"), find("unshare")) else {
            panic!("native runs in the sysroot need chroot(8) and unshare(1) (util-linux)")
        };
        // A private mount namespace gets the host's /dev and /proc bound into the root,
        // as a real system has them (the guest under morph gets morph's own), without
        // touching the shared sysroot; `unshare -r` adds a user namespace when not root.
        let script = format!(
            "r=$1; shift; mount --rbind /dev \"$r/dev\" && mount --rbind /proc \"$r/proc\" && exec {} \"$r\" \"$@\"",
            chroot.display()
        );
        let mut candidates = Vec::new();
        for userns in [false, true] {
            let mut c = vec![unshare.clone()];
            if userns {
                c.push(PathBuf::from("-r"));
            }
            c.extend(["-m", "--", "/bin/sh", "-c", &script, "sh"].map(PathBuf::from));
            candidates.push(c);
        }
        for c in candidates {
            let out = Command::new(&c[0]).args(&c[1..]).arg(root).arg("/bin/true").output();
            match out {
                Ok(o) if o.status.success() => return c,
                Ok(o) => tried.push(format!(
                    "{}: {} {}",
                    c.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(" "),
                    o.status,
                    String::from_utf8_lossy(&o.stderr).trim()
                )),
                Err(e) => tried.push(format!("{}: {e}", c[0].display())),
            }
        }
        panic!(
            "cannot run programs natively inside the sysroot {} (needed as the reference for morph):\n  {}",
            root.display(),
            tried.join("\n  ")
        )
    })
}

/// Runs `argv` (guest paths) natively inside `root` with `cwd` (a guest path) as the
/// working directory, the reference for [`emulated_in_root`]. The same environment as
/// the other runners (`PATH`, `LC_ALL=C`); `env -C` (from the root's coreutils) enters
/// `cwd`, as chroot(8) always starts at `/`.
pub fn native_in_root(root: &Path, argv: &[&str], cwd: &str, stdin: &[u8]) -> Run {
    let entry = root_entry(root);
    let mut c = Command::new(&entry[0]);
    c.args(&entry[1..]).arg(root).arg("/usr/bin/env").arg("-C").arg(cwd).args(argv);
    to_run(base(&mut c, Path::new("/"), stdin), false)
}

/// Runs `argv` (guest paths) under `morph run FLAGS --root ROOT` with `cwd` (a guest
/// path) as the working directory; morph's own "morph: " lines are removed from stderr.
pub fn emulated_in_root(flags: &[&str], root: &Path, argv: &[&str], cwd: &str, stdin: &[u8]) -> Run {
    let mut c = Command::new(morph());
    c.arg("run").args(flags).arg("--root").arg(root).arg("--").args(argv);
    to_run(base(&mut c, &root.join(cwd.trim_start_matches('/')), stdin), true)
}

/// A fresh directory inside `root` for one run, removed when dropped: its host path
/// and its guest path.
pub struct GuestDir {
    pub host: PathBuf,
    pub guest: String,
}

impl GuestDir {
    /// `/tmp/morph-test-<pid>-<name>` inside `root`, empty.
    pub fn new(root: &Path, name: &str) -> GuestDir {
        let guest = format!("/tmp/morph-test-{}-{name}", std::process::id());
        let host = root.join(guest.trim_start_matches('/'));
        let _ = std::fs::remove_dir_all(&host);
        std::fs::create_dir_all(&host).unwrap();
        GuestDir { host, guest }
    }
}

impl Drop for GuestDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.host);
    }
}

/// A line diff of two texts (for failure messages): `-` expected, `+` got, with the
/// common lines around each change.
pub fn diff(want: &str, got: &str) -> String {
    let (a, b): (Vec<&str>, Vec<&str>) = (want.lines().collect(), got.lines().collect());
    // Longest common subsequence table, fine for test outputs of a few hundred lines.
    let mut lcs = vec![vec![0u32; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] { lcs[i + 1][j + 1] + 1 } else { lcs[i + 1][j].max(lcs[i][j + 1]) };
        }
    }
    let mut ops = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            ops.push((' ', a[i]));
            i += 1;
            j += 1;
        } else if j < b.len() && (i == a.len() || lcs[i][j + 1] >= lcs[i + 1][j]) {
            ops.push(('+', b[j]));
            j += 1;
        } else {
            ops.push(('-', a[i]));
            i += 1;
        }
    }
    let near = |k: usize| ops[k.saturating_sub(2)..(k + 3).min(ops.len())].iter().any(|o| o.0 != ' ');
    let mut out = String::new();
    let mut skipped = false;
    for (k, (tag, line)) in ops.iter().enumerate() {
        if near(k) {
            out.push_str(&format!("{tag} {line}\n"));
            skipped = false;
        } else if !skipped {
            out.push_str("  ...\n");
            skipped = true;
        }
    }
    out
}

/// A minimal i386 ET_EXEC whose `PT_INTERP` names `interp`.
pub fn elf_with_interp(interp: &[u8]) -> Vec<u8> {
    let base = 0x0804_8000u32;
    let name_off = 52 + 2 * 32;
    let total = (name_off + interp.len() + 1) as u32;
    let mut h = vec![0u8; 52];
    h[..4].copy_from_slice(b"\x7fELF");
    h[4] = 1; // ELFCLASS32
    h[5] = 1; // little endian
    h[6] = 1;
    h[16..18].copy_from_slice(&2u16.to_le_bytes()); // ET_EXEC
    h[18..20].copy_from_slice(&3u16.to_le_bytes()); // EM_386
    h[20..24].copy_from_slice(&1u32.to_le_bytes());
    h[24..28].copy_from_slice(&base.to_le_bytes());
    h[28..32].copy_from_slice(&52u32.to_le_bytes());
    h[40..42].copy_from_slice(&52u16.to_le_bytes());
    h[42..44].copy_from_slice(&32u16.to_le_bytes());
    h[44..46].copy_from_slice(&2u16.to_le_bytes());
    let phdr = |kind: u32, off: u32, size: u32, flags: u32, align: u32| {
        [kind, off, base + off, base + off, size, size, flags, align]
            .iter()
            .flat_map(|w| w.to_le_bytes())
            .collect::<Vec<u8>>()
    };
    h.extend(phdr(3, name_off as u32, interp.len() as u32 + 1, 4, 1)); // PT_INTERP
    h.extend(phdr(1, 0, total, 5, 0x1000)); // PT_LOAD, r-x
    h.extend_from_slice(interp);
    h.push(0);
    h
}

/// The leaves of a JSON value (`--stats-json` output) as dotted paths and values.
pub fn flatten(prefix: &str, v: &serde_json::Value, out: &mut Vec<(String, serde_json::Value)>) {
    match v {
        serde_json::Value::Object(o) => {
            for (k, x) in o {
                flatten(&format!("{prefix}{k}."), x, out);
            }
        }
        x => out.push((prefix.trim_end_matches('.').to_string(), x.clone())),
    }
}

/// Every counter of a `--stats-json` document: host times (`*_ns`) and when and where
/// the run was made (`metadata`) left out, so two runs with one seed compare equal.
pub fn counters(v: &serde_json::Value) -> Vec<(String, serde_json::Value)> {
    let mut all = Vec::new();
    flatten("", v, &mut all);
    all.retain(|(k, _)| !k.ends_with("_ns") && !k.starts_with("metadata."));
    all
}

/// A sweep CSV without its host-time columns (header first): what must be equal bit for
/// bit between two sweeps with the same seeds.
pub fn sweep_counts(csv: &Path) -> Vec<Vec<String>> {
    let mut r = csv::Reader::from_path(csv).unwrap();
    let header: Vec<String> = r.headers().unwrap().iter().map(String::from).collect();
    let host = |h: &str| {
        ["real_s", "user_s", "sys_s", "morph_engine_s", "morph_os_s"].contains(&h)
            || ["host", "date", "wall", "elapsed"].iter().any(|w| h.contains(w))
    };
    let keep: Vec<usize> = (0..header.len()).filter(|&i| !host(&header[i])).collect();
    let mut rows = vec![keep.iter().map(|&i| header[i].clone()).collect::<Vec<_>>()];
    for rec in r.records() {
        let rec = rec.unwrap();
        rows.push(keep.iter().map(|&i| rec[i].to_string()).collect());
    }
    rows
}
