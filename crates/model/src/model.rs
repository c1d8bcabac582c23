//! The cost model proper: counts times prices, divided by the clock.

use serde::{Deserialize, Serialize};

use crate::params::{CLOCK, SPECS, Side, index};
use crate::{Counts, Param};

/// Why [`CostModel::set`] refused a value.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ModelError {
    /// No parameter has that name.
    #[error("unknown cost-model parameter `{0}` (see CostModel::params)")]
    UnknownParam(String),
    /// The value is negative, not finite, or a zero clock.
    #[error("cost-model parameter `{name}` cannot be {value}")]
    BadValue {
        /// The parameter.
        name: String,
        /// The refused value.
        value: f64,
    },
}

/// The Crusoe TM5600 cost model: one price per counted event, and a clock.
///
/// Build it with [`CostModel::tm5600`], change a price with [`CostModel::set`], apply
/// it with [`CostModel::model`]. Every price and its source is listed by
/// [`CostModel::params`].
#[derive(Clone, Debug, PartialEq)]
pub struct CostModel {
    /// One value per row of the parameter table, in table order.
    values: Vec<f64>,
}

/// Modeled time of one run on the TM5600.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Modeled {
    /// User seconds: interpretation, translated execution, translation and dispatch.
    pub user_s: f64,
    /// System seconds: system calls and kernel paths.
    pub sys_s: f64,
    /// `user_s + sys_s`. There is no I/O or idle time in the model, so this is the
    /// modeled counterpart of both CPU time and (for a CPU-bound script) real time.
    pub total_s: f64,
    /// Seconds per parameter, in the order of [`CostModel::params`] (the clock left out).
    pub parts: Vec<(String, f64)>,
}

impl Modeled {
    /// Seconds charged by the parameter `name`, or `None` if there is no such part.
    pub fn part(&self, name: &str) -> Option<f64> {
        self.parts.iter().find(|(n, _)| n == name).map(|&(_, s)| s)
    }
}

impl Default for CostModel {
    fn default() -> Self {
        CostModel::tm5600()
    }
}

impl CostModel {
    /// The model with the documented TM5600 values (`docs/model.md`).
    pub fn tm5600() -> CostModel {
        CostModel { values: SPECS.iter().map(|s| s.default).collect() }
    }

    /// Every parameter with its value, unit, side, counter and source, in table order.
    pub fn params(&self) -> Vec<Param> {
        SPECS
            .iter()
            .zip(&self.values)
            .map(|(s, &value)| Param {
                name: s.name,
                value,
                unit: s.unit,
                counter: s.counter,
                side: s.side,
                source: s.source,
                assumption: s.assumption,
            })
            .collect()
    }

    /// The parameter table as Markdown: name, value, unit, side, and source or
    /// assumption (the table `docs/model.md` shows).
    pub fn params_markdown(&self) -> String {
        let mut s = String::from(
            "| parameter | value | unit | charged to | basis | source or reasoning |\n|---|---|---|---|---|---|\n",
        );
        for p in self.params() {
            let side = match p.side {
                Side::User => "user",
                Side::Sys => "sys",
                Side::Clock => "-",
            };
            let basis = if p.assumption { "assumption" } else { "sourced" };
            s += &format!(
                "| `{}` | {} | {} | {} | {} | {} |\n",
                p.name,
                fmt_value(p.value),
                p.unit,
                side,
                basis,
                p.source
            );
        }
        s
    }

    /// The value of parameter `name`.
    pub fn get(&self, name: &str) -> Option<f64> {
        index(name).map(|i| self.values[i])
    }

    /// Sets parameter `name` to `value` (in the parameter's unit).
    ///
    /// Prices must be finite and non-negative; the clock must be finite and positive.
    pub fn set(&mut self, name: &str, value: f64) -> Result<(), ModelError> {
        let i = index(name).ok_or_else(|| ModelError::UnknownParam(name.to_string()))?;
        if !value.is_finite() || value < 0.0 || (i == CLOCK && value == 0.0) {
            return Err(ModelError::BadValue { name: name.to_string(), value });
        }
        self.values[i] = value;
        Ok(())
    }

    /// A copy with parameter `name` multiplied by `factor`.
    pub fn scaled(&self, name: &str, factor: f64) -> Result<CostModel, ModelError> {
        let mut m = self.clone();
        let v = self.get(name).ok_or_else(|| ModelError::UnknownParam(name.to_string()))?;
        m.set(name, v * factor)?;
        Ok(m)
    }

    /// Modeled user, system and total seconds for `counts`.
    ///
    /// Each priced event contributes `count × cycles / clock_hz` seconds to the side
    /// (user or system) its parameter belongs to.
    pub fn model(&self, counts: &Counts) -> Modeled {
        let hz = self.values[CLOCK];
        let mut out = Modeled::default();
        for (s, &cycles) in SPECS.iter().zip(&self.values) {
            let seconds = (s.count)(counts) as f64 * cycles / hz;
            match s.side {
                Side::User => out.user_s += seconds,
                Side::Sys => out.sys_s += seconds,
                Side::Clock => continue,
            }
            out.parts.push((s.name.to_string(), seconds));
        }
        out.total_s = out.user_s + out.sys_s;
        out
    }
}

