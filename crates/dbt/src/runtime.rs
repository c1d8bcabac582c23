//! The runtime that translated code runs in: the state block, register assignment,
//! entry and exit trampolines, the fallback helper call, and the host fault handler.
//!
//! ## Register assignment (host x86-64 ← guest IA-32)
//!
//! | host | guest | note |
//! |---|---|---|
//! | eax ecx edx ebx ebp esi edi | the same registers | so most instructions re-encode as they are |
//! | r12d | esp | the host keeps its own stack in rsp |
//! | r14d | VA of the current block's page | every EIP-dependent value is derived from it; constant along chains (they stay in the page) |
//! | r15 | `*mut JitState` | |
//! | r11 | jump-cache hits since entry in the low 24 bits, guest instructions completed above them | counted with flag-free `lea`s (a counter in memory put a store-to-load chain on every return; a hit is `lea r11, [r11 + 1]`) |
//! | r10 | the budget pointer: backward chains and jump-cache hits step it through a readable region towards its guard page, whose fault ends the run ([`budget_guard`]) | stepped with a flag-free `lea` |
//! | r13, r8, r9 | scratch | |
//! | rsp | the return stack ([`crate::ras`]) | host call/return pairs for guest call/return; the dispatcher's rsp is in the state block |
//! | gs base | the process window | a guest address `a` is `gs:[a]` with a 32-bit address size |
//! | EFLAGS | guest CF PF AF ZF SF OF DF | live across instructions |
//!
//! Nothing in a translation depends on where the process window is: switching process
//! only reloads the GS base.

use std::cell::Cell;

use iced_x86::code_asm::{AsmRegister32, eax, ebp, ebx, ecx, edi, edx, esi, r12d};

/// The state shared between the dispatcher and translated code.
#[repr(C)]
pub struct JitState {
    /// Guest registers (EAX..EDI).
    pub gpr: [u32; 8],
    /// Guest EIP at exit.
    pub eip: u32,
    /// Guest flags (arithmetic and DF) in and out.
    pub eflags: u32,
    /// VA of the page of the block being executed (r14d).
    pub page_va: u32,
    /// Why translated code returned (`EXIT_*`).
    pub exit: u32,
    /// r10, the budget pointer: the guard page's address minus the chained block entries
    /// allowed before translated code returns (see [`budget_guard`]).
    pub budget_ptr: u64,
    /// r11: indirect branches resolved by the jump cache in the low [`ICOUNT_SHIFT`]
    /// bits, instructions completed above them (see [`split_count`]).
    pub icount: u64,
    /// Free (the guest's FS and GS bases are in the probe pages: [`JitFrame::seg_probes`]).
    _free: [u32; 2],
    /// Which chain site exited: translation id << 8 | site.
    pub exit_site: u32,
    /// Guest address of a host fault.
    pub fault_addr: u32,
    /// The fallback helper's context.
    pub ctx: *mut std::ffi::c_void,
    /// Instructions of the block completed before the one the helper runs.
    pub helper_k: u32,
    /// The running mapping's indirect-branch table (`crate::ibt`), or 0 when translated
    /// code does not use one.
    pub ibt: u64,
    /// The guest x87/MMX state (FXSAVE image), loaded into the host FPU while translated
    /// code runs if `fpu_live` is set.
    pub fpu: *mut morph_cpu::FpuState,
    /// 1 once translations execute x87/MMX instructions natively, else 0.
    pub fpu_live: u8,
    /// 1 if the host FPU holds the guest's x87/MMX state at this entry (the last exit
    /// left it there, `Cpu::fpu_in_host`): the entry does not load it again.
    pub fpu_in_host: u8,
    /// Set to 1 by an exit that left the guest's x87/MMX state in the host FPU.
    pub fpu_left: u8,
    /// Which of the frame's probe pages are readable (bit `i`: [`JitFrame::seg_probes`]
    /// `[i]`).
    pub seg_open: u8,
    /// The bound of the counted loop running (`translate::counted`), stored by its entry
    /// check for the fault handler ([`loop_point`]).
    pub loop_bound: u32,
    /// The jump-cache tag of the running process, shifted to the high half (see
    /// [`JitFrame`]).
    pub jc_tag: u64,
    /// Morph's own x87 control word and MXCSR, put back when the guest FPU state leaves
    /// the host FPU (see `glue::fpu_save`).
    pub host: morph_cpu::x87::HostControl,
    /// Host address of the guest window (a multiple of 2^32: see `morph_mem::window`),
    /// for string instructions, which address memory through RSI/RDI without a segment.
    pub window: u64,
    /// The dispatcher's stack pointer while translated code runs on the return stack
    /// (see [`crate::ras`]).
    pub host_rsp: u64,
    /// The return stack's pointer between two runs of translated code.
    pub ras_sp: u64,
    /// The return stack's pointer when it is empty, and its negation (for a flag-free
    /// comparison).
    pub ras_empty: u64,
    pub ras_empty_neg: u64,
    /// Returns the return stack did not predict (counted on that slow path only).
    pub ras_misses: u64,
    /// Host faults of translated code that the fault handler resolved and retried (a
    /// guest page hosted in the window at its first touch, a copy-on-write break).
    pub window_faults: u64,
    /// A word translated code may keep a value in between two instructions of its own
    /// (the guest's flags across a short `rep`'s checks: `translate::lower`), never
    /// across a guest memory access.
    pub scratch: u64,
}

