#!/usr/bin/env python3
"""bench/gdn run 15: the 8-lane split step's routes from decode bench JSON files (one column
each): whole step, prep alone, update alone (us), and the whole step's state bytes over the
copy rate."""
import json, sys

runs = []
for path in sys.argv[1:]:
    rows = {}
    for line in open(path):
        r = json.loads(line)
        if "lanes=8" not in r["shape"]:
            continue
        rows[(r["shape"].split("state=")[-1], r["route"])] = r
    runs.append(rows)
keys = sorted({k for rows in runs for k in rows})
print(f"{'state':5} {'route':52} " + " ".join(f"{'us':>8} {'frac':>5}" for _ in runs))
for k in keys:
    if "update" not in k[1] and "prep" not in k[1]:
        continue
    cells = []
    for rows in runs:
        r = rows.get(k)
        cells.append(f"{r['median_us']:8.2f} {(r.get('fraction') or 0):5.2f}" if r else f"{'-':>8} {'-':>5}")
    print(f"{k[0]:5} {k[1][:52]:52} " + " ".join(cells))
