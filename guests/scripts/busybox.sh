#!/bin/bash
# busybox sh running a script and one-liners; bash's sh.
: > bb.in  # background jobs read it: busybox sh, like bash, would open /dev/null
cat > bb.sh <<'END'
i=0
while [ $i -lt 5 ]; do
  i=$((i + 1))
  case $i in
    2|4) echo "even $i" ;;
    *) echo "odd $i" ;;
  esac
done
f() { echo "f got $# args: $*"; return 3; }
f a b c; echo "f status $?"
x=$(echo sub | tr a-z A-Z); echo "$x"
echo piped | while read -r w; do echo "read $w"; done
( exit 6 ); echo "subshell $?"
sleep 0.01 < bb.in & wait $!; echo "bg $?"
# Whether the shell reports "Terminated" races natively (the kill can land before or
# after the child execs sleep): the report goes to /dev/null, the status is checked.
{ sleep 5 < bb.in & k=$!; kill $k; wait $k; echo "killed $?"; } 2>/dev/null
trap 'echo trapped EXIT' EXIT
exit 2
END
busybox sh bb.sh; echo "busybox sh bb.sh: $?"
busybox sh -c 'echo "$0 $1 $2"; echo $((6 * 7))' me one two
busybox sh -c 'for w in c a b; do echo $w; done | busybox sort'
sh bb.sh; echo "bash as sh: $?"
sh -c 'echo posix $((1 + 1)); false'; echo "sh -c: $?"
echo "== busybox applets in a pipeline"
seq 1 30 | busybox grep 3 | busybox wc -l
printf 'b\na\nc\n' | busybox sort | busybox tr a-z A-Z | busybox head -n 2
echo "hello world" | busybox sed 's/world/there/'
echo "1 2 3" | busybox awk '{ print $1 + $2 + $3 }'
busybox expr 6 \* 7
busybox basename /a/b/c.txt .txt
busybox seq 3 | busybox xargs echo args:
