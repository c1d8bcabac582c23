//! The `morph` command line (see the CLI contract in `docs/design.md`).
#![recursion_limit = "256"]

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand, ValueEnum};
use morph_os::layout::{Aslr, Kernel};
use morph_os::{Config, ExitStatus, Machine};

mod exp;
mod meta;

/// Exit status for morph's own usage and load errors.
const EXIT_MORPH: u8 = 125;

#[derive(Parser)]
#[command(
    name = "morph",
    version = meta::VERSION,
    about = "An IA-32 Linux user-mode machine with a Code Morphing-style dynamic binary translator"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run a 32-bit Linux program.
    Run(RunArgs),
    /// Experiments: the 2005 randomize_va_space slowdown reproduced (`seed`), sweeps.
    #[command(subcommand)]
    Exp(exp::ExpCmd),
    /// Assemble (on first use) or locate the Debian i386 sysroot; prints its path.
    Sysroot {
        /// Cache directory (default: $MORPH_CACHE, $XDG_CACHE_HOME/morph or ~/.cache/morph).
        #[arg(long)]
        cache: Option<PathBuf>,
        /// Comma-separated Debian packages to install (default: busybox-static,libc6,bash,coreutils).
        #[arg(long)]
        packages: Option<String>,
    },
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
enum Engine {
    /// The reference interpreter.
    Interp,
    /// Interpret, then translate hot blocks.
    Dbt,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
enum FlagFree {
    /// `loop` on AMD hosts, `jrcxz` on others.
    Auto,
    /// `loop`, falling through when the test passes.
    Loop,
    /// `jrcxz`, taken when the test passes.
    Jrcxz,
}

impl FlagFree {
    /// `EngineConfig::slow_loop`: `None` leaves the choice to the host.
    fn slow_loop(self) -> Option<bool> {
        match self {
            FlagFree::Auto => None,
            FlagFree::Loop => Some(false),
            FlagFree::Jrcxz => Some(true),
        }
    }
}

#[derive(Clone, Copy, ValueEnum)]
enum KernelArg {
    #[value(name = "2.6.12")]
    Linux2612,
    Modern,
}

#[derive(clap::Args)]
struct RunArgs {
    /// Execution engine (the translator by default; `interp` is the reference
    /// interpreter, some 20-40 times slower).
    #[arg(long, value_enum, default_value = "dbt")]
    engine: Engine,
    /// Translation cache key policy (dbt engine).
    #[arg(long, default_value = "physical", value_parser = key_parser())]
    key: morph_dbt::KeyPolicy,
    /// Executions of a block before it is translated (dbt engine).
    #[arg(long, default_value_t = morph_dbt::DEFAULT_THRESHOLD)]
    threshold: u32,
    /// Executions a block counts, besides its own, when it runs in another address space
    /// than the last one to run it: `--space-credit 50` (the threshold) translates code
    /// at its first run in a second process, such as the start-up every exec of a
    /// program repeats (dbt engine; 0: none).
    #[arg(long, default_value_t = 0)]
    space_credit: u32,
    /// Do not chain translated blocks (dbt engine).
    #[arg(long)]
    no_chain: bool,
    /// Predict returns with a return stack (guest calls paired with host calls and
    /// returns) instead of the jump cache (dbt engine).
    #[arg(long)]
    ras: bool,
    /// Do not check an indirect branch's predicted target inline: every indirect branch
    /// takes the jump cache (dbt engine).
    #[arg(long)]
    no_ic: bool,
    /// Do not look indirect-branch targets up in the indirect-branch table (one entry per
    /// guest address): every indirect branch takes the jump cache (dbt engine).
    #[arg(long)]
    no_ibt: bool,
    /// Do not run counted loops (a self-loop whose trip count is known at entry) as a
    /// clean copy with the count added at entry: every loop counts and checks its budget
    /// on its back edge (dbt engine).
    #[arg(long)]
    no_counted_loops: bool,
    /// How translated code branches on its flag-free tests (an inline cache's target, a
    /// PC thunk's bytes): `loop` falling through on a hit, or `jrcxz` taken on it; `auto`
    /// picks `loop` on AMD hosts (one µop there) and `jrcxz` on others (dbt engine).
    #[arg(long, value_enum, default_value_t = FlagFree::Auto)]
    flag_free_branch: FlagFree,
    /// Check every chained edge into another page at its target (the mapping and EIP it
    /// was chained for), as in multi-process runs, instead of chaining such edges past
    /// the check and unlinking them when the mapping changes (dbt engine).
    #[arg(long)]
    check_far_edges: bool,
    /// Place translations at pseudo-random distances (0-63 bytes) drawn from this seed
    /// instead of back to back, to average host code placement out of measurements
    /// (dbt engine; the guest sees no difference; see docs/experiments.md).
    #[arg(long, value_name = "SEED")]
    layout_seed: Option<u64>,
    /// Translation cache capacity: bytes with an optional K, M or G suffix, or `crusoe`
    /// (14 MiB, the Crusoe's); the whole cache is flushed when it is full (dbt engine).
    #[arg(long, value_name = "BYTES", default_value = "64M", value_parser = morph_dbt::parse_tc_size)]
    tc_size: usize,
    /// Keep translations of file-backed code in DIR across runs, and load them at a
    /// block's first execution (dbt engine; made 0700 with a private key, shareable by
    /// concurrent runs; see docs/engine.md).
    #[arg(long, value_name = "DIR")]
    tcache_dir: Option<PathBuf>,
    /// Size limit of --tcache-dir: bytes with an optional K, M or G suffix; least
    /// recently used module files are evicted beyond it.
    #[arg(long, value_name = "BYTES", default_value = "256M", value_parser = morph_dbt::parse_tc_size)]
    tcache_size: usize,
    /// With --tcache-dir, also keep the blocks of file-backed code that ran at least N
    /// times but never became hot, translated at the end of the run (0: none; 1: every
    /// block that ran, so that a later run interprets nothing of it).
    #[arg(long, value_name = "N", default_value_t = 0)]
    tcache_cold: u32,

