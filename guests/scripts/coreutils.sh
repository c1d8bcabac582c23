#!/bin/bash
# A tour of coreutils on files the script makes itself (no timestamps, no ids).
mkdir -p work/a/b/c
cd work
printf 'hello\nworld\n' > a/hello.txt
printf 'line %d\n' 1 2 3 > a/b/three.txt
seq 1 1000 > a/b/c/nums.txt
echo "== ls"
ls -1
ls -1 a
ls -1R a
ls -1d a/b/*
echo "== stat and sizes"
stat -c '%n %s %F' a/hello.txt a/b/three.txt a/b/c/nums.txt
stat -c '%A %n' a/b
wc -c a/hello.txt a/b/c/nums.txt
du -b a/hello.txt
echo "== checksums"
md5sum a/hello.txt a/b/three.txt
sha256sum a/b/c/nums.txt
sha1sum a/hello.txt
cksum a/hello.txt
b2sum -l 128 a/hello.txt
base64 a/hello.txt
base64 a/hello.txt | base64 -d
echo "== expr, factor, printf, date"
expr 7 \* 6
expr length "hello world"
expr substr abcdef 2 3
expr 3 \> 2
expr 10 / 3 \+ 1
expr 1 / 0; echo "expr 1/0: $?"
expr 0; echo "expr 0: $?"
factor 360 1001 65537 4294967297 1234567890123
printf '%s-%d-%x-%5.2f\n' abc 42 3054 2.71828
/usr/bin/printf '%b|%q\n' 'tab\there' "it's"
date -d @0 -u
date -u -d @1234567890 '+%Y-%m-%d %H:%M:%S %j %a'
date -u -d '2000-02-28 +1 day' +%F
echo "== sort"
printf '10\n9\n100\n-3\n2.5\n' | sort -n
printf 'b 2\na 10\nc 1\na 2\n' | sort -k2,2n -k1,1
printf 'x\ny\nx\nz\ny\n' | sort -u
printf 'B\na\nC\nb\n' | sort -f
seq 1 20 | shuf --random-source=a/b/c/nums.txt | sort -n | tail -n 1
echo "== od, tr, cut, fold"
printf 'ab\tc\n\001\377' | od -c
printf 'abc' | od -An -tx1
echo "Hello World" | tr '[:lower:]' '[:upper:]'
echo "hello" | tr -d l
echo "a:b:c:d" | cut -d: -f2,4
echo "abcdefghij" | fold -w 3
echo "== paths"
basename /usr/lib/libc.so.6
basename /usr/lib/libc.so.6 .6
dirname /usr/lib/libc.so.6
dirname file
realpath -m /a/b/../c/./d
echo "== files"
cp a/hello.txt copy.txt
mv copy.txt moved.txt
cat moved.txt
ln -s a/hello.txt link.txt
readlink link.txt
cat link.txt
ln moved.txt hard.txt
stat -c '%h' moved.txt
touch empty.txt
touch -d @86400 empty.txt; stat -c '%Y %X' empty.txt
touch -m -d @1000000000 empty.txt; stat -c '%Y' empty.txt
ln -s empty.txt elink; touch -h -d @5 elink; stat -c '%Y' elink; stat -L -c '%Y' elink; rm elink
stat -c '%s' empty.txt
truncate -s 100 empty.txt
stat -c '%s' empty.txt
mkdir -p x/y/z
rmdir x/y/z
ls -1 x
cp -r a a2
ls -1R a2
rm -r a2
test -e a2 || echo "a2 removed"
rm link.txt hard.txt
ls -1
echo "== head, tail, tac, nl, comm, join, split"
head -n 3 a/b/c/nums.txt | tac
tail -n 2 a/b/c/nums.txt
tail -c 8 a/b/c/nums.txt
nl a/b/three.txt
printf 'a\nb\nc\n' > l1; printf 'b\nc\nd\n' > l2
comm l1 l2
printf '1 one\n2 two\n' > j1; printf '1 uno\n2 dos\n' > j2
join j1 j2
split -l 300 a/b/c/nums.txt part.
wc -l part.*
cat part.* | md5sum
echo "== test and misc"
test 3 -lt 4 && echo "3<4"
[ -d a ] && [ ! -f a ] && echo "a is a dir"
seq -w 8 11
seq -s, 1 5
yes | head -n 2
echo "nproc ok: $(nproc | wc -l)"
true; echo "true $?"; false; echo "false $?"
