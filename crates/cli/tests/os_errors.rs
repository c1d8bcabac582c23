//! The errors a guest meets give the errno Linux gives (checked through the messages
//! bash and busybox print for them, and against native bash where the host can run the
//! same thing), sandbox escapes fail, limits end a run cleanly, and morph's own `/dev`
//! and `/proc` behave like Linux's.

mod common;

use common::*;
use std::path::Path;
use std::time::{Duration, Instant};

/// Runs `prog args` from the Debian sysroot under `morph run --root SYSROOT FLAGS`,
/// keeping all of stderr.
fn guest(flags: &[&str], prog: &str, args: &[&str]) -> Run {
    let root = sysroot().to_str().unwrap().to_string();
    let mut a = vec!["run", "--root", &root];
    a.extend_from_slice(flags);
    a.push(prog);
    a.extend_from_slice(args);
    // A directory of its own (tests run in parallel, and `scratch` empties it).
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    morph_raw(&a, &scratch(&format!("os_errors{n}")))
}

fn bash(flags: &[&str], script: &str) -> Run {
    guest(flags, "bash", &["-c", script])
}

fn busybox(flags: &[&str], script: &str) -> Run {
    guest(flags, "busybox", &["sh", "-c", script])
}

fn no_panic(r: &Run) {
    assert!(!r.stderr.contains("panicked"), "{r:?}");
}

/// Fixtures made by the guest itself in its /tmp, then each command run by a fresh
/// `bash -c`, its status and messages recorded.
const EXEC_ERRORS: &str = r#"
d=$(mktemp -d /tmp/os_errors.XXXXXX) && cd "$d" || exit 99
printf 'echo hello from text\n' > notelf; chmod +x notelf
printf '#!/no/such/interp\necho hi\n' > badinterp; chmod +x badinterp
printf 'echo noexec\n' > nox; chmod 644 nox
for c in ./notelf ./badinterp ./nox nosuchcmd 'kill -0 99999' ./missing; do
    bash -c "$c" 2>&1; echo "$c: $?"
done
cd / && rm -rf "$d"
"#;

const EXEC_ERRORS_WANT: &str = "hello from text
./notelf: 0
bash: line 1: ./badinterp: cannot execute: required file not found
./badinterp: 127
bash: line 1: ./nox: Permission denied
./nox: 126
bash: line 1: nosuchcmd: command not found
nosuchcmd: 127
bash: line 1: kill: (99999) - No such process
kill -0 99999: 1
bash: line 1: ./missing: No such file or directory
./missing: 127
";

#[test]
fn exec_errors_are_linux_errnos() {
    // ENOEXEC (bash then runs the file itself), ENOENT for a missing interpreter (which
    // bash 5.2 words "required file not found"), EACCES, a missing program, ESRCH.
    for flags in [&["--engine", "interp"][..], &["--engine", "dbt", "--threshold", "0"]] {
        let r = bash(flags, EXEC_ERRORS);
        no_panic(&r);
        assert_eq!((r.stdout.as_str(), r.status), (EXEC_ERRORS_WANT, 0), "{flags:?}: {r:?}");
    }
    // The same script natively, when the host's bash is the sysroot's version.
    let host = std::process::Command::new("bash").arg("--version").output();
    let same = host.is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("version 5.2.15"));
    if same {
        let n = native(Path::new("bash"), &["-c", EXEC_ERRORS], &scratch("os_errors_native"), b"");
        assert_eq!(n.stdout, EXEC_ERRORS_WANT, "native: {n:?}");
    }
}

#[test]
fn busybox_exec_errors() {
    let r = busybox(
        &[],
        "cd /tmp && printf '#!/no/such/interp\\n' > bb_bad.$$ && chmod +x bb_bad.$$ && ./bb_bad.$$; echo $?; \
         rm -f bb_bad.$$; nosuchcmd; echo $?; kill -0 99999; echo $?",
    );
    no_panic(&r);
    assert_eq!(r.stdout, "127\n127\n1\n", "{r:?}");
    assert!(r.stderr.contains("not found"), "{r:?}");
    assert!(r.stderr.contains("No such process"), "{r:?}");
}

