//! `morph exp sweep`: the cartesian sweep, run locally (cells in parallel, `--jobs`) or
//! as one Slurm job array, resumable, with its table and plot.
//!
//! Every cell runs as a `morph exp sweep-cell` child of a plan (`plan.rs`), locally or
//! on the cluster, so the rows are the same whoever runs them; the CSV holds them in plan
//! order, and `<csv>.settings.json` beside it the settings `--resume` checks.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;

use super::plan::{Plan, Settings, read_result, write_atomic};
use super::sweep_plot::{Group, groups};
use super::*;

/// `morph exp sweep`.
#[derive(clap::Args)]
pub struct SweepArgs {
    #[command(flatten)]
    common: Common,
    /// Keys.
    #[arg(long, value_delimiter = ',', default_value = "virtual,physical,process")]
    keys: Vec<String>,
    /// ASLR settings (each a --aslr value; `;`-separated because component lists use commas).
    #[arg(long, value_delimiter = ';', default_value = "none;stack;mmap;exec;brk;stack,mmap;1")]
    aslr: Vec<String>,
    /// Translation thresholds.
    #[arg(long, value_delimiter = ',', default_value = "50")]
    thresholds: Vec<u32>,
    /// Translation-cache capacities (each a --tc-size value: bytes with K, M or G, or
    /// `crusoe`).
    #[arg(long, value_name = "LIST", value_delimiter = ',', default_value = super::plan::DEFAULT_TC_SIZES)]
    tc_sizes: Vec<String>,
    /// Workloads: seed (the full script) or seed:N (N rounds).
    #[arg(long, value_delimiter = ',', default_value = "seed:20")]
    workloads: Vec<String>,
    /// Keep the rows already in --csv and run only the missing ones (the CSV must have been
    /// written with the same settings, recorded in <csv>.settings.json).
    #[arg(long)]
    resume: bool,
    /// Cells run at once on this machine (default: the number of CPUs).
    #[arg(long, value_name = "N")]
    jobs: Option<usize>,
    /// Write the plan (every cell with its index, the settings and their hash) to FILE and
    /// run nothing; run cells with `morph exp sweep-cell`, gather with `sweep-merge`.
    #[arg(long, value_name = "FILE")]
    plan_out: Option<PathBuf>,
    /// Write the plot as PNG too.
    #[arg(long, value_name = "FILE")]
    png: Option<PathBuf>,
    #[command(flatten)]
    slurm: super::slurm::SlurmArgs,
}

/// Where a sweep's results go.
#[derive(clap::Args, Clone, Default)]
pub struct Outputs {
    /// Write every run as a CSV row, in plan order (the settings to <FILE>.settings.json, the metadata to <FILE>.meta.json).
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Write every run as JSON ({metadata, runs}, the runs in plan order).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write the plot as SVG.
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// Write the plot as PNG.
    #[arg(long, value_name = "FILE")]
    pub png: Option<PathBuf>,
}

/// The sidecar of a sweep CSV: the settings its rows were made with.
#[derive(Serialize, Deserialize)]
struct Sidecar {
    settings_hash: String,
    settings: Settings,
}

/// `<csv>.settings.json`.
fn sidecar_path(csv: &Path) -> PathBuf {
    let mut s = csv.as_os_str().to_owned();
    s.push(".settings.json");
    PathBuf::from(s)
}

