#!/usr/bin/env python3
"""How much of a real program's time under morph is its code's placement.

Usage: benches/layout-spread.py [-k K] [--morph PATH] [--only a,b]

For each program of the real-program suite, runs morph K times with translations
placed back to back (one layout) and once under each of `--layout-seed 1..K`,
interleaved, and prints user+sys seconds (min/median/max) and the spread (max/min - 1)
of both: the first is the host's run-to-run noise, the second adds the placement's
effect. Needs the suite's sysroot (run benches/real.sh once first). See
docs/results.md § Stop 27.
"""
import argparse
import os
import resource
import statistics
import subprocess
import sys

PROGRAMS = [
    ("python3", "/usr/bin/python3.11 -S pybench.py"),
    ("perl", "/usr/bin/perl bench.pl"),
    ("lua", "/usr/bin/lua5.4 fib.lua"),
    ("sqlite3", "/usr/bin/sqlite3 :memory:"),
    ("gawk", "/usr/bin/gawk -f wordfreq.awk text"),
    ("sort", "/usr/bin/sort -k3,3 -k1,1 text"),
    ("gzip", "/usr/bin/gzip -c text"),
    ("xz", "/usr/bin/xz -1 -c small"),
    ("bzip2", "/usr/bin/bzip2 -c small"),
    ("sha256sum", "/usr/bin/sha256sum text text text text text text text text"),
]


def cache_dir():
    for var, sub in (("MORPH_CACHE", ""), ("XDG_CACHE_HOME", "morph")):
        if os.environ.get(var):
            return os.path.join(os.environ[var], sub)
    return os.path.expanduser("~/.cache/morph")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-k", type=int, default=8, help="runs per column (default 8)")
    ap.add_argument("--morph", default="target/x86_64-unknown-linux-gnu/release/morph")
    ap.add_argument("--only", help="comma-separated program names")
    a = ap.parse_args()
    morph = os.path.abspath(a.morph)
    root = os.path.join(cache_dir(), "realbench", "sysroot-bookworm-i386")
    if not os.path.isdir(os.path.join(root, "bench")):
        sys.exit(f"no suite sysroot at {root}: run benches/real.sh once first")
    progs = [p for p in PROGRAMS if not a.only or p[0] in a.only.split(",")]

    def run(cmd, extra):
        stdin = open(os.path.join(root, "bench", "bench.sql")) if cmd.startswith("/usr/bin/sqlite3") else subprocess.DEVNULL
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(
            [morph, "run", "--root", root, "--engine", "dbt", "--key", "physical", "--clear-env",
             "--env", "PATH=/usr/bin:/bin", "--env", "LC_ALL=C"] + extra + ["--"] + cmd.split(),
            stdin=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=os.path.join(root, "bench"),
            check=True,
        )
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        return (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)

    def fmt(v):
        return "%.3f/%.3f/%.3f" % (min(v), statistics.median(v), max(v))

    print("%-10s %22s %22s  spread: one layout, %d layouts" % ("program", "one layout", f"{a.k} layouts", a.k))
    for name, cmd in progs:
        same, seeded = [], []
        for i in range(a.k):
            same.append(run(cmd, []))
            seeded.append(run(cmd, ["--layout-seed", str(i + 1)]))
        spread = lambda v: 100 * (max(v) / min(v) - 1)
        print("%-10s %22s %22s  %3.0f %%  %3.0f %%" % (name, fmt(same), fmt(seeded), spread(same), spread(seeded)),
              flush=True)


if __name__ == "__main__":
    main()