#[test]
fn escapes_stay_inside_the_root() {
    let root = sysroot();
    let hostname = std::fs::read_to_string(root.join("etc/hostname")).unwrap();
    let r = bash(
        &[],
        r#"cd /tmp && cat ../../../../etc/hostname
d=$(mktemp -d /tmp/esc.XXXXXX) && cd "$d"
ln -s /etc/shadow shadow; cat shadow
ln -s / top; ls top/ > in_top; ls / > in_root; busybox cmp in_top in_root && echo same-root
ln -s ../../../../../../../etc top2; ls top2/hostname
cat /proc/1/cmdline; cat /dev/sda; ls /proc | busybox grep -vx 'self' | awk '$1 < 100' | wc -l
echo x > /dev/newfile; mkdir /proc/x
cd / && rm -rf "$d""#,
    );
    no_panic(&r);
    assert_eq!(r.stdout, format!("{hostname}same-root\ntop2/hostname\n0\n"), "{r:?}");
    for needle in [
        "cat: shadow: No such file or directory",
        "cat: /proc/1/cmdline: No such file or directory",
        "cat: /dev/sda: No such file or directory",
        "/dev/newfile: Permission denied",
        "mkdir: cannot create directory '/proc/x': Permission denied",
    ] {
        assert!(r.stderr.contains(needle), "{needle:?} not in {r:?}");
    }
    // Nothing was made in the sysroot's own /dev or /proc.
    assert!(!root.join("dev/newfile").exists() && !root.join("proc/x").exists());
}

#[test]
fn host_dev_and_proc_stay_hidden_without_root() {
    // With the host's / as the root, the host's /dev and /proc are still morph's, even
    // through a link that leads into them.
    let dir = scratch("hidden");
    std::os::unix::fs::symlink("/proc/1", dir.join("p1")).unwrap();
    std::os::unix::fs::symlink("/dev", dir.join("d")).unwrap();
    let bb = sysroot().join("usr/bin/busybox");
    let r = morph_raw(
        &[
            "run",
            bb.to_str().unwrap(),
            "sh",
            "-c",
            "ls /dev | tr '\\n' ' '; echo; cat /proc/1/status; cat p1/status; cat d/null; ls /proc | grep -v self | awk '$1 < 100' | wc -l",
        ],
        &dir,
    );
    no_panic(&r);
    assert_eq!(r.stdout, "fd full null ptmx pts random shm stderr stdin stdout tty urandom zero \n0\n", "{r:?}");
    assert_eq!(r.stderr.matches("No such file or directory").count(), 3, "{r:?}");
}

#[test]
fn max_procs_makes_fork_fail_with_eagain() {
    let t0 = Instant::now();
    let r = busybox(
        &["--max-procs", "5", "--timeout", "60"],
        "for i in 1 2 3 4 5 6 7 8; do sleep 1 & done; wait; echo done",
    );
    no_panic(&r);
    assert!(r.stderr.contains("can't fork: Resource temporarily unavailable"), "{r:?}");
    assert_eq!(r.status, 2, "{r:?}");
    // bash retries a failed fork after a pause, and gets on once children have ended.
    let r = bash(&["--max-procs", "3", "--timeout", "60"], "for i in 1 2 3 4; do sleep 0.2 & done; wait; echo done");
    no_panic(&r);
    assert!(r.stderr.contains("fork: retry: Resource temporarily unavailable"), "{r:?}");
    assert!(t0.elapsed() < Duration::from_secs(30), "took {:?}", t0.elapsed());
    let r = guest(&["--max-procs", "0"], "true", &[]);
    assert_eq!(r.status, 125, "{r:?}");
}

#[test]
fn max_mem_too_small_is_a_clear_error() {
    let r = bash(&["--max-mem", "1"], "echo hi");
    no_panic(&r);
    assert_eq!(r.status, 125, "{r:?}");
    assert_eq!(r.stderr.lines().count(), 1, "{r:?}");
    assert!(r.stderr.contains("out of guest memory"), "{r:?}");
    // Memory running out while the guest runs: an errno for the call that asked, or the
    // process killed as by Linux's OOM killer, with morph saying why.
    let r = bash(&["--max-mem", "24"], "x=$(head -c 50000000 /dev/zero | tr '\\0' a); echo ${#x}");
    no_panic(&r);
    assert!(r.stderr.contains("Cannot allocate memory") || r.stderr.contains("out of guest memory"), "{r:?}");
}

#[test]
fn timeout_ends_an_endless_loop() {
    for engine in ["interp", "dbt"] {
        let t0 = Instant::now();
        let r = bash(&["--engine", engine, "--timeout", "1"], "while :; do :; done");
        no_panic(&r);
        assert_eq!(r.status, 125, "{r:?}");
        assert_eq!(r.stderr, "morph: time limit of 1s exceeded\n", "{r:?}");
        assert!(t0.elapsed() < Duration::from_secs(10), "took {:?}", t0.elapsed());
    }
}

