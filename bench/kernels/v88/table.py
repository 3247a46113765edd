#!/usr/bin/env python3
"""v88's kernel table: each mma x20 record's median at C = 1, 2, 4 (kernels_c*.jsonl under
the directory given), one row per (what, shape, route family), the clustered entry names
folded into their unclustered ones."""
import json, re, sys, os
d = sys.argv[1]
rows, order = {}, []
for c in (1, 2, 4):
    p = os.path.join(d, f"kernels_c{c}.jsonl")
    if not os.path.exists(p):
        continue
    seen = {}
    for line in open(p):
        r = json.loads(line)
        route = re.sub(r"_c[24](?=_|$)", "", r["route"])
        key = (r["what"], r["shape"], route)
        n = seen.get(key, 0)
        seen[key] = n + 1
        key = key + (n,)
        if key not in rows:
            rows[key] = {}
            order.append(key)
        rows[key][c] = (r["median_us"], r["route"])
print(f"{'what':34} {'shape':24} {'route':52} {'C=1':>8} {'C=2':>8} {'C=4':>8}")
for key in order:
    v = rows[key]
    if "cuBLAS" in key[2] or not key[2].startswith("linear_exact_mma"):
        continue
    cells = [f"{v[c][0]:8.2f}" if c in v else f"{'-':>8}" for c in (1, 2, 4)]
    print(f"{key[0][:34]:34} {key[1][:24]:24} {key[2][:52]:52} {' '.join(cells)}")
