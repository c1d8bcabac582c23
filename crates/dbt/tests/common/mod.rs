//! What the engine's integration tests share: where the guest's code, data and stack
//! are mapped, and a reproducible random generator.
#![allow(dead_code)]

pub const CODE: u32 = 0x0804_8000;
pub const DATA: u32 = 0x1000_0000;
pub const STACK: u32 = 0x2000_0000;

/// A deterministic xorshift generator (the tests must be reproducible).
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 16) as u32
    }
}
