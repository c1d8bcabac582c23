#!/usr/bin/env bash
# Guest CPU benchmark suite: runs every benchmark of guests/bench/ natively,
# under morph's translator, under morph's interpreter and under qemu-i386
# (when installed), checks that every output equals the native one, and
# prints wall times and slowdown ratios.  See benches/README.md.
#
# Usage: benches/suite.sh [--morph PATH] [--runs N] [--quick] [--csv FILE]
#                         [--only NAME,NAME...] [--timeout SECS] [--once-after SECS]
#                         [--no-qemu] [--layouts]
#
#   --morph PATH       morph binary (default target/x86_64-unknown-linux-gnu/release/morph, built with
#                      `cargo build --release` when missing)
#   --runs N           best of N wall times per configuration (default 3; 1 with --quick)
#   --quick            small iteration counts: a smoke run, the times mean little
#   --csv FILE         also write one CSV row per benchmark to FILE
#   --only LIST        run only these benchmarks (comma separated)
#   --timeout SECS     kill an emulated run after SECS (default 1800; 0 = never)
#   --once-after SECS  an emulated configuration whose first run takes longer
#                      than SECS is not repeated (default 120; 0 = always repeat)
#   --no-qemu          skip the qemu-i386 columns even if qemu-i386 is installed
#   --layouts          morph's translator run r places its translations with
#                      --layout-seed r, and its time is the median of the runs
#                      instead of the best: a ratio over code placements, which
#                      move one benchmark by up to a quarter (docs/results.md § Stop 44)
#
# Exit status: 0 when every run produced the native output, 1 when any
# benchmark FAILed (wrong output, non-zero exit status, timeout), 2 on usage
# or build errors.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 2

# Iteration counts: the full count is each program's built-in default (about
# one second natively on the reference machine); the interpreter runs the
# smaller count and its time is scaled by full/interp (see README.md).
#          name       full  interp  quick  quick-interp
BENCHES=(
	"crc32      420    10    4    1"
	"sieve      150    5     2    1"
	"heapsort   150    3     2    1"
	"matmul     460    10    4    1"
	"strsearch  160    4     2    1"
	"bytecode   550    5     2    1"
	"fib        3000   30    8    3"
	"x87        6000   60    10   2"
)

MORPH=""
RUNS=""
QUICK=0
CSV=""
ONLY=""
TIMEOUT=1800
ONCE_AFTER=120
USE_QEMU=1
LAYOUTS=0
QEMU=${QEMU:-qemu-i386}

usage() {
	sed -n '/^# Usage:/,/^# or build errors/p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
	exit 2
}

while [ $# -gt 0 ]; do
	case $1 in
	--morph) [ $# -ge 2 ] || usage; MORPH=$2; shift 2 ;;
	--runs) [ $# -ge 2 ] || usage; RUNS=$2; shift 2 ;;
	--quick) QUICK=1; shift ;;
	--csv) [ $# -ge 2 ] || usage; CSV=$2; shift 2 ;;
	--only) [ $# -ge 2 ] || usage; ONLY=$2; shift 2 ;;
	--timeout) [ $# -ge 2 ] || usage; TIMEOUT=$2; shift 2 ;;
	--once-after) [ $# -ge 2 ] || usage; ONCE_AFTER=$2; shift 2 ;;
	--no-qemu) USE_QEMU=0; shift ;;
	--layouts) LAYOUTS=1; shift ;;
	-h | --help) usage ;;
	*) echo "suite.sh: unknown argument: $1" >&2; usage ;;
	esac
done
if [ -z "$RUNS" ]; then
	if [ "$QUICK" = 1 ]; then RUNS=1; else RUNS=3; fi
fi
for v in "$RUNS" "$TIMEOUT" "$ONCE_AFTER"; do
	case $v in
	'' | *[!0-9]*) echo "suite.sh: not a number: '$v'" >&2; exit 2 ;;
	esac
done
if [ "$RUNS" -lt 1 ]; then
	echo "suite.sh: --runs must be at least 1" >&2
	exit 2
fi

log() { echo "suite: $*" >&2; }

# ---- build -----------------------------------------------------------------
GUESTS="$ROOT/target/bench-guests"
if ! guests/bench/build.sh "$GUESTS" >&2; then
	echo "suite.sh: building the benchmark guests failed" >&2
	exit 2
fi
if [ -z "$MORPH" ]; then
	MORPH="$ROOT/target/x86_64-unknown-linux-gnu/release/morph"
	if [ ! -x "$MORPH" ]; then
		log "$MORPH is missing: cargo build --release"
		cargo build --release >&2 || { echo "suite.sh: cargo build failed" >&2; exit 2; }
	fi
fi
if [ ! -x "$MORPH" ]; then
	echo "suite.sh: morph binary not found: $MORPH" >&2
	exit 2
fi
MORPH=$(cd "$(dirname "$MORPH")" && pwd)/$(basename "$MORPH")
HAVE_QEMU=0
if [ "$USE_QEMU" = 1 ] && command -v "$QEMU" >/dev/null 2>&1; then
	HAVE_QEMU=1
	QEMU=$(command -v "$QEMU")
