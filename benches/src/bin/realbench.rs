//! The real-program benchmark suite: Debian i386 programs (interpreters, shells,
//! compressors, databases, text tools) run natively, under morph and under qemu-i386,
//! side by side in one run.
//!
//! Each program runs inside a copy of the Debian i386 sysroot that morph's own
//! `morph sysroot --cache DIR --packages …` assembles (the shared test sysroot is not
//! touched): natively by `chroot`, under `morph run --root` (translator, physical key;
//! the fork/exec workload also under the virtual key), and under `qemu-i386 -L` when it
//! is installed (not for the fork/exec workload: qemu-user's `execve` hands the new
//! program to the host kernel, which runs i386 code natively, so its time would not be
//! qemu's). Every run's stdout and exit status must equal the native run's; a difference
//! is a FAIL and the suite exits 1. Times are wall-clock medians of `--runs` runs, each
//! configuration's runs interleaved with the others' so a slow spell of the host hits
//! all columns alike; ratios are medians over native's median. One more morph run per
//! program, not timed (the engine's time split reads the clock at every change of
//! activity), writes `--stats-json`, whose interpreter and translator counters are
//! reported beside the times, with the part of that run spent interpreting and
//! translating (`cold ms`). With `--layouts`, morph's run `i` places its translations with
//! `--layout-seed i + 1`: host code runs at speeds that depend on where it sits, so the
//! medians are then over placements too (compare builds this way). With `--warm`,
//! morph also runs each program with a persistent translation cache (`--tcache-dir`)
//! primed by one unmeasured run (`morph-physical-warm`): what start-up costs once the
//! translations of an earlier run are kept. With `--against PATH` and/or `--against-args
//! "ARGS"`, a second morph (another build, or the same one with other `run` options: an
//! ablation) runs each program under the physical key too, in the same rounds, each run
//! of it beside morph's, the two in turn first (`morph-against`); a second table gives
//! per program the median over the rounds of morph's time over the second morph's in the
//! same round (paired) and the ratio of the medians: what a change did, measured in one
//! run on one machine state.
//!
//! With `--native-i686`, each program also runs natively with glibc's CPU-specific
//! functions masked (`GLIBC_TUNABLES=glibc.cpu.hwcaps=-SSE2,…`, [`I686_TUNABLES`]), so
//! that glibc takes the i686 paths morph's modeled CPU (a TM5600: no SSE) gives it
//! (`native-i686`), and a second table gives morph's median over that one: the
//! translator's overhead apart from what the modeled CPU's instruction set costs the
//! guest's C library. (Only glibc's choices are masked: a program's own CPUID checks
//! still see the host.)
//!
//! With `--profile DIR`, each program then runs once more natively and once under morph
//! (physical key, `--code-map`), each under `perf record` (into DIR), and
//! `benches/code-map.py --functions` prints where morph's time goes beside native's, by
//! guest function and by file (needs perf; see benches/README.md).
//!
//! Outputs: a table on stdout, `--csv FILE` (one row per program and configuration),
//! `--json FILE` (rows plus metadata: morph version, commit, host, sysroot packages),
//! `--svg FILE` (ratios to native with min–max whiskers, drawn with plotters).
//!
//! Usage: `benches/real.sh [--runs N] [--quick] [--only a,b] [--no-qemu] [--csv F]
//! [--json F] [--svg F] [--morph PATH] [--layouts] [--warm] [--against PATH]
//! [--against-args ARGS] [--native-i686] [--profile DIR]`; see benches/README.md.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context, bail};

/// The Debian packages the suite needs, beyond the sysroot's defaults.
const PACKAGES: &str =
    "busybox-static,libc6,bash,coreutils,python3.11-minimal,lua5.4,perl-base,gawk,sqlite3,gzip,xz-utils,bzip2,zstd";

/// One benchmark program.
struct Program {
    /// Short name (table row).
    name: &'static str,
    /// What it stresses.
    what: &'static str,
    /// Guest argv; relative paths are relative to `/bench` (every run's working
    /// directory).
    argv: &'static [&'static str],
    /// A file of `/bench` given as standard input.
    stdin: Option<&'static str>,
    /// Also run under `--key virtual` (workloads that fork and exec).
    forks: bool,
}

const PROGRAMS: &[Program] = &[
    Program {
        name: "python3",
        what: "CPython 3.11: sieve, dict, recursion, objects",
        argv: &["/usr/bin/python3.11", "-S", "pybench.py"],
        stdin: None,
        forks: false,
    },
    Program {
        name: "lua",
        what: "Lua 5.4: fib(27), table sort",
        argv: &["/usr/bin/lua5.4", "fib.lua"],
        stdin: None,
        forks: false,
    },
    Program {
        name: "perl",
        what: "Perl 5.36: regexes, hashes, sort",
        argv: &["/usr/bin/perl", "bench.pl"],
        stdin: None,
        forks: false,
    },
    Program {
        name: "bash-arith",
        what: "bash arithmetic loop (no fork)",
        argv: &["/bin/bash", "arith.sh"],
        stdin: None,
        forks: false,
    },
    Program {
        name: "bash-forkexec",
        what: "bash fork/exec loop of dynamic programs",
        argv: &["/bin/bash", "forkexec.sh"],
        stdin: None,
        forks: true,
    },
    Program {
        name: "gawk",
        what: "gawk word frequencies of 4 MiB of text",
        argv: &["/usr/bin/gawk", "-f", "wordfreq.awk", "text"],
        stdin: None,
        forks: false,
    },
    Program {
        name: "sqlite3",
        what: "SQLite: insert 60k rows, index, aggregate, join",
        argv: &["/usr/bin/sqlite3", ":memory:"],
        stdin: Some("bench.sql"),
        forks: false,
    },
    Program {
        name: "gzip",
        what: "gzip -6 of 4 MiB of text",
        argv: &["/usr/bin/gzip", "-c", "text"],
        stdin: None,
        forks: false,
    },
    Program {
        name: "gunzip",
        what: "gzip -d of the same, compressed",
        argv: &["/usr/bin/gzip", "-dc", "text.gz"],
        stdin: None,
        forks: false,
    },
    Program {
        name: "xz",
        what: "xz -1 of 1 MiB of text",
        argv: &["/usr/bin/xz", "-1", "-c", "small"],
        stdin: None,
        forks: false,
    },
    Program {
        name: "bzip2",
        what: "bzip2 of 1 MiB of text",
        argv: &["/usr/bin/bzip2", "-c", "small"],
        stdin: None,
        forks: false,
    },
    Program {
        name: "zstd",
        what: "zstd -8 of 4 MiB of text",
        argv: &["/usr/bin/zstd", "-8", "-q", "-c", "text"],
        stdin: None,
        forks: false,
    },
    Program {
        name: "sha256sum",
        what: "sha256sum of 8 × 4 MiB",
        argv: &["/usr/bin/sha256sum", "text", "text", "text", "text", "text", "text", "text", "text"],
        stdin: None,
        forks: false,
    },
    Program {
        name: "sort",
        what: "sort of 4 MiB of text by two keys",
        argv: &["/usr/bin/sort", "-k3,3", "-k1,1", "text"],
        stdin: None,
        forks: false,
    },
];

