//! Translator benchmarks: translation speed (guest instructions translated per second),
//! translated execution of a CPU-bound loop, and dispatch (a loop whose every block
//! returns to the dispatcher: lookup + entry + exit).

#![allow(missing_docs)] // criterion's macros generate undocumented items

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use iced_x86::{Decoder, DecoderOptions, FlowControl, Instruction};
use morph_benches::{CODE, alu_loop, alu_loop_instructions, machine};
use morph_cpu::Exit;
use morph_dbt::{Engine, EngineConfig, KeyPolicy};

fn translate_speed(c: &mut Criterion) {
    // A page of straight-line guest code, translated block by block.
    let code = alu_loop(1);
    let mut g = c.benchmark_group("dbt");
    let n = 8u64; // instructions in the loop body block
    g.throughput(Throughput::Elements(n));
    g.bench_function("translate_block", |b| {
        b.iter(|| morph_dbt::translate::translate(&code, CODE, 0, 0, Default::default()).expect("translates"))
    });
    // The same block from instructions already decoded (as the engine gives the
    // interpreter's decoded blocks): the translation cost without the decode.
    let decoded: Vec<Instruction> =
        Decoder::with_ip(32, &code, u64::from(CODE), DecoderOptions::NONE).into_iter().collect();
    let fetch = |at: u32, out: &mut Vec<Instruction>| {
        let Some(i) = decoded.iter().position(|d| d.ip32() == at) else { return false };
        for d in &decoded[i..] {
            out.push(*d);
            if d.flow_control() != FlowControl::Next {
                break;
            }
        }
        true
    };
    g.bench_function("translate_decoded", |b| {
        b.iter(|| {
            morph_dbt::translate::translate_decoded(fetch, |_| None, |_, _| false, CODE, 0, 0, Default::default())
                .expect("translates")
        })
    });
    // A block with an instruction left to the fallback helper (`cpuid`): each
    // translation emits the helper-call glue (`runtime::helper_call`).
    let helper_block = [0x8b, 0x43, 0x08, 0x0f, 0xa2, 0x41, 0xcd, 0x80]; // mov eax,[ebx+8]; cpuid; inc ecx; int 0x80
    g.throughput(Throughput::Elements(4));
    g.bench_function("translate_helper_block", |b| {
        b.iter(|| morph_dbt::translate::translate(&helper_block, CODE, 0, 0, Default::default()).expect("translates"))
    });
    g.finish();
}

/// Engine creation, which emits the runtime glue (entry, exits, the shared jump-cache
/// lookup) into a fresh code buffer.
fn engine_new(c: &mut Criterion) {
    let mut g = c.benchmark_group("dbt");
    g.bench_function("engine_new", |b| {
        b.iter(|| Engine::new(EngineConfig { translate: true, ..EngineConfig::default() }).expect("engine"))
    });
    g.finish();
}

fn execute(c: &mut Criterion) {
    let n = 100_000;
    let code = alu_loop(n);
    let mut g = c.benchmark_group("dbt");
    g.throughput(Throughput::Elements(alu_loop_instructions(n)));
    for chain in [true, false] {
        let (mut cpu, mut mem) = machine(&code);
        let mut e = Engine::new(EngineConfig {
            translate: true,
            key: KeyPolicy::Physical,
            threshold: 0,
            chain,
            ..EngineConfig::default()
        })
        .unwrap();
        let name = if chain { "alu_loop_chained" } else { "alu_loop_dispatch_every_block" };
        g.bench_function(name, |b| {
            b.iter(|| {
                cpu.eip = CODE;
                assert_eq!(e.run(&mut cpu, &mut mem, 1, u64::MAX), Exit::Syscall);
            })
        });
    }
    g.finish();
}

criterion_group!(benches, translate_speed, engine_new, execute);
criterion_main!(benches);
