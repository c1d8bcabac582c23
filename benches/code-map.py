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
  benches/code-map.py MAP --functions DATA --native NDATA --root DIR [N]
                                          the same guest run natively (`perf record -o
                                          NDATA chroot DIR PROG...`) and translated:
                                          time by guest function, largest gap first
  benches/code-map.py MAP --lookups DATA --root DIR [N]
                                          the samples in translated code's indirect-branch
                                          lookups, by the guest branch that ends each
                                          translation (return, PLT stub, register or
                                          memory jump, indirect call) and by function

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

With `--functions`, a translated sample counts for the function holding the first
byte of its translation (a translation that runs on through a call is charged to the
caller), found through the map's sixth field, the file (device, inode) and offset of that
byte, so libraries count wherever ASLR put them; a native sample, through perf's record
of the file mappings. A function starts at a symbol (`nm`, or the dynamic table of a
stripped file) or at an `.eh_frame` FDE (so a stripped file's static functions count
apart, as `exported+0x...` or `file@0x...`).
Files are found under DIR (the guest root) by device and inode; each file's time is
summed up too. The totals split morph's
run into translated code, morph itself (interpreter, translator, dispatcher) and the host
kernel. perf's own interrupts slow both runs alike (about twice at 20 kHz in a VM):
compare ratios, or record at a lower rate (`-F 2000`).

With `--lookups`, each translation's guest code is disassembled from its first byte in
its file (found under DIR by device and inode, as for `--functions`), through the direct
jumps a translation follows, to its first return, indirect jump or indirect call; a
translation that starts in the file's `.plt` is a PLT stub. The lookup samples are those
`--perf` calls `lookup`.

