//! Guest IA-32 register state.

use std::fmt;

/// EFLAGS bits.
pub mod flags {
    /// Carry.
    pub const CF: u32 = 1 << 0;
    /// Always-one reserved bit.
    pub const FIXED: u32 = 1 << 1;
    /// Parity (of the low byte of the result).
    pub const PF: u32 = 1 << 2;
    /// Auxiliary carry (out of bit 3).
    pub const AF: u32 = 1 << 4;
    /// Zero.
    pub const ZF: u32 = 1 << 6;
    /// Sign.
    pub const SF: u32 = 1 << 7;
    /// Trap (single step).
    pub const TF: u32 = 1 << 8;
    /// Interrupt enable (always set in user mode).
    pub const IF: u32 = 1 << 9;
    /// Direction.
    pub const DF: u32 = 1 << 10;
    /// Overflow.
    pub const OF: u32 = 1 << 11;
    /// Nested task.
    pub const NT: u32 = 1 << 14;
    /// Resume: set in the EFLAGS image the CPU pushes for a fault (never in the running
    /// flags of user code here: it only suppresses instruction breakpoints).
    pub const RF: u32 = 1 << 16;
    /// Alignment check.
    pub const AC: u32 = 1 << 18;
    /// CPUID available.
    pub const ID: u32 = 1 << 21;
    /// The six arithmetic flags.
    pub const ARITH: u32 = CF | PF | AF | ZF | SF | OF;
    /// What `popf` may change in user mode (IOPL 0).
    pub const USER_WRITABLE: u32 = ARITH | TF | DF | NT | AC | ID;
}

/// General-purpose register numbers, in the encoding order.
pub mod reg {
    /// EAX.
    pub const EAX: usize = 0;
    /// ECX.
    pub const ECX: usize = 1;
    /// EDX.
    pub const EDX: usize = 2;
    /// EBX.
    pub const EBX: usize = 3;
    /// ESP.
    pub const ESP: usize = 4;
    /// EBP.
    pub const EBP: usize = 5;
    /// ESI.
    pub const ESI: usize = 6;
    /// EDI.
    pub const EDI: usize = 7;
}

/// Segment register numbers, in the encoding order.
pub mod seg {
    /// ES.
    pub const ES: usize = 0;
    /// CS.
    pub const CS: usize = 1;
    /// SS.
    pub const SS: usize = 2;
    /// DS.
    pub const DS: usize = 3;
    /// FS.
    pub const FS: usize = 4;
    /// GS.
    pub const GS: usize = 5;
}

/// The user segments of the kernel's GDT a process sees: its code and data selectors,
/// the first TLS entry, and (64-bit kernels) the 64-bit code segment and the per-CPU
/// segment. They differ between a 32-bit kernel and a 64-bit one running a 32-bit
/// process (the compatibility segments).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UserSegments {
    /// `__USER_CS` (32-bit kernel) or `__USER32_CS` (64-bit kernel).
    pub cs: u16,
    /// `__USER_DS`.
    pub ds: u16,
    /// `GDT_ENTRY_TLS_MIN`: the first entry `set_thread_area` hands out.
    pub tls_min: usize,
    /// `__USER_CS` of a 64-bit kernel (a 64-bit code segment; readable, so a 32-bit
    /// process may load it into a data segment register); 0: none.
    pub cs64: u16,
    /// `__CPUNODE_SEG` of a 64-bit kernel: a read-only data segment whose limit is the
    /// CPU and node number (what `lsl` reads in the vDSO's `getcpu`); 0: none.
    pub cpunode: u16,
}

impl UserSegments {
    /// A 32-bit process on a 64-bit kernel, as on this project's hosts: CS 0x23, data
    /// 0x2b, 64-bit code 0x33, TLS entries 12–14, the per-CPU segment 0x7b.
    pub const COMPAT: UserSegments = UserSegments { cs: 0x23, ds: 0x2b, tls_min: 12, cs64: 0x33, cpunode: 0x7b };
    /// A 32-bit kernel (Linux 2.6.12's i386): CS 0x73, data 0x7b, TLS entries 6–8.
    pub const I386: UserSegments = UserSegments { cs: 0x73, ds: 0x7b, tls_min: 6, cs64: 0, cpunode: 0 };
}

