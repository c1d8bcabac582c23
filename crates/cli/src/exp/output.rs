//! What `morph exp` writes: self-describing rows and cells, and the metadata beside them.
//!
//! A [`Row`] is serialized as a [`RowRecord`]: units in the column names (`real_s`), and
//! an empty cell (JSON `null`) where a value does not apply: a native run has no key,
//! threshold, seed, kernel profile, model or translator counters. The JSON document is
//! `{metadata, cells, runs}`; a CSV file gets its metadata in a sidecar
//! `<file>.meta.json`, so that `pandas.read_csv(file)` needs no options.
//! `docs/experiments.md` lists every column.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{Common, Row, Summary};

/// How a row is written: units in names, `None` (empty) for what does not apply.
#[derive(Serialize, Deserialize)]
pub struct RowRecord {
    engine: String,
    key: Option<String>,
    aslr: String,
    host_randomize_va_space: Option<u32>,
    kernel_profile: Option<String>,
    threshold: Option<u32>,
    /// Absent from CSVs of older morphs (whose runs had the default capacity).
    #[serde(default)]
    tc_size_bytes: Option<u64>,
    workload: String,
    seed: Option<u64>,
    real_s: f64,
    user_s: f64,
    sys_s: f64,
    morph_engine_s: Option<f64>,
    morph_os_s: Option<f64>,
    modeled_tm5600_s: Option<f64>,
    modeled_tm5600_user_s: Option<f64>,
    modeled_tm5600_sys_s: Option<f64>,
    translations: Option<u64>,
    retranslations: Option<u64>,
    #[serde(default)]
    flushes: Option<u64>,
    lookups: Option<u64>,
    hits: Option<u64>,
    interp_instructions: Option<u64>,
    translated_instructions: Option<u64>,
    processes: Option<u64>,
    exit_status: i32,
}

impl From<Row> for RowRecord {
    fn from(r: Row) -> RowRecord {
        let a = !r.native;
        RowRecord {
            engine: if r.native { "native" } else { "morph" }.into(),
            key: opt(a, r.key.clone()),
            aslr: r.aslr.clone(),
            host_randomize_va_space: r.host_aslr,
            kernel_profile: opt(a, r.kernel.clone()),
            threshold: opt(a, r.threshold),
            tc_size_bytes: opt(a, r.tc_size_bytes),
            workload: r.workload.clone(),
            seed: opt(a, r.seed),
            real_s: r.real_s,
            user_s: r.user_s,
            sys_s: r.sys_s,
            morph_engine_s: opt(a, r.morph_engine_s),
            morph_os_s: opt(a, r.morph_os_s),
            modeled_tm5600_s: opt(a, r.modeled_s),
            modeled_tm5600_user_s: opt(a, r.modeled_user_s),
            modeled_tm5600_sys_s: opt(a, r.modeled_sys_s),
            translations: opt(a, r.translations),
            retranslations: opt(a, r.retranslations),
            flushes: opt(a, r.flushes),
            lookups: opt(a, r.lookups),
            hits: opt(a, r.hits),
            interp_instructions: opt(a, r.interp_instructions),
            translated_instructions: opt(a, r.translated_instructions),
            processes: opt(a, r.processes),
            exit_status: r.status,
        }
    }
}

impl From<RowRecord> for Row {
    fn from(r: RowRecord) -> Row {
        let native = r.engine == "native";
        Row {
            native,
            key: r.key.unwrap_or_else(|| "native".into()),
            aslr: r.aslr,
            host_aslr: r.host_randomize_va_space,
            kernel: r.kernel_profile.unwrap_or_default(),
            threshold: r.threshold.unwrap_or(0),
            tc_size_bytes: match r.tc_size_bytes {
                Some(n) => n,
                None if native => 0,
                None => morph_dbt::DEFAULT_TC_SIZE as u64,
            },
            workload: r.workload,
            seed: r.seed.unwrap_or(0),
            real_s: r.real_s,
            user_s: r.user_s,
            sys_s: r.sys_s,
            morph_engine_s: r.morph_engine_s.unwrap_or(0.0),
            morph_os_s: r.morph_os_s.unwrap_or(0.0),
            modeled_s: r.modeled_tm5600_s.unwrap_or(0.0),
            modeled_user_s: r.modeled_tm5600_user_s.unwrap_or(0.0),
            modeled_sys_s: r.modeled_tm5600_sys_s.unwrap_or(0.0),
            translations: r.translations.unwrap_or(0),
            retranslations: r.retranslations.unwrap_or(0),
            flushes: r.flushes.unwrap_or(0),
            lookups: r.lookups.unwrap_or(0),
            hits: r.hits.unwrap_or(0),
            interp_instructions: r.interp_instructions.unwrap_or(0),
            translated_instructions: r.translated_instructions.unwrap_or(0),
            processes: r.processes.unwrap_or(0),
            status: r.exit_status,
            counts: morph_model::Counts::default(),
        }
    }
}

/// `v` where it applies, empty (`None`) where it does not.
fn opt<T>(applies: bool, v: T) -> Option<T> {
    applies.then_some(v)
}

/// A run in the JSON document: its row plus the counts the cost model reads (so that
/// `morph exp fit --from FILE` can model it again).
#[derive(Serialize, Deserialize)]
pub struct RunJson {
    #[serde(flatten)]
    row: RowRecord,
    counts: Option<morph_model::Counts>,
}

impl RunJson {
    pub fn new(r: &Row) -> RunJson {
        RunJson { row: r.clone().into(), counts: (!r.native).then_some(r.counts) }
    }