/// What r15 points at while translated code runs: the state block, then the jump
/// cache's entries, so that a lookup addresses entry `i` as `[r15 + 2i * 8 + JC_KEYS]`
/// with no base register to load. Entry `i` is a guest block start under a tag, its key
/// `-(tag << 32 | guest VA)` (the lookup adds `tag << 32 | target` and tests for zero)
/// beside the host address translated code enters it at (its jump-cache entry, see
/// [`jc_entry`]): one 16-byte entry, so that a lookup touches one cache line (with the
/// keys and the hosts in two arrays it touched two, and an interpreter's dispatch
/// through a few hundred targets missed in the data cache on both: stop 25). The tag
/// names the mapping the entry was made under (the engine gives one to each
/// address-space mapping it runs, see `AddressSpace::mapping_id`), so entries of several
/// processes live side by side and a process switch changes only the tag in
/// [`JitState::jc_tag`]: an entry hits only for the tag it was made under. Tag 0 is
/// never current: an empty entry (all zero) never hits. Allocated zeroed
/// ([`JitFrame::allocate`]): the host gives the 1 MiB as zero pages when first touched,
/// so an engine that runs little code neither writes nor faults in most of it.
#[repr(C)]
pub struct JitFrame {
    pub state: JitState,
    pub jc: [JcEntry; JC_ENTRIES],
    /// Per kind of access through FS or GS (FS read, FS write, GS read, GS write), a
    /// page whose first word holds the segment's base, readable where the selector in
    /// the segment register allows the access and inaccessible where it does not (the
    /// null selector; a write through a read-only segment). A translated access through
    /// FS or GS loads the base from its page ([`seg_probe`]): the load it always made,
    /// now faulting at the instruction where the access is refused, and the interpreter
    /// then raises the guest's `#GP(0)`. The pages change with the selectors only
    /// ([`set_seg_probes`]), which differ little between processes. (Checking the
    /// selector with a flag-free pair of dependent loads before each block's first such
    /// access cost python 2.7 %.)
    pub seg_probes: [ProbePage; 4],
}

/// One of [`JitFrame::seg_probes`].
#[repr(C, align(4096))]
pub struct ProbePage([u8; 4096]);

/// Offset of the first probe page from r15.
pub const SEG_PROBES: i32 = std::mem::offset_of!(JitFrame, seg_probes) as i32;

/// The offset from r15 of the base a translated access through GS (`gs`) or FS loads,
/// a write (`write`) or not (see [`JitFrame::seg_probes`]).
pub fn seg_probe(gs: bool, write: bool) -> i32 {
    SEG_PROBES + 4096 * (2 * i32::from(gs) + i32::from(write))
}

/// Makes the probe pages of the frame whose state is `st` hold `cpu`'s FS and GS bases
/// and say what their selectors allow (an `mprotect` per page whose answer changed; one
/// that fails is tried again at the next call: until then a page left readable lets an
/// access through a refused selector run, one left closed only sends its access to the
/// interpreter).
///
/// # Safety
/// `st` is the state of a frame made by [`JitFrame::allocate`].
pub unsafe fn set_seg_probes(st: &mut JitState, cpu: &morph_cpu::Cpu) {
    use morph_cpu::state::seg;
    // SAFETY: `st` is the frame's first field (`repr(C)`), so the frame's probe pages are
    // at `SEG_PROBES` from it, in the frame's own mapping; nothing of ours but this
    // function reads or writes them.
    let pages = unsafe { (st as *mut JitState).cast::<u8>().add(SEG_PROBES as usize) };
    for (i, (s, write)) in
        [(seg::FS, false), (seg::FS, true), (seg::GS, false), (seg::GS, true)].into_iter().enumerate()
    {
        let (open, want) = (st.seg_open >> i & 1 != 0, cpu.segment_usable(s, write));
        // SAFETY: page `i` of the frame's probe pages (see above).
        let page = unsafe { pages.add(4096 * i) };
        if open != want {
            let prot = if want { libc::PROT_READ | libc::PROT_WRITE } else { libc::PROT_NONE };
            // SAFETY: as above: one page of the frame's own mapping.
            if unsafe { libc::mprotect(page.cast(), 4096, prot) } != 0 {
                continue;
            }
            st.seg_open ^= 1 << i;
        }
        if want {
            // SAFETY: as above; the page is readable and writable, and 4096-aligned.
            unsafe { *page.cast::<u32>() = cpu.seg_base[s] };
        }
    }
}

/// One jump-cache entry (see [`JitFrame`]).
#[repr(C, align(16))]
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct JcEntry {
    /// `-(tag << 32 | guest VA)`; 0 when empty.
    pub key: u64,
    /// The host address of the translation's jump-cache entry.
    pub host: u64,
}

/// The one `JitFrame` of an engine, in its own zero-page mapping.
pub struct JitFrameBox(morph_mem::ZeroedSlice<JitFrame>);

impl std::ops::Deref for JitFrameBox {
    type Target = JitFrame;
    fn deref(&self) -> &JitFrame {
        &self.0[0]
    }
}

impl std::ops::DerefMut for JitFrameBox {
    fn deref_mut(&mut self) -> &mut JitFrame {
        &mut self.0[0]
    }
}

/// Offset of the first entry's key from r15.
pub const JC_KEYS: i32 = std::mem::offset_of!(JitFrame, jc) as i32;
/// Offset of the first entry's host address from r15.
pub const JC_HOSTS: i32 = JC_KEYS + std::mem::offset_of!(JcEntry, host) as i32;

impl JitFrame {
    /// A frame with the default state and an empty jump cache, in pages of its own
    /// mapped as untouched zeroes (see `morph_mem::ZeroedSlice`: the engine's heap would
    /// `memset` the MiB).
    pub fn allocate() -> std::io::Result<JitFrameBox> {
        // SAFETY: all zeroes is a valid `JitFrame` (integers only).
        let mut m = unsafe { morph_mem::ZeroedSlice::<JitFrame>::new(1) }?;
        m[0].state = JitState::default();
        m[0].state.seg_open = 0xf; // mapped readable and writable
        Ok(JitFrameBox(m))
    }

    /// Empties every jump-cache entry.
    pub fn clear_jc(&mut self) {
        self.jc.fill(JcEntry::default());
    }
}

/// The jump-cache key of guest VA `va` under `tag`.
#[inline]
pub fn jc_key(tag: u32, va: u32) -> u64 {
    u64::from(tag) << 32 | u64::from(va)
}

/// Where a jump-cache hit enters a translation whose body is at `body`: its jump-cache
/// entry, `lea r14d, [r13 - page offset]` before the chain entry's budget check (see
/// `translate`), so the lookup leaves r14d and the budget to the target.
pub fn jc_entry(body: usize) -> usize {
    body - CHAIN_CHECK_BYTES - JC_ENTRY_BYTES
}

