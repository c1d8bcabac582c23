//! `morph exp sweep` beyond one machine's loop: plans, cells and merges, cells in
//! parallel, `--resume` against other settings, and the plot.

mod common;

use std::path::Path;

use common::*;

/// The sweep every test runs: 2 keys × 2 ASLR settings × `runs` seeds of a short workload.
fn sweep_args<'a>(root: &'a Path, aslr: &'a str, runs: &'a str) -> Vec<&'a str> {
    vec![
        "exp",
        "sweep",
        "--root",
        root.to_str().unwrap(),
        "--keys",
        "physical,virtual",
        "--aslr",
        aslr,
        "--workloads",
        "seed:2",
        "--runs",
        runs,
        "--quiet",
    ]
}

fn ok(args: &[&str], cwd: &Path) -> Run {
    let r = morph_raw(args, cwd);
    assert_eq!(r.status, 0, "morph {args:?} failed:\n{}\n{}", r.stdout, r.stderr);
    r
}

/// A sweep CSV without its host-time columns, with the translator's counters in it.
fn counts(csv: &Path) -> Vec<Vec<String>> {
    let rows = sweep_counts(csv);
    assert!(rows[0].iter().any(|h| h == "retranslations"), "{:?}", rows[0]);
    rows
}

#[test]
fn jobs_and_cells_with_merge_give_the_same_counts() {
    let root = sysroot();
    let dir = scratch("sweep-cells");
    let p = |f: &str| dir.join(f).to_str().unwrap().to_string();
    let base = sweep_args(root, "none;1", "2");
    let with = |extra: &[&str]| [&base[..], extra].concat().iter().map(|s| s.to_string()).collect::<Vec<String>>();
    let okv = |v: Vec<String>| ok(&v.iter().map(String::as_str).collect::<Vec<_>>(), &dir);
    okv(with(&["--plan-out", &p("plan.json")]));
    let plan: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("plan.json")).unwrap()).unwrap();
    let cells = plan["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 8, "{plan}");
    assert_eq!(plan["settings"]["aslr"], serde_json::json!(["none", "1"]));
    assert_eq!(plan["settings_hash"].as_str().unwrap().len(), 16);
    for (i, c) in cells.iter().enumerate() {
        assert_eq!(c["index"], i);
        for f in ["key", "aslr", "threshold", "workload", "seed"] {
            assert!(c.get(f).is_some(), "cell without {f}: {c}");
        }
    }
    // --plan-out runs nothing.
    assert!(!dir.join("cells").exists());
    for i in 0..cells.len() {
        ok(&["exp", "sweep-cell", "--plan", &p("plan.json"), "--index", &i.to_string(), "--out", &p("cells")], &dir);
    }
    let mut names: Vec<String> =
        std::fs::read_dir(dir.join("cells")).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    names.sort();
    let expected: Vec<String> = (0..8).map(|i| format!("cell-{i:06}.json")).collect();
    assert_eq!(names, expected, "one result file per cell and no temporary files left");
    let bad = morph_raw(&["exp", "sweep-cell", "--plan", &p("plan.json"), "--index", "8", "--out", &p("cells")], &dir);
    assert_eq!(bad.status, 125, "{}", bad.stderr);
    assert!(bad.stderr.contains("no cell 8"), "{}", bad.stderr);
    ok(&["exp", "sweep-merge", "--plan", &p("plan.json"), "--dir", &p("cells"), "--csv", &p("merged.csv")], &dir);
    okv(with(&["--jobs", "1", "--csv", &p("j1.csv")]));
    okv(with(&["--jobs", "2", "--csv", &p("j2.csv")]));
    let j1 = counts(&dir.join("j1.csv"));
    assert_eq!(j1.len(), 1 + 8);
    assert_eq!(counts(&dir.join("j2.csv")), j1, "--jobs 2 gave other counts than --jobs 1");
    assert_eq!(counts(&dir.join("merged.csv")), j1, "sweep-cell + sweep-merge gave other counts than a local sweep");
    // Plan order: the rows follow the cells.
    let col = |name: &str| j1[0].iter().position(|h| h == name).unwrap();
    for (row, cell) in j1[1..].iter().zip(cells) {
        assert_eq!(row[col("key")], cell["key"].as_str().unwrap());
        assert_eq!(row[col("aslr")], cell["aslr"].as_str().unwrap());
        assert_eq!(row[col("seed")], cell["seed"].to_string());
    }
    // The mechanism is there (so equal columns are not equal by being empty).
    let retr = |r: &Vec<String>| r[j1[0].iter().position(|h| h == "retranslations").unwrap()].parse::<u64>().unwrap();
    assert!(j1[1..].iter().any(|r| retr(r) > 100), "{j1:?}");
}