/// A segment descriptor of the GDT as user mode sees it (`lar`, `lsl`, `verr`, `verw`
/// and segment loads): only descriptors of privilege level 3 are ever visible, the
/// kernel's fail every check a user-mode instruction makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Descriptor {
    /// The access byte: P, DPL, S and the type.
    pub access: u8,
    /// The flags nibble: G, D/B, L, AVL.
    pub flags: u8,
    /// The 20-bit limit, in bytes or (G) pages.
    pub limit: u32,
    /// The base.
    pub base: u32,
}

impl Descriptor {
    /// A flat segment (base 0, 4 GiB) with access byte `access` and flags `flags`.
    const fn flat(access: u8, flags: u8) -> Self {
        Descriptor { access, flags, limit: 0xfffff, base: 0 }
    }
    /// A code or data segment (not a system descriptor).
    pub fn is_segment(&self) -> bool {
        self.access & 0x10 != 0
    }
    /// A code segment.
    pub fn is_code(&self) -> bool {
        self.access & 0x08 != 0
    }
    /// Present.
    pub fn present(&self) -> bool {
        self.access & 0x80 != 0
    }
    /// Readable through a data segment register: data, or readable code.
    pub fn readable(&self) -> bool {
        self.is_segment() && (!self.is_code() || self.access & 0x02 != 0)
    }
    /// Writable: writable data.
    pub fn writable(&self) -> bool {
        self.is_segment() && !self.is_code() && self.access & 0x02 != 0
    }
    /// The limit in bytes (what `lsl` loads).
    pub fn byte_limit(&self) -> u32 {
        if self.flags & 0x8 != 0 { (self.limit << 12) | 0xfff } else { self.limit }
    }
    /// The access rights `lar` loads: the descriptor's second doubleword from the access
    /// byte to the flags (the limit's bits 19:16 included, as the hosts measured do).
    pub fn rights(&self) -> u32 {
        u32::from(self.flags) << 20 | (self.limit >> 16 & 0xf) << 16 | u32::from(self.access) << 8
    }
}

/// Number of TLS GDT entries.
pub const TLS_ENTRIES: usize = 3;

/// A TLS segment descriptor as `set_thread_area` installs it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TlsDescriptor {
    /// Segment base.
    pub base: u32,
    /// Segment limit (in bytes or, with G in `flags`, pages).
    pub limit: u32,
    /// The descriptor's access byte as Linux builds it from `struct user_desc` (P,
    /// DPL 3, S, the type from `contents` and `read_exec_only`, accessed); 0 for an
    /// empty entry.
    pub access: u8,
    /// Its flags nibble (G from `limit_in_pages`, D/B from `seg_32bit`, AVL from
    /// `useable`).
    pub flags: u8,
}

impl TlsDescriptor {
    /// Whether the entry is in use (Linux installs only present segments there).
    pub fn in_use(&self) -> bool {
        self.access != 0
    }
}

/// The x87/MMX state, kept in the 512-byte `FXSAVE` format so it can be loaded into the
/// host FPU around a guest x87 instruction (see `x87.rs`).
#[derive(Clone)]
#[repr(C, align(16))]
pub struct FpuState(pub [u8; 512]);