/// Bytes of a translation's jump-cache entry (`lea r14d, [r13 - d]`).
pub const JC_ENTRY_BYTES: usize = 7;

/// log2 of the jump-cache entries: 16 bits of the VA, so that blocks at one offset of
/// sixteen consecutive pages (function entries aligned alike, say) have entries of
/// their own (with the page offset alone, 12 bits, they shared one).
pub const JC_BITS: u32 = 16;
/// Jump-cache entries.
pub const JC_ENTRIES: usize = 1 << JC_BITS;

/// The jump-cache entry of guest VA `va`: the sum of its low and high 16 bits, modulo
/// 2^16 (translated code computes the same with `rorx`, `lea` and `movzx`, which leave
/// the flags alone, in as many instructions as taking the low bits alone). Hot targets
/// at one offset of pages 64 KiB apart (a function at `…2f30` in the program and
/// another in libc) no longer share an entry; only VAs whose halves sum alike do.
#[inline]
pub fn jc_index(va: u32) -> usize {
    const _: () = assert!(JC_BITS == 16, "the index folds the VA's two halves");
    ((va & 0xffff) + (va >> 16)) as usize & (JC_ENTRIES - 1)
}

impl Default for JitState {
    fn default() -> Self {
        JitState {
            gpr: [0; 8],
            eip: 0,
            eflags: 0,
            page_va: 0,
            exit: 0,
            budget_ptr: 0,
            icount: 0,
            _free: [0; 2],
            exit_site: 0,
            fault_addr: 0,
            ctx: std::ptr::null_mut(),
            helper_k: 0,
            ibt: 0,
            fpu: std::ptr::null_mut(),
            fpu_live: 0,
            fpu_in_host: 0,
            fpu_left: 0,
            seg_open: 0,
            loop_bound: 0,
            jc_tag: 0,
            host: *morph_cpu::x87::HostControl::morph(),
            window: 0,
            host_rsp: 0,
            ras_sp: 0,
            ras_empty: 0,
            ras_empty_neg: 0,
            ras_misses: 0,
            window_faults: 0,
            scratch: 0,
        }
    }
}

/// Field offsets (checked against the layout in a test).
pub mod off {
    /// `gpr`.
    pub const GPR: i32 = 0;
    /// `eip`.
    pub const EIP: i32 = 32;
    /// `eflags`.
    pub const EFLAGS: i32 = 36;
    /// `page_va`.
    pub const PAGE_VA: i32 = 40;
    /// `exit`.
    pub const EXIT: i32 = 44;
    /// `budget_ptr`.
    pub const BUDGET_PTR: i32 = 48;
    /// `icount`.
    pub const ICOUNT: i32 = 56;
    /// `exit_site`.
    pub const EXIT_SITE: i32 = 72;
    /// `helper_k`.
    pub const HELPER_K: i32 = 88;
    /// `ibt`.
    pub const IBT: i32 = 96;
    /// `fpu`.
    pub const FPU: i32 = 104;
    /// `fpu_live`.
    pub const FPU_LIVE: i32 = 112;
    /// `fpu_in_host`.
    pub const FPU_IN_HOST: i32 = 113;
    /// `fpu_left`.
    pub const FPU_LEFT: i32 = 114;
    /// `loop_bound`.
    pub const LOOP_BOUND: i32 = 116;
    /// `jc_tag`.
    pub const JC_TAG: i32 = 120;
    /// `host.fcw`.
    pub const HOST_FCW: i32 = 128;
    /// `host.mxcsr`.
    pub const HOST_MXCSR: i32 = 132;
    /// `window`.
    pub const WINDOW: i32 = 136;
    /// `host_rsp`.
    pub const HOST_RSP: i32 = 144;
    /// `ras_sp`.
    pub const RAS_SP: i32 = 152;
    /// `ras_empty`.
    pub const RAS_EMPTY: i32 = 160;
    /// `ras_empty_neg`.
    pub const RAS_EMPTY_NEG: i32 = 168;
    /// `ras_misses`.
    pub const RAS_MISSES: i32 = 176;
    /// `scratch`.
    pub const SCRATCH: i32 = 192;
}

/// A chain site exited (EIP set; `exit_site` says which).
pub const EXIT_BRANCH: u32 = 1;
/// An indirect branch or return exited (EIP set).
pub const EXIT_INDIRECT: u32 = 2;
/// `int 0x80` (EIP past it).
pub const EXIT_SYSCALL: u32 = 3;
/// A host fault in translated code (EIP at the guest instruction).
pub const EXIT_FAULT: u32 = 4;
/// The instruction budget ran out at a chain.
pub const EXIT_BUDGET: u32 = 5;
/// The fallback helper stopped with a guest exit (kept in the helper context).
pub const EXIT_HELPER: u32 = 6;

/// Where r11 counts instructions: above the jump-cache hits, which stay below 2^24 per
/// entry into translated code (each takes one of the budget's [`MAX_LIMIT`] entries), so
/// that a hit is counted by `lea r11, [r11 + 1]` (a 64-bit constant cost a `mov` on every
/// indirect branch) and a block's instructions by `lea r11, [r11 + n << 24]`, whose
/// displacement holds `n` up to 127. Instructions stay below 2^40 per entry (between two
/// checked edges run at most a page of forward-chained blocks).
pub const ICOUNT_SHIFT: u32 = 24;

/// The most chained entries (checked edges and jump-cache hits) one entry into translated
/// code allows (`JitState::budget_ptr` starts at most that many bytes before the
/// guard): the hits fit below [`ICOUNT_SHIFT`].
pub const MAX_LIMIT: u64 = (1 << ICOUNT_SHIFT) - 1;

/// r11 (`JitState::icount`) as (instructions completed, jump-cache hits).
pub fn split_count(count: u64) -> (u64, u64) {
    (count >> ICOUNT_SHIFT, count & ((1 << ICOUNT_SHIFT) - 1))
}

/// The guest flags translated code keeps in host EFLAGS: the arithmetic flags and DF.
pub const LIVE_FLAGS: u32 = 0x8d5 | 0x400;

/// Guest register → host register (32-bit).
pub fn host_gpr(i: usize) -> AsmRegister32 {
    [eax, ecx, edx, ebx, r12d, ebp, esi, edi][i]
}

