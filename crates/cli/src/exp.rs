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
    /// A cartesian sweep over key × ASLR components × threshold × workload × seeds.
    Sweep(SweepArgs),
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
    /// Keys to measure.
    #[arg(long, value_delimiter = ',', default_value = "virtual,physical,process")]
    keys: Vec<String>,
    /// Skip the native reference runs.
    #[arg(long)]
    no_native: bool,
}

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
    /// Workloads: seed (the full script) or seed:N (N rounds).
    #[arg(long, value_delimiter = ',', default_value = "seed:20")]
    workloads: Vec<String>,
    /// Rows already in the CSV are kept and not run again (resume after an interruption).
    #[arg(long)]
    resume: bool,
}

/// One measured run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Row {
    /// `native` or the key.
    pub key: String,
    /// The `--aslr` value.
    pub aslr: String,
    /// Translation threshold (0 for native).
    pub threshold: u32,
    /// Workload name.
    pub workload: String,
    /// Seed of the run.
    pub seed: u64,
    /// Host wall-clock seconds.
    pub real_s: f64,
    /// Guest execution, interpretation and translation seconds (host-measured).
    pub user_s: f64,
    /// OS-layer seconds (host-measured).
    pub sys_s: f64,
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
    #[serde(skip)]
    pub counts: morph_model::Counts,
}

impl Row {
    fn id(&self) -> String {
        format!("{}|{}|{}|{}|{}", self.key, self.aslr, self.threshold, self.workload, self.seed)
    }
}