Needs objdump (binutils); `--perf`, `--functions` and `--lookups` need perf, and
`--functions` and `--lookups` readelf (`--functions` nm too).
"""
import bisect
import os
import re
import subprocess
import sys
import tempfile


# Where each translation's first byte lies in a file: {code-buffer offset: (device,
# inode, file offset)} for the translations of file-backed code (the map's sixth field).
FILES = {}


def load(path):
    out = []
    with open(path) as f:
        for line in f:
            off, size, eip, pa, code, *file = line.split()
            out.append((int(off, 16), int(size, 16), int(eip, 16), int(pa, 16), bytes.fromhex(code)))
            if file and file[0] != "-":
                dev, ino, at = (int(x, 16) for x in file[0].split(":"))
                FILES[int(off, 16)] = (dev, ino, at)
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
        # (A load from the state block into r9 is the table's base only when the entry's
        # load follows; a short `rep`'s copy loads the window's base the same way.)
        if (
            text.startswith("rorx   $N,%r13d,%r9d")
            or (text.startswith("pushf") and not after.startswith("pop    N(%r15)"))
            or (text.startswith("mov    N(%r15),%r9") and after.startswith("movslq (%r9,%r13,4),%r9"))
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


def perf_stream(data):
    """The samples of `perf record` file `data`, each with the executable file mapping
    its process had at its address when it was taken (the latest such): [(period ns, ip,
    dso, mapping)], a mapping (start, end, pgoff, device, inode, path) or None."""
    r = subprocess.run(
        ["perf", "script", "-i", data, "--show-mmap-events", "-F", "pid,period,ip,dso"],
        capture_output=True,
        text=True,
        check=True,
    )
    mm = re.compile(
        r"PERF_RECORD_MMAP2 (\d+)/\d+: \[0x([0-9a-f]+)\(0x([0-9a-f]+)\) @ (0x[0-9a-f]+|0) "
        r"([0-9a-f]+):([0-9a-f]+) (\d+) \d+\]: r-x\S* (.*)$"
    )
    maps, samples = {}, []
    for line in r.stdout.splitlines():
        m = mm.search(line)
        if m:
            start, size = int(m.group(2), 16), int(m.group(3), 16)
            dev = os.makedev(int(m.group(5), 16), int(m.group(6), 16))
            maps.setdefault(int(m.group(1)), []).append(
                (start, start + size, int(m.group(4), 16), dev, int(m.group(7)), m.group(8))
            )
            continue
        f = line.split()
        if len(f) >= 4 and f[0].isdigit() and f[1].isdigit():
            ip = int(f[2], 16)
            own = next((x for x in reversed(maps.get(int(f[0]), [])) if x[0] <= ip < x[1]), None)
            samples.append((int(f[1]), ip, f[3].strip("()"), own))
    return samples


class Symbols:
    """Function names of ELF files by file offset. A function is a symbol (`nm`, the
    dynamic table if the file is stripped) or an `.eh_frame` FDE's start (every function
    a compiler emitted, and the hand-written ones with CFI, named in a stripped file
    after the nearest symbol before it, `sym+0x...`, or the file, `file@0x...`); an
    address belongs to the nearest function start before it."""

    def __init__(self):
        self.files = {}

    def load(self, path):
        if path in self.files:
            return self.files[path]
        segs, syms, starts = [], [], []
        try:
            ph = subprocess.run(["readelf", "-lW", path], capture_output=True, text=True).stdout
            for line in ph.splitlines():
                f = line.split()
                if f and f[0] == "LOAD":
                    segs.append((int(f[1], 16), int(f[2], 16), int(f[4], 16)))  # offset, vaddr, filesz
            for flags in (["--defined-only"], ["-D", "--defined-only"]):
                out = subprocess.run(["nm", *flags, path], capture_output=True, text=True).stdout
                for line in out.splitlines():
                    f = line.split()
                    if len(f) == 3 and f[1] in "tTwWiI":
                        syms.append((int(f[0], 16), f[2].split("@")[0]))
                if syms:
                    break
            frames = subprocess.run(["readelf", "-wf", path], capture_output=True, text=True).stdout
            starts = [int(m.group(1), 16) for m in re.finditer(r" FDE cie=\S+ pc=([0-9a-f]+)\.\.", frames)]
        except OSError:
            pass
        syms.sort()
        addrs = [a for a, _ in syms]
        named = set(addrs)
        base = os.path.basename(path)
        funcs = list(syms)
        for a in set(starts) - named:
            i = bisect.bisect_right(addrs, a) - 1
            funcs.append((a, f"{syms[i][1]}+{a - syms[i][0]:#x}" if i >= 0 else f"{base}@{a:#x}"))
        funcs.sort()
        self.files[path] = (segs, [a for a, _ in funcs], funcs)
        return self.files[path]

    def vaddr(self, path, off):
        """The address file offset `off` of `path` is loaded at (None: not loaded)."""
        return next((v + off - o for o, v, n in self.load(path)[0] if o <= off < o + n), None)

    def name(self, path, off):
        _, addrs, funcs = self.load(path)
        va = self.vaddr(path, off)
        i = bisect.bisect_right(addrs, va) - 1 if va is not None else -1
        return funcs[i][1] if i >= 0 else f"{os.path.basename(path)}+{off:x}"


def root_files(root, paths):
    """Adds the files under `root` to `paths`, {(device, inode): path}, keeping those it
    has."""
    for top in ("usr/bin", "usr/lib", "lib", "bin", "usr/local", "bench", "."):
        for dirpath, _, names in os.walk(os.path.join(root, top)):
            for name in names:
                try:
                    st = os.lstat(os.path.join(dirpath, name))
                except OSError:
                    continue
                paths.setdefault((st.st_dev, st.st_ino), os.path.join(dirpath, name))


def branch_kind(path, va, plt):
    """The kind of the guest branch that ends a translation starting at `va` in ELF file
    `path` (`plt`: the file's `.plt` as (start, end) addresses)."""
    if plt and plt[0] <= va < plt[1]:
        return "PLT stub"
    for _ in range(8):  # direct jumps followed, as a translation does
        out = subprocess.run(
            ["objdump", "-d", f"--start-address={va:#x}", f"--stop-address={va + 512:#x}", path],
            capture_output=True,
            text=True,
        ).stdout
        nxt = None
        for line in out.splitlines():
            f = line.split("\t")
            if len(f) < 3 or not f[0].strip().endswith(":"):
                continue
            ins = f[2].strip()
            if ins.startswith("ret"):
                return "return"
            if re.match(r"jmp\s+\*%e", ins):
                return "jump through a register"
            if re.match(r"jmp\s+\*", ins):
                return "jump through memory"
            if re.match(r"call\s+\*", ins):
                return "indirect call"
            m = re.match(r"(call|jmp)\s+([0-9a-f]+)", ins)
            if m and plt and plt[0] <= int(m.group(2), 16) < plt[1]:
                return "PLT stub"  # taken at the call (engine.md, "PLT calls take the stub's jump")
            m = re.match(r"jmp\s+([0-9a-f]+)", ins)
            if m:
                nxt = int(m.group(1), 16)
                break
        if nxt is None:
            return "not found"
        va = nxt
    return "not found"


def lookups(ts, data, root, n):
    """Lookup samples by the kind of guest branch (see the module documentation)."""
    ts.sort()
    starts = [t[0] for t in ts]
    paths, syms, plts = {}, Symbols(), {}
    root_files(root, paths)
    by_kind, by_fn, decoded, total = {}, {}, {}, 0
    for c, o in perf_samples(data):
        i = bisect.bisect_right(starts, o) - 1
        if i < 0 or o >= ts[i][0] + ts[i][1]:
            continue
        total += c
        if i not in decoded:
            decoded[i] = parts(ts[i], instructions(ts[i]))
        if decoded[i].get(o) != "lookup":
            continue
        where = FILES.get(ts[i][0])
        path = paths.get((where[0], where[1])) if where else None
        if path is None:
            kind, fn = "code no file of the root backs", "-"
        else:
            va = syms.vaddr(path, where[2])
            if path not in plts:
                sec = subprocess.run(["readelf", "-SW", path], capture_output=True, text=True).stdout
                m = re.search(r"\s\.plt\s+PROGBITS\s+([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)", sec)
                plts[path] = (int(m.group(1), 16), int(m.group(1), 16) + int(m.group(2), 16)) if m else None
            kind = branch_kind(path, va, plts[path]) if va is not None else "not found"
            fn = f"{syms.name(path, where[2])} ({os.path.basename(path)})"
        by_kind[kind] = by_kind.get(kind, 0) + c
        by_fn[(kind, fn)] = by_fn.get((kind, fn), 0) + c
    looked = sum(by_kind.values())
    if not looked:
        print("no samples in lookups (is this the run that wrote the map?)")
        return
    print(f"{looked} of {total} samples in translated code are in lookups ({100 * looked / total:.1f} %)\n")
    print("by the guest branch that ends the translation")
    for k, c in sorted(by_kind.items(), key=lambda x: -x[1]):
        print(f"  {k:32} {c:7d} {100 * c / looked:5.1f} %")
    print("\nby function (where the translation starts)")
    for (k, f), c in sorted(by_fn.items(), key=lambda x: -x[1])[:n]:
        print(f"  {c:7d} {100 * c / looked:5.1f} %  {k:26} {f}")


def functions(ts, data, native, root, n):
    """Native and translated time by guest function (see the module documentation)."""
    ts.sort()
    starts = [t[0] for t in ts]
    nsamples, msamples = perf_stream(native), perf_stream(data)
    # Files by (device, inode): the native run's that are the guest root's files (not the
    # host's, such as the shell that started `chroot`), then the rest of the root's.
    paths = {}
    for _, _, _, m in nsamples:
        if m and (m[3], m[4]) not in paths:
            p = os.path.join(root, m[5].lstrip("/"))
            try:
                st = os.stat(p)
            except OSError:
                continue
            if (st.st_dev, st.st_ino) == (m[3], m[4]):
                paths[(m[3], m[4])] = p
    root_files(root, paths)
    syms = Symbols()
    nat, mor, totals = {}, {}, {}

    def add(table, key, ns):
        table[key] = table.get(key, 0) + ns

    for ns, ip, dso, m in nsamples:
        if m and (m[3], m[4]) in paths:
            path = paths[(m[3], m[4])]
            add(nat, (syms.name(path, ip - m[0] + m[2]), os.path.basename(path)), ns)
            add(totals, "native: in the guest's files", ns)
        else:
            add(totals, "native: elsewhere (kernel, chroot, loader)", ns)
    for ns, ip, dso, m in msamples:
        if "morph-code" in dso:
            at = ip - m[0] + m[2] if m else -1
            k = bisect.bisect_right(starts, at) - 1
            where = FILES.get(ts[k][0]) if k >= 0 and at < ts[k][0] + ts[k][1] else None
            if where and (where[0], where[1]) in paths:
                path = paths[(where[0], where[1])]
                add(mor, (syms.name(path, where[2]), os.path.basename(path)), ns)
                add(totals, "morph: translated code of the guest's files", ns)
            else:
                add(totals, "morph: translated code, no file (or outside translations)", ns)
        elif "kernel" in dso:
            add(totals, "morph: host kernel", ns)
        else:
            add(totals, "morph: interpreter, translator, dispatcher", ns)
    keys = sorted(set(nat) | set(mor), key=lambda k: -(mor.get(k, 0) - nat.get(k, 0)))
    print("by guest function (a translation counts where its first block lies), largest gap first")
    print(f"  {'function':40} {'file':22} {'native ms':>9} {'morph ms':>9} {'ratio':>6}")
    for k in keys[:n]:
        a, b = nat.get(k, 0) / 1e6, mor.get(k, 0) / 1e6
        r = f"{b / a:6.2f}" if a else "     -"
        print(f"  {k[0][:40]:40} {k[1][:22]:22} {a:9.1f} {b:9.1f} {r}")
    files = {}
    for table, side in ((nat, 0), (mor, 1)):
        for (_, f), ns in table.items():
            files.setdefault(f, [0, 0])[side] += ns
    print("\nby file")
    print(f"  {'file':40} {'':22} {'native ms':>9} {'morph ms':>9} {'ratio':>6}")
    for f, (a, b) in sorted(files.items(), key=lambda x: -(x[1][1] - x[1][0]))[:n]:
        r = f"{b / a:6.2f}" if a else "     -"
        print(f"  {f[:40]:40} {'':22} {a / 1e6:9.1f} {b / 1e6:9.1f} {r}")
    print("\ntotals")
    for k, v in sorted(totals.items()):
        print(f"  {k:62} {v / 1e6:9.1f} ms")


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
    if args[0] == "--functions" and len(args) >= 6 and args[2] == "--native" and args[4] == "--root":
        functions(ts, args[1], args[3], args[5], int(args[6]) if len(args) > 6 else 25)
        return 0
    if args[0] == "--lookups" and len(args) >= 4 and args[2] == "--root":
        lookups(ts, args[1], args[3], int(args[4]) if len(args) > 4 else 15)
        return 0
    if args[0] == "--eip":
        want = {int(a, 16) for a in args[1:]}
        for t in ts:
            if t[2] in want:
                disasm(t, set())
        return 0
    if args[0].startswith("--"):  # a mode without its arguments
        print(__doc__)
        return 2
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
    except FileNotFoundError as e:  # a missing tool (objdump, perf, readelf, nm) or file
        print(f"code-map.py: {e.filename}: not found", file=sys.stderr)
        sys.exit(2)
    except subprocess.CalledProcessError as e:  # perf refusing a data file
        err = e.stderr.strip() if isinstance(e.stderr, str) else ""
        print(f"code-map.py: {' '.join(e.cmd)} failed: {err}", file=sys.stderr)
        sys.exit(2)
