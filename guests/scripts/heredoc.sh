#!/bin/bash
# Here-documents, here-strings and `read` loops fed by pipes.
name=world
cat <<EOT
hello $name
  indented $((1 + 2))
\$literal and `echo backq`
EOT
cat <<'EOT'
no $expansion here $(echo x)
EOT
cat <<-EOT
	tabs are stripped
		but only leading ones
	EOT
tr a-z A-Z <<< "here string $name"
wc -c <<< "12345"
read -r one two rest <<< "a b c d e"; echo "one=$one two=$two rest=$rest"
while read -r line; do echo "got: $line"; done <<EOT
first
second line
EOT
echo "== read loop from a pipe"
seq 1 5 | while read -r i; do echo "square of $i is $((i * i))"; done
printf 'k1=v1\nk2=v2\nk3=v3\n' | while IFS== read -r k v; do echo "$v<-$k"; done
total=0
seq 1 10 > nums.txt
total=0
while read -r n; do total=$((total + n)); done < nums.txt
echo "total $total"
echo "== read with a pipe in the body, nested heredoc in a function"
gen() {
  cat <<EOT
$1 alpha
$1 beta
EOT
}
gen X | while read -r p w; do echo "$w" | tr a-z A-Z; done
mapfile -t arr < nums.txt; echo "${#arr[@]} ${arr[4]}"
cat <<EOT | sort -r | head -n 2
b
c
a
EOT
