#!/usr/bin/env bash
# Build the CPU benchmark guests (guests/bench/*.c) against the freestanding
# runtime in guests/rt/:
#   OUTDIR/<name>   static, ET_EXEC, -O2
# Usage: guests/bench/build.sh OUTDIR
# The flags are guests/build.sh's (i686, x87, no SSE/MMX, no CET, no libc,
# no libgcc) except -O2 instead of -O1.  Only the static variant is built.
set -euo pipefail

if [ $# -ne 1 ]; then
	echo "usage: $0 OUTDIR" >&2
	exit 2
fi
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
RT=$(cd "$HERE/../rt" && pwd)
mkdir -p "$1"
OUT=$(cd "$1" && pwd)
CC=${CC:-gcc}

CFLAGS=(-m32 -march=i686 -mno-sse -mno-sse2 -mno-mmx -mfpmath=387
	-mno-red-zone -ffreestanding -nostdlib -fno-builtin
	-fno-stack-protector -fcf-protection=none -fno-asynchronous-unwind-tables
	-fno-unwind-tables -fno-tree-loop-distribute-patterns -fno-pie
	-O2 -g0 -Wall -Wextra -Wno-unused-parameter -Werror -I"$RT" -I"$HERE")
LDFLAGS=(-m32 -nostdlib -static -no-pie -Wl,--fatal-warnings -Wl,-z,noexecstack
	-Wl,--build-id=none)

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

objs=()
for src in "$RT"/*.c "$RT"/*.S; do
	obj="$TMP/rt_$(basename "$src").o"
	"$CC" "${CFLAGS[@]}" -c "$src" -o "$obj"
	objs+=("$obj")
done
progs=()
for src in "$HERE"/*.c; do
	p=$(basename "$src" .c)
	"$CC" "${CFLAGS[@]}" -c "$src" -o "$TMP/$p.o"
	"$CC" "${LDFLAGS[@]}" -o "$OUT/$p.tmp" "$TMP/$p.o" "${objs[@]}"
	mv -f "$OUT/$p.tmp" "$OUT/$p"
	progs+=("$p")
done
echo "guests/bench: built ${#progs[@]} benchmarks (${progs[*]}) into $OUT"
