//! Generation: fetch a hot block's guest bytes, translate it, and place the host code
//! in the code buffer with its fixups, fault points and bookkeeping.

use iced_x86::Instruction;
use morph_cpu::MAX_INSN_LEN;
use morph_mem::{AddressSpace, Frame, PAGE_SIZE};
use std::num::NonZeroU32;
use std::rc::Rc;

use crate::clock::Activity;
use crate::key::Key;
use crate::made::Made;
use crate::slots::{FrameEntry, Live, NO_FRAME, next_frame};
use crate::tcache::Tcache;
use crate::translate::{self, Fixup, Site};
use crate::{Engine, abi::helper};

/// What fills a layout gap: `int3`, which traps if anything ever ran into it.
const INT3: u8 = 0xcc;

pub(crate) struct Translation {
    pub(crate) key: Key,
    pub(crate) frame: Frame,
    /// The next page's frame, if the last instruction straddles into it.
    pub(crate) frame2: Option<Frame>,
    /// The frame of the page of the PC thunk it inlines unchecked, if another page's.
    pub(crate) thunk_frame: Option<Frame>,
    pub(crate) pa: u64,
    pub(crate) start: usize,
    pub(crate) body: usize,
    /// The chain entry (budget check), where backward chains enter.
    pub(crate) entry: usize,
    pub(crate) sites: Vec<Site>,
    pub(crate) alive: bool,
    /// Boxed so their addresses, baked into the translation, never move (shared with
    /// the copies of a reused translation, which point at the same ones).
    #[allow(clippy::vec_box)]
    pub(crate) _helpers: Rc<Vec<Box<Instruction>>>,
}

/// Where a translation about to be placed comes from.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Origin {
    Translated,
    Reused,
    /// Loaded from the persistent cache (`tcache`).
    Loaded,
}

/// The extent a block at `eip` may have: the bytes to its page end, the next page's
/// frame if the last instruction may straddle into it (readable, and not past the top of
/// the address space), and the most guest bytes a translation of it may span.
fn span(eip: u32, mem: &AddressSpace) -> (u32, Option<u32>, u32) {
    let page_end = (eip | (PAGE_SIZE - 1)).wrapping_add(1);
    let len = page_end.wrapping_sub(eip);
    let frame2 = if page_end != 0 { next_frame(mem, eip) } else { None };
    let max = len + if frame2.is_some() { MAX_INSN_LEN - 1 } else { 0 };
    (len, frame2, max)
}

impl Engine {
    /// Whether `made` fits in the code buffer after the largest layout gap.
    fn room_for(&self, made: &Made) -> bool {
        let align = if made.align64 { 63 } else { 0 };
        self.code.offset() + self.layout.max_gap() + align + made.code.len() <= self.code.capacity()
    }

    /// Translates the block at `eip` from the interpreter's blocks (the same instructions
    /// both engines run, decoded by the interpreter's rules: `Interp::decoded_block`).
    /// The translation is numbered as the next one of the cache.
    fn fetch_and_translate(&mut self, eip: u32, frame: Frame, ctx: u32, mem: &mut AddressSpace) -> Option<Made> {
        let opts = self.translate_options();
        let (interp, id) = (&mut self.interp, self.trans.len() as u32);
        let fetch = |at: u32, out: &mut Vec<Instruction>| interp.decoded_block(at, mem, out);
        let (slots, index, policy) = (&self.slots, &self.index, self.cfg.key);
        let predict = |block: u32| crate::slots::predicted_successor(slots, index, policy, eip, block, frame, ctx);
        let never_taken =
            |block: u32, fall: u32| crate::slots::never_taken(slots, index, policy, block, fall, frame, ctx);
        translate::translate_decoded(fetch, predict, never_taken, eip, helper as *const () as usize, id, opts)
            .map(Made::from)
    }

    /// Makes the translation of the block at `eip` (in `frame`) for `key`, process
    /// `ctx`: a copy of another frame's translation of the same code if the policy
    /// finds one, else a new one. Returns its number.
    pub(crate) fn translate(
        &mut self,
        key: Key,
        eip: u32,
        frame: Frame,
        mem: &mut AddressSpace,
        ctx: u32,
    ) -> Option<u32> {
        self.ticks.switch(Activity::Translate);
        let (len, frame2, max) = span(eip, mem);
        let identity = self.cfg.key.identity(eip, frame, mem);
        let (mut made, mut origin) = match identity.and_then(|h| self.reuse(h, eip, max, mem)) {
            Some(m) => (m, Origin::Reused),
            None => (self.fetch_and_translate(eip, frame, ctx, mem)?, Origin::Translated),
        };
        if !self.room_for(&made) {
            self.flush();
            // A translation's exits name it by its number, which the flush changed (and
            // the translations to copy from are gone).
            (made, origin) = (self.fetch_and_translate(eip, frame, ctx, mem)?, Origin::Translated);
        }
        if origin == Origin::Translated {
            self.keep_translated(identity, eip, frame, &made, mem);
        }
        let frame2 = frame2.map(Frame).filter(|_| made.guest_len > len);
        self.place(made, origin, key, eip, frame, frame2, mem, ctx)
    }