const SEED_SOURCES: &[(&str, &str)] = &[
    ("echod.c", include_str!("../../../guests/seed/echod.c")),
    ("sockreq.c", include_str!("../../../guests/seed/sockreq.c")),
    ("filecalc.c", include_str!("../../../guests/seed/filecalc.c")),
    ("seed.sh", include_str!("../../../guests/seed/seed.sh")),
    ("hello.c", include_str!("../../../guests/seed/hello.c")),
    ("build.sh", include_str!("../../../guests/seed/build.sh")),
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
    let src = std::env::temp_dir().join(format!("morph-seed-src-{}", std::process::id()));
    std::fs::create_dir_all(&src)?;
    for (name, text) in SEED_SOURCES {
        std::fs::write(src.join(name), text)?;
    }
    let st = Command::new("bash").arg(src.join("build.sh")).arg(&dest).status();
    let _ = std::fs::remove_dir_all(&src);
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
        r#"r=$1; shift; mount --rbind /dev "$r/dev" && mount --rbind /proc "$r/proc" && exec chroot "$r" "$@""#;
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

/// Runs one cell once.
fn run_one(root: &Path, kernel: &str, c: &Cell, native: Option<&[String]>) -> anyhow::Result<Row> {
    let rounds = rounds_of(c.workload)?.to_string();
    let json = std::env::temp_dir().join(format!("morph-exp-{}-{}.json", std::process::id(), c.seed));
    let mut cmd = match native {
        Some(prefix) => {
            let mut cmd = Command::new(&prefix[0]);
            cmd.args(&prefix[1..]).args(["/seed/seed.sh", &rounds]);
            cmd
        }
        None => {
            let mut cmd = Command::new(std::env::current_exe()?);
            cmd.arg("run").arg("--root").arg(root).args(["--engine", "dbt", "--key", c.key]);
            cmd.args(["--aslr", c.aslr, "--kernel", kernel, "--threshold", &c.threshold.to_string()]);
            cmd.args(["--seed", &c.seed.to_string(), "--timeout", "600"]).arg("--stats-json").arg(&json);
            cmd.args(["/seed/seed.sh", &rounds]);
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
        key: c.key.to_string(),
        aslr: c.aslr.to_string(),
        threshold: c.threshold,
        workload: c.workload.to_string(),
        seed: c.seed,
        real_s,
        user_s: u1 - u0,
        sys_s: s1 - s0,
        modeled_s: 0.0,
        modeled_user_s: 0.0,
        modeled_sys_s: 0.0,
        translations: 0,
        retranslations: 0,
        lookups: 0,
        hits: 0,
        interp_instructions: 0,
        translated_instructions: 0,
        processes: 0,
        status,
        counts: morph_model::Counts::default(),
    };
    if native.is_none() {
        let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json)?)?;
        let _ = std::fs::remove_file(&json);
        let g = |a: &str, b: &str| v[a][b].as_u64().unwrap_or(0);
        row.user_s = g("os", "engine_ns") as f64 / 1e9;
        row.sys_s = g("os", "os_ns") as f64 / 1e9;
        row.translations = g("engine", "translations");
        row.retranslations = g("engine", "retranslations");
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

/// A cell's summary: medians and min–max spread over its runs.
#[derive(Clone, Debug, Serialize)]
pub struct Summary {
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
    /// Median sys seconds.
    pub sys_s: f64,
    /// Median modeled TM5600 seconds.
    pub modeled_s: f64,
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
    let reals: Vec<f64> = rows.iter().map(|r| r.real_s).collect();
    Summary {
        key: rows[0].key.clone(),
        aslr: rows[0].aslr.clone(),
        runs: rows.len(),
        real_s: f(|r| r.real_s),
        real_range: (reals.iter().copied().fold(f64::INFINITY, f64::min), reals.iter().copied().fold(0.0, f64::max)),
        user_s: f(|r| r.user_s),
        sys_s: f(|r| r.sys_s),
        modeled_s: f(|r| r.modeled_s),
        modeled_user_s: f(|r| r.modeled_user_s),
        modeled_sys_s: f(|r| r.modeled_sys_s),
        translations: u(|r| r.translations),
        retranslations: u(|r| r.retranslations),
        lookups: u(|r| r.lookups),
        hits: u(|r| r.hits),
        interp_instructions: u(|r| r.interp_instructions),
    }
}

/// `morph exp seed`.
pub fn seed(a: SeedArgs) -> anyhow::Result<()> {
    let c = &a.common;
    let root = match &c.root {
        Some(r) => r.canonicalize()?,
        None => crate::sysroot_path(None, None)?,
    };
    install_workload(&root)?;
    let native = if a.no_native { None } else { Some(native_prefix(&root)?) };
    let workload = format!("seed:{}", a.rounds);
    let mut cells: Vec<(String, &str)> = Vec::new();
    if native.is_some() {
        cells.push(("native".into(), "0"));
    }
    for aslr in ["0", "1"] {
        for k in &a.keys {
            cells.push((k.clone(), aslr));
        }
    }
    let pb = progress((cells.len() as u64) * u64::from(c.runs), c.quiet);
    // Round after round, every cell once per round: a slow spell of a shared host
    // then spreads over all cells instead of inflating the ones that ran during it.
    let mut per_cell: Vec<Vec<_>> = cells.iter().map(|_| Vec::new()).collect();
    for i in 0..c.runs {
        for ((key, aslr), cell_rows) in cells.iter().zip(&mut per_cell) {
            pb.set_message(format!("{key} aslr={aslr} run {}", i + 1));
            let cell = Cell {
                key,
                aslr,
                threshold: morph_dbt::DEFAULT_THRESHOLD,
                workload: &workload,
                seed: c.seed + u64::from(i),
            };
            let nat = (key == "native").then_some(native.as_deref()).flatten();
            cell_rows.push(run_one(&root, &c.kernel, &cell, nat)?);
            pb.inc(1);
        }
    }
    let summaries: Vec<_> = per_cell.iter().map(|r| summarize(r)).collect();
    let rows: Vec<_> = per_cell.into_iter().flatten().collect();
    pb.finish_and_clear();
    print_seed_table(&summaries, &a);
    print_sensitivity(&rows, &a.keys);
    write_outputs(c, &summaries, &rows)?;
    if let Some(svg) = &c.svg {
        std::fs::write(svg, seed_svg(&summaries))?;
    }
    Ok(())
}

fn print_seed_table(s: &[Summary], a: &SeedArgs) {
    println!(
        "morph exp seed: {} rounds, kernel {}, {} run(s) per cell, seeds {}..{}; medians (real min-max)",
        a.rounds,
        a.common.kernel,
        a.common.runs,
        a.common.seed,
        a.common.seed + u64::from(a.common.runs) - 1
    );
    println!(
        "{:<9} {:>4} | {:>7} {:>15} {:>7} {:>7} | {:>8} {:>7} {:>7} | {:>7} {:>7} {:>6} {:>11}",
        "key",
        "aslr",
        "real",
        "(spread)",
        "user",
        "sys",
        "TM5600",
        "user",
        "sys",
        "transl",
        "retrans",
        "hit%",
        "interp-ins"
    );
    for x in s {
        let hit = if x.lookups > 0 { 100.0 * x.hits as f64 / x.lookups as f64 } else { 0.0 };
        // Native runs have no model and no translator: dashes.
        let morph = |v: String| if x.key == "native" { "-".to_string() } else { v };
        println!(
            "{:<9} {:>4} | {:>7.3} {:>15} {:>7.3} {:>7.3} | {:>8} {:>7} {:>7} | {:>7} {:>7} {:>6} {:>11}",
            x.key,
            x.aslr,
            x.real_s,
            format!("({:.3}-{:.3})", x.real_range.0, x.real_range.1),
            x.user_s,
            x.sys_s,
            morph(format!("{:.3}", x.modeled_s)),
            morph(format!("{:.3}", x.modeled_user_s)),
            morph(format!("{:.3}", x.modeled_sys_s)),
            morph(x.translations.to_string()),
            morph(x.retranslations.to_string()),
            morph(format!("{hit:.1}")),
            morph(x.interp_instructions.to_string()),
        );
    }
    println!("on/off ratios (aslr 1 / aslr 0):");
    for k in &a.keys {
        let off = s.iter().find(|x| &x.key == k && x.aslr == "0");
        let on = s.iter().find(|x| &x.key == k && x.aslr == "1");
        if let (Some(off), Some(on)) = (off, on) {
            println!(
                "  {k:<9} real x{:.2}  user x{:.2}  modeled TM5600 x{:.2}  retranslations {} -> {}",
                on.real_s / off.real_s,
                on.user_s / off.user_s,
                on.modeled_s / off.modeled_s,
                off.retranslations,
                on.retranslations
            );
        }
    }
    println!(
        "2005 report (TM5600 533 MHz, Linux 2.6.12.2): off real 0.671 user 0.293 sys 0.325; on real 3.310 user 2.712 sys 0.401; x4.93"
    );
}

/// The run whose modeled time is the median of its cell.
fn median_run<'a>(rows: &'a [Row], key: &str, aslr: &str) -> Option<&'a Row> {
    let mut v: Vec<&Row> = rows.iter().filter(|r| r.key == key && r.aslr == aslr).collect();
    v.sort_by(|a, b| a.modeled_s.total_cmp(&b.modeled_s));
    v.get(v.len() / 2).copied()
}

