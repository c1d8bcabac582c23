//! `morph exp`: the experiments of the 2005 `randomize_va_space` report, reproduced.
//!
//! `morph exp seed` runs the seed workload (`guests/seed/`: a bash script that opens a
//! TCP socket to a local echo server and runs two small dynamic glibc programs about
//! 50 times each) natively and under morph for ASLR off and on × every `--key`, several
//! runs per cell with different seeds, and prints a table shaped like the report's:
//! real, user and sys seconds measured on the host, beside the modeled TM5600 seconds
//! and the counts that explain them. `morph exp sweep` is the cartesian version, one
//! row per run, resumable.
//!
//! Every morph run is a child `morph run --stats-json` process, so a run is exactly
//! what a user would type, and its counters come from the same JSON.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context, bail};
use indicatif::{ProgressBar, ProgressStyle};
use serde::{Deserialize, Serialize};

/// The experiments.
#[derive(clap::Subcommand)]
pub enum ExpCmd {
    /// The 2005 seed workload: ASLR off/on × key, with native for reference.
    Seed(SeedArgs),
    /// A cartesian sweep over key × ASLR components × threshold × cache capacity × workload × seeds.
    Sweep(Box<SweepArgs>),
    /// Run one cell of a sweep plan (`sweep --plan-out`) into a result file.
    SweepCell(plan::SweepCellArgs),
    /// Merge a plan's cell results into what `sweep` writes.
    SweepMerge(sweep::SweepMergeArgs),
    /// Fit the cost model's assumption parameters to the 2005 report (a separate result;
    /// the `seed` table stays unfitted).
    Fit(fit::FitArgs),
}

/// Options shared by the experiments.
#[derive(clap::Args, Clone)]
pub struct Common {
    /// Runs per cell (each with its own seed: --seed, --seed+1, ...).
    #[arg(long, default_value_t = 5)]
    runs: u32,
    /// First seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Kernel whose ASLR is modeled.
    #[arg(long, default_value = "2.6.12")]
    kernel: String,
    /// Guest root (default: the Debian i386 sysroot, assembled on first use).
    #[arg(long)]
    root: Option<PathBuf>,
    /// Write the results as JSON.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Write the results as CSV.
    #[arg(long, value_name = "FILE")]
    csv: Option<PathBuf>,
    /// Write a plot as SVG.
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}

/// `morph exp seed`.
#[derive(clap::Args)]
pub struct SeedArgs {
    #[command(flatten)]
    common: Common,
    /// Rounds of the workload loop (the report's script ran each program about 50 times).
    #[arg(long, default_value_t = 50)]
    rounds: u32,
    /// Keys to measure: `--key` policies, each optionally `+warm` (a persistent
    /// translation cache primed by an unmeasured run under another seed) and/or
    /// `+credit` (runs in other processes credited with the threshold: `--space-credit`).
    #[arg(long, value_delimiter = ',', default_value = "virtual,physical,process,file,content,file+warm")]
    keys: Vec<String>,
    /// Skip the native reference runs.
    #[arg(long)]
    no_native: bool,
    /// Write the plot as PNG too.
    #[arg(long, value_name = "FILE")]
    png: Option<PathBuf>,
    /// Do not write the default plot (an SVG beside --csv or --json, else ./seed.svg).
    #[arg(long)]
    no_plot: bool,
}

