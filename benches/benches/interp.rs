//! Interpreter speed: guest instructions per second on a CPU-bound guest loop.

#![allow(missing_docs)] // criterion's macros generate undocumented items

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use morph_benches::{CODE, alu_loop, alu_loop_instructions, machine};
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

criterion_group!(benches, interp);
criterion_main!(benches);