    /// Keeps `made`, just translated for the block at `eip` (in `frame`), for copies to
    /// other frames under `identity` (`reuse`) and for later runs (`tcache`): its exit-stub
    /// number fields and guest bytes are found once for both.
    fn keep_translated(&mut self, identity: Option<u64>, eip: u32, frame: Frame, made: &Made, mem: &AddressSpace) {
        let place = self.tcache.as_ref().and_then(|_| Tcache::place_of(eip, frame, mem));
        if identity.is_none() && place.is_none() {
            return;
        }
        let Some(fields) = crate::reuse::id_fields(made, self.trans.len() as u32) else { return };
        let mut bytes = vec![0u8; made.guest_len as usize];
        if mem.read_bytes(eip, &mut bytes).is_err() {
            return;
        }
        if let (Some(tc), Some((m, offset))) = (&mut self.tcache, place) {
            tc.keep(m, offset, eip, made, &fields, &bytes);
        }
        if let Some(h) = identity {
            self.remember(h, eip & (PAGE_SIZE - 1), made, fields, bytes);
        }
    }

    /// At the first miss of `key` (the block at `eip`, in `frame`): the translation the
    /// persistent cache holds for it, placed, if there is one (see `tcache`).
    pub(crate) fn load_persistent(
        &mut self,
        key: Key,
        eip: u32,
        frame: Frame,
        mem: &mut AddressSpace,
        ctx: u32,
    ) -> Option<u32> {
        let place = Tcache::place_of(eip, frame, mem)?;
        self.ticks.switch(Activity::Translate);
        let (len, frame2, max) = span(eip, mem);
        let id = self.trans.len() as u32;
        let tc = self.tcache.as_mut()?;
        // Where the key's code is, for the end of the run if it never becomes hot.
        tc.seen.push((key, frame, eip & (PAGE_SIZE - 1)));
        let host = crate::tcache::RunHost { helper: helper as *const () as usize };
        let made = tc.find(place, eip, max, mem, host, id)?;
        if !self.room_for(&made) {
            return None; // the dispatcher interprets; translating later flushes
        }
        let frame2 = frame2.map(Frame).filter(|_| made.guest_len > len);
        self.place(made, Origin::Loaded, key, eip, frame, frame2, mem, ctx)
    }

