//! Fitting the model's **assumption** parameters to the 2005 report.
//!
//! The default model is not fitted (`docs/model.md`). This module answers a separate
//! question: which values of the Code Morphing Software's assumed prices would make
//! morph's counts of the seed workload give the 2005 seconds, and are those values
//! plausible? Sourced parameters (the clock, the lmbench kernel costs) are never
//! changed.
//!
//! The fit is a regularized least-squares problem in the logarithm of each assumption's
//! factor `f = fitted / assumed`: relative residuals of the four 2005 numbers (user and
//! sys seconds with ASLR off and on) plus `prior_weight × ln(f)²` per parameter, which
//! keeps parameters the data cannot identify at their assumed values. It is solved by
//! Levenberg–Marquardt; the model is linear in the prices, so this converges quickly.

// Small dense linear algebra (4 targets, about 10 parameters) reads best with indices.
#![allow(clippy::needless_range_loop)]

use serde::Serialize;

use crate::params::{CLOCK, SPECS, Side};
use crate::{CostModel, Counts};

/// The numbers to fit: user and sys seconds with ASLR off and on.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Target {
    /// User seconds, ASLR off.
    pub user_off_s: f64,
    /// User seconds, ASLR on.
    pub user_on_s: f64,
    /// System seconds, ASLR off.
    pub sys_off_s: f64,
    /// System seconds, ASLR on.
    pub sys_on_s: f64,
}

/// The 2005 report (`../shared/seed/`): `randomize_va_space=0` user 0.293 s sys 0.325 s,
/// `=1` user 2.712 s sys 0.401 s, on a 533 MHz TM5600.
pub const REPORT_2005: Target = Target { user_off_s: 0.293, user_on_s: 2.712, sys_off_s: 0.325, sys_on_s: 0.401 };

/// One fitted parameter.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FittedParam {
    /// The parameter's name.
    pub name: &'static str,
    /// Its unit.
    pub unit: &'static str,
    /// The documented (assumed) value.
    pub assumed: f64,
    /// The fitted value.
    pub fitted: f64,
    /// `fitted / assumed`.
    pub factor: f64,
    /// Whether the counts constrain it at all (its counter is non-zero and its assumed
    /// value is not zero: the fit scales the assumptions, so a zero stays zero).
    pub identified: bool,
}

/// One fitted number.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Residual {
    /// `user_off_s`, `user_on_s`, `sys_off_s` or `sys_on_s`.
    pub name: &'static str,
    /// The report's value.
    pub target_s: f64,
    /// The assumed model's value.
    pub assumed_s: f64,
    /// The fitted model's value.
    pub fitted_s: f64,
    /// `(fitted - target) / target`.
    pub relative: f64,
}

/// What a single assumption alone would have to become to give the report's on/off
/// ratio of user time, all other parameters as assumed.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AloneFactor {
    /// The parameter.
    pub name: &'static str,
    /// The factor on its assumed value, `None` when no positive value reaches the ratio.
    pub factor: Option<f64>,
}

