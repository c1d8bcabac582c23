//! Generates the instruction table at build time: `src/isa/derive.rs` run for every iced
//! `Code`, written as a Rust array to `$OUT_DIR/isa_table.rs` (included by
//! `src/isa/mod.rs`). At run time an entry is then an index into a static array: nothing
//! of iced's opcode descriptions, which it builds for every form (strings included) at
//! their first use, is touched before the guest's first instruction.

use std::fmt::Write as _;

#[allow(dead_code)]
#[path = "src/isa/types.rs"]
mod types;

#[path = "src/isa/rows.rs"]
mod rows;

#[allow(dead_code)]
#[path = "src/isa/sample.rs"]
mod sample;

#[path = "src/isa/derive.rs"]
mod derive;

use types::*;

/// `e` as a Rust expression.
fn literal(e: &Entry) -> String {
    let fast = match e.fast {
        Some(f) => format!("Some(FastForm::{f:?})"),
        None => "None".into(),
    };
    let lower = match e.lower {
        Lower::Inline(i) => format!("Lower::Inline(Inline::{i:?})"),
        l => format!("Lower::{l:?}"),
    };
    format!(
        "Entry {{ support: Support::{:?}, family: Family::{:?}, fast: {fast}, lower: {lower}, writes: Writes::{:?}, \
         flags_written: {:#x}, flags_undefined: {:#x}, host_mode64: {} }}",
        e.support, e.family, e.writes, e.flags_written, e.flags_undefined, e.host_mode64
    )
}

fn main() {
    println!("cargo::rerun-if-changed=src/isa");
    let codes: Vec<iced_x86::Code> = iced_x86::Code::values().collect();
    let mut out = String::with_capacity(codes.len() * 200);
    writeln!(out, "static TABLE: [Entry; {}] = [", codes.len()).unwrap();
    for (i, &code) in codes.iter().enumerate() {
        assert_eq!(code as usize, i, "iced's Code values are dense");
        writeln!(out, "    {}, // {code:?}", literal(&derive::build(code))).unwrap();
    }
    out.push_str("];\n");
    let path = std::path::Path::new(&std::env::var("OUT_DIR").unwrap()).join("isa_table.rs");
    std::fs::write(path, out).unwrap();
}