    /// Puts `made` in the code buffer as the live translation of `key`, made from
    /// `frame` (and `frame2`, if its last instruction straddles into the next page).
    #[allow(clippy::too_many_arguments)]
    fn place(
        &mut self,
        made: Made,
        origin: Origin,
        key: Key,
        eip: u32,
        frame: Frame,
        frame2: Option<Frame>,
        mem: &mut AddressSpace,
        ctx: u32,
    ) -> Option<u32> {
        // A PC thunk inlined unchecked in another page: the translation holds while that
        // page maps this frame (checked where it is entered, see `Live::thunk_holds`)
        // and the frame is not written (marked as code, the translation in its list).
        let here = eip & !(PAGE_SIZE - 1);
        let thunk = match made.thunk_page.filter(|t| t & !(PAGE_SIZE - 1) != here) {
            Some(t) => {
                let p = mem.pte(t);
                if !(p.readable() && p.has_frame()) {
                    return None; // the thunk's page went (not expected: it was just read)
                }
                Some((t, (t & !(PAGE_SIZE - 1)).wrapping_sub(here), p.frame()))
            }
            None => None,
        };
        // The gap before it, if placement is randomized (the callers left room for it).
        let gap = self.layout.gap();
        if gap > 0 && !self.code.extend(&[INT3; crate::layout::MAX_GAP][..gap]) {
            return None;
        }
        if made.align64 {
            // A counted loop's clean copy sits at a 64-byte boundary from its start.
            let pad = self.code.offset().next_multiple_of(64) - self.code.offset();
            if !self.code.extend(&[INT3; 64][..pad]) {
                return None;
            }
            self.layout.pad_bytes += pad;
        }
        let start = self.code.offset();
        // Never 0: the runtime precedes every translation in the buffer.
        let body = NonZeroU32::new((start + made.body) as u32)?;
        let mut code = made.code;
        for &(field, to) in &made.fixups {
            let target = match to {
                Fixup::ExitCommon => self.exit_common_off,
                Fixup::ExitNosave => self.exit_nosave_off,
                Fixup::Lookup => self.lookup_off,
                Fixup::TableMiss => self.table_miss_off,
            };
            let rel = (target as i64 - (start + field + 4) as i64) as i32;
            code[field..field + 4].copy_from_slice(&rel.to_le_bytes());
        }
        if !self.code.extend(&code) {
            return None;
        }
        self.refresh_code_base();
        let id = self.trans.len() as u32;
        self.fault_map.points.extend(made.points.iter().map(|&(h, g, k)| (h + start as u32, g, k)));
        self.fault_map.starts.push(start as u32);
        let pa = frame.addr().0 + u64::from(eip & (PAGE_SIZE - 1));
        let seen = !self.seen_pa.insert(pa);
        if origin == Origin::Reused {
            self.stats.reuses += 1;
        } else if origin == Origin::Loaded {
            self.stats.tcache_loads += 1;
        } else {
            self.stats.retranslations += u64::from(seen);
            self.stats.translations += 1;
            self.stats.translated_guest_instructions += u64::from(made.instructions);
            self.stats.pc_thunks += u64::from(made.pc_thunks);
            self.stats.plt_calls += u64::from(made.plt_call);
            self.stats.predicted_branches += u64::from(made.predicted);
            self.stats.counted_loops += u64::from(made.align64);
        }
        self.stats.helper_instructions += u64::from(made.fallbacks);
        self.fpu_live |= made.uses_fpu;
        self.trans.push(Translation {
            key,
            frame,
            frame2,
            thunk_frame: thunk.map(|t| t.2),
            pa,
            start,
            body: start + made.body,
            entry: start + made.entry,
            sites: made.sites,
            alive: true,
            _helpers: made.helpers,
        });
        let live = Live {
            id,
            frame,
            frame2: frame2.map_or(NO_FRAME, |f| f.0),
            body,
            owner: ctx,
            thunk_frame: thunk.map_or(NO_FRAME, |t| t.2.0),
            thunk_delta: thunk.map_or(0, |t| t.1),
        };
        let i = self.slot_of(key);
        let slot = &mut self.slots[i as usize];
        slot.block = None; // translated: its decoded block is not needed any more
        if let Some(old) = slot.set_live(live) {
            // Made from another frame (`virtual`, `process`): no jump cache holds it
            // (the mapping changed since, which emptied them).
            self.retire(old.id);
        }
        let entry = FrameEntry { id, key, body: body.get(), straddles: frame2.is_some(), thunk: thunk.is_some() };
        self.by_frame.entry(frame).or_default().push(entry);
        mem.mark_code(eip);
        if let Some(f2) = frame2 {
            // A write to either page drops it.
            self.by_frame.entry(f2).or_default().push(entry);
            mem.mark_code((eip | (PAGE_SIZE - 1)).wrapping_add(1));
        }
        if let Some((t, _, f)) = thunk
            && Some(f) != frame2
        {
            // A write to the thunk's page drops it too.
            self.by_frame.entry(f).or_default().push(entry);
            mem.mark_code(t);
        }
        if let Some(f) = &mut self.code_map {
            use std::fmt::Write as _;
            use std::io::Write as _;
            let mut line = String::with_capacity(2 * code.len() + 96);
            let _ = write!(line, "{start:x} {:x} {eip:08x} {pa:x} ", code.len());
            const HEX: &[u8; 16] = b"0123456789abcdef";
            for &b in code.iter() {
                line.push(char::from(HEX[usize::from(b >> 4)]));
                line.push(char::from(HEX[usize::from(b & 15)]));
            }
            // Where the code came from in its file (device, inode, offset of the first
            // byte), so that a profile can be put on the file's symbols wherever ASLR
            // mapped it; `-` for code no file backs.
            match mem.phys().file_page(frame) {
                Some(fp) => {
                    let off = u64::from(fp.index) * u64::from(PAGE_SIZE) + u64::from(eip & (PAGE_SIZE - 1));
                    let _ = writeln!(line, " {:x}:{:x}:{off:x}", fp.file.dev, fp.file.ino);
                }
                None => line.push_str(" -\n"),
            }
            // Best effort, like the file itself.
            let _ = f.write_all(line.as_bytes());
        }
        Some(id)
    }
}
