#!/usr/bin/env python3
"""bench/gdn run 56: `table.py DIR` prints, per variant (time-<variant>.csv, ncu raw
exports of every splitk_sum launch of the same qualify), the median us of each split-K
sum kernel by grid size; then the full-set details' key lines; then the 27B decode lines."""
import csv
import glob
import os
import statistics
import sys

d = sys.argv[1]
print(f"{'variant':<8} {'kernel':<36} {'grid':>6} {'n':>3} {'median us':>10}")
for v in ["base", "hoist", "nostore", "nowin"]:
    p = os.path.join(d, f"time-{v}.csv")
    if not os.path.exists(p):
        continue
    rows = list(csv.DictReader(open(p)))[1:]
    by = {}
    for r in rows:
        try:
            us = float(r["gpu__time_duration.sum"].replace(",", "")) / 1e3
        except (KeyError, ValueError):
            continue
        by.setdefault((r["Kernel Name"], r["Grid Size"]), []).append(us)
    for (k, g), xs in sorted(by.items()):
        name = k.replace("linear_exact_", "")
        print(f"{v:<8} {name:<36} {g.split(',')[0].strip('('):>6} {len(xs):>3} {statistics.median(xs):>10.2f}")
keys = ("linear_exact_splitk", "Duration", "DRAM Throughput", "Memory Throughput", "Grid Size",
        "Achieved Occupancy", "L2 Hit Rate", "L1/TEX Hit Rate", "Mem Busy", "Max Bandwidth",
        "Issue Slots Busy", "No Eligible", "Warp Cycles Per Issued Instruction", "Executed Instructions ")
p = os.path.join(d, "details.txt")
if os.path.exists(p):
    print("-- full set (details)")
    for line in open(p):
        if any(k in line for k in keys):
            print(line.rstrip()[:120])
for p in sorted(glob.glob(os.path.join(d, "e2e-*.txt"))):
    for line in open(p):
        if line.startswith("decode") and " 8 " in line[:20]:
            print(os.path.basename(p), line.rstrip())