/// A value as the docs print it: integers with thousands separators, else 2 decimals.
pub(crate) fn fmt_value(v: f64) -> String {
    if v >= 1.0e6 && v.fract() == 0.0 {
        return format!("{} M", fmt_value(v / 1.0e6));
    }
    if v.fract() != 0.0 {
        return format!("{v:.2}");
    }
    let digits = format!("{v:.0}");
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run shaped like a few short processes: every counter non-zero.
    fn some_run() -> Counts {
        Counts {
            interp_instructions: 2_000_000,
            translated_instructions: 30_000_000,
            translated_guest_instructions: 40_000,
            translations: 5_000,
            lookups: 900_000,
            misses: 300_000,
            chain_patches: 6_000,
            syscalls: 5_000,
            forks: 100,
            execs: 100,
            page_cache_fills: 800,
            frames_allocated: 250_000,
            host_faults: 300,
            flushes: 2,
            reuses: 700,
            tcache_loads: 0,
            mmaps: 1_500,
        }
    }

    #[test]
    fn zero_counts_cost_zero_time() {
        let m = CostModel::tm5600().model(&Counts::default());
        assert_eq!((m.user_s, m.sys_s, m.total_s), (0.0, 0.0, 0.0));
        assert!(m.parts.iter().all(|&(_, s)| s == 0.0));
        assert_eq!(m.parts.len(), CostModel::tm5600().params().len() - 1);
    }

    #[test]
    fn one_event_costs_its_price_over_the_clock() {
        let model = CostModel::tm5600();
        let m = model.model(&Counts { execs: 1, ..Counts::default() });
        assert!((m.sys_s - 613_734.0 / 533.0e6).abs() < 1e-15);
        assert_eq!(m.user_s, 0.0);
        assert_eq!(m.part("exec"), Some(m.sys_s));
        let m = model.model(&Counts { interp_instructions: 533_000_000, ..Counts::default() });
        assert!((m.user_s - 40.0).abs() < 1e-9, "533 M instructions at 40 cycles and 533 MHz = 40 s");
    }

    #[test]
    fn totals_are_the_sum_of_the_parts_and_the_sides() {
        let m = CostModel::tm5600().model(&some_run());
        let sum: f64 = m.parts.iter().map(|&(_, s)| s).sum();
        assert!((m.total_s - sum).abs() < 1e-12);
        assert!((m.total_s - (m.user_s + m.sys_s)).abs() < 1e-12);
        let params = CostModel::tm5600().params();
        let user: f64 = m
            .parts
            .iter()
            .filter(|(n, _)| params.iter().any(|p| p.name == n && p.side == Side::User))
            .map(|p| p.1)
            .sum();
        assert!((m.user_s - user).abs() < 1e-12);
    }

    #[test]
    fn more_events_never_take_less_time() {
        let model = CostModel::tm5600();
        let base = some_run();
        let t0 = model.model(&base);
        let json = serde_json::to_value(base).unwrap();
        for field in json.as_object().unwrap().keys() {
            let mut more = json.clone();
            more[field] = (json[field].as_u64().unwrap() * 2 + 1).into();
            let t1 = model.model(&serde_json::from_value(more).unwrap());
            assert!(t1.user_s >= t0.user_s && t1.sys_s >= t0.sys_s, "{field}");
            assert!(t1.total_s >= t0.total_s, "{field}");
        }
    }

    #[test]
    fn higher_prices_never_take_less_time_and_a_faster_clock_takes_less() {
        let base = CostModel::tm5600();
        let run = some_run();
        let t0 = base.model(&run).total_s;
        for p in base.params() {
            let t1 = base.scaled(p.name, 2.0).unwrap().model(&run).total_s;
            if p.side == Side::Clock {
                assert!((t1 - t0 / 2.0).abs() < 1e-12, "double clock, half time");
            } else {
                assert!(t1 >= t0, "{}", p.name);
            }
        }
    }

    #[test]
    fn set_checks_names_and_values() {
        let mut m = CostModel::tm5600();
        m.set("interp_insn", 80.0).unwrap();
        assert_eq!(m.get("interp_insn"), Some(80.0));
        assert_eq!(m.set("nope", 1.0), Err(ModelError::UnknownParam("nope".into())));
        assert!(matches!(m.set("lookup", -1.0), Err(ModelError::BadValue { .. })));
        assert!(matches!(m.set("lookup", f64::NAN), Err(ModelError::BadValue { .. })));
        assert!(matches!(m.set("clock_hz", 0.0), Err(ModelError::BadValue { .. })));
        m.set("lookup", 0.0).unwrap();
        assert_ne!(m, CostModel::tm5600());
        assert_eq!(CostModel::default(), CostModel::tm5600());
    }

    #[test]
    fn every_parameter_has_a_source_and_assumptions_say_so() {
        for p in CostModel::tm5600().params() {
            assert!(!p.name.is_empty() && !p.unit.is_empty(), "{p:?}");
            assert!(p.source.trim().len() > 40, "{}: the source must say where the value comes from", p.name);
            assert!(p.value.is_finite() && p.value >= 0.0, "{}", p.name);
            if p.assumption {
                assert!(p.source.starts_with("Assumption"), "{}: an assumption is labelled as one", p.name);
            } else {
                // A sourced value names its source and the numbers it uses.
                assert!(p.source.chars().any(|c| c.is_ascii_digit()), "{}", p.name);
                assert!(!p.source.starts_with("Assumption"), "{}", p.name);
            }
        }
    }
}
