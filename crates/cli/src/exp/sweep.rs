//! `morph exp sweep`: the cartesian sweep, resumable, and its plot.

use super::*;

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
