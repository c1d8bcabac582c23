#!/bin/bash
# trap on EXIT, USR1, ERR, CHLD, TERM; kill between processes.
# Background commands read `empty.in` (bash would open /dev/null, not in the sysroot).
: > empty.in
trap 'echo "EXIT trap, status $?"' EXIT
trap 'echo "USR1 caught"' USR1
kill -USR1 $$
echo "after self-signal"
echo "== ERR"
trap 'echo "ERR trap at line $LINENO status $?"' ERR
false
(exit 4)
true
trap - ERR
false
echo "== child signals the parent"
got=0
trap 'got=$((got + 1)); echo "parent got USR2"' USR2
(kill -USR2 $$; exit 0) < empty.in & c=$!
until wait $c; [ $? -le 128 ]; do :; done
echo "child status collected, got=$got"
echo "== parent signals a child that traps"
rm -f ready
bash -c 'trap "echo child: TERM caught; exit 7" TERM; : > ready; while :; do sleep 0.01; done' < empty.in & c=$!
while [ ! -e ready ]; do sleep 0.01; done
kill -TERM $c; wait $c; echo "child exit: $?"
echo "== ignored signals are inherited"
(trap '' TERM; bash -c 'kill -TERM $$; echo "still alive after TERM"')
(trap '' INT; sleep 0.01 < empty.in & p=$!; kill -INT $p; wait $p; echo "ignored INT: $?")
echo "== CHLD"
n=0
trap 'n=$((n + 1))' CHLD
/bin/true; /bin/true; (exit 2)
sleep 0.01 < empty.in & wait $!
trap - CHLD
echo "CHLD traps: $n"
echo "== trap listing and reset"
trap -p USR1
trap - USR1
trap -p USR1 | wc -l
trap 'echo "TERM trap then exit"; exit 3' TERM
sub() { kill -TERM $$; echo "not reached"; }
sub
echo "not reached either"