/// One measured run. Written as an [`output::RowRecord`]: units in the column names,
/// empty where a value does not apply (a native run has no key, model or counters).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(into = "output::RowRecord", from = "output::RowRecord")]
pub struct Row {
    /// A native run (no morph): the fields below that describe morph do not apply.
    pub native: bool,
    /// `native` or the key.
    pub key: String,
    /// The `--aslr` value; for a native run `0` (ASLR off by `personality`) or `host`
    /// (the host's `randomize_va_space`).
    pub aslr: String,
    /// The host's `randomize_va_space` when the run was made.
    pub host_aslr: Option<u32>,
    /// The `--kernel` profile (morph runs).
    pub kernel: String,
    /// Translation threshold (morph runs).
    pub threshold: u32,
    /// Translation-cache capacity in bytes (`--tc-size`, morph runs).
    pub tc_size_bytes: u64,
    /// Workload name.
    pub workload: String,
    /// Seed of the run.
    pub seed: u64,
    /// Host wall-clock seconds.
    pub real_s: f64,
    /// Host user CPU seconds of the run's processes (`getrusage(RUSAGE_CHILDREN)`, the
    /// same for native and morph runs).
    pub user_s: f64,
    /// Host system CPU seconds, taken the same way.
    pub sys_s: f64,
    /// morph's own split (morph runs): seconds in the engine (guest code).
    pub morph_engine_s: f64,
    /// morph's own split: seconds in its OS layer.
    pub morph_os_s: f64,
    /// Modeled TM5600 seconds: total, user, sys.
    pub modeled_s: f64,
    /// Modeled user seconds.
    pub modeled_user_s: f64,
    /// Modeled sys seconds.
    pub modeled_sys_s: f64,
    /// Translations made.
    pub translations: u64,
    /// Blocks translated again (same physical code, new key).
    pub retranslations: u64,
    /// Translation caches flushed because they were full (`engine.flushes`).
    pub flushes: u64,
    /// Translation cache lookups.
    pub lookups: u64,
    /// Lookup hits.
    pub hits: u64,
    /// Guest instructions interpreted.
    pub interp_instructions: u64,
    /// Guest instructions executed in translations.
    pub translated_instructions: u64,
    /// Processes created.
    pub processes: u64,
    /// Exit status of the workload.
    pub status: i32,
    /// The run's counts as the cost model reads them.
    pub counts: morph_model::Counts,
}

impl Row {
    fn id(&self) -> String {
        cell_id(&self.key, &self.aslr, self.threshold, self.tc_size_bytes, &self.workload, self.seed)
    }
}

/// The identity of a run: what a sweep's rows and cells are matched by
/// (`virtual|1|50|64M|seed:20|3`).
fn cell_id(key: &str, aslr: &str, threshold: u32, tc_size_bytes: u64, workload: &str, seed: u64) -> String {
    format!("{key}|{aslr}|{threshold}|{}|{workload}|{seed}", plan::fmt_size(tc_size_bytes))
}

const SEED_SOURCES: &[(&str, &str)] = &[
    ("echod.c", include_str!("../../../../guests/seed/echod.c")),
    ("sockreq.c", include_str!("../../../../guests/seed/sockreq.c")),
    ("filecalc.c", include_str!("../../../../guests/seed/filecalc.c")),
    ("seed.sh", include_str!("../../../../guests/seed/seed.sh")),
    ("hello.c", include_str!("../../../../guests/seed/hello.c")),
    ("build.sh", include_str!("../../../../guests/seed/build.sh")),
];

/// Builds the seed workload into `<root>/seed` unless it is there from these sources.
fn install_workload(root: &Path) -> anyhow::Result<()> {
    let dest = root.join("seed");
    let stamp: u64 =
        SEED_SOURCES.iter().flat_map(|(n, s)| n.bytes().chain(s.bytes())).fold(0xcbf29ce484222325, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x100000001b3) // FNV-1a
        });
    let stamp_file = dest.join(".stamp");
    // Concurrent experiments share the root: one builds, the others wait and reuse it.
    std::fs::create_dir_all(&dest)?;
    let lock = std::fs::File::create(dest.join(".lock"))?;
    lock.lock()?;
    if std::fs::read_to_string(&stamp_file).ok().as_deref() == Some(&format!("{stamp:016x}")) {
        return Ok(());
    }
    let src = tempfile::Builder::new().prefix("morph-seed-src-").tempdir()?;
    for (name, text) in SEED_SOURCES {
        std::fs::write(src.path().join(name), text)?;
    }
    let st = Command::new("bash").arg(src.path().join("build.sh")).arg(&dest).status();
    drop(src);
    if !st.context("cannot run bash")?.success() {
        bail!("building the seed workload failed (needs gcc and gcc-multilib)");
    }
    std::fs::write(stamp_file, format!("{stamp:016x}"))?;
    Ok(())
}

