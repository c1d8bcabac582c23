//! What a hostile guest must not reach or stall: the root's host parent through a bare
//! `..`, a FIFO opened by exec or truncate, an inherited pipe or socket nobody reads or
//! writes (and data through inherited sockets with a slow peer), host files
//! behind inherited descriptors, and the host's abstract unix socket names. The guest
//! is `guests/src/confine.c` (its default mode is also compared with native runs by
//! `guests.rs`).

mod common;

use std::io::{Read, Write};
use std::os::unix::fs::MetadataExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use common::*;

/// A scratch directory holding `root/` with the confine guest in it.
fn rooted(name: &str) -> (PathBuf, PathBuf) {
    let base = scratch(name);
    let root = base.join("root");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::copy(guests().join("confine"), root.join("confine")).unwrap();
    (base, root)
}

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: mkfifo with a valid C string.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o755) }, 0, "mkfifo {}", path.display());
}

/// Runs morph with `args`, giving up (and failing) after `limit`.
fn morph_within(args: &[&str], cwd: &Path, limit: Duration) -> Run {
    let t0 = Instant::now();
    let mut child = Command::new(morph())
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if t0.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("morph {args:?} still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    Run {
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        status: out.status.code().unwrap_or(-1),
    }
}

#[test]
fn dotdot_never_reaches_the_roots_parent() {
    let (base, root) = rooted("confine-dotdot");
    let before = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
    std::fs::File::open(&base).unwrap().set_modified(before).unwrap();
    let r =
        morph_within(&["run", "--timeout", "20", "--root", root.to_str().unwrap(), "/confine", "dotdot"], &base, LIMIT);
    assert_eq!(r.status, 0, "{r:?}");
    assert_eq!(
        r.stdout,
        "utimensat /.. nofollow: ok\n\
         utimensat (root, ..) nofollow: ok\n\
         utimensat (root, ..): ok\n\
         utimensat /../.. nofollow: ok\n\
         readlinkat (root, ..): EINVAL\n\
         lstat (root, ..): ok, the root: yes\n\
         mkdir /..: EEXIST\n\
         rmdir /..: ENOTEMPTY\n\
         rmdir /: EBUSY\n\
         symlink /..: EEXIST\n",
        "`..` at the root is the root, as in a chroot"
    );
    assert_eq!(std::fs::metadata(&base).unwrap().mtime(), 1_000_000_000, "the root's host parent was touched");
    assert_eq!(std::fs::metadata(&root).unwrap().mtime(), 1, "the calls acted on the root itself");
}

/// How long a run that must end promptly may take (a frozen machine takes for ever).
const LIMIT: Duration = Duration::from_secs(20);

