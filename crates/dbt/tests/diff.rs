//! Differential tests: the same guest code under the reference interpreter and under
//! the translator must leave the same architectural state (undefined flags masked).

mod common;

use common::*;
use std::rc::Rc;

use iced_x86::code_asm::*;
use morph_cpu::{Cpu, Exit};
use morph_dbt::{Engine, EngineConfig, KeyPolicy};
use morph_mem::{AddressSpace, PhysMem, Prot};

fn machine(code: &[u8]) -> (Cpu, AddressSpace) {
    let phys = Rc::new(PhysMem::new(64 << 20).unwrap());
    let mut mem = AddressSpace::new(phys).unwrap();
    let len = (code.len() as u32).div_ceil(4096) * 4096;
    mem.map_anon(CODE, len, Prot::RWX, false, "code").unwrap();
    mem.write_bytes(CODE, code).unwrap();
    mem.map_anon(DATA, 0x2000, Prot::RW, false, "data").unwrap();
    for i in 0..0x800u32 {
        mem.write_u32(DATA + 4 * i, i.wrapping_mul(0x9e37_79b9)).unwrap();
    }
    mem.map_anon(STACK - 0x4000, 0x4000, Prot::RW, false, "stack").unwrap();
    mem.map_anon(HIGH, 0x1000, Prot::RW, false, "high").unwrap();
    for i in 0..0x400u32 {
        mem.write_u32(HIGH + 4 * i, i.wrapping_mul(0x0100_0193) ^ 0x8000_0001).unwrap();
    }
    let mut cpu = Cpu::new();
    cpu.eip = CODE;
    cpu.gpr = [1, 2, 3, DATA, STACK - 16, DATA + 0x100, DATA + 0x200, DATA + 0x300];
    // FS holds the flat data selector, so that FS-overridden operands run (through the
    // null selector of a new process they are #GP).
    assert!(cpu.load_segment(morph_cpu::state::seg::FS, 0x2b));
    (cpu, mem)
}

/// An engine translating at the first dispatch (`translate`) or interpreting only, with
/// chaining, under `key`.
fn engine(translate: bool, key: KeyPolicy) -> Engine {
    Engine::new(EngineConfig { translate, key, threshold: 0, chain: true, ..EngineConfig::default() }).unwrap()
}

/// `code` written to a scratch file named after `name`, opened: its path, the open
/// file and its identity (for `AddressSpace::map_file`).
fn code_file(name: &str, code: &[u8]) -> (std::path::PathBuf, std::fs::File, morph_mem::FileId) {
    let path = std::env::temp_dir().join(format!("morph-{name}-{}", std::process::id()));
    std::fs::write(&path, code).unwrap();
    let file = std::fs::File::open(&path).unwrap();
    let id = morph_mem::FileId::of(&file).unwrap();
    (path, file, id)
}

/// Runs `code` to its `int 0x80` with `cfg`; returns the CPU and the data page.
fn run(code: &[u8], cfg: EngineConfig) -> (Cpu, Vec<u8>, Vec<u8>) {
    let (mut cpu, mut mem) = machine(code);
    let mut e = Engine::new(cfg).unwrap();
    let exit = e.run(&mut cpu, &mut mem, 1, 10_000_000);
    assert_eq!(exit, Exit::Syscall, "{cpu:?}");
    let mut data = vec![0u8; 0x2000];
    mem.read_bytes(DATA, &mut data).unwrap();
    let mut stack = vec![0u8; 0x4000];
    mem.read_bytes(STACK - 0x4000, &mut stack).unwrap();
    (cpu, data, stack)
}

/// The machine code of `f` followed by `int 0x80`, at `CODE`.
fn assemble(f: impl Fn(&mut CodeAssembler) -> Result<(), IcedError>) -> Vec<u8> {
    let mut a = CodeAssembler::new(32).unwrap();
    f(&mut a).unwrap();
    a.int(0x80).unwrap();
    a.assemble(u64::from(CODE)).unwrap()
}

fn check(name: &str, f: impl Fn(&mut CodeAssembler) -> Result<(), IcedError>) {
    check_code(name, &assemble(f));
}

/// `check` of machine code (ending in `int 0x80`) at `CODE`.
fn check_code(name: &str, code: &[u8]) {
    let interp = run(code, EngineConfig { translate: false, ..EngineConfig::default() });
    for key in KeyPolicy::ALL {
        for (chain, ras) in [(true, false), (false, false), (true, true)] {
            for threshold in [0, 2] {
                let cfg = EngineConfig { translate: true, key, threshold, chain, ras, ..EngineConfig::default() };
                let dbt = run(code, cfg.clone());
                assert_eq!(format!("{:?}", interp.0), format!("{:?}", dbt.0), "{name}: registers differ under {cfg:?}");
                assert_eq!(interp.0.eflags & 0x8d5, dbt.0.eflags & 0x8d5, "{name}: flags under {cfg:?}");
                assert_eq!(interp.0.icount, dbt.0.icount, "{name}: instruction count under {cfg:?}");
                assert!(interp.1 == dbt.1, "{name}: data differs under {cfg:?}");
                assert!(interp.2 == dbt.2, "{name}: stack differs under {cfg:?}");
            }
        }
    }
    // Translations placed apart (`--layout-seed`), without the indirect-branch table
    // (`--no-ibt`), without counted loops' clean copies (`--no-counted-loops`), with every
    // far edge checked (`--check-far-edges`), with a code buffer too large for the low
    // 2 GiB (the table's lookup then loads its miss routine's address): nothing the
    // guest sees changes.
    const TC: usize = morph_dbt::DEFAULT_TC_SIZE;
    let others = [
        (Some(3), true, true, true, TC),
        (None, false, true, true, TC),
        (None, true, false, true, TC),
        (None, true, true, false, TC),
        (None, true, true, true, 1536 << 20),
    ];
    for (layout_seed, ibt, counted, unlink_far, tc_size) in others {
        let cfg = EngineConfig {
            translate: true,
            threshold: 0,
            layout_seed,
            ibt,
            counted,
            unlink_far,
            tc_size,
            ..EngineConfig::default()
        };
        let dbt = run(code, cfg.clone());
        assert_eq!(format!("{:?}", interp.0), format!("{:?}", dbt.0), "{name}: registers differ under {cfg:?}");
        assert_eq!(interp.0.icount, dbt.0.icount, "{name}: instruction count under {cfg:?}");
        assert!(interp.1 == dbt.1 && interp.2 == dbt.2, "{name}: memory differs under {cfg:?}");
    }
}

#[test]
fn straight_line_alu() {
    check("alu", |a| {
        a.add(eax, ebx)?;
        a.sub(ecx, 5)?;
        a.xor(edx, eax)?;
        a.and(esi, 0xff0)?;
        a.or(edi, ecx)?;
        a.adc(eax, edx)?;
        a.imul_3(ebx, ecx, 7)?;
        a.lea(ebp, dword_ptr(eax + ecx * 4 + 8))?;
        a.sub(ebx, eax)
    });
}

#[test]
fn memory_operands() {
    check("mem", |a| {
        a.mov(eax, dword_ptr(ebx + 8))?;
        a.add(dword_ptr(ebx + 12), eax)?;
        a.mov(ecx, 3)?;
        a.mov(edx, dword_ptr(ebx + ecx * 4 + 0x40))?;
        a.mov(byte_ptr(ebx + 0x81), dl)?;
        a.movzx(esi, word_ptr(ebx + 0x82))?;
        a.mov(dword_ptr(DATA + 0x500), esi)?;
        a.inc(dword_ptr(ebx + 0x10))
    });
}

/// A data page above 2 GiB, where an absolute `[disp32]` must not be sign-extended.
const HIGH: u32 = 0xb000_0000;