    /// Write one line per translation to FILE: code-buffer offset, size, guest EIP, guest PA,
    /// host code, file (device:inode:offset of its first byte, or -) (dbt engine; see
    /// benches/code-map.py)
    #[arg(long, value_name = "FILE")]
    code_map: Option<PathBuf>,
    /// ASLR: 0, 1, 2 (randomize_va_space of --kernel) or a comma list of stack,mmap,exec,brk,vdso.
    #[arg(long, default_value = "0")]
    aslr: String,
    /// Kernel whose behaviour is modeled: ASLR (see --aslr) and who runs first after fork
    /// (2.6.12: the child; modern: the parent).
    #[arg(long, value_enum, default_value = "modern")]
    kernel: KernelArg,
    /// The modeled CPU: tm5600 (Transmeta Crusoe, as in the 2005 report: x87 and MMX,
    /// no SSE, so SSE instructions raise SIGILL) or tm8600 (Transmeta Efficeon: adds
    /// FXSAVE, SSE and SSE2, for programs built for CPUs with SSE2). CPUID and AT_HWCAP
    /// report the model.
    #[arg(long, default_value = "tm5600", value_parser = cpu_parser())]
    cpu: morph_cpu::cpuid::Model,
    /// Seed of the machine's random number generator.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Host directory that is the guest's root file system.
    #[arg(long)]
    root: Option<PathBuf>,
    /// Print statistics to stderr at exit.
    #[arg(long)]
    stats: bool,
    /// Write statistics as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    stats_json: Option<PathBuf>,
    /// Start the guest with an empty environment instead of the host's (the guest's
    /// stack, and so its counts, depend on its environment, even on `_`, which the
    /// shell sets to the path of the morph binary).
    #[arg(long)]
    clear_env: bool,
    /// Set NAME=VALUE in the guest's environment (repeatable; after --clear-env, the
    /// guest gets only these).
    #[arg(long = "env", value_name = "NAME=VALUE")]
    env: Vec<String>,
    /// Trace system calls to stderr.
    #[arg(long)]
    strace: bool,
    /// Trace system calls to FILE (created or truncated before the guest runs).
    #[arg(long, value_name = "FILE")]
    strace_file: Option<PathBuf>,
    /// Guest physical memory limit in MiB.
    #[arg(long, default_value_t = 4096)]
    max_mem: u64,
    /// Wall-clock limit in seconds.
    #[arg(long)]
    timeout: Option<f64>,
    /// Most guest processes alive at once (fork then fails with EAGAIN).
    #[arg(long, default_value_t = morph_os::DEFAULT_MAX_PROCS as u64, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    max_procs: u64,
    /// The program (a guest path) and its arguments, passed verbatim (use `--` before a
    /// program whose name starts with `-`). Options of morph go before the program.
    #[arg(required = true, trailing_var_arg = true, value_name = "PROGRAM [ARGS]...")]
    program: Vec<String>,
}

/// The heap grown at start and made huge-page backed (virtual: untouched bytes cost
/// nothing).
const HUGE_HEAP: usize = 64 << 20;
/// A transparent huge page.
const HUGE_PAGE: usize = 2 << 20;

/// Backs the heap with transparent huge pages, where the host grants them on request
/// (`madvise` mode): a starting program has tens of thousands of blocks decoded, each a
/// few small allocations touched for the first time and then read a dozen times, far
/// apart, so with 4 KiB pages each new page of heap is a host page fault, and each read
/// likely a TLB miss. The heap is grown by `HUGE_HEAP` once (glibc's top pad) and that
/// extension advised.
///
/// The growth is made by allocating 120 KiB blocks (under the mmap threshold, so from the
/// heap) until one moves the break: the first may fit in the free space the heap's top
/// already has, and how much that is depends on what was allocated before (parsing the
/// command line). Until stop 48 one block was allocated, and when it fit, nothing was
/// advised: a python start took 5,860 host page faults instead of 3,250 and 4 % longer,
/// for one more command-line option of morph.
fn huge_heap() {
    const BLOCK: usize = 120 << 10;
    // More than the top's free space can hold: glibc grows the heap by the request and
    // its default top pad, 128 KiB, at most.
    let mut held = [std::ptr::null_mut::<libc::c_void>(); 4];
    // SAFETY: before any other thread exists. mallopt only tunes glibc's heap growth and
    // trimming; the allocations are freed before returning; madvise is given whole pages
    // of the heap's extension just made (between the break before and after the
    // allocation that moved it), which only this allocator uses.
    unsafe {
        libc::mallopt(libc::M_TOP_PAD, HUGE_HEAP as i32);
        libc::mallopt(libc::M_TRIM_THRESHOLD, (2 * HUGE_HEAP) as i32);
        for p in held.iter_mut() {
            let before = libc::sbrk(0) as usize;
            // Kept (`black_box`): the compiler may otherwise drop an allocation freed unused.
            *p = std::hint::black_box(libc::malloc(BLOCK));
            let end = libc::sbrk(0) as usize;
            if before == usize::MAX || end == usize::MAX || p.is_null() {
                break;
            }
            if end != before {
                let start = before.wrapping_add(HUGE_PAGE - 1) & !(HUGE_PAGE - 1);
                if end > start {
                    libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
                }
                break;
            }
        }
        for p in held {
            libc::free(p);
        }
    }
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { EXIT_MORPH } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    match cli.cmd {
        Cmd::Run(args) => {
            huge_heap();
            match run(args) {
                Ok(code) => code,
                Err(e) => {
                    eprintln!("morph: {}", escaped(&format!("{e:#}")));
                    ExitCode::from(EXIT_MORPH)
                }
            }
        }
        Cmd::Exp(e) => {
            // The experiments print tables: a closed stdout (`| head`) ends them as it ends
            // any Unix tool, by SIGPIPE, instead of a panic in `println!`. (Not for `run`:
            // there a guest's write to a closed pipe must come back as EPIPE to deliver the
            // guest's own SIGPIPE.)
            // SAFETY: restoring the default disposition of one signal, before any thread.
            unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
            let r = match e {
                exp::ExpCmd::Seed(a) => exp::seed(a),
                exp::ExpCmd::Sweep(a) => exp::sweep(*a),
                exp::ExpCmd::SweepCell(a) => exp::sweep_cell(a),
                exp::ExpCmd::SweepMerge(a) => exp::sweep_merge(a),
                exp::ExpCmd::Fit(a) => exp::fit(a),
            };
            match r {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("morph: {}", escaped(&format!("{e:#}")));
                    ExitCode::from(EXIT_MORPH)
                }
            }
        }
        Cmd::Sysroot { cache, packages } => match sysroot(cache, packages) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("morph: {}", escaped(&format!("{e:#}")));
                ExitCode::from(EXIT_MORPH)
            }
        },
    }
}

