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
    println!("cargo:rerun-if-changed=build.rs");
}
