//! The instruction table, walked: every form of the table that has a generated instance
//! (`morph_cpu::isa::sample`: a register form, and a memory form addressing a scratch
//! page; string instructions also with `rep`/`repne`) runs under the reference
//! interpreter and translated, from two random states, and must leave the same state,
//! exit, memory and flags — all flags, undefined ones
//! included (the interpreter gives the host's undefined results), so a block's results
//! never change when it becomes hot.

mod common;

use common::*;
use std::rc::Rc;

use iced_x86::{Code, Mnemonic};
use morph_cpu::Cpu;
use morph_cpu::cpuid::Model;
use morph_cpu::isa::{self, Lower, Support};
use morph_dbt::{Engine, EngineConfig, KeyPolicy};
use morph_mem::{AddressSpace, PhysMem, Prot};

/// What a run leaves: the exit, the CPU (registers, flags, FPU), the data and the stack.
type Outcome = (String, String, Vec<u8>, Vec<u8>);

fn run(code: &[u8], gpr: [u32; 8], eflags: u32, translate: bool, cpu_model: Model) -> Outcome {
    let phys = Rc::new(PhysMem::new(16 << 20).unwrap());
    let mut mem = AddressSpace::new(phys).unwrap();
    mem.map_anon(CODE, 0x1000, Prot::RWX, false, "code").unwrap();
    mem.write_bytes(CODE, code).unwrap();
    mem.map_anon(DATA, 0x1000, Prot::RW, false, "data").unwrap();
    mem.map_anon(STACK - 0x1000, 0x1000, Prot::RW, false, "stack").unwrap();
    for i in 0..0x400u32 {
        mem.write_u32(DATA + 4 * i, i.wrapping_mul(0x9e37_79b9)).unwrap();
        mem.write_u32(STACK - 0x1000 + 4 * i, i.wrapping_mul(0x85eb_ca6b)).unwrap();
    }
    let mut cpu = Cpu::new();
    cpu.model = cpu_model;
    cpu.eip = CODE;
    cpu.gpr = gpr;
    cpu.eflags = eflags;
    let cfg = EngineConfig {
        translate,
        key: KeyPolicy::Physical,
        threshold: 0,
        chain: true,
        cpu: cpu_model,
        ..EngineConfig::default()
    };
    let mut e = Engine::new(cfg).unwrap();
    let exit = e.run(&mut cpu, &mut mem, 1, 1000);
    let mut data = vec![0u8; 0x1000];
    mem.read_bytes(DATA, &mut data).unwrap();
    let mut stack = vec![0u8; 0x1000];
    mem.read_bytes(STACK - 0x1000, &mut stack).unwrap();
    // The FPU image: control, status and tag words, MXCSR, the x87/MMX registers and,
    // on a model with SSE, the XMM registers (not the last instruction's and operand's
    // addresses, bytes 8–23, nor MXCSR_MASK, 28–31: the host's, which the image has
    // only once a host `fxsave` wrote it).
    let end = if cpu_model.has_sse() { 288 } else { 160 };
    let img = &cpu.fpu.0;
    let fpu: String = img[..8].iter().chain(&img[24..28]).chain(&img[32..end]).map(|b| format!("{b:02x}")).collect();
    (format!("{exit:?}"), format!("{cpu:?} fpu={fpu}"), data, stack)
}