/// An error line with every control character (newlines, terminal escapes, bidi
/// overrides, ...) written as a Rust escape, so that names a guest chose (a crafted
/// `PT_INTERP`, a path) cannot forge lines or drive the terminal.
fn escaped(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(c, '\'' | '"') {
            out.push(c);
        } else {
            out.extend(c.escape_debug());
        }
    }
    out
}

/// Finds the guest path of the program: as given if it contains a '/', else in the
/// guest's PATH inside the root.
fn find_program(root: &std::path::Path, name: &str, cwd: &str) -> String {
    if name.contains('/') {
        return name.to_string();
    }
    for dir in ["/usr/local/bin", "/usr/bin", "/bin", "/usr/sbin", "/sbin"] {
        let guest = format!("{dir}/{name}");
        if root.join(guest.trim_start_matches('/')).is_file() {
            return guest;
        }
    }
    format!("{}/{name}", cwd.trim_end_matches('/'))
}

/// Refuses, as the guest's `execve` would (`EACCES`), a regular file the user may not
/// execute. Other problems (a missing file, a directory) are left to the loader.
fn check_executable(machine: &Machine, path: &str, cwd: &str) -> anyhow::Result<()> {
    use std::os::fd::AsRawFd;
    // O_PATH: opening a FIFO for reading would block until a writer came.
    let Ok(fd) = machine.vfs().open(cwd.as_bytes(), path.as_bytes(), libc::O_PATH, 0) else { return Ok(()) };
    let Ok(meta) = std::fs::File::from(fd.try_clone()?).metadata() else { return Ok(()) };
    if !meta.is_file() {
        return Ok(());
    }
    // SAFETY: faccessat on a descriptor we hold, with an empty path.
    let r =
        unsafe { libc::faccessat(fd.as_raw_fd(), c"".as_ptr(), libc::X_OK, libc::AT_EMPTY_PATH | libc::AT_EACCESS) };
    if r != 0 {
        anyhow::bail!("{path}: {}", std::io::Error::from_raw_os_error(libc::EACCES));
    }
    Ok(())
}

