#!/bin/bash
# The seed workload of the 2005 report, on real programs: a bash script that opens a
# TCP socket to a local server and runs two small programs about 50 times each, one
# talking over the already open socket (fd 3), one reading a small file and computing
# over it. Runs the same natively (in a chroot of the sysroot) and under morph.
# Usage: seed.sh [ROUNDS]   (default 50; run from the directory holding the programs)
set -e
cd "$(dirname "$0")"
rounds=${1:-50}
port=$(./echod 1)
exec 3<>/dev/tcp/127.0.0.1/"$port"
ok=0
for ((i = 0; i < rounds; i++)); do
	./sockreq "$i"
	./filecalc data.txt >/dev/null
	ok=$((ok + 1))
done
./filecalc data.txt
exec 3>&-
wait
echo "seed: $ok rounds"
