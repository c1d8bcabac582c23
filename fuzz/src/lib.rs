//! What the fuzz targets run: a fresh small machine per input, confined to a scratch
//! root of its own, so that whatever the input does stays there.
//!
//! - [`load_elf`]: the input is a program file; the machine loads it (parses its
//!   headers, maps its segments through the page cache, loads its interpreter, builds
//!   the initial stack) and nothing else. Any outcome but a panic, an abort or a hang is
//!   fine: a bad file is a load error, as `execve` fails.
//! - [`run_syscalls`]: the input is up to sixteen system calls (28 bytes each: number
//!   and six arguments; an argument whose top nibble is `F` points into the page that
//!   follows) and then up to a page of guest memory. The machine runs a tiny static
//!   program that makes them in turn, under a short time limit, then exits. The first
//!   byte's low bit picks the translator instead of the interpreter.

use std::path::PathBuf;
use std::time::Duration;

use morph_os::{Config, Machine};

/// A scratch root for this process (made once, emptied of what a run left at the top).
fn root() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("morph-fuzz-{}", std::process::id()));
    let _ = std::fs::create_dir_all(dir.join("tmp"));
    dir
}

fn machine(root: PathBuf, engine_dbt: bool) -> Option<Machine> {
    let cfg = Config {
        root,
        max_mem: 64 << 20,
        timeout: Some(Duration::from_millis(50)),
        max_procs: 4,
        engine: morph_dbt::EngineConfig { translate: engine_dbt, threshold: 2, ..Default::default() },
        ..Config::default()
    };
    Machine::new(cfg).ok()
}

/// Loads `data` as a program into a fresh machine.
pub fn load_elf(data: &[u8]) {
    let root = root();
    let prog = root.join("prog");
    if std::fs::write(&prog, data).is_err() {
        return;
    }
    let _ = std::fs::set_permissions(&prog, std::os::unix::fs::PermissionsExt::from_mode(0o755));
    if let Some(mut m) = machine(root, false) {
        let _ = m.spawn("/prog", &[b"prog".to_vec()], &[], "/");
    }
}

/// Guest address of the program (a single read/write/execute segment).
const BASE: u32 = 0x0804_8000;
/// Offset of the code in the file (after the ELF and program headers).
const CODE: u32 = 0x100;
/// Offset of the fuzzed data page in the file.
const DATA: u32 = 0x1000;
/// The most system calls one input makes.
const CALLS: usize = 16;

/// A static i386 program that makes the system calls the input describes, then exits.
pub fn syscall_program(data: &[u8]) -> Vec<u8> {
    let (calls, page) = data.split_at(data.len().min(CALLS * 28));
    let page = &page[..page.len().min(4096)];
    let mut code = Vec::new();
    for call in calls.chunks_exact(28) {
        let word = |i: usize| u32::from_le_bytes([call[4 * i], call[4 * i + 1], call[4 * i + 2], call[4 * i + 3]]);
        let arg = |i: usize| {
            let v = word(i);
            if v >> 28 == 0xF { BASE + DATA + (v & 0xFFF) } else { v }
        };
        code.push(0xB8); // mov eax, nr (below the highest call number Linux i386 has)
        code.extend_from_slice(&(word(0) % 460).to_le_bytes());
        for (op, i) in [(0xBB, 1), (0xB9, 2), (0xBA, 3), (0xBE, 4), (0xBF, 5), (0xBD, 6)] {
            code.push(op); // mov ebx/ecx/edx/esi/edi/ebp, arg
            code.extend_from_slice(&arg(i).to_le_bytes());
        }
        code.extend_from_slice(&[0xCD, 0x80]); // int 0x80
    }
    code.extend_from_slice(&[0xB8, 1, 0, 0, 0, 0x31, 0xDB, 0xCD, 0x80]); // exit(0)
    let size = DATA as usize + 4096;
    let mut f = vec![0u8; size];
    // ELF header: 32-bit, little-endian, ET_EXEC, EM_386, one program header.
    f[..16].copy_from_slice(&[0x7F, b'E', b'L', b'F', 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    let put16 = |f: &mut Vec<u8>, at: usize, v: u16| f[at..at + 2].copy_from_slice(&v.to_le_bytes());
    let put32 = |f: &mut Vec<u8>, at: usize, v: u32| f[at..at + 4].copy_from_slice(&v.to_le_bytes());
    put16(&mut f, 16, 2); // e_type
    put16(&mut f, 18, 3); // e_machine
    put32(&mut f, 20, 1); // e_version
    put32(&mut f, 24, BASE + CODE); // e_entry
    put32(&mut f, 28, 52); // e_phoff
    put16(&mut f, 40, 52); // e_ehsize
    put16(&mut f, 42, 32); // e_phentsize
    put16(&mut f, 44, 1); // e_phnum
    // PT_LOAD of the whole file, read/write/execute.
    let ph = 52;
    put32(&mut f, ph, 1);
    put32(&mut f, ph + 4, 0);
    put32(&mut f, ph + 8, BASE);
    put32(&mut f, ph + 12, BASE);
    put32(&mut f, ph + 16, size as u32);
    put32(&mut f, ph + 20, size as u32);
    put32(&mut f, ph + 24, 7);
    put32(&mut f, ph + 28, 0x1000);
    let code = &code[..code.len().min((DATA - CODE) as usize)];
    f[CODE as usize..CODE as usize + code.len()].copy_from_slice(code);
    f[DATA as usize..DATA as usize + page.len()].copy_from_slice(page);
    f
}

/// Runs the system calls `data` describes in a fresh machine.
pub fn run_syscalls(data: &[u8]) {
    let root = root();
    let prog = root.join("calls");
    if std::fs::write(&prog, syscall_program(data)).is_err() {
        return;
    }
    let _ = std::fs::set_permissions(&prog, std::os::unix::fs::PermissionsExt::from_mode(0o755));
    let dbt = data.first().is_some_and(|b| b & 1 == 1);
    if let Some(mut m) = machine(root, dbt)
        && m.spawn("/calls", &[b"calls".to_vec()], &[], "/").is_ok()
    {
        let _ = m.run();
    }
}