#[test]
fn absolute_addresses_below_and_above_2_gib() {
    let code = |a: &mut CodeAssembler| -> Result<(), IcedError> {
        a.mov(eax, dword_ptr(HIGH + 0x10))?; // the moffs form
        a.mov(ecx, dword_ptr(HIGH + 0x20))?;
        a.add(dword_ptr(HIGH + 0x30), ecx)?;
        a.movzx(edx, word_ptr(HIGH + 0x42))?;
        a.movsx(esi, byte_ptr(HIGH + 0x43))?;
        a.cmp(dword_ptr(HIGH + 0x30), edx)?;
        a.setb(byte_ptr(HIGH + 0x101))?;
        a.inc(byte_ptr(HIGH + 0x102))?;
        a.mov(word_ptr(HIGH + 0x104), cx)?;
        a.push(dword_ptr(HIGH + 0x50))?;
        a.pop(edi)?;
        a.lea(ebp, dword_ptr(HIGH + 0x60))?;
        a.mov(dword_ptr(HIGH + 0x74), eax)?; // the moffs form
        a.mov(dword_ptr(DATA + 0x500), esi)?;
        a.fild(dword_ptr(HIGH + 0x80))?;
        a.fistp(dword_ptr(HIGH + 0x84))?;
        a.movd(mm0, dword_ptr(HIGH + 0x88))?;
        a.movd(dword_ptr(HIGH + 0x8c), mm0)?;
        a.emms()?;
        a.add(eax, dword_ptr(HIGH + 0x30))?;
        a.add(ecx, dword_ptr(HIGH + 0x100))?;
        a.add(edx, dword_ptr(HIGH + 0x104))?;
        a.add(esi, dword_ptr(HIGH + 0x84))?;
        a.add(edi, dword_ptr(HIGH + 0x8c))?;
        a.add(ebp, dword_ptr(HIGH + 0x74))?;
        a.add(eax, dword_ptr(DATA + 0x500))
    };
    check("absolute", code);
    // Every access stays in translated code, none through the helper: a wrong host
    // address would fault and be re-run by the interpreter, and an operand the encoder
    // refused would go to the helper, neither of which the comparison alone would see.
    let (mut cpu, mut mem) = machine(&assemble(code));
    let mut e = engine(true, KeyPolicy::Physical);
    assert_eq!(e.run(&mut cpu, &mut mem, 1, 10_000_000), Exit::Syscall);
    let s = e.stats();
    assert!(s.translations > 0 && s.host_faults == 0 && s.helper_instructions == 0, "{s:?}");
}

#[test]
fn stack_and_calls() {
    check("stack", |a| {
        let mut f = a.create_label();
        let mut done = a.create_label();
        a.push(eax)?;
        a.push(0x1234)?;
        a.push(dword_ptr(ebx + 4))?;
        a.call(f)?;
        a.pop(ecx)?;
        a.pop(edx)?;
        a.pop(esi)?;
        a.jmp(done)?;
        a.set_label(&mut f)?;
        a.mov(eax, dword_ptr(esp + 4))?;
        a.push(ebp)?;
        a.mov(ebp, esp)?;
        a.sub(esp, 16)?;
        a.mov(dword_ptr(ebp - 4), eax)?;
        a.leave()?;
        a.ret()?;
        a.set_label(&mut done)?;
        a.nop()
    });
}

/// `ret imm16` with a release beyond a byte displacement (the host's `lea r12d, [r12d +
/// 4 + imm]` then has a 4-byte one; a random-code run found the translator panicking on
/// it), up to 0xfffc, which leaves ESP past the stack's top.
#[test]
fn returns_releasing_large_immediates() {
    for release in [0x80u16, 0x1000, 0xfffc] {
        check(&format!("ret {release:#x}"), |a| {
            let mut f = a.create_label();
            let mut done = a.create_label();
            a.sub(esp, 0x2000)?;
            a.call(f)?;
            a.jmp(done)?;
            a.set_label(&mut f)?;
            a.mov(eax, esp)?;
            a.ret_1(u32::from(release))?;
            a.set_label(&mut done)?;
            a.mov(ebx, esp)
        });
        // The return itself translated inline, not left to the interpreter.
        let mut a = CodeAssembler::new(32).unwrap();
        a.ret_1(u32::from(release)).unwrap();
        let code = a.assemble(u64::from(CODE)).unwrap();
        let t = morph_dbt::translate::translate(&code, CODE, 0, 0, Default::default()).expect("translated");
        assert_eq!(t.fallbacks, 0, "ret {release:#x} through the helper");
    }
}

#[test]
fn loops_and_branches() {
    check("loop", |a| {
        let mut top = a.create_label();
        let mut skip = a.create_label();
        a.mov(ecx, 100)?;
        a.xor(eax, eax)?;
        a.set_label(&mut top)?;
        a.add(eax, ecx)?;
        a.test(ecx, 1)?;
        a.jz(skip)?;
        a.add(dword_ptr(ebx), ecx)?;
        a.set_label(&mut skip)?;
        a.dec(ecx)?;
        a.jnz(top)
    });
}

#[test]
fn helper_instructions() {
    check("helper", |a| {
        a.mov(esi, DATA)?;
        a.mov(edi, DATA + 0x400)?;
        a.mov(ecx, 16)?;
        a.cld()?;
        a.rep().movsd()?;
        a.mov(eax, 100)?;
        a.xor(edx, edx)?;
        a.mov(ecx, 7)?;
        a.div(ecx)?;
        a.cpuid()?;
        a.fld1()?;
        a.fstp(dword_ptr(DATA + 0x600))
    });
}

/// Under the physical key a translation made at one virtual address runs at another:
/// EIP-dependent results (call return addresses, fallback branches, the final EIP) must
/// come from where the code runs now.
#[test]
fn physical_translations_run_at_other_addresses() {
    let mut a = CodeAssembler::new(32).unwrap();
    let mut top = a.create_label();
    let mut f = a.create_label();
    a.mov(ecx, 5).unwrap();
    a.set_label(&mut top).unwrap();
    a.inc(eax).unwrap();
    a.loop_(top).unwrap(); // the host's `loop` on ECX
    a.call(f).unwrap();
    a.int(0x80).unwrap();
    a.set_label(&mut f).unwrap();
    a.mov(edx, dword_ptr(esp)).unwrap(); // the return address
    a.ret().unwrap();
    let code = a.assemble(0).unwrap(); // position-independent bytes
    let (dir, file, id) = code_file("reloc", &code);
    let phys = Rc::new(PhysMem::new(64 << 20).unwrap());
    let mut cache = morph_mem::PageCache::new();
    let mut e = engine(true, KeyPolicy::Physical);
    for (i, va) in [0x1000_0000u32, 0x2345_6000].into_iter().enumerate() {
        let mut mem = AddressSpace::new(phys.clone()).unwrap();
        mem.map_file(&mut cache, va, 0x1000, Prot::RX, false, &file, id, 0, "code").unwrap();
        mem.map_anon(STACK - 0x4000, 0x4000, Prot::RW, false, "stack").unwrap();
        let mut cpu = Cpu::new();
        cpu.eip = va;
        cpu.gpr[4] = STACK - 16;
        assert_eq!(e.run(&mut cpu, &mut mem, 1, 1_000_000), Exit::Syscall);
        assert_eq!(cpu.gpr[0], 5, "run {i}: loop count");
        assert_eq!(cpu.gpr[2], va + 13, "run {i}: return address");
        assert_eq!(cpu.eip, va + 15, "run {i}: final EIP");
        if i == 1 {
            assert_eq!(e.stats().retranslations, 0, "the second address reuses the translations");
            assert!(e.stats().hits > 0);
        }
    }
    let _ = std::fs::remove_file(&dir);
}

