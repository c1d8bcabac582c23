#!/usr/bin/env bash
# Build the guest runtime and every guest test program, twice:
#   OUTDIR/<name>      static, ET_EXEC   (-fno-pie, -static)
#   OUTDIR/<name>.pie  static-PIE, ET_DYN (-fPIE, -static-pie; crt0 self-relocates)
# Usage: guests/build.sh OUTDIR
# Needs only gcc and gcc-multilib (for -m32 and the 32-bit libgcc.a).
set -euo pipefail

if [ $# -ne 1 ]; then
	echo "usage: $0 OUTDIR" >&2
	exit 2
fi
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mkdir -p "$1"
OUT=$(cd "$1" && pwd)
CC=${CC:-gcc}

# i686 only: no SSE of any kind, no CET (endbr32), x87 floating point.
# MMX is disabled for compiled code; mmx.c enables it with a pragma for its
# inline asm only.  -fno-builtin keeps gcc from assuming libc semantics.
CFLAGS=(-m32 -march=i686 -mno-sse -mno-sse2 -mno-mmx -mfpmath=387
	-mno-red-zone -ffreestanding -nostdlib -fno-builtin
	-fno-stack-protector -fcf-protection=none -fno-asynchronous-unwind-tables
	-fno-unwind-tables -fno-tree-loop-distribute-patterns
	-O1 -g0 -Wall -Wextra -Wno-unused-parameter -Werror -I"$HERE/rt")
LDFLAGS=(-m32 -nostdlib -Wl,--fatal-warnings -Wl,-z,noexecstack -Wl,--build-id=none)

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

RT_SRCS=("$HERE"/rt/*.c "$HERE"/rt/*.S)
PROGS=()
for f in "$HERE"/src/*.c; do
	PROGS+=("$(basename "$f" .c)")
done

# build_variant SUFFIX PIEFLAG LINKFLAG...
build_variant() {
	local suffix=$1 pic=$2
	shift 2
	local dir="$TMP/obj$suffix" src obj objs=() p
	mkdir -p "$dir"
	for src in "${RT_SRCS[@]}"; do
		obj="$dir/rt_$(basename "$src").o"
		"$CC" "${CFLAGS[@]}" "$pic" -c "$src" -o "$obj"
		objs+=("$obj")
	done
	for p in "${PROGS[@]}"; do
		"$CC" "${CFLAGS[@]}" "$pic" -c "$HERE/src/$p.c" -o "$dir/$p.o"
		"$CC" "${LDFLAGS[@]}" "$@" -o "$OUT/$p$suffix.tmp" \
			"$dir/$p.o" "${objs[@]}"
		mv -f "$OUT/$p$suffix.tmp" "$OUT/$p$suffix"
	done
}

build_variant "" -fno-pie -static -no-pie &
pid_static=$!
build_variant ".pie" -fPIE -static-pie &
pid_pie=$!
status=0
wait "$pid_static" || status=1
wait "$pid_pie" || status=1
if [ "$status" -ne 0 ]; then
	echo "guests/build.sh: build FAILED" >&2
	exit 1
fi
echo "guests: built ${#PROGS[@]} programs x 2 variants into $OUT"
