//! Where translations go in the code buffer: back to back, or, with a layout seed, each
//! after a pseudo-random gap, so that measurements can average over placements
//! (`EngineConfig::layout_seed`).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// The largest gap before a translation, in bytes, plus one: gaps of 0 to 63 bytes move
/// a translation to any offset in a 64-byte window (the unit the host fetches code in)
/// and anywhere in the branch predictors' tables, at an average cost of 31.5 bytes per
/// translation (about 7 % of the code of a typical program).
pub(crate) const MAX_GAP: usize = 64;

/// The placement policy and what it has added to the buffer.
pub(crate) struct Layout {
    rng: Option<ChaCha8Rng>,
    /// Gap bytes in the code buffer now (they go when it is flushed).
    pub(crate) pad_bytes: usize,
}

impl Layout {
    /// Back to back (`None`), or gaps drawn from `seed`.
    pub(crate) fn new(seed: Option<u64>) -> Layout {
        Layout { rng: seed.map(ChaCha8Rng::seed_from_u64), pad_bytes: 0 }
    }

    /// The most bytes a gap can add before the next translation.
    pub(crate) fn max_gap(&self) -> usize {
        if self.rng.is_some() { MAX_GAP - 1 } else { 0 }
    }

    /// The gap before the next translation (counted in `pad_bytes`).
    pub(crate) fn gap(&mut self) -> usize {
        let Some(rng) = &mut self.rng else { return 0 };
        let n = (rng.next_u32() as usize) % MAX_GAP;
        self.pad_bytes += n;
        n
    }

    /// The buffer was emptied.
    pub(crate) fn flushed(&mut self) {
        self.pad_bytes = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaps_come_from_the_seed_alone() {
        let draw = |seed| {
            let mut l = Layout::new(seed);
            (0..100).map(|_| l.gap()).collect::<Vec<_>>()
        };
        assert!(draw(None).iter().all(|&g| g == 0));
        assert_eq!(draw(Some(7)), draw(Some(7)), "deterministic");
        assert_ne!(draw(Some(7)), draw(Some(8)));
        let g = draw(Some(7));
        assert!(g.iter().all(|&x| x < MAX_GAP) && g.iter().any(|&x| x > MAX_GAP / 2));
        let mut l = Layout::new(Some(1));
        let sum: usize = (0..10).map(|_| l.gap()).sum();
        assert_eq!(l.pad_bytes, sum);
        l.flushed();
        assert_eq!(l.pad_bytes, 0);
    }
}
