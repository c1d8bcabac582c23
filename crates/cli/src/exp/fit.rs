//! `morph exp fit`: the cost model's assumption parameters fitted to the 2005 report,
//! from the counts of morph runs of the seed workload: a separate, labelled result
//! (the `morph exp seed` table stays the unfitted model).

use super::*;
use morph_model::fit::{Fit, REPORT_2005};

/// `morph exp fit`.
#[derive(clap::Args)]
pub struct FitArgs {
    /// Read the runs from a `morph exp seed --json` document instead of running them.
    #[arg(long, value_name = "FILE")]
    from: Option<PathBuf>,
    /// The key whose counts are fitted (the Crusoe's translations were keyed by
    /// virtual address, as morph's `virtual`).
    #[arg(long, default_value = "virtual")]
    key: String,
    /// Rounds of the workload loop (when running).
    #[arg(long, default_value_t = 50)]
    rounds: u32,
    /// Runs per ASLR setting (when running); the median run is fitted.
    #[arg(long, default_value_t = 3)]
    runs: u32,
    /// Translation threshold (when running).
    #[arg(long, default_value_t = morph_dbt::DEFAULT_THRESHOLD)]
    threshold: u32,
    /// First seed (when running).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Kernel whose ASLR is modeled (when running).
    #[arg(long, default_value = "2.6.12")]
    kernel: String,
    /// Guest root (default: the Debian i386 sysroot).
    #[arg(long)]
    root: Option<PathBuf>,
    /// Weight of the prior that keeps each assumption near its reasoned value
    /// (per squared natural log of its factor; the data term is squared relative error).
    #[arg(long, default_value_t = 1e-3)]
    prior_weight: f64,
    /// Write the fit (and its metadata) as JSON.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}

/// Runs (or reads) the seed workload's runs for `a.key` with ASLR off and on.
fn runs(a: &FitArgs) -> anyhow::Result<(Vec<Row>, serde_json::Value)> {
    if let Some(f) = &a.from {
        let text = std::fs::read_to_string(f).with_context(|| format!("--from {}", f.display()))?;
        let doc: serde_json::Value = serde_json::from_str(&text).with_context(|| format!("--from {}", f.display()))?;
        let runs: Vec<output::RunJson> = serde_json::from_value(doc["runs"].clone())
            .with_context(|| format!("--from {}: not a `morph exp seed --json` document", f.display()))?;
        let source = serde_json::json!({"from": f.display().to_string(), "metadata": doc["metadata"]});
        return Ok((runs.into_iter().map(output::RunJson::into_row).collect(), source));
    }
    let root = match &a.root {
        Some(r) => r.canonicalize()?,
        None => crate::sysroot_path(None, None)?,
    };
    install_workload(&root)?;
    let workload = format!("seed:{}", a.rounds);
    let pb = progress(2 * u64::from(a.runs), a.quiet);
    let mut rows = Vec::new();
    for i in 0..a.runs {
        for aslr in ["0", "1"] {
            let seed = a.seed + u64::from(i);
            pb.set_message(format!("{} aslr={aslr} seed {seed}", a.key));
            let tc_size_bytes = morph_dbt::DEFAULT_TC_SIZE as u64;
            let cell = Cell { key: &a.key, aslr, threshold: a.threshold, tc_size_bytes, workload: &workload, seed };
            rows.push(run_one(&root, &a.kernel, &cell, None)?);
            pb.inc(1);
        }
    }
    pb.finish_and_clear();
    let source = serde_json::json!({
        "rounds": a.rounds, "runs": a.runs, "threshold": a.threshold, "first_seed": a.seed, "kernel_profile": a.kernel,
        "root": root.display().to_string(), "sysroot": crate::meta::sysroot(&root),
    });
    Ok((rows, source))
}

/// `morph exp fit`.
pub fn fit(a: FitArgs) -> anyhow::Result<()> {
    if let Some(j) = &a.json {
        crate::meta::check_writable("--json", j)?;
    }
    if !(a.prior_weight.is_finite() && a.prior_weight > 0.0) {
        bail!("--prior-weight {}: must be positive", a.prior_weight);
    }
    let (rows, source) = runs(&a)?;
    let (Some(off), Some(on)) = (seed::median_run(&rows, &a.key, "0"), seed::median_run(&rows, &a.key, "1")) else {
        bail!("no runs of key {} with ASLR off (0) and on (1) to fit", a.key);
    };
    let model = morph_model::CostModel::tm5600();
    let f = morph_model::fit::fit(&model, &off.counts, &on.counts, &REPORT_2005, a.prior_weight);
    print_fit(&f, &a, off, on);
    if let Some(j) = &a.json {
        let mut meta = crate::meta::metadata();
        meta["experiment"] = "fit".into();
        meta["config"] = serde_json::json!({
            "key": a.key, "prior_weight": a.prior_weight, "source": source,
            "off_run_seed": off.seed, "on_run_seed": on.seed, "workload": off.workload,
        });
        let doc = serde_json::json!({
            "metadata": meta, "target_2005": REPORT_2005, "fit": f,
            "counts_off": off.counts, "counts_on": on.counts,
        });
        std::fs::write(j, serde_json::to_string_pretty(&doc)? + "\n")
            .with_context(|| format!("--json {}", j.display()))?;
        println!("fit (JSON): {}", j.display());
    }
    Ok(())
}

fn print_fit(f: &Fit, a: &FitArgs, off: &Row, on: &Row) {
    println!(
        "morph exp fit: the cost model's ASSUMPTION parameters fitted to the 2005 report (a separate result; \
         `morph exp seed` shows the unfitted model)"
    );
    println!(
        "counts: key {}, workload {}, threshold {}, median runs: seed {} (ASLR off), seed {} (ASLR on); prior weight {}",
        a.key, off.workload, off.threshold, off.seed, on.seed, f.prior_weight
    );
    println!("{:<16} {:>12} {:>12} {:>8}  unit", "parameter", "assumed", "fitted", "factor");
    for p in &f.params {
        let note = if p.identified { "" } else { "  (not constrained by these counts: kept)" };
        println!(
            "{:<16} {:>12.4} {:>12.4} {:>8}  {}{note}",
            p.name,
            p.assumed,
            p.fitted,
            format!("x{:.2}", p.factor),
            p.unit
        );
    }
    println!(
        "{:<12} {:>13} {:>15} {:>14} {:>10}",
        "seconds", "2005 report", "assumed model", "fitted model", "residual"
    );
    for r in &f.residuals {
        println!(
            "{:<12} {:>13.3} {:>15.3} {:>14.3} {:>9.1}%",
            r.name,
            r.target_s,
            r.assumed_s,
            r.fitted_s,
            100.0 * r.relative
        );
    }
    let ratio = |get: &dyn Fn(&morph_model::fit::Residual) -> f64| {
        let v: Vec<f64> = f.residuals.iter().map(get).collect();
        (v[1] / v[0], (v[1] + v[3]) / (v[0] + v[2]))
    };
    let (t, a0, a1) = (ratio(&|r| r.target_s), ratio(&|r| r.assumed_s), ratio(&|r| r.fitted_s));
    println!(
        "ASLR on/off: 2005 user x{:.2} user+sys x{:.2} | assumed model user x{:.2} user+sys x{:.2} | fitted model user x{:.2} user+sys x{:.2}",
        t.0, t.1, a0.0, a0.1, a1.0, a1.1
    );
    let alone: Vec<String> = f
        .alone
        .iter()
        .map(|x| match x.factor {
            Some(v) => format!("{} x{v:.2}", x.name),
            None => format!("{} (no value does)", x.name),
        })
        .collect();
    println!("each assumption alone, to give the 2005 user on/off ratio x{:.2}: {}", t.0, alone.join(", "));
    if let Some((counter, bound)) = f.user_ratio_bound {
        println!(
            "bound: modeled user time is a positive sum over counters; the largest on/off ratio of a user-side counter \
             is {counter} x{bound:.2}, so no choice of prices gives a user on/off ratio above x{bound:.2}{}",
            if bound < t.0 {
                " (the 2005 ratio is larger: the gap must come from the counts, not the prices)"
            } else {
                ""
            }
        );
    }
    println!("sourced parameters (clock_hz, syscall, fork, exec, page_cache_fill) are never fitted.");
    println!("verdict: {}", f.verdict);
}
