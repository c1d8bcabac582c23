//! The boundary between the engine and translated code: the runtime stubs (entry,
//! exits, jump-cache lookup), entering a translation and decoding its exit, and the
//! fallback helper that runs one guest instruction for translated code.

use iced_x86::Instruction;
use morph_cpu::{Cpu, Exit, Interp};
use morph_mem::{AddressSpace, PAGE_SIZE};

use crate::Engine;
use crate::clock::Activity;
use crate::code::CodeBuffer;
use crate::glue;
use crate::runtime::{
    self, EXIT_BRANCH, EXIT_BUDGET, EXIT_FAULT, EXIT_HELPER, EXIT_INDIRECT, EXIT_SYSCALL, JitState, LIVE_FLAGS,
};

/// The context the fallback helper needs, reachable from the state block.
pub(crate) struct HelperCtx {
    pub(crate) cpu: *mut Cpu,
    pub(crate) mem: *mut AddressSpace,
    pub(crate) interp: *mut Interp,
    pub(crate) pending: Option<Exit>,
    pub(crate) epoch: u64,
}

impl Engine {
    pub(crate) fn emit_runtime(&mut self) {
        let fits = |c: &mut CodeBuffer, bytes: Vec<u8>| {
            let at = c.offset();
            assert!(c.extend(&bytes), "the runtime fits in an empty code buffer");
            at
        };
        self.enter_off = fits(&mut self.code, glue::enter_trampoline());
        self.exit_common_off = fits(&mut self.code, glue::exit_common(self.cfg.cpu.has_sse()));
        self.exit_nosave_off = fits(&mut self.code, glue::exit_nosave());
        let (mut lookup, rel) = glue::shared_lookup();
        let at = self.code.offset();
        let to_exit = (self.exit_common_off as i64 - (at + rel + 4) as i64) as i32;
        lookup[rel..rel + 4].copy_from_slice(&to_exit.to_le_bytes());
        self.lookup_off = fits(&mut self.code, lookup);
        // The indirect-branch tables' miss routine.
        let (mut miss, rel) = glue::table_miss();
        let at = self.code.offset();
        let to_exit = (self.exit_common_off as i64 - (at + rel + 4) as i64) as i32;
        miss[rel..rel + 4].copy_from_slice(&to_exit.to_le_bytes());
        self.table_miss_off = fits(&mut self.code, miss);
        self.fault_map.exit_common = self.exit_common_off;
        self.refresh_code_base();
        self.jc.set_table_bias((self.code_base + self.table_miss_off) as u64);
        // Entries point into the code that was there: none may hit again.
        self.flush_jump_cache();
    }

    /// Empties the jump cache (code moved or was dropped).
    pub(crate) fn flush_jump_cache(&mut self) {
        self.jc.invalidate();
        self.unlink_far(true);
    }

    /// Records where the code is for the fault handler (the buffer never moves; only
    /// its length grows).
    pub(crate) fn refresh_code_base(&mut self) {
        self.code_base = self.code.base();
        self.fault_map.code_base = self.code_base;
        self.fault_map.code_len = self.code.offset();
    }

