//! The translator: one guest basic block (IA-32) → position-independent x86-64.
//!
//! Because guest and host are both x86, most guest instructions are *re-encoded* by
//! iced-x86 rather than translated: registers stay the same registers (ESP becomes
//! r12d), and a memory operand `[base + index*s + d]` becomes `gs:[base + index*s + d]`
//! with a 32-bit address size, so the effective address wraps like the guest's and
//! lands in the process window. Guest TLS operands (`%gs:`/`%fs:`) first add the
//! guest segment base with flag-free `lea`s.
//!
//! Nothing EIP-dependent is baked in: return addresses, branch targets, exit EIPs and
//! fault EIPs are all `r14d + offset`, r14d holding the runtime VA of the block's page and
//! the offset being the in-page offset (the same at every address). A translation is
//! therefore valid at any virtual address that maps the same physical bytes — the
//! property the `physical` key policy relies on — and chaining within the page never
//! has to update r14d.
//!
//! Control transfers end the block, after one flag-free `lea r11, [r11 + n]` that counts
//! its instructions:
//! - direct jumps, both edges of a `jcc` and the fall-through are *sites*: the `jmp`'s
//!   or the `jcc`'s own rel32 starts at an exit stub and is later patched to the target
//!   translation (its body for a forward edge, its budget check for a backward one), so
//!   a chained loop runs guest code, `lea`, `jcc` and the check;
//! - a direct edge to another page is a site too, after `lea r13d, [target]`, chained to
//!   the target's *far entry* (`runtime::prologue`: the key and the check at the
//!   start of every translation), which checks the mapping's tag and the EIP;
//! - indirect jumps, indirect calls and returns go through the jump cache
//!   (`glue::indirect_lookup`) with the target in r13d;
//! - `int 0x80` leaves with a system-call exit.
//!
//! String instructions run as the host's own with RSI/RDI made host addresses (see
//! `string_seq`); `div`/`idiv` are re-encoded like other arithmetic: a divide error is a
//! host SIGFPE that the fault handler turns into a guest fault at the instruction, which
//! the interpreter then re-runs and raises precisely. Instructions whose 64-bit
//! re-encoding would differ (CX-addressed or segment-overridden string forms, stack forms
//! not handled here, `cpuid`...) are run by the reference interpreter through a helper
//! call, with the state spilled and reloaded around it: the interpreter stays the single
//! definition of their semantics.

use iced_x86::{FlowControl, Instruction, OpKind};
use morph_mem::{PAGE_SHIFT, PAGE_SIZE};

use crate::glue;
use crate::runtime::{self, EXIT_INDIRECT, off};

mod block;
pub(crate) use block::direct_jump;
mod counted;
mod emit;
mod lower;
mod stubs;
pub(crate) use stubs::ID_FIELD_BEFORE_EXIT_JMP;

use emit::Emitter;

/// The most guest instructions in one translation.
pub const MAX_INSTRUCTIONS: usize = 64;

/// A chain site: the rel32 of a `jmp` or `jcc` that initially goes to the site's exit
/// stub.
#[derive(Clone, Copy, Debug)]
pub struct Site {
    /// Offset (in the translation) of the jump's rel32 field.
    pub rel: usize,
    /// Target EIP minus the block's first EIP.
    pub target_delta: i32,
    /// Offset of the rel32 of the `jmp` that ends the site's exit stub (to `exit_common`;
    /// re-pointed to the shared jump-cache lookup when the target cannot be chained to).
    pub exit_jmp: usize,
}

/// Where a rel32 field must point once the translation is placed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fixup {
    /// The shared `exit_common` routine.
    ExitCommon,
    /// The shared `exit_nosave` routine.
    ExitNosave,
    /// The shared jump-cache lookup of the EIP in r13d.
    Lookup,
    /// The indirect-branch tables' miss routine (the `lea r8, [rip + rel32]` of a
    /// table lookup, `glue::table_lookup`).
    TableMiss,
}

