//! A cheap clock for the per-block time counters.
//!
//! The engine times every interpreted block, translation and trip into translated code;
//! at millions of blocks a second, `Instant::now` (a `clock_gettime` through the vDSO,
//! about 20 ns) is itself a visible cost. The time-stamp counter costs a few cycles on
//! bare metal; it is converted to nanoseconds against `Instant` measured over the
//! engine's lifetime, which is exact for an invariant TSC (every x86-64 host of the
//! last decade). Under a hypervisor `rdtsc` is dearer: on the 2-vCPU VM of
//! docs/results.md § Stop 36, two per interpreted block cost a Python start 3–5 % of
//! its time, so the engine reads the clock only when the split is asked for
//! (`EngineConfig::time_split`: `--stats`, `--stats-json`).

use std::time::Instant;

/// What the engine is doing, for the time counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) enum Activity {
    /// Interpreting.
    Interp,
    /// Translating.
    Translate,
    /// Executing translations.
    Exec,
    /// Outside `Engine::run` (not counted).
    #[default]
    Outside,
}

/// TSC ticks spent in each activity.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Ticks {
    /// Interpreting.
    pub interp: u64,
    /// Translating.
    pub translate: u64,
    /// Executing translations.
    pub exec: u64,
    /// Since when `cur` runs.
    last: u64,
    cur: Activity,
    /// Whether to time at all (`EngineConfig::time_split`): off, `switch` and `start`
    /// read no clock and the three totals stay zero.
    on: bool,
}

impl Ticks {
    /// Zero totals; reading the clock only if `on`.
    pub fn new(on: bool) -> Ticks {
        Ticks { on, ..Ticks::default() }
    }

    /// Starts timing (in `Engine::run`).
    #[inline]
    pub fn start(&mut self) {
        if !self.on {
            return;
        }
        self.last = Clock::ticks();
        self.cur = Activity::Outside;
    }

    /// The engine turns to `to`: the time since the last switch goes to the activity
    /// it leaves (the dispatch that led from it counted with it). A run of blocks of
    /// one kind (interpreted blocks one after another, say) reads the time-stamp
    /// counter once, not once a block.
    #[inline]
    pub fn switch(&mut self, to: Activity) {
        if to == self.cur || !self.on {
            return;
        }
        let now = Clock::ticks();
        let d = now.wrapping_sub(self.last);
        self.last = now;
        match std::mem::replace(&mut self.cur, to) {
            Activity::Interp => self.interp += d,
            Activity::Translate => self.translate += d,
            Activity::Exec => self.exec += d,
            Activity::Outside => {}
        }
    }
}

/// Converts TSC ticks to nanoseconds.
pub(crate) struct Clock {
    start: Instant,
    tsc0: u64,
}

impl Clock {
    /// Starts the reference interval.
    pub fn new() -> Clock {
        Clock { start: Instant::now(), tsc0: Self::ticks() }
    }

    /// The time-stamp counter.
    #[inline]
    pub fn ticks() -> u64 {
        // SAFETY: RDTSC is available on every x86-64 processor and has no preconditions.
        unsafe { core::arch::x86_64::_rdtsc() }
    }

    /// Nanoseconds per tick, measured from creation until now.
    pub fn ns_per_tick(&self) -> f64 {
        let ns = self.start.elapsed().as_nanos() as f64;
        let ticks = Self::ticks().wrapping_sub(self.tsc0);
        if ticks == 0 || ns < 1000.0 { 1.0 } else { ns / ticks as f64 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converts_to_plausible_nanoseconds() {
        let c = Clock::new();
        let t0 = Clock::ticks();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let ns = (Clock::ticks() - t0) as f64 * c.ns_per_tick();
        assert!((15e6..200e6).contains(&ns), "20 ms measured as {ns} ns");
    }
}
