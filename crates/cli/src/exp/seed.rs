//! `morph exp seed`: the 2005 table, its sensitivity lines and its plot.

use super::*;

/// The 2005 report (TM5600 at 533 MHz, Linux 2.6.12.2, `../shared/seed/`): real, user
/// and sys seconds with `randomize_va_space` 0 and 1.
pub const REPORT_2005: [(&str, f64, f64); 3] = [("real", 0.671, 3.310), ("user", 0.293, 2.712), ("sys", 0.325, 0.401)];

/// The cells of the table, in table (and plot) order: native with ASLR off and on, then
/// every key with ASLR off and on.
fn cells(keys: &[String], native: bool) -> Vec<(String, &'static str)> {
    let mut cells: Vec<(String, &str)> = Vec::new();
    if native {
        cells.push(("native".into(), NATIVE_ASLR_OFF));
        cells.push(("native".into(), NATIVE_ASLR_HOST));
    }
    for k in keys {
        for aslr in ["0", "1"] {
            cells.push((k.clone(), aslr));
        }
    }
    cells
}

/// Where the default plot goes: beside `--csv` (or `--json`) with the extension
/// `.svg`, else `./seed.svg`.
fn default_plot(c: &Common) -> PathBuf {
    match c.csv.as_ref().or(c.json.as_ref()) {
        Some(p) => p.with_extension("svg"),
        None => PathBuf::from("seed.svg"),
    }
}

/// `morph exp seed`.
pub fn seed(a: SeedArgs) -> anyhow::Result<()> {
    let c = &a.common;
    let svg = c.svg.clone().or_else(|| (!a.no_plot).then(|| default_plot(c)));
    let mut extra: Vec<(&str, &Path)> = Vec::new();
    if let Some(p) = &svg {
        extra.push(("--svg", p));
    }
    if let Some(p) = &a.png {
        extra.push(("--png", p));
    }
    output::check_outputs(c, &extra)?;
    for k in &a.keys {
        parse_key(k)?;
    }
    let root = match &c.root {
        Some(r) => r.canonicalize()?,
        None => crate::sysroot_path(None, None)?,
    };
    install_workload(&root)?;
    let native = if a.no_native { None } else { Some(native_prefix(&root)?) };
    let no_randomize_checked = match &native {
        Some(p) => Some(native_aslr_off_works(p)?),
        None => None,
    };
    let workload = format!("seed:{}", a.rounds);
    let cells = cells(&a.keys, native.is_some());
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
                tc_size_bytes: morph_dbt::DEFAULT_TC_SIZE as u64,
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
    let config = serde_json::json!({
        "rounds": a.rounds,
        "runs_per_cell": c.runs,
        "seeds": (0..c.runs).map(|i| c.seed + u64::from(i)).collect::<Vec<_>>(),
        "kernel_profile": c.kernel,
        "keys": a.keys,
        "threshold": morph_dbt::DEFAULT_THRESHOLD,
        "space_credit": 0,
        "workload": "guests/seed/seed.sh",
        "native": native.is_some(),
        "native_aslr_off": "personality(ADDR_NO_RANDOMIZE), as setarch -R",
        "native_aslr_off_checked": no_randomize_checked,
        "native_command": native,
        "root": root.display().to_string(),
    });
    let metadata = output::metadata("seed", config, &root);
    let provenance = provenance(&metadata);
    print_seed_table(&summaries, &a);
    println!("{provenance}");
    print_sensitivity(&rows, &a.keys);
    output::write_outputs(c, &metadata, &summaries, &rows)?;
    if let Some(p) = &svg {
        plot::seed_plot(p, &summaries, &provenance, plot::Format::Svg)?;
        println!("plot: {}", p.display());
    }
    if let Some(p) = &a.png {
        plot::seed_plot(p, &summaries, &provenance, plot::Format::Png)?;
        println!("plot: {}", p.display());
    }
    for (what, p) in [("cells and runs (JSON)", &c.json), ("runs (CSV)", &c.csv)] {
        if let Some(p) = p {
            println!("{what}: {}", p.display());
        }
    }
    if let Some(p) = &c.csv {
        println!("metadata of the CSV: {}", output::sidecar(p).display());
    }
    Ok(())
}

