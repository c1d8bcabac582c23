#!/usr/bin/env bash
# benches/realcmp.sh - runs shell command lines natively and under morph in the same
# Debian i386 root and says whether their stdout and exit status agree (results.md §
# Stop 50: the programs researchers bring).
#
# Usage: benches/realcmp.sh [--morph PATH] [--cache DIR] [--packages LIST] [FILE]
#   FILE: one command line per line (`#` starts a comment), run with /bin/bash in
#   /w of the root, PATH=/usr/bin:/bin and HOME=/w (default: benches/real/programs.txt,
#   whose first line names the packages it needs). The root is assembled by
#   `morph sysroot --cache DIR --packages LIST` (default DIR: $TMPDIR/morph-realcmp).
#   Natively each line runs in a chroot inside a mount namespace with the host's /dev
#   and a fresh /proc (a bare chroot has neither, and programs that read
#   /dev/urandom or /proc fail there, not under morph); under morph with `run --engine
#   dbt --key physical --clear-env`. MORPH_ARGS adds options for morph (e.g.
#   `--cpu tm8600` for programs built for SSE2). Needs root (chroot, unshare -m).
#
# Prints one line per command: SAME or DIFF, both exit statuses, both wall times; for
# a DIFF, the first differing lines and the tails of both stderrs.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT_DIR=$(cd "$HERE/.." && pwd)
MORPH=$ROOT_DIR/target/x86_64-unknown-linux-gnu/release/morph
CACHE=${TMPDIR:-/tmp}/morph-realcmp
PACKAGES=""
FILE=$HERE/real/programs.txt
while [ $# -gt 0 ]; do
	case $1 in
	--morph) MORPH=$2; shift 2 ;;
	--cache) CACHE=$2; shift 2 ;;
	--packages) PACKAGES=$2; shift 2 ;;
	-*) echo "usage: $0 [--morph PATH] [--cache DIR] [--packages LIST] [FILE]" >&2; exit 2 ;;
	*) FILE=$1; shift ;;
	esac
done
[ -x "$MORPH" ] || (cd "$ROOT_DIR" && cargo build --release -q -p morph --bin morph) || exit 1
if [ -z "$PACKAGES" ]; then
	PACKAGES=$(sed -n 's/^# packages: *//p' "$FILE" | head -1)
fi
R=$("$MORPH" sysroot --cache "$CACHE" ${PACKAGES:+--packages "$PACKAGES"}) || exit 1
mkdir -p "$R/w" "$R/dev" "$R/proc"
cp "$HERE"/real/cmp/* "$R/w/"
# A text file the command lines may read (deterministic, 2.9 MB).
[ -f "$R/w/text" ] || python3 - "$R/w/text" <<'PY'
import random, sys
random.seed(1)
words = ["".join(random.choice("abcdefghij") for _ in range(random.randint(2, 8))) for _ in range(2000)]
open(sys.argv[1], "w").write("\n".join(" ".join(random.choice(words) for _ in range(12)) for _ in range(40000)))
PY
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
now() { date +%s.%N; }
while IFS= read -r line; do
	case $line in "" | "#"*) continue ;; esac
	printf 'export PATH=/usr/bin:/bin HOME=/w\ncd /w\n%s\n' "$line" > "$R/w/.realcmp.sh"
	t0=$(now)
	env -i unshare -m /bin/sh -c "mount --bind /dev '$R/dev' && mount -t proc proc '$R/proc' && exec chroot '$R' /bin/bash /w/.realcmp.sh" \
		> "$out/n.out" 2> "$out/n.err" < /dev/null
	nrc=$?
	t1=$(now)
	# shellcheck disable=SC2086 # MORPH_ARGS is a list of options
	timeout 600 "$MORPH" run --engine dbt --key physical --clear-env ${MORPH_ARGS:-} --root "$R" -- /bin/bash /w/.realcmp.sh \
		> "$out/m.out" 2> "$out/m.err" < /dev/null
	mrc=$?
	t2=$(now)
	if cmp -s "$out/n.out" "$out/m.out" && [ "$nrc" = "$mrc" ]; then s=SAME; else s=DIFF; fi
	printf '%s  status %s/%s  native %.2f s  morph %.2f s  %s\n' "$s" "$nrc" "$mrc" \
		"$(echo "$t1 - $t0" | bc)" "$(echo "$t2 - $t1" | bc)" "$line"
	if [ "$s" = DIFF ]; then
		diff <(head -c 3000 "$out/n.out") <(head -c 3000 "$out/m.out") | head -10
		echo "-- native stderr"; tail -5 "$out/n.err"
		echo "-- morph stderr"; tail -5 "$out/m.err"
	fi
done < "$FILE"