/// `path` made absolute with every symbolic link resolved, also where it does not exist
/// yet: its deepest existing ancestor canonicalized, the rest appended.
fn resolved(path: &std::path::Path) -> std::io::Result<PathBuf> {
    let abs = std::env::current_dir()?.join(path);
    let mut rest = Vec::new();
    let mut at = abs.as_path();
    loop {
        match at.canonicalize() {
            Ok(c) => return Ok(rest.iter().rev().fold(c, |p, n| p.join(n))),
            Err(e) => match (at.parent(), at.file_name()) {
                (Some(parent), Some(name)) => {
                    rest.push(name.to_owned());
                    at = parent;
                }
                _ => return Err(e),
            },
        }
    }
}

/// `--cpu`: the modeled CPUs, parsed by the CPU crate.
fn cpu_parser() -> impl clap::builder::TypedValueParser<Value = morph_cpu::cpuid::Model> {
    use clap::builder::{PossibleValuesParser, TypedValueParser};
    PossibleValuesParser::new(morph_cpu::cpuid::Model::ALL.map(|(name, _)| name))
        .try_map(|s| s.parse::<morph_cpu::cpuid::Model>())
}

/// `--key`: the engine's policies, parsed by the engine, listed with their meaning.
fn key_parser() -> impl clap::builder::TypedValueParser<Value = morph_dbt::KeyPolicy> {
    use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
    let values = morph_dbt::KeyPolicy::ALL.map(|k| PossibleValue::new(k.name()).help(k.describe()));
    PossibleValuesParser::new(values).try_map(|s| s.parse::<morph_dbt::KeyPolicy>())
}