// ----- hand-encoded glue with fixed layouts (patched or emitted very often) ----------

/// Appends `lea r11, [r11 + n << ICOUNT_SHIFT]` to `out`: `n` instructions completed
/// (one `lea` per 127).
pub fn lea_r11(n: u32, out: &mut Vec<u8>) {
    // A block's counts are at most a few hundred instructions.
    lea_r11_signed(i32::try_from(n).unwrap_or(i32::MAX), out);
}

/// `lea r11, [r11 + n << ICOUNT_SHIFT]` for a count `n` of either sign (the count may be
/// moved back: a join evens out two paths' counts; see `translate`).
pub fn lea_r11_signed(n: i32, out: &mut Vec<u8>) {
    let mut left = n;
    while left != 0 {
        let k = left.clamp(-128, 127);
        left -= k;
        out.extend_from_slice(&lea_r11_disp(k << ICOUNT_SHIFT));
    }
}

/// `lea r11, [r11 + d]` (a raw displacement: counts above [`ICOUNT_SHIFT`], jump-cache
/// hits below).
pub fn lea_r11_disp(d: i32) -> [u8; 7] {
    let b = d.to_le_bytes();
    [0x4d, 0x8d, 0x9b, b[0], b[1], b[2], b[3]]
}

/// `lea r13d, [r14 + d]`.
pub fn lea_r13_r14(d: i32) -> [u8; 7] {
    let b = d.to_le_bytes();
    [0x45, 0x8d, 0xae, b[0], b[1], b[2], b[3]]
}

/// `mov [r15 + off], r13d`.
pub fn store_r13(off: i32) -> [u8; 7] {
    let b = off.to_le_bytes();
    [0x45, 0x89, 0xaf, b[0], b[1], b[2], b[3]]
}

/// `mov dword [r15 + off], imm`.
pub fn store_imm(off: i32, imm: u32) -> [u8; 11] {
    let b = off.to_le_bytes();
    let i = imm.to_le_bytes();
    [0x41, 0xc7, 0x87, b[0], b[1], b[2], b[3], i[0], i[1], i[2], i[3]]
}

/// At the end of a run of x87 instructions in translated code: the guest's FIP and FOP
/// after it, kept in the FXSAVE image's software area (`morph_cpu::X87_SHADOW`; the
/// host's are the translation's address and the opcode of its host encoding), from
/// which they are put back wherever the state is saved (`FpuState::unpark_pointers`).
/// `Some((at, fop))`: the run's last instruction that moves FIP is at `at` in the page
/// (r14d is its VA) with opcode `fop`: `lea r9d, [r14 + at]; mov r8, [r15 + fpu];
/// mov [r8 + shadow], r9d; mov word [r8 + shadow + 4], fop`. `None` (`fninit`): FIP,
/// FOP and the FOP loaded all 0, `mov r8, [r15 + fpu]; mov qword [r8 + shadow], 0`.
/// Flags untouched; r8 and r9 are free between guest instructions.
pub fn x87_flush(at: Option<(i32, u16)>, out: &mut Vec<u8>) {
    let s = (morph_cpu::X87_SHADOW as u32).to_le_bytes();
    let s4 = (morph_cpu::X87_SHADOW as u32 + 4).to_le_bytes();
    if let Some((at, _)) = at {
        let a = at.to_le_bytes();
        out.extend_from_slice(&[0x45, 0x8d, 0x8e, a[0], a[1], a[2], a[3]]);
    }
    out.extend_from_slice(&[0x4d, 0x8b, 0x47, off::FPU as u8]);
    match at {
        Some((_, fop)) => {
            let f = fop.to_le_bytes();
            out.extend_from_slice(&[0x45, 0x89, 0x88, s[0], s[1], s[2], s[3]]);
            out.extend_from_slice(&[0x66, 0x41, 0xc7, 0x80, s4[0], s4[1], s4[2], s4[3], f[0], f[1]]);
        }
        None => out.extend_from_slice(&[0x49, 0xc7, 0x80, s[0], s[1], s[2], s[3], 0, 0, 0, 0]),
    }
}

/// After an x87 instruction with a memory operand, on a host whose `fxsave` hides the
/// x87 pointers (AMD's: the state translated code leaves in the host FPU would come
/// back with FDP 0): the guest's FDP, the operand's offset, which `lea` (`lea r9d,
/// [offset]`, the guest's registers mapped) computes, stored in the image's shadow,
/// from which `FpuState::unpark_pointers` puts it back, with FDS 0 (the process's DS:
/// x87 operands with a segment override go to the helper): `lea; mov r8, [r15 + fpu]`
/// (unless `loaded`: after `x87_flush`'s, r8 holds it) `; mov [r8 + shadow + 8], r9`.
/// Flags untouched; r8 and r9 are free between guest instructions.
/// `lea` `None`: `fninit` cleared FDP (and FDS) since, `mov qword [r8 + shadow + 8], 0`.
pub fn x87_fdp(lea: Option<&[u8]>, loaded: bool, out: &mut Vec<u8>) {
    let s8 = (morph_cpu::X87_SHADOW as u32 + 8).to_le_bytes();
    if let Some(lea) = lea {
        out.extend_from_slice(lea);
    }
    if !loaded {
        out.extend_from_slice(&[0x4d, 0x8b, 0x47, off::FPU as u8]);
    }
    match lea {
        // mov [r8 + shadow + 8], r9: FDP, and FDS and the next word 0 (`lea` zeroed r9's
        // upper half).
        Some(_) => out.extend_from_slice(&[0x4d, 0x89, 0x88, s8[0], s8[1], s8[2], s8[3]]),
        None => out.extend_from_slice(&[0x49, 0xc7, 0x80, s8[0], s8[1], s8[2], s8[3], 0, 0, 0, 0]),
    }
}

