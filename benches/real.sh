#!/usr/bin/env bash
# The real-program benchmark suite (benches/src/bin/realbench.rs): Debian i386 programs
# natively, under morph and under qemu-i386 (when installed), outputs checked equal to
# native, medians and ratios. Builds morph and the runner first. See benches/README.md.
#
# Usage: benches/real.sh [--runs N] [--quick] [--only a,b] [--no-qemu]
#                        [--csv FILE] [--json FILE] [--svg FILE] [--cache DIR] [--morph PATH]
#                        [--layouts] [--warm] [--against PATH] [--against-args ARGS]
#                        [--native-i686] [--profile DIR]
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
cargo build --release -q -p morph -p morph-benches --bin morph --bin realbench
exec "$ROOT/target/x86_64-unknown-linux-gnu/release/realbench" --morph "$ROOT/target/x86_64-unknown-linux-gnu/release/morph" "$@"
