//! A sweep's plan: its settings, their hash, and every cell (one run) with its index;
//! `morph exp sweep-cell` runs one cell into a result file, `morph exp sweep-merge`
//! gathers the result files into what a local sweep writes.
//!
//! Local sweeps, Slurm job arrays and hand-driven clusters all go through these files,
//! so a cell is computed by the same code (a `morph exp sweep-cell` process) whoever
//! schedules it, and its counts depend only on the plan and the cell's seed.

use std::collections::BTreeMap;
use std::io::Write;

use super::*;

/// The plan file's format tag.
const FORMAT: &str = "morph-sweep-plan/1";

/// Everything that decides a sweep's rows besides the cell itself. Two CSVs (or a CSV
/// and a plan) with equal settings hold comparable rows.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Settings {
    /// Guest root (absolute).
    pub root: PathBuf,
    /// Kernel whose ASLR is modeled.
    pub kernel: String,
    /// Translation-cache keys.
    pub keys: Vec<String>,
    /// `--aslr` values.
    pub aslr: Vec<String>,
    /// Translation thresholds.
    pub thresholds: Vec<u32>,
    /// Translation-cache capacities (`--tc-size` values, as given). Left out of the JSON
    /// (and so of the hash) when it is the default, so that plans and CSVs written before
    /// the option existed still read, with the capacity their runs had.
    #[serde(default = "default_tc_sizes", skip_serializing_if = "is_default_tc_sizes")]
    pub tc_sizes: Vec<String>,
    /// Workloads.
    pub workloads: Vec<String>,
    /// Runs (seeds) per cell group.
    pub runs: u32,
    /// First seed.
    pub seed: u64,
}

/// `--tc-sizes`' default: the default capacity alone.
pub const DEFAULT_TC_SIZES: &str = "64M";

fn default_tc_sizes() -> Vec<String> {
    vec![DEFAULT_TC_SIZES.to_string()]
}

fn is_default_tc_sizes(v: &[String]) -> bool {
    v == [DEFAULT_TC_SIZES]
}

/// A capacity of `--tc-sizes` in bytes, or why `morph run --tc-size` would refuse it.
fn tc_size_bytes(s: &str) -> anyhow::Result<u64> {
    let n = morph_dbt::parse_tc_size(s).map_err(|e| anyhow::anyhow!("--tc-sizes {s}: {e}"))?;
    Ok(n as u64)
}

/// A capacity for a table or a label: `256K`, `14M`, or bytes when not a whole KiB.
pub fn fmt_size(bytes: u64) -> String {
    match bytes {
        0 => "0".into(),
        b if b % (1 << 30) == 0 => format!("{}G", b >> 30),
        b if b % (1 << 20) == 0 => format!("{}M", b >> 20),
        b if b % (1 << 10) == 0 => format!("{}K", b >> 10),
        b => b.to_string(),
    }
}

impl Settings {
    /// The settings' hash: FNV-1a over their JSON, as 16 hex digits.
    pub fn hash(&self) -> String {
        let text = serde_json::to_string(self).unwrap_or_default();
        let h = format!("{FORMAT}\n{text}")
            .bytes()
            .fold(0xcbf29ce484222325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100000001b3));
        format!("{h:016x}")
    }

    /// Refuses values `morph run` would refuse, before any cell runs.
    fn check(&self) -> anyhow::Result<()> {
        let kernel = match self.kernel.as_str() {
            "2.6.12" => morph_os::layout::Kernel::Linux2612,
            "modern" => morph_os::layout::Kernel::Modern,
            k => bail!("unknown kernel {k} (2.6.12 or modern)"),
        };
        for k in &self.keys {
            super::parse_key(k)?;
        }
        for a in &self.aslr {
            morph_os::layout::Aslr::parse(a, kernel).map_err(|e| anyhow::anyhow!("--aslr {a}: {e}"))?;
        }
        let mut seen = BTreeMap::new();
        for t in &self.tc_sizes {
            if let Some(other) = seen.insert(tc_size_bytes(t)?, t) {
                bail!("--tc-sizes {other} and {t} are the same capacity");
            }
        }
        Ok(())
    }

    /// The settings that differ from `other`'s, each as "name: ours vs theirs".
    pub fn differences(&self, other: &Settings) -> Vec<String> {
        let a = serde_json::to_value(self).unwrap_or_default();
        let b = serde_json::to_value(other).unwrap_or_default();
        let (Some(a), Some(b)) = (a.as_object(), b.as_object()) else { return vec!["(unreadable)".into()] };
        a.iter()
            .filter(|(k, v)| b.get(*k) != Some(*v))
            .map(|(k, v)| format!("{k}: {v} vs {}", b.get(k).cloned().unwrap_or_default()))
            .collect()
    }
}

