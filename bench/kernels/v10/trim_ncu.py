#!/usr/bin/env python3
"""Trim an `ncu --page raw --csv --print-metric-instances values` export to what v10 reads:
duration, DRAM, issue, pipes, stall reasons (one row per metric), and for PM sampling the
non-zero span of each timeline (one row per metric, bins of the sampling interval).
Usage: trim_ncu.py raw.csv > trimmed.csv"""
import csv, re, sys

rows = list(csv.reader(open(sys.argv[1])))
hdr, units, vals = rows[0], rows[1], rows[2]
keep = ("gpu__time_duration", "dram__", "sm__cycles_active", "inst_executed", "pipe_", "stalled",
        "launch__registers", "launch__grid", "launch__block_size", "dramc__", "lts__throughput",
        "sm__inst_executed_realtime", "pmsampler_interval", "l1tex__throughput")
w = csv.writer(sys.stdout)
w.writerow(["metric", "unit", "value_or_timeline"])
for h, u, v in zip(hdr, units, vals):
    if not any(k in h for k in keep) or "per_opcode" in h:
        continue
    m = re.search(r"\((.*)\)$", v)
    if m and ";" in m.group(1):
        xs = [x.strip() for x in m.group(1).split(";")]
        f = [float(x.replace(",", "") or 0) for x in xs]
        nz = [i for i, x in enumerate(f) if x > 0.02 * max(f)]  # the kernel's span
        if nz:
            xs = xs[max(nz[0] - 1, 0): nz[-1] + 2]
        v = " ".join(xs)
    w.writerow([h, u, v])