fn run(a: RunArgs) -> anyhow::Result<ExitCode> {
    // Output files are checked before the guest runs: a typo must not cost the run.
    if let Some(f) = &a.stats_json {
        meta::check_writable("--stats-json", f)?;
    }
    if let Some(f) = &a.code_map {
        meta::check_writable("--code-map", f)?;
    }
    let engine = morph_dbt::EngineConfig {
        translate: a.engine == Engine::Dbt,
        key: a.key,
        threshold: a.threshold,
        space_credit: a.space_credit,
        chain: !a.no_chain,
        ras: a.ras,
        predict: !a.no_ic,
        ibt: !a.no_ibt,
        counted: !a.no_counted_loops,
        slow_loop: a.flag_free_branch.slow_loop(),
        unlink_far: !a.check_far_edges,
        layout_seed: a.layout_seed,
        code_map: a.code_map.clone(),
        tc_size: a.tc_size,
        tcache_dir: a.tcache_dir.clone(),
        tcache_size: a.tcache_size as u64,
        tcache_cold: a.tcache_cold,
        time_split: a.stats || a.stats_json.is_some(),
        cpu: a.cpu,
    };
    let kernel = match a.kernel {
        KernelArg::Linux2612 => Kernel::Linux2612,
        KernelArg::Modern => Kernel::Modern,
    };
    let aslr = Aslr::parse(&a.aslr, kernel).map_err(anyhow::Error::msg)?;
    let root = a.root.clone().unwrap_or_else(|| PathBuf::from("/"));
    if !root.is_dir() {
        anyhow::bail!("--root {}: not a directory", root.display());
    }
    let root = root.canonicalize()?;
    if let Some(d) = a.tcache_dir.as_ref().filter(|_| a.engine == Engine::Dbt) {
        // The cache holds host code and the key that authenticates it: a guest that could
        // read or write it could make morph run code of its choosing.
        // (With the default root `/` the guest has the user's own file access anyway.)
        let inside = |real: &std::path::Path| -> anyhow::Result<()> {
            if root != std::path::Path::new("/") && real.starts_with(&root) {
                anyhow::bail!(
                    "--tcache-dir {} is inside the guest's root {}: the guest could reach the cache",
                    real.display(),
                    root.display()
                );
            }
            Ok(())
        };
        let err = |e: std::io::Error| anyhow::anyhow!("--tcache-dir {}: {e}", d.display());
        // Checked before the directory is made, and again once it exists (`..` after a
        // component that did not exist yet).
        inside(&resolved(d).map_err(err)?)?;
        // Private: the cache's files are host code morph runs (components made here
        // are 0700; an existing directory keeps its mode).
        std::os::unix::fs::DirBuilderExt::mode(std::fs::DirBuilder::new().recursive(true), 0o700)
            .create(d)
            .map_err(err)?;
        inside(&d.canonicalize().map_err(err)?)?;
    }
    let host_cwd = std::env::current_dir()?;
    let cwd = match host_cwd.strip_prefix(&root) {
        Ok(rel) => format!("/{}", rel.display()),
        Err(_) => "/".to_string(),
    };
    let cfg = Config {
        root: root.clone(),
        seed: a.seed,
        aslr,
        aslr_mode: morph_os::layout::named_mode(&a.aslr),
        kernel,
        strace: a.strace || a.strace_file.is_some(),
        max_mem: a.max_mem << 20,
        timeout: a.timeout.map(Duration::from_secs_f64),
        max_procs: a.max_procs as usize,
        engine,
        ..Config::default()
    };
    let trace_file = a.strace_file.as_deref().map(create_trace_file).transpose()?;
    let mut machine = Machine::new(cfg)?;
    if let Some(f) = trace_file {
        machine.trace_to(Box::new(std::io::BufWriter::new(f)));
    }
    let path = find_program(&root, &a.program[0], &cwd);
    let argv: Vec<Vec<u8>> = a.program.iter().map(|s| s.as_bytes().to_vec()).collect();
    let mut envp: Vec<Vec<u8>> = if a.clear_env {
        Vec::new()
    } else {
        std::env::vars_os()
            .map(|(k, v)| {
                let mut e = k.into_encoded_bytes();
                e.push(b'=');
                e.extend_from_slice(v.as_encoded_bytes());
                e
            })
            .collect()
    };
    for kv in &a.env {
        let Some((name, _)) = kv.split_once('=') else {
            anyhow::bail!("--env {kv}: expected NAME=VALUE");
        };
        envp.retain(|e| !e.starts_with(format!("{name}=").as_bytes()));
        envp.push(kv.as_bytes().to_vec());
    }
    check_executable(&machine, &path, &cwd)?;
    // Only `--stats-json` records it (the sysroot's package list takes a while to read).
    let config = a.stats_json.is_some().then(|| run_config(&a, &root, &path, &argv));
    machine.spawn(&path, &argv, &envp, &cwd)?;
    // SIGTERM, SIGINT and SIGHUP end the run like --timeout does (shared file mappings
    // are written back when the machine is dropped), then kill morph as they would have.
    morph_os::stop::catch()?;
    let t0 = std::time::Instant::now();
    let status = match machine.run() {
        Ok(s) => s,
        Err(morph_os::RunError::Stopped(sig)) => {
            let _ = std::io::stdout().flush();
            drop(machine);
            morph_os::stop::die_of(sig)
        }
        Err(e) => return Err(e.into()),
    };
    let wall = t0.elapsed();
    let _ = std::io::stdout().flush();
    machine.save_tcache();
    if a.stats || a.stats_json.is_some() {
        let mut s = stats_json(&machine, wall);
        if a.stats {
            print_stats(&s);
        }
        if let Some(f) = &a.stats_json {
            s["config"] = config.unwrap_or_default();
            s["metadata"] = meta::metadata();
            // The guest's exit status stays the status: a failed write is reported only.
            let text = serde_json::to_string_pretty(&s).unwrap_or_default() + "\n";
            if let Err(e) = std::fs::write(f, text) {
                eprintln!("morph: --stats-json {}: cannot write: {e}", escaped(&f.display().to_string()));
            }
        }
    }
    // morph exits now: the engine's caches go with the process, not block by block.
    machine.abandon_caches();
    Ok(ExitCode::from(match status {
        ExitStatus::Code(c) => (c & 0xff) as u8,
        ExitStatus::Signal(s) => (128 + s) as u8,
    }))
}

