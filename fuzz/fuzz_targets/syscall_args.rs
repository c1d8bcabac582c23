//! System-call argument decoding: up to sixteen calls with fuzzed numbers, arguments
//! and memory, made by a tiny program in a fresh machine.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| morph_fuzz::run_syscalls(data));