/// How robust the modeled on/off ratio is: each model parameter halved and doubled.
fn print_sensitivity(rows: &[Row], keys: &[String]) {
    let model = morph_model::CostModel::tm5600();
    for k in keys {
        let (Some(off), Some(on)) = (median_run(rows, k, "0"), median_run(rows, k, "1")) else { continue };
        let sens = morph_model::sensitivity(&model, &off.counts, &on.counts);
        let ratios: Vec<f64> = sens.iter().map(|r| r.ratio).filter(|r| r.is_finite()).collect();
        let lo = ratios.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = ratios.iter().copied().fold(0.0, f64::max);
        let base = morph_model::compare(&model, &off.counts, &on.counts);
        let most = sens
            .iter()
            .filter(|r| r.ratio.is_finite())
            .max_by(|a, b| (a.ratio - base.ratio).abs().total_cmp(&(b.ratio - base.ratio).abs()));
        print!(
            "sensitivity, key {k}: modeled on/off x{:.2}; with any one parameter halved or doubled x{lo:.2}..x{hi:.2}",
            base.ratio
        );
        match most {
            Some(m) => println!(" (most sensitive: {} x{} gives x{:.2})", m.param, m.factor, m.ratio),
            None => println!(),
        }
    }
}

fn write_outputs<T: Serialize>(c: &Common, cells: &[T], rows: &[Row]) -> anyhow::Result<()> {
    if let Some(j) = &c.json {
        // An array of cells (medians over their runs); the runs themselves go to --csv.
        std::fs::write(j, serde_json::to_string_pretty(cells)? + "\n")?;
    }
    if let Some(p) = &c.csv {
        let mut w = csv::Writer::from_path(p)?;
        for r in rows {
            w.serialize(r)?;
        }
        w.flush()?;
    }
    Ok(())
}

