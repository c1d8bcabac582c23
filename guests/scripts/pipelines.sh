#!/bin/bash
# Multi-stage pipelines of coreutils, and the status of a pipeline.
cat > words.txt <<'END'
the quick brown fox jumps over the lazy dog
the dog barks and the fox runs
a quick brown dog
END
echo "== word frequencies"
tr ' ' '\n' < words.txt | sort | uniq -c | sort -k1,1nr -k2 | head -n 5
echo "== counts"
wc -l < words.txt
cat words.txt | wc -w
tr -d '\n' < words.txt | wc -c
echo "== seq | paste | cut"
seq 1 12 | paste - - - | cut -f 2,3
seq 10 | tr '\n' ' ' | tr -s ' '; echo
seq 5 -1 1 | sort -n | tail -n 2
echo "== tee"
seq 3 | tee copy.txt | busybox sed 's/^/line /'
cat copy.txt
echo "== long pipeline"
seq 1 200 | busybox grep -v 7 | awk '{ s += $1 } END { print s }'
seq 1 200 | sort -rn | head -n 3 | tr '\n' ,; echo
seq 1 1000 | sort -r | sort -n | uniq | tail -n 1 | cut -c 1-3 | busybox rev | cat
echo "== statuses"
true | false; echo "true|false: $? ${PIPESTATUS[*]}"
false | true; echo "false|true: $? ${PIPESTATUS[*]}"
(exit 3) | (exit 4) | (exit 5); echo "3|4|5: ${PIPESTATUS[*]}"
! false; echo "!false: $?"
echo "== big pipe"
seq 1 20000 | cat | cat | tail -n 1
head -c 100000 /bin/bash | od -An -tx1 | wc -l
yes hello | head -n 3