/// The workload scripts, embedded so the suite needs nothing but this binary and morph.
const SCRIPTS: &[(&str, &str)] = &[
    ("pybench.py", include_str!("../../real/pybench.py")),
    ("fib.lua", include_str!("../../real/fib.lua")),
    ("bench.pl", include_str!("../../real/bench.pl")),
    ("arith.sh", include_str!("../../real/arith.sh")),
    ("forkexec.sh", include_str!("../../real/forkexec.sh")),
    ("wordfreq.awk", include_str!("../../real/wordfreq.awk")),
    ("bench.sql", include_str!("../../real/bench.sql")),
];

/// The guest environment of every run, native and emulated.
const ENV: &[(&str, &str)] = &[("PATH", "/usr/bin:/bin"), ("LC_ALL", "C")];

struct Opts {
    morph: PathBuf,
    runs: usize,
    quick: bool,
    only: Option<Vec<String>>,
    qemu: Option<PathBuf>,
    csv: Option<PathBuf>,
    json: Option<PathBuf>,
    svg: Option<PathBuf>,
    cache: Option<PathBuf>,
    /// Run `i` of each morph configuration places its translations with `--layout-seed
    /// i + 1` (`--layouts`), so the medians are over code placements as well as runs.
    layouts: bool,
    /// Also run morph with a primed persistent translation cache (`--warm`).
    warm: bool,
    /// A second morph and the extra `run` options it gets (`--against`, `--against-args`).
    against: Option<(PathBuf, Vec<String>)>,
    /// Where `--profile` writes its perf data and code maps.
    profile: Option<PathBuf>,
    /// Also run natively with glibc's i686 functions (`--native-i686`).
    native_i686: bool,
}

/// What `native-i686` masks of the host CPU for glibc's function selection: the
/// instruction-set extensions the modeled TM5600 lacks, and the preferences glibc sets
/// for a modern Intel core (fast unaligned loads and copies, fast `rep` strings), so
/// that glibc takes the functions a guest under morph gets. (`ld.so --list-diagnostics`
/// under morph shows the guest's view: no features, no preferences; natively with
/// these masks, what remains — SSE, PCLMUL, AES, XSAVE — selects no string function
/// in i386 glibc.)
const I686_TUNABLES: &str = "glibc.cpu.hwcaps=-SSE2,-SSE3,-SSSE3,-SSE4_1,-SSE4_2,-AVX,-AVX2,-AVX512F,-AVX512BW,\
-AVX512VL,-AVX512DQ,-AVX512CD,-ERMS,-FSRM,-POPCNT,-BMI1,-BMI2,-LZCNT,-MOVBE,-FMA,-F16C,-Fast_Unaligned_Load,\
-Fast_Unaligned_Copy,-Fast_Rep_String,-Fast_Copy_Backward,-Prefer_PMINUB_for_stringop,-AVX_Fast_Unaligned_Load,\
-Prefer_No_VZEROUPPER";

const USAGE: &str = "usage: realbench [--morph PATH] [--runs N] [--quick] [--only a,b] [--no-qemu] \
[--csv FILE] [--json FILE] [--svg FILE] [--cache DIR] [--layouts] [--warm] [--against PATH] \
[--against-args ARGS] [--native-i686] [--profile DIR]";

fn parse_args() -> anyhow::Result<Opts> {
    let mut o = Opts {
        morph: PathBuf::from("target/x86_64-unknown-linux-gnu/release/morph"),
        runs: 3,
        quick: false,
        only: None,
        qemu: which("qemu-i386"),
        csv: None,
        json: None,
        svg: None,
        cache: None,
        layouts: false,
        warm: false,
        against: None,
        profile: None,
        native_i686: false,
    };
    let mut runs = None;
    let (mut against, mut against_args) = (None, None);
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut val = || it.next().with_context(|| format!("{a} needs a value\n{USAGE}"));
        match a.as_str() {
            "--morph" => o.morph = PathBuf::from(val()?),
            "--runs" => runs = Some(val()?.parse::<usize>().context("--runs N")?.max(1)),
            "--quick" => o.quick = true,
            "--only" => o.only = Some(val()?.split(',').map(String::from).collect()),
            "--no-qemu" => o.qemu = None,
            "--csv" => o.csv = Some(PathBuf::from(val()?)),
            "--json" => o.json = Some(PathBuf::from(val()?)),
            "--svg" => o.svg = Some(PathBuf::from(val()?)),
            "--cache" => o.cache = Some(PathBuf::from(val()?)),
            "--layouts" => o.layouts = true,
            "--warm" => o.warm = true,
            "--against" => against = Some(PathBuf::from(val()?)),
            "--against-args" => against_args = Some(val()?.split_whitespace().map(String::from).collect()),
            "--profile" => o.profile = Some(PathBuf::from(val()?)),
            "--native-i686" => o.native_i686 = true,
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            _ => bail!("unknown option {a}\n{USAGE}"),
        }
    }
    o.runs = runs.unwrap_or(if o.quick { 1 } else { 3 });
    if against.is_some() || against_args.is_some() {
        o.against = Some((against.unwrap_or_else(|| o.morph.clone()), against_args.unwrap_or_default()));
    }
    if let Some(only) = &o.only {
        for n in only {
            if !PROGRAMS.iter().any(|p| p.name == n) {
                bail!(
                    "--only: no program {n} (have {})",
                    PROGRAMS.iter().map(|p| p.name).collect::<Vec<_>>().join(",")
                );
            }
        }
    }
    Ok(o)
}

fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?.to_str()?.split(':').map(|d| Path::new(d).join(name)).find(|p| p.is_file())
}

/// A deterministic text of `size` bytes: lines of 3–12 words drawn from a 5,000-word
/// vocabulary of 2–9 letters, by a fixed linear congruential generator.
fn text(size: usize) -> Vec<u8> {
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = |n: u64| {
        x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        (x >> 33) % n
    };
    let vocab: Vec<Vec<u8>> = (0..5000).map(|_| (0..2 + next(8)).map(|_| b'a' + next(26) as u8).collect()).collect();
    let mut out = Vec::with_capacity(size + 128);
    while out.len() < size {
        for i in 0..3 + next(10) {
            if i > 0 {
                out.push(b' ');
            }
            out.extend_from_slice(&vocab[next(5000) as usize]);
        }
        out.push(b'\n');
    }
    out
}

/// Assembles the benchmark sysroot and writes the workloads into its `/bench`.
fn prepare(o: &Opts) -> anyhow::Result<PathBuf> {
    let cache = match &o.cache {
        Some(c) => c.clone(),
        None => default_cache()?.join("realbench"),
    };
    eprintln!("realbench: assembling the sysroot in {} (first use downloads ~40 MB)", cache.display());
    let out = Command::new(&o.morph)
        .args(["sysroot", "--packages", PACKAGES, "--cache"])
        .arg(&cache)
        .stderr(Stdio::inherit())
        .output()
        .with_context(|| format!("run {} sysroot", o.morph.display()))?;
    if !out.status.success() {
        bail!("morph sysroot failed");
    }
    let root = PathBuf::from(String::from_utf8(out.stdout)?.trim());
    let bench = root.join("bench");
    std::fs::create_dir_all(&bench)?;
    for (name, body) in SCRIPTS {
        std::fs::write(bench.join(name), body)?;
    }
    let big = text(4 << 20);
    std::fs::write(bench.join("text"), &big)?;
    std::fs::write(bench.join("small"), &big[..1 << 20])?;
    // The gunzip input: made natively once, so its bytes are gzip's own.
    let gz = run_native(&root, &["/usr/bin/gzip", "-c", "text"], None)?;
    if gz.status != 0 {
        bail!("native gzip failed: {}", String::from_utf8_lossy(&gz.stderr));
    }
    std::fs::write(bench.join("text.gz"), &gz.stdout)?;
    Ok(root)
}

fn default_cache() -> anyhow::Result<PathBuf> {
    if let Some(c) = std::env::var_os("MORPH_CACHE") {
        return Ok(PathBuf::from(c));
    }
    if let Some(x) = std::env::var_os("XDG_CACHE_HOME") {
        return Ok(PathBuf::from(x).join("morph"));
    }
    let home = std::env::var_os("HOME").context("no HOME: give --cache DIR")?;
    Ok(PathBuf::from(home).join(".cache/morph"))
}

/// What one run produced.
struct Outcome {
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    status: i32,
    secs: f64,
}

fn spawn(c: Command, root: &Path, stdin: Option<&str>) -> anyhow::Result<Outcome> {
    spawn_env(c, root, stdin, &[])
}

/// [`spawn`] with `extra` in the environment too.
fn spawn_env(mut c: Command, root: &Path, stdin: Option<&str>, extra: &[(&str, &str)]) -> anyhow::Result<Outcome> {
    c.env_clear();
    for (k, v) in ENV.iter().chain(extra) {
        c.env(k, v);
    }
    c.stdin(match stdin {
        Some(f) => Stdio::from(std::fs::File::open(root.join("bench").join(f))?),
        None => Stdio::null(),
    });
    let t0 = Instant::now();
    let out = c.output().with_context(|| format!("run {}", c.get_program().to_string_lossy()))?;
    let secs = t0.elapsed().as_secs_f64();
    use std::os::unix::process::ExitStatusExt;
    let status = out.status.code().unwrap_or_else(|| 128 + out.status.signal().unwrap_or(0));
    Ok(Outcome { stdout: out.stdout, stderr: out.stderr, status, secs })
}

/// The native run's command: `chroot ROOT env -C /bench ARGV` (in a user namespace when
/// not root).
fn native_command(root: &Path, argv: &[&str]) -> anyhow::Result<Command> {
    // SAFETY: geteuid has no preconditions.
    let root_user = unsafe { libc::geteuid() } == 0;
    let mut c = if root_user {
        Command::new(host_tool("chroot")?)
    } else {
        let mut c = Command::new(host_tool("unshare")?);
        c.args(["-r", "chroot"]);
        c
    };
    c.arg(root).args(["/usr/bin/env", "-C", "/bench"]).args(argv);
    Ok(c)
}

/// A host program, looked up in the host's PATH and sbin (the child's PATH is the guest's).
fn host_tool(name: &str) -> anyhow::Result<PathBuf> {
    which(name)
        .or_else(|| ["/usr/sbin", "/sbin"].iter().map(|d| Path::new(d).join(name)).find(|p| p.is_file()))
        .with_context(|| format!("{name} not found"))
}

/// Runs natively (see [`native_command`]).
fn run_native(root: &Path, argv: &[&str], stdin: Option<&str>) -> anyhow::Result<Outcome> {
    spawn(native_command(root, argv)?, root, stdin)
}

/// A configuration a program runs under.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Config {
    Native,
    /// Native, glibc on its i686 functions (`--native-i686`).
    NativeI686,
    MorphPhysical,
    MorphVirtual,
    /// The physical key with a persistent translation cache primed by an earlier run.
    MorphWarm,
    /// The physical key, under the second morph of `--against` (`--against-args`).
    MorphAgainst,
    Qemu,
}

impl Config {
    fn name(self) -> &'static str {
        match self {
            Config::Native => "native",
            Config::NativeI686 => "native-i686",
            Config::MorphPhysical => "morph-physical",
            Config::MorphVirtual => "morph-virtual",
            Config::MorphWarm => "morph-physical-warm",
            Config::MorphAgainst => "morph-against",
            Config::Qemu => "qemu-i386",
        }
    }
}