/// Offset in a translation of the PC-thunk trampoline (after the budget exit stub):
/// `mov rcx, r9; jmp <rel32>`, where an inlined PC thunk's check goes when the thunk's
/// bytes changed (see `lower::pc_thunk`).
pub const THUNK_FAIL: usize = 5;
/// Offset in a translation of the trampoline's rel32.
pub const THUNK_FAIL_REL: usize = THUNK_FAIL + 4;
/// Offset of the far entry in a translation (after the budget exit stub and the
/// PC-thunk trampoline).
pub const FAR_ENTRY: usize = THUNK_FAIL + 8;
/// Bytes of the far entry's check, up to the jump-cache entry it falls into.
pub const FAR_CHECK_BYTES: usize = 38;
/// Offset in a translation of the far entry's key: the 64-bit immediate of its `mov rcx,
/// imm64`, which the dispatcher patches when it chains an edge from another page.
pub const FAR_KEY_AT: usize = FAR_ENTRY + 5;
/// Bytes of the chain entry's budget check, between the jump-cache entry and the body.
pub const CHAIN_CHECK_BYTES: usize = 8;
/// Offset in a translation of the budget check's load, which faults on the guard page
/// when the budget is spent (the fault handler then resumes at the budget exit, offset
/// 0).
pub const BUDGET_TRAP: usize = FAR_ENTRY + FAR_CHECK_BYTES + JC_ENTRY_BYTES + 4;
/// The budget check's load, `movzx r8d, byte [r10]`, as the fault handler expects to
/// find it at a budget fault.
pub(crate) const BUDGET_LOAD: [u8; 4] = [0x45, 0x0f, 0xb6, 0x02];

/// The budget check's step before its load: `lea r10, [r10 + 1]`.
pub(crate) const BUDGET_STEP: [u8; 4] = [0x4d, 0x8d, 0x52, 0x01];

/// What every translation starts with: the entries other than its body, all without
/// touching the guest's flags (which live in EFLAGS across chained jumps), in this order,
/// so that each falls into the next and the body follows with no jump:
///
/// - `out: jmp <rel32>` — the budget exit (to the block's stub that leaves with EIP at
///   its start);
/// - the PC-thunk trampoline ([`THUNK_FAIL`]), `mov rcx, r9; jmp <rel32>`, reached only
///   by a `loop` backwards from an inlined PC thunk's check near the body's start, so
///   that the check falls through when the thunk is still there (a `jrcxz` taken on
///   success was a taken host branch at every position-independent function's entry);
/// - the *far entry* ([`FAR_ENTRY`]), where chained edges from other pages enter with
///   the target EIP in r13d: it checks that its key, the immediate at [`FAR_KEY_AT`],
///   is `-(tag << 32 | EIP)` for the current jump-cache tag (`mov rcx, key; lea rcx,
///   [rcx + r13]; lea rcx, [rcx + tag]; jrcxz`, the guest's rcx kept in r8); any other
///   tag or EIP (another mapping, a mapping changed, a translation dropped, the same
///   code at another address) goes to the shared jump-cache lookup instead. The
///   dispatcher writes the key when it chains an edge from another page to this
///   translation (`Engine::try_chain`): like the Crusoe's interpage prologue (US
///   6,845,353), a chained edge into another page is checked on entry, here against the
///   jump cache's tag, which changes whenever what any page maps may have changed. The
///   key is an immediate, not a data slot beside the code: a load from the code's own
///   line cost a data-cache line and a data-TLB entry for every page of code entered
///   from afar;
/// - the *jump-cache entry* ([`jc_entry`]), where jump-cache hits and checked far edges
///   continue with the EIP in r13d: `lea r14d, [r13 - page_off]` sets r14d to the page;
/// - the *chain entry*, where backward chained edges in the page enter (r14d already
///   right): the budget check, `lea r10, [r10 + 1]; movzx r8d, byte [r10]` — two
///   instructions, no branch, no flags: r10 walks a readable region towards a guard page
///   and the load that reaches the guard faults ([`budget_guard`]); the fault handler
///   resumes at `out`. (A count in rcx for `jrcxz` took five instructions and a branch,
///   the guest's rcx parked in r8 around it.)
///
/// Returns the bytes (placed at the translation's start), the offsets in them of the
/// rel32 to the budget exit and of the rel32 to the shared lookup, and of the chain entry.
pub fn prologue(page_off: u32) -> ([u8; 66], usize, usize, usize) {
    let d = (page_off as i32).wrapping_neg().to_le_bytes();
    let [l0, l1, l2, l3] = BUDGET_LOAD;
    let [s0, s1, s2, s3] = BUDGET_STEP;
    let code = [
        0xe9, 0, 0, 0, 0, // out: jmp the budget exit
        0x4c, 0x89, 0xc9, // thunk_fail: mov rcx, r9
        0xe9, 0, 0, 0, 0, // jmp the thunk's call (or the next instruction: none)
        0x49, 0x89, 0xc8, // far: mov r8, rcx
        0x48, 0xb9, 0, 0, 0, 0, 0, 0, 0, 0, // mov rcx, key
        0x4a, 0x8d, 0x0c, 0x29, // lea rcx, [rcx + r13]
        0x4d, 0x8b, 0x4f, 0x78, // mov r9, [r15 + jc_tag]
        0x4a, 0x8d, 0x0c, 0x09, // lea rcx, [rcx + r9]
        0xe3, 0x08, // jrcxz ok
        0x4c, 0x89, 0xc1, // mov rcx, r8
        0xe9, 0, 0, 0, 0, // jmp the shared lookup
        0x4c, 0x89, 0xc1, // ok: mov rcx, r8
        0x45, 0x8d, 0xb5, d[0], d[1], d[2], d[3], // jc: lea r14d, [r13 - page_off]
        s0, s1, s2, s3, // chain: lea r10, [r10 + 1]
        l0, l1, l2, l3, // movzx r8d, byte [r10]
    ];
    (code, 1, 44, 58)
}

/// Bytes of the budget region's readable part: [`MAX_LIMIT`] fits.
const BUDGET_REGION: usize = 1 << ICOUNT_SHIFT;

