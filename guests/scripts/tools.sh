#!/bin/bash
# xargs, find (busybox's: findutils is not in the sysroot), env, which, nohup-less
# plumbing: programs that run other programs.
mkdir -p tree/a/b tree/c
for f in tree/a/one.txt tree/a/b/two.txt tree/c/three.log tree/four.txt; do echo "$f" > "$f"; done
echo "== find"
busybox find tree -type f | sort
busybox find tree -name '*.txt' | sort
busybox find tree -type d | sort
busybox find tree -type f -exec cat {} \; | sort
echo "== xargs"
busybox find tree -name '*.txt' | sort | busybox xargs cat
seq 1 10 | busybox xargs -n 3 echo
seq 1 5 | busybox xargs -I{} sh -c 'echo item {}; exit 0'
printf 'a b\nc\n' | busybox xargs printf '[%s]\n'
busybox find tree -type f | sort | busybox xargs wc -c | tail -n 1
echo "== env"
env -i A=1 B=two env
env -i PATH=/usr/bin:/bin X=y sh -c 'echo "X=$X"'
env -u LC_ALL sh -c 'echo "LC_ALL=${LC_ALL-unset}"'
FOO=bar env | busybox grep '^FOO='
env false; echo "env false: $?"
env /no/such 2> env.err; echo "env missing: $?"
echo "== which, command -v, type"
which sort
command -v cat
type -t cd
type -P expr
hash -r; sort --version | head -n 1
echo "== nice"
nice -n 5 sh -c 'echo niced'
