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
# The programs include glibc's headers for i386: without gcc-multilib the first one
# fails deep in <features.h>. Install it where apt can (as .ci/run does), else say so.
printf '#include <stdio.h>\nint main(void){return 0;}\n' >"$OUT/.m32check.c"
if ! $CC -m32 "$OUT/.m32check.c" -o "$OUT/.m32check" 2>/dev/null; then
	if command -v apt-get >/dev/null; then
		echo "$0: installing gcc-multilib (gcc -m32 cannot build against i386 glibc headers)" >&2
		SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
		$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq gcc-multilib >&2
	fi
	$CC -m32 "$OUT/.m32check.c" -o "$OUT/.m32check" 2>/dev/null || {
		echo "$0: $CC -m32 cannot build against i386 glibc headers: install gcc-multilib" >&2
		exit 1
	}
fi
rm -f "$OUT/.m32check.c" "$OUT/.m32check"
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