/// How to run a program natively inside `root`: chroot in a private mount namespace
/// with the host's /dev and /proc bound in (as a real system has them; the shared
/// sysroot is not touched), in a user namespace too when not root.
pub(crate) fn native_prefix(root: &Path) -> anyhow::Result<Vec<String>> {
    let r = root.display().to_string();
    let script =
        // chroot lives in /usr/sbin, which a user's PATH may lack.
        r#"r=$1; shift; c=$(command -v chroot || echo /usr/sbin/chroot); mount --rbind /dev "$r/dev" && mount --rbind /proc "$r/proc" && exec "$c" "$r" "$@""#;
    let mut tried = Vec::new();
    for userns in [false, true] {
        let mut p: Vec<String> = vec!["unshare".into()];
        if userns {
            p.push("-r".into());
        }
        p.extend(["-m", "--", "/bin/sh", "-c", script, "sh", &r].map(String::from));
        match Command::new(&p[0]).args(&p[1..]).arg("/bin/true").output() {
            Ok(o) if o.status.success() => return Ok(p),
            Ok(o) => tried.push(format!("{}: {}", p[..2].join(" "), String::from_utf8_lossy(&o.stderr).trim())),
            Err(e) => tried.push(format!("unshare: {e}")),
        }
    }
    bail!("cannot run natively in {r} (use --no-native): {}", tried.join("; "))
}

/// Children's user and system CPU seconds so far.
fn children_times() -> (f64, f64) {
    // SAFETY: getrusage into a local struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a valid who value and a pointer to our struct.
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) };
    let s = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (s(ru.ru_utime), s(ru.ru_stime))
}

struct Cell<'a> {
    key: &'a str,
    aslr: &'a str,
    threshold: u32,
    /// Translation-cache capacity in bytes (`--tc-size`).
    tc_size_bytes: u64,
    workload: &'a str,
    seed: u64,
}

fn rounds_of(workload: &str) -> anyhow::Result<u32> {
    match workload.split_once(':') {
        None if workload == "seed" => Ok(50),
        Some(("seed", n)) => n.parse().with_context(|| format!("bad workload {workload}")),
        _ => bail!("unknown workload {workload} (seed or seed:N)"),
    }
}

/// The environment of every run, native and under morph.
const GUEST_ENV: &[(&str, &str)] =
    &[("PATH", "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"), ("HOME", "/"), ("LC_ALL", "C")];

/// The `aslr` of a native cell run with ASLR off; `host` leaves the host's setting.
pub(crate) const NATIVE_ASLR_OFF: &str = "0";
/// The `aslr` of a native cell run with the host's `randomize_va_space`.
pub(crate) const NATIVE_ASLR_HOST: &str = "host";

