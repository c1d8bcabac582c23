//! The instruction table against the hardware: every form of morph's instruction table
//! that has a generated instance (`morph_cpu::isa::sample`: a register form, and a memory
//! form addressing a scratch page), bare and behind each prefix a decoder can meet
//! (operand and address size, `rep`/`repne`, `lock`, the six segment overrides), runs from
//! random registers and flags natively and under morph — the interpreter, and the
//! translator at threshold 0 — in the harness `guests/src/conform.c`, which prints what
//! each case left: how it ended (the signal, si_code, si_addr, trap number, error code
//! and EIP of a fault), the registers, EFLAGS, the segment registers, and hashes of the
//! x87/MMX state and of the data and stack pages. Every line must be the native one:
//! nothing is masked (the interpreter gives the host's undefined results).
//!
//! Left out, each for a reason of the model, not of exactness: the forms the modeled CPU
//! does not have (`Support::Invalid`: the host runs them, morph raises `#UD` by design;
//! SSE forms run under `--cpu tm8600`, the model that has them), `cpuid` (morph reports
//! the modeled CPU), the time-stamp counter, and the instructions that enter the kernel
//! (`sysenter`, `syscall`: a random EAX would be a random system call).

mod common;

use common::*;
use std::collections::BTreeMap;

use iced_x86::{Code, Decoder, DecoderOptions, Formatter, IntelFormatter, Mnemonic, OpKind, Register};
use morph_cpu::isa::{self, Support};

const CODE: u32 = 0x3000_0000;
const DATA: u32 = 0x3010_0000;
const STACK: u32 = 0x3020_0000;

/// A deterministic xorshift generator (the cases must be reproducible).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 16) as u32
    }
}

/// The prefixes each form is also tried behind.
const PREFIXES: [u8; 11] = [0x66, 0x67, 0xf2, 0xf3, 0xf0, 0x26, 0x2e, 0x36, 0x3e, 0x64, 0x65];

/// Whether a form is left out (see the module's comment).
fn left_out(code: Code, sse: bool) -> bool {
    let e = isa::entry(code);
    let wanted = match e.support {
        Support::Invalid => false,
        Support::Sse => sse,
        _ => !sse,
    };
    !wanted
        || matches!(
            code.mnemonic(),
            Mnemonic::Cpuid
                | Mnemonic::Rdtsc
                | Mnemonic::Rdtscp
                | Mnemonic::Sysenter
                | Mnemonic::Syscall
                | Mnemonic::Sysexit
                | Mnemonic::Sysret
        )
}

