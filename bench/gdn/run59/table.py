#!/usr/bin/env python3
"""bench/gdn runs 59-60: `table.py DIR`: per template variant (those of VARIANTS whose
qualify-times file DIR has), the qualify launches in launch
order (qualify-times-<variant>.csv, ncu raw exports) as us by kernel and grid, the conv
GEMV's launches beside the plain ones; then the 27B decode lines (e2e.txt) with the mean
step per variant and setting."""
import csv
import os
import re
import statistics
import sys

d = sys.argv[1]
VARIANTS = ["main", "before", "phase", "pf", "hoist1", "nowin", "nostore"]
cols = {}
for v in VARIANTS:
    p = os.path.join(d, f"qualify-times-{v}.csv")
    if not os.path.exists(p):
        continue
    seq = []
    for r in list(csv.DictReader(open(p)))[1:]:
        try:
            us = float(r["gpu__time_duration.sum"].replace(",", "")) / 1e3
        except (KeyError, ValueError):
            continue
        name = r["Kernel Name"].replace("linear_exact_", "").replace("_t8_w16_u8_rmsnorm1p", "")
        seq.append((name, r["Grid Size"].split(",")[0].strip("("), us))
    cols[v] = seq
if cols:
    names = [v for v in VARIANTS if v in cols]
    base = cols[names[0]]
    print(f"{'#':>3} {'kernel':<28} {'grid':>5} " + " ".join(f"{v:>8}" for v in names))
    for i, (k, g, _) in enumerate(base):
        row = []
        for v in names:
            s = cols[v]
            row.append(f"{s[i][2]:>8.2f}" if i < len(s) and s[i][0] == k else f"{'-':>8}")
        print(f"{i:>3} {k:<28} {g:>5} " + " ".join(row))
p = os.path.join(d, "e2e.txt")
if os.path.exists(p):
    steps = {}
    for line in open(p):
        print(line.rstrip())
        # "bf16 decode 8 tokens context tok/s step_us ... NINFER_GDN_CONV_EPILOGUE=e templates=v"
        m = re.match(r"(\w+) decode\s+8\s+\d+\s+\d+\s+[\d.]+\s+([\d.]+).*?(NINFER_GDN_CONV_EPILOGUE=\d).*?(templates=\S+)", line)
        if m:
            steps.setdefault(f"{m.group(1)} {m.group(4)} {m.group(3)}", []).append(float(m.group(2)))
    for k, v in sorted(steps.items()):
        print(f"{k}: mean step {statistics.mean(v):.1f} us over {len(v)}")