/// The first run of a block on a file page not read yet counts toward its threshold like
/// every other: the dispatcher gives the page its frame first (the block's key needs it).
/// Left to the interpreter's fetch, that run went uncounted, so which blocks reached the
/// threshold first depended on the page cache's read-around. `dec ecx; jnz start` at the
/// page's start runs three times: with threshold 2, its third run is its third miss and
/// translates it.
#[test]
fn the_first_run_on_a_page_not_read_yet_is_counted() {
    let mut a = CodeAssembler::new(32).unwrap();
    let mut top = a.create_label();
    a.set_label(&mut top).unwrap();
    a.dec(ecx).unwrap();
    a.jne(top).unwrap();
    a.int(0x80).unwrap();
    let code = a.assemble(0x1000_0000).unwrap();
    let (path, file, id) = code_file("firstrun", &code);
    let phys = Rc::new(PhysMem::new(64 << 20).unwrap());
    let mut cache = morph_mem::PageCache::new();
    let mut mem = AddressSpace::new(phys).unwrap();
    mem.map_file(&mut cache, 0x1000_0000, 0x1000, Prot::RX, false, &file, id, 0, "code").unwrap();
    assert!(!mem.pte(0x1000_0000).has_frame(), "the page is not read at mmap");
    let mut e = Engine::new(EngineConfig {
        translate: true,
        key: KeyPolicy::Physical,
        threshold: 2,
        ..EngineConfig::default()
    })
    .unwrap();
    let mut cpu = Cpu::new();
    cpu.eip = 0x1000_0000;
    cpu.gpr[1] = 3;
    assert_eq!(e.run(&mut cpu, &mut mem, 1, 1_000_000), Exit::Syscall);
    assert_eq!((cpu.gpr[1], cpu.eip), (0, 0x1000_0005));
    assert_eq!(e.stats().misses, 4, "three runs of the loop and one of the int 0x80 block");
    assert_eq!(e.stats().translations, 1, "the loop's third run translated it");
    let _ = std::fs::remove_file(&path);
}

/// `EngineConfig::space_credit`: a block's run in another address space than the last
/// one's earns it the credit. A block of a file page both spaces map (one frame, one
/// physical key): with threshold 5, its run in the first space is interpreted; with a
/// credit of 5, its first run in the second is translated (2 runs + 5 > 5), and runs
/// in the first again hit it; without, it is interpreted until its sixth run. Runs in
/// one space earn nothing however many.
#[test]
fn runs_in_another_address_space_earn_the_space_credit() {
    let mut a = CodeAssembler::new(32).unwrap();
    a.mov(ebx, 7u32).unwrap();
    a.int(0x80).unwrap();
    let code = a.assemble(0x1000_0000).unwrap();
    let (path, file, id) = code_file("credit", &code);
    for credit in [0, 5] {
        let phys = Rc::new(PhysMem::new(64 << 20).unwrap());
        let mut cache = morph_mem::PageCache::new();
        let mut spaces: Vec<AddressSpace> = (0..2)
            .map(|_| {
                let mut m = AddressSpace::new(phys.clone()).unwrap();
                m.map_file(&mut cache, 0x1000_0000, 0x1000, Prot::RX, false, &file, id, 0, "code").unwrap();
                m
            })
            .collect();
        let cfg = EngineConfig { translate: true, threshold: 5, space_credit: credit, ..EngineConfig::default() };
        let mut e = Engine::new(cfg).unwrap();
        let run = |e: &mut Engine, mem: &mut AddressSpace, ctx: u32| {
            let mut cpu = Cpu::new();
            cpu.eip = 0x1000_0000;
            assert_eq!(e.run(&mut cpu, mem, ctx, 1_000_000), Exit::Syscall);
            assert_eq!((cpu.gpr[3], cpu.eip), (7, 0x1000_0007));
        };
        // Three runs in the first space: its own count only (3 <= 5).
        for _ in 0..3 {
            run(&mut e, &mut spaces[0], 1);
        }
        assert_eq!(e.stats().translations, 0);
        run(&mut e, &mut spaces[1], 2);
        let s = e.stats();
        if credit == 0 {
            assert_eq!((s.translations, s.credited_translations, s.misses), (0, 0, 4));
            run(&mut e, &mut spaces[1], 2);
            run(&mut e, &mut spaces[0], 1);
            assert_eq!(e.stats().translations, 1, "its sixth run translates it");
        } else {
            assert_eq!(
                (s.translations, s.credited_translations, s.misses),
                (1, 1, 4),
                "credited at its first run there"
            );
            run(&mut e, &mut spaces[0], 1);
            assert_eq!((e.stats().hits, e.stats().translations), (1, 1), "the other space finds it");
        }
    }
    let _ = std::fs::remove_file(&path);
}

/// A page of code mapped at two addresses of one address space, each followed by a
/// different page: its edge into the next page, chained past the target's check while
/// one address space runs (`chain::FarLinks`), must not carry a run from one address
/// into the page that follows the other. Runs alternate between the two addresses
/// under one mapping (no tag change between them), with and without the check.
#[test]
fn far_edges_of_a_page_mapped_twice() {
    let mut a = CodeAssembler::new(32).unwrap();
    a.mov(ebx, 0u32).unwrap();
    a.jmp(0x1000u64).unwrap();
    let mut code = a.assemble(0).unwrap();
    code.resize(0x1000, 0xcc);
    for page in 1..=2u32 {
        let mut a = CodeAssembler::new(32).unwrap();
        a.mov(ebx, page).unwrap();
        a.int(0x80).unwrap();
        code.extend(a.assemble(0).unwrap());
        code.resize(0x1000 * (page as usize + 1), 0xcc);
    }
    let (path, file, id) = code_file("alias", &code);
    let (x, y) = (0x1000_0000u32, 0x2000_0000u32);
    for unlink_far in [true, false] {
        let phys = Rc::new(PhysMem::new(64 << 20).unwrap());
        let mut cache = morph_mem::PageCache::new();
        let mut mem = AddressSpace::new(phys).unwrap();
        // x: pages 0 and 1 of the file; y: pages 0 and 2.
        mem.map_file(&mut cache, x, 0x2000, Prot::RX, false, &file, id, 0, "x").unwrap();
        mem.map_file(&mut cache, y, 0x1000, Prot::RX, false, &file, id, 0, "y").unwrap();
        mem.map_file(&mut cache, y + 0x1000, 0x1000, Prot::RX, false, &file, id, 0x2000, "y2").unwrap();
        let cfg = EngineConfig { translate: true, threshold: 0, unlink_far, ..EngineConfig::default() };
        let mut e = Engine::new(cfg).unwrap();
        for (run, va) in [x, x, y, x, y, y, x].into_iter().enumerate() {
            let mut cpu = Cpu::new();
            cpu.eip = va;
            assert_eq!(e.run(&mut cpu, &mut mem, 1, 1_000_000), Exit::Syscall);
            let want = if va == x { 1 } else { 2 };
            assert_eq!(cpu.gpr[3], want, "run {run} from {va:#x}, unlink_far {unlink_far}");
        }
        let st = e.stats();
        if unlink_far {
            assert!(
                st.far_unchecked > 0 && st.far_unlinks > 0,
                "{} unchecked, {} unlinks",
                st.far_unchecked,
                st.far_unlinks
            );
        } else {
            assert_eq!(st.far_unchecked, 0);
        }
    }
    let _ = std::fs::remove_file(&path);
}

/// An indirect jump from translated code to a target whose jump-cache slot is empty (and
/// whose VA equals an empty slot's tag) must leave to the dispatcher, which reports the
/// guest fault at that address: never a jump to a stale or null host address.
#[test]
fn indirect_jump_to_empty_slot_faults_in_the_guest() {
    let mut a = CodeAssembler::new(32).unwrap();
    a.xor(eax, eax).unwrap();
    a.jmp(eax).unwrap();
    let code = a.assemble(u64::from(CODE)).unwrap();
    for key in KeyPolicy::ALL {
        let (mut cpu, mut mem) = machine(&code);
        let mut e = engine(true, key);
        match e.run(&mut cpu, &mut mem, 1, 1_000_000) {
            Exit::Fault(f) => assert_eq!(f.eip, 0, "{key:?}"),
            other => panic!("{key:?}: {other:?}"),
        }
        assert_eq!(e.stats().jump_cache_hits, 0, "{key:?}");
    }
}