/// Why a case is not compared, if it is not: what morph leaves out of the model on
/// purpose, each named in docs/architecture.md (§ The instruction set). `sse`: the run
/// under the model with SSE.
fn not_compared(code: &[u8], sse: bool) -> Option<&'static str> {
    let ins = Decoder::with_ip(32, code, u64::from(CODE), DecoderOptions::NONE).decode();
    if left_out(ins.code(), sse) {
        // A prefix made it another form (`66` before an MMX form: its SSE2 twin).
        return Some("a prefix makes it a form the model does not have, or one of the other run");
    }
    let faults = ins.op0_kind() == OpKind::MemorySegDI
        || matches!(ins.segment_prefix(), Register::CS | Register::FS | Register::GS);
    if ins.mnemonic() == Mnemonic::Maskmovq && faults && !amd() {
        return Some("maskmovq faulting on [di] or on its segment: whether it enters MMX state first, measured on AMD");
    }
    if ins.mnemonic() == Mnemonic::Maskmovdqu && faults && !amd() {
        // With a 16-bit address DI points into the unmapped low pages: AMD reports the
        // operand's start, Intel its first byte the mask selects.
        return Some(
            "maskmovdqu's faulting address (its start on AMD, the first byte written on Intel): measured on AMD",
        );
    }
    // `0F 0D /r` with a register operand: #UD on AMD, which morph models (a prefetch of
    // no memory); a hint NOP on Intel.
    let reg_0f0d = matches!(ins.code(), Code::Reservednop_rm16_r16_0F0D | Code::Reservednop_rm32_r32_0F0D)
        && ins.op0_kind() == OpKind::Register;
    if reg_0f0d && !amd() {
        return Some("0F 0D with a register operand: #UD on AMD (modeled), a NOP on Intel");
    }
    let bcd = matches!(
        ins.mnemonic(),
        Mnemonic::Daa | Mnemonic::Das | Mnemonic::Aaa | Mnemonic::Aas | Mnemonic::Aad | Mnemonic::Aam
    );
    let cmps = matches!(ins.mnemonic(), Mnemonic::Cmpsb | Mnemonic::Cmpsw | Mnemonic::Cmpsd);
    if (bcd || cmps) && !amd() {
        return Some("undefined BCD flags and the order of cmps's reads: measured on AMD hosts only");
    }
    let loopcc = matches!(ins.mnemonic(), Mnemonic::Loope | Mnemonic::Loopne);
    let rep = ins.has_repe_prefix() || ins.has_repne_prefix();
    if rep && loopcc && !amd() {
        return Some("F2/F3 before a loope/loopne (on AMD they pick the condition): measured on AMD only");
    }
    match ins.mnemonic() {
        Mnemonic::Lar if !amd() => {
            Some("lar's bits 19:16 (the limit's), undefined in Intel's manual: measured on AMD hosts only")
        }
        Mnemonic::Tzcnt | Mnemonic::Lzcnt | Mnemonic::Popcnt => {
            Some("F3 before BSF/BSR: the TM5600 has no BMI1/LZCNT, so they run as BSF/BSR")
        }
        Mnemonic::Sldt | Mnemonic::Str | Mnemonic::Sgdt | Mnemonic::Sidt | Mnemonic::Smsw if !host_umip() => {
            Some("descriptor-table stores on a host without UMIP: they show the host kernel's tables")
        }
        _ => None,
    }
}

/// Whether the host is AMD's, where the behaviours the test marks so were measured.
fn amd() -> bool {
    host_vendor().contains("AMD")
}

/// Whether the host CPU has UMIP (Linux then emulates `sgdt`, `sidt`, `sldt`, `str` and
/// `smsw` with the values morph gives).
fn host_umip() -> bool {
    std::fs::read_to_string("/proc/cpuinfo")
        .is_ok_and(|c| c.lines().any(|l| l.starts_with("flags") && l.split_whitespace().any(|f| f == "umip")))
}

