//! x87, MMX and SSE instructions, executed on the host FPU.
//!
//! The host has the same FPU, so the exact 80-bit semantics (rounding, precision
//! control, status word, denormals, transcendental results) come from running the
//! guest's own instruction on it with the guest's x87 state loaded around it:
//!
//! ```text
//! stub(rdi = host address of the memory operand, rsi = guest FXSAVE image, rdx = &eflags,
//!      rcx = morph's own control words, see `HostControl`, r8 = a general register's slot):
//!     load guest arithmetic flags (FCMOVcc reads them)   mov eax,[rdx]; and eax,0x8d5; push rax; popfq
//!     fxrstor [rsi]
//!     [mov r9d, [r8]]                                    (a general register operand)
//!     <the guest instruction, memory operand rewritten to [rdi], register to r9d>
//!     [mov [r8], r9d]
//!     fxsave  [rsi]
//!     store host flags (FCOMI writes ZF/PF/CF)         pushfq; pop rax; mov [rdx],eax
//!     fninit; fldcw [rcx]; ldmxcsr [rcx+4]             (morph's own FPU and SSE control back)
//!     ret
//! ```
//!
//! The guest's FXSAVE image carries an MXCSR too (a signal handler may rewrite it in its
//! frame, and sigreturn hands it back): `fxrstor` loads it into the host register, and
//! `fninit` does not reset it, so the stub restores morph's own before morph's code,
//! whose floating point would otherwise round as the guest chose or trap on exceptions
//! the guest unmasked.
//!
//! Stubs are encoded with iced-x86 in 64-bit mode, cached by their bytes, and live in a
//! small W^X code buffer. The caller has already checked the memory operand against
//! the guest page table and any pending unmasked exception (which becomes a guest
//! `SIGFPE`), so a stub never faults on the host.

use std::collections::HashMap;

use iced_x86::{Encoder, Instruction, Register};

use crate::state::{Cpu, FpuState};

const BUF_SIZE: usize = 256 * 1024;
const PROLOGUE: &[u8] = &[
    0x8b, 0x02, // mov eax, [rdx]
    0x25, 0xd5, 0x08, 0x00, 0x00, // and eax, 0x8d5 (arithmetic flags only)
    0x50, // push rax
    0x9d, // popfq
    0x0f, 0xae, 0x0e, // fxrstor [rsi]
];
const EPILOGUE: &[u8] = &[
    0x0f, 0xae, 0x06, // fxsave [rsi]
    0x9c, // pushfq
    0x58, // pop rax
    0x89, 0x02, // mov [rdx], eax
    0xdb, 0xe3, // fninit
    0xd9, 0x29, // fldcw [rcx]
    0x0f, 0xae, 0x51, 0x04, // ldmxcsr [rcx+4]
    0xc3, // ret
];

type StubFn = unsafe extern "C" fn(*mut u8, *mut FpuState, *mut u32, *const HostControl, *mut u64);

/// Around an instruction with a 32-bit general register operand (SSE's `movd`,
/// `cvtsi2sd`, `cvttsd2si`, `pmovmskb`, ...), which the stub runs on r9d: the guest
/// register's value is loaded from the slot r8 points at, and stored back after.
const GPR_IN: &[u8] = &[0x45, 0x8b, 0x08]; // mov r9d, [r8]
const GPR_OUT: &[u8] = &[0x45, 0x89, 0x08]; // mov [r8], r9d

/// Morph's own floating-point control state: the x87 control word and MXCSR it runs
/// with (the host ABI's defaults; read once from the host), put back whenever guest
/// state leaves the host FPU.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostControl {
    /// The x87 control word (`fldcw` operand; the high half is padding).
    pub fcw: u32,
    /// MXCSR.
    pub mxcsr: u32,
}

impl HostControl {
    /// The control state of the calling thread now.
    pub fn current() -> HostControl {
        let mut c = HostControl { fcw: 0, mxcsr: 0 };
        // SAFETY: fnstcw and stmxcsr only store to the two fields of a local struct.
        unsafe {
            std::arch::asm!(
                "fnstcw [{p}]",
                "stmxcsr [{p} + 4]",
                p = in(reg) &mut c as *mut HostControl,
                options(nostack, preserves_flags),
            );
        }
        c
    }

    /// Morph's own, as it was when first asked for (before any guest state was loaded).
    pub fn morph() -> &'static HostControl {
        static C: std::sync::OnceLock<HostControl> = std::sync::OnceLock::new();
        C.get_or_init(HostControl::current)
    }
}

/// What an instruction run on the host FPU does to the x87 instruction pointer (FIP,
/// [`FpuState::fip`]), as the hardware does it: see [`fip_effect`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FipEffect {
    /// Leaves it: the control instructions (`fnclex`, `fldcw`, `fnstcw`, `fnstsw`,
    /// `fwait`, and `fnstenv`, which stores it), MMX and SSE.
    Keep,
    /// Clears it: `fninit` (and `fnsave`, after storing it).
    Clear,
    /// Makes it the instruction's own address: every other x87 instruction.
    Here,
    /// Loads it from the image the instruction reads: `fldenv`, `frstor`.
    Load,
}

