//! The jump cache: where translated code finds the target of an indirect branch
//! without going back to the dispatcher.

use morph_mem::PAGE_SHIFT;
use rustc_hash::FxHashMap as HashMap;

use crate::runtime::{self, JitFrame, JitFrameBox, jc_key};

/// Pages remembered as prefilled in the jump cache (direct-mapped by page number; a
/// process runs code from a few hundred pages).
const JC_PAGES: usize = 1024;

/// The jump cache: (tag, guest VA) → translation body, direct-mapped by the VA's low
/// bits, read by translated code for indirect branches. A tag stands for one mapping
/// (an `AddressSpace::mapping_id`, with the process under the `process` policy): a
/// process switch selects the next process's tag instead of emptying the cache, so a
/// parent finds its entries again when its child has run, and a forked child (whose
/// mapping is its parent's) finds its parent's from the start. Emptying the cache is
/// giving the current mapping a new tag and forgetting the others'; tags are never
/// reused (a wrap of the counter resets every entry), so old entries never hit again.
pub(crate) struct JumpCache {
    /// The state block translated code runs with and the entries, which follow it
    /// (`runtime::JitFrame`: translated code reaches both from r15).
    pub(crate) frame: JitFrameBox,
    /// The tag of each mapping seen since the cache was last emptied.
    tags: HashMap<(u64, u32), u32>,
    /// The current mapping and its tag.
    cur: (u64, u32),
    pub(crate) tag: u32,
    /// The last tag given out.
    last_tag: u32,
    /// Pages whose translations were all put in the cache under a tag (`tag << 32 |
    /// page | 1`, direct-mapped by page number; see `Engine::prefill`).
    pages: Box<[u64; JC_PAGES]>,
    /// How many times every entry was reset (tags restarting: the return stack, whose
    /// entries carry tags, is emptied then too).
    pub(crate) resets: u64,
    /// The indirect-branch tables (`ibt`), if translated code uses them.
    ibt: Option<crate::ibt::Tables>,
}

impl JumpCache {
    /// Mappings remembered before the oldest are forgotten (their entries then stay
    /// unreachable, like emptied ones).
    const MAX_TAGS: usize = 1 << 14;

    /// A jump cache, with indirect-branch tables if `ibt` and the host grants the first
    /// table's address space.
    pub(crate) fn new(ibt: bool) -> std::io::Result<JumpCache> {
        let mut jc = JumpCache {
            frame: JitFrame::allocate()?,
            tags: HashMap::default(),
            cur: (0, 0),
            tag: 1,
            last_tag: 1,
            pages: Box::new([0; JC_PAGES]),
            resets: 0,
            ibt: if ibt { crate::ibt::Tables::new() } else { None },
        };
        jc.attach_table(|_| true);
        Ok(jc)
    }

    /// Whether translated code may use indirect-branch tables.
    pub(crate) fn has_tables(&self) -> bool {
        self.ibt.is_some()
    }

    /// Sets the host address of the tables' miss routine, what their entries are
    /// relative to; every table is forgotten.
    pub(crate) fn set_table_bias(&mut self, bias: u64) {
        if let Some(t) = &mut self.ibt {
            t.set_bias(bias);
            self.attach_table(|_| true);
        }
    }

    /// Gives the current tag its table (`JitState::ibt`), taking if need be the table
    /// of a tag whose mapping number no address space has any more (`live` says which
    /// do). A tag whose table it takes is forgotten, so that its mapping gets a new tag,
    /// with no entries, if it runs again.
    fn attach_table(&mut self, live: impl Fn(u64) -> bool) {
        if let Some(t) = &mut self.ibt {
            let (base, evicted) = t.select(self.tag, self.cur.0, live);
            self.frame.state.ibt = base;
            if let Some(old) = evicted {
                self.tags.retain(|_, t| *t != old);
            }
        }
    }

    /// Makes `mapping` current (with the tag it had, or a new one); returns whether it
    /// changed. `live` says which mapping numbers some address space still has.
    #[inline]
    pub(crate) fn select(&mut self, mapping: (u64, u32), live: impl Fn(u64) -> bool) -> bool {
        if mapping == self.cur {
            return false;
        }
        self.cur = mapping;
        self.tag = match self.tags.get(&mapping) {
            Some(&t) => t,
            None => self.new_tag(),
        };
        self.attach_table(live);
        true
    }

