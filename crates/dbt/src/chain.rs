//! Chaining: patching a translation's exit to jump straight to another translation.

use morph_mem::{AddressSpace, Frame, PAGE_SIZE};
use rustc_hash::{FxHashMap, FxHashSet};

use crate::Engine;
use crate::slots::NO_FRAME;

/// Edges into other pages chained past their target's check (`--check-far-edges` turns
/// them off).
///
/// A chained edge into another page normally enters the target's *far entry*, which
/// checks that the jump cache's tag (the mapping) and the EIP are the ones the edge was
/// chained for (`runtime::prologue`): seven instructions on every crossing, 5–15 % of
/// the interpreters' run time in stop 28's measurements (their dispatch loops span
/// pages). The check guards against two things: the mapping changed since (another
/// process, a page remapped, a translation dropped), and the source page running at
/// another address than when the edge was chained (a frame mapped at two addresses,
/// shared by a physical or identity key). Instead, while one address space runs, the
/// engine chains such edges straight to the target's jump-cache entry (after the check)
/// and takes both cases on itself:
///
/// - every such edge is recorded and *unlinked* (its rel32 put back to its exit stub)
///   when the tag changes — which the engine does for every mapping change, translation
///   dropped and flush — so none outlives the mapping it was chained under;
/// - the engine notes the page address each frame has run at under the current tag
///   (at every dispatcher entry, and at both ends of every far edge it chains: every
///   first arrival of a translation at an address passes through one of them, since
///   the jump cache and the table are filled only by the dispatcher), and a frame seen
///   at a second address unlinks them all and keeps the check for that frame's edges;
/// - a second address space (a fork) unlinks them all and keeps the check from then on:
///   process switches change the tag too often for unlinking to pay; so do
///   [`FarLinks::MAX_UNLINKS`] unlinks.
#[derive(Default)]
pub(crate) struct FarLinks {
    /// (code offset of the site's rel32, its bytes before the patch).
    links: Vec<(usize, [u8; 4])>,
    /// The page address each frame has run at under the current tag.
    page_of: FxHashMap<Frame, u32>,
    /// Frames seen at two addresses under the current tag.
    aliased: FxHashSet<Frame>,
    /// The address space that has run, while only one has.
    space: Option<u64>,
    /// More than one address space has run, or the edges were unlinked
    /// [`FarLinks::MAX_UNLINKS`] times: every far edge is checked from now on.
    all_checked: bool,
}

impl FarLinks {
    /// Unlinks of a non-empty set after which far edges are checked for the rest of the
    /// run: a program remapping its code again and again would otherwise pay a
    /// dispatcher round trip per edge after each time.
    const MAX_UNLINKS: u64 = 256;
}

impl FarLinks {
    /// Forgets everything without unpatching (the code buffer was emptied).
    pub(crate) fn clear(&mut self) {
        self.links.clear();
        self.page_of.clear();
        self.aliased.clear();
    }
}

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
        if !to.thunk_holds(target, mem) {
            return; // its thunk's page maps another frame here: the dispatcher decides
        }
        // A translation that straddles into the next page, or depends on its PC thunk's
        // page, is valid only where that page maps its frame, which its entry does not
        // check: an edge in the page may skip the dispatcher only while an unlink can
        // undo it (`FarLinks`, as for unchecked far edges: for a thunk's page, which a
        // mapping change, a page at a second address, a second address space or a
        // dropped translation unlinks); otherwise the site's exit goes through the jump
        // cache, whose entries the dispatcher checked.
        let thunk = to.thunk_frame != NO_FRAME;
        if to.frame2 != NO_FRAME || (thunk && !far && self.far_all_checked()) {
            let field = f.start + s.exit_jmp;
            let rel = (self.lookup_off as i64 - (field as i64 + 4)) as i32;
            self.code.patch(field, &rel.to_le_bytes());
            return;
        }
        let field = f.start + s.rel;
        if far && !self.far_all_checked() {
            let (from_frame, to_frame, to_start) =
                (f.frame, self.trans[to.id as usize].frame, self.trans[to.id as usize].start);
            // Both ends noted, whichever way the edge is chained: a target reached at a
            // second address through a checked edge must still be seen as aliased.
            let from_ok = self.note_page(from_frame, from_va);
            let to_ok = self.note_page(to_frame, target);
            if from_ok && to_ok {
                let dest = to_start + crate::runtime::FAR_ENTRY + crate::runtime::FAR_CHECK_BYTES;
                let rel = (dest as i64 - (field as i64 + 4)) as i32;
                if let Some(old) = self.code.read4(field)
                    && self.code.patch(field, &rel.to_le_bytes())
                {
                    self.far.links.push((field, old));
                    self.stats.chain_patches += 1;
                    self.stats.far_chains += 1;
                    self.stats.far_unchecked += 1;
                }
                return;
            }
        }
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
        let old = self.code.read4(field);
        if self.code.patch(field, &rel.to_le_bytes()) {
            self.stats.chain_patches += 1;
            if let Some(old) = old.filter(|_| thunk) {
                self.far.links.push((field, old));
            }
        }
    }
}

impl Engine {
    /// Whether every far edge is checked (a second address space has run, or the edges
    /// were unlinked too often): see [`FarLinks`].
    pub(crate) fn far_all_checked(&self) -> bool {
        !self.cfg.unlink_far || self.far.all_checked
    }

    /// Notes that `frame` runs as the page of `va` (see `FarLinks`); false if it is
    /// aliased (seen at another page under this tag: every unchecked edge is then
    /// unlinked).
    pub(crate) fn note_page(&mut self, frame: Frame, va: u32) -> bool {
        let page = va & !(PAGE_SIZE - 1);
        if self.far.aliased.contains(&frame) {
            return false;
        }
        match *self.far.page_of.entry(frame).or_insert(page) {
            p if p == page => true,
            _ => {
                self.far.aliased.insert(frame);
                self.unlink_far(false);
                false
            }
        }
    }

    /// The dispatcher enters a translation of `frame` at `va` in address space `space`
    /// (see `FarLinks`).
    pub(crate) fn note_entry(&mut self, frame: Frame, va: u32, space: u64) {
        if !self.cfg.unlink_far || self.far.all_checked {
            return;
        }
        if *self.far.space.get_or_insert(space) != space {
            self.far.all_checked = true;
            self.unlink_far(true);
            return;
        }
        self.note_page(frame, va);
    }

    /// Puts every unchecked far edge back to its exit stub; with `tag_changed` the pages
    /// noted go too, with the mapping they were seen under (see `FarLinks`).
    pub(crate) fn unlink_far(&mut self, tag_changed: bool) {
        if !self.far.links.is_empty() {
            self.stats.far_unlinks += 1;
            self.far.all_checked |= self.stats.far_unlinks >= FarLinks::MAX_UNLINKS;
        }
        for (field, old) in std::mem::take(&mut self.far.links) {
            self.code.patch(field, &old);
        }
        if tag_changed {
            self.far.page_of.clear();
            self.far.aliased.clear();
        }
    }
}