/// What `ins` does to FIP (Intel SDM vol. 1 § 8.1.8: the pointers are not updated by the
/// control instructions; MMX instructions leave them too, measured on the host).
pub fn fip_effect(ins: &Instruction) -> FipEffect {
    use iced_x86::Mnemonic as M;
    match ins.mnemonic() {
        M::Fninit | M::Finit | M::Fnsave | M::Fsave => FipEffect::Clear,
        M::Fldenv | M::Frstor => FipEffect::Load,
        M::Fnclex | M::Fclex | M::Fldcw | M::Fnstcw | M::Fstcw | M::Fnstsw | M::Fstsw | M::Wait => FipEffect::Keep,
        // The 8087's interrupt and 287's mode controls, no-ops since the 387.
        M::Feni | M::Fneni | M::Fdisi | M::Fndisi | M::Fsetpm | M::Fnsetpm => FipEffect::Keep,
        M::Fnstenv | M::Fstenv | M::Fxsave | M::Fxrstor => FipEffect::Keep,
        _ if crate::isa::support(ins) == crate::isa::Support::Fpu => FipEffect::Here,
        _ => FipEffect::Keep,
    }
}

/// Stores `cpu`'s x87/MMX state back into [`Cpu::fpu`] if translated code left it in the
/// host FPU ([`Cpu::fpu_in_host`]), and gives the host FPU back to morph.
#[inline]
pub fn fpu_from_host(cpu: &mut Cpu) {
    if cpu.fpu_in_host {
        take_from_host(&mut cpu.fpu);
        cpu.fpu_in_host = false;
    }
}

/// Stores the guest's x87/MMX state, which the host FPU holds, into `fpu`, and puts
/// morph's own control state back (`fninit`, morph's control word and MXCSR), as a
/// stub's epilogue does: what translated code's exit used to do at every exit, done
/// only when the interpreter or the OS layer needs the state. FIP and FOP are the guest's,
/// which translated code kept in the image's shadow (the host's are an address in
/// translated code and a host encoding's opcode: [`FpuState::unpark_pointers`]).
fn take_from_host(fpu: &mut FpuState) {
    let host = HostControl::morph();
    // SAFETY: fxsave stores 512 bytes to `fpu`, a 16-byte aligned 512-byte image that we
    // borrow mutably; fninit, fldcw and ldmxcsr change only the host FPU's state, which
    // holds the guest's until here (morph's own code uses no x87 and the default MXCSR,
    // put back here).
    unsafe {
        std::arch::asm!(
            "fxsave [{img}]",
            "fninit",
            "fldcw [{c}]",
            "ldmxcsr [{c} + 4]",
            img = in(reg) fpu.0.as_mut_ptr(),
            c = in(reg) host as *const HostControl,
            options(nostack, preserves_flags),
        );
    }
    fpu.unpark_pointers();
}

/// The MXCSR bits this host implements (Linux's `mxcsr_feature_mask`: the mask an
/// `FXSAVE` reports, or 0xFFBF if it reports none): a guest MXCSR from a signal frame is
/// cut to these bits, as Linux does before it loads one.
pub fn mxcsr_feature_mask() -> u32 {
    static M: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    *M.get_or_init(|| {
        #[repr(C, align(16))]
        struct Image([u8; 512]);
        let mut img = Image([0; 512]);
        // SAFETY: fxsave stores 512 bytes to a 16-byte aligned buffer of that size.
        unsafe { std::arch::asm!("fxsave [{}]", in(reg) img.0.as_mut_ptr(), options(nostack, preserves_flags)) };
        match u32::from_le_bytes([img.0[28], img.0[29], img.0[30], img.0[31]]) {
            0 => 0xffbf,
            m => m,
        }
    })
}

/// Errors building a stub (an instruction iced cannot re-encode).
#[derive(Debug, thiserror::Error)]
#[error("cannot re-encode {0} for the host FPU")]
pub struct StubError(String);

/// A cache of host stubs, one per distinct guest x87/MMX instruction form.
pub struct HostFpu {
    buf: *mut u8,
    used: usize,
    stubs: HashMap<Vec<u8>, usize>,
    /// The stub of each normalized instruction, so hot x87 code is not re-encoded.
    by_instruction: rustc_hash::FxHashMap<Instruction, usize>,
    /// Made at the first x87 instruction: building iced-x86's encoder tables is a
    /// good part of a start-up, and most programs run no x87 code.
    encoder: Option<Encoder>,
}

