//! `morph exp sweep --slurm` through a real single-node Slurm (munged, slurmctld and
//! slurmd on this machine, started by tests/slurm/start.sh): one job array, merged,
//! equal to a local sweep count for count.
//!
//! Needs root and Debian's slurm-wlm and munge (`.ci/run` installs them).

mod common;

use std::path::Path;
use std::process::Command;

use common::*;

/// Starts (or finds running) the test cluster; returns its slurm.conf.
fn start_slurm() -> String {
    let script = workspace().join("crates/cli/tests/slurm/start.sh");
    let out = Command::new("bash").arg(&script).output().expect("run tests/slurm/start.sh");
    assert!(
        out.status.success(),
        "tests/slurm/start.sh failed (needs root, slurm-wlm and munge):\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

fn morph_slurm(args: &[&str], cwd: &Path, conf: &str) -> Run {
    let out = Command::new(morph())
        .args(args)
        .current_dir(cwd)
        .env_clear()
        .env("PATH", "/usr/bin:/bin:/usr/sbin:/sbin")
        .env("LC_ALL", "C")
        .env("SLURM_CONF", conf)
        .output()
        .expect("spawn morph");
    let status = out.status.code().unwrap_or(-1);
    let r = Run {
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        status,
    };
    assert_eq!(r.status, 0, "morph {args:?} failed:\n{}\n{}", r.stdout, r.stderr);
    r
}

#[test]
fn a_sweep_through_slurm_equals_the_local_sweep() {
    let conf = start_slurm();
    let root = sysroot();
    let dir = scratch("sweep-slurm");
    let sweep = [
        "exp",
        "sweep",
        "--root",
        root.to_str().unwrap(),
        "--keys",
        "physical,virtual",
        "--aslr",
        "none;1",
        "--workloads",
        "seed:2",
        "--runs",
        "1",
        "--quiet",
    ];
    let work = dir.join("work");
    let w = work.to_str().unwrap();
    let slurm = [&sweep[..], &["--slurm", "--slurm-max-parallel", "2", "--work-dir", w, "--csv", "slurm.csv"]].concat();
    let r = morph_slurm(&slurm, &dir, &conf);
    morph_slurm(&[&sweep[..], &["--csv", "local.csv", "--jobs", "2"]].concat(), &dir, &conf);
    let local = sweep_counts(&dir.join("local.csv"));
    assert_eq!(local.len(), 1 + 4);
    assert_eq!(sweep_counts(&dir.join("slurm.csv")), local, "Slurm and local sweeps differ");
    // The work directory: the plan, the batch script, one result and one log per task.
    assert!(work.join("plan.json").exists() && work.join("cell.sh").exists());
    for i in 0..4 {
        assert!(work.join(format!("cells/cell-{i:06}.json")).exists(), "no result of cell {i}");
        assert!(work.join(format!("logs/cell-{i}.out")).exists(), "no log of task {i}");
    }
    let log = std::fs::read_to_string(work.join("logs/cell-3.out")).unwrap();
    assert!(log.contains("cell 3 (virtual|1|50|64M|seed:2|1)"), "{log}");
    // Again with the same work directory: every cell has its result, nothing is submitted,
    // the merge is the same.
    std::fs::remove_file(work.join("logs/cell-0.out")).unwrap();
    let again = morph_slurm(&slurm, &dir, &conf);
    assert_eq!(again.stdout, r.stdout);
    assert!(!work.join("logs/cell-0.out").exists(), "a cell with a result was submitted again");
    assert_eq!(sweep_counts(&dir.join("slurm.csv")), local);
}