    /// Runs translation `t`; returns `Err` for exits the caller must see.
    pub(crate) fn execute(
        &mut self,
        body: usize,
        cpu: &mut Cpu,
        mem: &mut AddressSpace,
        budget: u64,
    ) -> Result<(), Exit> {
        self.ticks.switch(Activity::Exec);
        let mut hctx = HelperCtx {
            cpu: cpu as *mut Cpu,
            mem: mem as *mut AddressSpace,
            interp: &mut self.interp as *mut Interp,
            pending: None,
            epoch: mem.phys().code_epoch(),
        };
        {
            let st = &mut self.jc.frame.state;
            st.gpr = cpu.gpr;
            st.eflags = cpu.eflags & LIVE_FLAGS;
            st.page_va = cpu.eip & !(PAGE_SIZE - 1);
            st.eip = cpu.eip;
            // Chained entries allowed: a block runs 1..=MAX_INSTRUCTIONS instructions, so
            // the slice ends after `budget` to MAX_INSTRUCTIONS × `budget` instructions
            // (typically a few times `budget`), with a single exit and deterministically.
            st.budget_ptr = runtime::budget_pointer(self.fault_map.budget_guard, budget);
            st.icount = 0;
            st.exit = 0;
            // SAFETY: the engine's frame, made by `JitFrame::allocate`.
            unsafe { runtime::set_seg_probes(st, cpu) };
            st.ctx = (&mut hctx as *mut HelperCtx).cast();
            st.jc_tag = u64::from(self.jc.tag) << 32;
            // Return-stack entries hold no tag: the stack is emptied whenever the tag
            // changes (another mapping, or translations dropped; see `ras`).
            if (self.ras_tag, self.ras_resets) != (st.jc_tag, self.jc.resets) {
                (self.ras_tag, self.ras_resets) = (st.jc_tag, self.jc.resets);
                self.ras.clear(st);
            }
            st.window = mem.host_base() as u64;
            st.ras_misses = 0;
            st.window_faults = 0;
            st.fpu = &mut *cpu.fpu;
            st.fpu_live = u8::from(self.fpu_live);
            // The guest's x87 state is the host FPU's from here until an exit (or a
            // helper call) stores it; the exit that leaves it there says so in `fpu_left`.
            // (Only an exit of this engine leaves it there, once `fpu_live`, which stays.)
            st.fpu_in_host = u8::from(std::mem::take(&mut cpu.fpu_in_host));
            st.fpu_left = 0;
            if st.fpu_live != 0 && st.fpu_in_host == 0 {
                // To be loaded from the image: the guest's x87 pointers kept apart from
                // the host's (see `FpuState::park_pointers`).
                cpu.fpu.park_pointers();
            }
        }
        let window = mem.host_base();
        runtime::set_window(window);
        let base = self.code_base;
        self.fault_map.window = window;
        self.fault_map.state = &mut self.jc.frame.state;
        self.fault_map.aspace = mem as *mut AddressSpace;
        runtime::set_fault_map(&*self.fault_map);
        let body = base + body;
        // SAFETY: `enter` is the trampoline emitted by `emit_runtime` into this buffer; it
        // follows the C ABI, saves the callee-saved registers, and runs translated code
        // that touches only the guest window (through gs), the state block and, via the
        // helper, the CPU, memory and interpreter passed in `hctx`, none of which is used
        // by this function until it returns. The buffer is only changed (and can only
        // move) in the dispatcher, after which `code_base` is re-read.
        unsafe {
            let enter: extern "C" fn(*mut JitState, usize) = std::mem::transmute(base + self.enter_off);
            enter(&mut self.jc.frame.state, body);
        }
        runtime::set_fault_map(std::ptr::null());
        let st = &self.jc.frame.state;
        cpu.fpu_in_host = st.fpu_left != 0;
        if st.fpu_live != 0 && st.fpu_left == 0 {
            // The exit saved the state: the x87 pointers are the guest's, which
            // translated code kept (those the host's `fxsave` stored are its own).
            cpu.fpu.unpark_pointers();
        }
        self.stats.fpu_lazy_exits += u64::from(st.fpu_left);
        cpu.gpr = st.gpr;
        cpu.eflags = (cpu.eflags & !LIVE_FLAGS) | (st.eflags & LIVE_FLAGS);
        cpu.eip = st.eip;
        let (executed, jc_hits) = runtime::split_count(st.icount);
        cpu.icount += executed;
        self.stats.translated_instructions += executed;
        self.stats.jump_cache_hits += jc_hits;
        self.stats.ras_misses += st.ras_misses;
        self.stats.window_faults += st.window_faults;
        if let Some(n) = self.stats.exits.get_mut((st.exit as usize).wrapping_sub(1)) {
            *n += 1;
        }
        match st.exit {
            EXIT_BRANCH => {
                if self.cfg.chain {
                    self.try_chain(st.exit_site >> 8, (st.exit_site & 0xff) as usize, cpu.eip, mem);
                }
                Ok(())
            }
            EXIT_INDIRECT | EXIT_BUDGET => Ok(()),
            EXIT_SYSCALL => Err(Exit::Syscall),
            EXIT_FAULT => {
                // Re-run the instruction in the interpreter: it completes a write to a
                // copy-on-write or code page, or raises the precise guest fault. Its
                // bytes are those translated: translated code runs only while its pages
                // hold what it was made from (a write to them is itself such a fault,
                // at the writing instruction, and drops the translation before the next
                // dispatch), so the instruction is decoded from the guest's memory at
                // the fault's EIP (keeping each translation's decoded instructions for
                // this rare path cost 40 bytes of heap per translated instruction).
                self.stats.host_faults += 1;
                self.interp.step_at(cpu, mem)
            }
            EXIT_HELPER => match hctx.pending.take() {
                Some(e) => Err(e),
                None => Ok(()),
            },
            other => unreachable!("bad exit code {other}"),
        }
    }
}

