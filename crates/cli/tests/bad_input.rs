//! Bad input gets a clear one-line error, the right exit status, no panic, and no
//! lost output.

mod common;

use common::*;
use std::path::Path;

fn assert_morph_error(r: &Run, needle: &str) {
    assert_eq!(r.status, 125, "{r:?}");
    assert!(r.stdout.is_empty(), "{r:?}");
    assert_eq!(r.stderr.lines().count(), 1, "one line expected: {r:?}");
    assert!(r.stderr.starts_with("morph: ") && r.stderr.contains(needle), "{needle:?} not in {r:?}");
    assert!(!r.stderr.contains("panicked"), "{r:?}");
}

fn elf_header(class: u8, machine: u16, phnum: u16, phoff: u32) -> Vec<u8> {
    let mut h = vec![0u8; 52];
    h[..4].copy_from_slice(b"\x7fELF");
    h[4] = class;
    h[5] = 1;
    h[6] = 1;
    h[16..18].copy_from_slice(&2u16.to_le_bytes()); // ET_EXEC
    h[18..20].copy_from_slice(&machine.to_le_bytes());
    h[24..28].copy_from_slice(&0x0804_8000u32.to_le_bytes());
    h[28..32].copy_from_slice(&phoff.to_le_bytes());
    h[40..42].copy_from_slice(&52u16.to_le_bytes());
    h[42..44].copy_from_slice(&32u16.to_le_bytes());
    h[44..46].copy_from_slice(&phnum.to_le_bytes());
    h
}

fn run_file(name: &str, bytes: &[u8]) -> Run {
    let dir = scratch(name);
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    // Executable, as for execve: a file without the bit is refused before it is read.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    morph_raw(&["run", p.to_str().unwrap()], &dir)
}

#[test]
fn non_elf() {
    assert_morph_error(&run_file("text", b"#just text\n"), "not an ELF executable");
}

#[test]
fn x86_64_elf() {
    let r = morph_raw(&["run", "/bin/true"], Path::new("/"));
    assert_morph_error(&r, "wrong architecture: x86-64");
}

#[test]
fn truncated_elf() {
    let bytes = std::fs::read(guests().join("exit_code")).unwrap();
    assert_morph_error(&run_file("trunc-header", &bytes[..30]), "truncated ELF header");
    assert_morph_error(&run_file("trunc-body", &bytes[..200.min(bytes.len())]), "beyond the end of the file");
}

#[test]
fn absurd_program_headers() {
    assert_morph_error(&run_file("phnum", &elf_header(1, 3, 0xffff, 52)), "absurd number of program headers");
    assert_morph_error(&run_file("phoff", &elf_header(1, 3, 4, 0xffff_fff0)), "beyond the end of the file");
    let mut h = elf_header(1, 3, 1, 52);
    let mut ph = vec![0u8; 32];
    ph[0..4].copy_from_slice(&1u32.to_le_bytes()); // PT_LOAD
    ph[8..12].copy_from_slice(&0xbfff_f000u32.to_le_bytes());
    ph[16..20].copy_from_slice(&0x10u32.to_le_bytes()); // filesz
    ph[20..24].copy_from_slice(&0x10_0000u32.to_le_bytes()); // memsz beyond user space
    h.extend_from_slice(&ph);
    assert_morph_error(&run_file("outside", &h), "outside user space");
    assert_morph_error(&run_file("arm", &elf_header(1, 40, 1, 52)), "wrong architecture");
}

#[test]
fn missing_file_and_directory() {
    let r = morph_raw(&["run", "/no/such/program"], Path::new("/"));
    assert_morph_error(&r, "No such file or directory");
    let r = morph_raw(&["run", "/tmp"], Path::new("/"));
    assert_morph_error(&r, "is a directory");
}

#[test]
fn guest_chosen_names_are_escaped_in_error_lines() {
    // A PT_INTERP with a terminal escape, a newline forging a second morph line, a
    // carriage return and a bidi override.
    let name = b"/\x1b[31mevil\nmorph: all is well\r\xe2\x80\xae";
    let r = run_file("evil-interp", &elf_with_interp(name));
    assert_morph_error(&r, "/\\u{1b}[31mevil\\nmorph: all is well\\r\\u{202e}: No such file or directory");
    assert!(!r.stderr.contains(['\x1b', '\r', '\u{202e}']), "{r:?}");
}

#[test]
fn bad_flag() {
    let r = morph_raw(&["run", "--engine", "warp", "/bin/true"], Path::new("/"));
    assert_eq!(r.status, 125, "{r:?}");
    let r = morph_raw(&["run", "--aslr", "heap", "/bin/true"], Path::new("/"));
    assert_morph_error(&r, "bad --aslr component 'heap'");
}

fn guest_dies(prog: &str, status: i32, needle: &str) {
    let dir = scratch(prog);
    let p = guests().join(prog);
    let r = morph_raw(&["run", p.to_str().unwrap()], &dir);
    let n = native(&p, &[], &dir, b"");
    assert_eq!(r.status, status, "{r:?}");
    assert_eq!(n.status, status, "native {n:?}");
    assert_eq!(r.stdout, n.stdout, "output before the fault must not be lost");
    assert!(!r.stdout.is_empty());
    assert!(r.stderr.contains(needle), "{needle:?} not in {r:?}");
    assert!(r.stderr.contains("at eip 0x"), "{r:?}");
}

#[test]
fn unsupported_instruction_is_sigill() {
    guest_dies("fault_ill", 128 + 4, "killed by SIGILL");
    let dir = scratch("ud2");
    let r = morph_raw(&["run", guests().join("fault_ill").to_str().unwrap()], &dir);
    assert!(r.stderr.contains("bytes 0f 0b"), "{r:?}");
}