/// In a forked address space every page starts unhosted and every private page
/// copy-on-write: translated loads and stores resolve both in the host fault handler
/// (no exit to the dispatcher), the child sees its own stores and the parent keeps its
/// data.
#[test]
fn translated_code_fills_a_forked_window_and_breaks_copy_on_write_in_place() {
    let mut a = CodeAssembler::new(32).unwrap();
    let mut top = a.create_label();
    a.mov(ecx, 0x7ffu32).unwrap();
    a.set_label(&mut top).unwrap();
    a.mov(eax, dword_ptr(ebx + ecx * 4)).unwrap();
    a.add(eax, ecx).unwrap();
    a.mov(dword_ptr(ebx + ecx * 4), eax).unwrap();
    a.dec(ecx).unwrap();
    a.jnz(top).unwrap();
    a.int(0x80).unwrap();
    let code = a.assemble(u64::from(CODE)).unwrap();
    for key in KeyPolicy::ALL {
        let (mut cpu, mut parent) = machine(&code);
        cpu.gpr[3] = DATA; // ebx
        let mut child = parent.fork().unwrap();
        let mut e = engine(true, key);
        assert!(matches!(e.run(&mut cpu, &mut child, 2, 1_000_000), Exit::Syscall), "{key:?}");
        assert_eq!(e.stats().exits[3], 0, "{key:?}: no host fault left translated code");
        for i in 1..0x800u32 {
            let old = i.wrapping_mul(0x9e37_79b9);
            assert_eq!(child.read_u32(DATA + 4 * i).unwrap(), old.wrapping_add(i), "{key:?} child {i}");
            assert_eq!(parent.read_u32(DATA + 4 * i).unwrap(), old, "{key:?} parent {i}");
        }
    }
}

/// Self-loops are unrolled (four copies for a small body): every trip count, exits from
/// each copy, a side exit in the middle of the body and a fault inside an unrolled copy
/// must leave the interpreter's state and instruction count.
#[test]
fn unrolled_loops_exit_from_every_copy() {
    for trips in 1..=9u32 {
        check(&format!("unrolled loop, {trips} trips"), |a| {
            let mut top = a.create_label();
            a.mov(ecx, trips)?;
            a.xor(eax, eax)?;
            a.set_label(&mut top)?;
            a.add(eax, ecx)?;
            a.add(dword_ptr(ebx + ecx * 4), eax)?;
            a.dec(ecx)?;
            a.jnz(top)
        });
        check(&format!("unrolled loop with a side exit, break at {trips}"), |a| {
            let mut top = a.create_label();
            let mut out = a.create_label();
            a.mov(ecx, 12)?;
            a.xor(eax, eax)?;
            a.set_label(&mut top)?;
            a.inc(eax)?;
            a.cmp(eax, trips)?;
            a.je(out)?;
            a.add(dword_ptr(ebx + eax * 4), ecx)?;
            a.dec(ecx)?;
            a.jnz(top)?;
            a.set_label(&mut out)?;
            a.nop()
        });
    }
}

/// Counted loops (`translate::counted`): the clean copy for trip counts up to its limit,
/// the ordinary copy beyond, stepping up or down, to a constant or a register bound, the
/// step setting ZF itself; every state and count the interpreter's.
#[test]
fn counted_loops_run_clean_and_count_exactly() {
    for trips in [1u32, 2, 3, 4, 5, 9, 160, 2047, 2048, 2049, 5000] {
        check(&format!("counted up to a constant, {trips} trips"), |a| {
            let mut top = a.create_label();
            a.mov(ecx, 7u32)?;
            a.xor(eax, eax)?;
            a.set_label(&mut top)?;
            a.mov(edx, dword_ptr(ebx + 0x40))?;
            a.imul_2(edx, ecx)?;
            a.add(dword_ptr(ebx + 0x80), edx)?;
            a.add(eax, edx)?;
            a.inc(ecx)?;
            a.cmp(ecx, 7 + trips)?;
            a.jne(top)
        });
        check(&format!("counted down by dec, {trips} trips"), |a| {
            let mut top = a.create_label();
            a.mov(ecx, trips)?;
            a.mov(esi, DATA)?;
            a.set_label(&mut top)?;
            a.add(eax, dword_ptr(esi))?;
            a.xor(eax, ecx)?;
            a.dec(ecx)?;
            a.jnz(top)
        });
        check(&format!("counted up to a register, {trips} trips"), |a| {
            let mut top = a.create_label();
            a.mov(edi, 0x7fff_fff0u32.wrapping_add(trips))?;
            a.mov(ecx, 0x7fff_fff0u32)?;
            a.set_label(&mut top)?;
            a.lea(edx, dword_ptr(ecx + ecx * 2))?;
            a.xor(eax, edx)?;
            a.add(ecx, 1)?;
            a.cmp(edi, ecx)?;
            a.jne(top)
        });
        check(&format!("a pointer counted up by 4 to a register, {trips} trips"), |a| {
            let mut top = a.create_label();
            a.mov(esi, 0x7fff_f000u32)?;
            a.lea(edi, dword_ptr(esi + 4 * trips as i32))?;
            a.set_label(&mut top)?;
            a.xor(eax, esi)?;
            a.add(esi, 4)?;
            a.cmp(edi, esi)?;
            a.jne(top)
        });
        check(&format!("counted down by 2 to a test, {trips} trips"), |a| {
            let mut top = a.create_label();
            a.mov(ecx, 2 * trips)?;
            a.set_label(&mut top)?;
            a.add(eax, ecx)?;
            a.sub(ecx, 2)?;
            a.mov(dword_ptr(ebx + 8), ecx)?;
            a.test(ecx, ecx)?;
            a.jne(top)
        });
        check(&format!("counted down by 8 by the step itself, {trips} trips"), |a| {
            let mut top = a.create_label();
            a.mov(edx, 8 * trips)?;
            a.set_label(&mut top)?;
            a.xor(eax, edx)?;
            a.sub(edx, 8)?;
            a.jne(top)
        });
        check(&format!("counted down to a constant, {trips} trips"), |a| {
            let mut top = a.create_label();
            a.mov(edx, 100 + trips)?;
            a.set_label(&mut top)?;
            a.sub(edx, 1)?;
            a.rol(eax, 3)?;
            a.adc(eax, edx)?;
            a.cmp(edx, 100)?;
            a.jne(top)
        });
    }
    let code = assemble(|a| {
        let mut top = a.create_label();
        a.mov(ecx, 0u32)?;
        a.set_label(&mut top)?;
        a.add(eax, dword_ptr(ebx + ecx * 4))?;
        a.inc(ecx)?;
        a.cmp(ecx, 100)?;
        a.jne(top)
    });
    let (mut cpu, mut mem) = machine(&code);
    let mut e = engine(true, KeyPolicy::Physical);
    assert_eq!(e.run(&mut cpu, &mut mem, 1, 1_000_000), Exit::Syscall);
    assert_eq!(e.stats().counted_loops, 1, "the loop has a clean copy");
}

