//! Undefined results and flags: the interpreter must give what the translated code
//! gives, which is what the host's instruction gives (the translator re-encodes these
//! instructions), so a block's results never change when it becomes hot. Every
//! instruction whose result or flags the Intel SDM leaves undefined in some case runs
//! with random operands and flags and every count 0..63, under both engines; all six
//! arithmetic flags and every result are compared, nothing masked.

mod common;

use common::*;
use std::rc::Rc;

use iced_x86::code_asm::*;
use morph_cpu::{Cpu, Exit};
use morph_dbt::{Engine, EngineConfig, KeyPolicy};
use morph_mem::{AddressSpace, PhysMem, Prot};

/// Bytes of results per case: EAX, EDX, EFLAGS, and a spare word.
const SLOT: u32 = 16;

/// One case: the instruction (by family, size and count) and its inputs.
#[derive(Clone, Debug)]
struct Case {
    what: String,
    a: u32,
    d: u32,
    count: u32,
    flags: u32,
}

type Emit = Box<dyn Fn(&mut CodeAssembler) -> Result<(), IcedError>>;

fn cases() -> Vec<(Case, Emit)> {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut v: Vec<(Case, Emit)> = Vec::new();
    let mut add = |rng: &mut Rng, what: String, count: u32, e: Emit| {
        let (x, y) = (rng.next(), rng.next());
        let flags = (rng.next() & 0x8d5) | 0x202;
        v.push((Case { what, a: x, d: y, count, flags }, e));
    };
    // Shifts and rotates, by CL and by an immediate, every size, counts 0..63.
    for count in 0..64u32 {
        for k in 0..7 {
            let name = ["shl", "shr", "sar", "rol", "ror", "rcl", "rcr"][k];
            for bits in [8, 16, 32] {
                let by_cl: Emit = Box::new(move |a| match (k, bits) {
                    (0, 8) => a.shl(al, cl),
                    (1, 8) => a.shr(al, cl),
                    (2, 8) => a.sar(al, cl),
                    (3, 8) => a.rol(al, cl),
                    (4, 8) => a.ror(al, cl),
                    (5, 8) => a.rcl(al, cl),
                    (6, 8) => a.rcr(al, cl),
                    (0, 16) => a.shl(ax, cl),
                    (1, 16) => a.shr(ax, cl),
                    (2, 16) => a.sar(ax, cl),
                    (3, 16) => a.rol(ax, cl),
                    (4, 16) => a.ror(ax, cl),
                    (5, 16) => a.rcl(ax, cl),
                    (6, 16) => a.rcr(ax, cl),
                    (0, _) => a.shl(eax, cl),
                    (1, _) => a.shr(eax, cl),
                    (2, _) => a.sar(eax, cl),
                    (3, _) => a.rol(eax, cl),
                    (4, _) => a.ror(eax, cl),
                    (5, _) => a.rcl(eax, cl),
                    _ => a.rcr(eax, cl),
                });
                add(&mut rng, format!("{name} r{bits}, cl={count}"), count, by_cl);
                let c = count;
                let by_imm: Emit = Box::new(move |a| match (k, bits) {
                    (0, 8) => a.shl(al, c),
                    (1, 8) => a.shr(al, c),
                    (2, 8) => a.sar(al, c),
                    (3, 8) => a.rol(al, c),
                    (4, 8) => a.ror(al, c),
                    (5, 8) => a.rcl(al, c),
                    (6, 8) => a.rcr(al, c),
                    (0, 16) => a.shl(ax, c),
                    (1, 16) => a.shr(ax, c),
                    (2, 16) => a.sar(ax, c),
                    (3, 16) => a.rol(ax, c),
                    (4, 16) => a.ror(ax, c),
                    (5, 16) => a.rcl(ax, c),
                    (6, 16) => a.rcr(ax, c),
                    (0, _) => a.shl(eax, c),
                    (1, _) => a.shr(eax, c),
                    (2, _) => a.sar(eax, c),
                    (3, _) => a.rol(eax, c),
                    (4, _) => a.ror(eax, c),
                    (5, _) => a.rcl(eax, c),
                    _ => a.rcr(eax, c),
                });
                add(&mut rng, format!("{name} r{bits}, {count}"), count, by_imm);
            }
        }
        // Double shifts: 16-bit counts 17..31 are the undefined ones.
        for left in [true, false] {
            for bits in [16, 32] {
                let e: Emit = Box::new(move |a| match (left, bits) {
                    (true, 16) => a.shld(ax, dx, cl),
                    (false, 16) => a.shrd(ax, dx, cl),
                    (true, _) => a.shld(eax, edx, cl),
                    (false, _) => a.shrd(eax, edx, cl),
                });
                let name = if left { "shld" } else { "shrd" };
                add(&mut rng, format!("{name} r{bits}, cl={count}"), count, e);
                let c = count;
                let e: Emit = Box::new(move |a| match (left, bits) {
                    (true, 16) => a.shld(ax, dx, c),
                    (false, 16) => a.shrd(ax, dx, c),
                    (true, _) => a.shld(eax, edx, c),
                    (false, _) => a.shrd(eax, edx, c),
                });
                add(&mut rng, format!("{name} r{bits}, {count}"), count, e);
            }
        }
    }
    // Multiplies (SF ZF AF PF undefined), bit scans (zero sources too), logic (AF),
    // bit tests (OF SF AF PF), bswap r16 (undefined result).
    for i in 0..64u32 {
        let list: Vec<(&str, Emit)> = vec![
            ("mul r8", Box::new(|a| a.mul(dl))),
            ("mul r16", Box::new(|a| a.mul(dx))),
            ("mul r32", Box::new(|a| a.mul(edx))),
            ("imul r8", Box::new(|a| a.imul(dl))),
            ("imul r16", Box::new(|a| a.imul(dx))),
            ("imul r32", Box::new(|a| a.imul(edx))),
            ("imul r16, r16", Box::new(|a| a.imul_2(ax, dx))),
            ("imul r32, r32", Box::new(|a| a.imul_2(eax, edx))),
            ("imul r32, r32, imm", Box::new(|a| a.imul_3(eax, edx, 0x1234_5677))),
            ("bsf r16", Box::new(|a| a.bsf(ax, dx))),
            ("bsf r32", Box::new(|a| a.bsf(eax, edx))),
            ("bsr r16", Box::new(|a| a.bsr(ax, dx))),
            ("bsr r32", Box::new(|a| a.bsr(eax, edx))),
            ("and r32", Box::new(|a| a.and(eax, edx))),
            ("or r8", Box::new(|a| a.or(al, dl))),
            ("xor r16", Box::new(|a| a.xor(ax, dx))),
            ("test r32", Box::new(|a| a.test(eax, edx))),
            ("bt r32", Box::new(|a| a.bt(eax, edx))),
            ("bts r16", Box::new(|a| a.bts(ax, dx))),
            ("btr r32, imm", Box::new(|a| a.btr(eax, 13))),
            ("btc r32", Box::new(|a| a.btc(eax, edx))),
            ("bswap r16", Box::new(|a| a.db(&[0x66, 0x0f, 0xc8]))),
        ];
        for (name, e) in list {
            add(&mut rng, name.to_string(), i, e);
        }
    }
    // A quarter of the bit scans with a zero source.
    for (n, (c, _)) in v.iter_mut().enumerate() {
        if c.what.starts_with("bs") && n % 4 == 0 {
            c.d = 0;
        }
        if c.what.starts_with("imul") || c.what.starts_with("mul") {
            // Small operands too, so that the high half is sometimes zero.
            if n % 3 == 0 {
                c.a &= 0xff;
                c.d &= 0x7f;
            }
        }
    }
    v
}