/// One run of a configuration: where its `--stats-json` goes (if it writes one), its
/// round (for `--layouts`), and the persistent cache of `MorphWarm`.
struct RunOf<'a> {
    stats: Option<&'a Path>,
    round: usize,
    tcache: &'a Path,
}

/// The command of a morph configuration; `extra` are more `run` options.
fn morph_command(o: &Opts, root: &Path, p: &Program, cfg: Config, run: &RunOf, extra: &[&std::ffi::OsStr]) -> Command {
    let RunOf { stats, round, tcache } = *run;
    let (bin, against) = match (&o.against, cfg) {
        (Some((bin, args)), Config::MorphAgainst) => (bin, &args[..]),
        _ => (&o.morph, &[][..]),
    };
    let mut c = Command::new(bin);
    let key = if cfg == Config::MorphVirtual { "virtual" } else { "physical" };
    c.args(["run", "--engine", "dbt", "--key", key, "--clear-env"]).args(against).args(extra);
    if cfg == Config::MorphWarm {
        c.arg("--tcache-dir").arg(tcache);
    }
    for (k, v) in ENV {
        c.arg("--env").arg(format!("{k}={v}"));
    }
    if let Some(s) = stats {
        c.arg("--stats-json").arg(s);
    }
    if o.layouts {
        c.arg("--layout-seed").arg((round + 1).to_string());
    }
    c.arg("--root").arg(root).arg("--").args(p.argv).current_dir(root.join("bench"));
    c
}

/// `--profile DIR`: program `p` once natively and once under morph (physical key, with
/// a code map), each under `perf record`, then `benches/code-map.py --functions` on the
/// two profiles. Both runs must give the native reference's output.
fn profile(o: &Opts, root: &Path, p: &Program, dir: &Path, reference: &Outcome) -> anyhow::Result<String> {
    std::fs::create_dir_all(dir)?;
    let perf = host_tool("perf")?;
    let (ndata, mdata, map) = (
        dir.join(format!("{}-native.data", p.name)),
        dir.join(format!("{}-morph.data", p.name)),
        dir.join(format!("{}.map", p.name)),
    );
    // 2 kHz: sampling's own interrupts slow a run less than at perf's default.
    let wrap = |c: &Command, out: &Path| {
        let mut w = Command::new(&perf);
        w.args(["record", "-q", "-F", "2000", "-o"]).arg(out).arg("--").arg(c.get_program()).args(c.get_args());
        if let Some(d) = c.get_current_dir() {
            w.current_dir(d);
        }
        w
    };
    let native = spawn(wrap(&native_command(root, p.argv)?, &ndata), root, p.stdin)?;
    let run = RunOf { stats: None, round: 0, tcache: dir };
    let m = morph_command(o, root, p, Config::MorphPhysical, &run, &["--code-map".as_ref(), map.as_os_str()]);
    let morph = spawn(wrap(&m, &mdata), root, p.stdin)?;
    for (what, r) in [("native", &native), ("morph", &morph)] {
        if r.stdout != reference.stdout || r.status != reference.status {
            bail!("{}: the profiled {what} run's output differs: {}", p.name, String::from_utf8_lossy(&r.stderr));
        }
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("code-map.py");
    let out = Command::new(host_tool("python3")?)
        .arg(script)
        .arg(&map)
        .arg("--functions")
        .arg(&mdata)
        .arg("--native")
        .arg(&ndata)
        .arg("--root")
        .arg(root)
        .arg("15")
        .output()
        .context("run benches/code-map.py")?;
    if !out.status.success() {
        bail!("benches/code-map.py --functions: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(format!(
        "\n== {}: {} (perf data and code map in {})\n{}",
        p.name,
        p.what,
        dir.display(),
        String::from_utf8_lossy(&out.stdout)
    ))
}

/// Runs program `p` under `cfg`.
fn run_config(o: &Opts, root: &Path, p: &Program, cfg: Config, run: &RunOf) -> anyhow::Result<Outcome> {
    match cfg {
        Config::Native => run_native(root, p.argv, p.stdin),
        Config::NativeI686 => {
            spawn_env(native_command(root, p.argv)?, root, p.stdin, &[("GLIBC_TUNABLES", I686_TUNABLES)])
        }
        Config::MorphPhysical | Config::MorphVirtual | Config::MorphWarm | Config::MorphAgainst => {
            spawn(morph_command(o, root, p, cfg, run, &[]), root, p.stdin)
        }
        Config::Qemu => {
            let mut c = Command::new(o.qemu.as_ref().context("no qemu")?);
            c.arg("-L").arg(root);
            for (k, v) in ENV {
                c.arg("-E").arg(format!("{k}={v}"));
            }
            // qemu-user opens the program by its host path; the guest's own paths are
            // looked up under -L first.
            c.arg(root.join(p.argv[0].trim_start_matches('/'))).args(&p.argv[1..]).current_dir(root.join("bench"));
            spawn(c, root, p.stdin)
        }
    }
}

/// The measured times and counters of one program under one configuration.
#[derive(serde::Serialize)]
struct Row {
    program: String,
    config: String,
    runs: usize,
    median_s: f64,
    min_s: f64,
    max_s: f64,
    /// Median over native's median (empty for native itself).
    ratio_to_native: Option<f64>,
    /// For morph under `--against`: the median over the rounds of its time over the
    /// second morph's in the same round.
    paired_over_against: Option<f64>,
    /// Of the rounds paired with the second morph, those in which morph was faster.
    paired_faster_rounds: Option<usize>,
    /// The two-sided sign test of those rounds (exact binomial, p = ½ under "no
    /// change"): the chance of a split at least this lopsided if the two were the same.
    paired_sign_p: Option<f64>,
    output_matches_native: bool,
    /// Translator and interpreter counters of one run (morph configurations only).
    counters: BTreeMap<String, u64>,
}

/// The counters of `--stats-json` reported per program.
const COUNTERS: &[(&str, &str)] = &[
    ("engine", "interp_instructions"),
    ("engine", "translated_instructions"),
    ("engine", "translated_guest_instructions"),
    ("engine", "translations"),
    ("engine", "tcache_loads"),
    ("engine", "retranslations"),
    ("engine", "chain_patches"),
    ("engine", "exits_branch"),
    ("engine", "exits_indirect"),
    ("engine", "exits_helper"),
    ("engine", "jump_cache_hits"),
    ("engine", "host_faults"),
    ("engine", "fpu_instructions"),
    ("os", "syscalls_total"),
    ("os", "execs"),
    // Where the engine's time went (host time of the counted run, not deterministic):
    // interpreting, translating, running translations.
    ("engine", "interp_ns"),
    ("engine", "translate_ns"),
    ("engine", "exec_ns"),
];

/// The two-sided exact sign test: the probability, if each of `n` rounds were equally
/// likely to go either way, of a split at least as lopsided as `k` of `n`.
fn sign_test(k: usize, n: usize) -> f64 {
    if n == 0 {
        return 1.0;
    }
    let tail = k.min(n - k);
    // C(n, i) / 2^n summed over the tail, in floating point (n is a few dozen at most).
    let mut c = 1.0_f64;
    let mut sum = 0.0;
    for i in 0..=tail {
        if i > 0 {
            c *= (n + 1 - i) as f64 / i as f64;
        }
        sum += c;
    }
    (2.0 * sum / 2f64.powi(n as i32)).min(1.0)
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 }
}

