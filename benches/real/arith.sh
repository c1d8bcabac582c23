# bash arithmetic loop: the shell's own interpreter, no fork.
i=0; s=0
while [ $i -lt 100000 ]; do s=$(( (s + i * 7) % 1000003 )); i=$((i + 1)); done
echo "$s"
