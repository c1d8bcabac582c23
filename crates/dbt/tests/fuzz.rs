//! Differential property test: random straight-line and looping instruction sequences
//! run under the interpreter and under the translator must leave the same state. Flags
//! an instruction leaves undefined (per iced-x86's tables, which follow the Intel SDM)
//! are masked until a later instruction defines them, and no generated instruction
//! reads a flag while it is undefined.

mod common;

use common::*;
use std::rc::Rc;

use iced_x86::code_asm::*;
use iced_x86::{Decoder, DecoderOptions, RflagsBits};
use morph_cpu::cpuid::Model;
use morph_cpu::{Cpu, Exit};
use morph_dbt::{Engine, EngineConfig, KeyPolicy};
use morph_mem::{AddressSpace, PhysMem, Prot};
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Op {
    Alu(u8, u8, u8),
    AluImm(u8, u8, i32),
    AluMem(u8, u8, u8),
    Shift(u8, u8, u8),
    ShiftCl(u8, u8, u8),
    Unary(u8, u8),
    Mul(u8),
    Imul(u8, u8, i32),
    Mov(u8, u8),
    Store(u8, u8),
    Xchg(u8, u8),
    Bt(u8, u8, u8),
    Lea(u8, u8, u8, i32),
    Cmov(u8, u8, u8),
    Setcc(u8, u8),
    Bsf(u8, u8),
    Movx(u8, u8, u8),
    /// `jCC over; <Alu(k, d, s)>; over:` — an `if` without `else` (the translator joins
    /// the two paths inside the translation).
    Skip(u8, u8, u8, u8),
    /// `jmp over; <Alu(k, d, s)>; over:` — a direct jump forward in the page, which the
    /// translator follows (the skipped op never runs).
    Hop(u8, u8, u8),
    /// `rep movsd` (or `rep stosd` of EAX) of `count` dwords from data offset `src` to
    /// `src + delta` (bytes, so overlapping and misaligned too), downwards if set: short
    /// ones run as wide loads and stores in translated code (`lower::short_rep`).
    Rep(bool, bool, u8, u16, i16),
    /// An SSE2 instruction on XMM registers `x` and `y` (or a general register, or
    /// `[ebx + 16 * m]`), on the TM8600 only (`sse_op`).
    Xmm(u8, u8, u8, u8),
    /// An x87 instruction (or a pair) that keeps the register stack two deep (`x87_op`):
    /// runs of them, between other instructions, joins and loop edges, exercise where
    /// translated code stores the guest's x87 pointers (`Emitter::x87_flush`).
    X87(u8, u8, u8),
}

const REGS: [AsmRegister32; 7] = [eax, ecx, edx, ebx, ebp, esi, edi];

fn r(i: u8) -> AsmRegister32 {
    REGS[usize::from(i) % REGS.len()]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0..8u8, 0..7u8, 0..7u8).prop_map(|(a, b, c)| Op::Alu(a, b, c)),
        (0..8u8, 0..7u8, any::<i32>()).prop_map(|(a, b, c)| Op::AluImm(a, b, c)),
        (0..8u8, 0..7u8, 0..64u8).prop_map(|(a, b, c)| Op::AluMem(a, b, c)),
        (0..7u8, 0..7u8, 0..40u8).prop_map(|(a, b, c)| Op::Shift(a, b, c)),
        (0..7u8, 0..7u8, 1..32u8).prop_map(|(a, b, c)| Op::ShiftCl(a, b, c)),
        (0..4u8, 0..7u8).prop_map(|(a, b)| Op::Unary(a, b)),
        (0..7u8).prop_map(Op::Mul),
        (0..7u8, 0..7u8, any::<i32>()).prop_map(|(a, b, c)| Op::Imul(a, b, c)),
        (0..7u8, 0..7u8).prop_map(|(a, b)| Op::Mov(a, b)),
        (0..7u8, 0..64u8).prop_map(|(a, b)| Op::Store(a, b)),
        (0..7u8, 0..7u8).prop_map(|(a, b)| Op::Xchg(a, b)),
        (0..4u8, 0..7u8, 0..32u8).prop_map(|(a, b, c)| Op::Bt(a, b, c)),
        (0..7u8, 0..7u8, 0..4u8, any::<i32>()).prop_map(|(a, b, c, d)| Op::Lea(a, b, c, d)),
        (0..16u8, 0..7u8, 0..7u8).prop_map(|(a, b, c)| Op::Cmov(a, b, c)),
        (0..16u8, 0..7u8).prop_map(|(a, b)| Op::Setcc(a, b)),
        (0..7u8, 0..7u8).prop_map(|(a, b)| Op::Bsf(a, b)),
        (0..4u8, 0..7u8, 0..7u8).prop_map(|(a, b, c)| Op::Movx(a, b, c)),
        (0..16u8, 0..8u8, 0..7u8, 0..7u8).prop_map(|(a, b, c, d)| Op::Skip(a, b, c, d)),
        (0..8u8, 0..7u8, 0..7u8).prop_map(|(a, b, c)| Op::Hop(a, b, c)),
        (any::<bool>(), any::<bool>(), 0..70u8, 0x200..0xc00u16, -300..300i16)
            .prop_map(|(m, d, n, s, o)| Op::Rep(m, d, n, s, o)),
    ]
}

