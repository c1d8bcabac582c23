//! Golden tests: a few guest blocks and the host code the translator makes of them,
//! disassembled with iced's formatter. Run with `BLESS=1` to rewrite the expectations
//! after reviewing a change to the translator.

use iced_x86::code_asm::*;
use iced_x86::{Code, Decoder, DecoderOptions, Formatter, IntelFormatter};

const EIP: u32 = 0x0804_8000;

fn disasm(bits: u32, code: &[u8], ip: u64) -> String {
    let decoded = if bits == 64 {
        morph_dbt::decode_host(code, ip)
    } else {
        Decoder::with_ip(bits, code, ip, DecoderOptions::NONE).into_iter().collect()
    };
    let mut f = IntelFormatter::new();
    let mut out = String::new();
    for i in decoded {
        let mut s = String::new();
        if i.code() == Code::Mov_r64_imm64 {
            // Host addresses (helper function, instruction records) vary per run.
            s = format!("mov {:?},<host address>", i.op0_register()).to_lowercase();
        } else if matches!(i.code(), Code::VEX_Rorx_r32_rm32_imm8 | Code::VEX_Rorx_r64_rm64_imm8) {
            // iced is built without VEX (`morph_dbt::decode_host`): formatted here, as
            // its Intel formatter would.
            let imm = match i.immediate8() {
                n @ 0..=9 => n.to_string(),
                n => format!("{}{n:X}h", if n >> 4 >= 10 { "0" } else { "" }),
            };
            let reg = |r: iced_x86::Register| format!("{r:?}").to_lowercase();
            s = format!("rorx {},{},{imm}", reg(i.op0_register()), reg(i.op1_register()));
        } else {
            f.format(&i, &mut s);
        }
        out.push_str(&format!("  {:04x}  {s}\n", i.ip() - ip));
    }
    out
}

fn golden(name: &str, f: impl FnOnce(&mut CodeAssembler) -> Result<(), IcedError>) {
    golden_with(name, Default::default(), f)
}

fn golden_with(
    name: &str,
    opts: morph_dbt::translate::Options,
    f: impl FnOnce(&mut CodeAssembler) -> Result<(), IcedError>,
) {
    golden_profiled(name, opts, |_, _| false, f)
}

/// As `golden_with`, the translator given `never_taken` as the engine's profile gives it
/// (`translate_decoded`): the interpreter's blocks ending in a conditional branch whose
/// taken edge was never seen.
fn golden_profiled(
    name: &str,
    opts: morph_dbt::translate::Options,
    never_taken: impl Fn(u32, u32) -> bool,
    f: impl FnOnce(&mut CodeAssembler) -> Result<(), IcedError>,
) {
    let mut a = CodeAssembler::new(32).unwrap();
    f(&mut a).unwrap();
    let guest = a.assemble(u64::from(EIP)).unwrap();
    // The interpreter's blocks: from an address to the first control transfer.
    let decoded: Vec<iced_x86::Instruction> =
        Decoder::with_ip(32, &guest, u64::from(EIP), DecoderOptions::NONE).into_iter().collect();
    let fetch = |at: u32, out: &mut Vec<iced_x86::Instruction>| {
        let Some(i) = decoded.iter().position(|d| d.ip32() == at) else { return false };
        for d in &decoded[i..] {
            out.push(*d);
            if d.flow_control() != iced_x86::FlowControl::Next {
                break;
            }
        }
        true
    };
    let t = morph_dbt::translate::translate_decoded(fetch, |_| None, never_taken, EIP, 0, 0, opts).expect("translates");
    let text = format!(
        "# guest block at {EIP:#x} ({} instructions, {} to the helper)\n{}\n# host code (chain entry at {:04x}, body at {:04x})\n{}",
        t.instructions,
        t.fallbacks,
        disasm(32, &guest, u64::from(EIP)),
        t.entry,
        t.body,
        disasm(64, &t.code, 0)
    );
    // The jump-cache lookup masks with BMI2 where the host has it (runtime.rs): the
    // expectations of a host without it are kept apart, and blessed on such a host.
    let bmi2 = std::arch::is_x86_feature_detected!("bmi2");
    let file = if bmi2 { format!("{name}.txt") } else { format!("{name}.no-bmi2.txt") };
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden").join(file);
    if std::env::var_os("BLESS").is_some() {
        std::fs::write(&path, &text).unwrap();
        return;
    }
    if !bmi2 && !path.exists() {
        eprintln!("{name}: no expectation for a host without BMI2 yet (bless one with BLESS=1)");
        return;
    }
    let want = std::fs::read_to_string(&path).unwrap_or_default();
    assert_eq!(want, text, "{name}: translation changed; review and rerun with BLESS=1");
}