/// An absolute host address baked into a translation: what a translation kept across
/// runs (`tcache`) must patch when it is loaded into another process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reloc {
    /// The helper function's address (`imm64`).
    Helper,
    /// The address of boxed helper instruction number `n` (`imm64`).
    Instruction(u32),
}

/// A translated block, not yet placed in the code buffer.
pub struct Translated {
    /// Host code (position-independent except for the fixups).
    pub code: Vec<u8>,
    /// Offset of the body: where the dispatcher and forward chains enter.
    pub body: usize,
    /// Offset of the chain entry (the budget check before the body): where backward
    /// chains enter.
    pub entry: usize,
    /// Chain sites.
    pub sites: Vec<Site>,
    /// rel32 fields to resolve against shared routines.
    pub fixups: Vec<(usize, Fixup)>,
    /// The 8-byte fields holding absolute host addresses, by offset.
    pub relocs: Vec<(usize, Reloc)>,
    /// `(host offset, guest offset from the page start, instructions before)` per guest
    /// instruction.
    pub points: Vec<(u32, u32, u32)>,
    /// Guest instructions in the block.
    pub instructions: u32,
    /// Guest bytes in the block.
    pub guest_len: u32,
    /// Instructions the helper runs (kept alive and unmoved: translated code points at
    /// them).
    #[allow(clippy::vec_box)]
    pub helper_instrs: Vec<Box<Instruction>>,
    /// How many instructions go through the helper.
    pub fallbacks: u32,
    /// Whether the block runs x87/MMX instructions natively (the guest FPU state must
    /// then be live in the host FPU).
    pub uses_fpu: bool,
    /// Calls of PC thunks done inline (see `block`).
    pub pc_thunks: u32,
    /// Whether its closing call takes a PLT stub's jump itself (see `block::plt_stub`).
    pub plt_call: bool,
    /// Whether its closing indirect branch checks a predicted target inline
    /// ([`Options::predict`]).
    pub predicted: bool,
    /// Whether it holds a counted loop's clean copy (`counted`), which sits at a 64-byte
    /// boundary if the translation's start does: it must be placed at one.
    pub align64: bool,
    /// The address of the PC thunk its inlined calls go to unchecked
    /// ([`Options::thunk_deps`]): the translation is valid only while that thunk's page
    /// holds the frame it held when translated.
    pub thunk_page: Option<u32>,
}

/// The translator's switches: what kinds of host code it may emit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// Pair guest calls and returns with host calls and returns on the return stack
    /// (`crate::ras`, `--ras`); off, every return takes the jump cache.
    pub ras: bool,
    /// Check an indirect branch's predicted target inline (`--no-ic` turns it off): a
    /// translation that ends in an indirect branch whose target, while the interpreter
    /// ran the block, was always one address in the same page compares the target with
    /// it and jumps there directly (a chain site), before the jump-cache lookup.
    pub predict: bool,
    /// Look indirect-branch targets up in the indirect-branch table (`crate::ibt`,
    /// `--no-ibt` turns it off); its misses take the jump cache.
    pub ibt: bool,
    /// Run counted self-loops as a clean copy after checking their trip count
    /// (`counted`; `--no-counted-loops` turns it off).
    pub counted: bool,
    /// Inline PC thunks without checking their bytes at run time when the engine keeps
    /// the translation dependent on the thunk's page instead (`Translated::thunk_page`:
    /// the page marked as code, its mapping checked where the translation is entered;
    /// see `lower::pc_thunk`). Off where translations are copied or kept across runs
    /// (`reuse`, `tcache`), which would not carry the dependency.
    pub thunk_deps: bool,
    /// The host runs `loop` slowly (Intel cores: about seven µops, where AMD's run it
    /// as one): the flag-free tests of inline caches and PC thunks then branch with
    /// `jrcxz`, taken when the test passes, instead of falling through a `loop`
    /// (`EngineConfig::translate_options` asks the host).
    pub slow_loop: bool,
    /// The modeled CPU has SSE: SSE instructions run re-encoded, with the guest's XMM
    /// registers in the host's XMM0–7 (which the translator's own code then leaves
    /// alone); without, they go to the interpreter, which raises `#UD`.
    pub sse: bool,
}

