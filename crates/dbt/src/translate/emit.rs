//! The emitter: host code being built for one translation, its fixups, chain sites and
//! side exits, and the small host sequences every block uses (assembled once).

use iced_x86::code_asm::*;
use iced_x86::{Code, Decoder, DecoderOptions, Encoder, Instruction, Register};

use super::{Fixup, Options, Reloc, Site};
use crate::{glue, runtime};
use morph_mem::PAGE_SIZE;

pub(super) struct Emitter {
    pub(super) code: Vec<u8>,
    pub(super) fixups: Vec<(usize, Fixup)>,
    pub(super) local: Vec<(usize, usize)>,
    pub(super) sites: Vec<Site>,
    /// `jcc` (and `call`) rel32 fields whose target is in another page, with the
    /// target's delta: they go to an out-of-line `lea r13d` and a chain site.
    pub(super) far: Vec<(usize, i32)>,
    pub(super) encoder: Encoder,
    pub(super) scratch: Vec<u8>,
    /// Offset of the block's first instruction in its page (the same at any address).
    pub(super) page_off: u32,
    /// The block's instructions already counted in r11 on the path being emitted.
    pub(super) counted: u32,
    /// Side exits: the `jcc` rel32 field, the instructions its taken edge must count,
    /// and the target's delta.
    pub(super) side: Vec<(usize, u32, i32)>,
    /// The translator's switches.
    pub(super) opts: Options,
    /// Absolute host values in the code, to be set again where it is loaded elsewhere
    /// (the table lookups' miss routine; helper calls add theirs in `translate`).
    pub(super) relocs: Vec<(usize, Reloc)>,
    /// The target predicted for the block's closing indirect branch (bytes from the block
    /// start, in the page), checked inline before the jump-cache lookup (`inline_cache`).
    pub(super) predict: Option<i32>,
    /// A counted loop's ordinary copy: where its back edge goes (its budget check; see
    /// `counted`), instead of the chain entry and the clean copy's entry check.
    pub(super) loop_top: Option<usize>,
    /// The inlined PC thunk whose check leaves through the prologue's trampoline
    /// (`runtime::THUNK_FAIL`): its call's return address and target (bytes from the
    /// block start), the instructions done before it and counted at the check. Its call
    /// is emitted out of line after the body.
    pub(super) thunk_fail: Option<(i32, i32, u32, u32)>,
    /// The guest's x87 pointers as the run of x87 instructions being emitted leaves
    /// them, not yet stored (`x87_flush`).
    pub(super) x87: X87,
    /// PC thunks are inlined without checking their bytes (`Options::thunk_deps`).
    pub(super) thunk_unchecked: bool,
    /// On a host whose `fxsave` hides FDP: what the run being emitted did to it (the
    /// `lea r9d, [offset]` of its last x87 memory operand, or `fninit`'s clearing),
    /// which `x87_flush` stores at the run's end (the guest registers the `lea` reads do
    /// not change within a run of x87 instructions but by `fnstsw ax`, before which it
    /// is stored).
    pub(super) x87_fdp: Fdp,
    /// The PLT stub's jump (`jmp [ebx + d]` or `jmp [d]`) that the block's closing call
    /// goes to, done at the call (see `block::plt_stub`).
    pub(super) plt: Option<Instruction>,
}

/// What the x87 instructions emitted since the last `Emitter::x87_flush` did to the
/// guest's FIP and FOP.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum X87 {
    /// Nothing (or only control instructions, which leave them).
    Unchanged,
    /// The last that moved FIP is at this offset in the page, with this opcode.
    Here(i32, u16),
    /// `fninit` cleared them, and none moved FIP since.
    Clear,
}

/// What the x87 instructions emitted since the last flush did to the guest's FDP, on a
/// host whose `fxsave` hides it (`Emitter::x87_fdp`).
pub(super) enum Fdp {
    /// Nothing.
    Unchanged,
    /// `fninit` cleared it, and no memory operand set it since.
    Clear,
    /// The `lea r9d, [offset]` of the last memory operand.
    Operand(Vec<u8>),
}

pub(super) fn asm(f: impl FnOnce(&mut CodeAssembler) -> Result<(), IcedError>) -> Option<Vec<u8>> {
    let mut a = CodeAssembler::new(64).ok()?;
    f(&mut a).ok()?;
    a.assemble(0).ok()
}

/// A host code sequence that depends only on a register or a constant (see `cached`).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Seq {
    /// Push a host register on the guest stack.
    Push(Register),
    /// Pop the guest stack into a host register.
    Pop(Register),
    /// `ret` with this many extra bytes popped.
    Ret(i32),
    Leave,
    /// Add the base of the segment whose base is at this offset of the state block.
    SegBase(i32),
    /// Load that base into r13d.
    SegLoad(i32),
    /// A string instruction (see `morph_cpu::isa`).
    /// A string instruction's form, its `rep` prefix, and whether the guest's XMM
    /// registers are live in the host's (a model with SSE).
    Str(Code, u8, bool),
}

