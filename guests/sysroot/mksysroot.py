#!/usr/bin/env python3
"""Assemble a Debian i386 sysroot for morph's real-world guests.

What it does, in order:
  1. If <cache>/sysroot-<suite>-i386/.morph-sysroot lists every requested
     package, print the sysroot's path and stop (the fast path: no network).
  2. Fetch dists/<suite>/InRelease (or Release and Release.gpg), verify its
     OpenPGP signature with gpgv against Debian's archive keyring (package
     debian-archive-keyring; --keyring to choose another) and use only the
     signed text; then, unless the cached copy still matches it,
     dists/<suite>/main/binary-i386/Packages.xz (checked by SHA256 from the
     verified Release). A Release that fails verification is an error, never
     a warning.
  3. Resolve the closure of Depends + Pre-Depends of the requested packages
     (first alternative that exists; a virtual name is satisfied by a package
     already chosen, else by its first provider). Version constraints are not
     checked: a suite's index holds one version of each package.
  4. Download each .deb to <cache>/debs/ (via a .part file), checking SHA256
     and size against the index; cached .debs are checked the same way.
  5. Unpack each .deb into a scratch directory (dpkg-deb -x; without dpkg-deb,
     the ar archive is read here and its data.tar is unpacked with tar) and
     merge it into the sysroot with the merged-/usr layout: /bin, /sbin, /lib
     ... are symlinks to usr/bin, usr/sbin, usr/lib, as on a Debian 12 system
     built by debootstrap. Symlinks met while merging are resolved *inside*
     the sysroot, never on the host.
  6. Fix-ups that maintainer scripts would do: tmp, dev, proc, sys, root;
     minimal /etc/passwd, group, hostname, hosts, nsswitch.conf if absent;
     /etc/profile and root's dot files from base-files' templates; /bin/sh,
     awk and which symlinks that dash and update-alternatives would make.
  7. Write the stamp last, atomically (suite, the verified Release's date and
     signing key, and every installed package with its version), and print the
     absolute sysroot path.

A fresh sysroot is built in <sysroot>.partial and renamed into place at the end;
adding packages to an existing one re-runs the (idempotent) merge in place and
rewrites the stamp only when done, so an interrupted run is simply run again.

Only stdout carries the path; progress and errors go to stderr. Python standard
library only.
"""

import argparse
import fcntl
import hashlib
import lzma
import bz2
import gzip
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

PROG = "mksysroot"
ARCH = "i386"
DEFAULT_PACKAGES = ["busybox-static", "libc6", "bash", "coreutils"]
DEFAULT_SUITE = "bookworm"
DEFAULT_MIRROR = "http://deb.debian.org/debian"
DEFAULT_KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
STAMP = ".morph-sysroot"
# Top-level directories that live under /usr in the merged-/usr layout.
MERGED_DIRS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
# Always present as symlinks even if no package ships anything there.
ALWAYS_LINKED = ("bin", "sbin", "lib")
INDEX_FIELDS = ("Package", "Version", "Depends", "Pre-Depends", "Provides",
                "Priority", "Filename", "SHA256", "Size")
# Among several providers of a virtual package, prefer the more basic one
# (as Debian's own installers do): awk -> mawk, not gawk and its libraries.
PRIORITY_RANK = {"required": 0, "important": 1, "standard": 2, "optional": 3, "extra": 4}
TIMEOUT = 60


class Failure(Exception):
    """An error reported as one line on stderr, with exit status 1."""