#[test]
fn dev_files() {
    let script = "echo x > /dev/null && echo null-ok; wc -c < /dev/null; head -c 5 /dev/zero | od -An -tx1; \
                  echo x > /dev/full; echo $?; test -c /dev/urandom && echo chr";
    for (name, r) in [("bash", bash(&[], script)), ("busybox", busybox(&[], script))] {
        no_panic(&r);
        assert_eq!(
            r.stdout.split_whitespace().collect::<Vec<_>>().join(" "),
            "null-ok 0 00 00 00 00 00 1 chr",
            "{name}"
        );
        assert!(r.stderr.contains("No space left on device"), "{name}: {r:?}");
    }
    let random = |seed: &str| {
        let r = bash(&["--seed", seed], "head -c 16 /dev/urandom | od -An -tx1; head -c 8 /dev/random | od -An -tx1");
        no_panic(&r);
        assert_eq!(r.stdout.split_whitespace().count(), 24, "{r:?}");
        r.stdout
    };
    assert_eq!(random("1"), random("1"), "same seed, same bytes");
    assert_ne!(random("1"), random("2"), "another seed, other bytes");
    let bb = busybox(&["--seed", "1"], "head -c 16 /dev/urandom | od -An -tx1");
    assert_eq!(bb.stdout, busybox(&["--seed", "1"], "head -c 16 /dev/urandom | od -An -tx1").stdout);
    // Standard descriptors by name, and a pipe reopened through /dev/fd.
    let r = bash(&[], "echo to-stderr > /dev/stderr; cat /dev/stdin <<< here; cat <(echo procsub)");
    assert_eq!((r.stdout.as_str(), r.stderr.as_str()), ("here\nprocsub\n", "to-stderr\n"), "{r:?}");
}

#[test]
fn proc_self() {
    let r = bash(
        &[],
        "readlink /proc/self/exe; readlink /proc/$$/exe; cat /proc/self/maps; \
         busybox grep -E '^(Name|Pid|PPid):' /proc/$$/status; busybox xargs -0 echo < /proc/self/cmdline",
    );
    no_panic(&r);
    let mut lines = r.stdout.lines();
    assert_eq!(lines.next(), Some("/usr/bin/readlink"), "{r:?}");
    assert_eq!(lines.next(), Some("/usr/bin/bash"), "{r:?}");
    let maps: Vec<&str> = r.stdout.lines().filter(|l| l.len() > 17 && l.as_bytes()[8] == b'-').collect();
    for l in &maps {
        let f: Vec<&str> = l.split_whitespace().collect();
        assert!(f.len() >= 5 && f[1].len() == 4 && f[2].len() == 8 && f[3].contains(':'), "bad maps line {l:?}");
    }
    for want in ["/usr/bin/cat", "/usr/lib/i386-linux-gnu/libc.so.6", "[heap]", "[stack]"] {
        assert!(maps.iter().any(|l| l.ends_with(want)), "{want} not in maps: {r:?}");
    }
    assert!(r.stdout.contains("Name:\tbash\nPid:\t100\nPPid:\t1\n"), "{r:?}");
    assert!(r.stdout.ends_with("\nbusybox xargs -0 echo\n"), "{r:?}");

    let r = busybox(
        &[],
        "readlink /proc/self/exe; grep -c stack /proc/self/maps; grep -q /usr/bin/busybox /proc/self/maps && echo bb; \
         cd /proc/self/fd && ls; cd /dev && cat null && ls | wc -l; ls /proc/self/",
    );
    no_panic(&r);
    assert_eq!(
        r.stdout,
        "/usr/bin/busybox\n1\nbb\n0\n1\n2\n13\ncmdline\ncomm\ncwd\nexe\nfd\nfdinfo\nmaps\npersonality\nroot\nstat\nstatus\ntask\n",
        "{r:?}"
    );
    // (`cd /proc/self/fd` went to the shell's own: `ls` lists the shell's descriptors.)
    // exec through /proc/self/exe, and a link made by readlink of /proc/self/fd.
    let r = bash(&[], "exec /proc/self/exe -c 'echo again; exec 3</etc/hostname; readlink /proc/self/fd/3'");
    assert_eq!(r.stdout, "again\n/etc/hostname\n", "{r:?}");
}