/// One cell: one run of one configuration with one seed.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct PlanCell {
    /// Position in the plan (the Slurm array task id).
    pub index: usize,
    /// Translation-cache key.
    pub key: String,
    /// The `--aslr` value.
    pub aslr: String,
    /// Translation threshold.
    pub threshold: u32,
    /// Translation-cache capacity in bytes (`--tc-size`); plans written before the option
    /// had the default.
    #[serde(default = "default_tc_size_bytes")]
    pub tc_size_bytes: u64,
    /// Workload.
    pub workload: String,
    /// Seed.
    pub seed: u64,
}

fn default_tc_size_bytes() -> u64 {
    morph_dbt::DEFAULT_TC_SIZE as u64
}

impl PlanCell {
    /// The identity a row of this cell has (`Row::id`).
    pub fn id(&self) -> String {
        cell_id(&self.key, &self.aslr, self.threshold, self.tc_size_bytes, &self.workload, self.seed)
    }
}

/// A sweep's plan file.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Plan {
    /// `morph-sweep-plan/1`.
    pub format: String,
    /// The sweep's settings.
    pub settings: Settings,
    /// `Settings::hash` of them.
    pub settings_hash: String,
    /// Every cell, in the order a sweep reports them.
    pub cells: Vec<PlanCell>,
}

impl Plan {
    /// The plan of `settings`: workload × key × ASLR × threshold × capacity × seed, in
    /// that nesting.
    pub fn new(settings: Settings) -> anyhow::Result<Plan> {
        let s = &settings;
        s.check()?;
        let mut cells = Vec::new();
        for w in &s.workloads {
            rounds_of(w)?;
            for k in &s.keys {
                for aslr in &s.aslr {
                    for &threshold in &s.thresholds {
                        for tc in &s.tc_sizes {
                            let tc_size_bytes = tc_size_bytes(tc)?;
                            for i in 0..s.runs {
                                cells.push(PlanCell {
                                    index: cells.len(),
                                    key: k.clone(),
                                    aslr: aslr.clone(),
                                    threshold,
                                    tc_size_bytes,
                                    workload: w.clone(),
                                    seed: s.seed + u64::from(i),
                                });
                            }
                        }
                    }
                }
            }
        }
        if cells.is_empty() {
            bail!(
                "the sweep has no cells (an empty --keys, --aslr, --thresholds, --tc-sizes or --workloads, or --runs 0)"
            );
        }
        Ok(Plan { format: FORMAT.into(), settings_hash: settings.hash(), settings, cells })
    }

    /// Reads a plan file and checks it is whole: its hash and cells follow from its settings.
    pub fn read(path: &Path) -> anyhow::Result<Plan> {
        let text = std::fs::read_to_string(path).with_context(|| format!("cannot read the plan {}", path.display()))?;
        let plan: Plan =
            serde_json::from_str(&text).with_context(|| format!("{} is not a sweep plan", path.display()))?;
        if plan.format != FORMAT {
            bail!("{}: plan format {:?}, this morph reads {FORMAT:?}", path.display(), plan.format);
        }
        let fresh = Plan::new(plan.settings.clone())?;
        if fresh.settings_hash != plan.settings_hash || fresh.cells != plan.cells {
            bail!("{}: the cells or hash do not follow from its settings (edited by hand?)", path.display());
        }
        Ok(plan)
    }

    /// Writes the plan (atomically).
    pub fn write(&self, path: &Path) -> anyhow::Result<()> {
        write_atomic(path, (serde_json::to_string_pretty(self)? + "\n").as_bytes())
    }
}

/// Writes `bytes` to `path` through a temporary file in the same directory and a rename,
/// so a reader sees the old file or the whole new one.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(".morph-")
        .tempfile_in(dir)
        .with_context(|| format!("cannot write in {}", dir.display()))?;
    tmp.write_all(bytes)?;
    // An output file, readable as one written by `File::create` under the usual umask.
    tmp.as_file().set_permissions(std::os::unix::fs::PermissionsExt::from_mode(0o644))?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

