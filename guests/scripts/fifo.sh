#!/bin/bash
# Named pipes: a blocking open waits for the other end (in the scheduler, never in
# the host), reads see the writer's data and then EOF; a FIFO in a pipeline.
mkfifo p1 p2
ls -l p1 | cut -c1
(echo "through the fifo"; echo "second line") > p1 &
while read -r line; do echo "got: $line"; done < p1
wait
# reader first, writer later
cat p2 > out.txt &
sleep 0.05
seq 1 5 > p2
wait
cat out.txt
# both directions at once through two FIFOs
(tr a-z A-Z < p1 > p2) &
echo "upper case please" > p1 &
cat p2
wait
rm p1 p2; ls p1 2>/dev/null || echo "removed"
