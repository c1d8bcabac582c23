#!/usr/bin/env bash
# Stops the single-node Slurm that start.sh started in DIR (default /tmp/morph-slurm),
# by the pids it recorded; the directory is kept.
set -uo pipefail
dir=${1:-/tmp/morph-slurm}
for p in "$dir/slurmd.pid" "$dir/slurmctld.pid" "$dir/munge/munged.pid"; do
  [ -f "$p" ] && kill "$(cat "$p")" 2>/dev/null
done
exit 0