/// The host code of `key`, assembled once by `make`: stack pushes and pops, returns,
/// `leave` and segment loads recur in almost every block, and iced's assembler (plus
/// `fix32`'s re-encoding) costs far more than copying the bytes.
pub(super) fn cached(key: Seq, make: impl FnOnce() -> Option<Vec<u8>>) -> Option<Vec<u8>> {
    thread_local! {
        static SEQS: std::cell::RefCell<rustc_hash::FxHashMap<Seq, Vec<u8>>> = Default::default();
    }
    if let Some(b) = SEQS.with(|s| s.borrow().get(&key).cloned()) {
        return Some(b);
    }
    let b = make()?;
    SEQS.with(|s| s.borrow_mut().insert(key, b.clone()));
    Some(b)
}

impl Emitter {
    pub(super) fn bytes(&mut self, b: &[u8]) {
        self.code.extend_from_slice(b);
    }

    /// `jmp rel32` to a shared routine.
    pub(super) fn jmp_shared(&mut self, to: Fixup) {
        self.code.push(0xe9);
        self.fixups.push((self.code.len(), to));
        self.code.extend_from_slice(&[0; 4]);
    }

    pub(super) fn encode(&mut self, ins: &Instruction) -> Option<Vec<u8>> {
        let r = self.encoder.encode(ins, 0);
        let b = self.encoder.take_buffer();
        r.ok()?;
        Some(b)
    }

    /// Encodes `ins` straight into the code (no allocation); false if it cannot be.
    pub(super) fn emit_encoded(&mut self, ins: &Instruction) -> bool {
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        self.encoder.set_buffer(scratch);
        let ok = self.encoder.encode(ins, 0).is_ok();
        let b = self.encoder.take_buffer();
        if ok {
            self.code.extend_from_slice(&b);
        }
        self.scratch = b;
        ok
    }

    /// Stores the guest's x87 pointers the instructions emitted since the last flush left
    /// (`runtime::x87_flush`), if they moved them: at the end of each run of x87
    /// instructions, so that wherever else the translation is (a branch, an exit, a
    /// helper call, any other instruction's fault) the image's shadow holds them; a
    /// fault inside a run finds them from the host's own FIP (`runtime::on_host_fault`).
    /// One store per run, not per instruction: the x87 n-body's inner loop has four
    /// runs of some forty x87 instructions.
    pub(super) fn x87_flush(&mut self) {
        let loaded = match std::mem::replace(&mut self.x87, X87::Unchanged) {
            X87::Unchanged => false,
            X87::Here(at, fop) => {
                runtime::x87_flush(Some((at, fop)), &mut self.code);
                true
            }
            X87::Clear => {
                runtime::x87_flush(None, &mut self.code);
                true
            }
        };
        self.fdp_flush(loaded);
    }

    /// Stores the guest's FDP the run's last x87 memory operand left, or 0 after
    /// `fninit`, if either is pending (`lower::fdp_store`; `runtime::x87_fdp`).
    pub(super) fn x87_fdp_flush(&mut self) {
        self.fdp_flush(false);
    }

    fn fdp_flush(&mut self, loaded: bool) {
        match std::mem::replace(&mut self.x87_fdp, Fdp::Unchanged) {
            Fdp::Unchanged => {}
            Fdp::Clear => runtime::x87_fdp(None, loaded, &mut self.code),
            Fdp::Operand(lea) => runtime::x87_fdp(Some(&lea), loaded, &mut self.code),
        }
    }

    /// The offset from the page VA (r14d) of `delta` bytes from the block start.
    pub(super) fn at(&self, delta: i32) -> i32 {
        self.page_off as i32 + delta
    }

    /// `lea r11, [r11 + n]` (flags untouched) for the instructions completed since the
    /// last count, `done` being the block's instructions completed at this point.
    pub(super) fn count(&mut self, done: u32) {
        if done > self.counted {
            runtime::lea_r11(done - self.counted, &mut self.code);
            self.counted = done;
        }
    }

    /// Continue at the target EIP in r13d: through the indirect-branch table (when on)
    /// or the jump cache, or by leaving to the dispatcher.
    pub(super) fn lookup(&mut self) {
        if self.opts.ibt {
            // Through the indirect-branch table; its miss routine takes the jump cache.
            self.table_lookup(false);
            return;
        }
        self.bytes(glue::indirect_lookup());
        self.fixups.push((self.code.len() - 4, Fixup::ExitCommon));
    }