impl FpuState {
    /// The state after `FNINIT` (control word 0x037F, empty stack, default MXCSR).
    pub fn new() -> Self {
        let mut s = FpuState([0; 512]);
        s.set_fcw(0x037f);
        s.0[24..28].copy_from_slice(&0x1f80u32.to_le_bytes()); // MXCSR, kept at the ABI default
        s
    }
    /// Control word.
    pub fn fcw(&self) -> u16 {
        u16::from_le_bytes([self.0[0], self.0[1]])
    }
    /// Sets the control word.
    pub fn set_fcw(&mut self, v: u16) {
        self.0[0..2].copy_from_slice(&v.to_le_bytes());
    }
    /// Status word (with TOP).
    pub fn fsw(&self) -> u16 {
        u16::from_le_bytes([self.0[2], self.0[3]])
    }
    /// MXCSR.
    pub fn mxcsr(&self) -> u32 {
        u32::from_le_bytes([self.0[24], self.0[25], self.0[26], self.0[27]])
    }
    /// Sets MXCSR.
    pub fn set_mxcsr(&mut self, v: u32) {
        self.0[24..28].copy_from_slice(&v.to_le_bytes());
    }
    /// Whether an unmasked exception is pending (status word ES bit).
    pub fn pending_exception(&self) -> bool {
        let unmasked = !self.fcw() & self.fsw() & 0x3f;
        unmasked != 0
    }
    /// The last x87 instruction pointer (FIP): the guest address of the last x87
    /// instruction other than a control one (`fninit`, `fnclex`, `fldcw`, `fnstcw`,
    /// `fnstsw`, `fnstenv`, `fldenv`, `fnsave`, `frstor`, `fwait`), which `fnstenv`,
    /// `fnsave`, `fxsave` and a signal frame show. The host FPU, which runs the guest's
    /// x87 instructions, records its own address of them: while translated code holds
    /// the state, the guest's is kept apart ([`FpuState::park_pointers`]).
    pub fn fip(&self) -> u32 {
        self.word(FIP)
    }
    /// Sets FIP.
    pub fn set_fip(&mut self, v: u32) {
        self.0[FIP..FIP + 4].copy_from_slice(&v.to_le_bytes());
    }
    /// The last x87 data pointer (FDP, its low 32 bits).
    pub fn fdp(&self) -> u32 {
        self.word(FDP)
    }
    /// Sets FDP.
    pub fn set_fdp(&mut self, v: u32) {
        self.0[FDP..FDP + 4].copy_from_slice(&v.to_le_bytes());
    }
    /// The data selector of the last x87 memory operand (FDS) as the interpreter keeps it
    /// (0: not kept, the process's DS then; the host's `fxsave` stores its own there).
    pub fn fds(&self) -> u16 {
        u16::from_le_bytes([self.0[FDS], self.0[FDS + 1]])
    }
    /// Sets FDS.
    pub fn set_fds(&mut self, v: u16) {
        self.0[FDS..FDS + 2].copy_from_slice(&v.to_le_bytes());
    }
    /// The last x87 opcode (FOP: the low three bits of the first opcode byte, then the
    /// ModR/M byte), which hosts update for every x87 instruction other than a control
    /// one or only for one that raises an unmasked exception.
    pub fn fop(&self) -> u16 {
        u16::from_le_bytes([self.0[FOP], self.0[FOP + 1]])
    }
    /// Sets FOP.
    pub fn set_fop(&mut self, v: u16) {
        self.0[FOP..FOP + 2].copy_from_slice(&v.to_le_bytes());
    }
    fn word(&self, at: usize) -> u32 {
        u32::from_le_bytes([self.0[at], self.0[at + 1], self.0[at + 2], self.0[at + 3]])
    }
    /// Before the host FPU loads this image for translated code: the guest's FIP and FOP
    /// move to the image's software area ([`X87_SHADOW`]: FIP, FOP, FOP as loaded), and
    /// the image's own become 0, so that what the host's `fxsave` later stores there is
    /// the host's alone: 0 if it ran no x87 instruction, else the address in translated
    /// code of the last one (and, where the host set one, the opcode of its host
    /// encoding). Translated code, at the end of each run of x87 instructions, and the
    /// fault handler, for a fault inside one, write the guest's FIP and FOP of that
    /// instruction to the shadow; [`FpuState::unpark_pointers`] puts them back.
    pub fn park_pointers(&mut self) {
        let (fip, fop) = (self.fip(), self.fop());
        let s = X87_SHADOW;
        self.0[s..s + 4].copy_from_slice(&fip.to_le_bytes());
        self.0[s + 4..s + 6].copy_from_slice(&fop.to_le_bytes());
        self.0[s + 6..s + 8].copy_from_slice(&fop.to_le_bytes());
        // FDP too, for a host whose `fxsave` hides it (translated code stores the guest's
        // after each x87 memory operand there: `runtime::x87_fdp`).
        let (fdp, fds) = (self.fdp(), self.fds());
        self.0[s + 8..s + 12].copy_from_slice(&fdp.to_le_bytes());
        self.0[s + 12..s + 14].copy_from_slice(&fds.to_le_bytes());
        self.set_fip(0);
        self.set_fop(0);
    }
    /// After the host saved this image from its FPU (or did not load it at all): FIP
    /// the guest's, which the shadow holds ([`FpuState::park_pointers`]); FOP the
    /// shadow's (what translated code's last x87 instruction wrote there, or the guest's
    /// as parked) on a host that updates FOP at every x87 instruction
    /// ([`host_fop_always`]), else the shadow's if the host set one (an x87
    /// instruction ran and raised an unmasked exception), else the guest's as it was
    /// loaded (`fninit` makes that 0 too).
    pub fn unpark_pointers(&mut self) {
        let s = X87_SHADOW;
        self.0.copy_within(s..s + 4, FIP);
        let from = if self.fop() != 0 || host_fop_always() { s + 4 } else { s + 6 };
        self.0.copy_within(from..from + 2, FOP);
        // The host's FDP is the operand's host address, whose low half is the guest's
        // (the window is 4 GiB-aligned), where its `fxsave` shows it; else the shadow's.
        // FDS, which the host's `fxsave` does not keep: the shadow's where translated
        // code keeps it (with FDP: 0, DS, after its memory operands, none of which has a
        // segment override), else the one parked if FDP did not move, 0 if it did.
        if host_fxsave_hides_pointers() {
            self.0.copy_within(s + 8..s + 14, FDP);
        } else {
            let moved = self.0[FDP..FDP + 4] != self.0[s + 8..s + 12];
            let fds = if moved { 0 } else { u16::from_le_bytes([self.0[s + 12], self.0[s + 13]]) };
            self.set_fds(fds);
        }
    }
}

