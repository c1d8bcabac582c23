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