/// A grouped bar chart: modeled TM5600 seconds and measured seconds per key, ASLR off
/// beside on, with the 2005 figures as reference lines.
fn seed_svg(s: &[Summary]) -> String {
    let keys: Vec<&str> =
        s.iter().filter(|x| x.key != "native").map(|x| x.key.as_str()).collect::<BTreeSet<_>>().into_iter().collect();
    let val = |k: &str, aslr: &str| s.iter().find(|x| x.key == k && x.aslr == aslr).map_or(0.0, |x| x.modeled_s);
    let max = keys.iter().flat_map(|k| [val(k, "0"), val(k, "1")]).fold(3.5f64, f64::max) * 1.1;
    let (w, h, left, bottom, top) = (720.0, 360.0, 60.0, 300.0, 40.0);
    let y = |v: f64| bottom - (v / max) * (bottom - top);
    let mut o = String::new();
    o += &format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" font-family=\"sans-serif\" font-size=\"12\">\n"
    );
    o += "<text x=\"360\" y=\"20\" text-anchor=\"middle\" font-size=\"14\">Seed workload, modeled TM5600 seconds: ASLR off vs on, by translation-cache key</text>\n";
    o += &format!("<line x1=\"{left}\" y1=\"{bottom}\" x2=\"{}\" y2=\"{bottom}\" stroke=\"black\"/>\n", w - 20.0);
    o += &format!("<line x1=\"{left}\" y1=\"{top}\" x2=\"{left}\" y2=\"{bottom}\" stroke=\"black\"/>\n");
    o += &format!(
        "<text transform=\"rotate(-90)\" x=\"{}\" y=\"16\" text-anchor=\"middle\">modeled TM5600 seconds</text>\n",
        -(top + bottom) / 2.0
    );
    let mut t = 0.0;
    while t <= max {
        o += &format!("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{t:.1}</text>\n", left - 5.0, y(t) + 4.0);
        t += 0.5;
    }
    for (label, v, color) in [("2005 off 0.671 s", 0.671, "#2a7"), ("2005 on 3.310 s", 3.310, "#c33")] {
        o += &format!(
            "<line x1=\"{left}\" y1=\"{0}\" x2=\"{1}\" y2=\"{0}\" stroke=\"{color}\" stroke-dasharray=\"4 3\"/>\n",
            y(v),
            w - 130.0
        );
        o += &format!("<text x=\"{}\" y=\"{}\" fill=\"{color}\">{label}</text>\n", w - 125.0, y(v) + 4.0);
    }
    // Bars to the left of the reference labels.
    let slot = (w - 135.0 - left) / keys.len().max(1) as f64;
    for (i, k) in keys.iter().enumerate() {
        let x0 = left + slot * i as f64 + slot * 0.2;
        for (j, (aslr, color)) in [("0", "#7ab"), ("1", "#e94")].iter().enumerate() {
            let v = val(k, aslr);
            let x = x0 + j as f64 * slot * 0.3;
            o += &format!(
                "<rect x=\"{x:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{color}\"/>\n",
                y(v),
                slot * 0.28,
                bottom - y(v)
            );
            o += &format!(
                "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{v:.2}</text>\n",
                x + slot * 0.14,
                y(v) - 3.0
            );
        }
        o +=
            &format!("<text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\">{k}</text>\n", x0 + slot * 0.29, bottom + 16.0);
    }
    o += &format!(
        "<rect x=\"{left}\" y=\"{}\" width=\"10\" height=\"10\" fill=\"#7ab\"/><text x=\"{}\" y=\"{}\">ASLR off</text>\n",
        h - 30.0,
        left + 14.0,
        h - 21.0
    );
    o += &format!(
        "<rect x=\"{}\" y=\"{}\" width=\"10\" height=\"10\" fill=\"#e94\"/><text x=\"{}\" y=\"{}\">ASLR on (2.6.12: stack + mmap)</text>\n",
        left + 90.0,
        h - 30.0,
        left + 104.0,
        h - 21.0
    );
    o += "</svg>\n";
    o
}

