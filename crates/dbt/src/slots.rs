//! Slots: what the engine knows of each key (its live translation, its profile count,
//! its decoded block), found through the index, and the prediction of the next
//! dispatch's slot that saves the index probe on most dispatches.

use morph_cpu::CachedBlock;
use morph_mem::{AddressSpace, Frame, PAGE_SHIFT, PAGE_SIZE};
use rustc_hash::FxHashMap;
use std::num::NonZeroU32;

use crate::Engine;
use crate::key::{Key, KeyPolicy};

/// No slot (an unset prediction).
pub(crate) const NO_SLOT: u32 = u32::MAX;

/// `Live::frame2` of a translation that stays in its page.
pub(crate) const NO_FRAME: u32 = u32::MAX;

/// Asks the host to bring the line at `p` into its cache; `p` may dangle.
#[inline]
pub(crate) fn prefetch_ptr(p: *const u8) {
    // SAFETY: a prefetch is a hint: it reads nothing architecturally and cannot fault,
    // whatever the address.
    unsafe { std::arch::x86_64::_mm_prefetch(p.cast::<i8>(), std::arch::x86_64::_MM_HINT_T0) };
}

/// Asks the host to bring `v` into its cache (a hint: no effect on the program).
#[inline]
pub(crate) fn prefetch<T>(v: &T) {
    // SAFETY: prefetching is a hint about an address we hold a reference to; it reads
    // nothing and cannot fault.
    unsafe { std::arch::x86_64::_mm_prefetch((v as *const T).cast::<i8>(), std::arch::x86_64::_MM_HINT_T0) };
}

/// What the engine knows of a key.
pub(crate) struct Slot {
    /// Its live translation, or what counts towards making one besides `count`.
    pub(crate) state: SlotState,
    /// Dispatches that found no live translation (the profile).
    pub(crate) count: u32,
    /// The interpreter's decoded block, while the key is interpreted (saves a lookup in
    /// the interpreter's own cache per interpreted block).
    pub(crate) block: Option<CachedBlock>,
    /// The key dispatched after this one last time, and its slot (`NO_SLOT`: none).
    pub(crate) succ_key: Key,
    pub(crate) succ: u32,
    /// The successor before that (a block ending in a conditional branch has two).
    pub(crate) succ2: u32,
    pub(crate) succ2_key: Key,
    /// Where the successor's interpreted block lives (prefetched with its slot).
    pub(crate) succ_hint: *const u8,
}

/// A slot's live translation, or, while it has none, the address space that dispatched
/// it last and the credit runs in other spaces have earned it (`EngineConfig::
/// space_credit`): the credit only matters until the key is translated, and the two
/// share their bytes (`Live::body` is never 0), so a slot stays 80 bytes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum SlotState {
    Cold {
        /// The low 32 bits of the space's number (0: none yet).
        space: u32,
        credit: u32,
    },
    Live(Live),
}

const _: () = assert!(std::mem::size_of::<Slot>() == 80, "see SlotState");

impl Default for Slot {
    fn default() -> Slot {
        Slot {
            state: SlotState::Cold { space: 0, credit: 0 },
            count: 0,
            block: None,
            succ_key: Key(0),
            succ: NO_SLOT,
            succ2: NO_SLOT,
            succ2_key: Key(0),
            succ_hint: std::ptr::null(),
        }
    }
}

impl Slot {
    /// Its live translation.
    #[inline]
    pub(crate) fn live(&self) -> Option<Live> {
        match self.state {
            SlotState::Live(l) => Some(l),
            SlotState::Cold { .. } => None,
        }
    }

    /// Makes `live` its translation; returns the one it replaces.
    pub(crate) fn set_live(&mut self, live: Live) -> Option<Live> {
        let old = self.live();
        self.state = SlotState::Live(live);
        old
    }

    /// Drops its translation (the credit it had earned before is gone with it).
    pub(crate) fn clear_live(&mut self) {
        self.state = SlotState::Cold { space: 0, credit: 0 };
    }

