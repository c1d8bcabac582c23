//! morph's own resources under guests that press on them: host memory over many
//! execs, the page cache under `--max-mem`, host mapping limits, the host's floating
//! point control state, and shared file mappings when morph is killed.

mod common;

use common::*;
use std::process::Command;

/// Peak resident memory (KiB) of the morph process running `args`, with its result.
/// Measured in a child of its own (`/usr/bin/time`-like: a shell that runs morph and
/// reports its children's peak), so other tests running alongside do not count.
fn peak_rss_kib(args: &[&str]) -> (Run, u64) {
    let me = std::env::current_exe().unwrap();
    let out = Command::new(me)
        .args(["--exact", "measure_child_peak_rss", "--nocapture", "--test-threads=1"])
        .env("MORPH_MEASURE_ARGS", args.join("\u{1f}"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let line = |tag: &str| {
        text.lines()
            .find_map(|l| l.split_once(tag).map(|(_, r)| r))
            .unwrap_or_else(|| panic!("no {tag} in {text}"))
            .to_string()
    };
    let run = Run { stdout: line("STDOUT="), stderr: line("STDERR="), status: line("STATUS=").parse().unwrap() };
    (run, line("PEAK=").parse().unwrap())
}

/// The measuring side of [`peak_rss_kib`]: runs morph with the given arguments and
/// prints its peak RSS (getrusage of the children of this process: morph alone).
#[test]
fn measure_child_peak_rss() {
    let Ok(args) = std::env::var("MORPH_MEASURE_ARGS") else { return };
    let args: Vec<&str> = args.split('\u{1f}').collect();
    let o = Command::new(morph()).args(&args).output().unwrap();
    // SAFETY: an all-zero rusage is a valid value to be overwritten.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage into a local struct.
    assert_eq!(unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) }, 0);
    let one_line = |b: &[u8]| String::from_utf8_lossy(b).replace('\n', "\\n");
    println!("STDOUT={}", one_line(&o.stdout));
    println!("STDERR={}", one_line(&o.stderr));
    println!("STATUS={}", o.status.code().unwrap_or(-1));
    println!("PEAK={}", ru.ru_maxrss);
}

#[test]
fn host_memory_stays_flat_over_thousands_of_execs() {
    // The target is 10,000 execs of /bin/true under the physical key within
    // 100 MiB of host memory; 2,000 keep the test short. Frames freed by one process
    // serve the next, so the peak is the working set (~25 MiB measured for 2,000 and
    // for 10,000 execs) plus nothing per exec; when freed frames were passed over for
    // fresh ones it was 274 MiB after 2,000 execs (130 KiB per exec).
    let root = sysroot().to_str().unwrap().to_string();
    let script = "for i in $(seq 2000); do /bin/true; done; echo done";
    let args = ["run", "--root", &root, "--engine", "dbt", "--key", "physical", "/bin/bash", "-c", script];
    let (run, peak) = peak_rss_kib(&args);
    assert_eq!((run.stdout.as_str(), run.status), ("done\\n", 0), "{run:?}");
    assert!(peak < 64 << 10, "peak RSS {} MiB after 2,000 execs", peak >> 10);
}