/// `morph exp sweep`.
pub fn sweep(a: SweepArgs) -> anyhow::Result<()> {
    let c = &a.common;
    let root = match &c.root {
        Some(r) => r.canonicalize()?,
        None => crate::sysroot_path(None, None)?,
    };
    install_workload(&root)?;
    let csv_path = c.csv.clone().unwrap_or_else(|| PathBuf::from("sweep.csv"));
    let mut rows: Vec<Row> = Vec::new();
    if a.resume && csv_path.exists() {
        let mut r = csv::Reader::from_path(&csv_path)?;
        for row in r.deserialize() {
            rows.push(row?);
        }
    }
    let done: BTreeSet<String> = rows.iter().map(Row::id).collect();
    let mut todo = Vec::new();
    for w in &a.workloads {
        rounds_of(w)?;
        for k in &a.keys {
            for aslr in &a.aslr {
                for &t in &a.thresholds {
                    for i in 0..c.runs {
                        todo.push((k.clone(), aslr.clone(), t, w.clone(), c.seed + u64::from(i)));
                    }
                }
            }
        }
    }
    todo.retain(|(k, s, t, w, seed)| !done.contains(&format!("{k}|{s}|{t}|{w}|{seed}")));
    let pb = progress(todo.len() as u64, c.quiet);
    // Rows are appended as they complete, so an interrupted sweep loses at most one run.
    let fresh = !csv_path.exists() || !a.resume;
    let file = std::fs::OpenOptions::new().create(true).append(!fresh).write(true).truncate(fresh).open(&csv_path)?;
    let mut w = csv::WriterBuilder::new().has_headers(fresh).from_writer(file);
    for (k, aslr, t, wl, seed) in &todo {
        pb.set_message(format!("{k} aslr={aslr} t={t} {wl} seed {seed}"));
        let cell = Cell { key: k, aslr, threshold: *t, workload: wl, seed: *seed };
        let row = run_one(&root, &c.kernel, &cell, None)?;
        w.serialize(&row)?;
        w.flush()?;
        rows.push(row);
        pb.inc(1);
    }
    pb.finish_and_clear();
    println!(
        "{:<9} {:<12} {:>5} {:<9} {:>6} {:>9} {:>9} {:>8}",
        "key", "aslr", "thr", "workload", "runs", "transl", "retrans", "TM5600"
    );
    let mut groups: Vec<(String, String, u32, String)> =
        rows.iter().map(|r| (r.key.clone(), r.aslr.clone(), r.threshold, r.workload.clone())).collect();
    groups.sort();
    groups.dedup();
    for (k, s, t, wl) in &groups {
        let g: Vec<Row> = rows
            .iter()
            .filter(|r| &r.key == k && &r.aslr == s && r.threshold == *t && &r.workload == wl)
            .cloned()
            .collect();
        let m = summarize(&g);
        println!(
            "{k:<9} {s:<12} {t:>5} {wl:<9} {:>6} {:>9} {:>9} {:>8.3}",
            g.len(),
            m.translations,
            m.retranslations,
            m.modeled_s
        );
    }
    if let Some(j) = &c.json {
        std::fs::write(j, serde_json::to_string_pretty(&rows)? + "\n")?;
    }
    if let Some(svg) = &c.svg {
        std::fs::write(svg, sweep_svg(&rows, &a.keys, &a.aslr))?;
    }
    let _ = std::io::stdout().flush();
    Ok(())
}