/// A cell's result file: `cell-NNNNNN.json` in the results directory.
#[derive(Serialize, Deserialize)]
struct CellResult {
    settings_hash: String,
    index: usize,
    row: Row,
}

/// The result file of cell `index` in `dir`.
pub fn result_path(dir: &Path, index: usize) -> PathBuf {
    dir.join(format!("cell-{index:06}.json"))
}

/// Reads cell `cell`'s result from `dir`: `None` when it is not there yet, an error when
/// it belongs to another plan or cell.
pub fn read_result(dir: &Path, plan: &Plan, cell: &PlanCell) -> anyhow::Result<Option<Row>> {
    let path = result_path(dir, cell.index);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    let r: CellResult =
        serde_json::from_str(&text).with_context(|| format!("{} is not a cell result", path.display()))?;
    if r.settings_hash != plan.settings_hash {
        bail!(
            "{} was written for another plan (settings hash {}, this plan's {})",
            path.display(),
            r.settings_hash,
            plan.settings_hash
        );
    }
    if r.index != cell.index || r.row.id() != cell.id() {
        bail!(
            "{} holds cell {} ({}), expected cell {} ({})",
            path.display(),
            r.index,
            r.row.id(),
            cell.index,
            cell.id()
        );
    }
    Ok(Some(r.row))
}

/// `morph exp sweep-cell`.
#[derive(clap::Args)]
pub struct SweepCellArgs {
    /// The plan (from `morph exp sweep --plan-out`).
    #[arg(long, value_name = "FILE")]
    plan: PathBuf,
    /// The cell to run (0-based; a Slurm array task passes $SLURM_ARRAY_TASK_ID).
    #[arg(long)]
    index: usize,
    /// Directory for the result file (`cell-NNNNNN.json`, written atomically).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
}

/// `morph exp sweep-cell`: runs one cell of a plan and writes its result file.
pub fn sweep_cell(a: SweepCellArgs) -> anyhow::Result<()> {
    let plan = Plan::read(&a.plan)?;
    let Some(cell) = plan.cells.get(a.index) else {
        bail!(
            "{}: no cell {} (the plan has {} cells, 0..{})",
            a.plan.display(),
            a.index,
            plan.cells.len(),
            plan.cells.len()
        )
    };
    std::fs::create_dir_all(&a.out).with_context(|| format!("cannot create {}", a.out.display()))?;
    let s = &plan.settings;
    install_workload(&s.root)?;
    let c = Cell {
        key: &cell.key,
        aslr: &cell.aslr,
        threshold: cell.threshold,
        tc_size_bytes: cell.tc_size_bytes,
        workload: &cell.workload,
        seed: cell.seed,
    };
    let row = run_one(&s.root, &s.kernel, &c, None)?;
    let result = CellResult { settings_hash: plan.settings_hash.clone(), index: cell.index, row };
    let path = result_path(&a.out, cell.index);
    write_atomic(&path, (serde_json::to_string(&result)? + "\n").as_bytes())?;
    println!("cell {} ({}) -> {}", cell.index, cell.id(), path.display());
    Ok(())
}

/// Every cell's row in plan order: from `have` (rows already known by id) or the result
/// files in `dir`; an error naming the cells that have neither.
pub fn collect(plan: &Plan, dir: &Path, have: &BTreeMap<String, Row>) -> anyhow::Result<Vec<Row>> {
    let mut rows = Vec::with_capacity(plan.cells.len());
    let mut missing = Vec::new();
    for cell in &plan.cells {
        match have.get(&cell.id()) {
            Some(r) => rows.push(r.clone()),
            None => match read_result(dir, plan, cell)? {
                Some(r) => rows.push(r),
                None => missing.push(cell.index),
            },
        }
    }
    if !missing.is_empty() {
        bail!(
            "{} of {} cells have no result in {} (cells {})",
            missing.len(),
            plan.cells.len(),
            dir.display(),
            index_ranges(&missing)
        );
    }
    Ok(rows)
}

/// Sorted indices as ranges: `0-3,7,9-12` (the form of `sbatch --array`).
pub fn index_ranges(v: &[usize]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < v.len() {
        let mut j = i;
        while j + 1 < v.len() && v[j + 1] == v[j] + 1 {
            j += 1;
        }
        out.push(if i == j { v[i].to_string() } else { format!("{}-{}", v[i], v[j]) });
        i = j + 1;
    }
    out.join(",")
}