/// How the host keeps the x87 pointers, probed once with `fninit; fld1; fnstenv;
/// fxsave`: the guest's follow the host's rules, as every other result of an
/// instruction the host runs.
struct HostPointers {
    /// The host updates the opcode register (FOP) at every x87 instruction other than a
    /// control one, as `fnstenv` shows it (AMD's and older Intel cores; Intel cores with
    /// FOP updated only on unmasked exceptions do not).
    fop_always: bool,
    /// The host's `fxsave` stores FIP, FOP and FDP only while an unmasked exception is
    /// pending (AMD's; Intel's store them always).
    fxsave_hides: bool,
}

fn host_pointers() -> &'static HostPointers {
    static P: std::sync::OnceLock<HostPointers> = std::sync::OnceLock::new();
    P.get_or_init(|| {
        #[repr(C, align(16))]
        struct Image([u8; 512]);
        let mut img = Image([0; 512]);
        let mut env = [0u32; 7];
        let mut cw = 0u16;
        // SAFETY: fnstcw, fnstenv and fxsave store 2, 28 and 512 bytes to locals of those
        // sizes (the last 16-byte aligned); fninit and fld1 change only the x87 state,
        // which the final fninit and fldcw put back as morph keeps it (empty, its own
        // control word). fnstenv leaves FIP, FOP and FDP as they were for fxsave.
        unsafe {
            std::arch::asm!(
                "fnstcw [{cw}]",
                "fninit",
                "fld1",
                "fnstenv [{env}]",
                "fxsave [{img}]",
                "fninit",
                "fldcw [{cw}]",
                env = in(reg) env.as_mut_ptr(),
                img = in(reg) img.0.as_mut_ptr(),
                cw = in(reg) &mut cw as *mut u16,
                options(nostack, preserves_flags),
            );
        }
        HostPointers {
            // FOP sits in bits 16–26 of the environment's fourth word; `fld1` is D9 E8.
            fop_always: (env[4] >> 16) & 0x7ff == 0x1e8,
            fxsave_hides: img.0[FIP..FIP + 4] == [0; 4],
        }
    })
}

/// Whether the host updates FOP at every x87 instruction other than a control one
/// ([`HostPointers::fop_always`]). (`fxsave` cannot tell: AMD's stores FOP, FIP and FDP
/// only while an exception is pending.)
pub fn host_fop_always() -> bool {
    host_pointers().fop_always
}

/// Whether the host's `fxsave` hides the x87 pointers unless an exception is pending
/// ([`HostPointers::fxsave_hides`]): the kernel saves a signal frame's state with it,
/// so a frame, and the state its sigreturn restores, show them zero then.
pub fn host_fxsave_hides_pointers() -> bool {
    host_pointers().fxsave_hides
}

/// The FOP of the x87 instruction whose bytes start `bytes` (prefixes skipped): the low
/// three bits of its opcode byte (0xD8–0xDF), then its ModR/M byte; `None` for anything
/// else.
pub fn x87_opcode(bytes: &[u8]) -> Option<u16> {
    let at = bytes
        .iter()
        .position(|b| !matches!(b, 0x26 | 0x2e | 0x36 | 0x3e | 0x64 | 0x65 | 0x66 | 0x67 | 0xf0 | 0xf2 | 0xf3))?;
    let (&op, &modrm) = (bytes.get(at)?, bytes.get(at + 1)?);
    (0xd8..=0xdf).contains(&op).then(|| (u16::from(op & 7) << 8) | u16::from(modrm))
}