/// The fields of `line`, the harness's line for the case `code`, that are compared: all
/// but the selectors after `fldenv` and `frstor` (morph does not keep the code and data
/// selectors an image loads: `interp::fpu::env_selectors`) and after a signal.
fn compared(code: &[u8], line: &str) -> String {
    let loads_env = Decoder::with_ip(32, code, u64::from(CODE), DecoderOptions::NONE)
        .into_iter()
        .any(|ins| matches!(ins.mnemonic(), Mnemonic::Fldenv | Mnemonic::Frstor));
    // After a signal the state is the one sigreturn restored, which Linux saved in the
    // 64-bit format, without the selectors.
    let signal = line.split(' ').nth(1).is_some_and(|h| h.starts_with("sig"));
    line.split(' ')
        .filter_map(|f| {
            if (loads_env || signal) && (f.starts_with("fdp=") || f.starts_with("fds=")) {
                return None;
            }
            match f.strip_prefix("fcs=") {
                // FOP is kept; the selector is the low half.
                Some(v) if loads_env || signal => {
                    Some(format!("fop={:x}", u32::from_str_radix(v, 16).unwrap_or(0) >> 16))
                }
                _ => Some(f.to_owned()),
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// One case: its code and the registers and flags it starts from, as the harness reads
/// them (a 96-byte record).
struct Case {
    code: Vec<u8>,
    regs: [u32; 8],
    eflags: u32,
}

impl Case {
    /// `code` from a random state: EBX addresses the scratch page (`[ebx + 0x40]`), ESI
    /// and EDI point into it for the string instructions, ESP into the stack page; ECX a
    /// count that may run a string instruction off the page's end; the arithmetic flags
    /// and DF random.
    fn starting(code: Vec<u8>, rng: &mut Rng) -> Case {
        let (a, c, d, bp) = (rng.next(), rng.next() & 0x7ff, rng.next(), rng.next());
        // Not in the top 32 MiB, where the native harness's stack lies somewhere different
        // in every run (ASLR): a `leave` or an EBP-based access there found it mapped in
        // one run of six thousand sequences (stop 50), and morph's layout differs.
        let bp = if bp >= 0xfe00_0000 { bp & 0x7fff_ffff } else { bp };
        let regs = [a, c, d, DATA, STACK + 0x800, bp, DATA + 0x100, DATA + 0x200];
        Case { code, regs, eflags: (rng.next() & 0xcd5) | 0x202 }
    }

    fn record(&self) -> [u8; 96] {
        let mut r = [0u8; 96];
        r[0] = self.code.len() as u8;
        r[1..1 + self.code.len()].copy_from_slice(&self.code);
        for (i, v) in self.regs.iter().chain([&self.eflags]).enumerate() {
            r[60 + 4 * i..64 + 4 * i].copy_from_slice(&v.to_le_bytes());
        }
        r
    }

    fn describe(&self) -> String {
        let mut dec = Decoder::with_ip(32, &self.code, u64::from(CODE), DecoderOptions::NONE);
        let mut f = IntelFormatter::new();
        let mut text = String::new();
        let ins = dec.decode();
        f.format(&ins, &mut text);
        let bytes: Vec<String> = self.code.iter().map(|b| format!("{b:02x}")).collect();
        format!("{} `{text}` regs {:08x?} eflags {:08x}", bytes.join(" "), self.regs, self.eflags)
    }
}

fn cases(sse: bool) -> Vec<Case> {
    let mut rng = Rng(0x6a09_e667_f3bc_c908 ^ u64::from(sse));
    let mut v = Vec::new();
    for code in Code::values() {
        if left_out(code, sse) {
            continue;
        }
        for memory in [false, true] {
            let Some((bytes, _)) = isa::sample(code, memory, CODE) else { continue };
            for prefix in [None].into_iter().chain(PREFIXES.map(Some)) {
                let mut c: Vec<u8> = prefix.into_iter().collect();
                c.extend(&bytes);
                if not_compared(&c, sse).is_some() {
                    continue;
                }
                v.push(Case::starting(c, &mut rng));
            }
        }
    }
    v
}

/// Random runs of three instruction forms (register and memory instances, no
/// prefixes), each form one the single-form cases compare: instructions that meet in a
/// translation (flags one leaves for the next, joins, runs of pushes) as on the hardware.
/// `sse`: the SSE forms and the others together (run under `--cpu tm8600`), else the
/// others alone.
fn sequences(sse: bool, n: usize) -> Vec<Case> {
    let mut rng = Rng(0xbb67_ae85_84ca_a73b ^ u64::from(sse));
    let sets: &[bool] = if sse { &[false, true] } else { &[false] };
    let forms: Vec<Vec<u8>> = sets
        .iter()
        .flat_map(|&set| {
            Code::values()
                .filter(move |&c| !left_out(c, set))
                .flat_map(|c| [false, true].into_iter().filter_map(move |m| isa::sample(c, m, CODE).map(|(b, _)| b)))
                .filter(move |b| not_compared(b, set).is_none())
        })
        .collect();
    (0..n)
        .map(|_| {
            let mut code = Vec::new();
            for _ in 0..3 {
                code.extend(&forms[rng.next() as usize % forms.len()]);
            }
            Case::starting(code, &mut rng)
        })
        .filter(|c| c.code.len() <= 59)
        .collect()
}

/// Runs the cases under `flags` (None: natively), from `input` (a file: the harness's
/// output is read only when it ends); the harness's lines.
fn run(flags: Option<&[&str]>, input: &std::path::Path) -> Vec<String> {
    let prog = guests().join("conform");
    let mut cmd = match flags {
        None => std::process::Command::new(&prog),
        Some(f) => {
            let mut c = std::process::Command::new(morph());
            c.arg("run").args(f).arg("--").arg(&prog);
            c
        }
    };
    cmd.arg("-").env_clear().stdin(std::fs::File::open(input).unwrap());
    let out = cmd.output().expect("run the conform harness");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "conform under {flags:?}: {} {stderr}", out.status);
    String::from_utf8_lossy(&out.stdout).lines().map(str::to_owned).collect()
}

fn check(sse: bool, configs: &[&[&str]]) {
    check_cases(sse, cases(sse), configs);
}

fn check_cases(sse: bool, cases: Vec<Case>, configs: &[&[&str]]) {
    let input = scratch(&format!("conform-{}-{}", u8::from(sse), cases.len())).join("cases");
    std::fs::write(&input, cases.iter().flat_map(|c| c.record()).collect::<Vec<u8>>()).unwrap();
    let want = run(None, &input);
    assert_eq!(want.last().map(String::as_str), Some(format!("{} cases", cases.len()).as_str()));
    let mut bad = BTreeMap::new();
    for cfg in configs {
        let got = run(Some(cfg), &input);
        assert_eq!(got.len(), want.len(), "{cfg:?}: {} lines, natively {}", got.len(), want.len());
        for (i, (w, g)) in want.iter().zip(&got).enumerate() {
            if i < cases.len() && compared(&cases[i].code, w) != compared(&cases[i].code, g) {
                bad.entry(i).or_insert_with(Vec::new).push(format!("  {cfg:?}\n    native {w}\n    morph  {g}"));
            }
        }
    }
    let report: Vec<String> =
        bad.iter().take(40).map(|(&i, d)| format!("{}\n{}", cases[i].describe(), d.join("\n"))).collect();
    assert!(bad.is_empty(), "{} of {} cases differ from native:\n{}", bad.len(), cases.len(), report.join("\n"));
}

#[test]
fn every_table_form_runs_as_on_the_hardware() {
    check(false, &[&["--engine", "interp"], &["--engine", "dbt", "--threshold", "0"]]);
}

#[test]
fn every_sse_form_runs_as_on_the_hardware_on_the_tm8600() {
    check(
        true,
        &[&["--engine", "interp", "--cpu", "tm8600"], &["--engine", "dbt", "--threshold", "0", "--cpu", "tm8600"]],
    );
}

#[test]
fn runs_of_three_forms_run_as_on_the_hardware() {
    let configs: &[&[&str]] = &[&["--engine", "interp"], &["--engine", "dbt", "--threshold", "0"]];
    check_cases(false, sequences(false, 6000), configs);
}

/// Hand-made runs with the selectors a process can load (the harness's FS and GS hold
/// the null selector): far-pointer loads of each, accesses through the null selector and
/// through read-only segments (a code segment, the per-CPU segment) in DS, ES and GS,
/// a segment register reloaded between two accesses of one block, `arpl`, and `lar`,
/// `lsl`, `verr` and `verw` of every kind of selector in both operand sizes; then, in a
/// harness of its own, a TLS segment made by `set_thread_area` and loaded into DS.
#[test]
fn segments_and_descriptors_as_on_the_hardware() {
    let hex = |s: &str| -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
    };
    // mov dword [ebx+0x44], SEL; mov edx, [ebx+0x40]; then the load.
    let far = |sel: u8, load: &str| hex(&format!("c74344{sel:02x}000000 8b5340 {load}"));
    let mut codes: Vec<Vec<u8>> = Vec::new();
    for sel in [0x00, 0x03, 0x23, 0x2b, 0x33, 0x3b, 0x63, 0x7b, 0x28, 0x10] {
        for load in ["c54340", "c44340", "0fb44340", "0fb54340", "0fb24340", "66 c54340"] {
            codes.push(far(sel, load));
        }
    }
    for text in [
        "6a230fa9 658903",                 // gs = code: a write #GP
        "6a230fa9 658b03",                 // ... a read is allowed
        "6a001f 8b03",                     // ds = null: #GP
        "6a231f 8b03 8903 6a2b1f",         // ds = code: read, then a write #GP
        "6a7b1f 8b03 8903 6a2b1f",         // ds = the per-CPU segment: read-only
        "6a0007 ab",                       // es = null: stosd #GP
        "6a2307 ab 6a2b07",                // es = code: stosd #GP
        "6a231f a5 6a2b1f",                // movsd from a read-only DS
        "6a2b0fa9 658b03 6a000fa9 658b03", // gs reloaded null within a block
        "648b03",                          // fs null
        "6a2b0fa9 65ff03 658903",          // gs flat: read-modify-write and write
        "63c8",                            // arpl ax, cx
        "66b90300 63c8",                   // arpl raising the RPL
        "c7434001000000 66b90200 634b40",  // arpl [ebx+0x40], cx
    ] {
        codes.push(hex(text));
    }
    // `lar`'s bits 19:16 (the limit's) are undefined in Intel's manual: measured on AMD.
    let lar = amd();
    for sel in [0x00u32, 0x03, 0x23, 0x20, 0x2b, 0x28, 0x33, 0x3b, 0x63, 0x7b, 0x10, 0x40, 0x44, 0x12340023] {
        // mov eax, SEL; then lar/lsl (16 and 32 bits, register and memory), verr, verw.
        let lsl = if sel == 0x7b { "" } else { "0f03c8 660f03d0" }; // 0x7b's limit is the CPU's number
        let (lar_r, lar_m) = if lar { ("0f02c8 660f02d0", "0f024b40") } else { ("", "") };
        codes.push(hex(&format!("b8{:08x} {lar_r} {lsl} 0f00e0 0f00e8 894340 {lar_m}", sel.swap_bytes())));
    }
    // Far returns to another selector, whose outer stack slots lie in an unmapped page or
    // not: on AMD an RPL other than 3 reads them (a page fault) before the `#GP`.
    if amd() {
        for sel in [0x1628u32, 0x0000, 0x0003, 0x0010, 0x0020, 0x0022, 0x1633] {
            let s = format!("{:08x}", sel.swap_bytes());
            let s16 = format!("{:08x}", (sel << 16).swap_bytes());
            for text in [
                format!("bc00102030 6802020000 68{s} 6800000000 cf"), // iret, ESP at the page's end
                format!("bc00102030 68{s} 6800000000 cb"),            // retf
                format!("bc00082030 68{s} 6800000000 ca1000"),        // retf 0x10: mapped
                format!("bc00082030 68{s} 6800000000 ca0010"),        // retf 0x1000: not
                format!("bc00102030 68{s16} 66cb"),                   // 16-bit retf
            ] {
                codes.push(hex(&text));
            }
        }
        // `enter` with its new stack top in an unmapped page: AMD probes it for a write
        // before changing ESP and EBP (the frame pointers it copies are read first).
        for text in ["c8001000", "c8001001", "c8ffff00", "66c8001000", "6668aa55 c8001000", "c8001002"] {
            codes.push(hex(text));
        }
        // The popped slots all unmapped (ESP at the stack page's end): AMD reads the
        // highest first.
        for text in ["bc00102030 cb", "bc00102030 ca1000", "bc00102030 cf", "bc00102030 66cf", "bc00102030 66cb"] {
            codes.push(hex(text));
        }
    }
    // Accesses running past the 4 GiB limit of the flat segments: `#SS(0)` through SS
    // (EBP- or ESP-based operands, stack slots), `#GP(0)` through the others, on AMD
    // hosts, as morph models them; an Intel host (Sapphire Rapids, stop 50) makes no
    // limit check there and raises the page fault at the access's address instead.
    if amd() {
        for text in [
            "bdffffffff 8b4500",     // mov eax, [ebp]: #SS
            "bbfeffffff 8b03",       // mov eax, [ebx]: #GP
            "bbfeffffff 8903",       // a write: #GP
            "bbfeffffff ff33",       // push dword [ebx]: #GP
            "bdffffffff ff7500",     // push dword [ebp]: #SS
            "bbfeffffff d903",       // fld dword [ebx]: #GP
            "bdfdffffff dd4500",     // fld qword [ebp]: #SS
            "bc02000000 50",         // push with ESP 2: #SS
            "bcfeffffff 58",         // pop: #SS
            "bcfdffffff c3",         // ret: #SS
            "bc02000000 e800000000", // call: #SS
            "befeffffff a5",         // movsd from [esi]: #GP
            "bffeffffff ab",         // stosd to [edi]: #GP
            "bdfeffffff c9",         // leave: #SS
        ] {
            codes.push(hex(text));
        }
    }
    // An address computed past the limit wraps and is no fault; accesses that end at it
    // fault on their page.
    for text in [
        "bdffffffff 8b4501", // [ebp + 1] = 0: a page fault at 0
        "bdffffffff 8a4500", // one byte at 0xffffffff: a page fault there
        "bbfeffffff 668b03", // two bytes ending at 0xffffffff: a page fault
        "bc1000000060",      // pusha below 0 wraps: a page fault at 0xc
        // iret with EFLAGS.NT set (by popf): #GP(0), before any read
        "9c810c2400400000 9d 682b000000 6800080000 6802020000 6823000000 680d000030 cf",
        "9c810c2400400000 9d bc00102030 cf",
        "31c9 f365a7", // rep cmps through the null GS with a zero count: no access, no #GP
        "31c9 f365a5", // ... rep movs
        "31c9 f364ac", // ... rep lods through FS
    ] {
        codes.push(hex(text));
    }
    if amd() {
        // cmps through the null GS with ES:[EDI] unmapped: AMD's reads ES:[EDI] first, so
        // the page fault comes before the #GP (found by random code, seed 63).
        // arpl through CS: it reads first and writes only to raise the RPL, so an
        // unmapped destination is #PF and a #GP needs the write (seed 132).
        for text in [
            "bf00000040 65a7",
            "bf00000040 65a6",
            "bf00000040 f365a7",
            "bb00000040 2e633b",
            "66bf0300 c70300000000 2e633b",
            "66bf0000 c70303000000 2e633b",
            "66bf0300 c70303000000 2e633b",
        ] {
            codes.push(hex(text));
        }
    }
    // `popa` with its slots wholly unmapped: the fault is at ESP's (EDI's slot); partly:
    // at the first slot from ESP up that cannot be read (ESP's own included), the
    // registers popped before it written on AMD.
    codes.push(hex("bc00102030 61"));
    if amd() {
        for text in ["bcf00f2030 61", "bcf40f2030 61", "bcf00f2030 6661", "bcfa0f2030 6661", "bcf60f2030 6661"] {
            codes.push(hex(text));
        }
    }
    let mut rng = Rng(0x3c6e_f372_fe94_f82b);
    let cases: Vec<Case> = codes.into_iter().map(|c| Case::starting(c, &mut rng)).collect();
    let configs: &[&[&str]] = &[&["--engine", "interp"], &["--engine", "dbt", "--threshold", "0"]];
    check_cases(false, cases, configs);
    // set_thread_area(&{-1, DATA, 0xfffff, 32-bit, pages, useable}); ds = (entry << 3) | 3;
    // read [0x100] through it; ds flat again (the harness's exit jumps through DS); then
    // the entry's descriptor.
    let tls = hex("c74340ffffffff c7434400001030 c74348ffff0f00 c7434c51000000 8d5b40 b8f3000000 cd80 \
         8b03 c1e003 83c803 8ed8 8b0d00010000 6a2b1f");
    let rights = hex(if lar { "b863000000 0f02c8 0f03d0 0f00e0 0f00e8" } else { "b863000000 0f03d0 0f00e0 0f00e8" });
    let cases = vec![Case::starting(tls, &mut rng), Case::starting(rights, &mut rng)];
    check_cases(false, cases, configs);
}

/// `loope`/`loopne` whose taken and fall-through edges differ (a branch over two `inc
/// eax`), with and without F2/F3 prefixes (both orders), an address-size prefix and an
/// operand-size prefix (a taken 16-bit branch wraps IP to 16 bits: a fault natively and
/// under morph alike), from random flags and ECX: the table forms' cases branch to the
/// next instruction, where both edges meet. On AMD hosts the last `rep` prefix picks
/// the condition (measured there), so the prefixed cases are compared there only.
#[test]
fn prefixed_loops_take_the_hardware_s_edge() {
    let mut codes: Vec<Vec<u8>> = Vec::new();
    let prefixes: &[&[u8]] = if amd() {
        &[
            &[],
            &[0xf2],
            &[0xf3],
            &[0xf2, 0xf3],
            &[0xf3, 0xf2],
            &[0x67, 0xf2],
            &[0xf3, 0x67],
            &[0x66, 0xf2],
            &[0x66, 0xf3],
        ]
    } else {
        &[&[], &[0x67], &[0x66]]
    };
    for &p in prefixes {
        for op in [0xe0u8, 0xe1, 0xe2] {
            let mut c = p.to_vec();
            c.extend([op, 0x02, 0x40, 0x40]);
            codes.push(c);
        }
    }
    let mut rng = Rng(0x9b05_688c_2b3e_6c1f);
    let mut cases = Vec::new();
    for c in codes {
        for _ in 0..4 {
            let mut case = Case::starting(c.clone(), &mut rng);
            case.regs[1] = rng.next() % 3; // ECX: 0, 1 or 2 (1 ends the loop either way)
            cases.push(case);
        }
    }
    let configs: &[&[&str]] = &[&["--engine", "interp"], &["--engine", "dbt", "--threshold", "0"]];
    check_cases(false, cases, configs);
}

/// Every table form with EFLAGS.AC set (`pushf; or dword [esp], 0x40000; popf` first):
/// its memory instance with the operand's base misaligned by 1, 2 and 4 bytes, and both
/// instances with ESP misaligned by 2, so that each operand size, stack slot and string
/// element meets Linux's `#AC` (`SIGBUS`, `BUS_ADRALN`) or runs as on the hardware.
/// Compared on AMD hosts, where `#AC` was measured to come before a page fault of the
/// same access (the model's rule).
#[test]
fn alignment_checks_as_on_the_hardware() {
    if !amd() {
        eprintln!("alignment checks: not compared on this host (#AC against #PF measured on AMD only)");
        return;
    }
    const SET_AC: [u8; 9] = [0x9c, 0x81, 0x0c, 0x24, 0x00, 0x00, 0x04, 0x00, 0x9d];
    let mut rng = Rng(0x510e_527f_ade6_82d1);
    let mut cases = Vec::new();
    for code in Code::values().filter(|&c| !left_out(c, false)) {
        for memory in [false, true] {
            let Some((bytes, _)) = isa::sample(code, memory, CODE) else { continue };
            if not_compared(&bytes, false).is_some() {
                continue;
            }
            let mut c = SET_AC.to_vec();
            c.extend(&bytes);
            let bases: &[u32] = if memory { &[1, 2, 4] } else { &[] };
            for &off in bases {
                let mut case = Case::starting(c.clone(), &mut rng);
                case.regs[3] += off; // EBX
                cases.push(case);
            }
            let mut case = Case::starting(c, &mut rng);
            case.regs[4] += 2; // ESP
            cases.push(case);
        }
    }
    // `enter` whose new stack top (AMD's probe) is misaligned by its frame size, after
    // frame pointers read from a mapped and an unmapped EBP (seed 194).
    for text in ["c855e300", "c854e300", "66c855e300", "bd00081030 c855e302", "bd00081030 c855e30b", "c855e30b"] {
        let mut c = SET_AC.to_vec();
        let t: String = text.split_whitespace().collect();
        c.extend((0..t.len()).step_by(2).map(|i| u8::from_str_radix(&t[i..i + 2], 16).unwrap()));
        cases.push(Case::starting(c, &mut rng));
    }
    let configs: &[&[&str]] = &[&["--engine", "interp"], &["--engine", "dbt", "--threshold", "0"]];
    check_cases(false, cases, configs);
}

/// Random runs of three forms of the TM8600's (SSE, x87, MMX and integer forms together),
/// under `--cpu tm8600`: what one leaves for the next (an `fxsave` after an x87 memory
/// operand, MXCSR after an SSE exception) as on the hardware.
#[test]
fn runs_of_three_sse_forms_run_as_on_the_hardware_on_the_tm8600() {
    let configs: &[&[&str]] =
        &[&["--engine", "interp", "--cpu", "tm8600"], &["--engine", "dbt", "--threshold", "0", "--cpu", "tm8600"]];
    check_cases(true, sequences(true, 3000), configs);
}

/// Random bytes run as code (`guests/src/randcode.c`: 8 KiB of them per child process,
/// system calls taken out, registers and a 64 KiB data page random): every program
/// ends the same way under the interpreter and the translator — the signal, its
/// si_code and si_addr, EIP, trapno, err and every register at the fault — at
/// threshold 0 and the default, chained or not, under `physical` and `virtual`. Not
/// against native: the host's own layout (its stack near 4 GiB), time stamp counter
/// and instructions beyond the model reach into random code (the comparison made by
/// hand in stop 48 found the faults fixed then: see docs/results.md).
#[test]
fn random_code_runs_alike_in_both_engines() {
    let prog = guests().join("randcode");
    let configs: &[&[&str]] = &[
        &["--engine", "interp"],
        &["--engine", "dbt", "--threshold", "0"],
        &["--engine", "dbt"],
        &["--engine", "dbt", "--threshold", "0", "--key", "virtual", "--no-chain"],
    ];
    let mut differ = Vec::new();
    for seed in ["1", "2", "3"] {
        let runs: Vec<(&[&str], Run)> =
            configs.iter().map(|&f| (f, emulated(f, &prog, &[seed, "200"], &workspace(), b""))).collect();
        let (_, first) = &runs[0];
        assert_eq!(first.status, 0, "randcode {seed} under the interpreter: {}", first.stderr);
        assert_eq!(first.stdout.lines().filter(|l| l.contains(" exit ") || l.contains(" signal ")).count(), 200);
        for (f, r) in &runs[1..] {
            let a: Vec<&str> = first.stdout.lines().collect();
            let b: Vec<&str> = r.stdout.lines().collect();
            if a != b || r.status != 0 {
                let at = a.iter().zip(&b).position(|(x, y)| x != y).unwrap_or(a.len().min(b.len()));
                differ.push(format!(
                    "seed {seed} under {f:?}, line {at}:\n  interp {:?}\n  {:?} {:?}",
                    a.get(at),
                    f,
                    b.get(at)
                ));
            }
        }
    }
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}