/// Makes `cmd` (and everything it execs: personality survives `execve`) run with
/// `ADDR_NO_RANDOMIZE`, as `setarch -R` does.
pub(crate) fn no_randomize(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure runs between fork and exec and only makes the personality
    // system call, which is async-signal-safe and touches no memory of the parent.
    unsafe {
        cmd.pre_exec(|| {
            // 0xffffffff queries the current persona without changing it.
            let cur = libc::personality(0xffff_ffff);
            if cur == -1 || libc::personality((cur as libc::c_ulong) | libc::ADDR_NO_RANDOMIZE as libc::c_ulong) == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// A key of an experiment: a `--key` policy, optionally followed by `+warm`: that policy
/// with a persistent translation cache (`--tcache-dir`) primed by one unmeasured run of
/// the same workload under another seed, so the measured run is a warm start; and/or
/// `+credit`: runs in other processes credited with the threshold (`--space-credit`), so
/// that a block is translated at its first run in a second process.
pub(crate) struct ExpKey {
    pub(crate) policy: morph_dbt::KeyPolicy,
    pub(crate) warm: bool,
    pub(crate) credit: bool,
}

/// Parses an experiment's key (see `ExpKey`).
pub(crate) fn parse_key(k: &str) -> anyhow::Result<ExpKey> {
    let mut parts = k.split('+');
    let policy = parts.next().unwrap_or_default();
    let names = morph_dbt::KeyPolicy::ALL.map(|k| k.name()).join(", ");
    let bad = || anyhow::anyhow!("unknown key {k} ({names}, each optionally +warm and/or +credit)");
    let policy = policy.parse::<morph_dbt::KeyPolicy>().map_err(|_| bad())?;
    let (mut warm, mut credit) = (false, false);
    for p in parts {
        match p {
            "warm" if !warm => warm = true,
            "credit" if !credit => credit = true,
            _ => return Err(bad()),
        }
    }
    Ok(ExpKey { policy, warm, credit })
}

/// Seed offset of the unmeasured run that primes a `+warm` cell's cache: another ASLR
/// layout than the measured run's.
const WARM_PRIME_SEED: u64 = 1_000_003;

/// Runs one cell once.
fn run_one(root: &Path, kernel: &str, c: &Cell, native: Option<&[String]>) -> anyhow::Result<Row> {
    let rounds = rounds_of(c.workload)?.to_string();
    let json_file = tempfile::Builder::new().prefix("morph-exp-").suffix(".json").tempfile()?;
    let json = json_file.path();
    // A `+warm` cell's persistent cache, made fresh for each run (removed when dropped).
    let key = match native {
        None => Some(parse_key(c.key)?),
        Some(_) => None,
    };
    let tcache = match &key {
        Some(k) if k.warm => Some(tempfile::Builder::new().prefix("morph-tcache-").tempdir()?),
        _ => None,
    };
    let mut cmd = match native {
        Some(prefix) => {
            let mut cmd = Command::new(&prefix[0]);
            cmd.args(&prefix[1..]).args(["/seed/seed.sh", &rounds]);
            if c.aslr == NATIVE_ASLR_OFF {
                no_randomize(&mut cmd);
            }
            cmd
        }
        None => {
            let ExpKey { policy, warm, credit } = key.context("a morph cell's key")?;
            let morph = |seed: u64| -> anyhow::Result<Command> {
                let mut cmd = Command::new(std::env::current_exe()?);
                cmd.arg("run").arg("--root").arg(root).args(["--engine", "dbt", "--key", policy.name()]);
                cmd.args(["--aslr", c.aslr, "--kernel", kernel, "--threshold", &c.threshold.to_string()]);
                if credit {
                    cmd.args(["--space-credit", &c.threshold.to_string()]);
                }
                cmd.args(["--tc-size", &c.tc_size_bytes.to_string()]);
                cmd.args(["--seed", &seed.to_string(), "--timeout", "600"]);
                if let Some(d) = &tcache {
                    // Every block that ran is kept: the warm run interprets nothing of
                    // what the priming run ran.
                    cmd.arg("--tcache-dir").arg(d.path()).args(["--tcache-cold", "1"]);
                }
                cmd.env_clear().envs(GUEST_ENV.iter().copied());
                Ok(cmd)
            };
            if warm {
                let mut prime = morph(c.seed + WARM_PRIME_SEED)?;
                prime.args(["/seed/seed.sh", &rounds]).stdin(Stdio::null()).stdout(Stdio::null());
                let st = prime.status().context("cannot start the priming run")?;
                if !st.success() {
                    bail!("the run priming the cache of {} aslr={} failed: {st}", c.key, c.aslr);
                }
            }
            let mut cmd = morph(c.seed)?;
            cmd.arg("--stats-json").arg(json).args(["/seed/seed.sh", &rounds]);
            cmd
        }
    };
    // The guest inherits morph's environment: a fixed one makes the counts the same on
    // every machine and from every shell (the user's variables, even `_` naming the
    // morph binary, move the guest's stack and change the counts slightly).
    cmd.env_clear().envs(GUEST_ENV.iter().copied());
    let (u0, s0) = children_times();
    let t0 = Instant::now();
    let out = cmd.stdin(Stdio::null()).output().context("cannot start the run")?;
    let real_s = t0.elapsed().as_secs_f64();
    let (u1, s1) = children_times();
    let status = out.status.code().unwrap_or(-1);
    let tail = String::from_utf8_lossy(&out.stdout);
    if status != 0 || !tail.contains("seed: ") {
        bail!(
            "the workload failed ({} key {} aslr {} seed {}): status {status}\n{}{}",
            if native.is_some() { "native" } else { "morph" },
            c.key,
            c.aslr,
            c.seed,
            tail,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let mut row = Row {
        native: native.is_some(),
        key: c.key.to_string(),
        aslr: c.aslr.to_string(),
        host_aslr: crate::meta::host_randomize_va_space(),
        kernel: kernel.to_string(),
        threshold: c.threshold,
        tc_size_bytes: c.tc_size_bytes,
        workload: c.workload.to_string(),
        seed: c.seed,
        real_s,
        // getrusage counts microseconds: round away the subtraction's float noise.
        user_s: ((u1 - u0) * 1e6).round() / 1e6,
        sys_s: ((s1 - s0) * 1e6).round() / 1e6,
        morph_engine_s: 0.0,
        morph_os_s: 0.0,
        modeled_s: 0.0,
        modeled_user_s: 0.0,
        modeled_sys_s: 0.0,
        translations: 0,
        retranslations: 0,
        flushes: 0,
        lookups: 0,
        hits: 0,
        interp_instructions: 0,
        translated_instructions: 0,
        processes: 0,
        status,
        counts: morph_model::Counts::default(),
    };
    if native.is_none() {
        let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(json)?)?;
        let g = |a: &str, b: &str| v[a][b].as_u64().unwrap_or(0);
        row.morph_engine_s = g("os", "engine_ns") as f64 / 1e9;
        row.morph_os_s = g("os", "os_ns") as f64 / 1e9;
        row.translations = g("engine", "translations");
        row.retranslations = g("engine", "retranslations");
        row.flushes = g("engine", "flushes");
        row.lookups = g("engine", "lookups");
        row.hits = g("engine", "hits");
        row.interp_instructions = g("engine", "interp_instructions");
        row.translated_instructions = g("engine", "translated_instructions");
        row.processes = g("os", "processes");
        row.counts = morph_model::Counts::from_stats_json(&v);
        let m = morph_model::CostModel::tm5600().model(&row.counts);
        row.modeled_s = m.total_s;
        row.modeled_user_s = m.user_s;
        row.modeled_sys_s = m.sys_s;
    }
    Ok(row)
}

fn progress(n: u64, quiet: bool) -> ProgressBar {
    if quiet {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::new(n);
    pb.set_style(
        ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} {msg}")
            .expect("a valid template"),
    );
    pb
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// A cell's summary: medians and min–max spread over its runs (written as an
/// [`output::CellRecord`]).
#[derive(Clone, Debug)]
pub struct Summary {
    /// Native runs (no morph).
    pub native: bool,
    /// `native` or the key.
    pub key: String,
    /// The `--aslr` value.
    pub aslr: String,
    /// Runs.
    pub runs: usize,
    /// Median real seconds.
    pub real_s: f64,
    /// Spread of real seconds (min, max).
    pub real_range: (f64, f64),
    /// Median user seconds.
    pub user_s: f64,
    /// Spread of user seconds.
    pub user_range: (f64, f64),
    /// Median sys seconds.
    pub sys_s: f64,
    /// Spread of sys seconds.
    pub sys_range: (f64, f64),
    /// Median modeled TM5600 seconds.
    pub modeled_s: f64,
    /// Spread of modeled seconds.
    pub modeled_range: (f64, f64),
    /// Median modeled user seconds.
    pub modeled_user_s: f64,
    /// Median modeled sys seconds.
    pub modeled_sys_s: f64,
    /// Median translations.
    pub translations: u64,
    /// Median retranslations.
    pub retranslations: u64,
    /// Median lookups.
    pub lookups: u64,
    /// Median hits.
    pub hits: u64,
    /// Median interpreted instructions.
    pub interp_instructions: u64,
}

fn summarize(rows: &[Row]) -> Summary {
    let f = |get: fn(&Row) -> f64| median(&mut rows.iter().map(get).collect::<Vec<_>>());
    let u = |get: fn(&Row) -> u64| median(&mut rows.iter().map(|r| get(r) as f64).collect::<Vec<_>>()) as u64;
    let range = |get: fn(&Row) -> f64| {
        let v = rows.iter().map(get);
        (v.clone().fold(f64::INFINITY, f64::min), v.fold(f64::NEG_INFINITY, f64::max))
    };
    Summary {
        native: rows[0].native,
        key: rows[0].key.clone(),
        aslr: rows[0].aslr.clone(),
        runs: rows.len(),
        real_s: f(|r| r.real_s),
        real_range: range(|r| r.real_s),
        user_s: f(|r| r.user_s),
        user_range: range(|r| r.user_s),
        sys_s: f(|r| r.sys_s),
        sys_range: range(|r| r.sys_s),
        modeled_s: f(|r| r.modeled_s),
        modeled_range: range(|r| r.modeled_s),
        modeled_user_s: f(|r| r.modeled_user_s),
        modeled_sys_s: f(|r| r.modeled_sys_s),
        translations: u(|r| r.translations),
        retranslations: u(|r| r.retranslations),
        lookups: u(|r| r.lookups),
        hits: u(|r| r.hits),
        interp_instructions: u(|r| r.interp_instructions),
    }
}

mod fit;
mod output;
mod plan;
mod plot;
mod seed;
mod slurm;
mod sweep;
mod sweep_plot;

pub use fit::fit;
pub use plan::sweep_cell;
pub use seed::seed;
pub use sweep::{SweepArgs, sweep, sweep_merge};