#[test]
fn merge_names_missing_cells_and_refuses_other_plans() {
    let root = sysroot();
    let dir = scratch("sweep-merge");
    let p = |f: &str| dir.join(f).to_str().unwrap().to_string();
    let mut a = sweep_args(root, "none", "2");
    a.extend(["--plan-out", "a.json"]);
    ok(&a, &dir);
    ok(&["exp", "sweep-cell", "--plan", "a.json", "--index", "0", "--out", "cells"], &dir);
    let r = morph_raw(&["exp", "sweep-merge", "--plan", "a.json", "--dir", "cells", "--csv", "out.csv"], &dir);
    assert_eq!(r.status, 125);
    assert!(r.stderr.contains("3 of 4 cells have no result") && r.stderr.contains("cells 1-3"), "{}", r.stderr);
    assert!(!dir.join("out.csv").exists());
    // Another plan (another first seed): its cells are not this plan's.
    let mut b = sweep_args(root, "none", "2");
    b.extend(["--seed", "9", "--plan-out", "b.json"]);
    ok(&b, &dir);
    let r = morph_raw(&["exp", "sweep-merge", "--plan", &p("b.json"), "--dir", &p("cells")], &dir);
    assert_eq!(r.status, 125);
    assert!(r.stderr.contains("written for another plan"), "{}", r.stderr);
}

#[test]
fn resume_refuses_a_csv_of_other_settings_and_nothing_is_written_unasked() {
    let root = sysroot();
    let dir = scratch("sweep-resume");
    // No --csv: the table only, no ./sweep.csv.
    let r = ok(&sweep_args(root, "none", "1"), &dir);
    assert!(r.stdout.contains("retranslations"), "{}", r.stdout);
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0, "a sweep without --csv wrote files");
    let r = morph_raw(&[sweep_args(root, "none", "1"), vec!["--resume"]].concat(), &dir);
    assert_eq!(r.status, 125);
    assert!(r.stderr.contains("--resume needs --csv"), "{}", r.stderr);

    // Values `morph run` would refuse are refused before any cell runs.
    for (opt, bad, msg) in [("--keys", "bogus", "unknown key bogus"), ("--aslr", "none;foo", "--aslr foo")] {
        let mut a = sweep_args(root, "none", "1");
        a.extend([opt, bad]);
        let r = morph_raw(&a, &dir);
        assert_eq!(r.status, 125);
        assert!(r.stderr.contains(msg), "{}", r.stderr);
    }

    let csv = dir.join("s.csv");
    let c = csv.to_str().unwrap();
    ok(&[sweep_args(root, "none", "1"), vec!["--csv", c]].concat(), &dir);
    let before = std::fs::read_to_string(&csv).unwrap();
    assert!(dir.join("s.csv.settings.json").exists());
    // Other ASLR settings, another kernel: refused, naming what differs; the file is kept.
    let r = morph_raw(&[sweep_args(root, "none;1", "1"), vec!["--csv", c, "--resume"]].concat(), &dir);
    assert_eq!(r.status, 125, "{}", r.stderr);
    assert!(r.stderr.contains("other settings") && r.stderr.contains("aslr: [\"none\",\"1\"]"), "{}", r.stderr);
    assert!(!r.stderr.contains("kernel"), "{}", r.stderr);
    let r =
        morph_raw(&[sweep_args(root, "none", "1"), vec!["--csv", c, "--resume", "--kernel", "modern"]].concat(), &dir);
    assert_eq!(r.status, 125, "{}", r.stderr);
    assert!(r.stderr.contains("kernel: \"modern\"") && r.stderr.contains("\"2.6.12\""), "{}", r.stderr);
    assert_eq!(std::fs::read_to_string(&csv).unwrap(), before);
    // The same settings resume (nothing left to run: the file is unchanged).
    ok(&[sweep_args(root, "none", "1"), vec!["--csv", c, "--resume"]].concat(), &dir);
    assert_eq!(std::fs::read_to_string(&csv).unwrap(), before);
    // A CSV without its settings file cannot be checked: refused.
    std::fs::remove_file(dir.join("s.csv.settings.json")).unwrap();
    let r = morph_raw(&[sweep_args(root, "none", "1"), vec!["--csv", c, "--resume"]].concat(), &dir);
    assert_eq!(r.status, 125);
    assert!(r.stderr.contains("no settings file"), "{}", r.stderr);
}