/// `morph exp sweep`.
pub fn sweep(a: SweepArgs) -> anyhow::Result<()> {
    let c = &a.common;
    let root = match &c.root {
        Some(r) => r.canonicalize().with_context(|| format!("--root {}", r.display()))?,
        None => crate::sysroot_path(None, None)?,
    };
    let settings = Settings {
        root,
        kernel: c.kernel.clone(),
        keys: a.keys.clone(),
        aslr: a.aslr.clone(),
        thresholds: a.thresholds.clone(),
        tc_sizes: a.tc_sizes.clone(),
        workloads: a.workloads.clone(),
        runs: c.runs,
        seed: c.seed,
    };
    let plan = Plan::new(settings)?;
    // Every output path is checked before the first cell runs.
    let mut extra: Vec<(&str, &Path)> = Vec::new();
    if let Some(p) = &a.png {
        extra.push(("--png", p));
    }
    if let Some(p) = &a.plan_out {
        extra.push(("--plan-out", p));
    }
    super::output::check_outputs(c, &extra)?;
    if let Some(p) = &a.plan_out {
        plan.write(p)?;
        println!(
            "{}: {} cells (0..{}), settings hash {}; run each with `morph exp sweep-cell --plan {} --index N --out DIR`, then `morph exp sweep-merge --plan {} --dir DIR --csv FILE`",
            p.display(),
            plan.cells.len(),
            plan.cells.len(),
            plan.settings_hash,
            p.display(),
            p.display()
        );
        return Ok(());
    }
    let out = Outputs { csv: c.csv.clone(), json: c.json.clone(), svg: c.svg.clone(), png: a.png.clone() };
    let have = if a.resume { resumed_rows(&plan, out.csv.as_deref())? } else { BTreeMap::new() };
    install_workload(&plan.settings.root)?;
    let rows = if a.slurm.slurm {
        super::slurm::run(&plan, &a.slurm, &have, c.quiet)?
    } else {
        let jobs = a.jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())).max(1);
        let mut sink = RowSink::open(&plan, out.csv.as_deref(), !have.is_empty())?;
        run_local(&plan, &have, jobs, c.quiet, &mut |r| sink.push(r))?
    };
    finish(&plan, &rows, &out)
}

/// The rows of the CSV being resumed, by id, after checking its settings are the plan's.
fn resumed_rows(plan: &Plan, csv: Option<&Path>) -> anyhow::Result<BTreeMap<String, Row>> {
    let Some(csv) = csv else { bail!("--resume needs --csv FILE (the sweep to resume)") };
    if !csv.exists() {
        return Ok(BTreeMap::new());
    }
    let side = sidecar_path(csv);
    let text = std::fs::read_to_string(&side).with_context(|| {
        format!(
            "--resume: {} has no settings file {} (written by an older morph?), so its settings cannot be checked; run without --resume to start over",
            csv.display(),
            side.display()
        )
    })?;
    let s: Sidecar =
        serde_json::from_str(&text).with_context(|| format!("{} is not a sweep settings file", side.display()))?;
    if s.settings != plan.settings || s.settings_hash != plan.settings_hash {
        bail!(
            "--resume: {} was written with other settings (settings hash {}, now {}): {}; run with the same settings, or without --resume to start over",
            csv.display(),
            s.settings_hash,
            plan.settings_hash,
            plan.settings.differences(&s.settings).join("; ").replace(" vs ", " now, in the file ")
        );
    }
    let wanted: BTreeSet<String> = plan.cells.iter().map(|c| c.id()).collect();
    let mut rows = BTreeMap::new();
    for row in csv::Reader::from_path(csv)?.deserialize() {
        let row: Row = row.with_context(|| format!("--resume: cannot read {}", csv.display()))?;
        if wanted.contains(&row.id()) {
            rows.entry(row.id()).or_insert(row);
        }
    }
    Ok(rows)
}

/// The CSV a local sweep appends its rows to as they complete (so an interruption loses
/// only the cells running), with its settings file.
struct RowSink {
    w: Option<csv::Writer<std::fs::File>>,
}

impl RowSink {
    fn open(plan: &Plan, csv: Option<&Path>, append: bool) -> anyhow::Result<RowSink> {
        let Some(path) = csv else { return Ok(RowSink { w: None }) };
        let fresh = !append || !path.exists();
        if fresh {
            write_sidecar(plan, path)?;
        }
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(!fresh)
            .write(true)
            .truncate(fresh)
            .open(path)
            .with_context(|| format!("cannot write {}", path.display()))?;
        Ok(RowSink { w: Some(csv::WriterBuilder::new().has_headers(fresh).from_writer(file)) })
    }