fn program(cases: &[(Case, Emit)]) -> Vec<u8> {
    let mut a = CodeAssembler::new(32).unwrap();
    for (i, (c, e)) in cases.iter().enumerate() {
        let at = i as u32 * SLOT;
        a.mov(eax, c.a).unwrap();
        a.mov(edx, c.d).unwrap();
        a.mov(ecx, c.count).unwrap();
        a.push(c.flags).unwrap();
        a.popfd().unwrap();
        e(&mut a).unwrap();
        a.pushfd().unwrap();
        a.pop(esi).unwrap();
        a.mov(dword_ptr(ebx + at), eax).unwrap();
        a.mov(dword_ptr(ebx + at + 4), edx).unwrap();
        a.mov(dword_ptr(ebx + at + 8), esi).unwrap();
    }
    a.int(0x80).unwrap();
    a.assemble(u64::from(CODE)).unwrap()
}

/// Runs the program; returns the results area.
fn run(code: &[u8], n: usize, cfg: EngineConfig) -> Vec<u8> {
    let phys = Rc::new(PhysMem::new(64 << 20).unwrap());
    let mut mem = AddressSpace::new(phys).unwrap();
    let len = (code.len() as u32).div_ceil(4096) * 4096;
    mem.map_anon(CODE, len, Prot::RWX, false, "code").unwrap();
    mem.write_bytes(CODE, code).unwrap();
    let data_len = (n as u32 * SLOT).div_ceil(4096) * 4096;
    mem.map_anon(DATA, data_len, Prot::RW, false, "data").unwrap();
    mem.map_anon(STACK - 0x4000, 0x4000, Prot::RW, false, "stack").unwrap();
    let mut cpu = Cpu::new();
    cpu.eip = CODE;
    cpu.gpr[3] = DATA;
    cpu.gpr[4] = STACK - 16;
    let mut e = Engine::new(cfg).unwrap();
    let exit = e.run(&mut cpu, &mut mem, 1, 100_000_000);
    assert_eq!(exit, Exit::Syscall, "{cpu:?}");
    let mut data = vec![0u8; n * SLOT as usize];
    mem.read_bytes(DATA, &mut data).unwrap();
    data
}

