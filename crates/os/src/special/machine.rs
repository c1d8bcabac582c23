//! The machine-wide files at `/proc`'s top level, in Linux's format: `meminfo`,
//! `uptime`, `loadavg` and `stat` (what `free`, `uptime`, `top`, `ps` and `vmstat`
//! read).
//!
//! Every number is one the machine keeps: memory from its physical frames (the
//! `--max-mem` limit, the frames in use, the page cache's), time from its clock (the
//! host's monotonic clock since the machine started, as `sysinfo` and `times` count it)
//! and from the guest instructions its processes ran (the CPU time of `times` and
//! `/proc/<pid>/stat`, at [`INSNS_PER_TICK`] a tick), counts from its process table.
//! What the machine has no notion of (swap, slab, block-device buffers, load averages,
//! interrupts) reads 0, each said where it is written.

use std::time::{Duration, Instant, SystemTime};

use morph_mem::{PageCache, PhysMem};

use super::*;
use crate::files::MachineFile;
use crate::process::INSNS_PER_TICK;

/// The machine's counters the machine-wide files report, copied when a system call's
/// context is made.
#[derive(Clone, Copy, Debug, Default)]
pub struct Counters {
    /// Host time the machine spent asleep with every process blocked.
    pub idle: Duration,
    /// Processes created since the machine started (the first one included).
    pub forks: u64,
    /// Times the scheduler switched threads.
    pub switches: u64,
    /// Guest instructions of the processes that have ended.
    pub exited_icount: u64,
    /// The last pid (or tid) handed out.
    pub last_pid: Pid,
}

/// What the machine-wide files see of the machine besides its processes.
#[derive(Clone, Copy)]
pub struct MachineView<'a> {
    /// Physical memory.
    pub phys: &'a PhysMem,
    /// The page cache.
    pub cache: &'a PageCache,
    /// When the machine started.
    pub started: Instant,
    /// Its counters.
    pub counters: Counters,
    /// Its settings, for `/proc/sys`.
    pub sysctl: super::Sysctl<'a>,
}

/// The text of a machine-wide file; `p` is the caller (not in `m.procs` while it runs).
pub(super) fn text(m: Sys<'_>, p: &Process, f: MachineFile) -> Vec<u8> {
    match f {
        MachineFile::Meminfo => meminfo(&m.machine),
        MachineFile::Uptime => uptime(&m.machine),
        MachineFile::Loadavg => loadavg(m, p),
        MachineFile::Stat => stat(m, p),
        MachineFile::Sysctl(f) => return super::sysctl::text(&m.machine.sysctl, f),
    }
    .into_bytes()
}

/// Kilobytes in `frames` frames.
fn kb(frames: u64) -> u64 {
    frames * u64::from(PAGE_SIZE) / 1024
}

/// `/proc/meminfo`, each line as Linux's `show_val_kb` prints it: the label padded to
/// 16 columns, the value right-aligned in 8, " kB".
///
/// `MemTotal` is the machine's frames (`--max-mem`), `MemFree` those not in use,
/// `Cached` the page cache's (file pages, mapped or not), `AnonPages` the other frames
/// in use; `MemAvailable` adds the page cache to the free frames, as the cache gives
/// its pages back when memory runs short. morph keeps no LRU lists: every page in use
/// counts as active. `Committed_AS` is the frames in use plus those promised to
/// demand-zero pages, which the machine refuses beyond its limit (`CommitLimit`, all
/// of memory: strict accounting, no swap). There is no swap, no block device (buffers,
/// dirty or writeback pages: writes go to the host at once), no slab, no kernel stacks
/// or page tables in guest memory, no vmalloc, no `mlock` and no shared anonymous
/// accounting: those read 0.
fn meminfo(m: &MachineView<'_>) -> String {
    let total = u64::from(m.phys.max_frames());
    let in_use = m.phys.stats().frames_in_use.min(total);
    let cached = m.cache.stats().pages.min(in_use);
    let free = total - in_use;
    let anon = in_use - cached;
    let committed = in_use + m.phys.committed_frames();
    let lines: [(&str, u64); 32] = [
        ("MemTotal", total),
        ("MemFree", free),
        ("MemAvailable", free + cached),
        ("Buffers", 0),
        ("Cached", cached),
        ("SwapCached", 0),
        ("Active", in_use),
        ("Inactive", 0),
        ("Active(anon)", anon),
        ("Inactive(anon)", 0),
        ("Active(file)", cached),
        ("Inactive(file)", 0),
        ("Unevictable", 0),
        ("Mlocked", 0),
        ("SwapTotal", 0),
        ("SwapFree", 0),
        ("Dirty", 0),
        ("Writeback", 0),
        ("AnonPages", anon),
        ("Mapped", 0),
        ("Shmem", 0),
        ("KReclaimable", 0),
        ("Slab", 0),
        ("SReclaimable", 0),
        ("SUnreclaim", 0),
        ("KernelStack", 0),
        ("PageTables", 0),
        ("CommitLimit", total),
        ("Committed_AS", committed),
        ("VmallocTotal", 0),
        ("VmallocUsed", 0),
        ("VmallocChunk", 0),
    ];
    let mut s = String::new();
    for (name, frames) in lines {
        let _ = writeln!(s, "{:<16}{:>8} kB", format!("{name}:"), kb(frames));
    }
    s
}

