//! The indirect-branch table: one 32-bit entry per guest virtual address, so that an
//! indirect branch in translated code finds its target's host code with one load and no
//! comparison, in front of the jump cache.
//!
//! A table is a reservation of 16 GiB of host address space (4 bytes × 2^32 guest
//! addresses) mapped as untouched anonymous memory: an entry never set reads as zero
//! from the kernel's zero page, and only the pages holding set entries take memory
//! (4 KiB of table per KiB of guest code whose addresses are branch targets). Entry
//! `va` holds the host address to continue at for guest EIP `va` less the *bias* (the
//! host address of the table-miss routine), as a signed 32-bit
//! offset: zero, an entry never set, leads to the miss routine, which takes the jump
//! cache (whose misses go to the dispatcher). The code buffer is smaller than 2 GiB
//! (`Engine::new` turns the table off otherwise), so every host address in it is within
//! reach of the bias.
//!
//! Translated code's lookup (`glue::table_lookup`), with the target EIP in r13d (its
//! high half zero):
//!
//! ```text
//! mov    r9, [r15 + ibt]              ; the running mapping's table
//! movsxd r9, dword [r9 + r13 * 4]     ; its entry for the target
//! lea    r8, [rip + miss]             ; the miss routine, relative to this code
//! lea    r9, [r9 + r8]                ; host address (the miss routine if never set)
//! lea    r11, [r11 + 1]               ; a hit (the miss routine takes it back)
//! jmp    r9
//! ```
//!
//! Six instructions, no comparison and one load on the way from the target to the jump
//! (the other is of the state block's line); the jump cache's hit takes thirteen,
//! with an index computed, a 64-bit key loaded and compared and a conditional branch.
//! Where the block's own instructions are counted just before (an indirect jump, call
//! or return ending a block), the hit is added by that `lea r11` too, and the lookup is
//! five (`glue::table_lookup`'s `hit_counted`). (Until stop 41 the code buffer lay in
//! the low 2 GiB and the miss routine's address was an immediate, `lea r9, [r9 +
//! miss]`; the low 4 GiB now hold a guest window, `morph_mem::window`, and the
//! `rip`-relative `lea` costs no load either.)
//!
//! The table is a cache of the jump cache kept in step with it: every entry the jump
//! cache gets under a tag, the tag's table gets too (`JumpCache::set`), and a table
//! lives exactly as long as its tag's jump-cache entries can hit. A table belongs to
//! one tag (one mapping, see `jump_cache`), so a process switch selects the next
//! process's table with its tag. A tag that needs a table takes, in this order, a free
//! one (tags forgotten all at once free theirs), the table of a tag that will never run
//! again (its mapping number, kept with the table, no address space has any more:
//! `PhysMem::mapping_live`; the pages its
//! entries were written in stay, where a new reservation takes a host page fault and a
//! zeroed page for each), a new reservation while fewer than [`MAX_TABLES`] exist, or
//! the least recently selected one. A table taken is emptied (its entries set written
//! back to zero, or after very many its pages given back with `MADV_DONTNEED`), and its
//! previous tag is forgotten, so its mapping gets a new tag (with empty jump-cache
//! entries and a table of its own) if it runs again.
//!
//! The index is a 32-bit EIP, so no guest value reaches outside the reservation, and
//! only the engine writes entries, each the address of a live translation's jump-cache
//! entry: a guest cannot make translated code jump anywhere else.

use morph_mem::ZeroedSlice;

/// Entries of one table: one for each of the 2^32 guest addresses (16 GiB).
const TABLE_ENTRIES: usize = 1 << 32;

/// The most tables kept at once (16 GiB of address space each, untouched but for the
/// pages of entries set).
pub(crate) const MAX_TABLES: usize = 16;

/// Entries a table remembers having set, to empty it by writing them back to zero;
/// beyond them it is emptied by giving its pages back. A process's start sets a few
/// hundred to a few thousand; the log is allocated whole at the first entry (16 KiB:
/// growing it by doubling put the heap's growth, in huge pages this host zeroes
/// slowly, on a fork/exec loop's every process).
const LOG_MAX: usize = 1 << 12;

/// One table: [`TABLE_ENTRIES`] entries in a mapping of their own (`ZeroedSlice`:
/// untouched zero pages, only those written taking memory).
struct Table {
    entries: ZeroedSlice<i32>,
    /// The tag it serves (0: none), and that tag's mapping number
    /// (`AddressSpace::mapping_id`).
    owner: u32,
    mapping: u64,
    /// The entries set (from zero) since it was last emptied, while there are at most
    /// [`LOG_MAX`].
    log: Vec<u32>,
    /// More entries than that were set: emptying gives every page back.
    overflow: bool,
    /// When it was last selected (a count of selections), to choose a victim.
    used: u64,
}