/// The address of the budget guard page: an inaccessible page after [`BUDGET_REGION`]
/// readable bytes. A run allowed `n` chained entries starts with r10 at `guard - n`; each
/// entry steps r10 and reads the byte there, and the `n`-th reads the guard. The region
/// is never written: its pages are the kernel's zero page, so the loads hit a few cache
/// lines, and they are huge pages where the host allows (`MADV_HUGEPAGE`, and it is 2 MiB
/// aligned): a run of a million entries walks a megabyte, which as 4 KiB pages cost a
/// page fault and a TLB miss every 4096 entries. One region serves every engine and
/// thread (it holds no state: r10 does). `None` if the host refused the mapping.
pub fn budget_guard() -> Option<usize> {
    static GUARD: std::sync::OnceLock<Option<usize>> = std::sync::OnceLock::new();
    *GUARD.get_or_init(|| {
        const HUGE: usize = 2 << 20;
        let len = BUDGET_REGION + HUGE + 4096;
        // SAFETY: a fresh private anonymous mapping that nothing else refers to; a 2 MiB
        // aligned part of it is then made readable. It is never unmapped.
        unsafe {
            let p = libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            );
            if p == libc::MAP_FAILED {
                return None;
            }
            let start = (p as usize).next_multiple_of(HUGE);
            if libc::mprotect(start as *mut libc::c_void, BUDGET_REGION, libc::PROT_READ) != 0 {
                libc::munmap(p, len);
                return None;
            }
            // Advice only: without huge pages the region still works.
            libc::madvise(start as *mut libc::c_void, BUDGET_REGION, libc::MADV_HUGEPAGE);
            Some(start + BUDGET_REGION)
        }
    })
}

/// The value of r10 (`JitState::budget_ptr`) for a run allowed `entries` chained entries
/// (clamped to `1..=MAX_LIMIT`), with the region's guard at `guard`.
pub fn budget_pointer(guard: usize, entries: u64) -> u64 {
    guard as u64 - entries.clamp(1, MAX_LIMIT)
}

// ----- the process window and host faults -------------------------------------------

thread_local! {
    static GS_BASE: Cell<usize> = const { Cell::new(usize::MAX) };
    static FAULT_MAP: Cell<*const FaultMap> = const { Cell::new(std::ptr::null()) };
}

/// Points the host GS base at `base` (the current process window), if it is not already.
pub fn set_window(base: usize) {
    GS_BASE.with(|g| {
        if g.get() != base {
            const ARCH_SET_GS: i32 = 0x1001;
            // SAFETY: arch_prctl(ARCH_SET_GS) changes only this thread's GS base, which
            // neither Rust nor glibc use on x86-64.
            let r = unsafe { libc::syscall(libc::SYS_arch_prctl, ARCH_SET_GS, base) };
            assert_eq!(r, 0, "arch_prctl(ARCH_SET_GS) failed");
            g.set(base);
        }
    });
}

/// Where each guest instruction of each translation starts in host code, so a host
/// fault can be turned into a precise guest fault.
#[derive(Default)]
pub struct FaultMap {
    /// Host address of the code buffer.
    pub code_base: usize,
    /// Size of the code in the buffer.
    pub code_len: usize,
    /// Offset of `exit_common` in the buffer.
    pub exit_common: usize,
    /// Host address of the guest window.
    pub window: usize,
    /// Host address of the budget guard page ([`budget_guard`]).
    pub budget_guard: usize,
    /// The state block of the running translation.
    pub state: *mut JitState,
    /// The address space whose window the running translation uses: a fault on a page
    /// it has not hosted yet, or a write to a copy-on-write page, is resolved in the
    /// handler (`AddressSpace::host_in_at`, `AddressSpace::cow_fault_at`).
    pub aspace: *mut morph_mem::AddressSpace,
    /// `(host offset, guest offset from the page start, instructions before)` for every
    /// translated guest instruction, in host order.
    pub points: Vec<(u32, u32, u32)>,
    /// The host offset of every translation's start, in order: whether two host
    /// addresses are in the same translation.
    pub starts: Vec<u32>,
}

/// The flag of a fault-map point inside a counted loop's clean copy
/// (`translate::counted`), whose other bits say how to find the instructions completed:
/// the induction register (guest index, bits 20–22), whether it steps down (bit 19),
/// whether the instruction comes after the step in the iteration (bit 18), the step's
/// log2 (bits 16–17), the instructions per iteration (bits 8–15) and the instruction's
/// index in it (bits 0–7).
pub const LOOP_POINT: u32 = 1 << 31;

/// Where each guest register lives in the host's signal context (`gregs` indices): the
/// assignment of [`host_gpr`].
const HOST_GREGS: [i32; 8] = [
    libc::REG_RAX,
    libc::REG_RCX,
    libc::REG_RDX,
    libc::REG_RBX,
    libc::REG_R12,
    libc::REG_RBP,
    libc::REG_RSI,
    libc::REG_RDI,
];

/// The instructions to add to r11 at a fault at the counted-loop point `k`, with the
/// induction register holding `reg` and the loop's bound `bound`: the loop's entry
/// counted all its `n` iterations; the ones not begun, and the rest of this one, are
/// taken back. The iterations left, this one included, are `(bound - reg) / step`
/// stepping up (`(reg - bound) / step` down), one more once this iteration has stepped.
pub fn loop_point(k: u32, reg: u32, bound: u32) -> i64 {
    let (down, after, shift) = (k >> 19 & 1 != 0, i64::from(k >> 18 & 1), k >> 16 & 3);
    let (len, idx) = (i64::from(k >> 8 & 0xff), i64::from(k & 0xff));
    let distance = if down { reg.wrapping_sub(bound) } else { bound.wrapping_sub(reg) };
    let left = i64::from(distance >> shift) + after;
    idx - left * len
}

/// Installs the host `SIGSEGV`/`SIGBUS`/`SIGFPE` handler (once per process); `SIGFPE`
/// comes from a pending unmasked x87 exception in translated x87 code.
pub fn install_fault_handler() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        for sig in [libc::SIGSEGV, libc::SIGBUS, libc::SIGFPE] {
            // SAFETY: installing a handler with a zeroed, then filled, sigaction.
            unsafe {
                let mut sa: libc::sigaction = std::mem::zeroed();
                sa.sa_sigaction = on_host_fault as *const () as usize;
                sa.sa_flags = libc::SA_SIGINFO | libc::SA_NODEFER;
                libc::sigemptyset(&mut sa.sa_mask);
                libc::sigaction(sig, &sa, std::ptr::null_mut());
            }
        }
    });
}