/// The SVG's text elements, in document order.
fn texts(svg: &str) -> Vec<String> {
    svg.split("<text")
        .skip(1)
        .filter_map(|t| Some(t.split_once('>')?.1.split_once("</text>")?.0.trim().to_string()))
        .collect()
}

#[test]
fn the_plot_has_labelled_axes_round_ticks_whiskers_and_the_table_order() {
    let root = sysroot();
    let dir = scratch("sweep-plot");
    let (svg, png) = (dir.join("s.svg"), dir.join("s.png"));
    let mut a = sweep_args(root, "1;none", "2");
    a.extend(["--svg", svg.to_str().unwrap(), "--png", png.to_str().unwrap()]);
    let r = ok(&a, &dir);
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.starts_with("<svg"), "{}", &text[..100.min(text.len())]);
    for label in
        ["retranslations / blocks", "modeled time / s", "host real time / s", "translation-cache key", "virtual"]
    {
        assert!(text.contains(label), "no {label:?} in the SVG");
    }
    // Legend in the table's order: ASLR 1 first, as asked.
    let labels = texts(&text);
    let at = |l: &str| labels.iter().position(|t| t == l).unwrap_or_else(|| panic!("no {l:?} in {labels:?}"));
    let (l1, l0) = (at("aslr 1"), at("aslr none"));
    assert!(l1 < l0, "legend order differs from the table's");
    let (t1, t0) = (r.stdout.find("physical  1 ").unwrap(), r.stdout.find("physical  none").unwrap());
    assert!(t1 < t0, "{}", r.stdout);
    // Ticks at round numbers: in each panel (its ticks start at 0), equal steps of 1, 2
    // or 5 times a power of ten.
    let ticks: Vec<f64> = labels.iter().filter_map(|t| t.parse().ok()).collect();
    let panels: Vec<&[f64]> = ticks.chunk_by(|_, b| *b != 0.0).collect();
    assert_eq!(panels.len(), 3, "{ticks:?}");
    let round = |d: f64| {
        let mant = d / 10f64.powf(d.log10().floor());
        [1.0, 2.0, 5.0, 10.0].iter().any(|m| (mant - m).abs() < 1e-6)
    };
    for p in &panels {
        assert!(p.len() >= 4, "{ticks:?}");
        let step = p[1] - p[0];
        assert!(round(step), "ticks not at round numbers: {p:?}");
        assert!(p.windows(2).all(|w| (w[1] - w[0] - step).abs() < step * 1e-6), "uneven ticks: {p:?}");
    }
    // Whiskers: runs differ by seed under virtual+ASLR, so error bars are drawn.
    assert!(text.contains("whiskers min–max"), "no whisker note");
    let bytes = std::fs::read(&png).unwrap();
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
}