impl HostFpu {
    /// An empty stub cache.
    pub fn new() -> Self {
        HostControl::morph(); // read before any guest state reaches the host FPU
        // SAFETY: a fresh private anonymous mapping; the result is checked below.
        let p = unsafe {
            libc::mmap(std::ptr::null_mut(), BUF_SIZE, libc::PROT_READ, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0)
        };
        assert!(p != libc::MAP_FAILED, "mmap of the x87 stub buffer failed");
        HostFpu {
            buf: p.cast(),
            used: 0,
            stubs: HashMap::new(),
            by_instruction: rustc_hash::FxHashMap::default(),
            encoder: None,
        }
    }

    /// Runs `ins` (an x87, MMX or SSE instruction decoded in 32-bit mode) on the host FPU
    /// with `fpu` loaded. `mem` is the host address of its memory operand (checked by the
    /// caller; the implicit `[edi]` of `maskmovq`/`maskmovdqu` too), or null. `gpr` is the
    /// operand index of a 32-bit general register operand and a slot holding the
    /// register's value, which holds the value the instruction left in it afterwards.
    /// `eflags` is read for FCMOVcc and written for FCOMI and COMIS*.
    ///
    /// # Safety
    /// `mem` must be null (no memory operand) or valid for the operand's size, for
    /// reading and, if the instruction stores, for writing.
    pub unsafe fn exec(
        &mut self,
        ins: &Instruction,
        mem: *mut u8,
        gpr: Option<(u32, &mut u64)>,
        fpu: &mut FpuState,
        eflags: &mut u32,
    ) -> Result<(), StubError> {
        let mut host = *ins;
        let mut slot = 0u64;
        let with_gpr = gpr.is_some();
        let slot_ptr = match gpr {
            Some((i, v)) => {
                host.set_op_register(i, Register::R9D);
                v as *mut u64
            }
            None => &mut slot as *mut u64,
        };
        if matches!(ins.op0_kind(), iced_x86::OpKind::MemorySegEDI | iced_x86::OpKind::MemorySegDI) {
            // `mem` is the host address of the operand, its segment's base included: a
            // segment override left on the host instruction would add the host's own
            // segment base to it (FS, GS: morph's thread data).
            host.set_op0_kind(iced_x86::OpKind::MemorySegRDI);
            host.set_segment_prefix(Register::None);
        }
        if ins.op_kinds().any(|k| k == iced_x86::OpKind::Memory) {
            host.set_memory_base(Register::RDI);
            host.set_memory_index(Register::None);
            host.set_memory_index_scale(1);
            host.set_memory_displacement64(0);
            host.set_memory_displ_size(0);
            host.set_segment_prefix(Register::None);
        }
        host.set_ip(0);
        let off = match self.by_instruction.get(&host) {
            Some(&o) => o,
            None => {
                let encoder = self.encoder.get_or_insert_with(|| Encoder::new(64));
                encoder.encode(&host, 0).map_err(|e| StubError(format!("{ins} ({e})")))?;
                let mut bytes = encoder.take_buffer();
                if with_gpr {
                    bytes = [GPR_IN, &bytes, GPR_OUT].concat();
                }
                let o = match self.stubs.get(&bytes) {
                    Some(&o) => o,
                    None => self.emit(bytes)?,
                };
                self.by_instruction.insert(host, o);
                o
            }
        };
        // SAFETY: `off` is the start of a complete stub in the executable buffer; the
        // stub follows the C ABI (clobbers rax and flags only, restores the ABI FPU
        // state) and touches only `mem` (checked by the caller), `fpu` and `eflags`.
        unsafe {
            let f: StubFn = std::mem::transmute(self.buf.add(off));
            f(mem, fpu, eflags, HostControl::morph(), slot_ptr);
        }
        Ok(())
    }

    fn emit(&mut self, body: Vec<u8>) -> Result<usize, StubError> {
        let size = PROLOGUE.len() + body.len() + EPILOGUE.len();
        if self.used + size > BUF_SIZE {
            self.stubs.clear(); // start over: stubs are cheap to rebuild
            self.by_instruction.clear();
            self.used = 0;
        }
        let off = self.used;
        // SAFETY: toggling protection on our own buffer, then writing inside its bounds.
        unsafe {
            libc::mprotect(self.buf.cast(), BUF_SIZE, libc::PROT_READ | libc::PROT_WRITE);
            let mut p = self.buf.add(off);
            for part in [PROLOGUE, &body, EPILOGUE] {
                std::ptr::copy_nonoverlapping(part.as_ptr(), p, part.len());
                p = p.add(part.len());
            }
            libc::mprotect(self.buf.cast(), BUF_SIZE, libc::PROT_READ | libc::PROT_EXEC);
        }
        self.used += size;
        self.stubs.insert(body, off);
        Ok(off)
    }
}

impl Default for HostFpu {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for HostFpu {
    fn drop(&mut self) {
        // SAFETY: our own mapping; no stub runs after drop.
        unsafe {
            libc::munmap(self.buf.cast(), BUF_SIZE);
        }
    }
}