/// Makes `map` the one consulted by the fault handler on this thread (null: none).
pub fn set_fault_map(map: *const FaultMap) {
    FAULT_MAP.with(|m| m.set(map));
}

extern "C" fn on_host_fault(sig: i32, info: *mut libc::siginfo_t, uc: *mut libc::c_void) {
    let map = FAULT_MAP.with(|m| m.get());
    // SAFETY: the kernel passes a valid ucontext; `map` is null or points at the
    // engine's fault map, which is not being modified while translated code runs.
    unsafe {
        let uc = &mut *(uc as *mut libc::ucontext_t);
        let gregs = &mut uc.uc_mcontext.gregs;
        let pc = gregs[libc::REG_RIP as usize] as usize;
        let Some(map) = map.as_ref().filter(|m| pc >= m.code_base && pc < m.code_base + m.code_len) else {
            // Not ours: a morph bug. Fall back to the default action (a core dump).
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = libc::SIG_DFL;
            libc::sigaction(sig, &sa, std::ptr::null_mut());
            return;
        };
        let host_addr = (*info).si_addr() as usize;
        // The budget check's load reached the guard page: the run's budget is spent. The
        // translation leaves through its budget exit (`prologue`), as the check's branch
        // did.
        if sig == libc::SIGSEGV
            && host_addr.wrapping_sub(map.budget_guard) < 4096
            && pc - map.code_base >= BUDGET_TRAP
            && std::slice::from_raw_parts(pc as *const u8, BUDGET_LOAD.len()) == BUDGET_LOAD
        {
            gregs[libc::REG_RIP as usize] = (pc - BUDGET_TRAP) as i64;
            return;
        }
        let addr = host_addr.wrapping_sub(map.window);
        // Resolved in place, the access is retried: a page not hosted yet, or a write to
        // a copy-on-write page (x86 page-fault error code bit 1: a write), or both at
        // once (a first store to a page shared since a fork: one signal, not two). Translated
        // code holds no Rust borrow of the address space while it runs (like `helper`,
        // which also reaches it through a pointer the engine set for this run).
        if sig == libc::SIGSEGV
            && let Ok(va) = u32::try_from(addr)
            && let Some(aspace) = map.aspace.as_mut()
            && let write = gregs[libc::REG_ERR as usize] & 2 != 0
            && (aspace.host_in_at(va, write) | (write && aspace.cow_fault_at(va)))
        {
            (*map.state).window_faults += 1;
            return;
        }
        let off = (pc - map.code_base) as u32;
        let i = map.points.partition_point(|p| p.0 <= off).wrapping_sub(1);
        let Some(&(_, guest_off, k)) = map.points.get(i) else {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = libc::SIG_DFL;
            libc::sigaction(sig, &sa, std::ptr::null_mut());
            return;
        };
        let page_va = gregs[libc::REG_R14 as usize] as u32;
        x87_pointers_at_fault(map, uc.uc_mcontext.fpregs, off, page_va);
        let st = &mut *map.state;
        st.eip = page_va.wrapping_add(guest_off);
        st.exit = EXIT_FAULT;
        st.fault_addr = addr as u32;
        let pending = if k & LOOP_POINT != 0 {
            let reg = (k >> 20 & 7) as usize;
            loop_point(k, gregs[HOST_GREGS[reg] as usize] as u32, st.loop_bound)
        } else {
            i64::from(k)
        };
        gregs[libc::REG_R11 as usize] += pending << ICOUNT_SHIFT;
        gregs[libc::REG_RIP as usize] = (map.code_base + map.exit_common) as i64;
    }
}

