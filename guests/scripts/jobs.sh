#!/bin/bash
# Background jobs, `wait` with exit statuses, and deaths by signal.
# A non-interactive bash points a background command's stdin at /dev/null unless the
# command redirects it; the sysroot has no /dev yet, so every job reads `empty.in`.
: > empty.in
(exit 3) < empty.in & p1=$!
(sleep 0.05; exit 5) < empty.in & p2=$!
bash -c 'exit 7' < empty.in & p3=$!
wait $p2; echo "p2 -> $?"
wait $p1; echo "p1 -> $?"
wait $p3; echo "p3 -> $?"
echo "== killed by signals"
# bash reports deaths by some signals on stderr with the pid: keep the words only.
{
sleep 5 < empty.in & k=$!
kill -TERM $k; wait $k; echo "TERM -> $?"
sleep 5 < empty.in & k=$!
kill -KILL $k; wait $k; echo "KILL -> $?"
# (Not INT: an asynchronous job ignores it from the moment its shell sets that up, so
# whether it dies depends on who runs first after fork, natively too.)
sleep 5 < empty.in & k=$!
kill -HUP $k; wait $k; echo "HUP -> $?"
bash -c 'sleep 5' < empty.in & k=$!
sleep 0.05; kill -USR1 $k; wait $k; echo "USR1 -> $?"
} 2> deaths.err
tr -d '0-9 ' < deaths.err
echo "== many jobs"
for i in 1 2 3 4 5 6 7 8; do (exit $i) < empty.in & pids[$i]=$!; done
for i in 8 7 6 5 4 3 2 1; do wait ${pids[$i]}; printf '%d ' $?; done; echo
for i in 1 2 3 4; do (sleep 0.0$i; echo "job $i" > job$i.out) < empty.in & done
wait
cat job1.out job2.out job3.out job4.out
echo "== output of background jobs through a pipe"
{ for i in 1 2 3; do echo "bg $i"; done < empty.in & wait; } | sort -r
(seq 1 3; sleep 0.02; seq 4 6) | tr '\n' ' '; echo
echo "== wait -n and unknown pids"
# In a subshell: its job table starts empty. (In the main shell, a job of the loops
# above that ended before their `wait` ran can stay in the table, dead and not yet
# reported, and `wait -n` reports it first; how likely that is depends on speed.)
(
	(sleep 0.2; exit 11) < empty.in & (exit 12) < empty.in &
	wait -n; echo "first to finish: $?"
	wait -n; echo "second: $?"
)
wait 99999 2> err.txt; echo "wait unknown: $?"
echo "== short jobs"
sleep 0.01 < empty.in & wait $!; echo "short sleep: $?"
true < empty.in & wait; echo "wait all: $?"
for i in $(seq 1 20); do /bin/true < empty.in & done; wait; echo "20 jobs reaped: $?"
