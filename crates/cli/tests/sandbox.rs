//! `--root DIR`: every guest path resolves inside DIR, with no escape through `..` or
//! through symbolic links, absolute or relative.

mod common;

use common::*;

#[test]
fn paths_stay_inside_the_root() {
    let base = scratch("sandbox");
    let root = base.join("root");
    std::fs::create_dir_all(root.join("bin")).unwrap();
    std::fs::create_dir_all(root.join("etc")).unwrap();
    std::fs::copy(sysroot().join("bin/busybox"), root.join("bin/busybox")).unwrap();
    std::fs::write(base.join("secret"), "host secret\n").unwrap();
    std::fs::write(root.join("etc/motd"), "inside\n").unwrap();
    let secret = base.join("secret");
    std::os::unix::fs::symlink(&secret, root.join("abs-link")).unwrap();
    std::os::unix::fs::symlink("../../secret", root.join("etc/rel-link")).unwrap();
    std::os::unix::fs::symlink("/etc/motd", root.join("motd-link")).unwrap();
    let run = |args: &[&str]| {
        let mut a = vec!["run", "--root", root.to_str().unwrap(), "/bin/busybox"];
        a.extend_from_slice(args);
        morph_raw(&a, &base)
    };
    // Plain access inside the root works, and `/` is the root.
    assert_eq!(run(&["cat", "/etc/motd"]).stdout, "inside\n");
    assert_eq!(run(&["cat", "/motd-link"]).stdout, "inside\n", "absolute links resolve inside the root");
    assert_eq!(run(&["ls", "/"]).stdout, "abs-link\nbin\netc\nmotd-link\n");
    // Escapes fail as if the host file did not exist.
    for path in ["../secret", "/../secret", "/../../../../secret", "/abs-link", "/etc/rel-link"] {
        let r = run(&["cat", path]);
        assert!(!r.stdout.contains("host secret"), "{path} escaped: {r:?}");
        assert_eq!(r.status, 1, "{path}: {r:?}");
        assert!(r.stderr.contains("No such file or directory"), "{path}: {r:?}");
    }
    // The real host path of the secret, given to the guest, is also just a guest path.
    let r = run(&["cat", secret.to_str().unwrap()]);
    assert!(!r.stdout.contains("host secret"), "{r:?}");
}