    /// The length of the code `lookup` emits.
    fn lookup_len(&self) -> usize {
        if self.opts.ibt { glue::table_lookup(false).0.len() } else { glue::indirect_lookup().len() }
    }

    /// The indirect-branch table's lookup of the target EIP in r13d (see
    /// `glue::table_lookup`), its rel32 to the miss routine a fixup.
    fn table_lookup(&mut self, hit_counted: bool) {
        let (code, at) = glue::table_lookup(hit_counted);
        let start = self.code.len();
        self.bytes(code);
        self.fixups.push((start + at, Fixup::TableMiss));
    }

    /// Counts up to `done` instructions, then continues at the target EIP in r13d: at the
    /// predicted target if there is one and r13d is it, else through the jump cache.
    pub(super) fn exit_indirect(&mut self, done: u32) {
        let pending = done.saturating_sub(self.counted);
        if self.opts.ibt && self.predict.is_none() && (1..=127).contains(&pending) {
            // The table's hit counted with the instructions: one `lea r11` for both.
            self.bytes(&runtime::lea_r11_disp(((pending << runtime::ICOUNT_SHIFT) + 1) as i32));
            self.counted = done;
            self.table_lookup(true);
            return;
        }
        self.count(done);
        match self.predict.take() {
            Some(delta) => self.inline_cache(delta),
            None => self.lookup(),
        }
    }

    /// An indirect branch with a predicted target `delta` bytes from the block start, in
    /// this page: if the target EIP in r13d is that address (r14d plus its page offset),
    /// a direct jump to it, a chain site like any jump in the page; otherwise the
    /// jump-cache lookup. The test is flag-free: `ecx = ~r13d + r14d + off + 2`, which is
    /// `r14d + off - r13d + 1`, one exactly on a hit, and `loop` (decrement RCX, jump
    /// unless zero) leaves for the lookup unless it is (the guest's rcx is kept in r8).
    /// The check is relative to the page, so it holds wherever the page is mapped. A hit
    /// runs seven instructions and no load and falls through its one conditional branch,
    /// where a jump-cache hit runs fifteen, two of them loads on the target's dependency
    /// chain; a miss runs six more than the lookup alone. (With `jrcxz` taken on the
    /// hit instead, `fib` ran 1.1 to 2.4 s from run to run on the AMD host of
    /// docs/results.md, against 0.93 s every time this way.)
    fn inline_cache(&mut self, delta: i32) {
        // With `jrcxz` (taken on a hit), its rel8 jumps over the miss path: a lookup
        // beyond its reach (none is) leaves the branch to the lookup alone.
        let over = 3 + self.lookup_len();
        if self.opts.slow_loop && over >= 0x80 {
            self.lookup();
            return;
        }
        self.bytes(&[0x49, 0x89, 0xc8]); // mov r8, rcx
        self.bytes(&[0x44, 0x89, 0xe9]); // mov ecx, r13d
        self.bytes(&[0xf7, 0xd1]); // not ecx
        if self.opts.slow_loop {
            // ecx = r14d + off - r13d, zero on a hit: `jrcxz` over the lookup (which
            // ends in a jump) to the hit path.
            let plus1 = (self.at(delta) + 1).to_le_bytes();
            self.bytes(&[0x42, 0x8d, 0x8c, 0x31, plus1[0], plus1[1], plus1[2], plus1[3]]); // lea ecx, [rcx + r14 + off + 1]
            self.bytes(&[0xe3, over as u8]); // jrcxz hit
            self.bytes(&[0x4c, 0x89, 0xc1]); // miss: mov rcx, r8
            self.lookup();
            self.bytes(&[0x4c, 0x89, 0xc1]); // hit: mov rcx, r8
            self.jump(delta); // jmp rel32 (in the page: no `lea r13d` before it)
            return;
        }
        let plus2 = (self.at(delta) + 2).to_le_bytes();
        self.bytes(&[0x42, 0x8d, 0x8c, 0x31, plus2[0], plus2[1], plus2[2], plus2[3]]); // lea ecx, [rcx + r14 + off + 2]
        self.bytes(&[0xe2, 8]); // loop miss (over the 8 bytes of the hit path)
        self.bytes(&[0x4c, 0x89, 0xc1]); // hit: mov rcx, r8
        self.jump(delta); // jmp rel32 (in the page: no `lea r13d` before it)
        self.bytes(&[0x4c, 0x89, 0xc1]); // miss: mov rcx, r8
        self.lookup();
    }

    pub(super) fn in_page(&self, delta: i32) -> bool {
        (0..i64::from(PAGE_SIZE)).contains(&i64::from(self.at(delta)))
    }