/// A fault inside a run of x87 instructions, before the run stored the guest's FIP and
/// FOP (`translate::Emitter::x87_flush`): if the host's FIP (in the context's FPU state
/// `fpregs`) is an instruction of the faulting translation (the one at host offset
/// `off`, for the page at `page_va`), the guest's FIP is that instruction's guest
/// address and its FOP the opcode of the guest's bytes there, stored in the image's
/// shadow as the run's flush would have. Anywhere else the shadow already holds them:
/// every run stores them as it ends, and the host's FIP is 0 until translated code runs
/// an x87 instruction (`FpuState::park_pointers`).
///
/// # Safety
/// `fpregs` is null or the context's FPU state; `map.state` and `map.aspace` are live,
/// `(*map.state).fpu` is the guest's FXSAVE image.
unsafe fn x87_pointers_at_fault(map: &FaultMap, fpregs: *mut libc::_libc_fpstate, off: u32, page_va: u32) {
    // SAFETY: as the caller promises.
    unsafe {
        let Some(fp) = fpregs.as_ref() else { return };
        let st = &*map.state;
        let Some(host_fip) = (fp.rip as usize).checked_sub(map.code_base).filter(|&f| f < map.code_len) else {
            return;
        };
        let fip_off = host_fip as u32;
        let translation = |o: u32| map.starts.partition_point(|&s| s <= o);
        if st.fpu_live == 0 || st.fpu.is_null() || translation(fip_off) != translation(off) {
            return;
        }
        let i = map.points.partition_point(|p| p.0 <= fip_off).wrapping_sub(1);
        let Some(&(_, guest_off, _)) = map.points.get(i) else { return };
        let fip = page_va.wrapping_add(guest_off);
        // The opcode, for a host that set one (here only at an unmasked exception): the
        // guest's bytes, read through the address space (never a fault of its own).
        let mut fop = 0;
        if fp.fop != 0
            && let Some(aspace) = map.aspace.as_ref()
        {
            let mut bytes = [0u8; 6];
            let mut n = 0;
            while n < bytes.len()
                && let Ok(b) = aspace.read_u8(fip.wrapping_add(n as u32))
            {
                bytes[n] = b;
                n += 1;
            }
            fop = morph_cpu::x87_opcode(&bytes[..n]).unwrap_or(0);
        }
        let image = &mut (*st.fpu).0;
        let s = morph_cpu::X87_SHADOW;
        image[s..s + 4].copy_from_slice(&fip.to_le_bytes());
        image[s + 4..s + 6].copy_from_slice(&fop.to_le_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_layout() {
        let s = JitState::default();
        let base = &s as *const _ as usize;
        assert_eq!(&s.eip as *const _ as usize - base, off::EIP as usize);
        assert_eq!(&s.budget_ptr as *const _ as usize - base, off::BUDGET_PTR as usize);
        assert_eq!(&s.icount as *const _ as usize - base, off::ICOUNT as usize);
        assert_eq!(&s.exit_site as *const _ as usize - base, off::EXIT_SITE as usize);
        assert_eq!(&s.helper_k as *const _ as usize - base, off::HELPER_K as usize);
        assert_eq!(&s.ibt as *const _ as usize - base, off::IBT as usize);
        assert_eq!(&s.fpu as *const _ as usize - base, off::FPU as usize);
        assert_eq!(&s.fpu_live as *const _ as usize - base, off::FPU_LIVE as usize);
        assert_eq!(&s.fpu_in_host as *const _ as usize - base, off::FPU_IN_HOST as usize);
        assert_eq!(&s.fpu_left as *const _ as usize - base, off::FPU_LEFT as usize);
        assert_eq!(&s.loop_bound as *const _ as usize - base, off::LOOP_BOUND as usize);
        assert_eq!(&s.jc_tag as *const _ as usize - base, off::JC_TAG as usize);
        assert_eq!(&s.host.fcw as *const _ as usize - base, off::HOST_FCW as usize);
        assert_eq!(&s.host.mxcsr as *const _ as usize - base, off::HOST_MXCSR as usize);
        assert_eq!(&s.window as *const _ as usize - base, off::WINDOW as usize);
        assert_eq!(&s.host_rsp as *const _ as usize - base, off::HOST_RSP as usize);
        assert_eq!(&s.ras_sp as *const _ as usize - base, off::RAS_SP as usize);
        assert_eq!(&s.ras_empty as *const _ as usize - base, off::RAS_EMPTY as usize);
        assert_eq!(&s.ras_empty_neg as *const _ as usize - base, off::RAS_EMPTY_NEG as usize);
        assert_eq!(&s.ras_misses as *const _ as usize - base, off::RAS_MISSES as usize);
        assert_eq!(&s.scratch as *const _ as usize - base, off::SCRATCH as usize);
        assert_eq!(JC_KEYS, 208, "the goldens' jump-cache lookups show this offset");
    }

    #[test]
    fn hand_encodings_decode_as_intended() {
        use iced_x86::{Decoder, DecoderOptions, Formatter, IntelFormatter};
        let mut f = IntelFormatter::new();
        let mut show = |b: &[u8]| {
            let mut d = Decoder::with_ip(64, b, 0, DecoderOptions::NONE);
            let mut out = Vec::new();
            while d.can_decode() {
                let mut s = String::new();
                f.format(&d.decode(), &mut s);
                out.push(s);
            }
            out.join("; ")
        };
        let lea = |n| {
            let mut v = Vec::new();
            lea_r11(n, &mut v);
            v
        };
        assert_eq!(show(&lea(7)), "lea r11,[r11+7000000h]");
        assert_eq!(show(&lea(130)), "lea r11,[r11+7F000000h]; lea r11,[r11+3000000h]");
        let signed = |n| {
            let mut v = Vec::new();
            lea_r11_signed(n, &mut v);
            v
        };
        assert_eq!(show(&signed(-3)), "lea r11,[r11-3000000h]");
        assert_eq!(show(&signed(-130)), "lea r11,[r11-80000000h]; lea r11,[r11-2000000h]");
        assert_eq!(signed(0), Vec::<u8>::new());
        assert_eq!(signed(130), lea(130));
        assert_eq!(show(&lea_r13_r14(16)), "lea r13d,[r14+10h]");
        assert_eq!(show(&store_r13(32)), "mov [r15+20h],r13d");
        assert_eq!(show(&store_imm(44, 3)), "mov dword ptr [r15+2Ch],3");
        let fip = |at| {
            let mut v = Vec::new();
            x87_flush(at, &mut v);
            v
        };
        assert_eq!(
            show(&fip(Some((0x123, 0x435)))),
            "lea r9d,[r14+123h]; mov r8,[r15+68h]; mov [r8+1D0h],r9d; mov word ptr [r8+1D4h],435h"
        );
        assert_eq!(show(&fip(None)), "mov r8,[r15+68h]; mov qword ptr [r8+1D0h],0");
        let fdp = |lea: Option<&[u8]>, loaded| {
            let mut v = Vec::new();
            x87_fdp(lea, loaded, &mut v);
            v
        };
        assert_eq!(show(&fdp(Some(&[0x44, 0x8d, 0x4b, 0x40]), true)), "lea r9d,[rbx+40h]; mov [r8+1D8h],r9");
        assert_eq!(show(&fdp(None, false)), "mov r8,[r15+68h]; mov qword ptr [r8+1D8h],0");
        let (p, budget_rel, lookup_rel, chain) = prologue(0x10);
        assert_eq!(
            show(&p),
            "jmp 5; mov rcx,r9; jmp 000000000000000Dh; mov r8,rcx; mov rcx,0; lea rcx,[rcx+r13]; \
             mov r9,[r15+78h]; lea rcx,[rcx+r9]; jrcxz 0000000000000030h; mov rcx,r8; jmp 0000000000000030h; \
             mov rcx,r8; lea r14d,[r13-10h]; lea r10,[r10+1]; movzx r8d,byte ptr [r10]"
        );
        assert_eq!((p[budget_rel - 1], p[lookup_rel - 1], p[THUNK_FAIL_REL - 1]), (0xe9, 0xe9, 0xe9));
        assert_eq!(&p[FAR_KEY_AT - 2..FAR_KEY_AT], &[0x48, 0xb9], "the key is mov rcx's immediate");
        assert_eq!(p.len() - chain, CHAIN_CHECK_BYTES);
        assert_eq!(&p[BUDGET_TRAP..BUDGET_TRAP + 4], &BUDGET_LOAD);
        assert_eq!(chain - JC_ENTRY_BYTES, FAR_ENTRY + FAR_CHECK_BYTES, "the jump-cache entry follows the far entry");
    }
}
