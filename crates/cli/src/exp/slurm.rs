//! `morph exp sweep --slurm`: the sweep's cells as one Slurm job array.
//!
//! The plan, a batch script, the cells' result files and the tasks' logs go to a work
//! directory that every node must see (by default a new `.morph-sweep-*` directory in
//! the current one, removed after a successful merge). `sbatch --wait --array=…%K`
//! submits every missing cell as one array task running `morph exp sweep-cell`; when
//! it returns, the result files are merged as `morph exp sweep-merge` would.

use std::collections::BTreeMap;
use std::time::Duration;

use super::plan::{Plan, index_ranges, read_result};
use super::*;

/// The Slurm options of `morph exp sweep`.
#[derive(clap::Args, Clone)]
pub struct SlurmArgs {
    /// Run the cells as one Slurm job array (`sbatch --array`) and merge when it is done.
    #[arg(long)]
    pub slurm: bool,
    /// At most K array tasks at once (`--array=…%K`).
    #[arg(long, value_name = "K", requires = "slurm")]
    pub slurm_max_parallel: Option<u32>,
    /// Slurm partition (default: the cluster's default partition).
    #[arg(long, value_name = "P", requires = "slurm")]
    pub slurm_partition: Option<String>,
    /// Another sbatch option, e.g. --sbatch-arg=--time=30 (repeatable).
    #[arg(long, value_name = "ARG", allow_hyphen_values = true, requires = "slurm")]
    pub sbatch_arg: Vec<String>,
    /// Directory for the plan, results and logs, visible from every node (kept; cells
    /// with a result there are not submitted again). Default: a new .morph-sweep-*
    /// directory here, removed after a successful merge.
    #[arg(long, value_name = "DIR", requires = "slurm")]
    pub work_dir: Option<PathBuf>,
}

/// Quotes `s` for sh.
fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// Runs the plan's cells not in `have` as one job array; returns every row in plan order.
pub fn run(plan: &Plan, a: &SlurmArgs, have: &BTreeMap<String, Row>, quiet: bool) -> anyhow::Result<Vec<Row>> {
    let (work, tmp) = match &a.work_dir {
        Some(d) => {
            std::fs::create_dir_all(d).with_context(|| format!("cannot create {}", d.display()))?;
            (d.canonicalize()?, None)
        }
        None => {
            let t = tempfile::Builder::new().prefix(".morph-sweep-").tempdir_in(".")?;
            (t.path().canonicalize()?, Some(t))
        }
    };
    let r = submit_and_collect(plan, a, have, quiet, &work);
    match (r, tmp) {
        (Ok(rows), _) => Ok(rows),
        (Err(e), Some(t)) => {
            let _kept = t.keep();
            Err(e.context(format!("the plan, results and logs are kept in {}", work.display())))
        }
        (Err(e), None) => Err(e),
    }
}

fn submit_and_collect(
    plan: &Plan,
    a: &SlurmArgs,
    have: &BTreeMap<String, Row>,
    quiet: bool,
    work: &Path,
) -> anyhow::Result<Vec<Row>> {
    let plan_path = work.join("plan.json");
    if plan_path.exists() {
        let old = Plan::read(&plan_path)?;
        if old.settings_hash != plan.settings_hash {
            bail!(
                "{} holds another sweep's plan ({}); use another --work-dir",
                plan_path.display(),
                plan.settings.differences(&old.settings).join("; ")
            );
        }
    } else {
        plan.write(&plan_path)?;
    }
    let (cells, logs) = (work.join("cells"), work.join("logs"));
    std::fs::create_dir_all(&cells)?;
    std::fs::create_dir_all(&logs)?;
    let mut todo = Vec::new();
    for c in &plan.cells {
        if !have.contains_key(&c.id()) && read_result(&cells, plan, c)?.is_none() {
            todo.push(c.index);
        }
    }
    if !todo.is_empty() {
        let exe = std::env::current_exe()?;
        let script = work.join("cell.sh");
        let text = format!(
            "#!/bin/sh\n# One cell of the sweep {}: Slurm array task $SLURM_ARRAY_TASK_ID.\nexec {} exp sweep-cell --plan {} --out {} --index \"$SLURM_ARRAY_TASK_ID\"\n",
            plan.settings_hash,
            sh_quote(&exe.to_string_lossy()),
            sh_quote(&plan_path.to_string_lossy()),
            sh_quote(&cells.to_string_lossy())
        );
        std::fs::write(&script, text)?;
        let mut array = index_ranges(&todo);
        if let Some(k) = a.slurm_max_parallel {
            array += &format!("%{}", k.max(1));
        }
        let mut cmd = Command::new("sbatch");
        cmd.args(["--wait", "--parsable", "--job-name=morph-sweep", "--ntasks=1", "--cpus-per-task=1"]);
        cmd.arg(format!("--array={array}")).arg(format!("--output={}", logs.join("cell-%a.out").display()));
        cmd.arg(format!("--chdir={}", work.display()));
        if let Some(p) = &a.slurm_partition {
            cmd.arg(format!("--partition={p}"));
        }
        cmd.args(&a.sbatch_arg).arg(&script);
        wait_for_array(cmd, plan, &cells, &todo, quiet)?;
    }
    super::plan::collect(plan, &cells, have).map_err(|e| e.context(format!("task logs in {}", logs.display())))
}

/// Runs `sbatch --wait`, showing the cells' progress by their result files.
fn wait_for_array(mut cmd: Command, plan: &Plan, cells: &Path, todo: &[usize], quiet: bool) -> anyhow::Result<()> {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("cannot run sbatch (is Slurm installed and SLURM_CONF set?)")?;
    let pb = progress(todo.len() as u64, quiet);
    pb.set_message("Slurm job array");
    let status = loop {
        let finished = todo.iter().filter(|&&i| super::plan::result_path(cells, i).exists()).count();
        pb.set_position(finished as u64);
        if let Some(st) = child.try_wait()? {
            break st;
        }
        std::thread::sleep(Duration::from_millis(500));
    };
    pb.finish_and_clear();
    let out = child.wait_with_output()?;
    let job = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if !status.success() {
        let missing: Vec<usize> = todo
            .iter()
            .copied()
            .filter(|&i| !matches!(read_result(cells, plan, &plan.cells[i]), Ok(Some(_))))
            .collect();
        let err = String::from_utf8_lossy(&out.stderr).trim().to_string();
        bail!(
            "sbatch {} ({status}){}{}; {} of {} cells have no result (cells {})",
            if job.is_empty() { "failed".to_string() } else { format!("job {job}") },
            if err.is_empty() { "" } else { ": " },
            err,
            missing.len(),
            todo.len(),
            index_ranges(&missing)
        );
    }
    Ok(())
}