    /// The rel32 field at `rel` (of a `jmp`, `jcc` or `call` just emitted) goes to `delta`
    /// bytes from the block start: a chain site in the page; for another page an
    /// out-of-line `lea r13d, [target]` and a site of its own, chained to the target's far
    /// entry, which checks the mapping (`runtime::prologue`).
    pub(super) fn branch_field(&mut self, rel: usize, delta: i32) {
        if self.in_page(delta) {
            self.sites.push(Site { rel, target_delta: delta, exit_jmp: 0 });
        } else {
            self.far.push((rel, delta));
        }
    }

    /// `jcc rel32` on condition `cc` (0 = `o` … 15 = `g`); returns the rel32 field's offset.
    pub(super) fn jcc(&mut self, cc: u8) -> usize {
        self.bytes(&[0x0f, 0x80 + cc, 0, 0, 0, 0]);
        self.code.len() - 4
    }

    /// `jcc` on condition `cc` to `delta` bytes from the block start (instructions
    /// counted): the `jcc` itself is the chain site; into another page with the target
    /// EIP in r13d first (flag-free, on the path that stays too), as the target's far
    /// entry takes it. (An out-of-line `lea r13d` and the site's `jmp` made a taken edge
    /// two taken host branches; stop 31: python 0.96, gawk 0.93, sort 0.93.)
    pub(super) fn jcc_site(&mut self, cc: u8, delta: i32) {
        if !self.in_page(delta) {
            self.bytes(&runtime::lea_r13_r14(self.at(delta)));
        }
        let rel = self.jcc(cc);
        self.sites.push(Site { rel, target_delta: delta, exit_jmp: 0 });
    }

    /// A direct jump to `delta` bytes from the block start (instructions counted): a
    /// chain site; into another page with the target EIP in r13d first, as the target's
    /// far entry takes it.
    pub(super) fn jump(&mut self, delta: i32) {
        if !self.in_page(delta) {
            self.bytes(&runtime::lea_r13_r14(self.at(delta)));
        }
        self.code.push(0xe9);
        let rel = self.code.len();
        self.code.extend_from_slice(&[0; 4]);
        self.sites.push(Site { rel, target_delta: delta, exit_jmp: 0 });
    }
}

/// iced assembles `[r12-4]`/`[rbp]` with 64-bit addresses; the guest needs the 32-bit
/// wrap, so stack and frame accesses are re-encoded with 32-bit base registers (which
/// adds the address-size prefix): `gs mov [r12d-4]` etc. A 64-bit address's 32-bit
/// displacement is a 4-byte one in a 32-bit address (`ret 0xfffc`'s `lea r12d, [r12d +
/// 0x10000]`: the decoder gives the 64-bit form displacement size 8, which the encoder
/// refuses with a 32-bit base; a random-code run found it).
pub(super) fn fix32(b: Vec<u8>) -> Option<Vec<u8>> {
    let mut d = Decoder::with_ip(64, &b, 0, DecoderOptions::NONE);
    let mut enc = Encoder::new(64);
    let mut out = Vec::new();
    while d.can_decode() {
        let mut i = d.decode();
        let base32 = match i.memory_base() {
            Register::R12 => Some(Register::R12D),
            Register::RBP => Some(Register::EBP),
            _ => None,
        };
        if let Some(r) = base32 {
            i.set_memory_base(r);
            if i.memory_displ_size() == 8 {
                i.set_memory_displ_size(4);
            }
        }
        enc.encode(&i, 0).ok()?;
        out.extend_from_slice(&enc.take_buffer());
    }
    Some(out)
}

/// `lea r8d, [r14 + d]` (the return address of an indirect call).
pub(super) fn fix_lea_r8(d: i32) -> Vec<u8> {
    asm(|a| a.lea(r8d, dword_ptr(r14 + d))).expect("lea")
}

pub(super) fn gpr_index(r: Register) -> usize {
    (r as usize) - (Register::EAX as usize)
}

impl Emitter {
    /// An empty emitter for a block of `n` instructions at `eip`.
    pub(super) fn new(eip: u32, n: usize, opts: Options) -> Emitter {
        Emitter {
            code: Vec::with_capacity(64 * n + 128),
            fixups: Vec::with_capacity(8),
            local: Vec::with_capacity(8),
            sites: Vec::with_capacity(4),
            far: Vec::with_capacity(4),
            encoder: Encoder::new(64),
            scratch: Vec::with_capacity(16),
            page_off: eip & (PAGE_SIZE - 1),
            counted: 0,
            side: Vec::with_capacity(4),
            opts,
            relocs: Vec::new(),
            predict: None,
            loop_top: None,
            thunk_fail: None,
            x87: X87::Unchanged,
            thunk_unchecked: false,
            x87_fdp: Fdp::Unchanged,
            plt: None,
        }
    }
}