#[test]
fn undefined_results_and_flags_match_the_host() {
    let cases = cases();
    let code = program(&cases);
    let interp = run(&code, cases.len(), EngineConfig { translate: false, ..EngineConfig::default() });
    let cfg = EngineConfig {
        translate: true,
        key: KeyPolicy::Physical,
        threshold: 0,
        chain: true,
        ..EngineConfig::default()
    };
    let dbt = run(&code, cases.len(), cfg);
    let word = |d: &[u8], i: usize, k: usize| {
        let o = i * SLOT as usize + 4 * k;
        u32::from_le_bytes([d[o], d[o + 1], d[o + 2], d[o + 3]])
    };
    let mut bad = Vec::new();
    for (i, (c, _)) in cases.iter().enumerate() {
        let (a, b) = (
            (0..3).map(|k| word(&interp, i, k)).collect::<Vec<_>>(),
            (0..3).map(|k| word(&dbt, i, k)).collect::<Vec<_>>(),
        );
        if a != b {
            bad.push(format!(
                "{} eax={:#010x} edx={:#010x} flags={:#x}: interp eax={:#010x} edx={:#010x} fl={:#x}, translated eax={:#010x} edx={:#010x} fl={:#x}",
                c.what, c.a, c.d, c.flags, a[0], a[1], a[2] & 0x8d5, b[0], b[1], b[2] & 0x8d5
            ));
        }
    }
    let mut families: Vec<String> =
        bad.iter().map(|l| l.split(&[',', ' '][..]).take(2).collect::<Vec<_>>().join(" ")).collect();
    families.sort();
    families.dedup();
    assert!(
        bad.is_empty(),
        "{} of {} cases differ ({families:?}); first ones:\n{}",
        bad.len(),
        cases.len(),
        bad.iter().filter(|l| l.starts_with("imul")).chain(bad.iter()).take(40).cloned().collect::<Vec<_>>().join("\n")
    );
}
