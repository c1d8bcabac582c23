//! `morph exp seed` end to end on the real seed workload (dynamic glibc programs, a
//! guest echo server on loopback, bash), and the determinism the experiments rest on:
//! the same seed gives the same counts and the same modeled time.

mod common;

use common::*;

#[test]
fn seed_experiment_reproduces_the_mechanism_and_is_deterministic() {
    let root = sysroot();
    let dir = scratch("exp-seed");
    let (j, c, s) = (dir.join("cells.json"), dir.join("runs.csv"), dir.join("plot.svg"));
    let r = morph_raw(
        &[
            "exp",
            "seed",
            "--root",
            root.to_str().unwrap(),
            "--runs",
            "2",
            "--rounds",
            "4",
            "--keys",
            "virtual,physical",
            "--no-native",
            "--quiet",
            "--json",
            j.to_str().unwrap(),
            "--csv",
            c.to_str().unwrap(),
            "--svg",
            s.to_str().unwrap(),
        ],
        &dir,
    );
    assert_eq!(r.status, 0, "morph exp seed failed:\n{}\n{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("2005 report") && r.stdout.contains("sensitivity, key virtual"), "{}", r.stdout);
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&j).unwrap()).unwrap();
    let cells = doc["cells"].as_array().expect("an array of cells");
    assert_eq!(cells.len(), 4, "{cells:?}");
    assert_eq!(doc["runs"].as_array().map(Vec::len), Some(8), "{doc}");
    for cell in cells {
        for f in [
            "key",
            "aslr",
            "runs",
            "real_median_s",
            "user_median_s",
            "sys_median_s",
            "modeled_tm5600_median_s",
            "translations_median",
            "retranslations_median",
            "lookups_median",
            "hits_median",
        ] {
            assert!(cell.get(f).is_some(), "cell without {f}: {cell}");
        }
        assert_eq!(cell["runs"], 2);
        assert!(cell["modeled_tm5600_median_s"].as_f64().unwrap() > 0.0);
        assert!(cell["translations_median"].as_u64().unwrap() > 0);
    }
    let cell = |k: &str, a: &str| cells.iter().find(|c| c["key"] == k && c["aslr"] == a).unwrap();
    let retr = |k: &str, a: &str| cell(k, a)["retranslations_median"].as_u64().unwrap();
    // The 2005 mechanism: library code at new virtual addresses is translated again
    // under the virtual key; the physical key reuses translations whatever the layout.
    assert!(
        retr("virtual", "1") > retr("virtual", "0") + 100,
        "virtual: {} -> {}",
        retr("virtual", "0"),
        retr("virtual", "1")
    );
    assert_eq!(retr("physical", "0"), 0);
    assert_eq!(retr("physical", "1"), 0);
    let csv = std::fs::read_to_string(&c).unwrap();
    assert_eq!(csv.lines().count(), 1 + 8, "{csv}");
    assert!(std::fs::read_to_string(&s).unwrap().starts_with("<svg"));

    // The same seed, twice: identical counts and modeled seconds.
    let run = |seed: &str, out: &std::path::Path| {
        let r = morph_raw(
            &[
                "run",
                "--root",
                root.to_str().unwrap(),
                "--engine",
                "dbt",
                "--key",
                "virtual",
                "--aslr",
                "1",
                "--kernel",
                "2.6.12",
                "--seed",
                seed,
                "--stats-json",
                out.to_str().unwrap(),
                "/seed/seed.sh",
                "3",
            ],
            &dir,
        );
        assert_eq!(r.status, 0, "{}", r.stderr);
        assert!(r.stdout.contains("seed: 3 rounds"), "{}", r.stdout);
        let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out).unwrap()).unwrap();
        v
    };
    let (a, b, other) =
        (run("11", &dir.join("a.json")), run("11", &dir.join("b.json")), run("12", &dir.join("c.json")));
    assert_eq!(counters(&a), counters(&b), "same seed, different counts");
    let model = morph_model::CostModel::tm5600();
    let ma = model.model(&morph_model::Counts::from_stats_json(&a));
    let mb = model.model(&morph_model::Counts::from_stats_json(&b));
    assert_eq!(ma.total_s, mb.total_s);
    // Another seed moves the libraries: the translation counts change.
    assert_ne!(counters(&a), counters(&other), "a different seed gave identical counts");
}

#[test]
fn sweep_writes_one_row_per_run_and_resumes() {
    let root = sysroot();
    let dir = scratch("exp-sweep");
    let csv = dir.join("sweep.csv");
    let svg = dir.join("sweep.svg");
    let sweep = |resume: bool| {
        let mut args = vec![
            "exp",
            "sweep",
            "--root",
            root.to_str().unwrap(),
            "--keys",
            "virtual,physical",
            "--aslr",
            "none;mmap",
            "--thresholds",
            "50",
            "--workloads",
            "seed:2",
            "--runs",
            "1",
            "--quiet",
            "--csv",
            csv.to_str().unwrap(),
            "--svg",
            svg.to_str().unwrap(),
        ];
        if resume {
            args.push("--resume");
        }
        let r = morph_raw(&args, &dir);
        assert_eq!(r.status, 0, "morph exp sweep failed:\n{}\n{}", r.stdout, r.stderr);
        r
    };
    sweep(false);
    let text = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(text.lines().count(), 1 + 4, "{text}");
    assert!(std::fs::read_to_string(&svg).unwrap().starts_with("<svg"));
    // An interrupted sweep: the last row is lost; --resume runs only that one.
    let kept: Vec<&str> = text.lines().take(4).collect();
    std::fs::write(&csv, kept.join("\n") + "\n").unwrap();
    sweep(true);
    let again = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(again.lines().count(), 1 + 4, "{again}");
    assert_eq!(again.lines().take(4).collect::<Vec<_>>(), kept, "resume rewrote finished rows");
    // Nothing left to do: nothing runs, nothing is added.
    sweep(true);
    assert_eq!(std::fs::read_to_string(&csv).unwrap(), again);
}