/// [`op`], and a quarter of SSE2 ones (`Op::Xmm`): the TM8600's mix, where the guest's
/// XMM registers live in the host's while translated code runs (beside the short `rep`
/// path's own, XMM8-15).
fn sse_op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => op(),
        1 => (0..10u8, 0..8u8, 0..8u8, 0..64u8).prop_map(|(k, x, y, m)| Op::Xmm(k, x, y, m)),
    ]
}

/// [`op`], and as many x87 ones (`Op::X87`), in runs as often as not.
fn x87_op() -> impl Strategy<Value = Op> {
    prop_oneof![
        1 => op(),
        1 => (0..10u8, 0..64u8, 0..64u8).prop_map(|(k, m, n)| Op::X87(k, m, n)),
    ]
}

/// Emits `op`; ebx is kept pointing at the data page (it is never a destination).
fn emit(a: &mut CodeAssembler, op: &Op) -> Result<(), IcedError> {
    let dst = |i: u8| {
        let x = r(i);
        if x == ebx { eax } else { x }
    };
    match *op {
        Op::Alu(k, d, s) => {
            let (d, s) = (dst(d), r(s));
            match k {
                0 => a.add(d, s),
                1 => a.or(d, s),
                2 => a.adc(d, s),
                3 => a.sbb(d, s),
                4 => a.and(d, s),
                5 => a.sub(d, s),
                6 => a.xor(d, s),
                _ => a.cmp(d, s),
            }
        }
        Op::AluImm(k, d, v) => {
            let d = dst(d);
            match k {
                0 => a.add(d, v),
                1 => a.or(d, v),
                2 => a.adc(d, v),
                3 => a.sbb(d, v),
                4 => a.and(d, v),
                5 => a.sub(d, v),
                6 => a.xor(d, v),
                _ => a.test(d, v),
            }
        }
        Op::AluMem(k, d, m) => {
            let mem = dword_ptr(ebx + i32::from(m) * 4);
            let d = dst(d);
            match k {
                0 => a.add(mem, d),
                1 => a.or(d, mem),
                2 => a.adc(mem, d),
                3 => a.sub(d, mem),
                4 => a.and(mem, d),
                5 => a.xor(d, mem),
                6 => a.cmp(mem, d),
                _ => a.test(mem, d),
            }
        }
        Op::Shift(k, d, c) => {
            let d = dst(d);
            let c = u32::from(c);
            match k {
                0 => a.shl(d, c),
                1 => a.shr(d, c),
                2 => a.sar(d, c),
                3 => a.rol(d, c),
                4 => a.ror(d, c),
                5 => a.rcl(d, c),
                _ => a.rcr(d, c),
            }
        }
        Op::ShiftCl(k, d, c) => {
            // A zero count would leave the flags of an earlier instruction, which the
            // static flag analysis cannot see: keep the count non-zero.
            a.mov(cl, u32::from(c))?;
            let d = dst(d);
            match k % 4 {
                0 => a.shl(d, cl),
                1 => a.shr(d, cl),
                2 => a.sar(d, cl),
                _ => a.rol(d, cl),
            }
        }
        Op::Unary(k, d) => {
            let d = dst(d);
            match k {
                0 => a.inc(d),
                1 => a.dec(d),
                2 => a.neg(d),
                _ => a.not(d),
            }
        }
        Op::Mul(s) => {
            let s = r(s);
            if s == eax || s == edx { a.mul(ecx) } else { a.mul(s) }
        }
        Op::Imul(d, s, v) => a.imul_3(dst(d), r(s), v),
        Op::Mov(d, s) => a.mov(dst(d), r(s)),
        Op::Store(s, m) => a.mov(dword_ptr(ebx + i32::from(m) * 4), r(s)),
        Op::Xchg(d, s) => a.xchg(dst(d), dst(s)),
        Op::Bt(k, d, b) => {
            let d = dst(d);
            let b = u32::from(b);
            match k {
                0 => a.bt(d, b),
                1 => a.bts(d, b),
                2 => a.btr(d, b),
                _ => a.btc(d, b),
            }
        }
        Op::Lea(d, b, s, disp) => a.lea(dst(d), dword_ptr(r(b) + r(b) * (1 << s) + disp)),
        Op::Cmov(cc, d, s) => emit_cmov(a, cc, dst(d), r(s)),
        Op::Setcc(cc, d) => {
            let d = match dst(d) {
                x if x == eax => al,
                x if x == ecx => cl,
                x if x == edx => dl,
                _ => ah,
            };
            emit_setcc(a, cc, d)
        }
        Op::Bsf(d, s) => a.bsf(dst(d), r(s)),
        Op::Skip(cc, k, d, s) => {
            let mut over = a.create_label();
            emit_jcc(a, cc, over)?;
            emit(a, &Op::Alu(k, d, s))?;
            a.set_label(&mut over)
        }
        Op::Hop(k, d, s) => {
            let mut over = a.create_label();
            a.jmp(over)?;
            emit(a, &Op::Alu(k, d, s))?;
            a.set_label(&mut over)
        }
        Op::Rep(movs, down, count, src, delta) => {
            // Both ends inside [0x200 - 280, 0xc00 + 280): clear of the other ops' data
            // and of the loop counter at 0xff0.
            let dst = (i32::from(src) + i32::from(delta)).clamp(0x200, 0xc00);
            a.lea(esi, dword_ptr(ebx + i32::from(src)))?;
            a.lea(edi, dword_ptr(ebx + dst))?;
            a.mov(ecx, u32::from(count))?;
            if down {
                a.std()?;
            }
            if movs {
                a.rep().movsd()?
            } else {
                a.rep().stosd()?
            }
            a.cld()
        }
        Op::Movx(k, d, s) => {
            let d = dst(d);
            let s16 = [ax, cx, dx, bx, bp, si, di][usize::from(s) % 7];
            match k {
                0 => a.movzx(d, s16),
                1 => a.movsx(d, s16),
                2 => a.movzx(d, byte_ptr(ebx + i32::from(s))),
                _ => a.movsx(d, word_ptr(ebx + i32::from(s) * 2)),
            }
        }
        Op::Xmm(k, x, y, m) => {
            let xmms = [xmm0, xmm1, xmm2, xmm3, xmm4, xmm5, xmm6, xmm7];
            let (x, y) = (xmms[usize::from(x) % 8], xmms[usize::from(y) % 8]);
            let mem = xmmword_ptr(ebx + i32::from(m) * 16);
            match k {
                0 => a.movd(x, r(m)),
                1 => a.movd(dst(m), x),
                2 => a.paddd(x, y),
                3 => a.pxor(x, y),
                4 => a.pshufd(x, y, i32::from(m)),
                5 => a.movdqu(x, mem),
                6 => a.movdqu(mem, x),
                7 => a.pmuludq(x, y),
                8 => a.punpcklbw(x, y),
                _ => a.psrldq(x, i32::from(m % 16)),
            }
        }
        Op::X87(k, m, n) => {
            // The stack holds two values before and after each (see `x87_start`).
            let (mem, other) = (dword_ptr(ebx + i32::from(m) * 4), dword_ptr(ebx + i32::from(n) * 4));
            match k {
                0 => a.fadd_2(st0, st1),
                1 => a.fmul(mem),
                2 => a.fxch(st0, st1),
                3 => {
                    a.fld(mem)?;
                    a.fstp(other)
                }
                4 => a.fnstcw(word_ptr(ebx + i32::from(m) * 4)),
                5 => a.fnstsw(ax),
                6 => a.fchs(),
                7 => x87_start(a),
                8 => a.fst(other),
                _ => a.fcomi(st0, st1),
            }
        }
    }
}