class Log:
    def __init__(self, quiet):
        self.quiet = quiet

    def step(self, msg):
        if not self.quiet:
            print(f"{PROG}: {msg}", file=sys.stderr, flush=True)

    def warn(self, msg):
        print(f"{PROG}: warning: {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- paths, stamp

def default_cache():
    if os.environ.get("MORPH_CACHE"):
        return os.environ["MORPH_CACHE"]
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg:
        return os.path.join(xdg, "morph")
    return os.path.join(os.path.expanduser("~"), ".cache", "morph")


def read_stamp(sysroot):
    """Return ({package: version}, [requested]) from the stamp, or None."""
    try:
        with open(os.path.join(sysroot, STAMP), encoding="utf-8") as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        return None
    installed, requested = {}, []
    for line in lines:
        parts = line.split()
        if len(parts) == 3 and parts[0] == "package":
            installed[parts[1]] = parts[2]
        elif len(parts) == 2 and parts[0] == "requested":
            requested = parts[1].split(",")
    return installed, requested


def write_stamp(sysroot, suite, mirror, requested, installed, release):
    lines = [
        "# morph i386 sysroot, written by guests/sysroot/mksysroot.py; do not edit",
        f"suite {suite}",
        f"arch {ARCH}",
        f"mirror {mirror}",
        f"release-date {release.get('date', 'unknown')}",
        f"release-signed-by {release.get('key', 'unknown')}",
        f"requested {','.join(sorted(requested))}",
        f"created {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}",
    ]
    lines += [f"package {name} {installed[name]}" for name in sorted(installed)]
    tmp = os.path.join(sysroot, STAMP + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, os.path.join(sysroot, STAMP))


def rmtree(path):
    """Remove a tree even where a package left a directory read-only."""
    def onerror(func, p, _exc):
        try:
            os.chmod(os.path.dirname(p), 0o755)
            if os.path.isdir(p) and not os.path.islink(p):
                os.chmod(p, 0o755)
            func(p)
        except OSError as e:
            raise Failure(f"cannot remove {p}: {e.strerror}") from None
    if os.path.lexists(path):
        shutil.rmtree(path, onerror=onerror)


# ---------------------------------------------------------------- downloads

def fetch(url, dest, log, sha256=None, size=None):
    """Download url to dest via dest.part; verify size and SHA256 if given."""
    part = dest + ".part"
    digest = hashlib.sha256()
    got = 0
    try:
        req = urllib.request.Request(url, headers={"User-Agent": "morph-mksysroot"})
        with urllib.request.urlopen(req, timeout=TIMEOUT) as resp, open(part, "wb") as out:
            while True:
                chunk = resp.read(1 << 16)
                if not chunk:
                    break
                digest.update(chunk)
                got += len(chunk)
                out.write(chunk)
    except urllib.error.HTTPError as e:
        _unlink(part)
        raise Failure(f"cannot download {url}: HTTP {e.code} {e.reason}") from None
    except (urllib.error.URLError, OSError) as e:
        _unlink(part)
        reason = getattr(e, "reason", None) or getattr(e, "strerror", None) or e
        raise Failure(f"cannot download {url}: {reason}") from None
    if size is not None and got != size:
        _unlink(part)
        raise Failure(f"size mismatch for {url}: got {got} bytes, index says {size}")
    if sha256 is not None and digest.hexdigest() != sha256:
        _unlink(part)
        raise Failure(f"SHA256 mismatch for {url} (bad download deleted)")
    os.replace(part, dest)


def sha256_file(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _unlink(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


# ---------------------------------------------------------------- the index

def release_entry(release_text, name):
    """(sha256, size) of file `name` in a Release file's SHA256 section."""
    in_sha = False
    for line in release_text.splitlines():
        if not line.startswith(" "):
            in_sha = line.strip() == "SHA256:"
            continue
        if in_sha:
            parts = line.split()
            if len(parts) == 3 and parts[2] == name:
                return parts[0], int(parts[1])
    return None


def gpgv_verify(keyring, args, log):
    """Run gpgv with `args` against `keyring`; return the fingerprint of the key
    that made a good signature, or raise Failure."""
    if not os.path.isfile(keyring):
        raise Failure(f"no archive keyring at {keyring} (install the debian-archive-keyring "
                      "package, or give --keyring)")
    gpgv = shutil.which("gpgv")
    if gpgv is None:
        raise Failure("gpgv not found (install the gpgv package): cannot verify the Release file")
    r = subprocess.run([gpgv, "--status-fd", "1", "--keyring", keyring, *args],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, check=False)
    status = [line.split() for line in r.stdout.splitlines() if line.startswith("[GNUPG:] ")]
    good = [w for w in status if len(w) > 2 and w[1] == "VALIDSIG"]
    if r.returncode != 0 or not good:
        detail = r.stderr.strip().splitlines()[-1:] or ["no valid signature"]
        raise Failure(f"the Release file's signature does not verify against {keyring}: {detail[0]}")
    return good[0][2]


def fetch_verified_release(base, index_dir, suite, keyring, log):
    """Fetch the suite's InRelease (or Release + Release.gpg), verify its signature
    and write the signed text to <index>/<suite>-Release; return
    {"date": ..., "key": fingerprint}."""
    release_path = os.path.join(index_dir, f"{suite}-Release")
    inrelease = os.path.join(index_dir, f"{suite}-InRelease")
    detached = os.path.join(index_dir, f"{suite}-Release.gpg")
    unverified = release_path + ".unverified"
    log.step(f"fetching {base}/InRelease")
    try:
        fetch(f"{base}/InRelease", inrelease, log)
        signed = inrelease + ".signed"
        _unlink(signed)
        key = gpgv_verify(keyring, ["--output", signed, inrelease], log)
        os.replace(signed, release_path)
    except Failure as e:
        if "signature" in str(e) or "keyring" in str(e) or "gpgv" in str(e):
            raise
        log.warn(f"{e}; trying Release and Release.gpg")
        fetch(f"{base}/Release", unverified, log)
        fetch(f"{base}/Release.gpg", detached, log)
        key = gpgv_verify(keyring, [detached, unverified], log)
        os.replace(unverified, release_path)
    with open(release_path, encoding="utf-8", errors="replace") as f:
        date = next((line.split(":", 1)[1].strip() for line in f if line.startswith("Date:")), "unknown")
    log.step(f"Release of {date} signed by {key}")
    return {"date": date, "key": key}


def load_index(args, cache, log):
    """Return (the parsed Packages index for <suite>/main/binary-i386, what the
    verified Release says of itself)."""
    index_dir = os.path.join(cache, "index")
    os.makedirs(index_dir, exist_ok=True)
    base = f"{args.mirror}/dists/{args.suite}"
    member = f"main/binary-{ARCH}/Packages.xz"
    cached = os.path.join(index_dir, f"{args.suite}-main-{ARCH}-Packages.xz")
    release_path = os.path.join(index_dir, f"{args.suite}-Release")

    try:
        release = fetch_verified_release(base, index_dir, args.suite, args.keyring, log)
    except Failure as e:
        # Offline: the cached index was checked against a verified Release before.
        if "signature" in str(e) or "keyring" in str(e) or "gpgv" in str(e) or not os.path.exists(cached):
            raise
        log.warn(f"{e}; using the cached index")
        return parse_index(cached), {"date": "unknown (offline, cached index)", "key": "unknown"}

    with open(release_path, encoding="utf-8", errors="replace") as f:
        entry = release_entry(f.read(), member)
    if entry is None:
        raise Failure(f"{base}/Release lists no {member} (is '{args.suite}' a Debian suite?)")
    sha, size = entry
    if not (os.path.exists(cached) and sha256_file(cached) == sha):
        log.step(f"fetching {base}/{member} ({size / 1e6:.1f} MB)")
        fetch(f"{base}/{member}", cached, log, sha256=sha, size=size)
    return parse_index(cached), release


def parse_index(path):
    """{package: {field: value}} for the fields this script needs."""
    try:
        with lzma.open(path, "rt", encoding="utf-8", errors="replace") as f:
            text = f.read()
    except (lzma.LZMAError, OSError) as e:
        _unlink(path)
        raise Failure(f"cannot read index {path}: {e} (deleted; run again)") from None
    packages = {}
    for stanza in text.split("\n\n"):
        fields = {}
        key = None
        for line in stanza.split("\n"):
            if line[:1] in (" ", "\t"):
                if key is not None:
                    fields[key] += " " + line.strip()
                continue
            key, sep, value = line.partition(":")
            if not sep or key not in INDEX_FIELDS:
                key = None
                continue
            fields[key] = value.strip()
        name = fields.get("Package")
        if name and name not in packages:
            packages[name] = fields
    return packages


def parse_relation(value):
    """'a (>= 1) | b:any, c [i386]' -> [['a', 'b'], ['c']] (names only)."""
    groups = []
    for group in value.split(","):
        alts = []
        for alt in group.split("|"):
            alt = alt.strip()
            if not alt:
                continue
            name = alt.split("(")[0].split("[")[0].split("<")[0].strip()
            name = name.split(":")[0]
            if name:
                alts.append(name)
        if alts:
            groups.append(alts)
    return groups


def resolve(index, wanted, log, where):
    """Closure of Depends + Pre-Depends over `wanted`; returns a set of names."""
    providers = {}
    for name, fields in index.items():
        for group in parse_relation(fields.get("Provides", "")):
            for virtual in group:
                providers.setdefault(virtual, []).append(name)
    for lst in providers.values():
        lst.sort(key=lambda p: (PRIORITY_RANK.get(index[p].get("Priority"), 5), p))

    chosen = set()
    provided = {}  # virtual name -> chosen package providing it

    def choose(name):
        chosen.add(name)
        queue.append(name)
        for group in parse_relation(index[name].get("Provides", "")):
            for virtual in group:
                provided.setdefault(virtual, name)

    def satisfied(alts):
        return any(a in chosen or a in provided for a in alts)

    def pick(alts):
        for a in alts:
            if a in index:
                return a
        for a in alts:
            if a in providers:
                return providers[a][0]
        return None

    queue = []
    for name in wanted:
        if name in chosen or name in provided:
            continue
        real = pick([name])
        if real is None:
            raise Failure(f"package '{name}' is not in {where} "
                          "(nor provided by any package there)")
        if real not in chosen:
            choose(real)
    while queue:
        name = queue.pop()
        fields = index[name]
        for field in ("Pre-Depends", "Depends"):
            for alts in parse_relation(fields.get(field, "")):
                if satisfied(alts):
                    continue
                real = pick(alts)
                if real is None:
                    log.warn(f"{name}: cannot satisfy '{' | '.join(alts)}'; going on without it")
                    continue
                choose(real)
    return chosen


# ---------------------------------------------------------------- unpacking

def unpack_deb(deb, dest):
    """Unpack a .deb's file system tree into the empty directory dest."""
    if shutil.which("dpkg-deb") and not os.environ.get("MKSYSROOT_NO_DPKG_DEB"):
        proc = subprocess.run(["dpkg-deb", "-x", deb, dest],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if proc.returncode != 0:
            last = (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
            raise Failure(f"dpkg-deb -x {os.path.basename(deb)} failed: {last}")
        return
    # No dpkg-deb: read the ar archive here, hand the data.tar to tar.
    name, data = deb_data_member(deb)
    if name.endswith(".xz"):
        data = lzma.decompress(data)
    elif name.endswith(".gz"):
        data = gzip.decompress(data)
    elif name.endswith(".bz2"):
        data = bz2.decompress(data)
    elif name.endswith(".zst"):
        if not shutil.which("zstd"):
            raise Failure(f"{os.path.basename(deb)}: {name} needs dpkg-deb or zstd")
        data = subprocess.run(["zstd", "-dc"], input=data, stdout=subprocess.PIPE,
                              check=True).stdout
    elif name != "data.tar":
        raise Failure(f"{os.path.basename(deb)}: unknown member {name}")
    proc = subprocess.run(["tar", "-x", "-f", "-", "-C", dest], input=data,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if proc.returncode != 0:
        raise Failure(f"tar failed on {os.path.basename(deb)}: "
                      f"{proc.stderr.decode(errors='replace').strip()}")


def deb_data_member(deb):
    """(name, bytes) of the data.tar* member of a .deb (an ar archive)."""
    with open(deb, "rb") as f:
        if f.read(8) != b"!<arch>\n":
            raise Failure(f"{os.path.basename(deb)} is not a Debian package")
        while True:
            header = f.read(60)
            if len(header) < 60:
                break
            name = header[:16].decode("ascii", "replace").strip().rstrip("/")
            size = int(header[48:58].decode("ascii").strip())
            body = f.read(size)
            if size % 2:
                f.read(1)
            if name.startswith("data.tar"):
                return name, body
    raise Failure(f"{os.path.basename(deb)} has no data.tar member")


class Merger:
    """Moves an unpacked package tree into the sysroot (merged-/usr layout).

    Every path is resolved inside the sysroot as a chroot would: absolute
    symlinks restart at the sysroot, '..' stops at it. Nothing is ever
    written through a symlink that leads out of the sysroot.
    """

    def __init__(self, root, log):
        self.root = root
        self.log = log

    def host(self, rel):
        return os.path.join(self.root, rel) if rel else self.root

    def resolve(self, rel, create=False):
        """Root-relative path with every symlink in `rel` followed inside root."""
        todo = [c for c in rel.split("/") if c]
        todo.reverse()
        cur = ""
        hops = 0
        while todo:
            comp = todo.pop()
            if comp == ".":
                continue
            if comp == "..":
                cur = os.path.dirname(cur)
                continue
            cand = f"{cur}/{comp}" if cur else comp
            try:
                st = os.lstat(self.host(cand))
            except FileNotFoundError:
                if not create:
                    return None
                os.mkdir(self.host(cand), 0o755)
                cur = cand
                continue
            if stat.S_ISLNK(st.st_mode):
                hops += 1
                if hops > 40:
                    raise Failure(f"symlink loop at /{cand} in the sysroot")
                target = os.readlink(self.host(cand))
                if target.startswith("/"):
                    cur = ""
                parts = [c for c in target.split("/") if c]
                todo.extend(reversed(parts))
                continue
            cur = cand
        return cur

    def merge(self, src, rel=""):
        """Merge directory `src` into the sysroot directory at root-relative `rel`."""
        with os.scandir(src) as it:
            entries = sorted(it, key=lambda e: e.name)
        for entry in entries:
            name = entry.name
            if not rel and name in MERGED_DIRS:
                dest_rel = f"usr/{name}"
            else:
                dest_rel = f"{rel}/{name}" if rel else name
            dest = self.host(dest_rel)
            st = entry.stat(follow_symlinks=False)
            if stat.S_ISDIR(st.st_mode):
                real = dest_rel
                if os.path.islink(dest):
                    # A directory symlink: merge into its target, as dpkg does.
                    real = self.resolve(dest_rel, create=True)
                    if not os.path.isdir(self.host(real)):
                        self.log.warn(f"/{dest_rel} links to a non-directory; replacing it")
                        os.unlink(dest)
                        os.mkdir(dest, 0o755)
                        real = dest_rel
                elif os.path.lexists(dest) and not os.path.isdir(dest):
                    self.log.warn(f"/{dest_rel} is not a directory; replacing it")
                    os.unlink(dest)
                    os.mkdir(dest, 0o755)
                elif not os.path.lexists(dest):
                    os.mkdir(dest, 0o755)
                os.chmod(self.host(real), stat.S_IMODE(st.st_mode) | 0o700)
                self.merge(entry.path, real)
            elif stat.S_ISLNK(st.st_mode) or stat.S_ISREG(st.st_mode):
                if os.path.isdir(dest) and not os.path.islink(dest):
                    self.log.warn(f"/{dest_rel} is a directory; not replacing it with a file")
                    continue
                if stat.S_ISLNK(st.st_mode):
                    tmp = dest + ".morph-new"
                    _unlink(tmp)
                    os.symlink(os.readlink(entry.path), tmp)
                    os.replace(tmp, dest)
                else:
                    os.replace(entry.path, dest)
            else:
                self.log.warn(f"skipping special file /{dest_rel}")


def usr_merge_links(root):
    os.makedirs(os.path.join(root, "usr"), exist_ok=True)
    for d in MERGED_DIRS:
        link = os.path.join(root, d)
        target = os.path.join(root, "usr", d)
        if d in ALWAYS_LINKED:
            os.makedirs(target, exist_ok=True)
        if os.path.isdir(target) and not os.path.lexists(link):
            os.symlink(f"usr/{d}", link)


def fixups(root, merger, log, packages):
    """What maintainer scripts and debootstrap would otherwise have done."""
    usr_merge_links(root)
    for d, mode in (("tmp", 0o1777), ("dev", 0o755), ("proc", 0o555), ("sys", 0o555),
                    ("root", 0o700), ("etc", 0o755), ("home", 0o755)):
        p = os.path.join(root, d)
        if not os.path.lexists(p):
            os.mkdir(p)
            os.chmod(p, mode)
    etc = os.path.join(root, "etc")
    defaults = {
        "passwd": "root:x:0:0:root:/root:/bin/bash\n"
                  "daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n"
                  "bin:x:2:2:bin:/bin:/usr/sbin/nologin\n"
                  "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
        "group": "root:x:0:\ndaemon:x:1:\nbin:x:2:\ntty:x:5:\nusers:x:100:\nnogroup:x:65534:\n",
        "hostname": "morph\n",
        # The installer writes this one on a Debian system: "localhost" resolves
        # without DNS (and loopback is all the guest's network is).
        "hosts": "127.0.0.1\tlocalhost\n::1\t\tlocalhost ip6-localhost ip6-loopback\n",
        # libc-bin (not needed to run programs) would install this one.
        "nsswitch.conf": "passwd: files\ngroup: files\nshadow: files\n"
                         "hosts: files dns\nnetworks: files\nprotocols: files\n"
                         "services: files\nethers: files\nrpc: files\n",
    }
    for name, text in defaults.items():
        p = os.path.join(etc, name)
        if not os.path.lexists(p):
            with open(p, "w", encoding="utf-8") as f:
                f.write(text)
    # base-files' postinst installs these from its templates.
    templates = os.path.join(root, "usr/share/base-files")
    for name, dst in (("profile", "etc/profile"), ("dot.profile", "root/.profile"),
                      ("dot.bashrc", "root/.bashrc")):
        src, dst = os.path.join(templates, name), os.path.join(root, dst)
        if os.path.isfile(src) and not os.path.lexists(dst):
            shutil.copyfile(src, dst)
    # /bin/sh normally comes from dash, awk and which from update-alternatives
    # in their packages' postinst; stand in for them with symlinks.
    for link, candidates in (("sh", ("dash", "bash", "busybox")),
                             ("awk", ("mawk", "gawk", "original-awk", "busybox")),
                             ("which", ("which.debianutils",))):
        if merger.resolve(f"usr/bin/{link}") is not None:
            continue
        for prog in candidates:
            if os.path.isfile(os.path.join(root, "usr/bin", prog)):
                _unlink(os.path.join(root, "usr/bin", link))  # a dangling link
                os.symlink(prog, os.path.join(root, "usr/bin", link))
                log.step(f"linked /usr/bin/{link} to {prog}")
                break
    loader = merger.resolve("lib/ld-linux.so.2")
    if "libc6" in packages and (loader is None or not os.path.isfile(merger.host(loader))):
        raise Failure("/lib/ld-linux.so.2 does not resolve to a file inside the sysroot")


# ---------------------------------------------------------------- main

def parse_args(argv):
    ap = argparse.ArgumentParser(
        prog="mksysroot.py",
        description="Assemble (once) a Debian i386 sysroot and print its absolute path.")
    ap.add_argument("--cache", help="cache directory (default: $MORPH_CACHE, "
                    "$XDG_CACHE_HOME/morph or ~/.cache/morph)")
    ap.add_argument("--suite", default=DEFAULT_SUITE, help="Debian suite (default: %(default)s)")
    ap.add_argument("--mirror", default=DEFAULT_MIRROR, help="Debian mirror (default: %(default)s)")
    ap.add_argument("--packages", help="comma-separated package names "
                    f"(default: {','.join(DEFAULT_PACKAGES)})")
    ap.add_argument("--keyring", default=DEFAULT_KEYRING,
                    help="OpenPGP keyring the Release file must be signed with (default: %(default)s)")
    ap.add_argument("--quiet", action="store_true", help="no progress on stderr")
    args = ap.parse_args(argv)
    args.mirror = args.mirror.rstrip("/")
    if args.packages is None:
        args.wanted = list(DEFAULT_PACKAGES)
    else:
        args.wanted = [p.strip() for p in args.packages.split(",") if p.strip()]
        if not args.wanted:
            ap.error("--packages needs at least one name")
    if "/" in args.suite or not args.suite:
        ap.error("--suite must be a suite name such as bookworm")
    return args


def satisfied_by_stamp(sysroot, wanted):
    stamp = read_stamp(sysroot)
    return stamp is not None and all(p in stamp[0] for p in wanted)


def build(args, cache, sysroot, log):
    started = time.monotonic()
    # We hold the lock: scratch and .part files are left by a killed run
    # (best effort: a killed run's dpkg-deb may still be writing there).
    for d in (cache, os.path.join(cache, "debs"), os.path.join(cache, "index")):
        if os.path.isdir(d):
            for name in os.listdir(d):
                if name.startswith(".unpack-") or name.endswith(".part"):
                    try:
                        rmtree(os.path.join(d, name))
                    except Failure:
                        pass
    stamp = read_stamp(sysroot)
    previous, previous_requested = stamp if stamp else (None, [])
    if previous is None and os.path.lexists(sysroot):
        log.warn(f"{sysroot} has no stamp; rebuilding it")
        rmtree(sysroot)

    index, release = load_index(args, cache, log)
    wanted = list(args.wanted)
    if previous:
        # Keep what is there: the set only grows.
        wanted += [p for p in sorted(previous) if p in index]
    chosen = resolve(index, wanted, log, f"{args.suite}/main ({ARCH})")
    todo = sorted(p for p in chosen if previous is None or previous.get(p) != index[p]["Version"])
    log.step(f"{len(chosen)} package(s) in the closure, {len(todo)} to install")

    debs_dir = os.path.join(cache, "debs")
    os.makedirs(debs_dir, exist_ok=True)
    debs = {}
    missing = []
    for name in todo:
        fields = index[name]
        if "Filename" not in fields or "SHA256" not in fields:
            raise Failure(f"index entry of {name} lacks Filename or SHA256")
        path = os.path.join(debs_dir, os.path.basename(fields["Filename"]))
        debs[name] = path
        if os.path.exists(path) and sha256_file(path) == fields["SHA256"]:
            continue
        if os.path.exists(path):
            log.warn(f"cached {os.path.basename(path)} fails its SHA256 check; fetching again")
            _unlink(path)
        missing.append(name)
    if missing:
        total = sum(int(index[n].get("Size", 0)) for n in missing)
        log.step(f"downloading {len(missing)} .deb(s) ({total / 1e6:.1f} MB) to {debs_dir}")
        for name in missing:
            fields = index[name]
            fetch(f"{args.mirror}/{fields['Filename']}", debs[name], log,
                  sha256=fields["SHA256"], size=int(fields["Size"]) if "Size" in fields else None)

    target = sysroot if previous is not None else sysroot + ".partial"
    if previous is None:
        rmtree(target)  # left by an interrupted run
        os.makedirs(target)
    log.step(f"extracting {len(todo)} package(s) into {target}")
    merger = Merger(target, log)
    usr_merge_links(target)
    for name in todo:
        scratch = tempfile.mkdtemp(prefix=f".unpack-{name}-", dir=cache)
        try:
            unpack_deb(debs[name], scratch)
            merger.merge(scratch)
        finally:
            rmtree(scratch)
    fixups(target, merger, log, chosen)

    installed = {p: index[p]["Version"] for p in chosen}
    requested = set(args.wanted) | set(previous_requested)
    write_stamp(target, args.suite, args.mirror, requested, installed, release)
    if target != sysroot:
        os.rename(target, sysroot)
    log.step(f"done in {time.monotonic() - started:.1f} s")


def main(argv):
    args = parse_args(argv)
    log = Log(args.quiet)
    cache = os.path.abspath(os.path.expanduser(args.cache or default_cache()))
    sysroot = os.path.join(cache, f"sysroot-{args.suite}-{ARCH}")

    try:
        if satisfied_by_stamp(sysroot, args.wanted):
            print(sysroot)
            return 0
        os.makedirs(cache, exist_ok=True)
        with open(os.path.join(cache, f".lock-sysroot-{args.suite}-{ARCH}"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            # Another run may have finished while we waited for the lock.
            if not satisfied_by_stamp(sysroot, args.wanted):
                build(args, cache, sysroot, log)
    except Failure as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 1
    except OSError as e:
        where = f" ({e.filename})" if e.filename else ""
        print(f"{PROG}: error: {e.strerror or e}{where}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted; run again to finish", file=sys.stderr)
        return 130
    print(sysroot)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