/// `ins` as if decoded at `eip` (same bytes, another address): instruction pointers and
/// relative branch targets move with it.
pub(crate) fn relocated(ins: &Instruction, eip: u32) -> Instruction {
    let delta = eip.wrapping_sub(ins.ip32());
    if delta == 0 {
        return *ins;
    }
    let mut i = *ins;
    i.set_ip32(eip);
    i.set_next_ip32(ins.next_ip32().wrapping_add(delta));
    for op in 0..i.op_count() {
        if let iced_x86::OpKind::NearBranch32 = i.op_kind(op) {
            i.set_near_branch32(ins.near_branch32().wrapping_add(delta));
        }
    }
    i
}

/// The fallback: runs one guest instruction in the reference interpreter on behalf of
/// translated code. Returns 0 to continue, 1 to leave (the state says why).
pub(crate) extern "C" fn helper(st: *mut JitState, ins: *const Instruction) -> u32 {
    // SAFETY: translated code passes its own state block and an instruction owned by
    // the translation; `ctx` was set by `execute` to a live HelperCtx whose pointers are
    // not otherwise used while translated code runs.
    unsafe {
        let st = &mut *st;
        let h = &mut *(st.ctx as *mut HelperCtx);
        let (cpu, mem, interp) = (&mut *h.cpu, &mut *h.mem, &mut *h.interp);
        cpu.gpr = st.gpr;
        cpu.eflags = (cpu.eflags & !LIVE_FLAGS) | (st.eflags & LIVE_FLAGS);
        cpu.eip = st.eip;
        // The instruction was decoded where the block was first translated; under the
        // physical key the block may now run at another address: relocate it.
        let ins = relocated(&*ins, st.eip);
        // The instruction count as the guest sees it here (rdtsc reads it).
        let entry = cpu.icount;
        cpu.icount = entry + runtime::split_count(st.icount).0 + u64::from(st.helper_k);
        let before = cpu.icount;
        let interp_before = interp.stats.instructions;
        // The glue saved the FPU state around the call (if it is live): with the guest's
        // FIP, which translated code kept, for the interpreter, and back for the code.
        if st.fpu_live != 0 {
            cpu.fpu.unpark_pointers();
        }
        let r = interp.step(cpu, mem, &ins);
        if st.fpu_live != 0 {
            cpu.fpu.park_pointers();
        }
        let retired = cpu.icount - before;
        cpu.icount = entry;
        // Counted as executed in the translation, not as interpreted.
        interp.stats.instructions = interp_before;
        st.gpr = cpu.gpr;
        st.eflags = cpu.eflags & LIVE_FLAGS;
        st.eip = cpu.eip;
        // (Translated code passes its frame's state: see above.)
        runtime::set_seg_probes(st, cpu);
        match r {
            Ok(()) if mem.phys().code_epoch() == h.epoch && !cpu.careful() => 0,
            Ok(()) => {
                // The instruction wrote code: leave so the engine drops stale code. Or
                // it set the trap flag (`popf`): leave, the interpreter single-steps. Or
                // it set the alignment-check flag, or loaded DS, ES or SS with another
                // segment than the flat one: leave, the interpreter runs the process
                // until they are clear and flat again.
                st.icount += u64::from(st.helper_k) + retired;
                st.exit = EXIT_INDIRECT;
                1
            }
            Err(e) => {
                st.icount += u64::from(st.helper_k) + retired;
                h.pending = Some(e);
                st.exit = EXIT_HELPER;
                1
            }
        }
    }
}
