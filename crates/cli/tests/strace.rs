//! `--strace` and `--strace-file`: lines in strace's format, checked against the real
//! strace (`strace -f`) on the same guest programs run natively, and in detail on a
//! dynamically linked program from the Debian sysroot.

mod common;

use common::*;

/// A trace with the parts that legitimately differ between two runs made uniform: the
/// pid prefix (`[pid N] ` for morph, `N ` for strace -f), strace's padding before
/// ` = `, and addresses (the layouts differ); `execve` (strace traces the host's) and
/// strace's exit and signal notes (`+++`, `---`) are left out.
fn normalized(trace: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in trace.lines() {
        let line = match line.strip_prefix("[pid ") {
            Some(rest) => rest.split_once("] ").map_or(line, |(_, l)| l),
            None => line.split_once(' ').filter(|(pid, _)| pid.parse::<u32>().is_ok()).map_or(line, |(_, l)| l),
        };
        let line = line.trim_start();
        if line.starts_with("+++") || line.starts_with("---") || line.starts_with("execve(") {
            continue;
        }
        let mut s = String::new();
        let mut rest = line;
        // ")    = " → ") = "
        while let Some(i) = rest.find(')') {
            s.push_str(&rest[..=i]);
            rest = &rest[i + 1..];
            let trimmed = rest.trim_start_matches(' ');
            if trimmed.starts_with("= ") && trimmed.len() < rest.len() {
                s.push(' ');
                rest = trimmed;
            }
        }
        s.push_str(rest);
        out.push(mask_hex(&s));
    }
    out
}

/// `0x` followed by hex digits → `0x?`.
fn mask_hex(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = String::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'0' && b.get(i + 1) == Some(&b'x') && b.get(i + 2).is_some_and(u8::is_ascii_hexdigit) {
            out.push_str("0x?");
            i += 2;
            while b.get(i).is_some_and(u8::is_ascii_hexdigit) {
                i += 1;
            }
        } else {
            out.push(b[i] as char);
            i += 1;
        }
    }
    out
}

/// The guest program `name` run natively under `strace -f` and under
/// `morph run --strace-file`, each in a fresh directory: the two traces.
fn both_traces(name: &str) -> (String, String) {
    let prog = guests().join(name);
    let dir = scratch(&format!("strace-{name}"));
    let (nd, md) = (dir.join("native"), dir.join("morph"));
    std::fs::create_dir_all(&nd).unwrap();
    std::fs::create_dir_all(&md).unwrap();
    let nt = dir.join("native.trace");
    let mt = dir.join("morph.trace");
    let mut c = std::process::Command::new("strace");
    c.arg("-f").arg("-o").arg(&nt).arg(&prog).current_dir(&nd).env_clear().env("LC_ALL", "C");
    let st = c.output().expect("strace (install it: apt-get install strace)");
    assert!(nt.exists(), "strace could not trace {name}: {}", String::from_utf8_lossy(&st.stderr));
    let r = morph_raw(
        &["run", "--clear-env", "--env", "LC_ALL=C", "--strace-file", mt.to_str().unwrap(), prog.to_str().unwrap()],
        &md,
    );
    assert!(!r.stderr.contains("[pid "), "the trace went to the file, not stderr: {r:?}");
    (std::fs::read_to_string(nt).unwrap(), std::fs::read_to_string(mt).unwrap())
}

#[test]
fn traces_match_the_real_strace() {
    // Programs whose every call morph formats as strace does (descriptors, paths,
    // buffers, iovecs, open/mmap/mremap flags, whence, 64-bit offsets, stat results,
    // errno names and messages).
    for name in ["fileio", "fsops", "brk_mmap", "exit_code", "truncate32"] {
        let (native, morph) = both_traces(name);
        let (n, m) = (normalized(&native), normalized(&morph));
        assert!(n.len() > 1, "{name}: native trace too short:\n{native}");
        assert_eq!(n.join("\n"), m.join("\n"), "{name}:\n{}", diff(&n.join("\n"), &m.join("\n")));
    }
}

/// `prog args` from the Debian sysroot with `--strace-file`: status, stdout, stderr and
/// the trace's lines.
fn sysroot_trace(flags: &[&str], prog: &str, args: &[&str], tag: &str) -> (Run, Vec<String>) {
    let dir = scratch(&format!("strace-{tag}"));
    let trace = dir.join("trace");
    let root = sysroot().to_str().unwrap().to_string();
    let mut a = vec!["run", "--root", &root, "--clear-env", "--strace-file", trace.to_str().unwrap()];
    a.extend_from_slice(flags);
    a.push(prog);
    a.extend_from_slice(args);
    let r = morph_raw(&a, &dir);
    let lines = std::fs::read_to_string(&trace).unwrap_or_default().lines().map(str::to_string).collect();
    (r, lines)
}

fn has(lines: &[String], want: &str) -> bool {
    lines.iter().any(|l| l == want)
}