#[test]
fn null_dereference_is_sigsegv() {
    guest_dies("fault_segv", 128 + 11, "read of unmapped address 0x00000000");
}

#[test]
fn divide_by_zero_is_sigfpe() {
    guest_dies("fault_div", 128 + 8, "divide error");
}

#[test]
fn unknown_flags_are_rejected_but_the_guests_arguments_pass_verbatim() {
    // An unknown option of morph is a usage error (clap's message, exit 125), not a
    // program called "--bogus"; a qemu habit such as `-L DIR` likewise.
    for args in [&["run", "--bogus", "/bin/true"][..], &["run", "-L", "/", "/bin/true"]] {
        let r = morph_raw(args, Path::new("/"));
        assert_eq!(r.status, 125, "{r:?}");
        assert!(r.stderr.contains(&format!("unexpected argument '{}'", args[1])), "{r:?}");
        assert!(!r.stderr.contains("No such file"), "{r:?}");
    }
    // After the program, and after `--`, every argument is the guest's.
    let root = sysroot();
    let root = root.to_str().unwrap();
    let r = morph_raw(&["run", "--root", root, "/bin/echo", "--bogus", "-n", "x"], Path::new("/"));
    assert_eq!((r.status, r.stdout.as_str()), (0, "--bogus -n x\n"), "{r:?}");
    let r = morph_raw(&["run", "--root", root, "--", "/bin/echo", "--", "--stats"], Path::new("/"));
    assert_eq!((r.status, r.stdout.as_str()), (0, "-- --stats\n"), "{r:?}");
}

#[test]
fn version_names_the_commit() {
    let r = morph_raw(&["--version"], Path::new("/"));
    assert_eq!(r.status, 0, "{r:?}");
    let line = r.stdout.trim();
    let commit = line.split("(commit ").nth(1).and_then(|s| s.strip_suffix(')'));
    let commit = commit.unwrap_or_else(|| panic!("no commit in {line:?}"));
    // A hex commit in a git checkout, "unknown" when built from a tarball.
    assert!(commit == "unknown" || commit.chars().all(|c| c.is_ascii_hexdigit()), "{line:?}");
    let git =
        std::process::Command::new("git").args(["rev-parse", "--short=12", "HEAD"]).current_dir(workspace()).output();
    if let Some(o) = git.ok().filter(|o| o.status.success()) {
        assert_eq!(commit, String::from_utf8_lossy(&o.stdout).trim(), "built from another commit? rebuild");
    }
}

#[test]
fn unwritable_output_fails_before_the_guest_runs_and_names_the_file() {
    let dir = scratch("unwritable-out");
    let marker = dir.join("ran");
    let root = sysroot();
    for (flag, bad) in [("--stats-json", dir.join("no/such/dir/s.json")), ("--code-map", dir.clone())] {
        let r = morph_raw(
            &[
                "run",
                "--root",
                root.to_str().unwrap(),
                "--engine",
                "dbt",
                flag,
                bad.to_str().unwrap(),
                "/bin/sh",
                "-c",
                &format!("touch {}", marker.display()),
            ],
            &dir,
        );
        assert_morph_error(&r, &format!("{flag} {}", bad.display()));
        assert!(!marker.exists(), "the guest ran before {flag} was checked");
    }
}

#[test]
fn stats_json_records_configuration_and_metadata_and_keeps_the_guest_status() {
    let dir = scratch("stats-meta");
    let out = dir.join("s.json");
    let root = sysroot();
    let r = morph_raw(
        &[
            "run",
            "--root",
            root.to_str().unwrap(),
            "--engine",
            "dbt",
            "--key",
            "virtual",
            "--seed",
            "7",
            "--stats-json",
            out.to_str().unwrap(),
            "/bin/sh",
            "-c",
            "exit 3",
        ],
        &dir,
    );
    assert_eq!(r.status, 3, "{r:?}");
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let c = &v["config"];
    assert_eq!((c["engine"].as_str(), c["key"].as_str(), c["seed"].as_u64()), (Some("dbt"), Some("virtual"), Some(7)));
    assert_eq!(c["argv"], serde_json::json!(["/bin/sh", "-c", "exit 3"]), "{c}");
    for f in ["threshold", "chain", "aslr", "kernel", "root"] {
        assert!(!c[f].is_null(), "config without {f}: {c}");
    }
    assert!(c["sysroot"]["packages"]["libc6"].is_string(), "{c}");
    let m = &v["metadata"];
    for f in ["morph_version", "morph_commit", "host_cpu", "host_kernel", "date_utc"] {
        assert!(m[f].as_str().is_some_and(|s| !s.is_empty()), "metadata without {f}: {m}");
    }
}

#[test]
fn unwritable_experiment_output_fails_before_any_run() {
    let dir = scratch("unwritable-exp-out");
    let root = sysroot();
    for flag in ["--csv", "--json", "--svg", "--png"] {
        let bad = dir.join("no/such/dir/out");
        let r = morph_raw(
            &[
                "exp",
                "seed",
                "--root",
                root.to_str().unwrap(),
                "--runs",
                "1",
                "--rounds",
                "1",
                "--quiet",
                flag,
                bad.to_str().unwrap(),
            ],
            &dir,
        );
        assert_morph_error(&r, &format!("{flag} {}", bad.display()));
    }
    // Nothing was written beside them either (the default plot is not made).
    assert!(!dir.join("seed.svg").exists());
}
