#!/usr/bin/env bash
# Builds the libFuzzer targets and runs each for a bounded time (default 60 s).
# Usage: fuzz/run.sh [SECONDS]
# Needs cargo-fuzz (`cargo install cargo-fuzz`). Only coverage-guided fuzzing without a
# sanitizer runs on a stable toolchain (see fuzz/README.md). Exits non-zero, with the
# crashing input left in fuzz/artifacts/, if a target panics, aborts or hangs.
set -euo pipefail
SECS=${1:-60}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$HERE"

nice -n 10 cargo fuzz build --sanitizer none -O 2>&1 | tail -n 1

# Seed corpora: our own guests (static and static-PIE) and the sysroot's programs and
# dynamic loader for the loader; hand-made call sequences for system calls.
mkdir -p corpus/elf_load corpus/syscall_args
bash ../guests/build.sh "$HERE/target/guests" >/dev/null
cp "$HERE"/target/guests/* corpus/elf_load/
S=${MORPH_SYSROOT:-$(python3 ../guests/sysroot/mksysroot.py --quiet 2>/dev/null || true)}
if [ -n "$S" ] && [ -d "$S" ]; then
	for f in usr/bin/true usr/bin/bash usr/bin/busybox lib/ld-linux.so.2 usr/lib/i386-linux-gnu/libc.so.6; do
		[ -e "$S/$f" ] && cp -L "$S/$f" "corpus/elf_load/sysroot-$(basename "$f")" || true
	done
fi
cp seeds/syscall_args/* corpus/syscall_args/

# Each input's scratch root lives under std::env::temp_dir(): keep them here.
export TMPDIR="$HERE/target/tmp"
rm -rf "$TMPDIR" && mkdir -p "$TMPDIR"
status=0
for t in elf_load syscall_args; do
	case $t in
		elf_load) max_len=2097152 ;;
		syscall_args) max_len=4544 ;; # 16 calls of 28 bytes and a page
	esac
	log="target/fuzz-$t.log"
	# The guests' own output goes to stdout: keep libFuzzer's report in the log.
	if nice -n 10 cargo fuzz run --sanitizer none -O "$t" -- -max_total_time="$SECS" -timeout=20 \
		-rss_limit_mb=4096 -max_len="$max_len" -print_final_stats=1 >"$log.out" 2>"$log"; then
		echo "fuzz $t: $(grep -a -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -n 1)"
	else
		echo "fuzz $t: FAILED (input in fuzz/artifacts/$t/)"
		tail -n 40 "$log"
		status=1
	fi
done
rm -rf "$TMPDIR"
exit $status