/// The result of [`fit`].
#[derive(Clone, Debug, Serialize)]
pub struct Fit {
    /// Every assumption parameter, assumed and fitted.
    pub params: Vec<FittedParam>,
    /// The four numbers, target, assumed and fitted.
    pub residuals: Vec<Residual>,
    /// For each assumption alone, the factor that gives the report's user on/off ratio.
    pub alone: Vec<AloneFactor>,
    /// The user-side counter with the largest on/off ratio, and that ratio: user time is
    /// a positive combination of these counters, so no choice of prices gives a user
    /// on/off ratio above it; a larger measured ratio must come from the counts.
    pub user_ratio_bound: Option<(&'static str, f64)>,
    /// Whether the fit is plausible: every residual within `TOLERANCE` and every fitted
    /// parameter within `PLAUSIBLE_FACTOR` of its assumption.
    pub plausible: bool,
    /// The verdict in words.
    pub verdict: String,
    /// The weight of the prior that keeps each factor near 1.
    pub prior_weight: f64,
}

/// Largest relative residual of a plausible fit.
pub const TOLERANCE: f64 = 0.10;
/// Largest factor (either way) between a plausible fitted value and its assumption: the
/// assumptions' reasoning (docs/model.md) brackets each within a few times.
pub const PLAUSIBLE_FACTOR: f64 = 4.0;

const NAMES: [&str; 4] = ["user_off_s", "user_on_s", "sys_off_s", "sys_on_s"];

/// Per target, the seconds of the sourced part and, per assumption, seconds per unit
/// of its value.
struct Linear {
    base: [f64; 4],
    coef: Vec<[f64; 4]>,
    idx: Vec<usize>,
}

fn linear(model: &CostModel, off: &Counts, on: &Counts) -> Linear {
    let values: Vec<f64> = model.params().iter().map(|p| p.value).collect();
    let hz = values[CLOCK];
    let mut l = Linear { base: [0.0; 4], coef: Vec::new(), idx: Vec::new() };
    for (i, s) in SPECS.iter().enumerate() {
        if s.side == Side::Clock {
            continue;
        }
        let slot = |on_side: bool| match (s.side, on_side) {
            (Side::User, false) => 0,
            (Side::User, true) => 1,
            (_, false) => 2,
            (_, true) => 3,
        };
        let mut c = [0.0; 4];
        c[slot(false)] = (s.count)(off) as f64 / hz;
        c[slot(true)] = (s.count)(on) as f64 / hz;
        if s.assumption {
            l.coef.push(c);
            l.idx.push(i);
        } else {
            for t in 0..4 {
                l.base[t] += c[t] * values[i];
            }
        }
    }
    l
}

impl Linear {
    fn eval(&self, values: &[f64]) -> [f64; 4] {
        let mut out = self.base;
        for (c, v) in self.coef.iter().zip(values) {
            for t in 0..4 {
                out[t] += c[t] * v;
            }
        }
        out
    }
}

/// Solves `a x = b` (small, dense) by Gaussian elimination with partial pivoting.
fn solve(mut a: Vec<Vec<f64>>, mut b: Vec<f64>) -> Option<Vec<f64>> {
    let n = b.len();
    for col in 0..n {
        let p = (col..n).max_by(|&i, &j| a[i][col].abs().total_cmp(&a[j][col].abs()))?;
        if a[p][col].abs() < 1e-300 {
            return None;
        }
        a.swap(col, p);
        b.swap(col, p);
        for r in col + 1..n {
            let f = a[r][col] / a[col][col];
            for k in col..n {
                a[r][k] -= f * a[col][k];
            }
            b[r] -= f * b[col];
        }
    }
    let mut x = vec![0.0; n];
    for r in (0..n).rev() {
        let s: f64 = (r + 1..n).map(|k| a[r][k] * x[k]).sum();
        x[r] = (b[r] - s) / a[r][r];
    }
    Some(x)
}

/// Fits the assumption parameters of `model` so that the counts of an ASLR-off run
/// (`off`) and an ASLR-on run (`on`) give `target`.
pub fn fit(model: &CostModel, off: &Counts, on: &Counts, target: &Target, prior_weight: f64) -> Fit {
    let l = linear(model, off, on);
    let assumed: Vec<f64> = l.idx.iter().map(|&i| model.params()[i].value).collect();
    let tgt = [target.user_off_s, target.user_on_s, target.sys_off_s, target.sys_on_s];
    let n = assumed.len();
    let values = |th: &[f64]| -> Vec<f64> { assumed.iter().zip(th).map(|(v, t)| v * t.exp()).collect() };
    let cost = |th: &[f64]| -> f64 {
        let m = l.eval(&values(th));
        let data: f64 = (0..4).map(|t| ((m[t] - tgt[t]) / tgt[t]).powi(2)).sum();
        data + prior_weight * th.iter().map(|t| t * t).sum::<f64>()
    };
    let mut th = vec![0.0; n];
    let mut mu = 1e-3;
    for _ in 0..500 {
        let v = values(&th);
        let m = l.eval(&v);
        // Residuals and Jacobian: 4 data rows, then one prior row per parameter.
        let mut jtj = vec![vec![0.0; n]; n];
        let mut jtr = vec![0.0; n];
        for t in 0..4 {
            let r = (m[t] - tgt[t]) / tgt[t];
            let row: Vec<f64> = (0..n).map(|p| l.coef[p][t] * v[p] / tgt[t]).collect();
            for p in 0..n {
                jtr[p] += row[p] * r;
                for q in 0..n {
                    jtj[p][q] += row[p] * row[q];
                }
            }
        }
        for p in 0..n {
            jtr[p] += prior_weight * th[p];
            jtj[p][p] += prior_weight;
        }
        let before = cost(&th);
        let mut a = jtj.clone();
        for (p, row) in a.iter_mut().enumerate() {
            row[p] += mu * (1.0 + jtj[p][p]);
        }
        let Some(step) = solve(a, jtr.iter().map(|x| -x).collect()) else { break };
        let next: Vec<f64> = th.iter().zip(&step).map(|(t, s)| (t + s).clamp(-7.0, 7.0)).collect();
        if cost(&next) < before {
            let gain = before - cost(&next);
            th = next;
            mu = (mu / 3.0).max(1e-12);
            if gain < 1e-15 {
                break;
            }
        } else {
            mu *= 4.0;
            if mu > 1e12 {
                break;
            }
        }
    }
    let fitted = values(&th);
    let (m0, m1) = (l.eval(&assumed), l.eval(&fitted));
    let params: Vec<FittedParam> = l
        .idx
        .iter()
        .enumerate()
        .map(|(k, &i)| FittedParam {
            name: SPECS[i].name,
            unit: SPECS[i].unit,
            assumed: assumed[k],
            fitted: fitted[k],
            // A price assumed to be zero stays zero: the fit scales assumptions.
            factor: if assumed[k] > 0.0 { fitted[k] / assumed[k] } else { 1.0 },
            identified: assumed[k] > 0.0 && l.coef[k].iter().any(|c| *c != 0.0),
        })
        .collect();
    let residuals: Vec<Residual> = (0..4)
        .map(|t| Residual {
            name: NAMES[t],
            target_s: tgt[t],
            assumed_s: m0[t],
            fitted_s: m1[t],
            relative: (m1[t] - tgt[t]) / tgt[t],
        })
        .collect();
    let alone = alone_factors(&l, &assumed, target.user_on_s / target.user_off_s);
    let (plausible, verdict) = verdict(&params, &residuals);
    let user_ratio_bound = SPECS
        .iter()
        .filter(|s| s.side == Side::User && (s.count)(off) > 0)
        .map(|s| (s.counter, (s.count)(on) as f64 / (s.count)(off) as f64))
        .max_by(|a, b| a.1.total_cmp(&b.1));
    Fit { params, residuals, alone, user_ratio_bound, plausible, verdict, prior_weight }
}

/// For each assumption alone: the factor `f` with `user_on(f) / user_off(f) = ratio`,
/// in closed form (each side is linear in `f`).
fn alone_factors(l: &Linear, assumed: &[f64], ratio: f64) -> Vec<AloneFactor> {
    let m = l.eval(assumed);
    l.idx
        .iter()
        .enumerate()
        .filter(|(k, _)| assumed[*k] > 0.0 && (l.coef[*k][0] != 0.0 || l.coef[*k][1] != 0.0))
        .map(|(k, &i)| {
            let (b_off, b_on) = (l.coef[k][0] * assumed[k], l.coef[k][1] * assumed[k]);
            let (a_off, a_on) = (m[0] - b_off, m[1] - b_on);
            let den = b_on - ratio * b_off;
            let f = if den != 0.0 { (ratio * a_off - a_on) / den } else { f64::NAN };
            AloneFactor { name: SPECS[i].name, factor: (f.is_finite() && f > 0.0).then_some(f) }
        })
        .collect()
}

fn verdict(params: &[FittedParam], residuals: &[Residual]) -> (bool, String) {
    let worst = residuals.iter().map(|r| r.relative.abs()).fold(0.0, f64::max);
    let far: Vec<String> = params
        .iter()
        .filter(|p| p.factor > PLAUSIBLE_FACTOR || p.factor < 1.0 / PLAUSIBLE_FACTOR)
        .map(|p| format!("{} x{:.2}", p.name, p.factor))
        .collect();
    let mut why = Vec::new();
    if worst > TOLERANCE {
        why.push(format!(
            "the fit misses the report by up to {:.0} % (more than {:.0} %)",
            100.0 * worst,
            100.0 * TOLERANCE
        ));
    }
    if !far.is_empty() {
        why.push(format!(
            "it needs values more than {PLAUSIBLE_FACTOR}x away from their reasoned assumptions: {}",
            far.join(", ")
        ));
    }
    if why.is_empty() {
        (
            true,
            format!(
                "plausible: within {:.0} % of every 2005 number with every assumption within {PLAUSIBLE_FACTOR}x of its reasoned value",
                100.0 * TOLERANCE
            ),
        )
    } else {
        (false, format!("not plausible: {}", why.join("; ")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(interp: u64, transl: u64, sys: u64) -> Counts {
        Counts {
            interp_instructions: interp,
            translated_instructions: 50_000_000,
            translated_guest_instructions: transl,
            translations: transl / 5,
            lookups: 500_000,
            misses: 100_000,
            syscalls: sys,
            forks: 100,
            execs: 100,
            mmaps: 2_000,
            ..Counts::default()
        }
    }

    #[test]
    fn a_model_fits_numbers_it_produced_itself_without_moving() {
        let (off, on) = (counts(2_000_000, 100_000, 5_000), counts(10_000_000, 600_000, 6_000));
        let m = CostModel::tm5600().model(&off);
        let n = CostModel::tm5600().model(&on);
        let t = Target { user_off_s: m.user_s, user_on_s: n.user_s, sys_off_s: m.sys_s, sys_on_s: n.sys_s };
        let f = fit(&CostModel::tm5600(), &off, &on, &t, 1e-3);
        assert!(f.plausible, "{}", f.verdict);
        for p in &f.params {
            assert!((p.factor - 1.0).abs() < 1e-3, "{p:?}");
        }
        for r in &f.residuals {
            assert!(r.relative.abs() < 1e-6, "{r:?}");
        }
    }

    #[test]
    fn doubling_interpretation_cost_is_recovered_and_sourced_parameters_stay() {
        let (off, on) = (counts(2_000_000, 100_000, 5_000), counts(10_000_000, 600_000, 6_000));
        let mut truth = CostModel::tm5600();
        truth.set("interp_insn", 80.0).unwrap();
        let (m, n) = (truth.model(&off), truth.model(&on));
        let t = Target { user_off_s: m.user_s, user_on_s: n.user_s, sys_off_s: m.sys_s, sys_on_s: n.sys_s };
        let f = fit(&CostModel::tm5600(), &off, &on, &t, 1e-6);
        for r in &f.residuals {
            assert!(r.relative.abs() < 0.01, "{r:?}");
        }
        assert!(f.params.iter().all(|p| SPECS.iter().any(|s| s.name == p.name && s.assumption)));
        // Alone, the interpretation price that explains the user ratio is the true one.
        let a = f.alone.iter().find(|a| a.name == "interp_insn").unwrap();
        assert!((a.factor.unwrap() - 2.0).abs() < 1e-6, "{a:?}");
    }

    #[test]
    fn solve_is_right() {
        let x = solve(vec![vec![2.0, 1.0], vec![1.0, 3.0]], vec![3.0, 5.0]).unwrap();
        assert!((x[0] - 0.8).abs() < 1e-12 && (x[1] - 1.4).abs() < 1e-12);
    }
}