#[test]
fn capacities_are_a_dimension_with_their_flushes() {
    let root = sysroot();
    let dir = scratch("sweep-tc");
    let (csv, svg) = (dir.join("tc.csv"), dir.join("tc.svg"));
    let args = |extra: &[&str]| -> Vec<String> {
        let mut a: Vec<String> = ["exp", "sweep", "--root", root.to_str().unwrap(), "--keys", "virtual", "--aslr", "1"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        a.extend(["--thresholds", "2", "--workloads", "seed:2", "--runs", "1", "--quiet"].map(String::from));
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };
    let run = |v: Vec<String>| morph_raw(&v.iter().map(String::as_str).collect::<Vec<_>>(), &dir);
    // Refused before any cell runs: a size `morph run --tc-size` refuses, or two names
    // of one capacity.
    for (bad, msg) in [("bogus", "--tc-sizes bogus"), ("64K,1", "below the minimum"), ("14M,crusoe", "same capacity")] {
        let r = run([args(&["--tc-sizes"]), vec![bad.to_string()]].concat());
        assert_eq!(r.status, 125, "{bad}: {}", r.stderr);
        assert!(r.stderr.contains(msg), "{bad}: {}", r.stderr);
    }
    // The plan has the capacity in every cell, nested after the threshold.
    let r = run(args(&["--tc-sizes", "256K,64M", "--plan-out", "plan.json"]));
    assert_eq!(r.status, 0, "{}", r.stderr);
    let plan: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("plan.json")).unwrap()).unwrap();
    let sizes: Vec<u64> =
        plan["cells"].as_array().unwrap().iter().map(|c| c["tc_size_bytes"].as_u64().unwrap()).collect();
    assert_eq!(sizes, [256 << 10, 64 << 20], "{plan}");
    assert_eq!(plan["settings"]["tc_sizes"], serde_json::json!(["256K", "64M"]));

    let r = run(args(&["--tc-sizes", "256K,64M", "--csv", csv.to_str().unwrap(), "--svg", svg.to_str().unwrap()]));
    assert_eq!(r.status, 0, "{}\n{}", r.stdout, r.stderr);
    let mut rd = csv::Reader::from_path(&csv).unwrap();
    let header: Vec<String> = rd.headers().unwrap().iter().map(String::from).collect();
    let col = |name: &str| header.iter().position(|h| h == name).unwrap_or_else(|| panic!("no {name} in {header:?}"));
    let rows: Vec<csv::StringRecord> = rd.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 2);
    let num = |r: &csv::StringRecord, c: &str| r[col(c)].parse::<u64>().unwrap();
    let (small, big) = (&rows[0], &rows[1]);
    assert_eq!((num(small, "tc_size_bytes"), num(big, "tc_size_bytes")), (256 << 10, 64 << 20));
    // The guest's results are the same (the workload checks its own output).
    assert_eq!((&small[col("exit_status")], &big[col("exit_status")]), ("0", "0"));
    assert!(num(small, "flushes") > 0, "no flush at 256K: {small:?}");
    assert_eq!(num(big, "flushes"), 0, "{big:?}");
    assert!(num(small, "retranslations") > num(big, "retranslations"), "{small:?} vs {big:?}");
    // The table and the plot tell the two capacities apart.
    assert!(r.stdout.contains("tc size") && r.stdout.contains("256K") && r.stdout.contains("64M"), "{}", r.stdout);
    let labels = texts(&std::fs::read_to_string(&svg).unwrap());
    for l in ["aslr 1, tc 256K", "aslr 1, tc 64M"] {
        assert!(labels.iter().any(|t| t == l), "no {l:?} in {labels:?}");
    }
}

#[test]
fn plans_of_older_morphs_without_capacities_still_read() {
    let root = sysroot();
    let dir = scratch("sweep-tc-old");
    ok(&[sweep_args(root, "none", "1"), vec!["--plan-out", "plan.json"]].concat(), &dir);
    let text = std::fs::read_to_string(dir.join("plan.json")).unwrap();
    let mut plan: serde_json::Value = serde_json::from_str(&text).unwrap();
    // The default capacity is not in the settings (so the hash is an older morph's).
    assert!(plan["settings"].get("tc_sizes").is_none(), "{plan}");
    for c in plan["cells"].as_array_mut().unwrap() {
        assert_eq!(c["tc_size_bytes"], 64 << 20);
        c.as_object_mut().unwrap().remove("tc_size_bytes");
    }
    std::fs::write(dir.join("old.json"), plan.to_string()).unwrap();
    // The plan reads: what is missing is the cells' results, not a consistent plan.
    let r = morph_raw(&["exp", "sweep-merge", "--plan", "old.json", "--dir", "cells"], &dir);
    assert_eq!(r.status, 125);
    assert!(r.stderr.contains("2 of 2 cells have no result"), "{}", r.stderr);
}