/// Translates the block starting at `eip`, whose bytes up to the end of its page are
/// `bytes`, as translation number `id`, decoding them itself (the tests and benchmarks;
/// the engine gives the interpreter's decoded blocks to [`translate_decoded`]). `None`
/// if its first instruction crosses the page (the interpreter runs it).
///
/// `bytes` may run up to `MAX_INSN_LEN - 1` bytes into the next page: an instruction that
/// straddles the page end is translated and ends the block (the caller then makes the
/// translation depend on both pages).
pub fn translate(bytes: &[u8], eip: u32, helper: usize, id: u32, opts: Options) -> Option<Translated> {
    translate_decoded(block::from_bytes(bytes, eip), |_| None, |_, _| false, eip, helper, id, opts)
}

/// Translates the block starting at `eip` as translation number `id`, from decoded
/// guest instructions: `fetch(at, out)` appends the decoded block at `at` (the
/// interpreter's, see `block`), false if it cannot be fetched. If the translation ends
/// in an indirect branch, `predict(block)` may name the offset in the page of the target
/// it expects (the interpreter's block at `block` holds the branch; see
/// [`Options::predict`]).
pub fn translate_decoded(
    fetch: impl FnMut(u32, &mut Vec<Instruction>) -> bool,
    predict: impl FnOnce(u32) -> Option<u32>,
    never_taken: impl Fn(u32, u32) -> bool,
    eip: u32,
    helper: usize,
    id: u32,
    opts: Options,
) -> Option<Translated> {
    let formed = block::form(fetch, eip);
    let pc_thunks = formed.thunks.len() as u32;
    // Thunk calls go unchecked if they all go to one thunk, whose four bytes lie in one
    // page (the translation then depends on that page: `Translated::thunk_page`).
    let mut thunk_targets = formed.thunks.iter().map(|&(k, _)| formed.instrs[k].near_branch32());
    let thunk_page = thunk_targets
        .next()
        .filter(|&t| opts.thunk_deps && (t & (PAGE_SIZE - 1)) <= PAGE_SIZE - 4 && thunk_targets.all(|u| u == t));
    // A closing call of a PLT stub takes the stub's jump itself (`block::plt_stub`) where
    // the translation can depend on the stub's page: one page besides its own, so that
    // of its unchecked PC thunk if that lies in another page.
    // (Checking the thunk's bytes at run time instead, to free the page for the stub,
    // gained nothing: stop 44.)
    let page = |a: u32| a >> PAGE_SHIFT;
    let thunk_dep = thunk_page.filter(|&t| page(t) != page(eip));
    let plt = formed.plt.filter(|s| opts.thunk_deps && thunk_dep.is_none_or(|t| page(t) == page(s.ip32())));
    let instrs = &formed.instrs;
    let last = *instrs.last()?;
    let mut e = Emitter::new(eip, instrs.len(), opts);
    e.thunk_unchecked = thunk_page.is_some();
    e.plt = plt;
    let thunk_page = if thunk_dep.is_some() { thunk_page } else { plt.map(|s| s.ip32()).or(thunk_page) };
    let indirect =
        matches!(last.flow_control(), FlowControl::IndirectBranch | FlowControl::IndirectCall | FlowControl::Return);
    if opts.predict && indirect {
        e.predict = predict(formed.last_block).map(|off| off as i32 - e.page_off as i32).filter(|&d| e.in_page(d));
    }
    let predicted = e.predict.is_some();
    // The budget exit, the far entry, the jump-cache entry and the chain entry (see
    // `runtime::prologue`); the body follows.
    let (prologue, budget_rel, lookup_rel, entry) = runtime::prologue(e.page_off);
    e.fixups.push((lookup_rel, Fixup::Lookup));
    e.bytes(&prologue);
    let body = e.code.len();
    debug_assert_eq!(runtime::jc_entry(body), entry - runtime::JC_ENTRY_BYTES);
    let mut helper_instrs = Vec::new();
    let mut relocs = Vec::new();
    let mut fallbacks = 0;
    // Guest instructions the block runs: an inlined PC thunk's two count, so that the
    // count (which `rdtsc` reads) is the interpreter's.
    let n = instrs.len() as u32 + 2 * pc_thunks;
    // A small loop whose last instruction branches back to its first is unrolled: the
    // copies but the last leave through an inverted branch (a side exit to the loop's
    // exit) and fall into the next copy, so the budget check and the instruction count
    // run once per `unroll` iterations.
    let self_loop =
        last.is_jcc_short_or_near() && last.op0_kind() == OpKind::NearBranch32 && last.near_branch32() == eip;
    let unroll: u32 = match n {
        _ if !self_loop => 1,
        1..=16 => 4,
        17..=32 => 2,
        _ => 1,
    };
    let total = n * unroll;
    let mut points = Vec::with_capacity(4 * instrs.len());
    let mut uses_fpu = false;
    // A counted loop: its clean copy first (after the entry check), then the ordinary
    // copy below, with a budget check of its own for its back edge.
    let counted = (self_loop && opts.counted && pc_thunks == 0).then(|| counted::analyse(instrs)).flatten();
    let mut budget_rels = vec![budget_rel];
    let align64 = match counted {
        Some(c) => clean_copy(&mut e, instrs, &c, &mut points, &mut budget_rels, &mut uses_fpu),
        None => false,
    };
    // Forward conditional branches to an instruction further on in the block (an
    // `if` without `else`): the taken edge jumps to that instruction's host code (the
    // *join*) instead of leaving through a side exit into another translation.
    let joins = joins(instrs);
    let len = instrs.len();
    // Per join (its index in `seq`): the jump's rel32 field, and the instructions done and
    // counted when it is taken.
    let mut taken: Vec<(usize, usize, u32, u32)> = Vec::new();
    let mut ended = false;
    // Guest instructions completed before the one being lowered (over all copies).
    let mut before = 0;
    let seq: Vec<&Instruction> = (0..unroll).flat_map(|_| instrs.iter()).collect();
    // For each position in `seq`, the next join after it (a run of pushes or pops stops
    // before it: a join starts its own code).
    let mut is_join = vec![false; len];
    for &j in joins.iter().flatten() {
        is_join[j] = true;
    }
    let mut next_join = vec![seq.len(); seq.len()];
    for j in (1..seq.len()).rev() {
        next_join[j - 1] = if is_join[j % len] { j } else { next_join[j] };
    }
    let mut k = 0;
    while let Some(&ins) = seq.get(k) {
        let thunk = formed.thunk(k % instrs.len());
        let goff = ins.ip32().wrapping_sub(eip);
        if is_join[k % len] || !x87_run(ins) {
            // A run of x87 instructions ends (or a join starts, which a path without the
            // run reaches): the guest's x87 pointers stored (see `Emitter::x87_flush`).
            e.x87_flush();
        }
        if let Some(i) = taken.iter().position(|t| t.0 == k) {
            // The join: the path that fell through ran the instructions the branch
            // skipped; it counts them ahead so that both paths arrive with as many done
            // as not yet counted (the taken one ran fewer and counted as many).
            let (_, rel, done_b, counted_b) = taken.swap_remove(i);
            let counted = counted_b + (before - done_b);
            runtime::lea_r11_signed(counted as i32 - e.counted as i32, &mut e.code);
            e.counted = counted;
            e.local.push((rel, e.code.len()));
        }
        // Instructions of the block completed but not yet counted in r11 when this one
        // starts (the fault handler and the helper add them).
        let pending = before - e.counted;
        points.push((e.code.len() as u32, e.at(goff as i32) as u32, pending));
        // A run of register pushes (or pops) moves ESP once (see `lower::stack_run`): a
        // fault inside it is taken at its first instruction (the point just pushed),
        // from which the interpreter runs the run again (nothing but memory it rewrites
        // with the same values has changed by then). The others' points (one per
        // instruction: a point gives the EIP of its instruction) sit after the run's
        // code, where the next instruction's point supersedes them.
        let run = if thunk.is_none() { lower::stack_run(&mut e, &seq[k..next_join[k]]) } else { 0 };
        if run > 1 {
            for ins in &seq[k + 1..k + run] {
                before += 1;
                let goff = ins.ip32().wrapping_sub(eip);
                points.push((e.code.len() as u32, e.at(goff as i32) as u32, before - e.counted));
            }
            before += 1;
            k += run;
            continue;
        }
        let copy = k - k % len;
        k += 1;
        before += if thunk.is_some() { 3 } else { 1 };
        if let Some(j) = joins[(k - 1) % len] {
            // An internal forward branch (flags untouched: the guest's own `jcc`).
            let cc = ins.condition_code() as u8 - iced_x86::ConditionCode::o as u8;
            let rel = e.jcc(cc);
            taken.push((copy + j, rel, before, e.counted));
            continue;
        }
        if followed(instrs, (k - 1) % len) {
            // A direct jump the block follows (`block::form`): its target's code comes
            // next; the jump itself is only counted.
            continue;
        }
        // A conditional side exit the profile never saw taken counts in an out-of-line
        // stub, off the path that stays (see `lower::inline`'s `Jcc`).
        let cold_exit = ins.is_jcc_short_or_near()
            && ins.near_branch32() != eip
            && never_taken(formed.block_of((k - 1) % len), ins.next_ip32());
        let next = ins.next_ip32().wrapping_sub(eip) as i32;
        let p = lower::Pos { eip, next, done: before, n, total, cold_exit };
        if let Some(r) = thunk {
            lower::pc_thunk(&mut e, ins, &p, r)?;
            continue;
        }
        let l = lower::instruction(&mut e, ins, &p)?;
        uses_fpu |= l.fpu;
        ended = l.ended;
        if l.helper {
            fallbacks += u32::from(k <= instrs.len());
            let boxed = Box::new(*ins);
            e.x87_flush();
            let at = e.code.len();
            helper_call(&mut e, helper, &boxed, pending, goff);
            let (ins_at, helper_at) = glue::helper_call_relocs();
            relocs.push((at + ins_at, Reloc::Instruction(helper_instrs.len() as u32)));
            relocs.push((at + helper_at, Reloc::Helper));
            helper_instrs.push(boxed);
            if ins.flow_control() != FlowControl::Next {
                // The interpreter has set EIP: leave through the dispatcher.
                e.count(p.done);
                e.bytes(&runtime::store_imm(off::EXIT, EXIT_INDIRECT));
                e.jmp_shared(Fixup::ExitCommon);
                ended = true;
            }
        }
        if ended {
            break;
        }
    }
    if !taken.is_empty() {
        return None; // a join not reached (not expected: every join precedes the last instruction)
    }
    e.x87_flush();
    let guest_len = last.next_ip32().wrapping_sub(eip);
    if !ended {
        // The block stops at the page end or the size limit: fall through to the next.
        e.count(total);
        e.jump(guest_len as i32);
    }
    lower::thunk_call(&mut e)?;
    let sites = stubs::emit(&mut e, id, &budget_rels);
    relocs.append(&mut e.relocs);
    Some(Translated {
        code: e.code,
        body,
        entry,
        sites,
        fixups: e.fixups,
        relocs,
        points,
        instructions: instrs.len() as u32,
        guest_len,
        helper_instrs,
        fallbacks,
        uses_fpu,
        pc_thunks,
        plt_call: plt.is_some(),
        predicted,
        align64,
        thunk_page,
    })
}