/// The `--strace-file`, created before the guest runs; the error names it.
fn create_trace_file(f: &std::path::Path) -> anyhow::Result<std::fs::File> {
    std::fs::File::create(f).map_err(|e| {
        let msg = e.to_string();
        let msg = msg.split(" (os error").next().unwrap_or_default().to_string();
        anyhow::anyhow!("--strace-file {}: {msg}", f.display())
    })
}

/// The run's full configuration, as `--stats-json` records it under `config`.
fn run_config(a: &RunArgs, root: &std::path::Path, path: &str, argv: &[Vec<u8>]) -> serde_json::Value {
    use clap::ValueEnum;
    let name = |v: Option<clap::builder::PossibleValue>| v.map(|v| v.get_name().to_string());
    let jrcxz =
        morph_dbt::EngineConfig { slow_loop: a.flag_free_branch.slow_loop(), ..Default::default() }.uses_jrcxz();
    serde_json::json!({
        "engine": name(a.engine.to_possible_value()),
        "key": a.key.name(),
        "threshold": a.threshold,
        "space_credit": a.space_credit,
        "chain": !a.no_chain,
        "ras": a.ras,
        "ic": !a.no_ic,
        "ibt": !a.no_ibt,
        "counted_loops": !a.no_counted_loops,
        // As run: `auto` resolved for this host.
        "flag_free_branch": if jrcxz { "jrcxz" } else { "loop" },
        "unlink_far": !a.check_far_edges,
        "layout_seed": a.layout_seed,
        "tc_size": a.tc_size,
        "tcache_dir": a.tcache_dir.as_ref().map(|d| d.display().to_string()),
        "tcache_size": a.tcache_size,
        "tcache_cold": a.tcache_cold,
        "aslr": a.aslr,
        "kernel": name(a.kernel.to_possible_value()),
        "cpu": a.cpu.name(),
        "seed": a.seed,
        "root": root.display().to_string(),
        "sysroot": meta::sysroot(root),
        "max_mem_mib": a.max_mem,
        "max_procs": a.max_procs,
        "timeout_s": a.timeout,
        "clear_env": a.clear_env,
        "env": a.env,
        "program": path,
        "argv": argv.iter().map(|s| String::from_utf8_lossy(s).into_owned()).collect::<Vec<_>>(),
    })
}