/// One line saying what made these numbers: morph's version and commit, the host, the
/// sysroot's libc and the date (the full record is the JSON's or the CSV sidecar's
/// `metadata`).
fn provenance(m: &serde_json::Value) -> String {
    let s = |v: &serde_json::Value| v.as_str().unwrap_or("unknown").to_string();
    format!(
        "made by morph {} (commit {}) on {}, {}, randomize_va_space={}; sysroot {} {} libc6 {}; {}",
        s(&m["morph_version"]),
        s(&m["morph_commit"]),
        s(&m["host_cpu"]),
        s(&m["host_kernel"]),
        m["host_randomize_va_space"],
        s(&m["sysroot"]["suite"]),
        s(&m["sysroot"]["arch"]),
        s(&m["sysroot"]["packages"]["libc6"]),
        s(&m["date_utc"])
    )
}

/// Checks that the native runs really get ASLR off: a process started the same way
/// reads its personality from /proc.
fn native_aslr_off_works(prefix: &[String]) -> anyhow::Result<bool> {
    let mut cmd = Command::new(&prefix[0]);
    cmd.args(&prefix[1..]).args(["/bin/cat", "/proc/self/personality"]);
    no_randomize(&mut cmd);
    let out = cmd.stdin(Stdio::null()).output().context("cannot start the native personality check")?;
    let text = String::from_utf8_lossy(&out.stdout);
    let persona = u64::from_str_radix(text.trim(), 16).unwrap_or(0);
    if persona & libc::ADDR_NO_RANDOMIZE as u64 == 0 {
        bail!("native runs cannot turn ASLR off (personality {:?}); use --no-native", text.trim());
    }
    Ok(true)
}

/// How a cell's ASLR setting reads in the table.
pub(crate) fn aslr_label(s: &Summary) -> String {
    match (s.native, s.aslr.as_str()) {
        (true, NATIVE_ASLR_OFF) => "off (personality)".into(),
        (true, _) => match crate::meta::host_randomize_va_space() {
            Some(v) => format!("on (host, rva={v})"),
            None => "host setting".into(),
        },
        (false, "0") => "off (--aslr 0)".into(),
        (false, a) => format!("on (--aslr {a})"),
    }
}

/// How a cell's configuration reads in the table.
pub(crate) fn run_label(s: &Summary) -> String {
    if s.native { "native (host CPU)".into() } else { format!("morph, key {}", s.key) }
}