/// Offsets of FOP, FIP and FDP (their low 32 bits) in the FXSAVE image.
const FOP: usize = 6;
const FIP: usize = 8;
const FDP: usize = 16;
const FDS: usize = 20;

/// Offset in the FXSAVE image of the guest's x87 pointers while translated code holds
/// the state ([`FpuState::park_pointers`]): FIP (4 bytes), FOP (2), FOP as loaded (2),
/// FDP (4), FDS (2).
/// Bytes 464–511 are left to software (`fxsave` never writes them), and a guest never
/// sees them (a signal frame's image and a 32-bit `fxsave` stop at byte 288).
pub const X87_SHADOW: usize = 464;

impl Default for FpuState {
    fn default() -> Self {
        Self::new()
    }
}

/// The architectural state of one guest CPU (one thread of one process).
#[derive(Clone)]
pub struct Cpu {
    /// EAX, ECX, EDX, EBX, ESP, EBP, ESI, EDI.
    pub gpr: [u32; 8],
    /// Instruction pointer.
    pub eip: u32,
    /// EFLAGS, with all arithmetic flags materialized.
    pub eflags: u32,
    /// Segment selectors ES, CS, SS, DS, FS, GS.
    pub sel: [u16; 6],
    /// Segment bases (non-zero only for FS/GS TLS segments).
    pub seg_base: [u32; 6],
    /// The TLS GDT entries.
    pub tls: [TlsDescriptor; TLS_ENTRIES],
    /// The kernel's user segments (which selectors the GDT has for this process).
    pub segs: UserSegments,
    /// x87/MMX state.
    pub fpu: Box<FpuState>,
    /// The x87/MMX state is in the host FPU, not in `fpu`: translated code left it there
    /// when it returned to the dispatcher (`morph_dbt` switches it lazily), and
    /// [`crate::x87::fpu_from_host`] stores it back before anything reads or writes `fpu`. Only
    /// ever set while an engine runs this CPU: the engine takes it back before it returns.
    pub fpu_in_host: bool,
    /// Guest instructions retired (drives the virtual time stamp counter).
    pub icount: u64,
    /// The last exception taken: what Linux keeps per thread (`trap_nr`, `error_code`,
    /// `cr2`) and writes into every signal frame's `sigcontext`.
    pub trap: Trap,
    /// The modeled CPU: what `CPUID` answers and whether SSE runs (`--cpu`).
    pub model: crate::cpuid::Model,
}

/// An exception's vector, error code and (for `#PF`) faulting address, as the OS layer
/// records them when it turns the exception into a signal.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Trap {
    /// The vector (`#DE` 0, `#DB` 1, `#BP` 3, `#OF` 4, `#BR` 5, `#UD` 6, `#GP` 13, `#PF`
    /// 14, `#MF` 16).
    pub vector: u32,
    /// The error code pushed by the CPU (0 for vectors without one).
    pub error_code: u32,
    /// CR2: the linear address of the last page fault.
    pub cr2: u32,
}

impl Cpu {
    /// A CPU in the state Linux gives a new i386 process (registers zero, flags 0x202),
    /// with a 64-bit kernel's compatibility segments.
    pub fn new() -> Self {
        Self::with_segments(UserSegments::COMPAT)
    }

    /// A new process's CPU with the kernel's user segments `segs`.
    pub fn with_segments(segs: UserSegments) -> Self {
        Cpu {
            gpr: [0; 8],
            eip: 0,
            eflags: flags::FIXED | flags::IF,
            sel: [segs.ds, segs.cs, segs.ds, segs.ds, 0, 0],
            segs,
            seg_base: [0; 6],
            tls: [TlsDescriptor::default(); TLS_ENTRIES],
            fpu: Box::new(FpuState::new()),
            fpu_in_host: false,
            icount: 0,
            trap: Trap::default(),
            model: crate::cpuid::Model::default(),
        }
    }