/// `fninit; fldz; fld1`: the x87 stack two deep, as every `Op::X87` keeps it.
fn x87_start(a: &mut CodeAssembler) -> Result<(), IcedError> {
    a.fninit()?;
    a.fldz()?;
    a.fld1()
}

/// `jCC to` for condition number `cc` (0–15, the encoding's order).
fn emit_jcc(a: &mut CodeAssembler, cc: u8, to: CodeLabel) -> Result<(), IcedError> {
    match cc {
        0 => a.jo(to),
        1 => a.jno(to),
        2 => a.jb(to),
        3 => a.jae(to),
        4 => a.je(to),
        5 => a.jne(to),
        6 => a.jbe(to),
        7 => a.ja(to),
        8 => a.js(to),
        9 => a.jns(to),
        10 => a.jp(to),
        11 => a.jnp(to),
        12 => a.jl(to),
        13 => a.jge(to),
        14 => a.jle(to),
        _ => a.jg(to),
    }
}

/// `cmovCC d, s` for condition number `cc` (0–15, the encoding's order).
fn emit_cmov(a: &mut CodeAssembler, cc: u8, d: AsmRegister32, s: AsmRegister32) -> Result<(), IcedError> {
    match cc {
        0 => a.cmovo(d, s),
        1 => a.cmovno(d, s),
        2 => a.cmovb(d, s),
        3 => a.cmovae(d, s),
        4 => a.cmove(d, s),
        5 => a.cmovne(d, s),
        6 => a.cmovbe(d, s),
        7 => a.cmova(d, s),
        8 => a.cmovs(d, s),
        9 => a.cmovns(d, s),
        10 => a.cmovp(d, s),
        11 => a.cmovnp(d, s),
        12 => a.cmovl(d, s),
        13 => a.cmovge(d, s),
        14 => a.cmovle(d, s),
        _ => a.cmovg(d, s),
    }
}

