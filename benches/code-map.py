#!/usr/bin/env python3
"""Disassemble morph translations from a --code-map file.

Usage:
  benches/code-map.py MAP                 list every translation (offset, size, guest EIP, PA)
  benches/code-map.py MAP OFFSET...       disassemble the translations holding these
                                          code-buffer offsets (hex, as `perf report` prints
                                          them for `memfd:morph-code`)
  benches/code-map.py MAP --eip EIP...    disassemble the translations of these guest EIPs

Profiling translated code:
  morph run --engine dbt --code-map /tmp/map PROG...   # under `perf record`
  perf report --stdio --sort dso,sym                   # samples in memfd:morph-code at offsets
  benches/code-map.py /tmp/map 22b 53c                 # the host code around those offsets

Needs objdump (binutils).
"""
import subprocess
import sys
import tempfile


def load(path):
    out = []
    with open(path) as f:
        for line in f:
            off, size, eip, pa, code = line.split()
            out.append((int(off, 16), int(size, 16), int(eip, 16), int(pa, 16), bytes.fromhex(code)))
    return out


def disasm(t, hot):
    off, size, eip, pa, code = t
    print(f"== guest {eip:08x} (pa {pa:x}), host offset {off:x}, {size} bytes")
    with tempfile.NamedTemporaryFile() as f:
        f.write(code)
        f.flush()
        r = subprocess.run(
            ["objdump", "-D", "-b", "binary", "-mi386:x86-64", f"--adjust-vma={off}", f.name],
            capture_output=True,
            text=True,
            check=True,
        )
    for line in r.stdout.splitlines()[7:]:
        addr = line.split(":")[0].strip()
        try:
            mark = ">>" if int(addr, 16) in hot else "  "
        except ValueError:  # objdump's "..." for a run of zero bytes, blank lines
            mark = "  "
        print(mark, line)


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__)
        return 2
    ts = load(argv[1])
    args = argv[2:]
    if not args:
        for off, size, eip, pa, _ in ts:
            print(f"{off:8x} {size:5d} {eip:08x} {pa:x}")
        return 0
    if args[0] == "--eip":
        want = {int(a, 16) for a in args[1:]}
        for t in ts:
            if t[2] in want:
                disasm(t, set())
        return 0
    hot = {int(a, 16) for a in args}
    for t in ts:
        if any(t[0] <= h < t[0] + t[1] for h in hot):
            disasm(t, hot)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
