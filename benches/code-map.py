#!/usr/bin/env python3
"""Disassemble morph translations from a --code-map file.

Usage:
  benches/code-map.py MAP                 list every translation (offset, size, guest EIP, PA)
  benches/code-map.py MAP OFFSET...       disassemble the translations holding these
                                          code-buffer offsets (hex, as `perf report` prints
                                          them for `memfd:morph-code`)
  benches/code-map.py MAP --eip EIP...    disassemble the translations of these guest EIPs
  benches/code-map.py MAP --perf DATA [N]  where perf's samples (`perf record` of the run
                                          that wrote MAP) fall in translated code: the N
                                          hottest translations, the share of each part
                                          of a translation, the N hottest instruction
                                          pairs

Profiling translated code:
  morph run --engine dbt --code-map /tmp/map PROG...   # under `perf record`
  perf report --stdio --sort dso,sym                   # samples in memfd:morph-code at offsets
  benches/code-map.py /tmp/map 22b 53c                 # the host code around those offsets

With `--perf`, a sample is charged to the instruction it interrupted; with cpu-clock
sampling (no PMU) that is usually the one after the instruction that stalled, hence the
pairs "previous || sampled" (numbers in operands shown as N). The parts: `entries` (the
budget exit, far entry, jump-cache entry and budget check before the body: everything
up to the budget check's `movzx r8d, byte [r10]`), `lookup` (the inline jump-cache
lookups, from `rorx r9d, r13d, 16` or `pushfq` to their `jmp`, and the
indirect-branch table's, from `mov r9, [r15 + 0x60]` to `jmp *%r9`), `body` (the rest).

Needs objdump (binutils); `--perf` needs perf.
"""
import bisect
import re
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


def objdump(t):
    """objdump's lines for translation `t`'s host code, at its code-buffer offsets."""
    off, size, eip, pa, code = t
    with tempfile.NamedTemporaryFile() as f:
        f.write(code)
        f.flush()
        r = subprocess.run(
            ["objdump", "-D", "-b", "binary", "-mi386:x86-64", f"--adjust-vma={off}", f.name],
            capture_output=True,
            text=True,
            check=True,
        )
    return r.stdout.splitlines()[7:]


def disasm(t, hot):
    off, size, eip, pa, code = t
    print(f"== guest {eip:08x} (pa {pa:x}), host offset {off:x}, {size} bytes")
    for line in objdump(t):
        addr = line.split(":")[0].strip()
        try:
            mark = ">>" if int(addr, 16) in hot else "  "
        except ValueError:  # objdump's "..." for a run of zero bytes, blank lines
            mark = "  "
        print(mark, line)


def instructions(t):
    """[(host offset, text)] of translation `t`, operands' numbers replaced by N."""
    out = []
    for line in objdump(t):
        parts = line.split("\t")
        if len(parts) >= 3 and parts[0].strip().endswith(":"):
            out.append((int(parts[0].strip()[:-1], 16), re.sub(r"-?0x[0-9a-f]+", "N", parts[2].strip())))
    return out


def parts(t, ins):
    """{host offset: part} for the instructions of translation `t` (see --perf)."""
    part = {}
    budget = t[4].find(bytes.fromhex("450fb602"))  # movzx r8d, byte [r10]
    body = t[0] + budget + 4 if budget >= 0 else t[0]
    in_lookup = False
    for k, (a, text) in enumerate(ins):
        if a < body:
            part[a] = "entries"
            continue
        # (A `pushf` popped into the state block is a short `rep`'s, not a lookup's.)
        after = ins[k + 1][1] if k + 1 < len(ins) else ""
        if (
            text.startswith("rorx   $N,%r13d,%r9d")
            or (text.startswith("pushf") and not after.startswith("pop    N(%r15)"))
            or text.startswith("mov    N(%r15),%r9")
        ):
            in_lookup = True
        part[a] = "lookup" if in_lookup else "body"
        if in_lookup and text.startswith("jmp    *") and ("%r15,%r9,8" in text or text.endswith("*%r9")):
            in_lookup = False
    return part


def perf_samples(data):
    """[(samples, code-buffer offset)] of `perf record` file `data` in translated code."""
    r = subprocess.run(
        ["perf", "report", "-i", data, "--stdio", "-n", "--sort", "dso,sym"],
        capture_output=True,
        text=True,
        check=True,
    )
    out = []
    for line in r.stdout.splitlines():
        m = re.match(r"\s*[0-9.]+%\s+(\d+)\s+memfd:morph-code.*\[\.\]\s+0x([0-9a-f]+)", line)
        if m:
            out.append((int(m.group(1)), int(m.group(2), 16)))
    return out


def profile(ts, data, n):
    samples = perf_samples(data)
    total = sum(c for c, _ in samples)
    if not total:
        print("no samples in translated code (is this the run that wrote the map?)")
        return
    starts = [t[0] for t in ts]
    by_t, by_part, by_pair = {}, {}, {}
    decoded = {}
    for c, o in samples:
        i = bisect.bisect_right(starts, o) - 1
        if i < 0 or o >= ts[i][0] + ts[i][1]:
            by_part["outside translations"] = by_part.get("outside translations", 0) + c
            continue
        by_t[i] = by_t.get(i, 0) + c
        if i not in decoded:
            ins = instructions(ts[i])
            decoded[i] = (ins, parts(ts[i], ins), {a: (ins[k - 1][1] if k else "") for k, (a, _) in enumerate(ins)})
        ins, part, prev = decoded[i]
        text = dict(ins).get(o)
        by_part[part.get(o, "body")] = by_part.get(part.get(o, "body"), 0) + c
        key = f"{prev.get(o, '?')}  ||  {text}" if text else "(not an instruction start)"
        by_pair[key] = by_pair.get(key, 0) + c
    print(f"{total} samples in translated code\n")
    print("translations (guest EIP, host offset, size): samples, share")
    for i, c in sorted(by_t.items(), key=lambda x: -x[1])[:n]:
        off, size, eip, pa, _ = ts[i]
        print(f"  {eip:08x} {off:8x} {size:5d}: {c:7d} {100 * c / total:5.1f} %")
    print("\nparts of translations")
    for k, c in sorted(by_part.items(), key=lambda x: -x[1]):
        print(f"  {k:22} {c:7d} {100 * c / total:5.1f} %")
    print("\ninstruction pairs (previous || sampled)")
    for k, c in sorted(by_pair.items(), key=lambda x: -x[1])[:n]:
        print(f"  {c:7d} {100 * c / total:5.1f} %  {k}")


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
    if args[0] == "--perf" and len(args) >= 2:
        ts.sort()
        profile(ts, args[1], int(args[2]) if len(args) > 2 else 12)
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
    try:
        sys.exit(main(sys.argv))
    except BrokenPipeError:  # output piped into `head`
        sys.stderr.close()
        sys.exit(0)
