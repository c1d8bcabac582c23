//! The program loader accepts what Linux runs and builds what Linux builds: crafted
//! ELF files run natively and under morph (interpreter and translator) must give the
//! same bytes and status. Each file's code prints the value of one auxiliary-vector
//! entry as four raw bytes and exits with 42.

mod common;

use common::*;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};

/// Prints auxv entry `CODE[0x17]` (patched) as 4 bytes, then `exit(42)`:
/// walks argc/argv/envp from the initial stack pointer to the auxiliary vector.
const CODE: &str = "89e68b068d748608ad85c075fbad89c2ad85d2741c83fa0375f35089e1bb01000000\
                    ba04000000b804000000cd8058ebdcb801000000bb2a000000cd80";
const AT_PHDR: u8 = 3;
const AT_BASE: u8 = 7;

#[derive(Clone)]
struct Spec {
    base: u32,
    machine: u16,
    class: u8,
    data: u8,
    etype: u16,
    at: u8,
    interp: Option<String>,
    /// A PT_PHDR entry with this (wrong) address.
    pt_phdr: Option<u32>,
    /// Program headers after the code, outside the loaded bytes.
    phdrs_at_end: bool,
    /// p_filesz of the PT_LOAD (default: the whole file).
    filesz: Option<u32>,
}

impl Default for Spec {
    fn default() -> Self {
        Spec {
            base: 0x0804_8000,
            machine: 3,
            class: 1,
            data: 1,
            etype: 2,
            at: AT_PHDR,
            interp: None,
            pt_phdr: None,
            phdrs_at_end: false,
            filesz: None,
        }
    }
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

fn phdr(w: [u32; 8]) -> Vec<u8> {
    w.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// An i386 ELF: header, program headers at 52 (or after the code), code at 0x100.
fn build(s: &Spec) -> Vec<u8> {
    const CODE_OFF: u32 = 0x100;
    let mut code = hex(CODE);
    code[0x17] = s.at;
    let mut body = vec![0u8; CODE_OFF as usize];
    body.extend_from_slice(&code);
    let interp_off = body.len() as u32;
    if let Some(i) = &s.interp {
        body.extend_from_slice(i.as_bytes());
        body.push(0);
    }
    let n = 1 + u32::from(s.interp.is_some()) + u32::from(s.pt_phdr.is_some());
    let phoff = if s.phdrs_at_end { body.len() as u32 + 64 } else { 52 };
    let fsz = s.filesz.unwrap_or(body.len() as u32);
    let mut ph = Vec::new();
    if let Some(a) = s.pt_phdr {
        ph.extend(phdr([6, phoff, a, a, n * 32, n * 32, 4, 4]));
    }
    if let Some(i) = &s.interp {
        let len = i.len() as u32 + 1;
        ph.extend(phdr([3, interp_off, s.base + interp_off, 0, len, len, 4, 1]));
    }
    ph.extend(phdr([1, 0, s.base, s.base, fsz, fsz, 5, 0x1000]));
    let mut h = vec![0u8; 52];
    h[..4].copy_from_slice(b"\x7fELF");
    h[4] = s.class;
    h[5] = s.data;
    h[6] = 1;
    let put16 = |h: &mut Vec<u8>, o: usize, v: u16| h[o..o + 2].copy_from_slice(&v.to_le_bytes());
    let put32 = |h: &mut Vec<u8>, o: usize, v: u32| h[o..o + 4].copy_from_slice(&v.to_le_bytes());
    put16(&mut h, 16, s.etype);
    put16(&mut h, 18, s.machine);
    put32(&mut h, 20, 1);
    put32(&mut h, 24, s.base + CODE_OFF);
    put32(&mut h, 28, phoff);
    put16(&mut h, 40, 52);
    put16(&mut h, 42, 32);
    put16(&mut h, 44, n as u16);
    body[..52].copy_from_slice(&h);
    if s.phdrs_at_end {
        body.resize(phoff as usize, 0);
        body.extend_from_slice(&ph);
    } else {
        body[52..52 + ph.len()].copy_from_slice(&ph);
    }
    body
}

fn write_prog(dir: &Path, name: &str, bytes: &[u8], mode: u32) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
    p
}

/// Raw stdout and shell-style status.
fn raw(cmd: &mut Command) -> (Vec<u8>, i32) {
    use std::os::unix::process::ExitStatusExt;
    let o = cmd.env_clear().stdin(Stdio::null()).stderr(Stdio::null()).output().expect("spawn");
    (o.stdout, o.status.code().unwrap_or_else(|| 128 + o.status.signal().unwrap_or(0)))
}

fn same_as_native(dir: &Path, name: &str, bytes: &[u8]) -> Vec<String> {
    let prog = write_prog(dir, name, bytes, 0o755);
    let want = raw(&mut Command::new(&prog));
    let mut bad = Vec::new();
    for cfg in [vec!["--engine", "interp"], vec!["--engine", "dbt", "--threshold", "0"]] {
        let got = raw(Command::new(morph()).arg("run").args(&cfg).arg("--").arg(&prog));
        if got != want {
            bad.push(format!("{name} {cfg:?}: native {want:?}, morph {got:?}"));
        }
    }
    bad
}

#[test]
fn loader_matches_linux() {
    let dir = scratch("loader");
    let interp = dir.join("interp-exec");
    let cases: Vec<(&str, Spec)> = vec![
        ("plain", Spec::default()),
        ("em486", Spec { machine: 6, ..Spec::default() }),
        ("class64", Spec { class: 2, ..Spec::default() }),
        ("class0", Spec { class: 0, ..Spec::default() }),
        ("bigendian-byte", Spec { data: 2, ..Spec::default() }),
        ("pt-phdr-wrong", Spec { pt_phdr: Some(0x1234_5000), ..Spec::default() }),
        ("phdrs-not-loaded", Spec { phdrs_at_end: true, filesz: Some(0x140), ..Spec::default() }),
        ("segment-past-eof", Spec { filesz: Some(0x3000), ..Spec::default() }),
        ("low-address", Spec { base: 0x1000, ..Spec::default() }),
        ("address-zero", Spec { base: 0, ..Spec::default() }),
        ("interp-exec", Spec { base: 0x0900_0000, at: AT_BASE, ..Spec::default() }),
        ("with-exec-interp", Spec { interp: Some(interp.to_str().unwrap().into()), ..Spec::default() }),
    ];
    let mut bad = Vec::new();
    for (name, spec) in &cases {
        bad.extend(same_as_native(&dir, name, &build(spec)));
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn run_needs_the_exec_bit() {
    let dir = scratch("noexec");
    let prog = write_prog(&dir, "noexec", &build(&Spec::default()), 0o644);
    let r = morph_raw(&["run", prog.to_str().unwrap()], &dir);
    assert_eq!(r.status, 125, "{r:?}");
    assert!(r.stdout.is_empty(), "{r:?}");
    assert_eq!(r.stderr.lines().count(), 1, "{r:?}");
    assert!(r.stderr.starts_with("morph: ") && r.stderr.contains("Permission denied"), "{r:?}");
    // The same file is refused to a guest's execve by Linux and by morph alike.
    let ok = write_prog(&dir, "exec-ok", &build(&Spec::default()), 0o755);
    assert_eq!(raw(Command::new(morph()).arg("run").arg(&ok)).1, 42);
}
