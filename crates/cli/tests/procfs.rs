//! morph's machine-wide `/proc` files (`meminfo`, `uptime`, `loadavg`, `stat`) as
//! Debian's static i386 busybox reads them: `free`, `uptime`, `top -n1 -b` and `ps`
//! exit 0 with well-formed output, and the numbers are the machine's: `MemTotal` is
//! the `--max-mem` limit, the load line counts the machine's own threads and pids.
//! (Their values differ from a native run's by nature, so they are checked for form
//! and for what the machine knows, not compared with the host.)

mod common;

use common::*;

/// The machine's memory limit for these runs, in MiB, and the same in kB.
const MEM_MIB: u64 = 256;
const MEM_KB: u64 = MEM_MIB * 1024;

/// Runs `busybox ARGS` under morph (with `flags` and the memory limit); it must exit 0
/// and say nothing on stderr.
fn busybox(flags: &[&str], args: &[&str]) -> String {
    static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let bb = sysroot().join("bin/busybox");
    // A directory of its own: the tests run in parallel.
    let dir = scratch(&format!("procfs-{}", RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)));
    let mem = MEM_MIB.to_string();
    let mut all = vec!["--max-mem", mem.as_str()];
    all.extend_from_slice(flags);
    let r = emulated(&all, &bb, args, &dir, b"");
    assert_eq!(r.status, 0, "busybox {args:?} {flags:?}: {r:?}");
    assert_eq!(r.stderr, "", "busybox {args:?} {flags:?}: {r:?}");
    r.stdout
}

/// The whitespace-separated numbers of `line` after its label (`Mem:` ...).
fn numbers(line: &str) -> Vec<u64> {
    line.split_whitespace().skip(1).map(|w| w.trim_end_matches('K').parse().unwrap_or(u64::MAX)).collect()
}

#[test]
fn meminfo_is_the_machines_memory() {
    for flags in [&[][..], &["--engine", "interp"]] {
        let text = busybox(flags, &["cat", "/proc/meminfo"]);
        let lines: Vec<&str> = text.lines().collect();
        // Linux's layout: the label padded to 16 columns, the value in 8, " kB".
        assert_eq!(lines[0], format!("MemTotal:       {MEM_KB:>8} kB"), "{text}");
        for l in &lines {
            let (label, rest) = l.split_at(16);
            assert!(label.trim_end().ends_with(':'), "{l:?}");
            assert!(rest.ends_with(" kB") && rest.len() >= 11, "{l:?}");
        }
        let value = |name: &str| -> u64 {
            let l =
                lines.iter().find(|l| l.starts_with(&format!("{name}:"))).unwrap_or_else(|| panic!("{name} in {text}"));
            l[16..l.len() - 3].trim().parse().unwrap()
        };
        let (free, avail, cached) = (value("MemFree"), value("MemAvailable"), value("Cached"));
        assert!(free > 0 && free < MEM_KB, "{text}");
        assert!(avail >= free && avail <= MEM_KB, "{text}");
        assert!(cached > 0, "busybox's own pages are in the page cache: {text}");
        assert_eq!(value("AnonPages") + cached + free, MEM_KB, "{text}");
        assert_eq!((value("SwapTotal"), value("SwapFree"), value("Buffers")), (0, 0, 0), "{text}");
        assert_eq!(value("CommitLimit"), MEM_KB, "{text}");
    }
}

#[test]
fn busybox_free_uptime_top_and_ps_run() {
    for flags in [&[][..], &["--engine", "interp"]] {
        // free: total in KiB is the limit; used + free + buff/cache = total.
        let out = busybox(flags, &["free"]);
        let mut lines = out.lines();
        let head: Vec<&str> = lines.next().unwrap_or_default().split_whitespace().collect();
        assert_eq!(head, ["total", "used", "free", "shared", "buff/cache", "available"], "{out}");
        let mem = numbers(lines.next().unwrap_or_default());
        assert_eq!(mem.len(), 6, "{out}");
        assert_eq!(mem[0], MEM_KB, "{out}");
        assert_eq!(mem[1] + mem[2] + mem[4], mem[0], "{out}");
        assert_eq!(numbers(lines.next().unwrap_or_default()), [0, 0, 0], "swap: {out}");

        // uptime: just started, no load.
        let out = busybox(flags, &["uptime"]);
        assert!(out.contains(" up ") && out.trim_end().ends_with("load average: 0.00, 0.00, 0.00"), "{out}");

        // top: memory, CPU and load lines, then itself in the process list.
        let out = busybox(flags, &["top", "-n1", "-b"]);
        let lines: Vec<&str> = out.lines().collect();
        assert!(lines[0].starts_with("Mem: ") && lines[0].contains("K used, "), "{out}");
        let used_free = numbers(&lines[0].replace(',', " "));
        assert_eq!(used_free[0] + used_free[2], MEM_KB, "used + free: {out}");
        assert!(lines[1].starts_with("CPU:") && lines[1].contains("% idle"), "{out}");
        let load: Vec<&str> = lines[2].split_whitespace().collect();
        assert_eq!(load[..4], ["Load", "average:", "0.00", "0.00"], "{out}");
        // runnable/total threads: top itself alone; the last pid is its own (the first).
        assert_eq!(load[5..], ["1/1", "100"], "{out}");
        assert!(lines[3].split_whitespace().eq(["PID", "PPID", "USER", "STAT", "VSZ", "%VSZ", "%CPU", "COMMAND"]));
        assert!(
            lines[4].trim_start().starts_with("100 ") && lines[4].contains(" R ") && lines[4].contains("top -n1 -b")
        );

        // ps: itself.
        let out = busybox(flags, &["ps"]);
        let lines: Vec<&str> = out.lines().collect();
        assert!(lines[0].split_whitespace().eq(["PID", "USER", "COMMAND"]), "{out}");
        assert!(lines[1].trim_start().starts_with("100 ") && lines[1].ends_with(" ps"), "{out}");
    }
}

#[test]
fn uptime_loadavg_and_stat_have_linux_form() {
    let out = busybox(&[], &["cat", "/proc/uptime", "/proc/loadavg", "/proc/stat"]);
    let lines: Vec<&str> = out.lines().collect();
    // uptime: "secs.hh idle.hh", idle at most the uptime.
    let up: Vec<f64> = lines[0].split(' ').map(|w| w.parse().unwrap()).collect();
    assert!(lines[0].split(' ').all(|w| w.split_once('.').is_some_and(|(_, f)| f.len() == 2)), "{out}");
    assert!(up.len() == 2 && up[1] <= up[0] && up[0] < 600.0, "{out}");
    assert_eq!(lines[1], "0.00 0.00 0.00 1/1 100", "{out}");
    let stat = &lines[2..];
    let cpu: Vec<&str> = stat[0].split(' ').collect();
    assert_eq!(cpu[..2], ["cpu", ""], "two spaces after cpu: {out}");
    assert_eq!(cpu.len(), 12, "{out}");
    assert!(stat[1].starts_with("cpu0 ") && stat[1].split(' ').count() == 11, "{out}");
    for key in ["intr ", "ctxt ", "btime ", "processes 1", "procs_running 1", "procs_blocked 0", "softirq "] {
        assert!(stat.iter().any(|l| l.starts_with(key)), "{key}: {out}");
    }
    // The listing of /proc names them.
    let ls = busybox(&[], &["ls", "/proc"]);
    for f in ["loadavg", "meminfo", "self", "stat", "uptime", "100"] {
        assert!(ls.lines().any(|l| l == f), "{f} in {ls}");
    }
}
