//! The CPU identities morph reports (`--cpu`): by default a Transmeta Crusoe TM5600, as
//! in the 2005 report; or its successor the Efficeon TM8600, which adds SSE and SSE2.
//!
//! The TM5600's values come from the `/proc/cpuinfo` and boot log quoted in
//! `shared/seed/`: vendor "GenuineTMx86", family 6, model 4, stepping 3, standard feature
//! word 0x0080893f (fpu vme de pse tsc msr cx8 sep cmov mmx), extended feature word
//! 0x0081813f, model name "Transmeta(tm) Crusoe(tm) Processor TM5600", L1 64 KiB I +
//! 64 KiB D, L2 512 KiB. No SSE, so glibc takes its i686 paths.
//!
//! The TM8600 is an assumption built on the TM5600: the same words with `fxsr`, `sse` and
//! `sse2` added (bits 24–26 of the standard word), family 15 model 2, its brand string,
//! and the Efficeon's published cache sizes (L1 128 KiB I + 64 KiB D, L2 1 MiB). It lets
//! programs built for a CPU with SSE2 (the i686 targets of Rust and Go, distributions
//! whose i686 baseline has it) run. glibc's own choices do not change: glibc 2.36 reads
//! the feature words only for the vendors it knows (Intel, AMD, Zhaoxin), so for
//! `GenuineTMx86` it enables no feature under either model and keeps its i686 string
//! functions (`ld.so --list-diagnostics` under morph shows every feature word zero).

/// A modeled CPU.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Model {
    /// Transmeta Crusoe TM5600: the P6 integer ISA, x87 and MMX.
    #[default]
    Tm5600,
    /// Transmeta Efficeon TM8600: the TM5600's ISA with FXSAVE/FXRSTOR, SSE and SSE2.
    Tm8600,
}