fi

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# ---- measuring ----------------------------------------------------------------
now_us() {
	local t=$EPOCHREALTIME
	echo "${t//[!0-9]/}"
}

# run_once OUT CMD...: runs CMD (stdout to OUT, stderr to OUT.err) in $WORK/cwd,
# sets RC and US (wall microseconds)
run_once() {
	local out=$1 t0 t1
	shift
	mkdir -p "$WORK/cwd"
	t0=$(now_us)
	if [ "$TIMEOUT" -gt 0 ] && [ "$1" != "native" ]; then
		(cd "$WORK/cwd" && exec timeout -k 10 "$TIMEOUT" "${@:2}") >"$out" 2>"$out.err"
	else
		(cd "$WORK/cwd" && exec "${@:2}") >"$out" 2>"$out.err"
	fi
	RC=$?
	t1=$(now_us)
	US=$((t1 - t0))
}

# measure LABEL REF CMD...: best of RUNS; the output must equal REF (a file)
# and the exit status must be 0.  Sets BEST_US (empty on failure) and appends
# to PROBLEMS on failure.  The first word of CMD is "native" or "emulated".  A
# word @LAYOUT@ in CMD becomes --layout-seed=R in run R with --layouts (and
# BEST_US the median of the runs), and is dropped otherwise.
measure() {
	local label=$1 ref=$2 r out="$WORK/out" w layout=0 all=()
	shift 2
	BEST_US=""
	for ((r = 1; r <= RUNS; r++)); do
		local cmd=()
		for w in "$@"; do
			if [ "$w" = @LAYOUT@ ]; then
				layout=1
				[ "$LAYOUTS" = 1 ] && cmd+=("--layout-seed=$r")
			else
				cmd+=("$w")
			fi
		done
		run_once "$out" "${cmd[@]}"
		if [ "$RC" -ne 0 ] || ! cmp -s "$out" "$ref"; then
			local why
			if [ "$RC" -eq 124 ] && [ "$1" != native ] && [ "$TIMEOUT" -gt 0 ]; then
				why="timed out after ${TIMEOUT}s"
			elif [ "$RC" -ne 0 ]; then
				why="exit status $RC"
			else
				why="output differs from native"
			fi
			PROBLEMS+=("$label: $why (run $r: ${*:2})")
			if ! cmp -s "$out" "$ref"; then
				PROBLEMS+=("$(diff "$ref" "$out" | head -n 6 | sed 's/^/    /')")
			fi
			if [ -s "$out.err" ]; then
				PROBLEMS+=("$(tail -n 6 "$out.err" | sed 's/^/    stderr: /')")
			fi
			BEST_US=""
			return 1
		fi
		all+=("$US")
		if [ -z "$BEST_US" ] || [ "$US" -lt "$BEST_US" ]; then
			BEST_US=$US
		fi
		if [ "$1" != native ] && [ "$ONCE_AFTER" -gt 0 ] && [ "$r" -lt "$RUNS" ] &&
			[ "$US" -gt $((ONCE_AFTER * 1000000)) ]; then
			NOTES+=("$label: first run took $(secs "$US") s > ${ONCE_AFTER} s, measured once")
			break
		fi
	done
	if [ "$LAYOUTS" = 1 ] && [ "$layout" = 1 ]; then
		BEST_US=$(median "${all[@]}")
	fi
	return 0
}

