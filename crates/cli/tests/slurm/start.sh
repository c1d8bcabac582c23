#!/usr/bin/env bash
# Starts a single-node Slurm (munged, slurmctld, slurmd) on this machine for the tests,
# all of its state under one directory, and prints that directory's slurm.conf path.
#
#   crates/cli/tests/slurm/start.sh [DIR]      (DIR default: /tmp/morph-slurm)
#   export SLURM_CONF=DIR/slurm.conf           (then sbatch, squeue, sinfo talk to it)
#
# Idempotent: when the daemons of DIR are already running and the node is idle it
# changes nothing. Needs root (the daemons run as root, as in a CI container without
# systemd) and Debian's slurm-wlm and munge. stop.sh DIR stops what this started.
set -euo pipefail

dir=${1:-/tmp/morph-slurm}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
chmod 0755 "$dir"
conf=$dir/slurm.conf
export SLURM_CONF=$conf

for tool in munged slurmctld slurmd sinfo sbatch; do
  command -v "$tool" >/dev/null || { echo "start.sh: $tool not found (apt-get install slurm-wlm munge)" >&2; exit 2; }
done
[ "$(id -u)" = 0 ] || { echo "start.sh: must run as root (slurmd runs jobs as their user)" >&2; exit 2; }

# One start at a time (tests of several worktrees may call this together).
# The daemons get `9>&-`: holding the lock they would block every later start.
exec 9>"$dir/start.lock"
flock -w 120 9 || { echo "start.sh: $dir/start.lock is held by another start for 120 s" >&2; exit 1; }

alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

# munge: its own key, socket, pid and log under $dir.
mkdir -p "$dir/munge"
chmod 0700 "$dir/munge"
if ! alive "$dir/munge/munged.pid"; then
  if [ ! -s "$dir/munge/munge.key" ]; then
    head -c 1024 /dev/urandom > "$dir/munge/munge.key"
  fi
  chmod 0400 "$dir/munge/munge.key"
  rm -f "$dir/munge/munge.sock"
  munged --force --socket="$dir/munge/munge.sock" --key-file="$dir/munge/munge.key" \
    --pid-file="$dir/munge/munged.pid" --log-file="$dir/munge/munged.log" \
    --seed-file="$dir/munge/munged.seed" 9>&-
fi

mkdir -p "$dir/state" "$dir/spool" "$dir/log"
cpus=$(nproc)
cat > "$conf.new" <<CONF
ClusterName=morphtest
SlurmctldHost=localhost
SlurmctldPort=16817
SlurmdPort=16818
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.sock
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
ReturnToService=2
SlurmdTimeout=300
SchedulerParameters=sched_interval=1
MaxArraySize=100001
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
CONF
if ! cmp -s "$conf.new" "$conf"; then
  mv "$conf.new" "$conf"
  changed=1
else
  rm -f "$conf.new"
  changed=0
fi

if [ "$changed" = 1 ]; then
  # A new configuration: restart whatever ran with the old one.
  for p in slurmd slurmctld; do
    if alive "$dir/$p.pid"; then kill "$(cat "$dir/$p.pid")"; sleep 1; fi
  done
fi
if ! alive "$dir/slurmctld.pid"; then
  slurmctld -f "$conf" 9>&-
fi
if ! alive "$dir/slurmd.pid"; then
  slurmd -f "$conf" -N localhost 9>&-
fi

# Wait (up to 60 s) for the node to be idle (or mixed/allocated when jobs already run).
for _ in $(seq 120); do
  state=$(sinfo -h -N -n localhost -o %T 2>/dev/null || true)
  case $state in
    idle|mixed|allocated) echo "$conf"; exit 0 ;;
    down*|drain*) scontrol update NodeName=localhost State=RESUME 2>/dev/null || true ;;
  esac
  sleep 0.5
done
echo "start.sh: the node did not become idle (state '${state:-none}'); logs in $dir/log" >&2
tail -n 20 "$dir/log/slurmctld.log" "$dir/log/slurmd.log" >&2 || true
exit 1