    /// The credit runs in other address spaces have earned it, after counting a run in
    /// the space numbered `space` that earns `credit` if another ran it last. A slot with a
    /// translation (made from another frame, under `virtual` and `process`) earns none.
    #[inline]
    pub(crate) fn earn(&mut self, space: u64, credit: u32) -> u32 {
        let space = (space as u32).max(1);
        match &mut self.state {
            SlotState::Cold { space: last, credit: earned } => {
                if *last != space {
                    if *last != 0 {
                        *earned = earned.saturating_add(credit);
                    }
                    *last = space;
                }
                *earned
            }
            SlotState::Live(_) => 0,
        }
    }

    /// The live translation, if it was made from `frame` (under `virtual` and `process`
    /// the key does not name the frame) and, if it straddles into the page after `eip`'s,
    /// from the frame that page maps in `mem` too.
    #[inline]
    pub(crate) fn live_from(&self, frame: Frame, eip: u32, mem: &AddressSpace) -> Option<Live> {
        self.live().filter(|l| {
            l.frame == frame
                && (l.frame2 == NO_FRAME || next_frame(mem, eip) == Some(l.frame2))
                && l.thunk_holds(eip, mem)
        })
    }
}

/// A live translation as its frame's list has it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FrameEntry {
    pub(crate) id: u32,
    pub(crate) key: Key,
    /// Offset of its body in the code buffer.
    pub(crate) body: u32,
    /// Whether the translation's last instruction straddles into the next page: it is
    /// valid only where that page maps its second frame, so it is never prefilled into
    /// the jump cache (nor chained to) without the dispatcher's check.
    pub(crate) straddles: bool,
    /// Whether it depends on the page of a PC thunk it inlines unchecked (`Live::thunk`):
    /// never prefilled, chained only where an unlink undoes the chain (see `try_chain`).
    /// Its entry in the thunk frame's list is there only so that a write drops it.
    pub(crate) thunk: bool,
}

/// A live translation as the dispatcher sees it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Live {
    pub(crate) id: u32,
    pub(crate) frame: Frame,
    /// The frame of the next page, for a translation whose last instruction straddles
    /// into it (`NO_FRAME` otherwise): checked at every dispatch.
    pub(crate) frame2: u32,
    /// Offset of the body in the code buffer (never 0: the runtime comes first).
    pub(crate) body: NonZeroU32,
    /// The process whose execution made it.
    pub(crate) owner: u32,
    /// The frame of the page of the PC thunk its calls inline without checking the
    /// thunk's bytes (`NO_FRAME`: none, or in its own page), and that page's address
    /// relative to the translation's page: checked at every dispatch, as `frame2`.
    pub(crate) thunk_frame: u32,
    pub(crate) thunk_delta: u32,
}

impl Live {
    /// Whether the page of its unchecked PC thunk, if any, maps the frame it was
    /// translated with, the translation running in the page of `eip`.
    #[inline]
    pub(crate) fn thunk_holds(&self, eip: u32, mem: &AddressSpace) -> bool {
        if self.thunk_frame == NO_FRAME {
            return true;
        }
        let p = mem.pte((eip & !(PAGE_SIZE - 1)).wrapping_add(self.thunk_delta));
        p.readable() && p.has_frame() && p.frame().0 == self.thunk_frame
    }
}

impl Engine {
    /// The slot of `key`, made if it has none (a freed one, already reset when it was
    /// freed, if there is one: see `Engine::drop_context`).
    pub(crate) fn slot_of(&mut self, key: Key) -> u32 {
        let (slots, free) = (&mut self.slots, &mut self.free_slots);
        *self.index.entry(key).or_insert_with(|| {
            free.pop().unwrap_or_else(|| {
                slots.push(Slot::default());
                (slots.len() - 1) as u32
            })
        })
    }