/// `setCC d` for condition number `cc` (0–15, the encoding's order).
fn emit_setcc(a: &mut CodeAssembler, cc: u8, d: AsmRegister8) -> Result<(), IcedError> {
    match cc {
        0 => a.seto(d),
        1 => a.setno(d),
        2 => a.setb(d),
        3 => a.setae(d),
        4 => a.sete(d),
        5 => a.setne(d),
        6 => a.setbe(d),
        7 => a.seta(d),
        8 => a.sets(d),
        9 => a.setns(d),
        10 => a.setp(d),
        11 => a.setnp(d),
        12 => a.setl(d),
        13 => a.setge(d),
        14 => a.setle(d),
        _ => a.setg(d),
    }
}

/// Assembles `ops` (wrapped in a loop run `iters` times if `iters > 1`); returns the
/// code and the mask of flags undefined at the end. Ops reading an undefined flag are
/// dropped.
fn program(ops: &[Op], iters: u32) -> (Vec<u8>, u32) {
    let info: Vec<(u32, u32, u32)> = ops
        .iter()
        .map(|op| {
            let mut a = CodeAssembler::new(32).unwrap();
            emit(&mut a, op).unwrap();
            if matches!(op, Op::Skip(..) | Op::Hop(..)) {
                a.nop().unwrap(); // the skip's label needs an instruction after it
            }
            let bytes = a.assemble(0).unwrap();
            let mut d = Decoder::with_ip(32, &bytes, 0, DecoderOptions::NONE);
            let mut ins = d.decode();
            if matches!(op, Op::Hop(..)) {
                return (0, 0, 0); // the jump touches no flag; the op never runs
            }
            if matches!(op, Op::Skip(..)) {
                // The branch reads its condition; the op may not run, so it defines
                // nothing for sure, and may leave its undefined flags undefined.
                let alu = d.decode();
                return (ins.rflags_read() | alu.rflags_read(), 0, alu.rflags_undefined());
            }
            if matches!(op, Op::ShiftCl(..)) {
                ins = d.decode(); // skip the `mov cl`
                // The SDM leaves OF (and AF) undefined unless the count is 1; iced cannot
                // know a CL count, so mark them here.
                return (
                    ins.rflags_read(),
                    ins.rflags_modified(),
                    ins.rflags_undefined() | RflagsBits::OF | RflagsBits::AF,
                );
            }
            (ins.rflags_read(), ins.rflags_modified(), ins.rflags_undefined())
        })
        .collect();
    let mut keep = vec![true; ops.len()];
    // Drop ops that read a flag while it is undefined (around the loop too), until none does.
    let undefined = loop {
        let mut undefined = 0u32;
        let mut bad = None;
        for pass in 0..if iters > 1 { 2 } else { 1 } {
            for (i, &(read, modified, undef)) in info.iter().enumerate() {
                if !keep[i] {
                    continue;
                }
                if read & undefined != 0 && bad.is_none() {
                    bad = Some(i);
                }
                undefined = (undefined & !modified) | undef;
            }
            if pass == 0 && iters > 1 {
                undefined &= RflagsBits::CF; // the loop's `dec` defines all but CF
            }
        }
        match bad {
            Some(i) => keep[i] = false,
            None => break if iters > 1 { undefined & RflagsBits::CF } else { undefined },
        }
    };
    let kept: Vec<&Op> = ops.iter().zip(&keep).filter(|(_, k)| **k).map(|(o, _)| o).collect();
    let mut a = CodeAssembler::new(32).unwrap();
    let mut top = a.create_label();
    a.mov(dword_ptr(DATA + 0xff0), iters).unwrap();
    a.set_label(&mut top).unwrap();
    for op in &kept {
        emit(&mut a, op).unwrap();
    }
    a.dec(dword_ptr(DATA + 0xff0)).unwrap();
    a.jnz(top).unwrap();
    a.int(0x80).unwrap();
    let mut mask = 0;
    for (bit, f) in [
        (RflagsBits::CF, 1),
        (RflagsBits::PF, 4),
        (RflagsBits::AF, 0x10),
        (RflagsBits::ZF, 0x40),
        (RflagsBits::SF, 0x80),
        (RflagsBits::OF, 0x800),
    ] {
        if undefined & bit != 0 {
            mask |= f;
        }
    }
    (a.assemble(u64::from(CODE)).unwrap(), mask)
}