fn main() -> std::process::ExitCode {
    match real_main() {
        Ok(true) => std::process::ExitCode::SUCCESS,
        Ok(false) => std::process::ExitCode::from(1),
        Err(e) => {
            eprintln!("realbench: {e:#}");
            std::process::ExitCode::from(2)
        }
    }
}

fn real_main() -> anyhow::Result<bool> {
    let mut o = parse_args()?;
    if !o.morph.is_file() {
        bail!("{}: no morph binary (cargo build --release, or --morph PATH)", o.morph.display());
    }
    // Runs change directory: the binary's path must not be relative.
    o.morph = o.morph.canonicalize()?;
    if let Some((bin, _)) = &mut o.against {
        if !bin.is_file() {
            bail!("--against {}: no such morph binary", bin.display());
        }
        *bin = bin.canonicalize()?;
    }
    let root = prepare(&o)?;
    let progs: Vec<&Program> =
        PROGRAMS.iter().filter(|p| o.only.as_ref().is_none_or(|only| only.iter().any(|n| n == p.name))).collect();
    let tmp = tempfile::tempdir()?;
    let mut rows = Vec::new();
    let mut failures = Vec::new();
    let mut profiles = Vec::new();
    let started = Instant::now();
    for p in &progs {
        let mut cfgs = vec![Config::Native, Config::MorphPhysical];
        if o.native_i686 {
            cfgs.push(Config::NativeI686);
        }
        if o.against.is_some() {
            cfgs.push(Config::MorphAgainst);
        }
        if p.forks {
            cfgs.push(Config::MorphVirtual);
        }
        if o.warm {
            cfgs.push(Config::MorphWarm);
        }
        if !p.forks && o.qemu.is_some() {
            cfgs.push(Config::Qemu);
        }
        let reference = run_native(&root, p.argv, p.stdin)?;
        if reference.status != 0 {
            bail!(
                "{}: native run failed ({}): {}",
                p.name,
                reference.status,
                String::from_utf8_lossy(&reference.stderr)
            );
        }
        // The warm configuration's cache, primed by one unmeasured run (checked too).
        let tcache = tmp.path().join(format!("tcache-{}", p.name));
        let mut failed = |cfg: Config, r: &Outcome| {
            failures.push(format!(
                "{} under {}: status {} (native {}), stdout {} bytes (native {}){}\n  stderr: {}",
                p.name,
                cfg.name(),
                r.status,
                reference.status,
                r.stdout.len(),
                reference.stdout.len(),
                if r.stdout.len() == reference.stdout.len() { ", contents differ" } else { "" },
                String::from_utf8_lossy(&r.stderr).lines().last().unwrap_or("")
            ))
        };
        let mut ok: BTreeMap<Config, bool> = BTreeMap::new();
        if o.warm {
            let r = run_config(&o, &root, p, Config::MorphWarm, &RunOf { stats: None, round: 0, tcache: &tcache })?;
            if r.stdout != reference.stdout || r.status != reference.status {
                failed(Config::MorphWarm, &r);
                ok.insert(Config::MorphWarm, false);
            }
        }
        let mut times: BTreeMap<Config, Vec<f64>> = BTreeMap::new();
        let mut counters: BTreeMap<Config, BTreeMap<String, u64>> = BTreeMap::new();
        for round in 0..o.runs {
            // The two morphs of `--against` swap places every other round, so that
            // neither always runs on the machine state the other leaves.
            let mut order = cfgs.clone();
            if round % 2 == 1
                && let (Some(a), Some(b)) = (
                    order.iter().position(|&c| c == Config::MorphPhysical),
                    order.iter().position(|&c| c == Config::MorphAgainst),
                )
            {
                order.swap(a, b);
            }
            for &cfg in &order {
                let mut check = |r: &Outcome| {
                    let same = r.stdout == reference.stdout && r.status == reference.status;
                    if !same && ok.get(&cfg).copied().unwrap_or(true) {
                        failed(cfg, r);
                    }
                    *ok.entry(cfg).or_insert(true) &= same;
                };
                // The counters come from a run of their own, not timed: `--stats-json`
                // turns on the engine's time split, whose clock reads cost a few percent.
                if round == 0 && !matches!(cfg, Config::Native | Config::NativeI686 | Config::Qemu) {
                    let s = tmp.path().join(format!("{}-{}.json", p.name, cfg.name()));
                    check(&run_config(&o, &root, p, cfg, &RunOf { stats: Some(&s), round, tcache: &tcache })?);
                    counters.insert(cfg, read_counters(&s)?);
                }
                let r = run_config(&o, &root, p, cfg, &RunOf { stats: None, round, tcache: &tcache })?;
                check(&r);
                times.entry(cfg).or_default().push(r.secs);
            }
        }
        let native_median = median(&mut times[&Config::Native].clone());
        // Morph over the second morph round by round (`--against`): the median of those
        // ratios moves less with the machine's drift than the ratio of the medians.
        let rounds: Option<Vec<f64>> = times
            .get(&Config::MorphAgainst)
            .map(|a| times[&Config::MorphPhysical].iter().zip(a).map(|(m, a)| m / a).collect());
        let paired = rounds.clone().map(|mut r| median(&mut r));
        let faster = rounds.as_ref().map(|r| (r.iter().filter(|&&x| x < 1.0).count(), r.len()));
        for &cfg in &cfgs {
            let mut t = times[&cfg].clone();
            let m = median(&mut t);
            rows.push(Row {
                program: p.name.to_string(),
                config: cfg.name().to_string(),
                runs: t.len(),
                median_s: m,
                min_s: t[0],
                max_s: t[t.len() - 1],
                ratio_to_native: (cfg != Config::Native).then(|| m / native_median),
                paired_over_against: paired.filter(|_| cfg == Config::MorphPhysical),
                paired_faster_rounds: faster.filter(|_| cfg == Config::MorphPhysical).map(|f| f.0),
                paired_sign_p: faster.filter(|_| cfg == Config::MorphPhysical).map(|(k, n)| sign_test(k, n)),
                output_matches_native: ok[&cfg],
                counters: counters.remove(&cfg).unwrap_or_default(),
            });
        }
        if let Some(dir) = &o.profile {
            profiles.push(profile(&o, &root, p, dir, &reference)?);
        }
        eprintln!("realbench: {} done ({:.0} s so far)", p.name, started.elapsed().as_secs_f64());
    }
    print_table(&progs, &rows);
    for text in &profiles {
        print!("{text}");
    }
    if let Some((bin, args)) = &o.against {
        print_against(&progs, &rows, bin, args);
    }
    if o.native_i686 {
        print_i686(&progs, &rows);
    }
    let meta = metadata(&o, &root)?;
    if let Some(f) = &o.csv {
        write_csv(f, &rows)?;
        eprintln!("realbench: wrote {}", f.display());
    }
    if let Some(f) = &o.json {
        let v = serde_json::json!({ "metadata": meta, "rows": rows });
        std::fs::write(f, serde_json::to_string_pretty(&v)? + "\n")?;
        eprintln!("realbench: wrote {}", f.display());
    }
    if let Some(f) = &o.svg {
        plot::ratios(f, &progs.iter().map(|p| p.name).collect::<Vec<_>>(), &rows)?;
        eprintln!("realbench: wrote {}", f.display());
    }
    if !failures.is_empty() {
        println!("\nFAILURES:");
        for f in &failures {
            println!("  {f}");
        }
    }
    Ok(failures.is_empty())
}

