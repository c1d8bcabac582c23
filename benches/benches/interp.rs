//! Interpreter speed: guest instructions per second on a CPU-bound guest loop, and
//! the cost of code met for the first time (a block decoded, pre-decoded and run once;
//! a block decoded for the translator).

#![allow(missing_docs)] // criterion's macros generate undocumented items

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use iced_x86::{Code, Decoder, DecoderOptions, FlowControl};
use morph_benches::{CODE, alu_loop, alu_loop_instructions, cold_blocks, machine};
use morph_cpu::{Exit, Interp};

fn interp(c: &mut Criterion) {
    let n = 100_000;
    let code = alu_loop(n);
    let mut g = c.benchmark_group("interp");
    g.throughput(Throughput::Elements(alu_loop_instructions(n)));
    let (mut cpu, mut mem) = machine(&code);
    let mut it = Interp::new();
    g.bench_function("alu_loop", |b| {
        b.iter(|| {
            cpu.eip = CODE;
            assert_eq!(it.run(&mut cpu, &mut mem, u64::MAX), Exit::Syscall);
        })
    });
    g.finish();
}

/// A thousand blocks, each run once by a fresh interpreter: the decode, the
/// pre-decoded records, their allocation and one run per block (a Python start runs
/// ~30 k blocks about ten times each, every one decoded on its first run). Then the
/// same blocks as the translator fetches them (`Interp::decoded_block`: decoded by
/// iced-x86 alone, nothing kept).
fn cold(c: &mut Criterion) {
    let n = 1000;
    let code = cold_blocks(n);
    let mut g = c.benchmark_group("interp");
    g.throughput(Throughput::Elements(u64::from(n)));
    let (mut cpu, mut mem) = machine(&code);
    g.bench_function("cold_blocks", |b| {
        b.iter(|| {
            let mut it = Interp::new();
            cpu.eip = CODE;
            assert_eq!(it.run(&mut cpu, &mut mem, u64::MAX), Exit::Syscall);
        })
    });
    // The block starts: after the first `mov esi`, and after each `jmp`.
    let starts: Vec<u32> = Decoder::with_ip(32, &code, u64::from(CODE), DecoderOptions::NONE)
        .into_iter()
        .filter(|i| i.code() == Code::Mov_r32_imm32 || i.flow_control() == FlowControl::UnconditionalBranch)
        .map(|i| i.next_ip32())
        .collect();
    let mut it = Interp::new();
    let mut out = Vec::with_capacity(8);
    g.bench_function("decoded_block", |b| {
        b.iter(|| {
            for &at in &starts {
                out.clear();
                assert!(it.decoded_block(at, &mut mem, &mut out));
            }
        })
    });
    g.finish();
}

criterion_group!(benches, interp, cold);
criterion_main!(benches);