fn run(code: &[u8], regs: [u32; 8], cfg: EngineConfig) -> (Cpu, Vec<u8>) {
    let phys = Rc::new(PhysMem::new(64 << 20).unwrap());
    let mut mem = AddressSpace::new(phys).unwrap();
    mem.map_anon(CODE, 0x4000, Prot::RWX, false, "code").unwrap();
    mem.write_bytes(CODE, code).unwrap();
    mem.map_anon(DATA, 0x1000, Prot::RW, false, "data").unwrap();
    for i in 0..0x3fcu32 {
        mem.write_u32(DATA + 4 * i, i.wrapping_mul(0x9e37_79b9) ^ regs[0]).unwrap();
    }
    let mut cpu = Cpu::new();
    cpu.model = cfg.cpu;
    cpu.eip = CODE;
    cpu.gpr = regs;
    cpu.gpr[3] = DATA;
    cpu.gpr[4] = 0x0800_0000;
    let mut e = Engine::new(cfg).unwrap();
    assert_eq!(e.run(&mut cpu, &mut mem, 1, 1 << 30), Exit::Syscall);
    let mut data = vec![0u8; 0x1000];
    mem.read_bytes(DATA, &mut data).unwrap();
    (cpu, data)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 200,
        // A fixed seed: the suite is reproducible; vary it by hand to explore.
        rng_seed: proptest::test_runner::RngSeed::Fixed(0x6d6f_7270_6821),
        ..ProptestConfig::default()
    })]

    #[test]
    fn translator_matches_interpreter(ops in prop::collection::vec(op(), 1..40), regs in any::<[u32; 8]>(), iters in 1..6u32) {
        let (code, mask) = program(&ops, iters);
        let want = run(&code, regs, EngineConfig { translate: false, ..EngineConfig::default() });
        for (key, threshold) in [
            (KeyPolicy::Physical, 0),
            (KeyPolicy::Virtual, 1),
            (KeyPolicy::Process, 2),
            (KeyPolicy::File, 0),
            (KeyPolicy::Content, 1),
        ] {
            // The return stack under two of the keys.
            let ras = matches!(key, KeyPolicy::Virtual | KeyPolicy::File);
            let cfg = EngineConfig { translate: true, key, threshold, chain: true, ras, ..EngineConfig::default() };
            let got = run(&code, regs, cfg.clone());
            prop_assert_eq!(want.0.gpr, got.0.gpr, "registers under {:?}", cfg);
            prop_assert_eq!(want.0.icount, got.0.icount, "instruction count under {:?}", cfg);
            prop_assert_eq!(want.0.eflags & 0x8d5 & !mask, got.0.eflags & 0x8d5 & !mask, "flags under {:?}", cfg);
            prop_assert!(want.1 == got.1, "memory under {:?}", cfg);
        }
    }

    /// The same with x87 instructions mixed in (each iteration starts with the stack
    /// made two deep): the whole x87 state must agree too, FIP, FOP and FDP included —
    /// the interpreter sets them after each instruction, translated code at the end of
    /// each run of x87 instructions (`Emitter::x87_flush`), across joins, chained edges
    /// and the loop's back edge.
    #[test]
    fn translator_matches_interpreter_with_x87(ops in prop::collection::vec(x87_op(), 1..40), regs in any::<[u32; 8]>(), iters in 1..6u32) {
        let ops: Vec<Op> = std::iter::once(Op::X87(7, 0, 0)).chain(ops).collect();
        let (code, mask) = program(&ops, iters);
        let want = run(&code, regs, EngineConfig { translate: false, ..EngineConfig::default() });
        for (key, threshold, chain) in [(KeyPolicy::Physical, 0, true), (KeyPolicy::Virtual, 1, false), (KeyPolicy::Physical, 2, true)] {
            let cfg = EngineConfig { translate: true, key, threshold, chain, ..EngineConfig::default() };
            let got = run(&code, regs, cfg.clone());
            prop_assert_eq!(want.0.gpr, got.0.gpr, "registers under {:?}", cfg);
            prop_assert_eq!(want.0.icount, got.0.icount, "instruction count under {:?}", cfg);
            prop_assert_eq!(want.0.eflags & 0x8d5 & !mask, got.0.eflags & 0x8d5 & !mask, "flags under {:?}", cfg);
            prop_assert!(want.1 == got.1, "memory under {:?}", cfg);
            prop_assert!(want.0.fpu.0[..160] == got.0.fpu.0[..160], "x87 state under {:?}: {:02x?} against {:02x?}", cfg, &want.0.fpu.0[..32], &got.0.fpu.0[..32]);
        }
    }

    /// The same on the TM8600, with SSE2 instructions mixed in: the XMM registers must
    /// agree too (translated code holds them in the host's, its own short `rep` path
    /// keeps to XMM8-15, and every exit saves them).
    #[test]
    fn translator_matches_interpreter_on_the_tm8600(ops in prop::collection::vec(sse_op(), 1..40), regs in any::<[u32; 8]>(), iters in 1..6u32) {
        let (code, mask) = program(&ops, iters);
        let tm8600 = EngineConfig { cpu: Model::Tm8600, ..EngineConfig::default() };
        let want = run(&code, regs, EngineConfig { translate: false, ..tm8600.clone() });
        for (key, threshold, chain) in [(KeyPolicy::Physical, 0, true), (KeyPolicy::Virtual, 1, false), (KeyPolicy::Physical, 2, true)] {
            let cfg = EngineConfig { translate: true, key, threshold, chain, ..tm8600.clone() };
            let got = run(&code, regs, cfg.clone());
            prop_assert_eq!(want.0.gpr, got.0.gpr, "registers under {:?}", cfg);
            prop_assert_eq!(want.0.icount, got.0.icount, "instruction count under {:?}", cfg);
            prop_assert_eq!(want.0.eflags & 0x8d5 & !mask, got.0.eflags & 0x8d5 & !mask, "flags under {:?}", cfg);
            prop_assert!(want.1 == got.1, "memory under {:?}", cfg);
            prop_assert!(want.0.fpu.0[160..288] == got.0.fpu.0[160..288], "XMM registers under {:?}", cfg);
        }
    }
}
