//! Reuse: under the `file` and `content` policies, a block about to be translated
//! first looks for a translation of the same code made from another frame, and copies
//! it instead of translating.
//!
//! Dispatch stays keyed by physical address, so chaining, the jump cache and
//! invalidation stay per frame: a reused translation is a copy of the original's host
//! code, placed and relocated like a new one. What a translation's host code depends
//! on beside its guest bytes and their page offset: the exit fixups (recorded by the
//! translator, resolved at placement), the translation's number in its chain-site exit
//! stubs (found here in the code and patched), the helper's address (the same for the
//! whole run) and the boxed instructions the helper calls name (shared: the copy points
//! at the original's, which live as long as any translation does, until a flush).
//!
//! The policy's identity (`KeyPolicy::identity`) only names candidates; a candidate is
//! copied only if its guest bytes equal the block's, so a stale file identity or a hash
//! collision costs a translation, never a wrong one.

use morph_mem::{AddressSpace, PAGE_SIZE};

use crate::Engine;
use crate::made::Made;

/// A translation kept to be copied: its code before fixups, the guest bytes it was made
/// from, and where its number is written.
pub(crate) struct Template {
    made: Made,
    /// Offset of the block in its page.
    offset: u32,
    /// The guest bytes translated.
    bytes: Vec<u8>,
    /// Per chain site, the offset of the exit-stub immediate holding `number << 8 | site`.
    id_fields: Vec<usize>,
}

/// Candidates kept per identity (identical code at one page offset is rare enough that
/// more would not be used).
const MAX_CANDIDATES: usize = 4;

impl Template {
    /// Bytes it costs (counted against the cache's capacity).
    pub(crate) fn bytes(&self) -> usize {
        std::mem::size_of::<Template>() + self.made.code.len() + self.bytes.len() + 8 * self.id_fields.len()
    }
}

/// Where translation number `id`'s chain-site stubs write their exit word, one offset per
/// site (a fixed distance before the stub's closing `jmp`); `None` if one of them does
/// not hold its number there (the code is then not copied).
pub(crate) fn id_fields(made: &Made, id: u32) -> Option<Vec<usize>> {
    made.sites
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let at = s.exit_jmp.checked_sub(crate::translate::ID_FIELD_BEFORE_EXIT_JMP)?;
            let word = ((id << 8) | i as u32).to_le_bytes();
            (made.code.get(at..at + 4)? == word).then_some(at)
        })
        .collect()
}

/// Writes translation number `id` into its chain-site stubs' exit words, at `fields`
/// (see [`id_fields`]).
pub(crate) fn renumber(code: &mut [u8], fields: &[usize], id: u32) {
    for (site, &at) in fields.iter().enumerate() {
        code[at..at + 4].copy_from_slice(&((id << 8) | site as u32).to_le_bytes());
    }
}

impl Engine {
    /// Keeps the translation `made` (about to be placed as the next one, its number at
    /// `id_fields`) of the block at page offset `offset`, made from the guest `bytes`,
    /// under `identity`, for other frames to copy.
    pub(crate) fn remember(&mut self, identity: u64, offset: u32, made: &Made, id_fields: Vec<usize>, bytes: Vec<u8>) {
        let list = self.identities.entry(identity).or_default();
        if list.len() >= MAX_CANDIDATES {
            return;
        }
        let t = Template { made: made.clone(), offset, bytes, id_fields };
        self.template_bytes += t.bytes();
        list.push(self.templates.len() as u32);
        self.templates.push(t);
    }

    /// A copy of a kept translation of the block at `eip` under `identity`, renumbered
    /// as the next translation, if one was made from the same guest bytes at the same
    /// page offset (and reads at most `max` bytes).
    pub(crate) fn reuse(&self, identity: u64, eip: u32, max: u32, mem: &AddressSpace) -> Option<Made> {
        let offset = eip & (PAGE_SIZE - 1);
        let mut bytes = Vec::new();
        let t = self.identities.get(&identity)?.iter().map(|&i| &self.templates[i as usize]).find(|t| {
            if t.offset != offset || t.made.guest_len > max {
                return false;
            }
            bytes.resize(t.bytes.len(), 0);
            mem.read_bytes(eip, &mut bytes).is_ok() && bytes == t.bytes
        })?;
        let mut made = t.made.clone();
        renumber(&mut made.code, &t.id_fields, self.trans.len() as u32);
        Some(made)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::translate;

    #[test]
    fn a_copy_is_the_translation_made_under_its_number() {
        // A loop (a chain site back to itself) and a conditional exit: two sites.
        let guest = [
            0x40, // inc eax
            0x39, 0xd8, // cmp eax, ebx
            0x75, 0xfb, // jne -5 (the block start)
            0xeb, 0x10, // jmp +16
        ];
        let make = |id| {
            Made::from(translate::translate(&guest, 0x0804_8000, 0x1234, id, Default::default()).expect("translates"))
        };
        let (a, b) = (make(3), make(700));
        assert!(!a.sites.is_empty());
        let fields = id_fields(&a, 3).expect("every site's number found once");
        let mut copy = a.clone();
        renumber(&mut copy.code, &fields, 700);
        // The helper-free block's code differs only in the numbers.
        assert_eq!(copy.code, b.code);
    }
}
