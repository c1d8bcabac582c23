#!/bin/bash
# The seed workload's shape: about a hundred fork+execs of small dynamically linked
# programs, one of which reads a small file and processes it in memory.
printf 'alpha\nbeta\ngamma\ndelta\n' > small.txt
n=0
for i in $(/usr/bin/seq 1 20); do
  /bin/true
  /bin/echo "round $i" > round.txt
  /usr/bin/expr "$i" \* 3 > expr.txt
  /bin/cat small.txt round.txt > both.txt
  /usr/bin/wc -l both.txt > count.txt
  n=$((n + 1))
done
cat round.txt expr.txt count.txt
echo "rounds: $n"