/// Faults inside a counted loop's clean copy: a load running off the end of the data
/// mapping (before and after the step), a divide error, each the interpreter's fault at
/// the same instruction with the same registers and instruction count (the fault
/// handler takes back the iterations the entry counted but did not run).
#[test]
fn counted_loops_fault_part_way() {
    let cases: [(&str, Vec<u8>); 4] = [
        (
            "a pointer stepping by 4 to a register bound",
            assemble(|a| {
                let mut top = a.create_label();
                a.mov(esi, DATA + 0x1f00)?;
                a.lea(edi, dword_ptr(esi + 0x400))?;
                a.set_label(&mut top)?;
                a.mov(eax, dword_ptr(esi))?;
                a.add(edx, eax)?;
                a.add(esi, 4)?;
                a.cmp(esi, edi)?;
                a.jne(top)
            }),
        ),
        (
            "load before the step",
            assemble(|a| {
                let mut top = a.create_label();
                a.mov(esi, DATA + 0x1f00)?;
                a.mov(ecx, 0u32)?;
                a.set_label(&mut top)?;
                a.mov(eax, dword_ptr(esi))?;
                a.add(esi, 4)?;
                a.add(edx, eax)?;
                a.inc(ecx)?;
                a.cmp(ecx, 200)?;
                a.jne(top)
            }),
        ),
        (
            "load after the step, stepping down",
            assemble(|a| {
                let mut top = a.create_label();
                a.mov(esi, DATA + 0x1f00)?;
                a.mov(ecx, 300u32)?;
                a.set_label(&mut top)?;
                a.add(esi, 4)?;
                a.dec(ecx)?;
                a.mov(eax, dword_ptr(esi))?;
                a.add(edx, eax)?;
                a.cmp(ecx, 0)?;
                a.jne(top)
            }),
        ),
        (
            "divide error",
            assemble(|a| {
                let mut top = a.create_label();
                a.mov(dword_ptr(DATA + 0x100), 0u32)?;
                a.mov(esi, DATA + 0x40)?;
                a.mov(edi, 500u32)?;
                a.mov(ebx, 0u32)?;
                a.set_label(&mut top)?;
                a.mov(eax, 1_000_000u32)?;
                a.xor(edx, edx)?;
                a.div(dword_ptr(esi + ebx * 4))?;
                a.add(ebp, eax)?;
                a.inc(ebx)?;
                a.cmp(ebx, edi)?;
                a.jne(top)
            }),
        ),
    ];
    for (name, code) in cases {
        let mut results = Vec::new();
        for (translate, counted) in [(false, true), (true, true), (true, false)] {
            let (mut cpu, mut mem) = machine(&code);
            let cfg = EngineConfig { translate, threshold: 0, counted, ..EngineConfig::default() };
            let mut e = Engine::new(cfg).unwrap();
            let exit = e.run(&mut cpu, &mut mem, 1, 1_000_000);
            assert!(matches!(exit, Exit::Fault(_)), "{name}: {exit:?}");
            if translate && counted {
                assert_eq!(e.stats().counted_loops, 1, "{name}: a clean copy");
                assert!(e.stats().host_faults > 0, "{name}: the fault was taken in translated code");
            }
            results.push((format!("{exit:?}"), format!("{cpu:?}"), cpu.icount));
        }
        assert_eq!(results[0], results[1], "{name}: interpreter vs clean copy");
        assert_eq!(results[0], results[2], "{name}: interpreter vs ordinary copy");
    }
}

/// A chained loop under small budgets: translated code leaves at the budget guard
/// (`runtime::budget_guard`, a host fault on the guard page turned into the budget exit)
/// again and again, each slice ends at the same instruction count in two runs, and the
/// final state is the interpreter's.
#[test]
fn budget_exits_end_chained_loops_deterministically() {
    let mut a = CodeAssembler::new(32).unwrap();
    let mut top = a.create_label();
    let mut inner = a.create_label();
    a.mov(ecx, 20_000u32).unwrap();
    a.xor(eax, eax).unwrap();
    a.set_label(&mut top).unwrap();
    a.mov(edx, 3u32).unwrap();
    a.set_label(&mut inner).unwrap();
    a.add(eax, edx).unwrap();
    a.dec(edx).unwrap();
    a.jnz(inner).unwrap();
    a.add(dword_ptr(ebx + 8), eax).unwrap();
    a.dec(ecx).unwrap();
    a.jnz(top).unwrap();
    a.int(0x80).unwrap();
    let code = a.assemble(u64::from(CODE)).unwrap();
    let slices = |translate: bool| {
        let (mut cpu, mut mem) = machine(&code);
        let mut e = engine(translate, KeyPolicy::Physical);
        let mut counts = Vec::new();
        loop {
            match e.run(&mut cpu, &mut mem, 1, 300) {
                Exit::Budget => counts.push(cpu.icount),
                Exit::Syscall => break,
                other => panic!("unexpected exit {other:?} at {:#x}", cpu.eip),
            }
            assert!(counts.len() < 100_000, "the loop never ended");
        }
        (cpu, mem.read_u32(DATA + 8).unwrap(), counts, e.stats().exits[4])
    };
    let (icpu, idata, _, _) = slices(false);
    let (tcpu, tdata, counts, budget_exits) = slices(true);
    let (_, _, counts2, _) = slices(true);
    assert!(budget_exits > 10, "translated code left at the budget {budget_exits} times in {} slices", counts.len());
    assert_eq!(counts, counts2, "slices end at the same instruction counts");
    assert_eq!((tcpu.gpr, tcpu.eip, tdata), (icpu.gpr, icpu.eip, idata));
    assert_eq!(tcpu.icount, icpu.icount);
}

#[test]
fn a_block_longer_than_the_first_fetch() {
    // 70 five-byte instructions: past the interpreter's and the translator's first
    // fetch of the block's bytes.
    let long = |a: &mut CodeAssembler| {
        for i in 0..70u32 {
            a.mov(eax, 0x1000_0000 + i)?;
        }
        a.add(ebx, eax)
    };
    check("long block", long);
    let mut a = CodeAssembler::new(32).unwrap();
    long(&mut a).unwrap();
    a.int(0x80).unwrap();
    let code = a.assemble(u64::from(CODE)).unwrap();
    let (mut cpu, mut mem) = machine(&code);
    let mut e = Engine::new(EngineConfig { translate: false, ..EngineConfig::default() }).unwrap();
    assert_eq!(e.run(&mut cpu, &mut mem, 1, 1_000), Exit::Syscall);
    assert_eq!(e.interp().stats.blocks_decoded, 1, "decoded as one block");
    assert_eq!(cpu.icount, 72);
}

/// `jecxz`, `loop`, `loope` and `loopne` on ECX run as the host's own instructions
/// (flags untouched, ECX counted); their CX forms (address-size prefix) through the
/// helper.
#[test]
fn ecx_branches() {
    check("jecxz and loops", |a| {
        let mut top = a.create_label();
        let mut zero = a.create_label();
        let mut l2 = a.create_label();
        let mut l3 = a.create_label();
        let mut done = a.create_label();
        a.mov(ecx, 37)?;
        a.set_label(&mut top)?;
        a.add(eax, ecx)?;
        a.loop_(top)?;
        a.jecxz(zero)?;
        a.inc(edi)?;
        a.set_label(&mut zero)?;
        a.mov(ecx, 50)?;
        a.set_label(&mut l2)?;
        a.inc(edx)?;
        a.cmp(edx, 20)?;
        a.loope(l2)?; // ends when edx != 20 or ECX reaches 0
        a.mov(ecx, 40)?;
        a.set_label(&mut l3)?;
        a.add(esi, 3)?;
        a.cmp(esi, DATA + 0x160)?;
        a.loopne(l3)?;
        a.mov(ecx, 0)?;
        a.jecxz(done)?;
        a.inc(ebp)?;
        a.set_label(&mut done)?;
        a.mov(ecx, 0x1_0002)?;
        a.db(&[0x43, 0x67, 0xe2, 0xfc]) // inc ebx; loop (CX) back to the inc
    });
}

/// Machine code with an instruction at `at` (the rest `nop`s up to it, after a jump over
/// them): `head`, then `body` from `at`, then `int 0x80`.
fn placed(head: &[u8], at: usize, body: &[u8]) -> Vec<u8> {
    let mut code = head.to_vec();
    let jmp_end = code.len() + 5;
    code.push(0xe9);
    code.extend_from_slice(&((at - jmp_end) as i32).to_le_bytes());
    code.resize(at, 0x90);
    code.extend_from_slice(body);
    code.extend_from_slice(&[0xcd, 0x80]);
    code
}