/// Seconds and hundredths (cut, not rounded) as Linux prints them.
fn secs(d: Duration) -> String {
    format!("{}.{:02}", d.as_secs(), d.subsec_millis() / 10)
}

/// `/proc/uptime`: the time since the machine started, and the time it spent idle
/// (asleep with every process blocked; one CPU, so at most the uptime).
fn uptime(m: &MachineView<'_>) -> String {
    let up = m.started.elapsed();
    format!("{} {}\n", secs(up), secs(m.counters.idle.min(up)))
}

/// Threads that could run now (neither blocked nor stopped; the caller is running),
/// and all threads.
fn threads(m: Sys<'_>, p: &Process) -> (usize, usize) {
    let (mut running, mut total) = (1, 1 + p.threads.len());
    running += p.threads.iter().filter(|t| t.blocked.is_none()).count();
    for q in m.procs.values() {
        total += 1 + q.threads.len();
        if !q.job.stopped {
            running += usize::from(q.blocked.is_none()) + q.threads.iter().filter(|t| t.blocked.is_none()).count();
        }
    }
    (running, total)
}

/// `/proc/loadavg`: the load averages, runnable/all threads, and the last pid handed
/// out. The machine does not sample its run queue over time, so the three averages
/// (1, 5 and 15 minutes) read 0.00.
fn loadavg(m: Sys<'_>, p: &Process) -> String {
    let (running, total) = threads(m, p);
    format!("0.00 0.00 0.00 {running}/{total} {}\n", m.machine.counters.last_pid)
}

/// `/proc/stat`, with one CPU. Its user time is the guest instructions every process
/// has run (ended ones too), in ticks of [`INSNS_PER_TICK`], as `times` counts them;
/// its idle time the machine's time asleep; system time is 0 (`times` reports none:
/// system calls are not timed in guest terms), as are nice, iowait, interrupts and
/// steal (none modeled). `btime` is when the machine started; `processes` the forks
/// since; `procs_running` the threads that could run now; `procs_blocked` counts
/// threads in uninterruptible disk waits, which the machine has none of.
fn stat(m: Sys<'_>, p: &Process) -> String {
    let icount =
        m.machine.counters.exited_icount + p.group_icount() + m.procs.values().map(Process::group_icount).sum::<u64>();
    let user = icount / INSNS_PER_TICK;
    let idle = m.machine.counters.idle.as_millis() / 10;
    let boot = SystemTime::now()
        .checked_sub(m.machine.started.elapsed())
        .and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_secs());
    let (running, _) = threads(m, p);
    let cpu = format!("{user} 0 0 {idle} 0 0 0 0 0 0");
    format!(
        "cpu  {cpu}\ncpu0 {cpu}\nintr 0\nctxt {}\nbtime {boot}\nprocesses {}\nprocs_running {running}\n\
         procs_blocked 0\nsoftirq 0 0 0 0 0 0 0 0 0 0 0\n",
        m.machine.counters.switches, m.machine.counters.forks,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meminfo_has_linux_layout() {
        let phys = PhysMem::new(64 << 20).unwrap();
        let cache = PageCache::new();
        let sysctl = super::Sysctl { randomize_va_space: 0, hostname: b"", domainname: b"", threads_max: 1 };
        let m =
            MachineView { phys: &phys, cache: &cache, started: Instant::now(), counters: Counters::default(), sysctl };
        let text = meminfo(&m);
        let first = text.lines().next().unwrap();
        assert_eq!(first, "MemTotal:          65536 kB");
        assert!(text.lines().all(|l| l.ends_with(" kB") && l.len() >= 27), "{text}");
        assert!(text.contains("\nMemFree:           65536 kB\n"));
        assert!(text.contains("\nSwapTotal:             0 kB\n"));
    }

    #[test]
    fn seconds_are_cut_to_hundredths() {
        assert_eq!(secs(Duration::from_millis(12_349)), "12.34");
        assert_eq!(secs(Duration::from_millis(5)), "0.00");
    }
}
