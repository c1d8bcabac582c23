//! The ELF loader: any file as a program, loaded into a fresh machine.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| morph_fuzz::load_elf(data));
