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
# Needs the Debian i386 sysroot (`morph sysroot`) and gcc-multilib.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
MORPH=$ROOT/target/x86_64-unknown-linux-gnu/release/morph
N=50
RUNS=5
while [ $# -gt 0 ]; do
	case $1 in
	--morph) MORPH=$2; shift 2 ;;
	--n) N=$2; shift 2 ;;
	--runs) RUNS=$2; shift 2 ;;
	*) echo "usage: $0 [--morph PATH] [--n N] [--runs R]" >&2; exit 2 ;;
	esac
done
[ -x "$MORPH" ] || (cd "$ROOT" && cargo build --release -q)
SYS=$("$MORPH" sysroot)
"$ROOT/guests/seed/build.sh" "$SYS/seed" >/dev/null
# Natively: a plain chroot (hello and the loops need neither /dev nor /proc; a mount
# namespace would add its own set-up time to every cold run).
if [ "$(id -u)" = 0 ]; then NATIVE=(chroot "$SYS"); else NATIVE=(unshare -r chroot "$SYS"); fi

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
ms() { awk -v us="$1" -v n="${2:-1}" 'BEGIN { printf "%8.2f", us / n / 1000 }'; }
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