    /// The row back, with its counts.
    pub fn into_row(self) -> Row {
        let counts = self.counts.unwrap_or_default();
        let mut r: Row = self.row.into();
        r.counts = counts;
        r
    }
}

/// How a cell (one configuration, several runs) is written.
#[derive(Serialize)]
pub struct CellRecord {
    engine: String,
    key: Option<String>,
    aslr: String,
    runs: usize,
    real_median_s: f64,
    real_min_s: f64,
    real_max_s: f64,
    user_median_s: f64,
    user_min_s: f64,
    user_max_s: f64,
    sys_median_s: f64,
    sys_min_s: f64,
    sys_max_s: f64,
    modeled_tm5600_median_s: Option<f64>,
    modeled_tm5600_min_s: Option<f64>,
    modeled_tm5600_max_s: Option<f64>,
    modeled_tm5600_user_median_s: Option<f64>,
    modeled_tm5600_sys_median_s: Option<f64>,
    translations_median: Option<u64>,
    retranslations_median: Option<u64>,
    lookups_median: Option<u64>,
    hits_median: Option<u64>,
    interp_instructions_median: Option<u64>,
}

impl From<&Summary> for CellRecord {
    fn from(s: &Summary) -> CellRecord {
        let a = !s.native;
        CellRecord {
            engine: if s.native { "native" } else { "morph" }.into(),
            key: opt(a, s.key.clone()),
            aslr: s.aslr.clone(),
            runs: s.runs,
            real_median_s: s.real_s,
            real_min_s: s.real_range.0,
            real_max_s: s.real_range.1,
            user_median_s: s.user_s,
            user_min_s: s.user_range.0,
            user_max_s: s.user_range.1,
            sys_median_s: s.sys_s,
            sys_min_s: s.sys_range.0,
            sys_max_s: s.sys_range.1,
            modeled_tm5600_median_s: opt(a, s.modeled_s),
            modeled_tm5600_min_s: opt(a, s.modeled_range.0),
            modeled_tm5600_max_s: opt(a, s.modeled_range.1),
            modeled_tm5600_user_median_s: opt(a, s.modeled_user_s),
            modeled_tm5600_sys_median_s: opt(a, s.modeled_sys_s),
            translations_median: opt(a, s.translations),
            retranslations_median: opt(a, s.retranslations),
            lookups_median: opt(a, s.lookups),
            hits_median: opt(a, s.hits),
            interp_instructions_median: opt(a, s.interp_instructions),
        }
    }
}

/// The metadata block of an experiment: morph and the host ([`crate::meta::metadata`]),
/// the experiment's configuration, the sysroot's packages and the cost model's values.
pub fn metadata(experiment: &str, config: Value, root: &Path) -> Value {
    let model = morph_model::CostModel::tm5600();
    let params: serde_json::Map<String, Value> = model
        .params()
        .iter()
        .map(|p| (p.name.to_string(), json!({"value": p.value, "unit": p.unit, "assumption": p.assumption})))
        .collect();
    let mut m = crate::meta::metadata();
    m["experiment"] = experiment.into();
    m["config"] = config;
    m["sysroot"] = crate::meta::sysroot(root);
    m["cost_model"] = Value::Object(params);
    m
}

/// The sidecar of a CSV file: `<file>.meta.json`.
pub fn sidecar(csv: &Path) -> PathBuf {
    let mut s = csv.as_os_str().to_owned();
    s.push(".meta.json");
    PathBuf::from(s)
}

/// Checks every output path of `c` (and `extra`) before anything runs.
pub fn check_outputs(c: &Common, extra: &[(&str, &Path)]) -> anyhow::Result<()> {
    let mut all: Vec<(&str, &Path)> = Vec::new();
    if let Some(p) = &c.json {
        all.push(("--json", p));
    }
    if let Some(p) = &c.csv {
        all.push(("--csv", p));
    }
    if let Some(p) = &c.svg {
        all.push(("--svg", p));
    }
    all.extend_from_slice(extra);
    let side = c.csv.as_deref().map(sidecar);
    if let Some(s) = &side {
        all.push(("--csv (its metadata sidecar)", s));
    }
    for (flag, p) in all {
        crate::meta::check_writable(flag, p)?;
    }
    Ok(())
}

/// Writes `--json` ({metadata, cells, runs}) and `--csv` (one row per run, metadata in
/// the sidecar).
pub fn write_outputs(c: &Common, metadata: &Value, cells: &[Summary], rows: &[Row]) -> anyhow::Result<()> {
    use anyhow::Context;
    if let Some(j) = &c.json {
        let cells: Vec<CellRecord> = cells.iter().map(CellRecord::from).collect();
        let runs: Vec<RunJson> = rows.iter().map(RunJson::new).collect();
        let doc = json!({"metadata": metadata, "cells": cells, "runs": runs});
        std::fs::write(j, serde_json::to_string_pretty(&doc)? + "\n")
            .with_context(|| format!("--json {}", j.display()))?;
    }
    if let Some(p) = &c.csv {
        let mut w = csv::Writer::from_path(p).with_context(|| format!("--csv {}", p.display()))?;
        for r in rows {
            w.serialize(r)?;
        }
        w.flush()?;
        let side = sidecar(p);
        std::fs::write(&side, serde_json::to_string_pretty(metadata)? + "\n")
            .with_context(|| format!("--csv sidecar {}", side.display()))?;
    }
    Ok(())
}