/// A block whose last instruction straddles into the next page is translated (it used to
/// be left to the interpreter) and depends on both pages: a guest write to the second
/// page (here into the straddling instruction's own immediate) drops it, and the branch
/// to it from the first page goes through the jump cache, never a chain (a chained edge
/// would skip the check of the second page's mapping).
#[test]
fn instructions_straddling_a_page() {
    let imm_hi = CODE + 0x1001; // the immediate's second byte, in the second page
    for smc in [false, true] {
        // mov ecx, 20; xor ebx, ebx; jmp 0xff0
        let head = [0xb9, 20, 0, 0, 0, 0x31, 0xdb];
        let mut body = vec![0x90; 0xffd - 0xff0]; // 0xff0: nops up to the straddler
        body.extend_from_slice(&[0xb8, 0x01, 0x02, 0x03, 0x04]); // 0xffd: mov eax, 0x04030201
        body.extend_from_slice(&[0x01, 0xc3]); // add ebx, eax
        if smc {
            body.extend_from_slice(&[0xfe, 0x05]); // inc byte [imm_hi]
            body.extend_from_slice(&imm_hi.to_le_bytes());
        } else {
            body.extend_from_slice(&[0x8d, 0x74, 0x26, 0x00, 0x90, 0x90]); // lea esi, [esi]; nops
        }
        body.push(0x49); // dec ecx
        let back = 0xff0 - (0xff0 + body.len() as i64 + 2);
        body.extend_from_slice(&[0x75, back as i8 as u8]); // jnz 0xff0
        let code = placed(&head, 0xff0, &body);
        check_code(&format!("straddling mov, code written: {smc}"), &code);
        let (mut cpu, mut mem) = machine(&code);
        let mut e = engine(true, KeyPolicy::Physical);
        assert_eq!(e.run(&mut cpu, &mut mem, 1, 1_000_000), Exit::Syscall);
        let s = e.stats();
        if smc {
            assert!(s.invalidations >= 20, "each write to the second page drops the straddler: {s:?}");
        } else {
            assert!(s.translations <= 4, "translated once: {s:?}");
            // (One exit per site before it is chained, the edge into the second page's
            // block included.)
            assert!(s.exits[0] + s.exits[1] <= 4, "no dispatcher round trip per iteration: {s:?}");
        }
    }
}

/// Two hot call targets 64 KiB apart at the same page offset used to share a jump-cache
/// entry (indexed by the VA's low 16 bits) and evict each other at every call.
#[test]
fn jump_cache_keeps_targets_64k_apart() {
    // mov ecx, 500; top: mov eax, CODE+0x100; call eax; mov eax, CODE+0x10100; call eax;
    // dec ecx; jnz top; int 0x80
    let mut code = vec![0xb9, 0xf4, 0x01, 0, 0];
    let top = code.len();
    for f in [CODE + 0x100, CODE + 0x1_0100] {
        code.push(0xb8);
        code.extend_from_slice(&f.to_le_bytes());
        code.extend_from_slice(&[0xff, 0xd0]);
    }
    code.push(0x49);
    let back = top as i64 - (code.len() as i64 + 2);
    code.extend_from_slice(&[0x75, back as i8 as u8, 0xcd, 0x80]);
    code.resize(0x100, 0x90);
    code.extend_from_slice(&[0x40, 0xc3]); // inc eax; ret
    code.resize(0x1_0100, 0x90);
    code.extend_from_slice(&[0x43, 0xc3]); // inc ebx; ret
    check_code("two call targets 64 KiB apart", &code);
    let (mut cpu, mut mem) = machine(&code);
    let mut e = engine(true, KeyPolicy::Physical);
    assert_eq!(e.run(&mut cpu, &mut mem, 1, 1_000_000), Exit::Syscall);
    let s = e.stats();
    assert!(s.exits[1] < 20, "indirect exits: {s:?}");
    assert!(s.jump_cache_hits >= 1900, "{s:?}");
}

/// String instructions run as the host's own (RSI/RDI made host addresses in the
/// window): every kind and width, with and without `rep`/`repe`/`repne`, forwards and
/// backwards, a zero count; the 16-bit-address and segment-override forms through the
/// helper.
#[test]
fn string_instructions() {
    check("strings forwards", |a| {
        a.cld()?;
        a.mov(esi, DATA)?;
        a.mov(edi, DATA + 0x400)?;
        a.mov(ecx, 37)?;
        a.rep().movsb()?;
        a.mov(ecx, 9)?;
        a.rep().movsw()?;
        a.mov(ecx, 11)?;
        a.rep().movsd()?;
        a.movsd()?;
        a.movsb()?;
        a.mov(eax, 0x1234_5678)?;
        a.mov(ecx, 5)?;
        a.rep().stosd()?;
        a.stosw()?;
        a.stosb()?;
        a.mov(ecx, 0)?;
        a.rep().stosd()?; // a zero count
        a.lodsd()?;
        a.lodsw()?;
        a.lodsb()?;
        // strlen-like: find a byte, and compare two strings
        a.mov(edi, DATA)?;
        a.mov(al, byte_ptr(DATA + 0x13))?;
        a.mov(ecx, 0x100)?;
        a.repne().scasb()?;
        a.mov(ebx, ecx)?;
        a.mov(esi, DATA)?;
        a.mov(edi, DATA + 0x400)?;
        a.mov(ecx, 64)?;
        a.repe().cmpsb()?;
        a.mov(edx, ecx)?;
        a.mov(esi, DATA)?;
        a.mov(edi, DATA + 0x800)?;
        a.mov(ecx, 8)?;
        a.repe().cmpsd()?;
        a.scasw()?;
        a.cmpsw()
    });
    check("strings backwards", |a| {
        a.std()?;
        a.mov(esi, DATA + 0x3fc)?;
        a.mov(edi, DATA + 0x7fc)?;
        a.mov(ecx, 20)?;
        a.rep().movsd()?;
        a.mov(ecx, 7)?;
        a.mov(eax, 0xabcd)?;
        a.rep().stosw()?;
        a.mov(ecx, 30)?;
        a.mov(al, byte_ptr(DATA + 0x700))?;
        a.repne().scasb()?;
        a.cld()
    });
    check("strings through the helper", |a| {
        a.cld()?;
        a.mov(esi, DATA)?;
        a.mov(edi, DATA + 0x400)?;
        a.mov(ecx, 5)?;
        a.db(&[0xf3, 0x64, 0xa5])?; // rep movsd with an fs: source (FS flat here)
        a.mov(ecx, 0x5_0000)?;
        a.db(&[0x67, 0xf3, 0xaa]) // rep stosb with 16-bit addresses: CX = 0, nothing stored
    });
}

/// A `rep movs`/`rep stos` that runs into an unmapped page stops at the element that
/// faults, with ESI, EDI and ECX where the interpreter leaves them and the fault at its
/// EIP: a long `rep movsd` (the host's `rep`), a short one (the SSE copy, whose stores
/// may have begun when its tail faults), and `rep movsb`/`rep stosb` faulting at their
/// second, fourth and fifth elements.
#[test]
fn string_instruction_faults_part_way() {
    // The data mapping ends at DATA + 0x2000.
    let end = DATA + 0x2000;
    let cases: [(&str, u32, u32, u32); 5] = [
        ("rep movsd", end - 0x800, 0x400, 0x200),
        ("rep movsd", end - 8, 4, 2),
        ("rep movsb", end - 1, 3, 2),
        ("rep stosb", end - 3, 9, 6),
        ("rep movsb", end - 5, 9, 4),
    ];
    for (what, to, count, left) in cases {
        let mut a = CodeAssembler::new(32).unwrap();
        a.cld().unwrap();
        a.mov(esi, DATA + 0x1000).unwrap();
        a.mov(edi, to).unwrap();
        a.mov(ecx, count).unwrap();
        a.mov(eax, 0x5a5a_5a5au32).unwrap();
        match what {
            "rep movsd" => a.rep().movsd().unwrap(),
            "rep movsb" => a.rep().movsb().unwrap(),
            _ => a.rep().stosb().unwrap(),
        }
        a.int(0x80).unwrap();
        let code = a.assemble(u64::from(CODE)).unwrap();
        let mut results = Vec::new();
        for translate in [false, true] {
            let (mut cpu, mut mem) = machine(&code);
            let mut e = engine(translate, KeyPolicy::Physical);
            let exit = e.run(&mut cpu, &mut mem, 1, 1_000_000);
            let Exit::Fault(f) = exit else { panic!("{what} of {count}, translate {translate}: {exit:?}") };
            let mut stored = vec![0u8; 16];
            mem.read_bytes(end - 16, &mut stored).unwrap();
            results.push((format!("{f:?}"), cpu.gpr, cpu.eip, stored));
        }
        assert_eq!(results[0], results[1], "{what} of {count}: interpreter vs translator");
        assert_eq!(results[1].1[1], left, "{what} of {count}: ECX counts the elements left");
    }
}

