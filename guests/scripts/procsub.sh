#!/bin/bash
# Process substitution and /dev/null: need /dev/fd and /dev/null in the guest.
diff_like() { paste "$1" "$2"; }
diff_like <(seq 1 3) <(seq 4 6)
while read -r n; do total=$((total + n)); done < <(seq 1 10)
echo "total $total"
echo discarded > /dev/null; echo "devnull: $?"
wc -c < /dev/null
cat <(echo inner) > >(tr a-z A-Z)
wait