    /// The GDT descriptor `selector` names, as user mode sees it: `None` for the null
    /// selector, an LDT selector (no process has an LDT), an entry beyond the table or
    /// one of the kernel's.
    pub fn descriptor(&self, selector: u16) -> Option<Descriptor> {
        let index = selector >> 3;
        if selector & 4 != 0 || index == 0 {
            return None;
        }
        let s = &self.segs;
        let tls = usize::from(index).wrapping_sub(s.tls_min);
        if index == s.cs >> 3 {
            Some(Descriptor::flat(0xfb, 0xc))
        } else if index == s.ds >> 3 {
            Some(Descriptor::flat(0xf3, 0xc))
        } else if s.cs64 != 0 && index == s.cs64 >> 3 {
            Some(Descriptor::flat(0xfb, 0xa))
        } else if s.cpunode != 0 && index == s.cpunode >> 3 {
            // Read-only, expand-down, byte-granular; the limit is (node << 12) | CPU:
            // one CPU, node 0.
            Some(Descriptor { access: 0xf5, flags: 0x4, limit: 0, base: 0 })
        } else if tls < TLS_ENTRIES && self.tls[tls].in_use() {
            let d = &self.tls[tls];
            Some(Descriptor { access: d.access, flags: d.flags, limit: d.limit & 0xfffff, base: d.base })
        } else {
            None
        }
    }

    /// Loads a segment register from a selector, as `mov sreg, r/m16` does in user mode.
    /// Returns false (the caller raises `#GP`) if the selector is not usable: not a
    /// readable segment (DS, ES, FS, GS; the null selector is), not a writable data
    /// segment of privilege 3 (SS), not present, or CS. A based segment in SS is
    /// refused too: morph's stack accesses add no SS base.
    pub fn load_segment(&mut self, sreg: usize, selector: u16) -> bool {
        let base = if selector & !3 == 0 {
            // The null selector: allowed in DS/ES/FS/GS, not in SS/CS.
            if sreg == seg::SS || sreg == seg::CS {
                return false;
            }
            0
        } else {
            let Some(d) = self.descriptor(selector) else { return false };
            let ok = match sreg {
                seg::CS => false,
                seg::SS => selector & 3 == 3 && d.writable() && d.base == 0,
                _ => d.readable(),
            };
            if !ok || !d.present() {
                return false;
            }
            d.base
        };
        self.sel[sreg] = selector;
        self.seg_base[sreg] = base;
        true
    }

    /// Whether an access through segment register `sreg` is allowed by the selector
    /// it holds (`write`: a write): not through the null selector, and a write only
    /// through a writable data segment (code segments and the per-CPU segment are
    /// read-only). Limits are not checked (every segment morph lets a process load
    /// is flat, or a TLS segment whose limit glibc makes 4 GiB).
    pub fn segment_usable(&self, sreg: usize, write: bool) -> bool {
        let sel = self.sel[sreg];
        if sel == self.segs.ds {
            return true;
        }
        if sel & !3 == 0 {
            return false;
        }
        !write || self.descriptor(sel).is_some_and(|d| d.writable())
    }

    /// Whether the engines run this CPU one instruction at a time through the
    /// interpreter's checks (`Interp::run_careful`): EFLAGS.TF (single steps) or AC
    /// (alignment checks) set, or DS, ES or SS not flat, none of which the pre-decoded
    /// forms or translated code check.
    #[inline]
    pub fn careful(&self) -> bool {
        self.eflags & (flags::TF | flags::AC) != 0 || !self.flat_segments()
    }

    /// Whether DS, ES and SS all hold the flat data selector, as in every process but
    /// one that loaded another: translated code and the interpreter's pre-decoded forms
    /// assume it (the engines run one instruction at a time through the interpreter's
    /// general path otherwise).
    #[inline]
    pub fn flat_segments(&self) -> bool {
        let ds = self.segs.ds;
        self.sel[seg::DS] == ds && self.sel[seg::ES] == ds && self.sel[seg::SS] == ds
    }
}

impl Default for Cpu {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for Cpu {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names = ["eax", "ecx", "edx", "ebx", "esp", "ebp", "esi", "edi"];
        for (n, v) in names.iter().zip(self.gpr) {
            write!(f, "{n}={v:08x} ")?;
        }
        write!(f, "eip={:08x} eflags={:08x} gs={:04x}", self.eip, self.eflags, self.sel[seg::GS])
    }
}
