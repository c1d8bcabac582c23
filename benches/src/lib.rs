//! Guest kernels for the engine benchmarks, assembled in memory with iced-x86 so the
//! benchmarks need no toolchain.

use std::rc::Rc;

use iced_x86::code_asm::*;
use morph_cpu::Cpu;
use morph_mem::{AddressSpace, PhysMem, Prot};

/// Where the benchmark code is loaded.
pub const CODE: u32 = 0x0804_8000;
/// Where its data lives.
pub const DATA: u32 = 0x1000_0000;

/// A CPU-bound loop of `n` iterations (7 instructions each: loads, ALU, a store, a
/// branch), ending in `int 0x80`. Returns the code bytes.
pub fn alu_loop(n: u32) -> Vec<u8> {
    let mut a = CodeAssembler::new(32).expect("32-bit assembler");
    let mut top = a.create_label();
    a.mov(ecx, n).unwrap();
    a.mov(esi, DATA).unwrap();
    a.xor(eax, eax).unwrap();
    a.set_label(&mut top).unwrap();
    a.add(eax, ecx).unwrap();
    a.mov(edx, dword_ptr(esi)).unwrap();
    a.xor(edx, eax).unwrap();
    a.mov(dword_ptr(esi + 4), edx).unwrap();
    a.lea(edi, dword_ptr(eax + ecx * 2 + 1)).unwrap();
    a.dec(ecx).unwrap();
    a.jne(top).unwrap();
    a.int(0x80).unwrap();
    a.assemble(u64::from(CODE)).expect("assemble")
}

/// Instructions `alu_loop(n)` executes, the final `int 0x80` included.
pub fn alu_loop_instructions(n: u32) -> u64 {
    3 + 7 * u64::from(n) + 1
}

/// `n` distinct blocks run one after the other, once each (five instructions: a load,
/// ALU, `lea`, and a direct jump to the next), then `int 0x80`: what a starting
/// program mostly runs, code met for the first time. Returns the code bytes.
pub fn cold_blocks(n: u32) -> Vec<u8> {
    let mut a = CodeAssembler::new(32).expect("32-bit assembler");
    a.mov(esi, DATA).unwrap();
    for k in 0..n {
        let mut next = a.create_label();
        a.mov(eax, dword_ptr(esi + (k % 256) * 4)).unwrap();
        a.add(eax, ecx).unwrap();
        a.lea(edx, dword_ptr(eax + ecx * 2 + k as i32)).unwrap();
        a.xor(edi, edx).unwrap();
        a.jmp(next).unwrap();
        a.set_label(&mut next).unwrap();
    }
    a.int(0x80).unwrap();
    a.assemble(u64::from(CODE)).expect("assemble")
}

/// A fresh address space with `code` at [`CODE`] and a data page at [`DATA`].
pub fn machine(code: &[u8]) -> (Cpu, AddressSpace) {
    let phys = Rc::new(PhysMem::new(64 << 20).expect("physical memory"));
    let mut mem = AddressSpace::new(phys).expect("address space");
    let len = (code.len() as u32).div_ceil(4096) * 4096;
    mem.map_anon(CODE, len, Prot::RWX, false, "code").expect("map code");
    mem.write_bytes(CODE, code).expect("write code");
    mem.protect(CODE, len, Prot::RX).expect("protect code");
    mem.map_anon(DATA, 4096, Prot::RW, false, "data").expect("map data");
    let mut cpu = Cpu::new();
    cpu.eip = CODE;
    (cpu, mem)
}