/// Emits the entry check and the clean copy of the counted loop `c` (the block
/// `instrs`, see `counted`) at the body's start, then the budget check the ordinary
/// copy's back edge enters (`Emitter::loop_top`). False, with nothing emitted, if an
/// instruction cannot be lowered on its own.
fn clean_copy(
    e: &mut Emitter,
    instrs: &[Instruction],
    c: &counted::Counted,
    points: &mut Vec<(u32, u32, u32)>,
    budget_rels: &mut Vec<usize>,
    uses_fpu: &mut bool,
) -> bool {
    use iced_x86::code_asm::*;
    let eip = instrs[0].ip32();
    let len = instrs.len();
    let mark = (e.code.len(), e.fixups.len(), e.local.len(), e.sites.len(), e.far.len(), e.side.len(), points.len());
    let relocs_mark = e.relocs.len();
    let r = runtime::host_gpr(c.reg);
    let bound_at = dword_ptr(r15 + off::LOOP_BOUND);
    // n = (bound - reg) / step (stepping up) or (reg - bound) / step, in r8d; the bound
    // kept for the fault handler; 1 <= n <= LIMIT, else the ordinary copy.
    let guard = emit::asm(|a| {
        match (c.bound, c.down) {
            (counted::Bound::Imm(b), false) => {
                a.mov(r8d, b)?;
                a.sub(r8d, r)?;
                a.mov(bound_at, b)?;
            }
            (counted::Bound::Imm(b), true) => {
                a.mov(r8d, r)?;
                a.sub(r8d, b as i32)?;
                a.mov(bound_at, b)?;
            }
            (counted::Bound::Reg(i), down) => {
                let b = runtime::host_gpr(i);
                if down {
                    a.mov(r8d, r)?;
                    a.sub(r8d, b)?;
                } else {
                    a.mov(r8d, b)?;
                    a.sub(r8d, r)?;
                }
                a.mov(bound_at, b)?;
            }
        }
        Ok(())
    });
    let Some(guard) = guard else { return false };
    e.bytes(&guard);
    // A distance that is not a multiple of the step never meets the bound.
    let mut to_ordinary = Vec::new();
    if c.shift > 0 {
        let Some(test) = emit::asm(|a| a.test(r8d, (1i32 << c.shift) - 1)) else { return false };
        e.bytes(&test);
        to_ordinary.push(e.jcc(0x5)); // jne
        let Some(shr) = emit::asm(|a| a.shr(r8d, c.shift)) else { return false };
        e.bytes(&shr);
    }
    let Some(range) = emit::asm(|a| {
        a.lea(r9d, dword_ptr(r8 - 1))?;
        a.cmp(r9d, counted::LIMIT as i32 - 1)
    }) else {
        return false;
    };
    e.bytes(&range);
    to_ordinary.push(e.jcc(0x3)); // jae (unsigned n - 1 >= LIMIT)
    // All n iterations counted at once.
    let Some(charge) = emit::asm(|a| {
        a.imul_3(r8, r8, len as i32)?;
        a.shl(r8, runtime::ICOUNT_SHIFT)?;
        a.add(r11, r8)
    }) else {
        return false;
    };
    e.bytes(&charge);
    // The copy at a 64-byte boundary (the translation's start is placed at one).
    let pad = e.code.len().next_multiple_of(64) - e.code.len();
    match pad {
        0 => {}
        1 => e.bytes(&[0x90]),
        2 => e.bytes(&[0x66, 0x90]),
        _ => {
            e.bytes(&[0xeb, (pad - 2) as u8]);
            e.bytes(&[0xcc; 62][..pad - 2]);
        }
    }
    let top = e.code.len();
    let restore = |e: &mut Emitter, points: &mut Vec<(u32, u32, u32)>| {
        e.code.truncate(mark.0);
        e.fixups.truncate(mark.1);
        e.local.truncate(mark.2);
        e.sites.truncate(mark.3);
        e.far.truncate(mark.4);
        e.side.truncate(mark.5);
        points.truncate(mark.6);
        e.relocs.truncate(relocs_mark);
        e.x87 = emit::X87::Unchanged;
        e.x87_fdp = emit::Fdp::Unchanged;
        false
    };
    let mut fpu = false;
    for (i, ins) in instrs.iter().enumerate() {
        let goff = ins.ip32().wrapping_sub(eip);
        if !x87_run(ins) {
            e.x87_flush();
        }
        points.push((e.code.len() as u32, e.at(goff as i32) as u32, counted::point(c, len, i)));
        if i + 1 == len {
            break;
        }
        let n = len as u32;
        let next = ins.next_ip32().wrapping_sub(eip) as i32;
        let p = lower::Pos { eip, next, done: i as u32 + 1, n, total: n, cold_exit: false };
        match lower::instruction(e, ins, &p) {
            Some(l) if !l.helper && !l.ended => fpu |= l.fpu,
            _ => return restore(e, points),
        }
    }
    // The back edge: the guest's `jne`, short if it reaches.
    let back = top as i64 - (e.code.len() as i64 + 2);
    if back >= -128 {
        e.bytes(&[0x75, back as i8 as u8]);
    } else {
        let rel = e.jcc(0x5);
        e.local.push((rel, top));
    }
    // The exit: all counted already.
    let guest_len = instrs[len - 1].next_ip32().wrapping_sub(eip);
    e.jump(guest_len as i32);
    // The ordinary copy's entry: a budget check the fault handler recognizes, as the
    // prologue's (`runtime::BUDGET_TRAP` bytes after a jump to the budget exit, which
    // is never reached but by the handler).
    let out = e.code.len();
    e.code.push(0xe9);
    budget_rels.push(e.code.len());
    e.bytes(&[0; 4]);
    let check = out + runtime::BUDGET_TRAP - 4;
    e.code.resize(check, 0xcc);
    e.bytes(&runtime::BUDGET_STEP); // lea r10, [r10 + 1]
    e.bytes(&runtime::BUDGET_LOAD); // movzx r8d, byte [r10]
    for rel in to_ordinary {
        e.local.push((rel, check));
    }
    e.loop_top = Some(check);
    debug_assert_eq!(e.counted, 0, "the clean copy counts nothing itself");
    *uses_fpu |= fpu;
    true
}