secs() { awk -v u="$1" 'BEGIN { printf "%.3f", u / 1e6 }'; }
# ratio A_US B_US [SCALE]
ratio() { awk -v a="$1" -v b="$2" -v s="${3:-1}" 'BEGIN { printf "%.2f", a * s / b }'; }
median() {
	if [ $# -eq 0 ]; then
		echo "-"
		return
	fi
	printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 }
		END { if (NR % 2) printf "%.2f", v[(NR + 1) / 2];
		      else printf "%.2f", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# ---- the runs -------------------------------------------------------------------
PROBLEMS=()
NOTES=()
ROWS=()
CSV_ROWS=()
M_RATIOS=()
I_RATIOS=()
Q_RATIOS=()
FAILED=0

host_cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
log "morph: $MORPH; runs: $RUNS; quick: $QUICK; qemu: $([ $HAVE_QEMU = 1 ] && echo "$QEMU" || echo no)"

for line in "${BENCHES[@]}"; do
	read -r name full icount qfull qicount <<<"$line"
	if [ -n "$ONLY" ] && [[ ",$ONLY," != *",$name,"* ]]; then
		continue
	fi
	if [ "$QUICK" = 1 ]; then
		full=$qfull
		icount=$qicount
	fi
	bin="$GUESTS/$name"
	log "$name: native ($full iterations)"

	# reference outputs: the native run itself (checked for determinism
	# across the native runs) and a native run at the interpreter's count
	ref="$WORK/ref-$name"
	iref="$WORK/iref-$name"
	run_once "$ref" native "$bin" "$full"
	nat_s=FAIL m_s=- m_r=- i_s=- i_r=- q_s=- q_r=-
	if [ "$RC" -ne 0 ]; then
		PROBLEMS+=("$name: native run failed with status $RC: $(head -n 2 "$ref")")
		FAILED=1
		ROWS+=("$name|$nat_s|$m_s|$m_r|$i_r|$q_s|$q_r")
		CSV_ROWS+=("$name,$full,,,,$icount,,,,,native FAIL")
		continue
	fi
	run_once "$iref" native "$bin" "$icount"
	if ! measure "$name native" "$ref" native "$bin" "$full"; then
		FAILED=1
		ROWS+=("$name|$nat_s|$m_s|$m_r|$i_r|$q_s|$q_r")
		CSV_ROWS+=("$name,$full,,,,$icount,,,,,native FAIL")
		continue
	fi
	nat_us=$BEST_US
	nat_s=$(secs "$nat_us")
	status=""
	m_us="" i_us="" q_us=""

	log "$name: morph dbt"
	if measure "$name morph --engine dbt" "$ref" emulated \
		"$MORPH" run --engine dbt --key physical @LAYOUT@ "$bin" "$full"; then
		m_us=$BEST_US
		m_s=$(secs "$m_us")
		m_r=$(ratio "$m_us" "$nat_us")
		M_RATIOS+=("$m_r")
	else
		m_s=FAIL
		status="morph FAIL"
		FAILED=1
	fi

	log "$name: morph interp ($icount iterations)"
	if measure "$name morph --engine interp" "$iref" emulated \
		"$MORPH" run --engine interp "$bin" "$icount"; then
		i_us=$BEST_US
		i_s=$(secs "$i_us")
		i_r=$(ratio "$i_us" "$nat_us" "$(awk -v f="$full" -v i="$icount" 'BEGIN { print f / i }')")
		I_RATIOS+=("$i_r")
	else
		i_s=FAIL
		i_r=FAIL
		status="${status:+$status; }interp FAIL"
		FAILED=1
	fi

	if [ "$HAVE_QEMU" = 1 ]; then
		log "$name: qemu-i386"
		if measure "$name qemu-i386" "$ref" emulated "$QEMU" "$bin" "$full"; then
			q_us=$BEST_US
			q_s=$(secs "$q_us")
			q_r=$(ratio "$q_us" "$nat_us")
			Q_RATIOS+=("$q_r")
		else
			q_s=FAIL
			status="${status:+$status; }qemu FAIL"
			FAILED=1
		fi
	fi
	status=${status:-ok}
	ROWS+=("$name|$nat_s|$m_s|$m_r|$i_r|$q_s|$q_r")
	CSV_ROWS+=("$name,$full,$nat_s,${m_us:+$m_s},${m_us:+$m_r},$icount,${i_us:+$i_s},${i_us:+$i_r},${q_us:+$q_s},${q_us:+$q_r},$status")
done

# ---- report ------------------------------------------------------------------------
echo
echo "guest benchmarks: best of $RUNS wall times$([ "$LAYOUTS" = 1 ] && echo " (morph dbt: the median over --layout-seed 1..$RUNS)")$([ "$QUICK" = 1 ] && echo " (--quick: small counts, times not meaningful)")"
echo "host: $host_cpu, $(nproc) CPUs; morph: $MORPH"
echo "morph = run --engine dbt --key physical; interp/native is scaled from a smaller run (see benches/README.md)"
echo
# table_row BENCHMARK NATIVE MORPH MORPH/NATIVE INTERP/NATIVE QEMU QEMU/NATIVE
table_row() {
	if [ "$HAVE_QEMU" = 1 ]; then
		printf "%-10s %9s %9s %12s %14s %9s %11s\n" "$@"
	else
		printf "%-10s %9s %9s %12s %14s\n" "${@:1:5}"
	fi
}
table_row benchmark "native s" "morph s" morph/native "interp/native" "qemu s" qemu/native
for row in "${ROWS[@]}"; do
	IFS='|' read -r c1 c2 c3 c4 c5 c6 c7 <<<"$row"
	table_row "$c1" "$c2" "$c3" "$c4" "$c5" "$c6" "$c7"
done
m_med=$(median "${M_RATIOS[@]}")
i_med=$(median "${I_RATIOS[@]}")
q_med=""
[ "$HAVE_QEMU" = 1 ] && q_med=$(median "${Q_RATIOS[@]}")
table_row median "" "" "$m_med" "$i_med" "" "$q_med"
echo
echo "median morph/native: $m_med${q_med:+; median qemu/native: $q_med}; median interp/native (scaled): $i_med"

if [ ${#NOTES[@]} -gt 0 ]; then
	echo
	printf 'note: %s\n' "${NOTES[@]}"
fi
if [ ${#PROBLEMS[@]} -gt 0 ]; then
	echo
	echo "FAILURES:"
	printf '%s\n' "${PROBLEMS[@]}"
fi

if [ -n "$CSV" ]; then
	{
		echo "benchmark,iterations,native_s,morph_s,morph_native,interp_iterations,interp_s,interp_native_scaled,qemu_s,qemu_native,status"
		printf '%s\n' "${CSV_ROWS[@]}"
	} >"$CSV"
	log "wrote $CSV"
fi
exit "$FAILED"