fn print_seed_table(s: &[Summary], a: &SeedArgs) {
    println!(
        "morph exp seed: {} rounds of guests/seed/seed.sh, kernel profile {}, {} run(s) per cell, seeds {}..{}",
        a.rounds,
        a.common.kernel,
        a.common.runs,
        a.common.seed,
        a.common.seed + u64::from(a.common.runs) - 1
    );
    // The run column as wide as its longest label (`morph, key virtual+warm`).
    let w = s.iter().map(|x| run_label(x).len()).max().unwrap_or(0).max(20);
    println!(
        "{:<w$} {:<18} | {:>7} {:>15} {:>7} {:>7} | {:>8} {:>8} {:>8} | {:>7} {:>9} {:>6} {:>12}",
        "run",
        "ASLR",
        "real s",
        "real min-max s",
        "user s",
        "sys s",
        "model s",
        "m.user s",
        "m.sys s",
        "transl.",
        "retransl.",
        "hit %",
        "interp. ins."
    );
    for x in s {
        let hit = if x.lookups > 0 { 100.0 * x.hits as f64 / x.lookups as f64 } else { 0.0 };
        // Native runs have no model and no translator: dashes.
        let morph = |v: String| if x.native { "-".to_string() } else { v };
        println!(
            "{:<w$} {:<18} | {:>7.3} {:>15} {:>7.3} {:>7.3} | {:>8} {:>8} {:>8} | {:>7} {:>9} {:>6} {:>12}",
            run_label(x),
            aslr_label(x),
            x.real_s,
            format!("{:.3}-{:.3}", x.real_range.0, x.real_range.1),
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
    print_legend();
    print_ratios(s);
}

fn print_legend() {
    println!(
        "legend: real/user/sys s = host-measured seconds on this machine, median over the runs \
         (user and sys from getrusage of the run's processes, native and morph alike);\n\
         \x20       model s = modeled seconds on a 533 MHz Crusoe TM5600 (docs/model.md; m.user/m.sys its user/sys \
         parts);\n\
         \x20       transl. = blocks translated; retransl. = blocks translated again (code already translated, \
         met under a new key);\n\
         \x20       hit % = translation-cache lookups that found a translation; interp. ins. = guest instructions \
         interpreted; '-' = does not apply."
    );
}

fn ratio(on: f64, off: f64) -> String {
    if off > 0.0 { format!("x{:.2}", on / off) } else { "-".into() }
}

fn print_ratios(s: &[Summary]) {
    let find =
        |native: bool, key: &str, aslr: &str| s.iter().find(|x| x.native == native && x.key == key && x.aslr == aslr);
    let w = s.iter().map(|x| run_label(x).len()).max().unwrap_or(0).max(22);
    println!("ASLR on / ASLR off (xN: the run took N times as long with ASLR on):");
    if let (Some(off), Some(on)) = (find(true, "native", NATIVE_ASLR_OFF), find(true, "native", NATIVE_ASLR_HOST)) {
        println!(
            "  {:<w$} real {:>6}  user {:>6}  sys {:>6}",
            "native (host CPU)",
            ratio(on.real_s, off.real_s),
            ratio(on.user_s, off.user_s),
            ratio(on.sys_s, off.sys_s)
        );
    }
    let keys: Vec<&Summary> = s.iter().filter(|x| !x.native && x.aslr == "0").collect();
    for off in &keys {
        let Some(on) = find(false, &off.key, "1") else { continue };
        println!(
            "  {:<w$} real {:>6}  user {:>6}  sys {:>6}  | modeled TM5600 {:>6} (user {}, sys {})  retranslations {} -> {}",
            format!("morph, key {}", off.key),
            ratio(on.real_s, off.real_s),
            ratio(on.user_s, off.user_s),
            ratio(on.sys_s, off.sys_s),
            ratio(on.modeled_s, off.modeled_s),
            ratio(on.modeled_user_s, off.modeled_user_s),
            ratio(on.modeled_sys_s, off.modeled_sys_s),
            off.retranslations,
            on.retranslations
        );
    }
    let [r, u, y] = REPORT_2005;
    println!(
        "  {:<w$} real {:>6}  user {:>6}  sys {:>6}  (TM5600 533 MHz, Linux 2.6.12.2: off real {} user {} sys {}; on real {} user {} sys {} s)",
        "2005 report",
        ratio(r.2, r.1),
        ratio(u.2, u.1),
        ratio(y.2, y.1),
        r.1,
        u.1,
        y.1,
        r.2,
        u.2,
        y.2
    );
    let (Some(n_off), Some(n_on)) = (find(true, "native", NATIVE_ASLR_OFF), find(true, "native", NATIVE_ASLR_HOST))
    else {
        return;
    };
    println!("morph / native (xN: morph took N times the host time native did, same ASLR setting):");
    for off in &keys {
        let Some(on) = find(false, &off.key, "1") else { continue };
        println!(
            "  {:<w$} ASLR off: real {:>7}  user {:>7}  sys {:>7}  | ASLR on: real {:>7}  user {:>7}  sys {:>7}",
            format!("morph, key {}", off.key),
            ratio(off.real_s, n_off.real_s),
            ratio(off.user_s, n_off.user_s),
            ratio(off.sys_s, n_off.sys_s),
            ratio(on.real_s, n_on.real_s),
            ratio(on.user_s, n_on.user_s),
            ratio(on.sys_s, n_on.sys_s)
        );
    }
}

/// The run whose modeled time is the median of its cell.
pub(crate) fn median_run<'a>(rows: &'a [Row], key: &str, aslr: &str) -> Option<&'a Row> {
    let mut v: Vec<&Row> = rows.iter().filter(|r| !r.native && r.key == key && r.aslr == aslr).collect();
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
