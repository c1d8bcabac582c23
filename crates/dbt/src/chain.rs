//! Chaining: patching a translation's exit to jump straight to another translation.

use morph_mem::AddressSpace;

use crate::Engine;
use crate::slots::NO_FRAME;

impl Engine {
    /// Patches site `site` of translation `from` to jump straight to the translation of
    /// `target`, if there is one and the key agrees: on the same page (same frame) to its
    /// body or chain entry; on another page to its far entry, whose key is set to
    /// this mapping's tag and `target`, so that the edge is taken only while they hold
    /// (see `runtime::prologue`).
    pub(crate) fn try_chain(&mut self, from: u32, site: usize, target: u32, mem: &AddressSpace) {
        let f = &self.trans[from as usize];
        if !f.alive {
            return;
        }
        let Some(&s) = f.sites.get(site) else { return };
        let from_va = target.wrapping_sub(s.target_delta as u32);
        let far = from_va >> 12 != target >> 12;
        let pte = mem.pte(target);
        if !pte.readable() || (!far && pte.frame() != f.frame) {
            return;
        }
        let key = self.cfg.key.key(target, pte.frame(), self.cfg.key.owner(f.key).unwrap_or(0));
        let Some(to) = self.lookup(key, pte.frame()) else { return };
        if to.frame2 != NO_FRAME {
            // The target straddles into the next page: a chain would skip the check of
            // that page's mapping. The site's exit goes through the jump cache instead.
            let field = f.start + s.exit_jmp;
            let rel = (self.lookup_off as i64 - (field as i64 + 4)) as i32;
            self.code.patch(field, &rel.to_le_bytes());
            return;
        }
        let field = f.start + s.rel;
        if far {
            // The far entry checks the tag and EIP, counts the edge against the budget
            // and sets r14d (the page changes).
            let t = &self.trans[to.id as usize];
            let key = crate::runtime::jc_key(self.jc.tag, target).wrapping_neg();
            let dest = t.start + crate::runtime::FAR_ENTRY;
            let rel = (dest as i64 - (field as i64 + 4)) as i32;
            if self.code.patch(t.start + crate::runtime::FAR_KEY_AT, &key.to_le_bytes())
                && self.code.patch(field, &rel.to_le_bytes())
            {
                self.stats.chain_patches += 1;
                self.stats.far_chains += 1;
            }
            return;
        }
        // Every cycle of chained blocks has an edge to a block that starts no later than
        // the edge's own block (addresses cannot rise all the way round): only those
        // edges enter through the budget check, forward edges go straight to the body.
        let t = &self.trans[to.id as usize];
        let dest = if s.target_delta > 0 { t.body } else { t.entry };
        let rel = (dest as i64 - (field as i64 + 4)) as i32;
        if self.code.patch(field, &rel.to_le_bytes()) {
            self.stats.chain_patches += 1;
        }
    }
}
