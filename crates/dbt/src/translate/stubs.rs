//! The out-of-line code after a translation's body: side exits, edges into other pages,
//! the exit stubs of its chain sites, and the budget exit of its chain entry; then the
//! block-local rel32 fields are resolved.

use super::emit::Emitter;
use super::{Fixup, Site};
use crate::runtime::{self, EXIT_BRANCH, off};

/// Bytes from a chain site's exit word (the immediate `number << 8 | site` its stub
/// stores) to the rel32 of the stub's closing `jmp` (`Site::exit_jmp`): the word, then
/// the store of the exit reason (11 bytes) and the `jmp` opcode.
pub(crate) const ID_FIELD_BEFORE_EXIT_JMP: usize = 4 + 11 + 1;

/// Emits the stubs of translation `id`, whose budget checks (the chain entry's, and a
/// counted loop's ordinary copy's) have the rel32 of their jump to the budget exit at
/// `budget_rels`; returns the chain sites.
pub(super) fn emit(e: &mut Emitter, id: u32, budget_rels: &[usize]) -> Vec<Site> {
    // Side exits: count, then a site (or a lookup) of their own.
    for (rel, k, delta) in std::mem::take(&mut e.side) {
        e.local.push((rel, e.code.len()));
        runtime::lea_r11(k, &mut e.code);
        e.jump(delta);
    }
    // Edges into other pages: the target EIP in r13d, then a site (chained to the
    // target's far entry).
    for (rel, delta) in std::mem::take(&mut e.far) {
        e.local.push((rel, e.code.len()));
        e.jump(delta);
    }
    // Exit stubs of the sites (unchained targets).
    let mut sites = std::mem::take(&mut e.sites);
    for (i, s) in sites.iter_mut().enumerate() {
        e.local.push((s.rel, e.code.len()));
        e.bytes(&runtime::lea_r13_r14(e.at(s.target_delta)));
        e.bytes(&runtime::store_r13(off::EIP));
        e.bytes(&runtime::store_imm(off::EXIT_SITE, (id << 8) | i as u32));
        let id_field = e.code.len() - 4;
        e.bytes(&runtime::store_imm(off::EXIT, EXIT_BRANCH));
        e.jmp_shared(Fixup::ExitCommon);
        s.exit_jmp = e.code.len() - 4;
        debug_assert_eq!(s.exit_jmp - ID_FIELD_BEFORE_EXIT_JMP, id_field);
    }
    // The budget exit of the chain entry.
    let out = e.code.len();
    e.bytes(&runtime::lea_r13_r14(e.at(0)));
    e.bytes(&runtime::store_r13(off::EIP));
    e.bytes(&runtime::store_imm(off::EXIT, runtime::EXIT_BUDGET));
    e.jmp_shared(Fixup::ExitCommon);
    for &rel in budget_rels {
        e.local.push((rel, out));
    }
    for &(field, target) in &e.local {
        let rel = (target as i64 - (field as i64 + 4)) as i32;
        e.code[field..field + 4].copy_from_slice(&rel.to_le_bytes());
    }
    sites
}
