//! Debian's static i386 busybox gives the same output and status under morph as natively.

mod common;

use common::*;

#[test]
fn busybox_applets_match_native() {
    let root = sysroot();
    let bb = root.join("bin/busybox");
    let dir = scratch("busybox");
    std::fs::write(dir.join("in.txt"), "pear\napple\nfig\napple\nbanana 12\n").unwrap();
    std::fs::write(dir.join("prog.awk"), "{ n += NF; s = s $1 } END { print n, length(s), toupper(s) }\n").unwrap();
    std::fs::create_dir_all(dir.join("tree/a/b")).unwrap();
    for f in ["tree/a/b/one", "tree/a/two.txt", "tree/three.txt"] {
        std::fs::write(dir.join(f), f).unwrap();
    }
    let stdin = b"hello world\nsecond line\n";
    let cases: &[&[&str]] = &[
        &["echo", "hello", "-n", "world"],
        &["cat", "in.txt"],
        &["md5sum", "in.txt"],
        &["sha256sum", "in.txt"],
        &["sort", "in.txt"],
        &["sort", "-r", "-u", "in.txt"],
        &["wc", "in.txt"],
        &["head", "-n", "2", "in.txt"],
        &["tr", "a-z", "A-Z"],
        &["seq", "3", "2", "21"],
        &["expr", "7", "*", "6"],
        &["expr", "1", "/", "0"],
        &["od", "-A", "x", "-t", "x1z", "in.txt"],
        &["awk", "-f", "prog.awk", "in.txt"],
        &["awk", "BEGIN { x = 0.1 + 0.2; printf \"%.17g %d\\n\", x, 2^31 }"],
        &["sed", "s/a/A/g; 2d", "in.txt"],
        &["find", "tree", "-name", "*.txt"],
        &["find", "tree", "-type", "d"],
        // cp copies with sendfile64 (then md5sum reads the copy).
        &["cp", "in.txt", "copy.txt"],
        &["md5sum", "copy.txt"],
        &["cat", "no-such-file"],
        &["false"],
    ];
    let mut failures = Vec::new();
    for args in cases {
        let want = native(&bb, args, &dir, stdin);
        for cfg in configs() {
            let got = emulated(&cfg, &bb, args, &dir, stdin);
            if got != want {
                failures.push(format!("busybox {args:?} {cfg:?}:\nnative {want:?}\nmorph  {got:?}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