impl Table {
    /// A fresh reservation; `None` if the host refuses the address space.
    fn reserve() -> Option<Table> {
        // SAFETY: zero is a valid i32.
        let entries = unsafe { ZeroedSlice::new(TABLE_ENTRIES) }.ok()?;
        Some(Table { entries, owner: 0, mapping: 0, log: Vec::new(), overflow: false, used: 0 })
    }

    /// Sets entry `va` to relative host address `rel`, remembering it if it was unset
    /// (the dispatcher sets a translation's entry again at every entry into it; only
    /// the first needs undoing).
    #[inline]
    fn set(&mut self, va: u32, rel: i32) {
        let e = &mut self.entries[va as usize];
        if *e == 0 && !self.overflow {
            if self.log.capacity() == 0 {
                self.log.reserve_exact(LOG_MAX);
            }
            if self.log.len() < LOG_MAX {
                self.log.push(va);
            } else {
                self.overflow = true;
                self.log = Vec::new();
            }
        }
        *e = rel;
    }

    /// Sets every entry back to zero (never set): the entries set, one by one, keeping
    /// their pages for the next owner (a process starting the same libraries sets
    /// entries in the same pages: emptying a table per mapping change of ld.so's start
    /// by giving its pages back cost a bash fork/exec loop 60 % more time in the kernel),
    /// or, after more than [`LOG_MAX`], every page given back.
    fn empty(&mut self) {
        if self.overflow {
            let (p, bytes) = (self.entries.as_mut_ptr(), std::mem::size_of_val(&*self.entries));
            // SAFETY: the whole mapping, which this table owns; on a private anonymous
            // mapping MADV_DONTNEED makes every page read as zero again. No translated
            // code runs while the dispatcher empties a table, and nothing borrows it.
            unsafe { libc::madvise(p.cast(), bytes, libc::MADV_DONTNEED) };
            self.overflow = false;
        }
        for va in self.log.drain(..) {
            self.entries[va as usize] = 0;
        }
    }
}

/// The tables of an engine, and which one is current.
pub(crate) struct Tables {
    tables: Vec<Table>,
    /// Index of the current tag's table.
    cur: usize,
    /// Selections so far (the clock of `Table::used`).
    clock: u64,
    /// The host address entries are relative to: the miss routine's.
    bias: u64,
}

impl Tables {
    /// The tables, with the first one reserved; `None` if the host refuses it.
    pub(crate) fn new() -> Option<Tables> {
        Some(Tables { tables: vec![Table::reserve()?], cur: 0, clock: 0, bias: 0 })
    }

    /// Sets the host address entries are relative to; every table is forgotten.
    pub(crate) fn set_bias(&mut self, bias: u64) {
        self.bias = bias;
        self.reset();
    }

    /// Makes `tag`'s table (for mapping number `mapping`) current; returns its base
    /// address and the tag whose table it took, if any (that tag must not hit again). A
    /// tag without a table takes a free one, else one whose owner's mapping is not
    /// `live` (no address space has it any more: its process exited or remapped, so the
    /// tag never runs again), else a new reservation while there are fewer than
    /// [`MAX_TABLES`], else the least recently selected. Reusing a table keeps the pages
    /// its entries were written in (a new reservation takes a host page fault and a
    /// zeroed page for each): a fork/exec loop's processes each start with a table.
    pub(crate) fn select(&mut self, tag: u32, mapping: u64, live: impl Fn(u64) -> bool) -> (u64, Option<u32>) {
        self.clock += 1;
        let mut evicted = None;
        let i = match self.tables.iter().position(|t| t.owner == tag) {
            Some(i) => i,
            None => {
                let reusable = self.tables.iter().position(|t| t.owner == 0).or_else(|| {
                    // The least recently selected of the dead owners' tables.
                    (0..self.tables.len())
                        .filter(|&i| !live(self.tables[i].mapping))
                        .min_by_key(|&i| self.tables[i].used)
                });
                let i = match reusable {
                    Some(i) => i,
                    None => match (self.tables.len() < MAX_TABLES).then(Table::reserve).flatten() {
                        Some(t) => {
                            self.tables.push(t);
                            self.tables.len() - 1
                        }
                        None => self.victim(),
                    },
                };
                let t = &mut self.tables[i];
                if t.owner != 0 {
                    evicted = Some(t.owner);
                }
                t.empty();
                t.owner = tag;
                t.mapping = mapping;
                i
            }
        };
        self.cur = i;
        let t = &mut self.tables[i];
        t.used = self.clock;
        (t.entries.as_ptr() as u64, evicted)
    }

