//! `morph exp seed`: the 2005 table, its sensitivity lines and its plot.

use super::*;

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
