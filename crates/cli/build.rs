//! Records the git commit morph is built from, for `morph --version` and the metadata
//! of every output; "unknown" outside a git checkout or without git.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let s = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (!s.is_empty()).then_some(s)
}

fn main() {
    let commit = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".into());
    // No "-dirty" mark: build.rs does not rerun when a source file changes, so the mark
    // would go stale; the commit names what was checked out when HEAD last moved.
    println!("cargo:rustc-env=MORPH_GIT_COMMIT={commit}");
    // Rebuild when HEAD moves: HEAD itself (a checkout) and the refs (a commit on the
    // branch). In a worktree HEAD lives in the worktree's git dir and the refs in the
    // common one.
    for (arg, files) in [("--git-dir", &["HEAD"][..]), ("--git-common-dir", &["refs", "packed-refs"][..])] {
        if let Some(dir) = git(&["rev-parse", arg]) {
            let dir = std::path::Path::new(&dir);
            let dir = if dir.is_absolute() {
                dir.to_path_buf()
            } else {
                std::env::current_dir().map(|d| d.join(dir)).unwrap_or_else(|_| dir.to_path_buf())
            };
            for f in files {
                println!("cargo:rerun-if-changed={}", dir.join(f).display());
            }
        }
    }
    // `morph` is linked as a position-dependent executable: a PIE's 7,000 relative
    // relocations made the dynamic loader write (copy-on-write fault) every page of
    // `.data.rel.ro` at each start, ~20 page faults and 0.2-0.3 ms of every `morph run`
    // (a cold run of a dynamic hello is ~7 ms). The code stays position independent;
    // only the executable's own load address is fixed (the guest window, the code
    // cache and the heap are placed by the host as before).
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-link-arg-bin=morph=-no-pie");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