#[test]
fn alu_and_memory() {
    golden("alu_and_memory", |a| {
        a.mov(eax, dword_ptr(ebx + 8))?;
        a.add(dword_ptr(esp + 4), eax)?;
        a.lea(ecx, dword_ptr(eax + edx * 4 - 1))?;
        a.inc(esi)?;
        a.jne(EIP as u64)
    });
}

#[test]
fn call_and_return() {
    golden("call_and_return", |a| {
        a.push(ebp)?;
        a.mov(ebp, esp)?;
        a.call(EIP as u64 + 0x40)
    });
    golden("return", |a| {
        a.leave()?;
        a.ret_1(8)
    });
}

#[test]
fn string_instruction() {
    golden("string_instruction", |a| {
        a.rep().stosd()?;
        a.int(0x80)
    });
}

#[test]
fn tls_and_helper() {
    golden("tls_and_helper", |a| {
        a.mov(eax, dword_ptr(0x14).gs())?;
        a.cpuid()?; // machine state the host must not supply: the helper
        a.int(0x80)
    });
}

/// A call of a PC thunk (`mov ebx, [esp]; ret`) runs inline behind a check of the
/// thunk's bytes, which branches with `loop` (falling through when they are the
/// thunk's) or, on hosts that run `loop` slowly, with `jrcxz` (taken when they are).
#[test]
fn pc_thunk() {
    let thunk = |a: &mut CodeAssembler| {
        let mut t = a.create_label();
        a.call(t)?;
        a.add(ebx, 0x1234)?;
        a.mov(eax, dword_ptr(ebx + 8))?;
        a.ret()?;
        a.set_label(&mut t)?;
        a.mov(ebx, dword_ptr(esp))?;
        a.ret()
    };
    let opts = |slow_loop| morph_dbt::translate::Options { slow_loop, ..Default::default() };
    golden_with("pc_thunk_loop", opts(false), thunk);
    golden_with("pc_thunk_jrcxz", opts(true), thunk);
    // Where the engine keeps the translation dependent on the thunk's page instead, no
    // check: the thunk's effect alone.
    golden_with("pc_thunk_unchecked", morph_dbt::translate::Options { thunk_deps: true, ..Default::default() }, thunk);
}

/// A conditional side exit the profile never saw taken counts its instructions in an
/// out-of-line stub (`lea r11` and the site's `jmp`), off the path that stays; one that
/// was taken counts inline before its `jcc`, which is itself the chain site.
#[test]
fn cold_side_exit() {
    golden_profiled(
        "cold_side_exit",
        Default::default(),
        |block, _| block == EIP,
        |a| {
            a.cmp(eax, ebx)?;
            a.je(EIP as u64 + 0x100)?; // never taken (the first block's profile)
            a.add(eax, 1)?;
            a.cmp(eax, ecx)?;
            a.jne(EIP as u64 + 0x200)?; // taken sometimes
            a.mov(edx, eax)?;
            a.ret()
        },
    );
}

/// A call of a PLT stub (`jmp [ebx + d]`) where the engine keeps the translation
/// dependent on the stub's page: the stub's jump done at the call (the GOT slot read
/// first, the return address pushed, the call and the jump counted together), then
/// the indirect-branch table's lookup.
#[test]
fn plt_call() {
    let opts = morph_dbt::translate::Options { thunk_deps: true, ibt: true, ..Default::default() };
    golden_with("plt_call", opts, |a| {
        let mut stub = a.create_label();
        a.mov(dword_ptr(esp), eax)?;
        a.call(stub)?;
        a.ret()?;
        a.set_label(&mut stub)?;
        a.db(&[0xff, 0xa3, 0x10, 0, 0, 0]) // jmp [ebx + 0x10], a PLT stub's disp32 form
    });
}