fn read_counters(f: &Path) -> anyhow::Result<BTreeMap<String, u64>> {
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(f)?)?;
    Ok(COUNTERS
        .iter()
        .filter_map(|(sec, name)| v.get(sec)?.get(name)?.as_u64().map(|n| (name.to_string(), n)))
        .collect())
}

fn print_table(progs: &[&Program], rows: &[Row]) {
    let get = |p: &str, c: Config| row(rows, p, c);
    let ratio = |r: Option<&Row>| match r {
        Some(r) if !r.output_matches_native => "FAIL".to_string(),
        Some(r) => r.ratio_to_native.map_or_else(String::new, |x| format!("×{x:.2}")),
        None => "—".to_string(),
    };
    println!(
        "\n{:<14} {:>10} {:>10} {:>8} {:>9} {:>9} {:>10} {:>9} {:>9} {:>10} {:>12} {:>12}  what",
        "program",
        "native ms",
        "morph ms",
        "cold ms",
        "morph/nat",
        "best/best",
        "virt/nat",
        "warm/nat",
        "qemu/nat",
        "transl",
        "interp insns",
        "xlated insns"
    );
    let mut morph_ratios = Vec::new();
    let mut best_ratios = Vec::new();
    let mut qemu_ratios = Vec::new();
    let mut warm_ratios = Vec::new();
    for p in progs {
        let n = get(p.name, Config::Native);
        let m = get(p.name, Config::MorphPhysical);
        // Summaries over the runs that gave native's output only.
        let good = |r: Option<&Row>| r.filter(|r| r.output_matches_native).and_then(|r| r.ratio_to_native);
        morph_ratios.extend(good(m));
        // The fastest run over the fastest native run: a slow spell of the host (a noisy
        // VM moves medians of three by ±20 %) raises medians but rarely every run.
        let best = good(m).and(m).zip(n).map(|(m, n)| m.min_s / n.min_s);
        best_ratios.extend(best);
        qemu_ratios.extend(good(get(p.name, Config::Qemu)));
        warm_ratios.extend(good(get(p.name, Config::MorphWarm)));
        let counter = |k: &str| m.and_then(|m| m.counters.get(k)).copied();
        let c = |k: &str| counter(k).map_or_else(String::new, |v| v.to_string());
        // The cold part of the counted run: interpreting and translating.
        let cold = counter("interp_ns")
            .zip(counter("translate_ns"))
            .map_or_else(String::new, |(i, t)| format!("{:.1}", (i + t) as f64 / 1e6));
        println!(
            "{:<14} {:>10.1} {:>10.1} {:>8} {:>9} {:>9} {:>10} {:>9} {:>9} {:>10} {:>12} {:>12}  {}",
            p.name,
            n.map_or(0.0, |r| r.median_s * 1e3),
            m.map_or(0.0, |r| r.median_s * 1e3),
            cold,
            ratio(m),
            best.map_or_else(|| "—".to_string(), |b| format!("×{b:.2}")),
            ratio(get(p.name, Config::MorphVirtual)),
            ratio(get(p.name, Config::MorphWarm)),
            ratio(get(p.name, Config::Qemu)),
            c("translations"),
            c("interp_instructions"),
            c("translated_instructions"),
            p.what
        );
    }
    let summary = |v: &mut Vec<f64>| {
        if v.is_empty() {
            return "—".to_string();
        }
        let max = v.iter().copied().fold(f64::MIN, f64::max);
        format!("median ×{:.2}, max ×{max:.2}", median(v))
    };
    println!("\nmorph (dbt, physical key) / native: {}", summary(&mut morph_ratios));
    println!("  fastest run / fastest native run: {}", summary(&mut best_ratios));
    if !warm_ratios.is_empty() {
        println!("morph warm (primed --tcache-dir) / native: {}", summary(&mut warm_ratios));
    }
    if !qemu_ratios.is_empty() {
        println!("qemu-i386 / native:                 {}", summary(&mut qemu_ratios));
    }
    println!(
        "(wall-clock medians; ratios are medians over native's median, best/best the fastest run over the fastest \
         native run; — : not run)"
    );
}