#[test]
fn a_dynamic_program_traced_like_strace() {
    let (r, t) = sysroot_trace(&[], "/bin/cat", &["/no/such/file"], "cat");
    assert_eq!(r.status, 1, "{r:?}");
    let all = t.join("\n");
    // The first call, with its address result in hex.
    let first = &t[0];
    assert!(first.starts_with("[pid 100] brk(NULL) = 0x"), "{all}");
    // Symbolic open flags, quoted paths, AT_FDCWD.
    assert!(
        has(&t, "[pid 100] openat(AT_FDCWD, \"/lib/i386-linux-gnu/libc.so.6\", O_RDONLY|O_LARGEFILE|O_CLOEXEC) = 3"),
        "{all}"
    );
    // The ELF header read, escaped as strace escapes it and cut at 32 bytes.
    assert!(
        t.iter().any(|l| l
            .starts_with("[pid 100] read(3, \"\\177ELF\\1\\1\\1\\3\\0\\0\\0\\0\\0\\0\\0\\0\\3\\0\\3\\0\\1\\0\\0\\0")
            && l.ends_with("\"..., 512) = 512")),
        "{all}"
    );
    // mmap2: symbolic protections and flags, fd, the offset in bytes, an address.
    assert!(
        t.iter()
            .any(|l| l.contains(", PROT_READ|PROT_EXEC, MAP_PRIVATE|MAP_FIXED|MAP_DENYWRITE, 3, 0x")
                && l.contains(") = 0x")),
        "{all}"
    );
    // An anonymous mapping's offset is `0`, as strace shows it.
    assert!(t.iter().any(|l| l.contains(", PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0) = 0x")), "{all}");
    assert!(t.iter().any(|l| l.starts_with("[pid 100] mprotect(0x") && l.ends_with(", PROT_READ) = 0")), "{all}");
    // Errno names with the message alone; glibc's rseq registration as strace shows it.
    assert!(has(&t, "[pid 100] access(\"/etc/ld.so.preload\", R_OK) = -1 ENOENT (No such file or directory)"), "{all}");
    assert!(t.iter().any(|l| l.starts_with("[pid 100] rseq(0x") && l.ends_with(", 0x20, 0, 0x53053053) = 0")), "{all}");
    assert!(
        has(
            &t,
            "[pid 100] openat(AT_FDCWD, \"/no/such/file\", O_RDONLY|O_LARGEFILE) = -1 ENOENT (No such file or directory)"
        ),
        "{all}"
    );
    assert!(!all.contains("os error") && !all.contains("syscall_"), "{all}");
    // The message cat wrote, and the exit with no return value.
    assert!(has(&t, "[pid 100] write(2, \"/bin/cat: \", 10) = 10"), "{all}");
    assert_eq!(t.last().map(String::as_str), Some("[pid 100] exit_group(1) = ?"), "{all}");
}

#[test]
fn clone_flags_children_and_exit_status() {
    let (r, t) = sysroot_trace(&[], "/bin/busybox", &["sh", "-c", "/bin/busybox true; exit 3"], "clone");
    assert_eq!(r.status, 3, "{r:?}");
    let all = t.join("\n");
    assert!(
        t.iter().any(|l| l.starts_with(
            "[pid 100] clone(child_stack=NULL, flags=CLONE_CHILD_CLEARTID|CLONE_CHILD_SETTID|SIGCHLD, parent_tid=NULL, tls=NULL, child_tidptr=0x"
        ) && l.ends_with(") = 101")),
        "{all}"
    );
    assert!(
        t.iter().any(|l| l.starts_with("[pid 101] execve(\"/bin/busybox\", [\"/bin/busybox\", \"true\"], 0x")
            && l.ends_with(" vars */) = 0")),
        "{all}"
    );
    assert!(has(&t, "[pid 101] exit_group(0) = ?"), "{all}");
    assert!(t.iter().any(|l| l.starts_with("[pid 100] wait4(-1, ") && l.ends_with(") = 101")), "{all}");
    assert_eq!(t.last().map(String::as_str), Some("[pid 100] exit_group(3) = ?"), "{all}");
}

#[test]
fn strace_file_is_checked_before_the_guest_runs() {
    let dir = scratch("strace-file");
    let root = sysroot().to_str().unwrap().to_string();
    let bad = dir.join("no/such/dir/trace");
    let r = morph_raw(
        &["run", "--root", &root, "--strace-file", bad.to_str().unwrap(), "/bin/busybox", "echo", "ran"],
        &dir,
    );
    assert_eq!(r.status, 125, "{r:?}");
    assert_eq!(r.stdout, "", "the guest must not run: {r:?}");
    assert!(r.stderr.contains(&format!("--strace-file {}: No such file or directory", bad.display())), "{r:?}");
    assert!(!r.stderr.contains("os error"), "{r:?}");
    // A writable file: the guest runs, its output is its own, the trace is in the file.
    let good = dir.join("trace");
    let r = morph_raw(
        &["run", "--root", &root, "--strace-file", good.to_str().unwrap(), "/bin/busybox", "echo", "ran"],
        &dir,
    );
    assert_eq!((r.status, r.stdout.as_str(), r.stderr.as_str()), (0, "ran\n", ""), "{r:?}");
    let trace = std::fs::read_to_string(&good).unwrap();
    assert!(trace.lines().any(|l| l == "[pid 100] write(1, \"ran\\n\", 4) = 4"), "{trace}");
    // --strace alone: the same lines on stderr.
    let r = morph_raw(&["run", "--root", &root, "--strace", "/bin/busybox", "echo", "ran"], &dir);
    assert!(r.stderr.lines().any(|l| l == "[pid 100] write(1, \"ran\\n\", 4) = 4"), "{r:?}");
}
