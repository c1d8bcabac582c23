#!/usr/bin/env bash
# Builds the pthread test guests (real glibc threads, static, against the host's
# multilib glibc) into $1. Run by crates/cli/tests/threads.rs.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: build.sh OUTDIR}
mkdir -p "$out"
for src in "$here"/*.c; do
    name=$(basename "$src" .c)
    if [ ! -e "$out/$name" ] || [ "$src" -nt "$out/$name" ]; then
        gcc -m32 -O1 -pthread -static -o "$out/$name" "$src"
    fi
done