fn stats_json(m: &Machine, wall: Duration) -> serde_json::Value {
    use serde_json::json;
    let i = m.engine().interp().stats;
    let e = m.engine().stats();
    let cfg = m.engine().config();
    let os = m.stats();
    let ph = m.phys().stats();
    let pc = m.page_cache().stats();
    let names = |map: &std::collections::BTreeMap<u32, u64>| -> serde_json::Map<String, serde_json::Value> {
        map.iter()
            .map(|(nr, n)| {
                // The kernel's name, implemented or not (an unimplemented call is
                // what a researcher looks up in `enosys`).
                (morph_os::syscall::strace::name_of(*nr), json!(n))
            })
            .collect()
    };
    json!({
        "wall_ns": wall.as_nanos() as u64,
        "engine": {
            "kind": if cfg.translate { "dbt" } else { "interp" },
            "key": cfg.key.name(),
            "threshold": cfg.threshold,
            "space_credit": cfg.space_credit,
            "chain": cfg.chain,
            "tc_size": cfg.tc_size,
            "lookups": e.lookups,
            "hits": e.hits,
            "misses": e.misses,
            "translations": e.translations,
            "reuses": e.reuses,
            "tcache_loads": e.tcache_loads,
            "retranslations": e.retranslations,
            "chain_patches": e.chain_patches,
            "jump_cache_hits": e.jump_cache_hits,
            "ras_misses": e.ras_misses,
            "far_chains": e.far_chains,
            "far_unchecked": e.far_unchecked,
            "far_unlinks": e.far_unlinks,
            "foreign_hits": e.foreign_hits,
            "exits_branch": e.exits[0],
            "exits_indirect": e.exits[1],
            "exits_syscall": e.exits[2],
            "exits_fault": e.exits[3],
            "exits_budget": e.exits[4],
            "exits_helper": e.exits[5],
            "invalidations": e.invalidations,
            "interp_instructions": e.interp_instructions,
            "translated_instructions": e.translated_instructions,
            "translated_guest_instructions": e.translated_guest_instructions,
            "helper_instructions": e.helper_instructions,
            "pc_thunks": e.pc_thunks,
            "credited_translations": e.credited_translations,

            "plt_calls": e.plt_calls,
            "predicted_branches": e.predicted_branches,
            "counted_loops": e.counted_loops,
            "host_faults": e.host_faults,
            "window_faults": e.window_faults,
            "blocks": e.blocks,
            "host_bytes": e.host_bytes,
            "layout_pad_bytes": e.layout_pad_bytes,
            "flushes": e.flushes,
            "interp_ns": e.interp_ns,
            "translate_ns": e.translate_ns,
            "exec_ns": e.exec_ns,
            "interp_blocks_decoded": i.blocks_decoded,
            "interp_blocks_invalidated": i.blocks_invalidated,
            "interp_blocks_rebased": i.blocks_rebased,
            "fpu_instructions": i.fpu_instructions,
            "fpu_lazy_exits": e.fpu_lazy_exits,
        },
        "tcache": m.engine().tcache_stats().map(|t| json!({
            "files_loaded": t.files_loaded,
            "loaded": t.loaded,
            "validated": t.validated,
            "rejected": t.rejected,
            "stored": t.stored,
            "cold": t.cold,
            "lost": t.lost,
            "evicted": t.evicted,
        })),
        "os": {
            "syscalls_total": os.syscalls.total(),
            "syscalls": names(&os.syscalls.by_number()),
            "enosys": names(&os.enosys),
            "os_ns": os.os_ns,
            "engine_ns": os.engine_ns,
            "idle_ns": os.idle_ns,
            "processes": os.processes,
            "execs": os.execs,
            "unsupported_clones": os.unsupported_clones,
            "threads": os.threads,
            "futex_waits": os.futex_waits,
            "futex_wakes": os.futex_wakes,
            "refused_net": os.refused_net,
        },
        "memory": {
            "frames_in_use": ph.frames_in_use,
            "frames_peak": ph.frames_peak,
            "frames_allocated": ph.frames_allocated,
            "frames_touched": ph.frames_touched,
            "address_spaces": ph.address_spaces,
            "low_windows": ph.low_windows,
            "code_writes": ph.code_writes,
            "page_cache_lookups": pc.lookups,
            "page_cache_hits": pc.hits,
            "page_cache_fills": pc.fills,
            "page_cache_files": pc.files,
            "page_cache_pages": pc.pages,
            "page_cache_reclaimed": pc.reclaimed,
        }
    })
}