/// `morph exp seed` with native rows (ASLR really off and really on), its metadata in
/// every output, the default plot beside the CSV, and `morph exp fit` on its JSON.
#[test]
fn seed_outputs_are_self_describing_and_fit_runs_on_them() {
    let root = sysroot();
    let dir = scratch("exp-seed-meta");
    let (j, c, png) = (dir.join("cells.json"), dir.join("runs.csv"), dir.join("plot.png"));
    let r = morph_raw(
        &[
            "exp",
            "seed",
            "--root",
            root.to_str().unwrap(),
            "--runs",
            "1",
            "--rounds",
            "2",
            "--keys",
            "virtual",
            "--quiet",
            "--json",
            j.to_str().unwrap(),
            "--csv",
            c.to_str().unwrap(),
            "--png",
            png.to_str().unwrap(),
        ],
        &dir,
    );
    assert_eq!(r.status, 0, "morph exp seed failed:\n{}\n{}", r.stdout, r.stderr);
    for label in ["native (host CPU)", "off (personality)", "on (host, rva=", "real s", "legend:", "morph / native"] {
        assert!(r.stdout.contains(label), "no {label:?} in\n{}", r.stdout);
    }
    // The default plot went beside the CSV, and the output says where.
    let svg = dir.join("runs.svg");
    let svg_text = std::fs::read_to_string(&svg).unwrap();
    assert!(svg_text.starts_with("<svg"));
    // The table and the plot say what made them.
    let made = r.stdout.lines().find(|l| l.starts_with("made by morph ")).expect("a provenance line");
    assert!(made.contains("(commit ") && made.contains("libc6 "), "{made}");
    assert!(svg_text.contains("made by morph ") && svg_text.contains("ASLR on"), "no provenance or legend in the plot");
    assert!(r.stdout.contains(&format!("plot: {}", svg.display())), "{}", r.stdout);
    assert!(std::fs::read(&png).unwrap().starts_with(b"\x89PNG"));

    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&j).unwrap()).unwrap();
    let meta = &doc["metadata"];
    for f in ["morph_version", "morph_commit", "host_cpu", "host_kernel", "date_utc"] {
        assert!(meta[f].as_str().is_some_and(|s| !s.is_empty()), "metadata without {f}: {meta}");
    }
    assert_eq!(meta["config"]["seeds"], serde_json::json!([1]), "{meta}");
    assert_eq!(meta["config"]["kernel_profile"], "2.6.12", "{meta}");
    assert!(meta["sysroot"]["packages"]["libc6"].is_string(), "{meta}");
    assert!(meta["cost_model"]["interp_insn"]["assumption"].as_bool().unwrap(), "{meta}");
    let runs = doc["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 4, "native off, native on, virtual off, virtual on");
    for run in runs {
        let native = run["engine"] == "native";
        for f in ["key", "threshold", "seed", "kernel_profile", "modeled_tm5600_s", "translations", "counts"] {
            assert_eq!(run[f].is_null(), native, "{f} in {run}");
        }
        assert!(run["real_s"].as_f64().unwrap() > 0.0, "{run}");
    }
    let native_aslr: Vec<&str> =
        runs.iter().filter(|r| r["engine"] == "native").map(|r| r["aslr"].as_str().unwrap()).collect();
    assert_eq!(native_aslr, ["0", "host"]);
    // The CSV: native cells empty (not zero) where nothing applies; metadata in the sidecar.
    let mut rd = csv::Reader::from_path(&c).unwrap();
    let head = rd.headers().unwrap().clone();
    let col = |name: &str| head.iter().position(|h| h == name).unwrap_or_else(|| panic!("no column {name}"));
    let recs: Vec<csv::StringRecord> = rd.records().map(Result::unwrap).collect();
    assert_eq!(recs.len(), 4);
    for rec in &recs {
        let native = &rec[col("engine")] == "native";
        for f in ["threshold", "modeled_tm5600_s", "modeled_tm5600_user_s", "retranslations"] {
            assert_eq!(rec[col(f)].is_empty(), native, "{f}: {rec:?}");
        }
    }
    let side: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("runs.csv.meta.json")).unwrap()).unwrap();
    assert_eq!(side["morph_commit"], meta["morph_commit"]);

    // The fit, from those runs: a separate, labelled result over the assumptions only.
    let fit_json = dir.join("fit.json");
    let r = morph_raw(&["exp", "fit", "--from", j.to_str().unwrap(), "--json", fit_json.to_str().unwrap()], &dir);
    assert_eq!(r.status, 0, "morph exp fit failed:\n{}\n{}", r.stdout, r.stderr);
    for label in ["ASSUMPTION parameters", "interp_insn", "user_on_s", "residual", "verdict: "] {
        assert!(r.stdout.contains(label), "no {label:?} in\n{}", r.stdout);
    }
    let fit: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&fit_json).unwrap()).unwrap();
    let names: Vec<&str> =
        fit["fit"]["params"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"interp_insn") && !names.contains(&"fork") && !names.contains(&"clock_hz"), "{names:?}");
    assert_eq!(fit["fit"]["residuals"].as_array().unwrap().len(), 4);
    assert!(fit["fit"]["plausible"].is_boolean());
    assert!(fit["metadata"]["morph_commit"].is_string());
}
