//! `morph exp seed` end to end on the real seed workload (dynamic glibc programs, a
//! guest echo server on loopback, bash), and the determinism the experiments rest on:
//! the same seed gives the same counts and the same modeled time.

mod common;

use common::*;

/// Every counter of a `--stats-json` document except host times.
fn counts(v: &serde_json::Value) -> Vec<(String, serde_json::Value)> {
    let mut all = Vec::new();
    flatten("", v, &mut all);
    all.retain(|(k, _)| !k.ends_with("_ns"));
    all
}

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
    let cells: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&j).unwrap()).unwrap();
    let cells = cells.as_array().expect("an array of cells");
    assert_eq!(cells.len(), 4, "{cells:?}");
    for cell in cells {
        for f in [
            "key",
            "aslr",
            "runs",
            "real_s",
            "user_s",
            "sys_s",
            "modeled_s",
            "translations",
            "retranslations",
            "lookups",
            "hits",
        ] {
            assert!(cell.get(f).is_some(), "cell without {f}: {cell}");
        }
        assert_eq!(cell["runs"], 2);
        assert!(cell["modeled_s"].as_f64().unwrap() > 0.0);
        assert!(cell["translations"].as_u64().unwrap() > 0);
    }
    let cell = |k: &str, a: &str| cells.iter().find(|c| c["key"] == k && c["aslr"] == a).unwrap();
    let retr = |k: &str, a: &str| cell(k, a)["retranslations"].as_u64().unwrap();
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
    assert_eq!(counts(&a), counts(&b), "same seed, different counts");
    let model = morph_model::CostModel::tm5600();
    let ma = model.model(&morph_model::Counts::from_stats_json(&a));
    let mb = model.model(&morph_model::Counts::from_stats_json(&b));
    assert_eq!(ma.total_s, mb.total_s);
    // Another seed moves the libraries: the translation counts change.
    assert_ne!(counts(&a), counts(&other), "a different seed gave identical counts");
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
