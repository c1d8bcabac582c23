#!/bin/bash
# Subshells, command substitution (nested, backquotes), exit statuses and redirections.
x=outer
(x=inner; echo "in subshell: $x"; exit 7)
echo "after subshell: $x status $?"
( ( ( echo deep; exit 2 ) ; echo "level2 saw $?"; exit 3 ); echo "level1 saw $?" )
echo "== command substitution"
a=$(echo one $(echo two $(echo three $(echo four))))
echo "$a"
b=`echo back \`echo quoted\``
echo "$b"
n=$(seq 1 100 | wc -l)
echo "lines: $n"
c="$(printf 'trailing\n\n\n')"; echo "[$c]"
d=$(exit 9); echo "subst status $?"
e=$( (echo in; echo err >&2) 2>&1 ); echo "$e" | tr '\n' ' '; echo
echo "sum: $(( $(echo 20) + $(echo 22) ))"
echo "== grouping and redirection"
{ echo a; echo b; } > grp.txt; cat grp.txt
{ echo to-stderr >&2; } 2>&1
echo first > f.txt; echo second >> f.txt; cat < f.txt
exec 3> fd3.txt; echo via-fd3 >&3; exec 3>&-; cat fd3.txt
exec 4< f.txt; read -r l1 <&4; read -r l2 <&4; exec 4<&-; echo "$l2 $l1"
cat nonexistent-file 2> err.txt; echo "cat status $?"; wc -l < err.txt
echo "== sh -c and bash -c"
sh -c 'echo "sh says $0 $1"; exit 4' zero one; echo "sh status $?"
bash -c 'f() { echo "func in bash -c: $*"; }; f x y'
sh -c 'exit 300'; echo "exit 300 -> $?"
bash -c 'kill -TERM $$'; echo "self TERM -> $?"
{ bash -c 'kill -KILL $$'; } 2> killed.err; echo "self KILL -> $?"
tr -d '0-9 ' < killed.err  # bash reports the death with the pid
echo "== exec"
(exec echo "exec replaced the subshell")
bash -c 'exec /bin/echo exec of a dynamic program'
echo "== errors"
/no/such/program; echo "missing: $?"
./grp.txt 2>err2.txt; echo "not executable: $?"
