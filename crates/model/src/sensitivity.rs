//! How much the conclusion depends on each price.
//!
//! The ASLR question is a comparison: the same script with `randomize_va_space` off and
//! on. [`sensitivity()`] models both runs with one parameter halved, then doubled, for every
//! parameter in turn, and reports both times and their ratio. A parameter whose halving
//! and doubling leave the on/off ratio nearly unchanged does not matter to the
//! conclusion, whatever its true value; a parameter that moves the ratio a lot is the
//! one whose value needs a better source. [`compare`] gives the unscaled row to read the
//! others against.

use serde::{Deserialize, Serialize};

use crate::{CostModel, Counts, Modeled};

/// The factors each parameter is scaled by.
pub const FACTORS: [f64; 2] = [0.5, 2.0];

/// The two runs modeled under one variant of the model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SensitivityRow {
    /// The parameter scaled (`"baseline"` for the unscaled model).
    pub param: String,
    /// The factor it was multiplied by.
    pub factor: f64,
    /// Modeled total seconds of the run with ASLR off.
    pub off_s: f64,
    /// Modeled total seconds of the run with ASLR on.
    pub on_s: f64,
    /// `on_s / off_s` (NaN if `off_s` is zero).
    pub ratio: f64,
    /// Modeled user seconds with ASLR off.
    pub off_user_s: f64,
    /// Modeled user seconds with ASLR on.
    pub on_user_s: f64,
    /// `on_user_s / off_user_s` (NaN if `off_user_s` is zero).
    pub user_ratio: f64,
}

fn ratio(on: f64, off: f64) -> f64 {
    if off == 0.0 { f64::NAN } else { on / off }
}

fn row(param: &str, factor: f64, off: &Modeled, on: &Modeled) -> SensitivityRow {
    SensitivityRow {
        param: param.to_string(),
        factor,
        off_s: off.total_s,
        on_s: on.total_s,
        ratio: ratio(on.total_s, off.total_s),
        off_user_s: off.user_s,
        on_user_s: on.user_s,
        user_ratio: ratio(on.user_s, off.user_s),
    }
}

/// The unscaled model applied to both runs (`param` is `"baseline"`, `factor` 1).
pub fn compare(model: &CostModel, counts_off: &Counts, counts_on: &Counts) -> SensitivityRow {
    row("baseline", 1.0, &model.model(counts_off), &model.model(counts_on))
}

/// For every parameter (the clock included) and every factor in [`FACTORS`], the two
/// runs modeled with that parameter scaled: `2 × params().len()` rows, in parameter
/// order, ×0.5 before ×2.
///
/// Scaling the clock scales both runs alike and leaves the ratios unchanged; its rows
/// are there to show exactly that.
pub fn sensitivity(model: &CostModel, counts_off: &Counts, counts_on: &Counts) -> Vec<SensitivityRow> {
    let mut rows = Vec::new();
    for p in model.params() {
        for factor in FACTORS {
            let m = model.scaled(p.name, factor).expect("a listed parameter scaled by a positive factor");
            rows.push(row(p.name, factor, &m.model(counts_off), &m.model(counts_on)));
        }
    }
    rows
}

/// The rows as a Markdown table (seconds to 3 decimals, ratios to 2).
pub fn markdown(rows: &[SensitivityRow]) -> String {
    let mut s = String::from(
        "| parameter | factor | off total (s) | on total (s) | on/off | off user (s) | on user (s) | user on/off |\n\
         |---|---|---|---|---|---|---|---|\n",
    );
    for r in rows {
        s += &format!(
            "| {} | ×{} | {:.3} | {:.3} | {:.2} | {:.3} | {:.3} | {:.2} |\n",
            r.param, r.factor, r.off_s, r.on_s, r.ratio, r.off_user_s, r.on_user_s, r.user_ratio
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn off() -> Counts {
        Counts {
            interp_instructions: 1_000_000,
            translated_instructions: 20_000_000,
            translated_guest_instructions: 10_000,
            translations: 1_000,
            lookups: 400_000,
            misses: 60_000,
            chain_patches: 2_000,
            syscalls: 4_000,
            forks: 100,
            execs: 100,
            page_cache_fills: 500,
            frames_allocated: 200_000,
            host_faults: 100,
            flushes: 1,
            reuses: 10,
            tcache_loads: 0,
            mmaps: 1_000,
        }
    }

    /// ASLR on: same work, but library code is retranslated in every process.
    fn on() -> Counts {
        Counts {
            interp_instructions: 5_000_000,
            translated_guest_instructions: 300_000,
            translations: 30_000,
            misses: 300_000,
            chain_patches: 40_000,
            ..off()
        }
    }

    #[test]
    fn two_rows_per_parameter_in_order() {
        let model = CostModel::tm5600();
        let rows = sensitivity(&model, &off(), &on());
        let params = model.params();
        assert_eq!(rows.len(), 2 * params.len());
        for (pair, p) in rows.chunks(2).zip(&params) {
            assert_eq!((pair[0].param.as_str(), pair[0].factor), (p.name, 0.5));
            assert_eq!((pair[1].param.as_str(), pair[1].factor), (p.name, 2.0));
            for r in pair {
                assert!(r.off_s > 0.0 && r.on_s > 0.0);
                assert!((r.ratio - r.on_s / r.off_s).abs() < 1e-12);
                assert!((r.user_ratio - r.on_user_s / r.off_user_s).abs() < 1e-12);
            }
        }
        let table = markdown(&rows);
        assert_eq!(table.lines().count(), 2 + rows.len());
    }

    #[test]
    fn the_clock_moves_times_but_not_ratios() {
        let model = CostModel::tm5600();
        let base = compare(&model, &off(), &on());
        assert_eq!((base.param.as_str(), base.factor), ("baseline", 1.0));
        let rows = sensitivity(&model, &off(), &on());
        for r in rows.iter().filter(|r| r.param == "clock_hz") {
            assert!((r.ratio - base.ratio).abs() < 1e-12);
            assert!((r.off_s * r.factor - base.off_s).abs() < 1e-12);
        }
    }

    #[test]
    fn translation_cost_drives_the_aslr_ratio() {
        let model = CostModel::tm5600();
        let rows = sensitivity(&model, &off(), &on());
        let get = |p: &str, f: f64| rows.iter().find(|r| r.param == p && r.factor == f).unwrap().ratio;
        let base = compare(&model, &off(), &on()).ratio;
        assert!(base > 1.0);
        assert!(get("translate_insn", 2.0) > base && get("translate_insn", 0.5) < base);
        // A price both runs pay equally (fork) pulls the ratio towards 1 when it grows.
        assert!(get("fork", 2.0) < base && get("fork", 0.5) > base);
    }

    #[test]
    fn zero_time_runs_give_nan_ratios_not_panics() {
        let r = compare(&CostModel::tm5600(), &Counts::default(), &Counts::default());
        assert!(r.ratio.is_nan() && r.user_ratio.is_nan());
    }
}
