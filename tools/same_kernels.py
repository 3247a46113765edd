#!/usr/bin/env python3
"""Whether two kernel caches hold the same machine code, kernel by kernel: for a template
change meant to change nothing (a refactor, a shared helper), so that it can be checked
without a GPU. Build both caches for one arch, e.g.

    NINFER_CACHE_DIR=/tmp/a ninfer kernels build --arch sm_90 --all
    NINFER_CACHE_DIR=/tmp/b NINFER_TEMPLATES=$PWD/templates ninfer kernels build --arch sm_90 --all

then `tools/same_kernels.py /tmp/a /tmp/b`. Kernels are matched by entry name and arch;
each pair is `same bytes` (equal cubin digests), `same sass` (the cubins differ, the
disassembly does not: needs `cuobjdump` on PATH, from the CUDA toolkit or the
nvidia-cuda-cuobjdump wheel), `renamed` (the same instructions in the same order with
other register numbers: strong evidence, not a proof, so such kernels still want a
qualify run) or `differs`. Exit status 0 if every pair is the same bytes or sass, 2 if
some are only renamed, 1 if any differs or either cache has a kernel the other lacks.
ptxas is not always deterministic: one kernel (gdn_chunk_scan_d128_v64) came out of two
parallel builds of the same source as two different cubins, so rebuild a kernel that
differs, alone, in both caches before reading anything into it."""
import json, pathlib, re, subprocess, sys


def receipts(root):
    out = {}
    for p in pathlib.Path(root).rglob("*.json"):
        r = json.loads(p.read_text())
        if "entry" in r and "cubin_blake3" in r:
            out[(r["entry"], r["arch"])] = (r, p.with_suffix(".cubin"))
    return out


def sass(cubin):
    """The instructions, without addresses or encodings."""
    text = subprocess.run(["cuobjdump", "-sass", str(cubin)], check=True,
                          capture_output=True, text=True).stdout
    code = re.compile(r"^\s+/\*[0-9a-f]{4,}\*/\s+(.*?)\s*;")
    return [m.group(1) for m in map(code.match, text.splitlines()) if m]


def unnamed(instructions):
    """The same with every register number dropped (R12 -> R, UR4 -> UR, P1 -> P)."""
    return [re.sub(r"\b(U?R|U?P)\d+\b", r"\1", i) for i in instructions]


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    a, b = receipts(sys.argv[1]), receipts(sys.argv[2])
    bad = renamed = 0
    for key in sorted(set(a) | set(b)):
        name = f"{key[0]} ({key[1]})"
        if key not in a or key not in b:
            print(f"only in {'the second' if key not in a else 'the first'}: {name}")
            bad += 1
            continue
        (ra, ca), (rb, cb) = a[key], b[key]
        if ra["cubin_blake3"] == rb["cubin_blake3"]:
            verdict = "same bytes"
        else:
            sa, sb = sass(ca), sass(cb)
            if sa == sb:
                verdict = "same sass"
            elif unnamed(sa) == unnamed(sb):
                verdict = "renamed"
                renamed += 1
            else:
                verdict = "differs"
                bad += 1
        print(f"{verdict:10} {name}")
    print(f"{len(set(a) | set(b))} kernels: {bad} differ or unmatched, {renamed} renamed")
    sys.exit(1 if bad else 2 if renamed else 0)


if __name__ == "__main__":
    main()