    fn push(&mut self, r: &Row) -> anyhow::Result<()> {
        if let Some(w) = &mut self.w {
            w.serialize(r)?;
            w.flush()?;
        }
        Ok(())
    }
}

fn write_sidecar(plan: &Plan, csv: &Path) -> anyhow::Result<()> {
    let s = Sidecar { settings_hash: plan.settings_hash.clone(), settings: plan.settings.clone() };
    write_atomic(&sidecar_path(csv), (serde_json::to_string_pretty(&s)? + "\n").as_bytes())
}

/// Runs the cells not in `have` as `morph exp sweep-cell` children, `jobs` at a time,
/// calling `done` with each row as it completes; returns every row in plan order.
fn run_local(
    plan: &Plan,
    have: &BTreeMap<String, Row>,
    jobs: usize,
    quiet: bool,
    done: &mut dyn FnMut(&Row) -> anyhow::Result<()>,
) -> anyhow::Result<Vec<Row>> {
    let tmp = tempfile::Builder::new().prefix("morph-sweep-").tempdir()?;
    let plan_path = tmp.path().join("plan.json");
    let cells_dir = tmp.path().join("cells");
    plan.write(&plan_path)?;
    std::fs::create_dir_all(&cells_dir)?;
    let todo: Vec<usize> = plan.cells.iter().filter(|c| !have.contains_key(&c.id())).map(|c| c.index).collect();
    let pb = progress(todo.len() as u64, quiet);
    let exe = std::env::current_exe()?;
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let (tx, rx) = mpsc::channel::<(usize, anyhow::Result<Row>)>();
    let mut first_err: Option<anyhow::Error> = None;
    std::thread::scope(|s| {
        for _ in 0..jobs.min(todo.len()) {
            let tx = tx.clone();
            let (todo, next, stop, exe) = (&todo, &next, &stop, &exe);
            let (plan_path, cells_dir) = (&plan_path, &cells_dir);
            s.spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let Some(&i) = todo.get(next.fetch_add(1, Ordering::Relaxed)) else { break };
                    let r = run_cell_child(exe, plan_path, cells_dir, plan, i);
                    if tx.send((i, r)).is_err() {
                        break;
                    }
                }
            });
        }
        drop(tx);
        for (i, r) in rx {
            let r = r.and_then(|row| done(&row).map(|()| row));
            match r {
                Ok(row) => {
                    pb.set_message(row.id());
                    pb.inc(1);
                }
                Err(e) => {
                    stop.store(true, Ordering::Relaxed);
                    if first_err.is_none() {
                        first_err = Some(e.context(format!("cell {i} ({})", plan.cells[i].id())));
                    }
                }
            }
        }
    });
    pb.finish_and_clear();
    if let Some(e) = first_err {
        return Err(e);
    }
    super::plan::collect(plan, &cells_dir, have)
}

/// Runs cell `i` as a `morph exp sweep-cell` child and reads its result.
fn run_cell_child(exe: &Path, plan_path: &Path, dir: &Path, plan: &Plan, i: usize) -> anyhow::Result<Row> {
    let out = Command::new(exe)
        .args(["exp", "sweep-cell", "--index", &i.to_string()])
        .arg("--plan")
        .arg(plan_path)
        .arg("--out")
        .arg(dir)
        .stdin(Stdio::null())
        .output()
        .context("cannot start morph exp sweep-cell")?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let err = err.trim_end();
        bail!("morph exp sweep-cell failed ({}): {}", out.status, err.strip_prefix("morph: ").unwrap_or(err));
    }
    read_result(dir, plan, &plan.cells[i])?.context("morph exp sweep-cell wrote no result")
}

