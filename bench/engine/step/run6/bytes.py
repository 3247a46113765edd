#!/usr/bin/env python3
"""Step run 6: one decode step of the synthetic 27B by kernel, time against DRAM bytes.

`bytes.py CSV COPY_GBPS` reads an `ncu --csv --page raw --print-units base` export with
gpu__time_duration.sum, dram__bytes_read.sum and dram__bytes_write.sum, splits it into
forwards at each `embedding*` kernel, takes the last whole one (a replayed decode step)
and prints per kernel name: launches, summed us, DRAM MB, the us those bytes take at the
copy rate, and the excess (us over that), largest excess first; then the step's totals.
Each kernel is timed alone (ncu serialises them: no PDL overlap, ramps and drains in
full), so the sum is an upper bound on the step, not the step.
"""
import csv
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from summarize import num, rows  # noqa: E402  (the step folder's CSV reader)


def main():
    path, gbps = sys.argv[1], float(sys.argv[2])
    ks = rows(path)
    starts = [i for i, k in enumerate(ks) if k["Kernel Name"].startswith("embedding")]
    a, b = starts[-2], starts[-1]  # the last forward that is followed by another
    agg = {}
    for k in ks[a:b]:
        us = num(k["gpu__time_duration.sum"]) / 1e3  # ns in base units
        by = num(k["dram__bytes_read.sum"]) + num(k["dram__bytes_write.sum"])
        c = agg.setdefault(k["Kernel Name"], [0, 0.0, 0.0])
        c[0] += 1
        c[1] += us
        c[2] += by
    w = csv.writer(sys.stdout)
    w.writerow(["kernel", "launches", "total_us", "dram_MB", "us_at_copy", "excess_us", "us_per_launch"])
    tot = [0, 0.0, 0.0]
    for name, (n, us, by) in sorted(agg.items(), key=lambda x: -(x[1][1] - x[1][2] / gbps / 1e3)):
        at = by / gbps / 1e3
        w.writerow([name, n, f"{us:.1f}", f"{by / 1e6:.1f}", f"{at:.1f}", f"{us - at:.1f}", f"{us / n:.2f}"])
        tot[0] += n
        tot[1] += us
        tot[2] += by
    w.writerow(["all", tot[0], f"{tot[1]:.1f}", f"{tot[2] / 1e6:.1f}", f"{tot[2] / gbps / 1e3:.1f}", f"{tot[1] - tot[2] / gbps / 1e3:.1f}", ""])


if __name__ == "__main__":
    main()
