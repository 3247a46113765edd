#!/usr/bin/env python3
"""A bench table: the records whose `what` contains the first argument, from each JSONL
file given after it (a column each), one row per shape and route, us and the fraction of
copy."""
import json, sys
want, files = sys.argv[1], sys.argv[2:]
rows, order = {}, []
for i, p in enumerate(files):
    for line in open(p):
        r = json.loads(line)
        if want not in r["what"]:
            continue
        key = (r["shape"], r["route"].replace("linear_exact_ring_q4_g64_", ""))
        if key not in rows:
            rows[key] = {}
            order.append(key)
        rows[key][i] = (r["median_us"], r["fraction"])
print(f"{'shape':40} {'route and form':58} " + " ".join(f"{p.split('/')[-1][:16]:>16}" for p in files))
for key in order:
    cells = [f"{rows[key][i][0]:8.2f} ({rows[key][i][1]:4.0%})" if i in rows[key] else f"{'-':>16}" for i in range(len(files))]
    print(f"{key[0][:40]:40} {key[1][:58]:58} " + " ".join(f"{c:>16}" for c in cells))