fn print_stats(v: &serde_json::Value) {
    fn walk(prefix: &str, v: &serde_json::Value, out: &mut Vec<String>) {
        match v {
            serde_json::Value::Object(o) => {
                for (k, x) in o {
                    let p = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
                    walk(&p, x, out);
                }
            }
            x => out.push(format!("{prefix:<40} {x}")),
        }
    }
    let mut lines = Vec::new();
    walk("", v, &mut lines);
    eprintln!("morph stats:");
    for l in lines {
        eprintln!("  {l}");
    }
}

const MKSYSROOT: &str = include_str!("../../../guests/sysroot/mksysroot.py");

fn sysroot(cache: Option<PathBuf>, packages: Option<String>) -> anyhow::Result<()> {
    println!("{}", sysroot_path(cache, packages)?.display());
    Ok(())
}

/// Assembles (on first use) or locates the Debian i386 sysroot with the embedded
/// `mksysroot.py`, whose progress goes to stderr; returns its path.
pub(crate) fn sysroot_path(cache: Option<PathBuf>, packages: Option<String>) -> anyhow::Result<PathBuf> {
    let dir = tempfile::Builder::new().prefix("morph-mksysroot-").tempdir()?;
    let script = dir.path().join("mksysroot.py");
    std::fs::write(&script, MKSYSROOT)?;
    let mut cmd = std::process::Command::new("python3");
    cmd.arg(&script).stderr(std::process::Stdio::inherit());
    if let Some(c) = cache {
        cmd.arg("--cache").arg(c);
    }
    if let Some(p) = packages {
        cmd.arg("--packages").arg(p);
    }
    let out = cmd.output();
    drop(dir);
    let out = out.map_err(|e| anyhow::anyhow!("cannot run python3: {e}"))?;
    if !out.status.success() {
        anyhow::bail!("sysroot assembly failed");
    }
    Ok(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
}