    /// The least recently selected table.
    fn victim(&self) -> usize {
        (0..self.tables.len()).min_by_key(|&i| self.tables[i].used).unwrap_or(0)
    }

    /// Forgets every tag's table (the tags restart, or every entry is dropped): each is
    /// emptied when a tag takes it next.
    pub(crate) fn reset(&mut self) {
        for t in &mut self.tables {
            t.owner = 0;
        }
    }

    /// Sets the current table's entry for guest VA `va` to host address `host`.
    #[inline]
    pub(crate) fn set(&mut self, va: u32, host: u64) {
        let rel = host.wrapping_sub(self.bias) as i64 as i32;
        if let Some(t) = self.tables.get_mut(self.cur) {
            t.set(va, rel);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(t: &Tables, va: u32) -> i32 {
        t.tables[t.cur].entries[va as usize]
    }

    #[test]
    fn entries_are_per_tag_and_a_victim_is_emptied() {
        let mut t = Tables::new().unwrap();
        t.set_bias(0x1000);
        let (a, _) = t.select(1, 1, |_| true);
        t.set(0xffff_ffff, 0x1010);
        t.set(0, 0x0ff0);
        assert_eq!((get(&t, 0xffff_ffff), get(&t, 0)), (0x10, -0x10));
        assert_eq!(get(&t, 0x0804_8000), 0, "never set");
        let (b, ev) = t.select(2, 2, |_| true);
        assert_ne!(a, b);
        assert_eq!(ev, None);
        assert_eq!(get(&t, 0xffff_ffff), 0, "another tag's table");
        assert_eq!(t.select(1, 1, |_| true), (a, None));
        assert_eq!(get(&t, 0xffff_ffff), 0x10, "kept across a switch");
        for tag in 3..=MAX_TABLES as u32 {
            assert_eq!(t.select(tag, u64::from(tag), |_| true).1, None, "a table of its own");
        }
        assert_eq!(t.select(100, 100, |_| true).1, Some(2), "the least recently selected table");
        assert_eq!(t.select(101, 101, |_| true), (a, Some(1)));
        assert_eq!(get(&t, 0xffff_ffff), 0, "emptied for its new owner");
        t.set(0, 0x2000);
        t.reset();
        assert!(t.tables.iter().all(|x| x.owner == 0));
        // A table that set more entries than it remembers gives its pages back.
        let last = &mut t.tables[MAX_TABLES - 1];
        for va in 0..=LOG_MAX as u32 {
            last.set(va * 7, 1);
        }
        assert!(last.overflow && last.log.is_empty());
        last.empty();
        assert_eq!(last.entries[7 * 5], 0);
        assert!(!last.overflow);
        let (c, _) = t.select(1, 1, |_| true);
        assert_eq!(c, t.tables[0].entries.as_ptr() as u64);
        assert_eq!(get(&t, 0), 0, "emptied when taken");
    }

    #[test]
    fn a_dead_tags_table_is_taken_before_a_new_one_is_reserved() {
        let mut t = Tables::new().unwrap();
        let (a, _) = t.select(1, 1, |_| true);
        t.set(0x1000, 5);
        let (b, _) = t.select(2, 2, |_| true);
        assert_ne!(a, b);
        // Tag 1's mapping is gone: its table (and its pages) go to tag 3, emptied.
        assert_eq!(t.select(3, 3, |m| m != 1), (a, Some(1)));
        assert_eq!(get(&t, 0x1000), 0);
        assert_eq!(t.tables.len(), 2);
        // With no dead owner, a new table is reserved.
        let (c, ev) = t.select(4, 4, |_| true);
        assert!(c != a && c != b && ev.is_none());
    }

    #[test]
    fn an_entry_set_again_is_logged_once() {
        let mut t = Tables::new().unwrap();
        t.select(1, 1, |_| true);
        for i in 0..2 * LOG_MAX as u64 {
            t.set(0x0804_8000, 0x1000 + i % 7);
        }
        let table = &t.tables[t.cur];
        assert_eq!((table.log.len(), table.overflow), (1, false));
    }
}