/// Retranslations (median over runs) by ASLR setting, one group of bars per key.
fn sweep_svg(rows: &[Row], keys: &[String], aslrs: &[String]) -> String {
    let val = |k: &str, s: &str| {
        let mut v: Vec<f64> =
            rows.iter().filter(|r| r.key == k && r.aslr == s).map(|r| r.retranslations as f64).collect();
        if v.is_empty() { 0.0 } else { median(&mut v) }
    };
    let max =
        keys.iter().flat_map(|k| aslrs.iter().map(move |s| (k, s))).map(|(k, s)| val(k, s)).fold(1.0f64, f64::max)
            * 1.15;
    let (w, h, left, bottom, top) = (720.0, 380.0, 70.0, 310.0, 40.0);
    let y = |v: f64| bottom - (v / max) * (bottom - top);
    let colors = ["#999", "#7ab", "#e94", "#6a6", "#a6c", "#c63", "#369", "#bb3"];
    let mut o = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" font-family=\"sans-serif\" font-size=\"12\">\n"
    );
    o += "<text x=\"360\" y=\"20\" text-anchor=\"middle\" font-size=\"14\">Retranslations caused by each ASLR component, by translation-cache key</text>\n";
    o += &format!("<line x1=\"{left}\" y1=\"{bottom}\" x2=\"{}\" y2=\"{bottom}\" stroke=\"black\"/>\n", w - 20.0);
    o += &format!("<line x1=\"{left}\" y1=\"{top}\" x2=\"{left}\" y2=\"{bottom}\" stroke=\"black\"/>\n");
    for i in 0..=4 {
        let v = max / 1.15 * f64::from(i) / 4.0;
        o += &format!("<text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{v:.0}</text>\n", left - 5.0, y(v) + 4.0);
    }
    let slot = (w - 20.0 - left) / keys.len().max(1) as f64;
    let bw = slot * 0.8 / aslrs.len().max(1) as f64;
    for (i, k) in keys.iter().enumerate() {
        let x0 = left + slot * i as f64 + slot * 0.1;
        for (j, s) in aslrs.iter().enumerate() {
            let v = val(k, s);
            let x = x0 + bw * j as f64;
            o += &format!(
                "<rect x=\"{x:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{}\"/>\n",
                y(v),
                bw * 0.9,
                bottom - y(v),
                colors[j % colors.len()]
            );
        }
        o += &format!("<text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\">{k}</text>\n", x0 + slot * 0.4, bottom + 16.0);
    }
    for (j, s) in aslrs.iter().enumerate() {
        let x = left + 90.0 * j as f64;
        o += &format!(
            "<rect x=\"{x}\" y=\"{}\" width=\"10\" height=\"10\" fill=\"{}\"/><text x=\"{}\" y=\"{}\">aslr {s}</text>\n",
            h - 30.0,
            colors[j % colors.len()],
            x + 14.0,
            h - 21.0
        );
    }
    o += "</svg>\n";
    o
}