/// Program `p`'s row under configuration `c`.
fn row<'a>(rows: &'a [Row], p: &str, c: Config) -> Option<&'a Row> {
    rows.iter().find(|r| r.program == p && r.config == c.name())
}

/// Morph over the second morph, per program (`--against`), from runs that gave native's
/// output: the median over the rounds of the ratio in each round (paired), and the ratio
/// of the medians.
fn print_against(progs: &[&Program], rows: &[Row], bin: &Path, args: &[String]) {
    let get = |p: &str, c: Config| row(rows, p, c);
    println!("\nmorph / against ({} {}): per program", bin.display(), args.join(" "));
    println!(
        "{:<14} {:>11} {:>11} {:>8} {:>13} {:>8} {:>7}",
        "program", "morph", "against", "paired", "median/median", "faster", "sign p"
    );
    let (mut all, mut all_paired) = (Vec::new(), Vec::new());
    for p in progs {
        let (m, a) = (get(p.name, Config::MorphPhysical), get(p.name, Config::MorphAgainst));
        let r = m.zip(a).filter(|(m, a)| m.output_matches_native && a.output_matches_native);
        match r {
            Some((m, a)) => {
                let x = m.median_s / a.median_s;
                let paired = m.paired_over_against.unwrap_or(x);
                all.push(x);
                all_paired.push(paired);
                let faster = m.paired_faster_rounds.map_or_else(String::new, |k| format!("{k}/{}", m.runs));
                let sign =
                    m.paired_sign_p.map_or_else(String::new, |p| format!("{p:.3}{}", if p < 0.05 { "*" } else { " " }));
                println!(
                    "{:<14} {:>8.1} ms {:>8.1} ms {:>7.3}× {:>12.3}× {faster:>8} {sign:>7}",
                    p.name,
                    m.median_s * 1e3,
                    a.median_s * 1e3,
                    paired,
                    x
                );
            }
            None => println!("{:<14} FAIL", p.name),
        }
    }
    if !all.is_empty() {
        let (lo, hi) = all_paired.iter().fold((f64::MAX, f64::MIN), |(l, h), &x| (l.min(x), h.max(x)));
        let faster = all_paired.iter().filter(|&&x| x < 1.0).count();
        println!(
            "median: paired ×{:.3} (×{lo:.3} to ×{hi:.3}), median/median ×{:.3}",
            median(&mut all_paired),
            median(&mut all)
        );
        println!(
            "programs faster: {faster}/{} (sign test p {:.3}); * : that program's rounds, sign test p < 0.05",
            all_paired.len(),
            sign_test(faster, all_paired.len())
        );
    }
}

/// `--native-i686`: native with glibc's i686 functions, and morph over it.
fn print_i686(progs: &[&Program], rows: &[Row]) {
    let get = |p: &str, c: Config| row(rows, p, c);
    println!("\nnative with glibc's i686 functions ({I686_TUNABLES}):");
    println!("{:<14} {:>10} {:>12} {:>10} {:>12}", "program", "native ms", "i686 ms", "i686/nat", "morph/i686");
    let mut all = Vec::new();
    for p in progs {
        let (n, i, m) =
            (get(p.name, Config::Native), get(p.name, Config::NativeI686), get(p.name, Config::MorphPhysical));
        match (n, i, m) {
            (Some(n), Some(i), Some(m)) if i.output_matches_native && m.output_matches_native => {
                let x = m.median_s / i.median_s;
                all.push(x);
                println!(
                    "{:<14} {:>10.1} {:>12.1} {:>9.2}× {:>11.2}×",
                    p.name,
                    n.median_s * 1e3,
                    i.median_s * 1e3,
                    i.median_s / n.median_s,
                    x
                );
            }
            _ => println!("{:<14} FAIL", p.name),
        }
    }
    if !all.is_empty() {
        let max = all.iter().copied().fold(f64::MIN, f64::max);
        println!("morph / native-i686: median ×{:.2}, max ×{max:.2}", median(&mut all));
    }
}

fn write_csv(f: &Path, rows: &[Row]) -> anyhow::Result<()> {
    let mut s = String::from(
        "program,config,runs,median_s,min_s,max_s,ratio_to_native,paired_over_against,paired_faster_rounds,paired_sign_p,output_matches_native",
    );
    for (_, c) in COUNTERS {
        s.push(',');
        s.push_str(c);
    }
    s.push('\n');
    for r in rows {
        s.push_str(&format!(
            "{},{},{},{:.6},{:.6},{:.6},{},{},{},{},{}",
            r.program,
            r.config,
            r.runs,
            r.median_s,
            r.min_s,
            r.max_s,
            r.ratio_to_native.map_or_else(String::new, |x| format!("{x:.4}")),
            r.paired_over_against.map_or_else(String::new, |x| format!("{x:.4}")),
            r.paired_faster_rounds.map_or_else(String::new, |x| x.to_string()),
            r.paired_sign_p.map_or_else(String::new, |x| format!("{x:.4}")),
            r.output_matches_native
        ));
        for (_, c) in COUNTERS {
            s.push(',');
            if let Some(v) = r.counters.get(*c) {
                s.push_str(&v.to_string());
            }
        }
        s.push('\n');
    }
    std::fs::write(f, s)?;
    Ok(())
}

