//! A translation ready to be placed in the code buffer, whichever way it was made:
//! by the translator, copied from another frame's (`reuse`), or loaded from the
//! persistent cache (`tcache`).

use iced_x86::Instruction;
use std::rc::Rc;

use crate::translate::{self, Fixup, Reloc, Site};

/// A translation ready to be placed: made by the translator, or copied from another
/// frame's translation of the same code (`reuse`). Host code before its fixups.
#[derive(Clone)]
pub(crate) struct Made {
    pub(crate) code: Vec<u8>,
    pub(crate) body: usize,
    pub(crate) entry: usize,
    pub(crate) sites: Vec<Site>,
    pub(crate) fixups: Vec<(usize, Fixup)>,
    pub(crate) relocs: Vec<(usize, Reloc)>,
    pub(crate) points: Vec<(u32, u32, u32)>,
    pub(crate) instructions: u32,
    pub(crate) guest_len: u32,
    #[allow(clippy::vec_box)]
    pub(crate) helpers: Rc<Vec<Box<Instruction>>>,
    pub(crate) fallbacks: u32,
    pub(crate) uses_fpu: bool,
    /// Calls of PC thunks done inline (0 for a translation loaded from a `tcache`).
    pub(crate) pc_thunks: u32,
    /// Whether its closing call takes a PLT stub's jump itself (false for a translation
    /// loaded from a `tcache`).
    pub(crate) plt_call: bool,
    /// Whether its closing indirect branch checks a predicted target inline.
    pub(crate) predicted: bool,
    /// Whether it must start at a 64-byte boundary (it holds a counted loop's copy).
    pub(crate) align64: bool,
    /// The PC thunk its inlined calls go to unchecked (`translate::Translated::thunk_page`).
    pub(crate) thunk_page: Option<u32>,
}

impl From<translate::Translated> for Made {
    fn from(t: translate::Translated) -> Made {
        Made {
            code: t.code,
            body: t.body,
            entry: t.entry,
            sites: t.sites,
            fixups: t.fixups,
            relocs: t.relocs,
            points: t.points,
            instructions: t.instructions,
            guest_len: t.guest_len,
            helpers: Rc::new(t.helper_instrs),
            fallbacks: t.fallbacks,
            uses_fpu: t.uses_fpu,
            pc_thunks: t.pc_thunks,
            plt_call: t.plt_call,
            predicted: t.predicted,
            align64: t.align64,
            thunk_page: t.thunk_page,
        }
    }
}
