#!/bin/bash
# Loops, arithmetic, arrays, functions, recursion, case and string operations:
# the parts of bash that run without forking.
echo "== for"
for i in 1 2 3; do printf '%s ' "$i"; done; echo
for ((i = 0; i < 5; i++)); do printf '%d ' $((i * i)); done; echo
for w in alpha "beta gamma" delta; do echo "[$w]"; done
echo "== while/until"
n=0
while [ $n -lt 4 ]; do n=$((n + 1)); done
echo "while: $n"
until [ $n -le 0 ]; do n=$((n - 2)); done
echo "until: $n"
i=0
while true; do i=$((i + 1)); [ $i -eq 3 ] && continue; [ $i -ge 6 ] && break; printf '%d,' $i; done; echo
echo "== arithmetic"
echo $((7 * 6)) $((100 / 7)) $((100 % 7)) $((2 ** 20)) $((-17 / 5)) $((-17 % 5))
echo $((0x1f + 010 + 2#101)) $((1 << 31)) $(((1 << 62) * 2)) $((~5)) $((5 ^ 3)) $((6 & 3 | 8))
x=5; ((x += 10)); ((x *= 3)); echo "x=$x" $((x > 40 ? 1 : 0)) $((x--)) $x $((++x))
let "y = x / 4" "z = y % 3"; echo "y=$y z=$z"
echo "== arrays"
a=(zero one two three)
a[7]=seven
a+=(eight)
echo "${#a[@]} ${a[1]} ${a[-1]} ${!a[*]}"
echo "${a[@]:1:2}"
for k in "${!a[@]}"; do printf '%s=%s ' "$k" "${a[$k]}"; done; echo
unset 'a[2]'; echo "${a[*]}"
declare -A h=([apple]=red [banana]=yellow [cherry]=dark)
h[date]=brown
for k in apple banana cherry date; do echo "$k -> ${h[$k]}"; done
echo "keys: ${#h[@]}"
echo "== functions"
fact() { if [ "$1" -le 1 ]; then echo 1; else echo $(($1 * $(fact $(($1 - 1))))); fi; }
echo "10! = $(fact 10)"
fib() { local n=$1; if ((n < 2)); then r=$n; return; fi; fib $((n - 1)); local a=$r; fib $((n - 2)); r=$((a + r)); }
fib 15; echo "fib(15) = $r"
hanoi() { (($1 == 0)) && return; hanoi $(($1 - 1)) $2 $4 $3; moves=$((moves + 1)); hanoi $(($1 - 1)) $4 $3 $2; }
moves=0; hanoi 8 A B C; echo "hanoi 8: $moves moves"
ret() { return $1; }
ret 42; echo "status $?"
counter() { local c=0; for _ in "$@"; do c=$((c + 1)); done; echo "$c args"; }
counter a "b c" d
echo "== case and strings"
for f in file.tar.gz image.PNG notes README; do
  case $f in
    *.tar.gz) echo "$f: tarball" ;;
    *.[Pp][Nn][Gg]) echo "$f: picture" ;;
    [A-Z]*) echo "$f: shouting" ;;
    *) echo "$f: other" ;;
  esac
done
s="Hello, World of Bash"
echo "${#s} ${s:7:5} ${s^^} ${s,,} ${s/o/0} ${s//o/0} ${s#*o} ${s##*o} ${s%o*} ${s%%o*}"
p=/usr/local/lib/libfoo.so.1
echo "${p##*/} ${p%/*} ${p%%.*} ${p#*.}"
unset u; echo "${u:-default} ${u:=assigned} $u ${u:+alt} ${#u}"
printf '%5s|%-5s|%05d|%x|%o|%e|%.3f|%c|%%\n' ab cd 42 255 8 12345.678 3.14159 xyz
printf -v pv '%03d' 7; echo "pv=$pv"
echo "== brace and glob"
echo {a,b,c}{1,2} {1..5} {10..0..3} {a..e}
set -- one two three; echo "$# $1 ${@: -1} $*"; shift; echo "$# $@"
IFS=: read -r f1 f2 f3 <<< "x:y:z"; echo "$f3 $f2 $f1"