/// What a reader needs to reproduce the numbers.
fn metadata(o: &Opts, root: &Path) -> anyhow::Result<serde_json::Value> {
    let version = Command::new(&o.morph).arg("--version").output()?;
    let cpu = std::fs::read_to_string("/proc/cpuinfo").ok().and_then(|c| {
        c.lines().find(|l| l.starts_with("model name")).map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
    });
    let packages: Vec<String> = std::fs::read_to_string(root.join(".morph-sysroot"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.strip_prefix("package ").map(String::from))
        .collect();
    let qemu = match &o.qemu {
        Some(q) => Command::new(q)
            .arg("--version")
            .output()
            .ok()
            .map(|v| String::from_utf8_lossy(&v.stdout).lines().next().unwrap_or("").to_string()),
        None => None,
    };
    Ok(serde_json::json!({
        "morph": String::from_utf8_lossy(&version.stdout).trim(),
        "runs": o.runs,
        "layouts": o.layouts,
        "quick": o.quick,
        "host_cpu": cpu,
        "host_kernel": std::fs::read_to_string("/proc/sys/kernel/osrelease").ok().map(|s| s.trim().to_string()),
        "qemu": qemu,
        "against": o.against.as_ref().map(|(bin, args)| serde_json::json!({ "morph": bin, "args": args })),
        "sysroot_packages": packages,
        "date_unix": std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?.as_secs(),
        "command": std::env::args().collect::<Vec<_>>(),
    }))
}

mod plot {
    //! The ratio plot: one group of bars per program (morph physical, morph virtual,
    //! morph warm, the second morph of `--against`, qemu-i386: those the run has), each bar the median ratio to native with a min–max whisker, and a
    //! line at ×1.
    use super::Row;
    use plotters::prelude::*;

    const SERIES: &[(&str, RGBColor)] = &[
        ("morph-physical", RGBColor(31, 119, 180)),
        ("morph-virtual", RGBColor(255, 127, 14)),
        ("morph-physical-warm", RGBColor(44, 160, 44)),
        ("morph-against", RGBColor(148, 103, 189)),
        ("qemu-i386", RGBColor(127, 127, 127)),
    ];

    /// Registers a TrueType font as plotters' "sans-serif" ($MORPH_FONT, else DejaVu
    /// Sans where Debian, Fedora or Arch put it): with the workspace's plotters, text is
    /// laid out by ab_glyph from a registered font (`morph exp` does the same).
    fn load_font() -> anyhow::Result<()> {
        let env = std::env::var("MORPH_FONT").ok();
        let paths = ["/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", "/usr/share/fonts/TTF/DejaVuSans.ttf"];
        for p in env.iter().map(String::as_str).chain(paths) {
            if let Ok(bytes) = std::fs::read(p) {
                // Plotters keeps fonts for the process's lifetime.
                let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
                if plotters::style::register_font("sans-serif", FontStyle::Normal, bytes).is_ok() {
                    return Ok(());
                }
            }
        }
        anyhow::bail!("--svg: no TrueType font for the plot's text (set MORPH_FONT or install fonts-dejavu-core)")
    }

    pub fn ratios(path: &std::path::Path, programs: &[&str], rows: &[Row]) -> anyhow::Result<()> {
        load_font()?;
        let native = |p: &str| rows.iter().find(|r| r.program == p && r.config == "native").map(|r| r.median_s);
        let top = rows
            .iter()
            .filter(|r| r.config != "native")
            .filter_map(|r| Some(r.max_s / native(&r.program)?))
            .fold(2.0f64, f64::max)
            * 1.1;
        let n = programs.len();
        let h = 120 + 40 * n as u32;
        let root = SVGBackend::new(path, (900, h)).into_drawing_area();
        root.fill(&WHITE)?;
        // Program i occupies the band [n-1-i, n-i) of the y axis, first program on top.
        let band = |i: usize| (n - 1 - i) as f64;
        let mut chart = ChartBuilder::on(&root)
            .caption("Real programs under morph and qemu-i386: wall time relative to native", ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(110)
            .build_cartesian_2d(0.0..top, 0.0..n as f64)?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .x_desc("wall time / native wall time (×; bar = median, whisker = min–max of the runs)")
            .y_labels(2 * n + 1)
            .y_label_formatter(&|y| {
                let i = y.floor();
                if (y - i - 0.5).abs() < 1e-6 && i >= 0.0 && (i as usize) < n {
                    programs[n - 1 - i as usize].to_string()
                } else {
                    String::new()
                }
            })
            .draw()?;
        // The series this run has (the warm one only with --warm).
        let series: Vec<&(&str, RGBColor)> =
            SERIES.iter().filter(|(name, _)| rows.iter().any(|r| r.config == *name)).collect();
        let bar = 0.8 / series.len().max(1) as f64;
        for (k, &&(name, color)) in series.iter().enumerate() {
            let mut any = false;
            for (i, p) in programs.iter().enumerate() {
                let Some(r) = rows.iter().find(|r| r.program == *p && r.config == name) else { continue };
                let Some(nat) = native(p) else { continue };
                any = true;
                if !r.output_matches_native {
                    let y = band(i) + 0.9 - (k as f64 + 0.5) * bar;
                    chart.draw_series(std::iter::once(Text::new(
                        "FAIL (output differs)",
                        (0.05, y),
                        ("sans-serif", 12),
                    )))?;
                    continue;
                }
                let y1 = band(i) + 0.9 - k as f64 * bar;
                let y0 = y1 - bar * 0.9;
                let (lo, mid, hi) = (r.min_s / nat, r.median_s / nat, r.max_s / nat);
                chart.draw_series(std::iter::once(Rectangle::new([(0.0, y0), (mid, y1)], color.filled())))?;
                let yc = (y0 + y1) / 2.0;
                chart
                    .draw_series(std::iter::once(PathElement::new(vec![(lo, yc), (hi, yc)], BLACK.stroke_width(1))))?;
            }
            if any {
                let c = color;
                chart
                    .draw_series(std::iter::empty::<Rectangle<(f64, f64)>>())?
                    .label(name)
                    .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], c.filled()));
            }
        }
        chart
            .draw_series(std::iter::once(PathElement::new(vec![(1.0, 0.0), (1.0, n as f64)], BLACK.stroke_width(1))))?;
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .border_style(BLACK)
            .background_style(WHITE.mix(0.9))
            .draw()?;
        root.present()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::sign_test;

    #[test]
    fn the_sign_test_is_the_exact_binomial_tail() {
        // 7 of 7 one way: 2 / 128.
        assert!((sign_test(7, 7) - 2.0 / 128.0).abs() < 1e-12);
        assert!((sign_test(0, 7) - 2.0 / 128.0).abs() < 1e-12);
        // 6 of 7: 2 * (1 + 7) / 128.
        assert!((sign_test(6, 7) - 16.0 / 128.0).abs() < 1e-12);
        // An even split is no evidence at all.
        assert_eq!(sign_test(7, 14), 1.0);
        assert_eq!(sign_test(0, 0), 1.0);
        // 12 of 14: 2 * (1 + 14 + 91) / 16384.
        assert!((sign_test(12, 14) - 212.0 / 16384.0).abs() < 1e-12);
    }
}
