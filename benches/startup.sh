#!/usr/bin/env bash
# Per-exec start-up of a dynamic glibc "hello" (guests/seed/hello.c), cold and warm,
# natively, under morph (each --key) and under qemu-i386 when installed.
#
#   cold: a fresh machine per exec (one `morph run` per hello): what a user-mode DBT
#         pays for every program it starts;
#   warm: N execs inside one machine (a bash loop), minus the same loop without the
#         exec, divided by N: the per-exec cost once the page cache and (under the
#         virtual and physical keys) the translation cache have seen the program;
#   steady: the cost of each exec after the first N (6N execs in one bash minus N
#         execs, divided by 5N): by then the blocks every exec runs once (ld.so's and
#         libc's start-up) have passed the translation threshold and are translated.
#
# Usage: benches/startup.sh [--morph PATH] [--n N] [--runs R]
#        benches/startup.sh [--morph PATH] --against OLD [--pairs P]
# With --against, only the cold start, of two builds: P pairs of cold runs (default 200),
# the two builds alternated and the order swapped every pair, so that the host's slow
# spells fall on both alike; prints each build's median and the median of the pairs'
# differences. A best-of-R cold time moves by ±10 % from one invocation to the next on a
# shared VM; the paired median resolves a tenth of a millisecond.
# Needs the Debian i386 sysroot (`morph sysroot`) and gcc-multilib.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
MORPH=$ROOT/target/x86_64-unknown-linux-gnu/release/morph
N=50
RUNS=5
AGAINST=
PAIRS=200
while [ $# -gt 0 ]; do
	case $1 in
	--morph) MORPH=$2; shift 2 ;;
	--n) N=$2; shift 2 ;;
	--runs) RUNS=$2; shift 2 ;;
	--against) AGAINST=$2; shift 2 ;;
	--pairs) PAIRS=$2; shift 2 ;;
	*) echo "usage: $0 [--morph PATH] [--n N] [--runs R] | [--morph PATH] --against OLD [--pairs P]" >&2; exit 2 ;;
	esac
done
[ -z "$AGAINST" ] || [ -x "$AGAINST" ] || { echo "$0: --against $AGAINST: not an executable" >&2; exit 2; }
case $PAIRS in '' | *[!0-9]* | 0) echo "$0: --pairs $PAIRS: a positive number" >&2; exit 2 ;; esac
[ -x "$MORPH" ] || (cd "$ROOT" && cargo build --release -q)
SYS=$("$MORPH" sysroot)
"$ROOT/guests/seed/build.sh" "$SYS/seed" >/dev/null
# Natively: a plain chroot (hello and the loops need neither /dev nor /proc; a mount
# namespace would add its own set-up time to every cold run).
if [ "$(id -u)" = 0 ]; then NATIVE=(chroot "$SYS"); else NATIVE=(unshare -r chroot "$SYS"); fi

ms() { awk -v us="$1" -v n="${2:-1}" 'BEGIN { printf "%8.2f", us / n / 1000 }'; }

# Microseconds one cold run of build $1 takes (bash's clock: no process forked to read it).
cold_us() {
	local t0 t1
	t0=${EPOCHREALTIME/./}
	"$1" run --root "$SYS" --engine dbt --key physical /seed/hello >/dev/null 2>&1 || { echo "FAILED: $1" >&2; exit 1; }
	t1=${EPOCHREALTIME/./}
	echo $((t1 - t0))
}

if [ -n "$AGAINST" ]; then
	new=() old=()
	for ((i = 0; i < PAIRS; i++)); do
		if ((i % 2 == 0)); then
			n=$(cold_us "$MORPH") o=$(cold_us "$AGAINST")
		else
			o=$(cold_us "$AGAINST") n=$(cold_us "$MORPH")
		fi
		new+=("$n") old+=("$o")
	done
	median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }
	diffs=()
	for ((i = 0; i < PAIRS; i++)); do diffs+=($((new[i] - old[i]))); done
	mn=$(median "${new[@]}") mo=$(median "${old[@]}") md=$(median "${diffs[@]}")
	faster=0
	for d in "${diffs[@]}"; do ((d < 0)) && faster=$((faster + 1)); done
	printf "cold start, %d alternated pairs (morph run --key physical /seed/hello)\n" "$PAIRS"
	printf "%-8s %10s ms  %s\n" new "$(ms "$mn")" "$MORPH" old "$(ms "$mo")" "$AGAINST"
	printf "paired difference (new - old): median %s ms, ratio of medians %s, new faster in %d of %d pairs\n" \
		"$(ms "$md" | tr -d ' ')" "$(awk -v a="$mn" -v b="$mo" 'BEGIN { printf "%.3f", a / b }')" "$faster" "$PAIRS"
	exit 0
fi

# best-of-RUNS wall seconds of a command
best() {
	local b=999999 t0 t1 t
	for _ in $(seq "$RUNS"); do
		t0=$(date +%s%N)
		"$@" >/dev/null 2>&1 || { echo "FAILED: $*" >&2; exit 1; }
		t1=$(date +%s%N)
		t=$(((t1 - t0) / 1000))
		[ "$t" -lt "$b" ] && b=$t
	done
	echo "$b"
}
loop="for ((i = 0; i < $N; i++)); do /seed/hello; done"
loop6="for ((i = 0; i < 6 * $N; i++)); do /seed/hello; done"
empty="for ((i = 0; i < $N; i++)); do :; done"

printf "%-22s %10s %10s %10s\n" "per-exec (ms)" "cold" "warm" "steady"
# One row: cold, warm and steady for the command prefix "$@".
row() {
	local name=$1 cold w1 w0 w6
	shift
	cold=$(best "$@" /seed/hello)
	w1=$(best "$@" /bin/bash -c "$loop")
	w0=$(best "$@" /bin/bash -c "$empty")
	w6=$(best "$@" /bin/bash -c "$loop6")
	printf "%-22s %10s %10s %10s\n" "$name" "$(ms "$cold")" "$(ms $((w1 - w0)) "$N")" "$(ms $((w6 - w1)) $((5 * N)))"
	last_cold=$cold
}
row native "${NATIVE[@]}"
native_cold=$last_cold
for key in virtual physical process; do
	row "morph --key $key" "$MORPH" run --root "$SYS" --engine dbt --key "$key"
done
m=("$MORPH" run --root "$SYS" --engine interp)
printf "%-22s %10s %10s %10s\n" "morph interp" "$(ms "$(best "${m[@]}" /seed/hello)")" "-" "-"
if command -v qemu-i386 >/dev/null; then
	printf "%-22s %10s %10s %10s\n" qemu-i386 "$(ms "$(best qemu-i386 -L "$SYS" "$SYS/seed/hello")")" "-" "-"
fi
echo "(cold = one process per exec, best of $RUNS; warm = ($N execs in one bash - empty loop) / $N; steady = ($((6 * N)) execs - $N execs) / $((5 * N)); native cold $(ms "$native_cold") ms)"