/// `div`/`idiv` of every width run natively; a divide error (by zero, or a quotient too
/// large) in translated code is the interpreter's #DE at the instruction, with the
/// registers as they were.
#[test]
fn divisions_and_divide_errors() {
    check("divisions", |a| {
        a.mov(eax, 1_000_003)?;
        a.xor(edx, edx)?;
        a.mov(ecx, 97)?;
        a.div(ecx)?;
        a.mov(esi, eax)?;
        a.mov(eax, -1_000_003i32 as u32)?;
        a.cdq()?;
        a.idiv(ecx)?;
        a.mov(edi, edx)?;
        a.mov(eax, 0x0234)?;
        a.mov(bl, 7)?;
        a.div(bl)?;
        a.mov(ax, 0x8123)?;
        a.mov(dx, 3)?;
        a.mov(bx, 0x7001)?;
        a.div(bx)?;
        a.mov(eax, -50i32 as u32)?;
        a.cdq()?;
        a.idiv(dword_ptr(DATA + 0x10))?;
        a.mov(al, 0x9c)?;
        a.cbw()?;
        a.mov(bl, 9)?;
        a.idiv(bl)
    });
    for (name, divisor, high) in [("by zero", 0u32, 0u32), ("overflow", 2, 5)] {
        let mut a = CodeAssembler::new(32).unwrap();
        a.mov(eax, 77u32).unwrap();
        a.mov(ecx, divisor).unwrap();
        a.div(ecx).unwrap();
        a.int(0x80).unwrap();
        let code = a.assemble(u64::from(CODE)).unwrap();
        let mut results = Vec::new();
        for translate in [false, true] {
            let (mut cpu, mut mem) = machine(&code);
            cpu.gpr[2] = high;
            let mut e = engine(translate, KeyPolicy::Physical);
            let exit = e.run(&mut cpu, &mut mem, 1, 1_000_000);
            assert!(
                matches!(&exit, Exit::Fault(f) if matches!(f.kind, morph_cpu::FaultKind::DivideError)),
                "{name}, translate {translate}: {exit:?}"
            );
            results.push((format!("{exit:?}"), format!("{cpu:?}")));
        }
        assert_eq!(results[0], results[1], "{name}: interpreter vs translator");
    }
}

/// Returns whose target the interpreter saw stay the same (so the translation of the
/// returning block checks that target inline and jumps to it directly: see
/// `translate::Options::predict`), then change: the same function called from another
/// site, a return address rewritten on the stack. Every key policy, chained or not,
/// with and without the return stack, the test branching with `loop` and with `jrcxz`
/// (`EngineConfig::slow_loop`), must end in the interpreter's state; the
/// prediction must have been made and taken (fewer jump-cache hits than without it).
#[test]
fn predicted_returns_hit_and_miss() {
    let mut a = CodeAssembler::new(32).unwrap();
    let mut f = a.create_label();
    let mut g = a.create_label();
    let mut top = a.create_label();
    let mut top2 = a.create_label();
    let mut top3 = a.create_label();
    let mut elsewhere = a.create_label();
    let mut back = a.create_label();
    a.mov(ecx, 300u32).unwrap();
    a.set_label(&mut top).unwrap();
    a.call(f).unwrap(); // the one return site while f is interpreted
    a.dec(ecx).unwrap();
    a.jnz(top).unwrap();
    a.mov(ecx, 40u32).unwrap();
    a.set_label(&mut top2).unwrap();
    a.call(f).unwrap(); // another site: the prediction misses
    a.add(esi, eax).unwrap();
    a.dec(ecx).unwrap();
    a.jnz(top2).unwrap();
    a.mov(ecx, 40u32).unwrap();
    a.set_label(&mut top3).unwrap();
    a.call(g).unwrap(); // g rewrites its return address half the time
    a.set_label(&mut back).unwrap();
    a.add(edi, ecx).unwrap();
    a.dec(ecx).unwrap();
    a.jnz(top3).unwrap();
    a.int(0x80).unwrap();
    a.set_label(&mut elsewhere).unwrap();
    a.add(edi, 0x100).unwrap();
    a.jmp(back).unwrap();
    a.set_label(&mut f).unwrap();
    a.add(eax, ecx).unwrap();
    a.add(dword_ptr(ebx + 8), eax).unwrap();
    a.ret().unwrap();
    a.set_label(&mut g).unwrap();
    a.add(dword_ptr(ebx + 12), ecx).unwrap();
    a.test(ecx, 1).unwrap();
    a.jz(f).unwrap(); // an even count returns through f's `ret`, to `back`
    a.mov(dword_ptr(esp), 0u32).unwrap(); // patched below with `elsewhere`
    a.ret().unwrap();
    let mut code = a.assemble(u64::from(CODE)).unwrap();
    // g's `mov dword [esp], imm32` gets the address of `elsewhere` (`add edi, 0x100`).
    let at = code.len() - 5;
    let i = code.windows(6).position(|w| w == [0x81, 0xc7, 0x00, 0x01, 0x00, 0x00]).expect("elsewhere");
    code[at..at + 4].copy_from_slice(&(CODE + i as u32).to_le_bytes());
    let interp = run(&code, EngineConfig { translate: false, ..EngineConfig::default() });
    for key in KeyPolicy::ALL {
        for (chain, ras) in [(true, false), (false, false), (true, true)] {
            for (threshold, slow_loop) in [(5, Some(false)), (8, Some(true))] {
                let cfg =
                    EngineConfig { translate: true, key, threshold, chain, ras, slow_loop, ..EngineConfig::default() };
                let (mut cpu, mut mem) = machine(&code);
                let mut e = Engine::new(cfg.clone()).unwrap();
                assert_eq!(e.run(&mut cpu, &mut mem, 1, 10_000_000), Exit::Syscall, "{cpu:?}");
                assert!(e.stats().predicted_branches > 0, "no prediction under {cfg:?}");
                let mut data = vec![0u8; 0x2000];
                mem.read_bytes(DATA, &mut data).unwrap();
                assert_eq!(format!("{:?}", interp.0), format!("{cpu:?}"), "registers under {cfg:?}");
                assert!(interp.1 == data, "data under {cfg:?}");
            }
        }
    }
    let hits = |predict: bool| {
        let cfg = EngineConfig { translate: true, threshold: 8, predict, ..EngineConfig::default() };
        let (mut cpu, mut mem) = machine(&code);
        let mut e = Engine::new(cfg).unwrap();
        assert_eq!(e.run(&mut cpu, &mut mem, 1, 10_000_000), Exit::Syscall);
        assert_eq!(format!("{:?}", interp.0), format!("{cpu:?}"));
        (e.stats().predicted_branches, e.stats().jump_cache_hits)
    };
    let ((on, with), (off, without)) = (hits(true), hits(false));
    assert_eq!(off, 0, "--no-ic predicts nothing");
    assert!(on > 0 && with + 250 < without, "jump-cache hits {with} with the prediction, {without} without");
}

