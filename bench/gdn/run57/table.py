#!/usr/bin/env python3
"""bench/gdn run 57: `table.py DIR`: per template variant, the qualify launches' median us
by kernel and grid (qualify-times-<variant>.csv, ncu raw exports), then the 27B decode lines (e2e.txt) with the mean
step per setting."""
import csv
import os
import re
import statistics
import sys

d = sys.argv[1]
for v in ["main", "ldcg", "old-ldcg"]:
    p = os.path.join(d, f"qualify-times-{v}.csv")
    if not os.path.exists(p):
        continue
    by = {}
    for r in list(csv.DictReader(open(p)))[1:]:
        try:
            us = float(r["gpu__time_duration.sum"].replace(",", "")) / 1e3
        except (KeyError, ValueError):
            continue
        by.setdefault((r["Kernel Name"].replace("linear_exact_", ""), r["Grid Size"].split(",")[0].strip("(")), []).append(us)
    print(f"{'variant':<9} {'kernel':<44} {'grid':>6} {'n':>3} {'median us':>10}")
    for (k, g), xs in sorted(by.items()):
        print(f"{v:<9} {k:<44} {g:>6} {len(xs):>3} {statistics.median(xs):>10.2f}")
p = os.path.join(d, "e2e.txt")
if os.path.exists(p):
    steps = {}
    for line in open(p):
        print(line.rstrip())
        # "<mode> decode 8 tokens context tok/s step_us ... [variant]" (bench model's row)
        m = re.match(r"(\w+) decode\s+8\s+\d+\s+\d+\s+[\d.]+\s+([\d.]+).*?(NINFER_GDN_CONV_EPILOGUE=\d)", line)
        if m:
            steps.setdefault(f"{m.group(1)} {m.group(3)}", []).append(float(m.group(2)))
    for k, v in sorted(steps.items()):
        print(f"{k}: mean step {statistics.mean(v):.1f} us over {len(v)}")
