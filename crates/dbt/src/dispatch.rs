//! The dispatcher: per block start, find the key's slot, run its translation or
//! interpret the block, count, and translate the hot.

use morph_cpu::{CachedBlock, Cpu, Exit, Interp};
use morph_mem::{AddressSpace, Frame, PAGE_SIZE};

use crate::Engine;
use crate::clock::{self, Activity};

/// Interprets one block at `cpu.eip`, its decoded block taken from (and left in)
/// `cache`, and counts the time.
pub(crate) fn interpret(
    interp: &mut Interp,
    ticks: &mut clock::Ticks,
    cpu: &mut Cpu,
    mem: &mut AddressSpace,
    cache: &mut Option<CachedBlock>,
) -> Result<(), Exit> {
    ticks.switch(Activity::Interp);
    interp.run_block_cached(cpu, mem, cache)
}

impl Engine {
    /// Runs process `ctx` until a system call, a fault or about `budget` instructions.
    pub fn run(&mut self, cpu: &mut Cpu, mem: &mut AddressSpace, ctx: u32, budget: u64) -> Exit {
        let e = self.run_fpu_lazy(cpu, mem, ctx, budget);
        // The caller reads and writes the x87 state in memory (signal frames, fork,
        // another thread's run next): it goes back there if translated code left it in
        // the host FPU.
        morph_cpu::x87::fpu_from_host(cpu);
        e
    }

    /// As [`Engine::run`], but the guest's x87/MMX state may stay in the host FPU
    /// (`Cpu::fpu_in_host`), as between two translations: the caller stores it
    /// (`morph_cpu::x87::fpu_from_host`) before anything reads or writes `cpu.fpu`, or
    /// another guest thread runs. The OS layer runs a system call that touches no FPU
    /// state without the `fxsave`, `fninit`, `fldcw` and `fxrstor` that storing and
    /// loading it again cost (`getppid` in a loop that also uses x87: 282 ns a call →
    /// 109 ns).
    pub fn run_fpu_lazy(&mut self, cpu: &mut Cpu, mem: &mut AddressSpace, ctx: u32, budget: u64) -> Exit {
        if !self.cfg.translate {
            self.ticks.start();
            self.ticks.switch(Activity::Interp);
            let e = self.interp.run(cpu, mem, budget);
            self.ticks.switch(Activity::Outside);
            return e;
        }
        self.ticks.start();
        let e = self.dispatch_loop(cpu, mem, ctx, budget);
        self.ticks.switch(Activity::Outside);
        e
    }

