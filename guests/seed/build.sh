#!/usr/bin/env bash
# Builds the seed workload into OUTDIR: dynamic glibc i386 programs (as Debian builds
# them: -O2, PIE, linked against libc.so.6 and /lib/ld-linux.so.2), the script and a
# 4 KiB data file. Needs gcc and gcc-multilib; the programs run against the Debian
# i386 sysroot's glibc (guests/sysroot/mksysroot.py) natively and under morph.
# Usage: guests/seed/build.sh OUTDIR
set -euo pipefail
if [ $# -ne 1 ]; then
	echo "usage: $0 OUTDIR" >&2
	exit 2
fi
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mkdir -p "$1"
OUT=$(cd "$1" && pwd)
CC=${CC:-gcc}
for p in echod sockreq filecalc hello; do
	$CC -m32 -O2 -fPIE -pie -Wall -Wextra -Werror -o "$OUT/$p.tmp" "$HERE/$p.c"
	mv "$OUT/$p.tmp" "$OUT/$p"
done
install -m 755 "$HERE/seed.sh" "$OUT/seed.sh"
# A deterministic 4 KiB text file: 64 lines of 64 bytes.
python3 - "$OUT/data.txt" <<'PY'
import sys
words = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima".split()
lines = []
for i in range(64):
    s = " ".join(words[(i * 7 + k) % len(words)] for k in range(12))
    lines.append((s + " " * 64)[:63] + "\n")
open(sys.argv[1], "w").write("".join(lines))
PY