/// For each instruction of a block, the index of the instruction its taken edge joins if
/// it is a conditional branch forward to an instruction further on in the block (not
/// past the last, which may end it) that no earlier such branch joins: that edge becomes
/// a jump inside the translation. Only the host-encodable forms (32-bit operand size).
/// Whether `ins` can continue a run of x87 instructions (`Emitter::x87_flush`): it runs
/// on the host FPU, lowered to itself (if its encoding fails it goes to the helper, whose
/// call stores the run's pointers first). MMX and SSE instructions leave FIP as the host
/// does.
fn x87_run(ins: &Instruction) -> bool {
    morph_cpu::isa::lowering(ins) == morph_cpu::isa::Lower::Fpu
}

/// Whether instruction `i` of `instrs` is a direct jump whose target is the next
/// instruction of the translation (a jump `block::form` followed).
fn followed(instrs: &[Instruction], i: usize) -> bool {
    direct_jump(&instrs[i]).is_some_and(|t| instrs.get(i + 1).is_some_and(|next| next.ip32() == t))
}

fn joins(instrs: &[Instruction]) -> Vec<Option<usize>> {
    let mut out = vec![None; instrs.len()];
    let Some(last) = instrs.len().checked_sub(1) else { return out };
    for (i, ins) in instrs.iter().enumerate().take(last) {
        let forward = ins.is_jcc_short_or_near()
            && ins.op0_kind() == OpKind::NearBranch32
            && ins.near_branch32() > ins.ip32()
            && matches!(morph_cpu::isa::lowering(ins), morph_cpu::isa::Lower::Inline(morph_cpu::isa::Inline::Jcc));
        if !forward {
            continue;
        }
        let target = ins.near_branch32();
        let Ok(j) = instrs[i + 1..=last].binary_search_by_key(&target, |x| x.ip32()) else { continue };
        let j = i + 1 + j;
        if !out.contains(&Some(j)) {
            out[i] = Some(j);
        }
    }
    out
}

/// A call of the interpreter (`helper`) on `ins`, with `pending` instructions of the
/// block completed but not counted; leaves the translation if it raised an exit.
fn helper_call(e: &mut Emitter, helper: usize, ins: &Instruction, pending: u32, goff: u32) {
    let (before, after) = glue::helper_call(helper, ins as *const Instruction as usize, pending, e.at(goff as i32));
    e.bytes(&before);
    e.bytes(&[0x0f, 0x85]);
    e.fixups.push((e.code.len(), Fixup::ExitNosave));
    e.bytes(&[0; 4]);
    e.bytes(&after);
}