/// `morph exp sweep-merge`.
#[derive(clap::Args)]
pub struct SweepMergeArgs {
    /// The plan the cells were run from.
    #[arg(long, value_name = "FILE")]
    plan: PathBuf,
    /// Directory of the cells' result files (`--out` of `sweep-cell`).
    #[arg(long, value_name = "DIR")]
    dir: PathBuf,
    #[command(flatten)]
    out: Outputs,
}

/// `morph exp sweep-merge`: the cells' results as a local sweep reports them.
pub fn sweep_merge(a: SweepMergeArgs) -> anyhow::Result<()> {
    let plan = Plan::read(&a.plan)?;
    let rows = super::plan::collect(&plan, &a.dir, &BTreeMap::new())?;
    finish(&plan, &rows, &a.out)
}

/// Writes a sweep's outputs (`rows` in plan order) and prints its table.
pub fn finish(plan: &Plan, rows: &[Row], out: &Outputs) -> anyhow::Result<()> {
    if let Some(p) = &out.csv {
        let mut w = csv::Writer::from_writer(Vec::new());
        for r in rows {
            w.serialize(r)?;
        }
        write_atomic(p, &w.into_inner().map_err(|e| anyhow::anyhow!("{e}"))?)?;
        write_sidecar(plan, p)?;
    }
    // The same conventions as `exp seed`: a JSON document {metadata, runs} and the
    // metadata beside a CSV in `<csv>.meta.json`.
    let metadata = super::output::metadata("sweep", serde_json::to_value(&plan.settings)?, &plan.settings.root);
    if let Some(p) = &out.csv {
        let side = super::output::sidecar(p);
        write_atomic(&side, (serde_json::to_string_pretty(&metadata)? + "\n").as_bytes())?;
    }
    if let Some(j) = &out.json {
        let runs: Vec<super::output::RunJson> = rows.iter().map(super::output::RunJson::new).collect();
        let doc = serde_json::json!({"metadata": metadata, "runs": runs});
        std::fs::write(j, serde_json::to_string_pretty(&doc)? + "\n")
            .with_context(|| format!("cannot write {}", j.display()))?;
    }
    let gs = groups(rows);
    if let Some(p) = &out.svg {
        super::sweep_plot::plot(&gs, p, super::plot::Format::Svg)?;
    }
    if let Some(p) = &out.png {
        super::sweep_plot::plot(&gs, p, super::plot::Format::Png)?;
    }
    print_table(&gs);
    Ok(())
}

/// The table on stdout: one line per configuration, medians over its runs.
fn print_table(gs: &[Group]) {
    println!(
        "{:<9} {:<12} {:>9} {:>7} {:<9} {:>4} {:>12} {:>14} {:>7} {:>14} {:>11}",
        "key",
        "aslr",
        "threshold",
        "tc size",
        "workload",
        "runs",
        "translations",
        "retranslations",
        "flushes",
        "TM5600 time/s",
        "real time/s"
    );
    for g in gs {
        let rows: Vec<Row> = g.rows.iter().map(|r| (*r).clone()).collect();
        let m = summarize(&rows);
        let flushes = median(&mut rows.iter().map(|r| r.flushes as f64).collect::<Vec<_>>()) as u64;
        println!(
            "{:<9} {:<12} {:>9} {:>7} {:<9} {:>4} {:>12} {:>14} {:>7} {:>14.3} {:>11.3}",
            g.key,
            g.aslr,
            g.threshold,
            super::plan::fmt_size(g.tc_size_bytes),
            g.workload,
            rows.len(),
            m.translations,
            m.retranslations,
            flushes,
            m.modeled_s,
            m.real_s
        );
    }
    println!(
        "(medians over the runs; translations and retranslations are blocks; flushes are whole-cache flushes of a full translation cache (--tc-size); TM5600 time is modeled, real time measured on this host)"
    );
    let _ = std::io::stdout().flush();
}