#[test]
fn every_table_entry_runs_the_same_interpreted_and_translated() {
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let mut bad = Vec::new();
    let (mut forms, mut runs) = (0, 0);
    for code in Code::values() {
        for memory in [false, true] {
            let Some((bytes, ins)) = isa::sample(code, memory, CODE) else { continue };
            forms += 1;
            // String instructions also with `rep` (and `repne` where it differs), over
            // a count that stays in the page or not.
            let mut prefixes = vec![None];
            if isa::entry(code).family == isa::Family::String {
                prefixes.push(Some(0xf3));
                if matches!(ins.mnemonic(), Mnemonic::Cmpsb | Mnemonic::Cmpsw | Mnemonic::Cmpsd)
                    || matches!(ins.mnemonic(), Mnemonic::Scasb | Mnemonic::Scasw | Mnemonic::Scasd)
                {
                    prefixes.push(Some(0xf2));
                }
            }
            for prefix in prefixes {
                // The instruction, NOPs for its branch (20 bytes forward) to land in, and
                // the system call that ends the run.
                let mut prog: Vec<u8> = prefix.into_iter().collect();
                prog.extend(&bytes);
                prog.extend([0x90; 32]);
                prog.extend([0xcd, 0x80]);
                // With a prefix, a third run with a count of zero (translated code skips
                // the host's `rep` then: `lower::string_seq`).
                for round in 0..2 + usize::from(prefix.is_some()) {
                    let r = |rng: &mut Rng| rng.next();
                    // EBX addresses the scratch page (`[ebx + 0x40]`), ESI and EDI point
                    // into it for the string instructions, ESP into the stack.
                    let ecx = match prefix {
                        Some(_) if round == 2 => 0,
                        Some(_) => r(&mut rng) & 0x7ff,
                        None => r(&mut rng),
                    };
                    let gpr =
                        [r(&mut rng), ecx, r(&mut rng), DATA, STACK - 0x800, r(&mut rng), DATA + 0x100, DATA + 0x200];
                    let eflags = (r(&mut rng) & 0x8d5) | 0x202;
                    // SSE forms on the model that has them (on the TM5600 they are #UD
                    // under both engines, as every other form without support).
                    let model = if isa::entry(code).support == Support::Sse { Model::Tm8600 } else { Model::Tm5600 };
                    let a = run(&prog, gpr, eflags, false, model);
                    let b = run(&prog, gpr, eflags, true, model);
                    runs += 1;
                    if a != b {
                        let what = |o: &Outcome, p: &str| format!("{p}: {} {}", o.0, o.1);
                        let mem = if a.2 != b.2 || a.3 != b.3 { " (memory differs)" } else { "" };
                        bad.push(format!(
                            "{code:?} {prefix:x?} `{ins}`{mem}\n  {}\n  {}",
                            what(&a, "interp"),
                            what(&b, "dbt  ")
                        ));
                    }
                }
            }
        }
    }
    assert!(
        bad.is_empty(),
        "{} of {runs} runs differ:\n{}",
        bad.len(),
        bad.iter().take(30).cloned().collect::<Vec<_>>().join("\n")
    );
    // The walk covers the ISA: at least the integer, x87, MMX and SSE forms.
    assert!(forms > 1300, "only {forms} forms have an instance");
}

/// Every form the guest decoder can produce and the modeled CPU supports has a
/// generated instance, so the walk above leaves none out.
#[test]
fn every_supported_form_has_an_instance() {
    let missing: Vec<Code> = Code::values()
        .filter(|&c| {
            let e = isa::entry(c);
            let op = c.op_code();
            // Not instructions (`db`...), `fwait` pairs (decoded apart), `pop cs` (8086
            // only) and the ModR/M-less `ud0` (the decoder gives its ModR/M form).
            let pseudo = matches!(c.mnemonic(), Mnemonic::Db | Mnemonic::Dw | Mnemonic::Dd | Mnemonic::Dq)
                || matches!(c, Code::Zero_bytes | Code::Popw_CS | Code::Ud0);
            let decodable = c != Code::INVALID && op.mode32() && op.decoder_option() == 0 && !op.fwait() && !pseudo;
            decodable
                && matches!(e.support, Support::Int | Support::Fpu | Support::Mmx | Support::Sse)
                && isa::sample(c, false, CODE).is_none()
                && isa::sample(c, true, CODE).is_none()
        })
        .collect();
    assert!(missing.is_empty(), "no instance of {missing:?}");
}

/// The table's lowering agrees with its support: NOPs emit nothing, faults and integer
/// mnemonics the interpreter does not run go to the interpreter.
#[test]
fn lowering_follows_support() {
    for c in Code::values() {
        let e = isa::entry(c);
        match e.support {
            Support::Nop => assert_eq!(e.lower, Lower::Skip, "{c:?}"),
            Support::System | Support::Invalid => assert_eq!(e.lower, Lower::Helper, "{c:?}"),
            Support::Int if e.family == isa::Family::None => assert_eq!(e.lower, Lower::Helper, "{c:?}"),
            Support::Fpu | Support::Mmx | Support::Sse => {
                assert!(matches!(e.lower, Lower::Fpu | Lower::Helper), "{c:?}")
            }
            Support::Int => assert!(!matches!(e.lower, Lower::Skip | Lower::Fpu), "{c:?}"),
        }
    }
}