    /// A tag never given out, for the current mapping.
    fn new_tag(&mut self) -> u32 {
        if self.last_tag == u32::MAX || self.tags.len() >= Self::MAX_TAGS {
            // Every tag forgotten: their tables are free.
            self.tags.clear();
            if let Some(t) = &mut self.ibt {
                t.reset();
            }
        }
        if self.last_tag == u32::MAX {
            self.reset();
        }
        self.last_tag += 1;
        self.tags.insert(self.cur, self.last_tag);
        self.last_tag
    }

    /// Empties the cache: the current mapping gets a new tag, the others will.
    pub(crate) fn invalidate(&mut self) {
        self.tags.clear();
        if let Some(t) = &mut self.ibt {
            t.reset();
        }
        self.tag = self.new_tag();
        self.attach_table(|_| true);
    }

    /// Sets every entry to empty and restarts the tags.
    pub(crate) fn reset(&mut self) {
        self.frame.clear_jc();
        self.pages.fill(0);
        if let Some(t) = &mut self.ibt {
            t.reset();
        }
        self.tags.clear();
        self.last_tag = 1;
        self.resets += 1;
    }

    #[inline]
    pub(crate) fn set(&mut self, va: u32, host: u64) {
        let i = runtime::jc_index(va);
        self.frame.jc[i] = runtime::JcEntry { key: jc_key(self.tag, va).wrapping_neg(), host };
        if let Some(t) = &mut self.ibt {
            t.set(va, host);
        }
    }

    /// Records that `page`'s translations are in the cache under the current tag;
    /// returns whether they already were.
    #[inline]
    pub(crate) fn page_done(&mut self, page: u32) -> bool {
        let memo = &mut self.pages[(page >> PAGE_SHIFT) as usize % JC_PAGES];
        let v = u64::from(self.tag) << 32 | u64::from(page) | 1;
        std::mem::replace(memo, v) == v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What translated code's lookup finds for `va` under the current tag.
    fn hit(jc: &JumpCache, va: u32) -> Option<u64> {
        let i = runtime::jc_index(va);
        let e = jc.frame.jc[i];
        (e.key.wrapping_neg() == jc_key(jc.tag, va)).then_some(e.host)
    }

    #[test]
    fn jump_cache_entries_survive_a_process_switch_and_not_an_invalidation() {
        let mut jc = JumpCache::new(true).unwrap();
        let (parent, other) = ((7, 0), (8, 0));
        assert!(jc.select(parent, |_| true));
        assert!(!jc.select(parent, |_| true), "already current");
        jc.set(0x0804_8000, 1);
        assert_eq!(hit(&jc, 0x0804_8000), Some(1));
        assert_eq!(hit(&jc, 0x0805_8000), None, "same index, other VA");
        jc.select(other, |_| true);
        assert_eq!(hit(&jc, 0x0804_8000), None, "another mapping does not see it");
        jc.set(0x0804_9000, 2);
        jc.select(parent, |_| true);
        assert_eq!(hit(&jc, 0x0804_8000), Some(1), "back to the parent: its entry is there");
        assert_eq!(hit(&jc, 0x0804_9000), None);
        assert!(!jc.page_done(0x0804_8000) && jc.page_done(0x0804_8000));
        let before = jc.tag;
        jc.invalidate();
        assert_ne!(jc.tag, before);
        assert_eq!(hit(&jc, 0x0804_8000), None, "emptied");
        assert!(!jc.page_done(0x0804_8000), "prefilled pages are forgotten too");
        jc.select(other, |_| true);
        assert_eq!(hit(&jc, 0x0804_9000), None, "every mapping's entries are gone");
        // An empty entry (tag 0) never hits: tag 0 is never current.
        assert!(jc.tag != 0 && jc.last_tag != 0);
    }

    #[test]
    fn jump_cache_tags_wrap_by_resetting_every_entry() {
        let mut jc = JumpCache::new(true).unwrap();
        jc.select((1, 0), |_| true);
        jc.set(0x1000, 5);
        jc.last_tag = u32::MAX;
        jc.select((2, 0), |_| true);
        assert!(jc.tag != 0 && jc.tag < 4, "restarted");
        assert!(jc.frame.jc.iter().all(|e| *e == runtime::JcEntry::default()), "every entry reset");
    }
}