    /// `run` with translation on.
    pub(crate) fn dispatch_loop(&mut self, cpu: &mut Cpu, mem: &mut AddressSpace, ctx: u32, budget: u64) -> Exit {
        // Code made from a frame that this space also maps elsewhere, writable (shared
        // memory, a file mapped twice, another process's translation): protect those
        // aliases before translated stores can reach them.
        mem.protect_code_aliases();
        // The write protection a fork left to this space's next run (see
        // `AddressSpace::settle_fork`); if the host refuses it, the window is emptied
        // instead and refills with the table's protections.
        if mem.settle_fork().is_err() {
            mem.unhost_all();
        }
        let start = cpu.icount;
        loop {
            let used = cpu.icount - start;
            if used >= budget {
                return Exit::Budget;
            }
            if mem.phys().code_epoch() != self.epoch {
                self.sync_code(mem);
            }
            if self.over_capacity() {
                self.flush();
            }
            let eip = cpu.eip;
            let mut pte = mem.pte(eip);
            if pte.readable() && !pte.has_frame() {
                // A page the process has not touched yet (a file page not filled, a
                // demand-zero page): given its frame first, as the interpreter's fetch
                // would, so that the block's run is dispatched and counted under its key
                // like any other. (Left to the fetch, the first run of the first block
                // to touch a page in each process went uncounted, and which block that
                // was depended on the page cache's read-around.) A fill that fails is
                // the interpreter's to raise.
                let _ = mem.check_read(eip, 1);
                pte = mem.pte(eip);
            }
            // With the trap flag set no translation runs: the interpreter single-steps;
            // nor with the alignment-check flag set, or DS, ES or SS not flat
            // (translated code addresses memory without their selectors and alignment):
            // the interpreter checks each access.
            let traced = cpu.careful();
            let r = if let Some(frame) = (!traced && pte.readable() && pte.has_frame()).then(|| pte.frame()) {
                let key = self.cfg.key.key(eip, frame, ctx);
                self.stats.lookups += 1;
                let i = self.dispatch_slot(key);
                let slot = &mut self.slots[i as usize];
                match slot.live_from(frame, eip, mem) {
                    Some(l) => {
                        self.stats.hits += 1;
                        if l.owner != ctx {
                            self.stats.foreign_hits += 1;
                        }
                        self.enter(l.body.get() as usize, frame, ctx, cpu, mem, budget - used)
                    }
                    None => {
                        self.stats.misses += 1;
                        slot.count += 1;
                        // A run in another address space than the last one's: code that
                        // recurs from process to process (a program's start-up, each
                        // fork's path through a shell) counts more. The key names the
                        // code only under `physical`, `file` and `content` (under
                        // `virtual` a slot counts whatever each space maps at its
                        // address), but the credit is the configuration's under every
                        // policy, so that an ablation of keys varies the key alone.
                        let credit = match self.cfg.space_credit {
                            0 => 0,
                            c => slot.earn(mem.id(), c),
                        };
                        let loaded = if slot.count == 1 && self.tcache.is_some() {
                            self.load_persistent(key, eip, frame, mem, ctx)
                        } else {
                            None
                        };
                        let slot = &mut self.slots[i as usize];
                        // Hot by the credit of runs elsewhere, not yet by its own runs.
                        let credited = slot.count <= self.cfg.threshold;
                        if let Some(t) = loaded {
                            let body = self.trans[t as usize].body;
                            self.enter(body, frame, ctx, cpu, mem, budget - used)
                        } else if slot.count.saturating_add(credit) <= self.cfg.threshold
                            || self.untranslatable.contains(&key)
                        {
                            let r = interpret(&mut self.interp, &mut self.ticks, cpu, mem, &mut slot.block);
                            if let Some(h) = slot.block.as_ref().map(CachedBlock::prefetch_hint)
                                && let Some(p) = self.slots.get_mut(self.pred_slot as usize)
                            {
                                p.succ_hint = h;
                            }
                            r
                        } else if let Some(t) = self.translate(key, eip, frame, mem, ctx) {
                            self.stats.credited_translations += u64::from(credited);
                            let body = self.trans[t as usize].body;
                            self.enter(body, frame, ctx, cpu, mem, budget - used)
                        } else {
                            self.untranslatable.insert(key);
                            interpret(&mut self.interp, &mut self.ticks, cpu, mem, &mut None)
                        }
                    }
                }
            } else {
                interpret(&mut self.interp, &mut self.ticks, cpu, mem, &mut None) // raises the fetch fault
            };
            if let Err(e) = r {
                return e;
            }
        }
    }

    /// Runs translated code from `body` (the translation at `cpu.eip`, made from
    /// `frame`), after making it, and the other translations of its page, jump-cache
    /// entries of process `ctx`.
    pub(crate) fn enter(
        &mut self,
        body: usize,
        frame: Frame,
        ctx: u32,
        cpu: &mut Cpu,
        mem: &mut AddressSpace,
        budget: u64,
    ) -> Result<(), Exit> {
        let mapping = (mem.mapping_id(), self.cfg.key.jump_cache_ctx(ctx));
        let phys = mem.phys();
        if self.jc.select(mapping, |m| phys.mapping_live(m)) {
            self.unlink_far(true);
        }
        let eip = cpu.eip;
        self.note_entry(frame, eip, mem.id());
        self.prefill(eip, frame, ctx);
        self.jc.set(eip, (self.code_base + crate::runtime::jc_entry(body)) as u64);
        self.execute(body, cpu, mem, budget)
    }

    /// Puts in the jump cache every live translation made from `frame` that a dispatch
    /// of its VA on the page of `eip` would find for process `ctx` (all of them under
    /// `physical`; under `virtual` and `process`, those made at that VA, and by `ctx`),
    /// once per page until the cache is emptied. A process entering a page of shared
    /// code for the first time then reaches the page's other translations through the
    /// jump cache instead of one dispatcher round trip each.
    pub(crate) fn prefill(&mut self, eip: u32, frame: Frame, ctx: u32) {
        let page = eip & !(PAGE_SIZE - 1);
        if self.jc.page_done(page) {
            return;
        }
        let Some(list) = self.by_frame.get(&frame) else { return };
        for e in list.iter().filter(|e| !e.straddles && !e.thunk) {
            let va = page | e.key.page_offset();
            if self.cfg.key.key(va, frame, ctx) == e.key {
                self.jc.set(va, (self.code_base + crate::runtime::jc_entry(e.body as usize)) as u64);
            }
        }
    }
}