#[test]
fn file_calls() {
    // utimensat and friends, fchdir (mkdir -p goes through the tree with it), statfs.
    let r = bash(
        &[],
        r#"d=$(mktemp -d /tmp/fc.XXXXXX) && cd "$d"
touch -d @1000000000 f && stat -c %Y f
ln -s f l && touch -h -d @1000000001 l && stat -c %Y l && stat -L -c %Y l
touch -r f g && stat -c %Y g
mkdir -p a/b/c && touch a/b/c/x && busybox find a | sort | tr '\n' ' '; echo
stat -f -c %T /proc /dev/null . | tr '\n' ' '; echo
touch /dev/null 2>/dev/null; chmod 600 /dev/null; stat -L -c %a /dev/null
cd / && rm -rf "$d""#,
    );
    no_panic(&r);
    let fs = std::process::Command::new("stat").args(["-f", "-c", "%T"]).arg(sysroot().join("tmp")).output().unwrap();
    let fs = String::from_utf8_lossy(&fs.stdout).trim().to_string();
    let want = format!("1000000000\n1000000001\n1000000000\n1000000000\na a/b a/b/c a/b/c/x \nproc tmpfs {fs} \n666\n");
    assert_eq!(r.stdout, want, "{r:?}");
    assert!(r.stderr.contains("chmod: changing permissions of '/dev/null': Operation not permitted"), "{r:?}");
    // CPU times count guest instructions: the same under both engines.
    let times = |engine: &str| {
        let r = bash(
            &["--engine", engine],
            "i=0; while [ $i -lt 1000 ]; do i=$((i+1)); done; (j=0; while [ $j -lt 500 ]; do j=$((j+1)); done); times",
        );
        assert_eq!(r.status, 0, "{r:?}");
        r.stdout
    };
    let t = times("interp");
    let lines: Vec<&str> = t.lines().collect();
    assert_eq!(lines.len(), 2, "{t}");
    assert!(lines.iter().all(|l| !l.starts_with("0m0.000s") && l.ends_with(" 0m0.000s")), "self, children: {t}");
    assert_eq!(t, times("dbt"));
}

/// `--kernel 2.6.12` runs a forked child before its parent, as that kernel's scheduler
/// did; `modern` lets the parent run on. Either order is deterministic under morph.
#[test]
fn who_runs_first_after_fork_follows_the_kernel() {
    let script = "(echo child) & echo parent; wait";
    for (kernel, want) in [("2.6.12", "child\nparent\n"), ("modern", "parent\nchild\n")] {
        for engine in ["interp", "dbt"] {
            let r = bash(&["--kernel", kernel, "--engine", engine], script);
            no_panic(&r);
            assert_eq!((r.stdout.as_str(), r.status), (want, 0), "{kernel} {engine}: {r:?}");
        }
    }
}

/// `--clear-env` and `--env` give the guest exactly the environment asked for (its
/// stack, and so every count, depends on it), and a malformed `--env` is a clear error.
#[test]
fn the_guest_environment_can_be_fixed() {
    let r = guest(&["--clear-env", "--env", "A=1", "--env", "B=x=y", "--env", "A=2"], "env", &[]);
    no_panic(&r);
    assert_eq!((r.stdout.as_str(), r.status), ("B=x=y\nA=2\n", 0), "{r:?}");
    let r = guest(&["--env", "NOEQUALS"], "env", &[]);
    assert_eq!(r.status, 125, "{r:?}");
    assert!(r.stderr.contains("--env NOEQUALS: expected NAME=VALUE"), "{r:?}");
}

/// The machine has one processor (its scheduler interleaves every guest thread on one
/// host thread): `sched_getaffinity` says CPU 0, so `nproc` (affinity) and `nproc --all`
/// (glibc, without a `/sys` to read, falls back to the affinity) both say 1, whatever the
/// host has. The supplementary groups are the host user's, as the ids are: `id -G`
/// agrees with the host's own `id -G`.
#[test]
fn one_processor_and_the_host_users_groups() {
    let host = std::process::Command::new("id").arg("-G").output().expect("the host's id");
    let r = bash(&[], "nproc; nproc --all; id -G");
    no_panic(&r);
    assert_eq!(r.stdout, format!("1\n1\n{}", String::from_utf8_lossy(&host.stdout)), "{r:?}");
    assert_eq!(r.status, 0, "{r:?}");
}
