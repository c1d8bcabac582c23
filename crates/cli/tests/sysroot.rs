//! `guests/sysroot/mksysroot.py` trusts only a Release file signed with Debian's archive
//! key: a forged mirror (here a `file://` one, so no network is needed) is refused
//! before any index or package is taken from it.

mod common;

use common::*;
use std::process::Command;

/// A mirror whose Release lists a Packages.xz of its own making (with the right
/// SHA256) that offers a fake busybox-static, and whose InRelease carries a signature
/// no Debian key made.
fn forged_mirror(dir: &std::path::Path) {
    let dists = dir.join("dists/bookworm");
    std::fs::create_dir_all(dists.join("main/binary-i386")).unwrap();
    std::fs::create_dir_all(dir.join("pool")).unwrap();
    std::fs::write(dir.join("pool/busybox.deb"), b"!<arch>\nnot a package").unwrap();
    let deb_sha = sha256(&dir.join("pool/busybox.deb"));
    let packages = format!(
        "Package: busybox-static\nVersion: 9.9\nArchitecture: i386\nFilename: pool/busybox.deb\nSize: 21\nSHA256: {deb_sha}\n\n"
    );
    let xz = dists.join("main/binary-i386/Packages.xz");
    let mut c = Command::new("xz")
        .args(["-c"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut c.stdin.take().unwrap(), packages.as_bytes()).unwrap();
    std::fs::write(&xz, c.wait_with_output().unwrap().stdout).unwrap();
    let len = std::fs::metadata(&xz).unwrap().len();
    let release = format!(
        "Origin: Debian\nSuite: stable\nCodename: bookworm\nDate: Sat, 01 Jan 2000 00:00:00 UTC\nSHA256:\n {} {len} main/binary-i386/Packages.xz\n",
        sha256(&xz)
    );
    std::fs::write(dists.join("Release"), &release).unwrap();
    let forged = format!(
        "-----BEGIN PGP SIGNED MESSAGE-----\nHash: SHA256\n\n{release}-----BEGIN PGP SIGNATURE-----\n\niQIzBAEBCAAdFiEEAAAAAAAAAAAAAAAAAAAAAAAAAAAFAmAAAAAACgkQAAAAAAAAAAAA\n=AAAA\n-----END PGP SIGNATURE-----\n"
    );
    std::fs::write(dists.join("InRelease"), forged).unwrap();
}

fn sha256(p: &std::path::Path) -> String {
    let o = Command::new("sha256sum").arg(p).output().unwrap();
    String::from_utf8(o.stdout).unwrap().split_whitespace().next().unwrap().to_string()
}

#[test]
fn a_release_without_a_debian_signature_is_refused() {
    let dir = scratch("forged-mirror");
    let mirror = dir.join("mirror");
    forged_mirror(&mirror);
    let cache = dir.join("cache");
    let script = workspace().join("guests/sysroot/mksysroot.py");
    let out = Command::new("python3")
        .arg(&script)
        .args(["--packages", "busybox-static", "--cache"])
        .arg(&cache)
        .arg("--mirror")
        .arg(format!("file://{}", mirror.display()))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("signature does not verify"), "{err}");
    assert!(!cache.join("index/bookworm-main-i386-Packages.xz").exists(), "nothing is taken from the mirror");
    assert!(!cache.join("debs/busybox.deb").exists());
}
