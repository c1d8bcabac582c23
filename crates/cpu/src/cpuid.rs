//! The CPU identity morph reports: a Transmeta Crusoe TM5600, as in the 2005 report.
//!
//! Values come from the `/proc/cpuinfo` and boot log quoted in `shared/seed/`:
//! vendor "GenuineTMx86", family 6, model 4, stepping 3, standard feature word
//! 0x0080893f (fpu vme de pse tsc msr cx8 sep cmov mmx), extended feature word
//! 0x0081813f, model name "Transmeta(tm) Crusoe(tm) Processor TM5600", L1 64 KiB I +
//! 64 KiB D, L2 512 KiB. No SSE, so glibc takes its i686 paths.

/// `CPUID.1:EDX` of the TM5600.
pub const STD_FEATURES_EDX: u32 = 0x0080_893f;
/// `CPUID.0x80000001:EDX` of the TM5600.
pub const EXT_FEATURES_EDX: u32 = 0x0081_813f;
/// Family 6, model 4, stepping 3.
pub const SIGNATURE: u32 = (6 << 8) | (4 << 4) | 3;

const BRAND: &[u8; 48] = b"Transmeta(tm) Crusoe(tm) Processor TM5600\0\0\0\0\0\0\0";

fn regs4(b: &[u8]) -> [u32; 4] {
    let w = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
    [w(0), w(4), w(8), w(12)]
}

/// The answer to `CPUID` with `EAX = leaf`: `[eax, ebx, ecx, edx]`.
pub fn cpuid(leaf: u32) -> [u32; 4] {
    match leaf {
        0 => {
            let v = b"GenuineTMx86";
            let w = |i: usize| u32::from_le_bytes([v[i], v[i + 1], v[i + 2], v[i + 3]]);
            [1, w(0), w(8), w(4)]
        }
        1 => [SIGNATURE, 0, 0, STD_FEATURES_EDX],
        0x8000_0000 => [0x8000_0006, 0, 0, 0],
        0x8000_0001 => [SIGNATURE, 0, 0, EXT_FEATURES_EDX],
        0x8000_0002..=0x8000_0004 => {
            let i = (leaf - 0x8000_0002) as usize * 16;
            regs4(&BRAND[i..i + 16])
        }
        // L1: 64 KiB 4-way I (64-byte lines), 64 KiB 8-way D (32-byte lines): assumption
        // on associativity, sizes and line sizes from the boot log.
        0x8000_0005 => [0, 0, (64 << 24) | (8 << 16) | (1 << 8) | 32, (64 << 24) | (4 << 16) | (1 << 8) | 64],
        0x8000_0006 => [0, 0, (512 << 16) | (4 << 12) | 128, 0],
        // Beyond the highest leaf, Intel-style CPUs answer with the highest basic leaf.
        0x8000_0007..=0x8fff_ffff => [0; 4],
        _ => [SIGNATURE, 0, 0, STD_FEATURES_EDX],
    }
}