/// Forward branches inside a block (an `if` without `else`) join the fall-through path
/// inside the translation: in loops (unrolled copies each with their own join), with a
/// run of pushes that would cross the join, with two branches to one join, and with a
/// fault at the join reached by the taken edge (the instruction count and EIP at the
/// fault must be the interpreter's).
#[test]
fn forward_branches_join_inside_the_block() {
    check("if-then in a loop", |a| {
        let mut top = a.create_label();
        let mut join = a.create_label();
        a.mov(ecx, 37u32)?;
        a.set_label(&mut top)?;
        a.test(ecx, 3)?;
        a.jz(join)?;
        a.add(eax, ecx)?;
        a.xor(edx, eax)?;
        a.add(dword_ptr(ebx + ecx * 4), edx)?;
        a.set_label(&mut join)?;
        a.add(esi, 1)?;
        a.dec(ecx)?;
        a.jnz(top)
    });
    check("a push run across the join", |a| {
        let mut top = a.create_label();
        let mut join = a.create_label();
        a.mov(ebp, esp)?;
        a.mov(ecx, 9u32)?;
        a.set_label(&mut top)?;
        a.test(ecx, 1)?;
        a.jnz(join)?;
        a.push(eax)?;
        a.set_label(&mut join)?;
        a.push(ebx)?;
        a.push(ecx)?;
        a.pop(edx)?;
        a.add(eax, edx)?;
        a.dec(ecx)?;
        a.jnz(top)?;
        a.mov(esi, esp)?;
        a.sub(esi, ebp)?;
        a.mov(esp, ebp)
    });
    check("two branches to one join", |a| {
        let mut top = a.create_label();
        let mut join = a.create_label();
        a.mov(ecx, 20u32)?;
        a.set_label(&mut top)?;
        a.cmp(ecx, 5)?;
        a.jb(join)?;
        a.add(eax, 7)?;
        a.test(ecx, 2)?;
        a.jz(join)?;
        a.add(edx, ecx)?;
        a.set_label(&mut join)?;
        a.add(dword_ptr(ebx + 16), eax)?;
        a.dec(ecx)?;
        a.jnz(top)
    });
    let mut a = CodeAssembler::new(32).unwrap();
    let mut top = a.create_label();
    let mut join = a.create_label();
    let mut keep = a.create_label();
    a.mov(ecx, 12u32).unwrap();
    a.set_label(&mut top).unwrap();
    a.cmp(ecx, 4).unwrap();
    a.jne(keep).unwrap();
    a.mov(edi, 0x100u32).unwrap(); // unmapped from the fourth-last trip on
    a.set_label(&mut keep).unwrap();
    a.test(ecx, 1).unwrap();
    a.jz(join).unwrap();
    a.add(eax, ecx).unwrap();
    a.add(edx, 3).unwrap();
    a.set_label(&mut join).unwrap();
    a.mov(esi, dword_ptr(edi)).unwrap(); // the taken edge (ecx even) faults here at ecx == 4
    a.dec(ecx).unwrap();
    a.jnz(top).unwrap();
    a.int(0x80).unwrap();
    let code = a.assemble(u64::from(CODE)).unwrap();
    let outcome = |cfg: EngineConfig| {
        let (mut cpu, mut mem) = machine(&code);
        let mut e = Engine::new(cfg).unwrap();
        let exit = e.run(&mut cpu, &mut mem, 1, 1_000_000);
        (format!("{exit:?}"), format!("{cpu:?}"))
    };
    let want = outcome(EngineConfig { translate: false, ..EngineConfig::default() });
    assert!(want.0.contains("Fault"), "the interpreter faults: {}", want.0);
    for key in KeyPolicy::ALL {
        for threshold in [0, 1, 3] {
            let cfg = EngineConfig { translate: true, key, threshold, ..EngineConfig::default() };
            assert_eq!(outcome(cfg.clone()), want, "fault at a join under {cfg:?}");
        }
    }
}

/// Guest code with PLT stubs: `stub_a` (`jmp [ebx + 8]`) and `stub_c` (`jmp [abs]`) in
/// the code's first page, `stub_b` (`jmp [ebx + 12]`) in its second, the callees `f`
/// (first page) and `g` (second), and `main`, the call loops, with `tail` after them.
fn plt_program(tail: impl Fn(&mut CodeAssembler) -> Result<(), IcedError>) -> Vec<u8> {
    const STUB_A: u32 = CODE + 0x100;
    const STUB_C: u32 = CODE + 0x108;
    const F: u32 = CODE + 0x200;
    const STUB_B: u32 = CODE + 0x1000;
    const G: u32 = CODE + 0x1100;
    const TAIL: u32 = CODE + 0x300; // `jmp stub_a`: a tail call through the PLT
    let mut code = assemble(|a| {
        a.mov(dword_ptr(ebx + 8), F)?;
        a.mov(dword_ptr(ebx + 12), G)?;
        a.mov(dword_ptr(DATA + 16), F)?;
        // (trips, callee) of each loop, with a write before the second and the fourth
        let loops = [(60u32, STUB_A), (40, STUB_A), (40, STUB_B), (40, STUB_B), (30, STUB_C), (30, TAIL)];
        for (n, &(trips, callee)) in loops.iter().enumerate() {
            match n {
                1 => a.mov(dword_ptr(ebx + 8), G)?,   // the GOT slot rebound (lazy binding)
                3 => a.mov(byte_ptr(STUB_B + 2), 8)?, // the stub itself rewritten: `jmp [ebx + 8]`
                _ => {}
            }
            let mut top = a.create_label();
            a.mov(ecx, trips)?;
            a.set_label(&mut top)?;
            a.call(u64::from(callee))?;
            a.add(esi, eax)?;
            a.add(dword_ptr(ebx + 0x40), esp)?;
            a.dec(ecx)?;
            a.jnz(top)?;
        }
        tail(a)
    });
    assert!(code.len() <= 0x100, "main fits before the stubs");
    let at = |code: &mut Vec<u8>, va: u32, bytes: &[u8]| {
        code.resize((va - CODE) as usize, 0x90);
        code.extend_from_slice(bytes);
    };
    at(&mut code, STUB_A, &[0xff, 0xa3, 8, 0, 0, 0]);
    let abs = (DATA + 16).to_le_bytes();
    at(&mut code, STUB_C, &[0xff, 0x25, abs[0], abs[1], abs[2], abs[3]]);
    at(&mut code, F, &[0x8d, 0x44, 0x49, 0x05, 0xc3]); // lea eax, [ecx + ecx*2 + 5]; ret
    let rel = (STUB_A.wrapping_sub(TAIL + 5)).to_le_bytes();
    at(&mut code, TAIL, &[0xe9, rel[0], rel[1], rel[2], rel[3]]);
    at(&mut code, STUB_B, &[0xff, 0xa3, 12, 0, 0, 0]);
    at(&mut code, G, &[0x8d, 0x04, 0x8d, 0x11, 0, 0, 0, 0xc3]); // lea eax, [ecx*4 + 0x11]; ret
    code
}

/// A call of a PLT stub takes the stub's jump in the calling translation (the GOT slot
/// read at the call): through a rebound slot, a stub in another page that is then
/// rewritten (the translations depending on it dropped), the absolute form, a tail call
/// (`jmp` to the stub), and a slot whose read faults (the guest's fault at the stub,
/// with the return address pushed, as the interpreter has it).
#[test]
fn plt_calls_take_the_stubs_jump() {
    let code = plt_program(|_| Ok(()));
    check_code("PLT calls", &code);
    let (mut cpu, mut mem) = machine(&code);
    let mut e = engine(true, KeyPolicy::Physical);
    assert_eq!(e.run(&mut cpu, &mut mem, 1, 10_000_000), Exit::Syscall);
    let s = e.stats();
    assert!(s.plt_calls >= 4, "the calls take the stubs' jumps: {s:?}");
    assert!(s.invalidations > 0, "the rewritten stub dropped the calls that depend on it: {s:?}");
    // Then EBX unmapped at the 25th call of another loop: the slot's read faults.
    let code = plt_program(|a| {
        let mut top = a.create_label();
        let mut skip = a.create_label();
        a.mov(ecx, 30u32)?;
        a.set_label(&mut top)?;
        a.cmp(ecx, 6)?;
        a.jne(skip)?;
        a.mov(ebx, 0x100u32)?;
        a.set_label(&mut skip)?;
        a.call(u64::from(CODE + 0x108))?;
        a.call(u64::from(CODE + 0x100))?;
        a.dec(ecx)?;
        a.jnz(top)
    });
    let outcome = |cfg: EngineConfig| {
        let (mut cpu, mut mem) = machine(&code);
        let mut e = Engine::new(cfg).unwrap();
        let exit = e.run(&mut cpu, &mut mem, 1, 1_000_000);
        let mut stack = vec![0u8; 0x100];
        mem.read_bytes(STACK - 0x100, &mut stack).unwrap();
        (format!("{exit:?}"), format!("{cpu:?}"), stack, e.stats().plt_calls)
    };
    let want = outcome(EngineConfig { translate: false, ..EngineConfig::default() });
    assert!(want.0.contains("Fault"), "{}", want.0);
    for threshold in [0, 3] {
        let got = outcome(EngineConfig { translate: true, threshold, ..EngineConfig::default() });
        assert!(got.3 > 0, "threshold {threshold}: the faulting call was made without the stub {got:?}");
        assert_eq!((&want.0, &want.1, &want.2), (&got.0, &got.1, &got.2), "threshold {threshold}");
    }
}