    /// The slot of `key` for a dispatch: the one the previous dispatch's slot predicts
    /// if the prediction names `key` (no hash probe), else through `index`. Updates the
    /// prediction, and prefetches the slot this one predicts: by the time the block has
    /// run, the next dispatch's slot is in the host cache (the slots of ten thousand
    /// blocks, each dispatched again long after, are otherwise a cache miss apiece).
    pub(crate) fn dispatch_slot(&mut self, key: Key) -> u32 {
        let prev = self.prev_slot as usize;
        let i = match self.slots.get(prev) {
            Some(p) if p.succ != NO_SLOT && p.succ_key == key => p.succ,
            Some(p) if p.succ2 != NO_SLOT && p.succ2_key == key => p.succ2,
            _ => self.slot_of(key),
        };
        if let Some(p) = self.slots.get_mut(prev)
            && p.succ != i
        {
            // The newer successor first; the other one kept second.
            (p.succ2_key, p.succ2) = (p.succ_key, p.succ);
            (p.succ_key, p.succ) = (key, i);
        }
        self.pred_slot = self.prev_slot;
        self.prev_slot = i;
        let s = &self.slots[i as usize];
        if let Some(next) = self.slots.get(s.succ as usize) {
            prefetch(next);
            // The block's header and the records after it, four lines (a typical
            // interpreted block is five or six records of 24 bytes; a longer one's next
            // lines come from the host's own sequential prefetch).
            for line in 0..4 {
                prefetch_ptr(s.succ_hint.wrapping_add(64 * line));
            }
        }
        i
    }

    /// The live translation of `key` made from `frame` (every translation in `keys` is
    /// alive: a dead one leaves it).
    pub(crate) fn lookup(&self, key: Key, frame: Frame) -> Option<Live> {
        self.index.get(&key).and_then(|&i| self.slots[i as usize].live()).filter(|l| l.frame == frame)
    }
}

/// Interpretations of a block, at least, before its one successor counts as a
/// prediction.
const PREDICT_AFTER: u32 = 4;

/// The page offset of the target predicted for the indirect branch that ends the
/// interpreter's block at `block`, in the translation at `eip` (made from `frame` for
/// process `ctx`): the only successor the block has had (since successors were last
/// forgotten) over [`PREDICT_AFTER`] or more interpretations, if that is in the same
/// page (`slots` keep the last two distinct successors of each key, see
/// `dispatch_slot`). Every key policy's key is a page's identity above the page offset.
pub(crate) fn predicted_successor(
    slots: &[Slot],
    index: &FxHashMap<Key, u32>,
    policy: KeyPolicy,
    eip: u32,
    block: u32,
    frame: Frame,
    ctx: u32,
) -> Option<u32> {
    let page = policy.key(eip, frame, ctx).0 >> PAGE_SHIFT;
    let s = slots.get(*index.get(&policy.key(block, frame, ctx))? as usize)?;
    let one = s.succ != NO_SLOT && s.succ2 == NO_SLOT && s.count >= PREDICT_AFTER;
    (one && s.succ_key.0 >> PAGE_SHIFT == page).then_some((s.succ_key.0 & u64::from(PAGE_SIZE - 1)) as u32)
}

/// Whether the interpreter's block at `block` (in `frame`, run by `ctx`), which ends in
/// a conditional branch falling through to `fall`, was only ever followed by `fall`
/// over [`PREDICT_AFTER`] or more interpretations (its taken edge never seen).
pub(crate) fn never_taken(
    slots: &[Slot],
    index: &FxHashMap<Key, u32>,
    policy: KeyPolicy,
    block: u32,
    fall: u32,
    frame: Frame,
    ctx: u32,
) -> bool {
    if (block ^ fall) & !(PAGE_SIZE - 1) != 0 {
        return false;
    }
    let Some(s) = index.get(&policy.key(block, frame, ctx)).and_then(|&i| slots.get(i as usize)) else {
        return false;
    };
    s.succ != NO_SLOT && s.succ2 == NO_SLOT && s.count >= PREDICT_AFTER && s.succ_key == policy.key(fall, frame, ctx)
}

/// The frame of the page after `eip`'s, if that page is mapped readable.
#[inline]
pub(crate) fn next_frame(mem: &AddressSpace, eip: u32) -> Option<u32> {
    let next = (eip | (PAGE_SIZE - 1)).wrapping_add(1);
    let p = mem.pte(next);
    (next != 0 && p.readable() && p.has_frame()).then(|| p.frame().0)
}