impl Model {
    /// Every model, by name (`--cpu`).
    pub const ALL: [(&'static str, Model); 2] = [("tm5600", Model::Tm5600), ("tm8600", Model::Tm8600)];

    /// Its name for `--cpu`.
    pub fn name(self) -> &'static str {
        match self {
            Model::Tm5600 => "tm5600",
            Model::Tm8600 => "tm8600",
        }
    }

    /// Whether it runs SSE, SSE2, `fxsave`/`fxrstor` and `ldmxcsr`/`stmxcsr`
    /// (`isa::Support::Sse`): the TM5600 raises `#UD` for them.
    pub fn has_sse(self) -> bool {
        self == Model::Tm8600
    }

    /// `CPUID.1:EDX`, also the auxiliary vector's `AT_HWCAP`.
    pub fn std_features_edx(self) -> u32 {
        match self {
            Model::Tm5600 => STD_FEATURES_EDX,
            Model::Tm8600 => STD_FEATURES_EDX | FXSR | SSE | SSE2,
        }
    }

    /// `CPUID.1:EAX`: family, model and stepping.
    pub fn signature(self) -> u32 {
        match self {
            Model::Tm5600 => SIGNATURE,
            Model::Tm8600 => (15 << 8) | (2 << 4) | 4,
        }
    }
}

impl std::str::FromStr for Model {
    type Err = String;
    fn from_str(s: &str) -> Result<Model, String> {
        Model::ALL.iter().find(|(n, _)| *n == s).map(|&(_, m)| m).ok_or_else(|| {
            let names: Vec<&str> = Model::ALL.iter().map(|(n, _)| *n).collect();
            format!("unknown CPU model {s:?} (one of: {})", names.join(", "))
        })
    }
}

impl std::fmt::Display for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// `CPUID.1:EDX` of the TM5600.
pub const STD_FEATURES_EDX: u32 = 0x0080_893f;
/// `CPUID.0x80000001:EDX` of the TM5600.
pub const EXT_FEATURES_EDX: u32 = 0x0081_813f;
/// Family 6, model 4, stepping 3.
pub const SIGNATURE: u32 = (6 << 8) | (4 << 4) | 3;
/// `CPUID.1:EDX` bits: FXSAVE/FXRSTOR, SSE, SSE2.
const FXSR: u32 = 1 << 24;
const SSE: u32 = 1 << 25;
const SSE2: u32 = 1 << 26;

const BRAND: &[u8; 48] = b"Transmeta(tm) Crusoe(tm) Processor TM5600\0\0\0\0\0\0\0";
const BRAND_TM8600: &[u8; 48] = b"Transmeta Efficeon(tm) Processor TM8600\0\0\0\0\0\0\0\0\0";

fn regs4(b: &[u8]) -> [u32; 4] {
    let w = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
    [w(0), w(4), w(8), w(12)]
}

/// The answer of `model` to `CPUID` with `EAX = leaf`: `[eax, ebx, ecx, edx]`.
pub fn cpuid(model: Model, leaf: u32) -> [u32; 4] {
    let (sig, features) = (model.signature(), model.std_features_edx());
    let ext = match model {
        Model::Tm5600 => EXT_FEATURES_EDX,
        Model::Tm8600 => EXT_FEATURES_EDX | FXSR,
    };
    match leaf {
        0 => {
            let v = b"GenuineTMx86";
            let w = |i: usize| u32::from_le_bytes([v[i], v[i + 1], v[i + 2], v[i + 3]]);
            [1, w(0), w(8), w(4)]
        }
        1 => [sig, 0, 0, features],
        0x8000_0000 => [0x8000_0006, 0, 0, 0],
        0x8000_0001 => [sig, 0, 0, ext],
        0x8000_0002..=0x8000_0004 => {
            let i = (leaf - 0x8000_0002) as usize * 16;
            let brand = if model == Model::Tm8600 { BRAND_TM8600 } else { BRAND };
            regs4(&brand[i..i + 16])
        }
        // L1: 64 KiB 4-way I (64-byte lines), 64 KiB 8-way D (32-byte lines): assumption
        // on associativity, sizes and line sizes from the boot log. The TM8600's: 128 KiB
        // I, 64 KiB D, its line sizes and ways assumed as the TM5600's.
        0x8000_0005 => {
            let i_kib = if model == Model::Tm8600 { 128 } else { 64 };
            [0, 0, (64 << 24) | (8 << 16) | (1 << 8) | 32, (i_kib << 24) | (4 << 16) | (1 << 8) | 64]
        }
        0x8000_0006 => {
            let l2_kib = if model == Model::Tm8600 { 1024 } else { 512 };
            [0, 0, (l2_kib << 16) | (4 << 12) | 128, 0]
        }
        // Beyond the highest leaf, Intel-style CPUs answer with the highest basic leaf.
        0x8000_0007..=0x8fff_ffff => [0; 4],
        _ => [sig, 0, 0, features],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_models_differ_only_by_what_the_tm8600_adds() {
        assert_eq!(cpuid(Model::Tm5600, 1), [0x643, 0, 0, 0x0080_893f]);
        assert_eq!(cpuid(Model::Tm8600, 1), [0xf24, 0, 0, 0x0780_893f]);
        assert_eq!(cpuid(Model::Tm5600, 0), cpuid(Model::Tm8600, 0));
        let brand = |m| (0x8000_0002..=0x8000_0004u32).flat_map(move |l| cpuid(m, l)).flat_map(u32::to_le_bytes);
        let tm8600: Vec<u8> = brand(Model::Tm8600).take_while(|&b| b != 0).collect();
        assert_eq!(tm8600, b"Transmeta Efficeon(tm) Processor TM8600");
        assert!(Model::Tm8600.has_sse() && !Model::Tm5600.has_sse());
        for (name, m) in Model::ALL {
            assert_eq!(name.parse::<Model>(), Ok(m));
            assert_eq!(m.to_string(), name);
        }
        assert!("tm5800".parse::<Model>().unwrap_err().contains("tm5600, tm8600"));
    }
}
