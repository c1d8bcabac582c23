//! Cache maintenance: retiring translations, dropping those whose code was written
//! or whose process is gone, and flushing the whole cache.

use morph_mem::AddressSpace;

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use crate::Engine;
use crate::slots::NO_SLOT;

impl Engine {
    /// Forgets everything translated for process `ctx` (at its exec and exit) under the
    /// `process` policy.
    pub fn drop_context(&mut self, ctx: u32) {
        let policy = self.cfg.key;
        if !policy.drops_at_exec() {
            return;
        }
        let dead: Vec<u32> = self
            .index
            .iter()
            .filter(|(k, _)| policy.owner(**k) == Some(ctx))
            .filter_map(|(_, &i)| self.slots[i as usize].live().map(|l| l.id))
            .collect();
        for t in dead {
            self.kill(t);
        }
        // The process's keys are never dispatched again: their slots go to new keys (their
        // decoded blocks let go now), and no prediction may lead to one.
        let (slots, free) = (&mut self.slots, &mut self.free_slots);
        self.index.retain(|&k, &mut i| {
            let mine = policy.owner(k) == Some(ctx);
            if mine {
                slots[i as usize] = crate::slots::Slot::default();
                free.push(i);
            }
            !mine
        });
        self.slots.iter_mut().for_each(|s| (s.succ, s.succ2) = (NO_SLOT, NO_SLOT));
        self.prev_slot = NO_SLOT;
        self.pred_slot = NO_SLOT;
    }

    /// Marks translation `t` dead and drops it from its frame's list.
    pub(crate) fn retire(&mut self, t: u32) {
        let tr = &mut self.trans[t as usize];
        tr.alive = false;
        for f in std::iter::once(tr.frame).chain(tr.frame2).chain(tr.thunk_frame) {
            if let Some(list) = self.by_frame.get_mut(&f) {
                list.retain(|e| e.id != t);
            }
        }
    }

    pub(crate) fn kill(&mut self, t: u32) {
        self.flush_jump_cache();
        if self.trans[t as usize].alive {
            self.retire(t);
            let key = self.trans[t as usize].key;
            if let Some(&i) = self.index.get(&key)
                && let Some(s) = self.slots.get_mut(i as usize)
                && s.live().is_some_and(|l| l.id == t)
            {
                s.clear_live();
            }
        }
    }

    /// Drops translations and decoded blocks made from frames the guest wrote.
    pub(crate) fn sync_code(&mut self, mem: &AddressSpace) {
        self.epoch = mem.phys().code_epoch();
        let dirty = mem.phys().take_dirty_code();
        if !dirty.is_empty() {
            self.untranslatable.clear();
        }
        self.interp.invalidate_frames(mem, &dirty);
        for f in dirty {
            if let Some(ts) = self.by_frame.remove(&f) {
                for t in ts.into_iter().map(|e| e.id) {
                    if self.trans[t as usize].alive {
                        self.stats.invalidations += 1;
                        let pa = self.trans[t as usize].pa;
                        self.seen_pa.remove(&pa);
                        self.kill(t);
                    }
                }
            }
        }
    }

    /// Flushes the whole cache (it reached its capacity): every translation, every
    /// key's slot (profile counts included), the index, the frames' lists, the blocks
    /// marked untranslatable, the fault points and the jump cache are dropped and their
    /// memory given back, and the runtime stubs are emitted again at the start of the
    /// emptied code buffer.
    pub(crate) fn flush(&mut self) {
        self.far.clear(); // their code goes
        self.code.clear();
        self.layout.flushed();
        self.trans = Vec::new();
        self.slots = Vec::new();
        self.index = HashMap::default();
        self.free_slots = Vec::new();
        self.prev_slot = NO_SLOT;
        self.pred_slot = NO_SLOT;
        self.by_frame = HashMap::default();
        self.untranslatable = HashSet::default();
        self.fault_map.points = Vec::new();
        self.fault_map.starts = Vec::new();
        self.templates = Vec::new();
        self.identities = HashMap::default();
        self.template_bytes = 0;
        self.stats.flushes += 1;
        self.emit_runtime();
    }
}

#[cfg(test)]
mod tests {
    use crate::{Engine, EngineConfig, KeyPolicy};
    use morph_mem::Frame;

    #[test]
    fn a_dropped_process_gives_its_slots_to_the_next() {
        let cfg = EngineConfig { translate: true, key: KeyPolicy::Process, ..EngineConfig::default() };
        let mut e = Engine::new(cfg).unwrap();
        let key = |e: &Engine, va: u32, ctx: u32| e.cfg.key.key(va, Frame(7), ctx);
        for ctx in 1..=20 {
            for va in (0x0804_8000..0x0804_8000 + 100 * 16).step_by(16) {
                let k = key(&e, va, ctx);
                let i = e.slot_of(k);
                e.slots[i as usize].count += 1;
            }
            e.drop_context(ctx);
        }
        assert_eq!(e.slots.len(), 100, "each process reused the slots of the one before");
        assert!(e.index.is_empty());
        // A reused slot starts afresh.
        let i = e.slot_of(key(&e, 0x0804_8000, 21));
        assert_eq!(e.slots[i as usize].count, 0);
        // Other policies never free slots.
        let mut v = Engine::new(EngineConfig { translate: true, ..EngineConfig::default() }).unwrap();
        let k = v.cfg.key.key(0x1000, Frame(1), 1);
        v.slot_of(k);
        v.drop_context(1);
        assert_eq!((v.slots.len(), v.index.len(), v.free_slots.len()), (1, 1, 0));
    }
}