#[test]
fn a_fifo_never_freezes_exec_or_truncate() {
    let (base, root) = rooted("confine-fifo");
    mkfifo(&root.join("fifo"));
    std::os::unix::fs::symlink("/fifo", root.join("fifo-link")).unwrap();
    std::fs::write(root.join("script"), "#!/fifo\n").unwrap();
    std::fs::set_permissions(root.join("script"), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let rs = root.to_str().unwrap();
    // The program itself, a link to it, a script's interpreter: morph's own error line.
    for (prog, needle) in
        [("/fifo", "/fifo: Permission denied"), ("/fifo-link", "/fifo-link: Permission denied"), ("/script", "/fifo")]
    {
        let t0 = Instant::now();
        let r = morph_within(&["run", "--timeout", "5", "--root", rs, prog], &base, LIMIT);
        assert_eq!(r.status, 125, "{prog}: {r:?}");
        assert!(r.stderr.contains(needle) && r.stderr.contains("Permission denied"), "{prog}: {r:?}");
        assert!(t0.elapsed() < Duration::from_secs(4), "{prog}: not at once ({:?})", t0.elapsed());
    }
    // PT_INTERP naming the FIFO.
    std::fs::write(root.join("dynamic"), elf_with_interp(b"/fifo")).unwrap();
    std::fs::set_permissions(root.join("dynamic"), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let r = morph_within(&["run", "--timeout", "5", "--root", rs, "/dynamic"], &base, LIMIT);
    assert_eq!(r.status, 125, "{r:?}");
    assert!(r.stderr.contains("/fifo: Permission denied"), "{r:?}");
    // A guest's execve and truncate of a FIFO (and the rest of confine's default run,
    // which guests.rs compares with native).
    let r = morph_within(&["run", "--timeout", "10", "--root", rs, "/confine"], &base, LIMIT);
    assert_eq!(r.status, 0, "{r:?}");
    for line in [
        "execve fifo: EACCES\n",
        "execve link to fifo: EACCES\n",
        "execve script run by a fifo: EACCES\n",
        "truncate fifo: EINVAL\n",
        "truncate link to fifo: EINVAL\n",
    ] {
        assert!(r.stdout.contains(line), "{line:?} not in {r:?}");
    }
}

#[test]
fn an_inherited_pipe_nobody_reads_does_not_stop_the_time_limit() {
    let dir = scratch("confine-flood");
    let prog = guests().join("confine");
    let t0 = Instant::now();
    // stdout is a pipe this test holds and never reads.
    let mut child = Command::new(morph())
        .args(["run", "--timeout", "2", "--", prog.to_str().unwrap(), "flood"])
        .current_dir(&dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if t0.elapsed() > LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("morph still running after {LIMIT:?}: the guest's write froze the machine");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut err = String::new();
    child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert_eq!(status.code(), Some(125), "{err}");
    assert_eq!(err, "morph: time limit of 2s exceeded\n");
    assert!(t0.elapsed() < Duration::from_secs(8), "took {:?}", t0.elapsed());
}

/// Waits for `child`, killing it and failing after [`LIMIT`] (`what` says what froze).
fn wait_limited(child: &mut std::process::Child, what: &str) -> std::process::ExitStatus {
    let t0 = Instant::now();
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        if t0.elapsed() > LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("still running after {LIMIT:?}: {what}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn inherited_sockets_with_a_silent_peer_do_not_stop_the_time_limit() {
    let dir = scratch("confine-socket");
    let prog = guests().join("confine");
    // stdout is a socket whose peer (this test) never reads; then stdin is one whose
    // peer never writes.
    for (mode, what) in
        [("flood", "the guest's write froze the machine"), ("copy", "the guest's read froze the machine")]
    {
        let (ours, theirs) = UnixStream::pair().unwrap();
        let (stdin, stdout) = if mode == "flood" {
            (Stdio::null(), Stdio::from(std::os::fd::OwnedFd::from(theirs)))
        } else {
            (Stdio::from(std::os::fd::OwnedFd::from(theirs)), Stdio::null())
        };
        let t0 = Instant::now();
        let mut child = Command::new(morph())
            .args(["run", "--timeout", "2", "--", prog.to_str().unwrap(), mode])
            .current_dir(&dir)
            .stdin(stdin)
            .stdout(stdout)
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let status = wait_limited(&mut child, what);
        let mut err = String::new();
        child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
        assert_eq!(status.code(), Some(125), "{mode}: {err}");
        assert_eq!(err, "morph: time limit of 2s exceeded\n", "{mode}");
        assert!(t0.elapsed() < Duration::from_secs(8), "{mode} took {:?}", t0.elapsed());
        drop(ours);
    }
}

#[test]
fn data_passes_through_inherited_sockets_with_a_slow_peer() {
    let dir = scratch("confine-socket-slow");
    let prog = guests().join("confine");
    let data: Vec<u8> = (0..3u32 << 20).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    let prog = prog.to_str().unwrap();
    for under_morph in [false, true] {
        let (mut feed, child_in) = UnixStream::pair().unwrap();
        let (mut drain, child_out) = UnixStream::pair().unwrap();
        let mut cmd = if under_morph {
            let mut c = Command::new(morph());
            c.args(["run", "--timeout", "60", "--", prog, "copy"]);
            c
        } else {
            let mut c = Command::new(prog);
            c.arg("copy");
            c
        };
        let mut child = cmd
            .current_dir(&dir)
            .stdin(Stdio::from(std::os::fd::OwnedFd::from(child_in)))
            .stdout(Stdio::from(std::os::fd::OwnedFd::from(child_out)))
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        drop(cmd); // it holds our copies of the child's ends: the reader must see the end
        // A slow writer (bursts with pauses) and a slow reader (small reads with pauses).
        let sent = data.clone();
        let writer = std::thread::spawn(move || {
            for chunk in sent.chunks(200 << 10) {
                feed.write_all(chunk).unwrap();
                std::thread::sleep(Duration::from_millis(15));
            }
            feed.shutdown(std::net::Shutdown::Write).unwrap();
        });
        let reader = std::thread::spawn(move || {
            let mut got = Vec::new();
            let mut buf = [0u8; 7000];
            for i in 0u32.. {
                let n = drain.read(&mut buf).unwrap();
                if n == 0 {
                    break;
                }
                got.extend_from_slice(&buf[..n]);
                if i % 64 == 0 {
                    std::thread::sleep(Duration::from_millis(10));
                }
            }
            got
        });
        let status = wait_limited(&mut child, "copying through sockets");
        writer.join().unwrap();
        let got = reader.join().unwrap();
        let mut err = String::new();
        child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
        assert_eq!(
            (status.code(), err.as_str()),
            (Some(0), "copy: 3145728 bytes, read ended with 0\n"),
            "morph: {under_morph}"
        );
        assert!(got == data, "morph: {under_morph}: {} bytes came back, not the {} sent", got.len(), data.len());
    }
}

#[test]
fn inherited_descriptors_are_no_handle_on_host_files() {
    let (base, root) = rooted("confine-inherited");
    let secret = base.join("secret");
    std::fs::write(&secret, "host secret\n").unwrap();
    std::fs::set_permissions(&secret, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
    let before = std::fs::metadata(&secret).unwrap();
    // Standard input is a read-only host file outside the root.
    let out = Command::new(morph())
        .args(["run", "--timeout", "20", "--root", root.to_str().unwrap(), "/confine", "inherited"])
        .current_dir(&base)
        .stdin(std::fs::File::open(&secret).unwrap())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(
        stdout,
        "readlink /proc/self/fd/0: ok \"(unreachable)/secret\"\n\
         open /proc/self/fd/0 for writing: EACCES\n\
         open /proc/self/fd/0 for reading and writing: EACCES\n\
         open /proc/self/fd/0 for appending: EACCES\n\
         open /proc/self/fd/0 for reading: ok, read 5\n\
         fchmod 0: EPERM\n\
         chmod /proc/self/fd/0: EPERM\n\
         futimens 0: EPERM\n\
         linkat 0 AT_EMPTY_PATH: EPERM\n\
         link /proc/self/fd/0: EPERM\n\
         truncate /proc/self/fd/0: ENOENT\n",
        "no more access than the descriptor has, no metadata change, no link into the root, no host path"
    );
    let after = std::fs::metadata(&secret).unwrap();
    assert_eq!(std::fs::read_to_string(&secret).unwrap(), "host secret\n");
    assert_eq!((after.mode(), after.nlink(), after.mtime()), (before.mode(), before.nlink(), before.mtime()));
    assert!(!root.join("stolen1").exists() && !root.join("stolen2").exists());
    assert!(!stdout.contains(base.to_str().unwrap()), "a host path was shown");
}

/// `/proc/sys` shows the machine's settings and nobody may change them: `--aslr` as
/// `randomize_va_space` (a mode as named; a component list as the largest mode it
/// covers), the limits morph enforces, and writes refused, `EROFS` for root (as in a
/// container whose `/proc/sys` is mounted read-only) and `EACCES` for anyone else;
/// `/proc/self/personality` after `personality(0x40008)`. The guest is
/// `guests/src/procsys.c` (its default mode is compared with native runs by `guests.rs`;
/// natively root could write these files).
#[test]
fn proc_sys_shows_the_machine_and_is_read_only() {
    let prog = guests().join("procsys");
    let prog = prog.to_str().unwrap();
    let cwd = scratch("confine-procsys");
    let shown = |flags: &[&str]| {
        let mut args = vec!["run", "--timeout", "20"];
        args.extend_from_slice(flags);
        args.extend_from_slice(&["--", prog, "--morph-only"]);
        let r = morph_within(&args, &cwd, LIMIT);
        assert_eq!(r.status, 0, "{flags:?}: {r:?}");
        r.stdout
    };
    for (flags, want) in [
        (&[][..], "0"),
        (&["--aslr", "0"][..], "0"),
        (&["--aslr", "1"][..], "1"),
        (&["--aslr", "2"][..], "2"),
        (&["--aslr", "stack,mmap,exec,vdso"][..], "1"),
        (&["--aslr", "stack,mmap,exec"][..], "0"),
        (&["--kernel", "2.6.12", "--aslr", "2"][..], "2"),
        (&["--kernel", "2.6.12", "--aslr", "1"][..], "1"),
        (&["--kernel", "2.6.12", "--aslr", "stack,mmap"][..], "1"),
    ] {
        let out = shown(flags);
        assert!(out.starts_with(&format!("randomize_va_space={want}\n")), "{flags:?}: {out}");
    }
    let out = shown(&["--max-procs", "7"]);
    let root = euid() == 0;
    let mut want = String::from(
        "randomize_va_space=0\n\
         overcommit_memory=2\n\
         threads-max=7\n\
         pid_max=4194304\n\
         osrelease=6.1.0-morph\n\
         personality after 0x40008: 00040008\n",
    );
    let refused = |who: &str, writable: &str| {
        format!(
            "{who} /proc/sys/kernel/randomize_va_space: O_WRONLY {writable} O_TRUNC EROFS access(W_OK) {writable}\n\
             {who} /proc/sys/kernel/osrelease: O_WRONLY EACCES O_TRUNC EROFS access(W_OK) EACCES\n\
             {who} /proc/sys/vm/overcommit_memory: O_WRONLY {writable} O_TRUNC EROFS access(W_OK) {writable}\n\
             {who} /proc/sys/kernel: O_WRONLY EISDIR\n"
        )
    };
    if root {
        want += &refused("root", "EROFS");
    }
    want += &refused("user", "EACCES");
    assert_eq!(out, want, "{}", diff(&want, &out));
}

/// The test's effective user id (root runs the guest as root, who then drops to 65534).
fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}
