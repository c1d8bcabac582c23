#!/usr/bin/env bash
# Native self-check of the guest programs built by build.sh.
#
#   guests/verify.sh OUTDIR [--qemu]
#
# Runs every program, both variants, twice each on this host (i386
# binaries must be runnable natively), and checks that stdout, stderr and
# the exit status are the same across the two runs and across the static
# and static-PIE variants, and that the exit status is the expected one.
# Each run happens in a fresh scratch directory with the binary copied in
# as ./<name> (so argv[0] is the same for both variants) and a fixed
# environment.  With --qemu the static variant is also run under
# qemu-i386 and any difference is reported (informational only: qemu's
# x87 and some corner cases are known to differ, see README.md).
set -euo pipefail

if [ $# -lt 1 ]; then
	echo "usage: $0 OUTDIR [--qemu]" >&2
	exit 2
fi
OUT=$(cd "$1" && pwd)
QEMU=${2:-}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

expected_status() {
	case $1 in
	fault_segv) echo 139 ;;	# 128 + SIGSEGV
	fault_div) echo 136 ;;	# 128 + SIGFPE
	fault_ill) echo 132 ;;	# 128 + SIGILL
	exit_code) echo 42 ;;
	*) echo 0 ;;
	esac
}

program_args() {
	case $1 in
	args) printf '%s\n' alpha "two words" "" ;;
	*) ;;
	esac
}

# run NAME BINARY RUNNER... -> writes $WORK/res/{out,err,status}
run() {
	local name=$1 bin=$2 tag=$3
	shift 3
	local dir="$WORK/run-$tag"
	local -a args=()
	rm -rf "$dir"
	mkdir -p "$dir"
	cp "$bin" "$dir/$name"
	while IFS= read -r a; do args+=("$a"); done < <(program_args "$name")
	# the outer redirection only swallows the shell's own "Segmentation
	# fault" style notices; the program's stderr goes to its file
	(
		cd "$dir"
		set +e
		env -i PATH=/usr/bin:/bin LANG=C GUEST_VAR=value \
			"$@" "./$name" "${args[@]}" >"$WORK/$tag.out" 2>"$WORK/$tag.err"
		echo $? >"$WORK/$tag.status"
	) 2>/dev/null
}

same() {
	cmp -s "$WORK/$1.out" "$WORK/$2.out" && cmp -s "$WORK/$1.err" "$WORK/$2.err" &&
		cmp -s "$WORK/$1.status" "$WORK/$2.status"
}

fail=0
pass=0
for src in "$HERE"/src/*.c; do
	name=$(basename "$src" .c)
	want=$(expected_status "$name")
	run "$name" "$OUT/$name" s1
	run "$name" "$OUT/$name" s2
	run "$name" "$OUT/$name.pie" p1
	run "$name" "$OUT/$name.pie" p2
	problems=""
	same s1 s2 || problems+=" static-runs-differ"
	same p1 p2 || problems+=" pie-runs-differ"
	same s1 p1 || problems+=" static-vs-pie-differ"
	[ "$(cat "$WORK/s1.status")" = "$want" ] || problems+=" status=$(cat "$WORK/s1.status")(want $want)"
	[ -s "$WORK/s1.out" ] || problems+=" no-output"
	if [ -n "$problems" ]; then
		echo "FAIL $name:$problems"
		fail=$((fail + 1))
	else
		pass=$((pass + 1))
	fi
	if [ "$QEMU" = "--qemu" ]; then
		run "$name" "$OUT/$name" q1 qemu-i386
		# qemu reports a guest's fatal signal itself, on stderr
		if [ "$want" -ge 128 ]; then : >"$WORK/q1.err"; : >"$WORK/s1.err"; fi
		if ! same s1 q1; then
			n=$(diff "$WORK/s1.out" "$WORK/q1.out" | grep -c '^<' || true)
			echo "qemu-i386 differs on $name ($n stdout lines, status $(cat "$WORK/q1.status"))"
		fi
	fi
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
